//! What eviction's TLB shootdowns cost (`gpu.paging.shootdown`; absent:
//! nothing, as before). Beyond the batch-aware paper, which does not model
//! them.
//!
//! An eviction unmaps its pages and must drop their translations from every
//! TLB that may hold them before its copy to the host begins: the shared L2
//! TLB and the L1 TLBs of the SMs that may have used them. With `scope =
//! "app"` those are the SMs of the applications owning the evicted pages
//! (each SM runs one application); with `scope = "all"` the invalidation is
//! broadcast to every SM of the GPU, so on a GPU shared by several
//! applications it reaches the others' SMs too.
//!
//! - One shootdown per eviction: the pages the OS unmaps at once to make one
//!   room (a unit, or a root chunk) are invalidated together, as NVIDIA's
//!   driver batches a range's invalidations (`uvm_tlb_batch`).
//! - It is issued when the pages are unmapped and lasts `cycles +
//!   per_sm_cycles × SMs reached`: the invalidate and its acknowledgement,
//!   plus a part per L1 TLB it must reach.
//! - The timeline: the eviction's transfer to the host begins no earlier
//!   than the shootdown's end (the page must not change under the copy), so
//!   in the baseline the migration that needed the room waits for it too;
//!   with unobtrusive or proactive eviction it may hide under other work.
//! - The SMs reached issue nothing until it ends (their requests in flight
//!   go on). Shootdowns issued together overlap: an SM stalls until the
//!   latest end, counted once.

use serde::{Deserialize, Serialize};

use super::super::PagingHost;
use crate::addr::Asid;
use crate::error::{Error, Result};
use crate::os::Evicted;
use crate::stat_group;

pub const SCOPES: [&str; 2] = ["app", "all"];

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShootdownConfig {
    /// Cycles of every shootdown (the invalidate and its acknowledgement).
    #[serde(default)]
    pub cycles: u64,
    /// Cycles added per SM whose L1 TLB the shootdown reaches.
    #[serde(default)]
    pub per_sm_cycles: u64,
    /// `"app"`: the SMs of the evicted pages' applications; `"all"`: every SM.
    #[serde(default = "d_scope")]
    pub scope: String,
}

fn d_scope() -> String {
    "app".into()
}

impl Default for ShootdownConfig {
    fn default() -> Self {
        ShootdownConfig { cycles: 0, per_sm_cycles: 0, scope: d_scope() }
    }
}

stat_group! {
    /// TLB shootdowns of eviction (`gpu.paging.shootdown`).
    pub struct ShootdownStats {
        shootdowns: "shootdowns", "TLB shootdowns evictions made (one per eviction: the pages unmapped at once)",
        sms_reached: "SMs", "SMs whose L1 TLB the shootdowns reached, summed",
        cycles: "cycles", "cycles the shootdowns lasted, summed (cycles + per_sm_cycles × SMs reached each)",
        timeline_cycles: "cycles", "cycles eviction transfers to the host waited for their shootdown, summed",
        stall_sm_cycles: "cycles", "SM-cycles the SMs reached could not issue (summed over SMs; overlapping shootdowns once)",
    }
}

#[derive(Clone, Debug)]
pub struct ShootdownCost {
    cycles: u64,
    per_sm: u64,
    all: bool,
    /// The last shootdown's end: the eviction's transfer begins no earlier.
    until: u64,
    /// The applications of one eviction's pages (reused).
    asids: Vec<Asid>,
    pub stats: ShootdownStats,
}

impl ShootdownCost {
    pub fn new(cfg: &ShootdownConfig) -> Result<ShootdownCost> {
        let all = match cfg.scope.as_str() {
            "app" => false,
            "all" => true,
            other => return Err(Error::config_allowed("gpu.paging.shootdown.scope", format!("unknown scope \"{other}\""), &SCOPES)),
        };
        Ok(ShootdownCost { cycles: cfg.cycles, per_sm: cfg.per_sm_cycles, all, until: 0, asids: Vec::new(), stats: ShootdownStats::default() })
    }

    /// The pages of `evicted` were unmapped at `now`: shoot them down.
    pub fn shoot(&mut self, now: u64, evicted: &[Evicted], host: &mut dyn PagingHost) {
        if evicted.is_empty() {
            return;
        }
        self.asids.clear();
        for e in evicted {
            if !self.asids.contains(&e.asid) {
                self.asids.push(e.asid);
            }
        }
        let reached: u32 = if self.all { host.sms(None) } else { self.asids.iter().map(|&a| host.sms(Some(a))).sum() };
        let cost = self.cycles + self.per_sm * reached as u64;
        let s = &mut self.stats;
        s.shootdowns += 1;
        s.sms_reached += reached as u64;
        s.cycles += cost;
        if cost == 0 {
            // A transfer placed before `now` (unobtrusive eviction's) must not be pulled up to it.
            self.until = 0;
            return;
        }
        self.until = now + cost;
        if self.all {
            s.stall_sm_cycles += host.stall_sms(None, self.until);
        } else {
            for &a in &self.asids {
                s.stall_sm_cycles += host.stall_sms(Some(a), self.until);
            }
        }
    }

    /// The cycle an eviction's transfer that would begin at `start` begins:
    /// after its shootdown.
    pub fn after(&mut self, start: u64) -> u64 {
        if self.until > start {
            self.stats.timeline_cycles += self.until - start;
            return self.until;
        }
        start
    }
}
