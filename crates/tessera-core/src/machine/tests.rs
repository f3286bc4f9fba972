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

/// An instruction TLB added to a machine that has none (a new structure is
/// given whole; see `config::apply_override`).
const FETCH_TLB: &str = "mmu.tlb.l1_itlb={ level = 1, side = \"instr\", page_sizes = [\"4k\"], entries = 16, ways = 4 }";

#[test]
fn bulk_counted_repeat_runs_match_the_per_access_path() {
    let fetch_tlb = [FETCH_TLB];
    let configs: [&[&str]; 3] = [&[], &["timing.enabled=true"], &fetch_tlb];
    for (k, overrides) in configs.iter().enumerate() {
        let sp = spec("tlb_only", overrides);
        let batches = clustered_batches(k as u64, 20_000);
        let mut bulk = Machine::build(&sp, 3).unwrap();
        let mut each = Machine::build(&sp, 3).unwrap().without_bulk_runs();
        assert!(bulk.cpu().is_some_and(|c| c.bulk_runs));
        for b in &batches {
            bulk.feed(b).unwrap();
            each.feed(b).unwrap();
        }
        let (a, b) = (bulk.stats(), each.stats());
        assert!(a.get("mmu.l1_dtlb_4k.hits") > 10_000, "runs formed");
        assert_eq!(a.counters, b.counters, "config {overrides:?}");
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
                assert_eq!(bulk.mmu().memo(false), None, "config {overrides:?}");
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
    for policy in ["lru", "clock", "linux_like"] {
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
    for (policy, name) in [("clock", "os.eviction.clock.scanned"), ("linux_like", "os.eviction.linux_like.scanned")] {
        let ev = format!("os.eviction={policy}");
        let sp = spec("tlb_only", &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", &ev]);
        let s = run(&sp, Pattern::Uniform, 40_000, 12 << 20);
        assert!(s.get("os.evictions") > 0, "{policy}");
        assert!(s.get(name) > 0, "{name}");
    }
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
