//! The resolved machine description. Plain, validated, serialisable data: a
//! component is built from its own sub-spec and nothing else. Every field has a
//! documented default (`#[serde(default)]`), so a resolved spec written back to
//! TOML lists every value the run used.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::addr::PageSize;
use crate::registry::MechanismSpec;

/// How to write a size, for messages.
pub const SIZE_SYNTAX: &str =
    "use a whole number of bytes, or of KiB, MiB, GiB, TiB or PiB (e.g. 4096, 64MiB, 16GiB)";

/// A byte count written as an integer or a string such as "32KiB", "2MiB",
/// "16GiB" (K/KB/KiB are all binary: 1024; units go up to PiB so that a size
/// too large for a key is reported against the key's limit, not as unparsable).
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct ByteSize(pub u64);

impl ByteSize {
    pub fn parse(s: &str) -> Option<u64> {
        let s = s.trim();
        let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        let (num, unit) = s.split_at(split);
        let n: u64 = num.parse().ok()?;
        let mult: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" | "kib" => 1 << 10,
            "m" | "mb" | "mib" => 1 << 20,
            "g" | "gb" | "gib" => 1 << 30,
            "t" | "tb" | "tib" => 1 << 40,
            "p" | "pb" | "pib" => 1 << 50,
            _ => return None,
        };
        n.checked_mul(mult)
    }
    /// Human form used when writing configs back out ("32KiB", "16GiB", or bytes).
    pub fn display(self) -> String {
        let units = [(40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, name) in units {
            if self.0 >= (1 << shift) && self.0.is_multiple_of(1 << shift) {
                return format!("{}{}", self.0 >> shift, name);
            }
        }
        format!("{}B", self.0)
    }

    /// Human form for messages and listings: "64 KiB", "1.5 GiB", "512 B":
    /// the largest unit that fits, at most one decimal, no trailing ".0".
    pub fn human(self) -> String {
        let units = [(50, "PiB"), (40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")];
        for (shift, name) in units {
            if self.0 >= (1 << shift) {
                let v = format!("{:.1}", self.0 as f64 / (1u64 << shift) as f64);
                return format!("{} {}", v.strip_suffix(".0").unwrap_or(&v), name);
            }
        }
        format!("{} B", self.0)
    }

    /// [`human`](Self::human), with the exact byte count added when rounding hid it.
    pub fn human_exact(self) -> String {
        let h = self.human();
        if ByteSize::parse(&h.replace(' ', "")) != Some(self.0) {
            format!("{h} ({} bytes)", crate::workload::params::group(self.0))
        } else {
            h
        }
    }
}

/// Most entries of one TLB, shadow TLB or paging-structure-cache structure:
/// 2^24, about 370 MiB of host memory fully associative (a mosaic structure's
/// sub-page frames have the same bound). A larger table would abort the host
/// process when it is allocated, so resolution refuses it.
pub const MAX_ENTRIES: u32 = 1 << 24;
/// Most lines of one data-cache level: 2^26 (4 GiB of 64-byte lines, about
/// 430 MiB of host memory at 16 ways).
pub const MAX_CACHE_LINES: u32 = 1 << 26;

/// The one message for a whole-number key outside `lo..=hi` (or not a number).
pub fn whole_range_message(lo: u64, hi: u64, got: &str) -> String {
    format!("must be a whole number from {lo} to {hi}, not {got}")
}

/// Deserialise a whole number in `lo..=hi`, refusing anything else (a
/// negative, a huge value, a string, a fraction) with one message that gives
/// the real range.
fn whole_in<'de, D: Deserializer<'de>>(d: D, lo: u32, hi: u32) -> Result<u32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Raw {
        Int(i64),
        Float(f64),
        Bool(bool),
        Str(String),
    }
    let got = match Raw::deserialize(d) {
        Ok(Raw::Int(n)) if (lo as i64..=hi as i64).contains(&n) => return Ok(n as u32),
        Ok(Raw::Int(n)) => n.to_string(),
        Ok(Raw::Float(f)) => f.to_string(),
        Ok(Raw::Bool(b)) => b.to_string(),
        Ok(Raw::Str(s)) => format!("\"{s}\""),
        Err(_) => "a list or table".to_string(),
    };
    Err(serde::de::Error::custom(whole_range_message(lo as u64, hi as u64, &got)))
}

/// `entries` of a TLB, shadow or PSC structure: 1 to [`MAX_ENTRIES`].
fn de_entries<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_in(d, 1, MAX_ENTRIES)
}

/// A TLB structure's `level`: levels count from 1.
fn de_level<'de, D: Deserializer<'de>>(d: D) -> Result<u32, D::Error> {
    whole_in(d, 1, u32::MAX)
}

/// Plain-English form of a serde type error: `invalid value: integer `-1`,
/// expected u32` becomes `must be a whole number from 0 to 4294967295, not -1`.
/// Messages that are not of that shape (our own `custom` ones) pass through.
pub fn plain_type_message(msg: &str) -> String {
    let Some((got, expected)) = msg.rsplit_once(", expected ") else {
        return msg.to_string();
    };
    let want = match expected.trim() {
        "u8" => format!("a whole number from 0 to {}", u8::MAX),
        "u16" => format!("a whole number from 0 to {}", u16::MAX),
        "u32" => format!("a whole number from 0 to {}", u32::MAX),
        "u64" | "usize" => format!("a whole number from 0 to {}", u64::MAX),
        "i32" => format!("a whole number from {} to {}", i32::MIN, i32::MAX),
        "i64" => format!("a whole number from {} to {}", i64::MIN, i64::MAX),
        "f32" | "f64" => "a number".to_string(),
        "a boolean" => "true or false".to_string(),
        _ => return msg.to_string(),
    };
    let got = got.trim_start_matches("invalid value: ").trim_start_matches("invalid type: ");
    // serde writes the offending value as `integer `-1``, `string "x"`, ...
    let got = match got.split_once(' ') {
        Some((_kind, v)) if got.starts_with("integer") || got.starts_with("floating point") || got.starts_with("boolean") => {
            let v = v.trim_start_matches("point ").trim_matches('`');
            v.to_string()
        }
        Some(("string", v)) => v.to_string(),
        _ if got == "sequence" => "a list".to_string(),
        _ if got == "map" => "a table".to_string(),
        _ => got.to_string(),
    };
    format!("must be {want}, not {got}")
}

impl Serialize for ByteSize {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.display())
    }
}

impl<'de> Deserialize<'de> for ByteSize {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(u64),
            Str(String),
        }
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom("expected a byte count: an integer or a string like \"32KiB\", \"2MiB\", \"16GiB\""))? {
            Raw::Int(n) => Ok(ByteSize(n)),
            Raw::Str(s) => ByteSize::parse(&s)
                .map(ByteSize)
                .ok_or_else(|| serde::de::Error::custom(format!("invalid byte count \"{s}\"; use e.g. \"32KiB\", \"2MiB\", \"16GiB\""))),
        }
    }
}

/// Associativity: a number of ways, or "full" (= entries).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Ways {
    N(u32),
    Full,
}

impl Serialize for Ways {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Ways::N(n) => s.serialize_u32(*n),
            Ways::Full => s.serialize_str("full"),
        }
    }
}

impl<'de> Deserialize<'de> for Ways {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Int(i64),
            Str(String),
        }
        const WANT: &str = "must be a whole number of ways from 1 to the entries, or \"full\"";
        match Raw::deserialize(d).map_err(|_| serde::de::Error::custom(WANT))? {
            Raw::Int(n) if (1..=u32::MAX as i64).contains(&n) => Ok(Ways::N(n as u32)),
            Raw::Int(n) => Err(serde::de::Error::custom(format!("{WANT}, not {n}"))),
            Raw::Str(s) if s == "full" => Ok(Ways::Full),
            Raw::Str(s) => Err(serde::de::Error::custom(format!("{WANT}, not \"{s}\""))),
        }
    }
}

impl Ways {
    pub fn resolve(self, entries: u32) -> u32 {
        match self {
            Ways::N(n) => n,
            Ways::Full => entries,
        }
    }
}

fn default_lru() -> MechanismSpec {
    MechanismSpec { kind: "lru".into(), params: toml::Table::new() }
}

/// Which accesses a TLB structure translates.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Instr,
    Data,
    Unified,
}

/// One TLB structure (`[mmu.tlb.<name>]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlbSpec {
    /// Lookup level: 1 is probed first; level n+1 only on a miss at level n.
    #[serde(deserialize_with = "de_level")]
    pub level: u32,
    pub side: Side,
    /// Page sizes this structure holds (one structure per size, or several in one).
    pub page_sizes: Vec<PageSize>,
    #[serde(deserialize_with = "de_entries")]
    pub entries: u32,
    pub ways: Ways,
    /// Cycles added when this level is probed (L1 levels are usually 0: overlapped with the cache access).
    #[serde(default)]
    pub latency: u32,
    #[serde(default = "default_lru")]
    pub replacement: MechanismSpec,
    /// What one entry covers and how it is filled (`set_assoc`, `coalescing`).
    #[serde(default = "default_set_assoc")]
    pub organisation: MechanismSpec,
}

fn default_set_assoc() -> MechanismSpec {
    MechanismSpec { kind: "set_assoc".into(), params: toml::Table::new() }
}

fn d_data() -> Side {
    Side::Data
}

/// A shadow TLB structure (`[mmu.shadow.<name>]`): it sees every 4 KiB-page
/// translation of its side that the machine makes, looks it up and fills
/// itself from it on a miss, and takes no part in the machine's
/// translation (its counters only, under `mmu.shadow.<name>.*`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShadowSpec {
    /// Which translations it sees (`unified`: data and instruction fetches).
    #[serde(default = "d_data")]
    pub side: Side,
    /// Page sizes it holds; resolved to 4 KiB plus every size the page-size policy maps when not given.
    #[serde(default)]
    pub page_sizes: Vec<PageSize>,
    #[serde(deserialize_with = "de_entries")]
    pub entries: u32,
    pub ways: Ways,
    #[serde(default = "default_lru")]
    pub replacement: MechanismSpec,
    #[serde(default = "default_set_assoc")]
    pub organisation: MechanismSpec,
}

impl ShadowSpec {
    /// The same structure as a level-1 TLB of the hierarchy (what it is built as).
    pub fn as_tlb(&self) -> TlbSpec {
        TlbSpec {
            level: 1,
            side: self.side,
            page_sizes: self.page_sizes.clone(),
            entries: self.entries,
            ways: self.ways,
            latency: 0,
            replacement: self.replacement.clone(),
            organisation: self.organisation.clone(),
        }
    }
}

/// One paging-structure cache (`[mmu.psc.<pml5e|pml4e|pdpte|pde>]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PscSpec {
    #[serde(deserialize_with = "de_entries")]
    pub entries: u32,
    pub ways: Ways,
    /// Cycles added to a walk that consults it (0: looked up in parallel with the last TLB level).
    #[serde(default)]
    pub latency: u32,
    #[serde(default = "default_lru")]
    pub replacement: MechanismSpec,
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum FillPolicy {
    /// A walk (or a lower-level hit) fills every level above that holds the page size.
    #[default]
    AllLevels,
    /// Mostly exclusive: a walk fills level 1 only; entries evicted from level n
    /// move to level n+1 (if it holds their page size); a hit at level n > 1
    /// moves the entry up to level 1.
    Victim,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct MmuSpec {
    #[serde(default)]
    pub fill: FillPolicy,
    #[serde(default)]
    pub tlb: BTreeMap<String, TlbSpec>,
    #[serde(default)]
    pub psc: BTreeMap<String, PscSpec>,
    /// Shadow structures: watch the translations, change nothing (written out only when present).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub shadow: BTreeMap<String, ShadowSpec>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WalkerSpec {
    /// Walker cost per page-table reference, excluding the memory hierarchy latency.
    #[serde(default = "d_step")]
    pub step_cycles: u32,
    /// Cache level where page-walk references enter the hierarchy: l1d, l2, llc or dram.
    #[serde(default = "d_entry")]
    pub entry_level: String,
}
fn d_step() -> u32 {
    5
}
fn d_entry() -> String {
    "l1d".into()
}
impl Default for WalkerSpec {
    fn default() -> Self {
        WalkerSpec { step_cycles: d_step(), entry_level: d_entry() }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PageTableSpec {
    /// Page-table format, a mechanism of the `format` family.
    #[serde(default = "d_format")]
    pub format: MechanismSpec,
    /// Radix levels of `x86_radix`: 4 (48-bit VA) or 5 (57-bit VA). Resolved
    /// to the format's depth (the radix format takes it from its `bits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub levels: Option<u32>,
}
fn d_format() -> MechanismSpec {
    MechanismSpec { kind: "x86_radix".into(), params: toml::Table::new() }
}
impl Default for PageTableSpec {
    fn default() -> Self {
        PageTableSpec { format: d_format(), levels: Some(4) }
    }
}
impl PageTableSpec {
    /// Levels of the resolved table.
    pub fn depth(&self) -> u32 {
        self.levels.unwrap_or(4)
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhysMemSpec {
    pub capacity: ByteSize,
    #[serde(default = "d_buddy")]
    pub allocator: MechanismSpec,
    #[serde(default = "d_base_only")]
    pub page_size: MechanismSpec,
    /// Fraction of 2 MiB blocks broken by one pinned 4 KiB frame before the run.
    #[serde(default)]
    pub fragmentation: f64,
    /// Share of each such block pinned (Mosaic's large-page-frame
    /// occupancy); one frame per block when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fragmentation_occupancy: Option<f64>,
    /// Source of retired 4 KiB frames. Left out of the written spec when
    /// `none`, so configs and result identities from before fault maps
    /// existed stay as they were.
    #[serde(default = "d_no_retired", skip_serializing_if = "is_no_retired")]
    pub retired: MechanismSpec,
}
fn d_no_retired() -> MechanismSpec {
    MechanismSpec { kind: "none".into(), params: toml::Table::new() }
}
fn is_no_retired(m: &MechanismSpec) -> bool {
    m.kind == "none"
}
fn d_buddy() -> MechanismSpec {
    MechanismSpec { kind: "buddy".into(), params: toml::Table::new() }
}
fn d_base_only() -> MechanismSpec {
    MechanismSpec { kind: "base_only".into(), params: toml::Table::new() }
}

/// One data-cache level (`[cache.l1d]`, `[cache.l2]`, `[cache.llc]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheLevelSpec {
    pub size: ByteSize,
    pub ways: Ways,
    #[serde(default = "d_line")]
    pub line: ByteSize,
    /// Load-to-use latency of a hit at this level, in cycles.
    pub latency: u32,
    #[serde(default = "default_lru")]
    pub replacement: MechanismSpec,
    #[serde(default = "d_no_prefetch")]
    pub prefetcher: MechanismSpec,
}
fn d_line() -> ByteSize {
    ByteSize(64)
}
fn d_no_prefetch() -> MechanismSpec {
    MechanismSpec { kind: "none".into(), params: toml::Table::new() }
}

/// The physically indexed data-cache hierarchy. Absent levels are skipped; with
/// no levels at all, every reference goes to DRAM.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l1d: Option<CacheLevelSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2: Option<CacheLevelSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llc: Option<CacheLevelSpec>,
    #[serde(default = "d_dram")]
    pub dram_latency: u32,
}
fn d_dram() -> u32 {
    200
}
impl Default for CacheSpec {
    fn default() -> Self {
        CacheSpec { l1d: None, l2: None, llc: None, dram_latency: d_dram() }
    }
}
impl CacheSpec {
    /// Present levels in lookup order with their config names.
    pub fn levels(&self) -> Vec<(&'static str, &CacheLevelSpec)> {
        let mut v = Vec::new();
        if let Some(l) = &self.l1d {
            v.push(("l1d", l));
        }
        if let Some(l) = &self.l2 {
            v.push(("l2", l));
        }
        if let Some(l) = &self.llc {
            v.push(("llc", l));
        }
        v
    }
}

/// `[timing]`: the CPU timing model. Written back only with the keys a run
/// uses: with `kind = "interval"` (the default) neither `kind` nor the
/// `[timing.ooo]` table is serialised, so an interval run's resolved config
/// (and its hash) is what it was before the ooo model existed.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimingSpec {
    /// The timing model: `interval` (additive) or `ooo` (out-of-order, overlapping).
    #[serde(default = "d_timing_kind")]
    pub kind: String,
    /// false: count events only (no cycles), the TLB-only model.
    #[serde(default = "d_true")]
    pub enabled: bool,
    #[serde(default = "d_freq")]
    pub frequency_ghz: f64,
    /// Cycles per instruction with a perfect memory system.
    #[serde(default = "d_cpi")]
    pub base_cpi: f64,
    /// true: an L1D hit is part of the base CPI; only latency beyond L1D stalls.
    #[serde(default = "d_true")]
    pub l1_hit_in_cpi: bool,
    /// The out-of-order model's core (`kind = "ooo"` only).
    #[serde(default)]
    pub ooo: OooSpec,
}
fn d_timing_kind() -> String {
    "interval".into()
}
fn d_true() -> bool {
    true
}
fn d_freq() -> f64 {
    3.0
}
fn d_cpi() -> f64 {
    1.0
}
impl Default for TimingSpec {
    fn default() -> Self {
        TimingSpec {
            kind: d_timing_kind(),
            enabled: true,
            frequency_ghz: d_freq(),
            base_cpi: d_cpi(),
            l1_hit_in_cpi: true,
            ooo: OooSpec::default(),
        }
    }
}

impl Serialize for TimingSpec {
    fn serialize<S: Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        // The written form; `kind` and `ooo` only for the ooo model.
        #[derive(Serialize)]
        struct Written<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            kind: Option<&'a str>,
            enabled: bool,
            frequency_ghz: f64,
            base_cpi: f64,
            l1_hit_in_cpi: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            ooo: Option<&'a OooSpec>,
        }
        let ooo = self.kind != "interval";
        Written {
            kind: ooo.then_some(self.kind.as_str()),
            enabled: self.enabled,
            frequency_ghz: self.frequency_ghz,
            base_cpi: self.base_cpi,
            l1_hit_in_cpi: self.l1_hit_in_cpi,
            ooo: ooo.then_some(&self.ooo),
        }
        .serialize(ser)
    }
}

/// `[timing.ooo]`: the out-of-order core (see `timing/ooo.rs`). Defaults: a
/// generic 4-wide core; the presets set their machines' values.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OooSpec {
    /// Reorder-buffer entries (instructions in flight).
    #[serde(default = "d_window")]
    pub window: u32,
    /// Instructions dispatched per cycle.
    #[serde(default = "d_width")]
    pub dispatch_width: u32,
    /// Instructions retired per cycle.
    #[serde(default = "d_width")]
    pub retire_width: u32,
    /// Load/store queue entries (memory ops in flight).
    #[serde(default = "d_lsq")]
    pub lsq: u32,
    /// L1D misses in flight.
    #[serde(default = "d_mshrs")]
    pub mshrs: u32,
    /// Page walks in flight.
    #[serde(default = "d_walkers")]
    pub walkers: u32,
    /// true: a walk starts only once its op is the oldest (a non-speculative walker).
    #[serde(default)]
    pub walk_at_retire: bool,
    /// Probability that a load depends on the previous load (traces without
    /// dependencies; drawn from the run's seeded generator).
    #[serde(default)]
    pub dependency_fraction: f64,
    /// Where loads' dependencies come from: `auto` (the stream's when its
    /// source carries them, else `dependency_fraction`), `stream` (the
    /// stream's; an error for a source without them), `fraction` (drawn,
    /// even for a source that carries its own).
    #[serde(default = "d_dependencies")]
    pub dependencies: String,
}
fn d_dependencies() -> String {
    "auto".into()
}
fn d_window() -> u32 {
    128
}
fn d_width() -> u32 {
    4
}
fn d_lsq() -> u32 {
    64
}
fn d_mshrs() -> u32 {
    8
}
fn d_walkers() -> u32 {
    1
}
impl Default for OooSpec {
    fn default() -> Self {
        OooSpec {
            window: d_window(),
            dispatch_width: d_width(),
            retire_width: d_width(),
            lsq: d_lsq(),
            mshrs: d_mshrs(),
            walkers: d_walkers(),
            walk_at_retire: false,
            dependency_fraction: 0.0,
            dependencies: d_dependencies(),
        }
    }
}

/// Constants of the scale-out MMU study's upper-bound formulas (Eq. 2-5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsSpec {
    #[serde(default = "d_pm_l1")]
    pub perfect_mmu_l1_cycles: u32,
    #[serde(default = "d_pm_l2")]
    pub perfect_mmu_l2_cycles: u32,
    #[serde(default = "d_pm_llc")]
    pub perfect_mmu_llc_cycles: u32,
    #[serde(default = "d_pt")]
    pub perfect_tlb_cycles: u32,
}
fn d_pm_l1() -> u32 {
    12
}
fn d_pm_l2() -> u32 {
    20
}
fn d_pm_llc() -> u32 {
    43
}
fn d_pt() -> u32 {
    7
}
impl Default for MetricsSpec {
    fn default() -> Self {
        MetricsSpec { perfect_mmu_l1_cycles: 12, perfect_mmu_l2_cycles: 20, perfect_mmu_llc_cycles: 43, perfect_tlb_cycles: 7 }
    }
}

/// The OS under memory pressure (`[os]`). Without `swap`, running out of
/// frames is an error; with it, `eviction` picks victims and pages go to swap.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OsSpec {
    /// Eviction policy (`lru`, `clock`, `linux_like`); `lru` when a swap device is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eviction: Option<MechanismSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub swap: Option<crate::os::swap::SwapSpec>,
    /// Cycles one TLB shootdown costs the faulting processor (an IPI round
    /// trip and the invalidation; a few microseconds on x86 servers).
    #[serde(default = "d_shootdown")]
    pub shootdown_cycles: u64,
    /// Direct compaction for 2 MiB pages; none without the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compaction: Option<crate::os::compaction::CompactionSpec>,
    /// Mosaic's contiguity-aware compaction (GPU, `cocoa` allocator); none without the table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cac: Option<crate::os::cac::CacSpec>,
}
fn d_shootdown() -> u64 {
    4000
}
impl Default for OsSpec {
    fn default() -> Self {
        OsSpec { eviction: None, swap: None, shootdown_cycles: d_shootdown(), compaction: None, cac: None }
    }
}
impl OsSpec {
    pub fn is_default(&self) -> bool {
        *self == OsSpec::default()
    }
}

/// Which processor model drives the memory system (`[machine]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MachineSpec {
    /// `cpu` (one core, interval model).
    #[serde(default = "d_machine")]
    pub kind: String,
}
fn d_machine() -> String {
    "cpu".into()
}
impl Default for MachineSpec {
    fn default() -> Self {
        MachineSpec { kind: d_machine() }
    }
}

/// A whole machine.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Spec {
    pub name: String,
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub machine: MachineSpec,
    #[serde(default, skip_serializing_if = "OsSpec::is_default")]
    pub os: OsSpec,
    #[serde(default)]
    pub mmu: MmuSpec,
    #[serde(default)]
    pub walker: WalkerSpec,
    #[serde(default)]
    pub pagetable: PageTableSpec,
    pub physmem: PhysMemSpec,
    #[serde(default)]
    pub cache: CacheSpec,
    #[serde(default)]
    pub timing: TimingSpec,
    #[serde(default)]
    pub metrics: MetricsSpec,
    /// The GPU machine (`machine.kind = "gpu"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<Box<crate::machine::gpu::spec::GpuSpec>>,
}
