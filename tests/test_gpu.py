"""GPU applications before the GPU machine: the built-in kernels, Accel-Sim
traces written and read, and the machine-free summary (`tessera gpu`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tessera
from tessera.cli import main

KERNELS = {
    "vector_add", "reduction", "scan", "histogram", "spmv_csr", "gups", "bfs", "pagerank", "matrix_multiply", "hotspot",
    "srad", "needleman_wunsch", "bfs_warp", "bfs_data", "sssp", "graph_coloring", "kcore", "bc",
    "bfs_atomic", "bfs_frontier", "bfs_data_warp", "gc_data", "sssp_warp",
}


def test_every_kernel_is_listed_with_its_parameters_and_footprint():
    listing = tessera.gpu_kernels()
    assert set(listing) == KERNELS
    for name, k in listing.items():
        assert k["summary"] and k["default_footprint"] > 0, name
        assert all(p["name"] and p["doc"] for p in k["params"]), name


@pytest.mark.parametrize("name,params", [
    ("vector_add", {"n": 1000}),
    ("reduction", {"n": 5000}),
    ("scan", {"n": 3000}),
    ("histogram", {"n": 4000, "bins": 64}),
    ("spmv_csr", {"scale": 8}),
    ("gups", {"table": "1MiB", "threads": 1024, "per_thread": 4}),
    ("bfs", {"scale": 8}),
    ("pagerank", {"scale": 8, "iterations": 2}),
    ("matrix_multiply", {"n": 32}),
    ("hotspot", {"n": 64, "steps": 2}),
    ("srad", {"n": 32, "iterations": 1}),
    ("needleman_wunsch", {"n": 48}),
    ("bfs_warp", {"scale": 8}),
    ("bfs_data", {"scale": 8}),
    ("sssp", {"scale": 8}),
    ("graph_coloring", {"scale": 7}),
    ("kcore", {"scale": 8, "k": 4}),
    ("bc", {"scale": 7, "sources": 1}),
    ("bfs_atomic", {"scale": 8}),
    ("bfs_frontier", {"scale": 8}),
    ("bfs_data_warp", {"scale": 8}),
    ("gc_data", {"scale": 7}),
    ("sssp_warp", {"scale": 8}),
])
def test_a_kernel_and_its_accel_sim_trace_count_the_same(tmp_path: Path, name: str, params: dict):
    written = tessera.write_gpu_trace(name, tmp_path / "t", params, seed=3, xz=name == "bfs")
    direct = tessera.gpu_info(name, params, seed=3, page_size="64KiB")
    traced = tessera.gpu_info(trace=tmp_path / "t", page_size="64KiB")
    # A trace's buffers are its copies: the same sizes, but not the kernel's names.
    assert [b for _, b in traced.pop("buffers")] == [b for _, b in direct.pop("buffers")]
    assert traced == direct
    assert written["kernels"] == len(direct["kernels"]) and written["warp_insts"] == direct["warp_insts"]
    assert direct["outside_allocations"] == 0, "built-in kernels stay inside their allocations"
    assert sum(direct["by_op"]) == direct["warp_insts"]
    assert direct["global_sectors"] >= direct["global_lines"] >= direct["global_insts"] > 0


def test_the_batch_aware_papers_graphbig_labels_run_their_kernels():
    # Labels resolve to kernels but are not listed: each variant is documented once.
    assert "bfs_ta" not in tessera.gpu_kernels()
    for label, kernel in [("bfs_ta", "bfs_atomic"), ("gc_dtc", "gc_data"), ("sssp_twc", "sssp_warp")]:
        assert tessera.gpu_info(label, {"scale": 7}, seed=2) == tessera.gpu_info(kernel, {"scale": 7}, seed=2)


def test_pages_touched_follow_the_page_size():
    small = tessera.gpu_info("gups", {"table": "4MiB"}, page_size="4KiB")
    large = tessera.gpu_info("gups", {"table": "4MiB"}, page_size="2MiB")
    assert small["global_sectors"] == large["global_sectors"]
    assert large["pages_touched"] < small["pages_touched"]
    assert large["touched_over_allocated"] >= small["touched_over_allocated"] > 0.9


def test_the_same_seed_gives_the_same_application_and_another_seed_another():
    a = tessera.gpu_info("bfs", {"scale": 9}, seed=1)
    assert tessera.gpu_info("bfs", {"scale": 9}, seed=1) == a
    assert tessera.gpu_info("bfs", {"scale": 9}, seed=2) != a


def test_bad_kernels_parameters_and_page_sizes_are_config_errors():
    with pytest.raises(tessera.ConfigError, match="vector_add"):
        tessera.gpu_info("vector_sub")
    with pytest.raises(tessera.ConfigError, match="block"):
        tessera.gpu_info("vector_add", {"block": 7})
    with pytest.raises(tessera.ConfigError, match="colour"):
        tessera.gpu_info("vector_add", {"colour": 1})
    with pytest.raises(tessera.ConfigError, match="64KiB"):
        tessera.gpu_info("vector_add", page_size="1GiB")
    with pytest.raises(ValueError, match="exactly one"):
        tessera.gpu_info()
    with pytest.raises(ValueError, match="exactly one"):
        tessera.gpu_info("bfs", trace="somewhere")


def test_a_malformed_trace_names_the_file_and_line(tmp_path: Path):
    tessera.write_gpu_trace("vector_add", tmp_path, {"n": 64})
    kernel = tmp_path / "kernel-1.traceg"
    lines = kernel.read_text().splitlines()
    i = next(k for k, line in enumerate(lines) if line.startswith("insts = ")) + 1
    lines[i] = "zz " + lines[i]
    kernel.write_text("\n".join(lines) + "\n")
    with pytest.raises(tessera.TraceError) as e:
        tessera.gpu_info(trace=tmp_path)
    assert "kernel-1.traceg" in str(e.value) and f"line {i + 1}" in str(e.value)
    assert main(["gpu", "info", "--trace", str(tmp_path)]) == 3


def test_a_missing_kernel_file_is_a_trace_error(tmp_path: Path):
    (tmp_path / "kernelslist.g").write_text("kernel-1.traceg\n")
    with pytest.raises(tessera.TraceError, match="kernel-1.traceg"):
        tessera.gpu_info(trace=tmp_path)


def test_cli_lists_writes_and_summarises(tmp_path: Path, capsys):
    assert main(["gpu", "kernels", "--json"]) == 0
    assert set(json.loads(capsys.readouterr().out)) == KERNELS
    assert main(["gpu", "kernels", "hotspot"]) == 0
    listed = capsys.readouterr().out
    assert "steps" in listed and "free=BUFFER@LAUNCH" in listed
    assert main(["gpu", "info", "scan", "--param", "n=4096"]) == 0
    assert "in 16 KiB, out 16 KiB" in capsys.readouterr().out.replace("\n", " ")
    assert main(["gpu", "trace", "reduction", "--param", "n=4096", "-o", str(tmp_path / "r")]) == 0
    assert "kernels" in capsys.readouterr().out
    assert (tmp_path / "r" / "kernelslist.g").exists()
    assert main(["gpu", "info", "--trace", str(tmp_path / "r"), "--json"]) == 0
    traced = json.loads(capsys.readouterr().out)
    assert main(["gpu", "info", "reduction", "--param", "n=4096"]) == 0
    assert f"{traced['warp_insts']:,}" in capsys.readouterr().out


def test_cli_usage_errors_exit_2(tmp_path: Path, capsys):
    assert main(["gpu", "info"]) == 2
    assert main(["gpu", "info", "bfs", "--trace", str(tmp_path)]) == 2
    assert main(["gpu", "info", "--trace", str(tmp_path), "--param", "scale=3"]) == 2
    assert main(["gpu", "kernels", "nope"]) == 2
    assert main(["gpu", "trace", "nope", "-o", str(tmp_path / "x")]) == 2
    assert not (tmp_path / "x").exists()
    capsys.readouterr()
