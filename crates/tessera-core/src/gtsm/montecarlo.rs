//! Monte Carlo estimates of what GTSM keeps of memory with retired pages.
//!
//! ## What it models
//! The paper's capacity study: memory samples whose 4 KiB frames are each
//! retired independently with probability r (uniform retired pages), cut
//! into aligned 128 MB chunks; from each chunk, every block and slice
//! statistic the figures need:
//! - **Fig. 3**: the probability that an aligned 2 MB / 128 KB / 64 KB /
//!   32 KB block is clean (no retired frame), against r. Closed form
//!   (1 − r)^(B / 4 KiB).
//! - **Fig. 7**: the probability that a slice of 64 B-blocks, each usable
//!   independently with probability u, has a valid GT-PDE mapping (≥ 33
//!   usable; ≥ 32 beside it), against u. Closed form P(Bin(64, u) ≥ 33).
//! - **Table 2**: the retired fraction at which 60 % of B-blocks are clean,
//!   1 − 0.6^(4 KiB / B), with the estimated clean share there; and the
//!   superpage percentage at the paper's Fig. 14 thresholds.
//! - **Fig. 14**: the *superpage percentage* (share of capacity mapped as
//!   superpages: a clean slice 100 %, another valid slice 50 %, else 0)
//!   for 2 MB pages (a clean 2 MB block), GT-PDE-4MB/2MB/1MB (B-blocks of
//!   128/64/32 KB) and P-GT-PDE-2MB (Algorithm 1 over the 64 slices of
//!   2 MB of each chunk, B-blocks of 32 KB), against r. Closed form for the
//!   GT-PDE modes, with q = (1 − r)^(B / 4 KiB):
//!   q^64 + ½ (P(Bin(64, q) ≥ 33) − q^64); none for Algorithm 1.
//!
//! Every series of one figure at one r is read from the same memory
//! sample (common random numbers), so differences between series are not
//! sampling noise.
//! ## Paper
//! "Supporting superpages in non-contiguous physical memory", HPCA 2015,
//! §2 (Fig. 3), §3.3 (Fig. 7), §3.4 (Table 2), §4.1 and §5.3 (Fig. 14;
//! uniform retired pages over a 16 PB sample).
//! ## Choices where the paper is silent
//! - Sample size: at least `slices` (default 2^20) of the largest unit of
//!   each figure per point (2 MB blocks for Fig. 3, 8 MB slices for
//!   Fig. 14, slices for Fig. 7, 128 KB blocks for Table 2); smaller units
//!   get proportionally more.
//! - 95 % confidence intervals: Wilson score intervals for the
//!   probabilities (independent blocks and slices). Fig. 14's shares of
//!   independent slices, (clean + valid) / 2, join Wilson intervals of the
//!   clean and the valid proportion at 97.5 % each (so ≥ 95 % together, and
//!   never a zero-width interval around an unseen rare event); Algorithm 1's
//!   share, whose slices within a chunk are not independent, gets a normal
//!   interval on the mean over chunks (chunks are independent).
//! - Retired frames are drawn by geometric skips from generators seeded by
//!   (seed, figure, point, batch of 64 chunks), so results do not depend on
//!   the number of threads.

use serde::Serialize;

use super::pairing::{pair_into, Outcome, MAX_SLICES};
use super::slice::{mapped_halves, MIN_USABLE, MIN_USABLE_HALF};
use crate::error::{Error, Result};
use crate::physmem::retired::bernoulli_indices;
use crate::rng::SimRng;

/// Frames of one 128 MB chunk, and its words of retired-frame bits.
const CHUNK_FRAMES: u64 = 32768;
const CHUNK_WORDS: usize = (CHUNK_FRAMES / 64) as usize;
/// Chunks per batch: the unit of seeding and of work between threads.
const BATCH: u64 = 64;
/// Two-sided 95 % normal quantile.
const Z95: f64 = 1.959_963_984_540_054;

/// Default minimum sample per point.
pub const DEFAULT_SLICES: u64 = 1 << 20;

/// One estimate: a probability or a share, with its 95 % confidence interval.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Estimate {
    /// The x value (a retired or usable fraction).
    pub x: f64,
    pub value: f64,
    pub lo: f64,
    pub hi: f64,
    /// Independent units behind the estimate (blocks, slices, or chunks for a mean).
    pub n: u64,
    /// The closed-form value, where there is one.
    pub exact: Option<f64>,
}

/// One line of a figure.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Series {
    pub name: String,
    pub points: Vec<Estimate>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Figure {
    pub id: String,
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    /// What one sample unit is, and how many there are per point.
    pub unit: String,
    pub units_per_point: u64,
    pub series: Vec<Series>,
}

/// One row of Table 2.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Threshold {
    pub mode: String,
    pub block_kib: u64,
    /// 1 − 0.6^(4 KiB / B): 60 % of B-blocks clean.
    pub exact: f64,
    /// The paper's Table 2 value.
    pub paper: f64,
    /// Estimated share of clean B-blocks at `exact` (0.6 expected).
    pub clean_at_exact: Estimate,
    /// The paper's Fig. 14 "50 % until" retired fraction for this mode.
    pub paper_fig14: f64,
    /// Estimated superpage percentage at `paper_fig14`.
    pub superpage_at_paper_fig14: Estimate,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Table2 {
    pub units_per_point: u64,
    pub rows: Vec<Threshold>,
}

/// What to estimate.
#[derive(Clone, Debug)]
pub struct Params {
    pub seed: u64,
    /// Minimum of the largest unit per point (see the module doc).
    pub slices: u64,
    /// Threads to use (results do not depend on it).
    pub threads: usize,
    pub fig3: Vec<f64>,
    pub fig7: Vec<f64>,
    pub fig14: Vec<f64>,
}

/// `lo, lo + step, ..., hi` in thousandths-exact steps.
fn grid(lo_milli: u32, hi_milli: u32, step_milli: u32) -> Vec<f64> {
    (lo_milli..=hi_milli).step_by(step_milli as usize).map(|m| m as f64 / 100_000.0).collect()
}

impl Default for Params {
    fn default() -> Self {
        Params {
            seed: 1,
            slices: DEFAULT_SLICES,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            // 0 % to 8 % retired, every 0.25 %.
            fig3: grid(0, 8000, 250),
            // 0 % to 100 % usable, every 5 %.
            fig7: grid(0, 100_000, 5000),
            // 0 % to 3 % retired, every 0.1 %.
            fig14: grid(0, 3000, 100),
        }
    }
}

/// The figures and table asked for.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub seed: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fig3: Option<Figure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fig7: Option<Figure>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table2: Option<Table2>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fig14: Option<Figure>,
}

/// Names [`run`] accepts.
pub const PARTS: [&str; 4] = ["fig3", "fig7", "table2", "fig14"];

/// Estimate the `parts` named (any of [`PARTS`]).
pub fn run(parts: &[String], p: &Params) -> Result<Report> {
    for part in parts {
        if !PARTS.contains(&part.as_str()) {
            return Err(Error::config_allowed("gtsm.montecarlo", format!("unknown figure \"{part}\""), &PARTS));
        }
    }
    if p.slices == 0 {
        return Err(Error::config("gtsm.montecarlo.slices", "must be at least 1"));
    }
    for (key, xs, top) in [("fig3", &p.fig3, 1.0), ("fig7", &p.fig7, 1.0 + f64::EPSILON), ("fig14", &p.fig14, 1.0)] {
        if let Some(x) = xs.iter().find(|&&x| !(0.0..top).contains(&x)) {
            let range = if key == "fig7" { "from 0 to 1" } else { "from 0 up to (not including) 1" };
            return Err(Error::config(format!("gtsm.montecarlo.{key}"), format!("fractions must be {range}, not {x}")));
        }
    }
    let want = |s: &str| parts.iter().any(|x| x == s);
    Ok(Report {
        seed: p.seed,
        fig3: want("fig3").then(|| fig3(p)),
        fig7: want("fig7").then(|| fig7(p)),
        table2: want("table2").then(|| table2(p)),
        fig14: want("fig14").then(|| fig14(p)),
    })
}

// ---------------------------------------------------------------- sampling

/// Run `f(batch)` for batches `0 .. n` on `threads` threads; the results in batch order.
fn par_batches<T: Send>(n: u64, threads: usize, f: impl Fn(u64) -> T + Sync) -> Vec<T> {
    let threads = threads.clamp(1, n.max(1) as usize);
    if threads == 1 {
        return (0..n).map(f).collect();
    }
    let f = &f;
    let mut parts: Vec<Vec<(u64, T)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads as u64)
            .map(|t| s.spawn(move || (t..n).step_by(threads).map(|b| (b, f(b))).collect::<Vec<_>>()))
            .collect();
        handles.into_iter().map(|h| h.join().expect("a Monte Carlo thread panicked")).collect()
    });
    let mut all: Vec<(u64, T)> = parts.drain(..).flatten().collect();
    all.sort_by_key(|(b, _)| *b);
    all.into_iter().map(|(_, t)| t).collect()
}

fn batch_rng(seed: u64, figure: &str, point: usize, batch: u64) -> SimRng {
    use rand::SeedableRng;
    SimRng::seed_from_u64(crate::rng::sub_seed(seed, &format!("gtsm.montecarlo.{figure}.{point}.{batch}")))
}

/// Chunks of `[0, chunks)` in batch `b`.
fn batch_range(b: u64, chunks: u64) -> std::ops::Range<u64> {
    b * BATCH..((b + 1) * BATCH).min(chunks)
}

/// One chunk's retired frames, one bit each.
fn sample_chunk(rng: &mut SimRng, r: f64, words: &mut [u64; CHUNK_WORDS]) {
    words.fill(0);
    bernoulli_indices(rng, CHUNK_FRAMES, r, |f| words[(f >> 6) as usize] |= 1 << (f & 63));
}

/// Bit i set when byte i of `w` is non-zero (a 32 KB B-block of 8 frames holds a retired frame).
#[inline]
fn dirty8(w: u64) -> u64 {
    let mut t = w | (w >> 1);
    t |= t >> 2;
    t |= t >> 4;
    // Gather bit 0 of each byte into the top byte: the products never overlap.
    ((t & 0x0101_0101_0101_0101).wrapping_mul(0x0102_0408_1020_4080)) >> 56
}

/// Bit i set when 16-bit lane i of `w` is non-zero (a 64 KB B-block).
#[inline]
fn dirty16(w: u64) -> u64 {
    let mut t = w | (w >> 1);
    t |= t >> 2;
    t |= t >> 4;
    t |= t >> 8;
    ((t & 0x0001_0001_0001_0001).wrapping_mul((1 << 60) | (1 << 45) | (1 << 30) | (1 << 15))) >> 60
}

/// Bit i set when 32-bit half i of `w` is non-zero (a 128 KB B-block).
#[inline]
fn dirty32(w: u64) -> u64 {
    ((w as u32 != 0) as u64) | (((w >> 32) != 0) as u64) << 1
}

/// BAVs of the chunk's slices of 64 B-blocks of `bits` frames (8, 16 or 32),
/// written to `out` (64, 32 or 16 of them). Returns how many.
fn bavs(words: &[u64; CHUNK_WORDS], bits: u32, out: &mut [u64; MAX_SLICES]) -> usize {
    let per_word = 64 / bits; // B-blocks per word
    let words_per_slice = (64 / per_word) as usize;
    let n = CHUNK_WORDS / words_per_slice;
    for (s, bav) in out.iter_mut().enumerate().take(n) {
        let mut dirty = 0u64;
        for k in 0..words_per_slice {
            let w = words[s * words_per_slice + k];
            let d = match bits {
                8 => dirty8(w),
                16 => dirty16(w),
                _ => dirty32(w),
            };
            dirty |= d << (k as u32 * per_word);
        }
        *bav = !dirty;
    }
    n
}

// ------------------------------------------------------------ statistics

/// Wilson score interval (95 %) for `k` successes of `n`.
fn wilson(x: f64, k: u64, n: u64, exact: Option<f64>) -> Estimate {
    wilson_z(x, k, n, exact, Z95)
}

fn wilson_z(x: f64, k: u64, n: u64, exact: Option<f64>, z: f64) -> Estimate {
    let nf = n as f64;
    let p = k as f64 / nf;
    let z2 = z * z;
    let denom = 1.0 + z2 / nf;
    let centre = (p + z2 / (2.0 * nf)) / denom;
    let half = z * (p * (1.0 - p) / nf + z2 / (4.0 * nf * nf)).sqrt() / denom;
    Estimate { x, value: p, lo: (centre - half).max(0.0), hi: (centre + half).min(1.0), n, exact }
}

/// A share of independent slices, each mapped 100 % when clean, 50 % when
/// valid but not clean, else 0: (clean + valid) / 2 of `n` slices, from
/// `halves` = 2·clean + (valid − clean) and `clean`. The interval joins
/// Wilson intervals for the clean and the valid proportion at 97.5 % each,
/// so it covers with at least 95 % (Bonferroni), and never collapses to a
/// point when a rare event was not seen.
fn slice_share(x: f64, halves: u64, clean: u64, n: u64, exact: Option<f64>) -> Estimate {
    const Z975: f64 = 2.241_402_727_604_947;
    let valid = halves - clean;
    let (c, v) = (wilson_z(x, clean, n, None, Z975), wilson_z(x, valid, n, None, Z975));
    Estimate { x, value: halves as f64 / (2 * n) as f64, lo: (c.lo + v.lo) / 2.0, hi: (c.hi + v.hi) / 2.0, n, exact }
}

/// Mean share over chunks from integer sums: `s1` = Σ h, `s2` = Σ h², each
/// chunk's share being h / `scale`, over `n` chunks.
fn mean_ci(x: f64, s1: u64, s2: u128, scale: u64, n: u64, exact: Option<f64>) -> Estimate {
    let nf = n as f64;
    let sc = scale as f64;
    let mean = s1 as f64 / nf / sc;
    let var = if n > 1 { ((s2 as f64 / (sc * sc)) - nf * mean * mean).max(0.0) / (nf - 1.0) } else { 0.0 };
    let half = Z95 * (var / nf).sqrt();
    Estimate { x, value: mean, lo: (mean - half).max(0.0), hi: (mean + half).min(1.0), n, exact }
}

/// P(Bin(n, p) ≥ k).
pub fn binomial_tail(n: u32, p: f64, k: u32) -> f64 {
    if p <= 0.0 {
        return if k == 0 { 1.0 } else { 0.0 };
    }
    if p >= 1.0 {
        return if k <= n { 1.0 } else { 0.0 };
    }
    let mut total = 0.0;
    let mut coef = 1.0f64; // C(n, i)
    for i in 0..=n {
        if i >= k {
            total += coef * p.powi(i as i32) * (1.0 - p).powi((n - i) as i32);
        }
        coef = coef * (n - i) as f64 / (i + 1) as f64;
    }
    total.min(1.0)
}

/// Closed-form superpage percentage of a GT-PDE mode with `frames` frames per B-block.
pub fn gt_superpage_exact(r: f64, frames: u32, min_usable: u32) -> f64 {
    let q = (1.0 - r).powi(frames as i32);
    let clean = q.powi(64);
    clean + 0.5 * (binomial_tail(64, q, min_usable) - clean)
}

/// Retired fraction at which 60 % of B-blocks of `frames` frames are clean.
pub fn threshold_exact(frames: u32) -> f64 {
    1.0 - 0.6f64.powf(1.0 / frames as f64)
}

// ---------------------------------------------------------------- figures

/// Fig. 3's block sizes: (name, frames).
const FIG3_BLOCKS: [(&str, u32); 4] = [("2 MB", 512), ("128 KB", 32), ("64 KB", 16), ("32 KB", 8)];

#[derive(Default, Clone, Copy)]
struct CleanCounts {
    /// Clean blocks of 2 MB, 128 KB, 64 KB, 32 KB.
    clean: [u64; 4],
}

/// Clean blocks of each Fig. 3 size in one chunk.
fn count_clean(words: &[u64; CHUNK_WORDS]) -> CleanCounts {
    let mut c = CleanCounts::default();
    for block in words.chunks_exact(8) {
        c.clean[0] += block.iter().all(|&w| w == 0) as u64;
        for &w in block {
            c.clean[1] += 2 - dirty32(w).count_ones() as u64;
            c.clean[2] += 4 - dirty16(w).count_ones() as u64;
            c.clean[3] += 8 - dirty8(w).count_ones() as u64;
        }
    }
    c
}

/// Clean-block counts over `chunks` chunks at retired fraction `r`.
fn clean_counts(p: &Params, figure: &str, point: usize, r: f64, chunks: u64) -> [u64; 4] {
    let batches = chunks.div_ceil(BATCH);
    let per = par_batches(batches, p.threads, |b| {
        let mut rng = batch_rng(p.seed, figure, point, b);
        let mut words = [0u64; CHUNK_WORDS];
        let mut sum = [0u64; 4];
        for _ in batch_range(b, chunks) {
            sample_chunk(&mut rng, r, &mut words);
            let c = count_clean(&words);
            for (s, k) in sum.iter_mut().zip(c.clean) {
                *s += k;
            }
        }
        sum
    });
    per.iter().fold([0u64; 4], |mut a, s| {
        for i in 0..4 {
            a[i] += s[i];
        }
        a
    })
}

fn fig3(p: &Params) -> Figure {
    let chunks = p.slices.div_ceil(CHUNK_FRAMES / 512);
    let mut series: Vec<Series> = FIG3_BLOCKS.iter().map(|(n, _)| Series { name: n.to_string(), points: vec![] }).collect();
    for (i, &r) in p.fig3.iter().enumerate() {
        let clean = clean_counts(p, "fig3", i, r, chunks);
        for (s, (k, &(_, frames))) in series.iter_mut().zip(clean.iter().zip(FIG3_BLOCKS.iter())) {
            let n = chunks * CHUNK_FRAMES / frames as u64;
            s.points.push(wilson(r, *k, n, Some((1.0 - r).powi(frames as i32))));
        }
    }
    Figure {
        id: "fig3".into(),
        title: "Fig. 3: probability that a block is clean".into(),
        x_label: "retired 4 KiB pages".into(),
        y_label: "probability the block has no retired page".into(),
        unit: "2 MB blocks".into(),
        units_per_point: chunks * CHUNK_FRAMES / 512,
        series,
    }
}

fn fig7(p: &Params) -> Figure {
    let n = p.slices;
    let batches = n.div_ceil(BATCH * 512);
    let mut s33 = Series { name: "valid (≥ 33 usable, the paper)".into(), points: vec![] };
    let mut s32 = Series { name: "valid (≥ 32 usable)".into(), points: vec![] };
    for (i, &u) in p.fig7.iter().enumerate() {
        // Draw the rarer of usable and unusable blocks, then flip if needed.
        let (q, flip) = if u <= 0.5 { (u, false) } else { (1.0 - u, true) };
        let per = par_batches(batches, p.threads, |b| {
            let mut rng = batch_rng(p.seed, "fig7", i, b);
            let lo = b * BATCH * 512;
            let count = (lo + BATCH * 512).min(n) - lo;
            let mut words = vec![0u64; count as usize];
            bernoulli_indices(&mut rng, count * 64, q, |f| words[(f >> 6) as usize] |= 1 << (f & 63));
            let mut v = (0u64, 0u64);
            for w in words {
                let bav = if flip { !w } else { w };
                v.0 += (bav.count_ones() >= MIN_USABLE) as u64;
                v.1 += (bav.count_ones() >= MIN_USABLE_HALF) as u64;
            }
            v
        });
        let (k33, k32) = per.iter().fold((0, 0), |a, v| (a.0 + v.0, a.1 + v.1));
        s33.points.push(wilson(u, k33, n, Some(binomial_tail(64, u, MIN_USABLE))));
        s32.points.push(wilson(u, k32, n, Some(binomial_tail(64, u, MIN_USABLE_HALF))));
    }
    Figure {
        id: "fig7".into(),
        title: "Fig. 7: probability of a valid GT-PDE mapping".into(),
        x_label: "usable B-blocks".into(),
        y_label: "probability a slice has a valid mapping".into(),
        unit: "slices".into(),
        units_per_point: n,
        series: vec![s33, s32],
    }
}

/// Fig. 14's series: (name, frames per B-block; 0 for 2 MB pages, and the P-GT-PDE marker).
const FIG14_SERIES: [&str; 5] = ["2 MB pages", "GT-PDE-4MB", "GT-PDE-2MB", "GT-PDE-1MB", "P-GT-PDE-2MB"];
const FIG14_FRAMES: [u32; 5] = [512, 32, 16, 8, 8];

/// Per chunk: mapped halves of each Fig. 14 series, and clean slices of
/// the first four (2 MB pages and the GT-PDE modes).
fn fig14_chunk(words: &[u64; CHUNK_WORDS], bav: &mut [u64; MAX_SLICES], out: &mut [Outcome; MAX_SLICES]) -> ([u64; 5], [u64; 4]) {
    let mut h = [0u64; 5];
    let mut c = [0u64; 4];
    // 2 MB pages: a clean 2 MB block is 100 % (two halves), else 0.
    c[0] = words.chunks_exact(8).filter(|b| b.iter().all(|&w| w == 0)).count() as u64;
    h[0] = 2 * c[0];
    for (series, bits) in [(1, 32), (2, 16), (3, 8)] {
        let n = bavs(words, bits, bav);
        h[series] = bav[..n].iter().map(|&b| mapped_halves(b, MIN_USABLE)).sum();
        c[series] = bav[..n].iter().filter(|&&b| b == u64::MAX).count() as u64;
        if bits == 8 {
            h[4] = pair_into(&bav[..n], out);
        }
    }
    (h, c)
}

/// Sums over a point's chunks: per series Σ halves and Σ halves², and clean slices.
#[derive(Clone, Copy, Default)]
struct Fig14Sums {
    halves: [u64; 5],
    squares: [u128; 5],
    clean: [u64; 4],
}

/// Slices (halves possible / 2) per chunk for each Fig. 14 series.
const FIG14_SLICES: [u64; 5] = [64, 16, 32, 64, 64];

fn fig14_point(p: &Params, figure: &str, point: usize, r: f64, chunks: u64) -> Fig14Sums {
    let batches = chunks.div_ceil(BATCH);
    let per = par_batches(batches, p.threads, |b| {
        let mut rng = batch_rng(p.seed, figure, point, b);
        let mut words = [0u64; CHUNK_WORDS];
        let mut bav = [0u64; MAX_SLICES];
        let mut out = [Outcome::Discarded; MAX_SLICES];
        let mut acc = Fig14Sums::default();
        for _ in batch_range(b, chunks) {
            sample_chunk(&mut rng, r, &mut words);
            let (h, c) = fig14_chunk(&words, &mut bav, &mut out);
            for ((sum, sq), h) in acc.halves.iter_mut().zip(acc.squares.iter_mut()).zip(h) {
                *sum += h;
                *sq += (h as u128) * (h as u128);
            }
            for (sum, c) in acc.clean.iter_mut().zip(c) {
                *sum += c;
            }
        }
        acc
    });
    per.iter().fold(Fig14Sums::default(), |mut a, s| {
        for i in 0..5 {
            a.halves[i] += s.halves[i];
            a.squares[i] += s.squares[i];
        }
        for i in 0..4 {
            a.clean[i] += s.clean[i];
        }
        a
    })
}

/// The estimate of series `k` from a point's sums over `chunks` chunks.
fn fig14_estimate(k: usize, r: f64, acc: &Fig14Sums, chunks: u64) -> Estimate {
    let exact = fig14_exact(k, r);
    if k < 4 {
        slice_share(r, acc.halves[k], acc.clean[k], chunks * FIG14_SLICES[k], exact)
    } else {
        mean_ci(r, acc.halves[k], acc.squares[k], 2 * FIG14_SLICES[k], chunks, exact)
    }
}

fn fig14_exact(series: usize, r: f64) -> Option<f64> {
    match series {
        0 => Some((1.0 - r).powi(512)),
        1..=3 => Some(gt_superpage_exact(r, FIG14_FRAMES[series], MIN_USABLE)),
        _ => None,
    }
}

fn fig14(p: &Params) -> Figure {
    // The largest slice is GT-PDE-4MB's 8 MB: 16 per chunk.
    let chunks = p.slices.div_ceil(16);
    let mut series: Vec<Series> = FIG14_SERIES.iter().map(|n| Series { name: n.to_string(), points: vec![] }).collect();
    for (i, &r) in p.fig14.iter().enumerate() {
        let acc = fig14_point(p, "fig14", i, r, chunks);
        for (k, s) in series.iter_mut().enumerate() {
            s.points.push(fig14_estimate(k, r, &acc, chunks));
        }
    }
    Figure {
        id: "fig14".into(),
        title: "Fig. 14: superpage percentage".into(),
        x_label: "retired 4 KiB pages".into(),
        y_label: "share of memory mapped as superpages".into(),
        unit: "8 MB slices".into(),
        units_per_point: chunks * 16,
        series,
    }
}

/// Table 2's modes: (name, B-block KiB, frames, paper's threshold, paper's Fig. 14 threshold).
const TABLE2: [(&str, u64, u32, f64, f64); 3] =
    [("GT-PDE-4MB", 128, 32, 0.016, 0.014), ("GT-PDE-2MB", 64, 16, 0.031, 0.028), ("GT-PDE-1MB", 32, 8, 0.061, 0.055)];

fn table2(p: &Params) -> Table2 {
    // The largest unit is a 128 KB B-block: 1024 per chunk.
    let chunks = p.slices.div_ceil(1024);
    let fig14_chunks = p.slices.div_ceil(16);
    let mut rows = Vec::new();
    for (i, &(mode, kib, frames, paper, paper14)) in TABLE2.iter().enumerate() {
        let exact = threshold_exact(frames);
        let clean = clean_counts(p, "table2", i, exact, chunks);
        let idx = FIG3_BLOCKS.iter().position(|&(_, f)| f == frames).expect("a Fig. 3 block size");
        let n = chunks * CHUNK_FRAMES / frames as u64;
        let acc = fig14_point(p, "table2.fig14", i, paper14, fig14_chunks);
        let series = i + 1;
        rows.push(Threshold {
            mode: mode.into(),
            block_kib: kib,
            exact,
            paper,
            clean_at_exact: wilson(exact, clean[idx], n, Some(0.6)),
            paper_fig14: paper14,
            superpage_at_paper_fig14: fig14_estimate(series, paper14, &acc, fig14_chunks),
        });
    }
    Table2 { units_per_point: chunks * 1024, rows }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small(slices: u64, threads: usize) -> Params {
        Params { seed: 7, slices, threads, fig3: vec![0.0, 0.005, 0.02], fig7: vec![0.0, 0.6, 1.0], fig14: vec![0.001, 0.01] }
    }

    #[test]
    fn lane_masks_match_a_bit_loop() {
        let mut rng = crate::rng::component_rng(1, "masks");
        use rand::Rng;
        for _ in 0..2000 {
            // Sparse words, so that clean lanes occur.
            let w: u64 = rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>() & rng.gen::<u64>();
            for (bits, f) in [(8u32, dirty8 as fn(u64) -> u64), (16, dirty16), (32, dirty32)] {
                let slow = (0..64 / bits).fold(0u64, |m, i| {
                    let lane = (w >> (i * bits)) & ((1u64 << bits) - 1);
                    m | ((lane != 0) as u64) << i
                });
                assert_eq!(f(w), slow, "{bits}-bit lanes of {w:#x}");
            }
        }
    }

    #[test]
    fn bavs_match_the_fault_map_reader() {
        let mut rng = crate::rng::component_rng(2, "bavs");
        let mut words = [0u64; CHUNK_WORDS];
        sample_chunk(&mut rng, 0.01, &mut words);
        let mut map = crate::physmem::retired::RetiredMap::new(CHUNK_FRAMES);
        for (i, &w) in words.iter().enumerate() {
            for b in 0..64 {
                if w >> b & 1 == 1 {
                    map.retire(i as u64 * 64 + b);
                }
            }
        }
        let mut out = [0u64; MAX_SLICES];
        for bits in [8u32, 16, 32] {
            let n = bavs(&words, bits, &mut out);
            assert_eq!(n as u64, CHUNK_FRAMES / (64 * bits as u64));
            for (s, &bav) in out[..n].iter().enumerate() {
                let first = s as u64 * 64 * bits as u64;
                assert_eq!(bav, super::super::slice::bav_of(&map, first, bits as u64), "slice {s} of {bits}-frame blocks");
            }
        }
    }

    #[test]
    fn closed_forms_give_the_papers_check_values() {
        assert!((0.995f64.powi(512) - 0.0768).abs() < 5e-5);
        assert!((binomial_tail(64, 0.6, 33) - 0.933).abs() < 5e-4);
        for (frames, want) in [(32, 0.0158), (16, 0.0314), (8, 0.0619)] {
            assert!((threshold_exact(frames) - want).abs() < 5e-5, "{frames}: {}", threshold_exact(frames));
        }
        // MECHANISMS' derived GT-PDE-4MB row: 0.565 / 0.500 / 0.500 / 0.491 / 0.301 / 0.008.
        for (r, want) in [(0.001, 0.565), (0.005, 0.500), (0.01, 0.500), (0.014, 0.491), (0.02, 0.301), (0.03, 0.008)] {
            assert!((gt_superpage_exact(r, 32, 33) - want).abs() < 6e-4, "{r}");
        }
        assert!((binomial_tail(10, 0.3, 0) - 1.0).abs() < 1e-12);
        assert_eq!(binomial_tail(64, 0.0, 1), 0.0);
    }

    #[test]
    fn results_do_not_depend_on_threads_and_follow_the_seed() {
        let parts: Vec<String> = PARTS.iter().map(|s| s.to_string()).collect();
        let a = run(&parts, &small(4096, 1)).unwrap();
        let b = run(&parts, &small(4096, 3)).unwrap();
        assert_eq!(a, b);
        let mut other = small(4096, 2);
        other.seed = 8;
        assert_ne!(run(&parts, &other).unwrap().fig14, a.fig14);
    }

    #[test]
    fn bad_requests_name_the_key() {
        let e = run(&["fig9".to_string()], &small(16, 1)).unwrap_err().to_string();
        assert!(e.contains("fig3, fig7, table2, fig14"), "{e}");
        let mut p = small(16, 1);
        p.fig14 = vec![1.0];
        assert!(run(&["fig14".to_string()], &p).unwrap_err().to_string().contains("gtsm.montecarlo.fig14"));
    }

    #[test]
    fn estimates_cover_the_closed_forms() {
        let p = Params {
            seed: 11,
            slices: 8192,
            threads: 2,
            fig3: vec![0.0025, 0.005, 0.01, 0.0158, 0.03, 0.06],
            fig7: vec![0.5, 0.55, 0.6, 0.65],
            fig14: vec![0.001, 0.005, 0.01, 0.014, 0.02, 0.025, 0.03],
        };
        let parts: Vec<String> = PARTS.iter().map(|s| s.to_string()).collect();
        let r = run(&parts, &p).unwrap();
        let mut points: Vec<Estimate> = [r.fig3.unwrap(), r.fig7.unwrap(), r.fig14.unwrap()]
            .into_iter()
            .flat_map(|f| f.series.into_iter().flat_map(|s| s.points))
            .filter(|e| e.exact.is_some())
            .collect();
        for row in r.table2.unwrap().rows {
            points.push(row.clean_at_exact);
            points.push(row.superpage_at_paper_fig14);
        }
        let inside = points.iter().filter(|e| (e.lo - 1e-12..=e.hi + 1e-12).contains(&e.exact.unwrap())).count();
        // 95 % intervals: a few of ~60 may miss; none by more than a 4-sigma widening.
        assert!(inside as f64 >= 0.85 * points.len() as f64, "{inside} of {}", points.len());
        for e in &points {
            let w = 4.0 / Z95;
            let (lo, hi) = (e.value - (e.value - e.lo).max(1.0 / e.n as f64) * w, e.value + (e.hi - e.value).max(1.0 / e.n as f64) * w);
            assert!((lo..=hi).contains(&e.exact.unwrap()), "{e:?}");
        }
    }

    #[test]
    fn p_gt_pde_lies_between_gt_pde_1mb_and_2mb() {
        let f = run(&["fig14".to_string()], &small(1 << 14, 2)).unwrap().fig14.unwrap();
        let at = |name: &str, i: usize| f.series.iter().find(|s| s.name == name).unwrap().points[i].value;
        for i in 0..2 {
            assert!(at("P-GT-PDE-2MB", i) <= at("GT-PDE-1MB", i) + 0.005);
            assert!(at("P-GT-PDE-2MB", i) >= at("GT-PDE-2MB", i) - 0.01);
        }
    }
}
