//! SKELETON — to be replaced by the memory helper.
use crate::addr::Pfn;
pub const PRESENT: u64 = 1 << 0;
pub const WRITABLE: u64 = 1 << 1;
pub const USER: u64 = 1 << 2;
pub const ACCESSED: u64 = 1 << 5;
pub const DIRTY: u64 = 1 << 6;
pub const PAGE_SIZE: u64 = 1 << 7;
pub const ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;

/// Decoded fields of one 64-bit entry.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Default)]
pub struct Pte { pub present: bool, pub writable: bool, pub user: bool, pub accessed: bool, pub dirty: bool, pub large: bool, pub pfn: Pfn }

impl Pte {
    pub fn encode(&self) -> u64 { 0 }
    pub fn decode(raw: u64) -> Pte { let _ = raw; Pte::default() }
}

/// Index into the node at `level` (1 = PT, 2 = PD, 3 = PDPT, 4 = PML4, 5 = PML5) for `va`.
#[inline]
pub fn index(va: u64, level: u32) -> u64 { (va >> (12 + 9 * (level - 1))) & 511 }
