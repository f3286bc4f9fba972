//! Machines: processor models that drive the shared memory system
//! ([`crate::memsys`]). `machine.kind` picks one; `run` and the derived
//! metrics go through this one choice.
//!
//! - `cpu`: one core with a TLB hierarchy and the interval timing model
//!   ([`cpu::CpuMachine`]).
//!
//! - `gpu`: SMs running thousands of warps, per-SM and shared TLBs with
//!   MSHRs, a walker with many walks in flight, caches, DRAM and demand
//!   paging ([`gpu::GpuMachine`]). It runs GPU applications, not an access
//!   stream, so it is built and run through [`gpu::run_apps`] rather than
//!   [`Machine`].

pub mod cpu;
pub mod gpu;

use crate::access::AccessBatch;
use crate::config::Spec;
use crate::error::{Error, Result};
use crate::pagetable::PageTable;
use crate::physmem::PhysMem;
use crate::stats::Stats;
use crate::tlb::Mmu;

pub use cpu::CpuMachine;

/// The machine kinds, as written at `machine.kind`.
pub const KINDS: [(&str, &str); 2] = [
    ("cpu", "one core: TLB hierarchy, walker, caches, interval timing model"),
    ("gpu", "SMs running warps, per-SM and shared TLBs with MSHRs, a many-walk walker, caches, DRAM, demand paging"),
];

/// A machine of any kind.
pub enum Machine {
    Cpu(CpuMachine),
}

impl Machine {
    pub fn build(spec: &Spec, seed: u64) -> Result<Machine> {
        match spec.machine.kind.as_str() {
            "cpu" => Ok(Machine::Cpu(CpuMachine::build(spec, seed)?)),
            "gpu" => Err(Error::config(
                "machine.kind",
                "a GPU machine runs GPU applications, not an access stream: give it --apps, a gpu: workload or an Accel-Sim --trace directory",
            )),
            other => Err(Error::config_allowed(
                "machine.kind",
                format!("unknown machine \"{other}\""),
                &KINDS.map(|k| k.0),
            )),
        }
    }

    /// Simulate one batch of accesses.
    #[inline]
    pub fn feed(&mut self, batch: &AccessBatch) -> Result<()> {
        match self {
            Machine::Cpu(m) => m.feed(batch),
        }
    }

    /// Whether the source carries dependencies (see [`CpuMachine::source_dependencies`]).
    pub fn source_dependencies(&mut self, carried: bool, described: &str) -> Result<Option<String>> {
        match self {
            Machine::Cpu(m) => m.source_dependencies(carried, described),
        }
    }

    /// End the warm-up (see [`CpuMachine::begin_measurement`]).
    pub fn begin_measurement(&mut self) {
        match self {
            Machine::Cpu(m) => m.begin_measurement(),
        }
    }

    /// Every counter and the derived metrics.
    pub fn stats(&self) -> Stats {
        match self {
            Machine::Cpu(m) => m.stats(),
        }
    }

    pub fn spec(&self) -> &Spec {
        match self {
            Machine::Cpu(m) => m.spec(),
        }
    }

    /// The CPU machine, if this is one (scenario tests and tools).
    pub fn cpu(&self) -> Option<&CpuMachine> {
        match self {
            Machine::Cpu(m) => Some(m),
        }
    }

    pub fn mmu(&self) -> &Mmu {
        match self {
            Machine::Cpu(m) => m.mmu(),
        }
    }
    pub fn page_table(&self) -> &PageTable {
        match self {
            Machine::Cpu(m) => m.page_table(),
        }
    }
    pub fn physmem(&self) -> &PhysMem {
        match self {
            Machine::Cpu(m) => m.physmem(),
        }
    }

    #[cfg(test)]
    pub(crate) fn without_bulk_runs(self) -> Machine {
        match self {
            Machine::Cpu(m) => Machine::Cpu(m.without_bulk_runs()),
        }
    }

    #[cfg(test)]
    pub(crate) fn without_walk_shortcuts(self) -> Machine {
        match self {
            Machine::Cpu(m) => Machine::Cpu(m.without_walk_shortcuts()),
        }
    }

    #[cfg(test)]
    pub(crate) fn translate_data(&mut self, va: u64, asid: crate::addr::Asid, write: bool) -> Result<(u64, crate::addr::PageSize)> {
        match self {
            Machine::Cpu(m) => m.translate_data(va, asid, write),
        }
    }

    #[cfg(test)]
    pub(crate) fn shortcut_walks(&self) -> u64 {
        match self {
            Machine::Cpu(m) => m.shortcut_walks(),
        }
    }
}

#[cfg(test)]
mod tests;
