//! `sequential_local`: each fault brings the aligned region around it.
//!
//! ## What it models
//! UVM-Smart's sequential-local prefetcher, SLp (Ganguly et al., "Interplay
//! between Hardware Prefetcher and Page Eviction Policy in CPU-GPU Unified
//! Virtual Memory", ISCA 2019; the baseline they credit to Zheng et al.,
//! "Towards High Performance Paged Memory for GPUs", HPCA 2016): the 2 MiB
//! block is cut into aligned regions of `size` (UVM-Smart's 64 KiB basic
//! blocks), and a fault migrates the whole region it falls in.
//!
//! ## Choices where the sources are vague
//! - The region size is a parameter; UVM-Smart fixes it at 64 KiB. With
//!   64 KiB migration units and the default size, a region is one unit and
//!   nothing is added: the prefetcher is then the same as `none`.
//! - Units of the region outside every allocation are proposed and dropped
//!   by the fault path (UVM-Smart validates them without a transfer).
//!
//! ## Config
//! `kind = "sequential_local"`, `size = "64KiB"`: a power-of-two multiple of
//! the migration unit, at most 2 MiB.

use serde::{Deserialize, Serialize};

use super::{region_units, Bits, Block, PrefetchCtx, Prefetcher};
use crate::config::spec::ByteSize;
use crate::error::Result;
use crate::registry::Mechanism;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Bytes of the aligned region a fault brings.
    #[serde(default = "d_size")]
    pub size: ByteSize,
}
fn d_size() -> ByteSize {
    ByteSize(64 << 10)
}
impl Default for Config {
    fn default() -> Self {
        Config { size: d_size() }
    }
}

#[derive(Clone, Debug)]
pub struct SequentialLocal {
    /// Units in one region.
    region: u32,
}

impl Mechanism for SequentialLocal {
    const NAME: &'static str = "sequential_local";
    const SUMMARY: &'static str = "each fault brings its aligned region of `size` (UVM-Smart's SLp)";
    type Config = Config;
    type Ctx = PrefetchCtx;
    fn build(cfg: &Config, ctx: &PrefetchCtx) -> Result<Self> {
        let region = region_units("gpu.paging.prefetch.size", cfg.size.0, ctx.unit_bytes)?;
        Ok(SequentialLocal { region })
    }
}

impl Prefetcher for SequentialLocal {
    fn prefetch(&mut self, block: &Block, out: &mut Bits) {
        let r = self.region;
        let mut last = None;
        for u in block.faulted.ones() {
            let lo = u / r * r;
            // Faults come in ascending order: a region is filled once.
            if last != Some(lo) {
                out.set_range(lo, (lo + r).min(block.units));
                last = Some(lo);
            }
        }
    }
}
