"""What runs on a worker: one simulation from a plain task dict.

Kept free of the store and of any executor so that a local process, a Dask
worker on another host or a batch job can all call :func:`execute` the same
way. Failures a user can cause (a bad workload parameter, a trace error,
simulated memory exhaustion) are *returned*, not raised: they are
deterministic, so retrying elsewhere would fail again, and the sweep records
them and goes on. Anything else (a worker dying, Ctrl-C) propagates and the
executor decides.
"""

from __future__ import annotations

import os
import socket
import time
from typing import Any


def execute(task: dict[str, Any]) -> dict[str, Any]:
    """Run one task (see :meth:`tessera.sweeps.spec.Run.task`) and return
    ``{"run_id", "result" (JSON text), "wall_s", "host"}`` or
    ``{"run_id", "error", "kind"}``."""
    import tessera
    from tessera import _core
    from tessera.errors import TesseraError

    rid = task["run_id"]
    host = f"{socket.gethostname()}:{os.getpid()}"
    want = task.get("version")
    if want is not None and want != _core.__version__:
        # A cluster worker with another Tessera would file results under ids
        # that claim the client's version.
        return {"run_id": rid, "kind": "VersionMismatch", "host": host,
                "error": f"worker {host} has Tessera {_core.__version__}, the sweep needs {want}"}
    kind, value = task["machine_source"]
    start = time.perf_counter()
    try:
        if task.get("apps") is not None:
            result = tessera.simulate_gpu(value, [_app(a) for a in task["apps"]], overrides=task["overrides"],
                                          seed=task["seed"])
        else:
            result = tessera.simulate(
                value,
                task["trace"],
                synthetic=task["synthetic"],
                workload=task["workload"],
                params=task["params"] if task["workload"] is not None else None,
                overrides=task["overrides"],
                seed=task["seed"],
                warmup=task.get("warmup"),
                **task.get("champsim", {}),
            )
    except TesseraError as e:
        return {"run_id": rid, "error": str(e), "kind": type(e).__name__, "host": host}
    wall = time.perf_counter() - start
    if result.config_toml != task["config_toml"]:
        return {"run_id": rid, "kind": "ConfigMismatch", "host": host,
                "error": "the worker resolved the machine differently from the client (different Tessera builds?)"}
    return {"run_id": rid, "result": result.to_json(), "wall_s": wall, "host": host}


def _app(a: list[Any]) -> dict[str, Any]:
    kind, value, params = a
    return {"trace": value} if kind == "trace" else {"kernel": value, "params": params}


def execute_batch(tasks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Several tasks in one call: packing short runs cuts per-task overhead."""
    return [execute(t) for t in tasks]
