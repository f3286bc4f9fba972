"""What every view shares: names → columns, filters, order, normalisation, aggregation.

A view turns a results DataFrame (one row per run, see ``tessera.results.load``)
into a small table with one row per drawn point — ``(x, hue) → value, lo, hi, n`` —
and then only draws that table. Everything that can be wrong about the data is
checked here, so the drawing code never guesses:

1. names resolve to columns (exact, then ``axis.``, ``param.``, ``config.``,
   or a stats-schema-1 ``derived.`` name), or raise ``ValueError`` with close matches;
2. ``where`` keeps the runs whose column matches one of the given values;
3. any other swept axis that still varies inside one bar or point is an error
   (averaging over it would hide a result), except the seed, whose runs are
   replicates;
4. ``baseline`` divides every run by its paired baseline run: same values on
   every grouping column except the baseline's own columns (so each seed is
   paired with the same seed);
5. replicates are reduced with ``agg``; their spread gives the error bars.

Values are compared and grouped by their label (``512``, ``512.0`` and ``"512"``
are all ``512``), which is also what the figure shows.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from typing import Any, Optional, Union

import numpy as np
import pandas as pd

#: Tried in this order after the exact name (see :func:`resolve_column`).
PREFIXES = ("axis.", "param.", "config.")
#: Columns whose runs are replicates of one another: averaged, never an error.
REPLICATE_COLUMNS = ("axis.seed", "seed")
#: Columns that tell runs apart besides the ``axis.*`` columns.
EXTRA_GROUP_COLUMNS = ("sweep",)
#: Ways to reduce the runs of one bar or point to one value.
AGGS = ("mean", "median", "min", "max")
#: How the spread of the runs of one bar or point is drawn (``None``: not at all).
ERRORBARS = ("minmax", "std", None)

Baseline = Union[None, Any, Mapping[str, Any]]
Where = Optional[Mapping[str, Any]]

_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)
_SIZE_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40, "p": 50}


# ------------------------------------------------------------------ names


def resolve_column(df: pd.DataFrame, name: str) -> str:
    """The column ``name`` refers to: ``name`` itself, else ``axis.<name>``,
    ``param.<name>``, ``config.<name>`` (first that exists). A derived
    metric's old name (``derived.walks_pki``, stats schema 1) is an alias of
    its current one (``walker.walks_pki``), and a name without a dot is the
    one stat column that ends with it (``walks_pki``).

    Raises ``ValueError`` naming close matches and the available axis columns.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a column name must be a non-empty string, not {name!r}")
    from tessera.result import current_stat_name

    # `physmem.page_size` and `physmem.page_size.kind` name one mechanism
    # choice: a sweep axis is recorded as the former, the resolved config
    # flattens to the latter.
    canonical = name[: -len(".kind")] if name.endswith(".kind") else name
    for n in dict.fromkeys((name if name in df.columns else canonical, canonical, canonical + ".kind")):
        for candidate in (n, *(p + n for p in PREFIXES)):
            if candidate in df.columns:
                return candidate
    if current_stat_name(name) in df.columns:
        return current_stat_name(name)
    # A bare metric name (`walks_pki`) is the one stat column it ends.
    if "." not in name:
        ends = [str(c) for c in df.columns if str(c).endswith("." + name) and not str(c).startswith(PREFIXES)]
        if len(ends) == 1:
            return ends[0]
    raise ValueError(_unknown_column_message(df, name))


def _unknown_column_message(df: pd.DataFrame, name: str) -> str:
    # Match against the names users type (prefix stripped) as well as the full
    # names, so "physmem.pagesize" finds "axis.physmem.page_size".
    typed: dict[str, str] = {}
    for col in map(str, df.columns):
        typed.setdefault(col, col)
        for p in PREFIXES:
            if col.startswith(p):
                typed.setdefault(col[len(p) :], col)
    close: list[str] = []
    for match in difflib.get_close_matches(name, list(typed), n=10, cutoff=0.6):
        if typed[match] not in close:
            close.append(typed[match])
    # A sweep's axes are what a figure is usually about: name them first.
    close.sort(key=lambda c: not c.startswith("axis."))
    axes = [str(c) for c in df.columns if str(c).startswith("axis.")]
    msg = f"unknown column {name!r}"
    msg += f"; did you mean {', '.join(close[:5])}?" if close else "; no similar column."
    msg += f" Axis columns: {', '.join(axes)}." if axes else " This DataFrame has no axis.* columns."
    msg += (" (A name is looked up as given, then as axis.NAME, param.NAME and config.NAME;"
            " a name without a dot may also be the one stat that ends with it.)")
    return msg


def short_name(col: str) -> str:
    """How a column is named on a figure: without ``axis.`` or ``config.``."""
    for p in ("axis.", "config."):
        if col.startswith(p):
            return col[len(p) :]
    return col


#: Unit of the stats that are shares of a whole (0..1); figures show them in %.
FRACTION_UNIT = "fraction"
#: Stat families whose second name segment is a structure the user named
#: (``mmu.<tlb>.``, ``cache.<level>.``): any name there means the same.
_NAMED_STRUCTURES = ("mmu", "cache")
_PLACEHOLDER = re.compile(r"<[^>]+>")
#: Axis labels are wrapped: one line would often be longer than the axis is tall.
_WRAP = dict(width=40, break_long_words=False, break_on_hyphens=False)


@functools.lru_cache(maxsize=1)
def _stat_doc_index() -> tuple[dict[str, tuple[str, str]], tuple[tuple[Any, tuple[str, str]], ...]]:
    """Every stat's ``(unit, description)``, as ``tessera stats`` prints them:
    exact names, and patterns for the names that contain a structure's name."""
    from tessera import _core, api

    exact: dict[str, tuple[str, str]] = {}
    for preset in api.presets():
        exact.update(api.stat_docs(preset))
    patterns: dict[str, tuple[str, str]] = {}
    for name, doc in exact.items():
        parts = name.split(".")
        if parts[0] in _NAMED_STRUCTURES and len(parts) == 3 and parts[1] not in ("psc", "dram"):
            patterns.setdefault(re.escape(parts[0]) + r"\.[^.]+\." + re.escape(parts[2]), doc)
    for name, doc in _core.derived_docs().items():
        if _PLACEHOLDER.search(name):
            pieces = re.split(r"(<[^>]+>)", name)
            rx = "".join(r"[^.]+" if _PLACEHOLDER.fullmatch(t) else re.escape(t) for t in pieces if t)
            patterns.setdefault(rx, doc)
        else:
            exact.setdefault(name, doc)
    return exact, tuple((re.compile(rx + r"\Z"), doc) for rx, doc in patterns.items())


def stat_doc(col: str) -> Optional[tuple[str, str]]:
    """``(unit, description)`` of the stat in column ``col``, or ``None`` for a
    column that is not a stat (an axis, a config value)."""
    exact, patterns = _stat_doc_index()
    if col in exact:
        return exact[col]
    for rx, doc in patterns:
        if rx.match(col):
            return doc
    return None


def stat_label(col: str) -> tuple[str, Optional[str], float]:
    """How a figure names the values of column ``col``: ``(what, unit,
    factor)``. A stat is named by its description and unit, and a fraction is
    drawn in % (values × 100); any other column by its name, unscaled."""
    doc = stat_doc(col)
    if doc is None:
        return short_name(col), None, 1.0
    unit, desc = doc
    if unit == FRACTION_UNIT:
        return desc, "%", 100.0
    return desc, unit, 1.0


def _same_dimension(col: str) -> set[str]:
    # `workload` and `axis.workload` (or `seed` and `axis.seed`) hold the same
    # values; choosing one as x or hue must not leave the other as a stray axis.
    return {col, col[len("axis.") :]} if col.startswith("axis.") else {col, "axis." + col}


# ----------------------------------------------------------------- values


def label(value: Any) -> str:
    """The text a value is shown and matched as (``512.0`` → ``"512"``, ``None`` → ``"none"``;
    an inline table by its ``kind`` with its other keys in brackets,
    ``{ kind = "coalescing", group = 8 }`` → ``"coalescing (group=8)"``; a list as ``[a, b]``)."""
    if isinstance(value, Mapping):
        rest = ", ".join(f"{k}={label(v)}" for k, v in value.items() if k != "kind")
        if "kind" in value:
            return label(value["kind"]) + (f" ({rest})" if rest else "")
        return "{" + rest + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(label(v) for v in value) + "]"
    if value is None or (not isinstance(value, (str, list, tuple, dict)) and pd.isna(value)):
        return "none"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return str(int(f)) if f.is_integer() else repr(f)
    return str(value)


def sort_key(value: Any) -> Optional[float]:
    """A number to order ``value`` by: numbers as they are, and strings that read
    as sizes or counts (``"4k"``, ``"2MiB"``, ``"512"``) by their binary value;
    ``None`` when the value has no numeric reading."""
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        f = float(value)
        return None if math.isnan(f) else f
    if isinstance(value, str):
        m = _SIZE.match(value)
        if m:
            return float(m.group(1)) * (1 << _SIZE_SHIFT[m.group(2).lower()])
    return None


def _matches(series: pd.Series, wanted: Any) -> pd.Series:
    """Rows of ``series`` equal to ``wanted`` (or to any of a list of values),
    by label or by number, so ``"512"`` from a command line finds ``512``."""
    values = list(wanted) if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
    labels = series.map(label)
    numbers = series.map(_as_number)
    hit = pd.Series(False, index=series.index)
    for v in values:
        hit |= labels == label(v)
        n = _as_number(v)
        if n is not None:
            hit |= numbers == n
    return hit


def _as_number(value: Any) -> Optional[float]:
    if isinstance(value, (bool, np.bool_)):
        return None
    if isinstance(value, (int, float, np.integer, np.floating)):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def ordered_values(values: Sequence[Any], explicit: Optional[Sequence[Any]], what: str, col: str) -> list[str]:
    """The labels of ``values`` in drawing order.

    ``explicit`` (if given) is the order and also a selection. Otherwise:
    ordered categoricals keep their order, values that all read as numbers or
    sizes are sorted by it, and anything else keeps its first-appearance order.
    """
    present: dict[str, Any] = {}
    for v in values:
        present.setdefault(label(v), v)
    if explicit is not None:
        out = [label(v) for v in explicit]
        missing = [v for v in out if v not in present]
        if missing:
            raise ValueError(
                f"{what} {', '.join(map(repr, missing))} not found in column {col}; "
                f"its values are {', '.join(present)}"
            )
        return list(dict.fromkeys(out))
    keys = {k: sort_key(v) for k, v in present.items()}
    if all(k is not None for k in keys.values()):
        return sorted(present, key=lambda k: keys[k])  # type: ignore[arg-type,return-value]
    return list(present)


# ------------------------------------------------------------ preparation


@dataclasses.dataclass
class Prepared:
    """One row per drawn point, in drawing order, plus what the axes say."""

    #: index ``(x label, hue label)``; columns ``value``, ``lo``, ``hi``, ``n``.
    table: pd.DataFrame
    x_col: str
    x_labels: list[str]
    #: the first original value of each x label (for positions on a numeric axis).
    x_values: dict[str, Any]
    hue_col: Optional[str]
    #: ``[""]`` when there is no hue.
    hue_labels: list[str]
    y_col: str
    ylabel: str
    normalised: bool
    #: the largest number of runs behind one point.
    max_runs: int
    errorbars: Optional[str]
    agg: str
    notes: list[str]

    def get(self, x: str, hue: str) -> tuple[float, float, float, int]:
        try:
            r = self.table.loc[(x, hue)]
        except KeyError:
            return (math.nan, math.nan, math.nan, 0)
        return (float(r["value"]), float(r["lo"]), float(r["hi"]), int(r["n"]))

    def spread_caption(self, shape: str) -> Optional[str]:
        """Says what a point and its ``shape`` (whiskers, bands) are when more than one run makes a point."""
        if self.max_runs <= 1:
            return None
        spread = {"minmax": f"; {shape}: min to max", "std": f"; {shape}: ±1 std", None: ""}[self.errorbars]
        return f"{self.agg} of up to {self.max_runs} runs per point{spread}"


def prepare(
    df: pd.DataFrame,
    y: str,
    x: str,
    hue: Optional[str],
    *,
    baseline: Baseline,
    where: Where,
    agg: str,
    errorbars: Optional[str],
    order: Optional[Sequence[Any]],
    hue_order: Optional[Sequence[Any]],
    ylabel: Optional[str],
) -> Prepared:
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"expected a pandas DataFrame, not {type(df).__name__}")
    if agg not in AGGS:
        raise ValueError(f"unknown agg {agg!r} (allowed: {', '.join(AGGS)})")
    if errorbars not in ERRORBARS:
        raise ValueError(f"unknown errorbars {errorbars!r} (allowed: minmax, std, None)")
    if df.empty:
        raise ValueError("no runs to plot: the DataFrame is empty")

    y_col = resolve_column(df, y)
    x_col = resolve_column(df, x)
    hue_col = resolve_column(df, hue) if hue is not None else None
    if hue_col is not None and hue_col in _same_dimension(x_col):
        raise ValueError(f"x and hue are the same column ({x_col}); choose different ones")
    if not pd.api.types.is_numeric_dtype(df[y_col]) or pd.api.types.is_bool_dtype(df[y_col]):
        raise ValueError(f"y column {y_col} is not numeric (dtype {df[y_col].dtype}); plot a stat")

    d = _apply_where(df, where)
    if d[x_col].isna().all():
        axes = [str(c) for c in d.columns if str(c).startswith("axis.")]
        raise ValueError(
            f"x column {x_col} has no values in these runs; choose another x"
            + (f" (axis columns: {', '.join(axes)})" if axes else "")
        )

    d = d.assign(_x=d[x_col].map(label), _h=d[hue_col].map(label) if hue_col else "")
    x_labels = ordered_values(d[x_col].tolist(), order, "order value", x_col)
    hue_labels = ordered_values(d[hue_col].tolist(), hue_order, "hue_order value", hue_col) if hue_col else [""]

    chosen = _same_dimension(x_col) | (_same_dimension(hue_col) if hue_col else set())
    replicates = [c for c in REPLICATE_COLUMNS if c in d.columns and c not in chosen]
    others = [
        c
        for c in d.columns
        if isinstance(c, str)
        and (c.startswith("axis.") or c in EXTRA_GROUP_COLUMNS)
        and c not in chosen
        and c not in replicates
    ]
    keys = {c: d[c].map(label) for c in replicates + others}
    _check_no_stray_axis(d, others, keys)

    values = d[y_col].astype(float)
    y_what, y_unit, y_factor = stat_label(y_col)
    normalised = baseline is not None
    if normalised:
        # A ratio has no unit, and scaling both sides would cancel.
        values, what = _normalise(d, values, x_col, hue_col, baseline, replicates + others, keys)
        default_ylabel = "\n".join(textwrap.wrap(y_what, **_WRAP) + textwrap.wrap(f"normalised to {what}", **_WRAP))
    else:
        values = values * y_factor
        default_ylabel = "\n".join(textwrap.wrap(f"{y_what} ({y_unit})" if y_unit else y_what, **_WRAP))

    # An explicit order is also a selection, made after normalising so that
    # the baseline need not be drawn (hue_order=["thp"], baseline="4k").
    selected = d["_x"].isin(x_labels) & d["_h"].isin(hue_labels)
    d, values = d[selected], values[selected]
    x_values: dict[str, Any] = {}
    for v in d[x_col]:
        x_values.setdefault(label(v), v)

    table, max_runs = _aggregate(d["_x"], d["_h"], values, agg, errorbars)
    return Prepared(
        table=table,
        x_col=x_col,
        x_labels=x_labels,
        x_values=x_values,
        hue_col=hue_col,
        hue_labels=hue_labels,
        y_col=y_col,
        ylabel=ylabel if ylabel is not None else default_ylabel,
        normalised=normalised,
        max_runs=max_runs,
        errorbars=errorbars,
        agg=agg,
        notes=[],
    )


def _apply_where(df: pd.DataFrame, where: Where) -> pd.DataFrame:
    if not where:
        return df
    if not isinstance(where, Mapping):
        raise TypeError("where must be a mapping {column: value or list of values}")
    keep = pd.Series(True, index=df.index)
    for name, wanted in where.items():
        col = resolve_column(df, name)
        hit = _matches(df[col], wanted)
        if not hit.any():
            avail = ", ".join(dict.fromkeys(df[col].map(label)))
            given = wanted if isinstance(wanted, (list, tuple, set, frozenset)) else [wanted]
            raise ValueError(
                f"where {name}={'|'.join(label(v) for v in given)}: no run has that value; {col} takes {avail}"
            )
        keep &= hit
    if not keep.any():
        raise ValueError(f"no run matches every where condition ({', '.join(map(str, where))}) together")
    return df[keep]


def _check_no_stray_axis(d: pd.DataFrame, others: list[str], keys: Mapping[str, pd.Series]) -> None:
    """A swept axis that varies inside one (x, hue) group would be silently averaged over."""
    if not others:
        return
    frame = pd.DataFrame({"_x": d["_x"], "_h": d["_h"], **{c: keys[c] for c in others}})
    counts = frame.groupby(["_x", "_h"], sort=False)[others].nunique()
    stray = [c for c in others if (counts[c] > 1).any()]
    if not stray:
        return
    col = stray[0]
    gx, gh = counts.index[(counts[col] > 1).to_numpy()][0]
    inside = frame[(frame["_x"] == gx) & (frame["_h"] == gh)][col]
    where_txt = f"x={gx}" + (f", hue={gh}" if gh else "")
    hint = "pick one sweep with --sweep or where={'sweep': ...}" if col == "sweep" else (
        f"keep one value with where={{'{short_name(col)}': VALUE}} (--where {short_name(col)}=VALUE), "
        "or plot it as x or hue"
    )
    raise ValueError(
        f"{col} takes several values ({', '.join(dict.fromkeys(inside))}) within one point ({where_txt}); "
        f"averaging over it would hide a result: {hint}"
        + (f". Other columns that vary the same way: {', '.join(stray[1:])}" if len(stray) > 1 else "")
    )


def _normalise(
    d: pd.DataFrame,
    values: pd.Series,
    x_col: str,
    hue_col: Optional[str],
    baseline: Baseline,
    group_cols: list[str],
    keys: Mapping[str, pd.Series],
) -> tuple[pd.Series, str]:
    """Divide each run by the mean of its baseline runs: those matching ``baseline``
    and equal to it on every grouping column that the baseline does not name."""
    if isinstance(baseline, Mapping):
        if not baseline:
            raise ValueError("baseline mapping is empty")
        spec = {resolve_column(d, k): v for k, v in baseline.items()}
    else:
        if hue_col is None:
            raise ValueError(
                f"baseline={baseline!r} names a hue value, but there is no hue; "
                "give hue=..., or a mapping such as baseline={'workload': 'gups'}"
            )
        spec = {hue_col: baseline}
    # A hue value is named alone: the legend already says which column it is.
    what = label(baseline) if not isinstance(baseline, Mapping) else (
        ", ".join(f"{short_name(c)}={label(v)}" for c, v in spec.items())
    )

    is_base = pd.Series(True, index=d.index)
    for col, wanted in spec.items():
        hit = _matches(d[col], wanted)
        if not hit.any():
            avail = ", ".join(dict.fromkeys(d[col].map(label)))
            raise ValueError(f"baseline {short_name(col)} = {label(wanted)} is not in these runs; {col} takes {avail}")
        is_base &= hit
    if not is_base.any():
        raise ValueError(f"no run matches the whole baseline ({what})")

    named = set().union(*(_same_dimension(c) for c in spec))
    pair: dict[str, pd.Series] = {}
    if x_col not in named:
        pair["_x"] = d["_x"]
    if hue_col is not None and hue_col not in named:
        pair["_h"] = d["_h"]
    for c in group_cols:
        if c not in named:
            pair[c] = keys[c]

    if not pair:
        base = float(values[is_base].mean())
        if base == 0 or math.isnan(base):
            raise ValueError(f"cannot normalise: the baseline ({what}) value of {values.name} is {base}")
        return values / base, what

    frame = pd.DataFrame(pair)
    cols = list(pair)
    base_means = values[is_base].groupby([frame.loc[is_base, c] for c in cols], sort=False).mean()
    base_means.index.names = cols
    joined = frame.join(base_means.rename("_base"), on=cols)["_base"]
    missing = joined.isna() & ~values.isna()
    if missing.any():
        first = frame[missing].drop_duplicates().head(3)
        combos = "; ".join(
            ", ".join(f"{_pair_name(c, x_col, hue_col)}={row[c]}" for c in cols) for _, row in first.iterrows()
        )
        raise ValueError(
            f"cannot normalise to {what}: no baseline run (or a NaN baseline value) for {combos}"
            + (f" (and {int(missing.sum()) - len(first)} more runs)" if missing.sum() > len(first) else "")
        )
    zero = joined == 0
    if zero.any():
        row = frame[zero].iloc[0]
        combo = ", ".join(f"{_pair_name(c, x_col, hue_col)}={row[c]}" for c in cols)
        raise ValueError(f"cannot normalise to {what}: the baseline {values.name} is 0 for {combo}")
    return values / joined, what


def _pair_name(c: str, x_col: str, hue_col: Optional[str]) -> str:
    return {"_x": short_name(x_col), "_h": short_name(hue_col or "")}.get(c, short_name(c))


def _aggregate(
    xs: pd.Series, hs: pd.Series, values: pd.Series, agg: str, errorbars: Optional[str]
) -> tuple[pd.DataFrame, int]:
    grouped = values.groupby([xs.rename("x"), hs.rename("hue")], sort=False)
    table = grouped.agg(["mean", "median", "min", "max", "std", "count"])
    table["value"] = table[agg]
    if errorbars == "std":
        # One run has no spread: draw no whisker rather than NaN.
        std = table["std"].fillna(0.0)
        table["lo"], table["hi"] = table["value"] - std, table["value"] + std
    else:
        table["lo"], table["hi"] = table["min"], table["max"]
    table["n"] = table["count"].astype(int)
    max_runs = int(grouped.size().max()) if len(table) else 0
    return table[["value", "lo", "hi", "n"]], max_runs


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive, finite values (NaN for none)."""
    vals = [v for v in values if v > 0 and math.isfinite(v)]
    if not vals:
        return math.nan
    return math.exp(sum(math.log(v) for v in vals) / len(vals))
