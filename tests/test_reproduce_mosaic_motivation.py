"""`tessera reproduce mosaic-motivation`: the workloads and sweeps it asks
for, the weighted speedups and tables on hand-made rows, and one end-to-end
run at the test-only `tiny` scale."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import tessera
from tessera.report import mosaic_motivation as mm
from tessera.report import paper_mosaic_gpu as paper

# ------------------------------------------------------------ workloads and sweeps


def test_mixes_are_copies_and_distinct_random_sets() -> None:
    ms = mm.mixes("quick")
    hom = [m for g, _, m in ms if g == "homogeneous"]
    assert len(hom) == len(mm.APPS) * 3 and all(len(set(m)) == 1 for m in hom)
    het = [(n, m) for g, n, m in ms if g == "heterogeneous"]
    assert all(len(set(m)) == n == len(m) for n, m in het)
    assert len({tuple(sorted(m)) for _, m in het}) == len(het), "no set twice"
    assert mm.mixes("quick") == ms, "drawn with a fixed seed"


def test_shares_are_the_machines_equal_split() -> None:
    assert mm.shares(1) == [30] and mm.shares(4) == [8, 8, 7, 7] and sum(mm.shares(5)) == 30
    # The machine agrees (gpu.apps.<i>.sms of a 4-application run).
    r = tessera.simulate_gpu("mosaic_gpu", [{"kernel": "vector_add", "params": {"n": "4096"}}] * 4,
                             overrides=["gpu.paging=\"resident\""])
    assert [int(r.counters[f"gpu.apps.{i}.sms"]) for i in range(4)] == mm.shares(4)


def test_every_machine_runs_every_workload_it_should_and_alone_covers_every_share() -> None:
    specs = mm.specs("quick")
    assert set(specs) == {f"mix-{c}" for c in mm.CONFIGS} | {"alone"} | {f"seeds-{c}" for c in mm.SEED_CONFIGS}
    n_all = len(mm.mixes("quick"))
    n_hom = sum(g == "homogeneous" for g, _, _ in mm.mixes("quick"))
    for c in mm.CONFIGS:
        want = n_hom if c.endswith("_overlap") else n_all
        assert len(specs[f"mix-{c}"]["axes"]["apps"]) == want, c
        assert specs[f"mix-{c}"]["set"] == mm.CONFIGS[c]
    shares = {s for _, n, _ in mm.mixes("quick") for s in mm.shares(n)}
    assert set(specs["alone"]["axes"]["gpu.sms"]) == shares
    # Every sweep expands: every machine resolves and every kernel parameter exists.
    from tessera.sweeps.spec import load_spec

    for name in ("mix-pwc", "alone", "mix-2m_dp_overlap"):
        assert load_spec(specs[name]).expand()


# ------------------------------------------------------------ hand-made rows


def _row(apps: tuple[str, ...], config: str, ipcs: list[float], **extra: float) -> dict[str, Any]:
    sms = mm.shares(len(apps))
    row: dict[str, Any] = {"axis.apps": list(apps), "config": config, "gpu.cycles": 1000.0, "gpu.walker.walks": 10.0,
                           "gpu.walker.walk_cycles": 1000.0, "gpu.l1_tlb.hits": 90.0, "gpu.l1_tlb.lookups": 100.0,
                           "gpu.l2_tlb.hits": 5.0, "gpu.l2_tlb.lookups": 10.0, "gpu.stall.tlb": 0.0,
                           "gpu.stall.walk": 0.0, "gpu.stall.memory": 0.0, "gpu.stall.far_fault": 0.0,
                           "gpu.sm.issue_cycles": 100.0, "gpu.sm.ldst_held_cycles": 0.0,
                           "gpu.dram.reads": 10.0, "gpu.l2.data_hits": 5.0, "gpu.l2.data_misses": 5.0}
    for i, (a, ipc) in enumerate(zip(apps, ipcs)):
        row.update({f"gpu.apps.{i}.ipc": ipc, f"gpu.apps.{i}.sms": sms[i], f"gpu.apps.{i}.warp_instructions": 100.0,
                    f"gpu.apps.{i}.touched_bytes": 4096.0, f"gpu.apps.{i}.mapped_bytes": extra.get("mapped", 4096.0)})
    return row


def test_weighted_speedup_divides_each_application_by_its_alone_ipc_on_its_share() -> None:
    alone = pd.DataFrame([{"axis.apps": ["vector_add"], "axis.gpu.sms": 30, "gpu.apps.0.ipc": 10.0},
                          {"axis.apps": ["vector_add"], "axis.gpu.sms": 15, "gpu.apps.0.ipc": 6.0},
                          {"axis.apps": ["bfs"], "axis.gpu.sms": 30, "gpu.apps.0.ipc": 4.0},
                          {"axis.apps": ["bfs"], "axis.gpu.sms": 15, "gpu.apps.0.ipc": 2.0},
                          {"axis.apps": ["histogram"], "axis.gpu.sms": 30, "gpu.apps.0.ipc": 1.0},
                          {"axis.apps": ["histogram"], "axis.gpu.sms": 15, "gpu.apps.0.ipc": 1.0}])
    # The tiny scale's first heterogeneous pair, whatever it is.
    het = next(m for g, _, m in mm.mixes("tiny") if g == "heterogeneous")
    runs = pd.DataFrame([_row(("bfs",), "4k", [2.0]), _row(("bfs",), "ideal", [4.0]),
                         _row(het, "4k", [3.0, 1.0]), _row(het, "ideal", [6.0, 2.0])])
    ws = mm.weighted_speedups(runs, alone, "tiny")
    ipc15 = {"vector_add": 6.0, "bfs": 2.0, "histogram": 1.0}
    want = 3.0 / ipc15[het[0]] + 1.0 / ipc15[het[1]]
    got = ws[(ws["mix"] == "+".join(het)) & (ws["config"] == "4k")]["ws"].iloc[0]
    assert got == pytest.approx(want)
    f3 = mm.fig3(ws)
    assert f3.loc[("homogeneous", "1"), ("4k_over_ideal", "mean")] == pytest.approx(0.5)
    assert f3.loc[("heterogeneous", "2"), ("4k_over_ideal", "mean")] == pytest.approx(0.5)
    assert f3.loc[("all", "all"), ("4k_over_ideal", "workloads")] == 2


def test_bloat_is_mapped_with_2m_over_mapped_with_4k() -> None:
    ws = pd.DataFrame([{"group": "homogeneous", "n": 1, "mix": "bfs", "config": "4k", "mapped": 1 << 20, "touched": 1 << 20},
                       {"group": "homogeneous", "n": 1, "mix": "bfs", "config": "2m", "mapped": 2 << 20, "touched": 1 << 20}])
    b = mm.bloat(ws)
    assert b.loc["bfs", "bloat_pct"] == pytest.approx(100.0)


# ------------------------------------------------------------ sweeps of GPU applications


def test_a_sweep_runs_gpu_applications_as_an_axis_with_per_kernel_params(tmp_path: Path) -> None:
    spec = {"name": "gpu", "machine": "mosaic_gpu", "set": {"gpu.paging": "resident"},
            "params": {"vector_add": {"n": "8192"}},
            "axes": {"apps": [["vector_add"], ["vector_add", {"kernel": "vector_add", "params": {"n": "4096"}}]]}}
    df = tessera.sweep(spec, store=str(tmp_path / "s.sqlite"))
    assert list(df["workload"]) == ["vector_add", "vector_add+vector_add"]
    assert df.iloc[1]["gpu.apps.1.warp_instructions"] < df.iloc[1]["gpu.apps.0.warp_instructions"]
    # The same run as simulate_gpu gives.
    r = tessera.simulate_gpu("mosaic_gpu", [{"kernel": "vector_add", "params": {"n": "8192"}}],
                             overrides=["gpu.paging=\"resident\""])
    assert df.iloc[0]["gpu.cycles"] == r.counters["gpu.cycles"]
    again = tessera.sweep(spec, store=str(tmp_path / "s.sqlite"))
    assert again.attrs["sweep"]["computed"] == 0


@pytest.mark.parametrize("spec,match", [
    ({"machine": "mosaic_gpu", "axes": {"apps": [["bfz"]]}}, "unknown GPU kernel"),
    ({"machine": "mosaic_gpu", "axes": {"apps": [[{"kernel": "bfs", "params": {"scal": 3}}]]}}, "no parameter `scal`"),
    ({"machine": "sandy_bridge", "source": {"apps": ["bfs"]}}, "run on a GPU machine"),
    ({"machine": "mosaic_gpu", "source": {"workload": "gups"}}, "a GPU machine runs `apps`"),
    ({"machine": "mosaic_gpu", "source": {"apps": "bfs"}}, "non-empty list"),
    ({"machine": "mosaic_gpu", "source": {"apps": ["bfs"], "workload": "gups"}}, "exactly one source"),
])
def test_bad_gpu_sweeps_are_clear_errors_before_anything_runs(spec: dict[str, Any], match: str, tmp_path: Path) -> None:
    with pytest.raises(tessera.SweepError, match=match):
        tessera.sweep({"name": "bad", **spec}, store=str(tmp_path / "s.sqlite"))
    assert not (tmp_path / "s.sqlite").exists()


# ------------------------------------------------------------ end to end, tiny


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "report"
    from tessera.cli import main

    assert main(["reproduce", "mosaic-motivation", "--tiny", "-o", str(out), "--jobs", "2"]) == 0
    return out


def test_tiny_report_has_its_sections_figures_and_tables(tiny: Path) -> None:
    md = (tiny / "report.md").read_text(encoding="utf-8")
    for section in ("## Summary", "## Fig. 3", "## Fig. 4", "## Memory bloat", "## The shared L2 TLB",
                    "## Scale and workloads", "## Machines", "## Reproducing"):
        assert section in md
    for stem in ("fig3", "fig4"):
        assert (tiny / "figures" / f"{stem}.png").stat().st_size > 1000
    assert "10.1145/3123939.3123975" in md and "shared/papers" not in md
    assert f"−{paper.FIG3_4K_LOSS} %" in md and "simulated with the code of commit" in md
    # GPU runs: the cycles are the GPU model's; no CPU timing model applies.
    assert "the GPU timing model for" in md and "`timing.kind = \"interval\"`" not in md
    for part in ["alone"] + [f"mix-{c}" for c in mm.CONFIGS]:
        assert (tiny / "sweeps" / f"{part}.toml").exists()


def test_tiny_tables_are_consistent(tiny: Path) -> None:
    ws = pd.read_csv(tiny / "data" / "weighted_speedups.csv")
    n_mixes = len(mm.mixes("tiny"))
    n_hom = sum(g == "homogeneous" for g, _, _ in mm.mixes("tiny"))
    for c in mm.CONFIGS:
        assert (ws["config"] == c).sum() == (n_hom if c.endswith("_overlap") else n_mixes), c
    # A single application alone on 30 SMs under the alone machine is its own IPC_alone.
    one = ws[(ws["n"] == 1) & (ws["config"] == mm.ALONE_CONFIG)]
    assert (one["ws"] - 1.0).abs().max() < 1e-12
    # The ideal TLB never walks; 2 MiB pages map at least what 4 KiB pages do.
    assert (ws[ws["config"] == "ideal"]["walks"] == 0).all()
    b = pd.read_csv(tiny / "data" / "bloat.csv", index_col=0)
    assert (b["mapped_2m_mib"] >= b["mapped_4k_mib"]).all() and (b["bloat_pct"] >= 0).all()
    # Demand paging never makes a workload faster than resident data.
    p = ws.pivot_table(index="mix", columns="config", values="ws")
    assert (p["4k_dp"] <= p["4k"] * (1 + 1e-9)).all()


def test_rerun_reuses_the_store(tiny: Path) -> None:
    r = tessera.reproduce("mosaic-motivation", out=tiny, scale="tiny", jobs=1)
    assert r.timing["computed"] == 0 and r.timing["already_stored"] == r.timing["runs"]
    assert not math.isnan(r.tables["fig3"].loc[("all", "all"), ("4k_over_ideal", "mean")])


def test_mosaic_motivation_has_no_warmup(cli: Any) -> None:
    with pytest.raises(ValueError, match="warmup"):
        tessera.reproduce("mosaic-motivation", out="unused", scale="tiny", warmup="1M")
    r = cli("reproduce", "mosaic-motivation", "--tiny", "--warmup", "1M")
    assert r.code == 2 and "--warmup" in r.err


def test_the_commit_a_report_states_is_tessera_s_never_another_repository_s(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import subprocess

    from tessera.report.mmu_analysis import _commit

    if shutil.which("git") is None:
        pytest.skip("no git")
    other = tmp_path / "other"
    other.mkdir()
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}
    git = ["git", "-C", str(other)]
    subprocess.run(git + ["init", "-q"], check=True)
    subprocess.run(git + ["commit", "-q", "--allow-empty", "-m", "x"], check=True, env={**__import__("os").environ, **env})
    theirs = subprocess.run(git + ["rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    monkeypatch.chdir(other)
    assert _commit() != theirs
