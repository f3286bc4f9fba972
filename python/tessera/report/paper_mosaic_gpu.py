"""The numbers of "Mosaic: A GPU Memory Manager with Application-Transparent
Support for Multiple Page Sizes" (Ausavarungnirun et al., MICRO 2017, DOI
10.1145/3123939.3123975) that the mosaic-motivation (§3) and mosaic-gpu (§6) reports put beside ours,
each with the section it comes from.

Figs. 3 and 4 are bar charts; the values kept here are the ones §3 states in
its text.
"""

from __future__ import annotations

__all__ = [
    "CITATION",
    "FIG3_4K_LOSS",
    "FIG3_2M_WITHIN",
    "FIG4_4K_DP_LOSS",
    "FIG4_2M_VS_4K_DP_LOSS",
    "BLOAT_MEAN",
    "BLOAT_MAX",
    "L2TLB_OVER_PWC",
    "WORKING_SET_MB",
    "SUITE",
    "MOSAIC_OVER_GPUMMU",
    "MOSAIC_WITHIN_IDEAL",
    "WORKLOADS",
    "FIG11",
    "MOSAIC_DP_OVER_GPUMMU_NODP",
    "FIG13_GPUMMU_L2_HIT",
    "FIG13_MOSAIC_MISS_BELOW",
    "FIG14A_MOSAIC_8_LOSS",
    "FIG14A_ENTRIES",
    "FIG14B_BOTH_SENSITIVE",
    "FIG15_MOSAIC_SENSITIVE",
    "FIG15_GPUMMU_INSENSITIVE",
]

CITATION = (
    'R. Ausavarungnirun, J. Landgraf, V. Miller, S. Ghose, J. Gandhi, C. J. Rossbach and O. Mutlu, '
    '"Mosaic: A GPU Memory Manager with Application-Transparent Support for Multiple Page Sizes", '
    "MICRO 2017, DOI [10.1145/3123939.3123975](https://doi.org/10.1145/3123939.3123975)"
)

#: §3.1, Fig. 3: GPU-MMU with 4 KiB pages and no demand-paging cost loses
#: 48.1 % (average) against the ideal TLB.
FIG3_4K_LOSS = 48.1
#: §3.1: with 2 MiB pages, "within 2 %" of the ideal TLB.
FIG3_2M_WITHIN = 2.0
#: §3.2, Fig. 4: demand paging with 4 KiB pages against 4 KiB without its
#: cost: −40.0 % for one application, −82.3 % for five (applications: loss %).
FIG4_4K_DP_LOSS = {1: 40.0, 5: 82.3}
#: §3.2: 2 MiB pages against 4 KiB pages, both with demand paging: −92.5 %
#: for one application, −98.0 % for two, −99.8 % for five.
FIG4_2M_VS_4K_DP_LOSS = {1: 92.5, 2: 98.0, 5: 99.8}
#: §3.2 "Memory Bloat": memory allocated with 2 MiB pages against 4 KiB pages,
#: applications alone: +40.2 % on average, +367 % at worst.
BLOAT_MEAN = 40.2
BLOAT_MAX = 367.0
#: §3.1: a shared L2 TLB instead of a page-walk cache raises average
#: performance by 14 % (not shown in a figure).
L2TLB_OVER_PWC = 14.0
#: §3.2 and §5: single applications' working sets with 4 KiB pages: 10 to
#: 362 MB, 81.5 MB on average; workloads 10 MB to 2 GB, 217 MB on average.
WORKING_SET_MB = {"app_min": 10, "app_max": 362, "app_mean": 81.5, "workload_mean": 217}

#: §5: the 27 applications come from Parboil, SHOC, LULESH, Rodinia and the
#: CUDA SDK; the released list names 30 (3DS, BFS2, BLK, BP, CFD, CONS, FFT,
#: FWT, GUPS, HISTO, HS, JPEG, LIB, LPS, LUD, LUH, MM, MUM, NN, NW, QTC, RAY,
#: RED, SAD, SC, SCAN, SCP, SPMV, SRAD, TRD). Our kernel → the application of
#: that list it stands for.
SUITE = {
    "vector_add": "BLK (CUDA SDK; a streaming kernel)",
    "reduction": "RED (SHOC)",
    "scan": "SCAN (SHOC)",
    "histogram": "HISTO (Parboil)",
    "spmv_csr": "SPMV (Parboil)",
    "gups": "GUPS",
    "bfs": "BFS2 (Rodinia)",
    "matrix_multiply": "MM (CUDA SDK)",
    "hotspot": "HS (Rodinia)",
    "srad": "SRAD (Rodinia)",
    "needleman_wunsch": "NW (Rodinia)",
}

# ------------------------------------------------------------------ §6, the evaluation (mosaic-gpu report)

#: §6.1, Fig. 8: Mosaic against GPU-MMU (both with demand paging), averaged
#: over the 135 homogeneous workloads; §6.2, Fig. 9: over the 100
#: heterogeneous ones.
MOSAIC_OVER_GPUMMU = {"homogeneous": 55.5, "heterogeneous": 29.7}
#: §6.1 and §6.2: Mosaic comes within this many percent of the ideal TLB.
MOSAIC_WITHIN_IDEAL = {"homogeneous": 6.8, "heterogeneous": 15.4}
#: §5 and §6: the paper's workload counts (27 applications × 1–5 copies; 25 random
#: sets of each count 2–5).
WORKLOADS = {"homogeneous": 135, "heterogeneous": 100}
#: §6.2, Fig. 11: the 350 applications of the heterogeneous workloads, IPC
#: under Mosaic over IPC under GPU-MMU: the share improved, the range and mean
#: of the ratio (percent: 66.3 % to 860 %), the worst loss, and the shares of
#: applications within 90 / 80 / 70 % of their ideal-TLB IPC.
FIG11 = {"apps": 350, "improved_pct": 93.6, "min_pct": 66.3, "max_pct": 860.0, "mean_pct": 133.0,
         "worst_loss_pct": 33.6, "within_ideal_pct": {90: 48.0, 80: 68.9, 70: 82.3}}
#: §6.2, Fig. 12: Mosaic (with demand paging) against GPU-MMU without demand
#: paging: +58.5 % homogeneous, +47.5 % heterogeneous; "demand paging has
#: little impact on the weighted speedup".
MOSAIC_DP_OVER_GPUMMU_NODP = {"homogeneous": 58.5, "heterogeneous": 47.5}
#: §6.3, Fig. 13 (214 of 235 workloads, those with an L2 TLB hit rate below
#: 98 %): GPU-MMU's L2 TLB hit rate by number of applications (the text gives
#: 2 and 5), and Mosaic's miss rate, below 1 % at L1 and L2.
FIG13_GPUMMU_L2_HIT = {2: 81.0, 5: 62.0}
FIG13_MOSAIC_MISS_BELOW = 1.0
#: §6.3, Fig. 14a: Mosaic with 8 L1 TLB base-page entries per SM instead of
#: 128 loses 7.6 % on average; GPU-MMU "scales poorly" (no number given).
FIG14A_MOSAIC_8_LOSS = 7.6
FIG14A_ENTRIES = (128, 64, 32, 16, 8)
#: §6.3, Figs. 14b and 15: the text gives no numbers, only these findings
#: (quoted as the report prints them).
FIG14B_BOTH_SENSITIVE = ("the performance of both GPU-MMU and Mosaic is sensitive to the number of L2 TLB base page "
                         "entries")
FIG15_MOSAIC_SENSITIVE = ("for both the L1 and L2 TLBs, Mosaic is sensitive to the number of large page entries "
                          "... not as high as Mosaic's sensitivity to L2 TLB base page entries")
FIG15_GPUMMU_INSENSITIVE = ("GPU-MMU is insensitive to the large page entry count ... makes no use of the large page "
                            "entries")
#: §6.4, Table 2: memory bloat of Mosaic with CAC over a 4 KiB-only manager at
#: fragmentation index 100 %, by large-page-frame occupancy (%).
TABLE2_BLOAT = {0.01: 10.66, 0.10: 7.56, 0.25: 7.20, 0.35: 5.22, 0.50: 3.37, 0.75: 2.22}
#: §6.4, Fig. 16 (no numbers in the text): "minimal performance impact when
#: the fragmentation index is less than 90 %"; above it CAC helps, less so
#: towards 100 %; CAC-BC "is effective when occupancy is no greater than
#: 25 %"; beyond 35 % the benefits of CAC and CAC-BC decrease.
FIG16_FLAT_BELOW_INDEX = 0.9
FIG16_BC_EFFECTIVE_UP_TO = 0.25
