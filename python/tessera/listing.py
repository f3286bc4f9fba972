"""Listings (`tessera stats`, `tessera results ls`) as a table, JSON or CSV.

On a terminal a listing is a table that fits the window. Anywhere else (a
pipe, a file) the table keeps every cell whole however wide it gets, since
those are the names a user copies; ``--format json`` and ``--format csv``
give the same rows for programs: JSON as a list of objects keyed by column,
CSV with a header row.
"""

from __future__ import annotations

import csv
import io
import json
import sys
from typing import Any, Optional, Sequence

from rich.console import Console
from rich.table import Table

__all__ = ["FORMATS", "add_format", "emit"]

#: Values of ``--format``.
FORMATS = ("table", "json", "csv")

#: Width of a console that never cuts a cell (rich measures columns to fit it).
_UNLIMITED = 1 << 20


def add_format(p: Any) -> None:
    p.add_argument(
        "--format",
        choices=FORMATS,
        default="table",
        help="table (default; whole names when not on a terminal), json (a list of objects) or csv (with a header)",
    )


def emit(
    out: Console,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    fmt: str = "table",
    title: Optional[str] = None,
) -> None:
    """Print ``rows`` (one value per column) in ``fmt``. Values keep their
    types in JSON (numbers stay numbers); the table and CSV print ``str``."""
    if fmt == "json":
        doc = [dict(zip(columns, row)) for row in rows]
        sys.stdout.write(json.dumps(doc, indent=2) + "\n")
        return
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        w.writerows([["" if v is None else v for v in row] for row in rows])
        sys.stdout.write(buf.getvalue())
        return
    table = Table(box=None, header_style="bold", title=title, title_justify="left")
    for c in columns:
        table.add_column(c)
    for row in rows:
        table.add_row(*["" if v is None else str(v) for v in row])
    if out.is_terminal:
        out.print(table)
        return
    wide = Console(width=_UNLIMITED, highlight=False, color_system=None)
    with wide.capture() as cap:
        wide.print(table)
    out.file.write("".join(line.rstrip() + "\n" for line in cap.get().splitlines()))
