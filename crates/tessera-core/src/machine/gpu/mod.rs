//! The GPU machine (`machine.kind = "gpu"`): SMs running thousands of
//! warps over one memory system, with per-SM and shared TLBs, MSHRs, a
//! highly threaded page-table walker, caches, DRAM and demand paging.
//!
//! ## What it models
//! An event-driven machine: events ([`events::Event`]) run in (cycle,
//! sequence) order. Each SM issues up to `issue_width` warp instructions
//! per cycle from its ready warps ([`sm`]: GTO or loose round-robin). A
//! warp runs its instruction stream in order and waits:
//! - after an ALU or branch instruction `alu_cycles`, after an SFU one
//!   `sfu_cycles` (dependencies are not in the streams: a warp is modelled
//!   as needing each result before its next instruction);
//! - at a barrier, until every live warp of its block arrives;
//! - on a global load or atomic, until every line it touches is back: its
//!   lanes are coalesced into 4 KiB pages and 128-byte lines; each page is
//!   translated (L1 TLB; on a miss the SM's MSHRs, then the shared L2 TLB
//!   after its latency and ports; on a miss there the L2 MSHRs and the
//!   walker), and each page's lines go to memory ([`memory`]) when its
//!   translation arrives;
//! - on a global store, until its pages are translated (the data is
//!   written through to the L2 without the warp waiting).
//!
//! The walker ([`walkers`]) keeps `gpu.walker.concurrent` walks in flight,
//! queueing the rest. A walk is the memory system's walk cursor: each
//! reference is made through the shared L2 cache and DRAM, and the walk
//! reads the entry when the reference is served. A walk that finds the page
//! not present raises a far fault: the OS maps the page at once, the fault
//! path ([`paging`]) says when it is usable, and the access walks again
//! then (the replay). Accesses to a page in flight wait for it.
//!
//! Latency is hidden because other warps issue while some wait; when TLB
//! misses and faults pile up, no warp is ready and the SM idles. Nothing
//! here is a formula for that.
//!
//! ## Choices where the papers are silent
//! - The GPU does not track dirty bits: walks are made as reads.
//! - A kernel's thread blocks go to its application's SMs in launch order,
//!   as they free up; the next kernel starts when the last block of the
//!   previous one ends (no overlap of kernels of one application).
//! - An application's IPC is over its own run, from cycle 0 to its last
//!   instruction; the run ends when every application has.
//! - See also the choices of [`memory`], [`tlbs`] and [`paging`].
//!
//! ## Stats
//! Under `gpu.`: `cycles`; per application `apps.<i>.{warp_instructions,
//! thread_instructions, cycles, kernels}` (and derived `ipc`,
//! `thread_ipc`); warp stall cycles `stall.{memory, tlb, walk, far_fault}`
//! and SM `sm.{issue_cycles, idle_cycles}`; `l1_tlb.*` (all SMs), `l2_tlb.*`,
//! `walker.*`, `paging.*`, `l1d.*`, `l2.*`, `dram.*`, `bloat.*`; and the
//! memory system's `walker.*`, `physmem.*`, `pagetable.*`, `os.*`.

pub mod events;
pub mod memory;
pub mod paging;
mod throttle;
pub mod sm;
pub mod spec;
pub mod thread_oversubscription;
mod switching;
pub mod tlbs;
pub mod walkers;

use rustc_hash::FxHashMap;

use self::events::{Event, EventQueue};
use self::memory::GpuMemory;
use self::paging::{FarFault, FaultPath, PagingCtx, PagingHost};
use self::sm::{Sm, Warp};
use self::spec::GpuSpec;
use self::thread_oversubscription::ToControl;
use self::tlbs::{Mshrs, Shootdowns, TlbLevel};
use self::walkers::{MissState, Walkers};
use crate::addr::{Asid, PageSize};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::memsys::{MemorySystem, Shootdown};
use crate::pagetable::format::PageTableFormat;
use crate::registry::{AnyFaultPath, AnyFormat, FormatVisitor, Member};
use crate::stats::{Collector, Prefixed, StatVisitor, Stats};
use crate::walker::{WalkResult, WalkStart};
use crate::workload::gpu::freeing::{After, Free};
use crate::workload::gpu::{Kernel, KernelSource, Op, Space};

/// What a warp's memory instruction waited on, worst last (its stall is
/// counted under the worst thing any of its pages met).
pub const REASONS: [&str; 4] = ["memory", "tlb", "walk", "far_fault"];
const R_TLB: u8 = 1;
const R_WALK: u8 = 2;
const R_FAULT: u8 = 3;

/// One application: its kernels and where it runs.
pub struct GpuApp {
    pub name: String,
    pub source: Box<dyn KernelSource>,
}

/// A waiter on an L1 TLB miss: a warp's page (index into its coalesced pages).
#[derive(Copy, Clone, Debug)]
struct PageWaiter {
    warp: u32,
    page: u8,
}

/// Per-application state.
struct App {
    name: String,
    asid: Asid,
    source: Box<dyn KernelSource>,
    kernel: Option<Kernel>,
    next_block: usize,
    blocks_running: u32,
    sms: std::ops::Range<u32>,
    kernels: u64,
    warp_insts: u64,
    thread_insts: u64,
    end: u64,
    done: bool,
    /// Per allocation: (base, covered bytes, bitmap of touched 4 KiB pages).
    touched: Vec<(u64, u64, Vec<u64>)>,
    mapped: [u64; PageSize::COUNT],
    /// The application's free schedule, and which of its buffers are freed.
    frees: Vec<Free>,
    freed: Vec<bool>,
    freed_bytes: u64,
    /// SM-cycles its SMs could not issue for TLB shootdowns.
    shootdown_stall: u64,
}

impl App {
    /// Mark `va`'s 4 KiB page touched.
    #[inline]
    fn touch(&mut self, va: u64) {
        for (base, bytes, bits) in &mut self.touched {
            if va >= *base && va - *base < *bytes {
                let p = (va - *base) >> 12;
                bits[(p / 64) as usize] |= 1 << (p % 64);
                return;
            }
        }
    }

    /// Whether `bytes` at `va` overlap one of the application's buffers not freed.
    fn live_allocation(&self, va: u64, bytes: u64) -> bool {
        self.source.allocations().iter().zip(&self.freed).any(|(al, &gone)| !gone && al.base < va + bytes && va < al.base + al.covered())
    }

    fn touched_bytes(&self) -> u64 {
        self.touched.iter().flat_map(|(_, _, b)| b).map(|w| w.count_ones() as u64).sum::<u64>() * 4096
    }
}

/// A page (or migration unit) whose far fault is being serviced.
#[derive(Clone, Debug)]
struct InFlight {
    /// Cycle it is usable (`u64::MAX` until its path says).
    ready: u64,
    /// L2 TLB misses waiting for it (paths with a migration unit).
    waiters: Vec<u32>,
}

/// What a fault path that maps pages itself reaches of the machine.
struct Host<'a> {
    sys: &'a mut MemorySystem,
    l1: &'a mut [TlbLevel],
    l2: &'a mut TlbLevel,
    log: &'a mut Shootdowns,
    now: u64,
    apps: &'a mut [App],
    in_flight: &'a mut FxHashMap<(Asid, u64), InFlight>,
    /// Frames of data the GPU's memory holds (`gpu.paging.memory` below 1).
    capacity: Option<u64>,
    /// The OS's eviction policy counts uses.
    touches: bool,
    /// Per SM: no issue before this cycle (a TLB shootdown reached it).
    shot_until: &'a mut [u64],
    sm_apps: &'a [Sm],
}

impl Host<'_> {
    fn resident_frames(&self) -> u64 {
        self.sys.resident_frames().unwrap_or(0)
    }
}

impl PagingHost for Host<'_> {
    fn migrate(&mut self, asid: Asid, va: u64, bytes: u64, evicted: &mut Vec<crate::os::Evicted>) -> Result<u64> {
        let a = asid as usize - 1;
        let inside = |p: u64| self.apps[a].live_allocation(p, 4096);
        let mut pages: Vec<u64> = (0..bytes / 4096).map(|i| va + i * 4096).filter(|&p| inside(p)).collect();
        if pages.is_empty() {
            pages.extend((0..bytes / 4096).map(|i| va + i * 4096));
        }
        let need = pages.iter().filter(|&&p| self.sys.peek(p, asid).is_none()).count() as u64;
        if let Some(cap) = self.capacity {
            while self.resident_frames() + need > cap {
                let mut tlbs = GpuTlbs { l1: self.l1, l2: self.l2, log: self.log, now: self.now };
                if self.sys.evict_victim(&mut tlbs)?.is_none() {
                    break;
                }
            }
        }
        let mut mapped = 0;
        for p in pages {
            if self.sys.peek(p, asid).is_some() {
                continue;
            }
            let mut tlbs = GpuTlbs { l1: self.l1, l2: self.l2, log: self.log, now: self.now };
            self.sys.service_fault(p, asid, &mut tlbs)?;
            let (_, size) = self.sys.peek(p, asid).expect("the OS just mapped it");
            self.apps[a].mapped[size.index()] += 1;
            mapped += size.bytes();
        }
        self.in_flight.entry((asid, va)).or_insert(InFlight { ready: u64::MAX, waiters: Vec::new() });
        self.sys.take_evicted(evicted);
        Ok(mapped)
    }

    fn arrived(&mut self, asid: Asid, va: u64, bytes: u64) {
        if !self.touches {
            return;
        }
        let mut p = va;
        while p < va + bytes {
            let Some((pfn, size)) = self.sys.peek(p, asid) else {
                p += 4096;
                continue;
            };
            let page = p & !(size.bytes() - 1);
            // `peek` gives the frame of `p`; the policy knows a page by its first frame.
            let first = pfn - ((p - page) >> 12);
            let mut tlbs = GpuTlbs { l1: self.l1, l2: self.l2, log: self.log, now: self.now };
            self.sys.touched(first, &mut tlbs);
            p = page + size.bytes();
        }
    }

    fn evict_one(&mut self, evicted: &mut Vec<crate::os::Evicted>) -> Result<()> {
        let mut tlbs = GpuTlbs { l1: self.l1, l2: self.l2, log: self.log, now: self.now };
        self.sys.evict_victim(&mut tlbs)?;
        self.sys.take_evicted(evicted);
        Ok(())
    }

    fn resident_bytes(&self) -> u64 {
        self.resident_frames() * 4096
    }

    fn full(&self, bytes: u64) -> bool {
        self.capacity.is_some_and(|c| self.resident_frames() + bytes.div_ceil(4096) > c)
    }

    fn resident(&self, asid: Asid, va: u64) -> bool {
        self.sys.peek(va, asid).is_some()
    }

    fn allocated(&self, asid: Asid, va: u64, bytes: u64) -> bool {
        self.apps[asid as usize - 1].live_allocation(va, bytes)
    }

    fn sms(&self, asid: Option<Asid>) -> u32 {
        match asid {
            Some(a) => self.apps[a as usize - 1].sms.len() as u32,
            None => self.shot_until.len() as u32,
        }
    }

    fn stall_sms(&mut self, asid: Option<Asid>, until: u64) -> u64 {
        let range = match asid {
            Some(a) => self.apps[a as usize - 1].sms.clone(),
            None => 0..self.shot_until.len() as u32,
        };
        let mut added = 0;
        for s in range {
            let from = self.now.max(self.shot_until[s as usize]);
            if until > from {
                self.shot_until[s as usize] = until;
                added += until - from;
                // SMs an explicit split leaves idle run no application.
                if let Some(app) = self.apps.get_mut(self.sm_apps[s as usize].app as usize) {
                    app.shootdown_stall += until - from;
                }
            }
        }
        added
    }
}

/// Bytes of the distinct units of `unit_bytes` the applications' allocations cover.
fn footprint(apps: &[GpuApp], unit_bytes: u64) -> u64 {
    let mut total = 0;
    for a in apps {
        let mut spans: Vec<(u64, u64)> =
            a.source.allocations().iter().map(|al| (al.base / unit_bytes, (al.base + al.covered()).div_ceil(unit_bytes))).collect();
        spans.sort_unstable();
        let mut end = 0;
        for (lo, hi) in spans {
            let lo = lo.max(end);
            if hi > lo {
                total += (hi - lo) * unit_bytes;
            }
            end = end.max(hi);
        }
    }
    total
}

/// A thread block resident on an SM.
#[derive(Clone, Debug, Default)]
struct BlockSlot {
    app: u16,
    live_warps: u32,
    at_barrier: u32,
    warps: Vec<u32>,
    threads: u32,
    regs: u32,
    shmem: u32,
    /// Thread oversubscription: switched out (or never yet run), has run,
    /// live warps waiting on a far fault, and dispatch order.
    inactive: bool,
    started: bool,
    faulted: u32,
    order: u64,
}

/// Machine-wide counters.
#[derive(Clone, Debug, Default)]
struct GpuStats {
    stall: [u64; 4],
}

/// Every TLB of the GPU, for the OS's shootdowns.
struct GpuTlbs<'a> {
    l1: &'a mut [TlbLevel],
    l2: &'a mut TlbLevel,
    log: &'a mut Shootdowns,
    now: u64,
}

impl Shootdown for GpuTlbs<'_> {
    fn shoot_down(&mut self, va: u64, size: PageSize, asid: Asid) -> u64 {
        self.log.record(self.now, asid, va, size);
        let mut n = self.l2.invalidate(asid, va, size);
        for t in self.l1.iter_mut() {
            n += t.invalidate(asid, va, size);
        }
        n
    }
}

pub struct GpuMachine {
    spec: Spec,
    gpu: GpuSpec,
    sys: MemorySystem,
    mem: GpuMemory,
    l1_tlbs: Vec<TlbLevel>,
    l2_tlb: TlbLevel,
    l1_mshrs: Vec<Mshrs<PageWaiter>>,
    l2_mshrs: Mshrs<(u32, u32)>,
    walkers: Walkers,
    shootdowns: Shootdowns,
    /// Stale fills dropped (their access translated again).
    stale_fills: u64,
    started: bool,
    paging: AnyFaultPath,
    /// Pages whose far fault is being serviced, by (asid, first byte): the
    /// page as mapped, or the path's migration unit.
    in_flight: FxHashMap<(Asid, u64), InFlight>,
    /// The fault path's migration unit, when it maps pages itself.
    unit: Option<PageSize>,
    /// Frames of data the GPU's memory holds, when smaller than the footprint.
    capacity: Option<u64>,
    /// Thread oversubscription's degree controller, when on.
    to: Option<ToControl>,
    /// The OS's eviction policy wants a touch per walk that translates.
    touches: bool,
    poll_at: Option<u64>,
    /// SMs memory-aware throttling stops (`gpu.paging.etc.throttling`).
    throttle: throttle::Throttle,
    sms: Vec<Sm>,
    warps: Vec<Warp>,
    blocks: Vec<BlockSlot>,
    apps: Vec<App>,
    events: EventQueue,
    now: u64,
    age: u64,
    stats: GpuStats,
    /// `gpu.ldst = "blocking"`: an L1 TLB miss holds the SM's load/store unit.
    blocking_ldst: bool,
    /// `gpu.block_dispatch = "round_robin"`: a launch gives each SM one block per round.
    round_robin: bool,
    /// No SM issues before this cycle (the OS compacting memory: CAC stalls the whole GPU).
    frozen_until: u64,
    /// Cycles the whole GPU stalled for compaction.
    compaction_stall: u64,
    /// Per SM: no issue before this cycle (an eviction's TLB shootdown reached it).
    shot_until: Vec<u64>,
    /// Reused buffers (no allocation per event in steady state).
    page_waiters: Vec<PageWaiter>,
    l1_waiters: Vec<(u32, u32)>,
    covered: Vec<u32>,
    faults_done: Vec<FarFault>,
    fault_l1s: Vec<(u32, u32)>,
    fault_warps: Vec<u32>,
    /// Pages in the order they missed the L2 TLB, and in the order their walks began (tests).
    #[cfg(test)]
    log: (Vec<(Asid, u64)>, Vec<(Asid, u64)>),
}

/// Whether warp `w`'s next instruction uses the load/store unit.
#[inline]
fn next_is_memory(apps: &[App], w: &Warp) -> bool {
    let Some(k) = apps[w.app as usize].kernel.as_ref() else { return false };
    k.blocks[w.block_index as usize].warps[w.index as usize]
        .insts
        .get(w.pc as usize)
        .is_some_and(|i| matches!(i.op, Op::Load | Op::Store | Op::Atomic))
}

/// The run loop for one page-table format, picked once.
struct RunPath;

impl FormatVisitor for RunPath {
    type Out = fn(&mut GpuMachine, u64) -> Result<bool>;
    fn visit<F: PageTableFormat + Member<AnyFormat>>(self, _: &F) -> Self::Out {
        GpuMachine::run_with::<F>
    }
}

impl GpuMachine {
    /// A GPU of `spec` running `apps` together, the SMs split among them.
    pub fn build(spec: &Spec, apps: Vec<GpuApp>, seed: u64) -> Result<GpuMachine> {
        let gpu = spec.gpu.as_deref().cloned().ok_or_else(|| Error::config("machine.kind", "a GPU machine needs a [gpu] section"))?;
        gpu.validate()?;
        let split = gpu.split(apps.len())?;
        let mut sys = MemorySystem::build(spec, seed)?.with_every_walk_reference();
        // The runtime's allocations, before any kernel touches them.
        for (i, a) in apps.iter().enumerate() {
            for al in a.source.allocations() {
                sys.hear_allocation(i as Asid + 1, al.base, al.covered());
            }
        }
        let mut mem = GpuMemory::build(&gpu, crate::rng::sub_seed(seed, "gpu"))?;
        let n = gpu.sms as usize;
        let l1_tlbs = (0..n).map(|_| TlbLevel::build(&gpu.l1_tlb, "gpu.l1_tlb", seed)).collect::<Result<Vec<_>>>()?;
        let l2_tlb = TlbLevel::build(&gpu.l2_tlb, "gpu.l2_tlb", seed)?;
        if sys.coalesces() && !l2_tlb.holds(PageSize::Size2M) && !l1_tlbs.first().is_some_and(|t| t.holds(PageSize::Size2M)) {
            return Err(Error::config(
                "gpu.l1_tlb.arrays",
                "in_place coalescing (physmem.page_size) makes 2 MiB pages, but neither gpu.l1_tlb nor gpu.l2_tlb has a \"2m\" array to hold them",
            ));
        }
        let paging = AnyFaultPath::build(&gpu.paging, &PagingCtx { clock_ghz: gpu.clock_ghz, seed: crate::rng::sub_seed(seed, "gpu.paging") }, "gpu.paging")?;
        let unit = paging.unit();
        mem.add_data_read_cycles(paging.decompress_cycles());
        let throttle = throttle::Throttle::new(paging.throttle().is_some(), n, &split);
        let capacity = if paging.memory() < 1.0 {
            if spec.os.swap.is_none() {
                return Err(Error::config(
                    "gpu.paging.memory",
                    "a GPU memory smaller than the footprint evicts pages to the host: add os.swap (e.g. { latency_cycles = 0 }; the fault path charges the PCIe transfers) and an os.eviction policy (default \"lru\")",
                ));
            }
            // Whole units: a part of one could hold nothing the path maps.
            let unit_bytes = unit.map_or(4096, PageSize::bytes);
            let units = (footprint(&apps, unit_bytes) as f64 / unit_bytes as f64 * paging.memory()).floor() as u64;
            Some(units.max(1) * (unit_bytes / 4096))
        } else {
            None
        };
        if let Some(u) = unit {
            sys.log_evictions(u.bytes());
        }
        let touches = sys.wants_touches();
        let mut sms = Vec::with_capacity(n);
        let mut first = 0;
        let mut app_states = Vec::new();
        for (i, (a, &count)) in apps.into_iter().zip(&split).enumerate() {
            for s in first..first + count {
                sms.push(Sm::new(s, i as u16, &gpu));
            }
            let touched = a
                .source
                .allocations()
                .iter()
                .map(|al| (al.base, al.covered(), vec![0u64; (al.covered().div_ceil(4096)).div_ceil(64) as usize]))
                .collect();
            app_states.push(App {
                name: a.name,
                asid: i as Asid + 1,
                kernel: None,
                next_block: 0,
                blocks_running: 0,
                sms: first..first + count,
                kernels: 0,
                warp_insts: 0,
                thread_insts: 0,
                end: 0,
                done: false,
                touched,
                mapped: [0; PageSize::COUNT],
                frees: a.source.frees().to_vec(),
                freed: vec![false; a.source.allocations().len()],
                freed_bytes: 0,
                shootdown_stall: 0,
                source: a.source,
            });
            first += count;
        }
        // SMs left over by an explicit split stay idle.
        for s in first..gpu.sms {
            sms.push(Sm::new(s, u16::MAX, &gpu));
        }
        let warps = (0..n * gpu.warp_slots() as usize).map(|_| Warp::default()).collect();
        let blocks = vec![BlockSlot::default(); n * gpu.block_slots() as usize];
        let to = gpu.thread_oversubscription.as_ref().map(ToControl::new);
        Ok(GpuMachine {
            blocking_ldst: gpu.ldst == "blocking",
            round_robin: gpu.block_dispatch == "round_robin",
            frozen_until: 0,
            compaction_stall: 0,
            shot_until: vec![0; n],
            spec: spec.clone(),
            walkers: Walkers::new(gpu.walker.concurrent),
            l1_mshrs: (0..n).map(|_| Mshrs::default()).collect(),
            gpu,
            sys,
            mem,
            l1_tlbs,
            l2_tlb,
            l2_mshrs: Mshrs::default(),
            shootdowns: Shootdowns::default(),
            stale_fills: 0,
            started: false,
            paging,
            in_flight: FxHashMap::default(),
            unit,
            capacity,
            to,
            touches,
            poll_at: None,
            throttle,
            sms,
            warps,
            blocks,
            apps: app_states,
            events: EventQueue::default(),
            now: 0,
            age: 0,
            stats: GpuStats::default(),
            page_waiters: Vec::new(),
            l1_waiters: Vec::new(),
            covered: Vec::new(),
            faults_done: Vec::new(),
            fault_l1s: Vec::new(),
            fault_warps: Vec::new(),
            #[cfg(test)]
            log: Default::default(),
        })
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Run every application to its end.
    pub fn run(&mut self) -> Result<()> {
        self.run_until(u64::MAX).map(|_| ())
    }

    /// Run the events of cycles before `cycle`; true once every
    /// application has ended.
    pub fn run_until(&mut self, cycle: u64) -> Result<bool> {
        let run = self.sys.page_table().format().visit(RunPath);
        run(self, cycle)
    }

    /// Shoot the page of `size` at `va` in `asid` down from every TLB (the
    /// L2 TLB and every SM's L1 TLB) now; a walk of it in flight is not
    /// filled. Returns the entries removed. For mechanisms that move or
    /// unmap pages (compaction, eviction).
    pub fn shoot_down(&mut self, va: u64, size: PageSize, asid: Asid) -> u64 {
        GpuTlbs { l1: &mut self.l1_tlbs, l2: &mut self.l2_tlb, log: &mut self.shootdowns, now: self.now }.shoot_down(va, size, asid)
    }

    /// Splinter application `app`'s coalesced 2 MiB region holding `va`
    /// now, shooting its large translation down from every TLB; the cycles
    /// the invalidations cost (0 when it was not coalesced).
    pub fn splinter(&mut self, app: usize, va: u64) -> u64 {
        let asid = self.apps[app].asid;
        let mut tlbs = GpuTlbs { l1: &mut self.l1_tlbs, l2: &mut self.l2_tlb, log: &mut self.shootdowns, now: self.now };
        self.sys.splinter(va, asid, &mut tlbs)
    }

    fn run_with<F: PageTableFormat + Member<AnyFormat>>(&mut self, until: u64) -> Result<bool> {
        if !self.started {
            self.started = true;
            if self.paging.premaps() {
                for a in 0..self.apps.len() {
                    self.premap(a)?;
                }
            }
            for a in 0..self.apps.len() {
                self.next_kernel(a, 0)?;
            }
            if let Some(to) = self.to.as_ref().filter(|to| to.spec.adaptive) {
                self.events.at(to.spec.epoch_cycles, Event::ToEpoch);
            }
        }
        while let Some((t, e)) = self.events.pop_before(until) {
            debug_assert!(t >= self.now, "event at {t} before now {}", self.now);
            self.now = t;
            match e {
                Event::SmTick(s) => self.tick::<F>(s, t)?,
                Event::L2Tlb(s, id) => self.l2_tlb_lookup::<F>(s, id, t)?,
                Event::WalkRef(slot) => self.walk_ref::<F>(slot, t)?,
                Event::FaultServiced(m) => {
                    let asid = self.l2_mshrs.get(m).asid;
                    let (page_va, _, size) = self.walkers.waiting(m);
                    let key = self.flight_key(asid, page_va, size);
                    self.in_flight.remove(&key);
                    if size < PageSize::Size2M {
                        self.sys.page_usable(page_va, asid);
                    }
                    self.walkers.set_state(m, MissState::Queued { since: t });
                    self.enqueue_walk::<F>(m, t)?;
                }
                Event::Deliver(m) => {
                    let (_, pfn_base, size) = self.walkers.waiting(m);
                    self.translated(m, pfn_base, size, t);
                }
                Event::ToEpoch => self.to_epoch(t),
                Event::FaultPoll => {
                    self.poll_at = None;
                    let mut done = std::mem::take(&mut self.faults_done);
                    done.clear();
                    {
                        let mut host = Host {
                            sys: &mut self.sys,
                            l1: &mut self.l1_tlbs,
                            l2: &mut self.l2_tlb,
                            log: &mut self.shootdowns,
                            now: t,
                            apps: &mut self.apps,
                            in_flight: &mut self.in_flight,
                            capacity: self.capacity,
                            touches: self.touches,
                            shot_until: &mut self.shot_until,
                            sm_apps: &self.sms,
                        };
                        self.paging.poll(t, &mut host, &mut done)?;
                    }
                    self.sync_throttle(t);
                    self.stall_for_compaction(t);
                    for f in &done {
                        let Some(flight) = self.in_flight.remove(&(f.asid, f.va)) else { continue };
                        if f.size < PageSize::Size2M && self.sys.peek(f.va, f.asid).is_some() {
                            self.sys.page_usable(f.va, f.asid);
                        }
                        if self.unit.is_some() && self.sys.coalesces() {
                            self.unit_usable(f.asid, f.va, f.size.bytes());
                        }
                        if self.unit.is_none() {
                            self.walkers.set_state(f.miss, MissState::Queued { since: t });
                            self.enqueue_walk::<F>(f.miss, t)?;
                        }
                        // Every access waiting for the unit walks again (the replay).
                        for &m in &flight.waiters {
                            self.walkers.set_state(m, MissState::Queued { since: t });
                            self.enqueue_walk::<F>(m, t)?;
                        }
                    }
                    self.faults_done = done;
                }
            }
            if let Some(p) = self.paging.next_poll() {
                if self.poll_at.is_none_or(|q| p < q) {
                    self.poll_at = Some(p);
                    self.events.at(p.max(t), Event::FaultPoll);
                }
            }
        }
        if !self.events.is_empty() {
            return Ok(false);
        }
        if let Some(a) = self.apps.iter().find(|a| !a.done) {
            return Err(Error::Workload {
                name: a.name.clone(),
                msg: format!(
                    "the GPU stalled at cycle {} with work left (kernel {:?}): a barrier some warps never reach, or a fault never serviced",
                    self.now,
                    a.kernel.as_ref().map(|k| k.name.as_str())
                ),
            });
        }
        Ok(true)
    }

    /// A migrated unit of `bytes` at `va` arrived: the in-place coalescer
    /// counts every page of it mapped (a page counted before is not counted
    /// again), and promotes the 2 MiB region they fill.
    fn unit_usable(&mut self, asid: Asid, va: u64, bytes: u64) {
        let mut p = va;
        while p < va + bytes {
            match self.sys.mapped_page(p, asid) {
                Some(size) if size < PageSize::Size2M => {
                    self.sys.page_usable(p, asid);
                    p = (p & !(size.bytes() - 1)) + size.bytes();
                }
                _ => p += 4096,
            }
        }
    }

    /// Map every allocation of application `a` before its first kernel.
    fn premap(&mut self, a: usize) -> Result<()> {
        let asid = self.apps[a].asid;
        let ranges: Vec<(u64, u64)> = self.apps[a].source.allocations().iter().map(|al| (al.base, al.covered())).collect();
        for (base, bytes) in ranges {
            let mut va = base & !4095;
            while va < base + bytes {
                if self.sys.peek(va, asid).is_none() {
                    let mut tlbs = GpuTlbs { l1: &mut self.l1_tlbs, l2: &mut self.l2_tlb, log: &mut self.shootdowns, now: self.now };
                    self.sys.service_fault(va, asid, &mut tlbs)?;
                    self.stall_for_compaction(self.now);
                    let (_, size) = self.sys.peek(va, asid).expect("the OS just mapped it");
                    self.apps[a].mapped[size.index()] += 1;
                    if size < PageSize::Size2M {
                        self.sys.page_usable(va, asid);
                    }
                }
                va += 4096;
            }
        }
        Ok(())
    }

    /// The OS compacted memory while serving a fault at `t`: no SM issues
    /// until the copies are done (the paper's worst case: the whole GPU
    /// stalls). Requests already in flight go on.
    fn stall_for_compaction(&mut self, t: u64) {
        let c = self.sys.take_stall();
        if c > 0 {
            self.frozen_until = self.frozen_until.max(t) + c;
            self.compaction_stall += c;
        }
    }

    /// Start application `a`'s next kernel at `t`, or end the application.
    fn next_kernel(&mut self, a: usize, t: u64) -> Result<()> {
        let mut t = t;
        if let Some(id) = self.apps[a].kernel.as_ref().map(|k| k.id) {
            t += self.free_buffers(a, After::Kernel(id), t)?;
        }
        let app = &mut self.apps[a];
        let Some(k) = app.source.next_kernel()? else {
            app.kernel = None;
            app.done = true;
            app.end = t;
            self.free_buffers(a, After::End, t)?;
            return Ok(());
        };
        k.check(&format!("application {} ({})", a, app.name))?;
        let name = app.name.clone();
        self.fits(&k, &name)?;
        let app = &mut self.apps[a];
        app.kernels += 1;
        app.next_block = 0;
        app.kernel = Some(k);
        // Every SM's running slots first, then the inactive ones: an inactive
        // block must never take a block that another SM could run now (a grid
        // that fits the GPU leaves thread oversubscription nothing to switch).
        let sms = self.apps[a].sms.clone();
        // An SM memory-aware throttling stopped takes its blocks when it runs again.
        if self.round_robin {
            loop {
                let mut took = false;
                for s in sms.clone() {
                    if !self.throttle.stopped[s as usize] {
                        took |= self.start_block(s, true, t);
                    }
                }
                if !took {
                    break;
                }
            }
        } else {
            for s in sms.clone() {
                if !self.throttle.stopped[s as usize] {
                    self.dispatch_active(s, t);
                }
            }
        }
        if self.to.is_some() {
            for s in sms.clone() {
                if !self.throttle.stopped[s as usize] {
                    self.dispatch_inactive(s, t);
                }
            }
        }
        // A kernel with no thread blocks ends at once.
        if self.apps[a].blocks_running == 0 {
            return self.next_kernel(a, t);
        }
        Ok(())
    }

    /// Free application `a`'s buffers scheduled `after` (at the end: every
    /// buffer still scheduled) at `t`: each page they cover that no live
    /// buffer of the application shares. Returns the cycles the frees'
    /// splinters took, which delay the application's next kernel; CAC's
    /// work stalls every SM.
    fn free_buffers(&mut self, a: usize, after: After, t: u64) -> Result<u64> {
        let app = &mut self.apps[a];
        let mut any = false;
        for f in &app.frees {
            if !app.freed[f.allocation] && (f.after == after || after == After::End) {
                app.freed[f.allocation] = true;
                any = true;
            }
        }
        if !any {
            return Ok(0);
        }
        let asid = app.asid;
        let ranges: Vec<(u64, u64, bool)> = app.source.allocations().iter().zip(&app.freed).map(|(al, &gone)| (al.base, al.base + al.covered(), gone)).collect();
        let live = |lo: u64, hi: u64| ranges.iter().any(|&(b, e, gone)| !gone && b < hi && lo < e);
        let page_size = |sys: &MemorySystem, va: u64| sys.mapped_page(va, asid);
        let mut vas = Vec::new();
        for &(base, end, _) in ranges.iter().filter(|r| r.2) {
            let mut va = base & !4095;
            while va < end {
                let size = page_size(&self.sys, va).unwrap_or(PageSize::Size4K);
                let page = va & !(size.bytes() - 1);
                if !live(page, page + size.bytes()) {
                    vas.push(page);
                }
                va = page + size.bytes();
            }
        }
        // Buffers next to each other share their boundary pages.
        vas.sort_unstable();
        vas.dedup();
        let bytes: u64 = vas.iter().filter_map(|&va| page_size(&self.sys, va)).map(PageSize::bytes).sum();
        let mut tlbs = GpuTlbs { l1: &mut self.l1_tlbs, l2: &mut self.l2_tlb, log: &mut self.shootdowns, now: self.now };
        let cycles = self.sys.free(&vas, asid, &mut tlbs)?;
        self.apps[a].freed_bytes += bytes;
        self.stall_for_compaction(t);
        Ok(cycles)
    }

    /// Check that one thread block of `k` fits an empty SM.
    fn fits(&self, k: &Kernel, app: &str) -> Result<()> {
        let g = &self.gpu;
        let threads = k.threads_per_block();
        let need = [
            ("threads", threads as u64, g.max_threads_per_sm as u64, "gpu.max_threads_per_sm"),
            ("warps", k.warps_per_block() as u64, g.max_warps_per_sm as u64, "gpu.max_warps_per_sm"),
            ("registers", k.regs_per_thread as u64 * threads as u64, g.registers_per_sm as u64, "gpu.registers_per_sm"),
            ("bytes of shared memory", k.shmem_bytes as u64, g.shared_memory_per_sm.0, "gpu.shared_memory_per_sm"),
        ];
        for (what, n, have, key) in need {
            if n > have {
                return Err(Error::config(
                    key,
                    format!("kernel {} of {app} needs {n} {what} per thread block; an SM has {have}", k.name),
                ));
            }
        }
        Ok(())
    }

    /// Give SM `s` as many of its application's remaining blocks as fit
    /// (with thread oversubscription: inactive blocks first, then up to
    /// its degree of inactive blocks beyond them).
    fn dispatch(&mut self, s: u32, t: u64) {
        self.dispatch_active(s, t);
        self.dispatch_inactive(s, t);
    }

    /// Run SM `s`'s ready inactive blocks, then start new blocks running.
    fn dispatch_active(&mut self, s: u32, t: u64) {
        if self.to.is_some() {
            self.run_inactive(s, t);
        }
        while self.start_block(s, true, t) {}
    }

    /// Fill SM `s`'s spare slots with inactive blocks, up to the degree.
    fn dispatch_inactive(&mut self, s: u32, t: u64) {
        if let Some(to) = &self.to {
            let degree = to.degree;
            while self.sms[s as usize].inactive_blocks < degree && self.start_block(s, false, t) {}
        }
    }

    /// Start SM `s`'s application's next block at `t`, running (`active`)
    /// or inactive; whether there was one and it found room.
    fn start_block(&mut self, s: u32, active: bool, t: u64) -> bool {
        let a = self.sms[s as usize].app as usize;
        let app = &self.apps[a];
        let Some(k) = &app.kernel else { return false };
        if app.next_block >= k.blocks.len() {
            return false;
        }
        let threads = k.threads_per_block();
        let (warps, regs, shmem) = (k.warps_per_block(), k.regs_per_thread * threads, k.shmem_bytes);
        let b = app.next_block;
        let block = &k.blocks[b];
        let sm = &mut self.sms[s as usize];
        let fits = if active { sm.has_room(warps, threads, regs, shmem) } else { !block.warps.is_empty() && sm.has_slots(warps) };
        if !fits {
            return false;
        }
        let slot = sm.take_block(active, block.warps.len() as u32, threads, regs, shmem);
        let mut ids = std::mem::take(&mut self.blocks[slot as usize].warps);
        ids.clear();
        for w in 0..block.warps.len() {
            let id = sm.take_warp();
            self.age += 1;
            let warp = &mut self.warps[id as usize];
            warp.start(a as u16, s, slot, b as u32, w as u32, t, self.age);
            if !active {
                warp.park();
            }
            ids.push(id);
        }
        let live = ids.len() as u32;
        self.blocks[slot as usize] = BlockSlot {
            app: a as u16,
            live_warps: live,
            at_barrier: 0,
            warps: ids,
            threads,
            regs,
            shmem,
            inactive: !active,
            started: active,
            faulted: 0,
            order: self.age,
        };
        self.apps[a].next_block += 1;
        self.apps[a].blocks_running += 1;
        self.sms[s as usize].warps_resident(live, t);
        if !active {
            if let Some(to) = &mut self.to {
                to.stats.inactive_dispatched += 1;
            }
            return true;
        }
        if live == 0 {
            self.block_done(s, slot, t);
            return true;
        }
        self.wake(s, t);
        true
    }

    /// Make SM `s` look for ready warps at `t` (unless it already will sooner).
    #[inline]
    fn wake(&mut self, s: u32, t: u64) {
        let sm = &mut self.sms[s as usize];
        if t < sm.next_tick {
            sm.next_tick = t;
            self.events.at(t, Event::SmTick(s));
        }
    }

    /// SM `s` issues at `t`.
    fn tick<F: PageTableFormat + Member<AnyFormat>>(&mut self, s: u32, t: u64) -> Result<()> {
        if self.sms[s as usize].next_tick != t {
            return Ok(()); // superseded by an earlier tick
        }
        self.sms[s as usize].next_tick = u64::MAX;
        if self.throttle.stopped[s as usize] {
            return Ok(()); // woken when memory-aware throttling lets it run again
        }
        if t < self.frozen_until {
            self.wake(s, self.frozen_until);
            return Ok(());
        }
        let shot = self.shot_until[s as usize];
        if t < shot {
            self.wake(s, shot);
            return Ok(());
        }
        let mut issued = 0;
        while issued < self.gpu.issue_width {
            let sm = &mut self.sms[s as usize];
            let picked = if sm.ldst_hold.is_some() {
                // A held load/store unit: only warps whose next instruction is not a memory access issue.
                let (apps, warps) = (&self.apps, &self.warps);
                sm.pick(warps, t, |w| !next_is_memory(apps, &warps[w as usize]))
            } else {
                sm.pick(&self.warps, t, |_| true)
            };
            let Some(w) = picked else { break };
            self.issue(s, w, t)?;
            issued += 1;
        }
        if issued > 0 {
            self.sms[s as usize].issue_cycles += 1;
        }
        let sm = &self.sms[s as usize];
        // Warps a held unit skips are woken when it is released.
        let next = if sm.ldst_hold.is_some() {
            let (apps, warps) = (&self.apps, &self.warps);
            sm.next_ready(warps, |w| !next_is_memory(apps, &warps[w as usize]))
        } else {
            sm.next_ready(&self.warps, |_| true)
        };
        if let Some(next) = next {
            self.wake(s, next.max(t + 1));
        }
        Ok(())
    }

    /// Warp `w` of SM `s` issues its next instruction at `t`.
    fn issue(&mut self, s: u32, w: u32, t: u64) -> Result<()> {
        let warp = &self.warps[w as usize];
        let a = warp.app as usize;
        let app = &self.apps[a];
        let trace = &app.kernel.as_ref().expect("a warp runs a kernel").blocks[warp.block_index as usize].warps[warp.index as usize];
        let Some(&inst) = trace.insts.get(warp.pc as usize) else {
            // A stream that ends without EXIT ends there.
            return self.exit(s, w, t);
        };
        let app = &mut self.apps[a];
        app.warp_insts += 1;
        app.thread_insts += inst.lanes() as u64;
        let g = &self.gpu;
        let warp = &mut self.warps[w as usize];
        warp.pc += 1;
        match inst.op {
            Op::Alu | Op::Branch => warp.ready_at = t + g.alu_cycles,
            Op::Sfu => warp.ready_at = t + g.sfu_cycles,
            Op::Exit => return self.exit(s, w, t),
            Op::Barrier => return self.barrier(s, w, t),
            Op::Load | Op::Store | Op::Atomic => {
                let n = inst.addr_count();
                let at = warp.addr_at as usize;
                warp.addr_at += n as u32;
                if !inst.space.translated() {
                    warp.ready_at = if inst.op == Op::Store { t + g.alu_cycles } else { t + g.shared_latency };
                    return Ok(());
                }
                debug_assert_eq!(inst.space, Space::Global);
                let trace = &self.apps[a].kernel.as_ref().expect("a warp runs a kernel").blocks[warp.block_index as usize].warps
                    [warp.index as usize];
                warp.coalesced.coalesce(inst.size, &trace.addrs[at..at + n]);
                let pages = warp.coalesced.pages().len();
                warp.pending = pages as u32;
                warp.op = inst.op;
                warp.issued_at = t;
                warp.done_at = t + g.alu_cycles;
                warp.reason = 0;
                warp.ready_at = u64::MAX;
                if self.blocking_ldst {
                    warp.next_page = 0;
                    self.advance_ldst(s, w, t);
                } else {
                    for i in 0..pages {
                        self.translate(s, w, i as u8, t);
                    }
                }
            }
        }
        Ok(())
    }

    /// Blocking load/store unit: warp `w`'s instruction translates its pages
    /// one after another from `next_page`; at the first that must wait, it
    /// holds SM `s`'s unit; when the last is translated, it lets go.
    fn advance_ldst(&mut self, s: u32, w: u32, t: u64) {
        let since = self.sms[s as usize].ldst_hold.take().map(|(_, since)| since);
        loop {
            let warp = &mut self.warps[w as usize];
            let i = warp.next_page;
            if i as usize == warp.coalesced.pages().len() {
                if let Some(since) = since {
                    self.sms[s as usize].ldst_held_cycles += t - since;
                    self.wake(s, t);
                }
                return;
            }
            warp.next_page += 1;
            if !self.translate(s, w, i, t) {
                self.sms[s as usize].ldst_hold = Some((w, since.unwrap_or(t)));
                return;
            }
        }
    }

    /// Page `i` of warp `w`'s memory instruction looks up SM `s`'s L1 TLB at
    /// `t`; whether it was translated at once (an L1 hit or the ideal TLB).
    fn translate(&mut self, s: u32, w: u32, i: u8, t: u64) -> bool {
        let warp = &self.warps[w as usize];
        let va = warp.coalesced.pages()[i as usize];
        let app = &mut self.apps[warp.app as usize];
        app.touch(va);
        let asid = app.asid;
        if self.gpu.ideal_tlb {
            if let Some((pfn, size)) = self.sys.peek(va, asid) {
                if !self.in_flight.contains_key(&self.flight_key(asid, va, size)) {
                    self.page_ready(w, i, pfn, size, t);
                    return true;
                }
            }
        }
        let l1 = &mut self.l1_tlbs[s as usize];
        let at = l1.port(t) + l1.latency;
        if let Some((pfn, size)) = l1.lookup(asid, va) {
            self.page_ready(w, i, pfn, size, at);
            return true;
        }
        let mshrs = &mut self.l1_mshrs[s as usize];
        let (id, merged) = mshrs.find_or_add(asid, va);
        mshrs.get_mut(id).waiters.push(PageWaiter { warp: w, page: i });
        if merged {
            l1.stats.mshr_merges += 1;
            if self.to.is_some() && mshrs.get(id).faulted {
                self.faulted_warp(w, t);
            }
        } else {
            let at = if self.l2_tlb.absent() { at } else { self.l2_tlb.port(at) + self.l2_tlb.latency };
            self.events.at(at, Event::L2Tlb(s, id));
        }
        false
    }

    /// L1 MSHR `id` of SM `s` looks up the shared L2 TLB at `t`.
    fn l2_tlb_lookup<F: PageTableFormat + Member<AnyFormat>>(&mut self, s: u32, id: u32, t: u64) -> Result<()> {
        let e = self.l1_mshrs[s as usize].get(id);
        let (asid, va) = (e.asid, e.va);
        if !self.l2_tlb.absent() {
            if let Some((pfn, size)) = self.l2_tlb.lookup(asid, va) {
                self.fill_l1(s, id, pfn, size, R_TLB, t);
                return Ok(());
            }
        }
        let (m, merged) = self.l2_mshrs.find_or_add(asid, va);
        self.l2_mshrs.get_mut(m).waiters.push((s, id));
        if merged {
            self.l2_tlb.stats.mshr_merges += 1;
            if self.to.is_some() && matches!(self.walkers.state(m), MissState::Waiting { faulted: true, .. }) {
                self.faulted_l1(s, id, t);
            }
            return Ok(());
        }
        #[cfg(test)]
        self.log.0.push((asid, va >> 12));
        self.walkers.set_state(m, MissState::Queued { since: t });
        self.enqueue_walk::<F>(m, t)
    }

    /// L2 miss `m` walks now if a walker slot is free, else queues.
    fn enqueue_walk<F: PageTableFormat + Member<AnyFormat>>(&mut self, m: u32, t: u64) -> Result<()> {
        if self.gpu.ideal_tlb {
            // No walk: the page is known, or it faults.
            let e = self.l2_mshrs.get(m);
            return match self.sys.peek(e.va, e.asid) {
                Some((pfn, size)) => {
                    self.walk_found(m, WalkResult::Translated { pfn_base: pfn, size, dirty: false, node: 0, level: 0 }, t)
                }
                None => self.walk_found(m, WalkResult::Fault { level: 0 }, t),
            };
        }
        match self.walkers.take_slot() {
            Some(slot) => self.start_walk::<F>(slot, m, t),
            None => {
                self.walkers.queue(m);
                Ok(())
            }
        }
    }

    fn start_walk<F: PageTableFormat + Member<AnyFormat>>(&mut self, slot: u32, m: u32, t: u64) -> Result<()> {
        let e = self.l2_mshrs.get(m);
        let (asid, va) = (e.asid, e.va);
        #[cfg(test)]
        self.log.1.push((asid, va >> 12));
        self.walkers.begin(slot, m, t);
        match self.sys.walk_start::<F>(va, asid, false)? {
            WalkStart::Walk(c) => {
                self.walkers.slot_mut(slot).cursor = Some(c);
                self.issue_walk_ref::<F>(slot, t);
                Ok(())
            }
            WalkStart::Done(r, _) => self.end_walk::<F>(slot, r, t),
        }
    }

    fn issue_walk_ref<F: PageTableFormat + Member<AnyFormat>>(&mut self, slot: u32, t: u64) {
        let c = self.walkers.slot_mut(slot).cursor.as_ref().expect("a walk in progress");
        let pa = self.sys.walk_paddr::<F>(c);
        let ready = self.mem.walk_ref(pa, t + self.gpu.walker.step_cycles);
        self.walkers.slot_mut(slot).ref_at = t;
        self.walkers.stats.refs += 1;
        self.events.at(ready, Event::WalkRef(slot));
    }

    fn walk_ref<F: PageTableFormat + Member<AnyFormat>>(&mut self, slot: u32, t: u64) -> Result<()> {
        let st = self.walkers.slot_mut(slot);
        let c = st.cursor.take().expect("a walk in progress");
        let (c, found) = self.sys.walk_advance::<F>(c, t - st.ref_at);
        match found {
            None => {
                self.walkers.slot_mut(slot).cursor = Some(c);
                self.issue_walk_ref::<F>(slot, t);
                Ok(())
            }
            Some((r, _)) => self.end_walk::<F>(slot, r, t),
        }
    }

    /// Walker slot `slot`'s walk ended at `t` with `r`: free the slot for
    /// the next queued miss, and act on what it found.
    fn end_walk<F: PageTableFormat + Member<AnyFormat>>(&mut self, slot: u32, r: WalkResult, t: u64) -> Result<()> {
        let started = self.walkers.started(slot);
        let m = self.walkers.end(slot, t);
        let e = self.l2_mshrs.get(m);
        if !self.shootdowns.is_empty() && self.shootdowns.stale(e.asid, e.va, started) {
            // A shootdown hit the page while the walk was reading it: drop the fill, walk again.
            self.stale_fills += 1;
            self.walkers.set_state(m, MissState::Queued { since: t });
            self.walkers.queue(m);
        } else {
            self.walk_found(m, r, t)?;
        }
        if let Some(oldest) = self.walkers.oldest_start() {
            self.shootdowns.forget_before(oldest);
        } else {
            self.shootdowns.forget_before(t + 1);
        }
        while let Some(next) = self.walkers.next_queued() {
            if let MissState::Queued { .. } = self.walkers.state(next) {
                return self.start_walk::<F>(slot, next, t);
            }
        }
        self.walkers.release(slot);
        Ok(())
    }

    /// L2 miss `m`'s walk found `r` at `t`.
    fn walk_found(&mut self, m: u32, r: WalkResult, t: u64) -> Result<()> {
        let e = self.l2_mshrs.get(m);
        let (asid, va) = (e.asid, e.va);
        match r {
            WalkResult::Translated { pfn_base, size, .. } => {
                let page = va & !(size.bytes() - 1);
                let key = self.flight_key(asid, va, size);
                match self.in_flight.get_mut(&key) {
                    // Mapped, but migrating: wait for the path to say it is usable.
                    Some(f) if f.ready == u64::MAX => {
                        f.waiters.push(m);
                        self.walkers.set_state(m, MissState::Waiting { page_va: key.1, pfn_base, size, faulted: true });
                        self.walkers.set_faulted(m);
                        if self.to.is_some() {
                            self.faulted_miss(m, t);
                        }
                    }
                    // Mapped, but its far fault is still being serviced.
                    Some(f) if f.ready > t => {
                        self.walkers.set_state(m, MissState::Waiting { page_va: page, pfn_base, size, faulted: true });
                        self.events.at(f.ready, Event::Deliver(m));
                        if self.to.is_some() {
                            self.faulted_miss(m, t);
                        }
                    }
                    _ => {
                        if self.touches {
                            let mut tlbs = GpuTlbs { l1: &mut self.l1_tlbs, l2: &mut self.l2_tlb, log: &mut self.shootdowns, now: self.now };
                            self.sys.touched_translation(pfn_base, size, &mut tlbs);
                        }
                        self.translated(m, pfn_base, size, t)
                    }
                }
                Ok(())
            }
            WalkResult::Fault { .. } => {
                let app = &self.apps[asid as usize - 1];
                if let Some((al, _)) = app.source.allocations().iter().zip(&app.freed).find(|(al, &gone)| gone && al.contains(va)) {
                    return Err(Error::Workload {
                        name: app.name.clone(),
                        msg: format!(
                            "kernel {:?} accesses {va:#x} in buffer \"{}\", which its free schedule freed before (use after free)",
                            app.kernel.as_ref().map(|k| k.name.as_str()),
                            al.name
                        ),
                    });
                }
                if let Some(unit) = self.unit {
                    // The path maps the unit when its migration begins: wait for it.
                    let key = (asid, va & !(unit.bytes() - 1));
                    self.walkers.set_state(m, MissState::Waiting { page_va: key.1, pfn_base: 0, size: unit, faulted: true });
                    self.walkers.set_faulted(m);
                    if self.to.is_some() {
                        self.faulted_miss(m, t);
                    }
                    match self.in_flight.get_mut(&key) {
                        Some(f) => f.waiters.push(m),
                        None => {
                            self.walkers.stats.faults += 1;
                            self.in_flight.insert(key, InFlight { ready: u64::MAX, waiters: vec![m] });
                            let fault = FarFault { asid, va: key.1, size: unit, miss: m };
                            if let Some(ready) = self.paging.raise(fault, t) {
                                unreachable!("a path that maps pages itself answers through poll, not at {ready}");
                            }
                        }
                    }
                    return Ok(());
                }
                let mut tlbs = GpuTlbs { l1: &mut self.l1_tlbs, l2: &mut self.l2_tlb, log: &mut self.shootdowns, now: self.now };
                self.sys.service_fault(va, asid, &mut tlbs)?;
                self.stall_for_compaction(t);
                let (pfn_base, size) = self.sys.peek(va, asid).expect("the OS just mapped it");
                let a = asid as usize - 1;
                self.apps[a].mapped[size.index()] += 1;
                let page = va & !(size.bytes() - 1);
                self.walkers.set_state(m, MissState::Waiting { page_va: page, pfn_base, size, faulted: true });
                self.walkers.stats.faults += 1;
                self.walkers.set_faulted(m);
                if self.to.is_some() {
                    self.faulted_miss(m, t);
                }
                        let fault = FarFault { asid, va: page, size, miss: m };
                match self.paging.raise(fault, t) {
                    Some(ready) => {
                        self.in_flight.insert((asid, page), InFlight { ready, waiters: Vec::new() });
                        self.events.at(ready, Event::FaultServiced(m));
                    }
                    None => {
                        // Handed back through poll, which replays `m` itself.
                        self.in_flight.insert((asid, page), InFlight { ready: u64::MAX, waiters: Vec::new() });
                    }
                }
                Ok(())
            }
        }
    }

    /// The key of the page at `va` (mapped at `size`) in the in-flight map.
    #[inline]
    fn flight_key(&self, asid: Asid, va: u64, size: PageSize) -> (Asid, u64) {
        let bytes = self.unit.map_or(size.bytes(), PageSize::bytes);
        (asid, va & !(bytes - 1))
    }

    /// L2 miss `m` has its translation at `t`: fill the L2 TLB and answer
    /// it and every queued miss the page covers.
    fn translated(&mut self, m: u32, pfn_base: u64, size: PageSize, t: u64) {
        let e = self.l2_mshrs.get(m);
        let (asid, va) = (e.asid, e.va);
        let page = va & !(size.bytes() - 1);
        let faulted = matches!(self.walkers.state(m), MissState::Waiting { faulted: true, .. }) | self.walkers.take_faulted(m);
        self.l2_tlb.fill(asid, va, size, pfn_base);
        let mut covered = std::mem::take(&mut self.covered);
        self.l2_mshrs.covered(asid, page, size.bytes(), &mut covered);
        let mut waiters = std::mem::take(&mut self.l1_waiters);
        for &c in &covered {
            let answer = c == m || matches!(self.walkers.state(c), MissState::Queued { .. });
            if !answer {
                continue;
            }
            let reason = if c == m && faulted { R_FAULT } else { R_WALK };
            if c != m {
                self.walkers.unqueue(c);
            }
            self.walkers.set_state(c, MissState::Done);
            self.l2_mshrs.retire(c, &mut waiters);
            for &(s, id) in &waiters {
                self.fill_l1(s, id, pfn_base, size, reason, t);
            }
        }
        self.l1_waiters = waiters;
        self.covered = covered;
    }

    /// SM `s`'s L1 MSHR `id` has its translation at `t`: fill the L1 TLB and
    /// send each waiting page's lines to memory.
    fn fill_l1(&mut self, s: u32, id: u32, pfn_base: u64, size: PageSize, reason: u8, t: u64) {
        let e = self.l1_mshrs[s as usize].get(id);
        self.l1_tlbs[s as usize].fill(e.asid, e.va, size, pfn_base);
        let mut waiters = std::mem::take(&mut self.page_waiters);
        self.l1_mshrs[s as usize].retire(id, &mut waiters);
        for &PageWaiter { warp, page } in &waiters {
            let wp = &mut self.warps[warp as usize];
            wp.reason = wp.reason.max(reason);
            self.page_ready(warp, page, pfn_base, size, t);
        }
        self.page_waiters = waiters;
    }

    /// Page `i` of warp `w`'s instruction is translated at `t` (first frame
    /// `pfn_base`, page of `size`): its lines go to memory.
    fn page_ready(&mut self, w: u32, i: u8, pfn_base: u64, size: PageSize, t: u64) {
        let warp = &mut self.warps[w as usize];
        let s = warp.sm as usize;
        let page = warp.coalesced.pages()[i as usize];
        let base = page & !(size.bytes() - 1);
        let mut done = warp.done_at;
        for &line in warp.coalesced.lines() {
            if line & !4095 != page {
                continue;
            }
            let pa = (pfn_base << 12) + (line - base);
            let ready = match warp.op {
                Op::Load => self.mem.load(s, pa, t),
                Op::Atomic => self.mem.l2_access(pa, true, t, crate::cache::Source::Data),
                _ => {
                    self.mem.l2_access(pa, true, t, crate::cache::Source::Data);
                    t + 1
                }
            };
            done = done.max(ready);
        }
        warp.done_at = done;
        warp.pending -= 1;
        let sm = warp.sm;
        if warp.pending == 0 {
            let stall = done - warp.issued_at;
            self.stats.stall[warp.reason as usize] += stall;
            let faulted = warp.faulted;
            if warp.parked {
                warp.saved_ready = done;
            } else {
                warp.ready_at = done.max(warp.not_before);
                let at = warp.ready_at;
                self.wake(sm, at);
            }
            if faulted {
                self.fault_served(w, t);
            }
        }
        // The page a held load/store unit waited for: go on with the next.
        if matches!(self.sms[sm as usize].ldst_hold, Some((h, _)) if h == w) {
            self.advance_ldst(sm, w, t);
        }
    }

    fn barrier(&mut self, s: u32, w: u32, t: u64) -> Result<()> {
        let warp = &mut self.warps[w as usize];
        warp.ready_at = u64::MAX;
        warp.at_barrier = true;
        let b = warp.block as usize;
        self.blocks[b].at_barrier += 1;
        self.release_barrier(s, b, t);
        Ok(())
    }

    /// Let block `b`'s warps past their barrier if every live one is there.
    fn release_barrier(&mut self, s: u32, b: usize, t: u64) {
        let blk = &mut self.blocks[b];
        if blk.at_barrier == 0 || blk.at_barrier < blk.live_warps {
            return;
        }
        blk.at_barrier = 0;
        for &w in &blk.warps {
            let warp = &mut self.warps[w as usize];
            // A warp that exited may have lent its slot to another block.
            if warp.active && warp.at_barrier && warp.block as usize == b {
                warp.at_barrier = false;
                warp.ready_at = t + self.gpu.alu_cycles;
            }
        }
        self.wake(s, t + self.gpu.alu_cycles);
    }

    fn exit(&mut self, s: u32, w: u32, t: u64) -> Result<()> {
        let warp = &mut self.warps[w as usize];
        warp.active = false;
        warp.ready_at = u64::MAX;
        let b = warp.block as usize;
        self.sms[s as usize].free_warp(w, t);
        self.blocks[b].live_warps -= 1;
        if self.blocks[b].live_warps == 0 {
            self.block_done(s, b as u32, t);
            let a = self.sms[s as usize].app as usize;
            self.dispatch(s, t);
            let app = &self.apps[a];
            let k = app.kernel.as_ref().expect("a block of a kernel ended");
            if app.blocks_running == 0 && app.next_block >= k.blocks.len() {
                self.next_kernel(a, t)?;
            }
        } else {
            self.release_barrier(s, b, t);
        }
        Ok(())
    }

    fn block_done(&mut self, s: u32, b: u32, t: u64) {
        let blk = &self.blocks[b as usize];
        let a = blk.app as usize;
        let (threads, regs, shmem) = (blk.threads, blk.regs, blk.shmem);
        self.sms[s as usize].free_block(b, threads, regs, shmem, t);
        self.apps[a].blocks_running -= 1;
    }

    /// Cycles until the last application ended.
    pub fn cycles(&self) -> u64 {
        self.apps.iter().map(|a| a.end).max().unwrap_or(0)
    }

    /// Per application: (name, warp instructions, thread instructions, cycles).
    pub fn app_results(&self) -> Vec<(String, u64, u64, u64)> {
        self.apps.iter().map(|a| (a.name.clone(), a.warp_insts, a.thread_insts, a.end)).collect()
    }

    /// Every counter and the derived metrics.
    pub fn stats(&self) -> Stats {
        let mut c = Collector::default();
        {
            let mut p = Prefixed::new("gpu", &mut c);
            self.visit(&mut p);
        }
        self.sys.visit(&mut c);
        let mut stats = c.stats;
        for (i, a) in self.apps.iter().enumerate() {
            let cycles = a.end.max(1) as f64;
            stats.derived.insert(format!("gpu.apps.{i}.ipc"), a.warp_insts as f64 / cycles);
            stats.derived.insert(format!("gpu.apps.{i}.thread_ipc"), a.thread_insts as f64 / cycles);
        }
        let touched: u64 = self.apps.iter().map(App::touched_bytes).sum();
        let mapped: u64 = self.apps.iter().map(|a| PageSize::ALL.iter().map(|s| a.mapped[s.index()] * s.bytes()).sum::<u64>()).sum();
        if touched > 0 {
            stats.derived.insert("gpu.bloat.ratio".into(), mapped as f64 / touched as f64 - 1.0);
        }
        stats
    }

    fn visit(&self, v: &mut dyn StatVisitor) {
        v.counter("cycles", self.cycles(), "cycles", "cycles until the last application ended");
        for (i, a) in self.apps.iter().enumerate() {
            let mut p = Prefixed::new("apps", v);
            let n = i.to_string();
            p.counter(&format!("{n}.warp_instructions"), a.warp_insts, "instructions", "warp instructions issued");
            p.counter(&format!("{n}.thread_instructions"), a.thread_insts, "instructions", "thread instructions (active lanes) issued");
            p.counter(&format!("{n}.cycles"), a.end, "cycles", "cycles from the start to the application's last instruction");
            p.counter(&format!("{n}.kernels"), a.kernels, "kernels", "kernel launches run");
            p.gauge(&format!("{n}.sms"), a.sms.len() as u64, "SMs", "SMs the application ran on");
            p.gauge(&format!("{n}.touched_bytes"), a.touched_bytes(), "bytes", "distinct 4 KiB pages the application accessed, in bytes");
            let mapped: u64 = PageSize::ALL.iter().map(|s| a.mapped[s.index()] * s.bytes()).sum();
            p.gauge(&format!("{n}.mapped_bytes"), mapped, "bytes", "bytes of the pages mapped for the application");
        }
        for (r, name) in REASONS.iter().enumerate() {
            v.counter(
                &format!("stall.{name}"),
                self.stats.stall[r],
                "cycles",
                "warp cycles from issuing a global memory instruction to its data, by the worst its pages met",
            );
        }
        let issue: u64 = self.sms.iter().map(|s| s.issue_cycles).sum();
        let resident: u64 = self.sms.iter().map(|s| s.resident_cycles(self.cycles())).sum();
        v.counter("sm.issue_cycles", issue, "cycles", "SM cycles in which a warp instruction issued (all SMs)");
        v.counter("sm.idle_cycles", resident - issue.min(resident), "cycles", "SM cycles with resident warps but none ready (all SMs)");
        if self.apps.iter().any(|a| !a.frees.is_empty()) {
            for (i, a) in self.apps.iter().enumerate() {
                v.counter(&format!("apps.{i}.freed_bytes"), a.freed_bytes, "bytes", "bytes of the pages the application freed (its free schedule)");
            }
        }
        if self.paging.stalls_sms() {
            for (i, a) in self.apps.iter().enumerate() {
                v.counter(&format!("apps.{i}.shootdown_stall_cycles"), a.shootdown_stall, "cycles", "SM-cycles the application's SMs could not issue for TLB shootdowns (gpu.paging.shootdown)");
            }
        }
        if self.spec.os.cac.is_some() {
            v.counter("compaction_stall_cycles", self.compaction_stall, "cycles", "cycles the whole GPU stalled while the OS compacted memory (os.cac)");
        }
        let held: u64 = self.sms.iter().map(|s| s.ldst_held_cycles).sum();
        v.counter("sm.ldst_held_cycles", held, "cycles", "SM cycles the load/store unit was held by a TLB miss (gpu.ldst = \"blocking\"; all SMs)");
        let mut l1 = self.l1_tlbs[0].clone();
        for t in &self.l1_tlbs[1..] {
            let s = &t.stats;
            l1.stats.lookups += s.lookups;
            l1.stats.hits += s.hits;
            l1.stats.misses += s.misses;
            l1.stats.mshr_merges += s.mshr_merges;
            l1.stats.fills += s.fills;
            l1.stats.invalidations += s.invalidations;
            for i in 0..PageSize::COUNT {
                l1.stats.hits_by_size[i] += s.hits_by_size[i];
                l1.stats.lookups_by_size[i] += s.lookups_by_size[i];
            }
        }
        l1.visit(&mut Prefixed::new("l1_tlb", v));
        self.l2_tlb.visit(&mut Prefixed::new("l2_tlb", v));
        let peak_l1 = self.l1_mshrs.iter().map(|m| m.peak).max().unwrap_or(0);
        v.gauge("l1_tlb.mshr_peak", peak_l1, "entries", "most L1 TLB misses on their way at once in one SM");
        v.gauge("l2_tlb.mshr_peak", self.l2_mshrs.peak, "entries", "most L2 TLB misses on their way at once");
        self.walkers.visit(&mut Prefixed::new("walker", v));
        if let Some(to) = &self.to {
            to.visit(&mut Prefixed::new("to", v));
        }
        v.counter("walker.stale_fills", self.stale_fills, "walks", "walks whose page a shootdown invalidated while they read it: not filled, walked again");
        {
                let mut p = Prefixed::new("paging", v);
            self.paging.visit_stats(&mut p);
            self.throttle.visit(&mut p, self.cycles());
        }
        self.mem.visit(v);
    }
}

/// An application with no buffers and no kernels (for listing a machine's stats).
struct NoKernels;

impl KernelSource for NoKernels {
    fn allocations(&self) -> &[crate::workload::gpu::Allocation] {
        &[]
    }
    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        Ok(None)
    }
}

impl GpuMachine {
    /// Every stat a run of one application on `spec` reports, at zero.
    pub fn stat_docs(spec: &Spec) -> Result<Stats> {
        let app = GpuApp { name: "none".into(), source: Box::new(NoKernels) };
        Ok(GpuMachine::build(spec, vec![app], 0)?.stats())
    }
}

impl GpuApp {
    /// The built-in GPU kernel `name` with `params`, as an application.
    pub fn builtin(name: &str, params: &std::collections::BTreeMap<String, String>, seed: u64) -> Result<GpuApp> {
        Ok(GpuApp { name: name.to_string(), source: crate::workload::gpu::kernels::build(name, params, seed)? })
    }
}

/// Run `apps` together on the GPU of `spec`: the machine after its run.
pub fn run_apps(spec: &Spec, apps: Vec<GpuApp>, seed: u64) -> Result<GpuMachine> {
    let mut m = GpuMachine::build(spec, apps, seed)?;
    m.run()?;
    Ok(m)
}

#[cfg(test)]
mod mosaic_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod uvm_tests;
#[cfg(test)]
mod to_tests;
#[cfg(test)]
mod shootdown_tests;
