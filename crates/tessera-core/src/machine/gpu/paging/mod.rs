//! The GPU's fault path: what happens between a walk finding a page not
//! present and the page being usable. A family (`gpu.paging`), so the
//! unified-memory fault buffer with batches is one more member:
//!
//! - `demand`: a far fault per page on first touch, serviced one at a time
//!   over PCIe (the Mosaic paper's demand paging, §3.2 and §5);
//! - `resident`: every allocation is mapped before the first kernel; a page
//!   outside every allocation is mapped at no cost.
//!
//! ## The seam
//! The machine maps the page at once (the OS's choice of frame and size is
//! the memory system's, [`crate::memsys::MemorySystem::service_fault`]) and
//! asks the path when the page becomes usable: [`FaultPath::raise`] answers
//! with a cycle, or with `None` when the path decides later (a batch that
//! has not begun), in which case the machine polls it at
//! [`FaultPath::next_poll`] and [`FaultPath::poll`] hands back the pages
//! whose wait is over. Faults on a page already in flight never reach the
//! path: the machine coalesces them.

pub mod demand;
pub mod prefetch;
pub mod resident;

use crate::addr::{Asid, PageSize};

/// One far fault: a page of `size` at `va` (its first byte) in `asid`,
/// raised for the machine's L2 TLB miss `miss`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct FarFault {
    pub asid: Asid,
    pub va: u64,
    pub size: PageSize,
    pub miss: u32,
}

/// What the machine hands a fault path when building it.
#[derive(Clone, Debug)]
pub struct PagingCtx {
    /// Core clock, for microsecond settings.
    pub clock_ghz: f64,
}

impl PagingCtx {
    pub fn cycles_of_us(&self, us: f64) -> u64 {
        (us * 1000.0 * self.clock_ghz).round() as u64
    }
}

/// A member of the fault-path family.
pub trait FaultPath {
    /// Whether every allocation is mapped before the first kernel.
    fn premaps(&self) -> bool;
    /// A far fault raised at cycle `now`: the cycle its page is usable, or
    /// `None` if the path will hand it back through [`FaultPath::poll`].
    fn raise(&mut self, fault: FarFault, now: u64) -> Option<u64>;
    /// The next cycle at which the path wants to be polled, if any.
    fn next_poll(&self) -> Option<u64>;
    /// Faults whose pages are usable at `now`, appended to `done`.
    fn poll(&mut self, now: u64, done: &mut Vec<FarFault>);
    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor);
}
