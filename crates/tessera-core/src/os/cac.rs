//! Contiguity-aware compaction (CAC), Mosaic's compaction: at deallocation
//! (the paper) or on demand (the authors' released code), empty sparse
//! frames into other frames of the same owner, and stall the GPU for the
//! copies.
//!
//! ## What it models
//! `trigger = "deallocation"` (the paper, §4.4): when an application frees
//! pages of a coalesced 2 MiB region (their frame keeps them, *held*: see
//! [`crate::os::coalescer`]) and fewer than `threshold` of its 512 pages
//! stay allocated, the region is splintered, its held pages are freed, and
//! its remaining pages move to the application's other (shared, never
//! coalesced) frames ([`FrameAllocator::evacuate_frame`]); the emptied
//! frame returns to the free list. Without room in those frames, the frame
//! stays as a shared frame of the application, its free slots open to its
//! pages. A region at or above the threshold goes to the *emergency frame
//! list*. When the allocator refuses a page, the emergency frame with the
//! fewest allocated pages is splintered and compacted the same way, and the
//! request retried, until the list is empty; then the allocator's last
//! resort. A region whose every page is freed is released at once, with no
//! copy, under every trigger (and without CAC).
//!
//! `trigger = "on_demand"` (the released code's `coalesce2`, the default):
//! a request the allocator refuses (no free frame, nothing of the
//! application's to convert) makes CAC ask the allocator to evacuate a
//! frame ([`crate::physmem::allocator::FrameAllocator::evacuate`]: CoCoA
//! moves foreign, pre-fragmented data only into other foreign frames, and an
//! application's pages only into its own shared frames, so compaction never
//! breaks the soft guarantee) and retry, up to `max_frames` evacuations per
//! request. Each moved page costs a copy:
//! - `copy = "channel"`: over the memory channel 64 bits at a time,
//!   `channel_copy_cycles` per 4 KiB page (default 456 = read and write
//!   4 KiB at 32 bytes per cycle, plus a DRAM latency each way);
//! - `copy = "bulk"` (CAC-BC): an in-DRAM bulk copy (RowClone, LISA),
//!   `bulk_copy_cycles` per page (default 82 = the paper's 80 ns at
//!   1.02 GHz);
//! - `copy = "ideal"`: free (the paper's Ideal CAC).
//! An application's moved page is remapped (its accessed and dirty bits
//! kept) and its translation shot down. Nothing found to evacuate: the
//! allocator's last resort ([`FrameAllocator::fallback_page`]: CoCoA's
//! guarantee break). Without CAC that last resort is taken at once.
//! The GPU stalls every SM for the copies' cycles (the paper's worst case,
//! §5: the whole GPU stalls and its pipeline is flushed).
//! ## Paper
//! Ausavarungnirun et al., "Mosaic", MICRO 2017, doi:10.1145/3123939.3123975,
//! §4.4 and §6.4; the released code's on-demand `PMM::coalesce` for when it
//! runs.
//! ## Choices where the paper is silent
//! - `threshold = 256` (half a frame): the paper leaves it to the runtime.
//! - The threshold is checked once per deallocation call (a `cudaFree` of
//!   a whole buffer), not after each of its pages, so one free never
//!   compacts a frame it is still emptying.
//! - The emergency frame pulled first is the one with the fewest allocated
//!   pages (the most room gained per copy).
//! - Compacting at deallocation moves pages into the application's shared
//!   frames only: reservations take pages of their own region alone.
//! - Applications free buffers between kernels (a built-in kernel's `free`
//!   parameter, [`crate::workload::gpu::freeing`]); the released code's
//!   on-demand path stays the default, as built-in workloads free nothing
//!   unless asked.
//! - Same channel: Tessera's DRAM interleaves lines over the channels, so
//!   every frame lies in every channel and the paper's same-channel rule
//!   always holds.
//! - The moved pages' lines are not dropped from the GPU's L2 (the frames
//!   they leave are not read again until reused).
//! ## Config
//! `os.cac = { trigger = "on_demand" | "deallocation", threshold = 256,
//! copy = "channel" | "bulk" | "ideal", channel_copy_cycles = 456,
//! bulk_copy_cycles = 82, max_frames = 64 }`; needs the `cocoa` allocator,
//! and `trigger = "deallocation"` the in-place coalescer. `threshold` is
//! 1 to 511. Without the table there is no compaction.
//! ## Stats
//! Under `os.cac.`: `attempts`, `frames_freed`, `pages_moved`,
//! `foreign_pages_moved`, `tlb_entries_shot_down`, `cycles`, `failures`,
//! `below_threshold`, `emergency_listed`, `emergency_pulls`,
//! `emergency_frames` (gauge).

use serde::{Deserialize, Serialize};

use crate::addr::{PageSize, Pfn, BASE_SHIFT};
use crate::os::coalescer::Coalescer;
use crate::walker::Walker;
use crate::error::{Error, Result};
use crate::memsys::Shootdown;
use crate::pagetable::format::PageTableFormat;
use crate::pagetable::PageTable;
use crate::physmem::allocator::{FrameAllocator, Move};
use crate::physmem::PhysMem;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Copy {
    /// Over the memory channel, 64 bits at a time (CAC).
    #[default]
    Channel,
    /// In-DRAM bulk copy (CAC-BC).
    Bulk,
    /// Zero latency (Ideal CAC).
    Ideal,
}

/// When CAC runs.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Trigger {
    /// When the allocator refuses a page (the released code's `coalesce2`).
    #[default]
    OnDemand,
    /// When pages of a coalesced region are freed (the paper).
    Deallocation,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacSpec {
    #[serde(default)]
    pub trigger: Trigger,
    /// Allocated pages below which a coalesced region is compacted at
    /// deallocation (`trigger = "deallocation"`).
    #[serde(default = "d_threshold")]
    pub threshold: u32,
    #[serde(default)]
    pub copy: Copy,
    #[serde(default = "d_channel")]
    pub channel_copy_cycles: u64,
    #[serde(default = "d_bulk")]
    pub bulk_copy_cycles: u64,
    /// Frames evacuated for one request at most before the last resort.
    #[serde(default = "d_max")]
    pub max_frames: u32,
}
fn d_channel() -> u64 {
    456
}
fn d_bulk() -> u64 {
    82
}
fn d_max() -> u32 {
    64
}
fn d_threshold() -> u32 {
    256
}
impl Default for CacSpec {
    fn default() -> Self {
        CacSpec {
            trigger: Trigger::default(),
            threshold: d_threshold(),
            copy: Copy::default(),
            channel_copy_cycles: d_channel(),
            bulk_copy_cycles: d_bulk(),
            max_frames: d_max(),
        }
    }
}

crate::stat_group! {
    pub struct CacStats {
        attempts: "requests", "page requests the allocator refused that CAC tried to make room for",
        frames_freed: "frames", "2 MiB frames emptied by compaction",
        pages_moved: "pages", "application pages moved (remapped and shot down)",
        foreign_pages_moved: "pages", "pre-fragmented (foreign) pages moved",
        tlb_entries_shot_down: "entries", "TLB entries removed for moved pages",
        cycles: "cycles", "cycles the copies (and, at deallocation, the splinters) took (every SM stalls for them)",
        failures: "requests", "requests compaction could not make room for (the allocator's last resort followed)",
        below_threshold: "frames", "coalesced regions splintered and compacted at deallocation (fewer allocated pages than the threshold)",
        emergency_listed: "frames", "coalesced regions put on the emergency frame list at deallocation",
        emergency_pulls: "frames", "emergency frames splintered and compacted for a page the allocator refused",
    }
}

/// A coalesced region on the emergency frame list.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Emergency {
    pub asid: crate::addr::Asid,
    /// First virtual address of the region.
    pub va: u64,
}

#[derive(Clone, Debug)]
pub struct Cac {
    spec: CacSpec,
    copy_cycles: u64,
    stats: CacStats,
    moves: Vec<Move>,
    /// Cycles of compaction not yet charged to the machine.
    pending: u64,
    emergency: Vec<Emergency>,
}

impl Cac {
    pub fn new(spec: &CacSpec, mem: &PhysMem) -> Result<Cac> {
        if !mem.allocator().can_evacuate() {
            return Err(Error::config_allowed(
                "os.cac",
                format!("contiguity-aware compaction moves pages between the frames of a per-application allocator; \"{}\" is not one", mem.allocator().name()),
                &["physmem.allocator = \"cocoa\""],
            ));
        }
        if spec.max_frames == 0 {
            return Err(Error::config("os.cac.max_frames", "must be at least 1"));
        }
        if !(1..=511).contains(&spec.threshold) {
            return Err(Error::config(
                "os.cac.threshold",
                format!("{} allocated pages; a 2 MiB region has 512 pages, so the threshold must be 1 to 511", spec.threshold),
            ));
        }
        let copy_cycles = match spec.copy {
            Copy::Channel => spec.channel_copy_cycles,
            Copy::Bulk => spec.bulk_copy_cycles,
            Copy::Ideal => 0,
        };
        Ok(Cac { spec: spec.clone(), copy_cycles, stats: CacStats::default(), moves: Vec::new(), pending: 0, emergency: Vec::new() })
    }

    /// Evacuate frames until `retry` finds a place (its answer), or nothing
    /// more can be evacuated (None).
    pub fn make_room<T>(
        &mut self,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        tlbs: &mut impl Shootdown,
        mut coalescer: Option<&mut Coalescer>,
        mut retry: impl FnMut(&mut PhysMem) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        self.stats.attempts += 1;
        for _ in 0..self.spec.max_frames {
            let mut moves = std::mem::take(&mut self.moves);
            let freed = mem.evacuate(&mut moves);
            if freed {
                self.apply(&moves, pt, mem, tlbs, coalescer.as_deref_mut())?;
            }
            self.moves = moves;
            if !freed {
                break;
            }
            self.stats.frames_freed += 1;
            if let Some(x) = retry(mem)? {
                return Ok(Some(x));
            }
        }
        self.stats.failures += 1;
        Ok(None)
    }

    /// Remap the application pages among `moves` and charge every copy;
    /// the coalescer's counts follow the pages.
    fn apply(&mut self, moves: &[Move], pt: &mut PageTable, mem: &mut PhysMem, tlbs: &mut impl Shootdown, mut coalescer: Option<&mut Coalescer>) -> Result<()> {
        for m in moves {
            if let Some(c) = coalescer.as_deref_mut() {
                c.moved(m.from, m.to);
            }
            let cost = self.copy_cycles;
            self.stats.cycles += cost;
            self.pending += cost;
            if m.foreign {
                self.stats.foreign_pages_moved += 1;
                continue;
            }
            let page = mem.owner(m.to).expect("the reverse map moved with the page");
            let va = page.vpn << BASE_SHIFT;
            let leaf = pt.unmap(mem, page.asid, va).expect("a page in the reverse map is mapped");
            let format = pt.format();
            let (accessed, dirty) = (format.is_accessed(leaf.raw), format.is_dirty(leaf.raw));
            self.stats.tlb_entries_shot_down += tlbs.shoot_down(va, PageSize::Size4K, page.asid);
            pt.map(mem, page.asid, va, PageSize::Size4K, m.to)?;
            if accessed || dirty {
                let l = pt.leaf(mem, page.asid, va).expect("just mapped");
                let format = pt.format();
                let raw = format.used(l.raw, true, dirty);
                mem.write_linked(l.slot, l.word, if accessed { raw } else { format.clear_accessed(raw) });
            }
            self.stats.pages_moved += 1;
        }
        Ok(())
    }

    /// When CAC runs.
    pub fn trigger(&self) -> Trigger {
        self.spec.trigger
    }

    /// Deallocation left the coalesced region at `va` of `asid` with
    /// `allocated` pages (more than none): below the threshold, splinter it
    /// and compact its frame; otherwise list it as an emergency frame. The
    /// splinter's cycles join the stall.
    #[allow(clippy::too_many_arguments)]
    pub fn after_free(
        &mut self,
        region: Emergency,
        allocated: u64,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
        coalescer: &mut Coalescer,
    ) -> Result<()> {
        if allocated >= self.spec.threshold as u64 {
            if !self.emergency.contains(&region) {
                self.emergency.push(region);
                self.stats.emergency_listed += 1;
            }
            return Ok(());
        }
        self.stats.below_threshold += 1;
        self.emergency.retain(|e| *e != region);
        self.splinter_and_compact(region, pt, mem, walker, tlbs, coalescer)
    }

    /// Splinter the region (freeing its held pages), then move its frame's
    /// remaining pages into the application's other frames if they fit;
    /// the splinter's and the copies' cycles join the stall.
    fn splinter_and_compact(
        &mut self,
        region: Emergency,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
        coalescer: &mut Coalescer,
    ) -> Result<()> {
        let Some((pfn, _)) = pt.translate(mem, region.asid, region.va) else { return Ok(()) };
        let splinter = coalescer.splinter(region.va, region.asid, pt, mem, walker, tlbs);
        self.stats.cycles += splinter;
        self.pending += splinter;
        let mut moves = std::mem::take(&mut self.moves);
        if mem.evacuate_frame(pfn, &mut moves) {
            self.apply(&moves, pt, mem, tlbs, Some(coalescer))?;
            self.stats.frames_freed += 1;
        }
        self.moves = moves;
        Ok(())
    }

    /// The allocator refused a page: splinter and compact emergency frames,
    /// fewest allocated pages first, until `retry` finds a place (its
    /// answer) or the list is empty (None).
    #[allow(clippy::too_many_arguments)]
    pub fn pull_emergency<T>(
        &mut self,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
        coalescer: &mut Coalescer,
        mut retry: impl FnMut(&mut PhysMem) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        self.stats.attempts += 1;
        while !self.emergency.is_empty() {
            // Regions splintered since they were listed are not emergency frames any more.
            self.emergency.retain(|e| pt.is_coalesced(mem, e.asid, e.va, PageSize::Size2M));
            let Some(i) = (0..self.emergency.len()).min_by_key(|&i| {
                let e = self.emergency[i];
                let pfn = pt.translate(mem, e.asid, e.va).map_or(Pfn(0), |(p, _)| p);
                (coalescer.allocated(pfn), pfn.0)
            }) else {
                break;
            };
            let region = self.emergency.swap_remove(i);
            self.stats.emergency_pulls += 1;
            self.splinter_and_compact(region, pt, mem, walker, tlbs, coalescer)?;
            if let Some(x) = retry(mem)? {
                return Ok(Some(x));
            }
        }
        self.stats.failures += 1;
        Ok(None)
    }

    /// Compaction cycles since the last call (the machine stalls for them).
    pub fn take_pending(&mut self) -> u64 {
        std::mem::take(&mut self.pending)
    }

    pub fn visit(&self, v: &mut dyn crate::stats::StatVisitor) {
        use crate::stats::StatGroup;
        self.stats.visit(v);
        v.gauge("emergency_frames", self.emergency.len() as u64, "frames", "coalesced regions on the emergency frame list now");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::Asid;
    use crate::config::spec::PhysMemSpec;
    use crate::pagetable::radix;
    use crate::physmem::allocator::PageRequest;
    use crate::registry::{AnyFormat, Mechanism};

    struct Log(Vec<(u64, PageSize, Asid)>);
    impl Shootdown for Log {
        fn shoot_down(&mut self, va: u64, size: PageSize, asid: Asid) -> u64 {
            self.0.push((va, size, asid));
            1
        }
    }

    #[test]
    fn an_applications_moved_page_is_remapped_with_its_bits_and_shot_down() {
        let spec: PhysMemSpec = toml::from_str("capacity = \"6MiB\"\nallocator = \"cocoa\"").unwrap();
        let mut mem = PhysMem::build(&spec, 1).unwrap();
        let ctx = crate::pagetable::x86_radix::FormatCtx { levels: None, hasher: None };
        let format = AnyFormat::Radix(radix::Radix::build(&radix::Config { large_reads_next: true, ..Default::default() }, &ctx).unwrap());
        let mut pt = PageTable::new(format);
        let map = |pt: &mut PageTable, mem: &mut PhysMem, vpn: u64, fallback: bool| {
            let req = PageRequest { asid: 1, vpn, size: PageSize::Size4K };
            let p = if fallback { mem.fallback_page(req).unwrap() } else { mem.alloc_page(req, true).unwrap().unwrap() };
            pt.map(mem, 1, vpn << 12, PageSize::Size4K, p).unwrap();
            p
        };
        // One frame holds the application's 300 pages, another the tables.
        let home = map(&mut pt, &mut mem, 0, false).0 / 512;
        for vpn in 1..300 {
            map(&mut pt, &mut mem, vpn, false);
        }
        // Frame 2: foreign data, then one page of the application's that had nowhere else to go.
        assert!(mem.reserve_frame(Pfn(2 * 512 + 7)));
        let lone = map(&mut pt, &mut mem, 5000, true);
        assert_eq!(lone.0 / 512, 2);
        // The walker used it and wrote to it.
        let l = pt.leaf(&mem, 1, 5000 << 12).unwrap();
        let raw = pt.format().used(l.raw, true, true);
        mem.write_linked(l.slot, l.word, raw);

        let mut cac = Cac::new(&CacSpec { copy: Copy::Bulk, ..CacSpec::default() }, &mem).unwrap();
        let mut log = Log(Vec::new());
        let got = cac.make_room(&mut pt, &mut mem, &mut log, None, |_| Ok(Some(()))).unwrap();
        assert_eq!(got, Some(()));
        // Frame 2 (2 pages) was emptied into the application's other frame.
        let (pfn, size) = pt.translate(&mem, 1, 5000 << 12).unwrap();
        assert_eq!((pfn.0 / 512, size), (home, PageSize::Size4K));
        assert_eq!(mem.owner(pfn).map(|r| r.vpn), Some(5000));
        assert_eq!(mem.owner(lone), None);
        let l = pt.leaf(&mem, 1, 5000 << 12).unwrap();
        assert!(pt.format().is_dirty(l.raw) && pt.format().is_accessed(l.raw), "the bits moved with the page");
        assert_eq!(log.0, vec![(5000 << 12, PageSize::Size4K, 1)]);
        assert_eq!((cac.stats.pages_moved, cac.stats.foreign_pages_moved, cac.stats.frames_freed), (1, 1, 1));
        assert_eq!(cac.take_pending(), 2 * 82);
        assert_eq!(cac.take_pending(), 0);
        mem.allocator().check_invariants().unwrap();
        // Nothing else can be emptied: the application's 302 pages fit in no other frame of its own.
        assert_eq!(cac.make_room(&mut pt, &mut mem, &mut log, None, |_| Ok(Some(()))).unwrap(), None);
        assert_eq!(cac.stats.failures, 1);
    }

    #[test]
    fn cac_needs_an_allocator_that_can_evacuate() {
        let spec: PhysMemSpec = toml::from_str("capacity = \"6MiB\"").unwrap();
        let mem = PhysMem::build(&spec, 1).unwrap();
        let e = Cac::new(&CacSpec::default(), &mem).unwrap_err().to_string();
        assert!(e.contains("os.cac") && e.contains("cocoa"), "{e}");
    }
}
