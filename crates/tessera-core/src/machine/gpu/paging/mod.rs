//! The GPU's fault path: what happens between a walk finding a page not
//! present and the page being usable. A family (`gpu.paging`), so the
//! unified-memory fault buffer with batches is one more member:
//!
//! - `demand`: a far fault per page on first touch, serviced one at a time
//!   over PCIe (the Mosaic paper's demand paging, §3.2 and §5);
//! - `resident`: every allocation is mapped before the first kernel; a page
//!   outside every allocation is mapped at no cost;
//! - `uvm`: unified memory with a fault buffer and batches, prefetching
//!   ([`prefetch`]) and eviction under oversubscription (the batch-aware
//!   paper's baseline, and its unobtrusive eviction), with PCIe compression
//!   and ETC's parts as options. Its memory-aware throttling reaches the
//!   machine through [`FaultPath::throttle`], and capacity compression's
//!   cost through [`FaultPath::decompress_cycles`].
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
pub mod uvm;

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
    /// Sub-seed for paths that draw random numbers.
    pub seed: u64,
}

impl PagingCtx {
    /// A context at `clock_ghz` with seed 0 (tests).
    pub fn at(clock_ghz: f64) -> PagingCtx {
        PagingCtx { clock_ghz, seed: 0 }
    }

    pub fn cycles_of_us(&self, us: f64) -> u64 {
        (us * 1000.0 * self.clock_ghz).round() as u64
    }
}

/// What a path that maps pages itself asks of the machine.
pub trait PagingHost {
    /// Map the unit of `bytes` at `va` in `asid` now (each of its pages
    /// inside an allocation; all of them if none is), first evicting pages
    /// while the GPU's memory has no room for it; pages the OS evicted are
    /// appended to `evicted`. Accesses to the unit wait until the path
    /// reports it done. Returns the bytes newly mapped.
    fn migrate(&mut self, asid: Asid, va: u64, bytes: u64, evicted: &mut Vec<crate::os::Evicted>) -> crate::error::Result<u64>;
    /// The unit's transfer ended: its waiting accesses are about to use it,
    /// so an eviction policy driven by use counts it used now (MacSim puts a
    /// page at the head of its LRU list when it is mapped, at its arrival).
    fn arrived(&mut self, asid: Asid, va: u64, bytes: u64);
    /// Evict one page now (the eviction policy's victim), appended to `evicted`.
    fn evict_one(&mut self, evicted: &mut Vec<crate::os::Evicted>) -> crate::error::Result<()>;
    /// Bytes of data mapped on the GPU.
    fn resident_bytes(&self) -> u64;
    /// Whether mapping `bytes` more would need an eviction.
    fn full(&self, bytes: u64) -> bool;
    /// Whether the page at `va` of `asid` is mapped (resident or migrating).
    fn resident(&self, asid: Asid, va: u64) -> bool;
    /// Whether `bytes` at `va` of `asid` overlap one of its live allocations.
    fn allocated(&self, asid: Asid, va: u64, bytes: u64) -> bool;
    /// The SMs running application `asid` (`None`: every SM of the GPU).
    fn sms(&self, _asid: Option<Asid>) -> u32 {
        0
    }
    /// A TLB shootdown reaches the SMs of `asid` (`None`: every SM): they
    /// issue nothing from now until `until`. Returns the SM-cycles of stall
    /// it added (time an SM was already stalled for is not counted again).
    fn stall_sms(&mut self, _asid: Option<Asid>, _until: u64) -> u64 {
        0
    }
}

/// A member of the fault-path family.
pub trait FaultPath {
    /// Whether every allocation is mapped before the first kernel.
    fn premaps(&self) -> bool;
    /// The migration unit of a path that maps pages itself (see the module
    /// docs); `None` when the machine maps at the fault.
    fn unit(&self) -> Option<PageSize>;
    /// GPU memory as a share of the applications' footprint (1: all fits).
    fn memory(&self) -> f64;
    /// A far fault raised at cycle `now`: the cycle its page is usable, or
    /// `None` if the path will hand it back through [`FaultPath::poll`].
    fn raise(&mut self, fault: FarFault, now: u64) -> Option<u64>;
    /// The next cycle at which the path wants to be polled, if any.
    fn next_poll(&self) -> Option<u64>;
    /// Faults whose pages are usable at `now`, appended to `done`; a path
    /// that maps pages itself does it through `host`.
    fn poll(&mut self, now: u64, host: &mut dyn PagingHost, done: &mut Vec<FarFault>) -> crate::error::Result<()>;
    /// Page lifetimes so far: cycles from each evicted unit's arrival to
    /// its eviction, summed, and the units counted (thread
    /// oversubscription's degree control reads them).
    fn lifetimes(&self) -> (u64, u64) {
        (0, 0)
    }
    /// Memory-aware throttling: `None` when the path never throttles;
    /// otherwise whether half of each application's SMs are to stop now (they
    /// issue nothing and take no new thread blocks). It changes only at
    /// cycles the path asked to be polled at; the machine reads it after
    /// every poll.
    fn throttle(&self) -> Option<bool> {
        None
    }
    /// Cycles every DRAM read of data pays on top of the DRAM's latency
    /// (capacity compression's decompression); 0 for most paths.
    fn decompress_cycles(&self) -> u64 {
        0
    }
    /// Whether the path stalls SMs through [`PagingHost::stall_sms`] (the
    /// machine then reports each application's stall).
    fn stalls_sms(&self) -> bool {
        false
    }
    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor);
}
