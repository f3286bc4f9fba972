//! `bfs_atomic`: breadth-first search levels, topology-driven with atomics
//! and no frontier at all (GraphBIG's BFS "topological atomic", BFS-TA; Nai
//! et al., "GraphBIG: understanding graph computing in the context of
//! industrial solutions", SC 2015, after Lonestar-GPU's `bfs_ls`).
//!
//! ## What it models
//! Every launch gives every vertex a thread, and every thread walks its
//! whole neighbour list whatever its vertex's level: for each neighbour `u`
//! it reloads `level[v]` (the atomics may have written it, so the compiler
//! cannot keep it in a register), forms `new = level[v] + 1`, loads
//! `level[u]` and, if `new` is smaller, does `old = atomicMin(&level[u],
//! new)`; a thread that lowered some level (`new < old`) sets the `changed`
//! flag once after its loop. The host launches until a launch changes
//! nothing (that last launch is included). So every launch streams the
//! whole `col` array and gathers `level` over every edge: unlike `bfs`, no
//! thread is idle, which is what makes this variant the heaviest in memory
//! traffic.
//!
//! Updates are seen by the threads that run after them in the same launch
//! (warps in launch order, lanes' atomics in lane order), so a launch can
//! carry a level several edges and there are at most as many launches as
//! [`super::bfs`] makes; the levels converge to the BFS levels whatever the
//! order. Levels are `u32`, unvisited `u32::MAX`, whose `+ 1` saturates so
//! that an unvisited vertex never lowers a neighbour (GraphBIG gets the same
//! from its infinity, `0xffffff00`, plus one). The root is
//! [`super::bfs`]'s (drawn from `gpu.bfs.root`), so the levels are `bfs`'s.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `level` (`u32 × n`), `changed` (`bool`, 1 byte, as GraphBIG's).
//! The initial levels and flag resets are copies, not emitted. GraphBIG
//! holds the graph as `u64` arrays; Tessera's graph kernels share one `u32`
//! CSR, so the graph's bytes are about half GraphBIG's.
//! Launch: `ceil(n / block)` blocks of `block` threads, 18 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `v < n`; in
//! range 1 (`changed = false`) + load `row[v]` + load `row[v + 1]`, then per
//! neighbour the loop test (compare, branch), 1 + load `col[j]`, load
//! `level[v]`, 1 (`+ 1`), 1 + load `level[u]`, compare and branch on
//! `new < level[u]`, for those atomic min on `level[u]`, compare and branch
//! on `new < old`, for those 1 (`changed = true`); then 1 (`j++`); the
//! loop's last test; compare and branch on `changed`, for those 1 + store
//! `changed`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use super::bfs::Start;
use super::neighbours::Neighbours;
use super::{covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches};
use crate::error::Result;
use crate::workload::gpu::{Kernel, Space};
use crate::workload::Params;

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bfs_atomic",
    summary: "breadth-first search levels, topology-driven: every thread walks all its edges each launch, atomicMin on levels",
    params: super::bfs::INFO.params,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + covered(4 * g.vertices()) + covered(1))
    },
    build: |p| Ok(Box::new(BfsAtomic::new(p)?)),
};

pub struct BfsAtomic {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    level_at: u64,
    changed_at: u64,
    pub root: u32,
    /// Each vertex's level as the launches so far left it.
    pub level: Vec<u32>,
    /// Whether the last launch lowered a level.
    changed: bool,
}

impl BfsAtomic {
    pub fn new(p: &Params) -> Result<BfsAtomic> {
        let g = graph_input(p)?;
        let block = vertex_block(p, &g)?;
        let Start { mut heap, g, level_at, root, level } = Start::new(p, &g);
        let changed_at = heap.alloc("changed", 1);
        Ok(BfsAtomic { launches: Launches::new(heap.allocations), block, g, level_at, changed_at, root, level, changed: true })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, level_at, changed_at) = (self.block, self.level_at, self.changed_at);
        let g = &self.g;
        let level = &mut self.level;
        let mut changed = false;
        let k = thread_per_item("bfs_atomic", id, g.n(), bs, 18, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            let (mut new, mut lowered) = ([0u32; 32], [false; 32]);
            w.alu(1);
            Neighbours::load(w, g, v).walk(w, g, |w, _, u| {
                w.load(Space::Global, 4, |l| level_at + 4 * v(l));
                w.alu(1);
                for l in w.active() {
                    new[l as usize] = level[v(l) as usize].saturating_add(1);
                }
                w.alu(1);
                w.load(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                let lower = w.if_begin(|l| new[l as usize] < level[u[l as usize] as usize]);
                w.atomic(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                // Lanes' atomics apply in lane order: a lane that loses the
                // race to a smaller level sees it as `old`.
                let mut won = [false; 32];
                for l in w.active() {
                    let t = &mut level[u[l as usize] as usize];
                    won[l as usize] = new[l as usize] < *t;
                    *t = (*t).min(new[l as usize]);
                }
                let fresh = w.if_begin(|l| won[l as usize]);
                w.alu(1);
                for l in w.active() {
                    lowered[l as usize] = true;
                }
                w.if_end(fresh);
                w.if_end(lower);
            });
            let any = w.if_begin(|l| lowered[l as usize]);
            w.alu(1);
            w.store(Space::Global, 1, |_| changed_at);
            changed |= w.mask() != 0;
            w.if_end(any);
        });
        self.changed = changed;
        k
    }
}

launches!(BfsAtomic, |k: &BfsAtomic| !k.changed);

#[cfg(test)]
mod tests {
    use super::super::bfs::Bfs;
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_levels_are_the_level_synchronous_bfss_in_no_more_launches() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut a = BfsAtomic::new(&params("bfs_atomic", &given, 8)).unwrap();
            let ka = drain(&mut a);
            let mut t = Bfs::new(&params("bfs", &given, 8)).unwrap();
            let kt = drain(&mut t);
            assert_eq!(a.root, t.root, "{graph}");
            assert_eq!(a.level, t.level, "{graph}");
            assert!(ka.len() >= 2 && ka.len() <= kt.len(), "{graph}: {} against {}", ka.len(), kt.len());
            // Every launch walks every edge: as many col loads (lane accesses) per launch as entries.
            let nnz = a.g.csr.nnz();
            for k in &ka {
                let col_lanes: usize = k
                    .blocks
                    .iter()
                    .flat_map(|b| &b.warps)
                    .flat_map(|w| w.iter())
                    .filter(|(i, a0)| i.op == Op::Load && a0[0] >= a.g.col && a0[0] < a.level_at)
                    .map(|(i, _)| i.lanes() as usize)
                    .sum();
                assert_eq!(col_lanes, nnz, "{graph}: launch {}", k.id);
            }
        }
    }
}
