//! `sssp_warp`: single-source shortest paths by synchronous Bellman-Ford,
//! warp-centric and topology-driven, two kernel launches per sweep
//! (GraphBIG's SSSP "topological warp-centric", SSSP-TWC; Nai et al.,
//! "GraphBIG: understanding graph computing in the context of industrial
//! solutions", SC 2015, after Hong et al., "Accelerating CUDA graph
//! algorithms at maximum warp", PPoPP 2011).
//!
//! ## What it models
//! A sweep is two launches:
//! - `sssp_warp_relax`: each warp takes a chunk of `chunk` consecutive
//!   vertices (GraphBIG's `CHUNK_SZ`, 32) and visits them one after
//!   another; for a vertex whose `mask` flag is set (its distance fell in
//!   the last sweep) all lanes load its span and distance (broadcasts), then
//!   stride its neighbour list (lane `i` takes entries `i`, `i + 32`, …) and
//!   do `atomicMin(&update[u], dist[v] + weight[j])` with no test first, as
//!   GraphBIG does; then the vertex's flag is cleared.
//! - `sssp_warp_update`: a thread per vertex moves a smaller `update[v]`
//!   into `dist[v]`, sets `mask[v]` and the `changed` flag, and otherwise
//!   copies `dist[v]` back into `update[v]`.
//!
//! Relaxations only read `dist` and only write `update`, so a sweep is a
//! synchronous (Jacobi) Bellman-Ford step: the result and the number of
//! sweeps do not depend on the order the warps run in. The host sweeps until
//! an update changes nothing (that last sweep is included). Distances are
//! `u32`, unreached `u32::MAX`; the source's mask is set, copied in.
//! Weights and source are [`super::sssp`]'s (`gpu.sssp.weights`,
//! `gpu.sssp.root`), so given the same seed and graph the distances are
//! `sssp`'s (Dijkstra's).
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `weight` (`u32` per entry), `dist`, `update` (`u32 × n` each),
//! `mask` (`bool × n`), `changed` (`bool`, 1 byte). The initial arrays and
//! flag resets are copies, not emitted (GraphBIG's `initialize` kernel is
//! left out as the other kernels' host initialisations are). GraphBIG holds
//! the graph as `u64` arrays; Tessera's graph kernels share one `u32` CSR.
//! Launches: per sweep `sssp_warp_relax`, a warp per `chunk` vertices in
//! blocks of `block` threads (`ceil(32 ceil(n / chunk) / block)` blocks),
//! 24 registers; then `sssp_warp_update`, `ceil(n / block)` blocks of
//! `block` threads, 12 registers.
//!
//! Instructions per thread, `sssp_warp_relax`: 4 (lane, warp, first
//! vertex), compare and branch on the chunk in range (uniform), 1 (chunk
//! end); per vertex of the chunk the loop test (compare, branch), 1 + load
//! `mask[v]`, compare and branch on it; flagged: load `row[v]` + load
//! `row[v + 1]`, 1 + load `dist[v]`, 1 (`j = row[v] + lane`), then per
//! stride the loop test, 1 + load `col[j]`, load `weight[j]`, 1 (`+`),
//! atomic min on `update[u]`, 1 (`j += 32`); the loop's last test; 1 +
//! store `mask[v]`; then 1 (`v++`); the chunk loop's last test; `EXIT`.
//! `sssp_warp_update`: 3 index, compare and branch on `v < n`; 1 + load
//! `dist[v]` + load `update[v]`, compare and branch on `dist[v] >
//! update[v]`: those 1 + store `dist[v]` + store `mask[v]` + store
//! `changed` and a branch over the `else`, the others store `update[v]`;
//! `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `chunk` vertices per warp (default 32), `block` threads per block
//! (a multiple of 32, default 256).

use super::neighbours::Neighbours;
use super::simt::Block;
use super::sssp::edge_weights;
use super::{
    block_size, blocks_for, covered, csr_footprint, graph_input, launch, thread_per_item, DeviceCsr, GpuKernelInfo,
    Launches, BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::{Error, Result};
use crate::workload::gpu::{Allocation, Kernel, KernelSource, Space, WARP_SIZE};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "sssp_warp",
    summary: "single-source shortest paths, synchronous Bellman-Ford, warp per chunk of vertices (lanes stride the neighbours), two launches per sweep",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        let n = g.vertices();
        Ok(csr_footprint(&g) + covered(4 * g.max_nnz()) + 2 * covered(4 * n) + covered(n) + covered(1))
    },
    build: |p| Ok(Box::new(SsspWarp::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    GRAPH_PARAM,
    SCALE_PARAM,
    EDGEFACTOR_PBBS,
    ParamDoc { name: "chunk", default: "32", doc: "consecutive vertices each warp visits one after another, 1 to 1024" },
    BLOCK_PARAM,
];

/// Device addresses of the per-vertex arrays and the flag.
#[derive(Copy, Clone)]
struct At {
    weight: u64,
    dist: u64,
    update: u64,
    mask: u64,
    changed: u64,
}

pub struct SsspWarp {
    launches: Launches,
    block: u32,
    chunk: u64,
    g: DeviceCsr,
    at: At,
    pub root: u32,
    pub weight: Vec<u32>,
    /// Each vertex's distance as the launches so far left it.
    pub dist: Vec<u32>,
    update: Vec<u32>,
    mask: Vec<bool>,
    /// Whether the last update lowered a distance.
    changed: bool,
}

impl SsspWarp {
    pub fn new(p: &Params) -> Result<SsspWarp> {
        let g = graph_input(p)?;
        let chunk = p.count_in("chunk", 1, 1024)?;
        let block = block_size(p)?;
        if block % WARP_SIZE != 0 {
            return Err(Error::config(p.key_path("block"), format!("{block} threads: a warp per chunk needs whole warps")));
        }
        blocks_for(p, WARP_SIZE as u64 * g.vertices().div_ceil(chunk), block)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        let root = g.root(p.seed(), "gpu.sssp.root");
        let weight = edge_weights(&g.csr, p.seed(), "gpu.sssp.weights");
        let n = g.n();
        let at = At {
            weight: heap.alloc("weight", 4 * weight.len() as u64),
            dist: heap.alloc("dist", 4 * n),
            update: heap.alloc("update", 4 * n),
            mask: heap.alloc("mask", n),
            changed: heap.alloc("changed", 1),
        };
        let mut dist = vec![NONE; n as usize];
        dist[root as usize] = 0;
        let mut mask = vec![false; n as usize];
        mask[root as usize] = true;
        Ok(SsspWarp {
            launches: Launches::new(heap.allocations),
            block,
            chunk,
            g,
            at,
            root,
            weight,
            dist,
            update: vec![NONE; n as usize],
            mask,
            changed: true,
        })
    }

    /// `sssp_warp_relax`: flagged vertices offer their neighbours a distance in `update`.
    fn relax(&mut self, id: u32) -> Kernel {
        let (bs, chunk, at) = (self.block, self.chunk, self.at);
        let g = &self.g;
        let n = g.n();
        let (weight, dist, update, mask) = (&self.weight, &self.dist, &mut self.update, &mut self.mask);
        let per_block = (bs / WARP_SIZE) as u64;
        let grid = n.div_ceil(chunk).div_ceil(per_block) as u32;
        launch("sssp_warp_relax", id, [grid, 1, 1], [bs, 1, 1], 0, 24, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let v1 = (per_block * bx as u64 + wi as u64) * chunk;
                let last = (v1 + chunk).min(n);
                w.alu(4);
                let in_range = w.if_begin(|_| v1 < n);
                w.alu(1);
                let mut v = v1;
                let mut vertices = w.loop_begin();
                while w.loop_test(&mut vertices, |_| v < last) {
                    w.alu(1);
                    w.load(Space::Global, 1, |_| at.mask + v);
                    let flagged = w.if_begin(|_| mask[v as usize]);
                    let neighbours = Neighbours::load(w, g, |_| v);
                    w.alu(1);
                    w.load(Space::Global, 4, |_| at.dist + 4 * v);
                    w.alu(1);
                    // Only flagged vertices have a finite distance, so the sum does not
                    // overflow; with no lane flagged `v` may be past the chunk.
                    let cost = if w.mask() != 0 { dist[v as usize] } else { 0 };
                    neighbours.strided(w).walk(w, g, |w, j, u| {
                        w.load(Space::Global, 4, |l| at.weight + 4 * j[l as usize]);
                        w.alu(1);
                        w.atomic(Space::Global, 4, |l| at.update + 4 * u[l as usize]);
                        for l in w.active() {
                            let t = &mut update[u[l as usize] as usize];
                            *t = (*t).min(cost + weight[j[l as usize] as usize]);
                        }
                    });
                    w.alu(1);
                    w.store(Space::Global, 1, |_| at.mask + v);
                    if w.mask() != 0 {
                        mask[v as usize] = false;
                    }
                    w.if_end(flagged);
                    w.alu(1);
                    v += 1;
                }
                w.if_end(in_range);
            }
            block.finish()
        })
    }

    /// `sssp_warp_update`: distances take the smaller offers, which flag their vertices.
    fn update(&mut self, id: u32) -> Kernel {
        let (bs, at) = (self.block, self.at);
        let (dist, update, mask) = (&mut self.dist, &mut self.update, &mut self.mask);
        let mut changed = false;
        let k = thread_per_item("sssp_warp_update", id, self.g.n(), bs, 12, |w, v0| {
            let v = |l: u32| (v0 + l as u64) as usize;
            w.alu(1);
            w.load(Space::Global, 4, |l| at.dist + 4 * v(l) as u64);
            w.load(Space::Global, 4, |l| at.update + 4 * v(l) as u64);
            let lower = w.if_begin(|l| dist[v(l)] > update[v(l)]);
            w.alu(1);
            w.store(Space::Global, 4, |l| at.dist + 4 * v(l) as u64);
            w.store(Space::Global, 1, |l| at.mask + v(l) as u64);
            w.store(Space::Global, 1, |_| at.changed);
            for l in w.active() {
                (dist[v(l)], mask[v(l)]) = (update[v(l)], true);
                changed = true;
            }
            w.if_else(&lower);
            w.store(Space::Global, 4, |l| at.update + 4 * v(l) as u64);
            for l in w.active() {
                update[v(l)] = dist[v(l)];
            }
            w.if_end(lower);
        });
        self.changed = changed;
        k
    }
}

impl KernelSource for SsspWarp {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        // A sweep is a relaxation then an update; sweeps end after an update that changed nothing.
        let sweep_done = self.launches.issued.is_multiple_of(2);
        if sweep_done && !self.changed {
            return Ok(None);
        }
        let id = self.launches.next_id();
        Ok(Some(if id % 2 == 1 { self.relax(id) } else { self.update(id) }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::sssp::Sssp;
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_distances_are_the_thread_centric_sssps_and_dijkstras() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut s = SsspWarp::new(&params("sssp_warp", &given, 8)).unwrap();
            let ks = drain(&mut s);
            let mut t = Sssp::new(&params("sssp", &given, 8)).unwrap();
            drain(&mut t);
            assert_eq!((s.root, &s.weight), (t.root, &t.weight), "{graph}");
            assert_eq!(s.dist, t.dist, "{graph}");
            assert!(ks.len() >= 4 && ks.len().is_multiple_of(2), "{graph}: {} launches", ks.len());
            let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
            assert_eq!(names, ["sssp_warp_relax", "sssp_warp_update"].repeat(ks.len() / 2), "{graph}");
            // Relaxations: coalesced col loads, one atomic per entry of a flagged vertex.
            let insts: Vec<_> = ks.iter().flat_map(|k| &k.blocks).flat_map(|b| &b.warps).flat_map(|w| w.iter()).collect();
            let col = insts.iter().filter(|(i, a)| i.op == Op::Load && a.len() > 1 && a[0] >= s.g.col && a[0] < s.at.weight);
            assert!(col.clone().count() > 0 && col.clone().all(|(_, a)| a.windows(2).all(|p| p[1] == p[0] + 4)), "{graph}");
        }
    }

    #[test]
    fn a_chunk_of_one_is_a_warp_per_vertex_and_the_same_distances() {
        let given = [("scale", "9"), ("edgefactor", "4")];
        let mut a = SsspWarp::new(&params("sssp_warp", &given, 3)).unwrap();
        let ka = drain(&mut a);
        let mut b = SsspWarp::new(&params("sssp_warp", &[given[0], given[1], ("chunk", "1")], 3)).unwrap();
        let kb = drain(&mut b);
        assert_eq!(a.dist, b.dist);
        assert_eq!(ka.len(), kb.len(), "synchronous sweeps do not depend on the chunk");
        assert_eq!(kb[0].grid[0], 512 / 8);
        assert_eq!(ka[0].grid[0], 2);
    }

    #[test]
    fn bad_chunks_and_blocks_name_their_key() {
        let given = |k: &str, v: &str| -> std::collections::BTreeMap<String, String> {
            [(k.to_string(), v.to_string())].into_iter().collect()
        };
        for (k, v) in [("chunk", "0"), ("chunk", "2000"), ("block", "48")] {
            let e = super::super::build("sssp_warp", &given(k, v), 1).err().unwrap().to_string();
            assert!(e.contains(k), "{k}={v}: {e}");
        }
    }
}
