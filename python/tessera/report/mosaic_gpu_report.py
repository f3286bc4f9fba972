"""The mosaic-gpu report: our Figs. 8–15 of the Mosaic paper's evaluation,
coalescing, bloat and placement, next to the paper's numbers.

:func:`build` turns the tables of :mod:`tessera.report.mosaic_gpu` into
report blocks (:mod:`tessera.report.render`); :data:`FIGURES` draws the
figures. Every number printed comes from those tables and every sentence that
states one of our results is computed from them; the fixed prose describes
the models, the paper and the differences between them.

Compaction (Fig. 16, Table 2) is :func:`_compaction` and the figure
``fig16``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from tessera.report import mosaic_gpu as mg
from tessera.report import mosaic_motivation as mm
from tessera.report import paper_mosaic_gpu as paper
from tessera.report.intervals import within
from tessera.report.mmu_figures import plt, save
from tessera.report.mmu_report import fmt
from tessera.report.mosaic_motivation_report import _cell, _change, _minutes, _pct, _summary_rows, _toml
from tessera.report.mosaic_report import reproducing
from tessera.report.render import Block, Bullets, Figure, Heading, Para, Table

__all__ = ["build", "FIGURES"]

_NAMES = {
    "mosaic_over_gpummu": "Mosaic / GPU-MMU", "mosaic_over_ideal": "Mosaic / ideal",
    "ideal_over_gpummu": "ideal / GPU-MMU", "mosaic_dp_over_gpummu_dp": "Mosaic / GPU-MMU",
    "mosaic_dp_over_ideal_dp": "Mosaic / ideal", "ideal_dp_over_gpummu_dp": "ideal / GPU-MMU",
    "gpummu_dp_over_gpummu": "GPU-MMU DP / GPU-MMU", "mosaic_dp_over_gpummu": "Mosaic DP / GPU-MMU",
    "cocoa_only_over_gpummu": "CoCoA alone / GPU-MMU", "mosaic_over_cocoa_only": "Mosaic / CoCoA alone",
}
_RESIDENT = ["mosaic_over_gpummu", "mosaic_over_ideal", "ideal_over_gpummu"]
_DP = ["mosaic_dp_over_gpummu_dp", "mosaic_dp_over_ideal_dp", "ideal_dp_over_gpummu_dp"]


def _cols(t: pd.DataFrame, want: list[str]) -> list[str]:
    have = set(t.columns.get_level_values(0))
    return [c for c in want if c in have]


def _table(t: pd.DataFrame, cols: list[str], caption: str) -> Table:
    return Table(["group", "apps", "workloads"] + [h for c in cols for h in (f"{_NAMES[c]}: mean", "range")],
                 _summary_rows(t[cols], cols), caption=caption)


def _gap(ratio: float, of: str = "") -> str:
    """Mosaic over ideal as "within x %" (or "x % above"), ``of`` appended to
    the first ("within x % of the ideal TLB" / "x % above the ideal TLB")."""
    if ratio is None or math.isnan(ratio):
        return "—"
    if abs(ratio - 1.0) < 0.0005:
        return "level with" + (f" {of}" if of else "")
    if ratio <= 1.0:
        return f"within {100.0 * (1.0 - ratio):.1f} %" + (f" of {of}" if of else "")
    return f"{100.0 * (ratio - 1.0):.1f} % above" + (f" {of}" if of else "")


def _apps(n: Any) -> str:
    return f"{n} app{'' if str(n) == '1' else 's'}"


def _paper_ideal_over_gpummu(group: str) -> float:
    """The paper's ideal TLB over GPU-MMU, implied by its two numbers:
    (1 + Mosaic's gain) / (1 − Mosaic's gap to the ideal TLB)."""
    return (1.0 + paper.MOSAIC_OVER_GPUMMU[group] / 100.0) / (1.0 - paper.MOSAIC_WITHIN_IDEAL[group] / 100.0)


def _paper_dp_cost(group: str) -> float:
    """GPU-MMU with demand paging over GPU-MMU without, implied by Figs. 8/9
    and 12: (1 + Mosaic over GPU-MMU without DP) / (1 + over GPU-MMU with DP)."""
    return (1.0 + paper.MOSAIC_DP_OVER_GPUMMU_NODP[group] / 100.0) / (1.0 + paper.MOSAIC_OVER_GPUMMU[group] / 100.0)


# ------------------------------------------------------------------ sections


def _intro(t: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    timing = ctx.get("measured", ctx["timing"])
    ws = t["weighted_speedups"].reset_index()
    counts = ws.drop_duplicates("mix").groupby("group").size()
    return [
        Heading(1, "Reproduction: Mosaic (MICRO 2017), the evaluation"),
        Para(f"Paper: {paper.CITATION}. This report re-runs its evaluation (§6) on Tessera's GPU machine: Mosaic "
             "(CoCoA, the contiguity-conserving allocator, and the in-place coalescer; preset `mosaic_gpu_mosaic`) "
             "against GPU-MMU (preset `mosaic_gpu`, the paper's Table 1) and an ideal TLB: Figs. 8 and 9 "
             "(homogeneous and heterogeneous workloads), Fig. 10 (two-application workloads), Fig. 11 (each "
             "application), Fig. 12 (demand paging), Fig. 13 (TLB hit rates), Figs. 14a and 14b (L1 and "
             "L2 TLB base-page entries), Figs. 15a and 15b (L1 and L2 TLB large-page entries), what "
             "coalescing, bloat and placement do, and compaction under pre-fragmented memory "
             f"(Fig. 16, Table 2). Workloads: {int(counts.get('homogeneous', 0))} homogeneous and "
             f"{int(counts.get('heterogeneous', 0))} heterogeneous, those of the mosaic-motivation report, each "
             "scored by its weighted speedup (the paper's Eq. 1). Sentences that compare are computed from the "
             f"tables. Scale: **{ctx['scale']}**. Run time: **{_minutes(timing['total_s'])}** on "
             f"{int(timing.get('workers', 0) or 0)} worker(s) ({int(timing['runs'])} simulations, "
             f"{int(timing['computed'])} simulated, {int(timing['already_stored'])} reused from the store)."),
    ]


def _claims(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    f8, f9, f12, f13, f14, s11 = t["fig8"], t["fig9"], t["fig12"], t["fig13"], t["fig14a"], t["fig11_summary"]
    rows = []
    for fig, tab, g in (("Fig. 8", f8, "homogeneous"), ("Fig. 9", f9, "heterogeneous")):
        rows.append([f"{fig}: Mosaic over GPU-MMU ({g})", f"+{paper.MOSAIC_OVER_GPUMMU[g]} %",
                     _change(_cell(tab, "mosaic_over_gpummu", g, "all")),
                     _change(_cell(tab, "mosaic_dp_over_gpummu_dp", g, "all"))])
        rows.append([f"{fig}: Mosaic against the ideal TLB ({g})", f"within {paper.MOSAIC_WITHIN_IDEAL[g]} %",
                     _gap(_cell(tab, "mosaic_over_ideal", g, "all")),
                     _gap(_cell(tab, "mosaic_dp_over_ideal_dp", g, "all"))])
    for g in ("homogeneous", "heterogeneous"):
        rows.append([f"Fig. 12: Mosaic with demand paging over GPU-MMU without ({g})",
                     f"+{paper.MOSAIC_DP_OVER_GPUMMU_NODP[g]} %", "—",
                     _change(_cell(f12, "mosaic_dp_over_gpummu", g, "all"))])
    f = paper.FIG11

    def s(variant: str, col: str) -> float:
        try:
            return float(s11.loc[(variant, "all"), col])
        except KeyError:
            return math.nan

    n_apps = 0 if math.isnan(s("resident", "apps")) else int(s("resident", "apps"))
    rows += [
        ["Fig. 11: applications Mosaic improves", f"{f['improved_pct']} % of {f['apps']}",
         f"{_pct(s('resident', 'improved_pct'))} of {n_apps}",
         _pct(s("dp", "improved_pct"))],
        ["Fig. 11: Mosaic's IPC over GPU-MMU's, min–max (mean)",
         f"{f['min_pct']}–{f['max_pct']:.0f} % ({f['mean_pct']} %)",
         *[f"{_pct(100 * s(v, 'min'))}–{_pct(100 * s(v, 'max'), 0)} ({_pct(100 * s(v, 'mean'))})"
           for v in ("resident", "dp")]],
        ["Fig. 11: applications within 90 / 80 / 70 % of the ideal TLB",
         " / ".join(f"{v} %" for v in f["within_ideal_pct"].values()),
         " / ".join(_pct(s("resident", f"within_{k}_pct")) for k in (90, 80, 70)),
         " / ".join(_pct(s("dp", f"within_{k}_pct")) for k in (90, 80, 70))],
    ]
    for n, v in paper.FIG13_GPUMMU_L2_HIT.items():
        rows.append([f"Fig. 13: GPU-MMU's L2 TLB hit rate, {n} applications", f"{v:.0f} %",
                     _pct(100 * _get(f13, ("all", str(n)), "gpummu_l2_hit")), "—"])
    rows.append(["Fig. 13: Mosaic's L1 / L2 TLB miss rate (all workloads)", f"< {paper.FIG13_MOSAIC_MISS_BELOW:.0f} %",
                 f"{_pct(100 * (1 - _get(f13, ('all', 'all'), 'mosaic_l1_hit')))} / "
                 f"{_pct(100 * (1 - _get(f13, ('all', 'all'), 'mosaic_l2_hit')))}", "—"])
    rows.append(["Fig. 14a: Mosaic with 8 L1 base-page entries instead of 128", f"−{paper.FIG14A_MOSAIC_8_LOSS} %",
                 _change(_get(f14, ("mosaic", 8, "all"), "mean_own")), "—"])
    rows += [_tlb_claim(t, mg.TLB_SWEEPS[k]) for k in _TLB_PAPER]
    return [Heading(2, "Summary: the paper's numbers and ours"),
            Table(["finding", "paper (with demand paging)", "ours, no paging cost", "ours, demand paging"], rows,
                  numeric=False,
                  caption="Means over the workloads of the scale below. The paper's Figs. 8–14 all run with demand "
                          "paging; which of our two columns compares with them is discussed under *Which comparison "
                          "is comparable*. '—': not run or not defined.")]


#: The paper's findings for Figs. 14b and 15, in the summary's words (§6.3
#: gives no numbers for them).
_TLB_PAPER = {"fig14b": "both sensitive (no number given)",
              "fig15a": "Mosaic sensitive, less than to L2 base-page entries; GPU-MMU insensitive",
              "fig15b": "Mosaic sensitive, less than to L2 base-page entries; GPU-MMU insensitive"}


def _tlb_claim(t: Mapping[str, pd.DataFrame], sweep: mg.TlbSweep) -> list[str]:
    """A summary row: each machine's change at the sweep's smallest size
    against its own at the preset's."""
    m, g = _sens(t, sweep.key, "mosaic"), _sens(t, sweep.key, "gpummu")
    n = "—" if m.empty else str(int(m["entries"]))

    def own(r: pd.Series) -> str:
        if r.empty:
            return "—"
        if int(r["unchanged"]) == int(r["workloads"]):
            return "±0 (identical runs)"
        return _change(float(r["own"])) + ("" if _sensitive(r) else " (noise)")

    return [f"{sweep.figure}: {sweep.what}, {n} instead of {sweep.preset_entries} (Mosaic / GPU-MMU)",
            _TLB_PAPER[sweep.key], f"{own(m)} / {own(g)}", "—"]


def _get(t: pd.DataFrame, idx: Any, col: str) -> float:
    try:
        return float(t.loc[idx, col])
    except KeyError:
        return math.nan


def _scale(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    wl = t["workloads"]
    rows = [[a, r.stands_for, r.params, fmt(r.touched_mib, 1), f"{r.warp_instructions / 1e6:.2f}", fmt(r.ipc_gpummu, 3),
             fmt(r.ipc_mosaic, 3), fmt(r.ipc_ideal, 3)] for a, r in zip(wl.index, wl.itertuples())]
    ws = paper.WORKING_SET_MB
    lo, hi, mean = wl["touched_mib"].min(), wl["touched_mib"].max(), wl["touched_mib"].mean()
    return [
        Heading(2, "Scale and workloads"),
        Para(f"The paper's 27 applications have working sets of {ws['app_min']}–{ws['app_max']} MB "
             f"({ws['app_mean']} MB on average) and ran {paper.WORKLOADS['homogeneous']} homogeneous and "
             f"{paper.WORKLOADS['heterogeneous']} heterogeneous workloads. Ours are 11 of Tessera's built-in GPU "
             "kernels, each standing for one of the paper's applications, with the parameters and workloads of the "
             f"mosaic-motivation report at the same scale. At this scale they touch {fmt(lo, 1)}–{fmt(hi, 1)} MiB "
             f"({fmt(mean, 1)} MiB on average), and run far fewer instructions than the paper's. A 2 MiB region "
             "can only be coalesced once all its 512 pages are mapped and resident, so a kernel's footprint against 2 MiB "
             "bounds what Mosaic can do for it (*Coalescing and bloat*)."),
        Table(["kernel", "stands for", "parameters", "touched MiB", "warp insts (M)", "IPC GPU-MMU", "IPC Mosaic",
               "IPC ideal"], rows, caption="Each kernel alone on 30 SMs, no paging cost (seed 0)."),
        Para("Homogeneous workloads run 1–5 copies of one kernel, heterogeneous ones 2–5 different kernels drawn "
             "at "
             f"random (seed {mm.MIX_SEED}); the SMs are split equally. IPC_alone of Eq. 1 is the application alone on "
             "its share of the SMs under GPU-MMU with no paging cost (the mosaic-motivation report's `alone` sweep); "
             "every figure divides two weighted speedups of one workload, so that choice cancels out."),
    ]


def _machines(scale: str) -> list[Block]:
    rows = []
    for k, (preset, over) in mg.CONFIGS.items():
        text = ", ".join(f"`{key} = {_toml(v)}`" for key, v in over.items()) or "the preset as it is"
        rows.append([k, mg.CONFIG_LABEL[k], f"`{preset}`", text])
    for sweep in mg.TLB_SWEEPS.values():
        for base in mg.TLB_MACHINES:
            rows.append(_tlb_machine(sweep, base, scale))
    return [
        Heading(2, "Machines"),
        Para("`mosaic_gpu` is GPU-MMU: 4 KiB pages from one global free list, so the applications' pages interleave "
             "in every 2 MiB frame. `mosaic_gpu_mosaic` inherits it and changes the memory manager only: CoCoA gives "
             "each 2 MiB frame to one application and places each allocation's pages at their offsets in it; the "
             "in-place coalescer sets the large-page bit once a frame's 512 pages are all usable (mapped and "
             "transferred) as one virtual region, and the walker then reads the 2 MiB translation at the same walk length. GPU-MMU runs "
             "identically over either page-table format (a test checks it). *No paging cost* is every page resident "
             "at launch; *demand paging* (`_dp`) is the preset's: each far fault costs its 55 µs load-to-use "
             "latency, completed one after another on one link. `cocoa_only` is CoCoA's placement with 4 KiB pages "
             "and no coalescing (what the authors' code runs as its own GPU-MMU), so it separates placement from "
             "coalescing."),
        Table(["machine", "what it is", "preset", "overrides"], rows),
    ]


def _tlb_machine(sweep: mg.TlbSweep, base: str, scale: str) -> list[str]:
    """A row of the machines table for one machine of a TLB-size figure."""
    key, arrays = next(iter(sweep.override(0).items()))
    kept = ", ".join(f"{v['entries']} {'base' if a == '4k' else 'large'}-page entries"
                     for a, v in arrays.items() if a != sweep.array)
    text = _toml(arrays).replace("entries = 0", "entries = N", 1)
    sizes = ", ".join(str(n) for n in sweep.sizes(base, scale))
    return [f"{sweep.prefix(base)}_N", f"{base} with N = {sizes} {sweep.what} ({sweep.figure}; {kept} kept)",
            f"`{mg.CONFIGS[base][0]}`", f"{base}'s, and `{key} = {text}`"]


def _comparable(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    f12 = t["fig12"]
    ours = {g: _cell(f12, "gpummu_dp_over_gpummu", g, "all") for g in ("homogeneous", "heterogeneous")}
    lo = min(_cell(f12, "gpummu_dp_over_gpummu", g, "all", "min") for g in ours)
    hi = max(_cell(f12, "gpummu_dp_over_gpummu", g, "all", "max") for g in ours)
    theirs = {g: _paper_dp_cost(g) for g in ours}
    worse = all(ours[g] < theirs[g] for g in ours)
    return [
        Heading(2, "Which comparison is comparable"),
        Para("**Paper:** every result of §6 runs with demand paging, and Fig. 12 finds it costs little: Mosaic beats "
             f"GPU-MMU with demand paging by {paper.MOSAIC_OVER_GPUMMU['homogeneous']} % / "
             f"{paper.MOSAIC_OVER_GPUMMU['heterogeneous']} % (homogeneous / heterogeneous) and GPU-MMU without it by "
             f"{paper.MOSAIC_DP_OVER_GPUMMU_NODP['homogeneous']} % / "
             f"{paper.MOSAIC_DP_OVER_GPUMMU_NODP['heterogeneous']} %; together they put GPU-MMU with demand "
             f"paging at {_change(theirs['homogeneous'])} / "
             f"{_change(theirs['heterogeneous'])} against GPU-MMU without (no loss). **Ours:** GPU-MMU with demand "
             f"paging changes the weighted speedup by {_change(ours['homogeneous'])} / "
             f"{_change(ours['heterogeneous'])} against GPU-MMU without (workloads {_change(lo)} to {_change(hi)}), "
             + ("far more than the paper's. " if worse else "not more than the paper's. ")
             + "Our kernels run for a short time against one 55 µs fault per 4 KiB page, and the faults are "
             "serialised, so a demand-paged run is almost all paging (the mosaic-motivation report measures it) and "
             "the translation cost that Mosaic removes is a small part of it. The runs without paging cost are "
             "therefore the comparable ones for what the memory manager does to translation: the paper's demand "
             "paging costs little, so its Figs. 8–11 are close to what it would show without it. The demand-paged "
             "runs are shown beside them, as the paper's own configuration."),
    ]


def _fig89(t: Mapping[str, pd.DataFrame], key: str, group: str, fig: str) -> list[Block]:
    tab = t[key]
    res, dp = _cols(tab, _RESIDENT), _cols(tab, _DP)
    m, i, ig = (_cell(tab, c, group, "all") for c in ("mosaic_over_gpummu", "mosaic_over_ideal", "ideal_over_gpummu"))
    lo = _cell(tab, "mosaic_over_gpummu", group, "all", "min")
    hi = _cell(tab, "mosaic_over_gpummu", group, "all", "max")
    mdp, idp = _cell(tab, "mosaic_dp_over_gpummu_dp", group, "all"), _cell(tab, "mosaic_dp_over_ideal_dp", group, "all")
    ns = [n for (g, n) in tab.index if n != "all"]
    per_n = {n: _cell(tab, "mosaic_over_ideal", group, n) for n in ns}
    gain_n = {n: _cell(tab, "mosaic_over_gpummu", group, n) for n in ns}
    p_ideal = _paper_ideal_over_gpummu(group)
    head = ("homogeneous workloads (1–5 copies of one kernel)" if group == "homogeneous"
            else "heterogeneous workloads (2–5 different kernels)")
    share = (m - 1.0) / (ig - 1.0) if ig and not math.isnan(ig) and abs(ig - 1.0) > 1e-9 else math.nan
    text = (f"**Paper:** Mosaic improves the weighted speedup by {paper.MOSAIC_OVER_GPUMMU[group]} % over GPU-MMU and "
            f"comes within {paper.MOSAIC_WITHIN_IDEAL[group]} % of the ideal TLB, so the ideal TLB is "
            f"{_change(p_ideal)} over GPU-MMU there. **Ours, no paging cost:** Mosaic changes it by {_change(m)} over "
            f"GPU-MMU on average (workloads {_change(lo)} to {_change(hi)}) and comes {_gap(i, 'the ideal TLB')}, "
            f"which is itself {_change(ig)} over GPU-MMU. ")
    if not math.isnan(share):
        p_share = (paper.MOSAIC_OVER_GPUMMU[group] / 100) / (p_ideal - 1.0)
        text += (f"Our gain is {'smaller' if m < 1 + paper.MOSAIC_OVER_GPUMMU[group] / 100 else 'larger'} than the "
                 f"paper's. Two things set it: what the ideal TLB gains over GPU-MMU "
                 f"({_change(ig)} here, {_change(p_ideal)} in the paper"
                 + (": less for translation to win at our scale, as the mosaic-motivation report's Fig. 3 found"
                    if ig < p_ideal else "") + f"), and the share of it Mosaic recovers ({100 * share:.0f} % here, "
                 f"{100 * p_share:.0f} % in the paper). ")
    if ns:
        lo_n, hi_n = min(gain_n, key=gain_n.get), max(gain_n, key=gain_n.get)
        text += (f"Per application count, the mean gain over GPU-MMU runs from {_change(gain_n[lo_n])} "
                 f"({_apps(lo_n)}) to {_change(gain_n[hi_n])} ({_apps(hi_n)}), and the mean against the ideal TLB from "
                 f"{_change(min(per_n.values()))} to {_change(max(per_n.values()))}. ")
    text += (f"**Ours, demand paging:** Mosaic changes it by {_change(mdp)} over GPU-MMU and comes "
             f"{_gap(idp, 'the ideal TLB')}: the runs are bound by paging, which Mosaic does not shorten (both "
             "transfer the same 4 KiB pages).")
    blocks: list[Block] = [
        Heading(2, f"{fig}: {head}"),
        Para(text),
        _table(tab, res, f"{fig}, no paging cost: per workload the ratio of weighted speedups, summarised by "
                         "application count ('all': the group)."),
    ]
    if dp:
        blocks.append(_table(tab, dp, f"{fig}, demand paging (the preset's), the same ratios."))
    blocks.append(Figure(f"figures/{key}", f"{fig}, ours: mean weighted speedup over GPU-MMU's per application count, "
                                           "no paging cost (left) and demand paging (right); the paper's averages as "
                                           "dashed lines."))
    return blocks


def _fig10(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    f = t["fig10"]
    if f.empty:
        return [Heading(2, "Fig. 10: two-application heterogeneous workloads"), Para("No two-application workloads.")]
    gap = f["mosaic_over_gpummu"] / f["ideal_over_gpummu"]
    close = int((gap >= 0.95).sum())
    worst = gap.idxmin()
    rows = [[m, _change(r.mosaic_over_gpummu), _change(r.ideal_over_gpummu), _gap(g),
             _change(r.get("mosaic_dp_over_gpummu_dp", math.nan)), _change(r.get("ideal_dp_over_gpummu_dp", math.nan))]
            for (m, r), g in zip(f.iterrows(), gap)]
    return [
        Heading(2, "Fig. 10: two-application heterogeneous workloads"),
        Para("**Paper:** most of 15 two-application workloads are *TLB-friendly* (Mosaic close to the ideal TLB); in "
             "*TLB-sensitive* ones (HS-CONS, NW-HISTO) a memory-intensive application's L2 TLB conflict misses hurt a "
             f"TLB-sensitive one and a gap remains. **Ours (no paging cost):** Mosaic comes within 5 % of the ideal "
             f"TLB in {close} of {len(f)} two-application workloads; the largest gap is `{worst}` "
             f"({_gap(gap[worst], 'the ideal TLB')})."),
        Table(["workload", "Mosaic / GPU-MMU", "ideal / GPU-MMU", "Mosaic against ideal", "Mosaic / GPU-MMU, DP",
               "ideal / GPU-MMU, DP"], rows, caption="Weighted speedups; DP: with demand paging."),
    ]


def _fig11(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    s = t["fig11_summary"]
    f = paper.FIG11
    rows = [[v, n, str(int(r.apps)), _pct(r.improved_pct), _pct(100 * r["min"]), _pct(100 * r["mean"]),
             _pct(100 * r["max"]), _pct(r.within_90_pct), _pct(r.within_80_pct), _pct(r.within_70_pct)]
            for (v, n), r in s.iterrows()]
    text = (f"**Paper:** of {f['apps']} applications in heterogeneous workloads, Mosaic improves "
            f"{f['improved_pct']} %; their IPC relative to GPU-MMU ranges {f['min_pct']}–{f['max_pct']:.0f} % "
            f"({f['mean_pct']} % on average; the worst loses {f['worst_loss_pct']} %), and "
            + ", ".join(f"{v} %" for v in f["within_ideal_pct"].values())
            + " are within 90, 80 and 70 % of the ideal TLB. ")
    ig = _cell(t["fig9"], "ideal_over_gpummu", "heterogeneous", "all")
    p_ig = _paper_ideal_over_gpummu("heterogeneous")
    try:
        r = s.loc[("resident", "all")]
        narrower = r["max"] - r["min"] < (f["max_pct"] - f["min_pct"]) / 100
        text += (f"**Ours, no paging cost:** of {int(r.apps)} applications Mosaic improves {_pct(r.improved_pct)}; "
                 f"their IPC relative to GPU-MMU ranges {_pct(100 * r['min'])}–{_pct(100 * r['max'])} "
                 f"({_pct(100 * r['mean'])} on average; the worst "
                 + (f"loses {_pct(100 * (1 - r['min']))}" if r["min"] < 1 else "loses nothing")
                 + f"), and {_pct(r.within_90_pct)}, {_pct(r.within_80_pct)} and "
                 f"{_pct(r.within_70_pct)} are within 90, 80 and 70 % of the ideal TLB. The range is "
                 f"{'narrower' if narrower else 'wider'} than the paper's"
                 + (f"; the ideal TLB itself gains {_change(ig)} over GPU-MMU on these workloads against the "
                    f"{_change(p_ig)} the paper's numbers imply (Fig. 9), so there is less for Mosaic to win or lose."
                    if narrower and ig < p_ig else "."))
    except KeyError:
        pass
    return [
        Heading(2, "Fig. 11: each application of the heterogeneous workloads"),
        Para(text),
        Table(["runs", "apps in workload", "applications", "improved", "min", "mean", "max", "≥ 90 % of ideal",
               "≥ 80 % of ideal", "≥ 70 % of ideal"], rows,
              caption="IPC under Mosaic over IPC under GPU-MMU, per application; 'resident': no paging cost, 'dp': "
                      "demand paging. Every application: data/fig11.csv and data/fig11_dp.csv."),
        Figure("figures/fig11", "Fig. 11, ours: every application of the heterogeneous workloads, IPC under Mosaic "
                                "and the ideal TLB over GPU-MMU's, sorted by Mosaic's (no paging cost)."),
    ]


def _fig12(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    f = t["fig12"]
    cols = _cols(f, ["gpummu_dp_over_gpummu", "mosaic_dp_over_gpummu", "mosaic_over_gpummu"])
    names = dict(_NAMES, mosaic_over_gpummu="Mosaic / GPU-MMU")
    md = {g: _cell(f, "mosaic_dp_over_gpummu", g, "all") for g in ("homogeneous", "heterogeneous")}
    return [
        Heading(2, "Fig. 12: demand paging"),
        Para(f"**Paper:** Mosaic with demand paging beats GPU-MMU without it by "
             f"{paper.MOSAIC_DP_OVER_GPUMMU_NODP['homogeneous']} % (homogeneous) and "
             f"{paper.MOSAIC_DP_OVER_GPUMMU_NODP['heterogeneous']} % (heterogeneous): demand paging has little "
             f"impact. **Ours:** {_change(md['homogeneous'])} and {_change(md['heterogeneous'])}; our demand paging "
             "costs far more than the paper's (*Which comparison is comparable*), so this is the figure where our "
             "numbers part from the paper's."),
        Table(["group", "apps", "workloads"] + [h for c in cols for h in (f"{names[c]}: mean", "range")],
              _summary_rows(f[cols], cols),
              caption="Weighted speedup over GPU-MMU's without paging cost ('Mosaic / GPU-MMU': both without)."),
    ]


def _fig13(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    f = t["fig13"]
    rows = [[g, n, str(int(r.workloads)), _pct(100 * r.gpummu_l1_hit), _pct(100 * r.mosaic_l1_hit),
             _pct(100 * r.gpummu_l2_hit), _pct(100 * r.mosaic_l2_hit), _pct(100 * r.mosaic_l1_large_share),
             _pct(100 * r.mosaic_l2_large_share), _pct(100 * r.mosaic_coalesced_share)] for (g, n), r in f.iterrows()]
    l2 = {n: _get(f, ("all", str(n)), "gpummu_l2_hit") for n in paper.FIG13_GPUMMU_L2_HIT}
    ml1, ml2 = 1 - _get(f, ("all", "all"), "mosaic_l1_hit"), 1 - _get(f, ("all", "all"), "mosaic_l2_hit")
    gl1, gl2 = 1 - _get(f, ("all", "all"), "gpummu_l1_hit"), 1 - _get(f, ("all", "all"), "gpummu_l2_hit")
    large = _get(f, ("all", "all"), "mosaic_l1_large_share")
    ns = [n for (g, n) in f.index if g == "all" and n != "all"]
    text = (f"**Paper:** GPU-MMU's L2 TLB hit rate falls from {paper.FIG13_GPUMMU_L2_HIT[2]:.0f} % with two "
            f"applications to {paper.FIG13_GPUMMU_L2_HIT[5]:.0f} % with five; Mosaic's miss rate is below "
            f"{paper.FIG13_MOSAIC_MISS_BELOW:.0f} % at L1 and L2. **Ours (no paging cost):** GPU-MMU's L2 TLB hits "
            + ", ".join(f"{_pct(100 * v)} with {n}" for n, v in l2.items())
            + f" applications; over all workloads Mosaic misses {_pct(100 * ml1)} at L1 and {_pct(100 * ml2)} at L2 "
            f"(GPU-MMU: {_pct(100 * gl1)} and {_pct(100 * gl2)}), "
            + ("below" if ml1 < paper.FIG13_MOSAIC_MISS_BELOW / 100 and ml2 < paper.FIG13_MOSAIC_MISS_BELOW / 100
               else "not below")
            + f" the paper's {paper.FIG13_MOSAIC_MISS_BELOW:.0f} % at both levels. Mosaic's L1 hits come from 2 MiB "
            f"entries {_pct(100 * large)} of the time. The L2 TLB sees only the L1's misses, {_pct(100 * ml1)} of the "
            f"lookups under Mosaic against {_pct(100 * gl1)} under GPU-MMU, so Mosaic's L2 hit rate is over far "
            "fewer lookups. "
            + (f"GPU-MMU's L2 TLB hits less than the paper's at every count the paper gives; the mosaic-motivation "
               "report finds the same and explains it with our streaming kernels, which read a page on one SM and "
               "move on." if all(v < paper.FIG13_GPUMMU_L2_HIT[n] / 100 for n, v in l2.items()) else ""))
    return [
        Heading(2, "Fig. 13: TLB hit rates"),
        Para(text),
        Table(["group", "apps", "workloads", "L1 hits GPU-MMU", "L1 hits Mosaic", "L2 hits GPU-MMU", "L2 hits Mosaic",
               "Mosaic L1 hits from 2 MiB entries", "Mosaic L2 hits from 2 MiB entries", "full frames coalesced"],
              rows, caption="Averages over workloads, no paging cost. Group 'all': homogeneous and heterogeneous "
                            f"workloads of each count together (the paper's grouping; counts {', '.join(ns)}). The "
                            "paper's Fig. 13 keeps only workloads whose L2 TLB hits below 98 %; ours keeps all."),
        Figure("figures/fig13", "Fig. 13, ours: L1 and L2 TLB hit rates per application count (all workloads), "
                                "GPU-MMU and Mosaic, no paging cost."),
    ]


def _tlb_section(t: Mapping[str, pd.DataFrame], sweep: mg.TlbSweep, scale: str) -> list[Block]:
    """One of Figs. 14a, 14b, 15a, 15b: the paper's finding and ours, the
    table and the figure."""
    f, base = t[sweep.key], sweep.preset_entries
    rows = [[c, str(e), g, str(int(r.workloads)), _change(r["mean"]), f"{_change(r['min'])} to {_change(r['max'])}",
             _change(r.mean_own)] for (c, e, g), r in f.iterrows()]
    return [
        Heading(2, f"{sweep.figure}: {sweep.what}"),
        Para(_TLB_TEXT[sweep.key](t, sweep, scale)),
        Table(["machine", "entries", "group", "workloads", f"over GPU-MMU at {base}: mean", "range",
               f"over itself at {base}: mean"], rows,
              caption=f"Weighted speedup per workload over GPU-MMU's with the preset's {base} {sweep.what}, "
                      "summarised; no paging cost."),
        Figure(f"figures/{sweep.key}", f"{sweep.figure}, ours: mean weighted speedup over GPU-MMU's at {base} "
                                       f"{sweep.what}, all workloads."),
    ]


def _fig14a_text(t: Mapping[str, pd.DataFrame], sweep: mg.TlbSweep, scale: str) -> str:
    f, base = t[sweep.key], sweep.preset_entries
    smallest = min(sweep.entries[scale])
    m8, g8 = _get(f, ("mosaic", smallest, "all"), "mean_own"), _get(f, ("gpummu", smallest, "all"), "mean_own")
    return (f"**Paper:** Mosaic is insensitive to the L1 TLB's base-page entries and loses "
            f"{paper.FIG14A_MOSAIC_8_LOSS} % with 8 instead of {base}; GPU-MMU scales poorly (no number given). "
            f"**Ours (no paging cost):** with {smallest} entries instead of {base}, Mosaic changes by {_change(m8)} "
            f"and GPU-MMU by {_change(g8)} on average against their own {base}-entry runs; Mosaic is "
            + ("the less sensitive." if abs(m8 - 1) < abs(g8 - 1) else "not the less sensitive."))


def _sens(t: Mapping[str, pd.DataFrame], key: str, machine: str) -> pd.Series:
    """The row of ``tlb_sensitivity`` (an empty one if not run)."""
    s = t["tlb_sensitivity"]
    return s.loc[(key, machine)] if (key, machine) in s.index else pd.Series(dtype=float)


def _sensitive(r: pd.Series) -> bool:
    """A change whose 95 % interval over the workloads excludes none."""
    return not r.empty and not within(float(r["own_lo"]), float(r["own_hi"]), 1.0)


def _moves(r: pd.Series, base: int) -> str:
    """How a machine's weighted speedup moves at the sweep's smallest size,
    against its own at the preset's ``base``, with the evidence."""
    if r.empty:
        return "was not run"
    if int(r["unchanged"]) == int(r["workloads"]):
        return f"does not change at all (all {int(r['workloads'])} workloads run exactly as at {base})"
    return (f"changes by {_change(r['own'])} (95 % interval over the {int(r['workloads'])} workloads "
            f"{_change(r['own_lo'])} to {_change(r['own_hi'])}; per workload {_change(r['own_min'])} to "
            f"{_change(r['own_max'])}): "
            + ("sensitive" if _sensitive(r) else "noise, the interval includes no change"))


def _fig14b_text(t: Mapping[str, pd.DataFrame], sweep: mg.TlbSweep, scale: str) -> str:
    g, m = _sens(t, sweep.key, "gpummu"), _sens(t, sweep.key, "mosaic")
    base, n = sweep.preset_entries, min(sweep.entries[scale])
    both = _sensitive(g) and _sensitive(m)
    if both:
        verdict = "Both machines are sensitive, as the paper finds."
    elif _sensitive(g) or _sensitive(m):
        one, other = ("GPU-MMU", "Mosaic") if _sensitive(g) else ("Mosaic", "GPU-MMU")
        verdict = f"{one} is sensitive and {other}'s change is noise; the paper finds both sensitive."
    else:
        verdict = "Neither change is more than noise; the paper finds both sensitive."
    return (f"**Paper:** \"{paper.FIG14B_BOTH_SENSITIVE}\" (§6.3; the text gives no numbers). **Ours (no paging "
            f"cost):** with {n} L2 TLB base-page entries instead of the preset's {base} (its 16 ways and 256 "
            f"large-page entries kept), each machine against its own run at {base}: GPU-MMU {_moves(g, base)}; "
            f"Mosaic {_moves(m, base)}. {verdict}")


def _fig15_text(t: Mapping[str, pd.DataFrame], sweep: mg.TlbSweep, scale: str) -> str:
    g, m = _sens(t, sweep.key, "gpummu"), _sens(t, sweep.key, "mosaic")
    ref = mg.TLB_SWEEPS[mg.REFERENCE_SWEEP]
    rm = _sens(t, ref.key, "mosaic")
    base, n = sweep.preset_entries, min(sweep.entries[scale])
    text = (f"**Paper:** \"{paper.FIG15_MOSAIC_SENSITIVE}\"; \"{paper.FIG15_GPUMMU_INSENSITIVE}\" (§6.3; the text "
            f"gives no numbers). **Ours (no paging cost):** with {n} {sweep.what} instead of the preset's {base}, "
            f"each machine against its own run at {base}: Mosaic {_moves(m, base)}"
            + ("" if m.empty else f"; its runs there hit a 2 MiB TLB entry {m['l1_2m_hits']:,.0f} times at L1 and "
                                  f"{m['l2_2m_hits']:,.0f} at L2, against {m['l1_2m_hits_preset']:,.0f} and "
                                  f"{m['l2_2m_hits_preset']:,.0f} at the preset's sizes") + ". ")
    if not m.empty and not rm.empty:
        same = base // n == ref.preset_entries // int(rm["entries"])
        text += (f"With {int(rm['entries'])} L2 TLB base-page entries instead of {ref.preset_entries} "
                 f"({ref.figure}, {'the same factor' if same else 'a different factor'}) it changes by "
                 f"{_change(rm['own'])}{'' if _sensitive(rm) else ' (noise)'}. " + _versus(m) + ". ")
    if not g.empty:
        hits = g["l1_2m_hits"] + g["l2_2m_hits"]
        text += (f"GPU-MMU {_moves(g, base)}{' (the paper: insensitive)' if _sensitive(g) else ''}; its runs at "
                 f"{int(g['entries'])} hit a 2 MiB TLB entry "
                 f"{g['l1_2m_hits']:,.0f} times at L1 and {g['l2_2m_hits']:,.0f} at L2 (`gpu.l1_tlb.2m.hits`, "
                 "`gpu.l2_tlb.2m.hits`): "
                 + ("it makes no use of the large-page entries, as the paper says." if hits == 0
                    else "it does use large-page entries, unlike the paper's GPU-MMU."))
    return text


def _versus(r: pd.Series) -> str:
    """Mosaic with fewer large-page entries against Mosaic with fewer L2
    base-page entries, per workload: how much further from its own run at
    the preset's sizes the one lies than the other, and what it says."""
    d, lo, hi = float(r["vs_ref"]), float(r["vs_ref_lo"]), float(r["vs_ref_hi"])
    told = (f"Per workload, its change here (either way) minus its change there is {100 * d:+.1f} points on average "
            f"(95 % interval {100 * lo:+.1f} to {100 * hi:+.1f})")
    if math.isnan(d) or within(lo, hi, 0.0):
        return (f"{told}: noise, so Mosaic is not shown less sensitive to these large-page entries than to the L2 "
                "base-page ones")
    if hi < 0:
        return (f"{told}: Mosaic is less sensitive to these large-page entries than to the L2 base-page ones, as the "
                "paper finds")
    return (f"{told}: Mosaic is more sensitive to these large-page entries than to the L2 base-page ones, unlike the "
            "paper")


_TLB_TEXT: dict[str, Callable[[Mapping[str, pd.DataFrame], mg.TlbSweep, str], str]] = {
    "fig14a": _fig14a_text, "fig14b": _fig14b_text, "fig15a": _fig15_text, "fig15b": _fig15_text}


def _coalescing(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    c, cm, pl = t["coalescing"], t["coalescing_mixes"], t["placement"]
    rows = [[a, fmt(r.touched_mib, 1), f"{r.coalesced:.0f}", f"{r.not_contiguous:.0f}", f"{r.app_pages:.0f}",
             f"{r.bloat_pages:.0f}", _pct(r.bloat_pct), fmt(r.get("ipc_gpummu", math.nan), 3),
             fmt(r.get("ipc_cocoa_only", math.nan), 3), fmt(r.get("ipc_mosaic", math.nan), 3)]
            for a, r in c.iterrows()]
    none = [a for a, r in c.iterrows() if r.coalesced == 0]
    small = [a for a in none if c.loc[a, "touched_mib"] < 2.0]
    mrows = [[g, n, str(int(r.workloads)), fmt(r.coalesced, 1), fmt(r.not_contiguous, 1), _pct(100 * r.coalesced_share),
              _pct(r.bloat_pct), f"{r.conversions:.0f}", f"{r.guarantee_breaks:.0f}"] for (g, n), r in cm.iterrows()]
    pc = _cols(pl, ["cocoa_only_over_gpummu", "mosaic_over_cocoa_only", "mosaic_over_gpummu"])
    names = dict(_NAMES, mosaic_over_gpummu="Mosaic / GPU-MMU")
    co = _cell(pl, "cocoa_only_over_gpummu", "all", "all")
    mc = _cell(pl, "mosaic_over_cocoa_only", "all", "all")
    return [
        Heading(2, "Coalescing, bloat and placement"),
        Para(f"Alone, {len(c) - len(none)} of {len(c)} kernels get at least one 2 MiB region coalesced; "
             + (f"{', '.join(f'`{a}`' for a in none)} get none" if none else "every kernel gets some")
             + (f" ({len(small)} of them touch less than 2 MiB, so no frame of theirs ever fills)" if none else "")
             + f". CoCoA's bloat (free 4 KiB slots of the frames an application holds, over its pages) averages "
             f"{_pct(c['bloat_pct'].mean())} alone, at most {_pct(c['bloat_pct'].max())}: each application holds "
             "whole 2 MiB frames, so a small footprint bloats most. The paper gives Mosaic's bloat only under "
             "compaction (§6.4, Table 2, below). Over all workloads, CoCoA's placement alone changes the "
             f"weighted speedup by {_change(co)} against GPU-MMU's (same 4 KiB pages), and coalescing on top of it by "
             f"{_change(mc)}"
             + (": neither moves the average by 1 % or more." if max(abs(mc - 1), abs(co - 1)) < 0.01 else
                (": most of Mosaic's change is coalescing's." if abs(mc - 1) > abs(co - 1) else
                 ": most of Mosaic's change is placement's."))),
        Table(["kernel", "touched MiB", "regions coalesced", "full frames not contiguous", "pages held", "free slots",
               "bloat", "IPC GPU-MMU", "IPC CoCoA alone", "IPC Mosaic"], rows,
              caption="Each kernel alone on 30 SMs, no paging cost, counters of the Mosaic run."),
        Table(["group", "apps", "workloads", "regions coalesced", "not contiguous", "full frames coalesced", "bloat",
               "conversions", "guarantees broken"], mrows,
              caption="Mosaic, no paging cost: means per workload (conversions and broken guarantees: sums)."),
        Table(["group", "apps", "workloads"] + [h for x in pc for h in (f"{names[x]}: mean", "range")],
              _summary_rows(pl[pc], pc), caption="Placement against coalescing: weighted speedup ratios."),
    ]


def _seeds(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    a = t["apps_alone"]
    if "mosaic_over_gpummu" not in a:
        return []
    rows = [[k, fmt(r.mosaic_over_gpummu, 3),
             f"{fmt(r.mosaic_over_gpummu_min, 3)}–{fmt(r.mosaic_over_gpummu_max, 3)}",
             fmt(r.get("mosaic_over_ideal", math.nan), 3),
             f"{fmt(r.get('mosaic_over_ideal_min', math.nan), 3)}–{fmt(r.get('mosaic_over_ideal_max', math.nan), 3)}"]
            for k, r in a.iterrows()]
    same = [k for k, r in a.iterrows() if r.mosaic_over_gpummu_min == r.mosaic_over_gpummu_max
            and r.get("mosaic_over_ideal_min", 0) == r.get("mosaic_over_ideal_max", 1)]
    win = [k for k, r in a.iterrows() if r.mosaic_over_gpummu_min > 1.0]
    lose = [k for k, r in a.iterrows() if r.mosaic_over_gpummu_max < 1.0]
    seeds = int(a["seeds"].max())
    return [
        Heading(2, "Single kernels and the seeds' spread"),
        Para(f"Each kernel alone also runs under {seeds - 1} more seed{'s' if seeds > 2 else ''} (its generated "
             "data) under GPU-MMU, Mosaic "
             "and the ideal TLB. Mosaic beats GPU-MMU on every seed for "
             + (", ".join(f"`{k}`" for k in win) if win else "no kernel")
             + (f"; it loses on every seed for {', '.join(f'`{k}`' for k in lose)}" if lose else "")
             + ("; for the others the seeds' ranges include 1 and the difference is noise."
                if len(win) + len(lose) < len(a) else ".")
             + (f" The seeds give the same ratios for {', '.join(f'`{k}`' for k in same)}: their data do not "
                "depend on the seed, so their ranges say nothing about noise." if same else "")),
        Table(["kernel", "Mosaic / GPU-MMU", f"range ({seeds} seeds)", "Mosaic / ideal", f"range ({seeds} seeds)"],
              rows, caption="IPC ratios, each kernel alone on 30 SMs, no paging cost."),
    ]


def _fig16_rows(f: pd.DataFrame, key: str) -> list[list[str]]:
    vs = [v for v in mg.CAC_VARIANTS if v in f["mean"].columns]
    rows = []
    for x, r in f.iterrows():
        rows.append([f"{100 * x:g} %"] + [f"{fmt(r[('mean', v)], 3)} ({fmt(r[('min', v)], 3)}–{fmt(r[('max', v)], 3)})"
                                         for v in vs])
    return rows


def _variants(vs: list[str]) -> str:
    """Variants named in prose, every one with compaction said once."""
    if len(vs) > 1 and "none" not in vs and len(vs) == len(mg.CAC_VARIANTS) - 1:
        return "every variant with compaction"
    return " and ".join(mg.CAC_LABEL[v] for v in vs)


def _compaction(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    if "fig16a" not in t or t["fig16a"].empty:
        return [Heading(2, "Compaction (not run)"), Para("The compaction sweeps were not run.")]
    a, b, t2 = t["fig16a"], t["fig16b"], t["table2"]
    vs = [v for v in mg.CAC_VARIANTS if v in a["mean"].columns]
    n = int(a[("count", vs[0])].iloc[0])
    top, low = max(a.index), min(a.index)
    at = {v: float(a.loc[top, ("mean", v)]) for v in vs}
    best = max(vs, key=lambda v: at[v])
    worst = min(vs, key=lambda v: at[v])
    flat = {v: float(a.loc[low, ("mean", v)]) for v in vs}
    flat_span = max(flat.values()) - min(flat.values())
    bloat_rows = []
    for occ, r in t2.iterrows():
        paper_b = paper.TABLE2_BLOAT.get(round(float(occ), 2))
        bloat_rows.append([f"{100 * occ:g} %", "—" if paper_b is None else f"{paper_b:.2f} %"]
                          + [_pct(r[("bloat_pct", v)]) for v in vs]
                          + [f"{r[('frames_freed', 'cac')]:.0f}" if ("frames_freed", "cac") in r else "—",
                             _pct(100 * r[("stall_share", "cac")]) if ("stall_share", "cac") in r else "—",
                             f"{r[('guarantee_breaks', 'none')]:.0f}" if ("guarantee_breaks", "none") in r else "—"])
    heads = [mg.CAC_LABEL[v] for v in vs]
    stall_cac = float(t2[("stall_share", "cac")].mean()) if ("stall_share", "cac") in t2 else math.nan
    stall_bc = float(t2[("stall_share", "cac_bc")].mean()) if ("stall_share", "cac_bc") in t2 else math.nan
    bl = {v: float(t2[("bloat_pct", v)].mean()) for v in vs if ("bloat_pct", v) in t2}
    lowest = min(bl, key=lambda v: bl[v]) if bl else None
    tied = [v for v in bl if lowest is not None and abs(bl[v] - bl[lowest]) < 0.05]
    return [
        Heading(2, "Compaction under pre-fragmented memory (Fig. 16, Table 2)"),
        Para("The stress test of §6.4: before the run a share of the 2 MiB frames (the fragmentation index) is "
             "filled to a share of its 4 KiB slots (the occupancy) with data of no application, placed at random "
             "(`physmem.fragmentation`, `physmem.fragmentation_occupancy`). Mosaic without compaction then finds no "
             "free frame for a region and breaks CoCoA's soft guarantee (its pages go to the free slots of "
             "pre-fragmented frames and cannot coalesce). CAC empties the frame with the fewest pages into other "
             "pre-fragmented frames and stalls every SM for the copies: 456 cycles per 4 KiB page over the channel, "
             "82 (80 ns) in DRAM for CAC-BC, none for ideal CAC (`os.cac`). Compaction runs when a page finds no "
             "frame, as in the authors' code: Tessera's applications free nothing while they run, so the paper's "
             "trigger on deallocation never fires. Each value is the weighted speedup over Mosaic's on unfragmented "
             f"memory for the same workload; {n} two-application workload{'s' if n != 1 else ''}, no paging cost."),
        Para(f"At index {100 * top:g} % (occupancy {100 * mg.FIXED_OCCUPANCY:g} %), {mg.CAC_LABEL[best]} does best "
             f"({fmt(at[best], 3)} of unfragmented Mosaic) and {mg.CAC_LABEL[worst]} worst ({fmt(at[worst], 3)})."
             + ("" if low == top else
                f" At index {100 * low:g} % the variants' means span {fmt(flat_span, 3)}"
                + (": free frames remain there, so little needs compacting (the paper: \"minimal performance impact "
                   "when the fragmentation index is less than 90 %\")." if flat_span < 0.02 else "."))
             + (f" The GPU stalled for copies for {_pct(100 * stall_cac)} of the channel-copy runs at index 100 % "
                f"(mean over occupancies), against {_pct(100 * stall_bc)} with CAC-BC: the stall, charged once while "
                "the data are placed at launch, weighs against runs far shorter than the paper's."
                if not math.isnan(stall_cac) else "")),
        Table(["index"] + heads, _fig16_rows(a, "index"),
              caption=f"Fig. 16a: weighted speedup over unfragmented Mosaic, occupancy {100 * mg.FIXED_OCCUPANCY:g} % "
                      "(mean, min–max over workloads)."),
        Figure("figures/fig16", "Fig. 16: weighted speedup over unfragmented Mosaic by fragmentation index (a) "
                                    "and occupancy (b)."),
        Table(["occupancy"] + heads, _fig16_rows(b, "occupancy"),
              caption=f"Fig. 16b: weighted speedup over unfragmented Mosaic, index {100 * mg.FIXED_INDEX:g} %."),
        Para("Table 2's bloat is the free 4 KiB slots of the frames applications hold over their pages: what Mosaic "
             "holds beyond a 4 KiB-only manager."
             + (f" Averaged over occupancies it is lowest with {_variants(tied)} ({_pct(bl[lowest])})"
                + (": without compaction the applications' pages fill the free slots of pre-fragmented frames "
                   "instead of whole frames of their own, and those cannot coalesce." if tied == ["none"] else ".")
                if lowest else "")),
        Table(["occupancy", "paper (CAC)"] + heads + ["frames freed (CAC)", "stall share (CAC)",
                                                      "guarantees broken (no CAC)"], bloat_rows,
              caption=f"Table 2: memory bloat at index {100 * mg.FIXED_INDEX:g} % (means over workloads)."),
    ]


def _differences() -> list[Block]:
    return [
        Heading(2, "Differences from the paper's setup"),
        Bullets([
            "Simulator: GPGPU-Sim 3.2.2 (MAFIA) there, Tessera's event-driven GPU machine here, with the authors' "
            "blocking load/store unit (see the mosaic-motivation report).",
            "Applications: 11 of the paper's 27, as built-in kernels on generated data, with working sets far below "
            "the paper's 10–362 MB and far shorter runs; fewer and smaller workloads per count.",
            "Demand paging: ours charges 55 µs per 4 KiB far fault, serialised, against kernels that run for "
            "milliseconds at most, so it dominates every demand-paged run; the paper's costs little (Fig. 12). The "
            "runs without paging cost are shown as the comparable ones.",
            "Page table: 4 levels of 9 bits; Mosaic's large pages are marked in the level-2 entry and read at the "
            "same walk length.",
            "Figs. 14 and 15 run a few sizes below the preset's (Table 1's) for each array, not a whole range; "
            "the 16-way L2 base-page array needs a power-of-two number of sets, so its sizes are multiples of 16 "
            "that halve.",
        ]),
    ]


def build(tables: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    """The whole report, in order."""
    scale = ctx["scale"]
    parts = ["alone"] + [f"mix-{c}" for c in mg.all_configs(scale)] + [f"seeds-{c}" for c in mg.SEED_CONFIGS]
    return (
        _intro(tables, ctx)
        + _claims(tables)
        + _scale(tables)
        + _machines(scale)
        + _comparable(tables)
        + _fig89(tables, "fig8", "homogeneous", "Fig. 8")
        + _fig89(tables, "fig9", "heterogeneous", "Fig. 9")
        + _fig10(tables)
        + _fig11(tables)
        + _fig12(tables)
        + _fig13(tables)
        + [b for sweep in mg.TLB_SWEEPS.values() for b in _tlb_section(tables, sweep, scale)]
        + _coalescing(tables)
        + _seeds(tables)
        + _compaction(tables)
        + _differences()
        + reproducing(ctx, parts)
    )


# ------------------------------------------------------------------- figures


def _fig89_bars(name: str, group: str) -> Callable[[pd.DataFrame, Path], list[Path]]:
    def draw(t: pd.DataFrame, out_dir: Path) -> list[Path]:
        d = t.loc[group]
        d = d[d.index != "all"]
        ns = list(d.index)
        fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.2), sharey=True)
        x = np.arange(len(ns))
        for ax, (m, i, title) in zip(axes, (("mosaic_over_gpummu", "ideal_over_gpummu", "no paging cost"),
                                            ("mosaic_dp_over_gpummu_dp", "ideal_dp_over_gpummu_dp", "demand paging"))):
            for k, (c, color, lbl) in enumerate(((m, "#55A868", "Mosaic"), (i, "#8172B2", "ideal TLB"))):
                if c in d.columns.get_level_values(0):
                    ax.bar(x - 0.2 + 0.4 * k, d[(c, "mean")].to_numpy(dtype=float), 0.4, color=color, label=lbl)
            ax.axhline(1.0 + paper.MOSAIC_OVER_GPUMMU[group] / 100, color="#55A868", ls="--", lw=1,
                       label="Mosaic, paper")
            ax.axhline(_paper_ideal_over_gpummu(group), color="#8172B2", ls="--", lw=1, label="ideal, paper (implied)")
            ax.axhline(1.0, color="#222222", lw=0.8)
            ax.set_xticks(x, [f"{n} app{'s' if n != '1' else ''}" for n in ns])
            ax.set_title(title, fontsize=9)
            ax.grid(axis="y", alpha=0.3)
        axes[0].set_ylabel("weighted speedup / GPU-MMU")
        # Above the panels, where it cannot hide a bar.
        handles, labels = axes[0].get_legend_handles_labels()
        fig.legend(handles, labels, fontsize=8, ncol=4, loc="upper center", frameon=False)
        fig.tight_layout(rect=(0, 0, 1, 0.9))
        return save(fig, out_dir, name)

    return draw


def fig11_curve(f: pd.DataFrame, out_dir: Path) -> list[Path]:
    fig, ax = plt.subplots(figsize=(7.5, 3.2))
    x = np.arange(len(f))
    ax.plot(x, f["mosaic_norm"].to_numpy(dtype=float), color="#55A868", label="Mosaic")
    ax.plot(x, f["ideal_norm"].to_numpy(dtype=float), color="#8172B2", ls="none", marker=".", ms=4, label="ideal TLB")
    ax.axhline(1.0, color="#222222", lw=0.8)
    ax.set_xlabel("applications, sorted by Mosaic's IPC / GPU-MMU's")
    ax.set_ylabel("IPC / GPU-MMU")
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return save(fig, out_dir, "fig11")


def fig13_bars(f: pd.DataFrame, out_dir: Path) -> list[Path]:
    d = f.loc["all"]
    d = d[d.index != "all"]
    ns = list(d.index)
    x = np.arange(len(ns))
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.0), sharey=True)
    for ax, lvl in zip(axes, ("l1", "l2")):
        for k, (c, color, lbl) in enumerate((("gpummu", "#4C72B0", "GPU-MMU"), ("mosaic", "#55A868", "Mosaic"))):
            ax.bar(x - 0.2 + 0.4 * k, 100 * d[f"{c}_{lvl}_hit"].to_numpy(dtype=float), 0.4, color=color, label=lbl)
        ax.set_xticks(x, [f"{n} app{'s' if n != '1' else ''}" for n in ns])
        ax.set_title(f"{lvl.upper()} TLB", fontsize=9)
        ax.set_ylim(0, 105)
        ax.grid(axis="y", alpha=0.3)
    for n, v in paper.FIG13_GPUMMU_L2_HIT.items():
        if str(n) in ns:
            axes[1].plot([ns.index(str(n)) - 0.2], [v], marker="*", color="#C44E52", ms=10, ls="none",
                         label="GPU-MMU, paper" if n == min(paper.FIG13_GPUMMU_L2_HIT) else None)
    axes[0].set_ylabel("hit rate (%)")
    handles, labels = axes[1].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, ncol=3, loc="upper center", frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return save(fig, out_dir, "fig13")


def _tlb_lines(sweep: mg.TlbSweep) -> Callable[[pd.DataFrame, Path], list[Path]]:
    """The line plot of one of Figs. 14a, 14b, 15a, 15b: each machine's mean
    over GPU-MMU at the preset's size, by entries (largest first)."""
    def draw(f: pd.DataFrame, out_dir: Path) -> list[Path]:
        fig, ax = plt.subplots(figsize=(6, 3.2))
        for c, color, lbl in (("gpummu", "#4C72B0", "GPU-MMU"), ("mosaic", "#55A868", "Mosaic")):
            if c not in f.index.get_level_values(0):
                continue
            d = f.xs((c, "all"), level=("config", "group")).sort_index(ascending=False)
            ax.plot([str(e) for e in d.index], d["mean"].to_numpy(dtype=float), marker="o", color=color, label=lbl)
        ax.axhline(1.0, color="#222222", lw=0.8)
        ax.set_xlabel(sweep.what)
        ax.set_ylabel(f"weighted speedup / GPU-MMU at {sweep.preset_entries}")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        return save(fig, out_dir, sweep.key)

    return draw


def fig16_lines(f: pd.DataFrame, out_dir: Path) -> list[Path]:
    """Fig. 16: ``f`` is Fig. 16a's and 16b's tables under ``index`` and ``occupancy``."""
    if f.empty:
        return []
    fig, axes = plt.subplots(1, 2, figsize=(9.5, 3.2), sharey=True)
    colors = {"none": "#C44E52", "cac": "#4C72B0", "cac_bc": "#55A868", "ideal_cac": "#8172B2"}
    for ax, (key, title) in zip(axes, (("index", "(a) by fragmentation index"), ("occupancy", "(b) by occupancy"))):
        d = f.loc[key]
        for v in mg.CAC_VARIANTS:
            if ("mean", v) in d.columns:
                ax.plot([f"{100 * x:g}" for x in d.index], d[("mean", v)].to_numpy(dtype=float), marker="o",
                        color=colors[v], label=mg.CAC_LABEL[v])
        ax.axhline(1.0, color="#222222", lw=0.8)
        ax.set_xlabel(f"{key} (%)")
        ax.set_title(title, fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    axes[0].set_ylabel("weighted speedup / unfragmented Mosaic")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, ncol=4, loc="upper center", frameon=False)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return save(fig, out_dir, "fig16")

#: name → (draw, table key), for :func:`tessera.report.mosaic_run.write_report`.
FIGURES = {"fig8": (_fig89_bars("fig8", "homogeneous"), "fig8"), "fig9": (_fig89_bars("fig9", "heterogeneous"), "fig9"),
           "fig11": (fig11_curve, "fig11"), "fig13": (fig13_bars, "fig13"),
           **{k: (_tlb_lines(sweep), k) for k, sweep in mg.TLB_SWEEPS.items()}, "fig16": (fig16_lines, "fig16")}
