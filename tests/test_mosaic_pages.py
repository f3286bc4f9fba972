"""Mosaic Pages' OS side: the iceberg allocator and Horizon LRU, through the
API and the command line (docs/mosaic-pages.md)."""

from __future__ import annotations

import json
import math

import pytest

import tessera

#: 8 MiB of memory (a pool of 31 buckets), a footprint of 10 MiB (1.3× the pool),
#: as `--set` overrides (TOML values).
MOSAIC = {
    "physmem.capacity": '"8MiB"',
    "physmem.allocator": '"iceberg"',
    "os.swap": '{ capacity = "64MiB" }',
    "os.eviction": '"horizon"',
}
SYN = {"pattern": "hotcold", "accesses": 40_000, "footprint": "10MiB"}
ICE = "physmem.allocator.iceberg"
HZ = "os.eviction.horizon"


def _sets(overrides: dict) -> list[str]:
    return [f"{k}={v}" for k, v in overrides.items()]


def _set_args(overrides: dict) -> list[str]:
    return [a for s in _sets(overrides) for a in ("--set", s)]


def test_list_shows_the_new_mechanisms(cli):
    r = cli("list")
    assert r.code == 0, r.err
    assert "iceberg" in r.out and "horizon" in r.out
    reg = tessera.registry()
    assert "iceberg" in dict(reg["allocator"])
    assert "horizon" in dict(reg["eviction"])


def test_iceberg_with_horizon_through_the_api():
    r = tessera.simulate("tlb_only", synthetic=SYN, overrides=_sets(MOSAIC), seed=2)
    c, d = r.counters, r.derived
    assert c["core.records"] == 40_000
    assert c[f"{ICE}.pool_frames"] == 31 * 64
    assert c[f"{ICE}.associativity"] == 104
    assert c["os.evictions"] > 0 and c["os.major_faults"] > 0
    assert c["os.evictions"] == c[f"{ICE}.ghost_displacements"] + c[f"{ICE}.live_displacements"]
    assert c["os.evictions"] == c[f"{HZ}.live_evictions"] + c[f"{HZ}.ghost_evictions"]
    assert c["swap.pages_in"] == c["os.major_faults"]
    assert 0.5 < d[f"{ICE}.first_conflict_load"] < 1.0
    assert d[f"{ICE}.steady_utilisation"] > d[f"{ICE}.first_conflict_load"]
    resolved = r.config["physmem"]["allocator"]
    assert resolved["kind"] == "iceberg" and resolved["front"] == 56 and resolved["choice"] == "partitioned"
    assert r.config["os"]["eviction"]["scan"] == "exact"
    # Same seed, same numbers.
    again = tessera.simulate("tlb_only", synthetic=SYN, overrides=_sets(MOSAIC), seed=2)
    assert again.counters == c


def test_without_pressure_the_derived_loads_are_undefined():
    r = tessera.simulate("tlb_only", synthetic={**SYN, "footprint": "1MiB"}, overrides={"physmem.capacity": "8MiB", "physmem.allocator": "iceberg"})
    assert r.counters[f"{ICE}.conflicts"] == 0
    assert math.isnan(r.derived[f"{ICE}.first_conflict_load"])


def test_iceberg_with_horizon_through_the_cli(cli, tmp_path):
    sampled = {**MOSAIC, "os.eviction": '{ kind = "horizon", scan = "linux_sampled", accesses_per_second = 1000, period_ms = 500 }'}
    r = cli(
        "run", "--preset", "sandy_bridge", "--synthetic", "hotcold", "--accesses", "40000", "--footprint", "10MiB",
        *_set_args(sampled), "--out", "r.json", "-q",
    )
    assert r.code == 0, r.err
    doc = json.loads((tmp_path / "r.json").read_text())
    c = doc["stats"]["counters"]
    assert c[f"{HZ}.scans"] >= 79
    assert c["os.evictions"] > 0
    assert doc["config"]["os"]["eviction"]["scan"] == "linux_sampled"
    r = cli("stats", "--preset", "tlb_only", *_set_args(MOSAIC))
    assert r.code == 0, r.err
    assert f"{ICE}.first_conflict_used" in r.out and f"{HZ}.revivals" in r.out


@pytest.mark.parametrize(
    ("overrides", "path", "word"),
    [
        ({**MOSAIC, "os.eviction": '"clock"'}, "os.eviction", "horizon"),
        ({**MOSAIC, "physmem.allocator": "{ kind = \"iceberg\", front = 48 }"}, "physmem.allocator.front", "64"),
        ({**MOSAIC, "physmem.allocator": "{ kind = \"iceberg\", choices = 8 }"}, "physmem.allocator.choices", "0x7F"),
        ({**MOSAIC, "physmem.allocator": "{ kind = \"iceberg\", pool = \"16MiB\" }"}, "physmem.allocator.pool", "larger"),
        ({**MOSAIC, "physmem.allocator": "{ kind = \"iceberg\", choice = \"random\" }"}, "physmem.allocator.choice", "random"),
        ({**MOSAIC, "os.eviction": "{ kind = \"horizon\", period_ms = 0 }"}, "os.eviction.period_ms", "less than one"),
    ],
)
def test_config_errors_name_the_key(cli, tmp_path, overrides, path, word):
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate("tlb_only", synthetic=SYN, overrides=_sets(overrides))
    assert e.value.path == path, str(e.value)
    assert word in str(e.value)
    if path == "os.eviction":
        assert e.value.allowed == ["horizon"]
    r = cli("run", "--preset", "tlb_only", "--synthetic", "hotcold", "--accesses", "1000", "--footprint", "1MiB", *_set_args(overrides), "--out", "r.json")
    assert r.code == 2, (r.out, r.err)
    assert path in r.err and "Traceback" not in r.err
    assert not (tmp_path / "r.json").exists()

