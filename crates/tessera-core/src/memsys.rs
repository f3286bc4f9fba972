//! The memory system every processor model shares: page tables of one
//! format, physical memory and the OS that manages it, the page walker with
//! its paging-structure caches, and the data-cache hierarchy.
//!
//! ## Contract
//! Each call answers "what happened, and how long did it take" and never
//! assumes its caller waits: a TLB miss returns the translation and the
//! cycles of its walks; a data reference returns the level that served it
//! and its latency. The CPU machine ([`crate::machine`]) adds the latencies
//! up (its interval model); a GPU machine schedules the same answers on a
//! clock with its own concurrency limits. Nothing here knows the current
//! instruction.
//!
//! The OS may change mappings while it handles a fault (eviction); the
//! client's TLBs hear of it through [`Shootdown`].

use crate::addr::{Asid, PageSize};
use crate::cache::{CacheHierarchy, Served, Source};
use crate::config::Spec;
use crate::error::Result;
use crate::os::Os;
use crate::pagetable::PageTable;
use crate::physmem::PhysMem;
use crate::pagetable::format::PageTableFormat;
use crate::registry::{AnyFormat, Member};
use crate::stats::{Prefixed, StatVisitor};
use crate::tlb::Neighbours;
use crate::walker::{WalkCursor, WalkResult, WalkStart, Walker};

/// A translation found by a walk: the first frame and size of the page, its
/// dirty state, and the host slot of the node holding the leaf (its first
/// frame) with the radix level the walk ended at (neighbour fills read the
/// PTEs around a level-1 leaf; a leaf above level 1 has no PTE neighbours,
/// but a GT-PDE's 4 KiB translation has the others that entry maps).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Translation {
    pub pfn_base: u64,
    pub size: PageSize,
    pub dirty: bool,
    pub node: u32,
    pub level: u32,
}

impl Translation {
    /// The host slot of the level-1 node holding this 4 KiB translation's
    /// PTE, whose neighbours map the neighbouring pages; None for a large
    /// page or a translation that ended above level 1.
    #[inline]
    pub fn pte_node(&self) -> Option<u32> {
        (self.size == PageSize::Size4K && self.level == 1).then_some(self.node)
    }

    /// The node (host slot of its first frame) and level of the leaf that
    /// gave this 4 KiB translation; None for a larger page.
    #[inline]
    pub fn leaf_4k(&self) -> Option<(u32, u32)> {
        (self.size == PageSize::Size4K).then_some((self.node, self.level))
    }
}

/// What a client's translation caches do when the OS removes a mapping.
pub trait Shootdown {
    /// Drop every cached translation of the page at `va` of `size` in
    /// `asid`; returns the entries removed.
    fn shoot_down(&mut self, va: u64, size: PageSize, asid: Asid) -> u64;
}

pub struct MemorySystem {
    pub(crate) pt: PageTable,
    pub(crate) mem: PhysMem,
    pub(crate) os: Os,
    pub(crate) walker: Walker,
    pub(crate) caches: CacheHierarchy,
}

impl MemorySystem {
    pub fn build(spec: &Spec, seed: u64) -> Result<MemorySystem> {
        let caches = CacheHierarchy::build(&spec.cache, crate::rng::sub_seed(seed, "cache"))?;
        let names: Vec<&'static str> = caches.level_names().to_vec();
        let mut mem = PhysMem::build(&spec.physmem, seed)?;
        // A format storing CPFNs decodes them with the pool's hash functions.
        let hasher = match mem.allocator() {
            crate::registry::AnyAllocator::Iceberg(ice) => Some(ice.hasher().clone()),
            _ => None,
        };
        let ctx = crate::pagetable::x86_radix::FormatCtx { levels: spec.pagetable.levels, hasher };
        let format = AnyFormat::build(&spec.pagetable.format, &ctx, "pagetable.format")?;
        let walker = Walker::build(spec, &format, &names, seed)?;
        let os = Os::build(spec, &format, &mut mem, seed)?;
        Ok(MemorySystem { pt: PageTable::new(format), mem, os, walker, caches })
    }

    /// A translation that missed every TLB: walk the table, and on a fault
    /// let the OS map the page and walk again. Returns the translation and
    /// the cycles of every walk it took plus what the OS charged (swap
    /// transfers and shootdowns under memory pressure; a first-touch fault
    /// itself is free, as it always was).
    ///
    /// `F` is the table's format, which the caller chose once (see
    /// [`crate::registry::Member`]): a miss path holds one format's walk
    /// loop, not every format's laid out around each other. `HINTED`: the
    /// walker takes walk shortcuts ([`Walker::shortcuts`]), so a walk may be
    /// one reference long ([`Walker::walk_hinted`]); the caller chose that
    /// once too, and a machine without shortcuts keeps its walk inline.
    #[inline(always)]
    pub fn translate_miss<F: PageTableFormat + Member<AnyFormat>, const HINTED: bool>(
        &mut self,
        va: u64,
        asid: Asid,
        write: bool,
        instr: bool,
        tlbs: &mut impl Shootdown,
    ) -> Result<(Translation, u64)> {
        let mut cycles = 0;
        for _attempt in 0..2 {
            let (res, c) = if HINTED {
                // Most walks of a TLB-only machine are one reference long, and
                // are done here; any other out of line, so this frame stays small.
                let format = F::of(self.pt.format()).expect("a miss path chosen for another page-table format");
                match self.walker.walk_hinted(format, va, asid, write, instr, &mut self.mem, &mut self.caches) {
                    Some(walked) => walked,
                    None => self.walk_once::<F>(va, asid, write, instr)?,
                }
            } else {
                let (root, slot) = self.pt.root_linked(&mut self.mem, asid)?;
                let format = F::of(self.pt.format()).expect("a miss path chosen for another page-table format");
                self.walker.walk(format, va, asid, (root.0, slot), write, instr, &mut self.mem, &mut self.caches)
            };
            cycles += c;
            match res {
                WalkResult::Translated { pfn_base, size, dirty, node, level } => {
                    return Ok((Translation { pfn_base, size, dirty, node, level }, cycles));
                }
                WalkResult::Fault { .. } => cycles += self.service_fault(va, asid, tlbs)?,
            }
        }
        unreachable!("a page mapped by the fault handler is found by the retried walk")
    }

    /// One walk of a hinted [`Self::translate_miss`] that [`Walker::walk_hinted`] does not take.
    #[inline(never)]
    fn walk_once<F: PageTableFormat + Member<AnyFormat>>(&mut self, va: u64, asid: Asid, write: bool, instr: bool) -> Result<(WalkResult, u64)> {
        let (root, slot) = self.pt.root_linked(&mut self.mem, asid)?;
        let format = F::of(self.pt.format()).expect("a miss path chosen for another page-table format");
        Ok(self.walker.walk(format, va, asid, (root.0, slot), write, instr, &mut self.mem, &mut self.caches))
    }

    /// A walk for `va` found it not present: the OS maps the page (or
    /// reads it back from swap). Returns what the OS charged. Separate from
    /// the walk, so a machine decides when the faulting access may go on
    /// (the CPU at once; the GPU when its fault path says).
    #[cold]
    pub fn service_fault(&mut self, va: u64, asid: Asid, tlbs: &mut impl Shootdown) -> Result<u64> {
        self.os.fault(va, asid, &mut self.pt, &mut self.mem, &mut self.caches, &mut self.walker, tlbs)
    }

    /// The 4 KiB page at `va` of `asid` became usable: its transfer is
    /// done (or it was mapped before the run). An in-place coalescer
    /// counts it; true when that coalesced its 2 MiB region.
    pub fn page_usable(&mut self, va: u64, asid: Asid) -> bool {
        self.os.page_usable(va, asid, &mut self.pt, &mut self.mem, &mut self.walker)
    }

    /// Splinter the coalesced 2 MiB region holding `va` of `asid` and shoot
    /// its large translation down from `tlbs`; the cycles charged (0 when
    /// it was not coalesced).
    pub fn splinter(&mut self, va: u64, asid: Asid, tlbs: &mut impl Shootdown) -> u64 {
        self.os.splinter(va, asid, &mut self.pt, &mut self.mem, &mut self.walker, tlbs)
    }

    /// Application `asid` frees the pages at `vas` (see [`Os::free`]); the
    /// cycles of splinters the caller charges.
    pub fn free(&mut self, vas: &[u64], asid: Asid, tlbs: &mut impl Shootdown) -> Result<u64> {
        self.os.free(vas, asid, &mut self.pt, &mut self.mem, &mut self.caches, &mut self.walker, tlbs)
    }

    /// Evict the OS's eviction victim now; the cycles the OS charged, or
    /// `None` when nothing is resident or there is no swap device.
    pub fn evict_victim(&mut self, tlbs: &mut impl Shootdown) -> Result<Option<u64>> {
        self.os.evict_victim(&mut self.pt, &mut self.mem, &mut self.caches, &mut self.walker, tlbs)
    }

    /// Frames of the data pages mapped (with a swap device; see [`Os::resident_frames`]).
    pub fn resident_frames(&self) -> Option<u64> {
        self.os.resident_frames()
    }

    /// Log every page evicted from now on, for [`Self::take_evicted`]; a
    /// victim goes with the rest of its virtual unit of `unit_bytes` (see
    /// [`Os::log_evictions`]).
    pub fn log_evictions(&mut self, unit_bytes: u64) {
        self.os.log_evictions(unit_bytes);
    }

    /// The pages evicted since the last call, appended to `out`.
    pub fn take_evicted(&mut self, out: &mut Vec<crate::os::Evicted>) {
        self.os.take_evicted(out);
    }

    /// Cycles of compaction since the last call: the machine stalls for them.
    pub fn take_stall(&mut self) -> u64 {
        self.os.take_stall()
    }

    /// The size of the page mapped at `va` of `asid` as it was mapped: a
    /// coalesced region's base page, not the region.
    pub fn mapped_page(&self, va: u64, asid: Asid) -> Option<PageSize> {
        let leaf = self.pt.leaf(&self.mem, asid, va)?;
        PageSize::from_shift(self.pt.format().level_shift(leaf.level))
    }


    /// Whether pages are coalesced in place (`physmem.page_size = in_place`).
    pub fn coalesces(&self) -> bool {
        self.os.coalesces()
    }

    /// Application `asid` allocated `va .. va + bytes` before touching it
    /// (the allocator may place its pages by that).
    pub fn hear_allocation(&mut self, asid: Asid, va: u64, bytes: u64) {
        self.mem.hear_allocation(asid, va, bytes);
    }

    /// Begin a walk for `va` in `asid`'s table of format `F`: a cursor at
    /// its first reference, or the walk already over (see
    /// [`Walker::start`]). For a machine that serves each reference itself.
    pub fn walk_start<F: PageTableFormat + Member<AnyFormat>>(&mut self, va: u64, asid: Asid, write: bool) -> Result<WalkStart> {
        let (root, slot) = self.pt.root_linked(&mut self.mem, asid)?;
        let format = F::of(self.pt.format()).expect("a walk path chosen for another page-table format");
        Ok(self.walker.start(format, va, asid, (root.0, slot), write, false, &self.mem))
    }

    /// The physical address walk `c` reads next.
    #[inline]
    pub fn walk_paddr<F: PageTableFormat + Member<AnyFormat>>(&self, c: &WalkCursor) -> u64 {
        c.next_paddr(F::of(self.pt.format()).expect("a walk path chosen for another page-table format"))
    }

    /// Walk `c`'s reference was served in `ref_cycles`: read it and move
    /// on; returns what the walk found once it is over (then counted).
    #[inline]
    pub fn walk_advance<F: PageTableFormat + Member<AnyFormat>>(&mut self, mut c: WalkCursor, ref_cycles: u64) -> (WalkCursor, Option<(WalkResult, u64)>) {
        let format = F::of(self.pt.format()).expect("a walk path chosen for another page-table format");
        match self.walker.advance(format, &mut c, &mut self.mem, ref_cycles) {
            Some(r) => (c, Some(self.walker.finish(&c, r))),
            None => (c, None),
        }
    }

    /// The translation of `va` if mapped, read on the host at no cost and
    /// changing nothing (the ideal TLB, and pages in flight).
    pub fn peek(&self, va: u64, asid: Asid) -> Option<(u64, PageSize)> {
        self.pt.leaf(&self.mem, asid, va).map(|l| (l.pfn_base, l.size))
    }

    /// The same memory system with every reference of every walk made
    /// (no host shortcuts) and PSC fills that look for an entry another
    /// walk in flight filled meanwhile ([`Walker::interleaved`]): for a
    /// machine that serves each reference itself and interleaves walks.
    pub(crate) fn with_every_walk_reference(mut self) -> MemorySystem {
        self.walker = self.walker.interleaved();
        self
    }

    /// A data reference at physical address `paddr`.
    #[inline(always)]
    pub fn access(&mut self, paddr: u64, write: bool) -> Served {
        self.caches.access(paddr, write, 0, Source::Data)
    }

    /// Count `n` data references that an L1 hit served without looking
    /// them up (a client's bulk path on a machine without caches).
    #[inline]
    pub fn count_data_repeats(&mut self, n: u64) {
        self.caches.count_dram(Source::Data, n);
    }

    /// Latency of a reference served at cache level `level`.
    #[inline]
    pub fn latency_of(&self, level: usize) -> u32 {
        self.caches.latency_of(level)
    }

    pub fn num_cache_levels(&self) -> usize {
        self.caches.num_levels()
    }

    pub fn cache_latency(&self, level: usize) -> u32 {
        self.caches.latency_of(level)
    }

    /// A store to a page whose cached translation is clean: set the leaf's
    /// dirty bit (hardware re-walks with a locked read-modify-write; modelled
    /// as a direct update of the leaf).
    #[cold]
    pub fn set_dirty(&mut self, va: u64, asid: Asid) {
        use crate::pagetable::format::PageTableFormat;
        if let Some(leaf) = self.pt.leaf(&self.mem, asid, va) {
            let format = self.pt.format();
            if !format.is_dirty(leaf.raw) {
                // Only the dirty bit changes here: the accessed bit stays as it was.
                let new = format.used(leaf.raw, true, true);
                let new = if format.is_accessed(leaf.raw) { new } else { format.clear_accessed(new) };
                self.mem.write_linked(leaf.slot, leaf.word, new);
                self.walker.stats.dirty_updates += 1;
            }
        }
        self.os.on_dirty(va, asid);
    }

    /// The 4 KiB leaves of the aligned run of `n` pages around `va` of
    /// `asid`, read from the leaf node in host slot `node` that a walk just
    /// used. Read on the host, at no cost: what a coalescing TLB takes from
    /// the walked line (or, as an upper bound, from the whole group); with
    /// a table-of-contents format, the walked ToC (several ToCs of the node
    /// when `n` exceeds the format's arity). A run is cut to the leaf
    /// node's entries.
    pub fn neighbours(&self, va: u64, asid: Asid, node: u32, n: u32, out: &mut Neighbours) {
        self.leaves_around(va, asid, node, 1, n, out);
        out.whole = false;
    }

    /// The 4 KiB translations of the aligned run of `n` pages around `va` of
    /// `asid` whose walk ended at a leaf at `level` above 1 (a GT-PDE), in
    /// the node whose first frame is host slot `node`. Each page is decoded
    /// at that level from its own entry (`format.word(va_i, level)`): the
    /// pages of the walked entry each to its own frame, those of another
    /// entry of the node from that one, and a page whose entry is not a
    /// 4 KiB leaf is not present. Read on the host, at no cost: the walker
    /// holds the entry it ended at (a GT-PDE's 16 bytes describe its whole
    /// superpage), so `out.whole` is set. A run is cut to the node's range.
    pub fn block_neighbours(&self, va: u64, asid: Asid, node: u32, level: u32, n: u32, out: &mut Neighbours) {
        self.leaves_around(va, asid, node, level, n, out);
        out.whole = true;
    }

    /// The leaves at `level` of the aligned run of `n` pages around `va`,
    /// each read from its own entry of the node whose first frame is host
    /// slot `node` (not present where that entry is no leaf, or above level
    /// 1 no 4 KiB leaf); the run is cut to the node's range.
    #[inline]
    fn leaves_around(&self, va: u64, asid: Asid, node: u32, level: u32, n: u32, out: &mut Neighbours) {
        use crate::pagetable::format::{FormatExt, PageTableFormat, Step};
        let format = self.pt.format();
        let per_node = 1u64 << (format.node_shift(level) - crate::addr::BASE_SHIFT).min(63);
        let n = (n as u64).min(per_node).min(crate::tlb::MAX_GROUP as u64);
        let first = (va >> 12) & !(n - 1);
        out.first_vpn = first;
        out.len = n as u32;
        out.dirty = 0;
        for i in 0..n {
            let va_i = (first + i) << 12;
            let (es, w) = format.locate(level, node, format.word(va_i, level));
            let raw = self.mem.read_entry(es, w);
            out.pfn[i as usize] = match format.decode(raw, level, va_i, asid, &|k| self.mem.read_entry(es, w + k as u64)) {
                // Level 1 takes any leaf, as it always has.
                Step::Leaf { pfn_base, size } if level == 1 || size == PageSize::Size4K => {
                    out.dirty |= (format.is_dirty(raw) as u64) << i;
                    pfn_base
                }
                _ => crate::tlb::NOT_PRESENT,
            };
        }
    }

    /// The translation of `va`, read from the page table on the host at no
    /// cost: no walk, no cache reference, no walker counter (a TLB that takes
    /// a page into an entry it holds without walking, such as the mosaic
    /// TLB's sub-page fill). Sets the entries' accessed bits as a walk would,
    /// since the translation is now cached. None if `va` is not mapped.
    pub fn translate_functional(&mut self, va: u64, asid: Asid) -> Option<Translation> {
        use crate::pagetable::format::PageTableFormat;
        let leaf = self.pt.leaf(&self.mem, asid, va)?;
        let format = self.pt.format();
        let used = format.used(leaf.raw, true, false);
        if used != leaf.raw {
            self.mem.write_linked(leaf.slot, leaf.word, used);
        }
        if let Some((slot, word)) = leaf.large {
            let raw = self.mem.read_entry(slot, word);
            let used = format.used(raw, false, false);
            if used != raw {
                self.mem.write_linked(slot, word, used);
            }
        }
        Some(Translation { pfn_base: leaf.pfn_base, size: leaf.size, dirty: format.is_dirty(leaf.raw), node: leaf.node, level: leaf.level })
    }

    /// The neighbours of the 4 KiB page of `va` mapped by the leaf at
    /// `level` of the node in host slot `node` (its first frame): the run of
    /// `n` PTEs around a level-1 leaf ([`Self::neighbours`]), the run of
    /// `gt_n` pages decoded from a leaf above level 1
    /// ([`Self::block_neighbours`]), or none (`out.len = 0`) when `gt_n` is 0.
    pub fn neighbours_of_leaf(&self, va: u64, asid: Asid, (node, level): (u32, u32), n: u32, gt_n: u32, out: &mut Neighbours) {
        if level == 1 {
            self.neighbours(va, asid, node, n, out);
        } else if gt_n > 0 {
            self.block_neighbours(va, asid, node, level, gt_n, out);
        } else {
            out.len = 0;
        }
    }

    /// [`Self::neighbours_of_leaf`] of `va`'s page found by a software walk
    /// (no cost), for a structure that fills without the machine walking;
    /// `out.len = 0` if `va` is not mapped by a 4 KiB page.
    pub fn leaf_neighbours(&self, va: u64, asid: Asid, n: u32, gt_n: u32, out: &mut Neighbours) {
        match self.pt.leaf(&self.mem, asid, va) {
            Some(leaf) if leaf.size == PageSize::Size4K => self.neighbours_of_leaf(va, asid, (leaf.node, leaf.level), n, gt_n, out),
            _ => out.len = 0,
        }
    }

    /// Host-side prefetch of the leaf entry a walk for `va` would read.
    #[inline]
    pub fn prefetch_leaf(&self, va: u64, asid: Asid) {
        self.walker.prefetch_leaf(va, asid, &self.mem);
    }

    /// The OS learns that a translation of the page at frame `pfn_base` was
    /// used (and runs its eviction policy's periodic scan when one is due,
    /// which may shoot translations down).
    #[inline(always)]
    pub fn touched(&mut self, pfn_base: u64, tlbs: &mut impl Shootdown) {
        self.os.touch(pfn_base);
        if self.os.scan_due() {
            self.os.scan(&self.pt, &mut self.mem, tlbs);
        }
    }

    /// [`Self::touched`] for a walk that translated a page of `size` at
    /// frame `pfn_base`. A region the in-place coalescer promoted is 512
    /// base pages to the eviction policy, and its one large TLB entry hides
    /// which of them the accesses used: each of them counts as used, so
    /// that the policy does not take pages of a region in use for pages
    /// that were not.
    #[inline]
    pub fn touched_translation(&mut self, pfn_base: u64, size: PageSize, tlbs: &mut impl Shootdown) {
        if size < PageSize::Size2M || !self.os.coalesces() || self.mem.owner(crate::addr::Pfn(pfn_base)).is_none_or(|r| r.size >= size) {
            return self.touched(pfn_base, tlbs);
        }
        let mut f = pfn_base;
        while f < pfn_base + (1 << size.order()) {
            let page = self.mem.owner(crate::addr::Pfn(f)).map_or(1, |r| 1 << r.size.order());
            self.os.touch(f);
            f += page;
        }
        if self.os.scan_due() {
            self.os.scan(&self.pt, &mut self.mem, tlbs);
        }
    }

    /// Whether the OS wants [`Self::touched`] on every translation.
    #[inline]
    pub fn wants_touches(&self) -> bool {
        self.os.wants_touches()
    }

    /// Stats of every component, under their prefixes.
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        {
            let mut p = Prefixed::new("mmu.psc", v);
            self.walker.visit_pscs(&mut p);
        }
        {
            let mut p = Prefixed::new("walker", v);
            self.walker.visit(&mut p);
        }
        {
            let mut p = Prefixed::new("physmem", v);
            self.mem.visit(&mut p);
        }
        {
            let mut p = Prefixed::new("pagetable", v);
            self.pt.visit(&mut p);
        }
        {
            let mut p = Prefixed::new("cache", v);
            self.caches.visit(&mut p);
        }
        self.os.visit(v);
    }

    pub fn page_table(&self) -> &PageTable {
        &self.pt
    }
    pub fn physmem(&self) -> &PhysMem {
        &self.mem
    }
    pub fn walker(&self) -> &Walker {
        &self.walker
    }
}
