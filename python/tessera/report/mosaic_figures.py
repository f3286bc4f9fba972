"""Figures of the Mosaic Pages reproduction (matplotlib, Agg backend).

Each function takes one table of :mod:`tessera.report.mosaic_pages` and
writes ``<dir>/<stem>.png`` and ``.svg`` (:func:`mmu_figures.save`, so reruns
give identical files). Where the paper prints a number (Table 4) it is drawn
beside ours.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tessera.report import mosaic_pages as mp
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
        hi = float(np.nanmax(m[_SERIES].to_numpy()))
        if lo > 0 and hi > 0:
            # Headroom: the tallest bar ends a third of a decade below the top.
            ax.set_ylim(10 ** np.floor(np.log10(lo) - 1), hi * 10 ** (1 / 3))
        ax.set_title(w)
        ax.grid(axis="y", alpha=0.3)
    axes[0][0].set_ylabel("TLB misses (1024 entries)")
    _legend_below(fig, axes[0][0], len(_SERIES))
    return save(fig, out_dir, "fig6")


def _legend_below(fig: Any, ax: Any, ncol: int) -> None:
    """One legend for the figure, below the panels, where it cannot hide a bar."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)


_BASE_COLORS = {"linux_like": "#C44E52", "lru": "#4C72B0", "horizon": "#55A868"}


def table4_difference(t4: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Table 4's difference (% less swap I/O with Mosaic) against footprint ÷
    memory, one panel per workload: against each baseline with its 95 %
    interval, and the paper's against its Linux (dashed)."""
    wls = list(dict.fromkeys(t4.index.get_level_values(0)))
    fig, axes = plt.subplots(1, len(wls), figsize=(3.8 * len(wls), 3.4), squeeze=False)
    bases = [b for b in mp.BASELINES if f"diff_{b}" in t4]
    for ax, w in zip(axes[0], wls):
        t = t4.loc[w]
        x = t.index.to_numpy(dtype=float)
        for i, b in enumerate(bases):
            d = t[f"diff_{b}"].to_numpy(dtype=float)
            lo, hi = t[f"diff_{b}_lo"].to_numpy(dtype=float), t[f"diff_{b}_hi"].to_numpy(dtype=float)
            err = np.vstack([d - lo, hi - d])
            # Baselines that coincide (Horizon over buddy is exact LRU) are offset a little so both show.
            ax.errorbar(x + (i - 1) * 0.006, d, yerr=np.where(np.isnan(err), 0, err), fmt="o-", ms=3, lw=1.2,
                        capsize=2, color=_BASE_COLORS.get(b, "#333333"), label=f"vs {mp.ARM_LABEL[b]}")
        rows = paper.TABLE4.get(mp.PAPER_NAME.get(w, w), [])
        if rows:
            ax.plot([fp / paper.TABLE4_MEMORY_MIB for fp, *_ in rows], [r[3] for r in rows], "--", color="#777777",
                    lw=1, label="paper, vs its Linux")
        ax.axhline(0, color="#888888", lw=0.8)
        ax.set_xlabel("footprint ÷ memory")
        ax.set_title(w)
        ax.grid(alpha=0.3)
        lo_y, hi_y = ax.get_ylim()
        ax.set_ylim(max(lo_y, -110), hi_y + 0.08 * (hi_y - lo_y))
    axes[0][0].set_ylabel("% less swap I/O with Mosaic")
    _legend_below(fig, axes[0][0], len(bases) + 1)
    return save(fig, out_dir, "table4")


_DESIGN_STYLE = {"vanilla": ("#222222", "--"), "mosaic": ("#4C72B0", "-."), "thp": ("#DD8452", "o-"),
                 "coalescing": ("#55A868", "s-")}


def beyond_bars(bt: pd.DataFrame, out_dir: Path) -> list[Path]:
    """TLB misses per 1000 accesses against the whole 2 MiB blocks left (% of
    the footprint), one panel per workload: THP and CoLT as lines, vanilla
    and Mosaic-8 (run over unbroken memory) as horizontal lines."""
    wls = list(dict.fromkeys(bt.index.get_level_values(0)))
    fig, axes = plt.subplots(1, len(wls), figsize=(3.6 * len(wls), 3.3), squeeze=False)
    for ax, w in zip(axes[0], wls):
        t = bt.loc[w]
        designs = list(dict.fromkeys(t.index.get_level_values(0)))
        swept = [d for d in designs if d in ("thp", "coalescing")]
        xs = sorted(set(float(v) for d in swept for v in t.loc[d, "whole_pct"]))
        vals = []
        for d in designs:
            color, style = _DESIGN_STYLE.get(d, ("#333333", "-"))
            rows = t.loc[d].sort_values("whole_pct")
            y = rows["misses_pka"].to_numpy(dtype=float)
            vals += list(y)
            name = {"mosaic": "Mosaic-8", "thp": "THP", "coalescing": "CoLT", "vanilla": "vanilla"}.get(d, d)
            if d in swept:
                ax.plot(rows["whole_pct"].to_numpy(dtype=float), y, style, color=color, ms=4, label=name)
            elif xs:
                ax.hlines(float(y[0]), min(xs), max(xs), colors=color, linestyles=style,
                          label=f"{name} (unbroken memory)")
        pos = [v for v in vals if v > 0]
        ax.set_yscale("log")
        if pos:
            ax.set_ylim(min(pos) / 3, max(pos) * 3)
        ax.set_xlabel("whole 2 MiB blocks, % of footprint")
        ax.set_title(w)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("TLB misses per 1000 accesses")
    _legend_below(fig, axes[0][0], 4)
    return save(fig, out_dir, "beyond")


#: Figure → (draw function, table key).
FIGURES = {
    "fig6": (fig6_grid, "fig6_misses"),
    "table4": (table4_difference, "table4"),
    "beyond": (beyond_bars, "beyond"),
}
