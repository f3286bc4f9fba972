//! In-place coalescing and splintering of a large page over its base pages
//! (GPU Mosaic's page-table operations).
//!
//! ## What it models
//! Coalescing turns the present leaves of one node (512 of 4 KiB, or 32 of
//! 64 KiB in a table whose 64 KiB level sits below the 2 MiB one),
//! virtually and physically contiguous and aligned, into one 2 MiB page
//! without moving data: the entry above keeps pointing at the node and gets
//! its large-page bit, and every entry of the node gets the format's
//! *disabled* bit. A walk
//! then reads the level-2 entry, sees the bit, reads the level-1 entry of
//! the address (the paper reads the node's first; any one holds the large
//! page's frame number), and returns the large page
//! (the format decodes [`Step::LargeViaNext`]). Splintering reverses it.
//! Only formats whose large pages keep their node
//! ([`PageTableFormat::large_keeps_node`]) can do either.
//! ## Paper
//! Ausavarungnirun et al., "Mosaic", MICRO 2017, doi:10.1145/3123939.3123975,
//! §4.3 (Fig. 7: large-page bit in the L3 PTE, disabled bits in the L4
//! PTEs) and §4.4 (splintering).
//! ## Choices where the paper is silent
//! - The disabled bits are set after the large-page bit (the paper's
//!   order); both are written at once here, as nothing runs in between.
//! - Accessed and dirty bits of the level-1 entries are kept.

use super::format::{FormatExt, PageTableFormat, Step};
use super::PageTable;
use crate::addr::{Asid, PageSize};
use crate::physmem::PhysMem;

/// What [`PageTable::coalesce`] found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Coalesced {
    /// The region is now one large page.
    Done,
    /// It already was.
    Already,
    /// Some base page of the region is not mapped.
    NotFull,
    /// Every base page is mapped, but not to one aligned, contiguous frame.
    NotContiguous,
}

impl PageTable {
    /// The host slot and word of `va`'s entry at `level`, following links
    /// from the root; None when a node on the way is missing or a leaf
    /// above `level` covers `va`.
    fn entry_at(&self, mem: &PhysMem, asid: Asid, va: u64, level: u32) -> Option<(u32, u64)> {
        let (_, mut node) = self.root_slots.get(asid as usize).copied().flatten()?;
        let format = &self.format;
        for l in (level + 1..=self.levels).rev() {
            let (slot, w) = format.locate(l, node, format.word(va, l));
            match format.decode(mem.read_entry(slot, w), l, va, asid, &|k| mem.read_entry(slot, w + k as u64)) {
                Step::Next { .. } => node = mem.entry_link(slot, w + format.table_word(va, l) as u64),
                _ => return None,
            }
        }
        Some(format.locate(level, node, format.word(va, level)))
    }

    /// Coalesce the `size` region containing `va` in place (see the module
    /// docs). Changes nothing unless it answers `Done`.
    pub fn coalesce(&mut self, mem: &mut PhysMem, asid: Asid, va: u64, size: PageSize) -> Coalesced {
        let format = &self.format;
        let Some(level) = format.leaf_level(size).filter(|&l| l > 1 && format.large_keeps_node()) else {
            return Coalesced::NotContiguous;
        };
        let Some((slot, w)) = self.entry_at(mem, asid, va, level) else { return Coalesced::NotFull };
        let raw = mem.read_entry(slot, w);
        let node = match format.decode(raw, level, va, asid, &|_| 0) {
            Step::Next { node } => node,
            Step::NotPresent => return Coalesced::NotFull,
            Step::Leaf { .. } | Step::LargeViaNext { .. } => return Coalesced::Already,
        };
        let child = mem.entry_link(slot, w);
        let (frames, piece_frames) = (format.level_frames(level), format.level_frames(level - 1));
        let pieces = frames / piece_frames;
        let ew = format.entry_words() as u64;
        let region = va & !(size.bytes() - 1);
        let mut first = None;
        let mut piece_size = PageSize::Size4K;
        for i in 0..pieces {
            let piece_va = region + i * (piece_frames << 12);
            match format.decode(mem.read_entry(child, i * ew), level - 1, piece_va, asid, &|_| 0) {
                Step::Leaf { pfn_base, size } => {
                    piece_size = size;
                    let f = *first.get_or_insert(pfn_base);
                    if f % frames != 0 || pfn_base != f + i * piece_frames {
                        return Coalesced::NotContiguous;
                    }
                }
                _ => return Coalesced::NotFull,
            }
        }
        let disabled = format.disabled_bit();
        mem.write_table_entry(slot, w, format.encode_leaf(size, crate::addr::Pfn(node)), child);
        for i in 0..pieces {
            let r = mem.read_entry(child, i * ew);
            mem.write_table_entry(child, i * ew, r | disabled, 0);
        }
        self.mappings[piece_size.index()] -= pieces;
        self.mappings[size.index()] += 1;
        Coalesced::Done
    }

    /// Splinter the coalesced `size` page containing `va` back into its
    /// base pages; false (and no change) when it is not one.
    pub fn splinter(&mut self, mem: &mut PhysMem, asid: Asid, va: u64, size: PageSize) -> bool {
        let format = &self.format;
        let Some(level) = format.leaf_level(size).filter(|&l| l > 1 && format.large_keeps_node()) else { return false };
        let Some((slot, w)) = self.entry_at(mem, asid, va, level) else { return false };
        let raw = mem.read_entry(slot, w);
        let Step::LargeViaNext { node, .. } = format.decode(raw, level, va, asid, &|_| 0) else { return false };
        let child = mem.entry_link(slot, w);
        let pieces = format.level_frames(level) / format.level_frames(level - 1);
        let piece_size = PageSize::from_shift(format.level_shift(level - 1)).expect("a coalesced page's pieces are pages");
        let ew = format.entry_words() as u64;
        let disabled = format.disabled_bit();
        // Disabled bits first, then the large-page bit (§4.4).
        for i in 0..pieces {
            let r = mem.read_entry(child, i * ew);
            mem.write_table_entry(child, i * ew, r & !disabled, 0);
        }
        mem.write_table_entry(slot, w, format.encode_table(crate::addr::Pfn(node), level), child);
        self.mappings[size.index()] -= 1;
        self.mappings[piece_size.index()] += pieces;
        true
    }

    /// Whether the `size` page containing `va` is a coalesced large page.
    pub fn is_coalesced(&self, mem: &PhysMem, asid: Asid, va: u64, size: PageSize) -> bool {
        let Some(level) = self.format.leaf_level(size).filter(|&l| l > 1 && self.format.large_keeps_node()) else { return false };
        self.entry_at(mem, asid, va, level).is_some_and(|(slot, w)| {
            matches!(self.format.decode(mem.read_entry(slot, w), level, va, asid, &|_| 0), Step::LargeViaNext { .. })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Pfn;
    use crate::config::spec::PhysMemSpec;
    use crate::pagetable::radix;
    use crate::registry::{AnyFormat, Mechanism};

    fn setup() -> (PageTable, PhysMem) {
        let cfg = radix::Config { large_reads_next: true, ..radix::Config::default() };
        let ctx = crate::pagetable::x86_radix::FormatCtx { levels: None, hasher: None };
        let format = AnyFormat::Radix(radix::Radix::build(&cfg, &ctx).unwrap());
        let spec: PhysMemSpec = toml::from_str("capacity = \"64MiB\"").unwrap();
        (PageTable::new(format), PhysMem::build(&spec, 1).unwrap())
    }

    const VA: u64 = 0x4000_0000;

    fn map_region(pt: &mut PageTable, mem: &mut PhysMem, first: u64, skip: Option<u64>, swap: bool) {
        for i in 0..512u64 {
            if Some(i) == skip {
                continue;
            }
            let j = if swap && i < 2 { 1 - i } else { i };
            pt.map(mem, 1, VA + (i << 12), PageSize::Size4K, Pfn(first + j)).unwrap();
        }
    }

    #[test]
    fn a_full_contiguous_region_coalesces_and_walks_to_the_large_page() {
        let (mut pt, mut mem) = setup();
        map_region(&mut pt, &mut mem, 4096, None, false);
        let epoch = mem.table_epoch();
        assert_eq!(pt.coalesce(&mut mem, 1, VA + 12345, PageSize::Size2M), Coalesced::Done);
        assert!(mem.table_epoch() > epoch, "walk paths recorded before must be dropped");
        let leaf = pt.leaf(&mem, 1, VA + (7 << 12) + 5).unwrap();
        assert_eq!((leaf.size, leaf.pfn_base, leaf.level), (PageSize::Size2M, 4096, 1));
        assert_eq!(pt.translate(&mem, 1, VA + (7 << 12)), Some((Pfn(4096 + 7), PageSize::Size2M)));
        assert_eq!((pt.mappings(PageSize::Size4K), pt.mappings(PageSize::Size2M)), (0, 1));
        assert!(pt.is_coalesced(&mem, 1, VA, PageSize::Size2M));
        // Every base entry carries the disabled bit and still maps its frame.
        let disabled = pt.format().disabled_bit();
        assert_ne!(disabled, 0);
        assert_eq!(leaf.raw & disabled, disabled);
        assert_eq!(pt.coalesce(&mut mem, 1, VA, PageSize::Size2M), Coalesced::Already);
        // Splintering gives the base pages back, bits cleared.
        assert!(pt.splinter(&mut mem, 1, VA, PageSize::Size2M));
        let leaf = pt.leaf(&mem, 1, VA + (7 << 12)).unwrap();
        assert_eq!((leaf.size, leaf.pfn_base, leaf.raw & disabled), (PageSize::Size4K, 4096 + 7, 0));
        assert_eq!((pt.mappings(PageSize::Size4K), pt.mappings(PageSize::Size2M)), (512, 0));
        assert!(!pt.splinter(&mut mem, 1, VA, PageSize::Size2M));
    }

    #[test]
    fn a_region_with_a_hole_misplaced_or_unaligned_pages_does_not_coalesce() {
        let (mut pt, mut mem) = setup();
        map_region(&mut pt, &mut mem, 4096, Some(300), false);
        assert_eq!(pt.coalesce(&mut mem, 1, VA, PageSize::Size2M), Coalesced::NotFull);
        let (mut pt, mut mem) = setup();
        map_region(&mut pt, &mut mem, 4096, None, true);
        assert_eq!(pt.coalesce(&mut mem, 1, VA, PageSize::Size2M), Coalesced::NotContiguous);
        let (mut pt, mut mem) = setup();
        map_region(&mut pt, &mut mem, 4096 + 1, None, false);
        assert_eq!(pt.coalesce(&mut mem, 1, VA, PageSize::Size2M), Coalesced::NotContiguous);
        assert_eq!(pt.mappings(PageSize::Size4K), 512);
        assert_eq!(pt.coalesce(&mut mem, 2, VA, PageSize::Size2M), Coalesced::NotFull);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

        /// Coalescing succeeds exactly when all 512 pages are mapped to one
        /// aligned frame in order, and then every page still translates to
        /// the frame it had; otherwise nothing changes (the first page out
        /// of place, in address order, says why).
        #[test]
        fn coalesces_exactly_full_aligned_in_order_regions(
            base in 0u64..4, holes in proptest::collection::vec(0u64..512, 0..2),
            swaps in proptest::collection::vec((0u64..512, 0u64..512), 0..2), shift in 0u64..2,
        ) {
            let (mut pt, mut mem) = setup();
            let first = 4096 + base * 512 + shift;
            let mut frames: Vec<u64> = (0..512).map(|i| first + i).collect();
            for &(a, b) in &swaps {
                frames.swap(a as usize, b as usize);
            }
            for i in 0..512u64 {
                if !holes.contains(&i) {
                    pt.map(&mut mem, 1, VA + (i << 12), PageSize::Size4K, Pfn(frames[i as usize])).unwrap();
                }
            }
            // The first page, in address order, that is missing or out of place decides.
            let mut want = Coalesced::Done;
            for i in 0..512u64 {
                if holes.contains(&i) {
                    want = Coalesced::NotFull;
                    break;
                }
                if frames[0] % 512 != 0 || frames[i as usize] != frames[0] + i {
                    want = Coalesced::NotContiguous;
                    break;
                }
            }
            proptest::prop_assert_eq!(pt.coalesce(&mut mem, 1, VA, PageSize::Size2M), want);
            for i in 0..512u64 {
                let got = pt.translate(&mem, 1, VA + (i << 12));
                if holes.contains(&i) {
                    proptest::prop_assert_eq!(got, None);
                } else {
                    let size = if want == Coalesced::Done { PageSize::Size2M } else { PageSize::Size4K };
                    proptest::prop_assert_eq!(got, Some((Pfn(frames[i as usize]), size)));
                }
            }
        }
    }
}
