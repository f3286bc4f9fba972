//! Per-page stride prefetcher.
//!
//! ## What it models
//! A reference-prediction table indexed by physical 4 KiB page (prefetchers
//! below the TLB see physical addresses and no program counter). Each entry
//! remembers the last line accessed in its page, the last stride and a
//! confidence. When the same stride repeats often enough, the next `degree`
//! lines along the stride are requested.
//!
//! ## Choices where the papers are silent
//! - Table: `table_entries` entries (power of two), direct-mapped by
//!   `page & (table_entries - 1)`, tagged with the full page number; a tag
//!   mismatch replaces the entry (last line = this access, stride 0, confidence 0).
//! - Strides are in bytes between line-aligned addresses, so the prefetcher
//!   needs no line size; they are always whole lines.
//! - An access to the same line as the last one (stride 0) changes nothing and
//!   requests nothing: several accesses to one line are not a pattern.
//! - A nonzero stride equal to the stored one increments the confidence
//!   (saturating); any other stride replaces it and resets the confidence to 0.
//!   With `threshold = 2` the fourth access of a regular stream
//!   (A, A+s, A+2s, A+3s) is the first to prefetch.
//! - Triggered by every access that reaches the level, hit or miss.
//! - Requests are `cur + k·stride` for `k = 1..=degree`; the cache drops any
//!   that leave the page or are already present.
//!
//! ## Config
//! `kind = "stride"`, `table_entries = <power of two, 1..=2^20>` (default 64),
//! `degree = <1..=8>` (default 2), `threshold = <≥1>` (default 2)
//!
//! ## Stats
//! Counted by the level: `cache.<level>.prefetches`, `cache.<level>.useful_prefetches`.

use super::next_line::de_degree;
use super::{PrefetchBuf, Prefetcher, PREFETCH_BUF};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use serde::{Deserialize, Deserializer, Serialize};

#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Entries of the page-indexed table (a power of two).
    #[serde(default = "d_entries", deserialize_with = "de_entries")]
    pub table_entries: u32,
    /// Lines requested once a stride is confirmed.
    #[serde(default = "d_degree", deserialize_with = "de_degree")]
    pub degree: u32,
    /// Repeats of the same stride needed before prefetching.
    #[serde(default = "d_threshold", deserialize_with = "de_threshold")]
    pub threshold: u32,
}

fn d_entries() -> u32 {
    64
}
fn d_degree() -> u32 {
    2
}
fn d_threshold() -> u32 {
    2
}

impl Default for Config {
    fn default() -> Self {
        Config { table_entries: d_entries(), degree: d_degree(), threshold: d_threshold() }
    }
}

/// Most entries of the table: 2^20 (32 MiB of host memory); a larger table
/// would abort the host when it is allocated.
pub const MAX_TABLE_ENTRIES: u32 = 1 << 20;

fn entries_problem(v: i64) -> Option<String> {
    (!(v > 0 && v <= MAX_TABLE_ENTRIES as i64 && (v as u64).is_power_of_two()))
        .then(|| format!("{v} entries: must be a power of two from 1 to {MAX_TABLE_ENTRIES}"))
}

fn de_entries<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    let v = i64::deserialize(d)?;
    match entries_problem(v) {
        Some(msg) => Err(serde::de::Error::custom(msg)),
        None => Ok(v as u32),
    }
}

fn de_threshold<'de, D: Deserializer<'de>>(d: D) -> std::result::Result<u32, D::Error> {
    let v = u32::deserialize(d)?;
    if v == 0 {
        return Err(serde::de::Error::custom("threshold 0: must be at least 1"));
    }
    Ok(v)
}

const NO_PAGE: u64 = u64::MAX;

#[derive(Copy, Clone, Debug)]
struct Entry {
    page: u64,
    last: u64,
    stride: i64,
    conf: u32,
}

#[derive(Clone, Debug)]
pub struct Stride {
    table: Vec<Entry>,
    mask: u64,
    degree: u32,
    threshold: u32,
}

impl Mechanism for Stride {
    const NAME: &'static str = "stride";
    const SUMMARY: &'static str = "per-4KiB-page stride detection; prefetch `degree` lines along a confirmed stride";
    type Config = Config;
    type Ctx = ();
    fn build(cfg: &Config, _: &()) -> Result<Self> {
        if let Some(msg) = entries_problem(cfg.table_entries as i64) {
            return Err(Error::config("prefetcher.table_entries", msg));
        }
        if cfg.degree == 0 || cfg.degree as usize > PREFETCH_BUF {
            return Err(Error::config("prefetcher.degree", format!("degree {}: must be between 1 and {PREFETCH_BUF}", cfg.degree)));
        }
        if cfg.threshold == 0 {
            return Err(Error::config("prefetcher.threshold", "threshold 0: must be at least 1"));
        }
        let empty = Entry { page: NO_PAGE, last: 0, stride: 0, conf: 0 };
        Ok(Stride {
            table: vec![empty; cfg.table_entries as usize],
            mask: cfg.table_entries as u64 - 1,
            degree: cfg.degree,
            threshold: cfg.threshold,
        })
    }
}

impl Prefetcher for Stride {
    #[inline]
    fn on_access(&mut self, line_addr: u64, _hit: bool, out: &mut PrefetchBuf) {
        let page = line_addr >> 12;
        let e = &mut self.table[(page & self.mask) as usize];
        if e.page != page {
            *e = Entry { page, last: line_addr, stride: 0, conf: 0 };
            return;
        }
        let stride = line_addr.wrapping_sub(e.last) as i64;
        if stride == 0 {
            return;
        }
        if stride == e.stride {
            e.conf = e.conf.saturating_add(1);
        } else {
            e.stride = stride;
            e.conf = 0;
        }
        e.last = line_addr;
        if e.conf >= self.threshold {
            for k in 1..=self.degree as i128 {
                let a = line_addr as i128 + k * stride as i128;
                if a < 0 || a > u64::MAX as i128 {
                    break;
                }
                out.push(a as u64);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::{check_params, parse_table};

    fn build(toml_text: &str) -> Stride {
        let t: toml::Table = toml_text.parse().unwrap();
        let t = check_params::<Stride>(&t, "cache.l2.prefetcher").unwrap();
        Stride::build(&parse_table(&t, "cache.l2.prefetcher").unwrap(), &()).unwrap()
    }

    fn feed(p: &mut Stride, addrs: &[u64]) -> Vec<Vec<u64>> {
        addrs
            .iter()
            .map(|&a| {
                let mut buf = PrefetchBuf::default();
                p.on_access(a, false, &mut buf);
                buf.as_slice().to_vec()
            })
            .collect()
    }

    #[test]
    fn confirmed_stride_prefetches_degree_lines() {
        let mut p = build("");
        let out = feed(&mut p, &[0x1000, 0x1080, 0x1100, 0x1180]);
        assert!(out[..3].iter().all(|o| o.is_empty()), "{out:?}");
        assert_eq!(out[3], vec![0x1200, 0x1280]);
    }

    #[test]
    fn negative_strides_work() {
        let mut p = build("threshold = 1\ndegree = 1");
        let out = feed(&mut p, &[0x1f00, 0x1ec0, 0x1e80]);
        assert_eq!(out[2], vec![0x1e40]);
    }

    #[test]
    fn changed_stride_resets_confidence() {
        let mut p = build("threshold = 1\ndegree = 1");
        let out = feed(&mut p, &[0x1000, 0x1040, 0x1080, 0x1140, 0x1180]);
        assert_eq!(out[2], vec![0x10c0]);
        assert!(out[3].is_empty() && out[4].is_empty(), "{out:?}");
    }

    #[test]
    fn repeated_line_is_ignored() {
        let mut p = build("threshold = 1\ndegree = 1");
        let out = feed(&mut p, &[0x1000, 0x1040, 0x1040, 0x1080]);
        assert_eq!(out[3], vec![0x10c0]);
    }

    #[test]
    fn pages_train_separately_and_conflicts_replace() {
        let mut p = build("table_entries = 1\nthreshold = 1\ndegree = 1");
        // Interleaving two pages in a one-entry table never trains.
        let out = feed(&mut p, &[0x1000, 0x5000, 0x1040, 0x5040, 0x1080, 0x5080]);
        assert!(out.iter().all(|o| o.is_empty()), "{out:?}");
        let mut p = build("table_entries = 2\nthreshold = 1\ndegree = 1");
        let out = feed(&mut p, &[0x1000, 0x2000, 0x1040, 0x2040, 0x1080, 0x2080]);
        assert_eq!(out[4], vec![0x10c0]);
        assert_eq!(out[5], vec![0x20c0]);
    }

    #[test]
    fn bad_params_name_their_key() {
        for (bad, key) in [
            ("table_entries = 48", "table_entries"),
            ("degree = 0", "degree"),
            ("threshold = 0", "threshold"),
            ("ways = 2", "ways"),
        ] {
            let t: toml::Table = bad.parse().unwrap();
            let e = check_params::<Stride>(&t, "cache.l2.prefetcher").unwrap_err().to_string();
            assert!(e.contains("cache.l2.prefetcher") && e.contains(key), "{e}");
        }
    }

    /// A table too large for the host is a config error with the range, not an abort.
    #[test]
    fn table_entries_are_bounded() {
        for bad in ["table_entries = 2147483648", "table_entries = 2097152", "table_entries = -1", "table_entries = 0"] {
            let t: toml::Table = bad.parse().unwrap();
            let e = check_params::<Stride>(&t, "cache.l2.prefetcher").unwrap_err().to_string();
            assert!(e.contains("cache.l2.prefetcher.table_entries") && e.contains("power of two from 1 to 1048576"), "{bad}: {e}");
        }
        let t: toml::Table = "table_entries = 1048576".parse().unwrap();
        check_params::<Stride>(&t, "cache.l2.prefetcher").unwrap();
    }
}
