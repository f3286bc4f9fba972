"""The measuring side of ``tessera bench --against``: one process per build.

This file is run by *another* build's Python (``python -c <this source>``), so
it imports nothing of its own package at module level and uses only the API
that every Tessera build since the first benchmarks has had:
``tessera.api.bench`` (times the simulation alone, after the machine is built)
and ``tessera.simulate`` (the counters).

Protocol: one JSON request per line on stdin, one JSON answer per line on the
real stdout (anything the build prints goes to stderr):

- ``{"op": "hello"}`` → ``{"version", "module"}``
- ``{"op": "bench", "run": RUN}`` → ``{"seconds", "accesses", "peak_rss", "rss_before"}``
- ``{"op": "counters", "run": RUN}`` → ``{"counters": {name: int}}``

``RUN`` is ``{"preset", "overrides", "trace"}`` or ``{"preset", "overrides",
"synthetic": {"pattern", "accesses", "footprint"}}``. A failure answers
``{"error": "..."}`` and the worker goes on.

``peak_rss`` is the process's resident high-water mark during the run, in
bytes: Linux's ``VmHWM``, reset before the run by writing 5 to
``/proc/self/clear_refs`` (0 where that is not available).
"""

import json
import sys


def _status_bytes(field):
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _reset_peak():
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _source(run):
    if run.get("trace"):
        return (run["trace"],), {}
    return (), {"synthetic": run["synthetic"]}


def serve(inp, out):
    import tessera
    from tessera import api

    for line in inp:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        try:
            op = req["op"]
            if op == "hello":
                ans = {"version": getattr(tessera, "__version__", "?"), "module": tessera.__file__}
            elif op == "bench":
                run = req["run"]
                args, kw = _source(run)
                rss_before = _status_bytes("VmRSS")
                ok = _reset_peak()
                r = api.bench(run["preset"], *args, overrides=run.get("overrides", []), **kw)
                ans = {
                    "seconds": r["seconds"],
                    "accesses": r["accesses"],
                    "peak_rss": _status_bytes("VmHWM") if ok else 0,
                    "rss_before": rss_before,
                }
            elif op == "counters":
                run = req["run"]
                args, kw = _source(run)
                res = tessera.simulate(run["preset"], *args, overrides=run.get("overrides", []), **kw)
                ans = {
                    "counters": {
                        k: v for k, v in res.stats.items() if isinstance(v, int) and not isinstance(v, bool)
                    }
                }
            else:
                ans = {"error": f"unknown op {op!r}"}
        except Exception as e:  # the parent reports it beside the run
            ans = {"error": f"{type(e).__name__}: {e}"}
        out.write(json.dumps(ans) + "\n")
        out.flush()


if __name__ == "__main__":
    # Keep the protocol channel clean of anything the build prints.
    channel = sys.stdout
    sys.stdout = sys.stderr
    serve(sys.stdin, channel)
