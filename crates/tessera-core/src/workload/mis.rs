//! `mis`: PBBS maximal independent set (`maximalIndependentSet/serialMIS`).
//!
//! ## What it models
//! PBBS's serial greedy MIS: visit vertices in id order; mark each one "in"
//! (`Flags[i] = 1`), then scan its neighbours and, at the first neighbour
//! already in the set, mark it "out" (`Flags[i] = 2`) and stop scanning. Only
//! earlier vertices can be in the set, so the result is the lexicographically
//! first maximal independent set. R-MAT labels are randomly permuted, so id
//! order is a random order, as Luby-style algorithms assume.
//!
//! Input: the graph from [`super::graph`] (deduplicated, sorted neighbour
//! lists), as PBBS's adjacency-graph files.
//!
//! Layout (allocation order, each by `malloc`): CSR `offsets` (`u64`),
//! `targets` (`u32`), `Flags` (`u8 × n`).
//!
//! Instruction model: `Flags` initialisation, per 8 flags 1 + store of 8 bytes
//! (a memset); per vertex 2 + store `Flags[i]`, 2 + load `offsets[i]`,
//! 1 + load `offsets[i+1]`; per scanned neighbour 2 + load `targets[k]`,
//! 2 + load `Flags[ngh]`; when the vertex drops out, 1 + store `Flags[i]`.
//! Dependencies: `targets[k]` on the `offsets[i]` load (the list's start),
//! `Flags[ngh]` on the `targets[k]` load that gave `ngh`; the `Flags[i]`
//! stores index by the loop counter and have none.
//!
//! ## Choices
//! - `rounds` (default 1, PBBS's `-r`) repeats the kernel on the same input.
//!   Each round allocates its arrays afresh at the addresses the previous
//!   round freed, as glibc and Linux typically hand them back.

use super::emit::Dep;
use super::graph::{self, GraphInput, Round, SimCsr};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "mis",
    summary: "PBBS serial greedy maximal independent set over a graph's adjacency",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, true)?;
        Ok(SimCsr::bytes(g.vertices(), g.max_nnz()) + g.vertices())
    },
    build: |p| Ok(Box::new(Mis::new(p)?)),
};

const PARAMS: &[ParamDoc] =
    &[graph::GRAPH_PARAM, graph::SCALE_PARAM, graph::EDGEFACTOR_PBBS, graph::ROUNDS_PARAM];

/// `Flags` values.
pub const IN: u8 = 1;
pub const OUT: u8 = 2;

pub struct Mis {
    graph: GraphInput,
    rounds: u64,
    seed: u64,
}

impl Mis {
    pub fn new(p: &Params) -> Result<Mis> {
        Ok(Mis {
            graph: GraphInput::from_params(p, true)?,
            rounds: p.count_in("rounds", 1, 1 << 20)?,
            seed: p.seed(),
        })
    }
}

impl Workload for Mis {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let g = SimCsr::place(&mut space, self.graph.csr(self.seed, true));
        for index in 0..self.rounds {
            // Each round's arrays land where the previous round's were freed.
            let mut round_space = space.clone();
            if greedy_mis(&mut round_space, &g, Round { index, count: self.rounds }, e).is_none() {
                break;
            }
        }
        Ok(())
    }
}

/// PBBS's serial MIS; returns `Flags`, or `None` if the emitter stopped.
pub fn greedy_mis(space: &mut AddressSpace, g: &SimCsr, r: Round, e: &mut Emitter) -> Option<Vec<u8>> {
    let n = g.n();
    let mut flags = SimVec::alloc(space, n, 0u8);
    for i in (0..n).step_by(8) {
        e.ins(1);
        e.store(flags.addr(i), (n - i).min(8) as u8);
    }
    for i in 0..n {
        e.ins(2);
        flags.st(i, IN, e);
        e.ins(2);
        let (lo, dlo) = g.offsets.ld_on(i, Dep::NONE, e);
        e.ins(1);
        let hi = g.offsets.ld(i + 1, e) as usize;
        for k in lo as usize..hi {
            e.ins(2);
            let (ngh, dn) = g.targets.ld_on(k, dlo, e);
            e.ins(2);
            if flags.ld_on(ngh as usize, dn, e).0 == IN {
                e.ins(1);
                flags.st(i, OUT, e);
                break;
            }
        }
        if i & 0xffff == 0xffff {
            r.report(e, i as u64, n as u64);
            if e.stopped() {
                return None;
            }
        }
    }
    r.report(e, n as u64, n as u64);
    Some(flags.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;

    #[test]
    fn set_is_independent_and_maximal() {
        for (kind, seed) in [(graph::GraphKind::Rmat, 1), (graph::GraphKind::Random, 2)] {
            let csr = GraphInput { kind, scale: 10, edgefactor: 5 }.csr(seed, true);
            let mut space = AddressSpace::new();
            let g = SimCsr::place(&mut space, csr.clone());
            let mut sink = NullSink;
            let mut e = Emitter::new(&mut sink);
            let flags = greedy_mis(&mut space, &g, Round::ONE, &mut e).unwrap();
            let mut size = 0;
            for v in 0..csr.n() {
                let in_nbrs = csr.neighbors(v).iter().filter(|&&u| flags[u as usize] == IN).count();
                match flags[v] {
                    IN => {
                        size += 1;
                        assert_eq!(in_nbrs, 0, "{kind:?}: {v} and a neighbour are both in");
                    }
                    OUT => assert!(in_nbrs > 0, "{kind:?}: {v} could join the set"),
                    f => panic!("{kind:?}: vertex {v} has flag {f}"),
                }
            }
            // Isolated vertices are always in; the set is a real fraction.
            assert!(size > csr.n() / 10, "{kind:?}: {size}");
        }
    }
}
