//! Compressed physical frame numbers (CPFNs): which of a page's h allowed
//! frames it occupies, in 7 bits.
//!
//! ## What it models
//! - `0x7F` (all ones): unmapped.
//! - bit 6 = 0: front yard; bits 5..0 are the slot (0 .. f, f ≤ 63).
//! - bit 6 = 1: backyard; bits 5..3 are the choice (0 .. d, d ≤ 8), bits
//!   2..0 the slot in that bucket's backyard (0 .. b, b ≤ 8).
//!
//! A CPFN alone is not a frame: [`decode`] turns it into one given the page
//! (asid, vpn) and the pool's [`IcebergHasher`], as a mosaic TLB or a
//! page-table format holding tables of contents would: PFN =
//! `bucket_base(h0(page)) + slot` for the front yard, or
//! `bucket_base(h_{1+choice}(page)) + f + slot` for the backyard.
//! ## Paper
//! "Mosaic Pages: Big TLB Reach with Small Pages", ASPLOS 2023, DOI
//! 10.1145/3582016.3582021, §2.2 and §3.1 (the 7-bit encoding with f = 56,
//! b = 8, d = 6).
//! ## Choices where the paper is silent
//! - The code with every bit set is unmapped, so choice 7 with slot 7 is not
//!   a valid backyard code: the allocator rejects d = 8 with b = 8.
//! ## Stats
//! None.

use super::hash::{IcebergHasher, Slot};
use crate::addr::{Asid, Pfn};

/// The CPFN of a page that is not mapped.
pub const UNMAPPED: u8 = 0x7F;
/// Bit 6: the page is in a backyard.
const BACK: u8 = 0x40;

/// The 7-bit code of `slot`. A front slot must be below 64 and a backyard
/// choice and slot below 8 each (the allocator's geometry guarantees it);
/// the code is never [`UNMAPPED`] for a slot the allocator hands out.
#[inline]
pub fn encode(slot: Slot) -> u8 {
    match slot {
        Slot::Front(s) => {
            debug_assert!(s < 64, "front slot {s} needs more than 6 bits");
            s & 0x3F
        }
        Slot::Back { choice, slot } => {
            debug_assert!(choice < 8 && slot < 8 && (choice, slot) != (7, 7), "backyard ({choice}, {slot}) has no code");
            BACK | (choice & 7) << 3 | (slot & 7)
        }
    }
}

/// The slot a CPFN names; `None` for [`UNMAPPED`] (and any value wider than 7 bits).
#[inline]
pub fn decode_slot(cpfn: u8) -> Option<Slot> {
    if cpfn >= UNMAPPED {
        None
    } else if cpfn & BACK == 0 {
        Some(Slot::Front(cpfn))
    } else {
        Some(Slot::Back { choice: (cpfn >> 3) & 7, slot: cpfn & 7 })
    }
}

/// The frame the page (asid, vpn) occupies according to `cpfn`; `None` for
/// an unmapped page or a code outside the pool's geometry.
#[inline]
pub fn decode(cpfn: u8, asid: Asid, vpn: u64, hasher: &IcebergHasher) -> Option<Pfn> {
    decode_slot(cpfn).and_then(|s| hasher.frame(asid, vpn, s))
}

#[cfg(test)]
mod tests {
    use super::super::hash::ChoiceRule;
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_papers_layout() {
        assert_eq!(encode(Slot::Front(0)), 0);
        assert_eq!(encode(Slot::Front(55)), 55);
        assert_eq!(encode(Slot::Back { choice: 0, slot: 0 }), 0x40);
        assert_eq!(encode(Slot::Back { choice: 5, slot: 7 }), 0b110_1111);
        assert_eq!(decode_slot(UNMAPPED), None);
        assert_eq!(decode_slot(0x80), None);
        assert_eq!(decode_slot(0b101_0011), Some(Slot::Back { choice: 2, slot: 3 }));
        let h = IcebergHasher::xxhash(0, 16, 56, 8, 6, ChoiceRule::Partitioned);
        assert_eq!(decode(UNMAPPED, 1, 1, &h), None);
        assert_eq!(decode(56, 1, 1, &h), None, "front slot beyond f");
        assert_eq!(decode(0b111_0000, 1, 1, &h), None, "choice 6 beyond d");
    }

    fn slot() -> impl Strategy<Value = Slot> {
        prop_oneof![
            (0u8..64).prop_map(Slot::Front),
            (0u8..8, 0u8..8).prop_filter("0x7F is unmapped", |&(c, s)| (c, s) != (7, 7)).prop_map(|(choice, slot)| Slot::Back { choice, slot }),
        ]
    }

    proptest! {
        #[test]
        fn every_slot_round_trips_through_7_bits(s in slot()) {
            let c = encode(s);
            prop_assert!(c < 0x80 && c != UNMAPPED);
            prop_assert_eq!(decode_slot(c), Some(s));
        }

        #[test]
        fn every_code_round_trips(c in 0u8..0x7F) {
            prop_assert_eq!(encode(decode_slot(c).unwrap()), c);
        }

        #[test]
        fn decode_finds_the_frame_of_the_slot(
            s in slot(), asid in any::<u16>(), vpn in 0u64..1 << 36, buckets in 1u64..5000, begin in 0u64..1 << 20,
        ) {
            let h = IcebergHasher::xxhash(begin, buckets, 56, 8, 6, ChoiceRule::Partitioned);
            let want = h.frame(asid, vpn, s);
            prop_assert_eq!(decode(encode(s), asid, vpn, &h), want);
            if let Some(f) = want {
                let back = h.slot_of(f, asid, vpn).unwrap();
                prop_assert_eq!(decode(encode(back), asid, vpn, &h), Some(f));
            }
        }
    }
}
