//! Exact least-recently-used replacement.
//!
//! ## What it models
//! True LRU per set: the victim is the valid way whose last hit or fill is the
//! oldest. Used by every TLB level, paging-structure cache and data cache that
//! the papers describe as "LRU".
//!
//! ## Choices where the papers are silent
//! - Exact LRU, not a pseudo-LRU tree: the papers say "LRU" without naming an
//!   approximation.
//! - Two internal representations, picked once at build time from the ways:
//!   - up to [`STAMP_MAX_WAYS`] ways: one `u64` timestamp per way; a touch is one
//!     store and the victim is the minimum over the set (a short linear scan);
//!   - more ways (fully associative TLBs with 1024+ entries): a doubly linked
//!     recency list per set in flat `u32` arrays, so touch, unlink and victim
//!     are all O(1).
//!
//!   Both give the same victims; only speed differs.
//! - A fill is a touch (the new entry becomes most recent); an invalidated way
//!   leaves the order and re-enters it as most recent when filled again.
//!
//! ## Config
//! `kind = "lru"` (no parameters)
//!
//! ## Stats
//! None (the owning structure counts hits, misses and evictions).

use super::{Geometry, Replacement};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use serde::{Deserialize, Serialize};

/// Up to this many ways the timestamp representation is used.
pub const STAMP_MAX_WAYS: u32 = 32;

/// `kind = "lru"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

/// End-of-list / not-linked marker in the list representation.
const NIL: u32 = u32::MAX;

#[derive(Clone, Debug)]
enum Repr {
    /// `stamp[set * ways + way]` = value of the clock at the way's last touch.
    Stamps { stamp: Vec<u64>, clock: u64 },
    /// Per-set list, most recent at `head`, least recent at `tail`. `prev`/`next`
    /// hold way numbers within the set; `linked` says whether a way is on the list.
    List { prev: Vec<u32>, next: Vec<u32>, linked: Vec<bool>, head: Vec<u32>, tail: Vec<u32> },
}

#[derive(Clone, Debug)]
pub struct Lru {
    ways: u32,
    repr: Repr,
}

impl Mechanism for Lru {
    const NAME: &'static str = "lru";
    const SUMMARY: &'static str = "least recently used (exact)";
    type Config = Config;
    type Ctx = Geometry;
    fn build(_: &Config, g: &Geometry) -> Result<Self> {
        if g.sets == 0 || g.ways == 0 {
            return Err(Error::config("replacement", format!("lru needs at least one set and one way (got {} × {})", g.sets, g.ways)));
        }
        Ok(Lru::with_repr(g.sets, g.ways, g.ways > STAMP_MAX_WAYS))
    }
}

impl Lru {
    fn with_repr(sets: u32, ways: u32, list: bool) -> Lru {
        let n = sets as usize * ways as usize;
        let repr = if list {
            let s = sets as usize;
            Repr::List { prev: vec![NIL; n], next: vec![NIL; n], linked: vec![false; n], head: vec![NIL; s], tail: vec![NIL; s] }
        } else {
            Repr::Stamps { stamp: vec![0; n], clock: 0 }
        };
        Lru { ways, repr }
    }

    /// Ways ordered from least to most recently used among the ways currently
    /// tracked in `set` (for tests and debugging; allocates).
    pub fn order(&self, set: u32) -> Vec<u32> {
        let base = set as usize * self.ways as usize;
        match &self.repr {
            Repr::Stamps { stamp, .. } => {
                let mut v: Vec<u32> = (0..self.ways).filter(|&w| stamp[base + w as usize] != 0).collect();
                v.sort_by_key(|&w| stamp[base + w as usize]);
                v
            }
            Repr::List { prev, tail, .. } => {
                let mut v = Vec::new();
                let mut w = tail[set as usize];
                while w != NIL {
                    v.push(w);
                    w = prev[base + w as usize];
                }
                v
            }
        }
    }

    /// [`Self::touch`] for a structure of exactly `W` ways (`W == self.ways`):
    /// the stamp store with the set base computed from the constant.
    #[inline(always)]
    pub(crate) fn touch_n<const W: usize>(&mut self, set: u32, way: usize) {
        debug_assert_eq!(W, self.ways as usize);
        debug_assert!(way < W);
        match &mut self.repr {
            Repr::Stamps { stamp, clock } => {
                *clock += 1;
                stamp[set as usize * W + way] = *clock;
            }
            Repr::List { .. } => self.touch(set, way as u32),
        }
    }

    /// [`Replacement::victim`] for a structure of exactly `W` ways: the
    /// minimum stamp (lowest way on ties, as in `victim`), fully unrolled.
    #[inline(always)]
    pub(crate) fn victim_n<const W: usize>(&mut self, set: u32) -> usize {
        debug_assert_eq!(W, self.ways as usize);
        match &self.repr {
            Repr::Stamps { stamp, .. } => {
                let base = set as usize * W;
                let s: &[u64; W] = stamp[base..base + W].try_into().unwrap();
                argmin(s)
            }
            Repr::List { .. } => self.victim(set) as usize,
        }
    }

    /// Host-prefetch the recency state of `set` (see [`crate::table::SetAssoc::prefetch_set`]).
    #[inline]
    pub(crate) fn prefetch_set(&self, set: u32) {
        if let Repr::Stamps { stamp, .. } = &self.repr {
            if let Some(first) = stamp.get(set as usize * self.ways as usize) {
                crate::table::host_prefetch(first);
            }
        }
    }

    #[inline(always)]
    fn touch(&mut self, set: u32, way: u32) {
        let base = set as usize * self.ways as usize;
        match &mut self.repr {
            Repr::Stamps { stamp, clock } => {
                *clock += 1;
                stamp[base + way as usize] = *clock;
            }
            Repr::List { prev, next, linked, head, tail } => {
                let s = set as usize;
                let i = base + way as usize;
                if linked[i] {
                    if head[s] == way {
                        return;
                    }
                    unlink(prev, next, head, tail, base, s, way);
                }
                // Push at the head (most recent).
                let h = head[s];
                prev[i] = NIL;
                next[i] = h;
                if h != NIL {
                    prev[base + h as usize] = way;
                } else {
                    tail[s] = way;
                }
                head[s] = way;
                linked[i] = true;
            }
        }
    }
}

/// Index of the smallest element, the lowest index among equal ones (as the
/// strict `<` scan in `victim`). Fully unrolled for a constant `W`; the
/// comparisons compile to conditional moves.
#[inline(always)]
fn argmin<const W: usize>(s: &[u64; W]) -> usize {
    let mut best = 0usize;
    let mut best_stamp = s[0];
    for (w, &t) in s.iter().enumerate().skip(1) {
        let less = t < best_stamp;
        best = if less { w } else { best };
        best_stamp = if less { t } else { best_stamp };
    }
    best
}

#[inline]
fn unlink(prev: &mut [u32], next: &mut [u32], head: &mut [u32], tail: &mut [u32], base: usize, s: usize, way: u32) {
    let i = base + way as usize;
    let (p, n) = (prev[i], next[i]);
    if p != NIL {
        next[base + p as usize] = n;
    } else {
        head[s] = n;
    }
    if n != NIL {
        prev[base + n as usize] = p;
    } else {
        tail[s] = p;
    }
    prev[i] = NIL;
    next[i] = NIL;
}

impl Replacement for Lru {
    #[inline(always)]
    fn on_hit(&mut self, set: u32, way: u32) {
        self.touch(set, way);
    }

    #[inline]
    fn on_fill(&mut self, set: u32, way: u32) {
        self.touch(set, way);
    }

    #[inline]
    fn on_invalidate(&mut self, set: u32, way: u32) {
        let base = set as usize * self.ways as usize;
        match &mut self.repr {
            Repr::Stamps { stamp, .. } => stamp[base + way as usize] = 0,
            Repr::List { prev, next, linked, head, tail } => {
                let i = base + way as usize;
                if linked[i] {
                    unlink(prev, next, head, tail, base, set as usize, way);
                    linked[i] = false;
                }
            }
        }
    }

    #[inline]
    fn victim(&mut self, set: u32) -> u32 {
        let ways = self.ways as usize;
        let base = set as usize * ways;
        match &self.repr {
            Repr::Stamps { stamp, .. } => {
                let s = &stamp[base..base + ways];
                let mut best = 0usize;
                let mut best_stamp = s[0];
                for (w, &t) in s.iter().enumerate().skip(1) {
                    if t < best_stamp {
                        best = w;
                        best_stamp = t;
                    }
                }
                best as u32
            }
            Repr::List { tail, .. } => {
                let t = tail[set as usize];
                // The caller only asks when every way is valid, so the list is full.
                if t == NIL {
                    0
                } else {
                    t
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lru(sets: u32, ways: u32) -> Lru {
        Lru::build(&Config {}, &Geometry { sets, ways, seed: 0 }).unwrap()
    }

    fn fill_all(p: &mut Lru, set: u32) {
        for w in 0..p.ways {
            p.on_fill(set, w);
        }
    }

    #[test]
    fn victim_is_oldest_fill() {
        for ways in [1, 4, 16, 33, 64] {
            let mut p = lru(2, ways);
            fill_all(&mut p, 1);
            assert_eq!(p.victim(1), 0, "ways {ways}");
        }
    }

    #[test]
    fn hit_moves_way_to_most_recent() {
        for ways in [4, 8, 64, 1024] {
            let mut p = lru(1, ways);
            fill_all(&mut p, 0);
            p.on_hit(0, 0);
            assert_eq!(p.victim(0), 1, "ways {ways}");
            for w in 1..ways {
                p.on_hit(0, w);
            }
            assert_eq!(p.victim(0), 0, "ways {ways}");
        }
    }

    #[test]
    fn refilled_way_becomes_most_recent() {
        for ways in [4, 40] {
            let mut p = lru(1, ways);
            fill_all(&mut p, 0);
            let v = p.victim(0);
            p.on_fill(0, v);
            assert_eq!(p.victim(0), 1, "ways {ways}");
        }
    }

    #[test]
    fn invalidated_way_leaves_the_order() {
        for ways in [4, 48] {
            let mut p = lru(1, ways);
            fill_all(&mut p, 0);
            p.on_invalidate(0, 2);
            assert!(!p.order(0).contains(&2), "ways {ways}");
            p.on_invalidate(0, 0);
            p.on_invalidate(0, 0); // idempotent
            p.on_fill(0, 0);
            p.on_fill(0, 2);
            let o = p.order(0);
            assert_eq!(o.len(), ways as usize);
            assert_eq!(&o[o.len() - 2..], &[0, 2]);
            assert_eq!(p.victim(0), 1);
        }
    }

    #[test]
    fn sets_are_independent() {
        for ways in [2, 64] {
            let mut p = lru(4, ways);
            fill_all(&mut p, 0);
            fill_all(&mut p, 3);
            p.on_hit(3, 0);
            assert_eq!(p.victim(0), 0);
            assert_eq!(p.victim(3), 1);
        }
    }

    #[test]
    fn both_representations_agree_on_random_touches() {
        use rand::{Rng, SeedableRng};
        let ways = 24;
        let mut a = lru(2, ways);
        let mut b = Lru::with_repr(2, ways, true);
        assert!(matches!(a.repr, Repr::Stamps { .. }) && matches!(b.repr, Repr::List { .. }));
        let mut rng = crate::rng::SimRng::seed_from_u64(7);
        for s in 0..2 {
            fill_all(&mut a, s);
            fill_all(&mut b, s);
        }
        for _ in 0..5000 {
            let s = rng.gen_range(0..2);
            let w = rng.gen_range(0..ways);
            match rng.gen_range(0..3) {
                0 => {
                    a.on_hit(s, w);
                    b.on_hit(s, w);
                }
                1 => {
                    a.on_invalidate(s, w);
                    b.on_invalidate(s, w);
                    a.on_fill(s, w);
                    b.on_fill(s, w);
                }
                _ => {
                    let (va, vb) = (a.victim(s), b.victim(s));
                    assert_eq!(va, vb);
                    a.on_fill(s, va);
                    b.on_fill(s, vb);
                }
            }
            assert_eq!(a.order(s), b.order(s));
        }
    }

    #[test]
    fn empty_geometry_is_an_error() {
        assert!(Lru::build(&Config {}, &Geometry { sets: 0, ways: 4, seed: 0 }).is_err());
        assert!(Lru::build(&Config {}, &Geometry { sets: 1, ways: 0, seed: 0 }).is_err());
    }
}
