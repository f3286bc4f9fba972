"""`tessera trace record`: real programs under Valgrind lackey and QEMU.

Two small C programs in tests/data are compiled with ``gcc -O1 -static``
(static and non-PIE, so global data sits at the same address under both
tools) and recorded:

- ``record_loop.c`` makes exactly N stores and N loads to one global array:
  each backend's trace must hold exactly those inside the array's range.
- ``record_mix.c`` is a deterministic mix of table and heap accesses: the two
  backends must agree on instruction and data-access counts within 2% and on
  the distinct pages touched in each structure.

The tools come from ``scripts/install-system-deps.sh`` (run by ``.ci/run``); a
test skips, saying why, only when a tool is truly absent.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import tessera

DATA = Path(__file__).resolve().parent / "data"
# Use this checkout's plugin source whatever way the package was installed.
os.environ.setdefault("TESSERA_QEMU_PLUGIN_SRC", str(DATA.parent.parent / "plugins" / "qemu-tessera"))
BACKENDS = ("lackey", "qemu")
TOOL = {"lackey": "valgrind", "qemu": "qemu-x86_64"}
LOOP_N = 50_000


def _need(*tools: str) -> None:
    for t in tools:
        if shutil.which(t) is None:
            pytest.skip(f"{t} is not installed (scripts/install-system-deps.sh installs it)")


def _compile(tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    _need("gcc")
    out = tmp_path_factory.mktemp("bin") / name
    r = subprocess.run(
        ["gcc", "-O1", "-static", "-o", str(out), str(DATA / f"{name}.c")],
        capture_output=True,
        text=True,
    )
    if r.returncode != 0:
        pytest.skip(f"cannot build a static test program (libc6-dev missing?): {r.stderr.strip()[:300]}")
    return out


@pytest.fixture(scope="module")
def loop_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile(tmp_path_factory, "record_loop")


@pytest.fixture(scope="module")
def mix_program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _compile(tmp_path_factory, "record_mix")


def _record_cli(out: Path, backend: str, program: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run `tessera trace record` in a child process: the recorded program's
    stdout is then ours to read, apart from Tessera's summary on stderr."""
    return subprocess.run(
        [sys.executable, "-m", "tessera", "trace", "record", "-o", str(out), "--backend", backend, *extra, "--", str(program)],
        capture_output=True,
        text=True,
        timeout=600,
    )


def _ranges(stdout: str) -> dict[str, tuple[int, int]]:
    """`name 0xADDR SIZE` lines printed by the test programs."""
    return {m[1]: (int(m[2], 16), int(m[3])) for m in re.finditer(r"^(\w+) (0x[0-9a-f]+) (\d+)$", stdout, re.M)}


def _data_accesses(trace: Path, tmp: Path) -> list[tuple[str, int, int]]:
    """(kind, addr, size) of every load and store, via lackey text."""
    text = tmp / (trace.stem + ".lackey")
    tessera.convert_trace(trace, text, to="lackey")
    out = []
    for line in text.read_text().splitlines():
        if line[:1] == " ":
            kind, rest = line[1], line[3:]
            a, s = rest.split(",")
            addr, size = int(a, 16), int(s)
            if kind == "M":
                out += [("L", addr, size), ("S", addr, size)]
            else:
                out.append((kind, addr, size))
    return out


@pytest.mark.parametrize("backend", BACKENDS)
def test_recorded_loop_has_exactly_its_array_accesses(backend, loop_program, tmp_path):
    _need(TOOL[backend])
    out = tmp_path / f"loop-{backend}.tess"
    r = _record_cli(out, backend, loop_program)
    assert r.returncode == 0, r.stderr
    # The program's own output is on stdout, Tessera's summary on stderr.
    assert "sum 3749925000" in r.stdout
    assert "recorded" in r.stderr and "recorded" not in r.stdout
    base, size = _ranges(r.stdout)["data"]
    assert size == LOOP_N * 8
    inside = [(k, s) for k, a, s in _data_accesses(out, tmp_path) if base <= a < base + size]
    assert sum(1 for k, s in inside if k == "L") == LOOP_N
    assert sum(1 for k, s in inside if k == "S") == LOOP_N
    assert {s for _, s in inside} == {8}
    info = tessera.trace_info(out)
    assert info["format"] == "native"
    assert info["ifetches"] == info["instructions"] > 4 * LOOP_N


def test_backends_agree_on_counts_and_footprint(mix_program, tmp_path):
    _need("valgrind", "qemu-x86_64")
    runs = {}
    for backend in BACKENDS:
        out = tmp_path / f"mix-{backend}.tess"
        r = _record_cli(out, backend, mix_program)
        assert r.returncode == 0, r.stderr
        ranges = _ranges(r.stdout)
        accesses = _data_accesses(out, tmp_path)
        pages = {
            name: {a >> 12 for _, a, _ in accesses if base <= a < base + size} for name, (base, size) in ranges.items()
        }
        runs[backend] = (tessera.trace_info(out), ranges, pages)
    (li, lr, lp), (qi, qr, qp) = runs["lackey"], runs["qemu"]
    for key in ("instructions", "loads", "stores"):
        assert abs(li[key] - qi[key]) <= 0.02 * li[key], (key, li[key], qi[key])
    assert abs((li["loads"] + li["stores"]) - (qi["loads"] + qi["stores"])) <= 0.02 * (li["loads"] + li["stores"])
    # Static non-PIE: the global table is at the same address under both tools.
    assert lr["table"] == qr["table"]
    assert lp["table"] == qp["table"]
    base, size = lr["table"]
    assert len(lp["table"]) == ((base + size - 1) >> 12) - (base >> 12) + 1
    # The heap array lands elsewhere, but covers as many pages.
    assert len(lp["heap"]) == len(qp["heap"]) >= size // 4096


@pytest.mark.parametrize("backend", BACKENDS)
def test_skip_and_max_accesses(backend, loop_program, tmp_path):
    _need(TOOL[backend])
    full = tessera.record(tmp_path / "full.tess", [loop_program], backend=backend, ifetch=False)
    assert not full["stopped_early"] and full["exit_code"] == 0 and full["ifetches"] == 0
    s = tessera.record(
        tmp_path / "part.tess", [loop_program], backend=backend, skip=1000, max_accesses=5000, ifetch=False
    )
    assert s["records"] == 5000 and s["skipped"] == 1000 and s["stopped_early"]
    info = tessera.trace_info(tmp_path / "part.tess")
    assert info["records"] == 5000 and info["ifetches"] == 0
    # The kept accesses are the full run's accesses 1000..6000.
    a = _data_accesses(tmp_path / "full.tess", tmp_path)[1000:6000]
    b = _data_accesses(tmp_path / "part.tess", tmp_path)
    assert a == b


def test_interrupt_leaves_no_file_and_kills_the_program(loop_program, tmp_path):
    _need("valgrind")
    calls = []

    def progress(done: int, total: int) -> None:
        calls.append(done)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tessera.record(tmp_path / "x.tess", [loop_program], progress=progress)
    assert calls
    assert os.listdir(tmp_path) == []


def test_missing_valgrind_is_a_clear_error(cli, loop_program, tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    r = cli("trace", "record", "-o", "t.tess", "--", loop_program)
    assert r.code == 5, r.err
    assert "apt-get install valgrind" in r.err
    assert "Traceback" not in r.err
    assert not (tmp_path / "t.tess").exists()
    with pytest.raises(tessera.ToolError) as e:
        tessera.record(tmp_path / "t.tess", [loop_program], backend="qemu")
    assert e.value.tool == "qemu-x86_64"
    assert "apt-get install qemu-user" in str(e.value)


def test_missing_program_and_usage_errors(cli, tmp_path):
    r = cli("trace", "record", "-o", "t.tess", "--", tmp_path / "no-such-program")
    assert r.code == 5 and "program not found" in r.err
    r = cli("trace", "record", "-o", "t.tess")
    assert r.code == 2 and "needs a program" in r.err
    assert list(tmp_path.iterdir()) == []
