"""Readable tables of results, traces and comparisons (rich).

The summary shows only stats the run produced: each section is built from the
counters and derived metrics present, so machines without caches or without
timing simply have shorter tables. All numbers come from the core; this module
only formats them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Optional, Union

from rich.console import Console
from rich.table import Table

from tessera.result import Result

__all__ = ["print_result", "result_table", "key_value_table", "comparison_table", "fmt"]

Number = Union[int, float]


def fmt(v: Any) -> str:
    """Integers with thousands separators, floats with 4 significant digits."""
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "n/a"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v != 0 and (abs(v) >= 1e7 or abs(v) < 1e-3):
            return f"{v:.4g}"
        if v == int(v) and abs(v) < 1e7:
            return f"{v:,.1f}"
        return f"{v:,.4g}" if abs(v) < 1000 else f"{v:,.1f}"
    if v is None:
        return "n/a"
    return str(v)


def _pct(v: float) -> str:
    return "n/a" if math.isnan(v) else f"{100 * v:.2f}%"


def _new_table(title: Optional[str] = None) -> Table:
    t = Table(title=title, title_justify="left", header_style="bold", show_edge=False, pad_edge=False)
    t.add_column("stat")
    t.add_column("value", justify="right")
    return t


def _section(t: Table, name: str) -> None:
    if t.row_count:
        t.add_section()
    t.add_row(f"[bold]{name}[/bold]", "")


def _group(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def result_table(result: Result) -> Table:
    """All counters and derived metrics of a run, grouped by component."""
    title = f"{result.config.get('name', 'machine')} on {result.source} (seed {result.seed})"
    t = _new_table(title)
    groups: dict[str, list[tuple[str, Number, bool]]] = {}
    for k, v in result.counters.items():
        groups.setdefault(_group(k), []).append((k, v, False))
    for k, v in result.derived.items():
        groups.setdefault(_group(k), []).append((k, v, True))
    for g in sorted(groups):
        _section(t, g or "run")
        for k, v, is_derived in groups[g]:
            label = k[len(g) + 1 :] if g else k
            value = _pct(v) if is_derived and _is_share(k) else fmt(v)
            t.add_row(f"  {label}", value)
    return t


def _is_share(name: str) -> bool:
    last = name.rsplit(".", 1)[-1]
    return last.endswith("_rate") or last.endswith("_share") or last.startswith("share_")


def print_result(result: Result, console: Console) -> None:
    console.print(result_table(result))


def key_value_table(data: Mapping[str, Any], title: Optional[str] = None) -> Table:
    t = _new_table(title)
    for k, v in data.items():
        if isinstance(v, Mapping):
            for k2, v2 in v.items():
                t.add_row(f"{k}.{k2}", fmt(v2))
        else:
            t.add_row(str(k), fmt(v))
    return t


def comparison_table(c: Mapping[str, Any], base: str, other: str) -> Table:
    return key_value_table(c, title=f"Equation 1: {base} -> {other}")
