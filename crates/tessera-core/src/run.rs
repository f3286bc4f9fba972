//! Driving a machine from an access source: the run loop, with progress
//! reporting and cancellation, and the throughput benchmark.

use std::time::Instant;

use serde::Serialize;

use crate::access::{AccessBatch, BATCH_LEN};
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::machine::Machine;
use crate::host_memory::RunMemory;
use crate::stats::{Collector, StatVisitor, Stats};
use crate::stream::AccessSource;
use crate::workload::params::parse_count;

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
    Ok(simulate_warm(spec, seed, source, Warmup::None, progress)?.stats)
}

/// How much of the stream warms the machine before measurement starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(tag = "unit", content = "length", rename_all = "lowercase")]
pub enum Warmup {
    /// Measure from the first access.
    #[default]
    None,
    /// The first N access records warm the machine.
    Accesses(u64),
    /// The records up to the one at which N instructions have retired warm the machine.
    Instructions(u64),
}

impl Warmup {
    /// Parse `"N"`, `"N accesses"` or `"N instructions"`, where N is a whole
    /// number written as `1000000`, `1_000_000`, `1e6` or `1M` (k, M, G: powers
    /// of 1000). `"0"` and `"none"` mean no warm-up.
    pub fn parse(text: &str) -> Result<Warmup> {
        let t = text.trim();
        let bad = |why: &str| {
            Error::config_allowed(
                "warmup",
                format!("\"{text}\" {why}"),
                &["N", "N accesses", "N instructions", "none (N like 1000000, 1_000_000, 1e6 or 1M)"],
            )
        };
        if t.eq_ignore_ascii_case("none") {
            return Ok(Warmup::None);
        }
        let split = t.find(|c: char| c.is_whitespace()).unwrap_or(t.len());
        let (num, unit) = (&t[..split], t[split..].trim());
        let n = parse_count(num).ok_or_else(|| bad("is not a whole number of accesses or instructions"))?;
        let w = match unit.to_ascii_lowercase().as_str() {
            "" | "accesses" | "access" | "records" | "record" => Warmup::Accesses(n),
            "instructions" | "instruction" | "instr" | "ins" => Warmup::Instructions(n),
            _ => return Err(bad(&format!("has unit \"{unit}\"; the unit is accesses or instructions"))),
        };
        Ok(if n == 0 { Warmup::None } else { w })
    }
}

impl std::fmt::Display for Warmup {
    /// The canonical spelling, which [`Warmup::parse`] reads back.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Warmup::None => write!(f, "none"),
            Warmup::Accesses(n) => write!(f, "{n} accesses"),
            Warmup::Instructions(n) => write!(f, "{n} instructions"),
        }
    }
}

/// Lengths of the two phases of a run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Phase {
    pub records: u64,
    pub instructions: u64,
}

/// A run's stats (of the measured phase) and the lengths of its phases.
#[derive(Clone, Debug)]
pub struct RunOutput {
    pub stats: Stats,
    pub warmup: Phase,
    pub measured: Phase,
    /// Where the out-of-order timing's dependencies came from (`None`: no
    /// ooo model ran), as [`Machine::source_dependencies`] states it.
    pub dependencies: Option<String>,
}

/// [`simulate`] with a warm-up: the machine runs the first part of the
/// stream, then every counter restarts from zero (gauges excepted, see
/// [`Machine::begin_measurement`]) and the rest is measured. A stream that
/// ends within the warm-up, or has no records at all, is an error.
pub fn simulate_warm(
    spec: &Spec,
    seed: u64,
    source: &mut dyn AccessSource,
    warmup: Warmup,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RunOutput> {
    let memory = RunMemory::begin();
    let mut m = Machine::build(spec, seed)?;
    let dependencies = m.source_dependencies(source.carries_dependencies(), &source.describe())?;
    let mut part = AccessBatch::with_capacity(BATCH_LEN);
    let mut warm = Phase::default();
    let mut warming = warmup != Warmup::None;
    let mut done = Phase::default();
    drive(source, progress, |batch| {
        // Where in this batch the warm-up ends, if it does.
        let end = match warmup {
            _ if !warming => None,
            Warmup::None => None,
            Warmup::Accesses(w) => (done.records + batch.len() as u64 >= w).then(|| (w - done.records) as usize),
            Warmup::Instructions(w) => {
                let mut ins = done.instructions;
                batch.ins_gap.iter().position(|&g| {
                    ins += g as u64;
                    ins >= w
                })
                .map(|i| i + 1)
            }
        };
        let batch_ins = |r: std::ops::Range<usize>| batch.ins_gap[r].iter().map(|&g| g as u64).sum::<u64>();
        if let Some(end) = end {
            part.copy_range(batch, 0..end);
            m.feed(&part)?;
            warm = Phase { records: done.records + end as u64, instructions: done.instructions + batch_ins(0..end) };
            m.begin_measurement();
            warming = false;
            part.copy_range(batch, end..batch.len());
            m.feed(&part)?;
        } else {
            m.feed(batch)?;
        }
        done.records += batch.len() as u64;
        done.instructions += batch_ins(0..batch.len());
        Ok(())
    })?;
    if done.records == 0 {
        return Err(Error::Empty { stream: source.describe() });
    }
    if warmup != Warmup::None && (warming || warm.records == done.records) {
        let (len, unit, have) = match warmup {
            Warmup::Instructions(w) => (w, "instructions", done.instructions),
            Warmup::Accesses(w) => (w, "accesses", done.records),
            Warmup::None => unreachable!("checked above"),
        };
        return Err(Error::config(
            "warmup",
            format!("a warm-up of {len} {unit} is not shorter than the stream ({have} {unit} in {})", source.describe()),
        ));
    }
    let mut stats = m.stats();
    if let Some(bytes) = memory.peak_bytes() {
        stats = with_peak_heap(stats, bytes);
    }
    let measured = Phase { records: stats.get("core.records"), instructions: stats.get("core.instructions") };
    Ok(RunOutput { stats, warmup: warm, measured, dependencies })
}

/// `stats` with the gauge `host.peak_heap_bytes` (see [`crate::host_memory`]).
pub(crate) fn with_peak_heap(stats: Stats, bytes: u64) -> Stats {
    let mut c = Collector { stats };
    c.gauge(PEAK_HEAP, bytes, "bytes", PEAK_HEAP_DESC);
    c.stats
}

/// The name and description of the run's host-memory gauge.
pub const PEAK_HEAP: &str = "host.peak_heap_bytes";
pub const PEAK_HEAP_DESC: &str =
    "most host heap the run held at once (machine, stream buffers; not C libraries), counted by Tessera's allocator";

/// Feed every batch of `source` into `m`.
pub fn feed_all(m: &mut Machine, source: &mut dyn AccessSource, progress: &mut dyn FnMut(u64, u64) -> bool) -> Result<u64> {
    let mut records = 0u64;
    m.source_dependencies(source.carries_dependencies(), &source.describe())?;
    drive(source, progress, |batch| {
        records += batch.len() as u64;
        m.feed(batch)
    })?;
    Ok(records)
}

/// Hand every batch of `source` to `each`, reporting progress every few
/// batches and at the end (a `false` from `progress` stops the run).
fn drive(
    source: &mut dyn AccessSource,
    progress: &mut dyn FnMut(u64, u64) -> bool,
    mut each: impl FnMut(&AccessBatch) -> Result<()>,
) -> Result<()> {
    let mut batch = AccessBatch::with_capacity(BATCH_LEN);
    let mut n = 0u64;
    while source.next_batch(&mut batch)? {
        each(&batch)?;
        n += 1;
        if n.is_multiple_of(PROGRESS_EVERY) {
            let (d, t) = source.progress();
            if !progress(d, t) {
                return Err(Error::Interrupted);
            }
        }
    }
    let (d, t) = source.progress();
    if progress(d, t) {
        Ok(())
    } else {
        Err(Error::Interrupted)
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{load, ConfigSource};
    use crate::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};

    fn spec(preset: &str) -> Spec {
        load(&ConfigSource::Preset(preset.into()), &["physmem.page_size=thp".to_string()]).unwrap()
    }

    fn stream(accesses: u64) -> Synthetic {
        Synthetic::new(SyntheticSpec::new(Pattern::HotCold, accesses, 256 << 20, 9)).unwrap()
    }

    #[test]
    fn warm_up_lengths_parse_with_units() {
        assert_eq!(Warmup::parse("1000").unwrap(), Warmup::Accesses(1000));
        assert_eq!(Warmup::parse("1e6").unwrap(), Warmup::Accesses(1_000_000));
        assert_eq!(Warmup::parse("2M accesses").unwrap(), Warmup::Accesses(2_000_000));
        assert_eq!(Warmup::parse(" 1_500 instructions ").unwrap(), Warmup::Instructions(1500));
        assert_eq!(Warmup::parse("2.5e3 instr").unwrap(), Warmup::Instructions(2500));
        assert_eq!(Warmup::parse("0").unwrap(), Warmup::None);
        assert_eq!(Warmup::parse("none").unwrap(), Warmup::None);
        for w in [Warmup::None, Warmup::Accesses(7), Warmup::Instructions(1 << 40)] {
            assert_eq!(Warmup::parse(&w.to_string()).unwrap(), w);
        }
        for bad in ["", "1.5", "-3", "ten", "5 cycles", "1e400", "1x"] {
            let e = Warmup::parse(bad).unwrap_err().to_string();
            assert!(e.contains("`warmup`") && e.contains("N instructions"), "{bad}: {e}");
        }
    }

    /// The full, timed model: each count of a warmed run is the full run's
    /// count minus the count when the warm-up ended; gauges are the full
    /// run's levels; the core's cycles are recomputed from its own counts.
    #[test]
    fn a_warmed_run_counts_only_what_follows_the_warm_up() {
        let s = spec("sandy_bridge");
        let (total, warm) = (120_000u64, 45_678u64);
        let full = simulate(&s, 3, &mut stream(total), &mut |_, _| true).unwrap();
        let mut first = stream(total);
        let mut m = Machine::build(&s, 3).unwrap();
        let (mut b, mut part, mut fed) = (AccessBatch::with_capacity(BATCH_LEN), AccessBatch::with_capacity(BATCH_LEN), 0u64);
        while fed < warm && first.next_batch(&mut b).unwrap() {
            let take = (warm - fed).min(b.len() as u64) as usize;
            part.copy_range(&b, 0..take);
            m.feed(&part).unwrap();
            fed += take as u64;
        }
        let prefix = m.stats();
        let out = simulate_warm(&s, 3, &mut stream(total), Warmup::Accesses(warm), &mut |_, _| true).unwrap();
        assert_eq!(out.warmup, Phase { records: warm, instructions: prefix.get("core.instructions") });
        assert_eq!(out.measured.records, total - warm);
        let w = &out.stats;
        for (k, info) in &full.info {
            if info.kind == "derived" || k == "core.base_cycles" || k == "core.cycles" {
                continue;
            }
            let want = if info.kind == "gauge" { full.get(k) } else { full.get(k) - prefix.get(k) };
            assert_eq!(w.get(k), want, "{k} ({})", info.kind);
        }
        let base = (w.get("core.instructions") as f64 * s.timing.base_cpi).round() as u64;
        assert_eq!(w.get("core.base_cycles"), base);
        assert_eq!(w.get("core.cycles"), base + w.get("core.data_stall_cycles") + w.get("core.translation_stall_cycles"));
        assert!(full.info.values().any(|i| i.kind == "gauge"), "no gauge was checked");
        assert!(w.get("walker.faulting_walks") < full.get("walker.faulting_walks"), "the warm-up took no first-touch faults");
        // The key set is a function of the machine alone.
        let keys = |st: &Stats| st.counters.keys().chain(st.derived.keys()).cloned().collect::<Vec<_>>();
        assert_eq!(keys(w), keys(&full));
    }

    #[test]
    fn a_warm_up_in_instructions_ends_at_the_record_that_reaches_it() {
        let s = spec("tlb_only");
        let out = simulate_warm(&s, 0, &mut stream(50_000), Warmup::Instructions(10_001), &mut |_, _| true).unwrap();
        let mut src = stream(50_000);
        let mut b = AccessBatch::with_capacity(BATCH_LEN);
        let (mut ins, mut recs) = (0u64, 0u64);
        'outer: while src.next_batch(&mut b).unwrap() {
            for &g in &b.ins_gap {
                ins += g as u64;
                recs += 1;
                if ins >= 10_001 {
                    break 'outer;
                }
            }
        }
        assert_eq!(out.warmup, Phase { records: recs, instructions: ins });
        assert_eq!(out.warmup.records + out.measured.records, 50_000);
    }

    #[test]
    fn a_warm_up_as_long_as_the_stream_and_an_empty_stream_are_errors() {
        let s = spec("tlb_only");
        let e = simulate_warm(&s, 0, &mut stream(1000), Warmup::Accesses(1000), &mut |_, _| true).unwrap_err();
        assert!(matches!(&e, Error::Config { path, .. } if path == "warmup"), "{e}");
        assert!(e.to_string().contains("1000 accesses"), "{e}");
        let e = simulate_warm(&s, 0, &mut stream(0), Warmup::None, &mut |_, _| true).unwrap_err();
        assert!(matches!(e, Error::Empty { .. }), "{e}");
    }
}
