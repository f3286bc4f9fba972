"""The result of one run, and its files.

A result file holds everything needed to trace a number back to the machine
that produced it:

.. code-block:: json

    {
      "config": {...},            // the resolved machine, every default written out
      "config_toml": "...",       // the same, as the TOML text the core wrote
      "seed": 0,
      "source": "trace:sort.tess",
      "phases": {"warmup": {"records": 0, "instructions": 0},
                 "measured": {"records": 300000, "instructions": 900000}},
      "source_id": "trace:blake2b-128:5c1f…",  // what was simulated, by content
      "stats": {"counters": {...}, "derived": {...}},
      "stats_schema": 2,
      "tessera_version": "0.1.0",
      "warnings": ["os.eviction: the linux_sampled scan's period ..."]
    }

Stats schema 2 (``docs/stats.md``): counters and derived metrics share one
namespace of dotted names (``walker.walks``, ``walker.walks_pki``,
``mmu.l2_tlb.mpki``); the set of names depends only on the machine, and a
metric that is undefined for a run (a zero denominator) is ``null`` in JSON,
empty in CSV and NaN in Python. Files of schema 1 (derived metrics under
``derived.``) are read and renamed.

``warnings`` (left out when there are none) says what the run could not
exercise although the machine asks for it (:mod:`tessera.run_warnings`), such
as a sampled scan whose period is longer than the run.

Files are deterministic (sorted keys, no time stamps or host names): the same
config, input and seed give byte-identical files. They are written atomically
(temporary file + rename), so a failed or interrupted run never leaves a
partial file behind.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import math
import os
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from tessera import _core
from tessera.config import flatten, loads_toml
from tessera.errors import ResultFileError
from tessera.run_warnings import run_warnings

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["Result", "load_result", "write_atomic", "atomic_target", "FORMATS"]

#: Result file formats accepted by :meth:`Result.save`.
FORMATS = ("json", "csv")

_PathLike = Union[str, "os.PathLike[str]"]


def _as_float(x: Optional[float]) -> float:
    # Saved files write non-finite metrics as null.
    return float("nan") if x is None else float(x)


def _finite_or_none(x: float) -> Optional[float]:
    return x if isinstance(x, (int, float)) and math.isfinite(x) else None


#: The version of the stats schema this Tessera writes.
STATS_SCHEMA: int = _core.STATS_SCHEMA
_RENAMED: dict[str, str] = dict(_core.renamed_stats())


def current_stat_name(name: str) -> str:
    """The schema-2 name of a stat given by its schema-1 name (other names unchanged)."""
    if name in _RENAMED:
        return _RENAMED[name]
    for old in ("derived.mmu.", "derived.cache."):
        if name.startswith(old):
            return name[len("derived.") :]
    return name


def upgrade_derived(derived: Mapping[str, Any], schema: int) -> dict[str, Any]:
    """Derived metrics of a file written with stats schema ``schema``, named as today."""
    if schema >= 2:
        return dict(derived)
    return {current_stat_name(k): v for k, v in derived.items()}


#: Stats the core reports about the host rather than the simulated machine.
HOST_PREFIX = "host."


class Result:
    """Stats, resolved config and provenance of one run.

    - ``counters``: ``{dotted name: int}`` raw event counts.
    - ``derived``: ``{name: float}`` metrics computed by the core from the
      counters and the machine (``walker.walks_pki``, ``mmu.<tlb>.mpki``; NaN
      where the denominator is zero in this run).
    - ``stats``: one flat dict: the counters and the derived metrics, under
      the same names as in every other output.
    - ``phases``: ``{"warmup": {"records", "instructions"}, "measured": {...}}``
      (``None`` for results saved before warm-ups existed).
    - ``config``: the resolved machine as a dict; ``config_toml`` the same as text.
    - ``source``: what was simulated (``trace:<file>`` or ``synthetic:...``).
    - ``source_id``: a stable identity of the simulated stream, for telling
      whether two results ran the same program (see :func:`tessera.source_id`):
      ``trace:blake2b-128:<hex>`` (content hash of the trace file, whatever
      its name), ``workload:<name> k=v ...`` (every resolved parameter, seed
      left out) or ``synthetic:<pattern> accesses=N footprint=B seed=S``.
      ``None`` for results saved by a Tessera that did not record it.
    - ``seed``, ``version`` (the Tessera version that produced it).
    - ``host``: what the run took of the host, not of the simulated machine:
      ``{"peak_heap_bytes": int}``, the most heap the run held at once
      (deterministic, see ``docs/stats.md``); empty for results saved before
      it was measured. Kept apart from ``counters`` so that comparing two
      machines never compares their host memory.
    - ``timing_dependencies``: under the out-of-order timing model
      (``timing.kind = "ooo"``), where its loads' dependencies came from:
      ``"from the stream"``, or ``"assumed: each load depends on the previous
      one with probability p"`` for a source that carries none (Lackey, QEMU,
      synthetic); ``None`` when no out-of-order model ran.
    - ``warnings``: what the run could not exercise although the machine
      asks for it (:func:`tessera.run_warnings.run_warnings`, computed from
      ``config`` and ``counters``), e.g. a sampled scan whose period is
      longer than the run; empty for most runs.
    """

    __slots__ = ("counters", "derived", "config_toml", "source", "source_id", "seed", "version", "phases", "host",
                 "timing_dependencies", "_config", "_warnings")

    def __init__(
        self,
        *,
        counters: Mapping[str, int],
        derived: Mapping[str, Optional[float]],
        config_toml: str,
        source: str,
        seed: int,
        version: str,
        phases: Optional[Mapping[str, Mapping[str, int]]] = None,
        source_id: Optional[str] = None,
        host: Optional[Mapping[str, int]] = None,
        timing_dependencies: Optional[str] = None,
    ) -> None:
        self.counters: dict[str, int] = {k: int(counters[k]) for k in sorted(counters) if not k.startswith(HOST_PREFIX)}
        self.host: dict[str, int] = {k[len(HOST_PREFIX):]: int(v) for k, v in sorted(counters.items()) if k.startswith(HOST_PREFIX)}
        self.host.update({k: int(v) for k, v in sorted((host or {}).items())})
        self.derived: dict[str, float] = {k: _as_float(v) for k, v in sorted(derived.items())}
        self.phases: Optional[dict[str, dict[str, int]]] = (
            None if phases is None else {p: {k: int(v) for k, v in phases[p].items()} for p in ("warmup", "measured")}
        )
        self.config_toml = config_toml
        self.source = source
        self.source_id = source_id
        self.seed = int(seed)
        self.version = version
        self.timing_dependencies = timing_dependencies
        self._config: Optional[dict[str, Any]] = None
        self._warnings: Optional[list[str]] = None

    @classmethod
    def _from_core(cls, raw: Mapping[str, Any], source_id: Optional[str] = None) -> "Result":
        return cls(
            counters=raw["counters"],
            derived=raw["derived"],
            config_toml=raw["config_toml"],
            source=raw["source"],
            seed=raw["seed"],
            version=raw["version"],
            phases=raw["phases"],
            source_id=source_id,
            timing_dependencies=raw.get("timing_dependencies"),
        )

    # ----------------------------------------------------------------- views

    @property
    def config(self) -> dict[str, Any]:
        """The resolved machine description as a dict (parsed from ``config_toml``)."""
        if self._config is None:
            self._config = loads_toml(self.config_toml)
        return self._config

    @property
    def warnings(self) -> list[str]:
        """What the run could not exercise although its machine asks for it
        (computed from ``config`` and ``counters``, so a file read back, of
        any version, has the same warnings as the run that wrote it)."""
        if self._warnings is None:
            self._warnings = run_warnings(self.config, self.counters)
        return list(self._warnings)

    @property
    def stats(self) -> dict[str, Union[int, float]]:
        """Counters and derived metrics in one flat dict, under their names."""
        out: dict[str, Union[int, float]] = dict(self.counters)
        out.update(self.derived)
        return out

    def __getitem__(self, name: str) -> Union[int, float]:
        return self.stats[current_stat_name(name)]

    def __repr__(self) -> str:
        name = self.config.get("name", "?")
        return f"<tessera.Result {name} on {self.source}: {len(self.counters)} counters, {len(self.derived)} derived>"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Result):
            return NotImplemented
        return self.to_json() == other.to_json()

    __hash__ = None  # type: ignore[assignment]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready form written by :meth:`save` (undefined metrics are ``None``)."""
        out = {
            "tessera_version": self.version,
            "seed": self.seed,
            "source": self.source,
            "config": self.config,
            "config_toml": self.config_toml,
            "stats_schema": STATS_SCHEMA,
            "stats": {
                "counters": dict(self.counters),
                "derived": {k: _finite_or_none(v) for k, v in self.derived.items()},
            },
        }
        if self.phases is not None:
            out["phases"] = self.phases
        if self.source_id is not None:
            out["source_id"] = self.source_id
        if self.host:
            out["host"] = dict(self.host)
        if self.timing_dependencies is not None:
            out["timing_dependencies"] = self.timing_dependencies
        if self.warnings:
            out["warnings"] = self.warnings
        return out

    def to_json(self) -> str:
        """Deterministic JSON text (sorted keys, two-space indent, trailing newline)."""
        return json.dumps(self.to_dict(), sort_keys=True, indent=2, allow_nan=False, ensure_ascii=False) + "\n"

    def to_row(self) -> dict[str, Any]:
        """One flat row: ``seed``, ``source``, the phase lengths
        (``warmup.records``, ``warmup.instructions``), every stat, and
        ``config.<dotted key>``."""
        row: dict[str, Any] = {"seed": self.seed, "source": self.source}
        if self.source_id is not None:
            row["source_id"] = self.source_id
        if self.timing_dependencies is not None:
            row["timing_dependencies"] = self.timing_dependencies
        row.update(phase_columns(self.phases))
        row.update(self.stats)
        row.update({HOST_PREFIX + k: v for k, v in self.host.items()})
        row.update(flatten(self.config, "config."))
        return row

    def to_pandas(self) -> "pandas.DataFrame":
        """A one-row DataFrame with one column per stat plus ``config.<dotted key>`` columns."""
        import pandas as pd

        return pd.DataFrame([self.to_row()])

    def to_csv(self) -> str:
        """One header row and one data row of :meth:`to_row`."""
        row = self.to_row()
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(list(row))
        w.writerow([_csv_cell(v) for v in row.values()])
        return buf.getvalue()

    # ----------------------------------------------------------------- files

    def save(self, path: _PathLike, format: Optional[str] = None) -> Path:
        """Write the result atomically as ``"json"`` (default) or ``"csv"``.

        With ``format=None`` the format follows the file's suffix (``.csv`` →
        CSV, anything else → JSON).
        """
        p = Path(path)
        fmt = format or ("csv" if p.suffix.lower() == ".csv" else "json")
        if fmt not in FORMATS:
            raise ValueError(f"unknown result format {fmt!r} (allowed: {', '.join(FORMATS)})")
        text = self.to_json() if fmt == "json" else self.to_csv()
        write_atomic(p, text)
        return p


def phase_columns(phases: Optional[Mapping[str, Mapping[str, int]]]) -> dict[str, Any]:
    """The warm-up's length as row columns (the measured phase's is
    ``core.records`` and ``core.instructions``); NaN when unknown."""
    w = (phases or {}).get("warmup", {})
    return {f"warmup.{k}": w.get(k, math.nan) for k in ("records", "instructions")}


def _csv_cell(v: Any) -> Any:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else ""
    return v


@contextlib.contextmanager
def atomic_target(path: _PathLike) -> Iterator[Path]:
    """A temporary path beside ``path`` to write to; renamed over ``path``
    when the block succeeds, removed when it fails (Ctrl-C included), so
    readers never see a partial file."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        yield tmp
        os.replace(tmp, p)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def write_atomic(path: _PathLike, text: str) -> None:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_target`)."""
    with atomic_target(path) as tmp:
        # open(..., "x") rather than mkstemp: the file gets the usual umask permissions.
        with open(tmp, "x", encoding="utf-8", newline="\n") as f:
            f.write(text)


def result_from_dict(data: Mapping[str, Any]) -> Result:
    """A :class:`Result` from its JSON form (:meth:`Result.to_dict`), of any stats schema."""
    stats = data["stats"]
    return Result(
        counters=stats["counters"],
        derived=upgrade_derived(stats["derived"], int(data.get("stats_schema", 1))),
        config_toml=data["config_toml"],
        source=data["source"],
        seed=data["seed"],
        version=data["tessera_version"],
        phases=data.get("phases"),
        source_id=data.get("source_id"),
        host=data.get("host"),
        timing_dependencies=data.get("timing_dependencies"),
    )


_RESULT_HINT = "a result is the JSON file `tessera run --out FILE.json` writes"


def load_result(path: _PathLike) -> Result:
    """Read a JSON result file written by :meth:`Result.save` or ``tessera run --out``."""
    p = os.fspath(path)
    try:
        with open(p, encoding="utf-8") as f:
            data = json.load(f)
    except OSError as e:
        raise ResultFileError(p, e.strerror or str(e)) from None
    except UnicodeDecodeError:
        # A native trace or a Parquet export, most likely: say what is expected.
        raise ResultFileError(p, f"not a JSON result file (binary data); {_RESULT_HINT}") from None
    except ValueError as e:
        raise ResultFileError(p, f"not a JSON result file ({e}); {_RESULT_HINT}") from None
    try:
        return result_from_dict(data)
    except (KeyError, TypeError, ValueError) as e:
        raise ResultFileError(p, f"not a Tessera result file (missing or bad {e})") from None
