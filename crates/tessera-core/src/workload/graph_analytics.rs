//! `graph-analytics`: the scale-out graph-analytics analog — PageRank
//! iterations on a Kronecker graph.
//!
//! ## What it models
//! CloudSuite's graph-analytics service runs PageRank over a large social
//! graph. This analog runs the core data path of a serial pull-style PageRank
//! as the GAP benchmark suite's `pr.cc` writes it, on a Graph500 Kronecker graph
//! (deduplicated, sorted neighbour lists; undirected, so in- and out-neighbours
//! coincide):
//! ```text
//! scores[v] = 1/n
//! repeat iterations:
//!   for u: contrib[u] = scores[u] / degree(u)
//!   for v: sum = Σ contrib[u] over neighbours u of v
//!          scores[v] = (1 - d)/n + d·sum
//! ```
//! with damping `d` (default 0.85). Like GAP, a vertex of degree 0 contributes
//! nothing (its rank mass is not redistributed), so ranks sum to slightly less
//! than 1 when there are isolated vertices.
//!
//! Layout (allocation order, each by `malloc`): CSR `offsets` (`u64 × (n+1)`),
//! `targets` (`u32` per entry), `scores` (`f64 × n`), `contrib` (`f64 × n`).
//!
//! Instruction model:
//! - initialisation, per vertex: 2 + store `scores[v]`;
//! - contribution pass, per vertex: 2 + load `scores[u]`, 2 + load
//!   `offsets[u]`, 1 + load `offsets[u+1]`, 12 + store `contrib[u]` (the
//!   division dominates);
//! - gather pass: 2 + load `offsets[0]`, then per vertex 2 + load
//!   `offsets[v+1]` (the start is carried from the previous vertex), then per
//!   neighbour 3 + load `targets[k]`, 2 + load `contrib[u]`, and 4 + store
//!   `scores[v]` (multiply-add). GAP also reads the old score to measure
//!   convergence; with a fixed iteration count that read is left out.
//!
//! Dependencies: in the gather, `targets[k]` depends on the `offsets` load
//! that gave the list's start, and `contrib[u]` on the `targets[k]` load that
//! gave `u`; the contribution pass and the `scores` stores index by the loop
//! counter and have none.
//!
//! ## Choices
//! - Pull rather than push: no atomics or scattered writes, the access pattern
//!   of GAP and of GraphX-style gathers; the random traffic is the
//!   `contrib[u]` reads.
//! - A fixed number of iterations instead of a convergence tolerance, so the
//!   stream length depends only on the parameters.
//! - Default scale 18 with edge factor 16 and 5 iterations keeps a default
//!   run to seconds; CloudSuite's footprints need scale 24 and up.

use super::emit::Dep;
use super::graph::{self, GraphInput, SimCsr};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph-analytics",
    summary: "scale-out graph analytics analog: pull PageRank iterations on a Kronecker graph",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, false)?;
        Ok(SimCsr::bytes(g.vertices(), g.max_nnz()) + 16 * g.vertices())
    },
    build: |p| Ok(Box::new(GraphAnalytics::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    graph::SCALE_PARAM,
    graph::EDGEFACTOR_GRAPH500,
    ParamDoc { name: "iterations", default: "5", doc: "PageRank iterations" },
    ParamDoc { name: "damping", default: "0.85", doc: "PageRank damping factor, 0 to 1" },
];

pub struct GraphAnalytics {
    graph: GraphInput,
    iterations: u64,
    damping: f64,
    seed: u64,
}

impl GraphAnalytics {
    pub fn new(p: &Params) -> Result<GraphAnalytics> {
        Ok(GraphAnalytics {
            graph: GraphInput::from_params(p, false)?,
            iterations: p.count_in("iterations", 1, 1 << 20)?,
            damping: p.real_in("damping", 0.0, 1.0)?,
            seed: p.seed(),
        })
    }
}

impl Workload for GraphAnalytics {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let g = SimCsr::place(&mut space, self.graph.csr(self.seed, true));
        pagerank(&mut space, &g, self.iterations, self.damping, e);
        Ok(())
    }
}

/// Pull PageRank on `g`; returns the scores, or `None` if the emitter stopped.
pub fn pagerank(space: &mut AddressSpace, g: &SimCsr, iterations: u64, damping: f64, e: &mut Emitter) -> Option<Vec<f64>> {
    let n = g.n();
    let init = 1.0 / n as f64;
    let base = (1.0 - damping) / n as f64;
    let mut scores = SimVec::alloc(space, n, 0.0f64);
    let mut contrib = SimVec::alloc(space, n, 0.0f64);
    for v in 0..n {
        e.ins(2);
        scores.st(v, init, e);
    }
    let total = iterations * n as u64;
    for it in 0..iterations {
        for u in 0..n {
            e.ins(2);
            let s = scores.ld(u, e);
            e.ins(2);
            let lo = g.offsets.ld(u, e);
            e.ins(1);
            let hi = g.offsets.ld(u + 1, e);
            let c = if hi > lo { s / (hi - lo) as f64 } else { 0.0 };
            e.ins(12);
            contrib.st(u, c, e);
        }
        e.ins(2);
        let (lo0, mut dlo) = g.offsets.ld_on(0, Dep::NONE, e);
        let mut lo = lo0 as usize;
        for v in 0..n {
            e.ins(2);
            let (hi, dhi) = g.offsets.ld_on(v + 1, Dep::NONE, e);
            let hi = hi as usize;
            let mut sum = 0.0f64;
            for k in lo..hi {
                e.ins(3);
                let (u, du) = g.targets.ld_on(k, dlo, e);
                e.ins(2);
                sum += contrib.ld_on(u as usize, du, e).0;
            }
            e.ins(4);
            scores.st(v, base + damping * sum, e);
            lo = hi;
            dlo = dhi;
            if v & 0xfff == 0xfff {
                e.progress(it * n as u64 + v as u64, total);
                if e.stopped() {
                    return None;
                }
            }
        }
    }
    e.progress(total, total);
    Some(scores.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;

    #[test]
    fn scores_match_a_power_iteration_reference() {
        let csr = GraphInput { kind: graph::GraphKind::Rmat, scale: 10, edgefactor: 8 }.csr(3, true);
        let n = csr.n();
        // Reference: x_{t+1} = (1-d)/n + d · A D^-1 x_t, by edges.
        let d = 0.85;
        let mut x = vec![1.0 / n as f64; n];
        for _ in 0..20 {
            let mut next = vec![(1.0 - d) / n as f64; n];
            for (u, v) in csr.entries() {
                next[v as usize] += d * x[u as usize] / csr.degree(u as usize) as f64;
            }
            x = next;
        }
        let mut space = AddressSpace::new();
        let g = SimCsr::place(&mut space, csr.clone());
        let mut sink = NullSink;
        let mut e = Emitter::new(&mut sink);
        let got = pagerank(&mut space, &g, 20, d, &mut e).unwrap();
        for v in 0..n {
            assert!((got[v] - x[v]).abs() < 1e-12, "vertex {v}: {} vs {}", got[v], x[v]);
        }
        // Rank mass only leaks through isolated vertices.
        let sum: f64 = got.iter().sum();
        assert!(sum <= 1.0 + 1e-9 && sum > 0.5, "sum {sum}");
        // Hubs rank highest.
        let hub = (0..n).max_by_key(|&v| csr.degree(v)).unwrap();
        let top = (0..n).max_by(|&a, &b| got[a].partial_cmp(&got[b]).unwrap()).unwrap();
        assert!(csr.degree(top) * 2 >= csr.degree(hub), "top-ranked {top} vs hub {hub}");
    }

    #[test]
    fn gather_loads_depend_on_the_neighbour_list() {
        use crate::access::AccessKind;
        use crate::workload::tests::{check_deps, emitted_deps};
        let kv = [("scale", "9"), ("edgefactor", "4"), ("iterations", "2")];
        let (recs, deps) = emitted_deps("graph-analytics", &kv, 5);
        check_deps(&recs, &deps);
        let csr = GraphInput { kind: graph::GraphKind::Rmat, scale: 9, edgefactor: 4 }.csr(5, true);
        let mut space = AddressSpace::new();
        let g = SimCsr::place(&mut space, csr);
        let n = g.n();
        let _scores = SimVec::alloc(&mut space, n, 0.0f64);
        let contrib = SimVec::alloc(&mut space, n, 0.0f64);
        let in_targets = |a: u64| (g.targets.base..g.targets.base + g.targets.bytes()).contains(&a);
        let in_offsets = |a: u64| (g.offsets.base..g.offsets.base + g.offsets.bytes()).contains(&a);
        let (mut gathers, mut contrib_loads) = (0, 0);
        for (i, r) in recs.iter().enumerate() {
            let d = deps[i] as usize;
            if in_targets(r.1) {
                gathers += 1;
                assert!(d > 0 && in_offsets(recs[i - d].1), "targets load {i} not on an offsets load");
            } else if r.2 == AccessKind::Load && (contrib.base..contrib.base + contrib.bytes()).contains(&r.1) {
                // contrib[u] right after the targets[k] load holding u.
                contrib_loads += 1;
                assert_eq!(d, 1);
                let k = ((recs[i - 1].1 - g.targets.base) / 4) as usize;
                assert_eq!(contrib.addr(g.targets.data[k] as usize), r.1);
            } else {
                assert_eq!(d, 0, "record {i}");
            }
        }
        assert_eq!(gathers, 2 * g.nnz());
        assert_eq!(contrib_loads, gathers);
    }
}
