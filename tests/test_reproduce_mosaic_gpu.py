"""`tessera reproduce mosaic-gpu`: the sweeps it asks for, the tables on
hand-made rows, and one end-to-end run at the test-only `tiny` scale."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tessera
from tessera.report import mosaic_gpu as mg
from tessera.report import mosaic_motivation as mm
from tessera.report import paper_mosaic_gpu as paper

# ------------------------------------------------------------ sweeps


def test_every_config_runs_every_workload_and_the_shared_sweeps_are_the_motivation_study_s() -> None:
    specs = mg.specs("quick")
    configs = mg.all_configs("quick")
    assert set(specs) == ({"alone"} | {f"mix-{c}" for c in configs} | {f"seeds-{c}" for c in mg.SEED_CONFIGS}
                          | set(mg.compaction_specs("quick")))
    assert len(configs) == len(mg.CONFIGS) + sum(len(s.sizes(m, "quick")) for s in mg.TLB_SWEEPS.values()
                                                 for m in mg.TLB_MACHINES)
    n = len(mm.mixes("quick"))
    for c, (preset, over) in configs.items():
        s = specs[f"mix-{c}"]
        assert len(s["axes"]["apps"]) == n and s["machine"] == preset and s["set"] == over, c
    # One thing differs per comparison.
    assert specs["mix-mosaic"]["set"] == specs["mix-gpummu"]["set"] == {"gpu.paging": "resident"}
    assert specs["mix-mosaic"]["machine"] == "mosaic_gpu_mosaic" and specs["mix-gpummu"]["machine"] == "mosaic_gpu"
    assert specs["mix-mosaic_dp"]["set"] == specs["mix-gpummu_dp"]["set"] == {}
    assert specs["mix-cocoa_only"]["set"] == {"gpu.paging": "resident", "physmem.allocator": "cocoa"}
    assert specs["mix-mosaic_l1_8"]["set"]["gpu.l1_tlb.arrays"]["4k"] == {"entries": 8, "ways": "full"}
    # Figs. 14b and 15 resize one array and keep the preset's other fields (the L2 base array's 16 ways).
    assert specs["mix-gpummu_l2_128"]["set"] == {"gpu.paging": "resident", "gpu.l2_tlb.arrays": {
        "4k": {"entries": 128, "ways": 16}, "2m": {"entries": 256, "ways": "full"}}}
    assert specs["mix-mosaic_l1_2m_4"]["set"]["gpu.l1_tlb.arrays"] == {"4k": {"entries": 128, "ways": "full"},
                                                                       "2m": {"entries": 4, "ways": "full"}}
    assert specs["mix-mosaic_l2_2m_64"]["set"]["gpu.l2_tlb.arrays"]["2m"] == {"entries": 64, "ways": "full"}
    # gpummu, ideal and alone are the motivation study's, so one store serves both.
    other = mm.specs("quick")
    for mine, theirs in (("mix-gpummu", "mix-4k"), ("mix-ideal", "mix-ideal"), ("alone", "alone"),
                         ("seeds-gpummu", "seeds-4k"), ("seeds-ideal", "seeds-ideal")):
        a, b = dict(specs[mine]), dict(other[theirs])
        a.pop("name"), b.pop("name")
        assert a == b, mine
    from tessera.sweeps.spec import load_spec

    for name in ("mix-mosaic", "mix-cocoa_only", "mix-mosaic_l1_8", "mix-gpummu_l2_128", "seeds-mosaic"):
        assert load_spec(specs[name]).expand()


def test_tlb_sweeps_start_from_the_presets_arrays_and_every_size_is_a_valid_machine() -> None:
    from tessera.config import loads_toml

    for preset in ("mosaic_gpu", "mosaic_gpu_mosaic"):
        gpu = loads_toml(tessera.resolve_config(preset))["gpu"]
        assert {t: gpu[f"{t}_tlb"]["arrays"] for t in ("l1", "l2")} == mg.PRESET_TLB_ARRAYS, preset
    for scale in mg.SCALES:
        for name, (preset, over) in mg.all_configs(scale).items():
            tessera.resolve_config(preset, over)  # raises ConfigError on an invalid size
    # Figs. 14b and 15 lose at the same factor at every scale, so their losses compare.
    for key in ("fig14b", "fig15a", "fig15b"):
        s = mg.TLB_SWEEPS[key]
        assert all(s.preset_entries == 4 * min(s.entries[scale]) for scale in mg.SCALES), key
    # GPU-MMU holds no 2 MiB translation: it runs one size of the large-page arrays.
    assert mg.TLB_SWEEPS["fig15a"].sizes("gpummu", "full") == (4,)
    assert mg.TLB_SWEEPS["fig15a"].sizes("mosaic", "full") == (8, 4)
    with pytest.raises(tessera.ConfigError, match="power-of-two number of sets"):
        tessera.resolve_config("mosaic_gpu", mg.TLB_SWEEPS["fig14b"].override(8))


def test_compaction_sweeps_vary_the_index_at_half_occupancy_and_the_occupancy_at_full_index() -> None:
    specs = mg.compaction_specs("quick")
    assert set(specs) == {f"frag16{f}-{v}" for f in "ab" for v in mg.CAC_VARIANTS}
    a, b = specs["frag16a-cac_bc"], specs["frag16b-cac_bc"]
    assert a["machine"] == b["machine"] == "mosaic_gpu_mosaic"
    assert a["set"] == {"gpu.paging": "resident", "os.cac": {"copy": "bulk"}, "physmem.fragmentation_occupancy": 0.5}
    assert a["axes"]["physmem.fragmentation"] == list(mg.FRAG_INDEX["quick"])
    assert b["set"]["physmem.fragmentation"] == 1.0
    assert b["axes"]["physmem.fragmentation_occupancy"] == list(mg.FRAG_OCCUPANCY["quick"])
    # No CAC differs from CAC in the compaction only.
    assert "os.cac" not in specs["frag16a-none"]["set"]
    assert {k: v for k, v in a["set"].items() if k != "os.cac"} == specs["frag16a-none"]["set"]
    ws = mg.frag_mixes("quick")
    assert len(ws) == 2 and all(len(m) == 2 for m in ws) and ws[0][0] == ws[0][1] and ws[1][0] != ws[1][1]
    from tessera.sweeps.spec import load_spec

    assert load_spec(a).expand()


def test_fig16_and_table2_on_hand_made_rows() -> None:
    rows = []
    for mix, base in (("a+a", 2.0), ("b+b", 1.0)):
        for v, r in (("none", 0.5), ("cac", 0.8), ("cac_bc", 0.9), ("ideal_cac", 1.0)):
            for idx in (0.5, 1.0):
                ratio = 1.0 if idx == 0.5 else r
                rows.append({"group": "homogeneous", "n": 2, "mix": mix, "config": f"16a:{v}:{idx}:0.5",
                             "ws": base * ratio, "figure": "16a", "variant": v, "index": idx, "occupancy": 0.5})
            rows.append({"group": "homogeneous", "n": 2, "mix": mix, "config": f"16b:{v}:1.0:0.1", "ws": base * r,
                         "figure": "16b", "variant": v, "index": 1.0, "occupancy": 0.1, "bloat_pages": 10.0 * r,
                         "app_pages": 100.0, "frames_freed": 3.0, "foreign_moved": 5.0, "guarantee_breaks": 0.0,
                         "coalesced": 2.0, "stall": 50.0, "cycles": 1000.0})
    frag = pd.DataFrame(rows)
    ws = pd.DataFrame([{"group": "homogeneous", "n": 2, "mix": "a+a", "config": "mosaic", "ws": 2.0},
                       {"group": "homogeneous", "n": 2, "mix": "b+b", "config": "mosaic", "ws": 1.0}])
    a = mg.fig16(frag, ws, "16a")
    assert a.loc[1.0, ("mean", "cac")] == pytest.approx(0.8) and a.loc[0.5, ("mean", "none")] == pytest.approx(1.0)
    assert a.loc[1.0, ("count", "none")] == 2
    b = mg.fig16(frag, ws, "16b")
    assert b.loc[0.1, ("mean", "cac_bc")] == pytest.approx(0.9)
    t2 = mg.table2(frag)
    assert t2.loc[0.1, ("bloat_pct", "cac")] == pytest.approx(8.0)
    assert t2.loc[0.1, ("stall_share", "ideal_cac")] == pytest.approx(0.05)


# ------------------------------------------------------------ hand-made rows


def _ws(rows: list[tuple[str, int, str, str, float]], **cols: Any) -> pd.DataFrame:
    df = pd.DataFrame([{"group": g, "n": n, "mix": m, "config": c, "ws": w} for g, n, m, c, w in rows])
    for k, v in cols.items():
        df[k] = v
    return df


def test_fig8_9_are_per_workload_ratios_summarised_per_count() -> None:
    ws = _ws([("homogeneous", 1, "a", "gpummu", 1.0), ("homogeneous", 1, "a", "mosaic", 1.5),
              ("homogeneous", 1, "a", "ideal", 2.0),
              ("homogeneous", 2, "a+a", "gpummu", 1.0), ("homogeneous", 2, "a+a", "mosaic", 2.0),
              ("homogeneous", 2, "a+a", "ideal", 2.0),
              ("heterogeneous", 2, "a+b", "gpummu", 2.0), ("heterogeneous", 2, "a+b", "mosaic", 2.2),
              ("heterogeneous", 2, "a+b", "ideal", 4.4)])
    f8 = mg.fig8_9(ws, "homogeneous")
    assert f8.loc[("homogeneous", "1"), ("mosaic_over_gpummu", "mean")] == pytest.approx(1.5)
    assert f8.loc[("homogeneous", "all"), ("mosaic_over_gpummu", "mean")] == pytest.approx(1.75)
    assert f8.loc[("homogeneous", "all"), ("mosaic_over_ideal", "min")] == pytest.approx(0.75)
    assert f8.loc[("homogeneous", "all"), ("mosaic_over_gpummu", "workloads")] == 2
    assert ("all", "all") not in f8.index and "mosaic_dp_over_gpummu_dp" not in f8.columns.get_level_values(0)
    f9 = mg.fig8_9(ws, "heterogeneous")
    assert f9.loc[("heterogeneous", "2"), ("mosaic_over_ideal", "mean")] == pytest.approx(0.5)
    assert f9.loc[("heterogeneous", "2"), ("ideal_over_gpummu", "mean")] == pytest.approx(2.2)


def test_fig11_normalises_each_application_and_counts_the_shares() -> None:
    rows = []
    for slot, (app, g, m, i) in enumerate((("x", 1.0, 2.0, 2.0), ("y", 2.0, 1.0, 4.0))):
        for c, v in (("gpummu", g), ("mosaic", m), ("ideal", i)):
            rows.append({"group": "heterogeneous", "n": 2, "mix": "x+y", "slot": slot, "app": app, "config": c,
                         "ipc": v})
    f = mg.fig11(pd.DataFrame(rows))
    assert list(f["app"]) == ["y", "x"], "sorted by Mosaic's ratio"
    assert list(f["mosaic_norm"]) == [0.5, 2.0] and list(f["mosaic_of_ideal"]) == [0.25, 1.0]
    s = mg.fig11_summary({"resident": f})
    r = s.loc[("resident", "all")]
    assert r["apps"] == 2 and r["improved_pct"] == 50.0 and r["mean"] == pytest.approx(1.25)
    assert r["within_90_pct"] == 50.0 and r["within_70_pct"] == 50.0
    # No demand-paged runs: an empty table, not an error.
    assert mg.fig11(pd.DataFrame(rows), "_dp").empty


def test_fig13_hit_rates_and_large_entry_shares() -> None:
    ws = _ws([("homogeneous", 2, "a+a", "gpummu", 1.0), ("homogeneous", 2, "a+a", "mosaic", 1.0),
              ("heterogeneous", 2, "a+b", "gpummu", 1.0), ("heterogeneous", 2, "a+b", "mosaic", 1.0)],
             l1_lookups=[100.0, 100.0, 100.0, 100.0], l1_hits=[80.0, 99.0, 60.0, 99.0],
             l1_2m_hits=[0.0, 90.0, 0.0, 45.0], l2_lookups=[20.0, 1.0, 40.0, 1.0], l2_hits=[10.0, 1.0, 20.0, 0.0],
             l2_2m_hits=[0.0, 1.0, 0.0, 0.0], coalesced=[0.0, 3.0, 0.0, 1.0], not_contiguous=[0.0, 1.0, 0.0, 1.0])
    f = mg.fig13(ws)
    assert f.loc[("all", "2"), "gpummu_l1_hit"] == pytest.approx(0.7)
    assert f.loc[("all", "2"), "gpummu_l2_hit"] == pytest.approx(0.5)
    assert f.loc[("homogeneous", "2"), "mosaic_l1_large_share"] == pytest.approx(90 / 99)
    assert f.loc[("all", "all"), "mosaic_coalesced_share"] == pytest.approx((0.75 + 0.5) / 2)
    assert math.isnan(f.loc[("heterogeneous", "2"), "mosaic_l2_large_share"])


def test_fig14a_normalises_to_gpummu_at_128_and_to_itself() -> None:
    rows = [("homogeneous", 1, "a", "gpummu", 1.0), ("homogeneous", 1, "a", "mosaic", 2.0),
            ("homogeneous", 1, "a", "gpummu_l1_8", 0.5), ("homogeneous", 1, "a", "mosaic_l1_8", 1.8)]
    f = mg.tlb_sweep(_ws(rows), mg.TLB_SWEEPS["fig14a"], "tiny")
    assert f.loc[("mosaic", 8, "all"), "mean"] == pytest.approx(1.8)
    assert f.loc[("mosaic", 8, "all"), "mean_own"] == pytest.approx(0.9)
    assert f.loc[("gpummu", 8, "homogeneous"), "mean_own"] == pytest.approx(0.5)
    assert f.loc[("gpummu", 128, "all"), "mean"] == pytest.approx(1.0)


def _tlb_rows() -> pd.DataFrame:
    """Two workloads under GPU-MMU (weighted speedup 1) and Mosaic (2) at the
    presets' sizes and at a quarter of each array of Figs. 14b and 15."""
    rows = []
    for mix, scale in (("a", 1.0), ("b", 2.0)):
        for config, ws in (("gpummu", 1.0), ("mosaic", 2.0), ("gpummu_l2_128", 0.8), ("mosaic_l2_128", 1.6),
                           ("gpummu_l1_2m_4", 1.0), ("mosaic_l1_2m_4", 1.9 if mix == "a" else 1.7),
                           ("gpummu_l2_2m_64", 1.0), ("mosaic_l2_2m_64", 2.0)):
            rows.append(("homogeneous", 1, mix, config, ws * scale))
    l1_2m = [90.0 if c.startswith("mosaic") else 0.0 for *_, c, _ in rows]
    return _ws(rows, l1_2m_hits=l1_2m, l2_2m_hits=[0.0] * len(rows))


def test_fig14b_and_15_normalise_to_gpummu_at_the_preset_and_to_themselves() -> None:
    ws = _tlb_rows()
    b = mg.tlb_sweep(ws, mg.TLB_SWEEPS["fig14b"], "quick")
    assert list(b.index.get_level_values("entries").unique()) == [512, 128]
    assert b.loc[("gpummu", 128, "all"), "mean"] == pytest.approx(0.8)
    assert b.loc[("mosaic", 128, "all"), "mean"] == pytest.approx(1.6)
    assert b.loc[("mosaic", 128, "all"), "mean_own"] == pytest.approx(0.8)
    assert b.loc[("mosaic", 512, "homogeneous"), "workloads"] == 2
    a = mg.tlb_sweep(ws, mg.TLB_SWEEPS["fig15a"], "quick")
    assert a.loc[("mosaic", 4, "all"), "mean_own"] == pytest.approx(0.9)
    assert a.loc[("mosaic", 4, "all"), "min"] == pytest.approx(1.7)
    assert a.loc[("gpummu", 16, "all"), "mean"] == pytest.approx(1.0)
    assert a.loc[("gpummu", 4, "all"), "mean_own"] == pytest.approx(1.0)
    assert mg.tlb_sweep(ws, mg.TLB_SWEEPS["fig15b"], "quick").loc[("mosaic", 64, "all"), "mean_own"] == 1.0


def test_tlb_sensitivity_intervals_the_paired_difference_from_fig14b_and_the_large_hits() -> None:
    s = mg.tlb_sensitivity(_tlb_rows(), "quick")
    m = s.loc[("fig15a", "mosaic")]
    assert m["entries"] == 4 and m["preset"] == 16 and m["workloads"] == 2
    assert m["own"] == pytest.approx(0.9)
    assert m["own_min"] == pytest.approx(0.85) and m["own_max"] == pytest.approx(0.95)
    # 95 % t-interval of (0.95, 0.85): 0.9 ± 12.706 · 0.0707 / √2.
    assert m["own_hi"] - m["own"] == pytest.approx(12.706 * 0.1 / math.sqrt(2) / math.sqrt(2))
    # Against Fig. 14b's 0.8 on both workloads, 0.05 and 0.15 from 1 against 0.2: −0.15 and −0.05.
    assert m["vs_ref"] == pytest.approx(-0.1) and m["vs_ref_lo"] < -0.1 < m["vs_ref_hi"]
    assert s.loc[("fig14b", "mosaic"), "vs_ref"] == 0.0
    g = s.loc[("fig15b", "gpummu")]
    assert g["unchanged"] == 2 and g["own_lo"] == g["own_hi"] == 1.0 and g["l1_2m_hits"] == 0.0
    assert s.loc[("fig15a", "mosaic"), "l1_2m_hits"] == 180.0
    # Fig. 14a's machines at 8 entries were not among the rows: no row, not an error.
    assert ("fig14a", "mosaic") not in s.index


def test_placement_separates_cocoa_from_coalescing() -> None:
    rows = [("homogeneous", 1, "a", "gpummu", 1.0), ("homogeneous", 1, "a", "cocoa_only", 1.1),
            ("homogeneous", 1, "a", "mosaic", 2.2)]
    p = mg.placement(_ws(rows))
    assert p.loc[("all", "all"), ("cocoa_only_over_gpummu", "mean")] == pytest.approx(1.1)
    assert p.loc[("all", "all"), ("mosaic_over_cocoa_only", "mean")] == pytest.approx(2.0)


def test_weighted_speedups_keep_the_motivation_study_s_columns_and_add_the_extra_counters() -> None:
    alone = pd.DataFrame([{"axis.apps": ["bfs"], "axis.gpu.sms": 30, "gpu.apps.0.ipc": 2.0}])
    row = {"axis.apps": ["bfs"], "config": "mosaic", "gpu.cycles": 10.0, "gpu.walker.walks": 1.0,
           "gpu.walker.walk_cycles": 5.0, "gpu.l1_tlb.hits": 9.0, "gpu.l1_tlb.lookups": 10.0, "gpu.l2_tlb.hits": 1.0,
           "gpu.l2_tlb.lookups": 1.0, "gpu.stall.tlb": 0.0, "gpu.stall.walk": 0.0, "gpu.stall.memory": 0.0,
           "gpu.stall.far_fault": 0.0, "gpu.sm.issue_cycles": 1.0, "gpu.sm.ldst_held_cycles": 0.0,
           "gpu.dram.reads": 1.0, "gpu.l2.data_hits": 1.0, "gpu.l2.data_misses": 1.0, "gpu.apps.0.ipc": 3.0,
           "gpu.apps.0.sms": 30, "gpu.apps.0.warp_instructions": 30.0, "gpu.apps.0.touched_bytes": 4096.0,
           "gpu.apps.0.mapped_bytes": 4096.0, "os.coalescer.coalesced": 7.0}
    ws = mg.weighted_speedups(pd.DataFrame([row]), alone, "tiny")
    assert ws["ws"].iloc[0] == pytest.approx(1.5) and ws["coalesced"].iloc[0] == 7.0
    assert math.isnan(ws["bloat_pages"].iloc[0])
    plain = mm.weighted_speedups(pd.DataFrame([row]), alone, "tiny")
    assert "coalesced" not in plain and list(plain.columns) == list(ws.columns)[: len(plain.columns)]


# ------------------------------------------------------------ end to end, tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "report"
    from tessera.cli import main

    assert main(["reproduce", "mosaic-gpu", "--tiny", "-o", str(out), "--jobs", "2"]) == 0
    return out


def test_tiny_report_has_its_sections_figures_and_tables(tiny: Path) -> None:
    md = (tiny / "report.md").read_text(encoding="utf-8")
    for section in ("## Summary", "## Which comparison is comparable", "## Fig. 8", "## Fig. 9", "## Fig. 10",
                    "## Fig. 11", "## Fig. 12", "## Fig. 13", "## Fig. 14a", "## Fig. 14b", "## Fig. 15a",
                    "## Fig. 15b", "## Coalescing, bloat and placement",
                    "## Compaction under pre-fragmented memory", "## Reproducing"):
        assert section in md, section
    for stem in ("fig8", "fig9", "fig11", "fig13", "fig14a", "fig14b", "fig15a", "fig15b", "fig16"):
        assert (tiny / "figures" / f"{stem}.png").stat().st_size > 1000
    assert "10.1145/3123939.3123975" in md and "shared/papers" not in md
    assert f"+{paper.MOSAIC_OVER_GPUMMU['homogeneous']} %" in md
    for part in mg.specs("tiny"):
        assert (tiny / "sweeps" / f"{part}.toml").exists()


def test_tiny_tables_are_consistent(tiny: Path) -> None:
    ws = pd.read_csv(tiny / "data" / "weighted_speedups.csv")
    n_mixes = len(mm.mixes("tiny"))
    for c in mg.all_configs("tiny"):
        assert (ws["config"] == c).sum() == n_mixes, c
    # GPU-MMU never coalesces; the ideal TLB never walks; demand paging never speeds a workload up.
    assert (ws[ws["config"] == "gpummu"]["l1_2m_hits"] == 0).all()
    # Nor in its large-page sweeps, whose arrays it never fills: every workload runs as at the preset's sizes.
    sens = pd.read_csv(tiny / "data" / "tlb_sensitivity.csv", index_col=["figure", "config"])
    for key in ("fig15a", "fig15b"):
        g = sens.loc[(key, "gpummu")]
        assert g["l1_2m_hits"] == g["l2_2m_hits"] == 0 and g["unchanged"] == g["workloads"] == n_mixes, key
    assert set(sens.index) == {(k, m) for k in mg.TLB_SWEEPS for m in mg.TLB_MACHINES}
    for key in ("fig14b", "fig15a", "fig15b"):
        f = pd.read_csv(tiny / "data" / f"{key}.csv")
        assert set(f["entries"]) == {mg.TLB_SWEEPS[key].preset_entries, min(mg.TLB_SWEEPS[key].entries["tiny"])}
    assert (ws[ws["config"] == "ideal"]["walks"] == 0).all()
    p = ws.pivot_table(index="mix", columns="config", values="ws")
    assert (p["gpummu_dp"] <= p["gpummu"] * (1 + 1e-9)).all()
    # CoCoA holds whole frames: every kernel's pages and free slots fill them.
    c = pd.read_csv(tiny / "data" / "coalescing.csv", index_col=0)
    assert ((c["app_pages"] + c["bloat_pages"]) % 512 == 0).all() and (c["app_pages"] > 0).all()
    # The stress test: without compaction nothing fragmented coalesces and the guarantee breaks; with it, ideal
    # copies cost no stall and every variant with compaction frees frames.
    f = pd.read_csv(tiny / "data" / "frag_speedups.csv")
    full = f[f["index"] == 1.0]
    assert (full[full["variant"] == "none"]["guarantee_breaks"] > 0).all()
    assert (full[full["variant"] != "none"]["frames_freed"] > 0).all()
    assert (full[full["variant"] == "ideal_cac"]["stall"] == 0).all()
    stall = full.pivot_table(index=["figure", "mix"], columns="variant", values="stall")
    assert (stall["cac"] > stall["cac_bc"]).all()
    f11 = pd.read_csv(tiny / "data" / "fig11.csv")
    het = [m for g, _, m in mm.mixes("tiny") if g == "heterogeneous"]
    assert len(f11) == sum(len(m) for m in het)


def test_rerun_reuses_the_store(tiny: Path) -> None:
    r = tessera.reproduce("mosaic-gpu", out=tiny, scale="tiny", jobs=1)
    assert r.timing["computed"] == 0 and r.timing["already_stored"] == r.timing["runs"]
    assert not math.isnan(r.tables["fig8"].loc[("homogeneous", "all"), ("mosaic_over_gpummu", "mean")])


def test_mosaic_gpu_has_no_warmup(cli: Any) -> None:
    with pytest.raises(ValueError, match="warmup"):
        tessera.reproduce("mosaic-gpu", out="unused", scale="tiny", warmup="1M")
    r = cli("reproduce", "mosaic-gpu", "--tiny", "--warmup", "1M")
    assert r.code == 2 and "--warmup" in r.err
