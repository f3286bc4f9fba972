//! `bfs`: PBBS breadth-first search (`breadthFirstSearch/serialBFS`).
//!
//! ## What it models
//! PBBS's serial BFS over a symmetric adjacency graph: a `Frontier` array used
//! as a FIFO queue and a `Parent` array initialised to "none", both allocated
//! inside the timed call; each dequeued vertex scans its neighbours and claims
//! the unvisited ones. It is the same loop as the Graph500 reference, so it
//! shares [`super::graph::bfs_top_down`] and its instruction model (per
//! neighbour entry 4 instructions and 2 loads, plus 3 instructions and 2 stores
//! when it reaches a new vertex; per dequeued vertex 5 instructions and 3
//! loads; 2 instructions and a store per vertex to initialise `Parent`).
//! Dependencies (those of the shared kernel): `offsets[u]` on the
//! `Frontier[head]` load that gave `u`, `targets[k]` on `offsets[u]`, and the
//! `Parent[v]` load and store on the `targets[k]` load that gave `v`.
//!
//! Input: an R-MAT (`graph=rmat`) or uniform random (`graph=random`) graph from
//! [`super::graph`], deduplicated with sorted neighbour lists, as PBBS's
//! adjacency-graph files are.
//!
//! Layout (allocation order, each by `malloc`): CSR `offsets` (`u64`),
//! `targets` (`u32`), `Frontier` (`u32 × n`), `Parent` (`u32 × n`).
//!
//! Each search's parent array is checked on the host with the Graph500 rules
//! ([`super::graph::validate_bfs_tree`]); a failure is an error.
//!
//! ## Choices
//! - PBBS searches from vertex 0. In a permuted R-MAT graph vertex 0 is
//!   isolated with sizeable probability, so sources are instead sampled among
//!   vertices of degree ≥ 1 (through `workload.bfs.roots`), and `roots` > 1
//!   repeats the search from further sources as PBBS's timing rounds repeat it.
//! - Default `edgefactor` 10 and scale 18: PBBS's inputs have 10–12 edges per
//!   vertex; the scale keeps a default run to seconds.

use super::graph::{self, GraphInput, SimCsr, Work, NONE};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "bfs",
    summary: "PBBS serial BFS (frontier queue + parent array) on an R-MAT or random graph",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, true)?;
        Ok(SimCsr::bytes(g.vertices(), g.max_nnz()) + 8 * g.vertices())
    },
    build: |p| Ok(Box::new(Bfs::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    graph::GRAPH_PARAM,
    graph::SCALE_PARAM,
    graph::EDGEFACTOR_PBBS,
    ParamDoc { name: "roots", default: "1", doc: "searches, each from a distinct sampled source of degree >= 1" },
];

const NAME: &str = "bfs";

pub struct Bfs {
    graph: GraphInput,
    roots: u64,
    seed: u64,
}

impl Bfs {
    pub fn new(p: &Params) -> Result<Bfs> {
        Ok(Bfs {
            graph: GraphInput::from_params(p, true)?,
            roots: p.count_in("roots", 1, 1 << 20)?,
            seed: p.seed(),
        })
    }
}

impl Workload for Bfs {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let n = self.graph.vertices() as usize;
        let g = SimCsr::place(&mut space, self.graph.csr(self.seed, true));
        let mut frontier = SimVec::alloc(&mut space, n, 0u32);
        let mut parent = SimVec::alloc(&mut space, n, NONE);
        let mut rng = component_rng(self.seed, "workload.bfs.roots");
        let roots = graph::sample_roots(&g.offsets.data, self.roots as usize, &mut rng);
        if roots.is_empty() {
            return Err(graph::failure(NAME, "the graph has no edges, so there is no source to search from"));
        }
        let mut work = Work { done: 0, total: roots.len() as u64 * g.nnz() as u64 };
        for &root in &roots {
            if !graph::bfs_top_down(&g, &mut parent, &mut frontier, root, e, &mut work) {
                return Ok(());
            }
            let entries = (0..n).flat_map(|u| {
                let (lo, hi) = (g.offsets.data[u] as usize, g.offsets.data[u + 1] as usize);
                g.targets.data[lo..hi].iter().map(move |&v| (u as u32, v))
            });
            graph::validate_bfs_tree(&parent.data, root, entries)
                .map_err(|m| graph::failure(NAME, format!("BFS from source {root} fails validation: {m}")))?;
        }
        e.progress(work.total, work.total);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessKind;
    use crate::workload::tests::emitted;

    #[test]
    fn instruction_model_matches_the_search() {
        // On both inputs the run validates (run() errors otherwise) and the
        // counts follow the documented model exactly.
        for kind in ["rmat", "random"] {
            let kv = [("graph", kind), ("scale", "10"), ("edgefactor", "4")];
            let recs = emitted(NAME, &kv, 2);
            let g = GraphInput { kind: if kind == "rmat" { graph::GraphKind::Rmat } else { graph::GraphKind::Random }, scale: 10, edgefactor: 4 };
            let csr = g.csr(2, true);
            let root = graph::sample_roots(&csr.offsets, 1, &mut component_rng(2, "workload.bfs.roots"))[0];
            // Host BFS: reached vertices and scanned entries.
            let mut seen = vec![false; csr.n()];
            let mut q = vec![root];
            seen[root as usize] = true;
            let mut scanned = 0u64;
            let mut i = 0;
            while i < q.len() {
                let u = q[i] as usize;
                i += 1;
                for &v in csr.neighbors(u) {
                    scanned += 1;
                    if !seen[v as usize] {
                        seen[v as usize] = true;
                        q.push(v);
                    }
                }
            }
            let reached = q.len() as u64;
            let n = 1024u64;
            let loads = recs.iter().filter(|r| r.2 == AccessKind::Load).count() as u64;
            let stores = recs.len() as u64 - loads;
            assert_eq!(loads, 3 * reached + 2 * scanned, "{kind}");
            assert_eq!(stores, n + 2 + 2 * (reached - 1), "{kind}");
            let ins: u64 = recs.iter().map(|r| r.0 as u64).sum();
            assert_eq!(ins, 2 * n + 3 + 5 * reached + 4 * scanned + 3 * (reached - 1), "{kind}");
        }
    }

    #[test]
    fn neighbour_loads_depend_on_the_list_and_parent_on_the_neighbour() {
        use crate::workload::tests::{check_deps, emitted_deps};
        let kv = [("graph", "rmat"), ("scale", "10"), ("edgefactor", "4")];
        let (recs, deps) = emitted_deps(NAME, &kv, 2);
        let share = check_deps(&recs, &deps);
        // Allocation order: offsets, targets, Frontier, Parent.
        let g = GraphInput { kind: graph::GraphKind::Rmat, scale: 10, edgefactor: 4 };
        let csr = g.csr(2, true);
        let mut space = AddressSpace::new();
        let g = SimCsr::place(&mut space, csr);
        let frontier = SimVec::alloc(&mut space, g.n(), 0u32);
        let parent = SimVec::alloc(&mut space, g.n(), NONE);
        let within = |v: &SimVec<u32>, a: u64| (v.base..v.base + v.bytes()).contains(&a);
        let within64 = |v: &SimVec<u64>, a: u64| (v.base..v.base + v.bytes()).contains(&a);
        let (mut parent_loads, mut target_loads) = (0, 0);
        for (i, r) in recs.iter().enumerate() {
            let d = deps[i] as usize;
            let producer = (d != 0).then(|| recs[i - d]);
            if r.2 == AccessKind::Load && within(&parent, r.1) {
                // parent[v]: v is the value of the targets[k] load just before.
                parent_loads += 1;
                let p = producer.expect("parent[v] load without a dependency");
                assert_eq!(d, 1);
                assert!(within(&g.targets, p.1));
                let k = ((p.1 - g.targets.base) / 4) as usize;
                assert_eq!(parent.addr(g.targets.data[k] as usize), r.1);
            } else if within(&g.targets, r.1) {
                // targets[k] on the offsets[u] load that starts the list.
                target_loads += 1;
                let p = producer.expect("targets[k] load without a dependency");
                assert!(within64(&g.offsets, p.1));
                let u = ((p.1 - g.offsets.base) / 8) as usize;
                let k = ((r.1 - g.targets.base) / 4) as u64;
                assert!((g.offsets.data[u]..g.offsets.data[u + 1]).contains(&k));
            } else if within64(&g.offsets, r.1) {
                // offsets[u] and offsets[u+1] on the Frontier[head] load of u.
                let p = producer.expect("offsets load without a dependency");
                assert!(within(&frontier, p.1));
                assert!(d == 1 || d == 2, "{d}");
            } else {
                // Frontier loads and the initialising stores: none.
                assert!(d == 0 || (r.2 == AccessKind::Store && within(&parent, r.1)));
            }
        }
        assert!(parent_loads > 1000 && parent_loads == target_loads);
        assert!(share > 0.5, "{share}");
    }
}
