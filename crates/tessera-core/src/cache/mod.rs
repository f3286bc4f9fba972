//! SKELETON — to be replaced by the structures helper.
pub mod prefetch;
use crate::config::spec::CacheSpec;
use crate::error::Result;
use crate::stats::StatVisitor;

/// Who issued a memory reference (counted separately so page-table/data interference shows).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Source { Data, Walk }

/// Outcome of one reference: the level that served it (index into the present levels;
/// `== num_levels()` means DRAM) and its latency in cycles.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Served { pub level: u8, pub latency: u32 }

#[derive(Clone, Debug)]
pub struct CacheHierarchy { dram_latency: u32, names: Vec<&'static str> }

impl CacheHierarchy {
    pub fn build(spec: &CacheSpec, seed: u64) -> Result<Self> {
        let _ = seed;
        Ok(CacheHierarchy { dram_latency: spec.dram_latency, names: spec.levels().iter().map(|l| l.0).collect() })
    }
    pub fn num_levels(&self) -> usize { self.names.len() }
    /// Config names of present levels in order ("l1d", "l2", "llc").
    pub fn level_names(&self) -> &[&'static str] { &self.names }
    /// Hit latency of level `i` (`i == num_levels()` is DRAM).
    pub fn latency_of(&self, i: usize) -> u32 { let _ = i; self.dram_latency }
    /// One reference to physical address `paddr` entering at level `start`.
    #[inline]
    pub fn access(&mut self, paddr: u64, is_write: bool, start: usize, source: Source) -> Served {
        let _ = (paddr, is_write, start, source);
        Served { level: self.names.len() as u8, latency: self.dram_latency }
    }
    /// Stats under `cache.<level>.*` and `cache.dram.*` (caller adds the `cache.` prefix).
    pub fn visit(&self, v: &mut dyn StatVisitor) { let _ = v; }
}
