//! Statistics: plain counters owned by components, walked once after a run into
//! a sorted tree of dotted names, plus derived metrics computed in one place.
//!
//! Components declare their counters with [`stat_group!`]; each field carries its
//! unit and a one-line description, so every stat Tessera prints is documented
//! (`tessera stats` lists them).

pub mod derived;

use std::collections::BTreeMap;

/// Receives counters during a stats walk. `dyn` is fine here: it runs once per run.
pub trait StatVisitor {
    fn counter(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str);
}

/// Anything that owns counters.
pub trait StatGroup {
    fn visit(&self, v: &mut dyn StatVisitor);
}

/// Wraps a visitor and prepends `prefix.` to every name.
pub struct Prefixed<'a> {
    prefix: &'a str,
    inner: &'a mut dyn StatVisitor,
}

impl<'a> Prefixed<'a> {
    pub fn new(prefix: &'a str, inner: &'a mut dyn StatVisitor) -> Self {
        Prefixed { prefix, inner }
    }
}

impl StatVisitor for Prefixed<'_> {
    fn counter(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str) {
        let full = format!("{}.{}", self.prefix, name);
        self.inner.counter(&full, value, unit, desc);
    }
}

/// Visit `group` with every name prefixed by `prefix`.
pub fn visit_prefixed(prefix: &str, group: &dyn StatGroup, v: &mut dyn StatVisitor) {
    let mut p = Prefixed::new(prefix, v);
    group.visit(&mut p);
}

/// Defines a counter struct whose fields are `u64` counters with a unit and a
/// description, and implements [`StatGroup`] for it.
///
/// ```ignore
/// stat_group! {
///     pub struct TlbStats {
///         lookups: "accesses", "translations looked up",
///         hits: "accesses", "lookups that found their translation",
///     }
/// }
/// ```
#[macro_export]
macro_rules! stat_group {
    ($(#[$meta:meta])* pub struct $name:ident { $( $field:ident : $unit:literal, $desc:literal ),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name { $( pub $field: u64 ),* }

        impl $crate::stats::StatGroup for $name {
            fn visit(&self, v: &mut dyn $crate::stats::StatVisitor) {
                $( v.counter(stringify!($field), self.$field, $unit, $desc); )*
            }
        }
    };
}

/// Description of one stat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatInfo {
    pub unit: &'static str,
    pub desc: &'static str,
}

/// The result of a run: sorted counters, derived metrics, and each stat's metadata.
#[derive(Clone, Debug, Default)]
pub struct Stats {
    pub counters: BTreeMap<String, u64>,
    pub derived: BTreeMap<String, f64>,
    pub info: BTreeMap<String, StatInfo>,
}

impl Stats {
    pub fn get(&self, name: &str) -> u64 {
        self.counters.get(name).copied().unwrap_or(0)
    }

    /// Sum of every counter whose name starts with `prefix` and ends with `suffix`.
    pub fn sum_matching(&self, prefix: &str, suffix: &str) -> u64 {
        self.counters
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && k.ends_with(suffix))
            .map(|(_, v)| *v)
            .sum()
    }

    /// Serialise as `{"counters": {...}, "derived": {...}}` with sorted keys.
    pub fn to_json(&self) -> serde_json::Value {
        let counters: serde_json::Map<String, serde_json::Value> =
            self.counters.iter().map(|(k, v)| (k.clone(), serde_json::Value::from(*v))).collect();
        let derived: serde_json::Map<String, serde_json::Value> = self
            .derived
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Number::from_f64(*v).map(serde_json::Value::Number).unwrap_or(serde_json::Value::Null)))
            .collect();
        serde_json::json!({ "counters": counters, "derived": derived })
    }
}

/// Collects a stats walk into a [`Stats`].
#[derive(Default)]
pub struct Collector {
    pub stats: Stats,
}

impl StatVisitor for Collector {
    fn counter(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str) {
        self.stats.counters.insert(name.to_string(), value);
        self.stats.info.insert(name.to_string(), StatInfo { unit, desc });
    }
}
