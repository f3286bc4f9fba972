"""Figures of the Mosaic Pages reproduction (matplotlib, Agg backend).

Each function takes one table of :mod:`tessera.report.mosaic_pages` and
writes ``<dir>/<stem>.png`` and ``.svg`` (:func:`mmu_figures.save`, so reruns
give identical files). Where the paper prints a number (Table 4) it is drawn
beside ours.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from tessera.report import paper_mosaic as paper
from tessera.report.mmu_figures import plt, save

__all__ = ["fig6_grid", "table4_difference", "beyond_bars", "FIGURES"]

_SERIES = ["vanilla"] + [f"mosaic{a}" for a in paper.ARITIES]
_COLORS = ["#222222", "#4C72B0", "#55A868", "#C44E52", "#8172B2", "#CCB974"]


def _ways_label(w: int) -> str:
    return "FA" if w >= 1024 else ("DM" if w == 1 else f"{w}-way")


def fig6_grid(misses: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Fig. 6: TLB misses per workload, grouped by associativity, one bar per
    design (vanilla, Mosaic-4 … Mosaic-64), log scale as the paper's."""
    wls = list(dict.fromkeys(misses.index.get_level_values(0)))
    fig, axes = plt.subplots(1, len(wls), figsize=(3.6 * len(wls), 3.4), squeeze=False)
    width = 0.8 / len(_SERIES)
    for ax, w in zip(axes[0], wls):
        m = misses.loc[w]
        x = np.arange(len(m.index))
        for i, (s, c) in enumerate(zip(_SERIES, _COLORS)):
            ax.bar(x - 0.4 + width * (i + 0.5), m[s].to_numpy(), width, color=c,
                   label="Vanilla" if s == "vanilla" else f"Mosaic-{s[6:]}")
        ax.set_xticks(x, [_ways_label(int(v)) for v in m.index])
        ax.set_yscale("log")
        # At least a decade below the smallest bar, so that near-equal bars look near-equal.
        lo = float(np.nanmin(m[_SERIES].to_numpy()))
        if lo > 0:
            ax.set_ylim(bottom=10 ** np.floor(np.log10(lo) - 1))
        ax.set_title(w)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("TLB misses (1024 entries)")
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return save(fig, out_dir, "fig6")


def table4_difference(t4: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Table 4's difference column (% less swap I/O with Mosaic) against
    footprint ÷ memory, ours (lines with dots) and the paper's (dashed)."""
    wls = list(dict.fromkeys(t4.index.get_level_values(0)))
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    colors = dict(zip(wls, ["#4C72B0", "#DD8452", "#55A868", "#C44E52"]))
    for w in wls:
        t = t4.loc[w]
        ax.plot(t.index.to_numpy(dtype=float), t["difference"].to_numpy(), "o-", color=colors[w], label=f"{w} (ours)")
        rows = paper.TABLE4.get(w.replace("graph500-bfs", "graph500"), [])
        if rows:
            ax.plot([fp / paper.TABLE4_MEMORY_MIB for fp, *_ in rows], [r[3] for r in rows], "--", color=colors[w],
                    alpha=0.6, label=f"{w} (paper)")
    ax.axhline(0, color="#888888", lw=0.8)
    ax.set_xlabel("footprint ÷ memory")
    ax.set_ylabel("% less swap I/O with Mosaic")
    ax.set_ylim(max(ax.get_ylim()[0], -110), ax.get_ylim()[1])
    ax.legend(fontsize=7, ncol=2)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return save(fig, out_dir, "table4")


def beyond_bars(bt: pd.DataFrame, out_dir: Path) -> list[Path]:
    """TLB misses per 1000 accesses per design, one panel per workload,
    grouped by fragmentation."""
    wls = list(dict.fromkeys(bt.index.get_level_values(0)))
    designs = list(dict.fromkeys(bt.index.get_level_values(2)))
    fig, axes = plt.subplots(1, len(wls), figsize=(3.4 * len(wls), 3.2), squeeze=False)
    width = 0.8 / len(designs)
    colors = ["#222222", "#DD8452", "#55A868", "#4C72B0"]
    for ax, w in zip(axes[0], wls):
        t = bt.loc[w]
        frags = list(dict.fromkeys(t.index.get_level_values(0)))
        x = np.arange(len(frags))
        for i, d in enumerate(designs):
            vals = [t.loc[(f, d), "misses_pka"] if (f, d) in t.index else np.nan for f in frags]
            ax.bar(x - 0.4 + width * (i + 0.5), vals, width, color=colors[i % len(colors)], label=d)
        ax.set_xticks(x, [f"frag {f:g}" for f in frags])
        ax.set_title(w)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("TLB misses per 1000 accesses")
    axes[0][-1].legend(fontsize=7)
    fig.tight_layout()
    return save(fig, out_dir, "beyond")


#: Figure → (draw function, table key).
FIGURES = {
    "fig6": (fig6_grid, "fig6_misses"),
    "table4": (table4_difference, "table4"),
    "beyond": (beyond_bars, "beyond"),
}
