"""``tessera plot``: the standard figures of a stored sweep (docs/figures.md).

::

    tessera plot {bars,lines} --y STAT [--store PATH] [--sweep NAME] [--x COL] [--hue COL]
                 [--baseline VALUE | --baseline COL=VALUE] [--where COL=VALUE ...]
                 [--agg A] [--errorbars minmax|std|none] [--no-geomean] [--logx] [--logy]
                 [--title TEXT] [--ylabel TEXT] -o OUT.{png,svg,pdf} [-o ...]

matplotlib is imported only when a plot is drawn, so the other commands start
as fast as before.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rich.console import Console

__all__ = ["add_parser", "cmd_plot"]

#: Suffixes `-o` accepts (the formats of tessera.figures.save; kept here so
#: that building the parser does not import matplotlib).
OUTPUT_SUFFIXES = ("png", "svg", "pdf")


def add_parser(sub: Any) -> None:
    from tessera.store import default_store_path

    p = sub.add_parser("plot", help="draw bars or lines from the results store (PNG, SVG, PDF)")
    p.add_argument("view", choices=("bars", "lines"), help="bars: a group per --x and a geomean; lines: over --x")
    p.add_argument("--store", metavar="PATH", help=f"results store (default $TESSERA_STORE or {default_store_path()})")
    p.add_argument("--sweep", metavar="NAME", help="only this sweep's runs (default: every run in the store)")
    p.add_argument("--y", required=True, metavar="STAT", help="the stat to plot, e.g. walker.walk_cycle_share")
    p.add_argument("--x", metavar="COL", help="bars: a group per value (default workload); lines: the swept axis")
    p.add_argument("--hue", metavar="COL", help="a bar or line per value, e.g. physmem.page_size")
    p.add_argument("--baseline", metavar="VALUE|COL=VALUE", help="divide by the runs of this --hue value, or COL=VALUE")
    p.add_argument("--where", action="append", default=[], metavar="COL=VALUE",
                   help="keep only these runs (repeatable; a repeated column keeps any of its values)")
    p.add_argument("--agg", choices=("mean", "median", "min", "max"), default="mean",
                   help="how the runs of one bar or point (seeds) become its value (default mean)")
    p.add_argument("--errorbars", choices=("minmax", "std", "none"), default="minmax",
                   help="how the spread of those runs is drawn (default minmax)")
    p.add_argument("--no-geomean", dest="geomean", action="store_false", help="bars: no geomean group")
    p.add_argument("--logx", action="store_true", help="lines: logarithmic x axis")
    p.add_argument("--logy", action="store_true", help="logarithmic y axis")
    p.add_argument("--title", help="title above the plot")
    p.add_argument("--ylabel", help="y axis label (default: the stat's description and unit, fractions in %%; "
                   "and what it is normalised to)")
    p.add_argument("-o", "--output", action="append", required=True, metavar="FILE",
                   help="FILE.png, FILE.svg or FILE.pdf (repeatable: one figure, several files)")


def cmd_plot(args: argparse.Namespace, err: Console) -> int:
    from tessera.cli import EXIT_OK, _Usage, check_output_file

    for o in args.output:
        path = Path(o)
        if path.suffix.lower().lstrip(".") not in OUTPUT_SUFFIXES:
            raise _Usage(f"-o {o}: the suffix sets the format; use .png, .svg or .pdf")
        check_output_file("-o", o)
    if args.view == "lines" and not args.x:
        raise _Usage("plot lines needs --x COL, the swept axis")
    if args.view == "lines" and not args.geomean:
        raise _Usage("--no-geomean applies only to plot bars")
    if args.view == "bars" and args.logx:
        raise _Usage("--logx applies only to plot lines")
    where: dict[str, list[str]] = {}
    for item in args.where:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise _Usage(f"--where {item!r}: expected COL=VALUE")
        where.setdefault(key.strip(), []).append(value.strip())
    baseline: Any = args.baseline
    if baseline is not None and "=" in baseline:
        key, _, value = baseline.partition("=")
        baseline = {key.strip(): value.strip()}

    import matplotlib

    # Never needs a display, even if something in this process imports pyplot.
    matplotlib.use("Agg")
    from tessera import figures, results

    # Store errors (no file, not a store) and an unknown --sweep propagate to
    # main(), which reports them as `tessera results` does.
    df = results.load(args.store, sweep=args.sweep)
    if df.empty:
        raise _Usage("no runs in the store" + (f" for sweep {args.sweep!r}" if args.sweep else ""))
    kwargs: dict[str, Any] = dict(
        hue=args.hue, baseline=baseline, where=where or None, agg=args.agg, logy=args.logy, title=args.title,
        ylabel=args.ylabel, errorbars=None if args.errorbars == "none" else args.errorbars,
    )  # fmt: skip
    try:
        if args.view == "bars":
            fig = figures.bars(df, args.y, x=args.x or "workload", geomean=args.geomean, **kwargs)
        else:
            fig = figures.lines(df, args.y, x=args.x, logx=args.logx, **kwargs)
    except ValueError as e:  # a column, value or baseline that is not in these runs
        raise _Usage(str(e)) from None
    for note in fig.tessera_notes:
        err.print(f"tessera: note: {note}", markup=False, highlight=False, soft_wrap=True)
    for o in args.output:
        figures.save(fig, o)
        err.print(f"wrote {o}", markup=False, highlight=False)
    return EXIT_OK
