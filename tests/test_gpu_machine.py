"""The GPU machine from Python and the CLI: runs of built-in kernels and of
Accel-Sim traces, mixes and their weighted speedup, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tessera
from tessera.cli import main

SMALL = ["gpu.sms=4"]


def test_a_kernel_runs_and_reports_per_application_counters():
    r = tessera.simulate_gpu("mosaic_gpu", [{"kernel": "bfs", "params": {"scale": 8}}], overrides=SMALL, seed=1)
    c = r.counters
    assert c["gpu.apps.0.warp_instructions"] > 0
    assert c["gpu.apps.0.cycles"] == c["gpu.cycles"]
    assert r.derived["gpu.apps.0.ipc"] == pytest.approx(c["gpu.apps.0.warp_instructions"] / c["gpu.cycles"])
    # Every page touched first faults once (4 KiB pages, demand paging).
    assert c["gpu.paging.faults"] == c["gpu.apps.0.touched_bytes"] // 4096
    assert c["gpu.walker.walks"] >= c["gpu.paging.faults"]
    again = tessera.simulate_gpu("mosaic_gpu", [{"kernel": "bfs", "params": {"scale": 8}}], overrides=SMALL, seed=1)
    assert again.counters == c


def test_an_accel_sim_trace_runs_exactly_as_the_kernel_it_was_written_from(tmp_path: Path):
    app = {"kernel": "spmv_csr", "params": {"scale": 8}}
    tessera.write_gpu_trace("spmv_csr", tmp_path / "t", {"scale": 8}, seed=2)
    a = tessera.simulate_gpu("mosaic_gpu", [app], overrides=SMALL, seed=2)
    b = tessera.simulate_gpu("mosaic_gpu", [{"trace": tmp_path / "t"}], overrides=SMALL, seed=2)
    same = [k for k in a.counters if k.startswith(("gpu.", "walker.", "os."))]
    assert {k: a.counters[k] for k in same} == {k: b.counters[k] for k in same}


def test_two_applications_split_the_sms_and_their_weighted_speedup_uses_cached_alone_runs(tmp_path: Path):
    store = tmp_path / "results.sqlite"
    apps = [{"kernel": "vector_add", "params": {"n": 20000}}, {"kernel": "bfs", "params": {"scale": 8}}]
    ws = tessera.weighted_speedup("mosaic_gpu", apps, overrides=SMALL, seed=1, store=store)
    assert [a["sms"] for a in ws["apps"]] == [2, 2]
    assert ws["weighted_speedup"] == pytest.approx(sum(a["ipc_shared"] / a["ipc_alone"] for a in ws["apps"]))
    # Sharing the walker, the L2 and the PCIe link slows each down.
    assert 0 < ws["weighted_speedup"] <= 2.0
    with _store(store) as st:
        assert st.count() == 2
    again = tessera.weighted_speedup("mosaic_gpu", apps, overrides=SMALL, seed=1, store=store)
    assert again["weighted_speedup"] == ws["weighted_speedup"]


def _store(path: Path):
    from tessera.store import open_store

    return open_store(path)


def test_the_cli_runs_gpu_kernels_and_writes_a_result(tmp_path: Path, capsys):
    out = tmp_path / "r.json"
    rc = main(["run", "--preset", "mosaic_gpu", "--set", "gpu.sms=2", "--apps", "vector_add,vector_add", "--out", str(out)])
    text = capsys.readouterr().out
    assert rc == 0
    assert "Applications" in text and "Warp stalls" in text and "far fault" in text
    data = json.loads(out.read_text())
    assert tessera.load_result(out).counters["gpu.apps.1.sms"] == 1
    rc = main(["run", "--preset", "uvm_gpu", "--set", "gpu.sms=2", "--workload", "bfs", "--param", "scale=8", "-q"])
    assert rc == 0


def test_gpu_usage_and_config_errors(capsys):
    assert main(["run", "--preset", "sandy_bridge", "--apps", "bfs"]) == 2
    assert "GPU machine" in capsys.readouterr().err
    assert main(["run", "--preset", "mosaic_gpu", "--synthetic", "uniform"]) == 2
    assert "GPU applications" in capsys.readouterr().err
    with pytest.raises(tessera.ConfigError, match="applications on 2 SMs"):
        tessera.simulate_gpu("mosaic_gpu", ["vector_add"] * 3, overrides=["gpu.sms=2"])
    with pytest.raises(tessera.ConfigError, match="CPU-only"):
        tessera.simulate_gpu("mosaic_gpu", ["vector_add"], overrides=["cache.l1d={size='32KiB', ways=8, latency=4}"])
    with pytest.raises(tessera.ConfigError, match="gpu"):
        tessera.simulate("tlb_only", synthetic={"pattern": "uniform", "accesses": 1000}, overrides=["gpu.sms=4"])
    with pytest.raises(tessera.ConfigError, match="GPU applications"):
        tessera.simulate("mosaic_gpu", synthetic={"pattern": "uniform", "accesses": 1000})
    with pytest.raises(ValueError, match="an application is"):
        tessera.simulate_gpu("mosaic_gpu", [{"kernal": "bfs"}])


def test_freeing_a_buffer_between_kernels_compacts_its_coalesced_regions_at_deallocation():
    # scan's input is read by launch 1 only; freeing it leaves its 2 MiB regions with no page allocated,
    # and the region it shares with the output below the threshold.
    app = {"kernel": "scan", "params": {"n": "1M", "free": "in@1"}}
    cac = ["gpu.sms=4", "gpu.paging=\"resident\"", "os.cac={ trigger = \"deallocation\", copy = \"bulk\" }"]
    r = tessera.simulate_gpu("mosaic_gpu_mosaic", [app], overrides=cac, seed=1).counters
    # 1M 4-byte elements: 976 whole pages; the last one is shared with the output, which stays.
    assert r["gpu.apps.0.freed_bytes"] == 976 * 4096
    assert r["os.coalescer.splintered"] >= 2
    assert r["os.coalescer.pages_released"] > 0
    assert r["os.coalescer.pages_held"] == 0
    assert r["gpu.compaction_stall_cycles"] == r["os.cac.cycles"]
    # The same buffers never freed: nothing splinters.
    kept = tessera.simulate_gpu("mosaic_gpu_mosaic", [{"kernel": "scan", "params": {"n": "1M"}}], overrides=cac, seed=1).counters
    assert kept["os.coalescer.splintered"] == 0
    assert "gpu.apps.0.freed_bytes" not in kept
    with pytest.raises(tessera.ConfigError, match="os.cac.threshold"):
        tessera.simulate_gpu("mosaic_gpu_mosaic", [app], overrides=["os.cac={ trigger = \"deallocation\", threshold = 600 }"])
    with pytest.raises(tessera.ConfigError, match="no buffer \"input\""):
        tessera.simulate_gpu("mosaic_gpu_mosaic", [{"kernel": "scan", "params": {"free": "input@1"}}])


def test_mosaic_over_64k_pages_coalesces_the_same_regions_with_fewer_walks():
    app = {"kernel": "srad", "params": {"n": "768"}}
    over = ["gpu.sms=4", "gpu.paging=\"resident\""]
    small = tessera.simulate_gpu("mosaic_gpu_mosaic", [app], overrides=over, seed=1).counters
    big = tessera.simulate_gpu("mosaic_gpu_mosaic_64k", [app], overrides=over, seed=1).counters
    assert big["os.coalescer.coalesced"] == small["os.coalescer.coalesced"] > 0
    assert big["os.pages_64k"] > 0 and big["os.pages_4k"] == 0
    assert big["gpu.walker.walks"] < small["gpu.walker.walks"]
    assert big["gpu.apps.0.warp_instructions"] == small["gpu.apps.0.warp_instructions"]
    with pytest.raises(tessera.ConfigError, match="physmem.page_size.base"):
        tessera.simulate_gpu("mosaic_gpu_mosaic", [app], overrides=['physmem.page_size={ kind = "in_place", base = "64k" }'])
