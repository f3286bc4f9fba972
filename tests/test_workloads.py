"""Built-in workloads from the CLI and the Python API: listing, running,
recording and replaying, benchmarking, and parameter errors."""

from __future__ import annotations

import json

import pytest

import tessera

SMALL_GUPS = {"table": "8MiB", "updates": "20000"}


def test_listing_names_params_and_footprints():
    listing = tessera.workloads()
    for name in ("gups", "sequential", "strided", "uniform", "pointer-chase"):
        assert name in listing
        w = listing[name]
        assert w["summary"]
        assert w["default_footprint"] > 0
        assert all({"name", "default", "doc"} <= set(p) for p in w["params"])
    assert listing["gups"]["default_footprint"] >= 1 << 30


def test_cli_workloads_table_and_detail(cli):
    r = cli("workloads")
    assert r.code == 0 and "gups" in r.out and "pointer-chase" in r.out
    r = cli("workloads", "gups")
    assert r.code == 0 and "table" in r.out and "updates" in r.out
    r = cli("workloads", "--json")
    assert r.code == 0 and "gups" in json.loads(r.out)
    r = cli("workloads", "nope")
    assert r.code == 2 and "unknown workload" in r.err


def test_simulate_workload_is_deterministic_and_seeded():
    a = tessera.simulate("sandy_bridge", workload="gups", params=SMALL_GUPS, seed=1)
    b = tessera.simulate("sandy_bridge", workload="gups", params=SMALL_GUPS, seed=1)
    c = tessera.simulate("sandy_bridge", workload="gups", params=SMALL_GUPS, seed=2)
    assert a.to_dict()["stats"] == b.to_dict()["stats"]  # NaN (undefined) metrics compare as null
    assert a.stats != c.stats
    assert a.stats["core.records"] == 4 * 20000
    assert a.stats["core.instructions"] == 10 * 20000
    assert a.source.startswith("workload:gups") and "table=8MiB" in a.source


def test_cli_run_workload_with_params(cli, tmp_path):
    out = tmp_path / "r.json"
    r = cli("run", "--preset", "tlb_only", "--workload", "uniform", "--param", "accesses=5000",
            "--param", "footprint=16MiB", "--out", out, "-q")
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    assert doc["stats"]["counters"]["core.records"] == 5000
    assert doc["source"].startswith("workload:uniform")


def test_record_then_replay_gives_identical_stats(cli, tmp_path):
    trace = tmp_path / "chase.tess"
    r = cli("trace", "record-workload", "pointer-chase", "--param", "footprint=4MiB",
            "--param", "accesses=30000", "--seed", "3", "-o", trace)
    assert r.code == 0, r.err
    assert "30,000 records" in r.out
    live = tessera.simulate("sandy_bridge", workload="pointer-chase",
                            params={"footprint": "4MiB", "accesses": 30000}, seed=3)
    replay = tessera.simulate("sandy_bridge", trace)
    assert live.to_dict()["stats"] == replay.to_dict()["stats"]
    info = tessera.trace_info(trace)
    assert info["records"] == 30000


def test_workload_parameter_errors_exit_2_and_name_the_key(cli, tmp_path):
    r = cli("run", "--preset", "tlb_only", "--workload", "gups", "--param", "tabel=1GiB")
    assert r.code == 2 and "workload.gups.tabel" in r.err and "allowed" in r.err
    r = cli("run", "--preset", "tlb_only", "--workload", "gups", "--param", "table=3MiB")
    assert r.code == 2 and "power of two" in r.err
    r = cli("run", "--preset", "tlb_only", "--workload", "gups", "--param", "table")
    assert r.code == 2 and "KEY=VALUE" in r.err
    r = cli("run", "--preset", "tlb_only", "--trace", "x.tess", "--param", "a=1")
    assert r.code == 2
    out = tmp_path / "never.tess"
    r = cli("trace", "record-workload", "bogus", "-o", out)
    assert r.code == 2 and not out.exists()
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate("tlb_only", workload="uniform", params={"footprint": "1"})
    assert e.value.path == "workload.uniform.footprint"
    with pytest.raises(ValueError):
        tessera.simulate("tlb_only", workload="gups", synthetic={"pattern": "uniform"})


def test_interrupted_workload_run_raises_and_record_leaves_nothing(tmp_path):
    def stop(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tessera.simulate("tlb_only", workload="uniform", params={"accesses": "50M"}, progress=stop)
    out = tmp_path / "x.tess"
    with pytest.raises(KeyboardInterrupt):
        tessera.record_workload("uniform", out, {"accesses": "50M"}, progress=stop)
    assert list(tmp_path.iterdir()) == []


def test_bench_workload(cli, tmp_path):
    g = tessera.bench_workload("sequential", {"accesses": 100000})
    assert g["accesses"] == 100000 and g["accesses_per_sec"] > 0
    out = tmp_path / "b.json"
    r = cli("bench", "--workload", "gups", "--param", "table=1MiB", "--param", "updates=10000", "--json", out)
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    row = doc["workloads"][0]
    assert row["generator"]["accesses"] == 40000 and row["simulation"]["accesses"] == 40000


#: Small parameters for every workload (mirrors crates/tessera-core/tests/workloads_replay.rs).
SMALL = {
    "gups": {"table": "1MiB", "updates": "5000"},
    "sequential": {"footprint": "1MiB", "accesses": "5000"},
    "strided": {"footprint": "1MiB", "accesses": "5000"},
    "uniform": {"footprint": "1MiB", "accesses": "5000"},
    "pointer-chase": {"footprint": "1MiB", "accesses": "5000"},
    "graph500-bfs": {"scale": "8", "roots": "1"},
    "bfs": {"scale": "8"},
    "mst": {"scale": "8"},
    "spmv": {"scale": "8"},
    "setcover": {"scale": "8"},
    "matching": {"scale": "8"},
    "mis": {"scale": "8"},
    "graph-analytics": {"scale": "8", "iterations": "1"},
    "btree": {"keys": "2000", "lookups": "2000"},
    "xsbench": {"gridpoints": "200", "lookups": "100"},
    "dict": {"keys": "2000", "ops": "5000"},
    "canneal": {"elements": "2000", "swaps": "100", "steps": "2"},
    "kvcache": {"memory": "8MiB", "keys": "2000", "requests": "5000"},
    "data-analytics": {"docs": "200", "vocab": "5000"},
    "data-serving": {"records": "2000", "ops": "2000", "memtable": "64KiB"},
    "web-search": {"docs": "5000", "terms": "2000", "postings": "50000", "queries": "50"},
    "media-streaming": {"streams": "4", "files": "4", "file_size": "64KiB", "bytes": "1MiB"},
}


def test_every_listed_workload_has_small_parameters():
    assert set(tessera.workloads()) == set(SMALL)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_workload_runs_from_the_cli(cli, tmp_path, name):
    out = tmp_path / "r.json"
    args = ["run", "--preset", "sandy_bridge", "--workload", name, "--seed", "2", "--out", out, "-q"]
    for k, v in SMALL[name].items():
        args += ["--param", f"{k}={v}"]
    r = cli(*args)
    assert r.code == 0, r.err
    doc = json.loads(out.read_text())
    assert doc["source"].startswith(f"workload:{name} ")
    assert doc["stats"]["counters"]["core.records"] > 0
    assert doc["stats"]["counters"]["core.instructions"] > 0
