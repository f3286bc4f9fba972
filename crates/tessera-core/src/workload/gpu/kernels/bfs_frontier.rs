//! `bfs_frontier`: breadth-first search levels, topology-driven with
//! frontier flag arrays, two kernel launches per level (GraphBIG's BFS
//! "topological frontier", BFS-TF; Nai et al., "GraphBIG: understanding
//! graph computing in the context of industrial solutions", SC 2015, after
//! Harish and Narayanan, HiPC 2007).
//!
//! ## What it models
//! Three `bool` arrays per vertex: `frontier` (this level's vertices),
//! `next` (the level being found) and `visited`. A level is two launches,
//! each giving every vertex a thread:
//! - `bfs_frontier_expand`: a thread whose vertex has its `frontier` flag
//!   clears it and walks its neighbour list; for each neighbour not yet
//!   `visited` it stores `level[u] = level[v] + 1` (reloading `level[v]`,
//!   which the stores may alias) and sets `next[u]`. No atomics: several
//!   frontier vertices may find the same neighbour and store the same level.
//! - `bfs_frontier_update`: a thread whose vertex has its `next` flag moves
//!   it into the frontier (`frontier`, `visited` set, `next` cleared) and
//!   sets the `over` flag.
//!
//! The host launches levels until an update sets nothing (that last level's
//! two launches are included), so there are twice as many launches as
//! [`super::bfs`] makes, and the levels are `bfs`'s: `visited` only changes
//! between expansions, so every vertex found in a level gets that level.
//! Levels are `u32`, unvisited `u32::MAX`. The root is [`super::bfs`]'s
//! (drawn from `gpu.bfs.root`): frontier, visited, level 0, copied in.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `level` (`u32 × n`), `frontier`, `next`, `visited` (`bool × n`
//! each), `over` (`bool`, 1 byte). The initial arrays and `over` resets are
//! copies, not emitted (GraphBIG clears them with an `initialize` kernel
//! before the graph is copied; it is left out as the other kernels' host
//! initialisations are). GraphBIG holds the graph as `u64` arrays;
//! Tessera's graph kernels share one `u32` CSR.
//! Launches: per level `bfs_frontier_expand` then `bfs_frontier_update`,
//! each `ceil(n / block)` blocks of `block` threads, 18 and 8 registers.
//!
//! Instructions per thread, `bfs_frontier_expand`: 3 index, compare and
//! branch on `v < n`; 1 + load `frontier[v]`, compare and branch on it; in
//! the frontier 1 + store `frontier[v]`, load `row[v]` + load `row[v + 1]`,
//! then per neighbour the loop test (compare, branch), 1 + load `col[j]`,
//! 1 + load `visited[u]`, compare and branch on not visited, for those load
//! `level[v]`, 1 (`+ 1`), 1 + store `level[u]`, store `next[u]`; then 1
//! (`j++`); the loop's last test; `EXIT`. `bfs_frontier_update`: 3 index,
//! compare and branch on `v < n`; 1 + load `next[v]`, compare and branch
//! on it; for those 1 + store `frontier[v]` + store `visited[v]` + store
//! `next[v]` + store `over`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use super::bfs::Start;
use super::neighbours::Neighbours;
use super::{covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches};
use crate::error::Result;
use crate::workload::gpu::{Allocation, Kernel, KernelSource, Space};
use crate::workload::Params;

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bfs_frontier",
    summary: "breadth-first search levels, topology-driven with frontier/next/visited flag arrays, two launches per level",
    params: super::bfs::INFO.params,
    footprint: |p| {
        let g = graph_input(p)?;
        let n = g.vertices();
        Ok(csr_footprint(&g) + covered(4 * n) + 3 * covered(n) + covered(1))
    },
    build: |p| Ok(Box::new(BfsFrontier::new(p)?)),
};

/// Device addresses of the per-vertex arrays and the flag.
#[derive(Copy, Clone)]
struct At {
    level: u64,
    frontier: u64,
    next: u64,
    visited: u64,
    over: u64,
}

pub struct BfsFrontier {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    at: At,
    pub root: u32,
    /// Each vertex's level as the launches so far left it.
    pub level: Vec<u32>,
    frontier: Vec<bool>,
    next: Vec<bool>,
    visited: Vec<bool>,
    /// Whether the last update moved a vertex into the frontier.
    over: bool,
}

impl BfsFrontier {
    pub fn new(p: &Params) -> Result<BfsFrontier> {
        let g = graph_input(p)?;
        let block = vertex_block(p, &g)?;
        let Start { mut heap, g, level_at, root, level } = Start::new(p, &g);
        let n = g.n();
        let at = At {
            level: level_at,
            frontier: heap.alloc("frontier", n),
            next: heap.alloc("next", n),
            visited: heap.alloc("visited", n),
            over: heap.alloc("over", 1),
        };
        let mut frontier = vec![false; n as usize];
        frontier[root as usize] = true;
        let visited = frontier.clone();
        Ok(BfsFrontier {
            launches: Launches::new(heap.allocations),
            block,
            g,
            at,
            root,
            level,
            frontier,
            next: vec![false; n as usize],
            visited,
            over: true,
        })
    }

    /// `bfs_frontier_expand`: the frontier's vertices mark their unvisited neighbours.
    fn expand(&mut self, id: u32) -> Kernel {
        let (bs, at) = (self.block, self.at);
        let g = &self.g;
        let (level, frontier, next, visited) = (&mut self.level, &mut self.frontier, &mut self.next, &self.visited);
        thread_per_item("bfs_frontier_expand", id, g.n(), bs, 18, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 1, |l| at.frontier + v(l));
            let on = w.if_begin(|l| frontier[v(l) as usize]);
            w.alu(1);
            w.store(Space::Global, 1, |l| at.frontier + v(l));
            for l in w.active() {
                frontier[v(l) as usize] = false;
            }
            Neighbours::load(w, g, v).walk(w, g, |w, _, u| {
                w.alu(1);
                w.load(Space::Global, 1, |l| at.visited + u[l as usize]);
                let fresh = w.if_begin(|l| !visited[u[l as usize] as usize]);
                w.load(Space::Global, 4, |l| at.level + 4 * v(l));
                w.alu(1);
                w.alu(1);
                w.store(Space::Global, 4, |l| at.level + 4 * u[l as usize]);
                w.store(Space::Global, 1, |l| at.next + u[l as usize]);
                for l in w.active() {
                    level[u[l as usize] as usize] = level[v(l) as usize] + 1;
                    next[u[l as usize] as usize] = true;
                }
                w.if_end(fresh);
            });
            w.if_end(on);
        })
    }

    /// `bfs_frontier_update`: the vertices found become the next frontier.
    fn update(&mut self, id: u32) -> Kernel {
        let (bs, at) = (self.block, self.at);
        let (frontier, next, visited) = (&mut self.frontier, &mut self.next, &mut self.visited);
        let mut over = false;
        let k = thread_per_item("bfs_frontier_update", id, self.g.n(), bs, 8, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 1, |l| at.next + v(l));
            let found = w.if_begin(|l| next[v(l) as usize]);
            w.alu(1);
            w.store(Space::Global, 1, |l| at.frontier + v(l));
            w.store(Space::Global, 1, |l| at.visited + v(l));
            w.store(Space::Global, 1, |l| at.next + v(l));
            w.store(Space::Global, 1, |_| at.over);
            for l in w.active() {
                let v = v(l) as usize;
                (frontier[v], visited[v], next[v]) = (true, true, false);
                over = true;
            }
            w.if_end(found);
        });
        self.over = over;
        k
    }
}

impl KernelSource for BfsFrontier {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        // A level is an expansion then an update; levels end after an update that found nothing.
        let level_done = self.launches.issued.is_multiple_of(2);
        if level_done && !self.over {
            return Ok(None);
        }
        let id = self.launches.next_id();
        Ok(Some(if id % 2 == 1 { self.expand(id) } else { self.update(id) }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::bfs::tests::check_against_bfs;
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_levels_are_the_thread_centric_bfss_in_two_launches_a_level() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut b = BfsFrontier::new(&params("bfs_frontier", &given, 8)).unwrap();
            let ks = drain(&mut b);
            assert_eq!(ks.len() % 2, 0, "{graph}");
            check_against_bfs(&given, b.root, &b.level, ks.len() / 2);
            let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, ["bfs_frontier_expand", "bfs_frontier_update"].repeat(ks.len() / 2), "{graph}");
            // Every vertex reached was visited and left the frontier.
            let reached: Vec<bool> = b.level.iter().map(|&l| l != crate::workload::graph::NONE).collect();
            assert_eq!(b.visited, reached, "{graph}");
            assert!(!b.frontier.contains(&true) && !b.next.contains(&true), "{graph}");
        }
    }
}
