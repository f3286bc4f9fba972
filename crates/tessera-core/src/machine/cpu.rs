//! The CPU machine (`machine.kind = "cpu"`): one core's TLB hierarchy and
//! interval timing model, a client of the shared [`MemorySystem`] (page
//! tables, physical memory and OS, walker and PSCs, data caches).
//!
//! ## Per access
//! 1. Count instructions (`ins_gap`).
//! 2. Translate: TLB levels of the access's side; on a miss of all levels, walk
//!    (through the caches); a walk that faults lets the OS map the page (page
//!    size chosen by `physmem.page_size`) and is retried. The translation fills
//!    the TLBs. A store to a clean cached translation sets the PTE's dirty bit.
//! 3. Data loads and stores access the cache hierarchy with the physical address.
//! 4. Accesses crossing a 4 KiB page translate (and access) both pages.
//!
//! A lookup that misses every level only because a mosaic structure lacks
//! the page in an entry it holds (`Lookup::SubpageFill`) is served without a
//! walk: the translation is read from the page table at no cost and filled
//! (a page that is not mapped walks and faults as usual).
//!
//! Shadow TLB structures (`mmu.shadow`) see every translation of their side
//! after it is made ([`crate::tlb::shadow`]); the machine then counts every
//! access one by one, and its own counters are unchanged.
//!
//! Instruction fetches are translated only when the machine has
//! instruction-side TLB structures, and do not access the data caches.
//!
//! ## Timing
//! With `timing.kind = "interval"` each access adds its stalls to the core's
//! counters. With `"ooo"` the machine still adds them up (they give each
//! access's TLB and walk latencies, as differences) and hands every access
//! to the out-of-order model ([`crate::timing::ooo`]) as an event: its gap,
//! TLB latency, walk cycles, data latency and L1D miss, kind and dependency.
//! The model's stalls and cycles replace the interval ones in the stats.
//! Runs of repeats are not counted in bulk under ooo: every access is fed.
//!
//! Dependencies (`timing.ooo.dependencies`): a stream may carry them (the
//! batch's `dep` column, see [`crate::access`]): built-in workloads, ChampSim
//! traces, native traces written with them. For a stream without them
//! (Lackey, QEMU, synthetic patterns), each load depends on the previous
//! load with probability `timing.ooo.dependency_fraction` (default 0:
//! independent), drawn from the run's seeded generator (`timing.ooo`).
//! `auto` takes the stream's when the source carries them
//! ([`CpuMachine::source_dependencies`]; a machine not told decides per
//! batch), `stream` requires them, `fraction` draws even when the stream has
//! its own. A record's dependency, a distance back in records, becomes one in
//! memory ops through a ring of the last records' ops: a dependency farther
//! back than the ring, or on a record that is not a load, is dropped (the
//! model drops one farther back than its own op horizon anyway).

use crate::access::{AccessBatch, AccessKind};
use crate::addr::{Asid, PageSize};
use crate::cache::Served;
use crate::config::Spec;
use crate::error::Result;
use crate::memsys::{MemorySystem, Shootdown, Translation};
use crate::pagetable::format::PageTableFormat;
use crate::pagetable::PageTable;
use crate::physmem::PhysMem;
use crate::registry::{AnyFormat, FormatVisitor, Member};
use crate::stats::{derived, visit_prefixed, Collector, StatVisitor, Stats};
use crate::rng::SimRng;
use crate::timing::ooo::{MemOp, OooParams, OooTicks};
use crate::timing::{CoreStats, IntervalModel, OooModel, OooStats};
use crate::tlb::shadow::Shadows;
use crate::tlb::{Fill, Lookup, MemoKey, Mmu, Neighbours};

/// Per-kind counters of a repeat run, packed in one word: `RUN_BITS` bits
/// per `AccessKind` value, so a run is at most `RUN_MASK` records.
const RUN_BITS: u32 = 21;
const RUN_MASK: u64 = (1 << RUN_BITS) - 1;

/// The end `j` of the run of repeats from `i` (see
/// [`CpuMachine::count_repeat_run`]), the sum of its instruction gaps and its
/// per-kind counts (packed, `RUN_BITS` per kind). `FETCHES`: untranslated
/// fetches belong to the run whatever their page.
#[inline(always)]
fn repeat_run<const FETCHES: bool>(batch: &AccessBatch, i: usize, key: MemoKey) -> (usize, u64, u64) {
    let n = batch.len().min(i + RUN_MASK as usize);
    let (vaddrs, asids, kinds) = (&batch.vaddr[..n], &batch.asid[..n], &batch.kind[..n]);
    let (gaps, sizes) = (&batch.ins_gap[..n], &batch.size[..n]);
    // Loads always repeat, stores only to a dirty page.
    let max_data_kind = key.dirty as u32;
    let (mut j, mut gap_sum, mut counts) = (i, 0u64, 0u64);
    while j < n {
        let (va, kind) = (vaddrs[j], kinds[j] as u32);
        let in_page = (va & 0xfff) + sizes[j].max(1) as u64 <= 0x1000;
        let repeat = va >> key.shift == key.vpn && asids[j] == key.asid && kind <= max_data_kind;
        let fetch = FETCHES && kind == AccessKind::IFetch as u32;
        if !((repeat || fetch) && in_page) {
            break;
        }
        gap_sum += gaps[j] as u64;
        counts += 1 << (kind * RUN_BITS);
        j += 1;
    }
    (j, gap_sum, counts)
}

/// Whether the run of repeats from `i` (which repeats `key`'s page) is at
/// most one record long because the next record is a load or store of
/// another page: GUPS's store after its load's walk, and most repeats of
/// a random stream. [`repeat_run_of_one`] then finds it without the loop.
#[inline(always)]
fn run_of_one(batch: &AccessBatch, i: usize, key: MemoKey) -> bool {
    i + 1 < batch.len() && batch.vaddr[i + 1] >> key.shift != key.vpn && batch.kind[i + 1] != AccessKind::IFetch
}

/// [`repeat_run`] when [`run_of_one`] holds: record `i` alone, if it is a
/// load or a store to a dirty page that does not cross the page (its page
/// and address space are the memo's, whose key was made from it).
#[inline(always)]
fn repeat_run_of_one(batch: &AccessBatch, i: usize, key: MemoKey) -> (usize, u64, u64) {
    let kind = batch.kind[i] as u32;
    let in_page = (batch.vaddr[i] & 0xfff) + batch.size[i].max(1) as u64 <= 0x1000;
    if in_page && kind <= key.dirty as u32 {
        (i + 1, batch.ins_gap[i] as u64, 1 << (kind * RUN_BITS))
    } else {
        (i, 0, 0)
    }
}

/// The miss path of a machine: [`CpuMachine::walk_with`] for one format.
type MissFn = fn(&mut CpuMachine, u64, Asid, bool, bool) -> Result<(u64, PageSize)>;

/// A load or store past its memo on a data side of 4-way LRU tables:
/// [`CpuMachine::translate_lru4`] for one format.
type Lru4Fn = fn(&mut CpuMachine, u64, Asid, bool) -> Result<(u64, PageSize)>;

/// Picks the paths of the table's format (`SHADOWS`: shadows watch;
/// `HINTED`: the walker takes walk shortcuts): its miss path and its
/// [`Lru4Fn`].
struct FormatPaths<const SHADOWS: bool, const HINTED: bool>;

impl<const SHADOWS: bool, const HINTED: bool> FormatVisitor for FormatPaths<SHADOWS, HINTED> {
    type Out = (MissFn, Lru4Fn);

    #[inline(always)]
    fn visit<F: PageTableFormat + Member<AnyFormat>>(self, _format: &F) -> (MissFn, Lru4Fn) {
        (CpuMachine::walk_with::<F, SHADOWS, HINTED>, CpuMachine::translate_lru4::<F, SHADOWS, HINTED>)
    }
}

/// How many accesses ahead the leaf page-table entry is prefetched on the host.
const PREFETCH_AHEAD: usize = 16;

/// Page-table frames above which the host prefetch of leaf entries pays: the
/// table outgrows the host's private caches (a 4 KiB node each, 2 MiB in
/// all). Below it the entries stay cached and the prefetch's hint lookup
/// only costs time. A host-side choice: results are the same either way.
const PREFETCH_MIN_TABLE_FRAMES: u64 = 512;

pub struct CpuMachine {
    spec: Spec,
    mmu: Mmu,
    sys: MemorySystem,
    timing: IntervalModel,
    translate_instr: bool,
    /// Count runs of memo repeats in bulk (machines without data caches,
    /// whose repeats only count); tests turn it off to compare.
    pub(crate) bulk_runs: bool,
    /// The OS's eviction policy wants to hear of every translation (exact LRU).
    touches: bool,
    core: CoreStats,
    /// The counters at the end of the warm-up, if there was one.
    baseline: Option<Baseline>,
    /// The 4 KiB leaf translations around a walked page, for TLBs that fill from them.
    neighbours: Box<Neighbours>,
    /// Shadow TLB structures, if any are configured.
    shadows: Option<Box<Shadows>>,
    /// The out-of-order timing model, when `timing.kind = "ooo"` (and timing is on).
    ooo: Option<Box<Ooo>>,
}

/// The out-of-order model and what the machine keeps for it.
struct Ooo {
    model: OooModel,
    /// Per-load dependency draws (see the module doc).
    rng: SimRng,
    dep_fraction: f64,
    /// Memory ops fed, and the index of the previous load's last one (+1; 0: none yet).
    ops: u64,
    last_load: u64,
    /// Where dependencies come from.
    deps: DepSource,
    /// Records fed, and each recent record's last op (+1) when it was a load
    /// (0 otherwise), by `record & rec_mask`.
    records: u64,
    rec_ops: Box<[u64]>,
    rec_mask: u64,
    /// Whether the L1D exists (without it every access misses to memory).
    l1: bool,
    /// Walks made and their cycles (each access's are read as a difference).
    /// Kept here, not in the machine, so that the interval path's walks do
    /// not count them.
    walks: u64,
    walk_cycles: u64,
    /// The model's time and ticks when measurement began.
    start: u64,
    base: OooTicks,
}

/// Where the ooo model's dependencies come from (`timing.ooo.dependencies`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DepSource {
    /// The stream's `dep` column.
    Stream,
    /// Drawn with `dependency_fraction`.
    Fraction,
    /// `auto` before the source is known: each batch's column when it has one.
    PerBatch,
}

impl Ooo {
    /// A stream dependency `d` records back, as a distance back in memory ops
    /// from the next op (0: none, or dropped; see the module doc).
    #[inline]
    fn stream_dep(&self, d: u32) -> u32 {
        let d = d as u64;
        if d == 0 || d > self.records || d > self.rec_mask {
            return 0;
        }
        let producer = self.rec_ops[((self.records - d) & self.rec_mask) as usize];
        if producer == 0 {
            return 0;
        }
        (self.ops + 1 - producer).min(u32::MAX as u64) as u32
    }

    /// Note the record just fed: its last op when it was a load.
    #[inline]
    fn record_done(&mut self, load: bool) {
        self.rec_ops[(self.records & self.rec_mask) as usize] = if load { self.ops } else { 0 };
        self.records += 1;
    }

    /// The dependency of the next load, as a distance back in memory ops.
    #[inline]
    fn load_dep(&mut self) -> u32 {
        use rand::Rng;
        if self.last_load == 0 || self.dep_fraction <= 0.0 {
            return 0;
        }
        if self.dep_fraction < 1.0 && self.rng.gen::<f64>() >= self.dep_fraction {
            return 0;
        }
        (self.ops + 1 - self.last_load).min(u32::MAX as u64) as u32
    }
}

/// What the counters were when measurement began: the core's own counters
/// (its cycles are computed from them at the end), and every other counter.
#[derive(Clone)]
struct Baseline {
    core: CoreStats,
    others: Stats,
}

impl Shootdown for Mmu {
    fn shoot_down(&mut self, va: u64, _size: PageSize, asid: Asid) -> u64 {
        self.invalidate_page(va, asid)
    }
}

/// The TLBs and the shadows watching them: a shootdown reaches both, and
/// counts only the TLBs' entries.
struct Watched<'a> {
    mmu: &'a mut Mmu,
    shadows: &'a mut Shadows,
}

impl Shootdown for Watched<'_> {
    fn shoot_down(&mut self, va: u64, _size: PageSize, asid: Asid) -> u64 {
        self.shadows.invalidate_page(va, asid);
        self.mmu.invalidate_page(va, asid)
    }
}

impl CpuMachine {
    pub fn build(spec: &Spec, seed: u64) -> Result<CpuMachine> {
        let sys = MemorySystem::build(spec, seed)?;
        if sys.coalesces() {
            return Err(crate::error::Error::config(
                "physmem.page_size",
                "in_place coalescing (GPU Mosaic) runs on the GPU machine (machine.kind = \"gpu\"), which says when a page's transfer is done",
            ));
        }
        if crate::physmem::allocator::FrameAllocator::needs_allocations(sys.physmem().allocator()) {
            return Err(crate::error::Error::config(
                "physmem.allocator",
                format!(
                    "the {} allocator places pages by what each application allocates, which the GPU machine (machine.kind = \"gpu\") tells it; a CPU machine does not",
                    sys.physmem().allocator().name()
                ),
            ));
        }
        let mmu = Mmu::build(&spec.mmu, seed)?;
        let l1 = spec.cache.l1d.as_ref().map(|l| l.latency);
        let timing = IntervalModel::new(&spec.timing, l1);
        let shadows = Shadows::build(&spec.mmu.shadow, seed)?;
        let ooo = (spec.timing.enabled && spec.timing.kind == "ooo").then(|| {
            let params = OooParams::new(&spec.timing, l1);
            let ring = params.op_horizon();
            Box::new(Ooo {
                model: OooModel::new(params),
                rng: crate::rng::component_rng(seed, "timing.ooo"),
                dep_fraction: spec.timing.ooo.dependency_fraction,
                ops: 0,
                last_load: 0,
                deps: match spec.timing.ooo.dependencies.as_str() {
                    "stream" => DepSource::Stream,
                    "fraction" => DepSource::Fraction,
                    _ => DepSource::PerBatch,
                },
                records: 0,
                rec_ops: vec![0; ring].into_boxed_slice(),
                rec_mask: ring as u64 - 1,
                l1: l1.is_some(),
                walks: 0,
                walk_cycles: 0,
                start: 0,
                base: OooTicks::default(),
            })
        });
        Ok(CpuMachine {
            translate_instr: mmu.translates_instr(),
            // Bulk runs count repeats without telling the OS (or the shadows)
            // of each use, nor the ooo model.
            bulk_runs: sys.num_cache_levels() == 0 && !sys.wants_touches() && shadows.is_none() && ooo.is_none(),
            touches: sys.wants_touches(),
            spec: spec.clone(),
            mmu,
            sys,
            timing,
            core: CoreStats::default(),
            baseline: None,
            neighbours: Box::new(Neighbours::EMPTY),
            shadows,
            ooo,
        })
    }

    /// End the warm-up: the machine keeps its state (TLBs, caches, page
    /// tables, memory), and from now on [`CpuMachine::stats`] counts only what
    /// happens after this call. Gauges (levels such as free frames) are
    /// reported as they are at the end.
    pub fn begin_measurement(&mut self) {
        // The core's share is kept apart and its counters zeroed in the
        // snapshot, because its cycles are computed from its counters.
        let mut c = Collector::default();
        self.visit_with(&CoreStats::default(), &mut c);
        self.baseline = Some(Baseline { core: self.core.clone(), others: c.stats });
        if let Some(o) = self.ooo.as_deref_mut() {
            o.start = o.model.end();
            o.base = o.model.ticks;
        }
    }

    pub fn spec(&self) -> &Spec {
        &self.spec
    }

    /// Tell the machine whether its source carries dependencies (`carried`),
    /// which settles `timing.ooo.dependencies = "auto"`; `"stream"` without
    /// them is an error naming `described`, the source. Returns what the
    /// run's timing assumes, for its results: `None` when no ooo model runs.
    pub fn source_dependencies(&mut self, carried: bool, described: &str) -> Result<Option<String>> {
        let Some(o) = self.ooo.as_deref_mut() else {
            return Ok(None);
        };
        let mode = self.spec.timing.ooo.dependencies.as_str();
        o.deps = match (mode, carried) {
            ("fraction", _) | ("auto", false) => DepSource::Fraction,
            ("stream", false) => {
                return Err(crate::error::Error::config_allowed(
                    "timing.ooo.dependencies",
                    format!("\"stream\" needs a source that carries dependencies, and {described} carries none"),
                    &crate::timing::ooo::DEPENDENCIES,
                ))
            }
            _ => DepSource::Stream,
        };
        Ok(Some(match o.deps {
            DepSource::Fraction => format!("assumed: each load depends on the previous one with probability {}", o.dep_fraction),
            _ => "from the stream".to_string(),
        }))
    }

    /// The same machine simulating every access one by one (for tests of
    /// the bulk path against the per-access one).
    #[cfg(test)]
    pub(crate) fn without_bulk_runs(mut self) -> CpuMachine {
        self.bulk_runs = false;
        self
    }

    /// The same machine walking every level of every walk (for tests of
    /// the walk shortcut against full walks).
    #[cfg(test)]
    pub(crate) fn without_walk_shortcuts(mut self) -> CpuMachine {
        self.sys.walker = self.sys.walker.without_shortcuts();
        self
    }

    /// Translate one data access as a load or store does, and return the
    /// page's first frame and size (for tests holding the machine's
    /// translations to the page table's).
    #[cfg(test)]
    pub(crate) fn translate_data(&mut self, va: u64, asid: Asid, write: bool) -> Result<(u64, PageSize)> {
        if self.shadows.is_some() {
            self.translate::<true>(va, asid, write, false)
        } else {
            self.translate::<false>(va, asid, write, false)
        }
    }

    #[cfg(test)]
    pub(crate) fn shortcut_walks(&self) -> u64 {
        self.sys.walker.shortcut_walks
    }

    /// Simulate one batch of accesses.
    pub fn feed(&mut self, batch: &AccessBatch) -> Result<()> {
        // One choice per batch: without shadows the per-access path has no trace of them.
        if self.shadows.is_some() {
            self.feed_with::<true>(batch)
        } else {
            self.feed_with::<false>(batch)
        }
    }

    /// [`Self::feed`]; `SHADOWS`: shadow structures watch the translations.
    fn feed_with<const SHADOWS: bool>(&mut self, batch: &AccessBatch) -> Result<()> {
        if self.sys.physmem().table_frames() >= PREFETCH_MIN_TABLE_FRAMES {
            self.feed_batch::<SHADOWS, true>(batch)
        } else {
            self.feed_batch::<SHADOWS, false>(batch)
        }
    }

    /// [`Self::feed_with`]; `PREFETCH`: prefetch leaf entries on the host.
    fn feed_batch<const SHADOWS: bool, const PREFETCH: bool>(&mut self, batch: &AccessBatch) -> Result<()> {
        // The timing model is the run's: one choice per batch.
        if self.ooo.is_some() {
            self.feed_timed::<SHADOWS, PREFETCH, true>(batch)
        } else {
            self.feed_timed::<SHADOWS, PREFETCH, false>(batch)
        }
    }

    /// [`Self::feed_batch`]; `OOO`: hand every access to the ooo model.
    fn feed_timed<const SHADOWS: bool, const PREFETCH: bool, const OOO: bool>(&mut self, batch: &AccessBatch) -> Result<()> {
        let n = batch.len();
        // Slices of exactly `n` let the compiler drop the bounds checks in the loop.
        let (vaddrs, asids, kinds) = (&batch.vaddr[..n], &batch.asid[..n], &batch.kind[..n]);
        let (gaps, sizes) = (&batch.ins_gap[..n], &batch.size[..n]);
        // Under ooo: whether this batch's dependencies are its column's.
        let stream_deps = OOO
            && match self.ooo_state().deps {
                DepSource::Stream => true,
                DepSource::Fraction => false,
                DepSource::PerBatch => batch.has_deps(),
            };
        let deps: &[u32] = if stream_deps && batch.has_deps() { &batch.dep[..n] } else { &[] };
        let mut i = 0;
        while i < n {
            // Without data caches a data access that repeats the memoised
            // page only counts, so runs of them are counted in bulk.
            // `past_memo`: this access repeats no memo (its lookup need not look).
            let mut past_memo = false;
            if !SHADOWS && self.bulk_runs {
                // Most accesses of a random stream leave the page: one compare
                // before setting up a run.
                let memo = self.mmu.memo(false, vaddrs[i], asids[i]);
                past_memo = memo.is_none();
                if let Some(key) = memo {
                    let j = self.count_repeat_run(batch, i, key);
                    if j > i {
                        // The prefetches the loop below would have issued for
                        // positions i..j: only those past the run can change page.
                        if PREFETCH {
                            for q in (i + PREFETCH_AHEAD).max(j)..(j + PREFETCH_AHEAD).min(n) {
                                if (vaddrs[q] ^ vaddrs[q - 1]) >> 12 != 0 {
                                    self.sys.prefetch_leaf(vaddrs[q], asids[q]);
                                }
                            }
                        }
                        i = j;
                        continue;
                    }
                }
            }
            // Host-side prefetch of a later access's leaf entry (no effect on results).
            // Only when the page changes: a run of accesses to one page needs one.
            if PREFETCH && i + PREFETCH_AHEAD < n {
                let ahead = vaddrs[i + PREFETCH_AHEAD];
                if (ahead ^ vaddrs[i + PREFETCH_AHEAD - 1]) >> 12 != 0 {
                    self.sys.prefetch_leaf(ahead, asids[i + PREFETCH_AHEAD]);
                }
            }
            let va = vaddrs[i];
            let asid = asids[i];
            let kind = kinds[i];
            self.core.instructions += gaps[i] as u64;
            self.core.records += 1;
            let size = sizes[i].max(1) as u64;
            let last = va.wrapping_add(size - 1);
            let crosses = (va ^ last) >> 12 != 0;
            if crosses {
                self.core.page_crossings += 1;
            }
            match kind {
                AccessKind::IFetch => {
                    self.core.ifetches += 1;
                    if self.translate_instr {
                        if OOO {
                            self.timed_fetch::<SHADOWS>(va, asid, gaps[i])?;
                            if crosses {
                                self.timed_fetch::<SHADOWS>(last & !0xfff, asid, 0)?;
                            }
                            self.ooo_state().record_done(false);
                        } else {
                            self.translate::<SHADOWS>(va, asid, false, true)?;
                            if crosses {
                                self.translate::<SHADOWS>(last & !0xfff, asid, false, true)?;
                            }
                        }
                    } else if OOO {
                        let o = self.ooo_state();
                        o.model.advance(gaps[i] as u64);
                        o.record_done(false);
                    }
                }
                AccessKind::Load | AccessKind::Store => {
                    let write = kind == AccessKind::Store;
                    if write {
                        self.core.stores += 1;
                    } else {
                        self.core.loads += 1;
                    }
                    if OOO {
                        let o = self.ooo_state();
                        let dep = if stream_deps {
                            o.stream_dep(deps.get(i).copied().unwrap_or(0))
                        } else if write {
                            0
                        } else {
                            o.load_dep()
                        };
                        self.timed_access::<SHADOWS>(va, asid, write, gaps[i], dep)?;
                        if crosses {
                            self.timed_access::<SHADOWS>(last & !0xfff, asid, write, 0, 0)?;
                        }
                        let o = self.ooo_state();
                        if !write {
                            o.last_load = o.ops;
                        }
                        o.record_done(!write);
                    } else {
                        if past_memo {
                            self.data_access::<SHADOWS, true>(va, asid, write)?;
                        } else {
                            self.data_access::<SHADOWS, false>(va, asid, write)?;
                        }
                        if crosses {
                            self.data_access::<SHADOWS, false>(last & !0xfff, asid, write)?;
                        }
                    }
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// Count accesses `i..j` of `batch` at once, on a machine without data
    /// caches, and return `j`: the longest run from `i` of loads and stores
    /// that repeat the data side's memo (`key`; stores only to a dirty page)
    /// and do not cross a page, with, when fetches are not translated, the
    /// fetches among them. Each changes nothing but counters, which end up
    /// the same as the per-access path's.
    #[inline(always)]
    fn count_repeat_run(&mut self, batch: &AccessBatch, i: usize, key: MemoKey) -> usize {
        let (j, gap_sum, kinds) = if run_of_one(batch, i, key) {
            repeat_run_of_one(batch, i, key)
        } else if self.translate_instr {
            repeat_run::<false>(batch, i, key)
        } else {
            repeat_run::<true>(batch, i, key)
        };
        if j == i {
            return i;
        }
        let (loads, stores, fetches) = (kinds & RUN_MASK, kinds >> RUN_BITS & RUN_MASK, kinds >> (2 * RUN_BITS));
        let data = loads + stores;
        let c = &mut self.core;
        c.instructions += gap_sum;
        c.records += (j - i) as u64;
        c.loads += loads;
        c.stores += stores;
        c.ifetches += fetches;
        self.mmu.add_repeats(false, &key, data);
        self.sys.count_data_repeats(data);
        if self.timing.enabled {
            c.translation_stall_cycles += key.latency as u64 * data;
            let served = Served { level: 0, latency: self.sys.latency_of(0) };
            c.data_stall_cycles += self.timing.data_stall(served) * data;
        }
        j
    }

    #[inline(always)]
    fn ooo_state(&mut self) -> &mut Ooo {
        // Only called on the OOO path, which runs only when the model exists.
        self.ooo.as_deref_mut().expect("the ooo path runs with an ooo model")
    }

    #[inline(always)]
    fn ooo_model(&mut self) -> &mut OooModel {
        &mut self.ooo_state().model
    }

    /// The TLB latency and the walk (if any) of the translation that ran
    /// since the core's counters were `before` (translation stalls, walks,
    /// walk cycles).
    #[inline(always)]
    fn translation_since(&mut self, before: (u64, u64, u64)) -> (u32, Option<u32>) {
        let total = self.core.translation_stall_cycles - before.0;
        let o = self.ooo_state();
        let walk = o.walk_cycles - before.2;
        let walked = (o.walks != before.1).then_some(walk.min(u32::MAX as u64) as u32);
        ((total - walk).min(u32::MAX as u64) as u32, walked)
    }

    #[inline(always)]
    fn translation_mark(&mut self) -> (u64, u64, u64) {
        let stall = self.core.translation_stall_cycles;
        let o = self.ooo_state();
        (stall, o.walks, o.walk_cycles)
    }

    /// A translated fetch ending a record of `gap` instructions, under ooo.
    #[inline(always)]
    fn timed_fetch<const SHADOWS: bool>(&mut self, va: u64, asid: Asid, gap: u32) -> Result<()> {
        let mark = self.translation_mark();
        self.translate::<SHADOWS>(va, asid, false, true)?;
        let (tlb, walk) = self.translation_since(mark);
        self.ooo_model().fetch(gap, tlb, walk);
        Ok(())
    }

    /// [`Self::data_access`] under ooo: the access is also the model's event.
    #[inline(always)]
    fn timed_access<const SHADOWS: bool>(&mut self, va: u64, asid: Asid, write: bool, gap: u32, dep: u32) -> Result<()> {
        let mark = self.translation_mark();
        let (pfn_base, size) = self.translate::<SHADOWS>(va, asid, write, false)?;
        let (tlb, walk) = self.translation_since(mark);
        let paddr = (pfn_base << 12) + (va & (size.bytes() - 1));
        let served = self.sys.access(paddr, write);
        self.core.data_stall_cycles += self.timing.data_stall(served);
        let o = self.ooo_state();
        let op = MemOp { tlb, walk, data: served.latency, l1_miss: !(o.l1 && served.level == 0), store: write, dep };
        o.ops += 1;
        o.model.op(gap, &op);
        Ok(())
    }

    /// A load or store; `PAST_MEMO`: the caller found that it does not
    /// repeat its memo slot's page ([`Mmu::lookup_past_memo`]).
    #[inline(always)]
    fn data_access<const SHADOWS: bool, const PAST_MEMO: bool>(&mut self, va: u64, asid: Asid, write: bool) -> Result<()> {
        let (pfn_base, size) = if PAST_MEMO && self.mmu.lru4_data() {
            let (_, translate) = self.format_paths::<SHADOWS>();
            translate(self, va, asid, write)?
        } else {
            let lookup = if PAST_MEMO { self.mmu.lookup_past_memo(va, asid, false) } else { self.mmu.lookup(va, asid, false) };
            self.translated::<SHADOWS>(lookup, va, asid, write, false)?
        };
        let paddr = (pfn_base << 12) + (va & (size.bytes() - 1));
        let served = self.sys.access(paddr, write);
        if self.timing.enabled {
            self.core.data_stall_cycles += self.timing.data_stall(served);
        }
        Ok(())
    }

    /// Translate through the TLBs, walking on a miss; the first frame and size of the page.
    #[inline(always)]
    fn translate<const SHADOWS: bool>(&mut self, va: u64, asid: Asid, write: bool, instr: bool) -> Result<(u64, PageSize)> {
        let lookup = self.mmu.lookup(va, asid, instr);
        self.translated::<SHADOWS>(lookup, va, asid, write, instr)
    }

    /// [`Self::translate`] after the TLB lookup.
    #[inline(always)]
    fn translated<const SHADOWS: bool>(&mut self, lookup: Lookup, va: u64, asid: Asid, write: bool, instr: bool) -> Result<(u64, PageSize)> {
        let (pfn_base, size) = match lookup {
            Lookup::Hit { pfn_base, size, dirty, latency, .. } => {
                if self.timing.enabled {
                    self.core.translation_stall_cycles += latency as u64;
                }
                if write && !dirty {
                    self.set_dirty(va, asid, instr);
                }
                if SHADOWS {
                    self.observe(&Fill { va, asid, size, pfn: pfn_base, dirty: dirty || write }, instr, write, None);
                }
                (pfn_base, size)
            }
            Lookup::Miss { latency } => {
                if self.timing.enabled {
                    self.core.translation_stall_cycles += latency as u64;
                }
                self.walk::<SHADOWS>(va, asid, write, instr)?
            }
            Lookup::SubpageFill { latency } => {
                if self.timing.enabled {
                    self.core.translation_stall_cycles += latency as u64;
                }
                self.fill_subpage::<SHADOWS>(va, asid, write, instr)?
            }
        };
        if self.touches {
            self.sys.touched(pfn_base, &mut self.mmu);
        }
        Ok((pfn_base, size))
    }

    #[cold]
    fn set_dirty(&mut self, va: u64, asid: Asid, instr: bool) {
        self.sys.set_dirty(va, asid);
        self.mmu.mark_dirty(va, asid, instr);
    }

    /// The shadows see a translation the machine made; `leaf`: the node
    /// (host slot of its first frame) and level of the leaf that gave its
    /// 4 KiB translation, when at hand (else the shadows find it if they
    /// need it).
    #[inline(never)]
    fn observe(&mut self, f: &Fill, instr: bool, write: bool, leaf: Option<(u32, u32)>) {
        let (Some(shadows), sys) = (self.shadows.as_deref_mut(), &self.sys) else { return };
        shadows.observe(f, instr, write, |n, gt_n, out| match leaf {
            Some(leaf) => sys.neighbours_of_leaf(f.va, f.asid, leaf, n, gt_n, out),
            _ => sys.leaf_neighbours(f.va, f.asid, n, gt_n, out),
        });
    }

    /// A mosaic structure takes the page into an entry it holds, without a
    /// walk: the translation is read from the page table at no cost. A page
    /// that is not mapped walks (and faults) as after any miss.
    #[inline(never)]
    fn fill_subpage<const SHADOWS: bool>(&mut self, va: u64, asid: Asid, write: bool, instr: bool) -> Result<(u64, PageSize)> {
        let Some(t) = self.sys.translate_functional(va, asid) else {
            return self.walk::<SHADOWS>(va, asid, write, instr);
        };
        // No neighbours: only this page becomes valid.
        self.mmu.fill_walk(va, asid, instr, t.size, t.pfn_base, t.dirty, &Neighbours::EMPTY);
        if write && !t.dirty {
            self.set_dirty(va, asid, instr);
        }
        if SHADOWS {
            self.observe(&Fill { va, asid, size: t.size, pfn: t.pfn_base, dirty: t.dirty || write }, instr, write, t.leaf_4k());
        }
        Ok((t.pfn_base, t.size))
    }

    /// Fill the TLBs after a walk when some structure takes the
    /// translations around the walked page: the PTEs of a level-1 leaf's
    /// line or group, or the pages a GT-PDE maps (to a structure that
    /// understands GT-PDEs). Out of line: the walk of a machine without
    /// such a structure stays small.
    #[inline(never)]
    fn fill_with_neighbours(&mut self, va: u64, asid: Asid, instr: bool, t: &Translation) {
        let wanted = self.mmu.neighbours_wanted();
        let gt_wanted = self.mmu.gt_neighbours_wanted();
        match t.leaf_4k() {
            // Only a 4 KiB leaf read in a level-1 node has PTE neighbours.
            Some((node, 1)) if wanted > 0 => self.sys.neighbours(va, asid, node, wanted, &mut self.neighbours),
            // A 4 KiB translation that ended above level 1 (a GT-PDE's):
            // the other pages the entry maps, decoded from the 16 bytes
            // the walker holds.
            Some((node, level)) if level > 1 && gt_wanted > 0 => {
                self.sys.block_neighbours(va, asid, node, level, gt_wanted, &mut self.neighbours)
            }
            _ => {
                self.mmu.fill_walk(va, asid, instr, t.size, t.pfn_base, t.dirty, &Neighbours::EMPTY);
                return;
            }
        }
        self.mmu.fill_walk(va, asid, instr, t.size, t.pfn_base, t.dirty, &self.neighbours);
    }

    /// The TLB-miss path of this machine's page-table format.
    #[inline(always)]
    fn walk<const SHADOWS: bool>(&mut self, va: u64, asid: Asid, write: bool, instr: bool) -> Result<(u64, PageSize)> {
        let (miss, _) = self.format_paths::<SHADOWS>();
        miss(self, va, asid, write, instr)
    }

    /// The paths of this machine's page-table format ([`FormatPaths`]).
    #[inline(always)]
    fn format_paths<const SHADOWS: bool>(&self) -> (MissFn, Lru4Fn) {
        let format = self.sys.page_table().format();
        if self.sys.walker.shortcuts() {
            format.visit(FormatPaths::<SHADOWS, true>)
        } else {
            format.visit(FormatPaths::<SHADOWS, false>)
        }
    }

    /// [`Self::translate`] of a load or store past its memo, on a data
    /// side of 4-way LRU tables and a table of format `F`: the lookup and,
    /// on a miss, the walk in one frame (a miss-dominated stream pays for
    /// one call and one result per access instead of two).
    #[inline(never)]
    fn translate_lru4<F: PageTableFormat + Member<AnyFormat>, const SHADOWS: bool, const HINTED: bool>(
        &mut self,
        va: u64,
        asid: Asid,
        write: bool,
    ) -> Result<(u64, PageSize)> {
        let lookup = self.mmu.lookup_lru4_inline(va, asid, false);
        let Lookup::Miss { latency } = lookup else {
            return self.translated::<SHADOWS>(lookup, va, asid, write, false);
        };
        if self.timing.enabled {
            self.core.translation_stall_cycles += latency as u64;
        }
        let (pfn_base, size) = self.walk_here::<F, SHADOWS, HINTED>(va, asid, write, false)?;
        if self.touches {
            self.sys.touched(pfn_base, &mut self.mmu);
        }
        Ok((pfn_base, size))
    }

    /// [`Self::walk`] on a table of format `F`, kept out of line so the hit
    /// path stays small, and one per format so the walk of one is not laid
    /// out (and its registers spilled) around every other's.
    #[inline(never)]
    fn walk_with<F: PageTableFormat + Member<AnyFormat>, const SHADOWS: bool, const HINTED: bool>(&mut self, va: u64, asid: Asid, write: bool, instr: bool) -> Result<(u64, PageSize)> {
        self.walk_here::<F, SHADOWS, HINTED>(va, asid, write, instr)
    }

    /// [`Self::walk_with`]'s body.
    #[inline(always)]
    fn walk_here<F: PageTableFormat + Member<AnyFormat>, const SHADOWS: bool, const HINTED: bool>(
        &mut self,
        va: u64,
        asid: Asid,
        write: bool,
        instr: bool,
    ) -> Result<(u64, PageSize)> {
        let (t, cycles) = if SHADOWS {
            match self.shadows.as_deref_mut() {
                Some(shadows) => self.sys.translate_miss::<F, HINTED>(va, asid, write, instr, &mut Watched { mmu: &mut self.mmu, shadows })?,
                None => self.sys.translate_miss::<F, HINTED>(va, asid, write, instr, &mut self.mmu)?,
            }
        } else {
            self.sys.translate_miss::<F, HINTED>(va, asid, write, instr, &mut self.mmu)?
        };
        if self.timing.enabled {
            self.core.translation_stall_cycles += cycles;
        }
        if let Some(o) = self.ooo.as_deref_mut() {
            // Only the ooo model reads these (as differences, `translation_since`).
            o.walks += 1;
            o.walk_cycles += cycles;
        }
        if self.mmu.neighbours_wanted() | self.mmu.gt_neighbours_wanted() == 0 {
            // Most machines: no structure takes neighbours, one test here.
            self.mmu.fill_walk(va, asid, instr, t.size, t.pfn_base, t.dirty, &Neighbours::EMPTY);
        } else {
            self.fill_with_neighbours(va, asid, instr, &t);
        }
        if SHADOWS {
            self.observe(&Fill { va, asid, size: t.size, pfn: t.pfn_base, dirty: t.dirty }, instr, write, t.leaf_4k());
        }
        Ok((t.pfn_base, t.size))
    }

    /// Walk every counter into a sorted tree and compute the derived metrics.
    pub fn stats(&self) -> Stats {
        let mut core = match &self.baseline {
            Some(b) => self.core.since(&b.core),
            None => self.core.clone(),
        };
        self.timing.finish(&mut core);
        let mut c = Collector::default();
        if let Some(o) = self.ooo.as_deref() {
            let t = &o.model.ticks;
            let b = &o.base;
            let span = o.model.end() - o.start;
            core.cycles = span.div_ceil(crate::timing::ooo::Q);
            core.translation_stall_cycles = crate::timing::ooo::to_cycles(t.translation_stall - b.translation_stall);
            core.data_stall_cycles = crate::timing::ooo::to_cycles(t.data_stall - b.data_stall);
            let extra = OooStats {
                walk_oldest_cycles: crate::timing::ooo::to_cycles(t.walk_oldest - b.walk_oldest),
                walker_busy_cycles: crate::timing::ooo::to_cycles(t.walker_busy - b.walker_busy),
                rob_full_cycles: crate::timing::ooo::to_cycles(t.rob_full - b.rob_full),
                mshr_wait_cycles: crate::timing::ooo::to_cycles(t.mshr_wait - b.mshr_wait),
                walker_wait_cycles: crate::timing::ooo::to_cycles(t.walker_wait - b.walker_wait),
            };
            visit_prefixed("core", &extra, &mut c);
        }
        self.visit_with(&core, &mut c);
        let mut stats = c.stats;
        if let Some(b) = &self.baseline {
            stats = stats.since(&b.others);
        }
        derived::compute(&mut stats, &self.spec);
        stats
    }

    fn visit_with(&self, core: &CoreStats, v: &mut dyn StatVisitor) {
        visit_prefixed("core", core, v);
        {
            let mut p = crate::stats::Prefixed::new("mmu", v);
            self.mmu.visit(&mut p);
            if let Some(s) = &self.shadows {
                s.visit(&mut p);
            }
        }
        self.sys.visit(v);
    }

    /// Read access to components, for scenario tests and later mechanisms.
    pub fn mmu(&self) -> &Mmu {
        &self.mmu
    }
    /// The shadow structures, if any.
    pub fn shadows(&self) -> Option<&Shadows> {
        self.shadows.as_deref()
    }
    pub fn page_table(&self) -> &PageTable {
        self.sys.page_table()
    }
    pub fn physmem(&self) -> &PhysMem {
        self.sys.physmem()
    }
    pub fn memory_system(&self) -> &MemorySystem {
        &self.sys
    }
}
