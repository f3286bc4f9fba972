use super::*;
use crate::config::{load, ConfigSource};
use proptest::prelude::*;
use std::collections::VecDeque;

fn mmu_from(overrides: &[&str], preset: &str) -> Mmu {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let spec = load(&ConfigSource::Preset(preset.into()), &o).unwrap();
    Mmu::build(&spec.mmu, 1).unwrap()
}

/// Page size of the page containing `va` in the test address space: the upper
/// half of every 1 GiB region is backed by 2 MiB pages.
fn size_of(va: u64) -> PageSize {
    if (va >> 29) & 1 == 1 {
        PageSize::Size2M
    } else {
        PageSize::Size4K
    }
}

/// Slow, obviously-correct model of an all-levels, LRU TLB hierarchy: each
/// structure is a list of sets, each set a recency-ordered list of tags.
struct RefTlb {
    level: u32,
    side: Side,
    sizes: Vec<PageSize>,
    sets: usize,
    ways: usize,
    content: Vec<VecDeque<u64>>,
    hits: u64,
    lookups: u64,
}

impl RefTlb {
    fn probe(&mut self, va: u64, asid: Asid) -> Option<PageSize> {
        self.lookups += 1;
        for &s in &self.sizes {
            let vpn = va >> s.shift();
            let set = &mut self.content[(vpn as usize) % self.sets];
            let t = tag(vpn, s, asid);
            if let Some(pos) = set.iter().position(|&x| x == t) {
                set.remove(pos);
                set.push_front(t);
                self.hits += 1;
                return Some(s);
            }
        }
        None
    }
    fn fill(&mut self, va: u64, asid: Asid, s: PageSize) {
        let vpn = va >> s.shift();
        let set = &mut self.content[(vpn as usize) % self.sets];
        let t = tag(vpn, s, asid);
        if let Some(pos) = set.iter().position(|&x| x == t) {
            set.remove(pos);
        } else if set.len() == self.ways {
            set.pop_back();
        }
        set.push_front(t);
    }
}

fn reference_for(spec: &crate::config::Spec) -> Vec<RefTlb> {
    spec.mmu
        .tlb
        .values()
        .map(|t| {
            let ways = t.ways.resolve(t.entries) as usize;
            let sets = t.entries as usize / ways;
            RefTlb { level: t.level, side: t.side, sizes: t.page_sizes.clone(), sets, ways, content: vec![VecDeque::new(); sets], hits: 0, lookups: 0 }
        })
        .collect()
}

/// Returns the 0-based hit level, or None for a miss (then fills every level).
fn ref_access(r: &mut [RefTlb], va: u64, asid: Asid, instr: bool) -> Option<usize> {
    let on_side = |t: &RefTlb| t.side == Side::Unified || t.side == if instr { Side::Instr } else { Side::Data };
    let max = r.iter().filter(|t| on_side(t)).map(|t| t.level).max().unwrap_or(0);
    for l in 1..=max {
        let mut hit = None;
        for t in r.iter_mut().filter(|t| t.level == l && on_side(t)) {
            if let Some(s) = t.probe(va, asid) {
                hit = Some(s);
            }
        }
        if let Some(s) = hit {
            for up in 1..l {
                if let Some(t) = r.iter_mut().find(|t| t.level == up && on_side(t) && t.sizes.contains(&s)) {
                    t.fill(va, asid, s);
                }
            }
            return Some(l as usize - 1);
        }
    }
    let s = size_of(va);
    for l in 1..=max {
        if let Some(t) = r.iter_mut().find(|t| t.level == l && on_side(t) && t.sizes.contains(&s)) {
            t.fill(va, asid, s);
        }
    }
    None
}

fn fast_access(m: &mut Mmu, va: u64, asid: Asid, instr: bool) -> Option<usize> {
    match m.lookup(va, asid, instr) {
        Lookup::Hit { level, size, .. } => {
            assert_eq!(size, size_of(va));
            Some(level)
        }
        Lookup::Miss { .. } | Lookup::SubpageFill { .. } => {
            m.fill_walk(va, asid, instr, size_of(va), va >> 12, false, &Neighbours::EMPTY);
            None
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, .. ProptestConfig::default() })]

    /// The hierarchy agrees with the reference access by access, on several
    /// presets (split per-size L1s, unified multi-size L2, FA structures).
    #[test]
    fn hierarchy_matches_reference(
        preset in prop::sample::select(vec!["sandy_bridge", "gtsm_ptlsim", "mosaic_gem5", "tlb_only"]),
        accesses in prop::collection::vec((0u64..(3u64 << 30), 0u16..3, any::<bool>(), 1usize..4), 1..1500),
        fill in prop::sample::select(vec!["all_levels", "victim"]),
    ) {
        // The reference models the all-levels policy; for `victim` the fast model is
        // checked against itself with the memo disabled (every lookup on the slow path).
        let spec = load(&ConfigSource::Preset(preset.into()), &[format!("mmu.fill=\"{fill}\"")]).unwrap();
        let mut fast = Mmu::build(&spec.mmu, 7).unwrap();
        // Every lookup on the general path: no memo, no plain-side probes.
        let mut plain = Mmu::build(&spec.mmu, 7).unwrap().without_plain_path();
        let mut slow = reference_for(&spec);
        for (va, asid, instr, repeat) in accesses {
            let instr = instr && fast.translates_instr();
            // Concentrate on few pages so that hits happen; repeats exercise the memo.
            let va = va & !((1 << 24) - 1) | (va & 0x3f_f000);
            for r in 0..repeat {
                let va = va + r as u64 * 8;
                let got = fast_access(&mut fast, va, asid, instr);
                plain.drop_memos();
                prop_assert_eq!(got, fast_access(&mut plain, va, asid, instr));
                if fill == "all_levels" {
                    prop_assert_eq!(got, ref_access(&mut slow, va, asid, instr));
                }
            }
        }
        // Repeats counted in bulk reach the counters, memos live or dropped.
        let counted = fast.counters();
        fast.drop_memos();
        prop_assert_eq!(&counted, &fast.counters());
        prop_assert_eq!(&counted, &plain.counters());
        if fill != "all_levels" {
            return Ok(());
        }
        for (f, s) in counted.iter().zip(slow.iter()) {
            prop_assert_eq!(f.lookups, s.lookups);
            prop_assert_eq!(f.hits, s.hits);
        }
    }
}

/// What one operation of [`memo_slots_change_no_answer_or_count`] saw.
fn memo_op(m: &mut Mmu, op: u8, va: u64, asid: Asid, instr: bool, forget: bool) -> (Option<usize>, bool, u64) {
    if forget {
        m.drop_memos();
    }
    match op {
        // Lookups (below 12: stores); a store's clean hit marks every
        // cached copy dirty, as the machine does.
        0..=37 => match m.lookup(va, asid, instr) {
            Lookup::Hit { level, dirty, .. } => {
                let write = op < 12 && !instr;
                if write && !dirty {
                    m.mark_dirty(va, asid, instr);
                }
                (Some(level), dirty, 0)
            }
            Lookup::Miss { .. } | Lookup::SubpageFill { .. } => {
                m.fill_walk(va, asid, instr, size_of(va), va >> 12, op < 12 && !instr, &Neighbours::EMPTY);
                (None, false, 0)
            }
        },
        38 => (None, false, m.invalidate_page(va, asid)),
        _ => (None, false, m.flush_asid(asid)),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// The per-set memos (and the memo a walk's fill leaves) change no
    /// answer and no counter: the same operations on a hierarchy whose memos
    /// are all forgotten before each one, on the general path, give the same
    /// hits, levels, dirty bits, shootdowns and counters. Few pages, so sets
    /// collide; stores, dirty marking, both page sizes, shootdowns, flushes,
    /// and fetches on machines that translate them.
    #[test]
    fn memo_slots_change_no_answer_or_count(
        preset in prop::sample::select(vec!["sandy_bridge", "gtsm_ptlsim", "mosaic_gem5", "tlb_only"]),
        ops in prop::collection::vec((0u8..40, 0u64..96, 0u16..2, any::<bool>(), 1usize..4), 1..2000),
        fill in prop::sample::select(vec!["all_levels", "victim"]),
    ) {
        let spec = load(&ConfigSource::Preset(preset.into()), &[format!("mmu.fill=\"{fill}\"")]).unwrap();
        let mut fast = Mmu::build(&spec.mmu, 7).unwrap();
        let mut slow = Mmu::build(&spec.mmu, 7).unwrap().without_plain_path();
        for (op, page, asid, instr, repeat) in ops {
            let instr = instr && fast.translates_instr();
            // 48 4 KiB pages and 48 2 MiB ones (bit 29), odd ones spaced so
            // that they collide in a set of every level-1 structure.
            let stride = if page & 1 == 1 { 16 } else { 1 };
            let va = if page < 48 {
                0x4000_0000_0000 + page * stride * 0x1000
            } else {
                // (at several offsets, so that their accesses use several memo slots)
                0x4000_2000_0000 + (page % 24) * (stride / 2).max(1) * (2 << 20) + (page % 7) * 0x1000
            };
            for r in 0..repeat {
                let va = va + r as u64 * 8;
                prop_assert_eq!(memo_op(&mut fast, op, va, asid, instr, false), memo_op(&mut slow, op, va, asid, instr, true));
            }
        }
        prop_assert_eq!(fast.counters(), slow.counters());
    }
}

/// A hit in a level-1 structure other than the memo's home (here the 2 MiB
/// one) reorders a set whose pages may be memoised in other slots: those
/// memos must go, or a repeat would leave its page least recent and the next
/// fill would evict it instead of the true least recent page.
#[test]
fn a_hit_outside_the_home_structure_forgets_the_other_slots() {
    let mut m = mmu_from(&[], "tlb_only");
    // Five 2 MiB pages in one set of the 8-set 2 MiB structure.
    let page = |k: u64| 0x4000_0000_0000 + k * (16 << 20);
    let access = |m: &mut Mmu, va: u64| match m.lookup(va, 0, false) {
        Lookup::Hit { level, .. } => Some(level),
        _ => {
            m.fill_walk(va, 0, false, PageSize::Size2M, va >> 12 & !511, false, &Neighbours::EMPTY);
            None
        }
    };
    for k in 0..4 {
        assert_eq!(access(&mut m, page(k)), None);
    }
    // Each at its own 4 KiB offset: its own memo slot.
    for k in 0..4 {
        assert_eq!(access(&mut m, page(k) + (k + 1) * 0x1000), Some(0));
    }
    // Page 0 again: most recent now, so the fill of page 4 evicts page 1.
    assert_eq!(access(&mut m, page(0) + 0x1000), Some(0));
    assert_eq!(access(&mut m, page(4)), None);
    assert_eq!(access(&mut m, page(0) + 0x6000), Some(0), "page 0, the most recent, is kept");
    assert_eq!(access(&mut m, page(1) + 0x7000), None, "page 1, the least recent, was evicted");
}

#[test]
fn l2_hit_fills_l1() {
    let mut m = mmu_from(&[], "tlb_only");
    let va = 0x7f00_0000_0000;
    assert!(matches!(m.lookup(va, 0, false), Lookup::Miss { .. }));
    m.fill_walk(va, 0, false, PageSize::Size4K, 42, false, &Neighbours::EMPTY);
    // Evict it from the 4-way L1 set by touching 4 other pages mapping to that set (16 sets).
    for k in 1..=4u64 {
        let other = va + k * 16 * 4096;
        m.fill_walk(other, 0, false, PageSize::Size4K, 100 + k, false, &Neighbours::EMPTY);
    }
    match m.lookup(va, 0, false) {
        Lookup::Hit { level, pfn_base, .. } => {
            assert_eq!(level, 1);
            assert_eq!(pfn_base, 42);
        }
        other => panic!("expected an L2 hit, got {other:?}"),
    }
    assert!(matches!(m.lookup(va, 0, false), Lookup::Hit { level: 0, .. }));
}

#[test]
fn asids_do_not_alias() {
    let mut m = mmu_from(&[], "tlb_only");
    m.fill_walk(0x1000, 1, false, PageSize::Size4K, 5, false, &Neighbours::EMPTY);
    assert!(matches!(m.lookup(0x1000, 2, false), Lookup::Miss { .. }));
    assert!(matches!(m.lookup(0x1000, 1, false), Lookup::Hit { pfn_base: 5, .. }));
    assert_eq!(m.flush_asid(1), 2);
    assert!(matches!(m.lookup(0x1000, 1, false), Lookup::Miss { .. }));
}

#[test]
fn two_meg_pages_skip_an_l2_without_2m_entries() {
    // Sandy Bridge's L2 TLB holds no 2 MiB entries: a 2 MiB translation lives only in L1.
    let mut m = mmu_from(&[], "sandy_bridge");
    m.fill_walk(0x4000_0000, 0, false, PageSize::Size2M, 512, false, &Neighbours::EMPTY);
    let l2 = m.tlbs().iter().find(|t| t.name == "l2_tlb").unwrap();
    assert_eq!(l2.occupancy(), 0);
    assert!(matches!(m.lookup(0x4012_3456, 0, false), Lookup::Hit { size: PageSize::Size2M, level: 0, .. }));
}

#[test]
fn level_latencies_add_up() {
    let mut m = mmu_from(&[], "sandy_bridge");
    assert_eq!(m.lookup(0x5000, 0, false), Lookup::Miss { latency: 7 });
}

#[test]
fn victim_policy_cascades_evictions_and_moves_hits_up() {
    let mut m = mmu_from(&["mmu.fill=\"victim\""], "tlb_only");
    let va = 0x10_0000_0000u64;
    m.fill_walk(va, 0, false, PageSize::Size4K, 1, false, &Neighbours::EMPTY);
    let l2 = |m: &Mmu| m.tlbs().iter().find(|t| t.name == "l2_tlb").unwrap().occupancy();
    assert_eq!(l2(&m), 0, "a walk fills only level 1");
    for k in 1..=4u64 {
        m.fill_walk(va + k * 16 * 4096, 0, false, PageSize::Size4K, 1 + k, false, &Neighbours::EMPTY);
    }
    assert_eq!(l2(&m), 1, "the L1 victim moved to L2");
    assert!(matches!(m.lookup(va, 0, false), Lookup::Hit { level: 1, pfn_base: 1, .. }));
    // Moved up: L2 gave it away, and L1's victim took its place.
    assert!(matches!(m.lookup(va, 0, false), Lookup::Hit { level: 0, .. }));
    assert_eq!(l2(&m), 1);
}

#[test]
fn dirty_marks_every_copy() {
    let mut m = mmu_from(&[], "tlb_only");
    m.fill_walk(0x9000, 0, false, PageSize::Size4K, 9, false, &Neighbours::EMPTY);
    assert!(matches!(m.lookup(0x9000, 0, false), Lookup::Hit { dirty: false, .. }));
    m.mark_dirty(0x9000, 0, false);
    assert!(matches!(m.lookup(0x9000, 0, false), Lookup::Hit { dirty: true, .. }));
}

/// The aligned run of 8 pages around `vpn`, page k at frame `base + k`.
fn contiguous_run(vpn: u64, len: u32, base: u64) -> Neighbours {
    let mut nb = Neighbours::EMPTY;
    nb.first_vpn = vpn & !(len as u64 - 1);
    nb.len = len;
    for k in 0..len as usize {
        nb.pfn[k] = base + k as u64;
    }
    nb
}

#[test]
fn set_assoc_is_the_default_organisation_and_wants_no_neighbours() {
    for p in ["sandy_bridge", "gtsm_ptlsim", "mosaic_gem5", "tlb_only"] {
        let spec = load(&ConfigSource::Preset(p.into()), &[]).unwrap();
        let explicit: Vec<String> =
            spec.mmu.tlb.keys().map(|n| format!("mmu.tlb.{n}.organisation=\"set_assoc\"")).collect();
        assert_eq!(spec, load(&ConfigSource::Preset(p.into()), &explicit).unwrap(), "{p}");
        let m = Mmu::build(&spec.mmu, 1).unwrap();
        assert!(m.tlbs().iter().all(|t| t.organisation() == "set_assoc"));
        assert_eq!(m.neighbours_wanted(), 0, "{p}");
    }
}

#[test]
fn neighbours_wanted_is_the_largest_run_any_structure_uses() {
    let m = mmu_from(&["mmu.tlb.l2_tlb.organisation={kind=\"coalescing\", group=32, fill_from=\"group\"}"], "tlb_only");
    assert_eq!(m.neighbours_wanted(), 32);
    let m = mmu_from(&["mmu.tlb.l2_tlb.organisation=\"coalescing\""], "tlb_only");
    assert_eq!(m.neighbours_wanted(), 8);
}

#[test]
fn memo_is_off_on_a_side_with_a_coalescing_level_1_structure() {
    let mut m = mmu_from(&["mmu.tlb.l1_dtlb_4k.organisation=\"coalescing\""], "tlb_only");
    m.fill_walk(0x5000, 0, false, PageSize::Size4K, 5, false, &Neighbours::EMPTY);
    for _ in 0..3 {
        assert!(matches!(m.lookup(0x5008, 0, false), Lookup::Hit { level: 0, pfn_base: 5, .. }));
        assert_eq!(m.memo(false, 0x5008, 0), None);
    }
    let l1 = m.tlbs().iter().find(|t| t.name == "l1_dtlb_4k").unwrap();
    assert_eq!((l1.stats.lookups, l1.stats.hits), (3, 3));
    // A coalescing structure below level 1 leaves the memo on.
    let mut m = mmu_from(&["mmu.tlb.l2_tlb.organisation=\"coalescing\""], "tlb_only");
    m.fill_walk(0x5000, 0, false, PageSize::Size4K, 5, false, &Neighbours::EMPTY);
    assert!(matches!(m.lookup(0x5008, 0, false), Lookup::Hit { level: 0, .. }));
    assert!(m.memo(false, 0x5008, 0).is_some());
}

#[test]
fn a_coalesced_l2_hit_fills_l1_with_the_page_and_counts_as_coalesced() {
    let mut m = mmu_from(&["mmu.tlb.l2_tlb.organisation=\"coalescing\""], "tlb_only");
    let vpn = 0x7f00_0000_0000u64 >> 12;
    m.fill_walk(vpn << 12, 0, false, PageSize::Size4K, 1000, false, &contiguous_run(vpn, 8, 1000));
    let l1_occupancy = |m: &Mmu| m.tlbs().iter().find(|t| t.name == "l1_dtlb_4k").unwrap().occupancy();
    assert_eq!(l1_occupancy(&m), 1, "L1 holds the walked page only");
    match m.lookup((vpn + 5) << 12 | 0x123, 0, false) {
        Lookup::Hit { level, pfn_base, size, .. } => {
            assert_eq!((level, pfn_base, size), (1, 1005, PageSize::Size4K));
        }
        other => panic!("expected an L2 hit, got {other:?}"),
    }
    assert_eq!(l1_occupancy(&m), 2, "the hit page moved up");
    assert!(matches!(m.lookup((vpn + 5) << 12, 0, false), Lookup::Hit { level: 0, pfn_base: 1005, .. }));
    let mut c = crate::stats::Collector::default();
    m.visit(&mut c);
    assert_eq!(c.stats.get("l2_tlb.coalesced_hits"), 1);
    assert_eq!(c.stats.get("l2_tlb.subpage_misses"), 0);
    assert_eq!(c.stats.get("l2_tlb.fills"), 1);
}

#[test]
fn a_coalescing_l1_takes_the_entry_of_a_coalescing_l2_hit() {
    let mut m = mmu_from(
        &["mmu.tlb.l1_dtlb_4k.organisation=\"coalescing\"", "mmu.tlb.l2_tlb.organisation={kind=\"coalescing\", group=16, fill_from=\"group\"}"],
        "tlb_only",
    );
    let vpn = 0x40_0000u64;
    m.fill_walk(vpn << 12, 0, false, PageSize::Size4K, 64, false, &contiguous_run(vpn, 16, 64));
    // Push the group out of the 4-way L1 set (16 sets of 8-page groups).
    for k in 1..=4u64 {
        let other = vpn + k * 16 * 8;
        m.fill_walk(other << 12, 0, false, PageSize::Size4K, 5000 + k, false, &Neighbours::EMPTY);
    }
    assert!(matches!(m.lookup((vpn + 9) << 12, 0, false), Lookup::Hit { level: 1, pfn_base: 73, .. }));
    // L1 now holds the sub-pages of the L2 entry in its line (pages 8..16), not only page 9.
    assert!(matches!(m.lookup((vpn + 12) << 12, 0, false), Lookup::Hit { level: 0, pfn_base: 76, .. }));
    assert!(matches!(m.lookup((vpn + 3) << 12, 0, false), Lookup::Hit { level: 1, pfn_base: 67, .. }));
}

#[test]
fn shootdown_and_flush_reach_every_organisation() {
    let mut m = mmu_from(&["mmu.tlb.l2_tlb.organisation=\"coalescing\""], "tlb_only");
    let vpn = 0x1000u64;
    m.fill_walk(vpn << 12, 3, false, PageSize::Size4K, 200, false, &contiguous_run(vpn, 8, 200));
    // The L1 entry and the L2 sub-page; then only the coalesced L2 sub-page of a neighbour.
    assert_eq!(m.invalidate_page(vpn << 12, 3), 2);
    assert_eq!(m.invalidate_page((vpn + 1) << 12, 3), 1);
    assert!(matches!(m.lookup((vpn + 1) << 12, 3, false), Lookup::Miss { .. }));
    m.mark_dirty((vpn + 2) << 12, 3, false);
    assert!(matches!(m.lookup((vpn + 2) << 12, 3, false), Lookup::Hit { level: 1, dirty: true, .. }));
    assert_eq!(m.flush_asid(3), 2, "the L2 group entry and the L1 copy");
    assert!(matches!(m.lookup((vpn + 2) << 12, 3, false), Lookup::Miss { .. }));
}

fn one_structure(entries: u32, ways: crate::config::spec::Ways, organisation: &str) -> Result<Tlb> {
    let spec = crate::config::spec::TlbSpec {
        level: 1,
        side: crate::config::spec::Side::Data,
        page_sizes: vec![PageSize::Size4K],
        entries,
        ways,
        latency: 0,
        replacement: crate::registry::MechanismSpec { kind: "lru".into(), params: toml::Table::new() },
        organisation: crate::registry::MechanismSpec { kind: "set_assoc".into(), params: organisation.parse().unwrap() },
    };
    Tlb::build("t", &spec, FillPolicy::AllLevels, 1)
}

/// The gem5 mosaic fork's vanilla TLB groups `q` consecutive pages into one
/// set; off by default, where consecutive pages go to consecutive sets.
#[test]
fn the_vanilla_index_quirk_groups_consecutive_pages_into_one_set() {
    use crate::config::spec::Ways;
    let fill = |t: &mut Tlb, vpn: u64| t.fill(&Fill { va: vpn << 12, asid: 0, size: PageSize::Size4K, pfn: vpn, dirty: false }, &Neighbours::EMPTY, false);
    // Direct-mapped, 8 sets.
    let mut plain = one_structure(8, Ways::N(1), "").unwrap();
    let mut quirk = one_structure(8, Ways::N(1), "vanilla_index_quirk = 4").unwrap();
    for vpn in 0..4 {
        fill(&mut plain, vpn);
        fill(&mut quirk, vpn);
    }
    assert_eq!((plain.occupancy(), plain.stats.evictions), (4, 0));
    assert_eq!((quirk.occupancy(), quirk.stats.evictions), (1, 3), "pages 0..3 share set 0");
    assert!(matches!(quirk.lookup(3 << 12, 0), Probe::Hit { pfn: 3, .. }));
    // set = (va >> (12 + 2)) mod 8: pages 4..7 go to set 1, page 32 back to set 0.
    fill(&mut quirk, 5);
    fill(&mut quirk, 32);
    assert_eq!(quirk.occupancy(), 2);
    assert!(matches!(quirk.lookup(3 << 12, 0), Probe::Miss));
    assert!(matches!(quirk.lookup(5 << 12, 0), Probe::Hit { pfn: 5, .. }));
    // A quirk of 1 is the plain index.
    let mut one = one_structure(8, Ways::N(1), "vanilla_index_quirk = 1").unwrap();
    for vpn in 0..4 {
        fill(&mut one, vpn);
    }
    assert_eq!(one.stats, plain.stats);
}

#[test]
fn the_vanilla_index_quirk_must_be_a_power_of_two_up_to_64() {
    use crate::config::spec::Ways;
    for q in [0, 3, 128] {
        let e = one_structure(8, Ways::N(1), &format!("vanilla_index_quirk = {q}")).unwrap_err().to_string();
        assert!(e.contains("mmu.tlb.t.organisation.vanilla_index_quirk") && e.contains("power of two"), "{e}");
    }
    // Absent from the resolved config when not given (the resolved config, and its hash, are as before).
    let spec = load(&ConfigSource::Preset("mosaic_gem5".into()), &[]).unwrap();
    assert!(!spec.to_toml().contains("vanilla_index_quirk"));
    let quirk = load(&ConfigSource::Preset("mosaic_gem5".into()), &["mmu.tlb.dtlb.organisation={ kind = \"set_assoc\", vanilla_index_quirk = 16 }".to_string()]).unwrap();
    assert!(quirk.to_toml().contains("vanilla_index_quirk = 16"));
}

/// A mosaic level-1 structure's sub-page miss: the hierarchy probes the
/// next level as for any miss; if that misses too, the lookup asks for the
/// page without a walk, and a fill like a walk's (no neighbours) makes the
/// sub-page valid in the entry without an eviction.
#[test]
fn a_mosaic_sub_page_miss_asks_for_the_page_without_a_walk() {
    let mut m = mmu_from(&["mmu.tlb.l1_dtlb_4k.organisation={ kind = \"mosaic\", arity = 8 }"], "tlb_only");
    let vpn = 0x7f00_0000u64;
    let mut nb = contiguous_run(vpn, 8, 100);
    nb.pfn[5] = NOT_PRESENT;
    m.fill_walk(vpn << 12, 0, false, PageSize::Size4K, 100, false, &nb);
    assert!(matches!(m.lookup((vpn + 3) << 12, 0, false), Lookup::Hit { level: 0, pfn_base: 103, .. }));
    assert_eq!(m.memo(false, (vpn + 3) << 12, 0), None, "a mosaic level 1 turns the memo off");
    // Page 5 is in neither level: no walk needed for the mosaic entry.
    assert_eq!(m.lookup((vpn + 5) << 12, 0, false), Lookup::SubpageFill { latency: 0 });
    m.fill_walk((vpn + 5) << 12, 0, false, PageSize::Size4K, 555, false, &Neighbours::EMPTY);
    assert!(matches!(m.lookup((vpn + 5) << 12, 0, false), Lookup::Hit { level: 0, pfn_base: 555, .. }));
    let l1 = m.tlbs().iter().find(|t| t.name == "l1_dtlb_4k").unwrap();
    assert_eq!((l1.occupancy(), l1.stats.evictions, l1.stats.misses), (1, 0, 1));
    // Page 6 is in the L2 as well (a walk filled it there): an L2 hit, as for any L1 miss.
    m.fill_walk((vpn + 6) << 12, 0, false, PageSize::Size4K, 106, false, &Neighbours::EMPTY);
    let l1 = m.tlbs().iter().position(|t| t.name == "l1_dtlb_4k").unwrap();
    m.tlbs[l1].invalidate_page((vpn + 6) << 12, 0);
    assert!(matches!(m.lookup((vpn + 6) << 12, 0, false), Lookup::Hit { level: 1, pfn_base: 106, .. }));
    assert!(matches!(m.lookup((vpn + 6) << 12, 0, false), Lookup::Hit { level: 0, pfn_base: 106, .. }));
    // Under `subpage_miss = "walk"` the same lookup is a plain miss.
    let mut w = mmu_from(&["mmu.tlb.l1_dtlb_4k.organisation={ kind = \"mosaic\", arity = 8, subpage_miss = \"walk\" }"], "tlb_only");
    w.fill_walk(vpn << 12, 0, false, PageSize::Size4K, 100, false, &nb);
    assert_eq!(w.lookup((vpn + 5) << 12, 0, false), Lookup::Miss { latency: 0 });
}
