//! Transparent-huge-page-like eager large pages.
//!
//! ## What it models
//! Linux THP at fault time: the first touch of an untouched, aligned 2 MiB (or
//! 1 GiB) virtual region is backed by a free naturally aligned block of that
//! size; when no such block is free (fragmented memory) or part of the region is
//! already mapped with smaller pages, it falls back to the next smaller size.
//! ## Paper
//! The scale-out MMU study (Karakostas et al., IISWC 2014) §III-A (THP); the GTSM paper's
//! traditional 2 MB superpaging baseline.
//! ## Choices where the papers are silent
//! - No khugepaged: regions that fell back to 4 KiB are never collapsed later.
//! - `max = "1g"` tries 1 GiB, then 2 MiB, then 4 KiB.
//! ## Config
//! `kind = "thp"`, `max = "2m" | "1g"` (default "2m")
//! ## Stats
//! Counted by the OS model: `os.pages_4k`, `os.pages_2m`, `os.pages_1g`,
//! `os.large_fallbacks`.

use serde::{Deserialize, Serialize};

use super::{PageSizePolicy, Plan, PolicyCtx};
use crate::addr::PageSize;
use crate::error::{Error, Result};
use crate::registry::Mechanism;

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Largest page size to try: "2m" or "1g".
    #[serde(default = "d_max")]
    pub max: PageSize,
}
fn d_max() -> PageSize {
    PageSize::Size2M
}
impl Default for Config {
    fn default() -> Self {
        Config { max: d_max() }
    }
}

#[derive(Clone, Debug)]
pub struct Thp {
    plans: Vec<Plan>,
}

impl Mechanism for Thp {
    const NAME: &'static str = "thp";
    const SUMMARY: &'static str = "back untouched aligned 2 MiB (or 1 GiB) regions with large pages when a free block exists, else fall back";
    type Config = Config;
    type Ctx = PolicyCtx;
    fn build(cfg: &Config, ctx: &PolicyCtx) -> Result<Self> {
        let large: Vec<&str> = ctx.sizes.iter().filter(|s| **s != PageSize::Size4K).map(|s| s.name()).collect();
        if cfg.max == PageSize::Size4K || !ctx.sizes.contains(&cfg.max) {
            return Err(Error::config_allowed(
                "physmem.page_size.max",
                format!("thp needs a large page size the page-table format maps, not {}", cfg.max.name()),
                &large,
            ));
        }
        // Every size the format maps up to `max`, largest first.
        let plans = ctx.sizes.iter().rev().copied().filter(|&s| s <= cfg.max).map(Plan::Contiguous).collect();
        Ok(Thp { plans })
    }
}

impl PageSizePolicy for Thp {
    fn plans(&self) -> &[Plan] {
        &self.plans
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_gig_tries_every_size_largest_first() {
        let t = Thp::build(&Config { max: PageSize::Size1G }, &x86()).unwrap();
        assert_eq!(t.plans(), &plans(&[PageSize::Size1G, PageSize::Size2M, PageSize::Size4K]));
    }

    #[test]
    fn max_4k_is_rejected_with_key_path() {
        let e = Thp::build(&Config { max: PageSize::Size4K }, &x86()).unwrap_err();
        assert!(e.to_string().contains("physmem.page_size.max"));
        let e = Thp::build(&Config { max: PageSize::Size64K }, &x86()).unwrap_err();
        assert!(e.to_string().contains("physmem.page_size.max"), "x86 maps no 64 KiB pages: {e}");
    }

    #[test]
    fn a_table_with_64k_leaves_tries_them_between_2m_and_4k() {
        use PageSize::*;
        let ctx = PolicyCtx { sizes: vec![Size4K, Size64K, Size2M] };
        let t = Thp::build(&Config { max: Size2M }, &ctx).unwrap();
        assert_eq!(t.plans(), &plans(&[Size2M, Size64K, Size4K]));
        let t = Thp::build(&Config { max: Size64K }, &ctx).unwrap();
        assert_eq!(t.plans(), &plans(&[Size64K, Size4K]));
    }

    fn plans(sizes: &[PageSize]) -> Vec<Plan> {
        sizes.iter().copied().map(Plan::Contiguous).collect()
    }

    fn x86() -> PolicyCtx {
        PolicyCtx { sizes: vec![PageSize::Size4K, PageSize::Size2M, PageSize::Size1G] }
    }
}
