use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;

use super::*;

fn cocoa(frames: u64, cfg: Config) -> Cocoa {
    Cocoa::build(&cfg, &AllocCtx { capacity_frames: frames * SLOTS, seed: 1 }).unwrap()
}

fn page(asid: Asid, vpn: u64) -> PageRequest {
    PageRequest { asid, vpn, size: PageSize::Size4K }
}

#[test]
fn an_en_masse_region_lands_in_one_frame_at_the_same_offsets() {
    let mut c = cocoa(8, Config::default());
    // Application 1 allocates 4 MiB + 8 KiB from 2 MiB: regions 1 and 2 en masse, region 3 partial.
    c.hear_allocation(1, 2 << 20, (4 << 20) + 8192);
    let mut pfns = Vec::new();
    for vpn in 512..1024 {
        pfns.push(c.alloc_page(&page(1, vpn)).unwrap().0);
    }
    let f = pfns[0] / SLOTS;
    assert_eq!(pfns, (f * SLOTS..f * SLOTS + SLOTS).collect::<Vec<_>>());
    assert_eq!(c.kind(f as u32), Kind::Reserved { asid: 1, region: 1 });
    // The partial region's pages come from the base-page list, in slot order.
    let a = c.alloc_page(&page(1, 1536 + 1)).unwrap().0;
    let b = c.alloc_page(&page(1, 1536)).unwrap().0;
    assert_eq!(b, a + 1);
    assert_eq!(c.kind((a / SLOTS) as u32), Kind::Shared { asid: 1 });
    c.check_invariants().unwrap();
}

#[test]
fn a_sparse_reservation_is_emptied_into_its_application_s_shared_frames_or_opened_to_them() {
    let mut c = cocoa(4, Config::default());
    c.hear_allocation(1, 0, 2 << 20);
    // Region 0 en masse: frame r; three pages of it stay.
    let pages: Vec<u64> = (0..SLOTS).map(|vpn| c.alloc_page(&page(1, vpn)).unwrap().0).collect();
    let r = pages[0] / SLOTS;
    for &p in &pages[3..] {
        c.free(Pfn(p), 0);
    }
    // No shared frame of application 1 yet: no room, so the frame stays, shared and open.
    let mut moves = Vec::new();
    assert!(!c.evacuate_frame(Pfn(r * SLOTS), &mut moves));
    assert!(moves.is_empty());
    assert_eq!(c.kind(r as u32), Kind::Shared { asid: 1 });
    c.check_invariants().unwrap();
    // Its free slots now take application 1's base pages (the region is converted).
    let q = c.alloc_page(&page(1, 100)).unwrap().0;
    assert_eq!(q / SLOTS, r);
    // Another shared frame with room: a second frame's pages of application 1 move there.
    c.hear_allocation(1, 4 << 20, 2 << 20);
    let second: Vec<u64> = (1024..1024 + SLOTS).map(|vpn| c.alloc_page(&page(1, vpn)).unwrap().0).collect();
    let s2 = second[0] / SLOTS;
    assert_eq!(c.kind(s2 as u32), Kind::Reserved { asid: 1, region: 2 });
    for &p in &second[2..] {
        c.free(Pfn(p), 0);
    }
    assert!(c.evacuate_frame(Pfn(s2 * SLOTS + 7), &mut moves));
    assert_eq!(moves.iter().map(|m| m.from.0).collect::<Vec<_>>(), second[..2].to_vec());
    assert!(moves.iter().all(|m| m.to.0 / SLOTS == r && !m.foreign));
    assert_eq!(c.kind(s2 as u32), Kind::Free);
    // Foreign and free frames are not an application's to compact.
    assert!(!c.evacuate_frame(Pfn(s2 * SLOTS), &mut moves));
    c.check_invariants().unwrap();
}

#[test]
fn every_region_reserves_even_partial_regions() {
    let mut c = cocoa(4, Config { reserve: Reserve::EveryRegion, ..Config::default() });
    let p = c.alloc_page(&page(2, 7)).unwrap().0;
    assert_eq!(p % SLOTS, 7);
    assert_eq!(c.kind((p / SLOTS) as u32), Kind::Reserved { asid: 2, region: 0 });
    assert_eq!(c.bloat_pages(), SLOTS - 1);
}

#[test]
fn applications_never_share_a_frame_and_a_reservation_is_converted_under_pressure() {
    let mut c = cocoa(3, Config { reserve: Reserve::EveryRegion, ..Config::default() });
    // Two regions of application 1 and one of application 2 take all three frames.
    let a = c.alloc_page(&page(1, 0)).unwrap().0 / SLOTS;
    let b = c.alloc_page(&page(1, 512 + 3)).unwrap().0 / SLOTS;
    c.alloc_page(&page(1, 512 + 4)).unwrap();
    let d = c.alloc_page(&page(2, 0)).unwrap().0 / SLOTS;
    assert_eq!(c.free_frames(), 3 * SLOTS - 4);
    // A new region of application 1: no free frame, so its emptiest reservation (a, 511 unused) becomes shared.
    let p = c.alloc_page(&page(1, 5 * 512)).unwrap().0;
    assert_eq!(p / SLOTS, a);
    assert_eq!(c.kind(a as u32), Kind::Shared { asid: 1 });
    assert_eq!(c.stats.conversions, 1);
    // Application 2 never gets a slot of application 1's frames.
    for vpn in 1..SLOTS {
        let q = c.alloc_page(&page(2, vpn)).unwrap().0 / SLOTS;
        assert_eq!(q, d);
    }
    assert_eq!(c.alloc_page(&page(2, 9 * 512)), None, "application 2 has no frame left and may not take application 1's");
    let _ = b;
    c.check_invariants().unwrap();
}

#[test]
fn least_unused_converts_the_fullest_reservation() {
    let mut c = cocoa(2, Config { reserve: Reserve::EveryRegion, convert: Convert::LeastUnused, ..Config::default() });
    let a = c.alloc_page(&page(1, 0)).unwrap().0 / SLOTS;
    let b = c.alloc_page(&page(1, 512)).unwrap().0 / SLOTS;
    c.alloc_page(&page(1, 513)).unwrap();
    let p = c.alloc_page(&page(1, 4 * 512)).unwrap().0;
    assert_eq!(p / SLOTS, b);
    assert_ne!(a, b);
}

#[test]
fn foreign_frames_are_the_last_resort_and_counted() {
    let mut c = cocoa(2, Config::default());
    assert!(c.reserve(Pfn(5)));
    assert!(c.reserve(Pfn(6)));
    assert!(!c.reserve(Pfn(6)));
    assert_eq!(c.kind(0), Kind::Foreign);
    // The free frame first, then the foreign one.
    for vpn in 0..SLOTS {
        assert_eq!(c.alloc_page(&page(1, vpn)).unwrap().0 / SLOTS, 1);
    }
    assert_eq!(c.stats.guarantee_breaks, 0);
    assert_eq!(c.alloc_page(&page(1, SLOTS)), None, "alloc_page keeps the guarantee");
    let p = c.fallback_page(&page(1, SLOTS)).unwrap().0;
    assert_eq!(p, 0);
    assert_eq!(c.stats.guarantee_breaks, 1);
    assert_eq!(c.app_pages(), SLOTS + 1);
    // Freed again: the frame holds only foreign data and is foreign again.
    c.free(Pfn(p), 0);
    assert_eq!(c.kind(0), Kind::Foreign);
    c.check_invariants().unwrap();
}

#[test]
fn evacuation_empties_the_emptiest_frame_into_frames_of_the_same_owner() {
    let mut c = cocoa(4, Config::default());
    // Foreign data: 3 pages in frame 0, 5 in frame 1, 2 in frame 2; frame 3 stays free.
    for (f, n) in [(0u64, 3u64), (1, 5), (2, 2)] {
        for s in 0..n {
            assert!(c.reserve(Pfn(f * SLOTS + 10 * s + 1)));
        }
    }
    let mut moves = Vec::new();
    assert!(c.evacuate(&mut moves));
    // Frame 2 (2 pages) goes, into the first foreign frame's lowest free slots.
    assert_eq!(moves, vec![Move { from: Pfn(2 * SLOTS + 1), to: Pfn(0), foreign: true }, Move { from: Pfn(2 * SLOTS + 11), to: Pfn(2), foreign: true }]);
    assert_eq!(c.kind(2), Kind::Free);
    assert_eq!(c.free, vec![3, 2]);
    c.check_invariants().unwrap();
    // An application's shared frames compact among themselves only.
    let mut c = cocoa(3, Config::default());
    let a = c.alloc_page(&page(1, 5)).unwrap();
    assert!(c.reserve(Pfn(SLOTS + 4)));
    let b = c.fallback_page(&page(1, 6)).unwrap();
    assert_eq!(b.0 / SLOTS, 1);
    assert!(c.evacuate(&mut moves));
    assert_eq!(moves.len(), 1);
    let m = moves[0];
    assert!(!m.foreign && (m.from == a || m.from == b), "{m:?}");
    c.check_invariants().unwrap();
}

#[test]
fn table_nodes_and_large_pages_get_frames_of_their_own() {
    let mut c = cocoa(3, Config::default());
    let t = c.alloc(0).unwrap().0;
    let u = c.alloc(0).unwrap().0;
    assert_eq!((t / SLOTS, u), (0, t + 1));
    let big = c.alloc_page(&PageRequest { asid: 1, vpn: 512, size: PageSize::Size2M }).unwrap().0;
    assert_eq!(big % SLOTS, 0);
    assert_ne!(big / SLOTS, 0);
    c.free(Pfn(big), 9);
    c.free(Pfn(t), 0);
    c.free(Pfn(u), 0);
    assert_eq!(c.free_frames(), 3 * SLOTS);
    assert_eq!(c.free, vec![2, 1, 0]);
    c.check_invariants().unwrap();
}

#[test]
fn a_capacity_not_in_whole_frames_is_a_config_error() {
    let e = Cocoa::build(&Config::default(), &AllocCtx { capacity_frames: 600, seed: 0 }).unwrap_err().to_string();
    assert!(e.contains("physmem.capacity") && e.contains("2 MiB"), "{e}");
}

#[derive(Clone, Debug)]
enum Op {
    Alloc { app: u8, vpn: u16 },
    Fallback { app: u8, vpn: u16 },
    Evacuate,
    Free { pick: u16 },
    Table,
    Pin { pfn: u16 },
    EvacuateFrame { pfn: u16 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..3, 0u16..3000).prop_map(|(app, vpn)| Op::Alloc { app, vpn }),
        1 => (0u8..3, 0u16..3000).prop_map(|(app, vpn)| Op::Fallback { app, vpn }),
        1 => Just(Op::Evacuate),
        3 => any::<u16>().prop_map(|pick| Op::Free { pick }),
        1 => Just(Op::Table),
        1 => (0u16..4096).prop_map(|pfn| Op::Pin { pfn }),
        1 => (0u16..4096).prop_map(|pfn| Op::EvacuateFrame { pfn }),
    ]
}

fn config() -> impl Strategy<Value = Config> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(|(r, c, s)| Config {
        reserve: if r { Reserve::EnMasse } else { Reserve::EveryRegion },
        convert: if c { Convert::MostUnused } else { Convert::LeastUnused },
        slots: if s { SlotOrder::Lifo } else { SlotOrder::Lowest },
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// After every operation: the allocator's own invariants; no frame
    /// handed out twice; no frame holds pages of two applications; bloat is
    /// the slots of application frames minus the pages in them.
    #[test]
    fn invariants_hold_after_every_operation(cfg in config(), ops in prop::collection::vec(op(), 1..400)) {
        let mut c = cocoa(8, cfg);
        c.hear_allocation(1, 0, 3 << 20);
        c.hear_allocation(2, 1 << 20, 4 << 20);
        // pfn -> Some(asid) for application pages, None for tables and pins.
        let mut held: BTreeMap<u64, Option<Asid>> = BTreeMap::new();
        let mut pages: BTreeSet<(Asid, u64)> = BTreeSet::new();
        for op in ops {
            match op {
                Op::Alloc { app, vpn } => {
                    let asid = app as Asid + 1;
                    if pages.contains(&(asid, vpn as u64)) {
                        continue;
                    }
                    if let Some(p) = c.alloc_page(&page(asid, vpn as u64)) {
                        prop_assert!(held.insert(p.0, Some(asid)).is_none(), "frame {} handed out twice", p.0);
                        pages.insert((asid, vpn as u64));
                    }
                }
                Op::Fallback { app, vpn } => {
                    let asid = app as Asid + 1;
                    if pages.contains(&(asid, vpn as u64)) {
                        continue;
                    }
                    if let Some(p) = c.fallback_page(&page(asid, vpn as u64)) {
                        prop_assert!(held.insert(p.0, Some(asid)).is_none(), "frame {} handed out twice", p.0);
                        pages.insert((asid, vpn as u64));
                    }
                }
                Op::Evacuate | Op::EvacuateFrame { .. } => {
                    let mut moves = Vec::new();
                    let before = match op {
                        Op::EvacuateFrame { pfn } => Some(c.kind(pfn as u32 / SLOTS as u32)),
                        _ => None,
                    };
                    let done = match op {
                        Op::EvacuateFrame { pfn } => c.evacuate_frame(Pfn(pfn as u64), &mut moves),
                        _ => c.evacuate(&mut moves),
                    };
                    if let (Some(k), false) = (before, done) {
                        // A frame that stays keeps its owner (a reservation becomes shared).
                        let now = c.kind(pfn_of(&op) as u32 / SLOTS as u32);
                        match k {
                            Kind::Reserved { asid, .. } | Kind::Shared { asid } => prop_assert_eq!(now, Kind::Shared { asid }),
                            other => prop_assert_eq!(now, other),
                        }
                    }
                    if done {
                        for m in &moves {
                            let owner = held.remove(&m.from.0);
                            prop_assert!(owner.is_some(), "moved a page nobody held: {:?}", m);
                            prop_assert_eq!(owner.unwrap().is_none(), m.foreign);
                            prop_assert!(held.insert(m.to.0, owner.unwrap()).is_none(), "moved onto a held frame: {:?}", m);
                            prop_assert_ne!(m.from.0 / SLOTS, m.to.0 / SLOTS);
                        }
                        let emptied = moves.first().map(|m| m.from.0 / SLOTS);
                        if let Some(f) = emptied {
                            prop_assert_eq!(c.kind(f as u32), Kind::Free);
                        }
                    }
                }
                Op::Free { pick } => {
                    if held.is_empty() {
                        continue;
                    }
                    let p = *held.keys().nth(pick as usize % held.len()).unwrap();
                    held.remove(&p);
                    c.free(Pfn(p), 0);
                }
                Op::Table => {
                    if let Some(p) = c.alloc(0) {
                        prop_assert!(held.insert(p.0, None).is_none(), "frame {} handed out twice", p.0);
                    }
                }
                Op::Pin { pfn } => {
                    if c.reserve(Pfn(pfn as u64)) {
                        prop_assert!(held.insert(pfn as u64, None).is_none(), "pinned a frame in use");
                    }
                }
            }
            c.check_invariants().map_err(TestCaseError::fail)?;
            let mut owners: BTreeMap<u64, BTreeSet<Asid>> = BTreeMap::new();
            for (&p, &o) in &held {
                if let Some(a) = o {
                    owners.entry(p / SLOTS).or_default().insert(a);
                }
            }
            for (f, o) in &owners {
                prop_assert_eq!(o.len(), 1, "frame {} holds pages of {:?}", f, o);
                let k = c.kind(*f as u32);
                let a = *o.iter().next().unwrap();
                prop_assert!(matches!(k, Kind::Reserved { asid, .. } | Kind::Shared { asid } if asid == a), "frame {} of {} is {:?}", f, a, k);
            }
            let app_slots: u64 = (0..8u32).filter(|&f| matches!(c.kind(f), Kind::Reserved { .. } | Kind::Shared { .. })).count() as u64 * SLOTS;
            let used = held.values().filter(|o| o.is_some()).count() as u64;
            prop_assert_eq!(c.app_pages(), used);
            prop_assert_eq!(c.bloat_pages(), app_slots - c.app_pages() - foreign_in_app_frames(&c));
            prop_assert_eq!(c.free_frames(), 8 * SLOTS - held.len() as u64);
        }
    }
}

fn pfn_of(op: &Op) -> u16 {
    match *op {
        Op::EvacuateFrame { pfn } => pfn,
        _ => unreachable!("only frame evacuations name a frame"),
    }
}

/// Foreign pages inside frames an application took after a guarantee break.
fn foreign_in_app_frames(c: &Cocoa) -> u64 {
    c.frames.iter().filter(|f| matches!(f.kind, Kind::Shared { .. } | Kind::Reserved { .. })).map(|f| f.foreign_pages() as u64).sum()
}

#[test]
fn a_64k_page_takes_its_offset_in_a_reservation_or_an_aligned_run_of_a_shared_frame() {
    let mut c = cocoa(4, Config::default());
    c.hear_allocation(1, 0, (2 << 20) + (64 << 10));
    let big = |vpn| PageRequest { asid: 1, vpn, size: PageSize::Size64K };
    let p = c.alloc_page(&big(48)).unwrap().0;
    assert_eq!(p % SLOTS, 48);
    assert_eq!(c.kind((p / SLOTS) as u32), Kind::Reserved { asid: 1, region: 0 });
    // Region 1 is partial: a shared frame, first aligned free run.
    let a = c.alloc_page(&page(1, 512)).unwrap().0;
    let q = c.alloc_page(&big(512 + 16)).unwrap().0;
    assert_eq!((q / SLOTS, q % SLOTS), (a / SLOTS, 16), "slot 0 is taken, so the run at 16");
    c.check_invariants().unwrap();
    c.free(Pfn(q), 4);
    c.free(Pfn(p), 4);
    c.check_invariants().unwrap();
    assert_eq!(c.app_pages(), 1);
}

#[derive(Clone, Debug)]
enum Op64 {
    Alloc { app: u8, vpn: u16, big: bool },
    Free { pick: u16 },
    Pin { pfn: u16 },
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(100))]

    /// 64 KiB pages beside 4 KiB ones: never two pages on one frame, never
    /// two applications in one frame, a 64 KiB page on 16 aligned slots.
    #[test]
    fn invariants_hold_with_64k_pages(cfg in config(), ops in prop::collection::vec(prop_oneof![
        5 => (0u8..2, 0u16..3000, any::<bool>()).prop_map(|(app, vpn, big)| Op64::Alloc { app, vpn, big }),
        3 => any::<u16>().prop_map(|pick| Op64::Free { pick }),
        1 => (0u16..4096).prop_map(|pfn| Op64::Pin { pfn }),
    ], 1..300)) {
        let mut c = cocoa(8, cfg);
        c.hear_allocation(1, 0, 3 << 20);
        c.hear_allocation(2, 1 << 20, 4 << 20);
        // First frame of each page -> (asid or None for pins, frames).
        let mut pages: BTreeMap<u64, (Option<Asid>, u64)> = BTreeMap::new();
        let mut mapped: BTreeSet<(Asid, u64)> = BTreeSet::new();
        for op in ops {
            match op {
                Op64::Alloc { app, vpn, big } => {
                    let asid = app as Asid + 1;
                    let (vpn, n, size) = if big { (vpn as u64 & !15, 16, PageSize::Size64K) } else { (vpn as u64, 1, PageSize::Size4K) };
                    if (vpn..vpn + n).any(|v| mapped.contains(&(asid, v))) {
                        continue;
                    }
                    if let Some(p) = c.alloc_page(&PageRequest { asid, vpn, size }) {
                        prop_assert_eq!(p.0 % n, 0, "a 64 KiB page is aligned");
                        prop_assert_eq!(p.0 / SLOTS, (p.0 + n - 1) / SLOTS, "a page stays in one frame");
                        for (&q, &(_, m)) in &pages {
                            prop_assert!(p.0 + n <= q || q + m <= p.0, "frames {}+{} handed out twice (over {}+{})", p.0, n, q, m);
                        }
                        pages.insert(p.0, (Some(asid), n));
                        mapped.extend((vpn..vpn + n).map(|v| (asid, v)));
                    }
                }
                Op64::Free { pick } => {
                    let owned: Vec<u64> = pages.iter().filter(|(_, (o, _))| o.is_some()).map(|(&p, _)| p).collect();
                    if owned.is_empty() {
                        continue;
                    }
                    let p = owned[pick as usize % owned.len()];
                    let (_, n) = pages.remove(&p).unwrap();
                    c.free(Pfn(p), if n == 16 { 4 } else { 0 });
                }
                Op64::Pin { pfn } => {
                    let busy = pages.iter().any(|(&q, &(_, m))| (q..q + m).contains(&(pfn as u64)));
                    if !busy && c.reserve(Pfn(pfn as u64)) {
                        pages.insert(pfn as u64, (None, 1));
                    }
                }
            }
            c.check_invariants().map_err(TestCaseError::fail)?;
            let mut owners: BTreeMap<u64, BTreeSet<Asid>> = BTreeMap::new();
            for (&p, &(o, _)) in &pages {
                if let Some(a) = o {
                    owners.entry(p / SLOTS).or_default().insert(a);
                }
            }
            for (f, o) in &owners {
                prop_assert_eq!(o.len(), 1, "frame {} holds pages of {:?}", f, o);
            }
            let used: u64 = pages.values().map(|&(_, n)| n).sum();
            prop_assert_eq!(c.free_frames(), 8 * SLOTS - used);
        }
    }
}
