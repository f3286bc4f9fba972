use super::*;
use crate::config::spec::{FillPolicy, Ways};
use crate::tlb::test_support::{fill4k, hit, run, spec};
use crate::tlb::{Tlb, TlbStats};
use proptest::prelude::*;

const K4: PageSize = PageSize::Size4K;
const K64: PageSize = PageSize::Size64K;
const M2: PageSize = PageSize::Size2M;
const G1: PageSize = PageSize::Size1G;

fn build(entries: u32, ways: Ways, sizes: &[PageSize], params: &str) -> Tlb {
    Tlb::build("t", &spec(entries, ways, sizes, "mosaic", params, "lru"), FillPolicy::AllLevels, 1).unwrap()
}

fn org_stats(t: &Tlb) -> MosaicStats {
    match &t.org {
        crate::registry::AnyTlbOrganisation::Mosaic(m) => m.stats.clone(),
        other => panic!("not mosaic: {other:?}"),
    }
}

#[test]
fn an_entry_miss_builds_the_toc_from_the_present_pages_of_the_group() {
    let mut t = build(16, Ways::N(4), &[K4], "arity = 8");
    // Pages 0x100..0x108 at scattered frames, page 0x106 absent, page 0x101 dirty.
    let nb = run(0x103, 8, 0b10, |k| (k != 6).then_some(900 - 7 * k));
    assert_eq!(t.lookup(0x103 << 12, 0), Probe::Miss);
    fill4k(&mut t, 0x103, 0, 900 - 21, &nb);
    assert_eq!(t.lookup(0x103 << 12 | 0x80, 0), hit(879));
    assert_eq!(t.lookup(0x100 << 12, 0), hit(900), "no physical contiguity needed");
    assert_eq!(t.lookup(0x101 << 12, 0), Probe::Hit { pfn: 893, size: K4, dirty: true });
    assert_eq!(t.lookup(0x107 << 12, 0), hit(851));
    assert_eq!(t.lookup(0x106 << 12, 0), Probe::SubpageFill, "not present: a sub-page miss");
    assert_eq!(t.lookup(0x108 << 12, 0), Probe::Miss, "another mosaic page");
    assert_eq!(t.lookup(0x100 << 12, 1), Probe::Miss, "another address space");
    assert_eq!(t.occupancy(), 1);
    let s = org_stats(&t);
    assert_eq!((s.entry_misses, s.subpage_misses, s.toc_hits), (3, 1, 3));
    assert_eq!((t.stats.lookups, t.stats.hits, t.stats.misses, t.stats.fills), (8, 4, 4, 1));
}

#[test]
fn a_sub_page_miss_fills_that_page_alone_without_eviction() {
    // One set of two ways, arity 4: groups 0, 1 and 2 compete.
    let mut t = build(2, Ways::N(2), &[K4], "arity = 4");
    fill4k(&mut t, 0, 0, 100, &run(0, 4, 0, |k| (k == 0).then_some(100)));
    fill4k(&mut t, 4, 0, 200, &Neighbours::EMPTY);
    assert_eq!(t.lookup(1 << 12, 0), Probe::SubpageFill);
    // The hierarchy fetched page 1's translation: it joins group 0's entry, neighbours ignored.
    t.fill(&Fill { va: 1 << 12, asid: 0, size: K4, pfn: 555, dirty: false }, &run(1, 4, 0, |k| Some(300 + k)), false);
    assert_eq!(t.stats.evictions, 0);
    assert_eq!(t.occupancy(), 2);
    assert_eq!(t.lookup(1 << 12, 0), hit(555));
    assert_eq!(t.lookup(2 << 12, 0), Probe::SubpageFill, "only the missed page became valid");
    // The sub-page miss made group 0 most recent: group 2 evicts group 1.
    fill4k(&mut t, 8, 0, 700, &Neighbours::EMPTY);
    assert_eq!(t.stats.evictions, 1);
    assert_eq!(t.lookup(0, 0), hit(100));
    assert_eq!(t.lookup(4 << 12, 0), Probe::Miss);
}

#[test]
fn with_subpage_miss_walk_the_walk_rebuilds_the_toc() {
    let mut t = build(2, Ways::N(2), &[K4], "arity = 4\nsubpage_miss = \"walk\"");
    fill4k(&mut t, 0, 0, 100, &run(0, 4, 0, |k| (k == 0).then_some(100)));
    assert_eq!(t.lookup(1 << 12, 0), Probe::SubpageMiss);
    // The walk sees pages 1 and 3 now mapped.
    fill4k(&mut t, 1, 0, 101, &run(1, 4, 0, |k| (k != 2).then_some(100 + k)));
    assert_eq!(t.lookup(3 << 12, 0), hit(103));
    assert_eq!(t.lookup(0, 0), hit(100), "kept");
    assert_eq!(t.lookup(2 << 12, 0), Probe::SubpageMiss);
    assert_eq!(t.stats.evictions, 0);
}

#[test]
fn sets_are_indexed_by_mosaic_page_number() {
    // Direct-mapped, 4 sets, arity 8: set = (va >> 15) mod 4.
    let mut t = build(4, Ways::N(1), &[K4], "arity = 8");
    fill4k(&mut t, 0, 0, 1, &Neighbours::EMPTY);
    fill4k(&mut t, 8, 0, 2, &Neighbours::EMPTY);
    fill4k(&mut t, 7, 0, 3, &Neighbours::EMPTY);
    assert_eq!((t.occupancy(), t.stats.evictions), (2, 0), "pages 0 and 7 share an entry; page 8 is the next set");
    fill4k(&mut t, 32, 0, 4, &Neighbours::EMPTY);
    assert_eq!(t.stats.evictions, 1, "mosaic page 4 maps to set 0");
    assert_eq!(t.lookup(0, 0), Probe::Miss);
    assert_eq!(t.lookup(8 << 12, 0), hit(2));
}

#[test]
fn invalidation_clears_one_sub_page_and_frees_the_entry_with_the_last() {
    let mut t = build(16, Ways::N(4), &[K4], "arity = 4");
    fill4k(&mut t, 0x20, 0, 50, &run(0x20, 4, 0, |k| (k < 2).then_some(50 + k)));
    assert_eq!(t.invalidate_page(0x21 << 12, 0), 1);
    assert_eq!(t.invalidate_page(0x21 << 12, 0), 0);
    assert_eq!(t.lookup(0x21 << 12, 0), Probe::SubpageFill);
    assert_eq!(t.occupancy(), 1);
    assert_eq!(t.invalidate_page(0x20 << 12, 0), 1);
    assert_eq!(t.occupancy(), 0);
    assert_eq!(t.lookup(0x20 << 12, 0), Probe::Miss);
    let s = org_stats(&t);
    assert_eq!((s.subpage_invalidations, s.entries_freed), (2, 1));
}

#[test]
fn dirty_bits_are_per_sub_page() {
    let mut t = build(16, Ways::N(4), &[K4], "arity = 4");
    fill4k(&mut t, 0x20, 0, 50, &run(0x20, 4, 0, |k| Some(80 - k)));
    t.mark_dirty(0x22 << 12, 0);
    assert_eq!(t.lookup(0x22 << 12, 0), Probe::Hit { pfn: 78, size: K4, dirty: true });
    assert_eq!(t.lookup(0x23 << 12, 0), hit(77));
}

#[test]
fn a_large_page_makes_every_sub_page_valid_and_its_shootdown_clears_them_all() {
    let mut t = build(64, Ways::Full, &[K4, M2], "arity = 16");
    let base = 0x4000_0000u64;
    t.fill(&Fill { va: base + 0x3_4567, asid: 0, size: M2, pfn: 0x8000, dirty: true }, &Neighbours::EMPTY, true);
    // Every sub-page of the group is valid and reports the large page.
    for k in 0..16u64 {
        let va = base + (0x30 + k) * 4096;
        assert_eq!(t.lookup(va, 0), Probe::Hit { pfn: 0x8000, size: M2, dirty: true }, "page {k}");
    }
    assert_eq!(org_stats(&t).toc_hits, 0, "a large page's sub-pages are its own");
    // Another group of the same 2 MiB page needs its own entry.
    assert_eq!(t.lookup(base, 0), Probe::Miss);
    t.fill(&Fill { va: base, asid: 0, size: M2, pfn: 0x8000, dirty: false }, &Neighbours::EMPTY, true);
    assert_eq!(t.occupancy(), 2);
    // A 4 KiB group nearby stays.
    fill4k(&mut t, (base >> 12) + 512, 0, 9, &Neighbours::EMPTY);
    assert_eq!(t.invalidate_page(base, 0), 32);
    assert_eq!(t.occupancy(), 1);
    assert_eq!(t.lookup(base + 0x3_4567, 0), Probe::Miss);
}

#[test]
fn a_64k_page_covers_part_of_a_wider_group() {
    let mut t = build(16, Ways::N(4), &[K4, K64], "arity = 32");
    // Group of 4 KiB pages 0x20..0x40; the 64 KiB page 0x30..0x40 at frame 0x700.
    t.fill(&Fill { va: 0x35 << 12, asid: 0, size: K64, pfn: 0x700, dirty: false }, &Neighbours::EMPTY, true);
    assert_eq!(t.lookup(0x3f << 12, 0), Probe::Hit { pfn: 0x700, size: K64, dirty: false });
    assert_eq!(t.lookup(0x2f << 12, 0), Probe::SubpageFill);
    fill4k(&mut t, 0x2f, 0, 5, &Neighbours::EMPTY);
    assert_eq!(t.lookup(0x2f << 12, 0), hit(5));
    // Shooting the 64 KiB page down keeps the 4 KiB page of the same entry.
    assert_eq!(t.invalidate_page(0x30 << 12, 0), 16);
    assert_eq!(t.lookup(0x2f << 12, 0), hit(5));
    assert_eq!(t.lookup(0x30 << 12, 0), Probe::SubpageFill);
}

#[test]
fn a_1g_shootdown_scans_the_entries() {
    let mut t = build(8, Ways::N(2), &[K4, G1], "arity = 4");
    let base = 1u64 << 30;
    for k in [0u64, 77, 262_000] {
        t.fill(&Fill { va: base + (k << 12), asid: 2, size: G1, pfn: 1 << 18, dirty: false }, &Neighbours::EMPTY, true);
    }
    // Another set than the first and last group's (set = mosaic page mod 4).
    fill4k(&mut t, ((2 * base) >> 12) + 4, 2, 3, &Neighbours::EMPTY);
    assert_eq!(t.lookup(base + (77 << 12), 2), Probe::Hit { pfn: 1 << 18, size: G1, dirty: false });
    assert_eq!(t.invalidate_page(base, 2), 12);
    assert_eq!(t.occupancy(), 1);
}

#[test]
fn entry_neighbours_hand_up_the_4k_sub_pages() {
    let t = {
        let mut t = build(16, Ways::N(4), &[K4], "arity = 8");
        fill4k(&mut t, 0x43, 0, 7, &run(0x43, 8, 0b0100_0000, |k| (k % 3 != 1).then_some(20 + k)));
        t
    };
    let mut out = Neighbours::EMPTY;
    t.org.entry_neighbours(0x45 << 12, 0, &mut out);
    assert_eq!((out.first_vpn, out.len), (0x40, 8));
    assert_eq!(out.get(0x43), Some((7, false)));
    assert_eq!(out.get(0x44), None);
    assert_eq!(out.get(0x46), Some((26, true)));
    assert_eq!(out.get(0x47), None);
    t.org.entry_neighbours(0x48 << 12, 0, &mut out);
    assert_eq!(out.len, 0);
}

#[test]
fn the_arity_must_be_a_power_of_two_from_4_to_64() {
    for (a, ok) in [(0, false), (1, false), (2, false), (4, true), (6, false), (32, true), (64, true), (128, false)] {
        let r = Tlb::build("t", &spec(16, Ways::N(4), &[K4], "mosaic", &format!("arity = {a}"), "lru"), FillPolicy::AllLevels, 1);
        match (r, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => {
                let e = e.to_string();
                assert!(e.contains("mmu.tlb.t.organisation.arity") && e.contains("power of two"), "{e}");
            }
            (r, _) => panic!("arity {a}: {:?}", r.map(|_| ())),
        }
    }
}

#[test]
fn bad_mosaic_structures_are_config_errors() {
    let e = Tlb::build("t", &spec(16, Ways::N(4), &[M2], "mosaic", "", "lru"), FillPolicy::AllLevels, 1).unwrap_err().to_string();
    assert!(e.contains("mmu.tlb.t.organisation") && e.contains("4 KiB"), "{e}");
    let e = Tlb::build("t", &spec(16, Ways::N(4), &[K4], "mosaic", "", "lru"), FillPolicy::Victim, 1).unwrap_err().to_string();
    assert!(e.contains("mmu.fill") && e.contains("mosaic"), "{e}");
    let e = Tlb::build("t", &spec(1 << 20, Ways::N(4), &[K4], "mosaic", "arity = 64", "lru"), FillPolicy::AllLevels, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mmu.tlb.t.organisation.arity") && e.contains("entries"), "{e}");
    let e = Tlb::build("t", &spec(16, Ways::N(4), &[K4], "mosaic", "subpage_miss = \"skip\"", "lru"), FillPolicy::AllLevels, 1)
        .unwrap_err()
        .to_string();
    assert!(e.contains("mmu.tlb.t.organisation.subpage_miss") && e.contains("walk"), "{e}");
}

#[test]
fn not_memo_safe_and_wants_the_whole_group() {
    for a in [4u32, 8, 16, 32, 64] {
        let t = build(16, Ways::N(4), &[K4], &format!("arity = {a}"));
        assert!(!t.org.memo_safe());
        assert!(!t.org.moves_entries());
        assert_eq!(t.org.neighbours_wanted(), a);
    }
}

// ---------------------------------------------------------------------------
// Reach: a mosaic TLB whose pages are all mapped is a TLB of mosaic pages.
// ---------------------------------------------------------------------------

/// With every page of every group mapped, a Mosaic-a structure of E entries
/// is exactly a one-page-per-entry structure of E entries over pages a
/// times larger (reach E × a pages): fed the same stream, with each address
/// scaled to its mosaic page, it hits, misses and evicts alike, under LRU
/// and (same seed) random replacement, at every associativity.
#[test]
fn a_fully_mapped_mosaic_tlb_is_a_tlb_of_arity_times_larger_pages() {
    use rand::{Rng, SeedableRng};
    for arity in [4u32, 16, 64] {
        for (entries, ways) in [(64u32, Ways::N(1)), (64, Ways::N(4)), (64, Ways::Full)] {
            for repl in ["lru", "random"] {
                let mut mosaic = Tlb::build("t", &spec(entries, ways, &[K4], "mosaic", &format!("arity = {arity}"), repl), FillPolicy::AllLevels, 9).unwrap();
                let mut plain = Tlb::build("t", &spec(entries, ways, &[K4], "set_assoc", "", repl), FillPolicy::AllLevels, 9).unwrap();
                let mut rng = rand::rngs::StdRng::seed_from_u64(arity as u64);
                let log2 = arity.trailing_zeros();
                for _ in 0..20_000 {
                    // Page numbers over a footprint of 3 × the mosaic reach.
                    let vpn = rng.gen_range(0..3 * entries as u64 * arity as u64) + 0x10_0000;
                    let asid = rng.gen_range(0..2u16);
                    let frame = |v: u64| v.wrapping_mul(0x9e37_79b9) % 100_000;
                    if mosaic.lookup(vpn << 12, asid) == Probe::Miss {
                        let nb = run(vpn, arity, 0, |k| Some(frame((vpn & !(arity as u64 - 1)) + k)));
                        fill4k(&mut mosaic, vpn, asid, frame(vpn), &nb);
                    }
                    let big = vpn >> log2;
                    if plain.lookup(big << 12, asid) == Probe::Miss {
                        plain.fill(&Fill { va: big << 12, asid, size: K4, pfn: 1, dirty: false }, &Neighbours::EMPTY, true);
                    }
                }
                let tag = format!("arity {arity}, {entries} entries, {ways:?}, {repl}");
                assert_eq!(mosaic.stats, plain.stats, "{tag}");
                assert_eq!(org_stats(&mosaic).subpage_misses, 0, "{tag}");
                assert!(mosaic.stats.hits > 0 && mosaic.stats.evictions > 0, "{tag}");
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The naive reference model.
// ---------------------------------------------------------------------------

/// One sub-page: frame, dirty, installed by its own fill, size of the large page it belongs to.
type RefSub = Option<(u64, bool, bool, Option<PageSize>)>;

#[derive(Clone, Debug)]
struct RefEntry {
    asid: Asid,
    mvpn: u64,
    sub: Vec<RefSub>,
}

/// A mosaic TLB written the plain way: each set a list of entries, most
/// recently used first (LRU), each entry a list of optional sub-pages.
struct RefMosaic {
    arity: u64,
    sets: u64,
    ways: usize,
    walk: bool,
    sizes: Vec<PageSize>,
    content: Vec<Vec<RefEntry>>,
    stats: TlbStats,
    org: MosaicStats,
}

impl RefMosaic {
    fn find(&self, vpn: u64, asid: Asid) -> (usize, Option<usize>, usize) {
        let mvpn = vpn / self.arity;
        let set = (mvpn % self.sets) as usize;
        let pos = self.content[set].iter().position(|e| e.asid == asid && e.mvpn == mvpn);
        (set, pos, (vpn % self.arity) as usize)
    }

    fn lookup(&mut self, va: u64, asid: Asid) -> Probe {
        self.stats.lookups += 1;
        let vpn = va >> 12;
        let (set, pos, j) = self.find(vpn, asid);
        let Some(pos) = pos else {
            self.stats.misses += 1;
            self.org.entry_misses += 1;
            return Probe::Miss;
        };
        let e = self.content[set].remove(pos);
        let s = e.sub[j];
        self.content[set].insert(0, e);
        match s {
            None => {
                self.stats.misses += 1;
                self.org.subpage_misses += 1;
                if self.walk {
                    Probe::SubpageMiss
                } else {
                    Probe::SubpageFill
                }
            }
            Some((frame, dirty, own, large)) => {
                self.stats.hits += 1;
                if !own {
                    self.org.toc_hits += 1;
                }
                match large {
                    None => Probe::Hit { pfn: frame, size: K4, dirty },
                    Some(size) => Probe::Hit { pfn: frame - vpn % (1 << size.order()), size, dirty },
                }
            }
        }
    }

    fn fill(&mut self, f: &Fill, nb: &Neighbours) {
        self.stats.fills += 1;
        let vpn = f.va >> 12;
        let (set, pos, j) = self.find(vpn, f.asid);
        let first = vpn - j as u64;
        let mut new: Vec<RefSub> = vec![None; self.arity as usize];
        if f.size == K4 {
            new[j] = Some((f.pfn, f.dirty, true, None));
            if pos.is_none() || self.walk {
                for k in 0..self.arity as usize {
                    if k != j {
                        if let Some((p, d)) = nb.get(first + k as u64) {
                            new[k] = Some((p, d, false, None));
                        }
                    }
                }
            }
        } else {
            let pages = 1u64 << f.size.order();
            for (k, n) in new.iter_mut().enumerate() {
                let v = first + k as u64;
                if v / pages == vpn / pages {
                    *n = Some((f.pfn + v % pages, f.dirty, true, Some(f.size)));
                }
            }
        }
        match pos {
            Some(pos) => {
                let mut e = self.content[set].remove(pos);
                for (old, n) in e.sub.iter_mut().zip(new) {
                    if n.is_some() {
                        *old = n;
                    }
                }
                self.content[set].insert(0, e);
            }
            None => {
                if self.content[set].len() == self.ways {
                    self.content[set].pop();
                    self.stats.evictions += 1;
                }
                self.content[set].insert(0, RefEntry { asid: f.asid, mvpn: vpn / self.arity, sub: new });
            }
        }
    }

    fn mark_dirty(&mut self, va: u64, asid: Asid) {
        let (set, pos, j) = self.find(va >> 12, asid);
        if let Some(Some(s)) = pos.map(|p| &mut self.content[set][p].sub[j]) {
            s.1 = true;
        }
    }

    /// Clear every sub-page for which `hit(vpn, sub)` holds in entries of `asid`.
    fn clear(&mut self, asid: Asid, hit: impl Fn(u64, &(u64, bool, bool, Option<PageSize>)) -> bool) -> u64 {
        let mut n = 0;
        for set in &mut self.content {
            for e in set.iter_mut().filter(|e| e.asid == asid) {
                for (k, s) in e.sub.iter_mut().enumerate() {
                    if s.as_ref().is_some_and(|s| hit(e.mvpn * self.arity + k as u64, s)) {
                        *s = None;
                        n += 1;
                    }
                }
            }
            let before = set.len();
            set.retain(|e| e.sub.iter().any(Option::is_some));
            self.org.entries_freed += (before - set.len()) as u64;
        }
        self.org.subpage_invalidations += n;
        n
    }

    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        let vpn = va >> 12;
        let mut n = self.clear(asid, |v, _| v == vpn);
        for size in self.sizes.clone().into_iter().filter(|&s| s != K4) {
            let pages = 1u64 << size.order();
            n += self.clear(asid, |v, s| s.3 == Some(size) && v / pages == vpn / pages);
        }
        n
    }

    fn flush_asid(&mut self, asid: Asid) -> u64 {
        let mut n = 0;
        for set in &mut self.content {
            let before = set.len();
            set.retain(|e| e.asid != asid);
            n += (before - set.len()) as u64;
        }
        n
    }

    fn occupancy(&self) -> usize {
        self.content.iter().map(Vec::len).sum()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Lookup { page: u64, asid: Asid },
    /// A fill of `page`; `large`: 0 a 4 KiB page, 1 its 2 MiB page, 2 its 1 GiB page.
    /// Neighbours from a fixed page table ([`frame_of`]) where `present` has a bit
    /// (run length: 0 none, 1 the group, 2 64 pages).
    Fill { page: u64, asid: Asid, large: u8, dirty: bool, len_pick: u8, present: u64, nb_dirty: u64 },
    Invalidate { page: u64, asid: Asid },
    MarkDirty { page: u64, asid: Asid },
    Flush { asid: Asid },
}

/// A fixed page table per address space: scattered frames.
fn frame_of(asid: Asid, vpn: u64) -> u64 {
    (vpn.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) ^ (asid as u64) << 30
}

fn op() -> impl Strategy<Value = Op> {
    // Pages of a few groups, 2 MiB pages and 1 GiB pages, so that they meet.
    let page = prop_oneof![0u64..1024, (0u64..4096).prop_map(|p| (1 << 18) + p * 61)];
    let asid = 0u16..3;
    prop_oneof![
        12 => (page.clone(), asid.clone()).prop_map(|(page, asid)| Op::Lookup { page, asid }),
        8 => (page.clone(), asid.clone(), prop::sample::select(vec![0u8, 0, 0, 0, 0, 0, 0, 1, 1, 2]), any::<bool>(), 0u8..3, any::<u64>(), any::<u64>())
            .prop_map(|(page, asid, large, dirty, len_pick, present, nb_dirty)| Op::Fill { page, asid, large, dirty, len_pick, present, nb_dirty }),
        2 => (page.clone(), asid.clone()).prop_map(|(page, asid)| Op::Invalidate { page, asid }),
        2 => (page, asid.clone()).prop_map(|(page, asid)| Op::MarkDirty { page, asid }),
        1 => asid.prop_map(|asid| Op::Flush { asid }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// The mosaic TLB agrees with the naive model on every lookup,
    /// invalidation and flush, in occupancy after every step, and in its
    /// final counters, over geometries from direct-mapped to fully
    /// associative (past the hash-index threshold), every arity, both
    /// sub-page miss policies, and 4 KiB, 2 MiB and 1 GiB pages.
    #[test]
    fn mosaic_matches_the_naive_model(
        (sets, ways) in prop::sample::select(vec![(1u32, 1u32), (4, 1), (1, 4), (2, 2), (4, 4), (8, 2), (1, 64)]),
        arity in prop::sample::select(vec![4u32, 8, 16, 32, 64]),
        walk in any::<bool>(),
        large_sizes in prop::sample::select(vec![0u8, 1, 2]),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let sizes: Vec<PageSize> = [K4, M2, G1][..=large_sizes as usize].to_vec();
        let params = format!("arity = {arity}\nsubpage_miss = \"{}\"", if walk { "walk" } else { "fill" });
        let mut fast = build(sets * ways, Ways::N(ways), &sizes, &params);
        let mut slow = RefMosaic {
            arity: arity as u64, sets: sets as u64, ways: ways as usize, walk, sizes: sizes.clone(),
            content: vec![Vec::new(); sets as usize], stats: TlbStats::default(), org: MosaicStats::default(),
        };
        for op in ops {
            match op {
                Op::Lookup { page, asid } => {
                    let va = page << 12 | ((page * 8) & 0xfff);
                    let got = fast.lookup(va, asid);
                    prop_assert_eq!(got, slow.lookup(va, asid), "lookup {:#x} asid {}", va, asid);
                    // What the hierarchy asks after a miss of every level, without side effects.
                    prop_assert_eq!(fast.org.subpage_fill(va, asid), got == Probe::SubpageFill);
                }
                Op::Fill { page, asid, large, dirty, len_pick, present, nb_dirty } => {
                    let size = sizes[(large as usize).min(sizes.len() - 1)];
                    let va = page << 12;
                    let (nb, pfn) = if size == K4 {
                        let len = [0, arity, 64][len_pick as usize];
                        let first = page & !(len.max(1) as u64 - 1);
                        (run(page, len, nb_dirty, |k| (first + k == page || present >> k & 1 == 1).then(|| frame_of(asid, first + k))), frame_of(asid, page))
                    } else {
                        (Neighbours::EMPTY, (page >> size.order()) << size.order() | 1 << 40)
                    };
                    let f = Fill { va, asid, size, pfn, dirty };
                    fast.fill(&f, &nb, false);
                    slow.fill(&f, &nb);
                }
                Op::Invalidate { page, asid } => {
                    prop_assert_eq!(fast.invalidate_page(page << 12, asid), slow.invalidate_page(page << 12, asid), "invalidate {:#x}", page);
                }
                Op::MarkDirty { page, asid } => {
                    fast.mark_dirty(page << 12, asid);
                    slow.mark_dirty(page << 12, asid);
                }
                Op::Flush { asid } => {
                    prop_assert_eq!(fast.flush_asid(asid), slow.flush_asid(asid));
                }
            }
            prop_assert_eq!(fast.occupancy(), slow.occupancy());
        }
        prop_assert_eq!(&fast.stats, &slow.stats);
        prop_assert_eq!(org_stats(&fast), slow.org);
    }
}
