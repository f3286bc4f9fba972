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

/// Page sizes an x86-64 radix table can map.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum PageSize {
    #[serde(rename = "4k")]
    Size4K,
    #[serde(rename = "2m")]
    Size2M,
    #[serde(rename = "1g")]
    Size1G,
}

impl PageSize {
    pub const ALL: [PageSize; 3] = [PageSize::Size4K, PageSize::Size2M, PageSize::Size1G];
    pub const NAMES: [&'static str; 3] = ["4k", "2m", "1g"];

    #[inline]
    pub const fn shift(self) -> u32 {
        match self {
            PageSize::Size4K => 12,
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
    /// Small dense index (0, 1, 2) for per-size arrays and tag packing.
    #[inline]
    pub const fn index(self) -> usize {
        match self {
            PageSize::Size4K => 0,
            PageSize::Size2M => 1,
            PageSize::Size1G => 2,
        }
    }
    pub const fn name(self) -> &'static str {
        Self::NAMES[self.index()]
    }
    /// Accepts "4k", "4KiB", "4KB", "2m", "2MiB", "1g", "1GiB" (case-insensitive).
    pub fn parse(s: &str) -> Option<PageSize> {
        match s.to_ascii_lowercase().as_str() {
            "4k" | "4kb" | "4kib" => Some(PageSize::Size4K),
            "2m" | "2mb" | "2mib" => Some(PageSize::Size2M),
            "1g" | "1gb" | "1gib" => Some(PageSize::Size1G),
            _ => None,
        }
    }
}
