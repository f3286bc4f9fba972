//! Framework tests: the threaded source delivers exactly the stream the
//! workload emits, deterministically; footprints match parameters; recording
//! and replaying give identical stats; stopping early is clean.

use std::collections::{BTreeMap, BTreeSet};

use super::*;
use crate::access::AccessKind;
use crate::config::{self, ConfigSource};
use crate::workload::emit::VecSink;

pub(crate) fn params(kv: &[(&str, &str)]) -> BTreeMap<String, String> {
    kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

/// Every record of a workload, run directly on this thread.
pub(crate) fn emitted(name: &str, kv: &[(&str, &str)], seed: u64) -> Vec<(u32, u64, AccessKind, u8)> {
    let (info, p) = resolve(name, &params(kv), seed).unwrap();
    let mut w = (info.build)(&p).unwrap();
    let mut sink = VecSink::default();
    let mut e = Emitter::new(&mut sink);
    w.run(&mut e).unwrap();
    e.finish();
    sink.records
}

/// Every record of a workload and its dependency distance (0: none), run
/// directly on this thread.
pub(crate) fn emitted_deps(name: &str, kv: &[(&str, &str)], seed: u64) -> (Vec<(u32, u64, AccessKind, u8)>, Vec<u32>) {
    let (info, p) = resolve(name, &params(kv), seed).unwrap();
    let mut w = (info.build)(&p).unwrap();
    let mut sink = VecSink::default();
    let mut e = Emitter::new(&mut sink);
    w.run(&mut e).unwrap();
    e.finish();
    (sink.records, sink.deps)
}

/// Checks every dependency of a stream points back at a load inside the
/// stream; returns the share of loads that carry one.
pub(crate) fn check_deps(recs: &[(u32, u64, AccessKind, u8)], deps: &[u32]) -> f64 {
    assert_eq!(recs.len(), deps.len());
    let (mut loads, mut dependent) = (0u64, 0u64);
    for (i, (r, &d)) in recs.iter().zip(deps).enumerate() {
        if d != 0 {
            assert!(d as usize <= i, "record {i} depends on {d} back, before the start");
            assert_eq!(recs[i - d as usize].2, AccessKind::Load, "record {i}'s producer {} is not a load", i - d as usize);
        }
        if r.2 == AccessKind::Load {
            loads += 1;
            dependent += (d != 0) as u64;
        }
    }
    dependent as f64 / loads.max(1) as f64
}

/// Every record of a workload, read through [`WorkloadSource`].
fn streamed(name: &str, kv: &[(&str, &str)], seed: u64) -> Vec<(u32, u64, AccessKind, u8)> {
    let mut src = WorkloadSource::start(name, &params(kv), seed).unwrap();
    let mut b = AccessBatch::with_capacity(BATCH_LEN);
    let mut out = Vec::new();
    while src.next_batch(&mut b).unwrap() {
        for i in 0..b.len() {
            out.push((b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i]));
        }
    }
    out
}

pub(crate) fn distinct_pages(recs: &[(u32, u64, AccessKind, u8)]) -> usize {
    recs.iter().map(|r| r.1 >> 12).collect::<BTreeSet<_>>().len()
}

#[test]
fn threaded_source_equals_direct_run_and_is_deterministic() {
    for (name, kv) in [
        ("gups", vec![("table", "1MiB"), ("updates", "40000")]),
        ("uniform", vec![("footprint", "4MiB"), ("accesses", "30000"), ("store_fraction", "0.3")]),
        ("pointer-chase", vec![("footprint", "1MiB"), ("accesses", "20000")]),
    ] {
        let a = emitted(name, &kv, 7);
        let b = streamed(name, &kv, 7);
        assert_eq!(a, b, "{name}");
        assert_eq!(a, emitted(name, &kv, 7), "{name} not deterministic");
        assert_ne!(a, emitted(name, &kv, 8), "{name} ignores its seed");
    }
}

#[test]
fn footprints_match_parameters() {
    // gups touches (almost) every page of a table much smaller than its updates.
    let recs = emitted("gups", &[("table", "4MiB"), ("updates", "200000")], 1);
    assert_eq!(recs.len(), 4 * 200_000);
    let table_pages = 4 << 20 >> 12;
    let pages = distinct_pages(&recs);
    assert!(pages == table_pages + 1 || pages == table_pages + 2, "pages {pages}"); // + ran[] on the stack
    // sequential covers exactly its footprint once it wraps.
    let recs = emitted("sequential", &[("footprint", "2MiB"), ("accesses", "40000")], 0);
    assert_eq!(distinct_pages(&recs), 512);
    let recs = emitted("strided", &[("footprint", "8MiB"), ("accesses", "3000")], 0);
    assert_eq!(distinct_pages(&recs), 2048);
    // pointer-chase visits every node before repeating.
    let recs = emitted("pointer-chase", &[("footprint", "1MiB"), ("node", "4096"), ("accesses", "256")], 3);
    assert_eq!(distinct_pages(&recs), 256);
    // Declared footprints.
    for w in WORKLOADS {
        let p = Params::resolve(w.name, w.params, &BTreeMap::new(), 0).unwrap();
        assert!((w.footprint)(&p).unwrap() > 0, "{}", w.name);
    }
}

#[test]
fn gups_instruction_model_and_kinds() {
    let recs = emitted("gups", &[("table", "1MiB"), ("updates", "1280")], 0);
    let ins: u64 = recs.iter().map(|r| r.0 as u64).sum();
    assert_eq!(ins, 10 * 1280);
    let stores = recs.iter().filter(|r| r.2 == AccessKind::Store).count();
    assert_eq!(stores, 2 * 1280);
    let init = emitted("gups", &[("table", "1MiB"), ("updates", "128"), ("init", "true")], 0);
    assert_eq!(init.len(), (1 << 20) / 8 + 4 * 128);
}

#[test]
fn unknown_names_and_params_are_config_errors() {
    let e = WorkloadSource::start("nope", &BTreeMap::new(), 0).err().unwrap().to_string();
    assert!(e.contains("unknown workload") && e.contains("gups"), "{e}");
    let e = WorkloadSource::start("gups", &params(&[("tabel", "1MiB")]), 0).err().unwrap().to_string();
    assert!(e.contains("workload.gups.tabel") && e.contains("allowed: table"), "{e}");
    let e = WorkloadSource::start("gups", &params(&[("table", "3MiB")]), 0).err().unwrap().to_string();
    assert!(e.contains("workload.gups.table") && e.contains("power of two"), "{e}");
    let e = WorkloadSource::start("pointer-chase", &params(&[("node", "12")]), 0).err().unwrap().to_string();
    assert!(e.contains("workload.pointer-chase.node"), "{e}");
}

#[test]
fn workloads_larger_than_the_host_are_config_errors() {
    // Against a host with 1 GiB available: a 4 GiB GUPS table is refused,
    // naming the workload and the sizes; a 64 MiB one fits.
    let (info, p) = (find("gups").unwrap(), |kv| Params::resolve("gups", find("gups").unwrap().params, &params(kv), 0).unwrap());
    let e = check_fits(info, &p(&[("table", "4GiB")]), Some(1 << 30)).unwrap_err().to_string();
    assert!(e.contains("workload gups") && e.contains("4.0 GiB of data") && e.contains("1.0 GiB available"), "{e}");
    assert!(check_fits(info, &p(&[("table", "64MiB")]), Some(1 << 30)).is_ok());
    assert!(check_fits(info, &p(&[("table", "4GiB")]), None).is_ok(), "no check where the host does not say");
    // On this host, through the front door: 2^36 dictionary keys are about a terabyte.
    if host_available_bytes().is_some() {
        let e = WorkloadSource::start("dict", &params(&[("keys", "68719476736")]), 0).err().unwrap().to_string();
        assert!(e.contains("workload dict") && e.contains("GiB available"), "{e}");
    }
}

#[test]
fn dropping_the_source_mid_stream_stops_the_thread() {
    let mut src = WorkloadSource::start("uniform", &params(&[("accesses", "1G")]), 0).unwrap();
    let mut b = AccessBatch::with_capacity(BATCH_LEN);
    while src.progress().1 == 0 {
        assert!(src.next_batch(&mut b).unwrap());
    }
    let (done, total) = src.progress();
    assert!(done < total);
    drop(src); // joins the producer, which must notice and return
}

#[test]
fn recorded_trace_replays_with_identical_stats() {
    let dir = std::env::temp_dir().join(format!("tessera-wl-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("gups.tess");
    let kv = params(&[("table", "16MiB"), ("updates", "50000")]);
    let summary = record("gups", &kv, 5, &path, &mut |_, _| true).unwrap();
    assert_eq!(summary.records, 200_000);
    let spec = config::load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
    let mut live = WorkloadSource::start("gups", &kv, 5).unwrap();
    let a = crate::run::simulate(&spec, 0, &mut live, &mut |_, _| true).unwrap();
    let mut replay = crate::trace::open(&path).unwrap();
    let b = crate::run::simulate(&spec, 0, replay.as_mut(), &mut |_, _| true).unwrap();
    assert_eq!(a.to_json().to_string(), b.to_json().to_string());
    assert_eq!(a.get("core.records"), 200_000);
    // An interrupted recording leaves nothing behind.
    let path2 = dir.join("stopped.tess");
    let mut calls = 0;
    let err = record("uniform", &params(&[("accesses", "5M")]), 0, &path2, &mut |_, _| {
        calls += 1;
        calls < 2
    });
    assert!(matches!(err, Err(Error::Interrupted)));
    assert!(!path2.exists());
    let leftovers: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A workload, small parameters for it, and the parameter that makes it run
/// (practically) forever.
type AppCase = (&'static str, &'static [(&'static str, &'static str)], &'static str);

const APPS: &[AppCase] = &[
    ("btree", &[("keys", "20000"), ("lookups", "20000")], "lookups"),
    ("xsbench", &[("gridpoints", "200"), ("lookups", "2000")], "lookups"),
    ("dict", &[("keys", "10000"), ("ops", "50000")], "ops"),
    ("canneal", &[("elements", "5000"), ("swaps", "2000"), ("steps", "3")], "steps"),
    ("kvcache", &[("memory", "4MiB"), ("keys", "20000"), ("requests", "20000")], "requests"),
    ("data-analytics", &[("docs", "300"), ("vocab", "10000")], "docs"),
    ("data-serving", &[("records", "5000"), ("ops", "5000"), ("memtable", "128KiB")], "ops"),
    ("web-search", &[("docs", "20000"), ("terms", "2000"), ("postings", "100000"), ("queries", "300")], "queries"),
    ("media-streaming", &[("streams", "10"), ("files", "10"), ("file_size", "256KiB"), ("bytes", "4MiB")], "bytes"),
];

#[test]
fn application_workloads_are_deterministic_from_their_seed() {
    for (name, kv, _) in APPS {
        let a = emitted(name, kv, 7);
        assert!(a.len() > 1000, "{name}");
        assert_eq!(a, emitted(name, kv, 7), "{name} not deterministic");
        assert_ne!(a, emitted(name, kv, 8), "{name} ignores its seed");
    }
    for (name, kv, _) in &APPS[..2] {
        assert_eq!(emitted(name, kv, 3), streamed(name, kv, 3), "{name}");
    }
}

#[test]
fn application_workloads_stop_when_the_consumer_does() {
    for (name, kv, forever) in APPS {
        let mut kv = kv.to_vec();
        kv.retain(|(k, _)| k != forever);
        kv.push((forever, if *forever == "bytes" { "1TiB" } else { "1000G" }));
        let (info, p) = resolve(name, &params(&kv), 0).unwrap();
        let mut w = (info.build)(&p).unwrap();
        let mut sink = StopAfter { batches: 0, records: 0 };
        let mut e = Emitter::new(&mut sink);
        w.run(&mut e).unwrap();
        assert!(e.stopped(), "{name}");
        e.finish();
        assert_eq!(sink.records, 2 * BATCH_LEN, "{name}");
    }
}

/// Takes two batches, then asks to stop.
struct StopAfter {
    batches: usize,
    records: usize,
}

impl BatchSink for StopAfter {
    fn take(&mut self, b: &mut AccessBatch, _progress: (u64, u64)) -> bool {
        self.records += b.len();
        b.clear();
        self.batches += 1;
        self.batches < 2
    }
}

#[test]
fn application_defaults_have_tens_to_hundreds_of_mib() {
    for (name, _, _) in APPS {
        let w = find(name).unwrap();
        let p = Params::resolve(w.name, w.params, &BTreeMap::new(), 0).unwrap();
        let mib = (w.footprint)(&p).unwrap() >> 20;
        assert!((16..=1024).contains(&mib), "{name}: {mib} MiB");
    }
}

/// Generator throughput at the default parameters (release build):
/// `cargo test -p tessera-core --release --lib generator_throughput -- --ignored --nocapture`.
#[test]
#[ignore]
fn generator_throughput() {
    for (name, _, _) in APPS {
        let w = find(name).unwrap();
        let p = Params::resolve(w.name, w.params, &BTreeMap::new(), 0).unwrap();
        let mib = (w.footprint)(&p).unwrap() as f64 / (1 << 20) as f64;
        let b = bench_generator(name, &BTreeMap::new(), 1).unwrap();
        println!(
            "{name:16} {mib:>6.0} MiB {:>6.1} M accesses in {:>5.2} s: {:>6.1} M accesses/s, {:.1} instructions/access",
            b.accesses as f64 / 1e6,
            b.seconds,
            b.accesses_per_sec / 1e6,
            b.instructions as f64 / b.accesses as f64
        );
    }
}
