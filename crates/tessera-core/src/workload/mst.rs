//! `mst`: PBBS minimum spanning forest (`minSpanningForest`, serial Kruskal
//! with filtering).
//!
//! ## What it models
//! PBBS's serial MST on a weighted edge array:
//! 1. tag each edge with its index: copy `E[i]` (`{u, v, weight}`, 16 bytes)
//!    into `EI[i]` (`{u, v, weight, id}`, 24 bytes);
//! 2. `nth_element` so that the `l = min(4n/3, m)` lightest edges are at the
//!    front, then sort that prefix by (weight, id);
//! 3. Kruskal over the prefix with a union-find;
//! 4. filter the remaining edges, keeping those whose ends are still in
//!    different components (packed down behind the prefix), sort them, and run
//!    Kruskal over them.
//!
//! The union-find is PBBS's: `parents[v] < 0` marks a root holding `-size`,
//! `find` does path splitting (each visited vertex is pointed at its
//! grandparent), and `union_roots` links the smaller tree under the larger.
//!
//! Layout (allocation order, each by `malloc`): the input `E` (`m × 16` bytes,
//! host-generated and not emitted, as PBBS reads it from a file), `EI`
//! (`m × 24`), `parents` (`i32 × n`), the output `mst` (`u32 × n`: edge ids,
//! preallocated where PBBS pushes back).
//!
//! Instruction model, per operation:
//! - tag: 2 + load `E[i]` (16 B), 2 + store `EI[i]` (24 B);
//! - comparison against a pivot held in registers: 2 + load the weight (8 B),
//!   plus 1 + load the id (4 B) when the weights tie;
//! - compare-and-swap of the median-of-3: 2 + load, 1 + load (weights), then
//!   a swap if out of order; then 1 + load of the pivot (24 B) into registers;
//! - swap: 4 accesses of 24 B (load, load, store, store), 1 instruction each;
//! - insertion sort: 1 + load the element, per step 2 + load the neighbour and
//!   1 + store it one slot up, finally 1 + store the element;
//! - union-find: `find` 2 + load per parent read, 1 + store per path-splitting
//!   write; `union_roots` 1 + load, 1 + load, 2 + store, 1 + store;
//! - Kruskal step: 2 + load `u`, 1 + load `v`, two finds, 1 (compare), and for
//!   a taken edge a union, 1 + load `id`, 2 + store `mst[k]`;
//! - filter step: the same loads and finds, and for a kept edge 1 + load and
//!   1 + store of the 24-byte element;
//! - `parents` initialisation: 1 + store per vertex.
//!
//! Dependencies: `find`'s first `parents[u]` load depends on the edge's `u`
//! (or `v`) load, each further parent read on the read before it (a pointer
//! chase up the tree), each path-splitting store on the read that gave its
//! vertex; `union_roots`' loads and stores on the loads that gave the two
//! roots. Sorting and tagging index by counters and have none.
//!
//! Sorting follows `std::sort`/`std::nth_element` in outline: Hoare partition
//! around the median of three, recursing into the smaller side, insertion sort
//! below 17 elements.
//!
//! ## Choices
//! - `rounds` (default 1, PBBS's `-r`) repeats the kernel on the same input.
//!   Each round allocates its arrays afresh at the addresses the previous
//!   round freed, as glibc and Linux typically hand them back.
//! - Input: the graph from [`super::graph`] (deduplicated), each undirected
//!   edge once, in shuffled order (PBBS's edge files list edges in generation
//!   order), with weights `k / 2^32` for a uniform 32-bit `k`
//!   (`workload.mst.input`). PBBS's `addWeights` draws uniform doubles; these
//!   are uniform too and exact in `f64`.
//! - Ties between weights are broken by edge id, as PBBS's `edgeLess` does.

use std::mem::offset_of;

use rand::RngCore;

use super::emit::Dep;
use super::graph::{self, GraphInput, Round};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "mst",
    summary: "PBBS minimum spanning forest: filter-Kruskal with sort and union-find on a weighted edge array",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, true)?;
        Ok(g.edges() * (16 + 24) + 8 * g.vertices())
    },
    build: |p| Ok(Box::new(Mst::new(p)?)),
};

const PARAMS: &[ParamDoc] =
    &[graph::GRAPH_PARAM, graph::SCALE_PARAM, graph::EDGEFACTOR_PBBS, graph::ROUNDS_PARAM];

/// PBBS `wghEdge<vertexId, double>`.
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct WghEdge {
    pub u: u32,
    pub v: u32,
    pub w: f64,
}

/// PBBS `edgeAndIndex` (24 bytes with padding).
#[repr(C)]
#[derive(Copy, Clone, Debug, Default, PartialEq)]
pub struct EdgeAndIndex {
    pub u: u32,
    pub v: u32,
    pub w: f64,
    pub id: u32,
}

const W_OFF: u64 = offset_of!(EdgeAndIndex, w) as u64;
const V_OFF: u64 = offset_of!(EdgeAndIndex, v) as u64;
const ID_OFF: u64 = offset_of!(EdgeAndIndex, id) as u64;

/// Below this many elements, sorts finish with insertion sort (as libstdc++).
const INSERTION_MAX: usize = 16;

pub struct Mst {
    graph: GraphInput,
    rounds: u64,
    seed: u64,
}

impl Mst {
    pub fn new(p: &Params) -> Result<Mst> {
        Ok(Mst {
            graph: GraphInput::from_params(p, true)?,
            rounds: p.count_in("rounds", 1, 1 << 20)?,
            seed: p.seed(),
        })
    }
}

/// The weighted edge array of the `mst` input (host only).
pub fn weighted_edges(graph: &GraphInput, seed: u64) -> Vec<WghEdge> {
    let csr = graph.csr(seed, true);
    let mut rng = component_rng(seed, "workload.mst.input");
    let edges = graph::edge_array(&csr, &mut rng);
    drop(csr);
    edges
        .into_iter()
        .map(|[u, v]| WghEdge { u, v, w: rng.next_u32() as f64 / 4294967296.0 })
        .collect()
}

impl Workload for Mst {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let n = self.graph.vertices() as usize;
        let edges = SimVec::from_vec(&mut space, weighted_edges(&self.graph, self.seed));
        for index in 0..self.rounds {
            // Each round's arrays land where the previous round's were freed.
            let mut round_space = space.clone();
            if kruskal(&mut round_space, n, &edges, Round { index, count: self.rounds }, e).is_none() {
                break;
            }
        }
        Ok(())
    }
}

#[inline(always)]
fn lt(a: &EdgeAndIndex, b: &EdgeAndIndex) -> bool {
    a.w < b.w || (a.w == b.w && a.id < b.id)
}

/// Load the key of `a[i]` for a comparison with `p` (id only on a tie).
#[inline(always)]
fn key(a: &SimVec<EdgeAndIndex>, i: usize, p: &EdgeAndIndex, e: &mut Emitter) -> EdgeAndIndex {
    e.ins(2);
    e.load(a.addr(i) + W_OFF, 8);
    let x = a.data[i];
    if x.w == p.w {
        e.ins(1);
        e.load(a.addr(i) + ID_OFF, 4);
    }
    x
}

#[inline(always)]
fn swap(a: &mut SimVec<EdgeAndIndex>, i: usize, j: usize, e: &mut Emitter) {
    e.ins(1);
    let x = a.ld(i, e);
    e.ins(1);
    let y = a.ld(j, e);
    e.ins(1);
    a.st(i, y, e);
    e.ins(1);
    a.st(j, x, e);
}

/// Order `a[i] <= a[j]`.
#[inline(always)]
fn compare_swap(a: &mut SimVec<EdgeAndIndex>, i: usize, j: usize, e: &mut Emitter) {
    e.ins(2);
    e.load(a.addr(i) + W_OFF, 8);
    e.ins(1);
    e.load(a.addr(j) + W_OFF, 8);
    if lt(&a.data[j], &a.data[i]) {
        swap(a, i, j, e);
    }
}

/// Hoare partition of `a[lo..hi]` (`hi - lo >= 3`) around the median of
/// three; returns `s` with `lo < s < hi`, `a[lo..s] <= a[s..hi]`.
fn partition(a: &mut SimVec<EdgeAndIndex>, lo: usize, hi: usize, e: &mut Emitter) -> usize {
    let mid = lo + (hi - lo - 1) / 2;
    compare_swap(a, lo, mid, e);
    compare_swap(a, mid, hi - 1, e);
    compare_swap(a, lo, mid, e);
    e.ins(1);
    let p = a.ld(mid, e);
    let mut i = lo.wrapping_sub(1);
    let mut j = hi;
    loop {
        loop {
            i = i.wrapping_add(1);
            let x = key(a, i, &p, e);
            if !lt(&x, &p) {
                break;
            }
        }
        loop {
            j -= 1;
            let x = key(a, j, &p, e);
            if !lt(&p, &x) {
                break;
            }
        }
        if i >= j {
            return j + 1;
        }
        swap(a, i, j, e);
    }
}

fn insertion_sort(a: &mut SimVec<EdgeAndIndex>, lo: usize, hi: usize, e: &mut Emitter) {
    for i in lo + 1..hi {
        e.ins(1);
        let x = a.ld(i, e);
        let mut j = i;
        while j > lo {
            e.ins(2);
            let y = a.ld(j - 1, e);
            if !lt(&x, &y) {
                break;
            }
            e.ins(1);
            a.st(j, y, e);
            j -= 1;
        }
        e.ins(1);
        a.st(j, x, e);
    }
}

/// Sort `a[lo..hi]` by (weight, id).
pub fn sort(a: &mut SimVec<EdgeAndIndex>, mut lo: usize, mut hi: usize, e: &mut Emitter) {
    while hi - lo > INSERTION_MAX {
        if e.stopped() {
            return;
        }
        let s = partition(a, lo, hi, e);
        if s - lo < hi - s {
            sort(a, lo, s, e);
            lo = s;
        } else {
            sort(a, s, hi, e);
            hi = s;
        }
    }
    insertion_sort(a, lo, hi, e);
}

/// Partially order `a[lo..hi]` so that `a[lo..nth] <= a[nth..hi]`.
pub fn select(a: &mut SimVec<EdgeAndIndex>, mut lo: usize, mut hi: usize, nth: usize, e: &mut Emitter) {
    while hi - lo > INSERTION_MAX {
        if e.stopped() {
            return;
        }
        let s = partition(a, lo, hi, e);
        if nth < s {
            hi = s;
        } else {
            lo = s;
        }
    }
    insertion_sort(a, lo, hi, e);
}

/// PBBS `unionFind::find` with path splitting. `di` is the load that gave
/// `i`; returns the root and the load that gave it.
#[inline(always)]
fn find(uf: &mut SimVec<i32>, i: u32, di: Dep, e: &mut Emitter) -> (u32, Dep) {
    e.ins(2);
    let (pi, dpi) = uf.ld_on(i as usize, di, e);
    if pi < 0 {
        return (i, di);
    }
    let (mut i, mut p) = (i, pi as u32);
    let (mut di, mut dp) = (di, dpi);
    e.ins(2);
    let (mut gp, mut dgp) = uf.ld_on(p as usize, dp, e);
    while gp >= 0 {
        e.ins(1);
        uf.st_on(i as usize, gp, di, e);
        (i, di) = (p, dp);
        (p, dp) = (gp as u32, dgp);
        e.ins(2);
        (gp, dgp) = uf.ld_on(p as usize, dp, e);
    }
    (p, dp)
}

/// PBBS `unionFind::union_roots`: the smaller tree goes under the larger.
/// `du`, `dv`: the loads that gave the roots `u`, `v`.
#[inline(always)]
fn union_roots(uf: &mut SimVec<i32>, (u, du): (u32, Dep), (v, dv): (u32, Dep), e: &mut Emitter) {
    e.ins(1);
    let pu = uf.ld_on(u as usize, du, e).0;
    e.ins(1);
    let pv = uf.ld_on(v as usize, dv, e).0;
    let (u, v, du, dv, pu, pv) = if pv < pu { (v, u, dv, du, pv, pu) } else { (u, v, du, dv, pu, pv) };
    e.ins(2);
    uf.st_on(u as usize, pu + pv, du, e);
    e.ins(1);
    uf.st_on(v as usize, u as i32, dv, e);
}

/// Kruskal over sorted `ei[lo..hi]`, appending taken edge ids to `mst`.
fn union_find_loop(
    ei: &SimVec<EdgeAndIndex>,
    lo: usize,
    hi: usize,
    uf: &mut SimVec<i32>,
    mst: &mut SimVec<u32>,
    taken: &mut usize,
    e: &mut Emitter,
) -> bool {
    for i in lo..hi {
        e.ins(2);
        let du = e.load_on(ei.addr(i), 4, Dep::NONE);
        e.ins(1);
        let dv = e.load_on(ei.addr(i) + V_OFF, 4, Dep::NONE);
        let x = ei.data[i];
        let u = find(uf, x.u, du, e);
        let v = find(uf, x.v, dv, e);
        e.ins(1);
        if u.0 != v.0 {
            union_roots(uf, u, v, e);
            e.ins(1);
            e.load(ei.addr(i) + ID_OFF, 4);
            e.ins(2);
            mst.st(*taken, x.id, e);
            *taken += 1;
        }
        if i & 0xffff == 0xffff && e.stopped() {
            return false;
        }
    }
    true
}

/// PBBS serial filter-Kruskal over `edges` (see the module doc). Returns the
/// ids of the forest's edges, or `None` if the emitter stopped.
pub fn kruskal(space: &mut AddressSpace, n: usize, edges: &SimVec<WghEdge>, r: Round, e: &mut Emitter) -> Option<Vec<u32>> {
    let m = edges.len();
    let total = 4 * m as u64 + 1;
    let mut ei = SimVec::alloc(space, m, EdgeAndIndex::default());
    for i in 0..m {
        e.ins(2);
        let x = edges.ld(i, e);
        e.ins(2);
        ei.st(i, EdgeAndIndex { u: x.u, v: x.v, w: x.w, id: i as u32 }, e);
        if i & 0xffff == 0xffff {
            r.report(e, i as u64, total);
            if e.stopped() {
                return None;
            }
        }
    }
    let l = (4 * n / 3).min(m);
    if l < m {
        select(&mut ei, 0, m, l, e);
    }
    sort(&mut ei, 0, l, e);
    r.report(e, 2 * m as u64, total);
    let mut uf = SimVec::alloc(space, n, -1i32);
    for i in 0..n {
        e.ins(1);
        uf.st(i, -1, e);
    }
    let mut mst = SimVec::alloc(space, n, 0u32);
    let mut taken = 0usize;
    if e.stopped() || !union_find_loop(&ei, 0, l, &mut uf, &mut mst, &mut taken, e) {
        return None;
    }
    r.report(e, 3 * m as u64, total);
    let mut kept = 0usize;
    for i in l..m {
        e.ins(2);
        let du = e.load_on(ei.addr(i), 4, Dep::NONE);
        e.ins(1);
        let dv = e.load_on(ei.addr(i) + V_OFF, 4, Dep::NONE);
        let x = ei.data[i];
        let (u, _) = find(&mut uf, x.u, du, e);
        let (v, _) = find(&mut uf, x.v, dv, e);
        if u != v {
            e.ins(1);
            let y = ei.ld(i, e);
            e.ins(1);
            ei.st(l + kept, y, e);
            kept += 1;
        }
        if i & 0xffff == 0xffff && e.stopped() {
            return None;
        }
    }
    sort(&mut ei, l, l + kept, e);
    if e.stopped() || !union_find_loop(&ei, l, l + kept, &mut uf, &mut mst, &mut taken, e) {
        return None;
    }
    r.report(e, total, total);
    mst.data.truncate(taken);
    Some(mst.data)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;

    fn run_kruskal(n: usize, edges: Vec<WghEdge>) -> Vec<u32> {
        let mut space = AddressSpace::new();
        let edges = SimVec::from_vec(&mut space, edges);
        let mut sink = NullSink;
        let mut e = Emitter::new(&mut sink);
        kruskal(&mut space, n, &edges, Round::ONE, &mut e).unwrap()
    }

    /// Prim's algorithm on a dense matrix, tree by tree: (total key, edges).
    fn prim_forest(n: usize, edges: &[WghEdge]) -> (u64, usize) {
        let key = |w: f64| (w * 4294967296.0) as u64;
        let mut adj = vec![u64::MAX; n * n];
        for x in edges {
            let (u, v, k) = (x.u as usize, x.v as usize, key(x.w));
            adj[u * n + v] = adj[u * n + v].min(k);
            adj[v * n + u] = adj[v * n + u].min(k);
        }
        let mut done = vec![false; n];
        let (mut total, mut count) = (0u64, 0usize);
        for s in 0..n {
            if done[s] {
                continue;
            }
            let mut best = vec![u64::MAX; n];
            best[s] = 0;
            loop {
                let next = (0..n).filter(|&v| !done[v] && best[v] != u64::MAX).min_by_key(|&v| best[v]);
                let Some(u) = next else { break };
                done[u] = true;
                if u != s {
                    total += best[u];
                    count += 1;
                }
                for v in 0..n {
                    if !done[v] {
                        best[v] = best[v].min(adj[u * n + v]);
                    }
                }
            }
        }
        (total, count)
    }

    #[test]
    fn forest_weight_equals_prim() {
        for (kind, seed) in [(graph::GraphKind::Rmat, 1), (graph::GraphKind::Random, 2), (graph::GraphKind::Rmat, 3)] {
            let g = GraphInput { kind, scale: 8, edgefactor: 3 };
            let edges = weighted_edges(&g, seed);
            let ids = run_kruskal(256, edges.clone());
            let key = |w: f64| (w * 4294967296.0) as u64;
            let total: u64 = ids.iter().map(|&i| key(edges[i as usize].w)).sum();
            let (want, count) = prim_forest(256, &edges);
            assert_eq!(ids.len(), count, "{kind:?}");
            assert_eq!(total, want, "{kind:?}");
            assert!(edges.len() > 4 * 256 / 3, "the filter phase must be exercised");
        }
    }

    #[test]
    fn select_and_sort_order_the_array() {
        let mut rng = component_rng(9, "t");
        let data: Vec<EdgeAndIndex> = (0..5000u32)
            .map(|id| EdgeAndIndex { u: 0, v: 0, w: (rng.next_u32() % 300) as f64, id })
            .collect();
        let mut space = AddressSpace::new();
        let mut a = SimVec::from_vec(&mut space, data.clone());
        let mut sink = NullSink;
        let mut e = Emitter::new(&mut sink);
        select(&mut a, 0, 5000, 1234, &mut e);
        let max_front = a.data[..1234].iter().fold(f64::MIN, |m, x| m.max(x.w));
        assert!(a.data[1234..].iter().all(|x| x.w >= max_front));
        sort(&mut a, 0, 1234, &mut e);
        assert!(a.data[..1234].windows(2).all(|w| lt(&w[0], &w[1])));
        sort(&mut a, 0, 5000, &mut e);
        let mut want = data;
        want.sort_by(|x, y| x.w.partial_cmp(&y.w).unwrap().then(x.id.cmp(&y.id)));
        assert_eq!(a.data, want);
    }
}
