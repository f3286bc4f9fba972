//! Synthetic access streams: the standard benchmark patterns.
//!
//! ## What it models
//! Data accesses of 8 bytes, ASID 0, no instruction fetches, over a region of
//! `footprint` bytes starting at [`BASE_VADDR`] (an mmap-like, 1 GiB-aligned
//! address). Every record carries `ins_gap = ins_per_access` (the
//! instruction-gap convention of [`crate::access`]), and is a `Store` with
//! probability `store_fraction`, else a `Load`.
//! - [`Pattern::Uniform`]: 8-byte-aligned addresses uniform over the footprint.
//! - [`Pattern::Sequential`]: access `i` is at `base + (i·stride mod footprint)`.
//! - [`Pattern::HotCold`]: with probability `hot_access_fraction` uniform over
//!   the first `hot_footprint_fraction` of the footprint, else uniform over the
//!   whole footprint.
//!
//! ## Choices where nothing is prescribed
//! - Randomness comes from two generators,
//!   `crate::rng::component_rng(seed, "stream.synthetic.addr")` for addresses
//!   and `…"stream.synthetic.decide"` for decisions (two independent dependency
//!   chains, which the CPU runs in parallel). The stream depends only on the
//!   spec, never on batch sizes.
//! - An address is `base + 8·⌊r·n / 2^64⌋` for a 64-bit draw `r` and `n`
//!   8-byte slots (no rejection: the bias is below n/2^64 ≤ 2^-27 for the
//!   largest footprint). The store/load choice reuses the unused fraction of
//!   that product (its low 64 bits, top 32 compared with the threshold), so
//!   Uniform costs one draw per access.
//! - Other 32-bit decisions (Sequential's store choice, HotCold's hot choice)
//!   take halves of a decision draw, two per draw. So Sequential costs half a
//!   draw per access and HotCold one and a half.
//! - The footprint must be a multiple of 8 and at most 1 TiB (so addresses stay
//!   below the 47-bit canonical limit); the stride a positive multiple of 8; the
//!   hot region is `hot_footprint_fraction · footprint` rounded down to 8 bytes,
//!   at least 8 bytes. Every access lies inside `[base, base + footprint)`.
//!
//! ## Config
//! [`SyntheticSpec`]; `describe()` gives
//! `synthetic:<pattern> accesses=… footprint=… seed=…`, followed by any
//! parameter that differs from its default.

use rand::RngCore;

use super::AccessSource;
use crate::access::{AccessBatch, AccessKind, BATCH_LEN};
use crate::error::{Error, Result};
use crate::rng::{component_rng, SimRng};

/// Start of the synthetic region: an mmap-like, 1 GiB-aligned user address.
pub const BASE_VADDR: u64 = 0x7f00_0000_0000;
/// Largest footprint: keeps every address below 2^47.
pub const MAX_FOOTPRINT: u64 = 1 << 40;
/// Size of every synthetic access.
pub const ACCESS_SIZE: u8 = 8;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Pattern {
    Uniform,
    Sequential,
    #[serde(rename = "hotcold")]
    HotCold,
}

impl Pattern {
    pub const NAMES: [&'static str; 3] = ["uniform", "sequential", "hotcold"];

    pub fn as_str(self) -> &'static str {
        match self {
            Pattern::Uniform => "uniform",
            Pattern::Sequential => "sequential",
            Pattern::HotCold => "hotcold",
        }
    }

    /// Parse "uniform", "sequential" or "hotcold".
    pub fn parse(s: &str) -> Result<Pattern> {
        match s {
            "uniform" => Ok(Pattern::Uniform),
            "sequential" => Ok(Pattern::Sequential),
            "hotcold" => Ok(Pattern::HotCold),
            _ => Err(Error::config_allowed(
                "synthetic.pattern",
                format!("unknown pattern \"{s}\""),
                &Pattern::NAMES,
            )),
        }
    }
}

impl std::fmt::Display for Pattern {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Parameters of a synthetic stream.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct SyntheticSpec {
    pub pattern: Pattern,
    /// Number of accesses (records) in the stream.
    pub accesses: u64,
    /// Bytes of the region accessed.
    pub footprint: u64,
    pub seed: u64,
    /// Probability that an access is a store.
    pub store_fraction: f64,
    /// Instructions per access (the `ins_gap` of every record).
    pub ins_per_access: u32,
    /// HotCold: probability that an access goes to the hot region.
    pub hot_access_fraction: f64,
    /// HotCold: share of the footprint that is hot (at its start).
    pub hot_footprint_fraction: f64,
    /// Sequential: bytes between consecutive accesses.
    pub stride: u64,
}

impl Default for SyntheticSpec {
    /// Uniform, 10 M accesses over 256 MiB, seed 0, and the standard fractions.
    fn default() -> Self {
        SyntheticSpec {
            pattern: Pattern::Uniform,
            accesses: 10_000_000,
            footprint: 256 << 20,
            seed: 0,
            store_fraction: 0.25,
            ins_per_access: 3,
            hot_access_fraction: 0.9,
            hot_footprint_fraction: 0.1,
            stride: 64,
        }
    }
}

impl SyntheticSpec {
    pub fn new(pattern: Pattern, accesses: u64, footprint: u64, seed: u64) -> Self {
        SyntheticSpec {
            pattern,
            accesses,
            footprint,
            seed,
            ..Default::default()
        }
    }

    /// Check the parameters; errors name the offending key.
    pub fn validate(&self) -> Result<()> {
        if self.footprint < 8 || !self.footprint.is_multiple_of(8) || self.footprint > MAX_FOOTPRINT
        {
            return Err(Error::config(
                "synthetic.footprint",
                format!(
                    "must be a multiple of 8 bytes between 8 B and {}, not {}",
                    crate::config::spec::ByteSize(MAX_FOOTPRINT).human(),
                    crate::config::spec::ByteSize(self.footprint).human_exact()
                ),
            ));
        }
        for (key, v) in [
            ("synthetic.store_fraction", self.store_fraction),
            ("synthetic.hot_access_fraction", self.hot_access_fraction),
            (
                "synthetic.hot_footprint_fraction",
                self.hot_footprint_fraction,
            ),
        ] {
            if !(0.0..=1.0).contains(&v) {
                return Err(Error::config(
                    key,
                    format!("{v} is not a fraction between 0 and 1"),
                ));
            }
        }
        if self.stride == 0 || !self.stride.is_multiple_of(8) {
            return Err(Error::config(
                "synthetic.stride",
                format!("stride {} must be a positive multiple of 8", self.stride),
            ));
        }
        Ok(())
    }

    fn describe(&self) -> String {
        let mut s = format!(
            "synthetic:{} accesses={} footprint={} seed={}",
            self.pattern, self.accesses, self.footprint, self.seed
        );
        let d = SyntheticSpec::default();
        if self.store_fraction != d.store_fraction {
            s += &format!(" store_fraction={}", self.store_fraction);
        }
        if self.ins_per_access != d.ins_per_access {
            s += &format!(" ins_per_access={}", self.ins_per_access);
        }
        if self.pattern == Pattern::HotCold {
            if self.hot_access_fraction != d.hot_access_fraction {
                s += &format!(" hot_access_fraction={}", self.hot_access_fraction);
            }
            if self.hot_footprint_fraction != d.hot_footprint_fraction {
                s += &format!(" hot_footprint_fraction={}", self.hot_footprint_fraction);
            }
        }
        if self.pattern == Pattern::Sequential && self.stride != d.stride {
            s += &format!(" stride={}", self.stride);
        }
        s
    }
}

/// `p` as a threshold on a 32-bit draw: `draw < t` has probability `p`.
fn threshold32(p: f64) -> u64 {
    (p * 4294967296.0).round() as u64
}

/// A synthetic stream; see the module doc.
pub struct Synthetic {
    spec: SyntheticSpec,
    /// Address draws and decision draws come from two generators: two
    /// independent dependency chains run in parallel on the CPU.
    addr_rng: SimRng,
    decide_rng: SimRng,
    done: u64,
    /// 8-byte slots in the whole footprint and in the hot region.
    slots: u64,
    hot_slots: u64,
    store_t: u64,
    hot_t: u64,
    /// Sequential: current offset and the stride reduced mod footprint.
    seq_off: u64,
    seq_step: u64,
    /// The unused low half of the last decision draw.
    spare_half: Option<u32>,
    /// The batch (its `ins_gap` buffer and length) whose constant columns
    /// (gap, size, ASID) this stream last wrote: refilled batches of the
    /// same length keep them and only get new addresses and kinds.
    const_filled: Option<(usize, usize)>,
}

impl Synthetic {
    pub fn new(spec: SyntheticSpec) -> Result<Self> {
        spec.validate()?;
        let slots = spec.footprint / 8;
        let hot_slots =
            (((spec.footprint as f64 * spec.hot_footprint_fraction) as u64) / 8).clamp(1, slots);
        Ok(Synthetic {
            addr_rng: component_rng(spec.seed, "stream.synthetic.addr"),
            decide_rng: component_rng(spec.seed, "stream.synthetic.decide"),
            done: 0,
            slots,
            hot_slots,
            store_t: threshold32(spec.store_fraction),
            hot_t: threshold32(spec.hot_access_fraction),
            seq_off: 0,
            seq_step: spec.stride % spec.footprint,
            spare_half: None,
            const_filled: None,
            spec,
        })
    }

    pub fn spec(&self) -> &SyntheticSpec {
        &self.spec
    }

    fn fill(&mut self, out: &mut AccessBatch, n: usize) {
        // Consumers only read batches; the checks below (same buffer, same
        // length, the constants at both ends) guard against a batch shared
        // with another source.
        let same = [out.ins_gap.len(), out.size.len(), out.asid.len(), out.vaddr.len(), out.kind.len()] == [n; 5]
            && self.const_filled == Some((out.ins_gap.as_ptr() as usize, n))
            && [out.ins_gap[0], out.ins_gap[n - 1]] == [self.spec.ins_per_access; 2]
            && [out.size[0], out.size[n - 1]] == [ACCESS_SIZE; 2]
            && [out.asid[0], out.asid[n - 1]] == [0; 2];
        if !same {
            out.clear();
            out.ins_gap.resize(n, self.spec.ins_per_access);
            out.size.resize(n, ACCESS_SIZE);
            out.asid.resize(n, 0);
            out.vaddr.resize(n, 0);
            out.kind.resize(n, AccessKind::Load);
            self.const_filled = Some((out.ins_gap.as_ptr() as usize, n));
        }
        // Local copies keep the generator state in registers: writes through
        // the output slices could otherwise alias it.
        let mut arng = self.addr_rng.clone();
        let store_t = self.store_t;
        let kind = move |u: u64| {
            if u < store_t {
                AccessKind::Store
            } else {
                AccessKind::Load
            }
        };
        match self.spec.pattern {
            Pattern::Uniform => {
                let n_slots = self.slots;
                for (v, k) in out.vaddr.iter_mut().zip(out.kind.iter_mut()) {
                    let m = arng.next_u64() as u128 * n_slots as u128;
                    *v = BASE_VADDR + 8 * (m >> 64) as u64;
                    // The low half of the product is the draw's unused fraction.
                    *k = kind((m as u64) >> 32);
                }
            }
            Pattern::HotCold => {
                let (all, hot, hot_t) = (self.slots, self.hot_slots, self.hot_t);
                // Pass 1 parks each access's range (hot or all slots) in its
                // address slot; pass 2 draws the address within it.
                // The hot/cold choice is unpredictable by design: ask for a cmov.
                self.halves(&mut out.vaddr, |h| {
                    std::hint::select_unpredictable((h as u64) < hot_t, hot, all)
                });
                for (v, k) in out.vaddr.iter_mut().zip(out.kind.iter_mut()) {
                    let m = arng.next_u64() as u128 * *v as u128;
                    *v = BASE_VADDR + 8 * (m >> 64) as u64;
                    *k = kind((m as u64) >> 32);
                }
            }
            Pattern::Sequential => {
                let (fp, step) = (self.spec.footprint, self.seq_step);
                let mut off = self.seq_off;
                for v in out.vaddr.iter_mut() {
                    *v = BASE_VADDR + off;
                    off += step;
                    if off >= fp {
                        off -= fp;
                    }
                }
                self.seq_off = off;
                self.halves(&mut out.kind, |h| kind(h as u64));
            }
        }
        self.addr_rng = arng;
    }

    /// Fill `dst[i] = f(h_i)` from successive 32-bit halves of decision draws
    /// (high half first), carrying an unused half over to the next call so the
    /// sequence does not depend on where batches end.
    fn halves<T>(&mut self, dst: &mut [T], f: impl Fn(u32) -> T) {
        let mut rng = self.decide_rng.clone();
        let dst = match (self.spare_half.take(), dst) {
            (Some(h), [first, rest @ ..]) => {
                *first = f(h);
                rest
            }
            (Some(h), []) => {
                self.spare_half = Some(h);
                return;
            }
            (None, all) => all,
        };
        let mut pairs = dst.chunks_exact_mut(2);
        for p in &mut pairs {
            let d = rng.next_u64();
            p[0] = f((d >> 32) as u32);
            p[1] = f(d as u32);
        }
        if let [last] = pairs.into_remainder() {
            let d = rng.next_u64();
            *last = f((d >> 32) as u32);
            self.spare_half = Some(d as u32);
        }
        self.decide_rng = rng;
    }
}

impl AccessSource for Synthetic {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        let mut cap = out.vaddr.capacity().min(out.kind.capacity());
        if cap == 0 {
            *out = AccessBatch::with_capacity(BATCH_LEN);
            cap = BATCH_LEN;
        }
        let n = (self.spec.accesses - self.done).min(cap as u64) as usize;
        if n == 0 {
            out.clear();
            return Ok(false);
        }
        self.fill(out, n);
        self.done += n as u64;
        Ok(true)
    }

    fn progress(&self) -> (u64, u64) {
        (self.done, self.spec.accesses)
    }

    fn describe(&self) -> String {
        self.spec.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn collect(spec: SyntheticSpec, cap: usize) -> AccessBatch {
        let mut s = Synthetic::new(spec).unwrap();
        let mut all = AccessBatch::default();
        let mut b = AccessBatch::with_capacity(cap);
        while s.next_batch(&mut b).unwrap() {
            assert!(b.len() <= cap);
            all.ins_gap.extend_from_slice(&b.ins_gap);
            all.vaddr.extend_from_slice(&b.vaddr);
            all.kind.extend_from_slice(&b.kind);
            all.size.extend_from_slice(&b.size);
            all.asid.extend_from_slice(&b.asid);
        }
        all
    }

    #[test]
    fn stream_does_not_depend_on_batch_size() {
        for p in [Pattern::Uniform, Pattern::Sequential, Pattern::HotCold] {
            let spec = SyntheticSpec::new(p, 10_001, 1 << 20, 7);
            let a = collect(spec.clone(), 8192);
            let b = collect(spec, 97);
            assert_eq!(a.vaddr, b.vaddr);
            assert_eq!(a.kind, b.kind);
            assert_eq!(a.len(), 10_001);
        }
    }

    /// Refilled batches keep their constant columns only when this stream
    /// wrote them: two streams taking turns with one batch see their own.
    #[test]
    fn shared_batch_gets_each_streams_constants() {
        let mut a_spec = SyntheticSpec::new(Pattern::Uniform, 100, 1 << 20, 1);
        a_spec.ins_per_access = 3;
        let mut b_spec = SyntheticSpec::new(Pattern::Uniform, 100, 1 << 20, 2);
        b_spec.ins_per_access = 5;
        let (mut a, mut b) = (Synthetic::new(a_spec).unwrap(), Synthetic::new(b_spec).unwrap());
        let mut batch = AccessBatch::with_capacity(10);
        for _ in 0..5 {
            assert!(a.next_batch(&mut batch).unwrap());
            assert!(batch.ins_gap.iter().all(|&g| g == 3));
            assert!(b.next_batch(&mut batch).unwrap());
            assert!(batch.ins_gap.iter().all(|&g| g == 5));
        }
        // A consumer that shortened the batch gets a full refill.
        batch.ins_gap.truncate(3);
        assert!(b.next_batch(&mut batch).unwrap());
        assert_eq!(batch.ins_gap.len(), 10);
        assert_eq!(batch.len(), 10);
    }

    #[test]
    fn sequential_wraps_at_footprint() {
        let mut spec = SyntheticSpec::new(Pattern::Sequential, 10, 192, 1);
        spec.stride = 64;
        let a = collect(spec, 4);
        let off: Vec<u64> = a.vaddr.iter().map(|v| v - BASE_VADDR).collect();
        assert_eq!(off, vec![0, 64, 128, 0, 64, 128, 0, 64, 128, 0]);
    }

    #[test]
    fn fractions_are_respected() {
        let spec = SyntheticSpec::new(Pattern::HotCold, 200_000, 1 << 24, 3);
        let hot_end = BASE_VADDR + (1 << 24) / 10;
        let a = collect(spec, 8192);
        let stores = a.kind.iter().filter(|&&k| k == AccessKind::Store).count() as f64 / 200_000.0;
        let hot = a.vaddr.iter().filter(|&&v| v < hot_end).count() as f64 / 200_000.0;
        // 0.9 hot draws + 0.1 cold draws that land in the hot tenth.
        assert!((stores - 0.25).abs() < 0.01, "{stores}");
        assert!((hot - 0.91).abs() < 0.01, "{hot}");
    }

    #[test]
    fn bad_spec_names_the_key() {
        let mut spec = SyntheticSpec::new(Pattern::Uniform, 1, 12, 0);
        match Synthetic::new(spec.clone()) {
            Err(Error::Config { path, .. }) => assert_eq!(path, "synthetic.footprint"),
            _ => panic!(),
        }
        spec.footprint = 16;
        spec.store_fraction = 1.5;
        match Synthetic::new(spec) {
            Err(Error::Config { path, .. }) => assert_eq!(path, "synthetic.store_fraction"),
            _ => panic!(),
        }
        assert!(Pattern::parse("zipf").is_err());
        assert_eq!(Pattern::parse("hotcold").unwrap(), Pattern::HotCold);
    }
}
