"""The speed issue's tools: in-memory streams, the A/B comparison and the
pycachesim reference. No test here times anything: speeds live in the
benchmarks (``tessera bench``) and in the docs."""

from __future__ import annotations

import json
import sys

import numpy as np
import pandas as pd
import pytest

import tessera
from tessera import ab, memory
from tessera import pycachesim_bench as pcs


def test_read_trace_gives_the_records_a_run_simulates(sort_trace):
    df = tessera.read_trace(sort_trace)
    info = tessera.trace_info(sort_trace)
    assert list(df.columns) == ["vaddr", "ins_gap", "asid", "kind", "size"]
    assert len(df) == info["records"]
    assert int(df["ins_gap"].sum()) == info["instructions"]
    assert int((df["kind"] == 2).sum()) == info["ifetches"]
    assert [str(df[c].dtype) for c in df.columns] == ["uint64", "uint32", "uint16", "uint8", "uint8"]
    assert len(tessera.read_trace(sort_trace, limit=1000)) == 1000


def test_a_run_from_memory_equals_the_run_from_the_file(sort_trace):
    df = tessera.read_trace(sort_trace)
    from_file = tessera.simulate("sandy_bridge", sort_trace)
    from_memory = tessera.simulate("sandy_bridge", accesses=df)
    assert from_memory.counters == from_file.counters
    assert from_memory.derived.keys() == from_file.derived.keys()
    assert from_memory.source_id.startswith("memory:blake2b-128:")
    assert from_memory.source == f"memory:{len(df)} accesses"
    # The same columns in a dict of arrays are the same stream.
    again = tessera.simulate("sandy_bridge", accesses={c: df[c].to_numpy() for c in df.columns})
    assert again.source_id == from_memory.source_id
    assert again.counters == from_memory.counters


def test_memory_columns_take_defaults_and_refuse_bad_values():
    vaddr = np.arange(1000, dtype=np.uint64) * 4096
    r = tessera.simulate("tlb_only", accesses={"vaddr": vaddr})
    assert r.counters["core.loads"] == 1000
    assert r.counters["core.instructions"] == 1000  # ins_gap defaults to 1
    with pytest.raises(ValueError, match="'vaddr' is required"):
        tessera.simulate("tlb_only", accesses={"kind": [0, 1]})
    with pytest.raises(ValueError, match="accesses.size: values must be between 0 and 255"):
        tessera.simulate("tlb_only", accesses={"vaddr": [0, 64], "size": [8, 300]})
    with pytest.raises(ValueError, match="accesses.asid: values must be between 0 and 65535"):
        tessera.simulate("tlb_only", accesses={"vaddr": [0], "asid": [-1]})
    with pytest.raises(ValueError, match="accesses.kind: has 1 values but vaddr has 2"):
        tessera.simulate("tlb_only", accesses={"vaddr": [0, 64], "kind": [0]})
    with pytest.raises(ValueError, match="unknown column"):
        tessera.simulate("tlb_only", accesses={"vaddr": [0], "addr": [0]})
    with pytest.raises(tessera.ConfigError, match="accesses.kind"):
        tessera.simulate("tlb_only", accesses={"vaddr": [0, 64], "kind": [0, 7]})
    with pytest.raises(ValueError, match="exactly one of"):
        tessera.simulate("tlb_only", synthetic={"pattern": "uniform"}, accesses={"vaddr": [0]})
    with pytest.raises(TypeError):
        tessera.simulate("tlb_only", accesses="not columns")


def test_bench_times_a_stream_from_memory():
    df = pd.DataFrame({"vaddr": np.arange(50_000, dtype=np.uint64) * 64})
    b = tessera.bench("tlb_only", accesses=df)
    assert b["accesses"] == 50_000 and b["seconds"] > 0


def test_memory_source_id_follows_the_columns_not_the_name():
    a = memory.columns_args({"vaddr": [0, 4096]}, name="a")
    b = memory.columns_args({"vaddr": [0, 4096]}, name="b")
    c = memory.columns_args({"vaddr": [0, 8192]}, name="a")
    assert memory.source_id(a) == memory.source_id(b) != memory.source_id(c)


def test_host_memory_is_reported_apart_from_the_machine_and_repeats(tmp_path):
    syn = {"pattern": "uniform", "accesses": 20_000, "footprint": "256MiB"}
    a = tessera.simulate("tlb_only", synthetic=syn)
    b = tessera.simulate("tlb_only", synthetic=syn)
    assert "host.peak_heap_bytes" not in a.counters
    assert a.host["peak_heap_bytes"] == b.host["peak_heap_bytes"] > 0
    big = tessera.simulate("tlb_only", synthetic={**syn, "footprint": "8GiB"})
    # More simulated footprint, more page-table nodes and reverse-map chunks.
    assert big.host["peak_heap_bytes"] > a.host["peak_heap_bytes"]
    a.save(tmp_path / "r.json")
    doc = json.loads((tmp_path / "r.json").read_text())
    assert doc["host"] == {"peak_heap_bytes": a.host["peak_heap_bytes"]}
    assert tessera.load_result(tmp_path / "r.json").host == a.host


def test_ab_compares_two_builds_with_equal_counters(sort_trace):
    """Both sides are this build (building another revision takes minutes):
    the protocol, the counter check and the ratios."""
    me = ab.Build(label="this", python=sys.executable)
    other = ab.Build(label="again", python=sys.executable)
    streams = ab.standard_streams(("tlb_only",), ("uniform",), 20_000, "256MiB", traces=[str(sort_trace)])
    doc = ab.compare(me, other, streams, rounds=2)
    assert [r["stream"] for r in doc["streams"]] == ["tlb_only uniform", "tlb_only sort.tess"]
    for r in doc["streams"]:
        assert "error" not in r, r.get("error")
        assert r["counter_differences"] == [] and r["counters_compared"] > 50
        assert len(r["seconds"][0]) == len(r["seconds"][1]) == 2
        assert r["ratio"] > 0 and r["ratio_range"][0] <= r["ratio_range"][1]
    assert ab.counters_agree(doc)


def test_ab_reports_a_failing_run_instead_of_timing_it(tmp_path):
    me = ab.Build(label="this", python=sys.executable)
    streams = [ab.Stream("tlb_only", trace=str(tmp_path / "missing.tess"))]
    doc = ab.compare(me, me, streams, rounds=1)
    assert "missing.tess" in doc["streams"][0]["error"]
    assert not ab.counters_agree(doc)


def test_ab_refuses_an_unknown_revision(tmp_path):
    repo = ab.repo_root()
    with pytest.raises(ab.AbError, match="unknown revision"):
        ab.revision_build("no-such-revision-xyz", repo, root=tmp_path)


def test_cli_against_names_bad_arguments(cli):
    r = cli("bench", "--against", "HEAD", "--machines", "nosuch")
    assert r.code == 2 and "unknown preset 'nosuch'" in r.err
    r = cli("bench", "--trace", "x.tess")
    assert r.code == 2 and "apply only to --against" in r.err


def test_pycachesim_agrees_with_tessera_on_a_real_trace(sort_trace):
    pytest.importorskip("cachesim")
    row = pcs.compare_trace(str(sort_trace), rounds=1)
    assert row["counters_equal"], (row["tessera_counts"], row["pycachesim_counts"])
    assert row["tessera_counts"]["l1_hits"] > 1_000_000
    assert row["ratio_memory"] > 0 and row["ratio_file"] > 0


def test_page_list_splits_accesses_that_cross_a_page():
    df = pd.DataFrame(
        {"vaddr": np.array([0x1000, 0x1FFC, 0x5000], dtype=np.uint64), "kind": np.array([0, 1, 2], dtype=np.uint8),
         "size": np.array([8, 8, 4], dtype=np.uint8)}
    )
    assert pcs.page_list(df) == [0x1000, 0x1000, 0x2000]
