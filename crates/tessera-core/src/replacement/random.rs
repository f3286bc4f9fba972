//! Uniform random replacement, seeded.
//!
//! ## What it models
//! When a set is full, the victim is a way drawn uniformly from `[0, ways)`.
//! Hits, fills and invalidations leave no state. The common cheap alternative
//! to LRU in large TLBs.
//!
//! ## Choices where the papers are silent
//! - Generator: [`crate::rng::SimRng`] (xoshiro256++) seeded from the owner's
//!   sub-seed ([`Geometry::seed`]), so runs are reproducible and two structures
//!   never share a sequence.
//! - One draw (`gen_range(0..ways)`) per victim call and none otherwise; the
//!   owning table calls `victim` only when the set is full (free ways are filled
//!   lowest first), so the draw sequence depends only on the miss sequence.
//!   `table::reference` (test-only) reproduces this sequence exactly.
//!
//! ## Config
//! `kind = "random"` (no parameters)
//!
//! ## Stats
//! None.

use super::{Geometry, Replacement};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::rng::SimRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

/// `kind = "random"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct Random {
    ways: u32,
    rng: SimRng,
}

impl Mechanism for Random {
    const NAME: &'static str = "random";
    const SUMMARY: &'static str = "uniform random victim (seeded)";
    type Config = Config;
    type Ctx = Geometry;
    fn build(_: &Config, g: &Geometry) -> Result<Self> {
        if g.sets == 0 || g.ways == 0 {
            return Err(Error::config("replacement", format!("random needs at least one set and one way (got {} × {})", g.sets, g.ways)));
        }
        Ok(Random { ways: g.ways, rng: SimRng::seed_from_u64(g.seed) })
    }
}

impl Replacement for Random {
    /// Hits never change what a random victim choice draws.
    fn repeat_hits_free(&self) -> bool {
        true
    }
    #[inline]
    fn on_hit(&mut self, _set: u32, _way: u32) {}
    #[inline]
    fn on_fill(&mut self, _set: u32, _way: u32) {}
    #[inline]
    fn on_invalidate(&mut self, _set: u32, _way: u32) {}
    #[inline]
    fn victim(&mut self, _set: u32) -> u32 {
        self.rng.gen_range(0..self.ways)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn random(ways: u32, seed: u64) -> Random {
        Random::build(&Config {}, &Geometry { sets: 4, ways, seed }).unwrap()
    }

    #[test]
    fn victims_stay_in_range_and_cover_every_way() {
        let mut p = random(8, 1);
        let mut seen = [0u32; 8];
        for _ in 0..8000 {
            let v = p.victim(0);
            assert!(v < 8);
            seen[v as usize] += 1;
        }
        // Uniform: every way near 1000 draws.
        assert!(seen.iter().all(|&c| (800..1200).contains(&c)), "{seen:?}");
    }

    #[test]
    fn same_seed_same_sequence() {
        let (mut a, mut b) = (random(16, 42), random(16, 42));
        let va: Vec<u32> = (0..100).map(|i| a.victim(i % 4)).collect();
        let vb: Vec<u32> = (0..100).map(|i| b.victim(i % 4)).collect();
        assert_eq!(va, vb);
    }

    #[test]
    fn different_seeds_differ() {
        let (mut a, mut b) = (random(16, 1), random(16, 2));
        let va: Vec<u32> = (0..64).map(|_| a.victim(0)).collect();
        let vb: Vec<u32> = (0..64).map(|_| b.victim(0)).collect();
        assert_ne!(va, vb);
    }

    #[test]
    fn hooks_do_not_consume_draws() {
        let (mut a, mut b) = (random(4, 9), random(4, 9));
        a.on_hit(0, 1);
        a.on_fill(1, 2);
        a.on_invalidate(2, 3);
        assert_eq!(a.victim(0), b.victim(0));
    }

    #[test]
    fn one_way_always_evicts_way_zero() {
        let mut p = random(1, 3);
        assert!((0..10).all(|_| p.victim(0) == 0));
    }
}
