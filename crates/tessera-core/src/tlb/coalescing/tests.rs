use super::*;
use crate::config::spec::{FillPolicy, Ways};
use crate::tlb::test_support::{fill4k, hit, run, spec};
use crate::tlb::{Tlb, TlbStats};
use proptest::prelude::*;

const K4: PageSize = PageSize::Size4K;
const M2: PageSize = PageSize::Size2M;

fn build(entries: u32, ways: Ways, sizes: &[PageSize], params: &str) -> Tlb {
    Tlb::build("t", &spec(entries, ways, sizes, "coalescing", params, "lru"), FillPolicy::AllLevels, 1).unwrap()
}

fn org_stats(t: &Tlb) -> CoalescingStats {
    match &t.org {
        crate::registry::AnyTlbOrganisation::Coalescing(c) => c.stats.clone(),
        other => panic!("not coalescing: {other:?}"),
    }
}

#[test]
fn a_walk_coalesces_the_contiguous_pages_of_its_line() {
    let mut t = build(16, Ways::N(4), &[K4], "group = 8");
    // Pages 0x100..0x108 at frames 500.. except page 0x105 (frame 900) and 0x107 (absent).
    let nb = run(0x103, 8, 0b10, |k| match k {
        5 => Some(900),
        7 => None,
        _ => Some(500 + k),
    });
    fill4k(&mut t, 0x103, 0, 503, &nb);
    assert_eq!(t.lookup(0x103 << 12, 0), hit(503));
    assert_eq!(t.lookup(0x100 << 12 | 0x10, 0), hit(500));
    assert_eq!(t.lookup(0x101 << 12, 0), Probe::Hit { pfn: 501, size: K4, dirty: true });
    assert_eq!(t.lookup(0x105 << 12, 0), Probe::SubpageMiss, "not contiguous");
    assert_eq!(t.lookup(0x107 << 12, 0), Probe::SubpageMiss, "not present");
    assert_eq!(t.lookup(0x108 << 12, 0), Probe::Miss, "another group");
    assert_eq!(t.lookup(0x100 << 12, 1), Probe::Miss, "another address space");
    assert_eq!(t.occupancy(), 1);
    let s = org_stats(&t);
    assert_eq!((s.coalesced_hits, s.subpage_misses), (2, 2));
    assert_eq!((t.stats.lookups, t.stats.hits, t.stats.misses, t.stats.fills), (7, 3, 4, 1));
}

#[test]
fn without_contiguity_every_present_page_is_held_with_its_own_frame() {
    let mut t = build(16, Ways::N(4), &[K4], "group = 8\nrequire_contiguity = false");
    let nb = run(0x103, 8, 0, |k| (k != 7).then_some(1000 - 3 * k));
    fill4k(&mut t, 0x103, 0, 991, &nb);
    for k in 0..7 {
        assert_eq!(t.lookup((0x100 + k) << 12, 0), hit(1000 - 3 * k));
    }
    assert_eq!(t.lookup(0x107 << 12, 0), Probe::SubpageMiss);
}

#[test]
fn fill_from_line_stops_at_the_line_and_group_does_not() {
    let nb = run(0x203, 32, 0, |k| Some(4000 + k));
    let mut line = build(16, Ways::N(4), &[K4], "group = 32");
    let mut group = build(16, Ways::N(4), &[K4], "group = 32\nfill_from = \"group\"");
    assert_eq!(line.org.neighbours_wanted(), 8);
    assert_eq!(group.org.neighbours_wanted(), 32);
    fill4k(&mut line, 0x203, 0, 4003, &nb);
    fill4k(&mut group, 0x203, 0, 4003, &nb);
    assert_eq!(line.lookup(0x207 << 12, 0), hit(4007));
    assert_eq!(line.lookup(0x208 << 12, 0), Probe::SubpageMiss, "next line");
    assert_eq!(group.lookup(0x208 << 12, 0), hit(4008));
    assert_eq!(group.lookup(0x21f << 12, 0), hit(4031));
    // A group smaller than a line: the whole group, and no more.
    let small = build(16, Ways::N(4), &[K4], "group = 4");
    assert_eq!(small.org.neighbours_wanted(), 4);
}

/// Neighbours decoded from a GT-PDE (`whole`) fill the whole group of a
/// `gt_blocks` structure whatever `fill_from` says, up to where the frames
/// stop being contiguous; a structure without `gt_blocks` takes the walked
/// page alone; and the entry hands its pages up as whole.
#[test]
fn whole_neighbours_fill_the_group_of_a_gt_aware_structure_only() {
    // Pages 0x300..0x320: a B-block at 7000.., but for its last 4 pages (another B-block).
    let mut nb = run(0x305, 32, u32::MAX as u64, |k| Some(if k < 28 { 7000 + k } else { 9000 + k }));
    nb.whole = true;
    let mut gt = build(16, Ways::N(4), &[K4], "group = 32\ngt_blocks = true");
    let mut plain = build(16, Ways::N(4), &[K4], "group = 32");
    assert_eq!((gt.org.gt_neighbours_wanted(), plain.org.gt_neighbours_wanted()), (32, 0));
    assert_eq!(gt.org.neighbours_wanted(), 8, "PTE fills still read one line");
    fill4k(&mut gt, 0x305, 0, 7005, &nb);
    fill4k(&mut plain, 0x305, 0, 7005, &nb);
    assert_eq!(gt.lookup(0x300 << 12, 0), Probe::Hit { pfn: 7000, size: K4, dirty: true });
    assert_eq!(gt.lookup(0x31b << 12, 0), Probe::Hit { pfn: 7027, size: K4, dirty: true });
    assert_eq!(gt.lookup(0x31c << 12, 0), Probe::SubpageMiss, "not contiguous");
    assert_eq!(plain.lookup(0x305 << 12, 0), hit(7005));
    assert_eq!(plain.lookup(0x306 << 12, 0), Probe::SubpageMiss, "a GT-PDE's pages are not PTE neighbours");
    let mut up = Neighbours::EMPTY;
    gt.org.entry_neighbours(0x310 << 12, 0, &mut up);
    assert!(up.whole);
    assert_eq!((up.first_vpn, up.len, up.get(0x31b), up.get(0x31c)), (0x300, 32, Some((7027, true)), None));
    // A PTE walk's entry is not whole: its pages go up through the line window.
    let mut pte = build(16, Ways::N(4), &[K4], "group = 32\ngt_blocks = true");
    fill4k(&mut pte, 0x405, 0, 5005, &run(0x405, 8, 0, |k| Some(5000 + k)));
    pte.org.entry_neighbours(0x405 << 12, 0, &mut up);
    assert!(!up.whole);
    assert_eq!(up.get(0x407), Some((5007, false)));
}

#[test]
fn a_second_walk_merges_into_its_run_and_another_run_gets_its_own_entry() {
    let mut t = build(16, Ways::N(4), &[K4], "group = 8");
    // First walk: page 1 at 101, page 2 present but not contiguous.
    fill4k(&mut t, 0x11, 0, 101, &run(0x11, 8, 0, |k| match k {
        0 | 1 => Some(100 + k),
        2 => Some(7),
        _ => None,
    }));
    assert_eq!(t.lookup(0x12 << 12, 0), Probe::SubpageMiss);
    // Page 2's walk, same base: adds page 3, keeps 0 and 1.
    fill4k(&mut t, 0x13, 0, 103, &run(0x13, 8, 0, |k| (k == 3).then_some(103)));
    assert_eq!(t.occupancy(), 1, "one entry per run");
    assert_eq!(t.lookup(0x10 << 12, 0), hit(100));
    assert_eq!(t.lookup(0x13 << 12, 0), hit(103));
    // A walk with another base (page 2 at frame 7): a second run beside the first.
    fill4k(&mut t, 0x12, 0, 7, &Neighbours::EMPTY);
    assert_eq!(t.occupancy(), 2);
    assert_eq!(t.lookup(0x12 << 12, 0), hit(7));
    assert_eq!(t.lookup(0x10 << 12, 0), hit(100));
    assert_eq!(t.lookup(0x13 << 12, 0), hit(103));
    // Page 3 remapped contiguously after page 2 (frame 8): it moves to the second run.
    fill4k(&mut t, 0x13, 0, 8, &Neighbours::EMPTY);
    assert_eq!(t.lookup(0x13 << 12, 0), hit(8));
    assert_eq!(t.occupancy(), 2);
    // Pages 0 and 1 remapped into that run too: the first run is emptied and freed.
    fill4k(&mut t, 0x10, 0, 5, &run(0x10, 8, 0, |k| Some(5 + k)));
    assert_eq!(t.occupancy(), 1);
    assert_eq!(t.lookup(0x11 << 12, 0), hit(6));
    assert_eq!(t.stats.evictions, 0);
}

#[test]
fn two_interleaved_runs_of_one_group_both_hit() {
    // Two streams allocated in turn: the group's even pages at 200.., odd pages at 300...
    let frame = |k: u64| if k.is_multiple_of(2) { 200 + k / 2 } else { 300 + k / 2 };
    let mut t = build(16, Ways::N(4), &[K4], "group = 8");
    fill4k(&mut t, 0x40, 0, 200, &run(0x40, 8, 0, |k| Some(frame(k))));
    fill4k(&mut t, 0x41, 0, 300, &run(0x41, 8, 0, |k| Some(frame(k))));
    assert_eq!(t.occupancy(), 2, "one entry per run");
    assert_eq!(t.lookup(0x40 << 12, 0), hit(200));
    assert_eq!(t.lookup(0x41 << 12, 0), hit(300));
    assert_eq!(t.lookup(0x42 << 12, 0), Probe::SubpageMiss, "frame 201, not contiguous with either run");
    // Shootdown and dirty bits find the run holding the page.
    t.mark_dirty(0x41 << 12, 0);
    assert_eq!(t.lookup(0x41 << 12, 0), Probe::Hit { pfn: 300, size: K4, dirty: true });
    assert_eq!(t.lookup(0x40 << 12, 0), hit(200));
    let mut nb = Neighbours::EMPTY;
    t.org.entry_neighbours(0x41 << 12, 0, &mut nb);
    assert_eq!((nb.first_vpn, nb.len), (0x40, 8));
    assert_eq!(nb.get(0x41), Some((300, true)));
    assert_eq!(nb.get(0x40), None, "only the run that hit");
    assert_eq!(t.invalidate_page(0x41 << 12, 0), 1);
    assert_eq!(t.occupancy(), 1);
    assert_eq!(t.lookup(0x41 << 12, 0), Probe::SubpageMiss);
    assert_eq!(t.lookup(0x40 << 12, 0), hit(200));
    assert_eq!(t.flush_asid(0), 1);
    assert_eq!(t.lookup(0x40 << 12, 0), Probe::Miss);
}

#[test]
fn a_fully_associative_structure_finds_every_run_of_a_group() {
    // Past the hash-index threshold runs are found by run id, not by a scan.
    let mut t = build(64, Ways::Full, &[K4], "group = 8");
    for k in 0..8 {
        fill4k(&mut t, 0x80 + k, 0, 1000 * k, &Neighbours::EMPTY);
    }
    assert_eq!(t.occupancy(), 8);
    for k in 0..8 {
        assert_eq!(t.lookup((0x80 + k) << 12, 0), hit(1000 * k));
    }
    assert_eq!(t.invalidate_page(0x83 << 12, 0), 1);
    fill4k(&mut t, 0x83, 0, 7, &Neighbours::EMPTY);
    assert_eq!(t.lookup(0x83 << 12, 0), hit(7));
    assert_eq!(t.occupancy(), 8);
}

#[test]
fn shootdown_clears_one_sub_page_and_frees_the_entry_with_the_last() {
    let mut t = build(16, Ways::N(4), &[K4], "group = 4");
    fill4k(&mut t, 0x20, 0, 50, &run(0x20, 4, 0, |k| (k < 2).then_some(50 + k)));
    assert_eq!(t.invalidate_page(0x21 << 12, 0), 1);
    assert_eq!(t.invalidate_page(0x21 << 12, 0), 0);
    assert_eq!(t.lookup(0x21 << 12, 0), Probe::SubpageMiss);
    assert_eq!(t.occupancy(), 1);
    assert_eq!(t.invalidate_page(0x20 << 12, 0), 1);
    assert_eq!(t.occupancy(), 0);
    assert_eq!(t.lookup(0x20 << 12, 0), Probe::Miss);
}

#[test]
fn dirty_bits_are_per_sub_page() {
    let mut t = build(16, Ways::N(4), &[K4], "group = 4");
    fill4k(&mut t, 0x20, 0, 50, &run(0x20, 4, 0, |k| Some(50 + k)));
    t.mark_dirty(0x22 << 12, 0);
    assert_eq!(t.lookup(0x22 << 12, 0), Probe::Hit { pfn: 52, size: K4, dirty: true });
    assert_eq!(t.lookup(0x23 << 12, 0), hit(53));
}

#[test]
fn larger_pages_are_one_page_entries_of_the_same_table() {
    let mut t = build(16, Ways::N(4), &[K4, M2], "group = 8");
    t.fill(&Fill { va: 0x4000_0000, asid: 0, size: M2, pfn: 0x8000, dirty: true }, &Neighbours::EMPTY, true);
    fill4k(&mut t, 0x200, 0, 9, &Neighbours::EMPTY);
    assert_eq!(t.occupancy(), 2);
    assert_eq!(t.lookup(0x4012_3456, 0), Probe::Hit { pfn: 0x8000, size: M2, dirty: true });
    assert_eq!(t.lookup(0x200 << 12, 0), hit(9));
    assert_eq!(t.invalidate_page(0x401f_f000, 0), 1);
    assert_eq!(t.lookup(0x4000_0000, 0), Probe::Miss);
    assert_eq!(org_stats(&t).coalesced_hits, 0);
}

#[test]
fn the_group_must_be_a_power_of_two_from_1_to_64() {
    for (g, ok) in [(0, false), (1, true), (2, true), (3, false), (48, false), (64, true), (128, false)] {
        let r = Tlb::build("t", &spec(16, Ways::N(4), &[K4], "coalescing", &format!("group = {g}"), "lru"), FillPolicy::AllLevels, 1);
        match (r, ok) {
            (Ok(_), true) => {}
            (Err(e), false) => {
                let e = e.to_string();
                assert!(e.contains("mmu.tlb.t.organisation.group") && e.contains("power of two"), "{e}");
            }
            (r, _) => panic!("group {g}: {:?}", r.map(|_| ())),
        }
    }
}

#[test]
fn a_coalescing_structure_must_hold_4k_pages() {
    let e = Tlb::build("t", &spec(16, Ways::N(4), &[M2], "coalescing", "", "lru"), FillPolicy::AllLevels, 1).unwrap_err().to_string();
    assert!(e.contains("mmu.tlb.t.organisation") && e.contains("4 KiB"), "{e}");
}

#[test]
fn victim_fill_is_refused() {
    let e = Tlb::build("t", &spec(16, Ways::N(4), &[K4], "coalescing", "", "lru"), FillPolicy::Victim, 1).unwrap_err().to_string();
    assert!(e.contains("mmu.fill") && e.contains("coalescing") && e.contains("all_levels"), "{e}");
}

// ---------------------------------------------------------------------------
// The naive reference model.
// ---------------------------------------------------------------------------

/// One entry: a group of 4 KiB pages (`size` 4 KiB, `key` the group number)
/// or one larger page (`key` its page number, sub-page 0 only).
#[derive(Clone, Debug)]
struct RefEntry {
    asid: Asid,
    size: PageSize,
    key: u64,
    base: u64,
    frame: Vec<Option<u64>>,
    dirty: Vec<bool>,
    own: Vec<bool>,
}

/// A fill into an existing entry keeps the old sub-pages it does not install
/// (and remembers which were installed for themselves).
fn keep_old_subpages(new: &mut RefEntry, old: &RefEntry, n: usize) {
    for j in 0..n {
        if old.frame[j].is_some() {
            new.own[j] |= old.own[j];
            if new.frame[j].is_none() {
                new.frame[j] = old.frame[j];
                new.dirty[j] = old.dirty[j];
            }
        }
    }
}

/// A coalescing TLB written the plain way: each set a list of entries, most
/// recently used first (LRU), each entry with a frame, dirty and "installed
/// by its own walk" flag per sub-page. With contiguity a group may have
/// several entries, one per base, holding disjoint sub-pages.
struct RefCoalescing {
    group: u64,
    sets: u64,
    ways: usize,
    contiguous: bool,
    whole_group: bool,
    sizes: Vec<PageSize>,
    content: Vec<Vec<RefEntry>>,
    stats: TlbStats,
    coalesced_hits: u64,
    subpage_misses: u64,
}

impl RefCoalescing {
    fn key(&self, va: u64, size: PageSize) -> (u64, usize) {
        if size == K4 {
            ((va >> 12) / self.group, ((va >> 12) % self.group) as usize)
        } else {
            (va >> size.shift(), 0)
        }
    }

    /// Set, position and sub-page of the entry holding `va`'s page of `size`
    /// (without contiguity, of the group's one entry whether it holds the page or not).
    fn find(&self, va: u64, size: PageSize, asid: Asid) -> Option<(usize, usize, usize)> {
        let (key, j) = self.key(va, size);
        let set = (key % self.sets) as usize;
        let pos = self.content[set].iter().position(|e| {
            e.asid == asid && e.size == size && e.key == key && (size != K4 || !self.contiguous || e.frame[j].is_some())
        })?;
        Some((set, pos, j))
    }

    /// Whether `va`'s set holds any entry of its 4 KiB group.
    fn group_present(&self, va: u64, asid: Asid) -> bool {
        let (key, _) = self.key(va, K4);
        self.content[(key % self.sets) as usize].iter().any(|e| e.asid == asid && e.size == K4 && e.key == key)
    }

    fn move_to_front(&mut self, set: usize, pos: usize) {
        let e = self.content[set].remove(pos);
        self.content[set].insert(0, e);
    }

    fn lookup(&mut self, va: u64, asid: Asid) -> Probe {
        self.stats.lookups += 1;
        let mut sub = false;
        for size in self.sizes.clone() {
            sub |= size == K4 && self.group_present(va, asid);
            let Some((set, pos, j)) = self.find(va, size, asid) else { continue };
            let e = self.content[set][pos].clone();
            match e.frame[j] {
                Some(pfn) => {
                    self.move_to_front(set, pos);
                    self.stats.hits += 1;
                    if !e.own[j] {
                        self.coalesced_hits += 1;
                    }
                    return Probe::Hit { pfn, size, dirty: e.dirty[j] };
                }
                None => sub = true,
            }
        }
        self.stats.misses += 1;
        if sub {
            self.subpage_misses += 1;
            Probe::SubpageMiss
        } else {
            Probe::Miss
        }
    }

    fn fill(&mut self, f: &Fill, nb: &Neighbours) {
        self.stats.fills += 1;
        let n = if f.size == K4 { self.group as usize } else { 1 };
        let (key, i) = self.key(f.va, f.size);
        let mut new = RefEntry { asid: f.asid, size: f.size, key, base: 0, frame: vec![None; n], dirty: vec![false; n], own: vec![false; n] };
        new.frame[i] = Some(f.pfn);
        new.dirty[i] = f.dirty;
        new.own[i] = true;
        if f.size == K4 {
            new.base = f.pfn.wrapping_sub(i as u64);
            let (lo, hi) = if self.whole_group {
                (0, n)
            } else {
                let run = n.min(8);
                (i / run * run, i / run * run + run)
            };
            for j in lo..hi {
                let vpn = key * self.group + j as u64;
                if j == i || vpn < nb.first_vpn || vpn >= nb.first_vpn + nb.len as u64 {
                    continue;
                }
                let k = (vpn - nb.first_vpn) as usize;
                let pfn = nb.pfn[k];
                let contiguous = pfn as i128 == f.pfn as i128 - i as i128 + j as i128;
                if pfn != NOT_PRESENT && (contiguous || !self.contiguous) {
                    new.frame[j] = Some(pfn);
                    new.dirty[j] = nb.dirty >> k & 1 == 1;
                }
            }
        }
        let set = (key % self.sets) as usize;
        if f.size == K4 && self.contiguous {
            // The new run's pages leave the group's runs with other bases; emptied ones go.
            let mut emptied = false;
            let mut same = None;
            let mut pos = 0;
            while pos < self.content[set].len() {
                let e = &mut self.content[set][pos];
                if e.asid == f.asid && e.size == K4 && e.key == key {
                    if e.base == new.base {
                        same = Some(pos);
                    } else {
                        for j in 0..n {
                            if new.frame[j].is_some() {
                                e.frame[j] = None;
                                e.dirty[j] = false;
                                e.own[j] = false;
                            }
                        }
                        if e.frame.iter().all(|p| p.is_none()) {
                            self.content[set].remove(pos);
                            emptied = true;
                            continue;
                        }
                    }
                }
                pos += 1;
            }
            if let Some(pos) = same {
                keep_old_subpages(&mut new, &self.content[set][pos], n);
                self.content[set][pos] = new;
                self.move_to_front(set, pos);
                return;
            }
            if !emptied && self.content[set].len() == self.ways {
                self.content[set].pop();
                self.stats.evictions += 1;
            }
            self.content[set].insert(0, new);
            return;
        }
        if let Some((set, pos, _)) = self.find(f.va, f.size, f.asid) {
            if f.size == K4 {
                keep_old_subpages(&mut new, &self.content[set][pos], n);
            }
            self.content[set][pos] = new;
            self.move_to_front(set, pos);
            return;
        }
        if self.content[set].len() == self.ways {
            self.content[set].pop();
            self.stats.evictions += 1;
        }
        self.content[set].insert(0, new);
    }

    fn mark_dirty(&mut self, va: u64, asid: Asid) {
        for size in self.sizes.clone() {
            if let Some((set, pos, j)) = self.find(va, size, asid) {
                let e = &mut self.content[set][pos];
                if e.frame[j].is_some() {
                    e.dirty[j] = true;
                }
            }
        }
    }

    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        let mut n = 0;
        for size in self.sizes.clone() {
            if let Some((set, pos, j)) = self.find(va, size, asid) {
                let e = &mut self.content[set][pos];
                if e.frame[j].is_some() {
                    n += 1;
                    e.frame[j] = None;
                    e.dirty[j] = false;
                    e.own[j] = false;
                    if e.frame.iter().all(|f| f.is_none()) {
                        self.content[set].remove(pos);
                    }
                }
            }
        }
        n
    }

    fn flush_asid(&mut self, asid: Asid) -> u64 {
        let before: usize = self.content.iter().map(|s| s.len()).sum();
        for s in &mut self.content {
            s.retain(|e| e.asid != asid);
        }
        (before - self.content.iter().map(|s| s.len()).sum::<usize>()) as u64
    }

    fn occupancy(&self) -> usize {
        self.content.iter().map(|s| s.len()).sum()
    }
}

#[derive(Clone, Debug)]
enum Op {
    Lookup { page: u64, asid: Asid },
    /// A walk of `page` (of 2 MiB if `large`), with neighbours: run length
    /// `len_pick` (0: none, 1: what the structure wants, 2: 64), present where
    /// `present` has a bit. `stable`: frames from a fixed page table ([`frame_of`]),
    /// so walks of one group agree; else the walked page at `base + k` (its
    /// run index), contiguous neighbours where `contig` has a bit, the others anywhere.
    Fill { page: u64, asid: Asid, large: bool, stable: bool, base: u64, dirty: bool, len_pick: u8, present: u64, contig: u64, nb_dirty: u64, noise: u64 },
    Invalidate { page: u64, asid: Asid },
    MarkDirty { page: u64, asid: Asid },
    Flush { asid: Asid },
}

/// A fixed page table per address space: runs of 16 contiguous frames, with
/// one page in six mapped elsewhere.
fn frame_of(asid: Asid, vpn: u64) -> u64 {
    let h = |x: u64| x.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40;
    if h(vpn * 7 + asid as u64 + 1) % 6 == 0 {
        5000 + h(vpn + 99) % 1000
    } else {
        h(vpn / 16 * 3 + asid as u64) % 4096 * 16 + vpn % 16
    }
}

fn op() -> impl Strategy<Value = Op> {
    // Half the pages from a few groups, so remaps and runs of one group meet in the structure.
    let page = prop_oneof![0u64..1024, 0u64..48];
    let asid = 0u16..3;
    prop_oneof![
        12 => (page.clone(), asid.clone()).prop_map(|(page, asid)| Op::Lookup { page, asid }),
        8 => (
            (page.clone(), asid.clone(), prop::bool::weighted(0.1), prop::bool::weighted(0.75), 0u64..4096, any::<bool>()),
            (0u8..3, any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
        )
            .prop_map(|((page, asid, large, stable, base, dirty), (len_pick, present, contig, nb_dirty, noise))| Op::Fill {
                page, asid, large, stable, base, dirty, len_pick, present, contig, nb_dirty, noise
            }),
        2 => (page.clone(), asid.clone()).prop_map(|(page, asid)| Op::Invalidate { page, asid }),
        2 => (page, asid.clone()).prop_map(|(page, asid)| Op::MarkDirty { page, asid }),
        1 => asid.prop_map(|asid| Op::Flush { asid }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, .. ProptestConfig::default() })]

    /// The coalescing TLB agrees with the naive model on every lookup,
    /// shootdown and flush, and in its final counters, over geometries (set
    /// associative, fully associative past the hash-index threshold), group
    /// sizes, both contiguity rules and both fill sources.
    #[test]
    fn coalescing_matches_the_naive_model(
        (sets, ways) in prop::sample::select(vec![(1u32, 1u32), (1, 4), (2, 2), (4, 4), (8, 2), (1, 64)]),
        group in prop::sample::select(vec![2u32, 4, 8, 16, 64]),
        contiguous in any::<bool>(),
        whole_group in any::<bool>(),
        with_2m in any::<bool>(),
        ops in prop::collection::vec(op(), 1..400),
    ) {
        let sizes: Vec<PageSize> = if with_2m { vec![K4, M2] } else { vec![K4] };
        let params = format!(
            "group = {group}\nrequire_contiguity = {contiguous}\nfill_from = \"{}\"",
            if whole_group { "group" } else { "line" }
        );
        let mut fast = build(sets * ways, Ways::N(ways), &sizes, &params);
        let mut slow = RefCoalescing {
            group: group as u64, sets: sets as u64, ways: ways as usize, contiguous, whole_group, sizes: sizes.clone(),
            content: vec![Vec::new(); sets as usize], stats: TlbStats::default(), coalesced_hits: 0, subpage_misses: 0,
        };
        let wanted = fast.org.neighbours_wanted();
        for op in ops {
            match op {
                Op::Lookup { page, asid } => {
                    let va = page << 12 | ((page * 8) & 0xfff);
                    prop_assert_eq!(fast.lookup(va, asid), slow.lookup(va, asid), "lookup {:#x} asid {}", va, asid);
                }
                Op::Fill { page, asid, large, stable, base, dirty, len_pick, present, contig, nb_dirty, noise } => {
                    let size = if large && with_2m { M2 } else { K4 };
                    let len = [0, wanted, 64][len_pick as usize];
                    let va = page << 12;
                    let (nb, pfn) = if size == K4 {
                        // Run page k sits at `base + k` when contiguous, anywhere in 0..4096 otherwise.
                        let first = page & !(len.max(1) as u64 - 1);
                        let walked = page - first;
                        let nb = run(page, len, nb_dirty, |k| {
                            if stable {
                                (k == walked || present >> k & 1 == 1).then(|| frame_of(asid, first + k))
                            } else if k == walked {
                                Some(base + k)
                            } else if present >> k & 1 == 0 {
                                None
                            } else if contig >> k & 1 == 1 {
                                Some(base + k)
                            } else {
                                Some(noise.wrapping_mul(k * 2 + 1) >> 52)
                            }
                        });
                        (nb, if stable { frame_of(asid, page) } else { base + walked })
                    } else {
                        (Neighbours::EMPTY, base << 9)
                    };
                    let f = Fill { va, asid, size, pfn, dirty };
                    fast.fill(&f, &nb, false);
                    slow.fill(&f, &nb);
                }
                Op::Invalidate { page, asid } => {
                    prop_assert_eq!(fast.invalidate_page(page << 12, asid), slow.invalidate_page(page << 12, asid));
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
        let s = org_stats(&fast);
        prop_assert_eq!((s.coalesced_hits, s.subpage_misses), (slow.coalesced_hits, slow.subpage_misses));
    }
}

/// Misses of `t` over `accesses` (4 KiB page numbers, address space 0), each
/// miss filled like a walk: the walked line's pages (8 PTEs) as neighbours,
/// page `v` at frame `frame(v)`.
fn misses_over(t: &mut Tlb, accesses: impl IntoIterator<Item = u64>, frame: impl Fn(u64) -> u64) -> u64 {
    let mut misses = 0;
    for v in accesses {
        if !matches!(t.lookup(v << 12, 0), Probe::Hit { .. }) {
            misses += 1;
            fill4k(t, v, 0, frame(v), &run(v, 8, 0, |k| Some(frame((v & !7) + k))));
        }
    }
    misses
}

/// Two streams touched in turn under first-touch allocation: each group's
/// pages sit in 8 one-page runs. With 8 ways per set every run of a group has
/// its own entry, so the coalescing TLB misses exactly as the plain one does.
#[test]
fn a_group_in_eight_runs_misses_as_the_plain_tlb_with_eight_ways() {
    // Page v (of 16, groups 0 and 1) at frame 1000 * (v % 8) + v: no two pages of a group contiguous.
    let frame = |v: u64| 1000 * (v % 8) + v;
    let accesses = || (0..4).flat_map(|_| 0..16u64);
    let mut plain = build(16, Ways::N(8), &[K4], "group = 1");
    let mut co = build(16, Ways::N(8), &[K4], "group = 8");
    let (a, b) = (misses_over(&mut plain, accesses(), frame), misses_over(&mut co, accesses(), frame));
    assert_eq!(a, 16, "plain: cold misses only");
    assert_eq!(b, a, "coalescing: one entry per run, no thrash");
    assert_eq!(co.occupancy(), 16);
}
