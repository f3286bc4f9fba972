//! Next-line prefetcher.
//!
//! ## What it models
//! The simplest sequential prefetcher: an access to line `L` (by default only
//! a miss) requests lines `L+1 ..= L+degree`. Candidates that leave the 4 KiB
//! physical page, or are already cached, are dropped by the cache.
//!
//! ## Choices where the papers are silent
//! - Trigger: misses only by default (`on_miss_only = true`), the classic
//!   "prefetch on miss" scheme; set it to false to trigger on every access.
//! - Degree: 1 by default, at most [`PREFETCH_BUF`] (the candidate buffer).
//! - The line size is the owning level's; the cache sets it after build with
//!   [`Prefetcher::set_line_bytes`] (the family's build context carries no
//!   geometry). Until then it is 64 bytes.
//!
//! ## Config
//! `kind = "next_line"`, `degree = <1..=8>` (default 1), `on_miss_only = <bool>` (default true)
//!
//! ## Stats
//! Counted by the level: `cache.<level>.prefetches`, `cache.<level>.useful_prefetches`.

use super::{PrefetchBuf, Prefetcher, PREFETCH_BUF};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use serde::{Deserialize, Deserializer, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Lines requested per trigger.
    #[serde(default = "d_degree", deserialize_with = "de_degree")]
    pub degree: u32,
    /// Trigger on misses only (true) or on every access (false).
    #[serde(default = "d_true")]
    pub on_miss_only: bool,
}

fn d_degree() -> u32 {
    1
}
fn d_true() -> bool {
    true
}

impl Default for Config {
    fn default() -> Self {
        Config { degree: d_degree(), on_miss_only: d_true() }
    }
}

/// Accept a degree in `1..=PREFETCH_BUF` (shared with the stride prefetcher).
pub(crate) fn de_degree<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if v == 0 || v as usize > PREFETCH_BUF {
        return Err(serde::de::Error::custom(format!("degree {v}: must be between 1 and {PREFETCH_BUF}")));
    }
    Ok(v)
}

#[derive(Clone, Debug)]
pub struct NextLine {
    degree: u32,
    on_miss_only: bool,
    line_bytes: u64,
}

impl Mechanism for NextLine {
    const NAME: &'static str = "next_line";
    const SUMMARY: &'static str = "on a miss, prefetch the next `degree` lines of the page";
    type Config = Config;
    type Ctx = ();
    fn build(cfg: &Config, _: &()) -> Result<Self> {
        if cfg.degree == 0 || cfg.degree as usize > PREFETCH_BUF {
            return Err(Error::config("prefetcher.degree", format!("degree {}: must be between 1 and {PREFETCH_BUF}", cfg.degree)));
        }
        Ok(NextLine { degree: cfg.degree, on_miss_only: cfg.on_miss_only, line_bytes: 64 })
    }
}

impl Prefetcher for NextLine {
    /// Line size of the owning cache level, in bytes (a power of two).
    fn set_line_bytes(&mut self, bytes: u64) {
        self.line_bytes = bytes;
    }

    #[inline]
    fn on_access(&mut self, line_addr: u64, hit: bool, out: &mut PrefetchBuf) {
        if hit && self.on_miss_only {
            return;
        }
        let mut a = line_addr;
        for _ in 0..self.degree {
            a = match a.checked_add(self.line_bytes) {
                Some(n) => n,
                None => return,
            };
            out.push(a);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::check_params;

    fn build(toml_text: &str) -> NextLine {
        let t: toml::Table = toml_text.parse().unwrap();
        let t = check_params::<NextLine>(&t, "cache.l1d.prefetcher").unwrap();
        let cfg: Config = crate::registry::parse_table(&t, "cache.l1d.prefetcher").unwrap();
        NextLine::build(&cfg, &()).unwrap()
    }

    #[test]
    fn miss_requests_the_next_line() {
        let mut p = build("");
        let mut buf = PrefetchBuf::default();
        p.on_access(0x1000, false, &mut buf);
        assert_eq!(buf.as_slice(), &[0x1040]);
    }

    #[test]
    fn hit_requests_nothing_by_default() {
        let mut p = build("");
        let mut buf = PrefetchBuf::default();
        p.on_access(0x1000, true, &mut buf);
        assert_eq!(buf.len, 0);
    }

    #[test]
    fn every_access_triggers_when_not_miss_only() {
        let mut p = build("on_miss_only = false\ndegree = 2");
        let mut buf = PrefetchBuf::default();
        p.on_access(0x1000, true, &mut buf);
        assert_eq!(buf.as_slice(), &[0x1040, 0x1080]);
    }

    #[test]
    fn uses_the_level_line_size() {
        let mut p = build("degree = 3");
        p.set_line_bytes(128);
        let mut buf = PrefetchBuf::default();
        p.on_access(0x2000, false, &mut buf);
        assert_eq!(buf.as_slice(), &[0x2080, 0x2100, 0x2180]);
    }

    #[test]
    fn degree_out_of_range_names_the_key() {
        for bad in ["degree = 0", "degree = 9"] {
            let t: toml::Table = bad.parse().unwrap();
            let e = check_params::<NextLine>(&t, "cache.l1d.prefetcher").unwrap_err().to_string();
            assert!(e.contains("cache.l1d.prefetcher.degree") && e.contains("between 1 and 8"), "{e}");
        }
    }

    #[test]
    fn defaults_are_written_out() {
        let t = check_params::<NextLine>(&toml::Table::new(), "p").unwrap();
        assert_eq!(t.get("degree").and_then(|v| v.as_integer()), Some(1));
        assert_eq!(t.get("on_miss_only").and_then(|v| v.as_bool()), Some(true));
    }
}
