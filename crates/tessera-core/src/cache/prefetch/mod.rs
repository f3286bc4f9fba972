//! Data prefetchers attached to one cache level.
//!
//! ## Contract
//! `on_access(line_addr, hit, out)` is called for every demand access that
//! reaches the level (`line_addr` is the line-aligned physical address, `hit`
//! whether the level held it). The prefetcher pushes line-aligned physical
//! addresses to prefetch into `out`. Prefetches never cross a 4 KiB physical
//! page (they would need a translation, and prefetch requests never trigger
//! page walks); the cache drops any that do. The buffer is caller-owned, so the
//! hot path does not allocate.

pub mod next_line;
pub mod none;
pub mod stride;

pub use crate::registry::AnyPrefetcher;

pub const PREFETCH_BUF: usize = 8;

/// Fixed-capacity output buffer for prefetch candidates.
#[derive(Clone, Debug, Default)]
pub struct PrefetchBuf {
    pub addrs: [u64; PREFETCH_BUF],
    pub len: usize,
}

impl PrefetchBuf {
    #[inline]
    pub fn push(&mut self, a: u64) {
        if self.len < PREFETCH_BUF {
            self.addrs[self.len] = a;
            self.len += 1;
        }
    }
    #[inline]
    pub fn clear(&mut self) {
        self.len = 0;
    }
    pub fn as_slice(&self) -> &[u64] {
        &self.addrs[..self.len]
    }
}

pub trait Prefetcher {
    fn on_access(&mut self, line_addr: u64, hit: bool, out: &mut PrefetchBuf);

    /// The owning level's line size in bytes, told once after build (the
    /// family's build context carries no geometry). Prefetchers that do not
    /// work in lines ignore it.
    fn set_line_bytes(&mut self, _bytes: u64) {}
}
