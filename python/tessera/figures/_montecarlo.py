"""Monte Carlo figures: estimates with their 95 % intervals over a swept
fraction, closed forms dashed beside them (the GTSM figures, docs/gtsm.md)."""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from tessera.figures._draw import _freeze_layout, new_axes
from tessera.figures._lines import MARKERS


def montecarlo_lines(figure: dict[str, Any], *, ax: Any = None, percent: bool = True) -> Any:
    """One line per series of a Monte Carlo figure (``tessera.gtsm_montecarlo``'s
    ``fig3``, ``fig7`` or ``fig14``): the estimate with a shaded 95 % band,
    and the closed form as a dashed line where there is one. x and y in
    percent unless ``percent=False``. Returns the ``matplotlib.figure.Figure``."""
    fig, ax, owned = new_axes(ax, width=7.8)
    scale = 100.0 if percent else 1.0
    any_exact = False
    for i, s in enumerate(figure["series"]):
        pts = s["points"]
        x = np.array([p["x"] for p in pts]) * scale
        y = np.array([p["value"] for p in pts]) * scale
        lo = np.array([p["lo"] for p in pts]) * scale
        hi = np.array([p["hi"] for p in pts]) * scale
        color = f"C{i % 10}"
        ax.plot(x, y, marker=MARKERS[i % len(MARKERS)], markersize=3.5, linewidth=1.3, color=color,
                label=s["name"], zorder=3)  # fmt: skip
        ax.fill_between(x, lo, hi, color=color, alpha=0.2, linewidth=0, zorder=2)
        exact = [p["exact"] for p in pts]
        if all(e is not None for e in exact):
            any_exact = True
            ax.plot(x, np.array(exact) * scale, linestyle="--", linewidth=0.9, color=color, alpha=0.8, zorder=4)
    unit = " (%)" if percent else " (fraction)"
    notes = [f"{figure['units_per_point']:,} {figure['unit']} per point; shaded: 95 % confidence interval"]
    if any_exact:
        notes.append("dashed: closed form")
    ax.set_xlabel(figure["x_label"] + unit + "\n" + "; ".join(notes))
    ax.xaxis.label.set_linespacing(1.4)
    ax.set_ylabel(figure["y_label"] + unit)
    ax.set_title(figure["title"])
    ax.yaxis.grid(True, linewidth=0.5, alpha=0.5, zorder=0)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False, fontsize="small")
    if owned:
        _freeze_layout(fig)
    return fig


def thresholds(table2: dict[str, Any], *, ax: Any = None, title: Optional[str] = None) -> Any:
    """Table 2 as bars: per GT-PDE mode, the retired fraction at which 60 %
    of B-blocks are clean (closed form) beside the paper's value, with the
    Monte Carlo clean share at that fraction in the labels."""
    fig, ax, owned = new_axes(ax, width=6.4)
    rows = table2["rows"]
    pos = np.arange(len(rows), dtype=float)
    w = 0.38
    ours = [100 * r["exact"] for r in rows]
    paper = [100 * r["paper"] for r in rows]
    ax.bar(pos - w / 2, ours, w, color="C0", label="closed form: 1 − 0.6^(4 KiB / B)", zorder=3)
    ax.bar(pos + w / 2, paper, w, color="C1", label="paper (Table 2)", zorder=3)
    for p, v in zip(pos, ours):
        ax.annotate(f"{v:.2f} %", (p - w / 2, v), ha="center", va="bottom", fontsize="small")
    for p, v in zip(pos, paper):
        ax.annotate(f"{v:.1f} %", (p + w / 2, v), ha="center", va="bottom", fontsize="small")
    ax.set_xticks(pos)
    ax.set_xticklabels([
        f"{r['mode']}\n{r['block_kib']} KiB B-blocks\nclean there: {100 * r['clean_at_exact']['value']:.2f} %"
        for r in rows
    ])  # fmt: skip
    ax.set_ylabel("retired 4 KiB pages (%)")
    ax.set_title(title or "Table 2: retired pages at which 60 % of B-blocks are clean")
    ax.yaxis.grid(True, linewidth=0.5, alpha=0.5, zorder=0)
    ax.set_axisbelow(True)
    ax.legend(loc="upper left", frameon=False, fontsize="small")
    if owned:
        _freeze_layout(fig)
    return fig
