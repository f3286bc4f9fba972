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
    /// An event count: it only grows, and a warm-up phase's share of it is
    /// subtracted from the measured result.
    fn counter(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str);

    /// A level (frames free, page-table nodes): the state at the end of the
    /// run, reported as is after a warm-up.
    fn gauge(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str) {
        self.counter(name, value, unit, desc);
    }
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

    fn gauge(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str) {
        let full = format!("{}.{}", self.prefix, name);
        self.inner.gauge(&full, value, unit, desc);
    }
}

/// Visit `group` with every name prefixed by `prefix`.
pub fn visit_prefixed(prefix: &str, group: &dyn StatGroup, v: &mut dyn StatVisitor) {
    let mut p = Prefixed::new(prefix, v);
    group.visit(&mut p);
}

/// Defines a counter struct whose fields are `u64` counters with a unit and a
/// description, and implements [`StatGroup`] for it. A field whose unit is
/// preceded by `gauge` is a level, not an event count (see
/// [`StatVisitor::gauge`]).
///
/// ```ignore
/// stat_group! {
///     pub struct TlbStats {
///         lookups: "accesses", "translations looked up",
///         hits: "accesses", "lookups that found their translation",
///         resident: gauge "entries", "valid entries at the end of the run",
///     }
/// }
/// ```
#[macro_export]
macro_rules! stat_group {
    (@visit $v:ident, $value:expr, $name:expr, gauge $unit:literal, $desc:literal) => {
        $v.gauge($name, $value, $unit, $desc)
    };
    (@visit $v:ident, $value:expr, $name:expr, $unit:literal, $desc:literal) => {
        $v.counter($name, $value, $unit, $desc)
    };
    (@since $now:expr, $then:expr, gauge) => { $now };
    (@since $now:expr, $then:expr, ) => { $now - $then };
    ($(#[$meta:meta])* pub struct $name:ident { $( $field:ident : $($kind:ident)? $unit:literal, $desc:literal ),* $(,)? }) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq)]
        pub struct $name { $( pub $field: u64 ),* }

        impl $crate::stats::StatGroup for $name {
            fn visit(&self, v: &mut dyn $crate::stats::StatVisitor) {
                $( $crate::stat_group!(@visit v, self.$field, stringify!($field), $($kind)? $unit, $desc); )*
            }
        }

        impl $name {
            /// The events since `earlier` (a snapshot of the same group);
            /// gauges keep their current level.
            #[allow(dead_code, unused_variables)]
            pub fn since(&self, earlier: &Self) -> Self {
                $name { $( $field: $crate::stat_group!(@since self.$field, earlier.$field, $($kind)?) ),* }
            }
        }
    };
}

/// Description of one stat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatInfo {
    pub unit: &'static str,
    pub desc: &'static str,
    /// What the number is: a counter (`"count"`), a level at the end of the
    /// run (`"gauge"`) or a metric derived from counters (`"derived"`).
    pub kind: &'static str,
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
        self.stats.info.insert(name.to_string(), StatInfo { unit, desc, kind: "count" });
    }

    fn gauge(&mut self, name: &str, value: u64, unit: &'static str, desc: &'static str) {
        self.stats.counters.insert(name.to_string(), value);
        self.stats.info.insert(name.to_string(), StatInfo { unit, desc, kind: "gauge" });
    }
}

impl Stats {
    /// The counters of a run measured from `baseline` (the same machine's
    /// counters at the end of a warm-up): counts minus their warm-up share,
    /// gauges as they are now. Derived metrics are not carried over; compute
    /// them afresh.
    pub fn since(&self, baseline: &Stats) -> Stats {
        let counters = self
            .counters
            .iter()
            .map(|(k, &v)| {
                let gauge = self.info.get(k).is_some_and(|i| i.kind == "gauge");
                let before = if gauge { 0 } else { baseline.get(k) };
                debug_assert!(before <= v, "counter {k} went down from {before} to {v}");
                (k.clone(), v - before)
            })
            .collect();
        Stats { counters, derived: BTreeMap::new(), info: self.info.clone() }
    }
}
