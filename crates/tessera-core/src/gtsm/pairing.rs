//! Algorithm 1: pairing the slices of one 128 MB chunk into P-GT-PDEs.
//!
//! ## What it models
//! A P-GT-PDE is two GT-PDEs in one 16-byte entry: both slices lie in the
//! same aligned 128 MB chunk and share one block-selection bitmap, so each
//! of the two must have all 32 selected B-blocks usable: their BAVs' AND
//! needs at least 32 set bits. Algorithm 1 finds pairs greedily:
//! 1. sort the chunk's BAVs by popcount, ascending (ties: lower slice first);
//! 2. every BAV with all 64 B-blocks usable is *self-paired* (the slice's
//!    two halves share the all-ones bitmap);
//! 3. take the first unprocessed BAV Bi; pair it with the first unprocessed
//!    Bj after it (in sorted order) with popcount(Bi & Bj) ≥ 32; if there is
//!    none, Bi is *discarded*; repeat while two or more are unprocessed (a
//!    last lone one is discarded).
//!
//! Few-usable slices go first, so they take partners before the well-
//! endowed slices, which are easier to pair, are used up.
//! ## Paper
//! "Supporting superpages in non-contiguous physical memory", HPCA 2015,
//! §3.6, Fig. 9(b), Algorithm 1.
//! ## Choices where the paper is silent
//! - A pair's bitmap is "any 32 of the AND": here the 32 lowest set bits
//!   ([`super::slice::select_bitmap`]).
//! - Ties in the sort keep slice order, so the result is deterministic.
//! - Capacity accounting (Fig. 14): a self-paired slice is 100 % mapped, a
//!   paired one 50 %, a discarded one 0 %.
//!
//! [`pair_into`] works in caller-owned, fixed-size storage (no allocation:
//! the Monte Carlo calls it millions of times); [`pair`] wraps it.

use serde::Serialize;

use super::slice::{select_bitmap, MAPPED};

/// Most slices in a chunk: 64 slices of 2 MB in 128 MB.
pub const MAX_SLICES: usize = 64;

/// What Algorithm 1 did with one slice.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// All 64 B-blocks usable: its halves share the all-ones bitmap.
    SelfPaired,
    /// Paired with slice `with` (an index into the chunk) under `bitmap`.
    Paired { with: u8, bitmap: u64 },
    /// No partner.
    #[default]
    Discarded,
}

impl Outcome {
    /// Share of the slice mapped as superpages, in halves (2, 1 or 0).
    pub fn mapped_halves(self) -> u64 {
        match self {
            Outcome::SelfPaired => 2,
            Outcome::Paired { .. } => 1,
            Outcome::Discarded => 0,
        }
    }
}

/// Run Algorithm 1 on `bavs` (one chunk, at most [`MAX_SLICES`]) and write
/// each slice's outcome to `out[i]`. Returns the mapped halves of the chunk.
pub fn pair_into(bavs: &[u64], out: &mut [Outcome; MAX_SLICES]) -> u64 {
    let n = bavs.len();
    assert!(n <= MAX_SLICES, "a chunk has at most {MAX_SLICES} slices, not {n}");
    let mut order = [0u8; MAX_SLICES];
    for (i, o) in order.iter_mut().enumerate().take(n) {
        *o = i as u8;
    }
    let order = &mut order[..n];
    order.sort_unstable_by_key(|&i| (bavs[i as usize].count_ones(), i));
    let mut done = [false; MAX_SLICES];
    let mut halves = 0;
    for &i in order.iter() {
        if bavs[i as usize] == u64::MAX {
            out[i as usize] = Outcome::SelfPaired;
            done[i as usize] = true;
            halves += 2;
        }
    }
    for (p, &i) in order.iter().enumerate() {
        let i = i as usize;
        if done[i] {
            continue;
        }
        done[i] = true;
        out[i] = Outcome::Discarded;
        for &j in &order[p + 1..] {
            let j = j as usize;
            let both = bavs[i] & bavs[j];
            if !done[j] && both.count_ones() >= MAPPED {
                let bitmap = select_bitmap(both).expect("32 usable blocks in the AND");
                out[i] = Outcome::Paired { with: j as u8, bitmap };
                out[j] = Outcome::Paired { with: i as u8, bitmap };
                done[j] = true;
                halves += 2;
                break;
            }
        }
    }
    halves
}

/// Algorithm 1's result for one chunk.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Pairing {
    /// Each slice's outcome, in slice order.
    pub outcomes: Vec<Outcome>,
}

impl Pairing {
    /// The P-GT-PDEs: (lower slice, higher slice, shared bitmap).
    pub fn pairs(&self) -> Vec<(usize, usize, u64)> {
        self.outcomes
            .iter()
            .enumerate()
            .filter_map(|(i, o)| match *o {
                Outcome::Paired { with, bitmap } if i < with as usize => Some((i, with as usize, bitmap)),
                _ => None,
            })
            .collect()
    }
    pub fn self_paired(&self) -> Vec<usize> {
        self.indices(|o| o == Outcome::SelfPaired)
    }
    pub fn discarded(&self) -> Vec<usize> {
        self.indices(|o| o == Outcome::Discarded)
    }
    fn indices(&self, f: impl Fn(Outcome) -> bool) -> Vec<usize> {
        (0..self.outcomes.len()).filter(|&i| f(self.outcomes[i])).collect()
    }
    /// Share of the chunk's capacity mapped as superpages (self-paired
    /// slices 100 %, paired 50 %, discarded 0 %).
    pub fn superpage_share(&self) -> f64 {
        if self.outcomes.is_empty() {
            return 0.0;
        }
        self.outcomes.iter().map(|o| o.mapped_halves()).sum::<u64>() as f64 / (2 * self.outcomes.len()) as f64
    }
}

/// Algorithm 1 on one chunk's BAVs (at most [`MAX_SLICES`]).
pub fn pair(bavs: &[u64]) -> Pairing {
    let mut out = [Outcome::Discarded; MAX_SLICES];
    pair_into(bavs, &mut out);
    Pairing { outcomes: out[..bavs.len()].to_vec() }
}

/// Whether `p` is a valid pairing of `bavs`: every slice has one outcome;
/// a self-paired slice is clean; pairs are mutual, and their bitmap has
/// exactly 32 bits, all usable in both slices. `Err` says what is wrong.
pub fn check_valid(bavs: &[u64], p: &Pairing) -> Result<(), String> {
    if p.outcomes.len() != bavs.len() {
        return Err(format!("{} outcomes for {} slices", p.outcomes.len(), bavs.len()));
    }
    for (i, o) in p.outcomes.iter().enumerate() {
        match *o {
            Outcome::SelfPaired if bavs[i] != u64::MAX => return Err(format!("slice {i} self-paired with BAV {:#x}", bavs[i])),
            Outcome::Paired { with, bitmap } => {
                let j = with as usize;
                if j == i || j >= bavs.len() {
                    return Err(format!("slice {i} paired with slice {j}"));
                }
                if p.outcomes[j] != (Outcome::Paired { with: i as u8, bitmap }) {
                    return Err(format!("slice {i} names {j}, which does not name it back with the same bitmap"));
                }
                if bitmap.count_ones() != MAPPED || bitmap & !(bavs[i] & bavs[j]) != 0 {
                    return Err(format!("pair ({i}, {j}): bitmap {bitmap:#x} is not 32 blocks usable in both"));
                }
            }
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Algorithm 1 as the paper writes it, with vectors and states, for comparison.
    fn reference(bavs: &[u64]) -> Pairing {
        #[derive(Copy, Clone, PartialEq)]
        enum State {
            Unprocessed,
            SelfPaired,
            Paired(usize, u64),
            Discarded,
        }
        let mut sorted: Vec<usize> = (0..bavs.len()).collect();
        sorted.sort_by_key(|&i| bavs[i].count_ones()); // stable: ties keep slice order
        let mut state = vec![State::Unprocessed; bavs.len()];
        for &i in &sorted {
            if bavs[i].count_ones() == 64 {
                state[i] = State::SelfPaired;
            }
        }
        loop {
            let unprocessed: Vec<usize> = sorted.iter().copied().filter(|&i| state[i] == State::Unprocessed).collect();
            if unprocessed.len() < 2 {
                for i in unprocessed {
                    state[i] = State::Discarded;
                }
                break;
            }
            let bi = unprocessed[0];
            let partner = unprocessed[1..].iter().copied().find(|&bj| (bavs[bi] & bavs[bj]).count_ones() >= 32);
            match partner {
                Some(bj) => {
                    // The 32 lowest usable blocks of the AND, found bit by bit.
                    let both = bavs[bi] & bavs[bj];
                    let mut bitmap = 0u64;
                    for k in 0..64 {
                        if both >> k & 1 == 1 && bitmap.count_ones() < 32 {
                            bitmap |= 1 << k;
                        }
                    }
                    state[bi] = State::Paired(bj, bitmap);
                    state[bj] = State::Paired(bi, bitmap);
                }
                None => state[bi] = State::Discarded,
            }
        }
        Pairing {
            outcomes: state
                .into_iter()
                .map(|s| match s {
                    State::SelfPaired => Outcome::SelfPaired,
                    State::Paired(j, b) => Outcome::Paired { with: j as u8, bitmap: b },
                    _ => Outcome::Discarded,
                })
                .collect(),
        }
    }

    /// Most pairs any valid pairing of the non-clean slices has (exhaustive).
    fn best_pairs(bavs: &[u64], free: u64) -> u32 {
        let Some(i) = (0..bavs.len()).find(|&i| free >> i & 1 == 1) else { return 0 };
        let rest = free & !(1 << i);
        let mut best = best_pairs(bavs, rest);
        for j in 0..bavs.len() {
            if rest >> j & 1 == 1 && (bavs[i] & bavs[j]).count_ones() >= 32 {
                best = best.max(1 + best_pairs(bavs, rest & !(1 << j)));
            }
        }
        best
    }

    /// BAVs of every density: random (about 32 usable), dense (ORs of
    /// randoms), clean, and sparse.
    fn bav() -> impl Strategy<Value = u64> {
        prop_oneof![
            any::<u64>(),
            (any::<u64>(), any::<u64>()).prop_map(|(a, b)| a | b),
            (any::<u64>(), any::<u64>(), any::<u64>()).prop_map(|(a, b, c)| a | b | c),
            Just(u64::MAX),
            (any::<u64>(), any::<u64>()).prop_map(|(a, b)| a & b),
        ]
    }

    #[test]
    fn worked_example() {
        let full = u64::MAX;
        let low = (1u64 << 40) - 1; // blocks 0..40
        let high = !((1u64 << 24) - 1); // blocks 24..64
        let few = (1u64 << 20) - 1; // 20 usable: no partner
        let p = pair(&[low, full, high, few]);
        check_valid(&[low, full, high, few], &p).unwrap();
        assert_eq!(p.self_paired(), vec![1]);
        // low & high = blocks 24..40: 16 < 32, so low and high cannot pair,
        // and `few` pairs with nothing.
        assert_eq!(p.discarded(), vec![0, 2, 3]);
        let mid = !((1u64 << 8) - 1); // blocks 8..64
        let p = pair(&[low, mid, few]);
        assert_eq!(p.pairs(), vec![(0, 1, ((1u64 << 40) - 1) & !((1 << 8) - 1))]);
        assert!((p.superpage_share() - 2.0 / 6.0).abs() < 1e-12);
    }

    #[test]
    fn fewest_usable_go_first() {
        // a (33 usable) can pair with b or c; sorted first, it takes the first fit, b (40).
        let a = (1u64 << 33) - 1;
        let b = (1u64 << 40) - 1;
        let c = (1u64 << 50) - 1;
        let p = pair(&[c, b, a]);
        assert_eq!(p.outcomes[2], Outcome::Paired { with: 1, bitmap: (1u64 << 32) - 1 });
        assert_eq!(p.outcomes[0], Outcome::Discarded);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]
        #[test]
        fn matches_the_reference_and_is_valid(bavs in prop::collection::vec(bav(), 0..=MAX_SLICES)) {
            let p = pair(&bavs);
            prop_assert_eq!(&p, &reference(&bavs));
            if let Err(e) = check_valid(&bavs, &p) {
                return Err(TestCaseError::fail(e));
            }
            // Greedy leaves no two discarded slices that could have been paired.
            let d = p.discarded();
            for (x, &i) in d.iter().enumerate() {
                for &j in &d[x + 1..] {
                    prop_assert!((bavs[i] & bavs[j]).count_ones() < 32, "discarded {} and {} are compatible", i, j);
                }
            }
            let mut out = [Outcome::Discarded; MAX_SLICES];
            let halves = pair_into(&bavs, &mut out);
            prop_assert_eq!(halves, p.outcomes.iter().map(|o| o.mapped_halves()).sum::<u64>());
        }

        #[test]
        fn no_more_pairs_than_the_exhaustive_optimum(bavs in prop::collection::vec(bav(), 0..=12)) {
            let p = pair(&bavs);
            let dirty: u64 = (0..bavs.len()).filter(|&i| bavs[i] != u64::MAX).fold(0, |m, i| m | 1 << i);
            let best = best_pairs(&bavs, dirty);
            let got = p.pairs().len() as u32;
            prop_assert!(got <= best);
            // A greedy (maximal) matching has at least half the pairs of a maximum one.
            prop_assert!(2 * got >= best, "{} pairs, optimum {}", got, best);
        }
    }
}
