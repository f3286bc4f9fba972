//! The TLB hierarchy: any number of levels, split instruction/data sides or
//! unified structures, one structure per page size or one holding several.
//!
//! ## Lookup
//! An access probes every structure of level 1 on its side in parallel (each
//! counts a lookup); level n+1 is probed only when no structure of level n hit.
//! A structure holding several page sizes probes once per size, indexing its
//! sets with that size's virtual page number. The translation latency of an
//! access is the sum of the latencies of the levels it probed.
//!
//! ## Fill policies (`mmu.fill`)
//! - `all_levels` (default, non-inclusive): a walk fills every level of the side
//!   that holds the page size; a hit at level n fills the levels above it.
//! - `victim` (mostly exclusive): a walk fills level 1; evictions cascade to the
//!   next level that holds their size; a hit at level n > 1 moves the entry up.
//!
//! ## Organisations (`mmu.tlb.<name>.organisation`)
//! What one entry of a structure covers is its organisation, a family of the
//! registry ([`organisation::TlbOrganisation`]): `set_assoc` (one page per
//! entry, the default), `coalescing` (an aligned group of 4 KiB pages per
//! entry) or `mosaic` (a mosaic page: a table of contents of the frames of
//! an aligned group). A structure's lookup may also end in a sub-page miss
//! (its group's entry is present, the page is not), which the hierarchy
//! treats as a miss; a mosaic structure may take such a page without a walk
//! ([`Lookup::SubpageFill`]).
//!
//! ## Shadow structures (`mmu.shadow.<name>`)
//! Structures that watch the translations of the machine without taking
//! part in them ([`shadow::Shadows`]), to compare TLB designs on one access
//! stream in one run.
//!
//! ## Fast paths
//! A level-1 hit of a side is memoised ([`Mmu::memo`]) and its repeats only
//! counted, when every level-1 structure of the side is memo-safe
//! ([`organisation::TlbOrganisation::memo_safe`]); otherwise every lookup
//! takes the full path.
//!
//! ## Entries
//! A tag packs (virtual page number, page-size index, ASID) into one u64, so
//! address spaces never alias and one compare suffices. The payload of a
//! `set_assoc` entry is the first frame of the page and a dirty bit.

pub mod coalescing;
pub mod mosaic;
pub mod organisation;
pub mod set_assoc;
pub mod shadow;
#[cfg(test)]
mod test_support;

pub use organisation::{Entry, Fill, Probe, TlbCtx, TlbOrganisation};

use crate::addr::{Asid, PageSize};
use crate::config::spec::{FillPolicy, MmuSpec, Side, TlbSpec};
use crate::error::{Error, Result};
use crate::registry::AnyTlbOrganisation;
use crate::stats::{visit_prefixed, Prefixed, StatVisitor};

crate::stat_group! {
    pub struct TlbStats {
        lookups: "accesses", "translations presented to this structure",
        hits: "accesses", "lookups that found the translation here",
        misses: "accesses", "lookups that did not find the translation here",
        fills: "entries", "translations installed",
        evictions: "entries", "valid entries replaced by a fill",
    }
}

const SIZE_SHIFT: u32 = 45;
const ASID_SHIFT: u32 = 47;

/// Pack (vpn, size, asid) into one tag. 57-bit virtual addresses leave 45 bits of 4 KiB VPN.
#[inline]
pub fn tag(vpn: u64, size: PageSize, asid: Asid) -> u64 {
    vpn | (size.index() as u64) << SIZE_SHIFT | (asid as u64) << ASID_SHIFT
}

#[inline]
pub(crate) fn tag_size(tag: u64) -> PageSize {
    PageSize::ALL[((tag >> SIZE_SHIFT) & 3) as usize]
}

#[inline]
pub(crate) fn tag_asid(tag: u64) -> Asid {
    (tag >> ASID_SHIFT) as Asid
}

#[inline]
pub(crate) fn tag_vpn(tag: u64) -> u64 {
    tag & ((1 << SIZE_SHIFT) - 1)
}

/// Payload word: first frame of the page, and a dirty bit.
#[inline]
pub(crate) fn payload(pfn_base: u64, dirty: bool) -> u64 {
    pfn_base << 1 | dirty as u64
}

/// Most sub-pages an organisation's group may span.
pub const MAX_GROUP: usize = 64;
/// Frame of a sub-page whose leaf is not present.
pub const NOT_PRESENT: u64 = u64::MAX;

/// The 4 KiB leaf translations around a walked page, for organisations that fill from them.
#[derive(Clone, Debug)]
pub struct Neighbours {
    /// First 4 KiB VPN of the aligned run given; `len` sub-pages (0: none given).
    pub first_vpn: u64,
    pub len: u32,
    /// Frame of each sub-page, or NOT_PRESENT.
    pub pfn: [u64; MAX_GROUP],
    /// Bit i: sub-page i's leaf is dirty.
    pub dirty: u64,
    /// The run was decoded from a leaf above level 1 that maps each of its
    /// pages (a GT-PDE, whose bitmap describes whole B-blocks), not read
    /// from PTEs: all of it is at hand, whatever a structure's `fill_from`
    /// says. Only a structure that understands such leaves (a coalescing
    /// one with `gt_blocks`) uses it; the others take none of it.
    pub whole: bool,
}

impl Neighbours {
    /// No neighbours given.
    pub const EMPTY: Neighbours = Neighbours { first_vpn: 0, len: 0, pfn: [NOT_PRESENT; MAX_GROUP], dirty: 0, whole: false };

    /// Frame and dirty bit of 4 KiB page `vpn`, if it is in the run and present.
    #[inline]
    pub fn get(&self, vpn: u64) -> Option<(u64, bool)> {
        let i = vpn.wrapping_sub(self.first_vpn);
        if i >= self.len as u64 {
            return None;
        }
        let p = self.pfn[i as usize];
        (p != NOT_PRESENT).then_some((p, self.dirty >> i & 1 == 1))
    }
}

impl Default for Neighbours {
    fn default() -> Self {
        Neighbours::EMPTY
    }
}

impl TlbCtx {
    /// The build context of structure `name` (`mmu.tlb.<name>`), from a resolved spec.
    pub fn new(name: &str, spec: &TlbSpec, seed: u64) -> TlbCtx {
        TlbCtx::at(format!("mmu.tlb.{name}"), spec, seed)
    }

    /// The build context of the structure at config path `path`.
    pub fn at(path: String, spec: &TlbSpec, seed: u64) -> TlbCtx {
        let ways = spec.ways.resolve(spec.entries);
        TlbCtx {
            entries: spec.entries,
            ways,
            sets: spec.entries / ways,
            page_sizes: spec.page_sizes.clone(),
            replacement: spec.replacement.clone(),
            seed: crate::rng::sub_seed(seed, &path),
            path,
        }
    }
}

/// Build the organisation of structure `name`, checking that it can serve
/// under the fill policy `fill` (config resolution calls this for every
/// structure, so a bad combination is a config error).
pub fn build_organisation(name: &str, spec: &TlbSpec, fill: FillPolicy, seed: u64) -> Result<AnyTlbOrganisation> {
    build_organisation_at(format!("mmu.tlb.{name}"), spec, fill, seed)
}

/// [`build_organisation`] of the structure at config path `path`.
pub fn build_organisation_at(path: String, spec: &TlbSpec, fill: FillPolicy, seed: u64) -> Result<AnyTlbOrganisation> {
    let ctx = TlbCtx::at(path, spec, seed);
    let org = AnyTlbOrganisation::build(&spec.organisation, &ctx, &format!("{}.organisation", ctx.path))?;
    if fill == FillPolicy::Victim && !org.moves_entries() {
        return Err(Error::config(
            "mmu.fill",
            format!(
                "\"victim\" moves single-page entries between levels, but {}.organisation = \"{}\" holds entries that are not single pages; use mmu.fill = \"all_levels\" or organisation = \"set_assoc\"",
                ctx.path,
                org.name()
            ),
        ));
    }
    Ok(org)
}

/// One TLB structure: where it sits in the hierarchy, its organisation, and
/// the five counters every structure has.
#[derive(Clone, Debug)]
pub struct Tlb {
    pub name: String,
    pub level: u32,
    pub side: Side,
    sizes: [PageSize; PageSize::COUNT],
    n_sizes: usize,
    org: AnyTlbOrganisation,
    pub latency: u32,
    pub stats: TlbStats,
}

impl Tlb {
    pub fn build(name: &str, spec: &TlbSpec, fill: FillPolicy, seed: u64) -> Result<Tlb> {
        Tlb::build_at(format!("mmu.tlb.{name}"), name, spec, fill, seed)
    }

    /// [`Tlb::build`] of the structure at config path `path` (a shadow's).
    pub fn build_at(path: String, name: &str, spec: &TlbSpec, fill: FillPolicy, seed: u64) -> Result<Tlb> {
        let org = build_organisation_at(path, spec, fill, seed)?;
        let mut sizes = [PageSize::Size4K; PageSize::COUNT];
        for (i, s) in spec.page_sizes.iter().enumerate() {
            sizes[i] = *s;
        }
        Ok(Tlb {
            name: name.to_string(),
            level: spec.level,
            side: spec.side,
            sizes,
            n_sizes: spec.page_sizes.len(),
            org,
            latency: spec.latency,
            stats: TlbStats::default(),
        })
    }

    #[inline]
    pub fn holds(&self, size: PageSize) -> bool {
        self.sizes[..self.n_sizes].contains(&size)
    }

    /// The registry name of the structure's organisation.
    pub fn organisation(&self) -> &'static str {
        self.org.name()
    }

    /// Probe for `va`; counts the lookup and its hit or miss (a sub-page miss is a miss).
    #[inline]
    pub fn lookup(&mut self, va: u64, asid: Asid) -> Probe {
        self.stats.lookups += 1;
        let p = self.org.lookup(va, asid);
        if let Probe::Hit { .. } = p {
            self.stats.hits += 1;
        } else {
            self.stats.misses += 1;
        }
        p
    }

    /// Install a translation (see [`TlbOrganisation::fill`]); counts the fill and any eviction.
    #[inline(always)]
    pub fn fill(&mut self, f: &Fill, nb: &Neighbours, absent: bool) {
        self.stats.fills += 1;
        if self.org.fill(f, nb, absent) {
            self.stats.evictions += 1;
        }
    }

    /// [`Self::fill`] of a translation that just missed here; `entry` is its
    /// single-page tag and payload, which a `set_assoc` structure installs
    /// as they are (the other organisations build their entries from `f`).
    #[inline(always)]
    fn fill_absent(&mut self, f: &Fill, entry: Entry, nb: &Neighbours) {
        self.stats.fills += 1;
        let evicted = match &mut self.org {
            AnyTlbOrganisation::SetAssoc(s) => s.insert_entry(entry, true).is_some(),
            org => org.fill(f, nb, true),
        };
        if evicted {
            self.stats.evictions += 1;
        }
    }

    /// Install a single-page entry (victim policy); returns the evicted one.
    #[inline(always)]
    fn insert_entry(&mut self, e: Entry, absent: bool) -> Option<Entry> {
        self.stats.fills += 1;
        let ev = self.org.insert_entry(e, absent);
        if ev.is_some() {
            self.stats.evictions += 1;
        }
        ev
    }

    pub fn mark_dirty(&mut self, va: u64, asid: Asid) {
        self.org.mark_dirty(va, asid);
    }

    /// Shootdown of `va`'s page; returns the entries or sub-pages removed.
    pub fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        self.org.invalidate_page(va, asid)
    }

    pub fn flush_asid(&mut self, asid: Asid) -> u64 {
        self.org.flush_asid(asid)
    }

    /// Number of valid entries (for tests and occupancy reports).
    pub fn occupancy(&self) -> usize {
        self.org.occupancy()
    }

    /// The five counters, then the organisation's own, under `<name>.`.
    fn visit_with(&self, stats: &TlbStats, v: &mut dyn StatVisitor) {
        visit_prefixed(&self.name, stats, v);
        let mut p = Prefixed::new(&self.name, v);
        self.org.visit_stats(&mut p);
    }
}

/// Outcome of a TLB-hierarchy lookup.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Lookup {
    /// Found at `level` (0-based). `pfn_base` is the first frame of the page.
    Hit { pfn_base: u64, size: PageSize, dirty: bool, level: usize, latency: u32 },
    /// Missed every level; `latency` is what the probes cost.
    Miss { latency: u32 },
    /// Missed every level, and a structure that missed holds the page's
    /// group and takes the page without a walk ([`Probe::SubpageFill`]):
    /// the machine reads the translation from the page table at no cost and
    /// fills it ([`Mmu::fill_walk`], no neighbours), or walks if the page is
    /// not mapped.
    SubpageFill { latency: u32 },
}

/// Most structures one level of one side may hold (e.g. 4K + 2M + 1G + spare).
const MAX_PER_LEVEL: usize = 4;

/// Most structures a hierarchy may have (its repeat tallies are an array).
pub const MAX_TLBS: usize = 32;

/// One lookup level of one side: its structures and its latency.
#[derive(Clone, Debug, Default)]
struct Level {
    tlbs: [u16; MAX_PER_LEVEL],
    n: usize,
    latency: u32,
}

impl Level {
    #[inline]
    fn tlbs(&self) -> &[u16] {
        &self.tlbs[..self.n]
    }
}

/// Per-side level lists.
#[derive(Clone, Debug, Default)]
struct SideLevels {
    levels: Vec<Level>,
    /// Every structure of every level in lookup order: what a lookup walks
    /// through, one step per structure, without nested loops.
    probes: Vec<ProbeStep>,
    /// The same steps with each structure's page size taken out of the
    /// lookup, when every structure of the side is a plain `set_assoc` one
    /// (one page size, no index quirk): [`Mmu::lookup_plain`] probes their
    /// tables directly. Empty otherwise.
    plain: Vec<PlainStep>,
    /// Every structure of `plain` keeps its entries in a 4-way LRU table, so
    /// the lookup carries no code of the general table (and `plain` is not
    /// empty).
    plain_lru4: bool,
}

/// One structure of a plain side's lookup order, with what its lookup
/// computes for every address precomputed.
#[derive(Copy, Clone, Debug)]
struct PlainStep {
    tlb: u16,
    level: u8,
    ends_level: bool,
    size: PageSize,
    /// `size.shift()`, kept here so a probe needs no lookup of it.
    shift: u32,
    /// The page-size bits of the structure's tags (see [`tag`]).
    size_tag: u64,
    latency: u32,
    set_mask: u64,
}

/// One structure of a side's lookup order.
#[derive(Copy, Clone, Debug)]
struct ProbeStep {
    tlb: u16,
    /// 0-based level of the structure.
    level: u8,
    /// The last structure of its level: a hit anywhere in the level ends the lookup here.
    ends_level: bool,
    /// Latency the lookup adds on reaching this step (the level's, on its first structure).
    latency: u32,
}

/// The last level-1 hit in one set of a side's level-1 structures.
/// Repeating a hit on the entry that is already most recently used in its
/// set changes no replacement state (LRU order within the set is unchanged,
/// random replacement ignores hits), so the repeat only needs its counters
/// bumped.
///
/// A side keeps one memo per set of its one level-1 structure of 4 KiB pages
/// (up to [`MEMO_SLOTS`]; a single memo when the side's structures are not
/// all plain `set_assoc` ones, or a level-1 structure serves both sides):
/// a page's slot is its set there (modulo the slots: sets may share one),
/// so only a lookup or fill of that set can change what the slot's entry
/// is, and a lookup that misses slot `q` forgets slot `q` alone. Anything
/// else that may reorder a set (a hit or fill in another level-1
/// structure, dirty bits, invalidations) forgets every slot of the side at
/// once, by a new generation.
///
/// Repeats go straight into the side's repeat tallies ([`Mmu::repeats`],
/// [`Mmu::repeat_hits`]), which are added to the level-1 structures'
/// counters only when they are read ([`Mmu::visit`]): a repeat costs two
/// compares and three increments (the third counts repeats of a fill's
/// memo, see [`FillMemos`]).
#[derive(Copy, Clone, Debug)]
struct Memo {
    /// The side's generation when the memo was made ([`Mmu::memo_gen`]); 0: none.
    gen: u64,
    /// The page number and ASID a repeat must have: `va >> shift | asid << ASID_SHIFT`.
    key: u64,
    pfn_base: u64,
    /// Level-1 latency of the side.
    latency: u32,
    /// The structure that hit (below [`MAX_TLBS`]), and [`FROM_FILL`] when a
    /// fill left the memo. With the next three, 32 bytes in all: a fill
    /// writes a memo in few stores.
    hit: u8,
    size: PageSize,
    dirty: bool,
    shift: u8,
}

impl Default for Memo {
    fn default() -> Self {
        Memo { gen: 0, key: 0, pfn_base: 0, latency: 0, hit: 0, size: PageSize::Size4K, dirty: false, shift: 0 }
    }
}

impl Memo {
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn new(gen: u64, va: u64, asid: Asid, size: PageSize, pfn_base: u64, dirty: bool, latency: u32, hit: u16) -> Memo {
        let shift = size.shift();
        let key = va >> shift | (asid as u64) << ASID_SHIFT;
        Memo { gen, key, pfn_base, latency, hit: hit as u8, size, dirty, shift: shift as u8 }
    }

    /// Whether an access to `va` of `asid` is on the memoised page.
    #[inline(always)]
    fn matches(&self, va: u64, asid: Asid) -> bool {
        va >> self.shift | (asid as u64) << ASID_SHIFT == self.key
    }

    /// The index of the structure that hit.
    #[inline(always)]
    fn hit(&self) -> usize {
        (self.hit & !FROM_FILL) as usize % MAX_TLBS
    }
}

/// Whether a side's fills leave memos. A fill's memo saves a lookup when
/// the next access repeats the page (a store after a load, a sequential
/// pass), and costs a few stores on streams that never do (uniform random
/// ones). So the side counts how often a fill's memo is repeated, and every
/// [`FILL_MEMO_ROUND`] memos written decides whether to go on: off when
/// fewer than one in [`FILL_MEMO_USE`] was repeated. While off, one fill in
/// [`FILL_MEMO_SAMPLE`] still leaves a memo, to notice when that changes.
/// Only speed depends on it: a memo is exact whether it is made or not.
#[derive(Copy, Clone, Debug)]
struct FillMemos {
    on: bool,
    fills: u64,
    written: u64,
    repeated: u64,
}

const FILL_MEMO_ROUND: u64 = 256;
const FILL_MEMO_USE: u64 = 8;
const FILL_MEMO_SAMPLE: u64 = 64;
/// `Memo::hit` bit of a memo a fill left.
const FROM_FILL: u8 = 1 << 7;

impl FillMemos {
    /// A 4 KiB fill: whether it leaves a memo.
    #[inline(always)]
    fn leave(&mut self) -> bool {
        self.fills += 1;
        if !self.on && self.fills % FILL_MEMO_SAMPLE != 0 {
            return false;
        }
        self.written += 1;
        if self.written == FILL_MEMO_ROUND {
            self.on = self.repeated * FILL_MEMO_USE >= FILL_MEMO_ROUND;
            (self.written, self.repeated) = (0, 0);
        }
        true
    }
}

/// Memo slots per side: enough for the level-1 4 KiB TLBs of the presets
/// (16 sets); a structure with more sets shares slots between sets.
pub const MEMO_SLOTS: usize = 16;

/// What an access must match to repeat a side's memoised level-1 hit: its
/// ASID and `va >> shift == vpn`. A store repeats it only if `dirty`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct MemoKey {
    pub asid: Asid,
    pub shift: u32,
    pub vpn: u64,
    pub dirty: bool,
    /// Translation latency of each repeat (the side's level-1 latency).
    pub latency: u32,
    /// The structure the repeats hit.
    pub hit: u16,
    /// The memo was left by a fill (see `FillMemos`).
    pub from_fill: bool,
}

/// The whole TLB hierarchy of one core.
#[derive(Clone, Debug)]
pub struct Mmu {
    tlbs: Vec<Tlb>,
    data: SideLevels,
    instr: SideLevels,
    fill: FillPolicy,
    /// [data, instr] memos, one per slot (see [`Memo`]).
    memo: [Memo; 2 * MEMO_SLOTS],
    /// `[data, instr]`: the current generation of the side's memos; a memo
    /// of an older one is dead.
    memo_gen: [u64; 2],
    /// `[data, instr]`: a page's memo slot is `(va >> 12) & memo_mask` (the
    /// set-index bits of the side's level-1 4 KiB structure, 0 for one slot).
    memo_mask: [u64; 2],
    /// `[data, instr]`: that structure (`u16::MAX`: none; one slot). A
    /// level-1 hit in any other structure forgets every slot of the side.
    memo_home: [u16; 2],
    /// `[data, instr]`: a fill of a 4 KiB page may leave a memo (the side has
    /// a home and allows memos); a clean memo of page 0 from a fill, else `None`.
    fill_memo: [Option<Memo>; 2],
    /// `[data, instr]`: whether fills leave memos now (see [`FillMemos`]).
    fill_memos: [FillMemos; 2],
    /// Some level-1 structure serves both sides, so a lookup on one side can
    /// reorder the other side's memoised set.
    shared_l1: bool,
    /// `[side][page-size index]`: the structures an `all_levels` walk fill
    /// installs into (the first of each level that holds the size), in level
    /// order. Precomputed so a fill does not search the levels.
    fill_plan: [[Vec<u16>; PageSize::COUNT]; 2],
    /// The same plans with each structure's set mask and level, on a side whose
    /// structures all keep their entries in 4-way LRU tables
    /// (`SideLevels::plain_lru4`): a walk fill installs into those tables
    /// directly. Empty on other sides.
    lru4_fill: [[Vec<(u16, u64, u8)>; PageSize::COUNT]; 2],
    /// `[data, instr]`: the side is `plain_lru4` and shares no level-1
    /// structure with the other, so a lookup that misses the memo goes
    /// straight to [`Self::lookup_lru4`].
    lru4_side: [bool; 2],
    /// `[data, instr]`: every level-1 structure of the side is memo-safe, so
    /// its hits may be memoised.
    memo_ok: [bool; 2],
    /// `[data, instr]`: some structure of the side fills from neighbours, so
    /// a lower-level hit hands the entry's other pages up.
    promote_nb: [bool; 2],
    /// Largest run of neighbours any structure wants on a 4 KiB fill.
    nb_wanted: u32,
    /// Largest run any structure wants on a 4 KiB fill from a GT-PDE.
    gt_wanted: u32,
    /// Neighbours of a lower-level hit being promoted.
    scratch: Box<Neighbours>,
    /// `[data, instr]`: memo repeats, each a lookup in every level-1
    /// structure of the side, not yet in their counters.
    repeats: [u64; 2],
    /// Per structure: how many of those repeats hit it.
    repeat_hits: [u64; MAX_TLBS],
}


impl Mmu {
    pub fn build(spec: &MmuSpec, seed: u64) -> Result<Mmu> {
        let mut tlbs = Vec::new();
        for (name, t) in &spec.tlb {
            tlbs.push(Tlb::build(name, t, spec.fill, seed)?);
        }
        if tlbs.len() > MAX_TLBS {
            return Err(Error::config("mmu.tlb", format!("{} structures; at most {MAX_TLBS}", tlbs.len())));
        }
        let side_levels = |side: Side| {
            let max = tlbs.iter().filter(|t| t.side == side || t.side == Side::Unified).map(|t| t.level).max().unwrap_or(0);
            let mut sl = SideLevels::default();
            for l in 1..=max {
                let idx: Vec<usize> = (0..tlbs.len())
                    .filter(|&i| tlbs[i].level == l && (tlbs[i].side == side || tlbs[i].side == Side::Unified))
                    .collect();
                if idx.len() > MAX_PER_LEVEL {
                    return Err(crate::error::Error::config(
                        "mmu.tlb",
                        format!("level {l} has {} structures on one side; at most {MAX_PER_LEVEL}", idx.len()),
                    ));
                }
                let mut level = Level { n: idx.len(), latency: idx.iter().map(|&i| tlbs[i].latency).max().unwrap_or(0), ..Level::default() };
                for (k, &i) in idx.iter().enumerate() {
                    level.tlbs[k] = i as u16;
                    sl.probes.push(ProbeStep {
                        tlb: i as u16,
                        level: sl.levels.len() as u8,
                        ends_level: k + 1 == idx.len(),
                        latency: if k == 0 { level.latency } else { 0 },
                    });
                }
                sl.levels.push(level);
            }
            Ok(sl)
        };
        let mut data = side_levels(Side::Data)?;
        let mut instr = side_levels(Side::Instr)?;
        for side in [&mut data, &mut instr] {
            let plain: Option<Vec<PlainStep>> = side
                .probes
                .iter()
                .map(|st| match &tlbs[st.tlb as usize].org {
                    AnyTlbOrganisation::SetAssoc(s) => s.plain().map(|(size, set_mask)| PlainStep {
                        tlb: st.tlb,
                        level: st.level,
                        ends_level: st.ends_level,
                        size,
                        shift: size.shift(),
                        size_tag: tag(0, size, 0),
                        latency: st.latency,
                        set_mask,
                    }),
                    _ => None,
                })
                .collect();
            side.plain = plain.unwrap_or_default();
            side.plain_lru4 = !side.plain.is_empty() && side.plain.iter().all(|st| match &tlbs[st.tlb as usize].org {
                AnyTlbOrganisation::SetAssoc(s) => s.is_lru4(),
                _ => false,
            });
        }
        let shared_l1 = tlbs.iter().any(|t| t.level == 1 && t.side == Side::Unified);
        // Per level (0-based), the first structure that holds `size`.
        let plan = |side: &SideLevels, size: PageSize| -> Vec<(u16, u8)> {
            let holder = |l: &Level| l.tlbs().iter().copied().find(|&i| tlbs[i as usize].holds(size));
            side.levels.iter().enumerate().filter_map(|(k, l)| holder(l).map(|i| (i, k as u8))).collect()
        };
        let fill_plan = [&data, &instr].map(|side| PageSize::ALL.map(|size| plan(side, size).into_iter().map(|p| p.0).collect()));
        let lru4_plan = |side: &SideLevels, size: PageSize| -> Vec<(u16, u64, u8)> {
            if !side.plain_lru4 {
                return Vec::new();
            }
            let mask = |i: u16| side.plain.iter().find(|st| st.tlb == i).map(|st| st.set_mask);
            let with_mask = |(i, level): (u16, u8)| (i, mask(i).expect("a plain side's plan holds its own structures"), level);
            plan(side, size).into_iter().map(with_mask).collect()
        };
        let lru4_fill = [&data, &instr].map(|side| PageSize::ALL.map(|size| lru4_plan(side, size)));
        let lru4_side = [data.plain_lru4 && !shared_l1, instr.plain_lru4 && !shared_l1];
        let on_side = |side: Side| tlbs.iter().filter(move |t| t.side == side || t.side == Side::Unified);
        let memo_ok = [Side::Data, Side::Instr].map(|side| on_side(side).filter(|t| t.level == 1).all(|t| t.org.memo_safe()));
        let promote_nb = [Side::Data, Side::Instr].map(|side| on_side(side).any(|t| t.org.neighbours_wanted() > 0));
        let nb_wanted = tlbs.iter().map(|t| t.org.neighbours_wanted()).max().unwrap_or(0);
        let gt_wanted = tlbs.iter().map(|t| t.org.gt_neighbours_wanted()).max().unwrap_or(0);
        // The latency of each side's level 1: a repeat's.
        let memo_latency = [&data, &instr].map(|side| side.levels.first().map_or(0, |l| l.latency));
        // One memo slot per set of the side's one level-1 4 KiB structure,
        // when every structure of the side is a plain one (its sets indexed
        // by page number) and no level-1 structure is shared between sides.
        let memo_home = [&data, &instr].map(|side| {
            let l1_4k: Vec<&PlainStep> = side.plain.iter().filter(|st| st.level == 0 && st.size == PageSize::Size4K).collect();
            match l1_4k[..] {
                [st] if !shared_l1 => (st.tlb, st.set_mask & (MEMO_SLOTS as u64 - 1)),
                _ => (u16::MAX, 0),
            }
        });
        Ok(Mmu {
            tlbs,
            data,
            instr,
            fill: spec.fill,
            memo: [Memo::default(); 2 * MEMO_SLOTS],
            memo_gen: [1; 2],
            memo_mask: memo_home.map(|h| h.1),
            memo_home: memo_home.map(|h| h.0),
            fill_memo: [0, 1].map(|s| {
                let m = Memo::new(0, 0, 0, PageSize::Size4K, 0, false, memo_latency[s], memo_home[s].0 | FROM_FILL as u16);
                (memo_home[s].0 != u16::MAX && memo_ok[s]).then_some(m)
            }),
            fill_memos: [FillMemos { on: true, fills: 0, written: 0, repeated: 0 }; 2],
            shared_l1,
            fill_plan,
            lru4_fill,
            lru4_side,
            memo_ok,
            promote_nb,
            nb_wanted,
            gt_wanted,
            scratch: Box::new(Neighbours::EMPTY),
            repeats: [0; 2],
            repeat_hits: [0; MAX_TLBS],
        })
    }

    /// The largest aligned run of 4 KiB leaf translations, in pages, that any
    /// structure can use on a 4 KiB fill (0: none, e.g. every `set_assoc`
    /// machine). The walker hands [`Self::fill_walk`] that run around the
    /// walked leaf.
    pub fn neighbours_wanted(&self) -> u32 {
        self.nb_wanted
    }

    /// The largest aligned run of 4 KiB translations, in pages, that any
    /// structure can use on a fill of a 4 KiB page mapped by a GT-PDE (0:
    /// none understands GT-PDEs). The machine decodes that run from the
    /// walked entry ([`Neighbours::whole`]).
    pub fn gt_neighbours_wanted(&self) -> u32 {
        self.gt_wanted
    }

    /// Whether instruction fetches are translated (the machine has instruction-side structures).
    pub fn translates_instr(&self) -> bool {
        !self.instr.levels.is_empty()
    }

    pub fn tlbs(&self) -> &[Tlb] {
        &self.tlbs
    }

    #[inline]
    fn side(&self, instr: bool) -> &SideLevels {
        if instr {
            &self.instr
        } else {
            &self.data
        }
    }

    /// Look `va` up on one side, filling upper levels on a lower-level hit.
    #[inline(always)]
    pub fn lookup(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        let s = instr as usize;
        let m = &self.memo[self.memo_slot(instr, va)];
        if m.gen == self.memo_gen[s] && m.matches(va, asid) {
            self.repeats[s] += 1;
            self.repeat_hits[m.hit()] += 1;
            self.fill_memos[s].repeated += (m.hit >> 7) as u64;
            return Lookup::Hit { pfn_base: m.pfn_base, size: m.size, dirty: m.dirty, level: 0, latency: m.latency };
        }
        self.lookup_past_memo(va, asid, instr)
    }

    /// [`Self::lookup`] of an access its caller knows not to repeat its
    /// slot's memo (having just looked, for [`Self::memo`]). Also exact when
    /// it would have: the general lookup of a memoised page hits the same
    /// entry, counts the same, and leaves the same order.
    #[inline(always)]
    pub fn lookup_past_memo(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        if self.lru4_side[instr as usize] {
            return self.lookup_lru4(va, asid, instr);
        }
        self.lookup_unmemoised(va, asid, instr)
    }

    /// The live memo of one side that an access to `va` of `asid` repeats,
    /// if any: what the repeats after it must match, so a caller can count a
    /// run of them at once ([`Self::add_repeats`]). Always None on a side
    /// with a level-1 structure that is not memo-safe.
    #[inline]
    pub fn memo(&self, instr: bool, va: u64, asid: Asid) -> Option<MemoKey> {
        let s = instr as usize;
        let m = &self.memo[self.memo_slot(instr, va)];
        if m.gen != self.memo_gen[s] || !m.matches(va, asid) {
            return None;
        }
        debug_assert!(self.memo_ok[s], "memo on a side that does not allow it");
        let from_fill = m.hit & FROM_FILL != 0;
        Some(MemoKey { asid, shift: m.shift as u32, vpn: va >> m.shift, dirty: m.dirty, latency: m.latency, hit: m.hit() as u16, from_fill })
    }

    /// Count `n` lookups that repeat the live memo `key` of one side: the
    /// same as `n` calls of [`Self::lookup`] that each return its hit.
    #[inline]
    pub fn add_repeats(&mut self, instr: bool, key: &MemoKey, n: u64) {
        self.repeats[instr as usize] += n;
        self.repeat_hits[key.hit as usize % MAX_TLBS] += n;
        self.fill_memos[instr as usize].repeated += key.from_fill as u64;
    }

    /// Everything but a memo repeat, out of line so the repeat path inlines small.
    #[inline(never)]
    fn lookup_unmemoised(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        self.forget_slot(instr, va);
        if self.shared_l1 {
            self.forget_slot(!instr, va);
        }
        let side = self.side(instr);
        if side.plain.is_empty() {
            self.lookup_slow(va, asid, instr)
        } else if side.plain_lru4 {
            self.lookup_plain::<true>(va, asid, instr)
        } else {
            self.lookup_plain::<false>(va, asid, instr)
        }
    }

    /// [`Self::lookup_slow`] on a side of plain `set_assoc` structures:
    /// the same probes in the same order, counts, promotion and memo, each
    /// structure's table probed directly with its page size and set mask
    /// taken from the step. (Tests hold it to the general path.) `LRU4`:
    /// every structure of the side has a 4-way LRU table.
    #[inline(always)]
    fn lookup_plain<const LRU4: bool>(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        let asid_tag = tag(0, PageSize::Size4K, asid);
        let mut latency = 0;
        // The step that hit, and its payload.
        let mut found: Option<(usize, u64)> = None;
        let Mmu { tlbs, data, instr: instr_side, .. } = self;
        let side = if instr { &*instr_side } else { &*data };
        for (k, st) in side.plain.iter().enumerate() {
            latency += st.latency;
            let tlb = &mut tlbs[st.tlb as usize];
            tlb.stats.lookups += 1;
            // The set and tag, computed only where a table is probed (an
            // empty one, such as a 2 MiB TLB under 4 KiB pages, is not).
            let key = || {
                let vpn = va >> st.shift;
                ((vpn & st.set_mask) as u32, vpn | st.size_tag | asid_tag)
            };
            let hit = match &mut tlb.org {
                AnyTlbOrganisation::SetAssoc(s) if LRU4 => match s.lru4_mut() {
                    Some(table) if !table.is_empty() => {
                        let (set, t) = key();
                        table.lookup(set, t)
                    }
                    _ => None,
                },
                AnyTlbOrganisation::SetAssoc(s) => {
                    let (set, t) = key();
                    s.lookup_tag(set, t)
                }
                // A plain side holds set_assoc structures only.
                _ => None,
            };
            match hit {
                Some(d) => {
                    tlb.stats.hits += 1;
                    found = Some((k, d));
                }
                None => tlb.stats.misses += 1,
            }
            if st.ends_level && found.is_some() {
                break;
            }
        }
        let Some((k, d)) = found else {
            return Lookup::Miss { latency };
        };
        let st = side.plain[k];
        let (pfn_base, dirty, size, li) = (d >> 1, d & 1 == 1, st.size, st.level as usize);
        if li > 0 {
            self.promote(instr, li, st.tlb as usize, &Fill { va, asid, size, pfn: pfn_base, dirty });
        } else if self.memo_ok[instr as usize] {
            self.remember(instr, va, Memo::new(0, va, asid, size, pfn_base, dirty, latency, st.tlb));
        }
        Lookup::Hit { pfn_base, size, dirty, level: li, latency }
    }

    /// [`Self::lookup_plain`] of a side whose structures all keep 4-way LRU
    /// tables and share no level-1 structure with the other side, in a
    /// function of its own: no dispatch between the general, plain and LRU
    /// paths, no memo of the other side forgotten, and a frame small enough to keep
    /// its state in registers.
    #[inline(never)]
    fn lookup_lru4(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        self.lookup_lru4_inline(va, asid, instr)
    }

    /// [`Self::lookup_past_memo`] of a data access on a side of 4-way LRU
    /// tables ([`Self::lru4_data`]), inlined into its caller: a miss path
    /// that looks up and walks in one frame.
    #[inline(always)]
    pub(crate) fn lookup_lru4_inline(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        debug_assert!(self.lru4_side[instr as usize]);
        self.forget_slot(instr, va);
        self.lookup_plain::<true>(va, asid, instr)
    }

    /// Whether the data side's lookups past the memo take
    /// [`Self::lookup_lru4_inline`] (its structures all keep 4-way LRU tables).
    #[inline(always)]
    pub(crate) fn lru4_data(&self) -> bool {
        self.lru4_side[0]
    }

    /// The same hierarchy with every lookup on the general path (tests hold
    /// the plain path to it).
    #[cfg(test)]
    pub(crate) fn without_plain_path(mut self) -> Mmu {
        self.data.plain.clear();
        self.instr.plain.clear();
        self.data.plain_lru4 = false;
        self.instr.plain_lru4 = false;
        self.lru4_fill = Default::default();
        self.lru4_side = [false; 2];
        self
    }

    /// Index in `memo` of `va`'s slot of one side (in bounds by construction).
    #[inline(always)]
    fn memo_slot(&self, instr: bool, va: u64) -> usize {
        ((instr as usize) * MEMO_SLOTS | ((va >> 12) & self.memo_mask[instr as usize]) as usize) % (2 * MEMO_SLOTS)
    }

    /// Forget the memo in `va`'s slot of one side: a lookup or fill is about
    /// to touch the set of the slot's pages.
    #[inline(always)]
    fn forget_slot(&mut self, instr: bool, va: u64) {
        self.memo[self.memo_slot(instr, va)].gen = 0;
    }

    /// Forget every memo of one side (and of the other when a level-1
    /// structure serves both): something may have reordered any set.
    #[inline(always)]
    fn forget(&mut self, instr: bool) {
        self.memo_gen[instr as usize] += 1;
        if self.shared_l1 {
            self.memo_gen[!instr as usize] += 1;
        }
    }

    /// Memoise a level-1 hit of `va` (its slot was forgotten by the lookup).
    /// A hit outside the side's home structure may have reordered a set
    /// that another slot's page lives in: those are forgotten first.
    #[inline(always)]
    fn remember(&mut self, instr: bool, va: u64, mut m: Memo) {
        let s = instr as usize;
        if m.hit() != self.memo_home[s] as usize {
            self.forget(instr);
        }
        m.gen = self.memo_gen[s];
        self.memo[self.memo_slot(instr, va)] = m;
    }

    /// A fill of a `size` page at `va` into the side's structures: with 4
    /// KiB pages it changes only `va`'s set of the home structure (lower
    /// levels hold no memo), otherwise anything.
    #[inline(always)]
    fn forget_for_fill(&mut self, instr: bool, va: u64, size: PageSize) {
        if size == PageSize::Size4K && !self.shared_l1 {
            self.forget_slot(instr, va);
        } else {
            self.forget(instr);
        }
    }

    /// The general lookup. Out of line: sides of plain structures take
    /// [`Self::lookup_plain`], and this one's body would only enlarge it.
    #[inline(never)]
    fn lookup_slow(&mut self, va: u64, asid: Asid, instr: bool) -> Lookup {
        let mut latency = 0;
        let mut found = None;
        // Some structure that missed holds the page's group and takes the
        // page without a walk (only asked for when no level hits).
        let mut takes_subpage = false;
        let side = if instr { &self.instr } else { &self.data };
        for step in &side.probes {
            latency += step.latency;
            let t = step.tlb as usize;
            match self.tlbs[t].lookup(va, asid) {
                Probe::Hit { pfn, size, dirty } => found = Some((t, pfn, size, dirty, step.level as usize)),
                Probe::SubpageFill => takes_subpage = true,
                Probe::Miss | Probe::SubpageMiss => {}
            }
            if step.ends_level && found.is_some() {
                break;
            }
        }
        let Some((t, pfn_base, size, dirty, li)) = found else {
            if takes_subpage {
                return Lookup::SubpageFill { latency };
            }
            return Lookup::Miss { latency };
        };
        if li > 0 {
            self.promote(instr, li, t, &Fill { va, asid, size, pfn: pfn_base, dirty });
        } else if self.memo_ok[instr as usize] {
            let m = Memo::new(0, va, asid, size, pfn_base, dirty, latency, t as u16);
            self.remember(instr, va, m);
        }
        Lookup::Hit { pfn_base, size, dirty, level: li, latency }
    }

    /// A hit at level `li > 0` (structure `from`, translation `f`): bring it
    /// to the levels above. Out of line, so a level-1 lookup stays small.
    #[inline(never)]
    fn promote(&mut self, instr: bool, li: usize, from: usize, f: &Fill) {
        self.promote_entry(instr, li, from, f);
        self.after_fill(f, instr);
    }

    /// [`Self::promote`]'s fills.
    #[inline(always)]
    fn promote_entry(&mut self, instr: bool, li: usize, from: usize, f: &Fill) {
        match self.fill {
            FillPolicy::AllLevels => {
                // Every level above `li` was probed and missed.
                let entry = (tag(f.va >> f.size.shift(), f.size, f.asid), payload(f.pfn, f.dirty));
                if self.lru4_fill_above(instr, f.size, entry, li) {
                    return;
                }
                // The entry's other pages go up with it to structures that coalesce.
                let Mmu { tlbs, data, instr: instr_levels, scratch, promote_nb, .. } = self;
                let nb: &Neighbours = if promote_nb[instr as usize] && f.size == PageSize::Size4K {
                    tlbs[from].org.entry_neighbours(f.va, f.asid, scratch);
                    scratch
                } else {
                    &Neighbours::EMPTY
                };
                let side = if instr { &*instr_levels } else { &*data };
                for level in &side.levels[..li] {
                    if let Some(&i) = level.tlbs().iter().find(|&&i| tlbs[i as usize].holds(f.size)) {
                        tlbs[i as usize].fill_absent(f, entry, nb);
                    }
                }
            }
            FillPolicy::Victim => {
                let t = tag(f.va >> f.size.shift(), f.size, f.asid);
                self.tlbs[from].org.remove_entry(t);
                self.fill_cascade(instr, 0, t, payload(f.pfn, f.dirty));
            }
        }
    }

    /// Forget every memo of both sides.
    fn drop_memos(&mut self) {
        self.memo_gen[0] += 1;
        self.memo_gen[1] += 1;
    }

    /// Install a completed walk's translation. `nb`: the 4 KiB leaf
    /// translations around a 4 KiB page (the aligned run of
    /// [`Self::neighbours_wanted`] pages; empty when that is 0), or, for a
    /// page a GT-PDE maps, the run of [`Self::gt_neighbours_wanted`] pages
    /// decoded from it (marked `whole`; empty when that is 0).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn fill_walk(&mut self, va: u64, asid: Asid, instr: bool, size: PageSize, pfn_base: u64, dirty: bool, nb: &Neighbours) {
        self.install_walked(va, asid, instr, size, pfn_base, dirty, nb);
        self.after_fill(&Fill { va, asid, size, pfn: pfn_base, dirty }, instr);
    }

    /// After a fill of `f` that reached level 1: memoise it when it went to
    /// the home structure, else forget what it may have reordered.
    #[inline(always)]
    fn after_fill(&mut self, f: &Fill, instr: bool) {
        let s = instr as usize;
        if let (PageSize::Size4K, Some(clean), true) = (f.size, self.fill_memo[s], self.fill_memos[s].leave()) {
            // The page is now the most recent entry of its set in the home
            // structure (the level-1 structure its fill went to), and no other
            // set changed there, so its next lookup would hit and change
            // nothing: a repeat. (A home exists only without a shared level 1.)
            let key = f.va >> 12 | (f.asid as u64) << ASID_SHIFT;
            let m = Memo { gen: self.memo_gen[s], key, pfn_base: f.pfn, dirty: f.dirty, ..clean };
            let i = self.memo_slot(instr, f.va);
            self.memo[i] = m;
        } else {
            self.forget_for_fill(instr, f.va, f.size);
        }
    }

    /// Install `entry` (of a `size` page) directly into the 4-way LRU
    /// tables of the side's fill plan at levels below `levels`, where it
    /// missed: what `fill_absent` does for these structures, without the
    /// families. False when the side has no such plan.
    #[inline(always)]
    fn lru4_fill_above(&mut self, instr: bool, size: PageSize, entry: (u64, u64), levels: usize) -> bool {
        let Mmu { tlbs, lru4_fill, .. } = self;
        let direct = &lru4_fill[instr as usize][size.index()];
        for &(i, set_mask, level) in direct {
            if level as usize >= levels {
                break;
            }
            let tlb = &mut tlbs[i as usize];
            tlb.stats.fills += 1;
            let AnyTlbOrganisation::SetAssoc(s) = &mut tlb.org else { unreachable!("a plain side holds set_assoc structures") };
            let Some(t) = s.lru4_mut() else { unreachable!("a plain_lru4 side's tables are 4-way LRU") };
            if t.insert_after_miss((tag_vpn(entry.0) & set_mask) as u32, entry.0, entry.1).is_some() {
                tlb.stats.evictions += 1;
            }
        }
        !direct.is_empty()
    }

    /// [`Self::fill_walk`]'s fills.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    fn install_walked(&mut self, va: u64, asid: Asid, instr: bool, size: PageSize, pfn_base: u64, dirty: bool, nb: &Neighbours) {
        let f = Fill { va, asid, size, pfn: pfn_base, dirty };
        match self.fill {
            FillPolicy::AllLevels => {
                // The walk followed a miss at every level. A single-page
                // entry's tag and payload are the same in every structure.
                let entry = (tag(va >> size.shift(), size, asid), payload(pfn_base, dirty));
                if self.lru4_fill_above(instr, size, entry, usize::MAX) {
                    return;
                }
                let Mmu { tlbs, fill_plan, .. } = self;
                for &i in &fill_plan[instr as usize][size.index()] {
                    tlbs[i as usize].fill_absent(&f, entry, nb);
                }
            }
            FillPolicy::Victim => {
                let t = tag(va >> size.shift(), size, asid);
                self.fill_cascade(instr, 0, t, payload(pfn_base, dirty))
            }
        }
    }

    /// Victim policy: install an entry in the first structure of level `l`
    /// that holds its page size. Returns the eviction, or None (also when no
    /// structure holds the size).
    fn fill_level(&mut self, instr: bool, l: usize, t: u64, data: u64, absent: bool) -> Option<Entry> {
        let size = tag_size(t);
        let level = &self.side(instr).levels[l];
        let (ids, n) = (level.tlbs, level.n);
        for &i in &ids[..n] {
            let i = i as usize;
            if self.tlbs[i].holds(size) {
                return self.tlbs[i].insert_entry((t, data), absent);
            }
        }
        None
    }

    fn fill_cascade(&mut self, instr: bool, from_level: usize, t: u64, data: u64) {
        let nlev = self.side(instr).levels.len();
        let mut pending = Some((t, data));
        let mut l = from_level;
        while let (Some((t, d)), true) = (pending, l < nlev) {
            pending = self.fill_level(instr, l, t, d, false);
            l += 1;
        }
    }

    /// Set the dirty bit of every cached copy of `va`'s translation on one side.
    pub fn mark_dirty(&mut self, va: u64, asid: Asid, instr: bool) {
        self.forget(instr);
        if self.side(instr).plain_lru4 {
            // Each structure's one page size and set precomputed, the tables probed directly.
            let asid_tag = tag(0, PageSize::Size4K, asid);
            let Mmu { tlbs, data, instr: instr_side, .. } = self;
            for st in if instr { &instr_side.plain } else { &data.plain } {
                let AnyTlbOrganisation::SetAssoc(s) = &mut tlbs[st.tlb as usize].org else { unreachable!("a plain side holds set_assoc structures") };
                let Some(t) = s.lru4_mut().filter(|t| !t.is_empty()) else { continue };
                let vpn = va >> st.shift;
                t.set_dirty((vpn & st.set_mask) as u32, vpn | st.size_tag | asid_tag);
            }
            return;
        }
        let side = if instr { &self.instr } else { &self.data };
        for i in side.levels.iter().flat_map(|l| l.tlbs().iter().map(|&i| i as usize)) {
            self.tlbs[i].mark_dirty(va, asid);
        }
    }

    /// The first frame of the 4 KiB page containing `va` as cached in any
    /// structure (no side effects; for tests of shootdowns).
    pub fn peek(&self, va: u64, asid: Asid) -> Option<u64> {
        for tlb in &self.tlbs {
            // A probe on a copy: lookups update replacement state.
            let mut org = tlb.org.clone();
            if let organisation::Probe::Hit { pfn, size, .. } = org.lookup(va, asid) {
                return Some(pfn + ((va >> 12) & ((1 << size.order()) - 1)));
            }
        }
        None
    }

    /// Shootdown of one page's translation in every structure; returns the
    /// entries (or, in coalescing structures, sub-pages) removed.
    pub fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        self.drop_memos();
        self.tlbs.iter_mut().map(|t| t.invalidate_page(va, asid)).sum()
    }

    /// Remove every entry of one address space; returns entries removed.
    pub fn flush_asid(&mut self, asid: Asid) -> u64 {
        self.drop_memos();
        self.tlbs.iter_mut().map(|t| t.flush_asid(asid)).sum()
    }

    /// Every structure's five counters, with the repeats counted in bulk
    /// (memos dropped and live) added in.
    pub fn counters(&self) -> Vec<TlbStats> {
        // The structures' own counts and the repeat tallies.
        let mut stats: Vec<TlbStats> = self.tlbs.iter().map(|t| t.stats.clone()).collect();
        let hits = &self.repeat_hits;
        for instr in [false, true] {
            let repeats = self.repeats[instr as usize];
            let Some(level) = self.side(instr).levels.first() else { continue };
            for &t in level.tlbs() {
                let s = &mut stats[t as usize];
                s.lookups += repeats;
                s.misses += repeats;
            }
        }
        for (s, &h) in stats.iter_mut().zip(hits) {
            s.hits += h;
            s.misses -= h;
        }
        stats
    }

    /// Stats under `<name>.*` per structure (the machine adds `mmu.`).
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let stats = self.counters();
        for (t, s) in self.tlbs.iter().zip(&stats) {
            t.visit_with(s, v);
        }
    }
}

#[cfg(test)]
mod tests;
