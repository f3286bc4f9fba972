"""The sentences of the GTSM report that state a result, computed from the
tables they describe.

Each function takes analysis tables of :mod:`tessera.report.gtsm_study` and
returns sentences (Markdown), so that a rerun whose numbers move also moves
the words: no comparison here is fixed text. A difference whose 95 %
interval over seeds contains 0 is called "within noise"
(:mod:`tessera.report.intervals`); a range of the paper's is compared as a
range (:func:`intervals.range_agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Optional

import pandas as pd

from tessera.report import gtsm_study as gs
from tessera.report import paper_gtsm as paper
from tessera.report.intervals import range_agreement
from tessera.report.mosaic_prose import num, span

__all__ = [
    "num",
    "verdict",
    "gain_text",
    "fig11_findings",
    "fig12_findings",
    "fig13_findings",
    "ideal_gap_findings",
    "fig15_findings",
    "fig16_findings",
    "fig17_findings",
    "fig18_findings",
    "retired_findings",
    "beyond_findings",
    "gt_entry_findings",
    "versus_findings",
]

_WHERE = {"yes": "inside", "partly": "overlapping but reaching outside", "no": "outside"}


def _list(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _names(wls: Sequence[str]) -> list[str]:
    return [paper.WORKLOAD_NAMES.get(w, w) for w in wls]


def _nan(x: float) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def verdict(mean: float, lo: float, hi: float) -> str:
    """``"gain"`` (the whole interval above 0), ``"loss"`` (below 0),
    ``"within noise"`` (it contains 0), ``"identical"`` (every seed's runs
    equal) or ``"no interval"`` (one seed)."""
    if _nan(lo) or _nan(hi):
        return "no interval"
    if lo == hi == mean == 0:
        return "identical"
    if lo > 0:
        return "gain"
    if hi < 0:
        return "loss"
    return "within noise"


def gain_text(mean: float, lo: float, hi: float, digits: int = 1) -> str:
    """``+12.3 % [10.1, 14.5]`` with ``(noise)`` when the interval contains 0."""
    if _nan(mean):
        return "—"
    sign = "+" if mean >= 0 else ""
    text = f"{sign}{num(mean, digits)} %"
    if not (_nan(lo) or _nan(hi)):
        text += f" [{num(lo, digits)}, {num(hi, digits)}]"
        if lo == hi == mean == 0:
            text += " (identical runs)"
        elif lo <= 0 <= hi:
            text += " (noise)"
    return text


def _counts(t: pd.DataFrame, mean: str, lo: str, hi: str) -> dict[str, int]:
    v = [verdict(a, b, c) for a, b, c in zip(t[mean], t[lo], t[hi])]
    return {k: v.count(k) for k in ("gain", "loss", "within noise", "identical", "no interval")}


# ------------------------------------------------------------------ Fig. 11


def _pct_of(t: pd.DataFrame, w: str, col: str) -> str:
    return f"{w} {num(float(t.loc[w, col]))} %"


def fig11_findings(t11: pd.DataFrame) -> list[str]:
    """Which workloads have more than 10 % of their 4 KiB page-table
    references served by memory (the paper's 'slower PT access' group),
    against the paper's grouping; MIS's L2 share; GT-PDE-4MB's references
    per walk against 4 KiB's."""
    out = []
    if "4k" not in set(t11.index.get_level_values(1)):
        return out
    k = t11.xs("4k", level="design")
    slow = [w for w in k.index if float(k.loc[w, "dram_pct"]) > paper.FIG11_SLOW_DRAM_SHARE]
    agree = [w for w in k.index if (w in slow) == (w in paper.SLOW_GROUP)]
    out.append(f"With 4 KiB pages {len(slow)} of {len(k)} workloads have more than "
               f"{paper.FIG11_SLOW_DRAM_SHARE:g} % of their page-table references served by memory"
               + (f" ({_list([_pct_of(k, w, 'dram_pct') for w in slow])})" if slow else "")
               + f"; the paper's 'slower PT access' group is {_list(_names(paper.SLOW_GROUP))}. "
               f"Our grouping matches the paper's for {len(agree)} of {len(k)} workloads. Memory's share ranges "
               f"{span(float(k['dram_pct'].min()), float(k['dram_pct'].max()))} over all workloads.")
    if "mis" in k.index:
        l2 = float(k.loc["mis", "l2_pct"])
        out.append(f"MIS has {num(l2)} % of its page-table references served by the L2 cache (the paper: "
                   f"{paper.FIG11_MIS_L2_SHARE:g} %).")
    if "gt_pde_4m" in set(t11.index.get_level_values(1)):
        g = t11.xs("gt_pde_4m", level="design")
        common = [w for w in k.index if w in g.index]
        ratio = [float(g.loc[w, "refs_per_walk"]) / float(k.loc[w, "refs_per_walk"]) for w in common
                 if float(k.loc[w, "refs_per_walk"]) > 0]
        if ratio:
            out.append(f"GT-PDE-4MB walks read {span(min(ratio), max(ratio), 2, '×')} as many page-table entries per "
                       "walk as 4 KiB walks (no PTE level: the walk ends at the GT-PDE).")
    return out


# ------------------------------------------------------------------ Fig. 12


def fig12_findings(t12: pd.DataFrame) -> list[str]:
    """The drop in cycles per walk from 4 KiB to the GT-PDE modes: the
    slow group's range against the paper's 40–160 cycles, and whether the
    GT-PDE modes have similar penalties."""
    out = []
    designs = set(t12.index.get_level_values(1))
    if "gt_pde_4m" not in designs or "drop" not in t12:
        return out
    g = t12.xs("gt_pde_4m", level="design")
    plo, phi = paper.FIG12_SLOW_PENALTY_DROP
    for name, grp in (("slow", paper.SLOW_GROUP), ("fast", paper.FAST_GROUP)):
        d = g[g.index.isin(grp)]["drop"]
        if not len(d):
            continue
        lo, hi = float(d.min()), float(d.max())
        s = (f"From 4 KiB to GT-PDE-4MB the miss penalty falls by {span(lo, hi, 1, ' cycles')} on the paper's "
             f"{'slower' if name == 'slow' else 'faster'}-PT group ({_list([w for w in gs._order(d.index)])})")
        if name == "slow":
            s += f", {_WHERE[range_agreement(lo, hi, plo, phi)]} the paper's {plo:g}–{phi:g} cycles."
        else:
            s += " (the paper gives no number for this group)."
        out.append(s)
    gts = [d for d in ("gt_pde_1m", "gt_pde_2m", "gt_pde_4m") if d in designs]
    if len(gts) > 1:
        pen = pd.DataFrame({d: t12.xs(d, level="design")["penalty"] for d in gts})
        rel = 100.0 * (pen.max(axis=1) - pen.min(axis=1)) / pen.min(axis=1)
        out.append(f"The cycles per walk of GT-PDE-1MB, 2MB and 4MB differ by up to {num(float(rel.max()))} % on one "
                   f"workload ({rel.idxmax()}; the slowest over the fastest) and by {num(float(rel.median()))} % on the "
                   "median workload; the paper found them all similar, their page tables fitting the same cache level.")
    return out


# ------------------------------------------------------------------ Fig. 13


def fig13_findings(ipc: pd.DataFrame, summary: pd.DataFrame) -> list[str]:
    """The headline (GT-PDE-4MB against ideal 2 MiB), the two groups'
    gains over 4 KiB as ranges against the paper's, and noise counts."""
    out = []
    if "gt_pde_4m" in summary.index and "thp" in summary.index:
        of = float(summary.loc["gt_pde_4m", "of_ideal_mean"])
        t = ipc.xs("gt_pde_4m", level="design")
        near = "within" if abs(of - paper.FIG13_GT4M_OF_IDEAL) <= gs.ABOUT else "outside"
        out.append(f"**GT-PDE-4MB reaches {num(of)} % of ideal 2 MiB's IPC** on average over the workloads "
                   f"(per workload {span(float(t['of_ideal'].min()), float(t['of_ideal'].max()))}; geometric mean "
                   f"{num(float(summary.loc['gt_pde_4m', 'of_ideal_geomean']))} %), against the paper's "
                   f"{paper.FIG13_GT4M_OF_IDEAL:g} % ({near} {gs.ABOUT:g} points).")
    if "gt_pde_4m" in summary.index:
        s = summary.loc["gt_pde_4m"]
        for name, grp, (plo, phi) in (("slow", paper.SLOW_GROUP, paper.FIG13_SLOW_GAIN),
                                      ("fast", paper.FAST_GROUP, paper.FIG13_FAST_GAIN)):
            lo, hi = float(s[f"{name}_lo"]), float(s[f"{name}_hi"])
            if _nan(lo):
                continue
            out.append(f"On {_list([paper.WORKLOAD_NAMES[w] for w in grp])} GT-PDE-4MB gains "
                       f"{span(lo, hi)} IPC over 4 KiB pages, {_WHERE[range_agreement(lo, hi, plo, phi)]} the paper's "
                       f"{plo:g}–{phi:g} %.")
        c = _counts(ipc.xs("gt_pde_4m", level="design"), "gain", "gain_lo", "gain_hi")
        out.append(f"Seed by seed, GT-PDE-4MB's gain over 4 KiB is a gain beyond noise on {c['gain']} workloads, "
                   f"a loss beyond noise on {c['loss']}, within noise on {c['within noise']}"
                   + (f" and without an interval (one seed) on {c['no interval']}" if c["no interval"] else "") + ".")
    if "thp" in summary.index:
        out.append(f"Ideal 2 MiB pages gain {num(float(summary.loc['thp', 'gain_geomean']))} % over 4 KiB (geometric "
                   "mean over the workloads); the GT-PDE modes' means are in the table above.")
    return out


def ideal_gap_findings(gap: pd.DataFrame) -> list[str]:
    """Where GT-PDE-4MB's cycles beyond ideal 2 MiB go, summed over the
    workloads' shares: walks, L2 TLB probes, data stalls."""
    if not len(gap):
        return []
    out = [f"GT-PDE-4MB runs {span(float(gap['gap_pct'].min()), float(gap['gap_pct'].max()))} more cycles than ideal "
           "2 MiB pages per workload. Of that difference, walks are "
           f"{span(float(gap['walk_pct'].min()), float(gap['walk_pct'].max()), 0)}, L2 TLB probes "
           f"{span(float(gap['tlb_pct'].min()), float(gap['tlb_pct'].max()), 0)} and data stalls "
           f"{span(float(gap['data_pct'].min()), float(gap['data_pct'].max()), 0)} per workload."]
    tlb_led = [w for w in gap.index if float(gap.loc[w, "tlb_pct"]) > 50.0]
    if tlb_led:
        out.append(f"On {_list(tlb_led)} most of the gap is L2 TLB probes: a GT-PDE fills a 4 KiB TLB entry (the "
                   "paper's design leaves the TLBs unchanged), so every L1 DTLB miss pays the L2 TLB's 7 cycles, "
                   "while ideal's 2 MiB entries keep these footprints in the L1 DTLB; the interval model adds each "
                   "of those 7-cycle probes in full.")
    return out


# ------------------------------------------------------------------ Fig. 15


def fig15_findings(t15: pd.DataFrame) -> list[str]:
    """4 KiB's IPC loss from the smallest to the largest table, and
    GT-PDE-4MB's gain over 4 KiB at the largest, against the paper's."""
    out = []
    sizes = sorted(set(float(x) for x in t15.index.get_level_values(0)))
    if len(sizes) < 1:
        return out
    small, large = sizes[0], sizes[-1]
    if (large, "4k") in t15.index and len(sizes) > 1:
        drop = 100.0 * (1.0 - float(t15.loc[(large, "4k"), "norm"]))
        out.append(f"With 4 KiB pages GUPS loses {num(drop)} % of its IPC from a {num(small, 0)} MiB to a "
                   f"{num(large, 0)} MiB table (the paper: {paper.FIG15_4K_DROP:g} % or more from 64 MB to 8 GB and "
                   "beyond).")
    if (large, "gt_pde_4m") in t15.index:
        r = t15.loc[(large, "gt_pde_4m")]
        out.append(f"At {num(large, 0)} MiB GT-PDE-4MB's IPC is {gain_text(r['gain'], r['gain_lo'], r['gain_hi'])} "
                   f"above 4 KiB's; the paper's is +{paper.FIG15_GUPS_GT4M_GAIN:g} % at "
                   f"{paper.FIG15_GUPS_TABLE_GIB} GB" + (" (our largest table is smaller: see the scale)"
                                                          if large < paper.FIG15_GUPS_TABLE_GIB * 1024 else "") + ".")
        gains = [float(t15.loc[(s, "gt_pde_4m"), "gain"]) for s in sizes if (s, "gt_pde_4m") in t15.index]
        if len(gains) > 1:
            rising = all(b >= a for a, b in zip(gains, gains[1:]))
            out.append("GT-PDE-4MB's gain over 4 KiB " + ("rises with the table at every step"
                                                          if rising else "does not rise at every step")
                       + f" ({', '.join(f'{num(g)} %' for g in gains)}), as the paper's grows with the problem size.")
    if (large, "gt_pde_1m") in t15.index and (large, "gt_pde_4m") in t15.index:
        a, b = float(t15.loc[(large, "gt_pde_4m"), "ipc"]), float(t15.loc[(large, "gt_pde_1m"), "ipc"])
        out.append(f"GT-PDE-4MB's IPC is {num(100.0 * (a / b - 1.0))} % above GT-PDE-1MB's at {num(large, 0)} MiB "
                   f"(the paper: +{paper.FIG15_64G_GT4M_OVER_GT1M:g} % at 64 GB, where 1 MB superpages' tables "
                   "no longer fit the caches).")
    return out


# ------------------------------------------------------------ Figs. 16–18


def _sens(t: pd.DataFrame, key_value: object, what: str, paper_text: str, bound: Optional[float],
          sense: str) -> list[str]:
    try:
        sub = t.xs(key_value, level=1)
    except KeyError:
        return []
    c = _counts(sub, "change", "change_lo", "change_hi")
    mean = float(sub["change"].mean())
    s = (f"{what}: IPC changes by {span(float(sub['change'].min()), float(sub['change'].max()), 2)} per workload "
         f"(mean {num(mean, 2)} %); {c['within noise']} of {len(sub)} workloads within noise")
    if bound is not None:
        if sense == "loss":
            ok = -mean < bound
            s += f"; a mean loss {'below' if ok else 'of at least'} {bound:g} %"
        else:
            ok = mean <= bound
            s += f"; a mean gain {'within' if ok else 'above'} {bound:g} %"
    return [s + f" ({paper_text})."]


def fig16_findings(t16: pd.DataFrame) -> list[str]:
    """Each decode latency's IPC change against 3 cycles."""
    out = []
    for d in sorted(set(t16.index.get_level_values(1))):
        bound = paper.FIG16_6CYCLE_LOSS if int(d) == 6 else None
        out += _sens(t16, d, f"GT-PDE-4MB with {int(d)} decode cycles instead of 3",
                     "the paper: less than 1 % at 6 cycles" if bound else "the paper gives no number", bound, "loss")
    return out


def fig17_findings(t17: pd.DataFrame) -> list[str]:
    """Each PDE-cache size's IPC change against 32 entries."""
    out = []
    for n in sorted(set(t17.index.get_level_values(1))):
        out += _sens(t17, n, f"A {int(n)}-entry PDE cache instead of 32", "the paper: about 2 % at most",
                     paper.FIG17_MAX_GAIN, "gain")
    return out


#: "Virtually nonexistent" is held to a mean gain of at most this (%).
NEGLIGIBLE = 2.0


def fig18_findings(t18: pd.DataFrame) -> list[str]:
    """Coalescing's IPC change over plain 4 KiB against GT-PDE-4MB's."""
    out = []
    for d in ("coalesce8", "coalesce32"):
        out += _sens(t18, d, f"{d[8:]}× coalescing in the L2 TLB (4 KiB pages)",
                     f"the paper: virtually nonexistent, held here to at most {NEGLIGIBLE:g} %", NEGLIGIBLE, "gain")
    if "gt_pde_4m" in set(t18.index.get_level_values(1)):
        g = t18.xs("gt_pde_4m", level=1)["change"]
        out.append(f"GT-PDE-4MB on the same runs: {span(float(g.min()), float(g.max()))} (mean "
                   f"{num(float(g.mean()))} %).")
    gt = f"gt_pde_4m_gt{gs.GT_ENTRY_GROUP}"
    if gt in set(t18.index.get_level_values(1)):
        g = t18.xs(gt, level=1)["change"]
        out.append(f"Beyond the paper, GT-PDE-4MB with the GT-aware {gs.GT_ENTRY_GROUP}× L2 TLB: "
                   f"{span(float(g.min()), float(g.max()))} over 4 KiB (mean {num(float(g.mean()))} %).")
    return out


def gt_entry_findings(ge: pd.DataFrame) -> list[str]:
    """The GT-aware L2 TLB against plain GT-PDE-4MB: IPC change verdicts
    and walks per 1000 instructions before and after."""
    if not len(ge):
        return ["Not run."]
    c = _counts(ge, "change", "change_lo", "change_hi")
    w = ge.reset_index("design")
    fewer = [x for x in w.index if float(w.loc[x, "walks_pki"]) < float(w.loc[x, "walks_pki_plain"])]
    out = [f"IPC against plain GT-PDE-4MB (same workload and seed): a gain on {c['gain']} of {len(ge)} workloads, "
           f"a loss on {c['loss']}, within noise on {c['within noise']}"
           + (f", identical on {c['identical']}" if c["identical"] else "")
           + f"; changes {span(float(ge['change'].min()), float(ge['change'].max()), 2)} (mean "
             f"{num(float(ge['change'].mean()), 2)} %).",
           f"Walks per 1000 instructions fall on {len(fewer)} of {len(ge)} workloads"
           + (" (" + ", ".join(f"{x} {num(float(w.loc[x, 'walks_pki_plain']), 2)} → "
                             f"{num(float(w.loc[x, 'walks_pki']), 2)}" for x in fewer) + ")" if fewer else "")
           + "."]
    return out


# ------------------------------------------------------------------ retired


def retired_findings(rt: pd.DataFrame) -> list[str]:
    """Per design: the superpage share of the touched bytes at each retired
    fraction (range over workloads), against Fig. 3's clean-block
    probability (THP) or Fig. 14's capacity share (GT-PDEs); for THP,
    whether the memory in clean 2 MiB blocks holds each footprint; and the
    IPC gain over 4 KiB at the highest fraction against at 0."""
    out = []
    fracs = sorted(set(float(f) for f in rt.index.get_level_values(2)))
    for d in dict.fromkeys(rt.index.get_level_values(1)):
        if d == "4k":
            continue
        sub = rt.xs(d, level="design")
        have = set(float(f) for f in sub.index.get_level_values(1))
        parts = []
        for f in fracs:
            if f not in have:
                continue
            v = sub.xs(f, level="fraction")["superpage_pct"]
            ref = ""
            cap = paper.FIG14_SHARE.get(d, {}).get(round(f, 4)) if f > 0 else None
            if cap is not None:
                ref = (f" (Fig. 3: {num(100 * cap, 1)} % of 2 MB blocks clean)" if d == "thp"
                       else f" (Fig. 14: {num(100 * cap, 1)} % of capacity usable)")
            parts.append(f"{span(float(v.min()), float(v.max()), 0)} at {num(100 * f, 1)} % retired{ref}")
        if parts:
            out.append(f"**{gs.RETIRED_LABEL.get(d, d)}** maps with superpages " + _list(parts)
                       + " of the touched bytes (ranges over workloads).")
        if d == "thp" and "clean_2m_mib" in sub:
            said = []
            for f in fracs:
                if f <= 0 or f not in have:
                    continue
                v = sub.xs(f, level="fraction")
                clean = float(v["clean_2m_mib"].mean())
                full = [w for w in v.index if float(v.loc[w, "superpage_pct"]) >= 99.95]
                fits = [w for w in v.index if float(v.loc[w, "touched_mib"]) <= clean]
                said.append(f"at {num(100 * f, 1)} % retired {num(clean, 0)} MiB of memory lies in clean 2 MiB "
                            f"blocks, {len(fits)} of {len(v)} touched footprints fit in that, and THP maps "
                            f"{len(full)} of {len(v)} workloads entirely with 2 MiB pages")
            if said:
                out.append("THP needs clean blocks only for the footprint, not for all of memory: " + "; ".join(said)
                           + ". The paper's Fig. 3 is the share of all blocks that are clean.")
        if len(fracs) > 1:
            lo_f, hi_f = fracs[0], fracs[-1]
            if lo_f not in have or hi_f not in have:
                continue
            g0 = sub.xs(lo_f, level="fraction")["gain"]
            g1 = sub.xs(hi_f, level="fraction")
            c = _counts(g1, "gain", "gain_lo", "gain_hi")
            tail = [f"a gain beyond noise on {c['gain']} workloads", f"within noise on {c['within noise']}",
                    f"a loss on {c['loss']}"]
            if c["identical"]:
                tail.append(f"identical to 4 KiB on {c['identical']} (no superpage mapped)")
            out.append(f"{gs.RETIRED_LABEL.get(d, d)}'s IPC gain over 4 KiB goes from "
                       f"{span(float(g0.min()), float(g0.max()))} at {num(100 * lo_f, 1)} % retired to "
                       f"{span(float(g1['gain'].min()), float(g1['gain'].max()))} at {num(100 * hi_f, 1)} % (there: "
                       + ", ".join(tail) + ").")
    return out


def beyond_findings(bt: pd.DataFrame) -> list[str]:
    """Clustered against uniform retired pages: superpage shares and gains."""
    out = []
    for d in dict.fromkeys(bt.index.get_level_values(1)):
        if d == "4k":
            continue
        sub = bt.xs(d, level="design")
        models = list(dict.fromkeys(sub.index.get_level_values(1)))
        parts = []
        for m in models:
            v = sub.xs(m, level="model")
            parts.append(f"{m}: superpages {span(float(v['superpage_pct'].min()), float(v['superpage_pct'].max()), 0)}"
                         f" of the touched bytes, IPC gain {span(float(v['gain'].min()), float(v['gain'].max()))}")
        out.append(f"**{gs.RETIRED_LABEL.get(d, d)}** at {num(100 * gs.BEYOND_FRACTION, 1)} % retired: "
                   + "; ".join(parts) + ".")
    if "clean_2m_mib" in bt and len(bt):
        clean = bt.groupby(level="model")["clean_2m_mib"].mean()
        out.append("Memory in clean 2 MiB blocks: " + "; ".join(f"{m} {num(float(v), 0)} MiB" for m, v in clean.items())
                   + " (the same share of frames retired).")
    return out


# ------------------------------------------------------------------ versus


def _rival(d: str) -> str:
    return gs.RIVAL_LABEL.get(d, d)


def _pct(f: float) -> str:
    return f"{100 * float(f):g} %"


def versus_findings(vt: pd.DataFrame, summary: pd.DataFrame, pairs: pd.DataFrame) -> list[str]:
    """GTSM against THP (with and without compaction) and Mosaic Pages: the
    geometric-mean gains per fraction, the superpage shares, what
    compaction did, each pair of :data:`gtsm_study.VERSUS_PAIRS` (beyond
    the seeds' spread or noise), and where Mosaic Pages' cycles went."""
    if not len(vt):
        return ["Not run."]
    out = []
    fracs = sorted(set(float(f) for f in summary.index.get_level_values("fraction")))
    for f in fracs:
        t = summary.xs(f, level="fraction")
        out.append(f"At {_pct(f)} retired, IPC gain over 4 KiB, geometric mean over {int(t['workloads'].max())} "
                   "workloads (lowest to highest workload): "
                   + "; ".join(f"{_rival(d)} {num(float(r['gain_geomean']))} % "
                               f"({span(float(r['gain_lo']), float(r['gain_hi']))})"
                               for d, r in t.iterrows() if d != "4k") + ".")
    share = vt["superpage_pct"].dropna()
    if len(share):
        parts = []
        for f in fracs:
            t = vt.xs(f, level="fraction")
            for d in ("thp", "thp_compact", "gt_pde_4m"):
                if d in set(t.index.get_level_values("design")):
                    v = t.xs(d, level="design")["superpage_pct"]
                    parts.append(f"{_rival(d)} at {_pct(f)} {span(float(v.min()), float(v.max()), 0)}")
        out.append("Share of the touched bytes in 2 MiB pages or GT superpages, over the workloads: "
                   + "; ".join(parts) + ".")
    if "thp_compact" in set(vt.index.get_level_values("design")):
        c = vt.xs("thp_compact", level="design")
        parts = []
        for f in fracs:
            v = c.xs(f, level="fraction")
            busy = v[v["compactions"] > 0]
            parts.append(f"at {_pct(f)} {num(float(v['compactions'].sum()), 0)} blocks compacted over the "
                         f"workloads ({len(busy)} of {len(v)} workloads compacted at all), "
                         f"{num(float(v['pins_migrated'].sum()), 0)} pinned frames and "
                         f"{num(float(v['pages_migrated'].sum()), 0)} of the process's pages moved, "
                         f"{num(float(v['compaction_failures'].sum()), 0)} failed attempts, compaction at most "
                         f"{num(float(v['compaction_cycles_pct'].max()), 2)} % of a run's cycles")
        out.append("Compaction in the measured phase (means over seeds, summed over workloads): "
                   + "; ".join(parts) + ". Compactions during the warm-up are not counted here; the superpage "
                   "shares above are the mappings at the end of the run and include them.")
    for (f, a, b), r in pairs.iterrows():
        words = []
        if r["above"]:
            words.append(f"above on {int(r['above'])} ({r['above_workloads'].replace(' ', ', ')})")
        if r["below"]:
            words.append(f"below on {int(r['below'])} ({r['below_workloads'].replace(' ', ', ')})")
        if r["noise"]:
            same = int(r.get("identical", 0) or 0)
            words.append(f"inside the seeds' spread (noise) on {int(r['noise'])}"
                         + (f", {same} of them with identical runs at every seed" if same else ""))
        out.append(f"At {_pct(f)}: {_rival(a)}'s gain lies " + ", ".join(words)
                   + f" against {_rival(b)}'s (mean difference {num(float(r['mean_diff']))} points).")
    if "mosaic" in set(vt.index.get_level_values("design")):
        m = vt.xs("mosaic", level="design")
        k = vt.xs("4k", level="design").reindex(m.index)
        tr, da = m["translation_delta_pct"], m["data_delta_pct"]
        more = int((m["llc_mpki"] > k["llc_mpki"]).sum())
        out.append("Where Mosaic Pages' cycles went, against 4 KiB at the same seed (% of 4 KiB's cycles, over the "
                   f"{len(m)} workload-fraction points): translation stalls {span(float(tr.min()), float(tr.max()))} "
                   f"(mean {num(float(tr.mean()))} %), data stalls {span(float(da.min()), float(da.max()))} (mean "
                   f"{num(float(da.mean()))} %); LLC misses per 1000 instructions are higher than 4 KiB's on {more} "
                   f"of the {len(m)} points (means {num(float(k['llc_mpki'].mean()), 2)} with 4 KiB, "
                   f"{num(float(m['llc_mpki'].mean()), 2)} with Mosaic Pages)"
                   + (f"; the Iceberg pool held {span(float(m['pool_load_pct'].min()), float(m['pool_load_pct'].max()))}"
                      " of its frames on average" if "pool_load_pct" in m and m["pool_load_pct"].notna().any() else "")
                   + ".")
    return out
