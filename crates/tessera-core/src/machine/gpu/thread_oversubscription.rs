//! Thread oversubscription (`[gpu.thread_oversubscription]`): more thread
//! blocks on an SM than it can run, switched in when a running block waits
//! on page faults.
//!
//! ## What it models
//! Kim et al., "Batch-Aware Unified Memory Management in GPUs for Irregular
//! Workloads" (ASPLOS 2020, doi:10.1145/3373376.3378529), §4.1, built on
//! Virtual Thread (Yoon et al., ISCA 2016, doi:10.1109/ISCA.2016.57):
//! - Each SM holds `extra_blocks` thread blocks beyond the ones it runs,
//!   *inactive*: dispatched (their slots and warp ids taken) but not
//!   scheduled, their context in global memory. The blocks that run (the
//!   *active* ones) never exceed what the SM runs without oversubscription.
//! - When every live warp of an active block waits on a far fault (or on a
//!   barrier behind one that does), the block is switched out: its context
//!   is saved to global memory and the oldest inactive block none of whose
//!   warps waits on a fault is switched in, restoring its context if it ran
//!   before. Its warps issue again when both transfers are done.
//! - Every `epoch_cycles` the controller compares the average lifetime of
//!   the pages evicted in the epoch (arrival to eviction, from the fault
//!   path) with the previous epoch's: a drop of `lifetime_drop` or more
//!   (premature evictions rising) takes one extra block away from every SM;
//!   otherwise one more is allowed, up to `max_extra_blocks`.
//!
//! ## Choices where the paper is silent (docs/uvm.md)
//! - Switch-in order: the oldest ready inactive block (by dispatch). A
//!   switched-out block whose faults are all served waits until an active
//!   block stalls or ends.
//! - A context is the block's registers (4 bytes per register), its shared
//!   memory and `block_state_bytes` of per-block state (Virtual Thread's
//!   example: 5 KB). Saving or restoring it costs `context_latency` plus
//!   bytes / `context_bytes_per_cycle` cycles: the paper keeps contexts in
//!   global memory without giving the cost. Other blocks of the SM go on
//!   issuing during a switch.
//! - An inactive block dispatched at a kernel's start has no context to
//!   restore: switching it in costs only the outgoing block's save.
//! - The lifetime average is per epoch (the evictions inside it). An epoch
//!   without evictions gives no evidence of premature eviction: the degree
//!   grows. When it falls, blocks already dispatched stay; fewer are added.
//! - When an active block ends, its room goes to the oldest ready inactive
//!   block, else to a new block of the kernel, else to the oldest inactive
//!   block (all of them wait on faults).

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::stat_group;
use crate::stats::{StatGroup, StatVisitor};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToSpec {
    /// Inactive blocks per SM at the start.
    #[serde(default = "d_extra")]
    pub extra_blocks: u32,
    /// Most inactive blocks per SM the controller may allow.
    #[serde(default = "d_max")]
    pub max_extra_blocks: u32,
    /// Change the number of extra blocks every epoch from page lifetimes.
    #[serde(default = "d_true")]
    pub adaptive: bool,
    #[serde(default = "d_epoch")]
    pub epoch_cycles: u64,
    /// Relative drop of the average page lifetime that counts as premature eviction rising.
    #[serde(default = "d_drop")]
    pub lifetime_drop: f64,
    /// Cycles before a context transfer to or from global memory starts moving bytes.
    #[serde(default = "d_latency")]
    pub context_latency: u64,
    #[serde(default = "d_bandwidth")]
    pub context_bytes_per_cycle: u64,
    /// Per-block state saved beside the registers and shared memory.
    #[serde(default = "d_state")]
    pub block_state_bytes: u64,
}
fn d_extra() -> u32 {
    1
}
fn d_max() -> u32 {
    4
}
fn d_true() -> bool {
    true
}
fn d_epoch() -> u64 {
    100_000
}
fn d_drop() -> f64 {
    0.2
}
fn d_latency() -> u64 {
    200
}
fn d_bandwidth() -> u64 {
    32
}
fn d_state() -> u64 {
    5 * 1024
}

impl Default for ToSpec {
    fn default() -> Self {
        ToSpec {
            extra_blocks: d_extra(),
            max_extra_blocks: d_max(),
            adaptive: true,
            epoch_cycles: d_epoch(),
            lifetime_drop: d_drop(),
            context_latency: d_latency(),
            context_bytes_per_cycle: d_bandwidth(),
            block_state_bytes: d_state(),
        }
    }
}

const KEY: &str = "gpu.thread_oversubscription";

impl ToSpec {
    pub fn validate(&self) -> Result<()> {
        if self.max_extra_blocks == 0 {
            return Err(Error::config(
                &format!("{KEY}.max_extra_blocks"),
                "thread oversubscription needs at least one spare thread-block slot per SM (1 or more)",
            ));
        }
        if self.max_extra_blocks > 16 {
            return Err(Error::config(&format!("{KEY}.max_extra_blocks"), format!("at most 16, not {}", self.max_extra_blocks)));
        }
        if self.extra_blocks > self.max_extra_blocks {
            return Err(Error::config(
                &format!("{KEY}.extra_blocks"),
                format!("{} is more than max_extra_blocks ({})", self.extra_blocks, self.max_extra_blocks),
            ));
        }
        if self.extra_blocks == 0 && !self.adaptive {
            return Err(Error::config(
                &format!("{KEY}.extra_blocks"),
                "0 spare thread-block slots and adaptive = false: no block is ever oversubscribed (1 or more)",
            ));
        }
        if self.epoch_cycles == 0 {
            return Err(Error::config(&format!("{KEY}.epoch_cycles"), "must be at least 1"));
        }
        if self.context_bytes_per_cycle == 0 {
            return Err(Error::config(&format!("{KEY}.context_bytes_per_cycle"), "must be at least 1"));
        }
        if !(self.lifetime_drop > 0.0 && self.lifetime_drop < 1.0) {
            return Err(Error::config(&format!("{KEY}.lifetime_drop"), format!("a share in (0, 1), not {}", self.lifetime_drop)));
        }
        Ok(())
    }

    /// Cycles to save or restore the context of a block of `regs` registers and `shmem` bytes.
    pub fn context_cycles(&self, regs: u32, shmem: u32) -> u64 {
        let bytes = regs as u64 * 4 + shmem as u64 + self.block_state_bytes;
        self.context_latency + bytes.div_ceil(self.context_bytes_per_cycle)
    }
}

stat_group! {
    /// What thread oversubscription did (`gpu.to.*`).
    pub struct ToStats {
        switches: "switches", "active blocks switched out because every warp waited on a fault",
        save_cycles: "cycles", "cycles of context saves, summed",
        restore_cycles: "cycles", "cycles of context restores, summed",
        inactive_dispatched: "blocks", "blocks dispatched inactive, beyond what the SMs run",
        epochs: "epochs", "degree-control epochs",
        degree_ups: "epochs", "epochs after which one more extra block per SM was allowed",
        degree_downs: "epochs", "epochs whose average page lifetime dropped by lifetime_drop or more: one extra block fewer",
        degree: gauge "blocks", "extra blocks per SM allowed at the end",
        peak_degree: gauge "blocks", "most extra blocks per SM allowed at once",
    }
}

/// The degree controller: how many inactive blocks each SM may hold.
#[derive(Clone, Debug)]
pub struct ToControl {
    pub spec: ToSpec,
    pub degree: u32,
    /// Lifetime sum and count at the last epoch's end.
    seen: (u64, u64),
    /// The last epoch's average lifetime that had evictions.
    previous: Option<f64>,
    pub stats: ToStats,
}

impl ToControl {
    pub fn new(spec: &ToSpec) -> ToControl {
        let stats = ToStats { degree: spec.extra_blocks as u64, peak_degree: spec.extra_blocks as u64, ..ToStats::default() };
        ToControl { spec: spec.clone(), degree: spec.extra_blocks, seen: (0, 0), previous: None, stats }
    }

    /// An epoch ended with the fault path's lifetime totals (cycles, evicted
    /// units) so far: adjust the degree. Whether it grew.
    pub fn epoch(&mut self, lifetimes: (u64, u64)) -> bool {
        let (sum, count) = (lifetimes.0 - self.seen.0, lifetimes.1 - self.seen.1);
        self.seen = lifetimes;
        self.stats.epochs += 1;
        let average = (count > 0).then(|| sum as f64 / count as f64);
        let dropped = matches!((average, self.previous), (Some(now), Some(before)) if now <= before * (1.0 - self.spec.lifetime_drop));
        if average.is_some() {
            self.previous = average;
        }
        let before = self.degree;
        if dropped {
            self.degree = self.degree.saturating_sub(1);
            self.stats.degree_downs += 1;
        } else if self.degree < self.spec.max_extra_blocks {
            self.degree += 1;
            self.stats.degree_ups += 1;
        }
        self.stats.degree = self.degree as u64;
        self.stats.peak_degree = self.stats.peak_degree.max(self.degree as u64);
        self.degree > before
    }

    pub fn visit(&self, v: &mut dyn StatVisitor) {
        self.stats.visit(v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_cost_is_latency_plus_bytes_over_bandwidth() {
        let s = ToSpec::default();
        // Virtual Thread's example: 2048 threads x 10 registers = 80 KiB, plus 5 KiB of state.
        assert_eq!(s.context_cycles(20480, 0), 200 + (81920 + 5120) / 32);
        assert_eq!(s.context_cycles(0, 100), 200 + (100 + 5120_u64).div_ceil(32));
    }

    #[test]
    fn degree_falls_on_a_lifetime_drop_and_grows_otherwise() {
        let mut c = ToControl::new(&ToSpec { max_extra_blocks: 3, ..ToSpec::default() });
        assert_eq!(c.degree, 1);
        assert!(c.epoch((0, 0)), "no evictions: grow");
        assert_eq!(c.degree, 2);
        assert!(c.epoch((1000, 10)), "first average (100): nothing to compare with");
        assert_eq!(c.degree, 3);
        assert!(!c.epoch((1000 + 810, 20)), "81 is a 19 % drop: stays at the maximum");
        assert_eq!(c.degree, 3);
        assert!(!c.epoch((1810 + 640, 30)), "64 after 81 is a 21 % drop");
        assert_eq!(c.degree, 2);
        assert!(c.epoch((2450, 30)), "an epoch without evictions");
        assert_eq!(c.degree, 3);
        assert!(!c.epoch((2450 + 510, 40)), "51 after 64 (the last average) drops 20.3 %");
        assert_eq!(c.degree, 2);
        assert_eq!((c.stats.epochs, c.stats.degree_ups, c.stats.degree_downs, c.stats.peak_degree), (6, 3, 2, 3));
        for _ in 0..5 {
            c.epoch((2960 + 1, 41)); // average 1: always a drop after 51, then after 1 none
        }
        assert_eq!(c.degree, 3, "one drop to 1, then growth back to the cap");
    }

    #[test]
    fn bad_keys_are_named() {
        let bad = [
            (ToSpec { max_extra_blocks: 0, extra_blocks: 0, ..ToSpec::default() }, "max_extra_blocks"),
            (ToSpec { extra_blocks: 5, ..ToSpec::default() }, "extra_blocks"),
            (ToSpec { extra_blocks: 0, adaptive: false, ..ToSpec::default() }, "extra_blocks"),
            (ToSpec { epoch_cycles: 0, ..ToSpec::default() }, "epoch_cycles"),
            (ToSpec { lifetime_drop: 1.5, ..ToSpec::default() }, "lifetime_drop"),
            (ToSpec { context_bytes_per_cycle: 0, ..ToSpec::default() }, "context_bytes_per_cycle"),
        ];
        for (s, key) in bad {
            let e = s.validate().unwrap_err().to_string();
            assert!(e.contains(&format!("gpu.thread_oversubscription.{key}")), "{e}");
        }
    }
}
