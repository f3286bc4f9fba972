//! `graph_coloring`: graph colouring by Jones–Plassmann rounds, thread per
//! vertex, one kernel launch per colour (GraphBIG's GPU graph colouring:
//! an independent set of local maxima per round).
//!
//! ## What it models
//! Every vertex has a random `u32` priority (`gpu.graph_coloring.priority`;
//! on a tie the lower vertex id is higher, as in GraphBIG). Launch `r` (from 0) gives every vertex a
//! thread; a thread whose vertex is still uncoloured walks its neighbour
//! list and stops at the first neighbour that competes (uncoloured, or
//! coloured `r` in this same launch) with a higher priority. A vertex that
//! finds none is a local maximum and takes colour `r`; one that finds one
//! stays uncoloured and sets the `more` flag. The host launches round after
//! round while `more` is set, so there is one launch per colour. Counting a
//! neighbour coloured `r` as competing makes the round's set the local
//! maxima of the vertices uncoloured when it began, whatever order the
//! threads run in: the local maxima are independent, so the colouring is
//! proper, and every round colours at least the highest uncoloured vertex,
//! so it completes. Colours are `u32`, uncoloured `u32::MAX`.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `priority` (`u32 × n`), `color` (`u32 × n`), `more` (4 bytes).
//! Priorities and the initial colours are copies, not emitted.
//! Launch: `ceil(n / block)` blocks of `block` threads, 18 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `v < n`; 1 +
//! load `color[v]`, compare and branch on uncoloured; uncoloured 1 + load
//! `priority[v]` + load `row[v]` + load `row[v + 1]`, 1 (`max = true`), then
//! per neighbour looked at the loop test (compare, branch), 1 + load
//! `col[j]`, 1 + load `color[u]`, 1 + compare and branch on competing, for
//! those 1 + load `priority[u]`, compare and branch on higher, for those 1
//! (`max = false`); then 1 (`j++`); the loop's last test (`j < end &&
//! max`); compare and branch on `max`: the maxima 1 + store `color[v]` and
//! a branch over the `else`, the others a store of `more`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use std::cmp::Reverse;

use rand::Rng;

use super::{
    covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Kernel, Space};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "graph_coloring",
    summary: "graph colouring by Jones-Plassmann rounds (random priorities), thread per vertex, one launch per colour",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + 2 * covered(4 * g.vertices()) + covered(4))
    },
    build: |p| Ok(Box::new(GraphColoring::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[GRAPH_PARAM, SCALE_PARAM, EDGEFACTOR_PBBS, BLOCK_PARAM];

pub struct GraphColoring {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    priority_at: u64,
    color_at: u64,
    more_at: u64,
    pub priority: Vec<u32>,
    /// Each vertex's colour as the launches so far left it.
    pub color: Vec<u32>,
    /// Whether the last launch left a vertex uncoloured.
    more: bool,
}

impl GraphColoring {
    pub fn new(p: &Params) -> Result<GraphColoring> {
        let g = graph_input(p)?;
        let block = vertex_block(p, &g)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        let mut rng = component_rng(p.seed(), "gpu.graph_coloring.priority");
        let priority: Vec<u32> = (0..g.csr.n()).map(|_| rng.gen()).collect();
        let n = g.n();
        let priority_at = heap.alloc("priority", 4 * n);
        let color_at = heap.alloc("color", 4 * n);
        let more_at = heap.alloc("more", 4);
        Ok(GraphColoring {
            launches: Launches::new(heap.allocations),
            block,
            g,
            priority_at,
            color_at,
            more_at,
            priority,
            color: vec![NONE; n as usize],
            more: true,
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, priority_at, color_at, more_at) = (self.block, self.priority_at, self.color_at, self.more_at);
        let round = id - 1;
        let g = &self.g;
        let n = g.n();
        let (priority, color) = (&self.priority, &mut self.color);
        // Distinct, so exactly one of two neighbours is higher.
        let rank = |v: u64| (priority[v as usize], Reverse(v));
        let mut more = false;
        let k = thread_per_item("graph_coloring", id, n, bs, 18, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            let (mut j, mut end, mut u) = ([0u64; 32], [0u64; 32], [0u64; 32]);
            let mut max = [true; 32];
            w.alu(1);
            w.load(Space::Global, 4, |l| color_at + 4 * v(l));
            let open = w.if_begin(|l| color[v(l) as usize] == NONE);
            w.alu(1);
            w.load(Space::Global, 4, |l| priority_at + 4 * v(l));
            w.load(Space::Global, 4, |l| g.row + 4 * v(l));
            w.load(Space::Global, 4, |l| g.row + 4 * (v(l) + 1));
            w.alu(1);
            for l in w.active() {
                (j[l as usize], end[l as usize]) = g.span(v(l));
            }
            let mut lp = w.loop_begin();
            while w.loop_test(&mut lp, |l| j[l as usize] < end[l as usize] && max[l as usize]) {
                w.alu(1);
                w.load(Space::Global, 4, |l| g.col + 4 * j[l as usize]);
                for l in w.active() {
                    u[l as usize] = g.csr.targets[j[l as usize] as usize] as u64;
                }
                w.alu(1);
                w.load(Space::Global, 4, |l| color_at + 4 * u[l as usize]);
                w.alu(1);
                let competing = w.if_begin(|l| {
                    let c = color[u[l as usize] as usize];
                    c == NONE || c == round
                });
                w.alu(1);
                w.load(Space::Global, 4, |l| priority_at + 4 * u[l as usize]);
                let higher = w.if_begin(|l| rank(u[l as usize]) > rank(v(l)));
                w.alu(1);
                for l in w.active() {
                    max[l as usize] = false;
                }
                w.if_end(higher);
                w.if_end(competing);
                w.alu(1);
                for l in w.active() {
                    j[l as usize] += 1;
                }
            }
            let top = w.if_begin(|l| max[l as usize]);
            w.alu(1);
            w.store(Space::Global, 4, |l| color_at + 4 * v(l));
            for l in w.active() {
                color[v(l) as usize] = round;
            }
            w.if_else(&top);
            w.store(Space::Global, 4, |_| more_at);
            more |= w.mask() != 0;
            w.if_end(top);
            w.if_end(open);
        });
        self.more = more;
        k
    }
}

launches!(GraphColoring, |k: &GraphColoring| !k.more);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_colouring_is_proper_complete_and_the_host_rounds() {
        for graph in ["rmat", "random"] {
            let mut c = GraphColoring::new(&params("graph_coloring", &[("graph", graph), ("scale", "10"), ("edgefactor", "4")], 8)).unwrap();
            let ks = drain(&mut c);
            let csr = &c.g.csr;
            assert!(c.color.iter().all(|&x| x != NONE), "{graph}: incomplete");
            for (a, b) in csr.entries() {
                assert_ne!(c.color[a as usize], c.color[b as usize], "{graph}: edge {a}-{b}");
            }
            let colors = *c.color.iter().max().unwrap() + 1;
            assert_eq!(ks.len() as u32, colors, "{graph}: one launch per colour");
            // Host Jones-Plassmann: each round colours the local maxima among the uncoloured.
            let rank = |v: usize| (c.priority[v], Reverse(v));
            let mut want = vec![NONE; csr.n()];
            let mut round = 0;
            while want.contains(&NONE) {
                let maxima: Vec<usize> = (0..csr.n())
                    .filter(|&v| want[v] == NONE)
                    .filter(|&v| csr.neighbors(v).iter().all(|&u| want[u as usize] != NONE || rank(u as usize) < rank(v)))
                    .collect();
                for v in maxima {
                    want[v] = round;
                }
                round += 1;
            }
            assert_eq!(c.color, want, "{graph}");
            assert!(colors > 2, "{graph}");
        }
    }
}
