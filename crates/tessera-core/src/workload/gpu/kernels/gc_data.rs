//! `gc_data`: graph colouring by Jones–Plassmann rounds, data-driven: a
//! thread per vertex of a worklist of the uncoloured, one kernel launch per
//! colour (GraphBIG's GC "data-driven thread-centric", GC-DTC; Nai et al.,
//! "GraphBIG: understanding graph computing in the context of industrial
//! solutions", SC 2015, after Grosset et al., "Evaluating graph coloring on
//! GPUs", PPoPP 2011 poster).
//!
//! ## What it models
//! The colouring of [`super::graph_coloring`] (GC-TTC) with the launch
//! driven by data: launch `r` (from 0) gives a thread to each entry of the
//! input worklist (at first every vertex, copied in). A thread loads the
//! worklist's length (`end`, a broadcast load) and returns past it, loads
//! its vertex `v` from the list and, if `v` is still uncoloured, walks its
//! neighbour list, skipping neighbours coloured in an earlier round and
//! stopping at the first competing one (uncoloured, or coloured `r` in this
//! launch) with a higher priority. A vertex that finds none takes colour
//! `r`; one that finds one pushes itself on the output worklist
//! (`atomicAdd(&out_end, 1)` for a slot, then a store). Lanes' atomics
//! apply in lane order. The host swaps the worklists, reads the new length,
//! clears the other's `end` (a copy, not emitted) and launches while the
//! new list is not empty, so a launch has as many threads as vertices left
//! uncoloured. Priorities are `graph_coloring`'s (`u32` from
//! `gpu.graph_coloring.priority`, a tie going to the lower vertex id), and
//! the rule for a competing neighbour is the same, so given the same seed
//! and graph the colours and the number of launches are `graph_coloring`'s.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `priority` (`u32 × n`), `color` (`u32 × n`), `items0`, `end0`,
//! `items1`, `end1` (worklists of `worklist` `u32` entries with a 4-byte
//! length each: launch `r` reads list `r % 2` and pushes on the other).
//! GraphBIG's
//! worklists have a fixed 8,777,216 `u64` entries (67 MiB each, whatever
//! the graph) and its graph is `u64` arrays; here a worklist holds `n`
//! `u32` entries (the most it can need) unless `worklist` says more, and
//! the graph is the `u32` CSR of the other graph kernels. Priorities, the
//! first worklist and the initial colours are copies, not emitted.
//! Launch: `ceil(items / block)` blocks of `block` threads, 20 registers.
//!
//! Instructions per thread: 3 index, 1 + load `end` (input), compare and
//! branch on `i < end`; in range 1 + load `items[i]`, 1 + load `color[v]`,
//! compare and branch on uncoloured; uncoloured 1 + load `row[v]` + load
//! `row[v + 1]` + load `priority[v]`, 1 (`found = false`), then per
//! neighbour looked at the loop test (`j < end && !found`: compare,
//! branch), 1 + load `col[j]`, 1 + load `color[u]`, compare and branch on
//! competing (`color[u] >= r`), for those 1 + load `priority[u]`, compare
//! and branch on higher, for those 1 (`found = true`); then 1 (`j++`); the
//! loop's last test; compare and branch on `!found`: those 1 + store
//! `color[v]` and a branch over the `else`, the others atomic add on the
//! output `end`, 1 + store `items[slot]`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `worklist` entries per worklist (default 0: one per vertex),
//! `block` threads per block (default 256).

use std::cmp::Reverse;

use rand::Rng;

use super::bfs_data_warp::{worklist_entries, WORKLIST_PARAM};
use super::simt::Block;
use super::{
    covered, csr_footprint, graph_input, launch, vertex_block, DeviceCsr, GpuKernelInfo, Launches, BLOCK_PARAM,
    SCALE_PARAM,
};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Kernel, Space, WARP_SIZE};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "gc_data",
    summary: "graph colouring by Jones-Plassmann rounds, data-driven: thread per uncoloured vertex from a worklist, one launch per colour",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + 2 * covered(4 * g.vertices()) + 2 * (covered(4 * worklist_entries(p, &g)?) + covered(4)))
    },
    build: |p| Ok(Box::new(GcData::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[GRAPH_PARAM, SCALE_PARAM, EDGEFACTOR_PBBS, WORKLIST_PARAM, BLOCK_PARAM];

pub struct GcData {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    priority_at: u64,
    color_at: u64,
    /// Each worklist's entries and its length.
    list_at: [(u64, u64); 2],
    pub priority: Vec<u32>,
    /// Each vertex's colour as the launches so far left it.
    pub color: Vec<u32>,
    /// The worklist the next launch reads.
    worklist: Vec<u32>,
}

impl GcData {
    pub fn new(p: &Params) -> Result<GcData> {
        let g = graph_input(p)?;
        let entries = worklist_entries(p, &g)?;
        let block = vertex_block(p, &g)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        // graph_coloring's priorities, so that the two variants colour alike.
        let mut rng = component_rng(p.seed(), "gpu.graph_coloring.priority");
        let priority: Vec<u32> = (0..g.csr.n()).map(|_| rng.gen()).collect();
        let n = g.n();
        let priority_at = heap.alloc("priority", 4 * n);
        let color_at = heap.alloc("color", 4 * n);
        let mut list = |i: usize| (heap.alloc(&format!("items{i}"), 4 * entries), heap.alloc(&format!("end{i}"), 4));
        let list_at = [list(0), list(1)];
        Ok(GcData {
            launches: Launches::new(heap.allocations),
            block,
            g,
            priority_at,
            color_at,
            list_at,
            priority,
            color: vec![NONE; n as usize],
            worklist: (0..n as u32).collect(),
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, priority_at, color_at) = (self.block, self.priority_at, self.color_at);
        let round = id - 1;
        let ((in_items, in_end), (out_items, out_end)) =
            (self.list_at[round as usize % 2], self.list_at[1 - round as usize % 2]);
        let g = &self.g;
        let (priority, color, worklist) = (&self.priority, &mut self.color, &self.worklist);
        let rank = |v: u64| (priority[v as usize], Reverse(v));
        let items = worklist.len() as u64;
        let mut pushed: Vec<u32> = Vec::new();
        let grid = items.div_ceil(bs as u64).max(1) as u32;
        let k = launch("gc_data", id, [grid, 1, 1], [bs, 1, 1], 0, 20, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let i0 = bs as u64 * bx as u64 + wi as u64 * WARP_SIZE as u64;
                let i = |l: u32| i0 + l as u64;
                w.alu(3);
                w.alu(1);
                w.load(Space::Global, 4, |_| in_end);
                let in_range = w.if_begin(|l| i(l) < items);
                let v = |l: u32| worklist[i(l) as usize] as u64;
                w.alu(1);
                w.load(Space::Global, 4, |l| in_items + 4 * i(l));
                w.alu(1);
                w.load(Space::Global, 4, |l| color_at + 4 * v(l));
                let open = w.if_begin(|l| color[v(l) as usize] == NONE);
                let (mut j, mut end, mut u) = ([0u64; 32], [0u64; 32], [0u64; 32]);
                let mut found = [false; 32];
                w.alu(1);
                w.load(Space::Global, 4, |l| g.row + 4 * v(l));
                w.load(Space::Global, 4, |l| g.row + 4 * (v(l) + 1));
                w.load(Space::Global, 4, |l| priority_at + 4 * v(l));
                w.alu(1);
                for l in w.active() {
                    (j[l as usize], end[l as usize]) = g.span(v(l));
                }
                let mut lp = w.loop_begin();
                while w.loop_test(&mut lp, |l| j[l as usize] < end[l as usize] && !found[l as usize]) {
                    w.alu(1);
                    w.load(Space::Global, 4, |l| g.col + 4 * j[l as usize]);
                    for l in w.active() {
                        u[l as usize] = g.csr.targets[j[l as usize] as usize] as u64;
                    }
                    w.alu(1);
                    w.load(Space::Global, 4, |l| color_at + 4 * u[l as usize]);
                    // Colours of earlier rounds are below `round`; uncoloured is above.
                    let competing = w.if_begin(|l| color[u[l as usize] as usize] >= round);
                    w.alu(1);
                    w.load(Space::Global, 4, |l| priority_at + 4 * u[l as usize]);
                    let higher = w.if_begin(|l| rank(u[l as usize]) > rank(v(l)));
                    w.alu(1);
                    for l in w.active() {
                        found[l as usize] = true;
                    }
                    w.if_end(higher);
                    w.if_end(competing);
                    w.alu(1);
                    for l in w.active() {
                        j[l as usize] += 1;
                    }
                }
                let top = w.if_begin(|l| !found[l as usize]);
                w.alu(1);
                w.store(Space::Global, 4, |l| color_at + 4 * v(l));
                for l in w.active() {
                    color[v(l) as usize] = round;
                }
                w.if_else(&top);
                w.atomic(Space::Global, 4, |_| out_end);
                let slot = pushed.len() as u64;
                w.alu(1);
                let mut rank_in_warp = 0;
                w.store(Space::Global, 4, |_| {
                    rank_in_warp += 1;
                    out_items + 4 * (slot + rank_in_warp - 1)
                });
                for l in w.active() {
                    pushed.push(v(l) as u32);
                }
                w.if_end(top);
                w.if_end(open);
                w.if_end(in_range);
            }
            block.finish()
        });
        self.worklist = pushed;
        k
    }
}

launches!(GcData, |k: &GcData| k.worklist.is_empty());

#[cfg(test)]
mod tests {
    use super::super::graph_coloring::GraphColoring;
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_colouring_is_the_topology_driven_ones_with_a_thread_per_uncoloured_vertex() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut d = GcData::new(&params("gc_data", &given, 8)).unwrap();
            let kd = drain(&mut d);
            let mut t = GraphColoring::new(&params("graph_coloring", &given, 8)).unwrap();
            let kt = drain(&mut t);
            assert_eq!(d.color, t.color, "{graph}");
            assert_eq!(kd.len(), kt.len(), "{graph}");
            for (a, b) in d.g.csr.entries() {
                assert_ne!(d.color[a as usize], d.color[b as usize], "{graph}: edge {a}-{b}");
            }
            // Launch r has a thread per vertex uncoloured before it, in whole blocks.
            for (r, k) in kd.iter().enumerate() {
                let left = d.color.iter().filter(|&&c| c >= r as u32).count();
                assert_eq!(k.grid[0] as usize, left.div_ceil(256), "{graph}: launch {r}");
            }
            assert!(kd.len() > 2, "{graph}");
        }
    }
}
