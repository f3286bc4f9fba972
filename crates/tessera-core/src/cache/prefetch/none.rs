//! No data prefetching.
//!
//! ## What it models
//! A cache level without a hardware prefetcher: every access is seen and
//! nothing is ever requested. The default for every level.
//!
//! ## Choices
//! None.
//!
//! ## Config
//! `kind = "none"` (no parameters)
//!
//! ## Stats
//! None (the level's `prefetches` stays 0).

use super::{PrefetchBuf, Prefetcher};
use crate::error::Result;
use crate::registry::Mechanism;
use serde::{Deserialize, Serialize};

/// `kind = "none"` takes no parameters.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct NoPrefetch;

impl Mechanism for NoPrefetch {
    const NAME: &'static str = "none";
    const SUMMARY: &'static str = "no prefetching";
    type Config = Config;
    type Ctx = ();
    fn build(_: &Config, _: &()) -> Result<Self> {
        Ok(NoPrefetch)
    }
}

impl Prefetcher for NoPrefetch {
    #[inline]
    fn on_access(&mut self, _line_addr: u64, _hit: bool, _out: &mut PrefetchBuf) {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_requests_anything() {
        let mut p = NoPrefetch::build(&Config {}, &()).unwrap();
        let mut buf = PrefetchBuf::default();
        for a in [0u64, 64, 128, 4096] {
            p.on_access(a, false, &mut buf);
            p.on_access(a, true, &mut buf);
        }
        assert_eq!(buf.len, 0);
    }

    #[test]
    fn rejects_unknown_keys() {
        let t: toml::Table = "degree = 1".parse().unwrap();
        assert!(crate::registry::check_params::<NoPrefetch>(&t, "cache.l1d.prefetcher").is_err());
    }
}
