//! Zipfian key popularity, as YCSB generates it.
//!
//! ## What it models
//! YCSB's `ZipfianGenerator` (Gray et al., "Quickly generating billion-record
//! synthetic databases", SIGMOD'94): ranks `0..n`, rank `k` drawn with
//! probability proportional to `1/(k+1)^theta`, by inverting an approximation
//! of the CDF in O(1) per draw:
//! `u·ζ(n) < 1 → 0`, `< 1 + 0.5^θ → 1`, else `⌊n·(η·u − η + 1)^α⌋` with
//! `α = 1/(1−θ)` and `η = (1 − (2/n)^(1−θ)) / (1 − ζ(2)/ζ(n))`. Ranks 0 and 1
//! are exact; the method over-weights ranks 2–7 (by 16 % at ranks 2–3 for
//! θ = 0.99) and then follows the Zipf law within 3 % — kept as is, since that
//! is the distribution YCSB's clients draw (tested below).
//! [`ScrambledZipf`] is YCSB's `ScrambledZipfianGenerator`: the rank is hashed
//! with FNV-1a so popular items are spread over the key space.
//!
//! ## Choices
//! - `theta` must be in `[0, 1)` (the formula's domain); 0 is uniform. YCSB's
//!   default is 0.99.
//! - `ζ(n)` is summed exactly for the first 2^20 terms and by Euler–Maclaurin
//!   for the tail (error far below 1e-12 relative), so building a generator over
//!   billions of items takes milliseconds, not seconds.
//! - YCSB's scrambled generator draws from a fixed 10^10-item Zipfian before
//!   hashing; [`ScrambledZipf`] draws over `n` itself, so the hottest key's
//!   probability is exactly `1/ζ(n)` (hash collisions merge a few ranks).

use rand::Rng;

use super::kit::fnv64;
use crate::error::{Error, Result};

const EXACT_TERMS: u64 = 1 << 20;

/// `ζ(n, θ) = Σ_{i=1..n} i^-θ`.
pub fn zeta(n: u64, theta: f64) -> f64 {
    let head = n.min(EXACT_TERMS);
    let mut s = 0.0;
    for i in (1..=head).rev() {
        s += (i as f64).powf(-theta);
    }
    if n > head {
        // Euler–Maclaurin for Σ_{i=a+1..n} f(i), f(x) = x^-θ.
        let (a, b) = (head as f64, n as f64);
        let f = |x: f64| x.powf(-theta);
        let df = |x: f64| -theta * x.powf(-theta - 1.0);
        let d3f = |x: f64| -theta * (theta + 1.0) * (theta + 2.0) * x.powf(-theta - 3.0);
        let integral = if (theta - 1.0).abs() < 1e-12 {
            b.ln() - a.ln()
        } else {
            (b.powf(1.0 - theta) - a.powf(1.0 - theta)) / (1.0 - theta)
        };
        s += integral + (f(b) - f(a)) / 2.0 + (df(b) - df(a)) / 12.0 - (d3f(b) - d3f(a)) / 720.0;
    }
    s
}

/// Zipfian ranks in `0..n` (rank 0 most popular).
#[derive(Clone, Debug)]
pub struct Zipf {
    n: u64,
    theta: f64,
    alpha: f64,
    zetan: f64,
    eta: f64,
    half_pow_theta: f64,
}

impl Zipf {
    pub fn new(n: u64, theta: f64) -> Result<Zipf> {
        if n == 0 {
            return Err(Error::config("zipf", "a Zipfian needs at least one item"));
        }
        if !(0.0..1.0).contains(&theta) {
            return Err(Error::config("zipf", format!("theta {theta} is outside [0, 1)")));
        }
        let zetan = zeta(n, theta);
        let zeta2 = zeta(2.min(n), theta);
        let eta = if n <= 2 {
            1.0
        } else {
            (1.0 - (2.0 / n as f64).powf(1.0 - theta)) / (1.0 - zeta2 / zetan)
        };
        Ok(Zipf { n, theta, alpha: 1.0 / (1.0 - theta), zetan, eta, half_pow_theta: 0.5f64.powf(theta) })
    }

    pub fn items(&self) -> u64 {
        self.n
    }

    pub fn theta(&self) -> f64 {
        self.theta
    }

    /// `ζ(n, θ)`: rank 0 is drawn with probability `1/ζ(n)`.
    pub fn zetan(&self) -> f64 {
        self.zetan
    }

    /// Draw a rank in `0..n`.
    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        let u: f64 = rng.gen();
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + self.half_pow_theta && self.n > 1 {
            return 1;
        }
        let r = (self.n as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        r.min(self.n - 1)
    }
}

/// Zipfian popularity over items `0..n`, the popular ones scattered by FNV.
#[derive(Clone, Debug)]
pub struct ScrambledZipf {
    z: Zipf,
}

impl ScrambledZipf {
    pub fn new(n: u64, theta: f64) -> Result<ScrambledZipf> {
        Ok(ScrambledZipf { z: Zipf::new(n, theta)? })
    }

    #[inline]
    pub fn next<R: Rng + ?Sized>(&self, rng: &mut R) -> u64 {
        fnv64(self.z.next(rng)) % self.z.n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::component_rng;

    #[test]
    fn zeta_tail_approximation_matches_the_exact_sum() {
        for theta in [0.5, 0.8, 0.99] {
            let n = 3_000_000u64;
            let exact: f64 = (1..=n).rev().map(|i| (i as f64).powf(-theta)).sum();
            let approx = zeta(n, theta);
            assert!(((approx - exact) / exact).abs() < 1e-12, "theta {theta}: {approx} vs {exact}");
        }
    }

    #[test]
    fn draws_follow_the_zipf_law() {
        let (n, theta) = (10_000u64, 0.99);
        let z = Zipf::new(n, theta).unwrap();
        let mut rng = component_rng(3, "zipf-test");
        let draws = 2_000_000u64;
        let mut counts = vec![0u64; n as usize];
        for _ in 0..draws {
            counts[z.next(&mut rng) as usize] += 1;
        }
        let p = |k: u64| ((k + 1) as f64).powf(-theta) / z.zetan();
        // Ranks 0 and 1 are exact in Gray's method.
        for k in 0..2u64 {
            let f = counts[k as usize] as f64 / draws as f64;
            assert!((f - p(k)).abs() / p(k) < 0.02, "rank {k}: {f} vs {}", p(k));
        }
        // Gray's method, exactly: P(rank >= k) = 1 - ((k/n)^(1/α) - 1 + η)/η for k >= 2.
        let ge = |k: u64| 1.0 - (((k as f64 / n as f64).powf(1.0 - theta) - 1.0 + z.eta) / z.eta);
        // Power-of-two bands of ranks carry the method's mass within 3 %, and
        // from rank 8 on, the Zipf law's within 5 %.
        let mut lo = 2u64;
        while lo < n {
            let hi = (2 * lo).min(n);
            let f: f64 = counts[lo as usize..hi as usize].iter().sum::<u64>() as f64 / draws as f64;
            let method = ge(lo) - ge(hi);
            assert!((f - method).abs() / method < 0.03, "ranks {lo}..{hi}: {f} vs {method}");
            let law: f64 = (lo..hi).map(p).sum();
            if lo >= 8 {
                assert!((f - law).abs() / law < 0.05, "ranks {lo}..{hi}: {f} vs Zipf {law}");
            }
            lo = hi;
        }
        // The head is much hotter than a uniform draw would make it.
        assert!(counts[0] > 50 * draws / n);
    }

    #[test]
    fn theta_zero_is_uniform_and_bad_theta_is_rejected() {
        let z = Zipf::new(100, 0.0).unwrap();
        let mut rng = component_rng(1, "zipf-test");
        let mut counts = [0u32; 100];
        for _ in 0..200_000 {
            counts[z.next(&mut rng) as usize] += 1;
        }
        assert!(counts.iter().all(|&c| (1700..2300).contains(&c)), "{counts:?}");
        assert!(Zipf::new(10, 1.0).is_err());
        assert!(Zipf::new(0, 0.5).is_err());
        let one = Zipf::new(1, 0.99).unwrap();
        assert_eq!(one.next(&mut rng), 0);
    }

    #[test]
    fn scrambling_keeps_the_skew_but_moves_the_hot_keys() {
        let s = ScrambledZipf::new(1_000_000, 0.99).unwrap();
        let mut rng = component_rng(5, "zipf-test");
        let mut counts = std::collections::HashMap::new();
        for _ in 0..200_000 {
            *counts.entry(s.next(&mut rng)).or_insert(0u32) += 1;
        }
        let (&hot, &c) = counts.iter().max_by_key(|(k, c)| (**c, **k)).unwrap();
        assert!(c > 5000, "hottest key drawn {c} times");
        assert_eq!(hot, fnv64(0) % 1_000_000);
        assert_ne!(hot, 0);
    }
}
