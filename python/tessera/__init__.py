"""Tessera: a mechanism-level simulator of address translation and memory management.

>>> import tessera
>>> r = tessera.simulate("sandy_bridge", synthetic={"pattern": "uniform", "accesses": 100_000, "footprint": "1GiB"})
>>> r.stats["mmu.tlb.l1_dtlb_4k.misses"]          # doctest: +SKIP
>>> r.to_pandas()                                  # doctest: +SKIP

The simulation runs in the Rust core (``tessera._core``); this package is the
API and the ``tessera`` command around it.
"""

from tessera._core import __version__
from tessera.api import (
    bench,
    bench_workload,
    compare,
    comparison_problems,
    convert_trace,
    format_size,
    gtsm_montecarlo,
    parse_count,
    parse_size,
    preset_toml,
    presets,
    read_trace,
    record,
    registry,
    resolve_config,
    simulate,
    source_id,
    stat_docs,
    stat_kinds,
    synthetic_defaults,
    trace_info,
    record_workload,
    workloads,
    gpu_kernels,
    gpu_info,
    write_gpu_trace,
)
from tessera.errors import (
    ConfigError,
    IncomparableResults,
    ResultFileError,
    SimulatedOutOfMemory,
    StoreError,
    SweepError,
    TesseraError,
    ToolError,
    TraceError,
)
from tessera.result import Result, load_result
from tessera import gtsm, results
from tessera.gpu import simulate_gpu, weighted_speedup
from tessera.report import reproduce
from tessera.sweeps import sweep

__all__ = [
    "__version__",
    "simulate",
    "bench",
    "bench_workload",
    "compare",
    "comparison_problems",
    "convert_trace",
    "format_size",
    "gtsm_montecarlo",
    "gtsm",
    "parse_count",
    "parse_size",
    "source_id",
    "preset_toml",
    "presets",
    "record",
    "registry",
    "resolve_config",
    "stat_docs",
    "stat_kinds",
    "synthetic_defaults",
    "trace_info",
    "read_trace",
    "workloads",
    "gpu_kernels",
    "gpu_info",
    "write_gpu_trace",
    "simulate_gpu",
    "weighted_speedup",
    "record_workload",
    "bench_workload",
    "reproduce",
    "sweep",
    "results",
    "Result",
    "load_result",
    "TesseraError",
    "ConfigError",
    "TraceError",
    "SimulatedOutOfMemory",
    "ToolError",
    "ResultFileError",
    "SweepError",
    "StoreError",
    "IncomparableResults",
]
