"""Sweeps: expansion, run identity, resume, force, failures, and the CLI."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from conftest import SORT_TRACE

import tessera
from tessera.errors import StoreError, SweepError
from tessera.store import open_store
from tessera.sweeps import LocalExecutor, load_spec, run_sweep

SYN = {"pattern": "uniform", "accesses": 20_000, "footprint": "64MiB"}


def spec(**extra):
    base = {"name": "t", "machine": "tlb_only", "source": {"synthetic": dict(SYN)},
            "axes": {"mmu.tlb.l2_tlb.entries": [256, 512], "seed": [0, 1]}}
    base.update(extra)
    return base


# ------------------------------------------------------------------ expansion


def test_axes_cross_in_order_and_ranges_expand():
    s = load_spec(spec(axes={"seed": {"start": 0, "stop": 3}, "mmu.tlb.l2_tlb.entries": {"start": 128, "stop": 512, "mul": 2}}))
    runs = s.expand()
    assert [(r.point["seed"], r.point["mmu.tlb.l2_tlb.entries"]) for r in runs] == [
        (s_, e) for s_ in (0, 1, 2) for e in (128, 256, 512)
    ]
    assert len({r.run_id for r in runs}) == 9
    assert all("entries = " + str(r.point["mmu.tlb.l2_tlb.entries"]) in r.config_toml for r in runs)


def test_zip_include_exclude():
    s = load_spec(spec(axes={"workload": ["sequential", "uniform"], "param.accesses": ["2k", "3k"], "seed": [0, 1],
                             "zip": [["workload", "param.accesses"]]},
                       source={}, exclude=[{"workload": "uniform", "seed": 1}]))
    pts = [r.point for r in s.expand()]
    assert pts == [
        {"workload": "sequential", "param.accesses": "2k", "seed": 0},
        {"workload": "sequential", "param.accesses": "2k", "seed": 1},
        {"workload": "uniform", "param.accesses": "3k", "seed": 0},
    ]


def test_run_id_is_the_resolved_machine_not_its_spelling():
    a = load_spec(spec(axes={"seed": [0]})).expand()[0]
    # The same L2 TLB size given explicitly: same resolved machine, same id.
    b = load_spec(spec(axes={"seed": [0]}, set={"mmu.tlb.l2_tlb.entries": 512})).expand()[0]
    c = load_spec(spec(axes={"seed": [0]}, set={"mmu.tlb.l2_tlb.entries": 1024})).expand()[0]
    assert a.run_id == b.run_id != c.run_id


def test_trace_identity_follows_contents(tmp_path: Path):
    t = tmp_path / "x.tess"
    t.write_bytes(SORT_TRACE.read_bytes())
    sp = {"name": "tr", "machine": "tlb_only", "source": {"trace": str(t)}}
    r1 = load_spec(sp).expand()[0]
    t2 = tmp_path / "copy" / "x.tess"
    t2.parent.mkdir()
    t2.write_bytes(t.read_bytes())
    assert load_spec({**sp, "source": {"trace": str(t2)}}).expand()[0].run_id == r1.run_id
    t.write_bytes(t.read_bytes()[:-64])
    assert load_spec(sp).expand()[0].run_id != r1.run_id


@pytest.mark.parametrize(
    "bad, path, needle",
    [
        ({"axes": {"mmu.tlb.l2_tlb.entrys": [1]}}, "mmu.tlb.l2_tlb.entrys", "entrys"),
        ({"axes": {"mmu.tlb.l2_tlb.entries": [300]}}, "mmu.tlb.l2_tlb", "300"),
        ({"axes": {"seed": []}}, "axes.seed", "no values"),
        ({"axes": {"seed": {"start": 0}}}, "axes.seed", "start"),
        ({"axis": {}}, "axis", "unknown key"),
        ({"name": ""}, "name", "name"),
        ({"source": {"workload": "gups", "synthetic": SYN}}, "source", "exactly one"),
        ({"source": {"workload": "nope"}}, "workload", "unknown workload"),
        ({"source": {"workload": "gups"}, "params": {"gups": {"tabel": "1MiB"}}}, "params.gups.tabel", "tabel"),
        ({"exclude": [{"nope": 1}]}, "exclude.nope", "not an axis"),
        ({"axes": {"seed": [0, 1], "mmu.tlb.l2_tlb.entries": [256], "zip": [["seed", "mmu.tlb.l2_tlb.entries"]]}},
         "axes.zip", "different lengths"),
        ({"axes": {"mmu.tlb.l2_tlb.replacement.kind": ["lru", "lru"]}}, "axes", "same run"),
    ],
)
def test_bad_sweeps_name_the_key(bad, path, needle):
    with pytest.raises(SweepError) as e:
        load_spec(spec(**bad)).expand()
    assert path in e.value.path or path in str(e.value)
    assert needle in str(e.value)
    assert isinstance(e.value, tessera.ConfigError)


def test_bad_toml_file_names_the_file(tmp_path: Path):
    f = tmp_path / "s.toml"
    f.write_text("name = \"x\"\n[axes\n")
    with pytest.raises(SweepError, match="s.toml: not valid TOML"):
        load_spec(f)


# ------------------------------------------------------------ running, store


def test_sweep_matches_single_runs_and_resumes(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    df = tessera.sweep(spec(), store=store, jobs=2)
    assert df.attrs["sweep"]["computed"] == 4 and len(df) == 4
    assert list(df["axis.seed"]) == [0, 1, 0, 1]
    # Each row is what a single run gives.
    for _, row in df.iterrows():
        r = tessera.simulate("tlb_only", synthetic=SYN, seed=int(row["seed"]),
                             overrides={"mmu.tlb.l2_tlb.entries": int(row["axis.mmu.tlb.l2_tlb.entries"])})
        assert row["mmu.l2_tlb.misses"] == r.counters["mmu.l2_tlb.misses"]
        assert tessera.results.get(store, row["run_id"]) == r
    again = tessera.sweep(spec(), store=store, jobs=2)
    assert again.attrs["sweep"]["computed"] == 0 and again.attrs["sweep"]["already_stored"] == 4
    assert again.drop(columns=[]).equals(df)
    # A grown sweep computes only the new points.
    grown = tessera.sweep(spec(axes={"mmu.tlb.l2_tlb.entries": [256, 512, 1024], "seed": [0, 1]}), store=store, jobs=2)
    assert grown.attrs["sweep"]["computed"] == 2 and len(grown) == 6
    forced = tessera.sweep(spec(), store=store, jobs=1, force=True)
    assert forced.attrs["sweep"]["computed"] == 4
    with open_store(store) as st:
        assert st.count() == 6


def test_one_and_two_workers_give_identical_results(tmp_path: Path):
    s = spec(axes={"seed": [0, 1, 2], "mmu.tlb.l2_tlb.entries": [256, 1024]})
    a = tessera.sweep(s, store=tmp_path / "a.sqlite", jobs=1)
    b = tessera.sweep(s, store=tmp_path / "b.sqlite", jobs=2)
    for rid in a["run_id"]:
        assert tessera.results.get(tmp_path / "a.sqlite", rid).to_json() == \
            tessera.results.get(tmp_path / "b.sqlite", rid).to_json()
    stats = [c for c in a.columns if c not in ("wall_s",)]
    assert a[stats].equals(b[stats])


def test_failed_runs_are_recorded_and_retried(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    # Parameter values are checked by the core when the run starts.
    s = {"name": "f", "machine": "tlb_only",
         "source": {"workload": "gups"}, "params": {"gups": {"updates": "2k"}},
         "axes": {"param.table": ["1MiB", "lots"]}}
    rep = run_sweep(s, store=store, jobs=1)
    assert (rep.computed, rep.failed) == (1, 1)
    assert rep.failures[0]["kind"] == "ConfigError" and "workload.gups.table" in rep.failures[0]["error"]
    with open_store(store) as st:
        (f,) = st.failures("f")
        assert f["kind"] == "ConfigError" and f["run_id"] == rep.failures[0]["run_id"]
    again = run_sweep(s, store=store, jobs=1)
    assert (again.already_stored, again.failed) == (1, 1)


def test_interrupted_sweep_keeps_finished_results_and_resumes(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    s = spec(axes={"seed": list(range(6))})
    seen = []

    def stop_after_two(done, total, failed):
        seen.append(done)
        if done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(s, store=store, executor=LocalExecutor(1), progress=stop_after_two)
    with open_store(store) as st:
        assert st.count() == 2
    rep = run_sweep(s, store=store, jobs=2)
    assert (rep.already_stored, rep.computed) == (2, 4)
    with sqlite3.connect(store) as c:
        assert c.execute("SELECT COUNT(*), COUNT(DISTINCT run_id) FROM runs").fetchone() == (6, 6)


# ---------------------------------------------------------------- store errors


def test_foreign_sqlite_file_is_refused(tmp_path: Path):
    f = tmp_path / "other.sqlite"
    with sqlite3.connect(f) as c:
        c.execute("CREATE TABLE customers (id INTEGER)")
    with pytest.raises(StoreError, match="not a Tessera results store"):
        open_store(f)


def test_corrupt_store_is_a_clear_error(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    tessera.sweep(spec(), store=store, jobs=1)
    data = store.read_bytes()
    store.write_bytes(data[:100] + b"\x55" * 4000 + data[4100:])
    with pytest.raises(StoreError) as e:
        tessera.results.load(store)
    assert str(store) in str(e.value) and "damaged" in str(e.value)
    store.write_bytes(b"this is not a database at all" * 50)
    with pytest.raises(StoreError, match="damaged or not a SQLite file"):
        tessera.results.load(store)


def test_store_from_newer_tessera_is_refused(tmp_path: Path):
    store = tmp_path / "s.sqlite"
    open_store(store).close()
    with sqlite3.connect(store) as c:
        c.execute("PRAGMA user_version = 99")
    with pytest.raises(StoreError, match="newer Tessera"):
        open_store(store)


# ------------------------------------------------------------------------ CLI


def write_sweep(tmp_path: Path) -> Path:
    f = tmp_path / "sweep.toml"
    f.write_text(
        'name = "cli"\nmachine = "tlb_only"\n'
        '[source]\nsynthetic = { pattern = "uniform", accesses = 20000, footprint = "64MiB" }\n'
        '[axes]\n"mmu.tlb.l2_tlb.entries" = [256, 512]\n'
    )
    return f


def test_cli_sweep_results_and_export(cli, tmp_path: Path):
    f = write_sweep(tmp_path)
    r = cli("sweep", f, "--store", "s.sqlite", "-j", "2", "--json", "rep.json")
    assert r.code == 0, r.err
    assert "2 runs, 0 already stored, 2 to run" in r.err and "2 computed" in r.err
    assert json.loads((tmp_path / "rep.json").read_text())["computed"] == 2
    r = cli("sweep", f, "--store", "s.sqlite")
    assert r.code == 0 and "0 computed, 2 already stored" in r.err
    r = cli("sweep", f, "--store", "s.sqlite", "--dry-run")
    assert r.code == 0 and r.out.count("yes") == 2
    r = cli("results", "ls", "--store", "s.sqlite")
    assert r.code == 0 and "cli" in r.out
    r = cli("results", "ls", "--store", "s.sqlite", "--sweep", "cli")
    rid = r.out.splitlines()[2].split()[0]
    r = cli("results", "show", rid[:8], "--store", "s.sqlite")
    assert r.code == 0 and rid in r.out and "accesses" in r.out
    for fmt in ("csv", "parquet", "json"):
        r = cli("results", "export", f"out.{fmt}", "--store", "s.sqlite", "--sweep", "cli")
        assert r.code == 0, r.err
    import pandas as pd

    pq = pd.read_parquet(tmp_path / "out.parquet")
    csv = pd.read_csv(tmp_path / "out.csv")
    js = json.loads((tmp_path / "out.json").read_text())
    assert len(pq) == len(csv) == len(js) == 2
    assert list(pq["mmu.l2_tlb.misses"]) == list(csv["mmu.l2_tlb.misses"]) == [j["mmu.l2_tlb.misses"] for j in js]


def test_cli_errors(cli, tmp_path: Path):
    r = cli("results", "ls", "--store", "missing.sqlite")
    assert r.code == 6 and "no results store" in r.err
    (tmp_path / "junk.sqlite").write_text("junk" * 300)
    r = cli("results", "ls", "--store", "junk.sqlite")
    assert r.code == 6 and "junk.sqlite" in r.err
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "b"\nmachine = "tlb_only"\n[source]\nsynthetic = {}\n[axes]\n"mmu.nope" = [1]\n')
    r = cli("sweep", bad, "--store", "s.sqlite")
    assert r.code == 2 and "bad.toml" in r.err and "mmu.nope" in r.err
    write_sweep(tmp_path)
    cli("sweep", "sweep.toml", "--store", "s.sqlite", "-j", "1")
    r = cli("results", "show", "ffffff", "--store", "s.sqlite")
    assert r.code == 2 and "no run" in r.err


@pytest.mark.parametrize("sig", ["SIGINT", "SIGTERM"])
def test_signalled_cli_sweep_resumes_without_recomputing(tmp_path: Path, sig: str):
    """`tessera sweep` stopped by a signal mid-sweep: exit 130, no worker left
    behind, and the re-run computes exactly the runs that were not stored."""
    import os
    import signal
    import subprocess
    import sys
    import time

    f = tmp_path / "s.toml"
    f.write_text(
        'name = "sig"\nmachine = "tlb_only"\n'
        '[source]\nsynthetic = { pattern = "uniform", accesses = 400000, footprint = "1GiB" }\n'
        '[axes]\nseed = { start = 0, stop = 40 }\n'
    )
    store = tmp_path / "s.sqlite"
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    p = subprocess.Popen([sys.executable, "-m", "tessera", "sweep", str(f), "--store", str(store), "-j", "2", "-q"],
                         env=env, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + 120
    n = 0
    while time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.1)
        if store.exists():
            try:
                with sqlite3.connect(store, timeout=5) as c:
                    n = c.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
            except sqlite3.OperationalError:
                continue  # schema not created yet
            if n >= 3:
                break
    assert p.poll() is None, "the sweep finished before it could be interrupted"
    p.send_signal(getattr(signal, sig))
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err.decode()
    # No worker outlives the sweep (multiprocessing's forkserver and resource
    # tracker notice their parent has gone and leave a moment later).
    for _ in range(100):
        left = subprocess.run(["pgrep", "-a", "-s", str(p.pid)], capture_output=True, text=True).stdout.splitlines()
        if not left:
            break
        time.sleep(0.1)
    assert left == [], f"processes left in the sweep's session: {left}"
    with open_store(store) as st:
        stored = st.count()
    assert 3 <= stored < 40
    rep = run_sweep(f, store=store, jobs=2)
    assert (rep.already_stored, rep.computed, rep.failed) == (stored, 40 - stored, 0)


def test_grid_expansion_property():
    """Against a direct model: every combination once, in order, minus excluded ones."""
    import itertools

    from hypothesis import given, settings
    from hypothesis import strategies as st_

    from tessera.sweeps.spec import _points

    @settings(max_examples=60, deadline=None)
    @given(
        lens=st_.lists(st_.integers(1, 3), min_size=1, max_size=4),
        zip_first_two=st_.booleans(),
        excl=st_.lists(st_.tuples(st_.integers(0, 3), st_.integers(0, 2)), max_size=2),
    )
    def check(lens, zip_first_two, excl):
        names = [f"a{i}" for i in range(len(lens))]
        axes = {n: [f"{n}v{j}" for j in range(k)] for n, k in zip(names, lens)}
        zipped = zip_first_two and len(lens) >= 2
        if zipped:
            axes[names[1]] = [f"{names[1]}v{j}" for j in range(lens[0])]
            axes["zip"] = [[names[0], names[1]]]
        exclude = [{names[i % len(names)]: f"{names[i % len(names)]}v{j}"} for i, j in excl]
        s = load_spec({"name": "p", "source": {"synthetic": SYN}, "axes": axes, "exclude": exclude})
        got = _points(s)
        lists = [axes[n] for n in names]
        if zipped:
            model = [dict(zip(names, (a, b, *rest))) for (a, b), *rest in
                     ([pair, *r] for pair, *r in itertools.product(list(zip(lists[0], lists[1])), *lists[2:]))]
        else:
            model = [dict(zip(names, c)) for c in itertools.product(*lists)]
        model = [p for p in model if not any(all(p[k] == v for k, v in r.items()) for r in exclude)]
        assert got == model

    check()


def test_cli_forget_and_load_all(cli, tmp_path: Path):
    write_sweep(tmp_path)
    assert cli("sweep", "sweep.toml", "--store", "s.sqlite", "-j", "0").code == 2
    assert cli("sweep", "sweep.toml", "--store", "s.sqlite", "-j", "1").code == 0
    assert len(tessera.results.load(tmp_path / "s.sqlite")) == 2
    r = cli("results", "forget", "cli", "--store", "s.sqlite")
    assert r.code == 0 and "forgot sweep cli" in r.err
    df = tessera.results.load(tmp_path / "s.sqlite")  # results stay, without a sweep
    assert len(df) == 2 and df["sweep"].isna().all()
    r = cli("results", "ls", "--store", "s.sqlite", "--sweep", "cli")
    assert r.code == 2 and "no sweep 'cli'" in r.err


def test_trace_and_machine_axes(tmp_path: Path):
    """Traces and machine files are found relative to the sweep file; machine
    files are read when the sweep is expanded (workers need no access to them)."""
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "sort.tess").write_bytes(SORT_TRACE.read_bytes())
    (tmp_path / "small.toml").write_text(tessera.resolve_config("tlb_only", {"mmu.tlb.l2_tlb.entries": 128}))
    f = tmp_path / "s.toml"
    f.write_text('name = "tm"\n[axes]\ntrace = ["traces/sort.tess"]\nmachine = ["tlb_only", "small.toml"]\n')
    df = tessera.sweep(f, store=tmp_path / "s.sqlite", jobs=1)
    assert list(df["machine"]) == ["tlb_only", "small.toml"]
    assert list(df["config.mmu.tlb.l2_tlb.entries"]) == [512, 128]
    direct = tessera.simulate(tmp_path / "small.toml", tmp_path / "traces" / "sort.tess")
    assert df.iloc[1]["mmu.l2_tlb.misses"] == direct.counters["mmu.l2_tlb.misses"]
    assert df.iloc[0]["source"].startswith("trace:")


def test_invalid_sweep_creates_no_store_and_lists_allowed_once(cli, tmp_path: Path):
    bad = tmp_path / "bad.toml"
    # The first point is fine; only the second machine is wrong.
    bad.write_text('name = "b"\nmachine = "tlb_only"\n[source]\nsynthetic = {accesses = 1000}\n'
                   '[axes]\n"physmem.page_size" = ["base_only", "thq"]\n')
    r = cli("sweep", bad, "--store", "s.sqlite")
    assert r.code == 2
    assert "thq" in r.err and r.err.count("(allowed:") == 1, r.err
    assert not (tmp_path / "s.sqlite").exists()
    with pytest.raises(SweepError):
        run_sweep(bad, store=tmp_path / "api.sqlite")
    assert not (tmp_path / "api.sqlite").exists()


def test_sweep_counts_take_the_count_syntax(tmp_path: Path):
    runs = load_spec(spec(source={"synthetic": {**SYN, "accesses": "20k"}})).expand()
    same = load_spec(spec(source={"synthetic": {**SYN, "accesses": 2e4}})).expand()
    assert [r.run_id for r in runs] == [r.run_id for r in same]
    assert runs[0].synthetic["accesses"] == 20_000
    with pytest.raises(SweepError, match="source.synthetic.accesses.*not a count|not a count"):
        load_spec(spec(source={"synthetic": {**SYN, "accesses": 1.5}})).expand()


def test_stored_results_carry_source_id(tmp_path: Path):
    st = tmp_path / "s.sqlite"
    run_sweep(spec(axes={"seed": [0]}), store=st, executor=LocalExecutor(1))
    df = tessera.results.load(st, sweep="t")
    rid = df["run_id"].iloc[0]
    assert df["source_id"].iloc[0].startswith("synthetic:uniform accesses=20000 ")
    assert tessera.results.get(st, rid).source_id == "synthetic:uniform accesses=20000 footprint=67108864 seed=0"
