//! Horizon LRU (Mosaic Pages): global LRU simulated with per-page access
//! times and one horizon, so an allocator that may only use a few frames per
//! page can still evict as a global LRU would.
//!
//! ## What it models
//! Every resident page has a last-use time. The *horizon* is the largest
//! last use of any page evicted so far; a resident page used before the
//! horizon (time < horizon) is a *ghost*: a global LRU would already have
//! evicted it. Ghosts stay resident and mapped, but an allocator that places
//! by identity (Iceberg) treats their frames as free ([`PageAges`]): it
//! displaces a ghost only when it needs that frame. A ghost used again is
//! simply live again, with no I/O. When none of a page's allowed frames is
//! free or a ghost, the allocator displaces the oldest page among them, and
//! evicting it raises the horizon (the OS calls `on_evict`, not `on_unmap`).
//!
//! Over an allocator that can use any frame (buddy), `victim` is the globally
//! oldest page and no page is ever a ghost: with exact times this is exact
//! global LRU, victim for victim.
//!
//! Time is the access index: the number of translations the policy has been
//! told of. Two ways of learning when a page was used:
//! - `exact` (default): every translation stamps its page (the machine calls
//!   `on_touch` on every access, as for `lru`).
//! - `linux_sampled`: the Linux prototype's scanner (`kicescand`). Every
//!   `period_ms` of simulated time it visits every resident page (in frame
//!   order), with an 8-bit history of what it saw and a moving average
//!   `f1 = 100·popcount(history) − 60·8`, `f0 = (70·f0 + 30·f1/100)/100`
//!   (integer arithmetic, truncating): a page with `f0 ≥ 0` is hot. A cold
//!   page's accessed bit is read and cleared; a hot page's only with
//!   probability `hot_sample_percent` (20 %), and otherwise it is assumed
//!   accessed. An accessed page's time becomes the time of the scan. A newly
//!   mapped page starts with an empty history, `f0 = 0`, and the time of
//!   its mapping.
//! ## Paper
//! "Mosaic Pages: Big TLB Reach with Small Pages", ASPLOS 2023, DOI
//! 10.1145/3582016.3582021, §2.4 (Horizon LRU, ghosts, "simulates a global
//! LRU"), §3.2 (timestamps emulated from accessed bits by a 1 s scanner with
//! hot/cold sampling at 20 %).
//! ## Choices where the paper is silent
//! - A page is a ghost when its last use is strictly before the horizon
//!   ("prior to the current horizon"); a page used exactly at the horizon
//!   (possible only with sampled times) is live. The prototype tests
//!   `< horizon` in the front yard and `> horizon` for live backyard pages.
//! - Simulated time: an access is one translation, and one second is
//!   `accesses_per_second` translations (default 10^9: a 3 GHz core
//!   retiring about one instruction per cycle, a third of which access
//!   memory). The scan period is `period_ms` (default 1000) of that time.
//! - The prototype stamps an accessed page with its allocation counter;
//!   Tessera uses the access index, in both modes, so that the horizon and
//!   the ages of the two modes are on one clock.
//! - Clearing an accessed bit shoots down the page's TLB entries (`flush`,
//!   default true), since the paper notes that x86 needs the flush for the
//!   bit to be set again, which is why the prototype samples hot pages. The
//!   scanner runs on another core: no cycles are charged for it.
//! - The options of `linux_sampled` are ignored by `exact`.
//! - Host memory: 17 bytes per frame of physical memory (a list link pair,
//!   an owner byte and a time), 5 more with `linux_sampled`.
//! ## Config
//! `kind = "horizon"`, `scan = "exact" | "linux_sampled"`, `period_ms`
//! (1000), `accesses_per_second` (1000000000), `hot_sample_percent` (20),
//! `flush` (true).
//! ## Stats
//! `os.eviction.horizon.live_evictions` (evicted pages that were live: the
//! horizon rises to their last use), `.ghost_evictions`, `.revivals` (ghosts
//! used again), `.scans`, `.scanned`, `.hot_reads`, `.hot_assumed`,
//! `.flushes`, and gauges `.ghosts`, `.horizon`, `.clock`.

use rand::Rng;
use serde::{Deserialize, Serialize};

use super::list::PageLists;
use super::{AccessedBits, EvictionCtx, EvictionPolicy};
use crate::error::{Error, Result};
use crate::physmem::allocator::PageAges;
use crate::registry::Mechanism;
use crate::rng::SimRng;
use crate::stat_group;

/// How page times are learnt.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scan {
    /// Every translation stamps its page.
    #[default]
    Exact,
    /// The Linux prototype's periodic, sampled accessed-bit scan.
    LinuxSampled,
}

/// `kind = "horizon"` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub scan: Scan,
    /// Milliseconds of simulated time between two scans (`linux_sampled`).
    #[serde(default = "d_period_ms")]
    pub period_ms: u64,
    /// Translations per simulated second.
    #[serde(default = "d_accesses_per_second")]
    pub accesses_per_second: u64,
    /// Chance (percent) that a scan reads a hot page's accessed bit.
    #[serde(default = "d_hot")]
    pub hot_sample_percent: u32,
    /// Shoot down a page's TLB entries when the scan clears its accessed bit.
    #[serde(default = "d_true")]
    pub flush: bool,
}
fn d_period_ms() -> u64 {
    1000
}
fn d_accesses_per_second() -> u64 {
    1_000_000_000
}
fn d_hot() -> u32 {
    20
}
fn d_true() -> bool {
    true
}
impl Default for Config {
    fn default() -> Self {
        Config {
            scan: Scan::default(),
            period_ms: d_period_ms(),
            accesses_per_second: d_accesses_per_second(),
            hot_sample_percent: d_hot(),
            flush: d_true(),
        }
    }
}

impl Config {
    /// Translations between two scans.
    pub fn period(&self) -> Result<u64> {
        if self.hot_sample_percent > 100 {
            return Err(Error::config("os.eviction.hot_sample_percent", format!("must be 0 to 100, not {}", self.hot_sample_percent)));
        }
        let period = (self.accesses_per_second as u128 * self.period_ms as u128 / 1000).min(u64::MAX as u128) as u64;
        if period == 0 {
            return Err(Error::config(
                "os.eviction.period_ms",
                format!("{} ms at {} accesses per second is less than one access", self.period_ms, self.accesses_per_second),
            ));
        }
        Ok(period)
    }
}

stat_group! {
    /// Counters of Horizon LRU.
    pub struct HorizonStats {
        live_evictions: "pages", "evicted pages that were live (the horizon rises to their last use)",
        ghost_evictions: "pages", "evicted pages that were already ghosts",
        revivals: "pages", "ghost pages used again: live again without I/O",
        scans: "scans", "periodic accessed-bit scans (linux_sampled)",
        scanned: "pages", "resident pages visited by the scans",
        hot_reads: "pages", "hot pages whose accessed bit a scan read (sampled)",
        hot_assumed: "pages", "hot pages a scan assumed accessed without reading the bit",
        flushes: "pages", "pages whose translations a scan shot down when it cleared their accessed bit",
        ghosts: gauge "pages", "resident pages older than the horizon at the end of the run",
        horizon: gauge "accesses", "the horizon: the latest last use of an evicted page",
        clock: gauge "accesses", "translations the policy has seen (its time)",
    }
}

/// Per-page state of the sampled scan.
#[derive(Clone, Debug)]
struct Sampler {
    period: u64,
    next_scan: u64,
    hot_percent: u32,
    flush: bool,
    history: Vec<u8>,
    f0: Vec<i32>,
    rng: SimRng,
}

/// Resident pages on one list, most recently used at the head; times per frame.
#[derive(Clone, Debug)]
pub struct Horizon {
    list: PageLists<1>,
    /// Last use of each resident page.
    time: Vec<u64>,
    now: u64,
    horizon: u64,
    sampler: Option<Sampler>,
    stats: HorizonStats,
}

impl Mechanism for Horizon {
    const NAME: &'static str = "horizon";
    const SUMMARY: &'static str = "Horizon LRU (Mosaic Pages): access times, a horizon, ghosts; global LRU by exact or sampled times";
    type Config = Config;
    type Ctx = EvictionCtx;
    fn build(cfg: &Config, ctx: &EvictionCtx) -> Result<Self> {
        let frames = ctx.frames()?;
        let period = cfg.period()?;
        let sampler = (cfg.scan == Scan::LinuxSampled).then(|| Sampler {
            period,
            next_scan: period,
            hot_percent: cfg.hot_sample_percent,
            flush: cfg.flush,
            history: vec![0; frames],
            f0: vec![0; frames],
            rng: crate::rng::component_rng(ctx.seed, "os.eviction.horizon"),
        });
        Ok(Horizon { list: PageLists::new(frames), time: vec![0; frames], now: 0, horizon: 0, sampler, stats: HorizonStats::default() })
    }
}

/// The hot/cold moving average of the prototype's scanner.
#[inline]
pub fn next_f0(f0: i32, history: u8) -> i32 {
    let f1 = 100 * history.count_ones() as i32 - 60 * 8;
    (70 * f0 + 30 * f1 / 100) / 100
}

impl Horizon {
    #[inline]
    fn is_resident(&self, page: u64) -> bool {
        page < u32::MAX as u64 && self.list.list_of(page as u32).is_some()
    }

    /// Resident pages from most to least recent, with their times (tests and debugging; allocates).
    pub fn order(&self) -> Vec<(u64, u64)> {
        self.list.iter(0).into_iter().map(|p| (p, self.time[p as usize])).collect()
    }

    pub fn horizon(&self) -> u64 {
        self.horizon
    }

    /// The counters, with the gauges filled in.
    pub fn stats(&self) -> HorizonStats {
        let ghosts = self.list.iter(0).iter().filter(|&&p| self.time[p as usize] < self.horizon).count() as u64;
        HorizonStats { ghosts, horizon: self.horizon, clock: self.now, ..self.stats.clone() }
    }

    /// Make `page` the most recent, used now.
    #[inline]
    fn refresh(&mut self, page: u32) {
        let t = &mut self.time[page as usize];
        if *t < self.horizon {
            self.stats.revivals += 1;
        }
        *t = self.now;
        self.list.move_to_head(0, page);
    }
}

impl PageAges for Horizon {
    #[inline]
    fn last_use(&self, page: u64) -> Option<u64> {
        self.is_resident(page).then(|| self.time[page as usize])
    }
    #[inline]
    fn is_ghost(&self, page: u64) -> bool {
        self.is_resident(page) && self.time[page as usize] < self.horizon
    }
    #[inline]
    fn age(&self, page: u64) -> Option<(u64, bool)> {
        self.is_resident(page).then(|| {
            let t = self.time[page as usize];
            (t, t < self.horizon)
        })
    }
}

impl EvictionPolicy for Horizon {
    #[inline]
    fn on_map(&mut self, page: u64) {
        debug_assert!(!self.is_resident(page), "page {page} mapped twice");
        let p = page as u32;
        self.time[p as usize] = self.now;
        self.list.move_to_head(0, p);
        if let Some(s) = &mut self.sampler {
            s.history[p as usize] = 0;
            s.f0[p as usize] = 0;
        }
    }

    #[inline]
    fn on_unmap(&mut self, page: u64) {
        if page < u32::MAX as u64 {
            self.list.remove(page as u32);
        }
    }

    #[inline]
    fn on_evict(&mut self, page: u64) {
        if let Some(t) = self.last_use(page) {
            if t < self.horizon {
                self.stats.ghost_evictions += 1;
            } else {
                self.stats.live_evictions += 1;
                self.horizon = t;
            }
        }
        self.on_unmap(page);
    }

    #[inline(always)]
    fn wants_touches(&self) -> bool {
        true
    }

    #[inline(always)]
    fn on_touch(&mut self, page: u64) {
        if self.sampler.is_none() && self.is_resident(page) {
            self.refresh(page as u32);
        }
        self.now += 1;
    }

    #[inline]
    fn victim(&mut self, _bits: &mut dyn AccessedBits) -> Option<u64> {
        self.list.tail(0).map(u64::from)
    }

    #[inline]
    fn resident(&self) -> u64 {
        self.list.len(0)
    }

    fn ages(&self) -> Option<&dyn PageAges> {
        Some(self)
    }

    fn scans(&self) -> bool {
        self.sampler.is_some()
    }

    #[inline]
    fn scan_due(&self) -> bool {
        self.sampler.as_ref().is_some_and(|s| self.now >= s.next_scan)
    }

    fn scan(&mut self, bits: &mut dyn AccessedBits) {
        let Some(mut s) = self.sampler.take() else { return };
        self.stats.scans += 1;
        for p in 0..self.time.len() as u32 {
            if self.list.list_of(p).is_none() {
                continue;
            }
            self.stats.scanned += 1;
            let i = p as usize;
            let accessed = if s.f0[i] >= 0 && s.rng.gen_range(0..100) >= s.hot_percent {
                self.stats.hot_assumed += 1;
                true
            } else {
                self.stats.hot_reads += (s.f0[i] >= 0) as u64;
                let set = if s.flush { bits.test_and_clear_flush(p as u64) } else { bits.test_and_clear(p as u64) };
                self.stats.flushes += (set && s.flush) as u64;
                set
            };
            s.history[i] = s.history[i] << 1 | accessed as u8;
            s.f0[i] = next_f0(s.f0[i], s.history[i]);
            if accessed {
                self.refresh(p);
            }
        }
        s.next_scan = self.now + s.period;
        self.sampler = Some(s);
    }

    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats(), v);
    }
}

#[cfg(test)]
mod tests {
    use super::super::reference::{self, NoBits, RefHorizon, Snapshot, TestBits};
    use super::*;
    use proptest::prelude::*;

    impl Snapshot for Horizon {
        fn snapshot(&self) -> Vec<Vec<u64>> {
            self.list.check().unwrap();
            let order = self.order();
            let mut v = vec![order.iter().map(|o| o.0).collect(), order.iter().map(|o| o.1).collect(), vec![self.horizon, self.now]];
            v.push(order.iter().filter(|o| o.1 < self.horizon).map(|o| o.0).collect());
            if let Some(s) = &self.sampler {
                v.push(order.iter().map(|o| s.f0[o.0 as usize] as i64 as u64).collect());
                v.push(order.iter().map(|o| s.history[o.0 as usize] as u64).collect());
            }
            v
        }
    }

    fn horizon(frames: u64, cfg: Config) -> Horizon {
        Horizon::build(&cfg, &EvictionCtx { capacity_frames: frames, seed: 3 }).unwrap()
    }

    fn sampled(period: u64) -> Config {
        Config { scan: Scan::LinuxSampled, period_ms: period, accesses_per_second: 1000, ..Config::default() }
    }

    #[test]
    fn evicting_a_live_page_raises_the_horizon_and_makes_older_pages_ghosts() {
        let mut h = horizon(16, Config::default());
        for p in [1, 2, 3, 4] {
            h.on_map(p);
            h.on_touch(p);
        }
        // Times: 1 → 0, 2 → 1, 3 → 2, 4 → 3.
        assert_eq!(h.victim(&mut NoBits), Some(1));
        assert_eq!(h.last_use(3), Some(2));
        h.on_evict(3);
        assert_eq!(h.horizon(), 2);
        assert!(h.is_ghost(1) && h.is_ghost(2) && !h.is_ghost(4) && !h.is_ghost(3));
        assert_eq!(h.last_use(3), None);
        // A ghost used again is live again.
        h.on_touch(2);
        assert!(!h.is_ghost(2));
        assert_eq!(h.stats().revivals, 1);
        h.on_evict(1);
        let s = h.stats();
        assert_eq!((s.live_evictions, s.ghost_evictions, s.horizon, s.ghosts, s.clock), (1, 1, 2, 0, 5));
        // Unmapping is not evicting: the horizon stays.
        h.on_unmap(4);
        assert_eq!(h.horizon(), 2);
        assert_eq!(h.resident(), 1);
    }

    #[test]
    fn the_victim_is_the_least_recently_used_page_as_in_lru() {
        let mut h = horizon(16, Config::default());
        let mut l = super::super::lru::Lru::build(&Default::default(), &EvictionCtx { capacity_frames: 16, seed: 0 }).unwrap();
        for (k, p) in [5u64, 9, 2, 5, 7, 9, 9, 2, 11, 5].into_iter().enumerate() {
            if k % 3 == 0 && l.order().contains(&p) {
                l.on_touch(p);
                h.on_touch(p);
            } else if !l.order().contains(&p) {
                l.on_map(p);
                h.on_map(p);
            }
            assert_eq!(h.victim(&mut NoBits), l.victim(&mut NoBits));
        }
        assert_eq!(h.order().iter().map(|o| o.0).collect::<Vec<_>>(), l.order());
    }

    #[test]
    fn the_scanner_samples_hot_pages_and_reads_cold_ones() {
        let mut h = horizon(8, sampled(4)); // one scan every 4 accesses
        let mut bits = TestBits::new(8);
        h.on_map(1);
        h.on_map(2);
        for _ in 0..4 {
            h.on_touch(1);
        }
        assert!(h.scan_due());
        bits.set(1);
        h.scan(&mut bits);
        assert!(!h.scan_due());
        let s = h.stats();
        // New pages start hot (f0 = 0): each is read with 20 % chance, else assumed accessed.
        assert_eq!(s.scanned, 2);
        assert_eq!(s.hot_reads + s.hot_assumed, 2);
        assert_eq!(s.scans, 1);
        // Pages never accessed again turn cold once their history empties;
        // then every scan reads their bit, and their times stand still.
        for _ in 0..40 {
            for _ in 0..4 {
                h.on_touch(0);
            }
            h.scan(&mut bits);
        }
        let smp = h.sampler.as_ref().unwrap();
        assert!(smp.f0[1] < 0 && smp.f0[2] < 0, "cold: {} {}", smp.f0[1], smp.f0[2]);
        let (t1, t2, reads) = (h.last_use(1), h.last_use(2), h.stats().hot_reads + h.stats().hot_assumed);
        for _ in 0..4 {
            h.on_touch(0);
        }
        h.scan(&mut bits);
        assert_eq!((h.last_use(1), h.last_use(2)), (t1, t2));
        assert_eq!(h.stats().hot_reads + h.stats().hot_assumed, reads, "no hot page left");
        // A set bit of a cold page is read: it is used now.
        bits.set(2);
        for _ in 0..4 {
            h.on_touch(0);
        }
        h.scan(&mut bits);
        assert_eq!(h.last_use(2), Some(h.stats().clock));
        assert_eq!(h.victim(&mut NoBits), Some(1));
    }

    #[test]
    fn the_moving_average_is_the_prototypes_integer_formula() {
        // f1 = 100·popcount − 480; f0' = (70·f0 + 30·f1/100) / 100, truncating.
        assert_eq!(next_f0(0, 0xFF), (30 * 320 / 100) / 100);
        assert_eq!(next_f0(0, 0), (30 * -480 / 100) / 100);
        assert_eq!(next_f0(-3, 0), (70 * -3 + 30 * -480 / 100) / 100);
        assert_eq!(next_f0(-3, 0), -3);
        assert_eq!(next_f0(2, 0b0001_1111), (140 + 30 * 20 / 100) / 100);
        let mut f0 = 0;
        for _ in 0..20 {
            f0 = next_f0(f0, 0xFF);
        }
        assert!(f0 >= 0, "an always-accessed page stays hot");
    }

    #[test]
    fn bad_periods_name_their_keys() {
        let e = |c: Config| match Horizon::build(&c, &EvictionCtx { capacity_frames: 8, seed: 0 }) {
            Err(Error::Config { path, .. }) => path,
            other => panic!("{other:?}"),
        };
        assert_eq!(e(Config { period_ms: 0, ..sampled(1) }), "os.eviction.period_ms");
        assert_eq!(e(Config { accesses_per_second: 999, period_ms: 1, ..sampled(1) }), "os.eviction.period_ms");
        assert_eq!(e(Config { hot_sample_percent: 101, ..sampled(1) }), "os.eviction.hot_sample_percent");
        assert_eq!(Config::default().period().unwrap(), 1_000_000_000);
    }

    proptest! {
        #[test]
        fn exact_horizon_matches_the_reference(cap in 1u64..48, ops in reference::ops(48, 300)) {
            reference::run(horizon(cap, Config::default()), RefHorizon::new(Config::default(), cap, 3), cap, &ops)?;
        }

        #[test]
        fn sampled_horizon_matches_the_reference(
            cap in 1u64..48, period in 1u64..12, hot in 0u32..=100, flush in any::<bool>(), ops in reference::ops(48, 300),
        ) {
            let c = Config { hot_sample_percent: hot, flush, ..sampled(period) };
            reference::run(horizon(cap, c.clone()), RefHorizon::new(c, cap, 3), cap, &ops)?;
        }
    }
}
