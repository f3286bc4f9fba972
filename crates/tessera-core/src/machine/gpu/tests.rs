//! The GPU machine against analytic cases, references and its own runs.

use std::collections::BTreeMap;

use super::*;
use crate::workload::gpu::{Allocation, Kernel, ThreadBlock, WarpInst, WarpTrace};

/// The `mosaic_gpu` preset with `overrides`.
pub(crate) fn spec(overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    crate::config::load(&crate::config::ConfigSource::Preset("mosaic_gpu".into()), &o).unwrap()
}

/// An application of hand-made kernels over one allocation.
pub(crate) struct Handmade {
    pub(crate) allocs: Vec<Allocation>,
    pub(crate) kernels: std::vec::IntoIter<Kernel>,
}

impl KernelSource for Handmade {
    fn allocations(&self) -> &[Allocation] {
        &self.allocs
    }
    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        Ok(self.kernels.next())
    }
}

pub(super) const BASE: u64 = 0x7f00_0000_0000;

/// One kernel of one block whose warps run `warps` (instruction, lane addresses) lists.
pub(super) fn kernel(warps: Vec<Vec<(WarpInst, Vec<u64>)>>) -> Kernel {
    let n = warps.len() as u32;
    let warps = warps
        .into_iter()
        .map(|insts| {
            let mut t = WarpTrace::default();
            for (i, a) in insts {
                t.push(i, &a);
            }
            t.push(WarpInst::compute(0xff0, 1, Op::Exit), &[]);
            t
        })
        .collect();
    Kernel {
        name: "handmade".into(),
        id: 1,
        grid: [1, 1, 1],
        block: [32 * n, 1, 1],
        shmem_bytes: 0,
        regs_per_thread: 8,
        blocks: vec![ThreadBlock { index: [0, 0, 0], warps }],
    }
}

pub(super) fn load(addr: u64) -> (WarpInst, Vec<u64>) {
    (WarpInst { pc: 0, mask: 1, op: Op::Load, space: Space::Global, size: 4 }, vec![addr])
}

pub(super) fn app(bytes: u64, kernels: Vec<Kernel>) -> GpuApp {
    let allocs = vec![Allocation { name: "data".into(), base: BASE, bytes }];
    GpuApp { name: "handmade".into(), source: Box::new(Handmade { allocs, kernels: kernels.into_iter() }) }
}

fn builtin(name: &str, params: &[(&str, &str)]) -> GpuApp {
    let p: BTreeMap<String, String> = params.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    GpuApp::builtin(name, &p, 1).unwrap()
}

#[test]
fn one_warps_dependent_loads_each_take_the_load_to_use_latency() {
    // Resident data, ideal TLB: each load misses L1 and L2 (distinct lines)
    // and is served by DRAM: L1 (1) + L2 (10) + DRAM (100) + burst (128 B / 32 B = 4).
    let s = spec(&["gpu.sms=1", "gpu.ideal_tlb=true", "gpu.paging=\"resident\""]);
    let n = 20u64;
    let loads = (0..n).map(|i| load(BASE + i * 4096)).collect();
    let m = run_apps(&s, vec![app(n * 4096, vec![kernel(vec![loads])])], 1).unwrap();
    let per_load = 1 + 10 + 100 + 4;
    // The EXIT issues when the last load's data is back.
    assert_eq!(m.cycles(), n * per_load);
    let st = m.stats();
    assert_eq!(st.get("gpu.apps.0.warp_instructions"), n + 1);
    assert_eq!(st.get("gpu.walker.walks"), 0, "the ideal TLB walks nothing");
    assert_eq!(st.get("gpu.stall.memory"), n * per_load);
}

#[test]
fn with_one_warp_a_walk_takes_the_sum_of_its_references() {
    // One load to a resident page: L1 TLB (1), L2 TLB (10), four walk
    // references each missing the L2 (10 + 100 + 4), then the data (115).
    let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\""]);
    let m = run_apps(&s, vec![app(4096, vec![kernel(vec![vec![load(BASE)]])])], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("gpu.walker.walks"), 1);
    assert_eq!(st.get("gpu.walker.refs"), 4);
    assert_eq!(st.get("gpu.walker.walk_cycles"), 4 * 114);
    assert_eq!(m.cycles(), 1 + 10 + 4 * 114 + 115);
}

#[test]
fn without_an_l2_tlb_a_miss_walks_at_once_and_a_page_walk_cache_serves_the_second_walk() {
    // Power et al.'s design: no shared L2 TLB; a page-walk cache of 10 cycles.
    // Two pages 2 MiB apart: the second walk shares the first three levels' lines.
    let pwc = "gpu.walker.pwc={size=\"8KiB\",ways=16,line=\"128B\",latency=10}";
    let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\"", "gpu.l2_tlb.arrays={}", pwc]);
    let two = vec![load(BASE), load(BASE + (2 << 20))];
    let m = run_apps(&s, vec![app(4 << 20, vec![kernel(vec![two])])], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("gpu.l2_tlb.lookups"), 0, "no L2 TLB to look up");
    assert_eq!(st.get("gpu.walker.walks"), 2);
    // First walk: four PWC misses (10 + 114 each); second: three PWC hits (10) and a miss.
    let first = 4 * (10 + 114);
    let second = 3 * 10 + (10 + 114);
    assert_eq!(st.get("gpu.walker.walk_cycles"), first + second);
    assert_eq!(m.cycles(), 1 + first + 115 + 1 + second + 115);
}

#[test]
fn a_blocking_load_store_unit_holds_other_warps_memory_instructions_until_the_translation() {
    // Two warps load adjacent pages. Blocking: warp 0 misses at cycle 0 and
    // holds the unit through its walk (to 467, see above); warp 1 issues then,
    // walks through lines now in the L2 (4 x 10) and loads from DRAM (115).
    let two = || app(8192, vec![kernel(vec![vec![load(BASE)], vec![load(BASE + 4096)]])]);
    let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\"", "gpu.ldst=\"blocking\""]);
    let m = run_apps(&s, vec![two()], 1).unwrap();
    let st = m.stats();
    assert_eq!(m.cycles(), 467 + 1 + 10 + 4 * 10 + 115);
    assert_eq!(st.get("gpu.sm.ldst_held_cycles"), 467 + (1 + 10 + 4 * 10));
    assert_eq!(st.get("gpu.walker.walks"), 2);
    // Non-blocking: warp 1 issues at cycle 1 and its walk trails warp 0's.
    let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\"", "gpu.ldst=\"nonblocking\""]);
    let m = run_apps(&s, vec![two()], 1).unwrap();
    assert!(m.cycles() < 600, "{}", m.cycles());
    assert_eq!(m.stats().get("gpu.sm.ldst_held_cycles"), 0);
}

#[test]
fn with_the_ideal_tlb_a_blocking_load_store_unit_changes_nothing() {
    for k in ["bfs", "gups", "histogram"] {
        let run = |ldst: &str| {
            let l = format!("gpu.ldst=\"{ldst}\"");
            let s = spec(&["gpu.sms=4", "gpu.paging=\"resident\"", "gpu.ideal_tlb=true", &l]);
            run_apps(&s, vec![builtin(k, &[])], 1).unwrap().stats().to_json()
        };
        assert_eq!(run("blocking"), run("nonblocking"), "{k}");
    }
}

#[test]
fn a_walk_whose_page_is_shot_down_in_flight_is_not_filled_and_walks_again() {
    let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\""]);
    let mut m = GpuMachine::build(&s, vec![app(4096, vec![kernel(vec![vec![load(BASE)]])])], 1).unwrap();
    // The walk runs from cycle 11 to 467 (see the test above).
    assert!(!m.run_until(100).unwrap());
    m.shoot_down(BASE, PageSize::Size4K, 1);
    assert!(m.run_until(u64::MAX).unwrap());
    let st = m.stats();
    assert_eq!(st.get("gpu.walker.stale_fills"), 1);
    assert_eq!(st.get("gpu.walker.walks"), 2);
    // The second walk finds the table's lines in the L2 (10 cycles each).
    assert_eq!(m.cycles(), 1 + 10 + 4 * 114 + 4 * 10 + 115);
}

#[test]
fn a_far_fault_costs_its_latency_and_a_replayed_walk() {
    let s = spec(&["gpu.sms=1"]);
    let m = run_apps(&s, vec![app(4096, vec![kernel(vec![vec![load(BASE)]])])], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("gpu.paging.faults"), 1);
    assert_eq!(st.get("gpu.walker.walks"), 2, "the walk that faulted, and its replay");
    assert_eq!(st.get("gpu.walker.faults"), 1);
    let fault = (55.0f64 * 1020.0).round() as u64;
    assert!(m.cycles() > fault && m.cycles() < fault + 2000, "{}", m.cycles());
    assert!(st.get("gpu.stall.far_fault") >= fault);
}

#[test]
fn misses_to_one_page_walk_once_and_faults_to_one_page_coalesce() {
    // Eight warps load eight lines of one page at once.
    let warps = || (0..8).map(|i| vec![load(BASE + i * 128)]).collect();
    let s = spec(&["gpu.sms=1", "gpu.ldst=\"nonblocking\""]);
    let m = run_apps(&s, vec![app(4096, vec![kernel(warps())])], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("gpu.paging.faults"), 1);
    assert_eq!(st.get("gpu.walker.walks"), 2);
    assert_eq!(st.get("gpu.l1_tlb.mshr_merges"), 7);
    // A blocking load/store unit holds the other seven until the page is in
    // the L1 TLB, where they then hit.
    let s = spec(&["gpu.sms=1", "gpu.ldst=\"blocking\""]);
    let st = run_apps(&s, vec![app(4096, vec![kernel(warps())])], 1).unwrap().stats();
    assert_eq!((st.get("gpu.paging.faults"), st.get("gpu.walker.walks")), (1, 2));
    assert_eq!((st.get("gpu.l1_tlb.mshr_merges"), st.get("gpu.l1_tlb.hits")), (0, 7));
}

#[test]
fn builtin_kernels_run_to_their_end_deterministically() {
    let s = spec(&["gpu.sms=4"]);
    let run = || run_apps(&s, vec![builtin("vector_add", &[("n", "20000")])], 1).unwrap().stats();
    let (a, b) = (run(), run());
    assert_eq!(a.counters, b.counters);
    let mut src = crate::workload::gpu::kernels::build("vector_add", &[("n".to_string(), "20000".to_string())].into(), 1).unwrap();
    let mut want = 0;
    while let Some(k) = src.next_kernel().unwrap() {
        want += k.warp_insts();
    }
    assert_eq!(a.get("gpu.apps.0.warp_instructions"), want);
    // Three buffers of 80 000 bytes laid end to end (each rounded to 256
    // bytes): every 4 KiB page they span faults once.
    assert_eq!(a.get("gpu.paging.faults"), (3 * 80128u64).div_ceil(4096));
}

#[test]
fn the_ideal_tlb_removes_every_walk_and_is_no_slower() {
    let base = spec(&["gpu.sms=4", "gpu.paging=\"resident\""]);
    let ideal = spec(&["gpu.sms=4", "gpu.paging=\"resident\"", "gpu.ideal_tlb=true"]);
    let a = run_apps(&base, vec![builtin("gups", &[("table", "8MiB"), ("threads", "4096")])], 1).unwrap();
    let b = run_apps(&ideal, vec![builtin("gups", &[("table", "8MiB"), ("threads", "4096")])], 1).unwrap();
    assert!(a.stats().get("gpu.walker.walks") > 0);
    assert_eq!(b.stats().get("gpu.walker.walks"), 0);
    assert!(b.cycles() < a.cycles(), "ideal {} against {}", b.cycles(), a.cycles());
}

#[test]
fn applications_share_the_gpu_in_their_own_address_spaces() {
    let s = spec(&["gpu.sms=4"]);
    let m = run_apps(&s, vec![builtin("vector_add", &[("n", "5000")]), builtin("vector_add", &[("n", "5000")])], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("gpu.apps.0.sms"), 2);
    assert_eq!(st.get("gpu.apps.1.sms"), 2);
    assert_eq!(st.get("gpu.apps.0.warp_instructions"), st.get("gpu.apps.1.warp_instructions"));
    // Same virtual addresses, different address spaces: each faults its own pages.
    assert_eq!(st.get("gpu.paging.faults"), 2 * 3 * 5);
}

#[test]
fn large_pages_fault_less_and_bloat_memory() {
    let small = run_apps(&spec(&["gpu.sms=2"]), vec![builtin("vector_add", &[("n", "5000")])], 1).unwrap().stats();
    let large = run_apps(&spec(&["gpu.sms=2", "physmem.page_size=\"thp\""]), vec![builtin("vector_add", &[("n", "5000")])], 1).unwrap().stats();
    assert!(large.get("gpu.paging.faults") < small.get("gpu.paging.faults"));
    assert_eq!(large.get("gpu.apps.0.touched_bytes"), small.get("gpu.apps.0.touched_bytes"));
    assert!(large.get("gpu.apps.0.mapped_bytes") >= 2 << 20);
    assert!(large.derived["gpu.bloat.ratio"] > small.derived["gpu.bloat.ratio"]);
}

#[test]
fn bad_gpu_configs_and_applications_are_clear_errors() {
    let s = spec(&["gpu.sms=2"]);
    let three = vec![builtin("vector_add", &[("n", "64")]), builtin("vector_add", &[("n", "64")]), builtin("vector_add", &[("n", "64")])];
    let e = run_apps(&s, three, 1).err().unwrap().to_string();
    assert!(e.contains("3 applications on 2 SMs"), "{e}");
    let big = spec(&["gpu.max_threads_per_sm=128"]);
    let e = run_apps(&big, vec![builtin("vector_add", &[("n", "64")])], 1).err().unwrap().to_string();
    assert!(e.contains("gpu.max_threads_per_sm") && e.contains("256 threads"), "{e}");
    let o = vec!["mmu.tlb.x = { level = 1, side = \"data\", page_sizes = [\"4k\"], entries = 4, ways = 4 }".to_string()];
    let e = crate::config::load(&crate::config::ConfigSource::Preset("mosaic_gpu".into()), &o).unwrap_err().to_string();
    assert!(e.contains("mmu.tlb") && e.contains("CPU-only"), "{e}");
    let o = vec!["gpu.sms=4".to_string()];
    let e = crate::config::load(&crate::config::ConfigSource::Preset("sandy_bridge".into()), &o).unwrap_err().to_string();
    assert!(e.contains("`gpu`"), "{e}");
    let e = crate::config::load(&crate::config::ConfigSource::Preset("mosaic_gpu".into()), &["gpu.scheduler=\"fifo\"".to_string()]).unwrap_err().to_string();
    assert!(e.contains("gpu.scheduler") && e.contains("gto"), "{e}");
    let e = crate::config::load(&crate::config::ConfigSource::Preset("mosaic_gpu".into()), &["gpu.paging=\"batch\"".to_string()]).unwrap_err().to_string();
    assert!(e.contains("gpu.paging") && e.contains("demand"), "{e}");
}

#[test]
fn both_presets_resolve_and_run() {
    for preset in ["mosaic_gpu", "uvm_gpu"] {
        let s = crate::config::load(&crate::config::ConfigSource::Preset(preset.into()), &["gpu.sms=2".to_string()]).unwrap();
        let m = run_apps(&s, vec![builtin("bfs", &[("scale", "8")])], 1).unwrap();
        assert!(m.stats().get("gpu.apps.0.warp_instructions") > 0, "{preset}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]

    /// MSHRs and the walker against a queueing reference: every page that
    /// misses walks exactly once, at most `concurrent` walks are in flight,
    /// and walks begin in the order their pages missed.
    #[test]
    fn every_missed_page_walks_once_at_most_n_at_a_time_in_order(
        concurrent in 1u32..6,
        warps in proptest::collection::vec(proptest::collection::vec((0u64..40, 0u64..32), 1..12), 1..24),
    ) {
        let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\"", &format!("gpu.walker.concurrent={concurrent}")]);
        let lists = warps.iter().map(|w| w.iter().map(|&(p, l)| load(BASE + p * 4096 + l * 128)).collect()).collect();
        let mut m = GpuMachine::build(&s, vec![app(40 * 4096, vec![kernel(lists)])], 1).unwrap();
        m.run().unwrap();
        let st = m.stats();
        let pages: std::collections::BTreeSet<u64> = warps.iter().flatten().map(|&(p, _)| p).collect();
        proptest::prop_assert_eq!(st.get("gpu.walker.walks"), pages.len() as u64);
        proptest::prop_assert!(st.get("gpu.walker.peak_walks") <= concurrent as u64);
        proptest::prop_assert_eq!(&m.log.0, &m.log.1);
        let walked: std::collections::BTreeSet<u64> = m.log.1.iter().map(|&(_, vpn)| vpn - (BASE >> 12)).collect();
        proptest::prop_assert_eq!(walked, pages);
    }
}

#[test]
fn round_robin_dispatch_spreads_a_small_grid_over_the_sms() {
    // Two one-warp blocks on two SMs that could each hold both: `fill` puts
    // both on SM 0, where they share its issue slot; `round_robin` gives
    // each SM one, so the kernel ends sooner and runs the same instructions.
    let run = |d: &str, sms: &str| {
        let d = format!("gpu.block_dispatch=\"{d}\"");
        let s = spec(&[sms, "gpu.paging=\"resident\"", "gpu.ideal_tlb=true", &d]);
        run_apps(&s, vec![builtin("vector_add", &[("n", "64"), ("block", "32")])], 1).unwrap()
    };
    let (fill, rr) = (run("fill", "gpu.sms=2"), run("round_robin", "gpu.sms=2"));
    assert!(rr.cycles() < fill.cycles(), "{} vs {}", rr.cycles(), fill.cycles());
    assert_eq!(rr.stats().get("gpu.apps.0.warp_instructions"), fill.stats().get("gpu.apps.0.warp_instructions"));
    // With one SM there is nothing to spread: the runs are identical.
    assert_eq!(run("fill", "gpu.sms=1").stats().to_json(), run("round_robin", "gpu.sms=1").stats().to_json());
    // An unknown policy names the key and the allowed values.
    let o = vec!["gpu.block_dispatch=\"random\"".to_string()];
    let e = crate::config::load(&crate::config::ConfigSource::Preset("mosaic_gpu".into()), &o).unwrap_err().to_string();
    assert!(e.contains("gpu.block_dispatch") && e.contains("round_robin"), "{e}");
}
