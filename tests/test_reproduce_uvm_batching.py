"""`tessera reproduce uvm-batching`: the sweeps it asks for, the tables on
hand-made rows, and one end-to-end run at the test-only `tiny` scale."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tessera
from tessera.report import paper_uvm_batching as paper
from tessera.report import uvm_batching as ub

# ------------------------------------------------------------ sweeps


def test_every_machine_differs_from_the_baseline_in_its_own_overrides_only() -> None:
    assert ub.CONFIGS["base"] == {}
    assert ub.CONFIGS["to_ue"] == {**ub.CONFIGS["to"], **ub.CONFIGS["ue"]}
    singles = [set(ub.CONFIGS[c]) for c in ("to", "ue", "comp", "etc")]
    for i, a in enumerate(singles):
        assert len(a) == 1
        assert all(not (a & b) for b in singles[i + 1:])
    assert set(ub.WORKLOADS) == set(paper.WORKLOADS) and len(ub.WORKLOADS) == 11


def test_the_sweeps_cover_every_figure_and_expand() -> None:
    from tessera.sweeps.spec import load_spec

    specs = ub.specs("quick")
    for m, seeds in ub.MAIN["quick"]:
        for c, over in ub.CONFIGS.items():
            s = specs[f"main-{c}-m{round(m * 100)}"]
            assert s["set"] == {**ub.STUDY_SET, **over, "gpu.paging.memory": m} and s["axes"]["seed"] == list(seeds)
            assert len(s["axes"]["apps"]) == 11
    assert specs["ratio-ue"]["axes"]["gpu.paging.memory"] == list(ub.RATIOS["quick"])
    assert 0.1 in ub.RATIOS["quick"] and 1.0 in ub.RATIOS["quick"]
    assert specs["handling-to_ue"]["axes"]["gpu.paging.handling_us"] == [20, 50]
    assert {k: v["params"]["bfs"]["scale"] for k, v in specs.items()} == {k: "15" for k in specs}
    for name in ("main-etc-m50", "ratio-base", "handling-to_ue"):
        runs = load_spec(specs[name]).expand()
        assert runs


# ------------------------------------------------------------ hand-made rows


def _row(kernel: str, memory: float, seed: int, cycles: float, handling: float = 20.0, **c: float) -> dict[str, Any]:
    row: dict[str, Any] = {"axis.apps": [kernel], "config.gpu.paging.memory": memory,
                           "config.gpu.paging.handling_us": handling, "seed": seed, "wall_s": 0.1,
                           "gpu.cycles": cycles, "gpu.paging.batches": c.get("batches", 10.0),
                           "gpu.paging.faults": c.get("faults", 20.0), "gpu.paging.batch_cycles": c.get("bc", 1000.0),
                           "gpu.paging.premature_evictions": c.get("premature", 5.0),
                           "gpu.paging.evictions": 8.0, "gpu.paging.batch_units": 20.0,
                           "gpu.paging.lifetime_cycles": 800.0, "gpu.paging.batch_size.le_2": c.get("batches", 10.0)}
    return row


def test_speedups_claims_and_batches_on_hand_made_rows() -> None:
    # Two workloads, two seeds: TO halves BFS's cycles and leaves KCORE's, so
    # each seed's geometric mean is sqrt(2).
    parts: dict[str, pd.DataFrame] = {}
    for c in ub.CONFIGS:
        rows = []
        for s in (0, 1):
            for k in ("bfs", "kcore"):
                cyc = 1000.0 * (s + 1)
                if c == "to" and k == "bfs":
                    cyc /= 2
                rows.append(_row(k, 0.5, s, cyc, batches=5.0 if c == "to" else 10.0,
                                 premature=4.0 if c == "to" else 5.0))
        parts[f"main-{c}-m50"] = pd.DataFrame(rows)
    runs = ub.runs_table(parts)
    f = ub._speedups(runs, [0.5], {0.5: (0, 1)})
    assert f.loc[(0.5, "BFS-TTC"), "to"] == pytest.approx(2.0)
    assert f.loc[(0.5, "KCORE"), "to"] == pytest.approx(1.0)
    assert f.loc[(0.5, "geomean"), "to"] == pytest.approx(math.sqrt(2.0))
    cl = ub._claims(runs, [0.5], {0.5: (0, 1)})
    assert cl.loc[(0.5, "to_over_base"), "mean"] == pytest.approx(math.sqrt(2.0))
    assert cl.loc[(0.5, "to_over_base"), "lo"] == cl.loc[(0.5, "to_over_base"), "hi"]
    assert cl.loc[(0.5, "to_ue_over_to"), "mean"] == pytest.approx(1 / math.sqrt(2.0))
    b = ub._batches(runs, [0.5])
    bs = ub._batch_summary(b, [0.5])
    assert bs.loc[0.5, "to_batches"] == pytest.approx(0.5)
    assert bs.loc[0.5, "to_faults_per_batch"] == pytest.approx(2.0)
    assert bs.loc[0.5, "to_premature_fewer"] == 2 and bs.loc[0.5, "to_premature_more"] == 0


def test_ratio_and_handling_tables_on_hand_made_rows() -> None:
    parts = {
        "ratio-base": pd.DataFrame([_row("bfs", 1.0, 0, 100.0), _row("bfs", 0.5, 0, 400.0)]),
        "ratio-ue": pd.DataFrame([_row("bfs", 1.0, 0, 100.0), _row("bfs", 0.5, 0, 200.0)]),
        "handling-base": pd.DataFrame([_row("bfs", 0.5, 0, 400.0), _row("bfs", 0.5, 0, 900.0, handling=50.0)]),
        "handling-to_ue": pd.DataFrame([_row("bfs", 0.5, 0, 200.0), _row("bfs", 0.5, 0, 300.0, handling=50.0)]),
    }
    runs = ub.runs_table(parts)
    f17 = ub._ratio_sweep(runs, (0.5, 1.0))
    assert f17.loc[("geomean", 0.5), "perf"] == pytest.approx(0.25)
    assert f17.loc[("geomean", 0.5), "ue_speedup"] == pytest.approx(2.0)
    assert f17.loc[("geomean", 1.0), "ue_speedup"] == pytest.approx(1.0)
    f18 = ub._handling(runs, (20, 50))
    assert f18.loc[("geomean", 20.0), "speedup"] == pytest.approx(2.0)
    assert f18.loc[("geomean", 50.0), "speedup"] == pytest.approx(3.0)


# ------------------------------------------------------------ end to end, tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "report"
    from tessera.cli import main

    assert main(["reproduce", "uvm-batching", "--tiny", "-o", str(out), "--jobs", "2"]) == 0
    return out


def test_tiny_report_has_its_sections_figures_and_tables(tiny: Path) -> None:
    md = (tiny / "report.md").read_text(encoding="utf-8")
    for section in ("## Summary", "## Scale and workloads", "## Machines", "## Fig. 11", "## Figs. 12–14",
                    "## Fig. 15", "## Fig. 16", "## Fig. 17", "## Fig. 18", "## Differences", "## Reproducing"):
        assert section in md, section
    for stem in ("fig11", "fig16", "fig17", "fig18"):
        assert (tiny / "figures" / f"{stem}.png").stat().st_size > 1000
    assert "10.1145/3373376.3378529" in md and "shared/papers" not in md
    assert f"{paper.TO_UE_OVER_BASE:.2f}×" in md and "simulated with the code of commit" in md
    for part in ub.specs("tiny"):
        assert (tiny / "sweeps" / f"{part}.toml").exists()


def test_tiny_tables_are_consistent(tiny: Path) -> None:
    runs = pd.read_csv(tiny / "data" / "runs.csv")
    labels = ub.labels_for("tiny")
    assert set(runs["workload"]) == set(labels)
    # Shared runs appear once: the baseline at 50 %, seed 0, 20 µs is in three sweeps.
    key = ["workload", "config", "memory", "handling_us", "seed"]
    assert not runs.duplicated(key).any()
    # The same instructions under every machine (TO and ETC change when, not what).
    fit = runs[runs["seed"] == 0].groupby("workload")["warp_instructions"].nunique()
    assert (fit == 1).all()
    # With the data fitting nothing is evicted and UE changes nothing.
    full = runs[runs["memory"] == 1.0]
    assert (full["evictions"] == 0).all()
    p = full.pivot_table(index="workload", columns="config", values="cycles")
    assert (p["base"] == p["ue"]).all()
    f11 = pd.read_csv(tiny / "data" / "fig11.csv")
    assert (f11["base"] == 1.0).all()


def test_rerun_reuses_the_store(tiny: Path) -> None:
    r = tessera.reproduce("uvm-batching", out=tiny, scale="tiny", jobs=1)
    assert r.timing["computed"] == 0 and r.timing["already_stored"] == r.timing["runs"]
    assert not math.isnan(r.tables["claims"].loc[(0.5, "to_ue_over_base"), "mean"])


def test_uvm_batching_has_no_warmup(cli: Any) -> None:
    with pytest.raises(ValueError, match="warmup"):
        tessera.reproduce("uvm-batching", out="unused", scale="tiny", warmup="1M")
    r = cli("reproduce", "uvm-batching", "--tiny", "--warmup", "1M")
    assert r.code == 2 and "--warmup" in r.err
