//! The cost of eviction's TLB shootdowns (`gpu.paging.shootdown`) through
//! the whole machine: free changes nothing, a hand-followed case, and the
//! scope on a GPU shared by two applications.

use std::collections::BTreeMap;

use super::uvm_tests::{builtin, counter, spec};
use super::*;
use crate::workload::gpu::{Allocation, Space, ThreadBlock, WarpInst, WarpTrace};

/// `uvm_gpu` at `memory` with `more` keys of `gpu.paging`, and `extra` overrides.
fn uvm_spec(memory: f64, more: &str, extra: &[&str]) -> Spec {
    let paging = format!("gpu.paging={{ kind = \"uvm\", memory = {memory}{more} }}");
    let mut o = vec![paging.as_str(), "os.swap={ latency_cycles = 0 }"];
    o.extend_from_slice(extra);
    spec(&o)
}

/// Counters without the shootdown model's own.
fn without_own(m: &GpuMachine) -> BTreeMap<String, u64> {
    let mut c = m.stats().counters;
    c.retain(|k, _| !k.starts_with("gpu.paging.shootdown.") && !k.ends_with(".shootdown_stall_cycles"));
    c
}

fn bfs() -> GpuApp {
    builtin("bfs", &[("scale", "13")])
}

#[test]
fn free_shootdowns_change_nothing_and_count_one_per_eviction() {
    for ue in [false, true] {
        let more = format!(", unobtrusive = {ue}");
        let base = run_apps(&uvm_spec(0.5, &more, &[]), vec![bfs()], 1).unwrap();
        for scope in ["app", "all"] {
            let sd = format!("{more}, shootdown = {{ cycles = 0, per_sm_cycles = 0, scope = \"{scope}\" }}");
            let m = run_apps(&uvm_spec(0.5, &sd, &[]), vec![bfs()], 1).unwrap();
            assert_eq!(without_own(&m), base.stats().counters, "unobtrusive {ue}, scope {scope}");
            // 64 KiB pages: each eviction unmaps one page, the OS's one shootdown.
            let n = counter(&m, "gpu.paging.shootdown.shootdowns");
            assert!(n > 0);
            assert_eq!(n, counter(&m, "os.evictions"));
            assert_eq!(counter(&m, "gpu.paging.shootdown.sms_reached"), 16 * n, "one application: its SMs are all of them");
            for k in ["cycles", "timeline_cycles", "stall_sm_cycles"] {
                assert_eq!(counter(&m, &format!("gpu.paging.shootdown.{k}")), 0, "{k}");
            }
        }
        assert!(!base.stats().counters.keys().any(|k| k.contains("shootdown_stall") || k.starts_with("gpu.paging.shootdown.")));
    }
}

/// One warp loading one word of each 64 KiB unit of `units`, in order.
struct Touch {
    allocs: Vec<Allocation>,
    units: Vec<u64>,
    done: bool,
}

const BASE: u64 = 0x7f00_0000_0000;

impl KernelSource for Touch {
    fn allocations(&self) -> &[Allocation] {
        &self.allocs
    }
    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        if std::mem::replace(&mut self.done, true) {
            return Ok(None);
        }
        let mut t = WarpTrace::default();
        for (i, &u) in self.units.iter().enumerate() {
            t.push(WarpInst { pc: 16 * i as u32, mask: 1, op: Op::Load, space: Space::Global, size: 4 }, &[BASE + u * 65536]);
        }
        t.push(WarpInst::compute(16 * self.units.len() as u32, 1, Op::Exit), &[]);
        let block = ThreadBlock { index: [0, 0, 0], warps: vec![t] };
        Ok(Some(Kernel { name: "touch".into(), id: 1, grid: [1, 1, 1], block: [32, 1, 1], shmem_bytes: 0, regs_per_thread: 8, blocks: vec![block] }))
    }
}

#[test]
fn one_warp_waits_for_each_eviction_s_shootdown_in_the_baseline_and_not_with_unobtrusive_eviction() {
    // One SM, one warp, four units of which two fit: each load faults alone
    // into its own batch while the warp waits; the 3rd, 4th and 5th evict.
    let run = |more: &str| {
        let s = uvm_spec(0.5, more, &["gpu.sms=1"]);
        let allocs = vec![Allocation { name: "data".into(), base: BASE, bytes: 4 * 65536 }];
        let touch = Touch { allocs, units: vec![0, 1, 2, 3, 0], done: false };
        run_apps(&s, vec![GpuApp { name: "touch".into(), source: Box::new(touch) }], 1).unwrap()
    };
    let cost = 1_000 + 300; // cycles + per_sm_cycles × the one SM
    let sd = ", shootdown = { cycles = 1000, per_sm_cycles = 300 }";
    let (base, m) = (run(""), run(sd));
    let ev = 3;
    assert_eq!(counter(&base, "gpu.paging.batches"), 5);
    assert_eq!(counter(&m, "gpu.paging.evictions"), ev);
    assert_eq!(counter(&m, "gpu.paging.shootdown.shootdowns"), ev);
    assert_eq!(counter(&m, "gpu.paging.shootdown.sms_reached"), ev);
    assert_eq!(counter(&m, "gpu.paging.shootdown.cycles"), ev * cost);
    // Evict, then migrate: each eviction's transfer, so its migration, waits the whole shootdown.
    assert_eq!(counter(&m, "gpu.paging.shootdown.timeline_cycles"), ev * cost);
    assert_eq!(m.cycles() - base.cycles(), ev * cost);
    // The SM stalls for each, while its warp waits for the migration anyway.
    assert_eq!(counter(&m, "gpu.paging.shootdown.stall_sm_cycles"), ev * cost);
    assert_eq!(counter(&m, "gpu.apps.0.shootdown_stall_cycles"), ev * cost);
    // Unobtrusive eviction: the eviction goes out at the batch's start, so
    // its shootdown and transfer (1,300 + 4,161 cycles) hide under the 20 µs of handling.
    let (base, m) = (run(", unobtrusive = true"), run(&format!(", unobtrusive = true{sd}")));
    assert_eq!(counter(&m, "gpu.paging.preemptive_evictions"), ev);
    assert_eq!(counter(&m, "gpu.paging.shootdown.timeline_cycles"), ev * cost);
    assert_eq!(m.cycles(), base.cycles());
}

/// An application of `kernels` kernels of one warp of `insts` ALU instructions: no memory.
struct Spin {
    kernels: u32,
    insts: u32,
}

impl KernelSource for Spin {
    fn allocations(&self) -> &[Allocation] {
        &[]
    }
    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        if self.kernels == 0 {
            return Ok(None);
        }
        self.kernels -= 1;
        let mut t = WarpTrace::default();
        for i in 0..self.insts {
            t.push(WarpInst::compute(16 * i, u32::MAX, Op::Alu), &[]);
        }
        t.push(WarpInst::compute(16 * self.insts, u32::MAX, Op::Exit), &[]);
        let block = ThreadBlock { index: [0, 0, 0], warps: vec![t] };
        Ok(Some(Kernel { name: "spin".into(), id: 1, grid: [1, 1, 1], block: [32, 1, 1], shmem_bytes: 0, regs_per_thread: 8, blocks: vec![block] }))
    }
}

#[test]
fn scope_all_stalls_the_other_application_s_sms_and_app_does_not() {
    // BFS evicts on SMs 0-1; the spinner, which has no memory, runs on SMs 2-3 throughout.
    let run = |sd: &str| {
        let s = uvm_spec(0.5, sd, &["gpu.sms=4"]);
        let spin = GpuApp { name: "spin".into(), source: Box::new(Spin { kernels: 2_000, insts: 1_000 }) };
        run_apps(&s, vec![bfs(), spin], 1).unwrap()
    };
    let free = run("");
    assert!(counter(&free, "gpu.apps.1.cycles") > counter(&free, "gpu.apps.0.cycles"), "the spinner outlasts BFS's evictions");
    let app = run(", shootdown = { cycles = 1000, per_sm_cycles = 100, scope = \"app\" }");
    let all = run(", shootdown = { cycles = 1000, per_sm_cycles = 100, scope = \"all\" }");
    for m in [&app, &all] {
        assert_eq!(counter(m, "gpu.apps.1.warp_instructions"), counter(&free, "gpu.apps.1.warp_instructions"));
        assert_eq!(counter(m, "gpu.apps.0.warp_instructions"), counter(&free, "gpu.apps.0.warp_instructions"));
        assert!(counter(m, "gpu.apps.0.shootdown_stall_cycles") > 0);
        assert_ne!(counter(m, "gpu.apps.0.cycles"), counter(&free, "gpu.apps.0.cycles"));
    }
    // "app" reaches BFS's 2 SMs only: the spinner never stalls and ends when it did.
    let n = counter(&app, "gpu.paging.shootdown.shootdowns");
    assert_eq!(counter(&app, "gpu.paging.shootdown.sms_reached"), 2 * n);
    assert_eq!(counter(&app, "gpu.paging.shootdown.cycles"), 1_200 * n);
    assert_eq!(counter(&app, "gpu.apps.1.shootdown_stall_cycles"), 0);
    assert_eq!(counter(&app, "gpu.apps.1.cycles"), counter(&free, "gpu.apps.1.cycles"));
    // "all" reaches the 4 SMs: the spinner's 2 stall, and it ends later.
    let n = counter(&all, "gpu.paging.shootdown.shootdowns");
    assert_eq!(counter(&all, "gpu.paging.shootdown.sms_reached"), 4 * n);
    assert_eq!(counter(&all, "gpu.paging.shootdown.cycles"), 1_400 * n);
    assert!(counter(&all, "gpu.apps.1.shootdown_stall_cycles") > 0);
    assert!(counter(&all, "gpu.apps.1.cycles") > counter(&free, "gpu.apps.1.cycles"));
    // Its one warp is ready at every cycle on one of its two SMs: it loses exactly that SM's stalls.
    assert_eq!(counter(&all, "gpu.apps.1.cycles") - counter(&free, "gpu.apps.1.cycles"), counter(&all, "gpu.apps.1.shootdown_stall_cycles") / 2);
    assert_eq!(
        counter(&all, "gpu.paging.shootdown.stall_sm_cycles"),
        counter(&all, "gpu.apps.0.shootdown_stall_cycles") + counter(&all, "gpu.apps.1.shootdown_stall_cycles")
    );
}

#[test]
fn bad_shootdown_keys_are_config_errors_naming_the_key() {
    for (paging, key) in [
        ("shootdown = { bogus = 1 }", "gpu.paging.shootdown"),
        ("shootdown = { scope = \"gpu\" }", "gpu.paging.shootdown.scope"),
        ("shootdown = { cycles = -1 }", "gpu.paging.shootdown.cycles"),
        ("shootdown = { per_sm_cycles = \"many\" }", "gpu.paging.shootdown.per_sm_cycles"),
        ("shootdown = 5", "gpu.paging.shootdown"),
    ] {
        let o = vec![format!("gpu.paging={{ kind = \"uvm\", {paging} }}")];
        let e = match crate::config::load(&crate::config::ConfigSource::Preset("uvm_gpu".into()), &o) {
            Err(e) => e.to_string(),
            Ok(s) => GpuMachine::build(&s, vec![builtin("bfs", &[("scale", "9")])], 1).err().expect("an error").to_string(),
        };
        assert!(e.contains(key), "{paging}: {e}");
        if key.ends_with("scope") {
            assert!(e.contains("app") && e.contains("all"), "the allowed scopes: {e}");
        }
    }
}
