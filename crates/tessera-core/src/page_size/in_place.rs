//! Mosaic's in-place coalescer as a page-size policy: first touches map
//! base pages (4 KiB, or 64 KiB), and a 2 MiB region becomes a large page,
//! without moving anything, once all of its pages are usable in one frame.
//!
//! ## What it models
//! The runtime half of the coalescer: every page that becomes usable (its
//! transfer done, or mapped before the run) is counted against its 2 MiB
//! physical frame; when a frame's 512 pages are usable, the coalescer asks
//! the page table to coalesce the virtual region of that page
//! ([`crate::pagetable::coalesce`]), which succeeds only if the region's 512
//! pages are exactly that frame, in order (so of one application). Base
//! translations already cached stay valid and age out (no flush, no stall).
//! Splintering (when a page of a coalesced region is unmapped) clears the
//! bits and shoots the large entry down from every TLB, charging
//! `splinter_l1_cycles` + `splinter_l2_cycles`.
//! ## Paper
//! Ausavarungnirun et al., "Mosaic", MICRO 2017, doi:10.1145/3123939.3123975,
//! §4.3; the released code's invalidation latencies
//! (`l1_tlb_invalidate_latency` 15, `l2_tlb_invalidate_latency` 200).
//! ## Choices where the paper is silent
//! - A region coalesces when its pages are *usable* (mapped and
//!   transferred: "allocation is done" once the data transfer completes,
//!   §4.1), not when they are allocated: with demand paging a region
//!   coalesces after its 512th page arrives.
//! - Coalescing itself costs the warps nothing (the runtime's PTE writes
//!   are off the GPU's critical path).
//! - `base = "64k"` (beyond the paper): first touches map 64 KiB pages, 32
//!   of which coalesce into a 2 MiB page; the table needs a 64 KiB level
//!   below the 2 MiB one (`bits = [9, 9, 9, 5, 4]`). A 64 KiB page the
//!   allocator cannot place is mapped as 4 KiB pages (its region then
//!   never coalesces).
//! ## Config
//! `physmem.page_size = { kind = "in_place", base = "4k", splinter_l1_cycles
//! = 15, splinter_l2_cycles = 200 }`. Needs a format whose large pages keep
//! their node (`pagetable.format = { kind = "radix", large_reads_next =
//! true }`) and a GPU machine whose TLBs hold 2 MiB entries.
//! ## Stats
//! Under `os.coalescer.`: `coalesced`, `splintered`, `not_contiguous`
//! (frames full of pages that are not one region in order), `large_pages`
//! (gauge).

use serde::{Deserialize, Serialize};

use super::{InPlace, PageSizePolicy, Plan, PolicyCtx};
use crate::addr::PageSize;
use crate::error::{Error, Result};
use crate::registry::Mechanism;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The base page first touches map: 4 KiB (the paper) or 64 KiB (a
    /// GPU's small page since Pascal).
    #[serde(default = "d_base")]
    pub base: String,
    /// Cycles to drop a splintered page's large entry from the L1 TLBs.
    #[serde(default = "d_l1")]
    pub splinter_l1_cycles: u64,
    /// Cycles to drop it from the shared L2 TLB.
    #[serde(default = "d_l2")]
    pub splinter_l2_cycles: u64,
}
fn d_base() -> String {
    "4k".into()
}
fn d_l1() -> u64 {
    15
}
fn d_l2() -> u64 {
    200
}
impl Default for Config {
    fn default() -> Self {
        Config { base: d_base(), splinter_l1_cycles: d_l1(), splinter_l2_cycles: d_l2() }
    }
}

#[derive(Clone, Debug)]
pub struct InPlaceCoalescer {
    spec: InPlace,
    plans: Vec<Plan>,
}

impl Mechanism for InPlaceCoalescer {
    const NAME: &'static str = "in_place";
    const SUMMARY: &'static str = "map 4 KiB pages and coalesce a full, contiguous 2 MiB frame in place (GPU Mosaic)";
    type Config = Config;
    type Ctx = PolicyCtx;
    fn build(cfg: &Config, ctx: &PolicyCtx) -> Result<Self> {
        if !ctx.sizes.contains(&PageSize::Size2M) {
            return Err(Error::config(
                "physmem.page_size",
                "in_place coalescing makes 2 MiB pages; the page-table format maps none (use pagetable.format = { kind = \"radix\", large_reads_next = true })",
            ));
        }
        let base = match PageSize::parse(&cfg.base) {
            Some(b @ (PageSize::Size4K | PageSize::Size64K)) => b,
            _ => return Err(Error::config_allowed("physmem.page_size.base", format!("\"{}\" is not a base page size", cfg.base), &["4k", "64k"])),
        };
        if !ctx.sizes.contains(&base) {
            return Err(Error::config(
                "physmem.page_size.base",
                format!(
                    "the page-table format maps no {} pages (a radix table maps 64 KiB pages with a level of 4 index bits below one of 5: bits = [9, 9, 9, 5, 4])",
                    PageSize::NAMES[base.index()]
                ),
            ));
        }
        let spec = InPlace { splinter_cycles: cfg.splinter_l1_cycles + cfg.splinter_l2_cycles, base };
        // A 64 KiB page the allocator cannot place falls back to 4 KiB pages.
        let plans = if base == PageSize::Size4K { vec![Plan::Contiguous(base)] } else { vec![Plan::Contiguous(base), Plan::Contiguous(PageSize::Size4K)] };
        Ok(InPlaceCoalescer { spec, plans })
    }
}

impl PageSizePolicy for InPlaceCoalescer {
    fn plans(&self) -> &[Plan] {
        &self.plans
    }
    fn in_place(&self) -> Option<InPlace> {
        Some(self.spec)
    }
}
