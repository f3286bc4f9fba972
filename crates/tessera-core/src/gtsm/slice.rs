//! Slices, B-blocks and the validity of a GT-PDE mapping.
//!
//! ## What it models
//! A slice of 64 B-blocks and its BAV (bit k set = B-block k has no retired
//! frame). A GT-PDE needs 32 usable B-blocks of its slice; a slice with no
//! retired frame at all is *clean* and hosts two GT-PDEs with complementary
//! bitmaps (100 % of it mapped as superpages), any other valid slice one
//! (50 %).
//! ## Paper
//! "Supporting superpages in non-contiguous physical memory", HPCA 2015,
//! §3.2 (32 of 64 B-blocks selected), §3.8 and Fig. 7 (validity), Table 2 /
//! Table 3 (B-block sizes 128/64/32 KiB for 4/2/1 MB superpages).
//! ## Choices where the paper is silent
//! - Validity threshold: the paper calls a slice usable when *more than
//!   half* of its 64 B-blocks are usable (§3.8), and its Fig. 7 value (93.3 %
//!   of slices at 60 % usable B-blocks) is P(Bin(64, 0.6) ≥ 33). A bitmap
//!   needs only 32 usable B-blocks, though, so ≥ 32 is as implementable.
//!   The default is the paper's 33 ([`MIN_USABLE`]); [`MIN_USABLE_HALF`]
//!   (32) is the option (it gives 96.0 % at 60 %).

/// B-blocks per slice (bits of a block-selection bitmap).
pub const BLOCKS: u32 = 64;
/// B-blocks a GT-PDE maps.
pub const MAPPED: u32 = 32;
/// Usable B-blocks for a valid slice by default: more than half (the paper, §3.8, Fig. 7).
pub const MIN_USABLE: u32 = 33;
/// The option: exactly half, all a bitmap needs.
pub const MIN_USABLE_HALF: u32 = 32;

/// Usable B-blocks of a slice.
#[inline]
pub fn usable(bav: u64) -> u32 {
    bav.count_ones()
}

/// Whether a slice can host a GT-PDE: at least `min_usable` usable B-blocks.
#[inline]
pub fn is_valid(bav: u64, min_usable: u32) -> bool {
    usable(bav) >= min_usable
}

/// A slice with no retired frame (hosts two GT-PDEs).
#[inline]
pub fn is_clean(bav: u64) -> bool {
    bav == u64::MAX
}

/// Share of a slice that GT-PDEs map, in halves: 2 for a clean slice, 1 for
/// any other valid slice, 0 otherwise (Fig. 14's accounting).
#[inline]
pub fn mapped_halves(bav: u64, min_usable: u32) -> u64 {
    if is_clean(bav) {
        2
    } else {
        is_valid(bav, min_usable) as u64
    }
}

/// The lowest `MAPPED` set bits of `bav` (a GT-PDE's bitmap over that
/// slice), or `None` with fewer usable B-blocks.
pub fn select_bitmap(bav: u64) -> Option<u64> {
    if usable(bav) < MAPPED {
        return None;
    }
    let mut rest = bav;
    let mut out = 0u64;
    for _ in 0..MAPPED {
        let low = rest & rest.wrapping_neg();
        out |= low;
        rest ^= low;
    }
    Some(out)
}

/// The BAV of the slice of 64 B-blocks of `frames_per_block` frames that
/// starts at frame `first`, read from a fault map.
pub fn bav_of(map: &crate::physmem::retired::RetiredMap, first: u64, frames_per_block: u64) -> u64 {
    (0..BLOCKS as u64).fold(0u64, |bav, k| {
        let s = first + k * frames_per_block;
        bav | ((!map.any_in(s, s + frames_per_block)) as u64) << k
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn validity_thresholds() {
        let thirty_two = (1u64 << 32) - 1;
        assert!(!is_valid(thirty_two, MIN_USABLE) && is_valid(thirty_two, MIN_USABLE_HALF));
        assert!(is_valid(thirty_two | 1 << 40, MIN_USABLE));
        assert_eq!(mapped_halves(u64::MAX, MIN_USABLE), 2);
        assert_eq!(mapped_halves(u64::MAX - 1, MIN_USABLE), 1);
        assert_eq!(mapped_halves(thirty_two, MIN_USABLE), 0);
        assert_eq!(mapped_halves(thirty_two, MIN_USABLE_HALF), 1);
    }

    #[test]
    fn bav_reads_the_fault_map() {
        let mut m = crate::physmem::retired::RetiredMap::new(1024);
        m.retire(8 * 3 + 5); // B-block 3 of 8-frame blocks
        m.retire(8 * 63); // the last one
        let bav = bav_of(&m, 0, 8);
        assert_eq!(bav, !(1u64 << 3 | 1 << 63));
        assert_eq!(bav_of(&m, 512, 8), u64::MAX);
    }

    proptest! {
        #[test]
        fn selected_bitmap_is_32_usable_blocks_lowest_first(bav in any::<u64>()) {
            match select_bitmap(bav) {
                None => prop_assert!(bav.count_ones() < 32),
                Some(b) => {
                    prop_assert_eq!(b.count_ones(), 32);
                    prop_assert_eq!(b & !bav, 0);
                    // Lowest first: every usable block below the highest selected one is selected.
                    let top = 63 - b.leading_zeros();
                    let below = if top == 63 { u64::MAX } else { (1u64 << (top + 1)) - 1 };
                    prop_assert_eq!(bav & below, b);
                }
            }
        }
    }
}
