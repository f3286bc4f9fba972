//! `bc`: betweenness centrality by Brandes' algorithm from a few sources,
//! thread per vertex, one kernel launch per BFS level forward and one per
//! level backward (the level-synchronous GPU Brandes of GraphBIG and of
//! McLaughlin and Bader, SC 2014, topology-driven).
//!
//! ## What it models
//! For each source `s`, the forward phase is a BFS that also counts
//! shortest paths: launch `bc_forward` for level `L` (from 0) gives every
//! vertex a thread; a thread whose vertex `v` has `dist[v] == L` walks its
//! neighbours, gives `L + 1` to every unvisited one (setting `changed`),
//! then loads `dist[u]` again and, for a neighbour at `L + 1`, does
//! `atomicAdd(&sigma[u], sigma[v])`. The host launches levels until one
//! changes nothing: that level `D` is the deepest. The backward phase
//! accumulates dependencies by pull, no atomics: launch `bc_backward` for
//! level `L` from `D - 1` down to 1 gives every vertex a thread; a thread
//! whose vertex has `dist[v] == L` sums `sigma[v] / sigma[w] · (1 +
//! delta[w])` over its neighbours `w` at level `L + 1`, in list order,
//! stores it in `delta[v]` and adds it to `bc[v]`. Then the next source:
//! the host resets `dist`, `sigma` and `delta` (copies, not emitted). So
//! `bc[v]` is `Σ_s δ_s(v)` over the sources (unnormalised; the graph is
//! undirected and each source counts its own pairs). Distances are `u32`,
//! path counts `u64` (exact; wrapping beyond 2^64), dependencies and
//! centralities `f32`. The sources are distinct vertices of degree at least
//! 1 drawn from `gpu.bc.sources`.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `dist` (`u32 × n`), `sigma` (`u64 × n`), `delta` (`f32 × n`),
//! `bc` (`f32 × n`), `changed` (4 bytes).
//! Launches: per source, `D + 1` × `bc_forward` then `D - 1` ×
//! `bc_backward`, each `ceil(n / block)` blocks of `block` threads, 20 and
//! 24 registers.
//!
//! Instructions per thread, `bc_forward`: 3 index, compare and branch on
//! `v < n`; 1 + load `dist[v]`, compare and branch on `dist[v] == L`; on
//! the level 1 + load `sigma[v]` (8 bytes) + load `row[v]` + load
//! `row[v + 1]`, then per neighbour the loop test (compare, branch), 1 +
//! load `col[j]`, 1 + load `dist[u]`, compare and branch on unvisited, for
//! those 1 + store `dist[u]` + store `changed`; load `dist[u]`, compare and
//! branch on `dist[u] == L + 1`, for those atomic add on `sigma[u]` (8
//! bytes); 1 (`j++`); the loop's last test; `EXIT`. `bc_backward`: the
//! same up to the level test; on the level 1 + load `sigma[v]` + load
//! `row[v]` + load `row[v + 1]`, 1 (`sum = 0`), then per neighbour the loop
//! test, 1 + load `col[j]`, 1 + load `dist[u]`, compare and branch on
//! `dist[u] == L + 1`, for those load `sigma[u]` + load `delta[u]`, 2
//! (conversions), 1 `SFU` (reciprocal), 3 (multiply, add, fused
//! multiply-add); 1 (`j++`); the loop's last test; 1 + store `delta[v]`,
//! 1 + load `bc[v]`, 1 + store `bc[v]`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `sources` (default 2), `block` threads per block (default 256).

use super::bfs::visit;
use super::neighbours::Neighbours;
use super::{
    covered, csr_footprint, graph_input, thread_per_item, vertex_block, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Allocation, Kernel, KernelSource, Space};
use crate::workload::graph::{sample_roots, EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bc",
    summary: "betweenness centrality (Brandes) from a few sources: BFS with path counts, then dependencies, a launch per level",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        let n = g.vertices();
        Ok(csr_footprint(&g) + 3 * covered(4 * n) + covered(8 * n) + covered(4))
    },
    build: |p| Ok(Box::new(Bc::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    GRAPH_PARAM,
    SCALE_PARAM,
    EDGEFACTOR_PBBS,
    ParamDoc { name: "sources", default: "2", doc: "BFS sources (distinct vertices of degree >= 1), 1 to 1024" },
    BLOCK_PARAM,
];

/// What the next launch is.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    Forward(u32),
    Backward(u32),
    Done,
}

/// Device addresses of the per-vertex arrays and the flag.
#[derive(Copy, Clone)]
struct At {
    dist: u64,
    sigma: u64,
    delta: u64,
    bc: u64,
    changed: u64,
}

pub struct Bc {
    launches: Launches,
    block: u32,
    g: DeviceCsr,
    at: At,
    pub sources: Vec<u32>,
    /// Index of the current source in `sources`.
    source: usize,
    phase: Phase,
    /// The current source's distances and path counts.
    pub dist: Vec<u32>,
    pub sigma: Vec<u64>,
    delta: Vec<f32>,
    /// Centralities as the launches so far left them.
    pub bc: Vec<f32>,
}

impl Bc {
    pub fn new(p: &Params) -> Result<Bc> {
        let g = graph_input(p)?;
        let count = p.count_in("sources", 1, 1024)? as usize;
        let block = vertex_block(p, &g)?;
        let (mut heap, g) = DeviceCsr::generate(p, &g);
        let mut sources = sample_roots(&g.csr.offsets, count, &mut component_rng(p.seed(), "gpu.bc.sources"));
        if sources.is_empty() {
            // A graph with no edge: vertex 0, whose BFS ends at once.
            sources.push(0);
        }
        let n = g.n();
        let at = At {
            dist: heap.alloc("dist", 4 * n),
            sigma: heap.alloc("sigma", 8 * n),
            delta: heap.alloc("delta", 4 * n),
            bc: heap.alloc("bc", 4 * n),
            changed: heap.alloc("changed", 4),
        };
        let n = n as usize;
        let mut bc = Bc {
            launches: Launches::new(heap.allocations),
            block,
            g,
            at,
            sources,
            source: 0,
            phase: Phase::Forward(0),
            dist: vec![NONE; n],
            sigma: vec![0; n],
            delta: vec![0.0; n],
            bc: vec![0.0; n],
        };
        bc.reset();
        Ok(bc)
    }

    /// The host's copies before a source's first launch.
    fn reset(&mut self) {
        let s = self.sources[self.source] as usize;
        self.dist.fill(NONE);
        self.sigma.fill(0);
        self.delta.fill(0.0);
        self.dist[s] = 0;
        self.sigma[s] = 1;
    }

    /// The phase after the current source's last launch.
    fn next_source(&mut self) -> Phase {
        self.source += 1;
        if self.source == self.sources.len() {
            return Phase::Done;
        }
        self.reset();
        Phase::Forward(0)
    }

    /// `bc_forward` for level `lv`; returns whether a vertex was visited.
    fn forward(&mut self, id: u32, lv: u32) -> (Kernel, bool) {
        let (bs, at) = (self.block, self.at);
        let g = &self.g;
        let n = g.n();
        let (dist, sigma) = (&mut self.dist, &mut self.sigma);
        let mut changed = false;
        let k = thread_per_item("bc_forward", id, n, bs, 20, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            w.alu(1);
            w.load(Space::Global, 4, |l| at.dist + 4 * v(l));
            let on_level = w.if_begin(|l| dist[v(l) as usize] == lv);
            w.alu(1);
            w.load(Space::Global, 8, |l| at.sigma + 8 * v(l));
            Neighbours::load(w, g, v).walk(w, g, |w, _, u| {
                visit(w, u, dist, [at.dist, at.changed], lv + 1, &mut changed);
                w.load(Space::Global, 4, |l| at.dist + 4 * u[l as usize]);
                let next = w.if_begin(|l| dist[u[l as usize] as usize] == lv + 1);
                w.atomic(Space::Global, 8, |l| at.sigma + 8 * u[l as usize]);
                for l in w.active() {
                    let add = sigma[v(l) as usize];
                    let t = &mut sigma[u[l as usize] as usize];
                    *t = t.wrapping_add(add);
                }
                w.if_end(next);
            });
            w.if_end(on_level);
        });
        (k, changed)
    }

    /// `bc_backward` for level `lv`.
    fn backward(&mut self, id: u32, lv: u32) -> Kernel {
        let (bs, at) = (self.block, self.at);
        let g = &self.g;
        let n = g.n();
        let (dist, sigma, delta, bc) = (&self.dist, &self.sigma, &mut self.delta, &mut self.bc);
        thread_per_item("bc_backward", id, n, bs, 24, |w, v0| {
            let v = |l: u32| v0 + l as u64;
            let mut sum = [0f32; 32];
            w.alu(1);
            w.load(Space::Global, 4, |l| at.dist + 4 * v(l));
            let on_level = w.if_begin(|l| dist[v(l) as usize] == lv);
            w.alu(1);
            w.load(Space::Global, 8, |l| at.sigma + 8 * v(l));
            let neighbours = Neighbours::load(w, g, v);
            w.alu(1);
            neighbours.walk(w, g, |w, _, u| {
                w.alu(1);
                w.load(Space::Global, 4, |l| at.dist + 4 * u[l as usize]);
                let succ = w.if_begin(|l| dist[u[l as usize] as usize] == lv + 1);
                w.load(Space::Global, 8, |l| at.sigma + 8 * u[l as usize]);
                w.load(Space::Global, 4, |l| at.delta + 4 * u[l as usize]);
                w.alu(2);
                w.sfu(1);
                w.alu(3);
                for l in w.active() {
                    let (x, y) = (v(l) as usize, u[l as usize] as usize);
                    sum[l as usize] += dependency(sigma[x], sigma[y], delta[y]);
                }
                w.if_end(succ);
            });
            w.alu(1);
            w.store(Space::Global, 4, |l| at.delta + 4 * v(l));
            w.alu(1);
            w.load(Space::Global, 4, |l| at.bc + 4 * v(l));
            w.alu(1);
            w.store(Space::Global, 4, |l| at.bc + 4 * v(l));
            for l in w.active() {
                delta[v(l) as usize] = sum[l as usize];
                bc[v(l) as usize] += sum[l as usize];
            }
            w.if_end(on_level);
        })
    }
}

/// `v`'s dependency through a successor `w`: `σ_v / σ_w · (1 + δ_w)`, in
/// `f32`.
#[inline]
pub fn dependency(sigma_v: u64, sigma_w: u64, delta_w: f32) -> f32 {
    sigma_v as f32 / sigma_w as f32 * (1.0 + delta_w)
}

impl KernelSource for Bc {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        let k = match self.phase {
            Phase::Done => return Ok(None),
            Phase::Forward(lv) => {
                let id = self.launches.next_id();
                let (k, changed) = self.forward(id, lv);
                self.phase = match (changed, lv) {
                    (true, _) => Phase::Forward(lv + 1),
                    // Level lv is the deepest; the backward phase starts a level above it.
                    (false, 2..) => Phase::Backward(lv - 1),
                    (false, _) => self.next_source(),
                };
                k
            }
            Phase::Backward(lv) => {
                let id = self.launches.next_id();
                let k = self.backward(id, lv);
                self.phase = if lv > 1 { Phase::Backward(lv - 1) } else { self.next_source() };
                k
            }
        };
        Ok(Some(k))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;

    use super::super::tests::{drain, params};
    use super::*;

    /// Brandes from `s` (queue BFS, stack, predecessor lists, `f64`):
    /// distances, path counts, and each vertex's dependency added to `bc`.
    fn brandes(csr: &crate::workload::graph::Csr, s: usize, bc: &mut [f64]) -> (Vec<u32>, Vec<u64>) {
        let n = csr.n();
        let (mut dist, mut sigma) = (vec![NONE; n], vec![0u64; n]);
        let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut stack = Vec::new();
        dist[s] = 0;
        sigma[s] = 1;
        let mut queue = VecDeque::from([s]);
        while let Some(v) = queue.pop_front() {
            stack.push(v);
            for &w in csr.neighbors(v) {
                let w = w as usize;
                if dist[w] == NONE {
                    dist[w] = dist[v] + 1;
                    queue.push_back(w);
                }
                if dist[w] == dist[v] + 1 {
                    sigma[w] += sigma[v];
                    preds[w].push(v);
                }
            }
        }
        let mut delta = vec![0f64; n];
        while let Some(w) = stack.pop() {
            for &v in &preds[w] {
                delta[v] += sigma[v] as f64 / sigma[w] as f64 * (1.0 + delta[w]);
            }
            if w != s {
                bc[w] += delta[w];
            }
        }
        (dist, sigma)
    }

    #[test]
    fn the_centralities_are_a_host_brandes() {
        for graph in ["rmat", "random"] {
            let mut b = Bc::new(&params("bc", &[("graph", graph), ("scale", "10"), ("edgefactor", "4"), ("sources", "3")], 8)).unwrap();
            let ks = drain(&mut b);
            let csr = &b.g.csr;
            let mut want = vec![0f64; csr.n()];
            let mut last = (Vec::new(), Vec::new());
            let mut launches = 0;
            for &s in &b.sources {
                last = brandes(csr, s as usize, &mut want);
                let deepest = *last.0.iter().filter(|&&d| d != NONE).max().unwrap() as usize;
                launches += deepest + 1 + deepest.saturating_sub(1);
            }
            assert_eq!(b.sources.len(), 3);
            assert_eq!((&b.dist, &b.sigma), (&last.0, &last.1), "{graph}: the last source's BFS");
            assert_eq!(ks.len(), launches, "{graph}");
            for (v, (&got, &want)) in b.bc.iter().zip(&want).enumerate() {
                assert!((got as f64 - want).abs() <= 1e-4 * want.max(1.0), "{graph}: bc[{v}] {got} against {want}");
            }
            assert!(want.iter().any(|&x| x > 10.0), "{graph}");
        }
    }

    #[test]
    fn each_source_runs_forward_then_backward() {
        let mut b = Bc::new(&params("bc", &[("scale", "8"), ("sources", "2")], 1)).unwrap();
        let names: Vec<String> = drain(&mut b).into_iter().map(|k| k.name).collect();
        // Per source: forward launches, then backward ones.
        let switches = names.windows(2).filter(|p| p[0] != p[1]).count();
        assert_eq!(switches, 3, "{names:?}");
        assert_eq!(names[0], "bc_forward");
    }
}
