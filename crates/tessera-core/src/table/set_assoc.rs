//! A set-associative array of `(tag, data)` entries with a pluggable replacement policy.
//!
//! ## What it models
//! The storage of every TLB level, paging-structure cache and data cache:
//! `sets × ways` slots, each holding a full tag (or [`TagWord::INVALID`]) and
//! a payload that the owner interprets. Both widths are type parameters:
//! `u64` tags and payloads by default (TLB tags pack page number, size and
//! ASID; payloads are frame numbers), `u32` line-number tags and a flag byte
//! for data caches, whose large tables' host memory is what a run waits on.
//! Slot numbers are `set * ways + way` and stay valid until the entry is
//! evicted or invalidated.
//!
//! ## Semantics
//! - `lookup` hit → `repl.on_hit`; a miss changes nothing.
//! - `insert` of a present tag → data replaced, `repl.on_hit` (no eviction).
//! - `insert` of a new tag → the lowest-numbered invalid way, then
//!   `repl.on_fill`; if the set is full, `repl.victim(set)` names the way, its
//!   old `(tag, data)` is returned, then `repl.on_fill`.
//! - `invalidate`, `invalidate_where`, `flush` → `repl.on_invalidate` per removed entry.
//!
//! ## Choices
//! - Callers pass the set index and a *full* tag (unique across sets, e.g. the
//!   whole line or page number), so one global tag index works.
//! - Up to [`INDEX_MIN_WAYS`] ways a lookup scans the set's tags (contiguous
//!   `u64`s, one cache line for 8 ways). With more ways (fully associative
//!   1024-entry TLBs) a linear scan would dominate, so an `FxHashMap<tag, slot>`
//!   sized at build time plus a per-set occupancy bitmap keep lookup, fill and
//!   invalidate O(1). The map never grows past its initial capacity, so the hot
//!   path does not allocate either way.
//! - Policies are held as [`AnyReplacement`] (enum dispatch, no `dyn`).
//! - Checked against the slow model in `table::reference` (test-only) with proptest.
//!
//! ## Config
//! None of its own: owners pass `sets`, `ways` and a built replacement policy.
//!
//! ## Stats
//! None: owners count hits, misses and evictions in their own terms.

use crate::replacement::{AnyReplacement, Replacement};
use rustc_hash::FxHashMap;

/// Tag value never used by a valid entry.
pub const INVALID: u64 = u64::MAX;

/// Associativity above which lookups go through a hash index instead of a scan.
pub const INDEX_MIN_WAYS: u32 = 32;

/// Tag index for highly associative arrays.
#[derive(Clone, Debug)]
struct Index {
    /// Full tag → slot of every valid entry.
    map: FxHashMap<u64, u32>,
    /// Per set, `words` words of occupancy bits (bit `w` set = way `w` valid).
    bits: Vec<u64>,
    /// Per set, number of valid ways.
    counts: Vec<u32>,
    words: usize,
}

impl Index {
    fn new(sets: u32, ways: u32) -> Self {
        let words = (ways as usize).div_ceil(64);
        let n = sets as usize * ways as usize;
        let mut map = FxHashMap::default();
        // Twice the entries: with tombstones from removals hashbrown then always
        // rehashes in place instead of growing, so no allocation after build.
        map.reserve(2 * n);
        Index { map, bits: vec![0; sets as usize * words], counts: vec![0; sets as usize], words }
    }

    /// Lowest invalid way of `set`; only called when `counts[set] < ways`.
    #[inline]
    fn first_free(&self, set: usize) -> usize {
        let row = &self.bits[set * self.words..(set + 1) * self.words];
        for (i, &w) in row.iter().enumerate() {
            if w != u64::MAX {
                return i * 64 + (!w).trailing_zeros() as usize;
            }
        }
        unreachable!("first_free on a full set")
    }

    #[inline]
    fn mark(&mut self, set: usize, way: usize, valid: bool) {
        let w = &mut self.bits[set * self.words + way / 64];
        let bit = 1u64 << (way % 64);
        if valid {
            *w |= bit;
            self.counts[set] += 1;
        } else {
            *w &= !bit;
            self.counts[set] -= 1;
        }
    }

    fn clear(&mut self) {
        self.map.clear();
        self.bits.fill(0);
        self.counts.fill(0);
    }
}

/// Way of `tag` in one set's `tags`. Compares four ways per step without
/// branching inside the group: fewer mispredicted exits than a plain scan, and
/// plain scalar code (SSE2 has no 64-bit compare, so vectorising does not pay).
#[inline(always)]
fn scan<T: TagWord>(tags: &[T], tag: T) -> Option<usize> {
    let mut chunks = tags.chunks_exact(4);
    let mut base = 0usize;
    for c in &mut chunks {
        let m = (c[0] == tag) as u32 | ((c[1] == tag) as u32) << 1 | ((c[2] == tag) as u32) << 2 | ((c[3] == tag) as u32) << 3;
        if m != 0 {
            return Some(base + m.trailing_zeros() as usize);
        }
        base += 4;
    }
    chunks.remainder().iter().position(|&t| t == tag).map(|i| base + i)
}

/// Bit `w` set iff `tags[w] == tag` (fully unrolled for a fixed associativity).
#[inline(always)]
fn eq_mask<T: TagWord, const W: usize>(tags: &[T; W], tag: T) -> u32 {
    T::eq_mask_row(tags, tag)
}

/// [`eq_mask`] in plain scalar code, for any tag word.
#[inline(always)]
fn eq_mask_scalar<T: TagWord, const W: usize>(tags: &[T; W], tag: T) -> u32 {
    let mut m = 0u32;
    for (w, &t) in tags.iter().enumerate() {
        m |= ((t == tag) as u32) << w;
    }
    m
}

/// [`eq_mask`] of a row of 32-bit tags whose width is a multiple of four:
/// one SSE2 compare per four ways (SSE2 is part of x86-64, so no feature
/// detection), the lane masks narrowed into one bit per way.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn eq_mask_u32_sse2<const W: usize>(tags: &[u32; W], tag: u32) -> u32 {
    use core::arch::x86_64::*;
    debug_assert!(W.is_multiple_of(4) && W <= 32);
    // SAFETY: SSE2 is always present on x86-64; every load reads four
    // in-bounds u32s (`k + 4 <= W`) and `loadu` has no alignment requirement.
    unsafe {
        let t = _mm_set1_epi32(tag as i32);
        let lanes = |k: usize| _mm_cmpeq_epi32(_mm_loadu_si128(tags.as_ptr().add(k) as *const __m128i), t);
        let mut m = 0u32;
        let mut k = 0;
        while k + 8 <= W {
            // Two lane masks of -1/0 narrow to eight bytes without changing sign.
            let b = _mm_packs_epi16(_mm_packs_epi32(lanes(k), lanes(k + 4)), _mm_setzero_si128());
            m |= (_mm_movemask_epi8(b) as u32) << k;
            k += 8;
        }
        if k < W {
            m |= (_mm_movemask_ps(_mm_castsi128_ps(lanes(k))) as u32) << k;
        }
        m
    }
}

/// Way of `tag` in a `W`-way row: one branch-free mask below 4 ways and for
/// tag words with a vector compare, else [`scan`]'s groups of four with an
/// exit after the group that hits (a hit in the first group of a 16-way set
/// skips the other 12 compares).
#[inline(always)]
fn find_way<T: TagWord, const W: usize>(tags: &[T; W], tag: T) -> Option<usize> {
    if W < 4 || T::VECTOR_COMPARE {
        let m = eq_mask(tags, tag);
        (m != 0).then(|| m.trailing_zeros() as usize)
    } else {
        scan(tags, tag)
    }
}

/// `on_hit` for a table of `W` ways, with the LRU stamp update inlined.
#[inline(always)]
fn repl_hit<const W: usize>(repl: &mut AnyReplacement, set: u32, way: usize) {
    match repl {
        AnyReplacement::Lru(l) => l.touch_n::<W>(set, way),
        AnyReplacement::Random(_) => {}
    }
}

/// The way a fill of a `W`-way set uses (the lowest of the `free` mask of
/// invalid ways, else the policy's victim), after `on_fill` of it: one
/// policy dispatch for both.
#[inline(always)]
fn repl_fill_way<const W: usize>(repl: &mut AnyReplacement, set: u32, free: u32) -> usize {
    match repl {
        AnyReplacement::Lru(l) => l.fill_way_n::<W>(set, free),
        AnyReplacement::Random(r) => if free != 0 { free.trailing_zeros() as usize } else { r.victim(set) as usize },
    }
}

/// Associativities with a fully unrolled, constant-`W` code path; others
/// (3-way, 12-way, ..., and indexed tables) take the generic path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Shape {
    W1,
    W2,
    W4,
    W8,
    W16,
    Any,
}

/// Run `$fast` with `const $w: usize` bound to the table's associativity, or
/// `$any` for tables without a constant-`W` path. One jump per call.
macro_rules! by_shape {
    ($self:ident, $w:ident => $fast:expr, $any:expr) => {
        match $self.shape {
            Shape::W4 => {
                const $w: usize = 4;
                $fast
            }
            Shape::W8 => {
                const $w: usize = 8;
                $fast
            }
            Shape::W16 => {
                const $w: usize = 16;
                $fast
            }
            Shape::W2 => {
                const $w: usize = 2;
                $fast
            }
            Shape::W1 => {
                const $w: usize = 1;
                $fast
            }
            Shape::Any => $any,
        }
    };
}

/// A slot's payload: `u64` by default (TLB frame numbers, PSC links); data
/// caches hold one byte of line flags, so the LLC model's payload array is an
/// eighth of the host memory (its random reads missed the host's caches).
pub trait Payload: Copy + Default + PartialEq + std::fmt::Debug {}
impl<T: Copy + Default + PartialEq + std::fmt::Debug> Payload for T {}

/// A stored tag: `u64` by default (TLB tags pack page number, size and
/// ASID); data caches store `u32` line numbers, so a 16-way row of tags is
/// one host cache line instead of two.
pub trait TagWord: Copy + Eq + std::fmt::Debug + std::fmt::LowerHex + Into<u64> {
    /// Never a valid tag.
    const INVALID: Self;
    /// [`Self::eq_mask_row`] compares a whole row at once (no early exit pays).
    const VECTOR_COMPARE: bool = false;

    /// Bit `w` set iff `row[w] == tag`.
    #[inline(always)]
    fn eq_mask_row<const W: usize>(row: &[Self; W], tag: Self) -> u32 {
        eq_mask_scalar(row, tag)
    }
}

/// SSE2 has no 64-bit compare, so `u64` rows compare in scalar code.
impl TagWord for u64 {
    const INVALID: u64 = u64::MAX;
}

impl TagWord for u32 {
    const INVALID: u32 = u32::MAX;
    const VECTOR_COMPARE: bool = cfg!(target_arch = "x86_64");

    #[inline(always)]
    fn eq_mask_row<const W: usize>(row: &[u32; W], tag: u32) -> u32 {
        #[cfg(target_arch = "x86_64")]
        if W.is_multiple_of(4) && W <= 32 {
            return eq_mask_u32_sse2(row, tag);
        }
        eq_mask_scalar(row, tag)
    }
}

/// Row `set` of an array of `W`-wide rows, without a bounds check.
///
/// # Safety
/// `arr` holds at least `(set + 1) × W` elements. Every array of a
/// [`SetAssoc`] holds `sets × ways` from `new` on and is never resized, so a
/// caller that checked `set < sets` once may read any of them.
#[inline(always)]
unsafe fn row_unchecked<X, const W: usize>(arr: &[X], set: u32) -> &[X; W] {
    debug_assert!((set as usize + 1) * W <= arr.len());
    &*(arr.as_ptr().add(set as usize * W) as *const [X; W])
}

/// [`row_unchecked`] for writing.
///
/// # Safety
/// As for [`row_unchecked`].
#[inline(always)]
unsafe fn row_unchecked_mut<X, const W: usize>(arr: &mut [X], set: u32) -> &mut [X; W] {
    debug_assert!((set as usize + 1) * W <= arr.len());
    &mut *(arr.as_mut_ptr().add(set as usize * W) as *mut [X; W])
}

/// What [`SetAssoc::access`] did.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access<T, D> {
    /// The tag was present in this slot (replacement state touched).
    Hit(usize),
    /// The tag was absent and is now installed; a valid entry it replaced.
    Filled(Option<(T, D)>),
}

#[derive(Clone, Debug)]
pub struct SetAssoc<D: Payload = u64, T: TagWord = u64> {
    sets: u32,
    ways: u32,
    shape: Shape,
    tags: Vec<T>,
    data: Vec<D>,
    /// Constant-`W` shapes only (else empty): per set, bit `w` set iff way `w`
    /// holds a valid entry, so a fill finds a free way without a scan.
    valid: Vec<u32>,
    repl: AnyReplacement,
    index: Option<Index>,
    /// Number of valid entries: lets owners skip probing an empty table (a
    /// TLB for a page size nothing is mapped with) at the cost of a compare.
    live: usize,
}

impl<D: Payload, T: TagWord> SetAssoc<D, T> {
    /// Whether hits on the entry hit or filled last in a set may go
    /// uncounted by the replacement policy ([`Replacement::repeat_hits_free`]).
    pub fn repeat_hits_free(&self) -> bool {
        self.repl.repeat_hits_free()
    }

    /// `sets` is a power of two (checked by config resolution); `repl` built for `sets × ways`.
    pub fn new(sets: u32, ways: u32, repl: AnyReplacement) -> Self {
        let n = sets as usize * ways as usize;
        let index = (ways > INDEX_MIN_WAYS).then(|| Index::new(sets, ways));
        let shape = match ways {
            1 => Shape::W1,
            2 => Shape::W2,
            4 => Shape::W4,
            8 => Shape::W8,
            16 => Shape::W16,
            _ => Shape::Any,
        };
        let valid = if shape == Shape::Any { Vec::new() } else { vec![0; sets as usize] };
        SetAssoc { sets, ways, shape, tags: vec![T::INVALID; n], data: vec![D::default(); n], valid, repl, index, live: 0 }
    }

    #[inline]
    pub fn sets(&self) -> u32 {
        self.sets
    }

    #[inline]
    pub fn ways(&self) -> u32 {
        self.ways
    }

    /// Slot of `tag` in `set`, without side effects.
    #[inline(always)]
    fn find(&self, set: u32, tag: T) -> Option<usize> {
        by_shape!(self, W => self.find_n::<W>(set, tag), self.find_any(set, tag))
    }

    /// The set's tags as a fixed-size row (`W == self.ways`); one bounds check.
    #[inline(always)]
    fn row<const W: usize>(&self, set: u32) -> (usize, &[T; W]) {
        debug_assert_eq!(W, self.ways as usize);
        assert!(set < self.sets, "set {set} out of range");
        // SAFETY: `set < sets` (checked) and `tags` holds `sets × W` entries.
        (set as usize * W, unsafe { row_unchecked(&self.tags, set) })
    }

    #[inline(always)]
    fn find_n<const W: usize>(&self, set: u32, tag: T) -> Option<usize> {
        debug_assert!(tag != T::INVALID, "INVALID used as a tag");
        let (base, row) = self.row::<W>(set);
        find_way(row, tag).map(|w| base + w)
    }

    #[inline(always)]
    fn lookup_n<const W: usize>(&mut self, set: u32, tag: T) -> Option<usize> {
        let slot = self.find_n::<W>(set, tag)?;
        repl_hit::<W>(&mut self.repl, set, slot - set as usize * W);
        Some(slot)
    }

    /// Insert into a `W`-way set. `ABSENT`: the caller guarantees `tag` is not
    /// in the set (it just missed there), so the presence scan is skipped.
    #[inline(always)]
    fn insert_n<const W: usize, const ABSENT: bool>(&mut self, set: u32, tag: T, data: D) -> Option<(T, D)> {
        debug_assert!(tag != T::INVALID, "INVALID used as a tag");
        debug_assert_eq!(W, self.ways as usize);
        assert!(set < self.sets, "set {set} out of range");
        let SetAssoc { tags, data: datas, valid, repl, live, .. } = self;
        // SAFETY: `set < sets` (checked); `tags` and `datas` hold `sets × W`
        // entries and `valid` one per set (constant-`W` shapes).
        let (tags, datas, valid): (&mut [T; W], &mut [D; W], &mut u32) =
            unsafe { (row_unchecked_mut(tags, set), row_unchecked_mut(datas, set), valid.get_unchecked_mut(set as usize)) };
        debug_assert_eq!(*valid, !eq_mask(tags, T::INVALID) & (u32::MAX >> (32 - W)), "valid mask out of sync");
        if ABSENT {
            debug_assert!(eq_mask(tags, tag) == 0, "insert_after_miss of a present tag {tag:#x}");
        } else {
            if let Some(w) = find_way(tags, tag) {
                datas[w] = data;
                repl_hit::<W>(repl, set, w);
                return None;
            }
        }
        let free = !*valid & (u32::MAX >> (32 - W));
        let way = repl_fill_way::<W>(repl, set, free);
        debug_assert!(way < W, "policy returned way {way} of {W}");
        let evicted = if free != 0 {
            *valid |= 1 << way;
            *live += 1;
            None
        } else {
            Some((tags[way], datas[way]))
        };
        tags[way] = tag;
        datas[way] = data;
        evicted
    }

    /// [`Self::find`] for any associativity (scan or hash index).
    #[inline]
    fn find_any(&self, set: u32, tag: T) -> Option<usize> {
        debug_assert!(set < self.sets, "set {set} out of range");
        debug_assert!(tag != T::INVALID, "INVALID used as a tag");
        let ways = self.ways as usize;
        let base = set as usize * ways;
        match &self.index {
            None => scan(&self.tags[base..base + ways], tag).map(|w| base + w),
            Some(ix) => {
                let slot = *ix.map.get(&tag.into())? as usize;
                // Tags are unique across sets; a slot outside `set` means the caller
                // looked in the wrong set, which is a miss there.
                (slot.wrapping_sub(base) < ways).then_some(slot)
            }
        }
    }

    /// Look `tag` up in `set`; on a hit update replacement state and return the slot.
    #[inline(always)]
    pub fn lookup(&mut self, set: u32, tag: T) -> Option<usize> {
        by_shape!(self, W => self.lookup_n::<W>(set, tag), self.lookup_any(set, tag))
    }

    #[inline]
    fn lookup_any(&mut self, set: u32, tag: T) -> Option<usize> {
        let slot = self.find_any(set, tag)?;
        self.repl.on_hit(set, (slot - set as usize * self.ways as usize) as u32);
        Some(slot)
    }

    /// Look `tag` up in `set` and, on a miss, install it with `data` at
    /// once: the same as [`Self::lookup`] followed on a miss by
    /// [`Self::insert_after_miss`], with one associativity dispatch and one
    /// row computation. A cache level that missed fills the line whatever the
    /// levels below it hold, so its owner need not wait for them.
    #[inline(always)]
    pub fn access(&mut self, set: u32, tag: T, data: D) -> Access<T, D> {
        by_shape!(self, W => self.access_n::<W>(set, tag, data), self.access_any(set, tag, data))
    }

    #[inline(always)]
    fn access_n<const W: usize>(&mut self, set: u32, tag: T, data: D) -> Access<T, D> {
        match self.lookup_n::<W>(set, tag) {
            Some(slot) => Access::Hit(slot),
            None => Access::Filled(self.insert_n::<W, true>(set, tag, data)),
        }
    }

    #[inline]
    fn access_any(&mut self, set: u32, tag: T, data: D) -> Access<T, D> {
        match self.lookup_any(set, tag) {
            Some(slot) => Access::Hit(slot),
            None => Access::Filled(self.insert_any::<true>(set, tag, data)),
        }
    }

    /// Look up without touching replacement state.
    #[inline]
    pub fn probe(&self, set: u32, tag: T) -> Option<usize> {
        self.find(set, tag)
    }

    /// Install (tag, data) in `set`. If `tag` is present its data is replaced (counts as a hit
    /// for replacement). Otherwise the first invalid way is used, else the policy's victim.
    /// Returns the evicted (tag, data), if a valid entry was evicted.
    #[inline]
    pub fn insert(&mut self, set: u32, tag: T, data: D) -> Option<(T, D)> {
        by_shape!(self, W => self.insert_n::<W, false>(set, tag, data), self.insert_any::<false>(set, tag, data))
    }

    /// [`Self::insert`] for a `tag` the caller knows is not in `set` (it has
    /// just missed there and nothing filled `set` since): skips the presence
    /// scan. Same result as `insert` under that condition (debug-asserted).
    #[inline(always)]
    pub fn insert_after_miss(&mut self, set: u32, tag: T, data: D) -> Option<(T, D)> {
        by_shape!(self, W => self.insert_n::<W, true>(set, tag, data), self.insert_any::<true>(set, tag, data))
    }

    /// [`Self::insert`] for any associativity (scan or hash index).
    #[inline]
    fn insert_any<const ABSENT: bool>(&mut self, set: u32, tag: T, data: D) -> Option<(T, D)> {
        debug_assert!(set < self.sets, "set {set} out of range");
        debug_assert!(tag != T::INVALID, "INVALID used as a tag");
        let ways = self.ways as usize;
        let base = set as usize * ways;
        let free = match &self.index {
            None => {
                let tags = &self.tags[base..base + ways];
                if ABSENT {
                    debug_assert!(scan(tags, tag).is_none(), "insert_after_miss of a present tag {tag:#x}");
                } else if let Some(w) = scan(tags, tag) {
                    self.data[base + w] = data;
                    self.repl.on_hit(set, w as u32);
                    return None;
                }
                scan(tags, T::INVALID)
            }
            Some(ix) => {
                if let Some(&slot) = ix.map.get(&tag.into()) {
                    let w = (slot as usize).wrapping_sub(base);
                    debug_assert!(w < ways, "tag {tag:#x} inserted in set {set} but held in another set");
                    if w < ways {
                        self.data[slot as usize] = data;
                        self.repl.on_hit(set, w as u32);
                        return None;
                    }
                }
                (ix.counts[set as usize] < self.ways).then(|| ix.first_free(set as usize))
            }
        };
        let (way, evicted) = match free {
            Some(w) => {
                if let Some(ix) = &mut self.index {
                    ix.mark(set as usize, w, true);
                }
                self.live += 1;
                (w, None)
            }
            None => {
                let w = self.repl.victim(set) as usize;
                debug_assert!(w < ways, "policy returned way {w} of {ways}");
                let slot = base + w;
                let old = (self.tags[slot], self.data[slot]);
                if let Some(ix) = &mut self.index {
                    ix.map.remove(&old.0.into());
                }
                (w, Some(old))
            }
        };
        let slot = base + way;
        self.tags[slot] = tag;
        self.data[slot] = data;
        if let Some(ix) = &mut self.index {
            ix.map.insert(tag.into(), slot as u32);
        }
        self.repl.on_fill(set, way as u32);
        evicted
    }

    /// Host-prefetch everything an access to `set` may touch (tags, data and
    /// replacement state), so that the host cache misses of a large table's
    /// rows overlap instead of following one another. Changes no state.
    #[inline]
    pub fn prefetch_set(&self, set: u32) {
        // The row's first line of each array: the host's adjacent-line
        // prefetcher brings the second line of a 16-way row along.
        let base = set as usize * self.ways as usize;
        if let (Some(t), Some(d)) = (self.tags.get(base), self.data.get(base)) {
            super::host_prefetch(t);
            super::host_prefetch(d);
        }
        if let AnyReplacement::Lru(l) = &self.repl {
            l.prefetch_set(set);
        }
    }

    #[inline]
    pub fn data(&self, slot: usize) -> D {
        self.data[slot]
    }

    #[inline]
    pub fn data_mut(&mut self, slot: usize) -> &mut D {
        &mut self.data[slot]
    }

    /// Tag held in `slot` ([`TagWord::INVALID`] if empty).
    #[inline]
    pub fn tag(&self, slot: usize) -> T {
        self.tags[slot]
    }

    /// Remove the entry in `slot` (which must be valid) and return its (tag, data).
    pub fn invalidate_slot(&mut self, slot: usize) -> (T, D) {
        let ways = self.ways as usize;
        let (set, way) = (slot / ways, slot % ways);
        let old = (self.tags[slot], self.data[slot]);
        debug_assert!(old.0 != T::INVALID, "invalidating an empty slot");
        self.tags[slot] = T::INVALID;
        self.data[slot] = D::default();
        self.live -= 1;
        if let Some(v) = self.valid.get_mut(set) {
            *v &= !(1 << way);
        }
        if let Some(ix) = &mut self.index {
            ix.map.remove(&old.0.into());
            ix.mark(set, way, false);
        }
        self.repl.on_invalidate(set as u32, way as u32);
        old
    }

    /// Remove `tag` from `set`; true if it was present.
    pub fn invalidate(&mut self, set: u32, tag: T) -> bool {
        match self.find(set, tag) {
            Some(slot) => {
                self.invalidate_slot(slot);
                true
            }
            None => false,
        }
    }

    /// Remove every entry for which `pred(tag, data)` holds; returns how many.
    pub fn invalidate_where(&mut self, mut pred: impl FnMut(T, D) -> bool) -> u64 {
        let mut n = 0;
        for slot in 0..self.tags.len() {
            let t = self.tags[slot];
            if t != T::INVALID && pred(t, self.data[slot]) {
                self.invalidate_slot(slot);
                n += 1;
            }
        }
        n
    }

    /// Remove every entry.
    pub fn flush(&mut self) {
        let ways = self.ways as usize;
        for slot in 0..self.tags.len() {
            if self.tags[slot] != T::INVALID {
                self.repl.on_invalidate((slot / ways) as u32, (slot % ways) as u32);
            }
        }
        self.tags.fill(T::INVALID);
        self.data.fill(D::default());
        self.valid.fill(0);
        self.live = 0;
        if let Some(ix) = &mut self.index {
            ix.clear();
        }
    }

    /// Number of valid entries.
    pub fn occupancy(&self) -> usize {
        debug_assert_eq!(self.live, self.tags.iter().filter(|&&t| t != T::INVALID).count(), "live count out of step");
        self.live
    }

    /// No valid entry: every lookup misses.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::MechanismSpec;
    use crate::replacement::Geometry;

    fn table(sets: u32, ways: u32, kind: &str) -> SetAssoc {
        let spec = MechanismSpec { kind: kind.into(), params: toml::Table::new() };
        let repl = AnyReplacement::build(&spec, &Geometry { sets, ways, seed: 5 }, "test.replacement").unwrap();
        SetAssoc::new(sets, ways, repl)
    }

    /// The vector compare of 32-bit tag rows against the scalar one, on rows
    /// with repeated, absent and INVALID tags, for every width it handles.
    #[test]
    fn vector_tag_compare_matches_scalar() {
        use rand::{Rng, SeedableRng};
        fn check<const W: usize>(rng: &mut rand::rngs::StdRng) {
            for _ in 0..2000 {
                let mut row = [0u32; W];
                for t in row.iter_mut() {
                    *t = [u32::MAX, 0, 1, 7, 0x8000_0000, rng.gen()][rng.gen_range(0..6)];
                }
                let tag = [0u32, 1, 7, 0x8000_0000, row[rng.gen_range(0..W)], rng.gen()][rng.gen_range(0..6)];
                assert_eq!(u32::eq_mask_row(&row, tag), eq_mask_scalar(&row, tag), "{row:x?} {tag:#x}");
                assert_eq!(find_way(&row, tag), row.iter().position(|&t| t == tag));
            }
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        check::<1>(&mut rng);
        check::<4>(&mut rng);
        check::<8>(&mut rng);
        check::<12>(&mut rng);
        check::<16>(&mut rng);
        check::<20>(&mut rng);
        check::<32>(&mut rng);
    }

    #[test]
    fn miss_then_hit_after_insert() {
        for ways in [1, 4, 64] {
            let mut t = table(4, ways, "lru");
            assert_eq!(t.lookup(1, 5), None);
            assert_eq!(t.insert(1, 5, 99), None);
            let s = t.lookup(1, 5).unwrap();
            assert_eq!(s / ways as usize, 1);
            assert_eq!(t.data(s), 99);
            assert_eq!(t.tag(s), 5);
            assert_eq!(t.occupancy(), 1);
        }
    }

    #[test]
    fn fills_lowest_invalid_way_first() {
        for ways in [4, 40] {
            let mut t = table(1, ways, "random");
            for tag in 0..3 {
                t.insert(0, tag, 0);
            }
            assert!(t.invalidate(0, 1));
            t.insert(0, 10, 0);
            assert_eq!(t.probe(0, 10), Some(1));
            t.insert(0, 11, 0);
            assert_eq!(t.probe(0, 11), Some(3));
        }
    }

    #[test]
    fn reinsert_updates_data_without_eviction() {
        for ways in [2, 33] {
            let mut t = table(1, ways, "lru");
            for tag in 0..ways as u64 {
                t.insert(0, tag, tag);
            }
            assert_eq!(t.insert(0, 0, 123), None);
            assert_eq!(t.data(t.probe(0, 0).unwrap()), 123);
            // Tag 0 became most recent, so tag 1 goes next.
            assert_eq!(t.insert(0, 1000, 0), Some((1, 1)));
        }
    }

    #[test]
    fn lru_evicts_least_recently_used() {
        for ways in [4, 64, 1024] {
            let mut t = table(1, ways, "lru");
            for tag in 0..ways as u64 {
                t.insert(0, tag, tag + 100);
            }
            t.lookup(0, 0);
            assert_eq!(t.insert(0, 5000, 0), Some((1, 101)));
            assert_eq!(t.probe(0, 1), None);
            assert_eq!(t.occupancy(), ways as usize);
        }
    }

    #[test]
    fn direct_mapped_conflicts_evict() {
        let mut t = table(8, 1, "lru");
        t.insert(3, 3, 1);
        assert_eq!(t.insert(3, 11, 2), Some((3, 1)));
        assert_eq!(t.lookup(3, 3), None);
    }

    #[test]
    fn probe_does_not_touch_replacement() {
        let mut t = table(1, 2, "lru");
        t.insert(0, 1, 0);
        t.insert(0, 2, 0);
        t.probe(0, 1);
        assert_eq!(t.insert(0, 3, 0), Some((1, 0)));
    }

    #[test]
    fn live_count_follows_fills_evictions_and_invalidations() {
        for ways in [1, 2, 4, 8, 16, 3, 64] {
            let mut t = table(2, ways, "lru");
            assert!(t.is_empty());
            // Three times the capacity: every fill past it evicts, the count stays full.
            for tag in 0..(6 * ways as u64) {
                t.insert_after_miss((tag & 1) as u32, tag + 1_000_000 * (tag & 1), 0);
                assert_eq!(t.occupancy(), (tag as usize + 1).min(2 * ways as usize), "ways {ways}");
            }
            let slot = (0..t.tags.len()).find(|&s| t.tag(s) != INVALID).unwrap();
            t.invalidate_slot(slot);
            assert_eq!(t.occupancy(), 2 * ways as usize - 1);
            let n = t.invalidate_where(|_, _| true);
            assert_eq!(n as usize, 2 * ways as usize - 1);
            assert!(t.is_empty());
        }
    }

    #[test]
    fn invalidate_where_and_flush_empty_the_table() {
        for ways in [4, 64] {
            let mut t = table(2, ways, "lru");
            for tag in 0..(2 * ways as u64) {
                t.insert((tag & 1) as u32, tag, tag % 3);
            }
            let removed = t.invalidate_where(|_, d| d == 0);
            assert_eq!(removed as usize, (0..2 * ways as u64).filter(|x| x % 3 == 0).count());
            assert_eq!(t.occupancy(), 2 * ways as usize - removed as usize);
            assert!(!t.invalidate(0, 0));
            assert!(!t.is_empty());
            t.flush();
            assert_eq!(t.occupancy(), 0);
            assert!(t.is_empty());
            assert_eq!(t.lookup(0, 2), None);
            // Refill after flush starts at way 0 again.
            t.insert(1, 7, 0);
            assert_eq!(t.probe(1, 7), Some(ways as usize));
        }
    }

    /// `insert_after_miss` after a missed lookup behaves exactly as `insert`,
    /// for every shape (constant-`W` paths, generic scan, hash index) and policy.
    #[test]
    fn insert_after_miss_matches_insert() {
        use crate::rng::SimRng;
        use rand::{Rng, SeedableRng};
        for ways in [1, 2, 3, 4, 8, 12, 16, 32, 40] {
            for kind in ["lru", "random"] {
                let sets = 4u32;
                let (mut a, mut b) = (table(sets, ways, kind), table(sets, ways, kind));
                let mut rng = SimRng::seed_from_u64(ways as u64);
                let pool = 3 * (sets * ways) as u64;
                for i in 0..4000u64 {
                    let t = rng.gen_range(0..pool);
                    let set = (t % sets as u64) as u32;
                    match rng.gen_range(0..10) {
                        0 => assert_eq!(a.invalidate(set, t), b.invalidate(set, t)),
                        _ => {
                            let (ha, hb) = (a.lookup(set, t), b.lookup(set, t));
                            assert_eq!(ha, hb);
                            if ha.is_none() {
                                assert_eq!(a.insert(set, t, i), b.insert_after_miss(set, t, i), "{ways}-way {kind}");
                            }
                        }
                    }
                    if i % 1000 == 999 {
                        a.flush();
                        b.flush();
                    }
                }
                for slot in 0..(sets * ways) as usize {
                    assert_eq!((a.tag(slot), a.data(slot)), (b.tag(slot), b.data(slot)));
                }
            }
        }
    }

    #[test]
    fn lru_victim_is_least_recent_for_every_shape() {
        for ways in [1u32, 2, 4, 8, 16] {
            let mut t = table(2, ways, "lru");
            for tag in 0..ways as u64 {
                t.insert(1, 2 * tag + 1, tag);
            }
            // Touch all but way k, in order; way k becomes least recent.
            for k in 0..ways as u64 {
                for tag in 0..ways as u64 {
                    if tag != k {
                        t.lookup(1, 2 * tag + 1);
                    }
                }
                let new = 1000 + 2 * k + 1;
                assert_eq!(t.insert(1, new, 0), Some((2 * k + 1, k)), "{ways}-way, k {k}");
                // Put the original back into the way `new` took.
                t.invalidate(1, new);
                t.insert(1, 2 * k + 1, k);
            }
        }
    }

    #[test]
    fn indexed_lookup_in_wrong_set_misses() {
        let mut t = table(2, 64, "lru");
        t.insert(0, 42, 0);
        assert_eq!(t.lookup(1, 42), None);
        assert!(!t.invalidate(1, 42));
        assert!(t.lookup(0, 42).is_some());
    }
}
