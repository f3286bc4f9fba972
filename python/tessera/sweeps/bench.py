"""``tessera bench --sweep``: what the sweep machinery costs around the simulator.

Two measurements, each in a fresh store in a temporary directory:

- **dispatch overhead**: many tiny runs; the share of the workers' wall time
  not spent inside ``tessera.simulate`` (expansion, hashing, pickling, the
  process pool, store writes, progress) — ``1 - sim_s / (wall_s * workers)``,
  with wall time from the first submission to the last result stored;
- **scaling**: the same CPU-bound sweep on 1 and on N local workers; the
  speed-up is the ratio of their wall times.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

from tessera.sweeps.local import LocalExecutor
from tessera.sweeps.runner import run_sweep

__all__ = ["bench_sweep", "TINY_RUNS", "TINY_ACCESSES", "CPU_RUNS", "CPU_ACCESSES"]

TINY_RUNS = 200
TINY_ACCESSES = 100_000
CPU_RUNS = 8
CPU_ACCESSES = 3_000_000


def _grid(name: str, runs: int, accesses: int) -> dict[str, Any]:
    return {
        "name": name,
        "machine": "tlb_only",
        "source": {"synthetic": {"pattern": "uniform", "accesses": accesses, "footprint": "1GiB"}},
        "axes": {"seed": list(range(runs))},
    }


def bench_sweep(
    *,
    tiny_runs: int = TINY_RUNS,
    tiny_accesses: int = TINY_ACCESSES,
    cpu_runs: int = CPU_RUNS,
    cpu_accesses: int = CPU_ACCESSES,
    workers: Optional[int] = None,
    status: Optional[Callable[[str], Any]] = None,
) -> dict[str, Any]:
    """Run both measurements and return them as a dict (see the module docstring)."""
    workers = workers or min(2, os.cpu_count() or 1)
    say = status or (lambda _m: None)
    out: dict[str, Any] = {"workers": workers}
    with tempfile.TemporaryDirectory(prefix="tessera-bench-sweep-") as d:
        for jobs in sorted({1, workers}):
            say(f"dispatch overhead: {tiny_runs} runs of {tiny_accesses:_} accesses on {jobs} worker(s)")
            t0 = time.perf_counter()
            rep = run_sweep(_grid("tiny", tiny_runs, tiny_accesses), store=Path(d) / f"tiny{jobs}.sqlite",
                            executor=LocalExecutor(jobs))
            total = time.perf_counter() - t0
            out[f"tiny_{jobs}"] = {
                "runs": rep.computed,
                "accesses_per_run": tiny_accesses,
                "wall_s": rep.wall_s,
                "wall_incl_expansion_s": total,
                "sim_s": rep.sim_s,
                "outside_simulator": 1 - rep.sim_s / (rep.wall_s * jobs),
                "outside_simulator_incl_expansion": 1 - rep.sim_s / (total * jobs),
                "mean_run_s": rep.sim_s / max(rep.computed, 1),
            }
        walls = {}
        for jobs in sorted({1, workers}):
            say(f"scaling: {cpu_runs} runs of {cpu_accesses:_} accesses on {jobs} worker(s)")
            rep = run_sweep(_grid("cpu", cpu_runs, cpu_accesses), store=Path(d) / f"cpu{jobs}.sqlite",
                            executor=LocalExecutor(jobs))
            walls[jobs] = rep.wall_s
            out[f"cpu_{jobs}"] = {"runs": rep.computed, "accesses_per_run": cpu_accesses, "wall_s": rep.wall_s,
                                  "sim_s": rep.sim_s}
        out["speedup"] = walls[1] / walls[workers] if workers in walls else 1.0
    return out
