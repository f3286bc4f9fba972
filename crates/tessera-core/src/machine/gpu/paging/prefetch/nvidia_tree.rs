//! `nvidia_tree`: the bitmap-tree prefetcher of NVIDIA's UVM driver.
//!
//! ## What it models
//! `uvm_perf_prefetch.c` of NVIDIA's open GPU kernel modules
//! (`kernel-open/nvidia-uvm`), as the driver runs it for a fault batch's
//! VA block. The 2 MiB block is a binary tree over its units
//! (the driver's leaves are 4 KiB pages; with 64 KiB units the leaves are
//! 64 KiB). A node's count is its units resident on the GPU or faulted in
//! this batch, after "growing the fault granularity": every 64 KiB big page
//! holding a fault counts as whole (nothing to grow with 64 KiB units). For
//! each fault, the path from its leaf to the root is walked and the highest
//! node with `count × 100 > units × threshold` is prefetched whole; a fault
//! with no such node adds nothing.
//!
//! ## Choices where the source is vague, and what is left out
//! - The tree is the aligned 2 MiB block. The driver sizes it to its VA
//!   block (the part of one allocation inside the 2 MiB region: fewer
//!   leaves, the last nodes cut at the end, the front padded to a big-page
//!   boundary) and never proposes pages outside it. Here units outside
//!   every allocation count as absent; a node may still cover them, and the
//!   fault path drops them. For allocations that cover whole 2 MiB blocks the
//!   two agree.
//! - The driver stops at the first fault whose region reaches the end of
//!   the block: a later fault lies in that region, whose ancestors did not
//!   qualify, so it would find the same region. Not reproduced (same set).
//! - `threshold = 100` never prefetches (no node can count more than all
//!   its units), as in the driver.
//! - Left out: thrashing detection (the driver neither grows nor prefetches
//!   around pages it finds thrashing), the first-touch case (a block with
//!   nothing resident anywhere, migrating to its preferred location, is
//!   populated whole), `uvm_perf_prefetch_min_faults` (1 by default: any
//!   fault prefetches), and big pages other than 64 KiB.
//!
//! ## Config
//! `kind = "nvidia_tree"`, `threshold = 51` (percent, 1 to 100; the driver's
//! `uvm_perf_prefetch_threshold`, whose comment gives the same range; the
//! driver itself also takes 0, which would prefetch the whole block).

use serde::{Deserialize, Serialize};

use super::{Bits, Block, PrefetchCtx, Prefetcher};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

/// The driver's big page: a fault counts its whole big page as present.
const BIG_PAGE_BYTES: u64 = 64 << 10;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Percent of a node's units present above which it is prefetched.
    #[serde(default = "d_threshold")]
    pub threshold: u32,
}
fn d_threshold() -> u32 {
    51
}
impl Default for Config {
    fn default() -> Self {
        Config { threshold: d_threshold() }
    }
}

#[derive(Clone, Debug)]
pub struct NvidiaTree {
    threshold: u32,
    /// Units per big page (1 with 64 KiB units).
    big: u32,
}

impl Mechanism for NvidiaTree {
    const NAME: &'static str = "nvidia_tree";
    const SUMMARY: &'static str = "highest tree node above each fault more than `threshold` % present (NVIDIA's UVM driver)";
    type Config = Config;
    type Ctx = PrefetchCtx;
    fn build(cfg: &Config, ctx: &PrefetchCtx) -> Result<Self> {
        if !(1..=100).contains(&cfg.threshold) {
            return Err(Error::config(
                "gpu.paging.prefetch.threshold",
                format!("must be a percentage from 1 to 100, not {}", cfg.threshold),
            ));
        }
        let big = (BIG_PAGE_BYTES / ctx.unit_bytes.max(1)).max(1) as u32;
        Ok(NvidiaTree { threshold: cfg.threshold, big })
    }
}

impl Prefetcher for NvidiaTree {
    fn prefetch(&mut self, block: &Block, out: &mut Bits) {
        if block.faulted.is_empty() {
            return;
        }
        let units = block.units;
        let big = self.big.min(units);
        let mut pages = block.resident.or(&block.faulted);
        for u in block.faulted.ones() {
            let lo = u / big * big;
            pages.set_range(lo, lo + big);
        }

        // Counts of every node, heap order: the root at 1, node `n`'s
        // children at 2n and 2n + 1, the leaves at `units..2 * units`.
        let mut count = [0u32; 1024];
        for u in 0..units {
            count[(units + u) as usize] = pages.get(u) as u32;
        }
        for n in (1..units as usize).rev() {
            count[n] = count[2 * n] + count[2 * n + 1];
        }

        let depth = units.trailing_zeros();
        for u in block.faulted.ones() {
            // Top-down, the first qualifying node is the highest one.
            for level in 0..=depth {
                let size = units >> level;
                let i = u >> (depth - level);
                if count[((1u32 << level) + i) as usize] * 100 > size * self.threshold {
                    out.set_range(i * size, (i + 1) * size);
                    break;
                }
            }
        }
    }
}
