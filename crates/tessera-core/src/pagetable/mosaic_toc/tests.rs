use std::collections::BTreeMap;

use proptest::prelude::*;

use super::*;
use crate::config::spec::{ByteSize, PhysMemSpec};
use crate::pagetable::format::FormatExt;
use crate::pagetable::PageTable;
use crate::physmem::allocator::iceberg::hash::{ChoiceRule, Slot};
use crate::physmem::allocator::{AnyAllocator, FrameAllocator, PageRequest};
use crate::physmem::PhysMem;
use crate::registry::{AnyFormat, MechanismSpec};

const K4: PageSize = PageSize::Size4K;

fn hasher() -> IcebergHasher {
    IcebergHasher::xxhash(1 << 12, 256, 56, 8, 6, ChoiceRule::Partitioned)
}

fn toc(arity: u32, levels: u32, hasher: Option<IcebergHasher>) -> Result<MosaicToc> {
    MosaicToc::build(&Config { arity }, &FormatCtx { levels: Some(levels), hasher })
}

/// Physical memory whose 4 KiB pages the Iceberg allocator places.
fn iceberg_mem(capacity: u64, buckets: u64) -> PhysMem {
    let mut params = toml::Table::new();
    params.insert("buckets".into(), toml::Value::Integer(buckets as i64));
    let spec = PhysMemSpec {
        capacity: ByteSize(capacity),
        allocator: MechanismSpec { kind: "iceberg".into(), params },
        page_size: MechanismSpec { kind: "base_only".into(), params: toml::Table::new() },
        fragmentation: 0.0,
        fragmentation_occupancy: None,
        retired: MechanismSpec { kind: "none".into(), params: toml::Table::new() },
    };
    PhysMem::build(&spec, 3).unwrap()
}

fn pool_hasher(m: &PhysMem) -> IcebergHasher {
    let AnyAllocator::Iceberg(ice) = m.allocator() else { panic!("not iceberg") };
    ice.hasher().clone()
}

#[test]
fn entry_widths_and_leaf_index_bits_follow_the_arity() {
    let expect = [(4, 1, 9), (8, 2, 8), (16, 2, 8), (32, 4, 7), (64, 8, 6)];
    for (arity, words, leaf_bits) in expect {
        let f = toc(arity, 4, None).unwrap();
        assert_eq!(f.entry_words(), words, "arity {arity}");
        assert_eq!(f.level_entry_words(1), words);
        assert_eq!(f.level_entry_words(2), 1, "upper levels keep 8-byte entries");
        assert_eq!(f.level_shift(1), 12 + arity.trailing_zeros());
        assert_eq!(f.level_shift(2), 12 + arity.trailing_zeros() + leaf_bits);
        assert_eq!(f.level_shift(3), f.level_shift(2) + 9);
        // A leaf node is one full 4 KiB frame of entries.
        assert_eq!((1u64 << leaf_bits) * words as u64 * 8, 4096);
        // The tree covers the 48-bit space.
        assert!(f.level_shift(4) + 9 >= 48 && f.va_bits() == 48);
        assert!(f.groups_pages());
        assert_eq!(f.sizes(), &[K4]);
        assert_eq!(f.leaf_level(PageSize::Size2M), None);
        // Every CPFN sits inside the entry, seven bits wide, none overlapping the flags or another.
        let mut used = vec![0u64; words as usize];
        used[0] = FLAG_BITS;
        for i in 0..arity {
            let (k, bit) = cpfn_pos(i);
            assert!(k < words && bit + 7 <= 64, "arity {arity}: CPFN {i} at word {k} bit {bit}");
            assert_eq!(used[k as usize] & (CPFN_MASK << bit), 0, "arity {arity}: CPFN {i} overlaps");
            used[k as usize] |= CPFN_MASK << bit;
        }
    }
    let f = toc(16, 5, None).unwrap();
    assert_eq!(f.levels(), 5);
    assert_eq!(f.va_bits(), 57);
    assert!(f.level_shift(5) + 9 >= 57);
}

#[test]
fn indices_rebuild_the_virtual_address() {
    for arity in ARITIES {
        let f = toc(arity, 4, None).unwrap();
        let va = 0x7abc_def1_2345u64;
        let mut rebuilt = va & ((1 << f.level_shift(1)) - 1);
        for level in 1..=4 {
            rebuilt |= f.index(va, level) << f.level_shift(level);
        }
        assert_eq!(rebuilt, va, "arity {arity}");
        // An upper-level entry is 8 bytes; a leaf entry's words follow each other.
        assert_eq!(f.word(va, 2), f.index(va, 2));
        assert_eq!(f.word(va, 1), f.index(va, 1) * f.entry_words() as u64);
    }
}

#[test]
fn bad_arity_and_depth_are_config_errors_naming_the_key() {
    for arity in [0, 1, 2, 3, 5, 12, 128, 1 << 20] {
        match toc(arity, 4, None) {
            Err(Error::Config { path, allowed, .. }) => {
                assert_eq!(path, "pagetable.format.arity");
                assert_eq!(allowed, vec!["4", "8", "16", "32", "64"]);
            }
            other => panic!("arity {arity}: {other:?}"),
        }
    }
    match toc(4, 3, None) {
        Err(Error::Config { path, .. }) => assert_eq!(path, "pagetable.levels"),
        other => panic!("{other:?}"),
    }
    // Through the registry, with an unknown key.
    let v: toml::Value = toml::from_str::<toml::Table>("f = { kind = \"mosaic_toc\", arty = 4 }").unwrap()["f"].clone();
    match AnyFormat::resolve(&v, "pagetable.format") {
        Err(Error::Config { path, .. }) => assert!(path.starts_with("pagetable.format"), "{path}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_fresh_toc_maps_one_page_and_the_last_unmap_clears_the_entry() {
    let h = hasher();
    let f = toc(8, 4, Some(h.clone())).unwrap();
    let (asid, vpn) = (3, 0x1234_5678u64);
    let pfn = h.frame(asid, vpn, Slot::Back { choice: 2, slot: 5 }).unwrap();
    let mut words = [0u64; 2];
    f.set_page(&mut words, vpn << 12, asid, Some(pfn)).unwrap();
    assert_eq!(words[0] & 0xFFF, PRESENT | WRITABLE | USER, "A/D clear");
    let codes = f.toc(&words);
    let j = (vpn & 7) as usize;
    for (i, c) in codes.iter().enumerate() {
        assert_eq!(*c, if i == j { 0x40 | 2 << 3 | 5 } else { cpfn::UNMAPPED }, "slot {i}");
    }
    let read = |k: u32| words[k as usize];
    assert_eq!(f.decode(words[0], 1, (vpn << 12) + 0xfff, asid, &read), Step::Leaf { pfn_base: pfn.0, size: K4 });
    assert_eq!(f.decode(words[0], 1, (vpn ^ 1) << 12, asid, &read), Step::NotPresent, "a sibling is not mapped");
    // Another address space decodes the same code to another frame (or none).
    assert_ne!(f.decode(words[0], 1, vpn << 12, asid + 1, &read), Step::Leaf { pfn_base: pfn.0, size: K4 });
    // Flags survive while a page remains; the last unmap clears everything.
    words[0] |= ACCESSED | DIRTY;
    let sib = vpn ^ 2;
    let sib_pfn = h.frame(asid, sib, Slot::Front(0)).unwrap();
    f.set_page(&mut words, sib << 12, asid, Some(sib_pfn)).unwrap();
    assert!(f.is_dirty(words[0]) && f.is_accessed(words[0]));
    f.set_page(&mut words, vpn << 12, asid, None).unwrap();
    assert!(words[0] & PRESENT != 0);
    f.set_page(&mut words, sib << 12, asid, None).unwrap();
    assert_eq!(words, [0, 0]);
    // Unmapping in an empty entry changes nothing.
    f.set_page(&mut words, sib << 12, asid, None).unwrap();
    assert_eq!(words, [0, 0]);
}

#[test]
fn a_frame_outside_the_pages_slots_is_an_error_not_a_panic() {
    let f = toc(4, 4, Some(hasher())).unwrap();
    let mut words = [0u64; 1];
    match f.set_page(&mut words, 0x5000, 0, Some(Pfn(7))) {
        Err(Error::Config { path, msg, .. }) => {
            assert_eq!(path, "pagetable.format");
            assert!(msg.contains("iceberg"), "{msg}");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(words, [0], "nothing written");
    // Built without a pool (a config check), the format decodes nothing.
    let f = toc(4, 4, None).unwrap();
    assert!(f.set_page(&mut words, 0x5000, 0, Some(Pfn(7))).is_err());
    assert_eq!(f.decode(PRESENT, 1, 0, 0, &|_| 0), Step::NotPresent);
}

fn arb_slot() -> impl Strategy<Value = Slot> {
    prop_oneof![(0u8..56).prop_map(Slot::Front), (0u8..6, 0u8..8).prop_map(|(choice, slot)| Slot::Back { choice, slot })]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// Any pattern of placed and unplaced pages in a ToC, written in random
    /// order, decodes page by page to the frames placed, whatever the arity.
    #[test]
    fn toc_entries_round_trip_random_placements(
        arity_i in 0usize..5,
        asid in 0u16..4,
        mvpn in 0u64..(1 << 30),
        ops in prop::collection::vec((0u32..64, prop::option::of(arb_slot())), 1..80),
    ) {
        let h = hasher();
        let arity = ARITIES[arity_i];
        let f = toc(arity, 4, Some(h.clone())).unwrap();
        let mut words = vec![0u64; f.entry_words() as usize];
        let mut reference: BTreeMap<u64, Pfn> = BTreeMap::new();
        for (i, slot) in ops {
            let vpn = mvpn * arity as u64 + (i % arity) as u64;
            let pfn = slot.map(|s| h.frame(asid, vpn, s).unwrap());
            // The allocator never maps a page twice: unmap first.
            f.set_page(&mut words, vpn << 12, asid, None).unwrap();
            if let Some(p) = pfn {
                f.set_page(&mut words, vpn << 12, asid, Some(p)).unwrap();
                reference.insert(vpn, p);
            } else {
                reference.remove(&vpn);
            }
            prop_assert_eq!(words[0] & PRESENT != 0, !reference.is_empty());
            for j in 0..arity as u64 {
                let v = mvpn * arity as u64 + j;
                let step = f.decode(words[0], 1, v << 12, asid, &|k| words[k as usize]);
                let want = reference.get(&v).map_or(Step::NotPresent, |p| Step::Leaf { pfn_base: p.0, size: K4 });
                prop_assert_eq!(step, want);
                // The code is the allocator's CPFN of that frame (an empty entry is all zeros, not present).
                if reference.is_empty() {
                    continue;
                }
                let code = f.toc(&words)[j as usize];
                let expect = reference.get(&v).map_or(cpfn::UNMAPPED, |p| cpfn::encode(h.slot_of(*p, asid, v).unwrap()));
                prop_assert_eq!(code, expect);
            }
        }
        if reference.is_empty() {
            prop_assert!(words.iter().all(|&w| w == 0));
        }
    }
}

fn toc_table(arity: u32, m: &PhysMem) -> PageTable {
    PageTable::new(AnyFormat::MosaicToc(toc(arity, 4, Some(pool_hasher(m))).unwrap()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Random map/unmap through the Iceberg allocator: every mapped page's
    /// leaf CPFN decodes to the frame the allocator placed it at (the
    /// reverse map owns it), translation agrees with a map-based reference,
    /// and unmapped pages and emptied ToCs read as not present.
    #[test]
    fn leaf_cpfns_match_the_allocators_placements(
        arity_i in 0usize..5,
        ops in prop::collection::vec((0u16..3, 0u64..512, any::<bool>()), 1..200),
    ) {
        let arity = ARITIES[arity_i];
        // A pool of 64 buckets (4096 frames) for at most 3 × 512 pages.
        let mut m = iceberg_mem(64 << 20, 64);
        let h = pool_hasher(&m);
        let mut pt = toc_table(arity, &m);
        let f = toc(arity, 4, Some(h.clone())).unwrap();
        let mut live: BTreeMap<(Asid, u64), Pfn> = BTreeMap::new();
        for (asid, page, unmap) in ops {
            // Spread pages over several ToCs and leaf nodes.
            let vpn = (page % 37) + (page / 37) * 1000;
            let va = vpn << 12;
            if unmap {
                let got = pt.unmap(&mut m, asid, va);
                prop_assert_eq!(got.map(|l| Pfn(l.pfn_base)), live.get(&(asid, vpn)).copied());
                if let Some(pfn) = live.remove(&(asid, vpn)) {
                    let req = m.free_page(pfn).unwrap();
                    prop_assert_eq!((req.asid, req.vpn), (asid, vpn));
                }
            } else if pt.region_unmapped(&m, asid, va, K4) {
                prop_assert!(!live.contains_key(&(asid, vpn)));
                let req = PageRequest { asid, vpn, size: K4 };
                let pfn = m.alloc_page(req, true).unwrap().unwrap();
                pt.map(&mut m, asid, va, K4, pfn).unwrap();
                live.insert((asid, vpn), pfn);
            } else {
                prop_assert!(live.contains_key(&(asid, vpn)));
            }
            prop_assert_eq!(pt.mappings(K4), live.len() as u64);
        }
        let AnyAllocator::Iceberg(ice) = m.allocator() else { unreachable!() };
        for (&(asid, vpn), &pfn) in &live {
            prop_assert_eq!(m.owner(pfn).map(|r| (r.asid, r.vpn)), Some((asid, vpn)));
            prop_assert_eq!(pt.translate(&m, asid, (vpn << 12) + 123), Some((pfn, K4)));
            // The leaf's code for this page is the allocator's CPFN, and decodes to its frame.
            let leaf = pt.leaf(&m, asid, vpn << 12).unwrap();
            prop_assert_eq!(leaf.addr % 64 + 8 * f.entry_words() as u64 <= 64, true, "the ToC is in one line");
            let n = f.entry_words() as u64;
            let words: Vec<u64> = (0..n).map(|k| m.read_u64(leaf.addr + 8 * k)).collect();
            let code = f.toc(&words)[(vpn % arity as u64) as usize];
            prop_assert_eq!(code, ice.cpfn(pfn, asid, vpn));
            prop_assert_eq!(cpfn::decode(code, asid, vpn, &h), Some(pfn));
        }
        // Every page that is not live reads as not mapped.
        for asid in 0..3u16 {
            for page in 0..512u64 {
                let vpn = (page % 37) + (page / 37) * 1000;
                if !live.contains_key(&(asid, vpn)) {
                    prop_assert_eq!(pt.translate(&m, asid, vpn << 12), None);
                    prop_assert!(pt.region_unmapped(&m, asid, vpn << 12, K4));
                }
            }
        }
        for (&(asid, vpn), &pfn) in &live {
            pt.unmap(&mut m, asid, vpn << 12).unwrap();
            m.free_page(pfn).unwrap();
        }
        prop_assert_eq!(pt.mappings(K4), 0);
        m.allocator().check_invariants().unwrap();
    }
}

#[test]
fn the_leaf_entry_is_read_at_its_toc_line() {
    let mut m = iceberg_mem(64 << 20, 64);
    for arity in ARITIES {
        let mut pt = toc_table(arity, &m);
        let f = toc(arity, 4, Some(pool_hasher(&m))).unwrap();
        let asid = arity as Asid;
        let vpn = 0x12345u64;
        let pfn = m.alloc_page(PageRequest { asid, vpn, size: K4 }, true).unwrap().unwrap();
        pt.map(&mut m, asid, vpn << 12, K4, pfn).unwrap();
        let leaf = pt.leaf(&m, asid, vpn << 12).unwrap();
        let node = m.table_frame_of(leaf.slot).0 << 12;
        assert_eq!(leaf.addr, node + f.index(vpn << 12, 1) * 8 * f.entry_words() as u64, "arity {arity}");
        assert_eq!(leaf.addr % (8 * f.entry_words() as u64), 0, "aligned to its size, so within one line");
        // Four nodes: three x86 levels and one leaf node.
        assert_eq!((pt.nodes(4), pt.nodes(3), pt.nodes(2), pt.nodes(1)), (1, 1, 1, 1));
    }
}
