"""Reproduce the scale-out MMU study on Tessera's workloads: sweeps and analysis.

The study (Karakostas et al., IISWC 2014; its numbers are in
:mod:`tessera.report.paper_mmu`) measured, with perf counters on a Sandy
Bridge Xeon, how much time CloudSuite services spend in page walks with
4 KiB pages and with THP, how often they walk and what a walk costs, how far
Equation 1 predicts the speedup from 2 MiB pages, the perfect-MMU-cache and
perfect-TLB bounds, and what the data prefetchers do to walks.

Here the same views come from one sweep on the ``sandy_bridge`` preset:
every workload × {4 KiB, THP} with prefetchers off, plus, with THP, the two
prefetcher settings of Table V, under the out-of-order timing model
(``timing.kind = "ooo"``, the report's main model); the 4 KiB and THP runs
without prefetchers are repeated under the interval model, so Figures 1 and 3
show both models' cycles beside each other (:data:`MODELS`). :func:`sweep_spec` builds the sweep,
:func:`run_sweep` runs it through :func:`tessera.sweep`, and each ``fig*``/``table*`` function turns the sweep's
DataFrame into one of the paper's tables. Every metric is computed here
from raw counters with the paper's Table II formulas, so the functions can be
checked on a hand-made DataFrame.
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

__all__ = [
    "STUDY",
    "SCALES",
    "SCALE_OUT",
    "MEMORY_INTENSIVE",
    "PAGE_SIZES",
    "PREFETCH",
    "MODELS",
    "workloads_for",
    "params_for",
    "sweep_spec",
    "run_sweep",
    "label_runs",
    "models_of",
    "fig1_walk_share",
    "fig2_normalised_walk_cycles",
    "fig3_speedup",
    "fig4_walks_pki",
    "fig5_cycles_per_walk",
    "table4_ratios",
    "fig7_cache_miss_reduction",
    "fig9_walks_vs_llc",
    "fig10_bounds",
    "table5_prefetch",
    "table3_coverage",
    "models_table",
    "tables",
    "reproduce",
    "Reproduction",
]

STUDY = "mmu-analysis"
MACHINE = "sandy_bridge"

#: ``quick`` runs in a few minutes on 2 cores, ``full`` in tens of minutes;
#: ``tiny`` only checks the pipeline (tests), its numbers mean nothing.
SCALES = ("full", "quick", "tiny")

#: The analogs of the paper's CloudSuite services (paper order; see
#: :data:`tessera.report.paper_mmu.ANALOG_OF`).
SCALE_OUT = ("data-analytics", "kvcache", "data-serving", "graph-analytics", "media-streaming", "web-search")
#: Memory-intensive references: the paper's §IV-F compares against SPEC,
#: PARSEC and BioBench; canneal is one of the PARSEC programs it names.
MEMORY_INTENSIVE = ("gups", "graph500-bfs", "canneal", "xsbench")

#: Label → ``physmem.page_size`` mechanism.
PAGE_SIZES = {"4K": "base_only", "2M": "thp"}

#: Table V's prefetcher settings → (``cache.l1d``, ``cache.l2``, ``cache.llc``
#: prefetcher). Sandy Bridge has two L1 prefetchers (DCU next-line and
#: IP-stride) and two L2 ones (adjacent-line/spatial and the streamer, which
#: also fills the LLC). Tessera attaches one prefetcher per level, so "l1" is
#: the DCU's next-line prefetcher and "all" adds a stride streamer at L2 and
#: a next-line (adjacent-line) prefetcher where L2 misses reach the LLC.
PREFETCH = {
    "none": ("none", "none", "none"),
    "l1": ("next_line", "none", "none"),
    "all": ("next_line", "stride", "next_line"),
}
_PF_KEYS = ("cache.l1d.prefetcher", "cache.l2.prefetcher", "cache.llc.prefetcher")

#: Timing models (``timing.kind``) the sweep runs, the report's main one
#: first. The main model runs all four configurations of a workload; the
#: others run the 4 KiB and THP runs without prefetchers (what Figures 1 and 3
#: need; every counter but the cycles and stalls is the same under both models,
#: docs/timing.md), so the other views are the main model's.
MODELS = ("ooo", "interval")

# Workload parameters per scale. Sizes are chosen so that the data the
# workload touches at random is well beyond the 2 MiB D-TLB's reach (32 × 2 MiB
# = 64 MiB) where the access budget allows, and so that each run makes many
# accesses per page it touches (cold, first-touch walks are a small share;
# the report shows that share). The paper's data sets are 0.7-12 GB.
_PARAMS: dict[str, dict[str, dict[str, str]]] = {
    "full": {
        "data-analytics": {"docs": "50k", "vocab": "8M"},
        "kvcache": {"memory": "1GiB", "keys": "8M", "requests": "2M"},
        "data-serving": {"records": "4M", "ops": "1M"},
        "graph-analytics": {"scale": "22", "iterations": "1"},
        "media-streaming": {"files": "512", "bytes": "4GiB"},
        "web-search": {"docs": "16M", "terms": "4M", "postings": "96M", "queries": "8k"},
        "gups": {"table": "4GiB", "updates": "20M"},
        "graph500-bfs": {"scale": "21", "roots": "1"},
        "canneal": {"elements": "2500k", "steps": "24"},
        "xsbench": {"size": "large", "gridpoints": "4000", "lookups": "150k"},
    },
    "quick": {
        "data-analytics": {"docs": "10k", "vocab": "4M"},
        "kvcache": {"memory": "512MiB", "keys": "4M", "requests": "300k"},
        "data-serving": {"records": "2M", "ops": "150k"},
        "graph-analytics": {"scale": "19", "iterations": "1"},
        "media-streaming": {"files": "256", "bytes": "1GiB"},
        "web-search": {"docs": "8M", "terms": "2M", "postings": "48M", "queries": "2k"},
        "gups": {"table": "2GiB", "updates": "3M"},
        "graph500-bfs": {"scale": "19", "roots": "1"},
        "canneal": {"elements": "1M", "steps": "6"},
        "xsbench": {"size": "large", "gridpoints": "2000", "lookups": "30k"},
    },
    "tiny": {
        "kvcache": {"memory": "16MiB", "keys": "40k", "requests": "4k"},
        "graph-analytics": {"scale": "11", "iterations": "1"},
        "gups": {"table": "64MiB", "updates": "20k"},
    },
}


# Warm-up per workload and scale: about 20 % of the workload's instructions
# (each measured once, 2026-11-24, and rounded to two digits), given as an
# instruction count so it does not depend on the machine. The warm-up fills
# the TLBs, caches and page tables, and takes the first touches it makes, before
# anything is counted (the report states the share of cold walks that remain).
WARMUP_SHARE = 0.2
_WARMUP: dict[str, dict[str, str]] = {
    "full": {
        "data-analytics": "69M instructions",
        "kvcache": "310M instructions",
        "data-serving": "110M instructions",
        "graph-analytics": "150M instructions",
        "media-streaming": "98M instructions",
        "web-search": "200M instructions",
        "gups": "40M instructions",
        "graph500-bfs": "57M instructions",
        "canneal": "14M instructions",
        "xsbench": "71M instructions",
    },
    "quick": {
        "data-analytics": "13M instructions",
        "kvcache": "50M instructions",
        "data-serving": "16M instructions",
        "graph-analytics": "18M instructions",
        "media-streaming": "24M instructions",
        "web-search": "33M instructions",
        "gups": "6M instructions",
        "graph500-bfs": "14M instructions",
        "canneal": "3.5M instructions",
        "xsbench": "14M instructions",
    },
    "tiny": {
        "kvcache": "590k instructions",
        "graph-analytics": "56k instructions",
        "gups": "40k instructions",
    },
}


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (allowed: {', '.join(SCALES)})")


def workloads_for(scale: str) -> tuple[str, ...]:
    """The workloads of one scale, scale-out analogs first."""
    _check_scale(scale)
    return tuple(w for w in SCALE_OUT + MEMORY_INTENSIVE if w in _PARAMS[scale])


def params_for(scale: str) -> dict[str, dict[str, str]]:
    """``{workload: {param: value}}`` of one scale (a copy)."""
    _check_scale(scale)
    return {w: dict(p) for w, p in _PARAMS[scale].items()}


def warmup_for(scale: str) -> dict[str, str]:
    """``{workload: warm-up}`` of one scale (a copy); see ``_WARMUP``."""
    _check_scale(scale)
    return dict(_WARMUP[scale])


def sweep_name(scale: str) -> str:
    _check_scale(scale)
    return STUDY if scale == "full" else f"{STUDY}-{scale}"


def sweep_spec(scale: str = "full", warmup: Optional[str] = None, models: Sequence[str] = MODELS) -> dict[str, Any]:
    """The sweep (contract format, see ``notes/sweep-contract.md``): every
    workload × {4 KiB, THP} × Table V's prefetcher settings, minus the
    prefetcher runs with 4 KiB pages (Table V is for 2 MiB pages only), so
    four runs per workload under the first of ``models`` (``timing.kind``)
    and two (4 KiB and THP, prefetchers off) under each other one.
    ``warmup`` gives every workload one warm-up (``"0"``: none) instead of the
    scale's own (``_WARMUP``)."""
    models = list(models)
    if not models or len(set(models)) != len(models) or any(m not in MODELS for m in models):
        raise ValueError(f"models must be distinct values of {', '.join(MODELS)}; got {models!r}")
    wls = workloads_for(scale)
    pf = list(PREFETCH.values())
    warm = warmup_for(scale) if warmup is None else {w: str(warmup) for w in wls}
    return {
        "name": sweep_name(scale),
        "machine": MACHINE,
        "seed": 0,
        "params": {w: p for w, p in params_for(scale).items() if w in wls},
        "axes": {
            "workload": list(wls),
            # Each workload warms up for its own length (zipped with it).
            "warmup": [warm[w] for w in wls],
            "physmem.page_size": list(PAGE_SIZES.values()),
            **{key: [p[i] for p in pf] for i, key in enumerate(_PF_KEYS)},
            "timing.kind": models,
            "zip": [["workload", "warmup"], list(_PF_KEYS)],
        },
        # Table V is for 2 MiB pages only: no prefetcher runs with 4 KiB pages;
        # and the prefetcher runs only under the main timing model.
        "exclude": [
            {"physmem.page_size": PAGE_SIZES["4K"], **dict(zip(_PF_KEYS, kinds))}
            for label, kinds in PREFETCH.items()
            if label != "none"
        ]
        + [
            {"timing.kind": m, **dict(zip(_PF_KEYS, kinds))}
            for m in models[1:]
            for label, kinds in PREFETCH.items()
            if label != "none"
        ],
    }


def run_sweep(
    spec: Mapping[str, Any],
    *,
    store: Optional[str] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: bool = False,
) -> pd.DataFrame:
    """Run ``spec`` with :func:`tessera.sweep` (results kept in ``store``).

    A failed run is an error here, naming each failure: every view needs all
    four runs of a workload. Finished runs stay in the store, so running again
    computes only what failed."""
    from tessera.errors import TesseraError
    from tessera.sweeps import sweep

    df = sweep(dict(spec), store=store, executor=executor, jobs=jobs, force=force, progress=progress)
    failures = df.attrs.get("failures") or []
    if failures:
        lines = "; ".join(f"{f.get('point')}: {f.get('kind')}: {f.get('error')}" for f in failures)
        raise TesseraError(
            f"{len(failures)} run(s) of sweep {spec['name']!r} failed ({lines}); the finished runs are in the "
            f"store {store}, so running again retries only these"
        )
    return df


# ------------------------------------------------------------------ analysis

_PF_BY_KINDS = {v: k for k, v in PREFETCH.items()}
_PAGE_BY_KIND = {v: k for k, v in PAGE_SIZES.items()}


def _model_column(df: pd.DataFrame) -> pd.Series:
    """Each run's timing model from its resolved config. An interval run's
    written config leaves ``timing.kind`` out (docs/timing.md), so a missing
    value is ``interval``."""
    if "config.timing.kind" not in df.columns:
        return pd.Series("interval", index=df.index)
    return df["config.timing.kind"].fillna("interval").astype(str)


def label_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The sweep's rows with ``page`` (``4K``/``2M``), ``prefetch``
    (``none``/``l1``/``all``) and ``model`` (``timing.kind``: ``ooo`` /
    ``interval``) columns read from each run's resolved config, sorted in the
    study's workload order (within a workload: model as :data:`MODELS`, page,
    prefetch). Raises if a (workload, page, prefetch, model) point is missing
    a label or appears twice."""
    if df.empty:
        raise ValueError("the sweep returned no runs")
    out = df.copy()
    out["model"] = _model_column(out)
    out["page"] = out["config.physmem.page_size.kind"].map(_PAGE_BY_KIND)
    kinds = list(zip(*(out[f"config.{k}.kind"] for k in _PF_KEYS)))
    out["prefetch"] = [_PF_BY_KINDS.get(k) for k in kinds]
    bad = out[out["page"].isna() | out["prefetch"].isna() | ~out["model"].isin(MODELS)]
    if not bad.empty:
        raise ValueError(f"runs outside the study's configurations: {sorted(set(bad['run_id']))}")
    dup = out.duplicated(["workload", "page", "prefetch", "model"], keep=False)
    if dup.any():
        raise ValueError(f"several runs for one configuration: {sorted(set(out[dup]['workload']))}")
    order = {w: i for i, w in enumerate(SCALE_OUT + MEMORY_INTENSIVE)}
    out["_order"] = out["workload"].map(lambda w: order.get(w, len(order)))
    out["_model"] = out["model"].map(list(MODELS).index)
    out["_page"] = out["page"].map(list(PAGE_SIZES).index)
    out["_pf"] = out["prefetch"].map(list(PREFETCH).index)
    out = out.sort_values(["_order", "workload", "_model", "_page", "_pf"], kind="stable")
    out = out.drop(columns=["_order", "_model", "_page", "_pf"])
    return out.reset_index(drop=True)


def models_of(df: pd.DataFrame) -> list[str]:
    """The timing models of the labelled runs, in :data:`MODELS` order: the
    first is the main one (the report's main tables)."""
    have = set(df["model"]) if "model" in df.columns else {"interval"}
    return [m for m in MODELS if m in have]


def _pick(df: pd.DataFrame, page: str, prefetch: str = "none", model: Optional[str] = None) -> pd.DataFrame:
    """One row per workload (in study order) for one configuration, under
    ``model`` (default: the main model of ``df``, see :func:`models_of`)."""
    sub = df[(df["page"] == page) & (df["prefetch"] == prefetch)]
    if "model" in sub.columns:
        sub = sub[sub["model"] == (model or models_of(df)[0])]
    return sub.set_index("workload")


def _workloads(df: pd.DataFrame) -> list[str]:
    return list(dict.fromkeys(df["workload"]))


def _div(a: Any, b: Any) -> Any:
    """a / b with NaN where b is 0 (a metric with no denominator is undefined, not 0 or inf)."""
    a = pd.Series(a, dtype="float64") if not isinstance(a, pd.Series) else a.astype("float64")
    b = pd.Series(b, dtype="float64") if not isinstance(b, pd.Series) else b.astype("float64")
    return a / b.where(b != 0)


def _walk_share(s: pd.DataFrame) -> pd.Series:
    # Table II: (DTLB load + store WALK_DURATION) / CPU_CLK_UNHALTED. Under
    # ooo this is the walker-busy share (walks overlap other work).
    return 100.0 * _div(s["walker.data_cycles"], s["core.cycles"])


def _walk_cost(s: pd.DataFrame) -> pd.Series:
    """The cycles walks cost the core, per run: under the interval model every
    walk cycle is a stall cycle (``walker.cycles``); under ooo, the cycles a
    walk is the oldest unfinished work (``core.walk_oldest_cycles``), the part
    of the walks nothing else hides. (``walker.cycles``: all walks; these
    workloads fetch no instructions, so all walks are data walks.)"""
    ooo = _model_column(s) == "ooo"
    if ooo.any() and "core.walk_oldest_cycles" not in s.columns:
        raise ValueError("ooo runs without core.walk_oldest_cycles")
    oldest = s["core.walk_oldest_cycles"] if "core.walk_oldest_cycles" in s.columns else s["walker.cycles"]
    return pd.Series(np.where(ooo, oldest, s["walker.cycles"]), index=s.index, dtype="float64")


def _cost_share(s: pd.DataFrame) -> pd.Series:
    """% of cycles walks cost (:func:`_walk_cost`): Figure 1's share. Equal to
    :func:`_walk_share` under the interval model."""
    return 100.0 * _div(_walk_cost(s), s["core.cycles"])


def _walks_pki(s: pd.DataFrame) -> pd.Series:
    # Table II: WALK_COMPLETED / (INST_RETIRED / 1000).
    return _div(1000.0 * s["walker.data_walks"], s["core.instructions"])


def _cycles_per_walk(s: pd.DataFrame) -> pd.Series:
    # Table II: WALK_DURATION / WALK_COMPLETED.
    return _div(s["walker.data_cycles"], s["walker.data_walks"])


def _frame(wls: Sequence[str], cols: Mapping[str, pd.Series]) -> pd.DataFrame:
    out = pd.DataFrame({k: v.reindex(wls) for k, v in cols.items()})
    out.index.name = "workload"
    return out


def _prefixed(m: str, main: str, col: str) -> str:
    return col if m == main else f"{m} {col}"


def fig1_walk_share(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 1: % of cycles in data page walks, 4 KiB and 2 MiB pages, for
    every timing model of ``df``.

    ``4K``/``2M``: the cycles walks cost (:func:`_walk_cost`): under ooo
    ``core.walk_oldest_cycles / core.cycles``, the share of cycles a walk is
    the oldest unfinished work; under interval ``walker.data_cycles /
    core.cycles``. ``4K busy``/``2M busy``: the paper's Table II formula,
    WALK_DURATION / cycles, i.e. ``walker.data_cycles / core.cycles`` (the
    walker-busy share; the same as the first under interval). Columns of the
    main model (:func:`models_of`) are bare, each other model's carry its
    name first (``interval 4K``)."""
    wls = _workloads(df)
    ms = models_of(df)
    cols: dict[str, pd.Series] = {}
    for m in ms:
        for page in PAGE_SIZES:
            cols[_prefixed(m, ms[0], page)] = _cost_share(_pick(df, page, model=m))
        for page in PAGE_SIZES:
            cols[_prefixed(m, ms[0], f"{page} busy")] = _walk_share(_pick(df, page, model=m))
    out = _frame(wls, cols)
    out.attrs["models"] = ms
    return out


def fig2_normalised_walk_cycles(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 2: data walk cycles with 2 MiB pages ÷ with 4 KiB pages."""
    wls = _workloads(df)
    a, b = _pick(df, "4K"), _pick(df, "2M")
    return _frame(
        wls,
        {
            "4K": pd.Series(1.0, index=a.index),
            "2M": _div(b["walker.data_cycles"], a["walker.data_cycles"].reindex(b.index)),
        },
    )


def _fig3_one(df: pd.DataFrame, model: str) -> dict[str, pd.Series]:
    a = _pick(df, "4K", model=model)
    b = _pick(df, "2M", model=model).reindex(a.index)
    c4, c2 = a["core.cycles"].astype(float), b["core.cycles"].astype(float)
    w4, w2 = _walk_cost(a), _walk_cost(b)
    measured = 100.0 * (_div(c4, c2) - 1.0)
    expected = 100.0 * (_div(c4, c4 - w4 + w2) - 1.0)
    expected_busy = 100.0 * (_div(c4, c4 - a["walker.cycles"] + b["walker.cycles"]) - 1.0)
    tlb_hits4 = a["core.translation_stall_cycles"] - w4
    tlb_hits2 = b["core.translation_stall_cycles"] - w2
    saved_walks = 100.0 * _div(w4 - w2, c4)
    saved_tlb_hits = 100.0 * _div(tlb_hits4 - tlb_hits2, c4)
    saved_data = 100.0 * _div(a["core.data_stall_cycles"] - b["core.data_stall_cycles"], c4)
    saved = 100.0 * _div(c4 - c2, c4)
    return {
        "measured": measured,
        "expected": expected,
        "gap": measured - expected,
        "expected_busy": expected_busy,
        "gap_busy": measured - expected_busy,
        "saved_walks": saved_walks,
        "saved_tlb_hits": saved_tlb_hits,
        "saved_data": saved_data,
        "saved_other": saved - saved_walks - saved_tlb_hits - saved_data,
    }


def fig3_speedup(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 3 and Equation 1: speedup from 4 KiB to 2 MiB pages, measured
    (simulated) and expected, in %, for every timing model of ``df`` (the main
    model's columns bare, each other model's prefixed with its name, as
    :func:`fig1_walk_share`).

    ``expected cycles(2M) = cycles(4K) − walk cost(4K) + walk cost(2M)``;
    speedup = cycles(4K) / cycles(2M) − 1, expected = cycles(4K) / expected
    cycles(2M) − 1; ``gap`` is measured − expected in points. The walk cost is
    :func:`_walk_cost`, the same cycles Figure 1 shows: under the interval
    model every walk cycle (``walker.cycles``, as :func:`tessera.compare`);
    under ooo the cycles a walk is the oldest unfinished work
    (``core.walk_oldest_cycles``), since only those are in the cycles Equation
    1 subtracts from. ``expected_busy``/``gap_busy`` use the paper's literal
    counter, WALK_DURATION (``walker.cycles``, what ``tessera compare``
    reports), under every model: under ooo it takes walk time that overlapped
    other work off the cycles too. (These workloads fetch no instructions, so
    all walks are data walks. The paper also reports the IPC gain; here both
    runs retire the same instructions, so it equals the measured speedup.)

    Where the simulated saving comes from, as % of the 4 KiB run's cycles:
    ``saved_walks`` (the walk cost, what Eq. 1 sees), ``saved_tlb_hits``
    (the rest of the translation stalls: fewer 7-cycle L2 TLB probes),
    ``saved_data`` (data stalls: page-table lines no longer competing with
    data in the caches, and a different physical layout) and
    ``saved_other``, the rest. The interval model's cycles are base + data
    stalls + translation stalls exactly, so its ``saved_other`` is 0; under
    ooo the stalls are head time (docs/timing.md) and ``saved_other`` is the
    change in the cycles no stalled op holds the head."""
    wls = _workloads(df)
    ms = models_of(df)
    cols: dict[str, pd.Series] = {}
    for m in ms:
        for k, v in _fig3_one(df, m).items():
            cols[_prefixed(m, ms[0], k)] = v
    out = _frame(wls, cols)
    out.attrs["models"] = ms
    return out


def fig4_walks_pki(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 4: data page walks per 1000 instructions, 4 KiB and 2 MiB pages."""
    wls = _workloads(df)
    return _frame(wls, {"4K": _walks_pki(_pick(df, "4K")), "2M": _walks_pki(_pick(df, "2M"))})


def fig5_cycles_per_walk(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 5: average cycles per data page walk, 4 KiB and 2 MiB pages."""
    wls = _workloads(df)
    return _frame(wls, {"4K": _cycles_per_walk(_pick(df, "4K")), "2M": _cycles_per_walk(_pick(df, "2M"))})


def table4_ratios(df: pd.DataFrame) -> pd.DataFrame:
    """Table IV: 2 MiB ÷ 4 KiB for walks per kilo-instruction, cycles per
    walk and cycles spent in walks (lower is better)."""
    w = fig4_walks_pki(df)
    c = fig5_cycles_per_walk(df)
    t = fig2_normalised_walk_cycles(df)
    return pd.DataFrame(
        {"walks_pki": _div(w["2M"], w["4K"]), "cycles_per_walk": _div(c["2M"], c["4K"]), "walk_cycles": t["2M"]}
    )


def fig7_cache_miss_reduction(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 7: % fewer cache misses with 2 MiB pages than with 4 KiB.

    As Table II counts them: L1 = every L1D demand miss (L1D.REPLACEMENT
    counts walk fills too); L2 and LLC = data (load/store) misses only, as the
    MEM_LOAD_UOPS counters count retired loads."""
    wls = _workloads(df)
    a, b = _pick(df, "4K"), _pick(df, "2M")
    cols = {}
    for level, counter in (("l1d", "cache.l1d.misses"), ("l2", "cache.l2.data_misses"), ("llc", "cache.llc.data_misses")):
        cols[level] = 100.0 * (1.0 - _div(b[counter], a[counter].reindex(b.index)))
    return _frame(wls, cols)


def fig9_walks_vs_llc(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 9: with 2 MiB pages, data walks and LLC data misses per 1000
    instructions (LLC misses as Table II: loads that missed the LLC; walk
    references that miss are not counted)."""
    wls = _workloads(df)
    b = _pick(df, "2M")
    walks = _walks_pki(b)
    llc = _div(1000.0 * b["cache.llc.data_misses"], b["core.instructions"])
    larger = pd.Series(np.where(walks > llc, "walks", "llc"), index=b.index)
    return _frame(wls, {"walks_pki": walks, "llc_mpki": llc, "larger": larger})


def fig10_bounds(df: pd.DataFrame) -> pd.DataFrame:
    """Figure 10: % of cycles in walks as simulated, and Eq. 2-5's bounds:
    every walk one reference hitting the LLC / L2 / L1 (43 / 20 / 12 cycles),
    or every TLB miss served by a perfect 7-cycle third-level TLB. The
    constants are read from each run's resolved ``metrics`` config.
    Columns ``<page> <bound>`` for page 4K and 2M; main timing model only.
    ``measured`` is the walker-busy share (Table II's WALK_DURATION /
    cycles), since the bounds are walk durations too."""
    wls = _workloads(df)
    cols: dict[str, pd.Series] = {}
    for page in PAGE_SIZES:
        s = _pick(df, page)
        cols[f"{page} measured"] = _walk_share(s)
        for name, key in (
            ("perfect_mmu_llc", "perfect_mmu_llc_cycles"),
            ("perfect_mmu_l2", "perfect_mmu_l2_cycles"),
            ("perfect_mmu_l1", "perfect_mmu_l1_cycles"),
            ("perfect_tlb", "perfect_tlb_cycles"),
        ):
            cost = s[f"config.metrics.{key}"].astype(float)
            cols[f"{page} {name}"] = 100.0 * _div(s["walker.data_walks"] * cost, s["core.cycles"])
    return _frame(wls, cols)


def table5_prefetch(df: pd.DataFrame) -> pd.DataFrame:
    """Table V: with 2 MiB pages, walks, cycles per walk and walk cycles with
    the L1 prefetchers on (``l1 *``) and all prefetchers on (``all *``),
    normalised to all prefetchers off."""
    wls = _workloads(df)
    base = _pick(df, "2M", "none")
    cols: dict[str, pd.Series] = {}
    for label in ("l1", "all"):
        s = _pick(df, "2M", label).reindex(base.index)
        cols[f"{label} walks"] = _div(s["walker.data_walks"], base["walker.data_walks"])
        cols[f"{label} cycles_per_walk"] = _div(_cycles_per_walk(s), _cycles_per_walk(base))
        cols[f"{label} walk_cycles"] = _div(s["walker.data_cycles"], base["walker.data_cycles"])
    return _frame(wls, cols)


def models_table(df: pd.DataFrame) -> pd.DataFrame:
    """The timing models side by side, one row per (workload, model): Figure
    3's speedups and gaps and Figure 1's shares (walk cost and walker busy),
    in %."""
    f1, f3 = fig1_walk_share(df), fig3_speedup(df)
    ms = models_of(df)
    parts = []
    for m in ms:
        def col(t: pd.DataFrame, c: str) -> pd.Series:
            return t[_prefixed(m, ms[0], c)]

        part = pd.DataFrame(
            {
                "measured": col(f3, "measured"),
                "expected": col(f3, "expected"),
                "gap": col(f3, "gap"),
                "expected_busy": col(f3, "expected_busy"),
                "gap_busy": col(f3, "gap_busy"),
                "share_4K": col(f1, "4K"),
                "share_2M": col(f1, "2M"),
                "busy_4K": col(f1, "4K busy"),
                "busy_2M": col(f1, "2M busy"),
            }
        )
        part.insert(0, "model", m)
        parts.append(part.reset_index())
    out = pd.concat(parts, ignore_index=True)
    order = {w: i for i, w in enumerate(_workloads(df))}
    out["_w"] = out["workload"].map(order)
    out["_m"] = out["model"].map(ms.index)
    out = out.sort_values(["_w", "_m"], kind="stable").drop(columns=["_w", "_m"])
    return out.set_index(["workload", "model"])


def table3_coverage(df: pd.DataFrame) -> pd.DataFrame:
    """Table III's analog plus what the paper reports for cold misses (§IV-A):
    memory touched (MiB, from the 4 KiB run's page tables at the end, warm-up
    included), % of it backed by 2 MiB pages under THP, and % of the measured
    data walks that were first touches (cold) with 4 KiB and 2 MiB pages."""
    wls = _workloads(df)
    a, b = _pick(df, "4K"), _pick(df, "2M")
    touched = a["pagetable.mappings_4k"] * 4096 + a["pagetable.mappings_2m"] * (2 << 20)
    large = b["pagetable.mappings_2m"].astype(float) * (2 << 20)
    small = b["pagetable.mappings_4k"].astype(float) * 4096
    return _frame(
        wls,
        {
            "touched_mib": touched / float(1 << 20),
            "thp_coverage": 100.0 * _div(large, large + small),
            "cold_4K": 100.0 * _div(a["os.faults"], a["walker.data_walks"]),
            "cold_2M": 100.0 * _div(b["os.faults"], b["walker.data_walks"]),
        },
    )


# ------------------------------------------------------------------ the report


def tables(df: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every table of the report, by key, from the labelled sweep."""
    return {
        "table3": table3_coverage(df),
        "fig1": fig1_walk_share(df),
        "fig2": fig2_normalised_walk_cycles(df),
        "fig3": fig3_speedup(df),
        "fig4": fig4_walks_pki(df),
        "fig5": fig5_cycles_per_walk(df),
        "table4": table4_ratios(df),
        "fig7": fig7_cache_miss_reduction(df),
        "fig9": fig9_walks_vs_llc(df),
        "fig10": fig10_bounds(df),
        "table5": table5_prefetch(df),
        "models": models_table(df),
    }


def check_complete(df: pd.DataFrame, spec: Mapping[str, Any]) -> None:
    """Every workload of ``spec`` must have its four runs (4K; 2M × none/l1/all)
    under the main timing model and its 4K and 2M runs under each other one."""
    models = list(spec["axes"].get("timing.kind", ["interval"]))
    wls = spec["axes"]["workload"]
    want = {(w, "4K", "none", m) for w in wls for m in models}
    want |= {(w, "2M", "none", m) for w in wls for m in models}
    want |= {(w, "2M", pf, models[0]) for w in wls for pf in PREFETCH}
    have = set(zip(df["workload"], df["page"], df["prefetch"], df["model"]))
    missing = sorted(want - have)
    if missing:
        raise ValueError(f"the sweep is missing runs (workload, page, prefetch, model): {missing}")


def _with_dependencies(df: pd.DataFrame, store: str) -> pd.DataFrame:
    """``df`` with each ooo run's ``timing_dependencies`` (where its load
    dependencies came from: the stream, or the assumed fraction), read from
    the stored result when the sweep's rows do not carry it."""
    ooo = df["model"] == "ooo"
    if not ooo.any() or ("timing_dependencies" in df.columns and df.loc[ooo, "timing_dependencies"].notna().all()):
        return df
    from tessera import results

    out = df.copy()
    if "timing_dependencies" not in out.columns:
        out["timing_dependencies"] = None
    out["timing_dependencies"] = out["timing_dependencies"].astype(object)
    for i in out.index[ooo]:
        out.at[i, "timing_dependencies"] = getattr(results.get(store, out.at[i, "run_id"]), "timing_dependencies", None)
    return out


@dataclasses.dataclass
class Reproduction:
    """What :func:`reproduce` made: the report's files, the labelled runs, the
    tables, and how long it took (seconds)."""

    out: Path
    report_md: Path
    report_html: Path
    figures: list[Path]
    runs: pd.DataFrame
    tables: dict[str, pd.DataFrame]
    timing: dict[str, float]


def _commit() -> Optional[str]:
    """The git commit of the Tessera checkout this package runs from, or, for
    an installed package, of the Tessera checkout the command runs in; None
    when neither is one (a git repository that is not Tessera's, such as one
    holding site-packages, does not count)."""
    for where in (Path(__file__).resolve().parent, Path.cwd()):
        try:
            r = subprocess.run(["git", "-C", str(where), "rev-parse", "--show-toplevel", "--short", "HEAD"],
                               capture_output=True, text=True, timeout=5, check=False)
        except (OSError, subprocess.SubprocessError):
            continue
        lines = r.stdout.split()
        if r.returncode == 0 and len(lines) == 2 and (Path(lines[0]) / "crates" / "tessera-core").is_dir():
            return lines[1]
    return None


def sweep_toml(spec: Mapping[str, Any], header: str = "") -> str:
    """The sweep spec as TOML text (the contract's file format)."""
    from tessera.config import dumps_toml

    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    return ("\n".join(lines) + "\n" if lines else "") + dumps_toml(spec)


def reproduce(
    out: Any,
    *,
    scale: str = "full",
    store: Optional[str] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: bool = False,
    command: Optional[str] = None,
    warmup: Optional[str] = None,
    models: Sequence[str] = MODELS,
) -> Reproduction:
    """Run the study's sweep at ``scale`` and write the report into ``out``:
    ``report.md``, ``report.html``, ``figures/``, ``data/``, ``sweep.toml``.
    Results go to ``store`` (default ``<out>/store.sqlite``); runs already
    there are reused unless ``force``. ``warmup`` replaces the scale's
    per-workload warm-up with one for all (``"0"``: none). ``models``: the
    timing models (``timing.kind``), the main one first (see
    :func:`sweep_spec`)."""
    from tessera import __version__
    from tessera.report import mmu_figures, mmu_report
    from tessera.report.render import to_html, to_markdown
    from tessera.result import write_atomic

    _check_scale(scale)
    t_start = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    store = str(store) if store is not None else str(out / "store.sqlite")
    spec = sweep_spec(scale, warmup, models)
    if command is None:
        command = f"python -c 'import tessera; tessera.reproduce(\"{STUDY}\", out=\"{out}\", scale=\"{scale}\")'"
    toml_text = sweep_toml(spec, f"Sweep of the scale-out MMU reproduction ({scale} scale), written by:\n  {command}")
    write_atomic(out / "sweep.toml", toml_text)

    t0 = time.perf_counter()
    raw = run_sweep(spec, store=store, executor=executor, jobs=jobs, force=force, progress=progress)
    sweep_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    df = _with_dependencies(label_runs(raw), store)
    check_complete(df, spec)
    tabs = tables(df)

    data = out / "data"
    data.mkdir(exist_ok=True)
    write_atomic(data / "runs.csv", df.to_csv(index=False))
    for key, t in tabs.items():
        write_atomic(data / f"{key}.csv", t.to_csv())
    figures: list[Path] = []
    for draw, key in mmu_figures.FIGURES.values():
        figures += draw(tabs[key], out / "figures")

    report = raw.attrs.get("sweep", {})
    timing = {
        "runs": float(len(df)),
        "computed": float(report.get("computed", float("nan"))),
        "already_stored": float(report.get("already_stored", float("nan"))),
        "workers": float(report.get("workers", float("nan"))),
        "sweep_s": sweep_s,
        "sum_wall_s": float(df["wall_s"].sum()),
        "report_s": time.perf_counter() - t1,
    }
    ctx = {
        "scale": scale,
        "spec": spec,
        "command": command,
        "store": store,
        "executor": executor,
        "jobs": jobs,
        "version": __version__,
        "commit": _commit(),
        "sweep_toml": toml_text,
        "timing": timing,
        "model_statement": mmu_report.model_statement(df),
    }
    blocks = mmu_report.build(df, tabs, ctx)
    md, html = out / "report.md", out / "report.html"
    write_atomic(md, to_markdown(blocks))
    write_atomic(html, to_html(blocks, "Reproduction: MMU under scale-out workloads"))
    timing["total_s"] = time.perf_counter() - t_start
    return Reproduction(out, md, html, figures, df, tabs, timing)
