"""The Python API: run simulations and work with configs, traces and results.

Everything that simulates or validates happens in the Rust core
(``tessera._core``); these functions only put the arguments in the shape the
core takes and wrap what it returns.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Callable, Optional, Union

from tessera import _core, identity, memory
from tessera.config import ConfigLike, source_of
from tessera.errors import IncomparableResults
from tessera.result import Result, load_result

__all__ = [
    "simulate",
    "bench",
    "compare",
    "comparison_problems",
    "presets",
    "resolve_config",
    "stat_docs",
    "stat_kinds",
    "registry",
    "trace_info",
    "read_trace",
    "convert_trace",
    "record",
    "synthetic_defaults",
    "parse_size",
    "parse_count",
    "format_size",
    "source_id",
    "workloads",
    "record_workload",
    "bench_workload",
    "gtsm_montecarlo",
]

PathLike = Union[str, "os.PathLike[str]"]
ProgressFn = Callable[[int, int], Any]
SyntheticLike = Mapping[str, Any]

_SYNTHETIC_KEYS = ("pattern", "accesses", "footprint")


def parse_size(size: Union[int, str]) -> int:
    """A byte count as an int, or a string such as ``"1GiB"``, ``"64 MiB"`` or
    ``"4096"`` (binary units B, KiB, MiB, GiB, TiB, PiB; parsed by the core,
    exactly as sizes in machine files are)."""
    if isinstance(size, bool):
        raise TypeError("a size must be an int or a string like '1GiB'")
    if isinstance(size, int):
        if size < 0:
            raise ValueError(f"a size cannot be negative ({size})")
        return size
    if isinstance(size, str):
        return _core.parse_size(size)
    raise TypeError(f"a size must be an int or a string like '1GiB', not {type(size).__name__}")


def parse_count(count: Union[int, float, str]) -> int:
    """A count as an int: ``1000000``, ``"1_000_000"``, ``"1e6"``, ``"2.5M"``,
    ``"10k"`` (k, M, G are decimal). Parsed by the core, exactly as workload
    parameters are; a value that is not a whole number (``"1.5"``) or is
    negative is a :class:`ValueError`. A whole float (TOML's ``1e6``) is
    accepted."""
    if isinstance(count, bool):
        raise TypeError("a count must be an int or a string like '1e6'")
    if isinstance(count, int):
        if count < 0:
            raise ValueError(f"a count cannot be negative ({count})")
        return count
    if isinstance(count, float):
        if not (count >= 0 and count.is_integer()):
            raise ValueError(f"{count!r} is not a count: it must be a whole number of at least 0")
        return int(count)
    if isinstance(count, str):
        return _core.parse_count(count)
    raise TypeError(f"a count must be an int or a string like '1e6', not {type(count).__name__}")


def format_size(nbytes: int) -> str:
    """A byte count for people: ``"64 KiB"``, ``"1.5 GiB"``, ``"512 B"`` (the
    form every Tessera message and table uses)."""
    return _core.format_size(int(nbytes))


def synthetic_defaults() -> dict[str, Any]:
    """The core's default synthetic stream parameters (pattern, accesses, footprint, ...)."""
    return dict(_core.synthetic_defaults())


def _config_error(path: str, problem: str, allowed: Iterable[str] = ()) -> Exception:
    """A :class:`~tessera.ConfigError` at key ``path``, as the core raises them
    (bad input to the API is a config error, like the same input in a file)."""
    e = _core.ConfigError(f"config error at `{path}`: {problem}")
    e.path, e.allowed = path, list(allowed)
    return e


def _synthetic_args(synthetic: SyntheticLike) -> tuple[str, int, int]:
    unknown = sorted(set(synthetic) - set(_SYNTHETIC_KEYS))
    if unknown:
        raise _config_error(
            "synthetic", f"unknown parameter(s) {', '.join(unknown)} (allowed: {', '.join(_SYNTHETIC_KEYS)})", _SYNTHETIC_KEYS
        )
    defaults = synthetic_defaults()
    pattern = synthetic.get("pattern", defaults["pattern"])
    try:
        accesses = parse_count(synthetic.get("accesses", defaults["accesses"]))
    except (TypeError, ValueError) as e:
        raise _config_error("synthetic.accesses", str(e)) from None
    try:
        footprint = parse_size(synthetic.get("footprint", defaults["footprint"]))
    except (TypeError, ValueError) as e:
        raise _config_error("synthetic.footprint", str(e)) from None
    if not isinstance(pattern, str):
        raise _config_error("synthetic.pattern", f"must be a string such as 'uniform', not {pattern!r}")
    return (pattern, accesses, footprint)


def _param_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _workload_args(workload: str, params: Optional[Mapping[str, Any]]) -> tuple[str, dict[str, str]]:
    if not isinstance(workload, str):
        raise TypeError(f"workload must be a name such as 'gups', not {type(workload).__name__}")
    return (workload, {str(k): _param_value(v) for k, v in (params or {}).items()})


def _source_args(
    trace: Optional[PathLike],
    synthetic: Optional[SyntheticLike],
    workload: Optional[str] = None,
    params: Optional[Mapping[str, Any]] = None,
) -> tuple[Optional[str], Optional[tuple[str, int, int]], Optional[tuple[str, dict[str, str]]]]:
    given = sum(x is not None for x in (trace, synthetic, workload))
    if given != 1:
        raise ValueError("give exactly one of `trace` (a path), `synthetic` (a dict) and `workload` (a name)")
    if params is not None and workload is None:
        raise ValueError("`params` apply only to a `workload`")
    if trace is not None:
        return (os.fspath(trace), None, None)
    if workload is not None:
        return (None, None, _workload_args(workload, params))
    assert synthetic is not None
    return (None, _synthetic_args(synthetic), None)


def _source_label(trace: Optional[str], synth: Any, wl: Any) -> str:
    if trace:
        return os.path.basename(trace)
    if wl:
        return wl[0]
    return f"synthetic {synth[0] if synth else ''}"


def _overrides(overrides: Union[Iterable[str], Mapping[str, Any]]) -> list[str]:
    """``["a.b=1", ...]`` or ``{"a.b": 1}`` → ``["a.b=1", ...]`` (values in TOML syntax)."""
    if isinstance(overrides, str):
        raise TypeError("overrides must be a list of 'dotted.key=value' strings or a dict, not a single string")
    if isinstance(overrides, Mapping):
        from tessera.config import _value

        return [f"{k}={_value(v, k)}" for k, v in overrides.items()]
    return [str(o) for o in overrides]


#: Seeds are unsigned 64-bit numbers in the core.
SEED_MAX = 2**64 - 1


def seed_problem(seed: Any) -> Optional[str]:
    """Why ``seed`` is not a seed (a whole number from 0 to 2^64 - 1), or None."""
    if isinstance(seed, int) and not isinstance(seed, bool) and 0 <= seed <= SEED_MAX:
        return None
    return f"must be a whole number from 0 to {SEED_MAX}, not {seed!r}"


def check_seed(seed: Any) -> int:
    """``seed`` as an int, or :class:`~tessera.ConfigError` at key ``seed``."""
    problem = seed_problem(seed)
    if problem is not None:
        raise _config_error("seed", problem)
    return int(seed)


def simulate(
    config: ConfigLike,
    trace: Optional[PathLike] = None,
    *,
    synthetic: Optional[SyntheticLike] = None,
    workload: Optional[str] = None,
    params: Optional[Mapping[str, Any]] = None,
    overrides: Union[Iterable[str], Mapping[str, Any]] = (),
    seed: int = 0,
    progress: Union[ProgressFn, bool, None] = None,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
    warmup: Union[int, str, None] = None,
    accesses: Any = None,
) -> Result:
    """Simulate one access stream on one machine.

    ``config`` is a preset name (see :func:`presets`), a path to a TOML file,
    TOML text, or a dict of the same structure. ``overrides`` are
    ``"dotted.key=value"`` strings (or a ``{dotted key: value}`` dict) applied
    on top. Give exactly one of ``trace`` (a lackey or native ``.tess``
    file), ``synthetic`` (``{"pattern": "uniform", "accesses": 1_000_000,
    "footprint": "1GiB"}``; missing keys take the core's defaults) and
    ``workload`` (a built-in workload name, see :func:`workloads`, with its
    ``params``, e.g. ``workload="gups", params={"table": "4GiB"}``), or
    ``accesses``: the accesses themselves, in memory (a pandas DataFrame or a
    mapping of columns ``vaddr``, ``ins_gap``, ``asid``, ``kind``, ``size``
    and optionally ``dep`` to arrays, as :func:`read_trace` returns; see
    :mod:`tessera.memory`).

    For a ChampSim trace, ``champsim_ifetch=True`` adds an instruction fetch
    per instruction (default off) and ``champsim_access_size`` sets the size
    of every load and store (default 8 bytes); other formats ignore them.

    ``warmup`` runs the start of the stream to warm the machine (TLBs,
    caches, page tables) and then restarts every counter, so the result
    measures only the rest: an int is a number of access records; a string
    is ``"N"``, ``"N accesses"`` or ``"N instructions"`` (N as ``1000000``,
    ``1_000_000``, ``1e6`` or ``1M``). Gauges (free frames, page-table nodes)
    are the levels at the end. ``result.phases`` gives both phases' lengths.

    ``progress(done, total)`` is called every few batches from the simulating
    thread; raising from it (``KeyboardInterrupt`` included) stops the run and
    the exception propagates. ``progress=True`` draws a progress bar on
    stderr. Ctrl-C stops the run with ``KeyboardInterrupt``.

    ``seed`` seeds every random choice: a whole number from 0 to 2^64 - 1
    (anything else is a :class:`~tessera.ConfigError` at ``seed``).

    Raises :class:`~tessera.ConfigError`, :class:`~tessera.TraceError`,
    :class:`~tessera.SimulatedOutOfMemory` or :class:`~tessera.TesseraError`.
    """
    seed = check_seed(seed)
    kind, value = source_of(config)
    mem = _memory_args(accesses, trace, synthetic, workload, params)
    if mem is not None:
        trace_path, synth, wl = None, None, None
        sid = memory.source_id(mem)
        label = mem[0]
    else:
        trace_path, synth, wl = _source_args(trace, synthetic, workload, params)
        # Hashing the trace first also turns a missing file into a TraceError naming it.
        sid = _source_id(trace_path, synth, wl, seed)
        label = _source_label(trace_path, synth, wl)
    args = (kind, value, _overrides(overrides), trace_path, synth, seed)
    warm = warmup_text(warmup)
    if progress is True:
        from tessera.progress import ProgressBar

        with ProgressBar(label) as bar:
            return Result._from_core(
                _core.simulate(*args, bar, champsim_ifetch, champsim_access_size, wl, warm, mem), sid
            )
    if progress is False:
        progress = None
    return Result._from_core(_core.simulate(*args, progress, champsim_ifetch, champsim_access_size, wl, warm, mem), sid)


def _memory_args(accesses: Any, trace: Any, synthetic: Any, workload: Any, params: Any) -> Optional[tuple]:
    """The core's in-memory stream, when ``accesses`` is the source."""
    if accesses is None:
        return None
    if trace is not None or synthetic is not None or workload is not None or params is not None:
        raise ValueError("give exactly one of `trace` (a path), `synthetic` (a dict), `workload` (a name) and `accesses`")
    return memory.columns_args(accesses)


read_trace = memory.read_trace


_workload_docs: Optional[dict[str, dict[str, Any]]] = None


def _source_id(trace_path: Optional[str], synth: Any, wl: Any, seed: int) -> str:
    global _workload_docs
    defaults = None
    if wl is not None:
        if _workload_docs is None:
            _workload_docs = workloads()
        # An unknown name gets no defaults here; the core then reports it.
        defaults = _workload_docs.get(wl[0])
    return identity.source_id(trace_path, synth, wl, seed, defaults)


def source_id(
    trace: Optional[PathLike] = None,
    *,
    synthetic: Optional[SyntheticLike] = None,
    workload: Optional[str] = None,
    params: Optional[Mapping[str, Any]] = None,
    seed: int = 0,
) -> str:
    """The ``source_id`` a run of this source gets (see :mod:`tessera.identity`):
    a content hash for a trace, name and resolved parameters for a workload,
    every parameter and the seed for a synthetic stream."""
    trace_path, synth, wl = _source_args(trace, synthetic, workload, params)
    return _source_id(trace_path, synth, wl, check_seed(seed))


def warmup_text(warmup: Union[int, str, None]) -> Optional[str]:
    """A warm-up length as the core parses it (``None``: no warm-up)."""
    if warmup is None:
        return None
    if isinstance(warmup, bool) or not isinstance(warmup, (int, str)):
        raise _config_error("warmup", f"must be a number of accesses or a string like '1M instructions', not {warmup!r}")
    if isinstance(warmup, int) and warmup < 0:
        raise _config_error("warmup", f"cannot be negative ({warmup})")
    return str(warmup)


def bench(
    config: ConfigLike = "tlb_only",
    trace: Optional[PathLike] = None,
    *,
    synthetic: Optional[SyntheticLike] = None,
    workload: Optional[str] = None,
    params: Optional[Mapping[str, Any]] = None,
    overrides: Union[Iterable[str], Mapping[str, Any]] = (),
    seed: int = 0,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
    accesses: Any = None,
) -> dict[str, Any]:
    """Time one stream on one machine: ``{"accesses", "seconds", "accesses_per_sec"}``.
    The time is the simulation's alone: the machine is built and the source
    opened (a trace's header read, ``accesses`` converted) before the clock starts."""
    kind, value = source_of(config)
    mem = _memory_args(accesses, trace, synthetic, workload, params)
    if mem is not None:
        trace_path, synth, wl = None, None, None
    else:
        trace_path, synth, wl = _source_args(trace, synthetic, workload, params)
    if trace_path is not None:
        identity.check_trace_readable(trace_path)
    return dict(
        _core.bench(
            kind,
            value,
            _overrides(overrides),
            trace_path,
            synth,
            check_seed(seed),
            champsim_ifetch,
            champsim_access_size,
            wl,
            mem,
        )
    )


def workloads() -> dict[str, dict[str, Any]]:
    """``{name: {"summary", "params": [{"name", "default", "doc"}], "default_footprint"}}``
    for every built-in workload."""
    return {w["name"]: {k: v for k, v in w.items() if k != "name"} for w in _core.workloads()}


def gpu_kernels() -> dict[str, dict[str, Any]]:
    """``{name: {"summary", "params": [{"name", "default", "doc"}], "default_footprint"}}``
    for every built-in GPU kernel (the GPU applications of ``docs/gpu.md``)."""
    return {k["name"]: {x: v for x, v in k.items() if x != "name"} for k in _core.gpu_kernels()}


def write_gpu_trace(
    kernel: str,
    output: PathLike,
    params: Optional[Mapping[str, Any]] = None,
    *,
    seed: int = 0,
    xz: bool = False,
) -> dict[str, Any]:
    """Generate the built-in GPU kernel ``kernel`` (its real algorithm on
    generated data) and write it as an Accel-Sim trace directory
    (``kernelslist.g`` and ``kernel-N.traceg``, or ``.traceg.xz`` with ``xz``),
    readable by Accel-Sim and by :func:`gpu_info`. Nothing half-written is
    left behind on an error. Returns ``{"allocations", "kernels",
    "warp_insts", "bytes"}``."""
    name, kparams = _workload_args(kernel, params)
    return dict(_core.gpu_write_trace(name, kparams, check_seed(seed), os.fspath(output), bool(xz)))


def gpu_info(
    kernel: Optional[str] = None,
    params: Optional[Mapping[str, Any]] = None,
    *,
    trace: Optional[PathLike] = None,
    seed: int = 0,
    page_size: str = "4KiB",
) -> dict[str, Any]:
    """Count what a GPU application does, without a machine: a built-in
    kernel (``kernel``, ``params``) or an Accel-Sim trace directory
    (``trace``). Warp and thread instructions by class, memory instructions
    by space, the sectors, lines and pages its global accesses coalesce into,
    the distinct pages of ``page_size`` ("4KiB", "64KiB" or "2MiB") touched,
    and ``touched_over_allocated``: the touched pages' bytes over the bytes
    allocated."""
    if (kernel is None) == (trace is None):
        raise ValueError("give exactly one of `kernel` (a name) and `trace` (an Accel-Sim trace directory)")
    if params is not None and kernel is None:
        raise ValueError("`params` apply only to a `kernel`")
    if kernel is not None:
        name, kparams = _workload_args(kernel, params)
        info = dict(_core.gpu_info(page_size, name, kparams, check_seed(seed), None))
    else:
        info = dict(_core.gpu_info(page_size, None, {}, 0, os.fspath(trace)))
    allocated = info["allocated_bytes"]
    info["touched_over_allocated"] = info["pages_touched"] * info["page_bytes"] / allocated if allocated else 0.0
    return info


def record_workload(
    workload: str,
    output: PathLike,
    params: Optional[Mapping[str, Any]] = None,
    *,
    seed: int = 0,
    progress: Union[ProgressFn, bool, None] = None,
) -> dict[str, Any]:
    """Run a built-in workload and write its access stream to a native trace
    (atomically). Replaying the trace gives the same stats as running the
    workload directly. Returns ``{"records", "instructions", "blocks", "bytes"}``."""
    name, wparams = _workload_args(workload, params)
    out = os.fspath(output)
    if progress is True:
        from tessera.progress import ProgressBar

        with ProgressBar(f"record {name}") as bar:
            return dict(_core.record_workload(name, wparams, check_seed(seed), out, bar))
    return dict(_core.record_workload(name, wparams, check_seed(seed), out, progress or None))


def bench_workload(workload: str, params: Optional[Mapping[str, Any]] = None, *, seed: int = 0) -> dict[str, Any]:
    """Time a workload's generator alone (no simulator):
    ``{"workload", "accesses", "instructions", "seconds", "accesses_per_sec"}``."""
    name, wparams = _workload_args(workload, params)
    return dict(_core.bench_workload(name, wparams, check_seed(seed)))


def resolve_config(config: ConfigLike, overrides: Union[Iterable[str], Mapping[str, Any]] = ()) -> str:
    """Validate a config (with overrides) and return the resolved machine as TOML text."""
    kind, value = source_of(config)
    return _core.resolve_config(kind, value, _overrides(overrides))


def presets() -> dict[str, str]:
    """``{preset name: one-line summary}`` of the machines shipped with Tessera."""
    return {name: summary for name, summary, _toml in _core.presets()}


def preset_toml(name: str) -> str:
    """The TOML text of a shipped preset, as written (not resolved)."""
    for n, _summary, text in _core.presets():
        if n == name:
            return text
    raise KeyError(name)


def stat_docs(
    config: ConfigLike, overrides: Union[Iterable[str], Mapping[str, Any]] = ()
) -> dict[str, tuple[str, str]]:
    """``{stat name: (unit, description)}`` for every stat the machine
    reports: exactly the names of every run of this machine (counters,
    gauges and derived metrics; see :func:`stat_kinds` for which is which)."""
    kind, value = source_of(config)
    return {n: (u, d) for n, (u, d, _) in _core.stat_docs(kind, value, _overrides(overrides)).items()}


def stat_kinds(
    config: ConfigLike, overrides: Union[Iterable[str], Mapping[str, Any]] = ()
) -> dict[str, str]:
    """``{stat name: "count" | "gauge" | "derived"}`` for every stat the machine
    reports. After a warm-up, counts cover only the measured phase and gauges
    are the levels at the end (``docs/stats.md``)."""
    kind, value = source_of(config)
    return {n: k for n, (_, _, k) in _core.stat_docs(kind, value, _overrides(overrides)).items()}


def registry() -> dict[str, list[tuple[str, str]]]:
    """``{family config key: [(mechanism name, summary), ...]}``."""
    return {key: list(mechs) for key, mechs in _core.registry()}


def _as_result(x: Union[Result, PathLike]) -> Result:
    return x if isinstance(x, Result) else load_result(x)


def comparison_problems(base: Result, other: Result) -> list[str]:
    """Why ``base`` and ``other`` are not runs of one program, as sentences
    (empty when they are). The sources must match, by ``source_id``, or by the
    recorded ``source`` description when either result predates
    ``source_id``; and both must have simulated the same number of
    instructions (``core.instructions``)."""
    problems = []
    if base.source_id is not None and other.source_id is not None:
        if base.source_id != other.source_id:
            if base.source != other.source:
                problems.append(f"different programs: base ran {base.source}, other ran {other.source}")
            else:
                problems.append(
                    f"both ran {base.source}, but not the same one: source_id {base.source_id} "
                    f"vs {other.source_id} (different file contents or parameters)"
                )
    elif base.source != other.source:
        problems.append(
            f"different sources: base ran {base.source}, other ran {other.source} "
            "(a result without source_id is compared by its source description)"
        )
    bi, oi = base.counters.get("core.instructions"), other.counters.get("core.instructions")
    if bi != oi:
        def n(v: Optional[int]) -> str:
            return "none recorded" if v is None else f"{v:,}"

        problems.append(f"different instruction counts: base {n(bi)}, other {n(oi)}")
    return problems


def compare(
    base: Union[Result, PathLike], other: Union[Result, PathLike], *, force: bool = False
) -> dict[str, Any]:
    """Equation 1 of the scale-out MMU study: the cycles expected from the
    change in walk cycles between ``base`` (e.g. 4 KiB pages) and ``other``
    (e.g. THP), against the cycles actually simulated. Results or paths to
    result files.

    The two must be runs of the same program (see :func:`comparison_problems`);
    otherwise :class:`~tessera.IncomparableResults` is raised, unless
    ``force=True``, in which case the comparison is made and its
    ``"warnings"`` list says what differs."""
    b, o = _as_result(base), _as_result(other)
    problems = comparison_problems(b, o)
    if problems and not force:
        raise IncomparableResults(problems)
    out = dict(_core.compare(b.counters, b.derived, o.counters, o.derived))
    out["base_instructions"] = b.counters.get("core.instructions")
    out["other_instructions"] = o.counters.get("core.instructions")
    if problems:
        out["warnings"] = problems
    return out


def trace_info(
    path: PathLike,
    *,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
) -> dict[str, Any]:
    """Read a whole trace and summarise it (format, records, instructions, footprint, ...).

    The format (native, lackey or ChampSim) is detected from the first bytes;
    the ``champsim_*`` options are those of :func:`simulate`.
    """
    identity.check_trace_readable(os.fspath(path))
    return dict(_core.trace_info(os.fspath(path), champsim_ifetch, champsim_access_size))


#: Output suffixes whose trace format :func:`convert_trace` infers.
TRACE_SUFFIXES = {".tess": "native", ".lackey": "lackey", ".txt": "lackey"}


def trace_format_for(path: PathLike) -> Optional[str]:
    """The format a trace written to ``path`` gets from its suffix, or ``None``."""
    return TRACE_SUFFIXES.get(os.path.splitext(os.fspath(path))[1].lower())


def unknown_suffix_message(path: PathLike) -> str:
    ext = os.path.splitext(os.fspath(path))[1] or "(none)"
    known = ", ".join(f"{s} ({f})" for s, f in TRACE_SUFFIXES.items())
    return (
        f"cannot tell the output format of {os.fspath(path)!r} from its extension {ext}; "
        f"known extensions: {known}; or give --to native|lackey"
    )


def convert_trace(
    src: PathLike,
    dst: PathLike,
    to: Optional[str] = None,
    *,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
) -> dict[str, Any]:
    """Convert a trace (format detected: native, lackey or ChampSim) to ``to`` =
    ``"native"`` or ``"lackey"``.

    With ``to=None`` the format follows ``dst``'s suffix (see
    :data:`TRACE_SUFFIXES`: ``.tess`` → native, ``.lackey`` or ``.txt`` →
    lackey); any other suffix is a :class:`ValueError`, so a typo never
    silently writes the wrong format. The output appears only if the whole
    input converted. ChampSim traces can be read but not written; the
    ``champsim_*`` options are those of :func:`simulate`.
    """
    dst_s = os.fspath(dst)
    if to is None:
        to = trace_format_for(dst_s)
        if to is None:
            raise ValueError(unknown_suffix_message(dst_s))
    identity.check_trace_readable(os.fspath(src))
    return dict(_core.trace_convert(os.fspath(src), dst_s, to, champsim_ifetch, champsim_access_size))


def _plugin_src() -> Optional[str]:
    """The QEMU plugin's source directory when this package runs from a
    checkout (editable install); otherwise the core's own default applies."""
    env = os.environ.get("TESSERA_QEMU_PLUGIN_SRC")
    if env:
        return env
    here = os.path.dirname(os.path.abspath(__file__))
    cand = os.path.join(here, os.pardir, os.pardir, "plugins", "qemu-tessera")
    return os.path.normpath(cand) if os.path.isfile(os.path.join(cand, "tessera.c")) else None


def record(
    output: PathLike,
    command: Sequence[Union[str, "os.PathLike[str]"]],
    *,
    backend: str = "lackey",
    skip: int = 0,
    max_accesses: Optional[int] = None,
    ifetch: bool = True,
    progress: Union[ProgressFn, bool, None] = None,
    status: Optional[Callable[[str], Any]] = None,
) -> dict[str, Any]:
    """Run ``command`` (a program and its arguments) and record its memory
    accesses into the native trace ``output``.

    ``backend="lackey"`` runs it under Valgrind lackey (needs ``valgrind``);
    ``backend="qemu"`` under ``qemu-x86_64`` with Tessera's TCG plugin, built
    on first use (needs ``qemu-user`` and ``gcc``; see docs/recording.md).
    ``skip`` drops the first accesses, ``max_accesses`` stops the program once
    that many are written, ``ifetch=False`` leaves instruction fetches out.
    The program's stdin/stdout/stderr are this process's.

    ``progress(accesses, 0)`` is called every few batches (``True`` draws a
    counter on stderr); raising from it or Ctrl-C stops the recording, kills
    the program and leaves no output file. ``status(message)`` hears about
    slow one-off steps (fetching QEMU's plugin header, compiling the plugin).

    Returns the summary: ``records``, ``instructions``, ``loads``, ``stores``,
    ``ifetches``, ``skipped``, ``stopped_early``, ``program_instructions``,
    ``exit_code``, ``signal``, ``bytes``, ``seconds``, ``accesses_per_sec``,
    ``tool_version``, ``warnings``. Raises :class:`~tessera.ToolError` when a
    tool is missing (the message says how to install it) or fails.
    """
    cmd = [os.fspath(c) for c in command]
    if not cmd:
        raise ValueError("record needs a program to run")
    if skip < 0 or (max_accesses is not None and max_accesses < 0):
        raise ValueError("skip and max_accesses must not be negative")
    args = (os.fspath(output), cmd, backend, int(skip), max_accesses, bool(ifetch), status)
    if progress is True:
        from tessera.progress import ProgressBar

        with ProgressBar(f"recording {os.path.basename(cmd[0])} ({backend})") as bar:
            return dict(_core.record(*args, bar, _plugin_src()))
    return dict(_core.record(*args, progress or None, _plugin_src()))


# GTSM's capacity figures (Figs. 3, 7, 14 and Table 2 of "Supporting
# superpages in non-contiguous physical memory", HPCA 2015) by Monte Carlo,
# under the API's name; tables, figures and files are in tessera.gtsm.
from tessera.gtsm import montecarlo as gtsm_montecarlo  # noqa: E402
