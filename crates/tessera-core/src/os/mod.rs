//! The operating system's memory management: page faults, the page-size
//! policy, and (with a swap device) eviction under memory pressure.
//!
//! ## What it models
//! - A fault on a page never mapped is a minor fault: the page-size policy
//!   picks the largest candidate size whose aligned region is untouched and
//!   for which the allocator has a free block, the allocator is told the
//!   (asid, vpn, size) it places, and the page is mapped.
//! - Without a swap device, running out of frames is an error naming what
//!   could not be placed.
//!
//! Under memory pressure: which resident page to evict ([`eviction`], a
//! family that sees pages only as the first frame of each mapped page and
//! reads accessed bits through [`eviction::AccessedBits`]) and where an
//! evicted page's contents go ([`swap`]).
//!
//! With a swap device, a fault first asks the allocator where the page goes
//! ([`crate::physmem::allocator::Placement`]), handing it the eviction
//! policy's page ages: a free frame is used at once; a page the allocator
//! names to displace is evicted (unmapped, shot down, its lines dropped,
//! written to swap, freed: the same path as any eviction, so swap I/O is
//! counted alike for every policy) and its frame takes the new page; only
//! when the allocator has nothing to offer does the policy's own victim go
//! (with a policy that evicts whole units, `root_chunk`, every resident page
//! of the victim's aligned unit goes, each by the same path; see
//! [`eviction`]).
//! An allocator that places by identity (Iceberg) cannot make room from a
//! policy's global victim, so it needs a policy with page ages (`horizon`);
//! any other is a config error at `os.eviction`.

pub mod cac;
pub mod coalescer;
pub mod compaction;
pub mod eviction;
pub mod swap;

use crate::addr::{Asid, PageSize, Pfn, BASE_SHIFT};
use crate::cache::CacheHierarchy;
use crate::config::Spec;
use crate::error::Result;
use crate::memsys::Shootdown;
use crate::page_size::{PageSizePolicy, Plan, PolicyCtx};
use crate::pagetable::format::PageTableFormat;
use crate::pagetable::PageTable;
use crate::physmem::allocator::{FrameAllocator, PageRequest, Placement};
use crate::physmem::PhysMem;
use crate::registry::{AnyEviction, AnyFormat, AnyPageSizePolicy};
use eviction::{AccessedBits, EvictionCtx, EvictionPolicy};
use swap::{SwapDevice, SwapKey};
use crate::stats::{StatGroup, StatVisitor};
use crate::walker::Walker;

crate::stat_group! {
    /// Counters of an OS with a swap device (reported only then).
    pub struct PressureStats {
        minor_faults: "faults", "faults on pages never mapped or whose swap copy was dropped (first touches)",
        major_faults: "faults", "faults that read the page back from the swap device",
        evictions: "pages", "pages evicted to make room",
        shootdowns: "shootdowns", "TLB shootdowns (one per evicted page)",
        shootdown_cycles: "cycles", "cycles charged for TLB shootdowns (os.shootdown_cycles each)",
        tlb_entries_shot_down: "entries", "TLB entries removed by shootdowns",
        lines_invalidated: "lines", "cache lines of evicted pages dropped from the data caches",
        dirty_lines_written_back: "lines", "dirty cache lines of evicted pages written back with them",
    }
}

crate::stat_group! {
    pub struct OsStats {
        faults: "faults", "page faults handled (first touches and swap-ins)",
        large_fallbacks: "candidates", "larger page-size candidates skipped at a fault (region partly mapped, or no free block)",
    }
}

const PAGE_NAMES: [&str; PageSize::COUNT] = ["pages_4k", "pages_64k", "pages_2m", "pages_1g"];
const PAGE_DESCS: [&str; PageSize::COUNT] =
    ["4 KiB pages mapped", "64 KiB pages mapped", "2 MiB pages mapped", "1 GiB pages mapped"];

/// What an OS with a swap device adds.
#[derive(Clone, Debug)]
struct Pressure {
    eviction: AnyEviction,
    /// The policy has a periodic scan.
    scans: bool,
    swap: SwapDevice,
    shootdown_cycles: u64,
    stats: PressureStats,
    /// Frames of the data pages mapped (page-table nodes not counted), for
    /// a machine that bounds them itself (the GPU's unified memory).
    resident_frames: u64,
    /// The pages evicted, for a machine that follows them (`log_evictions`).
    log: Option<Vec<Evicted>>,
    /// Bytes of the aligned virtual unit a machine's victim is evicted with
    /// (its migration unit; 0: the victim alone).
    virtual_unit: u64,
}

/// A page the OS evicted: (application, first byte, size).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Evicted {
    pub asid: Asid,
    pub va: u64,
    pub size: PageSize,
}

/// The OS of one machine.
#[derive(Clone, Debug)]
pub struct Os {
    /// The page-size policy's plans, in the order to try them.
    plans: Vec<Plan>,
    pressure: Option<Pressure>,
    /// Sizes the page-table format maps (the per-size stats reported).
    sizes: Vec<PageSize>,
    stats: OsStats,
    /// Pages mapped per size (`PageSize::index`).
    pages: [u64; PageSize::COUNT],
    /// Superpages mapped over slices (`os.gt_superpages`, reported with a
    /// slice plan).
    gt_superpages: u64,
    slices: bool,
    /// Direct compaction for 2 MiB faults (`os.compaction`).
    compaction: Option<Box<compaction::Compaction>>,
    /// In-place coalescing (`physmem.page_size = in_place`).
    coalescer: Option<Box<coalescer::Coalescer>>,
    /// Contiguity-aware compaction (`os.cac`).
    cac: Option<Box<cac::Cac>>,
}

impl Os {
    pub fn build(spec: &Spec, format: &AnyFormat, mem: &mut PhysMem, seed: u64) -> Result<Os> {
        let sizes = format.sizes().to_vec();
        let policy = AnyPageSizePolicy::build(&spec.physmem.page_size, &PolicyCtx { sizes: sizes.clone() }, "physmem.page_size")?;
        let capacity_frames = mem.capacity_frames();
        let pressure = match (&spec.os.swap, &spec.os.eviction) {
            (Some(swap), Some(eviction)) => {
                let ctx = EvictionCtx { capacity_frames, seed: crate::rng::sub_seed(seed, "os.eviction") };
                let eviction = AnyEviction::build(eviction, &ctx, "os.eviction")?;
                let alloc = mem.allocator();
                if alloc.needs_ages() && eviction.ages().is_none() {
                    return Err(crate::error::Error::config_allowed(
                        "os.eviction",
                        format!(
                            "the {} allocator may place a page in only a few frames, so under memory pressure it needs an eviction policy that knows page ages; \"{}\" does not",
                            alloc.name(),
                            eviction.name()
                        ),
                        &eviction::with_ages(),
                    ));
                }
                Some(Pressure {
                    scans: eviction.scans(),
                    eviction,
                    swap: SwapDevice::new(swap, spec.timing.frequency_ghz)?,
                    shootdown_cycles: spec.os.shootdown_cycles,
                    stats: PressureStats::default(),
                    resident_frames: 0,
                    log: None,
                    virtual_unit: 0,
                })
            }
            _ => None,
        };
        let mut slices = false;
        for plan in policy.plans() {
            if let Plan::Slice { min_blocks } = *plan {
                let AnyFormat::GtPde(table) = format else {
                    return Err(crate::error::Error::config_allowed("pagetable.format", "slices need the gt_pde table", &["gt_pde"]));
                };
                let mode = table.mode();
                mem.enable_slices(crate::physmem::slices::SliceSpec {
                    block_order: mode.block_shift() - BASE_SHIFT,
                    min_blocks,
                    paired: mode.paired(),
                })?;
                slices = true;
            }
        }
        let plans = policy.plans().to_vec();
        let coalescer = match policy.in_place() {
            Some(_) if !format.large_keeps_node() => {
                return Err(crate::error::Error::config(
                    "pagetable.format",
                    format!(
                        "in_place coalescing needs a format whose large pages keep the node of their base pages ({{ kind = \"radix\", large_reads_next = true }}); \"{}\" does not",
                        format.name()
                    ),
                ));
            }
            Some(spec) => Some(Box::new(coalescer::Coalescer::new(spec, capacity_frames))),
            None => None,
        };
        let compaction = spec.os.compaction.as_ref().map(|c| Box::new(compaction::Compaction::new(c, mem, spec.os.shootdown_cycles)));
        let cac = match &spec.os.cac {
            Some(c) if c.trigger == cac::Trigger::Deallocation && coalescer.is_none() => {
                return Err(crate::error::Error::config_allowed(
                    "os.cac.trigger",
                    "compaction at deallocation acts on coalesced regions, and nothing coalesces without the in-place coalescer (physmem.page_size = \"in_place\")",
                    &["on_demand"],
                ));
            }
            Some(_) if coalescer.as_ref().is_some_and(|c| c.base() != PageSize::Size4K) => {
                return Err(crate::error::Error::config(
                    "os.cac",
                    "compaction moves 4 KiB pages one at a time; with 64 KiB base pages (physmem.page_size.base = \"64k\") it is not built",
                ));
            }
            Some(c) => Some(Box::new(cac::Cac::new(c, mem)?)),
            None => None,
        };
        Ok(Os { plans, pressure, sizes, stats: OsStats::default(), pages: [0; PageSize::COUNT], gt_superpages: 0, slices, compaction, coalescer, cac })
    }

    /// A walk for `va` found no mapping: map the page (reading it back from
    /// swap if it was evicted). Returns the cycles the OS charged: swap
    /// transfers and shootdowns.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    pub fn fault(
        &mut self,
        va: u64,
        asid: Asid,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> Result<u64> {
        self.stats.faults += 1;
        let mut cycles = 0;
        if self.pressure.is_some() {
            // A page evicted earlier comes back at the size it had.
            for &size in self.sizes.iter().rev() {
                let vpn = (va & !(size.bytes() - 1)) >> BASE_SHIFT;
                let key = SwapKey::new(asid, vpn);
                let p = self.pressure.as_mut().expect("checked above");
                if p.swap.copy_frames(key) != Some(1 << size.order()) {
                    continue;
                }
                p.stats.major_faults += 1;
                let req = PageRequest { asid, vpn, size };
                let pfn = self.alloc_evicting(req, pt, mem, caches, walker, tlbs, &mut cycles)?;
                let p = self.pressure.as_mut().expect("checked above");
                cycles += p.swap.read(key).unwrap_or(0);
                pt.map(mem, asid, va, size, pfn)?;
                p.eviction.on_map(pfn.0);
                p.resident_frames += 1 << size.order();
                self.pages[size.index()] += 1;
                return Ok(cycles);
            }
            self.pressure.as_mut().expect("checked above").stats.minor_faults += 1;
        }
        // The plans are the policy's, kept at build: a fault dispatches
        // over no policy, and the loop may borrow `self` mutably in between.
        let n = self.plans.len();
        for k in 0..n {
            let size = match self.plans[k] {
                Plan::Contiguous(size) => size,
                Plan::Slice { .. } => {
                    if self.map_slice(va, asid, pt, mem)? {
                        return Ok(cycles);
                    }
                    self.stats.large_fallbacks += 1;
                    continue;
                }
            };
            let last = k + 1 == n;
            if !last && !pt.region_unmapped(mem, asid, va, size) {
                self.stats.large_fallbacks += 1;
                continue;
            }
            let req = PageRequest { asid, vpn: (va & !(size.bytes() - 1)) >> BASE_SHIFT, size };
            let pfn = if last && self.pressure.is_some() {
                self.alloc_evicting(req, pt, mem, caches, walker, tlbs, &mut cycles)?
            } else {
                match mem.alloc_page(req, false)? {
                    Some(pfn) => pfn,
                    None if last => self.last_resort(req, pt, mem, walker, tlbs)?,
                    None => {
                        let compacted = match self.compaction.as_deref_mut() {
                            Some(c) => c.compact(req, pt, mem, caches, tlbs, &mut cycles)?,
                            None => None,
                        };
                        let Some(pfn) = compacted else {
                            self.stats.large_fallbacks += 1;
                            continue;
                        };
                        pfn
                    }
                }
            };
            pt.map(mem, asid, va, size, pfn)?;
            if let Some(p) = &mut self.pressure {
                p.eviction.on_map(pfn.0);
                p.resident_frames += 1 << size.order();
            }
            self.pages[size.index()] += 1;
            return Ok(cycles);
        }
        unreachable!("the last page-size candidate always maps or errors")
    }

    /// The allocator refused the last plan's page `req`: compact if
    /// configured (CAC) and ask again, then take the allocator's last
    /// resort; out of memory when both fail.
    fn last_resort(&mut self, req: PageRequest, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker, tlbs: &mut impl Shootdown) -> Result<Pfn> {
        if let Some(c) = self.cac.as_deref_mut() {
            let got = match (c.trigger(), self.coalescer.as_deref_mut()) {
                (cac::Trigger::Deallocation, Some(co)) => c.pull_emergency(pt, mem, walker, tlbs, co, |mem| mem.alloc_page(req, false))?,
                (_, co) => c.make_room(pt, mem, tlbs, co, |mem| mem.alloc_page(req, false))?,
            };
            if let Some(pfn) = got {
                return Ok(pfn);
            }
        }
        match mem.fallback_page(req) {
            Some(pfn) => Ok(pfn),
            None => Err(mem.no_room_for(&req)),
        }
    }

    /// The application `asid` frees the pages at `vas` (each the first
    /// address of a mapped page, or unmapped: never touched): unmap them,
    /// shoot their translations down and free their frames, except pages of
    /// coalesced regions, which are held (see [`coalescer`]). Then each
    /// coalesced region the call freed pages of is released when none of
    /// its pages stay allocated, or handed to CAC at deallocation. Returns
    /// the cycles of splinters outside CAC (the caller charges them; CAC's
    /// splinters and copies come through [`Os::take_stall`]).
    #[allow(clippy::too_many_arguments)]
    pub fn free(
        &mut self,
        vas: &[u64],
        asid: Asid,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> Result<u64> {
        let mut cycles = 0;
        let mut regions: Vec<u64> = Vec::new();
        for &va in vas {
            let Some(leaf) = pt.leaf(mem, asid, va) else { continue };
            if let Some(co) = self.coalescer.as_deref_mut() {
                if leaf.size == PageSize::Size2M && pt.is_coalesced(mem, asid, va, PageSize::Size2M) {
                    let pfn = Pfn(leaf.pfn_base + ((va >> BASE_SHIFT) & 511));
                    co.hold(va, asid, pfn);
                    tlbs.shoot_down(va, PageSize::Size4K, asid);
                    let region = va & !(PageSize::Size2M.bytes() - 1);
                    if regions.last() != Some(&region) {
                        regions.push(region);
                    }
                    continue;
                }
                cycles += co.before_unmap(va, asid, Pfn(leaf.pfn_base), leaf.size, pt, mem, walker, tlbs);
            }
            pt.unmap(mem, asid, va);
            if leaf.large.is_some() {
                walker.flush_pscs();
            }
            tlbs.shoot_down(va, leaf.size, asid);
            caches.invalidate_range(Pfn(leaf.pfn_base).addr(), leaf.size.bytes());
            if let Some(p) = &mut self.pressure {
                p.eviction.on_evict(leaf.pfn_base);
                p.resident_frames -= 1 << leaf.size.order();
            }
            mem.free_page(Pfn(leaf.pfn_base));
            self.pages[leaf.size.index()] -= 1;
        }
        regions.dedup();
        let Some(co) = self.coalescer.as_deref_mut() else { return Ok(cycles) };
        for va in regions {
            let Some((pfn, _)) = pt.translate(mem, asid, va) else { continue };
            let allocated = co.allocated(pfn);
            match self.cac.as_deref_mut() {
                _ if allocated == 0 => cycles += co.splinter(va, asid, pt, mem, walker, tlbs),
                Some(c) if c.trigger() == cac::Trigger::Deallocation => {
                    c.after_free(cac::Emergency { asid, va }, allocated, pt, mem, walker, tlbs, co)?;
                }
                _ => {}
            }
        }
        Ok(cycles)
    }

    /// Cycles of compaction since the last call, which the machine stalls
    /// for (every SM, on the GPU).
    pub fn take_stall(&mut self) -> u64 {
        self.cac.as_deref_mut().map_or(0, cac::Cac::take_pending)
    }

    /// Map `va`'s PD slot with a GT-PDE (or a P-GT-PDE) over a slice the
    /// allocator grants, if the slot is empty and a slice is free. False
    /// when the caller must fall back.
    fn map_slice(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem) -> Result<bool> {
        let AnyFormat::GtPde(table) = pt.format() else {
            unreachable!("config resolution requires the gt_pde table with slices")
        };
        let mode = table.mode();
        if !pt.entry_free(mem, asid, va, 2) {
            return Ok(false);
        }
        let words = if mode.paired() {
            let Some(g) = mem.alloc_slice_pair() else { return Ok(false) };
            table.encode_gt(g.a, Some(g.b), g.bitmap)?
        } else {
            let Some(g) = mem.alloc_slice() else { return Ok(false) };
            table.encode_gt(g.base, None, g.bitmap)?
        };
        pt.map_words(mem, asid, va, 2, &words)?;
        self.gt_superpages += 1 + mode.paired() as u64;
        Ok(true)
    }

    /// Frames for `req`, evicting pages until there are enough free frames
    /// for it and for the page-table nodes its mapping may need: where the
    /// allocator says (a free frame, or a page it names to displace), or
    /// else the eviction policy's victims (each with the rest of its unit,
    /// for a policy whose eviction unit is larger than one frame).
    #[allow(clippy::too_many_arguments)]
    fn alloc_evicting(
        &mut self,
        req: PageRequest,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
        cycles: &mut u64,
    ) -> Result<Pfn> {
        let nodes = pt.levels() as u64;
        loop {
            if mem.table_headroom(&req) >= nodes {
                let p = self.pressure.as_ref().expect("called with a swap device");
                match mem.place_page(req, p.eviction.ages()) {
                    Placement::Frame(pfn) => return Ok(pfn),
                    Placement::Displace(victim) => {
                        *cycles += self.evict(victim, pt, mem, caches, walker, tlbs)?;
                        return mem.claim_page(req, victim);
                    }
                    Placement::Full => {}
                }
            }
            let p = self.pressure.as_mut().expect("called with a swap device");
            let victim = {
                let mut bits = PteAccessedBits { pt, mem, tlbs: Some(&mut *tlbs) };
                p.eviction.victim(&mut bits)
            };
            let Some(victim) = victim else {
                // Nothing left to evict: the request cannot be met.
                return mem.alloc_page(req, true).map(|p| p.expect("required allocation"));
            };
            if mem.table_headroom(&req) < nodes && !mem.allocator().frees_table_room(Pfn(victim)) {
                // Short of frames for page-table nodes, and evicting this page would not give any.
                return Err(mem.tables_exhausted());
            }
            let unit = p.eviction.eviction_unit_frames();
            *cycles += self.evict_unit(victim, unit, pt, mem, caches, walker, tlbs)?;
        }
    }

    /// Evict every resident page whose first frame lies in the aligned unit
    /// of `unit` frames holding `victim`, in frame order, each through
    /// [`Self::evict`]; a victim page larger than the unit covers it and is
    /// evicted alone, and a unit of one frame is the victim alone. Returns
    /// the cycles charged.
    #[allow(clippy::too_many_arguments)]
    fn evict_unit(
        &mut self,
        victim: u64,
        unit: u64,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> Result<u64> {
        debug_assert!(unit.is_power_of_two());
        if unit <= 1 {
            return self.evict(Pfn(victim), pt, mem, caches, walker, tlbs);
        }
        let base = victim & !(unit - 1);
        let end = (base + unit).min(mem.capacity_frames());
        if mem.owner(Pfn(victim)).is_none() {
            // The policy named a frame that holds no page: the single path reports it.
            return self.evict(Pfn(victim), pt, mem, caches, walker, tlbs);
        }
        let mut cycles = 0;
        let mut f = base;
        while f < end {
            match mem.owner(Pfn(f)) {
                Some(req) => {
                    cycles += self.evict(Pfn(f), pt, mem, caches, walker, tlbs)?;
                    f += 1 << req.size.order();
                }
                None => f += 1,
            }
        }
        Ok(cycles)
    }

    /// Evict the page whose first frame is `pfn`: unmap it, shoot down its
    /// translations, drop its cache lines (writing dirty ones back with the
    /// page), write it to swap if it is dirty or has no copy there, and free
    /// its frames. Returns the cycles charged.
    fn evict(
        &mut self,
        pfn: Pfn,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> Result<u64> {
        let Some(req) = mem.owner(pfn) else {
            return Err(crate::error::Error::config("os.eviction", format!("the policy chose frame {:#x}, which holds no page", pfn.0)));
        };
        let va = req.vpn << BASE_SHIFT;
        let mut splinter = 0;
        if let Some(c) = self.coalescer.as_deref_mut() {
            splinter = c.before_unmap(va, req.asid, pfn, req.size, pt, mem, walker, tlbs);
        }
        let p = self.pressure.as_mut().expect("called with a swap device");
        let leaf = pt.unmap(mem, req.asid, va);
        let mut dirty = leaf.is_some_and(|l| pt.format().is_dirty(l.raw));
        if leaf.is_some_and(|l| l.large.is_some()) {
            // The freed node may be cached as a walk's next step.
            walker.flush_pscs();
        }
        p.stats.shootdowns += 1;
        p.stats.shootdown_cycles += p.shootdown_cycles;
        p.stats.tlb_entries_shot_down += tlbs.shoot_down(va, req.size, req.asid);
        let (lines, dirty_lines) = caches.invalidate_range(pfn.addr(), req.size.bytes());
        p.stats.lines_invalidated += lines;
        p.stats.dirty_lines_written_back += dirty_lines;
        dirty |= dirty_lines > 0;
        let io = p.swap.page_out(SwapKey::new(req.asid, req.vpn), 1 << req.size.order(), dirty)?;
        p.eviction.on_evict(pfn.0);
        p.resident_frames -= 1 << req.size.order();
        if let Some(log) = &mut p.log {
            log.push(Evicted { asid: req.asid, va, size: req.size });
        }
        mem.free_page(pfn);
        p.stats.evictions += 1;
        Ok(io + p.shootdown_cycles + splinter)
    }

    /// Evict the eviction policy's victim now (a machine bounding its
    /// resident pages itself makes room before it maps), with every page of
    /// its unit when the policy evicts whole units. The cycles the OS
    /// charged, or `None` when nothing is resident or the OS has no swap
    /// device.
    #[allow(clippy::too_many_arguments)]
    pub fn evict_victim(
        &mut self,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> Result<Option<u64>> {
        let Some(p) = self.pressure.as_mut() else { return Ok(None) };
        let victim = {
            let mut bits = PteAccessedBits { pt, mem, tlbs: Some(&mut *tlbs) };
            p.eviction.victim(&mut bits)
        };
        let unit = p.eviction.eviction_unit_frames();
        let Some(v) = victim else { return Ok(None) };
        let virtual_unit = p.virtual_unit;
        let owner = mem.owner(Pfn(v)).filter(|_| virtual_unit > 0);
        let mut cycles = self.evict_unit(v, unit, pt, mem, caches, walker, tlbs)?;
        if let Some(req) = owner {
            let base = (req.vpn << BASE_SHIFT) & !(virtual_unit - 1);
            cycles += self.evict_range(req.asid, base, virtual_unit, pt, mem, caches, walker, tlbs)?;
        }
        Ok(Some(cycles))
    }

    /// Evict every page still mapped in `base .. base + bytes` of `asid`
    /// (the rest of a machine's migration unit whose victim went), each
    /// through [`Self::evict`]. The victim's eviction splintered a
    /// coalesced region around it, so the pages found are base pages, none
    /// larger than the range.
    #[allow(clippy::too_many_arguments)]
    fn evict_range(
        &mut self,
        asid: Asid,
        base: u64,
        bytes: u64,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> Result<u64> {
        let mut cycles = 0;
        let mut va = base;
        while va < base + bytes {
            let first = pt
                .translate(mem, asid, va)
                .filter(|&(_, size)| size.bytes() <= bytes)
                .map(|(pfn, size)| Pfn(pfn.0 & !((1 << size.order()) - 1)))
                .filter(|&pfn| mem.owner(pfn).is_some());
            match first {
                // Unmapped now: the same address is looked at again, and found empty.
                Some(pfn) => cycles += self.evict(pfn, pt, mem, caches, walker, tlbs)?,
                None => va += 1 << BASE_SHIFT,
            }
        }
        Ok(cycles)
    }

    /// Frames of the data pages mapped, when the OS has a swap device.
    pub fn resident_frames(&self) -> Option<u64> {
        self.pressure.as_ref().map(|p| p.resident_frames)
    }

    /// Keep a log of the pages evicted from now on (see [`Self::take_evicted`]),
    /// and evict each victim of [`Self::evict_victim`] with every other page
    /// of its aligned virtual unit of `unit_bytes` (a machine that migrates
    /// and evicts whole units; 4096 or less: the victim alone).
    pub fn log_evictions(&mut self, unit_bytes: u64) {
        if let Some(p) = &mut self.pressure {
            p.log.get_or_insert_with(Vec::new);
            p.virtual_unit = if unit_bytes > 1 << BASE_SHIFT { unit_bytes } else { 0 };
        }
    }

    /// Move the pages evicted since the last call into `out`.
    pub fn take_evicted(&mut self, out: &mut Vec<Evicted>) {
        if let Some(log) = self.pressure.as_mut().and_then(|p| p.log.as_mut()) {
            out.append(log);
        }
    }

    /// Whether pages are coalesced in place (`physmem.page_size = in_place`).
    pub fn coalesces(&self) -> bool {
        self.coalescer.is_some()
    }

    /// The 4 KiB page at `va` of `asid` became usable (transferred, or
    /// mapped before the run): the in-place coalescer counts it. True when
    /// its region was coalesced.
    pub fn page_usable(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker) -> bool {
        match self.coalescer.as_deref_mut() {
            Some(c) => c.page_usable(va, asid, pt, mem, walker),
            None => false,
        }
    }

    /// Splinter the coalesced region holding `va` of `asid` (a no-op
    /// returning 0 when it is not one); the cycles its TLB invalidations cost.
    pub fn splinter(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker, tlbs: &mut impl Shootdown) -> u64 {
        match self.coalescer.as_deref_mut() {
            Some(c) => c.splinter(va, asid, pt, mem, walker, tlbs),
            None => 0,
        }
    }

    /// A translation of the page whose first frame is `pfn` was used.
    #[inline(always)]
    pub fn touch(&mut self, pfn: u64) {
        if let Some(p) = &mut self.pressure {
            p.eviction.on_touch(pfn);
        }
    }

    /// Whether the eviction policy's periodic scan is due (ask after [`Self::touch`]).
    #[inline(always)]
    pub fn scan_due(&self) -> bool {
        self.pressure.as_ref().is_some_and(|p| p.scans && p.eviction.scan_due())
    }

    /// Run the eviction policy's periodic scan over the accessed bits in the
    /// page tables; clearing a bit may shoot the page's translations down
    /// (the policy's choice).
    #[cold]
    pub fn scan(&mut self, pt: &PageTable, mem: &mut PhysMem, tlbs: &mut impl Shootdown) {
        if let Some(p) = &mut self.pressure {
            let mut bits = PteAccessedBits { pt, mem, tlbs: Some(tlbs) };
            p.eviction.scan(&mut bits);
        }
    }

    /// Whether [`Self::touch`] must be called on every translation.
    #[inline]
    pub fn wants_touches(&self) -> bool {
        self.pressure.as_ref().is_some_and(|p| p.eviction.wants_touches())
    }

    /// A store made the page at `va` dirty.
    #[inline]
    pub fn on_dirty(&mut self, _va: u64, _asid: Asid) {}

    /// Pages mapped of `size` so far.
    pub fn pages(&self, size: PageSize) -> u64 {
        self.pages[size.index()]
    }

    /// Stats under `os.*` (and `swap.*` with a swap device).
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        {
            let mut p = crate::stats::Prefixed::new("os", v);
            self.stats.visit(&mut p);
            for size in &self.sizes {
                let i = size.index();
                p.counter(PAGE_NAMES[i], self.pages[i], "pages", PAGE_DESCS[i]);
            }
            if self.slices {
                p.counter("gt_superpages", self.gt_superpages, "pages", "superpages mapped by GT-PDEs over slices (two per P-GT-PDE)");
            }
        }
        if let Some(c) = &self.compaction {
            let mut p = crate::stats::Prefixed::new("os.compaction", v);
            c.visit(&mut p);
        }
        if let Some(c) = &self.coalescer {
            let mut p = crate::stats::Prefixed::new("os.coalescer", v);
            c.visit(&mut p);
        }
        if let Some(c) = &self.cac {
            let mut p = crate::stats::Prefixed::new("os.cac", v);
            c.visit(&mut p);
        }
        if let Some(pr) = &self.pressure {
            {
                let mut p = crate::stats::Prefixed::new("os", v);
                pr.stats.visit(&mut p);
            }
            {
                let prefix = format!("os.eviction.{}", pr.eviction.name());
                let mut p = crate::stats::Prefixed::new(&prefix, v);
                pr.eviction.visit_stats(&mut p);
            }
            let mut p = crate::stats::Prefixed::new("swap", v);
            pr.swap.visit_stats(&mut p);
        }
    }
}

/// The OS reading and clearing a page's accessed bit in its leaf entry.
/// Like Linux on x86, `test_and_clear` does not flush the TLB: a cached
/// translation keeps the bit from being set again until the page is walked.
/// `test_and_clear_flush` also shoots the page's translations down, when
/// the caller handed over the TLBs.
struct PteAccessedBits<'a, S: Shootdown> {
    pt: &'a PageTable,
    mem: &'a mut PhysMem,
    tlbs: Option<&'a mut S>,
}

impl<S: Shootdown> PteAccessedBits<'_, S> {
    /// Clear the bit; the page (asid, vpn, size) if it was set.
    fn clear(&mut self, page: u64) -> Option<PageRequest> {
        let req = self.mem.owner(Pfn(page))?;
        let leaf = self.pt.leaf(self.mem, req.asid, req.vpn << BASE_SHIFT)?;
        let format = self.pt.format();
        if !format.is_accessed(leaf.raw) {
            return None;
        }
        self.mem.write_linked(leaf.slot, leaf.word, format.clear_accessed(leaf.raw));
        Some(req)
    }
}

impl<S: Shootdown> AccessedBits for PteAccessedBits<'_, S> {
    fn test_and_clear(&mut self, page: u64) -> bool {
        self.clear(page).is_some()
    }

    fn test_and_clear_flush(&mut self, page: u64) -> bool {
        let Some(req) = self.clear(page) else { return false };
        if let Some(t) = &mut self.tlbs {
            t.shoot_down(req.vpn << BASE_SHIFT, req.size, req.asid);
        }
        true
    }
}
