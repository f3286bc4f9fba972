//! The GPU machine with unified memory (`gpu.paging = "uvm"`): batches,
//! replays and eviction through the whole machine.

use std::collections::BTreeMap;

use super::*;

/// The `uvm_gpu` preset with `overrides`.
fn spec(overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    crate::config::load(&crate::config::ConfigSource::Preset("uvm_gpu".into()), &o).unwrap()
}

fn builtin(name: &str, params: &[(&str, &str)]) -> GpuApp {
    let p: BTreeMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    GpuApp::builtin(name, &p, 1).unwrap()
}

fn counter(m: &GpuMachine, key: &str) -> u64 {
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
