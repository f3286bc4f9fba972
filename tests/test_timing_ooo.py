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
    assert out["timing_dependencies"].startswith("assumed: each load depends on the previous one with probability 0")
    assert "timing model" in r.out and "ooo" in r.out and "load dependencies" in r.out


def _chase(n):
    import numpy as np

    vaddr = 0x10_0000_0000 + np.arange(n, dtype=np.uint64) * 0x12340
    dep = np.ones(n, dtype=np.uint32)
    dep[0] = 0
    return vaddr, dep


def test_a_dep_column_serialises_loads_and_results_say_where_dependencies_came_from():
    vaddr, dep = _chase(3000)
    o = ["timing.kind=\"ooo\""]
    chained = tessera.simulate("sandy_bridge", accesses={"vaddr": vaddr, "dep": dep}, overrides=o)
    free = tessera.simulate("sandy_bridge", accesses={"vaddr": vaddr}, overrides=o)
    drawn = tessera.simulate("sandy_bridge", accesses={"vaddr": vaddr}, overrides=o + ["timing.ooo.dependency_fraction=1"])
    assert chained.timing_dependencies == "from the stream"
    assert free.timing_dependencies == "assumed: each load depends on the previous one with probability 0"
    assert chained.counters == drawn.counters
    assert chained.counters["core.cycles"] > 1.5 * free.counters["core.cycles"]
    # Saved and read back, the statement stays with the result.
    again = tessera.result.result_from_dict(chained.to_dict())
    assert again.timing_dependencies == "from the stream" and again == chained
    assert chained.to_row()["timing_dependencies"] == "from the stream"
    # An interval run has none to state.
    assert tessera.simulate("sandy_bridge", accesses={"vaddr": vaddr}).timing_dependencies is None
    # A source without dependencies cannot satisfy `stream`.
    with pytest.raises(tessera.ConfigError, match="carries none"):
        tessera.simulate("sandy_bridge", accesses={"vaddr": vaddr}, overrides=o + ["timing.ooo.dependencies=\"stream\""])
    with pytest.raises(tessera.ConfigError, match="accesses.dep"):
        tessera.simulate("sandy_bridge", accesses={"vaddr": vaddr, "dep": dep[::-1].copy()}, overrides=o)


def test_recorded_workload_traces_keep_their_dependencies(tmp_path):
    """A workload's trace (native version 2) carries the dependencies the
    workload emitted: a run of the trace equals a run of the workload."""
    p = tmp_path / "chase.tess"
    params = {"footprint": "64MiB", "accesses": "20000"}
    tessera.record_workload("pointer-chase", p, params=params, seed=2)
    df = tessera.read_trace(p)
    assert "dep" in df.columns
    # Each load of the chase waits for the one before.
    assert (df["dep"].iloc[1:] == 1).all() and df["dep"].iloc[0] == 0
    assert tessera.trace_info(p)["dependent_records"] == len(df) - 1
    o = ["timing.kind=\"ooo\""]
    from_trace = tessera.simulate("sandy_bridge", trace=p, overrides=o)
    from_workload = tessera.simulate("sandy_bridge", workload="pointer-chase", params=params, seed=2, overrides=o)
    assert from_trace.timing_dependencies == from_workload.timing_dependencies == "from the stream"
    assert from_trace.counters == from_workload.counters
