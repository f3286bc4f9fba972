//! Uniformly distributed retired frames.
//!
//! ## What it models
//! Each 4 KiB frame is retired independently with probability `fraction`:
//! the uniform random retired pages of the GTSM paper's Fig. 3 and Monte
//! Carlo, for which a block of n frames is clean with probability
//! (1 − fraction)^n.
//! ## Paper
//! "Supporting superpages in non-contiguous physical memory", HPCA 2015,
//! §2 (Fig. 3) and §4.1.
//! ## Choices where the paper is silent
//! - Independent per frame (a binomial count), not an exact count of
//!   `round(fraction × frames)`: the closed forms the paper's figures follow
//!   assume independence.
//! - Drawn from the run seed's `physmem.retired` generator, by geometric
//!   skips between retired frames.
//! ## Config
//! `kind = "uniform"`, `fraction` (0 ≤ fraction < 1, default 0).
//! ## Stats
//! Those of the family (`physmem.retired_frames`, `physmem.retired.*`).

use serde::{Deserialize, Serialize};

use super::{bernoulli_indices, Fraction, RetireCtx, RetiredMap, Retirement};
use crate::error::Result;
use crate::registry::Mechanism;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Probability that a frame is retired.
    #[serde(default)]
    pub fraction: Fraction,
}

#[derive(Clone, Debug)]
pub struct Uniform {
    fraction: f64,
    seed: u64,
}

impl Mechanism for Uniform {
    const NAME: &'static str = "uniform";
    const SUMMARY: &'static str = "each frame retired independently with probability `fraction`";
    type Config = Config;
    type Ctx = RetireCtx;
    fn build(cfg: &Config, ctx: &RetireCtx) -> Result<Self> {
        Ok(Uniform { fraction: cfg.fraction.0, seed: ctx.seed })
    }
}

impl Retirement for Uniform {
    fn mark(&self, map: &mut RetiredMap) -> Result<()> {
        let mut rng = crate::rng::component_rng(self.seed, "physmem.retired");
        bernoulli_indices(&mut rng, map.capacity_frames(), self.fraction, |f| map.retire(f));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(fraction: f64, cap: u64, seed: u64) -> RetiredMap {
        let u = Uniform::build(&Config { fraction: Fraction(fraction) }, &RetireCtx { capacity_frames: cap, seed }).unwrap();
        let mut m = RetiredMap::new(cap);
        u.mark(&mut m).unwrap();
        m
    }

    #[test]
    fn same_seed_same_map_other_seed_other_map() {
        assert_eq!(map(0.01, 1 << 16, 3), map(0.01, 1 << 16, 3));
        assert_ne!(map(0.01, 1 << 16, 3), map(0.01, 1 << 16, 4));
        assert_eq!(map(0.0, 1 << 16, 3).count(), 0);
    }

    #[test]
    fn clean_2m_blocks_follow_the_binomial_closed_form() {
        // 0.5 % retired: a 2 MiB block is clean with probability 0.995^512 = 0.0768 (the paper's "< 8 %").
        let m = map(0.005, 1 << 22, 9); // 16 GiB: 8192 blocks
        let p = m.clean_blocks(9) as f64 / 8192.0;
        let exact = 0.995f64.powi(512);
        let sd = (exact * (1.0 - exact) / 8192.0).sqrt();
        assert!((p - exact).abs() < 4.0 * sd, "{p} vs {exact}");
        let n = (1u64 << 22) as f64;
        assert!((m.count() as f64 - 0.005 * n).abs() < 4.0 * (0.005 * 0.995 * n).sqrt());
    }
}
