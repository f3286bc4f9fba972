//! SKELETON — to be replaced by the memory helper.
pub mod x86_radix;
use crate::addr::{Asid, PageSize, Pfn};
use crate::error::Result;
use crate::physmem::PhysMem;
use crate::stats::StatVisitor;

/// Per-address-space x86-64 radix page tables living in simulated physical memory.
#[derive(Clone, Debug)]
pub struct PageTable { levels: u32 }

impl PageTable {
    /// `levels` is 4 or 5 (checked by config resolution).
    pub fn new(levels: u32) -> Self { PageTable { levels } }
    pub fn levels(&self) -> u32 { self.levels }
    /// Root node of `asid`, allocating it on first use (CR3).
    pub fn root(&mut self, mem: &mut PhysMem, asid: Asid) -> Result<Pfn> { let _ = (mem, asid); Ok(Pfn(0)) }
    /// Map the `size`-aligned page containing `va` to the block starting at `pfn`, creating
    /// intermediate nodes as needed. Sets present, writable, user; leaves A/D clear.
    pub fn map(&mut self, mem: &mut PhysMem, asid: Asid, va: u64, size: PageSize, pfn: Pfn) -> Result<()> { let _ = (mem, asid, va, size, pfn); Ok(()) }
    /// True when nothing is mapped in the `size`-aligned virtual region containing `va`.
    pub fn region_unmapped(&self, mem: &PhysMem, asid: Asid, va: u64, size: PageSize) -> bool { let _ = (mem, asid, va, size); true }
    /// Software walk with no side effects: the frame backing `va`'s 4 KiB page and the page size.
    pub fn translate(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<(Pfn, PageSize)> { let _ = (mem, asid, va); None }
    /// Physical address of the leaf entry that maps `va`, if mapped.
    pub fn leaf_entry_addr(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<u64> { let _ = (mem, asid, va); None }
    /// Stats under `pagetable.*` (caller adds the prefix).
    pub fn visit(&self, v: &mut dyn StatVisitor) { let _ = v; }
}
