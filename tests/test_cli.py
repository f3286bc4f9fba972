"""The `tessera` command: runs, result files, config and trace commands, exit codes."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tessera
from tessera.summary import fmt, pct
from conftest import SMALL_SYNTHETIC

RESULT_KEYS = {"source_id", "tessera_version", "seed", "source", "config", "config_toml", "stats",
               "stats_schema", "phases", "host"}


def _load(path: Path) -> dict:
    return json.loads(path.read_text())


def test_run_synthetic_writes_json_with_expected_keys(cli, tmp_path):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--out", "r.json")
    assert r.code == 0, r.err
    doc = _load(tmp_path / "r.json")
    assert set(doc) == RESULT_KEYS
    assert set(doc["stats"]) == {"counters", "derived"}
    assert doc["stats"]["counters"], "a run reports counters"
    assert all(isinstance(v, int) for v in doc["stats"]["counters"].values())
    assert doc["config"]["name"] == "tlb_only"
    assert doc["source"].startswith("synthetic:uniform")
    assert doc["seed"] == 0
    assert doc["tessera_version"] == tessera.__version__
    # The summary table went to stdout and names the machine.
    assert "tlb_only" in r.out


def test_run_on_lackey_trace(cli, tmp_path, lackey_trace):
    r = cli("run", "--preset", "sandy_bridge", "--trace", lackey_trace, "--out", "r.json", "--quiet")
    assert r.code == 0, r.err
    assert r.out == ""
    doc = _load(tmp_path / "r.json")
    assert doc["source"] == "trace:small.lackey"
    assert doc["config"]["name"] == "sandy_bridge"


def test_run_on_example_sort_trace(cli, tmp_path, sort_trace):
    r = cli("run", "--preset", "sandy_bridge", "--trace", sort_trace, "--out", "sort.json")
    assert r.code == 0, r.err
    doc = _load(tmp_path / "sort.json")
    assert set(doc) == RESULT_KEYS
    assert doc["source"] == "trace:sort.tess"
    assert doc["stats"]["counters"]


def test_config_file_run(cli, tmp_path):
    cfg = tmp_path / "m.toml"
    cfg.write_text('inherit = "tlb_only"\nname = "mine"\n\n[mmu.tlb.l2_tlb]\nentries = 1024\n')
    r = cli("run", "--config", cfg, *SMALL_SYNTHETIC, "--out", "r.json", "-q")
    assert r.code == 0, r.err
    doc = _load(tmp_path / "r.json")
    assert doc["config"]["name"] == "mine"
    assert doc["config"]["mmu"]["tlb"]["l2_tlb"]["entries"] == 1024


def test_set_override_shows_in_resolved_config(cli, tmp_path):
    r = cli(
        "run",
        "--preset",
        "tlb_only",
        *SMALL_SYNTHETIC,
        "--set",
        "mmu.tlb.l2_tlb.entries=1024",
        "--set",
        "mmu.tlb.l2_tlb.ways=8",
        "--out",
        "r.json",
        "-q",
    )
    assert r.code == 0, r.err
    doc = _load(tmp_path / "r.json")
    l2 = doc["config"]["mmu"]["tlb"]["l2_tlb"]
    assert (l2["entries"], l2["ways"]) == (1024, 8)
    assert "entries = 1024" in doc["config_toml"]


def test_csv_output_has_one_header_and_one_row(cli, tmp_path):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--out", "r.csv", "-q")
    assert r.code == 0, r.err
    with (tmp_path / "r.csv").open(newline="") as f:
        rows = list(csv.reader(f))
    assert len(rows) == 2
    header, data = rows
    assert len(header) == len(data)
    assert "config.name" in header
    assert data[header.index("config.name")] == "tlb_only"
    # Stats schema 2: derived metrics under their component, undefined ones empty, not missing.
    assert "walker.walks_pki" in header and "mmu.l1_dtlb_2m.miss_rate" in header
    assert not any(h.startswith("derived.") for h in header)
    assert "warmup.records" in header and data[header.index("warmup.records")] == "0"


def test_format_flag_overrides_suffix(cli, tmp_path):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--out", "r.txt", "--format", "csv", "-q")
    assert r.code == 0, r.err
    assert (tmp_path / "r.txt").read_text().startswith("seed,source,")


def test_config_list_and_show(cli):
    r = cli("config", "list")
    assert r.code == 0
    for name in ("sandy_bridge", "tlb_only"):
        assert name in r.out
    r = cli("config", "show", "tlb_only", "--set", "mmu.tlb.l2_tlb.entries=2048")
    assert r.code == 0, r.err
    cfg = tessera.config.loads_toml(r.out)
    assert cfg["mmu"]["tlb"]["l2_tlb"]["entries"] == 2048


def test_config_show_file(cli, tmp_path):
    (tmp_path / "m.toml").write_text('inherit = "sandy_bridge"\nname = "x"\n')
    r = cli("config", "show", "m.toml")
    assert r.code == 0, r.err
    assert 'name = "x"' in r.out


def test_list_stats_and_version(cli):
    r = cli("list")
    assert r.code == 0
    assert "replacement" in r.out and "lru" in r.out
    r = cli("stats", "--preset", "tlb_only")
    assert r.code == 0, r.err
    assert r.out.strip()
    with pytest.raises(SystemExit) as e:
        cli("--version")
    assert e.value.code == 0


def test_usage_errors_exit_2(cli, tmp_path):
    with pytest.raises(SystemExit) as e:
        cli("run", "--preset", "tlb_only")  # no source
    assert e.value.code == 2
    r = cli("run", "--preset", "tlb_only", "--trace", "x", "--accesses", "5")
    assert r.code == 2
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--out", "no/such/dir/r.json")
    assert r.code == 2
    assert "does not exist" in r.err


def test_missing_trace_file_is_an_error_without_traceback(cli, tmp_path):
    r = cli("run", "--preset", "tlb_only", "--trace", "nope.lackey", "--out", "r.json")
    assert r.code != 0
    assert r.err.startswith("tessera: error:")
    assert "nope.lackey" in r.err
    assert "Traceback" not in r.err
    assert not (tmp_path / "r.json").exists()


def test_trace_info(cli, native_trace):
    r = cli("trace", "info", native_trace, "--json")
    assert r.code == 0, r.err
    info = json.loads(r.out)
    assert info["format"] == "native"
    assert info["records"] > 0
    r = cli("trace", "info", native_trace)
    assert r.code == 0
    assert "records" in r.out


def test_trace_convert_round_trip(cli, tmp_path, lackey_trace):
    r = cli("trace", "convert", lackey_trace, "a.tess")
    assert r.code == 0, r.err
    r = cli("trace", "convert", "a.tess", "b.lackey")
    assert r.code == 0, r.err
    assert (tmp_path / "b.lackey").read_bytes() == lackey_trace.read_bytes()
    r = cli("trace", "convert", "b.lackey", "c.bin", "--to", "native")
    assert r.code == 0, r.err
    assert tessera.trace_info(tmp_path / "c.bin") == tessera.trace_info(tmp_path / "a.tess")
    assert tessera.trace_info(tmp_path / "c.bin")["format"] == "native"


def test_same_stats_from_lackey_and_native(cli, tmp_path, lackey_trace, native_trace):
    assert cli("run", "--preset", "sandy_bridge", "--trace", lackey_trace, "--out", "a.json", "-q").code == 0
    assert cli("run", "--preset", "sandy_bridge", "--trace", native_trace, "--out", "b.json", "-q").code == 0
    assert _load(tmp_path / "a.json")["stats"] == _load(tmp_path / "b.json")["stats"]


def test_compare(cli, tmp_path):
    base = ["run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC, "-q"]
    assert cli(*base, "--out", "4k.json").code == 0
    assert cli(*base, "--set", "physmem.page_size=thp", "--out", "thp.json").code == 0
    r = cli("compare", "4k.json", "thp.json")
    assert r.code == 0, r.err
    # Every printed number is Equation 1 computed by hand from the two results.
    b, o = tessera.load_result(tmp_path / "4k.json"), tessera.load_result(tmp_path / "thp.json")
    bc, oc = b.counters["core.cycles"], o.counters["core.cycles"]
    bw, ow = b.counters["walker.cycles"], o.counters["walker.cycles"]
    expected = bc - bw + ow
    rows = {
        "cycles": [fmt(bc), fmt(oc)],
        "walk cycles": [fmt(bw), fmt(ow)],
        "walks PKI": [fmt(b.stats["walker.walks_pki"]), fmt(o.stats["walker.walks_pki"])],
        "expected cycles (Eq. 1)": [fmt(float(expected))],
        "change in walk cycles": [pct(ow / bw - 1)],
        "expected speedup": [pct(bc / expected - 1)],
        "simulated speedup": [pct(bc / oc - 1)],
        "simulated - expected": [f"{100 * ((bc / oc - 1) - (bc / expected - 1)):+.2f}", "pp"],
    }
    printed = {}
    for line in r.out.splitlines():
        for label in rows:
            if line.startswith(label + " "):
                printed[label] = line[len(label):].split()
    assert printed == rows, r.out
    assert bw > ow > 0 and oc < bc  # THP removes most walks of this stream
    r = cli("compare", "4k.json", "thp.json", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out) == tessera.compare(tmp_path / "4k.json", tmp_path / "thp.json")


def test_compare_bad_file(cli, tmp_path):
    (tmp_path / "x.json").write_text("{}")
    r = cli("compare", "x.json", "x.json")
    assert r.code == 2  # a usage error: not a result file
    assert r.err.startswith("tessera: error: x.json")


def test_bench_quick(cli, tmp_path):
    r = cli("bench", "--quick", "--accesses", "20000", "--json", "bench.json")
    assert r.code == 0, r.err
    doc = _load(tmp_path / "bench.json")
    assert len(doc["runs"]) == 6
    assert {(x["preset"], x["pattern"]) for x in doc["runs"]} == {
        (p, s) for p in ("tlb_only", "sandy_bridge") for s in ("uniform", "sequential", "hotcold")
    }
    assert all(x["accesses"] == 20000 and x["accesses_per_sec"] > 0 for x in doc["runs"])


def test_bench_organisations(cli, tmp_path):
    r = cli("bench", "--organisations", "--accesses", "5000", "--rounds", "2", "--json", "orgs.json")
    assert r.code == 0, r.err
    rows = _load(tmp_path / "orgs.json")["organisations"]
    orgs = ("set_assoc", "coalescing-8", "mosaic-4", "mosaic-64")
    assert [(x["pattern"], x["organisation"]) for x in rows] == [
        (p, o) for p in ("uniform", "sequential", "hotcold") for o in orgs
    ]
    for x in rows:
        assert x["preset"] == "tlb_only" and x["accesses"] == 5000 and len(x["seconds_all"]) == 2
        assert x["seconds"] > 0 and x["accesses_per_sec"] > 0
        if x["organisation"] == "set_assoc":
            assert x["relative_time"] == 1.0
        else:
            assert all("organisation=" in o for o in x["overrides"])
    assert cli("bench", "--organisations", "--rounds", "0").code != 0


def test_bench_page_tables(cli, tmp_path):
    r = cli("bench", "--page-tables", "--accesses", "5000", "--rounds", "1", "--json", "pt.json")
    assert r.code == 0, r.err
    rows = _load(tmp_path / "pt.json")["page_tables"]
    designs = ("4k", "gt_pde_4m", "gt_pde_1m", "p_gt_pde_2m")
    assert [(x["pattern"], x["variant"]) for x in rows] == [(p, d) for p in ("uniform", "sequential", "hotcold") for d in designs]
    for x in rows:
        assert x["preset"] == "gtsm_ptlsim" and x["seconds"] > 0
        assert x["relative_time"] == 1.0 if x["variant"] == "4k" else any("gt_pde" in o for o in x["overrides"])


# ------------------------------------------------------------- the real command


def _command(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "tessera", *args], capture_output=True, text=True, **kw)


def test_python_dash_m_runs(tmp_path):
    p = _command("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--out", str(tmp_path / "r.json"), "-q")
    assert p.returncode == 0, p.stderr
    assert p.stderr == ""  # stderr is not a TTY: no progress bar
    assert (tmp_path / "r.json").exists()


def test_config_error_through_the_real_command_has_no_traceback(tmp_path):
    p = _command("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--set", "mmu.tlb.l2_tlb.entries=384")
    assert p.returncode == 2
    assert p.stderr.startswith("tessera: error:")
    assert "Traceback" not in p.stderr


def _cpu_seconds(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    # utime and stime are fields 14 and 15 of /proc/PID/stat (1-based), in clock ticks.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc to know the run has started")
def test_ctrl_c_exits_130_without_output(tmp_path):
    out = tmp_path / "r.json"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tessera",
            "run",
            "--preset",
            "sandy_bridge",
            "--synthetic",
            "uniform",
            "--accesses",
            "2000000000",
            "--footprint",
            "4GiB",
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # Wait until the process has spent a second of CPU time: it is simulating by then.
    deadline = time.monotonic() + 60
    while _cpu_seconds(proc.pid) < 1.0 and time.monotonic() < deadline:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert "interrupted" in err
    assert "Traceback" not in err
    assert not out.exists()
    assert not [f for f in os.listdir(tmp_path) if f.endswith(".tmp")]


def test_summary_shows_only_what_the_machine_has(cli):
    timed = cli("run", "--preset", "sandy_bridge", *SMALL_SYNTHETIC)
    assert timed.code == 0, timed.err
    for text in ("TLBs", "l2_tlb", "miss rate", "Page walks", "walks PKI", "cycles per walk", "Data caches", "IPC"):
        assert text in timed.out, text
    untimed = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC)
    assert untimed.code == 0, untimed.err
    assert "TLBs" in untimed.out and "walks PKI" in untimed.out
    for text in ("cycles per walk", "Data caches", "IPC", "served by L1D"):
        assert text not in untimed.out, text
    everything = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--all")
    assert "mmu.l2_tlb.misses" in everything.out


# ------------------------------------------------- issue 14: results to trust


def _timed_run(cli, out, *extra):
    r = cli("run", "--preset", "sandy_bridge", *extra, "--out", out, "-q")
    assert r.code == 0, r.err
    return out


def test_compare_refuses_different_programs(cli, tmp_path):
    a = _timed_run(cli, "a.json", "--synthetic", "uniform", "--accesses", "20000", "--footprint", "64MiB")
    b = _timed_run(cli, "b.json", "--synthetic", "hotcold", "--accesses", "30000", "--footprint", "64MiB")
    r = cli("compare", a, b)
    assert r.code == 2, r.err
    assert "different programs" in r.err and "synthetic:hotcold" in r.err
    assert "instruction counts" in r.err and "60,000" in r.err and "90,000" in r.err
    assert r.out == ""
    r = cli("compare", a, b, "--force")
    assert r.code == 0, r.err
    assert "WARNING" in r.err and "different programs" in r.err
    assert "expected speedup" in r.out


def test_compare_same_program_with_points_and_counts(cli, tmp_path):
    syn = ["--synthetic", "uniform", "--accesses", "20000", "--footprint", "64MiB"]
    a = _timed_run(cli, "a.json", *syn)
    b = _timed_run(cli, "b.json", *syn, "--set", "physmem.page_size=thp")
    r = cli("compare", a, b)
    assert r.code == 0, r.err
    assert "WARNING" not in r.err
    gap = next(line for line in r.out.splitlines() if line.startswith("simulated - expected"))
    assert gap.rstrip().endswith(" pp"), gap
    cycles = next(line for line in r.out.splitlines() if line.startswith("expected cycles")).split()[-1]
    # One count formatter: whole numbers with separators, never 1.2e+07 or decimals.
    assert "," in cycles and "e+" not in cycles and "." not in cycles, cycles
    doc = json.loads(cli("compare", a, b, "--json").out)
    assert doc["base_instructions"] == doc["other_instructions"] == 60_000


def test_compare_sees_a_trace_by_content_not_name(cli, tmp_path, lackey_trace):
    import shutil

    from conftest import write_lackey

    shutil.copy(lackey_trace, tmp_path / "t.lackey")
    a = _timed_run(cli, "a.json", "--trace", "t.lackey")
    write_lackey(tmp_path / "t.lackey", seed=99)  # same name, same length, other addresses
    b = _timed_run(cli, "b.json", "--trace", "t.lackey")
    r = cli("compare", a, b)
    assert r.code == 2
    assert "not the same one" in r.err and "source_id" in r.err
    shutil.copy(tmp_path / "t.lackey", tmp_path / "renamed.lackey")
    c = _timed_run(cli, "c.json", "--trace", "renamed.lackey")
    r = cli("compare", b, c)  # another name, the same bytes: the same program
    assert r.code == 0 and "WARNING" not in r.err, r.err
    assert tessera.load_result(tmp_path / "b.json").source_id == tessera.load_result(tmp_path / "c.json").source_id


def test_compare_old_results_fall_back_to_the_source_description(cli, tmp_path):
    syn = ["--synthetic", "uniform", "--accesses", "20000", "--footprint", "64MiB"]
    a = _timed_run(cli, "a.json", *syn)
    b = _timed_run(cli, "b.json", *syn, "--set", "physmem.page_size=thp")
    c = _timed_run(cli, "c.json", *syn, "--seed", "1")
    for name in (a, b, c):
        doc = json.loads((tmp_path / name).read_text())
        del doc["source_id"]
        (tmp_path / name).write_text(json.dumps(doc))
    assert tessera.load_result(tmp_path / a).source_id is None
    assert cli("compare", a, b).code == 0
    r = cli("compare", a, c)
    assert r.code == 2 and "source description" in r.err


def test_source_id_of_each_source(tmp_path, lackey_trace):
    w = tessera.source_id(workload="gups", params={"table": "4MiB"})
    assert w.startswith("workload:gups ") and "table=4MiB" in w and "seed" not in w
    # Every resolved parameter is in it, so a default spelled out is the same workload.
    defaults = tessera.workloads()["gups"]["params"]
    assert all(f"{p['name']}=" in w for p in defaults)
    s = tessera.source_id(synthetic={"pattern": "uniform", "accesses": "1e6", "footprint": "1GiB"}, seed=2)
    assert s == "synthetic:uniform accesses=1000000 footprint=1073741824 seed=2"
    t = tessera.source_id(lackey_trace)
    assert t.startswith("trace:blake2b-128:") and len(t) == len("trace:blake2b-128:") + 32


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "--preset", "tlb_only", "--trace", "nonexist.tess", "-q"],
        ["trace", "info", "nonexist.tess"],
        ["trace", "convert", "nonexist.tess", "out.tess"],
    ],
)
def test_missing_trace_exits_3_naming_the_file(cli, tmp_path, argv):
    r = cli(*argv)
    assert r.code == 3, r.err
    assert "nonexist.tess" in r.err and "Traceback" not in r.err
    assert not (tmp_path / "out.tess").exists()


def test_counts_take_one_syntax_everywhere(cli, tmp_path, capsys):
    for text in ("1e4", "10k", "10_000", "10000"):
        r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", text, "--out", "r.json", "-q")
        assert r.code == 0, (text, r.err)
        assert tessera.load_result(tmp_path / "r.json").counters["core.records"] == 10_000
    with pytest.raises(SystemExit) as e:
        cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", "1.5", "-q")
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "is not a count" in err and "whole number" in err
    assert tessera.parse_count("2.5M") == 2_500_000 and tessera.parse_count(1e6) == 1_000_000
    with pytest.raises(ValueError, match="not a count"):
        tessera.parse_count(1.5)


def test_size_limits_in_plain_english(cli):
    r = cli("run", "--preset", "tlb_only", "--workload", "gups", "--param", "table=1PiB", "-q")
    assert r.code == 2
    assert "must be between 64 KiB and 1 TiB, not 1 PiB" in r.err
    assert "..=" not in r.err
    r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--footprint", "2TiB", "-q")
    assert r.code == 2 and "1 TiB" in r.err and "2^40" not in r.err
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--set", "mmu.tlb.l2_tlb.latency=-1", "-q")
    assert r.code == 2
    assert "must be a whole number from 0 to 4294967295, not -1" in r.err and "u32" not in r.err


def test_sizes_print_in_one_form(cli, capsys):
    assert tessera.format_size(1 << 30) == "1 GiB" and tessera.format_size(3 << 29) == "1.5 GiB"
    with pytest.raises(SystemExit):
        cli("run", "--help")
    assert "(default 256 MiB)" in " ".join(capsys.readouterr().out.split())
    r = cli("workloads", "gups")
    assert "footprint at the defaults: 1 GiB" in r.out or " GiB" in r.out.splitlines()[1]
    assert "1.0 GiB" not in r.out


def test_trace_info_prints_footprint_as_a_size(cli, lackey_trace):
    r = cli("trace", "info", lackey_trace)
    assert r.code == 0
    assert "footprint" in r.out and " KiB" in r.out and "footprint_bytes" not in r.out
    doc = json.loads(cli("trace", "info", lackey_trace, "--json").out)
    assert isinstance(doc["footprint_bytes"], int)


def test_trace_convert_needs_to_for_an_unknown_extension(cli, tmp_path, lackey_trace):
    r = cli("trace", "convert", lackey_trace, "x.tsr")
    assert r.code == 2
    assert ".tsr" in r.err and ".tess" in r.err and "--to" in r.err
    assert "usage: tessera trace convert" in r.err
    assert not (tmp_path / "x.tsr").exists()
    r = cli("trace", "convert", lackey_trace, "x.tsr", "--to", "native")
    assert r.code == 0 and "chosen by" not in r.err
    assert tessera.trace_info(tmp_path / "x.tsr")["format"] == "native"
    r = cli("trace", "convert", lackey_trace, "y.tess")
    assert r.code == 0 and "wrote native format, chosen by the .tess extension" in r.err
    with pytest.raises(ValueError, match=".tsr"):
        tessera.convert_trace(lackey_trace, tmp_path / "z.tsr")


def test_trace_record_without_a_program_shows_its_own_usage(cli, tmp_path):
    r = cli("trace", "record", "-o", "x.tess")
    assert r.code == 2
    assert r.err.startswith("usage: tessera trace record")
    assert "needs a program" in r.err


def _positionals(parser, path=()):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _positionals(sub, (*path, name))
        elif not action.option_strings:
            yield path, action


def test_every_positional_argument_has_help():
    from tessera.cli import build_parser

    missing = [f"{' '.join(p)} {a.metavar or a.dest}" for p, a in _positionals(build_parser()) if not a.help]
    assert missing == []


def test_inheriting_machine_file_gets_its_own_name_and_description(cli, tmp_path):
    (tmp_path / "big_stlb.toml").write_text('inherit = "tlb_only"\n\n[mmu.tlb.l2_tlb]\nentries = 1024\n')
    r = cli("config", "show", "big_stlb.toml")
    assert r.code == 0, r.err
    doc = tessera.config.loads_toml(r.out)
    assert doc["name"] == "big_stlb"
    assert doc["description"] == "based on preset tlb_only"
    (tmp_path / "own.toml").write_text('inherit = "tlb_only"\nname = "x"\ndescription = "my words"\n')
    doc = tessera.config.loads_toml(cli("config", "show", "own.toml").out)
    assert (doc["name"], doc["description"]) == ("x", "my words")


def test_champsim_access_size_takes_a_size_and_is_range_checked(cli):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--champsim-access-size", "1KiB", "-q")
    assert r.code == 2 and "between 1 and 64 bytes, not 1024" in r.err and "Traceback" not in r.err
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC, "--champsim-access-size", "8B", "-q")
    assert r.code == 0, r.err


def test_run_summary_shows_the_synthetic_footprint_as_a_size(cli):
    r = cli("run", "--preset", "tlb_only", *SMALL_SYNTHETIC)
    assert r.code == 0, r.err
    assert "footprint=64 MiB" in r.out and "67108864" not in r.out
