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
//!
//! ## Config
//! `organisation = "set_assoc"` (the default; no parameters). Geometry and
//! replacement come from the structure (`entries`, `ways`, `replacement`).
//!
//! ## Stats
//! Only the five every structure has: `mmu.<name>.{lookups,hits,misses,fills,evictions}`.

use super::organisation::{Entry, Fill, Probe, TlbCtx, TlbOrganisation};
use super::{payload, tag, tag_asid, tag_vpn, Neighbours};
use crate::addr::{Asid, PageSize};
use crate::error::Result;
use crate::registry::{AnyReplacement, Mechanism};
use crate::replacement::Geometry;
use crate::stats::StatVisitor;
use crate::table::SetAssoc as Table;
use serde::{Deserialize, Serialize};

/// `organisation = "set_assoc"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct SetAssoc {
    sizes: [PageSize; PageSize::COUNT],
    n_sizes: usize,
    table: Table,
    set_mask: u64,
}

impl Mechanism for SetAssoc {
    const NAME: &'static str = "set_assoc";
    const SUMMARY: &'static str = "one entry per page, sets indexed by virtual page number (the conventional TLB)";
    type Config = Config;
    type Ctx = TlbCtx;
    fn build(_: &Config, ctx: &TlbCtx) -> Result<Self> {
        let repl = AnyReplacement::build(
            &ctx.replacement,
            &Geometry { sets: ctx.sets, ways: ctx.ways, seed: ctx.seed },
            &format!("{}.replacement", ctx.path),
        )?;
        let mut sizes = [PageSize::Size4K; PageSize::COUNT];
        for (i, s) in ctx.page_sizes.iter().enumerate() {
            sizes[i] = *s;
        }
        Ok(SetAssoc {
            sizes,
            n_sizes: ctx.page_sizes.len(),
            table: Table::new(ctx.sets, ctx.ways, repl),
            set_mask: (ctx.sets - 1) as u64,
        })
    }
}

impl SetAssoc {
    #[inline(always)]
    fn set_of(&self, vpn: u64) -> u32 {
        (vpn & self.set_mask) as u32
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
        for &size in &self.sizes[..self.n_sizes] {
            let vpn = va >> size.shift();
            if let Some(slot) = self.table.lookup(self.set_of(vpn), tag(vpn, size, asid)) {
                let data = self.table.data(slot);
                return Probe::Hit { pfn: data >> 1, size, dirty: data & 1 == 1 };
            }
        }
        Probe::Miss
    }

    #[inline(always)]
    fn fill(&mut self, f: &Fill, _nb: &Neighbours, absent: bool) -> bool {
        let t = tag(f.va >> f.size.shift(), f.size, f.asid);
        self.insert_entry((t, payload(f.pfn, f.dirty)), absent).is_some()
    }

    #[inline(always)]
    fn insert_entry(&mut self, (t, data): Entry, absent: bool) -> Option<Entry> {
        let set = self.set_of(tag_vpn(t));
        if absent {
            self.table.insert_after_miss(set, t, data)
        } else {
            self.table.insert(set, t, data)
        }
    }

    fn remove_entry(&mut self, t: u64) -> bool {
        let set = self.set_of(tag_vpn(t));
        self.table.invalidate(set, t)
    }

    fn moves_entries(&self) -> bool {
        true
    }

    fn memo_safe(&self) -> bool {
        true
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
            if let Some(slot) = self.table.probe(self.set_of(vpn), tag(vpn, size, asid)) {
                *self.table.data_mut(slot) |= 1;
            }
        }
    }

    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        let mut n = 0;
        for k in 0..self.n_sizes {
            let size = self.sizes[k];
            let vpn = va >> size.shift();
            if self.table.invalidate(self.set_of(vpn), tag(vpn, size, asid)) {
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
