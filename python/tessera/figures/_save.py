"""Writing figures: atomic, and byte-identical for the same data."""

from __future__ import annotations

import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional, Union

from tessera.result import atomic_target

#: File formats :func:`save` writes, by suffix.
FORMATS = ("png", "svg", "pdf")

# No time stamps in the files, so the same figure gives the same bytes.
_METADATA: dict[str, dict[str, Any]] = {
    "png": {},
    "svg": {"Date": None},
    "pdf": {"CreationDate": None, "ModDate": None},
}
# SVG element ids are hashes salted with this (matplotlib's default salt is random per process).
_SVG_HASHSALT = "tessera"


def save(
    fig: Any,
    path: Union[str, "os.PathLike[str]"],
    formats: Optional[Union[str, Sequence[str]]] = None,
    *,
    dpi: float = 150,
) -> list[Path]:
    """Write ``fig`` to ``path``; returns the files written.

    Without ``formats`` the format is the suffix of ``path`` (``.png``, ``.svg``
    or ``.pdf``). With ``formats=("png", "svg")``, ``path`` is a stem (a known
    suffix on it is dropped) and one file per format is written.

    Each file is rendered in memory and then written through a temporary file
    and a rename, so a reader never sees half a figure. SVG and PDF carry no
    date and SVG ids use a fixed salt, so the same figure gives byte-identical
    files from one run to the next.
    """
    p = Path(path)
    suffix = p.suffix.lower().lstrip(".")
    if formats is None:
        if suffix not in FORMATS:
            raise ValueError(
                f"cannot tell the format of {str(p)!r} from its suffix; use .png, .svg or .pdf, or pass formats="
            )
        targets = [(p, suffix)]
    else:
        wanted = [formats] if isinstance(formats, str) else list(formats)
        bad = [f for f in wanted if f not in FORMATS]
        if bad or not wanted:
            raise ValueError(f"unknown figure format(s) {', '.join(map(repr, bad))} (allowed: {', '.join(FORMATS)})")
        stem = p.with_suffix("") if suffix in FORMATS else p
        targets = [(stem.with_name(f"{stem.name}.{f}"), f) for f in dict.fromkeys(wanted)]

    import matplotlib as mpl

    written = []
    with mpl.rc_context({"svg.hashsalt": _SVG_HASHSALT}):
        for target, fmt in targets:
            buf = io.BytesIO()
            fig.savefig(buf, format=fmt, dpi=dpi, metadata=_METADATA[fmt])
            with atomic_target(target) as tmp:
                with open(tmp, "xb") as f:
                    f.write(buf.getvalue())
            written.append(target)
    return written

