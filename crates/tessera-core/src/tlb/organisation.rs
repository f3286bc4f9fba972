//! The TLB organisation family: what one entry of a TLB structure covers, how
//! a structure is filled, and what a lookup can find (`mmu.tlb.<name>.organisation`).
//!
//! ## Lifecycle
//! - `build(cfg, ctx)` once, from the structure's geometry ([`TlbCtx`]).
//! - Per access, the hierarchy ([`super::Mmu`]) calls [`TlbOrganisation::lookup`]
//!   on every structure it probes. A hit makes the entry most recently used; a
//!   miss or a sub-page miss changes no replacement state.
//! - After a walk, or a hit at a lower level under `mmu.fill = "all_levels"`,
//!   it calls [`TlbOrganisation::fill`] with the translation and the 4 KiB
//!   leaf translations around it ([`super::Neighbours`]; empty for
//!   organisations that want none, see [`TlbOrganisation::neighbours_wanted`];
//!   after a walk that ended at a GT-PDE, the pages that entry maps, marked
//!   `whole`, which only organisations whose
//!   [`TlbOrganisation::gt_neighbours_wanted`] is not 0 may use).
//! - A lookup that ends in [`Probe::SubpageFill`] in every level it reached
//!   (and hit nowhere) is served without a walk: the machine reads the page's
//!   translation from the page table at no cost and hands it to `fill` like a
//!   walk's (no neighbours); a page that is not mapped walks and faults as usual.
//! - `mark_dirty`, `invalidate_page` and `flush_asid` keep every copy of a
//!   translation consistent with the page table.
//! - Under `mmu.fill = "victim"` single-page entries move between levels
//!   ([`TlbOrganisation::insert_entry`], [`TlbOrganisation::remove_entry`]);
//!   only organisations whose [`TlbOrganisation::moves_entries`] is true may
//!   take part (config resolution rejects the others).
//!
//! ## Counting
//! The owning [`super::Tlb`] counts the five counters every structure has
//! (`lookups hits misses fills evictions`): a lookup returning
//! [`Probe::SubpageMiss`] or [`Probe::SubpageFill`] counts as a miss, every `fill`/`insert_entry` as a
//! fill, and an eviction when it reports one. An organisation counts only its
//! own extra counters and reports them from `visit_stats`.

use crate::addr::{Asid, PageSize};
use crate::registry::MechanismSpec;
use crate::stats::StatVisitor;

use super::Neighbours;

/// What one structure found for an address.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Probe {
    /// `pfn` is the first frame of the page of `size` that contains the
    /// address; for a sub-page of a coalesced entry, the 4 KiB sub-page's own
    /// frame, with `size` 4 KiB.
    Hit { pfn: u64, size: PageSize, dirty: bool },
    /// Nothing here covers the address.
    Miss,
    /// An entry covers the address's group of pages, but not this page. The
    /// hierarchy treats it as a miss.
    SubpageMiss,
    /// As [`Probe::SubpageMiss`], and the organisation takes the page into
    /// that entry without a walk: if no level hits, the hierarchy reports
    /// [`super::Lookup::SubpageFill`] and the machine fills the page's
    /// translation, read from the page table at no cost, when it is mapped
    /// (the mosaic TLB of the gem5 model, whose sub-page valid bit is set on
    /// such a miss).
    SubpageFill,
}

/// One translation to install: the page of `size` containing `va`, whose first
/// frame is `pfn`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Fill {
    pub va: u64,
    pub asid: Asid,
    pub size: PageSize,
    pub pfn: u64,
    pub dirty: bool,
}

/// A single-page entry as the victim fill policy moves it between levels:
/// a tag packed by [`super::tag`] and a payload `first frame << 1 | dirty`.
pub type Entry = (u64, u64);

/// What a structure's organisation is built from.
#[derive(Clone, Debug)]
pub struct TlbCtx {
    pub entries: u32,
    /// Resolved associativity (`"full"` = `entries`).
    pub ways: u32,
    /// `entries / ways`, a power of two.
    pub sets: u32,
    /// Page sizes the structure holds, in probe order.
    pub page_sizes: Vec<PageSize>,
    /// The structure's resolved replacement policy.
    pub replacement: MechanismSpec,
    /// The structure's own sub-seed (already split by `path`).
    pub seed: u64,
    /// Config path of the structure, `mmu.tlb.<name>`.
    pub path: String,
}

impl TlbCtx {
    /// The structure's table of `sets × ways` entries under its replacement policy.
    pub fn table<D: crate::table::set_assoc::Payload>(&self) -> crate::error::Result<crate::table::SetAssoc<D>> {
        let repl = crate::registry::AnyReplacement::build(
            &self.replacement,
            &crate::replacement::Geometry { sets: self.sets, ways: self.ways, seed: self.seed },
            &format!("{}.replacement", self.path),
        )?;
        Ok(crate::table::SetAssoc::new(self.sets, self.ways, repl))
    }

    /// An organisation `kind` that groups 4 KiB pages needs a structure that holds them.
    pub fn require_4k(&self, kind: &str) -> crate::error::Result<()> {
        if self.page_sizes.contains(&PageSize::Size4K) {
            return Ok(());
        }
        let path = &self.path;
        Err(crate::error::Error::config(
            format!("{path}.organisation"),
            format!(
                "\"{kind}\" groups 4 KiB pages, but this structure holds none; add \"4k\" to {path}.page_sizes or use organisation = \"set_assoc\""
            ),
        ))
    }
}

/// One TLB organisation. Every method is on the per-access path or close to
/// it: none may allocate.
pub trait TlbOrganisation {
    /// Probe for `va` in address space `asid`. A hit makes the entry most
    /// recently used; a miss or sub-page miss changes no replacement state.
    fn lookup(&mut self, va: u64, asid: Asid) -> Probe;

    /// Install `f` (a page size the structure holds). `nb`: the 4 KiB leaf
    /// translations around `f` (may be empty, or cover more or fewer pages
    /// than the organisation wants). `absent`: the caller knows `f.va` just
    /// missed here ([`Probe::Miss`]) and nothing filled the structure since.
    /// Returns whether a valid entry was evicted.
    fn fill(&mut self, f: &Fill, nb: &Neighbours, absent: bool) -> bool;

    /// Victim policy only: install a single-page entry; return the valid
    /// single-page entry it evicted.
    fn insert_entry(&mut self, e: Entry, absent: bool) -> Option<Entry>;

    /// Victim policy only: remove the single-page entry with this tag; true if present.
    fn remove_entry(&mut self, tag: u64) -> bool;

    /// Whether the structure can take part in `mmu.fill = "victim"`: its
    /// entries are single pages that move between levels unchanged.
    fn moves_entries(&self) -> bool;

    /// Whether a level-1 hit covers every address with the same
    /// `va >> size.shift()`, and repeating the most recent hit changes nothing
    /// but `lookups` and `hits` (so the hierarchy may memoise it and the
    /// machine may count runs of repeats in bulk).
    fn memo_safe(&self) -> bool;

    /// Whether a lookup of `va` now would end in [`Probe::SubpageFill`] (no
    /// side effects). The hierarchy learns it from the lookup itself; tests
    /// hold the two to each other.
    fn subpage_fill(&self, _va: u64, _asid: Asid) -> bool {
        false
    }

    /// The aligned run of 4 KiB leaf translations, in pages, that a fill of a
    /// 4 KiB page can use (0: none).
    fn neighbours_wanted(&self) -> u32;

    /// The aligned run of 4 KiB translations, in pages, that a fill of a
    /// 4 KiB page mapped by a leaf above level 1 (a GT-PDE) can use, decoded
    /// from that leaf ([`Neighbours::whole`]); 0: the structure does not
    /// understand such leaves and takes none of them.
    fn gt_neighbours_wanted(&self) -> u32 {
        0
    }

    /// The 4 KiB translations the entry covering `va` holds, as neighbours for
    /// filling the levels above after a hit here (`out.len = 0` if none).
    fn entry_neighbours(&self, va: u64, asid: Asid, out: &mut Neighbours);

    /// Set the dirty bit of the translation of `va`'s page, if held.
    fn mark_dirty(&mut self, va: u64, asid: Asid);

    /// Shootdown of `va`'s page (every page size held); returns the number of
    /// entries or sub-pages removed.
    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64;

    /// Remove every entry of one address space; returns the entries removed.
    fn flush_asid(&mut self, asid: Asid) -> u64;

    /// Valid entries.
    fn occupancy(&self) -> usize;

    /// The organisation's own counters (not the five the owner counts).
    fn visit_stats(&self, v: &mut dyn StatVisitor);
}
