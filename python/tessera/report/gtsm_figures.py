"""Figures of the GTSM reproduction (matplotlib, Agg backend).

Each function takes one table of :mod:`tessera.report.gtsm_study` and
writes ``<dir>/<stem>.png`` and ``.svg`` (:func:`mmu_figures.save`, so reruns
give identical files). The paper prints no values for these figures, so
only where its text states a number is it drawn beside ours (dashed).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tessera.report import gtsm_study as gs
from tessera.report import paper_gtsm as paper
from tessera.report.mmu_figures import plt, save

__all__ = ["fig11_refs", "fig12_penalty", "fig13_ipc", "fig15_size", "sensitivity", "retired_share", "versus",
           "FIGURES"]

_COLORS = {"4k": "#222222", "gt_pde_4m": "#4C72B0", "gt_pde_2m": "#55A868", "gt_pde_1m": "#8172B2",
           "p_gt_pde_2m": "#64B5CD", "p_gt_pde_4m": "#CCB974", "thp": "#DD8452", "coalesce8": "#937860",
           "coalesce32": "#DA8BC3", f"gt_pde_4m_gt{gs.GT_ENTRY_GROUP}": "#2A9D8F", "thp_compact": "#C44E52",
           "mosaic": "#8C8C8C"}
_LEVEL_COLORS = {"l1d": "#BBBBBB", "l2": "#55A868", "llc": "#4C72B0", "dram": "#C44E52"}


def _label(d: Any) -> str:
    return gs.DESIGN_LABEL.get(str(d), {"coalesce8": "4 KiB, 8× coalescing", "coalesce32": "4 KiB, 32× coalescing",
                                        f"gt_pde_4m_gt{gs.GT_ENTRY_GROUP}": "GT-PDE-4MB, GT-aware L2",
                                        **gs.RIVAL_LABEL}.get(str(d), str(d)))


def _legend_below(fig: Any, ax: Any, ncol: int) -> None:
    """One legend for the figure, below the panels, where it cannot hide a bar."""
    handles, labels = ax.get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.14, 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=ncol, fontsize=8, frameon=False)


def _grouped(ax: Any, wls: list[str], series: dict[str, np.ndarray], err: dict[str, np.ndarray] | None = None) -> None:
    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(wls))
    for i, (d, y) in enumerate(series.items()):
        e = None if err is None or d not in err else np.where(np.isnan(err[d]), 0, err[d])
        ax.bar(x - 0.4 + width * (i + 0.5), y, width, color=_COLORS.get(d, "#333333"), label=_label(d), yerr=e,
               capsize=1.5 if e is not None else 0, error_kw={"lw": 0.7})
    ax.set_xticks(x, wls, rotation=30, ha="right")
    ax.grid(axis="y", alpha=0.3)


def fig11_refs(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Fig. 11: page-table references by serving level (% of all), 4 KiB
    pages and GT-PDE-4MB side by side per workload, stacked."""
    designs = [d for d in ("4k", "gt_pde_4m") if d in set(t.index.get_level_values(1))]
    wls = list(dict.fromkeys(t.index.get_level_values(0)))
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(wls) + 2), 3.6))
    width = 0.38
    x = np.arange(len(wls))
    for j, d in enumerate(designs):
        bottom = np.zeros(len(wls))
        for lv in gs.LEVELS:
            y = np.array([float(t.loc[(w, d), f"{lv}_pct"]) if (w, d) in t.index else np.nan for w in wls])
            y = np.nan_to_num(y)
            ax.bar(x + (j - 0.5) * width, y, width * 0.95, bottom=bottom, color=_LEVEL_COLORS[lv],
                   hatch="//" if d != "4k" else None, edgecolor="white", lw=0.3,
                   label=f"{lv.upper() if lv != 'l1d' else 'L1D'}" if j == 0 else None)
            bottom += y
    ax.set_xticks(x, wls, rotation=30, ha="right")
    ax.set_ylabel("% of page-table references")
    ax.set_ylim(0, 105)
    ax.axhline(100 - paper.FIG11_SLOW_DRAM_SHARE, color="#888888", lw=0.6, ls=":")
    ax.set_title("left bar 4 KiB, right bar (hatched) GT-PDE-4MB", fontsize=9)
    _legend_below(fig, ax, 4)
    return save(fig, out_dir, "fig11")


def fig12_penalty(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Fig. 12: walk cycles per walk per workload and design (95 % intervals)."""
    wls = list(dict.fromkeys(t.index.get_level_values(0)))
    designs = [d for d in gs.DESIGNS if d in set(t.index.get_level_values(1))]
    series = {d: np.array([float(t.loc[(w, d), "penalty"]) if (w, d) in t.index else np.nan for w in wls])
              for d in designs}
    err = {d: np.array([float(t.loc[(w, d), "penalty_ci"]) if (w, d) in t.index else np.nan for w in wls])
           for d in designs}
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(wls) + 2), 3.6))
    _grouped(ax, wls, series, err)
    ax.set_ylabel("TLB miss penalty (cycles per walk)")
    _legend_below(fig, ax, 4)
    return save(fig, out_dir, "fig12")


def fig13_ipc(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Fig. 13: IPC normalised to 4 KiB per workload and design (95 % intervals)."""
    wls = list(dict.fromkeys(t.index.get_level_values(0)))
    designs = [d for d in gs.DESIGNS if d != "4k" and d in set(t.index.get_level_values(1))]
    series, err = {}, {}
    for d in designs:
        g = np.array([float(t.loc[(w, d), "gain"]) if (w, d) in t.index else np.nan for w in wls])
        hi = np.array([float(t.loc[(w, d), "gain_hi"]) if (w, d) in t.index else np.nan for w in wls])
        series[d] = 1.0 + g / 100.0
        err[d] = (hi - g) / 100.0
    fig, ax = plt.subplots(figsize=(max(7.0, 1.1 * len(wls) + 2), 3.6))
    _grouped(ax, wls, series, err)
    ax.axhline(1.0, color="#888888", lw=0.8)
    ax.set_ylabel("IPC ÷ IPC with 4 KiB pages")
    _legend_below(fig, ax, 3)
    return save(fig, out_dir, "fig13")


def fig15_size(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Fig. 15: GUPS IPC against table size per design, normalised to 4 KiB
    at the smallest table; the paper's 8 GB GT-PDE-4MB gain as a note."""
    fig, ax = plt.subplots(figsize=(5.2, 3.6))
    for d in dict.fromkeys(t.index.get_level_values(1)):
        rows = t.xs(d, level="design").sort_index()
        ax.plot(rows.index.to_numpy(dtype=float), rows["norm"].to_numpy(dtype=float), "o-", ms=4,
                color=_COLORS.get(d, "#333333"), label=_label(d))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("GUPS table (MiB)")
    ax.set_ylabel("IPC ÷ 4 KiB IPC at the smallest table")
    ax.grid(alpha=0.3)
    _legend_below(fig, ax, 2)
    return save(fig, out_dir, "fig15")


def sensitivity(t: pd.DataFrame, out_dir: Path, key: str, stem: str, what: str) -> list[Path]:
    """Figs. 16–18: % IPC change per workload for each value of ``key``
    against the baseline of the table (95 % intervals)."""
    wls = list(dict.fromkeys(t.index.get_level_values(0)))
    vals = list(dict.fromkeys(t.index.get_level_values(1)))
    series, err = {}, {}
    for v in vals:
        c = np.array([float(t.loc[(w, v), "change"]) if (w, v) in t.index else np.nan for w in wls])
        hi = np.array([float(t.loc[(w, v), "change_hi"]) if (w, v) in t.index else np.nan for w in wls])
        series[str(v)] = c
        err[str(v)] = hi - c
    fig, ax = plt.subplots(figsize=(max(7.0, 1.0 * len(wls) + 2), 3.4))
    n = max(1, len(series))
    width = 0.8 / n
    x = np.arange(len(wls))
    cmap = plt.get_cmap("viridis")
    for i, (v, y) in enumerate(series.items()):
        color = _COLORS.get(v, cmap(i / max(1, n - 1)) if n > 1 else "#4C72B0")
        ax.bar(x - 0.4 + width * (i + 0.5), y, width, color=color, label=_label(v) if v in _COLORS else f"{what} {v}",
               yerr=np.where(np.isnan(err[v]), 0, err[v]), capsize=1.5, error_kw={"lw": 0.7})
    ax.set_xticks(x, wls, rotation=30, ha="right")
    ax.axhline(0.0, color="#888888", lw=0.8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_ylabel("% IPC change")
    _legend_below(fig, ax, min(4, n))
    return save(fig, out_dir, stem)


def fig16_decode(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    return sensitivity(t, out_dir, "decode", "fig16", "decode cycles")


def fig17_pde(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    return sensitivity(t, out_dir, "pde_entries", "fig17", "PDE entries")


def fig18_coalescing(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    return sensitivity(t, out_dir, "design", "fig18", "")


def retired_share(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Superpage share of the touched bytes (%) against the retired fraction,
    per design, one line per workload, and Fig. 14's capacity share dashed."""
    designs = [d for d in gs.DESIGNS if d != "4k" and d in set(t.index.get_level_values(1))]
    fig, axes = plt.subplots(1, max(1, len(designs)), figsize=(3.6 * max(1, len(designs)), 3.3), squeeze=False)
    for ax, d in zip(axes[0], designs):
        sub = t.xs(d, level="design")
        for w in dict.fromkeys(sub.index.get_level_values(0)):
            r = sub.loc[w].sort_index()
            ax.plot(100 * r.index.to_numpy(dtype=float), r["superpage_pct"].to_numpy(dtype=float), "o-", ms=3,
                    lw=1, label=w)
        cap = paper.FIG14_SHARE.get(d)
        if cap:
            xs = sorted(cap)
            ax.plot([100 * x for x in xs], [100 * cap[x] for x in xs], "--", color="#777777", lw=1,
                    label="paper Fig. 14 (capacity)")
        ax.set_title(gs.RETIRED_LABEL.get(d, d), fontsize=9)
        ax.set_xlabel("retired pages (%)")
        ax.set_ylim(-5, 105)
        ax.grid(alpha=0.3)
    axes[0][0].set_ylabel("% of touched bytes in superpages")
    _legend_below(fig, axes[0][0], 5)
    return save(fig, out_dir, "retired")


#: Figure → (draw function, table key).
def versus(t: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Beyond the paper: IPC gain over 4 KiB per workload and design, one
    panel per retired fraction; bars span the seeds' lowest to highest."""
    fracs = sorted(set(float(f) for f in t.index.get_level_values("fraction")))
    wls = list(dict.fromkeys(t.index.get_level_values("workload")))
    designs = [d for d in gs.RIVALS if d != "4k" and d in set(t.index.get_level_values("design"))]
    fig, axes = plt.subplots(len(fracs), 1, figsize=(max(6.5, 0.95 * len(wls) + 2), 2.7 * len(fracs) + 0.8),
                             squeeze=False, sharex=True)
    width = 0.8 / max(1, len(designs))
    x = np.arange(len(wls))
    for ax, f in zip(axes[:, 0], fracs):
        for i, d in enumerate(designs):
            rows = [t.loc[(w, f, d)] if (w, f, d) in t.index else None for w in wls]
            y = np.array([float(r["gain"]) if r is not None else np.nan for r in rows])
            lo = np.array([float(r["gain"] - r["gain_min"]) if r is not None else 0.0 for r in rows])
            hi = np.array([float(r["gain_max"] - r["gain"]) if r is not None else 0.0 for r in rows])
            ax.bar(x - 0.4 + width * (i + 0.5), np.nan_to_num(y), width, color=_COLORS.get(d, "#333333"),
                   label=gs.RIVAL_LABEL.get(d, _label(d)), yerr=np.vstack([np.nan_to_num(lo), np.nan_to_num(hi)]), capsize=1.5,
                   error_kw={"lw": 0.7})
        ax.axhline(0, color="#444444", lw=0.6)
        ax.set_ylabel("% IPC over 4 KiB")
        ax.set_title(f"{100 * f:g} % of frames retired, half the 2 MiB blocks pinned", fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[-1, 0].set_xticks(x, wls, rotation=30, ha="right")
    # The legend below the panels, in about half an inch whatever the figure's height.
    handles, labels = axes[-1, 0].get_legend_handles_labels()
    fig.tight_layout(rect=(0, 0.5 / fig.get_figheight(), 1, 1))
    fig.legend(handles, labels, loc="lower center", ncol=len(designs), fontsize=8, frameon=False)
    return save(fig, out_dir, "versus")


FIGURES = {
    "fig11": (fig11_refs, "fig11_pte_refs"),
    "fig12": (fig12_penalty, "fig12_penalty"),
    "fig13": (fig13_ipc, "fig13_ipc"),
    "fig15": (fig15_size, "fig15_size"),
    "fig16": (fig16_decode, "fig16_decode"),
    "fig17": (fig17_pde, "fig17_pde"),
    "fig18": (fig18_coalescing, "fig18_coalescing"),
    "retired": (retired_share, "retired"),
    "versus": (versus, "versus"),
}
