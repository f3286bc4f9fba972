"""The Dask executor: runs on an existing ``distributed`` cluster.

Connect to a scheduler by address (``tcp://host:8786``), or hand over a
``distributed.Client`` you made (for instance from a dask-jobqueue
``SLURMCluster``; see docs/sweeps.md). Results travel back to this process,
which alone writes the store, so workers need Tessera installed but no
access to the store file.

A worker that dies takes its running task with it; the scheduler reruns the
task elsewhere (runs are deterministic, so the rerun is the same result).
After ``distributed.scheduler.allowed-failures`` deaths a task is reported
as failed with ``KilledWorker``. Each task's key is its run id plus a
per-sweep nonce, so resubmitting a sweep never collides with stale keys.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any, Optional

__all__ = ["DaskExecutor"]


class DaskExecutor:
    """Run tasks on a Dask cluster: ``DaskExecutor("tcp://host:8786")`` or ``DaskExecutor(client=c)``."""

    name = "dask"

    def __init__(self, address: Optional[str] = None, *, client: Any = None, timeout: float = 30.0,
                 retries: int = 0) -> None:
        if (address is None) == (client is None):
            raise ValueError("give a scheduler address or a distributed.Client, not both")
        try:
            import distributed  # noqa: F401
        except ImportError:  # pragma: no cover - installed with tessera
            raise RuntimeError("the Dask executor needs `distributed` (pip install distributed)") from None
        self.address = address
        self._client = client
        self._own = client is None
        self.timeout = timeout
        self.retries = retries

    def _connect(self) -> Any:
        if self._client is None:
            from distributed import Client

            from tessera.errors import TesseraError

            try:
                self._client = Client(self.address, timeout=self.timeout, set_as_default=False)
            except (OSError, TimeoutError) as e:
                raise TesseraError(f"cannot reach the Dask scheduler at {self.address}: {e}") from None
        return self._client

    @property
    def workers(self) -> int:
        info = self._connect().scheduler_info()
        return sum(w.get("nthreads", 1) for w in info.get("workers", {}).values()) or 1

    def describe(self) -> str:
        return f"Dask cluster {self.address or self._client.scheduler.address} ({self.workers} worker threads)"

    def run(self, tasks: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        from distributed import as_completed
        from distributed.client import FutureCancelledError

        from tessera.sweeps.worker import execute

        client = self._connect()
        nonce = uuid.uuid4().hex[:8]
        futures = {}
        for t in tasks:
            f = client.submit(execute, t, key=f"tessera-{t['run_id']}-{nonce}", pure=False, retries=self.retries)
            futures[f] = t
        try:
            with client.as_current():  # as_completed finds the client this way, not through the futures
                completed = as_completed(futures)
            for fut in completed:
                task = futures[fut]
                try:
                    yield fut.result()
                except FutureCancelledError:
                    yield {"run_id": task["run_id"], "kind": "Cancelled", "error": "the Dask task was cancelled"}
                except Exception as e:  # KilledWorker and friends: the task failed on the cluster side
                    yield {"run_id": task["run_id"], "kind": type(e).__name__, "error": str(e)}
        finally:
            pending = [f for f in futures if not f.done()]
            if pending:
                client.cancel(pending)
            futures.clear()

    def close(self) -> None:
        if self._own and self._client is not None:
            self._client.close()
            self._client = None
