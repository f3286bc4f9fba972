//! `[gpu]`: the GPU machine's configuration (`machine.kind = "gpu"`).
//!
//! Every key has a default: the Mosaic paper's GPU (Table 1 of "Mosaic: A
//! GPU Memory Manager with Application-Transparent Support for Multiple
//! Page Sizes", MICRO 2017) where it gives one. The `mosaic_gpu` and
//! `uvm_gpu` presets set them from their papers; `docs/gpu.md` says where
//! each value comes from.

use serde::{Deserialize, Serialize};

use crate::addr::PageSize;
use crate::config::spec::{ByteSize, CacheLevelSpec, Ways};
use crate::error::{Error, Result};
use crate::registry::MechanismSpec;

use super::thread_oversubscription::ToSpec;

/// The whole `[gpu]` section.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// Streaming multiprocessors.
    #[serde(default = "d_sms")]
    pub sms: u32,
    /// Core clock, for converting microseconds (far faults) into cycles.
    #[serde(default = "d_clock")]
    pub clock_ghz: f64,
    /// Warp scheduler of each SM: `gto` (greedy then oldest) or `lrr` (loose round-robin).
    #[serde(default = "d_sched")]
    pub scheduler: String,
    /// Warp instructions an SM issues per cycle (from different warps).
    #[serde(default = "d_one")]
    pub issue_width: u32,
    /// Resident limits of one SM.
    #[serde(default = "d_warps")]
    pub max_warps_per_sm: u32,
    #[serde(default = "d_blocks")]
    pub max_blocks_per_sm: u32,
    #[serde(default = "d_threads")]
    pub max_threads_per_sm: u32,
    #[serde(default = "d_regs")]
    pub registers_per_sm: u32,
    #[serde(default = "d_shmem")]
    pub shared_memory_per_sm: ByteSize,
    /// Cycles before a warp can issue again after an ALU, branch or barrier instruction.
    #[serde(default = "d_one_u64")]
    pub alu_cycles: u64,
    /// Cycles before a warp can issue again after an SFU instruction.
    #[serde(default = "d_sfu")]
    pub sfu_cycles: u64,
    /// Load-to-use latency of shared, local and constant accesses (on chip, untranslated).
    #[serde(default = "d_shared")]
    pub shared_latency: u64,
    /// SMs given to each application, in order; empty: split equally.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sm_split: Vec<u32>,
    /// Every translation hits in the L1 TLB at no cost (the ideal-TLB bound).
    #[serde(default)]
    pub ideal_tlb: bool,
    /// What an L1 TLB miss does to the SM's load/store unit: `nonblocking`
    /// (the warp waits for its own pages, others issue) or `blocking`
    /// (GPGPU-Sim's: the instruction holds the unit and translates its pages
    /// one after another; no other warp of the SM issues a memory instruction
    /// until it is through).
    #[serde(default = "d_ldst")]
    pub ldst: String,
    /// How a launch spreads its thread blocks over the SMs: `fill` (each SM
    /// in turn takes all the blocks it can hold) or `round_robin` (one block
    /// per SM per round, as GPGPU-Sim's block issue does). They differ only
    /// for a grid smaller than the GPU holds at once. Later blocks go to
    /// whichever SM frees room first under both.
    #[serde(default = "d_dispatch", skip_serializing_if = "is_fill")]
    pub block_dispatch: String,
    #[serde(default = "d_l1_tlb")]
    pub l1_tlb: GpuTlbSpec,
    #[serde(default = "d_l2_tlb")]
    pub l2_tlb: GpuTlbSpec,
    #[serde(default)]
    pub walker: GpuWalkerSpec,
    #[serde(default = "d_l1d")]
    pub l1d: CacheLevelSpec,
    #[serde(default = "d_l2")]
    pub l2: CacheLevelSpec,
    /// Banks of the shared L2: a bank serves one reference per cycle.
    #[serde(default = "d_banks")]
    pub l2_banks: u32,
    #[serde(default)]
    pub dram: GpuDramSpec,
    /// The fault path (`demand`, `resident` or `uvm`).
    #[serde(default = "d_paging")]
    pub paging: MechanismSpec,
    /// Thread oversubscription: inactive thread blocks switched in when a
    /// running block waits on page faults (absent: off).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread_oversubscription: Option<ToSpec>,
}

/// One TLB level of the GPU: one array per page size it holds.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuTlbSpec {
    /// Arrays by page size (`"4k"`, `"64k"`, `"2m"`): entries and ways.
    pub arrays: std::collections::BTreeMap<String, GpuTlbArraySpec>,
    /// Cycles of a lookup.
    #[serde(default)]
    pub latency: u64,
    /// Lookups started per cycle (the L1 TLB takes one per page of an instruction).
    #[serde(default = "d_ports")]
    pub ports: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuTlbArraySpec {
    pub entries: u32,
    pub ways: Ways,
}

/// The shared, highly threaded page-table walker.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuWalkerSpec {
    /// Walks in flight at once; further misses wait in a FIFO queue.
    #[serde(default = "d_walks")]
    pub concurrent: u32,
    /// Cycles the walker adds to each reference (beyond the caches' latency).
    #[serde(default)]
    pub step_cycles: u64,
    /// An optional page-walk cache of page-table lines, probed before the L2 cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pwc: Option<CacheLevelSpec>,
}

impl Default for GpuWalkerSpec {
    fn default() -> Self {
        GpuWalkerSpec { concurrent: d_walks(), step_cycles: 0, pwc: None }
    }
}

/// DRAM: channels, each with a latency and a bandwidth.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuDramSpec {
    #[serde(default = "d_channels")]
    pub channels: u32,
    /// Cycles from a channel starting a line to its data at the L2.
    #[serde(default = "d_dram_lat")]
    pub latency: u64,
    /// Bytes one channel transfers per core cycle.
    #[serde(default = "d_bpc")]
    pub bytes_per_cycle: u32,
}

impl Default for GpuDramSpec {
    fn default() -> Self {
        GpuDramSpec { channels: d_channels(), latency: d_dram_lat(), bytes_per_cycle: d_bpc() }
    }
}

fn d_sms() -> u32 {
    30
}
fn d_clock() -> f64 {
    1.02
}
fn d_sched() -> String {
    "gto".into()
}
fn d_one() -> u32 {
    1
}
fn d_one_u64() -> u64 {
    1
}
fn d_warps() -> u32 {
    48
}
fn d_blocks() -> u32 {
    8
}
fn d_threads() -> u32 {
    1536
}
fn d_regs() -> u32 {
    32768
}
fn d_shmem() -> ByteSize {
    ByteSize(48 << 10)
}
fn d_sfu() -> u64 {
    4
}
fn d_shared() -> u64 {
    24
}
fn d_ports() -> u32 {
    1
}
fn d_walks() -> u32 {
    64
}
fn d_banks() -> u32 {
    12
}
fn d_channels() -> u32 {
    6
}
fn d_dram_lat() -> u64 {
    100
}
fn d_bpc() -> u32 {
    32
}
fn lru() -> MechanismSpec {
    MechanismSpec { kind: "lru".into(), params: toml::Table::new() }
}
fn none() -> MechanismSpec {
    MechanismSpec { kind: "none".into(), params: toml::Table::new() }
}
fn d_ldst() -> String {
    "nonblocking".into()
}
fn d_dispatch() -> String {
    "fill".into()
}
fn is_fill(s: &str) -> bool {
    s == "fill"
}
fn d_paging() -> MechanismSpec {
    MechanismSpec { kind: "demand".into(), params: toml::Table::new() }
}
fn array(entries: u32, ways: Ways) -> GpuTlbArraySpec {
    GpuTlbArraySpec { entries, ways }
}
fn d_l1_tlb() -> GpuTlbSpec {
    GpuTlbSpec {
        arrays: [("4k".to_string(), array(128, Ways::Full)), ("2m".to_string(), array(16, Ways::Full))].into(),
        latency: 1,
        ports: 1,
    }
}
fn d_l2_tlb() -> GpuTlbSpec {
    GpuTlbSpec {
        arrays: [("4k".to_string(), array(512, Ways::N(16))), ("2m".to_string(), array(256, Ways::Full))].into(),
        latency: 10,
        ports: 2,
    }
}
fn d_l1d() -> CacheLevelSpec {
    CacheLevelSpec { size: ByteSize(16 << 10), ways: Ways::N(4), line: ByteSize(128), latency: 1, replacement: lru(), prefetcher: none() }
}
fn d_l2() -> CacheLevelSpec {
    CacheLevelSpec { size: ByteSize(2 << 20), ways: Ways::N(16), line: ByteSize(128), latency: 10, replacement: lru(), prefetcher: none() }
}

impl Default for GpuSpec {
    fn default() -> Self {
        GpuSpec {
            sms: d_sms(),
            clock_ghz: d_clock(),
            scheduler: d_sched(),
            issue_width: 1,
            max_warps_per_sm: d_warps(),
            max_blocks_per_sm: d_blocks(),
            max_threads_per_sm: d_threads(),
            registers_per_sm: d_regs(),
            shared_memory_per_sm: d_shmem(),
            alu_cycles: 1,
            sfu_cycles: d_sfu(),
            shared_latency: d_shared(),
            sm_split: Vec::new(),
            ideal_tlb: false,
            ldst: d_ldst(),
            block_dispatch: d_dispatch(),
            l1_tlb: d_l1_tlb(),
            l2_tlb: d_l2_tlb(),
            walker: GpuWalkerSpec::default(),
            l1d: d_l1d(),
            l2: d_l2(),
            l2_banks: d_banks(),
            dram: GpuDramSpec::default(),
            paging: d_paging(),
            thread_oversubscription: None,
        }
    }
}

/// The schedulers, as written at `gpu.scheduler`.
pub const SCHEDULERS: [&str; 2] = ["gto", "lrr"];
/// The load/store unit's behaviour on an L1 TLB miss, as written at `gpu.ldst`.
pub const LDST: [&str; 2] = ["nonblocking", "blocking"];
/// How a launch spreads its blocks, as written at `gpu.block_dispatch`.
pub const DISPATCH: [&str; 2] = ["fill", "round_robin"];

impl GpuTlbSpec {
    /// The arrays as (page size, sets, ways), checked.
    pub fn geometry(&self, path: &str) -> Result<Vec<(PageSize, u32, u32)>> {
        let mut out = Vec::new();
        for (name, a) in &self.arrays {
            let key = format!("{path}.arrays.{name}");
            let size = PageSize::parse(name)
                .ok_or_else(|| Error::config_allowed(key.clone(), format!("unknown page size \"{name}\""), &PageSize::NAMES))?;
            let ways = a.ways.resolve(a.entries);
            if a.entries == 0 || ways == 0 || !a.entries.is_multiple_of(ways) || !(a.entries / ways).is_power_of_two() {
                return Err(Error::config(
                    format!("{key}.entries"),
                    format!("{} entries in {ways} ways: need a power-of-two number of sets", a.entries),
                ));
            }
            out.push((size, a.entries / ways, ways));
        }
        // Probed largest first (the Mosaic paper's order: a large hit skips the base array).
        out.sort_by_key(|&(s, _, _)| std::cmp::Reverse(s.bytes()));
        if self.ports == 0 {
            return Err(Error::config(format!("{path}.ports"), "must be at least 1"));
        }
        Ok(out)
    }
}

impl GpuSpec {
    /// Check what serde cannot: counts above zero, a known scheduler, a split that adds up.
    pub fn validate(&self) -> Result<()> {
        let positive = [
            ("gpu.sms", self.sms as u64),
            ("gpu.issue_width", self.issue_width as u64),
            ("gpu.max_warps_per_sm", self.max_warps_per_sm as u64),
            ("gpu.max_blocks_per_sm", self.max_blocks_per_sm as u64),
            ("gpu.max_threads_per_sm", self.max_threads_per_sm as u64),
            ("gpu.registers_per_sm", self.registers_per_sm as u64),
            ("gpu.alu_cycles", self.alu_cycles),
            ("gpu.sfu_cycles", self.sfu_cycles),
            ("gpu.l2_banks", self.l2_banks as u64),
            ("gpu.walker.concurrent", self.walker.concurrent as u64),
            ("gpu.dram.channels", self.dram.channels as u64),
            ("gpu.dram.bytes_per_cycle", self.dram.bytes_per_cycle as u64),
        ];
        for (key, v) in positive {
            if v == 0 {
                return Err(Error::config(key, "must be at least 1"));
            }
        }
        if self.max_warps_per_sm > 4096 {
            return Err(Error::config("gpu.max_warps_per_sm", format!("at most 4096, not {}", self.max_warps_per_sm)));
        }
        if !SCHEDULERS.contains(&self.scheduler.as_str()) {
            return Err(Error::config_allowed("gpu.scheduler", format!("unknown scheduler \"{}\"", self.scheduler), &SCHEDULERS));
        }
        if !LDST.contains(&self.ldst.as_str()) {
            return Err(Error::config_allowed("gpu.ldst", format!("unknown load/store unit \"{}\"", self.ldst), &LDST));
        }
        if !DISPATCH.contains(&self.block_dispatch.as_str()) {
            return Err(Error::config_allowed(
                "gpu.block_dispatch",
                format!("unknown block dispatch \"{}\"", self.block_dispatch),
                &DISPATCH,
            ));
        }
        if !(self.clock_ghz.is_finite() && self.clock_ghz > 0.0) {
            return Err(Error::config("gpu.clock_ghz", "must be a positive number of GHz"));
        }
        if !self.sm_split.is_empty() && (self.sm_split.contains(&0) || self.sm_split.iter().map(|&s| s as u64).sum::<u64>() > self.sms as u64) {
            return Err(Error::config(
                "gpu.sm_split",
                format!("{:?}: every application needs at least one SM, and they share {} SMs", self.sm_split, self.sms),
            ));
        }
        self.l1_tlb.geometry("gpu.l1_tlb")?;
        self.l2_tlb.geometry("gpu.l2_tlb")?;
        if let Some(to) = &self.thread_oversubscription {
            to.validate()?;
        }
        Ok(())
    }

    /// Inactive blocks an SM may hold at most (thread oversubscription).
    pub fn max_extra_blocks(&self) -> u32 {
        self.thread_oversubscription.as_ref().map_or(0, |t| t.max_extra_blocks)
    }

    /// Warp slots of one SM: those it runs, and room for its inactive blocks
    /// (a block has at most `max_warps_per_sm` warps).
    pub fn warp_slots(&self) -> u32 {
        self.max_warps_per_sm * (1 + self.max_extra_blocks())
    }

    /// Thread-block slots of one SM, active and inactive.
    pub fn block_slots(&self) -> u32 {
        self.max_blocks_per_sm + self.max_extra_blocks()
    }

    /// SMs of each of `apps` applications: `sm_split`, or an equal split
    /// (the first `sms % apps` applications get one more).
    pub fn split(&self, apps: usize) -> Result<Vec<u32>> {
        if apps == 0 {
            return Err(Error::config("apps", "a GPU run needs at least one application"));
        }
        if !self.sm_split.is_empty() {
            if self.sm_split.len() != apps {
                return Err(Error::config("gpu.sm_split", format!("{} entries for {apps} applications", self.sm_split.len())));
            }
            return Ok(self.sm_split.clone());
        }
        if apps as u64 > self.sms as u64 {
            return Err(Error::config("apps", format!("{apps} applications on {} SMs: each needs at least one SM", self.sms)));
        }
        let (each, extra) = (self.sms / apps as u32, self.sms % apps as u32);
        Ok((0..apps as u32).map(|i| each + (i < extra) as u32).collect())
    }

    /// Cycles of `us` microseconds at the core clock.
    pub fn cycles_of_us(&self, us: f64) -> u64 {
        (us * 1000.0 * self.clock_ghz).round() as u64
    }
}
