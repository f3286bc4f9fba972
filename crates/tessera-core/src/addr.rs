//! Address-space vocabulary shared by every component.

use serde::{Deserialize, Serialize};

/// Address-space identifier carried by every access and TLB entry.
pub type Asid = u16;

/// Base page shift (4 KiB).
pub const BASE_SHIFT: u32 = 12;
pub const BASE_PAGE: u64 = 1 << BASE_SHIFT;

/// A physical frame number (physical address >> 12).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pfn(pub u64);

impl Pfn {
    #[inline]
    pub fn addr(self) -> u64 {
        self.0 << BASE_SHIFT
    }
}

/// Page sizes a translation can map. Which of them a machine can use is up
/// to its page-table format (x86-64 radix maps 4 KiB, 2 MiB and 1 GiB; a
/// configurable radix table maps whatever its levels cover), so code keeps
/// per-size arrays of [`PageSize::COUNT`] and never assumes three sizes.
/// 64 KiB is the GPU unified-memory migration unit.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4k")]
    Size4K,
    #[serde(rename = "64k")]
    Size64K,
    #[serde(rename = "2m")]
    Size2M,
    #[serde(rename = "1g")]
    Size1G,
}

impl PageSize {
    /// How many sizes there are: the length of per-size arrays.
    pub const COUNT: usize = 4;
    /// Every size, smallest first (the order of [`PageSize::index`]).
    pub const ALL: [PageSize; PageSize::COUNT] =
        [PageSize::Size4K, PageSize::Size64K, PageSize::Size2M, PageSize::Size1G];
    pub const NAMES: [&'static str; PageSize::COUNT] = ["4k", "64k", "2m", "1g"];

    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
            PageSize::Size64K => 16,
            PageSize::Size2M => 21,
            PageSize::Size1G => 30,
        }
    }
    #[inline]
    pub const fn bytes(self) -> u64 {
        1u64 << self.shift()
    }
    /// Buddy order of a block of this size (in 4 KiB frames).
    #[inline]
    pub const fn order(self) -> u32 {
        self.shift() - BASE_SHIFT
    }
    /// Small dense index (0 .. COUNT) for per-size arrays and tag packing.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size64K => 1,
            PageSize::Size2M => 2,
            PageSize::Size1G => 3,
        }
    }
    /// The size of `shift` bits, if it is one.
    #[inline]
    pub const fn from_shift(shift: u32) -> Option<PageSize> {
        match shift {
            12 => Some(PageSize::Size4K),
            16 => Some(PageSize::Size64K),
            21 => Some(PageSize::Size2M),
            30 => Some(PageSize::Size1G),
            _ => None,
        }
    }
    pub const fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }
    /// Accepts "4k", "4KiB", "4KB", "64k", "2m", "2MiB", "1g", "1GiB" (case-insensitive).
    pub fn parse(s: &str) -> Option<PageSize> {
        match s.to_ascii_lowercase().as_str() {
            "4k" | "4kb" | "4kib" => Some(PageSize::Size4K),
            "64k" | "64kb" | "64kib" => Some(PageSize::Size64K),
            "2m" | "2mb" | "2mib" => Some(PageSize::Size2M),
            "1g" | "1gb" | "1gib" => Some(PageSize::Size1G),
            _ => None,
        }
    }
}
