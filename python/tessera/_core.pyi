"""Type stubs of the compiled binding ``tessera._core`` (crates/tessera-py)."""

from typing import Any, Callable, Optional

__version__: str

class TesseraError(Exception): ...

class ConfigError(TesseraError):
    path: str
    allowed: list[str]

class TraceError(TesseraError):
    file: str
    location: str
    line: Optional[int]
    offset: Optional[int]

class SimulatedOutOfMemory(TesseraError):
    what: str
    requested_bytes: int
    free_bytes: int
    capacity_bytes: int

class ToolError(TesseraError):
    tool: str

def simulate(
    config_kind: str,
    config_value: str,
    overrides: list[str],
    trace: Optional[str] = None,
    synthetic: Optional[tuple[str, int, int]] = None,
    seed: int = 0,
    progress: Optional[Callable[[int, int], Any]] = None,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
    workload: Optional[tuple[str, dict[str, str]]] = None,
    warmup: Optional[str] = None,
    memory: Optional[tuple[str, bytes, bytes, bytes, bytes, bytes]] = None,
) -> dict[str, Any]:
    """Run one simulation (GIL released). Returns ``counters``, ``derived``,
    ``config_toml``, ``source``, ``seed``, ``version``, ``stats_schema`` and
    ``phases`` (``warmup`` and ``measured``: ``records``, ``instructions``)."""

def bench(
    config_kind: str,
    config_value: str,
    overrides: list[str],
    trace: Optional[str] = None,
    synthetic: Optional[tuple[str, int, int]] = None,
    seed: int = 0,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
    workload: Optional[tuple[str, dict[str, str]]] = None,
    memory: Optional[tuple[str, bytes, bytes, bytes, bytes, bytes]] = None,
) -> dict[str, Any]: ...
def read_trace(
    path: str,
    limit: Optional[int] = None,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
) -> dict[str, bytes]:
    """The first ``limit`` records of a trace as little-endian column bytes."""

def record(
    output: str,
    command: list[str],
    backend: str = "lackey",
    skip: int = 0,
    max_accesses: Optional[int] = None,
    ifetch: bool = True,
    status: Optional[Callable[[str], Any]] = None,
    progress: Optional[Callable[[int, int], Any]] = None,
    plugin_src: Optional[str] = None,
) -> dict[str, Any]:
    """Record a program's accesses into a native trace (GIL released)."""

def presets() -> list[tuple[str, str, str]]:
    """``(name, summary, toml)`` of every shipped preset."""

def resolve_config(config_kind: str, config_value: str, overrides: list[str] = ...) -> str: ...
#: The stats schema this core writes (``docs/stats.md``).
STATS_SCHEMA: int

def stat_docs(config_kind: str, config_value: str, overrides: list[str] = ...) -> dict[str, tuple[str, str, str]]:
    """``{name: (unit, description, kind)}``, kind ``count``, ``gauge`` or ``derived``."""
def renamed_stats() -> dict[str, str]:
    """Schema-1 derived-metric names → schema-2 names."""
def parse_warmup(text: str) -> Optional[str]:
    """A warm-up's canonical spelling, or None for none; ConfigError at ``warmup`` if malformed."""
def derived_docs() -> dict[str, tuple[str, str]]: ...
def compare(
    base_counters: dict[str, int],
    base_derived: dict[str, float],
    other_counters: dict[str, int],
    other_derived: dict[str, float],
) -> dict[str, Any]: ...
def trace_info(
    path: str, champsim_ifetch: Optional[bool] = None, champsim_access_size: Optional[int] = None
) -> dict[str, Any]: ...
def trace_convert(
    src: str,
    dst: str,
    to: str,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
) -> dict[str, Any]: ...
def registry() -> list[tuple[str, list[tuple[str, str]]]]: ...
def parse_size(text: str) -> int: ...
def parse_count(text: str) -> int: ...
def format_size(bytes: int) -> str: ...
def synthetic_defaults() -> dict[str, Any]: ...
def workloads() -> list[dict[str, Any]]: ...
def record_workload(
    name: str,
    params: dict[str, str],
    seed: int,
    path: str,
    progress: Optional[Callable[[int, int], Any]] = None,
) -> dict[str, Any]: ...
def bench_workload(name: str, params: dict[str, str], seed: int = 0) -> dict[str, Any]: ...
def gpu_kernels() -> list[dict[str, Any]]: ...
def gpu_write_trace(kernel: str, params: dict[str, str], seed: int, out: str, xz: bool) -> dict[str, Any]: ...
def gpu_info(
    page_size: str,
    kernel: Optional[str] = ...,
    params: dict[str, str] = ...,
    seed: int = ...,
    trace: Optional[str] = ...,
) -> dict[str, Any]: ...
def gpu_simulate(
    config_kind: str,
    config_value: str,
    overrides: list[str],
    apps: list[tuple[str, str, dict[str, str]]],
    seed: int = ...,
) -> dict[str, Any]: ...
def gtsm_montecarlo(
    parts: list[str],
    seed: int,
    slices: Optional[int] = ...,
    threads: Optional[int] = ...,
    fig3: Optional[list[float]] = ...,
    fig7: Optional[list[float]] = ...,
    fig14: Optional[list[float]] = ...,
) -> dict[str, Any]: ...
