"""The numbers of "Supporting Superpages in Non-Contiguous Physical Memory"
(Du, Zhou, Childers, Mossé, Melhem; HPCA 2015, DOI 10.1109/HPCA.2015.7056035)
that the gtsm report puts beside ours, each with the table, figure or
section it comes from.

Figs. 11–13 and 15–18 are bar and line charts without printed values, so
for them we keep only what the text of §4–5 states (ranges, averages and
orderings). Table 5 is printed and is copied cell by cell; Fig. 14's values
are the closed forms Tessera's Monte Carlo checks (docs/gtsm.md).
"""

from __future__ import annotations

__all__ = [
    "CITATION",
    "WORKLOAD_NAMES",
    "TABLE5",
    "SLOW_GROUP",
    "FAST_GROUP",
    "FIG11_SLOW_DRAM_SHARE",
    "FIG11_MIS_L2_SHARE",
    "FIG12_SLOW_PENALTY_DROP",
    "FIG13_GT4M_OF_IDEAL",
    "FIG13_SLOW_GAIN",
    "FIG13_FAST_GAIN",
    "FIG13_MIS_GAIN",
    "FIG13_CLAIMS",
    "FIG15_GUPS_GT4M_GAIN",
    "FIG15_GUPS_TABLE_GIB",
    "FIG15_4K_DROP",
    "FIG15_64G_GT4M_OVER_GT1M",
    "FIG16_6CYCLE_LOSS",
    "FIG17_MAX_GAIN",
    "FIG18_GAIN",
    "FIG3_CLEAN_2M",
    "FIG14_SHARE",
    "DECODE_CYCLES",
    "PDE_ENTRIES",
]

CITATION = (
    'Y. Du, M. Zhou, B. R. Childers, D. Mossé, R. Melhem, "Supporting Superpages in Non-Contiguous Physical '
    'Memory", HPCA 2015, DOI [10.1109/HPCA.2015.7056035](https://doi.org/10.1109/HPCA.2015.7056035)'
)

#: Tessera's workload → the paper's name for it (Table 5).
WORKLOAD_NAMES = {
    "gups": "GUPS",
    "canneal": "Canneal",
    "dict": "dict",
    "bfs": "BFS",
    "setcover": "setCover",
    "mst": "MST",
    "spmv": "SPMV",
    "matching": "matching",
    "mis": "MIS",
}

#: Table 5: (memory reads PKI, TLB-miss PKI after the 512-entry L2 TLB with
#: 4 KB pages, with 2 MB pages, touched GB, total GB), 2 B instructions
#: after initialisation.
TABLE5: dict[str, tuple[float, float, float, float, float]] = {
    "GUPS": (17.9, 17.9, 13.4, 4.0, 4.1),
    "Canneal": (24.4, 21.2, 2.9, 3.7, 4.0),
    "dict": (23.1, 21.4, 0.0, 0.7, 6.5),
    "BFS": (93.2, 88.1, 4.4, 1.4, 7.4),
    "setCover": (60.4, 49.4, 0.0, 0.9, 7.8),
    "MST": (50.0, 43.2, 0.0, 1.0, 13.0),
    "SPMV": (128.7, 113.5, 0.0, 1.7, 7.3),
    "matching": (119.1, 109.7, 0.0, 0.9, 6.2),
    "MIS": (144.4, 124.3, 0.0, 1.3, 7.3),
}

#: §4.3 (Fig. 11): the "slower PT access" group, with more than 10 % of PTE
#: references served by memory, and the group whose PTEs are mostly cached.
SLOW_GROUP = ("gups", "canneal", "dict", "bfs")
FAST_GROUP = ("setcover", "mst", "spmv", "matching", "mis")
#: §4.3: "more than 10%" of the slow group's PTE references go to memory.
FIG11_SLOW_DRAM_SHARE = 10.0
#: §5.2: "MIS has 90% PTE accesses to the L2 cache".
FIG11_MIS_L2_SHARE = 90.0

#: §5.1 (Fig. 12): for GUPS, Canneal, dict and BFS "average TLB miss penalty
#: reduces by 40-160 CPU cycles" (cycles, low, high).
FIG12_SLOW_PENALTY_DROP = (40.0, 160.0)

#: §5.2 (Fig. 13): "On average, GT-PDE-4MB achieves 96.8% performance of Ideal".
FIG13_GT4M_OF_IDEAL = 96.8
#: §5.2: IPC gain over 4 KB of the slow group "20% to 60%", of the fast
#: group "approximately 2% to 8%", MIS the lowest at 2.6 % (%, low, high).
FIG13_SLOW_GAIN = (20.0, 60.0)
FIG13_FAST_GAIN = (2.0, 8.0)
FIG13_MIS_GAIN = 2.6

#: The statements of §5.2 about Fig. 13 that the report checks one by one.
FIG13_CLAIMS = (
    "On average GT-PDE-4MB achieves 96.8 % of the IPC of ideal 2 MB superpages",
    "GT-PDEs gain 20–60 % IPC over 4 KB pages on GUPS, Canneal, BFS and dict",
    "GT-PDEs gain about 2–8 % IPC over 4 KB pages on setCover, MST, SPMV, matching and MIS",
    "MIS has the lowest gain (2.6 %)",
    "GT-PDE-1MB, 2MB and 4MB perform alike",
    "P-GT-PDEs perform like GT-PDEs at these sizes",
)

#: §5.4 (Fig. 15, GUPS): at an 8 GB table GT-PDE-4MB's IPC is 63.4 % above
#: 4 KB pages'; from 64 MB to 8 GB or more, 4 KB pages lose 40 % or more of
#: their IPC; at 64 GB GT-PDE-4MB is 16.6 % above GT-PDE-1MB.
FIG15_GUPS_GT4M_GAIN = 63.4
FIG15_GUPS_TABLE_GIB = 8
FIG15_4K_DROP = 40.0
FIG15_64G_GT4M_OVER_GT1M = 16.6

#: §5.5 (Fig. 16): 6 cycles of GT-PDE translation instead of 3 costs "less than 1%".
FIG16_6CYCLE_LOSS = 1.0
#: §5.6 (Fig. 17): a larger PDE cache than 32 entries gains "approximately 2%" at most.
FIG17_MAX_GAIN = 2.0
#: §5.7 (Fig. 18): 8× and 32× coalescing in the L2 TLB: gain "virtually nonexistent".
FIG18_GAIN = 0.0

#: Fig. 3: the probability that a 2 MB block holds no retired page, by
#: retired fraction (closed form (1 − r)^512; the paper: "< 8 %" at 0.5 %).
FIG3_CLEAN_2M = {0.005: 0.0768, 0.01: 0.0058, 0.02: 0.0000}
#: Fig. 14: the share of memory capacity usable as superpages by retired
#: fraction (closed forms, docs/gtsm.md): 2 MB pages and GT-PDE-4MB/2MB/1MB.
FIG14_SHARE: dict[str, dict[float, float]] = {
    "thp": {0.005: 0.0768, 0.01: 0.0058, 0.02: 0.0000},
    "gt_pde_4m": {0.005: 0.5000, 0.01: 0.4999, 0.02: 0.3011},
    "gt_pde_2m": {0.005: 0.5029, 0.01: 0.5000, 0.02: 0.4999},
    "gt_pde_1m": {0.005: 0.5384, 0.01: 0.5029, 0.02: 0.5000},
}

#: Fig. 16's extra GT-PDE translation cycles and Fig. 17's PDE-cache sizes.
DECODE_CYCLES = (3, 4, 5, 6)
PDE_ENTRIES = (32, 64, 128, 256)
