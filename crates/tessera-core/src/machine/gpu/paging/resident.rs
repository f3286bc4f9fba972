//! `resident`: all data on the GPU at launch (the Mosaic paper's runs
//! "without demand paging cost"). Every allocation is mapped before the
//! first kernel; a page outside every allocation (an Accel-Sim trace
//! touching memory it did not copy in) is mapped when first walked, at no
//! cost, and counted.

use serde::{Deserialize, Serialize};

use super::{FarFault, FaultPath, PagingCtx, PagingHost};
use crate::addr::PageSize;
use crate::error::Result;
use crate::registry::Mechanism;
use crate::stat_group;
use crate::stats::StatVisitor;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

stat_group! {
    pub struct ResidentStats {
        unallocated_faults: "pages", "pages outside every allocation, mapped at no cost when first walked",
    }
}

#[derive(Clone, Debug)]
pub struct Resident {
    stats: ResidentStats,
}

impl Mechanism for Resident {
    const NAME: &'static str = "resident";
    const SUMMARY: &'static str = "every allocation mapped before the first kernel; no far faults";
    type Config = Config;
    type Ctx = PagingCtx;
    fn build(_: &Config, _: &PagingCtx) -> Result<Self> {
        Ok(Resident { stats: ResidentStats::default() })
    }
}

impl FaultPath for Resident {
    fn premaps(&self) -> bool {
        true
    }

    fn raise(&mut self, _: FarFault, now: u64) -> Option<u64> {
        self.stats.unallocated_faults += 1;
        Some(now)
    }

    fn unit(&self) -> Option<PageSize> {
        None
    }

    fn memory(&self) -> f64 {
        1.0
    }

    fn next_poll(&self) -> Option<u64> {
        None
    }

    fn poll(&mut self, _: u64, _: &mut dyn PagingHost, _: &mut Vec<FarFault>) -> Result<()> {
        Ok(())
    }

    fn visit_stats(&self, v: &mut dyn StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats, v);
    }
}
