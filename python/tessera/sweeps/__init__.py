"""Sweeps: grids of runs described in TOML, run locally or on a Dask cluster,
with every result kept in the results store (:mod:`tessera.store`).

>>> df = tessera.sweep("sweeps/page-sizes.toml", jobs=2)       # doctest: +SKIP
>>> df = tessera.sweep(spec, executor="tcp://head:8786")       # doctest: +SKIP
"""

from tessera.sweeps.dask import DaskExecutor
from tessera.sweeps.local import LocalExecutor
from tessera.sweeps.runner import SweepReport, make_executor, plan, run_sweep, sweep
from tessera.sweeps.spec import Run, SweepSpec, load_spec

__all__ = [
    "sweep",
    "run_sweep",
    "plan",
    "load_spec",
    "make_executor",
    "SweepSpec",
    "SweepReport",
    "Run",
    "LocalExecutor",
    "DaskExecutor",
]
