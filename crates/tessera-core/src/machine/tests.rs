use super::*;
use crate::access::{AccessBatch, AccessKind};
use crate::config::{load, ConfigSource};
use crate::error::Error;
use crate::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};

fn spec(preset: &str, overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load(&ConfigSource::Preset(preset.into()), &o).unwrap()
}

fn run(spec: &Spec, pattern: Pattern, accesses: u64, footprint: u64) -> Stats {
    let mut src = Synthetic::new(SyntheticSpec::new(pattern, accesses, footprint, 11)).unwrap();
    crate::run::simulate(spec, 5, &mut src, &mut |_, _| true).unwrap()
}

fn one(kind: AccessKind, va: u64, size: u8) -> AccessBatch {
    let mut b = AccessBatch::with_capacity(1);
    b.push(1, va, kind, size, 0);
    b
}

#[test]
fn first_touch_maps_and_the_retried_walk_completes() {
    let mut m = Machine::build(&spec("tlb_only", &[]), 1).unwrap();
    m.feed(&one(AccessKind::Load, 0x7f00_0000_1234, 8)).unwrap();
    let s = m.stats();
    assert_eq!(s.get("os.faults"), 1);
    assert_eq!(s.get("os.pages_4k"), 1);
    assert_eq!(s.get("walker.faulting_walks"), 1);
    assert_eq!(s.get("walker.walks"), 1);
    m.feed(&one(AccessKind::Load, 0x7f00_0000_1238, 8)).unwrap();
    let s = m.stats();
    assert_eq!(s.get("walker.walks"), 1, "the second access hits the TLB");
    assert_eq!(s.get("mmu.l1_dtlb_4k.hits"), 1);
}

#[test]
fn page_crossing_access_translates_both_pages() {
    let mut m = Machine::build(&spec("tlb_only", &[]), 1).unwrap();
    m.feed(&one(AccessKind::Store, 0x7f00_0000_0ffc, 8)).unwrap();
    let s = m.stats();
    assert_eq!(s.get("core.page_crossings"), 1);
    assert_eq!(s.get("os.pages_4k"), 2);
    assert_eq!(s.get("walker.walks"), 2);
}

#[test]
fn store_to_clean_translation_sets_the_dirty_bit() {
    let mut m = Machine::build(&spec("tlb_only", &[]), 1).unwrap();
    let va = 0x7f00_0000_5000;
    m.feed(&one(AccessKind::Load, va, 8)).unwrap();
    m.feed(&one(AccessKind::Store, va, 8)).unwrap();
    let leaf = m.page_table().leaf_entry_addr(m.physmem(), 0, va).unwrap();
    assert_ne!(m.physmem().read_u64(leaf) & crate::pagetable::x86_radix::DIRTY, 0);
    assert_eq!(m.stats().get("walker.dirty_updates"), 1);
    m.feed(&one(AccessKind::Store, va, 8)).unwrap();
    assert_eq!(m.stats().get("walker.dirty_updates"), 1, "already dirty");
}

#[test]
fn thp_maps_large_pages_and_cuts_walks() {
    // 32 MiB = 16 large pages: fits Sandy Bridge's 32-entry 2 MiB L1 DTLB.
    let base = run(&spec("sandy_bridge", &[]), Pattern::Uniform, 200_000, 32 << 20);
    let thp = run(&spec("sandy_bridge", &["physmem.page_size=thp"]), Pattern::Uniform, 200_000, 32 << 20);
    assert_eq!(thp.get("os.pages_2m"), 16);
    assert_eq!(base.get("os.pages_2m"), 0);
    assert!(thp.get("walker.walks") * 100 < base.get("walker.walks"));
    assert!(thp.get("core.cycles") < base.get("core.cycles"));
}

#[test]
fn sandy_bridge_has_no_second_level_reach_for_2m_pages() {
    // 256 MiB = 128 large pages overflow the 32-entry 2 MiB L1 DTLB, and the L2 TLB
    // holds no 2 MiB entries (Table I), so most accesses still walk.
    let thp = run(&spec("sandy_bridge", &["physmem.page_size=thp"]), Pattern::Uniform, 100_000, 256 << 20);
    assert_eq!(thp.get("mmu.l2_tlb.hits"), 0);
    assert!(thp.get("walker.walks") > 50_000);
    assert_eq!(thp.get("walker.leaves_2m"), thp.get("walker.walks"));
}

#[test]
fn fragmentation_forces_fallback_to_4k() {
    let thp = run(&spec("tlb_only", &["physmem.page_size=thp", "physmem.fragmentation=1.0"]), Pattern::Uniform, 20_000, 64 << 20);
    assert_eq!(thp.get("os.pages_2m"), 0);
    assert!(thp.get("os.large_fallbacks") > 0);
    assert!(thp.get("os.pages_4k") > 1000);
}

#[test]
fn running_out_of_simulated_memory_is_an_error_not_a_panic() {
    let s = spec("tlb_only", &["physmem.capacity=\"4MiB\""]);
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Sequential, 100_000, 64 << 20, 1)).unwrap();
    let e = crate::run::simulate(&s, 1, &mut src, &mut |_, _| true).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
    assert!(e.to_string().contains("physmem.capacity"), "{e}");
}

#[test]
fn same_input_and_seed_give_identical_stats() {
    let s = spec("sandy_bridge", &["physmem.page_size=thp", "physmem.fragmentation=0.5", "mmu.tlb.l2_tlb.replacement=random"]);
    let a = run(&s, Pattern::HotCold, 100_000, 512 << 20);
    let b = run(&s, Pattern::HotCold, 100_000, 512 << 20);
    assert_eq!(a.to_json().to_string(), b.to_json().to_string());
}

#[test]
fn interval_model_adds_up() {
    let s = run(&spec("sandy_bridge", &[]), Pattern::Uniform, 50_000, 1 << 30);
    assert_eq!(
        s.get("core.cycles"),
        s.get("core.base_cycles") + s.get("core.data_stall_cycles") + s.get("core.translation_stall_cycles")
    );
    assert!(s.get("walker.cycles") <= s.get("core.translation_stall_cycles"));
    let share = s.derived["walker.walk_cycle_share"];
    assert!(share > 0.0 && share < 1.0);
    let pki = s.derived["walker.walks_pki"];
    assert!((pki - s.get("walker.walks") as f64 * 1000.0 / s.get("core.instructions") as f64).abs() < 1e-9);
}

#[test]
fn tlb_only_machine_counts_walks_but_no_cycles() {
    let s = run(&spec("tlb_only", &[]), Pattern::Uniform, 50_000, 1 << 30);
    assert!(s.get("walker.walks") > 40_000);
    assert_eq!(s.get("core.cycles"), 0);
    assert_eq!(s.get("walker.cycles"), 0);
    // An untimed machine has no cycle metrics at all (not even undefined ones).
    assert!(!s.derived.contains_key("walker.walk_cycle_share"));
}

#[test]
fn instruction_fetches_use_the_instruction_tlb() {
    let mut m = Machine::build(&spec("sandy_bridge", &[]), 1).unwrap();
    let mut b = AccessBatch::with_capacity(4);
    b.push(1, 0x40_1000, AccessKind::IFetch, 4, 0);
    b.push(1, 0x40_1004, AccessKind::IFetch, 4, 0);
    m.feed(&b).unwrap();
    let s = m.stats();
    assert_eq!(s.get("mmu.l1_itlb_4k.lookups"), 2);
    assert_eq!(s.get("mmu.l1_itlb_4k.hits"), 1);
    assert_eq!(s.get("walker.instr_walks"), 1);
    assert_eq!(s.get("mmu.l1_dtlb_4k.lookups"), 0);
}

#[test]
fn equation_one_compares_two_runs() {
    let k4 = run(&spec("sandy_bridge", &[]), Pattern::Uniform, 100_000, 256 << 20);
    let m2 = run(&spec("sandy_bridge", &["physmem.page_size=thp"]), Pattern::Uniform, 100_000, 256 << 20);
    let c = crate::stats::derived::compare(&k4, &m2).unwrap();
    assert_eq!(c.expected_other_cycles, (k4.get("core.cycles") - k4.get("walker.cycles") + m2.get("walker.cycles")) as f64);
    assert!(c.simulated_speedup > 0.0 && c.expected_speedup > 0.0);
}

#[test]
fn every_counter_is_documented() {
    let s = run(&spec("sandy_bridge", &[]), Pattern::Uniform, 1000, 1 << 20);
    for k in s.counters.keys() {
        let info = &s.info[k];
        assert!(!info.desc.is_empty() && !info.unit.is_empty(), "{k}");
    }
    let docs = crate::stats::derived::stat_docs(&spec("sandy_bridge", &[])).unwrap();
    assert_eq!(docs.counters.keys().collect::<Vec<_>>(), s.counters.keys().collect::<Vec<_>>());
}

/// Random records clustered on a few pages of two address spaces (so memo
/// runs form and break), of every kind and of sizes that sometimes cross a
/// page, in batches of random length.
fn clustered_batches(seed: u64, records: usize) -> Vec<AccessBatch> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut left = records;
    let mut page = 0u64;
    while left > 0 {
        let n = rng.gen_range(1..=left.min(300));
        let mut b = AccessBatch::with_capacity(n);
        for _ in 0..n {
            if rng.gen_bool(0.05) {
                page = rng.gen_range(0..6);
            }
            let kind = match rng.gen_range(0..10) {
                0..=5 => AccessKind::Load,
                6..=7 => AccessKind::Store,
                _ => AccessKind::IFetch,
            };
            let size = [1u8, 4, 8, 8, 8, 16, 64][rng.gen_range(0..7)];
            let off = if rng.gen_bool(0.03) { 0x1000 - 2 } else { rng.gen_range(0..0x1000 - 64) };
            let asid = (rng.gen_range(0..20) == 0) as u16;
            b.push(rng.gen_range(0..3), 0x7f00_0000_0000 + (page << 12) + off, kind, size, asid);
        }
        left -= n;
        out.push(b);
    }
    out
}

/// Random records in short visits of random pages of two address spaces:
/// mostly a load then a store of one page, as GUPS updates a table, so
/// most repeat runs are one record long; now and then a visit is longer,
/// crosses into the next page, or has a fetch in it.
fn paired_batches(seed: u64, records: usize) -> Vec<AccessBatch> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut b = AccessBatch::with_capacity(records);
    while b.len() < records {
        let page = rng.gen_range(0..3000u64);
        let asid = (rng.gen_range(0..20) == 0) as u16;
        for k in 0..rng.gen_range(1..=3) {
            let kind = match rng.gen_range(0..20) {
                0 => AccessKind::IFetch,
                1..=2 => AccessKind::Load,
                _ if k == 0 => AccessKind::Load,
                _ => AccessKind::Store,
            };
            let off = if rng.gen_bool(0.02) { 0x1000 - 4 } else { rng.gen_range(0..0x1000 - 8) };
            b.push(rng.gen_range(0..3), 0x7f00_0000_0000 + (page << 12) + off, kind, 8, asid);
        }
    }
    let mut out = Vec::new();
    let mut at = 0;
    while at < b.len() {
        let n = rng.gen_range(1..=400).min(b.len() - at);
        let mut part = AccessBatch::with_capacity(n);
        part.copy_range(&b, at..at + n);
        out.push(part);
        at += n;
    }
    out
}

/// An instruction TLB added to a machine that has none (a new structure is
/// given whole; see `config::apply_override`).
const FETCH_TLB: &str = "mmu.tlb.l1_itlb={ level = 1, side = \"instr\", page_sizes = [\"4k\"], entries = 16, ways = 4 }";

#[test]
fn bulk_counted_repeat_runs_match_the_per_access_path() {
    let fetch_tlb = [FETCH_TLB];
    let configs: [&[&str]; 3] = [&[], &["timing.enabled=true"], &fetch_tlb];
    for (k, overrides) in configs.iter().enumerate() {
        let sp = spec("tlb_only", overrides);
        // Long runs, then mostly runs of one record (see `paired_batches`).
        for batches in [clustered_batches(k as u64, 20_000), paired_batches(k as u64, 20_000)] {
            let mut bulk = Machine::build(&sp, 3).unwrap();
            let mut each = Machine::build(&sp, 3).unwrap().without_bulk_runs();
            assert!(bulk.cpu().is_some_and(|c| c.bulk_runs));
            for b in &batches {
                bulk.feed(b).unwrap();
                each.feed(b).unwrap();
            }
            let (a, b) = (bulk.stats(), each.stats());
            assert!(a.get("mmu.l1_dtlb_4k.hits") > 5_000, "runs formed");
            assert_eq!(a.counters, b.counters, "config {overrides:?}");
        }
    }
}

/// A coalescing TLB at level 1 turns the memo (and so bulk runs) off; at
/// level 2 it leaves them on. Either way bulk counting changes no counter.
#[test]
fn bulk_runs_with_coalescing_tlbs_match_the_per_access_path() {
    let configs: [&[&str]; 3] = [
        &["mmu.tlb.l1_dtlb_4k.organisation=\"coalescing\""],
        &["mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", group = 16, require_contiguity = false }"],
        &["mmu.tlb.l1_dtlb_4k.organisation=\"coalescing\"", "mmu.tlb.l2_tlb.organisation=\"coalescing\"", FETCH_TLB],
    ];
    for (k, overrides) in configs.iter().enumerate() {
        let sp = spec("tlb_only", overrides);
        let batches = clustered_batches(10 + k as u64, 20_000);
        let mut bulk = Machine::build(&sp, 3).unwrap();
        let mut each = Machine::build(&sp, 3).unwrap().without_bulk_runs();
        for b in &batches {
            bulk.feed(b).unwrap();
            each.feed(b).unwrap();
            if k != 1 {
                for va in b.vaddr.iter().take(64) {
                    assert_eq!(bulk.mmu().memo(false, *va, 0), None, "config {overrides:?}");
                }
            }
        }
        let (a, b) = (bulk.stats(), each.stats());
        assert!(a.get("mmu.l1_dtlb_4k.hits") > 10_000, "config {overrides:?}");
        assert_eq!(a.counters, b.counters, "config {overrides:?}");
    }
}

/// Random accesses of two address spaces over pages of a few dozen 2 MiB
/// regions (most touched pages new or out of the TLBs), of every kind.
fn scattered_batches(seed: u64, records: usize) -> Vec<AccessBatch> {
    use rand::{Rng, SeedableRng};
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut out = Vec::new();
    let mut left = records;
    while left > 0 {
        let n = rng.gen_range(1..=left.min(500));
        let mut b = AccessBatch::with_capacity(n);
        for _ in 0..n {
            let kind = [AccessKind::Load, AccessKind::Load, AccessKind::Store, AccessKind::IFetch][rng.gen_range(0..4)];
            let region = rng.gen_range(0..40u64);
            let page = rng.gen_range(0..96u64);
            let off = if rng.gen_bool(0.02) { 0x1000 - 4 } else { rng.gen_range(0..0x1000 - 8) };
            let asid = rng.gen_bool(0.3) as u16;
            b.push(1, 0x7f00_0000_0000 + (region << 21) + (page << 12) + off, kind, 8, asid);
        }
        left -= n;
        out.push(b);
    }
    out
}

#[test]
fn walk_shortcuts_match_full_walks() {
    let configs: [&[&str]; 4] = [
        &[],
        &["timing.enabled=true", "pagetable.levels=5"],
        &["physmem.page_size=\"thp\"", "physmem.fragmentation=0.997"],
        &[FETCH_TLB],
    ];
    for (k, overrides) in configs.iter().enumerate() {
        let sp = spec("tlb_only", overrides);
        let batches = scattered_batches(k as u64, 30_000);
        let mut short = Machine::build(&sp, 3).unwrap();
        let mut full = Machine::build(&sp, 3).unwrap().without_walk_shortcuts();
        for b in &batches {
            short.feed(b).unwrap();
            full.feed(b).unwrap();
        }
        assert!(short.shortcut_walks() > 1_000, "config {overrides:?}: {} shortcuts", short.shortcut_walks());
        assert_eq!(full.shortcut_walks(), 0);
        let stats = short.stats();
        if k == 2 {
            assert!(stats.get("os.pages_2m") > 0 && stats.get("os.pages_4k") > 0, "both page sizes mapped");
        }
        assert_eq!(stats.counters, full.stats().counters, "config {overrides:?}");
    }
}

/// The configurable radix format with x86's geometry walks exactly as the
/// x86 format does: every counter is equal.
#[test]
fn a_radix_format_with_x86_geometry_gives_x86_numbers() {
    for preset in ["tlb_only", "sandy_bridge"] {
        for policy in ["base_only", "thp"] {
            let policy = format!("physmem.page_size={policy}");
            let x86 = run(&spec(preset, &[&policy]), Pattern::HotCold, 60_000, 1 << 30);
            let radix = run(&spec(preset, &[&policy, "pagetable.format={ kind = \"radix\", bits = [9, 9, 9, 9] }"]), Pattern::HotCold, 60_000, 1 << 30);
            assert_eq!(x86.counters, radix.counters, "{preset} {policy}");
        }
    }
}

/// A GPU-style table with a 64 KiB level maps 64 KiB pages under THP, and
/// reports them per size.
#[test]
fn a_table_with_a_64k_level_maps_and_walks_64k_pages() {
    let sp = spec(
        "tlb_only",
        &[
            "pagetable.format={ kind = \"radix\", bits = [9, 9, 9, 5, 4] }",
            "physmem.page_size={ kind = \"thp\", max = \"64k\" }",
            "mmu.tlb.l1_dtlb_4k.page_sizes=[\"4k\", \"64k\"]",
            "mmu.tlb.l2_tlb.page_sizes=[\"4k\", \"64k\"]",
        ],
    );
    let s = run(&sp, Pattern::Sequential, 50_000, 64 << 20);
    assert!(s.get("os.pages_64k") > 0);
    assert_eq!(s.get("os.pages_4k"), 0, "an untouched 64 KiB region is always free here");
    assert_eq!(s.get("walker.leaves_64k"), s.get("walker.walks"));
    assert_eq!(s.get("pagetable.mappings_64k"), s.get("os.pages_64k"));
    assert!(s.counters.contains_key("pagetable.nodes_l5"));
    // Each 64 KiB page costs one walk: 16 pages per 64 KiB.
    assert!(s.get("walker.walks") * 16 <= s.get("core.records"));
}

/// A large page that keeps its node (GPU Mosaic's large bit): the walk
/// reads one more entry than a 2 MiB leaf would, and caches a 2 MiB page.
#[test]
fn a_large_bit_that_keeps_the_node_reads_one_more_entry() {
    let base = ["physmem.page_size={ kind = \"thp\", max = \"2m\" }"];
    let plain = spec("tlb_only", &[base[0], "pagetable.format={ kind = \"radix\" }"]);
    let keeps = spec("tlb_only", &[base[0], "pagetable.format={ kind = \"radix\", large_reads_next = true }"]);
    let a = run(&plain, Pattern::Uniform, 20_000, 64 << 20);
    let b = run(&keeps, Pattern::Uniform, 20_000, 64 << 20);
    assert_eq!(a.get("walker.walks"), b.get("walker.walks"));
    assert_eq!(a.get("walker.leaves_2m"), b.get("walker.leaves_2m"));
    assert!(a.get("walker.leaves_2m") > 0);
    let completed = b.get("walker.walks");
    // Completed walks read one more entry each; faulting walks stop where they did.
    assert_eq!(b.get("walker.refs_total"), a.get("walker.refs_total") + completed);
    assert_eq!(b.get("pagetable.nodes_l1"), b.get("pagetable.mappings_2m") + a.get("pagetable.nodes_l1"));
}

/// A footprint 1.5x memory runs with a swap device under every eviction
/// policy: pages are evicted and read back, each eviction shoots its
/// translation down, the reverse map and the page tables agree, and no
/// frame is lost.
#[test]
fn memory_pressure_swaps_pages_out_and_back_under_every_policy() {
    for policy in ["lru", "clock", "linux_like", "root_chunk", "{ kind = \"root_chunk\", order = \"access\", chunk = \"64KiB\" }"] {
        for preset in ["tlb_only", "sandy_bridge"] {
            let ev = format!("os.eviction={policy}");
            let sp = spec(preset, &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", &ev]);
            let mut m = Machine::build(&sp, 5).unwrap();
            let mut src = Synthetic::new(SyntheticSpec::new(Pattern::HotCold, 40_000, 12 << 20, 11)).unwrap();
            crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
            let s = m.stats();
            let tag = format!("{policy} on {preset}");
            assert!(s.get("os.evictions") > 0, "{tag}");
            assert!(s.get("os.major_faults") > 0, "{tag}");
            assert_eq!(s.get("os.faults"), s.get("os.minor_faults") + s.get("os.major_faults"), "{tag}");
            assert_eq!(s.get("os.shootdowns"), s.get("os.evictions"), "{tag}");
            assert!(s.get("swap.pages_out") <= s.get("os.evictions"), "{tag}");
            assert_eq!(s.get("swap.pages_in"), s.get("os.major_faults"), "{tag}");
            assert_eq!(s.get("core.records"), 40_000, "{tag}: no access lost");
            // Reverse map and page tables agree, and frames add up.
            let (pt, mem) = (m.page_table(), m.physmem());
            assert_eq!(mem.mapped_pages() as u64, pt.mappings(crate::addr::PageSize::Size4K), "{tag}");
            assert_eq!(
                mem.free_frames() + mem.table_frames() + mem.mapped_pages() as u64 + mem.pinned_frames(),
                mem.capacity_frames(),
                "{tag}"
            );
            // No stale translation: every TLB-cached page is mapped in the table to the same frame.
            for page in 0..(12u64 << 20) >> 12 {
                let va = page << 12;
                if let Some(t) = m.mmu().peek(va, 0) {
                    assert_eq!(pt.translate(mem, 0, va).map(|(p, _)| p.0), Some(t), "{tag}: stale TLB entry for {va:#x}");
                }
            }
        }
    }
}

#[test]
fn eviction_without_swap_and_bad_swap_are_config_errors() {
    let o = |s: &[&str]| load(&ConfigSource::Preset("tlb_only".into()), &s.iter().map(|x| x.to_string()).collect::<Vec<_>>());
    let e = o(&["os.eviction=clock"]).unwrap_err().to_string();
    assert!(e.contains("os.eviction") && e.contains("swap"), "{e}");
    let e = o(&["os.swap={ capacity = 1000 }"]).unwrap_err().to_string();
    assert!(e.contains("os.swap.capacity"), "{e}");
    let e = o(&["os.swap={ capacity = \"1GiB\" }", "os.eviction=fifo"]).unwrap_err().to_string();
    assert!(e.contains("os.eviction") && e.contains("clock"), "{e}");
}

#[test]
fn a_swap_device_smaller_than_the_overflow_is_a_clear_error() {
    let sp = spec("tlb_only", &["physmem.capacity=4MiB", "os.swap={ capacity = \"1MiB\" }"]);
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 60_000, 16 << 20, 1)).unwrap();
    let e = crate::run::simulate(&sp, 1, &mut src, &mut |_, _| true).unwrap_err();
    assert!(matches!(&e, Error::OutOfMemory { what, .. } if what == "swap device"), "{e}");
    assert!(e.to_string().contains("os.swap.capacity"), "{e}");
}

/// A coalescing L2 filled from the walked line's neighbours covers a
/// sequential stream with fewer walks than a plain one, and counts its
/// coalesced hits. First touches walk every page (each faults), merging
/// into the group's entry; the second pass over 3125 pages then hits in
/// groups of 8 that a 1536-entry L2 holds, where the plain L2 misses.
#[test]
fn a_coalescing_l2_fills_from_the_walked_line() {
    let plain = spec("tlb_only", &[]);
    let co = spec("tlb_only", &["mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", group = 8 }"]);
    let warm = |sp: &Spec| {
        // Touch every page once, then stream over them again.
        let mut m = Machine::build(sp, 5).unwrap();
        for round in 0..2 {
            let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Sequential, 200_000, 64 << 20, round)).unwrap();
            crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
        }
        m.stats()
    };
    let (a, b) = (warm(&plain), warm(&co));
    assert!(b.get("mmu.l2_tlb.coalesced_hits") > 0);
    let (pages, walks_a, walks_b) = (a.get("os.pages_4k"), a.get("walker.walks"), b.get("walker.walks"));
    assert_eq!(walks_a, 2 * pages, "the plain L2 misses on both passes");
    assert!(walks_b < pages + pages / 50, "coalescing: {walks_b} walks for {pages} pages");
}

/// A coalescing structure with groups of one page is the plain
/// set-associative structure: the same lookups, hits, fills and walks.
#[test]
fn coalescing_with_groups_of_one_page_is_the_plain_tlb() {
    let plain = spec("sandy_bridge", &[]);
    let one = spec("sandy_bridge", &["mmu.tlb.l2_tlb.organisation={ kind = \"coalescing\", group = 1 }"]);
    let a = run(&plain, Pattern::HotCold, 60_000, 1 << 30);
    let b = run(&one, Pattern::HotCold, 60_000, 1 << 30);
    for (k, v) in &a.counters {
        assert_eq!(b.counters.get(k), Some(v), "{k}");
    }
    assert_eq!(b.get("mmu.l2_tlb.coalesced_hits"), 0);
}

/// 16-byte entries: a node of 256 entries, each entry two words; walks read
/// one entry per level at the entry's own address and every access translates.
#[test]
fn sixteen_byte_entries_walk_and_translate() {
    let sp = spec("sandy_bridge", &["pagetable.format={ kind = \"radix\", bits = [8, 8, 8, 8, 8], va_bits = 52, entry_bytes = 16 }"]);
    let s = run(&sp, Pattern::Uniform, 30_000, 256 << 20);
    assert_eq!(s.get("walker.walks"), s.get("walker.leaves_4k"));
    assert!(s.get("walker.walks") > 1000);
    // Five levels: a completed walk without PSC hits reads five entries.
    assert!(s.get("walker.refs_total") <= 5 * (s.get("walker.walks") + s.get("walker.faulting_walks")));
    assert_eq!(s.get("pagetable.nodes_l5"), 1);
    assert!(!s.counters.contains_key("os.pages_2m"), "no 2 MiB level with 8-bit levels");
}

/// Each eviction policy's own counters reach the result.
#[test]
fn eviction_policies_report_their_counters() {
    for (policy, name) in [
        ("clock", "os.eviction.clock.scanned"),
        ("linux_like", "os.eviction.linux_like.scanned"),
        ("root_chunk", "os.eviction.root_chunk.chunks_emptied"),
    ] {
        let ev = format!("os.eviction={policy}");
        let sp = spec("tlb_only", &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", &ev]);
        let s = run(&sp, Pattern::Uniform, 40_000, 12 << 20);
        assert!(s.get("os.evictions") > 0, "{policy}");
        assert!(s.get(name) > 0, "{name}");
    }
}

/// The mapped pages of a machine agree with its page table and reverse map,
/// every frame is accounted for, and no TLB holds a stale translation of
/// the first `pages` pages of address space 0.
fn check_memory_agrees(m: &Machine, pages: u64, tag: &str) {
    let (pt, mem) = (m.page_table(), m.physmem());
    assert_eq!(mem.mapped_pages() as u64, pt.mappings(crate::addr::PageSize::Size4K), "{tag}");
    assert_eq!(
        mem.free_frames() + mem.table_frames() + mem.mapped_pages() as u64 + mem.pinned_frames(),
        mem.capacity_frames(),
        "{tag}: frames add up"
    );
    for page in 0..pages {
        let va = page << 12;
        let mapped = pt.translate(mem, 0, va).map(|(p, _)| p.0);
        if let Some(t) = m.mmu().peek(va, 0) {
            assert_eq!(mapped, Some(t), "{tag}: stale TLB entry for {va:#x}");
        }
        if let Some(pfn) = mapped {
            let owner = mem.owner(crate::addr::Pfn(pfn)).expect("a mapped page is in the reverse map");
            assert_eq!((owner.asid, owner.vpn), (0, page), "{tag}");
        }
    }
}

/// Iceberg with Horizon LRU under memory pressure (footprint 1.3× the pool):
/// pages are displaced and read back, every access completes, each page sits
/// in one of the h frames its CPFN names, and each eviction went through the
/// one eviction path (counted by the OS, the policy and the swap device alike).
#[test]
fn iceberg_with_horizon_swaps_under_pressure_and_keeps_memory_consistent() {
    use crate::physmem::allocator::iceberg::cpfn;
    use crate::physmem::allocator::AnyAllocator;
    let scans = ["\"horizon\"", "{ kind = \"horizon\", scan = \"linux_sampled\", accesses_per_second = 1000, period_ms = 500 }"];
    for scan in scans {
        for preset in ["tlb_only", "sandy_bridge"] {
            let ev = format!("os.eviction={scan}");
            let sp = spec(preset, &["physmem.capacity=8MiB", "physmem.allocator=iceberg", "os.swap={ capacity = \"64MiB\" }", &ev]);
            let mut m = Machine::build(&sp, 5).unwrap();
            let AnyAllocator::Iceberg(ice) = m.physmem().allocator() else { panic!("not iceberg") };
            let pool = ice.pool_frames();
            assert_eq!(pool, 31 * 64, "1/64 of 8 MiB (64 frames) stays below the pool");
            let footprint = (pool * 13 / 10) << 12;
            let mut src = Synthetic::new(SyntheticSpec::new(Pattern::HotCold, 40_000, footprint, 11)).unwrap();
            crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
            let s = m.stats();
            let tag = format!("{scan} on {preset}");
            let ice = "physmem.allocator.iceberg";
            let hz = "os.eviction.horizon";
            assert_eq!(s.get("core.records"), 40_000, "{tag}: no access lost");
            assert!(s.get("os.evictions") > 0 && s.get("os.major_faults") > 0, "{tag}");
            assert_eq!(s.get("os.faults"), s.get("os.minor_faults") + s.get("os.major_faults"), "{tag}");
            assert_eq!(s.get("os.shootdowns"), s.get("os.evictions"), "{tag}");
            assert_eq!(s.get("swap.pages_in"), s.get("os.major_faults"), "{tag}");
            assert!(s.get("swap.pages_out") <= s.get("os.evictions"), "{tag}");
            // Every eviction was a displacement the allocator asked for, and the policy heard of each.
            assert_eq!(s.get("os.evictions"), s.get(&format!("{ice}.ghost_displacements")) + s.get(&format!("{ice}.live_displacements")), "{tag}");
            assert_eq!(s.get("os.evictions"), s.get(&format!("{hz}.live_evictions")) + s.get(&format!("{hz}.ghost_evictions")), "{tag}");
            assert!(s.get(&format!("{hz}.horizon")) > 0, "{tag}");
            assert_eq!(s.get(&format!("{ice}.placements")), s.get("os.faults"), "{tag}: every fault placed a 4 KiB page in the pool");
            let load = s.derived[&format!("{ice}.first_conflict_load")];
            assert!(load > 0.5 && load < 1.0, "{tag}: first conflict at {load}");
            assert!(s.derived[&format!("{ice}.steady_utilisation")] > load, "{tag}: ghosts fill memory beyond the first conflict");
            if scan.contains("sampled") {
                assert!(s.get(&format!("{hz}.scans")) >= 79, "{tag}");
                assert!(s.get(&format!("{hz}.flushes")) > 0, "{tag}");
            }
            check_memory_agrees(&m, footprint >> 12, &tag);
            let AnyAllocator::Iceberg(ice) = m.physmem().allocator() else { unreachable!() };
            crate::physmem::allocator::FrameAllocator::check_invariants(ice).unwrap();
            let mem = m.physmem();
            for pfn in ice.hasher().begin()..mem.capacity_frames() {
                if let Some(r) = mem.owner(crate::addr::Pfn(pfn)) {
                    let c = ice.cpfn(crate::addr::Pfn(pfn), r.asid, r.vpn);
                    assert_eq!(cpfn::decode(c, r.asid, r.vpn, ice.hasher()), Some(crate::addr::Pfn(pfn)), "{tag}");
                }
            }
        }
    }
}

/// Over a buddy allocator no page is ever a ghost, and exact Horizon LRU is
/// exact global LRU: every counter but the policies' own is equal.
#[test]
fn horizon_over_buddy_is_exact_lru() {
    for preset in ["tlb_only", "sandy_bridge"] {
        let run_with = |ev: &str| {
            let sp = spec(preset, &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", ev]);
            run(&sp, Pattern::HotCold, 40_000, 12 << 20)
        };
        let (lru, hz) = (run_with("os.eviction=lru"), run_with("os.eviction=horizon"));
        assert!(lru.get("os.evictions") > 100, "{preset}: {}", lru.get("os.evictions"));
        let ours = |s: &Stats| s.counters.iter().filter(|(k, _)| !k.starts_with("os.eviction.")).map(|(k, v)| (k.clone(), *v)).collect::<Vec<_>>();
        assert_eq!(ours(&lru), ours(&hz), "{preset}");
        assert_eq!(hz.get("os.eviction.horizon.live_evictions"), hz.get("os.evictions"));
        assert_eq!(hz.get("os.eviction.horizon.ghosts"), 0);
    }
    // With sampled times it still runs and evicts (not exactly LRU).
    let sp = spec("tlb_only", &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction={ kind = \"horizon\", scan = \"linux_sampled\", accesses_per_second = 2000 }"]);
    let s = run(&sp, Pattern::HotCold, 40_000, 12 << 20);
    assert!(s.get("os.evictions") > 0 && s.get("os.eviction.horizon.scans") >= 19);
}

#[test]
fn iceberg_needs_an_eviction_policy_with_page_ages() {
    for policy in ["lru", "clock", "linux_like"] {
        let ev = format!("os.eviction={policy}");
        let sp = spec("tlb_only", &["physmem.capacity=8MiB", "physmem.allocator=iceberg", "os.swap={ capacity = \"64MiB\" }", &ev]);
        match Machine::build(&sp, 1) {
            Err(Error::Config { path, allowed, msg }) => {
                assert_eq!(path, "os.eviction", "{msg}");
                assert_eq!(allowed, vec!["horizon"]);
                assert!(msg.contains("iceberg") && msg.contains(policy), "{msg}");
            }
            Err(e) => panic!("{policy}: {e}"),
            Ok(_) => panic!("{policy}: accepted"),
        }
    }
    // Without a swap device there is nothing to evict: iceberg alone runs until memory is full.
    let sp = spec("tlb_only", &["physmem.capacity=8MiB", "physmem.allocator={ kind = \"iceberg\", pool = \"4MiB\" }"]);
    let mut m = Machine::build(&sp, 1).unwrap();
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Sequential, 100_000, 16 << 20, 1)).unwrap();
    let e = crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap_err();
    assert!(matches!(&e, Error::OutOfMemory { what, .. } if what == "a data page"), "{e}");
    let s = m.stats();
    assert_eq!(s.get("physmem.allocator.iceberg.pool_frames"), 1024);
    assert_eq!(s.get("physmem.allocator.iceberg.full"), 1);
    assert!(s.get("os.pages_4k") > 900, "the pool filled before the first refusal");
    // A pool larger than memory names its key.
    let sp = spec("tlb_only", &["physmem.capacity=8MiB", "physmem.allocator={ kind = \"iceberg\", pool = \"16MiB\" }"]);
    assert!(matches!(Machine::build(&sp, 1), Err(Error::Config { path, .. }) if path == "physmem.allocator.pool"));
}

/// Same seed, same stats; with pinned frames inside the pool and THP asking
/// for 2 MiB pages (which only the buddy allocator below the pool can give).
#[test]
fn iceberg_runs_are_deterministic() {
    let sp = spec(
        "sandy_bridge",
        &[
            "physmem.capacity=16MiB",
            "physmem.fragmentation=0.5",
            "physmem.page_size=thp",
            "physmem.allocator={ kind = \"iceberg\", hash = \"tabulation\", buckets = 40 }",
            "os.swap={ capacity = \"64MiB\" }",
            "os.eviction={ kind = \"horizon\", scan = \"linux_sampled\", accesses_per_second = 4000 }",
        ],
    );
    let go = || {
        let mut m = Machine::build(&sp, 5).unwrap();
        let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 30_000, 32 << 20, 11)).unwrap();
        crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
        m
    };
    let (a, b) = (go(), go());
    let s = a.stats();
    assert_eq!(s.to_json().to_string(), b.stats().to_json().to_string());
    assert_eq!(s.get("physmem.pinned_frames"), 4);
    assert!(s.get("os.pages_2m") > 0, "2 MiB pages below the pool");
    assert!(s.get("os.evictions") > 0, "{}", s.get("os.faults"));
    let (pt, mem) = (a.page_table(), a.physmem());
    assert_eq!(
        mem.free_frames() + mem.table_frames() + mem.pinned_frames() + pt.mappings(crate::addr::PageSize::Size4K) + 512 * pt.mappings(crate::addr::PageSize::Size2M),
        mem.capacity_frames()
    );
    crate::physmem::allocator::FrameAllocator::check_invariants(mem.allocator()).unwrap();
}

/// Page-table nodes come from below the iceberg pool: when that runs out,
/// the error says so and how to fix it (and under memory pressure no pool
/// page is evicted in vain for them).
#[test]
fn iceberg_page_tables_live_below_the_pool() {
    let pressure = spec("tlb_only", &["physmem.capacity=2MiB", "physmem.allocator=iceberg", "os.swap={ capacity = \"64MiB\" }", "os.eviction=horizon"]);
    let mut m = Machine::build(&pressure, 1).unwrap();
    let e = (0..200u64).find_map(|r| m.feed(&one(AccessKind::Load, r << 30, 8)).err()).expect("nodes run out");
    assert!(matches!(&e, Error::OutOfMemory { what, .. } if what == crate::error::BELOW_POOL_NODE), "{e}");
    assert_eq!(m.stats().get("os.evictions"), 0, "evicting pool pages frees no frame for nodes");
    let sp = spec("tlb_only", &["physmem.capacity=2MiB", "physmem.allocator=iceberg"]);
    let mut m = Machine::build(&sp, 1).unwrap();
    let mut err = None;
    for region in 0..200u64 {
        // One page in each of 200 separate 1 GiB regions: three new nodes each.
        if let Err(e) = m.feed(&one(AccessKind::Load, region << 30, 8)) {
            err = Some(e);
            break;
        }
    }
    let e = err.expect("64 frames below the pool hold no more than 64 nodes");
    let text = e.to_string();
    assert!(matches!(&e, Error::OutOfMemory { what, .. } if what == crate::error::BELOW_POOL_NODE), "{text}");
    assert!(text.contains("physmem.allocator.buckets"), "{text}");
    // The numbers are the area's: it is full (no free frame of its 64), not a
    // contradiction with the free frames of the pool.
    assert!(matches!(&e, Error::OutOfMemory { free_bytes: 0, capacity_bytes: 262144, .. }), "{text}");
    assert!(text.contains("the area below the iceberg pool is full") && text.contains("256 KiB"), "{text}");
    let (mem, pt) = (m.physmem(), m.page_table());
    assert!(mem.table_frames() >= 60 && mem.table_frames() <= 64);
    let crate::physmem::allocator::AnyAllocator::Iceberg(ice) = mem.allocator() else { unreachable!() };
    let mapped: Vec<u64> = (0..200u64).filter_map(|r| pt.translate(mem, 0, r << 30).map(|(p, _)| p.0)).collect();
    // The failing fault had placed its page before its node could not be.
    assert_eq!(mapped.len() + 1, mem.mapped_pages());
    assert!(mapped.len() > 25 && mapped.iter().all(|&p| ice.hasher().in_pool(p)), "data pages are in the pool: {mapped:?}");
}

// ---------------------------------------------------------------------------
// Shadow TLB structures and the mosaic TLB in the machine.
// ---------------------------------------------------------------------------

/// A shadow structure `name`: `entries`, `ways` (a number or `"full"`), and an organisation.
fn shadow(name: &str, entries: u32, ways: &str, organisation: &str) -> String {
    format!("mmu.shadow.{name}={{ entries = {entries}, ways = {ways}, organisation = {organisation} }}")
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Every counter of `a` that is not a shadow's equals `b`'s, and `b` has no other.
fn assert_same_machine(a: &Stats, b: &Stats, tag: &str) {
    let theirs: Vec<(&String, &u64)> = a.counters.iter().filter(|(k, _)| !k.starts_with("mmu.shadow.")).collect();
    assert_eq!(theirs, b.counters.iter().collect::<Vec<_>>(), "{tag}");
}

/// The five counters of structure `of` (`mmu.<name>` or `mmu.shadow.<name>`).
fn five(s: &Stats, of: &str) -> [u64; 5] {
    ["lookups", "hits", "misses", "fills", "evictions"].map(|c| s.get(&format!("{of}.{c}")))
}

/// A shadow with the geometry of a level-1 TLB counts what that TLB counts:
/// both fill on each of their misses (from the walk, or from the level-2
/// hit), so they hold the same pages. The machine's own counters are those
/// of the same machine without the shadow, whose bulk counting of repeats
/// is on (with shadows every access is simulated one by one).
#[test]
fn a_shadow_with_an_l1_geometry_counts_what_the_l1_counts() {
    let data = shadow("d", 64, "4", "\"set_assoc\"");
    let instr = "mmu.shadow.i={ side = \"instr\", entries = 16, ways = 4 }".to_string();
    let configs: [(&str, Vec<String>); 4] = [
        ("tlb_only", vec![data.clone()]),
        ("tlb_only", vec![data.clone(), "timing.enabled=true".into()]),
        ("tlb_only", vec![data.clone(), instr.clone(), FETCH_TLB.into()]),
        ("sandy_bridge", vec![data.clone(), "mmu.shadow.i={ side = \"instr\", entries = 128, ways = 4 }".into()]),
    ];
    for (k, (preset, overrides)) in configs.iter().enumerate() {
        let with = load(&ConfigSource::Preset(preset.to_string()), overrides).unwrap();
        let plain: Vec<String> = overrides.iter().filter(|o| !o.starts_with("mmu.shadow")).cloned().collect();
        let without = load(&ConfigSource::Preset(preset.to_string()), &plain).unwrap();
        let mut a = Machine::build(&with, 3).unwrap();
        let mut b = Machine::build(&without, 3).unwrap();
        assert!(!a.cpu().unwrap().bulk_runs);
        for batch in clustered_batches(20 + k as u64, 15_000).iter().chain(&scattered_batches(k as u64, 15_000)) {
            a.feed(batch).unwrap();
            b.feed(batch).unwrap();
        }
        let (sa, sb) = (a.stats(), b.stats());
        let tag = format!("{preset} {overrides:?}");
        assert_same_machine(&sa, &sb, &tag);
        assert!(sa.get("mmu.shadow.d.hits") > 1000 && sa.get("mmu.shadow.d.misses") > 1000, "{tag}");
        assert_eq!(five(&sa, "mmu.shadow.d"), five(&sa, "mmu.l1_dtlb_4k"), "{tag}");
        if overrides.iter().any(|o| o.starts_with("mmu.shadow.i")) {
            assert_eq!(five(&sa, "mmu.shadow.i"), five(&sa, &format!("mmu.{}", if *preset == "tlb_only" { "l1_itlb" } else { "l1_itlb_4k" })), "{tag}");
        }
        // The derived metrics of a shadow sit beside its counters.
        assert!(sa.derived["mmu.shadow.d.miss_rate"] > 0.0, "{tag}");
    }
}

/// A machine whose only TLB is `dtlb` (given in `organisation`, 64 entries,
/// `ways`) and whose shadow `s` has the same geometry.
fn one_tlb_machine(organisation: &str, ways: &str, extra: &[&str]) -> Spec {
    let toml = format!(
        "name = \"one\"\n[mmu.tlb.dtlb]\nlevel = 1\nside = \"data\"\npage_sizes = [\"4k\", \"2m\"]\nentries = 64\nways = {ways}\norganisation = {organisation}\n\
         [mmu.shadow.s]\nentries = 64\nways = {ways}\norganisation = {organisation}\n[walker]\nentry_level = \"dram\"\n[physmem]\ncapacity = \"1GiB\"\n[timing]\nenabled = false\n"
    );
    load(&ConfigSource::Text(toml), &owned(extra)).unwrap()
}

/// A mosaic TLB as the machine's TLB and as a shadow of the same geometry
/// count the same: entry misses walk and fill from the group's leaves; a
/// sub-page miss takes the page without a walk (or walks, under `"walk"`);
/// large pages, memory pressure and shootdowns included. The shadow is
/// also the check that the machine's sub-page fills change nothing else
/// than a walk would have.
#[test]
fn a_mosaic_tlb_counts_as_a_mosaic_shadow_of_its_geometry() {
    let configs: [(&str, &str, &[&str]); 6] = [
        ("{ kind = \"mosaic\", arity = 4 }", "4", &[]),
        ("{ kind = \"mosaic\", arity = 16 }", "1", &[]),
        ("{ kind = \"mosaic\", arity = 64 }", "\"full\"", &[]),
        ("{ kind = \"mosaic\", arity = 8, subpage_miss = \"walk\" }", "2", &[]),
        ("{ kind = \"mosaic\", arity = 8 }", "4", &["physmem.page_size=thp", "physmem.fragmentation=0.997"]),
        ("{ kind = \"mosaic\", arity = 8 }", "4", &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction=clock"]),
    ];
    for (organisation, ways, extra) in configs {
        let sp = one_tlb_machine(organisation, ways, extra);
        let mut m = Machine::build(&sp, 4).unwrap();
        for pattern in [Pattern::Sequential, Pattern::HotCold, Pattern::Uniform] {
            let mut src = Synthetic::new(SyntheticSpec::new(pattern, 30_000, 12 << 20, 2)).unwrap();
            crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
        }
        let s = m.stats();
        let tag = format!("{organisation} ways {ways} {extra:?}");
        assert_eq!(five(&s, "mmu.shadow.s"), five(&s, "mmu.dtlb"), "{tag}");
        for c in ["entry_misses", "subpage_misses", "toc_hits", "subpage_invalidations", "entries_freed"] {
            assert_eq!(s.get(&format!("mmu.shadow.s.{c}")), s.get(&format!("mmu.dtlb.{c}")), "{tag}: {c}");
        }
        assert!(s.get("mmu.dtlb.subpage_misses") > 0, "{tag}");
        // Entries refilled from their group's leaves after an eviction hit pages other walks mapped.
        if !ways.contains("full") {
            assert!(s.get("mmu.dtlb.toc_hits") > 0, "{tag}");
        }
        // Every entry miss walks; a sub-page miss walks under "walk", and
        // otherwise only when the page is not mapped yet (its first touch: an
        // entry is built from every mapped page of its group, so here, with
        // one level, a mapped page is never missing from its entry).
        let walks = s.get("walker.walks");
        assert_eq!(walks, s.get("mmu.dtlb.misses"), "{tag}");
        if extra.iter().any(|e| e.contains("swap")) {
            assert!(s.get("os.evictions") > 0 && s.get("mmu.dtlb.subpage_invalidations") > 0, "{tag}");
        }
        if extra.iter().any(|e| e.contains("thp")) {
            assert!(s.get("os.pages_2m") > 0 && s.get("os.pages_4k") > 0, "{tag}");
        }
        // No stale translation in either.
        let (pt, mem) = (m.page_table(), m.physmem());
        for page in 0..(12u64 << 20) >> 12 {
            let va = crate::stream::synthetic::BASE_VADDR + (page << 12);
            let mapped = pt.translate(mem, 0, va).map(|(p, _)| p.0);
            for held in [m.mmu().peek(va, 0), m.cpu().unwrap().shadows().unwrap().peek(va, 0)].into_iter().flatten() {
                assert_eq!(mapped, Some(held), "{tag}: stale entry for {va:#x}");
            }
        }
    }
}

/// Shadows see the machine's translations and change nothing else: under
/// memory pressure (shootdowns reach them) and on the full model, every
/// counter of the machine is that of the same machine without shadows, and
/// no shadow holds a stale translation.
#[test]
fn shadows_change_nothing_and_hear_every_shootdown() {
    let shadows = [
        shadow("vanilla", 64, "\"full\"", "\"set_assoc\""),
        shadow("m8", 64, "4", "{ kind = \"mosaic\", arity = 8 }"),
        shadow("m64", 16, "1", "{ kind = \"mosaic\", arity = 64, subpage_miss = \"walk\" }"),
        shadow("co", 32, "2", "{ kind = \"coalescing\", group = 16, require_contiguity = false }"),
        "mmu.shadow.rnd={ entries = 32, ways = 4, replacement = \"random\" }".to_string(),
    ];
    for (preset, extra) in [
        ("tlb_only", vec!["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction=lru"]),
        ("sandy_bridge", vec!["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction=linux_like"]),
        ("sandy_bridge", vec!["physmem.page_size=thp", "physmem.fragmentation=0.5"]),
    ] {
        let mut with = owned(&extra);
        with.extend(shadows.iter().cloned());
        let a_spec = load(&ConfigSource::Preset(preset.into()), &with).unwrap();
        let b_spec = load(&ConfigSource::Preset(preset.into()), &owned(&extra)).unwrap();
        let mut a = Machine::build(&a_spec, 8).unwrap();
        let mut b = Machine::build(&b_spec, 8).unwrap();
        for pattern in [Pattern::HotCold, Pattern::Sequential] {
            for m in [&mut a, &mut b] {
                let mut src = Synthetic::new(SyntheticSpec::new(pattern, 40_000, 12 << 20, 7)).unwrap();
                crate::run::feed_all(m, &mut src, &mut |_, _| true).unwrap();
            }
        }
        let (sa, sb) = (a.stats(), b.stats());
        let tag = format!("{preset} {extra:?}");
        assert_same_machine(&sa, &sb, &tag);
        for name in ["vanilla", "m8", "m64", "co", "rnd"] {
            assert_eq!(sa.get(&format!("mmu.shadow.{name}.lookups")), sa.get("mmu.shadow.vanilla.lookups"), "{tag}");
            assert!(sa.get(&format!("mmu.shadow.{name}.hits")) > 0, "{tag}: {name}");
        }
        assert_eq!(sa.get("mmu.shadow.vanilla.lookups"), sa.get("mmu.l1_dtlb_4k.lookups"), "{tag}");
        if extra.iter().any(|e| e.contains("swap")) {
            assert!(sa.get("os.evictions") > 0 && sa.get("mmu.shadow.m8.subpage_invalidations") > 0, "{tag}");
        }
        let (pt, mem) = (a.page_table(), a.physmem());
        let sh = a.cpu().unwrap().shadows().unwrap();
        for page in 0..(12u64 << 20) >> 12 {
            let va = crate::stream::synthetic::BASE_VADDR + (page << 12);
            if let Some(held) = sh.peek(va, 0) {
                assert_eq!(pt.translate(mem, 0, va).map(|(p, _)| p.0), Some(held), "{tag}: stale shadow entry for {va:#x}");
            }
        }
        // Same seed, same stats (random replacement included).
        let mut again = Machine::build(&a_spec, 8).unwrap();
        for pattern in [Pattern::HotCold, Pattern::Sequential] {
            let mut src = Synthetic::new(SyntheticSpec::new(pattern, 40_000, 12 << 20, 7)).unwrap();
            crate::run::feed_all(&mut again, &mut src, &mut |_, _| true).unwrap();
        }
        assert_eq!(again.stats().to_json().to_string(), sa.to_json().to_string(), "{tag}");
    }
}

/// Every TLB of Fig. 6 of the Mosaic Pages paper in one pass: vanilla and
/// Mosaic-4…64, 1024 entries, direct-mapped to fully associative. On
/// streams that walk through memory in order, a mosaic TLB never misses
/// more than the vanilla TLB of its geometry, and a larger arity never
/// misses more than a smaller one.
#[test]
fn one_pass_feeds_the_fig_6_grid_and_mosaic_misses_no_more_on_contiguous_streams() {
    let ways = ["1", "2", "4", "8", "\"full\""];
    let arities = [4u32, 8, 16, 32, 64];
    let mut grid = Vec::new();
    for (w, way) in ways.iter().enumerate() {
        grid.push(shadow(&format!("vanilla_{w}"), 1024, way, "\"set_assoc\""));
        for a in arities {
            grid.push(shadow(&format!("mosaic{a}_{w}"), 1024, way, &format!("{{ kind = \"mosaic\", arity = {a} }}")));
        }
    }
    let sp = load(&ConfigSource::Preset("mosaic_gem5".into()), &grid).unwrap();
    assert_eq!(sp.mmu.shadow.len(), 30);
    // Sequential (64-byte steps) over 32 MiB, twice the reach of Mosaic-4.
    let s = run(&sp, Pattern::Sequential, 1_200_000, 32 << 20);
    for w in 0..ways.len() {
        let vanilla = s.get(&format!("mmu.shadow.vanilla_{w}.misses"));
        let mut last = vanilla;
        for a in arities {
            let m = s.get(&format!("mmu.shadow.mosaic{a}_{w}.misses"));
            assert!(m <= last, "ways {}: Mosaic-{a} misses {m} > {last}", ways[w]);
            last = m;
        }
        // Vanilla misses every page it comes to (8192 pages > 1024 entries);
        // Mosaic-64 holds all 128 groups.
        assert_eq!(vanilla, 1_200_000 / 64, "ways {}", ways[w]);
        assert_eq!(s.get(&format!("mmu.shadow.mosaic64_{w}.entry_misses")), 128, "ways {}", ways[w]);
    }
}

/// With every page of its footprint mapped, a fully associative Mosaic-a TLB
/// of E entries holds E × a pages: a random stream over exactly that many
/// pages never misses once the first pass has filled it, where the vanilla
/// TLB of E entries misses most of the time.
#[test]
fn a_mapped_footprint_of_entries_times_arity_pages_never_misses() {
    for a in [4u32, 16] {
        let sp = spec("tlb_only", &[&shadow("m", 256, "\"full\"", &format!("{{ kind = \"mosaic\", arity = {a} }}")), &shadow("v", 256, "\"full\"", "\"set_assoc\"")]);
        let footprint = 256 * a as u64 * 4096;
        let mut m = Machine::build(&sp, 1).unwrap();
        let mut warm = Synthetic::new(SyntheticSpec::new(Pattern::Sequential, footprint / 64, footprint, 1)).unwrap();
        crate::run::feed_all(&mut m, &mut warm, &mut |_, _| true).unwrap();
        m.begin_measurement();
        let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 50_000, footprint, 2)).unwrap();
        crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
        let s = m.stats();
        assert_eq!(s.get("mmu.shadow.m.lookups"), 50_000);
        assert_eq!(s.get("mmu.shadow.m.misses"), 0, "arity {a}");
        assert!(s.get("mmu.shadow.v.misses") * 10 > 50_000 * (a as u64 - 1) * 8 / a as u64, "arity {a}");
    }
}

#[test]
fn shadow_config_errors_name_the_key() {
    let e = |o: &[&str]| load(&ConfigSource::Preset("tlb_only".into()), &owned(o)).unwrap_err().to_string();
    let msg = e(&[&shadow("m", 64, "4", "{ kind = \"mosaic\", arity = 3 }")]);
    assert!(msg.contains("mmu.shadow.m.organisation.arity") && msg.contains("power of two"), "{msg}");
    let msg = e(&[&shadow("m", 64, "3", "\"set_assoc\"")]);
    assert!(msg.contains("mmu.shadow.m.ways"), "{msg}");
    let msg = e(&["mmu.shadow.m={ entries = 64, ways = 4, size = 3 }"]);
    assert!(msg.contains("mmu.shadow.m") && msg.contains("size"), "{msg}");
    let msg = e(&["mmu.shadow.m={ side = \"instr\", entries = 64, ways = 4 }"]);
    assert!(msg.contains("mmu.shadow.m.side"), "{msg}");
    let msg = e(&["mmu.shadow.m={ entries = 64, ways = 4, page_sizes = [\"4k\"] }", "physmem.page_size=thp"]);
    assert!(msg.contains("mmu.shadow.m.page_sizes") && msg.contains("2m"), "{msg}");
    let msg = e(&["mmu.shadow.m={ entries = 64, ways = 4, page_sizes = [\"2m\"], organisation = \"mosaic\" }"]);
    assert!(msg.contains("mmu.shadow.m.page_sizes") && msg.contains("4k"), "{msg}");
    let msg = e(&[&shadow("m", 64, "4", "\"set_assoc\""), "mmu.shadow.n.entries=4"]);
    assert!(msg.contains("mmu.shadow.n") && msg.contains("known: m"), "{msg}");
    let msg = e(&[&shadow("m", 64, "4", "\"set_assoc\""), "mmu.tlb.shadow={ level = 1, side = \"data\", page_sizes = [\"4k\"], entries = 4, ways = 4 }"]);
    assert!(msg.contains("mmu.tlb.shadow"), "{msg}");
    // Without shadows the resolved config has no `shadow` table; with one, page sizes are written out.
    assert!(!spec("tlb_only", &[]).to_toml().contains("shadow"));
    let with = spec("tlb_only", &["physmem.page_size=thp", &shadow("m", 64, "4", "\"set_assoc\"")]);
    assert_eq!(with.mmu.shadow["m"].page_sizes, vec![crate::addr::PageSize::Size4K, crate::addr::PageSize::Size2M]);
    assert_eq!(with, load(&ConfigSource::Text(with.to_toml()), &[]).unwrap());
}

/// Below a set-associative level 2, a mosaic level 1 gets single pages from
/// level-2 hits; a later access to another mapped page of that group is a
/// sub-page miss that, when level 2 misses too, is served without a walk:
/// fewer walks than accesses that missed both levels, where under
/// `subpage_miss = "walk"` (and with plain TLBs) they are equal. Every
/// translation stays exact.
#[test]
fn sub_page_fills_without_a_walk_save_walks_and_stay_exact() {
    let l1 = |o: &str| format!("mmu.tlb.l1_dtlb_4k.organisation={o}");
    let mut walks = Vec::new();
    for org in ["\"set_assoc\"", "{ kind = \"mosaic\", arity = 8, subpage_miss = \"walk\" }", "{ kind = \"mosaic\", arity = 8 }"] {
        let sp = spec("tlb_only", &[&l1(org), "mmu.tlb.l2_tlb.entries=128", "physmem.capacity=16MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction=clock"]);
        let mut m = Machine::build(&sp, 6).unwrap();
        for pattern in [Pattern::Sequential, Pattern::HotCold, Pattern::Uniform] {
            let mut src = Synthetic::new(SyntheticSpec::new(pattern, 60_000, 20 << 20, 3)).unwrap();
            crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
        }
        let s = m.stats();
        assert!(s.get("os.evictions") > 0, "{org}");
        walks.push((s.get("walker.walks"), s.get("mmu.l2_tlb.misses")));
        let (pt, mem) = (m.page_table(), m.physmem());
        for page in 0..(20u64 << 20) >> 12 {
            let va = crate::stream::synthetic::BASE_VADDR + (page << 12);
            if let Some(held) = m.mmu().peek(va, 0) {
                assert_eq!(pt.translate(mem, 0, va).map(|(p, _)| p.0), Some(held), "{org}: stale entry for {va:#x}");
            }
        }
    }
    assert_eq!(walks[0].0, walks[0].1, "plain TLBs walk on every miss of both levels");
    assert_eq!(walks[1].0, walks[1].1, "\"walk\": a sub-page miss walks");
    assert!(walks[2].0 < walks[2].1, "\"fill\": {:?}", walks[2]);
}

// ---------------------------------------------------------------------------
// The table-of-contents page-table format (Mosaic Pages).
// ---------------------------------------------------------------------------

use crate::physmem::allocator::AnyAllocator;

/// Every page's translation in the first `pages` pages above `base`, in address space 0.
fn translations(m: &Machine, base: u64, pages: u64) -> Vec<Option<u64>> {
    let (pt, mem) = (m.page_table(), m.physmem());
    (0..pages).map(|p| pt.translate(mem, 0, base + (p << 12)).map(|(f, _)| f.0)).collect()
}

/// The data frames are the Iceberg allocator's, whichever format records
/// them: a run under memory pressure (Horizon LRU, swap) over ToC leaves
/// makes the same translations, faults, evictions and TLB misses as over
/// x86 leaves, checked after each of several streams; only the walk's
/// memory references, the table's nodes and what follows from them (cache
/// contents, cycles) and swap writes (dirty bits are per mosaic page) may
/// differ.
#[test]
fn a_toc_table_translates_as_x86_under_iceberg_and_horizon() {
    for (preset, arity) in [("tlb_only", 4), ("sandy_bridge", 16), ("tlb_only", 64)] {
        let build = |format: &str| {
            let f = format!("pagetable.format={format}");
            let sp = spec(preset, &["physmem.capacity=8MiB", "physmem.allocator=iceberg", "os.swap={ capacity = \"64MiB\" }", "os.eviction=horizon", &f]);
            Machine::build(&sp, 5).unwrap()
        };
        let toc = format!("{{ kind = \"mosaic_toc\", arity = {arity} }}");
        let (mut x86, mut ours) = (build("x86_radix"), build(&toc));
        let AnyAllocator::Iceberg(ice) = x86.physmem().allocator() else { unreachable!() };
        let footprint = (ice.pool_frames() * 13 / 10) << 12;
        let base = crate::stream::synthetic::BASE_VADDR;
        for (k, pattern) in [Pattern::HotCold, Pattern::Uniform, Pattern::Sequential].into_iter().enumerate() {
            for m in [&mut x86, &mut ours] {
                let mut src = Synthetic::new(SyntheticSpec::new(pattern, 20_000, footprint, 11 + k as u64)).unwrap();
                crate::run::feed_all(m, &mut src, &mut |_, _| true).unwrap();
            }
            let tag = format!("{preset}, arity {arity}, after stream {k}");
            assert_eq!(translations(&x86, base, footprint >> 12), translations(&ours, base, footprint >> 12), "{tag}");
        }
        let (a, b) = (x86.stats(), ours.stats());
        let tag = format!("{preset}, arity {arity}");
        assert!(a.get("os.evictions") > 100, "{tag}: under pressure");
        // What the format may change: walk references and what they do in
        // the PSCs, the caches (so the lines an eviction finds there) and
        // to time, the table's nodes and the frames they take, A/D bit
        // updates and the swap writes that group dirty bits add; and a ToC
        // maps no 2 MiB or 1 GiB pages, so reports none.
        let may_differ = |k: &str| {
            ["walker.refs_", "walker.accessed_updates", "walker.dirty_updates", "mmu.psc.", "cache.", "os.lines_invalidated", "os.dirty_lines", "pagetable.nodes_", "physmem.table_frames", "physmem.allocated_frames", "physmem.free_frames", "swap.bytes_out", "swap.clean_evictions", "swap.pages_out"]
                .iter()
                .any(|p| k.starts_with(p))
                || k.contains("cycles")
                || k.ends_with("_2m") || k.ends_with("_1g")
        };
        let differ: Vec<(&String, &u64, Option<&u64>)> = a
            .counters
            .iter()
            .filter(|(k, v)| !may_differ(k) && b.counters.get(*k) != Some(v))
            .map(|(k, v)| (k, v, b.counters.get(k)))
            .collect();
        assert!(differ.is_empty(), "{tag}: {differ:?}");
        assert!(b.counters.keys().all(|k| a.counters.contains_key(k)), "{tag}");
        assert_eq!(a.get("walker.walks"), b.get("walker.walks"), "{tag}");
        assert_eq!(a.get("core.records"), b.get("core.records"), "{tag}");
        // One reference per level, as on x86: without PSCs a completed walk
        // reads four entries, a faulting one stops at the first absent one.
        let (walks, faulting, refs) = (b.get("walker.walks"), b.get("walker.faulting_walks"), b.get("walker.refs_total"));
        assert!(refs <= 4 * (walks + faulting), "{tag}: {refs} references");
        if b.get("mmu.psc.pde.lookups") == 0 {
            assert!(4 * walks + faulting <= refs, "{tag}: {refs} references");
        }
        assert_eq!(b.get("pagetable.mappings_4k"), a.get("pagetable.mappings_4k"), "{tag}");
        assert!(b.get("pagetable.nodes_l1") <= a.get("pagetable.nodes_l1"), "{tag}: a ToC leaf node covers 8 or 16 MiB");
        check_memory_agrees(&ours, footprint >> 12, &tag);
    }
}

/// Horizon's sampled scan reads and clears accessed bits, which a ToC
/// keeps per mosaic page: the run completes and memory stays consistent
/// (translations may differ from x86's, since the ages do).
#[test]
fn a_toc_table_serves_the_sampled_accessed_bit_scan() {
    let sp = spec(
        "tlb_only",
        &[
            "physmem.capacity=8MiB",
            "physmem.allocator=iceberg",
            "os.swap={ capacity = \"64MiB\" }",
            "os.eviction={ kind = \"horizon\", scan = \"linux_sampled\", accesses_per_second = 1000, period_ms = 500 }",
            "pagetable.format={ kind = \"mosaic_toc\", arity = 8 }",
        ],
    );
    let mut m = Machine::build(&sp, 5).unwrap();
    let AnyAllocator::Iceberg(ice) = m.physmem().allocator() else { unreachable!() };
    let footprint = (ice.pool_frames() * 13 / 10) << 12;
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::HotCold, 40_000, footprint, 11)).unwrap();
    crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
    let s = m.stats();
    assert_eq!(s.get("core.records"), 40_000);
    assert!(s.get("os.evictions") > 0 && s.get("os.eviction.horizon.scans") > 0);
    check_memory_agrees(&m, footprint >> 12, "linux_sampled over ToC leaves");
}

/// A mosaic TLB fills an entry from the group's present pages: over ToC
/// leaves that is the walked ToC (or, for a TLB arity above the format's,
/// the node's neighbouring ToCs), over x86 leaves the group's PTEs. Both
/// hold the same pages, so the TLB counts the same.
#[test]
fn a_mosaic_tlb_counts_the_same_over_toc_and_x86_leaves() {
    let cases: [(u32, u32, &str, &[&str]); 5] = [
        (4, 4, "4", &[]),
        (16, 16, "1", &[]),
        (64, 64, "\"full\"", &[]),
        (8, 32, "2", &[]),
        (4, 4, "4", &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction=horizon"]),
    ];
    for (tlb_arity, format_arity, ways, extra) in cases {
        let organisation = format!("{{ kind = \"mosaic\", arity = {tlb_arity} }}");
        let toc = format!("pagetable.format={{ kind = \"mosaic_toc\", arity = {format_arity} }}");
        let run_with = |format: &str| {
            let mut o = vec!["physmem.allocator=iceberg", format];
            o.extend_from_slice(extra);
            let sp = one_tlb_machine(&organisation, ways, &o);
            let mut m = Machine::build(&sp, 4).unwrap();
            for pattern in [Pattern::Sequential, Pattern::HotCold, Pattern::Uniform] {
                let mut src = Synthetic::new(SyntheticSpec::new(pattern, 30_000, 12 << 20, 2)).unwrap();
                crate::run::feed_all(&mut m, &mut src, &mut |_, _| true).unwrap();
            }
            m.stats()
        };
        let (x86, ours) = (run_with("pagetable.format=x86_radix"), run_with(&toc));
        let tag = format!("TLB arity {tlb_arity}, ToC arity {format_arity}, ways {ways} {extra:?}");
        for of in ["mmu.dtlb", "mmu.shadow.s"] {
            assert_eq!(five(&x86, of), five(&ours, of), "{tag}: {of}");
            for c in ["entry_misses", "subpage_misses", "toc_hits", "subpage_invalidations", "entries_freed"] {
                assert_eq!(x86.get(&format!("{of}.{c}")), ours.get(&format!("{of}.{c}")), "{tag}: {of}.{c}");
            }
        }
        assert!(ours.get("mmu.dtlb.toc_hits") > 0 || ways.contains("full"), "{tag}");
        assert_eq!(x86.get("walker.walks"), ours.get("walker.walks"), "{tag}");
    }
}

#[test]
fn the_toc_format_needs_iceberg_4k_pages_and_a_good_arity() {
    let cases: [(&[&str], &str, &[&str]); 5] = [
        (&["pagetable.format=mosaic_toc"], "physmem.allocator", &["iceberg"]),
        (&["pagetable.format=mosaic_toc", "physmem.allocator={ kind = \"buddy\" }"], "physmem.allocator", &["iceberg"]),
        (&["pagetable.format=mosaic_toc", "physmem.allocator=iceberg", "physmem.page_size=thp"], "physmem.page_size", &["base_only"]),
        (&["pagetable.format={ kind = \"mosaic_toc\", arity = 6 }", "physmem.allocator=iceberg"], "pagetable.format.arity", &["4", "8", "16", "32", "64"]),
        (&["pagetable.format=mosaic_toc", "pagetable.levels=3", "physmem.allocator=iceberg"], "pagetable.levels", &["4", "5"]),
    ];
    for (overrides, key, allowed) in cases {
        match load(&ConfigSource::Preset("tlb_only".into()), &owned(overrides)) {
            Err(Error::Config { path, allowed: a, msg }) => {
                assert_eq!(path, key, "{overrides:?}: {msg}");
                assert_eq!(a, allowed.iter().map(|s| s.to_string()).collect::<Vec<_>>(), "{overrides:?}");
            }
            other => panic!("{overrides:?}: {other:?}"),
        }
    }
    let bad = load(&ConfigSource::Preset("tlb_only".into()), &owned(&["pagetable.format={ kind = \"mosaic_toc\", aritty = 4 }"]));
    assert!(matches!(bad, Err(Error::Config { path, .. }) if path.starts_with("pagetable.format")));
    let sp = spec("sandy_bridge", &["pagetable.format={ kind = \"mosaic_toc\", arity = 32 }", "physmem.allocator=iceberg", "pagetable.levels=5"]);
    let s = run(&sp, Pattern::Uniform, 5_000, 4 << 20);
    assert_eq!(s.get("pagetable.nodes_l5"), 1);
    assert!(s.get("walker.walks") > 0);
}

/// A GTSM machine: the `gt_pde` table with the `gtsm` policy, on the GTSM
/// paper's machine at 1 GiB.
fn gtsm(mode: &str, extra: &[&str]) -> Spec {
    let mut o = vec![
        "pagetable.format.kind=\"gt_pde\"".to_string(),
        format!("pagetable.format.mode=\"{mode}\""),
        "physmem.page_size=\"gtsm\"".into(),
        "physmem.capacity=\"1GiB\"".into(),
    ];
    o.extend(extra.iter().map(|s| s.to_string()));
    let o: Vec<&str> = o.iter().map(|s| s.as_str()).collect();
    spec("gtsm_ptlsim", &o)
}

#[test]
fn gtsm_maps_superpages_over_slices_and_walks_end_at_the_pd() {
    for mode in crate::pagetable::gt_pde::GtMode::ALL {
        let s = run(&gtsm(mode.name(), &[]), Pattern::Uniform, 200_000, 64 << 20);
        let superpage = 1u64 << mode.superpage_shift();
        assert!(s.get("os.gt_superpages") > 0, "{mode:?}");
        // With no retired page, every region is a superpage: no 4 KiB page at all.
        assert_eq!(s.get("os.pages_4k"), 0, "{mode:?}");
        assert_eq!(s.get("os.gt_superpages"), (64 << 20) / superpage, "{mode:?}");
        assert_eq!(s.get("pagetable.mappings_gt"), (64 << 20) >> mode.entry_shift(), "{mode:?}");
        assert_eq!(s.get("walker.leaves_gt"), s.get("walker.walks"), "{mode:?}: every walk ends at a GT-PDE");
        assert_eq!(s.get("walker.leaves_4k"), s.get("walker.walks"), "{mode:?}: the TLBs get 4 KiB pages");
        assert_eq!(s.get("physmem.slices.grants") + s.get("physmem.slices.pair_grants"), s.get("pagetable.mappings_gt"), "{mode:?}");
    }
}

#[test]
fn gtsm_runs_are_deterministic_and_retired_pages_cost_superpages() {
    let clean = gtsm("gt_pde_4m", &[]);
    let a = run(&clean, Pattern::Uniform, 100_000, 128 << 20);
    let b = run(&clean, Pattern::Uniform, 100_000, 128 << 20);
    assert_eq!(a.to_json().to_string(), b.to_json().to_string(), "same config, input and seed: the same stats");
    // At 3 % retired pages almost no 8 MiB slice has 33 usable 128 KiB blocks (Fig. 14: 0.8 %).
    let worn = run(&gtsm("gt_pde_4m", &["physmem.retired={ kind = \"uniform\", fraction = 0.03 }"]), Pattern::Uniform, 100_000, 128 << 20);
    assert!(worn.get("os.gt_superpages") < a.get("os.gt_superpages") / 4, "{} vs {}", worn.get("os.gt_superpages"), a.get("os.gt_superpages"));
    assert!(worn.get("os.pages_4k") > 0);
    assert!(worn.get("physmem.slices.refusals") > 0);
    assert!(worn.get("walker.cycles") > a.get("walker.cycles"));
    // The 1 MiB mode's 32 KiB blocks survive it (its threshold is 5.5 %).
    let one = run(&gtsm("gt_pde_1m", &["physmem.retired={ kind = \"uniform\", fraction = 0.03 }"]), Pattern::Uniform, 100_000, 128 << 20);
    assert!(one.get("os.gt_superpages") * (1 << 20) >= (128 << 20) / 2, "half the footprint or more in 1 MiB superpages");
}

/// The GT-aware coalescing L2 (`gt_blocks`): on a clean GT-PDE-4MB machine,
/// the first touch of each 128 KiB B-block walks and its other 31 pages are
/// coalesced hits; the next virtual B-block walks again. Without
/// `gt_blocks` every page walks, as in the paper; with a group of 64 pages
/// one walk covers two B-blocks, since a clean slice grants them in order.
#[test]
fn a_gt_aware_coalescing_l2_covers_a_b_block_per_walk() {
    let co = |group: u32, gt: bool| format!("mmu.tlb.l2_tlb.organisation={{ kind = \"coalescing\", group = {group}, gt_blocks = {gt} }}");
    let base = 0x7f00_0000_0000u64;
    for (group, gt, walks) in [(32, true, 2), (32, false, 64), (64, true, 1)] {
        let o = co(group, gt);
        let mut m = Machine::build(&gtsm("gt_pde_4m", &[&o]), 3).unwrap();
        let mut walked = Vec::new();
        for page in 0..64u64 {
            let before = m.stats().get("walker.walks");
            m.feed(&one(AccessKind::Load, base + (page << 12), 8)).unwrap();
            if m.stats().get("walker.walks") > before {
                walked.push(page);
            }
        }
        let s = m.stats();
        assert_eq!(s.get("os.gt_superpages"), 1);
        assert_eq!(s.get("walker.walks"), walks, "group {group}, gt_blocks {gt}: walked {walked:?}");
        assert_eq!(s.get("mmu.l2_tlb.coalesced_hits"), 64 - walks, "group {group}, gt_blocks {gt}");
        if gt && group == 32 {
            assert_eq!(walked, [0, 32], "the first page of each B-block walks");
        }
        let (pt, mem) = (m.page_table(), m.physmem());
        for page in 0..64u64 {
            let va = base + (page << 12);
            assert_eq!(m.mmu().peek(va, 0), pt.translate(mem, 0, va).map(|(p, _)| p.0), "{va:#x}");
        }
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Coalescing structures with `gt_blocks` at level 1, level 2 or both,
    /// and a shadow, on GT-PDE machines of every mode with retired pages
    /// (slices whose B-blocks are not all contiguous, and 4 KiB pages where
    /// no slice was granted): every translation the machine makes, and
    /// every one its TLBs and the shadow hold at the end, is the page
    /// table's.
    #[test]
    fn gt_aware_coalescing_translations_are_the_page_table_s(
        mode in 0..5usize,
        levels in 1..4u32,
        group in proptest::sample::select(vec![8u32, 16, 32, 64]),
        line in proptest::bool::ANY,
        contiguous in proptest::bool::ANY,
        l2_entries in proptest::sample::select(vec![32u32, 512]),
        retired in proptest::sample::select(vec![0.0, 0.004, 0.02]),
        accesses in proptest::collection::vec((0..4096u64, proptest::bool::ANY), 200..800),
    ) {
        let mode = crate::pagetable::gt_pde::GtMode::ALL[mode];
        let org = format!(
            "{{ kind = \"coalescing\", group = {group}, gt_blocks = true, require_contiguity = {contiguous}, fill_from = \"{}\" }}",
            if line { "line" } else { "group" }
        );
        let mut o = vec![
            format!("mmu.tlb.l2_tlb.entries={l2_entries}"),
            format!("physmem.retired={{ kind = \"uniform\", fraction = {retired:?} }}"),
            shadow("gt", 16, "4", &org),
        ];
        if levels & 1 != 0 {
            o.push(format!("mmu.tlb.l1_dtlb_4k.organisation={org}"));
        }
        if levels & 2 != 0 {
            o.push(format!("mmu.tlb.l2_tlb.organisation={org}"));
        }
        let o: Vec<&str> = o.iter().map(|s| s.as_str()).collect();
        let mut m = Machine::build(&gtsm(mode.name(), &o), 9).unwrap();
        // 16 MiB: several superpages, so groups meet B-block and superpage boundaries.
        let base = 0x7f00_0000_0000u64;
        for &(page, write) in &accesses {
            let va = base + (page << 12) + 0x18;
            let (pfn_base, size) = m.translate_data(va, 0, write).unwrap();
            let got = pfn_base + ((va >> 12) & ((1 << size.order()) - 1));
            let want = m.page_table().translate(m.physmem(), 0, va).map(|(p, _)| p.0);
            proptest::prop_assert_eq!(Some(got), want, "{:?}: {:#x}", mode, va);
        }
        let (pt, mem) = (m.page_table(), m.physmem());
        let shadows = m.cpu().unwrap().shadows().unwrap();
        for page in 0..4096u64 {
            let va = base + (page << 12);
            let want = pt.translate(mem, 0, va).map(|(p, _)| p.0);
            for held in [m.mmu().peek(va, 0), shadows.peek(va, 0)].into_iter().flatten() {
                proptest::prop_assert_eq!(Some(held), want, "{:?}: stale entry for {:#x}", mode, va);
            }
        }
        let s = m.stats();
        proptest::prop_assert!(s.get("walker.leaves_gt") > 0 || retired > 0.01);
    }
}

#[test]
fn gtsm_walks_are_shorter_than_4k_walks() {
    let base = run(&spec("gtsm_ptlsim", &["physmem.capacity=\"1GiB\""]), Pattern::Uniform, 100_000, 256 << 20);
    let gt = run(&gtsm("gt_pde_4m", &[]), Pattern::Uniform, 100_000, 256 << 20);
    assert_eq!(gt.get("walker.walks"), base.get("walker.walks"), "the TLBs see 4 KiB pages either way");
    assert!(gt.get("walker.refs_total") < base.get("walker.refs_total"));
    assert!(gt.get("walker.cycles") < base.get("walker.cycles"));
}

/// Every page the batches touched is mapped, in the reverse map under its
/// own (asid, first page), and any TLB entry for it agrees with the table;
/// the frames add up.
fn check_pages_agree(m: &Machine, batches: &[AccessBatch], tag: &str) {
    use crate::addr::PageSize;
    let (pt, mem) = (m.page_table(), m.physmem());
    let mut data = 0;
    for size in PageSize::ALL {
        data += pt.mappings(size) << size.order();
    }
    assert_eq!(
        mem.free_frames() + mem.table_frames() + data + mem.pinned_frames() + mem.retired_frames(),
        mem.capacity_frames(),
        "{tag}: frames add up"
    );
    for b in batches {
        for i in 0..b.len() {
            if b.kind[i] == AccessKind::IFetch && !m.mmu().translates_instr() {
                continue;
            }
            let (va, asid) = (b.vaddr[i] & !0xfff, b.asid[i]);
            let (pfn, size) = pt.translate(mem, asid, va).unwrap_or_else(|| panic!("{tag}: {va:#x} not mapped"));
            if let Some(t) = m.mmu().peek(va, asid) {
                assert_eq!(t, pfn.0, "{tag}: stale TLB entry for {va:#x}");
            }
            let first = size.order() as u64;
            let base = crate::addr::Pfn(pfn.0 & !((1 << first) - 1));
            let owner = mem.owner(base).expect("a mapped page is in the reverse map");
            assert_eq!((owner.asid, owner.vpn, owner.size), (asid, (va >> 12) & !((1 << first) - 1), size), "{tag}");
        }
    }
}

fn compaction_spec(capacity_mib: u64, extra: &[&str]) -> Spec {
    let capacity = format!("physmem.capacity=\"{capacity_mib}MiB\"");
    let mut o = vec!["physmem.page_size=\"thp\"", capacity.as_str()];
    o.extend_from_slice(extra);
    spec("tlb_only", &o)
}

fn fed(sp: &Spec, batches: &[AccessBatch]) -> Machine {
    let mut m = Machine::build(sp, 3).unwrap();
    for b in batches {
        m.feed(b).unwrap();
    }
    m
}

/// With one pinned frame in every 2 MiB block, THP maps no 2 MiB page;
/// direct compaction moves the pins (other programs' pages) and gives every
/// region its 2 MiB page back, with every translation exact and walk
/// shortcuts still equal to full walks.
#[test]
fn compaction_gives_thp_its_pages_back_over_movable_fragmentation() {
    let batches = scattered_batches(7, 30_000);
    let without = fed(&compaction_spec(256, &["physmem.fragmentation=1.0"]), &batches).stats();
    assert_eq!(without.get("os.pages_2m"), 0);
    let sp = compaction_spec(256, &["physmem.fragmentation=1.0", "os.compaction={}"]);
    let m = fed(&sp, &batches);
    check_pages_agree(&m, &batches, "compaction");
    let s = m.stats();
    assert_eq!(s.get("os.pages_4k"), 0);
    assert_eq!(s.get("os.pages_2m"), s.get("os.faults"), "every region of both address spaces");
    assert_eq!(s.get("os.compaction.successes"), s.get("os.pages_2m"));
    assert_eq!(s.get("physmem.pinned_frames"), without.get("physmem.pinned_frames"), "pins move, none is lost");
    assert!(s.get("os.compaction.pins_migrated") >= s.get("os.compaction.successes"));
    assert_eq!(s.get("os.compaction.cycles"), 8000 * s.get("os.compaction.pins_migrated"));
    assert!(s.get("walker.walks") < without.get("walker.walks"));
    let mut full = Machine::build(&sp, 3).unwrap().without_walk_shortcuts();
    for b in &batches {
        full.feed(b).unwrap();
    }
    assert_eq!(s.counters, full.stats().counters, "walk shortcuts over moved pages");
    assert_eq!(s.to_json().to_string(), fed(&sp, &batches).stats().to_json().to_string(), "deterministic");
    // Unmovable pins leave nothing to compact.
    let stuck = fed(&compaction_spec(256, &["physmem.fragmentation=1.0", "os.compaction={ movable_pins = false }"]), &batches).stats();
    assert_eq!((stuck.get("os.pages_2m"), stuck.get("os.compaction.successes")), (0, 0));
    assert!(stuck.get("os.compaction.deferred") > stuck.get("os.compaction.failures"));
}

/// Compaction with nothing to do changes no number: without fragmentation
/// every 2 MiB fault finds a free block, and only the (zero) compaction
/// counters are added.
#[test]
fn compaction_that_never_runs_changes_no_number() {
    let batches = scattered_batches(3, 20_000);
    let a = fed(&compaction_spec(512, &[]), &batches).stats();
    let b = fed(&compaction_spec(512, &["os.compaction={}"]), &batches).stats();
    let mut rest = b.counters.clone();
    rest.retain(|k, v| {
        let extra = k.starts_with("os.compaction.");
        assert!(!extra || *v == 0, "{k} = {v}");
        !extra
    });
    assert_eq!(a.counters, rest);
}

/// As memory fills up (fragmented or not), compaction fails and defers, and
/// the run stays consistent after every batch; running out of memory is an
/// error, not a panic.
#[test]
fn compaction_as_memory_fills_keeps_every_page_consistent() {
    let batches = scattered_batches(7, 30_000);
    for (cap, frag) in [(112, "0.5"), (144, "1.0"), (160, "1.0")] {
        let fr = format!("physmem.fragmentation={frag}");
        let sp = compaction_spec(cap, &[&fr, "os.compaction={ max_defer_shift = 2 }"]);
        let mut m = Machine::build(&sp, 3).unwrap();
        for (k, b) in batches.iter().enumerate() {
            m.feed(b).unwrap();
            if k % 8 == 0 || k + 1 == batches.len() {
                check_pages_agree(&m, &batches[..=k], &format!("{cap} MiB, batch {k}"));
            }
        }
        let s = m.stats();
        assert!(s.get("os.compaction.successes") > 0 && s.get("os.compaction.failures") > 0, "{cap} MiB");
        assert!(s.get("os.compaction.deferred") > 0, "{cap} MiB");
    }
    let sp = compaction_spec(96, &["physmem.fragmentation=1.0", "os.compaction={}"]);
    let mut m = Machine::build(&sp, 3).unwrap();
    let e = batches.iter().try_for_each(|b| m.feed(b)).unwrap_err();
    assert!(matches!(e, Error::OutOfMemory { .. }), "{e}");
}

#[test]
fn compaction_config_errors_name_the_key() {
    let cases: [(&[&str], &str); 4] = [
        (&["os.compaction={}"], "physmem.page_size"),
        (&["os.compaction={}", "physmem.page_size=\"thp\"", "physmem.allocator={ kind = \"iceberg\" }"], "physmem.allocator"),
        (&["os.compaction={}", "physmem.page_size=\"thp\"", "os.swap={ capacity = \"1GiB\" }"], "os.compaction"),
        (&["os.compaction={ movable = true }", "physmem.page_size=\"thp\""], "os.compaction"),
    ];
    for (o, key) in cases {
        let v: Vec<String> = o.iter().map(|s| s.to_string()).collect();
        let e = load(&ConfigSource::Preset("tlb_only".into()), &v).and_then(|s| Machine::build(&s, 1).map(|_| ())).unwrap_err();
        assert!(e.to_string().contains(key), "{o:?}: {e}");
    }
}

/// Data pages whose first frame lies in `frames` (the reverse map).
fn data_pages_in(m: &Machine, frames: std::ops::Range<u64>) -> u64 {
    frames.filter(|&f| m.physmem().owner(crate::addr::Pfn(f)).is_some()).count() as u64
}

/// Touch 4 KiB pages one by one (sequential addresses) until the first
/// eviction; returns the machine, the number of pages touched before it,
/// and the data pages per 2 MiB chunk just before that last access.
fn fill_until_first_eviction(policy: &str, touch_first_again: bool) -> (Machine, u64, Vec<u64>) {
    let ev = format!("os.eviction={policy}");
    let sp = spec("tlb_only", &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", &ev]);
    let mut m = Machine::build(&sp, 5).unwrap();
    let base = 0x7f00_0000_0000u64;
    for i in 0.. {
        let chunks: Vec<u64> = (0..4).map(|c| data_pages_in(&m, c * 512..(c + 1) * 512)).collect();
        if touch_first_again && i > 0 && chunks[1] > 0 {
            // A page of chunk 0 used again: its chunk becomes the most recently accessed.
            m.feed(&one(AccessKind::Load, base, 8)).unwrap();
        }
        m.feed(&one(AccessKind::Load, base + (i << 12), 8)).unwrap();
        if m.stats().get("os.evictions") > 0 {
            return (m, i, chunks);
        }
    }
    unreachable!()
}

/// With `root_chunk`, the first eviction empties the whole victim chunk:
/// every data page whose frames lie in it is evicted (each unmapped, shot
/// down and written out), not only the one frame the fault needs; with
/// `lru` the same fault evicts exactly the one page it needs.
#[test]
fn root_chunk_evicts_a_whole_chunk_and_lru_one_page() {
    // Allocation order: chunk 0 was filled first (the buddy allocator hands out
    // the lowest free frames), so it is the oldest and goes whole.
    let (m, touched, chunks) = fill_until_first_eviction("root_chunk", false);
    let s = m.stats();
    assert!(chunks.iter().all(|&n| n > 0), "memory was full: {chunks:?}");
    assert_eq!(s.get("os.evictions"), chunks[0], "every page of chunk 0, {chunks:?}");
    assert_eq!(s.get("os.shootdowns"), chunks[0]);
    assert_eq!(s.get("swap.pages_out"), chunks[0], "none had a swap copy");
    assert_eq!(s.get("os.eviction.root_chunk.chunks_emptied"), 1);
    // The new page took a frame of the emptied chunk; nothing else is left in it.
    assert_eq!(data_pages_in(&m, 0..512), 1);
    assert_eq!(s.get("os.pages_4k"), touched + 1);
    assert_eq!(m.physmem().mapped_pages() as u64, touched + 1 - chunks[0]);
    check_memory_agrees(&m, touched + 1, "root_chunk");

    // Access order: chunk 0 used again after chunk 1 was allocated into, so
    // the oldest chunk by access is chunk 1.
    let (m, _, chunks) = fill_until_first_eviction("{ kind = \"root_chunk\", order = \"access\" }", true);
    let s = m.stats();
    assert_eq!(s.get("os.evictions"), chunks[1], "every page of chunk 1, {chunks:?}");
    assert_eq!(data_pages_in(&m, 512..1024), 1, "the new page went into the emptied chunk 1");
    assert_eq!(data_pages_in(&m, 0..512), chunks[0]);

    // The same fill under allocation order ignores the touches: chunk 0 goes.
    let (m, _, chunks) = fill_until_first_eviction("root_chunk", true);
    assert_eq!(m.stats().get("os.evictions"), chunks[0]);

    // LRU: the fault evicts the one page it needs.
    let (m, touched, _) = fill_until_first_eviction("lru", false);
    let s = m.stats();
    assert_eq!(s.get("os.evictions"), 1);
    assert_eq!(m.physmem().mapped_pages() as u64, touched);
    check_memory_agrees(&m, touched + 1, "lru");
}

/// Every counter of `a` but the timing model's equals `b`'s.
fn same_but_timing(a: &Stats, b: &Stats) {
    let timing = ["core.cycles", "core.translation_stall_cycles", "core.data_stall_cycles"];
    // The ooo model's own counters (compared only between two ooo runs).
    let ooo = ["core.walk_oldest_cycles", "core.walker_busy_cycles", "core.rob_full_cycles", "core.mshr_wait_cycles", "core.walker_wait_cycles"];
    for (k, v) in &a.counters {
        if ooo.contains(&k.as_str()) {
            continue;
        }
        if !timing.contains(&k.as_str()) && b.counters.contains_key(k) {
            assert_eq!(Some(v), b.counters.get(k), "{k}");
        }
    }
}

#[test]
fn the_ooo_model_changes_only_the_timing_counters() {
    for pages in ["base_only", "thp"] {
        let p = format!("physmem.page_size={pages}");
        let interval = run(&spec("sandy_bridge", &[&p]), Pattern::Uniform, 60_000, 1 << 30);
        let ooo_spec = spec("sandy_bridge", &[&p, "timing.kind=\"ooo\""]);
        let ooo = run(&ooo_spec, Pattern::Uniform, 60_000, 1 << 30);
        same_but_timing(&ooo, &interval);
        same_but_timing(&interval, &ooo);
        let extra: Vec<&String> = ooo.counters.keys().filter(|k| !interval.counters.contains_key(*k)).collect();
        assert_eq!(extra.len(), 5, "{extra:?}");
        assert!(interval.counters.keys().all(|k| ooo.counters.contains_key(k)));
        assert!(ooo.get("core.cycles") > 0 && ooo.get("core.cycles") <= interval.get("core.cycles"), "{pages}");
        assert!(ooo.get("core.walker_busy_cycles") > 0 || pages == "thp");
        assert!(ooo.derived["core.walk_oldest_share"] >= 0.0);
        // Deterministic, also with drawn dependencies.
        assert_eq!(ooo.to_json().to_string(), run(&ooo_spec, Pattern::Uniform, 60_000, 1 << 30).to_json().to_string());
        let dep = spec("sandy_bridge", &[&p, "timing.kind=\"ooo\"", "timing.ooo.dependency_fraction=0.5"]);
        let a = run(&dep, Pattern::Uniform, 60_000, 1 << 30);
        assert_eq!(a.to_json().to_string(), run(&dep, Pattern::Uniform, 60_000, 1 << 30).to_json().to_string());
        assert!(a.get("core.cycles") >= ooo.get("core.cycles"), "dependencies only delay");
        same_but_timing(&a, &interval);
    }
}

#[test]
fn the_ooo_model_with_a_window_of_one_is_the_interval_model() {
    // Loads only (stores do not wait for data under ooo), no page crossings.
    let base = ["timing.ooo.window=1", "timing.ooo.dispatch_width=1", "timing.ooo.retire_width=1", "timing.ooo.mshrs=1"];
    let mut batch = AccessBatch::with_capacity(4000);
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    for i in 0..4000u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        batch.push((i % 3 + 1) as u32, 0x10_0000_0000 + (x % (1 << 30) & !7), AccessKind::Load, 8, 0);
    }
    let interval = {
        let mut m = Machine::build(&spec("sandy_bridge", &[]), 3).unwrap();
        m.feed(&batch).unwrap();
        m.stats()
    };
    let mut o: Vec<&str> = base.to_vec();
    o.push("timing.kind=\"ooo\"");
    let mut m = Machine::build(&spec("sandy_bridge", &o), 3).unwrap();
    m.feed(&batch).unwrap();
    let ooo = m.stats();
    for k in ["core.cycles", "core.translation_stall_cycles", "core.data_stall_cycles"] {
        assert_eq!(ooo.get(k), interval.get(k), "{k}");
    }
    assert_eq!(ooo.get("core.walker_busy_cycles"), interval.get("walker.cycles"));
}

/// On a machine without caches the interval model counts runs of repeated
/// hits in bulk; under ooo each of them is fed to the model (its timeline
/// needs every access), and every other counter stays the bulk path's.
#[test]
fn under_ooo_repeat_runs_are_fed_one_by_one() {
    for (k, fetch) in [(0u64, &[][..]), (1, &[FETCH_TLB][..])] {
        let mut o: Vec<&str> = vec!["timing.enabled=true"];
        o.extend_from_slice(fetch);
        let interval_spec = spec("tlb_only", &o);
        o.push("timing.kind=\"ooo\"");
        let ooo_spec = spec("tlb_only", &o);
        let batches = clustered_batches(10 + k, 20_000);
        let mut bulk = Machine::build(&interval_spec, 3).unwrap();
        let mut ooo = Machine::build(&ooo_spec, 3).unwrap();
        assert!(bulk.cpu().is_some_and(|c| c.bulk_runs));
        assert!(ooo.cpu().is_some_and(|c| !c.bulk_runs));
        for b in &batches {
            bulk.feed(b).unwrap();
            ooo.feed(b).unwrap();
        }
        let (a, b) = (bulk.stats(), ooo.stats());
        assert!(a.get("mmu.l1_dtlb_4k.hits") > 10_000, "runs formed");
        same_but_timing(&b, &a);
        assert!(b.get("core.cycles") > 0 && b.get("core.cycles") <= a.get("core.cycles"));
    }
}

/// A pointer chase over distinct pages, as a batch: loads `n` apart by more
/// than a page, each depending on the one before (`chained`) or on none.
fn chase(n: u64, chained: bool) -> AccessBatch {
    let mut b = AccessBatch::with_capacity(n as usize);
    for i in 0..n {
        let dep = if chained && i > 0 { 1 } else { 0 };
        b.push_dep(1, 0x10_0000_0000 + i * 0x1_2340, AccessKind::Load, 8, 0, dep);
    }
    b
}

fn ooo_stats(overrides: &[&str], batches: &[AccessBatch]) -> Stats {
    let mut o = vec!["timing.kind=\"ooo\""];
    o.extend_from_slice(overrides);
    let mut m = Machine::build(&spec("sandy_bridge", &o), 3).unwrap();
    for b in batches {
        m.feed(b).unwrap();
    }
    m.stats()
}

/// The stream's dependencies are what the model waits for: a chained chase
/// is the drawn chain of `dependency_fraction = 1` (each load on the one
/// before), and without the chain the misses overlap.
#[test]
fn stream_dependencies_serialise_a_pointer_chase() {
    let n = 3000;
    let chained = ooo_stats(&[], &[chase(n, true)]);
    let drawn = ooo_stats(&["timing.ooo.dependency_fraction=1"], &[chase(n, false)]);
    let free = ooo_stats(&[], &[chase(n, false)]);
    assert_eq!(chained.to_json().to_string(), drawn.to_json().to_string());
    // One walker serialises the walks of both; the chain also serialises the data misses.
    assert!(2 * chained.get("core.cycles") > 3 * free.get("core.cycles"), "{} vs {}", chained.get("core.cycles"), free.get("core.cycles"));
    same_but_timing(&chained, &free);
    // `fraction` ignores the stream's chain (and draws none by default).
    let ignored = ooo_stats(&["timing.ooo.dependencies=\"fraction\""], &[chase(n, true)]);
    assert_eq!(ignored.to_json().to_string(), free.to_json().to_string());
}

/// A dependency reaches back across batches, and one on a store, a fetch or
/// farther back than the model's horizon is dropped.
#[test]
fn stream_dependencies_cross_batches_and_drop_what_cannot_hold() {
    let whole = chase(5000, true);
    let mut parts = Vec::new();
    for r in [0..1, 1..777, 777..4096, 4096..5000] {
        let mut p = AccessBatch::with_capacity(r.len());
        p.copy_range(&whole, r);
        parts.push(p);
    }
    assert_eq!(ooo_stats(&[], &[whole.clone()]).to_json().to_string(), ooo_stats(&[], &parts).to_json().to_string());
    // Every load depends on a store just before it: nothing to wait for.
    let mut b = AccessBatch::with_capacity(4000);
    let mut free = AccessBatch::with_capacity(4000);
    for i in 0..2000u64 {
        let va = 0x10_0000_0000 + i * 0x1_2340;
        b.push(1, va + 64, AccessKind::Store, 8, 0);
        b.push_dep(0, va, AccessKind::Load, 8, 0, 1);
        free.push(1, va + 64, AccessKind::Store, 8, 0);
        free.push(0, va, AccessKind::Load, 8, 0);
    }
    assert_eq!(ooo_stats(&[], &[b]).to_json().to_string(), ooo_stats(&[], &[free]).to_json().to_string());
    // A dependency 10^6 records back is beyond any window: dropped.
    let mut far = chase(4000, false);
    far.dep = vec![0; 4000];
    far.dep[3999] = 1_000_000;
    assert_eq!(ooo_stats(&[], &[far]).to_json().to_string(), ooo_stats(&[], &[chase(4000, false)]).to_json().to_string());
}

/// The warm-up boundary splits a batch in two (`run::simulate_warm`): the
/// model's timeline and the records' dependencies run on across it, so the
/// counters after it are the full run's minus those at it, under ooo too.
#[test]
fn under_ooo_the_warm_up_boundary_keeps_dependencies() {
    struct One(Option<AccessBatch>);
    impl crate::stream::AccessSource for One {
        fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
            match self.0.take() {
                Some(b) => {
                    *out = b;
                    Ok(true)
                }
                None => Ok(false),
            }
        }
        fn progress(&self) -> (u64, u64) {
            (0, 0)
        }
        fn describe(&self) -> String {
            "memory:chase".into()
        }
        fn carries_dependencies(&self) -> bool {
            true
        }
    }
    let s = spec("sandy_bridge", &["timing.kind=\"ooo\""]);
    let (n, warm) = (6000u64, 2345u64);
    let warmed = crate::run::simulate_warm(&s, 3, &mut One(Some(chase(n, true))), crate::run::Warmup::Accesses(warm), &mut |_, _| true).unwrap();
    assert_eq!(warmed.dependencies.as_deref(), Some("from the stream"));
    let whole = chase(n, true);
    let (mut first, mut rest) = (AccessBatch::default(), AccessBatch::default());
    first.copy_range(&whole, 0..warm as usize);
    rest.copy_range(&whole, warm as usize..n as usize);
    let mut m = Machine::build(&s, 3).unwrap();
    m.feed(&first).unwrap();
    let at_warm = m.stats();
    m.begin_measurement();
    m.feed(&rest).unwrap();
    let after = m.stats();
    assert_eq!(after.to_json().to_string(), warmed.stats.to_json().to_string());
    let mut full = Machine::build(&s, 3).unwrap();
    full.feed(&whole).unwrap();
    let full = full.stats();
    for k in ["core.instructions", "core.loads", "walker.data_walks"] {
        assert_eq!(after.get(k), full.get(k) - at_warm.get(k), "{k}");
    }
    // The chain holds after the boundary: every load waits for the one before.
    let cut = crate::run::simulate_warm(&s, 3, &mut One(Some(chase(n, false))), crate::run::Warmup::Accesses(warm), &mut |_, _| true).unwrap();
    assert!(2 * after.get("core.cycles") > 3 * cut.stats.get("core.cycles"));
}

#[test]
fn stream_dependencies_required_from_a_source_without_them_is_a_config_error() {
    let s = spec("sandy_bridge", &["timing.kind=\"ooo\"", "timing.ooo.dependencies=\"stream\""]);
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 1000, 1 << 24, 1)).unwrap();
    let e = crate::run::simulate(&s, 0, &mut src, &mut |_, _| true).unwrap_err().to_string();
    assert!(e.contains("timing.ooo.dependencies") && e.contains("carries none") && e.contains("synthetic"), "{e}");
    let e = load(&ConfigSource::Preset("sandy_bridge".into()), &["timing.kind=\"ooo\"".into(), "timing.ooo.dependencies=\"trace\"".into()])
        .unwrap_err()
        .to_string();
    assert!(e.contains("timing.ooo.dependencies") && e.contains("auto") && e.contains("fraction"), "{e}");
    // Under auto, a synthetic stream's dependencies are the stated assumption.
    let s = spec("sandy_bridge", &["timing.kind=\"ooo\"", "timing.ooo.dependency_fraction=0.25"]);
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 1000, 1 << 24, 1)).unwrap();
    let out = crate::run::simulate_warm(&s, 0, &mut src, crate::run::Warmup::None, &mut |_, _| true).unwrap();
    assert_eq!(out.dependencies.as_deref(), Some("assumed: each load depends on the previous one with probability 0.25"));
}
