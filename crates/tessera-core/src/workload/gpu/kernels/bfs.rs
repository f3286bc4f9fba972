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

use super::neighbours::Neighbours;
use super::simt::Warp;
use super::{
    covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::workload::gpu::{Allocator, Kernel, Space};
use crate::workload::graph::{GraphInput, EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
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
        let block = vertex_block(p, &g)?;
        let Start { mut heap, g, level_at, root, level } = Start::new(p, &g);
        let changed_at = heap.alloc("changed", 4);
        Ok(Bfs { launches: Launches::new(heap.allocations), block, g, level_at, changed_at, root, level, changed: true })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, level_at, changed_at) = (self.block, self.level_at, self.changed_at);
        let cur = id - 1;
        let g = &self.g;
        let n = g.n();
        let level = &mut self.level;
        let mut changed = false;
        let k = thread_per_item("bfs", id, n, bs, 16, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 4, |l| level_at + 4 * v(l));
            let frontier = w.if_begin(|l| level[v(l) as usize] == cur);
            w.alu(1);
            Neighbours::load(w, g, v).walk(w, g, |w, _, u| {
                visit(w, u, level, [level_at, changed_at], cur + 1, &mut changed);
            });
            w.if_end(frontier);
        });
        self.changed = changed;
        k
    }
}

/// What every BFS variant starts from: the graph placed, then `level`
/// (`u32 × n`), unvisited but for the root at level 0. The root is drawn
/// from `gpu.bfs.root` whatever the variant, so that given the same seed
/// and graph the variants search from the same vertex and can be compared.
pub(super) struct Start {
    pub heap: Allocator,
    pub g: DeviceCsr,
    pub level_at: u64,
    pub root: u32,
    pub level: Vec<u32>,
}

impl Start {
    pub fn new(p: &Params, input: &GraphInput) -> Start {
        let (mut heap, g) = DeviceCsr::generate(p, input);
        let root = g.root(p.seed(), "gpu.bfs.root");
        let n = g.n();
        let level_at = heap.alloc("level", 4 * n);
        let mut level = vec![NONE; n as usize];
        level[root as usize] = 0;
        Start { heap, g, level_at, root, level }
    }
}

/// The topology-driven visit of each active lane's neighbour `u`:
/// `if (level[u] == ∞) { level[u] = next; *changed = 1; }`, with `at` the
/// addresses of `level` and `changed`. Lanes that find the same neighbour
/// all store `next`; the race is benign. Brandes' forward phase ([`super::bc`])
/// visits the same way before it counts paths.
pub(super) fn visit(w: &mut Warp, u: &[u64; 32], level: &mut [u32], at: [u64; 2], next: u32, changed: &mut bool) {
    let [level_at, changed_at] = at;
    w.alu(1);
    w.load(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
    let fresh = w.if_begin(|l| level[u[l as usize] as usize] == NONE);
    w.alu(1);
    w.store(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
    w.store(Space::Global, 4, |_| changed_at);
    for l in w.active() {
        level[u[l as usize] as usize] = next;
        *changed = true;
    }
    w.if_end(fresh);
}

launches!(Bfs, |k: &Bfs| !k.changed);

#[cfg(test)]
pub(super) mod tests {
    use std::collections::VecDeque;

    use super::super::tests::{drain, params};
    use super::*;

    /// Check a BFS variant's run on `given` (seed 8) against `bfs`'s: the
    /// same root, the same levels, as many launches.
    pub fn check_against_bfs(given: &[(&str, &str)], root: u32, level: &[u32], launches: usize) {
        let mut t = Bfs::new(&params("bfs", given, 8)).unwrap();
        let kt = drain(&mut t);
        assert_eq!(root, t.root, "{given:?}");
        assert_eq!(level, t.level, "{given:?}");
        assert_eq!(launches, kt.len(), "{given:?}");
    }

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
