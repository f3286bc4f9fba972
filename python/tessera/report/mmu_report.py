"""The scale-out MMU reproduction's report: our tables next to the paper's.

:func:`build` turns the labelled sweep DataFrame and the analysis tables into
report blocks (:mod:`tessera.report.render`). Every number it prints comes
from those tables; every sentence that states a result is computed from them
too, and the fixed prose only describes the models and the paper.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import pandas as pd

from tessera.report import mmu_analysis as ma
from tessera.report import paper_mmu as paper
from tessera.report.render import Block, Bullets, Code, Figure, Heading, Para, Table

__all__ = ["build", "fmt", "label"]


def fmt(v: Any, digits: int = 2) -> str:
    """A table cell: fixed decimals, ``—`` for an undefined value."""
    if v is None:
        return "—"
    try:
        x = float(v)
    except (TypeError, ValueError):
        return str(v)
    if math.isnan(x):
        return "—"
    return f"{x:.{digits}f}"


def label(workload: str) -> str:
    """Row label: the workload and, for an analog, the paper's benchmark."""
    bench = paper.ANALOG_OF.get(workload)
    return f"{workload} ({bench})" if bench and bench != workload else workload


def _pv(p: Optional[paper.PaperValue]) -> str:
    return p.text if p is not None else "—"


def _bench(w: str) -> Optional[str]:
    return paper.ANALOG_OF.get(w)


def _groups(wls: Sequence[str]) -> list[tuple[str, list[str]]]:
    out = []
    so = [w for w in wls if _bench(w)]
    mi = [w for w in wls if not _bench(w)]
    if so:
        out.append(("scale-out analogs", so))
    if mi:
        out.append(("memory-intensive", mi))
    return out


def _argmax(s: pd.Series, digits: int = 2, suffix: str = "") -> str:
    s = s.dropna()
    if s.empty:
        return "—"
    w = s.idxmax()
    return f"{fmt(s[w], digits)}{suffix} ({w})"


def _argmin(s: pd.Series, digits: int = 2, suffix: str = "") -> str:
    s = s.dropna()
    if s.empty:
        return "—"
    w = s.idxmin()
    return f"{fmt(s[w], digits)}{suffix} ({w})"


def _each(s: pd.Series, names: Sequence[str], digits: int = 2) -> str:
    """The values of the named workloads that are in ``s``, each with its name."""
    cells = [f"{fmt(s[w], digits)} ({w})" for w in names if w in s.index]
    return ", ".join(cells) if cells else "—"


def _count(mask: pd.Series) -> str:
    mask = mask.dropna()
    return f"{int(mask.sum())} of {len(mask)}"


def _names(s: pd.Series) -> str:
    names = [w for w, v in s.items() if bool(v)]
    return ", ".join(names) if names else "none"


def _range(s: pd.Series, digits: int = 2) -> str:
    s = s.dropna()
    if s.empty:
        return "—"
    return f"{fmt(s.min(), digits)}–{fmt(s.max(), digits)}"


def _models(t: pd.DataFrame) -> list[str]:
    """The timing models a Figure 1/3 table holds (its ``attrs``), main first;
    for a hand-made table without them, one unnamed model."""
    return list(t.attrs.get("models") or [""])


def _col(t: pd.DataFrame, model: str, main: str, col: str) -> str:
    return col if model == main else f"{model} {col}"


def _ours(model: str) -> str:
    return f"ours ({model})" if model else "ours"


_MODEL_WORDS = {
    "ooo": "the out-of-order model (`timing.kind = \"ooo\"`)",
    "interval": "the interval model (`timing.kind = \"interval\"`)",
}


def model_statement(df: pd.DataFrame) -> str:
    """Which timing model made the cycles, from the runs' resolved config
    (``timing.kind``; absent means interval, the default, which an interval
    run's written config leaves out), with the number of runs each. Runs with
    no CPU core (no ``core.cycles``: GPU machines) are counted apart: their
    cycles come from the GPU model, which ``timing.kind`` does not choose."""
    cpu = df["core.cycles"].notna() if "core.cycles" in df.columns else pd.Series(False, index=df.index)
    parts = []
    if cpu.any():
        counts = ma._model_column(df[cpu]).value_counts()
        ms = [m for m in ma.MODELS if m in counts.index] + [m for m in counts.index if m not in ma.MODELS]
        parts = [f"{_MODEL_WORDS.get(m, f'`timing.kind = {m}`')} for {int(counts[m])} run(s)" for m in ms]
        if "timing_dependencies" in df.columns:
            deps = df.loc[cpu & (ma._model_column(df) == "ooo"), "timing_dependencies"].dropna().value_counts()
            if len(deps):
                parts[ms.index("ooo")] += " (load dependencies: " + "; ".join(
                    f"{d}, {int(n)} run(s)" for d, n in deps.items()) + ")"
    if (~cpu).any():
        parts.append(f"the GPU timing model for {int((~cpu).sum())} GPU run(s) (no CPU core; `timing.kind` does not apply)")
    return "Timing model of these cycles (each run's resolved `timing.kind`): " + "; ".join(parts) + "."


# ------------------------------------------------------------------ sections


def _headline(t: Mapping[str, pd.DataFrame], wls: Sequence[str]) -> list[Block]:
    groups = _groups(wls)
    rows = []

    def row(what: str, paper_text: str, per_group) -> None:  # type: ignore[no-untyped-def]
        rows.append([what, paper_text] + [per_group(g) for _, g in groups])

    f1, f2, f3, f5, f9, f10, t5 = (t[k] for k in ("fig1", "fig2", "fig3", "fig5", "fig9", "fig10", "table5"))
    row("Largest % of cycles in walks, 4 KiB (Fig. 1)", "almost 16 (graph-analytics)", lambda g: _argmax(f1.loc[g, "4K"]))
    # §IV-B says only that more than 6 % remains for these two; it names no largest value.
    row(
        "% of cycles in walks with 2 MiB pages, data-/graph-analytics (Fig. 1)",
        "more than 6 for both",
        lambda g: _each(f1.loc[g, "2M"], ("data-analytics", "graph-analytics")),
    )
    row(
        "Largest cut in walk cycles by 2 MiB pages, % (Fig. 2)",
        "65.9 (graph-analytics)",
        lambda g: _argmax(100.0 * (1.0 - f2.loc[g, "2M"]), 1),
    )
    row(
        "Walk cycles up with 2 MiB pages (Fig. 2)",
        "web-search (+54 %)",
        lambda g: _names(f2.loc[g, "2M"] > 1.0),
    )
    row("Largest simulated speedup from 2 MiB pages, % (Fig. 3)", "13.9 (graph-analytics)", lambda g: _argmax(f3.loc[g, "measured"], 1))
    row(
        "Simulated speedup above Eq. 1's expected (Fig. 3)",
        "3 of 3 with an expected value",
        lambda g: _count(f3.loc[g, "gap"] > 0),
    )
    row("Largest gap simulated − expected, points (Fig. 3)", "3.8 (data-serving)", lambda g: _argmax(f3.loc[g, "gap"], 1))
    row(
        "Cycles per walk below 100 with 4 KiB pages (Fig. 5)",
        "7 of 7",
        lambda g: _count(f5.loc[g, "4K"] < 100),
    )
    row(
        "Walks per kilo-instr. above LLC misses per kilo-instr., 2 MiB (Fig. 9)",
        "3 of 7 (data-caching, data-serving, web-search)",
        lambda g: f"{_count(f9.loc[g, 'larger'] == 'walks')}",
    )
    row(
        "Perfect-TLB bound below 2 % of cycles, 4 KiB / 2 MiB (Fig. 10)",
        "7 of 7",
        lambda g: f"{_count(f10.loc[g, '4K perfect_tlb'] < 2)} / {_count(f10.loc[g, '2M perfect_tlb'] < 2)}",
    )
    row(
        "Walk-count ratio with prefetchers on, range (Table V)",
        "0.77–1.66",
        lambda g: _range(pd.concat([t5.loc[g, "l1 walks"], t5.loc[g, "all walks"]])),
    )
    row(
        "Walk-cycle ratio with all prefetchers on, range (Table V)",
        "0.53–1.57",
        lambda g: _range(t5.loc[g, "all walk_cycles"]),
    )
    main = _models(t["fig1"])[0]
    cols = ["finding", "paper (CloudSuite, Sandy Bridge)"] + [f"{_ours(main)}: {name}" for name, _ in groups]
    blocks: list[Block] = [Heading(2, "Headline numbers"), Table(cols, rows, numeric=False)]
    if main == "ooo":
        blocks.append(
            Para(
                "Our column is the out-of-order model's; its walk share is the cycles a walk is the oldest unfinished "
                "work (`core.walk_oldest_cycles`), and Equation 1 subtracts those same cycles. The interval model's "
                "numbers and the walker-busy share (the paper's WALK_DURATION formula) are beside them in the next "
                "section and in Figures 1 and 3."
            )
        )
    return blocks


def _models_section(m: pd.DataFrame) -> list[Block]:
    """The timing models side by side: Figure 3's speedups and gaps and
    Figure 1's shares per (workload, model), the paper's values on each
    workload's first row."""
    rows = []
    for (w, model), r in m.iterrows():
        b = _bench(w)
        first = model == m.loc[w].index[0]
        pm, pe = paper.FIG3_SPEEDUP.get(b or "", (None, None)) if first else (None, None)
        p1 = paper.FIG1_WALK_SHARE.get(b or "", (None, None))[0] if first else None
        rows.append(
            [
                label(w) if first else "",
                model,
                fmt(r["measured"], 1),
                fmt(r["expected"], 1),
                fmt(r["gap"], 1),
                fmt(r["expected_busy"], 1),
                fmt(r["gap_busy"], 1),
                f"{fmt(r['share_4K'])} / {fmt(r['busy_4K'])}",
                f"{fmt(r['share_2M'])} / {fmt(r['busy_2M'])}",
                _pv(pm) if first else "",
                _pv(pe) if first else "",
                _pv(p1) if first else "",
            ]
        )
    return [
        Heading(2, "Both timing models beside the paper"),
        Para(
            "Each workload's 4 KiB and 2 MiB runs without prefetchers, under the out-of-order model "
            "(`timing.kind = \"ooo\"`, the report's main model) and the interval model. Walk cost: under ooo the "
            "cycles a walk is the oldest unfinished work (`core.walk_oldest_cycles`), under interval every walk "
            "cycle. Walker busy: the paper's Table II formula, WALK_DURATION (`walker.data_cycles`) / cycles, the "
            "same under interval; under ooo it counts walk time that overlapped other work too. Equation 1 is "
            "computed with each: cycles(4K) − walks(4K) + walks(2M)."
        ),
        Table(
            [
                "workload",
                "model",
                "2 MiB speedup %",
                "Eq. 1 expected %",
                "gap",
                "Eq. 1 with walker busy %",
                "gap",
                "walk share 4 KiB %, cost / busy",
                "walk share 2 MiB %, cost / busy",
                "paper speedup %",
                "paper Eq. 1 %",
                "paper walk share 4 KiB %",
            ],
            rows,
            numeric=False,
            caption="Gaps in points (speedup − expected). The paper's walk share is WALK_DURATION / cycles on a real "
            "out-of-order core; only the values its text quotes are given.",
        ),
    ]


def _setup(df: pd.DataFrame, t: Mapping[str, pd.DataFrame], spec: Mapping[str, Any]) -> list[Block]:
    first = df.iloc[0]

    def cfg(key: str) -> str:
        v = first.get(f"config.{key}", "—")
        # A key only ooo runs have is a float column (NaN in interval rows).
        if isinstance(v, float) and v.is_integer():
            v = int(v)
        return str(v)

    def tlb(name: str) -> str:
        return f"{cfg(f'mmu.tlb.{name}.entries')} entries, {cfg(f'mmu.tlb.{name}.ways')}-way"

    machine_rows = [
        ["D-TLB 4K", "64 entries, 4-way", tlb("l1_dtlb_4k")],
        ["D-TLB 2M", "32 entries, 4-way", tlb("l1_dtlb_2m")],
        ["L2 TLB 4K (2M: none)", "512 entries, 4-way", f"{tlb('l2_tlb')}, {cfg('mmu.tlb.l2_tlb.latency')} cycles, sizes {cfg('mmu.tlb.l2_tlb.page_sizes')}"],
        [
            "MMU caches",
            "present, not documented (no counters)",
            f"PDE {cfg('mmu.psc.pde.entries')}, PDPTE {cfg('mmu.psc.pdpte.entries')}, PML4E {cfg('mmu.psc.pml4e.entries')} entries",
        ],
        [
            "Walker",
            "hardware walker through the caches",
            f"{cfg('walker.step_cycles')} cycles per reference + the serving level's latency, entering at {cfg('walker.entry_level')}",
        ],
        [
            "Caches",
            "not stated (an E3-1230 has 32 KiB L1D, 256 KiB L2, 8 MiB LLC)",
            f"L1D {cfg('cache.l1d.size')} ({cfg('cache.l1d.latency')} cyc), L2 {cfg('cache.l2.size')} ({cfg('cache.l2.latency')} cyc), "
            f"LLC {cfg('cache.llc.size')} ({cfg('cache.llc.latency')} cyc), DRAM {cfg('cache.dram_latency')} cyc",
        ],
        [
            "Core",
            "4 out-of-order cores, 3.2 GHz; only the server processes measured",
            (
                f"one core, out-of-order model (`timing.kind = ooo`): window {cfg('timing.ooo.window')}, "
                f"dispatch / retire {cfg('timing.ooo.dispatch_width')} / {cfg('timing.ooo.retire_width')}, "
                f"LSQ {cfg('timing.ooo.lsq')}, {cfg('timing.ooo.mshrs')} L1D MSHRs, {cfg('timing.ooo.walkers')} "
                f"walker(s), base CPI {cfg('timing.base_cpi')}"
                + ("; the interval model (stalls add up, no overlap) beside it in Figures 1 and 3"
                   if "interval" in set(df["model"]) else "")
                if str(first.get("model", "")) == "ooo"
                else f"one core, interval model: base CPI {cfg('timing.base_cpi')}, stalls add up (no overlap)"
            ),
        ],
        ["Large pages", "THP (Linux 3.7.10), partial coverage (Table III)", "`physmem.page_size = thp`: every aligned 2 MiB region first touched gets a 2 MiB page"],
    ]
    blocks: list[Block] = [
        Heading(2, "Set-up"),
        Para(
            f"Machine: the `{spec['machine']}` preset (the paper's Table I). The paper's numbers are perf "
            "counters on the real machine; ours are simulated. What differs is listed here and discussed at the end."
        ),
        Table(["", "paper (Xeon E3-1230)", "Tessera `sandy_bridge` (this run's resolved config)"], machine_rows, numeric=False),
    ]

    cov = t["table3"]
    rows = []
    for w in cov.index:
        bench = _bench(w)
        t3 = paper.TABLE_III.get(bench or "")
        params = " ".join(f"{k}={v}" for k, v in spec["params"].get(w, {}).items())
        rows.append(
            [
                label(w),
                f"`{params}`",
                fmt(cov.loc[w, "touched_mib"], 0),
                t3[0] if t3 else "—",
                fmt(cov.loc[w, "thp_coverage"], 1),
                fmt(t3[2], 2) if t3 else "—",
                fmt(cov.loc[w, "cold_4K"], 2),
            ]
        )
    blocks += [
        Heading(3, "Workloads (Table III)"),
        Para(
            "The scale-out services are Tessera's built-in analogs (docs/workloads.md): each runs the service's core "
            "data path on generated requests, with no network stack, kernel or JVM. Software-testing (Cloud9) has no "
            "analog. The memory-intensive workloads stand in for the paper's comparison suites (§IV-F); canneal is "
            "one of the PARSEC programs it names."
        ),
        Table(
            [
                "workload (paper benchmark)",
                "parameters",
                "touched, MiB (ours)",
                "data set (paper)",
                "% backed by 2 MiB pages (ours)",
                "% of anon. pages in 2 MiB pages (paper)",
                "% of 4 KiB walks that are first touches (ours)",
            ],
            rows,
            caption="Table III analog. Touched = pages mapped in the 4 KiB run (its page tables at the end, warm-up "
            "included). The paper finds cold TLB misses below 0.02 % of all misses (§IV-A); our runs are short, so "
            "the last column shows how much cold walks weigh in the measured part of ours, after the warm-up.",
        ),
    ]
    pf_rows = [
        [label_pf, " / ".join(kinds), desc]
        for label_pf, kinds, desc in (
            ("none", ma.PREFETCH["none"], "all prefetchers disabled (the baseline of every other view)"),
            ("l1", ma.PREFETCH["l1"], "only L1 prefetchers on: the DCU next-line prefetcher"),
            ("all", ma.PREFETCH["all"], "all on: plus the L2 streamer (stride) and an adjacent-line prefetcher at the LLC"),
        )
    ]
    blocks += [
        Heading(3, "Prefetcher settings (Table V)"),
        Para(
            "Sandy Bridge has two L1 prefetchers (DCU next-line, IP-stride) and two L2 ones (adjacent line, "
            "streamer). Tessera attaches one prefetcher to each cache level, so each pair is represented by one. "
            "Tessera's prefetchers never cross a 4 KiB page and never look up a TLB (docs/config.md)."
        ),
        Table(["setting", "L1D / L2 / LLC prefetcher", "meaning"], pf_rows, numeric=False),
    ]
    return blocks


def _fig1(t: pd.DataFrame) -> list[Block]:
    ms = _models(t)
    main = ms[0]
    cols = [("4K", f"{_ours(main)} 4 KiB"), ("2M", f"{_ours(main)} 2 MiB")]
    if "4K busy" in t.columns and main == "ooo":
        cols += [("4K busy", f"{_ours(main)} 4 KiB, walker busy"), ("2M busy", f"{_ours(main)} 2 MiB, walker busy")]
    for m in ms[1:]:
        cols += [(f"{m} 4K", f"{_ours(m)} 4 KiB"), (f"{m} 2M", f"{_ours(m)} 2 MiB")]
    rows = []
    renamed = ""
    for w in t.index:
        p = paper.FIG1_WALK_SHARE.get(_bench(w) or "", (None, None))
        rows.append([label(w)] + [fmt(t.loc[w, c]) for c, _ in cols] + [_pv(p[0]), _pv(p[1])])
        if _bench(w) == "media-streaming" and p[0] is not None:
            renamed = f" Media-streaming's 4 KiB value: {paper.FIG1_MEDIA_SERVING_NOTE} (§IV-A)."
    how = "% of cycles in data page walks (walk cycles / cycles)."
    if main == "ooo":
        how = (
            "% of cycles in data page walks. Out-of-order model: the cycles a walk is the oldest unfinished work "
            "(`core.walk_oldest_cycles / core.cycles`), and, as walker busy, the paper's Table II formula "
            "WALK_DURATION / cycles (`walker.data_cycles / core.cycles`), which also counts walk time hidden behind "
            "other work. Interval model: walk cycles / cycles (every walk cycle is a stall)."
        )
    return [
        Heading(2, "Figure 1: time spent in page walks"),
        Figure("figures/fig1_walk_share", "Figure 1: % of cycles in data page walks with 4 KiB and 2 MiB pages"),
        Table(
            ["workload"] + [h for _, h in cols] + ["paper 4 KiB", "paper 2 MiB"],
            rows,
            caption=how + " Paper values are only those its text quotes; the bars of its Figure 1 are not given as "
            "numbers." + renamed,
        ),
        Para(f"Paper: {paper.CLAIMS['fig1']}"),
    ]


def _fig2(t: pd.DataFrame) -> list[Block]:
    rows = [[label(w), fmt(t.loc[w, "2M"]), fmt(paper.TABLE_IV[_bench(w)][2]) if _bench(w) in paper.TABLE_IV else "—"] for w in t.index]
    return [
        Heading(2, "Figure 2: walk cycles with 2 MiB pages, normalised to 4 KiB"),
        Figure("figures/fig2_normalised_walk_cycles", "Figure 2: data walk cycles with 2 MiB pages ÷ with 4 KiB pages"),
        Table(["workload", "ours 2 MiB ÷ 4 KiB", "paper (Table IV)"], rows),
        Para(f"Paper: {paper.CLAIMS['fig2']}"),
    ]


def _fig3(t: pd.DataFrame) -> list[Block]:
    ms = _models(t)
    main = ms[0]
    cols = [("measured", f"{_ours(main)} simulated %"), ("expected", f"{_ours(main)} expected %"),
            ("gap", f"{_ours(main)} gap (points)")]
    if main == "ooo" and "expected_busy" in t.columns:
        cols += [("expected_busy", f"{_ours(main)} expected with walker busy %"),
                 ("gap_busy", f"{_ours(main)} gap with walker busy")]
    for m in ms[1:]:
        cols += [(f"{m} measured", f"{_ours(m)} simulated %"), (f"{m} expected", f"{_ours(m)} expected %"),
                 (f"{m} gap", f"{_ours(m)} gap")]
    rows = []
    for w in t.index:
        pm, pe = paper.FIG3_SPEEDUP.get(_bench(w) or "", (None, None))
        rows.append([label(w)] + [fmt(t.loc[w, c]) for c, _ in cols] + [_pv(pm), _pv(pe)])
    split_cols = ["saved_walks", "saved_tlb_hits", "saved_data"] + (["saved_other"] if "saved_other" in t.columns else [])
    why_blocks: list[Block] = []
    for m in ms:
        cs = [_col(t, m, main, c) for c in split_cols]
        if not all(c in t.columns for c in cs):
            continue
        why = [[label(w)] + [fmt(t.loc[w, c]) for c in cs] for w in t.index]
        if m == "ooo":
            cap = (
                "Out-of-order model: where the simulated cycles go, as % of the 4 KiB run's cycles. Stalls are head "
                "time (the oldest op not done, docs/timing.md): walk cost = the cycles a walk is the oldest, L2-TLB "
                "hits = the rest of the translation stall, data = the data stall; other = the rest of the saving "
                "(cycles no stalled op holds the head). Equation 1 sees only the first column."
            )
        else:
            cap = (
                (f"{m[0].upper()}{m[1:]} model: " if m else "")
                + "where the simulated cycles go, as % of the 4 KiB run's cycles. The interval model's cycles are "
                "base + data stalls + translation stalls exactly, so the simulated saving is the sum of the walk, "
                "L2-TLB-hit and data-stall columns (other is 0); Equation 1 sees only the first. The other two are "
                "the gap."
            )
        heads = ["workload", "walk cycles saved", "L2-TLB hit cycles saved", "data-stall cycles saved"]
        heads += ["other"] if "saved_other" in split_cols else []
        why_blocks.append(Table(heads, why, caption=cap))
    eq = (
        "Equation 1: ExpectedTotalCycles(2M) = TotalCycles(4K) − TlbCycles(4K) + TlbCycles(2M); speedup = "
        "cycles(4K) / cycles(2M) − 1. TlbCycles is what a walk costs: under the interval model every walk cycle "
        "(`tessera compare` computes the same)"
    )
    eq += (
        "; under the out-of-order model the cycles a walk is the oldest unfinished work (`core.walk_oldest_cycles`), "
        "the walk time the cycles contain. The paper's counter, WALK_DURATION, is the walker-busy time; "
        "Equation 1 with it (the `expected with walker busy` column, as `tessera compare` on ooo runs) also "
        "subtracts walk time that overlapped other work."
        if "ooo" in ms
        else "."
    )
    return [
        Heading(2, "Figure 3: simulated vs expected speedup (Equation 1)"),
        Para(eq),
        Figure("figures/fig3_speedup", "Figure 3: speedup from 4 KiB to 2 MiB pages, simulated and expected by Equation 1"),
        Table(
            ["workload"] + [h for _, h in cols] + ["paper measured %", "paper expected %"],
            rows,
            caption="The paper gives no expected speedup for its throughput benchmarks (media-streaming, "
            "software-testing, web-search) and calls data-caching's, media-streaming's and software-testing's "
            "measured speedups negligible.",
        ),
        Para(f"Paper: {paper.CLAIMS['fig3']} It also reports IPC gains of 12.3 / 8.1 / 7.4 % (ours equal the speedups: both runs retire the same instructions)."),
    ] + why_blocks


def _pair(t: pd.DataFrame, title: str, stem: str, caption: str, idx: int, digits: int, extra: str) -> list[Block]:
    rows = []
    for w in t.index:
        b = _bench(w)
        ratio = t.loc[w, "2M"] / t.loc[w, "4K"] if t.loc[w, "4K"] else float("nan")
        rows.append(
            [
                label(w),
                fmt(t.loc[w, "4K"], digits),
                fmt(t.loc[w, "2M"], digits),
                fmt(ratio),
                fmt(paper.TABLE_IV[b][idx]) if b in paper.TABLE_IV else "—",
            ]
        )
    return [
        Heading(2, title),
        Figure(stem, caption),
        Table(["workload", "ours 4 KiB", "ours 2 MiB", "ours 2 MiB ÷ 4 KiB", "paper 2 MiB ÷ 4 KiB (Table IV)"], rows),
        Para(extra),
    ]


def _table4(t: pd.DataFrame) -> list[Block]:
    rows = []
    for w in t.index:
        b = _bench(w)
        p = paper.TABLE_IV.get(b or "")
        rows.append(
            [label(w)]
            + [fmt(t.loc[w, c]) for c in ("walks_pki", "cycles_per_walk", "walk_cycles")]
            + ([fmt(x) for x in p] if p else ["—"] * 3)
        )
    for b in paper.BENCHMARKS:
        if b not in {paper.ANALOG_OF.get(w) for w in t.index}:
            rows.append([f"({b}: no analog)", "—", "—", "—"] + [fmt(x) for x in paper.TABLE_IV[b]])
    return [
        Heading(2, "Table IV: 2 MiB pages normalised to 4 KiB"),
        Table(
            [
                "workload",
                "ours walks/kinstr",
                "ours cycles/walk",
                "ours walk cycles",
                "paper walks/kinstr",
                "paper cycles/walk",
                "paper walk cycles",
            ],
            rows,
            caption="Lower is better. A cycles-per-walk ratio is undefined (—) when the 2 MiB run makes no walk.",
        ),
    ]


def _fig7(t: pd.DataFrame) -> list[Block]:
    rows = [[label(w), fmt(t.loc[w, "l1d"]), fmt(t.loc[w, "l2"]), fmt(t.loc[w, "llc"])] for w in t.index]
    maxima = "; ".join(f"{lvl.upper()}: {v} % ({b})" for lvl, (b, v) in paper.FIG7_MISS_REDUCTION.items())
    return [
        Heading(2, "Figure 7: cache misses saved by 2 MiB pages"),
        Para(
            "The paper's Figure 7 is not one of the views this report reproduces, but it comes from the same runs "
            "and explains part of Figure 3's gap."
        ),
        Figure("figures/fig7_cache_miss_reduction", "Figure 7: % fewer L1D, L2 and LLC misses with 2 MiB pages"),
        Table(
            ["workload", "ours L1D %", "ours L2 %", "ours LLC %"],
            rows,
            caption="L1D counts all demand misses (as L1D.REPLACEMENT, which includes walk fills); L2 and LLC count "
            f"data misses (as the MEM_LOAD_UOPS counters). The paper quotes only the largest reductions: {maxima}; "
            "data-caching and web-search have slightly more LLC misses with 2 MiB pages.",
        ),
    ]


def _fig9(t: pd.DataFrame) -> list[Block]:
    rows = []
    for w in t.index:
        b = _bench(w)
        rows.append(
            [label(w), fmt(t.loc[w, "walks_pki"], 3), fmt(t.loc[w, "llc_mpki"]), t.loc[w, "larger"], paper.FIG9_ORDER.get(b or "", "—")]
        )
    return [
        Heading(2, "Figure 9: page walks vs LLC misses (2 MiB pages)"),
        Figure("figures/fig9_walks_vs_llc", "Figure 9: data page walks and LLC data misses per 1000 instructions, 2 MiB pages"),
        Table(
            ["workload", "ours walks/kinstr", "ours LLC misses/kinstr", "ours: larger", "paper: larger"],
            rows,
            caption="The paper's bars are not given as numbers; its text says which of the two is larger per benchmark (§V-A).",
        ),
        Para(f"Paper: {paper.CLAIMS['fig9']}"),
    ]


def _fig10(t: pd.DataFrame) -> list[Block]:
    blocks: list[Block] = [
        Heading(2, "Figure 10: perfect MMU cache and perfect TLB bounds"),
        Para(
            "Eq. 2–4: PerfectMMU_X = walks × {43, 20, 12} cycles / cycles (one reference per walk, hitting the "
            "LLC / L2 / L1); Eq. 5: PerfectTLB = walks × 7 cycles / cycles. The constants are this run's "
            "`metrics.*` config (the paper's values by default)."
        ),
        Figure("figures/fig10_bounds", "Figure 10: simulated walk overhead and the perfect-MMU-cache and perfect-TLB bounds"),
    ]
    for page, name in (("4K", "4 KiB"), ("2M", "2 MiB")):
        rows = [
            [label(w)]
            + [fmt(t.loc[w, f"{page} {c}"]) for c in ("measured", "perfect_mmu_llc", "perfect_mmu_l2", "perfect_mmu_l1", "perfect_tlb")]
            for w in t.index
        ]
        blocks.append(
            Table(
                ["workload", "simulated", "PerfectMMU_LLC", "PerfectMMU_L2", "PerfectMMU_L1", "PerfectTLB"],
                rows,
                caption=f"% of cycles, {name} pages. The paper's bars are not given as numbers.",
            )
        )
    blocks.append(Para(f"Paper: {paper.CLAIMS['fig10']}"))
    return blocks


def _table5(t: pd.DataFrame) -> list[Block]:
    blocks: list[Block] = [
        Heading(2, "Table V: prefetchers and page walks (2 MiB pages)"),
        Figure("figures/table5_prefetch", "Table V: walks, cycles per walk and walk cycles with prefetchers on, normalised to all off"),
    ]
    for idx, (lab, name) in enumerate((("l1", "only the L1 prefetcher on"), ("all", "all prefetchers on"))):
        rows = []
        for w in t.index:
            p = paper.TABLE_V.get(_bench(w) or "")
            rows.append(
                [label(w)]
                + [fmt(t.loc[w, f"{lab} {c}"]) for c in ("walks", "cycles_per_walk", "walk_cycles")]
                + ([fmt(x) for x in p[idx]] if p else ["—"] * 3)
            )
        blocks.append(
            Table(
                ["workload", "ours walks", "ours cycles/walk", "ours walk cycles", "paper walks", "paper cycles/walk", "paper walk cycles"],
                rows,
                caption=f"{name[0].upper()}{name[1:]}, normalised to all prefetchers off (lower is better).",
            )
        )
    blocks.append(Para(f"Paper: {paper.CLAIMS['table5']}"))
    return blocks


def _discussion(t: Mapping[str, pd.DataFrame], df: pd.DataFrame, ctx: Mapping[str, Any]) -> list[Block]:
    wls = list(t["fig1"].index)
    so = [w for w in wls if _bench(w)]
    f2, t3, t5 = t["fig2"], t["table3"], t["table5"]
    bullets = []
    if so:
        bullets.append(
            f"**Data sets.** Our scale-out analogs touch {_range(t3.loc[so, 'touched_mib'], 0)} MiB; the paper's "
            "services work on 0.7–12 GB. The 2 MiB D-TLB (32 entries) reaches 64 MiB, so with THP much of an "
            f"analog's hot data is covered: walk cycles with 2 MiB pages are {_range(f2.loc[so, '2M'])} × those "
            "with 4 KiB (paper, Table IV: 0.34–1.54). Bigger parameters (`--param`) move the analogs towards the "
            "paper's regime at the cost of run time."
        )
    bullets.append(
        "**No kernel.** The paper finds that kernel code (network and file-system stacks) causes much of the walk "
        "overhead of data-caching, data-serving, media-streaming and web-search (68.6 / 25.5 / 67.2 / 10.7 % of "
        "their time is in the kernel), and that kernel 2 MiB entries crowd the 32-entry 2 MiB TLB, which is why "
        "walks *rise* with THP for data-caching and web-search. The analogs emit only the user-level data path, "
        "so neither effect can appear here."
    )
    bullets.append(
        f"**THP coverage.** Tessera's THP backs every aligned 2 MiB region it can ({_range(t3['thp_coverage'], 1)} % "
        "here); the paper's THP covered 0 % (media-streaming) to 99.9 % (data-caching) of anonymous memory, and "
        "data-serving's memory-mapped database not at all (Table III). `physmem.fragmentation` can lower our "
        "coverage; this report does not use it."
    )
    bullets += _timing_bullets(t, df)
    bullets.append(
        f"**Cold walks.** Every run first warms the machine ({_warmup_text(ctx)}), and only the rest is counted. "
        f"Our runs are still short: first-touch walks are {_range(t3['cold_4K'])} % of the measured 4 KiB walks "
        f"({_range(t3['cold_2M'])} % with 2 MiB pages, where few walks remain), against below 0.02 % in the paper. "
        "Where a 2 MiB run makes almost no walks, its cycles per walk describe a handful of cold walks."
    )
    walks_ratio = pd.concat([t5["l1 walks"], t5["all walks"]]).dropna()
    same = bool(len(walks_ratio)) and bool((walks_ratio == 1.0).all())
    bullets.append(
        "**Prefetchers.** "
        + (
            "The number of walks is identical with and without prefetchers (ratio 1.00 for every workload): "
            "Tessera's prefetchers stay inside a 4 KiB page, never look up a TLB and never walk, so they cannot "
            "change the TLBs' contents. "
            if same
            else f"The number of walks changes with prefetchers ({_range(walks_ratio)}). "
        )
        + f"Only the cost of a walk changes, through what the prefetched lines evict or bring in (walk cycles "
        f"{_range(t5['all walk_cycles'])} × with all prefetchers on). The paper saw walk counts change by "
        "0.77–1.66× and speculates that prefetch requests disturb TLB replacement or walk themselves; Tessera "
        "models neither, by design."
    )
    bullets.append(
        "**Instruction side.** Built-in workloads emit no instruction fetches, so the paper's Figure 8 "
        "(I-TLB walks; data-serving 2.45 % of time) is not reproduced, and all walks here are data walks."
    )
    return [Heading(2, "Where and why our numbers differ"), Bullets(bullets)]


def _span(s: pd.Series, digits: int = 2) -> str:
    """``min to max``, for ranges that can be negative."""
    s = s.dropna()
    if s.empty:
        return "—"
    return f"{fmt(s.min(), digits)} to {fmt(s.max(), digits)}"


def _timing_bullets(t: Mapping[str, pd.DataFrame], df: pd.DataFrame) -> list[str]:
    """What the timing models do to the numbers, computed from the tables."""
    f1, f3 = t["fig1"], t["fig3"]
    ms = _models(f1)
    main = ms[0]
    dram = df.iloc[0].get("config.cache.dram_latency", "?")
    ipc = {}
    for m in ms:
        four_k = ma._pick(df, "4K", model=m or None).reindex(f1.index)
        ipc[m] = four_k["core.instructions"] / four_k["core.cycles"]
    interval = "interval" if "interval" in ms else None
    out = []
    if main == "ooo":
        text = (
            f"**Timing models.** The main tables use the out-of-order model: walks and DRAM misses overlap within "
            f"the window, so IPC with 4 KiB pages is {_range(ipc['ooo'])}"
        )
        if interval:
            text += (
                f", against {_range(ipc[interval])} under the interval model, which adds every stall (no overlap, "
                f"every DRAM access {dram} cycles)"
            )
        text += (
            f". Under ooo a walk holds the core up (is the oldest unfinished work) for {_range(f1['4K'])} % of the "
            f"cycles with 4 KiB pages, while the walker is busy {_range(f1['4K busy'])} % of them"
        )
        if interval:
            text += f"; the interval model charges every walk cycle: {_range(f1[f'{interval} 4K'])} %"
        text += (
            f". Equation 1 with the walk cost leaves a gap of {_span(f3['gap'], 1)} points under ooo "
            f"({_span(f3['gap_busy'], 1)} with the walker-busy cycles"
        )
        text += f"; {_span(f3[f'{interval} gap'], 1)} under the interval model)." if interval else ")."
        inside = (f3["measured"] >= f3["expected"]) & (f3["measured"] <= f3["expected_busy"])
        outside = [w for w, v in inside.items() if not v]
        text += (
            f" The simulated speedup lies between Equation 1 with the walk-oldest cycles and with the walker-busy "
            f"cycles for {int(inside.sum())} of {len(inside)} workloads"
            + (f" (not: {', '.join(outside)})" if outside else "")
            + ": under this model neither counter is the cycles walks cost. The walker-busy time includes walk "
            "time hidden behind other work; the walk-oldest time leaves out walks that queue for the one walker "
            "while older work is still in flight and hold the window up (`core.rob_full_cycles`, "
            "`core.walker_wait_cycles` in `data/runs.csv`)."
        )
        out.append(text)
    if interval or main == "interval" or main == "":
        pre = "" if main in ("interval", "") else f"{interval} "
        out.append(
            "**Where the interval model's gap comes from.** Its cycles are base + data stalls + translation stalls "
            "exactly, so Figure 3's gap is exactly attributable: the simulated saving beyond Equation 1 is "
            f"{_range(f3[pre + 'saved_tlb_hits'])} % of cycles from fewer 7-cycle L2-TLB probes and "
            f"{_range(f3[pre + 'saved_data'])} % from data stalls (page-table lines no longer evicting data, and a "
            "physical layout of contiguous 2 MiB frames instead of 4 KiB frames handed out in first-touch order). "
            "The paper attributes its gap to pipeline and memory-hierarchy effects it could not separate."
        )
    return out


def _not_reproduced() -> list[Block]:
    return [
        Heading(2, "Not reproduced"),
        Bullets(
            [
                "Figure 6 (SPEC, BioBench, PARSEC geometric means): those suites are not built in; the memory-intensive "
                "rows (GUPS, Graph500 BFS, PARSEC canneal, XSBench) are the comparison here.",
                "Figure 8 (instruction-TLB walks): the workloads emit no instruction fetches.",
                "Kernel page walks and their breakdown by kernel function (§IV-A): no kernel is simulated.",
                "Software-testing (Cloud9): no analog.",
                "Back-end stall cycles (§IV-C): neither timing model has pipeline stages; the out-of-order model's "
                "head-time stalls are not Intel's back-end stall count.",
            ]
        ),
    ]


def _reproducing(ctx: Mapping[str, Any]) -> list[Block]:
    spec = ctx["spec"]
    w0 = spec["axes"]["workload"][0]
    params0 = " ".join(f"--param {k}={v}" for k, v in spec["params"].get(w0, {}).items())
    singles = [
        f"tessera run --preset {spec['machine']} --workload {w0} {params0} --set physmem.page_size=base_only",
        f"tessera run --preset {spec['machine']} --workload {w0} {params0} --set physmem.page_size=thp",
    ]
    for lab in ("l1", "all"):
        sets = " ".join(f"--set {k}={v}" for k, v in zip(ma._PF_KEYS, ma.PREFETCH[lab]))
        singles.append(f"tessera run --preset {spec['machine']} --workload {w0} {params0} --set physmem.page_size=thp {sets}")
    models = list(spec["axes"].get("timing.kind", ["interval"]))
    singles = [f"{c} --set timing.kind={models[0]}" for c in singles] + [
        f"{c} --set timing.kind={m}" for m in models[1:] for c in singles[:2]
    ]
    timing = ctx["timing"]
    n_runs = len(spec["axes"]["workload"]) * (4 + 2 * (len(models) - 1))
    per = f"4 configurations under `{models[0]}`" + "".join(f" + 2 under `{m}`" for m in models[1:])
    return [
        Heading(2, "How this report was made"),
        Para("Command:"),
        Code(ctx["command"], "sh"),
        Para(
            f"Scale `{ctx['scale']}`: {int(timing['runs'])} runs ({len(spec['axes']['workload'])} workloads × "
            f"({per}) = {n_runs}) in sweep `{spec['name']}`, executor `{ctx['executor'] or 'local'}` with "
            f"{fmt(timing['workers'], 0)} worker(s), store `{ctx['store']}`. Tessera {ctx['version']}"
            + (f", commit `{ctx['commit']}`" if ctx.get("commit") else "")
            + f". This invocation simulated {fmt(timing['computed'], 0)} runs and reused "
            f"{fmt(timing['already_stored'], 0)} from the store; sweep wall time {timing['sweep_s']:.0f} s, "
            f"{timing['sum_wall_s']:.0f} s in the simulator summed over all {int(timing['runs'])} runs (including "
            f"reused ones, as first measured); analysis, figures and report {timing['report_s']:.0f} s. "
            f"Each run's {_warmup_text(ctx)}; counters restart after it (`docs/stats.md`)."
        ),
        Para(ctx.get("model_statement", "")),
        Para(
            "The sweep, as given to `tessera.sweep` (also `sweep.toml` in this directory; "
            "`tessera sweep sweep.toml --store store.sqlite` runs the same runs, with the same run ids):"
        ),
        Code(ctx["sweep_toml"], "toml"),
        Para(
            f"The same runs one by one, for `{w0}` (under `{models[0]}`: 4 KiB; THP; THP with the L1 prefetcher; THP "
            "with all prefetchers"
            + "".join(f"; under `{m}`: 4 KiB; THP" for m in models[1:])
            + "):"
        ),
        Code("\n".join(singles), "sh"),
        Para(
            "Files: `figures/*.png|svg`; `data/runs.csv` (one row per run: every counter, derived metric and "
            "resolved config key); `data/<table>.csv` (each table above, unrounded)."
        ),
    ]


def _warmup_text(ctx: Mapping[str, Any]) -> str:
    """How the sweep warmed its runs, in words."""
    axes = ctx["spec"]["axes"]
    warm = dict(zip(axes["workload"], axes.get("warmup", [])))
    if not warm or all(str(w) in ("0", "none") for w in warm.values()):
        return "no warm-up: every access is counted"
    if len(set(warm.values())) == 1:
        return f"warm-up: the first {next(iter(warm.values()))} of each workload"
    return ("warm-up: about 20 % of each workload's instructions, from "
            + ", ".join(f"{w} {v.replace(' instructions', '')}" for w, v in warm.items()) + " instructions")


def build(df: pd.DataFrame, tables: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    """The whole report. ``df`` is the labelled sweep; ``tables`` the analysis
    tables by key (``fig1`` … ``table5``); ``ctx`` the run's provenance."""
    wls = list(tables["fig1"].index)
    scale_note = {
        "full": "",
        "quick": " This is the `--quick` scale: smaller data sets and fewer requests than the full report, so "
        "cold walks weigh more and THP covers more of each data set.",
        "tiny": " This is the test-only `tiny` scale: the runs are far too short for the numbers to mean anything.",
    }[ctx["scale"]]
    blocks: list[Block] = [
        Heading(1, "Reproduction: Performance Analysis of the MMU under Scale-out Workloads"),
        Para(
            "Karakostas et al. measured, with performance counters on a Sandy Bridge Xeon, how CloudSuite's "
            "scale-out services use the MMU (\"Performance Analysis of the Memory Management Unit under Scale-out "
            "Workloads\", IEEE International Symposium on Workload Characterization, IISWC 2014). This report "
            "repeats each of their views on Tessera's `sandy_bridge` preset with Tessera's built-in analogs of those "
            "services and some memory-intensive workloads, and puts our numbers next to the paper's. "
            + model_statement(df)
            + " Every number in our columns comes from the simulations of this run; paper columns are transcribed from the paper's text "
            "(only tables III–V are complete; for figures, only values the text quotes)." + scale_note
        ),
    ]
    blocks += _headline(tables, wls)
    if "models" in tables and len(_models(tables["fig1"])) > 1:
        blocks += _models_section(tables["models"])
    blocks += _setup(df, tables, ctx["spec"])
    blocks += _fig1(tables["fig1"])
    blocks += _fig2(tables["fig2"])
    blocks += _fig3(tables["fig3"])
    blocks += _pair(
        tables["fig4"],
        "Figure 4: page walks per 1000 instructions",
        "figures/fig4_walks_pki",
        "Figure 4: data page walks per 1000 instructions (MPKI), 4 KiB and 2 MiB pages",
        0,
        3,
        f"Paper: {paper.CLAIMS['fig4']} The paper's bars are not given as numbers; Table IV has their ratios.",
    )
    blocks += _pair(
        tables["fig5"],
        "Figure 5: cycles per page walk",
        "figures/fig5_cycles_per_walk",
        "Figure 5: average cycles per data page walk, 4 KiB and 2 MiB pages",
        1,
        1,
        f"Paper: {paper.CLAIMS['fig5']} The paper's bars are not given as numbers; Table IV has their ratios.",
    )
    blocks += _table4(tables["table4"])
    blocks += _fig9(tables["fig9"])
    blocks += _fig10(tables["fig10"])
    blocks += _table5(tables["table5"])
    blocks += _fig7(tables["fig7"])
    blocks += _discussion(tables, df, ctx)
    blocks += _not_reproduced()
    blocks += _reproducing(ctx)
    return blocks
