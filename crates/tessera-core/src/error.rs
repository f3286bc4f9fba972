//! The one error type of the core. Every failure a user can cause (bad config,
//! bad trace, simulated memory exhaustion, a missing external tool) is a value
//! here, never a panic.

use std::fmt;

/// Where in a trace file a problem was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    Line(u64),
    Offset(u64),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Line(l) => write!(f, "line {l}"),
            Location::Offset(o) => write!(f, "byte offset {o}"),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A config key is unknown, malformed, or contradicts another.
    #[error("config error at `{path}`: {msg}{}", fmt_allowed(.allowed))]
    Config { path: String, msg: String, allowed: Vec<String> },

    /// A trace file is malformed, truncated, corrupt or of the wrong kind.
    #[error("{file}: {location}: {msg}")]
    Trace { file: String, location: Location, msg: String },

    /// The simulated machine ran out of physical memory.
    /// When `what` is [`BELOW_POOL_NODE`], `free_bytes` and `capacity_bytes`
    /// are those of the area below the Iceberg pool, not of all memory.
    #[error("{}", oom_message(.what, *.requested_bytes, *.free_bytes, *.capacity_bytes))]
    OutOfMemory { what: String, requested_bytes: u64, free_bytes: u64, capacity_bytes: u64 },

    /// The host could not read or write a file.
    #[error("{path}: {source}")]
    Io { path: String, #[source] source: std::io::Error },

    /// A built-in workload failed while running (a bug: reported, not a crash).
    #[error("{name}: {msg}")]
    Workload { name: String, msg: String },
    /// An external tool Tessera runs (valgrind, qemu, gcc, apt-get, or the
    /// program being recorded) is missing or failed. `msg` says how to fix it.
    #[error("{tool}: {msg}")]
    Tool { tool: String, msg: String },

    /// The access stream (a trace file, or a stream of zero length) has no
    /// records: a run of it would be all zeros.
    #[error("{stream}: the stream has no access records, so there is nothing to simulate")]
    Empty { stream: String },

    /// The run was stopped by the caller (e.g. Ctrl-C through the progress callback).
    #[error("interrupted")]
    Interrupted,
}

fn fmt_allowed(allowed: &[String]) -> String {
    if allowed.is_empty() {
        String::new()
    } else {
        format!(" (allowed: {})", allowed.join(", "))
    }
}

impl Error {
    pub fn config(path: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Config { path: path.into(), msg: msg.into(), allowed: Vec::new() }
    }
    pub fn config_allowed(path: impl Into<String>, msg: impl Into<String>, allowed: &[&str]) -> Self {
        Error::Config {
            path: path.into(),
            msg: msg.into(),
            allowed: allowed.iter().map(|s| s.to_string()).collect(),
        }
    }
    pub fn trace(file: impl Into<String>, location: Location, msg: impl Into<String>) -> Self {
        Error::Trace { file: file.into(), location, msg: msg.into() }
    }
    pub fn tool(tool: impl Into<String>, msg: impl Into<String>) -> Self {
        Error::Tool { tool: tool.into(), msg: msg.into() }
    }
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io { path: path.into(), source }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What an Iceberg machine calls a page-table node: nodes live in the area
/// below the pool, which can fill while the pool has free frames.
pub const BELOW_POOL_NODE: &str = "page-table node (below the iceberg pool)";

fn oom_message(what: &str, requested: u64, free: u64, capacity: u64) -> String {
    if what == BELOW_POOL_NODE {
        return format!(
            "simulated memory exhausted: the area below the iceberg pool is full: a page-table node needs {requested} bytes and {free} of the area's {capacity} bytes ({}) are free. \
             Page-table nodes and pages larger than 4 KiB live there, and its size is physmem.capacity minus the pool \
             (physmem.allocator.buckets × 256 KiB, or physmem.allocator.pool): use fewer buckets or a smaller pool, or raise physmem.capacity",
            crate::config::spec::ByteSize(capacity).human()
        );
    }
    format!("simulated memory exhausted: {what} needs {requested} bytes but only {free} of {capacity} bytes are free ({})", oom_hint(what))
}

/// What to raise when `what` could not be placed.
fn oom_hint(what: &str) -> &'static str {
    if what == "swap device" {
        "raise os.swap.capacity"
    } else {
        "raise physmem.capacity, or add a swap device at os.swap"
    }
}
