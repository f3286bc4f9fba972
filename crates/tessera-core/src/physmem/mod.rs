//! SKELETON — to be replaced by the memory helper.
pub mod allocator;
use crate::addr::Pfn;
use crate::config::spec::PhysMemSpec;
use crate::error::Result;
use crate::stats::StatVisitor;

#[derive(Clone, Debug)]
pub struct PhysMem { capacity_frames: u64 }

impl PhysMem {
    /// Build the allocator named by `spec.allocator` and apply `spec.fragmentation`.
    pub fn build(spec: &PhysMemSpec, seed: u64) -> Result<Self> { let _ = seed; Ok(PhysMem { capacity_frames: spec.capacity.0 >> 12 }) }
    pub fn capacity_frames(&self) -> u64 { self.capacity_frames }
    /// Allocate a block of 2^order frames, or `Error::OutOfMemory` naming `what`.
    pub fn alloc(&mut self, order: u32, what: &str) -> Result<Pfn> { let _ = (order, what); Ok(Pfn(0)) }
    /// Allocate a block of 2^order frames if one is free.
    pub fn try_alloc(&mut self, order: u32) -> Option<Pfn> { let _ = order; None }
    pub fn free(&mut self, pfn: Pfn, order: u32) { let _ = (pfn, order); }
    /// Allocate one zeroed 4 KiB frame with backing storage, for a page-table node.
    pub fn alloc_table_frame(&mut self) -> Result<Pfn> { Ok(Pfn(0)) }
    /// Read the 8-byte word at physical address `paddr` (8-byte aligned). Frames without
    /// backing storage (data frames) read as 0.
    #[inline]
    pub fn read_u64(&self, paddr: u64) -> u64 { let _ = paddr; 0 }
    /// Write the 8-byte word at `paddr`; `paddr` must lie in a table frame.
    #[inline]
    pub fn write_u64(&mut self, paddr: u64, value: u64) { let _ = (paddr, value); }
    /// Stats under `physmem.*` (caller adds the prefix).
    pub fn visit(&self, v: &mut dyn StatVisitor) { let _ = v; }
}
