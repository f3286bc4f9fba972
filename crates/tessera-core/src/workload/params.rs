//! Workload parameters: strict `key=value` parsing against each workload's
//! documented parameter list.
//!
//! ## Choices
//! - Every parameter has a documented default ([`ParamDoc`]); unknown keys are
//!   errors naming the key path `workload.<name>.<key>` and the allowed keys.
//! - Counts accept plain integers, `_` separators, decimal suffixes `k`/`M`/`G`
//!   (10^3/10^6/10^9) and `e` exponents (`1e6`); sizes accept the config
//!   syntax (`64MiB`, `16GiB`, bytes).
//! - Parameters are kept as their canonical text so a workload's identity
//!   ([`Params::describe`]) is stable and lists every resolved value.

use std::collections::BTreeMap;

use crate::config::spec::{ByteSize, SIZE_SYNTAX};
use crate::error::{Error, Result};

/// How to write a count, for messages.
pub const COUNT_SYNTAX: &str =
    "use a whole number such as 1000000, 1_000_000, 1e6, 2.5M or 10k (k, M, G are 10^3, 10^6, 10^9)";

/// One documented parameter of a workload.
#[derive(Copy, Clone, Debug, serde::Serialize)]
pub struct ParamDoc {
    pub name: &'static str,
    pub default: &'static str,
    pub doc: &'static str,
}

/// Resolved parameters of one workload run: every documented key with its
/// given or default value, plus the run seed.
#[derive(Clone, Debug)]
pub struct Params {
    workload: &'static str,
    values: BTreeMap<&'static str, String>,
    seed: u64,
}

impl Params {
    /// Resolve `given` against `docs`; unknown keys are errors.
    pub fn resolve(
        workload: &'static str,
        docs: &'static [ParamDoc],
        given: &BTreeMap<String, String>,
        seed: u64,
    ) -> Result<Params> {
        let mut values: BTreeMap<&'static str, String> =
            docs.iter().map(|d| (d.name, d.default.to_string())).collect();
        for (k, v) in given {
            match docs.iter().find(|d| d.name == k) {
                Some(d) => {
                    values.insert(d.name, v.trim().to_string());
                }
                None => {
                    let allowed: Vec<&str> = docs.iter().map(|d| d.name).collect();
                    return Err(Error::config_allowed(
                        format!("workload.{workload}.{k}"),
                        format!("unknown parameter of workload {workload}"),
                        &allowed,
                    ));
                }
            }
        }
        Ok(Params { workload, values, seed })
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The dotted key path of parameter `name`, for errors.
    pub fn key_path(&self, name: &str) -> String {
        format!("workload.{}.{}", self.workload, name)
    }

    fn raw(&self, name: &str) -> &str {
        // Workloads only ask for their own documented keys.
        self.values
            .get(name)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("workload {} reads undocumented parameter {name}", self.workload))
    }

    /// A count: `1000000`, `1_000_000`, `10M`, `1e6`.
    pub fn count(&self, name: &str) -> Result<u64> {
        let raw = self.raw(name);
        parse_count(raw).ok_or_else(|| {
            Error::config(
                self.key_path(name),
                format!("{raw:?} is not a count: {COUNT_SYNTAX}"),
            )
        })
    }

    /// A count within `lo..=hi`.
    pub fn count_in(&self, name: &str, lo: u64, hi: u64) -> Result<u64> {
        let v = self.count(name)?;
        if v < lo || v > hi {
            return Err(Error::config(
                self.key_path(name),
                format!("must be between {} and {}, not {}", group(lo), group(hi), group(v)),
            ));
        }
        Ok(v)
    }

    /// A byte size: `64MiB`, `16GiB`, `4096`.
    pub fn size(&self, name: &str) -> Result<u64> {
        let raw = self.raw(name);
        ByteSize::parse(raw).ok_or_else(|| {
            Error::config(
                self.key_path(name),
                format!("{raw:?} is not a size: {SIZE_SYNTAX}"),
            )
        })
    }

    /// A size within `lo..=hi` bytes.
    pub fn size_in(&self, name: &str, lo: u64, hi: u64) -> Result<u64> {
        let v = self.size(name)?;
        if v < lo || v > hi {
            return Err(Error::config(
                self.key_path(name),
                format!("must be between {} and {}, not {}", ByteSize(lo).human(), ByteSize(hi).human(), ByteSize(v).human()),
            ));
        }
        Ok(v)
    }

    /// A real number within `lo..=hi`.
    pub fn real_in(&self, name: &str, lo: f64, hi: f64) -> Result<f64> {
        let raw = self.raw(name);
        match raw.parse::<f64>() {
            Ok(v) if v >= lo && v <= hi => Ok(v),
            Ok(v) => Err(Error::config(self.key_path(name), format!("must be between {lo} and {hi}, not {v}"))),
            Err(_) => Err(Error::config(self.key_path(name), format!("{raw:?} is not a number"))),
        }
    }

    /// One of `allowed`.
    pub fn choice(&self, name: &str, allowed: &[&'static str]) -> Result<&'static str> {
        let raw = self.raw(name);
        allowed.iter().copied().find(|a| *a == raw).ok_or_else(|| {
            Error::config_allowed(self.key_path(name), format!("unknown value {raw:?}"), allowed)
        })
    }

    /// `true`/`false` (also `1`/`0`, `yes`/`no`).
    pub fn flag(&self, name: &str) -> Result<bool> {
        match self.raw(name).to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" => Ok(true),
            "false" | "0" | "no" => Ok(false),
            other => Err(Error::config_allowed(
                self.key_path(name),
                format!("{other:?} is not a boolean"),
                &["true", "false"],
            )),
        }
    }

    /// `name k=v k=v ... seed=S`, every resolved value in key order.
    pub fn describe(&self) -> String {
        let mut s = format!("workload:{}", self.workload);
        for (k, v) in &self.values {
            s += &format!(" {k}={v}");
        }
        s += &format!(" seed={}", self.seed);
        s
    }

    /// The resolved values (for results and listings).
    pub fn values(&self) -> &BTreeMap<&'static str, String> {
        &self.values
    }
}

/// `1234567` → `1,234,567`, for messages.
pub fn group(v: u64) -> String {
    let digits = v.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Parse a count: digits with optional `_`, a decimal suffix, or an exponent.
pub fn parse_count(raw: &str) -> Option<u64> {
    let s: String = raw.trim().chars().filter(|c| *c != '_').collect();
    if s.is_empty() {
        return None;
    }
    let (num, mult) = match s.chars().last()? {
        'k' | 'K' => (&s[..s.len() - 1], 1_000u64),
        'm' | 'M' => (&s[..s.len() - 1], 1_000_000),
        'g' | 'G' => (&s[..s.len() - 1], 1_000_000_000),
        _ => (s.as_str(), 1),
    };
    if let Ok(v) = num.parse::<u64>() {
        return v.checked_mul(mult);
    }
    // `1e6`, `2.5M`: accept only if the value is a whole number.
    let f: f64 = num.parse().ok()?;
    let v = f * mult as f64;
    if v.is_finite() && v >= 0.0 && v.fract() == 0.0 && v < 1.8e19 {
        Some(v as u64)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOCS: &[ParamDoc] = &[
        ParamDoc { name: "n", default: "10k", doc: "" },
        ParamDoc { name: "size", default: "1MiB", doc: "" },
        ParamDoc { name: "mode", default: "a", doc: "" },
    ];

    #[test]
    fn counts_parse() {
        assert_eq!(parse_count("1000"), Some(1000));
        assert_eq!(parse_count("1_000_000"), Some(1_000_000));
        assert_eq!(parse_count("10M"), Some(10_000_000));
        assert_eq!(parse_count("1e6"), Some(1_000_000));
        assert_eq!(parse_count("2.5k"), Some(2500));
        assert_eq!(parse_count("2.5"), None);
        assert_eq!(parse_count("-1"), None);
        assert_eq!(parse_count("x"), None);
    }

    #[test]
    fn defaults_overrides_and_unknown_keys() {
        let mut given = BTreeMap::new();
        given.insert("n".to_string(), "5".to_string());
        let p = Params::resolve("w", DOCS, &given, 3).unwrap();
        assert_eq!(p.count("n").unwrap(), 5);
        assert_eq!(p.size("size").unwrap(), 1 << 20);
        assert_eq!(p.choice("mode", &["a", "b"]).unwrap(), "a");
        assert_eq!(p.describe(), "workload:w mode=a n=5 size=1MiB seed=3");
        given.insert("bogus".to_string(), "1".to_string());
        let e = Params::resolve("w", DOCS, &given, 3).unwrap_err().to_string();
        assert!(e.contains("workload.w.bogus") && e.contains("allowed: n, size, mode"), "{e}");
    }

    #[test]
    fn bad_values_name_the_key() {
        let mut given = BTreeMap::new();
        given.insert("mode".to_string(), "c".to_string());
        given.insert("n".to_string(), "lots".to_string());
        let p = Params::resolve("w", DOCS, &given, 0).unwrap();
        let e = p.choice("mode", &["a", "b"]).unwrap_err().to_string();
        assert!(e.contains("workload.w.mode") && e.contains("allowed: a, b"), "{e}");
        let e = p.count("n").unwrap_err().to_string();
        assert!(e.contains("workload.w.n"), "{e}");
    }

    #[test]
    fn range_errors_are_plain_english_with_units() {
        let mut given = BTreeMap::new();
        given.insert("size".to_string(), "1PiB".to_string());
        given.insert("n".to_string(), "5M".to_string());
        let p = Params::resolve("w", DOCS, &given, 0).unwrap();
        let e = p.size_in("size", 64 << 10, 1 << 40).unwrap_err().to_string();
        assert!(e.contains("must be between 64 KiB and 1 TiB, not 1 PiB"), "{e}");
        assert!(!e.contains("..="), "{e}");
        let e = p.count_in("n", 1, 1_000_000).unwrap_err().to_string();
        assert!(e.contains("must be between 1 and 1,000,000, not 5,000,000"), "{e}");
        given.insert("size".to_string(), "1EiB".to_string());
        let p = Params::resolve("w", DOCS, &given, 0).unwrap();
        let e = p.size("size").unwrap_err().to_string();
        assert!(e.contains("TiB or PiB"), "{e}");
    }

    #[test]
    fn group_puts_thousands_separators() {
        assert_eq!(group(0), "0");
        assert_eq!(group(999), "999");
        assert_eq!(group(1000), "1,000");
        assert_eq!(group(4_294_967_295), "4,294,967,295");
    }
}
