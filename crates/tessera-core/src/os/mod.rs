//! The operating system's memory management: page faults, the page-size
//! policy, and (with a swap device) eviction under memory pressure.
//!
//! ## What it models
//! - A fault on a page never mapped is a minor fault: the page-size policy
//!   picks the largest candidate size whose aligned region is untouched and
//!   for which the allocator has a free block, the allocator is told the
//!   (asid, vpn, size) it places, and the page is mapped.
//! - Without a swap device, running out of frames is an error naming what
//!   could not be placed.
//!
//! Under memory pressure: which resident page to evict ([`eviction`], a
//! family that sees pages only as the first frame of each mapped page and
//! reads accessed bits through [`eviction::AccessedBits`]) and where an
//! evicted page's contents go ([`swap`]).

pub mod eviction;
pub mod swap;

use crate::addr::{Asid, PageSize, BASE_SHIFT};
use crate::cache::CacheHierarchy;
use crate::config::Spec;
use crate::error::Result;
use crate::memsys::Shootdown;
use crate::page_size::{PageSizePolicy, PolicyCtx};
use crate::pagetable::format::PageTableFormat;
use crate::pagetable::PageTable;
use crate::physmem::allocator::PageRequest;
use crate::physmem::PhysMem;
use crate::registry::{AnyFormat, AnyPageSizePolicy};
use crate::stats::{StatGroup, StatVisitor};
use crate::walker::Walker;

crate::stat_group! {
    pub struct OsStats {
        faults: "faults", "page faults handled (first touches and swap-ins)",
        large_fallbacks: "candidates", "larger page-size candidates skipped at a fault (region partly mapped, or no free block)",
    }
}

const PAGE_NAMES: [&str; PageSize::COUNT] = ["pages_4k", "pages_64k", "pages_2m", "pages_1g"];
const PAGE_DESCS: [&str; PageSize::COUNT] =
    ["4 KiB pages mapped", "64 KiB pages mapped", "2 MiB pages mapped", "1 GiB pages mapped"];

/// The OS of one machine.
#[derive(Clone, Debug)]
pub struct Os {
    policy: AnyPageSizePolicy,
    /// Sizes the page-table format maps (the per-size stats reported).
    sizes: Vec<PageSize>,
    stats: OsStats,
    /// Pages mapped per size (`PageSize::index`).
    pages: [u64; PageSize::COUNT],
}

impl Os {
    pub fn build(spec: &Spec, format: &AnyFormat, _capacity_frames: u64, _seed: u64) -> Result<Os> {
        let sizes = format.sizes().to_vec();
        let policy = AnyPageSizePolicy::build(&spec.physmem.page_size, &PolicyCtx { sizes: sizes.clone() }, "physmem.page_size")?;
        Ok(Os { policy, sizes, stats: OsStats::default(), pages: [0; PageSize::COUNT] })
    }

    /// A walk for `va` found no mapping: map the page.
    #[cold]
    #[allow(clippy::too_many_arguments)]
    pub fn fault(
        &mut self,
        va: u64,
        asid: Asid,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        _caches: &mut CacheHierarchy,
        _walker: &mut Walker,
        _tlbs: &mut impl Shootdown,
    ) -> Result<()> {
        self.stats.faults += 1;
        let candidates = self.policy.candidates();
        for (k, &size) in candidates.iter().enumerate() {
            let last = k + 1 == candidates.len();
            if !last && !pt.region_unmapped(mem, asid, va, size) {
                self.stats.large_fallbacks += 1;
                continue;
            }
            let req = PageRequest { asid, vpn: (va & !(size.bytes() - 1)) >> BASE_SHIFT, size };
            let Some(pfn) = mem.alloc_page(req, last)? else {
                self.stats.large_fallbacks += 1;
                continue;
            };
            pt.map(mem, asid, va, size, pfn)?;
            self.pages[size.index()] += 1;
            return Ok(());
        }
        unreachable!("the last page-size candidate always maps or errors")
    }

    /// A translation of the page whose first frame is `pfn` was used.
    #[inline(always)]
    pub fn touch(&mut self, _pfn: u64) {}

    /// Whether [`Self::touch`] must be called on every translation.
    #[inline]
    pub fn wants_touches(&self) -> bool {
        false
    }

    /// A store made the page at `va` dirty.
    #[inline]
    pub fn on_dirty(&mut self, _va: u64, _asid: Asid) {}

    /// Pages mapped of `size` so far.
    pub fn pages(&self, size: PageSize) -> u64 {
        self.pages[size.index()]
    }

    /// Stats under `os.*`.
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let mut p = crate::stats::Prefixed::new("os", v);
        self.stats.visit(&mut p);
        for size in &self.sizes {
            let i = size.index();
            p.counter(PAGE_NAMES[i], self.pages[i], "pages", PAGE_DESCS[i]);
        }
    }
}
