//! `tree_neighbourhood`: UVM-Smart's tree-based neighbourhood prefetcher.
//!
//! ## What it models
//! TBNp of Ganguly et al., "Interplay between Hardware Prefetcher and Page
//! Eviction Policy in CPU-GPU Unified Virtual Memory" (ISCA 2019), as their
//! simulator (gpgpu-sim_UVMSmart, `do_hardware_prefetch` and
//! `traverse_and_fill_lp_tree`) implements it. The 2 MiB block is a full
//! binary tree whose leaves are basic blocks (64 KiB). A batch first
//! schedules the basic block of every fault (as `sequential_local`); then,
//! children before parents, every node above the leaves whose valid part
//! (resident or scheduled) is *strictly* more than half of it and not all of
//! it is filled: all its units are scheduled. A filled node counts as full
//! for its ancestors, so filling cascades upwards within the pass.
//!
//! ## Choices where the source is vague
//! - One post-order pass, as the reference does. It is already a fixed
//!   point: filling a node changes only its own subtree, whose nodes were
//!   decided before it and are then all full, and nodes outside the subtree
//!   are either disjoint from it or its ancestors, decided later with the
//!   fill counted. A second pass never fills anything (a test checks this).
//! - Valid is counted in units, resident or scheduled. The reference counts
//!   bytes per basic block as they are transferred; the halves compare the
//!   same either way.
//! - A filled node schedules all its units. The reference fills only the
//!   basic blocks with nothing valid and leaves a partly valid one partly
//!   valid (in its own runs a basic block is only partly valid after pages
//!   were evicted one by one); here such a block is completed, the fault
//!   path dropping what is already resident.
//! - Basic blocks themselves are never filled by the rule, only scheduled by
//!   a fault, as in the reference.
//! - A block with no fault proposes nothing: the reference runs the tree
//!   only for the 2 MiB blocks that faulted in the batch.
//! - Units outside every allocation count as not valid until a fill
//!   schedules them (the fault path then drops them); the reference's tree
//!   covers allocated memory only and validates such pages without a
//!   transfer.
//!
//! ## Config
//! `kind = "tree_neighbourhood"`, `basic_block = "64KiB"`: the leaves, a
//! power-of-two multiple of the migration unit, at most 2 MiB.

use serde::{Deserialize, Serialize};

use super::{region_units, Bits, Block, PrefetchCtx, Prefetcher};
use crate::config::spec::ByteSize;
use crate::error::Result;
use crate::registry::Mechanism;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Bytes of a leaf of the tree.
    #[serde(default = "d_basic_block")]
    pub basic_block: ByteSize,
}
fn d_basic_block() -> ByteSize {
    ByteSize(64 << 10)
}
impl Default for Config {
    fn default() -> Self {
        Config { basic_block: d_basic_block() }
    }
}

#[derive(Clone, Debug)]
pub struct TreeNeighbourhood {
    /// Units in one basic block.
    leaf: u32,
}

impl Mechanism for TreeNeighbourhood {
    const NAME: &'static str = "tree_neighbourhood";
    const SUMMARY: &'static str = "faulted basic blocks, then every tree node more than half valid filled (UVM-Smart's TBNp)";
    type Config = Config;
    type Ctx = PrefetchCtx;
    fn build(cfg: &Config, ctx: &PrefetchCtx) -> Result<Self> {
        let leaf = region_units("gpu.paging.prefetch.basic_block", cfg.basic_block.0, ctx.unit_bytes)?;
        Ok(TreeNeighbourhood { leaf })
    }
}

impl Prefetcher for TreeNeighbourhood {
    fn prefetch(&mut self, block: &Block, out: &mut Bits) {
        if block.faulted.is_empty() {
            return;
        }
        let leaf = self.leaf.min(block.units);
        let mut scheduled = Bits::default();
        for u in block.faulted.ones() {
            let lo = u / leaf * leaf;
            scheduled.set_range(lo, lo + leaf);
        }
        let valid = block.resident.or(&scheduled);

        // Valid units per node of the current level, children overwritten
        // by their parent in place (a parent's index is at most its left
        // child's). Levels bottom-up decide every node after its subtree,
        // as the reference's post-order does.
        let mut count = [0u32; 512];
        let mut nodes = block.units / leaf;
        for (i, c) in count.iter_mut().take(nodes as usize).enumerate() {
            let lo = i as u32 * leaf;
            *c = valid.count_range(lo, lo + leaf);
        }
        let mut size = leaf;
        while nodes > 1 {
            nodes /= 2;
            size *= 2;
            for i in 0..nodes as usize {
                let mut c = count[2 * i] + count[2 * i + 1];
                if 2 * c > size && c < size {
                    let lo = i as u32 * size;
                    scheduled.set_range(lo, lo + size);
                    c = size;
                }
                count[i] = c;
            }
        }
        *out = out.or(&scheduled);
    }
}
