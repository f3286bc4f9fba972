use super::*;
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
        assert!(bulk.bulk_runs);
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
                assert_eq!(bulk.mmu.memo(false), None, "config {overrides:?}");
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
