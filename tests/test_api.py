"""The Python API: simulate, Result, configs as dicts and TOML, results on disk."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import tessera
from tessera.config import dumps_toml, loads_toml

SYN = {"pattern": "uniform", "accesses": 20_000, "footprint": "64MiB"}


@pytest.fixture(scope="module")
def result() -> tessera.Result:
    return tessera.simulate("sandy_bridge", synthetic=SYN, seed=3)


def test_result_fields(result):
    assert result.seed == 3
    assert result.source.startswith("synthetic:uniform")
    assert result.version == tessera.__version__
    assert result.config["name"] == "sandy_bridge"
    assert loads_toml(result.config_toml) == result.config
    assert result.counters and all(isinstance(v, int) for v in result.counters.values())
    assert all(isinstance(v, float) for v in result.derived.values())


def test_stats_is_flat_counters_plus_derived(result):
    stats = result.stats
    assert len(stats) == len(result.counters) + len(result.derived)
    for k, v in result.counters.items():
        assert stats[k] == v
    for k, v in result.derived.items():
        # Stats schema 2: one namespace, no `derived.` prefix, no clash with a counter.
        assert not k.startswith("derived.") and k not in result.counters
        assert stats[k] == v or (math.isnan(v) and math.isnan(stats[k]))


def test_to_pandas_shape(result):
    df = result.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert df.shape[0] == 1
    config_cols = [c for c in df.columns if c.startswith("config.")]
    assert "config.name" in config_cols
    # seed, source, source_id, the warm-up's records and instructions, every stat, the host's, the config.
    assert list(result.host) == ["peak_heap_bytes"]
    assert df.shape[1] == 5 + len(result.stats) + len(result.host) + len(config_cols)
    assert df["host.peak_heap_bytes"].iloc[0] == result.host["peak_heap_bytes"] > 0
    assert df["config.name"].iloc[0] == "sandy_bridge"
    assert df["seed"].iloc[0] == 3
    for k, v in result.counters.items():
        assert df[k].iloc[0] == v


def test_save_and_load_json(result, tmp_path):
    p = result.save(tmp_path / "r.json")
    back = tessera.load_result(p)
    assert back == result
    assert back.to_json() == p.read_text()
    assert back.config == result.config
    # Saving what was loaded gives the same bytes.
    back.save(tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == p.read_bytes()


def test_save_csv_reads_back_with_pandas(result, tmp_path):
    p = result.save(tmp_path / "r.csv")
    df = pd.read_csv(p)
    assert df.shape == result.to_pandas().shape
    assert list(df.columns) == list(result.to_pandas().columns)
    with pytest.raises(ValueError):
        result.save(tmp_path / "r.parquet", format="parquet")
    assert not (tmp_path / "r.parquet").exists()


def test_save_leaves_no_temporary_files(result, tmp_path):
    result.save(tmp_path / "r.json")
    result.save(tmp_path / "r.json")  # overwrite
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json"]


def test_load_result_errors(tmp_path):
    with pytest.raises(tessera.ResultFileError):
        tessera.load_result(tmp_path / "missing.json")
    (tmp_path / "bad.json").write_text("[1, 2")
    with pytest.raises(tessera.ResultFileError):
        tessera.load_result(tmp_path / "bad.json")
    (tmp_path / "other.json").write_text('{"a": 1}')
    with pytest.raises(tessera.ResultFileError):
        tessera.load_result(tmp_path / "other.json")


def test_config_as_dict_text_path_and_preset(tmp_path):
    base = loads_toml(tessera.resolve_config("tlb_only"))
    base["name"] = "from_dict"
    base["mmu"]["tlb"]["l2_tlb"]["entries"] = 1024
    r_dict = tessera.simulate(base, synthetic=SYN)
    assert r_dict.config["name"] == "from_dict"
    assert r_dict.config["mmu"]["tlb"]["l2_tlb"]["entries"] == 1024

    text = dumps_toml(base)
    r_text = tessera.simulate(text, synthetic=SYN)
    assert r_text.counters == r_dict.counters

    (tmp_path / "m.toml").write_text(text)
    r_path = tessera.simulate(tmp_path / "m.toml", synthetic=SYN)
    r_str = tessera.simulate(str(tmp_path / "m.toml"), synthetic=SYN)
    assert r_path.counters == r_dict.counters == r_str.counters


def test_inherit_in_dict():
    r = tessera.simulate({"inherit": "tlb_only", "mmu": {"tlb": {"l2_tlb": {"ways": 8}}}}, synthetic=SYN)
    assert r.config["mmu"]["tlb"]["l2_tlb"]["ways"] == 8
    assert r.config["name"] == "tlb_only"


def test_overrides_as_dict_and_list():
    a = tessera.resolve_config("tlb_only", {"mmu.tlb.l2_tlb.entries": 1024, "physmem.page_size": "thp"})
    b = tessera.resolve_config("tlb_only", ["mmu.tlb.l2_tlb.entries=1024", "physmem.page_size=thp"])
    assert a == b
    assert loads_toml(a)["physmem"]["page_size"]["kind"] == "thp"


def test_source_arguments_are_checked(tmp_path):
    with pytest.raises(ValueError):
        tessera.simulate("tlb_only")
    with pytest.raises(ValueError):
        tessera.simulate("tlb_only", tmp_path / "x", synthetic=SYN)
    with pytest.raises(tessera.ConfigError, match="allowed: pattern, accesses, footprint"):
        tessera.simulate("tlb_only", synthetic={**SYN, "speed": 3})
    with pytest.raises(TypeError):
        tessera.simulate(42, synthetic=SYN)  # type: ignore[arg-type]


def test_synthetic_defaults_fill_missing_keys():
    d = tessera.synthetic_defaults()
    assert {"pattern", "accesses", "footprint"} <= set(d)
    r = tessera.simulate("tlb_only", synthetic={"pattern": "sequential", "accesses": 1000})
    assert "sequential" in r.source


def test_progress_callback_is_called():
    calls = []
    tessera.simulate(
        "tlb_only",
        synthetic={"pattern": "uniform", "accesses": 2_000_000, "footprint": "256MiB"},
        progress=lambda done, total: calls.append((done, total)),
    )
    assert calls
    assert all(0 <= d <= t for d, t in calls)
    assert [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_progress_callback_raising_keyboardinterrupt_stops_the_run():
    seen = []

    def stop(done: int, total: int) -> None:
        seen.append(done)
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        tessera.simulate(
            "tlb_only",
            synthetic={"pattern": "uniform", "accesses": 50_000_000, "footprint": "256MiB"},
            progress=stop,
        )
    assert len(seen) == 1
    assert seen[0] < 50_000_000


def test_progress_callback_exception_propagates():
    class Boom(Exception):
        pass

    def boom(done: int, total: int) -> None:
        raise Boom("stop here")

    with pytest.raises(Boom, match="stop here"):
        tessera.simulate(
            "tlb_only",
            synthetic={"pattern": "uniform", "accesses": 50_000_000, "footprint": "256MiB"},
            progress=boom,
        )


def test_other_threads_run_while_simulating():
    import threading

    ticks = []
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    t = threading.Thread(target=tick)
    t.start()
    try:
        tessera.simulate("tlb_only", synthetic={"pattern": "uniform", "accesses": 3_000_000, "footprint": "1GiB"})
    finally:
        stop.set()
        t.join()
    assert len(ticks) > 5


def test_presets_registry_and_stat_docs():
    presets = tessera.presets()
    assert {"sandy_bridge", "tlb_only"} <= set(presets)
    assert all(isinstance(s, str) and s for s in presets.values())
    assert "name" in loads_toml(tessera.preset_toml("tlb_only"))
    reg = tessera.registry()
    assert "replacement" in reg
    assert "lru" in dict(reg["replacement"])
    docs = tessera.stat_docs("tlb_only")
    assert docs
    assert all(isinstance(u, str) and isinstance(d, str) for u, d in docs.values())


def test_stat_docs_cover_the_run_counters(result):
    docs = tessera.stat_docs("sandy_bridge")
    missing = set(result.counters) - set(docs)
    assert not missing, sorted(missing)[:10]


def test_compare_api(tmp_path):
    base = tessera.simulate("sandy_bridge", synthetic=SYN)
    thp = tessera.simulate("sandy_bridge", synthetic=SYN, overrides=["physmem.page_size=thp"])
    c = tessera.compare(base, thp)
    bc, oc = base.counters["core.cycles"], thp.counters["core.cycles"]
    bw, ow = base.counters["walker.cycles"], thp.counters["walker.cycles"]
    # Equation 1: the cycles expected if walks did not interact with anything else.
    expected = bc - bw + ow
    assert (c["base_cycles"], c["other_cycles"], c["base_walk_cycles"], c["other_walk_cycles"]) == (bc, oc, bw, ow)
    assert c["expected_other_cycles"] == pytest.approx(expected)
    assert c["simulated_speedup"] == pytest.approx(bc / oc - 1)
    assert c["expected_speedup"] == pytest.approx(bc / expected - 1)
    assert c["speedup_gap"] == pytest.approx(bc / oc - bc / expected)
    assert c["walk_cycle_change"] == pytest.approx(ow / bw - 1)
    assert c["base_walks_pki"] == base.stats["walker.walks_pki"]
    assert c["other_walks_pki"] == thp.stats["walker.walks_pki"]
    # THP removes most walks of a 64 MiB uniform stream.
    assert ow < bw and c["simulated_speedup"] > 0
    base.save(tmp_path / "b.json")
    thp.save(tmp_path / "t.json")
    assert tessera.compare(tmp_path / "b.json", tmp_path / "t.json") == c


def test_bench_api():
    r = tessera.bench("tlb_only", synthetic={"pattern": "uniform", "accesses": 10_000, "footprint": "8GiB"})
    assert r["accesses"] == 10_000
    assert r["seconds"] > 0
    assert r["accesses_per_sec"] == pytest.approx(r["accesses"] / r["seconds"])


def test_parse_size():
    assert tessera.parse_size("1GiB") == 1 << 30
    assert tessera.parse_size("64MiB") == 64 << 20
    assert tessera.parse_size(4096) == 4096
    with pytest.raises(ValueError):
        tessera.parse_size("lots")


def test_paths_accepted_everywhere(tmp_path, lackey_trace):
    tessera.convert_trace(Path(lackey_trace), tmp_path / "x.tess")
    assert tessera.trace_info(str(tmp_path / "x.tess"))["format"] == "native"
    r = tessera.simulate("tlb_only", tmp_path / "x.tess")
    assert r.source == "trace:x.tess"


def test_progress_true_draws_a_bar_and_returns_the_result(monkeypatch):
    import io

    from rich.console import Console

    import tessera.progress

    # The bar goes to stderr only on a terminal: give it one that records what it draws.
    screen = io.StringIO()
    terminal = Console(file=screen, force_terminal=True, width=120, color_system=None)
    monkeypatch.setattr(tessera.progress, "Console", lambda **kw: terminal)
    r = tessera.simulate("tlb_only", synthetic={"pattern": "uniform", "accesses": 300_000}, progress=True)
    assert r.counters["core.records"] == 300_000
    frames = [f for f in screen.getvalue().split("\r") if "synthetic uniform" in f]
    assert frames, screen.getvalue()
    last = frames[-1]
    assert "━" in last and "100%" in last and "300.0k/300.0k" in last


def test_results_and_errors_pickle(result, tmp_path):
    import pickle

    assert pickle.loads(pickle.dumps(result)) == result
    with pytest.raises(tessera.ConfigError) as e:
        tessera.resolve_config("tlb_only", ["mmu.tlb.l2_tlb.ways=3"])
    back = pickle.loads(pickle.dumps(e.value))
    assert type(back) is tessera.ConfigError
    assert (str(back), back.path, back.allowed) == (str(e.value), e.value.path, e.value.allowed)
    with pytest.raises(tessera.ResultFileError) as e2:
        tessera.load_result(tmp_path / "missing.json")
    back2 = pickle.loads(pickle.dumps(e2.value))
    assert (str(back2), back2.path) == (str(e2.value), e2.value.path)
