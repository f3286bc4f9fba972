//! `tessera._core`: the PyO3 skin over `tessera-core`.
//!
//! - [`run`]: the GIL-releasing entry points (`simulate`, `bench`, `record`), with
//!   progress reports and Ctrl-C checks.
//! - [`errors`]: the one map from core errors to the Python exception hierarchy.
//! - [`convert`]: moving values across the boundary.
//!
//! Everything here forwards to the core; no simulation logic and no config
//! defaults live in the binding. The Python package (`python/tessera`) wraps
//! these functions in the user-facing API and the `tessera` command.

mod convert;
mod errors;
mod run;

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use tessera_core::config::{self, spec::ByteSize};
use tessera_core::stream::synthetic::SyntheticSpec;
use tessera_core::trace::Format;

use crate::errors::IntoPyResult;

/// Every allocation is counted per thread, so each run reports the peak of
/// its own heap (`host.peak_heap_bytes`, see `tessera_core::host_memory`).
#[global_allocator]
static ALLOC: tessera_core::host_memory::CountingAlloc = tessera_core::host_memory::CountingAlloc;

/// Shipped presets as `(name, summary, toml)` tuples.
#[pyfunction]
fn presets() -> Vec<(&'static str, &'static str, &'static str)> {
    config::presets()
        .iter()
        .map(|p| (p.name, p.summary, p.toml))
        .collect()
}

/// Load a config (preset, file or TOML text), apply `key=value` overrides,
/// validate it, and return the resolved machine as TOML.
#[pyfunction]
#[pyo3(signature = (config_kind, config_value, overrides=Vec::new()))]
fn resolve_config(
    py: Python<'_>,
    config_kind: &str,
    config_value: String,
    overrides: Vec<String>,
) -> PyResult<String> {
    let source = convert::config_source(config_kind, config_value)?;
    Ok(config::load(&source, &overrides).py_err(py)?.to_toml())
}

/// Every stat of the machine as `{name: (unit, description, kind)}`, kind
/// being `count`, `gauge` or `derived`.
#[pyfunction]
#[pyo3(signature = (config_kind, config_value, overrides=Vec::new()))]
fn stat_docs(
    py: Python<'_>,
    config_kind: &str,
    config_value: String,
    overrides: Vec<String>,
) -> PyResult<BTreeMap<String, (&'static str, &'static str, &'static str)>> {
    let source = convert::config_source(config_kind, config_value)?;
    let spec = config::load(&source, &overrides).py_err(py)?;
    let stats = tessera_core::stats::derived::stat_docs(&spec).py_err(py)?;
    Ok(stats
        .info
        .into_iter()
        .map(|(k, i)| (k, (i.unit, i.desc, i.kind)))
        .collect())
}

/// A warm-up length in its canonical spelling (`"N accesses"`,
/// `"N instructions"`), or `None` for no warm-up; a `ConfigError` at
/// `warmup` when it does not parse.
#[pyfunction]
fn parse_warmup(py: Python<'_>, text: &str) -> PyResult<Option<String>> {
    let w = tessera_core::run::Warmup::parse(text).py_err(py)?;
    Ok((w != tessera_core::run::Warmup::None).then(|| w.to_string()))
}

/// Schema-1 names of derived metrics → their schema-2 names (per-structure
/// ones follow the rule `derived.mmu.` → `mmu.`, `derived.cache.` → `cache.`).
#[pyfunction]
fn renamed_stats() -> BTreeMap<&'static str, &'static str> {
    tessera_core::stats::derived::RENAMED_FROM_SCHEMA_1.iter().copied().collect()
}

/// Every derived metric as `{name pattern: (unit, description)}`; names with
/// `<tlb>` or `<level>` stand for one metric per structure.
#[pyfunction]
fn derived_docs() -> BTreeMap<&'static str, (&'static str, &'static str)> {
    tessera_core::stats::derived::DERIVED_DOCS
        .iter()
        .map(|(n, u, d)| (*n, (*u, *d)))
        .collect()
}

/// Equation 1 of the scale-out MMU study: expected vs simulated cycles when
/// going from `base` to `other`. Each side is a (counters, derived) pair.
#[pyfunction]
fn compare(
    py: Python<'_>,
    base_counters: BTreeMap<String, u64>,
    base_derived: BTreeMap<String, f64>,
    other_counters: BTreeMap<String, u64>,
    other_derived: BTreeMap<String, f64>,
) -> PyResult<PyObject> {
    let base = convert::stats_from_py(base_counters, base_derived);
    let other = convert::stats_from_py(other_counters, other_derived);
    let comparison = tessera_core::stats::derived::compare(&base, &other).py_err(py)?;
    convert::to_python(py, &comparison)
}

/// Header and summary of a trace file, as a dict.
#[pyfunction]
#[pyo3(signature = (path, champsim_ifetch=None, champsim_access_size=None))]
fn trace_info(
    py: Python<'_>,
    path: PathBuf,
    champsim_ifetch: Option<bool>,
    champsim_access_size: Option<u8>,
) -> PyResult<PyObject> {
    let opts = convert::trace_options(champsim_ifetch, champsim_access_size);
    let info = py
        .allow_threads(|| tessera_core::trace::info_with(&path, &opts))
        .py_err(py)?;
    convert::to_python(py, &info)
}

/// The first `limit` records of a trace as little-endian column bytes:
/// `{"vaddr": u64s, "ins_gap": u32s, "asid": u16s, "kind": u8s, "size": u8s}`.
#[pyfunction]
#[pyo3(signature = (path, limit=None, champsim_ifetch=None, champsim_access_size=None))]
fn read_trace(
    py: Python<'_>,
    path: PathBuf,
    limit: Option<u64>,
    champsim_ifetch: Option<bool>,
    champsim_access_size: Option<u8>,
) -> PyResult<Bound<'_, pyo3::types::PyDict>> {
    let opts = convert::trace_options(champsim_ifetch, champsim_access_size);
    let c = py.allow_threads(|| tessera_core::trace::read_columns(&path, &opts, limit)).py_err(py)?;
    let out = pyo3::types::PyDict::new(py);
    let bytes = |v: Vec<u8>| pyo3::types::PyBytes::new(py, &v).unbind();
    out.set_item("vaddr", bytes(c.vaddr.iter().flat_map(|x| x.to_le_bytes()).collect()))?;
    out.set_item("ins_gap", bytes(c.ins_gap.iter().flat_map(|x| x.to_le_bytes()).collect()))?;
    out.set_item("asid", bytes(c.asid.iter().flat_map(|x| x.to_le_bytes()).collect()))?;
    out.set_item("kind", bytes(c.kind))?;
    out.set_item("size", bytes(c.size))?;
    if !c.dep.is_empty() {
        out.set_item("dep", bytes(c.dep.iter().flat_map(|x| x.to_le_bytes()).collect()))?;
    }
    Ok(out)
}

/// Convert a trace to `to` ("native" or "lackey"); returns the summary as a dict.
/// The `champsim_*` options apply to ChampSim input only.
#[pyfunction]
#[pyo3(signature = (src, dst, to, champsim_ifetch=None, champsim_access_size=None))]
fn trace_convert(
    py: Python<'_>,
    src: PathBuf,
    dst: PathBuf,
    to: &str,
    champsim_ifetch: Option<bool>,
    champsim_access_size: Option<u8>,
) -> PyResult<PyObject> {
    let format = Format::parse(to).py_err(py)?;
    let opts = convert::trace_options(champsim_ifetch, champsim_access_size);
    let summary = py
        .allow_threads(|| tessera_core::trace::convert_with(&src, &dst, format, &opts))
        .py_err(py)?;
    convert::to_python(py, &summary)
}

/// Every mechanism family as `[(config key, [(name, summary), ...]), ...]`.
#[pyfunction]
fn registry() -> Vec<(&'static str, Vec<(&'static str, &'static str)>)> {
    tessera_core::registry::families()
        .into_iter()
        .map(|(key, mechs)| (key, mechs.to_vec()))
        .collect()
}

/// The core's default synthetic-stream parameters, as a dict.
#[pyfunction]
fn synthetic_defaults(py: Python<'_>) -> PyResult<PyObject> {
    convert::to_python(py, &SyntheticSpec::default())
}

/// Every built-in workload with its parameters and default footprint, as a list of dicts.
#[pyfunction]
fn workloads(py: Python<'_>) -> PyResult<PyObject> {
    let listing = tessera_core::workload::listing().py_err(py)?;
    convert::to_python(py, &listing)
}

/// Parse a byte count such as "1GiB" or "4096" the way configs do.
#[pyfunction]
fn parse_size(text: &str) -> PyResult<u64> {
    ByteSize::parse(text)
        .ok_or_else(|| PyValueError::new_err(format!("{text:?} is not a size: {}", config::spec::SIZE_SYNTAX)))
}

/// Parse a count such as "1e6", "1_000_000" or "10M" the way workload
/// parameters do; fractions are refused.
#[pyfunction]
fn parse_count(text: &str) -> PyResult<u64> {
    tessera_core::workload::params::parse_count(text).ok_or_else(|| {
        PyValueError::new_err(format!("{text:?} is not a count: {}", tessera_core::workload::params::COUNT_SYNTAX))
    })
}

/// A byte count for people: "64 KiB", "1.5 GiB", "512 B".
#[pyfunction]
fn format_size(bytes: u64) -> String {
    ByteSize(bytes).human()
}

/// GTSM Monte Carlo (`tessera_core::gtsm::montecarlo`): the figures named
/// in `parts`, as a dict. `None` fractions take the core's defaults; the
/// GIL is released while sampling.
#[pyfunction]
#[pyo3(signature = (parts, seed, slices=None, threads=None, fig3=None, fig7=None, fig14=None))]
#[allow(clippy::too_many_arguments)]
fn gtsm_montecarlo(
    py: Python<'_>,
    parts: Vec<String>,
    seed: u64,
    slices: Option<u64>,
    threads: Option<usize>,
    fig3: Option<Vec<f64>>,
    fig7: Option<Vec<f64>>,
    fig14: Option<Vec<f64>>,
) -> PyResult<PyObject> {
    use tessera_core::gtsm::montecarlo::{run, Params};
    let d = Params::default();
    let p = Params {
        seed,
        slices: slices.unwrap_or(d.slices),
        threads: threads.unwrap_or(d.threads),
        fig3: fig3.unwrap_or(d.fig3),
        fig7: fig7.unwrap_or(d.fig7),
        fig14: fig14.unwrap_or(d.fig14),
    };
    let report = py.allow_threads(|| run(&parts, &p)).py_err(py)?;
    convert::to_python(py, &report)
}

/// Every built-in GPU kernel with its parameters and default footprint, as a list of dicts.
#[pyfunction]
fn gpu_kernels(py: Python<'_>) -> PyResult<PyObject> {
    let listing = tessera_core::workload::gpu::kernels::listing().py_err(py)?;
    convert::to_python(py, &listing)
}

/// Generate the built-in GPU kernel `kernel` and write it as an Accel-Sim
/// trace directory `out` (`.traceg`, or `.traceg.xz` with `xz`); returns
/// what was written as a dict.
#[pyfunction]
fn gpu_write_trace(
    py: Python<'_>,
    kernel: &str,
    params: BTreeMap<String, String>,
    seed: u64,
    out: PathBuf,
    xz: bool,
) -> PyResult<PyObject> {
    let summary = py
        .allow_threads(|| {
            let mut src = tessera_core::workload::gpu::kernels::build(kernel, &params, seed)?;
            tessera_core::trace::accelsim::write_app(&out, src.as_mut(), xz)
        })
        .py_err(py)?;
    convert::to_python(py, &summary)
}

/// Summary of a GPU application (a built-in kernel, or an Accel-Sim trace
/// directory with `trace`), pages counted at `page_size`, as a dict.
#[pyfunction]
#[pyo3(signature = (page_size, kernel=None, params=BTreeMap::new(), seed=0, trace=None))]
fn gpu_info(
    py: Python<'_>,
    page_size: &str,
    kernel: Option<&str>,
    params: BTreeMap<String, String>,
    seed: u64,
    trace: Option<PathBuf>,
) -> PyResult<PyObject> {
    use tessera_core::workload::gpu::{kernels, summary, KernelSource};
    let page = summary::page_size(page_size).py_err(py)?;
    let s = py
        .allow_threads(|| {
            let mut src: Box<dyn KernelSource> = match (kernel, &trace) {
                (Some(k), None) => kernels::build(k, &params, seed)?,
                (None, Some(t)) => Box::new(tessera_core::trace::accelsim::AccelsimReader::open(t)?),
                _ => {
                    return Err(tessera_core::error::Error::config(
                        "gpu_info",
                        "give exactly one of a built-in kernel or an Accel-Sim trace",
                    ))
                }
            };
            summary::summarise(src.as_mut(), page)
        })
        .py_err(py)?;
    convert::to_python(py, &s)
}

/// Run GPU applications together on a GPU machine. Each app is
/// `(kind, value, params)`: `("kernel", name, params)` for a built-in GPU
/// kernel, `("trace", dir, {})` for an Accel-Sim trace directory. Returns
/// the result dict of `simulate`, with `apps` (name, warp and thread
/// instructions, cycles per application).
#[pyfunction]
#[pyo3(signature = (config_kind, config_value, overrides, apps, seed=0))]
fn gpu_simulate<'py>(
    py: Python<'py>,
    config_kind: &str,
    config_value: String,
    overrides: Vec<String>,
    apps: Vec<(String, String, BTreeMap<String, String>)>,
    seed: u64,
) -> PyResult<Bound<'py, pyo3::types::PyDict>> {
    use pyo3::types::PyDict;
    use tessera_core::machine::gpu::{run_apps, GpuApp};
    let source_cfg = convert::config_source(config_kind, config_value)?;
    let spec = tessera_core::config::load(&source_cfg, &overrides).py_err(py)?;
    let mut described = Vec::new();
    let outcome = py.allow_threads(|| {
        let t0 = std::time::Instant::now();
        let mut built = Vec::new();
        for (kind, value, params) in &apps {
            match kind.as_str() {
                "kernel" => built.push(GpuApp::builtin(value, params, seed)?),
                "trace" => {
                    let r = tessera_core::trace::accelsim::AccelsimReader::open(std::path::Path::new(value))?;
                    built.push(GpuApp { name: value.clone(), source: Box::new(r) });
                }
                other => {
                    return Err(tessera_core::error::Error::config_allowed("apps", format!("unknown application kind \"{other}\""), &["kernel", "trace"]))
                }
            }
        }
        described = apps.iter().map(|(k, v, _)| format!("{k}:{v}")).collect();
        let t1 = std::time::Instant::now();
        let m = run_apps(&spec, built, seed)?;
        let secs = (t1.duration_since(t0).as_secs_f64(), t1.elapsed().as_secs_f64());
        Ok((m.stats(), m.app_results(), secs))
    });
    let (stats, results, (generate_s, simulate_s)) = outcome.py_err(py)?;
    let (counters, derived) = convert::stats_to_py(py, &stats)?;
    let out = PyDict::new(py);
    out.set_item("counters", counters)?;
    out.set_item("derived", derived)?;
    out.set_item("stats_schema", tessera_core::stats::derived::STATS_SCHEMA)?;
    let phases = PyDict::new(py);
    let warp: u64 = results.iter().map(|r| r.1).sum();
    for (name, records) in [("warmup", 0), ("measured", warp)] {
        let d = PyDict::new(py);
        d.set_item("records", records)?;
        d.set_item("instructions", records)?;
        phases.set_item(name, d)?;
    }
    out.set_item("phases", phases)?;
    out.set_item("config_toml", spec.to_toml())?;
    out.set_item("source", format!("gpu apps {}", described.join(" + ")))?;
    let wall = PyDict::new(py);
    wall.set_item("generate_s", generate_s)?;
    wall.set_item("simulate_s", simulate_s)?;
    out.set_item("wall", wall)?;
    out.set_item("seed", seed)?;
    out.set_item("version", tessera_core::VERSION)?;
    Ok(out)
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    errors::register(m)?;
    m.add("__version__", tessera_core::VERSION)?;
    m.add_function(wrap_pyfunction!(run::simulate, m)?)?;
    m.add_function(wrap_pyfunction!(run::bench, m)?)?;
    m.add_function(wrap_pyfunction!(run::record, m)?)?;
    m.add_function(wrap_pyfunction!(presets, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_kernels, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_write_trace, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_info, m)?)?;
    m.add_function(wrap_pyfunction!(gpu_simulate, m)?)?;
    m.add_function(wrap_pyfunction!(resolve_config, m)?)?;
    m.add_function(wrap_pyfunction!(stat_docs, m)?)?;
    m.add_function(wrap_pyfunction!(derived_docs, m)?)?;
    m.add_function(wrap_pyfunction!(renamed_stats, m)?)?;
    m.add_function(wrap_pyfunction!(parse_warmup, m)?)?;
    m.add("STATS_SCHEMA", tessera_core::stats::derived::STATS_SCHEMA)?;
    m.add_function(wrap_pyfunction!(compare, m)?)?;
    m.add_function(wrap_pyfunction!(trace_info, m)?)?;
    m.add_function(wrap_pyfunction!(read_trace, m)?)?;
    m.add_function(wrap_pyfunction!(trace_convert, m)?)?;
    m.add_function(wrap_pyfunction!(registry, m)?)?;
    m.add_function(wrap_pyfunction!(parse_size, m)?)?;
    m.add_function(wrap_pyfunction!(parse_count, m)?)?;
    m.add_function(wrap_pyfunction!(format_size, m)?)?;
    m.add_function(wrap_pyfunction!(synthetic_defaults, m)?)?;
    m.add_function(wrap_pyfunction!(workloads, m)?)?;
    m.add_function(wrap_pyfunction!(run::record_workload, m)?)?;
    m.add_function(wrap_pyfunction!(run::bench_workload, m)?)?;
    m.add_function(wrap_pyfunction!(gtsm_montecarlo, m)?)?;
    Ok(())
}
