//! The GIL-releasing entry points: resolve the config, open the source, let go
//! of the GIL while the core simulates, and take it back briefly at every
//! progress report to call the Python callback and check for Ctrl-C.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::prelude::*;
use pyo3::types::PyDict;
use tessera_core::config;
use tessera_core::error::Error;
use tessera_core::run::Warmup;
use tessera_core::trace::record::{Backend, RecordOptions};

use crate::convert::{self, MemoryArgs, SourceArgs, SyntheticArgs, WorkloadArgs};
use crate::errors::{self, IntoPyResult};

/// Run one simulation.
///
/// Returns a dict with `counters`, `derived`, `config_toml` (the resolved
/// machine), `source` (the stream's description), `seed` and `version`.
/// `progress(done, total)` is called from the simulating thread with the GIL
/// held; an exception it raises (or a pending Ctrl-C) stops the run and is
/// re-raised here.
#[pyfunction]
#[pyo3(signature = (config_kind, config_value, overrides, trace=None, synthetic=None, seed=0, progress=None, champsim_ifetch=None, champsim_access_size=None, workload=None, warmup=None, memory=None))]
#[allow(clippy::too_many_arguments)]
pub fn simulate<'py>(
    py: Python<'py>,
    config_kind: &str,
    config_value: String,
    overrides: Vec<String>,
    trace: Option<PathBuf>,
    synthetic: Option<SyntheticArgs>,
    seed: u64,
    progress: Option<PyObject>,
    champsim_ifetch: Option<bool>,
    champsim_access_size: Option<u8>,
    workload: Option<WorkloadArgs>,
    warmup: Option<String>,
    memory: Option<MemoryArgs>,
) -> PyResult<Bound<'py, PyDict>> {
    let source_cfg = convert::config_source(config_kind, config_value)?;
    let spec = config::load(&source_cfg, &overrides).py_err(py)?;
    let warmup = match warmup {
        Some(w) => Warmup::parse(&w).py_err(py)?,
        None => Warmup::None,
    };
    let opts = convert::trace_options(champsim_ifetch, champsim_access_size);
    let args = SourceArgs { trace, synthetic, workload, memory };
    let mut source = convert::open_source(py, args, seed, &opts)?;
    let description = source.describe();

    let mut reporter = Reporter::new(progress);
    let outcome = py.allow_threads(|| {
        tessera_core::run::simulate_warm(&spec, seed, source.as_mut(), warmup, &mut |d, t| reporter.report(d, t))
    });
    let run = reporter.finish(py, outcome)?;

    let (counters, derived) = convert::stats_to_py(py, &run.stats)?;
    let out = PyDict::new(py);
    out.set_item("counters", counters)?;
    out.set_item("derived", derived)?;
    out.set_item("stats_schema", tessera_core::stats::derived::STATS_SCHEMA)?;
    let phases = PyDict::new(py);
    for (name, p) in [("warmup", run.warmup), ("measured", run.measured)] {
        let d = PyDict::new(py);
        d.set_item("records", p.records)?;
        d.set_item("instructions", p.instructions)?;
        phases.set_item(name, d)?;
    }
    out.set_item("phases", phases)?;
    out.set_item("config_toml", spec.to_toml())?;
    out.set_item("source", description)?;
    out.set_item("timing_dependencies", run.dependencies)?;
    out.set_item("seed", seed)?;
    out.set_item("version", tessera_core::VERSION)?;
    Ok(out)
}

/// Time the simulation of one stream (no stats kept beyond the throughput).
/// Returns the core's `BenchResult` as a dict.
#[pyfunction]
#[pyo3(signature = (config_kind, config_value, overrides, trace=None, synthetic=None, seed=0, champsim_ifetch=None, champsim_access_size=None, workload=None, memory=None))]
#[allow(clippy::too_many_arguments)]
pub fn bench(
    py: Python<'_>,
    config_kind: &str,
    config_value: String,
    overrides: Vec<String>,
    trace: Option<PathBuf>,
    synthetic: Option<SyntheticArgs>,
    seed: u64,
    champsim_ifetch: Option<bool>,
    champsim_access_size: Option<u8>,
    workload: Option<WorkloadArgs>,
    memory: Option<MemoryArgs>,
) -> PyResult<PyObject> {
    let source_cfg = convert::config_source(config_kind, config_value)?;
    let spec = config::load(&source_cfg, &overrides).py_err(py)?;
    let opts = convert::trace_options(champsim_ifetch, champsim_access_size);
    let args = SourceArgs { trace, synthetic, workload, memory };
    let mut source = convert::open_source(py, args, seed, &opts)?;
    let mut reporter = Reporter::new(None);
    let outcome = py.allow_threads(|| {
        tessera_core::run::bench_with_progress(&spec, source.as_mut(), &mut |d, t| reporter.report(d, t))
    });
    let result = reporter.finish(py, outcome)?;
    convert::to_python(py, &result)
}

/// Run a built-in workload and write its stream to a native trace.
/// Returns the writer's summary as a dict.
#[pyfunction]
#[pyo3(signature = (name, params, seed, path, progress=None))]
pub fn record_workload(
    py: Python<'_>,
    name: &str,
    params: BTreeMap<String, String>,
    seed: u64,
    path: PathBuf,
    progress: Option<PyObject>,
) -> PyResult<PyObject> {
    let mut reporter = Reporter::new(progress);
    let outcome = py.allow_threads(|| {
        tessera_core::workload::record(name, &params, seed, &path, &mut |d, t| reporter.report(d, t))
    });
    let summary = reporter.finish(py, outcome)?;
    convert::to_python(py, &summary)
}

/// Record a program's accesses into a native trace (`tessera trace record`).
///
/// `command` is the program and its arguments; `backend` is "lackey" or
/// "qemu". `status(message)` is told about slow one-off steps (building the
/// QEMU plugin); `progress(accesses, 0)` is called every few batches, and an
/// exception it raises (or Ctrl-C) stops the recording, kills the program and
/// leaves no output. `plugin_src` is the directory of the plugin source
/// (`tessera.c`), when the caller knows where it is installed. Returns the
/// core's `RecordSummary` as a dict.
#[pyfunction]
#[pyo3(signature = (output, command, backend="lackey", skip=0, max_accesses=None, ifetch=true, status=None, progress=None, plugin_src=None))]
#[allow(clippy::too_many_arguments)]
pub fn record(
    py: Python<'_>,
    output: PathBuf,
    command: Vec<String>,
    backend: &str,
    skip: u64,
    max_accesses: Option<u64>,
    ifetch: bool,
    status: Option<PyObject>,
    progress: Option<PyObject>,
    plugin_src: Option<PathBuf>,
) -> PyResult<PyObject> {
    let backend = Backend::parse(backend).py_err(py)?;
    let mut opts = RecordOptions::new(backend, command.into_iter().map(Into::into).collect());
    opts.skip = skip;
    opts.max_accesses = max_accesses;
    opts.ifetch = ifetch;
    opts.plugin.source_dir = plugin_src;
    let mut reporter = Reporter::new(progress);
    let mut say = |msg: &str| {
        if let Some(cb) = &status {
            Python::with_gil(|py| {
                let _ = cb.call1(py, (msg,));
            });
        }
    };
    let outcome = py.allow_threads(|| {
        tessera_core::trace::record::record(&output, &opts, &mut say, &mut |d, t| reporter.report(d, t))
    });
    let summary = reporter.finish(py, outcome)?;
    convert::to_python(py, &summary)
}

/// Time a built-in workload's generator alone (its stream drained into
/// nothing). Returns the core's `GeneratorBench` as a dict.
#[pyfunction]
#[pyo3(signature = (name, params, seed=0))]
pub fn bench_workload(py: Python<'_>, name: &str, params: BTreeMap<String, String>, seed: u64) -> PyResult<PyObject> {
    let outcome = py.allow_threads(|| tessera_core::workload::bench_generator(name, &params, seed));
    let result = outcome.py_err(py)?;
    convert::to_python(py, &result)
}

/// Progress reporting from the simulating thread: takes the GIL briefly to call
/// the Python callback (if any) and check for Ctrl-C, and keeps the first Python
/// error so it can be re-raised once the core has stopped.
struct Reporter {
    progress: Option<PyObject>,
    raised: Option<PyErr>,
}

impl Reporter {
    fn new(progress: Option<PyObject>) -> Self {
        Reporter { progress, raised: None }
    }

    fn report(&mut self, done: u64, total: u64) -> bool {
        // The caller's work, not the run's: not counted in the run's heap.
        tessera_core::host_memory::paused(|| self.report_to_python(done, total))
    }

    fn report_to_python(&mut self, done: u64, total: u64) -> bool {
        Python::with_gil(|py| {
            let result = match &self.progress {
                Some(cb) => cb.call1(py, (done, total)).map(drop),
                None => Ok(()),
            }
            .and_then(|()| py.check_signals());
            match result {
                Ok(()) => true,
                Err(e) => {
                    self.raised = Some(e);
                    false
                }
            }
        })
    }

    /// Turn the core's outcome into a Python result, preferring the Python error
    /// that stopped the run.
    fn finish<T>(self, py: Python<'_>, outcome: Result<T, Error>) -> PyResult<T> {
        match (outcome, self.raised) {
            (Ok(v), _) => Ok(v),
            (Err(Error::Interrupted), Some(e)) => Err(e),
            (Err(e), _) => Err(errors::to_py(py, e)),
        }
    }
}
