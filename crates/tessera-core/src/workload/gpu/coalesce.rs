//! Per-warp coalescing: the 32-byte sectors, 128-byte lines and pages one
//! warp memory instruction touches.
//!
//! ## What it models
//! The coalescer of an NVIDIA SM's load/store unit (Volta onwards): the
//! active lanes' accesses of one instruction are merged into the distinct
//! 128-byte lines they touch, each with a mask of its four 32-byte sectors,
//! and those lines are what the L1 and the TLB see. A lane's access of
//! `size` bytes at `addr` touches every unit from `addr` to `addr + size - 1`,
//! so a misaligned access may straddle a sector, line or page boundary and
//! touch two of each.
//!
//! ## Choices
//! - Units are listed in first-touch order: lanes in lane order (the order of
//!   [`WarpTrace::addrs`](super::WarpTrace::addrs)), within a lane the lower
//!   unit first. That is the order a machine issues the requests in.
//! - Units are kept as their aligned base addresses (not unit numbers), so
//!   a page is handed to a TLB as is.
//! - A lane accesses at most [`MAX_LANE_BYTES`] (the widest GPU access is 16
//!   bytes; 32 leaves room), so it touches at most two units of each kind and
//!   a warp at most [`MAX_UNITS`]: the result is fixed arrays, and
//!   coalescing allocates nothing.
//! - Duplicates are found by a scan of the units found so far, from the most
//!   recent: consecutive lanes mostly hit the last unit, so the scan is
//!   usually one compare. (A 64-entry scan in the worst case is cheaper than
//!   hashing at this size.)
//! - Addresses plus sizes must not overflow `u64` (virtual addresses are
//!   below 2^57).

use super::WARP_SIZE;
use crate::addr::PageSize;

/// Bytes in a sector, the unit an L1/L2 fetches.
pub const SECTOR_BYTES: u64 = 32;
/// Bytes in a cache line (four sectors).
pub const LINE_BYTES: u64 = 128;
/// Widest per-lane access the coalescer accepts.
pub const MAX_LANE_BYTES: u8 = 32;
/// Most units of one kind a warp instruction can touch.
pub const MAX_UNITS: usize = 2 * WARP_SIZE as usize;

/// Distinct units of one kind, in first-touch order.
#[derive(Clone, Debug)]
struct Units {
    at: [u64; MAX_UNITS],
    n: usize,
}

impl Units {
    const EMPTY: Units = Units { at: [0; MAX_UNITS], n: 0 };

    /// Add `unit` if new; returns its position and whether it was new.
    #[inline]
    fn add(&mut self, unit: u64) -> (usize, bool) {
        if let Some(i) = self.at[..self.n].iter().rposition(|&u| u == unit) {
            return (i, false);
        }
        self.at[self.n] = unit;
        self.n += 1;
        (self.n - 1, true)
    }
}

/// The units one warp memory instruction touches. Reused from instruction
/// to instruction: [`Coalesced::coalesce`] overwrites it.
#[derive(Clone, Debug)]
pub struct Coalesced {
    page_mask: u64,
    sectors: Units,
    lines: Units,
    /// Per line (same index as `lines`): bit `i` for the line's sector `i`.
    line_sectors: [u8; MAX_UNITS],
    pages: Units,
}

impl Coalesced {
    /// An empty result for pages of `page`.
    pub fn new(page: PageSize) -> Coalesced {
        Coalesced {
            page_mask: !(page.bytes() - 1),
            sectors: Units::EMPTY,
            lines: Units::EMPTY,
            line_sectors: [0; MAX_UNITS],
            pages: Units::EMPTY,
        }
    }

    /// Coalesce one instruction: `addrs` holds the active lanes' addresses
    /// (lane order), each lane accessing `size` bytes (1 to
    /// [`MAX_LANE_BYTES`]).
    pub fn coalesce(&mut self, size: u8, addrs: &[u64]) {
        debug_assert!((1..=MAX_LANE_BYTES).contains(&size), "lane access of {size} bytes");
        debug_assert!(addrs.len() <= WARP_SIZE as usize);
        self.sectors.n = 0;
        self.lines.n = 0;
        self.pages.n = 0;
        let last_byte = size as u64 - 1;
        for &a in addrs {
            let end = a + last_byte;
            let mut s = a & !(SECTOR_BYTES - 1);
            while s <= end {
                self.sectors.add(s);
                let (l, new) = self.lines.add(s & !(LINE_BYTES - 1));
                let bit = 1 << ((s % LINE_BYTES) / SECTOR_BYTES);
                self.line_sectors[l] = if new { bit } else { self.line_sectors[l] | bit };
                s += SECTOR_BYTES;
            }
            self.pages.add(a & self.page_mask);
            if (end & self.page_mask) != (a & self.page_mask) {
                self.pages.add(end & self.page_mask);
            }
        }
    }

    /// Distinct 32-byte sectors (base addresses), first touch first.
    pub fn sectors(&self) -> &[u64] {
        &self.sectors.at[..self.sectors.n]
    }

    /// Distinct 128-byte lines (base addresses), first touch first.
    pub fn lines(&self) -> &[u64] {
        &self.lines.at[..self.lines.n]
    }

    /// Sectors touched in each line of [`Coalesced::lines`]: bit `i` for
    /// bytes `32 i .. 32 i + 31` of the line.
    pub fn line_sectors(&self) -> &[u8] {
        &self.line_sectors[..self.lines.n]
    }

    /// Distinct pages (base addresses), first touch first.
    pub fn pages(&self) -> &[u64] {
        &self.pages.at[..self.pages.n]
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::*;

    /// Every unit of `unit` bytes the lanes touch, as a set: the reference.
    fn touched(addrs: &[u64], size: u8, unit: u64) -> BTreeSet<u64> {
        let mut set = BTreeSet::new();
        for &a in addrs {
            for byte in a..a + size as u64 {
                set.insert(byte / unit * unit);
            }
        }
        set
    }

    /// Units in first-touch order, from the byte-by-byte reference.
    fn first_touch(addrs: &[u64], size: u8, unit: u64) -> Vec<u64> {
        let mut seen = BTreeSet::new();
        let mut order = Vec::new();
        for &a in addrs {
            for byte in a..a + size as u64 {
                if seen.insert(byte / unit * unit) {
                    order.push(byte / unit * unit);
                }
            }
        }
        order
    }

    fn check(addrs: &[u64], size: u8, page: PageSize) {
        let mut c = Coalesced::new(page);
        c.coalesce(size, addrs);
        assert_eq!(c.sectors(), first_touch(addrs, size, SECTOR_BYTES));
        assert_eq!(c.lines(), first_touch(addrs, size, LINE_BYTES));
        assert_eq!(c.pages(), first_touch(addrs, size, page.bytes()));
        assert_eq!(c.sectors().iter().copied().collect::<BTreeSet<_>>(), touched(addrs, size, SECTOR_BYTES));
        for (line, &bits) in c.lines().iter().zip(c.line_sectors()) {
            let want: u8 = (0..4).filter(|i| c.sectors().contains(&(line + 32 * i))).map(|i| 1 << i).sum();
            assert_eq!(bits, want, "line {line:#x}");
        }
    }

    #[test]
    fn a_unit_stride_warp_of_words_is_one_line_and_four_sectors() {
        let addrs: Vec<u64> = (0..32).map(|l| 0x7f00_0000_0000 + 4 * l).collect();
        let mut c = Coalesced::new(PageSize::Size4K);
        c.coalesce(4, &addrs);
        assert_eq!(c.lines(), [0x7f00_0000_0000]);
        assert_eq!(c.line_sectors(), [0b1111]);
        assert_eq!(c.sectors().len(), 4);
        assert_eq!(c.pages(), [0x7f00_0000_0000]);
    }

    #[test]
    fn a_straddling_lane_touches_both_sides_of_each_boundary() {
        let mut c = Coalesced::new(PageSize::Size4K);
        c.coalesce(8, &[0x1ffc]);
        assert_eq!(c.sectors(), [0x1fe0, 0x2000]);
        assert_eq!(c.lines(), [0x1f80, 0x2000]);
        assert_eq!(c.line_sectors(), [0b1000, 0b0001]);
        assert_eq!(c.pages(), [0x1000, 0x2000]);
    }

    #[test]
    fn units_come_in_first_touch_order() {
        let mut c = Coalesced::new(PageSize::Size4K);
        c.coalesce(4, &[0x3000, 0x1000, 0x3004, 0x2000]);
        assert_eq!(c.pages(), [0x3000, 0x1000, 0x2000]);
        assert_eq!(c.lines(), [0x3000, 0x1000, 0x2000]);
    }

    fn lanes() -> impl Strategy<Value = (Vec<u64>, u8, PageSize)> {
        let size = prop::sample::select(vec![1u8, 2, 4, 8, 12, 16, 32]);
        let page = prop::sample::select(vec![PageSize::Size4K, PageSize::Size64K, PageSize::Size2M]);
        let mode = 0..3u8;
        (any::<u32>(), 0u64..1 << 40, 0u64..70_000, size, page, mode, prop::collection::vec(0u64..1 << 24, 32))
            .prop_map(|(mask, base, stride, size, page, mode, random)| {
                let addrs = (0..32u64)
                    .filter(|l| mask >> l & 1 == 1)
                    .map(|l| match mode {
                        0 => base + stride * l,
                        1 => base + (stride * l) % 4096,
                        _ => base + random[l as usize],
                    })
                    .collect();
                (addrs, size, page)
            })
    }

    proptest! {
        #[test]
        fn coalescing_matches_the_set_of_touched_units((addrs, size, page) in lanes()) {
            check(&addrs, size, page);
        }
    }
}
