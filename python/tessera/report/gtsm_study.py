"""Reproduce GTSM's evaluation on Tessera: the sweeps and the analysis.

The paper ("Supporting Superpages in Non-Contiguous Physical Memory", Du,
Zhou, Childers, Mossé, Melhem, HPCA 2015, DOI 10.1109/HPCA.2015.7056035;
its numbers are in :mod:`tessera.report.paper_gtsm`) maps superpages over
memory slices that hold retired pages through 16-byte GT-PDEs, and measures
on PTLsim (Table 4) the PTE references by serving level (Fig. 11), the TLB
miss penalty (Fig. 12) and IPC (Fig. 13) of 4 KB pages, GT-PDE-1/2/4MB and
ideal 2 MB pages on nine workloads, then GUPS's table size (Fig. 15), the
GT-PDE translation latency (Fig. 16), the PDE-cache size (Fig. 17) and L2
TLB coalescing (Fig. 18).

Here each part is a sweep through :func:`tessera.sweep` on the
``gtsm_ptlsim`` preset (results kept in one store, reused on a rerun):

- ``main``: every workload × every design of :data:`DESIGNS` (4 KiB, the
  five GT-PDE modes, ideal 2 MiB THP), no retired pages (Figs. 11–13);
- ``retired``: 4 KiB, THP and GT-PDE-4MB (and more modes where the scale
  allows) at each retired fraction of :data:`FRACTIONS` (THP collapsing
  while GTSM keeps its superpages);
- ``size``: GUPS at growing tables with 4 KiB, GT-PDE-4MB, GT-PDE-1MB and
  THP (Fig. 15);
- ``decode``, ``pde``: GT-PDE-4MB with 4–6 decode cycles (Fig. 16) and
  larger PDE caches (Fig. 17);
- ``coalescing``: 4 KiB pages with an 8× and a 32× coalescing L2 TLB (Fig. 18);
- ``beyond``: clustered against uniform retired pages at one fraction;
- ``versus`` (beyond the paper): GTSM against THP with and without direct
  compaction and against Mosaic Pages, on the same retired-page maps over
  memory pre-fragmented by movable pages (:data:`RIVALS`).

Every ``fig*``/``retired_*``/``beyond_*`` function turns the sweeps'
DataFrames into one table, so they can be checked on hand-made rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np
import pandas as pd

from tessera.report import paper_gtsm as paper
from tessera.report.intervals import range_agreement, t_interval, within

__all__ = [
    "STUDY",
    "SCALES",
    "WORKLOADS",
    "DESIGNS",
    "DESIGN_LABEL",
    "GT_MODES",
    "FRACTIONS",
    "params_for",
    "warmup_for",
    "seeds_for",
    "sweep_name",
    "main_spec",
    "retired_spec",
    "size_spec",
    "decode_spec",
    "pde_spec",
    "coalescing_spec",
    "beyond_spec",
    "versus_spec",
    "RIVALS",
    "RIVAL_LABEL",
    "design_of",
    "label_runs",
    "fig11_pte_refs",
    "fig12_penalty",
    "fig13_ipc",
    "fig13_summary",
    "fig13_claims",
    "ideal_gap",
    "fig15_size",
    "fig16_decode",
    "fig17_pde",
    "fig18_coalescing",
    "retired_table",
    "beyond_table",
    "gt_entry_table",
    "versus_table",
    "versus_summary",
    "versus_pairs",
]

STUDY = "gtsm"
#: ``quick`` runs in under five minutes on 2 cores; ``tiny`` only checks
#: the pipeline (tests), its numbers mean nothing.
SCALES = ("full", "quick", "tiny")
#: The paper's machine (Table 4).
MACHINE = "gtsm_ptlsim"
#: The preset has 128 GiB; a smaller memory builds and retires pages faster
#: and holds every footprint here (the report states it).
CAPACITY = "16GiB"
MIB = 1 << 20

#: Tessera's workloads in the paper's order (Table 5).
WORKLOADS = tuple(paper.WORKLOAD_NAMES)

#: The GT-PDE modes (GTPTCR modes of the paper's Table 3) and the virtual
#: bytes one PD entry of each maps (a P-GT-PDE entry maps two superpages
#: of half the mode's size).
GT_MODES = ("gt_pde_4m", "gt_pde_2m", "gt_pde_1m", "p_gt_pde_2m", "p_gt_pde_4m")
ENTRY_BYTES = {"gt_pde_4m": 4 * MIB, "gt_pde_2m": 2 * MIB, "gt_pde_1m": 1 * MIB,
               "p_gt_pde_2m": 2 * MIB, "p_gt_pde_4m": 4 * MIB}
#: GT-PDE translation cycles beyond a PDE's reference (§3.5: +3).
DECODE = 3
#: A slice hosts a GT-PDE with at least this many usable B-blocks of 64 (§3.8, "more than half").
MIN_BLOCKS = 33

_X86 = {"kind": "x86_radix"}


def _gt(mode: str, decode: int = DECODE) -> dict[str, Any]:
    return {"pagetable.format": {"kind": "gt_pde", "mode": mode, "decode_cycles": decode},
            "physmem.page_size": {"kind": "gtsm", "min_blocks": MIN_BLOCKS}}


#: Design → overrides on the preset. Each differs from ``4k`` in the page
#: table and the page-size policy only.
DESIGNS: dict[str, dict[str, Any]] = {
    "4k": {"pagetable.format": _X86, "physmem.page_size": {"kind": "base_only"}},
    **{m: _gt(m) for m in GT_MODES},
    "thp": {"pagetable.format": _X86, "physmem.page_size": {"kind": "thp"}},
}
DESIGN_LABEL = {"4k": "4 KiB", "gt_pde_4m": "GT-PDE-4MB", "gt_pde_2m": "GT-PDE-2MB", "gt_pde_1m": "GT-PDE-1MB",
                "p_gt_pde_2m": "P-GT-PDE-2MB", "p_gt_pde_4m": "P-GT-PDE-4MB", "thp": "ideal 2 MiB (THP)"}
#: With retired pages THP is no longer the ideal: it is named for what it is.
RETIRED_LABEL = {**DESIGN_LABEL, "thp": "THP (2 MiB)"}

#: Retired fractions (0 is the main sweep's runs).
FRACTIONS = (0.0, 0.005, 0.01, 0.02)

# Workload parameters per scale. The paper touched 0.7–4 GB in 2 B
# instructions (Table 5); these are what fits the time of each scale.
_PARAMS: dict[str, dict[str, dict[str, str]]] = {
    "full": {
        "gups": {"table": "8GiB", "updates": "2M"},
        "canneal": {"elements": "2500k", "swaps": "20000", "steps": "6"},
        "dict": {"keys": "16M", "ops": "3M"},
        "bfs": {"scale": "21", "roots": "1"},
        "setcover": {"scale": "19"},
        "mst": {"scale": "19"},
        "spmv": {"scale": "19", "iterations": "2"},
        "matching": {"scale": "21"},
        "mis": {"scale": "22"},
    },
    "quick": {
        "gups": {"table": "2GiB", "updates": "200k"},
        "canneal": {"elements": "600k", "swaps": "5000", "steps": "4"},
        "dict": {"keys": "4M", "ops": "400k"},
        "bfs": {"scale": "18", "roots": "1"},
        "setcover": {"scale": "17"},
        "mst": {"scale": "16"},
        "spmv": {"scale": "17", "iterations": "1"},
        "matching": {"scale": "18"},
        "mis": {"scale": "19"},
    },
    "tiny": {
        "gups": {"table": "64MiB", "updates": "5k"},
        "canneal": {"elements": "20k", "swaps": "500", "steps": "2"},
        "dict": {"keys": "64k", "ops": "10k"},
        "bfs": {"scale": "12", "roots": "1"},
        "setcover": {"scale": "11"},
        "mst": {"scale": "11"},
        "spmv": {"scale": "11", "iterations": "1"},
        "matching": {"scale": "12"},
        "mis": {"scale": "12"},
    },
}

# Warm-up per workload and scale: about 20 % of the 4 KiB run's
# instructions (measured once, 2026-11-26, and rounded), as an instruction count so it
# does not depend on the design. The paper skipped initialisation and
# simulated 2 B instructions with page tables pre-allocated; the warm-up
# fills TLBs, caches and page tables and takes first touches before counting.
WARMUP_SHARE = 0.2
_WARMUP: dict[str, dict[str, str]] = {
    "full": {
        "gups": "4M instructions",
        "canneal": "4.6M instructions",
        "dict": "16M instructions",
        "bfs": "35M instructions",
        "setcover": "47M instructions",
        "mst": "36M instructions",
        "spmv": "25M instructions",
        "matching": "21M instructions",
        "mis": "12M instructions",
    },
    "quick": {
        "gups": "400k instructions",
        "canneal": "770k instructions",
        "dict": "2.1M instructions",
        "bfs": "4.3M instructions",
        "setcover": "10M instructions",
        "mst": "4.2M instructions",
        "spmv": "3M instructions",
        "matching": "2.6M instructions",
        "mis": "1.6M instructions",
    },
    "tiny": {
        "gups": "10k instructions",
        "canneal": "38k instructions",
        "dict": "54k instructions",
        "bfs": "58k instructions",
        "setcover": "100k instructions",
        "mst": "110k instructions",
        "spmv": "38k instructions",
        "matching": "36k instructions",
        "mis": "14k instructions",
    },
}

#: Seeds per point: a seed fixes the workload's data and the retired-page
#: map for every design, so designs are compared seed by seed (paired).
_SEEDS = {"full": 3, "quick": 2, "tiny": 2}

#: Fig. 15's GUPS tables per scale (the paper: 64 MB to 64 GB) and updates.
_SIZES = {"full": ("64MiB", "256MiB", "1GiB", "4GiB", "8GiB"), "quick": ("64MiB", "512MiB", "2GiB"),
          "tiny": ("64MiB", "128MiB")}
_SIZE_UPDATES = {"full": "1M", "quick": "150k", "tiny": "5k"}
#: GUPS runs 10 instructions per update: 20 % of them warm up, at every size.
_SIZE_WARMUP = {"full": "2M instructions", "quick": "300k instructions", "tiny": "10k instructions"}
_SIZE_DESIGNS = ("4k", "gt_pde_4m", "gt_pde_1m", "thp")

#: Designs of the retired sweep per scale (4 KiB is each fraction's baseline).
_RETIRED_DESIGNS = {"full": ("4k", "thp", "gt_pde_4m", "gt_pde_2m", "gt_pde_1m"),
                    "quick": ("4k", "thp", "gt_pde_4m"), "tiny": ("4k", "thp", "gt_pde_4m")}
_RETIRED_FRACTIONS = {"full": FRACTIONS[1:], "quick": (0.005, 0.02), "tiny": (0.02,)}
#: Fig. 16's decode cycles and Fig. 17's PDE-cache sizes beyond the default per scale.
_DECODE = {"full": (4, 5, 6), "quick": (6,), "tiny": (6,)}
_PDE = {"full": (64, 128, 256), "quick": (128,), "tiny": (128,)}
#: Fig. 18's coalescing groups (8× and 32×), per scale.
_GROUPS = {"full": (8, 32), "quick": (8, 32), "tiny": (32,)}
#: Beyond the paper: clustered faults (16 frames a fault: a column fault
#: over 16 rows, docs/gtsm.md) against uniform at one fraction.
BEYOND_FRACTION = 0.005
BEYOND_CLUSTER = {"kind": "clustered", "fraction": BEYOND_FRACTION, "frames_per_fault": 16, "stride": 1}
_BEYOND_DESIGNS = {"full": ("4k", "thp", "gt_pde_4m", "gt_pde_2m", "gt_pde_1m"), "quick": ("4k", "thp", "gt_pde_4m"),
                   "tiny": ("4k", "thp", "gt_pde_4m")}

#: Beyond the paper: a GT-aware L2 TLB (``gt_blocks``) for GT-PDE-4MB, one
#: coalesced entry per 128 KiB B-block (32 pages), in the coalescing part.
GT_ENTRY_GROUP = 32
GT_ENTRY = {"kind": "coalescing", "group": GT_ENTRY_GROUP, "gt_blocks": True}

# Beyond the paper: GTSM against its rivals on the same retired-page maps.
#: Half the 2 MiB blocks broken by one movable pinned frame each before the
#: run: an OS that has run for a while (compaction can move these frames).
VERSUS_FRAGMENTATION = 0.5
_VERSUS_FRACTIONS = {"full": (0.0, 0.005, 0.01), "quick": (0.0, 0.005), "tiny": (0.0, 0.005)}
#: Direct compaction with the model's defaults, written out.
COMPACTION = {"movable_pins": True, "migrate_cycles": 8000, "max_defer_shift": 6}
#: Mosaic Pages as the Mosaic reproduction defines it (its ``mosaic`` design:
#: the Iceberg allocator, 4 KiB pages, mosaic TLB organisation), with the
#: table-of-contents page table and arity 4 (the paper's Mosaic-4) for the
#: format and the TLBs alike.
MOSAIC_ARITY = 4
#: The Iceberg pool: every bucket that fits above 1/64 of the 16 GiB (the
#: allocator's default sizing, written out): 64,512 buckets; page-table
#: nodes come from the 256 MiB below it.
MOSAIC_POOL = "16128MiB"
#: The preset's data-side TLB structures that hold 4 KiB pages (the 2 MiB
#: L1 DTLB holds no 4 KiB page, so a mosaic organisation there is a config
#: error; it keeps ``set_assoc`` and, as with 4 KiB pages, never holds anything).
MOSAIC_TLBS = ("l1_dtlb_4k", "l2_tlb")


def _mosaic() -> dict[str, Any]:
    from tessera.report import mosaic_pages as mp

    d = mp.DESIGNS["mosaic"]
    org = {**d["mmu.tlb.dtlb.organisation"], "arity": MOSAIC_ARITY}
    return {"pagetable.format": {"kind": "mosaic_toc", "arity": MOSAIC_ARITY},
            "physmem.page_size": {"kind": d["physmem.page_size"]},
            "physmem.allocator": {"kind": d["physmem.allocator"], "pool": MOSAIC_POOL},
            **{f"mmu.tlb.{t}.organisation": dict(org) for t in MOSAIC_TLBS}}


#: The designs of the ``versus`` part: overrides on the preset. THP and THP
#: with compaction differ in ``os.compaction`` only; Mosaic Pages differs
#: from 4 KiB in the allocator, the page-table format and the organisation
#: of the two data-side TLBs that hold 4 KiB pages.
RIVALS: dict[str, dict[str, Any]] = {
    "4k": dict(DESIGNS["4k"]),
    "thp": dict(DESIGNS["thp"]),
    "thp_compact": {**DESIGNS["thp"], "os.compaction": dict(COMPACTION)},
    "gt_pde_4m": dict(DESIGNS["gt_pde_4m"]),
    "mosaic": _mosaic(),
}
RIVAL_LABEL = {"4k": "4 KiB", "thp": "THP (2 MiB)", "thp_compact": "THP + compaction", "gt_pde_4m": "GT-PDE-4MB",
               "mosaic": f"Mosaic Pages (Mosaic-{MOSAIC_ARITY})"}


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (allowed: {', '.join(SCALES)})")


def params_for(scale: str) -> dict[str, dict[str, str]]:
    """``{workload: {param: value}}`` at one scale (a copy)."""
    _check_scale(scale)
    return {w: dict(p) for w, p in _PARAMS[scale].items()}


def warmup_for(scale: str) -> dict[str, str]:
    _check_scale(scale)
    return dict(_WARMUP[scale])


def seeds_for(scale: str) -> int:
    _check_scale(scale)
    return _SEEDS[scale]


def sweep_name(scale: str, part: str = "") -> str:
    _check_scale(scale)
    base = STUDY if scale == "full" else f"{STUDY}-{scale}"
    return f"{base}-{part}" if part else base


def _retired(fraction: float) -> dict[str, Any]:
    return {"kind": "uniform", "fraction": fraction} if fraction > 0 else {"kind": "none"}


def _listed(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Axes that list ``runs`` one by one: every key an axis, all zipped."""
    keys = list(runs[0])
    assert all(list(r) == keys for r in runs), "every listed run must set the same keys"
    axes: dict[str, Any] = {k: [r[k] for r in runs] for k in keys}
    if len(keys) > 1:
        axes["zip"] = [keys]
    return axes


def _spec(scale: str, part: str, runs: Sequence[Mapping[str, Any]], params: Optional[Mapping[str, Any]] = None,
          ) -> dict[str, Any]:
    return {"name": sweep_name(scale, part), "machine": MACHINE, "set": {"physmem.capacity": CAPACITY},
            "params": dict(params if params is not None else params_for(scale)), "axes": _listed(runs)}


def _run(w: str, seed: int, warm: Mapping[str, str], design: str, fraction: float = 0.0,
         **extra: Any) -> dict[str, Any]:
    return {"workload": w, "seed": seed, "warmup": warm[w], **DESIGNS[design],
            "physmem.retired": _retired(fraction), **extra}


def main_spec(scale: str) -> dict[str, Any]:
    """Figs. 11–13: every workload × design, no retired pages, each seed."""
    warm = warmup_for(scale)
    runs = [_run(w, s, warm, d) for w in WORKLOADS for s in range(seeds_for(scale)) for d in DESIGNS]
    return _spec(scale, "main", runs)


def retired_spec(scale: str) -> dict[str, Any]:
    """4 KiB, THP and GT-PDE modes at each retired fraction above 0 (uniform
    retired pages, the paper's model; the map is the seed's)."""
    warm = warmup_for(scale)
    runs = [_run(w, s, warm, d, f) for w in WORKLOADS for s in range(seeds_for(scale))
            for f in _RETIRED_FRACTIONS[scale] for d in _RETIRED_DESIGNS[scale]]
    return _spec(scale, "retired", runs)


def sizes_for(scale: str) -> tuple[str, ...]:
    _check_scale(scale)
    return _SIZES[scale]


def size_spec(scale: str) -> dict[str, Any]:
    """Fig. 15: GUPS at each table of the scale with 4 KiB, GT-PDE-4MB,
    GT-PDE-1MB and THP, the same updates at every size."""
    _check_scale(scale)
    runs = [{"workload": "gups", "seed": s, "warmup": _SIZE_WARMUP[scale], "param.table": t, **DESIGNS[d]}
            for t in _SIZES[scale] for s in range(seeds_for(scale)) for d in _SIZE_DESIGNS]
    return _spec(scale, "size", runs, {"gups": {"updates": _SIZE_UPDATES[scale]}})


def decode_spec(scale: str) -> dict[str, Any]:
    """Fig. 16: GT-PDE-4MB with more decode cycles (3 is the main sweep's)."""
    warm = warmup_for(scale)
    runs = [{"workload": w, "seed": s, "warmup": warm[w], **_gt("gt_pde_4m", c)}
            for w in WORKLOADS for s in range(seeds_for(scale)) for c in _DECODE[scale]]
    return _spec(scale, "decode", runs)


def pde_spec(scale: str) -> dict[str, Any]:
    """Fig. 17: GT-PDE-4MB with larger PDE caches (4 ways; 32 entries is the main sweep's)."""
    warm = warmup_for(scale)
    runs = [{"workload": w, "seed": s, "warmup": warm[w], **DESIGNS["gt_pde_4m"], "mmu.psc.pde.entries": n}
            for w in WORKLOADS for s in range(seeds_for(scale)) for n in _PDE[scale]]
    return _spec(scale, "pde", runs)


def coalescing_spec(scale: str) -> dict[str, Any]:
    """Fig. 18: 4 KiB pages with the 512-entry L2 TLB coalescing 8 or 32
    pages per entry, filled from the whole group at no extra cost (the
    paper's "no extra CPU cycles" assumption: an upper bound)."""
    warm = warmup_for(scale)
    runs = [{"workload": w, "seed": s, "warmup": warm[w], **DESIGNS["4k"],
             "mmu.tlb.l2_tlb.organisation": {"kind": "coalescing", "group": g, "fill_from": "group"}}
            for w in WORKLOADS for s in range(seeds_for(scale)) for g in _GROUPS[scale]]
    # Beyond the paper: GT-PDE-4MB with a GT-aware L2 TLB (one entry per B-block).
    runs += [{"workload": w, "seed": s, "warmup": warm[w], **DESIGNS["gt_pde_4m"],
              "mmu.tlb.l2_tlb.organisation": dict(GT_ENTRY)}
             for w in WORKLOADS for s in range(seeds_for(scale))]
    return _spec(scale, "coalescing", runs)


def beyond_spec(scale: str) -> dict[str, Any]:
    """Beyond the paper: 4 KiB, THP and GT-PDE-4MB over clustered retired
    pages at :data:`BEYOND_FRACTION` (the uniform runs at that fraction are
    the retired sweep's)."""
    warm = warmup_for(scale)
    runs = [{"workload": w, "seed": s, "warmup": warm[w], **DESIGNS[d], "physmem.retired": dict(BEYOND_CLUSTER)}
            for w in WORKLOADS for s in range(seeds_for(scale)) for d in _BEYOND_DESIGNS[scale]]
    return _spec(scale, "beyond", runs)


def versus_fractions(scale: str) -> tuple[float, ...]:
    _check_scale(scale)
    return _VERSUS_FRACTIONS[scale]


def versus_spec(scale: str) -> list[dict[str, Any]]:
    """Beyond the paper: every design of :data:`RIVALS` at each retired
    fraction of the scale (uniform, the seed's map: every design at one
    seed and fraction sees the same retired frames and the same pinned
    ones) over memory with :data:`VERSUS_FRAGMENTATION` of its 2 MiB blocks
    broken. Two sweeps, since a listed sweep sets the same keys in every
    run and a run without compaction has no ``os.compaction`` to set:
    ``versus`` (every design but THP + compaction; the others set the
    preset's allocator and TLB organisations, the resolved machine being
    the same) and ``versus-compaction``."""
    warm = warmup_for(scale)
    plain = {"physmem.allocator": {"kind": "buddy"},
             **{f"mmu.tlb.{t}.organisation": {"kind": "set_assoc"} for t in MOSAIC_TLBS}}
    keys = list(RIVALS["mosaic"])
    out = []
    for part, designs in (("versus", [d for d in RIVALS if d != "thp_compact"]), ("versus-compaction",
                                                                                   ["thp_compact"])):
        runs = []
        for w in WORKLOADS:
            for s in range(seeds_for(scale)):
                for f in _VERSUS_FRACTIONS[scale]:
                    for d in designs:
                        o = RIVALS[d]
                        r = {"workload": w, "seed": s, "warmup": warm[w], "physmem.retired": _retired(f),
                             "physmem.fragmentation": VERSUS_FRAGMENTATION}
                        r.update({k: o.get(k, plain.get(k)) for k in keys} if part == "versus" else o)
                        runs.append(r)
        out.append(_spec(scale, part, runs))
    return out


# ------------------------------------------------------------------ labels


def _get(row: Mapping[str, Any], key: str, default: Any = None) -> Any:
    v = row.get(key, default) if hasattr(row, "get") else default
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return default
    return v


def design_of(row: Mapping[str, Any]) -> str:
    """Which of :data:`DESIGNS` a run is, from its resolved config (an L2 TLB
    that coalesces makes ``coalesce<group>``)."""
    fmt = _get(row, "config.pagetable.format.kind", "x86_radix")
    org = _get(row, "config.mmu.tlb.l2_tlb.organisation.kind", "set_assoc")
    if fmt == "gt_pde":
        mode = str(row["config.pagetable.format.mode"])
        if org == "coalescing" and bool(_get(row, "config.mmu.tlb.l2_tlb.organisation.gt_blocks", False)):
            return f"{mode}_gt{int(row['config.mmu.tlb.l2_tlb.organisation.group'])}"
        return mode
    if fmt == "mosaic_toc":
        return "mosaic"
    if org == "coalescing":
        return f"coalesce{int(row['config.mmu.tlb.l2_tlb.organisation.group'])}"
    if _get(row, "config.physmem.page_size.kind", "base_only") == "thp":
        compact = any(str(k).startswith("config.os.compaction.") and _get(row, k) is not None
                      for k in (row.keys() if hasattr(row, "keys") else []))
        return "thp_compact" if compact else "thp"
    return "4k"


def label_runs(df: pd.DataFrame) -> pd.DataFrame:
    """The runs with ``design``, ``fraction`` (retired), ``retired_kind``,
    ``decode``, ``pde_entries`` and ``table_mib`` (GUPS's table) columns."""
    out = df.copy()
    out["design"] = [design_of(r) for _, r in out.iterrows()]
    kind = out.get("config.physmem.retired.kind", pd.Series(["none"] * len(out), index=out.index)).fillna("none")
    frac = out.get("config.physmem.retired.fraction", pd.Series([0.0] * len(out), index=out.index))
    out["retired_kind"] = kind
    out["fraction"] = np.where(kind == "none", 0.0, pd.to_numeric(frac, errors="coerce").fillna(0.0))
    dec = out.get("config.pagetable.format.decode_cycles", pd.Series([np.nan] * len(out), index=out.index))
    out["decode"] = pd.to_numeric(dec, errors="coerce")
    out["pde_entries"] = pd.to_numeric(out.get("config.mmu.psc.pde.entries", pd.Series([32] * len(out),
                                                                                        index=out.index)))
    if "axis.param.table" in out:
        out["table_mib"] = out["axis.param.table"].map(lambda v: _bytes(v) / MIB if isinstance(v, str) else np.nan)
    fr = out.get("config.physmem.fragmentation", pd.Series([0.0] * len(out), index=out.index))
    out["fragmentation"] = pd.to_numeric(fr, errors="coerce").fillna(0.0)
    if "seed" not in out:
        out["seed"] = 0
    return out


def _bytes(v: Any) -> int:
    from tessera.api import parse_size

    return int(v) if isinstance(v, (int, np.integer)) else parse_size(str(v))


# ------------------------------------------------------------------ helpers


def _order(wls: Sequence[str]) -> list[str]:
    rank = {w: i for i, w in enumerate(WORKLOADS)}
    return sorted(dict.fromkeys(wls), key=lambda w: rank.get(w, len(rank)))


def _f(r: Mapping[str, Any], key: str) -> float:
    v = r.get(key, np.nan) if hasattr(r, "get") else np.nan
    try:
        return float(v)
    except (TypeError, ValueError):
        return float("nan")


def _by_seed(df: pd.DataFrame, design: str, col: str) -> pd.Series:
    d = df[df["design"] == design]
    return d.groupby("seed")[col].mean()


def _paired_ratio(num: pd.Series, den: pd.Series) -> tuple[float, float, float]:
    """Mean of the per-seed ratios ``num / den`` − 1 in %, and its 95 %
    t-interval (low, high); NaN bounds with one seed."""
    seeds = sorted(set(num.index) & set(den.index))
    vals = [100.0 * (float(num[s]) / float(den[s]) - 1.0) for s in seeds if float(den[s]) > 0]
    mean, half = t_interval(vals)
    return mean, mean - half, mean + half


def _pki(g: pd.DataFrame, col: str) -> float:
    """``col`` per 1000 instructions, over the rows of ``g``."""
    ins = g["core.instructions"].astype(float).mean()
    return 1000.0 * g[col].astype(float).mean() / ins if ins else float("nan")


def _ipc(df: pd.DataFrame) -> pd.DataFrame:
    out = df.copy()  # consolidated: the sweeps' frames have hundreds of columns
    out["ipc"] = out["core.ipc"].astype(float)
    return out


# ------------------------------------------------------------------ Fig. 11


LEVELS = ("l1d", "l2", "llc", "dram")


def fig11_pte_refs(main: pd.DataFrame) -> pd.DataFrame:
    """Fig. 11: per workload and design (4 KiB and the GT-PDE modes), the
    share (%) of page-table references served by each level
    (``walker.refs_<level>``, mean over seeds), references per walk, and
    the paper's group (``slow``: more than 10 % from memory in its runs)."""
    rows = []
    for (w, d), g in main.groupby(["workload", "design"], sort=False):
        refs = {lv: g[f"walker.refs_{lv}"].astype(float).mean() for lv in LEVELS}
        total = sum(refs.values())
        rec: dict[str, Any] = {"workload": w, "design": d, "refs": total,
                               "refs_per_walk": total / g["walker.walks"].astype(float).mean()
                               if g["walker.walks"].astype(float).mean() else np.nan,
                               "paper_group": "slow" if w in paper.SLOW_GROUP else "fast"}
        for lv in LEVELS:
            rec[f"{lv}_pct"] = 100.0 * refs[lv] / total if total else np.nan
        rows.append(rec)
    out = pd.DataFrame(rows)
    return _sorted(out, ["workload", "design"])


def _sorted(out: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    rank = {w: i for i, w in enumerate(WORKLOADS)}
    drank = {d: i for i, d in enumerate(list(DESIGNS) + ["coalesce8", "coalesce32", f"gt_pde_4m_gt{GT_ENTRY_GROUP}",
                                                         "thp_compact", "mosaic"])}
    keys = []
    if "workload" in out:
        out["_w"] = out["workload"].map(lambda w: rank.get(w, len(rank)))
        keys.append("_w")
    if "design" in out:
        out["_d"] = out["design"].map(lambda d: drank.get(d, len(drank)))
        keys.append("_d")
    rest = [k for k in index if k not in ("workload", "design")]
    out = out.sort_values(keys + rest, kind="stable").drop(columns=[k for k in ("_w", "_d") if k in out])
    return out.set_index(index)


def _ranked(out: pd.DataFrame, index: list[str]) -> pd.DataFrame:
    """``out`` indexed by ``index``, sorted by those columns in that order
    (workloads and designs in the study's order)."""
    if not len(out):
        return pd.DataFrame(columns=index).set_index(index)
    rank = {w: i for i, w in enumerate(WORKLOADS)}
    drank = {d: i for i, d in enumerate(RIVALS)}
    keys = {"workload": out["workload"].map(lambda w: rank.get(w, len(rank))) if "workload" in out else None,
            "design": out["design"].map(lambda d: drank.get(d, len(drank))) if "design" in out else None}
    tmp = out.assign(**{f"_{k}": (keys[k] if keys.get(k) is not None else out[k]) for k in index})
    tmp = tmp.sort_values([f"_{k}" for k in index], kind="stable").drop(columns=[f"_{k}" for k in index])
    return tmp.set_index(index)


# ------------------------------------------------------------------ Fig. 12


def fig12_penalty(main: pd.DataFrame) -> pd.DataFrame:
    """Fig. 12: TLB miss penalty = walk cycles per walk (``walker.cycles`` /
    ``walker.walks``, per seed then mean ± 95 % t-interval) per workload
    and design, walks per 1000 instructions, and the drop against 4 KiB
    (cycles; per-seed differences, mean and interval)."""
    rows = []
    for w in _order(main["workload"]):
        m = main[main["workload"] == w]
        per = {d: (g.groupby("seed")["walker.cycles"].sum().astype(float)
                   / g.groupby("seed")["walker.walks"].sum().astype(float).replace(0, np.nan))
               for d, g in m.groupby("design", sort=False)}
        base = per.get("4k")
        for d, v in per.items():
            g = m[m["design"] == d]
            mean, half = t_interval(v.dropna())
            rec = {"workload": w, "design": d, "penalty": mean, "penalty_ci": half,
                   "walks_pki": _pki(g, "walker.walks")}
            if base is not None:
                seeds = sorted(set(base.index) & set(v.index))
                dm, dh = t_interval([float(base[s]) - float(v[s]) for s in seeds])
                rec.update(drop=dm, drop_lo=dm - dh, drop_hi=dm + dh)
            rows.append(rec)
    return _sorted(pd.DataFrame(rows), ["workload", "design"])


# ------------------------------------------------------------------ Fig. 13


def fig13_ipc(main: pd.DataFrame, base: str = "4k") -> pd.DataFrame:
    """Fig. 13: per workload and design, IPC (mean over seeds) and the gain
    over ``base`` (% above its IPC, per-seed ratios: mean and 95 %
    interval ``gain_lo``/``gain_hi``; ``noise`` where it contains 0), and
    the share of ideal 2 MiB's IPC (``of_ideal``, %, per-seed ratios)."""
    df = _ipc(main)
    rows = []
    for w in _order(df["workload"]):
        m = df[df["workload"] == w]
        b = _by_seed(m, base, "ipc")
        ideal = _by_seed(m, "thp", "ipc")
        for d in dict.fromkeys(m["design"]):
            v = _by_seed(m, d, "ipc")
            gain, lo, hi = _paired_ratio(v, b) if len(b) else (np.nan,) * 3
            of, olo, ohi = _paired_ratio(v, ideal) if len(ideal) else (np.nan,) * 3
            rows.append({"workload": w, "design": d, "ipc": float(v.mean()), "seeds": len(v),
                         "gain": gain, "gain_lo": lo, "gain_hi": hi, "noise": within(lo, hi),
                         "of_ideal": 100.0 + of, "of_ideal_lo": 100.0 + olo, "of_ideal_hi": 100.0 + ohi})
    return _sorted(pd.DataFrame(rows), ["workload", "design"])


def ideal_gap(main: pd.DataFrame, design: str = "gt_pde_4m") -> pd.DataFrame:
    """Per workload: the cycles ``design`` spends beyond ideal 2 MiB (% of
    ideal's), and the shares (%) of that difference in walk cycles
    (``walker.cycles``), the rest of translation (L2 TLB probes:
    ``core.translation_stall_cycles`` − ``walker.cycles``) and data stalls
    (``core.data_stall_cycles``); means over seeds. The base CPI's cycles
    are the same for both (same instructions)."""
    rows = []
    for w in _order(main["workload"]):
        m = main[main["workload"] == w]
        a, b = m[m["design"] == design], m[m["design"] == "thp"]
        if not len(a) or not len(b):
            continue

        def mean(g: pd.DataFrame, col: str) -> float:
            return float(g[col].astype(float).mean())

        diff = mean(a, "core.cycles") - mean(b, "core.cycles")
        walk = mean(a, "walker.cycles") - mean(b, "walker.cycles")
        tlb = (mean(a, "core.translation_stall_cycles") - mean(a, "walker.cycles")
               - mean(b, "core.translation_stall_cycles") + mean(b, "walker.cycles"))
        data = mean(a, "core.data_stall_cycles") - mean(b, "core.data_stall_cycles")
        share = (lambda x: 100.0 * x / diff) if diff else (lambda x: float("nan"))
        rows.append({"workload": w, "gap_pct": 100.0 * diff / mean(b, "core.cycles"), "walk_pct": share(walk),
                     "tlb_pct": share(tlb), "data_pct": share(data),
                     "l2_tlb_mpki": _pki(a, "mmu.l2_tlb.misses"), "l2_tlb_mpki_ideal": _pki(b, "mmu.l2_tlb.misses")})
    return pd.DataFrame(rows).set_index("workload") if rows else pd.DataFrame(
        columns=["gap_pct", "walk_pct", "tlb_pct", "data_pct", "l2_tlb_mpki", "l2_tlb_mpki_ideal"])


def _geomean(x: Sequence[float]) -> float:
    v = np.asarray([float(a) for a in x if not np.isnan(float(a)) and float(a) > 0])
    return float(np.exp(np.log(v).mean())) if len(v) else float("nan")


def fig13_summary(ipc: pd.DataFrame) -> pd.DataFrame:
    """Per design: the geometric mean of IPC ÷ 4 KiB's over the workloads
    (as a gain %), of IPC ÷ ideal's (%), and the gain's range over each of
    the paper's two groups."""
    rows = []
    for d in dict.fromkeys(ipc.index.get_level_values(1)):
        t = ipc.xs(d, level="design")
        rec: dict[str, Any] = {"design": d,
                               "gain_geomean": 100.0 * (_geomean(1 + t["gain"] / 100.0) - 1.0),
                               "of_ideal_geomean": 100.0 * _geomean(t["of_ideal"] / 100.0),
                               "of_ideal_mean": float(t["of_ideal"].mean())}
        for name, grp in (("slow", paper.SLOW_GROUP), ("fast", paper.FAST_GROUP)):
            g = t[t.index.isin(grp)]["gain"]
            rec[f"{name}_lo"] = float(g.min()) if len(g) else np.nan
            rec[f"{name}_hi"] = float(g.max()) if len(g) else np.nan
        rows.append(rec)
    return pd.DataFrame(rows).set_index("design")


#: How the paper's words are held to numbers: "achieves 96.8 %" agrees when
#: our mean is within ABOUT points of it; "alike"/"similar" when the designs'
#: gains differ by at most SIMILAR points on every workload; "virtually
#: nonexistent" and "less than 1 %"/"approximately 2 %" are read as stated.
ABOUT = 2.0
SIMILAR = 2.0


def fig13_claims(ipc: pd.DataFrame) -> pd.DataFrame:
    """Each statement of §5.2 (:data:`paper_gtsm.FIG13_CLAIMS`) with what our
    runs show and whether they agree (``yes``/``partly``/``no``, ``None``
    where what it speaks of was not run). Ranges are compared as ranges
    (:func:`intervals.range_agreement`) on GT-PDE-4MB's gains, workload by
    workload."""
    rows: list[tuple[str, str, Optional[str]]] = []
    designs = set(ipc.index.get_level_values(1))
    wls = _order(ipc.index.get_level_values(0))
    summary = fig13_summary(ipc)
    if {"gt_pde_4m", "thp"} <= designs:
        of = summary.loc["gt_pde_4m", "of_ideal_mean"]
        t = ipc.xs("gt_pde_4m", level="design")["of_ideal"]
        rows.append((paper.FIG13_CLAIMS[0], f"mean {of:.1f} % (per workload {t.min():.1f}–{t.max():.1f} %)",
                     "yes" if abs(of - paper.FIG13_GT4M_OF_IDEAL) <= ABOUT else "no"))
    else:
        rows.append((paper.FIG13_CLAIMS[0], "not run", None))
    g4 = ipc.xs("gt_pde_4m", level="design")["gain"] if "gt_pde_4m" in designs else pd.Series(dtype=float)
    groups = ((1, paper.SLOW_GROUP, paper.FIG13_SLOW_GAIN), (2, paper.FAST_GROUP, paper.FIG13_FAST_GAIN))
    for i, grp, (plo, phi) in groups:
        g = g4[g4.index.isin(grp)]
        if len(g):
            lo, hi = float(g.min()), float(g.max())
            rows.append((paper.FIG13_CLAIMS[i], f"GT-PDE-4MB +{lo:.1f} to +{hi:.1f} % ("
                         + ", ".join(f"{w} {g[w]:+.1f} %" for w in _order(g.index)) + ")",
                         range_agreement(lo, hi, plo, phi)))
        else:
            rows.append((paper.FIG13_CLAIMS[i], "not run", None))
    if len(g4) and "mis" in g4.index:
        low = g4.idxmin()
        rows.append((paper.FIG13_CLAIMS[3], f"lowest: {low} ({g4[low]:+.1f} %); MIS {g4['mis']:+.1f} %",
                     "yes" if low == "mis" else "no"))
    else:
        rows.append((paper.FIG13_CLAIMS[3], "MIS not run", None))
    for i, group in ((4, ("gt_pde_1m", "gt_pde_2m", "gt_pde_4m")), (5, ("gt_pde_2m", "p_gt_pde_2m", "gt_pde_4m",
                                                                        "p_gt_pde_4m"))):
        present = [d for d in group if d in designs]
        if len(present) < 2:
            rows.append((paper.FIG13_CLAIMS[i], "not run", None))
            continue
        if i == 4:
            pairs = [(a, b) for j, a in enumerate(present) for b in present[j + 1:]]
        else:
            pairs = [(a, b) for a, b in (("gt_pde_2m", "p_gt_pde_2m"), ("gt_pde_4m", "p_gt_pde_4m"))
                     if a in designs and b in designs]
        spread = []
        for w in wls:
            g = [abs(float(ipc.loc[(w, a), "gain"]) - float(ipc.loc[(w, b), "gain"])) for a, b in pairs
                 if (w, a) in ipc.index and (w, b) in ipc.index]
            if g:
                spread.append((w, max(g)))
        worst = max(spread, key=lambda x: x[1]) if spread else (None, float("nan"))
        ok = [s <= SIMILAR for _, s in spread]
        rows.append((paper.FIG13_CLAIMS[i],
                     f"gains differ by at most {worst[1]:.1f} points ({worst[0]}); within {SIMILAR:g} points on "
                     f"{sum(ok)} of {len(ok)} workloads", ("yes" if all(ok) else "no") if ok else None))
    return pd.DataFrame(rows, columns=["paper", "ours", "holds"])


# ------------------------------------------------------------------ Fig. 15


def fig15_size(size: pd.DataFrame) -> pd.DataFrame:
    """Fig. 15: GUPS per table size and design: IPC (mean over seeds),
    normalised to 4 KiB at the smallest table (the paper's normalisation),
    the gain over 4 KiB at the same size (per-seed ratios, mean and 95 %
    interval), and walks per 1000 instructions."""
    df = _ipc(size)
    smallest = df["table_mib"].min()
    ref = float(df[(df["design"] == "4k") & (df["table_mib"] == smallest)]["ipc"].mean())
    rows = []
    for t in sorted(df["table_mib"].unique()):
        m = df[df["table_mib"] == t]
        b = _by_seed(m, "4k", "ipc")
        for d in dict.fromkeys(m["design"]):
            v = _by_seed(m, d, "ipc")
            gain, lo, hi = _paired_ratio(v, b) if len(b) else (np.nan,) * 3
            g = m[m["design"] == d]
            rows.append({"table_mib": t, "design": d, "ipc": float(v.mean()), "norm": float(v.mean()) / ref,
                         "gain": gain, "gain_lo": lo, "gain_hi": hi,
                         "walks_pki": _pki(g, "walker.walks")})
    out = pd.DataFrame(rows)
    return _sorted(out, ["table_mib", "design"]).reorder_levels(["table_mib", "design"])


# ------------------------------------------------------------ Figs. 16–18


def _against(df: pd.DataFrame, base: pd.DataFrame, key: str) -> pd.DataFrame:
    """Per workload and ``key`` value: IPC against the ``base`` runs of the
    same workload and seed (% change, mean and 95 % interval)."""
    cols = ["workload", "seed", key, "core.ipc"]
    d = _ipc(pd.concat([df[cols].assign(_base=False), base[cols].assign(_base=True)], ignore_index=True))
    rows = []
    for w in _order(d["workload"]):
        m = d[d["workload"] == w]
        b = m[m["_base"]].groupby("seed")["ipc"].mean()
        # Only the varied runs' values: the baseline is the 0 every change is measured from.
        for k in sorted(m[~m["_base"]][key].dropna().unique(), key=lambda x: (str(type(x)), x)):
            v = m[(m[key] == k)].groupby("seed")["ipc"].mean()
            ch, lo, hi = _paired_ratio(v, b)
            rows.append({"workload": w, key: k, "ipc": float(v.mean()), "change": ch, "change_lo": lo,
                         "change_hi": hi, "noise": within(lo, hi)})
    return _sorted(pd.DataFrame(rows), ["workload", key])


def fig16_decode(decode: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """Fig. 16: GT-PDE-4MB's IPC with 3–6 decode cycles, as % change against 3."""
    return _against(decode, main[main["design"] == "gt_pde_4m"], "decode")


def fig17_pde(pde: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """Fig. 17: GT-PDE-4MB's IPC with larger PDE caches, as % change against 32 entries."""
    return _against(pde, main[main["design"] == "gt_pde_4m"], "pde_entries")


def fig18_coalescing(coal: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """Fig. 18: IPC gain over plain 4 KiB of 4 KiB with an 8×/32× coalescing
    L2 TLB and of GT-PDE-4MB (same workload and seed)."""
    cols = ["workload", "seed", "design", "core.ipc"]
    other = pd.concat([coal[cols], main[main["design"] == "gt_pde_4m"][cols]], ignore_index=True)
    out = _against(other, main[main["design"] == "4k"], "design")
    return out


def gt_entry_table(coal: pd.DataFrame, main: pd.DataFrame) -> pd.DataFrame:
    """Beyond the paper: GT-PDE-4MB with the GT-aware L2 TLB against plain
    GT-PDE-4MB (same workload and seed): IPC change (mean and 95 %
    interval), walks and L2 TLB misses per 1000 instructions of each, and
    the L2's coalesced hits per 1000 instructions."""
    name = f"gt_pde_4m_gt{GT_ENTRY_GROUP}"
    gt = coal[coal["design"] == name]
    plain = main[main["design"] == "gt_pde_4m"]
    if not len(gt) or not len(plain):
        return pd.DataFrame(columns=["workload", "design", "ipc", "change", "change_lo", "change_hi", "noise"]
                            ).set_index(["workload", "design"])
    out = _against(gt, plain, "design").reset_index()
    extra = []
    for w in out["workload"]:
        a, b = gt[gt["workload"] == w], plain[plain["workload"] == w]
        extra.append({"walks_pki": _pki(a, "walker.walks"), "walks_pki_plain": _pki(b, "walker.walks"),
                      "l2_mpki": _pki(a, "mmu.l2_tlb.misses"), "l2_mpki_plain": _pki(b, "mmu.l2_tlb.misses"),
                      "coalesced_hits_pki": _pki(a, "mmu.l2_tlb.coalesced_hits")
                      if "mmu.l2_tlb.coalesced_hits" in a else np.nan})
    out = pd.concat([out, pd.DataFrame(extra)], axis=1)
    return out.set_index(["workload", "design"])


# ------------------------------------------------------------------ retired


def superpage_bytes(r: Mapping[str, Any], design: str) -> float:
    """Bytes mapped by superpages at the end of one run: GT-PDE entries
    (``pagetable.mappings_gt``, a gauge) × the bytes one entry of the run's
    mode maps, or 2 MiB leaves. (The OS's ``os.gt_superpages`` and
    ``os.pages_*`` count only the measured phase, and the warm-up maps most
    of the footprint.)"""
    if design in ENTRY_BYTES:
        return _f(r, "pagetable.mappings_gt") * ENTRY_BYTES[design]
    v = _f(r, "pagetable.mappings_2m")
    return 0.0 if np.isnan(v) else v * 2 * MIB


def touched_bytes(r: Mapping[str, Any], design: str) -> float:
    """Bytes mapped at the end of the run: 4 KiB leaves plus superpages."""
    return _f(r, "pagetable.mappings_4k") * 4096 + superpage_bytes(r, design)


def retired_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per workload, design and retired fraction (the main sweep's runs at
    0, of the designs run with retired pages): the share of touched bytes
    mapped by superpages (%), the touched MiB, the MiB of memory in clean
    2 MiB blocks (``physmem.retired.clean_blocks_2m``), IPC gain over
    4 KiB at the same fraction and seed (mean and 95 % interval), walks per
    1000 instructions, the paper's Fig. 14 capacity share and Fig. 3's
    clean-2 MB probability at that fraction."""
    df = _ipc(runs[runs["retired_kind"].isin(["none", "uniform"])])
    # Only the designs run with retired pages (at 0 the main sweep has every design).
    swept = set(df[df["fraction"] > 0]["design"]) or set(df["design"])
    df = df[df["design"].isin(swept)]
    rows = []
    for (w, f), m in df.groupby(["workload", "fraction"], sort=False):
        b = _by_seed(m, "4k", "ipc")
        for d in dict.fromkeys(m["design"]):
            g = m[m["design"] == d]
            share = [100.0 * superpage_bytes(r, d) / touched_bytes(r, d) if touched_bytes(r, d) else np.nan
                     for _, r in g.iterrows()]
            v = _by_seed(m, d, "ipc")
            gain, lo, hi = _paired_ratio(v, b) if len(b) else (np.nan,) * 3
            paper_share = paper.FIG14_SHARE.get(d, {}).get(round(float(f), 4), np.nan) if f > 0 else np.nan
            clean = (g["physmem.retired.clean_blocks_2m"].astype(float).mean() * 2
                     if "physmem.retired.clean_blocks_2m" in g and f > 0 else np.nan)
            rows.append({"workload": w, "design": d, "fraction": float(f), "superpage_pct": float(np.nanmean(share))
                         if share else np.nan, "touched_mib": float(np.mean([touched_bytes(r, d) for _, r in g.iterrows()]))
                         / MIB, "clean_2m_mib": clean, "gain": gain, "gain_lo": lo, "gain_hi": hi,
                         "walks_pki": _pki(g, "walker.walks"),
                         "refusals": float(g["physmem.slices.refusals"].astype(float).mean())
                         if "physmem.slices.refusals" in g else np.nan,
                         "paper_capacity_pct": 100.0 * paper_share})
    return _sorted(pd.DataFrame(rows), ["workload", "design", "fraction"])


def beyond_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Clustered against uniform retired pages at :data:`BEYOND_FRACTION`:
    per workload and design, the superpage share and IPC gain over 4 KiB
    under each model (``retired_kind``)."""
    df = runs[np.isclose(runs["fraction"].astype(float), BEYOND_FRACTION)].copy()
    parts = []
    for kind, g in df.groupby("retired_kind", sort=False):
        g = g.copy()
        g["retired_kind"] = "uniform"  # each model on its own: its rows are what retired_table reads
        t = retired_table(g).reset_index()
        t["model"] = kind
        parts.append(t)
    if not parts:
        return pd.DataFrame(columns=["workload", "design", "model"]).set_index(["workload", "design", "model"])
    out = pd.concat(parts, ignore_index=True).drop(columns=["fraction", "paper_capacity_pct"])
    return _sorted(out, ["workload", "design", "model"])


# ------------------------------------------------------------------ versus


def _superpage_share(r: Mapping[str, Any], design: str) -> float:
    t = touched_bytes(r, design)
    return 100.0 * superpage_bytes(r, design) / t if t else float("nan")


def versus_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Beyond the paper, per workload, retired fraction and design of
    :data:`RIVALS`: IPC gain over 4 KiB at the same seed and fraction (%:
    mean of the per-seed gains, and their lowest and highest), the share of
    touched bytes in 2 MiB pages or GT superpages (NaN for 4 KiB and Mosaic
    Pages, which map 4 KiB pages only), walks and LLC misses per 1000
    instructions, the change in translation and in data stall cycles
    against 4 KiB's (% of 4 KiB's cycles, same seed; means), and for THP +
    compaction the measured phase's ``os.compaction.successes``,
    ``pins_migrated`` and ``os.compaction.cycles`` as % of ``core.cycles``
    (means over seeds); for Mosaic Pages the Iceberg pool's mean load
    (``physmem.allocator.iceberg.utilisation``, %)."""
    df = _ipc(runs)
    rows = []
    for (w, f), m in df.groupby(["workload", "fraction"], sort=False):
        b = _by_seed(m, "4k", "ipc")
        for d in dict.fromkeys(m["design"]):
            g = m[m["design"] == d]
            v = _by_seed(m, d, "ipc")
            seeds = sorted(set(v.index) & set(b.index))
            gains = [100.0 * (float(v[s]) / float(b[s]) - 1.0) for s in seeds if float(b[s]) > 0]
            share = ([_superpage_share(r, d) for _, r in g.iterrows()] if d in ("thp", "thp_compact", *ENTRY_BYTES)
                     else [])
            # Where the cycles moved: translation and data stalls, each as % of 4 KiB's cycles (same seed).
            base_cyc = _by_seed(m, "4k", "core.cycles")
            shift = {}
            for col, key in (("core.translation_stall_cycles", "translation_delta_pct"),
                             ("core.data_stall_cycles", "data_delta_pct")):
                a, z = _by_seed(m, d, col), _by_seed(m, "4k", col)
                vals = [100.0 * (float(a[s]) - float(z[s])) / float(base_cyc[s]) for s in seeds if float(base_cyc[s])]
                shift[key] = float(np.mean(vals)) if vals else np.nan
            rec: dict[str, Any] = {"workload": w, "fraction": float(f), "design": d, "seeds": len(gains),
                                   "ipc": float(v.mean()),
                                   "gain": float(np.mean(gains)) if gains else np.nan,
                                   "gain_min": float(np.min(gains)) if gains else np.nan,
                                   "gain_max": float(np.max(gains)) if gains else np.nan,
                                   "superpage_pct": float(np.mean(share)) if share else np.nan,
                                   "walks_pki": _pki(g, "walker.walks"), **shift,
                                   "llc_mpki": _pki(g, "cache.llc.misses") if "cache.llc.misses" in g else np.nan}
            if d == "mosaic" and "physmem.allocator.iceberg.utilisation" in g:
                rec["pool_load_pct"] = 100.0 * float(g["physmem.allocator.iceberg.utilisation"].astype(float).mean())
            if d == "thp_compact":
                cyc = g["os.compaction.cycles"].astype(float) / g["core.cycles"].astype(float)
                rec.update(compactions=float(g["os.compaction.successes"].astype(float).mean()),
                           compaction_failures=float(g["os.compaction.failures"].astype(float).mean()),
                           pins_migrated=float(g["os.compaction.pins_migrated"].astype(float).mean()),
                           pages_migrated=float(g["os.compaction.pages_migrated"].astype(float).mean()),
                           compaction_cycles_pct=100.0 * float(cyc.mean()))
            rows.append(rec)
    cols = ["compactions", "compaction_failures", "pins_migrated", "pages_migrated", "compaction_cycles_pct",
            "pool_load_pct"]
    out = pd.DataFrame(rows)
    for c in cols:
        if c not in out:
            out[c] = np.nan
    return _ranked(out, ["workload", "fraction", "design"])


def versus_summary(vt: pd.DataFrame) -> pd.DataFrame:
    """Per retired fraction and design: the geometric mean over workloads
    of IPC ÷ 4 KiB's (as a gain %), the lowest and highest workload gain,
    and the mean superpage share."""
    rows = []
    for f in sorted(set(vt.index.get_level_values("fraction"))):
        t = vt.xs(f, level="fraction")
        for d in dict.fromkeys(t.index.get_level_values("design")):
            g = t.xs(d, level="design")
            rows.append({"fraction": float(f), "design": d,
                         "gain_geomean": 100.0 * (_geomean(1 + g["gain"] / 100.0) - 1.0),
                         "gain_lo": float(g["gain"].min()), "gain_hi": float(g["gain"].max()),
                         "superpage_pct": float(g["superpage_pct"].mean()) if g["superpage_pct"].notna().any()
                         else np.nan, "workloads": len(g)})
    out = pd.DataFrame(rows)
    return _ranked(out, ["fraction", "design"])


#: The pairs the ``versus`` part compares: (first, second).
VERSUS_PAIRS = (("thp_compact", "thp"), ("gt_pde_4m", "thp_compact"), ("gt_pde_4m", "mosaic"), ("mosaic", "4k"))


def versus_pairs(vt: pd.DataFrame) -> pd.DataFrame:
    """Per retired fraction and pair of :data:`VERSUS_PAIRS`: on how many
    workloads the first design's gain over 4 KiB lies above the second's
    beyond the seeds' spread (its lowest per-seed gain above the other's
    highest), below it, or inside it (noise; ``identical`` counts those
    whose runs gave the same IPC at every seed), with the workloads named,
    and the mean difference of the gains (points)."""
    rows = []
    for f in sorted(set(vt.index.get_level_values("fraction"))):
        t = vt.xs(f, level="fraction")
        designs = set(t.index.get_level_values("design"))
        for a, b in VERSUS_PAIRS:
            if a not in designs or b not in designs:
                continue
            above, below, noise, same, diffs = [], [], [], [], []
            for w in _order(t.index.get_level_values("workload")):
                if (w, a) not in t.index or (w, b) not in t.index:
                    continue
                ra, rb = t.loc[(w, a)], t.loc[(w, b)]
                diffs.append(float(ra["gain"]) - float(rb["gain"]))
                if float(ra["gain_min"]) > float(rb["gain_max"]):
                    above.append(w)
                elif float(ra["gain_max"]) < float(rb["gain_min"]):
                    below.append(w)
                else:
                    noise.append(w)
                    if all(float(ra[k]) == float(rb[k]) for k in ("gain", "gain_min", "gain_max")):
                        same.append(w)
            rows.append({"fraction": float(f), "first": a, "second": b, "above": len(above), "below": len(below),
                         "noise": len(noise), "identical": len(same), "above_workloads": " ".join(above),
                         "below_workloads": " ".join(below), "noise_workloads": " ".join(noise),
                         "mean_diff": float(np.mean(diffs)) if diffs else np.nan})
    return pd.DataFrame(rows).set_index(["fraction", "first", "second"]) if rows else pd.DataFrame(
        columns=["above", "below", "noise", "identical", "mean_diff"])


def workload_table(main: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Per workload: its parameters, and from its 4 KiB and THP runs (seed
    0) the touched MiB, instructions, memory references and L2-TLB misses
    per 1000 instructions (the columns of the paper's Table 5)."""
    params = params_for(scale)
    rows = []
    for w in _order(main["workload"]):
        m = main[(main["workload"] == w) & (main["seed"] == main["seed"].min())]
        rec: dict[str, Any] = {"workload": w, "params": " ".join(f"{k}={v}" for k, v in params.get(w, {}).items())}
        for d in ("4k", "thp"):
            g = m[m["design"] == d]
            if not len(g):
                continue
            r = g.iloc[0]
            ins = _f(r, "core.instructions")
            rec[f"tlb_mpki_{d}"] = 1000.0 * _f(r, "mmu.l2_tlb.misses") / ins if ins else np.nan
            if d == "4k":
                rec["touched_mib"] = touched_bytes(r, d) / MIB
                rec["instructions_m"] = ins / 1e6
                rec["refs_pki"] = 1000.0 * _f(r, "core.records") / ins if ins else np.nan
        rows.append(rec)
    return pd.DataFrame(rows).set_index("workload")
