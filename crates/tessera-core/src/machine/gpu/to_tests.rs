//! Thread oversubscription through the whole machine: blocks switched out
//! on faults, switched in, and the degree controller.

use std::collections::BTreeMap;

use super::thread_oversubscription::ToSpec;
use super::uvm_tests::{builtin, counter, spec};
use super::*;

fn bfs() -> GpuApp {
    builtin("bfs", &[("scale", "13")])
}

#[test]
fn switches_on_faults_run_every_block_once() {
    // Scale 16: warps exit and lend their slots to other blocks while their
    // own block is switched out (a switch must touch only its own warps).
    let bfs = || builtin("bfs", &[("scale", "16")]);
    let base = run_apps(&spec(&[]), vec![bfs()], 1).unwrap();
    let to = run_apps(&spec(&["gpu.thread_oversubscription={ adaptive = false }"]), vec![bfs()], 1).unwrap();
    assert_eq!(counter(&to, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
    assert_eq!(counter(&to, "gpu.apps.0.thread_instructions"), counter(&base, "gpu.apps.0.thread_instructions"));
    let switches = counter(&to, "gpu.to.switches");
    assert!(switches > 0, "BFS's blocks wait on faults");
    assert!(counter(&to, "gpu.to.inactive_dispatched") > 0);
    // One kernel shape per launch of BFS: every save costs the same, and a restore only follows a save.
    let spec = to.spec().gpu.as_ref().unwrap().thread_oversubscription.clone().unwrap();
    let save = counter(&to, "gpu.to.save_cycles");
    assert!(save >= switches * spec.context_latency);
    assert!(counter(&to, "gpu.to.restore_cycles") <= save);
    // Without oversubscription there is no TO group.
    assert!(!base.stats().counters.contains_key("gpu.to.switches"));
}

#[test]
fn no_extra_blocks_is_the_machine_without_oversubscription() {
    // Degree 0 and an epoch beyond the run: no block is ever inactive, and
    // every counter but TO's own equals the run without it.
    let off = run_apps(&spec(&[]), vec![bfs()], 1).unwrap();
    let zero = run_apps(&spec(&["gpu.thread_oversubscription={ extra_blocks = 0, epoch_cycles = 1000000000000 }"]), vec![bfs()], 1).unwrap();
    let mine: BTreeMap<_, _> = zero.stats().counters.into_iter().filter(|(k, _)| !k.starts_with("gpu.to.")).collect();
    assert_eq!(mine, off.stats().counters.into_iter().collect::<BTreeMap<_, _>>());
    assert_eq!(counter(&zero, "gpu.to.switches"), 0);
    assert_eq!(counter(&zero, "gpu.to.inactive_dispatched"), 0);
}

#[test]
fn resident_memory_never_switches() {
    // Scale 15: 128 blocks of 256 threads, twice what the 16 SMs run at once.
    let bfs = || builtin("bfs", &[("scale", "15")]);
    let s = spec(&["gpu.paging=\"resident\"", "gpu.thread_oversubscription={}"]);
    let m = run_apps(&s, vec![bfs()], 1).unwrap();
    assert_eq!(counter(&m, "gpu.to.switches"), 0);
    assert!(counter(&m, "gpu.to.inactive_dispatched") > 0, "extra blocks wait, and run when a block ends");
    let base = run_apps(&spec(&["gpu.paging=\"resident\""]), vec![bfs()], 1).unwrap();
    assert_eq!(counter(&m, "gpu.apps.0.warp_instructions"), counter(&base, "gpu.apps.0.warp_instructions"));
}

#[test]
fn a_grid_the_gpu_runs_at_once_leaves_nothing_inactive() {
    // Scale 13: 32 blocks, and the 16 SMs run 64 at once. Every block runs
    // at launch, on the SMs the baseline gives it: the inactive slots never
    // take a block another SM could run, so TO changes nothing.
    let base = run_apps(&spec(&[]), vec![bfs()], 1).unwrap();
    let to = run_apps(&spec(&["gpu.thread_oversubscription={ extra_blocks = 4, adaptive = false }"]), vec![bfs()], 1).unwrap();
    assert_eq!(counter(&to, "gpu.to.inactive_dispatched"), 0);
    let mine: BTreeMap<_, _> = to.stats().counters.into_iter().filter(|(k, _)| !k.starts_with("gpu.to.")).collect();
    assert_eq!(mine, base.stats().counters.into_iter().collect::<BTreeMap<_, _>>());
}

#[test]
fn one_switch_costs_the_outgoing_context() {
    // One SM that runs one block at a time, two blocks of one warp: block 0
    // faults, block 1 (never run: nothing to restore) takes its place.
    let s = spec(&[
        "gpu.sms=1",
        "gpu.max_blocks_per_sm=1",
        "gpu.thread_oversubscription={ adaptive = false, context_latency = 100, context_bytes_per_cycle = 16, block_state_bytes = 0 }",
    ]);
    let app = builtin("vector_add", &[("n", "64"), ("block", "32")]);
    let m = run_apps(&s, vec![app], 1).unwrap();
    let regs = {
        let app = builtin("vector_add", &[("n", "64"), ("block", "32")]);
        let mut src = app.source;
        let k = src.next_kernel().unwrap().unwrap();
        k.regs_per_thread * k.threads_per_block()
    };
    let one = ToSpec { context_latency: 100, context_bytes_per_cycle: 16, block_state_bytes: 0, ..ToSpec::default() }.context_cycles(regs, 0);
    assert_eq!(one, 100 + (regs as u64 * 4).div_ceil(16));
    // Block 0 faults: out, and block 1 (never run: nothing to restore) in.
    // Block 1 faults on the same unit and stays (block 0 still waits). The
    // unit arrives, block 0's load completes first: block 1 out, block 0 in
    // (restored). When block 0 ends, block 1 takes its room (restored).
    assert_eq!(counter(&m, "gpu.to.switches"), 2);
    assert_eq!(counter(&m, "gpu.to.save_cycles"), 2 * one);
    assert_eq!(counter(&m, "gpu.to.restore_cycles"), 2 * one);
    assert_eq!(counter(&m, "gpu.to.inactive_dispatched"), 1);
}

#[test]
fn adaptive_degree_grows_without_evictions() {
    let s = spec(&["gpu.thread_oversubscription={ max_extra_blocks = 3, epoch_cycles = 20000 }"]);
    let m = run_apps(&s, vec![bfs()], 1).unwrap();
    assert!(counter(&m, "gpu.to.epochs") > 2);
    assert_eq!(counter(&m, "gpu.to.degree_downs"), 0, "no page is evicted with all of memory");
    assert_eq!(counter(&m, "gpu.to.peak_degree"), 3);
}

#[test]
fn bad_oversubscription_is_a_config_error() {
    let o = ["gpu.thread_oversubscription={ max_extra_blocks = 0, extra_blocks = 0 }".to_string()];
    let e = crate::config::load(&crate::config::ConfigSource::Preset("uvm_gpu".into()), &o)
        .and_then(|s| GpuMachine::build(&s, vec![bfs()], 1).map(|_| ()))
        .unwrap_err()
        .to_string();
    assert!(e.contains("gpu.thread_oversubscription.max_extra_blocks") && e.contains("spare thread-block slot"), "{e}");
    let o = ["gpu.thread_oversubscription={ degree = 2 }".to_string()];
    let e = crate::config::load(&crate::config::ConfigSource::Preset("uvm_gpu".into()), &o).unwrap_err().to_string();
    assert!(e.contains("degree"), "{e}");
}
