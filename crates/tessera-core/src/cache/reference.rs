//! Naive model of [`CacheHierarchy`](crate::cache::CacheHierarchy) with LRU levels.
//!
//! ## What it models
//! The rules of [`crate::cache::hierarchy`], written as plainly as possible:
//! every level is a `Vec` of sets, every set a `Vec` of lines in recency order
//! (most recent first) with their dirty and prefetched flags; lookups are
//! linear searches and an eviction pops the last line. Prefetchers are the real
//! mechanisms (they have their own tests); only the hierarchy logic is
//! re-implemented.
//!
//! ## Choices
//! - LRU only (random replacement is covered by [`crate::table::reference`]).
//! - Test-only; the proptest comparing both models lives here.
//!
//! ## Config
//! Built from the same [`CacheSpec`].
//!
//! ## Stats
//! The same [`LevelStats`] and [`DramStats`] structs, compared field by field.

use super::hierarchy::{DramStats, LevelStats};
use super::prefetch::{AnyPrefetcher, PrefetchBuf, Prefetcher};
use super::{Served, Source};
use crate::config::spec::CacheSpec;

#[derive(Clone, Debug)]
struct Line {
    number: u64,
    dirty: bool,
    prefetched: bool,
}

struct RefLevel {
    latency: u32,
    line_bytes: u64,
    ways: usize,
    sets: Vec<Vec<Line>>,
    prefetcher: AnyPrefetcher,
    stats: LevelStats,
}

impl RefLevel {
    fn set_of(&self, number: u64) -> usize {
        (number % self.sets.len() as u64) as usize
    }

    fn present(&self, number: u64) -> bool {
        self.sets[self.set_of(number)].iter().any(|l| l.number == number)
    }

    fn fill(&mut self, number: u64, dirty: bool, prefetched: bool) {
        let ways = self.ways;
        let set = self.set_of(number);
        let lines = &mut self.sets[set];
        if lines.len() == ways {
            let victim = lines.pop().expect("full set");
            self.stats.evictions += 1;
            if victim.dirty {
                self.stats.writebacks += 1;
            }
        }
        lines.insert(0, Line { number, dirty, prefetched });
    }
}

pub struct RefHierarchy {
    levels: Vec<RefLevel>,
    dram_latency: u32,
    pub dram: DramStats,
}

impl RefHierarchy {
    /// Same geometry and prefetchers as `spec`; replacement is always LRU.
    pub fn new(spec: &CacheSpec) -> Self {
        let levels = spec
            .levels()
            .into_iter()
            .map(|(name, l)| {
                let lines = l.size.0 / l.line.0;
                let ways = l.ways.resolve(lines as u32) as usize;
                let mut prefetcher = AnyPrefetcher::build(&l.prefetcher, &(), name).expect("prefetcher");
                prefetcher.set_line_bytes(l.line.0);
                RefLevel {
                    latency: l.latency,
                    line_bytes: l.line.0,
                    ways,
                    sets: vec![Vec::new(); lines as usize / ways],
                    prefetcher,
                    stats: LevelStats::default(),
                }
            })
            .collect();
        RefHierarchy { levels, dram_latency: spec.dram_latency, dram: DramStats::default() }
    }

    pub fn stats(&self, i: usize) -> &LevelStats {
        &self.levels[i].stats
    }

    pub fn access(&mut self, paddr: u64, is_write: bool, start: usize, source: Source) -> Served {
        let n = self.levels.len();
        let start = start.min(n);
        let mut served = n;
        let mut candidates: Vec<(usize, Vec<u64>)> = Vec::new();
        for i in start..n {
            let lvl = &mut self.levels[i];
            let number = paddr / lvl.line_bytes;
            let set = lvl.set_of(number);
            let pos = lvl.sets[set].iter().position(|l| l.number == number);
            let hit = pos.is_some();
            if let Some(p) = pos {
                let mut line = lvl.sets[set].remove(p);
                if line.prefetched {
                    line.prefetched = false;
                    lvl.stats.useful_prefetches += 1;
                }
                if is_write && i == start {
                    line.dirty = true;
                }
                lvl.sets[set].insert(0, line);
            }
            match (source, hit) {
                (Source::Data, true) => lvl.stats.data_hits += 1,
                (Source::Data, false) => lvl.stats.data_misses += 1,
                (Source::Walk, true) => lvl.stats.walk_hits += 1,
                (Source::Walk, false) => lvl.stats.walk_misses += 1,
            }
            if hit {
                lvl.stats.hits += 1;
            } else {
                lvl.stats.misses += 1;
            }
            let mut buf = PrefetchBuf::default();
            lvl.prefetcher.on_access(number * lvl.line_bytes, hit, &mut buf);
            candidates.push((i, buf.as_slice().to_vec()));
            if hit {
                served = i;
                break;
            }
        }
        if served == n {
            match source {
                Source::Data => self.dram.data_accesses += 1,
                Source::Walk => self.dram.walk_accesses += 1,
            }
        }
        for i in start..served {
            let number = paddr / self.levels[i].line_bytes;
            self.levels[i].fill(number, is_write && i == start, false);
        }
        for (i, addrs) in candidates {
            let lvl = &mut self.levels[i];
            for a in addrs {
                if a / 4096 != paddr / 4096 || lvl.present(a / lvl.line_bytes) {
                    continue;
                }
                lvl.stats.prefetches += 1;
                lvl.fill(a / lvl.line_bytes, false, true);
            }
        }
        let latency = if served == n { self.dram_latency } else { self.levels[served].latency };
        Served { level: served as u8, latency }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::CacheHierarchy;
    use crate::config::spec::{ByteSize, CacheLevelSpec, Ways};
    use crate::registry::MechanismSpec;
    use proptest::prelude::*;

    fn mech(kind: &str, params: &str) -> MechanismSpec {
        MechanismSpec { kind: kind.into(), params: params.parse().unwrap() }
    }

    fn level(size: u64, ways: Ways, latency: u32, prefetcher: MechanismSpec) -> Option<CacheLevelSpec> {
        Some(CacheLevelSpec { size: ByteSize(size), ways, line: ByteSize(64), latency, replacement: mech("lru", ""), prefetcher })
    }

    /// Small hierarchies covering direct-mapped, set-associative, fully associative (>32 ways)
    /// levels, missing levels and each prefetcher.
    fn spec(which: usize) -> CacheSpec {
        let none = || mech("none", "");
        let (l1d, l2, llc) = match which {
            0 => (level(512, Ways::N(2), 4, none()), level(2048, Ways::N(4), 12, none()), level(8192, Ways::N(8), 40, none())),
            1 => (level(256, Ways::N(1), 4, none()), None, level(4096, Ways::Full, 40, none())),
            2 => (level(512, Ways::N(2), 4, mech("next_line", "degree = 2")), level(2048, Ways::N(4), 12, mech("stride", "threshold = 1")), level(8192, Ways::N(8), 40, none())),
            3 => (None, level(1024, Ways::Full, 12, mech("next_line", "on_miss_only = false")), level(4096, Ways::N(4), 40, mech("stride", "table_entries = 4\ndegree = 3"))),
            _ => (level(512, Ways::N(4), 4, mech("stride", "")), level(4096, Ways::N(64), 12, mech("next_line", "")), None),
        };
        CacheSpec { l1d, l2, llc, dram_latency: 200 }
    }

    #[derive(Clone, Debug)]
    struct Acc {
        addr: u64,
        write: bool,
        start: usize,
        walk: bool,
    }

    /// Address streams mixing sequential runs, strides and random jumps over 64 KiB.
    fn stream() -> impl Strategy<Value = Vec<Acc>> {
        let step = (0u8..4, 0u64..1024, any::<bool>(), 0usize..5, any::<bool>());
        prop::collection::vec(step, 1..600).prop_map(|steps| {
            let mut cur = 0u64;
            steps
                .into_iter()
                .map(|(mode, x, write, start, walk)| {
                    cur = match mode {
                        0 => cur + 8,
                        1 => cur + 64,
                        2 => cur.wrapping_add((x % 7) * 128),
                        _ => x * 64 + (x % 64),
                    } % 65536;
                    // Mostly enter at l1d, sometimes lower or at DRAM.
                    let start = if start < 3 { 0 } else { start - 2 };
                    Acc { addr: cur, write, start, walk }
                })
                .collect()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn hierarchy_matches_reference(which in 0usize..5, accs in stream()) {
            let s = spec(which);
            let mut fast = CacheHierarchy::build(&s, 3).unwrap();
            let mut slow = RefHierarchy::new(&s);
            for (i, a) in accs.iter().enumerate() {
                let src = if a.walk { Source::Walk } else { Source::Data };
                prop_assert_eq!(fast.access(a.addr, a.write, a.start, src), slow.access(a.addr, a.write, a.start, src), "access {} {:?}", i, a);
            }
            for l in 0..fast.num_levels() {
                prop_assert_eq!(&fast.level_stats(l), slow.stats(l), "level {}", l);
            }
            prop_assert_eq!(fast.dram_stats(), &slow.dram);
        }
    }

    /// Guards the property test: its streams must exercise every counter.
    #[test]
    fn streams_exercise_hits_evictions_writebacks_and_prefetches() {
        use proptest::strategy::ValueTree;
        use proptest::test_runner::TestRunner;
        let mut runner = TestRunner::deterministic();
        let mut total = LevelStats::default();
        for which in 0..5 {
            let s = spec(which);
            let mut fast = CacheHierarchy::build(&s, 3).unwrap();
            for _ in 0..8 {
                for a in stream().new_tree(&mut runner).unwrap().current() {
                    fast.access(a.addr, a.write, a.start, if a.walk { Source::Walk } else { Source::Data });
                }
            }
            for l in 0..fast.num_levels() {
                let st = fast.level_stats(l);
                total.hits += st.hits;
                total.misses += st.misses;
                total.evictions += st.evictions;
                total.writebacks += st.writebacks;
                total.prefetches += st.prefetches;
                total.useful_prefetches += st.useful_prefetches;
                total.walk_hits += st.walk_hits;
            }
        }
        let t = &total;
        assert!([t.hits, t.misses, t.evictions, t.writebacks, t.prefetches, t.useful_prefetches, t.walk_hits].iter().all(|&c| c > 50), "{t:?}");
    }
}
