"""A progress bar for runs, drawn with rich on stderr.

The core reports ``(done, total)`` in a unit of the source's choosing (input
bytes of a trace, records of a synthetic stream), so the bar shows a fraction,
a rate and an ETA rather than a unit.
"""

from __future__ import annotations

import sys
import time
from typing import Any, Optional, TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    Progress,
    ProgressColumn,
    Task,
    TaskProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.text import Text

__all__ = ["ProgressBar", "should_show"]


def should_show(stream: Optional[TextIO] = None, quiet: bool = False) -> bool:
    """Show a bar only on an interactive terminal and when not asked to be quiet."""
    stream = sys.stderr if stream is None else stream
    if quiet:
        return False
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _si(x: float) -> str:
    for limit, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(x) >= limit:
            return f"{x / limit:.1f}{suffix}"
    return f"{x:.0f}"


class _CountColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        total = "?" if task.total is None else _si(task.total)
        return Text(f"{_si(task.completed)}/{total}", style="progress.download")


class _RateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        return Text("" if speed is None else f"{_si(speed)}/s", style="progress.data.speed")


class ProgressBar:
    """A callable ``(done, total)`` progress sink, used as a context manager::

    with ProgressBar("sort.tess") as bar:
        tessera.simulate("sandy_bridge", "sort.tess", progress=bar)
    """

    def __init__(self, description: str = "simulating", console: Optional[Console] = None) -> None:
        self._console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            _CountColumn(),
            _RateColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self._console,
            transient=True,
        )
        self._description = description
        self._task: Optional[Any] = None
        self._last = 0.0

    def __enter__(self) -> "ProgressBar":
        self._progress.start()
        self._task = self._progress.add_task(self._description, total=None)
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, done: int, total: int) -> None:
        if self._task is None:
            return
        now = time.monotonic()
        # The core may report often; redraw at most ~20 times a second.
        if now - self._last < 0.05 and done < total:
            return
        self._last = now
        self._progress.update(self._task, completed=done, total=total or None)


class _RunsColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        failed = task.fields.get("failed", 0)
        text = Text(f"{int(task.completed)}/{int(task.total or 0)} runs", style="progress.download")
        if failed:
            text.append(f"  {failed} failed", style="bold red")
        return text


class _RunRateColumn(ProgressColumn):
    def render(self, task: Task) -> Text:
        speed = task.finished_speed or task.speed
        if speed is None:
            return Text("")
        return Text(f"{speed:.2f} runs/s" if speed < 10 else f"{speed:.0f} runs/s", style="progress.data.speed")


class SweepProgressBar:
    """A ``(done, total, failed)`` sink for sweeps: runs done, rate, ETA, failures.

    Runs already in the store count as done from the start; the rate and ETA
    are over the runs this sweep computes."""

    def __init__(self, name: str, total: int, already: int = 0, console: Optional[Console] = None) -> None:
        self._console = console or Console(stderr=True)
        self._progress = Progress(
            TextColumn("[progress.description]{task.description}"),
            BarColumn(),
            TaskProgressColumn(),
            _RunsColumn(),
            _RunRateColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            console=self._console,
            transient=False,
        )
        self._name, self._total, self._already = name, total, already
        self._task: Optional[Any] = None

    def __enter__(self) -> "SweepProgressBar":
        self._progress.start()
        # Counting stored runs in `completed` would inflate the rate; start
        # the task at zero over the runs left and show the stored ones in the label.
        label = self._name + (f" ({self._already} stored)" if self._already else "")
        self._task = self._progress.add_task(label, total=self._total - self._already, failed=0)
        return self

    def __exit__(self, *exc: object) -> None:
        self._progress.stop()

    def __call__(self, done: int, total: int, failed: int = 0) -> None:
        if self._task is not None:
            self._progress.update(self._task, completed=done - self._already, failed=failed)
