//! `matching`: PBBS maximal matching (`maximalMatching/serialMatching`).
//!
//! ## What it models
//! PBBS's serial greedy matching over an edge array: for each edge `(u, v)` in
//! order, if neither end is matched, match both and append the edge's index to
//! the output. The result is a maximal matching (every edge has a matched end).
//!
//! Input: the graph from [`super::graph`] (deduplicated) as an edge array,
//! each undirected edge once, in shuffled order (PBBS's edge files list edges
//! in generation order).
//!
//! Layout (allocation order, each by `malloc`): the edge array `E`
//! (`2 × u32` per edge, host-generated and not emitted, as PBBS reads it from
//! a file), `matching` (`u32 × n`, output edge ids), `matched` (`u8 × n`,
//! PBBS's `sequence<bool>`).
//!
//! Instruction model: `matched` initialisation, per 8 flags 1 + store of 8
//! bytes (a memset); per edge 2 + load `E[i].u`, 1 + load `E[i].v`, 2 + load
//! `matched[u]`, and unless `u` is matched 2 + load `matched[v]`; for a new
//! match 1 + store `matched[u]`, 1 + store `matched[v]`, 2 + store
//! `matching[k]`.
//! Dependencies: `matched[u]` (load and store) on the `E[i].u` load,
//! `matched[v]` on the `E[i].v` load; `matching[k]` has none (a counter).
//!
//! ## Choices
//! - `rounds` (default 1, PBBS's `-r`) repeats the kernel on the same input.
//!   Each round allocates its arrays afresh at the addresses the previous
//!   round freed, as glibc and Linux typically hand them back.
//! - Edges from `workload.matching.edges` (the shuffle); the graph itself is
//!   the shared one for the seed.

use super::emit::Dep;
use super::graph::{self, GraphInput, Round};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "matching",
    summary: "PBBS serial greedy maximal matching over a shuffled edge array",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, true)?;
        Ok(8 * g.edges() + 5 * g.vertices())
    },
    build: |p| Ok(Box::new(Matching::new(p)?)),
};

const PARAMS: &[ParamDoc] =
    &[graph::GRAPH_PARAM, graph::SCALE_PARAM, graph::EDGEFACTOR_PBBS, graph::ROUNDS_PARAM];

pub struct Matching {
    graph: GraphInput,
    rounds: u64,
    seed: u64,
}

impl Matching {
    pub fn new(p: &Params) -> Result<Matching> {
        Ok(Matching {
            graph: GraphInput::from_params(p, true)?,
            rounds: p.count_in("rounds", 1, 1 << 20)?,
            seed: p.seed(),
        })
    }
}

/// The shuffled edge array of the `matching` input (host only).
pub fn input_edges(graph: &GraphInput, seed: u64) -> Vec<[u32; 2]> {
    let csr = graph.csr(seed, true);
    graph::edge_array(&csr, &mut component_rng(seed, "workload.matching.edges"))
}

impl Workload for Matching {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let n = self.graph.vertices() as usize;
        let edges = SimVec::from_vec(&mut space, input_edges(&self.graph, self.seed));
        for index in 0..self.rounds {
            // Each round's arrays land where the previous round's were freed.
            let mut round_space = space.clone();
            if greedy_matching(&mut round_space, n, &edges, Round { index, count: self.rounds }, e).is_none() {
                break;
            }
        }
        Ok(())
    }
}

/// PBBS's serial matching; returns the matched edge ids in order, or `None`
/// if the emitter stopped.
pub fn greedy_matching(space: &mut AddressSpace, n: usize, edges: &SimVec<[u32; 2]>, r: Round, e: &mut Emitter) -> Option<Vec<u32>> {
    let m = edges.len();
    let mut matching = SimVec::alloc(space, n, 0u32);
    let mut matched = SimVec::alloc(space, n, 0u8);
    for i in (0..n).step_by(8) {
        e.ins(1);
        e.store(matched.addr(i), (n - i).min(8) as u8);
    }
    let mut k = 0usize;
    for i in 0..m {
        if i & 0xffff == 0xffff {
            r.report(e, i as u64, m as u64);
            if e.stopped() {
                return None;
            }
        }
        e.ins(2);
        let du = e.load_on(edges.addr(i), 4, Dep::NONE);
        e.ins(1);
        let dv = e.load_on(edges.addr(i) + 4, 4, Dep::NONE);
        let [u, v] = edges.data[i];
        let (u, v) = (u as usize, v as usize);
        e.ins(2);
        if matched.ld_on(u, du, e).0 != 0 {
            continue;
        }
        e.ins(2);
        if matched.ld_on(v, dv, e).0 != 0 {
            continue;
        }
        e.ins(1);
        matched.st_on(u, 1, du, e);
        e.ins(1);
        matched.st_on(v, 1, dv, e);
        e.ins(2);
        matching.st(k, i as u32, e);
        k += 1;
    }
    r.report(e, m as u64, m as u64);
    matching.data.truncate(k);
    Some(matching.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessKind;
    use crate::workload::emit::VecSink;

    #[test]
    fn matching_is_valid_and_maximal() {
        for (kind, seed) in [(graph::GraphKind::Rmat, 1), (graph::GraphKind::Random, 2)] {
            let g = GraphInput { kind, scale: 10, edgefactor: 5 };
            let input = input_edges(&g, seed);
            let mut space = AddressSpace::new();
            let edges = SimVec::from_vec(&mut space, input.clone());
            let mut sink = VecSink::default();
            let mut e = Emitter::new(&mut sink);
            let ids = greedy_matching(&mut space, 1024, &edges, Round::ONE, &mut e).unwrap();
            e.finish();
            let mut mate = vec![false; 1024];
            for &i in &ids {
                let [u, v] = input[i as usize];
                assert!(u != v && !mate[u as usize] && !mate[v as usize], "{kind:?}: vertex matched twice");
                mate[u as usize] = true;
                mate[v as usize] = true;
            }
            for &[u, v] in &input {
                assert!(mate[u as usize] || mate[v as usize], "{kind:?}: edge ({u}, {v}) could be added");
            }
            let stores = sink.records.iter().filter(|r| r.2 == AccessKind::Store).count();
            assert_eq!(stores, 1024 / 8 + 3 * ids.len());
        }
    }
}
