//! Physically indexed data caches and DRAM, shared by data references and page walks.
//!
//! ## What it models
//! Up to three levels (`l1d`, `l2`, `llc`, whichever are configured) in front
//! of DRAM. A reference enters at a level (data at `l1d`; page walks at the
//! walker's `entry_level`), is served by the first level that holds its line,
//! and the line is then installed in every level it missed in. Walk references
//! and data references share the same arrays, so page-table lines and data
//! compete for capacity, and each is counted separately.
//! See [`hierarchy`] for the exact rules, and [`prefetch`] for the per-level
//! prefetchers.
//!
//! ## Stats
//! Per level `cache.<level>.{data_hits, data_misses, walk_hits, walk_misses,
//! hits, misses, prefetches, useful_prefetches, writebacks, evictions}` and
//! `cache.dram.{data_accesses, walk_accesses}` ([`CacheHierarchy::visit`]
//! emits them without the `cache.` prefix).

pub mod hierarchy;
pub mod level;
pub mod prefetch;
#[cfg(test)]
pub mod reference;

pub use hierarchy::{CacheHierarchy, DramStats, LevelStats};
pub use level::CacheLevel;

/// Who issued a memory reference (counted separately so page-table/data interference shows).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source {
    Data,
    Walk,
}

/// Outcome of one reference: the level that served it (index into the present levels;
/// `== num_levels()` means DRAM) and its latency in cycles.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Served {
    pub level: u8,
    pub latency: u32,
}
