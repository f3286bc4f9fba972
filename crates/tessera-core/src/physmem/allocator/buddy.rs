//! Binary buddy allocator over 4 KiB frames, orders 0..=18 (4 KiB .. 1 GiB).
//!
//! ## What it models
//! The Linux-style binary buddy system that backs both base pages and large
//! pages: free memory is kept as naturally aligned blocks of `2^order` frames,
//! one free set per order. `alloc(order)` takes the lowest-addressed block of
//! the smallest order that is at least `order` and splits it, returning the
//! upper halves to the free sets; `free` merges a block with its buddy while the
//! buddy is free, so the free sets are always fully merged. `reserve(pfn)`
//! takes one specific free frame (used to pre-fragment memory);
//! `reserve_block(pfn, order)` one specific free aligned block (GTSM's B-blocks).
//! ## Paper
//! Knowlton, "A fast storage allocator" (CACM 1965); Linux `mm/page_alloc.c`.
//! Used as the baseline allocator by every paper reproduced here.
//! ## Choices where the papers are silent
//! - Deterministic placement: smallest sufficient order first, then lowest
//!   address within that order (Linux takes the head of an unordered list).
//! - A capacity that is not a power of two is seeded greedily, from frame 0 up,
//!   with the largest naturally aligned block that fits (at most order 18).
//! - One free set per order is a hierarchical bitmap (one bit per possible
//!   block, plus summary words), so lookup, insert, remove and the buddy test
//!   are O(log64 n) and need no hashing or heap traffic.
//! ## Config
//! `kind = "buddy"` (no parameters).
//! ## Stats
//! `physmem.allocator.buddy.splits`, `physmem.allocator.buddy.merges`.

use std::fmt;

use serde::{Deserialize, Serialize};

use super::{AllocCtx, FrameAllocator, MAX_ORDER};
use crate::addr::Pfn;
use crate::error::Result;
use crate::registry::Mechanism;
use crate::stat_group;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

stat_group! {
    /// Block-structure counters of the buddy allocator.
    pub struct BuddyStats {
        splits: "events", "blocks split in two to serve a smaller request or a reservation",
        merges: "events", "freed blocks merged with their free buddy",
    }
}

const ORDERS: usize = MAX_ORDER as usize + 1;

/// A set of block indices as a bitmap with summary levels: bit `i` of level
/// `k + 1` is set iff word `i` of level `k` is non-zero. The top level is one word.
/// Shared with the GTSM slice map (`physmem::slices`), which keeps its
/// eligible slices in one.
#[derive(Clone)]
pub(crate) struct BitSet {
    levels: Vec<Vec<u64>>,
}

impl BitSet {
    pub(crate) fn new(len: u64) -> Self {
        let mut levels = Vec::new();
        let mut words = len.div_ceil(64).max(1);
        loop {
            levels.push(vec![0u64; words as usize]);
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
        BitSet { levels }
    }

    #[inline]
    pub(crate) fn contains(&self, i: u64) -> bool {
        self.levels[0].get((i >> 6) as usize).is_some_and(|w| (w >> (i & 63)) & 1 != 0)
    }

    #[inline]
    pub(crate) fn insert(&mut self, mut i: u64) {
        for level in self.levels.iter_mut() {
            let w = &mut level[(i >> 6) as usize];
            let was_empty = *w == 0;
            *w |= 1 << (i & 63);
            if !was_empty {
                break;
            }
            i >>= 6;
        }
    }

    #[inline]
    pub(crate) fn remove(&mut self, mut i: u64) {
        for level in self.levels.iter_mut() {
            let w = &mut level[(i >> 6) as usize];
            *w &= !(1 << (i & 63));
            if *w != 0 {
                break;
            }
            i >>= 6;
        }
    }

    /// Smallest member.
    #[inline]
    pub(crate) fn first(&self) -> Option<u64> {
        let mut i = 0u64;
        for level in self.levels.iter().rev() {
            let w = level[i as usize];
            if w == 0 {
                return None;
            }
            i = (i << 6) | w.trailing_zeros() as u64;
        }
        Some(i)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.levels[0].iter().enumerate().filter(|(_, &w)| w != 0).flat_map(|(wi, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let b = rest.trailing_zeros() as u64;
                    rest &= rest - 1;
                    ((wi as u64) << 6) | b
                })
            })
        })
    }

    /// Summary levels agree with the level below.
    pub(crate) fn check(&self) -> std::result::Result<(), String> {
        for k in 1..self.levels.len() {
            for (i, &w) in self.levels[k - 1].iter().enumerate() {
                let bit = (self.levels[k][i >> 6] >> (i & 63)) & 1 != 0;
                if bit != (w != 0) {
                    return Err(format!("summary level {k} bit {i} is {bit} but word is {w:#x}"));
                }
            }
        }
        Ok(())
    }
}

#[derive(Clone)]
pub struct Buddy {
    capacity_frames: u64,
    /// `free[o]` holds `pfn >> o` for every free block of order `o`.
    free: Vec<BitSet>,
    counts: [u64; ORDERS],
    free_frames: u64,
    stats: BuddyStats,
}

impl fmt::Debug for Buddy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Buddy")
            .field("capacity_frames", &self.capacity_frames)
            .field("free_frames", &self.free_frames)
            .field("free_blocks_per_order", &self.counts)
            .field("stats", &self.stats)
            .finish()
    }
}

impl Mechanism for Buddy {
    const NAME: &'static str = "buddy";
    const SUMMARY: &'static str = "binary buddy allocator, orders 0..=18, lowest address first";
    type Config = Config;
    type Ctx = AllocCtx;
    fn build(_: &Config, ctx: &AllocCtx) -> Result<Self> {
        Ok(Buddy::new(ctx.capacity_frames))
    }
}

impl Buddy {
    /// All of frames `0 .. capacity_frames` free, in the largest aligned blocks that fit.
    pub fn new(capacity_frames: u64) -> Self {
        let free = (0..ORDERS as u32).map(|o| BitSet::new(capacity_frames >> o)).collect();
        let mut b = Buddy { capacity_frames, free, counts: [0; ORDERS], free_frames: 0, stats: BuddyStats::default() };
        let mut pfn = 0;
        while pfn < capacity_frames {
            let align = if pfn == 0 { MAX_ORDER } else { pfn.trailing_zeros().min(MAX_ORDER) };
            let fit = 63 - (capacity_frames - pfn).leading_zeros();
            let order = align.min(fit);
            b.push(pfn, order);
            pfn += 1 << order;
        }
        b
    }

    pub fn capacity_frames(&self) -> u64 {
        self.capacity_frames
    }

    pub fn stats(&self) -> &BuddyStats {
        &self.stats
    }

    /// Free blocks as `(first frame, order)`, by order then address (for tests and debugging).
    pub fn free_blocks(&self) -> Vec<(Pfn, u32)> {
        (0..ORDERS as u32).flat_map(|o| self.free[o as usize].iter().map(move |i| (Pfn(i << o), o))).collect()
    }

    #[inline]
    fn push(&mut self, pfn: u64, order: u32) {
        self.free[order as usize].insert(pfn >> order);
        self.counts[order as usize] += 1;
        self.free_frames += 1 << order;
    }

    #[inline]
    fn take(&mut self, pfn: u64, order: u32) {
        self.free[order as usize].remove(pfn >> order);
        self.counts[order as usize] -= 1;
        self.free_frames -= 1 << order;
    }

    #[inline]
    fn is_free_block(&self, pfn: u64, order: u32) -> bool {
        self.free[order as usize].contains(pfn >> order)
    }

    /// The free block containing frame `pfn`, if any.
    fn free_block_containing(&self, pfn: u64) -> Option<(u64, u32)> {
        (0..=MAX_ORDER).map(|o| (pfn >> o << o, o)).find(|&(start, o)| self.is_free_block(start, o))
    }

    /// Take one specific free frame out of the free pool, splitting the block that
    /// holds it. Returns false (and changes nothing) when the frame is not free.
    pub fn reserve(&mut self, pfn: Pfn) -> bool {
        self.reserve_block(pfn, 0)
    }

    /// Take the free, naturally aligned block of 2^order frames at `pfn` out
    /// of the free pool, splitting the larger free block that holds it (a
    /// block is wholly free iff one free block of its order or above
    /// contains it: the free sets are fully merged). False, and no change,
    /// when it is misaligned, runs past capacity or is not wholly free.
    pub fn reserve_block(&mut self, pfn: Pfn, order: u32) -> bool {
        if order > MAX_ORDER || pfn.0 & ((1u64 << order) - 1) != 0 || pfn.0 + (1u64 << order) > self.capacity_frames {
            return false;
        }
        let Some((mut start, mut o)) = (order..=MAX_ORDER).map(|o| (pfn.0 >> o << o, o)).find(|&(start, o)| self.is_free_block(start, o)) else {
            return false;
        };
        self.take(start, o);
        while o > order {
            o -= 1;
            self.stats.splits += 1;
            let half = 1u64 << o;
            // Keep descending into the half holding `pfn`; the other half stays free.
            if pfn.0 >= start + half {
                self.push(start, o);
                start += half;
            } else {
                self.push(start + half, o);
            }
        }
        debug_assert_eq!(start, pfn.0);
        true
    }
}

impl FrameAllocator for Buddy {
    #[inline]
    fn alloc(&mut self, order: u32) -> Option<Pfn> {
        if order > MAX_ORDER {
            return None;
        }
        let mut o = (order..=MAX_ORDER).find(|&o| self.counts[o as usize] != 0)?;
        let start = self.free[o as usize].first().expect("count and bitmap disagree") << o;
        self.take(start, o);
        while o > order {
            o -= 1;
            self.stats.splits += 1;
            self.push(start + (1 << o), o);
        }
        Some(Pfn(start))
    }

    #[inline]
    fn free(&mut self, pfn: Pfn, order: u32) {
        let mut start = pfn.0;
        let mut order = order;
        debug_assert!(order <= MAX_ORDER, "order {order} > {MAX_ORDER}");
        debug_assert!(start & ((1 << order) - 1) == 0, "freeing misaligned block {start:#x} of order {order}");
        debug_assert!(start + (1 << order) <= self.capacity_frames, "freeing block {start:#x} beyond capacity");
        debug_assert!(self.free_block_containing(start).is_none(), "double free of frame {start:#x}");
        while order < MAX_ORDER {
            let buddy = start ^ (1 << order);
            if buddy + (1 << order) > self.capacity_frames || !self.is_free_block(buddy, order) {
                break;
            }
            self.take(buddy, order);
            self.stats.merges += 1;
            start = start.min(buddy);
            order += 1;
        }
        self.push(start, order);
    }

    #[inline]
    fn free_frames(&self) -> u64 {
        self.free_frames
    }

    fn largest_free_order(&self) -> Option<u32> {
        (0..=MAX_ORDER).rev().find(|&o| self.counts[o as usize] != 0)
    }

    fn reserve(&mut self, pfn: Pfn) -> bool {
        Buddy::reserve(self, pfn)
    }

    fn reserve_block(&mut self, pfn: Pfn, order: u32) -> bool {
        Buddy::reserve_block(self, pfn, order)
    }

    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats, v);
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut blocks = Vec::new();
        for o in 0..=MAX_ORDER {
            let set = &self.free[o as usize];
            set.check().map_err(|e| format!("order {o}: {e}"))?;
            let mut n = 0;
            for i in set.iter() {
                let start = i << o;
                if start + (1 << o) > self.capacity_frames {
                    return Err(format!("free block {start:#x} of order {o} runs past capacity"));
                }
                if o < MAX_ORDER && set.contains(i ^ 1) {
                    return Err(format!("free block {start:#x} of order {o} and its buddy are both free"));
                }
                blocks.push((start, o));
                n += 1;
            }
            if n != self.counts[o as usize] {
                return Err(format!("order {o}: count {} but {n} blocks in the set", self.counts[o as usize]));
            }
        }
        blocks.sort_unstable();
        for w in blocks.windows(2) {
            let (a, ao) = w[0];
            if a + (1 << ao) > w[1].0 {
                return Err(format!("free blocks {a:#x}/{ao} and {:#x}/{} overlap", w[1].0, w[1].1));
            }
        }
        let sum: u64 = blocks.iter().map(|&(_, o)| 1u64 << o).sum();
        if sum != self.free_frames {
            return Err(format!("free_frames is {} but free blocks hold {sum}", self.free_frames));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference::RefFrames;
    use super::*;
    use proptest::prelude::*;

    fn blocks(b: &Buddy) -> Vec<(u64, u32)> {
        let mut v: Vec<_> = b.free_blocks().into_iter().map(|(p, o)| (p.0, o)).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn odd_capacity_is_seeded_with_largest_aligned_blocks() {
        let b = Buddy::new(13);
        assert_eq!(blocks(&b), vec![(0, 3), (8, 2), (12, 0)]);
        assert_eq!(b.free_frames(), 13);
        assert_eq!(b.largest_free_order(), Some(3));
        b.check_invariants().unwrap();

        let big = Buddy::new((3 << 18) + 512 + 1);
        assert_eq!(
            blocks(&big),
            vec![(0, 18), (1 << 18, 18), (2 << 18, 18), (3 << 18, 9), ((3 << 18) + 512, 0)]
        );
        big.check_invariants().unwrap();
    }

    #[test]
    fn alloc_is_lowest_address_of_smallest_order_and_splits() {
        let mut b = Buddy::new(16);
        assert_eq!(b.alloc(0), Some(Pfn(0)));
        assert_eq!(b.stats().splits, 4);
        assert_eq!(blocks(&b), vec![(1, 0), (2, 1), (4, 2), (8, 3)]);
        assert_eq!(b.alloc(1), Some(Pfn(2)));
        assert_eq!(b.alloc(0), Some(Pfn(1)));
        assert_eq!(b.alloc(2), Some(Pfn(4)));
        assert_eq!(b.alloc(4), None);
        assert_eq!(b.alloc(3), Some(Pfn(8)));
        assert_eq!(b.alloc(0), None);
        assert_eq!(b.free_frames(), 0);
        assert_eq!(b.largest_free_order(), None);
        b.check_invariants().unwrap();
    }

    #[test]
    fn freeing_everything_merges_back_to_one_block() {
        let mut b = Buddy::new(1 << 10);
        let got: Vec<Pfn> = (0..1 << 10).map(|_| b.alloc(0).unwrap()).collect();
        for (i, p) in got.iter().enumerate() {
            assert_eq!(p.0, i as u64);
        }
        for p in got.into_iter().rev() {
            b.free(p, 0);
        }
        assert_eq!(blocks(&b), vec![(0, 10)]);
        assert_eq!(b.stats().merges, b.stats().splits);
        b.check_invariants().unwrap();
    }

    #[test]
    fn reserve_takes_one_frame_and_breaks_the_large_block() {
        let mut b = Buddy::new(1024);
        assert!(b.reserve(Pfn(700)));
        assert!(!b.reserve(Pfn(700)));
        assert!(!b.reserve(Pfn(1024)));
        assert_eq!(b.free_frames(), 1023);
        b.check_invariants().unwrap();
        // Block 512..1024 holds the pinned frame, so only 0..512 is a 2^9 block; 512..768 is still 2^8.
        assert_eq!(b.alloc(9), Some(Pfn(0)));
        assert_eq!(b.alloc(9), None);
        assert_eq!(b.largest_free_order(), Some(8));
    }

    #[test]
    fn orders_above_max_are_refused() {
        let mut b = Buddy::new(1 << 20);
        assert_eq!(b.alloc(MAX_ORDER + 1), None);
        assert_eq!(b.alloc(MAX_ORDER), Some(Pfn(0)));
        b.free(Pfn(0), MAX_ORDER);
        assert_eq!(b.stats().merges, 0, "order-18 blocks never merge");
        b.check_invariants().unwrap();
    }

    #[test]
    fn same_calls_give_same_frames() {
        let run = || {
            let mut b = Buddy::new(5000);
            let mut out = Vec::new();
            for i in 0..200u32 {
                let o = i % 5;
                if let Some(p) = b.alloc(o) {
                    out.push((p, o));
                }
                if i % 3 == 0 {
                    if let Some((p, o)) = out.pop() {
                        b.free(p, o);
                    }
                }
            }
            (out, blocks(&b))
        };
        assert_eq!(run(), run());
    }

    #[derive(Clone, Debug)]
    enum Op {
        Alloc(u32),
        /// Free the live block at this index (modulo the number of live blocks).
        Free(usize),
        /// Free one half of a live block and keep the other (caller-side split).
        FreeHalf(usize, bool),
        Reserve(u64),
    }

    fn ops(max_order: u32, cap: u64, len: usize) -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                4 => (0..=max_order).prop_map(Op::Alloc),
                3 => any::<usize>().prop_map(Op::Free),
                1 => (any::<usize>(), any::<bool>()).prop_map(|(i, h)| Op::FreeHalf(i, h)),
                1 => (0..cap + 2).prop_map(Op::Reserve),
            ],
            1..len,
        )
    }

    /// Apply `ops` to a buddy and the bitmap reference, checking after every step.
    fn run_against_reference(cap: u64, ops: Vec<Op>) -> std::result::Result<(), TestCaseError> {
        let mut b = Buddy::new(cap);
        let mut r = RefFrames::new(cap);
        let mut live: Vec<(Pfn, u32)> = Vec::new();
        for op in ops {
            match op {
                Op::Alloc(o) => {
                    let possible = r.has_free_block(o);
                    match b.alloc(o) {
                        Some(p) => {
                            prop_assert!(possible);
                            prop_assert_eq!(p.0 % (1 << o), 0, "misaligned block");
                            prop_assert!(r.alloc_at(p, o), "block {:?}/{} handed out twice", p, o);
                            live.push((p, o));
                        }
                        None => prop_assert!(!possible, "buddy refused order {} though an aligned free block exists", o),
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let (p, o) = live.swap_remove(i % live.len());
                    b.free(p, o);
                    r.free(p, o);
                    prop_assert!(r.is_free_range(p, o));
                }
                Op::FreeHalf(i, upper) if !live.is_empty() => {
                    let i = i % live.len();
                    let (p, o) = live[i];
                    if o == 0 {
                        continue;
                    }
                    let half = 1u64 << (o - 1);
                    let (gone, kept) = if upper { (Pfn(p.0 + half), p) } else { (p, Pfn(p.0 + half)) };
                    live[i] = (kept, o - 1);
                    b.free(gone, o - 1);
                    r.free(gone, o - 1);
                }
                Op::Reserve(f) => {
                    let free = f < cap && r.is_free(Pfn(f));
                    prop_assert_eq!(b.reserve(Pfn(f)), free);
                    if free {
                        prop_assert!(r.alloc_at(Pfn(f), 0));
                    }
                }
                _ => {}
            }
            prop_assert_eq!(b.free_frames(), r.free_frames());
            if let Err(e) = b.check_invariants() {
                return Err(TestCaseError::fail(e));
            }
            prop_assert_eq!(b.largest_free_order(), r.largest_free_order());
        }
        Ok(())
    }

    /// A buddy that takes blocks through the trait's default
    /// `reserve_block` (frame by frame), to check the override against.
    struct FrameByFrame(Buddy);

    impl FrameAllocator for FrameByFrame {
        fn alloc(&mut self, order: u32) -> Option<Pfn> {
            self.0.alloc(order)
        }
        fn free(&mut self, pfn: Pfn, order: u32) {
            self.0.free(pfn, order)
        }
        fn free_frames(&self) -> u64 {
            self.0.free_frames()
        }
        fn largest_free_order(&self) -> Option<u32> {
            self.0.largest_free_order()
        }
        fn reserve(&mut self, pfn: Pfn) -> bool {
            self.0.reserve(pfn)
        }
        fn check_invariants(&self) -> std::result::Result<(), String> {
            self.0.check_invariants()
        }
    }

    #[test]
    fn reserve_block_takes_an_aligned_free_block_or_nothing() {
        let mut b = Buddy::new(1024);
        assert!(!b.reserve_block(Pfn(8), 4), "misaligned");
        assert!(!b.reserve_block(Pfn(1024), 0), "beyond capacity");
        assert!(!b.reserve_block(Pfn(0), 11), "runs past capacity");
        assert!(b.reserve_block(Pfn(256), 5));
        assert!(!b.reserve_block(Pfn(256), 3), "taken");
        assert!(!b.reserve_block(Pfn(256 - 32), 6), "partly taken");
        assert_eq!(b.free_frames(), 1024 - 32);
        assert_eq!(b.stats().splits, 5, "1024 split down to 32");
        b.check_invariants().unwrap();
        b.free(Pfn(256), 5);
        assert_eq!(blocks(&b), vec![(0, 10)]);
    }

    proptest! {
        #[test]
        fn reserve_block_matches_the_frame_by_frame_default(
            cap in 1u64..3000,
            ops in prop::collection::vec(
                prop_oneof![
                    3 => (0u32..=8).prop_map(|o| (0, o as u64, o)),
                    2 => any::<u64>().prop_map(|i| (1, i, 0)),
                    4 => (0u64..3100, 0u32..=9).prop_map(|(p, o)| (2, p >> o << o, o)),
                ],
                1..80,
            ),
        ) {
            let mut fast = Buddy::new(cap);
            let mut slow = FrameByFrame(Buddy::new(cap));
            let mut r = RefFrames::new(cap);
            let mut live: Vec<(Pfn, u32)> = Vec::new();
            for (kind, x, o) in ops {
                match kind {
                    0 => {
                        let got = fast.alloc(o);
                        prop_assert_eq!(got, slow.alloc(o));
                        if let Some(p) = got {
                            prop_assert!(r.alloc_at(p, o));
                            live.push((p, o));
                        }
                    }
                    1 if !live.is_empty() => {
                        let (p, o) = live.swap_remove((x % live.len() as u64) as usize);
                        fast.free(p, o);
                        slow.free(p, o);
                        r.free(p, o);
                    }
                    2 => {
                        let p = Pfn(x);
                        let want = r.is_free_range(p, o);
                        prop_assert_eq!(fast.reserve_block(p, o), want, "block {:?}/{}", p, o);
                        prop_assert_eq!(slow.reserve_block(p, o), want);
                        if want {
                            prop_assert!(r.alloc_at(p, o));
                            live.push((p, o));
                        }
                    }
                    _ => {}
                }
                fast.check_invariants().map_err(TestCaseError::fail)?;
                slow.check_invariants().map_err(TestCaseError::fail)?;
                prop_assert_eq!(blocks(&fast), blocks(&slow.0));
                prop_assert_eq!(fast.free_frames(), r.free_frames());
            }
        }
    }

    proptest! {
        #[test]
        fn small_buddy_matches_bitmap_reference(cap in 1u64..3000, ops in ops(12, 3000, 120)) {
            run_against_reference(cap, ops)?;
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(10))]
        #[test]
        fn buddy_with_gigabyte_blocks_matches_bitmap_reference(
            extra in 0u64..2000,
            ops in ops(MAX_ORDER, (2 << 18) + 2000, 50),
        ) {
            run_against_reference((2 << 18) + extra, ops)?;
        }
    }
}
