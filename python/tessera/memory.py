"""Access streams held in memory: a trace read into NumPy columns, or columns
made by the caller, simulated without a file.

The columns are those of a native trace record (``docs/trace-format.md``):

========== ======== =========================================== =========
column     dtype    meaning                                      default
========== ======== =========================================== =========
``vaddr``  uint64   virtual byte address                        required
``ins_gap`` uint32  instructions retired since the previous one 1
``asid``   uint16   address space                               0
``kind``   uint8    0 load, 1 store, 2 instruction fetch        0
``size``   uint8    bytes accessed                              8
``dep``    uint32   records back to the load whose value this   none
                    access's address needs (0: none); optional
========== ======== =========================================== =========

``dep`` is read only by the out-of-order timing model
(``timing.ooo.dependencies``, ``docs/timing.md``); a trace with
dependencies (native version 2, ChampSim) reads back with the column, one
without reads back without it. A value reaching before the first access is
an error naming ``accesses.dep``.

A run from memory gets the ``source_id`` ``memory:blake2b-128:<hash>`` of the
five columns' little-endian bytes (and ``dep``'s, when given), so two runs of the same accesses compare
whatever the columns were called or where they came from.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Optional, Union

__all__ = ["COLUMNS", "read_trace", "columns_args", "source_id"]

#: (name, little-endian dtype, default or None when required).
COLUMNS = (
    ("vaddr", "<u8", None),
    ("ins_gap", "<u4", 1),
    ("asid", "<u2", 0),
    ("kind", "<u1", 0),
    ("size", "<u1", 8),
)

#: The optional dependency column: (name, little-endian dtype).
DEP_COLUMN = ("dep", "<u4")

PathLike = Union[str, "os.PathLike[str]"]


def read_trace(
    path: PathLike,
    limit: Optional[int] = None,
    *,
    champsim_ifetch: Optional[bool] = None,
    champsim_access_size: Optional[int] = None,
) -> Any:
    """The first ``limit`` records (all by default) of a trace in any format
    Tessera reads, as a :class:`pandas.DataFrame` with the columns above.
    Memory grows with the records read (18 bytes each)."""
    import numpy as np
    import pandas as pd

    from tessera import _core

    if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 0):
        raise ValueError(f"limit must be a whole number of records, not {limit!r}")
    raw = _core.read_trace(os.fspath(path), limit, champsim_ifetch, champsim_access_size)
    cols = {name: np.frombuffer(raw[name], dtype=dtype) for name, dtype, _ in COLUMNS}
    if DEP_COLUMN[0] in raw:
        cols[DEP_COLUMN[0]] = np.frombuffer(raw[DEP_COLUMN[0]], dtype=DEP_COLUMN[1])
    return pd.DataFrame(cols)


def _column(accesses: Any, name: str, dtype: str, default: Optional[int], n: Optional[int]) -> Any:
    import numpy as np

    try:
        present = name in accesses
    except TypeError:
        present = False
    if not present:
        if default is None:
            raise ValueError(f"accesses: the column {name!r} is required (columns: {', '.join(c for c, _, _ in COLUMNS)})")
        return np.full(n or 0, default, dtype=dtype)
    a = np.asarray(accesses[name])
    if a.ndim != 1:
        raise ValueError(f"accesses.{name}: must be one value per access, not an array of shape {a.shape}")
    if a.size and a.dtype.kind not in "iub":
        raise ValueError(f"accesses.{name}: must hold whole numbers, not {a.dtype}")
    limit = np.iinfo(np.dtype(dtype)).max
    if a.size and (int(a.min()) < 0 or int(a.max()) > limit):
        raise ValueError(f"accesses.{name}: values must be between 0 and {limit}")
    return np.ascontiguousarray(a, dtype=dtype)


def columns_args(accesses: Any, name: Optional[str] = None) -> tuple[str, bytes, bytes, bytes, bytes, bytes, bytes]:
    """The core's form of an in-memory stream: a mapping or DataFrame of the
    columns above → ``(name, vaddr, ins_gap, asid, kind, size, dep)`` as
    bytes (``dep`` empty when not given)."""
    if isinstance(accesses, (str, bytes)) or not hasattr(accesses, "__getitem__"):
        raise TypeError("accesses must be a pandas DataFrame or a mapping of column name to array")
    allowed = [c for c, _, _ in COLUMNS] + [DEP_COLUMN[0]]
    extra = sorted(set(getattr(accesses, "keys", lambda: [])()) - set(allowed))
    if extra:
        raise ValueError(f"accesses: unknown column(s) {', '.join(map(str, extra))} (allowed: {', '.join(allowed)})")
    vaddr = _column(accesses, "vaddr", "<u8", None, None)
    cols = [vaddr] + [_column(accesses, c, d, default, len(vaddr)) for c, d, default in COLUMNS[1:]]
    for (c, _, _), a in zip(COLUMNS, cols):
        if len(a) != len(vaddr):
            raise ValueError(f"accesses.{c}: has {len(a)} values but vaddr has {len(vaddr)}")
    dep = b""
    try:
        has_dep = DEP_COLUMN[0] in accesses
    except TypeError:
        has_dep = False
    if has_dep:
        # The core checks its length and that no value reaches before the start.
        dep = _column(accesses, DEP_COLUMN[0], DEP_COLUMN[1], None, None).tobytes()
    label = name or f"{len(vaddr)} accesses"
    return (label, *(a.tobytes() for a in cols), dep)  # type: ignore[return-value]


def source_id(args: tuple[str, bytes, bytes, bytes, bytes, bytes, bytes]) -> str:
    """``memory:blake2b-128:<hash>`` of the columns (not of the name); an
    absent ``dep`` leaves the hash what it was before the column existed."""
    h = hashlib.blake2b(digest_size=16)
    for i, part in enumerate(args[1:]):
        if i == 5 and not part:
            continue
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    return f"memory:blake2b-128:{h.hexdigest()}"

