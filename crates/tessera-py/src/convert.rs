//! Conversions between Python values and core types. Nothing here decides
//! anything about the simulation: it only moves values across the boundary.

use std::collections::BTreeMap;
use std::path::PathBuf;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;
use serde_json::Value;
use tessera_core::config::ConfigSource;
use tessera_core::stats::Stats;
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
use tessera_core::stream::AccessSource;
use tessera_core::workload::WorkloadSource;
use tessera_core::trace::TraceOptions;

use crate::errors::IntoPyResult;

/// `("preset" | "file" | "text", value)` → [`ConfigSource`].
pub fn config_source(kind: &str, value: String) -> PyResult<ConfigSource> {
    match kind {
        "preset" => Ok(ConfigSource::Preset(value)),
        "file" => Ok(ConfigSource::File(PathBuf::from(value))),
        "text" => Ok(ConfigSource::Text(value)),
        other => Err(PyValueError::new_err(format!(
            "config kind must be \"preset\", \"file\" or \"text\", not {other:?}"
        ))),
    }
}

/// Parameters of a built-in synthetic stream: (pattern, accesses, footprint bytes).
pub type SyntheticArgs = (String, u64, u64);

/// A built-in workload: (name, {parameter: value}).
pub type WorkloadArgs = (String, BTreeMap<String, String>);

/// Open the access source named by exactly one of `trace`, `synthetic` and
/// `workload`. Synthetic streams and workloads draw from the run's seed.
pub fn open_source(
    py: Python<'_>,
    trace: Option<PathBuf>,
    synthetic: Option<SyntheticArgs>,
    workload: Option<WorkloadArgs>,
    seed: u64,
    opts: &TraceOptions,
) -> PyResult<Box<dyn AccessSource + Send>> {
    match (trace, synthetic, workload) {
        (Some(path), None, None) => tessera_core::trace::open_with(&path, opts).py_err(py),
        (None, Some((pattern, accesses, footprint)), None) => {
            let pattern = Pattern::parse(&pattern).py_err(py)?;
            let spec = SyntheticSpec::new(pattern, accesses, footprint, seed);
            let source = Synthetic::new(spec).py_err(py)?;
            Ok(Box::new(source))
        }
        (None, None, Some((name, params))) => {
            let source = WorkloadSource::start(&name, &params, seed).py_err(py)?;
            Ok(Box::new(source))
        }
        _ => Err(PyValueError::new_err(
            "give exactly one of a trace path, synthetic parameters and a workload",
        )),
    }
}

/// Reader options from the optional Python arguments; what is not given
/// keeps the core's default.
pub fn trace_options(champsim_ifetch: Option<bool>, champsim_access_size: Option<u8>) -> TraceOptions {
    let mut o = TraceOptions::default();
    if let Some(v) = champsim_ifetch {
        o.champsim.ifetch = v;
    }
    if let Some(v) = champsim_access_size {
        o.champsim.access_size = v;
    }
    o
}

/// Any serialisable core value → plain Python objects (dict, list, str, int, float, bool, None).
pub fn to_python<T: serde::Serialize>(py: Python<'_>, value: &T) -> PyResult<PyObject> {
    let v = serde_json::to_value(value).map_err(|e| PyValueError::new_err(e.to_string()))?;
    json_to_py(py, &v)
}

pub fn json_to_py(py: Python<'_>, v: &Value) -> PyResult<PyObject> {
    Ok(match v {
        Value::Null => py.None(),
        Value::Bool(b) => b.into_py_any(py)?,
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                u.into_py_any(py)?
            } else if let Some(i) = n.as_i64() {
                i.into_py_any(py)?
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_py_any(py)?
            }
        }
        Value::String(s) => s.into_py_any(py)?,
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(json_to_py(py, item)?)?;
            }
            list.into_any().unbind()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (k, item) in map {
                dict.set_item(k, json_to_py(py, item)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// Counters and derived metrics as two Python dicts (sorted by name).
pub fn stats_to_py<'py>(
    py: Python<'py>,
    stats: &Stats,
) -> PyResult<(Bound<'py, PyDict>, Bound<'py, PyDict>)> {
    let counters = PyDict::new(py);
    for (k, v) in &stats.counters {
        counters.set_item(k, *v)?;
    }
    let derived = PyDict::new(py);
    for (k, v) in &stats.derived {
        derived.set_item(k, *v)?;
    }
    Ok((counters, derived))
}

/// A saved result's counters and derived metrics → [`Stats`] (without metadata).
pub fn stats_from_py(counters: BTreeMap<String, u64>, derived: BTreeMap<String, f64>) -> Stats {
    Stats {
        counters,
        derived,
        ..Stats::default()
    }
}
