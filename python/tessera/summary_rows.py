"""The rows of the run summary's tables: number formats and label/value
tables that list only the stats a run produced (see :mod:`tessera.summary`)."""

from __future__ import annotations

import math
from typing import Any, Optional

from rich.table import Table

from tessera.result import Result

__all__ = ["fmt", "pct", "points", "fmt_stat", "kv_table", "Rows"]

#: Derived metrics that are fractions, shown as percentages.
_SHARE_SUFFIXES = ("_share", "_rate")


def fmt(v: Any) -> str:
    """Integers with thousands separators, floats with about 4 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if abs(v) >= 1e9 or abs(v) < 1e-3:
            return f"{v:.4g}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def pct(v: Optional[float]) -> str:
    return "-" if v is None or math.isnan(v) else f"{100 * v:.2f}%"


def points(v: Optional[float]) -> str:
    """A difference of two fractions shown as percentages, in percentage
    points: ``0.0105`` → ``+1.05 pp`` (not ``1.05%``, which would read as a
    relative change)."""
    return "-" if v is None or math.isnan(v) else f"{100 * v:+.2f} pp"


def fmt_stat(name: str, v: Any) -> str:
    if isinstance(v, float) and name.endswith(_SHARE_SUFFIXES):
        return pct(v)
    return fmt(v)


def kv_table(title: str) -> Table:
    t = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        header_style="bold",
        show_header=False,
        box=None,
        pad_edge=False,
        min_width=44,
    )
    t.add_column("stat", style="")
    t.add_column("value", justify="right")
    return t


class Rows:
    """Adds `label: value` rows for the stats that exist."""

    def __init__(self, result: Result, title: str) -> None:
        self.stats = result.stats
        self.table = kv_table(title)

    def add(self, label: str, name: str, *, share: bool = False, skip_zero: bool = False) -> None:
        v = self.stats.get(name)
        if v is None or (skip_zero and v == 0):
            return
        self.table.add_row(label, pct(v) if share else fmt_stat(name, v))

    def add_value(self, label: str, value: str) -> None:
        self.table.add_row(label, value)

    def done(self) -> Optional[Table]:
        return self.table if self.table.row_count else None
