//! Whole-chunk eviction over aligned physical chunks, after NVIDIA's
//! unified-memory driver (root chunks in allocation order) or UVM-Smart's
//! "LRU 2 MB" (chunks in access order).
//!
//! ## What it models
//! Physical memory is cut into aligned chunks of `chunk` bytes (2 MiB by
//! default: the GPU driver's root chunks). A chunk holding resident pages is
//! on one order list; the victim is a resident page of the chunk at the
//! oldest end of that list, and the policy declares the chunk its eviction
//! unit ([`eviction_unit_frames`](EvictionPolicy::eviction_unit_frames)), so
//! the OS then evicts every resident page of that chunk, not only as many as
//! the faulting page needs.
//! - `order = "allocation"` (NVIDIA): a chunk moves to the most recent end
//!   whenever a page is mapped into it (the driver's
//!   `chunk_update_lists_locked` moves a root chunk to the tail of
//!   `root_chunks.va_block_used` when one of its sub-chunks is allocated and
//!   unpinned), and `pick_root_chunk_to_evict` takes the head of that list:
//!   the chunk whose last allocation is the oldest. Accesses are ignored
//!   (`wants_touches` is false): an age-based order, not LRU.
//! - `order = "access"` (UVM-Smart's LRU 2 MB, read as physical chunks): a
//!   chunk also moves to the most recent end on every translation of one of
//!   its pages; the victim chunk is the one whose last access (or mapping) is
//!   the oldest.
//!
//! A page belongs to the chunk holding its first frame. Every allocator here
//! places a page on frames aligned to its size, so a page no larger than a
//! chunk lies wholly inside it, and a page larger than a chunk covers whole
//! chunks (its first one holds it; the others hold nothing).
//! ## Paper or source
//! NVIDIA open GPU kernel modules, `kernel-open/nvidia-uvm/uvm_pmm_gpu.c`:
//! `pick_root_chunk_to_evict`, `chunk_update_lists_locked`,
//! `gpu_unpin_temp`; the eviction of every page of the picked root chunk
//! (`evict_root_chunk`). UVM-Smart (gpgpu-sim_UVMSmart): the "LRU 2 MB"
//! eviction policy, which evicts a whole 2 MiB region refreshed on every
//! access.
//! ## Choices where the sources are silent (or where Tessera departs)
//! - The driver first evicts from its free lists and then from
//!   `va_block_unused` (chunks with no resident page), before
//!   `va_block_used`; here the allocator hands out free frames before any
//!   eviction is asked for, and a chunk with no resident page is on no list,
//!   so only the `va_block_used` order is modelled.
//! - No pinned chunks: the driver takes a temporarily pinned root chunk off
//!   the list; every resident page here is evictable.
//! - Unmapping a page that leaves its chunk holding pages does not move the
//!   chunk (an unmap is not an allocation); the chunk leaves the order when
//!   its last page goes. Whether the driver's free path refreshes a chunk
//!   that stays split is not modelled.
//! - UVM-Smart's regions are 2 MiB of *virtual* address space (a page table
//!   region of the managed allocation); here they are physical chunks, the
//!   unit a whole-unit eviction can empty.
//! - Within the victim chunk the victim named is the resident page mapped
//!   longest ago; the OS evicts the whole chunk anyway, in frame order.
//! - Accessed bits are not used.
//! - Representation: the chunks on an intrusive doubly linked list in
//!   per-chunk `u32` arrays, each chunk's resident pages on an intrusive
//!   list in per-frame `u32` arrays, so map, unmap, touch and victim are
//!   O(1) and nothing is allocated after construction (about 9 bytes per
//!   frame).
//! ## Config
//! `kind = "root_chunk"`, `order = "allocation" | "access"` (default
//! `"allocation"`), `chunk = <bytes>` (default `"2MiB"`; a power of two from
//! 4 KiB to 1 GiB).
//! ## Stats
//! `os.eviction.root_chunk.chunks_emptied` (chunks whose last resident page
//! was evicted), gauge `.chunks` (chunks holding resident pages at the end of
//! the run).

use serde::{Deserialize, Serialize};

use super::list::{PageLists, NIL};
use super::{AccessedBits, EvictionCtx, EvictionPolicy};
use crate::addr::BASE_SHIFT;
use crate::config::spec::ByteSize;
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stat_group;

/// What moves a chunk to the most recent end of the order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Order {
    /// A page mapped into it (NVIDIA's root-chunk list).
    #[default]
    Allocation,
    /// A page mapped into it or any translation of one of its pages (UVM-Smart's LRU 2 MB).
    Access,
}

/// `kind = "root_chunk"` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub order: Order,
    /// Bytes per chunk: a power of two from 4 KiB to 1 GiB.
    #[serde(default = "d_chunk")]
    pub chunk: ByteSize,
}
fn d_chunk() -> ByteSize {
    ByteSize(2 << 20)
}
impl Default for Config {
    fn default() -> Self {
        Config { order: Order::default(), chunk: d_chunk() }
    }
}

impl Config {
    /// log2 of the frames per chunk, or the error naming `os.eviction.chunk`.
    pub fn chunk_shift(&self) -> Result<u32> {
        let b = self.chunk.0;
        if !b.is_power_of_two() || !(1 << BASE_SHIFT..=1 << 30).contains(&b) {
            return Err(Error::config(
                "os.eviction.chunk",
                format!("must be a power of two from 4 KiB to 1 GiB, not {}", ByteSize(b).human_exact()),
            ));
        }
        Ok(b.trailing_zeros() - BASE_SHIFT)
    }
}

stat_group! {
    /// Counters of whole-chunk eviction.
    pub struct RootChunkStats {
        chunks_emptied: "chunks", "chunks whose last resident page was evicted",
        chunks: gauge "chunks", "chunks holding resident pages at the end of the run",
    }
}

#[derive(Clone, Debug)]
pub struct RootChunk {
    /// Chunks holding resident pages: most recent at the head of list 0, the victim chunk at its tail.
    chunks: PageLists<1>,
    /// Per frame: the next resident page of the same chunk (towards the most recently mapped), or NIL.
    next: Vec<u32>,
    /// Per frame: the previous one (towards the oldest mapped), or NIL.
    prev: Vec<u32>,
    /// Per frame: the page is resident.
    present: Vec<bool>,
    /// Per chunk: its resident page mapped longest ago, or NIL.
    first: Vec<u32>,
    /// Per chunk: its resident page mapped last, or NIL.
    last: Vec<u32>,
    shift: u32,
    access: bool,
    resident: u64,
    stats: RootChunkStats,
}

impl Mechanism for RootChunk {
    const NAME: &'static str = "root_chunk";
    const SUMMARY: &'static str = "evicts whole aligned chunks (2 MiB): NVIDIA UVM's root chunks by allocation, or UVM-Smart's LRU 2 MB by access";
    type Config = Config;
    type Ctx = EvictionCtx;
    fn build(cfg: &Config, ctx: &EvictionCtx) -> Result<Self> {
        let shift = cfg.chunk_shift()?;
        let frames = ctx.frames()?;
        let n = frames.div_ceil(1 << shift);
        Ok(RootChunk {
            chunks: PageLists::new(n),
            next: vec![NIL; frames],
            prev: vec![NIL; frames],
            present: vec![false; frames],
            first: vec![NIL; n],
            last: vec![NIL; n],
            shift,
            access: cfg.order == Order::Access,
            resident: 0,
            stats: RootChunkStats::default(),
        })
    }
}

impl RootChunk {
    #[inline(always)]
    fn chunk_of(&self, page: u64) -> u32 {
        (page >> self.shift) as u32
    }

    #[inline(always)]
    fn is_resident(&self, page: u64) -> bool {
        self.present.get(page as usize).copied().unwrap_or(false)
    }

    /// Chunks from most to least recent, each with its resident pages from
    /// oldest to latest mapped (tests and debugging; allocates).
    pub fn order(&self) -> Vec<(u64, Vec<u64>)> {
        self.chunks
            .iter(0)
            .into_iter()
            .map(|c| {
                let mut pages = Vec::new();
                let mut p = self.first[c as usize];
                while p != NIL {
                    pages.push(p as u64);
                    p = self.next[p as usize];
                }
                (c, pages)
            })
            .collect()
    }

    /// The counters, with the chunk gauge filled in.
    pub fn stats(&self) -> RootChunkStats {
        RootChunkStats { chunks: self.chunks.len(0), ..self.stats.clone() }
    }

    /// Take a resident page off its chunk; true if the chunk is left empty.
    #[inline]
    fn remove(&mut self, page: u64) -> bool {
        let i = page as usize;
        let c = self.chunk_of(page) as usize;
        let (p, n) = (self.prev[i], self.next[i]);
        if p != NIL {
            self.next[p as usize] = n;
        } else {
            self.first[c] = n;
        }
        if n != NIL {
            self.prev[n as usize] = p;
        } else {
            self.last[c] = p;
        }
        self.prev[i] = NIL;
        self.next[i] = NIL;
        self.present[i] = false;
        self.resident -= 1;
        if self.first[c] == NIL {
            self.chunks.remove(c as u32);
            return true;
        }
        false
    }
}

impl EvictionPolicy for RootChunk {
    #[inline]
    fn on_map(&mut self, page: u64) {
        debug_assert!(!self.is_resident(page), "page {page} mapped twice");
        let i = page as usize;
        let c = self.chunk_of(page);
        let l = self.last[c as usize];
        self.prev[i] = l;
        self.next[i] = NIL;
        if l != NIL {
            self.next[l as usize] = page as u32;
        } else {
            self.first[c as usize] = page as u32;
        }
        self.last[c as usize] = page as u32;
        self.present[i] = true;
        self.resident += 1;
        // An allocation in the chunk: it goes to the most recent end.
        self.chunks.move_to_head(0, c);
    }

    #[inline]
    fn on_unmap(&mut self, page: u64) {
        if self.is_resident(page) {
            self.remove(page);
        }
    }

    #[inline]
    fn on_evict(&mut self, page: u64) {
        if self.is_resident(page) && self.remove(page) {
            self.stats.chunks_emptied += 1;
        }
    }

    #[inline(always)]
    fn wants_touches(&self) -> bool {
        self.access
    }

    #[inline(always)]
    fn on_touch(&mut self, page: u64) {
        if self.access && self.is_resident(page) {
            let c = self.chunk_of(page);
            self.chunks.move_to_head(0, c);
        }
    }

    #[inline]
    fn victim(&mut self, _bits: &mut dyn AccessedBits) -> Option<u64> {
        let c = self.chunks.tail(0)?;
        Some(self.first[c as usize] as u64)
    }

    #[inline]
    fn resident(&self) -> u64 {
        self.resident
    }

    #[inline]
    fn eviction_unit_frames(&self) -> u64 {
        1 << self.shift
    }

    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference::{self, NoBits, RefRootChunk, Snapshot};
    use super::*;
    use proptest::prelude::*;

    impl Snapshot for RootChunk {
        fn snapshot(&self) -> Vec<Vec<u64>> {
            self.chunks.check().unwrap();
            let order = self.order();
            let mut v = vec![order.iter().map(|(c, _)| *c).collect()];
            v.extend(order.into_iter().map(|(_, pages)| pages));
            v.push(vec![self.stats.chunks_emptied]);
            v
        }
    }

    fn policy(frames: u64, order: Order, chunk: u64) -> RootChunk {
        RootChunk::build(&Config { order, chunk: ByteSize(chunk) }, &EvictionCtx { capacity_frames: frames, seed: 0 }).unwrap()
    }

    #[test]
    fn allocation_order_ignores_touches_and_names_the_oldest_allocated_chunk() {
        // 16 KiB chunks: 4 frames each.
        let mut p = policy(32, Order::Allocation, 16 << 10);
        assert!(!p.wants_touches());
        assert_eq!(p.eviction_unit_frames(), 4);
        assert_eq!(p.victim(&mut NoBits), None);
        for page in [5, 9, 4, 13] {
            p.on_map(page);
        }
        // Chunk 1 (frames 4..8) was allocated into last among 1, 2; chunk 2 oldest.
        assert_eq!(p.order(), vec![(3, vec![13]), (1, vec![5, 4]), (2, vec![9])]);
        assert_eq!(p.victim(&mut NoBits), Some(9));
        p.on_touch(9);
        assert_eq!(p.victim(&mut NoBits), Some(9), "touches do not move a chunk");
        p.on_evict(9);
        assert_eq!(p.victim(&mut NoBits), Some(5), "the page of the victim chunk mapped longest ago");
        p.on_unmap(5);
        assert_eq!(p.victim(&mut NoBits), Some(4), "an unmap does not move the chunk");
        p.on_map(6);
        assert_eq!(p.victim(&mut NoBits), Some(13));
        assert_eq!(p.resident(), 3);
        p.on_unmap(7); // not resident: ignored
        p.on_evict(7);
        assert_eq!(p.resident(), 3);
        let s = p.stats();
        assert_eq!((s.chunks_emptied, s.chunks), (1, 2));
    }

    #[test]
    fn access_order_moves_a_chunk_on_every_touch() {
        let mut p = policy(32, Order::Access, 16 << 10);
        assert!(p.wants_touches());
        for page in [0, 4, 8] {
            p.on_map(page);
        }
        assert_eq!(p.victim(&mut NoBits), Some(0));
        p.on_touch(0);
        assert_eq!(p.victim(&mut NoBits), Some(4));
        p.on_touch(3); // not resident: ignored
        assert_eq!(p.victim(&mut NoBits), Some(4));
    }

    #[test]
    fn chunk_sizes_are_checked_at_their_key() {
        for bad in [0, 2048, 3 << 20, 2 << 30] {
            match RootChunk::build(&Config { order: Order::Allocation, chunk: ByteSize(bad) }, &EvictionCtx { capacity_frames: 64, seed: 0 }) {
                Err(Error::Config { path, .. }) => assert_eq!(path, "os.eviction.chunk"),
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert_eq!(policy(64, Order::Allocation, 4096).eviction_unit_frames(), 1);
        assert_eq!(policy(64, Order::Allocation, 1 << 30).eviction_unit_frames(), 1 << 18);
        // A capacity that is not a whole number of chunks: the last one is partial.
        let mut p = policy(6, Order::Allocation, 16 << 10);
        p.on_map(5);
        assert_eq!(p.victim(&mut NoBits), Some(5));
    }

    proptest! {
        #[test]
        fn root_chunk_matches_the_reference(
            cap in 1u64..48,
            shift in 0u32..4,
            access in any::<bool>(),
            ops in reference::ops(48, 300),
        ) {
            let order = if access { Order::Access } else { Order::Allocation };
            reference::run(policy(cap, order, 4096 << shift), RefRootChunk::new(shift, access), cap, &ops)?;
        }
    }
}
