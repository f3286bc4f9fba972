//! `bfs_data`: breadth-first search levels, data-driven: a thread per
//! frontier vertex from a worklist, one kernel launch per level (the
//! Lonestar-GPU / GraphBIG data-driven BFS with a frontier queue).
//!
//! ## What it models
//! Launch `L` (from 0) gives a thread to each vertex of the input queue
//! (the level-`L` frontier, whose length the host read back). A thread walks
//! its vertex's neighbour list; for a neighbour whose level it loads as
//! unvisited it claims the neighbour with `atomicCAS(&level[u], ∞, L + 1)`,
//! and the winner pushes it: `atomicAdd(&tail, 1)` for a slot, then a store
//! to the output queue. Lanes of a warp that load the same unvisited
//! neighbour all try the CAS; the first in lane order wins. Pushes are per
//! lane (not warp-aggregated). The host swaps the queues, resets `tail`
//! (a copy, not emitted) and launches again while the new frontier is not
//! empty, so only frontier vertices get threads: the last launch is the
//! deepest level's, which pushes nothing. Levels are `u32`, unvisited
//! `u32::MAX`; each vertex enters the queues once, at its BFS level. The
//! root is [`super::bfs`]'s (a vertex of degree at least 1 drawn from
//! `gpu.bfs.root`), so given the same seed and graph the levels and the
//! launches are `bfs`'s.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `level` (`u32 × n`), `queue0`, `queue1` (`u32 × n` each: launch
//! `L` reads `queue[L % 2]` and writes the other), `tail` (4 bytes). The
//! initial level array and the root in `queue0` are copies, not emitted.
//! Launch: `ceil(frontier / block)` blocks of `block` threads, 20 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `i < frontier`;
//! in range 1 + load `queue[i]`, 1 + load `row[v]` + load `row[v + 1]`, then
//! per neighbour the loop test (compare, branch), 1 + load `col[j]`, 1 +
//! load `level[u]`, compare and branch on unvisited, for those 1 + atomic
//! CAS on `level[u]`, compare and branch on the CAS won, for the winners
//! atomic add on `tail`, 1 + store `queue[slot]`; then 1 (`j++`); the
//! loop's last test; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use super::bfs::Start;
use super::neighbours::Neighbours;
use super::{
    covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::workload::gpu::{Kernel, Space};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bfs_data",
    summary: "breadth-first search levels, data-driven: thread per frontier vertex, queue with an atomic tail",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + 3 * covered(4 * g.vertices()) + covered(4))
    },
    build: |p| Ok(Box::new(BfsData::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[GRAPH_PARAM, SCALE_PARAM, EDGEFACTOR_PBBS, BLOCK_PARAM];

pub struct BfsData {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    level_at: u64,
    queue_at: [u64; 2],
    tail_at: u64,
    pub root: u32,
    /// Each vertex's level as the launches so far left it.
    pub level: Vec<u32>,
    /// The frontier the next launch expands.
    frontier: Vec<u32>,
}

impl BfsData {
    pub fn new(p: &Params) -> Result<BfsData> {
        let g = graph_input(p)?;
        let block = vertex_block(p, &g)?;
        let Start { mut heap, g, level_at, root, level } = Start::new(p, &g);
        let n = g.n();
        let queue_at = [heap.alloc("queue0", 4 * n), heap.alloc("queue1", 4 * n)];
        let tail_at = heap.alloc("tail", 4);
        Ok(BfsData {
            launches: Launches::new(heap.allocations),
            block,
            g,
            level_at,
            queue_at,
            tail_at,
            root,
            level,
            frontier: vec![root],
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, level_at, tail_at) = (self.block, self.level_at, self.tail_at);
        let cur = id - 1;
        let (in_at, out_at) = (self.queue_at[cur as usize % 2], self.queue_at[1 - cur as usize % 2]);
        let g = &self.g;
        let (level, frontier) = (&mut self.level, &self.frontier);
        let len = frontier.len() as u64;
        let mut next: Vec<u32> = Vec::new();
        let k = thread_per_item("bfs_data", id, len, bs, 20, |w, i0| {
            let i = |l: u32| i0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 4, |l| in_at + 4 * i(l));
            let v = |l: u32| frontier[i(l) as usize] as u64;
            w.alu(1);
            Neighbours::load(w, g, v).walk(w, g, |w, _, u| {
                w.alu(1);
                w.load(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                let fresh = w.if_begin(|l| level[u[l as usize] as usize] == NONE);
                w.alu(1);
                w.atomic(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                let mut won = [false; 32];
                for l in w.active() {
                    let t = &mut level[u[l as usize] as usize];
                    won[l as usize] = *t == NONE;
                    if *t == NONE {
                        *t = cur + 1;
                    }
                }
                let claimed = w.if_begin(|l| won[l as usize]);
                w.atomic(Space::Global, 4, |_| tail_at);
                let slot = next.len() as u64;
                w.alu(1);
                w.store(Space::Global, 4, |l| out_at + 4 * (slot + push_rank(&won, l)));
                for l in w.active() {
                    next.push(u[l as usize] as u32);
                }
                w.if_end(claimed);
                w.if_end(fresh);
            });
        });
        self.frontier = next;
        k
    }
}

/// Lane `l`'s place among the winning lanes before it (its tail slot
/// within the warp's pushes, lanes' atomics applying in lane order).
fn push_rank(won: &[bool; 32], l: u32) -> u64 {
    won[..l as usize].iter().filter(|&&x| x).count() as u64
}

launches!(BfsData, |k: &BfsData| k.frontier.is_empty());

#[cfg(test)]
mod tests {
    use super::super::bfs::tests::check_against_bfs;
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_levels_are_the_topology_driven_bfss() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut b = BfsData::new(&params("bfs_data", &given, 8)).unwrap();
            let ks = drain(&mut b);
            check_against_bfs(&given, b.root, &b.level, ks.len());
            // One thread per frontier vertex, one push per visited vertex but the root.
            let visited = b.level.iter().filter(|&&l| l != NONE).count();
            let threads: usize = ks.iter().map(|k| k.grid[0] as usize).sum::<usize>() * 256;
            assert!(threads >= visited && threads < visited + 256 * ks.len(), "{graph}");
            let tail = ks
                .iter()
                .flat_map(|k| &k.blocks)
                .flat_map(|b| &b.warps)
                .flat_map(|w| w.iter())
                .filter(|(i, a)| i.op == Op::Atomic && a[0] == b.tail_at)
                .map(|(i, _)| i.lanes() as usize)
                .sum::<usize>();
            assert_eq!(tail, visited - 1, "{graph}");
        }
    }
}
