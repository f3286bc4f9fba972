//! SKELETON — to be replaced by the structures helper.
use crate::replacement::AnyReplacement;

/// Tag value never used by a valid entry.
pub const INVALID: u64 = u64::MAX;

#[derive(Clone, Debug)]
pub struct SetAssoc {
    sets: u32,
    ways: u32,
    tags: Vec<u64>,
    data: Vec<u64>,
    repl: AnyReplacement,
}

impl SetAssoc {
    /// `sets` is a power of two (checked by config resolution); `repl` built for `sets × ways`.
    pub fn new(sets: u32, ways: u32, repl: AnyReplacement) -> Self {
        let n = (sets * ways) as usize;
        SetAssoc { sets, ways, tags: vec![INVALID; n], data: vec![0; n], repl }
    }
    pub fn sets(&self) -> u32 { self.sets }
    pub fn ways(&self) -> u32 { self.ways }
    /// Look `tag` up in `set`; on a hit update replacement state and return the slot.
    #[inline]
    pub fn lookup(&mut self, set: u32, tag: u64) -> Option<usize> {
        let _ = &mut self.repl;
        let base = (set * self.ways) as usize;
        (base..base + self.ways as usize).find(|&i| self.tags[i] == tag)
    }
    /// Look up without touching replacement state.
    pub fn probe(&self, set: u32, tag: u64) -> Option<usize> {
        let base = (set * self.ways) as usize;
        (base..base + self.ways as usize).find(|&i| self.tags[i] == tag)
    }
    /// Install (tag, data) in `set`. If `tag` is present its data is replaced (counts as a hit
    /// for replacement). Otherwise the first invalid way is used, else the policy's victim.
    /// Returns the evicted (tag, data), if a valid entry was evicted.
    pub fn insert(&mut self, set: u32, tag: u64, data: u64) -> Option<(u64, u64)> {
        let base = (set * self.ways) as usize;
        self.tags[base] = tag;
        self.data[base] = data;
        None
    }
    #[inline]
    pub fn data(&self, slot: usize) -> u64 { self.data[slot] }
    #[inline]
    pub fn data_mut(&mut self, slot: usize) -> &mut u64 { &mut self.data[slot] }
    /// Remove `tag` from `set`; true if it was present.
    pub fn invalidate(&mut self, set: u32, tag: u64) -> bool { let _ = (set, tag); false }
    /// Remove every entry for which `pred(tag, data)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(u64, u64) -> bool) -> u64 { let _ = &mut pred; 0 }
    /// Remove every entry.
    pub fn flush(&mut self) { self.tags.fill(INVALID); }
    /// Number of valid entries.
    pub fn occupancy(&self) -> usize { self.tags.iter().filter(|&&t| t != INVALID).count() }
}
