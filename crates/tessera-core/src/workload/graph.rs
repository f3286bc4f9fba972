//! Graph inputs shared by the graph workloads: the Graph500 Kronecker (R-MAT)
//! generator, a uniform random generator, compressed sparse row (CSR)
//! construction, Graph500 root sampling and BFS-tree validation, and the
//! top-down BFS kernel that `graph500-bfs` and `bfs` share.
//!
//! ## What it models
//! - **Kronecker / R-MAT** ([`kronecker_edges`]): the Graph500 reference
//!   generator as its specification gives it (`octave/kronecker_generator.m`):
//!   `2^scale` vertices and `edgefactor × 2^scale` edges. For each edge and each
//!   of the `scale` bit levels the (row bit, column bit) pair is (0,0), (0,1),
//!   (1,0), (1,1) with probability A, B, C, D = 0.57, 0.19, 0.19, 0.05. (The
//!   reference draws the row bit, then the column bit conditioned on it; one
//!   draw over the four quadrants has exactly the same law.) Then, as in the
//!   reference, vertex labels are relabelled by a uniformly random permutation
//!   (`p = randperm(N); ij = p(ij)`) and the edge list is shuffled
//!   (`ij = ij(:, randperm(M))`), so neither vertex ids nor edge order carry
//!   locality.
//! - **Uniform random** ([`uniform_edges`]): the same vertex and edge counts
//!   with both endpoints of every edge drawn uniformly and independently
//!   (G(n, m) with replacement), for the PBBS-style `graph=random` inputs. PBBS's
//!   own `randLocalGraph` biases neighbours towards nearby ids; this one does
//!   not, so it is the no-skew, no-locality contrast to R-MAT.
//! - **CSR** ([`build_csr`]): undirected, so each input edge {u, v} gives u→v
//!   and v→u; self-loops are dropped (as in the Graph500 reference CSR and
//!   PBBS's symmetric graphs). `dedupe = false` keeps parallel edges and leaves
//!   each neighbour list in input-edge order, as the Graph500 reference
//!   `seq-csr` builder does; `dedupe = true` sorts each neighbour list and
//!   removes repeats, giving the simple graphs PBBS's generators write.
//! - **Roots** ([`sample_roots`]): distinct vertices of degree ≥ 1 (self-loops
//!   not counted), sampled uniformly as the Graph500 specification requires.
//! - **Validation** ([`validate_bfs_tree`]): the Graph500 rules (see the
//!   function).
//! - **BFS** ([`bfs_top_down`]): the serial top-down queue BFS of the Graph500
//!   reference (`seq-csr`) and of PBBS (`serialBFS`), which are the same loop.
//!   Dependencies: `offsets[u]`, `offsets[u+1]` depend on the `queue[head]`
//!   load that gave `u`; `targets[k]` on the `offsets[u]` load (the list's
//!   start); `parent[v]` (load and store) on the `targets[k]` load that gave
//!   `v`. The `queue[tail]` store's address is a register counter: none.
//!
//! ## Choices
//! - Generation, CSR construction, root sampling and validation run on the host
//!   and emit nothing: neither Graph500 (kernel 2) nor PBBS times them. Only
//!   `graph500-bfs construct=true` emits its CSR construction (kernel 1).
//! - Vertex ids are `u32` (scale ≤ 31; `u32::MAX` is [`NONE`]), CSR offsets are
//!   `u64`. Host memory for the graph is about 8 bytes per generated edge for
//!   the edge list (dropped after the build unless the workload keeps it) plus
//!   8 per edge for the CSR and 16 per vertex; deduplication works in place.
//!   Workloads add their own arrays (listed in each module).
//! - Randomness: the graph comes from the run seed through the component name
//!   `workload.graph.rmat` / `workload.graph.random`, so every graph workload
//!   given the same seed, kind, scale and edge factor sees the same graph.
//! - Quadrant draws use 16 bits each, four levels per 64-bit random number;
//!   the initiator probabilities are quantised to 1/65536 (off by < 2·10^-5),
//!   which keeps generation a small share of a run.
//! - A deduplicated CSR does not depend on edge order, so [`GraphInput::csr`]
//!   skips the R-MAT edge shuffle when deduplicating (same graph, less set-up).

use rand::{Rng, RngCore};

use super::emit::Dep;
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params};
use crate::error::{Error, Result};
use crate::rng::{component_rng, SimRng};

/// "No vertex": an unvisited parent, an empty list head.
pub const NONE: u32 = u32::MAX;

/// Graph500 initiator probabilities (D = 1 - A - B - C = 0.05).
pub const RMAT_A: f64 = 0.57;
pub const RMAT_B: f64 = 0.19;
pub const RMAT_C: f64 = 0.19;

/// Largest supported scale: vertex ids are `u32` and `u32::MAX` is [`NONE`].
pub const MAX_SCALE: u64 = 31;

/// Parameter `graph` of the PBBS-style kernels.
pub const GRAPH_PARAM: ParamDoc = ParamDoc {
    name: "graph",
    default: "rmat",
    doc: "input graph: rmat (Kronecker, Graph500 initiator 0.57/0.19/0.19/0.05) or random (uniform endpoints)",
};

/// Parameter `scale` (default 18: 262144 vertices).
pub const SCALE_PARAM: ParamDoc =
    ParamDoc { name: "scale", default: "18", doc: "log2 of the vertex count (2^scale vertices), 1 to 31" };

/// Parameter `edgefactor` with the Graph500 default of 16.
pub const EDGEFACTOR_GRAPH500: ParamDoc = ParamDoc {
    name: "edgefactor",
    default: "16",
    doc: "generated edges per vertex (edgefactor x 2^scale undirected edges before self-loops are dropped), 1 to 1024",
};

/// Parameter `edgefactor` with a PBBS-like default: PBBS's standard graph
/// inputs have 10 to 12 edges per vertex (`randLocalGraph_*_10_20000000`,
/// `rMatGraph_*_12_16000000`).
pub const EDGEFACTOR_PBBS: ParamDoc = ParamDoc {
    name: "edgefactor",
    default: "10",
    doc: "generated edges per vertex (edgefactor x 2^scale undirected edges before dedupe), 1 to 1024",
};

/// Which generator.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum GraphKind {
    Rmat,
    Random,
}

/// A graph to generate, from a workload's parameters.
#[derive(Copy, Clone, Debug)]
pub struct GraphInput {
    pub kind: GraphKind,
    pub scale: u32,
    pub edgefactor: u64,
}

impl GraphInput {
    /// Read `scale`, `edgefactor` and (if `has_kind`) `graph`.
    pub fn from_params(p: &Params, has_kind: bool) -> Result<GraphInput> {
        let kind = if has_kind {
            match p.choice("graph", &["rmat", "random"])? {
                "random" => GraphKind::Random,
                _ => GraphKind::Rmat,
            }
        } else {
            GraphKind::Rmat
        };
        Ok(GraphInput {
            kind,
            scale: p.count_in("scale", 1, MAX_SCALE)? as u32,
            edgefactor: p.count_in("edgefactor", 1, 1024)?,
        })
    }

    pub fn vertices(&self) -> u64 {
        1 << self.scale
    }

    /// Generated (undirected) edges, self-loops and repeats included.
    pub fn edges(&self) -> u64 {
        self.edgefactor << self.scale
    }

    /// Upper bound on CSR entries (2 per generated edge).
    pub fn max_nnz(&self) -> u64 {
        2 * self.edges()
    }

    /// The generated edge list, in generation order (host only).
    pub fn generate(&self, seed: u64) -> Vec<[u32; 2]> {
        self.generate_edges(seed, true)
    }

    /// `shuffle_edges = false` skips the R-MAT edge shuffle, for callers whose
    /// result does not depend on edge order (a deduplicated CSR).
    fn generate_edges(&self, seed: u64, shuffle_edges: bool) -> Vec<[u32; 2]> {
        match self.kind {
            GraphKind::Rmat => kronecker_edges(
                self.scale,
                self.edgefactor,
                shuffle_edges,
                &mut component_rng(seed, "workload.graph.rmat"),
            ),
            GraphKind::Random => {
                uniform_edges(self.scale, self.edgefactor, &mut component_rng(seed, "workload.graph.random"))
            }
        }
    }

    /// Generate and build the CSR, dropping the edge list (host only). A
    /// deduplicated CSR's sorted lists do not depend on edge order, so the
    /// R-MAT shuffle is skipped for it (same result, less time).
    pub fn csr(&self, seed: u64, dedupe: bool) -> Csr {
        let edges = self.generate_edges(seed, !dedupe);
        build_csr(self.vertices() as usize, &edges, dedupe)
    }
}

/// Quadrant of a uniform 16-bit draw: `r < A` → (0,0), `< A+B` → (0,1),
/// `< A+B+C` → (1,0), else (1,1), as `ii << 1 | jj`.
fn quadrant_table() -> Box<[u8; 65536]> {
    let t = |p: f64| (p * 65536.0).round() as usize;
    let (t_a, t_ab, t_abc) = (t(RMAT_A), t(RMAT_A + RMAT_B), t(RMAT_A + RMAT_B + RMAT_C));
    let mut table = Box::new([0u8; 65536]);
    for (r, q) in table.iter_mut().enumerate() {
        *q = match r {
            r if r < t_a => 0b00,
            r if r < t_ab => 0b01,
            r if r < t_abc => 0b10,
            _ => 0b11,
        };
    }
    table
}

/// Bits 0, 2, 4, … of `x`, packed.
#[inline(always)]
fn compact_odd(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    x = (x | (x >> 4)) & 0x00ff_00ff_00ff_00ff;
    x = (x | (x >> 8)) & 0x0000_ffff_0000_ffff;
    x = (x | (x >> 16)) & 0x0000_0000_ffff_ffff;
    x as u32
}

/// Fisher-Yates shuffle (uniform; platform-independent index draws).
pub fn shuffle<T>(v: &mut [T], rng: &mut SimRng) {
    for i in (1..v.len()).rev() {
        let j = rng.gen_range(0..=i as u64) as usize;
        v.swap(i, j);
    }
}

/// A uniformly random permutation of `0..n`.
pub fn random_permutation(n: usize, rng: &mut SimRng) -> Vec<u32> {
    let mut p: Vec<u32> = (0..n as u64).map(|v| v as u32).collect();
    shuffle(&mut p, rng);
    p
}

/// The Graph500 Kronecker edge list: `edgefactor × 2^scale` edges over
/// `2^scale` vertices, labels permuted and (if `shuffle_edges`) the edge list
/// shuffled.
///
/// Each level picks the quadrant (row bit, column bit) with probabilities A,
/// B, C, D in one draw. That is exactly the joint law of the reference's two
/// conditional draws (`P(0,0) = (A+B)·A/(A+B) = A`, and so on). A draw is 16
/// bits of a 64-bit xoshiro output looked up in a quadrant table, so four
/// levels take one random number; the probabilities are quantised to 1/65536
/// (A = 0.570007, B = 0.189987, C = 0.190002, D = 0.050003).
pub fn kronecker_edges(scale: u32, edgefactor: u64, shuffle_edges: bool, rng: &mut SimRng) -> Vec<[u32; 2]> {
    assert!((1..=MAX_SCALE as u32).contains(&scale));
    let n = 1usize << scale;
    let m = edgefactor as usize * n;
    let table = quadrant_table();
    let q = |r: u64, c: u32| table[(r >> (16 * c)) as u16 as usize] as u64;
    let (full, rest) = (scale / 4, scale % 4);
    let mut edges = Vec::with_capacity(m);
    for _ in 0..m {
        // Level l's quadrant (ii << 1 | jj) lands at bits 2l+1..2l of `code`.
        let mut code = 0u64;
        let mut shift = 0u32;
        for _ in 0..full {
            let r = rng.next_u64();
            code |= (q(r, 0) | q(r, 1) << 2 | q(r, 2) << 4 | q(r, 3) << 6) << shift;
            shift += 8;
        }
        if rest > 0 {
            let r = rng.next_u64();
            for c in 0..rest {
                code |= q(r, c) << (shift + 2 * c);
            }
        }
        edges.push([compact_odd(code >> 1), compact_odd(code)]);
    }
    let perm = random_permutation(n, rng);
    for e in edges.iter_mut() {
        *e = [perm[e[0] as usize], perm[e[1] as usize]];
    }
    if shuffle_edges {
        shuffle(&mut edges, rng);
    }
    edges
}

/// `edgefactor × 2^scale` edges with uniform, independent endpoints.
pub fn uniform_edges(scale: u32, edgefactor: u64, rng: &mut SimRng) -> Vec<[u32; 2]> {
    assert!((1..=MAX_SCALE as u32).contains(&scale));
    let n = 1u64 << scale;
    let m = (edgefactor << scale) as usize;
    let mut edges = Vec::with_capacity(m);
    for _ in 0..m {
        let r = rng.next_u64();
        // Multiply-shift range reduction of each 32-bit half (n ≤ 2^31).
        let u = ((r & 0xffff_ffff) * n) >> 32;
        let v = ((r >> 32) * n) >> 32;
        edges.push([u as u32, v as u32]);
    }
    edges
}

/// An undirected graph in compressed sparse row form (host copy).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Csr {
    /// `n + 1` offsets into `targets`.
    pub offsets: Vec<u64>,
    pub targets: Vec<u32>,
}

impl Csr {
    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn nnz(&self) -> usize {
        self.targets.len()
    }

    pub fn degree(&self, v: usize) -> u64 {
        self.offsets[v + 1] - self.offsets[v]
    }

    pub fn neighbors(&self, v: usize) -> &[u32] {
        &self.targets[self.offsets[v] as usize..self.offsets[v + 1] as usize]
    }

    /// Every directed entry `(u, v)`.
    pub fn entries(&self) -> impl Iterator<Item = (u32, u32)> + '_ {
        (0..self.n()).flat_map(move |u| self.neighbors(u).iter().map(move |&v| (u as u32, v)))
    }

    /// The same graph with each neighbour list sorted and repeats removed.
    pub fn sorted_dedup(self) -> Csr {
        let n = self.n();
        let Csr { mut offsets, mut targets } = self;
        let mut w = 0usize;
        let mut lo = 0usize;
        for a in 0..n {
            let hi = offsets[a + 1] as usize;
            targets[lo..hi].sort_unstable();
            let mut last = NONE;
            for k in lo..hi {
                let x = targets[k];
                if x != last {
                    targets[w] = x;
                    w += 1;
                    last = x;
                }
            }
            lo = hi;
            offsets[a + 1] = w as u64;
        }
        targets.truncate(w);
        targets.shrink_to_fit();
        Csr { offsets, targets }
    }
}

/// Hint the host CPU to fetch `v[i]` (no effect on results).
#[inline(always)]
fn prefetch<T>(v: &[T], i: usize) {
    #[cfg(target_arch = "x86_64")]
    if i < v.len() {
        // SAFETY: in bounds (checked); a prefetch never faults.
        unsafe {
            core::arch::x86_64::_mm_prefetch(v.as_ptr().add(i) as *const i8, core::arch::x86_64::_MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (v, i);
}

/// How many edges ahead the CSR build prefetches its scattered writes.
const PREFETCH_AHEAD: usize = 16;

/// Build the undirected CSR of `edges` over `n` vertices (see the module doc).
pub fn build_csr(n: usize, edges: &[[u32; 2]], dedupe: bool) -> Csr {
    let mut offsets = vec![0u64; n + 1];
    for (k, &[u, v]) in edges.iter().enumerate() {
        if let Some(&[pu, pv]) = edges.get(k + PREFETCH_AHEAD) {
            prefetch(&offsets, pu as usize + 1);
            prefetch(&offsets, pv as usize + 1);
        }
        if u != v {
            offsets[u as usize + 1] += 1;
            offsets[v as usize + 1] += 1;
        }
    }
    for i in 0..n {
        offsets[i + 1] += offsets[i];
    }
    let mut cursor: Vec<u64> = offsets[..n].to_vec();
    let mut targets = vec![0u32; offsets[n] as usize];
    for (k, &[u, v]) in edges.iter().enumerate() {
        // Scattered writes are the cost of a CSR build: fetch ahead the
        // cursors two edges on and the target slots they point at now.
        if let Some(&[pu, pv]) = edges.get(k + PREFETCH_AHEAD) {
            prefetch(&cursor, pu as usize);
            prefetch(&cursor, pv as usize);
        }
        if let Some(&[pu, pv]) = edges.get(k + PREFETCH_AHEAD / 2) {
            prefetch(&targets, cursor[pu as usize] as usize);
            prefetch(&targets, cursor[pv as usize] as usize);
        }
        if u != v {
            let cu = &mut cursor[u as usize];
            targets[*cu as usize] = v;
            *cu += 1;
            let cv = &mut cursor[v as usize];
            targets[*cv as usize] = u;
            *cv += 1;
        }
    }
    let csr = Csr { offsets, targets };
    if dedupe {
        csr.sorted_dedup()
    } else {
        csr
    }
}

/// PBBS edge-array form of a simple CSR: each undirected edge once as
/// `[u, v]` with `u < v`, in shuffled order (PBBS's generators write edges in
/// generation order, which for random graphs is random).
pub fn edge_array(csr: &Csr, rng: &mut SimRng) -> Vec<[u32; 2]> {
    let mut edges = Vec::with_capacity(csr.nnz() / 2);
    for (u, v) in csr.entries() {
        if u < v {
            edges.push([u, v]);
        }
    }
    shuffle(&mut edges, rng);
    edges
}

/// Up to `count` distinct roots of degree ≥ 1, uniformly sampled (fewer if
/// the graph has fewer such vertices).
/// `offsets` are the CSR offsets (only degrees matter).
pub fn sample_roots(offsets: &[u64], count: usize, rng: &mut SimRng) -> Vec<u32> {
    let n = offsets.len() - 1;
    let mut cand: Vec<u32> = (0..n).filter(|&v| offsets[v + 1] > offsets[v]).map(|v| v as u32).collect();
    let k = count.min(cand.len());
    for i in 0..k {
        let j = rng.gen_range(i as u64..cand.len() as u64) as usize;
        cand.swap(i, j);
    }
    cand.truncate(k);
    cand
}

/// A CSR placed in the simulated address space: `offsets` then `targets`,
/// each by `malloc` (so mmapped when large), as a C program allocates them.
pub struct SimCsr {
    pub offsets: SimVec<u64>,
    pub targets: SimVec<u32>,
}

impl SimCsr {
    pub fn place(space: &mut AddressSpace, csr: Csr) -> SimCsr {
        let Csr { offsets, targets } = csr;
        let offsets = SimVec::from_vec(space, offsets);
        let targets = SimVec::from_vec(space, targets);
        SimCsr { offsets, targets }
    }

    pub fn n(&self) -> usize {
        self.offsets.len() - 1
    }

    pub fn nnz(&self) -> usize {
        self.targets.len()
    }

    /// Bytes of `offsets` and `targets` for `n` vertices and `nnz` entries.
    pub fn bytes(n: u64, nnz: u64) -> u64 {
        8 * (n + 1) + 4 * nnz
    }
}

/// Progress in a workload's own unit.
#[derive(Copy, Clone, Debug, Default)]
pub struct Work {
    pub done: u64,
    pub total: u64,
}

/// Which of a workload's repeated rounds is running, so a kernel can report
/// progress over the whole run.
#[derive(Copy, Clone, Debug)]
pub struct Round {
    pub index: u64,
    pub count: u64,
}

impl Round {
    /// A run of one round.
    pub const ONE: Round = Round { index: 0, count: 1 };

    /// Report `done` of `total` units of this round.
    #[inline]
    pub fn report(&self, e: &mut Emitter, done: u64, total: u64) {
        e.progress(self.index * total + done, self.count * total);
    }
}

/// Parameter `rounds` of the PBBS-style kernels.
pub const ROUNDS_PARAM: ParamDoc = ParamDoc {
    name: "rounds",
    default: "1",
    doc: "times the kernel runs on the same input (PBBS's -r), each round re-allocating its arrays at the same addresses",
};

/// Top-down BFS from `root`: fills `parent` (`NONE` = unreached, the root is
/// its own parent) using `queue` as the FIFO, emitting every access. Returns
/// false if the emitter stopped.
///
/// Instruction model (the loop of Graph500 `seq-csr` and PBBS `serialBFS`):
/// - init, per vertex: 2 + store `parent[i]`;
/// - start: 2 + store `queue[0]`, 1 + store `parent[root]`;
/// - per dequeued vertex `u`: 2 + load `queue[head]`, 2 + load `offsets[u]`,
///   1 + load `offsets[u+1]`;
/// - per neighbour entry: 2 + load `targets[k]`, 2 + load `parent[v]`; when `v`
///   is newly reached, 1 + store `parent[v]`, 2 + store `queue[tail]`.
pub fn bfs_top_down(
    g: &SimCsr,
    parent: &mut SimVec<u32>,
    queue: &mut SimVec<u32>,
    root: u32,
    e: &mut Emitter,
    work: &mut Work,
) -> bool {
    let n = parent.len();
    for i in 0..n {
        e.ins(2);
        parent.st(i, NONE, e);
        if i & 0xffff == 0xffff && e.stopped() {
            return false;
        }
    }
    e.ins(2);
    queue.st(0, root, e);
    e.ins(1);
    parent.st(root as usize, root, e);
    let (mut head, mut tail) = (0usize, 1usize);
    while head < tail {
        e.ins(2);
        let (u, du) = queue.ld_on(head, Dep::NONE, e);
        head += 1;
        e.ins(2);
        let (lo, dlo) = g.offsets.ld_on(u as usize, du, e);
        e.ins(1);
        let hi = g.offsets.ld_on(u as usize + 1, du, e).0;
        for k in lo as usize..hi as usize {
            e.ins(2);
            let (v, dv) = g.targets.ld_on(k, dlo, e);
            e.ins(2);
            if parent.ld_on(v as usize, dv, e).0 == NONE {
                e.ins(1);
                parent.st_on(v as usize, u, dv, e);
                e.ins(2);
                queue.st(tail, v, e);
                tail += 1;
            }
        }
        work.done += hi - lo;
        if head & 1023 == 0 {
            e.progress(work.done, work.total);
            if e.stopped() {
                return false;
            }
        }
    }
    true
}

/// Check a BFS parent array against the Graph500 validation rules; `edges` is
/// the input edge list (any orientation, repeats and self-loops allowed).
/// Returns the number of vertices in the tree.
///
/// 1. the parent links form a tree rooted at `root` (`parent[root] == root`,
///    no cycles, every tree vertex's parent is in the tree);
/// 2. each tree edge joins levels that differ by exactly one (by construction
///    of the levels from the parent links);
/// 3. every input edge joins vertices whose levels differ by at most one, or
///    two vertices that are both outside the tree;
/// 4. the tree spans the root's component: no input edge has exactly one end
///    in the tree;
/// 5. every tree edge (parent[v], v) is an edge of the input.
pub fn validate_bfs_tree<I>(parent: &[u32], root: u32, edges: I) -> std::result::Result<u64, String>
where
    I: IntoIterator<Item = (u32, u32)>,
{
    const UNKNOWN: u32 = u32::MAX;
    const VISITING: u32 = u32::MAX - 1;
    let n = parent.len();
    let r = root as usize;
    if r >= n {
        return Err(format!("root {root} is not a vertex"));
    }
    if parent[r] != root {
        return Err(format!("parent[root] = {} (root {root} must be its own parent)", parent[r]));
    }
    let mut level = vec![UNKNOWN; n];
    level[r] = 0;
    let mut path = Vec::new();
    let mut reached = 0u64;
    for v in 0..n {
        if parent[v] == NONE {
            continue;
        }
        reached += 1;
        let mut x = v;
        while level[x] == UNKNOWN {
            let p = parent[x];
            if p == NONE || p as usize >= n {
                return Err(format!("vertex {x} is in the tree but its parent {p} is not a tree vertex"));
            }
            level[x] = VISITING;
            path.push(x);
            x = p as usize;
        }
        if level[x] == VISITING {
            return Err(format!("the parent links through vertex {x} form a cycle"));
        }
        let mut l = level[x];
        while let Some(y) = path.pop() {
            l += 1;
            level[y] = l;
        }
    }
    let mut has_parent_edge = vec![false; n];
    has_parent_edge[r] = true;
    for (u, v) in edges {
        let (lu, lv) = (level[u as usize], level[v as usize]);
        match (lu != UNKNOWN, lv != UNKNOWN) {
            (true, true) => {
                if lu.abs_diff(lv) > 1 {
                    return Err(format!("edge ({u}, {v}) joins BFS levels {lu} and {lv}"));
                }
            }
            (false, false) => continue,
            _ => return Err(format!("edge ({u}, {v}) leaves the tree: the root's component is not spanned")),
        }
        if u != v {
            if parent[v as usize] == u {
                has_parent_edge[v as usize] = true;
            }
            if parent[u as usize] == v {
                has_parent_edge[u as usize] = true;
            }
        }
    }
    for v in 0..n {
        if parent[v] != NONE && !has_parent_edge[v] {
            return Err(format!("tree edge ({}, {v}) is not an edge of the graph", parent[v]));
        }
    }
    Ok(reached)
}

/// A workload error naming the workload.
pub fn failure(name: &str, msg: impl Into<String>) -> Error {
    Error::Workload { name: name.to_string(), msg: msg.into() }
}
