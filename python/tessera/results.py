"""Stored results as pandas DataFrames, and exports.

>>> df = tessera.results.load("tessera-results/store.sqlite", sweep="page-sizes")   # doctest: +SKIP

One row per run. Columns, in this order:

- ``run_id``, ``sweep``, ``machine``, ``workload``, ``source``, ``source_id``
  (``None`` for results stored before it existed), ``seed``, ``wall_s``
- ``axis.<name>``: the run's value of each axis of its sweep, as written in the sweep
- ``param.<key>``: the workload parameters the run was given
- ``warmup.records``, ``warmup.instructions``: the warm-up's length (0: none)
- every stat, counters and derived metrics, by dotted name (as :attr:`tessera.Result.stats`)
- ``config.<dotted key>``: the resolved machine (as :meth:`tessera.Result.to_row`)
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from tessera.config import flatten
from tessera.result import Result, atomic_target, phase_columns, result_from_dict, upgrade_derived, write_atomic
from tessera.store import Store, open_store

if TYPE_CHECKING:  # pragma: no cover
    import pandas

__all__ = ["load", "get", "export", "EXPORT_FORMATS", "rows_to_frame"]

EXPORT_FORMATS = ("csv", "parquet", "json")
_StoreLike = Union[Store, str, "os.PathLike[str]", None]
_FIXED = ("run_id", "sweep", "machine", "workload", "source", "source_id", "seed", "wall_s")


def _open(store: _StoreLike) -> tuple[Store, bool]:
    if isinstance(store, Store):
        return store, False
    return open_store(store, create=False), True


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    res = rec["result"]
    row: dict[str, Any] = {
        "run_id": rec["run_id"],
        "sweep": rec["sweep"],
        "machine": rec["machine"],
        "workload": rec["workload"],
        "source": res["source"],
        "source_id": res.get("source_id"),
        "seed": res["seed"],
        "wall_s": rec["wall_s"],
    }
    for k, v in rec["point"].items():
        row[f"axis.{k}"] = v
    for k, v in sorted(rec["inputs"].get("params", {}).items()):
        row[f"param.{k}"] = v
    stats = res["stats"]
    row.update(phase_columns(res.get("phases")))
    row.update(stats["counters"])
    for k, v in upgrade_derived(stats["derived"], int(res.get("stats_schema", 1))).items():
        row[k] = math.nan if v is None else v
    row.update(flatten(res["config"], "config."))
    return row


def rows_to_frame(rows: list[dict[str, Any]]) -> "pandas.DataFrame":
    """Rows → DataFrame with the column order of this module's docstring."""
    import pandas as pd

    if not rows:
        return pd.DataFrame(columns=list(_FIXED))
    seen: dict[str, None] = {}
    for r in rows:
        for k in r:
            seen.setdefault(k, None)
    cols = list(seen)

    def rank(c: str) -> tuple[int, int]:
        if c in _FIXED:
            return (0, _FIXED.index(c))
        if c.startswith("axis."):
            return (1, 0)
        if c.startswith("param."):
            return (2, 0)
        if c.startswith("config."):
            return (5, 0)
        if c.startswith("warmup."):
            return (2, 1)
        return (3, 0)

    axis_order = [c for c in cols if c.startswith("axis.")]  # sweep order, not alphabetical
    ordered = sorted(cols, key=lambda c: (rank(c), axis_order.index(c) if c in axis_order else 0, c))
    return pd.DataFrame.from_records(rows, columns=ordered)


def load(store: _StoreLike = None, sweep: Optional[str] = None) -> "pandas.DataFrame":
    """The stored runs of ``sweep`` (in sweep order), or of the whole store,
    as a DataFrame with one row per run (columns in the module docstring)."""
    st, own = _open(store)
    try:
        if sweep is not None and st.sweep_spec(sweep) is None:
            names = [s["name"] for s in st.sweeps()]
            raise KeyError(f"no sweep {sweep!r} in {st.path} (sweeps: {', '.join(names) or 'none'})")
        return rows_to_frame([_row(r) for r in st.rows(sweep)])
    finally:
        if own:
            st.close()


def get(store: _StoreLike, run_id: str) -> Result:
    """One stored run (by id or unique id prefix) as a :class:`tessera.Result`."""
    st, own = _open(store)
    try:
        rec = st.get(run_id)
    finally:
        if own:
            st.close()
    return result_from_dict(rec["result"])


def export_format(path: Union[str, "os.PathLike[str]"], format: Optional[str] = None) -> str:
    """The format :func:`export` writes ``path`` in: ``format``, else the
    suffix's; ``ValueError`` when neither names one of :data:`EXPORT_FORMATS`."""
    p = Path(path)
    fmt = format or {".csv": "csv", ".parquet": "parquet", ".pq": "parquet", ".json": "json"}.get(p.suffix.lower())
    if fmt not in EXPORT_FORMATS:
        raise ValueError(
            f"cannot tell the export format from {str(p)!r} (suffixes .csv, .parquet, .pq, .json); "
            f"name the format (--format): one of {', '.join(EXPORT_FORMATS)}"
        )
    return fmt


def export(
    store: _StoreLike,
    path: Union[str, "os.PathLike[str]"],
    format: Optional[str] = None,
    sweep: Optional[str] = None,
) -> Path:
    """Write the runs (of ``sweep``, or all) to ``path`` as CSV, Parquet or
    JSON (format from ``format`` or the suffix), atomically."""
    p = Path(path)
    fmt = export_format(p, format)
    df = load(store, sweep)
    if fmt == "csv":
        write_atomic(p, df.to_csv(index=False, lineterminator="\n"))
    elif fmt == "json":
        recs = json.loads(df.to_json(orient="records"))
        write_atomic(p, json.dumps(recs, indent=1, sort_keys=False) + "\n")
    else:
        # Mixed-type config columns (a key that is a number in one machine
        # and a string in another) would make pyarrow refuse the table.
        out = df.copy()
        for c in out.columns:
            if out[c].dtype == object:
                kinds = {type(v) for v in out[c] if v is not None and not (isinstance(v, float) and math.isnan(v))}
                if len(kinds) > 1:
                    out[c] = out[c].map(lambda v: None if v is None else str(v))
        with atomic_target(p) as tmp:
            out.to_parquet(tmp, index=False)
    return p
