"""Run the GTSM reproduction and write its report.

:func:`reproduce` runs the sweeps of :mod:`tessera.report.gtsm_study` in
order (main designs; retired fractions; GUPS's table size; decode cycles;
PDE-cache size; L2 TLB coalescing; beyond the paper) through
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
PARTS = ("main", "retired", "size", "decode", "pde", "coalescing", "beyond")


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
    }


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
) -> Reproduction:
    """Run every sweep at ``scale`` and write the report into ``out``. Results
    go to ``store`` (default ``<out>/store.sqlite``); runs already there are
    reused unless ``force``."""
    from tessera.report import gtsm_figures, gtsm_report
    from tessera.report.mmu_analysis import _commit, run_sweep, sweep_toml
    from tessera.report.mosaic_run import write_report
    from tessera.result import write_atomic

    gs._check_scale(scale)
    t_start = time.perf_counter()
    # The code that simulates is the code at the start (the checkout may move on during a long run).
    commit = _commit()
    out = Path(out)
    (out / "sweeps").mkdir(parents=True, exist_ok=True)
    store = str(store) if store is not None else str(out / "store.sqlite")
    if command is None:
        command = f"python -c 'import tessera; tessera.reproduce(\"{gs.STUDY}\", out=\"{out}\", scale=\"{scale}\")'"

    timing: dict[str, float] = {}
    runs: dict[str, pd.DataFrame] = {}
    reports = []
    specs = {"main": gs.main_spec, "retired": gs.retired_spec, "size": gs.size_spec, "decode": gs.decode_spec,
             "pde": gs.pde_spec, "coalescing": gs.coalescing_spec, "beyond": gs.beyond_spec}
    for part in PARTS:
        spec = specs[part](scale)
        write_atomic(out / "sweeps" / f"{part}.toml",
                     sweep_toml(spec, f"GTSM reproduction, {part} ({scale} scale), written by:\n  {command}"))
        t0 = time.perf_counter()
        df = run_sweep(spec, store=store, executor=executor, jobs=jobs, force=force, progress=progress)
        timing[f"{part}_sweep_s"] = time.perf_counter() - t0
        reports.append(df.attrs.get("sweep", {}))
        runs[part] = gs.label_runs(df)

    t1 = time.perf_counter()
    tabs = tables(runs, scale)
    md, html, figures = write_report(out, tabs, runs, reports, timing, t_start=t_start, t_tables=t1, command=command,
                                     commit=commit, store=store, scale=scale, figures=gtsm_figures.FIGURES,
                                     build=gtsm_report.build, title="Reproduction: GTSM")
    return Reproduction(out, md, html, figures, runs, tabs, timing)
