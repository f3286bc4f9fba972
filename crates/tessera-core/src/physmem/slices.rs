//! GTSM slices on the allocator's side: the BAV array kept as frames come
//! and go, and slice grants for GT-PDEs and P-GT-PDEs.
//!
//! ## What it models
//! The OS's view of which slices can back a GTSM superpage. Memory is cut
//! into slices of 64 B-blocks of 2^`block_order` frames (a slice aligned to
//! its size); a trailing partial slice does not exist here. Per slice:
//! - a *free BAV*: bit k set iff B-block k is entirely free in the buddy
//!   allocator right now. A retired, pinned, page-table or data frame in a
//!   B-block clears its bit, and freeing the last of them sets it again. Kept
//!   exact with a count of free frames per B-block (a `u8`: at most 32), updated
//!   by every path through which [`super::PhysMem`] hands frames out or takes
//!   them back, and computed once from the allocator's free blocks when
//!   slices are enabled (after retirement and pre-fragmentation);
//! - how many grants it hosts: 0, 1 or 2.
//!
//! A slice is *eligible* for a GT-PDE when it hosts no grant and has at least
//! `min_blocks` free B-blocks, or hosts exactly one and has at least 32. So a
//! clean slice hosts two GT-PDEs with complementary bitmaps (the first takes
//! the lower 32 B-blocks, the second the other 32) and any other valid slice
//! one. [`super::PhysMem::alloc_slice`] grants the lowest-addressed eligible
//! slice with the 32 lowest set bits of its free BAV as the bitmap, takes those
//! B-blocks out of the allocator (`reserve_block`) and counts the grant on
//! the slice. The eligible slices are a bitset with summary words, updated
//! whenever a slice's free BAV or host count changes, so a grant finds its
//! slice in a few word reads rather than a scan of memory.
//!
//! A P-GT-PDE ([`super::PhysMem::alloc_slice_pair`], only with `paired`)
//! gets two distinct slices a < b of one aligned 128 MiB chunk, each hosting
//! fewer than 2 grants, whose free BAVs share at least 32 B-blocks; both
//! take the 32 lowest bits of the AND. Chunks with at least two such
//! slices are kept in a second bitset; the lowest chunk that has a pair
//! wins. Inside it, the pair is the first one Algorithm 1 finds over the
//! chunk's current free BAVs, and first-fit by address when Algorithm 1 finds
//! none (its self-paired clean slices can still pair with another slice).
//!
//! [`super::PhysMem::free_slice`] gives a grant's B-blocks back (a pair is
//! given back as its two slices, each with the shared bitmap).
//! ## Paper
//! Du, Zhou, Childers, Mossé and Melhem, "Supporting superpages in
//! non-contiguous physical memory", HPCA 2015 (DOI 10.1109/HPCA.2015.7056035):
//! §3.6 and Algorithm 1 (pairs), Fig. 14's accounting (a clean slice 100 %
//! used, any other valid slice 50 %), and the software support of §3.8: a
//! BAV array built at boot from the fault map, a bit cleared when a page of
//! its B-block is allocated and set when all are free again, a slice usable
//! when more than half of its B-blocks are, and the usable slices kept "in a
//! dedicated list" so an allocation does not scan the array.
//! ## Choices where the paper is silent
//! - The list is a bitset ordered by address, and the lowest eligible slice
//!   is granted: deterministic, and it packs superpages low as the buddy
//!   packs everything else.
//! - The bitmap is the 32 lowest free B-blocks (as `gtsm::slice` selects),
//!   so a clean slice's two grants are the lower and upper halves.
//! - A slice already hosting one grant needs only 32 free B-blocks for the
//!   second (all a bitmap needs), whatever `min_blocks` says: the threshold
//!   is the paper's validity rule for a slice, and the slice passed it.
//! - Pairs: Algorithm 1 is the paper's way of choosing pairs, and its first
//!   pair is the fewest-usable slice that can pair with its fewest-usable
//!   partner, which keeps the well-endowed slices (the ones that also serve
//!   GT-PDEs and other pairs) for later. It runs per request over one chunk
//!   (at most 64 slices), not once at boot, because the free BAVs change.
//!   A pair's two slices each count one grant, so a clean slice may host a
//!   pair's half and a GT-PDE, or halves of two pairs.
//! - Calling `enable_slices` again starts over from the allocator's free
//!   blocks: grants made before are forgotten (their B-blocks stay taken).
//! ## Config
//! None of its own: the OS model calls `PhysMem::enable_slices` with a
//! [`SliceSpec`] read from `pagetable.format.mode` (the B-block order and
//! pairing) and `physmem.page_size.min_blocks` (32 or 33). It needs
//! `physmem.allocator = "buddy"`.
//! ## Stats
//! Only when slices are enabled: `physmem.slices.grants`,
//! `physmem.slices.pair_grants`, `physmem.slices.refusals`, and the gauges
//! `physmem.slices.slices`, `physmem.slices.eligible_slices`,
//! `physmem.slices.clean_slices`.

use super::allocator::buddy::BitSet;
use crate::addr::BASE_SHIFT;
use crate::gtsm::pairing::{pair_into, Outcome, MAX_SLICES};
use crate::gtsm::slice::{select_bitmap, BLOCKS, MAPPED};
use crate::pagetable::gt_pde::CHUNK_SHIFT;
use crate::stat_group;

/// What the OS asks of the allocator's slices.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SliceSpec {
    /// log2 of B-block frames: 3, 4 or 5 (32, 64 or 128 KiB B-blocks).
    pub block_order: u32,
    /// Free B-blocks a slice without a grant needs: 33 (the paper) or 32.
    pub min_blocks: u32,
    /// Whether P-GT-PDE pairs are granted.
    pub paired: bool,
}

/// One GT-PDE's slice: its first frame and the 32 B-blocks it maps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SliceGrant {
    pub base: crate::addr::Pfn,
    pub bitmap: u64,
}

/// One P-GT-PDE's two slices (a < b, one 128 MiB chunk) and their shared bitmap.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SlicePairGrant {
    pub a: crate::addr::Pfn,
    pub b: crate::addr::Pfn,
    pub bitmap: u64,
}

stat_group! {
    /// GTSM slice grants (`physmem.slices.*`).
    pub struct SliceStats {
        grants: "grants", "slices granted to a GT-PDE",
        pair_grants: "grants", "slice pairs granted to a P-GT-PDE",
        refusals: "requests", "GT-PDE or P-GT-PDE requests that found no slice",
        slices: gauge "slices", "whole slices in physical memory",
        eligible_slices: gauge "slices", "slices that could be granted to a GT-PDE at the end",
        clean_slices: gauge "slices", "slices with all 64 B-blocks free at the end",
    }
}

/// The free BAV array, host counts and the sets that find grants.
#[derive(Clone)]
pub struct SliceMap {
    spec: SliceSpec,
    /// Frames below this lie in whole slices; the rest is not tracked.
    limit: u64,
    /// Free frames per B-block.
    free_in_block: Vec<u8>,
    /// Free BAV per slice.
    bav: Vec<u64>,
    /// Grants per slice (0 ..= 2).
    hosts: Vec<u8>,
    /// Slices a GT-PDE could get now.
    eligible: BitSet,
    eligible_count: u64,
    /// Slices that could be half of a pair now: fewer than 2 grants and 32 free B-blocks.
    pairable: BitSet,
    /// Pairable slices per 128 MiB chunk.
    pairable_in_chunk: Vec<u8>,
    /// Chunks with at least two pairable slices.
    pair_chunks: BitSet,
    grants: u64,
    pair_grants: u64,
    refusals: u64,
}

impl std::fmt::Debug for SliceMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SliceMap").field("spec", &self.spec).field("slices", &self.slices()).field("eligible", &self.eligible_count).finish()
    }
}

/// Bit mask of bits `lo .. hi` (hi ≤ 64).
#[inline]
fn bits(lo: u64, hi: u64) -> u64 {
    let upto = |n: u64| if n >= 64 { u64::MAX } else { (1u64 << n) - 1 };
    upto(hi) & !upto(lo)
}

impl SliceMap {
    /// A map over `capacity_frames` with the given blocks free (the
    /// allocator's free blocks as `(first frame, order)`); every other frame
    /// counts as taken. `spec` is checked by the caller.
    pub(super) fn new(spec: SliceSpec, capacity_frames: u64, free_blocks: impl IntoIterator<Item = (u64, u32)>) -> SliceMap {
        let slice_order = spec.block_order + BLOCKS.trailing_zeros();
        let slices = capacity_frames >> slice_order;
        let chunks = slices.div_ceil(1 << (CHUNK_SHIFT - BASE_SHIFT - slice_order));
        let mut map = SliceMap {
            spec,
            limit: slices << slice_order,
            free_in_block: vec![0; (slices * BLOCKS as u64) as usize],
            bav: vec![0; slices as usize],
            hosts: vec![0; slices as usize],
            eligible: BitSet::new(slices),
            eligible_count: 0,
            pairable: BitSet::new(slices),
            pairable_in_chunk: vec![0; chunks as usize],
            pair_chunks: BitSet::new(chunks),
            grants: 0,
            pair_grants: 0,
            refusals: 0,
        };
        for (pfn, order) in free_blocks {
            map.give(pfn, order);
        }
        map
    }

    pub fn spec(&self) -> SliceSpec {
        self.spec
    }

    /// log2 of the frames in a B-block.
    pub fn block_order(&self) -> u32 {
        self.spec.block_order
    }

    /// log2 of the frames in a slice.
    pub fn slice_order(&self) -> u32 {
        self.spec.block_order + BLOCKS.trailing_zeros()
    }

    /// Whole slices in memory.
    pub fn slices(&self) -> u64 {
        self.bav.len() as u64
    }

    /// Free BAV of slice `slice` (bit k: B-block k entirely free); 0 beyond the last slice.
    pub fn bav(&self, slice: u64) -> u64 {
        self.bav.get(slice as usize).copied().unwrap_or(0)
    }

    /// Grants slice `slice` hosts (0, 1 or 2).
    pub fn hosts(&self, slice: u64) -> u32 {
        self.hosts.get(slice as usize).map_or(0, |&h| h as u32)
    }

    /// Slices a GT-PDE could be granted now.
    pub fn eligible_slices(&self) -> u64 {
        self.eligible_count
    }

    /// Whether slice `slice` could be granted to a GT-PDE now.
    pub fn is_eligible(&self, slice: u64) -> bool {
        slice < self.slices() && self.eligible.contains(slice)
    }

    /// Slices with all 64 B-blocks free (a scan: for reports).
    pub fn clean_slices(&self) -> u64 {
        self.bav.iter().filter(|&&b| b == u64::MAX).count() as u64
    }

    /// Counters and end-of-run gauges.
    pub fn stats(&self) -> SliceStats {
        SliceStats {
            grants: self.grants,
            pair_grants: self.pair_grants,
            refusals: self.refusals,
            slices: self.slices(),
            eligible_slices: self.eligible_count,
            clean_slices: self.clean_slices(),
        }
    }

    /// Frames `pfn .. pfn + 2^order` left the allocator.
    #[inline]
    pub(super) fn take(&mut self, pfn: u64, order: u32) {
        self.update(pfn, order, false);
    }

    /// Frames `pfn .. pfn + 2^order` came back to the allocator.
    #[inline]
    pub(super) fn give(&mut self, pfn: u64, order: u32) {
        self.update(pfn, order, true);
    }

    fn update(&mut self, pfn: u64, order: u32, free: bool) {
        let end = pfn.saturating_add(1u64 << order).min(self.limit);
        if pfn >= end {
            return;
        }
        let bo = self.spec.block_order;
        let full = 1u8 << bo;
        if order < bo {
            // Inside one B-block: its bit flips only when the block becomes wholly free or stops being so.
            let g = (pfn >> bo) as usize;
            let c = &mut self.free_in_block[g];
            let was_full = *c == full;
            let n = 1u8 << order;
            *c = if free { c.wrapping_add(n) } else { c.wrapping_sub(n) };
            debug_assert!(*c <= full, "B-block {g}: {} free frames of {full}", *c as i8);
            if was_full != (*c == full) {
                let s = g / BLOCKS as usize;
                self.bav[s] ^= 1u64 << (g % BLOCKS as usize);
                self.refresh(s);
            }
            return;
        }
        // Whole B-blocks (the block and `limit` are aligned to B-blocks).
        let (g0, g1) = ((pfn >> bo) as usize, (end >> bo) as usize);
        self.free_in_block[g0..g1].fill(if free { full } else { 0 });
        let per = BLOCKS as usize;
        for s in g0 / per..=(g1 - 1) / per {
            let base = s * per;
            let mask = bits((g0.max(base) - base) as u64, (g1.min(base + per) - base) as u64);
            let old = self.bav[s];
            self.bav[s] = if free { old | mask } else { old & !mask };
            if self.bav[s] != old {
                self.refresh(s);
            }
        }
    }

    /// Re-derive slice `s`'s membership of the eligible and pairable sets.
    fn refresh(&mut self, s: usize) {
        let usable = self.bav[s].count_ones();
        let hosts = self.hosts[s];
        let eligible = match hosts {
            0 => usable >= self.spec.min_blocks,
            1 => usable >= MAPPED,
            _ => false,
        };
        let i = s as u64;
        if eligible != self.eligible.contains(i) {
            if eligible {
                self.eligible.insert(i);
                self.eligible_count += 1;
            } else {
                self.eligible.remove(i);
                self.eligible_count -= 1;
            }
        }
        if !self.spec.paired {
            return;
        }
        let pairable = hosts < 2 && usable >= MAPPED;
        if pairable != self.pairable.contains(i) {
            let c = s >> self.chunk_slices_log2();
            let n = &mut self.pairable_in_chunk[c];
            if pairable {
                self.pairable.insert(i);
                *n += 1;
                if *n == 2 {
                    self.pair_chunks.insert(c as u64);
                }
            } else {
                self.pairable.remove(i);
                *n -= 1;
                if *n == 1 {
                    self.pair_chunks.remove(c as u64);
                }
            }
        }
    }

    /// log2 of the slices in a 128 MiB chunk.
    fn chunk_slices_log2(&self) -> u32 {
        CHUNK_SHIFT - BASE_SHIFT - self.slice_order()
    }

    /// The slice and bitmap a GT-PDE would get now.
    pub(super) fn pick(&self) -> Option<(u64, u64)> {
        let s = self.eligible.first()?;
        select_bitmap(self.bav[s as usize]).map(|b| (s, b))
    }

    /// The two slices (a < b) and shared bitmap a P-GT-PDE would get now.
    pub(super) fn pick_pair(&self) -> Option<(u64, u64, u64)> {
        if !self.spec.paired {
            return None;
        }
        let log2 = self.chunk_slices_log2();
        for c in self.pair_chunks.iter() {
            let first = c << log2;
            let n = (self.slices() - first).min(1 << log2) as usize;
            // Slices that cannot take part read as having no free B-block.
            let mut bavs = [0u64; MAX_SLICES];
            for (i, b) in bavs.iter_mut().enumerate().take(n) {
                if self.pairable.contains(first + i as u64) {
                    *b = self.bav[(first + i as u64) as usize];
                }
            }
            let bavs = &bavs[..n];
            let mut out = [Outcome::Discarded; MAX_SLICES];
            pair_into(bavs, &mut out);
            // Algorithm 1 takes slices in (usable blocks, index) order, so its
            // first pair holds the paired slice that comes first in that order.
            let first_found = (0..n)
                .filter_map(|i| match out[i] {
                    Outcome::Paired { with, bitmap } => Some(((bavs[i].count_ones(), i), with as usize, bitmap)),
                    _ => None,
                })
                .min();
            if let Some(((_, i), j, bitmap)) = first_found {
                return Some((first + i.min(j) as u64, first + i.max(j) as u64, bitmap));
            }
            for i in 0..n {
                for j in i + 1..n {
                    if let Some(bitmap) = select_bitmap(bavs[i] & bavs[j]) {
                        return Some((first + i as u64, first + j as u64, bitmap));
                    }
                }
            }
        }
        None
    }

    /// Slice `s` now hosts one more grant, whose B-blocks `bitmap` were taken.
    pub(super) fn granted(&mut self, s: u64, bitmap: u64) {
        let s = s as usize;
        debug_assert_eq!(self.bav[s] & bitmap, bitmap, "granted B-blocks that were not free");
        let per = BLOCKS as usize;
        let mut rest = bitmap;
        while rest != 0 {
            self.free_in_block[s * per + rest.trailing_zeros() as usize] = 0;
            rest &= rest - 1;
        }
        self.bav[s] &= !bitmap;
        self.hosts[s] += 1;
        self.refresh(s);
    }

    /// Slice `s` hosts one grant fewer; its B-blocks `bitmap` are free again.
    pub(super) fn released(&mut self, s: u64, bitmap: u64) {
        let s = s as usize;
        let full = 1u8 << self.spec.block_order;
        let per = BLOCKS as usize;
        let mut rest = bitmap;
        while rest != 0 {
            self.free_in_block[s * per + rest.trailing_zeros() as usize] = full;
            rest &= rest - 1;
        }
        self.bav[s] |= bitmap;
        self.hosts[s] -= 1;
        self.refresh(s);
    }

    /// Whether `bitmap` could be a grant on slice `s` to give back: 32 B-blocks,
    /// none of them free, on a slice hosting a grant.
    pub(super) fn can_release(&self, s: u64, bitmap: u64) -> bool {
        (s as usize) < self.bav.len() && self.hosts[s as usize] > 0 && bitmap.count_ones() == MAPPED && self.bav[s as usize] & bitmap == 0
    }

    pub(super) fn count_grant(&mut self, paired: bool) {
        if paired {
            self.pair_grants += 1;
        } else {
            self.grants += 1;
        }
    }

    pub(super) fn count_refusal(&mut self) {
        self.refusals += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::super::allocator::{AnyAllocator, FrameAllocator, PageRequest};
    use super::super::PhysMem;
    use super::*;
    use crate::addr::{PageSize, Pfn};
    use crate::config::spec::{ByteSize, PhysMemSpec};
    use crate::error::Error;
    use crate::registry::MechanismSpec;
    use proptest::prelude::*;

    fn mem_with(capacity: u64, allocator: &str, fraction: f64, fragmentation: f64, seed: u64) -> PhysMem {
        let mut params = toml::Table::new();
        let retired = if fraction > 0.0 {
            params.insert("fraction".into(), toml::Value::Float(fraction));
            "uniform"
        } else {
            "none"
        };
        let spec = PhysMemSpec {
            capacity: ByteSize(capacity),
            allocator: MechanismSpec { kind: allocator.into(), params: toml::Table::new() },
            page_size: MechanismSpec { kind: "base_only".into(), params: toml::Table::new() },
            fragmentation,
            fragmentation_occupancy: None,
            retired: MechanismSpec { kind: retired.into(), params },
        };
        PhysMem::build(&spec, seed).unwrap()
    }

    fn mem(capacity: u64) -> PhysMem {
        mem_with(capacity, "buddy", 0.0, 0.0, 1)
    }

    fn spec(block_order: u32, min_blocks: u32, paired: bool) -> SliceSpec {
        SliceSpec { block_order, min_blocks, paired }
    }

    /// Free flags per frame, from the buddy's free blocks.
    fn free_flags(m: &PhysMem) -> Vec<bool> {
        let AnyAllocator::Buddy(b) = &m.alloc else { panic!("not a buddy") };
        let mut f = vec![false; m.capacity_frames as usize];
        for (p, o) in b.free_blocks() {
            f[p.0 as usize..(p.0 + (1 << o)) as usize].fill(true);
        }
        f
    }

    /// The free BAV of `slice`, by brute force.
    fn reference_bav(free: &[bool], slice: u64, block_order: u32) -> u64 {
        (0..64u64).fold(0, |bav, k| {
            let s = ((slice * 64 + k) << block_order) as usize;
            bav | ((free[s..s + (1 << block_order)].iter().all(|&x| x) as u64) << k)
        })
    }

    fn eligible_by_rule(bav: u64, hosts: u32, min_blocks: u32) -> bool {
        match hosts {
            0 => bav.count_ones() >= min_blocks,
            1 => bav.count_ones() >= 32,
            _ => false,
        }
    }

    /// Every slice's state recomputed from the allocator and the grants the
    /// test made (`hosts`), against the incremental one.
    fn check(m: &PhysMem, hosts: &[u32]) -> Result<(), String> {
        let map = m.slices().unwrap();
        let sp = map.spec();
        let free = free_flags(m);
        let slices = m.capacity_frames >> map.slice_order();
        if map.slices() != slices || hosts.len() as u64 != slices {
            return Err(format!("{} slices, expected {slices}", map.slices()));
        }
        let mut eligible = 0;
        let per_chunk = 1u64 << map.chunk_slices_log2();
        let mut pairable = vec![0u32; slices.div_ceil(per_chunk) as usize];
        for s in 0..slices {
            let bav = reference_bav(&free, s, sp.block_order);
            if map.bav(s) != bav {
                return Err(format!("slice {s}: free BAV {:#x}, brute force {bav:#x}", map.bav(s)));
            }
            for k in 0..64u64 {
                let start = ((s * 64 + k) << sp.block_order) as usize;
                let n = free[start..start + (1 << sp.block_order)].iter().filter(|&&x| x).count();
                if map.free_in_block[(s * 64 + k) as usize] as usize != n {
                    return Err(format!("slice {s} block {k}: {} free frames counted, {n} free", map.free_in_block[(s * 64 + k) as usize]));
                }
            }
            let h = hosts[s as usize];
            if map.hosts(s) != h {
                return Err(format!("slice {s}: hosts {} grants, the test made {h}", map.hosts(s)));
            }
            let want = eligible_by_rule(bav, h, sp.min_blocks);
            if map.is_eligible(s) != want {
                return Err(format!("slice {s} (BAV {bav:#x}, {h} grants): eligible {} but the rule says {want}", map.is_eligible(s)));
            }
            eligible += want as u64;
            if sp.paired && h < 2 && bav.count_ones() >= 32 {
                pairable[(s / per_chunk) as usize] += 1;
            }
        }
        if map.eligible_slices() != eligible {
            return Err(format!("{} eligible slices counted, {eligible} by the rule", map.eligible_slices()));
        }
        for (c, &n) in pairable.iter().enumerate() {
            if sp.paired && map.pair_chunks.contains(c as u64) != (n >= 2) {
                return Err(format!("chunk {c}: {n} pairable slices but pair-chunk flag {}", map.pair_chunks.contains(c as u64)));
            }
        }
        m.allocator().check_invariants()
    }

    /// Whether a grant's B-blocks were all free frames (so not retired, pinned or allocated) before it.
    fn blocks_were_free(free_before: &[bool], m: &PhysMem, base: Pfn, bitmap: u64, block_order: u32) -> bool {
        (0..64u64).filter(|k| bitmap >> k & 1 != 0).all(|k| {
            let s = base.0 + (k << block_order);
            (s..s + (1 << block_order)).all(|f| free_before[f as usize] && !m.retired_map().is_some_and(|r| r.is_retired(f)))
        })
    }

    #[derive(Clone, Debug)]
    enum Op {
        Alloc(u32),
        Page(usize),
        Table,
        Free(usize),
        FreeHalf(usize, bool),
        FreePage(usize),
        Claim(u64),
        Grant,
        Pair,
        FreeSlice(usize),
    }

    fn ops() -> impl Strategy<Value = Vec<Op>> {
        prop::collection::vec(
            prop_oneof![
                4 => (0u32..=10).prop_map(Op::Alloc),
                2 => (0usize..3).prop_map(Op::Page),
                1 => Just(Op::Table),
                3 => any::<usize>().prop_map(Op::Free),
                1 => (any::<usize>(), any::<bool>()).prop_map(|(i, u)| Op::FreeHalf(i, u)),
                2 => any::<usize>().prop_map(Op::FreePage),
                1 => any::<u64>().prop_map(Op::Claim),
                3 => Just(Op::Grant),
                2 => Just(Op::Pair),
                2 => any::<usize>().prop_map(Op::FreeSlice),
            ],
            1..120,
        )
    }

    fn run(m: &mut PhysMem, sp: SliceSpec, ops: Vec<Op>) -> Result<(), TestCaseError> {
        m.enable_slices(sp).unwrap();
        let slices = m.slices().unwrap().slices();
        let so = m.slices().unwrap().slice_order();
        let chunk_frames_log2 = CHUNK_SHIFT - BASE_SHIFT;
        let mut hosts = vec![0u32; slices as usize];
        let mut live: Vec<(Pfn, u32)> = Vec::new();
        let mut pages: Vec<Pfn> = Vec::new();
        let mut grants: Vec<(Pfn, u64)> = Vec::new();
        let mut vpn = 0u64;
        check(m, &hosts).map_err(TestCaseError::fail)?;
        for op in ops {
            match op {
                Op::Alloc(o) => {
                    if let Some(p) = m.try_alloc(o) {
                        live.push((p, o));
                    }
                }
                Op::Page(i) => {
                    let size = PageSize::ALL[i];
                    vpn += 1 << 18;
                    if let Ok(Some(p)) = m.alloc_page(PageRequest { asid: 1, vpn, size }, false) {
                        pages.push(p);
                    }
                }
                Op::Table => {
                    if let Ok(p) = m.alloc_table_frame() {
                        live.push((p, 0));
                    }
                }
                Op::Free(i) if !live.is_empty() => {
                    let (p, o) = live.swap_remove(i % live.len());
                    m.free(p, o);
                }
                Op::FreeHalf(i, upper) if !live.is_empty() => {
                    let i = i % live.len();
                    let (p, o) = live[i];
                    if o > 0 {
                        let half = 1u64 << (o - 1);
                        let (gone, kept) = if upper { (Pfn(p.0 + half), p) } else { (p, Pfn(p.0 + half)) };
                        live[i] = (kept, o - 1);
                        m.free(gone, o - 1);
                    }
                }
                Op::FreePage(i) if !pages.is_empty() => {
                    let p = pages.swap_remove(i % pages.len());
                    prop_assert!(m.free_page(p).is_some());
                }
                Op::Claim(f) => {
                    let f = f % m.capacity_frames;
                    if free_flags(m)[f as usize] {
                        vpn += 1 << 18;
                        let req = PageRequest { asid: 2, vpn, size: PageSize::Size4K };
                        prop_assert_eq!(m.claim_page(req, Pfn(f)).unwrap(), Pfn(f));
                        pages.push(Pfn(f));
                    }
                }
                Op::Grant => {
                    let free = free_flags(m);
                    let bavs: Vec<u64> = (0..slices).map(|s| reference_bav(&free, s, sp.block_order)).collect();
                    let lowest = (0..slices).find(|&s| eligible_by_rule(bavs[s as usize], hosts[s as usize], sp.min_blocks));
                    match m.alloc_slice() {
                        Some(g) => {
                            let s = g.base.0 >> so;
                            prop_assert_eq!(Some(s), lowest, "not the lowest eligible slice");
                            prop_assert_eq!(g.base.0 & ((1 << so) - 1), 0);
                            prop_assert_eq!(g.bitmap.count_ones(), 32);
                            prop_assert_eq!(g.bitmap & !bavs[s as usize], 0, "bitmap outside the free BAV");
                            prop_assert!(blocks_were_free(&free, m, g.base, g.bitmap, sp.block_order));
                            hosts[s as usize] += 1;
                            grants.push((g.base, g.bitmap));
                        }
                        None => prop_assert_eq!(lowest, None, "refused with an eligible slice"),
                    }
                }
                Op::Pair => {
                    let free = free_flags(m);
                    let bavs: Vec<u64> = (0..slices).map(|s| reference_bav(&free, s, sp.block_order)).collect();
                    let per_chunk = 1u64 << (chunk_frames_log2 - so);
                    let ok = |s: u64| hosts[s as usize] < 2;
                    // The lowest chunk holding any pair, by brute force.
                    let lowest_chunk = (0..slices)
                        .flat_map(|a| (a + 1..slices).map(move |b| (a, b)))
                        .filter(|&(a, b)| a / per_chunk == b / per_chunk && ok(a) && ok(b) && (bavs[a as usize] & bavs[b as usize]).count_ones() >= 32)
                        .map(|(a, _)| a / per_chunk)
                        .min();
                    match m.alloc_slice_pair() {
                        Some(g) => {
                            prop_assert!(sp.paired);
                            let (a, b) = (g.a.0 >> so, g.b.0 >> so);
                            prop_assert!(a < b);
                            prop_assert_eq!(g.a.0 >> chunk_frames_log2, g.b.0 >> chunk_frames_log2, "slices in two chunks");
                            prop_assert_eq!(Some(a / per_chunk), lowest_chunk);
                            prop_assert!(ok(a) && ok(b));
                            prop_assert_eq!(g.bitmap.count_ones(), 32);
                            prop_assert_eq!(g.bitmap & !(bavs[a as usize] & bavs[b as usize]), 0);
                            prop_assert!(blocks_were_free(&free, m, g.a, g.bitmap, sp.block_order));
                            prop_assert!(blocks_were_free(&free, m, g.b, g.bitmap, sp.block_order));
                            hosts[a as usize] += 1;
                            hosts[b as usize] += 1;
                            grants.push((g.a, g.bitmap));
                            grants.push((g.b, g.bitmap));
                        }
                        None => prop_assert!(!sp.paired || lowest_chunk.is_none(), "refused a pair in chunk {:?}", lowest_chunk),
                    }
                }
                Op::FreeSlice(i) if !grants.is_empty() => {
                    let (base, bitmap) = grants.swap_remove(i % grants.len());
                    m.free_slice(base, bitmap);
                    hosts[(base.0 >> so) as usize] -= 1;
                }
                _ => {}
            }
            check(m, &hosts).map_err(TestCaseError::fail)?;
        }
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn incremental_bavs_match_brute_force_and_grants_are_sound(
            frames in 512u64..41_000,
            block_order in 3u32..=5,
            min_blocks in 32u32..=33,
            paired in any::<bool>(),
            fraction in prop::sample::select(vec![0.0, 0.0005, 0.003, 0.01, 0.04]),
            fragmentation in prop::sample::select(vec![0.0, 0.3]),
            seed in 0u64..1000,
            ops in ops(),
        ) {
            let mut m = mem_with(frames << 12, "buddy", fraction, fragmentation, seed);
            run(&mut m, spec(block_order, min_blocks, paired), ops)?;
        }
    }

    #[test]
    fn a_clean_slice_hosts_two_complementary_grants_and_then_no_more() {
        let mut m = mem(2 << 20); // exactly one slice of 2 MiB (32 KiB B-blocks)
        m.enable_slices(spec(3, 33, false)).unwrap();
        assert_eq!(m.slices().unwrap().clean_slices(), 1);
        let a = m.alloc_slice().unwrap();
        assert_eq!(a, SliceGrant { base: Pfn(0), bitmap: 0xffff_ffff });
        assert!(m.slices().unwrap().is_eligible(0), "32 free B-blocks are enough for the second grant");
        let b = m.alloc_slice().unwrap();
        assert_eq!(b, SliceGrant { base: Pfn(0), bitmap: !0xffff_ffffu64 });
        assert_eq!(a.bitmap, crate::pagetable::gt_pde::complementary(b.bitmap));
        assert_eq!(m.alloc_slice(), None);
        assert_eq!(m.free_frames(), 0);
        let st = m.slices().unwrap().stats();
        assert_eq!((st.grants, st.refusals, st.eligible_slices, st.clean_slices), (2, 1, 0, 0));
        m.free_slice(a.base, a.bitmap);
        m.free_slice(b.base, b.bitmap);
        assert_eq!(m.slices().unwrap().bav(0), u64::MAX);
        assert_eq!(m.alloc_slice(), Some(a), "freed slices are granted again");
        m.allocator().check_invariants().unwrap();
    }

    #[test]
    fn a_slice_with_40_free_blocks_hosts_one_grant() {
        let mut m = mem(2 << 20);
        m.enable_slices(spec(3, 33, false)).unwrap();
        // 24 B-blocks of 8 frames, lowest first: B-blocks 0..24 taken.
        for _ in 0..24 {
            m.try_alloc(3).unwrap();
        }
        let map = m.slices().unwrap();
        assert_eq!(map.bav(0), !0xff_ffffu64);
        let g = m.alloc_slice().unwrap();
        assert_eq!(g.bitmap, 0xffff_ffffu64 << 24);
        assert!(!m.slices().unwrap().is_eligible(0));
        assert_eq!(m.alloc_slice(), None, "8 free B-blocks left");
    }

    #[test]
    fn min_blocks_33_refuses_a_slice_with_exactly_32_and_32_takes_it() {
        for (min, granted) in [(33, false), (32, true)] {
            let mut m = mem(2 << 20);
            m.enable_slices(spec(3, min, false)).unwrap();
            let p = m.try_alloc(8).unwrap(); // 256 frames: B-blocks 0..32
            assert_eq!(p, Pfn(0));
            assert_eq!(m.slices().unwrap().bav(0), !0xffff_ffffu64);
            assert_eq!(m.alloc_slice().is_some(), granted, "min_blocks {min}");
            // Freeing the block makes the slice clean again: grantable either way.
            m.free(p, 8);
            assert_eq!(m.slices().unwrap().bav(0), if granted { 0xffff_ffff } else { u64::MAX });
        }
    }

    #[test]
    fn one_allocated_frame_clears_one_block_and_freeing_it_sets_it() {
        let mut m = mem(8 << 20);
        m.enable_slices(spec(4, 33, false)).unwrap(); // 64 KiB B-blocks, 4 MiB slices
        assert_eq!(m.slices().unwrap().slices(), 2);
        let t = m.alloc_table_frame().unwrap();
        let d = m.alloc(0, "data").unwrap();
        assert_eq!((t, d), (Pfn(0), Pfn(1)));
        assert_eq!(m.slices().unwrap().bav(0), u64::MAX - 1);
        m.free(t, 0);
        assert_eq!(m.slices().unwrap().bav(0), u64::MAX - 1);
        m.free(d, 0);
        assert_eq!(m.slices().unwrap().bav(0), u64::MAX);
    }

    #[test]
    fn a_trailing_partial_slice_is_never_granted() {
        let mut m = mem((8 << 20) + (4 << 20)); // 1.5 slices of 8 MiB
        m.enable_slices(spec(5, 33, false)).unwrap();
        assert_eq!(m.slices().unwrap().slices(), 1);
        assert_eq!(m.alloc_slice().unwrap().base, Pfn(0));
        assert_eq!(m.alloc_slice().unwrap().base, Pfn(0));
        assert_eq!(m.alloc_slice(), None);
        assert_eq!(m.free_frames(), 1024, "the partial slice stays with the allocator");
    }

    #[test]
    fn a_pair_takes_two_slices_of_one_chunk_with_the_bitmap_of_their_and() {
        let mut m = mem(256 << 20); // two chunks of 64 slices of 2 MiB
        m.enable_slices(spec(3, 33, true)).unwrap();
        // Slice 1 loses B-blocks 0..16, slice 2 B-blocks 8..24 (as if data pages lived there).
        assert!(m.alloc.reserve_block(Pfn(512), 7));
        m.slices.as_deref_mut().unwrap().take(512, 7);
        assert!(m.alloc.reserve_block(Pfn(1024 + 64), 6));
        m.slices.as_deref_mut().unwrap().take(1024 + 64, 6);
        assert!(m.alloc.reserve_block(Pfn(1024 + 128), 6));
        m.slices.as_deref_mut().unwrap().take(1024 + 128, 6);
        check(&m, &[0; 128]).unwrap();
        // Algorithm 1 pairs the fewest-usable slices first: slices 1 and 2 (48 usable each, 40 in common).
        let p = m.alloc_slice_pair().unwrap();
        assert_eq!((p.a, p.b), (Pfn(512), Pfn(1024)));
        assert_eq!(p.bitmap, crate::gtsm::slice::select_bitmap(!0xffffu64 & !(0xffffu64 << 8)).unwrap());
        // Only clean slices are left with two free halves: first-fit pairs slices 0 and 3.
        let q = m.alloc_slice_pair().unwrap();
        assert_eq!((q.a, q.b, q.bitmap), (Pfn(0), Pfn(1536), 0xffff_ffff));
        let st = m.slices().unwrap().stats();
        assert_eq!((st.pair_grants, st.grants, st.slices), (2, 0, 128));
    }

    #[test]
    fn pairs_are_refused_unless_enabled_and_stats_appear_only_with_slices() {
        let mut m = mem(8 << 20);
        let keys = |m: &PhysMem| {
            let mut c = crate::stats::Collector::default();
            m.visit(&mut c);
            c.stats.counters.keys().filter(|k| k.starts_with("slices.")).cloned().collect::<Vec<_>>()
        };
        assert!(keys(&m).is_empty());
        assert_eq!(m.alloc_slice(), None);
        m.enable_slices(spec(3, 33, false)).unwrap();
        assert_eq!(m.alloc_slice_pair(), None);
        assert_eq!(
            keys(&m),
            ["slices.clean_slices", "slices.eligible_slices", "slices.grants", "slices.pair_grants", "slices.refusals", "slices.slices"]
        );
    }

    #[test]
    fn bad_slice_specs_name_their_keys() {
        let path = |e: Error| match e {
            Error::Config { path, .. } => path,
            e => panic!("not a config error: {e}"),
        };
        let mut ice = mem_with(64 << 20, "iceberg", 0.0, 0.0, 1);
        assert_eq!(path(ice.enable_slices(spec(3, 33, false)).unwrap_err()), "physmem.allocator");
        let mut m = mem(8 << 20);
        for bo in [0, 2, 6, 40] {
            assert_eq!(path(m.enable_slices(spec(bo, 33, false)).unwrap_err()), "pagetable.format.mode");
        }
        for min in [0, 31, 34, 64] {
            assert_eq!(path(m.enable_slices(spec(3, min, false)).unwrap_err()), "physmem.page_size.min_blocks");
        }
        assert!(m.slices().is_none());
    }
}
