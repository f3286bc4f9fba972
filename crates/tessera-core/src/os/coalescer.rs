//! The runtime half of Mosaic's in-place coalescer (the policy is
//! [`crate::page_size::in_place`]; the page-table bits are
//! [`crate::pagetable::coalesce`]).
//!
//! It counts usable 4 KiB pages per 2 MiB physical frame. The 512th makes
//! it try the page table's coalesce for that page's region, which checks
//! that the region is exactly that frame in order. Before a page of a
//! coalesced region is unmapped, the region is splintered and its large
//! translation shot down.

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
    }
}

#[derive(Clone, Debug)]
pub struct Coalescer {
    spec: InPlace,
    /// Usable 4 KiB data pages per 2 MiB frame.
    usable: Vec<u16>,
    stats: CoalescerStats,
    large_pages: u64,
}

impl Coalescer {
    pub fn new(spec: InPlace, capacity_frames: u64) -> Coalescer {
        Coalescer { spec, usable: vec![0; capacity_frames.div_ceil(PIECES) as usize], stats: CoalescerStats::default(), large_pages: 0 }
    }

    /// The 4 KiB page at `va` of `asid` is usable: count it, and coalesce
    /// its region if that fills its frame. True when it coalesced.
    pub fn page_usable(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker) -> bool {
        let Some((pfn, PageSize::Size4K)) = pt.translate(mem, asid, va) else { return false };
        let n = &mut self.usable[(pfn.0 / PIECES) as usize];
        debug_assert!((*n as u64) < PIECES, "frame {:#x} counted usable more than 512 times", pfn.0 / PIECES);
        *n += 1;
        if (*n as u64) < PIECES {
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

    /// The 4 KiB page at `va` of `asid`, in frame `pfn`, is about to be
    /// unmapped: splinter its region first if it is coalesced (shooting the
    /// large translation down), and stop counting it. Returns the cycles
    /// charged.
    #[allow(clippy::too_many_arguments)]
    pub fn before_unmap(
        &mut self,
        va: u64,
        asid: Asid,
        pfn: Pfn,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        walker: &mut Walker,
        tlbs: &mut impl Shootdown,
    ) -> u64 {
        let n = &mut self.usable[(pfn.0 / PIECES) as usize];
        *n = n.saturating_sub(1);
        self.splinter(va, asid, pt, mem, walker, tlbs)
    }

    /// Splinter the coalesced region holding `va` of `asid`, if it is one:
    /// clear its bits and shoot its large translation down. Returns the
    /// cycles charged (0 when it was not coalesced).
    pub fn splinter(&mut self, va: u64, asid: Asid, pt: &mut PageTable, mem: &mut PhysMem, walker: &mut Walker, tlbs: &mut impl Shootdown) -> u64 {
        if !pt.splinter(mem, asid, va, PageSize::Size2M) {
            return 0;
        }
        walker.flush_pscs();
        let region = va & !((PIECES << BASE_SHIFT) - 1);
        tlbs.shoot_down(region, PageSize::Size2M, asid);
        self.stats.splintered += 1;
        self.stats.splinter_cycles += self.spec.splinter_cycles;
        self.large_pages -= 1;
        self.spec.splinter_cycles
    }

    pub fn visit(&self, v: &mut dyn crate::stats::StatVisitor) {
        use crate::stats::StatGroup;
        self.stats.visit(v);
        v.gauge("large_pages", self.large_pages, "pages", "2 MiB regions coalesced now");
    }
}
