//! `pagerank`: PageRank by pull, one thread per vertex, each iteration two
//! launches (the GAP / Gunrock pull formulation).
//!
//! ## What it models
//! Per iteration, `pr_contrib` gives each vertex `contrib[v] = rank[v] /
//! degree(v)` (0 for an isolated vertex), and `pr_pull` gives each vertex
//! `rank[v] = (1 - d) / n + d · Σ contrib[u]` over its neighbours `u` in
//! list order (`d` = 0.85). The graph is undirected, so in- and
//! out-neighbours are the same list. The pull's gathers of `contrib[u]`
//! are the irregular accesses; its lanes loop as long as their warp's
//! largest degree. Ranks start at `1 / n` (copied in, not emitted). All
//! arithmetic is `f32`, in a fixed order, so ranks are exact against a host
//! power iteration doing the same operations.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `rank` (`f32 × n`), `contrib` (`f32 × n`).
//! Launches: `iterations` × (`pr_contrib`, `pr_pull`), `ceil(n / block)`
//! blocks of `block` threads, 12 and 16 registers.
//!
//! Instructions per thread, `pr_contrib`: 3 index, compare and branch on
//! `v < n`; in range 1 + load `rank[v]` + load `row[v]` + load `row[v + 1]`,
//! 2 (degree, zero test), 1 `SFU` (reciprocal), 1 (multiply), store
//! `contrib[v]`; `EXIT`. `pr_pull`: 3 index, compare and branch; in range
//! 1 + load `row[v]` + load `row[v + 1]`, 1 (`sum = 0`), per neighbour the loop
//! test (compare, branch), 1 + load `col[j]`, 1 + load `contrib[u]`, `FADD`,
//! 1 (`j++`); the loop's last test; 2 (`FFMA`, address) + store `rank[v]`;
//! `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `iterations` (default 5), `block` threads per block (default 256).

use super::neighbours::Neighbours;
use super::{
    covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::workload::gpu::{Allocation, Kernel, KernelSource, Space};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "pagerank",
    summary: "PageRank by pull, thread per vertex, two launches per iteration",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + 2 * covered(4 * g.vertices()))
    },
    build: |p| Ok(Box::new(PageRank::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    GRAPH_PARAM,
    SCALE_PARAM,
    EDGEFACTOR_PBBS,
    ParamDoc { name: "iterations", default: "5", doc: "power iterations, 1 to 1000" },
    BLOCK_PARAM,
];

/// Damping factor.
pub const DAMPING: f32 = 0.85;

pub struct PageRank {
    launches: Launches,
    block: u32,
    iterations: u32,
    g: DeviceCsr,
    rank_at: u64,
    contrib_at: u64,
    /// Ranks as the launches so far left them.
    pub rank: Vec<f32>,
    contrib: Vec<f32>,
}

impl PageRank {
    pub fn new(p: &Params) -> Result<PageRank> {
        let g = graph_input(p)?;
        let iterations = p.count_in("iterations", 1, 1000)? as u32;
        let block = vertex_block(p, &g)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        let n = g.n();
        let rank_at = heap.alloc("rank", 4 * n);
        let contrib_at = heap.alloc("contrib", 4 * n);
        Ok(PageRank {
            launches: Launches::new(heap.allocations),
            block,
            iterations,
            g,
            rank_at,
            contrib_at,
            rank: vec![1.0 / n as f32; n as usize],
            contrib: vec![0.0; n as usize],
        })
    }

    fn contrib(&mut self, id: u32) -> Kernel {
        let (bs, rank_at, contrib_at) = (self.block, self.rank_at, self.contrib_at);
        let g = &self.g;
        let n = g.n();
        let (rank, contrib) = (&self.rank, &mut self.contrib);
        thread_per_item("pr_contrib", id, n, bs, 12, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 4, |l| rank_at + 4 * v(l));
            w.load(Space::Global, 4, |l| g.row + 4 * v(l));
            w.load(Space::Global, 4, |l| g.row + 4 * (v(l) + 1));
            w.alu(2);
            w.sfu(1);
            w.alu(1);
            w.store(Space::Global, 4, |l| contrib_at + 4 * v(l));
            for l in w.active() {
                let (lo, hi) = g.span(v(l));
                let i = v(l) as usize;
                contrib[i] = if hi > lo { rank[i] / (hi - lo) as f32 } else { 0.0 };
            }
        })
    }

    fn pull(&mut self, id: u32) -> Kernel {
        let (bs, rank_at, contrib_at) = (self.block, self.rank_at, self.contrib_at);
        let g = &self.g;
        let n = g.n();
        let base = (1.0 - DAMPING) / n as f32;
        let (rank, contrib) = (&mut self.rank, &self.contrib);
        thread_per_item("pr_pull", id, n, bs, 16, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            let mut sum = [0f32; 32];
            w.alu(1);
            let neighbours = Neighbours::load(w, g, v);
            w.alu(1);
            neighbours.walk(w, g, |w, _, u| {
                w.alu(1);
                w.load(Space::Global, 4, |l| contrib_at + 4 * u[l as usize]);
                w.alu(1);
                for l in w.active() {
                    sum[l as usize] += contrib[u[l as usize] as usize];
                }
            });
            w.alu(2);
            w.store(Space::Global, 4, |l| rank_at + 4 * v(l));
            for l in w.active() {
                rank[v(l) as usize] = DAMPING.mul_add(sum[l as usize], base);
            }
        })
    }
}

impl KernelSource for PageRank {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        if self.launches.issued == 2 * self.iterations {
            return Ok(None);
        }
        let id = self.launches.next_id();
        Ok(Some(if id % 2 == 1 { self.contrib(id) } else { self.pull(id) }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_ranks_are_a_host_power_iterations() {
        let mut pr = PageRank::new(&params("pagerank", &[("scale", "9"), ("iterations", "4")], 5)).unwrap();
        let ks = drain(&mut pr);
        let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["pr_contrib", "pr_pull"].repeat(4));
        let csr = &pr.g.csr;
        let n = csr.n();
        let mut rank = vec![1.0 / n as f32; n];
        for _ in 0..4 {
            let contrib: Vec<f32> =
                (0..n).map(|v| if csr.degree(v) > 0 { rank[v] / csr.degree(v) as f32 } else { 0.0 }).collect();
            for (v, r) in rank.iter_mut().enumerate() {
                let sum = csr.neighbors(v).iter().fold(0f32, |s, &u| s + contrib[u as usize]);
                *r = DAMPING.mul_add(sum, (1.0 - DAMPING) / n as f32);
            }
        }
        assert_eq!(pr.rank, rank);
    }
}
