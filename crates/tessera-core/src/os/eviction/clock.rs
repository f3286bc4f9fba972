//! CLOCK (second chance) over resident pages, driven by accessed bits.
//!
//! ## What it models
//! The classic approximation of LRU that needs no hook on accesses: resident
//! pages sit on a circle in the order they were mapped, and a hand sweeps it.
//! At the hand, a page whose accessed bit is set gets a second chance (the bit
//! is cleared and the hand moves on); the first page whose bit is clear is the
//! victim. A page mapped while the hand stands at page `h` is inserted just
//! behind the hand (immediately before `h`), so it is the last page the hand
//! reaches: it has a full revolution to be referenced.
//! ## Paper or source
//! Corbató, "A paging experiment with the Multics system" (1968); Tanenbaum,
//! *Modern Operating Systems*, §3.4.5 "The Clock Page Replacement Algorithm".
//! The accessed bit is the x86 PTE A bit, read and cleared through
//! [`AccessedBits`].
//! ## Choices where the sources are silent
//! - The hand stays on the victim: the victim is still resident until the
//!   caller unmaps it, and a second `victim` call returns it again. Unmapping
//!   the page under the hand moves the hand to the next page, which is where
//!   it would stand after the eviction in the textbook algorithm.
//! - A newly mapped page's accessed bit is whatever the machine left in its
//!   PTE (normally set by the faulting access), so a new page usually gets one
//!   second chance.
//! - `victim` always terminates: after one revolution every bit it passed is
//!   clear, so it evicts the page it started at if nothing else.
//! - One circle over all address spaces, in per-frame `u32` links.
//! ## Config
//! `kind = "clock"` (no parameters).
//! ## Stats
//! `os.eviction.clock.scanned` (pages the hand examined),
//! `os.eviction.clock.second_chances` (pages passed over because their
//! accessed bit was set).

use serde::{Deserialize, Serialize};

use super::list::{PageLists, NIL};
use super::{AccessedBits, EvictionCtx, EvictionPolicy};
use crate::error::Result;
use crate::registry::Mechanism;
use crate::stat_group;

/// `kind = "clock"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

stat_group! {
    /// Counters of the CLOCK hand.
    pub struct ClockStats {
        scanned: "pages", "pages the clock hand examined while choosing victims",
        second_chances: "pages", "pages passed over (accessed bit cleared) because their accessed bit was set",
    }
}

/// The circle is list 0 read from head to tail and back to the head.
#[derive(Clone, Debug)]
pub struct Clock {
    list: PageLists<1>,
    /// The next page the hand examines, or `NIL` when nothing is resident.
    hand: u32,
    stats: ClockStats,
}

impl Mechanism for Clock {
    const NAME: &'static str = "clock";
    const SUMMARY: &'static str = "CLOCK / second chance over accessed bits, in mapping order";
    type Config = Config;
    type Ctx = EvictionCtx;
    fn build(_: &Config, ctx: &EvictionCtx) -> Result<Self> {
        Ok(Clock { list: PageLists::new(ctx.frames()?), hand: NIL, stats: ClockStats::default() })
    }
}

impl Clock {
    /// The page after `page` on the circle.
    #[inline]
    fn after(&self, page: u32) -> u32 {
        self.list.next(page).or(self.list.head(0)).unwrap_or(NIL)
    }

    /// Resident pages in the order the hand will reach them, starting at the
    /// hand (tests and debugging; allocates).
    pub fn order(&self) -> Vec<u64> {
        let all = self.list.iter(0);
        let at = all.iter().position(|&p| p == self.hand as u64).unwrap_or(0);
        all[at..].iter().chain(&all[..at]).copied().collect()
    }

    pub fn stats(&self) -> &ClockStats {
        &self.stats
    }
}

impl EvictionPolicy for Clock {
    #[inline]
    fn on_map(&mut self, page: u64) {
        let p = page as u32;
        if self.list.list_of(p).is_some() {
            debug_assert!(false, "page {page} mapped twice");
            return;
        }
        if self.hand == NIL {
            self.list.push_head(0, p);
            self.hand = p;
        } else {
            self.list.insert_before(self.hand, p);
        }
    }

    #[inline]
    fn on_unmap(&mut self, page: u64) {
        let p = page as u32;
        if self.list.list_of(p).is_none() {
            return;
        }
        if p == self.hand {
            let next = self.after(p);
            self.hand = if next == p { NIL } else { next };
        }
        self.list.remove(p);
    }

    #[inline(always)]
    fn wants_touches(&self) -> bool {
        false
    }

    #[inline(always)]
    fn on_touch(&mut self, _page: u64) {}

    fn victim(&mut self, bits: &mut dyn AccessedBits) -> Option<u64> {
        if self.hand == NIL {
            return None;
        }
        loop {
            let p = self.hand;
            self.stats.scanned += 1;
            if !bits.test_and_clear(p as u64) {
                return Some(p as u64);
            }
            self.stats.second_chances += 1;
            self.hand = self.after(p);
        }
    }

    #[inline]
    fn resident(&self) -> u64 {
        self.list.len(0)
    }

    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats, v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference::{self, RefClock, Snapshot, TestBits};
    use super::*;
    use proptest::prelude::*;

    impl Snapshot for Clock {
        fn snapshot(&self) -> Vec<Vec<u64>> {
            self.list.check().unwrap();
            vec![self.order()]
        }
    }

    fn clock(frames: u64) -> Clock {
        Clock::build(&Config {}, &EvictionCtx { capacity_frames: frames, seed: 0 }).unwrap()
    }

    #[test]
    fn hand_gives_referenced_pages_a_second_chance() {
        let mut c = clock(8);
        let mut bits = TestBits::new(8);
        assert_eq!(c.victim(&mut bits), None);
        for p in [1, 2, 3] {
            c.on_map(p);
        }
        bits.set(1);
        bits.set(3);
        // 1 is passed over (bit cleared), 2 is evicted.
        assert_eq!(c.victim(&mut bits), Some(2));
        assert!(!bits.get(1) && bits.get(3));
        assert_eq!(c.victim(&mut bits), Some(2), "the hand stays on the victim");
        c.on_unmap(2);
        assert_eq!(c.order(), vec![3, 1]);
        // A new page goes just behind the hand: reached last.
        c.on_map(5);
        assert_eq!(c.order(), vec![3, 1, 5]);
        // Every bit set (3's since the start): one revolution clears them and
        // the page the hand started at goes.
        bits.set(1);
        bits.set(5);
        assert_eq!(c.victim(&mut bits), Some(3));
        assert_eq!((c.stats().scanned, c.stats().second_chances), (7, 4));
        c.on_unmap(1);
        c.on_unmap(5);
        c.on_unmap(3);
        assert_eq!((c.resident(), c.victim(&mut bits)), (0, None));
    }

    proptest! {
        #[test]
        fn clock_matches_the_reference(cap in 1u64..48, ops in reference::ops(48, 300)) {
            reference::run(clock(cap), RefClock::default(), cap, &ops)?;
        }
    }
}
