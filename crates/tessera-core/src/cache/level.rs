//! One cache level as a part: a set-associative array of lines with its
//! replacement policy, write-back flags and prefetcher. Machines compose
//! levels: the CPU's [`super::CacheHierarchy`] chains `l1d -> l2 -> llc`;
//! the GPU machine puts one level per SM in front of a shared, banked one.
//!
//! A level knows nothing of time: a reference is a hit or a miss that
//! installs the line at once. Bank and channel occupancy, and merging
//! misses to the same line, belong to the machine's timing layer.

use super::prefetch::{AnyPrefetcher, PrefetchBuf, Prefetcher};
use super::Source;
use crate::config::spec::CacheLevelSpec;
use crate::error::{Error, Result};
use crate::replacement::{AnyReplacement, Geometry};
use crate::rng::sub_seed;
use crate::table::{Access, SetAssoc};
use super::hierarchy::LevelStats;

/// Line flags kept in the table's one-byte payload.
const DIRTY: u8 = 1;
const PREFETCHED: u8 = 2;

pub(super) const PAGE_SHIFT: u32 = 12;

/// Host bytes one simulated line occupies (32-bit tag, flag byte and about
/// two bytes of a 16-way set's LRU order matrix).
const HOST_BYTES_PER_LINE: usize = 7;
/// Levels whose arrays take at least this much host memory get their rows
/// host-prefetched on a miss above them; smaller ones stay in the host's
/// private caches, where a prefetch only costs instructions. Half a megabyte:
/// the 8 MiB LLC model (896 KiB of arrays) shares the host's 2 MiB L2 with
/// the page tables a walk reads at random, and its rows still miss there.
const HOST_PREFETCH_MIN_BYTES: usize = 1 << 19;

#[derive(Clone, Debug)]
pub struct CacheLevel {
    pub(super) name: &'static str,
    pub(super) latency: u32,
    pub(super) line_shift: u32,
    pub(super) set_mask: u64,
    pub(super) table: SetAssoc<u8, u32>,
    pub(super) prefetcher: AnyPrefetcher,
    /// False for `none`: skips the prefetch bookkeeping entirely.
    pub(super) prefetching: bool,
    /// The table is too large for the host's private caches, so a miss above
    /// host-prefetches this level's row (a host-speed measure only).
    pub(super) host_prefetch: bool,
    /// Set of this level's last host-prefetched row: the host's own
    /// prefetchers already follow a run of consecutive sets.
    pub(super) last_row: u32,
    pub(super) buf: PrefetchBuf,
    /// Demand references by `[data miss, data hit, walk miss, walk hit]`.
    pub(super) demand: [u64; 4],
    /// Every other counter (its demand hits and misses stay zero; see [`CacheLevel::stats`]).
    pub(super) stats: LevelStats,
}

impl CacheLevel {
    #[inline]
    pub(super) fn locate(&self, paddr: u64) -> (u32, u32) {
        let line = paddr >> self.line_shift;
        // Config resolution bounds physical memory so line numbers fit (and
        // stay below the INVALID tag, u32::MAX).
        debug_assert!(line < u32::MAX as u64, "line number of {paddr:#x} exceeds a 32-bit tag");
        ((line & self.set_mask) as u32, line as u32)
    }

    /// One counter per (source, outcome): hit/miss is the one unpredictable
    /// outcome per level, so counting is one indexed add; the per-source and
    /// total hits and misses are summed when read ([`CacheLevel::stats`]).
    #[inline(always)]
    fn count(&mut self, source: Source, hit: bool) {
        self.demand[((source == Source::Walk) as usize) << 1 | hit as usize] += 1;
    }

    /// This level's counters, the demand hits and misses filled in.
    pub fn stats(&self) -> LevelStats {
        let [data_misses, data_hits, walk_misses, walk_hits] = self.demand;
        LevelStats {
            data_hits,
            data_misses,
            walk_hits,
            walk_misses,
            hits: data_hits + walk_hits,
            misses: data_misses + walk_misses,
            ..self.stats.clone()
        }
    }

    /// A demand reference to `paddr`'s line: a hit (true) clears the line's
    /// prefetched flag (counting a useful prefetch) and, for a write
    /// performed here (`dirty`), sets its dirty flag; a miss installs the line
    /// (dirty if `dirty`) and counts any eviction. Counts the hit or miss.
    #[inline(always)]
    pub fn demand(&mut self, paddr: u64, dirty: bool, source: Source) -> bool {
        let (set, tag) = self.locate(paddr);
        let flags = if dirty { DIRTY } else { 0 };
        let hit = match self.table.access(set, tag, flags) {
            Access::Hit(slot) => {
                let d = self.table.data_mut(slot);
                if *d & PREFETCHED != 0 {
                    *d &= !PREFETCHED;
                    self.stats.useful_prefetches += 1;
                }
                *d |= flags;
                true
            }
            Access::Filled(evicted) => {
                if let Some((_, old)) = evicted {
                    self.stats.evictions += 1;
                    self.stats.writebacks += (old & DIRTY != 0) as u64;
                }
                false
            }
        };
        self.count(source, hit);
        hit
    }

    /// Install `paddr`'s line, which this level does not hold (it just
    /// missed here, or a probe just found it absent), with `flags`, counting
    /// any eviction.
    #[inline]
    pub(super) fn fill_absent(&mut self, paddr: u64, flags: u8) {
        let (set, tag) = self.locate(paddr);
        if let Some((_, old)) = self.table.insert_after_miss(set, tag, flags) {
            self.stats.evictions += 1;
            if old & DIRTY != 0 {
                self.stats.writebacks += 1;
            }
        }
    }

    /// Install the candidates collected for an access to `page`, then clear the buffer.
    pub(super) fn issue_prefetches(&mut self, page: u64) {
        for k in 0..self.buf.len {
            let a = self.buf.addrs[k];
            if a >> PAGE_SHIFT != page {
                continue;
            }
            let (set, tag) = self.locate(a);
            if self.table.probe(set, tag).is_some() {
                continue;
            }
            self.stats.prefetches += 1;
            self.fill_absent(a, PREFETCHED);
        }
        self.buf.clear();
    }
}


impl CacheLevel {
    /// The level configured at `path` (e.g. `cache.l2`, `gpu.l2`), called
    /// `name` in stats; replacement seeded with `sub_seed(seed, path)`.
    pub fn build(path: &str, name: &'static str, l: &CacheLevelSpec, seed: u64) -> Result<CacheLevel> {
        let line = l.line.0;
        if line == 0 || !line.is_power_of_two() {
            return Err(Error::config(format!("{path}.line"), format!("{line} bytes: must be a power of two")));
        }
        let size = l.size.0;
        let lines = size / line;
        if !size.is_multiple_of(line) || lines == 0 || lines > u32::MAX as u64 {
            return Err(Error::config(format!("{path}.size"), format!("{size} bytes is not a whole number of {line}-byte lines")));
        }
        let lines = lines as u32;
        let ways = l.ways.resolve(lines);
        if ways == 0 || !lines.is_multiple_of(ways) {
            return Err(Error::config(format!("{path}.ways"), format!("{lines} lines are not divisible into {ways} ways")));
        }
        let sets = lines / ways;
        if !sets.is_power_of_two() {
            return Err(Error::config(format!("{path}.size"), format!("{lines} lines / {ways} ways = {sets} sets, which is not a power of two")));
        }
        let geom = Geometry { sets, ways, seed: sub_seed(seed, path) };
        let repl = AnyReplacement::build(&l.replacement, &geom, &format!("{path}.replacement")).map_err(|e| under(path, e))?;
        let mut prefetcher = AnyPrefetcher::build(&l.prefetcher, &(), &format!("{path}.prefetcher")).map_err(|e| under(path, e))?;
        prefetcher.set_line_bytes(line);
        let prefetching = !matches!(prefetcher, AnyPrefetcher::NoPrefetch(_));
        Ok(CacheLevel {
            name,
            latency: l.latency,
            line_shift: line.trailing_zeros(),
            set_mask: sets as u64 - 1,
            table: SetAssoc::new(sets, ways, repl),
            prefetcher,
            prefetching,
            host_prefetch: lines as usize * HOST_BYTES_PER_LINE >= HOST_PREFETCH_MIN_BYTES,
            last_row: 0,
            buf: PrefetchBuf::default(),
            demand: [0; 4],
            stats: LevelStats::default(),
        })
    }

    /// Load-to-use latency of a hit, in cycles.
    #[inline]
    pub fn latency(&self) -> u32 {
        self.latency
    }

    /// The line number of `paddr` (its address over the line size).
    #[inline]
    pub fn line_of(&self, paddr: u64) -> u64 {
        paddr >> self.line_shift
    }

    /// Whether the level holds `paddr`'s line (no side effects).
    pub fn holds(&self, paddr: u64) -> bool {
        let (set, tag) = self.locate(paddr);
        self.table.probe(set, tag).is_some()
    }

    /// Drop every line of `[paddr, paddr + bytes)`: (lines dropped, dirty among them).
    pub fn invalidate_range(&mut self, paddr: u64, bytes: u64) -> (u64, u64) {
        let (mut dropped, mut dirty) = (0, 0);
        let line = 1u64 << self.line_shift;
        let mut a = paddr & !(line - 1);
        while a < paddr + bytes {
            let (set, tag) = self.locate(a);
            if let Some(slot) = self.table.probe(set, tag) {
                let flags = self.table.data(slot);
                self.table.invalidate_slot(slot);
                dropped += 1;
                dirty += (flags & DIRTY != 0) as u64;
            }
            a += line;
        }
        (dropped, dirty)
    }
}

/// Put the level's path in front of a mechanism's own error path.
pub(super) fn under(level_path: &str, e: Error) -> Error {
    match e {
        Error::Config { path, msg, allowed } if !path.starts_with(level_path.split('.').next().unwrap_or(level_path)) => {
            Error::Config { path: format!("{level_path}.{path}"), msg, allowed }
        }
        other => other,
    }
}
