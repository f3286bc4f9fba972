//! x86-64 radix page-table entry format (4- and 5-level paging).
//!
//! ## What it models
//! The 64-bit entries of the x86-64 radix tree as they sit in simulated
//! physical memory: `present` (bit 0), `writable` (bit 1), `user` (bit 2),
//! `accessed` (bit 5), `dirty` (bit 6), page size `PS` (bit 7) and the frame
//! address in bits 12..=51. Level 1 is the page table (PT, 4 KiB leaves),
//! level 2 the page directory (PD, 2 MiB leaves when `PS` = 1), level 3 the
//! PDPT (1 GiB leaves when `PS` = 1), level 4 the PML4 and level 5 the PML5.
//! Each level indexes 9 bits of the virtual address above the 12-bit offset.
//! ## Paper
//! Intel SDM Vol. 3A §4.5 (4-level and 5-level paging), Tables 4-15..4-20.
//! ## Choices where the manual is richer than the model
//! - Not modelled: PWT, PCD, global, PAT, protection keys, NX and the
//!   ignored/available bits. [`Pte::encode`] leaves them zero and
//!   [`Pte::decode`] ignores them.
//! - A large leaf keeps its frame in bits 12..=51 like every other entry; its
//!   frame must be naturally aligned ([`Pte::check_at`]), so the bits that the
//!   hardware uses for PAT (bit 12) are zero.
//! - `PS` is only meaningful at levels 2 and 3; [`is_leaf`] ignores it at
//!   levels 4 and 5 (where the hardware reserves it) and at level 1 (PAT).
//! - Virtual-address bits above the table's reach (48 or 57) are ignored.
//! ## Config
//! `pagetable.format = "x86_radix"`, `pagetable.levels = 4 | 5`.
//! ## Stats
//! None (see [`super::PageTable`]).

use serde::{Deserialize, Serialize};

use super::format::{PageTableFormat, Step};
use crate::addr::{PageSize, Pfn, BASE_SHIFT};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

/// The x86-64 radix format as a member of the `pagetable.format` family.
#[derive(Clone, Debug)]
pub struct X86Radix {
    levels: u32,
}

/// No parameters of its own: the depth is `pagetable.levels`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

/// What a format is built with: the depth asked for at `pagetable.levels`,
/// if any, and the Iceberg pool's hash functions when the frame allocator
/// is `iceberg` (a format storing CPFNs decodes them with it).
#[derive(Clone, Debug, Default)]
pub struct FormatCtx {
    pub levels: Option<u32>,
    pub hasher: Option<crate::physmem::allocator::iceberg::hash::IcebergHasher>,
}

const SIZES: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];

impl Mechanism for X86Radix {
    const NAME: &'static str = "x86_radix";
    const SUMMARY: &'static str = "x86-64 radix table: 4 or 5 levels of 512 8-byte entries; 4 KiB, 2 MiB and 1 GiB pages";
    type Config = Config;
    type Ctx = FormatCtx;
    fn build(_: &Config, ctx: &FormatCtx) -> Result<Self> {
        let levels = ctx.levels.unwrap_or(4);
        if !(levels == 4 || levels == 5) {
            return Err(Error::config_allowed(
                "pagetable.levels",
                format!("{levels} levels is not an x86-64 radix depth"),
                &["4", "5"],
            ));
        }
        Ok(X86Radix { levels })
    }
}

impl PageTableFormat for X86Radix {
    #[inline]
    fn levels(&self) -> u32 {
        self.levels
    }
    #[inline]
    fn level_shift(&self, level: u32) -> u32 {
        level_shift(level)
    }
    #[inline]
    fn index(&self, va: u64, level: u32) -> u64 {
        index(va, level)
    }
    #[inline]
    fn entry_words(&self) -> u32 {
        1
    }
    fn va_bits(&self) -> u32 {
        va_bits(self.levels)
    }
    fn sizes(&self) -> &[PageSize] {
        &SIZES
    }
    #[inline]
    fn leaf_level(&self, size: PageSize) -> Option<u32> {
        leaf_level(size)
    }
    #[inline]
    fn decode(&self, raw: u64, level: u32, _va: u64, _asid: crate::addr::Asid, _word: &dyn Fn(u32) -> u64) -> Step {
        if raw & PRESENT == 0 {
            Step::NotPresent
        } else if is_leaf(raw, level) {
            let size = match level {
                1 => PageSize::Size4K,
                2 => PageSize::Size2M,
                _ => PageSize::Size1G,
            };
            Step::Leaf { pfn_base: frame(raw).0, size }
        } else {
            Step::Next { node: frame(raw).0 }
        }
    }
    fn encode_leaf(&self, size: PageSize, pfn: Pfn) -> u64 {
        let leaf = Pte::leaf(size, pfn);
        debug_assert!(leaf_level(size).is_some_and(|l| leaf.check_at(l).is_ok()));
        leaf.encode()
    }
}

pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const ACCESSED: u64 = 1 << 5;
pub const DIRTY: u64 = 1 << 6;
pub const PAGE_SIZE: u64 = 1 << 7;
/// Frame address bits 12..=51.
pub const ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;
/// Every bit this model defines; the rest are written as zero.
pub const DEFINED_BITS: u64 = PRESENT | WRITABLE | USER | ACCESSED | DIRTY | PAGE_SIZE | ADDR_MASK;
/// Index bits per level.
pub const LEVEL_BITS: u32 = 9;
/// Entries per node.
pub const ENTRIES: u64 = 1 << LEVEL_BITS;
/// Bytes per entry.
pub const ENTRY_BYTES: u64 = 8;
/// Largest frame number an entry can hold (40 bits).
pub const MAX_PFN: u64 = ADDR_MASK >> BASE_SHIFT;

/// Accessed and dirty bits of the x86 entry layout, shared by the formats that use it.
pub mod bits {
    use super::{ACCESSED, DIRTY};
    /// The entry after a walk used it: accessed, and dirty on a store to a leaf.
    #[inline]
    pub fn used(raw: u64, leaf: bool, write: bool) -> u64 {
        raw | ACCESSED | if leaf && write { DIRTY } else { 0 }
    }
    #[inline]
    pub fn is_dirty(raw: u64) -> bool {
        raw & DIRTY != 0
    }
    #[inline]
    pub fn is_accessed(raw: u64) -> bool {
        raw & ACCESSED != 0
    }
}

/// Decoded fields of one 64-bit entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Pte {
    pub present: bool,
    pub writable: bool,
    pub user: bool,
    pub accessed: bool,
    pub dirty: bool,
    /// `PS`: this level-2/3 entry is a large leaf rather than a pointer to a node.
    pub large: bool,
    pub pfn: Pfn,
}

impl Pte {
    /// A present, writable, user entry pointing at the next-level node `node`.
    #[inline]
    pub fn table(node: Pfn) -> Pte {
        Pte { present: true, writable: true, user: true, accessed: false, dirty: false, large: false, pfn: node }
    }

    /// A present, writable, user leaf mapping a page of `size` at `pfn` (A/D clear).
    #[inline]
    pub fn leaf(size: PageSize, pfn: Pfn) -> Pte {
        Pte {
            present: true,
            writable: true,
            user: true,
            accessed: false,
            dirty: false,
            large: size != PageSize::Size4K,
            pfn,
        }
    }

    /// The raw 64-bit entry.
    #[inline]
    pub fn encode(&self) -> u64 {
        debug_assert!(self.pfn.0 <= MAX_PFN, "frame {:#x} does not fit in an entry", self.pfn.0);
        (self.present as u64)
            | (self.writable as u64) << 1
            | (self.user as u64) << 2
            | (self.accessed as u64) << 5
            | (self.dirty as u64) << 6
            | (self.large as u64) << 7
            | ((self.pfn.0 << BASE_SHIFT) & ADDR_MASK)
    }

    /// Fields of a raw entry (undefined bits ignored).
    #[inline]
    pub fn decode(raw: u64) -> Pte {
        Pte {
            present: raw & PRESENT != 0,
            writable: raw & WRITABLE != 0,
            user: raw & USER != 0,
            accessed: raw & ACCESSED != 0,
            dirty: raw & DIRTY != 0,
            large: raw & PAGE_SIZE != 0,
            pfn: frame(raw),
        }
    }

    /// Whether this entry is well formed at `level`: `large` only at levels 2 and
    /// 3, and a large leaf's frame naturally aligned to the page it maps.
    pub fn check_at(&self, level: u32) -> Result<(), String> {
        if !(1..=5).contains(&level) {
            return Err(format!("level {level} out of range 1..=5"));
        }
        if self.pfn.0 > MAX_PFN {
            return Err(format!("frame {:#x} exceeds 40 bits", self.pfn.0));
        }
        if self.large {
            if !(2..=3).contains(&level) {
                return Err(format!("PS set at level {level}"));
            }
            let frames = level_frames(level);
            if self.pfn.0 & (frames - 1) != 0 {
                return Err(format!("large leaf frame {:#x} not aligned to {frames} frames", self.pfn.0));
            }
        }
        Ok(())
    }
}

/// Index into the node at `level` (1 = PT, 2 = PD, 3 = PDPT, 4 = PML4, 5 = PML5) for `va`.
#[inline]
pub fn index(va: u64, level: u32) -> u64 {
    (va >> level_shift(level)) & (ENTRIES - 1)
}

/// Shift of the virtual-address bits one entry at `level` covers (12, 21, 30, 39, 48).
#[inline]
pub const fn level_shift(level: u32) -> u32 {
    BASE_SHIFT + LEVEL_BITS * (level - 1)
}

/// Bytes of virtual address one entry at `level` covers (4 KiB, 2 MiB, 1 GiB, 512 GiB, 256 TiB).
#[inline]
pub const fn level_bytes(level: u32) -> u64 {
    1u64 << level_shift(level)
}

/// 4 KiB frames one entry at `level` covers.
#[inline]
pub const fn level_frames(level: u32) -> u64 {
    1u64 << (LEVEL_BITS * (level - 1))
}

/// The level whose leaves map pages of `size` (1, 2 or 3), if this format maps that size.
#[inline]
pub const fn leaf_level(size: PageSize) -> Option<u32> {
    match size {
        PageSize::Size4K => Some(1),
        PageSize::Size2M => Some(2),
        PageSize::Size1G => Some(3),
        PageSize::Size64K => None,
    }
}

/// The page size a leaf at `level` maps, if `level` can hold leaves.
#[inline]
pub const fn page_size_at(level: u32) -> Option<PageSize> {
    match level {
        1 => Some(PageSize::Size4K),
        2 => Some(PageSize::Size2M),
        3 => Some(PageSize::Size1G),
        _ => None,
    }
}

/// Virtual-address bits a table of `levels` levels translates (48 or 57).
#[inline]
pub const fn va_bits(levels: u32) -> u32 {
    level_shift(levels) + LEVEL_BITS
}

/// Physical address of the entry for `va` in the node at `node` on `level`.
#[inline]
pub fn entry_addr(node: Pfn, va: u64, level: u32) -> u64 {
    node.addr() + index(va, level) * ENTRY_BYTES
}

/// Raw `present` bit.
#[inline]
pub fn present(raw: u64) -> bool {
    raw & PRESENT != 0
}

/// Frame held in a raw entry (next node, or first frame of the mapped page).
#[inline]
pub fn frame(raw: u64) -> Pfn {
    Pfn((raw & ADDR_MASK) >> BASE_SHIFT)
}

/// Whether a present raw entry at `level` ends the walk (maps a page).
#[inline]
pub fn is_leaf(raw: u64, level: u32) -> bool {
    level == 1 || ((level == 2 || level == 3) && raw & PAGE_SIZE != 0)
}

/// The 4 KiB frame backing `va` through a leaf entry `raw` at `level`.
#[inline]
pub fn leaf_frame(raw: u64, level: u32, va: u64) -> Pfn {
    let within = (va >> BASE_SHIFT) & (level_frames(level) - 1);
    Pfn(frame(raw).0 + within)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_pte_at(level: u32) -> impl Strategy<Value = Pte> {
        let can_be_large = level == 2 || level == 3;
        (any::<[bool; 6]>(), 0..=MAX_PFN).prop_map(move |(b, pfn)| {
            let large = can_be_large && b[5];
            let pfn = if large { pfn & !(level_frames(level) - 1) } else { pfn };
            Pte { present: b[0], writable: b[1], user: b[2], accessed: b[3], dirty: b[4], large, pfn: Pfn(pfn) }
        })
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips_at_every_level(
            (level, pte) in (1u32..=5).prop_flat_map(|l| (Just(l), arb_pte_at(l)))
        ) {
            prop_assert!(pte.check_at(level).is_ok());
            let raw = pte.encode();
            prop_assert_eq!(raw & !DEFINED_BITS, 0, "undefined bits set");
            prop_assert_eq!(Pte::decode(raw), pte);
            prop_assert_eq!(present(raw), pte.present);
            prop_assert_eq!(frame(raw), pte.pfn);
            prop_assert_eq!(is_leaf(raw, level), level == 1 || pte.large);
        }

        #[test]
        fn decode_encode_keeps_exactly_the_defined_bits(raw in any::<u64>()) {
            prop_assert_eq!(Pte::decode(raw).encode(), raw & DEFINED_BITS);
        }

        #[test]
        fn indices_and_offset_rebuild_a_57_bit_address(va in 0u64..(1u64 << 57)) {
            let mut rebuilt = va & (level_bytes(1) - 1);
            for level in 1..=5 {
                let i = index(va, level);
                prop_assert!(i < ENTRIES);
                rebuilt |= i << level_shift(level);
            }
            prop_assert_eq!(rebuilt, va);
        }

        #[test]
        fn leaf_frame_adds_the_offset_inside_a_large_page(level in 1u32..=3, base in 0u64..(1 << 20), va in any::<u64>()) {
            let pfn = base << (LEVEL_BITS * (level - 1));
            let raw = Pte::leaf(page_size_at(level).unwrap(), Pfn(pfn)).encode();
            let f = leaf_frame(raw, level, va);
            prop_assert_eq!(f.0 & !(level_frames(level) - 1), pfn);
            prop_assert_eq!(f.0 - pfn, (va % level_bytes(level)) >> 12);
        }
    }

    #[test]
    fn per_level_coverage_matches_the_manual() {
        assert_eq!(level_bytes(1), 4 << 10);
        assert_eq!(level_bytes(2), 2 << 20);
        assert_eq!(level_bytes(3), 1 << 30);
        assert_eq!(level_bytes(4), 512 << 30);
        assert_eq!(level_bytes(5), 256 << 40);
        for s in PageSize::ALL {
            let Some(level) = leaf_level(s) else { continue };
            assert_eq!(level_bytes(level), s.bytes());
            assert_eq!(level_frames(level), 1 << s.order());
            assert_eq!(page_size_at(level), Some(s));
        }
        assert_eq!(leaf_level(PageSize::Size64K), None);
        assert_eq!(page_size_at(4), None);
        assert_eq!(va_bits(4), 48);
        assert_eq!(va_bits(5), 57);
    }

    #[test]
    fn index_picks_nine_bits_per_level() {
        let va = (3u64 << 48) | (5 << 39) | (7 << 30) | (11 << 21) | (13 << 12) | 0xabc;
        assert_eq!([index(va, 5), index(va, 4), index(va, 3), index(va, 2), index(va, 1)], [3, 5, 7, 11, 13]);
    }

    #[test]
    fn bits_sit_where_the_manual_puts_them() {
        let p = Pte { present: true, writable: true, user: true, accessed: true, dirty: true, large: true, pfn: Pfn(0) };
        assert_eq!(p.encode(), 0b1110_0111);
        assert_eq!(Pte { pfn: Pfn(1), ..Pte::default() }.encode(), 1 << 12);
        assert_eq!(Pte { pfn: Pfn(MAX_PFN), ..Pte::default() }.encode(), ADDR_MASK);
    }

    #[test]
    fn misaligned_or_misplaced_large_leaves_are_rejected() {
        assert!(Pte::leaf(PageSize::Size2M, Pfn(512)).check_at(2).is_ok());
        assert!(Pte::leaf(PageSize::Size2M, Pfn(513)).check_at(2).is_err());
        assert!(Pte::leaf(PageSize::Size1G, Pfn(512)).check_at(3).is_err());
        assert!(Pte::leaf(PageSize::Size1G, Pfn(1 << 18)).check_at(3).is_ok());
        assert!(Pte::leaf(PageSize::Size2M, Pfn(0)).check_at(4).is_err());
        assert!(Pte::leaf(PageSize::Size2M, Pfn(0)).check_at(1).is_err());
        assert!(Pte::table(Pfn(3)).check_at(4).is_ok());
    }

    #[test]
    fn ps_bit_makes_a_leaf_only_at_levels_two_and_three() {
        let raw = PRESENT | PAGE_SIZE;
        assert!(is_leaf(raw, 1));
        assert!(is_leaf(raw, 2));
        assert!(is_leaf(raw, 3));
        assert!(!is_leaf(raw, 4));
        assert!(!is_leaf(raw, 5));
        assert!(!is_leaf(PRESENT, 2));
    }
}
