"""Config mistakes: exit 2, a message naming the dotted key path, and no output file."""

from __future__ import annotations

import pytest

import tessera
from conftest import SMALL_SYNTHETIC

CASES = [
    # (override, dotted path the message must name, another word it must contain)
    ("mmu.tlb.l2_tlb.entriez=512", "mmu.tlb.l2_tlb", "entriez"),
    ('mmu.tlb.l2_tlb.entries="many"', "mmu.tlb.l2_tlb.entries", "many"),
    ("mmu.tlb.l2_tlb.replacement=lur", "mmu.tlb.l2_tlb.replacement.kind", "lur"),
    ("mmu.tlb.l2_tlb.entries=384", "mmu.tlb.l2_tlb.entries", "power of two"),
    ("physmem.page_size.kind=huge", "physmem.page_size.kind", "huge"),
    ("walker.entry_level=l4", "walker.entry_level", "l4"),
]


@pytest.mark.parametrize(("override", "path", "word"), CASES)
def test_cli_config_error(cli, tmp_path, override, path, word):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--set", override, "--out", "r.json")
    assert r.code == 2, (r.out, r.err)
    assert r.err.startswith("tessera: error:")
    assert path in r.err
    assert word in r.err
    assert "Traceback" not in r.err
    assert r.out == ""
    assert not (tmp_path / "r.json").exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("override", "path", "word"), CASES)
def test_api_config_error_attributes(override, path, word):
    with pytest.raises(tessera.ConfigError) as e:
        tessera.resolve_config("tlb_only", [override])
    assert e.value.path.startswith(path)
    assert isinstance(e.value.allowed, list)
    assert word in str(e.value)


def test_unknown_mechanism_lists_allowed_names():
    with pytest.raises(tessera.ConfigError) as e:
        tessera.resolve_config("tlb_only", ["mmu.tlb.l2_tlb.replacement=lur"])
    assert e.value.path == "mmu.tlb.l2_tlb.replacement.kind"
    assert {"lru", "random"} <= set(e.value.allowed)
    assert "lru" in str(e.value) and "random" in str(e.value)


def test_unknown_preset(cli):
    r = cli("run", "--preset", "sandy", *SMALL_SYNTHETIC)
    assert r.code == 2
    assert "sandy_bridge" in r.err  # the allowed presets are listed


def test_bad_toml_file(cli, tmp_path):
    (tmp_path / "bad.toml").write_text("name = \n")
    r = cli("config", "show", "bad.toml")
    assert r.code == 2
    assert "bad.toml" in r.err


def test_bad_synthetic_pattern(cli, tmp_path):
    r = cli("run", "--preset", "tlb_only", "--synthetic", "zigzag", "--out", "r.json")
    assert r.code == 2
    assert "zigzag" in r.err and "uniform" in r.err
    assert not (tmp_path / "r.json").exists()


def test_config_error_is_a_tessera_error():
    assert issubclass(tessera.ConfigError, tessera.TesseraError)
    assert issubclass(tessera.TraceError, tessera.TesseraError)
    assert issubclass(tessera.SimulatedOutOfMemory, tessera.TesseraError)
    assert issubclass(tessera.TesseraError, Exception)


def test_simulated_out_of_memory_exits_4(cli, tmp_path):
    r = cli(
        "run",
        "--preset",
        "tlb_only",
        "--synthetic",
        "uniform",
        "--accesses",
        "200000",
        "--footprint",
        "1GiB",
        "--set",
        "physmem.capacity=4MiB",
        "--out",
        "r.json",
    )
    assert r.code == 4, r.err
    assert r.err.startswith("tessera: error:")
    assert "physmem.capacity" in r.err
    assert not (tmp_path / "r.json").exists()


def test_simulated_out_of_memory_attributes():
    with pytest.raises(tessera.SimulatedOutOfMemory) as e:
        tessera.simulate(
            "tlb_only",
            synthetic={"pattern": "uniform", "accesses": 200_000, "footprint": "1GiB"},
            overrides=["physmem.capacity=4MiB"],
        )
    assert e.value.capacity_bytes == 4 << 20
    assert e.value.requested_bytes > e.value.free_bytes
