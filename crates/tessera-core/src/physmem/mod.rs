//! Simulated physical memory: a frame allocator plus backing storage for
//! page-table frames.
//!
//! ## What it models
//! `capacity` bytes of DRAM as 4 KiB frames handed out by the allocator named in
//! `physmem.allocator`. Data frames are only numbers (the simulator never needs
//! their contents); frames allocated with [`PhysMem::alloc_table_frame`] get
//! 4 KiB of host storage so page-table entries are real bits that the walker
//! reads and writes with [`PhysMem::read_u64`] / [`PhysMem::write_u64`].
//!
//! Storage is found through a compact pfn → slot hash map naming a 4 KiB node
//! in one flat vector. Slot 0 is a permanent all-zero sentinel, so a frame
//! without storage reads as 0. (A dense per-frame directory was measured to
//! miss the host caches on nearly every walk: table frames are few and scattered.)
//!
//! Retired frames (`physmem.retired`, see [`retired`]): before anything else,
//! every frame of the fault map is taken out of the allocator for good, so
//! no allocator ever hands one out. A map that leaves fewer frames than one
//! page-table walk path needs is a config error at `physmem.retired`.
//!
//! Pre-fragmentation: before the run, `round(fragmentation × whole 2 MiB blocks)`
//! distinct 2 MiB blocks are chosen at random (seeded, component name
//! `physmem.fragmentation`) and one random 4 KiB frame in each is reserved
//! forever, so none of those blocks can be handed out as a 2 MiB or 1 GiB page.
//! The draws do not depend on the fault map; a drawn frame that is retired
//! is not pinned again (its block is broken already).
//! ## Paper
//! Fragmentation knob as in the THP and GTSM evaluations (fraction of 2 MiB
//! regions that are not free as a whole).
//! ## Choices where the papers are silent
//! - A pinned frame is placed uniformly inside its 2 MiB block, and the blocks
//!   are sampled uniformly without replacement.
//! - A trailing partial 2 MiB block (capacity not a multiple of 2 MiB) is never
//!   pinned.
//! - Capacity is limited to 4 TiB so the allocator's bitmaps stay small on the host.
//! - Freeing a table frame drops its storage; a later table frame is zeroed.
//! ## Config
//! `physmem.capacity` (multiple of 4 KiB, 2 MiB .. 4 TiB),
//! `physmem.fragmentation` (0.0 ..= 1.0), `physmem.allocator = { kind = ... }`,
//! `physmem.retired = { kind = ... }` (default `none`).
//! ## Stats
//! `physmem.capacity_frames`, `physmem.free_frames`, `physmem.allocated_frames`,
//! `physmem.table_frames`, `physmem.pinned_frames`, with a fault map
//! `physmem.retired_frames` and `physmem.retired.clean_blocks_*`, and the allocator's own
//! counters under `physmem.allocator.<kind>.*` (e.g. `physmem.allocator.buddy.splits`);
//! with GTSM slices enabled ([`slices`]), `physmem.slices.*`.

pub mod allocator;
mod arena;
pub mod retired;
pub mod slices;

use arena::NodeStore;

use std::fmt;

use rand::Rng;

use rustc_hash::FxHashMap;

use crate::addr::{Pfn, BASE_PAGE, BASE_SHIFT};
use crate::config::spec::PhysMemSpec;
use crate::error::{Error, Result};
use crate::stat_group;
use crate::stats::{Prefixed, StatGroup, StatVisitor};
use allocator::{AllocCtx, AnyAllocator, FrameAllocator, PageAges, PageRequest, Placement};
use slices::{SliceGrant, SliceMap, SlicePairGrant, SliceSpec};

/// Frames per 2 MiB block.
const FRAMES_2M: u64 = 512;
/// Frames per directory chunk (and words per node): both 512.
const CHUNK: usize = 512;
/// Largest accepted capacity.
pub const MAX_CAPACITY: u64 = 4 << 40;

stat_group! {
    /// Occupancy of simulated physical memory at the end of the run.
    pub struct PhysMemStats {
        capacity_frames: gauge "frames", "4 KiB frames of simulated physical memory",
        free_frames: gauge "frames", "frames free in the allocator",
        allocated_frames: gauge "frames", "frames handed out (data and page-table frames, excluding pinned)",
        table_frames: gauge "frames", "frames holding page-table nodes",
        pinned_frames: gauge "frames", "frames reserved forever by pre-fragmentation",
    }
}

stat_group! {
    /// What a fault map leaves of contiguous memory (`physmem.retired.*`).
    pub struct RetiredStats {
        clean_blocks_32k: gauge "blocks", "aligned 32 KiB blocks with no retired frame (GT-PDE-1MB B-blocks)",
        clean_blocks_64k: gauge "blocks", "aligned 64 KiB blocks with no retired frame (GT-PDE-2MB B-blocks)",
        clean_blocks_128k: gauge "blocks", "aligned 128 KiB blocks with no retired frame (GT-PDE-4MB B-blocks)",
        clean_blocks_2m: gauge "blocks", "aligned 2 MiB blocks with no retired frame (could back a 2 MiB page)",
        clean_blocks_1g: gauge "blocks", "aligned 1 GiB blocks with no retired frame (could back a 1 GiB page)",
    }
}

/// Frames page-table nodes need free after retirement: one node per level
/// of the deepest table any format builds, so the first mapping's walk path fits.
pub const MIN_TABLE_FRAMES: u64 = crate::pagetable::radix::MAX_LEVELS as u64;

#[derive(Clone)]
pub struct PhysMem {
    alloc: AnyAllocator,
    capacity_frames: u64,
    /// Storage slot of every page-table frame. A compact hash map rather than a
    /// per-frame array: table frames are few (a few thousand for gigabytes of
    /// data) and scattered, so a dense index would spread over megabytes of host
    /// memory and miss the host caches on every walk.
    slots: FxHashMap<u64, u32>,
    /// Node storage; `nodes[0]` is the all-zero sentinel and is never written.
    nodes: NodeStore,
    /// Host-only links: for each entry that points at a table frame, that
    /// frame's slot (0 otherwise). Lets the walker follow a table without
    /// looking the child frame up. Maintained by [`PhysMem::set_link`].
    /// Rows of `CHUNK` words; row 0 is all zero and never written.
    links: Vec<u32>,
    /// Per node slot, its row in `links`, 0 until the node holds a link.
    /// Leaf nodes (most of a table) never do, so writing their entries
    /// touches no link memory: megabytes that would otherwise be written at
    /// random on every first touch.
    link_row: Vec<u32>,
    /// Released node slots, reused before growing `nodes`.
    spare_slots: Vec<u32>,
    /// The frame each slot stores (the inverse of `slots`).
    slot_frames: Vec<u64>,
    table_frames: u64,
    pinned_frames: u64,
    /// The frames pre-fragmentation pinned, in the order drawn (compaction
    /// reads them once, when the OS is built; it moves pins it migrates in
    /// its own set).
    pins: Vec<u64>,
    /// The fault map and what it leaves, when `physmem.retired` is not `none`.
    retired: Option<Box<(retired::RetiredMap, RetiredStats)>>,
    /// Reverse map: the first frame of every mapped data page → the page.
    owners: ReverseMap,
    /// Bumped by every change to page-table memory that could alter a walk
    /// path other than ones it already took: overwriting a non-zero word
    /// with [`PhysMem::write_u64`] and releasing table frames. Writing a zero
    /// word (a non-present entry: it lies on no complete path) and
    /// [`PhysMem::write_linked`] (the walker setting accessed and dirty bits)
    /// leave it. The walker trusts a path it recorded while the epoch holds.
    table_epoch: u64,
    /// GTSM's free BAV array and slice grants, once the OS enables them
    /// ([`PhysMem::enable_slices`]); every frame handed out or taken back
    /// updates it then.
    slices: Option<Box<SliceMap>>,
}

impl fmt::Debug for PhysMem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PhysMem")
            .field("allocator", &self.alloc)
            .field("capacity_frames", &self.capacity_frames)
            .field("table_frames", &self.table_frames)
            .field("pinned_frames", &self.pinned_frames)
            .finish()
    }
}

impl PhysMem {
    /// Build the allocator named by `spec.allocator` and apply `spec.fragmentation`.
    pub fn build(spec: &PhysMemSpec, seed: u64) -> Result<Self> {
        let cap = spec.capacity.0;
        if !cap.is_multiple_of(BASE_PAGE) || !(FRAMES_2M * BASE_PAGE..=MAX_CAPACITY).contains(&cap) {
            return Err(Error::config(
                "physmem.capacity",
                format!("must be a multiple of 4 KiB between 2 MiB and 4 TiB, got {cap} bytes"),
            ));
        }
        let f = spec.fragmentation;
        if !(0.0..=1.0).contains(&f) {
            return Err(Error::config("physmem.fragmentation", format!("must be between 0.0 and 1.0, got {f}")));
        }
        let capacity_frames = cap >> BASE_SHIFT;
        let alloc = AnyAllocator::build(&spec.allocator, &AllocCtx { capacity_frames, seed: crate::rng::sub_seed(seed, "physmem.allocator") }, "physmem.allocator")?;
        let mut mem = PhysMem {
            alloc,
            capacity_frames,
            slots: FxHashMap::default(),
            nodes: {
                let mut n = NodeStore::new();
                n.push_zeroed();
                n
            },
            spare_slots: Vec::new(),
            slot_frames: vec![0],
            links: vec![0; CHUNK],
            link_row: vec![0],
            table_frames: 0,
            pinned_frames: 0,
            pins: Vec::new(),
            retired: None,
            owners: ReverseMap::new(capacity_frames),
            table_epoch: 0,
            slices: None,
        };
        let occupancy = match spec.fragmentation_occupancy {
            None => None,
            Some(o) if o > 0.0 && o <= 1.0 => Some(((o * FRAMES_2M as f64).round() as u64).max(1)),
            Some(o) => {
                return Err(Error::config(
                    "physmem.fragmentation_occupancy",
                    format!("must be above 0.0 and at most 1.0 (the share of each pre-fragmented 2 MiB block pinned), got {o}"),
                ))
            }
        };
        mem.retire(&spec.retired, seed)?;
        mem.fragment(f, occupancy, seed);
        Ok(mem)
    }

    /// Take every frame of the fault map out of the allocator for good.
    fn retire(&mut self, source: &crate::registry::MechanismSpec, seed: u64) -> Result<()> {
        if source.kind == "none" {
            return Ok(());
        }
        let ctx = retired::RetireCtx { capacity_frames: self.capacity_frames, seed };
        let map = retired::build_map(source, &ctx)?;
        for f in map.iter() {
            let ok = self.alloc.reserve(Pfn(f));
            debug_assert!(ok, "retired frame {f} was not free");
        }
        let room = self.alloc.table_area().map_or(self.alloc.free_frames(), |(free, _)| free);
        if room < MIN_TABLE_FRAMES {
            let area = if self.alloc.table_area().is_some() { " in the area page-table nodes come from (below the iceberg pool)" } else { "" };
            return Err(Error::config(
                "physmem.retired",
                format!(
                    "the fault map retires {} of {} frames and leaves {room} free{area}; page tables need at least {MIN_TABLE_FRAMES} \
                     (a node per level of the deepest table) before any data: retire fewer frames or raise physmem.capacity",
                    map.count(),
                    self.capacity_frames
                ),
            ));
        }
        let stats = RetiredStats {
            clean_blocks_32k: map.clean_blocks(3),
            clean_blocks_64k: map.clean_blocks(4),
            clean_blocks_128k: map.clean_blocks(5),
            clean_blocks_2m: map.clean_blocks(9),
            clean_blocks_1g: map.clean_blocks(18),
        };
        self.retired = Some(Box::new((map, stats)));
        Ok(())
    }

    /// The fault map, when `physmem.retired` is not `none`.
    pub fn retired_map(&self) -> Option<&retired::RetiredMap> {
        self.retired.as_ref().map(|r| &r.0)
    }

    /// Frames retired by the fault map.
    pub fn retired_frames(&self) -> u64 {
        self.retired.as_ref().map_or(0, |r| r.0.count())
    }

    /// Pin one random frame in each of `round(f × blocks)` random whole 2 MiB blocks.
    /// Pin frames in the rounded share `f` of 2 MiB blocks, drawn at
    /// random: one frame each, or `per_block` distinct frames each (Mosaic's
    /// stress test: pre-fragmented data, never coalescible).
    fn fragment(&mut self, f: f64, per_block: Option<u64>, seed: u64) {
        let blocks = self.capacity_frames / FRAMES_2M;
        let k = (f * blocks as f64).round() as u64;
        if k == 0 {
            return;
        }
        let mut rng = crate::rng::component_rng(seed, "physmem.fragmentation");
        // Partial Fisher-Yates: the first k entries become a uniform sample without replacement.
        let mut ids: Vec<u64> = (0..blocks).collect();
        for i in 0..k as usize {
            let j = rng.gen_range(i..ids.len());
            ids.swap(i, j);
        }
        let mut slots: Vec<u64> = Vec::new();
        for &b in &ids[..k as usize] {
            match per_block {
                None => self.pin(Pfn(b * FRAMES_2M + rng.gen_range(0..FRAMES_2M))),
                Some(n) => {
                    slots.clear();
                    slots.extend(0..FRAMES_2M);
                    for i in 0..n as usize {
                        let j = rng.gen_range(i..slots.len());
                        slots.swap(i, j);
                        self.pin(Pfn(b * FRAMES_2M + slots[i]));
                    }
                }
            }
        }
    }

    /// Pin the free frame `pfn` for pre-fragmentation (a retired frame stays retired).
    fn pin(&mut self, pfn: Pfn) {
        if self.retired.as_ref().is_some_and(|r| r.0.is_retired(pfn.0)) {
            return;
        }
        let ok = self.alloc.reserve(pfn);
        debug_assert!(ok, "pinned frame {pfn:?} was not free");
        self.pinned_frames += ok as u64;
        if ok {
            self.pins.push(pfn.0);
        }
    }

    pub fn capacity_frames(&self) -> u64 {
        self.capacity_frames
    }

    /// Free 4 KiB frames in the allocator.
    pub fn free_frames(&self) -> u64 {
        self.alloc.free_frames()
    }

    /// Frames pinned by pre-fragmentation.
    pub fn pinned_frames(&self) -> u64 {
        self.pinned_frames
    }

    /// The frames pre-fragmentation pinned at build.
    pub fn pins(&self) -> &[u64] {
        &self.pins
    }

    /// Take the one free frame `pfn` out of the allocator (see the
    /// allocator contract's `reserve`); false, changing nothing, when it is
    /// not free. Given back with [`Self::free`].
    pub fn reserve_frame(&mut self, pfn: Pfn) -> bool {
        let ok = self.alloc.reserve(pfn);
        if ok {
            self.slices_taken(pfn, 0);
        }
        ok
    }

    /// Frames currently holding page-table nodes.
    pub fn table_frames(&self) -> u64 {
        self.table_frames
    }

    /// The allocator (for inspection, e.g. `largest_free_order`).
    pub fn allocator(&self) -> &AnyAllocator {
        &self.alloc
    }

    fn out_of_memory(&self, order: u32, what: &str) -> Error {
        Error::OutOfMemory {
            what: what.to_string(),
            requested_bytes: BASE_PAGE << order,
            free_bytes: self.alloc.free_frames() * BASE_PAGE,
            capacity_bytes: self.capacity_frames * BASE_PAGE,
        }
    }

    /// Allocate a block of 2^order frames, or `Error::OutOfMemory` naming `what`.
    pub fn alloc(&mut self, order: u32, what: &str) -> Result<Pfn> {
        match self.try_alloc(order) {
            Some(pfn) => Ok(pfn),
            None => Err(self.out_of_memory(order, what)),
        }
    }

    /// Allocate a block of 2^order frames if one is free.
    #[inline]
    pub fn try_alloc(&mut self, order: u32) -> Option<Pfn> {
        let pfn = self.alloc.alloc(order);
        if let Some(p) = pfn {
            self.slices_taken(p, order);
        }
        pfn
    }

    /// Frames `pfn .. pfn + 2^order` left the allocator: tell the slice map, if any.
    #[inline]
    fn slices_taken(&mut self, pfn: Pfn, order: u32) {
        if let Some(m) = self.slices.as_deref_mut() {
            m.take(pfn.0, order);
        }
    }

    /// Frames `pfn .. pfn + 2^order` came back to the allocator.
    #[inline]
    fn slices_given(&mut self, pfn: Pfn, order: u32) {
        if let Some(m) = self.slices.as_deref_mut() {
            m.give(pfn.0, order);
        }
    }

    /// Frames for the data page `req`, placed by the allocator knowing
    /// which page it is, and recorded in the reverse map. `Ok(None)` when
    /// no block is free and `required` is false; `Err(OutOfMemory)` when it is.
    pub fn alloc_page(&mut self, req: PageRequest, required: bool) -> Result<Option<Pfn>> {
        match self.alloc.alloc_page(&req) {
            Some(pfn) => {
                self.slices_taken(pfn, req.size.order());
                self.record(pfn, req);
                Ok(Some(pfn))
            }
            None if required => Err(self.out_of_memory(req.size.order(), "a data page")),
            None => Ok(None),
        }
    }

    /// Ask the allocator where `req` goes under memory pressure, knowing the
    /// eviction policy's page ages. A `Frame` answer is recorded in the
    /// reverse map as [`Self::alloc_page`] would; `Displace` and `Full`
    /// change nothing.
    pub fn place_page(&mut self, req: PageRequest, ages: Option<&dyn PageAges>) -> Placement {
        let placement = self.alloc.place(&req, ages);
        if let Placement::Frame(pfn) = placement {
            self.slices_taken(pfn, req.size.order());
            self.record(pfn, req);
        }
        placement
    }

    /// Take the frames at `pfn` for `req` once the page that a
    /// `Placement::Displace` named there has been evicted.
    pub fn claim_page(&mut self, req: PageRequest, pfn: Pfn) -> Result<Pfn> {
        if self.owners.get(pfn.0).is_some() || !self.alloc.claim(pfn, &req) {
            return Err(Error::config(
                "physmem.allocator",
                format!("the allocator asked to displace the page at frame {:#x}, but its frames are not free after the eviction", pfn.0),
            ));
        }
        self.slices_taken(pfn, req.size.order());
        self.record(pfn, req);
        Ok(pfn)
    }

    #[inline]
    fn record(&mut self, pfn: Pfn, req: PageRequest) {
        debug_assert!(self.owners.get(pfn.0).is_none(), "frame {pfn:?} handed out twice");
        self.owners.insert(pfn.0, req);
        self.alloc.page_mapped(pfn, &req);
    }

    /// Frames page-table nodes could still get once `req` is placed.
    pub fn table_headroom(&self, req: &PageRequest) -> u64 {
        self.alloc.table_headroom(req)
    }

    /// The error of a mapping whose page-table nodes find no frame (and no
    /// eviction would give them one).
    pub fn tables_exhausted(&self) -> Error {
        let probe = PageRequest { asid: 0, vpn: 0, size: crate::addr::PageSize::Size4K };
        let (free, area) = self.alloc.table_area().unwrap_or((self.alloc.table_headroom(&probe), self.capacity_frames));
        Error::OutOfMemory {
            what: self.alloc.table_frame_name().to_string(),
            requested_bytes: BASE_PAGE,
            free_bytes: free * BASE_PAGE,
            capacity_bytes: area * BASE_PAGE,
        }
    }

    /// Free the data page whose first frame is `pfn` (after it was unmapped):
    /// the allocator hears of it and takes its frames back. Returns the page.
    pub fn free_page(&mut self, pfn: Pfn) -> Option<PageRequest> {
        let req = self.owners.remove(pfn.0)?;
        self.alloc.page_freed(pfn, &req);
        self.alloc.free(pfn, req.size.order());
        self.slices_given(pfn, req.size.order());
        Some(req)
    }

    /// The out-of-memory error of a data page the allocator refused.
    pub fn no_room_for(&self, req: &PageRequest) -> Error {
        self.out_of_memory(req.size.order(), "a data page")
    }

    /// The allocator's last resort for `req` (see
    /// [`FrameAllocator::fallback_page`]), recorded in the reverse map.
    pub fn fallback_page(&mut self, req: PageRequest) -> Option<Pfn> {
        let pfn = self.alloc.fallback_page(&req)?;
        self.slices_taken(pfn, req.size.order());
        self.record(pfn, req);
        Some(pfn)
    }

    /// Let the allocator empty one frame ([`FrameAllocator::evacuate`]);
    /// the reverse map follows every moved data page (foreign data has no
    /// entry). False when nothing could be emptied.
    pub fn evacuate(&mut self, moves: &mut Vec<allocator::Move>) -> bool {
        if !self.alloc.evacuate(moves) {
            return false;
        }
        self.follow(moves);
        true
    }

    /// Let the allocator empty the frame holding `pfn`
    /// ([`FrameAllocator::evacuate_frame`]), the reverse map following.
    pub fn evacuate_frame(&mut self, pfn: Pfn, moves: &mut Vec<allocator::Move>) -> bool {
        if !self.alloc.evacuate_frame(pfn, moves) {
            return false;
        }
        self.follow(moves);
        true
    }

    /// The reverse map follows every moved data page (foreign data has no entry).
    fn follow(&mut self, moves: &[allocator::Move]) {
        for m in moves.iter().filter(|m| !m.foreign) {
            let req = self.owners.remove(m.from.0).expect("an application page the allocator moved is in the reverse map");
            self.owners.insert(m.to.0, req);
        }
    }

    /// Application `asid` allocated `va .. va + bytes` (see
    /// [`FrameAllocator::hear_allocation`]).
    pub fn hear_allocation(&mut self, asid: crate::addr::Asid, va: u64, bytes: u64) {
        self.alloc.hear_allocation(asid, va, bytes);
    }

    /// The data page whose first frame is `pfn`, if one is mapped there (the reverse map).
    pub fn owner(&self, pfn: Pfn) -> Option<PageRequest> {
        self.owners.get(pfn.0)
    }

    /// Data pages in the reverse map.
    pub fn mapped_pages(&self) -> usize {
        self.owners.len() as usize
    }

    /// Return a block (or a sub-block of an allocated block) to the allocator.
    /// Table frames inside it lose their storage.
    pub fn free(&mut self, pfn: Pfn, order: u32) {
        if self.table_frames != 0 {
            self.drop_storage(pfn.0, pfn.0 + (1u64 << order));
            self.table_epoch += 1;
        }
        self.alloc.free(pfn, order);
        self.slices_given(pfn, order);
    }

    /// Start keeping GTSM's free BAV array (see [`slices`]), from the
    /// allocator's free blocks now: the OS model calls it once, after
    /// retirement and pre-fragmentation, before the run. Config errors:
    /// an allocator other than `buddy` (`physmem.allocator`), a B-block
    /// order other than 3, 4 or 5 (`pagetable.format.mode`), `min_blocks`
    /// other than 32 or 33 (`physmem.page_size.min_blocks`).
    pub fn enable_slices(&mut self, spec: SliceSpec) -> Result<()> {
        let AnyAllocator::Buddy(buddy) = &self.alloc else {
            return Err(Error::config_allowed(
                "physmem.allocator",
                format!("GTSM slices need the buddy allocator, not {:?}", self.alloc.name()),
                &["buddy"],
            ));
        };
        if !(3..=5).contains(&spec.block_order) {
            return Err(Error::config(
                "pagetable.format.mode",
                format!(
                    "GTSM B-blocks are 2^3, 2^4 or 2^5 frames (32, 64 or 128 KiB), not 2^{} frames",
                    spec.block_order
                ),
            ));
        }
        if spec.min_blocks != crate::gtsm::slice::MIN_USABLE && spec.min_blocks != crate::gtsm::slice::MIN_USABLE_HALF {
            return Err(Error::config_allowed(
                "physmem.page_size.min_blocks",
                format!("a slice needs 33 (more than half) or 32 usable B-blocks, not {}", spec.min_blocks),
                &["32", "33"],
            ));
        }
        let free = buddy.free_blocks().into_iter().map(|(pfn, order)| (pfn.0, order));
        self.slices = Some(Box::new(SliceMap::new(spec, self.capacity_frames, free)));
        Ok(())
    }

    /// The slice map, once [`Self::enable_slices`] was called.
    pub fn slices(&self) -> Option<&SliceMap> {
        self.slices.as_deref()
    }

    /// A slice for one GT-PDE: the lowest-addressed eligible slice and the
    /// 32 lowest free B-blocks of it, which leave the allocator. `None` when
    /// slices are not enabled or no slice is eligible (counted as a refusal).
    pub fn alloc_slice(&mut self) -> Option<SliceGrant> {
        let map = self.slices.as_deref_mut()?;
        let Some((s, bitmap)) = map.pick() else {
            map.count_refusal();
            return None;
        };
        let base = s << map.slice_order();
        if !take_blocks(&mut self.alloc, base, bitmap, map.block_order()) {
            debug_assert!(false, "slice {s}: free BAV {:#x} disagrees with the allocator", map.bav(s));
            map.count_refusal();
            return None;
        }
        map.granted(s, bitmap);
        map.count_grant(false);
        Some(SliceGrant { base: Pfn(base), bitmap })
    }

    /// Two slices of one 128 MiB chunk for one P-GT-PDE, sharing a bitmap
    /// (see [`slices`] for which). `None` when slices are not enabled with
    /// `paired`, or (a refusal) when no chunk has a pair.
    pub fn alloc_slice_pair(&mut self) -> Option<SlicePairGrant> {
        let map = self.slices.as_deref_mut()?;
        if !map.spec().paired {
            return None;
        }
        let Some((a, b, bitmap)) = map.pick_pair() else {
            map.count_refusal();
            return None;
        };
        let (so, bo) = (map.slice_order(), map.block_order());
        if !take_blocks(&mut self.alloc, a << so, bitmap, bo) {
            debug_assert!(false, "slice {a}: free BAV disagrees with the allocator");
            map.count_refusal();
            return None;
        }
        if !take_blocks(&mut self.alloc, b << so, bitmap, bo) {
            debug_assert!(false, "slice {b}: free BAV disagrees with the allocator");
            give_blocks(&mut self.alloc, a << so, bitmap, bo);
            map.count_refusal();
            return None;
        }
        map.granted(a, bitmap);
        map.granted(b, bitmap);
        map.count_grant(true);
        Some(SlicePairGrant { a: Pfn(a << so), b: Pfn(b << so), bitmap })
    }

    /// Give back the B-blocks `bitmap` of the grant on the slice at `base`
    /// (a pair: each of its slices with the shared bitmap). Ignored, as a
    /// caller bug, unless `base` is a slice hosting a grant and `bitmap` 32
    /// of its B-blocks that are not free.
    pub fn free_slice(&mut self, base: Pfn, bitmap: u64) {
        let Some(map) = self.slices.as_deref_mut() else {
            return;
        };
        let so = map.slice_order();
        let s = base.0 >> so;
        if base.0 & ((1u64 << so) - 1) != 0 || !map.can_release(s, bitmap) {
            debug_assert!(false, "free_slice({base:?}, {bitmap:#x}) is not a grant");
            return;
        }
        give_blocks(&mut self.alloc, base.0, bitmap, map.block_order());
        map.released(s, bitmap);
    }

    fn drop_storage(&mut self, start: u64, end: u64) {
        let mut released = Vec::new();
        if end - start > self.slots.len() as u64 {
            self.slots.retain(|&pfn, slot| {
                let keep = !(start..end).contains(&pfn);
                if !keep {
                    released.push(*slot);
                }
                keep
            });
        } else {
            for pfn in start..end {
                if let Some(slot) = self.slots.remove(&pfn) {
                    released.push(slot);
                }
            }
        }
        self.table_frames -= released.len() as u64;
        self.spare_slots.extend(released);
    }

    /// Allocate one zeroed 4 KiB frame with backing storage, for a page-table node.
    pub fn alloc_table_frame(&mut self) -> Result<Pfn> {
        let pfn = match self.try_alloc(0) {
            Some(pfn) => pfn,
            None if self.alloc.table_area().is_some() => return Err(self.tables_exhausted()),
            None => return Err(self.out_of_memory(0, self.alloc.table_frame_name())),
        };
        let slot = match self.spare_slots.pop() {
            Some(s) => {
                *self.nodes.node_mut(s as usize) = [0; CHUNK];
                // The node keeps its link row, cleared.
                let row = self.link_row[s as usize] as usize;
                if row != 0 {
                    self.links[row * CHUNK..(row + 1) * CHUNK].fill(0);
                }
                s
            }
            None => {
                self.link_row.push(0);
                self.slot_frames.push(0);
                self.nodes.push_zeroed() as u32
            }
        };
        self.slot_frames[slot as usize] = pfn.0;
        self.slots.insert(pfn.0, slot);
        self.table_frames += 1;
        Ok(pfn)
    }

    /// Allocate a zeroed node of 2^order contiguous frames with backing
    /// storage in consecutive host slots (a node wider than one frame:
    /// GTSM's 8 and 16 KiB page directories). Order 0 is
    /// [`Self::alloc_table_frame`].
    pub fn alloc_table_node(&mut self, order: u32) -> Result<Pfn> {
        if order == 0 {
            return self.alloc_table_frame();
        }
        let pfn = match self.try_alloc(order) {
            Some(pfn) => pfn,
            None if self.alloc.table_area().is_some() => return Err(self.tables_exhausted()),
            None => return Err(self.out_of_memory(order, self.alloc.table_frame_name())),
        };
        // Fresh slots only: spare ones need not be consecutive.
        for i in 0..1u64 << order {
            self.link_row.push(0);
            self.slot_frames.push(pfn.0 + i);
            let slot = self.nodes.push_zeroed() as u32;
            debug_assert_eq!(slot as usize + 1, self.slot_frames.len());
            self.slots.insert(pfn.0 + i, slot);
        }
        self.table_frames += 1 << order;
        Ok(pfn)
    }

    /// Storage slot of frame `pfn` (0 = none).
    #[inline]
    fn slot(&self, pfn: u64) -> usize {
        self.slots.get(&pfn).copied().unwrap_or(0) as usize
    }

    /// Record that the entry at `entry_addr` (in a table frame) points at table
    /// frame `child`, for [`PhysMem::entry_link`]. Call after writing a table pointer.
    pub fn link(&mut self, entry_addr: u64, child: Pfn) {
        let parent = self.slot(entry_addr >> BASE_SHIFT) as u32;
        let child_slot = self.slot(child.0) as u32;
        self.set_link(parent, entry_addr >> 3, child_slot);
    }

    /// Read entry `index` of the table node in host `slot`. The walker's hot
    /// path: no lookups.
    #[inline]
    pub fn read_entry(&self, slot: u32, index: u64) -> u64 {
        self.nodes.node(slot as usize)[(index as usize) & (CHUNK - 1)]
    }

    /// Host slot of the table frame that entry `index` of the node in `slot`
    /// links to (0 if none). Separate from [`Self::read_entry`] because leaf
    /// entries never need it, and the link rows of leaf nodes are megabytes
    /// touched at random: reading them on every walk costs a host cache miss.
    #[inline]
    pub fn entry_link(&self, slot: u32, index: u64) -> u32 {
        self.links[self.link_row[slot as usize] as usize * CHUNK + ((index as usize) & (CHUNK - 1))]
    }

    /// Write entry `index` of the table node in host `slot` (not the
    /// sentinel 0), as [`Self::write_u64`] would at its address (the same
    /// table-epoch rule), without looking the frame's slot up.
    #[inline]
    pub fn write_entry(&mut self, slot: u32, index: u64, value: u64) {
        self.swap_entry(slot, index, value);
    }

    /// [`Self::write_entry`], returning the word it replaced (0 for the sentinel).
    #[inline]
    fn swap_entry(&mut self, slot: u32, index: u64, value: u64) -> u64 {
        debug_assert!(slot != 0, "write to the sentinel node");
        if slot == 0 {
            return 0;
        }
        let word = &mut self.nodes.node_mut(slot as usize)[(index as usize) & (CHUNK - 1)];
        let old = *word;
        if old != 0 && old != value {
            self.table_epoch += 1;
        }
        *word = value;
        old
    }

    /// Write word `index` of the table node in host `slot` and its host link
    /// (`child_slot`: the slot of the table node the entry points at, 0 for
    /// a leaf or a non-present entry) in one operation, so a page-table
    /// format cannot leave the walker's links out of step with the bits.
    #[inline]
    pub fn write_table_entry(&mut self, slot: u32, index: u64, value: u64, child_slot: u32) {
        let old = self.swap_entry(slot, index, value);
        // An empty entry had no link: writing a leaf there (a first touch)
        // reads no link memory at all.
        if old != 0 || child_slot != 0 {
            self.set_link(slot, index, child_slot);
        }
    }

    /// Record that entry `index` of the node in `slot` points at the table
    /// node in `child_slot` (see [`Self::link`]).
    #[inline]
    pub fn set_link(&mut self, slot: u32, index: u64, child_slot: u32) {
        if slot == 0 {
            return;
        }
        let mut row = self.link_row[slot as usize] as usize;
        if row == 0 {
            if child_slot == 0 {
                return;
            }
            row = self.links.len() / CHUNK;
            self.links.resize(self.links.len() + CHUNK, 0);
            self.link_row[slot as usize] = row as u32;
        }
        self.links[row * CHUNK + ((index as usize) & (CHUNK - 1))] = child_slot;
    }

    /// See the `table_epoch` field: equal epochs mean no page-table path
    /// changed in between, except by accessed and dirty bits being set.
    #[inline]
    pub fn table_epoch(&self) -> u64 {
        self.table_epoch
    }

    /// Write entry `index` of the table node in host `slot` (not the sentinel
    /// 0). For the walker's accessed and dirty bits only: it does not bump
    /// the table epoch.
    #[inline]
    pub fn write_linked(&mut self, slot: u32, index: u64, value: u64) {
        if slot != 0 {
            self.nodes.node_mut(slot as usize)[(index as usize) & (CHUNK - 1)] = value;
        }
    }

    /// The table frame stored in host `slot` (not the sentinel 0).
    #[inline]
    pub fn table_frame_of(&self, slot: u32) -> Pfn {
        Pfn(self.slot_frames[slot as usize])
    }

    /// Host storage slot of table frame `pfn` (0 if it is not a table frame).
    /// Slots are stable while the frame holds a table; used for prefetch hints.
    #[inline]
    pub fn table_slot(&self, pfn: u64) -> u32 {
        self.slot(pfn) as u32
    }

    /// Ask the host CPU to bring entry `index` of the table node in `slot` into
    /// its caches. A performance hint only: it never changes any state.
    #[inline]
    pub fn prefetch_entry(&self, slot: u32, index: u64) {
        if slot != 0 {
            self.nodes.prefetch(slot as usize, index as usize);
        }
    }

    /// Whether frame `pfn` has backing storage (is a page-table frame).
    #[inline]
    pub fn is_table_frame(&self, pfn: Pfn) -> bool {
        self.slot(pfn.0) != 0
    }

    /// Read the 8-byte word at physical address `paddr` (8-byte aligned). Frames without
    /// backing storage (data frames) read as 0.
    #[inline]
    pub fn read_u64(&self, paddr: u64) -> u64 {
        debug_assert!(paddr & 7 == 0, "unaligned read at {paddr:#x}");
        self.nodes.node(self.slot(paddr >> BASE_SHIFT))[((paddr >> 3) as usize) & (CHUNK - 1)]
    }

    /// Write the 8-byte word at `paddr`; `paddr` must lie in a table frame.
    #[inline]
    pub fn write_u64(&mut self, paddr: u64, value: u64) {
        debug_assert!(paddr & 7 == 0, "unaligned write at {paddr:#x}");
        let slot = self.slot(paddr >> BASE_SHIFT);
        debug_assert!(slot != 0, "write to {paddr:#x}, which is not in a page-table frame");
        self.write_entry(slot as u32, (paddr >> 3) & (CHUNK as u64 - 1), value);
    }

    /// Set `bits` in the word at `paddr` (in a table frame). For accessed and
    /// dirty bits only, like [`Self::write_linked`]: it does not bump the
    /// table epoch.
    #[inline]
    pub fn set_entry_bits(&mut self, paddr: u64, bits: u64) {
        let slot = self.slot(paddr >> BASE_SHIFT);
        debug_assert!(slot != 0, "write to {paddr:#x}, which is not in a page-table frame");
        if slot != 0 {
            self.nodes.node_mut(slot)[((paddr >> 3) as usize) & (CHUNK - 1)] |= bits;
        }
    }

    /// Stats under `physmem.*` (caller adds the prefix).
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let free = self.alloc.free_frames();
        PhysMemStats {
            capacity_frames: self.capacity_frames,
            free_frames: free,
            allocated_frames: self.capacity_frames - free - self.pinned_frames - self.retired_frames(),
            table_frames: self.table_frames,
            pinned_frames: self.pinned_frames,
        }
        .visit(v);
        if let Some(r) = &self.retired {
            v.gauge("retired_frames", r.0.count(), "frames", "frames retired by the fault map (physmem.retired), never allocated");
            r.1.visit(&mut Prefixed::new("retired", v));
        }
        if let Some(m) = &self.slices {
            m.stats().visit(&mut Prefixed::new("slices", v));
        }
        let prefix = format!("allocator.{}", self.alloc.name());
        self.alloc.visit_stats(&mut Prefixed::new(&prefix, v));
    }
}

/// Take the B-blocks `bitmap` of the slice at `base` out of the allocator,
/// all or none.
fn take_blocks(alloc: &mut AnyAllocator, base: u64, bitmap: u64, block_order: u32) -> bool {
    let mut rest = bitmap;
    while rest != 0 {
        let k = rest.trailing_zeros() as u64;
        if !alloc.reserve_block(Pfn(base + (k << block_order)), block_order) {
            give_blocks(alloc, base, bitmap & !rest, block_order);
            return false;
        }
        rest &= rest - 1;
    }
    true
}

/// Return the B-blocks `bitmap` of the slice at `base` to the allocator.
fn give_blocks(alloc: &mut AnyAllocator, base: u64, bitmap: u64, block_order: u32) {
    let mut rest = bitmap;
    while rest != 0 {
        alloc.free(Pfn(base + ((rest.trailing_zeros() as u64) << block_order)), block_order);
        rest &= rest - 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::spec::ByteSize;
    use crate::registry::MechanismSpec;
    use crate::stats::Collector;

    fn spec(capacity: u64, fragmentation: f64) -> PhysMemSpec {
        PhysMemSpec {
            capacity: ByteSize(capacity),
            allocator: MechanismSpec { kind: "buddy".into(), params: toml::Table::new() },
            page_size: MechanismSpec { kind: "base_only".into(), params: toml::Table::new() },
            fragmentation,
            fragmentation_occupancy: None,
            retired: MechanismSpec { kind: "none".into(), params: toml::Table::new() },
        }
    }

    fn stats(m: &PhysMem) -> std::collections::BTreeMap<String, u64> {
        let mut c = Collector::default();
        m.visit(&mut c);
        c.stats.counters
    }

    #[test]
    fn bad_capacity_and_fragmentation_name_their_keys() {
        for cap in [0, 1 << 20, (2 << 20) + 100, 8 << 40] {
            let e = PhysMem::build(&spec(cap, 0.0), 1).unwrap_err();
            assert!(matches!(&e, Error::Config { path, .. } if path == "physmem.capacity"), "{e}");
        }
        for f in [-0.1, 1.5, f64::NAN] {
            let e = PhysMem::build(&spec(4 << 20, f), 1).unwrap_err();
            assert!(matches!(&e, Error::Config { path, .. } if path == "physmem.fragmentation"), "{e}");
        }
        assert!(PhysMem::build(&spec((2 << 20) + 4096, 1.0), 1).is_ok());
    }

    #[test]
    fn table_frames_read_back_what_was_written_and_data_frames_read_zero() {
        let mut m = PhysMem::build(&spec(64 << 20, 0.0), 1).unwrap();
        let data = m.alloc(0, "data").unwrap();
        let t = m.alloc_table_frame().unwrap();
        assert!(m.is_table_frame(t) && !m.is_table_frame(data));
        for i in 0..512 {
            assert_eq!(m.read_u64(t.addr() + i * 8), 0);
        }
        m.write_u64(t.addr() + 8 * 7, 0xdead_beef);
        m.write_u64(t.addr() + 8 * 511, u64::MAX);
        assert_eq!(m.read_u64(t.addr() + 8 * 7), 0xdead_beef);
        assert_eq!(m.read_u64(t.addr() + 8 * 511), u64::MAX);
        assert_eq!(m.read_u64(t.addr()), 0);
        assert_eq!(m.read_u64(data.addr() + 8 * 7), 0);
        assert_eq!(m.read_u64((m.capacity_frames() + 5) << 12), 0, "beyond capacity reads 0");
        assert_eq!(m.table_frames(), 1);
    }

    #[test]
    fn freed_table_frame_comes_back_zeroed() {
        let mut m = PhysMem::build(&spec(4 << 20, 0.0), 1).unwrap();
        let t = m.alloc_table_frame().unwrap();
        m.write_u64(t.addr() + 16, 42);
        m.free(t, 0);
        assert_eq!(m.table_frames(), 0);
        assert_eq!(m.read_u64(t.addr() + 16), 0);
        let t2 = m.alloc_table_frame().unwrap();
        assert_eq!(t2, t, "lowest frame is reused");
        assert_eq!(m.read_u64(t2.addr() + 16), 0);
        assert_eq!(m.table_frames(), 1);
    }

    #[test]
    fn many_table_frames_keep_separate_contents() {
        let mut m = PhysMem::build(&spec(16 << 20, 0.0), 3).unwrap();
        let frames: Vec<Pfn> = (0..2000).map(|_| m.alloc_table_frame().unwrap()).collect();
        for (i, f) in frames.iter().enumerate() {
            m.write_u64(f.addr() + 8 * (i as u64 % 512), i as u64 + 1);
        }
        for (i, f) in frames.iter().enumerate() {
            assert_eq!(m.read_u64(f.addr() + 8 * (i as u64 % 512)), i as u64 + 1);
        }
    }

    #[test]
    fn out_of_memory_is_an_error_naming_the_request() {
        let mut m = PhysMem::build(&spec(2 << 20, 0.0), 1).unwrap();
        assert!(m.alloc(9, "data page").is_ok());
        assert_eq!(m.try_alloc(0), None);
        match m.alloc(0, "data page") {
            Err(Error::OutOfMemory { what, requested_bytes, free_bytes, capacity_bytes }) => {
                assert_eq!(what, "data page");
                assert_eq!(requested_bytes, 4096);
                assert_eq!(free_bytes, 0);
                assert_eq!(capacity_bytes, 2 << 20);
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        assert!(matches!(m.alloc_table_frame(), Err(Error::OutOfMemory { .. })));
    }

    #[test]
    fn full_fragmentation_leaves_no_2m_block() {
        let mut m = PhysMem::build(&spec(64 << 20, 1.0), 7).unwrap();
        assert_eq!(m.pinned_frames(), 32);
        assert_eq!(m.free_frames(), 32 * 511);
        assert_eq!(m.try_alloc(9), None);
        assert!(m.allocator().largest_free_order().unwrap() < 9);
        m.allocator().check_invariants().unwrap();
    }

    #[test]
    fn fragmentation_pins_the_rounded_share_of_blocks_deterministically() {
        let cap = (100u64 << 21) + (5 << 12); // 100 whole 2 MiB blocks plus a partial one
        let a = PhysMem::build(&spec(cap, 0.255), 11).unwrap();
        assert_eq!(a.pinned_frames(), 26);
        let mut a2 = a.clone();
        let mut b = PhysMem::build(&spec(cap, 0.255), 11).unwrap();
        // Same seed: same free 2 MiB blocks, in the same order.
        let take = |m: &mut PhysMem| std::iter::from_fn(|| m.try_alloc(9)).collect::<Vec<_>>();
        let blocks_a = take(&mut a2);
        assert_eq!(blocks_a, take(&mut b));
        assert_eq!(blocks_a.len(), 74);
        let mut c = PhysMem::build(&spec(cap, 0.255), 12).unwrap();
        assert_ne!(blocks_a, take(&mut c), "another seed pins other blocks");
    }

    #[test]
    fn stats_report_occupancy_and_buddy_counters() {
        let mut m = PhysMem::build(&spec(4 << 20, 0.5), 1).unwrap();
        m.alloc_table_frame().unwrap();
        m.alloc(0, "data").unwrap();
        let s = stats(&m);
        assert_eq!(s["capacity_frames"], 1024);
        assert_eq!(s["pinned_frames"], 1);
        assert_eq!(s["table_frames"], 1);
        assert_eq!(s["allocated_frames"], 2);
        assert_eq!(s["free_frames"], 1024 - 3);
        assert!(s["allocator.buddy.splits"] > 0);
        assert!(s.contains_key("allocator.buddy.merges"));
    }
}

/// Frame → data page, dense: one word per frame, in chunks made on first
/// use. A hash map cost a quarter of every first-touch fault; a flat array
/// over all of memory would reserve host memory in proportion to simulated
/// memory (16 GiB of it for 4 TiB) whether or not it is ever touched.
///
/// A page is packed into its frame's word ([`pack`]): a first touch writes
/// 8 bytes into memory the host hands out zeroed, rather than 16 bytes
/// into a chunk copied in. Pages whose number needs more than 45 bits (no
/// 57-bit address space has them) go to a small map beside it.
#[derive(Clone, Debug)]
struct ReverseMap {
    chunks: Vec<Option<Box<[u64]>>>,
    wide: FxHashMap<u64, PageRequest>,
    len: u64,
}

const REVERSE_CHUNK: usize = 512;
/// A frame's word: 0 for none, else `OWNED | asid << 47 | size << 45 | vpn`.
const OWNED: u64 = 1 << 63;
/// The word of a frame whose page is in `wide`. No packed page has it: a
/// 1 GiB page's number (size index 3) is a multiple of 2^18, not all ones.
const WIDE: u64 = u64::MAX;
const VPN_BITS: u32 = 45;

/// `req` in one word, or None if its page number does not fit.
#[inline]
fn pack(req: &PageRequest) -> Option<u64> {
    (req.vpn >> VPN_BITS == 0).then(|| OWNED | (req.asid as u64) << 47 | (req.size.index() as u64) << VPN_BITS | req.vpn)
}

#[inline]
fn unpack(w: u64) -> PageRequest {
    PageRequest {
        asid: ((w >> 47) & 0xffff) as crate::addr::Asid,
        vpn: w & ((1 << VPN_BITS) - 1),
        size: crate::addr::PageSize::ALL[((w >> VPN_BITS) & 3) as usize],
    }
}

impl ReverseMap {
    fn new(capacity_frames: u64) -> ReverseMap {
        ReverseMap { chunks: vec![None; capacity_frames.div_ceil(REVERSE_CHUNK as u64) as usize], wide: FxHashMap::default(), len: 0 }
    }

    fn split(pfn: u64) -> (usize, usize) {
        ((pfn / REVERSE_CHUNK as u64) as usize, (pfn % REVERSE_CHUNK as u64) as usize)
    }

    #[inline]
    fn insert(&mut self, pfn: u64, req: PageRequest) {
        let (c, i) = Self::split(pfn);
        let chunk = self.chunks[c].get_or_insert_with(|| vec![0u64; REVERSE_CHUNK].into_boxed_slice());
        debug_assert!(chunk[i] == 0, "frame {pfn:#x} handed out twice");
        if chunk[i] == 0 {
            self.len += 1;
        }
        chunk[i] = match pack(&req) {
            Some(w) => w,
            None => {
                self.wide.insert(pfn, req);
                WIDE
            }
        };
    }

    fn get(&self, pfn: u64) -> Option<PageRequest> {
        let (c, i) = Self::split(pfn);
        let w = self.chunks.get(c)?.as_ref()?[i];
        match w {
            0 => None,
            WIDE => self.wide.get(&pfn).copied(),
            w => Some(unpack(w)),
        }
    }

    fn remove(&mut self, pfn: u64) -> Option<PageRequest> {
        let req = self.get(pfn)?;
        let (c, i) = Self::split(pfn);
        if let Some(chunk) = self.chunks[c].as_mut() {
            if chunk[i] == WIDE {
                self.wide.remove(&pfn);
            }
            chunk[i] = 0;
        }
        self.len -= 1;
        Some(req)
    }

    fn len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod reverse_map_tests {
    use super::*;
    use crate::addr::PageSize;

    #[test]
    fn pages_come_back_as_they_went_in_packed_or_wide() {
        let mut m = ReverseMap::new(1 << 20);
        let pages = [
            (5u64, PageRequest { asid: 0, vpn: 7, size: PageSize::Size4K }),
            (512, PageRequest { asid: u16::MAX, vpn: (1 << 45) - 1, size: PageSize::Size4K }),
            (1024, PageRequest { asid: 3, vpn: 1 << 18, size: PageSize::Size1G }),
            (2048, PageRequest { asid: 9, vpn: 0x20, size: PageSize::Size64K }),
            // A page number beyond 45 bits goes to the side map.
            (4096, PageRequest { asid: 1, vpn: 1 << 50, size: PageSize::Size2M }),
        ];
        for (pfn, req) in pages {
            m.insert(pfn, req);
        }
        assert_eq!(m.len(), 5);
        for (pfn, req) in pages {
            assert_eq!(m.get(pfn), Some(req));
        }
        assert_eq!(m.get(6), None);
        assert_eq!(m.get(1 << 19), None, "a chunk never made");
        assert_eq!(m.remove(4096), Some(pages[4].1));
        assert_eq!(m.remove(5), Some(pages[0].1));
        assert_eq!((m.get(4096), m.get(5), m.len(), m.wide.len()), (None, None, 3, 0));
        assert_eq!(m.remove(5), None);
    }
}
