"""Run the mosaic-motivation study and write its report.

:func:`reproduce` runs the sweeps of :mod:`tessera.report.mosaic_motivation`
(the alone runs first: every weighted speedup divides by them) through
:func:`tessera.sweep` into one results store, then writes ``report.md``,
``report.html``, ``figures/``, ``data/*.csv`` and ``sweeps/*.toml`` into the
output directory.
"""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

from tessera.report import mosaic_motivation as mm
from tessera.report.mosaic_run import Reproduction, reproduce_sweeps

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

    def make_tables(runs: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        ws = mm.weighted_speedups(mm.combine(runs, "mix-"), runs["alone"], scale)
        return mm.tables(ws, mm.combine(runs, "seeds-"), scale)

    return reproduce_sweeps(out, scale, store, executor, jobs, force, progress, command, study=mm.STUDY,
                            specs=mm.specs(scale), label="Mosaic motivation reproduction",
                            title="Reproduction: Mosaic (MICRO 2017), motivation", report=report,
                            make_tables=make_tables)
