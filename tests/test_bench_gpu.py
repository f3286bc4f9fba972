"""`tessera bench --gpu`: GPU presets timed in turns, each against the first
(the Mosaic issue's speed criterion: Mosaic at least 0.9x GPU-MMU)."""

from __future__ import annotations

from typing import Any

from tessera.cli_bench import bench_gpu


def test_presets_take_turns_and_run_the_same_instructions() -> None:
    rows = bench_gpu(kernels=("vector_add",), rounds=1, presets=("mosaic_gpu", "mosaic_gpu_mosaic"))
    assert [r["preset"] for r in rows] == ["mosaic_gpu", "mosaic_gpu_mosaic"]
    assert rows[0]["speed_vs_first"] == 1.0 and rows[1]["speed_vs_first"] > 0
    # The memory manager changes translation, not the kernel.
    assert rows[0]["warp_insts"] == rows[1]["warp_insts"] > 0


def test_cli_prints_the_ratio_column_and_refuses_a_cpu_preset(cli: Any) -> None:
    # One kernel would do; the CLI times the four of the benchmark, so only the error path runs here.
    r = cli("bench", "--gpu", "--rounds", "1", "--machines", "tlb_only")
    assert r.code != 0
    assert "GPU" in r.err or "gpu" in r.err, r.err
