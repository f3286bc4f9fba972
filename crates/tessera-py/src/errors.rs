//! The one map from core errors to Python exceptions.
//!
//! ```text
//! TesseraError                 every failure a user can cause (and host I/O errors)
//! ├── ConfigError              .path (dotted key), .allowed (list of str)
//! ├── TraceError               .file, .location ("line 3" / "byte offset 96"), .line, .offset
//! │                            (also: a stream with no records, Error::Empty)
//! ├── SimulatedOutOfMemory     .what, .requested_bytes, .free_bytes, .capacity_bytes
//! └── ToolError                .tool (valgrind, qemu-x86_64, gcc, apt-get, the recorded program)
//! Error::Interrupted        →  KeyboardInterrupt
//! ```
//! The exception message is the core's `Display` text, so Python and the core
//! word every error the same way.

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyKeyboardInterrupt};
use pyo3::prelude::*;
use pyo3::IntoPyObjectExt;
use tessera_core::error::{Error, Location};

create_exception!(
    tessera,
    TesseraError,
    PyException,
    "Base class of every error Tessera reports."
);
create_exception!(
    tessera,
    ConfigError,
    TesseraError,
    "A config key is unknown, malformed or contradicts another."
);
create_exception!(
    tessera,
    TraceError,
    TesseraError,
    "A trace file is malformed, truncated or of the wrong kind."
);
create_exception!(
    tessera,
    SimulatedOutOfMemory,
    TesseraError,
    "The simulated machine ran out of physical memory."
);

create_exception!(
    tessera,
    ToolError,
    TesseraError,
    "An external tool (valgrind, QEMU, gcc, apt-get, the recorded program) is missing or failed."
);

/// Add the exception classes to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("TesseraError", py.get_type::<TesseraError>())?;
    m.add("ConfigError", py.get_type::<ConfigError>())?;
    m.add("TraceError", py.get_type::<TraceError>())?;
    m.add(
        "SimulatedOutOfMemory",
        py.get_type::<SimulatedOutOfMemory>(),
    )?;
    m.add("ToolError", py.get_type::<ToolError>())?;
    Ok(())
}

/// Convert a core error into the matching Python exception, with its details
/// as attributes.
pub fn to_py(py: Python<'_>, err: Error) -> PyErr {
    let msg = err.to_string();
    let (exc, attrs): (PyErr, Vec<(&str, PyObject)>) = match err {
        Error::Config { path, allowed, .. } => (
            ConfigError::new_err(msg),
            vec![("path", obj(py, path)), ("allowed", obj(py, allowed))],
        ),
        Error::Trace { file, location, .. } => {
            let (line, offset) = match location {
                Location::Line(l) => (Some(l), None),
                Location::Offset(o) => (None, Some(o)),
            };
            (
                TraceError::new_err(msg),
                vec![
                    ("file", obj(py, file)),
                    ("location", obj(py, location.to_string())),
                    ("line", obj(py, line)),
                    ("offset", obj(py, offset)),
                ],
            )
        }
        Error::OutOfMemory {
            what,
            requested_bytes,
            free_bytes,
            capacity_bytes,
        } => (
            SimulatedOutOfMemory::new_err(msg),
            vec![
                ("what", obj(py, what)),
                ("requested_bytes", obj(py, requested_bytes)),
                ("free_bytes", obj(py, free_bytes)),
                ("capacity_bytes", obj(py, capacity_bytes)),
            ],
        ),
        Error::Empty { stream } => (
            TraceError::new_err(msg),
            vec![
                ("file", obj(py, stream)),
                ("location", obj(py, "byte offset 0")),
                ("line", py.None()),
                ("offset", obj(py, 0u64)),
            ],
        ),
        Error::Tool { tool, .. } => (ToolError::new_err(msg), vec![("tool", obj(py, tool))]),
        Error::Io { path, .. } => (TesseraError::new_err(msg), vec![("path", obj(py, path))]),
        Error::Workload { name, .. } => (TesseraError::new_err(msg), vec![("workload", obj(py, name))]),
        Error::Interrupted => (PyKeyboardInterrupt::new_err(msg), vec![]),
    };
    let value = exc.value(py);
    for (name, v) in attrs {
        if let Err(e) = value.setattr(name, v) {
            return e;
        }
    }
    exc
}

fn obj<'py, T: IntoPyObjectExt<'py>>(py: Python<'py>, v: T) -> PyObject {
    v.into_py_any(py).unwrap_or_else(|_| py.None())
}

/// `Result<T, Error>` → `PyResult<T>`.
pub trait IntoPyResult<T> {
    fn py_err(self, py: Python<'_>) -> PyResult<T>;
}

impl<T> IntoPyResult<T> for Result<T, Error> {
    fn py_err(self, py: Python<'_>) -> PyResult<T> {
        self.map_err(|e| to_py(py, e))
    }
}
