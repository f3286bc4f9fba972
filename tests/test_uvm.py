"""Unified memory on the GPU (`gpu.paging = "uvm"`): the Python API, the CLI and config errors."""

import pytest

import tessera
from tessera.cli import main

BFS = [{"kernel": "bfs", "params": {"scale": 13}}]


def run(*overrides, seed=1):
    return tessera.simulate_gpu("uvm_gpu", BFS, overrides=list(overrides), seed=seed)


def test_batches_gather_faults_and_every_unit_crosses_once():
    r = run()
    c = r.counters
    assert c["gpu.paging.batches"] > 0
    assert c["gpu.paging.batch_faults"] == c["gpu.paging.faults"]
    assert c["gpu.paging.bytes_to_gpu"] == c["gpu.apps.0.mapped_bytes"]
    assert c["gpu.paging.handling_cycles"] == 20_000 * c["gpu.paging.batches"]
    assert c["gpu.paging.evictions"] == 0
    # Same config, input and seed: identical counters.
    assert run().counters == c


def test_oversubscription_evicts_and_unobtrusive_eviction_goes_ahead():
    base = run("gpu.paging.memory=0.5")
    ue = run("gpu.paging.memory=0.5", "gpu.paging.unobtrusive=true")
    for r in (base, ue):
        assert r.counters["gpu.paging.evictions"] == r.counters["os.evictions"] > 0
        assert r.counters["gpu.paging.bytes_to_host"] == 65536 * r.counters["gpu.paging.evictions"]
    assert base.counters["gpu.paging.preemptive_evictions"] == 0
    assert ue.counters["gpu.paging.preemptive_evictions"] > 0
    # With the data fitting, unobtrusive eviction changes nothing.
    assert run("gpu.paging.unobtrusive=true").counters == run().counters


def test_etc_and_pcie_compression_run_through_simulate_gpu():
    base = run("gpu.paging.memory=0.5")
    etc = run("gpu.paging.memory=0.5",
              "gpu.paging.etc={ throttling = true, compression = true, detect_cycles = 20000, mt_threshold = 1 }")
    c = etc.counters
    assert c["gpu.paging.etc.cc_capacity_permille"] == 800  # 0.5 of the footprint, compressed 1.6:1
    assert c["gpu.paging.evictions"] < base.counters["gpu.paging.evictions"]
    assert c["gpu.paging.etc.mt_throttled_sm_cycles"] >= 0
    assert c["gpu.apps.0.warp_instructions"] == base.counters["gpu.apps.0.warp_instructions"]
    assert "gpu.paging.etc.mt_triggers" not in base.counters
    pc = run("gpu.paging.memory=0.5", "gpu.paging.pcie_compression=2.0").counters
    assert pc["gpu.paging.pcie.link_bytes_to_gpu"] * 2 == pc["gpu.paging.bytes_to_gpu"]
    # Every part off: today's run.
    off = run("gpu.paging.memory=0.5", "gpu.paging.etc={ throttling = false }", "gpu.paging.pcie_compression=1.0")
    assert off.counters == base.counters


@pytest.mark.parametrize(
    "override, key",
    [
        ("gpu.paging.etc={ bogus = 1 }", "gpu.paging.etc"),
        ("gpu.paging.etc={ mt_signal = \"faults\" }", "gpu.paging.etc.mt_signal"),
        ("gpu.paging.pcie_compression=0.5", "gpu.paging.pcie_compression"),
        ("gpu.paging.fault_buffer=0", "gpu.paging.fault_buffer"),
        ("gpu.paging.memory=1.5", "gpu.paging.memory"),
        ("gpu.paging.unit=\"1g\"", "gpu.paging.unit"),
        ("gpu.paging.unit=\"2m\"", "gpu.paging.prefetch"),
        ("gpu.paging.prefetch=\"psychic\"", "gpu.paging.prefetch"),
        ("gpu.thread_oversubscription={ max_extra_blocks = 0, extra_blocks = 0 }", "gpu.thread_oversubscription.max_extra_blocks"),
        ("gpu.thread_oversubscription={ lifetime_drop = 2 }", "gpu.thread_oversubscription.lifetime_drop"),
        ("gpu.thread_oversubscription={ blocks = 2 }", "blocks"),
        ("gpu.paging.replay=\"eventually\"", "gpu.paging.replay"),
        ("gpu.paging.service_us=-1", "gpu.paging.service_us"),
    ],
)
def test_bad_settings_name_their_key(override, key):
    with pytest.raises(tessera.ConfigError) as e:
        run(override)
    assert key in str(e.value)


def test_the_cli_prints_the_unified_memory_table(capsys):
    rc = main(["run", "--preset", "uvm_gpu", "--workload", "bfs", "--param", "scale=12", "--set", "gpu.paging.memory=0.5"])
    assert rc == 0
    out = capsys.readouterr().out
    assert "Unified memory" in out and "premature evictions" in out


def test_thread_oversubscription_switches_blocks_and_runs_the_same_instructions():
    # Scale 15: 128 blocks per launch, twice what the 16 SMs run at once (a
    # smaller grid runs whole at launch and leaves nothing inactive).
    big = [{"kernel": "bfs", "params": {"scale": "15"}}]

    def run15(*o):
        return tessera.simulate_gpu("uvm_gpu", big, overrides=list(o), seed=1)

    base = run15("gpu.paging.memory=0.75")
    to = run15("gpu.paging.memory=0.75", "gpu.thread_oversubscription={}")
    c = to.counters
    assert c["gpu.to.switches"] > 0 and c["gpu.to.inactive_dispatched"] > 0
    assert c["gpu.apps.0.warp_instructions"] == base.counters["gpu.apps.0.warp_instructions"]
    assert "gpu.to.switches" not in base.counters
    assert run15("gpu.paging.memory=0.75", "gpu.thread_oversubscription={}").counters == c
    # The small grid: every block runs at launch, so TO changes nothing.
    small = run("gpu.paging.memory=0.75", "gpu.thread_oversubscription={}").counters
    assert small["gpu.to.inactive_dispatched"] == 0
    assert {k: v for k, v in small.items() if not k.startswith("gpu.to.")} == run("gpu.paging.memory=0.75").counters


def test_the_cli_prints_thread_oversubscription(capsys):
    args = ["run", "--preset", "uvm_gpu", "--workload", "bfs", "--param", "scale=12", "--set", "gpu.thread_oversubscription={}"]
    assert main(args) == 0
    assert "blocks switched out on faults" in capsys.readouterr().out


def test_nvidia_batching_flushes_and_counts_services(capsys):
    nvidia = ["gpu.paging.batch_limit=4", "gpu.paging.batches_per_service=20", "gpu.paging.replay=\"batch_flush\""]
    c = run(*nvidia).counters
    assert c["gpu.paging.flushed"] > 0
    assert c["gpu.paging.batches"] >= c["gpu.paging.services"] >= c["gpu.paging.batches"] / 20
    assert c["gpu.apps.0.warp_instructions"] == run().counters["gpu.apps.0.warp_instructions"]
    args = ["run", "--preset", "uvm_gpu", "--workload", "bfs", "--param", "scale=13", "--seed", "1"]
    args += [a for n in nvidia for a in ("--set", n)]
    assert main(args) == 0
    assert "faults flushed and raised again" in capsys.readouterr().out


def test_shootdown_costs_count_and_scope_all_stalls_the_other_application():
    free = run("gpu.paging.memory=0.5")
    zero = run("gpu.paging.memory=0.5", "gpu.paging.shootdown={ cycles = 0, per_sm_cycles = 0 }").counters
    own = [k for k in zero if k.startswith("gpu.paging.shootdown.") or k.endswith(".shootdown_stall_cycles")]
    assert zero["gpu.paging.shootdown.shootdowns"] == zero["os.evictions"] > 0
    # Free shootdowns only count: every other counter is the run without them.
    assert {k: v for k, v in zero.items() if k not in own} == free.counters
    two = BFS + [{"kernel": "vector_add", "params": {"n": 100_000}}]
    cost = ["gpu.sms=4", "gpu.paging.memory=0.5"]
    by = {scope: tessera.simulate_gpu("uvm_gpu", two, seed=1, overrides=cost + [
        f"gpu.paging.shootdown={{ cycles = 1000, per_sm_cycles = 100, scope = \"{scope}\" }}"]).counters
        for scope in ("app", "all")}
    n = by["all"]["gpu.paging.shootdown.shootdowns"]
    assert by["all"]["gpu.paging.shootdown.sms_reached"] == 4 * n
    assert by["all"]["gpu.paging.shootdown.cycles"] == 1400 * n
    # Broadcast stalls vector_add's SMs at every eviction, its own pages or not.
    assert by["all"]["gpu.apps.1.shootdown_stall_cycles"] > by["app"]["gpu.apps.1.shootdown_stall_cycles"]
    for c in by.values():
        assert c["gpu.apps.1.warp_instructions"] == by["all"]["gpu.apps.1.warp_instructions"]


@pytest.mark.parametrize(
    "override, key",
    [
        ("gpu.paging.shootdown={ scope = \"gpu\" }", "gpu.paging.shootdown.scope"),
        ("gpu.paging.shootdown={ bogus = 1 }", "gpu.paging.shootdown"),
        ("gpu.paging.shootdown={ cycles = -5 }", "gpu.paging.shootdown.cycles"),
    ],
)
def test_bad_shootdown_settings_name_their_key(override, key):
    with pytest.raises(tessera.ConfigError) as e:
        run("gpu.paging.memory=0.5", override)
    assert key in str(e.value)


def test_the_cli_prints_the_shootdowns(capsys):
    args = ["run", "--preset", "uvm_gpu", "--workload", "bfs", "--param", "scale=12", "--set", "gpu.paging.memory=0.5",
            "--set", "gpu.paging.shootdown={ cycles = 1000, per_sm_cycles = 100 }"]
    assert main(args) == 0
    assert "TLB shootdowns (SMs reached)" in capsys.readouterr().out
UNIT_2M = ["gpu.paging.unit=\"2m\"", "gpu.paging.prefetch=\"none\""]


def test_two_mib_units_cross_once_and_are_evicted_whole():
    c = run(*UNIT_2M).counters
    assert c["gpu.paging.batch_units"] == c["gpu.paging.faults"] > 0
    assert c["gpu.paging.bytes_to_gpu"] == c["gpu.apps.0.mapped_bytes"]
    assert c["gpu.paging.evictions"] == 0
    assert c["gpu.apps.0.warp_instructions"] == run().counters["gpu.apps.0.warp_instructions"]
    # Three whole 2 MiB units (a, b, c of 512 Ki floats) and room for one: each eviction moves a whole unit back.
    add = [{"kernel": "vector_add", "params": {"n": 524288}}]
    over = lambda: tessera.simulate_gpu("uvm_gpu", add, overrides=UNIT_2M + ["gpu.paging.memory=0.5"], seed=0).counters
    v = over()
    assert v["gpu.paging.evictions"] > 0
    assert v["gpu.paging.bytes_to_host"] == v["gpu.paging.evictions"] * (2 << 20)
    assert v["os.evictions"] == v["gpu.paging.evictions"] * 32, "every 64 KiB page of each unit"
    assert v["gpu.paging.d2h_busy_cycles"] == v["gpu.paging.evictions"] * 133_153
    assert over() == v


def test_unified_memory_runs_under_mosaic_and_coalesces():
    bfs = [{"kernel": "bfs", "params": {"scale": 16}}]
    sim = lambda preset, memory: tessera.simulate_gpu(
        preset, bfs, overrides=["gpu.paging.kind=\"uvm\"", f"gpu.paging.memory={memory}", "os.swap={ latency_cycles = 0 }"], seed=0
    ).counters
    mosaic, gpu_mmu = sim("mosaic_gpu_mosaic", 1.0), sim("mosaic_gpu", 1.0)
    assert mosaic["gpu.paging.faults"] == mosaic["gpu.paging.batch_units"] == gpu_mmu["gpu.paging.faults"]
    assert mosaic["os.coalescer.coalesced"] > 0
    assert mosaic["gpu.apps.0.warp_instructions"] == gpu_mmu["gpu.apps.0.warp_instructions"]
    over = sim("mosaic_gpu_mosaic", 0.75)
    assert over["gpu.paging.evictions"] > 0 and over["os.coalescer.splintered"] > 0
