//! `kcore`: the k-core of a graph by iterative peeling, thread per vertex,
//! two kernel launches per peeling round (GraphBIG's GPU k-core).
//!
//! ## What it models
//! Each vertex starts with its degree in `deg` (copied in). A round is two
//! launches, each giving every vertex a thread:
//! - `kcore_decrement` (GraphBIG's `kernel`): a thread whose vertex was
//!   peeled in the previous round (`flag[v]`) walks its neighbour list and
//!   does `atomicSub(&deg[u], 1)` for every neighbour not removed, then
//!   clears its flag;
//! - `kcore_remove` (GraphBIG's `kernel2`): a thread whose vertex is still
//!   in the graph with `deg[v] < k` removes it (`removed[v]` and `flag[v]`
//!   set), counts it with `atomicAdd(&removed_count, 1)` and clears the
//!   `over` flag.
//!
//! The host launches rounds until one removes nothing (that last round is
//! included, as the host only learns it from the flag). The first round's
//! decrement finds no flag. Removal reads only degrees the previous
//! decrement left, so a round peels every vertex below `k` at once,
//! whatever order the threads run in; the vertices left are the k-core.
//! Degrees are `u32`, the flags `bool` (one byte), as in GraphBIG.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `deg` (`u32 × n`), `removed` (`bool × n`), `flag` (`bool × n`),
//! `removed_count` (4 bytes), `over` (1 byte). The initial degrees, zeroed
//! flags and `over` resets are copies, not emitted.
//! Launches: per round `kcore_decrement` then `kcore_remove`, each
//! `ceil(n / block)` blocks of `block` threads, 16 and 10 registers.
//!
//! Instructions per thread, `kcore_decrement`: 3 index, compare and branch
//! on `v < n`; 1 + load `flag[v]`, compare and branch on it; flagged 1 +
//! load `row[v]` + load `row[v + 1]`, then per neighbour the loop test
//! (compare, branch), 1 + load `col[j]`, 1 + load `removed[u]`, compare and
//! branch on not removed, for those 1 + atomic sub on `deg[u]`; 1 (`j++`);
//! the loop's last test; 1 + store `flag[v]`; `EXIT`. `kcore_remove`: 3
//! index, compare and branch on `v < n`; 1 + load `removed[v]`, compare and
//! branch on present; present 1 + load `deg[v]`, compare and branch on
//! `deg[v] < k`; for those 1 + store `removed[v]` + store `flag[v]` +
//! atomic add on `removed_count` + store `over`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `k` (default 16), `block` threads per block (default 256).

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
    name: "kcore",
    summary: "k-core by iterative peeling of vertices of degree < k, thread per vertex, two launches per round",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        let n = g.vertices();
        Ok(csr_footprint(&g) + covered(4 * n) + 2 * covered(n) + covered(4) + covered(1))
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

/// Device addresses of the per-vertex arrays and the counters.
#[derive(Copy, Clone)]
struct At {
    deg: u64,
    removed: u64,
    flag: u64,
    count: u64,
    over: u64,
}

pub struct Kcore {
    launches: Launches,
    block: u32,
    k: u32,
    g: DeviceCsr,
    at: At,
    /// Each vertex's count of neighbours not removed (stale once it is
    /// removed itself), as the launches so far left it.
    pub deg: Vec<u32>,
    /// Whether each vertex has been peeled.
    pub removed: Vec<bool>,
    /// Vertices peeled in the last round, whose neighbours are not yet decremented.
    flag: Vec<bool>,
    /// Whether the last `kcore_remove` removed a vertex.
    peeled: bool,
}

impl Kcore {
    pub fn new(p: &Params) -> Result<Kcore> {
        let g = graph_input(p)?;
        let k = p.count_in("k", 1, 1 << 20)? as u32;
        let block = vertex_block(p, &g)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        let n = g.n();
        let at = At {
            deg: heap.alloc("deg", 4 * n),
            removed: heap.alloc("removed", n),
            flag: heap.alloc("flag", n),
            count: heap.alloc("removed_count", 4),
            over: heap.alloc("over", 1),
        };
        let deg = (0..n as usize).map(|v| g.csr.degree(v) as u32).collect();
        Ok(Kcore {
            launches: Launches::new(heap.allocations),
            block,
            k,
            g,
            at,
            deg,
            removed: vec![false; n as usize],
            flag: vec![false; n as usize],
            peeled: true,
        })
    }

    /// `kcore_decrement`: the flagged vertices' neighbours lose a degree.
    fn decrement(&mut self, id: u32) -> Kernel {
        let (bs, at) = (self.block, self.at);
        let g = &self.g;
        let n = g.n();
        let (deg, removed, flag) = (&mut self.deg, &self.removed, &mut self.flag);
        thread_per_item("kcore_decrement", id, n, bs, 16, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 1, |l| at.flag + v(l));
            let flagged = w.if_begin(|l| flag[v(l) as usize]);
            w.alu(1);
            Neighbours::load(w, g, v).walk(w, g, |w, _, u| {
                w.alu(1);
                w.load(Space::Global, 1, |l| at.removed + u[l as usize]);
                let alive = w.if_begin(|l| !removed[u[l as usize] as usize]);
                w.alu(1);
                w.atomic(Space::Global, 4, |l| at.deg + 4 * u[l as usize]);
                for l in w.active() {
                    deg[u[l as usize] as usize] -= 1;
                }
                w.if_end(alive);
            });
            w.alu(1);
            w.store(Space::Global, 1, |l| at.flag + v(l));
            for l in w.active() {
                flag[v(l) as usize] = false;
            }
            w.if_end(flagged);
        })
    }

    /// `kcore_remove`: the vertices below `k` leave the graph.
    fn remove(&mut self, id: u32) -> Kernel {
        let (bs, k, at) = (self.block, self.k, self.at);
        let n = self.g.n();
        let (deg, removed, flag) = (&self.deg, &mut self.removed, &mut self.flag);
        let mut peeled = false;
        let kernel = thread_per_item("kcore_remove", id, n, bs, 10, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 1, |l| at.removed + v(l));
            let present = w.if_begin(|l| !removed[v(l) as usize]);
            w.alu(1);
            w.load(Space::Global, 4, |l| at.deg + 4 * v(l));
            let peel = w.if_begin(|l| deg[v(l) as usize] < k);
            w.alu(1);
            w.store(Space::Global, 1, |l| at.removed + v(l));
            w.store(Space::Global, 1, |l| at.flag + v(l));
            w.atomic(Space::Global, 4, |_| at.count);
            w.store(Space::Global, 1, |_| at.over);
            for l in w.active() {
                removed[v(l) as usize] = true;
                flag[v(l) as usize] = true;
                peeled = true;
            }
            w.if_end(peel);
            w.if_end(present);
        });
        self.peeled = peeled;
        kernel
    }
}

impl KernelSource for Kcore {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        // A round is a decrement then a removal; rounds end after one that removed nothing.
        let round_done = self.launches.issued.is_multiple_of(2);
        if round_done && !self.peeled {
            return Ok(None);
        }
        let id = self.launches.next_id();
        Ok(Some(if id % 2 == 1 { self.decrement(id) } else { self.remove(id) }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_core_is_a_host_peelings_in_as_many_rounds() {
        for (graph, k) in [("rmat", "6"), ("random", "5")] {
            let mut c = Kcore::new(&params("kcore", &[("graph", graph), ("scale", "10"), ("edgefactor", "4"), ("k", k)], 8)).unwrap();
            let ks = drain(&mut c);
            let csr = &c.g.csr;
            let k: u32 = k.parse().unwrap();
            // Synchronous peeling: each round removes every vertex whose live degree is below k.
            let mut gone = vec![false; csr.n()];
            let mut rounds = 0;
            loop {
                rounds += 1;
                let live = |v: usize| csr.neighbors(v).iter().filter(|&&u| !gone[u as usize]).count() as u32;
                let peel: Vec<usize> = (0..csr.n()).filter(|&v| !gone[v] && live(v) < k).collect();
                if peel.is_empty() {
                    break;
                }
                for v in peel {
                    gone[v] = true;
                }
            }
            assert_eq!(c.removed, gone, "{graph}");
            let core = gone.iter().filter(|&&g| !g).count();
            assert!(core > 0 && core < csr.n(), "{graph}: {core} vertices in the core");
            assert!(rounds >= 3, "{graph}: {rounds} rounds");
            assert_eq!(ks.len(), 2 * rounds, "{graph}");
            let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, ["kcore_decrement", "kcore_remove"].repeat(rounds), "{graph}");
            for v in (0..csr.n()).filter(|&v| !gone[v]) {
                assert_eq!(c.deg[v], csr.neighbors(v).iter().filter(|&&u| !gone[u as usize]).count() as u32);
            }
        }
    }
}
