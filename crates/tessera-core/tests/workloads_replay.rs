//! Every built-in workload, at a small size: runs deterministically, and its
//! recorded trace replays to byte-identical stats.

use std::collections::BTreeMap;

use tessera_core::config::{load, ConfigSource};
use tessera_core::workload::{self, WorkloadSource, WORKLOADS};

/// Small parameters for each workload (a new workload must add a line).
const SMALL: &[(&str, &[(&str, &str)])] = &[
    ("gups", &[("table", "1MiB"), ("updates", "5000")]),
    ("sequential", &[("footprint", "1MiB"), ("accesses", "5000")]),
    ("strided", &[("footprint", "1MiB"), ("accesses", "5000")]),
    ("uniform", &[("footprint", "1MiB"), ("accesses", "5000")]),
    ("pointer-chase", &[("footprint", "1MiB"), ("accesses", "5000")]),
    ("graph500-bfs", &[("scale", "8"), ("roots", "1")]),
    ("bfs", &[("scale", "8")]),
    ("mst", &[("scale", "8")]),
    ("spmv", &[("scale", "8")]),
    ("setcover", &[("scale", "8")]),
    ("matching", &[("scale", "8")]),
    ("mis", &[("scale", "8")]),
    ("graph-analytics", &[("scale", "8"), ("iterations", "1")]),
    ("btree", &[("keys", "2000"), ("lookups", "2000")]),
    ("xsbench", &[("gridpoints", "200"), ("lookups", "100")]),
    ("dict", &[("keys", "2000"), ("ops", "5000")]),
    ("canneal", &[("elements", "2000"), ("swaps", "100"), ("steps", "2")]),
    ("kvcache", &[("memory", "8MiB"), ("keys", "2000"), ("requests", "5000")]),
    ("data-analytics", &[("docs", "200"), ("vocab", "5000")]),
    ("data-serving", &[("records", "2000"), ("ops", "2000"), ("memtable", "64KiB")]),
    ("web-search", &[("docs", "5000"), ("terms", "2000"), ("postings", "50000"), ("queries", "50")]),
    ("media-streaming", &[("streams", "4"), ("files", "4"), ("file_size", "64KiB"), ("bytes", "1MiB")]),
];

fn small(name: &str) -> BTreeMap<String, String> {
    let (_, kv) = SMALL
        .iter()
        .find(|(n, _)| *n == name)
        .unwrap_or_else(|| panic!("add small parameters for workload {name} to SMALL"));
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

#[test]
fn every_workload_records_and_replays_identically() {
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
    let dir = std::env::temp_dir().join(format!("tessera-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for w in WORKLOADS {
        let params = small(w.name);
        let path = dir.join(format!("{}.tess", w.name));
        let summary = workload::record(w.name, &params, 3, &path, &mut |_, _| true)
            .unwrap_or_else(|e| panic!("{}: {e}", w.name));
        assert!(summary.records > 0, "{} emitted nothing", w.name);
        let mut live = WorkloadSource::start(w.name, &params, 3).unwrap();
        let a = tessera_core::run::simulate(&spec, 0, &mut live, &mut |_, _| true).unwrap();
        let mut again = WorkloadSource::start(w.name, &params, 3).unwrap();
        let b = tessera_core::run::simulate(&spec, 0, &mut again, &mut |_, _| true).unwrap();
        let mut replay = tessera_core::trace::open(&path).unwrap();
        let c = tessera_core::run::simulate(&spec, 0, replay.as_mut(), &mut |_, _| true).unwrap();
        let (a, b, c) = (a.to_json().to_string(), b.to_json().to_string(), c.to_json().to_string());
        assert_eq!(a, b, "{} is not deterministic", w.name);
        assert_eq!(a, c, "{}: replayed trace differs from the live run", w.name);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Every workload's dependencies (the batches' `dep` column) point back at a
/// load inside its stream; the workloads whose addresses come from loaded
/// values carry some, the others none. Prints each share of loads with a
/// dependency (`--nocapture`).
#[test]
fn dependencies_point_at_loads_and_only_where_modelled() {
    use tessera_core::access::{AccessBatch, AccessKind, BATCH_LEN};
    use tessera_core::stream::AccessSource;
    for w in WORKLOADS {
        let mut src = WorkloadSource::start(w.name, &small(w.name), 3).unwrap();
        let mut b = AccessBatch::with_capacity(BATCH_LEN);
        let mut kinds: Vec<AccessKind> = Vec::new();
        let (mut loads, mut dependent) = (0u64, 0u64);
        while src.next_batch(&mut b).unwrap() {
            for i in 0..b.len() {
                let d = b.dep_of(i) as usize;
                let at = kinds.len();
                if d != 0 {
                    assert!(d <= at, "{}: record {at} depends on {d} back, before the start", w.name);
                    assert_eq!(kinds[at - d], AccessKind::Load, "{}: record {at}'s producer is not a load", w.name);
                }
                if b.kind[i] == AccessKind::Load {
                    loads += 1;
                    dependent += (d != 0) as u64;
                }
                kinds.push(b.kind[i]);
            }
        }
        let share = dependent as f64 / loads.max(1) as f64;
        println!("{:16} {:>8} accesses, {:>5.1} % of loads with a dependency", w.name, kinds.len(), 100.0 * share);
        if matches!(w.name, "gups" | "sequential" | "strided" | "uniform" | "dict") {
            assert_eq!(dependent, 0, "{}", w.name);
        } else {
            assert!(dependent > 0, "{}", w.name);
        }
    }
}
