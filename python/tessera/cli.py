"""The ``tessera`` command.

::

    tessera config list | show PRESET|FILE [--set k=v ...]
    tessera run (--preset NAME | --config FILE) (--trace FILE | --synthetic PATTERN ... | --workload NAME [--param k=v ...]) [--out FILE] ...
    tessera workloads [NAME] [--json]
    tessera trace convert IN OUT [--to native|lackey] | info FILE [--json]     (--to unless OUT ends .tess/.lackey/.txt)
    tessera trace record-workload NAME [--param k=v ...] [--seed N] -o FILE
    tessera trace record -o FILE [--backend lackey|qemu] [--skip N] [--max-accesses N] [--no-ifetch] -- PROGRAM ARGS...
    tessera compare BASE.json OTHER.json [--force] [--json]     (same program required unless --force)
    tessera sweep FILE [--store PATH] [--jobs N | --scheduler tcp://HOST:PORT] [--force] [--dry-run]
    tessera results ls|show|export|forget ... [--store PATH]
    tessera plot bars|lines --y STAT [--store PATH] [--sweep NAME] [--x COL] [--hue COL] [--baseline V] -o OUT.svg
    tessera list | stats [--preset NAME] | bench [--accesses N] [--quick] [--workload NAME | --generators | --organisations | --page-tables [--rounds N]]
    tessera reproduce mmu-analysis [--quick] [-o DIR] [--store PATH] [--jobs N] [--scheduler tcp://...] [--force] [--timing-models ooo,interval]
    tessera reproduce mosaic-pages [--quick] [-o DIR] [--store PATH] [--jobs N] [--scheduler tcp://...] [--force]
    tessera reproduce gtsm [--quick] [-o DIR] [--store PATH] [--jobs N] [--scheduler tcp://...] [--force]
    tessera reproduce mosaic-motivation [--quick] [-o DIR] [--store PATH] [--jobs N] [--scheduler tcp://...] [--force]
    tessera reproduce mosaic-gpu [--quick] [-o DIR] [--store PATH] [--jobs N] [--scheduler tcp://...] [--force]
    tessera reproduce uvm-batching [--quick] [-o DIR] [--store PATH] [--jobs N] [--scheduler tcp://...] [--force]
    tessera gtsm montecarlo [--figure fig3|fig7|table2|fig14 ...] [--seed N] [--slices N] [--threads N]
                            [--json] [-o DIR]
    tessera gpu kernels [NAME] [--json] | trace KERNEL [--param k=v ...] [--xz] -o DIR
                | info (KERNEL [--param k=v ...] | --trace DIR) [--page-size 4KiB|64KiB|2MiB] [--json]

Exit status: 0 on success, 2 for config and usage errors (a missing or
unreadable machine, sweep or result file, an output file in a missing
directory, a run or sweep the store does not have, and results too different
to compare), 3 for trace errors (a missing trace file included),
4 when the simulated machine runs out of memory, 5 when an external tool
(valgrind, qemu, gcc, the recorded program) is missing or fails, 6 when the
results store is damaged or not a Tessera store, 1 for any other error
(including a sweep with failed runs), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from rich.console import Console
from rich.table import Table

from tessera import api, cli_gpu, cli_plot, cli_sweep, listing, summary
from tessera.errors import (
    ConfigError,
    IncomparableResults,
    ResultFileError,
    SimulatedOutOfMemory,
    StoreError,
    TesseraError,
    ToolError,
    TraceError,
)
from tessera.progress import ProgressBar, should_show
from tessera.result import FORMATS, STATS_SCHEMA, write_atomic

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CONFIG = 2
EXIT_TRACE = 3
EXIT_OOM = 4
EXIT_TOOL = 5
EXIT_STORE = 6
EXIT_INTERRUPTED = 130

#: `tessera bench`: the standard streams and machines.
BENCH_PRESETS = ("tlb_only", "sandy_bridge")
BENCH_PATTERNS = ("uniform", "sequential", "hotcold")
BENCH_FOOTPRINT = "8GiB"
BENCH_ACCESSES = 50_000_000
BENCH_QUICK_ACCESSES = 1_000_000


class _Usage(Exception):
    """A command-line mistake found after parsing (exit 2)."""


def check_output_file(option: str, path: Any) -> None:
    """A file the command will write: its directory must exist and it must
    not be a directory, checked before any work so the mistake costs nothing
    (exit 2) and never surfaces as an OS error about a temporary file."""
    p = Path(path)
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise _Usage(f"{option} {path}: directory {str(parent)!r} does not exist")
    if p.is_dir():
        raise _Usage(f"{option} {path}: is a directory; name a file")


def _command_parser(parser: argparse.ArgumentParser, args: argparse.Namespace) -> argparse.ArgumentParser:
    """The (sub)parser of the command that ``args`` ran, so a usage error
    shows that command's usage (``tessera trace record ...``), not the top level's."""
    p = parser
    dests = ["command", f"{getattr(args, 'command', '')}_command"]
    for dest in dests:
        name = getattr(args, dest, None)
        sub = next((a for a in p._actions if isinstance(a, argparse._SubParsersAction)), None)
        if name is None or sub is None or name not in sub.choices:
            break
        p = sub.choices[name]
    return p


# ------------------------------------------------------------------ arguments

def _count(text: str) -> int:
    """Every count option: the core's count syntax (:func:`tessera.parse_count`)."""
    try:
        return api.parse_count(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _size(text: str) -> int:
    """Every size option: the core's size syntax (:func:`tessera.parse_size`)."""
    try:
        return api.parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _seed(text: str) -> int:
    """Every --seed: a whole number from 0 to 2^64 - 1 (the core's seeds)."""
    try:
        seed = int(text)
    except ValueError:
        seed = None
    problem = api.seed_problem(seed)
    if seed is None or problem is not None:
        raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {api.SEED_MAX}, not {text!r}")
    return seed


def _add_set(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override one config key, e.g. --set mmu.tlb.l2_tlb.entries=1024 (repeatable)",
    )


def _add_params(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--param",
        dest="params",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set a workload parameter, e.g. --param table=4GiB (repeatable; see `tessera workloads NAME`)",
    )


def _params(items: Sequence[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _Usage(f"--param {item!r}: expected KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def _add_machine(p: argparse.ArgumentParser, required: bool) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--preset", metavar="NAME", help="a shipped machine (see `tessera config list`)")
    g.add_argument("--config", metavar="FILE", help="a machine description in TOML")
    _add_set(p)


def _add_champsim(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("ChampSim input (ignored for other formats)")
    g.add_argument(
        "--champsim-ifetch",
        action="store_true",
        default=None,
        help="add an instruction fetch at each instruction's ip (default: data accesses only)",
    )
    g.add_argument(
        "--champsim-access-size",
        type=_size,
        default=None,
        metavar="BYTES",
        help="size of every ChampSim load and store, 1-64 (default 8)",
    )


def _champsim_kwargs(args: argparse.Namespace) -> dict[str, Any]:
    size = getattr(args, "champsim_access_size", None)
    if size is not None and not 1 <= size <= 64:
        raise _Usage(f"--champsim-access-size (champsim.access_size) must be between 1 and 64 bytes, not {size}")
    return {
        "champsim_ifetch": getattr(args, "champsim_ifetch", None),
        "champsim_access_size": getattr(args, "champsim_access_size", None),
    }


def build_parser() -> argparse.ArgumentParser:
    defaults = api.synthetic_defaults()
    parser = argparse.ArgumentParser(
        prog="tessera",
        description="Mechanism-level simulator of address translation and memory management.",
    )
    parser.add_argument("--version", action="version", version=f"tessera {api._core.__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    # config
    p_config = sub.add_parser("config", help="list presets or show a resolved machine description")
    sub_config = p_config.add_subparsers(dest="config_command", metavar="ACTION")
    sub_config.required = True
    sub_config.add_parser("list", help="list the shipped presets")
    p_show = sub_config.add_parser("show", help="print a preset or file resolved, with every default, as TOML")
    p_show.add_argument("machine", metavar="PRESET|FILE", help="a preset name or a machine TOML file")
    _add_set(p_show)

    # run
    p_run = sub.add_parser("run", help="simulate a trace or a synthetic stream on a machine")
    _add_machine(p_run, required=True)
    src = p_run.add_mutually_exclusive_group(required=True)
    src.add_argument(
        "--trace",
        metavar="FILE",
        help="a trace: native .tess, lackey text, or ChampSim (.xz/.gz), detected from its first bytes",
    )
    src.add_argument(
        "--synthetic",
        metavar="PATTERN",
        help="a built-in stream: uniform, sequential or hotcold",
    )
    src.add_argument("--workload", metavar="NAME", help="a built-in workload (see `tessera workloads`; on a GPU machine, a GPU kernel)")
    src.add_argument(
        "--apps",
        metavar="K1,K2,...",
        help="GPU machines: built-in GPU kernels run together, each in its own address space on its share of the SMs",
    )
    _add_params(p_run)
    p_run.add_argument(
        "--accesses",
        type=_count,
        default=None,
        metavar="N",
        help=f"accesses of the synthetic stream, e.g. 1e6 or 10M (default {defaults['accesses']:,})",
    )
    p_run.add_argument(
        "--footprint",
        type=_size,
        default=None,
        metavar="SIZE",
        help=f"bytes the synthetic stream covers, e.g. 1GiB (default {api.format_size(defaults['footprint'])})",
    )
    p_run.add_argument(
        "--warmup",
        default=None,
        metavar="N[ UNIT]",
        help="warm the machine on the first N accesses (or 'N instructions'), then restart every counter "
        "and measure the rest; N like 1000000, 1e6 or 1M (default: no warm-up)",
    )
    p_run.add_argument("--seed", type=_seed, default=0, metavar="N", help="seed of every random choice (default 0)")
    p_run.add_argument("--out", metavar="FILE", help="write the result to FILE (written only if the run succeeds)")
    p_run.add_argument(
        "--format",
        choices=FORMATS,
        default=None,
        help="result file format (default: csv if FILE ends in .csv, else json)",
    )
    p_run.add_argument("--all", action="store_true", help="also print every counter and derived metric")
    p_run.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table (warnings still go to stderr)")
    _add_champsim(p_run)

    # trace
    p_trace = sub.add_parser("trace", help="convert, summarise or record traces")
    sub_trace = p_trace.add_subparsers(dest="trace_command", metavar="ACTION")
    sub_trace.required = True
    p_conv = sub_trace.add_parser(
        "convert", help="convert a trace (native, lackey or ChampSim) to native .tess or lackey text"
    )
    p_conv.add_argument("input", metavar="IN", help="the trace to read; its format is detected from its first bytes")
    p_conv.add_argument("output", metavar="OUT", help="the trace to write (only if the whole input converts)")
    p_conv.add_argument(
        "--to",
        choices=("native", "lackey"),
        default=None,
        help="output format; needed unless OUT ends in "
        + ", ".join(f"{s} ({f})" for s, f in api.TRACE_SUFFIXES.items()),
    )
    _add_champsim(p_conv)
    p_recw = sub_trace.add_parser("record-workload", help="write a built-in workload's access stream to a native trace")
    p_recw.add_argument("workload", metavar="NAME", help="a built-in workload (see `tessera workloads`)")
    _add_params(p_recw)
    p_recw.add_argument("--seed", type=_seed, default=0, metavar="N", help="seed of the workload (default 0)")
    p_recw.add_argument("-o", "--output", required=True, metavar="FILE", help="the .tess file to write")
    p_recw.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary line")
    p_info = sub_trace.add_parser("info", help="summarise a trace (records, instructions, footprint)")
    p_info.add_argument("file", metavar="FILE", help="a trace: native .tess, lackey text or ChampSim")
    p_info.add_argument("--json", action="store_true", help="print JSON instead of a table")
    _add_champsim(p_info)
    p_rec = sub_trace.add_parser(
        "record",
        help="run a program and record its memory accesses into a native trace",
        description="Run PROGRAM under Valgrind lackey (default) or QEMU user mode with Tessera's "
        "plugin and stream its accesses into a native .tess trace. The program's own output goes "
        "to this terminal; Tessera's summary goes to stderr. See docs/recording.md.",
    )
    p_rec.add_argument("-o", "--output", required=True, metavar="FILE", help="the native trace to write")
    p_rec.add_argument(
        "--backend",
        choices=("lackey", "qemu"),
        default="lackey",
        help="lackey: Valgrind (apt-get install valgrind); qemu: qemu-x86_64 with Tessera's plugin, "
        "much faster (apt-get install qemu-user gcc); default lackey",
    )
    p_rec.add_argument("--skip", type=_count, default=0, metavar="N", help="drop the first N accesses")
    p_rec.add_argument(
        "--max-accesses", type=_count, default=None, metavar="N", help="stop the program after N accesses"
    )
    p_rec.add_argument(
        "--no-ifetch",
        dest="ifetch",
        action="store_false",
        help="leave instruction fetches out (data accesses carry the instruction counts)",
    )
    p_rec.add_argument("-q", "--quiet", action="store_true", help="no progress counter and no summary")
    p_rec.add_argument(
        "program", nargs=argparse.REMAINDER, metavar="-- PROGRAM ARGS", help="the program to run and its arguments"
    )

    # workloads
    p_wl = sub.add_parser("workloads", help="list the built-in workloads, or one workload's parameters")
    p_wl.add_argument("name", nargs="?", metavar="NAME", help="show this workload's parameters")
    p_wl.add_argument("--json", action="store_true", help="print JSON instead of a table")

    # compare
    p_cmp = sub.add_parser(
        "compare",
        help="Equation 1 of the scale-out MMU study between two results",
        description="Compare two runs of the same program on two machines (e.g. 4 KiB pages vs THP). "
        "The results must have the same source (trace contents, or workload and parameters, or "
        "synthetic stream) and the same instruction count; --force compares anyway, with a warning.",
    )
    p_cmp.add_argument("base", metavar="BASE.json", help="the baseline result (tessera run --out)")
    p_cmp.add_argument("other", metavar="OTHER.json", help="the result to compare with the baseline")
    p_cmp.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p_cmp.add_argument(
        "--force", action="store_true", help="compare results of different programs (prints what differs)"
    )

    # list / stats / bench
    sub.add_parser("list", help="list the mechanisms of every family")
    p_stats = sub.add_parser("stats", help="list every stat a machine reports, with units")
    _add_machine(p_stats, required=False)
    listing.add_format(p_stats)
    p_bench = sub.add_parser("bench", help="measure simulation speed on the standard synthetic streams")
    p_bench.add_argument(
        "--accesses",
        type=_count,
        default=None,
        metavar="N",
        help=f"accesses per stream (default {BENCH_ACCESSES:,}; {BENCH_QUICK_ACCESSES:,} with --quick)",
    )
    p_bench.add_argument("--quick", action="store_true", help="a short run, to check that everything works")
    p_bench.add_argument("--json", metavar="FILE", help="also save the measurements as JSON")
    wsel = p_bench.add_mutually_exclusive_group()
    wsel.add_argument(
        "--workload",
        metavar="NAME",
        help="time this workload's generator alone, then simulating it on --preset (default tlb_only)",
    )
    wsel.add_argument(
        "--generators",
        action="store_true",
        help="time every built-in workload's generator alone, at its default parameters",
    )
    wsel.add_argument(
        "--sweep",
        action="store_true",
        help="measure the sweep machinery: dispatch overhead on 200 tiny runs, and 1 vs 2 worker scaling",
    )
    wsel.add_argument(
        "--organisations",
        action="store_true",
        help="time tlb_only with its 4 KiB TLBs organised as set_assoc, coalescing and mosaic (arity 4, 64), interleaved",
    )
    wsel.add_argument(
        "--page-tables",
        action="store_true",
        help="time gtsm_ptlsim with 4 KiB pages against GT-PDEs (GT-PDE-4MB, GT-PDE-1MB, P-GT-PDE-2MB), interleaved",
    )
    wsel.add_argument(
        "--against",
        metavar="REV",
        help="A/B: build git revision REV in its own environment and time it against this build, interleaved, "
        "on the standard streams and real traces, with equal counters required",
    )
    wsel.add_argument(
        "--gpu",
        action="store_true",
        help="time the GPU machine (mosaic_gpu, GPU-MMU, 4 KiB pages, demand paging) on memory-heavy kernels: "
        "warp and thread instructions and simulated cycles per second",
    )
    wsel.add_argument(
        "--pycachesim",
        action="store_true",
        help="time tlb_only's TLB work against pycachesim's C core on real traces (pip install pycachesim), "
        "with equal hit and miss counts required",
    )
    p_bench.add_argument(
        "--rounds", type=int, default=3, metavar="N", help="interleaved rounds for --organisations, --page-tables and --against (default 3)"
    )
    p_bench.add_argument(
        "--this",
        metavar="REV",
        help="with --against: build REV for this side too, instead of using the installed build",
    )
    p_bench.add_argument(
        "--trace",
        action="append",
        default=None,
        metavar="FILE",
        help="with --against or --pycachesim: a trace to time (repeatable; default: every .tess file in "
        "the bench-traces cache, see bench/README.md)",
    )
    p_bench.add_argument(
        "--machines", metavar="LIST", help="with --against: comma-separated presets (default tlb_only,sandy_bridge); "
        "with --gpu: GPU presets, interleaved, each one's speed against the first's (default mosaic_gpu)"
    )
    p_bench.add_argument(
        "--patterns",
        metavar="LIST",
        help="with --against: comma-separated synthetic patterns (default uniform,hotcold,sequential; 'none' for traces only)",
    )
    p_bench.add_argument("--repo", metavar="DIR", help="with --against: the git checkout to take revisions from (default: the current one)")
    _add_params(p_bench)
    p_bench.add_argument("--preset", default="tlb_only", metavar="NAME", help="machine for --workload (default tlb_only)")

    # sweep / results
    cli_sweep.add_parsers(sub)
    # plot
    cli_plot.add_parser(sub)

    # gtsm
    p_gtsm = sub.add_parser("gtsm", help="GTSM (superpages over memory with retired pages): Monte Carlo capacity study")
    sub_gtsm = p_gtsm.add_subparsers(dest="gtsm_command", metavar="ACTION")
    sub_gtsm.required = True
    p_mc = sub_gtsm.add_parser(
        "montecarlo",
        help="Figs. 3, 7, 14 and Table 2 of the GTSM paper by Monte Carlo, with 95%% intervals (docs/gtsm.md)",
    )
    p_mc.add_argument("--figure", action="append", choices=("fig3", "fig7", "table2", "fig14"), metavar="NAME",
                      help="fig3, fig7, table2 or fig14 (repeatable; default all four)")
    p_mc.add_argument("--seed", type=_seed, default=1, help="seed of the memory samples (default 1)")
    p_mc.add_argument("--slices", type=_count, metavar="N",
                      help="sample per point, in the largest unit of each figure (default 2^20 = 1,048,576)")
    p_mc.add_argument("--threads", type=int, metavar="N",
                      help="threads (default: every core; the numbers do not depend on it)")
    p_mc.add_argument("--json", action="store_true", help="print the report as JSON instead of tables")
    p_mc.add_argument("-o", "--out", metavar="DIR",
                      help="write report.json, montecarlo.md, a CSV per table and a PNG and SVG per figure")

    cli_gpu.add_parser(sub)

    # reproduce
    p_rep = sub.add_parser("reproduce", help="re-run a paper's study and write a report comparing with the paper")
    p_rep.add_argument("study", choices=["mmu-analysis", "mosaic-pages", "gtsm", "mosaic-motivation", "mosaic-gpu",
                                             "uvm-batching"],
                       help="mmu-analysis: the scale-out MMU study; mosaic-pages: Mosaic Pages' Fig. 6, Tables 3 and 4; "
                       "gtsm: GTSM superpages' Figs. 11-18 and retired pages; mosaic-motivation: the Mosaic GPU "
                       "paper's Figs. 3 and 4, bloat and L2 TLB vs page-walk cache; mosaic-gpu: the same paper's "
                       "evaluation, Mosaic against GPU-MMU and an ideal TLB (Figs. 8-16); uvm-batching: the batch-aware "
                       "unified-memory paper's Figs. 11-18 (TO, UE, PCIe compression, ETC, ratio, handling time)")
    p_rep.add_argument("--quick", action="store_true", help="smaller sweep, a few minutes on 2 cores")
    p_rep.add_argument("--tiny", action="store_true", help=argparse.SUPPRESS)  # tests only: numbers mean nothing
    p_rep.add_argument("-o", "--out", metavar="DIR", help="report directory (default tessera-results/<sweep name>)")
    p_rep.add_argument("--store", metavar="PATH", help="results store (default DIR/store.sqlite); finished runs are reused")
    p_rep.add_argument("--jobs", type=int, metavar="N", help="simulations in parallel (default: all cores)")
    p_rep.add_argument("--scheduler", metavar="tcp://HOST:PORT", help="run on an existing Dask scheduler")
    p_rep.add_argument("--force", action="store_true", help="re-run simulations already in the store")
    p_rep.add_argument(
        "--warmup",
        metavar="N[ UNIT]",
        help="mmu-analysis only: one warm-up for every workload ('0' for none); default: about 20%% of each "
        "workload's instructions (mosaic-pages has no warm-up: it counts every miss, as the paper's gem5 runs; "
        "gtsm has its own warm-ups)",
    )
    p_rep.add_argument(
        "--timing-models",
        metavar="LIST",
        help="mmu-analysis only: comma-separated CPU timing models to run, the report's main one first "
        "(default ooo,interval; e.g. interval for the additive model alone)",
    )
    return parser


# ------------------------------------------------------------------- commands


def _machine(args: argparse.Namespace, default: Optional[str] = None) -> Any:
    if getattr(args, "config", None):
        return Path(args.config)
    return args.preset or default


def _out(console: Console, text: str) -> None:
    console.print(text, markup=False, highlight=False, soft_wrap=True)


def cmd_config(args: argparse.Namespace, out: Console) -> int:
    if args.config_command == "list":
        table = Table(box=None, show_header=True, header_style="bold")
        table.add_column("preset")
        table.add_column("summary")
        for name, text in api.presets().items():
            table.add_row(name, text)
        out.print(table)
        return EXIT_OK
    arg = args.machine
    looks_like_file = os.path.exists(arg) or "/" in arg or os.sep in arg or arg.endswith(".toml")
    config: Any = Path(arg) if arg not in api.presets() and looks_like_file else arg
    text = api.resolve_config(config, args.overrides)
    sys.stdout.write(text)
    return EXIT_OK


def _machine_kind(machine: Any, overrides: Any) -> str:
    from tessera.config import loads_toml

    return str(loads_toml(api.resolve_config(machine, overrides or [])).get("machine", {}).get("kind", "cpu"))


def cmd_run(args: argparse.Namespace, out: Console, err: Console) -> int:
    if _machine_kind(_machine(args), args.overrides) == "gpu":
        return cmd_run_gpu(args, out, err)
    if args.apps is not None:
        raise _Usage("--apps runs GPU kernels: choose a GPU machine (--preset mosaic_gpu or uvm_gpu)")
    if args.synthetic is None and (args.accesses is not None or args.footprint is not None):
        raise _Usage("--accesses and --footprint apply only to --synthetic streams")
    if args.workload is None and args.params:
        raise _Usage("--param applies only to --workload")
    fmt = _result_format(args)

    synthetic = None
    if args.synthetic is not None:
        synthetic = {"pattern": args.synthetic}
        if args.accesses is not None:
            synthetic["accesses"] = args.accesses
        if args.footprint is not None:
            synthetic["footprint"] = args.footprint
    machine = _machine(args)
    params = _params(args.params) if args.workload else None
    run = lambda progress: api.simulate(  # noqa: E731
        machine,
        args.trace,
        synthetic=synthetic,
        workload=args.workload,
        params=params,
        overrides=args.overrides,
        seed=args.seed,
        progress=progress,
        warmup=args.warmup,
        **_champsim_kwargs(args),
    )
    if should_show(sys.stderr, args.quiet):
        if args.trace:
            label = os.path.basename(args.trace)
        elif args.workload:
            label = args.workload
        else:
            label = f"synthetic {args.synthetic}"
        with ProgressBar(label, console=err) as bar:
            result = run(bar)
    else:
        result = run(None)

    return _emit_result(result, args, fmt, out, err)


def _result_format(args: argparse.Namespace) -> Optional[str]:
    """The format of `--out` (checked writable), or None without it."""
    fmt: Optional[str] = args.format
    if args.out is not None:
        fmt = fmt or ("csv" if Path(args.out).suffix.lower() == ".csv" else "json")
        check_output_file("--out", args.out)
    elif fmt is not None:
        raise _Usage("--format needs --out FILE")
    return fmt


def _emit_result(result: Any, args: argparse.Namespace, fmt: Optional[str], out: Console, err: Console) -> int:
    """Save the result if asked, and print its summary (or, quiet, its warnings)."""
    if args.out is not None:
        result.save(args.out, fmt)
    if not args.quiet:
        summary.print_result(result, out, all_stats=args.all)
        if args.out is not None:
            err.print(f"wrote {args.out}", markup=False, highlight=False)
    else:
        # Quiet drops the summary, not what the run could not measure.
        for w in result.warnings:
            err.print(f"tessera: warning: {w}", markup=False, highlight=False, soft_wrap=True)
    return EXIT_OK


def cmd_run_gpu(args: argparse.Namespace, out: Console, err: Console) -> int:
    """`tessera run` on a GPU machine: GPU applications, not an access stream."""
    from tessera import gpu

    if args.synthetic is not None or args.accesses is not None or args.footprint is not None:
        raise _Usage("a GPU machine runs GPU applications: give --apps, --workload KERNEL or --trace DIR (an Accel-Sim trace directory)")
    if args.warmup is not None:
        raise _Usage("--warmup applies to CPU machines")
    if args.params and args.workload is None:
        raise _Usage("--param applies only to --workload")
    apps: list[Any]
    if args.apps is not None:
        apps = [a.strip() for a in args.apps.split(",") if a.strip()]
        if not apps:
            raise _Usage("--apps needs at least one GPU kernel name")
    elif args.workload is not None:
        apps = [{"kernel": args.workload, "params": _params(args.params)}]
    else:
        apps = [{"trace": args.trace}]
    fmt = _result_format(args)
    if should_show(sys.stderr, args.quiet):
        err.print(f"tessera: running {len(apps)} GPU application(s) on {_machine(args)}...", markup=False, highlight=False)
    result = gpu.simulate_gpu(_machine(args), apps, overrides=args.overrides, seed=args.seed)
    return _emit_result(result, args, fmt, out, err)


def cmd_record(args: argparse.Namespace, err: Console) -> int:
    command = list(args.program)
    if command and command[0] == "--":
        command = command[1:]
    if not command:
        raise _Usage("trace record needs a program to run: tessera trace record -o FILE -- PROGRAM ARGS...")
    check_output_file("--output", args.output)

    def status(msg: str) -> None:
        if not args.quiet:
            err.print(f"tessera: {msg}", markup=False, highlight=False, soft_wrap=True)

    kwargs: dict[str, Any] = dict(
        backend=args.backend,
        skip=args.skip,
        max_accesses=args.max_accesses,
        ifetch=args.ifetch,
        status=status,
    )
    # Treat SIGTERM like Ctrl-C: the core then stops the program and removes
    # the half-written trace instead of dying with it.
    def _term(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _term)
    if should_show(sys.stderr, args.quiet):
        with ProgressBar(f"recording {os.path.basename(command[0])} ({args.backend})", console=err) as bar:
            s = api.record(args.output, command, progress=bar, **kwargs)
    else:
        s = api.record(args.output, command, **kwargs)
    for w in s.get("warnings", []):
        err.print(f"tessera: warning: {w}", markup=False, highlight=False, soft_wrap=True)
    if not args.quiet:
        rate = s.get("accesses_per_sec", 0.0)
        err.print(
            f"tessera: recorded {s.get('records', 0):,} accesses ({s.get('loads', 0):,} loads, "
            f"{s.get('stores', 0):,} stores, {s.get('ifetches', 0):,} fetches), "
            f"{s.get('instructions', 0):,} instructions"
            + (f", skipped {s['skipped']:,}" if s.get("skipped") else "")
            + (" (stopped at --max-accesses)" if s.get("stopped_early") else "")
            + f" -> {args.output} ({s.get('bytes', 0):,} bytes) in {s.get('seconds', 0.0):.2f} s, "
            f"{rate / 1e6:.2f} M accesses/s with {args.backend}",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )
    return EXIT_OK


def cmd_trace(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.trace_command == "record":
        return cmd_record(args, err)
    if args.trace_command == "record-workload":
        params = _params(args.params)
        check_output_file("--output", args.output)
        if should_show(sys.stderr, args.quiet):
            with ProgressBar(f"record {args.workload}", console=err) as bar:
                s = api.record_workload(args.workload, args.output, params, seed=args.seed, progress=bar)
        else:
            s = api.record_workload(args.workload, args.output, params, seed=args.seed)
        if not args.quiet:
            _out(
                out,
                f"{args.workload} -> {args.output}: {s['records']:,} records, "
                f"{s['instructions']:,} instructions, {s['bytes']:,} bytes",
            )
        return EXIT_OK
    if args.trace_command == "convert":
        check_output_file("OUT", args.output)
        to = args.to
        if to is None:
            to = api.trace_format_for(args.output)
            if to is None:
                raise _Usage(api.unknown_suffix_message(args.output))
        s = api.convert_trace(args.input, args.output, to, **_champsim_kwargs(args))
        if args.to is None:
            ext = os.path.splitext(args.output)[1]
            err.print(f"tessera: wrote {to} format, chosen by the {ext} extension (--to chooses)",
                      markup=False, highlight=False)
        _out(
            out,
            f"{args.input} ({s.get('from')}) -> {args.output} ({s.get('to')}): "
            f"{s.get('records', 0):,} records, {s.get('instructions', 0):,} instructions, "
            f"{s.get('bytes_in', 0):,} -> {s.get('bytes_out', 0):,} bytes",
        )
        return EXIT_OK
    info = api.trace_info(args.file, **_champsim_kwargs(args))
    if args.json:
        sys.stdout.write(json.dumps(info, sort_keys=True, indent=2) + "\n")
    else:
        if "footprint_bytes" in info:
            info["footprint"] = api.format_size(info.pop("footprint_bytes"))
        if "dependent_records" in info and info["dependent_records"] is None:
            info["dependent_records"] = "none carried (the format has no dependencies)"
        order = ["format", "records", "instructions", "loads", "stores", "ifetches", "asids", "pages_4k", "regions_2m"]
        info = {k: info[k] for k in order if k in info} | {k: v for k, v in info.items() if k not in order}
        out.print(summary.key_value_table(info, title=args.file))
    return EXIT_OK


def cmd_workloads(args: argparse.Namespace, out: Console) -> int:
    return print_listing(api.workloads(), args.name, args.json, out, kind="workload", size="footprint")


def print_listing(listing: dict[str, dict], name: Optional[str], as_json: bool, out: Console, *,
                  kind: str, size: str) -> int:
    """`tessera workloads` and `tessera gpu kernels`: every generator of a
    listing (``{name: {"summary", "params", "default_footprint"}}``) in a
    table, or one generator's parameters; ``kind`` names a generator and
    ``size`` its default footprint's column."""
    if name is not None:
        if name not in listing:
            raise _Usage(f"unknown {kind} {name!r} (allowed: {', '.join(listing)})")
        listing = {name: listing[name]}
    if as_json:
        sys.stdout.write(json.dumps(listing, sort_keys=True, indent=2) + "\n")
        return EXIT_OK
    if name is None:
        table = Table(box=None, header_style="bold")
        table.add_column(kind.split()[-1])
        table.add_column(size, justify="right")
        table.add_column("summary")
        table.add_column("parameters (defaults)")
        for n, w in listing.items():
            params = " ".join(f"{p['name']}={p['default']}" for p in w["params"])
            table.add_row(n, api.format_size(w["default_footprint"]), w["summary"], params)
        out.print(table)
        return EXIT_OK
    w = listing[name]
    _out(out, f"{name}: {w['summary']}")
    _out(out, f"{size} at the defaults: {api.format_size(w['default_footprint'])}")
    table = Table(box=None, header_style="bold")
    table.add_column("parameter")
    table.add_column("default")
    table.add_column("meaning")
    for p in w["params"]:
        table.add_row(p["name"], p["default"], p["doc"])
    out.print(table)
    return EXIT_OK


def cmd_compare(args: argparse.Namespace, out: Console, err: Console) -> int:
    c = api.compare(args.base, args.other, force=args.force)
    for w in c.get("warnings", []):
        err.print(f"tessera: WARNING (--force): {w}", markup=False, highlight=False, soft_wrap=True)
    if c.get("warnings"):
        err.print("tessera: WARNING: these numbers compare different programs", markup=False, highlight=False)
    if args.json:
        sys.stdout.write(json.dumps(c, sort_keys=True, indent=2) + "\n")
    else:
        out.print(summary.comparison_table(c, args.base, args.other))
    return EXIT_OK


def cmd_list(out: Console) -> int:
    table = Table(box=None, header_style="bold")
    table.add_column("family")
    table.add_column("mechanism")
    table.add_column("summary")
    for family, mechs in api.registry().items():
        for i, (name, text) in enumerate(mechs):
            table.add_row(family if i == 0 else "", name, text)
    out.print(table)
    return EXIT_OK


def cmd_stats(args: argparse.Namespace, out: Console) -> int:
    machine = _machine(args, default="sandy_bridge")
    docs = api.stat_docs(machine, args.overrides)
    kinds = api.stat_kinds(machine, args.overrides)
    rows = [(name, kinds[name], unit, desc) for name, (unit, desc) in docs.items()]
    listing.emit(out, ("stat", "kind", "unit", "description"), rows, args.format,
                 title=f"stats schema {STATS_SCHEMA} (docs/stats.md)")
    return EXIT_OK


def _bench_workloads(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.accesses is not None or args.quick:
        raise _Usage("--accesses and --quick apply to the synthetic streams; size a workload with --param")
    names = list(api.workloads()) if args.generators else [args.workload]
    if args.generators and args.params:
        raise _Usage("--param applies only to --workload")
    params = _params(args.params)
    rows = []
    for name in names:
        g = api.bench_workload(name, params)
        row: dict[str, Any] = {"workload": g["workload"], "generator": g}
        if args.workload:
            row["simulation"] = api.bench(args.preset, workload=name, params=params)
            row["preset"] = args.preset
        rows.append(row)
        if should_show(sys.stderr):
            err.print(f"{name:>18} generator {g['accesses_per_sec'] / 1e6:8.2f} M accesses/s", markup=False)
    table = Table(title="tessera bench: workload generators", header_style="bold")
    table.add_column("workload")
    table.add_column("accesses", justify="right")
    table.add_column("generator M accesses/s", justify="right")
    if args.workload:
        table.add_column(f"simulated on {args.preset}, M accesses/s", justify="right")
    for row in rows:
        g = row["generator"]
        cells = [row["workload"], f"{g['accesses']:,}", f"{g['accesses_per_sec'] / 1e6:.2f}"]
        if "simulation" in row:
            cells.append(f"{row['simulation']['accesses_per_sec'] / 1e6:.2f}")
        table.add_row(*cells)
    out.print(table)
    if args.json:
        doc = {"tessera_version": api._core.__version__, "workloads": rows}
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return EXIT_OK


def cmd_bench(args: argparse.Namespace, out: Console, err: Console) -> int:
    if args.json:
        check_output_file("--json", args.json)
    if args.workload or args.generators:
        return _bench_workloads(args, out, err)
    if args.sweep:
        return cli_sweep.cmd_bench_sweep(args, out, err)
    if args.params:
        raise _Usage("--param applies only to --workload")
    if args.rounds < 1:
        raise _Usage(f"--rounds must be at least 1, got {args.rounds}")
    accesses = args.accesses or (BENCH_QUICK_ACCESSES if args.quick else BENCH_ACCESSES)
    if args.against:
        from tessera.cli_bench import cmd_bench_against

        return cmd_bench_against(args, out, err)
    if args.gpu:
        from tessera.cli_bench import cmd_bench_gpu

        return cmd_bench_gpu(args, out, err)
    if args.pycachesim:
        from tessera.cli_bench import cmd_bench_pycachesim

        return cmd_bench_pycachesim(args, out, err)
    if args.this or args.trace or args.machines or args.patterns or args.repo:
        raise _Usage("--this, --trace, --machines, --patterns and --repo apply only to --against (--trace also to --pycachesim)")
    if args.organisations or args.page_tables:
        from tessera.cli_bench import cmd_bench_variants

        return cmd_bench_variants(args, out, err, BENCH_PATTERNS, accesses, BENCH_FOOTPRINT, page_tables=args.page_tables)
    rows = []
    for preset in BENCH_PRESETS:
        for pattern in BENCH_PATTERNS:
            r = api.bench(
                preset,
                synthetic={"pattern": pattern, "accesses": accesses, "footprint": BENCH_FOOTPRINT},
            )
            row = {"preset": preset, "pattern": pattern, "footprint": BENCH_FOOTPRINT, **r}
            rows.append(row)
            if should_show(sys.stderr):
                err.print(
                    f"{preset:>14} {pattern:<10} {r['accesses_per_sec'] / 1e6:8.2f} M accesses/s",
                    markup=False,
                    highlight=False,
                )
    over = api.format_size(api.parse_size(BENCH_FOOTPRINT))
    table = Table(title=f"tessera bench: {accesses:,} accesses per stream over {over}", header_style="bold")
    table.add_column("machine")
    table.add_column("stream")
    table.add_column("accesses", justify="right")
    table.add_column("seconds", justify="right")
    table.add_column("M accesses/s", justify="right")
    for row in rows:
        table.add_row(
            row["preset"],
            row["pattern"],
            f"{row['accesses']:,}",
            f"{row['seconds']:.3f}",
            f"{row['accesses_per_sec'] / 1e6:.2f}",
        )
    out.print(table)
    if args.json:
        doc = {
            "tessera_version": api._core.__version__,
            "accesses_per_stream": accesses,
            "runs": rows,
        }
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return EXIT_OK


def cmd_gtsm(args: argparse.Namespace, out: Console, err: Console) -> int:
    import time

    from tessera import gtsm

    if args.threads is not None and args.threads < 1:
        raise _Usage(f"--threads must be at least 1, not {args.threads}")
    if args.slices is not None and args.slices < 1:
        raise _Usage(f"--slices must be at least 1, not {args.slices}")
    if args.out is not None and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise _Usage(f"-o {args.out}: exists and is not a directory; the results are a directory")
    parts = list(dict.fromkeys(args.figure)) if args.figure else list(gtsm.PARTS)
    start = time.perf_counter()
    report = gtsm.montecarlo(parts, seed=args.seed, slices=args.slices, threads=args.threads)
    took = time.perf_counter() - start
    if args.json:
        sys.stdout.write(json.dumps(report, sort_keys=True, indent=2) + "\n")
    else:
        _gtsm_tables(report, out)
    if args.out is not None:
        written = gtsm.write(report, args.out)
        err.print(f"tessera: wrote {len(written)} files to {args.out}", markup=False, highlight=False, soft_wrap=True)
    err.print(f"tessera: GTSM Monte Carlo ({', '.join(parts)}) in {took:.1f} s", markup=False, highlight=False)
    return EXIT_OK


def _gtsm_tables(report: dict[str, Any], out: Console) -> None:
    def est(p: dict[str, Any]) -> str:
        exact = "" if p["exact"] is None else f" ({100 * p['exact']:.2f})"
        return f"{100 * p['value']:.2f} [{100 * p['lo']:.2f}, {100 * p['hi']:.2f}]{exact}"

    for part in ("fig3", "fig7", "fig14"):
        fig = report.get(part)
        if fig is None:
            continue
        t = Table(box=None, header_style="bold", title=f"{fig['title']} (%: estimate [95 % CI] (closed form)); "
                  f"{fig['units_per_point']:,} {fig['unit']} per point", title_justify="left")  # fmt: skip
        t.add_column(fig["x_label"] + " (%)", justify="right")
        for s in fig["series"]:
            t.add_column(s["name"], justify="right")
        for i, p0 in enumerate(fig["series"][0]["points"]):
            t.add_row(f"{100 * p0['x']:.2f}", *[est(s["points"][i]) for s in fig["series"]])
        out.print(t)
        out.print()
    t2 = report.get("table2")
    if t2 is not None:
        t = Table(box=None, header_style="bold", title="Table 2: retired-page thresholds (60 % of B-blocks clean)",
                  title_justify="left")  # fmt: skip
        for c in ("mode", "B-block", "threshold %", "paper %", "clean there % [95 % CI]",
                  "paper Fig. 14 threshold %", "superpage share there % [95 % CI] (closed form)"):  # fmt: skip
            t.add_column(c, justify="left" if c == "mode" else "right")
        for r in t2["rows"]:
            t.add_row(r["mode"], f"{r['block_kib']} KiB", f"{100 * r['exact']:.2f}", f"{100 * r['paper']:.1f}",
                      est(r["clean_at_exact"]), f"{100 * r['paper_fig14']:.1f}", est(r["superpage_at_paper_fig14"]))
        out.print(t)


def cmd_reproduce(args: argparse.Namespace, argv: Optional[Sequence[str]], err: Console) -> int:
    from tessera.report import reproduce

    if args.quick and args.tiny:
        raise _Usage("--quick and --tiny are different scales; give one")
    if args.study == "mosaic-pages" and args.warmup is not None:
        raise _Usage("--warmup applies only to mmu-analysis: mosaic-pages has no warm-up "
                     "(it counts every miss from the first access, as the paper's gem5 runs)")
    if args.study == "mosaic-motivation" and args.warmup is not None:
        raise _Usage("--warmup applies only to mmu-analysis: mosaic-motivation runs each GPU kernel from start to end")
    if args.study == "mosaic-gpu" and args.warmup is not None:
        raise _Usage("--warmup applies only to mmu-analysis: mosaic-gpu runs each GPU kernel from start to end")
    if args.study == "uvm-batching" and args.warmup is not None:
        raise _Usage("--warmup applies only to mmu-analysis: uvm-batching runs each GPU kernel from start to end")
    if args.study == "gtsm" and args.warmup is not None:
        raise _Usage("--warmup applies only to mmu-analysis: gtsm warms each workload up on its own share "
                     "of instructions")
    if args.out is not None and os.path.exists(args.out) and not os.path.isdir(args.out):
        raise _Usage(f"-o {args.out}: exists and is not a directory; the report is a directory")
    models = None
    if args.timing_models is not None:
        if args.study != "mmu-analysis":
            raise _Usage(f"--timing-models applies only to mmu-analysis, not to {args.study}")
        from tessera.report.mmu_analysis import MODELS

        models = [m.strip() for m in args.timing_models.split(",")]
        if not models or len(set(models)) != len(models) or any(m not in MODELS for m in models):
            raise _Usage(f"--timing-models {args.timing_models}: give distinct models from {', '.join(MODELS)}")
    command = "tessera " + shlex.join(list(argv) if argv is not None else sys.argv[1:])
    r = reproduce(
        args.study,
        args.out,
        scale="tiny" if args.tiny else ("quick" if args.quick else "full"),
        store=args.store,
        executor=args.scheduler,
        jobs=args.jobs,
        force=args.force,
        progress=should_show(sys.stderr),
        command=command,
        warmup=args.warmup,
        models=models,
    )
    sweep_s = r.timing.get("sweep_s", sum(v for k, v in r.timing.items() if k.endswith("_sweep_s")))
    err.print(
        f"tessera: {int(r.timing['runs'])} runs, sweep {sweep_s:.0f} s, total {r.timing['total_s']:.0f} s "
        f"-> {r.report_md} and {r.report_html}",
        markup=False,
        highlight=False,
        soft_wrap=True,
    )
    return EXIT_OK


# ----------------------------------------------------------------------- main


def _exit_code(e: TesseraError) -> int:
    if isinstance(e, (ConfigError, IncomparableResults, ResultFileError)):
        return EXIT_CONFIG
    if isinstance(e, TraceError):
        return EXIT_TRACE
    if isinstance(e, SimulatedOutOfMemory):
        return EXIT_OOM
    if isinstance(e, ToolError):
        return EXIT_TOOL
    if isinstance(e, StoreError):
        return EXIT_STORE
    return EXIT_ERROR


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Entry point of the ``tessera`` command; returns the exit status."""
    out = Console(highlight=False)
    err = Console(stderr=True, highlight=False)
    parser = build_parser()
    args = parser.parse_args(argv)
    handlers: dict[str, Callable[[], int]] = {
        "config": lambda: cmd_config(args, out),
        "run": lambda: cmd_run(args, out, err),
        "trace": lambda: cmd_trace(args, out, err),
        "workloads": lambda: cmd_workloads(args, out),
        "compare": lambda: cmd_compare(args, out, err),
        "list": lambda: cmd_list(out),
        "stats": lambda: cmd_stats(args, out),
        "bench": lambda: cmd_bench(args, out, err),
        "reproduce": lambda: cmd_reproduce(args, argv, err),
        "gtsm": lambda: cmd_gtsm(args, out, err),
        "gpu": lambda: cli_gpu.cmd_gpu(args, out),
        "sweep": lambda: cli_sweep.cmd_sweep(args, out, err),
        "results": lambda: cli_sweep.cmd_results(args, out, err),
        "plot": lambda: cli_plot.cmd_plot(args, err),
    }
    try:
        return handlers[args.command]()
    except KeyboardInterrupt:
        print("tessera: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except _Usage as e:
        _command_parser(parser, args).print_usage(sys.stderr)
        print(f"tessera: error: {e}", file=sys.stderr)
        return EXIT_CONFIG
    except TesseraError as e:
        print(f"tessera: error: {e}", file=sys.stderr)
        return _exit_code(e)
    except LookupError as e:
        # `tessera results show/ls/export`, `plot --sweep` naming a run or
        # sweep the store lacks: a usage error, the message lists what exists.
        print(f"tessera: error: {e.args[0] if e.args else e}", file=sys.stderr)
        return EXIT_CONFIG
    except BrokenPipeError:
        # `tessera ... | head`: the reader went away; stay quiet.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_ERROR
    except OSError as e:
        print(f"tessera: error: {e}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
