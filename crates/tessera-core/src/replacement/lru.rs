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
//! - Three internal representations, picked once at build time from the ways;
//!   all give the same victims (a test drives them side by side), only speed
//!   and host memory differ:
//!   - [`MATRIX_MIN_WAYS`] to [`MATRIX_MAX_WAYS`] ways (the data caches of the
//!     shipped presets): an order matrix per set, row `w` holding one bit per
//!     way `j` ("`w` was touched after `j`"), packed in one `u64` (≤ 8 ways) or
//!     four (9–16 ways). A touch sets the way's row and clears its column; the
//!     victim is the all-zero row, found by a SIMD-within-a-register zero test.
//!     The victim costs a few instructions instead of a minimum over 8–16
//!     stamps, and a 16-way set's state is 32 bytes instead of 128 (the LLC
//!     model's recency state shrinks from 1 MiB to 256 KiB of host memory).
//!     The diagonal bit `(w, w)`, otherwise always 0, marks a way that was
//!     invalidated (or never touched);
//!   - fewer ways (the TLBs), and up to [`STAMP_MAX_WAYS`]: one `u64` timestamp
//!     per way; a touch is one store and the victim is the minimum over the set;
//!   - more ways (fully associative TLBs with 1024+ entries): a doubly linked
//!     recency list per set in flat `u32` arrays, so touch, unlink and victim
//!     are all O(1).
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

/// From [`MATRIX_MIN_WAYS`] up to this many ways the order-matrix representation is used.
pub const MATRIX_MAX_WAYS: u32 = 16;

/// Below this many ways stamps are used: their touch (one store) is cheaper
/// than a matrix touch, and the minimum over four stamps is short (measured:
/// 6 fewer instructions per TLB-missing access on the TLB-only machine).
pub const MATRIX_MIN_WAYS: u32 = 8;

/// Up to this many ways (and above [`MATRIX_MAX_WAYS`]) the timestamp representation is used.
pub const STAMP_MAX_WAYS: u32 = 32;

/// `kind = "lru"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

/// End-of-list / not-linked marker in the list representation.
const NIL: u32 = u32::MAX;

/// `repr(u8)`: a tag byte instead of a niche in the first vector's capacity,
/// so the hot paths test the representation with one byte compare.
#[derive(Clone, Debug)]
#[repr(u8)]
enum Repr {
    /// `bits[set * set_words(ways) ..][..set_words(ways)]`: the set's order
    /// matrix (see [`matrix_touch`]).
    Matrix { bits: Vec<u64> },
    /// `stamp[set * ways + way]` = value of the clock at the way's last touch.
    Stamps { stamp: Vec<u64>, clock: u64 },
    /// Per-set list, most recent at `head`, least recent at `tail`. `prev`/`next`
    /// hold way numbers within the set; `linked` says whether a way is on the list.
    List { prev: Vec<u32>, next: Vec<u32>, linked: Vec<bool>, head: Vec<u32>, tail: Vec<u32> },
}

#[derive(Clone, Debug)]
pub struct Lru {
    ways: u32,
    /// Host words of recency state per set (matrix words, or stamps): a
    /// prefetch finds a row without the division `set_words` needs.
    row_words: u32,
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
        let kind = match g.ways {
            w if (MATRIX_MIN_WAYS..=MATRIX_MAX_WAYS).contains(&w) => Kind::Matrix,
            w if w <= STAMP_MAX_WAYS => Kind::Stamps,
            _ => Kind::List,
        };
        Ok(Lru::with_repr(g.sets, g.ways, kind))
    }
}

/// Which representation a structure uses (all give the same victims).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Matrix,
    Stamps,
    List,
}

/// Bits per matrix row: the ways, or 16 for 9–16 ways (four rows per word).
#[inline(always)]
const fn row_bits(ways: usize) -> usize {
    if ways <= 8 {
        ways
    } else {
        16
    }
}

/// Matrix rows held by one `u64`.
#[inline(always)]
const fn rows_per_word(ways: usize) -> usize {
    64 / row_bits(ways)
}

/// `u64` words of one set's matrix.
#[inline(always)]
pub(crate) const fn set_words(ways: usize) -> usize {
    ways.div_ceil(rows_per_word(ways))
}

/// Bit 0 of every row slot of a word.
#[inline(always)]
const fn row_starts(ways: usize) -> u64 {
    let rb = row_bits(ways);
    let mut m = 0u64;
    let mut r = 0;
    while r < rows_per_word(ways) {
        m |= 1 << (r * rb);
        r += 1;
    }
    m
}

/// (word, shift) of way `w`'s row.
#[inline(always)]
const fn row_at(ways: usize, w: usize) -> (usize, usize) {
    (w / rows_per_word(ways), row_bits(ways) * (w % rows_per_word(ways)))
}

/// One column per way (a 16-bit row of a 12-way set uses its low 12 bits).
#[inline(always)]
const fn row_mask(ways: usize) -> u64 {
    u64::MAX >> (64 - ways)
}

/// Make `way` the most recent: its row all ones (it follows every way), then
/// its column all zeros (no way follows it), which also clears the diagonal.
#[inline(always)]
fn matrix_touch(m: &mut [u64], ways: usize, way: usize) {
    let (k, shift) = row_at(ways, way);
    m[k] |= row_mask(ways) << shift;
    let col = row_starts(ways) << way;
    for x in m.iter_mut() {
        *x &= !col;
    }
}

/// Make `way` the least recent and mark it untracked (diagonal bit set).
#[inline]
fn matrix_invalidate(m: &mut [u64], ways: usize, way: usize) {
    let col = row_starts(ways) << way;
    for x in m.iter_mut() {
        *x |= col;
    }
    let (k, shift) = row_at(ways, way);
    m[k] = (m[k] & !(row_mask(ways) << shift)) | 1 << (shift + way);
}

/// The way whose row is all zeros (touched before every other way). Only
/// meaningful when every way is tracked (the policy contract: the set is
/// full); the zero test's false positives only lie above a true zero row.
#[inline(always)]
fn matrix_victim(m: &[u64], ways: usize) -> usize {
    let ones = row_starts(ways);
    let highs = ones << (row_bits(ways) - 1);
    for (k, &x) in m.iter().enumerate() {
        let zero = x.wrapping_sub(ones) & !x & highs;
        if zero != 0 {
            return k * rows_per_word(ways) + zero.trailing_zeros() as usize / row_bits(ways);
        }
    }
    debug_assert!(false, "no least-recent way in a full set");
    0
}

#[inline]
fn matrix_row(m: &[u64], ways: usize, way: usize) -> u64 {
    let (k, shift) = row_at(ways, way);
    (m[k] >> shift) & row_mask(ways)
}

/// A set's initial matrix: way 0 least recent, every way untracked.
fn matrix_initial(ways: usize) -> Vec<u64> {
    let mut m = vec![0; set_words(ways)];
    for w in 0..ways {
        let (k, shift) = row_at(ways, w);
        // Ways 0..w precede w, and the diagonal marks it untracked.
        m[k] |= (u64::MAX >> (63 - w)) << shift;
    }
    m
}

impl Lru {
    fn with_repr(sets: u32, ways: u32, kind: Kind) -> Lru {
        let n = sets as usize * ways as usize;
        let s = sets as usize;
        let repr = match kind {
            Kind::Matrix => {
                assert!(ways <= MATRIX_MAX_WAYS, "an order matrix holds at most {MATRIX_MAX_WAYS} ways");
                Repr::Matrix { bits: matrix_initial(ways as usize).repeat(s) }
            }
            Kind::Stamps => Repr::Stamps { stamp: vec![0; n], clock: 0 },
            Kind::List => Repr::List {
                prev: vec![NIL; n],
                next: vec![NIL; n],
                linked: vec![false; n],
                head: vec![NIL; s],
                tail: vec![NIL; s],
            },
        };
        let row_words = if kind == Kind::Matrix { set_words(ways as usize) as u32 } else { ways };
        Lru { ways, row_words, repr }
    }

    /// Ways ordered from least to most recently used among the ways currently
    /// tracked in `set` (for tests and debugging; allocates).
    pub fn order(&self, set: u32) -> Vec<u32> {
        let base = set as usize * self.ways as usize;
        match &self.repr {
            Repr::Matrix { bits } => {
                let ways = self.ways as usize;
                let k = set_words(ways);
                let m = &bits[set as usize * k..][..k];
                // A tracked way's row counts the ways it follows (untracked ways
                // are below every tracked one), so the counts order the set.
                let mut v: Vec<u32> = (0..ways).filter(|&w| matrix_row(m, ways, w) >> w & 1 == 0).map(|w| w as u32).collect();
                v.sort_by_key(|&w| matrix_row(m, ways, w as usize).count_ones());
                v
            }
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
            Repr::Matrix { bits } if W <= MATRIX_MAX_WAYS as usize => {
                let k = set_words(W);
                matrix_touch(&mut bits[set as usize * k..][..k], W, way);
            }
            Repr::Stamps { stamp, clock } => {
                *clock += 1;
                stamp[set as usize * W + way] = *clock;
            }
            // The list, or a matrix of a shape the constant says cannot occur.
            _ => self.touch(set, way as u32),
        }
    }

    /// The way a fill of a `W`-way set uses, made most recent: the lowest
    /// way of `free` (a mask of invalid ways) if any, else the victim. The
    /// same as `victim` (when `free == 0`) then `touch_n`, with one
    /// representation dispatch instead of two.
    #[inline(always)]
    pub(crate) fn fill_way_n<const W: usize>(&mut self, set: u32, free: u32) -> usize {
        debug_assert_eq!(W, self.ways as usize);
        match &mut self.repr {
            Repr::Matrix { bits } if W <= MATRIX_MAX_WAYS as usize => {
                let k = set_words(W);
                let m = &mut bits[set as usize * k..][..k];
                let way = if free != 0 { free.trailing_zeros() as usize } else { matrix_victim(m, W) };
                matrix_touch(m, W, way);
                way
            }
            Repr::Stamps { stamp, clock } => {
                let base = set as usize * W;
                let s: &mut [u64; W] = (&mut stamp[base..base + W]).try_into().unwrap();
                let way = if free != 0 { free.trailing_zeros() as usize } else { argmin(s) };
                *clock += 1;
                s[way] = *clock;
                way
            }
            _ => {
                let way = if free != 0 { free.trailing_zeros() as usize } else { self.victim(set) as usize };
                self.touch(set, way as u32);
                way
            }
        }
    }

    /// Host-prefetch the recency state of `set` (see [`crate::table::SetAssoc::prefetch_set`]).
    #[inline]
    pub(crate) fn prefetch_set(&self, set: u32) {
        match &self.repr {
            Repr::Matrix { bits: words } | Repr::Stamps { stamp: words, .. } => {
                if let Some(first) = words.get(set as usize * self.row_words as usize) {
                    crate::table::host_prefetch(first);
                }
            }
            Repr::List { .. } => {}
        }
    }

    #[inline(always)]
    fn touch(&mut self, set: u32, way: u32) {
        let base = set as usize * self.ways as usize;
        match &mut self.repr {
            Repr::Matrix { bits } => {
                let ways = self.ways as usize;
                let k = set_words(ways);
                matrix_touch(&mut bits[set as usize * k..][..k], ways, way as usize);
            }
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
    /// The way hit or filled last is already most recently used: touching
    /// it again keeps the order.
    fn repeat_hits_free(&self) -> bool {
        true
    }
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
            Repr::Matrix { bits } => {
                let ways = self.ways as usize;
                let k = set_words(ways);
                matrix_invalidate(&mut bits[set as usize * k..][..k], ways, way as usize);
            }
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
            // Every way is valid when asked (the contract), so the last position is the oldest touch.
            Repr::Matrix { bits } => {
                let k = set_words(ways);
                matrix_victim(&bits[set as usize * k..][..k], ways) as u32
            }
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

    /// Every representation gives the same order and victims under the
    /// table's contract (victim only asked of a full set, the lowest invalid
    /// way filled first), on random hits, invalidations and fills.
    #[test]
    fn all_representations_agree_on_random_touches() {
        use rand::{Rng, SeedableRng};
        for ways in [1u32, 2, 3, 4, 8, 15, 16, 24, 32] {
            let mut reprs: Vec<Lru> = [Kind::Matrix, Kind::Stamps, Kind::List]
                .into_iter()
                .filter(|&k| k != Kind::Matrix || ways <= MATRIX_MAX_WAYS)
                .filter(|&k| k != Kind::Stamps || ways <= STAMP_MAX_WAYS)
                .map(|k| Lru::with_repr(2, ways, k))
                .collect();
            assert!(reprs.len() >= 2, "ways {ways}");
            let mut rng = crate::rng::SimRng::seed_from_u64(7 + ways as u64);
            let mut valid = [0u64; 2];
            for step in 0..20_000 {
                let s = rng.gen_range(0..2u32);
                let v = &mut valid[s as usize];
                let full = *v == (1u64 << ways) - 1;
                let way = rng.gen_range(0..ways);
                match rng.gen_range(0..10) {
                    0..=3 if *v >> way & 1 == 1 => reprs.iter_mut().for_each(|p| p.on_hit(s, way)),
                    4 if *v >> way & 1 == 1 => {
                        *v &= !(1 << way);
                        reprs.iter_mut().for_each(|p| p.on_invalidate(s, way));
                    }
                    _ if !full => {
                        let w = (!*v).trailing_zeros();
                        *v |= 1 << w;
                        reprs.iter_mut().for_each(|p| p.on_fill(s, w));
                    }
                    _ => {
                        let victims: Vec<u32> = reprs.iter_mut().map(|p| p.victim(s)).collect();
                        assert!(victims.iter().all(|&x| x == victims[0]), "ways {ways} step {step}: {victims:?}");
                        reprs.iter_mut().for_each(|p| p.on_fill(s, victims[0]));
                    }
                }
                let first = reprs[0].order(s);
                for p in &reprs[1..] {
                    assert_eq!(p.order(s), first, "ways {ways} step {step}");
                }
                assert_eq!(first.len(), valid[s as usize].count_ones() as usize, "ways {ways} step {step}");
            }
        }
    }

    #[test]
    fn order_matrix_rows_follow_touches() {
        // Four ways, one 16-bit word: row w at bits 4w..4w+4.
        let mut m = matrix_initial(4);
        assert_eq!(m, vec![0xf731]);
        for w in 0..4 {
            matrix_touch(&mut m, 4, w);
        }
        // Way 3 follows 0, 1, 2; way 0 follows none and is the victim.
        assert_eq!(m, vec![0x7310]);
        assert_eq!(matrix_victim(&m, 4), 0);
        matrix_touch(&mut m, 4, 0);
        assert_eq!(matrix_victim(&m, 4), 1);
        matrix_invalidate(&mut m, 4, 2);
        assert_eq!(matrix_row(&m, 4, 2), 0b0100, "only the diagonal: untracked, least recent");
        // Sixteen ways: four words, the last row in the top bits.
        let mut m = matrix_initial(16);
        assert_eq!(m.len(), 4);
        for w in (0..16).rev() {
            matrix_touch(&mut m, 16, w);
        }
        assert_eq!(matrix_victim(&m, 16), 15);
        assert_eq!(matrix_row(&m, 16, 0), 0xfffe);
    }

    #[test]
    fn empty_geometry_is_an_error() {
        assert!(Lru::build(&Config {}, &Geometry { sets: 0, ways: 4, seed: 0 }).is_err());
        assert!(Lru::build(&Config {}, &Geometry { sets: 1, ways: 0, seed: 0 }).is_err());
    }
}
