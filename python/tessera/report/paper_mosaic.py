"""The numbers of "Mosaic Pages: Big TLB Reach with Small Pages" (Gosakan et
al., ASPLOS 2023, DOI 10.1145/3582016.3582021) that the mosaic-pages report
puts beside ours, each with the table, figure or section it comes from.

Fig. 6 is a bar chart without printed values, so for it we keep only what
the text of §4.1 states (ranges and orderings). Tables 3 and 4 are printed,
and are copied here cell by cell.
"""

from __future__ import annotations

__all__ = [
    "CITATION",
    "TABLE2_FOOTPRINT_MIB",
    "TABLE2_INSTRUCTIONS_G",
    "FIG6_CLAIMS",
    "FIG6_FA_VANILLA_BEATS",
    "FIG6_MOSAIC4_REDUCTION",
    "FIG6_MOSAIC64_REDUCTION",
    "FIG6_GUPS_REDUCTION",
    "TABLE3",
    "TABLE3_POOL_MIB",
    "TABLE3_LINUX_SWAP_START",
    "TABLE4",
    "TABLE4_MEMORY_MIB",
    "ARITIES",
    "ASSOCIATIVITIES",
]

CITATION = (
    'K. Gosakan, J. Han, W. Kuszmaul et al., "Mosaic Pages: Big TLB Reach with Small Pages", '
    "ASPLOS 2023, DOI [10.1145/3582016.3582021](https://doi.org/10.1145/3582016.3582021)"
)

#: Fig. 6's axes: mosaic arities (sub-pages per TLB entry) and TLB ways
#: (1024 = fully associative for the 1024-entry TLB).
ARITIES = (4, 8, 16, 32, 64)
ASSOCIATIVITIES = (1, 2, 4, 8, 1024)

#: Table 2: memory footprint (MiB) and instructions simulated (billions) in gem5.
TABLE2_FOOTPRINT_MIB = {"graph500": 1010, "btree": 2618, "gups": 8207, "xsbench": 1012}
TABLE2_INSTRUCTIONS_G = {"graph500": 16.0, "btree": 54.3, "gups": 23.2, "xsbench": 20.0}

#: §4.1: "Even with an arity of only 4 (Mosaic-4), Mosaic shows a substantial
#: reduction of 6–81% in TLB misses for Graph500, BTree, and XSBench workloads,
#: and with an arity of 64 (Mosaic-64) reduces misses by 11–98%." (%, low, high)
FIG6_MOSAIC4_REDUCTION = (6.0, 81.0)
FIG6_MOSAIC64_REDUCTION = (11.0, 98.0)
#: §4.1: "reducing them ... about a quarter in GUPS" (the best case on GUPS).
FIG6_GUPS_REDUCTION = 25.0

#: The statements of §4.1 about Fig. 6 that the report checks one by one.
FIG6_CLAIMS = (
    "Mosaic-4 reduces TLB misses by 6–81 % on Graph500, BTree and XSBench",
    "Mosaic-64 reduces TLB misses by 11–98 % on Graph500, BTree and XSBench",
    "Mosaic almost completely eliminates TLB misses in Graph500 and XSBench",
    "Mosaic reduces TLB misses by up to about half in BTree",
    "Mosaic reduces TLB misses by about a quarter in GUPS",
    "A direct-mapped Mosaic-8 TLB misses less than a fully associative vanilla TLB on Graph500, BTree and XSBench",
    "Mosaic is not significantly impacted by TLB associativity",
    "Fully associative vanilla beats Mosaic-4 on Graph500 and Mosaic-4…16 on GUPS (the paper blames the kernel's huge pages)",
    "With huge pages fully disabled, every Mosaic arity misses less than vanilla (the paper's smaller experiments)",
)
#: §4.1: the arities a fully associative vanilla TLB beat, per workload.
FIG6_FA_VANILLA_BEATS: dict[str, tuple[int, ...]] = {"graph500": (4,), "gups": (4, 8, 16)}


#: Table 3: the 4 GiB mosaic pool (16384 buckets of 64 frames).
TABLE3_POOL_MIB = 4096
#: §4.2: "Linux with the default allocator began swapping once memory
#: utilization reached 99.2%".
TABLE3_LINUX_SWAP_START = 99.2

#: Table 3: (workload, footprint MiB) → (first conflict %, ±, steady-state
#: utilisation %, ±); mean ± standard deviation of ten runs.
TABLE3: dict[tuple[str, int], tuple[float, float, float, float]] = {
    ("graph500", 4158): (98.07, 0.04, 99.22, 0.01),
    ("xsbench", 4156): (98.02, 0.08, 99.21, 0.01),
    ("btree", 4154): (98.03, 0.10, 99.21, 0.01),
    ("graph500", 4413): (98.02, 0.06, 99.79, 0.01),
    ("xsbench", 4412): (98.04, 0.13, 99.73, 0.01),
    ("btree", 4409): (98.00, 0.06, 99.74, 0.01),
    ("graph500", 4669): (98.05, 0.04, 99.99, 0.00),
    ("xsbench", 4668): (98.01, 0.02, 99.92, 0.01),
    ("btree", 4664): (98.04, 0.04, 99.96, 0.01),
    ("graph500", 4924): (98.05, 0.03, 100.00, 0.00),
    ("xsbench", 4924): (98.05, 0.07, 99.98, 0.01),
    ("btree", 4919): (98.00, 0.07, 99.99, 0.00),
}

#: Table 4: memory given to the workload (MiB), Linux and Mosaic alike.
TABLE4_MEMORY_MIB = 4096

#: Table 4: workload → [(footprint MiB, Linux swap I/O K pages, Mosaic swap
#: I/O K pages, difference %)], average of five runs; difference = % less
#: swap I/O with Mosaic (higher is better).
TABLE4: dict[str, list[tuple[int, float, float, float]]] = {
    "graph500": [
        (4158, 1031.10, 2043.86, -98.22),
        (4413, 29908.91, 24644.36, 17.60),
        (4669, 62785.90, 44585.39, 28.99),
        (4924, 79450.93, 57818.43, 27.23),
        (5180, 82670.25, 68392.23, 17.27),
        (5436, 85026.79, 79061.77, 7.02),
        (5691, 93284.21, 90125.03, 3.39),
        (5947, 104071.54, 102121.28, 1.87),
        (6203, 114875.52, 113780.59, 0.95),
        (6459, 125003.06, 119083.55, 4.74),
    ],
    "xsbench": [
        (4156, 337.55, 391.79, -16.07),
        (4412, 1465.91, 1279.11, 12.74),
        (4668, 2726.31, 2404.34, 11.81),
        (4924, 4071.57, 3693.00, 9.30),
        (5180, 5416.14, 5043.78, 6.88),
        (5435, 6778.77, 6443.30, 4.95),
        (5691, 8141.77, 7910.56, 2.84),
        (5947, 9538.62, 9421.29, 1.23),
        (6203, 10802.44, 10678.59, 1.15),
        (6459, 11871.56, 11888.83, -0.15),
    ],
    "btree": [
        (4154, 983.57, 1166.02, -18.55),
        (4409, 5790.18, 5127.18, 11.45),
        (4664, 11609.53, 10338.29, 10.95),
        (4919, 18142.24, 15605.34, 13.98),
        (5175, 25256.59, 21081.30, 16.53),
        (5430, 32684.41, 26973.25, 17.47),
        (5685, 40369.66, 33539.42, 16.92),
        (5940, 48305.64, 41217.21, 14.67),
        (6196, 55108.28, 48766.51, 11.51),
        (6451, 60877.65, 54952.76, 9.73),
    ],
}


def table4_ratio(footprint_mib: float) -> float:
    """Footprint ÷ memory for a Table 4 row (memory is 4096 MiB throughout)."""
    return footprint_mib / TABLE4_MEMORY_MIB
