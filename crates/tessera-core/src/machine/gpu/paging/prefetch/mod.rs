//! Prefetchers of the unified-memory fault path (`gpu.paging.prefetch`), a
//! family: which pages a batch migrates besides the ones that faulted.
//!
//! ## The seam
//! A batch's faults are grouped by application and by 2 MiB virtual block
//! (the root of every tree prefetcher in NVIDIA's driver and in UVM-Smart).
//! For each block the fault path hands the prefetcher a [`Block`]: the
//! block's pages in *migration units* (`gpu.paging.unit`: 64 KiB, the
//! batch-aware paper's page, or 4 KiB), with bitmaps of the units already
//! on the GPU or on their way, the units this batch faulted on, and the
//! units inside one of the application's allocations. The prefetcher ORs
//! the units to migrate besides the faults into `out`; the fault path drops
//! from it anything resident, faulted or unallocated, so a member cannot
//! prefetch outside an allocation or twice.
//!
//! ## Members
//! - `none`: the faulted units only;
//! - `sequential_local`: the aligned region around each fault (UVM-Smart's
//!   SLp);
//! - `tree_neighbourhood`: UVM-Smart's tree-based neighbourhood prefetcher
//!   (TBN) over 64 KiB basic blocks;
//! - `nvidia_tree`: the bitmap-tree prefetcher of NVIDIA's driver;
//! - `random`: one random allocated unit per fault (UVM-Smart's Rp).
//!
//! Every member reads only `block` and proposes units in `0..block.units`;
//! the bitmaps hold no unit at or past `block.units`.

pub mod nvidia_tree;
pub mod none;
pub mod random;
pub mod sequential_local;
pub mod tree_neighbourhood;

#[cfg(test)]
mod tests;

use crate::config::spec::ByteSize;
use crate::error::{Error, Result};

/// Bytes of the virtual block every prefetcher reasons over.
pub const BLOCK_BYTES: u64 = 2 << 20;

/// A bitmap of up to 512 units (a 2 MiB block of 4 KiB units; a block of
/// 64 KiB units uses the first 32 bits).
#[derive(Copy, Clone, Default, PartialEq, Eq, Hash)]
pub struct Bits(pub [u64; 8]);

impl std::fmt::Debug for Bits {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.ones()).finish()
    }
}

impl Bits {
    #[inline]
    pub fn get(&self, i: u32) -> bool {
        self.0[(i / 64) as usize] >> (i % 64) & 1 == 1
    }
    #[inline]
    pub fn set(&mut self, i: u32) {
        self.0[(i / 64) as usize] |= 1 << (i % 64);
    }
    #[inline]
    pub fn clear(&mut self, i: u32) {
        self.0[(i / 64) as usize] &= !(1 << (i % 64));
    }
    /// Set every unit in `lo..hi`.
    pub fn set_range(&mut self, lo: u32, hi: u32) {
        for i in lo..hi {
            self.set(i);
        }
    }
    /// Units set in `lo..hi`.
    pub fn count_range(&self, lo: u32, hi: u32) -> u32 {
        (lo..hi).filter(|&i| self.get(i)).count() as u32
    }
    pub fn count(&self) -> u32 {
        self.0.iter().map(|w| w.count_ones()).sum()
    }
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
    pub fn or(&self, o: &Bits) -> Bits {
        Bits(std::array::from_fn(|i| self.0[i] | o.0[i]))
    }
    pub fn and(&self, o: &Bits) -> Bits {
        Bits(std::array::from_fn(|i| self.0[i] & o.0[i]))
    }
    pub fn and_not(&self, o: &Bits) -> Bits {
        Bits(std::array::from_fn(|i| self.0[i] & !o.0[i]))
    }
    /// The set units, in ascending order.
    pub fn ones(&self) -> impl Iterator<Item = u32> + '_ {
        (0..512u32).filter(|&i| self.get(i))
    }
}

/// One 2 MiB virtual block of an application, as a batch sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Virtual address of the block's first byte (2 MiB aligned).
    pub base: u64,
    /// Bytes of one migration unit (4 KiB or 64 KiB).
    pub unit_bytes: u64,
    /// Units in the block: `BLOCK_BYTES / unit_bytes` (512 or 32).
    pub units: u32,
    /// Units on the GPU, or migrating in this or an earlier batch.
    pub resident: Bits,
    /// Units this batch faulted on (never resident).
    pub faulted: Bits,
    /// Units inside one of the application's allocations.
    pub allocated: Bits,
}

/// What a prefetcher is built with.
#[derive(Clone, Debug)]
pub struct PrefetchCtx {
    /// Bytes of one migration unit.
    pub unit_bytes: u64,
    /// Sub-seed for prefetchers that draw random numbers.
    pub seed: u64,
}

/// A member of the prefetcher family.
pub trait Prefetcher {
    /// OR into `out` the units of `block` to migrate besides its faults.
    fn prefetch(&mut self, block: &Block, out: &mut Bits);
}

pub use crate::registry::AnyPagePrefetcher;

/// Build the prefetcher of a resolved spec (for tests and the fault path).
pub fn build(spec: &crate::registry::MechanismSpec, ctx: &PrefetchCtx) -> Result<AnyPagePrefetcher> {
    AnyPagePrefetcher::build(spec, ctx, "gpu.paging.prefetch")
}

/// Units in an aligned region of `bytes` set at config key `key`: `bytes` must
/// be a power-of-two multiple of the unit and at most a block, since every
/// region a member reasons over is a node of the block's binary tree.
pub(crate) fn region_units(key: &str, bytes: u64, unit_bytes: u64) -> Result<u32> {
    let ok = bytes >= unit_bytes && bytes <= BLOCK_BYTES && bytes.is_power_of_two() && bytes.is_multiple_of(unit_bytes);
    if ok {
        return Ok((bytes / unit_bytes) as u32);
    }
    let allowed: Vec<String> = std::iter::successors(Some(unit_bytes), |b| Some(b * 2))
        .take_while(|&b| b > 0 && b <= BLOCK_BYTES)
        .map(|b| ByteSize(b).display())
        .collect();
    let allowed: Vec<&str> = allowed.iter().map(String::as_str).collect();
    Err(Error::config_allowed(
        key,
        format!(
            "must be a power-of-two multiple of the migration unit ({}) up to the 2 MiB block, not {}",
            ByteSize(unit_bytes).human(),
            ByteSize(bytes).human_exact()
        ),
        &allowed,
    ))
}
