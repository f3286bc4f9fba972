//! Driving a machine from an access source: the run loop, with progress
//! reporting and cancellation, and the throughput benchmark.

use std::time::Instant;

use serde::Serialize;

use crate::access::{AccessBatch, BATCH_LEN};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::machine::Machine;
use crate::stats::Stats;
use crate::stream::AccessSource;

/// Batches between progress callbacks.
const PROGRESS_EVERY: u64 = 32;

/// Simulate `source` on a machine built from `spec`. `progress(done, total)` is
/// called every few batches and at the end; returning false stops the run with
/// [`Error::Interrupted`].
pub fn simulate(
    spec: &Spec,
    seed: u64,
    source: &mut dyn AccessSource,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<Stats> {
    let mut m = Machine::build(spec, seed)?;
    feed_all(&mut m, source, progress)?;
    Ok(m.stats())
}

/// Feed every batch of `source` into `m`.
pub fn feed_all(m: &mut Machine, source: &mut dyn AccessSource, progress: &mut dyn FnMut(u64, u64) -> bool) -> Result<u64> {
    let mut batch = AccessBatch::with_capacity(BATCH_LEN);
    let mut n = 0u64;
    let mut records = 0u64;
    while source.next_batch(&mut batch)? {
        m.feed(&batch)?;
        records += batch.len() as u64;
        n += 1;
        if n.is_multiple_of(PROGRESS_EVERY) {
            let (d, t) = source.progress();
            if !progress(d, t) {
                return Err(Error::Interrupted);
            }
        }
    }
    let (d, t) = source.progress();
    if !progress(d, t) {
        return Err(Error::Interrupted);
    }
    Ok(records)
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchResult {
    pub machine: String,
    pub source: String,
    pub accesses: u64,
    pub seconds: f64,
    pub accesses_per_sec: f64,
}

/// Time a whole simulation (machine build excluded) of `source` on `spec`.
pub fn bench(spec: &Spec, source: &mut dyn AccessSource) -> Result<BenchResult> {
    bench_with_progress(spec, source, &mut |_, _| true)
}

/// [`bench`] with a progress callback (returning false stops with [`Error::Interrupted`]).
pub fn bench_with_progress(
    spec: &Spec,
    source: &mut dyn AccessSource,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<BenchResult> {
    let mut m = Machine::build(spec, 0)?;
    let start = Instant::now();
    let records = feed_all(&mut m, source, progress)?;
    let seconds = start.elapsed().as_secs_f64();
    std::hint::black_box(m.stats());
    Ok(BenchResult {
        machine: spec.name.clone(),
        source: source.describe(),
        accesses: records,
        seconds,
        accesses_per_sec: records as f64 / seconds.max(1e-9),
    })
}
