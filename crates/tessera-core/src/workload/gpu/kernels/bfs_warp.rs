//! `bfs_warp`: breadth-first search levels, warp-centric and
//! topology-driven, one kernel launch per level (Hong et al., PPoPP 2011,
//! with a whole warp per vertex; GraphBIG's warp-centric BFS).
//!
//! ## What it models
//! Launch `L` (from 0) gives every vertex a warp; a warp whose vertex has
//! level `L` walks its neighbour list with its 32 lanes in stride (lane `i`
//! takes entries `i`, `i + 32`, …), so the `col` loads are coalesced and a
//! high-degree vertex no longer serialises one lane, and gives level `L + 1`
//! to every neighbour still unvisited, setting the `changed` flag. The host
//! launches level after level until a launch changes nothing (that last
//! launch is included). Every lane loads its vertex's `level`, `row[v]` and
//! `row[v + 1]` (one address per warp: a broadcast). Levels are `u32`,
//! unvisited `u32::MAX`. The root is [`super::bfs`]'s (a vertex of degree
//! at least 1 drawn from `gpu.bfs.root`), so given the same seed and graph
//! the levels and the launches are `bfs`'s.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `level` (`u32 × n`), `changed` (4 bytes). The host's initial
//! level array and flag resets are copies, not emitted.
//! Launch: `ceil(32 n / block)` blocks of `block` threads (`block / 32`
//! vertices per block), 16 registers.
//!
//! Instructions per thread: 4 (warp index, lane), compare and branch on
//! `v < n` (uniform in the warp); 1 + load `level[v]`, compare and branch
//! on `level[v] == L`; on the frontier 1 + load `row[v]` + load `row[v + 1]`,
//! 1 (`j = row[v] + lane`), then per stride the loop test (compare, branch),
//! 1 + load `col[j]`, 1 + load `level[u]`, compare and branch on unvisited,
//! for those 1 + store `level[u]` + store `changed`, then 1 (`j += 32`); the
//! loop's last test; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (a multiple of 32, default 256).

use super::bfs::{visit, Start};
use super::neighbours::Neighbours;
use super::simt::Block;
use super::{block_size, blocks_for, graph_input, launch, DeviceCsr, GpuKernelInfo, Launches};
use crate::error::{Error, Result};
use crate::workload::gpu::{Kernel, Space, WARP_SIZE};
use crate::workload::Params;

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bfs_warp",
    summary: "breadth-first search levels, warp per vertex (lanes stride its neighbours), one launch per level",
    // bfs's parameters and buffers: only the launch differs.
    params: super::bfs::INFO.params,
    footprint: super::bfs::INFO.footprint,
    build: |p| Ok(Box::new(BfsWarp::new(p)?)),
};

pub struct BfsWarp {
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

impl BfsWarp {
    pub fn new(p: &Params) -> Result<BfsWarp> {
        let g = graph_input(p)?;
        let block = block_size(p)?;
        if block % WARP_SIZE != 0 {
            return Err(Error::config(p.key_path("block"), format!("{block} threads: a warp per vertex needs whole warps")));
        }
        blocks_for(p, WARP_SIZE as u64 * g.vertices(), block)?;
        let Start { mut heap, g, level_at, root, level } = Start::new(p, &g);
        let changed_at = heap.alloc("changed", 4);
        Ok(BfsWarp { launches: Launches::new(heap.allocations), block, g, level_at, changed_at, root, level, changed: true })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, level_at, changed_at) = (self.block, self.level_at, self.changed_at);
        let cur = id - 1;
        let g = &self.g;
        let n = g.n();
        let per_block = (bs / WARP_SIZE) as u64;
        let grid = n.div_ceil(per_block) as u32;
        let level = &mut self.level;
        let mut changed = false;
        let k = launch("bfs_warp", id, [grid, 1, 1], [bs, 1, 1], 0, 16, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let v = per_block * bx as u64 + wi as u64;
                w.alu(4);
                let in_range = w.if_begin(|_| v < n);
                w.alu(1);
                w.load(Space::Global, 4, |_| level_at + 4 * v);
                let frontier = w.if_begin(|_| level[v as usize] == cur);
                w.alu(1);
                let neighbours = Neighbours::load(w, g, |_| v);
                w.alu(1);
                neighbours.strided(w).walk(w, g, |w, _, u| {
                    visit(w, u, level, [level_at, changed_at], cur + 1, &mut changed);
                });
                w.if_end(frontier);
                w.if_end(in_range);
            }
            block.finish()
        });
        self.changed = changed;
        k
    }
}

launches!(BfsWarp, |k: &BfsWarp| !k.changed);

#[cfg(test)]
mod tests {
    use super::super::bfs::tests::check_against_bfs;
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_levels_are_the_thread_centric_bfss() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut b = BfsWarp::new(&params("bfs_warp", &given, 8)).unwrap();
            let ks = drain(&mut b);
            check_against_bfs(&given, b.root, &b.level, ks.len());
            // Frontier warps' col loads are coalesced: consecutive lanes, consecutive entries.
            let col_loads: Vec<Vec<u64>> = ks
                .iter()
                .flat_map(|k| &k.blocks)
                .flat_map(|b| &b.warps)
                .flat_map(|w| w.iter())
                .filter(|(i, a)| i.op == Op::Load && a.len() > 1 && a[0] >= b.g.col && a[0] < b.level_at)
                .map(|(_, a)| a.to_vec())
                .collect();
            assert!(!col_loads.is_empty(), "{graph}");
            assert!(col_loads.iter().all(|a| a.windows(2).all(|p| p[1] == p[0] + 4)), "{graph}");
        }
    }
}
