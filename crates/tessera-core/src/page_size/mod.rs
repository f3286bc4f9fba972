//! Page-size policies: which page size backs the first touch of a virtual page.
//!
//! ## Contract
//! `plans()` lists how to map a first touch, in the order to try them,
//! ending with 4 KiB ([`Plan`]): a page of a size the page-table format
//! maps ([`PolicyCtx`]) over one naturally aligned free block, largest
//! first, or a superpage over a slice of non-contiguous blocks (GTSM).
//! On a fault at virtual address `va` the OS model ([`crate::os`]) tries each
//! plan in turn: a size is used when the `size`-aligned virtual region
//! around `va` has nothing mapped yet and the frame allocator can hand out a free
//! naturally aligned block of that size; a slice when `va`'s PD slot is
//! empty and the allocator has a slice; otherwise it falls back to the next.
//! The last plan (4 KiB) always applies (or memory is exhausted).
//!
//! ## Choice where the papers are silent
//! Linux THP also requires the whole aligned region to lie inside one VMA. A
//! trace carries no VMAs, so Tessera treats the address space as one anonymous
//! mapping: any untouched aligned region is eligible.

pub mod base_only;
pub mod gtsm;
pub mod in_place;
pub mod thp;

pub use crate::registry::AnyPageSizePolicy;
use crate::addr::PageSize;

/// What a policy is built with: the page sizes the page-table format maps,
/// smallest first.
#[derive(Clone, Debug)]
pub struct PolicyCtx {
    pub sizes: Vec<PageSize>,
}

/// One way to map a first touch.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// A page of this size over one naturally aligned free block.
    Contiguous(PageSize),
    /// A superpage over a slice of non-contiguous B-blocks: a GT-PDE (or a
    /// P-GT-PDE) in `va`'s PD slot, as the `gt_pde` table's mode says; a
    /// slice's first GT-PDE needs `min_blocks` usable B-blocks.
    Slice { min_blocks: u32 },
}

/// What a policy that coalesces pages in place asks of the OS.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct InPlace {
    /// Cycles a splinter's TLB invalidations cost.
    pub splinter_cycles: u64,
    /// The page size first touches map.
    pub base: PageSize,
}

pub trait PageSizePolicy {
    fn plans(&self) -> &[Plan];
    /// A hook after each page becomes usable: coalesce full frames in
    /// place ([`in_place`]). None by default.
    fn in_place(&self) -> Option<InPlace> {
        None
    }
}
