"""Results a researcher can trust: warm-up, the stats schema, overrides that
cannot create structures by accident, and one spelling of the page-size setting."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from conftest import SMALL_SYNTHETIC

import tessera
from tessera.errors import SweepError
from tessera.result import load_result
from tessera.sweeps import load_spec, sweep

SYN = {"pattern": "hotcold", "accesses": 30_000, "footprint": "64MiB"}


# ------------------------------------------------------------------ warm-up


def test_warmup_restarts_counters_and_reports_both_phases():
    full = tessera.simulate("sandy_bridge", synthetic=SYN, seed=2)
    warm = tessera.simulate("sandy_bridge", synthetic=SYN, seed=2, warmup="10k accesses")
    assert full.phases == {"warmup": {"records": 0, "instructions": 0},
                           "measured": {"records": 30_000, "instructions": full.counters["core.instructions"]}}
    assert warm.phases["warmup"]["records"] == 10_000
    assert warm.phases["measured"]["records"] == warm.counters["core.records"] == 20_000
    total = warm.phases["warmup"]["instructions"] + warm.phases["measured"]["instructions"]
    assert total == full.counters["core.instructions"]
    # The warm-up took the cold first touches; the measured part has fewer faults than the whole.
    assert 0 < warm.counters["walker.faulting_walks"] < full.counters["walker.faulting_walks"]
    # Gauges are the state at the end, not a difference.
    assert warm.counters["physmem.free_frames"] == full.counters["physmem.free_frames"]
    assert set(warm.stats) == set(full.stats)


def test_warmup_in_instructions_and_errors():
    r = tessera.simulate("tlb_only", synthetic=SYN, warmup="20_000 instructions")
    assert r.phases["warmup"]["instructions"] >= 20_000
    assert r.phases["warmup"]["instructions"] - 20_000 < 10  # ends at the record that reaches it
    with pytest.raises(tessera.ConfigError, match="not shorter than the stream"):
        tessera.simulate("tlb_only", synthetic=SYN, warmup=30_000)
    with pytest.raises(tessera.ConfigError, match="the unit is accesses or instructions"):
        tessera.simulate("tlb_only", synthetic=SYN, warmup="5 cycles")


def test_cli_warmup_is_in_the_result_and_the_summary(cli, tmp_path: Path):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--warmup", "5e3", "--out", "w.json")
    assert r.code == 0, r.err
    assert "warm-up (not counted)" in r.out and "5,000 accesses" in r.out
    doc = json.loads((tmp_path / "w.json").read_text())
    assert doc["phases"]["warmup"]["records"] == 5000
    assert doc["stats"]["counters"]["core.records"] == 15_000
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--warmup", "lots")
    assert r.code == 2 and "warmup" in r.err


def test_sweep_warmup_key_and_axis(tmp_path: Path):
    base = {"name": "w", "machine": "tlb_only", "source": {"synthetic": dict(SYN)}}
    plain = load_spec({**base, "axes": {"seed": [0]}}).expand()[0]
    zero = load_spec({**base, "warmup": 0, "axes": {"seed": [0]}}).expand()[0]
    assert plain.run_id == zero.run_id and plain.warmup is None  # no warm-up: the id is as before
    runs = load_spec({**base, "axes": {"warmup": ["1k", "2000 accesses"]}}).expand()
    assert [r.warmup for r in runs] == ["1000 accesses", "2000 accesses"]
    assert len({r.run_id for r in runs} | {plain.run_id}) == 3
    df = sweep({**base, "warmup": "1000 instructions", "axes": {"seed": [0, 1]}}, store=tmp_path / "s.sqlite")
    assert (df["warmup.instructions"] >= 1000).all() and (df["core.records"] < 30_000).all()
    with pytest.raises(SweepError, match="warmup"):
        load_spec({**base, "warmup": "soon", "axes": {"seed": [0]}}).expand()


# ------------------------------------------------------------------ schema


def test_stats_schema_names_and_null_for_undefined(tmp_path: Path):
    r = tessera.simulate("sandy_bridge", synthetic=SYN)
    assert tessera.result.STATS_SCHEMA == 2
    # 4 KiB pages: the 2 MiB D-TLB is looked up and always misses; the I-TLBs see no lookups.
    assert math.isnan(r.stats["mmu.l1_itlb_4k.miss_rate"])
    path = r.save(tmp_path / "r.json")
    doc = json.loads(path.read_text())
    assert doc["stats_schema"] == 2
    assert doc["stats"]["derived"]["mmu.l1_itlb_4k.miss_rate"] is None
    assert not [k for k in doc["stats"]["derived"] if k.startswith("derived.")]
    csv_row = r.to_csv().splitlines()
    header, data = csv_row[0].split(","), csv_row[1].split(",")
    assert data[header.index("mmu.l1_itlb_4k.miss_rate")] == ""
    # The same names in the result, its DataFrame and `tessera stats`.
    docs = tessera.stat_docs("sandy_bridge")
    assert set(r.stats) <= set(docs)
    assert set(r.to_pandas().columns) >= set(r.stats)


def test_schema_1_files_load_under_the_new_names(tmp_path: Path):
    r = tessera.simulate("tlb_only", synthetic=SYN)
    doc = r.to_dict()
    del doc["stats_schema"], doc["phases"]
    doc["stats"]["derived"] = {
        ("derived." + k if not k.startswith(("mmu.", "cache.")) else "derived." + k): v
        for k, v in doc["stats"]["derived"].items()
    }
    doc["stats"]["derived"] = {k.replace("derived.walker.", "derived."): v for k, v in doc["stats"]["derived"].items()}
    (tmp_path / "old.json").write_text(json.dumps(doc))
    old = load_result(tmp_path / "old.json")
    assert old.stats["walker.walks_pki"] == r.stats["walker.walks_pki"]
    assert old.stats["mmu.l2_tlb.mpki"] == r.stats["mmu.l2_tlb.mpki"]
    assert old["derived.walks_pki"] == r.stats["walker.walks_pki"]  # the old name still reads
    assert old.phases is None


def test_tessera_stats_lists_derived_metrics_by_their_run_names(cli):
    r = cli("stats", "--preset", "sandy_bridge")
    assert r.code == 0, r.err
    for name in ("walker.walks_pki", "mmu.l2_tlb.mpki", "cache.llc.walk_ref_share", "bounds.perfect_tlb_share"):
        assert name in r.out
    assert "derived." not in r.out


# ------------------------------------------------------------------ overrides


def test_an_override_cannot_create_a_structure_by_typo(cli):
    r = cli("run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC, "--set", "mmu.tlb.l2tlb.entries=1024")
    assert r.code == 2
    assert "no TLB structure `l2tlb`" in r.err and "did you mean `l2_tlb`" in r.err
    assert "l1_dtlb_4k" in r.err and "level" not in r.err.split("did you mean")[0]
    r = cli("run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC, "--set", "mmu.psc.pmd.entries=64")
    assert r.code == 2 and "no paging-structure cache `pmd`" in r.err


def test_a_sweep_axis_cannot_create_a_structure_by_typo():
    s = {"name": "t", "machine": "sandy_bridge", "source": {"synthetic": dict(SYN)},
         "axes": {"mmu.tlb.l2tlb.entries": [512, 1024]}}
    with pytest.raises(SweepError) as e:
        load_spec(s).expand()
    assert "no TLB structure `l2tlb`" in str(e.value) and str(e.value).count("allowed") <= 1


def test_a_new_structure_is_given_whole():
    add = 'mmu.tlb.l3_tlb={ level = 3, side = "unified", page_sizes = ["4k"], entries = 4096, ways = 8, latency = 14 }'
    r = tessera.simulate("sandy_bridge", synthetic=SYN, overrides=[add])
    assert r.counters["mmu.l3_tlb.lookups"] == r.counters["mmu.l2_tlb.misses"]


# ------------------------------------------------------------------ page size


def test_the_page_size_has_one_spelling_and_kind_is_its_alias(tmp_path: Path):
    a = tessera.resolve_config("sandy_bridge", ["physmem.page_size=thp"])
    b = tessera.resolve_config("sandy_bridge", ["physmem.page_size.kind=thp"])
    assert a == b
    for key in ("physmem.page_size", "physmem.page_size.kind"):
        spec = {"name": "p" + str(len(key)), "machine": "tlb_only", "source": {"synthetic": dict(SYN)},
                "axes": {key: ["base_only", "thp"]}}
        runs = load_spec(spec).expand()
        assert [r.point for r in runs] == [{"physmem.page_size": "base_only"}, {"physmem.page_size": "thp"}]
    df = sweep(spec, store=tmp_path / "s.sqlite")
    from tessera.figures._common import resolve_column

    assert resolve_column(df, "physmem.page_size") == "axis.physmem.page_size"
    assert resolve_column(df, "physmem.page_size.kind") == "axis.physmem.page_size"
    assert resolve_column(df, "derived.walks_pki") == "walker.walks_pki"
    with pytest.raises(SweepError, match="two spellings"):
        load_spec({**spec, "axes": {"physmem.page_size": ["thp"], "physmem.page_size.kind": ["thp"]}})


def test_an_empty_trace_is_a_trace_error(cli, tmp_path: Path):
    (tmp_path / "empty.lackey").write_text("")
    r = cli("run", "--preset", "tlb_only", "--trace", "empty.lackey")
    assert r.code == 3, (r.code, r.err)
    assert "no access records" in r.err
