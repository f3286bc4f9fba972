//! GTSM superpages: a large virtual region is mapped with a GT-PDE over a
//! slice of non-contiguous usable B-blocks when one is free, and otherwise
//! with 4 KiB pages.
//!
//! ## What it models
//! The OS side of GTSM at fault time. The first touch of a virtual region
//! covered by one PD slot (4, 2 or 1 MiB, or the pair of superpages of a
//! P-GT-PDE) whose slot is empty asks the allocator for a slice (a pair
//! of slices in one 128 MiB chunk for a P-GT-PDE) and writes the GT-PDE;
//! when the slot already holds 4 KiB-page PDEs, or no slice is free, the
//! page is mapped at 4 KiB. Which slices are free, and which B-blocks a
//! GT-PDE takes, is the allocator's ([`crate::physmem::slices`]).
//!
//! A process uses 2 MiB PDEs or GT-PDEs, never both: this policy needs
//! `pagetable.format = "gt_pde"`, which maps no 2 MiB page (so THP cannot
//! be configured with it).
//! ## Paper
//! Du et al., "Supporting superpages in non-contiguous physical memory",
//! HPCA 2015, DOI 10.1109/HPCA.2015.7056035: §3.2, §3.6 (the BAV array and
//! the list of slices the OS keeps), §3.8 (validity).
//! ## Choices where the paper is silent
//! - Eager, at the first touch of the region, like THP at fault time (the
//!   paper pre-allocates page tables and says nothing of when superpages
//!   are formed); a region that fell back to 4 KiB pages stays so.
//! - A P-GT-PDE maps both of its superpages at the first touch of either.
//! - No swap: a superpage over a slice has no page-out path, so a swap
//!   device (`os.swap`) with this policy is a config error.
//! ## Config
//! `physmem.page_size = { kind = "gtsm", min_blocks = 33 }`: usable B-blocks
//! a slice needs for its first GT-PDE (33, more than half, as in the
//! paper's §3.8 and Fig. 7; or 32, all a bitmap needs).
//! ## Stats
//! Counted by the OS model: `os.gt_superpages` (superpages mapped),
//! `os.pages_4k`, `os.large_fallbacks`; the allocator's `physmem.slices.*`.

use serde::{Deserialize, Serialize};

use super::{PageSizePolicy, Plan, PolicyCtx};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Usable B-blocks a slice needs for its first GT-PDE: 33 or 32.
    #[serde(default = "d_min_blocks")]
    pub min_blocks: u32,
}
fn d_min_blocks() -> u32 {
    crate::gtsm::slice::MIN_USABLE
}
impl Default for Config {
    fn default() -> Self {
        Config { min_blocks: d_min_blocks() }
    }
}

#[derive(Clone, Debug)]
pub struct Gtsm {
    plans: [Plan; 2],
}

impl Mechanism for Gtsm {
    const NAME: &'static str = "gtsm";
    const SUMMARY: &'static str = "map a region with a GT-PDE over a slice of non-contiguous B-blocks when one is free, else 4 KiB pages (needs the gt_pde table)";
    type Config = Config;
    type Ctx = PolicyCtx;
    fn build(cfg: &Config, _: &PolicyCtx) -> Result<Self> {
        use crate::gtsm::slice::{MIN_USABLE, MIN_USABLE_HALF};
        if !(cfg.min_blocks == MIN_USABLE || cfg.min_blocks == MIN_USABLE_HALF) {
            return Err(Error::config_allowed(
                "physmem.page_size.min_blocks",
                format!("{} usable B-blocks; a slice's first GT-PDE needs more than half of its 64 (33, the paper) or exactly half (32)", cfg.min_blocks),
                &["33", "32"],
            ));
        }
        Ok(Gtsm { plans: [Plan::Slice { min_blocks: cfg.min_blocks }, Plan::Contiguous(crate::addr::PageSize::Size4K)] })
    }
}

impl PageSizePolicy for Gtsm {
    fn plans(&self) -> &[Plan] {
        &self.plans
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::addr::PageSize;

    #[test]
    fn a_slice_first_then_4k() {
        let g = Gtsm::build(&Config::default(), &PolicyCtx { sizes: vec![PageSize::Size4K] }).unwrap();
        assert_eq!(g.plans(), &[Plan::Slice { min_blocks: 33 }, Plan::Contiguous(PageSize::Size4K)]);
    }

    #[test]
    fn min_blocks_other_than_32_or_33_names_the_key() {
        let e = Gtsm::build(&Config { min_blocks: 31 }, &PolicyCtx { sizes: vec![PageSize::Size4K] }).unwrap_err();
        assert!(e.to_string().contains("physmem.page_size.min_blocks"), "{e}");
    }
}
