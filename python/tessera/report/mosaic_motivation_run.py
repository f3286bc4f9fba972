"""Run the mosaic-motivation study and write its report.

:func:`reproduce` runs the sweeps of :mod:`tessera.report.mosaic_motivation`
(the alone runs first: every weighted speedup divides by them) through
:func:`tessera.sweep` into one results store, then writes ``report.md``,
``report.html``, ``figures/``, ``data/*.csv`` and ``sweeps/*.toml`` into the
output directory.
"""

from __future__ import annotations

import time
from typing import Any, Optional

import pandas as pd

from tessera.report import mosaic_motivation as mm
from tessera.report.mosaic_run import Reproduction, begin, run_parts, write_report

__all__ = ["reproduce", "Reproduction"]


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
    from tessera.report import mosaic_motivation_report as report

    mm._check_scale(scale)
    t_start = time.perf_counter()
    out, store, command, commit = begin(out, store, command, mm.STUDY, scale)

    label = "Mosaic motivation reproduction"
    runs, reports, timing = run_parts(mm.specs(scale), out, store, command, label, scale, executor, jobs, force,
                                      progress)

    t1 = time.perf_counter()
    ws = mm.weighted_speedups(mm.combine(runs, "mix-"), runs["alone"], scale)
    tabs = mm.tables(ws, mm.combine(runs, "seeds-"), scale)
    md, html, figures = write_report(out, tabs, runs, reports, timing, t_start=t_start, t_tables=t1, command=command,
                                     commit=commit, store=store, scale=scale, figures=report.FIGURES,
                                     build=report.build, title="Reproduction: Mosaic (MICRO 2017), motivation")
    return Reproduction(out, md, html, figures, runs, tabs, timing)

