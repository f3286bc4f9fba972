//! The CPU interval timing model (`timing.kind = "interval"`, the default).
//!
//! ```text
//! cycles = instructions × base_cpi + data stall cycles + translation stall cycles
//! ```
//! - Data stall: each load/store costs the latency of the cache level (or DRAM)
//!   that served it; with `timing.l1_hit_in_cpi` (default) an L1D hit is part of
//!   the base CPI, so only the latency beyond an L1D hit stalls.
//! - Translation stall: the latencies of the TLB levels probed, plus, on a miss
//!   of every level, the walk's cycles (PSC latency + per reference the walker
//!   step cost and the serving level's latency).
//!
//! Components report latencies; only this model turns them into time, so a GPU
//! event model can drive the same components differently.

use crate::cache::Served;
use crate::config::spec::TimingSpec;

use super::CoreStats;

/// Turns component latencies into stall cycles.
#[derive(Clone, Debug)]
pub struct IntervalModel {
    pub enabled: bool,
    base_cpi: f64,
    /// Latency subtracted from every data access (the L1D hit latency when it is in the CPI).
    hidden: u32,
}

impl IntervalModel {
    pub fn new(spec: &TimingSpec, l1_latency: Option<u32>) -> Self {
        let hidden = if spec.l1_hit_in_cpi { l1_latency.unwrap_or(0) } else { 0 };
        IntervalModel { enabled: spec.enabled, base_cpi: spec.base_cpi, hidden }
    }

    /// Stall cycles of one data access served as `s`.
    #[inline]
    pub fn data_stall(&self, s: Served) -> u64 {
        s.latency.saturating_sub(self.hidden) as u64
    }

    /// Fill the derived cycle counters of `core` from its accumulated stalls.
    pub fn finish(&self, core: &mut CoreStats) {
        if !self.enabled {
            core.base_cycles = 0;
            core.cycles = 0;
            return;
        }
        core.base_cycles = (core.instructions as f64 * self.base_cpi).round() as u64;
        core.cycles = core.base_cycles + core.data_stall_cycles + core.translation_stall_cycles;
    }
}
