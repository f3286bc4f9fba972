//! Coalescing TLB: one entry maps a contiguous run within an aligned group of 4 KiB pages.
//!
//! ## What it models
//! A TLB whose 4 KiB entries each cover one run of contiguous translations
//! within an aligned group of `group` virtual pages: a group tag, a base frame
//! and one valid and one dirty bit per sub-page. A walk of one page installs,
//! in its run's entry, the other pages of its group whose leaf entries the
//! walker has at hand and whose frames continue the walked page's frame
//! (virtually and physically contiguous): the coalesced TLB of CoLT. Sets are
//! indexed by the group number, so every run of a group lands in one set, and
//! a group whose pages sit in several physical runs has one entry per run.
//! Pages larger than 4 KiB held by the structure are ordinary one-page
//! entries of the same table (their tags never alias a group's).
//!
//! With `gt_blocks`, the structure also understands GT-PDEs (GTSM's
//! superpages over non-contiguous B-blocks, [`crate::pagetable::gt_table`]):
//! a walk that ends at one hands it the translations of the other pages of
//! the group, decoded from the 16-byte entry the walker already holds, so
//! one entry covers a whole B-block at no extra memory reference when
//! `group` is the B-block's pages (32 in `gt_pde_4m`; 16 in `gt_pde_2m` and
//! `p_gt_pde_4m`; 8 in `gt_pde_1m` and `p_gt_pde_2m`), and with a larger
//! group whatever contiguous run of B-blocks the slice gives. Beyond both
//! papers: GTSM keeps the TLBs unchanged and gives them 4 KiB pages.
//!
//! ## Paper
//! Pham, Vaidyanathan, Jaleel, Bhattacharjee, "CoLT: Coalesced Large-Reach
//! TLBs", MICRO 2012, DOI 10.1109/MICRO.2012.32 (CoLT-SA: set-associative,
//! sets indexed by group; CoLT-FA: fully associative, here `ways = "full"`).
//! Coalescing takes the PTEs of the cache line the walker read, so no extra
//! memory reference is made. Du, Zhou, Childers, Mossé, Melhem, "Supporting
//! Superpages in Non-Contiguous Physical Memory", HPCA 2015 (GTSM) compares
//! with coalescing assuming the whole group comes at no extra latency;
//! `fill_from = "group"` models that upper bound.
//!
//! ## Choices where the papers are silent
//! - Tag: (group number = `vpn >> log2(group)` | run id, 4 KiB, ASID); set
//!   index: `group number & (sets - 1)`.
//! - Fill of a 4 KiB page at sub-page `i` with frame `p`: base `p0 = p - i`.
//!   The walked page is always valid. Another sub-page `j` becomes valid if it
//!   is within what the fill may use (`fill_from`), its leaf is present in the
//!   given neighbours, and (with `require_contiguity`) its frame is `p0 + j`.
//!   Without `require_contiguity` every present one is valid (an upper bound)
//!   and each sub-page keeps its own frame, so translations stay exact.
//! - `fill_from = "line"`: only the sub-pages whose PTEs share the walked
//!   PTE's 64-byte line (the aligned run of 8 containing it, or the group if
//!   smaller); `"group"`: every sub-page of the group.
//! - With `require_contiguity`, each entry is one run (one base) of one
//!   group, and a sub-page is valid in at most one entry. A fill merges into
//!   the group's entry with the same base if there is one (it becomes most
//!   recently used; sub-pages the fill installs take its dirty bits, the
//!   others are kept), else installs a new entry (a free way, else the
//!   policy's victim). Either way the sub-pages it installs are cleared from
//!   the group's other entries, and an entry left with none is freed (not an
//!   eviction); when no entry has the fill's base, the first entry so emptied
//!   takes the new run in place instead (with `group = 1` a refill is then the
//!   plain TLB's data replacement). Tags stay unique by a run id in the
//!   `log2(group)` high bits of the VPN field that the group number leaves
//!   free; a lookup scans the set for the group's entries (with the hash index of
//!   a highly associative table, probes each run id) and hits the one whose
//!   bitmap has the sub-page, updating replacement state for that way only.
//! - Without `require_contiguity` a group has one entry: each sub-page keeps
//!   its own frame, so every sub-page of the group fits in it. A fill updates
//!   it (most recently used) and keeps the sub-pages it does not install.
//! - A hit at a lower level fills this structure like a walk, with the
//!   sub-pages of the entry that hit as the neighbours (the same rules apply).
//! - A lookup that finds entries of the group but none with this sub-page is
//!   a sub-page miss: a miss for the hierarchy, no replacement update.
//! - Shootdown of one page clears its sub-page; the entry is freed with its
//!   last sub-page. A dirty bit is set per sub-page.
//! - `gt_blocks`: a fill whose neighbours were decoded from a GT-PDE
//!   (`Neighbours::whole`, after a walk that ended at one, or a shadow's
//!   miss on such a page) may install every sub-page of the group, whatever
//!   `fill_from` says: the entry describes every B-block of its superpage.
//!   Each neighbour is the frame its own block select gives (the GT-PDE's
//!   entry for the pages of its superpage, so a group never needs another),
//!   and contiguity is checked as for any fill, so a run stops where the
//!   slice skips a B-block. Dirty bits are the GT-PDE's (one per superpage).
//!   An entry remembers that a fill of it came from a GT-PDE, and a hit on
//!   it at a lower level hands its sub-pages up as whole too. A structure
//!   without `gt_blocks` takes none of a GT-PDE's neighbours (as before:
//!   the 4 KiB page alone), and neither does a mosaic one. Walks that end
//!   at a level-1 PTE (4 KiB pages under a PDE) fill as without it.
//! - Not memo-safe: a repeated hit may be a coalesced hit, which a bulk count
//!   of repeats would not see; the level-1 memo is off on a side with a
//!   coalescing level-1 structure.
//! - `mmu.fill = "victim"` is rejected: a group entry is not a single page
//!   that can move between levels.
//!
//! ## Config
//! `organisation = { kind = "coalescing", group = <power of two, 1..=64; 1 holds one page per entry, the plain baseline>
//! (default 8), require_contiguity = <bool> (default true), fill_from =
//! "line" | "group" (default "line"), gt_blocks = <bool> (default false) }`.
//! The structure must hold 4 KiB pages. Without contiguity, `entries ×
//! group` frames must fit in 2^24 (as mosaic's). `gt_blocks = true` needs
//! `pagetable.format = "gt_pde"` (a config error names
//! `<path>.organisation.gt_blocks` otherwise).
//!
//! ## Stats
//! The five every structure has, and `mmu.<name>.coalesced_hits` (hits on a
//! sub-page installed by a fill for another sub-page) and
//! `mmu.<name>.subpage_misses` (lookups that found entries of the group but
//! none holding this sub-page; also counted in `misses`).

use super::organisation::{Entry, Fill, Probe, TlbCtx, TlbOrganisation};
use super::mosaic::MAX_SUBPAGES;
use super::{tag, tag_asid, tag_size, tag_vpn, Neighbours, MAX_GROUP, NOT_PRESENT, SIZE_SHIFT};
use crate::addr::{Asid, PageSize};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stats::{StatGroup, StatVisitor};
use crate::table::set_assoc::INDEX_MIN_WAYS;
use crate::table::SetAssoc as Table;
use serde::{Deserialize, Deserializer, Serialize};

/// Leaf PTEs per 64-byte cache line (8-byte entries).
pub const LINE_PTES: u32 = 8;

crate::stat_group! {
    pub struct CoalescingStats {
        coalesced_hits: "accesses", "hits on a sub-page installed by a fill for another sub-page",
        subpage_misses: "accesses", "lookups that found entries of the group but none holding this sub-page (also counted in misses)",
    }
}

/// Which sub-pages a fill may install besides the walked one.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FillFrom {
    /// Those whose PTEs sit in the 64-byte line the walker read.
    #[default]
    Line,
    /// Every sub-page of the group (upper bound: no extra latency assumed).
    Group,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// 4 KiB pages per entry: a power of two from 1 to 64 (1: one page per entry).
    #[serde(default = "d_group", deserialize_with = "de_group")]
    pub group: u32,
    /// Coalesce only sub-pages whose frames continue the walked page's.
    #[serde(default = "d_true")]
    pub require_contiguity: bool,
    #[serde(default)]
    pub fill_from: FillFrom,
    /// Understand GT-PDEs: a fill from one takes the pages of the group it maps.
    /// Left out of the written config when false, so result identities from
    /// before it existed stay as they were.
    #[serde(default, skip_serializing_if = "is_false")]
    pub gt_blocks: bool,
}

fn d_group() -> u32 {
    8
}
fn d_true() -> bool {
    true
}
fn is_false(b: &bool) -> bool {
    !*b
}

impl Default for Config {
    fn default() -> Self {
        Config { group: d_group(), require_contiguity: true, fill_from: FillFrom::Line, gt_blocks: false }
    }
}

/// Why `group` is not allowed, if it is not.
fn group_problem(g: u32) -> Option<String> {
    (!(g.is_power_of_two() && (1..=MAX_GROUP as u32).contains(&g)))
        .then(|| format!("{g} pages: must be a power of two from 1 to {MAX_GROUP}"))
}

fn de_group<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    let g = u32::deserialize(d)?;
    match group_problem(g) {
        Some(msg) => Err(serde::de::Error::custom(msg)),
        None => Ok(g),
    }
}

/// Payload of one entry. For a group: `base` = frame of sub-page 0 of the
/// run under contiguity, and one bit per sub-page in the masks (`own`:
/// installed by a fill for that very sub-page; `whole`: some fill of it was
/// decoded from a GT-PDE). For a larger page: its first frame, bit 0.
#[derive(Copy, Clone, Debug, Default, PartialEq)]
struct Group {
    base: u64,
    valid: u64,
    dirty: u64,
    own: u64,
    whole: bool,
}

#[derive(Clone, Debug)]
pub struct Coalescing {
    sizes: [PageSize; PageSize::COUNT],
    n_sizes: usize,
    table: Table<Group>,
    set_mask: u64,
    log2_group: u32,
    group: u64,
    contiguous: bool,
    fill_from: FillFrom,
    /// Fills from a GT-PDE take every page of the group it maps (`Neighbours::whole`).
    gt_blocks: bool,
    /// Tag bits holding the run id (0: one entry per group, no run ids).
    run_mask: u64,
    run_shift: u32,
    /// The table has a hash index: find a group's runs by probing run ids, not by a scan.
    indexed: bool,
    /// Without contiguity only: `frames[slot * group + j]` is sub-page `j`'s frame.
    frames: Vec<u64>,
    stats: CoalescingStats,
}

impl Mechanism for Coalescing {
    const NAME: &'static str = "coalescing";
    const SUMMARY: &'static str =
        "one entry per contiguous run within an aligned group of 4 KiB pages, filled with the contiguous neighbours a walk reads (CoLT)";
    type Config = Config;
    type Ctx = TlbCtx;
    fn build(cfg: &Config, ctx: &TlbCtx) -> Result<Self> {
        let path = &ctx.path;
        if let Some(msg) = group_problem(cfg.group) {
            return Err(Error::config(format!("{path}.organisation.group"), msg));
        }
        ctx.require_4k("coalescing")?;
        let slots = ctx.sets as u64 * ctx.ways as u64;
        // Without contiguity every entry keeps a frame per sub-page, as a mosaic entry does.
        if !cfg.require_contiguity && slots * cfg.group as u64 > MAX_SUBPAGES {
            return Err(Error::config(
                format!("{path}.organisation.group"),
                format!(
                    "{slots} entries × {} sub-pages = {} sub-page frames, more than the {MAX_SUBPAGES} a structure may hold; use fewer entries, a smaller group or require_contiguity = true",
                    cfg.group,
                    slots * cfg.group as u64
                ),
            ));
        }
        let table = ctx.table()?;
        let mut sizes = [PageSize::Size4K; PageSize::COUNT];
        for (i, s) in ctx.page_sizes.iter().enumerate() {
            sizes[i] = *s;
        }
        let group = cfg.group as u64;
        let slots = ctx.sets as usize * ctx.ways as usize;
        let log2_group = cfg.group.trailing_zeros();
        // The group number needs log2(group) fewer bits than a VPN: the run id takes them.
        let run_shift = SIZE_SHIFT - log2_group;
        Ok(Coalescing {
            sizes,
            n_sizes: ctx.page_sizes.len(),
            table,
            set_mask: (ctx.sets - 1) as u64,
            log2_group,
            group,
            contiguous: cfg.require_contiguity,
            fill_from: cfg.fill_from,
            gt_blocks: cfg.gt_blocks,
            run_mask: if cfg.require_contiguity { (group - 1) << run_shift } else { 0 },
            run_shift,
            indexed: ctx.ways > INDEX_MIN_WAYS,
            frames: if cfg.require_contiguity { Vec::new() } else { vec![NOT_PRESENT; slots * group as usize] },
            stats: CoalescingStats::default(),
        })
    }
}

impl Coalescing {
    /// Set and group tag (run id 0) of 4 KiB page `vpn`, and its sub-page.
    #[inline]
    fn group_of(&self, vpn: u64, asid: Asid) -> (u32, u64, u64) {
        let g = vpn >> self.log2_group;
        debug_assert!(g << self.log2_group >> self.run_shift == 0, "vpn {vpn:#x} past 45 bits");
        ((g & self.set_mask) as u32, tag(g, PageSize::Size4K, asid), vpn & (self.group - 1))
    }

    /// Call `f` with the slot of each entry of group tag `gt` in `set` until it returns true.
    #[inline]
    fn each_run(&self, set: u32, gt: u64, mut f: impl FnMut(usize) -> bool) {
        if self.run_mask == 0 {
            if let Some(slot) = self.table.probe(set, gt) {
                f(slot);
            }
        } else if self.indexed {
            // A scan of a thousand ways would dominate; at most `group` run ids exist.
            for r in 0..self.group {
                if let Some(slot) = self.table.probe(set, gt | r << self.run_shift) {
                    if f(slot) {
                        return;
                    }
                }
            }
        } else {
            let ways = self.table.ways() as usize;
            for slot in set as usize * ways..(set as usize + 1) * ways {
                // An empty slot's tag (all ones) has bit 63 set, which no group tag has.
                if self.table.tag(slot) & !self.run_mask == gt && f(slot) {
                    return;
                }
            }
        }
    }

    /// Slot of the entry of group tag `gt` in `set` holding sub-page `j`, and
    /// whether the set holds any entry of the group.
    #[inline]
    fn find_sub(&self, set: u32, gt: u64, j: u64) -> (Option<usize>, bool) {
        let (mut found, mut any) = (None, false);
        self.each_run(set, gt, |slot| {
            any = true;
            let hit = self.table.data(slot).valid >> j & 1 == 1;
            if hit {
                found = Some(slot);
            }
            hit
        });
        (found, any)
    }

    /// Set and tag of a one-page entry of a size larger than 4 KiB.
    #[inline]
    fn page_of(&self, va: u64, size: PageSize, asid: Asid) -> (u32, u64) {
        let vpn = va >> size.shift();
        ((vpn & self.set_mask) as u32, tag(vpn, size, asid))
    }

    /// Sub-pages `[lo, hi)` a fill for sub-page `i` may install.
    fn window(&self, i: u64) -> (u64, u64) {
        match self.fill_from {
            FillFrom::Group => (0, self.group),
            FillFrom::Line => {
                let run = self.group.min(LINE_PTES as u64);
                let lo = i & !(run - 1);
                (lo, lo + run)
            }
        }
    }

    fn frame(&self, slot: usize, e: &Group, j: u64) -> u64 {
        if self.contiguous {
            e.base.wrapping_add(j)
        } else {
            self.frames[slot * self.group as usize + j as usize]
        }
    }

    fn fill_4k(&mut self, f: &Fill, nb: &Neighbours) -> bool {
        // Pages a GT-PDE maps are neighbours only to a structure that understands it.
        let nb = if nb.whole && !self.gt_blocks { &Neighbours::EMPTY } else { nb };
        let vpn = f.va >> 12;
        let (set, t, i) = self.group_of(vpn, f.asid);
        let first = vpn - i;
        let base = f.pfn.wrapping_sub(i);
        // The walker holds the GT-PDE: every page it maps is at hand, not only a line's.
        let (lo, hi) = if nb.whole { (0, self.group) } else { self.window(i) };
        let (mut valid, mut dirty) = (1u64 << i, (f.dirty as u64) << i);
        for j in lo..hi {
            if j == i {
                continue;
            }
            if let Some((p, d)) = nb.get(first + j) {
                if !self.contiguous || p == base.wrapping_add(j) {
                    valid |= 1 << j;
                    dirty |= (d as u64) << j;
                }
            }
        }
        let whole = nb.whole;
        if self.contiguous {
            return self.fill_run(set, t, i, Group { base, valid, dirty, own: 1 << i, whole });
        }
        let (slot, evicted) = match self.table.probe(set, t) {
            Some(slot) => {
                let old = self.table.data(slot);
                let kept = old.valid & !valid;
                let e = Group { base, valid: valid | kept, dirty: dirty | (old.dirty & kept), own: 1 << i | old.own, whole: whole || old.whole };
                // Present: the payload is replaced and the entry becomes most recent.
                let ev = self.table.insert(set, t, e);
                debug_assert!(ev.is_none());
                (slot, false)
            }
            None => {
                let ev = self.table.insert_after_miss(set, t, Group { base, valid, dirty, own: 1 << i, whole });
                (self.table.probe(set, t).expect("just installed"), ev.is_some())
            }
        };
        let row = slot * self.group as usize;
        let mut bits = valid;
        while bits != 0 {
            let j = bits.trailing_zeros() as u64;
            bits &= bits - 1;
            self.frames[row + j as usize] = if j == i { f.pfn } else { nb.get(first + j).expect("present").0 };
        }
        evicted
    }

    /// Install run `new` (the sub-pages a contiguous fill for sub-page `i`
    /// installs) in the group of tag `gt` in `set`: merged into the run with
    /// its base, else as a new entry; its sub-pages leave the group's other
    /// runs. A run left empty by that is freed, except that the first one
    /// takes the new run in place when no run has its base (so with groups
    /// of one page a refill is a plain TLB's data replacement). Returns
    /// whether a valid entry was evicted.
    fn fill_run(&mut self, set: u32, gt: u64, i: u64, new: Group) -> bool {
        let mut slots = [0u32; MAX_GROUP];
        let mut n = 0;
        self.each_run(set, gt, |slot| {
            slots[n] = slot as u32;
            n += 1;
            false
        });
        let (mut same, mut emptied, mut used) = (None, None, 0u64);
        for &slot in &slots[..n] {
            let slot = slot as usize;
            let run = (self.table.tag(slot) & self.run_mask) >> self.run_shift;
            let e = self.table.data_mut(slot);
            if e.base == new.base {
                same = Some(slot);
            } else if e.valid & !new.valid == 0 {
                if emptied.is_some() || same.is_some() {
                    self.table.invalidate_slot(slot);
                    continue;
                }
                emptied = Some(slot);
            } else {
                let keep = !new.valid;
                e.valid &= keep;
                e.dirty &= keep;
                e.own &= keep;
            }
            used |= 1 << run;
        }
        if let (Some(_), Some(slot)) = (same, emptied) {
            self.table.invalidate_slot(slot);
        } else if let Some(slot) = emptied {
            // Present: the payload is replaced and the entry becomes most recent.
            let ev = self.table.insert(set, self.table.tag(slot), new);
            debug_assert!(ev.is_none());
            return false;
        }
        if let Some(slot) = same {
            let old = self.table.data(slot);
            let kept = old.valid & !new.valid;
            let e = Group {
                base: new.base,
                valid: new.valid | kept,
                dirty: new.dirty | (old.dirty & kept),
                own: 1 << i | old.own,
                whole: new.whole || old.whole,
            };
            // Present: the payload is replaced and the entry becomes most recent.
            let ev = self.table.insert(set, self.table.tag(slot), e);
            debug_assert!(ev.is_none());
            return false;
        }
        // The group's other runs hold none of `new`'s sub-pages, so fewer than `group` remain.
        let run = (!used).trailing_zeros() as u64;
        debug_assert!(run < self.group, "no free run id");
        self.table.insert_after_miss(set, gt | run << self.run_shift, new).is_some()
    }
}

impl TlbOrganisation for Coalescing {
    // Out of line, here and in `fill`, as in the mosaic organisation: an
    // inlined coalescing arm makes every other organisation's calls dearer.
    #[inline(never)]
    fn lookup(&mut self, va: u64, asid: Asid) -> Probe {
        if self.table.is_empty() {
            return Probe::Miss;
        }
        let mut subpage = false;
        for k in 0..self.n_sizes {
            let size = self.sizes[k];
            if size == PageSize::Size4K {
                let (set, gt, j) = self.group_of(va >> 12, asid);
                let (found, any) = self.find_sub(set, gt, j);
                let Some(slot) = found else {
                    subpage |= any;
                    continue;
                };
                let e = self.table.data(slot);
                let _ = self.table.lookup(set, self.table.tag(slot));
                if e.own >> j & 1 == 0 {
                    self.stats.coalesced_hits += 1;
                }
                return Probe::Hit { pfn: self.frame(slot, &e, j), size, dirty: e.dirty >> j & 1 == 1 };
            }
            let (set, t) = self.page_of(va, size, asid);
            if let Some(slot) = self.table.lookup(set, t) {
                let e = self.table.data(slot);
                return Probe::Hit { pfn: e.base, size, dirty: e.dirty & 1 == 1 };
            }
        }
        if subpage {
            self.stats.subpage_misses += 1;
            return Probe::SubpageMiss;
        }
        Probe::Miss
    }

    #[inline(never)]
    fn fill(&mut self, f: &Fill, nb: &Neighbours, _absent: bool) -> bool {
        if f.size == PageSize::Size4K {
            return self.fill_4k(f, nb);
        }
        let (set, t) = self.page_of(f.va, f.size, f.asid);
        let e = Group { base: f.pfn, valid: 1, dirty: f.dirty as u64, own: 1, whole: false };
        self.table.insert(set, t, e).is_some()
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
        let n = self.invalidate_one(tag_vpn(t) << size.shift(), size, tag_asid(t));
        n > 0
    }

    fn moves_entries(&self) -> bool {
        false
    }

    fn memo_safe(&self) -> bool {
        false
    }

    fn neighbours_wanted(&self) -> u32 {
        match self.fill_from {
            FillFrom::Line => (self.group as u32).min(LINE_PTES),
            FillFrom::Group => self.group as u32,
        }
    }

    fn gt_neighbours_wanted(&self) -> u32 {
        if self.gt_blocks {
            self.group as u32
        } else {
            0
        }
    }

    fn entry_neighbours(&self, va: u64, asid: Asid, out: &mut Neighbours) {
        out.len = 0;
        out.whole = false;
        if !self.sizes[..self.n_sizes].contains(&PageSize::Size4K) {
            return;
        }
        let (set, gt, j) = self.group_of(va >> 12, asid);
        let Some(slot) = self.find_sub(set, gt, j).0 else { return };
        let e = self.table.data(slot);
        out.first_vpn = (va >> 12) - j;
        out.len = self.group as u32;
        out.dirty = e.dirty & e.valid;
        out.whole = e.whole;
        for k in 0..self.group {
            out.pfn[k as usize] = if e.valid >> k & 1 == 1 { self.frame(slot, &e, k) } else { NOT_PRESENT };
        }
    }

    fn mark_dirty(&mut self, va: u64, asid: Asid) {
        for k in 0..self.n_sizes {
            let size = self.sizes[k];
            if size == PageSize::Size4K {
                let (set, gt, j) = self.group_of(va >> 12, asid);
                if let Some(slot) = self.find_sub(set, gt, j).0 {
                    self.table.data_mut(slot).dirty |= 1 << j;
                }
            } else {
                let (set, t) = self.page_of(va, size, asid);
                if let Some(slot) = self.table.probe(set, t) {
                    self.table.data_mut(slot).dirty |= 1;
                }
            }
        }
    }

    fn invalidate_page(&mut self, va: u64, asid: Asid) -> u64 {
        (0..self.n_sizes).map(|k| self.invalidate_one(va, self.sizes[k], asid)).sum()
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

impl Coalescing {
    /// Remove `va`'s translation of one size: a sub-page, or a whole entry.
    fn invalidate_one(&mut self, va: u64, size: PageSize, asid: Asid) -> u64 {
        if size != PageSize::Size4K {
            let (set, t) = self.page_of(va, size, asid);
            return self.table.invalidate(set, t) as u64;
        }
        let (set, gt, j) = self.group_of(va >> 12, asid);
        let Some(slot) = self.find_sub(set, gt, j).0 else { return 0 };
        let e = self.table.data_mut(slot);
        let keep = !(1u64 << j);
        e.valid &= keep;
        e.dirty &= keep;
        e.own &= keep;
        if e.valid == 0 {
            self.table.invalidate_slot(slot);
        }
        1
    }
}

#[cfg(test)]
mod tests;
