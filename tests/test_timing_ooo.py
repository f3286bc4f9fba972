"""The out-of-order timing model (`timing.kind = "ooo"`) through the Python API and the CLI."""

from __future__ import annotations

import pytest

import tessera
from conftest import SMALL_SYNTHETIC

SYN = {"pattern": "uniform", "accesses": 20_000, "footprint": "256MiB"}
TIMING = {"core.cycles", "core.translation_stall_cycles", "core.data_stall_cycles"}
OOO_ONLY = {"core.walk_oldest_cycles", "core.walker_busy_cycles", "core.rob_full_cycles",
            "core.mshr_wait_cycles", "core.walker_wait_cycles"}


def test_ooo_changes_only_timing_counters_and_overlaps_misses():
    interval = tessera.simulate("sandy_bridge", synthetic=SYN, seed=3)
    ooo = tessera.simulate("sandy_bridge", synthetic=SYN, seed=3, overrides=["timing.kind=\"ooo\""])
    assert set(ooo.counters) - set(interval.counters) == OOO_ONLY
    for k, v in interval.counters.items():
        if k not in TIMING:
            assert ooo.counters[k] == v, k
    assert 0 < ooo.counters["core.cycles"] < interval.counters["core.cycles"]
    assert 0.0 <= ooo.derived["core.walk_oldest_share"] <= 1.0
    assert "core.walk_oldest_share" not in interval.derived
    # The written config names the model and its core; an interval run's does not.
    assert ooo.config["timing"]["kind"] == "ooo"
    assert ooo.config["timing"]["ooo"]["window"] == 168
    assert "kind" not in interval.config["timing"] and "ooo" not in interval.config["timing"]


def test_ooo_is_deterministic_with_drawn_dependencies():
    o = ["timing.kind=\"ooo\"", "timing.ooo.dependency_fraction=0.5"]
    a = tessera.simulate("sandy_bridge", synthetic=SYN, seed=3, overrides=o)
    b = tessera.simulate("sandy_bridge", synthetic=SYN, seed=3, overrides=o)
    assert a.counters == b.counters


def test_bad_ooo_parameters_are_config_errors():
    with pytest.raises(tessera.ConfigError, match="timing.ooo.mshrs"):
        tessera.simulate("sandy_bridge", synthetic=SYN, overrides=["timing.kind=\"ooo\"", "timing.ooo.mshrs=0"])
    with pytest.raises(tessera.ConfigError, match="timing.kind"):
        tessera.simulate("sandy_bridge", synthetic=SYN, overrides=["timing.kind=\"cycle\""])


def test_cli_runs_the_ooo_model(cli, tmp_path):
    r = cli("run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC, "--set", "timing.kind=\"ooo\"", "--out", "r.json")
    assert r.code == 0, r.err
    import json
    out = json.loads((tmp_path / "r.json").read_text())
    assert out["stats"]["counters"]["core.walk_oldest_cycles"] >= 0
