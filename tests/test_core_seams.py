"""The core's families through the CLI and the API: page-table formats, TLB
organisations, eviction with a swap device, and the machine kind."""

from __future__ import annotations

import json

import pytest

import tessera

# Two passes over 4096 pages: the second finds every page mapped, so a
# coalescing entry filled from a walked line covers its neighbours.
SEQ = {"pattern": "sequential", "accesses": 2 * 16 * 1024 * 1024 // 64, "footprint": "16MiB"}
UNI = {"pattern": "uniform", "accesses": 40_000, "footprint": "16MiB"}

# 8 MiB of memory under a 16 MiB footprint: half of it must live in swap.
PRESSURE = {
    "physmem.capacity": "8MiB",
    "os.swap": {"capacity": "64MiB", "latency_cycles": 30000, "bandwidth": "2GiB"},
}


def _counters(r: tessera.Result) -> dict[str, int]:
    return {k: v for k, v in r.stats.items() if isinstance(v, int)}


def test_list_shows_every_family_and_member(cli):
    r = cli("list")
    assert r.code == 0, r.err
    for family, members in {
        "format": ["x86_radix", "radix"],
        "eviction": ["lru", "clock", "linux_like", "root_chunk"],
        "organisation": ["set_assoc", "coalescing"],
    }.items():
        assert family in r.out
        for m in members:
            assert m in r.out, (family, m)


@pytest.mark.parametrize("policy", ["lru", "clock", "linux_like", "root_chunk"])
def test_memory_pressure_swaps_pages_out_and_back(policy):
    r = tessera.simulate("sandy_bridge", synthetic=UNI, overrides={**PRESSURE, "os.eviction": policy}, seed=1)
    s = r.stats
    assert s["os.evictions"] > 0
    assert s["os.shootdowns"] == s["os.evictions"]
    assert s["swap.pages_in"] == s["os.major_faults"] > 0
    assert s["swap.pages_out"] <= s["os.evictions"]
    assert s["swap.cycles"] > 0
    # No access is lost to the evictions.
    assert s["core.loads"] + s["core.stores"] == UNI["accesses"]


def test_swap_defaults_to_lru_and_is_deterministic():
    a = tessera.simulate("tlb_only", synthetic=UNI, overrides=PRESSURE, seed=4)
    b = tessera.simulate("tlb_only", synthetic=UNI, overrides=PRESSURE, seed=4)
    assert a.config["os"]["eviction"]["kind"] == "lru"
    assert _counters(a) == _counters(b)


def test_without_swap_running_out_of_memory_is_an_error():
    with pytest.raises(tessera.TesseraError) as e:
        tessera.simulate("tlb_only", synthetic=UNI, overrides={"physmem.capacity": "8MiB"})
    assert "physmem.capacity" in str(e.value) or "os.swap" in str(e.value)


def test_radix_format_with_x86_geometry_gives_x86_numbers():
    x86 = tessera.simulate("sandy_bridge", synthetic=UNI, seed=2)
    radix = tessera.simulate(
        "sandy_bridge",
        synthetic=UNI,
        overrides={"pagetable.format": {"kind": "radix", "bits": [9, 9, 9, 9], "va_bits": 48}},
        seed=2,
    )
    assert radix.config["pagetable"]["format"]["kind"] == "radix"
    assert _counters(radix) == _counters(x86)


def test_coalescing_l2_tlb_counts_coalesced_hits():
    plain = tessera.simulate("tlb_only", synthetic=SEQ, seed=0)
    co = tessera.simulate(
        "tlb_only", synthetic=SEQ, overrides={"mmu.tlb.l2_tlb.organisation": {"kind": "coalescing", "group": 8}}, seed=0
    )
    # The first pass maps pages one by one (each first touch walks, and the
    # walk adds its page to the group's entry); 512 entries of 8 pages then
    # hold all 4096 pages, so the second pass hardly walks, while the plain
    # 512-entry TLB walks for every page of both passes.
    assert plain.stats["walker.walks"] == 2 * 4096
    assert co.stats["walker.walks"] < 4096 * 1.05
    assert co.stats["mmu.l2_tlb.coalesced_hits"] >= 0
    assert "mmu.l2_tlb.coalesced_hits" not in plain.stats


@pytest.mark.parametrize(
    "overrides, key",
    [
        ({"os.eviction": "lru"}, "os.eviction"),
        ({"os.eviction": "fifo", "os.swap": {"capacity": "1GiB"}}, "os.eviction"),
        ({"mmu.tlb.l2_tlb.organisation": {"kind": "coalescing", "group": 3}}, "group"),
        ({"pagetable.format": {"kind": "radix", "bits": [9, 9], "va_bits": 48}}, "pagetable.format"),
        ({"machine.kind": "tpu"}, "machine.kind"),
        # A CPU preset turned into a GPU keeps its CPU TLBs: refused by name.
        ({"machine.kind": "gpu"}, "mmu.tlb"),
    ],
)
def test_bad_keys_are_config_errors_naming_the_key(overrides, key):
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate("tlb_only", synthetic=UNI, overrides=overrides)
    assert key in str(e.value)


def test_pressure_run_through_the_cli(cli, tmp_path):
    cfg = tmp_path / "small.toml"
    cfg.write_text(
        'inherit = "sandy_bridge"\n'
        'name = "small"\n\n'
        "[physmem]\ncapacity = \"8MiB\"\n\n"
        "[os]\neviction = \"clock\"\n\n"
        '[os.swap]\ncapacity = "64MiB"\n'
    )
    r = cli("run", "--config", cfg, "--synthetic", "uniform", "--accesses", "20000", "--footprint", "16MiB",
            "--out", "r.json", "-q")
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / "r.json").read_text())
    counters = doc["stats"]["counters"]
    assert counters["os.evictions"] > 0
    assert counters["swap.pages_in"] == counters["os.major_faults"]
    assert doc["config"]["os"]["eviction"]["kind"] == "clock"


def test_bad_key_through_the_cli_exits_non_zero(cli):
    r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", "1000", "--set",
            "machine.kind=tpu", "-q")
    assert r.code != 0
    assert "machine.kind" in r.err
