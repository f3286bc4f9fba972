"""Run the GTSM reproduction and write its report.

:func:`reproduce` runs the sweeps of :mod:`tessera.report.gtsm_study` in
order (main designs; retired fractions; GUPS's table size; decode cycles;
PDE-cache size; L2 TLB coalescing; beyond the paper: clustered retired
pages, and GTSM against THP with compaction and Mosaic Pages) through
:func:`tessera.sweep` into one results store, then writes ``report.md``,
``report.html``, ``figures/``, ``data/*.csv`` and ``sweeps/*.toml`` into the
output directory.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from tessera.report import gtsm_study as gs

__all__ = ["reproduce", "Reproduction", "tables", "PARTS"]

#: The sweeps, in the order they run.
PARTS = ("main", "retired", "size", "decode", "pde", "coalescing", "beyond", "versus")


@dataclasses.dataclass
class Reproduction:
    """What :func:`reproduce` made: the report's files, the runs of each
    sweep, the tables, and how long it took (seconds)."""

    out: Path
    report_md: Path
    report_html: Path
    figures: list[Path]
    runs: dict[str, pd.DataFrame]
    tables: dict[str, pd.DataFrame]
    timing: dict[str, float]


def tables(runs: Mapping[str, pd.DataFrame], scale: str) -> dict[str, pd.DataFrame]:
    """Every table of the report from the sweeps' runs (each labelled by
    :func:`gtsm_study.label_runs`)."""
    main = runs["main"]
    ipc = gs.fig13_ipc(main)
    retired = pd.concat([main, runs["retired"]], ignore_index=True).copy()
    beyond = pd.concat([runs["retired"], runs["beyond"]], ignore_index=True).copy()
    return {
        "workloads": gs.workload_table(main, scale),
        "fig11_pte_refs": gs.fig11_pte_refs(main),
        "fig12_penalty": gs.fig12_penalty(main),
        "fig13_ipc": ipc,
        "fig13_summary": gs.fig13_summary(ipc),
        "fig13_claims": gs.fig13_claims(ipc),
        "ideal_gap": gs.ideal_gap(main),
        "fig15_size": gs.fig15_size(runs["size"]),
        "fig16_decode": gs.fig16_decode(runs["decode"], main),
        "fig17_pde": gs.fig17_pde(runs["pde"], main),
        "fig18_coalescing": gs.fig18_coalescing(runs["coalescing"], main),
        "retired": gs.retired_table(retired),
        "beyond": gs.beyond_table(beyond),
        "gt_entry": gs.gt_entry_table(runs["coalescing"], main),
        **_versus(runs["versus"]),
    }


def _versus(runs: pd.DataFrame) -> dict[str, pd.DataFrame]:
    vt = gs.versus_table(runs)
    return {"versus": vt, "versus_summary": gs.versus_summary(vt), "versus_pairs": gs.versus_pairs(vt)}


def _listed_subset(spec: Mapping[str, Any], picks: list[int], name: str) -> dict[str, Any]:
    """The runs ``picks`` (positions) of a listed sweep, as a sweep named ``name``."""
    axes = {k: v for k, v in spec["axes"].items() if k != "zip"}
    sub: dict[str, Any] = {k: [v[i] for i in picks] for k, v in axes.items()}
    if "zip" in spec["axes"]:
        sub["zip"] = spec["axes"]["zip"]
    return {**spec, "name": name, "axes": sub}


def _stored_before(specs: list[dict[str, Any]], store: str) -> list[tuple[int, int, str]]:
    """(spec index, run position, run id) of every run of ``specs`` already in ``store``."""
    from tessera.store import open_store
    from tessera.sweeps.spec import _expand, load_spec

    ids = [[r.run_id for r in _expand(load_spec(dict(sp)))] for sp in specs]
    if not Path(store).exists():
        return []
    with open_store(store) as st:
        have = st.stored_ids([i for one in ids for i in one])
    return [(k, j, rid) for k, one in enumerate(ids) for j, rid in enumerate(one) if rid in have]


def _result_of(path: str, run_id: str) -> dict[str, Any]:
    import json
    import sqlite3

    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        row = con.execute("SELECT result FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    finally:
        con.close()
    r = json.loads(row[0])
    return {"stats": r["stats"], "phases": r.get("phases")}


def recheck(specs: list[dict[str, Any]], reused: list[tuple[int, int, str]], store: str, n: int, *,
            executor: Any = None, jobs: Optional[int] = None, seed: int = 23) -> dict[str, float]:
    """Re-simulate ``n`` of the ``reused`` runs (drawn with ``seed``) with the
    code at hand into a scratch store (``force``), and compare every counter,
    derived stat and phase with the stored result: a stored run is reusable
    only if the current build gives it exactly. Returns the counts."""
    import random
    import tempfile

    from tessera.report.mmu_analysis import run_sweep

    picks = sorted(random.Random(seed).sample(reused, min(n, len(reused))))
    t0 = time.perf_counter()
    same = values = 0
    with tempfile.TemporaryDirectory() as tmp:
        scratch = str(Path(tmp) / "recheck.sqlite")
        for k in sorted({p[0] for p in picks}):
            mine = [p for p in picks if p[0] == k]
            sub = _listed_subset(specs[k], [j for _, j, _ in mine], f"recheck-{specs[k]['name']}")
            run_sweep(sub, store=scratch, executor=executor, jobs=jobs, force=True)
            for _, _, rid in mine:
                a, b = _result_of(store, rid), _result_of(scratch, rid)
                same += a == b
                values += sum(len(v) for v in a["stats"].values())
    return {"recheck_runs": float(len(picks)), "recheck_identical": float(same),
            "recheck_values": float(values), "recheck_s": time.perf_counter() - t0}


def reproduce(
    out: Any,
    *,
    scale: str = "full",
    store: Optional[str] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: bool = False,
    command: Optional[str] = None,
    recheck_runs: int = 0,
) -> Reproduction:
    """Run every sweep at ``scale`` and write the report into ``out``. Results
    go to ``store`` (default ``<out>/store.sqlite``); runs already there are
    reused unless ``force``. ``recheck_runs`` > 0: before that, re-simulate
    that many of the runs found in the store with this build and compare
    every stat (:func:`recheck`); the report states the outcome."""
    from tessera.report import gtsm_figures, gtsm_report
    from tessera.report.mmu_analysis import run_sweep, sweep_toml
    from tessera.report.mosaic_run import begin, write_report
    from tessera.result import write_atomic

    gs._check_scale(scale)
    t_start = time.perf_counter()
    out, store, command, commit = begin(out, store, command, gs.STUDY, scale)

    timing: dict[str, float] = {}
    runs: dict[str, pd.DataFrame] = {}
    reports = []
    specs = {"main": gs.main_spec, "retired": gs.retired_spec, "size": gs.size_spec, "decode": gs.decode_spec,
             "pde": gs.pde_spec, "coalescing": gs.coalescing_spec, "beyond": gs.beyond_spec,
             "versus": gs.versus_spec}
    # A part is one sweep, or several (``versus``: runs that set different keys).
    plan = {part: (lambda m: m if isinstance(m, list) else [m])(specs[part](scale)) for part in PARTS}
    if recheck_runs > 0 and not force:
        every = [sp for part in PARTS for sp in plan[part]]
        reused = _stored_before(every, store)
        if reused:
            timing.update(recheck(every, reused, store, recheck_runs, executor=executor, jobs=jobs))
    for part in PARTS:
        frames = []
        t0 = time.perf_counter()
        for spec in plan[part]:
            stem = spec["name"][len(gs.sweep_name(scale)) + 1:]
            write_atomic(out / "sweeps" / f"{stem}.toml",
                         sweep_toml(spec, f"GTSM reproduction, {stem} ({scale} scale), written by:\n  {command}"))
            df = run_sweep(spec, store=store, executor=executor, jobs=jobs, force=force, progress=progress)
            reports.append(df.attrs.get("sweep", {}))
            frames.append(df)
        timing[f"{part}_sweep_s"] = time.perf_counter() - t0
        runs[part] = gs.label_runs(pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0])

    t1 = time.perf_counter()
    tabs = tables(runs, scale)
    md, html, figures = write_report(out, tabs, runs, reports, timing, t_start=t_start, t_tables=t1, command=command,
                                     commit=commit, store=store, scale=scale, figures=gtsm_figures.FIGURES,
                                     build=gtsm_report.build, title="Reproduction: GTSM")
    return Reproduction(out, md, html, figures, runs, tabs, timing)
