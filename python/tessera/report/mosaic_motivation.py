"""The Mosaic paper's motivation (§3) on Tessera's GPU machine: what 4 KiB and
2 MiB pages cost a multi-application GPU under GPU-MMU, with and without the
cost of demand paging, how much memory 2 MiB pages bloat, and a shared L2 TLB
against a page-walk cache.

The study is a set of sweeps (:func:`specs`) over workloads (:func:`mixes`):
each built-in kernel alone and in 2–5 copies (homogeneous), and random sets of
2–5 different kernels (heterogeneous), each run under every machine of
:data:`CONFIGS`. A workload's performance is its weighted speedup (the paper's
Eq. 1), Σ IPC_shared / IPC_alone, with IPC_alone the application alone on the
same number of SMs under GPU-MMU with 4 KiB pages and no paging cost (the
``alone`` sweep). Figs. 3 and 4 are ratios of weighted speedups of one workload
under two machines, averaged over workloads (:func:`tables`).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, Optional

import numpy as np
import pandas as pd

__all__ = [
    "STUDY",
    "SCALES",
    "APPS",
    "CONFIGS",
    "CONFIG_LABEL",
    "PWC",
    "sweep_name",
    "params_for",
    "mixes",
    "specs",
    "weighted_speedups",
    "tables",
]

STUDY = "mosaic-motivation"
#: ``quick`` runs in under five minutes on 2 cores; ``tiny`` only checks the
#: pipeline (tests), its numbers mean nothing.
SCALES = ("full", "quick", "tiny")

#: The kernels standing for the paper's applications (see
#: :data:`tessera.report.paper_mosaic_gpu.SUITE`), in the report's order.
APPS = ("vector_add", "reduction", "scan", "histogram", "spmv_csr", "gups", "bfs", "matrix_multiply", "hotspot",
        "srad", "needleman_wunsch")
_TINY_APPS = ("vector_add", "histogram", "bfs")

#: Kernel parameters per scale. ``full`` grows each kernel towards the
#: paper's working sets (10–362 MB, 81.5 MB on average) as far as the run
#: time allows (see docs/reproduce-mosaic-motivation.md); ``quick`` keeps the
#: kernels' defaults, with a smaller GUPS table.
_PARAMS: dict[str, dict[str, dict[str, str]]] = {
    "full": {
        "vector_add": {"n": "4M"},
        "reduction": {"n": "4M"},
        "scan": {"n": "1M"},
        "histogram": {"n": "4M"},
        "spmv_csr": {"scale": "16"},
        "gups": {"table": "64MiB"},
        "bfs": {"scale": "16"},
        "matrix_multiply": {"n": "256"},
        "hotspot": {"n": "1024", "steps": "2"},
        "srad": {"n": "768"},
        "needleman_wunsch": {"n": "2048"},
    },
    "quick": {"gups": {"table": "16MiB"}},
    "tiny": {"vector_add": {"n": "64k"}, "histogram": {"n": "64k"}, "bfs": {"scale": "10"}},
}
#: Copies of one kernel (homogeneous workloads), and (mixes per count, counts)
#: of the heterogeneous ones. The paper ran 27 homogeneous workloads of
#: each count 1–5 and 25 heterogeneous ones of each count 2–5.
_COPIES = {"full": (1, 2, 3, 4, 5), "quick": (1, 2, 5), "tiny": (1, 2)}
_HETERO = {"full": (5, (2, 3, 4, 5)), "quick": (2, (2, 5)), "tiny": (1, (2,))}
#: Seeds beside seed 0 for the single applications under ideal, 4k and 2m:
#: the spread of a kernel's generated data.
_EXTRA_SEEDS = {"full": (1, 2), "quick": (1, 2), "tiny": (1,)}
#: The random heterogeneous sets are drawn with this seed.
MIX_SEED = 2017

#: Power et al.'s page-walk cache (HPCA 2014), our size: 8 KiB, 16-way,
#: 128-byte lines, 10 cycles (the L2 TLB's latency), shared by all walks.
PWC = {"size": "8KiB", "ways": 16, "line": "128B", "latency": 10}

#: The machines: overrides on the ``mosaic_gpu`` preset (GPU-MMU, Table 1,
#: with the authors' blocking load/store unit; ``4k_nonblocking`` lets other
#: warps issue memory instructions while one waits for its translation).
#: ``resident`` is "no demand-paging overhead" (the transfer takes no time).
#: The preset's demand paging serialises whole far faults on one link, as the
#: authors' code; ``*_dp_overlap`` lets fault latencies overlap and serialises
#: only the PCIe transfer.
CONFIGS: dict[str, dict[str, Any]] = {
    "ideal": {"gpu.paging": "resident", "gpu.ideal_tlb": True},
    "ideal_2m": {"gpu.paging": "resident", "gpu.ideal_tlb": True, "physmem.page_size": "thp"},
    "4k": {"gpu.paging": "resident"},
    "2m": {"gpu.paging": "resident", "physmem.page_size": "thp"},
    "4k_nonblocking": {"gpu.paging": "resident", "gpu.ldst": "nonblocking"},
    "4k_dp": {},
    "2m_dp": {"physmem.page_size": "thp"},
    "4k_dp_overlap": {"gpu.paging.serialise": False},
    "2m_dp_overlap": {"gpu.paging.serialise": False, "physmem.page_size": "thp"},
    "pwc": {"gpu.paging": "resident", "gpu.l2_tlb.arrays": {}, "gpu.walker.pwc": PWC},
}
CONFIG_LABEL = {
    "ideal": "ideal TLB (4 KiB frames, as GPU-MMU's)",
    "ideal_2m": "ideal TLB over 2 MiB frames (as the 2 MiB machine's)",
    "4k": "GPU-MMU 4 KiB, no paging cost",
    "2m": "GPU-MMU 2 MiB, no paging cost",
    "4k_nonblocking": "4 KiB, no paging cost, non-blocking load/store unit",
    "4k_dp": "4 KiB with demand paging (serialised faults)",
    "2m_dp": "2 MiB with demand paging (serialised faults)",
    "4k_dp_overlap": "4 KiB with demand paging (overlapped faults)",
    "2m_dp_overlap": "2 MiB with demand paging (overlapped faults)",
    "pwc": "4 KiB, page-walk cache instead of the L2 TLB",
}
#: Configs that run on the homogeneous workloads only.
_HOMOGENEOUS_ONLY = ("4k_dp_overlap", "2m_dp_overlap")
#: Machines the single kernels also run under other seeds.
SEED_CONFIGS = ("ideal", "ideal_2m", "4k", "2m", "4k_nonblocking")
#: The machine IPC_alone is measured on.
ALONE_CONFIG = "4k"
SMS = 30


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"unknown scale {scale!r} (allowed: {', '.join(SCALES)})")


def sweep_name(scale: str, part: str = "") -> str:
    _check_scale(scale)
    base = STUDY if scale == "full" else f"{STUDY}-{scale}"
    return f"{base}-{part}" if part else base


def apps_for(scale: str) -> tuple[str, ...]:
    _check_scale(scale)
    return _TINY_APPS if scale == "tiny" else APPS


def params_for(scale: str) -> dict[str, dict[str, str]]:
    """``{kernel: {param: value}}`` at ``scale`` (a copy; defaults left out)."""
    _check_scale(scale)
    return {k: dict(_PARAMS[scale].get(k, {})) for k in apps_for(scale)}


def mixes(scale: str) -> list[tuple[str, int, tuple[str, ...]]]:
    """Every workload as ``(group, n, apps)``: ``group`` is ``homogeneous``
    or ``heterogeneous``, ``n`` the number of applications. Heterogeneous
    sets are ``n`` different kernels drawn with :data:`MIX_SEED`, no set twice."""
    apps = apps_for(scale)
    out = [("homogeneous", n, (a,) * n) for n in _COPIES[scale] for a in apps]
    per, counts = _HETERO[scale]
    rng = random.Random(MIX_SEED)
    for n in counts:
        seen: set[tuple[str, ...]] = set()
        while len(seen) < per:
            pick = tuple(rng.sample(apps, n))
            if tuple(sorted(pick)) in {tuple(sorted(s)) for s in seen}:
                continue
            seen.add(pick)
            out.append(("heterogeneous", n, pick))
    return out


def shares(n: int) -> list[int]:
    """SMs of each of ``n`` applications: the machine's equal split (the first
    ``30 % n`` get one more)."""
    return [SMS // n + (1 if i < SMS % n else 0) for i in range(n)]


def specs(scale: str) -> dict[str, dict[str, Any]]:
    """Every sweep of the study, by part name: one per machine of
    :data:`CONFIGS` (``mix-<config>``), ``alone`` (each kernel alone on
    every SM share the workloads use) and ``seeds-<config>`` (single kernels
    under other seeds)."""
    params = params_for(scale)
    all_mixes = mixes(scale)
    out: dict[str, dict[str, Any]] = {}
    for name, over in CONFIGS.items():
        ws = [list(m) for g, _, m in all_mixes if g == "homogeneous" or name not in _HOMOGENEOUS_ONLY]
        out[f"mix-{name}"] = {"name": sweep_name(scale, f"mix-{name}"), "machine": "mosaic_gpu", "seed": 0,
                              "set": dict(over), "params": params, "axes": {"apps": ws}}
    sms = sorted({s for _, n, _ in all_mixes for s in shares(n)}, reverse=True)
    out["alone"] = {"name": sweep_name(scale, "alone"), "machine": "mosaic_gpu", "seed": 0,
                    "set": dict(CONFIGS[ALONE_CONFIG]), "params": params,
                    "axes": {"apps": [[a] for a in apps_for(scale)], "gpu.sms": sms}}
    for name in SEED_CONFIGS:
        out[f"seeds-{name}"] = {"name": sweep_name(scale, f"seeds-{name}"), "machine": "mosaic_gpu",
                                "set": dict(CONFIGS[name]), "params": params,
                                "axes": {"apps": [[a] for a in apps_for(scale)], "seed": list(_EXTRA_SEEDS[scale])}}
    return out


# ------------------------------------------------------------------ analysis


def _apps_of(v: Any) -> tuple[str, ...]:
    return tuple(str(a) for a in v)


def weighted_speedups(runs: pd.DataFrame, alone: pd.DataFrame, scale: str,
                      extra: Optional[Mapping[str, str]] = None) -> pd.DataFrame:
    """One row per workload and machine: ``group``, ``n``, ``mix``,
    ``config``, ``ws`` (Eq. 1), ``ipc`` (the applications' IPCs summed) and
    the counters the tables explain with. ``runs`` holds every ``mix-*``
    sweep's rows with a ``config`` column. ``extra`` adds columns: name →
    counter, NaN where a run does not have it (another study's counters)."""
    ipc_alone = {}
    for _, r in alone.iterrows():
        ipc_alone[(_apps_of(r["axis.apps"])[0], int(r["axis.gpu.sms"]))] = float(r["gpu.apps.0.ipc"])
    group_of = {m: (g, n) for g, n, m in mixes(scale)}
    rows = []
    for _, r in runs.iterrows():
        apps = _apps_of(r["axis.apps"])
        g, n = group_of[apps]
        ws, ipc = 0.0, 0.0
        for i, a in enumerate(apps):
            shared = float(r[f"gpu.apps.{i}.ipc"])
            ws += shared / ipc_alone[(a, int(r[f"gpu.apps.{i}.sms"]))]
            ipc += shared
        l2 = float(r["gpu.l2_tlb.lookups"])
        rows.append({
            "group": g, "n": n, "mix": "+".join(apps), "config": r["config"], "ws": ws, "ipc": ipc,
            "cycles": float(r["gpu.cycles"]), "warp_instructions": float(sum(r[f"gpu.apps.{i}.warp_instructions"]
                                                                            for i in range(n))),
            "walks": float(r["gpu.walker.walks"]),
            "l1_tlb_hit": float(r["gpu.l1_tlb.hits"]) / max(float(r["gpu.l1_tlb.lookups"]), 1.0),
            "l2_tlb_hit": float(r["gpu.l2_tlb.hits"]) / l2 if l2 else np.nan,
            "mean_walk_cycles": float(r["gpu.walker.walk_cycles"]) / max(float(r["gpu.walker.walks"]), 1.0),
            "stall_tlb": float(r["gpu.stall.tlb"]), "stall_walk": float(r["gpu.stall.walk"]),
            "stall_memory": float(r["gpu.stall.memory"]), "stall_far_fault": float(r["gpu.stall.far_fault"]),
            "issue_cycles": float(r["gpu.sm.issue_cycles"]),
            "ldst_held_cycles": float(r["gpu.sm.ldst_held_cycles"]),
            "far_faults": float(np.nan_to_num(r.get("gpu.paging.faults", 0.0))),
            "dram_reads": float(r["gpu.dram.reads"]),
            "l2_data_hit": _rate(r["gpu.l2.data_hits"], r["gpu.l2.data_misses"]),
            "pwc_hit": _rate(r.get("gpu.pwc.hits", np.nan), r.get("gpu.pwc.misses", np.nan)),
            "touched": float(sum(r[f"gpu.apps.{i}.touched_bytes"] for i in range(n))),
            "mapped": float(sum(r[f"gpu.apps.{i}.mapped_bytes"] for i in range(n))),
            **{k: _num(r.get(c)) for k, c in (extra or {}).items()},
        })
    return pd.DataFrame(rows)


def _num(v: Any) -> float:
    return np.nan if v is None else float(v)


def _rate(hits: Any, misses: Any) -> float:
    h, m = float(hits), float(misses)
    return h / (h + m) if h + m > 0 else np.nan


def _ratio(ws: pd.DataFrame, num: str, den: str) -> pd.DataFrame:
    """Per workload: ``ws[num] / ws[den]`` (group, n, mix, ratio)."""
    p = ws.pivot_table(index=["group", "n", "mix"], columns="config", values="ws")
    p = p.dropna(subset=[num, den])
    return (p[num] / p[den]).rename("ratio").reset_index()


def _summary(r: pd.DataFrame, value: str = "ratio") -> pd.DataFrame:
    """Mean, min and max of ``value`` per (group, n), then per group, then all."""
    parts = []
    for (g, n), d in r.groupby(["group", "n"], sort=False):
        parts.append({"group": g, "n": str(n), "workloads": len(d), "mean": d[value].mean(),
                      "min": d[value].min(), "max": d[value].max()})
    for g, d in r.groupby("group", sort=False):
        parts.append({"group": g, "n": "all", "workloads": len(d), "mean": d[value].mean(),
                      "min": d[value].min(), "max": d[value].max()})
    parts.append({"group": "all", "n": "all", "workloads": len(r), "mean": r[value].mean(),
                  "min": r[value].min(), "max": r[value].max()})
    return pd.DataFrame(parts).set_index(["group", "n"])


def fig3(ws: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3: weighted speedup with 4 KiB and 2 MiB pages (no paging cost)
    over the ideal TLB's, summarised per workload group and count."""
    have = set(ws["config"])
    cols = {f"{c}_over_ideal": _summary(_ratio(ws, c, "ideal")) for c in ("4k", "2m", "4k_nonblocking") if c in have}
    if "ideal_2m" in have:
        # The baseline that differs from 2 MiB pages in translation only (the same frames).
        cols["2m_over_ideal_2m"] = _summary(_ratio(ws, "2m", "ideal_2m"))
    return pd.concat(cols, axis=1)


def fig3_apps(ws: pd.DataFrame, seeds: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3 per application alone: IPC with 4 KiB and 2 MiB pages over the
    ideal TLB's, seed 0, with the min and max over every seed run."""
    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1)]
    ipc = {(m, c, 0): v for m, c, v in one[["mix", "config", "ipc"]].itertuples(index=False)}
    for _, r in seeds.iterrows():
        ipc[(_apps_of(r["axis.apps"])[0], r["config"], int(r["seed"]))] = float(r["gpu.apps.0.ipc"])
    apps = list(dict.fromkeys(one["mix"]))
    seed_list = sorted({s for _, _, s in ipc})
    rows = []
    for a in apps:
        row: dict[str, Any] = {"app": a}
        for c, base in (("4k", "ideal"), ("2m", "ideal"), ("4k_nonblocking", "ideal"), ("2m", "ideal_2m")):
            if (a, c, 0) not in ipc or (a, base, 0) not in ipc:
                continue
            key = c if base == "ideal" else f"{c}_{base}"
            vals = [ipc[(a, c, s)] / ipc[(a, base, s)] for s in seed_list if (a, c, s) in ipc and (a, base, s) in ipc]
            row[f"{key}_over_ideal"] = ipc[(a, c, 0)] / ipc[(a, base, 0)]
            row[f"{key}_min"], row[f"{key}_max"] = min(vals), max(vals)
        row["seeds"] = len(seed_list)
        rows.append(row)
    return pd.DataFrame(rows).set_index("app")


def faster_than_ideal(ws: pd.DataFrame) -> pd.DataFrame:
    """Workloads a machine with walks runs faster than its ideal TLB over the
    same frames (4 KiB pages, either load/store unit, against ``ideal``;
    2 MiB pages against ``ideal_2m``), with the DRAM reads and the L2's data
    hit rate of both runs: where walks slow the requests down, fewer lines
    are evicted between a read and its reuse."""
    p = ws.set_index(["mix", "config"])
    rows = []
    for c, base in (("4k", "ideal"), ("4k_nonblocking", "ideal"), ("2m", "ideal_2m")):
        if base not in set(ws["config"]) or c not in set(ws["config"]):
            continue
        for m in dict.fromkeys(ws["mix"]):
            if (m, c) not in p.index or (m, base) not in p.index:
                continue
            a, b = p.loc[(m, c)], p.loc[(m, base)]
            if a["ws"] > b["ws"]:
                rows.append({"mix": m, "config": c, "ideal": base, "ratio": a["ws"] / b["ws"],
                             "dram_reads_ratio": a["dram_reads"] / b["dram_reads"] if b["dram_reads"] else np.nan,
                             "l2_data_hit": a["l2_data_hit"], "l2_data_hit_ideal": b["l2_data_hit"]})
    cols = ["mix", "config", "ideal", "ratio", "dram_reads_ratio", "l2_data_hit", "l2_data_hit_ideal"]
    return pd.DataFrame(rows, columns=cols).sort_values("ratio", ascending=False).set_index(["mix", "config"])


def fig4(ws: pd.DataFrame) -> pd.DataFrame:
    """Fig. 4: demand paging with 4 KiB and 2 MiB pages over 4 KiB without
    its cost, and 2 MiB over 4 KiB both with demand paging; serialised faults
    (the preset) and overlapped faults (homogeneous workloads only)."""
    cols = {}
    for link, suffix in (("serialised", ""), ("overlapped", "_overlap")):
        if f"4k_dp{suffix}" not in set(ws["config"]):
            continue
        cols[f"4k_dp{suffix}_over_4k"] = _summary(_ratio(ws, f"4k_dp{suffix}", "4k"))
        cols[f"2m_dp{suffix}_over_4k"] = _summary(_ratio(ws, f"2m_dp{suffix}", "4k"))
        cols[f"2m_dp{suffix}_over_4k_dp{suffix}"] = _summary(_ratio(ws, f"2m_dp{suffix}", f"4k_dp{suffix}"))
    return pd.concat(cols, axis=1)


#: Load-to-use latency of one far fault in cycles at 1.02 GHz (the preset's
#: 55 µs for 4 KiB and 318 µs for 2 MiB).
FAULT_CYCLES = {"4k": round(55.0 * 1020), "2m": round(318.0 * 1020)}


def paging(ws: pd.DataFrame) -> pd.DataFrame:
    """Why demand paging costs what it costs, each application alone: the
    cycles without paging cost, the far faults with 4 KiB and 2 MiB pages,
    and those faults' latencies end to end (faults × latency, what one
    serialised link spends) in units of the run without paging cost, beside
    the cycles each demand-paged run took in those units."""
    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1)]
    cyc = one.pivot_table(index="mix", columns="config", values="cycles")
    faults = one.pivot_table(index="mix", columns="config", values="far_faults")
    order = list(dict.fromkeys(one["mix"]))
    out = pd.DataFrame({"cycles_4k": cyc["4k"], "faults_4k": faults["4k_dp"], "faults_2m": faults["2m_dp"]})
    out["serial_4k_x"] = out["faults_4k"] * FAULT_CYCLES["4k"] / out["cycles_4k"]
    out["serial_2m_x"] = out["faults_2m"] * FAULT_CYCLES["2m"] / out["cycles_4k"]
    for c in ("4k_dp", "2m_dp", "4k_dp_overlap", "2m_dp_overlap"):
        if c in cyc:
            out[f"{c}_x"] = cyc[c] / out["cycles_4k"]
    return out.loc[order].rename_axis("app")


def pwc(ws: pd.DataFrame) -> pd.DataFrame:
    """GPU-MMU's shared L2 TLB against Power et al.'s page-walk cache: the
    weighted speedup with the L2 TLB over that with the PWC, 4 KiB pages, no
    paging cost."""
    out = pd.concat({"l2tlb_over_pwc": _summary(_ratio(ws, "4k", "pwc"))}, axis=1)
    d = ws[ws["config"] == "pwc"]
    hit = {(g, str(n)): v for (g, n), v in d.groupby(["group", "n"], sort=False)["pwc_hit"].mean().items()}
    for g, v in d.groupby("group", sort=False)["pwc_hit"].mean().items():
        hit[(g, "all")] = v
    hit[("all", "all")] = d["pwc_hit"].mean()
    out[("pwc_hit", "mean")] = [hit.get(i, np.nan) for i in out.index]
    return out


def bloat(ws: pd.DataFrame) -> pd.DataFrame:
    """Memory bloat of 2 MiB pages, each application alone: bytes mapped
    with 2 MiB pages over bytes mapped with 4 KiB pages (no paging cost)."""
    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1)]
    m = one.pivot_table(index="mix", columns="config", values="mapped")
    t = one.pivot_table(index="mix", columns="config", values="touched")
    order = list(dict.fromkeys(one["mix"]))
    out = pd.DataFrame({"touched_mib": t["4k"] / 2**20, "mapped_4k_mib": m["4k"] / 2**20,
                        "mapped_2m_mib": m["2m"] / 2**20})
    out["bloat_pct"] = 100.0 * (out["mapped_2m_mib"] / out["mapped_4k_mib"] - 1.0)
    return out.loc[order].rename_axis("app")


def translation(ws: pd.DataFrame) -> pd.DataFrame:
    """Why 4 KiB pages cost what they cost: per (group, n) under GPU-MMU 4 KiB
    (no paging cost), L1 and L2 TLB hit rates, walks per thousand warp
    instructions, the mean walk, and warp stall cycles by reason per issue
    cycle (averages over workloads)."""
    d = ws[ws["config"] == "4k"].copy()
    d["walks_per_kinst"] = 1000.0 * d["walks"] / d["warp_instructions"]
    for s in ("tlb", "walk", "memory"):
        d[f"stall_{s}_per_issue"] = d[f"stall_{s}"] / d["issue_cycles"]
    d["ldst_held_share"] = d["ldst_held_cycles"] / (d["cycles"] * SMS)
    cols = ["l1_tlb_hit", "l2_tlb_hit", "walks_per_kinst", "mean_walk_cycles", "ldst_held_share",
            "stall_tlb_per_issue", "stall_walk_per_issue", "stall_memory_per_issue"]
    return d.groupby(["group", "n"], sort=False)[cols].mean()


def workloads(ws: pd.DataFrame, scale: str) -> pd.DataFrame:
    """Each kernel alone under GPU-MMU 4 KiB (no paging cost): parameters,
    touched MiB, warp instructions, IPC, walks per thousand warp instructions."""
    from tessera.report.paper_mosaic_gpu import SUITE

    one = ws[(ws["group"] == "homogeneous") & (ws["n"] == 1) & (ws["config"] == "4k")].set_index("mix")
    params = params_for(scale)
    rows = []
    for a in apps_for(scale):
        r = one.loc[a]
        rows.append({"app": a, "stands_for": SUITE.get(a, ""),
                     "params": " ".join(f"{k}={v}" for k, v in params[a].items()) or "defaults",
                     "touched_mib": r["touched"] / 2**20, "warp_instructions": r["warp_instructions"],
                     "ipc": r["ipc"], "walks_per_kinst": 1000.0 * r["walks"] / r["warp_instructions"]})
    return pd.DataFrame(rows).set_index("app")


def tables(ws: pd.DataFrame, seeds: pd.DataFrame, scale: str) -> dict[str, pd.DataFrame]:
    """Every table of the report from the workloads' weighted speedups
    (:func:`weighted_speedups`) and the seed runs."""
    return {
        "workloads": workloads(ws, scale),
        "fig3": fig3(ws),
        "fig3_apps": fig3_apps(ws, seeds),
        "faster_than_ideal": faster_than_ideal(ws),
        "fig4": fig4(ws),
        "paging": paging(ws),
        "bloat": bloat(ws),
        "pwc": pwc(ws),
        "translation": translation(ws),
        "weighted_speedups": ws.set_index(["group", "n", "mix", "config"]),
    }


def label(df: pd.DataFrame, config: str) -> pd.DataFrame:
    out = df.copy()
    out["config"] = config
    return out


def combine(parts: Mapping[str, pd.DataFrame], prefix: str) -> pd.DataFrame:
    """The rows of every part named ``<prefix><config>``, labelled with the config."""
    frames: Sequence[pd.DataFrame] = [label(df, k[len(prefix):]) for k, df in parts.items() if k.startswith(prefix)]
    return pd.concat(frames, ignore_index=True)
