//! `bfs`: breadth-first search levels, thread-centric and topology-driven,
//! one kernel launch per level (the Lonestar-GPU / Rodinia style).
//!
//! ## What it models
//! Launch `L` (from 0) gives every vertex a thread; a thread whose vertex
//! has level `L` walks its neighbour list and gives level `L + 1` to every
//! neighbour still unvisited, setting the `changed` flag. The host launches
//! level after level until a launch changes nothing (that last launch is
//! included, as the host only learns it from the flag). Every launch reads
//! every vertex's level, so most threads of the early and late launches only
//! do that; the frontier's threads diverge on their degrees. Levels are
//! `u32`, unvisited `u32::MAX`; lanes of a warp that find the same unvisited
//! neighbour all store `L + 1` (the race is benign). The root is a vertex of
//! degree at least 1 drawn from `gpu.bfs.root`.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `level` (`u32 × n`), `changed` (4 bytes). The host's initial
//! level array and flag resets are copies, not emitted.
//! Launch: `ceil(n / block)` blocks of `block` threads, 16 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `v < n`; 1 +
//! load `level[v]`, compare and branch on `level[v] == L`; on the frontier
//! 1 + load `row[v]` + load `row[v + 1]`, then per neighbour the loop test
//! (compare, branch), 1 + load `col[j]`, 1 + load `level[u]`, compare and
//! branch on unvisited, for those 1 + store `level[u]` + store `changed`,
//! then 1 (`j++`); the loop's last test; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use super::simt::Block;
use super::{
    block_size, blocks_for, covered, csr_footprint, graph_input, launch, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::graph::{sample_roots, EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bfs",
    summary: "breadth-first search levels, thread per vertex, one launch per level",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + covered(4 * g.vertices()) + covered(4))
    },
    build: |p| Ok(Box::new(Bfs::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[GRAPH_PARAM, SCALE_PARAM, EDGEFACTOR_PBBS, BLOCK_PARAM];

pub struct Bfs {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    level_at: u64,
    changed_at: u64,
    pub root: u32,
    /// Each vertex's level as the launches so far left it.
    pub level: Vec<u32>,
    /// Whether the last launch visited a vertex.
    changed: bool,
}

impl Bfs {
    pub fn new(p: &Params) -> Result<Bfs> {
        let g = graph_input(p)?;
        let block = block_size(p)?;
        blocks_for(p, g.vertices(), block)?;
        let csr = g.csr(p.seed(), true);
        // A graph with no edge at all has no root of degree 1; vertex 0 then.
        let root = sample_roots(&csr.offsets, 1, &mut component_rng(p.seed(), "gpu.bfs.root")).first().copied().unwrap_or(0);
        let mut heap = Allocator::new(super::HEAP_BASE);
        let g = DeviceCsr::place(&mut heap, csr);
        let n = g.n();
        let level_at = heap.alloc("level", 4 * n);
        let changed_at = heap.alloc("changed", 4);
        let mut level = vec![NONE; n as usize];
        level[root as usize] = 0;
        Ok(Bfs { launches: Launches::new(heap.allocations), block, g, level_at, changed_at, root, level, changed: true })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, level_at, changed_at) = (self.block, self.level_at, self.changed_at);
        let cur = id - 1;
        let g = &self.g;
        let n = g.n();
        let grid = n.div_ceil(bs as u64) as u32;
        let level = &mut self.level;
        let mut changed = false;
        let k = launch("bfs", id, [grid, 1, 1], [bs, 1, 1], 0, 16, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let v = |l: u32| bs as u64 * bx as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                let (mut j, mut end, mut u) = ([0u64; 32], [0u64; 32], [0u64; 32]);
                w.alu(3);
                let in_range = w.if_begin(|l| v(l) < n);
                w.alu(1);
                w.load(Space::Global, 4, |l| level_at + 4 * v(l));
                let frontier = w.if_begin(|l| level[v(l) as usize] == cur);
                w.alu(1);
                w.load(Space::Global, 4, |l| g.row + 4 * v(l));
                w.load(Space::Global, 4, |l| g.row + 4 * (v(l) + 1));
                for l in w.active() {
                    (j[l as usize], end[l as usize]) = g.span(v(l));
                }
                let mut lp = w.loop_begin();
                while w.loop_test(&mut lp, |l| j[l as usize] < end[l as usize]) {
                    w.alu(1);
                    w.load(Space::Global, 4, |l| g.col + 4 * j[l as usize]);
                    for l in w.active() {
                        u[l as usize] = g.csr.targets[j[l as usize] as usize] as u64;
                    }
                    w.alu(1);
                    w.load(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                    let fresh = w.if_begin(|l| level[u[l as usize] as usize] == NONE);
                    w.alu(1);
                    w.store(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                    w.store(Space::Global, 4, |_| changed_at);
                    for l in w.active() {
                        level[u[l as usize] as usize] = cur + 1;
                        changed = true;
                    }
                    w.if_end(fresh);
                    w.alu(1);
                    for l in w.active() {
                        j[l as usize] += 1;
                    }
                }
                w.if_end(frontier);
                w.if_end(in_range);
            }
            block.finish()
        });
        self.changed = changed;
        k
    }
}

launches!(Bfs, |k: &Bfs| !k.changed);

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_levels_are_a_sequential_bfss() {
        for graph in ["rmat", "random"] {
            let mut b = Bfs::new(&params("bfs", &[("graph", graph), ("scale", "10"), ("edgefactor", "4")], 8)).unwrap();
            let ks = drain(&mut b);
            let mut want = vec![NONE; b.g.n() as usize];
            want[b.root as usize] = 0;
            let mut queue = VecDeque::from([b.root]);
            while let Some(v) = queue.pop_front() {
                for &u in b.g.csr.neighbors(v as usize) {
                    if want[u as usize] == NONE {
                        want[u as usize] = want[v as usize] + 1;
                        queue.push_back(u);
                    }
                }
            }
            assert_eq!(b.level, want, "{graph}");
            let deepest = *want.iter().filter(|&&l| l != NONE).max().unwrap();
            // One launch per level; the deepest level's finds nothing new.
            assert_eq!(ks.len() as u32, deepest + 1, "{graph}");
        }
    }
}
