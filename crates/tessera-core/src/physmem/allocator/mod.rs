//! Physical frame allocators.
//!
//! ## Contract
//! An allocator manages frames `0 .. capacity_frames` (4 KiB each) in blocks of
//! `2^order` frames, `order <= MAX_ORDER` (18 = 1 GiB).
//! - `alloc(order)` returns the first frame of a free, naturally aligned block of
//!   `2^order` frames, or `None` when no such block exists. Deterministic: the
//!   same sequence of calls gives the same frames.
//! - `free(pfn, order)` returns a block obtained from `alloc(order)` (or a
//!   sub-block split off by the caller's bookkeeping); freeing a frame that is
//!   not allocated is a caller bug.
//! - `free_frames()` counts free 4 KiB frames; `largest_free_order()` is the
//!   largest order `alloc` would currently satisfy.
//! - `reserve(pfn)` takes the one free frame `pfn` out of the free pool (splitting
//!   whatever free block holds it) and returns true; it returns false and changes
//!   nothing when `pfn` is not free or beyond capacity. Reserved frames are owned
//!   by the caller like allocated ones (used to pin frames for pre-fragmentation).
//! - `check_invariants()` verifies internal consistency (tests call it after
//!   every operation).
//! - `alloc_page(req)` places a data page: the request says which page of
//!   which address space it is ([`PageRequest`]), so an allocator that
//!   places by identity (a hash of (asid, vpn), per-application frames) can
//!   use it. The default is `alloc(order)`.
//! - `page_mapped` and `page_freed` tell the allocator that a data page it
//!   placed is now mapped, or was unmapped and its frames freed (they are
//!   freed with `free` right after); both are no-ops by default.

pub mod buddy;
#[cfg(test)]
pub mod reference;

pub use crate::registry::AnyAllocator;
use crate::addr::{Asid, PageSize, Pfn};

/// A request for the frames of one data page.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct PageRequest {
    pub asid: Asid,
    /// First 4 KiB virtual page of the page.
    pub vpn: u64,
    pub size: PageSize,
}

/// Largest block order: 2^18 frames = 1 GiB.
pub const MAX_ORDER: u32 = 18;

/// What an allocator is built over.
#[derive(Clone, Debug)]
pub struct AllocCtx {
    pub capacity_frames: u64,
}

pub trait FrameAllocator {
    fn alloc(&mut self, order: u32) -> Option<Pfn>;
    fn free(&mut self, pfn: Pfn, order: u32);
    fn free_frames(&self) -> u64;
    fn largest_free_order(&self) -> Option<u32>;
    fn reserve(&mut self, pfn: Pfn) -> bool;
    fn check_invariants(&self) -> Result<(), String>;

    /// Frames for the data page `req` (see the contract above).
    fn alloc_page(&mut self, req: &PageRequest) -> Option<Pfn> {
        self.alloc(req.size.order())
    }
    /// The page `req` placed at `pfn` is now mapped.
    fn page_mapped(&mut self, _pfn: Pfn, _req: &PageRequest) {}
    /// The page `req` at `pfn` was unmapped; its frames are freed next.
    fn page_freed(&mut self, _pfn: Pfn, _req: &PageRequest) {}

    /// The allocator's own counters (reported as `physmem.allocator.<name>.*`);
    /// none by default.
    fn visit_stats(&self, _v: &mut dyn crate::stats::StatVisitor) {}
}
