"""The numbers of "Batch-Aware Unified Memory Management in GPUs for Irregular
Workloads" (Kim et al., ASPLOS 2020, :data:`CITATION`) that the uvm-batching
report puts beside ours, each with the figure or section it comes from.

The paper's Figs. 11–18 are bar and line charts without printed values; the
values kept here are the ones its text states (§5.2, §6). Where the text
gives none for a figure, the report compares the direction it describes.
"""

from __future__ import annotations

__all__ = [
    "CITATION",
    "FOOTPRINT_MB",
    "WORKLOADS",
    "MEMORY_SHARES",
    "TO_UE_OVER_BASE",
    "TO_UE_OVER_COMPRESSION",
    "TO_UE_OVER_ETC",
    "TO_OVER_BASE",
    "UE_ON_TOP_OF_TO",
    "TO_BATCHES_CHANGE",
    "TO_FAULTS_PER_BATCH",
    "TO_UE_BATCH_TIME_VS_TO",
    "TO_UE_BATCH_TIME_VS_BASE",
    "UE_BFS_DWC",
    "OVERSUB_50_LOSS",
    "UE_AT_RATIO_01",
    "HANDLING_US",
    "TO_NO_PAGING_LOSS",
]

CITATION = (
    'H. Kim, J. Sim, P. Gera, R. Hadidi and H. Kim, "Batch-Aware Unified Memory Management in GPUs for Irregular '
    'Workloads", ASPLOS 2020, DOI [10.1145/3373376.3378529](https://doi.org/10.1145/3373376.3378529)'
)

#: §5.1: the eleven GraphBIG workloads' footprints, MB: range and mean.
FOOTPRINT_MB = {"min": 26, "max": 349, "mean": 74}
#: §5.1, in the order of its figures.
WORKLOADS = ("BC", "BFS-DWC", "BFS-TA", "BFS-TF", "BFS-TTC", "BFS-TWC", "GC-DTC", "GC-TTC", "KCORE", "SSSP-TWC", "PR")
#: §5.1: GPU memory as a share of each workload's footprint.
MEMORY_SHARES = (0.5, 0.75)

#: §5.2 (Fig. 11): TO+UE's average speedup over the baseline (Zheng et al.'s
#: prefetching), over the baseline with PCIe compression, and over ETC.
TO_UE_OVER_BASE = 2.0
TO_UE_OVER_COMPRESSION = 1.81
TO_UE_OVER_ETC = 1.79
#: §5.2: "thread oversubscription achieves 22 % performance improvement and
#: unobtrusive eviction 61 % additional".
TO_OVER_BASE = 1.22
UE_ON_TOP_OF_TO = 1.61
#: §5.2 (Figs. 12, 13): batches −51 % on average with TO, 2.27× the faults per batch.
TO_BATCHES_CHANGE = -0.51
TO_FAULTS_PER_BATCH = 2.27
#: §5.2 (Fig. 14): with TO, UE cuts the average batch processing time by 60 %
#: (our reading: against TO alone); TO+UE's is 27 % below the baseline's.
TO_UE_BATCH_TIME_VS_TO = -0.60
TO_UE_BATCH_TIME_VS_BASE = -0.27
#: §5.2: UE on BFS-DWC, "a 4.13x performance improvement".
UE_BFS_DWC = 4.13
#: §3.2 (Fig. 8): 50 % oversubscription against unlimited memory, −46 % on average.
OVERSUB_50_LOSS = -0.46
#: §6.3 (Fig. 17): UE's average speedup at an oversubscription ratio of 0.1.
UE_AT_RATIO_01 = 1.63
#: §6.4 (Fig. 18): the fault handling times; the gains "increase as the
#: GPU runtime fault handling time becomes larger" (no value printed).
HANDLING_US = (20, 30, 40, 50)
#: §3.3 (Fig. 5): one extra thread block per SM with context switching and
#: no paging, −49 % on average.
TO_NO_PAGING_LOSS = -0.49
