//! Tessera core: an exact, fast, mechanism-level simulator of address
//! translation and memory management.
//!
//! Data flows one way: an access stream ([`access::AccessBatch`], from a
//! [`trace`] reader or a [`stream`] generator) is fed to a [`machine::Machine`]
//! built from a resolved [`config::Spec`]; after the run the machine's counters
//! are walked into a [`stats::Stats`] tree and [`stats::derived`] computes the
//! papers' metrics. No Python, no printing, no global state.

pub mod access;
pub mod addr;
pub mod config;
pub mod error;
pub mod host_memory;
pub mod registry;
pub mod rng;
pub mod stats;

pub mod cache;
pub mod gtsm;
pub mod page_size;
pub mod pagetable;
pub mod physmem;
pub mod replacement;
pub mod table;
pub mod timing;
pub mod tlb;
pub mod walker;

pub mod machine;
pub mod memsys;
pub mod os;
pub mod run;
pub mod stream;
pub mod trace;
pub mod workload;

pub use access::{AccessBatch, AccessKind};
pub use config::Spec;
pub use error::{Error, Result};
pub use machine::Machine;
pub use stats::Stats;

/// Version string stored with every result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
