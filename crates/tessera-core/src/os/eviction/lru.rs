//! Exact global LRU over resident pages, by access.
//!
//! ## What it models
//! The idealised least-recently-used page replacement: every translation of a
//! resident page makes it most recent, and the victim is the page whose last
//! access (or mapping) is the oldest. No OS can afford this (it needs a hook on
//! every access); it is the yardstick approximations are measured against, and
//! the policy the GPU studies simulate.
//! ## Paper or source
//! MECHANISMS.md §2.4: the batch-aware unified-memory model's MacSim
//! `ReplacementUnit` (insert at MRU on map, update on a page-table hit, victim
//! at the LRU tail) and UVM-Smart's access-timestamp LRU; §3.4: the "global
//! LRU" that Horizon LRU emulates.
//! ## Choices where the sources are silent
//! - One global list over all address spaces (no per-process lists).
//! - A mapping counts as an access (the faulting access): a new page enters as
//!   most recent.
//! - Accessed bits are not used; `victim` never reads or clears them.
//! - Representation: an intrusive doubly linked list in per-frame `u32`
//!   arrays, so map, unmap, touch and victim are O(1).
//! ## Config
//! `kind = "lru"` (no parameters).
//! ## Stats
//! None (the OS counts evictions).

use serde::{Deserialize, Serialize};

use super::list::PageLists;
use super::{AccessedBits, EvictionCtx, EvictionPolicy};
use crate::error::Result;
use crate::registry::Mechanism;

/// `kind = "lru"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

/// Most recent at the head of list 0, the victim at its tail.
#[derive(Clone, Debug)]
pub struct Lru {
    list: PageLists<1>,
}

impl Mechanism for Lru {
    const NAME: &'static str = "lru";
    const SUMMARY: &'static str = "exact global LRU by access (touch on every translation)";
    type Config = Config;
    type Ctx = EvictionCtx;
    fn build(_: &Config, ctx: &EvictionCtx) -> Result<Self> {
        Ok(Lru { list: PageLists::new(ctx.frames()?) })
    }
}

impl Lru {
    /// Resident pages from most to least recent (tests and debugging; allocates).
    pub fn order(&self) -> Vec<u64> {
        self.list.iter(0)
    }
}

impl EvictionPolicy for Lru {
    #[inline]
    fn on_map(&mut self, page: u64) {
        debug_assert!(self.list.list_of(page as u32).is_none(), "page {page} mapped twice");
        self.list.move_to_head(0, page as u32);
    }

    #[inline]
    fn on_unmap(&mut self, page: u64) {
        self.list.remove(page as u32);
    }

    #[inline(always)]
    fn wants_touches(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_touch(&mut self, page: u64) {
        let p = page as u32;
        if self.list.list_of(p).is_some() {
            self.list.move_to_head(0, p);
        }
    }

    #[inline]
    fn victim(&mut self, _bits: &mut dyn AccessedBits) -> Option<u64> {
        self.list.tail(0).map(u64::from)
    }

    #[inline]
    fn resident(&self) -> u64 {
        self.list.len(0)
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference::{self, NoBits, RefLru, Snapshot};
    use super::*;
    use proptest::prelude::*;

    impl Snapshot for Lru {
        fn snapshot(&self) -> Vec<Vec<u64>> {
            self.list.check().unwrap();
            vec![self.order()]
        }
    }

    fn lru(frames: u64) -> Lru {
        Lru::build(&Config {}, &EvictionCtx { capacity_frames: frames, seed: 0 }).unwrap()
    }

    #[test]
    fn victim_is_least_recently_touched() {
        let mut p = lru(16);
        assert_eq!(p.victim(&mut NoBits), None);
        for page in [4, 8, 12] {
            p.on_map(page);
        }
        assert_eq!(p.victim(&mut NoBits), Some(4));
        p.on_touch(4);
        assert_eq!(p.victim(&mut NoBits), Some(8));
        assert_eq!(p.victim(&mut NoBits), Some(8), "victim leaves the page resident");
        p.on_unmap(8);
        assert_eq!(p.victim(&mut NoBits), Some(12));
        p.on_touch(9); // not resident: ignored
        p.on_unmap(9);
        assert_eq!(p.resident(), 2);
        assert_eq!(p.order(), vec![4, 12]);
    }

    #[test]
    fn too_many_frames_is_an_error() {
        assert!(Lru::build(&Config {}, &EvictionCtx { capacity_frames: u32::MAX as u64, seed: 0 }).is_err());
    }

    proptest! {
        #[test]
        fn lru_matches_the_reference(cap in 1u64..48, ops in reference::ops(48, 300)) {
            reference::run(lru(cap), RefLru::default(), cap, &ops)?;
        }
    }
}
