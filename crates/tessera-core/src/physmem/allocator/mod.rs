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
//! - `reserve_block(pfn, order)` does the same for the naturally aligned block
//!   of `2^order` frames at `pfn`, all or nothing (GTSM slice grants take
//!   B-blocks with it). The default reserves frame by frame and gives the
//!   frames back if one is not free.
//! - `check_invariants()` verifies internal consistency (tests call it after
//!   every operation).
//! - `alloc_page(req)` places a data page: the request says which page of
//!   which address space it is ([`PageRequest`]), so an allocator that
//!   places by identity (a hash of (asid, vpn), per-application frames) can
//!   use it. The default is `alloc(order)`.
//! - `hear_allocation(asid, va, bytes)` tells the allocator what an
//!   application allocated before it touches it (a GPU runtime's
//!   cudaMalloc); no-op by default.
//! - `page_mapped` and `page_freed` tell the allocator that a data page it
//!   placed is now mapped, or was unmapped and its frames freed (they are
//!   freed with `free` right after); both are no-ops by default.
//!
//! ## Placing under memory pressure
//! An allocator that places pages by identity (Iceberg hashes (asid, vpn) to
//! a few buckets; CoCoA and GTSM slices restrict where an application's
//! pages go) may find every frame a page is allowed in taken while memory as
//! a whole is not full. Then "evict the globally least useful page" is the
//! wrong question: only a page in one of the allowed frames helps. The OS
//! asks such an allocator instead:
//! - `place(req, ages)` answers with a [`Placement`]: a free frame
//!   (`Frame`), a resident page to evict whose frames then take the request
//!   (`Displace`), or `Full` (nothing can be displaced: the OS falls back to
//!   its eviction policy's global victim, or fails without a swap device).
//!   `ages` is what the eviction policy knows about resident pages
//!   ([`PageAges`]: last use and whether a page is a *ghost*, i.e. already
//!   as good as evicted); `None` when there is no such policy, and then an
//!   allocator must not answer `Displace`. `place` decides only: the
//!   allocator changes nothing for a `Displace` or `Full` answer.
//!   The default is `alloc_page`, never displacing.
//! - After evicting a `Displace` victim the OS calls `claim(pfn, req)`,
//!   which takes exactly those (now free) frames for the request. The
//!   default takes one 4 KiB frame through `reserve`.
//! - `table_headroom(req)` is how many frames page-table nodes (`alloc(0)`)
//!   could still get once `req` is placed; the OS evicts until the nodes a
//!   mapping may need fit. By default data pages and table nodes share the
//!   free frames (`free_frames() - size of req`); an allocator that keeps
//!   data pages in a pool of their own says so here, and says with
//!   `frees_table_room(pfn)` which evictions give frames back to nodes.
//! - `needs_ages()` says the allocator cannot make room under pressure
//!   without [`PageAges`] (an eviction policy's global victim need not be in
//!   any allowed frame); the OS refuses a policy without ages then.

pub mod buddy;
pub mod cocoa;
pub mod iceberg;
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

/// One 4 KiB page moved by [`FrameAllocator::evacuate`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Move {
    pub from: Pfn,
    pub to: Pfn,
    /// Data of no simulated application (nothing maps it).
    pub foreign: bool,
}

/// Largest block order: 2^18 frames = 1 GiB.
pub const MAX_ORDER: u32 = 18;

/// What an allocator is built over.
#[derive(Clone, Debug)]
pub struct AllocCtx {
    pub capacity_frames: u64,
    /// Sub-seed for allocators that draw random numbers (e.g. hash tables).
    pub seed: u64,
}

/// Where a data page can go, as answered by [`FrameAllocator::place`].
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Placement {
    /// These free frames are now the page's.
    Frame(Pfn),
    /// Evict the resident page whose first frame is this one; its frames
    /// then take the request (through [`FrameAllocator::claim`]).
    Displace(Pfn),
    /// No allowed frame is free and none can be displaced.
    Full,
}

/// What an eviction policy knows about the age of resident pages, each
/// named by its first frame (as the reverse map names them). Read by
/// allocators that choose among a few allowed frames.
pub trait PageAges {
    /// When the page was last used, on the policy's clock (larger is more
    /// recent); `None` when the frame holds no page the policy tracks (a
    /// pinned or page-table frame), which must then never be displaced.
    fn last_use(&self, page: u64) -> Option<u64>;
    /// Whether the page is a ghost: resident, but older than anything the
    /// policy still considers in use, so its frame counts as free.
    fn is_ghost(&self, page: u64) -> bool;
    /// Both at once: `(last use, is a ghost)`, `None` for an untracked frame.
    fn age(&self, page: u64) -> Option<(u64, bool)> {
        self.last_use(page).map(|t| (t, self.is_ghost(page)))
    }
}

pub trait FrameAllocator {
    fn alloc(&mut self, order: u32) -> Option<Pfn>;
    fn free(&mut self, pfn: Pfn, order: u32);
    fn free_frames(&self) -> u64;
    fn largest_free_order(&self) -> Option<u32>;
    fn reserve(&mut self, pfn: Pfn) -> bool;
    /// Take the free aligned block of 2^order frames at `pfn` (see the contract).
    fn reserve_block(&mut self, pfn: Pfn, order: u32) -> bool {
        if order > MAX_ORDER || pfn.0 & ((1u64 << order) - 1) != 0 {
            return false;
        }
        for i in 0..1u64 << order {
            if !self.reserve(Pfn(pfn.0 + i)) {
                for j in 0..i {
                    self.free(Pfn(pfn.0 + j), 0);
                }
                return false;
            }
        }
        true
    }
    fn check_invariants(&self) -> Result<(), String>;

    /// Frames for the data page `req` (see the contract above).
    fn alloc_page(&mut self, req: &PageRequest) -> Option<Pfn> {
        self.alloc(req.size.order())
    }
    /// Application `asid` allocated the virtual range `va .. va + bytes`
    /// (before touching it): for an allocator that places pages by what an
    /// application allocates together (CoCoA's en-masse regions). No-op by
    /// default.
    fn hear_allocation(&mut self, _asid: Asid, _va: u64, _bytes: u64) {}
    /// Frames for `req` that `alloc_page` refused because they would break
    /// the allocator's own placement rule (CoCoA's soft guarantee): the
    /// last resort before running out of memory. None by default.
    fn fallback_page(&mut self, _req: &PageRequest) -> Option<Pfn> {
        None
    }
    /// Empty one frame by moving its pages to free frames of the same
    /// owner (compaction), recording the moves in `moves`; false when no
    /// frame can be emptied (the default: the allocator cannot compact).
    fn evacuate(&mut self, _moves: &mut Vec<Move>) -> bool {
        false
    }
    /// Empty the frame holding `pfn` into other frames of its owner
    /// (compaction of a frame deallocation left sparse), recording the
    /// moves; false when it cannot (the default).
    fn evacuate_frame(&mut self, _pfn: Pfn, _moves: &mut Vec<Move>) -> bool {
        false
    }
    /// Whether `evacuate` can ever empty a frame.
    fn can_evacuate(&self) -> bool {
        false
    }
    /// Whether the allocator is built for a machine that calls
    /// `hear_allocation` (the GPU's runtime); false by default.
    fn needs_allocations(&self) -> bool {
        false
    }
    /// The page `req` placed at `pfn` is now mapped.
    fn page_mapped(&mut self, _pfn: Pfn, _req: &PageRequest) {}
    /// The page `req` at `pfn` was unmapped; its frames are freed next.
    fn page_freed(&mut self, _pfn: Pfn, _req: &PageRequest) {}

    /// Where `req` goes under memory pressure (see the module docs). The
    /// default places with `alloc_page` and never displaces.
    fn place(&mut self, req: &PageRequest, _ages: Option<&dyn PageAges>) -> Placement {
        match self.alloc_page(req) {
            Some(pfn) => Placement::Frame(pfn),
            None => Placement::Full,
        }
    }
    /// Take the free frames at `pfn` for `req`, after the page a
    /// `Placement::Displace` named was evicted. False (and no change) when
    /// they are not free. The default takes one 4 KiB frame with `reserve`.
    fn claim(&mut self, pfn: Pfn, req: &PageRequest) -> bool {
        req.size == PageSize::Size4K && self.reserve(pfn)
    }
    /// Frames page-table nodes could still get once `req` is placed.
    fn table_headroom(&self, req: &PageRequest) -> u64 {
        self.free_frames().saturating_sub(1 << req.size.order())
    }
    /// Whether freeing the page at `pfn` gives frames back to page-table
    /// nodes (by default every frame does).
    fn frees_table_room(&self, _pfn: Pfn) -> bool {
        true
    }
    /// Whether making room needs an eviction policy's [`PageAges`].
    fn needs_ages(&self) -> bool {
        false
    }
    /// What to call a page-table node in an out-of-memory error.
    fn table_frame_name(&self) -> &'static str {
        "page-table node"
    }
    /// When page-table nodes come from an area of their own (below the
    /// Iceberg pool): its free frames and its size in frames, for the
    /// out-of-memory error. `None`: they come from all of memory.
    fn table_area(&self) -> Option<(u64, u64)> {
        None
    }

    /// The allocator's own counters (reported as `physmem.allocator.<name>.*`);
    /// none by default.
    fn visit_stats(&self, _v: &mut dyn crate::stats::StatVisitor) {}
}
