"""ChampSim traces through the CLI and the API: info, convert, run, options,
and malformed files (exit 3, naming the file and the record's offset)."""

from __future__ import annotations

import gzip
import json
import lzma
import struct
from pathlib import Path

import pytest

import tessera

BASE = 0x7F0000000000


def _record(ip: int, src: tuple[int, ...] = (), dst: tuple[int, ...] = ()) -> bytes:
    src4 = list(src) + [0] * (4 - len(src))
    dst2 = list(dst) + [0] * (2 - len(dst))
    return struct.pack("<QBB2B4B2Q4Q", ip, 0, 0, 0, 0, 0, 0, 0, 0, *dst2, *src4)


def _trace(n: int = 3000) -> bytes:
    """n instructions: every one loads, every third also stores, every fifth
    makes no access; addresses walk 64 pages."""
    out = bytearray()
    for i in range(n):
        if i % 5 == 4:
            out += _record(0x401000 + 4 * i)
        elif i % 3 == 0:
            out += _record(0x401000 + 4 * i, src=(BASE + (i % 64) * 4096,), dst=(BASE + 8 * i,))
        else:
            out += _record(0x401000 + 4 * i, src=(BASE + (i % 64) * 4096 + 8,))
    return bytes(out)


@pytest.fixture
def champsim_xz(tmp_path: Path) -> Path:
    p = tmp_path / "t.champsimtrace.xz"
    p.write_bytes(lzma.compress(_trace(), format=lzma.FORMAT_XZ))
    return p


def _expected(n: int = 3000) -> dict[str, int]:
    active = [i for i in range(n) if i % 5 != 4]
    stores = sum(1 for i in active if i % 3 == 0)
    last = max(active)
    return {"loads": len(active), "stores": stores, "instructions": last + 1}


def test_info_convert_and_run(cli, tmp_path, champsim_xz):
    r = cli("trace", "info", champsim_xz, "--json")
    assert r.code == 0, r.err
    info = json.loads(r.out)
    want = _expected()
    assert info["format"] == "champsim"
    assert (info["loads"], info["stores"], info["ifetches"]) == (want["loads"], want["stores"], 0)
    assert info["instructions"] == want["instructions"]
    assert info["records"] == want["loads"] + want["stores"]

    r = cli("trace", "convert", champsim_xz, "out.tess")
    assert r.code == 0, r.err
    assert "(champsim)" in r.out
    native = tessera.trace_info(tmp_path / "out.tess")
    assert native["format"] == "native"
    assert {k: native[k] for k in ("records", "instructions", "loads", "stores", "pages_4k")} == {
        k: info[k] for k in ("records", "instructions", "loads", "stores", "pages_4k")
    }

    r = cli("run", "--preset", "tlb_only", "--trace", champsim_xz, "--out", "r.json", "-q")
    assert r.code == 0, r.err
    res = tessera.load_result(tmp_path / "r.json")
    assert res.stats["core.instructions"] == want["instructions"]
    assert res.stats["core.loads"] == want["loads"]


def test_gzip_and_options(cli, tmp_path):
    p = tmp_path / "t.trace.gz"
    p.write_bytes(gzip.compress(_trace()))
    info = tessera.trace_info(p, champsim_ifetch=True)
    want = _expected()
    assert info["format"] == "champsim"
    assert info["ifetches"] == 3000 == info["instructions"]
    r = cli("trace", "info", p, "--json", "--champsim-ifetch", "--champsim-access-size", "4")
    assert r.code == 0, r.err
    assert json.loads(r.out)["ifetches"] == 3000
    r = cli("trace", "info", p, "--champsim-access-size", "0")
    assert r.code == 2 and "champsim.access_size" in r.err
    s = tessera.simulate("tlb_only", p, champsim_ifetch=True)
    assert s.stats["core.ifetches"] == 3000
    assert s.stats["core.loads"] == want["loads"]


def test_truncated_champsim_names_file_and_record_offset(cli, tmp_path):
    bad = tmp_path / "cut.champsimtrace.xz"
    bad.write_bytes(lzma.compress(_trace(10) + b"\x01" * 20, format=lzma.FORMAT_XZ))
    r = cli("trace", "info", bad)
    assert r.code == 3, r.err
    assert "cut.champsimtrace.xz" in r.err and "byte offset 640" in r.err and "truncated record 10" in r.err
    with pytest.raises(tessera.TraceError) as e:
        tessera.simulate("tlb_only", bad)
    assert e.value.offset == 640 and e.value.line is None


def test_corrupt_stream_and_unknown_magic(cli, tmp_path, champsim_xz):
    data = bytearray(champsim_xz.read_bytes())
    half = tmp_path / "half.xz"
    half.write_bytes(bytes(data[: len(data) // 2]))
    r = cli("run", "--preset", "tlb_only", "--trace", half, "--out", "r.json")
    assert r.code == 3, r.err
    assert "half.xz" in r.err and "corrupt or truncated xz stream" in r.err
    assert not (tmp_path / "r.json").exists()
    raw = tmp_path / "raw.champsimtrace"
    raw.write_bytes(_trace(10))
    r = cli("trace", "convert", raw, "x.tess")
    assert r.code == 3 and "unknown magic bytes" in r.err and "byte offset 0" in r.err
    assert not (tmp_path / "x.tess").exists()
