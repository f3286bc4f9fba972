//! Shadow TLB structures (`[mmu.shadow.<name>]`): TLB designs that watch the
//! machine's translations without taking part in them.
//!
//! ## What it models
//! Nothing in the machine: a measuring device. Each shadow is a TLB
//! structure (entries, ways, replacement, organisation, page sizes) that sees
//! every 4 KiB-page translation of its side the machine makes (the stream
//! the level-1 TLBs see: an access crossing a 4 KiB boundary translates both
//! pages), looks it up, and on a miss fills itself from the translation the
//! machine obtained, plus the page's 4 KiB neighbours read from the page
//! table at no cost when its organisation wants them. It never changes the
//! machine's timing, walks or any other counter. Shootdowns reach it as they
//! reach the TLBs. One run can so compare any number of TLB designs on one
//! access stream exactly: the vanilla and Mosaic-4…64 TLBs at every
//! associativity of Fig. 6 of "Mosaic Pages: Big TLB Reach with Small Pages"
//! (ASPLOS 2023, DOI 10.1145/3582016.3582021), whose gem5 model likewise fed
//! each access to a vanilla and a mosaic TLB, each with its own walker.
//!
//! ## Choices
//! - A shadow's miss fills it as a walk would fill a level-1 structure (one
//!   level, walks on every miss): a hit elsewhere in the machine's hierarchy
//!   makes no difference to it. A sub-page miss of a mosaic shadow in
//!   `subpage_miss = "fill"` takes that page only; any other miss is filled
//!   with the neighbours the organisation wants.
//! - A store that hits a clean shadow entry marks it dirty (the machine has
//!   set the page's dirty bit).
//! - With shadows, the machine counts every access one by one (its bulk
//!   count of repeated accesses would skip them); its own counters are the
//!   same either way (a test checks the bulk path against the per-access one).
//! - Replacement is seeded from the shadow's own path, `mmu.shadow.<name>`.
//!
//! ## Config
//! `[mmu.shadow.<name>]`: `entries`, `ways` (or `"full"`), `replacement`
//! (`lru`), `organisation` (`set_assoc`), as a TLB structure; `side`
//! (`data`, `instr` or `unified`; default `data`); `page_sizes` (default
//! 4 KiB and every size the page-size policy maps; it must hold all of them).
//!
//! ## Stats
//! Per shadow, under `mmu.shadow.<name>.`: the five every TLB structure has
//! (`lookups hits misses fills evictions`) and its organisation's own.

use std::collections::BTreeMap;

use super::{Fill, Neighbours, Probe, Tlb, TlbOrganisation};
use crate::addr::{Asid, PageSize};
use crate::config::spec::{FillPolicy, ShadowSpec, Side};
use crate::error::Result;
use crate::stats::{Prefixed, StatVisitor};

/// Every shadow structure of a machine.
#[derive(Clone, Debug)]
pub struct Shadows {
    tlbs: Vec<Tlb>,
    /// `[data, instr]`: the shadows that see that side's translations.
    sides: [Vec<usize>; 2],
    /// Largest run of neighbours any shadow wants on a 4 KiB fill.
    nb_wanted: u32,
    /// Largest run any shadow wants on a 4 KiB fill from a GT-PDE.
    gt_wanted: u32,
    nb: Box<Neighbours>,
}

impl Shadows {
    /// The shadows of a resolved `mmu.shadow` table; None when there are none.
    pub fn build(specs: &BTreeMap<String, ShadowSpec>, seed: u64) -> Result<Option<Box<Shadows>>> {
        if specs.is_empty() {
            return Ok(None);
        }
        let mut tlbs = Vec::new();
        for (name, s) in specs {
            tlbs.push(Tlb::build_at(format!("mmu.shadow.{name}"), name, &s.as_tlb(), FillPolicy::AllLevels, seed)?);
        }
        let on = |side: Side| (0..tlbs.len()).filter(|&i| tlbs[i].side == side || tlbs[i].side == Side::Unified).collect();
        let sides = [on(Side::Data), on(Side::Instr)];
        let nb_wanted = tlbs.iter().map(|t| t.org.neighbours_wanted()).max().unwrap_or(0);
        let gt_wanted = tlbs.iter().map(|t| t.org.gt_neighbours_wanted()).max().unwrap_or(0);
        Ok(Some(Box::new(Shadows { tlbs, sides, nb_wanted, gt_wanted, nb: Box::new(Neighbours::EMPTY) })))
    }

    /// The structures (for tests and reports).
    pub fn tlbs(&self) -> &[Tlb] {
        &self.tlbs
    }

    /// The machine translated `f.va` (page of `f.size` at `f.pfn`; `f.dirty`:
    /// the page is dirty after this access) on one side; `write`: the access
    /// is a store. `neighbours(n, gt_n, out)` reads the aligned run of `n`
    /// 4 KiB leaves around the page, or, when a GT-PDE maps the page, the
    /// run of `gt_n` pages decoded from it (none when `gt_n` is 0); it is
    /// called at most once, and only if a shadow that wants neighbours
    /// misses on a 4 KiB page.
    #[inline]
    pub fn observe(&mut self, f: &Fill, instr: bool, write: bool, mut neighbours: impl FnMut(u32, u32, &mut Neighbours)) {
        let Shadows { tlbs, sides, nb_wanted, gt_wanted, nb } = self;
        let mut nb_read = false;
        for &i in &sides[instr as usize] {
            let t = &mut tlbs[i];
            match t.lookup(f.va, f.asid) {
                Probe::Hit { pfn, size, dirty } => {
                    debug_assert_eq!(
                        pfn + ((f.va >> 12) & ((1 << size.order()) - 1)),
                        f.pfn + ((f.va >> 12) & ((1 << f.size.order()) - 1)),
                        "shadow {} holds a stale translation of {:#x}",
                        t.name,
                        f.va
                    );
                    if write && !dirty {
                        t.mark_dirty(f.va, f.asid);
                    }
                }
                // The organisation takes this page alone, as it would without a walk.
                // (`absent` as after any miss of the hierarchy: every fill of a
                // structure passes true, so the fill is compiled for it alone.)
                Probe::SubpageFill => t.fill(f, &Neighbours::EMPTY, true),
                Probe::Miss | Probe::SubpageMiss => {
                    let wants = f.size == PageSize::Size4K && t.org.neighbours_wanted() > 0;
                    if wants && !nb_read {
                        neighbours(*nb_wanted, *gt_wanted, nb);
                        nb_read = true;
                    }
                    t.fill(f, if wants { nb } else { &Neighbours::EMPTY }, true);
                }
            }
        }
    }

    /// Shootdown of one page's translation in every shadow (not counted
    /// among the machine's shot-down entries).
    pub fn invalidate_page(&mut self, va: u64, asid: Asid) {
        for t in &mut self.tlbs {
            t.invalidate_page(va, asid);
        }
    }

    /// The first frame of the 4 KiB page containing `va` as held in any
    /// shadow (no side effects; for tests of shootdowns).
    pub fn peek(&self, va: u64, asid: Asid) -> Option<u64> {
        for t in &self.tlbs {
            let mut org = t.org.clone();
            if let Probe::Hit { pfn, size, .. } = org.lookup(va, asid) {
                return Some(pfn + ((va >> 12) & ((1 << size.order()) - 1)));
            }
        }
        None
    }

    /// Stats under `shadow.<name>.*` (the machine adds `mmu.`).
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let mut p = Prefixed::new("shadow", v);
        for t in &self.tlbs {
            t.visit_with(&t.stats, &mut p);
        }
    }
}
