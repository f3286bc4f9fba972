//! Page-size policies: which page size backs the first touch of a virtual page.
//!
//! ## Contract
//! `candidates()` lists the page sizes to try, largest first, ending with 4 KiB;
//! only sizes the page-table format maps ([`PolicyCtx`]).
//! On a fault at virtual address `va` the OS model ([`crate::machine`]) tries each
//! candidate in turn: a size is used when the `size`-aligned virtual region
//! around `va` has nothing mapped yet and the frame allocator can hand out a free
//! naturally aligned block of that size; otherwise it falls back to the next.
//! The last candidate (4 KiB) always applies (or memory is exhausted).
//!
//! ## Choice where the papers are silent
//! Linux THP also requires the whole aligned region to lie inside one VMA. A
//! trace carries no VMAs, so Tessera treats the address space as one anonymous
//! mapping: any untouched aligned region is eligible.

pub mod base_only;
pub mod thp;

pub use crate::registry::AnyPageSizePolicy;
use crate::addr::PageSize;

/// What a policy is built with: the page sizes the page-table format maps,
/// smallest first.
#[derive(Clone, Debug)]
pub struct PolicyCtx {
    pub sizes: Vec<PageSize>,
}

pub trait PageSizePolicy {
    fn candidates(&self) -> &[PageSize];
}
