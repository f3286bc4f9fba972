//! Built-in workloads: the papers' benchmarks, run for real on generated
//! input, their memory accesses fed straight into the simulator.
//!
//! ## What it models
//! A workload is a real implementation of an algorithm (HPCC RandomAccess, a
//! Graph500 BFS, a B+ tree, …) whose data lives in host memory *and* at
//! simulated virtual addresses laid out like a C program's ([`layout`]): large
//! arrays in an mmap region, small objects on a glibc-like heap, a stack. As it
//! runs it emits every load and store of its data structures, and the
//! instructions between them, through an [`emit::Emitter`]. Each workload's
//! module documents its layout, which phases are emitted, and its instruction
//! model (instructions per operation), so MPKI figures mean something.
//!
//! ## Choices
//! - A workload runs on its own thread ([`WorkloadSource`]) and hands batches to
//!   the simulator through a bounded channel, so generation and simulation
//!   overlap on two cores. The stream is a pure function of the parameters and
//!   seed: threads only change when, never what.
//! - Parameters are strict and documented ([`params`]); `describe()` lists every
//!   resolved value, so a result names exactly what ran.
//! - Adding a workload: one file with a `pub const INFO: WorkloadInfo` and one
//!   line in [`WORKLOADS`].

pub mod emit;
pub mod layout;
pub mod params;

pub mod kit;
pub mod zipf;

pub mod btree;
pub mod canneal;
pub mod data_analytics;
pub mod data_serving;
pub mod dict;
pub mod gups;
pub mod kvcache;
pub mod media_streaming;
pub mod micro;
pub mod web_search;
pub mod xsbench;

pub mod graph;
pub mod graph500_bfs;
pub mod bfs;
pub mod mst;
pub mod spmv;
pub mod setcover;
pub mod matching;
pub mod mis;
pub mod graph_analytics;

pub mod gpu;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;
use std::time::Instant;

use serde::Serialize;

use crate::access::{AccessBatch, BATCH_LEN};
use crate::error::{Error, Result};
use crate::stream::AccessSource;
use crate::trace::{NativeSummary, NativeWriter};

pub use emit::{BatchSink, Dep, Emitter, NullSink};
pub use layout::{AddressSpace, SimVec};
pub use params::{ParamDoc, Params};

/// A runnable workload, built from its resolved [`Params`].
pub trait Workload: Send {
    /// Run the algorithm, emitting its accesses; return early once
    /// `e.stopped()`. Errors are for conditions only known while running.
    fn run(&mut self, e: &mut Emitter) -> Result<()>;
}

/// A registered workload: name, documentation and builder.
#[derive(Copy, Clone)]
pub struct WorkloadInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [ParamDoc],
    /// Bytes of simulated data the run allocates, from the parameters alone
    /// (cheap: no generation).
    pub footprint: fn(&Params) -> Result<u64>,
    /// Check parameters and build the workload (heavy set-up belongs in `run`).
    pub build: fn(&Params) -> Result<Box<dyn Workload>>,
}

/// Every built-in workload.
pub const WORKLOADS: &[WorkloadInfo] = &[
    gups::INFO,
    micro::SEQUENTIAL,
    micro::STRIDED,
    micro::UNIFORM,
    micro::POINTER_CHASE,
    graph500_bfs::INFO,
    bfs::INFO,
    mst::INFO,
    spmv::INFO,
    setcover::INFO,
    matching::INFO,
    mis::INFO,
    graph_analytics::INFO,
    btree::INFO,
    xsbench::INFO,
    dict::INFO,
    canneal::INFO,
    kvcache::INFO,
    data_analytics::INFO,
    data_serving::INFO,
    web_search::INFO,
    media_streaming::INFO,
];

/// The registered workload called `name`.
pub fn find(name: &str) -> Result<&'static WorkloadInfo> {
    WORKLOADS.iter().find(|w| w.name == name).ok_or_else(|| {
        let names: Vec<&str> = WORKLOADS.iter().map(|w| w.name).collect();
        Error::config_allowed("workload", format!("unknown workload \"{name}\""), &names)
    })
}

/// Resolve `given` parameters for workload `name`, refusing parameters
/// whose data would not fit in this host's memory ([`check_fits`]).
pub fn resolve(name: &str, given: &BTreeMap<String, String>, seed: u64) -> Result<(&'static WorkloadInfo, Params)> {
    let info = find(name)?;
    let params = Params::resolve(info.name, info.params, given, seed)?;
    check_fits(info, &params, host_available_bytes())?;
    Ok((info, params))
}

/// A workload holds its data structures on the host as well as in the
/// simulated address space (it runs the algorithm), so parameters whose
/// footprint exceeds the host's available memory would end in an
/// allocation failure (an abort) part-way through generation. They are a
/// configuration error instead, found before anything runs. `available`:
/// the host's available bytes, if known (no check otherwise).
pub fn check_fits(info: &WorkloadInfo, params: &Params, available: Option<u64>) -> Result<()> {
    let need = (info.footprint)(params)?;
    fits(&format!("workload {}", info.name), params, need, available, "tessera workloads")
}

/// [`check_fits`] for any generator whose data is `need` bytes: the error
/// names it `what` and points at the command `listing` that lists its
/// parameters.
pub(crate) fn fits(what: &str, params: &Params, need: u64, available: Option<u64>, listing: &str) -> Result<()> {
    let Some(available) = available else { return Ok(()) };
    if need <= available {
        return Ok(());
    }
    let gib = |b: u64| b as f64 / (1u64 << 30) as f64;
    Err(Error::config(
        what.to_string(),
        format!(
            "{} makes about {:.1} GiB of data, which the generator holds in host memory as well, \
             but this host has {:.1} GiB available: lower its size parameters (`{listing}` lists them)",
            params.describe(),
            gib(need),
            gib(available)
        ),
    ))
}

/// `MemAvailable` of `/proc/meminfo` (Linux), in bytes.
pub(crate) fn host_available_bytes() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemAvailable:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// One row of `tessera workloads`.
#[derive(Clone, Debug, Serialize)]
pub struct WorkloadListing {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamDoc>,
    /// Footprint at the default parameters, bytes.
    pub default_footprint: u64,
}

/// Every workload with its parameters and default footprint.
pub fn listing() -> Result<Vec<WorkloadListing>> {
    WORKLOADS
        .iter()
        .map(|w| {
            let p = Params::resolve(w.name, w.params, &BTreeMap::new(), 0)?;
            Ok(WorkloadListing {
                name: w.name,
                summary: w.summary,
                params: w.params.to_vec(),
                default_footprint: (w.footprint)(&p)?,
            })
        })
        .collect()
}

enum Msg {
    Batch(AccessBatch, (u64, u64)),
    Done(Result<()>),
}

/// Sends full batches over the channel, recycling returned buffers.
struct ChannelSink {
    tx: SyncSender<Msg>,
    spare: Receiver<AccessBatch>,
}

impl BatchSink for ChannelSink {
    fn take(&mut self, batch: &mut AccessBatch, progress: (u64, u64)) -> bool {
        let fresh = self
            .spare
            .try_recv()
            .unwrap_or_else(|_| AccessBatch::with_capacity(BATCH_LEN));
        let full = std::mem::replace(batch, fresh);
        batch.clear();
        self.tx.send(Msg::Batch(full, progress)).is_ok()
    }
}

/// A workload running on its own thread, read as an [`AccessSource`].
pub struct WorkloadSource {
    rx: Option<Receiver<Msg>>,
    recycle: Option<SyncSender<AccessBatch>>,
    handle: Option<JoinHandle<()>>,
    description: String,
    progress: (u64, u64),
    finished: bool,
}

/// Batches in flight between the workload thread and the simulator.
const CHANNEL_DEPTH: usize = 4;

impl WorkloadSource {
    /// Build and start workload `name` with `given` parameters and `seed`.
    pub fn start(name: &str, given: &BTreeMap<String, String>, seed: u64) -> Result<WorkloadSource> {
        let (info, params) = resolve(name, given, seed)?;
        let mut workload = (info.build)(&params)?;
        let (tx, rx) = sync_channel(CHANNEL_DEPTH);
        let (recycle, spare) = sync_channel(CHANNEL_DEPTH + 2);
        let thread_name = format!("tessera-workload-{}", info.name);
        let done_tx = tx.clone();
        let handle = std::thread::Builder::new()
            .name(thread_name)
            .spawn(move || {
                let mut sink = ChannelSink { tx, spare };
                let mut e = Emitter::new(&mut sink);
                let outcome = workload.run(&mut e);
                e.finish();
                let _ = done_tx.send(Msg::Done(outcome));
            })
            .map_err(|e| Error::io("workload thread", e))?;
        Ok(WorkloadSource {
            rx: Some(rx),
            recycle: Some(recycle),
            handle: Some(handle),
            description: params.describe(),
            progress: (0, 0),
            finished: false,
        })
    }

    fn join_error(&mut self) -> Error {
        let msg = match self.handle.take().map(JoinHandle::join) {
            Some(Err(payload)) => payload
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "unknown panic".into()),
            _ => "the workload thread ended without finishing".into(),
        };
        Error::Workload { name: self.description.clone(), msg }
    }
}

impl AccessSource for WorkloadSource {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        if self.finished {
            return Ok(false);
        }
        let Some(rx) = self.rx.as_ref() else { return Ok(false) };
        match rx.recv() {
            Ok(Msg::Batch(mut b, progress)) => {
                self.progress = progress;
                std::mem::swap(out, &mut b);
                if let Some(r) = &self.recycle {
                    let _ = r.try_send(b);
                }
                Ok(true)
            }
            Ok(Msg::Done(outcome)) => {
                self.finished = true;
                if let Some(h) = self.handle.take() {
                    let _ = h.join();
                }
                if self.progress.1 > 0 {
                    self.progress.0 = self.progress.1;
                }
                outcome.map(|()| false)
            }
            Err(_) => Err(self.join_error()),
        }
    }

    fn progress(&self) -> (u64, u64) {
        self.progress
    }

    fn describe(&self) -> String {
        self.description.clone()
    }

    /// Built-in workloads emit their loads' dependencies (`Emitter::load_on`).
    fn carries_dependencies(&self) -> bool {
        true
    }
}

impl Drop for WorkloadSource {
    fn drop(&mut self) {
        // Closing our ends makes the producer's next send fail, so it stops.
        self.rx.take();
        self.recycle.take();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

/// Run workload `name` and write its stream to a native trace at `path`
/// (atomically: nothing is left behind on error or interruption).
/// `progress(done, total)` returning false stops with [`Error::Interrupted`].
pub fn record(
    name: &str,
    given: &BTreeMap<String, String>,
    seed: u64,
    path: &Path,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<NativeSummary> {
    let mut src = WorkloadSource::start(name, given, seed)?;
    let meta = serde_json::json!({
        "source_format": "workload",
        "workload": src.describe(),
        "tessera_version": crate::VERSION,
    });
    let opts = crate::trace::native::WriterOptions { dependencies: src.carries_dependencies(), ..Default::default() };
    let mut w = NativeWriter::create_with(path, meta, opts)?;
    let mut batch = AccessBatch::with_capacity(BATCH_LEN);
    let mut n = 0u64;
    while src.next_batch(&mut batch)? {
        w.write_batch(&batch)?;
        n += 1;
        if n.is_multiple_of(32) {
            let (d, t) = src.progress();
            if !progress(d, t) {
                return Err(Error::Interrupted);
            }
        }
    }
    w.finish()
}

/// Generator throughput: the workload's stream drained into nothing.
#[derive(Clone, Debug, Serialize)]
pub struct GeneratorBench {
    pub workload: String,
    pub accesses: u64,
    pub instructions: u64,
    pub seconds: f64,
    pub accesses_per_sec: f64,
}

/// Time workload `name` alone (no simulator), on the calling thread.
pub fn bench_generator(name: &str, given: &BTreeMap<String, String>, seed: u64) -> Result<GeneratorBench> {
    let (info, params) = resolve(name, given, seed)?;
    let mut workload = (info.build)(&params)?;
    let mut sink = NullSink;
    let mut e = Emitter::new(&mut sink);
    let start = Instant::now();
    workload.run(&mut e)?;
    let (accesses, instructions) = e.finish();
    let seconds = start.elapsed().as_secs_f64();
    Ok(GeneratorBench {
        workload: params.describe(),
        accesses,
        instructions,
        seconds,
        accesses_per_sec: accesses as f64 / seconds.max(1e-9),
    })
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod graph_tests;
