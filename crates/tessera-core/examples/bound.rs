//! How fast can an exact simulator of the `tlb_only` machine go on this host?
//!
//! `cargo run --release --example bound -- PATTERN ACCESSES [FOOTPRINT]` runs
//! the same synthetic stream through `Machine` (preset `tlb_only`) and through
//! `bound::model::Bound`, the same model hand specialised to that one
//! configuration (see its module comment for what it leaves out), checks that
//! every counter they share is equal, and prints both rates. The rates are
//! interleaved (Machine, Bound, Machine, Bound) because the host's speed
//! drifts; docs/performance.md explains what the bound means for the targets.
//! A fourth argument `bound` runs the bound model alone (for profiling it).
//! `bound TRACE [bound|machine] [RECORDS]` does the same on a real-program
//! trace, from memory (`machine`: Machine alone, for profiling it; `RECORDS`:
//! the trace's first records only).

#[path = "bound/model.rs"]
mod model;

use std::time::Instant;
use tessera_core::access::{AccessBatch, BATCH_LEN};
use tessera_core::config::{load, ConfigSource};
use tessera_core::machine::Machine;
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
use tessera_core::stream::AccessSource;

fn stream(pattern: Pattern, accesses: u64, footprint: u64) -> Synthetic {
    Synthetic::new(SyntheticSpec::new(pattern, accesses, footprint, 1)).expect("stream")
}

/// Check that every counter the bound model keeps equals `Machine`'s, and print both rates.
fn report(what: &str, m: &Machine, b: &model::Bound, accesses: u64, machine_s: f64, bound_s: f64) {
    let stats = m.stats();
    for (name, v) in b.counters() {
        assert_eq!(stats.get(name), v, "counter {name}: Machine vs bound model");
    }
    println!(
        "{what}: Machine {:.1} M/s, bound model {:.1} M/s (counters equal)",
        accesses as f64 / machine_s / 1e6,
        accesses as f64 / bound_s / 1e6
    );
}

/// `bound TRACE [bound]`: the trace's records are read into memory first,
/// then Machine and the bound model are timed on them from memory (or the
/// bound model alone). The bound model takes one address space, loads and
/// stores that do not cross a page: such traces only (the real-program
/// traces of `scripts/record-bench-traces.sh` are).
fn trace_main(path: &str, alone: &str, limit: u64) {
    let mut src = tessera_core::trace::open(std::path::Path::new(path)).expect("trace");
    let mut batches = Vec::new();
    let mut read = 0u64;
    while read < limit {
        let mut b = AccessBatch::with_capacity(BATCH_LEN);
        if !src.next_batch(&mut b).expect("batch") {
            break;
        }
        for i in 0..b.len() {
            let last = b.vaddr[i] + b.size[i].max(1) as u64 - 1;
            assert!(
                b.asid[i] == 0 && b.kind[i] != tessera_core::AccessKind::IFetch && b.vaddr[i] >> 12 == last >> 12,
                "the bound model takes loads and stores of address space 0 that do not cross a page"
            );
        }
        if read + b.len() as u64 > limit {
            let whole = b.clone();
            b.copy_range(&whole, 0..(limit - read) as usize);
        }
        read += b.len() as u64;
        batches.push(b);
    }
    let records: u64 = batches.iter().map(|b| b.len() as u64).sum();
    let time_bound = || {
        let mut b = model::Bound::new(1 << 30);
        let t = Instant::now();
        for batch in &batches {
            b.feed(batch);
        }
        (t.elapsed().as_secs_f64(), b)
    };
    let spec = load(&ConfigSource::Preset("tlb_only".into()), &[]).expect("preset");
    if alone == "bound" {
        let (s, _) = time_bound();
        println!("bound model alone: {:.1} M/s ({records} accesses in {s:.3} s)", records as f64 / s / 1e6);
        return;
    }
    if alone == "machine" {
        let mut m = Machine::build(&spec, 0).expect("machine");
        let t = Instant::now();
        for batch in &batches {
            m.feed(batch).expect("feed");
        }
        let s = t.elapsed().as_secs_f64();
        println!("Machine alone: {:.1} M/s ({records} accesses in {s:.3} s)", records as f64 / s / 1e6);
        return;
    }
    for round in 0..2 {
        let mut m = Machine::build(&spec, 0).expect("machine");
        let t = Instant::now();
        for batch in &batches {
            m.feed(batch).expect("feed");
        }
        let machine_s = t.elapsed().as_secs_f64();
        let (bound_s, b) = time_bound();
        let what = format!("round {round}: {path} ({records} accesses, from memory)");
        report(&what, &m, &b, records, machine_s, bound_s);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(path) = args.get(1).filter(|a| std::path::Path::new(a.as_str()).is_file()) {
        let limit = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(u64::MAX);
        return trace_main(path, args.get(2).map(String::as_str).unwrap_or(""), limit);
    }
    let pattern = Pattern::parse(args.get(1).map(String::as_str).unwrap_or("uniform")).expect("pattern");
    let accesses: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10_000_000);
    let footprint: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(8 << 30);
    if args.get(4).map(String::as_str) == Some("bound") {
        let mut b = model::Bound::new(footprint);
        let mut batch = AccessBatch::with_capacity(BATCH_LEN);
        let mut src = stream(pattern, accesses, footprint);
        let t = Instant::now();
        while src.next_batch(&mut batch).expect("batch") {
            b.feed(&batch);
        }
        println!("bound model alone: {:.1} M/s", accesses as f64 / t.elapsed().as_secs_f64() / 1e6);
        return;
    }
    let spec = load(&ConfigSource::Preset("tlb_only".into()), &[]).expect("preset");
    for round in 0..2 {
        let mut m = Machine::build(&spec, 0).expect("machine");
        let mut b = model::Bound::new(footprint);
        let mut batch = AccessBatch::with_capacity(BATCH_LEN);
        let mut src = stream(pattern, accesses, footprint);
        let t = Instant::now();
        while src.next_batch(&mut batch).expect("batch") {
            m.feed(&batch).expect("feed");
        }
        let machine_s = t.elapsed().as_secs_f64();
        let mut src = stream(pattern, accesses, footprint);
        let t = Instant::now();
        while src.next_batch(&mut batch).expect("batch") {
            b.feed(&batch);
        }
        let bound_s = t.elapsed().as_secs_f64();
        let what = format!("round {round}: {pattern} {accesses} accesses over {footprint} B");
        report(&what, &m, &b, accesses, machine_s, bound_s);
    }
}
