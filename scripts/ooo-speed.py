#!/usr/bin/env python3
"""Speed of the out-of-order timing model against the interval model, on the
wall clock, in one process (docs/timing.md, "Speed").

Each workload is recorded once (with its dependencies) and read into memory,
so generating it is not timed; then `sandy_bridge` simulates it with
`timing.kind = "interval"` and `"ooo"` alternately, best of ROUNDS each.

    python3 scripts/ooo-speed.py [ROUNDS]
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import tessera

WORKLOADS = {
    "GUPS": ("gups", {"table": "1GiB", "updates": "2M"}),
    "Graph500 BFS": ("graph500-bfs", {"scale": "16"}),
}


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    with tempfile.TemporaryDirectory() as d:
        for name, (workload, params) in WORKLOADS.items():
            path = os.path.join(d, workload + ".tess")
            tessera.record_workload(workload, path, params=params, seed=1)
            accesses = tessera.read_trace(path)
            best: dict[str, float] = {}
            for _ in range(rounds):
                for kind in ("interval", "ooo"):
                    start = time.perf_counter()
                    tessera.simulate("sandy_bridge", accesses=accesses, overrides=[f"timing.kind={kind}"], seed=1)
                    best[kind] = min(best.get(kind, float("inf")), time.perf_counter() - start)
            print(f"{name}: {len(accesses):,} accesses, interval {best['interval']:.3f} s, "
                  f"ooo {best['ooo']:.3f} s, speed ooo / interval {best['interval'] / best['ooo']:.2f}", flush=True)


if __name__ == "__main__":
    main()
