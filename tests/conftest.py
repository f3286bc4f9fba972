"""Shared fixtures: run the `tessera` command in-process, and write small traces."""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path
from typing import Callable

import pytest

from tessera.cli import main

REPO = Path(__file__).resolve().parent.parent
SORT_TRACE = REPO / "examples" / "traces" / "sort.tess"

#: Small, fast synthetic run arguments for the CLI.
SMALL_SYNTHETIC = ["--synthetic", "uniform", "--accesses", "20000", "--footprint", "64MiB"]


@dataclasses.dataclass
class CliResult:
    code: int
    out: str
    err: str


@pytest.fixture
def cli(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Callable[..., CliResult]:
    """Run `tessera ARGS...` in-process (cwd = tmp_path); returns code, stdout, stderr."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")

    def run(*args: str) -> CliResult:
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


def write_lackey(path: Path, records: int = 2000, seed: int = 1, pages: int = 64) -> Path:
    """A plausible lackey trace: instruction fetches with loads and stores in between."""
    rng = random.Random(seed)
    lines = []
    pc = 0x401000
    base = 0x7FF000000000
    for _ in range(records):
        lines.append(f"I  {pc:08x},{rng.choice([2, 3, 4, 5])}")
        pc += 4
        r = rng.random()
        addr = base + rng.randrange(pages) * 4096 + rng.randrange(0, 4096, 8)
        if r < 0.5:
            lines.append(f" L {addr:08x},8")
        elif r < 0.8:
            lines.append(f" S {addr:08x},8")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def lackey_trace(tmp_path: Path) -> Path:
    return write_lackey(tmp_path / "small.lackey")


@pytest.fixture
def native_trace(tmp_path: Path, lackey_trace: Path) -> Path:
    import tessera

    out = tmp_path / "small.tess"
    tessera.convert_trace(lackey_trace, out)
    return out


@pytest.fixture
def sort_trace() -> Path:
    if not SORT_TRACE.exists():
        pytest.skip(f"{SORT_TRACE.relative_to(REPO)} is not in the repository yet")
    return SORT_TRACE
