"""Shadow TLB structures and the mosaic TLB organisation, through the API and the command."""

from __future__ import annotations

import json
import math

import pytest

import tessera

#: A vanilla and a Mosaic-16 shadow of the same geometry beside the machine's TLBs.
SHADOWS = [
    "mmu.shadow.vanilla={ entries = 64, ways = 4 }",
    'mmu.shadow.m16={ entries = 64, ways = 4, organisation = { kind = "mosaic", arity = 16 } }',
]
#: Sequential 64-byte steps over 8 MiB, twice: a contiguous stream.
SEQUENTIAL = {"pattern": "sequential", "accesses": 262_144, "footprint": "8MiB"}


@pytest.fixture(scope="module")
def runs() -> tuple[tessera.Result, tessera.Result]:
    with_shadows = tessera.simulate("tlb_only", synthetic=SEQUENTIAL, overrides=SHADOWS, seed=1)
    without = tessera.simulate("tlb_only", synthetic=SEQUENTIAL, seed=1)
    return with_shadows, without


def test_shadows_report_under_mmu_shadow_and_change_nothing_else(runs):
    r, plain = runs
    for name in ("vanilla", "m16"):
        for c in ("lookups", "hits", "misses", "fills", "evictions"):
            assert f"mmu.shadow.{name}.{c}" in r.counters
        assert not math.isnan(r.stats[f"mmu.shadow.{name}.miss_rate"])
        assert f"mmu.shadow.{name}.mpki" in r.derived
    for c in ("entry_misses", "subpage_misses", "toc_hits", "subpage_invalidations", "entries_freed"):
        assert f"mmu.shadow.m16.{c}" in r.counters
    # Every translation reaches the shadows: the data side's level-1 lookups.
    assert r.counters["mmu.shadow.vanilla.lookups"] == r.counters["mmu.l1_dtlb_4k.lookups"] == SEQUENTIAL["accesses"]
    theirs = {k: v for k, v in r.counters.items() if not k.startswith("mmu.shadow.")}
    assert theirs == plain.counters
    assert r.config["mmu"]["shadow"]["m16"]["organisation"] == {"kind": "mosaic", "arity": 16, "subpage_miss": "fill"}


def test_mosaic_misses_no_more_than_vanilla_on_a_contiguous_stream(runs):
    c = runs[0].counters
    pages = 8 * 1024 * 1024 // 4096
    # Vanilla misses every page of both passes (2048 pages, 64 entries).
    assert c["mmu.shadow.vanilla.misses"] == 2 * pages
    # Mosaic-16 misses each page once on the first pass (first touches) and
    # then once per 16-page group; its entry and sub-page misses add up.
    m = c["mmu.shadow.m16.misses"]
    assert m == pages + pages // 16
    assert c["mmu.shadow.m16.entry_misses"] + c["mmu.shadow.m16.subpage_misses"] == m
    assert c["mmu.shadow.m16.toc_hits"] > 0


def test_the_command_runs_a_mosaic_shadow_and_lists_mosaic(cli, tmp_path):
    sets = [a for s in SHADOWS for a in ("--set", s)]
    r = cli("run", "--preset", "tlb_only", "--synthetic", "sequential", "--accesses", "20000", "--footprint", "8MiB",
            *sets, "--out", "r.json", "--quiet")
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / "r.json").read_text())
    counters = doc["stats"]["counters"]
    assert counters["mmu.shadow.m16.misses"] <= counters["mmu.shadow.vanilla.misses"]
    assert counters["mmu.shadow.m16.lookups"] == 20_000
    assert doc["config"]["mmu"]["shadow"]["vanilla"]["organisation"] == {"kind": "set_assoc"}
    r = cli("list")
    assert r.code == 0 and "mosaic" in r.out and "coalescing" in r.out
    r = cli("stats", "--preset", "tlb_only", *sets)
    assert r.code == 0, r.err
    assert "mmu.shadow.m16.subpage_misses" in r.out


@pytest.mark.parametrize(
    ("override", "path", "word"),
    [
        ('mmu.shadow.m={ entries = 64, ways = 4, organisation = { kind = "mosaic", arity = 3 } }',
         "mmu.shadow.m.organisation.arity", "power of two"),
        ('mmu.shadow.m={ entries = 64, ways = 4, organisation = { kind = "mosaic", subpage_miss = "skip" } }',
         "mmu.shadow.m.organisation.subpage_miss", "skip"),
        ("mmu.shadow.m={ entries = 64, ways = 3 }", "mmu.shadow.m.ways", "divisible"),
        ('mmu.shadow.m={ side = "instr", entries = 64, ways = 4 }', "mmu.shadow.m.side", "instruction"),
        ('mmu.tlb.l2_tlb.organisation={ kind = "mosaic", arity = 128 }', "mmu.tlb.l2_tlb.organisation.arity", "128"),
        ('mmu.tlb.l2_tlb.organisation={ kind = "set_assoc", vanilla_index_quirk = 6 }',
         "mmu.tlb.l2_tlb.organisation.vanilla_index_quirk", "power of two"),
    ],
)
def test_shadow_and_mosaic_config_errors_name_the_key(cli, override, path, word):
    with pytest.raises(tessera.ConfigError) as e:
        tessera.resolve_config("tlb_only", [override])
    assert e.value.path == path and word in str(e.value)
    r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", "100", "--set", override)
    assert r.code == 2 and path in r.err and "Traceback" not in r.err


def test_a_mosaic_tlb_in_the_machine_runs_and_counts_its_misses():
    r = tessera.simulate(
        "tlb_only",
        synthetic={"pattern": "hotcold", "accesses": 30_000, "footprint": "16MiB"},
        overrides=['mmu.tlb.l1_dtlb_4k.organisation={ kind = "mosaic", arity = 8 }'],
    )
    c = r.counters
    assert c["mmu.l1_dtlb_4k.entry_misses"] + c["mmu.l1_dtlb_4k.subpage_misses"] == c["mmu.l1_dtlb_4k.misses"]
    assert c["mmu.l1_dtlb_4k.hits"] > 0
