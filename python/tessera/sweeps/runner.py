"""Run a sweep: expand, skip what the store has, execute the rest, store each result as it lands."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional, Union

from tessera import _core
from tessera.store import Store, open_store
from tessera.sweeps.spec import Run, SpecLike, SweepSpec, load_spec

__all__ = ["run_sweep", "make_executor", "SweepReport", "plan"]

#: ``progress(done, total, failed)`` after every finished run.
SweepProgressFn = Callable[[int, int, int], Any]


@dataclass
class SweepReport:
    """What a sweep did. ``busy`` is the share of the workers' time spent in
    the simulator: ``sim_s / (wall_s * workers)``."""

    name: str
    total: int
    already_stored: int
    computed: int = 0
    failed: int = 0
    wall_s: float = 0.0
    sim_s: float = 0.0
    workers: int = 1
    executor: str = ""
    failures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def busy(self) -> float:
        return self.sim_s / (self.wall_s * self.workers) if self.wall_s > 0 else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "total": self.total,
            "already_stored": self.already_stored,
            "computed": self.computed,
            "failed": self.failed,
            "wall_s": self.wall_s,
            "sim_s": self.sim_s,
            "workers": self.workers,
            "busy": self.busy,
            "executor": self.executor,
        }


def make_executor(executor: Any = None, jobs: Optional[int] = None) -> Any:
    """``None``/``"local"`` → :class:`LocalExecutor`; ``"tcp://..."`` (or any
    ``scheme://``) → :class:`DaskExecutor`; an object with ``run`` is used as is."""
    from tessera.sweeps.dask import DaskExecutor
    from tessera.sweeps.local import LocalExecutor

    if executor is None or executor == "local":
        return LocalExecutor(jobs)
    if isinstance(executor, str):
        if "://" in executor:
            return DaskExecutor(executor)
        raise ValueError(f"unknown executor {executor!r} (allowed: 'local', a Dask scheduler address tcp://HOST:PORT)")
    if hasattr(executor, "run"):
        return executor
    try:
        from distributed import Client

        if isinstance(executor, Client):
            return DaskExecutor(client=executor)
    except ImportError:  # pragma: no cover
        pass
    raise TypeError(f"not an executor: {executor!r}")


def _spec_text(spec: SweepSpec) -> str:
    return spec.text or json.dumps(spec.data, sort_keys=True, default=str)


def plan(spec: SpecLike, store: Union[Store, str, None] = None, force: bool = False) -> tuple[SweepSpec, list[Run], set[str]]:
    """Expand a sweep and find which runs the store already has (nothing runs)."""
    s = load_spec(spec)
    runs = s.expand()
    if force or store is None:
        return s, runs, set()
    st = store if isinstance(store, Store) else open_store(store)
    try:
        return s, runs, st.stored_ids([r.run_id for r in runs])
    finally:
        if st is not store:
            st.close()


def run_sweep(
    spec: SpecLike,
    *,
    store: Union[Store, str, Any, None] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: Union[SweepProgressFn, bool, None] = None,
    on_plan: Optional[Callable[[SweepSpec, list[Run], set[str], Any], Any]] = None,
) -> SweepReport:
    """Run every run of ``spec`` not yet in ``store`` (all of them with
    ``force``) and store each result as it finishes. Returns the report; the
    results are in the store (:func:`tessera.results.load`)."""
    # Every point is expanded and its machine resolved before the store is
    # opened: a sweep with a bad point must not leave an empty store behind.
    s = load_spec(spec)
    runs = s.expand()
    st = store if isinstance(store, Store) else open_store(store)
    ex = make_executor(executor, jobs)
    try:
        st.begin_sweep(s.name, _spec_text(s), s.origin, [(r.run_id, r.point) for r in runs])
        have = set() if force else st.stored_ids([r.run_id for r in runs])
        todo = [r for r in runs if r.run_id not in have]
        report = SweepReport(name=s.name, total=len(runs), already_stored=len(runs) - len(todo),
                             executor=ex.describe() if todo else getattr(ex, "name", ""))
        if on_plan is not None:
            on_plan(s, runs, have, ex)
        if not todo:
            return report
        report.workers = ex.workers
        by_id = {r.run_id: r for r in todo}
        version = _core.__version__
        tasks = [dict(r.task(), version=version) for r in todo]

        bar = None
        if progress is True:
            from tessera.progress import SweepProgressBar

            bar = SweepProgressBar(s.name, len(runs), report.already_stored)
            bar.__enter__()
            cb: Optional[SweepProgressFn] = bar
        else:
            cb = progress or None
        start = time.perf_counter()
        done = report.already_stored
        try:
            for out in ex.run(tasks):
                run = by_id[out["run_id"]]
                if "result" in out:
                    st.put_result(run.run_id, inputs=run.describe(), result_json=out["result"],
                                  wall_s=out["wall_s"], host=out.get("host", ""), replace=force, sweep=s.name)
                    report.computed += 1
                    report.sim_s += out["wall_s"]
                else:
                    st.put_failure(s.name, run.run_id, out.get("kind", "Error"), out.get("error", ""))
                    report.failed += 1
                    report.failures.append({"run_id": run.run_id, "point": run.point, **out})
                done += 1
                if cb is not None:
                    cb(done, len(runs), report.failed)
        finally:
            report.wall_s = time.perf_counter() - start
            if bar is not None:
                bar.__exit__(None, None, None)
        return report
    finally:
        close = getattr(ex, "close", None)
        if close is not None and (executor is None or isinstance(executor, str)):
            close()
        if st is not store:
            st.close()


def sweep(
    spec: SpecLike,
    *,
    store: Union[Store, str, Any, None] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: Union[SweepProgressFn, bool, None] = None,
) -> "Any":
    """Run a sweep (see :func:`run_sweep`) and return its results as a pandas
    DataFrame, one row per run (:func:`tessera.results.load`). The report is
    in ``df.attrs["sweep"]``; failed runs are listed in ``df.attrs["failures"]``."""
    from tessera.results import load

    report = run_sweep(spec, store=store, executor=executor, jobs=jobs, force=force, progress=progress)
    df = load(store, sweep=report.name)
    df.attrs["sweep"] = report.to_dict()
    df.attrs["failures"] = [
        {k: v for k, v in f.items() if k in ("run_id", "point", "kind", "error")} for f in report.failures
    ]
    return df
