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
use tessera_core::stream::memory::{Columns, MemoryStream};
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

/// An access stream in memory: (name, vaddr, ins_gap, asid, kind, size, dep),
/// each column as the little-endian bytes of its values (u64, u32, u16, u8,
/// u8, u32); `dep` empty when the stream has no dependencies.
pub type MemoryArgs = (String, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>, Vec<u8>);

fn le_column<const N: usize, T>(name: &str, bytes: &[u8], from: fn([u8; N]) -> T) -> PyResult<Vec<T>> {
    if !bytes.len().is_multiple_of(N) {
        return Err(PyValueError::new_err(format!("accesses.{name}: {} bytes is not a whole number of {N}-byte values", bytes.len())));
    }
    Ok(bytes.chunks_exact(N).map(|c| from(c.try_into().expect("chunks of N bytes"))).collect())
}

/// [`MemoryArgs`] → the core's columns.
pub fn memory_columns((_, vaddr, ins_gap, asid, kind, size, dep): &MemoryArgs) -> PyResult<Columns> {
    Ok(Columns {
        vaddr: le_column("vaddr", vaddr, u64::from_le_bytes)?,
        ins_gap: le_column("ins_gap", ins_gap, u32::from_le_bytes)?,
        asid: le_column("asid", asid, u16::from_le_bytes)?,
        kind: kind.clone(),
        size: size.clone(),
        dep: le_column("dep", dep, u32::from_le_bytes)?,
    })
}

/// A built-in workload: (name, {parameter: value}).
pub type WorkloadArgs = (String, BTreeMap<String, String>);

/// Where a run's accesses come from: exactly one of these is given.
#[derive(Default)]
pub struct SourceArgs {
    pub trace: Option<PathBuf>,
    pub synthetic: Option<SyntheticArgs>,
    pub workload: Option<WorkloadArgs>,
    pub memory: Option<MemoryArgs>,
}

/// Open the access source named by exactly one of `trace`, `synthetic`,
/// `workload` and `memory`. Synthetic streams and workloads draw from the
/// run's seed.
pub fn open_source(py: Python<'_>, args: SourceArgs, seed: u64, opts: &TraceOptions) -> PyResult<Box<dyn AccessSource + Send>> {
    match args {
        SourceArgs { trace: Some(path), synthetic: None, workload: None, memory: None } => {
            tessera_core::trace::open_with(&path, opts).py_err(py)
        }
        SourceArgs { trace: None, synthetic: Some((pattern, accesses, footprint)), workload: None, memory: None } => {
            let pattern = Pattern::parse(&pattern).py_err(py)?;
            let spec = SyntheticSpec::new(pattern, accesses, footprint, seed);
            let source = Synthetic::new(spec).py_err(py)?;
            Ok(Box::new(source))
        }
        SourceArgs { trace: None, synthetic: None, workload: Some((name, params)), memory: None } => {
            let source = WorkloadSource::start(&name, &params, seed).py_err(py)?;
            Ok(Box::new(source))
        }
        SourceArgs { trace: None, synthetic: None, workload: None, memory: Some(m) } => {
            let columns = memory_columns(&m)?;
            Ok(Box::new(MemoryStream::new(columns, &m.0).py_err(py)?))
        }
        _ => Err(PyValueError::new_err(
            "give exactly one of a trace path, synthetic parameters, a workload and accesses",
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
