"""What a run simulated, as a stable string: the ``source_id`` of a result.

Two results are of the same program when their ``source_id`` are equal:

- a trace: ``trace:blake2b-128:<hex>``, a hash of the file's bytes, so a
  renamed copy is the same program and an edited file with the old name is not;
- a workload: ``workload:<name> k=v ...``, every parameter the core resolves
  (defaults included, keys in order). The seed is left out: it varies the
  random choices of one program, and is recorded beside the result anyway;
- a synthetic stream: ``synthetic:<pattern> accesses=N footprint=B seed=S``;
  here the seed is the stream itself, so it is part of the identity.

Parameter values are compared as written (``1e6`` and ``1000000`` differ):
telling a count from a size needs the workload's own parser, and a false
"different" only costs a ``--force``, while a false "same" would hide a bad
comparison.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from typing import Any, Optional

from tessera.errors import TraceError

__all__ = ["trace_digest", "check_trace_readable", "source_id"]

_digests: dict[tuple[str, int, int], str] = {}


def _missing_trace(path: str, e: OSError) -> TraceError:
    err = TraceError(f"{path}: cannot read the trace: {e.strerror or e}")
    # The same attributes as the core's trace errors; there is no position in a file that cannot be opened.
    err.file = path
    err.location = None
    err.line = None
    err.offset = None
    return err


def trace_digest(path: str) -> str:
    """BLAKE2b-128 of the file's bytes, read in 1 MiB pieces. Cached by
    (real path, size, modification time), so a sweep hashes each trace once.
    A file that cannot be read is a :class:`~tessera.TraceError` naming it."""
    try:
        st = os.stat(path)
        key = (os.path.realpath(path), st.st_size, st.st_mtime_ns)
        digest = _digests.get(key)
        if digest is None:
            h = hashlib.blake2b(digest_size=16)
            with open(path, "rb") as f:
                for chunk in iter(lambda: f.read(1 << 20), b""):
                    h.update(chunk)
            digest = _digests[key] = h.hexdigest()
    except OSError as e:
        raise _missing_trace(path, e) from None
    return digest


def check_trace_readable(path: str) -> None:
    """Raise :class:`~tessera.TraceError` naming ``path`` if it cannot be opened."""
    try:
        with open(path, "rb"):
            pass
    except OSError as e:
        raise _missing_trace(path, e) from None


def source_id(
    trace: Optional[str] = None,
    synthetic: Optional[tuple[str, int, int]] = None,
    workload: Optional[tuple[str, Mapping[str, str]]] = None,
    seed: int = 0,
    defaults: Optional[Mapping[str, Any]] = None,
) -> str:
    """The identity of one of the three sources, in the forms of the module doc.

    ``synthetic`` is ``(pattern, accesses, footprint bytes)``; ``workload`` is
    ``(name, {param: text})`` and ``defaults`` its documented parameters
    (``[{"name", "default"}, ...]`` as :func:`tessera.workloads` lists them)."""
    if trace is not None:
        return f"trace:blake2b-128:{trace_digest(trace)}"
    if synthetic is not None:
        pattern, accesses, footprint = synthetic
        return f"synthetic:{pattern} accesses={accesses} footprint={footprint} seed={seed}"
    assert workload is not None
    name, given = workload
    values = {p["name"]: str(p["default"]) for p in (defaults or {}).get("params", [])}
    values.update({k: str(v).strip() for k, v in given.items()})
    return " ".join([f"workload:{name}", *(f"{k}={values[k]}" for k in sorted(values))])
