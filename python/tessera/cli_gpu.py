"""``tessera gpu``: GPU applications before the GPU machine runs them
(docs/gpu.md).

::

    tessera gpu kernels [NAME] [--json]
    tessera gpu trace KERNEL [--param k=v ...] [--seed N] [--xz] -o DIR
    tessera gpu info (KERNEL [--param k=v ...] [--seed N] | --trace DIR) [--page-size 4KiB|64KiB|2MiB] [--json]
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["add_parser", "cmd_gpu"]

#: Page sizes ``gpu info`` counts in.
PAGE_SIZES = ("4KiB", "64KiB", "2MiB")


def add_parser(sub: Any) -> None:
    from tessera.cli import _add_params, _seed

    p = sub.add_parser("gpu", help="GPU kernels and Accel-Sim traces: list, write, summarise (docs/gpu.md)")
    sub_gpu = p.add_subparsers(dest="gpu_command", metavar="ACTION")
    sub_gpu.required = True
    p_k = sub_gpu.add_parser("kernels", help="list the built-in GPU kernels, or one kernel's parameters")
    p_k.add_argument("name", nargs="?", metavar="NAME", help="show this kernel's parameters")
    p_k.add_argument("--json", action="store_true", help="print JSON instead of a table")
    p_t = sub_gpu.add_parser("trace", help="generate a built-in GPU kernel and write it as an Accel-Sim trace directory")
    p_t.add_argument("kernel", metavar="KERNEL", help="a built-in GPU kernel (see `tessera gpu kernels`)")
    _add_params(p_t)
    p_t.add_argument("--seed", type=_seed, default=0, metavar="N", help="seed of the kernel's input (default 0)")
    p_t.add_argument("--xz", action="store_true", help="compress each kernel file (kernel-N.traceg.xz)")
    p_t.add_argument("-o", "--output", required=True, metavar="DIR", help="the trace directory to write")
    p_i = sub_gpu.add_parser("info", help="count what a GPU kernel or an Accel-Sim trace does, without a machine")
    p_i.add_argument("kernel", nargs="?", metavar="KERNEL", help="a built-in GPU kernel (or give --trace)")
    _add_params(p_i)
    p_i.add_argument("--seed", type=_seed, default=0, metavar="N", help="seed of the kernel's input (default 0)")
    p_i.add_argument("--trace", metavar="DIR", help="an Accel-Sim trace directory (or its kernelslist.g)")
    p_i.add_argument("--page-size", default="4KiB", choices=PAGE_SIZES, help="page size of the page counts (default 4KiB)")
    p_i.add_argument("--json", action="store_true", help="print JSON instead of tables")


def cmd_gpu(args: argparse.Namespace, out: Console) -> int:
    if args.gpu_command == "kernels":
        return _kernels(args, out)
    if args.gpu_command == "trace":
        return _trace(args, out)
    return _info(args, out)


def _kernels(args: argparse.Namespace, out: Console) -> int:
    from tessera import api
    from tessera.cli import print_listing

    rc = print_listing(api.gpu_kernels(), args.name, args.json, out, kind="GPU kernel", size="allocates")
    if not args.json:
        # Not a parameter of any one kernel: the wrapper every built-in kernel goes through takes it.
        out.print("Every kernel also takes free=BUFFER@LAUNCH,... (LAUNCH a number from 1 or end; BUFFER a name "
                  "`tessera gpu info KERNEL` lists, or *): the buffers it frees between launches.")
    return rc


def _trace(args: argparse.Namespace, out: Console) -> int:
    from tessera import api
    from tessera.cli import EXIT_OK, _params

    s = api.write_gpu_trace(args.kernel, args.output, _params(args.params), seed=args.seed, xz=args.xz)
    out.print(
        f"{args.output}: {s['kernels']:,} kernels, {s['warp_insts']:,} warp instructions, "
        f"{s['allocations']:,} allocations, {api.format_size(s['bytes'])}",
        markup=False,
    )
    return EXIT_OK


def _info(args: argparse.Namespace, out: Console) -> int:
    from tessera import api
    from tessera.cli import EXIT_OK, _params, _Usage

    if (args.kernel is None) == (args.trace is None):
        raise _Usage("give a KERNEL or --trace DIR, not both")
    if args.trace is not None and args.params:
        raise _Usage("--param applies only to a KERNEL")
    if args.kernel is not None:
        info = api.gpu_info(args.kernel, _params(args.params), seed=args.seed, page_size=args.page_size)
    else:
        info = api.gpu_info(trace=args.trace, page_size=args.page_size)
    if args.json:
        sys.stdout.write(json.dumps(info, sort_keys=True, indent=2) + "\n")
        return EXIT_OK
    kernels = Table(box=None, header_style="bold", title="kernels")
    for col in ("id", "name", "grid", "block", "thread blocks", "warp insts", "thread insts", "global insts"):
        kernels.add_column(col, justify="left" if col in ("name", "grid", "block") else "right")
    for k in info["kernels"]:
        kernels.add_row(
            str(k["id"]), k["name"], "x".join(map(str, k["grid"])), "x".join(map(str, k["block"])),
            f"{k['thread_blocks']:,}", f"{k['warp_insts']:,}", f"{k['thread_insts']:,}", f"{k['global_insts']:,}",
        )
    out.print(kernels)
    g = max(info["global_insts"], 1)
    ops = ("alu", "sfu", "load", "store", "atomic", "barrier", "branch", "exit")
    rows = [
        ("warp instructions", f"{info['warp_insts']:,}"),
        ("thread instructions", f"{info['thread_insts']:,} ({info['thread_insts'] / max(info['warp_insts'], 1):.1f} lanes per warp instruction)"),
        ("by class", ", ".join(f"{o} {n:,}" for o, n in zip(ops, info["by_op"]) if n)),
        ("memory by space", f"global {info['global_insts']:,}, shared {info['shared_insts']:,}, local {info['local_insts']:,}"),
        ("per global instruction", f"{info['global_sectors'] / g:.2f} sectors, {info['global_lines'] / g:.2f} lines, "
                                   f"{info['global_page_refs'] / g:.2f} pages of {args.page_size}"),
        ("allocated", f"{api.format_size(info['allocated_bytes'])} in {info['allocations']:,} allocations"),
        ("buffers", ", ".join(f"{name} {api.format_size(size)}" for name, size in info["buffers"])),
        ("touched", f"{info['pages_touched']:,} pages of {args.page_size} = "
                    f"{api.format_size(info['pages_touched'] * info['page_bytes'])} "
                    f"({info['touched_over_allocated']:.2f}x allocated)"),
        ("outside allocations", f"{info['outside_allocations']:,} global lane accesses"),
    ]
    summary = Table(box=None, show_header=False)
    summary.add_column(style="bold")
    summary.add_column()
    for k, v in rows:
        summary.add_row(k, v)
    out.print(summary)
    return EXIT_OK
