//! `kcore`: the k-core of a graph by iterative peeling, thread per vertex,
//! one kernel launch per peeling round (GraphBIG's GPU k-core).
//!
//! ## What it models
//! Each vertex starts with its degree in `deg` (copied in). Every launch
//! gives every vertex a thread; a thread whose vertex is still in the graph
//! and has `deg[v] < k` removes it (`removed[v] = 1`, setting the `changed`
//! flag) and walks its neighbour list doing `atomicSub(&deg[u], 1)` for
//! every neighbour. The host launches round after round until one removes
//! nothing (that last launch is included). A removal is seen by the threads
//! that run after it in the same launch, so a round can peel a chain; the
//! vertices left are the k-core whatever the order (peeling is confluent).
//! Degrees and flags are `u32`. Neighbours already removed are decremented
//! too (their degree no longer matters), as GraphBIG does.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `deg` (`u32 × n`), `removed` (`u32 × n`), `changed` (4 bytes).
//! The initial degrees, zeroed flags and flag resets are copies, not
//! emitted.
//! Launch: `ceil(n / block)` blocks of `block` threads, 16 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `v < n`; 1 +
//! load `removed[v]`, compare and branch on still present; present 1 + load
//! `deg[v]`, compare and branch on `deg[v] < k`; for those 1 + store
//! `removed[v]` + store `changed`, 1 + load `row[v]` + load `row[v + 1]`,
//! then per neighbour the loop test (compare, branch), 1 + load `col[j]`,
//! 1 + atomic sub on `deg[u]`, 1 (`j++`); the loop's last test; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `k` (default 16), `block` threads per block (default 256).

use super::simt::Block;
use super::{
    block_size, blocks_for, covered, csr_footprint, graph_input, launch, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "kcore",
    summary: "k-core by iterative peeling of vertices of degree < k, thread per vertex, one launch per round",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + 2 * covered(4 * g.vertices()) + covered(4))
    },
    build: |p| Ok(Box::new(Kcore::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    GRAPH_PARAM,
    SCALE_PARAM,
    EDGEFACTOR_PBBS,
    ParamDoc { name: "k", default: "16", doc: "the core's least degree: vertices of degree below k are peeled, 1 to 2^20" },
    BLOCK_PARAM,
];

pub struct Kcore {
    launches: Launches,
    block: u32,
    k: u32,
    g: DeviceCsr,
    deg_at: u64,
    removed_at: u64,
    changed_at: u64,
    /// Each vertex's count of neighbours not yet removed (stale once it
    /// is removed itself), as the launches so far left it.
    pub deg: Vec<u32>,
    /// Whether each vertex has been peeled.
    pub removed: Vec<bool>,
    /// Whether the last launch removed a vertex.
    changed: bool,
}

impl Kcore {
    pub fn new(p: &Params) -> Result<Kcore> {
        let g = graph_input(p)?;
        let k = p.count_in("k", 1, 1 << 20)? as u32;
        let block = block_size(p)?;
        blocks_for(p, g.vertices(), block)?;
        let csr = g.csr(p.seed(), true);
        let mut heap = Allocator::new(super::HEAP_BASE);
        let g = DeviceCsr::place(&mut heap, csr);
        let n = g.n();
        let deg_at = heap.alloc("deg", 4 * n);
        let removed_at = heap.alloc("removed", 4 * n);
        let changed_at = heap.alloc("changed", 4);
        let deg = (0..n as usize).map(|v| g.csr.degree(v) as u32).collect();
        Ok(Kcore {
            launches: Launches::new(heap.allocations),
            block,
            k,
            g,
            deg_at,
            removed_at,
            changed_at,
            deg,
            removed: vec![false; n as usize],
            changed: true,
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, k, deg_at, removed_at, changed_at) = (self.block, self.k, self.deg_at, self.removed_at, self.changed_at);
        let g = &self.g;
        let n = g.n();
        let grid = n.div_ceil(bs as u64) as u32;
        let (deg, removed) = (&mut self.deg, &mut self.removed);
        let mut changed = false;
        let kernel = launch("kcore", id, [grid, 1, 1], [bs, 1, 1], 0, 16, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let v = |l: u32| bs as u64 * bx as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                let (mut j, mut end) = ([0u64; 32], [0u64; 32]);
                w.alu(3);
                let in_range = w.if_begin(|l| v(l) < n);
                w.alu(1);
                w.load(Space::Global, 4, |l| removed_at + 4 * v(l));
                let present = w.if_begin(|l| !removed[v(l) as usize]);
                w.alu(1);
                w.load(Space::Global, 4, |l| deg_at + 4 * v(l));
                let peel = w.if_begin(|l| deg[v(l) as usize] < k);
                w.alu(1);
                w.store(Space::Global, 4, |l| removed_at + 4 * v(l));
                w.store(Space::Global, 4, |_| changed_at);
                for l in w.active() {
                    removed[v(l) as usize] = true;
                    changed = true;
                }
                w.alu(1);
                w.load(Space::Global, 4, |l| g.row + 4 * v(l));
                w.load(Space::Global, 4, |l| g.row + 4 * (v(l) + 1));
                for l in w.active() {
                    (j[l as usize], end[l as usize]) = g.span(v(l));
                }
                let mut lp = w.loop_begin();
                while w.loop_test(&mut lp, |l| j[l as usize] < end[l as usize]) {
                    let u = |l: u32| g.csr.targets[j[l as usize] as usize] as u64;
                    w.alu(1);
                    w.load(Space::Global, 4, |l| g.col + 4 * j[l as usize]);
                    w.alu(1);
                    w.atomic(Space::Global, 4, |l| deg_at + 4 * u(l));
                    w.alu(1);
                    for l in w.active() {
                        deg[g.csr.targets[j[l as usize] as usize] as usize] -= 1;
                        j[l as usize] += 1;
                    }
                }
                w.if_end(peel);
                w.if_end(present);
                w.if_end(in_range);
            }
            block.finish()
        });
        self.changed = changed;
        kernel
    }
}

launches!(Kcore, |k: &Kcore| !k.changed);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_core_is_a_host_peelings() {
        for (graph, k) in [("rmat", "6"), ("random", "5")] {
            let mut c = Kcore::new(&params("kcore", &[("graph", graph), ("scale", "10"), ("edgefactor", "4"), ("k", k)], 8)).unwrap();
            let ks = drain(&mut c);
            let csr = &c.g.csr;
            let k: u32 = k.parse().unwrap();
            // Peel with a queue: remove a vertex when its live degree drops below k.
            let mut deg: Vec<u32> = (0..csr.n()).map(|v| csr.degree(v) as u32).collect();
            let mut gone = vec![false; csr.n()];
            let mut stack: Vec<usize> = (0..csr.n()).filter(|&v| deg[v] < k).collect();
            for &v in &stack {
                gone[v] = true;
            }
            while let Some(v) = stack.pop() {
                for &u in csr.neighbors(v) {
                    let u = u as usize;
                    deg[u] -= 1;
                    if !gone[u] && deg[u] < k {
                        gone[u] = true;
                        stack.push(u);
                    }
                }
            }
            assert_eq!(c.removed, gone, "{graph}");
            let core = gone.iter().filter(|&&g| !g).count();
            assert!(core > 0 && core < csr.n(), "{graph}: {core} vertices in the core");
            for v in (0..csr.n()).filter(|&v| !gone[v]) {
                assert!(csr.neighbors(v).iter().filter(|&&u| !gone[u as usize]).count() as u32 >= k);
            }
            assert!(ks.len() >= 3, "{graph}: {} rounds", ks.len());
        }
    }
}
