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

pub mod buddy;
#[cfg(test)]
pub mod reference;

pub use crate::registry::AnyAllocator;
use crate::addr::Pfn;

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

    /// The allocator's own counters (reported as `physmem.allocator.<name>.*`);
    /// none by default.
    fn visit_stats(&self, _v: &mut dyn crate::stats::StatVisitor) {}
}
