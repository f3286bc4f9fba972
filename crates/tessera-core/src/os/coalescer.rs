//! The runtime half of Mosaic's in-place coalescer (the policy is
//! [`crate::page_size::in_place`]; the page-table bits are
//! [`crate::pagetable::coalesce`]).
//!
//! It counts usable 4 KiB frames per 2 MiB physical frame (a 64 KiB page
//! counts its 16). The 512th makes it try the page table's coalesce for
//! that page's region, which checks
//! that the region is exactly that frame in order. Before a page of a
//! coalesced region is unmapped, the region is splintered and its large
//! translation shot down.
//!
//! A page the application frees inside a coalesced region is *held*: it
//! stays mapped under the large page (its frame cannot take another page
//! while the region is coalesced, §4.4 of the paper) and stops counting as
//! allocated. Splintering the region unmaps and frees its held pages.

use rustc_hash::FxHashMap;

use crate::addr::{Asid, PageSize, Pfn, BASE_SHIFT};
use crate::memsys::Shootdown;
use crate::page_size::InPlace;
use crate::pagetable::coalesce::Coalesced;
use crate::pagetable::PageTable;
use crate::physmem::PhysMem;
use crate::walker::Walker;

/// Base pages in a 2 MiB frame.
const PIECES: u64 = 512;

crate::stat_group! {
    pub struct CoalescerStats {
        coalesced: "pages", "2 MiB regions coalesced in place",
        splintered: "pages", "coalesced regions splintered back into base pages",
        not_contiguous: "frames", "2 MiB frames whose 512 usable pages were not one virtual region in order (not coalesced)",
        splinter_cycles: "cycles", "cycles charged for splinters' TLB invalidations",
        pages_released: "pages", "freed pages of coalesced regions unmapped and freed when their region splintered",
    }
}

#[derive(Clone, Debug)]
pub struct Coalescer {
    spec: InPlace,
    /// Usable 4 KiB data pages per 2 MiB frame.
    usable: Vec<u16>,
    /// One bit per 4 KiB frame: it holds a usable page (so moves and frees
    /// keep the counts exact).
    usable_bits: Vec<u64>,
    /// 2 MiB frame -> (application, virtual addresses) of its held pages.
    held: FxHashMap<u32, (Asid, Vec<u64>)>,
    stats: CoalescerStats,
    large_pages: u64,
}

impl Coalescer {
    pub fn new(spec: InPlace, capacity_frames: u64) -> Coalescer {
        Coalescer {
            spec,
            usable: vec![0; capacity_frames.div_ceil(PIECES) as usize],
            usable_bits: vec![0; capacity_frames.div_ceil(64) as usize],
            held: FxHashMap::default(),
            stats: CoalescerStats::default(),
            large_pages: 0,
        }
    }

    /// Mark 4 KiB frame `pfn` usable or not; false when it already was so.
    fn mark(&mut self, pfn: u64, on: bool) -> bool {
        let (w, b) = ((pfn / 64) as usize, pfn % 64);
        if (self.usable_bits[w] >> b & 1 == 1) == on {
            return false;
        }
        self.usable_bits[w] ^= 1 << b;
        let n = &mut self.usable[(pfn / PIECES) as usize];
        if on {
            *n += 1;
        } else {
            *n -= 1;
        }
        true
    }

    /// Allocated (usable, not freed) pages of the 2 MiB frame holding `pfn`.
    pub fn allocated(&self, pfn: Pfn) -> u64 {
        self.usable[(pfn.0 / PIECES) as usize] as u64
    }

    /// Compaction moved the page in frame `from` to frame `to`.
    pub fn moved(&mut self, from: Pfn, to: Pfn) {
        if self.mark(from.0, false) {
            self.mark(to.0, true);
        }
    }

    /// The base page size the coalescer's regions are made of.
    pub fn base(&self) -> PageSize {
        self.spec.base
    }

    /// The application frees its base page at `va` (first frame `pfn`)
    /// inside a coalesced region: hold it (see the module docs).
    pub fn hold(&mut self, va: u64, asid: Asid, pfn: Pfn) {
        for f in pfn.0..pfn.0 + (1 << self.spec.base.order()) {
            self.mark(f, false);
        }
        self.held.entry((pfn.0 / PIECES) as u32).or_insert_with(|| (asid, Vec::new())).1.push(va);
    }

    /// Pages held in coalesced regions now.
    pub fn held_pages(&self) -> u64 {
        self.held.values().map(|(_, v)| v.len() as u64).sum()
    }

    /// The 4 KiB page at `va` of `asid` is usable: count it, and coalesce
    /// its region if that fills its frame. True when it coalesced.
    pub fn page_usable(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker) -> bool {
        let Some((pfn, size)) = pt.translate(mem, asid, va) else { return false };
        if size >= PageSize::Size2M {
            return false;
        }
        let first = pfn.0 & !((1 << size.order()) - 1);
        let mut new = false;
        for f in first..first + (1 << size.order()) {
            new |= self.mark(f, true);
        }
        if !new || (self.usable[(first / PIECES) as usize] as u64) < PIECES {
            return false;
        }
        match pt.coalesce(mem, asid, va, PageSize::Size2M) {
            Coalesced::Done => {
                // A page-structure cache may hold the level-2 entry as a pointer.
                walker.flush_pscs();
                self.stats.coalesced += 1;
                self.large_pages += 1;
                true
            }
            Coalesced::NotContiguous | Coalesced::NotFull => {
                self.stats.not_contiguous += 1;
                false
            }
            Coalesced::Already => false,
        }
    }

    /// The page of `size` at `va` of `asid`, first frame `pfn`, is about to
    /// be unmapped: splinter its region first if it is coalesced (shooting
    /// the large translation down), and stop counting it. Returns the
    /// cycles charged.
    #[allow(clippy::too_many_arguments)]
    pub fn before_unmap(
        &mut self,
        va: u64,
        asid: Asid,
        pfn: Pfn,
        size: PageSize,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> u64 {
        if size < PageSize::Size2M {
            for f in pfn.0..pfn.0 + (1 << size.order()) {
                self.mark(f, false);
            }
        }
        self.splinter(va, asid, pt, mem, walker, tlbs)
    }

    /// Splinter the coalesced region holding `va` of `asid`, if it is one:
    /// clear its bits, shoot its large translation down, and unmap and free
    /// its held pages. Returns the cycles charged (0 when it was not
    /// coalesced).
    pub fn splinter(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker, tlbs: &mut impl Shootdown) -> u64 {
        let frame = pt.translate(mem, asid, va).map(|(pfn, _)| (pfn.0 / PIECES) as u32);
        if !pt.splinter(mem, asid, va, PageSize::Size2M) {
            return 0;
        }
        walker.flush_pscs();
        let region = va & !((PIECES << BASE_SHIFT) - 1);
        tlbs.shoot_down(region, PageSize::Size2M, asid);
        if let Some((owner, vas)) = frame.and_then(|f| self.held.remove(&f)) {
            for v in vas {
                let leaf = pt.unmap(mem, owner, v).expect("a held page stays mapped until its region splinters");
                tlbs.shoot_down(v, PageSize::Size4K, owner);
                mem.free_page(Pfn(leaf.pfn_base));
                self.stats.pages_released += 1;
            }
        }
        self.stats.splintered += 1;
        self.stats.splinter_cycles += self.spec.splinter_cycles;
        self.large_pages -= 1;
        self.spec.splinter_cycles
    }

    pub fn visit(&self, v: &mut dyn crate::stats::StatVisitor) {
        use crate::stats::StatGroup;
        self.stats.visit(v);
        v.gauge("large_pages", self.large_pages, "pages", "2 MiB regions coalesced now");
        v.gauge("pages_held", self.held_pages(), "pages", "freed base pages still inside coalesced regions (unusable until they splinter)");
    }
}
