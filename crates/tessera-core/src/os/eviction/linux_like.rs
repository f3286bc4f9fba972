//! Two-list (active / inactive) LRU approximation driven by accessed bits,
//! after Linux's page reclaim.
//!
//! ## What it models
//! The split LRU of Linux's `mm/vmscan.c` for anonymous pages, reduced to one
//! pair of lists and one victim at a time:
//! - a newly mapped page enters the head of the **inactive** list;
//! - to find a victim, reclaim first ages the **active** list while it is too
//!   large (`shrink_active_list`): its tail page has its accessed bit cleared
//!   and moves to the inactive head (deactivation), until
//!   `inactive × inactive_ratio ≥ active` (`inactive_is_low`);
//! - then it scans the inactive tail (`shrink_inactive_list` →
//!   `shrink_folio_list` → `folio_check_references`): the page's accessed bit
//!   is read and cleared, and its software *referenced* mark (`PG_referenced`)
//!   is read and cleared. Accessed and already marked → **activate** (move to
//!   the active head, keeping the mark); accessed but not marked → mark it and
//!   **keep** it for another trip (move to the inactive head); not accessed →
//!   it is the **victim**.
//!
//! The referenced mark is what makes reclaim "look twice": every mapped page
//! starts with its accessed bit set by the faulting access, so one set bit does
//! not show reuse, and a page is activated only when it is found accessed on
//! two scans. A deactivated page keeps its mark, so a page that was active and
//! is used again is reactivated on its first accessed scan ("recently
//! deactivated but used folios are quickly recovered").
//! ## Paper or source
//! Linux `mm/vmscan.c`: `folio_check_references`, `shrink_folio_list`,
//! `shrink_inactive_list`, `shrink_active_list`, `inactive_is_low`; Mosaic
//! Pages evicts through this path (`shrink_page_list`, MECHANISMS.md §3.4).
//! ## Choices where the sources are silent (or where Tessera simplifies)
//! - Anonymous pages only: no file lists, no `VM_EXEC` rotation on the active
//!   list (Linux gives referenced executable *file* pages another trip around
//!   the active list; referenced anonymous pages are deactivated all the same,
//!   which is what this model does), no unevictable list, no workingset
//!   refault detection, no multi-generational LRU.
//! - One global pair of lists (one node, one memory cgroup).
//! - Reclaim works one victim at a time: aging runs until the lists are
//!   balanced, then the inactive scan runs until one page qualifies, instead
//!   of Linux's batches of `SWAP_CLUSTER_MAX` (32) pages.
//! - `inactive_ratio` is a fixed parameter, default 1 (keep the inactive list
//!   at least as long as the active list). Linux derives it from memory size,
//!   `int_sqrt(10 × GiB)` (1 below 1 GiB, 3 at 1 GiB, 10 at 10 GiB); set it to
//!   that value to mimic a given machine.
//! - `look_twice = false` activates a page on its first accessed inactive scan,
//!   as older kernels did for swap-backed pages (`page_check_references`
//!   returned `PAGEREF_ACTIVATE` for `PageSwapBacked` pages with referenced
//!   PTEs); the default `true` follows the current code above.
//! - `victim` always terminates: every page it moves has its accessed bit
//!   cleared on the way, so within three passes over the resident pages a page
//!   with a clear bit and no mark reaches the inactive tail.
//! ## Config
//! `kind = "linux_like"`, `inactive_ratio = <u32 ≥ 1>` (default 1),
//! `look_twice = <bool>` (default true).
//! ## Stats
//! `os.eviction.linux_like.scanned` (inactive pages examined),
//! `.activations`, `.deactivations`, `.kept` (accessed once, given another
//! trip), gauges `.active` and `.inactive` (list lengths at the end of the run).

use serde::{Deserialize, Serialize};

use super::list::PageLists;
use super::{AccessedBits, EvictionCtx, EvictionPolicy};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stat_group;

/// List numbers in [`PageLists`].
const INACTIVE: usize = 0;
const ACTIVE: usize = 1;

/// `kind = "linux_like"` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The active list is aged while `inactive × inactive_ratio < active`.
    #[serde(default = "d_ratio")]
    pub inactive_ratio: u32,
    /// Activate on the second accessed scan (true) or the first (false).
    #[serde(default = "d_true")]
    pub look_twice: bool,
}
fn d_ratio() -> u32 {
    1
}
fn d_true() -> bool {
    true
}
impl Default for Config {
    fn default() -> Self {
        Config { inactive_ratio: d_ratio(), look_twice: d_true() }
    }
}

stat_group! {
    /// Counters of the two-list reclaim.
    pub struct LinuxLikeStats {
        scanned: "pages", "inactive-list pages whose references reclaim checked",
        activations: "pages", "pages moved from the inactive to the active list (found accessed again)",
        deactivations: "pages", "pages moved from the active to the inactive list by aging",
        kept: "pages", "pages found accessed for the first time and given another trip round the inactive list",
        active: gauge "pages", "pages on the active list at the end of the run",
        inactive: gauge "pages", "pages on the inactive list at the end of the run",
    }
}

#[derive(Clone, Debug)]
pub struct LinuxLike {
    lists: PageLists<2>,
    /// The software referenced mark (`PG_referenced`) per frame.
    referenced: Vec<bool>,
    inactive_ratio: u64,
    look_twice: bool,
    stats: LinuxLikeStats,
}

impl Mechanism for LinuxLike {
    const NAME: &'static str = "linux_like";
    const SUMMARY: &'static str = "active/inactive lists over accessed bits, after Linux's mm/vmscan.c";
    type Config = Config;
    type Ctx = EvictionCtx;
    fn build(cfg: &Config, ctx: &EvictionCtx) -> Result<Self> {
        if cfg.inactive_ratio == 0 {
            return Err(Error::config("os.eviction.inactive_ratio", "must be at least 1 (1 keeps the inactive list as long as the active list)"));
        }
        let frames = ctx.frames()?;
        Ok(LinuxLike {
            lists: PageLists::new(frames),
            referenced: vec![false; frames],
            inactive_ratio: cfg.inactive_ratio as u64,
            look_twice: cfg.look_twice,
            stats: LinuxLikeStats::default(),
        })
    }
}

impl LinuxLike {
    /// Inactive pages head to tail, active pages head to tail, and the pages
    /// carrying the referenced mark in page order (tests and debugging; allocates).
    pub fn lists(&self) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let marked = (0..self.referenced.len() as u64).filter(|&p| self.referenced[p as usize]).collect();
        (self.lists.iter(INACTIVE), self.lists.iter(ACTIVE), marked)
    }

    /// The counters, with the list-length gauges filled in.
    pub fn stats(&self) -> LinuxLikeStats {
        LinuxLikeStats { active: self.lists.len(ACTIVE), inactive: self.lists.len(INACTIVE), ..self.stats.clone() }
    }
}

impl EvictionPolicy for LinuxLike {
    #[inline]
    fn on_map(&mut self, page: u64) {
        debug_assert!(self.lists.list_of(page as u32).is_none(), "page {page} mapped twice");
        self.lists.move_to_head(INACTIVE, page as u32);
        self.referenced[page as usize] = false;
    }

    #[inline]
    fn on_unmap(&mut self, page: u64) {
        if self.lists.remove(page as u32).is_some() {
            self.referenced[page as usize] = false;
        }
    }

    #[inline(always)]
    fn wants_touches(&self) -> bool {
        false
    }

    #[inline(always)]
    fn on_touch(&mut self, _page: u64) {}

    fn victim(&mut self, bits: &mut dyn AccessedBits) -> Option<u64> {
        loop {
            // shrink_active_list: age while the inactive list is low.
            while self.lists.len(INACTIVE) * self.inactive_ratio < self.lists.len(ACTIVE) {
                let p = self.lists.tail(ACTIVE).expect("active list is non-empty");
                // Anonymous pages are deactivated whether referenced or not; the bit is cleared.
                bits.test_and_clear(p as u64);
                self.lists.move_to_head(INACTIVE, p);
                self.stats.deactivations += 1;
            }
            // shrink_inactive_list → folio_check_references on the tail.
            let p = self.lists.tail(INACTIVE)?;
            self.stats.scanned += 1;
            let accessed = bits.test_and_clear(p as u64);
            let marked = std::mem::replace(&mut self.referenced[p as usize], false);
            if !accessed {
                return Some(p as u64);
            }
            self.referenced[p as usize] = true;
            if marked || !self.look_twice {
                self.lists.move_to_head(ACTIVE, p);
                self.stats.activations += 1;
            } else {
                self.lists.move_to_head(INACTIVE, p);
                self.stats.kept += 1;
            }
        }
    }

    #[inline]
    fn resident(&self) -> u64 {
        self.lists.total()
    }

    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference::{self, RefLinuxLike, Snapshot, TestBits};
    use super::*;
    use proptest::prelude::*;

    impl Snapshot for LinuxLike {
        fn snapshot(&self) -> Vec<Vec<u64>> {
            self.lists.check().unwrap();
            let (i, a, r) = self.lists();
            vec![i, a, r]
        }
    }

    fn linux(frames: u64, inactive_ratio: u32, look_twice: bool) -> LinuxLike {
        LinuxLike::build(&Config { inactive_ratio, look_twice }, &EvictionCtx { capacity_frames: frames, seed: 0 }).unwrap()
    }

    #[test]
    fn a_page_is_activated_when_found_accessed_twice() {
        let mut l = linux(8, 1, true);
        let mut bits = TestBits::new(8);
        for p in [1, 2, 3] {
            l.on_map(p);
            bits.set(p); // the faulting access
        }
        // First round: each page is found accessed once, marked and kept (moved
        // to the head). Second round: 1 is found clear, its mark is cleared by
        // the check, and it is the victim.
        assert_eq!(l.victim(&mut bits), Some(1));
        assert_eq!(l.stats().kept, 3);
        assert_eq!(l.lists(), (vec![3, 2, 1], vec![], vec![2, 3]));
        l.on_unmap(1);
        bits.set(2); // 2 is used again: marked + accessed → activated
        assert_eq!(l.victim(&mut bits), Some(3));
        assert_eq!(l.lists(), (vec![3], vec![2], vec![2]));
        assert_eq!((l.stats().activations, l.stats().active, l.stats().inactive), (1, 1, 1));
    }

    #[test]
    fn aging_keeps_the_inactive_list_at_least_active_over_ratio() {
        let mut l = linux(16, 1, false);
        let mut bits = TestBits::new(16);
        for p in 0..6 {
            l.on_map(p);
            bits.set(p);
        }
        // Without look-twice every page is activated on its first scan; the
        // aging then deactivates from the active tail (clearing the bits).
        let v = l.victim(&mut bits).unwrap();
        let (inactive, active, _) = l.lists();
        assert!(inactive.len() >= active.len(), "{inactive:?} {active:?}");
        assert_eq!(*inactive.last().unwrap(), v);
        assert!(l.stats().deactivations > 0);
        assert!(LinuxLike::build(&Config { inactive_ratio: 0, look_twice: true }, &EvictionCtx { capacity_frames: 4, seed: 0 }).is_err());
    }

    #[test]
    fn config_defaults_and_unknown_keys() {
        let t: toml::Table = toml::from_str("").unwrap();
        let c: Config = crate::registry::parse_table(&t, "os.eviction").unwrap();
        assert_eq!(c, Config { inactive_ratio: 1, look_twice: true });
        let t: toml::Table = toml::from_str("inactive_ratoi = 3").unwrap();
        assert!(crate::registry::parse_table::<Config>(&t, "os.eviction").is_err());
    }

    proptest! {
        #[test]
        fn linux_like_matches_the_reference(
            cap in 1u64..48,
            ratio in 1u32..4,
            look_twice in any::<bool>(),
            ops in reference::ops(48, 300),
        ) {
            reference::run(linux(cap, ratio, look_twice), RefLinuxLike::new(ratio, look_twice), cap, &ops)?;
        }
    }
}
