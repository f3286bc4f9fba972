"""Run the uvm-batching study and write its report.

:func:`reproduce` runs the sweeps of :mod:`tessera.report.uvm_batching`
through :func:`tessera.sweep` into one results store, then writes
``report.md``, ``report.html``, ``figures/``, ``data/*.csv`` and
``sweeps/*.toml`` into the output directory.
"""

from __future__ import annotations

from typing import Any, Optional

import pandas as pd

from tessera.report import uvm_batching as ub
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
    from tessera.report import uvm_batching_report as report

    ub._check_scale(scale)

    def make_tables(runs: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
        return ub.tables(runs, scale)

    return reproduce_sweeps(out, scale, store, executor, jobs, force, progress, command, study=ub.STUDY,
                            specs=ub.specs(scale), label="Batch-aware unified memory reproduction",
                            title="Reproduction: batch-aware unified memory (ASPLOS 2020)", report=report,
                            make_tables=make_tables)
