"""The run summary's TLB table: a structure that holds only page sizes the run
never mapped shows n/a (with a note saying why) instead of a 100 % miss rate."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

import tessera
from tessera.summary import fmt, pct, print_result

SYN = {"pattern": "uniform", "accesses": 20_000, "footprint": "64MiB"}
THP = ["physmem.page_size=thp"]
NOTE = re.compile(r"^n/a: holds only (.+) pages, which this run never mapped, so every lookup in it misses\.$", re.M)


def _render(r: tessera.Result) -> str:
    console = Console(width=160, color_system=None)
    with console.capture() as cap:
        print_result(r, console)
    return cap.get()


def _tlb_section(text: str) -> list[str]:
    """The lines of the TLBs table and its note (up to the blank line after it)."""
    lines = [line.rstrip() for line in text.splitlines()]
    start = lines.index("TLBs")
    end = lines.index("", start)
    return lines[start:end]


def _tlb_rows(text: str) -> dict[str, list[str]]:
    """``{structure: [lookups, hits, misses, miss rate, MPKI]}`` from the TLBs table."""
    section = _tlb_section(text)
    assert section[1].split() == ["structure", "lookups", "hits", "misses", "miss", "rate", "MPKI"]
    rows = {}
    for line in section[2:]:
        cells = line.split()
        if not line.startswith("n/a:"):
            assert len(cells) == 6, line
            rows[cells[0]] = cells[1:]
    return rows


def _shown(r: tessera.Result, n: str) -> list[str]:
    s = r.stats
    return [
        fmt(s[f"mmu.{n}.lookups"]),
        fmt(s[f"mmu.{n}.hits"]),
        fmt(s[f"mmu.{n}.misses"]),
        pct(s.get(f"mmu.{n}.miss_rate")),
        fmt(s[f"mmu.{n}.mpki"]),
    ]


def _na(r: tessera.Result, n: str) -> list[str]:
    return [fmt(r.stats[f"mmu.{n}.lookups"]), "n/a", "n/a", "n/a", "n/a"]


def test_4k_run_shows_2m_structures_as_na():
    r = tessera.simulate("sandy_bridge", synthetic=SYN)
    assert r.counters["os.pages_4k"] > 0 and r.counters["os.pages_2m"] == 0
    # Without the n/a rule the 2 MiB D-TLB would read 100 % misses and MPKI 333.
    assert r.stats["mmu.l1_dtlb_2m.miss_rate"] == 1.0
    text = _render(r)
    rows = _tlb_rows(text)
    for n in ("l1_dtlb_2m", "l1_itlb_2m"):
        assert rows[n] == _na(r, n)
    for n in ("l1_dtlb_4k", "l1_itlb_4k", "l2_tlb"):
        assert rows[n] == _shown(r, n)
    assert NOTE.findall(text) == ["2 MiB"]


def test_thp_run_of_only_2m_pages_shows_4k_structures_as_na():
    r = tessera.simulate("sandy_bridge", synthetic=SYN, overrides=THP)
    assert r.counters["os.pages_2m"] > 0 and r.counters["os.pages_4k"] == 0
    text = _render(r)
    rows = _tlb_rows(text)
    for n in ("l1_dtlb_4k", "l1_itlb_4k", "l2_tlb"):
        assert rows[n] == _na(r, n)
    for n in ("l1_dtlb_2m", "l1_itlb_2m"):
        assert rows[n] == _shown(r, n)
    assert rows["l1_dtlb_2m"][1] != "0"
    assert NOTE.findall(text) == ["4 KiB"]


def test_thp_run_with_both_sizes_shows_every_structure():
    # Pinned frames in half the 2 MiB blocks make part of memory fall back to 4 KiB.
    frag = [*THP, "physmem.fragmentation=0.5", "physmem.capacity=64MiB"]
    r = tessera.simulate("sandy_bridge", synthetic=SYN, overrides=frag)
    assert r.counters["os.pages_2m"] > 0 and r.counters["os.pages_4k"] > 0
    text = _render(r)
    rows = _tlb_rows(text)
    assert set(rows) == {"l1_dtlb_2m", "l1_dtlb_4k", "l1_itlb_2m", "l1_itlb_4k", "l2_tlb"}
    for n, cells in rows.items():
        assert cells == _shown(r, n)
    assert not any("n/a" in line for line in _tlb_section(text))


@pytest.mark.parametrize("overrides", [[], THP])
def test_cli_run_prints_the_same_note(cli, overrides):
    sets = [a for o in overrides for a in ("--set", o)]
    synthetic = ["--synthetic", "uniform", "--accesses", "5000", "--footprint", "64MiB"]
    r = cli("run", "--preset", "tlb_only", *synthetic, *sets)
    assert r.code == 0, r.err
    want = "4 KiB" if overrides else "2 MiB"
    assert [m.strip() for m in NOTE.findall(r.out)] == [want], r.out
