"""The run summary under memory pressure, on the Iceberg allocator and with
mosaic and shadow TLBs: sections that appear when the run exercised what
they describe, with the core's numbers."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

import tessera
from tessera.summary import fmt, pct, print_result

SYN = {"pattern": "hotcold", "accesses": 40_000, "footprint": "10MiB"}
#: 8 MiB of memory for a 10 MiB footprint, with a swap device.
PRESSURE = ['physmem.capacity="8MiB"', 'os.swap={ capacity = "64MiB" }']
ICEBERG = [*PRESSURE, 'physmem.allocator="iceberg"', 'os.eviction="horizon"']
MOSAIC = [
    'mmu.tlb.l1_dtlb_4k.organisation={ kind = "mosaic", arity = 4 }',
    'mmu.shadow.m16={ entries = 64, ways = 4, organisation = { kind = "mosaic", arity = 16 } }',
    "mmu.shadow.plain={ entries = 64, ways = 4 }",
]
NEW_SECTIONS = ("Memory pressure", "Eviction:", "Iceberg allocator", "Mosaic TLBs")


def _render(r: tessera.Result) -> str:
    console = Console(width=200, color_system=None)
    with console.capture() as cap:
        print_result(r, console)
    return cap.get()


def _section(text: str, title: str) -> dict[str, str]:
    """``{label: value}`` of the key-value section whose title starts with ``title``."""
    lines = [line.rstrip() for line in text.splitlines()]
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    out = {}
    for line in lines[start + 1 :]:
        if not line:
            break
        label, value = re.match(r"^(.*?\S)\s{2,}(\S.*)$", line).groups()
        out[label.strip()] = value
    return out


def _titles(text: str) -> list[str]:
    lines = text.splitlines()
    return [lines[i + 1].rstrip() for i, line in enumerate(lines[:-1]) if not line.strip() and lines[i + 1].strip()]


@pytest.mark.parametrize("policy", ["lru", "clock", "linux_like"])
def test_pressure_shows_evictions_faults_swap_and_shootdowns(policy):
    r = tessera.simulate("tlb_only", synthetic=SYN, overrides=[*PRESSURE, f'os.eviction="{policy}"'])
    c = r.counters
    assert c["os.evictions"] > 0
    text = _render(r)
    rows = _section(text, "Memory pressure")
    want = {
        "pages evicted": "os.evictions",
        "major faults (read back from swap)": "os.major_faults",
        "minor faults (first touches)": "os.minor_faults",
        "pages written to swap": "swap.pages_out",
        "clean, swap copy still valid (not written)": "swap.clean_evictions",
        "pages read from swap": "swap.pages_in",
        "TLB shootdowns": "os.shootdowns",
        "TLB entries shot down": "os.tlb_entries_shot_down",
        "cache lines of evicted pages dropped": "os.lines_invalidated",
        "dirty, written back": "os.dirty_lines_written_back",
    }
    for label, name in want.items():
        assert rows[label] == fmt(c[name]), label
    assert rows["swap slots in use at the end"] == f"{fmt(c['swap.used_slots'])} of {fmt(c['swap.capacity_slots'])}"
    # tlb_only has no timing: no cycle rows.
    assert "swap device cycles" not in rows and "shootdown cycles" not in rows
    # Why 4 KiB pages mapped outnumber the frames.
    assert c["os.pages_4k"] > c["physmem.allocated_frames"]
    assert "Pages mapped count every mapping, pages mapped again after an eviction included" in text
    policy_rows = {k for k in c if k.startswith(f"os.eviction.{policy}.")}
    if policy_rows:
        shown = _section(text, f"Eviction: {policy}")
        assert sorted(shown.values()) == sorted(fmt(c[k]) for k in policy_rows)
    else:
        assert "Eviction:" not in text


def test_timed_machines_show_the_cycles_of_swap_and_shootdowns():
    r = tessera.simulate("sandy_bridge", synthetic=SYN, overrides=[*PRESSURE, 'os.eviction="lru"'])
    rows = _section(_render(r), "Memory pressure")
    assert rows["swap device cycles"] == fmt(r.counters["swap.cycles"])
    assert rows["shootdown cycles"] == fmt(r.counters["os.shootdown_cycles"])


def test_no_pressure_no_pressure_sections():
    # A swap device and an eviction policy, but memory enough.
    r = tessera.simulate("tlb_only", synthetic=SYN, overrides=['os.swap={ capacity = "64MiB" }', 'os.eviction="clock"'])
    assert r.counters["os.evictions"] == 0
    text = _render(r)
    for title in NEW_SECTIONS:
        assert title not in text
    assert "Pages mapped count every mapping" not in text
    assert "warning:" not in text


def test_iceberg_shows_placements_conflicts_load_and_utilisation():
    r = tessera.simulate("tlb_only", synthetic=SYN, overrides=ICEBERG)
    c, d = r.counters, r.derived
    p = "physmem.allocator.iceberg."
    assert c[p + "conflicts"] > 0
    rows = _section(_render(r), "Iceberg allocator")
    assert rows["pool"] == f"{fmt(c[p + 'pool_frames'])} frames ({fmt(c[p + 'buckets'])} buckets, h = 104)"
    for label, name in {
        "pages placed": "placements",
        "in the front yard": "front_placements",
        "in a backyard": "back_placements",
        "conflicts (all h frames taken)": "conflicts",
        "ghost displaced": "ghost_displacements",
        "live page displaced": "live_displacements",
        "front-yard frames in use at the end": "front_used",
        "backyard frames in use at the end": "back_used",
    }.items():
        assert rows[label] == fmt(c[p + name]), label
    assert rows["pool load at the first conflict"] == pct(d[p + "first_conflict_load"])
    assert rows["mean utilisation"] == pct(d[p + "utilisation"])
    assert rows["steady-state utilisation (after the first conflict)"] == pct(d[p + "steady_utilisation"])
    assert "requests refused (no page ages)" not in rows  # zero
    hz = _section(_render(r), "Eviction: horizon (exact)")
    assert hz["live pages evicted (horizon raised)"] == fmt(c["os.eviction.horizon.live_evictions"])
    assert hz["ghost pages evicted"] == fmt(c["os.eviction.horizon.ghost_evictions"])


def test_iceberg_without_a_conflict_says_so():
    r = tessera.simulate("tlb_only", synthetic={**SYN, "footprint": "1MiB"}, overrides=ICEBERG)
    assert r.counters["physmem.allocator.iceberg.conflicts"] == 0
    rows = _section(_render(r), "Iceberg allocator")
    assert rows["pool load at the first conflict"] == "no conflict"
    assert "Memory pressure" not in _render(r)


def test_mosaic_and_shadow_tlbs():
    r = tessera.simulate("tlb_only", synthetic=SYN, overrides=MOSAIC)
    s = r.stats
    text = _render(r)
    lines = [line.rstrip() for line in text.splitlines()]
    # Shadows follow the machine's structures in the TLB table, with their own numbers.
    tlb = lines[lines.index("TLBs") + 2 : lines.index("", lines.index("TLBs"))]
    names = [line.split()[0] for line in tlb if not line.startswith(("shadow.*:", "n/a:"))]
    assert names[-2:] == ["shadow.m16", "shadow.plain"] and "l1_dtlb_4k" in names
    for n in ("m16", "plain"):
        row = next(line.split() for line in tlb if line.startswith(f"shadow.{n} "))
        m = f"mmu.shadow.{n}"
        assert row[1:] == [fmt(s[f"{m}.lookups"]), fmt(s[f"{m}.hits"]), fmt(s[f"{m}.misses"]),
                           pct(s[f"{m}.miss_rate"]), fmt(s[f"{m}.mpki"])]
    assert "shadow.*: shadow structures see every translation of the machine and change nothing." in lines
    # The mosaic table: the machine's mosaic structure, then the mosaic shadow; not the plain one.
    start = lines.index("Mosaic TLBs")
    assert lines[start + 1].split() == ["structure", "arity", "misses", "entry", "misses", "sub-page", "misses", "ToC",
                                        "hits"]
    rows = {line.split()[0]: line.split()[1:] for line in lines[start + 2 : lines.index("", start)]}
    assert list(rows) == ["l1_dtlb_4k", "shadow.m16"]
    for n, arity in (("l1_dtlb_4k", 4), ("shadow.m16", 16)):
        m = f"mmu.{n}"
        assert rows[n] == [str(arity), fmt(s[f"{m}.misses"]), fmt(s[f"{m}.entry_misses"]),
                           fmt(s[f"{m}.subpage_misses"]), fmt(s[f"{m}.toc_hits"])]
        assert s[f"{m}.toc_hits"] > 0


def test_plain_machines_get_none_of_the_new_sections():
    text = _render(tessera.simulate("sandy_bridge", synthetic=SYN))
    for title in NEW_SECTIONS:
        assert title not in text
    assert "shadow" not in text
