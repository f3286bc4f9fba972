//! The hardware page walker and its paging-structure (MMU) caches.
//!
//! ## What it models
//! On a TLB miss the walker reads the x86-64 radix table entry by entry, by
//! physical address, from simulated physical memory. Each read is one walk
//! reference: it goes through the data-cache hierarchy from `walker.entry_level`
//! (l1d on Intel cores, l2 in the GTSM paper) and costs `walker.step_cycles`
//! plus the latency of the level that served it. The walker sets accessed bits
//! on every entry it uses and the dirty bit of the leaf on a store, as hardware
//! does (read-modify-write of the same word; the write is not a second reference).
//!
//! Paging-structure caches (`mmu.psc.pml5e|pml4e|pdpte|pde`) hold non-leaf
//! entries tagged by the virtual-address prefix they translate. All are probed
//! in parallel before the walk (each counts a lookup); the deepest hit gives the
//! node to start from, so a PDE-cache hit leaves one reference (the PTE), a
//! PDPTE hit two, and so on. Entries read by a walk fill the caches.
//!
//! ## The walk cursor
//! A walk is a [`WalkCursor`] that advances one reference at a time, so a
//! machine can keep many walks in flight, queue their references at a shared
//! cache and charge each one when it is served:
//! - [`Walker::start`] probes the PSCs and returns the cursor at the first
//!   entry to read ([`WalkStart::Walk`]), or the whole walk, already counted,
//!   when a PSC hit ends it with no reference ([`WalkStart::Done`]: a GT-PDE
//!   held whole);
//! - [`WalkCursor::next_paddr`] is the physical address of the entry the walk
//!   reads next;
//! - [`Walker::advance`] is told that reference was served in `ref_cycles`
//!   (the caller's cache and timing decide them; `advance` never touches a
//!   data cache): it reads the entry then, sets its accessed (and a leaf's
//!   dirty) bit, fills the PSC of a pointer read from memory and moves the
//!   cursor down a level, or returns what the walk found;
//! - [`Walker::finish`] counts the ended walk (references, cycles, leaf or
//!   fault) and returns what it found and its cycles.
//!
//! The CPU's [`Walker::walk`] is that loop, each reference served at once by
//! the data-cache hierarchy; it gives exactly the numbers of the single loop it
//! replaced, at the same instruction count (`docs/performance.md`, "walk
//! cursor"). A hand-driven loop gives exactly what `walk` gives (a property
//! test over every format, `walker/cursor_tests.rs`).
//!
//! Walk shortcuts (`Walker::shortcut`) start a walk at a recorded leaf
//! node and count the references above it without making them; they are
//! taken only when no number can tell (walks entering at DRAM, no PSCs). A
//! machine whose walk references meet a shared cache turns them off
//! ([`Walker::without_shortcuts`], or [`Walker::interleaved`] for walks in
//! flight together, which also makes PSC fills look for an entry another
//! walk filled meanwhile), and then every reference is yielded: a full walk
//! with no PSC hit yields one per level.
//!
//! ## Choices where the papers are silent
//! - Leaf entries (2 MiB/1 GiB pages) are never cached in the PSCs (they go to the TLB).
//! - A walk that meets a non-present entry stops there (`faulting_walks`); the OS
//!   model maps the page and the walk is retried, so a first touch costs two walks.
//! - The PSC latency (`mmu.psc.<x>.latency`, 0 by default: probed in parallel with
//!   the last TLB level, as in the GTSM paper) is added once per walk.

use crate::addr::{Asid, PageSize};
use crate::cache::{CacheHierarchy, Source};
use crate::config::spec::{MmuSpec, Spec};
use crate::error::Result;
use crate::pagetable::format::{FormatExt, PageTableFormat, Step};
use crate::physmem::PhysMem;
use crate::registry::{AnyFormat, AnyReplacement};
use crate::replacement::Geometry;
use crate::stats::{visit_prefixed, StatVisitor};
use crate::table::SetAssoc;

crate::stat_group! {
    pub struct WalkerStats {
        walks: "walks", "completed page walks (TLB misses resolved by walking)",
        data_walks: "walks", "completed walks for data accesses",
        instr_walks: "walks", "completed walks for instruction fetches",
        faulting_walks: "walks", "walks that found a non-present entry (page faults)",
        cycles: "cycles", "cycles spent in walks (all walks, incl. faulting)",
        data_cycles: "cycles", "walk cycles for data accesses",
        instr_cycles: "cycles", "walk cycles for instruction fetches",
        refs_total: "references", "page-table entries read by walks",
        refs_l1d: "references", "walk references served by L1D",
        refs_l2: "references", "walk references served by L2",
        refs_llc: "references", "walk references served by the LLC",
        refs_dram: "references", "walk references served by DRAM",
        accessed_updates: "entries", "accessed bits set by the walker",
        dirty_updates: "entries", "dirty bits set on leaf entries",
    }
}

crate::stat_group! {
    pub struct PscStats {
        lookups: "lookups", "walks that probed this cache",
        hits: "lookups", "probes that found the entry",
        fills: "entries", "entries installed",
    }
}

const LEAF_NAMES: [&str; PageSize::COUNT] = ["leaves_4k", "leaves_64k", "leaves_2m", "leaves_1g"];
const LEAF_DESCS: [&str; PageSize::COUNT] = [
    "completed walks that found a 4 KiB leaf (level 1)",
    "completed walks that found a 64 KiB leaf",
    "completed walks that found a 2 MiB leaf (level 2)",
    "completed walks that found a 1 GiB leaf (level 3)",
];

/// One paging-structure cache: caches level-`level` non-leaf entries.
#[derive(Clone, Debug)]
pub struct Psc {
    pub name: &'static str,
    /// Radix level of the cached entry (2 = PDE, 3 = PDPTE, 4 = PML4E, 5 = PML5E).
    pub level: u32,
    /// Shift of the virtual-address range one cached pointer covers: the
    /// range of the node it points to (an entry may hold several pointers).
    shift: u32,
    table: SetAssoc,
    set_mask: u64,
    latency: u32,
    pub stats: PscStats,
    /// For a cache of whole entries ([`PageTableFormat::psc_caches_entries`]),
    /// the entry held in each slot of `table`; empty otherwise.
    entries: Vec<CachedEntry>,
    /// Words of a whole entry (1 or 2).
    whole_words: u32,
}

/// An entry held whole by a paging-structure cache: its words (up to
/// two), the host links of each, and the host slot of the node it was read
/// from (for a translation's `node`).
#[derive(Copy, Clone, Debug, Default)]
struct CachedEntry {
    words: [u64; 2],
    links: [u32; 2],
    node: u32,
}

/// What a walk makes of a whole entry its PSC probe hit.
enum Cached {
    /// A pointer: the walk goes on at the node below (frame, host slot).
    Node(u64, u32),
    /// A leaf: the walk is over, with no reference, in these cycles.
    Leaf(WalkResult, u64),
    /// Of no use for this access (not present for its address, or a clean
    /// leaf under a store, whose dirty bit only memory can take): dropped.
    Stale,
}

impl Psc {
    /// Virtual-address prefix translated by a level-`level` entry.
    #[inline]
    fn key(&self, va: u64, asid: Asid) -> u64 {
        (va >> self.shift) | (asid as u64) << 48
    }
}

/// What a walk found.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum WalkResult {
    /// Leaf of `size` mapping the page that starts at frame `pfn_base`;
    /// `node` is the host slot of the node holding the entry read last, at
    /// radix `level` (1: a 4 KiB-level entry, whose neighbours in `node`
    /// are the translations of the neighbouring pages; above 1 a leaf such
    /// as a 2 MiB PDE or a GT-PDE, whose node holds no PTEs).
    Translated { pfn_base: u64, size: PageSize, dirty: bool, node: u32, level: u32 },
    /// A non-present entry at radix `level`.
    Fault { level: u32 },
}

/// A walk in progress, between two of its references: where it stands in
/// the table, and what it has cost so far. A machine that keeps many walks
/// in flight holds one per walk and serves each reference when it can:
/// [`Walker::start`], then [`WalkCursor::next_paddr`] and
/// [`Walker::advance`] until it returns what the walk found, then
/// [`Walker::finish`]. The CPU's [`Walker::walk`] is that loop with every
/// reference served at once (see the module docs).
///
/// The fields a step reads on every reference come first; what the walk's
/// caller fixed (address, ASID, access kind) stays in the cursor, so a
/// walk needs nothing else to go on.
#[derive(Copy, Clone, Debug)]
pub struct WalkCursor {
    va: u64,
    /// The node to read next (frame, host slot of its first frame) and its level.
    node: u64,
    /// The word the walk reads past padding, in the same node, when
    /// `padded` (see `PageTableFormat::padding_word`).
    pad_w: u64,
    /// References made (or counted by a shortcut) and cycles so far (the
    /// PSCs' latency included).
    refs: u64,
    cycles: u64,
    slot: u32,
    level: u32,
    asid: Asid,
    is_write: bool,
    instr: bool,
    padded: bool,
    /// A large page that keeps its node: the size found above the leaf read last.
    large: Option<PageSize>,
}

/// How a walk begins: at a cursor, or already over (a PSC held the leaf).
#[derive(Copy, Clone, Debug)]
pub enum WalkStart {
    /// The walk's first reference is at `next_paddr`.
    Walk(WalkCursor),
    /// What the walk found and its cycles, with no reference; already
    /// counted (do not [`Walker::finish`] it).
    Done(WalkResult, u64),
}

impl WalkCursor {
    #[inline(always)]
    fn at(va: u64, asid: Asid, is_write: bool, instr: bool, (node, slot, level): (u64, u32, u32), refs: u64, cycles: u64) -> WalkCursor {
        WalkCursor { va, node, pad_w: 0, refs, cycles, slot, level, asid, is_write, instr, padded: false, large: None }
    }

    /// The word of the entry read next, in its node.
    #[inline(always)]
    fn word<F: PageTableFormat>(&self, format: &F) -> u64 {
        if self.padded {
            self.pad_w
        } else {
            format.word(self.va, self.level)
        }
    }

    /// The physical address the walk reads next (before its end).
    #[inline(always)]
    pub fn next_paddr<F: PageTableFormat>(&self, format: &F) -> u64 {
        (self.node << 12) + self.word(format) * 8
    }

    /// The walk's level to read next (the table's levels count down to 1).
    pub fn level(&self) -> u32 {
        self.level
    }

    /// References the walk has made so far (with those a shortcut counted).
    pub fn refs(&self) -> u64 {
        self.refs
    }

    /// Cycles the walk has cost so far: the PSCs' latency, each served
    /// reference's `ref_cycles` and the decodes.
    pub fn cycles(&self) -> u64 {
        self.cycles
    }

    /// The address the walk translates.
    pub fn va(&self) -> u64 {
        self.va
    }
}

/// The walker of one core.
#[derive(Clone, Debug)]
pub struct Walker {
    format: AnyFormat,
    /// `format`'s level-1 index as `(shift, mask, words)`: the host prefetch
    /// runs on every access and would otherwise dispatch over the formats
    /// twice. Every format indexes a level by a mask of shifted address bits
    /// (a test holds each one to this).
    leaf_index: (u32, u64, u64),
    /// Completed walks that ended at a leaf its level's PSC holds whole
    /// (a GT-PDE), from memory or from the PSC: `walker.leaves_gt`,
    /// reported for GT tables.
    whole_leaves: u64,
    /// Whether walk cycles are counted in `walker.*cycles` (see [`Walker::build`]).
    count_cycles: bool,
    step_cycles: u32,
    /// Cycles of one reference that enters at DRAM (`step_cycles` plus the
    /// DRAM latency), taken once at build for walks that enter there.
    dram_ref_cycles: u64,
    /// Completed walks per leaf page size (`PageSize::index`).
    leaves: [u64; PageSize::COUNT],
    /// Virtual-address shift of the range one leaf node covers (hint keys).
    hint_shift: u32,
    /// Cache level index where references enter (== number of levels: DRAM).
    entry: usize,
    levels: u32,
    /// Present PSCs, deepest (lowest level) first.
    pscs: Vec<Psc>,
    psc_latency: u32,
    pub stats: WalkerStats,
    /// Map from a cache-level index to its refs counter slot (l1d/l2/llc/dram).
    level_slot: Vec<u8>,
    /// Per (ASID, 2 MiB region), the host slot of its leaf node, recorded by
    /// walks that reach it. The machine prefetches leaf entries a few
    /// accesses ahead through it (a stale hint only costs a useless
    /// prefetch). A hint recorded in the current table epoch is also a
    /// proven path: see [`Walker::shortcut`].
    hints: Vec<Hint>,
    /// Walks may start at a hint's leaf node ([`Walker::shortcut`]).
    shortcuts: bool,
    /// Walks may be in flight together ([`Walker::interleaved`]): a PSC
    /// fill looks for the entry another walk may have filled since this
    /// walk's probe missed.
    interleaved: bool,
    /// Walks that started at a hint's leaf node (tests check they happen).
    #[cfg(test)]
    pub(crate) shortcut_walks: u64,
    /// The PSC and slot of a hit in a PSC of whole entries, from the
    /// probe to the walk that decodes it.
    whole_hit: Option<(u8, u32)>,
    /// Per radix level, the index in `pscs` of the PSC caching that level's
    /// entries (`NO_PSC` if none).
    psc_at: [u8; 6],
}

const NO_PSC: u8 = u8::MAX;

/// The key of `va`'s leaf node in the hint table; `shift` is the format's
/// `node_shift(1)` (a constant in a walk, where the format is concrete).
#[inline(always)]
fn hint_key(va: u64, asid: Asid, shift: u32) -> u64 {
    (va >> shift) & ((1 << 36) - 1) | (asid as u64) << 36
}

/// A recorded path to a leaf node (see [`Walker::hints`]).
#[derive(Copy, Clone, Debug)]
struct Hint {
    key: u64,
    /// [`PhysMem::table_epoch`] when the path was walked.
    epoch: u64,
    /// The leaf node's frame (low 40 bits) and host slot, as in a PSC entry.
    link: u64,
}

impl Hint {
    #[inline]
    fn node(&self) -> (u64, u32) {
        (self.link & PSC_PFN_MASK, (self.link >> PSC_SLOT_SHIFT) as u32)
    }
}

const HINTS: usize = 1 << 13;

/// A PSC entry's payload (and a hint's link): the next node's frame (low 40 bits) and its host slot.
const PSC_SLOT_SHIFT: u32 = 40;
const PSC_PFN_MASK: u64 = (1 << PSC_SLOT_SHIFT) - 1;

const SLOT_NAMES: [&str; 4] = ["l1d", "l2", "llc", "dram"];

impl Walker {
    /// `count_cycles`: whether walk cycles go into `walker.cycles` (the
    /// CPU interval model's choice; off in the TLB-only model). Every walk
    /// returns its cycles either way.
    pub fn build(spec: &Spec, format: &AnyFormat, cache_names: &[&'static str], seed: u64) -> Result<Walker> {
        let entry = if spec.walker.entry_level == "dram" {
            cache_names.len()
        } else {
            cache_names.iter().position(|n| *n == spec.walker.entry_level).unwrap_or(cache_names.len())
        };
        let mut level_slot: Vec<u8> =
            cache_names.iter().map(|n| SLOT_NAMES.iter().position(|s| s == n).unwrap_or(3) as u8).collect();
        level_slot.push(3);
        let pscs = build_pscs(&spec.mmu, format, seed)?;
        // With MMU caches the walk must probe them and fill them from the
        // entries it reads, and references entering a cache level must each
        // be looked up, so only DRAM-entering walks without PSCs take shortcuts.
        let shortcuts = entry >= cache_names.len() && pscs.is_empty() && format.allows_shortcuts();
        let psc_latency = pscs.iter().map(|p| p.latency).max().unwrap_or(0);
        let mut psc_at = [NO_PSC; 6];
        for (i, p) in pscs.iter().enumerate() {
            psc_at[p.level as usize] = i as u8;
        }
        Ok(Walker {
            count_cycles: spec.timing.enabled,
            format: format.clone(),
            leaf_index: leaf_index(format),
            step_cycles: spec.walker.step_cycles,
            dram_ref_cycles: spec.walker.step_cycles as u64 + spec.cache.dram_latency as u64,
            leaves: [0; PageSize::COUNT],
            whole_leaves: 0,
            hint_shift: format.node_shift(1),
            entry,
            levels: format.levels(),
            pscs,
            psc_latency,
            stats: WalkerStats::default(),
            level_slot,
            hints: vec![Hint { key: u64::MAX, epoch: 0, link: 0 }; HINTS],
            shortcuts,
            interleaved: false,
            #[cfg(test)]
            shortcut_walks: 0,
            whole_hit: None,
            psc_at,
        })
    }

    /// The same walker keyed for the geometry of `format` (its PSCs, hints
    /// and leaf index), for tests of format contracts with formats made for
    /// them, which the registry cannot build.
    #[cfg(test)]
    pub(crate) fn keyed_for<F: PageTableFormat>(mut self, format: &F) -> Walker {
        self.leaf_index = leaf_index(format);
        self.hint_shift = format.node_shift(1);
        for p in &mut self.pscs {
            p.shift = psc_shift(format, p.level);
        }
        self
    }

    /// Walk the table rooted at frame `root` (host slot `root_slot`) for `va`.
    /// Returns what was found and the walk's cycles.
    ///
    /// The CPU's walk: a loop over the steps of a [`WalkCursor`], each
    /// reference served at once by the data caches.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn walk<F: PageTableFormat>(
        &mut self,
        format: &F,
        va: u64,
        asid: Asid,
        root: (u64, u32),
        is_write: bool,
        instr: bool,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
    ) -> (WalkResult, u64) {
        // References entering below every cache level all go to DRAM: they are
        // counted once after the walk instead of one by one.
        let direct = self.entry >= caches.num_levels();
        let mut c = match self.start(format, va, asid, root, is_write, instr, mem) {
            WalkStart::Walk(c) => c,
            WalkStart::Done(r, cycles) => return (r, cycles),
        };
        let result = loop {
            let ref_cycles = if direct { 0 } else { self.reference(caches, c.next_paddr(format)) };
            if let Some(r) = self.advance(format, &mut c, mem, ref_cycles) {
                break r;
            }
        };
        if direct {
            self.stats.refs_dram += c.refs;
            caches.count_dram(Source::Walk, c.refs);
            debug_assert_eq!(self.dram_ref_cycles, (self.step_cycles + caches.latency_of(self.entry)) as u64);
            c.cycles += c.refs * self.dram_ref_cycles;
        }
        self.finish(&c, result)
    }

    /// [`Walker::walk`] when it is one reference long: a shortcut walk
    /// (see [`Walker::shortcut`]) on a machine whose references all go to
    /// DRAM, whose leaf node holds `va`'s translation as a present entry or
    /// holds no entry for it (a fault at level 1, as on a first touch). The
    /// same reads, bits, counts and cycles as `walk`, without its cursor and
    /// loop, which a CPU's walk would otherwise carry on every TLB miss.
    /// `None` (nothing read, set or counted) for every other walk: the
    /// caller walks it in full.
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn walk_hinted<F: PageTableFormat>(
        &mut self,
        format: &F,
        va: u64,
        asid: Asid,
        is_write: bool,
        instr: bool,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
    ) -> Option<(WalkResult, u64)> {
        if format.psc_caches_entries(1) || self.entry < caches.num_levels() {
            return None;
        }
        let (_, slot) = self.shortcut(hint_key(va, asid, format.node_shift(1)), mem)?;
        let (es, w) = format.locate(1, slot, format.word(va, 1));
        let raw = mem.read_entry(es, w);
        let leaf = match format.decode(raw, 1, va, asid, &|k| mem.read_entry(es, w + k as u64)) {
            Step::Leaf { pfn_base, size } => Some((pfn_base, size)),
            // Past padding a walk reads a second entry: not a walk of one reference.
            Step::NotPresent if format.padding_word(va, 1).is_none() => None,
            _ => return None,
        };
        #[cfg(test)]
        {
            self.shortcut_walks += 1;
        }
        // Every level counted as one DRAM reference, as `walk` counts a
        // shortcut walk's levels above the leaf node and its one reference.
        let refs = self.levels as u64;
        let cycles = self.psc_latency as u64 + format.decode_cycles(raw, 1) as u64 + refs * self.dram_ref_cycles;
        self.stats.refs_dram += refs;
        caches.count_dram(Source::Walk, refs);
        self.stats.refs_total += refs;
        let Some((pfn_base, size)) = leaf else {
            self.stats.faulting_walks += 1;
            self.account(instr, cycles, false);
            return Some((WalkResult::Fault { level: 1 }, cycles));
        };
        // As `advance` does at a leaf: its accessed (and a store's dirty) bit.
        let new = format.used(raw, true, is_write);
        if new != raw {
            self.stats.accessed_updates += !format.is_accessed(raw) as u64;
            self.stats.dirty_updates += (format.is_dirty(new) != format.is_dirty(raw)) as u64;
            mem.write_linked(es, w, new);
        }
        self.leaves[size.index()] += 1;
        self.account(instr, cycles, true);
        let dirty = is_write || format.is_dirty(raw);
        Some((WalkResult::Translated { pfn_base, size, dirty, node: slot, level: 1 }, cycles))
    }

    /// Begin a walk of the table rooted at frame `root` (host slot
    /// `root_slot`) for `va`: the PSC probes (or the host shortcut), and the
    /// cursor at the first entry to read; or the whole walk, counted, when a
    /// PSC hit ends it before any reference (a GT-PDE held whole).
    ///
    /// A walk that starts from a shortcut (only with shortcuts on: see
    /// [`Walker::without_shortcuts`]) starts with `refs()` above zero:
    /// references to the levels above the leaf node, counted and not
    /// yielded, each one a reference that enters at DRAM, which the caller
    /// charges as such (`Walker::walk` charges every reference of such a
    /// walk at once, after its loop).
    #[allow(clippy::too_many_arguments)]
    #[inline(always)]
    pub fn start<F: PageTableFormat>(
        &mut self,
        format: &F,
        va: u64,
        asid: Asid,
        (root, root_slot): (u64, u32),
        is_write: bool,
        instr: bool,
        mem: &PhysMem,
    ) -> WalkStart {
        let key = hint_key(va, asid, format.node_shift(1));
        if let Some((leaf, leaf_slot)) = self.shortcut(key, mem) {
            // The levels above were read and found present with their
            // accessed bits set, and are unchanged: reading them again would
            // only count references. The walk started from its hint needs
            // not record it again.
            #[cfg(test)]
            {
                self.shortcut_walks += 1;
            }
            let refs = self.levels as u64 - 1;
            return WalkStart::Walk(WalkCursor::at(va, asid, is_write, instr, (leaf, leaf_slot, 1), refs, self.psc_latency as u64));
        }
        let (node, slot, level) = if self.pscs.is_empty() {
            (root, root_slot, self.levels)
        } else {
            let start = self.probe_pscs(format, va, asid, root, root_slot);
            let whole = if format.psc_caches_any_entries() { self.whole_hit.take() } else { None };
            match whole {
                None => start,
                Some(hit) => match self.cached(format, hit, va, asid, is_write, instr) {
                    Cached::Node(node, slot) => (node, slot, self.pscs[hit.0 as usize].level - 1),
                    Cached::Leaf(r, cycles) => return WalkStart::Done(r, cycles),
                    Cached::Stale => start,
                },
            }
        };
        if level == 1 {
            self.record_hint(key, mem, node, slot);
        }
        WalkStart::Walk(WalkCursor::at(va, asid, is_write, instr, (node, slot, level), 0, self.psc_latency as u64))
    }

    /// The walk's reference at `c.next_paddr(format)` was served in
    /// `ref_cycles` (decided by the caller: the walker's step cycles and the
    /// latency of whatever served it): read the entry, set its accessed (and
    /// a leaf's dirty) bit, fill the PSC of a pointer read from memory, and
    /// move the cursor on (`None`: its next reference is at `next_paddr`);
    /// or end the walk with what it found (then [`Walker::finish`] it).
    /// Entries are read when their reference is served, not when it is
    /// issued, so walks in flight together see each other's bits as
    /// hardware does. Counts no served level (`walker.refs_l1d` ...): the
    /// caller knows which level served the reference.
    #[inline(always)]
    pub fn advance<F: PageTableFormat>(&mut self, format: &F, c: &mut WalkCursor, mem: &mut PhysMem, ref_cycles: u64) -> Option<WalkResult> {
        let (va, asid, is_write) = (c.va, c.asid, c.is_write);
        let (node, slot, level) = (c.node, c.slot, c.level);
        let w = c.word(format);
        c.refs += 1;
        c.cycles += ref_cycles;
        let w_node = w;
        // The frame holding word `w` of a node of several frames, and the word in it.
        let (es, w) = format.locate(level, slot, w);
        let raw = mem.read_entry(es, w);
        debug_assert_eq!(raw, mem.read_u64((node << 12) + w_node * 8), "host slot out of step with the table");
        let mut step = format.decode(raw, level, va, asid, &|k| mem.read_entry(es, w + k as u64));
        if c.padded && !matches!(step, Step::Next { .. }) {
            // Past padding only a pointer serves.
            step = Step::NotPresent;
        }
        c.cycles += format.decode_cycles(raw, level) as u64;
        let leaf = matches!(step, Step::Leaf { .. });
        // The word the walk uses: a step down's pointer, else the entry's first.
        let uw = match step {
            Step::Next { .. } => w + format.table_word(va, level) as u64,
            _ => w,
        };
        if step != Step::NotPresent {
            let used = if uw == w { raw } else { mem.read_entry(es, uw) };
            let new = format.used(used, leaf, is_write);
            if new != used {
                self.stats.accessed_updates += !format.is_accessed(used) as u64;
                self.stats.dirty_updates += (format.is_dirty(new) != format.is_dirty(used)) as u64;
                mem.write_linked(es, uw, new);
            }
        }
        match step {
            Step::NotPresent => {
                if let Some(pw) = format.padding_word(va, level).filter(|_| !c.padded) {
                    (c.padded, c.pad_w) = (true, pw);
                    return None;
                }
                Some(WalkResult::Fault { level })
            }
            Step::Leaf { pfn_base, size } => {
                if format.psc_caches_entries(level) {
                    // A leaf its level's PSC holds whole (a GT-PDE): counted and cached.
                    self.whole_leaves += 1;
                    self.fill_whole(level, va, asid, mem, (es, w), mem.read_entry(es, w), slot);
                }
                let dirty = is_write || format.is_dirty(raw);
                let found = match c.large {
                    None => WalkResult::Translated { pfn_base, size, dirty, node: slot, level },
                    Some(big) => {
                        // A piece (4 or 64 KiB) of a large page: its first frame from the piece's.
                        let within = (va >> 12) & ((1 << big.order()) - 1) & !((1 << size.order()) - 1);
                        WalkResult::Translated { pfn_base: pfn_base - within, size: big, dirty, node: slot, level }
                    }
                };
                Some(found)
            }
            Step::LargeViaNext { node: next, size } => {
                c.large = Some(size);
                c.slot = mem.entry_link(es, w);
                c.node = next;
                c.level -= 1;
                if c.level == 1 {
                    self.record_hint(hint_key(va, asid, format.node_shift(1)), mem, next, c.slot);
                }
                None
            }
            Step::Next { node: next } => {
                c.padded = false;
                let child = mem.entry_link(es, uw);
                // A non-leaf entry read from memory: remember it in the PSC for this level.
                if format.psc_caches_entries(level) {
                    self.fill_whole(level, va, asid, mem, (es, w), mem.read_entry(es, w), slot);
                } else if let Some(&p) = self.psc_at.get(level as usize).filter(|&&p| p != NO_PSC) {
                    let p = &mut self.pscs[p as usize];
                    let key = p.key(va, asid);
                    let set = (key & p.set_mask) as u32;
                    let link = next | (child as u64) << PSC_SLOT_SHIFT;
                    if self.interleaved {
                        // Another walk may have filled it since this one's probe.
                        p.table.insert(set, key, link);
                    } else {
                        // This level was read, so its PSC missed at the start of the walk.
                        p.table.insert_after_miss(set, key, link);
                    }
                    p.stats.fills += 1;
                }
                c.node = next;
                c.slot = child;
                c.level -= 1;
                if c.level == 1 {
                    self.record_hint(hint_key(va, asid, format.node_shift(1)), mem, next, child);
                }
                None
            }
        }
    }

    /// Count an ended walk (its references, cycles, leaf or fault) and
    /// return what it found (`result`, as [`Walker::advance`] returned it)
    /// and its cycles.
    #[inline(always)]
    pub fn finish(&mut self, c: &WalkCursor, result: WalkResult) -> (WalkResult, u64) {
        self.stats.refs_total += c.refs;
        match result {
            WalkResult::Fault { .. } => {
                self.stats.faulting_walks += 1;
                self.account(c.instr, c.cycles, false);
            }
            WalkResult::Translated { size, .. } => {
                self.leaves[size.index()] += 1;
                self.account(c.instr, c.cycles, true);
            }
        }
        (result, c.cycles)
    }

    /// One walk reference through the cache hierarchy: counts the level that
    /// served it and returns its cycles. Out of line so the walk loop of a
    /// cache-less machine stays small.
    #[inline(never)]
    fn reference(&mut self, caches: &mut CacheHierarchy, paddr: u64) -> u64 {
        let served = caches.access(paddr, false, self.entry, Source::Walk);
        match self.level_slot[served.level as usize] {
            0 => self.stats.refs_l1d += 1,
            1 => self.stats.refs_l2 += 1,
            2 => self.stats.refs_llc += 1,
            _ => self.stats.refs_dram += 1,
        }
        (self.step_cycles + served.latency) as u64
    }

    /// Probe every PSC (each counts a lookup); the deepest hit gives the node,
    /// host slot and level the walk starts from. A hit in a PSC of whole
    /// entries is left in `whole_hit` (PSC, slot) for the walk to decode;
    /// for a format without such PSCs that test folds away, and the start
    /// comes back in two registers.
    #[inline(never)]
    fn probe_pscs<F: PageTableFormat>(&mut self, format: &F, va: u64, asid: Asid, root: u64, root_slot: u32) -> (u64, u32, u32) {
        let (mut node, mut slot, mut level) = (root, root_slot, self.levels);
        for (i, p) in self.pscs.iter_mut().enumerate() {
            p.stats.lookups += 1;
            let key = p.key(va, asid);
            let set = (key & p.set_mask) as u32;
            if let Some(s) = p.table.lookup(set, key) {
                p.stats.hits += 1;
                if format.psc_caches_entries(p.level) {
                    // A whole entry: the walk decodes it (see `Walker::cached`).
                    self.whole_hit = Some((i as u8, s as u32));
                } else if p.level - 1 < level {
                    let d = p.table.data(s);
                    node = d & PSC_PFN_MASK;
                    slot = (d >> PSC_SLOT_SHIFT) as u32;
                    level = p.level - 1;
                }
            }
        }
        (node, slot, level)
    }

    /// What the whole entry in slot `s` of PSC `i` says for `va`; a stale
    /// one is dropped from the cache.
    #[inline(never)]
    fn cached<F: PageTableFormat>(&mut self, format: &F, (i, s): (u8, u32), va: u64, asid: Asid, is_write: bool, instr: bool) -> Cached {
        let p = &mut self.pscs[i as usize];
        let e = p.entries[s as usize];
        let level = p.level;
        match format.decode(e.words[0], level, va, asid, &|k| e.words[k as usize]) {
            Step::Next { node } => Cached::Node(node, e.links[format.table_word(va, level) as usize]),
            Step::Leaf { pfn_base, size } if !is_write || format.is_dirty(e.words[0]) => {
                // Decoded from the cache: the PSC's latency and the decode, and no reference.
                let cycles = self.psc_latency as u64 + format.decode_cycles(e.words[0], level) as u64;
                self.leaves[size.index()] += 1;
                self.whole_leaves += 1;
                self.account(instr, cycles, true);
                let dirty = format.is_dirty(e.words[0]);
                Cached::Leaf(WalkResult::Translated { pfn_base, size, dirty, node: e.node, level }, cycles)
            }
            _ => {
                p.table.invalidate_slot(s as usize);
                Cached::Stale
            }
        }
    }

    /// Keep the entry at word `w` of the node in host slot `es` (read by
    /// this walk at `level`; its first word is now `w0`) whole in the PSC of
    /// that level, when that PSC holds whole entries.
    #[inline(never)]
    fn fill_whole(&mut self, level: u32, va: u64, asid: Asid, mem: &PhysMem, (es, w): (u32, u64), w0: u64, node: u32) {
        let Some(&i) = self.psc_at.get(level as usize).filter(|&&i| i != NO_PSC) else { return };
        let p = &mut self.pscs[i as usize];
        if p.entries.is_empty() {
            return;
        }
        let key = p.key(va, asid);
        let set = (key & p.set_mask) as u32;
        let two = p.whole_words == 2;
        let e = CachedEntry {
            words: [w0, if two { mem.read_entry(es, w + 1) } else { 0 }],
            links: [mem.entry_link(es, w), if two { mem.entry_link(es, w + 1) } else { 0 }],
            node,
        };
        if self.interleaved {
            p.table.insert(set, key, 0);
        } else {
            p.table.insert_after_miss(set, key, 0);
        }
        let s = p.table.probe(set, key).expect("just inserted");
        p.entries[s] = e;
        p.stats.fills += 1;
    }

    /// The host slot of the leaf node a walk for `va` reaches, when it is
    /// known without reading the levels above: on a machine whose walks
    /// enter at DRAM and that has no MMU caches (their references are only
    /// counted), a hint recorded in the current table epoch. The walk that
    /// recorded it read every level above, found each entry present and set
    /// its accessed bit; in the same epoch none of them has changed (see
    /// `PhysMem::table_epoch`), so walking them again would find the same
    /// leaf node and change nothing but the reference count.
    #[inline(always)]
    fn shortcut(&self, key: u64, mem: &PhysMem) -> Option<(u64, u32)> {
        if !self.shortcuts {
            return None;
        }
        let h = self.hints[(key as usize) & (HINTS - 1)];
        (h.key == key && h.epoch == mem.table_epoch()).then(|| h.node())
    }

    /// Record that `key`'s leaf node is the node `node` in host `slot`, in
    /// the current table epoch: a walk is about to read its level-1 entry.
    #[inline(always)]
    fn record_hint(&mut self, key: u64, mem: &PhysMem, node: u64, slot: u32) {
        let epoch = mem.table_epoch();
        let h = &mut self.hints[(key as usize) & (HINTS - 1)];
        if h.key != key || h.epoch != epoch {
            *h = Hint { key, epoch, link: node | (slot as u64) << PSC_SLOT_SHIFT };
        }
    }

    /// The same walker with walk shortcuts off: every reference of every
    /// walk is made, and yielded by [`WalkCursor::next_paddr`] and
    /// [`Walker::advance`] (a full walk with no PSC hit makes one per level).
    /// A shortcut changes no number of the CPU machine, whose walks enter
    /// at DRAM and have no PSCs when it is taken (tests compare both); a
    /// machine whose walk references go through a shared cache must see
    /// each of them.
    pub fn without_shortcuts(mut self) -> Walker {
        self.shortcuts = false;
        self
    }

    /// The same walker for a machine that keeps several walks in flight
    /// and interleaves their steps (the GPU's highly threaded walker):
    /// walk shortcuts off ([`Walker::without_shortcuts`]), and a PSC fill
    /// replaces the entry another walk filled after this walk's probe
    /// missed instead of installing a second copy. The CPU machine, which
    /// runs each walk to its end, needs neither.
    pub fn interleaved(mut self) -> Walker {
        self.shortcuts = false;
        self.interleaved = true;
        self
    }

    /// Whether walks may start at a recorded leaf node (see [`Walker::without_shortcuts`]).
    pub fn shortcuts(&self) -> bool {
        self.shortcuts
    }

    /// Prefetch (on the host) the leaf entry a walk for `va` would read, if known.
    #[inline]
    pub fn prefetch_leaf(&self, va: u64, asid: Asid, mem: &PhysMem) {
        let key = hint_key(va, asid, self.hint_shift);
        let h = self.hints[(key as usize) & (HINTS - 1)];
        if h.key == key {
            mem.prefetch_entry(h.node().1, self.leaf_word(va));
        }
    }

    /// Word of `va`'s entry in its leaf node: `format.word(va, 1)`.
    #[inline(always)]
    fn leaf_word(&self, va: u64) -> u64 {
        let (shift, mask, words) = self.leaf_index;
        ((va >> shift) & mask) * words
    }

    #[inline]
    fn account(&mut self, instr: bool, cycles: u64, completed: bool) {
        let cycles = if self.count_cycles { cycles } else { 0 };
        self.stats.cycles += cycles;
        if instr {
            self.stats.instr_cycles += cycles;
        } else {
            self.stats.data_cycles += cycles;
        }
        if completed {
            self.stats.walks += 1;
            if instr {
                self.stats.instr_walks += 1;
            } else {
                self.stats.data_walks += 1;
            }
        }
    }

    /// Drop every PSC entry (e.g. after page-table changes).
    pub fn flush_pscs(&mut self) {
        for p in &mut self.pscs {
            p.table.flush();
        }
    }

    /// Walker stats (`walker.*`) and PSC stats (`mmu.psc.<name>.*`) are
    /// visited separately. Leaves are counted for every size the format maps.
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats, v);
        for size in self.format.sizes() {
            let i = size.index();
            v.counter(LEAF_NAMES[i], self.leaves[i], "walks", LEAF_DESCS[i]);
        }
        if matches!(self.format, AnyFormat::GtPde(_)) {
            v.counter("leaves_gt", self.whole_leaves, "walks", "completed walks that ended at a GT-PDE (counted in leaves_4k too)");
        }
    }

    /// Completed walks that found a leaf of `size`.
    pub fn leaves(&self, size: PageSize) -> u64 {
        self.leaves[size.index()]
    }


    pub fn visit_pscs(&self, v: &mut dyn StatVisitor) {
        for p in &self.pscs {
            visit_prefixed(p.name, &p.stats, v);
        }
    }
}

/// `format`'s level-1 index as `(shift, mask, words)` (see [`Walker::leaf_index`]).
fn leaf_index<F: PageTableFormat>(format: &F) -> (u32, u64, u64) {
    (format.level_shift(1), format.index(u64::MAX, 1), format.level_entry_words(1) as u64)
}

/// The key shift of a PSC of level-`level` entries: the range of the node
/// one cached pointer leads to (less than the entry's range when an entry
/// holds several pointers).
fn psc_shift<F: PageTableFormat>(format: &F, level: u32) -> u32 {
    if format.psc_caches_entries(level) {
        // A whole entry is tagged by the range it covers.
        format.level_shift(level)
    } else {
        format.node_shift(level - 1)
    }
}

fn build_pscs(spec: &MmuSpec, format: &AnyFormat, seed: u64) -> Result<Vec<Psc>> {
    let mut v = Vec::new();
    for (name, level) in [("pde", 2u32), ("pdpte", 3), ("pml4e", 4), ("pml5e", 5)] {
        if let Some(p) = spec.psc.get(name) {
            let ways = p.ways.resolve(p.entries);
            let sets = p.entries / ways;
            let path = format!("mmu.psc.{name}");
            let repl = AnyReplacement::build(
                &p.replacement,
                &Geometry { sets, ways, seed: crate::rng::sub_seed(seed, &path) },
                &format!("{path}.replacement"),
            )?;
            let whole = format.psc_caches_entries(level);
            v.push(Psc {
                name,
                level,
                shift: psc_shift(format, level),
                table: SetAssoc::new(sets, ways, repl),
                set_mask: (sets - 1) as u64,
                latency: p.latency,
                stats: PscStats::default(),
                entries: if whole { vec![CachedEntry::default(); (sets * ways) as usize] } else { Vec::new() },
                whole_words: format.level_entry_words(level).min(2),
            });
            if whole && format.level_entry_words(level) > 2 {
                return Err(crate::error::Error::config(
                    format!("mmu.psc.{name}"),
                    "a PSC holds whole entries of at most two words; this page-table format's are wider",
                ));
            }
        }
    }
    Ok(v)
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod gt_tests;
#[cfg(test)]
mod cursor_tests;
