"""The exceptions Tessera raises.

Every failure a user can cause is a :class:`TesseraError`; the subclasses carry
the details as attributes:

- :class:`ConfigError` — ``path`` (dotted key such as ``mmu.tlb.l2_tlb.ways``)
  and ``allowed`` (the accepted values, possibly empty).
- :class:`TraceError` — ``file``, ``location`` (``"line 3"`` or
  ``"byte offset 96"``), and ``line`` / ``offset`` (one of them is ``None``).
- :class:`SimulatedOutOfMemory` — ``what``, ``requested_bytes``,
  ``free_bytes``, ``capacity_bytes``.
- :class:`ToolError` — ``tool``: an external tool (valgrind, qemu-x86_64,
  gcc, apt-get, or the program being recorded) is missing or failed; the
  message says how to install what is missing.
- :class:`ResultFileError` — a saved result file could not be read.

A run stopped by Ctrl-C (or by a progress callback raising
``KeyboardInterrupt``) raises :class:`KeyboardInterrupt`.
"""

from __future__ import annotations

from tessera._core import ConfigError, SimulatedOutOfMemory, TesseraError, ToolError, TraceError

__all__ = [
    "TesseraError",
    "ConfigError",
    "TraceError",
    "SimulatedOutOfMemory",
    "ToolError",
    "ResultFileError",
]


class ResultFileError(TesseraError):
    """A saved result file is missing, unreadable or not a Tessera result."""

    def __init__(self, path: str, msg: str) -> None:
        super().__init__(f"{path}: {msg}")
        self.path = path
        self.msg = msg

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.path, self.msg))
