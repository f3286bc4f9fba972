//! Retired frames clustered by DRAM faults (beyond the paper).
//!
//! ## What it models
//! Field studies of DRAM find that many faults are not single cells but a
//! row, a column or a bank of one device, so the frames an OS retires come
//! in groups. Here memory is cut into *fault units* of `frames_per_fault`
//! frames `stride` frames apart, and each unit fails (all its frames are
//! retired) independently with probability `fraction`. Units tile memory
//! exactly (in each span of `frames_per_fault × stride` frames, unit j holds
//! frames j, j + stride, j + 2·stride, ...), so every frame is retired with
//! probability `fraction`, as under `uniform`: at equal `fraction` the two
//! models differ only in how retired frames cluster, which is what a study
//! comparing them needs.
//! ## Paper
//! Beyond "Supporting superpages in non-contiguous physical memory" (HPCA
//! 2015), which evaluates uniform retired pages only (§4.1). Fault shapes:
//! Sridharan and Liberty, "A study of DRAM failures in the field", SC 2012
//! (single-row, single-column and single-bank faults are common).
//! ## Choices where the papers are silent
//! - Default `frames_per_fault = 2`, `stride = 1`: a row fault. A DDR3/DDR4
//!   rank of eight ×8 devices with 1 KiB rows holds an 8 KiB row, and with
//!   row-interleaved address mapping (consecutive addresses fill a row
//!   before moving to the next bank) that row is 2 adjacent 4 KiB frames.
//! - A column (or bank) fault touches one frame in each of many rows of one
//!   bank: `stride` is the distance between consecutive rows of that bank
//!   in frames (banks × ranks × channels × row bytes / 4 KiB: 16 for 8
//!   banks, one rank and channel, 8 KiB rows) and `frames_per_fault` the rows
//!   it spans.
//! - A partial span at the top of memory keeps the units' frames below capacity.
//! ## Config
//! `kind = "clustered"`, `fraction` (0 ≤ fraction < 1, default 0),
//! `frames_per_fault` (1 ..= 262144, default 2), `stride` (1 ..= 262144, default 1).
//! ## Stats
//! Those of the family (`physmem.retired_frames`, `physmem.retired.*`).

use serde::{Deserialize, Serialize};

use super::{bernoulli_indices, Fraction, RetireCtx, RetiredMap, Retirement};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

/// Largest `frames_per_fault` and `stride`: 1 GiB of frames.
pub const MAX_SPAN: u64 = 1 << 18;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Probability that a fault unit fails (= that a frame is retired).
    #[serde(default)]
    pub fraction: Fraction,
    /// Frames one fault retires.
    #[serde(default = "d_frames")]
    pub frames_per_fault: u64,
    /// Frames between consecutive frames of one fault (1: adjacent).
    #[serde(default = "d_stride")]
    pub stride: u64,
}
fn d_frames() -> u64 {
    2
}
fn d_stride() -> u64 {
    1
}
impl Default for Config {
    fn default() -> Self {
        Config { fraction: Fraction(0.0), frames_per_fault: d_frames(), stride: d_stride() }
    }
}

#[derive(Clone, Debug)]
pub struct Clustered {
    fraction: f64,
    frames: u64,
    stride: u64,
    seed: u64,
}

impl Mechanism for Clustered {
    const NAME: &'static str = "clustered";
    const SUMMARY: &'static str = "faults retire groups of `frames_per_fault` frames `stride` apart (DRAM rows, columns)";
    type Config = Config;
    type Ctx = RetireCtx;
    fn build(cfg: &Config, ctx: &RetireCtx) -> Result<Self> {
        for (key, v) in [("frames_per_fault", cfg.frames_per_fault), ("stride", cfg.stride)] {
            if !(1..=MAX_SPAN).contains(&v) {
                return Err(Error::config(
                    format!("physmem.retired.{key}"),
                    crate::config::spec::whole_range_message(1, MAX_SPAN, &v.to_string()),
                ));
            }
        }
        Ok(Clustered { fraction: cfg.fraction.0, frames: cfg.frames_per_fault, stride: cfg.stride, seed: ctx.seed })
    }
}

impl Retirement for Clustered {
    fn mark(&self, map: &mut RetiredMap) -> Result<()> {
        let cap = map.capacity_frames();
        let span = self.frames * self.stride;
        let units = cap.div_ceil(span) * self.stride;
        let mut rng = crate::rng::component_rng(self.seed, "physmem.retired");
        bernoulli_indices(&mut rng, units, self.fraction, |u| {
            let first = (u / self.stride) * span + u % self.stride;
            for k in 0..self.frames {
                let f = first + k * self.stride;
                if f < cap {
                    map.retire(f);
                }
            }
        });
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(fraction: f64, frames: u64, stride: u64, cap: u64, seed: u64) -> RetiredMap {
        let cfg = Config { fraction: Fraction(fraction), frames_per_fault: frames, stride };
        let c = Clustered::build(&cfg, &RetireCtx { capacity_frames: cap, seed }).unwrap();
        let mut m = RetiredMap::new(cap);
        c.mark(&mut m).unwrap();
        m
    }

    #[test]
    fn faults_retire_whole_units() {
        let m = map(0.05, 4, 1, 1 << 16, 2);
        assert!(m.count() > 0);
        for f in m.iter() {
            let base = f / 4 * 4;
            assert!((base..base + 4).all(|g| m.is_retired(g)), "unit of frame {f} is partly retired");
        }
        let m = map(0.05, 8, 16, (1 << 16) + 37, 2);
        for f in m.iter() {
            let span = 8 * 16;
            let first = f / span * span + f % 16;
            assert!((0..8).map(|k| first + k * 16).filter(|&g| g < m.capacity_frames()).all(|g| m.is_retired(g)));
        }
    }

    #[test]
    fn expected_fraction_is_kept_and_clustering_leaves_more_clean_blocks() {
        let cap = 1u64 << 22;
        let c = map(0.005, 16, 1, cap, 7);
        let u = {
            let mut m = RetiredMap::new(cap);
            super::super::uniform::Uniform::build(&super::super::uniform::Config { fraction: Fraction(0.005) }, &RetireCtx { capacity_frames: cap, seed: 7 })
                .unwrap()
                .mark(&mut m)
                .unwrap();
            m
        };
        let mean = 0.005 * cap as f64;
        // Units of 16 frames: the count's spread is 4× the uniform one's.
        assert!((c.count() as f64 - mean).abs() < 5.0 * (16.0 * mean).sqrt(), "{}", c.count());
        // A 2 MiB block is 32 units: clean with probability 0.995^32 = 0.85, not 0.995^512 = 0.077.
        assert!(c.clean_blocks(9) > 5 * u.clean_blocks(9));
        let p = c.clean_blocks(9) as f64 / 8192.0;
        assert!((p - 0.995f64.powi(32)).abs() < 0.02, "{p}");
    }

    #[test]
    fn bad_shapes_name_their_keys() {
        for (frames, stride, key) in [(0, 1, "frames_per_fault"), (2, 0, "stride"), (2, MAX_SPAN + 1, "stride")] {
            let cfg = Config { fraction: Fraction(0.1), frames_per_fault: frames, stride };
            let e = Clustered::build(&cfg, &RetireCtx { capacity_frames: 1024, seed: 1 }).unwrap_err().to_string();
            assert!(e.contains(&format!("physmem.retired.{key}")), "{e}");
        }
    }
}
