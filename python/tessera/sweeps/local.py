"""The local executor: a pool of worker processes on this machine.

Processes rather than threads, although the core releases the GIL: a run
that exhausts host memory or crashes takes down one worker, not the sweep.
When a worker dies the pool is rebuilt and the runs it had in flight go
again; a run that has been in flight at three deaths is reported as failed
(it is probably the one killing workers).
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Optional

from tessera.sweeps.worker import execute

__all__ = ["LocalExecutor", "MAX_ATTEMPTS"]

#: A run in flight when this many workers died is given up on.
MAX_ATTEMPTS = 3


def _context() -> Any:
    # fork would copy the parent's threads' locks (rich's refresh thread, the
    # core's workload threads) into a child that never runs them.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("forkserver" if "forkserver" in methods else "spawn")


class LocalExecutor:
    """Run tasks in ``jobs`` processes (default: every core)."""

    name = "local"

    def __init__(self, jobs: Optional[int] = None) -> None:
        if jobs is not None and jobs < 1:
            raise ValueError(f"jobs must be at least 1, not {jobs}")
        self.jobs = jobs or os.cpu_count() or 1
        self._pool: Optional[ProcessPoolExecutor] = None

    @property
    def workers(self) -> int:
        return self.jobs

    def describe(self) -> str:
        return f"{self.jobs} local process{'es' if self.jobs != 1 else ''}"

    def _new_pool(self, n: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(max_workers=max(1, min(self.jobs, n)), mp_context=_context())

    def run(self, tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        """Yield one outcome per task, in completion order."""
        pending = list(reversed(tasks))  # popped from the end: submission keeps sweep order
        attempts: dict[str, int] = {}
        pool = self._pool = self._new_pool(len(tasks))
        in_flight: dict[Future[dict[str, Any]], dict[str, Any]] = {}
        # Keep a few tasks queued per worker: enough to hide the hand-off,
        # few enough that a pool break has little to resubmit.
        depth = 2 * self.jobs
        try:
            while pending or in_flight:
                while pending and len(in_flight) < depth:
                    t = pending.pop()
                    in_flight[pool.submit(execute, t)] = t
                done, _ = wait(in_flight, return_when=FIRST_COMPLETED)
                broken = False
                for fut in done:
                    task = in_flight.pop(fut)
                    try:
                        yield fut.result()
                    except BrokenProcessPool:
                        broken = True
                        in_flight[fut] = task  # handled below with the rest
                if broken:
                    lost = list(in_flight.values())
                    in_flight.clear()
                    pool.shutdown(wait=True, cancel_futures=True)
                    for t in lost:
                        n = attempts[t["run_id"]] = attempts.get(t["run_id"], 0) + 1
                        if n >= MAX_ATTEMPTS:
                            yield {
                                "run_id": t["run_id"],
                                "kind": "WorkerDied",
                                "error": f"a worker process died {n} times while running it (out of host memory?)",
                            }
                        else:
                            pending.append(t)
                    if pending:
                        pool = self._pool = self._new_pool(len(pending))
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        pool, self._pool = self._pool, None
        if pool is None:
            return
        # On Ctrl-C the workers got SIGINT too and are stopping; don't wait
        # for queued work, and make sure no process outlives the sweep.
        # A pool whose workers never started (or already stopped) has no process table.
        procs = list((getattr(pool, "_processes", None) or {}).values())
        pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()
        for p in procs:
            p.join(timeout=5)
        # Join the pool's manager thread too, so nothing of the sweep is
        # still running (and able to report a broken pool) after it returns.
        pool.shutdown(wait=True)
