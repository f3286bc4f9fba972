"""A stand-in for ``tessera.sweep`` until the real one lands on main.

It follows ``notes/sweep-contract.md`` for the parts the reproduction uses:
a spec dict (``name``, ``machine``, ``seed``, ``set``, ``source``, ``params``,
``axes`` with ``zip``, ``exclude``) is expanded into runs, each run goes
through :func:`tessera.simulate`, and the rows have the contract's columns
(``run_id``, ``sweep``, ``machine``, ``source``, ``workload``, ``seed``,
``wall_s``, ``axis.*``, ``param.*``, every stat, ``config.*``). Results are
kept as JSON files in ``<store>.shim.d/`` so a second call skips finished
runs, as the real store does. Only the local executor exists here.

:func:`tessera.report.mmu_analysis.run_sweep` uses ``tessera.sweep`` when the
package has it and falls back to this module otherwise; delete this file once
main's sweep is merged.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Optional

from tessera import api
from tessera.result import Result, write_atomic

_SPECIAL_AXES = ("workload", "machine", "seed", "trace")


def _axis_values(name: str, spec: Any) -> list[Any]:
    if isinstance(spec, list):
        return list(spec)
    if isinstance(spec, dict) and "start" in spec and "stop" in spec:
        start, stop = spec["start"], spec["stop"]
        if "mul" in spec:
            out, v = [], start
            while v <= stop:
                out.append(v)
                v *= spec["mul"]
            return out
        return list(range(start, stop, spec.get("step", 1)))
    raise ValueError(f"sweep axis {name!r}: expected a list or a {{start, stop[, step|mul]}} range")


def expand(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The sweep's points, in order: ``[{axis name: value}]`` (crossed, with
    ``zip`` groups advancing together, then ``exclude`` applied)."""
    axes = dict(spec.get("axes", {}))
    zips = [list(z) for z in axes.pop("zip", [])]
    values = {name: _axis_values(name, v) for name, v in axes.items()}
    for z in zips:
        missing = [n for n in z if n not in values]
        if missing:
            raise ValueError(f"sweep zip names axes that do not exist: {missing}")
    groups: list[list[str]] = []
    seen: set[str] = set()
    for name in values:
        if name not in seen:
            group = next((z for z in zips if name in z), [name])
            groups.append(group)
            seen.update(group)
    choices = []
    for g in groups:
        lens = {len(values[n]) for n in g}
        if len(lens) != 1:
            raise ValueError(f"zipped sweep axes {g} have different lengths")
        choices.append([{n: values[n][i] for n in g} for i in range(lens.pop())])
    points = []
    for combo in itertools.product(*choices):
        p: dict[str, Any] = {}
        for part in combo:
            p.update(part)
        if any(all(p.get(k) == v for k, v in ex.items()) for ex in spec.get("exclude", [])):
            continue
        points.append(p)
    return points


def _run_args(spec: dict[str, Any], point: dict[str, Any]) -> dict[str, Any]:
    source = dict(spec.get("source", {}))
    workload = point.get("workload", source.get("workload"))
    if workload is None:
        raise ValueError("this stand-in sweep runs built-in workloads only (give `workload`)")
    params = {**spec.get("params", {}).get(workload, {})}
    overrides = {**spec.get("set", {})}
    for k, v in point.items():
        if k.startswith("param."):
            params[k[len("param.") :]] = v
        elif k not in _SPECIAL_AXES:
            overrides[k] = v
    return {
        "machine": point.get("machine", spec["machine"]),
        "workload": workload,
        "params": {k: str(v) for k, v in sorted(params.items())},
        "overrides": dict(sorted(overrides.items())),
        "seed": int(point.get("seed", spec.get("seed", 0))),
    }


def _run_id(args: dict[str, Any]) -> str:
    key = json.dumps({**args, "version": api._core.__version__}, sort_keys=True)
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def sweep(
    spec: dict[str, Any],
    *,
    store: Optional[str] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: bool = False,
) -> Any:
    """Run every point of ``spec`` (a dict); one DataFrame row per run."""
    import pandas as pd

    if executor not in (None, "local"):
        raise ValueError(
            f"executor {executor!r} needs tessera.sweep from main (this stand-in runs locally only)"
        )
    cache = Path(f"{store}.shim.d") if store else None
    if cache is not None:
        cache.mkdir(parents=True, exist_ok=True)
    points = expand(spec)
    runs = [(p, _run_args(spec, p)) for p in points]

    def one(item: tuple[dict[str, Any], dict[str, Any]]) -> dict[str, Any]:
        point, a = item
        rid = _run_id(a)
        path = cache / f"{rid}.json" if cache is not None else None
        if path is not None and path.exists() and not force:
            saved = json.loads(path.read_text(encoding="utf-8"))
            result = Result(**saved["result"])
            wall = saved["wall_s"]
        else:
            t0 = time.perf_counter()
            result = api.simulate(
                a["machine"], workload=a["workload"], params=a["params"], overrides=a["overrides"], seed=a["seed"]
            )
            wall = time.perf_counter() - t0
            if path is not None:
                d = result.to_dict()
                saved = {
                    "wall_s": wall,
                    "result": {
                        "counters": d["stats"]["counters"],
                        "derived": d["stats"]["derived"],
                        "config_toml": result.config_toml,
                        "source": result.source,
                        "seed": result.seed,
                        "version": result.version,
                    },
                }
                write_atomic(path, json.dumps(saved, sort_keys=True))
            if progress:
                settings = " ".join(str(v) for v in a["overrides"].values())
                print(f"  {a['workload']:<16} {settings:<40} {wall:7.1f} s", file=sys.stderr)
        row: dict[str, Any] = {
            "run_id": rid,
            "sweep": spec["name"],
            "machine": a["machine"],
            "source": result.source,
            "workload": a["workload"],
            "seed": a["seed"],
            "wall_s": wall,
        }
        row.update({f"axis.{k}": v for k, v in point.items()})
        row.update({f"param.{k}": v for k, v in a["params"].items()})
        for k, v in result.to_row().items():
            row.setdefault(k, v)
        return row

    workers = max(1, jobs or os.cpu_count() or 1)
    # simulate() releases the GIL, so threads run simulations in parallel.
    with ThreadPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(one, runs))
    return pd.DataFrame(rows)
