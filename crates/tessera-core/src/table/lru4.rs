//! A 4-way set-associative array with exact LRU, one row per set: the table
//! of a TLB structure whose replacement is `lru` and whose sets have 4 ways
//! (every TLB of the `tlb_only` and `sandy_bridge` machines).
//!
//! ## Why a second table
//! [`super::SetAssoc`] serves every associativity, payload and replacement
//! policy: each operation dispatches on the set's shape and on the policy and
//! its representation, and tags, payloads and LRU stamps live in three
//! arrays. A TLB probe or fill is the hot path of every TLB-missing access,
//! and on it those dispatches cost more than the work. Here a set is one
//! row (tags, payloads and stamps side by side, 96 bytes) and nothing is
//! dispatched.
//!
//! ## Semantics (exactly [`super::SetAssoc`] with [`crate::replacement::lru::Lru`])
//! - A hit makes the way most recent: the table's clock advances and the
//!   way's stamp takes it (the LRU's stamp representation, which it uses
//!   for up to 4 ways).
//! - A fill takes the lowest-numbered invalid way, else the way with the
//!   least stamp, evicting its entry, and makes it most recent.
//! - An insert of a present tag replaces its payload and counts as a hit.
//! - Invalidation frees the way (its stamp is cleared, as the LRU does).
//!
//! A property test drives this table and the general one with the `lru`
//! policy through the same random operations and requires the same
//! answers, evictions and contents.

use super::set_assoc::INVALID;

const W: usize = 4;

/// One set: its tags (`INVALID` for a free way), payloads and LRU stamps.
#[derive(Clone, Debug)]
#[repr(C, align(32))]
struct Row {
    tag: [u64; W],
    data: [u64; W],
    stamp: [u64; W],
}

const EMPTY_ROW: Row = Row { tag: [INVALID; W], data: [0; W], stamp: [0; W] };

/// A 4-way table of `u64` tags and payloads with exact LRU.
#[derive(Clone, Debug)]
pub struct Lru4 {
    rows: Vec<Row>,
    clock: u64,
    live: usize,
}

impl Lru4 {
    /// `sets` sets of 4 ways, all free.
    pub fn new(sets: u32) -> Lru4 {
        Lru4 { rows: vec![EMPTY_ROW; sets as usize], clock: 0, live: 0 }
    }

    /// Whether no way holds an entry.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Valid entries.
    pub fn occupancy(&self) -> usize {
        self.live
    }

    #[inline(always)]
    fn way_of(row: &Row, tag: u64) -> Option<usize> {
        let t = &row.tag;
        let m = (t[0] == tag) as u32 | ((t[1] == tag) as u32) << 1 | ((t[2] == tag) as u32) << 2 | ((t[3] == tag) as u32) << 3;
        (m != 0).then(|| m.trailing_zeros() as usize)
    }

    /// Set the dirty bit (bit 0 of the payload) of `tag` in `set`, if
    /// present, changing no recency.
    #[inline(always)]
    pub fn set_dirty(&mut self, set: u32, tag: u64) {
        let row = &mut self.rows[set as usize];
        if let Some(w) = Self::way_of(row, tag) {
            row.data[w] |= 1;
        }
    }

    /// The payload of `tag` in `set`, making its way most recent.
    #[inline(always)]
    pub fn lookup(&mut self, set: u32, tag: u64) -> Option<u64> {
        let row = &mut self.rows[set as usize];
        let w = Self::way_of(row, tag)?;
        self.clock += 1;
        row.stamp[w] = self.clock;
        Some(row.data[w])
    }

    /// The way of `tag` in `set`, without touching replacement state.
    #[inline]
    pub fn probe(&self, set: u32, tag: u64) -> Option<usize> {
        Self::way_of(&self.rows[set as usize], tag)
    }

    /// The payload of way `way` of `set`, to change in place.
    #[inline]
    pub fn data_mut(&mut self, set: u32, way: usize) -> &mut u64 {
        &mut self.rows[set as usize].data[way]
    }

    /// Install `tag` (absent from `set`: it just missed there) with `data`;
    /// returns the valid entry evicted, if one was.
    #[inline(always)]
    pub fn insert_after_miss(&mut self, set: u32, tag: u64, data: u64) -> Option<(u64, u64)> {
        debug_assert!(tag != INVALID, "INVALID used as a tag");
        let row = &mut self.rows[set as usize];
        debug_assert!(Self::way_of(row, tag).is_none(), "insert_after_miss of a present tag {tag:#x}");
        // A free way's stamp is 0 and a valid way's at least 1 (the clock
        // advances before it stamps), so the least stamp, lowest way first
        // among equals, is the lowest free way if there is one, else the
        // least recent: one tournament instead of a search for a free way.
        let s = &row.stamp;
        let (a, sa) = if s[1] < s[0] { (1, s[1]) } else { (0, s[0]) };
        let (b, sb) = if s[3] < s[2] { (3, s[3]) } else { (2, s[2]) };
        let (w, sw) = if sb < sa { (b, sb) } else { (a, sa) };
        let evicted = if sw == 0 {
            self.live += 1;
            None
        } else {
            Some((row.tag[w], row.data[w]))
        };
        row.tag[w] = tag;
        row.data[w] = data;
        self.clock += 1;
        row.stamp[w] = self.clock;
        evicted
    }

    /// Install `tag` with `data`: a present tag's payload is replaced (a hit
    /// for replacement), else as [`Self::insert_after_miss`].
    #[inline]
    pub fn insert(&mut self, set: u32, tag: u64, data: u64) -> Option<(u64, u64)> {
        let row = &mut self.rows[set as usize];
        if let Some(w) = Self::way_of(row, tag) {
            row.data[w] = data;
            self.clock += 1;
            row.stamp[w] = self.clock;
            return None;
        }
        self.insert_after_miss(set, tag, data)
    }

    /// Remove `tag` from `set`; whether it was there.
    pub fn invalidate(&mut self, set: u32, tag: u64) -> bool {
        let row = &mut self.rows[set as usize];
        let Some(w) = Self::way_of(row, tag) else { return false };
        row.tag[w] = INVALID;
        row.stamp[w] = 0;
        self.live -= 1;
        true
    }

    /// Remove every entry for which `pred(tag, data)` holds; how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(u64, u64) -> bool) -> u64 {
        let mut n = 0;
        for row in &mut self.rows {
            for w in 0..W {
                if row.tag[w] != INVALID && pred(row.tag[w], row.data[w]) {
                    row.tag[w] = INVALID;
                    row.stamp[w] = 0;
                    n += 1;
                }
            }
        }
        self.live -= n as usize;
        n
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{AnyReplacement, MechanismSpec};
    use crate::replacement::Geometry;
    use crate::table::SetAssoc;
    use proptest::prelude::*;

    fn general(sets: u32) -> SetAssoc {
        let spec = MechanismSpec { kind: "lru".into(), params: toml::Table::new() };
        let repl = AnyReplacement::build(&spec, &Geometry { sets, ways: 4, seed: 1 }, "t").unwrap();
        SetAssoc::new(sets, 4, repl)
    }

    #[derive(Clone, Debug)]
    enum Op {
        Lookup(u64),
        InsertAfterMiss(u64, u64),
        Insert(u64, u64),
        Invalidate(u64),
        Dirty(u64),
        DropOdd,
    }

    fn op() -> impl Strategy<Value = Op> {
        // Few distinct tags over few sets: full sets, evictions and hits.
        let tag = 0u64..40;
        prop_oneof![
            4 => tag.clone().prop_map(Op::Lookup),
            3 => (tag.clone(), any::<u32>()).prop_map(|(t, d)| Op::InsertAfterMiss(t, d as u64)),
            2 => (tag.clone(), any::<u32>()).prop_map(|(t, d)| Op::Insert(t, d as u64)),
            1 => tag.clone().prop_map(Op::Invalidate),
            1 => tag.prop_map(Op::Dirty),
            1 => Just(Op::DropOdd),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, .. ProptestConfig::default() })]

        /// Same answers, evictions and contents as the general table with LRU.
        #[test]
        fn lru4_matches_the_general_table(ops in prop::collection::vec(op(), 1..400), sets_log in 0u32..3) {
            let sets = 1u32 << sets_log;
            let (mut fast, mut slow) = (Lru4::new(sets), general(sets));
            for op in ops {
                match op {
                    Op::Lookup(t) => {
                        let set = (t % sets as u64) as u32;
                        let s = slow.lookup(set, t).map(|slot| slow.data(slot));
                        prop_assert_eq!(fast.lookup(set, t), s);
                    }
                    Op::InsertAfterMiss(t, d) => {
                        let set = (t % sets as u64) as u32;
                        // Only for a tag that just missed, as the contract says.
                        if slow.probe(set, t).is_none() {
                            prop_assert_eq!(fast.insert_after_miss(set, t, d), slow.insert_after_miss(set, t, d));
                        }
                    }
                    Op::Insert(t, d) => {
                        let set = (t % sets as u64) as u32;
                        prop_assert_eq!(fast.insert(set, t, d), slow.insert(set, t, d));
                    }
                    Op::Invalidate(t) => {
                        let set = (t % sets as u64) as u32;
                        prop_assert_eq!(fast.invalidate(set, t), slow.invalidate(set, t));
                    }
                    Op::Dirty(t) => {
                        let set = (t % sets as u64) as u32;
                        let (a, b) = (fast.probe(set, t), slow.probe(set, t));
                        prop_assert_eq!(a.is_some(), b.is_some());
                        if let (Some(w), Some(slot)) = (a, b) {
                            *fast.data_mut(set, w) |= 1;
                            *slow.data_mut(slot) |= 1;
                        }
                    }
                    Op::DropOdd => {
                        prop_assert_eq!(fast.invalidate_where(|t, _| t % 2 == 1), slow.invalidate_where(|t, _| t % 2 == 1));
                    }
                }
                prop_assert_eq!(fast.occupancy(), slow.occupancy());
                prop_assert_eq!(fast.is_empty(), slow.is_empty());
            }
            // Same contents: every tag present in one is present, with the same payload, in the other.
            for t in 0..40u64 {
                let set = (t % sets as u64) as u32;
                let a = fast.probe(set, t).map(|w| fast.rows[set as usize].data[w]);
                let b = slow.probe(set, t).map(|slot| slow.data(slot));
                prop_assert_eq!(a, b);
            }
        }
    }
}
