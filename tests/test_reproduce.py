"""`tessera reproduce mmu-analysis`: the analysis formulas on hand-made runs,
the sweep it asks for, and one end-to-end run at the test-only `tiny` scale."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tessera
from tessera.report import mmu_analysis as ma
from tessera.report import paper_mmu as paper
from tessera.report import mmu_report
from tessera.report.mmu_report import fmt, label
from tessera.report.render import to_markdown
from tessera.sweeps import plan

# ------------------------------------------------------------ hand-made runs

_CONSTS = {"perfect_mmu_l1_cycles": 12, "perfect_mmu_l2_cycles": 20, "perfect_mmu_llc_cycles": 43, "perfect_tlb_cycles": 7}


def _row(workload: str, page: str, pf: str, model: str = "interval", **counters: int) -> dict[str, Any]:
    l1, l2, llc = ma.PREFETCH[pf]
    row: dict[str, Any] = {
        "run_id": f"{workload}-{page}-{pf}-{model}",
        "workload": workload,
        "wall_s": 1.0,
        "config.physmem.page_size.kind": ma.PAGE_SIZES[page],
        "config.cache.l1d.prefetcher.kind": l1,
        "config.cache.l2.prefetcher.kind": l2,
        "config.cache.llc.prefetcher.kind": llc,
        **{f"config.metrics.{k}": v for k, v in _CONSTS.items()},
        "core.instructions": 100_000,
        "core.base_cycles": 100_000,
        "cache.l1d.misses": 1000,
        "cache.l2.data_misses": 500,
        "cache.llc.data_misses": 200,
        "pagetable.mappings_4k": 0,
        "pagetable.mappings_2m": 0,
        "os.faults": 10,
    }
    row.update(counters)
    if model == "ooo":
        # An ooo run states its model and has its own cycles (given) and walk-oldest counter.
        row["config.timing.kind"] = "ooo"
        assert "core.cycles" in counters and "core.walk_oldest_cycles" in counters
    else:
        # cycles = base + data stalls + translation stalls, as the interval model has it;
        # an interval run's config leaves timing.kind out.
        row["core.cycles"] = row["core.base_cycles"] + row["core.data_stall_cycles"] + row["core.translation_stall_cycles"]
    row["walker.data_cycles"] = row["walker.cycles"]
    return row


def _runs(walks=(("kvcache", 1000, 500), ("gups", 2000, 0))) -> pd.DataFrame:
    """Workloads (two by default) × the study's four configurations, with round numbers."""
    rows = []
    for w, walks4, walks2 in walks:
        rows.append(
            _row(w, "4K", "none", **{"walker.data_walks": walks4, "walker.cycles": 40 * walks4,
                                     "core.translation_stall_cycles": 40 * walks4 + 7000,
                                     "core.data_stall_cycles": 50_000, "pagetable.mappings_4k": 2560,
                                     "cache.l1d.misses": 1200, "cache.llc.data_misses": 250})
        )
        for pf, cost in (("none", 20), ("l1", 30), ("all", 10)):
            rows.append(
                _row(w, "2M", pf, **{"walker.data_walks": walks2, "walker.cycles": cost * walks2,
                                     "core.translation_stall_cycles": cost * walks2 + 1000,
                                     "core.data_stall_cycles": 45_000, "pagetable.mappings_2m": 5})
            )
    # Shuffled, so label_runs must restore the study's order.
    return pd.DataFrame(rows).sample(frac=1.0, random_state=1).reset_index(drop=True)


@pytest.fixture
def runs() -> pd.DataFrame:
    return ma.label_runs(_runs())


def _ooo_runs() -> pd.DataFrame:
    """kvcache and gups under ooo (all four configurations) beside the
    interval runs of :func:`_runs` without prefetchers. Under ooo the walks
    overlap: kvcache 4K has 40_000 walk cycles (walker busy) of which 10_000
    are the oldest work, in 120_000 cycles; 2M 10_000 busy, 1000 oldest, in
    100_000 cycles."""
    rows = []
    for w in ("kvcache", "gups"):
        rows.append(_row(w, "4K", "none", "ooo", **{
            "walker.data_walks": 1000, "walker.cycles": 40_000, "core.walk_oldest_cycles": 10_000,
            "core.translation_stall_cycles": 13_000, "core.data_stall_cycles": 30_000, "core.cycles": 120_000,
            "pagetable.mappings_4k": 2560}))
        for pf in ("none", "l1", "all"):
            rows.append(_row(w, "2M", pf, "ooo", **{
                "walker.data_walks": 500, "walker.cycles": 10_000, "core.walk_oldest_cycles": 1000,
                "core.translation_stall_cycles": 1500, "core.data_stall_cycles": 28_000, "core.cycles": 100_000,
                "pagetable.mappings_2m": 5}))
    interval = _runs()
    interval = interval[interval["config.cache.l1d.prefetcher.kind"] == "none"]
    both = pd.concat([pd.DataFrame(rows), interval], ignore_index=True)
    return both.sample(frac=1.0, random_state=2).reset_index(drop=True)


def test_label_runs_orders_workloads_and_configurations(runs: pd.DataFrame) -> None:
    assert list(runs["workload"]) == ["kvcache"] * 4 + ["gups"] * 4
    assert list(runs["page"][:4]) == ["4K", "2M", "2M", "2M"]
    assert list(runs["prefetch"][:4]) == ["none", "none", "l1", "all"]


def test_label_runs_rejects_duplicates_and_foreign_configs() -> None:
    df = _runs()
    with pytest.raises(ValueError, match="several runs"):
        ma.label_runs(pd.concat([df, df.iloc[:1]]))
    odd = df.copy()
    odd.loc[0, "config.cache.l2.prefetcher.kind"] = "next_line"
    with pytest.raises(ValueError, match="outside the study"):
        ma.label_runs(odd)


def test_check_complete_names_missing_runs(runs: pd.DataFrame) -> None:
    spec = {"axes": {"workload": ["kvcache", "gups"]}}
    ma.check_complete(runs, spec)
    with pytest.raises(ValueError, match="'gups', '2M', 'l1'"):
        ma.check_complete(runs[~((runs.workload == "gups") & (runs.prefetch == "l1"))], spec)


def test_walk_share_mpki_and_cycles_per_walk(runs: pd.DataFrame) -> None:
    f1, f4, f5 = ma.fig1_walk_share(runs), ma.fig4_walks_pki(runs), ma.fig5_cycles_per_walk(runs)
    # kvcache 4K: 40_000 walk cycles of 100_000 + 50_000 + 47_000 cycles.
    assert f1.loc["kvcache", "4K"] == pytest.approx(100 * 40_000 / 197_000)
    assert f4.loc["kvcache", "4K"] == pytest.approx(10.0)  # 1000 walks per 100k instructions
    assert f4.loc["kvcache", "2M"] == pytest.approx(5.0)
    assert f5.loc["kvcache", "4K"] == pytest.approx(40.0)
    assert f5.loc["kvcache", "2M"] == pytest.approx(20.0)
    # No walks with 2 MiB pages: cycles per walk is undefined, not 0 or inf.
    assert f4.loc["gups", "2M"] == 0.0
    assert math.isnan(f5.loc["gups", "2M"])


def test_equation_1_and_where_the_gap_comes_from(runs: pd.DataFrame) -> None:
    f3 = ma.fig3_speedup(runs)
    c4 = 100_000 + 50_000 + 40_000 + 7000
    c2 = 100_000 + 45_000 + 10_000 + 1000
    expected_c2 = c4 - 40_000 + 10_000
    assert f3.loc["kvcache", "measured"] == pytest.approx(100 * (c4 / c2 - 1))
    assert f3.loc["kvcache", "expected"] == pytest.approx(100 * (c4 / expected_c2 - 1))
    assert f3.loc["kvcache", "gap"] == pytest.approx(f3.loc["kvcache", "measured"] - f3.loc["kvcache", "expected"])
    assert f3.loc["kvcache", "saved_walks"] == pytest.approx(100 * 30_000 / c4)
    assert f3.loc["kvcache", "saved_tlb_hits"] == pytest.approx(100 * 6000 / c4)
    assert f3.loc["kvcache", "saved_data"] == pytest.approx(100 * 5000 / c4)
    # The three savings add up to the simulated saving.
    saved = f3.loc["kvcache", ["saved_walks", "saved_tlb_hits", "saved_data"]].sum()
    assert saved == pytest.approx(100 * (c4 - c2) / c4)


def test_table_iv_ratios_and_figure_2_normalisation(runs: pd.DataFrame) -> None:
    t4, f2 = ma.table4_ratios(runs), ma.fig2_normalised_walk_cycles(runs)
    assert t4.loc["kvcache"].tolist() == pytest.approx([0.5, 0.5, 0.25])
    assert f2.loc["kvcache", "2M"] == pytest.approx(0.25)
    assert f2.loc["kvcache", "4K"] == 1.0
    assert t4.loc["gups", "walk_cycles"] == 0.0
    assert math.isnan(t4.loc["gups", "cycles_per_walk"])


def test_perfect_bounds_use_each_runs_constants(runs: pd.DataFrame) -> None:
    f10 = ma.fig10_bounds(runs)
    c4 = 197_000
    for name, key in (("perfect_mmu_llc", 43), ("perfect_mmu_l2", 20), ("perfect_mmu_l1", 12), ("perfect_tlb", 7)):
        assert f10.loc["kvcache", f"4K {name}"] == pytest.approx(100 * 1000 * key / c4)
    changed = _runs()
    changed["config.metrics.perfect_tlb_cycles"] = 14
    assert ma.fig10_bounds(ma.label_runs(changed)).loc["kvcache", "4K perfect_tlb"] == pytest.approx(100 * 1000 * 14 / c4)


def test_table_v_normalises_to_prefetchers_off(runs: pd.DataFrame) -> None:
    t5 = ma.table5_prefetch(runs)
    assert t5.loc["kvcache", "l1 walks"] == 1.0
    assert t5.loc["kvcache", "l1 cycles_per_walk"] == pytest.approx(30 / 20)
    assert t5.loc["kvcache", "all walk_cycles"] == pytest.approx(10 / 20)
    assert math.isnan(t5.loc["gups", "all walk_cycles"])  # 0 / 0


def test_cache_misses_walks_vs_llc_and_coverage(runs: pd.DataFrame) -> None:
    f7, f9, t3 = ma.fig7_cache_miss_reduction(runs), ma.fig9_walks_vs_llc(runs), ma.table3_coverage(runs)
    assert f7.loc["kvcache", "l1d"] == pytest.approx(100 * (1 - 1000 / 1200))
    assert f7.loc["kvcache", "llc"] == pytest.approx(100 * (1 - 200 / 250))
    assert f9.loc["kvcache", "llc_mpki"] == pytest.approx(2.0)
    assert f9.loc["kvcache", "walks_pki"] == pytest.approx(5.0)
    assert f9.loc["kvcache", "larger"] == "walks"
    assert f9.loc["gups", "larger"] == "llc"
    assert t3.loc["kvcache", "touched_mib"] == pytest.approx(10.0)
    assert t3.loc["kvcache", "thp_coverage"] == 100.0
    assert t3.loc["kvcache", "cold_4K"] == pytest.approx(1.0)


def test_label_runs_reads_the_timing_model() -> None:
    df = ma.label_runs(_ooo_runs())
    # An interval run's config has no timing.kind: it is labelled interval.
    assert df["config.timing.kind"].isna().sum() == 4
    assert list(df["model"][:6]) == ["ooo"] * 4 + ["interval"] * 2
    assert list(df["page"][:6]) == ["4K", "2M", "2M", "2M", "4K", "2M"]
    assert ma.models_of(df) == ["ooo", "interval"]
    assert ma.models_of(ma.label_runs(_runs())) == ["interval"]
    ma.check_complete(df, {"axes": {"workload": ["kvcache", "gups"], "timing.kind": ["ooo", "interval"]}})
    with pytest.raises(ValueError, match="'gups', '2M', 'none', 'interval'"):
        ma.check_complete(df[~((df.workload == "gups") & (df.model == "interval") & (df.page == "2M"))],
                          {"axes": {"workload": ["kvcache", "gups"], "timing.kind": ["ooo", "interval"]}})


def test_figure_1_under_ooo_is_walk_oldest_with_walker_busy_beside() -> None:
    df = ma.label_runs(_ooo_runs())
    f1 = ma.fig1_walk_share(df)
    assert f1.attrs["models"] == ["ooo", "interval"]
    assert f1.loc["kvcache", "4K"] == pytest.approx(100 * 10_000 / 120_000)
    assert f1.loc["kvcache", "2M"] == pytest.approx(100 * 1000 / 100_000)
    assert f1.loc["kvcache", "4K busy"] == pytest.approx(100 * 40_000 / 120_000)
    assert f1.loc["kvcache", "2M busy"] == pytest.approx(100 * 10_000 / 100_000)
    # The interval model's columns are its own runs', as an interval-only table has them.
    alone = ma.fig1_walk_share(ma.label_runs(_runs()))
    for c in ("4K", "2M", "4K busy", "2M busy"):
        assert f1[f"interval {c}"].tolist() == pytest.approx(alone[c].tolist())
    # Under interval the walk cost is every walk cycle: both shares agree.
    assert alone["4K"].tolist() == pytest.approx(alone["4K busy"].tolist())


def test_equation_1_under_ooo_subtracts_the_walk_oldest_cycles() -> None:
    df = ma.label_runs(_ooo_runs())
    f3 = ma.fig3_speedup(df)
    c4, c2 = 120_000, 100_000
    assert f3.loc["kvcache", "measured"] == pytest.approx(100 * (c4 / c2 - 1))
    assert f3.loc["kvcache", "expected"] == pytest.approx(100 * (c4 / (c4 - 10_000 + 1000) - 1))
    assert f3.loc["kvcache", "expected_busy"] == pytest.approx(100 * (c4 / (c4 - 40_000 + 10_000) - 1))
    assert f3.loc["kvcache", "gap_busy"] == pytest.approx(f3.loc["kvcache", "measured"] - f3.loc["kvcache", "expected_busy"])
    assert f3.loc["kvcache", "saved_walks"] == pytest.approx(100 * 9000 / c4)
    assert f3.loc["kvcache", "saved_tlb_hits"] == pytest.approx(100 * (3000 - 500) / c4)
    assert f3.loc["kvcache", "saved_data"] == pytest.approx(100 * 2000 / c4)
    saved = f3.loc["kvcache", ["saved_walks", "saved_tlb_hits", "saved_data", "saved_other"]].sum()
    assert saved == pytest.approx(100 * (c4 - c2) / c4)
    # The interval model's columns equal an interval-only table's; its split leaves nothing over.
    alone = ma.fig3_speedup(ma.label_runs(_runs()))
    for c in ("measured", "expected", "gap", "saved_walks", "saved_data"):
        assert f3[f"interval {c}"].tolist() == pytest.approx(alone[c].tolist())
    assert alone["saved_other"].tolist() == pytest.approx([0.0, 0.0])
    assert alone["expected_busy"].tolist() == pytest.approx(alone["expected"].tolist())


def test_models_table_puts_both_models_side_by_side() -> None:
    df = ma.label_runs(_ooo_runs())
    m = ma.models_table(df)
    assert list(m.index) == [("kvcache", "ooo"), ("kvcache", "interval"), ("gups", "ooo"), ("gups", "interval")]
    f1, f3 = ma.fig1_walk_share(df), ma.fig3_speedup(df)
    assert m.loc[("kvcache", "ooo"), "gap"] == pytest.approx(f3.loc["kvcache", "gap"])
    assert m.loc[("kvcache", "interval"), "measured"] == pytest.approx(f3.loc["kvcache", "interval measured"])
    assert m.loc[("gups", "ooo"), "busy_4K"] == pytest.approx(f1.loc["gups", "4K busy"])
    # The other views are the main (ooo) model's runs; Table V uses all four.
    t = ma.tables(df)
    assert t["fig10"].loc["kvcache", "4K measured"] == pytest.approx(100 * 40_000 / 120_000)
    assert t["table5"].loc["kvcache", "l1 walks"] == pytest.approx(1.0)


def test_report_states_both_models_and_the_walk_share_used() -> None:
    df = ma.label_runs(_ooo_runs())
    t = ma.tables(df)
    md = to_markdown(mmu_report._fig1(t["fig1"]))
    row = _md_row(md, "kvcache (data-caching)", "## Figure 1")
    assert row[:6] == [fmt(t["fig1"].loc["kvcache", c]) for c in ("4K", "2M", "4K busy", "2M busy", "interval 4K", "interval 2M")]
    assert "core.walk_oldest_cycles" in md and "ours (interval) 4 KiB" in md
    md3 = to_markdown(mmu_report._fig3(t["fig3"]))
    row = _md_row(md3, "kvcache (data-caching)", "## Figure 3")
    assert row[:5] == [fmt(t["fig3"].loc["kvcache", c]) for c in ("measured", "expected", "gap", "expected_busy", "gap_busy")]
    assert md3.count("where the simulated cycles go") == 2
    side = to_markdown(mmu_report._models_section(t["models"]))
    assert _md_row(side, "kvcache (data-caching)", "## Both")[0] == "ooo"
    statement = mmu_report.model_statement(df)
    assert "`timing.kind = \"ooo\"`) for 8 run(s)" in statement
    assert "`timing.kind = \"interval\"`) for 4 run(s)" in statement
    # Under ooo, where the load dependencies came from (the result's timing_dependencies).
    deps = df.assign(timing_dependencies=["from the stream" if m == "ooo" else None for m in df["model"]])
    assert "(load dependencies: from the stream, 8 run(s))" in mmu_report.model_statement(deps)
    gpu = pd.DataFrame({"gpu.cycles": [1.0, 2.0]})
    assert "GPU timing model for 2 GPU run(s)" in mmu_report.model_statement(gpu)


# ----------------------------------------------------------------- the sweep


@pytest.mark.parametrize("scale", ma.SCALES)
def test_sweep_spec_is_four_runs_per_workload_and_model_plus_two(scale: str) -> None:
    spec = ma.sweep_spec(scale)
    _, expanded, _ = plan(spec)
    n = len(ma.workloads_for(scale))
    assert len(expanded) == 6 * n
    assert set(spec["params"]) == set(ma.workloads_for(scale))
    # Four runs per workload under ooo, the two without prefetchers under interval.
    kinds = [r.point["timing.kind"] for r in expanded]
    assert kinds.count("ooo") == 4 * n and kinds.count("interval") == 2 * n
    assert all(r.point["cache.l1d.prefetcher"] == "none" for r in expanded if r.point["timing.kind"] == "interval")
    _, one, _ = plan(ma.sweep_spec(scale, models=("interval",)))
    assert len(one) == 4 * n
    with pytest.raises(ValueError, match="models"):
        ma.sweep_spec(scale, models=("ooo", "ooo"))


def test_sweep_axis_timing_kind_keeps_the_presets_core() -> None:
    """`timing.kind` picks a model, as `--set timing.kind=ooo` does: the
    preset's clock and `[timing.ooo]` core stay (spelt `timing`, the axis
    would replace the whole `[timing]` table with defaults)."""
    import tomllib

    _, expanded, _ = plan(ma.sweep_spec("tiny"))
    for r in expanded:
        timing = tomllib.loads(r.config_toml)["timing"]
        assert timing["frequency_ghz"] == 3.2
        if r.point["timing.kind"] == "ooo":
            assert timing["kind"] == "ooo"
            assert (timing["ooo"]["window"], timing["ooo"]["lsq"], timing["ooo"]["mshrs"]) == (168, 100, 10)
        else:
            # An interval run's resolved config is what it was before the ooo model existed.
            assert "kind" not in timing and "ooo" not in timing


def test_paper_numbers_cover_every_benchmark() -> None:
    for table in (paper.TABLE_III, paper.TABLE_IV, paper.TABLE_V):
        assert set(table) == set(paper.BENCHMARKS)
    assert set(paper.ANALOG_OF.values()) == set(paper.BENCHMARKS) - {"software-testing"}
    # Table IV's walk-cycle ratio is walks × cycles per walk (to the paper's rounding).
    for walks, cpw, cycles in paper.TABLE_IV.values():
        assert walks * cpw == pytest.approx(cycles, abs=0.04)


def test_headline_2m_row_states_only_what_section_iv_b_says():
    # §IV-B: "more than 6 %" remains for data- and graph-analytics; it names no largest value.
    walks = (("data-analytics", 1000, 500), ("graph-analytics", 1000, 250), ("gups", 2000, 0))
    t = ma.tables(ma.label_runs(_runs(walks)))
    md = to_markdown(mmu_report._headline(t, list(t["fig1"].index)))
    assert "Largest % of cycles in walks, 2 MiB" not in md
    f1 = t["fig1"]["2M"]
    ours = f"{fmt(f1['data-analytics'])} (data-analytics), {fmt(f1['graph-analytics'])} (graph-analytics)"
    row = _md_row(md, "% of cycles in walks with 2 MiB pages, data-/graph-analytics (Fig. 1)", "## Headline")
    assert row == ["more than 6 for both", ours, "—"]


def test_figure_1_says_where_media_serving_became_media_streaming():
    fig1 = pd.DataFrame({"4K": [0.43, 42.05], "2M": [0.05, 6.94]}, index=["media-streaming", "gups"])
    md = to_markdown(mmu_report._fig1(fig1))
    assert _md_row(md, "media-streaming", "## Figure 1")[2] == "more than 10"
    # Said in the table's caption and in the paper's claims under it.
    note = 'the paper\'s text says "media-serving", a name no benchmark has; we read it as media-streaming'
    assert md.count(note) == 2
    # Without a media-streaming row the caption has nothing to explain.
    assert to_markdown(mmu_report._fig1(fig1.drop(index="media-streaming"))).count(note) == 1


def test_report_text_is_written_for_its_reader(runs: pd.DataFrame):
    md = to_markdown(mmu_report._fig7(ma.tables(runs)["fig7"]))
    assert "Figure 7" in md and "the issue" not in md


# --------------------------------------------------------------- end to end

FIGURES = [
    "fig1_walk_share",
    "fig2_normalised_walk_cycles",
    "fig3_speedup",
    "fig4_walks_pki",
    "fig5_cycles_per_walk",
    "fig7_cache_miss_reduction",
    "fig9_walks_vs_llc",
    "fig10_bounds",
    "table5_prefetch",
]
SECTIONS = ["Figure 1", "Figure 2", "Figure 3", "Figure 4", "Figure 5", "Table IV", "Figure 9", "Figure 10", "Table V", "Table III"]


def _md_row(md: str, first_cell: str, after: str) -> list[str]:
    """The cells of the first table row starting with ``first_cell`` after the heading ``after``."""
    tail = md[md.index(after):]
    m = re.search(r"^\| " + re.escape(first_cell) + r" \|(.*)\|$", tail, re.M)
    assert m, f"no row {first_cell!r} after {after!r}"
    return [c.strip() for c in m.group(1).split("|")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "report"
    from tessera.cli import main

    assert main(["reproduce", "mmu-analysis", "--tiny", "-o", str(out), "--jobs", "2"]) == 0
    return out


def test_tiny_report_has_every_figure_and_table(tiny: Path) -> None:
    for stem in FIGURES:
        for ext in ("png", "svg"):
            assert (tiny / "figures" / f"{stem}.{ext}").stat().st_size > 1000
    md = (tiny / "report.md").read_text(encoding="utf-8")
    html = (tiny / "report.html").read_text(encoding="utf-8")
    for section in SECTIONS:
        assert section in md and section in html
    for stem in FIGURES:
        assert f"figures/{stem}.png" in md and f"figures/{stem}.svg" in html
    assert "tessera reproduce mmu-analysis --tiny" in md
    # Users have neither the issue tracker nor the project's copy of the paper.
    for text in (md, html):
        assert "the issue" not in text and "shared/papers" not in text
    assert "IISWC 2014" in md
    assert (tiny / "sweep.toml").read_text(encoding="utf-8") in md.replace("```toml\n", "")


def test_tiny_report_numbers_are_the_stores(tiny: Path) -> None:
    """Recompute every table from the store and find its numbers in report.md."""
    df = ma.label_runs(tessera.results.load(str(tiny / "store.sqlite"), sweep="mmu-analysis-tiny"))
    t = ma.tables(df)
    md = (tiny / "report.md").read_text(encoding="utf-8")
    assert t["fig1"].attrs["models"] == ["ooo", "interval"]
    assert "for 12 run(s)" in md and "for 6 run(s)" in md
    assert "(load dependencies: from the stream, 12 run(s))" in md
    for w in ma.workloads_for("tiny"):
        lab = label(w)
        assert _md_row(md, lab, "## Figure 1")[:6] == [
            fmt(t["fig1"].loc[w, c]) for c in ("4K", "2M", "4K busy", "2M busy", "interval 4K", "interval 2M")]
        assert _md_row(md, lab, "## Figure 2")[0] == fmt(t["fig2"].loc[w, "2M"])
        assert _md_row(md, lab, "## Figure 3")[:3] == [fmt(t["fig3"].loc[w, c]) for c in ("measured", "expected", "gap")]
        assert _md_row(md, lab, "## Figure 4")[:2] == [fmt(t["fig4"].loc[w, p], 3) for p in ("4K", "2M")]
        assert _md_row(md, lab, "## Figure 5")[:2] == [fmt(t["fig5"].loc[w, p], 1) for p in ("4K", "2M")]
        assert _md_row(md, lab, "## Table IV")[:3] == [fmt(x) for x in t["table4"].loc[w]]
        assert _md_row(md, lab, "## Figure 9")[:2] == [fmt(t["fig9"].loc[w, "walks_pki"], 3), fmt(t["fig9"].loc[w, "llc_mpki"])]
        assert _md_row(md, lab, "## Figure 10")[0] == fmt(t["fig10"].loc[w, "4K measured"])
        assert _md_row(md, lab, "## Table V")[:3] == [fmt(t["table5"].loc[w, f"l1 {c}"]) for c in ("walks", "cycles_per_walk", "walk_cycles")]
    # The paper's side of a row is the transcription.
    assert _md_row(md, "kvcache (data-caching)", "## Table IV")[3:6] == ["1.17", "0.83", "0.98"]
    # Our walk shares are the core's derived metrics, recomputed from counters.
    b = df[(df.page == "4K") & (df.model == "ooo")].set_index("workload")
    assert (t["fig1"]["4K"] / 100).tolist() == pytest.approx(b["core.walk_oldest_share"].tolist())
    assert (t["fig1"]["4K busy"] / 100).tolist() == pytest.approx(b["walker.data_walk_cycle_share"].tolist())
    i = df[(df.page == "4K") & (df.model == "interval")].set_index("workload")
    assert (t["fig1"]["interval 4K"] / 100).tolist() == pytest.approx(i["walker.data_walk_cycle_share"].tolist())


def test_tiny_equation_1_matches_tessera_compare(tiny: Path) -> None:
    store = str(tiny / "store.sqlite")
    df = ma.label_runs(tessera.results.load(store, sweep="mmu-analysis-tiny"))
    f3 = ma.fig3_speedup(df)
    # `tessera compare` subtracts every walk cycle (walker busy): the interval
    # model's Equation 1, and the ooo model's walker-busy variant.
    for w in ma.workloads_for("tiny"):
        for model, pre, exp in (("interval", "interval ", "expected"), ("ooo", "", "expected_busy")):
            sel = (df.workload == w) & (df.prefetch == "none") & (df.model == model)
            ids = {p: df[sel & (df.page == p)].run_id.item() for p in ("4K", "2M")}
            c = tessera.compare(tessera.results.get(store, ids["4K"]), tessera.results.get(store, ids["2M"]))
            assert f3.loc[w, pre + "measured"] == pytest.approx(100 * c["simulated_speedup"])
            assert f3.loc[w, pre + exp] == pytest.approx(100 * c["expected_speedup"])


def test_rerun_reuses_the_store_and_draws_identical_figures(tiny: Path) -> None:
    before = {p.name: p.read_bytes() for p in (tiny / "figures").iterdir()}
    r = tessera.reproduce("mmu-analysis", out=tiny, scale="tiny", jobs=1)
    assert r.timing["computed"] == 0 and r.timing["already_stored"] == 18
    after = {p.name: p.read_bytes() for p in (tiny / "figures").iterdir()}
    assert after == before


def test_cli_rejects_two_scales(cli: Any) -> None:
    r = cli("reproduce", "mmu-analysis", "--quick", "--tiny")
    assert r.code == 2
    assert "--quick and --tiny" in r.err


def test_timing_models_are_chosen_on_the_cli_for_mmu_analysis_only(cli: Any, tmp_path: Path) -> None:
    r = cli("reproduce", "gtsm", "--tiny", "--timing-models", "ooo")
    assert r.code == 2 and "--timing-models applies only to mmu-analysis" in r.err
    r = cli("reproduce", "mmu-analysis", "--tiny", "--timing-models", "ooo,cycle")
    assert r.code == 2 and "give distinct models from" in r.err
    with pytest.raises(ValueError, match="models applies only to mmu-analysis"):
        tessera.reproduce("gtsm", out=tmp_path / "g", scale="tiny", models=["ooo"])
    out = tmp_path / "interval-only"
    r = cli("reproduce", "mmu-analysis", "--tiny", "-o", str(out), "--jobs", "2", "--timing-models", "interval")
    assert r.code == 0, r.err
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "the interval model (`timing.kind = \"interval\"`)" in md
    assert "timing.kind = \"ooo\"" not in md.split("## How this report was made")[1]
