//! Reference model for frame allocators: one flag per 4 KiB frame.
//!
//! ## What it models
//! Nothing of the allocator's policy, only the facts every allocator must
//! respect: which frames are free. Tests drive an allocator and this model with
//! the same operations and compare free-frame counts, disjointness of handed-out
//! blocks, and (for allocators that keep free memory fully merged, such as
//! `buddy`) whether a request of a given order can be satisfied at all.
//! Slow and obviously correct by design; test-only.
//! ## Stats
//! None.

use super::MAX_ORDER;
use crate::addr::Pfn;

/// Per-frame free/allocated flags over frames `0 .. capacity`.
#[derive(Clone, Debug)]
pub struct RefFrames {
    free: Vec<bool>,
}

impl RefFrames {
    /// Every frame free.
    pub fn new(capacity_frames: u64) -> Self {
        RefFrames { free: vec![true; capacity_frames as usize] }
    }

    fn range(pfn: Pfn, order: u32) -> std::ops::Range<usize> {
        pfn.0 as usize..(pfn.0 + (1u64 << order)) as usize
    }

    pub fn is_free(&self, pfn: Pfn) -> bool {
        self.free.get(pfn.0 as usize).copied().unwrap_or(false)
    }

    /// Every frame of the block is inside capacity and free.
    pub fn is_free_range(&self, pfn: Pfn, order: u32) -> bool {
        let r = Self::range(pfn, order);
        r.end <= self.free.len() && self.free[r].iter().all(|&f| f)
    }

    /// Mark a block allocated. False (and no change) if any frame of it is not free,
    /// i.e. the allocator handed out a frame twice or beyond capacity.
    pub fn alloc_at(&mut self, pfn: Pfn, order: u32) -> bool {
        if !self.is_free_range(pfn, order) {
            return false;
        }
        self.free[Self::range(pfn, order)].iter_mut().for_each(|f| *f = false);
        true
    }

    /// Mark a block free. Panics if any frame of it is already free (a test bug).
    pub fn free(&mut self, pfn: Pfn, order: u32) {
        for f in &mut self.free[Self::range(pfn, order)] {
            assert!(!*f, "reference: freeing a free frame in {pfn:?}/{order}");
            *f = true;
        }
    }

    pub fn free_frames(&self) -> u64 {
        self.free.iter().filter(|&&f| f).count() as u64
    }

    /// Largest order (<= `MAX_ORDER`) with a naturally aligned block of entirely free
    /// frames inside capacity, if any frame is free.
    pub fn largest_free_order(&self) -> Option<u32> {
        let mut best: Option<u32> = None;
        let mut i = 0usize;
        while i < self.free.len() {
            if !self.free[i] {
                i += 1;
                continue;
            }
            let start = i as u64;
            while i < self.free.len() && self.free[i] {
                i += 1;
            }
            let end = i as u64;
            // Largest aligned block inside the free run [start, end).
            for o in (0..=MAX_ORDER).rev() {
                let size = 1u64 << o;
                let s = start.div_ceil(size) * size;
                if s + size <= end {
                    best = best.max(Some(o));
                    break;
                }
            }
        }
        best
    }

    /// Allocate the lowest naturally aligned, entirely free block of
    /// `2^order` frames (the reference as an allocator, first fit).
    pub fn alloc(&mut self, order: u32) -> Option<Pfn> {
        let size = 1u64 << order;
        let start = (0..self.free.len() as u64 / size).map(|b| Pfn(b * size)).find(|&p| self.is_free_range(p, order))?;
        self.alloc_at(start, order);
        Some(start)
    }

    /// Whether some naturally aligned block of `order` is entirely free.
    pub fn has_free_block(&self, order: u32) -> bool {
        self.largest_free_order().is_some_and(|o| o >= order)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn largest_free_order_respects_alignment() {
        let mut r = RefFrames::new(16);
        assert_eq!(r.largest_free_order(), Some(4));
        assert!(r.alloc_at(Pfn(0), 0));
        // Frames 1..16 are free; the largest aligned block inside is 8..16.
        assert_eq!(r.largest_free_order(), Some(3));
        assert!(!r.alloc_at(Pfn(0), 1), "frame 0 is taken");
        assert!(r.alloc_at(Pfn(8), 3));
        assert_eq!(r.largest_free_order(), Some(2));
        r.free(Pfn(8), 3);
        assert_eq!(r.free_frames(), 15);
        assert!(!r.is_free_range(Pfn(15), 1), "past capacity");
    }
}
