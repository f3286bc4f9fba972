//! The GPU machine with unified memory (`gpu.paging = "uvm"`): batches,
//! replays and eviction through the whole machine.

use std::collections::BTreeMap;

use super::*;

/// The `uvm_gpu` preset with `overrides`.
pub(super) fn spec(overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    crate::config::load(&crate::config::ConfigSource::Preset("uvm_gpu".into()), &o).unwrap()
}

pub(super) fn builtin(name: &str, params: &[(&str, &str)]) -> GpuApp {
    let p: BTreeMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    GpuApp::builtin(name, &p, 1).unwrap()
}

pub(super) fn counter(m: &GpuMachine, key: &str) -> u64 {
    *m.stats().counters.get(key).unwrap_or_else(|| panic!("no stat {key}"))
}

const UVM: &str = "gpu.paging={ kind = \"uvm\" }";

#[test]
fn every_unit_touched_is_migrated_once_without_oversubscription() {
    let m = run_apps(&spec(&[UVM]), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let faults = counter(&m, "gpu.paging.faults");
    assert!(faults > 0);
    assert_eq!(counter(&m, "gpu.paging.batch_faults"), faults);
    assert_eq!(counter(&m, "gpu.paging.batch_units"), faults, "no prefetcher");
    // Each touched 64 KiB unit crosses the link once.
    let touched = counter(&m, "gpu.apps.0.mapped_bytes");
    assert_eq!(counter(&m, "gpu.paging.bytes_to_gpu"), touched);
    assert_eq!(counter(&m, "gpu.paging.evictions"), 0);
    assert!(counter(&m, "gpu.paging.batches") < faults, "batches gather faults");
    assert_eq!(counter(&m, "gpu.paging.handling_cycles"), 20_000 * counter(&m, "gpu.paging.batches"));
}

#[test]
fn a_longer_handling_time_costs_exactly_its_difference_per_batch_when_one_warp_faults() {
    // One warp: each fault is its own batch, and nothing overlaps it.
    let run = |us: &str| {
        let s = spec(&[&format!("gpu.paging={{ kind = \"uvm\", handling_us = {us} }}"), "gpu.sms=1"]);
        run_apps(&s, vec![builtin("vector_add", &[("n", "32"), ("block", "32")])], 1).unwrap()
    };
    let (a, b) = (run("20"), run("50"));
    let batches = counter(&a, "gpu.paging.batches");
    assert_eq!(batches, counter(&b, "gpu.paging.batches"));
    assert_eq!(b.cycles() - a.cycles(), batches * 30_000);
}

#[test]
fn oversubscription_evicts_and_needs_a_swap_device() {
    // Mosaic's GPU has no swap device.
    let mosaic = super::tests::spec(&["gpu.paging={ kind = \"uvm\", memory = 0.5 }"]);
    let e = GpuMachine::build(&mosaic, vec![builtin("bfs", &[("scale", "13")])], 1)
        .err()
        .unwrap()
        .to_string();
    assert!(e.contains("gpu.paging.memory") && e.contains("os.swap"), "{e}");
    let s = spec(&["gpu.paging={ kind = \"uvm\", memory = 0.5 }", "os.swap={ latency_cycles = 0 }"]);
    let m = run_apps(&s, vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let full = run_apps(&spec(&[UVM]), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    assert!(counter(&m, "gpu.paging.evictions") > 0);
    assert_eq!(counter(&m, "gpu.paging.evictions"), counter(&m, "os.evictions"));
    assert_eq!(counter(&m, "gpu.paging.bytes_to_host"), counter(&m, "gpu.paging.evictions") * 65536);
    assert!(m.cycles() > full.cycles());
    // The same instructions ran.
    assert_eq!(counter(&m, "gpu.apps.0.warp_instructions"), counter(&full, "gpu.apps.0.warp_instructions"));
}

#[test]
fn unobtrusive_eviction_evicts_ahead_and_changes_nothing_without_oversubscription() {
    let over = ["os.swap={ latency_cycles = 0 }"];
    let run = |ue: bool, memory: f64| {
        let mut o: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        o.push(format!("gpu.paging={{ kind = \"uvm\", memory = {memory}, unobtrusive = {ue} }}"));
        let o: Vec<&str> = o.iter().map(|s| s.as_str()).collect();
        run_apps(&spec(&o), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap()
    };
    // With room for everything, unobtrusive eviction never acts: identical runs.
    assert_eq!(run(false, 1.0).stats().counters, run(true, 1.0).stats().counters);
    let (base, ue) = (run(false, 0.5), run(true, 0.5));
    assert_eq!(counter(&base, "gpu.paging.preemptive_evictions"), 0);
    assert!(counter(&ue, "gpu.paging.preemptive_evictions") > 0);
    for m in [&base, &ue] {
        // Every unit evicted crossed the link once each way it went.
        assert_eq!(counter(m, "gpu.paging.bytes_to_host"), counter(m, "gpu.paging.evictions") * 65536);
        assert_eq!(counter(m, "gpu.paging.d2h_busy_cycles"), counter(m, "gpu.paging.evictions") * 4161);
    }
}

#[test]
fn root_chunk_eviction_empties_whole_chunks_and_prefetchers_add_units() {
    let s = spec(&["gpu.paging={ kind = \"uvm\", memory = 0.5 }", "os.swap={ latency_cycles = 0 }", "os.eviction={ kind = \"root_chunk\" }"]);
    let m = run_apps(&s, vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let chunks = counter(&m, "os.eviction.root_chunk.chunks_emptied");
    assert!(chunks > 0);
    assert_eq!(counter(&m, "gpu.paging.evictions"), counter(&m, "os.evictions"));
    // With 4 KiB units, the tree prefetcher migrates units no fault asked for.
    let s = spec(&["gpu.paging={ kind = \"uvm\", unit = \"4k\", prefetch = \"tree_neighbourhood\" }", "physmem.page_size=\"base_only\""]);
    let m = run_apps(&s, vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let pre = counter(&m, "gpu.paging.prefetched_units");
    assert!(pre > 0);
    assert_eq!(counter(&m, "gpu.paging.batch_units"), counter(&m, "gpu.paging.batch_faults") + pre);
    // A unit faulted while its batch was still to prefetch it comes again in the next batch, found mapped: no bytes.
    assert_eq!(counter(&m, "gpu.paging.bytes_to_gpu"), counter(&m, "gpu.apps.0.mapped_bytes"));
    assert!(counter(&m, "gpu.paging.bytes_to_gpu") <= counter(&m, "gpu.paging.batch_units") * 4096);
}

#[test]
fn nvidia_batching_flushes_and_limits_services_and_runs_the_same_work() {
    let nvidia = "gpu.paging={ kind = \"uvm\", batch_limit = 4, batches_per_service = 20, replay = \"batch_flush\", service_us = 5 }";
    let m = run_apps(&spec(&[nvidia]), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let base = run_apps(&spec(&[UVM]), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    assert_eq!(counter(&m, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
    let (batches, services, flushed) = (counter(&m, "gpu.paging.batches"), counter(&m, "gpu.paging.services"), counter(&m, "gpu.paging.flushed"));
    assert!(flushed > 0, "batches of 4 leave faults buffered, which the flush drops");
    assert!(services >= batches.div_ceil(20) && services <= batches);
    // Every flushed fault came back: each unit still crosses the link once.
    assert_eq!(counter(&m, "gpu.paging.bytes_to_gpu"), counter(&m, "gpu.apps.0.mapped_bytes"));
    assert_eq!(counter(&m, "gpu.paging.faults"), counter(&m, "gpu.paging.batch_faults") + flushed);
    assert_eq!(counter(&m, "gpu.paging.handling_cycles"), 20_000 * batches + 5_000 * services);
}

/// The `uvm_gpu` preset at `memory`, with more of `gpu.paging` (TOML keys), on BFS at scale 13.
fn run_uvm(memory: f64, more: &str, extra: &[&str]) -> GpuMachine {
    let paging = format!("gpu.paging={{ kind = \"uvm\", memory = {memory}{more} }}");
    let mut o = vec![paging.as_str(), "os.swap={ latency_cycles = 0 }"];
    o.extend_from_slice(extra);
    run_apps(&spec(&o), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap()
}

/// Counters without ETC's and PCIe compression's own.
fn without_own(m: &GpuMachine) -> BTreeMap<String, u64> {
    let mut c = m.stats().counters;
    c.retain(|k, _| !k.starts_with("gpu.paging.etc.") && !k.starts_with("gpu.paging.pcie."));
    c
}

#[test]
fn every_etc_part_and_pcie_compression_off_give_todays_run_byte_for_byte() {
    let off = ", pcie_compression = 1.0, etc = { proactive = false, throttling = false, compression = false }";
    for memory in [1.0, 0.5] {
        let (a, b) = (run_uvm(memory, "", &[]), run_uvm(memory, off, &[]));
        assert_eq!(a.stats().counters, b.stats().counters, "memory {memory}");
    }
}

#[test]
fn pcie_compression_shortens_every_transfer_and_moves_the_same_data() {
    let base = run_uvm(0.5, "", &[]);
    let c = run_uvm(0.5, ", pcie_compression = 2.0, compression_cycles = 0", &[]);
    for m in [&base, &c] {
        assert_eq!(counter(m, "gpu.paging.bytes_to_gpu") % 65536, 0);
    }
    // 32 KiB on the link per unit at 15.75 GB/s: 2081 cycles, both ways.
    let units_in = counter(&c, "gpu.paging.bytes_to_gpu") / 65536;
    assert_eq!(counter(&c, "gpu.paging.h2d_busy_cycles"), units_in * 2081);
    assert_eq!(counter(&c, "gpu.paging.d2h_busy_cycles"), counter(&c, "gpu.paging.evictions") * 2081);
    assert_eq!(counter(&c, "gpu.paging.pcie.link_bytes_to_gpu"), counter(&c, "gpu.paging.bytes_to_gpu") / 2);
    assert_eq!(counter(&c, "gpu.paging.pcie.link_bytes_to_host"), counter(&c, "gpu.paging.bytes_to_host") / 2);
    assert!(c.cycles() < base.cycles());
    assert_eq!(counter(&c, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
    assert!(!base.stats().counters.contains_key("gpu.paging.pcie.link_bytes_to_gpu"), "no compression, no stats of it");
    // The codec's cycles are paid per unit.
    let k = run_uvm(0.5, ", pcie_compression = 2.0, compression_cycles = 100", &[]);
    let units = (counter(&k, "gpu.paging.bytes_to_gpu") + counter(&k, "gpu.paging.bytes_to_host")) / 65536;
    assert_eq!(counter(&k, "gpu.paging.pcie.codec_cycles"), units * 100);
}

#[test]
fn proactive_eviction_evicts_ahead_only_under_oversubscription() {
    let pe = ", etc = { proactive = true }";
    assert_eq!(without_own(&run_uvm(1.0, pe, &[])), without_own(&run_uvm(1.0, "", &[])), "with room it never acts");
    let (base, m) = (run_uvm(0.5, "", &[]), run_uvm(0.5, pe, &[]));
    assert!(counter(&m, "gpu.paging.etc.proactive_evictions") > 0);
    assert_eq!(counter(&m, "gpu.paging.evictions"), counter(&m, "os.evictions"));
    assert_eq!(counter(&m, "gpu.paging.bytes_to_host"), counter(&m, "os.evictions") * 65536);
    assert_eq!(counter(&m, "gpu.paging.d2h_busy_cycles"), counter(&m, "os.evictions") * 4161);
    assert_eq!(counter(&m, "gpu.paging.preemptive_evictions"), 0);
    assert_eq!(counter(&m, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
}

#[test]
fn throttling_stops_half_the_sms_while_evictions_run_high() {
    let mt = ", etc = { throttling = true, detect_cycles = 20000, execute_cycles = 50000, mt_threshold = 1 }";
    assert_eq!(without_own(&run_uvm(1.0, mt, &["gpu.sms=4"])), without_own(&run_uvm(1.0, "", &["gpu.sms=4"])), "no evictions, no throttling");
    // Step through a run: a stopped SM issues nothing, and only the upper half of the SMs stops.
    let s = spec(&[&format!("gpu.paging={{ kind = \"uvm\", memory = 0.5{mt} }}"), "os.swap={ latency_cycles = 0 }", "gpu.sms=4"]);
    let mut m = GpuMachine::build(&s, vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let (mut stopped_steps, mut free_steps) = (0, 0);
    let mut before: Vec<(bool, u64)> = vec![(false, 0); 4];
    let mut t = 0;
    while !m.run_until(t).unwrap() {
        let now: Vec<(bool, u64)> = (0..4).map(|i| (m.throttle.stopped[i], m.sms[i].issue_cycles)).collect();
        assert!(!now[0].0 && !now[1].0, "the lower half never stops");
        assert_eq!(now[2].0, now[3].0, "the upper half stops together");
        for i in 2..4 {
            // Epochs last 20,000 cycles or more: stopped at both ends of a 1,000-cycle step means stopped throughout.
            if before[i].0 && now[i].0 {
                assert_eq!(now[i].1, before[i].1, "SM {i} issued while stopped");
                stopped_steps += 1;
            } else if !now[i].0 {
                free_steps += 1;
            }
        }
        before = now;
        t += 1_000;
    }
    assert!(stopped_steps > 0 && free_steps > 0, "{stopped_steps} {free_steps}");
    assert!(counter(&m, "gpu.paging.etc.mt_triggers") > 0);
    assert!(counter(&m, "gpu.paging.etc.mt_throttled_epochs") >= counter(&m, "gpu.paging.etc.mt_triggers"));
    let sm_cycles = counter(&m, "gpu.paging.etc.mt_throttled_sm_cycles");
    assert!(sm_cycles > 0 && sm_cycles % 2 == 0 && sm_cycles <= 2 * m.cycles());
    let base = run_uvm(0.5, "", &["gpu.sms=4"]);
    assert_eq!(counter(&m, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
}

#[test]
fn capacity_compression_holds_more_and_pays_on_dram_reads() {
    // Ratio 2 at half the footprint holds it all: with no decompression cost, the run that fits.
    let cc = |cycles: u64| format!(", etc = {{ compression = true, cc_ratio = 2.0, cc_decompress_cycles = {cycles} }}");
    let (fits, m) = (run_uvm(1.0, "", &[]), run_uvm(0.5, &cc(0), &[]));
    assert_eq!(without_own(&m), without_own(&fits));
    assert_eq!(counter(&m, "gpu.paging.etc.cc_capacity_permille"), 1000);
    assert_eq!(counter(&m, "gpu.paging.etc.cc_peak_stored_bytes") * 2, counter(&m, "gpu.paging.etc.cc_peak_resident_bytes"));
    // Decompression makes every DRAM read of data slower: the same work, more cycles.
    let slow = run_uvm(0.5, &cc(50), &[]);
    assert_eq!(counter(&slow, "gpu.paging.evictions"), 0);
    assert_eq!(counter(&slow, "gpu.apps.0.warp_instructions"), counter(&fits, "gpu.apps.0.warp_instructions"));
    assert!(slow.cycles() > fits.cycles());
    // A smaller ratio still evicts, less than without it.
    let (base, some) = (run_uvm(0.5, "", &[]), run_uvm(0.5, ", etc = { compression = true, cc_ratio = 1.5 }", &[]));
    assert!(counter(&some, "gpu.paging.evictions") < counter(&base, "gpu.paging.evictions"));
    assert_eq!(counter(&some, "gpu.paging.etc.cc_capacity_permille"), 750);
}

#[test]
fn bad_etc_and_compression_keys_are_config_errors_naming_the_key() {
    for (paging, key) in [
        ("etc = { bogus = 1 }", "gpu.paging.etc"),
        ("etc = { mt_signal = \"faults\" }", "gpu.paging.etc.mt_signal"),
        ("etc = { throttling = \"yes\" }", "gpu.paging.etc.throttling"),
        ("pcie_compression = 0.5", "gpu.paging.pcie_compression"),
        ("etc = { cc_ratio = 0.5 }", "gpu.paging.etc.cc_ratio"),
    ] {
        let o = [format!("gpu.paging={{ kind = \"uvm\", {paging} }}")];
        let o: Vec<String> = o.to_vec();
        let e = match crate::config::load(&crate::config::ConfigSource::Preset("uvm_gpu".into()), &o) {
            Err(e) => e.to_string(),
            Ok(s) => GpuMachine::build(&s, vec![builtin("bfs", &[("scale", "9")])], 1).err().expect("an error").to_string(),
        };
        assert!(e.contains(key), "{paging}: {e}");
    }
}

const MIB2: u64 = 2 << 20;
/// 2 MiB at 15.75 GB/s and 1 GHz: 2,097,152 / 15.75 = 133,152.5 cycles, rounded.
const T2M: u64 = 133_153;
const UNIT_2M: &str = "unit = \"2m\", prefetch = \"none\"";

/// Two 2 MiB regions; one warp loads from the first, then the second, in each of two launches.
fn two_regions() -> GpuApp {
    use super::tests::{app, kernel, load, BASE};
    let k = || kernel(vec![vec![load(BASE + 4096), load(BASE + MIB2 + 5 * 65536)]]);
    app(2 * MIB2, vec![k(), k()])
}

#[test]
fn two_mib_units_migrate_as_one_transfer_and_are_evicted_whole() {
    let run = |memory: f64| {
        let s = spec(&[&format!("gpu.paging={{ kind = \"uvm\", memory = {memory}, {UNIT_2M} }}"), "gpu.sms=1"]);
        run_apps(&s, vec![two_regions()], 1).unwrap()
    };
    let m = run(1.0);
    // One fault per region, each its own batch (the warp waits for its first load): handling, then 2 MiB.
    assert_eq!((counter(&m, "gpu.paging.faults"), counter(&m, "gpu.paging.batches")), (2, 2));
    assert_eq!(counter(&m, "gpu.paging.bytes_to_gpu"), 2 * MIB2);
    assert_eq!(counter(&m, "gpu.paging.h2d_busy_cycles"), 2 * T2M);
    assert_eq!(counter(&m, "gpu.paging.batch_cycles"), 2 * (20_000 + T2M));
    assert_eq!(counter(&m, "gpu.paging.evictions"), 0);
    // Room for one region: each fault evicts the other region whole (one 2 MiB transfer back), then migrates.
    let m = run(0.5);
    assert_eq!((counter(&m, "gpu.paging.faults"), counter(&m, "gpu.paging.batches")), (4, 4));
    assert_eq!((counter(&m, "gpu.paging.evictions"), counter(&m, "gpu.paging.premature_evictions")), (3, 2));
    assert_eq!(counter(&m, "gpu.paging.bytes_to_host"), 3 * MIB2);
    assert_eq!(counter(&m, "gpu.paging.d2h_busy_cycles"), 3 * T2M);
    // The first batch only migrates; the other three evict then migrate, on one timeline.
    assert_eq!(counter(&m, "gpu.paging.batch_cycles"), 4 * 20_000 + 7 * T2M);
    assert_eq!(counter(&m, "os.evictions") * 65536, 3 * MIB2, "every 64 KiB page of each evicted unit went");
    let again = run(0.5);
    assert_eq!(again.stats().counters, m.stats().counters, "deterministic");
}

#[test]
fn two_mib_units_run_bfs_with_each_unit_crossing_once_and_a_footprint_below_one_unit() {
    let s = spec(&[&format!("gpu.paging={{ kind = \"uvm\", {UNIT_2M} }}")]);
    let m = run_apps(&s, vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    let apps = [builtin("bfs", &[("scale", "13")])];
    let units = footprint(&apps, MIB2) / MIB2;
    assert_eq!(counter(&m, "gpu.paging.faults"), units, "BFS touches every unit of its buffers");
    assert_eq!(counter(&m, "gpu.paging.batch_units"), units);
    assert_eq!(counter(&m, "gpu.paging.bytes_to_gpu"), counter(&m, "gpu.apps.0.mapped_bytes"));
    let base = run_apps(&spec(&[UVM]), vec![builtin("bfs", &[("scale", "13")])], 1).unwrap();
    assert_eq!(counter(&m, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
    // Less than one unit of data: the memory holds one unit whatever the share, and nothing is evicted.
    let s = spec(&[&format!("gpu.paging={{ kind = \"uvm\", memory = 0.1, {UNIT_2M} }}")]);
    let m = run_apps(&s, vec![builtin("vector_add", &[("n", "256")])], 1).unwrap();
    assert_eq!(counter(&m, "gpu.paging.evictions"), 0);
    assert!(counter(&m, "gpu.paging.faults") > 0);
}

#[test]
fn two_mib_units_take_no_prefetcher_and_other_sizes_are_config_errors() {
    for (o, key, allowed) in [
        // The preset's prefetcher (sequential_local) has nothing to add to a unit that is the whole block.
        (vec!["gpu.paging.unit=\"2m\""], "gpu.paging.prefetch", "none"),
        (vec!["gpu.paging.unit=\"1g\"", "gpu.paging.prefetch=\"none\""], "gpu.paging.unit", "2m"),
    ] {
        let e = GpuMachine::build(&spec(&o), vec![builtin("bfs", &[("scale", "9")])], 1).err().expect("an error").to_string();
        assert!(e.contains(key) && e.contains(allowed), "{o:?}: {e}");
    }
}
