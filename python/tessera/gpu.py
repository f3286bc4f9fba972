"""GPU runs: applications on the GPU machine, and the weighted speedup of a mix.

An application is a built-in GPU kernel (``"bfs"``, or ``{"kernel": "bfs",
"params": {"scale": 12}}``) or an Accel-Sim trace directory
(``{"trace": "path/to/traces"}``). Several applications share the GPU, each
in its own address space on its share of the SMs (``gpu.sm_split``, equal by
default).

The weighted speedup of a mix (the Mosaic paper's Eq. 1) is
``sum(IPC_shared / IPC_alone)``, where ``IPC_alone`` is the same
application alone on the same number of SMs under the baseline machine.
:func:`weighted_speedup` makes the alone runs itself and keeps them in the
results store, so a sweep over mixes runs each alone configuration once.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Optional, Union

from tessera import _core
from tessera.config import ConfigLike, source_of
from tessera.result import Result, result_from_dict

AppLike = Union[str, Mapping[str, Any]]

__all__ = ["simulate_gpu", "weighted_speedup", "app_args"]


def app_args(app: AppLike) -> tuple[str, str, dict[str, str]]:
    """An application as the core takes it: ``(kind, value, params)``."""
    from tessera.api import _param_value

    if isinstance(app, str):
        return ("kernel", app, {})
    if isinstance(app, Mapping):
        keys = set(app)
        if "trace" in app and keys <= {"trace"}:
            return ("trace", os.fspath(app["trace"]), {})
        if "kernel" in app and keys <= {"kernel", "params"}:
            params = {str(k): _param_value(v) for k, v in (app.get("params") or {}).items()}
            return ("kernel", str(app["kernel"]), params)
    raise ValueError(f"an application is a kernel name, {{'kernel': name, 'params': {{...}}}} or {{'trace': dir}}, not {app!r}")


def simulate_gpu(
    config: ConfigLike,
    apps: Sequence[AppLike],
    *,
    overrides: Union[Iterable[str], Mapping[str, Any]] = (),
    seed: int = 0,
) -> Result:
    """Run ``apps`` together on the GPU machine ``config`` (a GPU preset such
    as ``"mosaic_gpu"``, a file, TOML text or a dict). The result's counters
    are under ``gpu.*`` (per application ``gpu.apps.<i>.*``) and the memory
    system's ``walker.*``, ``physmem.*``, ``pagetable.*`` and ``os.*``."""
    from tessera.api import _overrides, check_seed

    if isinstance(apps, (str, Mapping)):
        apps = [apps]
    kind, value = source_of(config)
    args = [app_args(a) for a in apps]
    raw = _core.gpu_simulate(kind, value, _overrides(overrides), args, check_seed(seed))
    return Result._from_core(raw, _apps_id(args, seed))


def _apps_id(args: Sequence[tuple[str, str, dict[str, str]]], seed: int) -> str:
    text = json.dumps([list(a) for a in args] + [seed], sort_keys=True)
    return "gpu-apps:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def weighted_speedup(
    config: ConfigLike,
    apps: Sequence[AppLike],
    *,
    overrides: Union[Iterable[str], Mapping[str, Any]] = (),
    baseline_overrides: Union[Iterable[str], Mapping[str, Any], None] = None,
    seed: int = 0,
    store: Any = None,
) -> dict[str, Any]:
    """Run the mix ``apps`` on ``config`` with ``overrides``, and each
    application alone on its share of the SMs under ``baseline_overrides``
    (default: the same overrides), and return ``{"weighted_speedup",
    "apps": [{"name", "sms", "ipc_shared", "ipc_alone", "speedup"}],
    "shared": Result}``. Alone runs are looked up in, and written to, the
    results store ``store`` (a :class:`tessera.store.Store`, a path, or
    ``None`` for no store)."""
    from tessera.api import _overrides

    shared = simulate_gpu(config, apps, overrides=overrides, seed=seed)
    base = _overrides(overrides if baseline_overrides is None else baseline_overrides)
    rows = []
    total = 0.0
    for i, app in enumerate(apps):
        sms = int(shared.counters[f"gpu.apps.{i}.sms"])
        alone_over = [o for o in base if not o.startswith("gpu.sm_split")] + [f"gpu.sms={sms}", "gpu.sm_split=[]"]
        alone = _alone(config, app, alone_over, seed, store)
        ipc_shared = shared.derived[f"gpu.apps.{i}.ipc"]
        ipc_alone = alone.derived["gpu.apps.0.ipc"]
        speedup = ipc_shared / ipc_alone if ipc_alone else 0.0
        total += speedup
        rows.append({"name": app_args(app)[1], "sms": sms, "ipc_shared": ipc_shared, "ipc_alone": ipc_alone, "speedup": speedup})
    return {"weighted_speedup": total, "apps": rows, "shared": shared}


def _alone(config: ConfigLike, app: AppLike, overrides: list[str], seed: int, store: Any) -> Result:
    kind, value = source_of(config)
    key = json.dumps({"config": [kind, value], "overrides": overrides, "app": list(app_args(app)), "seed": seed}, sort_keys=True)
    run_id = "gpu-alone-" + hashlib.sha256(key.encode()).hexdigest()[:24]
    st = _open(store)
    if st is not None:
        try:
            row = st.get(run_id)
            return result_from_dict(row["result"] if isinstance(row["result"], Mapping) else json.loads(row["result"]))
        except KeyError:
            pass
    t0 = time.perf_counter()
    r = simulate_gpu(config, [app], overrides=overrides, seed=seed)
    if st is not None:
        inputs = {"machine": value if kind == "preset" else kind, "overrides": overrides, "app": list(app_args(app)), "workload": app_args(app)[1]}
        st.put_result(run_id, inputs=inputs, result_json=r.to_json(), wall_s=time.perf_counter() - t0, host=socket.gethostname())
    return r


def _open(store: Any) -> Any:
    if store is None:
        return None
    if hasattr(store, "put_result"):
        return store
    from tessera.store import open_store

    return open_store(store)
