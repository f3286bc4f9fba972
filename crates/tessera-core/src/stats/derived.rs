//! Derived metrics: computed once, after the run, from counters and the spec.
//! Never in the hot path.
//!
//! Stats schema 2 (see `docs/stats.md`): a derived metric is named like a
//! counter, under the component it describes (`walker.walks_pki`,
//! `mmu.l2_tlb.mpki`, `bounds.perfect_tlb_share`), so counters and derived
//! metrics share one namespace of dotted names in every output. The set of
//! names depends only on the machine: a metric whose denominator is zero in a
//! run is NaN (written as `null`), never left out.
//!
//! The scale-out MMU study (Karakostas et al., "Performance Analysis of the
//! Memory Management Unit under Scale-out Workloads", IISWC 2014, Table II
//! and Eq. 1-5) defines: walks per kilo-instruction, average cycles per walk
//! (WALK_DURATION / WALK_COMPLETED), the share of cycles spent in walks, the
//! perfect-MMU-cache bounds (every walk is one reference hitting L1/L2/LLC at
//! 12/20/43 cycles) and the perfect-TLB bound (every TLB miss costs 7
//! cycles), each as a share of total cycles, and Equation 1's expected cycles
//! when two configurations are compared.

use serde::Serialize;

use super::{StatInfo, Stats};
use crate::config::Spec;
use crate::error::Result;

/// The version of the stats schema: the naming of counters and derived
/// metrics, written into every result. 1: derived metrics under `derived.`,
/// undefined ones left out. 2: derived metrics under their component, every
/// name always present (NaN/null when undefined), per-walk metrics over
/// completed walks.
pub const STATS_SCHEMA: u32 = 2;

/// (name, unit, description) of every derived metric. `<tlb>`, `<shadow>` and
/// `<level>` stand for each TLB structure, shadow structure and cache level
/// of the machine.
pub const DERIVED_DOCS: &[(&str, &str, &str)] = &[
    ("walker.walks_pki", "walks/kinstr", "completed page walks per 1000 instructions (data + instruction)"),
    ("walker.data_walks_pki", "walks/kinstr", "completed data-side walks per 1000 instructions"),
    ("walker.instr_walks_pki", "walks/kinstr", "completed instruction-side walks per 1000 instructions"),
    ("walker.cycles_per_walk", "cycles", "walk cycles (all walks, faulting included) per completed walk, as WALK_DURATION / WALK_COMPLETED"),
    ("walker.refs_per_walk", "references", "page-table references (all walks, faulting included) per completed walk"),
    ("walker.walk_cycle_share", "fraction", "share of total cycles spent in page walks"),
    ("walker.data_walk_cycle_share", "fraction", "share of total cycles spent in data-side walks"),
    ("walker.instr_walk_cycle_share", "fraction", "share of total cycles spent in instruction-side walks"),
    ("core.translation_stall_share", "fraction", "share of total cycles stalled on translation (TLB levels + walks)"),
    ("core.data_stall_share", "fraction", "share of total cycles stalled on data beyond the base CPI"),
    ("core.ipc", "instructions/cycle", "instructions per cycle"),
    ("core.walk_oldest_share", "fraction", "timing.kind = \"ooo\" only: share of total cycles a page walk is the oldest unfinished work"),
    ("bounds.perfect_mmu_l1_share", "fraction", "Eq. 4: walks × perfect_mmu_l1_cycles / cycles"),
    ("bounds.perfect_mmu_l2_share", "fraction", "Eq. 3: walks × perfect_mmu_l2_cycles / cycles"),
    ("bounds.perfect_mmu_llc_share", "fraction", "Eq. 2: walks × perfect_mmu_llc_cycles / cycles"),
    ("bounds.perfect_tlb_share", "fraction", "Eq. 5: walks × perfect_tlb_cycles / cycles"),
    ("mmu.<tlb>.mpki", "misses/kinstr", "misses of one TLB structure per 1000 instructions"),
    ("mmu.<tlb>.miss_rate", "fraction", "misses / lookups of one TLB structure"),
    ("mmu.shadow.<shadow>.mpki", "misses/kinstr", "misses of one shadow TLB structure per 1000 instructions"),
    ("mmu.shadow.<shadow>.miss_rate", "fraction", "misses / lookups of one shadow TLB structure"),
    ("cache.<level>.mpki", "misses/kinstr", "demand misses of one cache level per 1000 instructions"),
    ("cache.<level>.walk_ref_share", "fraction", "share of a level's demand accesses that are walk references"),
    ("physmem.allocator.iceberg.first_conflict_load", "fraction", "pool frames in use / pool frames when a placement first found all of its h slots full (Mosaic Pages, Table 3)"),
    ("physmem.allocator.iceberg.utilisation", "fraction", "mean share of the pool in use over the utilisation samples"),
    ("physmem.allocator.iceberg.steady_utilisation", "fraction", "mean share of the pool in use over the samples after the first conflict (steady state)"),
];

/// Schema-1 names of the derived metrics with a fixed name, and their
/// schema-2 names (per-structure ones map `derived.mmu.` → `mmu.` and
/// `derived.cache.` → `cache.`).
pub const RENAMED_FROM_SCHEMA_1: &[(&str, &str)] = &[
    ("derived.walks_pki", "walker.walks_pki"),
    ("derived.data_walks_pki", "walker.data_walks_pki"),
    ("derived.instr_walks_pki", "walker.instr_walks_pki"),
    ("derived.cycles_per_walk", "walker.cycles_per_walk"),
    ("derived.refs_per_walk", "walker.refs_per_walk"),
    ("derived.walk_cycle_share", "walker.walk_cycle_share"),
    ("derived.data_walk_cycle_share", "walker.data_walk_cycle_share"),
    ("derived.instr_walk_cycle_share", "walker.instr_walk_cycle_share"),
    ("derived.translation_stall_share", "core.translation_stall_share"),
    ("derived.data_stall_share", "core.data_stall_share"),
    ("derived.ipc", "core.ipc"),
    ("derived.perfect_mmu_l1_share", "bounds.perfect_mmu_l1_share"),
    ("derived.perfect_mmu_l2_share", "bounds.perfect_mmu_l2_share"),
    ("derived.perfect_mmu_llc_share", "bounds.perfect_mmu_llc_share"),
    ("derived.perfect_tlb_share", "bounds.perfect_tlb_share"),
];

/// `a / b`, or NaN when the denominator is zero (the metric is undefined
/// for this run, but its name is still reported).
fn ratio(a: f64, b: f64) -> f64 {
    if b > 0.0 {
        a / b
    } else {
        f64::NAN
    }
}

/// The documentation entry of a derived metric's concrete name.
fn doc_of(name: &str) -> Option<StatInfo> {
    DERIVED_DOCS.iter().find_map(|(pattern, unit, desc)| {
        let matches = match pattern.split_once('<') {
            None => *pattern == name,
            Some((head, rest)) => {
                let tail = &rest[rest.find('>').map_or(rest.len(), |i| i + 1)..];
                name.len() > head.len() + tail.len() && name.starts_with(head) && name.ends_with(tail) && !name[head.len()..name.len() - tail.len()].contains('.')
            }
        };
        matches.then_some(StatInfo { unit, desc, kind: "derived" })
    })
}

/// Add every derived metric of this machine (NaN where undefined in this run).
pub fn compute(stats: &mut Stats, spec: &Spec) {
    let g = |n: &str| stats.get(n) as f64;
    let ins = g("core.instructions");
    let cycles = g("core.cycles");
    let walks = g("walker.walks");
    let mut out: Vec<(String, f64)> = vec![
        ("walker.walks_pki".into(), ratio(walks * 1000.0, ins)),
        ("walker.data_walks_pki".into(), ratio(g("walker.data_walks") * 1000.0, ins)),
        ("walker.instr_walks_pki".into(), ratio(g("walker.instr_walks") * 1000.0, ins)),
        // Like the paper's WALK_DURATION / WALK_COMPLETED: the work of every
        // walk (faulting ones included) over the walks that completed.
        ("walker.refs_per_walk".into(), ratio(g("walker.refs_total"), walks)),
    ];
    if spec.timing.enabled {
        let m = &spec.metrics;
        out.extend([
            ("walker.cycles_per_walk".into(), ratio(g("walker.cycles"), walks)),
            ("walker.walk_cycle_share".into(), ratio(g("walker.cycles"), cycles)),
            ("walker.data_walk_cycle_share".into(), ratio(g("walker.data_cycles"), cycles)),
            ("walker.instr_walk_cycle_share".into(), ratio(g("walker.instr_cycles"), cycles)),
            ("core.translation_stall_share".into(), ratio(g("core.translation_stall_cycles"), cycles)),
            ("core.data_stall_share".into(), ratio(g("core.data_stall_cycles"), cycles)),
            ("core.ipc".into(), ratio(ins, cycles)),
            ("bounds.perfect_mmu_l1_share".into(), ratio(walks * m.perfect_mmu_l1_cycles as f64, cycles)),
            ("bounds.perfect_mmu_l2_share".into(), ratio(walks * m.perfect_mmu_l2_cycles as f64, cycles)),
            ("bounds.perfect_mmu_llc_share".into(), ratio(walks * m.perfect_mmu_llc_cycles as f64, cycles)),
            ("bounds.perfect_tlb_share".into(), ratio(walks * m.perfect_tlb_cycles as f64, cycles)),
        ]);
        // Under ooo walks overlap work and each other: the walker-busy share
        // above (WALK_DURATION) can pass 1, the head share cannot.
        if spec.timing.kind == "ooo" {
            out.push(("core.walk_oldest_share".into(), ratio(g("core.walk_oldest_cycles"), cycles)));
        }
    }
    let shadows = spec.mmu.shadow.keys().map(|n| format!("shadow.{n}"));
    for name in spec.mmu.tlb.keys().cloned().chain(shadows) {
        let misses = g(&format!("mmu.{name}.misses"));
        let lookups = g(&format!("mmu.{name}.lookups"));
        out.push((format!("mmu.{name}.mpki"), ratio(misses * 1000.0, ins)));
        out.push((format!("mmu.{name}.miss_rate"), ratio(misses, lookups)));
    }
    for (name, _) in spec.cache.levels() {
        let misses = g(&format!("cache.{name}.misses"));
        let walk = g(&format!("cache.{name}.walk_hits")) + g(&format!("cache.{name}.walk_misses"));
        let all = g(&format!("cache.{name}.hits")) + g(&format!("cache.{name}.misses"));
        out.push((format!("cache.{name}.mpki"), ratio(misses * 1000.0, ins)));
        out.push((format!("cache.{name}.walk_ref_share"), ratio(walk, all)));
    }
    let ice = "physmem.allocator.iceberg";
    if stats.counters.contains_key(&format!("{ice}.pool_frames")) {
        let pool = g(&format!("{ice}.pool_frames"));
        let first = g(&format!("{ice}.first_conflict_used"));
        out.push((format!("{ice}.first_conflict_load"), if first > 0.0 { ratio(first, pool) } else { f64::NAN }));
        out.push((format!("{ice}.utilisation"), ratio(g(&format!("{ice}.sampled_used")), g(&format!("{ice}.samples")) * pool)));
        out.push((format!("{ice}.steady_utilisation"), ratio(g(&format!("{ice}.steady_sampled_used")), g(&format!("{ice}.steady_samples")) * pool)));
    }
    for (k, v) in out {
        debug_assert!(!stats.counters.contains_key(&k), "derived metric {k} shadows a counter");
        if let Some(info) = doc_of(&k) {
            stats.info.insert(k.clone(), info);
        }
        stats.derived.insert(k, v);
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
        base_walks_pki: base.derived.get("walker.walks_pki").copied().unwrap_or(f64::NAN),
        other_walks_pki: other.derived.get("walker.walks_pki").copied().unwrap_or(f64::NAN),
    })
}

/// Every stat a machine built from `spec` reports (counters and derived
/// metrics), with units and descriptions; counters are zero and derived
/// metrics NaN. The names are exactly those of every run of this machine.
pub fn stat_docs(spec: &Spec) -> Result<Stats> {
    // A run adds its host-memory gauge where the counting allocator is installed.
    let stats = if spec.machine.kind == "gpu" {
        crate::machine::gpu::GpuMachine::stat_docs(spec)?
    } else {
        crate::machine::Machine::build(spec, 0)?.stats()
    };
    Ok(match crate::host_memory::RunMemory::begin().peak_bytes() {
        Some(_) => crate::run::with_peak_heap(stats, 0),
        None => stats,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load, ConfigSource};

    fn stats(counters: &[(&str, u64)]) -> Stats {
        let mut s = Stats::default();
        for (k, v) in counters {
            s.counters.insert(k.to_string(), *v);
        }
        s
    }

    /// Hand-computed: 4 completed walks and 2 faulting ones took 1,000 cycles
    /// and 30 references in all. Both per-walk metrics divide the work of
    /// every walk by the completed walks, as WALK_DURATION / WALK_COMPLETED.
    #[test]
    fn per_walk_metrics_divide_all_walk_work_by_completed_walks() {
        let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
        let mut s = stats(&[
            ("core.instructions", 2000),
            ("core.cycles", 10_000),
            ("walker.walks", 4),
            ("walker.faulting_walks", 2),
            ("walker.cycles", 1000),
            ("walker.refs_total", 30),
        ]);
        compute(&mut s, &spec);
        assert_eq!(s.derived["walker.cycles_per_walk"], 250.0);
        assert_eq!(s.derived["walker.refs_per_walk"], 7.5);
        assert_eq!(s.derived["walker.walks_pki"], 2.0);
        assert_eq!(s.derived["walker.walk_cycle_share"], 0.1);
    }

    /// Every name is reported whatever the run did; undefined ones are NaN.
    #[test]
    fn the_key_set_depends_on_the_machine_alone() {
        let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
        let mut empty = stats(&[]);
        compute(&mut empty, &spec);
        let mut busy = stats(&[("core.instructions", 10), ("core.cycles", 40), ("walker.walks", 1), ("mmu.l2_tlb.lookups", 3)]);
        compute(&mut busy, &spec);
        assert_eq!(empty.derived.keys().collect::<Vec<_>>(), busy.derived.keys().collect::<Vec<_>>());
        assert!(empty.derived.values().all(|v| v.is_nan()));
        assert!(busy.derived["mmu.l2_tlb.miss_rate"] == 0.0 && busy.derived["mmu.l1_dtlb_2m.miss_rate"].is_nan());
        for k in busy.derived.keys() {
            assert!(!k.starts_with("derived."), "{k}");
            assert_eq!(busy.info[k].kind, "derived", "{k} has no documentation");
        }
    }
}
