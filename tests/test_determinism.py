"""Same config, input and seed → byte-identical result files."""

from __future__ import annotations

import tessera
from conftest import SMALL_SYNTHETIC


def test_two_cli_runs_give_identical_json(cli, tmp_path):
    for name in ("a.json", "b.json"):
        r = cli("run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC, "--seed", "7", "--out", name, "-q")
        assert r.code == 0, r.err
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_two_cli_runs_give_identical_csv(cli, tmp_path):
    for name in ("a.csv", "b.csv"):
        assert cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--out", name, "-q").code == 0
    assert (tmp_path / "a.csv").read_bytes() == (tmp_path / "b.csv").read_bytes()


def test_trace_runs_are_identical(cli, tmp_path, native_trace):
    for name in ("a.json", "b.json"):
        assert cli("run", "--preset", "sandy_bridge", "--trace", native_trace, "--out", name, "-q").code == 0
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()


def test_seed_changes_a_random_stream(tmp_path):
    syn = {"pattern": "uniform", "accesses": 20_000, "footprint": "1GiB"}
    a = tessera.simulate("tlb_only", synthetic=syn, seed=1)
    b = tessera.simulate("tlb_only", synthetic=syn, seed=2)
    assert a.seed != b.seed
    assert a.counters != b.counters


def test_api_and_cli_agree(cli, tmp_path):
    assert cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--seed", "5", "--out", "cli.json", "-q").code == 0
    r = tessera.simulate("tlb_only", synthetic={"pattern": "uniform", "accesses": 20000, "footprint": "64MiB"}, seed=5)
    r.save(tmp_path / "api.json")
    assert (tmp_path / "api.json").read_bytes() == (tmp_path / "cli.json").read_bytes()
