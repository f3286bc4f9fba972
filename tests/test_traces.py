"""Trace errors (exit 3, naming file and line or byte offset) and conversions."""

from __future__ import annotations

from pathlib import Path

import pytest

import tessera
from conftest import write_lackey


def _run(cli, trace: Path, *extra: str):
    return cli("run", "--preset", "sandy_bridge", "--trace", trace, "--out", "r.json", *extra)


def test_malformed_lackey_names_file_and_line(cli, tmp_path):
    bad = tmp_path / "bad.lackey"
    bad.write_text("I  00401000,4\n L 7ff000001000,8\n Q this is not lackey\n S 7ff000001008,8\n")
    r = _run(cli, bad)
    assert r.code == 3, r.err
    assert r.err.startswith("tessera: error:")
    assert "bad.lackey" in r.err
    assert "line 3" in r.err
    assert "Traceback" not in r.err
    assert not (tmp_path / "r.json").exists()


def test_malformed_lackey_error_attributes(tmp_path):
    bad = tmp_path / "bad.lackey"
    bad.write_text("I  00401000,4\nhello\n")
    with pytest.raises(tessera.TraceError) as e:
        tessera.simulate("tlb_only", bad)
    assert e.value.line == 2
    assert e.value.offset is None
    assert e.value.location == "line 2"
    assert "bad.lackey" in e.value.file


def test_truncated_native_trace_names_offset(cli, tmp_path, native_trace):
    data = native_trace.read_bytes()
    cut = tmp_path / "cut.tess"
    cut.write_bytes(data[: len(data) // 2])
    r = _run(cli, cut)
    assert r.code == 3, r.err
    assert "cut.tess" in r.err
    assert "offset" in r.err
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(tessera.TraceError) as e:
        tessera.simulate("tlb_only", cut)
    assert isinstance(e.value.offset, int) and 0 <= e.value.offset <= len(data)
    assert e.value.line is None


def test_corrupted_native_trace_names_offset(cli, tmp_path, native_trace):
    data = bytearray(native_trace.read_bytes())
    # Flip bits in the first block's payload (past the header and metadata).
    i = len(data) // 2
    data[i] ^= 0xFF
    data[i + 1] ^= 0x55
    bad = tmp_path / "flipped.tess"
    bad.write_bytes(bytes(data))
    r = _run(cli, bad)
    assert r.code == 3, r.err
    assert "flipped.tess" in r.err and "offset" in r.err
    assert not (tmp_path / "r.json").exists()


def test_trace_info_on_bad_trace_exits_3(cli, tmp_path):
    bad = tmp_path / "bad.lackey"
    bad.write_text("garbage\n")
    r = cli("trace", "info", bad)
    assert r.code == 3
    assert "line 1" in r.err


def test_convert_bad_input_leaves_no_output(cli, tmp_path):
    bad = tmp_path / "bad.lackey"
    bad.write_text("I  00401000,4\n L 7ff000001000,8\nnot lackey\n")
    r = cli("trace", "convert", bad, "out.tess")
    assert r.code == 3
    assert not (tmp_path / "out.tess").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.lackey"]


def test_api_convert_round_trip(tmp_path):
    src = write_lackey(tmp_path / "a.lackey", records=5000, seed=7)
    s1 = tessera.convert_trace(src, tmp_path / "a.tess")
    assert s1["to"] == "native" and s1["records"] > 0
    s2 = tessera.convert_trace(tmp_path / "a.tess", tmp_path / "b.lackey")
    assert s2["to"] == "lackey" and s2["records"] == s1["records"]
    assert (tmp_path / "b.lackey").read_text() == src.read_text()
    info = tessera.trace_info(tmp_path / "a.tess")
    assert info["records"] == s1["records"]
    assert info["instructions"] == s1["instructions"]


def test_convert_to_flag_beats_suffix(tmp_path):
    src = write_lackey(tmp_path / "a.lackey", records=100)
    s = tessera.convert_trace(src, tmp_path / "a.txt", to="native")
    assert s["to"] == "native"
    assert tessera.trace_info(tmp_path / "a.txt")["format"] == "native"
