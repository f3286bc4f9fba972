//! Derived metrics: computed once, after the run, from counters and the spec.
//! Never in the hot path. Names live under `derived.` and are documented in
//! [`DERIVED_DOCS`].
//!
//! The scale-out MMU study (Karakostas et al., "Performance Analysis of the
//! Memory Management Unit under Scale-out Workloads", IISWC 2014, Table II
//! and Eq. 1-5) defines: walks per kilo-instruction, average cycles per walk,
//! the share of cycles spent in walks, the perfect-MMU-cache bounds (every walk
//! is one reference hitting L1/L2/LLC at 12/20/43 cycles) and the perfect-TLB
//! bound (every TLB miss costs 7 cycles), each as a share of total cycles, and
//! Equation 1's expected cycles when two configurations are compared.

use serde::Serialize;

use super::Stats;
use crate::config::Spec;
use crate::error::Result;

/// (name, unit, description) of every derived metric.
pub const DERIVED_DOCS: &[(&str, &str, &str)] = &[
    ("derived.walks_pki", "walks/kinstr", "completed page walks per 1000 instructions (data + instruction)"),
    ("derived.data_walks_pki", "walks/kinstr", "completed data-side walks per 1000 instructions"),
    ("derived.instr_walks_pki", "walks/kinstr", "completed instruction-side walks per 1000 instructions"),
    ("derived.cycles_per_walk", "cycles", "average cycles per completed walk"),
    ("derived.refs_per_walk", "references", "average page-table references per walk (incl. faulting walks)"),
    ("derived.walk_cycle_share", "fraction", "share of total cycles spent in page walks"),
    ("derived.data_walk_cycle_share", "fraction", "share of total cycles spent in data-side walks"),
    ("derived.instr_walk_cycle_share", "fraction", "share of total cycles spent in instruction-side walks"),
    ("derived.translation_stall_share", "fraction", "share of total cycles stalled on translation (TLB levels + walks)"),
    ("derived.data_stall_share", "fraction", "share of total cycles stalled on data beyond the base CPI"),
    ("derived.ipc", "instructions/cycle", "instructions per cycle"),
    ("derived.perfect_mmu_l1_share", "fraction", "Eq. 4: walks × perfect_mmu_l1_cycles / cycles"),
    ("derived.perfect_mmu_l2_share", "fraction", "Eq. 3: walks × perfect_mmu_l2_cycles / cycles"),
    ("derived.perfect_mmu_llc_share", "fraction", "Eq. 2: walks × perfect_mmu_llc_cycles / cycles"),
    ("derived.perfect_tlb_share", "fraction", "Eq. 5: walks × perfect_tlb_cycles / cycles"),
    ("derived.mmu.<tlb>.mpki", "misses/kinstr", "misses of one TLB structure per 1000 instructions"),
    ("derived.mmu.<tlb>.miss_rate", "fraction", "misses / lookups of one TLB structure"),
    ("derived.cache.<level>.mpki", "misses/kinstr", "demand misses of one cache level per 1000 instructions"),
    ("derived.cache.<level>.walk_ref_share", "fraction", "share of a level's demand accesses that are walk references"),
];

fn ratio(a: f64, b: f64) -> Option<f64> {
    if b > 0.0 {
        Some(a / b)
    } else {
        None
    }
}

/// Add every derived metric that is defined for this run (no NaNs: a metric
/// whose denominator is zero is omitted).
pub fn compute(stats: &mut Stats, spec: &Spec) {
    let g = |n: &str| stats.get(n) as f64;
    let ins = g("core.instructions");
    let cycles = g("core.cycles");
    let walks = g("walker.walks");
    let mut out: Vec<(String, Option<f64>)> = vec![
        ("derived.walks_pki".into(), ratio(walks * 1000.0, ins)),
        ("derived.data_walks_pki".into(), ratio(g("walker.data_walks") * 1000.0, ins)),
        ("derived.instr_walks_pki".into(), ratio(g("walker.instr_walks") * 1000.0, ins)),
        ("derived.refs_per_walk".into(), ratio(g("walker.refs_total"), walks + g("walker.faulting_walks"))),
    ];
    if spec.timing.enabled {
        let m = &spec.metrics;
        out.extend([
            ("derived.cycles_per_walk".into(), ratio(g("walker.cycles"), walks)),
            ("derived.walk_cycle_share".into(), ratio(g("walker.cycles"), cycles)),
            ("derived.data_walk_cycle_share".into(), ratio(g("walker.data_cycles"), cycles)),
            ("derived.instr_walk_cycle_share".into(), ratio(g("walker.instr_cycles"), cycles)),
            ("derived.translation_stall_share".into(), ratio(g("core.translation_stall_cycles"), cycles)),
            ("derived.data_stall_share".into(), ratio(g("core.data_stall_cycles"), cycles)),
            ("derived.ipc".into(), ratio(ins, cycles)),
            ("derived.perfect_mmu_l1_share".into(), ratio(walks * m.perfect_mmu_l1_cycles as f64, cycles)),
            ("derived.perfect_mmu_l2_share".into(), ratio(walks * m.perfect_mmu_l2_cycles as f64, cycles)),
            ("derived.perfect_mmu_llc_share".into(), ratio(walks * m.perfect_mmu_llc_cycles as f64, cycles)),
            ("derived.perfect_tlb_share".into(), ratio(walks * m.perfect_tlb_cycles as f64, cycles)),
        ]);
    }
    for name in spec.mmu.tlb.keys() {
        let misses = g(&format!("mmu.{name}.misses"));
        let lookups = g(&format!("mmu.{name}.lookups"));
        out.push((format!("derived.mmu.{name}.mpki"), ratio(misses * 1000.0, ins)));
        out.push((format!("derived.mmu.{name}.miss_rate"), ratio(misses, lookups)));
    }
    for (name, _) in spec.cache.levels() {
        let misses = g(&format!("cache.{name}.misses"));
        let walk = g(&format!("cache.{name}.walk_hits")) + g(&format!("cache.{name}.walk_misses"));
        let all = g(&format!("cache.{name}.hits")) + g(&format!("cache.{name}.misses"));
        out.push((format!("derived.cache.{name}.mpki"), ratio(misses * 1000.0, ins)));
        out.push((format!("derived.cache.{name}.walk_ref_share"), ratio(walk, all)));
    }
    for (k, v) in out {
        if let Some(v) = v {
            stats.derived.insert(k, v);
        }
    }
}

/// Equation 1 of the scale-out MMU study: going from `base` (e.g. 4 KiB pages)
/// to `other` (e.g. THP), the expected cycles assume walks do not interact with
/// the rest of the pipeline: `expected = base.cycles − base.walk_cycles + other.walk_cycles`.
/// The gap between simulated and expected speedup is the effect of translation
/// on everything else (here: page-table/data interference in the caches, and
/// TLB hit latencies).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Comparison {
    pub base_cycles: u64,
    pub other_cycles: u64,
    pub base_walk_cycles: u64,
    pub other_walk_cycles: u64,
    pub expected_other_cycles: f64,
    /// base / other − 1.
    pub simulated_speedup: f64,
    /// base / expected − 1.
    pub expected_speedup: f64,
    /// simulated − expected speedup.
    pub speedup_gap: f64,
    /// other.walk_cycles / base.walk_cycles − 1 (negative: fewer walk cycles).
    pub walk_cycle_change: f64,
    pub base_walks_pki: f64,
    pub other_walks_pki: f64,
}

/// Compare two timed runs with Equation 1. Both must have cycles.
pub fn compare(base: &Stats, other: &Stats) -> Result<Comparison> {
    let bc = base.get("core.cycles");
    let oc = other.get("core.cycles");
    if bc == 0 || oc == 0 {
        return Err(crate::error::Error::config(
            "timing.enabled",
            "Equation 1 needs two timed runs (core.cycles is 0 in one of them)",
        ));
    }
    let bw = base.get("walker.cycles");
    let ow = other.get("walker.cycles");
    let expected = bc as f64 - bw as f64 + ow as f64;
    let simulated = bc as f64 / oc as f64 - 1.0;
    let expected_speedup = bc as f64 / expected - 1.0;
    Ok(Comparison {
        base_cycles: bc,
        other_cycles: oc,
        base_walk_cycles: bw,
        other_walk_cycles: ow,
        expected_other_cycles: expected,
        simulated_speedup: simulated,
        expected_speedup,
        speedup_gap: simulated - expected_speedup,
        walk_cycle_change: if bw > 0 { ow as f64 / bw as f64 - 1.0 } else { 0.0 },
        base_walks_pki: base.derived.get("derived.walks_pki").copied().unwrap_or(0.0),
        other_walks_pki: other.derived.get("derived.walks_pki").copied().unwrap_or(0.0),
    })
}

/// Every counter a machine built from `spec` reports, with units and
/// descriptions (values are zero). Derived metrics are documented separately in
/// [`DERIVED_DOCS`] (their names depend on the run's structures).
pub fn stat_docs(spec: &Spec) -> Result<Stats> {
    let m = crate::machine::Machine::build(spec, 0)?;
    let mut c = super::Collector::default();
    crate::stats::StatGroup::visit(&m, &mut c);
    Ok(c.stats)
}
