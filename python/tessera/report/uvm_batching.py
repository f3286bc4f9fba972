"""The batch-aware unified-memory paper's evaluation (Kim et al., ASPLOS 2020,
§5–§6) on Tessera's GPU machine: the baseline (preset ``uvm_gpu``: a 1,024-entry
fault buffer, batches with 20 µs of runtime handling, 64 KiB units, Zheng et
al.'s sequential-local prefetching, LRU eviction, 15.75 GB/s PCIe), thread
oversubscription (TO), unobtrusive eviction (UE), both, the baseline with PCIe
compression, and ETC, over the eleven GraphBIG workloads.

Every machine (:data:`CONFIGS`) differs from the baseline in one thing: the
keys of its overrides. The study's sweeps (:func:`specs`):

- ``main-<config>-m<pct>``: each workload at a GPU memory of ``pct`` % of its
  footprint, under every seed of :data:`MAIN` (Figs. 11–16);
- ``ratio-<config>``: the baseline and UE at every oversubscription ratio of
  :data:`RATIOS`, seed 0 (Fig. 17; the ratio 1.0 run is also the "unlimited
  memory" of the paper's Fig. 8);
- ``handling-<config>``: the baseline and TO+UE at every runtime handling
  time of :data:`HANDLING`, memory 50 %, seed 0 (Fig. 18).

A run the sweeps share (the same machine, workload and seed) is simulated
once: the store keeps it by identity.

Averages over workloads are geometric means of per-workload ratios (the
paper does not say which mean it uses; a geometric mean of speedups does not
depend on which machine is the denominator). The seeds' spread is the range
of the per-seed averages, each over the same workloads.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from tessera.report.intervals import t_interval
from tessera.report.mosaic_motivation import _apps_of

__all__ = [
    "STUDY",
    "SCALES",
    "WORKLOADS",
    "GRAPH_SCALE",
    "CONFIGS",
    "CONFIG_LABEL",
    "PCIE_COMPRESSION",
    "MAIN",
    "RATIOS",
    "HANDLING",
    "sweep_name",
    "labels_for",
    "specs",
    "runs_table",
    "tables",
    "geomean",
]

STUDY = "uvm-batching"
#: ``quick`` runs in about ten minutes on 2 cores (measured: see
#: docs/reproduce-uvm-batching.md); ``tiny`` only checks the pipeline (tests),
#: its numbers mean nothing.
SCALES = ("full", "quick", "tiny")

#: The paper's label → Tessera's kernel (docs/gpu.md, "GraphBIG set").
WORKLOADS: dict[str, str] = {
    "BC": "bc",
    "BFS-DWC": "bfs_data_warp",
    "BFS-TA": "bfs_atomic",
    "BFS-TF": "bfs_frontier",
    "BFS-TTC": "bfs",
    "BFS-TWC": "bfs_warp",
    "GC-DTC": "gc_data",
    "GC-TTC": "graph_coloring",
    "KCORE": "kcore",
    "SSSP-TWC": "sssp_warp",
    "PR": "pagerank",
}
_TINY = ("BFS-DWC", "BFS-TTC", "KCORE")
#: The R-MAT graph's scale (2^scale vertices, edge factor 10). The paper's
#: footprints are 26–349 MB; scale 16 gives 5.0–9.8 MiB and scale 15 about
#: half that (docs/gpu.md); larger ones take hours on 2 cores. The memory
#: is a share of each workload's own footprint, so the degree of
#: oversubscription is the paper's at every scale. Below scale 15 most
#: kernels launch 64 blocks of 256 threads, which the 16 SMs run at once:
#: TO would have no block to switch in.
GRAPH_SCALE = {"full": "16", "quick": "15", "tiny": "12"}

#: Our choice for the baseline with PCIe compression, which the paper does
#: not give: the ratio ETC's capacity compression assumes (``cc_ratio``), so
#: that both compressions see data equally compressible.
PCIE_COMPRESSION = 1.6

TO = {"gpu.thread_oversubscription": {}}
UE = {"gpu.paging.unobtrusive": True}
#: Config → overrides on ``uvm_gpu``. ETC is MT and CC: its authors turn PE
#: off for irregular applications, as the paper does, and all eleven are.
CONFIGS: dict[str, dict[str, Any]] = {
    "base": {},
    "to": dict(TO),
    "ue": dict(UE),
    "to_ue": {**TO, **UE},
    "comp": {"gpu.paging.pcie_compression": PCIE_COMPRESSION},
    "etc": {"gpu.paging.etc": {"throttling": True, "compression": True}},
}
CONFIG_LABEL = {
    "base": "BASELINE",
    "to": "TO",
    "ue": "UE",
    "to_ue": "TO+UE",
    "comp": "BASELINE + PCIe compression",
    "etc": "ETC",
}
#: Per scale: (memory share, seeds) groups for Figs. 11–16.
MAIN: dict[str, tuple[tuple[float, tuple[int, ...]], ...]] = {
    "full": ((0.5, (0, 1, 2)), (0.75, (0, 1, 2))),
    "quick": ((0.5, (0, 1)), (0.75, (0,))),
    "tiny": ((0.5, (0, 1)),),
}
#: Fig. 17's oversubscription ratios, under these machines.
RATIOS = {
    "full": (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
    "quick": (0.1, 0.5, 1.0),
    "tiny": (0.5, 1.0),
}
RATIO_CONFIGS = ("base", "ue")
#: Fig. 18's runtime handling times (µs), at :data:`HANDLING_MEMORY`.
HANDLING = {"full": (20, 30, 40, 50), "quick": (20, 50), "tiny": (20, 50)}
HANDLING_CONFIGS = ("base", "to_ue")
#: Set on every machine of the study: a launch spreads its blocks over the
#: SMs one per SM per round, as GPGPU-Sim's block issue does (Tessera's
#: default, ``fill``, fills each SM in turn). Small launches (GC-DTC's and
#: BFS-DWC's worklists) then use every SM; TO's inactive blocks never take a
#: block another SM could run under either.
STUDY_SET: dict[str, Any] = {"gpu.block_dispatch": "round_robin"}
HANDLING_MEMORY = 0.5
MACHINE = "uvm_gpu"


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (allowed: {', '.join(SCALES)})")


def sweep_name(scale: str, part: str = "") -> str:
    _check_scale(scale)
    base = STUDY if scale == "full" else f"{STUDY}-{scale}"
    return f"{base}-{part}" if part else base


def labels_for(scale: str) -> tuple[str, ...]:
    """The paper's labels of the workloads run at ``scale``, in its order."""
    _check_scale(scale)
    return _TINY if scale == "tiny" else tuple(WORKLOADS)


def _pct(m: float) -> str:
    return f"m{round(m * 100):d}"


def specs(scale: str) -> dict[str, dict[str, Any]]:
    """Every sweep of the study, by part name (see the module's doc)."""
    kernels = [WORKLOADS[lbl] for lbl in labels_for(scale)]
    params = {k: {"scale": GRAPH_SCALE[scale]} for k in kernels}
    apps = [[k] for k in kernels]

    def spec(part: str, over: Mapping[str, Any], axes: Mapping[str, Any], seed: Any = 0) -> dict[str, Any]:
        out = {"name": sweep_name(scale, part), "machine": MACHINE, "set": {**STUDY_SET, **over}, "params": params,
               "axes": {"apps": apps, **axes}}
        if seed is not None:
            out["seed"] = seed
        return out

    out: dict[str, dict[str, Any]] = {}
    for mem, seeds in MAIN[scale]:
        for c, over in CONFIGS.items():
            out[f"main-{c}-{_pct(mem)}"] = spec(f"main-{c}-{_pct(mem)}", {**over, "gpu.paging.memory": mem},
                                                 {"seed": list(seeds)}, seed=None)
    for c in RATIO_CONFIGS:
        out[f"ratio-{c}"] = spec(f"ratio-{c}", CONFIGS[c], {"gpu.paging.memory": list(RATIOS[scale])})
    for c in HANDLING_CONFIGS:
        out[f"handling-{c}"] = spec(f"handling-{c}", {**CONFIGS[c], "gpu.paging.memory": HANDLING_MEMORY},
                                    {"gpu.paging.handling_us": list(HANDLING[scale])})
    return out


# ------------------------------------------------------------------ analysis

_LABEL_OF = {k: lbl for lbl, k in WORKLOADS.items()}
#: Counter → column of :func:`runs_table`.
_COUNTERS = {
    "gpu.cycles": "cycles",
    "gpu.apps.0.warp_instructions": "warp_instructions",
    "gpu.paging.batches": "batches",
    "gpu.paging.faults": "faults",
    "gpu.paging.batch_units": "units",
    "gpu.paging.prefetched_units": "prefetched",
    "gpu.paging.batch_cycles": "batch_cycles",
    "gpu.paging.handling_cycles": "handling_cycles",
    "gpu.paging.evictions": "evictions",
    "gpu.paging.premature_evictions": "premature",
    "gpu.paging.lifetime_cycles": "lifetime_cycles",
    "gpu.paging.preemptive_evictions": "preemptive",
    "gpu.to.switches": "switches",
    "gpu.to.peak_degree": "peak_degree",
}
BUCKETS = ("le_1", "le_2", "le_4", "le_8", "le_16", "le_32", "le_64", "le_128", "le_256", "le_512", "le_1024",
           "le_2048", "gt_2048")


def runs_table(parts: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Every run once, tidy: ``workload`` (the paper's label), ``config``,
    ``memory``, ``handling_us``, ``seed``, the counters of :data:`_COUNTERS`
    and the batch-size histogram (``bs_<bucket>``). A run two sweeps share
    appears once."""
    rows = []
    for part, df in parts.items():
        config = part.split("-")[1]
        for _, r in df.iterrows():
            row = {"workload": _LABEL_OF[_apps_of(r["axis.apps"])[0]], "config": config,
                   "memory": float(r["config.gpu.paging.memory"]),
                   "handling_us": float(r["config.gpu.paging.handling_us"]), "seed": int(r["seed"])}
            for k, col in _COUNTERS.items():
                row[col] = float(r[k]) if k in r and not pd.isna(r[k]) else 0.0
            for b in BUCKETS:
                k = f"gpu.paging.batch_size.{b}"
                row[f"bs_{b}"] = float(r[k]) if k in r and not pd.isna(r[k]) else 0.0
            row["wall_s"] = float(r["wall_s"])
            rows.append(row)
    out = pd.DataFrame(rows)
    return out.drop_duplicates(["workload", "config", "memory", "handling_us", "seed"]).reset_index(drop=True)


def geomean(values: Sequence[float]) -> float:
    v = [float(x) for x in values if not math.isnan(float(x)) and float(x) > 0]
    return float(np.exp(np.mean(np.log(v)))) if v else math.nan


def _main(runs: pd.DataFrame) -> pd.DataFrame:
    """The runs at the default handling time, indexed (memory, workload, seed) × config."""
    d = runs[runs["handling_us"] == 20.0]
    return d.pivot_table(index=["memory", "workload", "seed"], columns="config", values="cycles")


def _speedups(runs: pd.DataFrame, mems: Sequence[float], seeds_of: Mapping[float, Sequence[int]]) -> pd.DataFrame:
    """Fig. 11: per (memory, workload), each config's speedup over the baseline
    (mean over seeds), then a ``geomean`` row per memory, with the range of
    the per-seed geometric means (``<config>_lo``/``_hi``) and the 95 %
    t-interval half-width (``<config>_ci``)."""
    cyc = _main(runs)
    rows = []
    for m in mems:
        seeds = list(seeds_of[m])
        per_seed: dict[str, list[float]] = {c: [] for c in CONFIGS}
        for s in seeds:
            for c in CONFIGS:
                vals = []
                for w in dict.fromkeys(cyc.loc[m].index.get_level_values(0)):
                    try:
                        vals.append(cyc.loc[(m, w, s), "base"] / cyc.loc[(m, w, s), c])
                    except KeyError:
                        pass
                per_seed[c].append(geomean(vals))
        for w in dict.fromkeys(cyc.loc[m].index.get_level_values(0)):
            row: dict[str, Any] = {"memory": m, "workload": w}
            for c in CONFIGS:
                v = [cyc.loc[(m, w, s), "base"] / cyc.loc[(m, w, s), c] for s in seeds if (m, w, s) in cyc.index]
                row[c] = float(np.mean(v))
                row[f"{c}_lo"], row[f"{c}_hi"] = float(min(v)), float(max(v))
            rows.append(row)
        row = {"memory": m, "workload": "geomean"}
        for c in CONFIGS:
            mean, half = t_interval(per_seed[c])
            # The same number as the claims table: the mean over seeds of each seed's geometric mean.
            row[c] = mean
            row[f"{c}_lo"], row[f"{c}_hi"] = float(min(per_seed[c])), float(max(per_seed[c]))
            row[f"{c}_ci"] = half
        rows.append(row)
    return pd.DataFrame(rows).set_index(["memory", "workload"])


def _claims(runs: pd.DataFrame, mems: Sequence[float], seeds_of: Mapping[float, Sequence[int]]) -> pd.DataFrame:
    """The headline ratios of §5.2, per memory: geometric mean over workloads
    for each seed, then the mean and range over seeds."""
    cyc = _main(runs)
    pairs = {
        "to_ue_over_base": ("base", "to_ue"),
        "to_ue_over_comp": ("comp", "to_ue"),
        "to_ue_over_etc": ("etc", "to_ue"),
        "to_over_base": ("base", "to"),
        "ue_over_base": ("base", "ue"),
        "to_ue_over_to": ("to", "to_ue"),
        "comp_over_base": ("base", "comp"),
        "etc_over_base": ("base", "etc"),
    }
    rows = []
    for m in mems:
        ws = list(dict.fromkeys(cyc.loc[m].index.get_level_values(0)))
        for name, (den, num) in pairs.items():
            per = [geomean([cyc.loc[(m, w, s), den] / cyc.loc[(m, w, s), num] for w in ws]) for s in seeds_of[m]]
            mean, half = t_interval(per)
            rows.append({"memory": m, "claim": name, "mean": float(np.mean(per)), "lo": min(per), "hi": max(per),
                         "ci": half, "seeds": len(per)})
    return pd.DataFrame(rows).set_index(["memory", "claim"])


def _batches(runs: pd.DataFrame, mems: Sequence[float]) -> pd.DataFrame:
    """Figs. 12–15 per (memory, workload, config), means over seeds: batches,
    faults per batch, batch cycles per batch, premature evictions, evictions,
    mean page lifetime, migrated units per µs of batch time."""
    d = runs[(runs["handling_us"] == 20.0) & runs["memory"].isin(list(mems))
             & runs["config"].isin(["base", "to", "ue", "to_ue"])]
    g = d.groupby(["memory", "workload", "config"], sort=False)
    out = g[["batches", "faults", "batch_cycles", "premature", "evictions", "units", "lifetime_cycles",
             "switches"]].mean()
    out["faults_per_batch"] = out["faults"] / out["batches"]
    out["batch_time"] = out["batch_cycles"] / out["batches"]
    out["lifetime"] = out["lifetime_cycles"] / out["evictions"].where(out["evictions"] > 0)
    out["units_per_us"] = out["units"] / (out["batch_cycles"] / 1000.0)
    return out


def _batch_summary(b: pd.DataFrame, mems: Sequence[float]) -> pd.DataFrame:
    """Per memory, the geometric means over workloads that §5.2 states: TO's
    batches and faults per batch against the baseline's; TO+UE's batch time
    against TO's and the baseline's; workloads where TO lowers premature
    evictions."""
    rows = []
    for m in mems:
        x = b.loc[m]
        ws = list(dict.fromkeys(x.index.get_level_values(0)))

        def ratio(col: str, num: str, den: str) -> float:
            return geomean([x.loc[(w, num), col] / x.loc[(w, den), col] for w in ws
                            if x.loc[(w, den), col] > 0 and x.loc[(w, num), col] > 0])

        fewer = sum(1 for w in ws if x.loc[(w, "to"), "premature"] < x.loc[(w, "base"), "premature"])
        more = sum(1 for w in ws if x.loc[(w, "to"), "premature"] > x.loc[(w, "base"), "premature"])
        rows.append({"memory": m, "workloads": len(ws),
                     "to_batches": ratio("batches", "to", "base"),
                     "to_faults_per_batch": ratio("faults_per_batch", "to", "base"),
                     "to_ue_batch_time_vs_to": ratio("batch_time", "to_ue", "to"),
                     "to_ue_batch_time_vs_base": ratio("batch_time", "to_ue", "base"),
                     "ue_batch_time_vs_base": ratio("batch_time", "ue", "base"),
                     "to_premature_fewer": fewer, "to_premature_more": more,
                     "to_premature": ratio("premature", "to", "base")})
    return pd.DataFrame(rows).set_index("memory")


def _distribution(runs: pd.DataFrame, mem: float) -> pd.DataFrame:
    """Fig. 16: the share of batches in each size bucket (faults per batch),
    over every workload's seed-0 run at ``mem``, for the baseline and TO."""
    d = runs[(runs["handling_us"] == 20.0) & (runs["memory"] == mem) & (runs["seed"] == 0)]
    rows = []
    for c in ("base", "to"):
        x = d[d["config"] == c]
        tot = sum(x[f"bs_{b}"].sum() for b in BUCKETS)
        for b in BUCKETS:
            rows.append({"config": c, "bucket": b, "batches": float(x[f"bs_{b}"].sum()),
                         "share": float(x[f"bs_{b}"].sum() / tot) if tot else math.nan})
    out = pd.DataFrame(rows)
    keep = out.groupby("bucket", sort=False)["batches"].sum()
    used = [b for b in BUCKETS if keep[b] > 0]
    return out[out["bucket"].isin(used)].set_index(["config", "bucket"])


def _efficiency(b: pd.DataFrame) -> pd.DataFrame:
    """Fig. 16's line: per run (memory, workload, config), faults per batch
    and migrated units per µs of batch time, with the rank correlation of the
    two over all runs."""
    out = b[["faults_per_batch", "units_per_us"]].reset_index()
    return out


def _ratio_sweep(runs: pd.DataFrame, ratios: Sequence[float]) -> pd.DataFrame:
    """Fig. 17: per ratio, the baseline's performance against its own at 1.0
    and UE's speedup over the baseline, per workload and the geometric mean."""
    d = runs[(runs["handling_us"] == 20.0) & (runs["seed"] == 0) & runs["config"].isin(RATIO_CONFIGS)]
    p = d.pivot_table(index=["workload", "memory"], columns="config", values="cycles")
    f = d.pivot_table(index=["workload", "memory"], columns="config", values="faults")
    rows = []
    for w in dict.fromkeys(d["workload"]):
        full = p.loc[(w, 1.0), "base"] if (w, 1.0) in p.index else math.nan
        for r in ratios:
            if (w, r) not in p.index:
                continue
            rows.append({"workload": w, "ratio": r, "perf": full / p.loc[(w, r), "base"],
                         "ue_speedup": p.loc[(w, r), "base"] / p.loc[(w, r), "ue"],
                         "ue_faults": f.loc[(w, r), "ue"] / f.loc[(w, r), "base"]})
    per = pd.DataFrame(rows)
    g = per.groupby("ratio").agg(perf=("perf", geomean), ue_speedup=("ue_speedup", geomean),
                                 ue_min=("ue_speedup", "min"), ue_max=("ue_speedup", "max"),
                                 ue_faults=("ue_faults", geomean), workloads=("workload", "count"))
    g = g.reset_index()
    g.insert(0, "workload", "geomean")
    return pd.concat([per, g], ignore_index=True).set_index(["workload", "ratio"])


def _handling(runs: pd.DataFrame, times: Sequence[int]) -> pd.DataFrame:
    """Fig. 18: per handling time, TO+UE's speedup over the baseline with the
    same handling time, at 50 % memory, seed 0."""
    d = runs[(runs["memory"] == HANDLING_MEMORY) & (runs["seed"] == 0) & runs["config"].isin(HANDLING_CONFIGS)]
    p = d.pivot_table(index=["workload", "handling_us"], columns="config", values="cycles")
    rows = []
    for w in dict.fromkeys(d["workload"]):
        for t in times:
            if (w, float(t)) in p.index:
                rows.append({"workload": w, "handling_us": float(t),
                             "speedup": p.loc[(w, float(t)), "base"] / p.loc[(w, float(t)), "to_ue"]})
    per = pd.DataFrame(rows)
    g = per.groupby("handling_us").agg(speedup=("speedup", geomean), lo=("speedup", "min"),
                                       hi=("speedup", "max")).reset_index()
    g.insert(0, "workload", "geomean")
    return pd.concat([per, g], ignore_index=True).set_index(["workload", "handling_us"])


def workloads_table(runs: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Per workload: its kernel, graph scale, footprint (the sum of its
    allocations, from ``tessera.gpu_info`` at seed 0), its launches and the
    blocks of the largest, warp instructions and its cycles with the data
    fitting (seed 0)."""
    from tessera import api

    d = runs[(runs["config"] == "base") & (runs["memory"] == 1.0) & (runs["seed"] == 0)
             & (runs["handling_us"] == 20.0)].set_index("workload")
    rows = []
    for lbl in labels_for(scale):
        k = WORKLOADS[lbl]
        info = api.gpu_info(k, {"scale": GRAPH_SCALE[scale]}, seed=0)
        rows.append({"workload": lbl, "kernel": k, "graph_scale": int(GRAPH_SCALE[scale]),
                     "footprint_mib": info["allocated_bytes"] / (1 << 20),
                     "largest_launch": max((kk["thread_blocks"] for kk in info["kernels"]), default=0),
                     "launches": len(info["kernels"]),
                     "warp_instructions": float(d.loc[lbl, "warp_instructions"]) if lbl in d.index else math.nan,
                     "cycles_fit": float(d.loc[lbl, "cycles"]) if lbl in d.index else math.nan,
                     "faults_fit": float(d.loc[lbl, "faults"]) if lbl in d.index else math.nan})
    return pd.DataFrame(rows).set_index("workload")


def tables(parts: Mapping[str, pd.DataFrame], scale: str) -> dict[str, pd.DataFrame]:
    """Every table of the report from the sweeps' runs (part → DataFrame)."""
    runs = runs_table(parts)
    mems = [m for m, _ in MAIN[scale]]
    seeds_of = {m: s for m, s in MAIN[scale]}
    b = _batches(runs, mems)
    return {
        "runs": runs.set_index(["workload", "config", "memory", "handling_us", "seed"]),
        "workloads": workloads_table(runs, scale),
        "fig11": _speedups(runs, mems, seeds_of),
        "claims": _claims(runs, mems, seeds_of),
        "batches": b,
        "batch_summary": _batch_summary(b, mems),
        "fig16": _distribution(runs, mems[0]),
        "efficiency": _efficiency(b),
        "fig17": _ratio_sweep(runs, RATIOS[scale]),
        "fig18": _handling(runs, HANDLING[scale]),
    }
