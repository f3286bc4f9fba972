//! `uvm`: unified memory with a hardware fault buffer and batch processing,
//! prefetching, and eviction when the GPU's memory is smaller than the data.
//!
//! ## What it models
//! Kim et al., "Batch-Aware Unified Memory Management in GPUs for Irregular
//! Workloads" (ASPLOS 2020, doi:10.1145/3373376.3378529), §2.2 and §3, as
//! its simulator (MacSim's MMU) and NVIDIA's driver run it:
//! - A walk that finds a page not present writes a fault into the GPU's
//!   fault buffer (`fault_buffer` entries) and the access waits. Faults are
//!   coalesced by migration unit (`unit`, 64 KiB: the paper's page): later
//!   accesses to a unit already faulted wait for it without a new entry.
//!   When the buffer is full, the fault is *parked*: it is walked again when
//!   the next batch drains the buffer, and faults then.
//! - A batch begins when no batch is running and the buffer holds faults:
//!   it takes every buffered fault (or the oldest `batch_limit`), sorts them
//!   by address, adds the prefetcher's units ([`super::prefetch`], per 2 MiB
//!   block), and pays the runtime's handling time (`handling_us`, the
//!   paper's "GPU runtime fault handling time", from the batch's start to
//!   its first transfer). Faults raised during a batch wait for the next.
//! - Then the units migrate in address order over the PCIe link, one after
//!   another; each unit is usable (its waiting accesses walk again) when its
//!   transfer ends. The batch ends with its last transfer, and the next one
//!   begins at once if faults are buffered.
//! - GPU memory holds `memory` × the applications' footprint (the sum of
//!   their allocations). When a unit does not fit, the OS's eviction policy
//!   (`os.eviction`; the paper's is LRU, touched on every walk) evicts pages
//!   to the host. In the baseline the eviction's GPU-to-host transfer comes
//!   before the migration that needed the room, on the same timeline (the
//!   driver evicts, then migrates).
//! - **Unobtrusive eviction** (`unobtrusive = true`, §4.2): when a batch
//!   begins with memory full, one unit is evicted at once, so its transfer
//!   overlaps the handling time; each later eviction is issued when the
//!   previous migration starts and runs on the other direction of the link,
//!   so a migration waits only for its own eviction to end.
//!
//! ## Choices where the paper is silent (see also docs/uvm.md)
//! - A unit is mapped when its migration begins (so its frame is taken and
//!   a victim evicted then), and usable when its transfer ends. Accesses to
//!   it in between wait for it.
//! - An access to a unit that a batch is prefetching waits for that
//!   migration rather than faulting into the next batch.
//! - A parked fault's second walk costs nothing extra here: it is handed
//!   back to the machine, which walks it again.
//! - Handling time is the same for every batch, whatever its size (MacSim's
//!   `batch_processing_overhead`); the paper measures it between 20 and 50 µs
//!   on real GPUs and uses 20 µs. `handling_per_fault_us` adds a part per
//!   fault (0 by default), for handling that grows with the batch as the
//!   paper's Titan Xp measurements do (its Fig. 3: per-page time falls with
//!   batch size, so the fixed part dominates).
//! - Each unit is one transfer. `pcie = "constant"` moves `pcie_gbps` GB/s
//!   per direction; `pcie = "curve"` uses UVM-Smart's size-dependent fit,
//!   `curve_gbps · (2/π) · atan(curve_b · KiB)` GB/s (12 GB/s and 0.07292
//!   for a 16 GB/s link). The paper says GPU-to-host is faster without a
//!   figure: `pcie_d2h_gbps` defaults to the same rate.
//! - Page lifetime is from a unit's arrival to its eviction; a premature
//!   eviction is an evicted unit that faults again.
//!
//! ## Beyond the paper: 2 MiB units (see docs/uvm.md)
//! `unit = "2m"` makes a whole aligned 2 MiB block the unit: one fault, one
//! transfer of its allocated pages, and one eviction of all of them (the
//! OS evicts the rest of a victim's unit, see `Os::log_evictions`). The
//! block is then the prefetchers' whole block, so any prefetcher but
//! `"none"` is a config error rather than a silent no-op. The unit's pages
//! are whatever the OS's page-size policy maps: the unit is what crosses
//! the link, the page is what the TLBs hold.
//!
//! ## The paper's other comparison points (its Fig. 11)
//! - **PCIe compression** (`pcie_compression = r`, 1: off): each transfer,
//!   both directions, puts `bytes / r` on the link and occupies its
//!   direction for that plus `compression_cycles` per unit ((de)compression
//!   in the copy's path, not overlapped with the next unit).
//! - **ETC** (`etc = { ... }`, [`etc`]): proactive eviction of a batch's
//!   shortfall at its start, memory-aware throttling of half the SMs by
//!   detection and execution epochs, and capacity compression. Each part
//!   is off unless asked for; each one's stats appear only when it is on.
//!
//! Beyond the paper, `shootdown = { ... }` ([`shootdown`]) charges each
//! eviction's TLB shootdown: the eviction's transfer waits for it, and the
//! SMs it reaches stall (absent: free, as before).
//!
//! ## Config
//! `kind = "uvm"`, `unit = "64k"` (or `"4k"`, or `"2m"` with `prefetch =
//! "none"`), `fault_buffer = 1024`,
//! `batch_limit = 0` (all buffered faults; NVIDIA's driver takes 256),
//! `handling_us = 20`, `handling_per_fault_us = 0`, `pcie = "constant"`, `pcie_gbps = 15.75`,
//! `pcie_d2h_gbps = 15.75`, `curve_gbps = 12`, `curve_b = 0.07292`,
//! `memory = 1.0` (GPU memory over footprint, in (0, 1]; below 1 needs
//! `os.swap`), `unobtrusive = false`, `prefetch = "none"`,
//! `pcie_compression = 1.0`, `compression_cycles = 200`, `etc` (absent:
//! every part off; its keys and defaults in [`etc::EtcConfig`] and
//! docs/uvm.md), and `shootdown` (absent: free; [`shootdown::ShootdownConfig`]).

use std::collections::VecDeque;

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use self::etc::{EtcConfig, Mt, Signal};
use self::shootdown::{ShootdownConfig, ShootdownCost};
use super::prefetch::{AnyPagePrefetcher, Bits, Block, PrefetchCtx, Prefetcher, BLOCK_BYTES};
use super::{FarFault, FaultPath, PagingCtx, PagingHost};
use crate::addr::{Asid, PageSize};
use crate::error::{Error, Result};
use crate::os::Evicted;
use crate::registry::{Mechanism, MechanismSpec};
use crate::stat_group;
use crate::stats::StatVisitor;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default = "d_unit")]
    pub unit: PageSize,
    #[serde(default = "d_buffer")]
    pub fault_buffer: u32,
    #[serde(default)]
    pub batch_limit: u32,
    #[serde(default = "d_handling")]
    pub handling_us: f64,
    #[serde(default)]
    pub handling_per_fault_us: f64,
    #[serde(default = "d_pcie")]
    pub pcie: String,
    #[serde(default = "d_gbps")]
    pub pcie_gbps: f64,
    #[serde(default = "d_gbps")]
    pub pcie_d2h_gbps: f64,
    #[serde(default = "d_curve_gbps")]
    pub curve_gbps: f64,
    #[serde(default = "d_curve_b")]
    pub curve_b: f64,
    #[serde(default = "d_memory")]
    pub memory: f64,
    #[serde(default)]
    pub unobtrusive: bool,
    #[serde(default = "d_prefetch")]
    pub prefetch: MechanismSpec,
    /// NVIDIA's driver: batches one service (one bottom half) takes before
    /// it ends (0: no limit), the limit while it sees thrashing, the cost of
    /// beginning a service, and what happens to the buffer after a batch.
    #[serde(default)]
    pub batches_per_service: u32,
    #[serde(default = "d_thrashing_batches")]
    pub thrashing_batches_per_service: u32,
    #[serde(default)]
    pub service_us: f64,
    #[serde(default = "d_replay")]
    pub replay: String,
    /// PCIe compression ratio (1: off): a transfer puts bytes / ratio on the link.
    #[serde(default = "d_ratio")]
    pub pcie_compression: f64,
    /// Cycles a compressed transfer adds per unit, (de)compression together.
    #[serde(default = "d_codec")]
    pub compression_cycles: u64,
    /// ETC's parts (none when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub etc: Option<EtcConfig>,
    /// What eviction's TLB shootdowns cost (free when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shootdown: Option<ShootdownConfig>,
}
fn d_unit() -> PageSize {
    PageSize::Size64K
}
fn d_buffer() -> u32 {
    1024
}
fn d_handling() -> f64 {
    20.0
}
fn d_pcie() -> String {
    "constant".into()
}
fn d_gbps() -> f64 {
    15.75
}
fn d_curve_gbps() -> f64 {
    12.0
}
fn d_curve_b() -> f64 {
    0.07292
}
fn d_memory() -> f64 {
    1.0
}
fn d_thrashing_batches() -> u32 {
    5
}
fn d_replay() -> String {
    "batch".into()
}
fn d_ratio() -> f64 {
    1.0
}
fn d_codec() -> u64 {
    200
}
fn d_prefetch() -> MechanismSpec {
    MechanismSpec { kind: "none".into(), params: toml::Table::new() }
}
impl Default for Config {
    fn default() -> Self {
        Config {
            unit: d_unit(),
            fault_buffer: d_buffer(),
            batch_limit: 0,
            handling_us: d_handling(),
            handling_per_fault_us: 0.0,
            pcie: d_pcie(),
            pcie_gbps: d_gbps(),
            pcie_d2h_gbps: d_gbps(),
            curve_gbps: d_curve_gbps(),
            curve_b: d_curve_b(),
            memory: d_memory(),
            unobtrusive: false,
            prefetch: d_prefetch(),
            batches_per_service: 0,
            thrashing_batches_per_service: d_thrashing_batches(),
            service_us: 0.0,
            replay: d_replay(),
            pcie_compression: d_ratio(),
            compression_cycles: d_codec(),
            etc: None,
            shootdown: None,
        }
    }
}

/// What happens to the fault buffer when a batch ends (`replay`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Replay {
    /// Faults still buffered wait for the next batch (MacSim, the paper).
    Batch,
    /// NVIDIA's default (`UVM_PERF_FAULT_REPLAY_POLICY_BATCH_FLUSH`): the
    /// buffer is flushed and every waiting access replays, so faults still
    /// buffered are dropped and fault again when their accesses walk again.
    BatchFlush,
}

pub const REPLAYS: [&str; 2] = ["batch", "batch_flush"];

/// Migration units (`unit`): the paper's 64 KiB, 4 KiB pages, and whole 2 MiB blocks.
const UNITS: [PageSize; 3] = [PageSize::Size4K, PageSize::Size64K, PageSize::Size2M];
const UNIT_NAMES: [&str; 3] = ["4k", "64k", "2m"];

stat_group! {
    pub struct UvmStats {
        faults: "faults", "faults written into the fault buffer (one per unit; accesses to a unit already faulted wait without one)",
        parked: "faults", "faults that found the buffer full, walked again when it drained",
        batches: "batches", "batches processed",
        batch_faults: "faults", "faults taken by batches",
        batch_units: "units", "units migrated by batches (faults and prefetches)",
        prefetched_units: "units", "units migrated because the prefetcher chose them",
        batch_cycles: "cycles", "cycles from each batch's start to its last transfer's end, summed",
        handling_cycles: "cycles", "runtime fault handling time of every batch, summed",
        bytes_to_gpu: "bytes", "bytes migrated from the host",
        bytes_to_host: "bytes", "bytes evicted to the host",
        h2d_busy_cycles: "cycles", "cycles the host-to-GPU direction of the link was transferring",
        d2h_busy_cycles: "cycles", "cycles the GPU-to-host direction of the link was transferring",
        evictions: "units", "units evicted to make room",
        preemptive_evictions: "units", "units evicted at a batch's start, during its handling time (unobtrusive eviction)",
        premature_evictions: "units", "evicted units that faulted again",
        lifetime_cycles: "cycles", "cycles from each evicted unit's arrival to its eviction, summed",
        services: "services", "fault services (bottom halves): each begins with an interrupt, or when the previous one reached its batch limit",
        flushed: "faults", "buffered faults dropped when a batch flushed the buffer (replay = \"batch_flush\"); they fault again",
        peak_buffer: gauge "faults", "most faults in the fault buffer at once",
    }
}

stat_group! {
    /// PCIe compression (`pcie_compression` above 1).
    pub struct PcieStats {
        link_bytes_to_gpu: "bytes", "bytes put on the host-to-GPU direction of the link (compressed)",
        link_bytes_to_host: "bytes", "bytes put on the GPU-to-host direction of the link (compressed)",
        codec_cycles: "cycles", "cycles (de)compression added to transfers, summed",
    }
}

stat_group! {
    /// ETC's proactive eviction.
    pub struct PeStats {
        proactive_evictions: "units", "units evicted ahead at a batch's start, during its handling time (ETC's proactive eviction)",
        proactive_wait_cycles: "cycles", "cycles migrations waited for the eviction that freed their frame to end, summed",
    }
}

/// Powers of two of the batch-size histogram (`batch_size.le_<2^k>`).
const HISTOGRAM: usize = 12;

/// One unit a batch migrates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Item {
    asid: Asid,
    va: u64,
    fault: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Phase {
    Idle,
    /// The runtime handles the batch's faults until the cycle given.
    Handling(u64),
    /// Unit `next` of the batch is issued at `at`; the previous migration
    /// began at `prev_start`.
    Migrating { next: usize, at: u64, prev_start: u64 },
}

#[derive(Clone, Debug)]
pub struct Uvm {
    unit: PageSize,
    capacity: usize,
    batch_limit: usize,
    handling: u64,
    /// Handling time added per fault of the batch, in thousandths of a
    /// cycle (exact for settings below a cycle).
    handling_per_fault_milli: u64,
    /// Transfer cycles of `bytes` per direction.
    h2d: Link,
    d2h: Link,
    unobtrusive: bool,
    /// GPU memory over footprint, after capacity compression.
    memory: f64,
    /// PCIe compression ratio (1: off) and its cycles per unit.
    compression: f64,
    codec: u64,
    /// ETC's proactive eviction, and the units it evicts beyond a batch's shortfall.
    proactive: bool,
    pe_extra: u64,
    /// Cycles at which the frames proactive eviction freed are free (their
    /// transfer to the host ended), oldest first, until a migration takes them.
    pe_frames: VecDeque<u64>,
    /// ETC's memory-aware throttling.
    mt: Option<Mt>,
    /// ETC's capacity compression: ratio, cycles per DRAM read, the share before it, peak data held.
    cc: Option<(f64, u64, f64)>,
    cc_peak: u64,
    pcie_stats: PcieStats,
    pe_stats: PeStats,
    /// The cost of eviction's TLB shootdowns, when modelled.
    shootdown: Option<ShootdownCost>,
    prefetcher: AnyPagePrefetcher,
    /// Per-service batch limits (`usize::MAX`: none), a service's start cost, the replay policy.
    service_limit: usize,
    thrashing_limit: usize,
    service_cost: u64,
    replay: Replay,
    /// Batches of the current service, whether it saw thrashing, and
    /// whether it goes on (the last batch ended with faults buffered).
    service_batches: usize,
    service_thrashing: bool,
    service_open: bool,
    buffer: Vec<FarFault>,
    parked: Vec<FarFault>,
    /// Units faulted and not yet migrating (in the buffer or parked), which
    /// the prefetcher must not pick.
    waiting: FxHashSet<(Asid, u64)>,
    phase: Phase,
    /// The earliest fault raised while no batch ran (`u64::MAX`: none).
    interrupt_at: u64,
    batch_start: u64,
    items: Vec<Item>,
    /// A preemptive eviction made room for the batch's first unit.
    preempted: bool,
    h2d_free: u64,
    d2h_free: u64,
    /// Migrations under way, by end cycle (ends grow: the link is serial).
    completing: VecDeque<(u64, FarFault)>,
    arrived: FxHashMap<(Asid, u64), u64>,
    evicted_units: FxHashSet<(Asid, u64)>,
    /// Units faulted again after an eviction, until a batch takes them (the service sees thrashing).
    refaulted: FxHashSet<(Asid, u64)>,
    evicted: Vec<Evicted>,
    histogram: [u64; HISTOGRAM + 1],
    stats: UvmStats,
}

/// One direction of the PCIe link.
#[derive(Clone, Debug)]
struct Link {
    /// Cycles per byte (constant model) or the curve's parameters.
    cycles_per_byte: f64,
    curve: Option<(f64, f64)>,
    clock_ghz: f64,
}

impl Link {
    /// Cycles to move `bytes` in one transfer.
    fn cycles(&self, bytes: u64) -> u64 {
        if bytes == 0 {
            return 0;
        }
        self.cycles_of(bytes as f64)
    }

    /// Cycles to move `bytes` (a compressed size may be fractional) in one transfer.
    fn cycles_of(&self, bytes: f64) -> u64 {
        match self.curve {
            None => (bytes * self.cycles_per_byte).round() as u64,
            Some((gbps, b)) => {
                let speed = gbps * 2.0 / std::f64::consts::PI * (b * bytes / 1024.0).atan();
                // Bytes over GB/s (2^30 bytes, as UVM-Smart's fit) are seconds; times the clock, cycles.
                (bytes / (speed * (1u64 << 30) as f64) * self.clock_ghz * 1e9).round() as u64
            }
        }
    }
}

fn positive(key: &str, v: f64) -> Result<()> {
    if v.is_finite() && v > 0.0 {
        Ok(())
    } else {
        Err(Error::config(format!("gpu.paging.{key}"), format!("must be a positive number, not {v}")))
    }
}

impl Mechanism for Uvm {
    const NAME: &'static str = "uvm";
    const SUMMARY: &'static str = "unified memory: a fault buffer, batches with runtime handling time, prefetching and eviction (batch-aware UVM)";
    type Config = Config;
    type Ctx = PagingCtx;
    fn build(cfg: &Config, ctx: &PagingCtx) -> Result<Self> {
        if !UNITS.contains(&cfg.unit) {
            return Err(Error::config_allowed("gpu.paging.unit", format!("a migration unit of {} is not modelled", cfg.unit.name()), &UNIT_NAMES));
        }
        // A 2 MiB unit is a whole prefetch block: the fault brings all of it.
        if cfg.unit == PageSize::Size2M && cfg.prefetch.kind != "none" {
            return Err(Error::config_allowed(
                "gpu.paging.prefetch",
                format!(
                    "a prefetcher picks units of a 2 MiB block, and a 2 MiB migration unit (gpu.paging.unit = \"2m\") is the whole block, so \"{}\" has nothing to add",
                    cfg.prefetch.kind
                ),
                &["none"],
            ));
        }
        if cfg.fault_buffer == 0 {
            return Err(Error::config("gpu.paging.fault_buffer", "a fault buffer needs at least one entry"));
        }
        if !(cfg.memory > 0.0 && cfg.memory <= 1.0) {
            return Err(Error::config("gpu.paging.memory", format!("GPU memory is a share of the footprint in (0, 1], not {}", cfg.memory)));
        }
        let replay = match cfg.replay.as_str() {
            "batch" => Replay::Batch,
            "batch_flush" => Replay::BatchFlush,
            other => return Err(Error::config_allowed("gpu.paging.replay", format!("unknown replay policy \"{other}\""), &REPLAYS)),
        };
        if cfg.batches_per_service > 0 && cfg.thrashing_batches_per_service == 0 {
            return Err(Error::config("gpu.paging.thrashing_batches_per_service", "a service takes at least one batch (1 or more)"));
        }
        for (key, v) in [("handling_us", cfg.handling_us), ("handling_per_fault_us", cfg.handling_per_fault_us), ("service_us", cfg.service_us)] {
            if !v.is_finite() || v < 0.0 {
                return Err(Error::config(format!("gpu.paging.{key}"), format!("must be a number of microseconds ≥ 0, not {v}")));
            }
        }
        for (key, v) in [("pcie_gbps", cfg.pcie_gbps), ("pcie_d2h_gbps", cfg.pcie_d2h_gbps), ("curve_gbps", cfg.curve_gbps), ("curve_b", cfg.curve_b)] {
            positive(key, v)?;
        }
        if !(cfg.pcie_compression.is_finite() && cfg.pcie_compression >= 1.0) {
            return Err(Error::config(
                "gpu.paging.pcie_compression",
                format!("a compression ratio is a number ≥ 1 (1: off), not {}", cfg.pcie_compression),
            ));
        }
        let etc = cfg.etc.clone().unwrap_or_default();
        let signal = etc.validate()?;
        // Capacity compression acts only when the data does not fit.
        let cc = (etc.compression && cfg.memory < 1.0).then_some((etc.cc_ratio, etc.cc_decompress_cycles, cfg.memory));
        let memory = cc.map_or(cfg.memory, |(r, _, m)| (m * r).min(1.0));
        let link = |gbps: f64| -> Result<Link> {
            let curve = match cfg.pcie.as_str() {
                "constant" => None,
                // The curve is UVM-Smart's fit of one link; the GPU-to-host direction scales it by the rates' ratio.
                "curve" => Some((cfg.curve_gbps * gbps / cfg.pcie_gbps, cfg.curve_b)),
                other => return Err(Error::config_allowed("gpu.paging.pcie", format!("unknown PCIe model \"{other}\""), &["constant", "curve"])),
            };
            // Bytes over GB/s are nanoseconds; times GHz, cycles.
            Ok(Link { cycles_per_byte: ctx.clock_ghz / gbps, curve, clock_ghz: ctx.clock_ghz })
        };
        let prefetcher = AnyPagePrefetcher::build(
            &cfg.prefetch,
            &PrefetchCtx { unit_bytes: cfg.unit.bytes(), seed: crate::rng::sub_seed(ctx.seed, "gpu.paging.prefetch") },
            "gpu.paging.prefetch",
        )?;
        Ok(Uvm {
            unit: cfg.unit,
            capacity: cfg.fault_buffer as usize,
            batch_limit: if cfg.batch_limit == 0 { usize::MAX } else { cfg.batch_limit as usize },
            handling: ctx.cycles_of_us(cfg.handling_us),
            handling_per_fault_milli: (cfg.handling_per_fault_us * 1e6 * ctx.clock_ghz).round() as u64,
            h2d: link(cfg.pcie_gbps)?,
            d2h: link(cfg.pcie_d2h_gbps)?,
            unobtrusive: cfg.unobtrusive,
            memory,
            compression: cfg.pcie_compression,
            codec: cfg.compression_cycles,
            proactive: etc.proactive,
            pe_extra: etc.pe_extra_units as u64,
            pe_frames: VecDeque::new(),
            mt: etc.throttling.then(|| Mt::new(&etc, signal)),
            cc,
            cc_peak: 0,
            pcie_stats: PcieStats::default(),
            pe_stats: PeStats::default(),
            shootdown: cfg.shootdown.as_ref().map(ShootdownCost::new).transpose()?,
            prefetcher,
            service_limit: if cfg.batches_per_service == 0 { usize::MAX } else { cfg.batches_per_service as usize },
            thrashing_limit: if cfg.batches_per_service == 0 { usize::MAX } else { cfg.thrashing_batches_per_service as usize },
            service_cost: ctx.cycles_of_us(cfg.service_us),
            replay,
            service_batches: 0,
            service_thrashing: false,
            service_open: false,
            buffer: Vec::new(),
            parked: Vec::new(),
            waiting: FxHashSet::default(),
            phase: Phase::Idle,
            interrupt_at: u64::MAX,
            batch_start: 0,
            items: Vec::new(),
            preempted: false,
            h2d_free: 0,
            d2h_free: 0,
            completing: VecDeque::new(),
            arrived: FxHashMap::default(),
            evicted_units: FxHashSet::default(),
            refaulted: FxHashSet::default(),
            evicted: Vec::new(),
            histogram: [0; HISTOGRAM + 1],
            stats: UvmStats::default(),
        })
    }
}

impl Uvm {
    fn key(&self, asid: Asid, va: u64) -> (Asid, u64) {
        (asid, va & !(self.unit.bytes() - 1))
    }

    /// Follow the units the OS evicted at `now`: their shootdown, their
    /// lifetimes, and which may fault again.
    fn note_evictions(&mut self, now: u64, host: &mut dyn PagingHost) -> u64 {
        if let Some(sd) = &mut self.shootdown {
            sd.shoot(now, &self.evicted, host);
        }
        let mut bytes = 0;
        let mut units = 0;
        for e in self.evicted.drain(..) {
            bytes += e.size.bytes();
            let key = (e.asid, e.va & !(self.unit.bytes() - 1));
            if let Some(at) = self.arrived.remove(&key) {
                self.stats.lifetime_cycles += now.saturating_sub(at);
                units += 1;
                self.evicted_units.insert(key);
            }
        }
        self.stats.evictions += units;
        self.stats.bytes_to_host += bytes;
        if units > 0 {
            if let Some(mt) = self.mt.as_mut().filter(|m| m.signal == Signal::Evictions) {
                mt.count(now, units);
            }
        }
        bytes
    }

    /// Cycles of one transfer of `bytes` to the GPU (`h2d`) or to the host:
    /// with PCIe compression, `bytes / ratio` on the link plus the
    /// (de)compression cycles of each unit.
    fn transfer(&mut self, h2d: bool, bytes: u64) -> u64 {
        let link = if h2d { &self.h2d } else { &self.d2h };
        if self.compression == 1.0 || bytes == 0 {
            return link.cycles(bytes);
        }
        let on_link = bytes as f64 / self.compression;
        let codec = self.codec * bytes.div_ceil(self.unit.bytes());
        let cycles = link.cycles_of(on_link) + codec;
        let s = &mut self.pcie_stats;
        if h2d {
            s.link_bytes_to_gpu += on_link.round() as u64;
        } else {
            s.link_bytes_to_host += on_link.round() as u64;
        }
        s.codec_cycles += codec;
        cycles
    }

    /// The cycle an eviction's transfer that could begin at `start` begins:
    /// after the TLB shootdown of its pages.
    fn after_shootdown(&mut self, start: u64) -> u64 {
        self.shootdown.as_mut().map_or(start, |sd| sd.after(start))
    }

    /// ETC's proactive eviction at a batch's start `now`: when the free
    /// memory is below the units the batch will map (plus `pe_extra`), evict
    /// the shortfall now, on the GPU-to-host direction, so that its
    /// transfers overlap the handling time. Each frame so freed is free when
    /// its transfer ends.
    fn evict_ahead(&mut self, now: u64, host: &mut dyn PagingHost) -> Result<()> {
        let ub = self.unit.bytes();
        self.pe_frames.retain(|&ready| ready > now);
        let need = self.items.iter().filter(|it| !host.resident(it.asid, it.va)).count() as u64 + self.pe_extra;
        let mut free = 0;
        while free < need && !host.full((free + 1) * ub) {
            free += 1;
        }
        let mut short = need - free;
        // As unobtrusive eviction: never the last unit (it may be the one whose accesses are about to walk again).
        while short > 0 && host.resident_bytes() > ub {
            host.evict_one(&mut self.evicted)?;
            let bytes = self.note_evictions(now, host);
            if bytes == 0 {
                break;
            }
            let start = self.after_shootdown(now.max(self.d2h_free));
            self.d2h_free = start + self.transfer(false, bytes);
            self.stats.d2h_busy_cycles += self.d2h_free - start;
            let units = bytes.div_ceil(ub);
            for _ in 0..units {
                self.pe_frames.push_back(self.d2h_free);
            }
            self.pe_stats.proactive_evictions += units;
            short = short.saturating_sub(units);
        }
        Ok(())
    }

    /// Begin a batch at `now` with the buffered faults.
    fn begin(&mut self, now: u64, host: &mut dyn PagingHost, done: &mut Vec<FarFault>) -> Result<()> {
        let take = self.buffer.len().min(self.batch_limit);
        let mut faults: Vec<FarFault> = self.buffer.drain(..take).collect();
        // The buffer drained: parked accesses walk again, and fault into it.
        let room = self.capacity - self.buffer.len();
        let n = room.min(self.parked.len());
        for f in self.parked.drain(..n) {
            self.waiting.remove(&(f.asid, f.va));
            done.push(f);
        }
        faults.sort_unstable_by_key(|f| (f.asid, f.va));
        // A new service unless the last one goes on below its batch limit.
        let limit = if self.service_thrashing { self.thrashing_limit } else { self.service_limit };
        let new_service = !self.service_open || self.service_batches >= limit;
        if new_service {
            self.stats.services += 1;
            self.service_batches = 0;
            self.service_thrashing = false;
        }
        self.service_batches += 1;
        // Thrashing, as the driver sees it: a fault on a unit evicted before.
        for f in &faults {
            self.service_thrashing |= self.refaulted.remove(&(f.asid, f.va));
        }
        self.items.clear();
        self.items.extend(faults.iter().map(|f| Item { asid: f.asid, va: f.va, fault: true }));
        for f in &faults {
            self.waiting.remove(&(f.asid, f.va));
        }
        self.prefetch(&faults, host);
        self.items.sort_unstable();
        self.stats.batches += 1;
        self.stats.batch_faults += faults.len() as u64;
        self.stats.batch_units += self.items.len() as u64;
        let k = (usize::BITS - self.items.len().saturating_sub(1).leading_zeros()) as usize;
        self.histogram[k.min(HISTOGRAM)] += 1;
        self.batch_start = now;
        // A fixed part (interrupt, preprocessing) and a part per fault (its CPU-side walk and bookkeeping).
        let handling = self.handling
            + (faults.len() as u64 * self.handling_per_fault_milli).div_ceil(1000)
            + if new_service { self.service_cost } else { 0 };
        self.stats.handling_cycles += handling;
        self.preempted = false;
        if self.proactive {
            self.evict_ahead(now, host)?;
        }
        // A memory of one unit holds only the unit that just arrived, whose
        // accesses have not walked again yet: evicting it would livelock.
        if self.unobtrusive && host.full(self.unit.bytes()) && host.resident_bytes() > self.unit.bytes() {
            // The top half's single eviction, overlapped with the handling time.
            host.evict_one(&mut self.evicted)?;
            let bytes = self.note_evictions(now, host);
            if bytes > 0 {
                let start = self.after_shootdown(now.max(self.d2h_free));
                self.d2h_free = start + self.transfer(false, bytes);
                self.stats.d2h_busy_cycles += self.d2h_free - start;
                self.stats.preemptive_evictions += 1;
                self.preempted = true;
            }
        }
        self.phase = Phase::Handling(now + handling);
        Ok(())
    }

    /// Add the prefetcher's units for each 2 MiB block the faults touch.
    fn prefetch(&mut self, faults: &[FarFault], host: &mut dyn PagingHost) {
        let ub = self.unit.bytes();
        let units = (BLOCK_BYTES / ub) as u32;
        let mut i = 0;
        while i < faults.len() {
            let (asid, base) = (faults[i].asid, faults[i].va & !(BLOCK_BYTES - 1));
            let mut block = Block { base, unit_bytes: ub, units, resident: Bits::default(), faulted: Bits::default(), allocated: Bits::default() };
            while i < faults.len() && faults[i].asid == asid && faults[i].va & !(BLOCK_BYTES - 1) == base {
                block.faulted.set(((faults[i].va - base) / ub) as u32);
                i += 1;
            }
            for u in 0..units {
                let va = base + u as u64 * ub;
                if host.resident(asid, va) || self.waiting.contains(&(asid, va)) {
                    block.resident.set(u);
                }
                if host.allocated(asid, va, ub) {
                    block.allocated.set(u);
                }
            }
            let mut out = Bits::default();
            self.prefetcher.prefetch(&block, &mut out);
            let out = out.and_not(&block.resident).and_not(&block.faulted).and(&block.allocated);
            for u in out.ones().filter(|&u| u < units) {
                self.items.push(Item { asid, va: base + u as u64 * ub, fault: false });
                self.stats.prefetched_units += 1;
            }
        }
    }

    /// Issue unit `next` of the batch at `at`.
    fn issue(&mut self, next: usize, at: u64, prev_start: u64, host: &mut dyn PagingHost) -> Result<()> {
        let item = self.items[next];
        // Every free frame is one that proactive eviction freed: a unit that needs one takes the oldest.
        let pe_frame = !self.pe_frames.is_empty() && host.full((self.pe_frames.len() as u64 + 1) * self.unit.bytes());
        let bytes = host.migrate(item.asid, item.va, self.unit.bytes(), &mut self.evicted)?;
        if self.cc.is_some() {
            self.cc_peak = self.cc_peak.max(host.resident_bytes());
        }
        let ev = self.note_evictions(at, host);
        let mut start = at.max(self.h2d_free);
        if ev > 0 {
            // Unobtrusive: this unit's eviction was issued when the previous migration began, on the other direction.
            let ev_start = if self.unobtrusive { prev_start.max(self.d2h_free) } else { start.max(self.d2h_free) };
            let ev_start = self.after_shootdown(ev_start);
            self.d2h_free = ev_start + self.transfer(false, ev);
            self.stats.d2h_busy_cycles += self.d2h_free - ev_start;
            start = start.max(self.d2h_free);
        } else if self.preempted && next == 0 {
            start = start.max(self.d2h_free);
        } else if pe_frame && bytes > 0 {
            // Its frame is free once the proactive eviction's transfer ends.
            if let Some(ready) = self.pe_frames.pop_front() {
                if ready > start {
                    self.pe_stats.proactive_wait_cycles += ready - start;
                    start = ready;
                }
            }
        }
        let end = start + self.transfer(true, bytes);
        self.stats.h2d_busy_cycles += end - start;
        self.stats.bytes_to_gpu += bytes;
        self.h2d_free = end;
        self.arrived.insert((item.asid, item.va), end);
        let fault = FarFault { asid: item.asid, va: item.va, size: self.unit, miss: u32::MAX };
        self.completing.push_back((end, fault));
        // Unobtrusive: when the next unit will need room, its eviction goes
        // out as this migration starts; otherwise the next unit is mapped
        // when this one ends, as in the baseline.
        let at = if self.unobtrusive && host.full(self.unit.bytes()) { start } else { end };
        self.phase = Phase::Migrating { next: next + 1, at, prev_start: start };
        Ok(())
    }
}

impl FaultPath for Uvm {
    fn premaps(&self) -> bool {
        false
    }

    fn unit(&self) -> Option<PageSize> {
        Some(self.unit)
    }

    fn memory(&self) -> f64 {
        self.memory
    }

    fn lifetimes(&self) -> (u64, u64) {
        (self.stats.lifetime_cycles, self.stats.evictions)
    }

    fn raise(&mut self, fault: FarFault, now: u64) -> Option<u64> {
        let key = self.key(fault.asid, fault.va);
        let fault = FarFault { va: key.1, size: self.unit, ..fault };
        if self.evicted_units.remove(&key) {
            self.stats.premature_evictions += 1;
            self.refaulted.insert(key);
            if let Some(mt) = self.mt.as_mut().filter(|m| m.signal == Signal::Premature) {
                mt.count(now, 1);
            }
        }
        self.waiting.insert(key);
        if self.buffer.len() < self.capacity {
            self.stats.faults += 1;
            self.buffer.push(fault);
            self.stats.peak_buffer = self.stats.peak_buffer.max(self.buffer.len() as u64);
        } else {
            self.stats.parked += 1;
            self.parked.push(fault);
        }
        if self.phase == Phase::Idle {
            // The interrupt: with no batch running, one begins now.
            self.interrupt_at = self.interrupt_at.min(now);
        }
        None
    }

    fn next_poll(&self) -> Option<u64> {
        let mut next = self.completing.front().map(|&(end, _)| end);
        let mut at = |t: u64| next = Some(next.map_or(t, |n| n.min(t)));
        match self.phase {
            Phase::Idle if !self.buffer.is_empty() => at(self.interrupt_at),
            Phase::Idle => {}
            Phase::Handling(until) => at(until),
            Phase::Migrating { next: n, at: t, .. } if n < self.items.len() => at(t),
            Phase::Migrating { .. } => {}
        }
        if let Some(t) = self.mt.as_ref().and_then(Mt::next_change) {
            at(t);
        }
        next
    }

    fn poll(&mut self, now: u64, host: &mut dyn PagingHost, done: &mut Vec<FarFault>) -> Result<()> {
        if let Some(mt) = &mut self.mt {
            mt.roll(now);
        }
        loop {
            while let Some(&(end, f)) = self.completing.front() {
                if end > now {
                    break;
                }
                self.completing.pop_front();
                host.arrived(f.asid, f.va, self.unit.bytes());
                done.push(f);
            }
            match self.phase {
                Phase::Idle => {
                    if self.buffer.is_empty() {
                        return Ok(());
                    }
                    self.interrupt_at = u64::MAX;
                    self.begin(now, host, done)?;
                }
                Phase::Handling(until) => {
                    if now < until {
                        return Ok(());
                    }
                    self.phase = Phase::Migrating { next: 0, at: until, prev_start: self.batch_start };
                }
                Phase::Migrating { next, at, prev_start } => {
                    if next == self.items.len() {
                        if !self.completing.is_empty() {
                            return Ok(());
                        }
                        // The last transfer ended: the batch is over.
                        self.stats.batch_cycles += now - self.batch_start;
                        self.phase = Phase::Idle;
                        if self.replay == Replay::BatchFlush {
                            // Flush, then replay: what is still buffered walks again and faults anew.
                            self.stats.flushed += self.buffer.len() as u64;
                            for f in self.buffer.drain(..) {
                                self.waiting.remove(&(f.asid, f.va));
                                done.push(f);
                            }
                            self.interrupt_at = u64::MAX;
                        }
                        self.service_open = !self.buffer.is_empty();
                        continue;
                    }
                    if now < at {
                        return Ok(());
                    }
                    self.issue(next, at, prev_start, host)?;
                }
            }
        }
    }

    fn throttle(&self) -> Option<bool> {
        self.mt.as_ref().map(Mt::throttled)
    }

    fn decompress_cycles(&self) -> u64 {
        self.cc.map_or(0, |(_, cycles, _)| cycles)
    }

    fn stalls_sms(&self) -> bool {
        self.shootdown.is_some()
    }

    fn visit_stats(&self, v: &mut dyn StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats, v);
        // Each option's stats only when it is on: runs without them report what they always did.
        if self.compression != 1.0 {
            crate::stats::visit_prefixed("pcie", &self.pcie_stats, v);
        }
        if self.proactive {
            crate::stats::visit_prefixed("etc", &self.pe_stats, v);
        }
        if let Some(sd) = &self.shootdown {
            crate::stats::visit_prefixed("shootdown", &sd.stats, v);
        }
        if let Some(mt) = &self.mt {
            let s = &mt.stats;
            v.counter("etc.mt_triggers", s.triggers, "times", "times memory-aware throttling began throttling half the SMs");
            v.counter("etc.mt_detection_epochs", s.detection_epochs, "epochs", "detection epochs of memory-aware throttling");
            v.counter("etc.mt_throttled_epochs", s.throttled_epochs, "epochs", "execution epochs run with half the SMs throttled");
            v.counter("etc.mt_free_epochs", s.free_epochs, "epochs", "execution epochs run with every SM, after the first trigger");
        }
        if let Some((ratio, _, _)) = self.cc {
            v.gauge("etc.cc_capacity_permille", (self.memory * 1000.0).round() as u64, "permille", "data the GPU memory holds with capacity compression, in thousandths of the footprint");
            v.gauge("etc.cc_peak_resident_bytes", self.cc_peak, "bytes", "most data (uncompressed bytes) held on the GPU at once");
            v.gauge("etc.cc_peak_stored_bytes", (self.cc_peak as f64 / ratio).round() as u64, "bytes", "the memory that data took, compressed");
        }
        for (k, &n) in self.histogram.iter().enumerate() {
            let name = if k == HISTOGRAM { format!("batch_size.gt_{}", 1u64 << (HISTOGRAM - 1)) } else { format!("batch_size.le_{}", 1u64 << k) };
            v.counter(&name, n, "batches", "batches by units migrated (faults and prefetches), in powers of two");
        }
    }
}

pub mod etc;
pub mod shootdown;

#[cfg(test)]
mod tests;
