//! Slow, obviously-correct model of [`SetAssoc`](crate::table::SetAssoc) with LRU and random replacement.
//!
//! ## What it models
//! The same observable behaviour as [`SetAssoc`](crate::table::SetAssoc) + [`crate::replacement`]:
//! hits, misses, which way a fill lands in, which entry is evicted. It keeps,
//! per set, a `Vec` of ways (`None` = invalid) and, for LRU, the valid ways in
//! recency order (most recent first). Nothing is clever: every operation is a
//! linear scan, so it is easy to read and hard to get wrong.
//!
//! ## Choices
//! - Random: the same rule as the fast table (lowest invalid way first, else a
//!   victim), with the victim drawn as `SimRng::seed_from_u64(seed)` followed by
//!   one `gen_range(0..ways)` per full-set miss, so both models produce the same
//!   eviction sequence for the same seed.
//! - Test-only (`#[cfg(test)]`); the proptests comparing both live here.
//!
//! ## Config
//! None.
//!
//! ## Stats
//! None.

use crate::rng::SimRng;
use rand::{Rng, SeedableRng};

/// Replacement rule of the reference model.
#[derive(Clone, Debug)]
pub enum RefPolicy {
    Lru,
    Random(SimRng),
}

#[derive(Clone, Debug)]
struct RefSet {
    ways: Vec<Option<(u64, u64)>>,
    /// Valid ways, most recently used first (LRU only).
    recency: Vec<usize>,
}

/// The reference table: `sets × ways`, slots numbered `set * ways + way` as in [`SetAssoc`](crate::table::SetAssoc).
#[derive(Clone, Debug)]
pub struct RefTable {
    ways: usize,
    sets: Vec<RefSet>,
    policy: RefPolicy,
}

impl RefTable {
    pub fn lru(sets: u32, ways: u32) -> Self {
        Self::new(sets, ways, RefPolicy::Lru)
    }

    pub fn random(sets: u32, ways: u32, seed: u64) -> Self {
        Self::new(sets, ways, RefPolicy::Random(SimRng::seed_from_u64(seed)))
    }

    fn new(sets: u32, ways: u32, policy: RefPolicy) -> Self {
        let set = RefSet { ways: vec![None; ways as usize], recency: Vec::new() };
        RefTable { ways: ways as usize, sets: vec![set; sets as usize], policy }
    }

    fn touch(&mut self, set: usize, way: usize) {
        let s = &mut self.sets[set];
        s.recency.retain(|&w| w != way);
        s.recency.insert(0, way);
    }

    fn position(&self, set: usize, tag: u64) -> Option<usize> {
        self.sets[set].ways.iter().position(|e| matches!(e, Some((t, _)) if *t == tag))
    }

    /// Slot of `tag` on a hit (and mark it most recent), `None` on a miss.
    pub fn lookup(&mut self, set: u32, tag: u64) -> Option<usize> {
        let set = set as usize;
        let way = self.position(set, tag)?;
        self.touch(set, way);
        Some(set * self.ways + way)
    }

    pub fn probe(&self, set: u32, tag: u64) -> Option<usize> {
        self.position(set as usize, tag).map(|w| set as usize * self.ways + w)
    }

    pub fn insert(&mut self, set: u32, tag: u64, data: u64) -> Option<(u64, u64)> {
        let set = set as usize;
        if let Some(way) = self.position(set, tag) {
            self.sets[set].ways[way] = Some((tag, data));
            self.touch(set, way);
            return None;
        }
        let free = self.sets[set].ways.iter().position(|e| e.is_none());
        let (way, evicted) = match free {
            Some(w) => (w, None),
            None => {
                let w = match &mut self.policy {
                    RefPolicy::Lru => *self.sets[set].recency.last().expect("full set has a recency order"),
                    RefPolicy::Random(rng) => rng.gen_range(0..self.ways as u32) as usize,
                };
                (w, self.sets[set].ways[w])
            }
        };
        self.sets[set].ways[way] = Some((tag, data));
        self.touch(set, way);
        evicted
    }

    pub fn invalidate(&mut self, set: u32, tag: u64) -> bool {
        let set = set as usize;
        match self.position(set, tag) {
            Some(way) => {
                self.sets[set].ways[way] = None;
                self.sets[set].recency.retain(|&w| w != way);
                true
            }
            None => false,
        }
    }

    pub fn invalidate_where(&mut self, mut pred: impl FnMut(u64, u64) -> bool) -> u64 {
        let mut n = 0;
        for s in &mut self.sets {
            for way in 0..s.ways.len() {
                if let Some((t, d)) = s.ways[way] {
                    if pred(t, d) {
                        s.ways[way] = None;
                        s.recency.retain(|&w| w != way);
                        n += 1;
                    }
                }
            }
        }
        n
    }

    pub fn flush(&mut self) {
        for s in &mut self.sets {
            s.ways.iter_mut().for_each(|e| *e = None);
            s.recency.clear();
        }
    }

    pub fn occupancy(&self) -> usize {
        self.sets.iter().map(|s| s.ways.iter().filter(|e| e.is_some()).count()).sum()
    }

    /// Every slot in slot order: `Some((tag, data))` or `None`.
    pub fn contents(&self) -> Vec<Option<(u64, u64)>> {
        self.sets.iter().flat_map(|s| s.ways.iter().copied()).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::MechanismSpec;
    use crate::replacement::{AnyReplacement, Geometry};
    use crate::table::set_assoc::{Access, INVALID};
    use crate::table::SetAssoc;
    use proptest::prelude::*;

    const SEED: u64 = 0x5eed;

    #[derive(Clone, Debug)]
    enum Op {
        Lookup(u64),
        Insert(u64, u64),
        /// `SetAssoc::access`: a lookup, then on a miss an insert.
        Access(u64, u64),
        Invalidate(u64),
        /// Remove entries whose data is divisible by the given modulus.
        InvalidateWhere(u64),
        Flush,
    }

    fn op(pool: u64) -> impl Strategy<Value = Op> {
        prop_oneof![
            400 => (0..pool).prop_map(Op::Lookup),
            500 => (0..pool, 0..1000u64).prop_map(|(t, d)| Op::Insert(t, d)),
            300 => (0..pool, 0..1000u64).prop_map(|(t, d)| Op::Access(t, d)),
            60 => (0..pool).prop_map(Op::Invalidate),
            5 => (2..7u64).prop_map(Op::InvalidateWhere),
            2 => Just(Op::Flush),
        ]
    }

    fn fast(sets: u32, ways: u32, kind: &str) -> SetAssoc {
        let spec = MechanismSpec { kind: kind.into(), params: toml::Table::new() };
        let repl = AnyReplacement::build(&spec, &Geometry { sets, ways, seed: SEED }, "test.replacement").unwrap();
        SetAssoc::new(sets, ways, repl)
    }

    fn contents(t: &SetAssoc) -> Vec<Option<(u64, u64)>> {
        (0..(t.sets() * t.ways()) as usize)
            .map(|s| (t.tag(s) != INVALID).then(|| (t.tag(s), t.data(s))))
            .collect()
    }

    /// Run `ops` on both models; tags map to set `tag % sets` (full tags, unique across sets).
    fn compare(sets: u32, ways: u32, kind: &str, ops: &[Op]) -> Result<(), TestCaseError> {
        let mut f = fast(sets, ways, kind);
        let mut r = if kind == "lru" { RefTable::lru(sets, ways) } else { RefTable::random(sets, ways, SEED) };
        let set_of = |t: u64| (t % sets as u64) as u32;
        for (i, o) in ops.iter().enumerate() {
            match *o {
                Op::Lookup(t) => prop_assert_eq!(f.lookup(set_of(t), t), r.lookup(set_of(t), t), "op {} {:?}", i, o),
                Op::Insert(t, d) => prop_assert_eq!(f.insert(set_of(t), t, d), r.insert(set_of(t), t, d), "op {} {:?}", i, o),
                Op::Access(t, d) => {
                    let want = match r.lookup(set_of(t), t) {
                        Some(slot) => Access::Hit(slot),
                        None => Access::Filled(r.insert(set_of(t), t, d)),
                    };
                    prop_assert_eq!(f.access(set_of(t), t, d), want, "op {} {:?}", i, o)
                }
                Op::Invalidate(t) => prop_assert_eq!(f.invalidate(set_of(t), t), r.invalidate(set_of(t), t), "op {} {:?}", i, o),
                Op::InvalidateWhere(m) => {
                    prop_assert_eq!(f.invalidate_where(|_, d| d % m == 0), r.invalidate_where(|_, d| d % m == 0), "op {} {:?}", i, o)
                }
                Op::Flush => {
                    f.flush();
                    r.flush();
                }
            }
            prop_assert_eq!(f.occupancy(), r.occupancy(), "op {} {:?}", i, o);
            prop_assert_eq!(contents(&f), r.contents(), "op {} {:?}", i, o);
        }
        Ok(())
    }

    /// (sets, ways): direct-mapped, set-associative (every constant-`W` path of
    /// the fast table, 1/2/4/8/16, and the generic scan, 12), fully associative,
    /// and >32 ways (indexed).
    const GEOMETRIES: [(u32, u32); 10] = [(16, 1), (1, 1), (4, 2), (8, 4), (2, 8), (2, 12), (4, 16), (2, 40), (1, 64), (1, 200)];

    fn ops_for(sets: u32, ways: u32) -> impl Strategy<Value = Vec<Op>> {
        // A pool of about 1.5× capacity and enough operations to fill the table
        // several times give a mix of hits, misses and evictions.
        let cap = sets as usize * ways as usize;
        let pool = (cap as u64 * 3 / 2).max(3);
        prop::collection::vec(op(pool), 1..(8 * cap).max(300))
    }

    fn case() -> impl Strategy<Value = ((u32, u32), Vec<Op>)> {
        (0..GEOMETRIES.len()).prop_flat_map(|g| {
            let (sets, ways) = GEOMETRIES[g];
            (Just((sets, ways)), ops_for(sets, ways))
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

        #[test]
        fn lru_matches_reference(((sets, ways), ops) in case()) {
            compare(sets, ways, "lru", &ops)?;
        }

        #[test]
        fn random_matches_reference(((sets, ways), ops) in case()) {
            compare(sets, ways, "random", &ops)?;
        }
    }

    #[test]
    fn reference_lru_evicts_least_recent() {
        let mut r = RefTable::lru(1, 3);
        for t in 0..3 {
            r.insert(0, t, t);
        }
        r.lookup(0, 0);
        assert_eq!(r.insert(0, 9, 9), Some((1, 1)));
        assert_eq!(r.probe(0, 9), Some(1));
    }

    /// Guards the property tests: every geometry sees hits and evictions.
    #[test]
    fn op_streams_exercise_hits_and_evictions() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        for (sets, ways) in GEOMETRIES {
            let (mut hits, mut evictions) = (0, 0);
            for _ in 0..4 {
                let mut t = fast(sets, ways, "random");
                for o in ops_for(sets, ways).new_tree(&mut runner).unwrap().current() {
                    match o {
                        Op::Lookup(tag) => hits += t.lookup((tag % sets as u64) as u32, tag).is_some() as u32,
                        Op::Insert(tag, d) => evictions += t.insert((tag % sets as u64) as u32, tag, d).is_some() as u32,
                        _ => {}
                    }
                }
            }
            assert!(hits > 5 && evictions > 5, "{sets}x{ways}: {hits} hits, {evictions} evictions");
        }
    }
}
