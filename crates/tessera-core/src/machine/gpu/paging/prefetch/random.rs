//! `random`: each fault brings one more unit drawn at random.
//!
//! ## What it models
//! UVM-Smart's random prefetcher, Rp (Ganguly et al., ISCA 2019, and their
//! simulator gpgpu-sim_UVMSmart, `do_hardware_prefetch`): for every faulted
//! page, one page of its 2 MiB block drawn uniformly is migrated with it.
//!
//! ## Choices where the source is vague
//! - The draw is over the block's allocated units (the reference draws over
//!   its tree, which covers allocated memory only). A draw that lands on a
//!   resident or faulted unit, or on one drawn already, is not repeated: the
//!   fault path drops it, as the reference skips it.
//! - Generator: [`crate::rng::SimRng`] seeded from [`PrefetchCtx::seed`];
//!   one draw (`gen_range(0..allocated)` over `u32`) per faulted unit in
//!   ascending order, none for a block with nothing allocated. The sequence
//!   carries over from block to block, so a run is reproducible.
//!
//! ## Config
//! `kind = "random"` (no parameters).

use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

use super::{Bits, Block, PrefetchCtx, Prefetcher};
use crate::error::Result;
use crate::registry::Mechanism;
use crate::rng::SimRng;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct RandomPrefetch {
    rng: SimRng,
}

impl Mechanism for RandomPrefetch {
    const NAME: &'static str = "random";
    const SUMMARY: &'static str = "one uniformly drawn allocated unit per fault (UVM-Smart's Rp, seeded)";
    type Config = Config;
    type Ctx = PrefetchCtx;
    fn build(_: &Config, ctx: &PrefetchCtx) -> Result<Self> {
        Ok(RandomPrefetch { rng: SimRng::seed_from_u64(ctx.seed) })
    }
}

/// The `k`-th set unit of `bits` (from 0), if there are more than `k`.
fn select(bits: &Bits, mut k: u32) -> Option<u32> {
    for (w, &word) in bits.0.iter().enumerate() {
        let ones = word.count_ones();
        if k < ones {
            let mut word = word;
            for _ in 0..k {
                word &= word - 1;
            }
            return Some(w as u32 * 64 + word.trailing_zeros());
        }
        k -= ones;
    }
    None
}

impl Prefetcher for RandomPrefetch {
    fn prefetch(&mut self, block: &Block, out: &mut Bits) {
        let allocated = block.allocated.count();
        if allocated == 0 {
            return;
        }
        for _ in block.faulted.ones() {
            let k = self.rng.gen_range(0..allocated);
            if let Some(u) = select(&block.allocated, k) {
                out.set(u);
            }
        }
    }
}
