//! Mosaic TLB: one entry maps a mosaic page, an aligned group of `arity`
//! virtually consecutive 4 KiB pages, through a table of contents of their
//! frames.
//!
//! ## What it models
//! A TLB tagged by mosaic virtual page number (MVPN = 4 KiB VPN >> log2
//! arity) and ASID, set-associative by MVPN (`set = (va >> (12 + log2
//! arity)) mod sets`), from direct-mapped to fully associative (the
//! structure's `ways`). An entry holds, per sub-page, a valid bit, the
//! sub-page's frame and a dirty bit. In hardware the entry holds a table of
//! contents (ToC) of compressed frame numbers (CPFNs, 7 bits each) that the
//! Iceberg hash decodes into frames; Tessera keeps the decoded frame, which
//! is what the CPFN stands for, so any frame allocator can back it and the
//! translations stay exact. Replacement evicts whole mosaic pages.
//!
//! ## Paper
//! Gosakan et al., "Mosaic Pages: Big TLB Reach with Small Pages", ASPLOS
//! 2023, DOI 10.1145/3582016.3582021: §2.1 (mosaic pages, MVPN, ToC), §2.2
//! (CPFNs), §3.1 (the gem5 mosaic TLB: a valid bit per sub-page, LRU of
//! whole mosaic pages, an invalidation of one sub-page clears only its
//! bit), §4.1 and Fig. 6 (TLB misses of vanilla and Mosaic-4…64 TLBs of
//! 1024 entries, direct-mapped to fully associative).
//!
//! ## Choices where the paper is silent (the authors' gem5 model)
//! - A lookup that finds the entry with this sub-page's bit set is a hit;
//!   one that finds no entry is an *entry miss*, which walks; one that finds
//!   the entry with the bit clear is a *sub-page miss*. Any lookup that
//!   finds the entry (hit or sub-page miss) makes it most recently used.
//! - `subpage_miss = "fill"` (default, the gem5 model): a sub-page miss
//!   counts as a miss and the sub-page becomes valid in that entry with no
//!   walk and no eviction ([`super::Probe::SubpageFill`]: the machine reads
//!   the translation from the page table at no cost; an unmapped sub-page
//!   walks and faults as usual). A fill into a present entry then sets that
//!   sub-page only. `"walk"`: a sub-page miss walks like an entry miss, and
//!   the walk's fill rebuilds the present entry's ToC from the group's leaf
//!   entries (sub-pages it does not see are kept).
//! - An entry miss's fill builds the ToC from the present leaf entries of
//!   the aligned group (the walked page, plus the neighbours the walker
//!   hands over: the whole group, as the ToC leaf of the paper's radix tree
//!   holds it). A page larger than 4 KiB (e.g. 2 MiB) makes every sub-page
//!   of the group that it covers valid, each with its own frame; a hit on
//!   one reports the large page (its first frame and size), as the page
//!   table maps it.
//! - A hit at a lower level fills this structure with that page only (a
//!   mosaic entry below hands its group's 4 KiB sub-pages up as well).
//! - Invalidation of one page clears its sub-page; the entry is freed with
//!   its last sub-page. Invalidation of a large page clears the sub-pages
//!   it covers in every entry. Dirty bits are kept per sub-page.
//! - Not memo-safe: a repeated hit is not a repeat of the same entry's
//!   state when sub-pages change, and nothing proves otherwise; the level-1
//!   memo is off on a side with a mosaic level-1 structure.
//! - `mmu.fill = "victim"` is rejected: a mosaic entry is not a single page.
//!
//! ## Config
//! `organisation = { kind = "mosaic", arity = <power of two, 4..=64> (default
//! 4), subpage_miss = "fill" | "walk" (default "fill") }`. The structure must
//! hold 4 KiB pages; `entries × arity` frames must fit in 2^24.
//!
//! ## Stats
//! The five every structure has, and `mmu.<name>.entry_misses` (lookups that
//! found no entry), `mmu.<name>.subpage_misses` (lookups that found the
//! entry without this sub-page; `misses` is their sum),
//! `mmu.<name>.toc_hits` (hits on a sub-page made valid by a fill for another
//! page of its group: the reach the ToC adds), `mmu.<name>.subpage_invalidations`
//! and `mmu.<name>.entries_freed` (entries freed by invalidating their last
//! sub-page).

use super::organisation::{Entry, Fill, Probe, TlbCtx, TlbOrganisation};
use super::{tag, tag_asid, tag_size, tag_vpn, Neighbours, MAX_GROUP, NOT_PRESENT};
use crate::addr::{Asid, PageSize};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stats::{StatGroup, StatVisitor};
use crate::table::SetAssoc as Table;
use serde::{Deserialize, Deserializer, Serialize};

/// Smallest and largest arity (the paper's range).
pub const MIN_ARITY: u32 = 4;
pub const MAX_ARITY: u32 = MAX_GROUP as u32;
/// Most sub-page frames a structure may hold (`entries × arity`; 128 MiB of host memory).
pub const MAX_SUBPAGES: u64 = 1 << 24;

crate::stat_group! {
    pub struct MosaicStats {
        entry_misses: "accesses", "lookups that found no entry for the mosaic page (also counted in misses)",
        subpage_misses: "accesses", "lookups that found the mosaic page's entry without this sub-page (also counted in misses)",
        toc_hits: "accesses", "hits on a sub-page made valid by a fill for another page of its group",
        subpage_invalidations: "entries", "valid sub-pages cleared by invalidations",
        entries_freed: "entries", "entries freed by invalidating their last valid sub-page",
    }
}

/// What a sub-page miss does.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum SubpageMiss {
    /// The sub-page becomes valid without a walk (the gem5 model).
    #[default]
    Fill,
    /// The sub-page miss walks like an entry miss.
    Walk,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// 4 KiB pages per mosaic page: a power of two from 4 to 64.
    #[serde(default = "d_arity", deserialize_with = "de_arity")]
    pub arity: u32,
    #[serde(default)]
    pub subpage_miss: SubpageMiss,
}

fn d_arity() -> u32 {
    4
}

impl Default for Config {
    fn default() -> Self {
        Config { arity: d_arity(), subpage_miss: SubpageMiss::Fill }
    }
}

/// Why `arity` is not allowed, if it is not.
fn arity_problem(a: u32) -> Option<String> {
    (!(a.is_power_of_two() && (MIN_ARITY..=MAX_ARITY).contains(&a)))
        .then(|| format!("{a} pages: must be a power of two from {MIN_ARITY} to {MAX_ARITY}"))
}

fn de_arity<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    let a = u32::deserialize(d)?;
    match arity_problem(a) {
        Some(msg) => Err(serde::de::Error::custom(msg)),
        None => Ok(a),
    }
}

/// Payload of one entry: one bit per sub-page in each mask. The frames
/// live beside the table ([`Mosaic::frames`]).
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Toc {
    valid: u64,
    dirty: u64,
    /// Installed by a fill for that very sub-page (or by a large page's fill).
    own: u64,
    /// Sub-pages of a page larger than 4 KiB, of size `PageSize::ALL[large_size]`.
    large: u64,
    large_size: u8,
}

#[derive(Clone, Debug)]
pub struct Mosaic {
    table: Table<Toc>,
    set_mask: u64,
    log2_arity: u32,
    arity: u64,
    subpage_miss: SubpageMiss,
    /// `frames[slot << log2_arity | j]`: frame of sub-page `j` of the entry in `slot`.
    frames: Vec<u64>,
    /// Page sizes larger than 4 KiB the structure holds.
    large_sizes: [PageSize; PageSize::COUNT],
    n_large: usize,
    /// Some fill was of a large page (until then an invalidation need not look for one).
    held_large: bool,
    stats: MosaicStats,
}

impl Mechanism for Mosaic {
    const NAME: &'static str = "mosaic";
    const SUMMARY: &'static str =
        "one entry per mosaic page (an aligned group of 4 KiB pages) holding a frame and valid bit per sub-page (Mosaic Pages)";
    type Config = Config;
    type Ctx = TlbCtx;
    fn build(cfg: &Config, ctx: &TlbCtx) -> Result<Self> {
        let path = &ctx.path;
        if let Some(msg) = arity_problem(cfg.arity) {
            return Err(Error::config(format!("{path}.organisation.arity"), msg));
        }
        ctx.require_4k("mosaic")?;
        let slots = ctx.sets as u64 * ctx.ways as u64;
        if slots * cfg.arity as u64 > MAX_SUBPAGES {
            return Err(Error::config(
                format!("{path}.organisation.arity"),
                format!(
                    "{slots} entries × {} sub-pages = {} sub-page frames, more than the {MAX_SUBPAGES} a structure may hold; use fewer entries or a smaller arity",
                    cfg.arity,
                    slots * cfg.arity as u64
                ),
            ));
        }
        let table = ctx.table()?;
        let mut large_sizes = [PageSize::Size4K; PageSize::COUNT];
        let mut n_large = 0;
        for &s in ctx.page_sizes.iter().filter(|&&s| s != PageSize::Size4K) {
            large_sizes[n_large] = s;
            n_large += 1;
        }
        Ok(Mosaic {
            table,
            set_mask: (ctx.sets - 1) as u64,
            log2_arity: cfg.arity.trailing_zeros(),
            arity: cfg.arity as u64,
            subpage_miss: cfg.subpage_miss,
            frames: vec![NOT_PRESENT; (slots * cfg.arity as u64) as usize],
            large_sizes,
            n_large,
            held_large: false,
            stats: MosaicStats::default(),
        })
    }
}

/// Bits `lo..hi` of a u64 (`hi <= 64`).
#[inline]
fn bits(lo: u64, hi: u64) -> u64 {
    if hi <= lo {
        return 0;
    }
    let n = hi - lo;
    (if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }) << lo
}

impl Mosaic {
    /// Set and tag of the entry of 4 KiB page `vpn`, and its sub-page.
    #[inline(always)]
    fn group_of(&self, vpn: u64, asid: Asid) -> (u32, u64, u64) {
        let g = vpn >> self.log2_arity;
        ((g & self.set_mask) as u32, tag(g, PageSize::Size4K, asid), vpn & (self.arity - 1))
    }

    #[inline(always)]
    fn frame(&self, slot: usize, j: u64) -> u64 {
        self.frames[slot << self.log2_arity | j as usize]
    }

    /// The sub-pages of the group starting at 4 KiB page `first` that the
    /// page of `size` containing 4 KiB page `vpn` covers.
    fn covered(&self, first: u64, vpn: u64, size: PageSize) -> u64 {
        let order = size.order();
        let page_first = vpn >> order << order;
        let lo = page_first.max(first) - first;
        let hi = (page_first + (1u64 << order)).min(first + self.arity) - first;
        bits(lo, hi)
    }

    /// The sub-pages of the entry in `slot` that belong to pages of `size`.
    fn large_of(&self, slot: usize, size: PageSize) -> u64 {
        let e = self.table.data(slot);
        if e.large_size as usize == size.index() {
            e.large
        } else {
            0
        }
    }

    /// Clear the sub-pages `mask` of the entry in `slot`; free it with its
    /// last one. Returns the valid sub-pages cleared.
    fn clear(&mut self, slot: usize, mask: u64) -> u64 {
        let e = self.table.data_mut(slot);
        let m = e.valid & mask;
        if m == 0 {
            return 0;
        }
        e.valid &= !m;
        e.dirty &= !m;
        e.own &= !m;
        e.large &= !m;
        let freed = e.valid == 0;
        if freed {
            self.table.invalidate_slot(slot);
            self.stats.entries_freed += 1;
        }
        let n = m.count_ones() as u64;
        self.stats.subpage_invalidations += n;
        n
    }

    /// Clear, in every entry, the sub-pages of the page of `size` containing
    /// `va` that came from fills of pages of that size.
    fn invalidate_large(&mut self, va: u64, size: PageSize, asid: Asid) -> u64 {
        let order = size.order();
        let page_first = (va >> 12) >> order << order;
        let first_group = page_first >> self.log2_arity;
        let last_group = (page_first + (1u64 << order) - 1) >> self.log2_arity;
        let groups = last_group - first_group + 1;
        let slots = self.frames.len() >> self.log2_arity;
        let mut n = 0;
        if groups > slots as u64 {
            // A 1 GiB page spans more groups than the structure has entries: scan the entries.
            for slot in 0..slots {
                let t = self.table.tag(slot);
                if t == crate::table::set_assoc::INVALID || tag_asid(t) != asid {
                    continue;
                }
                let g = tag_vpn(t);
                if (first_group..=last_group).contains(&g) {
                    let mask = self.large_of(slot, size) & self.covered(g << self.log2_arity, page_first, size);
                    n += self.clear(slot, mask);
                }
            }
        } else {
            for g in first_group..=last_group {
                let (set, t, _) = self.group_of(g << self.log2_arity, asid);
                if let Some(slot) = self.table.probe(set, t) {
                    let mask = self.large_of(slot, size) & self.covered(g << self.log2_arity, page_first, size);
                    n += self.clear(slot, mask);
                }
            }
        }
        n
    }
}

impl TlbOrganisation for Mosaic {
    // Out of line, here and in `fill`: inlined into the family's dispatch,
    // a mosaic arm makes every other organisation's calls dearer.
    #[inline(never)]
    fn lookup(&mut self, va: u64, asid: Asid) -> Probe {
        let vpn = va >> 12;
        let (set, t, j) = self.group_of(vpn, asid);
        // Found with or without this sub-page, the entry becomes most recently used.
        let Some(slot) = self.table.lookup(set, t) else {
            self.stats.entry_misses += 1;
            return Probe::Miss;
        };
        let e = self.table.data(slot);
        if e.valid >> j & 1 == 0 {
            self.stats.subpage_misses += 1;
            return match self.subpage_miss {
                SubpageMiss::Fill => Probe::SubpageFill,
                SubpageMiss::Walk => Probe::SubpageMiss,
            };
        }
        if e.own >> j & 1 == 0 {
            self.stats.toc_hits += 1;
        }
        let frame = self.frame(slot, j);
        let dirty = e.dirty >> j & 1 == 1;
        if e.large >> j & 1 == 0 {
            Probe::Hit { pfn: frame, size: PageSize::Size4K, dirty }
        } else {
            let size = PageSize::ALL[e.large_size as usize];
            Probe::Hit { pfn: frame - (vpn & ((1u64 << size.order()) - 1)), size, dirty }
        }
    }

    #[inline(never)]
    fn fill(&mut self, f: &Fill, nb: &Neighbours, _absent: bool) -> bool {
        // The pages a GT-PDE maps are not leaves this organisation reads.
        let nb = if nb.whole { &Neighbours::EMPTY } else { nb };
        let vpn = f.va >> 12;
        let (set, t, j) = self.group_of(vpn, f.asid);
        let first = vpn - j;
        // A present entry becomes most recently used; an absent one is installed
        // empty, so that its frames are written in the one pass below.
        let (slot, old, evicted) = match self.table.lookup(set, t) {
            Some(slot) => (slot, Some(self.table.data(slot)), false),
            None => {
                let ev = self.table.insert_after_miss(set, t, Toc::default());
                (self.table.probe(set, t).expect("just installed"), None, ev.is_some())
            }
        };
        let row = slot << self.log2_arity;
        // The sub-pages this fill installs (their frames written), their dirty bits, and which are large.
        let (valid, dirty, large) = if f.size == PageSize::Size4K {
            let (mut v, mut d) = (1u64 << j, (f.dirty as u64) << j);
            self.frames[row | j as usize] = f.pfn;
            // A present entry takes the group's leaves only when a sub-page miss walks.
            if old.is_none() || self.subpage_miss == SubpageMiss::Walk {
                for k in 0..self.arity {
                    if k != j {
                        if let Some((p, dk)) = nb.get(first + k) {
                            self.frames[row | k as usize] = p;
                            v |= 1 << k;
                            d |= (dk as u64) << k;
                        }
                    }
                }
            }
            (v, d, 0)
        } else {
            self.held_large = true;
            let m = self.covered(first, vpn, f.size);
            let page_first = vpn >> f.size.order() << f.size.order();
            let mut rest = m;
            while rest != 0 {
                let k = rest.trailing_zeros() as u64;
                rest &= rest - 1;
                self.frames[row | k as usize] = f.pfn + (first + k - page_first);
            }
            (m, if f.dirty { m } else { 0 }, m)
        };
        let own = if large != 0 { valid } else { 1 << j };
        let large_size = if large != 0 { f.size.index() as u8 } else { old.map_or(0, |o| o.large_size) };
        // Sub-pages the fill does not install keep their state.
        let old = old.unwrap_or_default();
        let kept = old.valid & !valid;
        *self.table.data_mut(slot) = Toc {
            valid: valid | kept,
            dirty: dirty | (old.dirty & kept),
            own: own | (old.own & kept),
            large: large | (old.large & kept),
            large_size,
        };
        evicted
    }

    /// Not reached: config resolution rejects `mmu.fill = "victim"` with this
    /// organisation. Installs the page alone and reports no victim.
    fn insert_entry(&mut self, (t, data): Entry, _absent: bool) -> Option<Entry> {
        let size = tag_size(t);
        let f = Fill { va: tag_vpn(t) << size.shift(), asid: tag_asid(t), size, pfn: data >> 1, dirty: data & 1 == 1 };
        self.fill(&f, &Neighbours::EMPTY, false);
        None
    }

    /// Not reached (see `insert_entry`): removes that page's translation.
    fn remove_entry(&mut self, t: u64) -> bool {
        let size = tag_size(t);
        self.invalidate_page(tag_vpn(t) << size.shift(), tag_asid(t)) > 0
    }

    fn moves_entries(&self) -> bool {
        false
    }

    fn memo_safe(&self) -> bool {
        false
    }

    fn subpage_fill(&self, va: u64, asid: Asid) -> bool {
        let (set, t, j) = self.group_of(va >> 12, asid);
        self.subpage_miss == SubpageMiss::Fill && self.table.probe(set, t).is_some_and(|slot| self.table.data(slot).valid >> j & 1 == 0)
    }

    fn neighbours_wanted(&self) -> u32 {
        self.arity as u32
    }

    fn entry_neighbours(&self, va: u64, asid: Asid, out: &mut Neighbours) {
        out.len = 0;
        out.whole = false;
        let (set, t, j) = self.group_of(va >> 12, asid);
        let Some(slot) = self.table.probe(set, t) else { return };
        let e = self.table.data(slot);
        // 4 KiB leaves only: a large page's sub-pages are not leaves of their own.
        let small = e.valid & !e.large;
        out.first_vpn = (va >> 12) - j;
        out.len = self.arity as u32;
        out.dirty = e.dirty & small;
        for k in 0..self.arity {
            out.pfn[k as usize] = if small >> k & 1 == 1 { self.frame(slot, k) } else { NOT_PRESENT };
        }
    }

    fn mark_dirty(&mut self, va: u64, asid: Asid) {
        let (set, t, j) = self.group_of(va >> 12, asid);
        if let Some(slot) = self.table.probe(set, t) {
            let e = self.table.data_mut(slot);
            e.dirty |= e.valid & 1 << j;
        }
    }

    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        let (set, t, j) = self.group_of(va >> 12, asid);
        let mut n = match self.table.probe(set, t) {
            Some(slot) => self.clear(slot, 1 << j),
            None => 0,
        };
        if self.held_large {
            for k in 0..self.n_large {
                n += self.invalidate_large(va, self.large_sizes[k], asid);
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

    fn visit_stats(&self, v: &mut dyn StatVisitor) {
        self.stats.visit(v);
    }
}

#[cfg(test)]
mod tests;
