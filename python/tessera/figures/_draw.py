"""Drawing steps shared by the views. No pyplot: figures are plain
``matplotlib.figure.Figure`` objects, which need no GUI backend and no display
(the object-oriented use matplotlib documents for servers), and leave the
caller's pyplot state alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Optional

import numpy as np

from tessera.figures._common import Prepared, short_name

HEIGHT = 4.0
MAX_WIDTH = 16.0


def new_axes(ax: Any, width: float) -> tuple[Any, Any, bool]:
    """The caller's Axes and its figure, or a new figure with one Axes; the
    flag says whether the figure is ours (see :func:`finish`)."""
    if ax is not None:
        return ax.figure, ax, False
    from matplotlib.figure import Figure

    fig = Figure(figsize=(min(max(width, 4.5), MAX_WIDTH), HEIGHT))
    # Constrained layout keeps the outside legend and long tick labels inside the canvas.
    if hasattr(fig, "set_layout_engine"):  # matplotlib >= 3.6
        fig.set_layout_engine("constrained")
    else:  # 3.5 (set_constrained_layout warns as deprecated from 3.6 on)
        fig.set_constrained_layout(True)
    return fig, fig.add_subplot(), True


def whiskers(ax: Any, pos: Sequence[float], pts: Sequence[tuple[float, float, float, int]]) -> None:
    """Error bars from ``lo`` to ``hi`` for the points that have more than one run."""
    # A whisker of zero length (e.g. the baseline itself, exactly 1) would be a stray cap.
    keep = [i for i, (v, lo, hi, n) in enumerate(pts) if n > 1 and np.isfinite(v) and hi > lo]
    if not keep:
        return
    v = np.array([pts[i][0] for i in keep])
    lo = np.array([pts[i][1] for i in keep])
    hi = np.array([pts[i][2] for i in keep])
    # Clip at 0: the mean of equal floats can round a hair past the max.
    yerr = np.vstack([np.maximum(v - lo, 0.0), np.maximum(hi - v, 0.0)])
    ax.errorbar([pos[i] for i in keep], v, yerr=yerr, fmt="none", ecolor="0.15", elinewidth=0.8, capsize=2, zorder=4)


def finish(fig: Any, ax: Any, p: Prepared, xlabel: str, title: Optional[str], spread: str, owned: bool) -> None:
    """Labels, legend, grid, and the notes that qualify the figure (``spread``
    names how the runs' spread is drawn: whiskers, bands); then, for a figure
    of our own, its layout, done once."""
    ax.set_ylabel(p.ylabel)
    caption = p.spread_caption(spread)
    lines = [xlabel] + ([caption] if caption else []) + p.notes
    # Notes go under the x label, where constrained layout leaves room for them
    # and a reader of the saved figure sees them.
    ax.set_xlabel("\n".join(lines))
    if len(lines) > 1:
        ax.xaxis.label.set_linespacing(1.4)
    ax.yaxis.grid(True, linewidth=0.5, alpha=0.5, zorder=0)
    ax.set_axisbelow(True)
    if p.hue_col:
        ax.legend(
            title=short_name(p.hue_col),
            loc="upper left",
            bbox_to_anchor=(1.01, 1.0),
            frameon=False,
            fontsize="small",
        )
    if title:
        ax.set_title(title)
    notes = list(getattr(fig, "tessera_notes", [])) + p.notes
    fig.tessera_notes = notes
    if owned:
        _freeze_layout(fig)


def _freeze_layout(fig: Any) -> None:
    """Run constrained layout once and keep its result.

    Left on, the layout is redone at every save, starting from where the last
    draw left the Axes and measuring text with that save's renderer, so an SVG
    written after a PNG came out a few thousandths of a point different from
    one written first. Fixed positions make every file depend on the data only.
    Call ``fig.set_layout_engine("constrained")`` to lay out again after
    changing the figure.
    """
    fig.draw_without_rendering()
    if hasattr(fig, "set_layout_engine"):  # matplotlib >= 3.6
        fig.set_layout_engine("none")
    else:
        fig.set_constrained_layout(False)
