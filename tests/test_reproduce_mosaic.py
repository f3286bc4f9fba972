"""`tessera reproduce mosaic-pages`: the analysis on hand-made rows, the
sweeps it asks for, and one end-to-end run at the test-only `tiny` scale."""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tessera
from tessera.report import mosaic_pages as mp
from tessera.report import paper_mosaic as paper

# ------------------------------------------------------------ the sweeps


def test_fig6_has_the_papers_30_shadows_and_the_quirky_vanillas() -> None:
    shadows = mp.fig6_shadows()
    main = [k for k in shadows if not k.startswith("vanillaq")]
    assert len(main) == 30
    assert shadows["vanilla_w1"] == {"entries": 1024, "ways": 1}
    assert shadows["mosaic64_fa"] == {"entries": 1024, "ways": "full", "organisation": {"kind": "mosaic", "arity": 64}}
    quirky = [k for k in shadows if k.startswith("vanillaq")]
    assert len(quirky) == len(mp.QUIRKS) * len(mp.QUIRK_WAYS)
    assert shadows["vanillaq4_w1"]["organisation"] == {"kind": "set_assoc", "vanilla_index_quirk": 4}
    spec = mp.fig6_spec("quick")
    assert spec["machine"] == "tlb_only" and spec["axes"]["workload"] == list(mp.WORKLOADS)
    assert len(spec["set"]) == len(shadows)


def test_memory_for_keeps_the_ratio_and_gives_both_kernels_the_pool_for_data() -> None:
    pages, pt = 100_000, 210
    for ratio in (1.015, 1.202, 1.577):
        m = mp.memory_for(pages, pt, ratio)
        assert m["pool"] % mp.BUCKET == 0
        assert pages * 4096 / m["pool"] == pytest.approx(ratio, rel=0.002)
        assert m["linux"] - m["pool"] == pt * 4096
        assert m["iceberg"] - m["pool"] >= 2 * pt * 4096


def test_pressure_and_beyond_list_their_runs_one_by_one() -> None:
    probes = pd.DataFrame({"workload": list(mp.PRESSURE_WORKLOADS), "os.pages_4k": [30_000, 40_000, 50_000],
                           **{f"pagetable.nodes_l{i}": [60, 1, 1] for i in (1, 2, 3, 4)}})
    spec = mp.pressure_spec("quick", probes)
    n = len(mp.PRESSURE_WORKLOADS) * len(mp.ratios_for("quick")) * mp.seeds_for("quick") * len(mp.ARMS)
    assert all(len(v) == n for k, v in spec["axes"].items() if k != "zip")
    assert spec["axes"]["zip"] == [[k for k in spec["axes"] if k != "zip"]]
    bp = pd.DataFrame({"workload": list(mp.WORKLOADS), "os.pages_4k": [9000, 12000, 400_000, 8000]})
    beyond = mp.beyond_spec("quick", "m.toml", bp)
    # Per workload: Mosaic-8 once (fragmentation cannot change it), THP and CoLT at every coverage.
    assert len(beyond["axes"]["workload"]) == len(mp.WORKLOADS) * (1 + 2 * len(mp.COVERAGE["quick"]))
    assert beyond["machine"] == "m.toml"
    # Paper ratios: Table 3's footprints over the 4 GiB pool.
    assert [round(fp / 4096, 3) for fp in (4158, 4413, 4669, 4924)] == list(mp.ratios_for("full")[:4])


# ------------------------------------------------------------ hand-made rows


def _fig6_row(workload: str, vanilla: float, mosaic: float) -> dict[str, Any]:
    row: dict[str, Any] = {"workload": workload, "os.faults": 10}
    for name, spec in mp.fig6_shadows().items():
        kind = spec.get("organisation", {}).get("kind")
        row[f"mmu.shadow.{name}.misses"] = mosaic if kind == "mosaic" else vanilla
        row[f"mmu.shadow.{name}.lookups"] = 1000
    return row


def test_fig6_reduction_is_against_vanilla_at_the_same_ways() -> None:
    df = pd.DataFrame([_fig6_row("graph500-bfs", 200, 50), _fig6_row("gups", 100, 80)])
    m = mp.fig6_misses(df)
    assert list(m.index.get_level_values(1)[:5]) == list(paper.ASSOCIATIVITIES)
    red = mp.fig6_reduction(m)
    assert red.loc[("graph500-bfs", 1), "mosaic4"] == pytest.approx(75.0)
    assert red.loc[("gups", 1024), "mosaic64"] == pytest.approx(20.0)
    claims = mp.fig6_claims(m)
    assert list(claims["paper"]) == list(paper.FIG6_CLAIMS)
    assert bool(claims.loc[0, "holds"]) and bool(claims.loc[2, "holds"])


def test_table4_difference_is_percent_less_swap_with_mosaic() -> None:
    rows = []
    for arm, io in (("linux_like", 1000), ("mosaic", 800)):
        for seed in (0, 1):
            rows.append({"workload": "btree", "ratio": 1.2, "arm": arm, "seed": seed, "footprint_mib": 10.0,
                         "swap.pages_in": io / 2 + seed, "swap.pages_out": io / 2 - seed})
    t4 = mp.table4(pd.DataFrame(rows))
    assert t4.loc[("btree", 1.2), "diff_linux_like"] == pytest.approx(20.0)


# ------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "report"
    from tessera.cli import main

    assert main(["reproduce", "mosaic-pages", "--tiny", "-o", str(out), "--jobs", "2"]) == 0
    return out


def _csv(tiny: Path, key: str, index: int) -> pd.DataFrame:
    return pd.read_csv(tiny / "data" / f"{key}.csv", index_col=list(range(index)))


def test_tiny_report_has_its_sections_figures_and_tables(tiny: Path) -> None:
    md = (tiny / "report.md").read_text(encoding="utf-8")
    html = (tiny / "report.html").read_text(encoding="utf-8")
    for section in ("## Fig. 6", "## Table 3", "## Table 4", "## Beyond the paper", "## Scale", "## Reproducing"):
        assert section in md
    for stem in ("fig6", "table4", "beyond"):
        assert (tiny / "figures" / f"{stem}.png").stat().st_size > 1000
        assert f"figures/{stem}.png" in md and f"figures/{stem}.svg" in html
    assert "10.1145/3582016.3582021" in md and "tessera reproduce mosaic-pages --tiny" in md
    assert "shared/papers" not in md and "Run time:" in md
    # The report says which timing model made its cycles (mosaic_gem5 keeps the interval model).
    assert "Timing model of these cycles" in md and "the interval model (`timing.kind = \"interval\"`) for" in md
    for part in ("fig6", "probe", "pressure", "beyond"):
        assert (tiny / "sweeps" / f"{part}.toml").exists()


def test_tiny_tables_have_the_right_shape_and_sane_values(tiny: Path) -> None:
    m = _csv(tiny, "fig6_misses", 2)
    assert len(m) == len(mp.WORKLOADS) * len(paper.ASSOCIATIVITIES)
    cols = ["vanilla"] + [f"mosaic{a}" for a in paper.ARITIES]
    assert (m[cols] >= m[["first_touches"]].to_numpy()).all().all()  # a first touch always misses
    assert (m[cols] <= m[["lookups"]].to_numpy()).all().all()
    fa = m.xs(1024, level="ways")
    # Fully associative LRU: a page a vanilla TLB still holds has its mosaic entry, sub-page valid.
    assert (fa[[f"mosaic{a}" for a in paper.ARITIES]] <= fa[["vanilla"]].to_numpy()).all().all()
    t3 = _csv(tiny, "table3", 2)
    assert len(t3) == len(mp.PRESSURE_WORKLOADS) * len(mp.ratios_for("tiny"))
    fc = t3["first_conflict"].dropna()
    assert len(fc) > 0 and ((fc > 50) & (fc <= 100)).all()
    assert (t3["seeds"] == mp.seeds_for("tiny")).all()
    t4 = _csv(tiny, "table4", 2)
    assert len(t4) == len(t3)
    top = t4.xs(max(mp.ratios_for("tiny")), level="ratio")
    assert all((top[a] > 0).all() for a in mp.ARMS)
    # Horizon LRU over buddy is exact LRU victim for victim.
    assert (t4["horizon"] == t4["lru"]).all()
    hc = pd.read_csv(tiny / "data" / "horizon_check.csv", index_col=0)
    assert int(hc["equal"].iloc[0]) == int(hc["compared"].iloc[0]) > 0
    bt = _csv(tiny, "beyond", 3)
    assert len(bt) == len(mp.WORKLOADS) * (2 + 2 * len(mp.COVERAGE["tiny"]))
    assert (bt["walks_pka"] <= bt["misses_pka"] + 1e-9).all()
    thp = bt.xs("thp", level="design")
    assert (thp[thp["whole_pct"] == 0]["huge_share"] == 0).all()
    assert (thp[thp["whole_pct"] > 100]["huge_share"] > 0).all()


def test_tiny_report_text_holds_to_the_paper_and_its_intervals(tiny: Path) -> None:
    md = (tiny / "report.md").read_text(encoding="utf-8")
    # Item 2: the 1 s scanner ran for Mosaic only.
    assert "for both" not in md and "only its Mosaic ran the 1 s accessed-bit scanner" in md
    # Item 1: three baselines and which one the paper's numbers are.
    for arm in mp.BASELINES:
        assert mp.ARM_LABEL[arm] in md
    assert "the paper's Table 4 is the Linux-like comparison" in md
    # Item 3: intervals everywhere seeds are.
    assert "95 % t-interval" in md and "(noise)" in md or "within noise" in md
    # Item 7: provenance.
    assert "allocator, not Iceberg" in md and "simulated with the code of commit" in md
    timing = json.loads((tiny / "data" / "timing.json").read_text(encoding="utf-8"))
    assert "commit" in timing


def test_a_moved_report_directory_still_runs_and_loads(tiny: Path, tmp_path: Path) -> None:
    moved = tmp_path / "elsewhere" / "report"
    shutil.copytree(tiny, moved)
    for f in (moved / "sweeps").glob("*.toml"):
        # The header comment quotes the command as typed; the sweep itself names no absolute path.
        text = "\n".join(ln for ln in f.read_text(encoding="utf-8").splitlines() if not ln.startswith("#"))
        assert str(tiny) not in text and not re.search(r'^machine = "/', text, re.M), f.name
    assert 'machine = "beyond-machine.toml"' in (moved / "sweeps" / "beyond.toml").read_text(encoding="utf-8")
    df = tessera.sweep(str(moved / "sweeps" / "beyond.toml"), store=str(moved / "store.sqlite"))
    assert df.attrs["sweep"]["computed"] == 0 and len(df) > 0
    r = tessera.reproduce("mosaic-pages", out=moved, scale="tiny", jobs=1)
    assert r.timing["computed"] == 0
    assert "Results are kept in `store.sqlite`" in r.report_md.read_text(encoding="utf-8")


def test_rerun_reuses_the_store(tiny: Path) -> None:
    r = tessera.reproduce("mosaic-pages", out=tiny, scale="tiny", jobs=1)
    assert r.timing["computed"] == 0 and r.timing["already_stored"] == r.timing["runs"]


def test_mosaic_pages_has_no_warmup() -> None:
    with pytest.raises(ValueError, match="warm-up"):
        tessera.reproduce("mosaic-pages", out="unused", scale="tiny", warmup="1M")


def test_cli_knows_the_study(cli: Any) -> None:
    r = cli("reproduce", "mosaic-pages", "--quick", "--tiny")
    assert r.code == 2 and "--quick and --tiny" in r.err
    with pytest.raises(SystemExit) as e:  # argparse rejects an unknown study, listing the known ones
        cli("reproduce", "mosaic-paper")
    assert e.value.code == 2
    assert not math.isnan(paper.table4_ratio(4158))
