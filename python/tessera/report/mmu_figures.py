"""Figures of the scale-out MMU reproduction (matplotlib, Agg backend).

Each function takes one table from :mod:`tessera.report.mmu_analysis` and
writes ``<dir>/<stem>.png`` and ``.svg``. Where the paper gives a number for a
workload's counterpart, it is drawn as a black marker over our bar, so the
figure and the report's table say the same thing.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Optional

import matplotlib

matplotlib.use("Agg")  # files only; never open a window

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from tessera.report import paper_mmu as paper  # noqa: E402

__all__ = ["xlabel", "save", "bars", "FIGURES"]

# Fixed colours per series, so "4K" looks the same in every figure.
COLORS = {
    "4K": "#4C72B0",
    "2M": "#DD8452",
    "measured": "#4C72B0",
    "expected": "#8C8C8C",
    "l1d": "#4C72B0",
    "l2": "#55A868",
    "llc": "#C44E52",
    "walks_pki": "#4C72B0",
    "llc_mpki": "#C44E52",
    "perfect_mmu_llc": "#CCB974",
    "perfect_mmu_l2": "#55A868",
    "perfect_mmu_l1": "#C44E52",
    "perfect_tlb": "#222222",
    "walks": "#4C72B0",
    "cycles_per_walk": "#DD8452",
    "walk_cycles": "#55A868",
    "4K busy": "#A6BDDB",
    "2M busy": "#F2C4A0",
    "expected_busy": "#C8C8C8",
}


def xlabel(workload: str) -> str:
    """Tick label: the workload, and the paper's benchmark it stands for."""
    bench = paper.ANALOG_OF.get(workload)
    return f"{workload}\n({bench})" if bench and bench != workload else workload


def save(fig: "plt.Figure", out_dir: Path, stem: str) -> list[Path]:
    """Write PNG and SVG; SVG ids and metadata fixed so reruns give identical files."""
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    with plt.rc_context({"svg.hashsalt": "tessera", "svg.fonttype": "path"}):
        for ext, meta in (("png", {"Software": None}), ("svg", {"Date": None, "Creator": None})):
            p = out_dir / f"{stem}.{ext}"
            fig.savefig(p, format=ext, dpi=130, bbox_inches="tight", metadata=meta)
            paths.append(p)
    plt.close(fig)
    return paths


def bars(
    ax: "plt.Axes",
    workloads: Sequence[str],
    series: Mapping[str, Sequence[float]],
    labels: Optional[Mapping[str, str]] = None,
) -> np.ndarray:
    """Grouped bars, one group per workload; returns each series' x offsets (series × workloads)."""
    n = len(series)
    width = 0.8 / max(n, 1)
    x = np.arange(len(workloads))
    offsets = []
    for i, (name, values) in enumerate(series.items()):
        xs = x - 0.4 + width * (i + 0.5)
        vals = [0.0 if (v is None or (isinstance(v, float) and math.isnan(v))) else v for v in values]
        ax.bar(xs, vals, width, label=(labels or {}).get(name, name), color=COLORS.get(name))
        offsets.append(xs)
    ax.set_xticks(x)
    ax.set_xticklabels([xlabel(w) for w in workloads], rotation=45, ha="right", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    return np.array(offsets)


def _markers(ax: "plt.Axes", xs: Sequence[float], values: Sequence[Optional[float]], label: str, marker: str = "D") -> None:
    pts = [(x, v) for x, v in zip(xs, values) if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if pts:
        ax.scatter(
            [p[0] for p in pts], [p[1] for p in pts], marker=marker, color="black", s=22, zorder=5, label=label
        )


def _symlog(ax: "plt.Axes", values: pd.Series) -> None:
    """Log-like y axis that can still show 0 (THP can take a workload to zero
    walks), with headroom above the tallest bar."""
    ax.set_yscale("symlog", linthresh=0.01)
    top = values.dropna().max() if values.notna().any() else 1.0
    ax.set_ylim(0, max(top, 0.01) * 3)


def _bench(w: str) -> Optional[str]:
    return paper.ANALOG_OF.get(w)


def _separator(ax: "plt.Axes", workloads: Sequence[str]) -> None:
    """A dotted line between the scale-out analogs and the memory-intensive workloads."""
    n = sum(1 for w in workloads if _bench(w))
    if 0 < n < len(workloads):
        ax.axvline(n - 0.5, color="grey", linestyle=":", linewidth=1)


def _finish(
    fig: "plt.Figure", ax: "plt.Axes", wls: Sequence[str], ylabel: str, title: str, out: Path, stem: str
) -> list[Path]:
    """The common end of a one-panel figure: separator, labels, legend, files."""
    _separator(ax, wls)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(fontsize=8)
    return save(fig, out, stem)


def _models(t: pd.DataFrame) -> list[str]:
    """The timing models a Figure 1/3 table holds, main first ("" if unnamed)."""
    return list(t.attrs.get("models") or [""])


def _col(model: str, main: str, col: str) -> str:
    return col if model == main else f"{model} {col}"


def _panels(n: int) -> tuple["plt.Figure", list["plt.Axes"]]:
    fig, axes = plt.subplots(n, 1, figsize=(9, 4 * n if n == 1 else 3.6 * n), sharex=True, squeeze=False)
    return fig, list(axes[:, 0])


def _model_name(m: str) -> str:
    return {"ooo": "out-of-order model", "interval": "interval model"}.get(m, m)


def _clip_busy(ax: "plt.Axes", series: Mapping[str, pd.Series], off: np.ndarray, paper_values: Sequence) -> None:
    """Keep the y axis to the simulated and Equation 1 bars (and the paper's
    markers): Equation 1 with walker-busy cycles can run to thousands of %
    when the walker is busy nearly all the time (a walk-bound run); such a bar
    is cut at the top and labelled with its value."""
    if "expected_busy" not in series:
        return
    keep = [v for k, s in series.items() if k != "expected_busy" for v in s.tolist()]
    keep += [p.value for p in paper_values if p is not None and p.value is not None]
    keep = [float(v) for v in keep if v is not None and not math.isnan(float(v))]
    if not keep:
        return
    lo, hi = min(0.0, min(keep)), max(0.0, max(keep))
    span = (hi - lo) or 1.0
    top, bottom = hi + 0.25 * span, lo - 0.1 * span
    busy = series["expected_busy"].tolist()
    idx = list(series).index("expected_busy")
    if not any(v is not None and not math.isnan(v) and (v > top or v < bottom) for v in busy):
        return
    ax.set_ylim(bottom, top)
    for x, v in zip(off[idx], busy):
        if v is not None and not math.isnan(v) and (v > top or v < bottom):
            y = top if v > top else bottom
            ax.annotate(f"{v:.0f}", (x, y), xytext=(0, -10 if v > top else 4), textcoords="offset points",
                        ha="center", fontsize=7, color="#444444")


def fig1(t: pd.DataFrame, out: Path) -> list[Path]:
    """One panel per timing model. Under ooo the bars are the walk cost
    (cycles a walk is the oldest) and the walker-busy share (Table II)."""
    wls = list(t.index)
    ms = _models(t)
    fig, axes = _panels(len(ms))
    p4 = [paper.FIG1_WALK_SHARE.get(_bench(w) or "", (None, None))[0] for w in wls]
    p2 = [paper.FIG1_WALK_SHARE.get(_bench(w) or "", (None, None))[1] for w in wls]
    for ax, m in zip(axes, ms):
        series = {"4K": t[_col(m, ms[0], "4K")], "2M": t[_col(m, ms[0], "2M")]}
        names = {"4K": "4 KiB pages", "2M": "2 MiB pages (THP)"}
        if m == "ooo" and _col(m, ms[0], "4K busy") in t.columns:
            names = {"4K": "4 KiB, walk oldest", "2M": "2 MiB, walk oldest",
                     "4K busy": "4 KiB, walker busy", "2M busy": "2 MiB, walker busy"}
            series = {k: t[_col(m, ms[0], k)] for k in names}
        off = bars(ax, wls, series, names)
        b4 = list(series).index("4K busy") if "4K busy" in series else 0
        b2 = list(series).index("2M busy") if "2M busy" in series else 1
        _markers(ax, off[b4], [p.value if p else None for p in p4], "paper, 4 KiB (from text, approx.)")
        _markers(ax, off[b2], [p.value if p else None for p in p2], "paper, 2 MiB (from text, lower bound)", "^")
        _separator(ax, wls)
        ax.set_ylabel("% of cycles in data walks" + (f"\n{_model_name(m)}" if m else ""))
        ax.legend(fontsize=7)
    axes[0].set_title("Figure 1: execution time spent in page walks")
    return save(fig, out, "fig1_walk_share")


def fig2(t: pd.DataFrame, out: Path) -> list[Path]:
    wls = list(t.index)
    fig, ax = plt.subplots(figsize=(9, 4))
    off = bars(ax, wls, {"2M": t["2M"]}, {"2M": "2 MiB ÷ 4 KiB walk cycles"})
    _markers(ax, off[0], [paper.TABLE_IV.get(_bench(w) or "", (None, None, None))[2] for w in wls], "paper (Table IV)")
    ax.axhline(1.0, color="black", linewidth=0.8)
    return _finish(
        fig,
        ax,
        wls,
        "walk cycles, normalised to 4 KiB",
        "Figure 2: page-walk cycles with 2 MiB pages, normalised to 4 KiB",
        out,
        "fig2_normalised_walk_cycles",
    )


def fig3(t: pd.DataFrame, out: Path) -> list[Path]:
    """One panel per timing model: simulated speedup and Equation 1's
    expected (under ooo also with the walker-busy cycles)."""
    wls = list(t.index)
    ms = _models(t)
    fig, axes = _panels(len(ms))
    pm = [paper.FIG3_SPEEDUP.get(_bench(w) or "", (None, None))[0] for w in wls]
    pe = [paper.FIG3_SPEEDUP.get(_bench(w) or "", (None, None))[1] for w in wls]
    for ax, m in zip(axes, ms):
        names = {"measured": "simulated speedup", "expected": "expected (Equation 1)"}
        if m == "ooo" and _col(m, ms[0], "expected_busy") in t.columns:
            names = {"measured": "simulated speedup", "expected": "expected, walk-oldest cycles",
                     "expected_busy": "expected, walker-busy cycles"}
        series = {k: t[_col(m, ms[0], k)] for k in names}
        off = bars(ax, wls, series, names)
        _markers(ax, off[0], [p.value if p else None for p in pm], "paper, measured")
        _markers(ax, off[1], [p.value if p else None for p in pe], "paper, expected", "s")
        _clip_busy(ax, series, off, pm + pe)
        ax.axhline(0.0, color="black", linewidth=0.8)
        _separator(ax, wls)
        ax.set_ylabel("speedup 4 KiB → 2 MiB (%)" + (f"\n{_model_name(m)}" if m else ""))
        ax.legend(fontsize=7)
    axes[0].set_title("Figure 3: simulated vs Equation 1 expected speedup")
    return save(fig, out, "fig3_speedup")


def _pair(t: pd.DataFrame, out: Path, stem: str, ylabel: str, title: str, log: bool, hline: Optional[float] = None) -> list[Path]:
    wls = list(t.index)
    fig, ax = plt.subplots(figsize=(9, 4))
    bars(ax, wls, {"4K": t["4K"], "2M": t["2M"]}, {"4K": "4 KiB pages", "2M": "2 MiB pages (THP)"})
    if log:
        _symlog(ax, pd.concat([t["4K"], t["2M"]]))
    if hline is not None:
        ax.axhline(hline, color="black", linestyle="--", linewidth=0.8, label=f"{hline:g} (paper: 4 KiB walks well below)")
    return _finish(fig, ax, wls, ylabel, title, out, stem)


def fig4(t: pd.DataFrame, out: Path) -> list[Path]:
    return _pair(t, out, "fig4_walks_pki", "data page walks per 1000 instructions", "Figure 4: walk MPKI", log=True)


def fig5(t: pd.DataFrame, out: Path) -> list[Path]:
    return _pair(
        t, out, "fig5_cycles_per_walk", "average cycles per data page walk", "Figure 5: cycles per walk", log=False, hline=100
    )


def fig7(t: pd.DataFrame, out: Path) -> list[Path]:
    wls = list(t.index)
    fig, ax = plt.subplots(figsize=(9, 4))
    bars(
        ax,
        wls,
        {"l1d": t["l1d"], "l2": t["l2"], "llc": t["llc"]},
        {"l1d": "L1D misses (data + walk)", "l2": "L2 data misses", "llc": "LLC data misses"},
    )
    ax.axhline(0.0, color="black", linewidth=0.8)
    return _finish(
        fig,
        ax,
        wls,
        "% fewer misses with 2 MiB pages",
        "Figure 7: cache misses saved by 2 MiB pages",
        out,
        "fig7_cache_miss_reduction",
    )


def fig9(t: pd.DataFrame, out: Path) -> list[Path]:
    wls = list(t.index)
    fig, ax = plt.subplots(figsize=(9, 4))
    bars(
        ax,
        wls,
        {"walks_pki": t["walks_pki"], "llc_mpki": t["llc_mpki"]},
        {"walks_pki": "page walks per 1000 instr.", "llc_mpki": "LLC data misses per 1000 instr."},
    )
    _symlog(ax, pd.concat([t["walks_pki"], t["llc_mpki"]]))
    return _finish(
        fig,
        ax,
        wls,
        "per 1000 instructions (2 MiB pages)",
        "Figure 9: page walks vs LLC misses with 2 MiB pages",
        out,
        "fig9_walks_vs_llc",
    )


def fig10(t: pd.DataFrame, out: Path) -> list[Path]:
    wls = list(t.index)
    fig, axes = plt.subplots(2, 1, figsize=(10, 7.5), sharex=True)
    names = {
        "measured": "simulated",
        "perfect_mmu_llc": "PerfectMMU_LLC (43 cyc)",
        "perfect_mmu_l2": "PerfectMMU_L2 (20 cyc)",
        "perfect_mmu_l1": "PerfectMMU_L1 (12 cyc)",
        "perfect_tlb": "Perfect TLB (7 cyc)",
    }
    for ax, page in zip(axes, ("4K", "2M")):
        series = {k: t[f"{page} {k}"] for k in names}
        bars(ax, wls, series, names)
        ax.axhline(2.0, color="black", linestyle="--", linewidth=0.8, label="2 % (paper: perfect TLB below)")
        _separator(ax, wls)
        ax.set_ylabel(f"% of cycles, {page} pages")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[0].set_title("Figure 10: walk overhead and perfect-MMU-cache / perfect-TLB bounds")
    return save(fig, out, "fig10_bounds")


def table5(t: pd.DataFrame, out: Path) -> list[Path]:
    wls = list(t.index)
    fig, axes = plt.subplots(2, 1, figsize=(10, 7), sharex=True)
    for ax, (label, idx, title) in zip(
        axes, (("l1", 0, "only L1 prefetcher on"), ("all", 1, "all prefetchers on"))
    ):
        off = bars(
            ax,
            wls,
            {k: t[f"{label} {k}"] for k in ("walks", "cycles_per_walk", "walk_cycles")},
            {"walks": "page walks", "cycles_per_walk": "cycles per walk", "walk_cycles": "walk cycles"},
        )
        for j, (marker, what) in enumerate((("D", "walks"), ("s", "cycles per walk"), ("^", "walk cycles"))):
            vals = [paper.TABLE_V[_bench(w)][idx][j] if _bench(w) in paper.TABLE_V else None for w in wls]
            _markers(ax, off[j], vals, f"paper: {what}", marker)
        ax.axhline(1.0, color="black", linewidth=0.8)
        _separator(ax, wls)
        ax.set_ylabel(f"{title},\nnormalised to all off")
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    axes[0].set_title("Table V: prefetchers and page walks (2 MiB pages)")
    return save(fig, out, "table5_prefetch")


#: stem → (drawing function, name of the analysis table it draws).
FIGURES = {
    "fig1_walk_share": (fig1, "fig1"),
    "fig2_normalised_walk_cycles": (fig2, "fig2"),
    "fig3_speedup": (fig3, "fig3"),
    "fig4_walks_pki": (fig4, "fig4"),
    "fig5_cycles_per_walk": (fig5, "fig5"),
    "fig7_cache_miss_reduction": (fig7, "fig7"),
    "fig9_walks_vs_llc": (fig9, "fig9"),
    "fig10_bounds": (fig10, "fig10"),
    "table5_prefetch": (table5, "table5"),
}
