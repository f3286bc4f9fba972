"""The sentences of the Mosaic Pages report that state a result, computed
from the tables they describe.

Each function takes analysis tables of :mod:`tessera.report.mosaic_pages`
and returns sentences (Markdown), so that a rerun whose numbers move also
moves the words: no comparison here is fixed text. A difference whose 95 %
interval over seeds contains 0 is called "within noise"
(:mod:`tessera.report.intervals`); a range of the paper's is compared as a
range (:func:`intervals.range_agreement`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Optional

import numpy as np
import pandas as pd

from tessera.report import mosaic_pages as mp
from tessera.report import paper_mosaic as paper
from tessera.report.intervals import range_agreement

__all__ = [
    "num",
    "verdict",
    "span",
    "fig6_reasons",
    "table3_findings",
    "table4_findings",
    "table4_paper_ranges",
    "beyond_findings",
    "thp_against_mosaic",
]


def num(x: float, digits: int = 1) -> str:
    """A number for prose: ``—`` for NaN, a true minus sign."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    text = f"{x:.{digits}f}"
    if float(text) == 0:
        text = text.lstrip("-")  # −0.0 reads as a sign the number does not have
    return text.replace("-", "−")


def span(lo: float, hi: float, digits: int = 1, unit: str = " %") -> str:
    """``lo to hi`` with a unit, or one number when both print the same."""
    a, b = num(lo, digits), num(hi, digits)
    return f"{a}{unit}" if a == b else f"{a} to {b}{unit}"


def _are(n: int) -> str:
    return f"{n} is" if n == 1 else f"{n} are"


def _list(items: Sequence[str]) -> str:
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def verdict(diff: float, lo: float, hi: float) -> str:
    """``"less"`` (Mosaic swaps less: the whole interval above 0), ``"more"``
    (below 0), ``"within noise"`` (it contains 0) or ``"no interval"``."""
    if math.isnan(lo) or math.isnan(hi):
        return "no interval"
    if lo > 0:
        return "less"
    if hi < 0:
        return "more"
    return "within noise"


def _paper_name(w: str) -> str:
    return mp.PAPER_NAME.get(w, w)


# ------------------------------------------------------------------ Fig. 6


def fig6_reasons(misses: pd.DataFrame, touched_mib: Mapping[str, float]) -> list[str]:
    """Why our Fig. 6 differs from the paper's, each reason with the numbers
    that support or limit it (``touched_mib``: Fig. 6's touched footprint
    per workload)."""
    red = mp.fig6_reduction(misses)
    wls = list(dict.fromkeys(misses.index.get_level_values(0)))
    fa = misses.xs(mp.SHADOW_ENTRIES, level="ways")
    out = []
    # (1) Footprint against reach.
    fits = []
    for w in wls:
        fp = touched_mib.get(w, float("nan"))
        arities = [a for a in paper.ARITIES if mp.SHADOW_ENTRIES * a * 4096 / mp.MIB >= fp]
        if arities:
            a = arities[0]
            ratio = fa.loc[w, f"mosaic{a}"] / fa.loc[w, "first_touches"] if fa.loc[w, "first_touches"] else float("nan")
            which = f"Mosaic-{a}'s reach" + ("" if a == paper.ARITIES[-1] else " and larger")
            fits.append(f"{w} ({num(fp, 0)} MiB) fits {which} (fully associative Mosaic-{a} "
                        f"misses {num(ratio, 2)}× its first touches)")
    big3 = [w for w in wls if w != "gups"]
    if big3:
        lo64 = float(red.loc[red.index.get_level_values(0).isin(big3), "mosaic64"].min())
        hi64 = float(red.loc[red.index.get_level_values(0).isin(big3), "mosaic64"].max())
        where = range_agreement(lo64, hi64, *paper.FIG6_MOSAIC64_REDUCTION)
        where_t = {"yes": "lies inside", "partly": "overlaps but reaches outside", "no": "lies outside"}[where]
        first = ("**Footprint against reach.** A 1024-entry Mosaic-a TLB reaches a × 4 MiB; where a workload's touched "
                 "footprint fits, that TLB misses little more than on first touches. "
                 + (f"Here {_list(fits)}. " if fits else "Here no workload's footprint fits any arity's reach. ")
                 + f"The paper's footprints (1–2.6 GiB for these three) fit no arity's reach; our Mosaic-64 range "
                 f"({num(lo64)}–{num(hi64)} %) is {where_t} the paper's 11–98 %.")
        out.append(first)
    # (2) GUPS.
    if "gups" in wls:
        g = misses.loc["gups"]
        share = 100.0 * float(fa.loc["gups", "first_touches"]) / float(fa.loc["gups", "vanilla"])
        best = float(red.loc["gups"].max().max())
        out.append("**GUPS** updates a uniformly random word of an 8 GiB table, so a TLB of reach R hits about "
                   f"R ÷ 8 GiB of the time (Mosaic-64: 256 MiB, 3 %). Our best GUPS reduction is {num(best)} % "
                   f"({'inside' if mp.ABOUT_QUARTER[0] <= best <= mp.ABOUT_QUARTER[1] else 'outside'} the "
                   f"{mp.ABOUT_QUARTER[0]:g}–{mp.ABOUT_QUARTER[1]:g} % we take as the paper's 'about a quarter'), and "
                   f"{num(share, 0)} % of fully associative vanilla's misses are first touches; the paper's run also "
                   "covered GUPS's set-up and the kernel, which the table alone cannot account for.")
        del g
    # (3) Kernel huge pages.
    beaten = {w: [a for a in paper.ARITIES if fa.loc[w, f"mosaic{a}"] > fa.loc[w, "vanilla"]] for w in wls}
    clean = [w for w in wls if not beaten[w]]
    dirty = [f"{w} (Mosaic-" + ", ".join(str(a) for a in beaten[w]) + ")" for w in wls if beaten[w]]
    out.append("**Kernel huge pages.** The paper's vanilla had the kernel mapped with 2 MiB pages and blamed them "
               "for fully associative vanilla beating Mosaic-4 on Graph500 and Mosaic-4…16 on GUPS; Tessera runs only "
               "the workload. Fully associative, every mosaic arity misses less than vanilla on "
               f"{len(clean)} of {len(wls)} workloads"
               + (f"; vanilla misses less than {_list(dirty)}." if dirty else ", as the paper's smaller experiments "
                  "with huge pages disabled found."))
    # (4) Shorter runs weigh first touches more.
    shares = 100.0 * fa["first_touches"] / fa["vanilla"]
    out.append(f"**Shorter runs.** First touches are {span(float(shares.min()), float(shares.max()), 0)} of "
               "fully associative vanilla's misses here (millions of accesses, not the paper's billions of "
               "instructions); every design misses on them, which caps every reduction.")
    return out


def fig6_quirk(misses: pd.DataFrame) -> str:
    """What the gem5 model's vanilla set index does to vanilla's misses."""
    parts = []
    for w in dict.fromkeys(misses.index.get_level_values(0)):
        for ways in mp.QUIRK_WAYS:
            r = misses.loc[(w, ways)]
            rs = [f"{num(float(r[f'vanilla_q{q}']) / float(r['vanilla']), 2)}× (q = {q})" for q in mp.QUIRKS
                  if r["vanilla"] and not math.isnan(float(r[f"vanilla_q{q}"]))]
            if rs:
                parts.append(f"{w} at {'DM' if ways == 1 else f'{ways} ways'}: " + ", ".join(rs))
    return ("With the quirk, vanilla misses " + "; ".join(parts) + " as often as with our index. Where these exceed "
            "1, a paper run with this index would overstate Mosaic's reduction at that associativity; fully "
            "associative vanilla has one set and is unaffected.") if parts else ""


# ------------------------------------------------------------------ Table 3


def table3_findings(t3: pd.DataFrame, pool: pd.DataFrame) -> list[str]:
    """Table 3's results against the paper's, and whether the steady state
    rises with the footprint (a fall within both rows' intervals is noise)."""
    out = []
    pfc = [v[0] for v in paper.TABLE3.values()]
    pst = [v[2] for v in paper.TABLE3.values()]
    if len(pool):
        lo, hi = float(pool["first_conflict"].min()), float(pool["first_conflict"].max())
        slo, shi = float(pool["steady"].min()), float(pool["steady"].max())
        out.append(f"At the prototype's pool our mean first conflicts span {num(lo, 2)}–{num(hi, 2)} % "
                   f"({_agree_words(lo, hi, min(pfc), max(pfc))} the paper's {min(pfc):.2f}–{max(pfc):.2f} %) and the "
                   f"uniform stream's steady state {num(slo, 2)}–{num(shi, 2)} % "
                   f"({_agree_words(slo, shi, min(pst), max(pst))} the paper's {min(pst):.2f}–{max(pst):.2f} %).")
    if len(t3):
        fc, st = t3["first_conflict"], t3["steady"]
        out.append(f"With the workloads' own, much smaller pools the mean first conflicts span "
                   f"{span(float(fc.min()), float(fc.max()), 2)} and the steady state "
                   f"{span(float(st.min()), float(st.max()), 2)}; the widest 95 % interval of a first conflict is "
                   f"±{num(float(t3['first_conflict_ci'].max()), 2)} points here against "
                   f"±{num(float(pool['first_conflict_ci'].max()), 2)} at the prototype's pool.")
    by_workload = {"uniform": pool} if len(pool) else {}
    out += _steady_trend("prototype's pool", by_workload)
    out += _steady_trend("workloads' pools", {w: t3.loc[w] for w in dict.fromkeys(t3.index.get_level_values(0))})
    return out


def _steady_trend(name: str, tables: Mapping[str, pd.DataFrame]) -> list[str]:
    """Whether the mean steady state rises with the footprint (rows by
    ratio); a fall within both rows' intervals is noise."""
    if not tables:
        return []
    falls, noise, bare = [], [], []
    for w, tab in tables.items():
        rows = list(tab.sort_index().iterrows())
        for (r0, a), (r1, b) in zip(rows, rows[1:]):
            if b["steady"] >= a["steady"]:
                continue
            step = f"{w} {r0:.3f}→{r1:.3f} ({num(a['steady'], 2)}→{num(b['steady'], 2)} %)"
            if math.isnan(a["steady_ci"]) or math.isnan(b["steady_ci"]):
                bare.append(step)
            elif b["steady"] + b["steady_ci"] >= a["steady"] - a["steady_ci"]:
                noise.append(step)
            else:
                falls.append(step)
    if not falls and not noise and not bare:
        return [f"At the {name} the mean steady state rises with the footprint in every step, as in the paper."]
    text = f"At the {name} the mean steady state rises with the footprint except " + _list(falls + noise + bare)
    if noise:
        text += f"; of these, {_list(noise)} {'is' if len(noise) == 1 else 'are'} within noise (the intervals overlap)"
    if falls:
        text += f"; {_list(falls)} {'is a fall' if len(falls) == 1 else 'are falls'} beyond noise"
    if bare:
        text += f"; {_list(bare)} cannot be judged (a row without an interval)"
    return [text + "."]


def _agree_words(lo: float, hi: float, plo: float, phi: float) -> str:
    return {"yes": "inside", "partly": "overlapping", "no": "outside"}[range_agreement(lo, hi, plo, phi)]


# ------------------------------------------------------------------ Table 4


def _cells(t4: pd.DataFrame, b: str) -> pd.DataFrame:
    """Per cell the difference (%) and its verdict, from the interval in pages
    (which exists even where the baseline swaps nothing)."""
    return pd.DataFrame({
        "diff": t4[f"diff_{b}"],
        "verdict": [verdict(d, lo, hi) for d, lo, hi in
                    zip(t4[f"diff_{b}_pages"], t4[f"diff_{b}_pages_lo"], t4[f"diff_{b}_pages_hi"])],
    }, index=t4.index)


def table4_findings(t4: pd.DataFrame, horizon_check: Optional[tuple[int, int]] = None) -> list[str]:
    """Per baseline: how many cells Mosaic swaps less, more or within noise,
    the range per workload, and just above capacity against the paper."""
    out = []
    lowest = min(t4.index.get_level_values(1)) if len(t4) else float("nan")
    for b in mp.BASELINES:
        if f"diff_{b}" not in t4:
            continue
        c = _cells(t4, b)
        n = len(c)
        counts = {v: int((c["verdict"] == v).sum()) for v in ("less", "more", "within noise", "no interval")}
        per_w = []
        for w in dict.fromkeys(c.index.get_level_values(0)):
            d = c.loc[w, "diff"]
            if d.notna().any():
                per_w.append(f"{w} {span(float(d.min()), float(d.max()))}")
        s = (f"**Against {mp.ARM_LABEL[b]}** Mosaic swaps less in {counts['less']} of {n} cells, more in "
             f"{counts['more']}, and {_are(counts['within noise'])} within noise"
             + (f" ({_are(counts['no interval'])} without an interval: one seed)" if counts["no interval"] else "")
             + (f"; the difference (% less) is {_list(per_w)}." if per_w else "."))
        edge = c.xs(lowest, level=1)
        said = []
        for w, r in edge.iterrows():
            if math.isnan(r["diff"]):
                said.append(f"{w} {r['verdict']} ({mp.ARM_LABEL[b]} swaps nothing)")
            else:
                said.append(f"{w} {num(r['diff'])} % ({r['verdict']})")
        s += (f" Just above capacity ({lowest:.3f}): {_list(said)}; the paper's Mosaic swapped more there for all "
              "three workloads.")
        out.append(s)
    if horizon_check is not None and horizon_check[1]:
        eq, n = horizon_check
        out.append(f"Horizon LRU over buddy had exactly exact LRU's swap I/O in {eq} of {n} runs"
                   + (" (as it must: with any frame available, Horizon LRU's victim is the globally least recently "
                      "used page), so those two baselines are one and the difference against either is placement "
                      "alone." if eq == n else "; where they differ, the Horizon-over-buddy column is the one that "
                      "isolates placement."))
    if "diff_linux_like" in t4 and "lru" in t4 and "linux_like" in t4:
        pol = 100.0 * (t4["linux_like"] - t4["lru"]) / t4["linux_like"].where(t4["linux_like"] > 0)
        out.append(f"The eviction policy alone (exact LRU against Linux-like, both over buddy) changes swap I/O by "
                   f"{span(float(pol.min()), float(pol.max()))} (positive: exact LRU swaps less), against "
                   f"{span(float(t4['diff_linux_like'].min()), float(t4['diff_linux_like'].max()))} for Mosaic "
                   "against Linux-like: the paper's kind of comparison changes both at once.")
    return out


def table4_paper_ranges(t4: pd.DataFrame) -> list[list[str]]:
    """Rows ``[workload, baseline, ours, paper's, agrees]``: the difference
    past the edge (every ratio above the lowest), ours against each
    baseline as a range against the paper's range, compared as ranges."""
    rows = []
    if not len(t4):
        return rows
    lowest = min(t4.index.get_level_values(1))
    for w in dict.fromkeys(t4.index.get_level_values(0)):
        prow = [r[3] for r in paper.TABLE4.get(_paper_name(w), [])[1:]]
        past = t4.loc[w]
        past = past[past.index > lowest]
        if not prow or not len(past):
            continue
        plo, phi = min(prow), max(prow)
        for b in mp.BASELINES:
            if f"diff_{b}" not in past:
                continue
            lo, hi = float(past[f"diff_{b}"].min()), float(past[f"diff_{b}"].max())
            rows.append([w, mp.ARM_LABEL[b], span(lo, hi), span(plo, phi, 2),
                         range_agreement(lo, hi, plo, phi)])
    return rows


# ------------------------------------------------------------------ beyond


def beyond_findings(bt: pd.DataFrame) -> list[str]:
    """Per workload: whether its footprint fits Mosaic-8's reach, how much of
    Mosaic-8's misses are first touches and walks, where THP starts to miss
    less than Mosaic-8 as whole 2 MiB blocks run short, and CoLT against
    vanilla."""
    out = []
    for w in dict.fromkeys(bt.index.get_level_values(0)):
        t = bt.loc[w]
        designs = set(t.index.get_level_values(0))
        if not {"vanilla", "mosaic"} <= designs:
            continue
        van = t.loc["vanilla"].iloc[0]
        mos = t.loc["mosaic"].iloc[0]
        fp = float(van["touched_mib"])
        fit = "fits" if fp <= mp.MOSAIC8_REACH_MIB else "exceeds"
        first = 100.0 * mos["first_touch_pka"] / mos["misses_pka"] if mos["misses_pka"] else float("nan")
        walks = 100.0 * mos["walks_pka"] / mos["misses_pka"] if mos["misses_pka"] else float("nan")
        red = 100.0 * (1.0 - mos["misses_pka"] / van["misses_pka"]) if van["misses_pka"] else float("nan")
        s = (f"**{w}** ({num(fp, 0)} MiB touched, which {fit} Mosaic-8's {mp.MOSAIC8_REACH_MIB:.0f} MiB reach): "
             f"Mosaic-8 misses {num(red)} % less than vanilla; {num(first, 0)} % of its misses are first touches and "
             f"{num(walks, 0)} % of them walk.")
        if "thp" in designs:
            s += " " + thp_against_mosaic(t.loc["thp"], float(mos["misses_pka"]))
        if "coalescing" in designs:
            co = t.loc["coalescing"].sort_values("whole_pct")
            ratios = co["misses_pka"] / van["misses_pka"] if van["misses_pka"] else co["misses_pka"] * float("nan")
            better = int((ratios < 1).sum())
            s += (f" CoLT misses {span(float(ratios.min()), float(ratios.max()), 2, '×')} vanilla's "
                  f"(less than vanilla at {better} of {len(co)} coverages).")
        out.append(s)
    return out


def thp_against_mosaic(thp: pd.DataFrame, mosaic_pka: float) -> str:
    """Where THP (rows by whole-block coverage) misses less than Mosaic-8 and
    where not: a crossover when THP wins exactly above some coverage."""
    thp = thp.sort_values("whole_pct")
    cov = thp["whole_pct"].to_numpy(dtype=float)
    miss = thp["misses_pka"].to_numpy(dtype=float)
    wins = miss < mosaic_pka
    if wins.all():
        return (f"THP misses less than Mosaic-8 at every coverage tried, down to whole blocks for "
                f"{num(float(cov.min()), 0)} % of the footprint.")
    if not wins.any():
        return (f"THP misses no less than Mosaic-8 at any coverage tried, up to whole blocks for "
                f"{num(float(cov.max()), 0)} % of the footprint ({num(float(thp['huge_share'].max()), 0)} % of its "
                "memory in 2 MiB pages).")
    k = int(np.argmax(wins))
    below = num(float(cov[k - 1]), 0) if k else ""
    if wins[k:].all():
        return (f"THP misses less than Mosaic-8 once whole blocks cover {num(float(cov[k]), 0)} % of the footprint "
                f"({num(float(thp['huge_share'].iloc[k]), 0)} % of its memory in 2 MiB pages: "
                f"{num(float(miss[k]), 2)} against {num(mosaic_pka, 2)} misses per 1000 accesses) and no less at "
                f"{below} % and below ({num(float(miss[k - 1]), 2)} at {below} %): "
                f"the crossover lies between {below} and {num(float(cov[k]), 0)} %.")
    return ("THP misses less than Mosaic-8 at whole-block coverages of "
            + _list([f"{num(float(c), 0)} %" for c, w in zip(cov, wins) if w]) + " but not at "
            + _list([f"{num(float(c), 0)} %" for c, w in zip(cov, wins) if not w]) + ": no single crossover.")
