"""Grouped bars: one group per x value (workloads), one bar per hue value, and a
final ``geomean`` group."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Optional

import numpy as np
import pandas as pd

from tessera.figures._common import Baseline, Where, prepare, short_name
from tessera.figures._common import geomean as _geomean
from tessera.figures._draw import finish, new_axes, whiskers

#: Label of the geometric-mean group.
GEOMEAN = "geomean"


def bars(
    df: pd.DataFrame,
    y: str,
    x: str = "workload",
    hue: Optional[str] = None,
    *,
    baseline: Baseline = None,
    geomean: bool = True,
    agg: str = "mean",
    errorbars: Optional[str] = "minmax",
    where: Where = None,
    order: Optional[Sequence[Any]] = None,
    hue_order: Optional[Sequence[Any]] = None,
    logy: bool = False,
    title: Optional[str] = None,
    ylabel: Optional[str] = None,
    xlabel: Optional[str] = None,
    ax: Any = None,
) -> Any:
    """Grouped bars of stat ``y``: a group per value of ``x``, a bar per value of ``hue``.

    - ``df``: one row per run (``tessera.results.load`` or ``tessera.sweep``).
      ``y``, ``x``, ``hue`` and the keys of ``where``/``baseline`` are column
      names, looked up as given and then as ``axis.NAME``, ``param.NAME``,
      ``config.NAME``.
    - ``baseline``: a hue value (each bar is divided by the bar of that hue for
      the same x and the same seed and other axes), or a mapping
      ``{column: value}`` naming the baseline runs the same way.
    - ``geomean``: add a last group with the geometric mean, over the x values,
      of each hue's bars (the bars as drawn, i.e. after ``agg`` and
      normalisation). Only positive, finite values have a geometric mean: a zero,
      negative or missing bar is left out of it, and the figure says so in a
      note under the axis (also in ``fig.tessera_notes``). Drawn only when there
      are at least two x values; it has no whiskers.
    - ``agg``: how the runs of one bar (seeds, replicates) become its height:
      ``mean``, ``median``, ``min`` or ``max``. When some bar has more than one
      run, whiskers show their ``minmax`` (default) or ``std`` (``errorbars``;
      ``None`` draws none).
    - ``where``: ``{column: value or [values]}``; keeps only matching runs.
    - ``order`` / ``hue_order``: the x groups / hue bars to draw, in this order.
      Otherwise values that read as numbers or sizes (``4k``, ``2MiB``) are
      sorted and others keep the order in which they first appear.
    - ``ax``: draw into this Axes instead of a new figure.

    Returns the ``matplotlib.figure.Figure``. A swept axis other than x, hue
    and the seed that varies inside one bar raises ``ValueError`` (narrow it
    with ``where``), as do unknown columns and baselines that are not there.
    """
    p = prepare(
        df, y, x, hue,
        baseline=baseline, where=where, agg=agg, errorbars=errorbars,
        order=order, hue_order=hue_order, ylabel=ylabel,
    )  # fmt: skip
    draw_geomean = geomean and len(p.x_labels) > 1
    groups = p.x_labels + ([GEOMEAN] if draw_geomean else [])
    n_hue = len(p.hue_labels)
    fig, ax, owned = new_axes(ax, width=2.5 + len(groups) * (0.25 * n_hue + 0.35) + (1.8 if p.hue_col else 0.0))

    width = 0.8 / n_hue
    centres = np.arange(len(groups), dtype=float)
    skipped: list[str] = []
    for i, h in enumerate(p.hue_labels):
        pts = [p.get(xl, h) for xl in p.x_labels]
        heights = [v for v, _, _, _ in pts]
        if draw_geomean:
            heights.append(_geomean(heights))
            left_out = [f"{xl} ({_why(v)})" for xl, v in zip(p.x_labels, heights) if not (v > 0 and math.isfinite(v))]
            if left_out:
                skipped.append((f"{h}: " if h else "") + ", ".join(left_out))
        pos = centres - 0.4 + width * (i + 0.5)
        ax.bar(pos, heights, width, label=h if p.hue_col else None, color=f"C{i % 10}", zorder=2)
        if p.max_runs > 1 and p.errorbars is not None:
            whiskers(ax, pos[: len(pts)], pts)

    if draw_geomean:
        # A thin rule sets the summary apart from the measured groups.
        ax.axvline(len(p.x_labels) - 0.5, color="0.6", linewidth=0.8, linestyle=":", zorder=1)
        if skipped:
            p.notes.append(f"{GEOMEAN} leaves out " + "; ".join(skipped))
    if p.normalised:
        ax.axhline(1.0, color="0.3", linewidth=0.8, linestyle="--", zorder=3)
    ax.set_xticks(centres)
    ax.set_xticklabels(groups)
    if any(len(g) > 10 for g in groups) or len(groups) > 8:
        ax.tick_params(axis="x", labelrotation=30)
        for t in ax.get_xticklabels():
            t.set_horizontalalignment("right")
    ax.set_xlim(-0.6, len(groups) - 0.4)
    if logy:
        ax.set_yscale("log")
    finish(fig, ax, p, xlabel if xlabel is not None else short_name(p.x_col), title, "whiskers", owned)
    return fig


def _why(v: float) -> str:
    return "missing" if math.isnan(v) else f"{v:g}"
