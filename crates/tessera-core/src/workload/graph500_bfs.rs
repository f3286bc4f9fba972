//! `graph500-bfs`: the Graph500 breadth-first search benchmark (kernel 2,
//! optionally kernel 1), serial reference version.
//!
//! ## What it models
//! The Graph500 reference flow on one process: generate the Kronecker edge
//! list ([`super::graph::kronecker_edges`]), build the CSR (kernel 1), sample
//! `roots` search keys of degree ≥ 1, and for each root run the top-down queue
//! BFS of the reference `seq-csr` code ([`super::graph::bfs_top_down`]), then
//! validate its parent array with the Graph500 rules
//! ([`super::graph::validate_bfs_tree`]). A parent array that fails validation
//! is an error: the BFS is really a BFS.
//!
//! Layout (in allocation order, each by `malloc`, so large arrays are 2 MiB-
//! aligned mmaps): the edge list (`2 × u32` per edge), CSR `offsets`
//! (`u64 × (n+1)`), CSR `targets` (`u32` per directed entry), `parent`
//! (`u32 × n`), `queue` (`u32 × n`). Parallel edges are kept and neighbour
//! lists are in edge-list order, as in the reference `seq-csr`.
//!
//! Emitted per root: the `parent` initialisation and the BFS, with the
//! instruction model of [`super::graph::bfs_top_down`] (per neighbour entry 4
//! instructions and 2 loads, plus 3 instructions and 2 stores when it reaches a
//! new vertex). Validation is host-only, as Graph500 does not time it.
//!
//! With `construct=true`, kernel 1 is emitted first, building the CSR in place
//! in the way a C program does with no scratch array:
//! - zero `offsets` (per entry: 1 + store);
//! - count degrees, per edge: 2 + load the edge (8 bytes), then for each end
//!   that is not a self-loop 2 + load `offsets[x+1]`, 1 + store it;
//! - prefix sum, per entry: 1 + load `offsets[i]`, 2 + store it;
//! - fill, per edge: 2 + load the edge, then for each end: 2 + load
//!   `offsets[x]` (the cursor), 2 + store `targets[cursor]`, 1 + store
//!   `offsets[x]`;
//! - shift the cursors back into starts, per entry: 1 + load `offsets[i-1]`,
//!   2 + store `offsets[i]`; then 1 + store `offsets[0] = 0`.
//!
//! Dependencies: the BFS's, as [`super::graph::bfs_top_down`] gives them
//! (`offsets[u]` on `queue[head]`, `targets[k]` on `offsets[u]`, `parent[v]`
//! on `targets[k]`); in kernel 1, `offsets[x]` (load and store) on the edge
//! load that gave `x`, and `targets[cursor]` on the `offsets[x]` load.
//!
//! ## Choices
//! - Vertex ids are 32-bit. The reference uses `int64_t`, so its edge list,
//!   adjacency and parent arrays are twice as large as ours at equal scale.
//! - Default scale 18 (the smallest official class, "toy", is scale 26) and 4
//!   roots instead of 64, so a default run takes seconds; both are parameters.
//! - Roots come from the seed through `workload.graph500-bfs.roots`.

use super::emit::Dep;
use super::graph::{self, GraphInput, SimCsr, Work, NONE};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "graph500-bfs",
    summary: "Graph500: Kronecker graph, CSR, validated top-down BFS from sampled roots",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, false)?;
        let n = g.vertices();
        Ok(8 * g.edges() + SimCsr::bytes(n, g.max_nnz()) + 8 * n)
    },
    build: |p| Ok(Box::new(Graph500Bfs::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    graph::SCALE_PARAM,
    graph::EDGEFACTOR_GRAPH500,
    ParamDoc { name: "roots", default: "4", doc: "BFS runs, each from a distinct sampled root of degree >= 1 (Graph500: 64)" },
    ParamDoc { name: "construct", default: "false", doc: "emit the CSR construction (Graph500 kernel 1) before the searches" },
];

const NAME: &str = "graph500-bfs";

pub struct Graph500Bfs {
    graph: GraphInput,
    roots: u64,
    construct: bool,
    seed: u64,
}

impl Graph500Bfs {
    pub fn new(p: &Params) -> Result<Graph500Bfs> {
        Ok(Graph500Bfs {
            graph: GraphInput::from_params(p, false)?,
            roots: p.count_in("roots", 1, 1 << 20)?,
            construct: p.flag("construct")?,
            seed: p.seed(),
        })
    }
}

impl Workload for Graph500Bfs {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let n = self.graph.vertices() as usize;
        let edges = SimVec::from_vec(&mut space, self.graph.generate(self.seed));
        let g = if self.construct {
            match construct_csr(&mut space, n, &edges, e) {
                Some(g) => g,
                None => return Ok(()),
            }
        } else {
            SimCsr::place(&mut space, graph::build_csr(n, &edges.data, false))
        };
        let mut parent = SimVec::alloc(&mut space, n, NONE);
        let mut queue = SimVec::alloc(&mut space, n, 0u32);
        let mut rng = component_rng(self.seed, "workload.graph500-bfs.roots");
        let roots = graph::sample_roots(&g.offsets.data, self.roots as usize, &mut rng);
        if roots.is_empty() {
            return Err(graph::failure(NAME, "the graph has no edges, so there is no root to search from"));
        }
        let mut work = Work { done: 0, total: roots.len() as u64 * g.nnz() as u64 };
        for &root in &roots {
            if !graph::bfs_top_down(&g, &mut parent, &mut queue, root, e, &mut work) {
                return Ok(());
            }
            let pairs = edges.data.iter().map(|&[u, v]| (u, v));
            graph::validate_bfs_tree(&parent.data, root, pairs)
                .map_err(|m| graph::failure(NAME, format!("BFS from root {root} fails validation: {m}")))?;
        }
        e.progress(work.total, work.total);
        Ok(())
    }
}

/// Emit Graph500 kernel 1: build the CSR of `edges` in place (see the module
/// doc). Returns `None` if the emitter stopped.
pub(crate) fn construct_csr(
    space: &mut AddressSpace,
    n: usize,
    edges: &SimVec<[u32; 2]>,
    e: &mut Emitter,
) -> Option<SimCsr> {
    let mut off = SimVec::alloc(space, n + 1, 0u64);
    for i in 0..=n {
        e.ins(1);
        off.st(i, 0, e);
    }
    for k in 0..edges.len() {
        e.ins(2);
        let ([u, v], de) = edges.ld_on(k, Dep::NONE, e);
        if u != v {
            for x in [u as usize + 1, v as usize + 1] {
                e.ins(2);
                let d = off.ld_on(x, de, e).0;
                e.ins(1);
                off.st_on(x, d + 1, de, e);
            }
        }
        if k & 0xffff == 0xffff && e.stopped() {
            return None;
        }
    }
    let mut acc = 0u64;
    for i in 0..=n {
        e.ins(1);
        acc += off.ld(i, e);
        e.ins(2);
        off.st(i, acc, e);
    }
    let mut targets = SimVec::alloc(space, acc as usize, 0u32);
    for k in 0..edges.len() {
        e.ins(2);
        let ([u, v], de) = edges.ld_on(k, Dep::NONE, e);
        if u != v {
            for (x, y) in [(u as usize, v), (v as usize, u)] {
                e.ins(2);
                let (c, dc) = off.ld_on(x, de, e);
                e.ins(2);
                targets.st_on(c as usize, y, dc, e);
                e.ins(1);
                off.st_on(x, c + 1, de, e);
            }
        }
        if k & 0xffff == 0xffff && e.stopped() {
            return None;
        }
    }
    for i in (1..=n).rev() {
        e.ins(1);
        let s = off.ld(i - 1, e);
        e.ins(2);
        off.st(i, s, e);
    }
    e.ins(1);
    off.st(0, 0, e);
    Some(SimCsr { offsets: off, targets })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::component_rng;
    use crate::workload::emit::VecSink;
    use crate::workload::tests::{distinct_pages, emitted};

    #[test]
    fn emitted_construction_equals_host_csr() {
        let edges = graph::kronecker_edges(8, 8, true, &mut component_rng(3, "t"));
        let mut space = AddressSpace::new();
        let sim_edges = SimVec::from_vec(&mut space, edges.clone());
        let mut sink = VecSink::default();
        let mut e = Emitter::new(&mut sink);
        let g = construct_csr(&mut space, 256, &sim_edges, &mut e).unwrap();
        e.finish();
        let host = graph::build_csr(256, &edges, false);
        assert_eq!(g.offsets.data, host.offsets);
        assert_eq!(g.targets.data, host.targets);
        // Every directed entry was written exactly once.
        let target_stores = sink
            .records
            .iter()
            .filter(|r| r.2 == crate::AccessKind::Store && r.1 >= g.targets.base && r.1 < g.targets.base + g.targets.bytes())
            .count();
        assert_eq!(target_stores, host.nnz());
    }

    #[test]
    fn runs_validate_and_construct_adds_kernel_one() {
        let plain = emitted(NAME, &[("scale", "10"), ("roots", "3")], 1);
        let built = emitted(NAME, &[("scale", "10"), ("roots", "3"), ("construct", "true")], 1);
        assert!(built.len() > plain.len() + 2 * 16 * 1024);
        // The searches are the same once the CSR exists.
        assert_eq!(&built[built.len() - plain.len()..], &plain[..]);
        // 3 roots: each initialises all 1024 parent entries.
        let stores = plain.iter().filter(|r| r.2 == crate::AccessKind::Store).count();
        assert!(stores >= 3 * 1024);
        assert!(distinct_pages(&plain) > 0);
    }

    #[test]
    fn corrupted_parents_fail_validation() {
        let edges = graph::kronecker_edges(9, 16, true, &mut component_rng(5, "t"));
        let csr = graph::build_csr(512, &edges, false);
        let mut space = AddressSpace::new();
        let root = graph::sample_roots(&csr.offsets, 1, &mut component_rng(5, "r"))[0];
        let g = SimCsr::place(&mut space, csr);
        let mut parent = SimVec::alloc(&mut space, 512, NONE);
        let mut queue = SimVec::alloc(&mut space, 512, 0u32);
        let mut sink = crate::workload::NullSink;
        let mut e = Emitter::new(&mut sink);
        assert!(graph::bfs_top_down(&g, &mut parent, &mut queue, root, &mut e, &mut Work::default()));
        let pairs = || edges.iter().map(|&[u, v]| (u, v));
        let reached = graph::validate_bfs_tree(&parent.data, root, pairs()).unwrap();
        assert!(reached > 100, "giant component: {reached}");
        let tree: Vec<usize> = (0..512).filter(|&v| parent.data[v] != NONE && v != root as usize).collect();
        let far = *tree.last().unwrap();
        // 1. a vertex whose parent is not adjacent to it;
        let mut bad = parent.data.clone();
        let non_nbr = (0..512u32)
            .find(|&x| x as usize != far && bad[x as usize] != NONE && !g.targets.data[g.offsets.data[far] as usize..g.offsets.data[far + 1] as usize].contains(&x))
            .unwrap();
        bad[far] = non_nbr;
        assert!(graph::validate_bfs_tree(&bad, root, pairs()).is_err());
        // 2. a cycle;
        let mut bad = parent.data.clone();
        let p = bad[far] as usize;
        if p != root as usize {
            bad[p] = far as u32;
            assert!(graph::validate_bfs_tree(&bad, root, pairs()).unwrap_err().contains("cycle"));
        }
        // 3. a reached vertex dropped from the tree;
        let mut bad = parent.data.clone();
        bad[far] = NONE;
        assert!(graph::validate_bfs_tree(&bad, root, pairs()).is_err());
        // 4. a wrong root.
        let mut bad = parent.data.clone();
        bad[root as usize] = far as u32;
        assert!(graph::validate_bfs_tree(&bad, root, pairs()).is_err());
    }
}
