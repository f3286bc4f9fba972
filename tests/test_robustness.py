"""No crash on any input: bad values, huge structures, missing files and
misused options end in a clear error and the documented exit status
(README, "Using it"; cli.py), and listings are whole when piped."""

from __future__ import annotations

import csv
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import SMALL_SYNTHETIC, SORT_TRACE

import tessera
from tessera.cli import EXIT_CONFIG, EXIT_OOM

HUGE_TLB = ["--set", "mmu.tlb.l2_tlb.entries=2147483648", "--set", "mmu.tlb.l2_tlb.ways=full"]
ENTRIES_RANGE = "must be a whole number from 1 to 16777216"
LONG_NAME = "a-sweep-whose-name-is-far-wider-than-eighty-columns-so-that-a-narrow-table-would-cut-it"


def _sweep(tmp_path: Path, name: str = "s", axis: str = "[256, 512]", extra: str = "") -> Path:
    f = tmp_path / f"{name}.toml"
    f.write_text(
        f'name = "{name}"\nmachine = "tlb_only"\n{extra}'
        '[source]\nsynthetic = { pattern = "uniform", accesses = 2000, footprint = "1MiB" }\n'
        f'[axes]\n"mmu.tlb.l2_tlb.entries" = {axis}\n'
    )
    return f


# ------------------------------------------------------------- 10: huge structures


def test_huge_tlb_is_a_config_error_not_an_abort(tmp_path: Path):
    # In a child process: before the bound, this aborted the interpreter (exit 134).
    r = subprocess.run(
        [sys.executable, "-m", "tessera", "run", "--preset", "tlb_only", *SMALL_SYNTHETIC, *HUGE_TLB, "-q"],
        capture_output=True, text=True, cwd=tmp_path, timeout=120,
    )
    assert r.returncode == EXIT_CONFIG, r.stderr[-2000:]
    assert "mmu.tlb.l2_tlb.entries" in r.stderr and ENTRIES_RANGE in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize(
    "overrides, key",
    [
        (["mmu.tlb.l2_tlb.entries=2147483648", "mmu.tlb.l2_tlb.ways=\"full\""], "mmu.tlb.l2_tlb.entries"),
        (["mmu.shadow.big={ entries = 2147483648, ways = \"full\" }"], "mmu.shadow.big.entries"),
        (["mmu.psc.pde.entries=4294967296", "mmu.psc.pde.ways=\"full\""], "mmu.psc.pde.entries"),
        (["cache.llc.size=\"512GiB\"", "cache.llc.ways=\"full\""], "cache.llc.size"),
        (["cache.l2.prefetcher={ kind = \"stride\", table_entries = 2147483648 }"], "cache.l2.prefetcher.table_entries"),
    ],
)
def test_huge_structures_raise_in_python(overrides, key):
    preset = "sandy_bridge"
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate(preset, synthetic={"pattern": "uniform", "accesses": 1000}, overrides=overrides)
    assert e.value.path == key, str(e.value)


def test_a_sweep_point_with_a_huge_tlb_is_reported_for_that_point(cli, tmp_path: Path):
    f = _sweep(tmp_path, "huge", "[512, 2147483648]", '[set]\n"mmu.tlb.l2_tlb.ways" = "full"\n')
    r = cli("sweep", f, "--store", "s.sqlite", "-q")
    assert r.code == EXIT_CONFIG, r.err
    assert "mmu.tlb.l2_tlb.entries = 2147483648" in r.err and ENTRIES_RANGE in r.err


# ------------------------------------------------------------------- 11: seeds


@pytest.mark.parametrize("seed", ["-1", str(2**64), "x"])
@pytest.mark.parametrize("command", [["run", "--preset", "tlb_only", *SMALL_SYNTHETIC], ["trace", "record-workload", "gups", "-o", "g.tess"]])
def test_bad_seed_is_a_usage_error(cli, capsys, command, seed):
    with pytest.raises(SystemExit) as e:  # argparse's own usage error
        cli(*command, "--seed", seed, "-q")
    assert e.value.code == EXIT_CONFIG
    err = capsys.readouterr().err
    assert "--seed" in err and f"from 0 to {2**64 - 1}, not '{seed}'" in err


def test_largest_seed_runs(cli):
    assert cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--seed", str(2**64 - 1), "-q").code == 0


@pytest.mark.parametrize("seed", [-1, 2**64, True, 1.5])
def test_bad_seed_raises_config_error_in_python(seed):
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate("tlb_only", synthetic={"pattern": "uniform", "accesses": 1000}, seed=seed)
    assert e.value.path == "seed" and f"from 0 to {2**64 - 1}" in str(e.value)


@pytest.mark.parametrize(
    ("kwargs", "path", "says"),
    [
        ({"synthetic": {"pattern": "uniform", "accesses": -5}}, "synthetic.accesses", "cannot be negative"),
        ({"synthetic": {"pattern": "uniform", "accesses": "abc"}}, "synthetic.accesses", "is not a count"),
        ({"synthetic": {"pattern": "uniform", "footprint": -1}}, "synthetic.footprint", "cannot be negative"),
        ({"synthetic": {"pattern": 3}}, "synthetic.pattern", "must be a string"),
        ({"synthetic": {"patern": "uniform"}}, "synthetic", "allowed: pattern, accesses, footprint"),
        ({"synthetic": {"pattern": "uniform", "accesses": 1000}, "warmup": -1}, "warmup", "cannot be negative"),
        ({"synthetic": {"pattern": "uniform", "accesses": 1000}, "warmup": 1.5}, "warmup", "must be a number"),
    ],
)
def test_bad_stream_arguments_raise_config_error_in_python(kwargs, path, says):
    # As bad keys of a machine file do: a ConfigError naming the key, not a bare ValueError.
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate("tlb_only", **kwargs)
    assert e.value.path == path and says in str(e.value), str(e.value)


# ------------------------------------------------- 12-14: usage and exit status


def test_mosaic_pages_refuses_a_warmup(cli):
    r = cli("reproduce", "mosaic-pages", "--quick", "--warmup", "1M", "-o", "rep")
    assert r.code == EXIT_CONFIG and "Traceback" not in r.err
    assert "--warmup applies only to mmu-analysis" in r.err and "no warm-up" in r.err
    assert not Path("rep").exists()


def test_reproduce_help_says_which_study_warms_up(cli, capsys):
    with pytest.raises(SystemExit):
        cli("reproduce", "--help")
    assert "mmu-analysis only" in " ".join(capsys.readouterr().out.split())


def test_export_to_an_unknown_format_is_a_usage_error(cli):
    r = cli("results", "export", "out.xlsx", "--sweep", "NAME")
    assert r.code == EXIT_CONFIG and "out.xlsx" in r.err and "csv, parquet, json" in r.err


def test_export_into_a_missing_directory_is_a_usage_error(cli, tmp_path: Path):
    assert cli("sweep", _sweep(tmp_path), "--store", "s.sqlite", "-q").code == 0
    r = cli("results", "export", "no/such/out.csv", "--store", "s.sqlite")
    assert r.code == EXIT_CONFIG and "'no/such' does not exist" in r.err


def test_missing_machine_file_exits_2(cli):
    r = cli("run", "--config", "missing.toml", *SMALL_SYNTHETIC, "-q")
    assert r.code == EXIT_CONFIG and "missing.toml" in r.err and "no such machine file" in r.err
    r = cli("config", "show", "missing.toml")
    assert r.code == EXIT_CONFIG and "missing.toml" in r.err
    with pytest.raises(tessera.ConfigError):
        tessera.simulate(Path("missing.toml"), synthetic={"pattern": "uniform", "accesses": 1000})


def test_unknown_sweep_or_run_in_a_store_exits_2(cli, tmp_path: Path):
    assert cli("sweep", _sweep(tmp_path), "--store", "s.sqlite", "-q").code == 0
    for args in (
        ("plot", "bars", "--y", "mmu.l2_tlb.misses", "--sweep", "nosuch", "--store", "s.sqlite", "-o", "a.svg"),
        ("results", "ls", "--sweep", "nosuch", "--store", "s.sqlite"),
        ("results", "show", "nosuch", "--store", "s.sqlite"),
        ("results", "forget", "nosuch", "--store", "s.sqlite"),
    ):
        r = cli(*args)
        assert r.code == EXIT_CONFIG and "nosuch" in r.err, (args, r.err)
    assert "sweeps: s" in cli("results", "forget", "nosuch", "--store", "s.sqlite").err


def test_compare_given_a_trace_exits_2(cli):
    r = cli("compare", SORT_TRACE, SORT_TRACE)
    assert r.code == EXIT_CONFIG and "not a JSON result file (binary data)" in r.err
    assert "tessera run --out FILE.json" in r.err and "codec" not in r.err


def test_reproduce_into_an_existing_file_exits_2(cli, tmp_path: Path):
    (tmp_path / "taken").write_text("x")
    r = cli("reproduce", "mmu-analysis", "--tiny", "-o", "taken")
    assert r.code == EXIT_CONFIG and "taken" in r.err and "not a directory" in r.err


# ----------------------------------------------------- 15-17: the messages


def test_invalid_toml_in_a_machine_file_gives_line_and_column(cli, tmp_path: Path):
    (tmp_path / "bad.toml").write_text('inherit = "tlb_only"\n[physmem\ncapacity = 1\n')
    r = cli("run", "--config", "bad.toml", *SMALL_SYNTHETIC, "-q")
    assert r.code == EXIT_CONFIG and "bad.toml" in r.err and "line 2, column 9" in r.err
    assert len(r.err.strip().splitlines()) == 1, r.err


@pytest.mark.parametrize("value", ["-1", "0", "16777217", "many"])
def test_entries_out_of_range_get_one_message(cli, value):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--set", f"mmu.tlb.l2_tlb.entries={value}", "-q")
    assert r.code == EXIT_CONFIG
    assert f"{ENTRIES_RANGE}, not" in r.err, r.err


def test_capacity_beyond_4tib_names_the_capacity_range(cli):
    r = cli("run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC, "--set", "physmem.capacity=2PiB", "-q")
    assert r.code == EXIT_CONFIG
    assert "physmem.capacity" in r.err and "from 2 MiB to 4 TiB, not 2 PiB" in r.err and "cache" not in r.err


def test_iceberg_out_of_memory_says_the_area_below_the_pool_is_full(cli):
    # 2 MiB of memory, 64 frames below the pool: one page in each of many
    # 1 GiB regions needs three new page-table nodes each.
    r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", "400", "--footprint", "512GiB",
            "--set", "physmem.capacity=2MiB", "--set", "physmem.allocator=iceberg", "-q")
    assert r.code == EXIT_OOM, r.err
    assert "the area below the iceberg pool is full" in r.err and "256 KiB" in r.err
    assert "physmem.allocator.buckets" in r.err and "physmem.capacity" in r.err


# ------------------------------------------------------- 19: listings


def test_stats_listing_is_whole_when_piped_and_machine_readable(cli):
    sets = ["--set", f"mmu.shadow.{LONG_NAME.replace('-', '_')}={{ entries = 64, ways = 4 }}"]
    r = cli("stats", "--preset", "tlb_only", *sets)
    assert r.code == 0 and f"mmu.shadow.{LONG_NAME.replace('-', '_')}.misses" in r.out
    assert all(line == line.rstrip() for line in r.out.splitlines())
    rows = json.loads(cli("stats", "--preset", "tlb_only", "--format", "json").out)
    assert {"stat", "kind", "unit", "description"} == set(rows[0])
    assert any(row["stat"] == "mmu.l2_tlb.misses" for row in rows)
    table = list(csv.DictReader(io.StringIO(cli("stats", "--preset", "tlb_only", "--format", "csv").out)))
    assert [row["stat"] for row in table] == [row["stat"] for row in rows]


def test_results_ls_is_whole_when_piped_and_machine_readable(cli, tmp_path: Path):
    f = _sweep(tmp_path, LONG_NAME)
    assert cli("sweep", f, "--store", "s.sqlite", "-q").code == 0
    r = cli("results", "ls", "--store", "s.sqlite")
    # Name and file (wider together than the 200 columns of COLUMNS) print whole.
    assert r.code == 0 and LONG_NAME in r.out and str(f) in r.out
    rows = json.loads(cli("results", "ls", "--store", "s.sqlite", "--format", "json").out)
    assert rows == [{"sweep": LONG_NAME, "runs": 2, "stored": 2, "failed": 0, "updated": rows[0]["updated"],
                     "file": str(f)}]
    out = cli("results", "ls", "--store", "s.sqlite", "--sweep", LONG_NAME, "--format", "csv").out
    runs = list(csv.DictReader(io.StringIO(out)))
    assert [r["mmu.tlb.l2_tlb.entries"] for r in runs] == ["256", "512"] and len(runs[0]["run_id"]) == 24
    runs = json.loads(cli("results", "ls", "--store", "s.sqlite", "--sweep", LONG_NAME, "--format", "json").out)
    assert [r["mmu.tlb.l2_tlb.entries"] for r in runs] == [256, 512]
    failures = json.loads(cli("results", "ls", "--store", "s.sqlite", "--failures", "--format", "json").out)
    assert failures == []


@pytest.mark.parametrize(
    "args",
    [
        ["run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "-q", "--out", "{out}"],
        ["trace", "convert", str(SORT_TRACE), "{out}", "--to", "lackey"],
        ["trace", "record-workload", "gups", "-o", "{out}"],
        ["sweep", "{sweep}", "--store", "s.sqlite", "-q", "--json", "{out}"],
        ["bench", "--quick", "--json", "{out}"],
    ],
)
@pytest.mark.parametrize("out", ["no/such/x.json", "."])
def test_an_output_file_in_a_missing_directory_or_a_directory_is_a_usage_error(cli, tmp_path: Path, args, out):
    sweep = _sweep(tmp_path)
    r = cli(*[a.format(out=out, sweep=sweep) for a in args])
    assert r.code == EXIT_CONFIG, r.err
    assert ("'no/such' does not exist" if out != "." else "is a directory") in r.err
    assert not (tmp_path / "s.sqlite").exists()
