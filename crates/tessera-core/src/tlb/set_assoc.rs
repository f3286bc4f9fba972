//! The conventional TLB: one entry per page.
//!
//! ## What it models
//! A set-associative (or, with `ways = "full"`, fully associative) table
//! whose every entry maps one page of one of the sizes the structure holds.
//!
//! ## Paper
//! None of its own: the TLB of every machine the papers describe as a
//! baseline: Sandy Bridge's L1 and L2 TLBs ("Performance Analysis of the
//! Memory Management Unit under Scale-out Workloads", IISWC 2014), the PTLsim
//! TLBs of "Supporting Superpages in Non-Contiguous Physical Memory" (HPCA
//! 2015), the unified gem5 TLBs of "Mosaic Pages: Big TLB Reach with Small
//! Pages" (ASPLOS '23, DOI 10.1145/3582016.3582021).
//!
//! ## Choices where the papers are silent
//! - A structure holding several page sizes probes once per size, in the
//!   order of `page_sizes`, indexing its sets with that size's virtual page
//!   number (`vpn & (sets - 1)`); the tag packs (vpn, size, ASID), so sizes
//!   and address spaces never alias.
//! - The payload is the page's first frame and a dirty bit.
//! - An empty structure (a 2 MiB TLB while only 4 KiB pages are mapped)
//!   misses without probing; a miss changes no replacement state.
//! - A fill of a translation already present replaces its payload and counts
//!   as a hit for replacement.
//! - `vanilla_index_quirk = q` reproduces the set index of the vanilla TLB in
//!   the gem5 fork of "Mosaic Pages: Big TLB Reach with Small Pages" (ASPLOS
//!   2023, DOI 10.1145/3582016.3582021), whose `getSetNumber` uses the mosaic
//!   shift whenever mosaic simulation is on: sets are indexed by
//!   `vpn >> log2(q)`, so `q` consecutive pages share a set (for 4 KiB pages,
//!   `set = (va >> (12 + log2 q)) mod sets`; larger pages group their own
//!   page numbers the same way). Off by default (sets indexed by VPN).
//!
//! ## Config
//! `organisation = "set_assoc"` (the default), or `{ kind = "set_assoc",
//! vanilla_index_quirk = <power of two, 1..=64> }` (default: absent).
//! Geometry and replacement come from the structure (`entries`, `ways`,
//! `replacement`).
//!
//! ## Stats
//! Only the five every structure has: `mmu.<name>.{lookups,hits,misses,fills,evictions}`.

use super::organisation::{Entry, Fill, Probe, TlbCtx, TlbOrganisation};
use super::{payload, tag, tag_asid, tag_vpn, Neighbours};
use crate::addr::{Asid, PageSize};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stats::StatVisitor;
use crate::table::lru4::Lru4;
use crate::table::SetAssoc as Table;
use serde::{Deserialize, Deserializer, Serialize};

/// `organisation = "set_assoc"` needs no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Index sets by `vpn >> log2(q)` (the gem5 mosaic fork's vanilla TLB); absent: by VPN.
    #[serde(default, skip_serializing_if = "Option::is_none", deserialize_with = "de_quirk")]
    pub vanilla_index_quirk: Option<u32>,
}

/// Why `vanilla_index_quirk` is not allowed, if it is not.
fn quirk_problem(q: u32) -> Option<String> {
    (!(q.is_power_of_two() && q <= super::MAX_GROUP as u32))
        .then(|| format!("{q} pages: must be a power of two from 1 to {} (the mosaic arity whose index to reproduce)", super::MAX_GROUP))
}

fn de_quirk<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<Option<u32>, D::Error> {
    let q = u32::deserialize(d)?;
    match quirk_problem(q) {
        Some(msg) => Err(serde::de::Error::custom(msg)),
        None => Ok(Some(q)),
    }
}

#[derive(Clone, Debug)]
pub struct SetAssoc {
    sizes: [PageSize; PageSize::COUNT],
    n_sizes: usize,
    table: Store,
    set_mask: u64,
    /// log2 of `vanilla_index_quirk` (0: sets indexed by VPN).
    index_shift: u32,
}

impl Mechanism for SetAssoc {
    const NAME: &'static str = "set_assoc";
    const SUMMARY: &'static str = "one entry per page, sets indexed by virtual page number (the conventional TLB)";
    type Config = Config;
    type Ctx = TlbCtx;
    fn build(cfg: &Config, ctx: &TlbCtx) -> Result<Self> {
        if let Some(msg) = cfg.vanilla_index_quirk.and_then(quirk_problem) {
            return Err(Error::config(format!("{}.organisation.vanilla_index_quirk", ctx.path), msg));
        }
        // The common TLB (4 ways, exact LRU) gets its own table; any other
        // geometry or policy the general one.
        let table = if ctx.ways == 4 && ctx.replacement.kind == "lru" && ctx.replacement.params.is_empty() {
            Store::Lru4(Lru4::new(ctx.sets))
        } else {
            Store::General(ctx.table()?)
        };
        let mut sizes = [PageSize::Size4K; PageSize::COUNT];
        for (i, s) in ctx.page_sizes.iter().enumerate() {
            sizes[i] = *s;
        }
        Ok(SetAssoc {
            sizes,
            n_sizes: ctx.page_sizes.len(),
            table,
            set_mask: (ctx.sets - 1) as u64,
            index_shift: cfg.vanilla_index_quirk.map_or(0, u32::trailing_zeros),
        })
    }
}

impl SetAssoc {
    /// Set of page number `vpn`. `QUIRK`: under `vanilla_index_quirk` (the
    /// shift is 0 otherwise, so `true` is right for every structure; `false`
    /// is the default structures' hot path, which has no shift to do).
    #[inline(always)]
    fn set_of<const QUIRK: bool>(&self, vpn: u64) -> u32 {
        let v = if QUIRK { vpn >> self.index_shift } else { vpn };
        (v & self.set_mask) as u32
    }

    #[inline(always)]
    fn lookup_in<const QUIRK: bool>(&mut self, va: u64, asid: Asid) -> Probe {
        for &size in &self.sizes[..self.n_sizes] {
            let vpn = va >> size.shift();
            if let Some(data) = self.table.lookup(self.set_of::<QUIRK>(vpn), tag(vpn, size, asid)) {
                return Probe::Hit { pfn: data >> 1, size, dirty: data & 1 == 1 };
            }
        }
        Probe::Miss
    }

    #[inline(always)]
    fn insert_in<const QUIRK: bool>(&mut self, (t, data): Entry, absent: bool) -> Option<Entry> {
        let set = self.set_of::<QUIRK>(tag_vpn(t));
        if absent {
            self.table.insert_after_miss(set, t, data)
        } else {
            self.table.insert(set, t, data)
        }
    }

    /// The page size and set mask of a structure that holds one page size
    /// and indexes its sets by page number (no quirk): its lookups may go
    /// straight to [`Self::lookup_tag`].
    pub fn plain(&self) -> Option<(PageSize, u64)> {
        (self.n_sizes == 1 && self.index_shift == 0).then_some((self.sizes[0], self.set_mask))
    }

    /// The 4-way LRU table, if this structure has one (a plain side of
    /// such structures is looked up without the general table's code).
    #[inline(always)]
    pub fn lru4_mut(&mut self) -> Option<&mut Lru4> {
        match &mut self.table {
            Store::Lru4(t) => Some(t),
            Store::General(_) => None,
        }
    }

    /// Whether this structure's table is the 4-way LRU one.
    pub fn is_lru4(&self) -> bool {
        matches!(self.table, Store::Lru4(_))
    }

    /// The payload of `tag` in `set`, making it most recently used: a
    /// [`TlbOrganisation::lookup`] of a [`Self::plain`] structure, with the
    /// set and tag computed by the caller.
    #[inline(always)]
    pub fn lookup_tag(&mut self, set: u32, t: u64) -> Option<u64> {
        // An empty structure (the 2 MiB TLB of a 4 KiB run) misses at once.
        if self.table.is_empty() {
            return None;
        }
        self.table.lookup(set, t)
    }

    // The quirk's paths, out of line: the default path only tests for them.
    #[cold]
    #[inline(never)]
    fn lookup_quirk(&mut self, va: u64, asid: Asid) -> Probe {
        self.lookup_in::<true>(va, asid)
    }

    #[cold]
    #[inline(never)]
    fn insert_quirk(&mut self, e: Entry, absent: bool) -> Option<Entry> {
        self.insert_in::<true>(e, absent)
    }
}

impl TlbOrganisation for SetAssoc {
    #[inline(always)]
    fn lookup(&mut self, va: u64, asid: Asid) -> Probe {
        // An empty structure (e.g. the 2 MiB TLB when only 4 KiB pages are
        // mapped) misses without a probe; a miss changes no replacement state.
        if self.table.is_empty() {
            return Probe::Miss;
        }
        if self.index_shift != 0 {
            return self.lookup_quirk(va, asid);
        }
        self.lookup_in::<false>(va, asid)
    }

    #[inline(always)]
    fn fill(&mut self, f: &Fill, _nb: &Neighbours, absent: bool) -> bool {
        let t = tag(f.va >> f.size.shift(), f.size, f.asid);
        self.insert_entry((t, payload(f.pfn, f.dirty)), absent).is_some()
    }

    #[inline(always)]
    fn insert_entry(&mut self, e: Entry, absent: bool) -> Option<Entry> {
        if self.index_shift != 0 {
            return self.insert_quirk(e, absent);
        }
        self.insert_in::<false>(e, absent)
    }

    fn remove_entry(&mut self, t: u64) -> bool {
        let set = self.set_of::<true>(tag_vpn(t));
        self.table.invalidate(set, t)
    }

    fn moves_entries(&self) -> bool {
        true
    }

    fn memo_safe(&self) -> bool {
        self.table.repeat_hits_free()
    }

    fn neighbours_wanted(&self) -> u32 {
        0
    }

    fn entry_neighbours(&self, _va: u64, _asid: Asid, out: &mut Neighbours) {
        out.len = 0;
    }

    fn mark_dirty(&mut self, va: u64, asid: Asid) {
        for &size in &self.sizes[..self.n_sizes] {
            let vpn = va >> size.shift();
            self.table.set_dirty(self.set_of::<true>(vpn), tag(vpn, size, asid));
        }
    }

    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        let mut n = 0;
        for k in 0..self.n_sizes {
            let size = self.sizes[k];
            let vpn = va >> size.shift();
            if self.table.invalidate(self.set_of::<true>(vpn), tag(vpn, size, asid)) {
                n += 1;
            }
        }
        n
    }

    fn flush_asid(&mut self, asid: Asid) -> u64 {
        self.table.invalidate_where(|tg, _| tag_asid(tg) == asid)
    }

    fn occupancy(&self) -> usize {
        self.table.occupancy()
    }

    fn visit_stats(&self, _v: &mut dyn StatVisitor) {}
}

/// A `set_assoc` structure's table: the 4-way LRU one for the common TLB, the
/// general one for every other geometry and policy.
#[derive(Clone, Debug)]
#[repr(u8)] // A tag byte: telling the two apart is one compare (no niche decoding).
#[allow(clippy::large_enum_variant)] // Boxing either would put a pointer chase on every probe.
enum Store {
    Lru4(Lru4),
    General(Table),
}

impl Store {
    #[inline(always)]
    fn is_empty(&self) -> bool {
        match self {
            Store::Lru4(t) => t.is_empty(),
            Store::General(t) => t.is_empty(),
        }
    }

    /// The payload of `tag` in `set`, making it most recently used.
    #[inline(always)]
    fn lookup(&mut self, set: u32, tag: u64) -> Option<u64> {
        match self {
            Store::Lru4(t) => t.lookup(set, tag),
            Store::General(t) => {
                let slot = t.lookup(set, tag)?;
                Some(t.data(slot))
            }
        }
    }

    #[inline(always)]
    fn insert_after_miss(&mut self, set: u32, tag: u64, data: u64) -> Option<Entry> {
        match self {
            Store::Lru4(t) => t.insert_after_miss(set, tag, data),
            Store::General(t) => t.insert_after_miss(set, tag, data),
        }
    }

    #[inline]
    fn insert(&mut self, set: u32, tag: u64, data: u64) -> Option<Entry> {
        match self {
            Store::Lru4(t) => t.insert(set, tag, data),
            Store::General(t) => t.insert(set, tag, data),
        }
    }

    fn invalidate(&mut self, set: u32, tag: u64) -> bool {
        match self {
            Store::Lru4(t) => t.invalidate(set, tag),
            Store::General(t) => t.invalidate(set, tag),
        }
    }

    /// Set the dirty bit of `tag`'s payload, if it is in `set` (no replacement change).
    fn set_dirty(&mut self, set: u32, tag: u64) {
        match self {
            Store::Lru4(t) => t.set_dirty(set, tag),
            Store::General(t) => {
                if let Some(slot) = t.probe(set, tag) {
                    *t.data_mut(slot) |= 1;
                }
            }
        }
    }

    fn invalidate_where(&mut self, pred: impl FnMut(u64, u64) -> bool) -> u64 {
        match self {
            Store::Lru4(t) => t.invalidate_where(pred),
            Store::General(t) => t.invalidate_where(pred),
        }
    }

    fn occupancy(&self) -> usize {
        match self {
            Store::Lru4(t) => t.occupancy(),
            Store::General(t) => t.occupancy(),
        }
    }

    /// Whether hits on the entry hit or filled last may go uncounted by the policy.
    fn repeat_hits_free(&self) -> bool {
        match self {
            // Exact LRU: a repeated hit keeps the order.
            Store::Lru4(_) => true,
            Store::General(t) => t.repeat_hits_free(),
        }
    }
}
