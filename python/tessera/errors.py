"""The exceptions Tessera raises.

Every failure a user can cause is a :class:`TesseraError`; the subclasses carry
the details as attributes:

- :class:`ConfigError` — ``path`` (dotted key such as ``mmu.tlb.l2_tlb.ways``)
  and ``allowed`` (the accepted values, possibly empty).
- :class:`TraceError` — ``file``, ``location`` (``"line 3"`` or
  ``"byte offset 96"``), and ``line`` / ``offset`` (one of them is ``None``;
  all three are ``None`` when the file cannot be opened at all).
- :class:`SimulatedOutOfMemory` — ``what``, ``requested_bytes``,
  ``free_bytes``, ``capacity_bytes``.
- :class:`ToolError` — ``tool``: an external tool (valgrind, qemu-x86_64,
  gcc, apt-get, or the program being recorded) is missing or failed; the
  message says how to install what is missing.
- :class:`ResultFileError` — a saved result file could not be read.
- :class:`SweepError` (a :class:`ConfigError`) — a sweep file is malformed;
  ``file``, ``path`` (key within it) and ``allowed``.
- :class:`IncomparableResults` — :func:`tessera.compare` was given results
  of different programs; ``problems`` lists what differs.
- :class:`StoreError` — the results store is not a Tessera store, is from a
  newer Tessera, or is damaged; ``path``.

A run stopped by Ctrl-C (or by a progress callback raising
``KeyboardInterrupt``) raises :class:`KeyboardInterrupt`.
"""

from __future__ import annotations

from typing import Optional

from tessera._core import ConfigError, SimulatedOutOfMemory, TesseraError, ToolError, TraceError

__all__ = [
    "TesseraError",
    "ConfigError",
    "TraceError",
    "SimulatedOutOfMemory",
    "ToolError",
    "ResultFileError",
    "SweepError",
    "StoreError",
    "IncomparableResults",
]


class _FileError(TesseraError):
    """A failure that belongs to one file: ``path`` and ``msg``."""

    def __init__(self, path: str, msg: str) -> None:
        super().__init__(f"{path}: {msg}")
        self.path = path
        self.msg = msg

    def __reduce__(self) -> tuple[type, tuple[str, str]]:
        return (type(self), (self.path, self.msg))


class ResultFileError(_FileError):
    """A saved result file is missing, unreadable or not a Tessera result."""


class SweepError(ConfigError):
    """A sweep file is malformed or one of its runs has a bad machine.

    ``file`` is the sweep (or ``<sweep dict>``), ``path`` the key within it
    (``axes.workload``) or, for a machine error, the config key; ``allowed``
    the accepted values when there is a fixed set."""

    def __init__(self, file: str, path: str, msg: str, allowed: Optional[list[str]] = None) -> None:
        allowed = list(allowed or [])
        text = f"{file}: {msg}"
        if allowed:
            text += f" (allowed: {', '.join(allowed)})"
        super().__init__(text)
        self.file = file
        self.path = path
        self.allowed = allowed
        self.msg = msg

    def __reduce__(self) -> tuple[type, tuple[str, str, str, list[str]]]:
        return (type(self), (self.file, self.path, self.msg, self.allowed))


class StoreError(_FileError):
    """The results store cannot be opened or read: not a Tessera store, from
    a newer Tessera, or damaged. ``path`` names the file."""


class IncomparableResults(TesseraError):
    """Two results are not runs of one program (different source, or a
    different instruction count), so comparing them would mislead.
    ``problems`` lists each difference as a sentence."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("refusing to compare results of different programs: " + "; ".join(problems)
                         + " (--force, or force=True, compares them anyway)")
        self.problems = list(problems)

    def __reduce__(self) -> tuple[type, tuple[list[str]]]:
        return (type(self), (self.problems,))
