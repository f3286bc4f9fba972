//! `sssp`: single-source shortest paths by Bellman-Ford, thread-centric and
//! topology-driven, one kernel launch per relaxation sweep (the Lonestar-GPU
//! / GraphBIG topology-driven SSSP).
//!
//! ## What it models
//! Every launch gives every vertex a thread; a thread whose vertex has a
//! finite distance `d` walks its neighbour list and, for each neighbour `u`
//! over an edge of weight `w` with `d + w < dist[u]`, does
//! `atomicMin(&dist[u], d + w)` and sets the `changed` flag. The host
//! launches sweep after sweep until one changes nothing (that last launch is
//! included, as the host only learns it from the flag). Updates are seen by
//! the threads that run after them in the same launch (the asynchronous
//! Bellman-Ford every GPU implementation is), so a launch can carry a
//! distance several edges; the distances converge to the same fixpoint in
//! any order. Lanes of a warp load `dist[u]` together and compare in
//! lockstep; their atomics then apply in lane order. Distances are `u32`,
//! unreached `u32::MAX`. Weights are `u32` uniform in [1, 100] per
//! undirected edge (`gpu.sssp.weights`), the same in both directions, so
//! the graph is the undirected weighted graph Dijkstra checks. The source
//! is a vertex of degree at least 1 drawn from `gpu.sssp.root`.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `weight` (`u32` per entry, beside `col`), `dist` (`u32 × n`),
//! `changed` (4 bytes). The host's initial distances and flag resets are
//! copies, not emitted.
//! Launch: `ceil(n / block)` blocks of `block` threads, 20 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `v < n`; 1 +
//! load `dist[v]`, compare and branch on `dist[v]` reached; reached 1 +
//! load `row[v]` + load `row[v + 1]`, then per neighbour the loop test
//! (compare, branch), 1 + load `col[j]` + load `weight[j]`, 1 (`d + w`),
//! 1 + load `dist[u]`, compare and branch on `d + w < dist[u]`, for those
//! atomic min on `dist[u]` + store `changed`, then 1 (`j++`); the loop's
//! last test; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use rand::Rng;

use super::neighbours::Neighbours;
use super::{
    covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Kernel, Space};
use crate::workload::graph::{Csr, EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "sssp",
    summary: "single-source shortest paths, Bellman-Ford topology-driven, thread per vertex, one launch per sweep",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + covered(4 * g.max_nnz()) + covered(4 * g.vertices()) + covered(4))
    },
    build: |p| Ok(Box::new(Sssp::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[GRAPH_PARAM, SCALE_PARAM, EDGEFACTOR_PBBS, BLOCK_PARAM];

/// Largest edge weight (weights are uniform in 1 to this).
pub const MAX_WEIGHT: u32 = 100;

/// Weights per CSR entry, uniform in [1, [`MAX_WEIGHT`]] per undirected
/// edge and equal in both directions (`csr`'s lists are sorted).
pub fn edge_weights(csr: &Csr, seed: u64, component: &str) -> Vec<u32> {
    let mut rng = component_rng(seed, component);
    let mut weight = vec![0u32; csr.nnz()];
    for u in 0..csr.n() {
        let lo = csr.offsets[u] as usize;
        for (k, &v) in csr.neighbors(u).iter().enumerate() {
            if (u as u32) < v {
                weight[lo + k] = rng.gen_range(1..=MAX_WEIGHT);
            }
        }
    }
    for u in 0..csr.n() {
        let lo = csr.offsets[u] as usize;
        for (k, &v) in csr.neighbors(u).iter().enumerate() {
            if (u as u32) > v {
                let back = csr.neighbors(v as usize).binary_search(&(u as u32)).expect("an undirected CSR");
                weight[lo + k] = weight[csr.offsets[v as usize] as usize + back];
            }
        }
    }
    weight
}

pub struct Sssp {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    weight_at: u64,
    dist_at: u64,
    changed_at: u64,
    pub root: u32,
    pub weight: Vec<u32>,
    /// Each vertex's distance as the launches so far left it.
    pub dist: Vec<u32>,
    /// Whether the last launch lowered a distance.
    changed: bool,
}

impl Sssp {
    pub fn new(p: &Params) -> Result<Sssp> {
        let g = graph_input(p)?;
        let block = vertex_block(p, &g)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        let root = g.root(p.seed(), "gpu.sssp.root");
        let weight = edge_weights(&g.csr, p.seed(), "gpu.sssp.weights");
        let n = g.n();
        let weight_at = heap.alloc("weight", 4 * weight.len() as u64);
        let dist_at = heap.alloc("dist", 4 * n);
        let changed_at = heap.alloc("changed", 4);
        let mut dist = vec![NONE; n as usize];
        dist[root as usize] = 0;
        Ok(Sssp {
            launches: Launches::new(heap.allocations),
            block,
            g,
            weight_at,
            dist_at,
            changed_at,
            root,
            weight,
            dist,
            changed: true,
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, weight_at, dist_at, changed_at) = (self.block, self.weight_at, self.dist_at, self.changed_at);
        let g = &self.g;
        let n = g.n();
        let (weight, dist) = (&self.weight, &mut self.dist);
        let mut changed = false;
        let k = thread_per_item("sssp", id, n, bs, 20, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            let (mut d, mut alt) = ([0u32; 32], [0u32; 32]);
            w.alu(1);
            w.load(Space::Global, 4, |l| dist_at + 4 * v(l));
            for l in w.active() {
                d[l as usize] = dist[v(l) as usize];
            }
            let reached = w.if_begin(|l| d[l as usize] != NONE);
            w.alu(1);
            Neighbours::load(w, g, v).walk(w, g, |w, j, u| {
                w.load(Space::Global, 4, |l| weight_at + 4 * j[l as usize]);
                w.alu(1);
                for l in w.active() {
                    let l = l as usize;
                    alt[l] = d[l] + weight[j[l] as usize];
                }
                w.alu(1);
                w.load(Space::Global, 4, |l| dist_at + 4 * u[l as usize]);
                let better = w.if_begin(|l| alt[l as usize] < dist[u[l as usize] as usize]);
                w.atomic(Space::Global, 4, |l| dist_at + 4 * u[l as usize]);
                w.store(Space::Global, 4, |_| changed_at);
                for l in w.active() {
                    let t = &mut dist[u[l as usize] as usize];
                    *t = (*t).min(alt[l as usize]);
                    changed = true;
                }
                w.if_end(better);
            });
            w.if_end(reached);
        });
        self.changed = changed;
        k
    }
}

launches!(Sssp, |k: &Sssp| !k.changed);

#[cfg(test)]
mod tests {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;

    use super::super::tests::{drain, params};
    use super::*;

    /// Dijkstra's distances from `root`.
    fn dijkstra(csr: &Csr, weight: &[u32], root: u32) -> Vec<u32> {
        let mut dist = vec![NONE; csr.n()];
        dist[root as usize] = 0;
        let mut heap = BinaryHeap::from([Reverse((0u32, root))]);
        while let Some(Reverse((d, v))) = heap.pop() {
            if d > dist[v as usize] {
                continue;
            }
            let lo = csr.offsets[v as usize] as usize;
            for (k, &u) in csr.neighbors(v as usize).iter().enumerate() {
                let alt = d + weight[lo + k];
                if alt < dist[u as usize] {
                    dist[u as usize] = alt;
                    heap.push(Reverse((alt, u)));
                }
            }
        }
        dist
    }

    #[test]
    fn the_distances_are_dijkstras() {
        for graph in ["rmat", "random"] {
            let mut s = Sssp::new(&params("sssp", &[("graph", graph), ("scale", "10"), ("edgefactor", "4")], 8)).unwrap();
            let ks = drain(&mut s);
            assert_eq!(s.dist, dijkstra(&s.g.csr, &s.weight, s.root), "{graph}");
            assert!(ks.len() >= 2, "{graph}: {} launches", ks.len());
            assert!(s.dist.iter().filter(|&&d| d != NONE).count() > 100, "{graph}");
        }
    }

    #[test]
    fn weights_are_the_same_both_ways() {
        let s = Sssp::new(&params("sssp", &[("scale", "8")], 3)).unwrap();
        let csr = &s.g.csr;
        for (k, (u, v)) in csr.entries().enumerate() {
            let back = csr.offsets[v as usize] as usize + csr.neighbors(v as usize).binary_search(&u).unwrap();
            assert_eq!(s.weight[k], s.weight[back]);
            assert!((1..=MAX_WEIGHT).contains(&s.weight[k]));
        }
    }
}
