//! GT-PDE entries: the 16-byte page-directory entries that map a superpage
//! over a slice of non-contiguous B-blocks, their GTPTCR modes, the
//! P-GT-PDE's shared entry, and the block select the walker performs.
//!
//! ## What it models
//! - **Modes** ([`GtMode`], the GTPTCR fields GT, P and BS of Table 3): the
//!   B-block size B = 2^BS × 4 KiB, the superpage S = 32 B, the slice 2S, the
//!   size of a PD table of 16-byte entries, and where a virtual address's
//!   PD index, block index K and offset lie.
//! - **Entries** ([`GtPde`]): word 0 is the 2 MiB PDE layout (present, R/W,
//!   U/S, accessed, dirty, PS = bit 7, the slice base in bits 21–51, aligned
//!   to 2S); word 1 is the 64-bit block-selection bitmap with exactly 32
//!   bits set. Bit 7 clear means a PDE pointing to a 4 KiB page table.
//! - **P-GT-PDE** ([`GtPde::encode_pair`]): two GT-PDEs with the same
//!   bitmap whose slices lie in one aligned 128 MiB chunk share an entry;
//!   the second slice's base bits 21–26 ("Offset-B") go into the unused
//!   bits 15–20 of word 0. Entry A is word 0 with Offset-B masked to 0;
//!   entry B is word 0 with bits 21–26 ("Offset-A") replaced by Offset-B.
//! - **Select** ([`select`], [`PdeCacheEntry::select`]): virtual block K
//!   maps to the B-block at the position of the (K+1)-th set bit of the
//!   bitmap. Hardware keeps the bitmap with its byte prefix sums S0..S6 in
//!   the PDE cache and selects in two steps (the byte, then the bit);
//!   [`select_naive`] is the bit loop both are tested against.
//! ## Paper
//! Du, Zhou, Childers, Mossé and Melhem, "Supporting superpages in
//! non-contiguous physical memory", HPCA 2015: §3.3–3.6, Figs. 4–6 and 8,
//! Table 3.
//! ## Choices where the paper is silent
//! - The accessed and dirty bits of a GT-PDE are those of word 0 (one pair
//!   per superpage, as for a 2 MiB PDE).
//! - A P-GT-PDE's two halves share word 0's accessed and dirty bits.

use crate::error::{Error, Result};
use crate::pagetable::x86_radix::{ACCESSED, DIRTY, PAGE_SIZE, PRESENT, USER, WRITABLE};

/// B-blocks in a slice (bits of the bitmap).
pub const SLICE_BLOCKS: u32 = 64;
/// Virtual blocks of a superpage (set bits of a valid bitmap).
pub const SUPERPAGE_BLOCKS: u32 = 32;
/// Bytes of a GT-PDE (and of a PD-table slot in every GT mode).
pub const ENTRY_BYTES: u64 = 16;
/// Word-0 bits of the slice base (bits 21–51, the 2 MiB PDE's base field).
const BASE_MASK: u64 = 0x000F_FFFF_FFE0_0000;
/// Offset-A: the base's 2 MiB-granular offset in its 128 MiB chunk (bits 21–26).
const OFFSET_A_SHIFT: u32 = 21;
/// Offset-B: the second slice's offset, kept in word 0's unused bits 15–20.
const OFFSET_B_SHIFT: u32 = 15;
const OFFSET_MASK: u64 = 0x3f;
/// A P-GT-PDE's two slices lie in one aligned chunk of this many bytes.
pub const CHUNK_SHIFT: u32 = 27;

/// A GTPTCR mode: how GT-PDEs cut superpages into blocks (Table 3).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum GtMode {
    /// 4 MiB superpages of 128 KiB B-blocks in 8 MiB slices (GT,P,BS = 1,0,5).
    Gt4M,
    /// 2 MiB superpages of 64 KiB B-blocks in 4 MiB slices (1,0,4).
    Gt2M,
    /// 1 MiB superpages of 32 KiB B-blocks in 2 MiB slices (1,0,3).
    Gt1M,
    /// Pairs of 1 MiB superpages sharing one entry, 32 KiB B-blocks (1,1,3).
    Pgt2M,
    /// Pairs of 2 MiB superpages sharing one entry, 64 KiB B-blocks (1,1,4).
    Pgt4M,
}

impl GtMode {
    pub const ALL: [GtMode; 5] = [GtMode::Gt4M, GtMode::Gt2M, GtMode::Gt1M, GtMode::Pgt2M, GtMode::Pgt4M];

    /// The name used in configuration and reports.
    pub fn name(self) -> &'static str {
        match self {
            GtMode::Gt4M => "gt_pde_4m",
            GtMode::Gt2M => "gt_pde_2m",
            GtMode::Gt1M => "gt_pde_1m",
            GtMode::Pgt2M => "p_gt_pde_2m",
            GtMode::Pgt4M => "p_gt_pde_4m",
        }
    }

    /// The mode named `name` (see [`Self::name`]); `key` names the config key in the error.
    pub fn parse(name: &str, key: &str) -> Result<GtMode> {
        GtMode::ALL.into_iter().find(|m| m.name() == name).ok_or_else(|| {
            let allowed: Vec<&str> = GtMode::ALL.iter().map(|m| m.name()).collect();
            Error::config_allowed(key, format!("unknown GT-PDE mode {name:?}"), &allowed)
        })
    }

    /// The GTPTCR fields (GT, P, BS): BS = n gives B = 2^n × 4 KiB.
    pub fn gtptcr(self) -> (bool, bool, u32) {
        match self {
            GtMode::Gt4M => (true, false, 5),
            GtMode::Gt2M => (true, false, 4),
            GtMode::Gt1M => (true, false, 3),
            GtMode::Pgt2M => (true, true, 3),
            GtMode::Pgt4M => (true, true, 4),
        }
    }

    /// Whether two superpages share one entry (P-GT-PDE).
    pub fn paired(self) -> bool {
        self.gtptcr().1
    }

    /// log2 of the B-block size.
    pub fn block_shift(self) -> u32 {
        12 + self.gtptcr().2
    }

    /// log2 of one superpage (32 B-blocks).
    pub fn superpage_shift(self) -> u32 {
        self.block_shift() + SUPERPAGE_BLOCKS.trailing_zeros()
    }

    /// log2 of one slice (64 B-blocks); its base is aligned to it.
    pub fn slice_shift(self) -> u32 {
        self.block_shift() + SLICE_BLOCKS.trailing_zeros()
    }

    /// log2 of the virtual range one PD-table entry covers: a superpage, or
    /// the pair of them a P-GT-PDE maps.
    pub fn entry_shift(self) -> u32 {
        self.superpage_shift() + self.paired() as u32
    }

    /// Bytes of a PD table (the 1 GiB a PDPT entry covers, one 16-byte
    /// entry per [`Self::entry_shift`] of it): 4 KiB for the 4 MiB modes,
    /// 8 KiB for 2 MiB, 16 KiB for 1 MiB.
    pub fn pd_table_bytes(self) -> u64 {
        (1u64 << (30 - self.entry_shift())) * ENTRY_BYTES
    }

    /// Index of `va`'s entry in its PD table.
    pub fn pd_index(self, va: u64) -> u64 {
        (va >> self.entry_shift()) & ((1 << (30 - self.entry_shift())) - 1)
    }

    /// Which superpage of a P-GT-PDE `va` is in (0: A, 1: B); 0 unpaired.
    pub fn half(self, va: u64) -> u32 {
        if self.paired() {
            ((va >> self.superpage_shift()) & 1) as u32
        } else {
            0
        }
    }

    /// The virtual block K of `va` in its superpage.
    pub fn block_index(self, va: u64) -> u32 {
        ((va >> self.block_shift()) & (SUPERPAGE_BLOCKS as u64 - 1)) as u32
    }
}

/// The mapping a GT-PDE (or one half of a P-GT-PDE) makes: the slice's
/// first byte and the block-selection bitmap.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct GtLeaf {
    pub slice_base: u64,
    pub bitmap: u64,
}

impl GtLeaf {
    /// The physical address of `va` under this mapping in `mode`.
    #[inline]
    pub fn translate(&self, mode: GtMode, va: u64) -> u64 {
        let pos = select(self.bitmap, mode.block_index(va)).expect("a valid bitmap has 32 set bits");
        self.slice_base + ((pos as u64) << mode.block_shift()) + (va & ((1 << mode.block_shift()) - 1))
    }
}

/// What a 16-byte PD-table slot of a GT mode holds.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GtPde {
    /// Present bit clear.
    NotPresent,
    /// A PDE pointing to a 4 KiB page table (bit 7 clear), word 0 as on x86.
    Table { word0: u64 },
    /// A GT-PDE (bit 7 set): the mapping of the half `va` falls in.
    Leaf(GtLeaf),
}

impl GtPde {
    /// The two words of a GT-PDE mapping a superpage over the slice at
    /// `slice_base` (aligned to the mode's slice) with `bitmap` (exactly 32
    /// bits set), accessed and dirty clear.
    pub fn encode(mode: GtMode, slice_base: u64, bitmap: u64) -> std::result::Result<[u64; 2], BadEntry> {
        if mode.paired() {
            return Err(BadEntry(format!("{} entries map two slices: encode them as a pair", mode.name())));
        }
        check_slice(mode, slice_base, bitmap)?;
        Ok([slice_base | PAGE_SIZE | PRESENT | WRITABLE | USER, bitmap])
    }

    /// The two words of a P-GT-PDE: slices `a` and `b` (each aligned to the
    /// mode's slice, both in one aligned 128 MiB chunk) share `bitmap`.
    pub fn encode_pair(mode: GtMode, a: u64, b: u64, bitmap: u64) -> std::result::Result<[u64; 2], BadEntry> {
        if !mode.paired() {
            return Err(BadEntry(format!("{} entries map one slice", mode.name())));
        }
        check_slice(mode, a, bitmap)?;
        check_slice(mode, b, bitmap)?;
        if a >> CHUNK_SHIFT != b >> CHUNK_SHIFT {
            return Err(BadEntry(format!("slices {a:#x} and {b:#x} are not in one 128 MiB chunk")));
        }
        let offset_b = (b >> OFFSET_A_SHIFT) & OFFSET_MASK;
        Ok([a | offset_b << OFFSET_B_SHIFT | PAGE_SIZE | PRESENT | WRITABLE | USER, bitmap])
    }

    /// What the slot `words` means for an address in half `half` (see
    /// [`GtMode::half`]) under `mode`.
    #[inline]
    pub fn decode(mode: GtMode, words: [u64; 2], half: u32) -> GtPde {
        let w0 = words[0];
        if w0 & PRESENT == 0 {
            return GtPde::NotPresent;
        }
        if w0 & PAGE_SIZE == 0 {
            return GtPde::Table { word0: w0 };
        }
        let base = w0 & BASE_MASK;
        let slice_base = if !mode.paired() || half == 0 {
            base
        } else {
            let offset_b = (w0 >> OFFSET_B_SHIFT) & OFFSET_MASK;
            (base & !(OFFSET_MASK << OFFSET_A_SHIFT)) | offset_b << OFFSET_A_SHIFT
        };
        GtPde::Leaf(GtLeaf { slice_base, bitmap: words[1] })
    }

    /// Word 0 after a walk used the entry: accessed set, dirty on a store.
    #[inline]
    pub fn used(word0: u64, write: bool) -> u64 {
        word0 | ACCESSED | if write { DIRTY } else { 0 }
    }
}

/// Why words could not be encoded as a GT-PDE: the OS asked for a mapping
/// the entry cannot hold (a slice base out of alignment, a bitmap without
/// exactly 32 blocks, a pair across chunks).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BadEntry(pub String);

impl std::fmt::Display for BadEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BadEntry {}

/// A slice base and bitmap a GT-PDE can hold.
fn check_slice(mode: GtMode, base: u64, bitmap: u64) -> std::result::Result<(), BadEntry> {
    if base & ((1 << mode.slice_shift()) - 1) != 0 || base & !BASE_MASK != 0 {
        return Err(BadEntry(format!(
            "slice base {base:#x} is not a {} KiB-aligned physical address of 52 bits",
            1u64 << (mode.slice_shift() - 10)
        )));
    }
    if bitmap.count_ones() != SUPERPAGE_BLOCKS {
        return Err(BadEntry(format!("a GT-PDE bitmap selects 32 B-blocks; {bitmap:#018x} selects {}", bitmap.count_ones())));
    }
    Ok(())
}

/// The bitmap of the second GT-PDE a clean slice hosts: the B-blocks the
/// first one left.
#[inline]
pub fn complementary(bitmap: u64) -> u64 {
    !bitmap
}

/// The position of the (k+1)-th set bit of `bitmap`, if it has that many:
/// the reference bit loop.
pub fn select_naive(bitmap: u64, k: u32) -> Option<u32> {
    let mut seen = 0;
    for pos in 0..64 {
        if bitmap >> pos & 1 == 1 {
            if seen == k {
                return Some(pos);
            }
            seen += 1;
        }
    }
    None
}

/// The position of the (k+1)-th set bit of `bitmap` (what the walker
/// computes; the simulator's fast version).
#[inline]
pub fn select(bitmap: u64, k: u32) -> Option<u32> {
    if k >= bitmap.count_ones() {
        return None;
    }
    // Clear the k lowest set bits, then the lowest one left is the answer.
    let mut b = bitmap;
    for _ in 0..k.min(63) {
        b &= b - 1;
    }
    Some(b.trailing_zeros())
}

/// A PDE-cache entry of a GT-PDE: its bitmap and the byte prefix sums
/// S0..S6 (S_i: set bits in bytes 0..=i), 15 bytes, with which hardware
/// selects in two steps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct PdeCacheEntry {
    pub bitmap: u64,
    pub sums: [u8; 7],
}

impl PdeCacheEntry {
    pub fn new(bitmap: u64) -> PdeCacheEntry {
        let mut sums = [0u8; 7];
        let mut acc = 0u8;
        for (i, s) in sums.iter_mut().enumerate() {
            acc += (bitmap >> (8 * i) & 0xff).count_ones() as u8;
            *s = acc;
        }
        PdeCacheEntry { bitmap, sums }
    }

    /// [`select`] the way the hardware does: the byte i with
    /// S_{i-1} ≤ k < S_i, then, inside it, the bit whose running count is
    /// k − S_{i-1} + 1.
    pub fn select(&self, k: u32) -> Option<u32> {
        let k = k as u8;
        let byte = self.sums.iter().position(|&s| k < s).unwrap_or(7);
        let before = if byte == 0 { 0 } else { self.sums[byte - 1] };
        let bits = (self.bitmap >> (8 * byte)) & 0xff;
        let mut count = 0;
        for bit in 0..8 {
            if bits >> bit & 1 == 1 {
                count += 1;
                if count == k - before + 1 {
                    return Some(8 * byte as u32 + bit);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A bitmap with exactly 32 of 64 bits set, from a shuffle seed.
    fn bitmap_32() -> impl Strategy<Value = u64> {
        Just((0..64u32).collect::<Vec<_>>()).prop_shuffle().prop_map(|order| order[..32].iter().fold(0u64, |b, &i| b | 1 << i))
    }

    fn mode() -> impl Strategy<Value = GtMode> {
        prop::sample::select(GtMode::ALL.to_vec())
    }

    #[test]
    fn modes_match_table_3() {
        // (B-block KiB, superpage KiB, slice KiB, PD table KiB)
        let want = [
            (GtMode::Gt4M, 128, 4096, 8192, 4),
            (GtMode::Gt2M, 64, 2048, 4096, 8),
            (GtMode::Gt1M, 32, 1024, 2048, 16),
            (GtMode::Pgt2M, 32, 1024, 2048, 8),
            (GtMode::Pgt4M, 64, 2048, 4096, 4),
        ];
        for (m, b, s, slice, pd) in want {
            assert_eq!(1u64 << (m.block_shift() - 10), b, "{m:?} B-block");
            assert_eq!(1u64 << (m.superpage_shift() - 10), s, "{m:?} superpage");
            assert_eq!(1u64 << (m.slice_shift() - 10), slice, "{m:?} slice");
            assert_eq!(m.pd_table_bytes() >> 10, pd, "{m:?} PD table");
        }
        // GT-PDE-4MB: PD index in bits 29:22, K in 21:17, offset in 16:0.
        let va = (0x2a << 22) | (0x13 << 17) | 0x1_2345;
        assert_eq!((GtMode::Gt4M.pd_index(va), GtMode::Gt4M.block_index(va)), (0x2a, 0x13));
    }

    #[test]
    fn unknown_mode_names_the_key_and_the_allowed_values() {
        let e = GtMode::parse("gt_pde_8m", "physmem.page_size.mode").unwrap_err().to_string();
        assert!(e.contains("physmem.page_size.mode") && e.contains("gt_pde_4m") && e.contains("p_gt_pde_2m"), "{e}");
        for m in GtMode::ALL {
            assert_eq!(GtMode::parse(m.name(), "k").unwrap(), m);
        }
    }

    #[test]
    fn bad_entries_are_refused() {
        let ok = u64::MAX >> 32;
        assert!(GtPde::encode(GtMode::Gt2M, 0x40_0000, ok).is_ok());
        assert!(GtPde::encode(GtMode::Gt2M, 0x20_0000, ok).is_err(), "not aligned to the 4 MiB slice");
        assert!(GtPde::encode(GtMode::Gt2M, 0x40_0000, ok >> 1).is_err(), "31 blocks");
        assert!(GtPde::encode(GtMode::Pgt2M, 0x40_0000, ok).is_err(), "a pair mode");
        assert!(GtPde::encode_pair(GtMode::Pgt2M, 0, 1 << 27, ok).is_err(), "two chunks");
        assert!(GtPde::encode_pair(GtMode::Gt1M, 0, 0x20_0000, ok).is_err(), "not a pair mode");
    }

    #[test]
    fn a_pde_pointing_to_a_page_table_is_not_a_gt_pde() {
        let pt = 0x1234_5000 | PRESENT | WRITABLE | USER;
        assert_eq!(GtPde::decode(GtMode::Gt2M, [pt, 0], 0), GtPde::Table { word0: pt });
        assert_eq!(GtPde::decode(GtMode::Gt2M, [0, 0], 0), GtPde::NotPresent);
    }

    proptest! {
        #[test]
        fn encode_decode_round_trips(m in mode(), a in 0u64..1 << 20, b in 0u64..1 << 20, bitmap in bitmap_32()) {
            let align = |x: u64| (x << m.slice_shift()) & BASE_MASK;
            let (a, b) = (align(a), align(b));
            if m.paired() {
                // B in A's 128 MiB chunk.
                let b = (a & !((1 << CHUNK_SHIFT) - 1)) | (b & ((1 << CHUNK_SHIFT) - 1));
                let w = GtPde::encode_pair(m, a, b, bitmap).unwrap();
                prop_assert_eq!(GtPde::decode(m, w, 0), GtPde::Leaf(GtLeaf { slice_base: a, bitmap }));
                prop_assert_eq!(GtPde::decode(m, w, 1), GtPde::Leaf(GtLeaf { slice_base: b, bitmap }));
                let used = [GtPde::used(w[0], true), w[1]];
                prop_assert_eq!(GtPde::decode(m, used, 1), GtPde::Leaf(GtLeaf { slice_base: b, bitmap }));
            } else {
                let w = GtPde::encode(m, a, bitmap).unwrap();
                prop_assert_eq!(GtPde::decode(m, w, 0), GtPde::Leaf(GtLeaf { slice_base: a, bitmap }));
                let c = GtPde::encode(m, a, complementary(bitmap)).unwrap();
                prop_assert_eq!(GtPde::decode(m, c, 0), GtPde::Leaf(GtLeaf { slice_base: a, bitmap: !bitmap }));
            }
        }

        #[test]
        fn selects_agree_with_the_bit_loop(bitmap in any::<u64>(), k in 0u32..70) {
            let want = select_naive(bitmap, k);
            prop_assert_eq!(select(bitmap, k), want);
            if k < 64 {
                prop_assert_eq!(PdeCacheEntry::new(bitmap).select(k), want);
            }
        }

        #[test]
        fn a_superpage_maps_its_blocks_in_order_onto_distinct_selected_blocks(m in mode(), base in 0u64..1 << 16, bitmap in bitmap_32(), within in any::<u64>()) {
            let leaf = GtLeaf { slice_base: (base << m.slice_shift()) & BASE_MASK, bitmap };
            let b = 1u64 << m.block_shift();
            let mut last = None;
            for k in 0..SUPERPAGE_BLOCKS as u64 {
                let va = (k << m.block_shift()) + within % b;
                let pa = leaf.translate(m, va);
                let pos = (pa - leaf.slice_base) >> m.block_shift();
                prop_assert!(bitmap >> pos & 1 == 1, "block {} lands on an unselected B-block", k);
                prop_assert!(last.is_none_or(|p| pos > p), "blocks keep their order");
                prop_assert_eq!(pa & (b - 1), within % b);
                last = Some(pos);
            }
        }
    }
}
