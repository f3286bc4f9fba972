//! The cache hierarchy: present levels of `l1d`, `l2`, `llc`, then DRAM.
//!
//! ## What it models
//! `access(paddr, is_write, start, source)`:
//! 1. Levels are probed from `start` downward. The first level holding the
//!    line serves the reference; if none does, DRAM serves it (level index
//!    `num_levels()`). `start == num_levels()` goes straight to DRAM.
//! 2. The latency is the serving level's configured load-to-use latency (or
//!    `dram_latency`), not a sum over the levels probed.
//! 3. The line is installed in every level from `start` down to the level
//!    above the server.
//! 4. Each level's prefetcher sees every demand access that reached that level
//!    (with hit or miss). Its candidates are installed in that level only,
//!    after the demand fills, flagged as prefetched; candidates outside the
//!    access's 4 KiB physical page, or already present, are dropped.
//!
//! ## Choices where the papers are silent
//! - Non-inclusive, non-exclusive: an eviction never invalidates other levels.
//! - Write-allocate, write-back at the level where the write is performed
//!   (`start`): that copy becomes dirty; copies below stay clean. Evicting a
//!   dirty line counts a `writeback` at that level; writebacks are counted,
//!   not sent to the level below (they take no capacity or latency there).
//! - Prefetch fills do not look up or fill lower levels and are not demand
//!   hits or misses. A demand hit on a prefetched line counts
//!   `useful_prefetches` once and clears the flag.
//! - The payload of each [`SetAssoc`] slot is one byte of line flags (dirty,
//!   prefetched); tags are full line numbers (`paddr >> log2(line)`).
//! - Replacement per level is any registered policy, seeded with
//!   `sub_seed(seed, "cache.<level>")`.
//! - A level that misses installs the line at once, before the levels below
//!   are looked up: levels never interact, so this equals filling after the
//!   server is found. Hierarchies without prefetchers (the common case) take
//!   a short loop; those with one the general path. Results are identical;
//!   the reference test exercises both.
//! - Checked against the naive model in `cache::reference` (test-only).
//!
//! ## Config
//! `[cache.<l1d|l2|llc>] size, ways, line, latency, replacement, prefetcher`;
//! `cache.dram_latency`.
//!
//! ## Stats
//! See [`LevelStats`] and [`DramStats`].

use super::level::{CacheLevel, PAGE_SHIFT};
use super::prefetch::Prefetcher;
use super::{Served, Source};
use crate::config::spec::CacheSpec;
use crate::error::Result;
use crate::stat_group;
use crate::stats::{visit_prefixed, StatVisitor};

stat_group! {
    /// Counters of one cache level (`cache.<level>.*`).
    pub struct LevelStats {
        data_hits: "accesses", "data references served by this level",
        data_misses: "accesses", "data references that looked up this level and missed",
        walk_hits: "accesses", "page-walk references served by this level",
        walk_misses: "accesses", "page-walk references that looked up this level and missed",
        hits: "accesses", "demand references served by this level (data + walk)",
        misses: "accesses", "demand references that missed in this level (data + walk)",
        prefetches: "lines", "prefetched lines installed in this level",
        useful_prefetches: "lines", "prefetched lines later hit by a demand reference",
        writebacks: "lines", "dirty lines evicted from this level (counted, not propagated)",
        evictions: "lines", "valid lines evicted by demand or prefetch fills",
    }
}

stat_group! {
    /// References served by memory (`cache.dram.*`).
    pub struct DramStats {
        data_accesses: "accesses", "data references that missed every cache level",
        walk_accesses: "accesses", "page-walk references that missed every cache level",
    }
}

#[derive(Clone, Debug)]
pub struct CacheHierarchy {
    levels: Vec<CacheLevel>,
    /// Some level has a prefetcher: accesses take the general path.
    any_prefetching: bool,
    dram_latency: u32,
    dram: DramStats,
    names: Vec<&'static str>,
}

impl CacheHierarchy {
    pub fn build(spec: &CacheSpec, seed: u64) -> Result<Self> {
        let mut levels = Vec::new();
        for (name, l) in spec.levels() {
            levels.push(CacheLevel::build(&format!("cache.{name}"), name, l, seed)?);
        }
        let names = levels.iter().map(|l| l.name).collect();
        let any_prefetching = levels.iter().any(|l| l.prefetching);
        Ok(CacheHierarchy { levels, any_prefetching, dram_latency: spec.dram_latency, dram: DramStats::default(), names })
    }

    #[inline]
    pub fn num_levels(&self) -> usize {
        self.levels.len()
    }

    /// Config names of present levels in order ("l1d", "l2", "llc").
    pub fn level_names(&self) -> &[&'static str] {
        &self.names
    }

    /// Hit latency of level `i` (`i >= num_levels()` is DRAM).
    #[inline]
    pub fn latency_of(&self, i: usize) -> u32 {
        self.levels.get(i).map_or(self.dram_latency, |l| l.latency)
    }

    /// One reference to physical address `paddr` entering at level `start`
    /// (`start >= num_levels()` goes to DRAM).
    #[inline(always)]
    pub fn access(&mut self, paddr: u64, is_write: bool, start: usize, source: Source) -> Served {
        let n = self.levels.len();
        if start >= n {
            // Straight to DRAM (always so with no cache levels): nothing else
            // changes. Inlined into callers, so a cache-less model pays a few
            // instructions per reference.
            self.dram.data_accesses += (source == Source::Data) as u64;
            self.dram.walk_accesses += (source == Source::Walk) as u64;
            return Served { level: n as u8, latency: self.dram_latency };
        }
        self.access_levels(paddr, is_write, start, source)
    }

    /// `n` references that go straight to DRAM (entering below every level):
    /// the bulk form of [`Self::access`] with `start >= num_levels()`.
    #[inline]
    pub fn count_dram(&mut self, source: Source, n: u64) {
        match source {
            Source::Data => self.dram.data_accesses += n,
            Source::Walk => self.dram.walk_accesses += n,
        }
    }

    /// [`Self::access`] with `start < num_levels()`.
    #[inline]
    fn access_levels(&mut self, paddr: u64, is_write: bool, start: usize, source: Source) -> Served {
        if self.any_prefetching {
            return self.access_below(paddr, is_write, start, source);
        }
        // Without prefetchers (the common case) each level in turn is looked
        // up and, on a miss, filled at once (see `access_below`), until one hits.
        let n = self.levels.len();
        if self.levels[start].demand(paddr, is_write, source) {
            return Served { level: start as u8, latency: self.levels[start].latency };
        }
        self.host_prefetch_rows(paddr, start + 1);
        for i in start + 1..n {
            let lvl = &mut self.levels[i];
            if lvl.demand(paddr, false, source) {
                return Served { level: i as u8, latency: lvl.latency };
            }
        }
        self.count_dram(source, 1);
        Served { level: n as u8, latency: self.dram_latency }
    }

    /// The lower levels are large tables read at random: start their host
    /// cache misses together rather than one level after the other.
    #[inline(always)]
    fn host_prefetch_rows(&mut self, paddr: u64, from: usize) {
        for lvl in &mut self.levels[from..] {
            if lvl.host_prefetch {
                let set = lvl.locate(paddr).0;
                if set.wrapping_sub(lvl.last_row) > 1 {
                    lvl.table.prefetch_set(set);
                }
                lvl.last_row = set;
            }
        }
    }

    /// The general path, for hierarchies with a prefetcher: levels `start..`.
    /// Each level that misses installs the line at once: levels never
    /// interact (non-inclusive), so that is the same as filling them after
    /// the server is found, and saves locating each line twice.
    #[inline(never)]
    fn access_below(&mut self, paddr: u64, is_write: bool, start: usize, source: Source) -> Served {
        let n = self.levels.len();
        self.host_prefetch_rows(paddr, start);
        let mut served = n;
        let mut any_prefetch = false;
        for i in start..n {
            let lvl = &mut self.levels[i];
            let hit = lvl.demand(paddr, is_write && i == start, source);
            if lvl.prefetching {
                lvl.buf.clear();
                lvl.prefetcher.on_access(paddr >> lvl.line_shift << lvl.line_shift, hit, &mut lvl.buf);
                any_prefetch |= lvl.buf.len != 0;
            }
            if hit {
                served = i;
                break;
            }
        }
        if served == n {
            self.count_dram(source, 1);
        }
        if any_prefetch {
            // Levels start..=served (or ..n) saw the access; the rest have empty buffers.
            let end = (served + 1).min(n);
            for lvl in &mut self.levels[start..end] {
                if lvl.buf.len != 0 {
                    lvl.issue_prefetches(paddr >> PAGE_SHIFT);
                }
            }
        }
        Served { level: served as u8, latency: self.latency_of(served) }
    }

    /// Drop every line of the physical range `[paddr, paddr + bytes)` from
    /// every level (a page leaving memory): returns (lines dropped, dirty
    /// lines among them, which the OS writes back with the page). Line
    /// counters other than these are untouched.
    pub fn invalidate_range(&mut self, paddr: u64, bytes: u64) -> (u64, u64) {
        let (mut dropped, mut dirty) = (0, 0);
        for l in &mut self.levels {
            let (d, w) = l.invalidate_range(paddr, bytes);
            dropped += d;
            dirty += w;
        }
        (dropped, dirty)
    }

    /// Whether level `i` currently holds `paddr`'s line (no side effects).
    pub fn holds(&self, i: usize, paddr: u64) -> bool {
        self.levels.get(i).is_some_and(|l| l.holds(paddr))
    }

    /// Counters of level `i`.
    pub fn level_stats(&self, i: usize) -> LevelStats {
        self.levels[i].stats()
    }

    pub fn dram_stats(&self) -> &DramStats {
        &self.dram
    }

    /// Stats under `cache.<level>.*` and `cache.dram.*` (caller adds the `cache.` prefix).
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        for l in &self.levels {
            visit_prefixed(l.name, &l.stats(), v);
        }
        visit_prefixed("dram", &self.dram, v);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::spec::{ByteSize, CacheLevelSpec, Ways};
    use crate::registry::MechanismSpec;

    fn mech(kind: &str, params: &str) -> MechanismSpec {
        MechanismSpec { kind: kind.into(), params: params.parse().unwrap() }
    }

    fn level(size: u64, ways: u32, latency: u32) -> CacheLevelSpec {
        CacheLevelSpec {
            size: ByteSize(size),
            ways: Ways::N(ways),
            line: ByteSize(64),
            latency,
            replacement: mech("lru", ""),
            prefetcher: mech("none", ""),
        }
    }

    /// l1d 1 KiB 2-way (8 sets), l2 4 KiB 4-way (16 sets), llc 16 KiB 8-way (32 sets).
    fn spec3() -> CacheSpec {
        CacheSpec { l1d: Some(level(1024, 2, 4)), l2: Some(level(4096, 4, 12)), llc: Some(level(16384, 8, 40)), dram_latency: 200 }
    }

    fn build(spec: &CacheSpec) -> CacheHierarchy {
        CacheHierarchy::build(spec, 1).unwrap()
    }

    const D: Source = Source::Data;
    const W: Source = Source::Walk;

    #[test]
    fn cold_miss_goes_to_dram_then_hits_l1() {
        let mut c = build(&spec3());
        assert_eq!(c.access(0x1234, false, 0, D), Served { level: 3, latency: 200 });
        assert_eq!(c.access(0x1238, false, 0, D), Served { level: 0, latency: 4 });
        assert!((0..3).all(|i| c.holds(i, 0x1200)));
        assert_eq!(c.level_stats(0).data_misses, 1);
        assert_eq!(c.level_stats(0).data_hits, 1);
        assert_eq!(c.level_stats(1).misses, 1);
        assert_eq!(c.dram_stats().data_accesses, 1);
    }

    #[test]
    fn line_evicted_from_l1_hits_in_l2() {
        let mut c = build(&spec3());
        // l1d has 8 sets × 2 ways: lines 512 bytes apart share a set.
        for k in 0..3u64 {
            c.access(k * 512, false, 0, D);
        }
        assert!(!c.holds(0, 0));
        assert_eq!(c.level_stats(0).evictions, 1);
        assert_eq!(c.access(0, false, 0, D), Served { level: 1, latency: 12 });
        assert!(c.holds(0, 0));
        assert_eq!(c.level_stats(1).hits, 1);
        assert_eq!(c.level_stats(2).hits, 0);
    }

    #[test]
    fn walk_and_data_counters_are_split() {
        let mut c = build(&spec3());
        c.access(0x4000, false, 0, W);
        c.access(0x4000, false, 0, D);
        c.access(0x8000, false, 1, W);
        c.access(0x8000, false, 0, W);
        let l1 = c.level_stats(0);
        assert_eq!((l1.walk_misses, l1.walk_hits, l1.data_hits, l1.data_misses), (2, 0, 1, 0));
        assert_eq!((l1.hits, l1.misses), (1, 2));
        let l2 = c.level_stats(1);
        assert_eq!((l2.walk_misses, l2.walk_hits), (2, 1));
        assert_eq!(c.dram_stats().walk_accesses, 2);
        assert_eq!(c.dram_stats().data_accesses, 0);
    }

    #[test]
    fn entry_below_l1_skips_and_does_not_fill_l1() {
        let mut c = build(&spec3());
        assert_eq!(c.access(0x100, false, 1, W).level, 3);
        assert!(!c.holds(0, 0x100) && c.holds(1, 0x100) && c.holds(2, 0x100));
        assert_eq!(c.level_stats(0), LevelStats::default());
        assert_eq!(c.access(0x100, false, 1, W), Served { level: 1, latency: 12 });
    }

    #[test]
    fn dram_entry_touches_no_cache() {
        let mut c = build(&spec3());
        assert_eq!(c.access(0x100, true, 3, W), Served { level: 3, latency: 200 });
        assert_eq!(c.access(0x100, true, 7, W).level, 3);
        assert!((0..3).all(|i| !c.holds(i, 0x100)));
        assert_eq!(c.dram_stats().walk_accesses, 2);
    }

    #[test]
    fn dirty_eviction_counts_a_writeback_at_that_level_only() {
        let mut c = build(&spec3());
        c.access(0, true, 0, D);
        c.access(512, false, 0, D);
        c.access(1024, false, 0, D); // evicts line 0 (dirty) from l1d
        assert_eq!(c.level_stats(0).writebacks, 1);
        // A clean eviction adds none.
        c.access(1536, false, 0, D);
        assert_eq!(c.level_stats(0).writebacks, 1);
        assert_eq!(c.level_stats(0).evictions, 2);
        assert_eq!(c.level_stats(1).writebacks, 0);
    }

    #[test]
    fn write_hit_marks_line_dirty() {
        let mut c = build(&spec3());
        c.access(0, false, 0, D);
        c.access(0, true, 0, D);
        c.access(512, false, 0, D);
        c.access(1024, false, 0, D);
        assert_eq!(c.level_stats(0).writebacks, 1);
    }

    fn with_l1_prefetcher(kind: &str, params: &str) -> CacheSpec {
        let mut s = spec3();
        s.l1d.as_mut().unwrap().prefetcher = mech(kind, params);
        s
    }

    #[test]
    fn next_line_prefetch_makes_next_line_hit_and_useful() {
        let mut c = build(&with_l1_prefetcher("next_line", ""));
        assert_eq!(c.access(0x1000, false, 0, D).level, 3);
        assert!(c.holds(0, 0x1040) && !c.holds(1, 0x1040));
        assert_eq!(c.level_stats(0).prefetches, 1);
        assert_eq!(c.access(0x1040, false, 0, D), Served { level: 0, latency: 4 });
        assert_eq!(c.level_stats(0).useful_prefetches, 1);
        // The flag is cleared: a second hit is not useful again.
        c.access(0x1040, false, 0, D);
        assert_eq!(c.level_stats(0).useful_prefetches, 1);
        // Prefetches are not demand references.
        assert_eq!(c.level_stats(0).misses, 1);
        assert_eq!(c.level_stats(0).hits, 2);
    }

    #[test]
    fn no_prefetch_across_a_4k_page() {
        let mut c = build(&with_l1_prefetcher("next_line", ""));
        c.access(0x1fc0, false, 0, D);
        assert_eq!(c.level_stats(0).prefetches, 0);
        assert!(!c.holds(0, 0x2000));
        assert_eq!(c.access(0x2000, false, 0, D).level, 3);
    }

    #[test]
    fn present_lines_are_not_prefetched_again() {
        let mut c = build(&with_l1_prefetcher("next_line", ""));
        c.access(0x1040, false, 0, D);
        c.access(0x1000, false, 0, D);
        assert_eq!(c.level_stats(0).prefetches, 1); // 0x1080 only; 0x1040 was present
    }

    #[test]
    fn stride_prefetcher_in_l2_sees_only_l1_misses() {
        let mut s = spec3();
        s.l2.as_mut().unwrap().prefetcher = mech("stride", "threshold = 1\ndegree = 1");
        let mut c = build(&s);
        for a in [0x3000u64, 0x3080, 0x3100] {
            c.access(a, false, 0, D);
        }
        assert_eq!(c.level_stats(1).prefetches, 1);
        assert!(c.holds(1, 0x3180) && !c.holds(0, 0x3180));
        assert_eq!(c.access(0x3180, false, 0, D).level, 1);
        assert_eq!(c.level_stats(1).useful_prefetches, 1);
    }

    #[test]
    fn no_levels_means_dram_only() {
        let mut c = build(&CacheSpec::default());
        assert_eq!(c.num_levels(), 0);
        assert_eq!(c.access(0, false, 0, D), Served { level: 0, latency: 200 });
        assert_eq!(c.latency_of(0), 200);
    }

    #[test]
    fn level_names_and_latencies() {
        let mut s = spec3();
        s.l2 = None;
        let c = build(&s);
        assert_eq!(c.level_names(), &["l1d", "llc"]);
        assert_eq!((c.latency_of(0), c.latency_of(1), c.latency_of(2)), (4, 40, 200));
    }

    #[test]
    fn bad_geometry_is_an_error_not_a_panic() {
        let mut s = spec3();
        s.l2.as_mut().unwrap().size = ByteSize(3 * 4096);
        let e = CacheHierarchy::build(&s, 0).unwrap_err().to_string();
        assert!(e.contains("cache.l2.size") && e.contains("power of two"), "{e}");
        let mut s = spec3();
        s.l1d.as_mut().unwrap().ways = Ways::N(3);
        assert!(CacheHierarchy::build(&s, 0).unwrap_err().to_string().contains("cache.l1d.ways"));
        let mut s = spec3();
        s.llc.as_mut().unwrap().line = ByteSize(48);
        assert!(CacheHierarchy::build(&s, 0).unwrap_err().to_string().contains("cache.llc.line"));
        let mut s = spec3();
        s.llc.as_mut().unwrap().replacement = mech("lur", "");
        assert!(CacheHierarchy::build(&s, 0).unwrap_err().to_string().contains("cache.llc.replacement.kind"));
    }

    #[test]
    fn fully_associative_level_works() {
        let mut s = spec3();
        s.llc.as_mut().unwrap().ways = Ways::Full; // 256 ways, indexed table
        let mut c = build(&s);
        for k in 0..256u64 {
            c.access(k * 64, false, 2, D);
        }
        assert_eq!(c.level_stats(2).evictions, 0);
        assert_eq!(c.access(0, false, 2, D).level, 2);
        c.access(256 * 64, false, 2, D);
        assert_eq!(c.level_stats(2).evictions, 1);
        assert!(!c.holds(2, 64)); // least recently used
    }

    #[test]
    fn visit_names_every_counter() {
        let c = build(&spec3());
        let mut col = crate::stats::Collector::default();
        c.visit(&mut col);
        let names: Vec<&String> = col.stats.counters.keys().collect();
        assert_eq!(names.len(), 3 * 10 + 2);
        for n in ["l1d.data_hits", "l2.walk_misses", "llc.useful_prefetches", "l1d.writebacks", "dram.walk_accesses", "dram.data_accesses"] {
            assert!(col.stats.counters.contains_key(n), "{n}");
            assert!(!col.stats.info[n].desc.is_empty());
        }
    }
}
