//! What a GPU application does, counted from its kernels alone (no machine):
//! `tessera gpu info` on an Accel-Sim trace or a built-in kernel.
//!
//! ## What it counts
//! Warp and thread instructions by class, memory instructions by space, and
//! what the global ones coalesce into ([`super::coalesce`]): sectors, lines
//! and page references per warp instruction, the distinct pages touched, and
//! memory allocated against memory touched (the bloat a page size causes
//! before any machine runs: a page is backed whole once any byte of it is
//! touched).
//!
//! ## Choices
//! - Pages are counted at one page size, given by the caller; bloat compares
//!   the touched pages' bytes with the bytes the allocations cover.
//! - A global access outside every allocation is counted apart
//!   (`outside_allocations`): a trace whose copies do not cover what its
//!   kernels touch (Accel-Sim lists only host-to-device copies) has some.

use rustc_hash::FxHashSet;
use serde::Serialize;

use super::coalesce::Coalesced;
use super::{Allocation, KernelSource, Space};
use crate::addr::PageSize;
use crate::error::Result;

/// One kernel's launch and size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct KernelLine {
    pub id: u32,
    pub name: String,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    pub thread_blocks: u64,
    pub warp_insts: u64,
    pub thread_insts: u64,
    /// Global warp memory instructions.
    pub global_insts: u64,
}

/// Counts over a whole application.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct AppSummary {
    /// The page size distinct pages and bloat are counted in, bytes.
    pub page_bytes: u64,
    pub allocations: u64,
    /// Bytes the allocations cover (each rounded up to 256 bytes).
    pub allocated_bytes: u64,
    /// Each allocation's name and bytes requested, in allocation order (the
    /// names a free schedule uses).
    pub buffers: Vec<(String, u64)>,
    pub kernels: Vec<KernelLine>,
    pub thread_blocks: u64,
    pub warps: u64,
    pub warp_insts: u64,
    pub thread_insts: u64,
    /// Warp instructions by class: alu, sfu, load, store, atomic, barrier, branch, exit.
    pub by_op: [u64; 8],
    /// Warp memory instructions by space: global, shared, local.
    pub global_insts: u64,
    pub shared_insts: u64,
    pub local_insts: u64,
    /// What the global warp instructions coalesce into, summed over them.
    pub global_sectors: u64,
    pub global_lines: u64,
    pub global_page_refs: u64,
    /// Global lane accesses outside every allocation.
    pub outside_allocations: u64,
    /// Distinct pages of `page_bytes` touched by global accesses.
    pub pages_touched: u64,
}

impl AppSummary {
    /// Bytes of the pages touched, against the bytes allocated: above 1 when
    /// pages back more than was allocated (large pages), below 1 when
    /// allocated memory is never touched.
    pub fn touched_over_allocated(&self) -> f64 {
        if self.allocated_bytes == 0 {
            0.0
        } else {
            (self.pages_touched * self.page_bytes) as f64 / self.allocated_bytes as f64
        }
    }
}

/// Page sizes a summary counts in, by the names `tessera gpu info` takes.
pub const PAGE_SIZES: &[&str] = &["4KiB", "64KiB", "2MiB"];

/// The page size called `name` (one of [`PAGE_SIZES`], in any case).
pub fn page_size(name: &str) -> Result<PageSize> {
    PageSize::parse(name)
        .filter(|p| *p != PageSize::Size1G)
        .ok_or_else(|| crate::error::Error::config_allowed("page_size", format!("unknown page size \"{name}\""), PAGE_SIZES))
}

/// Count every kernel of `src` (consumed), pages at `page`.
pub fn summarise(src: &mut dyn KernelSource, page: PageSize) -> Result<AppSummary> {
    let mut allocs: Vec<Allocation> = src.allocations().to_vec();
    let buffers = allocs.iter().map(|a| (a.name.clone(), a.bytes)).collect();
    allocs.sort_by_key(|a| a.base);
    let mut s = AppSummary {
        page_bytes: page.bytes(),
        allocations: allocs.len() as u64,
        allocated_bytes: allocs.iter().map(Allocation::covered).sum(),
        buffers,
        ..AppSummary::default()
    };
    let inside = |va: u64| {
        // The allocation starting at or below `va`, if it covers it.
        let i = allocs.partition_point(|a| a.base <= va);
        i > 0 && allocs[i - 1].contains(va)
    };
    let mut c = Coalesced::new(page);
    let mut pages = FxHashSet::default();
    while let Some(k) = src.next_kernel()? {
        let mut line = KernelLine {
            id: k.id,
            name: k.name.clone(),
            grid: k.grid,
            block: k.block,
            thread_blocks: k.blocks.len() as u64,
            warp_insts: 0,
            thread_insts: 0,
            global_insts: 0,
        };
        for b in &k.blocks {
            s.warps += b.warps.len() as u64;
            for w in &b.warps {
                for (i, addrs) in w.iter() {
                    line.warp_insts += 1;
                    line.thread_insts += i.lanes() as u64;
                    s.by_op[i.op as usize] += 1;
                    match i.space {
                        Space::None => {}
                        Space::Shared => s.shared_insts += 1,
                        Space::Local => s.local_insts += 1,
                        Space::Global => {
                            line.global_insts += 1;
                            c.coalesce(i.size, addrs);
                            s.global_sectors += c.sectors().len() as u64;
                            s.global_lines += c.lines().len() as u64;
                            s.global_page_refs += c.pages().len() as u64;
                            pages.extend(c.pages().iter().copied());
                            s.outside_allocations += addrs.iter().filter(|&&a| !inside(a)).count() as u64;
                        }
                    }
                }
            }
        }
        s.thread_blocks += line.thread_blocks;
        s.warp_insts += line.warp_insts;
        s.thread_insts += line.thread_insts;
        s.global_insts += line.global_insts;
        s.kernels.push(line);
    }
    s.pages_touched = pages.len() as u64;
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::accelsim::{write_app, AccelsimReader};
    use crate::workload::gpu::kernels::{self, tests::params};
    use crate::workload::gpu::Op;

    fn built(name: &str, given: &[(&str, &str)]) -> Box<dyn KernelSource> {
        (kernels::find(name).unwrap().build)(&params(name, given, 1)).unwrap()
    }

    #[test]
    fn vector_add_coalesces_each_warp_access_into_one_line() {
        // 64 elements in two full warps: a, b and c are 256 bytes each, so
        // every warp's loads and stores are one aligned 128-byte line.
        let s = summarise(built("vector_add", &[("n", "64"), ("block", "32")]).as_mut(), PageSize::Size4K).unwrap();
        assert_eq!((s.kernels.len(), s.thread_blocks, s.warps), (1, 2, 2));
        assert_eq!(s.global_insts, 6, "two loads and a store per warp");
        assert_eq!((s.global_sectors, s.global_lines, s.global_page_refs), (24, 6, 6));
        assert_eq!((s.allocations, s.allocated_bytes, s.pages_touched, s.outside_allocations), (3, 768, 1, 0));
        assert_eq!(s.by_op.iter().sum::<u64>(), s.warp_insts);
        assert_eq!(s.by_op[Op::Load as usize], 4);
        assert_eq!(s.by_op[Op::Store as usize], 2);
        assert!((s.touched_over_allocated() - 4096.0 / 768.0).abs() < 1e-12);
    }

    #[test]
    fn large_pages_touch_fewer_pages_and_bloat_more() {
        let small = summarise(built("gups", &[]).as_mut(), PageSize::Size4K).unwrap();
        let large = summarise(built("gups", &[]).as_mut(), PageSize::Size2M).unwrap();
        assert_eq!(small.global_sectors, large.global_sectors);
        assert!(large.pages_touched < small.pages_touched);
        assert!(large.touched_over_allocated() >= small.touched_over_allocated());
    }

    #[test]
    fn an_accel_sim_trace_of_a_kernel_counts_the_same_as_the_kernel() {
        let dir = std::env::temp_dir().join(format!("tessera-gpu-summary-{}", std::process::id()));
        let given = [("scale", "8"), ("block", "64")];
        write_app(&dir, built("bfs", &given).as_mut(), true).unwrap();
        let from_kernel = summarise(built("bfs", &given).as_mut(), PageSize::Size64K).unwrap();
        let from_trace = summarise(&mut AccelsimReader::open(&dir).unwrap(), PageSize::Size64K).unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(from_kernel.kernels.len() > 1, "one launch per BFS level");
        // A trace's buffers are its copies: the kernel's sizes, not its names.
        let sizes = |s: &AppSummary| s.buffers.iter().map(|b| b.1).collect::<Vec<_>>();
        assert_eq!(sizes(&from_trace), sizes(&from_kernel));
        let (mut a, mut b) = (from_trace, from_kernel);
        a.buffers.clear();
        b.buffers.clear();
        assert_eq!(a, b);
    }
}
