"""The Mosaic paper's evaluation (§6) on Tessera's GPU machine: Mosaic (CoCoA
and the in-place coalescer, preset ``mosaic_gpu_mosaic``) against GPU-MMU
(preset ``mosaic_gpu``) and an ideal TLB, with and without the cost of demand
paging, on the workloads of the motivation study.

The study reuses :mod:`tessera.report.mosaic_motivation`: its workloads
(:func:`~tessera.report.mosaic_motivation.mixes`), kernel parameters, SM
shares, its ``alone`` sweep (IPC_alone of Eq. 1: GPU-MMU, 4 KiB pages, no
paging cost, alone on the same share) and its weighted speedups. The
machines here (:data:`CONFIGS`) differ from each other in one thing per
comparison: the memory manager (``gpummu`` / ``mosaic``), the TLB
(``ideal``), the cost of demand paging (``*_dp``), placement alone
(``cocoa_only``: CoCoA without coalescing) and the entries of one TLB array
(:data:`TLB_SWEEPS`: ``*_l1_<N>`` and ``*_l2_<N>``, base-page entries of the
L1 and L2 TLBs, Figs. 14a and 14b; ``*_l1_2m_<N>`` and ``*_l2_2m_<N>``,
large-page entries, Figs. 15a and 15b). ``gpummu`` and ``ideal`` are the
motivation study's ``4k`` and ``ideal``, so one results store serves both.

Compaction (Fig. 16, Table 2): §6.4's stress test pre-fragments memory
(``physmem.fragmentation`` = the fragmentation index,
``physmem.fragmentation_occupancy`` = the frame occupancy) and runs Mosaic
with CAC, CAC-BC, ideal CAC and no CAC (``os.cac``) on two-application
workloads (:func:`compaction_specs`, :func:`compaction_tables`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from tessera.report import mosaic_motivation as mm
from tessera.report.intervals import paired_interval, t_interval
from tessera.report.mosaic_motivation import _ratio, _summary, apps_for, mixes, params_for

__all__ = [
    "STUDY",
    "SCALES",
    "CONFIGS",
    "CONFIG_LABEL",
    "PRESET_TLB_ARRAYS",
    "TLB_SWEEPS",
    "TlbSweep",
    "SEED_CONFIGS",
    "EXTRA_COUNTERS",
    "CAC_VARIANTS",
    "compaction_tables",
    "sweep_name",
    "specs",
    "compaction_specs",
    "weighted_speedups",
    "app_ipcs",
    "tables",
]

STUDY = "mosaic-gpu"
#: ``quick`` runs in under ten minutes on 2 cores (measured: see
#: docs/reproduce-mosaic-gpu.md); ``tiny`` only checks the pipeline.
SCALES = mm.SCALES

GPUMMU, MOSAIC = "mosaic_gpu", "mosaic_gpu_mosaic"
RESIDENT = {"gpu.paging": "resident"}

#: Config → (preset, overrides). ``resident``: every page on the GPU at
#: launch (no demand-paging cost); ``*_dp``: the preset's demand paging
#: (55 µs per 4 KiB far fault, serialised).
CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "gpummu": (GPUMMU, dict(mm.CONFIGS["4k"])),
    "mosaic": (MOSAIC, dict(RESIDENT)),
    "ideal": (GPUMMU, dict(mm.CONFIGS["ideal"])),
    "gpummu_dp": (GPUMMU, {}),
    "mosaic_dp": (MOSAIC, {}),
    "ideal_dp": (GPUMMU, {"gpu.ideal_tlb": True}),
    "cocoa_only": (GPUMMU, {**RESIDENT, "physmem.allocator": "cocoa"}),
}
CONFIG_LABEL = {
    "gpummu": "GPU-MMU (4 KiB pages, global free list), no paging cost",
    "mosaic": "Mosaic (CoCoA + in-place coalescer), no paging cost",
    "ideal": "ideal TLB over GPU-MMU's frames, no paging cost",
    "gpummu_dp": "GPU-MMU with demand paging",
    "mosaic_dp": "Mosaic with demand paging",
    "ideal_dp": "ideal TLB with demand paging",
    "cocoa_only": "GPU-MMU's pages over CoCoA's placement (no coalescing), no paging cost",
}
#: The TLB arrays of ``mosaic_gpu`` (Table 1), which ``mosaic_gpu_mosaic``
#: inherits: Figs. 14 and 15 change the entries of one array and keep every
#: other field, so the table is written out whole (a test checks it against
#: the resolved presets).
PRESET_TLB_ARRAYS: dict[str, dict[str, dict[str, Any]]] = {
    "l1": {"4k": {"entries": 128, "ways": "full"}, "2m": {"entries": 16, "ways": "full"}},
    "l2": {"4k": {"entries": 512, "ways": 16}, "2m": {"entries": 256, "ways": "full"}},
}
#: The machines of the TLB-size figures: GPU-MMU and Mosaic, no paging cost.
TLB_MACHINES = ("gpummu", "mosaic")


@dataclass(frozen=True)
class TlbSweep:
    """One TLB-size figure of §6.3: one array (``array``: ``4k`` or ``2m``) of
    one TLB (``tlb``: ``l1``, per SM, or ``l2``, shared) runs with
    ``entries[scale]`` entries besides the preset's, under each machine of
    :data:`TLB_MACHINES`. ``gpummu_smallest_only``: GPU-MMU runs the smallest
    size alone, for arrays it never fills (its pages are all 4 KiB), which
    one size shows as well as several."""

    figure: str
    key: str
    what: str
    tlb: str
    array: str
    entries: Mapping[str, tuple[int, ...]]
    gpummu_smallest_only: bool = False

    @property
    def preset_entries(self) -> int:
        return int(PRESET_TLB_ARRAYS[self.tlb][self.array]["entries"])

    def sizes(self, machine: str, scale: str) -> tuple[int, ...]:
        """The sizes ``machine`` runs at ``scale`` besides the preset's."""
        sizes = tuple(self.entries[scale])
        return (min(sizes),) if machine == "gpummu" and self.gpummu_smallest_only else sizes

    def prefix(self, machine: str) -> str:
        """``<machine>_<tlb>`` for base-page arrays (Fig. 14a's names),
        ``<machine>_<tlb>_2m`` for large-page ones."""
        return f"{machine}_{self.tlb}{'' if self.array == '4k' else '_' + self.array}"

    def config(self, machine: str, entries: int) -> str:
        """The machine with ``entries`` in the swept array: ``<prefix>_<N>``,
        or the machine itself at the preset's size."""
        return machine if entries == self.preset_entries else f"{self.prefix(machine)}_{entries}"

    def override(self, entries: int) -> dict[str, Any]:
        """The preset's arrays of this TLB with ``entries`` in this one."""
        arrays = {k: dict(v) for k, v in PRESET_TLB_ARRAYS[self.tlb].items()}
        arrays[self.array]["entries"] = entries
        return {f"gpu.{self.tlb}_tlb.arrays": arrays}


#: Figs. 14 and 15, by table name. The smallest size of Figs. 14b and 15 is
#: a quarter of the preset's at every scale, so their losses compare at the
#: same factor; ``quick`` runs that size alone to stay under ten minutes, and
#: ``full`` runs one more of Figs. 14b and 15a only (about 25 minutes for the
#: three, docs/reproduce-mosaic-gpu.md): the L2 TLB's large-page entries
#: serve almost no lookup behind the L1's 16 (the ``quick`` counters).
TLB_SWEEPS: dict[str, TlbSweep] = {s.key: s for s in (
    TlbSweep("Fig. 14a", "fig14a", "L1 TLB base-page entries per SM", "l1", "4k",
             {"full": (64, 32, 16, 8), "quick": (32, 8), "tiny": (8,)}),
    TlbSweep("Fig. 14b", "fig14b", "L2 TLB base-page entries", "l2", "4k",
             {"full": (256, 128), "quick": (128,), "tiny": (128,)}),
    TlbSweep("Fig. 15a", "fig15a", "L1 TLB large-page entries per SM", "l1", "2m",
             {"full": (8, 4), "quick": (4,), "tiny": (4,)}, gpummu_smallest_only=True),
    TlbSweep("Fig. 15b", "fig15b", "L2 TLB large-page entries", "l2", "2m",
             {"full": (64,), "quick": (64,), "tiny": (64,)}, gpummu_smallest_only=True),
)}
#: Configs whose single kernels also run under other seeds.
SEED_CONFIGS = ("gpummu", "mosaic", "ideal")

#: Counters the tables need beyond the motivation study's: column → counter.
EXTRA_COUNTERS = {
    "l1_lookups": "gpu.l1_tlb.lookups",
    "l1_hits": "gpu.l1_tlb.hits",
    "l1_2m_hits": "gpu.l1_tlb.2m.hits",
    "l2_lookups": "gpu.l2_tlb.lookups",
    "l2_hits": "gpu.l2_tlb.hits",
    "l2_2m_hits": "gpu.l2_tlb.2m.hits",
    "coalesced": "os.coalescer.coalesced",
    "not_contiguous": "os.coalescer.not_contiguous",
    "large_pages": "os.coalescer.large_pages",
    "splintered": "os.coalescer.splintered",
    "bloat_pages": "physmem.allocator.cocoa.bloat_pages",
    "app_pages": "physmem.allocator.cocoa.app_pages",
    "frames_reserved": "physmem.allocator.cocoa.frames_reserved",
    "frames_shared": "physmem.allocator.cocoa.frames_shared",
    "conversions": "physmem.allocator.cocoa.conversions",
    "guarantee_breaks": "physmem.allocator.cocoa.guarantee_breaks",
}


def all_configs(scale: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """:data:`CONFIGS` and the machines of :data:`TLB_SWEEPS` at ``scale``."""
    out = dict(CONFIGS)
    for sweep in TLB_SWEEPS.values():
        for base in TLB_MACHINES:
            preset, over = CONFIGS[base]
            for n in sweep.sizes(base, scale):
                out[sweep.config(base, n)] = (preset, {**over, **sweep.override(n)})
    return out


def sweep_name(scale: str, part: str = "") -> str:
    mm._check_scale(scale)
    base = STUDY if scale == "full" else f"{STUDY}-{scale}"
    return f"{base}-{part}" if part else base


def specs(scale: str) -> dict[str, dict[str, Any]]:
    """Every sweep, by part name: ``alone`` (the motivation study's, renamed),
    ``mix-<config>`` for every config of :func:`all_configs` over every
    workload of :func:`mixes`, and ``seeds-<config>`` (single kernels under
    other seeds), then :func:`compaction_specs`."""
    params = params_for(scale)
    ws = [list(m) for _, _, m in mixes(scale)]
    out: dict[str, dict[str, Any]] = {"alone": {**mm.specs(scale)["alone"], "name": sweep_name(scale, "alone")}}
    for name, (preset, over) in all_configs(scale).items():
        out[f"mix-{name}"] = {"name": sweep_name(scale, f"mix-{name}"), "machine": preset, "seed": 0,
                              "set": dict(over), "params": params, "axes": {"apps": ws}}
    for name in SEED_CONFIGS:
        preset, over = CONFIGS[name]
        out[f"seeds-{name}"] = {"name": sweep_name(scale, f"seeds-{name}"), "machine": preset, "set": dict(over),
                                "params": params,
                                "axes": {"apps": [[a] for a in apps_for(scale)], "seed": list(mm._EXTRA_SEEDS[scale])}}
    out.update(compaction_specs(scale))
    return out


#: Fig. 16 and Table 2: the stress test of §6.4 (every CAC variant over the
#: same pre-fragmented memory). ``none`` is Mosaic without compaction, which
#: breaks CoCoA's soft guarantee when it finds no free frame.
CAC_VARIANTS: dict[str, Any] = {"none": None, "cac": {"copy": "channel"}, "cac_bc": {"copy": "bulk"},
                                "ideal_cac": {"copy": "ideal"}}
CAC_LABEL = {"none": "no CAC", "cac": "CAC (channel copy)", "cac_bc": "CAC-BC (in-DRAM bulk copy)",
             "ideal_cac": "ideal CAC (free copies)"}
#: Fig. 16a: fragmentation index (share of 2 MiB frames pre-fragmented) at
#: occupancy 50 %; Fig. 16b and Table 2: occupancy at index 100 %.
FRAG_INDEX = {"full": (0.5, 0.9, 0.95, 1.0), "quick": (0.9, 1.0), "tiny": (1.0,)}
FRAG_OCCUPANCY = {"full": (0.01, 0.1, 0.25, 0.35, 0.5, 0.75), "quick": (0.1, 0.5), "tiny": (0.5,)}
FIXED_OCCUPANCY, FIXED_INDEX = 0.5, 1.0
#: Workloads of the stress test: two-application ones (homogeneous first).
FRAG_WORKLOADS = {"full": (11, 5), "quick": (1, 1), "tiny": (1, 0)}


def frag_mixes(scale: str) -> list[tuple[str, ...]]:
    """The stress test's workloads: the first homogeneous and heterogeneous
    two-application workloads of :func:`mixes`, as many as
    :data:`FRAG_WORKLOADS` says."""
    hom, het = FRAG_WORKLOADS[scale]
    ms = mixes(scale)
    two = [(g, m) for g, n, m in ms if n == 2]
    return [m for g, m in two if g == "homogeneous"][:hom] + [m for g, m in two if g == "heterogeneous"][:het]


def cac_set(variant: str) -> dict[str, Any]:
    over = dict(RESIDENT)
    if CAC_VARIANTS[variant] is not None:
        over["os.cac"] = dict(CAC_VARIANTS[variant])
    return over


def compaction_specs(scale: str) -> dict[str, dict[str, Any]]:
    """The compaction sweeps (Fig. 16, Table 2), by part name:
    ``frag16a-<variant>`` (the fragmentation index at occupancy 50 %) and
    ``frag16b-<variant>`` (the occupancy at index 100 %) for every variant
    of :data:`CAC_VARIANTS`, over :func:`frag_mixes` under Mosaic without
    paging cost."""
    mm._check_scale(scale)
    params = params_for(scale)
    ws = [list(m) for m in frag_mixes(scale)]
    out: dict[str, dict[str, Any]] = {}
    for v in CAC_VARIANTS:
        base = {"name": "", "machine": MOSAIC, "seed": 0, "params": params}
        out[f"frag16a-{v}"] = {**base, "name": sweep_name(scale, f"frag16a-{v}"),
                               "set": {**cac_set(v), "physmem.fragmentation_occupancy": FIXED_OCCUPANCY},
                               "axes": {"apps": ws, "physmem.fragmentation": list(FRAG_INDEX[scale])}}
        out[f"frag16b-{v}"] = {**base, "name": sweep_name(scale, f"frag16b-{v}"),
                               "set": {**cac_set(v), "physmem.fragmentation": FIXED_INDEX},
                               "axes": {"apps": ws, "physmem.fragmentation_occupancy": list(FRAG_OCCUPANCY[scale])}}
    return out


#: Counters of the compaction runs: column → counter.
CAC_COUNTERS = {**{"bloat_pages": "physmem.allocator.cocoa.bloat_pages",
                   "app_pages": "physmem.allocator.cocoa.app_pages",
                   "coalesced": "os.coalescer.coalesced",
                   "guarantee_breaks": "physmem.allocator.cocoa.guarantee_breaks"},
                "frames_freed": "os.cac.frames_freed", "foreign_moved": "os.cac.foreign_pages_moved",
                "pages_moved": "os.cac.pages_moved", "cac_cycles": "os.cac.cycles",
                "stall": "gpu.compaction_stall_cycles"}


def frag_speedups(runs: Mapping[str, pd.DataFrame], alone: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Weighted speedups of every compaction run: ``figure`` (16a or 16b),
    ``variant``, ``index``, ``occupancy`` and the :data:`CAC_COUNTERS`."""
    frames = []
    for part, df in runs.items():
        if not part.startswith("frag16"):
            continue
        fig, variant = part[len("frag"):].split("-", 1)
        d = df.copy()
        idx = d["axis.physmem.fragmentation"] if "axis.physmem.fragmentation" in d else FIXED_INDEX
        occ = d["axis.physmem.fragmentation_occupancy"] if "axis.physmem.fragmentation_occupancy" in d else FIXED_OCCUPANCY
        d["config"] = [f"{fig}:{variant}:{i}:{o}" for i, o in zip(pd.Series(idx, index=d.index), pd.Series(occ, index=d.index))]
        frames.append(d)
    if not frames:
        return pd.DataFrame()
    ws = mm.weighted_speedups(pd.concat(frames, ignore_index=True), alone, scale, extra=CAC_COUNTERS)
    parts = ws["config"].str.split(":", expand=True)
    ws["figure"], ws["variant"] = parts[0], parts[1]
    ws["index"], ws["occupancy"] = parts[2].astype(float), parts[3].astype(float)
    return ws


def fig16(frag: pd.DataFrame, ws: pd.DataFrame, figure: str) -> pd.DataFrame:
    """Fig. 16a (``16a``: by index) or 16b (``16b``: by occupancy): each
    variant's weighted speedup over Mosaic's on unfragmented memory (the
    same workload, no paging cost), mean, min and max over workloads."""
    if frag.empty:
        return pd.DataFrame()
    base = ws[ws["config"] == "mosaic"].set_index("mix")["ws"]
    d = frag[frag["figure"] == figure].copy()
    d["ratio"] = d["ws"] / d["mix"].map(base)
    key = "index" if figure == "16a" else "occupancy"
    g = d.groupby([key, "variant"], sort=True)["ratio"].agg(["mean", "min", "max", "count"]).unstack("variant")
    order = [v for v in CAC_VARIANTS if v in g.columns.get_level_values(1)]
    return g.reindex(columns=pd.MultiIndex.from_product([["mean", "min", "max", "count"], order]))


def table2(frag: pd.DataFrame) -> pd.DataFrame:
    """Table 2: memory bloat at index 100 % by occupancy, per variant: the
    free 4 KiB slots of the frames applications hold over their pages (in %,
    mean over workloads), with the frames compaction freed and the share of
    the run the GPU stalled for it."""
    if frag.empty:
        return pd.DataFrame()
    d = frag[frag["figure"] == "16b"].copy()
    d["bloat_pct"] = 100.0 * d["bloat_pages"] / d["app_pages"]
    d["stall_share"] = d["stall"].fillna(0.0) / d["cycles"]
    g = d.groupby(["occupancy", "variant"], sort=True)[["bloat_pct", "frames_freed", "foreign_moved", "guarantee_breaks",
                                                       "coalesced", "stall_share"]].mean()
    return g.unstack("variant")


# ------------------------------------------------------------------ analysis


def weighted_speedups(runs: pd.DataFrame, alone: pd.DataFrame, scale: str) -> pd.DataFrame:
    """The motivation study's weighted speedups with :data:`EXTRA_COUNTERS`."""
    return mm.weighted_speedups(runs, alone, scale, extra=EXTRA_COUNTERS)


def app_ipcs(runs: pd.DataFrame, scale: str) -> pd.DataFrame:
    """One row per application of each workload and config: ``group``, ``n``,
    ``mix``, ``slot`` (its place in the workload), ``app``, ``config``, ``ipc``."""
    group_of = {m: (g, n) for g, n, m in mixes(scale)}
    rows = []
    for _, r in runs.iterrows():
        apps = mm._apps_of(r["axis.apps"])
        g, n = group_of[apps]
        for i, a in enumerate(apps):
            rows.append({"group": g, "n": n, "mix": "+".join(apps), "slot": i, "app": a, "config": r["config"],
                         "ipc": float(r[f"gpu.apps.{i}.ipc"])})
    return pd.DataFrame(rows)


def _group(ws: pd.DataFrame, group: str) -> pd.DataFrame:
    return ws[ws["group"] == group]


def _present(ws: pd.DataFrame, *configs: str) -> bool:
    have = set(ws["config"])
    return all(c in have for c in configs)


#: The pairs of Figs. 8 and 9: column → (numerator, denominator).
PAIRS = {
    "mosaic_over_gpummu": ("mosaic", "gpummu"),
    "mosaic_over_ideal": ("mosaic", "ideal"),
    "ideal_over_gpummu": ("ideal", "gpummu"),
    "mosaic_dp_over_gpummu_dp": ("mosaic_dp", "gpummu_dp"),
    "mosaic_dp_over_ideal_dp": ("mosaic_dp", "ideal_dp"),
    "ideal_dp_over_gpummu_dp": ("ideal_dp", "gpummu_dp"),
}


def _pairs(ws: pd.DataFrame, pairs: Mapping[str, tuple[str, str]]) -> pd.DataFrame:
    cols = {k: _summary(_ratio(ws, a, b)) for k, (a, b) in pairs.items() if _present(ws, a, b)}
    return pd.concat(cols, axis=1)


def fig8_9(ws: pd.DataFrame, group: str) -> pd.DataFrame:
    """Fig. 8 (``homogeneous``) or 9 (``heterogeneous``): per workload, the
    ratio of weighted speedups of :data:`PAIRS`, summarised per application
    count and over the group (mean, min, max)."""
    t = _pairs(_group(ws, group), PAIRS)
    return t.drop(index=("all", "all"), errors="ignore")


def fig10(ws: pd.DataFrame) -> pd.DataFrame:
    """Fig. 10: each two-application heterogeneous workload, Mosaic and the
    ideal TLB over GPU-MMU, without and with demand paging."""
    d = ws[(ws["group"] == "heterogeneous") & (ws["n"] == 2)]
    p = d.pivot_table(index="mix", columns="config", values="ws")
    out = pd.DataFrame(index=p.index)
    for a, b in (("mosaic", "gpummu"), ("ideal", "gpummu"), ("mosaic_dp", "gpummu_dp"), ("ideal_dp", "gpummu_dp")):
        if a in p and b in p:
            out[f"{a}_over_{b}"] = p[a] / p[b]
    order = list(dict.fromkeys(d["mix"]))
    return out.loc[order].rename_axis("mix")


def fig11(ipcs: pd.DataFrame, suffix: str = "") -> pd.DataFrame:
    """Fig. 11: every application of every heterogeneous workload, its IPC
    under Mosaic and the ideal TLB over its IPC under GPU-MMU, and Mosaic's
    over the ideal TLB's, sorted by Mosaic's ratio. ``suffix`` ``"_dp"``
    takes the demand-paged runs."""
    d = ipcs[ipcs["group"] == "heterogeneous"]
    p = d.pivot_table(index=["n", "mix", "slot", "app"], columns="config", values="ipc")
    g, m, i = f"gpummu{suffix}", f"mosaic{suffix}", f"ideal{suffix}"
    if p.empty or not all(c in p for c in (g, m, i)):
        return pd.DataFrame(columns=["n", "mix", "slot", "app", "mosaic_norm", "ideal_norm", "mosaic_of_ideal"])
    out = pd.DataFrame({"mosaic_norm": p[m] / p[g], "ideal_norm": p[i] / p[g], "mosaic_of_ideal": p[m] / p[i]})
    return out.reset_index().sort_values(["mosaic_norm", "n", "mix", "slot"]).reset_index(drop=True)


def fig11_summary(per_app: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Fig. 11's numbers per variant (``resident``, ``dp``) and per
    application count: applications, the share Mosaic improves, min / mean /
    max of Mosaic's normalised IPC, and the shares within 90, 80 and 70 % of
    the ideal TLB's IPC."""
    rows = []
    for variant, f in per_app.items():
        parts = [(str(n), d) for n, d in f.groupby("n")] + [("all", f)]
        for n, d in parts:
            v = d["mosaic_norm"].replace([np.inf, -np.inf], np.nan).dropna()
            o = d["mosaic_of_ideal"].replace([np.inf, -np.inf], np.nan).dropna()
            rows.append({"variant": variant, "n": n, "apps": len(d),
                         "improved_pct": 100.0 * float((v > 1.0).mean()) if len(v) else np.nan,
                         "min": v.min(), "mean": v.mean(), "max": v.max(),
                         **{f"within_{k}_pct": 100.0 * float((o >= k / 100.0).mean()) if len(o) else np.nan
                            for k in (90, 80, 70)}})
    return pd.DataFrame(rows).set_index(["variant", "n"])


def fig12(ws: pd.DataFrame) -> pd.DataFrame:
    """Fig. 12: GPU-MMU and Mosaic with demand paging over GPU-MMU without
    its cost (and Mosaic without it, for reference), per group and count."""
    return _pairs(ws, {"gpummu_dp_over_gpummu": ("gpummu_dp", "gpummu"),
                       "mosaic_dp_over_gpummu": ("mosaic_dp", "gpummu"),
                       "mosaic_over_gpummu": ("mosaic", "gpummu")})


def fig13(ws: pd.DataFrame) -> pd.DataFrame:
    """Fig. 13: L1 and L2 TLB hit rates per (group, n) under GPU-MMU and
    Mosaic (no paging cost), the share of TLB hits served by 2 MiB entries,
    and the share of full 2 MiB frames coalesced (averages over workloads)."""
    rows = []
    d = ws[ws["config"].isin(["gpummu", "mosaic"])].copy()
    d["l1_hit"] = d["l1_hits"] / d["l1_lookups"].where(d["l1_lookups"] > 0)
    d["l2_hit"] = d["l2_hits"] / d["l2_lookups"].where(d["l2_lookups"] > 0)
    d["l1_large_share"] = d["l1_2m_hits"] / d["l1_hits"].where(d["l1_hits"] > 0)
    d["l2_large_share"] = d["l2_2m_hits"] / d["l2_hits"].where(d["l2_hits"] > 0)
    full = d["coalesced"] + d["not_contiguous"]
    d["coalesced_share"] = d["coalesced"] / full.where(full > 0)
    parts = [((g, str(n)), x) for (g, n), x in d.groupby(["group", "n"], sort=False)]
    parts += [((g, "all"), x) for g, x in d.groupby("group", sort=False)]
    # Both groups together per count (the paper's Fig. 13 groups by count only), then everything.
    parts += [(("all", str(n)), x) for n, x in d.groupby("n")] + [(("all", "all"), d)]
    for (g, n), x in parts:
        row: dict[str, Any] = {"group": g, "n": n, "workloads": x["mix"].nunique()}
        for c in ("gpummu", "mosaic"):
            y = x[x["config"] == c]
            for k in ("l1_hit", "l2_hit", "l1_large_share", "l2_large_share"):
                row[f"{c}_{k}"] = y[k].mean()
        row["mosaic_coalesced_share"] = x[x["config"] == "mosaic"]["coalesced_share"].mean()
        rows.append(row)
    return pd.DataFrame(rows).set_index(["group", "n"])


def _own_ratios(ws: pd.DataFrame, sweep: TlbSweep, machine: str, entries: int) -> pd.DataFrame:
    """Per workload, ``machine`` with ``entries`` in the swept array over
    GPU-MMU at the preset's size (``ratio``) and over itself there (``own``);
    empty if a run is missing."""
    c = sweep.config(machine, entries)
    if not _present(ws, c, "gpummu", machine):
        return pd.DataFrame(columns=["group", "n", "mix", "ratio", "own"])
    return _ratio(ws, c, "gpummu").merge(_ratio(ws, c, machine).rename(columns={"ratio": "own"}),
                                         on=["group", "n", "mix"])


def tlb_sweep(ws: pd.DataFrame, sweep: TlbSweep, scale: str) -> pd.DataFrame:
    """Figs. 14a, 14b, 15a, 15b: weighted speedup with ``sweep``'s array
    resized, over GPU-MMU's at the preset's size, per workload, then mean /
    min / max per group; ``mean_own``: the mean over the same machine's at
    the preset's size (the paper's "Mosaic loses 7.6 %"). Rows: config,
    entries, group."""
    rows = []
    for base in TLB_MACHINES:
        for n in (sweep.preset_entries,) + sweep.sizes(base, scale):
            r = _own_ratios(ws, sweep, base, n)
            if r.empty:
                continue
            for g, d in [(g, d) for g, d in r.groupby("group", sort=False)] + [("all", r)]:
                rows.append({"config": base, "entries": n, "group": g, "workloads": len(d),
                             "mean": d["ratio"].mean(), "min": d["ratio"].min(), "max": d["ratio"].max(),
                             "mean_own": d["own"].mean()})
    return pd.DataFrame(rows).set_index(["config", "entries", "group"])


#: The sweep the others' losses are set against: the paper finds Mosaic more
#: sensitive to the L2 TLB's base-page entries than to any large-page count.
REFERENCE_SWEEP = "fig14b"


def tlb_sensitivity(ws: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Per sweep of :data:`TLB_SWEEPS` and machine, at the sweep's smallest
    size: the weighted speedup over the machine's own at the preset's size
    (``own``: mean, its 95 % t-interval over workloads, min, max, and
    ``unchanged``: the workloads whose weighted speedup did not move); how
    much more that ratio moves than :data:`REFERENCE_SWEEP`'s (``vs_ref``:
    the mean over the same workloads of ``|own − 1| − |own_ref − 1|``, with
    its interval; negative: less sensitive than there); and the 2 MiB TLB
    hits summed over the machine's runs at that size (``l1_2m_hits``,
    ``l2_2m_hits``) and at the preset's (``*_preset``). Rows: figure key,
    machine."""
    ref = TLB_SWEEPS[REFERENCE_SWEEP]
    rows = []
    for sweep in TLB_SWEEPS.values():
        for base in TLB_MACHINES:
            n = min(sweep.sizes(base, scale))
            r = _own_ratios(ws, sweep, base, n)
            if r.empty:
                continue
            mean, half = t_interval(r["own"])
            rows.append({"figure": sweep.key, "config": base, "entries": n, "preset": sweep.preset_entries,
                         "workloads": len(r), "own": mean, "own_lo": mean - half, "own_hi": mean + half,
                         "own_min": r["own"].min(), "own_max": r["own"].max(),
                         "unchanged": int((r["own"] == 1.0).sum()),
                         **_versus(r, _own_ratios(ws, ref, base, min(ref.sizes(base, scale)))),
                         **_large_hits(ws, sweep.config(base, n)), **_large_hits(ws, base, "_preset")})
    return pd.DataFrame(rows).set_index(["figure", "config"])


def _versus(r: pd.DataFrame, ref: pd.DataFrame) -> dict[str, float]:
    """How much further ``r``'s own ratio lies from 1 than ``ref``'s, per
    workload both ran: the mean with its 95 % t-interval (NaN without the
    reference). Distances, not ratios, so a gain counts as a change."""
    both = r.merge(ref, on=["group", "n", "mix"], suffixes=("", "_ref"))
    if both.empty:
        return {"vs_ref": np.nan, "vs_ref_lo": np.nan, "vs_ref_hi": np.nan}
    mean, lo, hi = paired_interval(list((both["own"] - 1.0).abs()), list((both["own_ref"] - 1.0).abs()))
    return {"vs_ref": mean, "vs_ref_lo": lo, "vs_ref_hi": hi}


def _large_hits(ws: pd.DataFrame, config: str, suffix: str = "") -> dict[str, float]:
    d = ws[ws["config"] == config]
    return {f"l1_2m_hits{suffix}": float(d["l1_2m_hits"].sum()), f"l2_2m_hits{suffix}": float(d["l2_2m_hits"].sum())}


def coalescing(ws: pd.DataFrame) -> pd.DataFrame:
    """Each kernel alone under Mosaic (no paging cost): 2 MiB frames
    coalesced and not contiguous, the pages CoCoA holds for it and the free
    slots of its frames (bloat), and IPC under GPU-MMU, CoCoA alone and Mosaic."""
    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1)]
    m = one[one["config"] == "mosaic"].set_index("mix")
    ipc = one.pivot_table(index="mix", columns="config", values="ipc")
    order = list(dict.fromkeys(one["mix"]))
    out = pd.DataFrame({"touched_mib": m["touched"] / 2**20, "coalesced": m["coalesced"],
                        "not_contiguous": m["not_contiguous"], "splintered": m["splintered"],
                        "app_pages": m["app_pages"], "bloat_pages": m["bloat_pages"],
                        "frames_reserved": m["frames_reserved"], "frames_shared": m["frames_shared"]})
    out["bloat_pct"] = 100.0 * out["bloat_pages"] / out["app_pages"].where(out["app_pages"] > 0)
    for c in ("gpummu", "cocoa_only", "mosaic"):
        if c in ipc:
            out[f"ipc_{c}"] = ipc[c]
    return out.loc[[a for a in order if a in out.index]].rename_axis("app")


def coalescing_mixes(ws: pd.DataFrame) -> pd.DataFrame:
    """Per (group, n) under Mosaic (no paging cost): mean share of full
    2 MiB frames coalesced, mean bloat, and CoCoA's conversions and broken
    guarantees summed over the workloads."""
    d = ws[ws["config"] == "mosaic"].copy()
    full = d["coalesced"] + d["not_contiguous"]
    d["coalesced_share"] = d["coalesced"] / full.where(full > 0)
    d["bloat_pct"] = 100.0 * d["bloat_pages"] / d["app_pages"].where(d["app_pages"] > 0)
    parts = [((g, str(n)), x) for (g, n), x in d.groupby(["group", "n"], sort=False)]
    parts += [(("all", "all"), d)]
    rows = [{"group": g, "n": n, "workloads": len(x), "coalesced": x["coalesced"].mean(),
             "not_contiguous": x["not_contiguous"].mean(), "coalesced_share": x["coalesced_share"].mean(),
             "bloat_pct": x["bloat_pct"].mean(), "conversions": x["conversions"].sum(),
             "guarantee_breaks": x["guarantee_breaks"].sum()} for (g, n), x in parts]
    return pd.DataFrame(rows).set_index(["group", "n"])


def placement(ws: pd.DataFrame) -> pd.DataFrame:
    """CoCoA's placement alone against GPU-MMU's (both 4 KiB pages, no
    coalescing), Mosaic against CoCoA alone (what coalescing adds) and
    against GPU-MMU, no paging cost."""
    return _pairs(ws, {"cocoa_only_over_gpummu": ("cocoa_only", "gpummu"),
                       "mosaic_over_cocoa_only": ("mosaic", "cocoa_only"),
                       "mosaic_over_gpummu": ("mosaic", "gpummu")})


def apps_alone(ws: pd.DataFrame, seeds: pd.DataFrame) -> pd.DataFrame:
    """Each kernel alone on 30 SMs: IPC under Mosaic and the ideal TLB over
    GPU-MMU's, seed 0, with the min and max over every seed run."""
    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1)]
    ipc = {(m, c, 0): v for m, c, v in one[["mix", "config", "ipc"]].itertuples(index=False)}
    for _, r in seeds.iterrows():
        ipc[(mm._apps_of(r["axis.apps"])[0], r["config"], int(r["seed"]))] = float(r["gpu.apps.0.ipc"])
    seed_list = sorted({s for _, _, s in ipc})
    rows = []
    for a in dict.fromkeys(one["mix"]):
        row: dict[str, Any] = {"app": a}
        for c, base in (("mosaic", "gpummu"), ("ideal", "gpummu"), ("mosaic", "ideal")):
            if (a, c, 0) not in ipc or (a, base, 0) not in ipc:
                continue
            vals = [ipc[(a, c, s)] / ipc[(a, base, s)] for s in seed_list
                    if (a, c, s) in ipc and (a, base, s) in ipc and ipc[(a, base, s)] > 0]
            row[f"{c}_over_{base}"] = ipc[(a, c, 0)] / ipc[(a, base, 0)]
            row[f"{c}_over_{base}_min"], row[f"{c}_over_{base}_max"] = min(vals), max(vals)
        row["seeds"] = len(seed_list)
        rows.append(row)
    return pd.DataFrame(rows).set_index("app")


def workloads(ws: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Each kernel alone on 30 SMs (seed 0): parameters, touched MiB, warp
    instructions, and IPC under GPU-MMU, Mosaic and the ideal TLB."""
    from tessera.report.paper_mosaic_gpu import SUITE

    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1)]
    ipc = one.pivot_table(index="mix", columns="config", values="ipc")
    g = one[one["config"] == "gpummu"].set_index("mix")
    params = params_for(scale)
    rows = []
    for a in apps_for(scale):
        if a not in g.index:
            continue
        rows.append({"app": a, "stands_for": SUITE.get(a, ""),
                     "params": " ".join(f"{k}={v}" for k, v in params[a].items()) or "defaults",
                     "touched_mib": g.loc[a, "touched"] / 2**20, "warp_instructions": g.loc[a, "warp_instructions"],
                     **{f"ipc_{c}": ipc.loc[a, c] if c in ipc else np.nan for c in ("gpummu", "mosaic", "ideal")}})
    return pd.DataFrame(rows).set_index("app")


def tables(ws: pd.DataFrame, ipcs: pd.DataFrame, seeds: pd.DataFrame, scale: str,
           runs: Mapping[str, pd.DataFrame] | None = None) -> dict[str, pd.DataFrame]:
    """Every table of the report from the weighted speedups
    (:func:`weighted_speedups`), the per-application IPCs (:func:`app_ipcs`)
    and the seed runs (the compaction tables come from
    :func:`compaction_tables`)."""
    per_app = {"resident": fig11(ipcs), "dp": fig11(ipcs, "_dp")}
    out = {
        "workloads": workloads(ws, scale),
        "fig8": fig8_9(ws, "homogeneous"),
        "fig9": fig8_9(ws, "heterogeneous"),
        "fig10": fig10(ws),
        "fig11": per_app["resident"],
        "fig11_dp": per_app["dp"],
        "fig11_summary": fig11_summary(per_app),
        "fig12": fig12(ws),
        "fig13": fig13(ws),
        **{key: tlb_sweep(ws, sweep, scale) for key, sweep in TLB_SWEEPS.items()},
        "tlb_sensitivity": tlb_sensitivity(ws, scale),
        "coalescing": coalescing(ws),
        "coalescing_mixes": coalescing_mixes(ws),
        "placement": placement(ws),
        "apps_alone": apps_alone(ws, seeds),
        "weighted_speedups": ws.set_index(["group", "n", "mix", "config"]),
    }
    return out


def compaction_tables(ws: pd.DataFrame, runs: Mapping[str, pd.DataFrame], scale: str) -> dict[str, pd.DataFrame]:
    """Fig. 16a, Fig. 16b and Table 2 from the compaction sweeps."""
    frag = frag_speedups(runs, runs["alone"], scale) if "alone" in runs else pd.DataFrame()
    if frag.empty:
        return {"fig16": pd.DataFrame()}
    a, b = fig16(frag, ws, "16a"), fig16(frag, ws, "16b")
    return {"fig16a": a, "fig16b": b, "fig16": pd.concat({"index": a, "occupancy": b}), "table2": table2(frag),
            "frag_speedups": frag.set_index(["figure", "variant", "index", "occupancy", "mix"])}
