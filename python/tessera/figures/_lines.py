"""Lines over a swept axis: one line per hue value."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import pandas as pd

from tessera.figures._common import Baseline, Where, label, prepare, short_name, sort_key
from tessera.figures._draw import finish, new_axes, whiskers

MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
#: Up to this many x values, every one gets a tick labelled as in the sweep file.
MAX_LABELLED_TICKS = 12


def lines(
    df: pd.DataFrame,
    y: str,
    x: str,
    hue: Optional[str] = None,
    *,
    baseline: Baseline = None,
    logx: bool = False,
    logy: bool = False,
    agg: str = "mean",
    errorbars: Optional[str] = "minmax",
    where: Where = None,
    order: Optional[Sequence[Any]] = None,
    hue_order: Optional[Sequence[Any]] = None,
    title: Optional[str] = None,
    ylabel: Optional[str] = None,
    xlabel: Optional[str] = None,
    ax: Any = None,
) -> Any:
    """Stat ``y`` over the swept axis ``x``, one line per value of ``hue``.

    ``x`` values that are numbers, or strings that read as sizes or counts
    (``"64MiB"``, ``"100k"``, ``"512"``), are placed at their value (binary
    multiples for suffixes) and labelled as written in the sweep; any other
    values are placed evenly in ``order`` (or first-appearance order).
    ``logx`` uses a base-2 axis when every x is a power of two, else base 10;
    it needs positive numeric x values.

    ``baseline``, ``agg``, ``errorbars`` (drawn as a shaded band), ``where``,
    ``order``, ``hue_order`` and ``ax`` work as in :func:`tessera.figures.bars`;
    e.g. ``baseline={"mmu.tlb.l2_tlb.entries": 512}`` divides each line by its
    own value at 512 entries. Returns the ``matplotlib.figure.Figure``.
    """
    p = prepare(
        df, y, x, hue,
        baseline=baseline, where=where, agg=agg, errorbars=errorbars,
        order=order, hue_order=hue_order, ylabel=ylabel,
    )  # fmt: skip
    keys = [sort_key(p.x_values[xl]) for xl in p.x_labels]
    numeric = all(k is not None for k in keys)
    if numeric:
        pos = np.array(keys, dtype=float)
    else:
        if logx:
            bad = [xl for xl, k in zip(p.x_labels, keys) if k is None]
            raise ValueError(
                f"logx needs numeric x values; {short_name(p.x_col)} has {', '.join(bad[:5])}"
            )
        pos = np.arange(len(p.x_labels), dtype=float)
    if logx and (pos <= 0).any():
        raise ValueError(f"logx needs positive x values; {short_name(p.x_col)} has {label(pos.min())}")

    fig, ax, owned = new_axes(ax, width=6.4 + (1.4 if p.hue_col else 0.0))
    for i, h in enumerate(p.hue_labels):
        pts = [p.get(xl, h) for xl in p.x_labels]
        ys = np.array([v for v, _, _, _ in pts])
        have = np.isfinite(ys)
        color = f"C{i % 10}"
        ax.plot(
            pos[have], ys[have], marker=MARKERS[i % len(MARKERS)], markersize=4, linewidth=1.4,
            color=color, label=h if p.hue_col else None, zorder=3,
        )  # fmt: skip
        if p.max_runs > 1 and p.errorbars is not None:
            spread = [j for j, (v, _, _, n) in enumerate(pts) if n > 1 and math.isfinite(v)]
            if len(spread) > 1:
                lo = np.array([pts[j][1] for j in spread])
                hi = np.array([pts[j][2] for j in spread])
                ax.fill_between(pos[spread], lo, hi, color=color, alpha=0.18, linewidth=0, zorder=2)
            elif spread:
                # A band needs two points; one point with replicates gets a whisker.
                whiskers(ax, pos, pts)

    if p.normalised:
        ax.axhline(1.0, color="0.3", linewidth=0.8, linestyle="--", zorder=1)
    if logx:
        powers_of_two = all(float(v).is_integer() and int(v) & (int(v) - 1) == 0 for v in pos)
        ax.set_xscale("log", base=2 if powers_of_two else 10)
    if logy:
        ax.set_yscale("log")
    if not numeric or len(pos) <= MAX_LABELLED_TICKS:
        # Tick every swept value with the name it has in the sweep ("64MiB", "4k").
        from matplotlib.ticker import NullLocator

        ax.set_xticks(pos)
        ax.set_xticklabels(p.x_labels)
        ax.xaxis.set_minor_locator(NullLocator())
        if any(len(t) > 8 for t in p.x_labels) or len(p.x_labels) > 8:
            ax.tick_params(axis="x", labelrotation=30)
            for t in ax.get_xticklabels():
                t.set_horizontalalignment("right")
    finish(fig, ax, p, xlabel if xlabel is not None else short_name(p.x_col), title, "bands", owned)
    return fig
