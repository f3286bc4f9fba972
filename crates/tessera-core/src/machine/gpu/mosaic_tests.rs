//! Mosaic's memory manager on the GPU machine: CoCoA and the in-place
//! coalescer against counts that follow from the allocations.

use super::tests::{spec, Handmade};
use super::*;
use crate::workload::gpu::{Allocation, ThreadBlock, WarpInst, WarpTrace};

const BASE: u64 = 0x7f00_0000_0000;
const MIB2: u64 = 2 << 20;

/// The `mosaic_gpu_mosaic` preset with `overrides`.
fn mosaic(overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    crate::config::load(&crate::config::ConfigSource::Preset("mosaic_gpu_mosaic".into()), &o).unwrap()
}

/// One kernel of `warps` warps; warp `w` loads one word of every `pages[w]` page.
fn touching(pages: Vec<Vec<u64>>) -> Kernel {
    let warps: Vec<WarpTrace> = pages
        .into_iter()
        .map(|ps| {
            let mut t = WarpTrace::default();
            for p in ps {
                t.push(WarpInst { pc: 0, mask: 1, op: Op::Load, space: Space::Global, size: 4 }, &[BASE + p * 4096]);
            }
            t.push(WarpInst::compute(0xff0, 1, Op::Exit), &[]);
            t
        })
        .collect();
    let n = warps.len() as u32;
    Kernel {
        name: "touch".into(),
        id: 1,
        grid: [1, 1, 1],
        block: [32 * n, 1, 1],
        shmem_bytes: 0,
        regs_per_thread: 8,
        blocks: vec![ThreadBlock { index: [0, 0, 0], warps }],
    }
}

/// An application with one allocation of `bytes` at BASE running `kernel` twice.
fn app(bytes: u64, kernel: Kernel) -> GpuApp {
    let allocs = vec![Allocation { name: "data".into(), base: BASE, bytes }];
    GpuApp { name: "touch".into(), source: Box::new(Handmade { allocs, kernels: vec![kernel.clone(), kernel].into_iter() }) }
}

/// Every page of `regions` 2 MiB regions plus `extra` pages, over 4 warps.
fn all_pages(regions: u64, extra: u64) -> Kernel {
    let n = regions * 512 + extra;
    touching((0..4).map(|w| (w..n).step_by(4).collect()).collect())
}

#[test]
fn every_full_en_masse_region_is_coalesced_and_translations_come_from_large_entries() {
    // Two applications, each 2 MiB regions plus 3 pages: the two full regions of each coalesce, the partial one does not.
    let s = mosaic(&["gpu.sms=2", "gpu.paging=\"resident\""]);
    let bytes = 2 * MIB2 + 3 * 4096;
    let m = run_apps(&s, vec![app(bytes, all_pages(2, 3)), app(bytes, all_pages(2, 3))], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("os.coalescer.coalesced"), 4);
    assert_eq!(st.get("os.coalescer.large_pages"), 4);
    assert_eq!(st.get("os.coalescer.not_contiguous"), 0);
    assert_eq!(st.get("pagetable.mappings_2m"), 4);
    assert_eq!(st.get("pagetable.mappings_4k"), 2 * 3);
    assert_eq!(st.get("physmem.allocator.cocoa.frames_reserved"), 4);
    // The partial regions share one frame per application.
    assert_eq!(st.get("physmem.allocator.cocoa.frames_shared"), 2);
    assert_eq!(st.get("physmem.allocator.cocoa.bloat_pages"), 2 * (512 - 3));
    // Each application walks its two large pages once per TLB level that misses, and its three base pages.
    assert_eq!(st.get("gpu.walker.walks"), 2 * (2 + 3));
    assert!(st.get("gpu.l1_tlb.2m.hits") > 0);
}

#[test]
fn with_demand_paging_a_region_coalesces_once_its_last_page_has_arrived() {
    // Region 0 touched whole, region 1 only in part.
    let s = mosaic(&["gpu.sms=1"]);
    let pages: Vec<u64> = (0..512).chain(512..600).collect();
    let k = touching(vec![pages]);
    let m = run_apps(&s, vec![app(2 * MIB2, k)], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("gpu.paging.faults"), 600);
    assert_eq!(st.get("os.coalescer.coalesced"), 1);
    assert_eq!(st.get("pagetable.mappings_2m"), 1);
    assert_eq!(st.get("pagetable.mappings_4k"), 88);
}

#[test]
fn gpu_mmu_with_its_global_free_list_coalesces_nothing() {
    // Two applications faulting in turn interleave their pages in every frame.
    let s = spec(&["gpu.sms=2", "pagetable.format={ kind = \"radix\", large_reads_next = true }", "physmem.page_size=\"in_place\""]);
    let m = run_apps(&s, vec![app(MIB2, all_pages(1, 0)), app(MIB2, all_pages(1, 0))], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("os.coalescer.coalesced"), 0);
    assert_eq!(st.get("pagetable.mappings_4k"), 2 * 512);
}

#[test]
fn gpu_mmu_runs_the_same_over_the_radix_format_that_can_coalesce() {
    // The Mosaic preset changes the format too: for 4 KiB pages it must change nothing.
    let apps = || vec![GpuApp::builtin("bfs", &Default::default(), 3).unwrap(), GpuApp::builtin("spmv_csr", &Default::default(), 3).unwrap()];
    let a = run_apps(&spec(&[]), apps(), 1).unwrap().stats();
    let b = run_apps(&spec(&["pagetable.format={ kind = \"radix\", large_reads_next = true }"]), apps(), 1).unwrap().stats();
    // (x86's table also counts 1 GiB leaves, which the radix table of 4 x 9 bits cannot map: 0 either way.)
    let gpu = |s: &Stats| {
        s.counters.iter().filter(|(k, _)| (k.starts_with("gpu.") || k.starts_with("walker.")) && *k != "walker.leaves_1g").map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>()
    };
    assert!(!gpu(&a).is_empty());
    assert_eq!(gpu(&a), gpu(&b));
}

#[test]
fn splintering_leaves_no_large_entry_in_any_tlb() {
    let s = mosaic(&["gpu.sms=2", "gpu.paging=\"resident\""]);
    let mut m = GpuMachine::build(&s, vec![app(2 * MIB2, all_pages(2, 0))], 1).unwrap();
    m.run().unwrap();
    let asid = 1;
    let held = |m: &mut GpuMachine, va: u64| {
        let mut n = m.l2_tlb.lookup(asid, va).is_some_and(|(_, s)| s == PageSize::Size2M) as u32;
        for t in &mut m.l1_tlbs {
            n += t.lookup(asid, va).is_some_and(|(_, s)| s == PageSize::Size2M) as u32;
        }
        n
    };
    assert!(held(&mut m, BASE) > 0, "the run left large entries to shoot down");
    let cycles = m.splinter(0, BASE + 4096 * 17);
    assert_eq!(cycles, 15 + 200);
    assert_eq!(held(&mut m, BASE), 0);
    assert!(held(&mut m, BASE + MIB2) > 0, "the other region stays coalesced");
    let st = m.stats();
    assert_eq!(st.get("os.coalescer.splintered"), 1);
    assert_eq!((st.get("pagetable.mappings_2m"), st.get("pagetable.mappings_4k")), (1, 512));
    // Nothing to splinter twice.
    assert_eq!(m.splinter(0, BASE), 0);
    // The base pages translate as before.
    assert_eq!(m.sys.peek(BASE + 4096 * 17, asid).map(|(_, s)| s), Some(PageSize::Size4K));
}

#[test]
fn mosaic_configurations_that_cannot_work_are_config_errors() {
    let gpu_err = |o: &[&str]| GpuMachine::build(&mosaic(o), vec![app(MIB2, all_pages(1, 0))], 1).err().expect("a config error").to_string();
    let e = gpu_err(&["gpu.l1_tlb.arrays={ \"4k\" = { entries = 128, ways = \"full\" } }", "gpu.l2_tlb.arrays={ \"4k\" = { entries = 512, ways = 16 } }"]);
    assert!(e.contains("gpu.l1_tlb.arrays") && e.contains("2m"), "{e}");
    let e = gpu_err(&["physmem.fragmentation=0.5", "physmem.fragmentation_occupancy=1.5"]);
    assert!(e.contains("physmem.fragmentation_occupancy") && e.contains("1.5"), "{e}");
    let e = GpuMachine::build(&spec(&["os.cac={ copy = \"bulk\" }"]), vec![app(MIB2, all_pages(1, 0))], 1).err().expect("a config error").to_string();
    assert!(e.contains("os.cac") && e.contains("cocoa"), "{e}");
    let e = gpu_err(&["pagetable.format=\"x86_radix\""]);
    assert!(e.contains("pagetable.format") && e.contains("large_reads_next"), "{e}");
    let cpu = |o: &[&str]| {
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        let s = crate::config::load(&crate::config::ConfigSource::Preset("tlb_only".into()), &o).unwrap();
        crate::machine::cpu::CpuMachine::build(&s, 1).err().expect("a config error").to_string()
    };
    let e = cpu(&["physmem.allocator=\"cocoa\"", "physmem.capacity=\"1GiB\""]);
    assert!(e.contains("physmem.allocator") && e.contains("GPU"), "{e}");
    let e = cpu(&["physmem.page_size=\"in_place\"", "pagetable.format={ kind = \"radix\", large_reads_next = true }"]);
    assert!(e.contains("physmem.page_size") && e.contains("GPU"), "{e}");
}

/// The stress test of §6.4: every frame pre-fragmented at half occupancy.
fn stressed(extra: &[&str]) -> Spec {
    let mut o = vec!["gpu.sms=2", "gpu.paging=\"resident\"", "physmem.capacity=\"64MiB\"", "physmem.fragmentation=1.0", "physmem.fragmentation_occupancy=0.5"];
    o.extend_from_slice(extra);
    mosaic(&o)
}

#[test]
fn without_compaction_a_fully_fragmented_memory_breaks_the_guarantee_and_coalesces_nothing() {
    let m = run_apps(&stressed(&[]), vec![app(2 * MIB2, all_pages(2, 0))], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("physmem.pinned_frames"), 32 * 256);
    assert_eq!(st.get("os.coalescer.coalesced"), 0);
    assert!(st.get("physmem.allocator.cocoa.guarantee_breaks") >= 4, "1024 pages in the free halves of 256-page frames");
    assert_eq!(st.get("physmem.allocator.cocoa.frames_reserved"), 0);
}

#[test]
fn compaction_frees_whole_frames_for_en_masse_regions_and_stalls_the_gpu_for_its_copies() {
    let run = |copy: &str| {
        let c = format!("os.cac={{ copy = \"{copy}\" }}");
        run_apps(&stressed(&[&c]), vec![app(2 * MIB2, all_pages(2, 0))], 1).unwrap().stats()
    };
    let ideal = run("ideal");
    // Two evacuations (256 foreign pages each) give the two regions whole frames, which coalesce.
    assert_eq!(ideal.get("os.cac.frames_freed"), 2);
    assert_eq!(ideal.get("os.cac.foreign_pages_moved"), 512);
    assert_eq!(ideal.get("os.cac.pages_moved"), 0);
    assert_eq!(ideal.get("os.coalescer.coalesced"), 2);
    assert_eq!(ideal.get("physmem.allocator.cocoa.guarantee_breaks"), 0);
    assert_eq!((ideal.get("os.cac.cycles"), ideal.get("gpu.compaction_stall_cycles")), (0, 0));
    // The copies happen before the first kernel: the same run, later by exactly their cycles.
    for (copy, per_page) in [("channel", 456), ("bulk", 82)] {
        let st = run(copy);
        assert_eq!(st.get("os.cac.cycles"), 512 * per_page, "{copy}");
        assert_eq!(st.get("gpu.compaction_stall_cycles"), 512 * per_page, "{copy}");
        assert_eq!(st.get("gpu.cycles"), ideal.get("gpu.cycles") + 512 * per_page, "{copy}");
        assert_eq!(st.get("gpu.walker.walks"), ideal.get("gpu.walker.walks"), "{copy}");
    }
}

/// An application with `allocs` (name, pages) laid out from BASE, running
/// `kernels` (each the pages it touches, over 4 warps) as launches 1, 2, …,
/// freeing as `schedule` says.
fn freeing_app(allocs: &[(&str, u64)], kernels: Vec<Vec<u64>>, schedule: &str) -> GpuApp {
    let mut base = BASE;
    let allocs: Vec<Allocation> = allocs
        .iter()
        .map(|&(name, pages)| {
            let a = Allocation { name: name.into(), base, bytes: pages * 4096 };
            base += pages * 4096;
            a
        })
        .collect();
    let kernels: Vec<Kernel> = kernels
        .into_iter()
        .enumerate()
        .map(|(i, pages)| {
            let mut k = touching((0..4).map(|w| pages.iter().copied().skip(w).step_by(4).collect()).collect());
            k.id = i as u32 + 1;
            k
        })
        .collect();
    let inner = Box::new(Handmade { allocs, kernels: kernels.into_iter() });
    GpuApp { name: "freeing".into(), source: crate::workload::gpu::freeing::Freeing::wrap(inner, schedule, "free").unwrap() }
}

#[test]
fn below_the_threshold_a_freed_region_splinters_and_its_pages_move_to_the_application_s_shared_frame() {
    // keep: 100 pages of region 0; scratch: the rest of region 0 and all of region 1; tail: 3 pages of region 2 (a shared frame).
    let allocs = [("keep", 100), ("scratch", 924), ("tail", 3)];
    let first: Vec<u64> = (0..1027).collect();
    let second: Vec<u64> = (0..100).chain(1024..1027).collect();
    let run = |cac: &str| {
        let s = mosaic(&["gpu.sms=1", "gpu.paging=\"resident\"", cac]);
        run_apps(&s, vec![freeing_app(&allocs, vec![first.clone(), second.clone()], "scratch@1")], 1).unwrap().stats()
    };
    let st = run("os.cac={ trigger = \"deallocation\", copy = \"ideal\" }");
    assert_eq!(st.get("gpu.apps.0.freed_bytes"), 924 * 4096);
    // Region 1 (nothing left) is released with no copy; region 0 (100 < 256 left) is compacted.
    assert_eq!(st.get("os.coalescer.splintered"), 2);
    assert_eq!(st.get("os.coalescer.pages_released"), 924);
    assert_eq!(st.get("os.cac.below_threshold"), 1);
    assert_eq!((st.get("os.cac.frames_freed"), st.get("os.cac.pages_moved")), (1, 100));
    assert_eq!((st.get("os.cac.emergency_listed"), st.get("os.coalescer.pages_held")), (0, 0));
    assert_eq!(st.get("physmem.allocator.cocoa.frames_reserved"), 0);
    assert_eq!(st.get("physmem.allocator.cocoa.frames_shared"), 1);
    assert_eq!(st.get("physmem.allocator.cocoa.bloat_pages"), 512 - 103);
    assert_eq!((st.get("pagetable.mappings_4k"), st.get("pagetable.mappings_2m")), (103, 0));
    // The copies cost their cycles, and stall the GPU for them.
    let channel = run("os.cac={ trigger = \"deallocation\", copy = \"channel\" }");
    assert_eq!(channel.get("os.cac.cycles"), 100 * 456 + 15 + 200);
    assert_eq!(channel.get("gpu.compaction_stall_cycles"), channel.get("os.cac.cycles"));
    // At or above the threshold the region stays coalesced, its freed pages held, on the emergency list.
    let listed = run("os.cac={ trigger = \"deallocation\", threshold = 100, copy = \"ideal\" }");
    assert_eq!((listed.get("os.cac.emergency_listed"), listed.get("os.cac.emergency_frames")), (1, 1));
    assert_eq!((listed.get("os.coalescer.pages_held"), listed.get("os.cac.pages_moved")), (412, 0));
    assert_eq!(listed.get("pagetable.mappings_2m"), 1);
    // On demand (the released code), deallocation compacts nothing; an empty region is still released.
    let demand = run("os.cac={ copy = \"ideal\" }");
    assert_eq!((demand.get("os.coalescer.splintered"), demand.get("os.coalescer.pages_held")), (1, 412));
    assert_eq!(demand.get("os.cac.emergency_listed"), 0);
}

#[test]
fn the_emergency_list_gives_a_held_frame_back_when_memory_runs_out() {
    // Three frames: page tables, region 0 (keep + scratch), region 1 (big); big's last 400 pages (region 2) have no frame.
    let allocs = [("keep", 100), ("scratch", 412), ("big", 912)];
    let first: Vec<u64> = (0..512).collect();
    let second: Vec<u64> = (0..100).chain(512..1424).collect();
    let run = |extra: &str| {
        let s = mosaic(&["gpu.sms=1", "physmem.capacity=\"6MiB\"", extra]);
        run_apps(&s, vec![freeing_app(&allocs, vec![first.clone(), second.clone()], "scratch@1")], 1)
    };
    let st = run("os.cac={ trigger = \"deallocation\", threshold = 64, copy = \"ideal\" }").unwrap().stats();
    assert_eq!((st.get("os.cac.emergency_listed"), st.get("os.cac.emergency_pulls")), (1, 1));
    assert_eq!(st.get("os.coalescer.pages_released"), 412);
    assert_eq!((st.get("os.cac.failures"), st.get("physmem.allocator.cocoa.guarantee_breaks")), (0, 0));
    // Region 2's first pages took region 1's reservation, converted while it still had room; once
    // it was full, the pulled frame (its 100 pages had nowhere to go) took the rest.
    assert_eq!(st.get("physmem.allocator.cocoa.conversions"), 1);
    assert_eq!(st.get("physmem.allocator.cocoa.frames_shared"), 2);
    assert_eq!(st.get("physmem.allocator.cocoa.app_pages"), 1012);
    assert_eq!(st.get("physmem.allocator.cocoa.bloat_pages"), 2 * 512 - 1012);
    // Without the list, the held pages are lost to the application: out of memory.
    let e = run("gpu.ideal_tlb=false").err().expect("out of memory").to_string();
    assert!(e.contains("memory"), "{e}");
}

#[test]
fn a_kernel_touching_a_freed_buffer_is_a_use_after_free_error() {
    let s = spec(&["gpu.sms=1", "gpu.paging=\"resident\""]);
    let pages: Vec<u64> = (0..8).collect();
    let e = run_apps(&s, vec![freeing_app(&[("data", 8)], vec![pages.clone(), pages], "data@1")], 1).err().expect("an error").to_string();
    assert!(e.contains("use after free") && e.contains("\"data\""), "{e}");
    // Freed after the last launch, it is fine, and every page is counted.
    let pages: Vec<u64> = (0..8).collect();
    let st = run_apps(&s, vec![freeing_app(&[("data", 8)], vec![pages], "data@end")], 1).unwrap().stats();
    assert_eq!(st.get("gpu.apps.0.freed_bytes"), 8 * 4096);
    assert_eq!(st.get("pagetable.mappings_4k"), 0);
}

#[test]
fn cac_thresholds_and_triggers_that_cannot_work_are_config_errors() {
    let gpu_err = |o: &[&str]| GpuMachine::build(&mosaic(o), vec![app(MIB2, all_pages(1, 0))], 1).err().expect("a config error").to_string();
    for t in ["0", "512"] {
        let e = gpu_err(&[&format!("os.cac={{ trigger = \"deallocation\", threshold = {t} }}")]);
        assert!(e.contains("os.cac.threshold") && e.contains("1 to 511"), "{e}");
    }
    let e = GpuMachine::build(&spec(&["physmem.allocator=\"cocoa\"", "os.cac={ trigger = \"deallocation\" }"]), vec![app(MIB2, all_pages(1, 0))], 1)
        .err()
        .expect("a config error")
        .to_string();
    assert!(e.contains("os.cac.trigger") && e.contains("in_place"), "{e}");
}

/// A preset with `overrides`.
fn preset(name: &str, overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    crate::config::load(&crate::config::ConfigSource::Preset(name.into()), &o).unwrap()
}

#[test]
fn with_64k_base_pages_32_of_them_coalesce_in_place_and_walks_read_the_64k_entry() {
    // Two full 2 MiB regions and three 64 KiB pages, every 4 KiB page touched.
    let s = preset("mosaic_gpu_mosaic_64k", &["gpu.sms=2", "gpu.paging=\"resident\""]);
    let bytes = 2 * MIB2 + 3 * 65536;
    let m = run_apps(&s, vec![app(bytes, all_pages(2, 48))], 1).unwrap();
    let st = m.stats();
    assert_eq!(st.get("os.pages_64k"), 2 * 32 + 3);
    assert_eq!(st.get("os.pages_4k"), 0);
    assert_eq!(st.get("os.coalescer.coalesced"), 2);
    assert_eq!((st.get("pagetable.mappings_2m"), st.get("pagetable.mappings_64k"), st.get("pagetable.mappings_4k")), (2, 3, 0));
    assert_eq!(st.get("physmem.allocator.cocoa.frames_reserved"), 2);
    assert_eq!(st.get("physmem.allocator.cocoa.bloat_pages"), 512 - 48);
    // Each large page and each 64 KiB page is walked once (the second run of the kernel hits).
    assert_eq!(st.get("gpu.walker.walks"), 2 + 3);
    assert!(st.get("gpu.l1_tlb.2m.hits") > 0 && st.get("gpu.l1_tlb.64k.hits") > 0);
    // A coalesced page's translation: its frame, at the page's offset.
    let (pfn, size) = m.sys.peek(BASE + MIB2 + 5 * 4096, 1).unwrap();
    assert_eq!(size, PageSize::Size2M);
    assert_eq!(m.sys.mapped_page(BASE + MIB2 + 5 * 4096, 1), Some(PageSize::Size64K));
    assert_eq!(pfn % 512, 0);
}

#[test]
fn with_64k_base_pages_and_demand_paging_a_region_coalesces_after_its_32nd_page_and_splinters_clean() {
    let s = preset("mosaic_gpu_mosaic_64k", &["gpu.sms=1"]);
    let m = &mut GpuMachine::build(&s, vec![app(MIB2, all_pages(1, 0))], 1).unwrap();
    m.run().unwrap();
    let st = m.stats();
    assert_eq!((st.get("gpu.paging.faults"), st.get("os.coalescer.coalesced")), (32, 1));
    assert_eq!(m.splinter(0, BASE + 4096 * 40), 15 + 200);
    let st = m.stats();
    assert_eq!((st.get("pagetable.mappings_2m"), st.get("pagetable.mappings_64k")), (0, 32));
    assert_eq!(m.sys.peek(BASE + 4096 * 40, 1).map(|(p, s)| (p % 16, s)), Some((0, PageSize::Size64K)));
    for t in m.l1_tlbs.iter_mut().chain(std::iter::once(&mut m.l2_tlb)) {
        assert!(!t.lookup(1, BASE).is_some_and(|(_, s)| s == PageSize::Size2M), "a large entry survived the splinter");
    }
}

#[test]
fn gpu_mmu_with_64k_pages_walks_each_64k_page_and_coalesces_nothing() {
    let s = preset("mosaic_gpu_64k", &["gpu.sms=2", "gpu.paging=\"resident\""]);
    let st = run_apps(&s, vec![app(2 * MIB2, all_pages(2, 0))], 1).unwrap().stats();
    assert_eq!((st.get("os.pages_64k"), st.get("pagetable.mappings_2m")), (64, 0));
    assert_eq!(st.get("gpu.walker.walks"), 64);
}

#[test]
fn freed_64k_pages_of_a_coalesced_region_are_held_then_released_whole() {
    let allocs = [("keep", 64), ("scratch", 448), ("tail", 16)];
    let first: Vec<u64> = (0..528).collect();
    let second: Vec<u64> = (0..64).chain(512..528).collect();
    let s = preset("mosaic_gpu_mosaic_64k", &["gpu.sms=1", "gpu.paging=\"resident\""]);
    let st = run_apps(&s, vec![freeing_app(&allocs, vec![first, second], "scratch@1")], 1).unwrap().stats();
    assert_eq!(st.get("gpu.apps.0.freed_bytes"), 448 * 4096);
    assert_eq!(st.get("os.coalescer.pages_held"), 28, "28 of the region's 32 pages of 64 KiB");
    assert_eq!((st.get("pagetable.mappings_2m"), st.get("pagetable.mappings_64k")), (1, 1));
}

#[test]
fn mosaic_with_64k_pages_that_cannot_work_is_a_config_error() {
    let err = |name: &str, o: &[&str]| {
        let o: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        let built = crate::config::load(&crate::config::ConfigSource::Preset(name.into()), &o)
            .and_then(|s| GpuMachine::build(&s, vec![app(MIB2, all_pages(1, 0))], 1).map(|_| ()));
        built.err().expect("a config error").to_string()
    };
    let e = err("mosaic_gpu_mosaic", &["physmem.page_size={ kind = \"in_place\", base = \"64k\" }"]);
    assert!(e.contains("physmem.page_size.base") && e.contains("[9, 9, 9, 5, 4]"), "{e}");
    let e = err("mosaic_gpu_mosaic", &["physmem.page_size={ kind = \"in_place\", base = \"2m\" }"]);
    assert!(e.contains("physmem.page_size.base") && e.contains("64k"), "{e}");
    let e = err("mosaic_gpu_mosaic_64k", &["os.cac={ copy = \"bulk\" }"]);
    assert!(e.contains("os.cac") && e.contains("64 KiB"), "{e}");
    let e = err("mosaic_gpu_mosaic_64k", &[
        "gpu.l1_tlb.arrays={ \"4k\" = { entries = 128, ways = \"full\" }, \"2m\" = { entries = 16, ways = \"full\" } }",
        "gpu.l2_tlb.arrays={ \"4k\" = { entries = 512, ways = 16 }, \"2m\" = { entries = 256, ways = \"full\" } }",
    ]);
    assert!(e.contains("gpu.l1_tlb.arrays") && e.contains("64k"), "{e}");
}

#[test]
fn the_64k_presets_differ_in_the_memory_manager_only() {
    let flat = |name: &str| {
        let v = serde_json::to_value(preset(name, &[])).unwrap();
        let mut out = std::collections::BTreeMap::new();
        fn walk(p: String, v: &serde_json::Value, out: &mut std::collections::BTreeMap<String, String>) {
            match v {
                serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| walk(format!("{p}.{k}"), x, out)),
                x => {
                    out.insert(p, x.to_string());
                }
            }
        }
        walk(String::new(), &v, &mut out);
        out
    };
    let (a, b) = (flat("mosaic_gpu_64k"), flat("mosaic_gpu_mosaic_64k"));
    let keys: std::collections::BTreeSet<&String> = a.keys().chain(b.keys()).collect();
    let differ: Vec<&str> = keys.into_iter().filter(|k| a.get(*k) != b.get(*k)).map(|k| k.as_str()).collect();
    assert!(!differ.is_empty());
    for k in &differ {
        assert!(
            k.starts_with(".physmem.allocator") || k.starts_with(".physmem.page_size") || k.ends_with("large_reads_next") || k.starts_with(".name") || k.starts_with(".description"),
            "the presets also differ in {k}: {:?} / {:?}",
            a.get(*k),
            b.get(*k)
        );
    }
}

/// BFS at scale 16 (5 MiB of buffers, two whole 2 MiB regions) with unified
/// memory at `memory` of the footprint, on `preset`.
fn uvm_bfs(preset: &str, memory: f64) -> GpuMachine {
    let o = [format!("gpu.paging={{ kind = \"uvm\", memory = {memory} }}"), "os.swap={ latency_cycles = 0 }".to_string()];
    let s = crate::config::load(&crate::config::ConfigSource::Preset(preset.into()), &o).unwrap();
    let bfs = GpuApp::builtin("bfs", &[("scale".to_string(), "16".to_string())].into(), 1).unwrap();
    run_apps(&s, vec![bfs], 1).unwrap()
}

/// Every 64 KiB unit of application 0's buffers is resident whole or not at all.
fn units_whole(m: &GpuMachine) {
    let app = &m.apps[0];
    for al in app.source.allocations() {
        let mut unit = al.base & !0xffff;
        while unit < al.base + al.covered() {
            let pages: Vec<u64> = (0..16).map(|i| unit + i * 4096).filter(|&p| app.live_allocation(p, 4096)).collect();
            let mapped = pages.iter().filter(|&&p| m.sys.peek(p, app.asid).is_some()).count();
            assert!(mapped == 0 || mapped == pages.len(), "unit {unit:#x}: {mapped} of {} pages resident", pages.len());
            unit += 0x10000;
        }
    }
}

/// No TLB holds a 2 MiB translation of a region the page table no longer has coalesced.
fn no_stale_large_entries(m: &mut GpuMachine) {
    let regions: Vec<u64> = m.apps[0].source.allocations().iter().flat_map(|al| (al.base / MIB2..(al.base + al.covered()).div_ceil(MIB2)).map(|r| r * MIB2)).collect();
    for va in regions {
        let coalesced = m.sys.page_table().is_coalesced(m.sys.physmem(), 1, va, PageSize::Size2M);
        let mut large = m.l2_tlb.lookup(1, va).is_some_and(|(_, s)| s == PageSize::Size2M);
        for t in &mut m.l1_tlbs {
            large |= t.lookup(1, va).is_some_and(|(_, s)| s == PageSize::Size2M);
        }
        assert!(coalesced || !large, "region {va:#x}: a large entry outlived its splinter");
    }
}

#[test]
fn unified_memory_batches_under_mosaic_and_coalesces_regions_that_arrive_whole() {
    let (mosaic, gpu_mmu) = (uvm_bfs("mosaic_gpu_mosaic", 1.0), uvm_bfs("mosaic_gpu", 1.0));
    let c = |m: &GpuMachine, k: &str| m.stats().get(k);
    // The same units fault and cross the link once each, in batches.
    let faults = c(&mosaic, "gpu.paging.faults");
    assert_eq!(faults, c(&gpu_mmu, "gpu.paging.faults"));
    assert_eq!(c(&mosaic, "gpu.paging.batch_units"), faults);
    assert!(c(&mosaic, "gpu.paging.batches") < faults);
    assert_eq!(c(&mosaic, "gpu.paging.bytes_to_gpu"), c(&mosaic, "gpu.apps.0.mapped_bytes"));
    assert_eq!(c(&mosaic, "gpu.paging.bytes_to_gpu"), c(&gpu_mmu, "gpu.paging.bytes_to_gpu"));
    // CoCoA placed the two en-masse regions in their own frames; their last units' arrival coalesced them.
    assert_eq!(c(&mosaic, "os.coalescer.coalesced"), 2);
    assert_eq!(c(&mosaic, "physmem.allocator.cocoa.guarantee_breaks"), 0);
    assert!(c(&mosaic, "gpu.l2_tlb.2m.hits") > 0, "translations came from large entries");
    assert_eq!(c(&mosaic, "gpu.apps.0.warp_instructions"), c(&gpu_mmu, "gpu.apps.0.warp_instructions"));
    assert_eq!(c(&mosaic, "gpu.apps.0.thread_instructions"), c(&gpu_mmu, "gpu.apps.0.thread_instructions"));
}

#[test]
fn unified_memory_under_mosaic_splinters_before_it_evicts_and_evicts_whole_units() {
    let fits = uvm_bfs("mosaic_gpu_mosaic", 1.0);
    for memory in [0.75, 0.5] {
        let mut m = uvm_bfs("mosaic_gpu_mosaic", memory);
        let st = m.stats();
        assert!(st.get("gpu.paging.evictions") > 0, "memory {memory}");
        assert_eq!(st.get("gpu.apps.0.warp_instructions"), fits.stats().get("gpu.apps.0.warp_instructions"));
        assert_eq!(st.get("physmem.allocator.cocoa.guarantee_breaks"), 0);
        units_whole(&m);
        no_stale_large_entries(&mut m);
        if memory == 0.75 {
            // 60 of 80 units fit, so a region can be whole, coalesce, and lose a unit again.
            assert!(st.get("os.coalescer.coalesced") > 0 && st.get("os.coalescer.splintered") > 0, "{memory}");
        }
    }
}
