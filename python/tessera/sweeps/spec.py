"""Sweep files: a base machine and source, axes to cross, and the runs they expand to.

A sweep is TOML (a file, text, or a dict of the same shape)::

    name = "page-sizes"
    machine = "sandy_bridge"          # preset name, or a TOML file (relative to the sweep file)
    seed = 0
    [set]                             # overrides on every run
    "cache.llc.size" = "8MiB"
    [source]                          # one of workload / trace / synthetic
    workload = "gups"
    [params.gups]                     # workload parameters, per workload
    table = "256MiB"
    [axes]                            # crossed in this order
    workload = ["gups", "kvcache"]
    "physmem.page_size" = ["base_only", "thp"]
    seed = { start = 0, stop = 3 }
    zip = [["workload", "param.updates"]]
    [[exclude]]
    workload = "gups"

On a GPU machine (``machine.kind = "gpu"``) the source is ``apps``: the
applications that share the GPU, each a built-in kernel name, a table
``{kernel = "bfs", params = {scale = 12}}`` or ``{trace = "dir"}``, with
``[params.<kernel>]`` applying to every copy of that kernel. ``apps`` is
also an axis whose values are such lists::

    machine = "mosaic_gpu"
    [params.bfs]
    scale = 16
    [axes]
    apps = [["bfs"], ["bfs", "bfs"], ["bfs", "gups"]]

Every run is expanded and its machine resolved by the core *before* anything
runs, so a bad key or value anywhere in the grid is reported at once, naming
the sweep file and the axis. Each run's identity (:attr:`Run.run_id`) is a
hash of what decides its result: the resolved machine (every default written
out, so two spellings of one machine share results), the source (workload and
parameters, trace contents, or synthetic stream), the seed and the Tessera
version.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Union

from tessera import _core
from tessera.config import _value, source_of
from tessera.errors import SweepError, TraceError
from tessera.identity import trace_digest

__all__ = ["SweepSpec", "Run", "load_spec", "SPECIAL_AXES"]

#: Axes that are not config keys.
SPECIAL_AXES = ("workload", "trace", "synthetic", "apps", "machine", "seed", "warmup")
_TOP_KEYS = ("name", "description", "machine", "seed", "warmup", "set", "source", "params", "axes", "exclude", "include")
_SOURCE_KEYS = ("workload", "trace", "synthetic", "apps", "champsim_ifetch", "champsim_access_size")
_SYNTHETIC_KEYS = ("pattern", "accesses", "footprint")
_RANGE_KEYS = ("start", "stop", "step", "mul")
#: A sanity bound: a typo such as ``stop = 1e9`` should not expand forever.
MAX_RUNS = 1_000_000

SpecLike = Union[str, "os.PathLike[str]", Mapping[str, Any], "SweepSpec"]


@dataclass(frozen=True)
class Run:
    """One fully described simulation of a sweep."""

    run_id: str
    #: the axis values of this run, as written in the sweep (``{"workload": "gups", ...}``)
    point: dict[str, Any]
    machine: str
    #: ``(kind, value)`` as :func:`tessera.config.source_of` gives it, file contents inlined
    machine_source: tuple[str, str]
    overrides: tuple[str, ...]
    config_toml: str
    seed: int
    workload: Optional[str] = None
    params: dict[str, str] = field(default_factory=dict)
    trace: Optional[str] = None
    synthetic: Optional[dict[str, Any]] = None
    champsim: dict[str, Any] = field(default_factory=dict)
    #: the warm-up, canonically spelled (``"1000000 accesses"``), or None
    warmup: Optional[str] = None
    #: GPU applications as ``(kind, value, params)`` (:func:`tessera.gpu.app_args`), or None
    apps: Optional[list[tuple[str, str, dict[str, str]]]] = None

    def task(self) -> dict[str, Any]:
        """What a worker needs to run it: plain, picklable data only."""
        return {
            "run_id": self.run_id,
            "machine_source": self.machine_source,
            "overrides": list(self.overrides),
            "config_toml": self.config_toml,
            "seed": self.seed,
            "workload": self.workload,
            "params": dict(self.params),
            "trace": self.trace,
            "synthetic": dict(self.synthetic) if self.synthetic is not None else None,
            "champsim": dict(self.champsim),
            "warmup": self.warmup,
            "apps": [list(a) for a in self.apps] if self.apps is not None else None,
        }

    def describe(self) -> dict[str, Any]:
        """The run's inputs as stored beside its result."""
        return {
            "machine": self.machine,
            "overrides": list(self.overrides),
            "seed": self.seed,
            "workload": self.workload if self.apps is None else "+".join(Path(v).name for _, v, _ in self.apps),
            "params": dict(self.params),
            "trace": self.trace,
            "synthetic": self.synthetic,
            "champsim": dict(self.champsim),
            "warmup": self.warmup,
            **({"apps": [list(a) for a in self.apps]} if self.apps is not None else {}),
        }


@dataclass
class SweepSpec:
    """A parsed (not yet expanded) sweep. Build with :func:`load_spec`."""

    name: str
    data: dict[str, Any]
    #: where relative paths (machine file, traces) are resolved from
    base_dir: Path
    origin: str
    text: str = ""

    def expand(self) -> list[Run]:
        """Every run of the sweep, in order, with resolved machines and run ids."""
        return _expand(self)

    @property
    def axes(self) -> list[str]:
        return [k for k in self.data.get("axes", {}) if k != "zip"]


# ----------------------------------------------------------------- loading


def _err(spec_origin: str, key: str, msg: str, allowed: Sequence[str] = ()) -> SweepError:
    return SweepError(spec_origin, key, msg, list(allowed))


def load_spec(spec: SpecLike) -> SweepSpec:
    """Read a sweep from a file path, TOML text or a dict; check its shape."""
    if isinstance(spec, SweepSpec):
        return spec
    if isinstance(spec, Mapping):
        data, origin, base, text = dict(spec), "<sweep dict>", Path.cwd(), ""
    elif isinstance(spec, (str, os.PathLike)):
        s = os.fspath(spec)
        if isinstance(spec, str) and ("\n" in s or "=" in s):
            data, origin, base, text = _parse_toml(s, "<sweep text>"), "<sweep text>", Path.cwd(), s
        else:
            p = Path(s)
            try:
                text = p.read_text(encoding="utf-8")
            except OSError as e:
                raise _err(s, "", e.strerror or str(e)) from None
            except UnicodeDecodeError as e:
                raise _err(s, "", f"not UTF-8 text ({e.reason} at byte {e.start})") from None
            data, origin, base = _parse_toml(text, s), s, p.resolve().parent
    else:
        raise TypeError(f"a sweep is a file path, TOML text or a dict, not {type(spec).__name__}")
    data = _canonical_names(data, origin)
    _check_shape(data, origin)
    return SweepSpec(name=data["name"], data=data, base_dir=base, origin=origin, text=text)


def canonical_key(key: str) -> str:
    """A config key as the sweep records it: a mechanism is named by its
    section (``physmem.page_size``), and ``physmem.page_size`` is an
    alias of it, exactly as for ``--set`` (both replace the mechanism and
    drop its old parameters). ``timing.kind`` is kept as it is: it picks a
    timing model, not a mechanism, and setting it keeps the clock, the CPI
    and the machine's ``[timing.ooo]`` core (as ``--set timing.kind=ooo``);
    spelt ``timing`` it would replace the whole ``[timing]`` table."""
    if key == "timing.kind":
        return key
    return key[: -len(".kind")] if key.endswith(".kind") and key not in SPECIAL_AXES else key


def _canonical_names(data: dict[str, Any], origin: str) -> dict[str, Any]:
    """``data`` with every config key of ``set``, ``axes`` (zip groups
    included), ``exclude`` and ``include`` in its canonical spelling."""

    def rename(table: Any, where: str) -> Any:
        if not isinstance(table, Mapping):
            return table
        out: dict[str, Any] = {}
        for k, v in table.items():
            c = canonical_key(k) if isinstance(k, str) else k
            if c in out:
                raise _err(origin, f"{where}.{k}", f"`{k}` and `{c}` are two spellings of one key: give it once")
            out[c] = v
        return out

    data = dict(data)
    for key in ("set", "axes"):
        if key in data:
            data[key] = rename(data[key], key)
    zip_groups = data.get("axes", {}).get("zip") if isinstance(data.get("axes"), Mapping) else None
    if isinstance(zip_groups, list):
        data["axes"]["zip"] = [[canonical_key(n) if isinstance(n, str) else n for n in g] if isinstance(g, list) else g
                               for g in zip_groups]
    for key in ("exclude", "include"):
        if isinstance(data.get(key), list):
            data[key] = [rename(rule, key) for rule in data[key]]
    return data


def _parse_toml(text: str, origin: str) -> dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise _err(origin, "", f"not valid TOML: {e}") from None


def _check_keys(got: Mapping[str, Any], allowed: Sequence[str], origin: str, where: str) -> None:
    for k in got:
        if k not in allowed:
            key = f"{where}.{k}" if where else k
            raise _err(origin, key, f"unknown key `{key}`", allowed)


def _check_shape(data: Mapping[str, Any], origin: str) -> None:
    _check_keys(data, _TOP_KEYS, origin, "")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        raise _err(origin, "name", "a sweep needs a `name` (a non-empty string): results are filed under it")
    machine = data.get("machine", "sandy_bridge")
    if not isinstance(machine, str):
        raise _err(origin, "machine", "`machine` is a preset name or a TOML file path")
    for key in ("set", "source", "params", "axes"):
        if key in data and not isinstance(data[key], Mapping):
            raise _err(origin, key, f"`{key}` must be a table")
    src = data.get("source", {})
    _check_keys(src, _SOURCE_KEYS, origin, "source")
    if "synthetic" in src:
        if not isinstance(src["synthetic"], Mapping):
            raise _err(origin, "source.synthetic", "`source.synthetic` is a table such as {pattern = \"uniform\"}")
        _check_keys(src["synthetic"], _SYNTHETIC_KEYS, origin, "source.synthetic")
    for wl, params in data.get("params", {}).items():
        if not isinstance(params, Mapping):
            raise _err(origin, f"params.{wl}", f"`params.{wl}` must be a table of that workload's parameters")
    axes = data.get("axes", {})
    for k, v in axes.items():
        if k == "zip":
            _check_zip(v, axes, origin)
            continue
        _axis_values(k, v, origin)  # raises on a bad list or range
        if k == "synthetic":
            raise _err(origin, "axes.synthetic", "sweep a synthetic parameter with `synthetic.pattern` etc.")
    for key in ("exclude", "include"):
        rules = data.get(key, [])
        if not isinstance(rules, list) or not all(isinstance(r, Mapping) and r for r in rules):
            raise _err(origin, key, f"`{key}` is a list of tables ([[{key}]]) of axis = value pairs")
        for r in rules:
            for k in r:
                if k not in axes:
                    raise _err(origin, f"{key}.{k}", f"`{key}` names `{k}`, which is not an axis", [a for a in axes if a != "zip"])
    if "seed" in data and not _is_int(data["seed"]):
        raise _err(origin, "seed", f"`seed` must be a whole number from 0 to {2**64 - 1}, not {data['seed']!r}")


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 0 <= v < 2**64


def _check_zip(v: Any, axes: Mapping[str, Any], origin: str) -> None:
    if not isinstance(v, list) or not all(isinstance(g, list) and len(g) >= 2 for g in v):
        raise _err(origin, "axes.zip", "`zip` is a list of groups of two or more axis names, e.g. [[\"workload\", \"param.n\"]]")
    seen: set[str] = set()
    for g in v:
        lengths = set()
        for name in g:
            if name not in axes or name == "zip":
                raise _err(origin, "axes.zip", f"`zip` names `{name}`, which is not an axis", [a for a in axes if a != "zip"])
            if name in seen:
                raise _err(origin, "axes.zip", f"axis `{name}` is in two zip groups")
            seen.add(name)
            lengths.add(len(_axis_values(name, axes[name], origin)))
        if len(lengths) > 1:
            raise _err(origin, "axes.zip", f"zipped axes {g} have different lengths ({sorted(lengths)})")


def _axis_values(name: str, v: Any, origin: str) -> list[Any]:
    key = f"axes.{name}"
    if isinstance(v, list):
        if not v:
            raise _err(origin, key, f"axis `{name}` has no values")
        return list(v)
    if isinstance(v, Mapping):
        _check_keys(v, _RANGE_KEYS, origin, key)
        if "start" not in v or "stop" not in v:
            raise _err(origin, key, f"a range needs `start` and `stop` (axis `{name}`)", _RANGE_KEYS)
        start, stop = v["start"], v["stop"]
        if "mul" in v:
            if "step" in v:
                raise _err(origin, key, "give `step` (arithmetic) or `mul` (geometric), not both")
            mul = v["mul"]
            if not (isinstance(mul, (int, float)) and mul > 1 and start > 0):
                raise _err(origin, key, "a geometric range needs `mul` > 1 and `start` > 0")
            out, x = [], start
            while x <= stop * (1 + 1e-12):
                out.append(x)
                x = x * mul
                if len(out) > MAX_RUNS:
                    raise _err(origin, key, f"range has more than {MAX_RUNS} values")
        else:
            step = v.get("step", 1)
            if not isinstance(step, (int, float)) or isinstance(step, bool) or step == 0:
                raise _err(origin, key, "`step` must be a non-zero number")
            n = math.ceil((stop - start) / step)
            if n > MAX_RUNS:
                raise _err(origin, key, f"range has more than {MAX_RUNS} values")
            out = [start + i * step for i in range(max(n, 0))]
        if not out:
            raise _err(origin, key, f"range of axis `{name}` is empty")
        return out
    raise _err(origin, key, f"axis `{name}` must be a list of values or a range table {{start, stop, step|mul}}")


# --------------------------------------------------------------- expansion


def _points(spec: SweepSpec) -> list[dict[str, Any]]:
    """The grid: zipped groups advance together, groups and single axes cross."""
    data, origin = spec.data, spec.origin
    axes = {k: _axis_values(k, v, origin) for k, v in data.get("axes", {}).items() if k != "zip"}
    groups: list[list[str]] = []
    zipped = {n for g in data.get("axes", {}).get("zip", []) for n in g}
    for g in data.get("axes", {}).get("zip", []):
        groups.append(list(g))
    # Axes keep their written order; a zip group sits where its first axis is.
    order: list[list[str]] = []
    for name in axes:
        if name in zipped:
            g = next(g for g in groups if g[0] == name) if any(g[0] == name for g in groups) else None
            if g is not None:
                order.append(g)
        else:
            order.append([name])
    choices = []
    for g in order:
        choices.append([{n: axes[n][i] for n in g} for i in range(len(axes[g[0]]))])
    points = []
    for combo in itertools.product(*choices):
        p: dict[str, Any] = {}
        for part in combo:
            p.update(part)
        points.append(p)
        if len(points) > MAX_RUNS:
            raise _err(origin, "axes", f"the sweep expands to more than {MAX_RUNS} runs")
    include, exclude = data.get("include", []), data.get("exclude", [])

    def matches(p: dict[str, Any], rule: Mapping[str, Any]) -> bool:
        return all(_same(p.get(k), v) for k, v in rule.items())

    if include:
        points = [p for p in points if any(matches(p, r) for r in include)]
    return [p for p in points if not any(matches(p, r) for r in exclude)]


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, (int, float)) and isinstance(b, (int, float)) and not isinstance(a, bool):
        return float(a) == float(b)
    return a == b


def _param_str(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _machine_source(name: str, base: Path, origin: str, key: str) -> tuple[str, tuple[str, str]]:
    """A machine's label and its ``(kind, value)`` with files read now, so that
    workers on other hosts need no access to the sweep's directory."""
    kind, value = source_of(name)
    if kind == "file":
        p = Path(value)
        if not p.is_absolute():
            p = base / p
        try:
            return p.name, ("text", p.read_text(encoding="utf-8"))
        except OSError as e:
            raise _err(origin, key, f"machine file {str(p)!r}: {e.strerror or e}") from None
    return value, (kind, value)


def trace_identity(path: str) -> dict[str, Any]:
    """A trace's identity: name, size and content hash (the hash a result's
    ``source_id`` carries; cached by size and mtime)."""
    digest = trace_digest(path)
    return {"name": os.path.basename(path), "bytes": os.stat(path).st_size, "blake2b": digest}


def run_id_of(config_toml: str, source: Mapping[str, Any], seed: int, version: str) -> str:
    """The store key: a hash of the canonical JSON of everything that decides a result."""
    ident = {"config": config_toml, "source": source, "seed": seed, "tessera": version}
    text = json.dumps(ident, sort_keys=True, separators=(",", ":"), ensure_ascii=True)
    return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


def _workload_params(workload: Any, wl_params: Mapping[str, Mapping[str, Any]], point: Mapping[str, Any],
                     origin: str, known: Mapping[str, Any]) -> dict[str, str]:
    """The run's workload parameters, names checked against the workload's
    list in ``known`` (:func:`tessera.workloads`) now; values are checked by
    the core when the run starts."""
    if not isinstance(workload, str) or workload not in known:
        raise _err(origin, "workload", f"unknown workload {workload!r}", sorted(known))
    allowed = [p["name"] for p in known[workload]["params"]]
    params = {str(k): _param_str(v) for k, v in wl_params.get(workload, {}).items()}
    for k in params:
        if k not in allowed:
            raise _err(origin, f"params.{workload}.{k}", f"workload `{workload}` has no parameter `{k}`", allowed)
    for k, v in point.items():
        if k.startswith("param."):
            name = k[len("param."):]
            if name not in allowed:
                raise _err(origin, f"axes.{k}", f"workload `{workload}` has no parameter `{name}`", allowed)
            params[name] = _param_str(v)
    return params


def _expand(spec: SweepSpec) -> list[Run]:
    from tessera.api import parse_count, parse_size, synthetic_defaults

    data, origin, base = spec.data, spec.origin, spec.base_dir
    version = _core.__version__
    src = data.get("source", {})
    wl_params: Mapping[str, Mapping[str, Any]] = data.get("params", {})
    base_set = [f"{k}={_value(v, k)}" for k, v in data.get("set", {}).items()]
    machines: dict[str, tuple[str, tuple[str, str]]] = {}
    resolved: dict[tuple[Any, ...], str] = {}
    runs: list[Run] = []
    seen: dict[str, dict[str, Any]] = {}
    known_workloads: Optional[dict[str, Any]] = None
    known_kernels: Optional[dict[str, Any]] = None
    for point in _points(spec):
        machine_name = point.get("machine", data.get("machine", "sandy_bridge"))
        if not isinstance(machine_name, str):
            raise _err(origin, "axes.machine", "machine values are preset names or TOML file paths")
        if machine_name not in machines:
            machines[machine_name] = _machine_source(machine_name, base, origin, "machine")
        label, msource = machines[machine_name]
        overrides = list(base_set)
        params: dict[str, str] = {}
        workload, trace, synthetic = src.get("workload"), src.get("trace"), src.get("synthetic")
        apps_given = src.get("apps")
        if "workload" in point:
            workload, trace, synthetic, apps_given = point["workload"], None, None, None
        if "trace" in point:
            workload, trace, synthetic, apps_given = None, point["trace"], None, None
        if "apps" in point:
            workload, trace, synthetic, apps_given = None, None, None, point["apps"]
        synthetic = dict(synthetic) if synthetic is not None else None
        for k, v in point.items():
            if k in SPECIAL_AXES:
                continue
            if k.startswith("param."):
                continue
            if k.startswith("synthetic."):
                if synthetic is None:
                    raise _err(origin, f"axes.{k}", f"axis `{k}` needs a synthetic source")
                sub = k[len("synthetic."):]
                if sub not in _SYNTHETIC_KEYS:
                    raise _err(origin, f"axes.{k}", f"unknown synthetic parameter `{sub}`", _SYNTHETIC_KEYS)
                synthetic[sub] = v
                continue
            overrides.append(f"{k}={_value(v, k)}")
        given = sum(x is not None for x in (workload, trace, synthetic, apps_given))
        if given != 1:
            raise _err(origin, "source", "each run needs exactly one source: `workload`, `trace`, `synthetic` "
                       "or `apps` (in [source] or as an axis)", ["workload", "trace", "synthetic", "apps"])
        apps: Optional[list[tuple[str, str, dict[str, str]]]] = None
        if apps_given is not None:
            if known_kernels is None:
                from tessera.api import gpu_kernels

                known_kernels = gpu_kernels()
            apps = _gpu_apps(apps_given, wl_params, base, origin, "axes.apps" if "apps" in point else "source.apps",
                             known_kernels)
        if workload is not None:
            if known_workloads is None:
                # Asking the core for the workload list costs tens of ms: once per expansion.
                from tessera.api import workloads

                known_workloads = workloads()
            params = _workload_params(workload, wl_params, point, origin, known_workloads)
        elif any(k.startswith("param.") for k in point):
            raise _err(origin, "axes", "`param.*` axes apply only to workload runs")
        seed = point.get("seed", data.get("seed", 0))
        if not _is_int(seed):
            raise _err(origin, "axes.seed", f"seed must be a whole number from 0 to {2**64 - 1}, not {seed!r}")
        warmup = point.get("warmup", data.get("warmup"))
        if warmup is not None:
            where = "axes.warmup" if "warmup" in point else "warmup"
            if isinstance(warmup, bool) or not isinstance(warmup, (int, str)):
                raise _err(origin, where, f"warm-up {warmup!r} is not a count or a string like '1M instructions'")
            try:
                warmup = _core.parse_warmup(str(warmup))
            except _core.ConfigError as e:
                raise _err(origin, where, str(e)) from None

        key = (machine_name, tuple(overrides))
        if key not in resolved:
            try:
                resolved[key] = _core.resolve_config(msource[0], msource[1], overrides)
            except _core.ConfigError as e:
                where = ", ".join(f"{k} = {v!r}" for k, v in point.items()) or "the base machine"
                allowed = list(getattr(e, "allowed", []) or [])
                # The core's message already ends with the allowed values; SweepError adds them again.
                text = str(e)
                tail = f" (allowed: {', '.join(allowed)})"
                if allowed and text.endswith(tail):
                    text = text[: -len(tail)]
                raise SweepError(origin, getattr(e, "path", ""), f"run with {where}: {text}", allowed) from None
        config_toml = resolved[key]
        is_gpu = _is_gpu(config_toml)
        if (apps is not None) != is_gpu:
            where = ", ".join(f"{k} = {v!r}" for k, v in point.items()) or "the base machine"
            need = "a GPU machine runs `apps` (GPU kernels or Accel-Sim traces)" if is_gpu else \
                "`apps` run on a GPU machine (machine.kind = \"gpu\", e.g. mosaic_gpu)"
            raise _err(origin, "source", f"run with {where}: {need}")

        champsim = {k: src[k] for k in ("champsim_ifetch", "champsim_access_size") if k in src}
        if apps is not None:
            ident: dict[str, Any] = {"apps": [_app_identity(a, origin) for a in apps]}
        elif workload is not None:
            ident = {"workload": workload, "params": params}
        elif trace is not None:
            tp = Path(trace) if Path(trace).is_absolute() else base / trace
            try:
                ident = {"trace": trace_identity(str(tp))}
            except (OSError, TraceError) as e:
                raise _err(origin, "source.trace", f"trace {str(tp)!r}: {getattr(e, 'strerror', None) or e}") from None
            trace = str(tp)
            ident.update(champsim)
        else:
            assert synthetic is not None
            defaults = synthetic_defaults()
            full = {k: synthetic.get(k, defaults[k]) for k in _SYNTHETIC_KEYS}
            try:
                full["footprint"] = parse_size(full["footprint"])
            except (ValueError, TypeError, _core.TesseraError) as e:
                raise _err(origin, "source.synthetic.footprint", str(e)) from None
            try:
                full["accesses"] = parse_count(full["accesses"])
            except (ValueError, TypeError) as e:
                raise _err(origin, "source.synthetic.accesses", str(e)) from None
            synthetic = full
            ident = {"synthetic": full}
        if warmup is not None:
            # Only warmed runs carry it, so the ids of runs without one stay as they were.
            ident["warmup"] = warmup
        rid = run_id_of(config_toml, ident, seed, version)
        if rid in seen:
            raise _err(origin, "axes", f"two points of the sweep are the same run: {seen[rid]} and {point} "
                       "(an axis value that changes nothing?)")
        seen[rid] = point
        runs.append(Run(run_id=rid, point=dict(point), machine=label, machine_source=msource,
                        overrides=tuple(overrides), config_toml=config_toml, seed=seed, workload=workload,
                        params=params, trace=trace, synthetic=synthetic, champsim=champsim, warmup=warmup,
                        apps=apps))
    return runs


def _is_gpu(config_toml: str) -> bool:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ModuleNotFoundError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(config_toml).get("machine", {}).get("kind") == "gpu"


def _gpu_apps(given: Any, wl_params: Mapping[str, Mapping[str, Any]], base: Path, origin: str, key: str,
              known: Mapping[str, Any]) -> list[tuple[str, str, dict[str, str]]]:
    """A run's GPU applications as ``(kind, value, params)``: kernel names and
    parameter names checked now, ``[params.<kernel>]`` under each app's own
    ``params``, trace directories resolved against the sweep's directory."""
    from tessera.gpu import app_args

    if isinstance(given, (str, Mapping)) or not isinstance(given, list) or not given:
        raise _err(origin, key, f"`apps` is a non-empty list of applications (kernel names, {{kernel, params}} or "
                   f"{{trace}} tables), not {given!r}")
    out = []
    for app in given:
        try:
            kind, value, params = app_args(app)
        except ValueError as e:
            raise _err(origin, key, str(e)) from None
        if kind == "trace":
            p = Path(value)
            out.append((kind, str(p if p.is_absolute() else base / p), {}))
            continue
        if value not in known:
            raise _err(origin, key, f"unknown GPU kernel {value!r}", sorted(known))
        allowed = [p["name"] for p in known[value]["params"]]
        merged = {str(k): _param_str(v) for k, v in wl_params.get(value, {}).items()}
        merged.update(params)
        for k in merged:
            if k not in allowed:
                raise _err(origin, key, f"GPU kernel `{value}` has no parameter `{k}`", allowed)
        out.append((kind, value, merged))
    return out


def _app_identity(app: tuple[str, str, dict[str, str]], origin: str) -> list[Any]:
    """What decides an application's input: a kernel and its parameters, or
    the contents of a trace directory's files."""
    kind, value, params = app
    if kind != "trace":
        return [kind, value, params]
    d = Path(value)
    try:
        files = sorted(f for f in d.iterdir() if f.is_file())
        return [kind, d.name, {f.name: trace_digest(str(f)) for f in files}]
    except (OSError, TraceError) as e:
        raise _err(origin, "apps", f"trace directory {value!r}: {getattr(e, 'strerror', None) or e}") from None
