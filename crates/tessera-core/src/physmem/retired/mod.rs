//! Retired pages: a fault map of 4 KiB frames that no allocator may hand out.
//!
//! ## What it models
//! DRAM with permanent faults: the OS retires (takes out of service forever)
//! every 4 KiB frame that holds a faulty cell, so superpages that need a
//! contiguous, fault-free block break even at a low retired fraction. A
//! *source* (this family, `physmem.retired`) marks frames in a
//! [`RetiredMap`] once, when physical memory is built; `PhysMem` then takes
//! every marked frame out of the allocator with `reserve`, before
//! `physmem.fragmentation` pins its frames, so no allocator (buddy, iceberg)
//! ever hands one out. Sources:
//! - `none`: no retired frames (the default; nothing changes);
//! - `uniform`: each frame retired independently with probability `fraction`;
//! - `clustered`: faults that each retire a group of frames (a DRAM row, or a
//!   column of one bank), groups failing independently;
//! - `file`: the frames listed in a file.
//! ## Paper
//! Du, Zhou, Childers, Mossé and Melhem, "Supporting superpages in
//! non-contiguous physical memory", HPCA 2015: §2 and Fig. 3 (retired pages
//! break superpages; uniformly distributed retired pages), §4.1 (Monte Carlo
//! over uniform retired pages). The clustered model is beyond the paper.
//! ## Choices where the paper is silent
//! - A retired frame inside a 2 MiB block that pre-fragmentation chose is
//!   already unusable: fragmentation pins nothing more there (the block is
//!   broken either way), and draws the same blocks and frames as without
//!   retired pages, so runs with and without a fault map stay comparable.
//! - The map is built once, before the run (the OS reads it at boot); frames
//!   never retire during a run.
//! ## Config
//! `physmem.retired = { kind = "none" | "uniform" | "clustered" | "file", ... }`
//! (see each source's file).
//! ## Stats
//! Only when a source other than `none` is configured (so runs without a
//! fault map report exactly what they did before): `physmem.retired_frames`,
//! and `physmem.retired.clean_blocks_{32k,64k,128k,2m,1g}`: naturally aligned
//! blocks of that size wholly inside capacity with no retired frame.

#[cfg(test)]
mod allocation;
pub mod clustered;
pub mod file;
pub mod none;
pub mod uniform;

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::Result;
pub use crate::registry::AnyRetirement;

/// What a source is built over.
#[derive(Clone, Debug)]
pub struct RetireCtx {
    pub capacity_frames: u64,
    /// The run seed; a source draws from `component_rng(seed, "physmem.retired")`.
    pub seed: u64,
}

/// A source of retired frames.
///
/// `mark` is called once, when physical memory is built, with an empty map
/// over `0 .. capacity_frames`; it sets the retired frames and may not clear
/// any. It must be deterministic in the source's config and the run seed.
pub trait Retirement {
    fn mark(&self, map: &mut RetiredMap) -> Result<()>;
}

/// One bit per 4 KiB frame: set = retired.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RetiredMap {
    words: Vec<u64>,
    capacity_frames: u64,
    count: u64,
}

impl RetiredMap {
    pub fn new(capacity_frames: u64) -> Self {
        RetiredMap { words: vec![0; capacity_frames.div_ceil(64) as usize], capacity_frames, count: 0 }
    }

    pub fn capacity_frames(&self) -> u64 {
        self.capacity_frames
    }

    /// Mark frame `pfn` retired (a frame marked twice counts once). Frames
    /// beyond capacity are a source's bug: sources check their input first.
    #[inline]
    pub fn retire(&mut self, pfn: u64) {
        debug_assert!(pfn < self.capacity_frames, "frame {pfn} beyond capacity {}", self.capacity_frames);
        let w = &mut self.words[(pfn >> 6) as usize];
        let bit = 1u64 << (pfn & 63);
        self.count += (*w & bit == 0) as u64;
        *w |= bit;
    }

    #[inline]
    pub fn is_retired(&self, pfn: u64) -> bool {
        self.words.get((pfn >> 6) as usize).is_some_and(|w| (w >> (pfn & 63)) & 1 != 0)
    }

    /// Retired frames.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Whether any frame of `start .. end` is retired.
    pub fn any_in(&self, start: u64, end: u64) -> bool {
        let end = end.min(self.capacity_frames);
        let mut f = start;
        while f < end {
            let w = self.words[(f >> 6) as usize];
            let lo = f & 63;
            let n = (64 - lo).min(end - f);
            let mask = if n == 64 { u64::MAX } else { ((1u64 << n) - 1) << lo };
            if w & mask != 0 {
                return true;
            }
            f += n;
        }
        false
    }

    /// Retired frames in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.words.iter().enumerate().filter(|(_, &w)| w != 0).flat_map(|(i, &w)| {
            let mut rest = w;
            std::iter::from_fn(move || {
                (rest != 0).then(|| {
                    let b = rest.trailing_zeros() as u64;
                    rest &= rest - 1;
                    ((i as u64) << 6) | b
                })
            })
        })
    }

    /// Naturally aligned blocks of `2^order` frames wholly inside capacity
    /// with no retired frame.
    pub fn clean_blocks(&self, order: u32) -> u64 {
        let size = 1u64 << order;
        let whole = self.capacity_frames / size;
        if order >= 6 {
            let per = (size / 64) as usize;
            (0..whole as usize).filter(|&b| self.words[b * per..(b + 1) * per].iter().all(|&w| w == 0)).count() as u64
        } else {
            (0..whole).filter(|&b| !self.any_in(b * size, (b + 1) * size)).count() as u64
        }
    }
}

/// A probability in `[0, 1)`: what `fraction` keys take. 1 would retire all
/// of memory, so it is refused where the value is read.
#[derive(Copy, Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Fraction(pub f64);

impl<'de> Deserialize<'de> for Fraction {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Float(f64),
            Other(toml::Value),
        }
        let f = match Raw::deserialize(d)? {
            Raw::Int(n) => n as f64,
            Raw::Float(f) => f,
            Raw::Other(v) => return Err(serde::de::Error::custom(format!("must be a fraction from 0 up to (not including) 1, not {v}"))),
        };
        if !(0.0..1.0).contains(&f) {
            return Err(serde::de::Error::custom(format!("must be a fraction from 0 up to (not including) 1, not {f}")));
        }
        Ok(Fraction(f))
    }
}

/// Indices `i` in `0 .. n` each chosen independently with probability `p`,
/// in ascending order, drawn by geometric skips (one draw per chosen index,
/// not one per index: a 4 TiB memory has 2^30 frames).
pub fn bernoulli_indices(rng: &mut crate::rng::SimRng, n: u64, p: f64, mut f: impl FnMut(u64)) {
    use rand::Rng;
    if p <= 0.0 || n == 0 {
        return;
    }
    let ln_q = (-p).ln_1p();
    let mut i: u64 = 0;
    loop {
        // U in (0, 1]: ln U is finite.
        let u = ((rng.gen::<u64>() >> 11) + 1) as f64 * (1.0 / (1u64 << 53) as f64);
        let skip = (u.ln() / ln_q).floor();
        if skip.is_nan() || skip >= (n - i) as f64 {
            return;
        }
        i += skip as u64;
        f(i);
        i += 1;
        if i >= n {
            return;
        }
    }
}

/// Deserialise a retirement section into its source: for tests and tools.
pub fn parse_source(value: &toml::Value, ctx: &RetireCtx) -> Result<AnyRetirement> {
    let spec = AnyRetirement::resolve(value, "physmem.retired")?;
    AnyRetirement::build(&spec, ctx, "physmem.retired")
}

/// The map of `spec` over `ctx`.
pub fn build_map(spec: &crate::registry::MechanismSpec, ctx: &RetireCtx) -> Result<RetiredMap> {
    let source = AnyRetirement::build(spec, ctx, "physmem.retired")?;
    let mut map = RetiredMap::new(ctx.capacity_frames);
    source.mark(&mut map)?;
    Ok(map)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ctx(cap: u64, seed: u64) -> RetireCtx {
        RetireCtx { capacity_frames: cap, seed }
    }

    fn map_of(toml_text: &str, cap: u64, seed: u64) -> Result<RetiredMap> {
        let v: toml::Value = toml::from_str::<toml::Table>(toml_text).unwrap().into();
        let spec = AnyRetirement::resolve(&v, "physmem.retired")?;
        build_map(&spec, &ctx(cap, seed))
    }

    #[test]
    fn none_retires_nothing() {
        let m = map_of("kind = \"none\"", 4096, 1).unwrap();
        assert_eq!(m.count(), 0);
        assert_eq!(m.clean_blocks(9), 8);
    }

    #[test]
    fn map_counts_blocks_and_iterates_in_order() {
        let mut m = RetiredMap::new(1024 + 7);
        for f in [3, 600, 600, 1030] {
            m.retire(f);
        }
        assert_eq!(m.count(), 3);
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![3, 600, 1030]);
        assert_eq!(m.clean_blocks(9), 0, "both whole 2 MiB blocks hold a retired frame");
        assert_eq!(m.clean_blocks(3), 128 - 2);
        assert_eq!(m.clean_blocks(0), 1031 - 3);
        assert!(m.any_in(590, 601) && !m.any_in(601, 1030) && m.any_in(0, 4));
    }

    #[test]
    fn fraction_outside_zero_one_names_the_key() {
        for bad in ["1.0", "-0.1", "2", "\"x\""] {
            let e = map_of(&format!("kind = \"uniform\"\nfraction = {bad}"), 4096, 1).unwrap_err();
            let s = e.to_string();
            assert!(s.contains("physmem.retired.fraction") && s.contains("from 0 up to"), "{s}");
        }
    }

    #[test]
    fn unknown_kind_and_keys_are_refused_with_the_allowed_values() {
        let e = map_of("kind = \"gaussian\"", 4096, 1).unwrap_err().to_string();
        assert!(e.contains("physmem.retired.kind") && e.contains("none, uniform, clustered, file"), "{e}");
        let e = map_of("kind = \"uniform\"\nfraction = 0.1\nrate = 2", 4096, 1).unwrap_err().to_string();
        assert!(e.contains("physmem.retired") && e.contains("rate"), "{e}");
    }

    #[test]
    fn bernoulli_indices_reach_the_expected_count() {
        let mut rng = crate::rng::component_rng(5, "t");
        let mut n = 0u64;
        let mut last = None;
        bernoulli_indices(&mut rng, 1 << 22, 0.01, |i| {
            assert!(last.is_none_or(|l| i > l) && i < 1 << 22);
            last = Some(i);
            n += 1;
        });
        let mean = (1u64 << 22) as f64 * 0.01;
        assert!((n as f64 - mean).abs() < 5.0 * mean.sqrt(), "{n} vs {mean}");
    }

    proptest! {
        #[test]
        fn any_in_and_clean_blocks_match_a_frame_loop(cap in 1u64..5000, frames in prop::collection::vec(0u64..5000, 0..40), order in 0u32..12, a in 0u64..5000, len in 0u64..300) {
            let mut m = RetiredMap::new(cap);
            for f in frames.iter().filter(|&&f| f < cap) {
                m.retire(*f);
            }
            let slow = |s: u64, e: u64| (s..e.min(cap)).any(|f| m.is_retired(f));
            prop_assert_eq!(m.any_in(a, a + len), slow(a, a + len));
            let size = 1u64 << order;
            let clean = (0..cap / size).filter(|b| !slow(b * size, (b + 1) * size)).count() as u64;
            prop_assert_eq!(m.clean_blocks(order), clean);
        }
    }
}
