"""``tessera sweep`` and ``tessera results``: the research-workflow commands.

::

    tessera sweep FILE [--store PATH] [--jobs N | --scheduler tcp://HOST:PORT] [--force] [--dry-run] [--quiet]
    tessera results ls [--store PATH] [--sweep NAME] [--failures]
    tessera results show RUN_ID [--store PATH] [--all]
    tessera results export OUT.{csv,parquet,json} [--store PATH] [--sweep NAME] [--format F]
    tessera results forget SWEEP [--store PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from tessera import listing
from tessera import results as results_mod
from tessera import summary
from tessera.progress import should_show
from tessera.store import default_store_path, open_store
from tessera.sweeps import make_executor, run_sweep

__all__ = ["add_parsers", "cmd_sweep", "cmd_results"]


def _add_store(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--store",
        metavar="PATH",
        default=None,
        help=f"results store (default $TESSERA_STORE or {default_store_path()})",
    )


def add_parsers(sub: Any) -> None:
    p = sub.add_parser("sweep", help="run a grid of simulations described in a TOML file, storing every result")
    p.add_argument("file", metavar="FILE", help="the sweep (see docs/sweeps.md)")
    _add_store(p)
    where = p.add_mutually_exclusive_group()
    where.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                       help="local worker processes (default: every core)")
    where.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on this Dask scheduler's workers")
    p.add_argument("--force", action="store_true", help="recompute runs that are already stored")
    p.add_argument("-n", "--dry-run", action="store_true", help="expand and check the sweep, show what would run, run nothing")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary")
    p.add_argument("--json", metavar="FILE", help="also write the sweep's report (counts, times) as JSON")

    r = sub.add_parser("results", help="list, show and export stored results")
    rs = r.add_subparsers(dest="results_command", metavar="ACTION")
    rs.required = True
    ls = rs.add_parser("ls", help="list the sweeps in the store, or one sweep's runs")
    _add_store(ls)
    ls.add_argument("--sweep", metavar="NAME", help="list this sweep's runs")
    ls.add_argument("--failures", action="store_true", help="list failed runs and their errors")
    listing.add_format(ls)
    show = rs.add_parser("show", help="one stored run: its inputs, machine and stats")
    show.add_argument("run_id", metavar="RUN_ID", help="a run id or a unique prefix of one")
    _add_store(show)
    show.add_argument("--all", action="store_true", help="every counter and metric, not only the summary")
    show.add_argument("--json", action="store_true", help="print the run's result JSON")
    ex = rs.add_parser("export", help="write stored runs as CSV, Parquet or JSON (one row per run)")
    ex.add_argument("out", metavar="OUT", help="output file; the format follows the suffix unless --format is given")
    _add_store(ex)
    ex.add_argument("--sweep", metavar="NAME", help="only this sweep's runs")
    ex.add_argument("--format", choices=results_mod.EXPORT_FORMATS)
    fg = rs.add_parser("forget", help="drop a sweep's membership and failures (results stay for other sweeps)")
    fg.add_argument("sweep", metavar="SWEEP", help="the sweep's name (see `tessera results ls`)")
    _add_store(fg)


def _fmt_s(s: float) -> str:
    if s < 120:
        return f"{s:.1f} s"
    return f"{s / 60:.1f} min"


def cmd_sweep(args: argparse.Namespace, out: Console, err: Console) -> int:
    from tessera.cli import EXIT_ERROR, EXIT_OK, _Usage, check_output_file

    if args.jobs is not None and args.jobs < 1:
        raise _Usage(f"--jobs must be at least 1, not {args.jobs}")
    if args.json:
        check_output_file("--json", args.json)
    executor = args.scheduler or None
    show = should_show(sys.stderr, args.quiet)

    def on_plan(spec: Any, runs: list, have: set, ex: Any) -> None:
        if args.quiet:
            return
        todo = len(runs) - len(have)
        where = ex.describe() if todo else "nothing to run"
        err.print(f"sweep {spec.name}: {len(runs)} runs, {len(have)} already stored, {todo} to run on {where}",
                  markup=False, highlight=False)

    if args.dry_run:
        from tessera.sweeps import plan

        spec, runs, have = plan(args.file, None if args.force else _store_or_none(args.store), args.force)
        t = Table(box=None, header_style="bold", title=f"{spec.name}: {len(runs)} runs, {len(have)} stored",
                  title_justify="left")
        t.add_column("run_id")
        t.add_column("stored")
        for a in spec.axes:
            t.add_column(a)
        for r in runs:
            t.add_row(r.run_id, "yes" if r.run_id in have else "", *[str(r.point.get(a, "")) for a in spec.axes])
        out.print(t)
        return EXIT_OK

    # SIGTERM (a batch system's stop, `kill`) ends the sweep like Ctrl-C:
    # workers are stopped, the stored results stay, and a re-run resumes.
    import signal
    import threading

    def _term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _term)
    report = run_sweep(args.file, store=args.store, executor=executor, jobs=args.jobs, force=args.force,
                       progress=show, on_plan=on_plan)
    if args.json:
        from tessera.result import write_atomic

        write_atomic(args.json, json.dumps(report.to_dict(), indent=2, sort_keys=True) + "\n")
    if not args.quiet:
        line = (f"sweep {report.name}: {report.computed} computed, {report.already_stored} already stored, "
                f"{report.failed} failed")
        if report.computed:
            line += (f" in {_fmt_s(report.wall_s)} on {report.workers} worker(s); "
                     f"simulator busy {100 * report.busy:.0f}% of worker time")
        err.print(line, markup=False, highlight=False)
        for f in report.failures[:20]:
            point = ", ".join(f"{k}={v}" for k, v in f["point"].items())
            err.print(f"  failed {f['run_id']} ({point}): {f['kind']}: {f['error']}", markup=False, highlight=False)
        if len(report.failures) > 20:
            err.print(f"  ... and {len(report.failures) - 20} more (tessera results ls --failures)", markup=False)
    return EXIT_ERROR if report.failed else EXIT_OK


def _store_or_none(path: Any) -> Any:
    from tessera.store import default_store_path

    p = path or default_store_path()
    import os

    return p if os.path.exists(p) else None


def cmd_results(args: argparse.Namespace, out: Console, err: Console) -> int:
    from tessera.cli import EXIT_OK

    action = args.results_command
    if action == "export":
        from tessera.cli import _Usage, check_output_file

        try:
            fmt = results_mod.export_format(args.out, args.format)
        except ValueError as e:
            raise _Usage(str(e)) from None
        check_output_file("OUT", args.out)
        p = results_mod.export(args.store, args.out, fmt, args.sweep)
        err.print(f"wrote {p}", markup=False, highlight=False)
        return EXIT_OK
    with open_store(args.store, create=False) as st:
        if action == "ls" and args.failures:
            rows = [(f["sweep"], f["run_id"], f["kind"], f["error"]) for f in st.failures(args.sweep)]
            listing.emit(out, ("sweep", "run_id", "kind", "error"), rows, args.format)
        elif action == "ls" and args.sweep is None:
            rows = [(s["name"], s["runs"], s["stored"], s["failed"], s["updated"], s["origin"]) for s in st.sweeps()]
            listing.emit(out, ("sweep", "runs", "stored", "failed", "updated", "file"), rows, args.format,
                         title=f"{st.path}: {st.count()} runs stored")
        elif action == "ls":
            df = results_mod.load(st, sweep=args.sweep)
            axes = [c for c in df.columns if c.startswith("axis.")]
            if args.format == "table":
                rows = [(row["run_id"], *[str(row[a]) for a in axes], f"{row['wall_s']:.2f}") for _, row in df.iterrows()]
            else:
                rows = [(row["run_id"], *[_plain(row[a]) for a in axes], float(row["wall_s"])) for _, row in df.iterrows()]
            listing.emit(out, ["run_id", *[a[len("axis."):] for a in axes], "wall_s"], rows, args.format,
                         title=f"{args.sweep}: {len(df)} runs stored")
        elif action == "show":
            rec = st.get(args.run_id)
            if args.json:
                sys.stdout.write(json.dumps(rec, indent=2, sort_keys=True) + "\n")
                return EXIT_OK
            info = {"run_id": rec["run_id"], "sweep": rec["sweep"] or "", **{f"axis {k}": v for k, v in rec["point"].items()},
                    "machine": rec["machine"], "source": summary.readable_source(rec["result"]["source"]),
                    "seed": rec["result"]["seed"],
                    "simulated in": f"{rec['wall_s']:.2f} s on {rec['host']}", "finished": rec["finished"]}
            out.print(summary.key_value_table(info, title="run"))
            out.print("")
            summary.print_result(results_mod.get(st, rec["run_id"]), out, all_stats=args.all)
        elif action == "forget":
            if st.sweep_spec(args.sweep) is None:
                names = [s["name"] for s in st.sweeps()]
                raise KeyError(f"no sweep {args.sweep!r} in {st.path} (sweeps: {', '.join(names) or 'none'})")
            n = st.delete_sweep(args.sweep)
            err.print(f"forgot sweep {args.sweep} ({n} runs; their results stay in the store)", markup=False)
    return EXIT_OK


def _plain(v: Any) -> Any:
    """A DataFrame cell as a JSON value (numpy scalars become Python numbers)."""
    return v.item() if hasattr(v, "item") else v


def cmd_bench_sweep(args: argparse.Namespace, out: Console, err: Console) -> int:
    from tessera.cli import EXIT_OK
    from tessera.result import write_atomic
    from tessera.sweeps.bench import CPU_ACCESSES, TINY_ACCESSES, bench_sweep

    quick = args.quick
    res = bench_sweep(
        tiny_runs=40 if quick else 200,
        tiny_accesses=TINY_ACCESSES,
        cpu_runs=4 if quick else 8,
        cpu_accesses=(CPU_ACCESSES // 10) if quick else CPU_ACCESSES,
        status=(lambda m: err.print(m, markup=False, highlight=False)) if should_show(sys.stderr) else None,
    )
    t = Table(title="tessera bench --sweep", header_style="bold")
    t.add_column("measurement")
    t.add_column("result", justify="right")
    for key in sorted(k for k in res if k.startswith("tiny_")):
        m = res[key]
        jobs = key.split("_")[1]
        t.add_row(f"{m['runs']} tiny runs ({m['mean_run_s'] * 1e3:.0f} ms each), {jobs} worker(s): time outside the simulator",
                  f"{100 * m['outside_simulator']:.1f}%")
    w = res["workers"]
    t.add_row(f"CPU-bound sweep ({res['cpu_1']['runs']} runs): wall on 1 worker", f"{res['cpu_1']['wall_s']:.2f} s")
    if f"cpu_{w}" in res and w != 1:
        t.add_row(f"same on {w} workers", f"{res[f'cpu_{w}']['wall_s']:.2f} s")
        t.add_row(f"speed-up 1 → {w} workers", f"{res['speedup']:.2f}x")
    out.print(t)
    if args.json:
        doc = {"tessera_version": __import__("tessera").__version__, "cpus": __import__("os").cpu_count(), **res}
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return EXIT_OK
