//! Walks of GTSM tables (`pagetable.format = "gt_pde"`): the references of
//! each mode counted in scenarios, the PDE cache's GT-PDEs, and random
//! tables checked against a naive decoder.

use super::*;
use crate::config::{load, ConfigSource};
use crate::pagetable::gt_pde::{select_naive, GtMode};
use crate::pagetable::gt_table::GtTable;
use crate::addr::Pfn;
use crate::pagetable::PageTable;
use proptest::prelude::*;

struct Rig {
    walker: Walker,
    mem: PhysMem,
    pt: PageTable,
    caches: CacheHierarchy,
}

fn rig(preset: &str, mode: GtMode, extra: &[&str]) -> Rig {
    let mut o = vec!["pagetable.format.kind=gt_pde".to_string(), format!("pagetable.format.mode={}", mode.name())];
    o.extend(extra.iter().map(|s| s.to_string()));
    o.push("physmem.capacity=4GiB".into());
    let spec = load(&ConfigSource::Preset(preset.into()), &o).unwrap();
    let caches = CacheHierarchy::build(&spec.cache, 3).unwrap();
    let names: Vec<&'static str> = caches.level_names().to_vec();
    let ctx = crate::pagetable::x86_radix::FormatCtx { levels: spec.pagetable.levels, ..Default::default() };
    let format = AnyFormat::build(&spec.pagetable.format, &ctx, "pagetable.format").unwrap();
    Rig {
        walker: Walker::build(&spec, &format, &names, 3).unwrap(),
        mem: PhysMem::build(&spec.physmem, 3).unwrap(),
        pt: PageTable::new(format),
        caches,
    }
}

impl Rig {
    fn table(&self) -> &GtTable {
        match self.pt.format() {
            AnyFormat::GtPde(t) => t,
            _ => unreachable!(),
        }
    }
    /// Map the slot of `va` with a GT-PDE over the slice at `base` (and
    /// `b` for a pair) with `bitmap`.
    fn map_gt(&mut self, va: u64, base: u64, b: Option<u64>, bitmap: u64) {
        let words = self.table().encode_gt(Pfn(base >> 12), b.map(|b| Pfn(b >> 12)), bitmap).unwrap();
        assert!(self.pt.entry_free(&self.mem, 0, va, 2));
        self.pt.map_words(&mut self.mem, 0, va, 2, &words).unwrap();
    }
    fn map_4k(&mut self, va: u64) -> u64 {
        let pfn = self.mem.alloc(0, "test page").unwrap();
        self.pt.map(&mut self.mem, 0, va, PageSize::Size4K, pfn).unwrap();
        pfn.0
    }
    fn walk(&mut self, va: u64, write: bool) -> (WalkResult, u64) {
        let (root, slot) = self.pt.root_linked(&mut self.mem, 0).unwrap();
        self.walker.walk(self.pt.format(), va, 0, (root.0, slot), write, false, &mut self.mem, &mut self.caches)
    }
    fn frame(&mut self, va: u64) -> Option<u64> {
        match self.walk(va, false).0 {
            WalkResult::Translated { pfn_base, size, .. } => {
                assert_eq!(size, PageSize::Size4K, "GT tables give the TLBs 4 KiB pages");
                Some(pfn_base)
            }
            WalkResult::Fault { .. } => None,
        }
    }
}

/// Slices far above the table frames the tests allocate from the bottom.
const SLICE: u64 = 1 << 31;
const HALF_ONES: u64 = 0xffff_ffff;
const VA: u64 = 0x7f00_0000_0000;

/// Where `va` lands under a GT-PDE over `base` with `bitmap`, by the bit loop.
fn naive(mode: GtMode, base: u64, bitmap: u64, va: u64) -> u64 {
    let pos = select_naive(bitmap, mode.block_index(va)).unwrap() as u64;
    (base + (pos << mode.block_shift()) + (va & ((1 << mode.block_shift()) - 1))) >> 12
}

#[test]
fn a_gt_pde_ends_the_walk_at_the_third_reference_in_every_mode() {
    for mode in GtMode::ALL {
        let mut r = rig("tlb_only", mode, &[]);
        let bitmap = 0xaaaa_aaaa_aaaa_aaaa;
        let b = mode.paired().then_some(SLICE + (1 << 26));
        r.map_gt(VA, SLICE, b, bitmap);
        let va = VA + (5 << mode.block_shift()) + 0x1234;
        assert_eq!(r.frame(va), Some(naive(mode, SLICE, bitmap, va)), "{mode:?}");
        assert_eq!(r.walker.stats.refs_total, 3, "{mode:?}: PML4, PDPT, PD");
        assert_eq!(r.walker.whole_leaves, 1);
        if let Some(b) = b {
            // The second superpage of the pair lies in the second slice.
            let va2 = va + (1 << mode.superpage_shift());
            assert_eq!(r.frame(va2), Some(naive(mode, b, bitmap, va2)), "{mode:?}");
        }
        // The PD table is 16 bytes a slot, in contiguous frames.
        assert_eq!(r.mem.table_frames(), 2 + (mode.pd_table_bytes() >> 12), "{mode:?}");
    }
}

#[test]
fn the_decode_costs_its_configured_cycles() {
    let cycles = |c: u32| {
        let mut r = rig("tlb_only", GtMode::Gt4M, &[&format!("pagetable.format.decode_cycles={c}")]);
        r.map_gt(VA, SLICE, None, HALF_ONES);
        r.walk(VA, false).1
    };
    assert_eq!(cycles(6) - cycles(3), 3);
    assert_eq!(cycles(3) - cycles(0), 3);
}

#[test]
fn four_k_pages_under_a_gt_table_take_four_references() {
    for mode in GtMode::ALL {
        let mut r = rig("tlb_only", mode, &[]);
        let pfn = r.map_4k(VA + 0x5000);
        assert_eq!(r.frame(VA + 0x5000), Some(pfn), "{mode:?}");
        assert_eq!(r.walker.stats.refs_total, 4, "{mode:?}");
        assert_eq!(r.walker.whole_leaves, 0);
    }
}

#[test]
fn a_4m_slot_holds_the_pdes_of_both_2m_halves() {
    let mut r = rig("tlb_only", GtMode::Gt4M, &[]);
    let lo = r.map_4k(VA);
    let hi = r.map_4k(VA + (1 << 21));
    assert_eq!(r.pt.nodes(1), 2);
    assert_eq!((r.frame(VA), r.frame(VA + (1 << 21))), (Some(lo), Some(hi)));
    assert!(!r.pt.entry_free(&r.mem, 0, VA, 2), "either PDE keeps the slot from a GT-PDE");
}

#[test]
fn the_1m_mode_reads_past_the_padding_to_the_even_slot() {
    let mut r = rig("tlb_only", GtMode::Gt1M, &[]);
    let even = r.map_4k(VA);
    let odd = r.map_4k(VA + (1 << 20));
    assert_eq!(r.pt.nodes(1), 1, "one PT covers the 2 MiB region");
    assert!(!r.pt.entry_free(&r.mem, 0, VA + (1 << 20), 2), "the even slot's PDE covers the odd half");
    assert_eq!(r.frame(VA), Some(even));
    assert_eq!(r.walker.stats.refs_total, 4);
    assert_eq!(r.frame(VA + (1 << 20)), Some(odd));
    assert_eq!(r.walker.stats.refs_total, 4 + 5, "the padding costs a second PD reference");
    // An odd half with nothing mapped faults after reading both slots.
    let (res, _) = r.walk(VA + (3 << 20), false);
    assert_eq!(res, WalkResult::Fault { level: 2 });
    assert_eq!(r.walker.stats.refs_total, 9 + 4);
}

#[test]
fn the_1m_mode_puts_a_pde_in_the_odd_slot_beside_an_even_gt_pde() {
    let mut r = rig("tlb_only", GtMode::Gt1M, &[]);
    r.map_gt(VA, SLICE, None, HALF_ONES);
    assert!(r.pt.entry_free(&r.mem, 0, VA + (1 << 20), 2));
    let odd = r.map_4k(VA + (1 << 20) + 0x3000);
    assert_eq!(r.frame(VA + (1 << 20) + 0x3000), Some(odd));
    assert_eq!(r.walker.stats.refs_total, 4, "the PDE is in its own slot: no second reference");
    assert_eq!(r.frame(VA + 0x3000), Some(naive(GtMode::Gt1M, SLICE, HALF_ONES, VA + 0x3000)));
    // Past padding only a pointer serves: the even GT-PDE does not map an odd address.
    let mut r = rig("tlb_only", GtMode::Gt1M, &[]);
    r.map_gt(VA, SLICE, None, HALF_ONES);
    assert_eq!(r.walk(VA + (1 << 20), false).0, WalkResult::Fault { level: 2 });
}

#[test]
fn the_pde_cache_holds_gt_pdes_and_ends_walks_with_no_reference() {
    let mut r = rig("gtsm_ptlsim", GtMode::Gt4M, &[]);
    let bitmap = 0x0f0f_0f0f_0f0f_0f0f;
    r.map_gt(VA, SLICE, None, bitmap);
    let (_, cold) = r.walk(VA, false);
    let refs = r.walker.stats.refs_total;
    assert_eq!(refs, 3);
    let va = VA + (17 << 17) + 0x2000;
    let (res, warm) = r.walk(va, false);
    assert!(matches!(res, WalkResult::Translated { pfn_base, level: 2, .. } if pfn_base == naive(GtMode::Gt4M, SLICE, bitmap, va)));
    assert_eq!(r.walker.stats.refs_total, refs, "served by the PDE cache");
    assert_eq!(warm, 3, "the decode alone (the PSCs are probed in parallel with the L2 TLB)");
    assert!(warm < cold);
    assert_eq!(r.walker.whole_leaves, 2);
    let pde = r.walker.pscs.iter().find(|p| p.name == "pde").unwrap();
    assert_eq!((pde.stats.hits, pde.stats.fills), (1, 1));
    // A store to the clean superpage must set its dirty bit in memory.
    let (res, _) = r.walk(va, true);
    assert!(matches!(res, WalkResult::Translated { dirty: true, .. }));
    assert_eq!(r.walker.stats.refs_total, refs + 1, "the PD entry is read again (the PDPTE cache gives its node)");
    let leaf = r.pt.leaf(&r.mem, 0, va).unwrap();
    assert!(r.pt.format().is_dirty(leaf.raw));
    // Now the cached copy is dirty: stores hit it.
    r.walk(va + 0x1000, true);
    assert_eq!(r.walker.stats.refs_total, refs + 1);
}

#[test]
fn a_cached_slot_missing_the_other_half_is_dropped_and_read_again() {
    let mut r = rig("gtsm_ptlsim", GtMode::Gt4M, &[]);
    let lo = r.map_4k(VA);
    assert_eq!(r.frame(VA), Some(lo));
    // The upper 2 MiB's PDE is written after the slot was cached.
    let hi = r.map_4k(VA + (1 << 21));
    assert_eq!(r.frame(VA + (1 << 21)), Some(hi));
    assert_eq!(r.frame(VA + 0x1000 + (1 << 21)), None, "a hole in the PT still faults");
    let pde = r.walker.pscs.iter().find(|p| p.name == "pde").unwrap();
    assert!(pde.stats.fills >= 2);
}

#[derive(Clone, Debug)]
enum Op {
    Gt { slot: u64, bitmap_seed: u64, pair_offset: u64 },
    Page { page: u64 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        (0u64..16, any::<u64>(), 1u64..8).prop_map(|(slot, bitmap_seed, pair_offset)| Op::Gt { slot, bitmap_seed, pair_offset }),
        (0u64..(64 << 8)).prop_map(|page| Op::Page { page }),
    ]
}

/// A bitmap of exactly 32 set bits drawn from `seed`.
fn bitmap(mut seed: u64) -> u64 {
    let mut b = 0u64;
    while b.count_ones() < 32 {
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        b |= 1 << (seed >> 58);
    }
    b
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    /// Random GT-PDEs and 4 KiB pages in every mode: the walker (with and
    /// without the PDE cache) agrees with the software walk and with a
    /// naive decoder of what was mapped.
    #[test]
    fn walks_agree_with_a_naive_decoder(mode in 0usize..5, ops in prop::collection::vec(op(), 1..40), probes in prop::collection::vec(0u64..(64 << 20), 1..60)) {
        let mode = GtMode::ALL[mode];
        let mut cold = rig("tlb_only", mode, &[]);
        let mut warm = rig("gtsm_ptlsim", mode, &[]);
        let mut expect: std::collections::HashMap<u64, u64> = Default::default();
        for (n, op) in ops.iter().enumerate() {
            match *op {
                Op::Gt { slot, bitmap_seed, pair_offset } => {
                    let va = VA + (slot << mode.entry_shift());
                    if !cold.pt.entry_free(&cold.mem, 0, va, 2) {
                        continue;
                    }
                    let bm = bitmap(bitmap_seed);
                    let base = SLICE + ((n as u64) << 27);
                    let b = mode.paired().then_some(base + (pair_offset << mode.slice_shift()));
                    for r in [&mut cold, &mut warm] {
                        r.map_gt(va, base, b, bm);
                    }
                    for p in 0..1u64 << (mode.entry_shift() - 12) {
                        let a = va + (p << 12);
                        let half = mode.half(a);
                        let slice = if half == 1 { b.unwrap() } else { base };
                        expect.insert(a >> 12, naive(mode, slice, bm, a));
                    }
                }
                Op::Page { page } => {
                    let va = VA + (page << 12);
                    if expect.contains_key(&(va >> 12)) || cold.pt.leaf(&cold.mem, 0, va).is_some() {
                        continue;
                    }
                    // A 4 KiB page needs a PDE where no GT-PDE sits.
                    let pd_free = cold.pt.entry_free(&cold.mem, 0, va, 2) || cold.pt.translate(&cold.mem, 0, va).is_none() && !expect.keys().any(|&k| k >> (mode.entry_shift() - 12) == va >> mode.entry_shift());
                    if !pd_free {
                        continue;
                    }
                    let pfn = cold.mem.alloc(0, "page").unwrap();
                    cold.pt.map(&mut cold.mem, 0, va, PageSize::Size4K, pfn).unwrap();
                    let w = warm.mem.alloc(0, "page").unwrap();
                    prop_assert_eq!(w, pfn, "both rigs allocate alike");
                    warm.pt.map(&mut warm.mem, 0, va, PageSize::Size4K, w).unwrap();
                    expect.insert(va >> 12, pfn.0);
                }
            }
        }
        for &off in &probes {
            let va = VA + off;
            let want = expect.get(&(va >> 12)).copied();
            prop_assert_eq!(cold.pt.translate(&cold.mem, 0, va).map(|(p, _)| p.0), want, "software walk at {:#x}", va);
            prop_assert_eq!(cold.frame(va), want, "walk at {:#x}", va);
            prop_assert_eq!(warm.frame(va), want, "walk with MMU caches at {:#x}", va);
        }
    }
}
