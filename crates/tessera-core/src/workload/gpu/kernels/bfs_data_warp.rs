//! `bfs_data_warp`: breadth-first search levels, data-driven and
//! warp-centric: each warp takes a chunk of the frontier worklist and its
//! lanes stride each vertex's neighbours, one kernel launch per level
//! (GraphBIG's BFS "data-driven warp-centric", BFS-DWC; Nai et al.,
//! "GraphBIG: understanding graph computing in the context of industrial
//! solutions", SC 2015, after Nasre et al., "Data-driven versus
//! topology-driven irregular computations on GPUs", IPDPS 2013, and
//! Merrill et al., "Scalable GPU graph traversal", PPoPP 2012).
//!
//! ## What it models
//! Launch `L` (from 0) reads the input worklist (the level-`L` frontier):
//! each warp takes a chunk of `chunk` consecutive entries (GraphBIG's
//! `CHUNK_SZ`, 32) after loading the list's length, and visits its
//! vertices one after another. For each, all lanes load the entry and its
//! span (broadcasts), then stride its neighbour list (lane `i` takes
//! entries `i`, `i + 32`, …); a lane that loads a neighbour's level as
//! unvisited stores `L + 1` (no atomic: GraphBIG's race is benign, and the
//! lanes of one instruction hold distinct neighbours, the lists being free
//! of duplicates) and appends the neighbour to its own thread-local buffer
//! (local memory, 128 entries). A full buffer is flushed at once; at the end
//! every lane flushes what it holds: `atomicAdd(&out_end, count)` for a
//! range of the output worklist (every lane issues it, even with nothing to
//! push, as GraphBIG's `pushRange` does), then a loop of local loads and
//! global stores. Atomics apply in lane order. The host swaps the lists,
//! reads the new length and clears the other's (copies, not emitted), and
//! launches while the new frontier is not empty; the last launch is the
//! deepest level's, which pushes nothing. Each vertex enters the lists
//! once, at its level. The root is [`super::bfs`]'s (drawn from
//! `gpu.bfs.root`), so given the same seed and graph the levels and the
//! launches are `bfs`'s.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! entry), `level` (`u32 × n`), `items0`, `end0`, `items1`, `end1`
//! (worklists of `worklist` `u32` entries with a 4-byte length each: launch
//! `L` reads list `L % 2` and pushes on the other). GraphBIG's worklists
//! have a fixed 16,777,216 `u64` entries (128 MiB each, whatever the
//! graph) and its graph is `u64` arrays; here the graph is the `u32` CSR of
//! the other graph kernels, and a worklist holds `n` entries unless
//! `worklist` says more. The initial levels and the root in `items0` are
//! copies, not emitted. Local-memory buffers are per thread, outside the
//! allocations (addresses are offsets in the thread's local window).
//! Launch: a warp per `chunk` entries, `ceil(32 ceil(items / chunk) /
//! block)` blocks of `block` threads, 28 registers.
//!
//! Instructions per thread: 4 (lane, warp, chunk bounds), 1 + load the
//! input `end`, compare and branch on the chunk starting before it
//! (uniform), 2 (clamp the chunk's end, `count = 0`); per entry of the
//! chunk the loop test (compare, branch), 1 + load `items[i]`, load
//! `row[v]` + load `row[v + 1]`, 1 (`j = row[v] + lane`), then per stride
//! the loop test, 1 + load `col[j]`, 1 + load `level[u]`, compare and
//! branch on unvisited, for those 1 + store `level[u]`, local store of `u`,
//! 1 (`count++`), compare and branch on a full buffer, for those the flush
//! (below) and 1 (`count = 0`); then 1 (`j += 32`); the stride loop's last
//! test; 1 (`i++`); the chunk loop's last test; the flush; `EXIT`. A flush:
//! atomic add on the output `end`, 1 (`k = 0`), then per entry the loop
//! test, local load, 1 + store `items[slot + k]`, 1 (`k++`); the loop's
//! last test.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `chunk` worklist entries per warp (default 32), `worklist` entries
//! per worklist (default 0: one per vertex), `block` threads per block (a
//! multiple of 32, default 256).

use super::bfs::Start;
use super::neighbours::Neighbours;
use super::simt::{Block, Warp};
use super::{
    block_size, blocks_for, covered, csr_footprint, graph_input, launch, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::{Error, Result};
use crate::workload::gpu::{Kernel, Space, WARP_SIZE};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM, NONE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "bfs_data_warp",
    summary: "breadth-first search levels, data-driven warp-centric: warp per chunk of the frontier worklist, lanes stride the neighbours, local buffers",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + covered(4 * g.vertices()) + 2 * (covered(4 * worklist_entries(p, &g)?) + covered(4)))
    },
    build: |p| Ok(Box::new(BfsDataWarp::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    GRAPH_PARAM,
    SCALE_PARAM,
    EDGEFACTOR_PBBS,
    ParamDoc { name: "chunk", default: "32", doc: "worklist entries each warp visits one after another, 1 to 1024" },
    WORKLIST_PARAM,
    BLOCK_PARAM,
];

/// Parameter `worklist` of the data-driven GraphBIG kernels.
pub(super) const WORKLIST_PARAM: ParamDoc = ParamDoc {
    name: "worklist",
    default: "0",
    doc: "u32 entries in each of the two worklists, at least the vertex count; 0 for one per vertex (GraphBIG allocates a fixed 8777216 or 16777216 u64 entries)",
};

/// Entries of each worklist from parameter `worklist`: one per vertex, or
/// more (a launch pushes each vertex at most once, so fewer could overflow).
pub(super) fn worklist_entries(p: &Params, g: &crate::workload::graph::GraphInput) -> Result<u64> {
    let n = g.vertices();
    match p.count("worklist")? {
        0 => Ok(n),
        e if e >= n && e <= u32::MAX as u64 => Ok(e),
        e => Err(Error::config(
            p.key_path("worklist"),
            format!("{e} entries: must be 0 or between the vertex count ({n}) and 2^32 - 1"),
        )),
    }
}

/// Entries of a lane's local buffer (GraphBIG's `LOCAL_SIZE`).
const LOCAL: usize = 128;

pub struct BfsDataWarp {
    launches: Launches,
    block: u32,
    chunk: u64,
    g: DeviceCsr,
    level_at: u64,
    /// Each worklist's entries and its length.
    list_at: [(u64, u64); 2],
    pub root: u32,
    /// Each vertex's level as the launches so far left it.
    pub level: Vec<u32>,
    /// The frontier the next launch expands.
    frontier: Vec<u32>,
}

impl BfsDataWarp {
    pub fn new(p: &Params) -> Result<BfsDataWarp> {
        let g = graph_input(p)?;
        let chunk = p.count_in("chunk", 1, 1024)?;
        let entries = worklist_entries(p, &g)?;
        let block = block_size(p)?;
        if block % WARP_SIZE != 0 {
            return Err(Error::config(p.key_path("block"), format!("{block} threads: a warp per chunk needs whole warps")));
        }
        blocks_for(p, WARP_SIZE as u64 * g.vertices().div_ceil(chunk), block)?;
        let Start { mut heap, g, level_at, root, level } = Start::new(p, &g);
        let mut list = |i: usize| (heap.alloc(&format!("items{i}"), 4 * entries), heap.alloc(&format!("end{i}"), 4));
        let list_at = [list(0), list(1)];
        Ok(BfsDataWarp {
            launches: Launches::new(heap.allocations),
            block,
            chunk,
            g,
            level_at,
            list_at,
            root,
            level,
            frontier: vec![root],
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, chunk, level_at) = (self.block, self.chunk, self.level_at);
        let cur = id - 1;
        let ((in_items, in_end), out) = (self.list_at[cur as usize % 2], self.list_at[1 - cur as usize % 2]);
        let g = &self.g;
        let (level, frontier) = (&mut self.level, &self.frontier);
        let len = frontier.len() as u64;
        let per_block = (bs / WARP_SIZE) as u64;
        let grid = len.div_ceil(chunk).div_ceil(per_block) as u32;
        let mut next: Vec<u32> = Vec::new();
        let k = launch("bfs_data_warp", id, [grid, 1, 1], [bs, 1, 1], 0, 28, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let first = (per_block * bx as u64 + wi as u64) * chunk;
                let last = (first + chunk).min(len);
                let mut local: [Vec<u32>; 32] = Default::default();
                w.alu(4);
                w.alu(1);
                w.load(Space::Global, 4, |_| in_end);
                let in_range = w.if_begin(|_| first < len);
                w.alu(2);
                let mut i = first;
                let mut entries = w.loop_begin();
                while w.loop_test(&mut entries, |_| i < last) {
                    w.alu(1);
                    w.load(Space::Global, 4, |_| in_items + 4 * i);
                    // A loop no lane enters is walked once with none, past the chunk.
                    let v = if w.mask() != 0 { frontier[i as usize] as u64 } else { 0 };
                    let neighbours = Neighbours::load(w, g, |_| v);
                    w.alu(1);
                    neighbours.strided(w).walk(w, g, |w, _, u| {
                        w.alu(1);
                        w.load(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                        let fresh = w.if_begin(|l| level[u[l as usize] as usize] == NONE);
                        w.alu(1);
                        w.store(Space::Global, 4, |l| level_at + 4 * u[l as usize]);
                        w.store(Space::Local, 4, |l| 4 * local[l as usize].len() as u64);
                        for l in w.active() {
                            level[u[l as usize] as usize] = cur + 1;
                            local[l as usize].push(u[l as usize] as u32);
                        }
                        w.alu(1);
                        let full = w.if_begin(|l| local[l as usize].len() == LOCAL);
                        flush(w, &mut local, &mut next, out);
                        w.alu(1);
                        w.if_end(full);
                        w.if_end(fresh);
                    });
                    w.alu(1);
                    i += 1;
                }
                flush(w, &mut local, &mut next, out);
                w.if_end(in_range);
            }
            block.finish()
        });
        self.frontier = next;
        k
    }
}

/// GraphBIG's `pushRange` by the active lanes: each takes a range of the
/// output worklist `out` (entries, length) with one atomic add, in lane
/// order, and copies its local buffer there; the buffers are emptied.
fn flush(w: &mut Warp, local: &mut [Vec<u32>; 32], next: &mut Vec<u32>, out: (u64, u64)) {
    let (items, end) = out;
    w.atomic(Space::Global, 4, |_| end);
    let mut slot = [0u64; 32];
    for l in w.active() {
        slot[l as usize] = next.len() as u64;
        next.extend_from_slice(&local[l as usize]);
    }
    w.alu(1);
    let mut k = 0;
    let mut lp = w.loop_begin();
    while w.loop_test(&mut lp, |l| k < local[l as usize].len()) {
        w.load(Space::Local, 4, |_| 4 * k as u64);
        w.alu(1);
        w.store(Space::Global, 4, |l| items + 4 * (slot[l as usize] + k as u64));
        w.alu(1);
        k += 1;
    }
    for l in w.active() {
        local[l as usize].clear();
    }
}

launches!(BfsDataWarp, |k: &BfsDataWarp| k.frontier.is_empty());

#[cfg(test)]
mod tests {
    use super::super::bfs::tests::check_against_bfs;
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_levels_are_the_topology_driven_bfss_with_each_vertex_pushed_once() {
        for graph in ["rmat", "random"] {
            let given = [("graph", graph), ("scale", "10"), ("edgefactor", "4")];
            let mut b = BfsDataWarp::new(&params("bfs_data_warp", &given, 8)).unwrap();
            let ks = drain(&mut b);
            check_against_bfs(&given, b.root, &b.level, ks.len());
            let visited = b.level.iter().filter(|&&l| l != NONE).count();
            let insts: Vec<_> = ks.iter().flat_map(|k| &k.blocks).flat_map(|blk| &blk.warps).flat_map(|w| w.iter()).collect();
            let in_lists = |a: u64| b.list_at.iter().any(|&(items, _)| a >= items && a < items + 4 * b.g.n());
            let pushes: usize = insts.iter().filter(|(i, a)| i.op == Op::Store && in_lists(a[0])).map(|(i, _)| i.lanes() as usize).sum();
            assert_eq!(pushes, visited - 1, "{graph}: every vertex but the root pushed once");
            let locals = insts.iter().filter(|(i, _)| i.space == Space::Local && i.op == Op::Store).count();
            assert!(locals > 0, "{graph}");
        }
    }

    #[test]
    fn a_full_local_buffer_is_flushed_before_the_warps_end() {
        // A lane's buffer fills over its warp's chunk: with chunks of 1024 frontier vertices a warp
        // finds most of a large level, more than 32 x 128 vertices.
        let given = [("scale", "14"), ("edgefactor", "16")];
        let mut b = BfsDataWarp::new(&params("bfs_data_warp", &[given[0], given[1], ("chunk", "1024")], 8)).unwrap();
        let ks = drain(&mut b);
        check_against_bfs(&given, b.root, &b.level, ks.len());
        let flushes = ks
            .iter()
            .flat_map(|k| &k.blocks)
            .flat_map(|blk| &blk.warps)
            .flat_map(|w| w.iter())
            .filter(|(i, a)| i.op == Op::Atomic && b.list_at.iter().any(|&(_, end)| a[0] == end))
            .count();
        // Without an early flush, each warp with entries flushes once at its end.
        let deepest = *b.level.iter().filter(|&&l| l != NONE).max().unwrap();
        let at_end: usize = (0..=deepest).map(|l| b.level.iter().filter(|&&x| x == l).count().div_ceil(1024)).sum();
        assert!(flushes > at_end, "{flushes} flushes, {at_end} at the warps' ends");
    }

    #[test]
    fn a_short_worklist_names_its_key() {
        let given = |entries: &str| -> std::collections::BTreeMap<String, String> {
            [("scale", "8"), ("worklist", entries)].iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
        };
        let e = super::super::build("bfs_data_warp", &given("100"), 1).err().unwrap().to_string();
        assert!(e.contains("worklist") && e.contains("256"), "{e}");
        let b = super::super::build("bfs_data_warp", &given("1000"), 1).unwrap();
        assert_eq!(b.allocations()[3].bytes, 4000);
    }
}
