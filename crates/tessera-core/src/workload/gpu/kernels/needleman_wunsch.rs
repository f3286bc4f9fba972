//! `needleman_wunsch`: Rodinia's NW, global sequence alignment scores by
//! dynamic programming in 16 × 16 tiles through shared memory, one launch
//! per anti-diagonal of tiles.
//!
//! ## What it models
//! The score matrix has `n + 1` rows and columns: row and column 0 hold
//! the gap penalties `-i · penalty`, and every other cell is `max(nw +
//! ref, w − penalty, n − penalty)` of its north-west, west and north
//! neighbours, with `ref[i][j]` the BLOSUM62 score of the two sequences'
//! residues `i` and `j` (residues uniform in 1 to 10, `gpu.needleman_wunsch.data`,
//! as Rodinia's `rand() % 10 + 1`). The matrix is cut into `n / 16` × `n /
//! 16` tiles; a tile needs the tiles north, west and north-west of it, so
//! the host launches the anti-diagonals of tiles in order:
//! `needle_cuda_shared_1` for the upper-left half (diagonal `i` = 1 to `n /
//! 16`, `i` blocks), then `needle_cuda_shared_2` for the lower-right half
//! (`i` = `n / 16 − 1` down to 1). A block of 16 threads (half a warp)
//! does one tile: thread 0 loads the north-west corner, each thread loads
//! its column of the tile's `ref` (16 loads), its row's west cell and its
//! column's north cell into shared memory, then the block sweeps the
//! tile's 31 anti-diagonals, thread `tx` computing the diagonal's cell in
//! column `tx` while `tx` is on it (a barrier after each), and stores its
//! column of the tile back. Scores are `i32`, exact against a host DP.
//!
//! Layout (allocation order): `reference`, `matrix`, `4 (n + 1)²` bytes
//! each (row-major). The host's initial matrix and reference are copies,
//! not emitted; the traceback is on the host and not emitted.
//! Launches: `2 n / 16 − 1`, each `i` blocks of 16 threads, 2180 bytes of
//! shared memory (`temp[17][17]` then `ref[16][16]`), 24 registers.
//!
//! Instructions per thread: 8 (indices); compare and branch on `tx == 0`,
//! for thread 0 load the corner + shared store; 16 × (1 + load `ref` row +
//! shared store); barrier; 1 + load the west cell + shared store; barrier;
//! load the north cell + shared store; barrier. Then the first sweep's 16
//! steps: the loop test (compare, branch), compare and branch on `tx ≤ m`,
//! for those 2 (indices), shared loads of the north-west cell, its `ref`,
//! the west and north cells, 5 (add, subtracts, maxima), shared store; a
//! barrier; 1 (`m++`); its last test; the second sweep's 15 steps the
//! same; then 16 × (1 + shared load + store of the tile's cell); `EXIT`.
//!
//! ## Parameters
//! `n` (sequence length, a multiple of 16 from 16 to 16384, default 1024),
//! `penalty` (gap penalty, default 10, Rodinia's).

use rand::Rng;

use super::simt::{Block, Warp};
use super::{covered, launch, GpuKernelInfo, Launches};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use crate::workload::gpu::{Allocation, Allocator, Kernel, KernelSource, Space};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "needleman_wunsch",
    summary: "Rodinia NW: alignment scores by DP in 16 x 16 shared-memory tiles, one launch per anti-diagonal of tiles",
    params: PARAMS,
    footprint: |p| {
        let n = length(p)?;
        Ok(2 * covered(4 * (n + 1) * (n + 1)))
    },
    build: |p| Ok(Box::new(NeedlemanWunsch::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "1024", doc: "length of each sequence, a multiple of 16 from 16 to 16384" },
    ParamDoc { name: "penalty", default: "10", doc: "gap penalty, 0 to 1000" },
];

/// Tile edge: threads per block, cells per tile edge.
pub const TILE: u32 = 16;

/// BLOSUM62 over residues 0 to 10 (A R N D C Q E G H I L in the NCBI
/// order); the sequences use 1 to 10.
const BLOSUM62: [[i32; 11]; 11] = [
    [4, -1, -2, -2, 0, -1, -1, 0, -2, -1, -1],
    [-1, 5, 0, -2, -3, 1, 0, -2, 0, -3, -2],
    [-2, 0, 6, 1, -3, 0, 0, 0, 1, -3, -3],
    [-2, -2, 1, 6, -3, 0, 2, -1, -1, -3, -4],
    [0, -3, -3, -3, 9, -3, -4, -3, -3, -1, -1],
    [-1, 1, 0, 0, -3, 5, 2, -2, 0, -3, -2],
    [-1, 0, 0, 2, -4, 2, 5, -2, 0, -3, -3],
    [0, -2, 0, -1, -3, -2, -2, 6, -2, -4, -4],
    [-2, 0, 1, -1, -3, 0, 0, -2, 8, -3, -3],
    [-1, -3, -3, -3, -1, -3, -3, -4, -3, 4, 2],
    [-1, -2, -3, -4, -1, -2, -3, -4, -3, 2, 4],
];

fn length(p: &Params) -> Result<u64> {
    let n = p.count_in("n", TILE as u64, 16384)?;
    if n % TILE as u64 != 0 {
        return Err(Error::config(p.key_path("n"), format!("{n} is not a multiple of the tile edge {TILE}")));
    }
    Ok(n)
}

/// A cell's score from its north-west, west and north neighbours.
#[inline]
pub fn score(nw: i32, reference: i32, w: i32, n: i32, penalty: i32) -> i32 {
    (nw + reference).max(w - penalty).max(n - penalty)
}

pub struct NeedlemanWunsch {
    launches: Launches,
    /// Cells per row and column (`n + 1`).
    cols: u64,
    penalty: i32,
    /// Device addresses of `reference` and `matrix`.
    at: [u64; 2],
    pub reference: Vec<i32>,
    /// The score matrix as the launches so far left it.
    pub matrix: Vec<i32>,
}

impl NeedlemanWunsch {
    pub fn new(p: &Params) -> Result<NeedlemanWunsch> {
        let n = length(p)?;
        let penalty = p.count_in("penalty", 0, 1000)? as i32;
        let cols = n + 1;
        let mut rng = component_rng(p.seed(), "gpu.needleman_wunsch.data");
        // Rodinia draws the first sequence (down column 0), then the second (along row 0).
        let rows_seq: Vec<usize> = (0..n).map(|_| rng.gen_range(1..=10u32) as usize).collect();
        let cols_seq: Vec<usize> = (0..n).map(|_| rng.gen_range(1..=10u32) as usize).collect();
        let size = (cols * cols) as usize;
        let mut reference = vec![0i32; size];
        for i in 1..cols as usize {
            for j in 1..cols as usize {
                reference[i * cols as usize + j] = BLOSUM62[rows_seq[i - 1]][cols_seq[j - 1]];
            }
        }
        let mut matrix = vec![0i32; size];
        for i in 1..cols as usize {
            matrix[i * cols as usize] = -(i as i32) * penalty;
            matrix[i] = -(i as i32) * penalty;
        }
        let mut heap = Allocator::new(super::HEAP_BASE);
        let at = [heap.alloc("reference", 4 * cols * cols), heap.alloc("matrix", 4 * cols * cols)];
        Ok(NeedlemanWunsch { launches: Launches::new(heap.allocations), cols, penalty, at, reference, matrix })
    }

    /// Tiles per side.
    fn width(&self) -> u32 {
        ((self.cols - 1) / TILE as u64) as u32
    }

    /// The launch for diagonal `i` of half `half` (1: upper left, 2: lower right).
    fn kernel(&mut self, id: u32, half: u32, i: u32) -> Kernel {
        let (cols, penalty, [ref_at, matrix_at]) = (self.cols, self.penalty, self.at);
        let width = self.width();
        let (reference, matrix) = (&self.reference, &mut self.matrix);
        let name = if half == 1 { "needle_cuda_shared_1" } else { "needle_cuda_shared_2" };
        let t = TILE as u64;
        // Shared: temp[17][17] then ref[16][16].
        let temp = |y: u64, x: u64| 4 * (y * (t + 1) + x);
        let refs = |y: u64, x: u64| 4 * (t + 1) * (t + 1) + 4 * (y * t + x);
        let shmem = (4 * ((t + 1) * (t + 1) + t * t)) as u32;
        launch(name, id, [i, 1, 1], [TILE, 1, 1], shmem, 24, |[bx, _, _]| {
            let (tile_x, tile_y) = if half == 1 { (bx, i - 1 - bx) } else { (bx + width - i, width - bx - 1) };
            // Matrix element of the tile's north-west corner; the tile's cells start a row and a column on.
            let base = cols * t * tile_y as u64 + t * tile_x as u64;
            let index = |tx: u64| base + tx + cols + 1;
            let mut block = Block::new([bx, 0, 0], TILE);
            let w: &mut Warp = &mut block.warps[0];
            let tx = |l: u32| l as u64;
            let mut tmp = [[0i32; 17]; 17];
            let mut rf = [[0i32; 16]; 16];
            w.alu(8);
            let corner = w.if_begin(|l| l == 0);
            w.load(Space::Global, 4, |_| matrix_at + 4 * base);
            w.store(Space::Shared, 4, |_| temp(0, 0));
            if w.mask() != 0 {
                tmp[0][0] = matrix[base as usize];
            }
            w.if_end(corner);
            for ty in 0..t {
                w.alu(1);
                w.load(Space::Global, 4, |l| ref_at + 4 * (index(tx(l)) + cols * ty));
                w.store(Space::Shared, 4, |l| refs(ty, tx(l)));
                for l in w.active() {
                    rf[ty as usize][l as usize] = reference[(index(tx(l)) + cols * ty) as usize];
                }
            }
            w.barrier();
            w.alu(1);
            w.load(Space::Global, 4, |l| matrix_at + 4 * (base + cols + cols * tx(l)));
            w.store(Space::Shared, 4, |l| temp(tx(l) + 1, 0));
            w.barrier();
            w.load(Space::Global, 4, |l| matrix_at + 4 * (base + 1 + tx(l)));
            w.store(Space::Shared, 4, |l| temp(0, tx(l) + 1));
            w.barrier();
            for l in w.active() {
                let x = tx(l);
                tmp[x as usize + 1][0] = matrix[(base + cols + cols * x) as usize];
                tmp[0][x as usize + 1] = matrix[(base + 1 + x) as usize];
            }
            // The two sweeps over the tile's anti-diagonals, their steps m in order.
            let sweeps: [Vec<u64>; 2] = [(0..t).collect(), (0..t - 1).rev().collect()];
            for (sweep, steps) in sweeps.iter().enumerate() {
                let mut lp = w.loop_begin();
                let mut k = 0;
                while w.loop_test(&mut lp, |_| k < steps.len()) {
                    let m = steps[k];
                    let on = w.if_begin(|l| tx(l) <= m);
                    let at = |l: u32| sweep_cell(sweep, m, tx(l));
                    w.alu(2);
                    w.load(Space::Shared, 4, |l| { let (y, x) = at(l); temp(y - 1, x - 1) });
                    w.load(Space::Shared, 4, |l| { let (y, x) = at(l); refs(y - 1, x - 1) });
                    w.load(Space::Shared, 4, |l| { let (y, x) = at(l); temp(y, x - 1) });
                    w.load(Space::Shared, 4, |l| { let (y, x) = at(l); temp(y - 1, x) });
                    w.alu(5);
                    w.store(Space::Shared, 4, |l| { let (y, x) = at(l); temp(y, x) });
                    for l in w.active() {
                        let (y, x) = at(l);
                        let (y, x) = (y as usize, x as usize);
                        tmp[y][x] = score(tmp[y - 1][x - 1], rf[y - 1][x - 1], tmp[y][x - 1], tmp[y - 1][x], penalty);
                    }
                    w.if_end(on);
                    w.barrier();
                    w.alu(1);
                    k += 1;
                }
            }
            for ty in 0..t {
                w.alu(1);
                w.load(Space::Shared, 4, |l| temp(ty + 1, tx(l) + 1));
                w.store(Space::Global, 4, |l| matrix_at + 4 * (index(tx(l)) + ty * cols));
                for l in w.active() {
                    matrix[(index(tx(l)) + ty * cols) as usize] = tmp[ty as usize + 1][l as usize + 1];
                }
            }
            block.finish()
        })
    }
}

/// The cell `(y, x)` of `temp` thread `tx` computes at step `m` of sweep
/// `sweep` (0: the diagonals growing from the corner, 1: shrinking to the
/// opposite one), as Rodinia indexes them.
fn sweep_cell(sweep: usize, m: u64, tx: u64) -> (u64, u64) {
    let t = TILE as u64;
    if sweep == 0 {
        (m - tx + 1, tx + 1)
    } else {
        (t - tx, tx + t - m)
    }
}

impl KernelSource for NeedlemanWunsch {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        let width = self.width();
        let done = self.launches.issued;
        if done == 2 * width - 1 {
            return Ok(None);
        }
        let id = self.launches.next_id();
        // Launches 1 to width: diagonals 1 to width of the first half; then width - 1 down to 1.
        Ok(Some(if id <= width { self.kernel(id, 1, id) } else { self.kernel(id, 2, 2 * width - id) }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_scores_are_a_host_dps() {
        let mut nw = NeedlemanWunsch::new(&params("needleman_wunsch", &[("n", "64"), ("penalty", "10")], 3)).unwrap();
        let cols = 65usize;
        let mut want = nw.matrix.clone();
        let ks = drain(&mut nw);
        for i in 1..cols {
            for j in 1..cols {
                want[i * cols + j] = score(want[(i - 1) * cols + j - 1], nw.reference[i * cols + j], want[i * cols + j - 1], want[(i - 1) * cols + j], 10);
            }
        }
        assert_eq!(nw.matrix, want);
        // 4 x 4 tiles: diagonals of 1, 2, 3, 4 blocks, then 3, 2, 1.
        let grids: Vec<u32> = ks.iter().map(|k| k.grid[0]).collect();
        assert_eq!(grids, [1, 2, 3, 4, 3, 2, 1]);
        assert_eq!(ks[4].name, "needle_cuda_shared_2");
        // Half a warp per block; 3 + 31 barriers; the sweeps widen from one lane and narrow back.
        let w = &ks[0].blocks[0].warps[0];
        assert!(w.insts.iter().all(|i| i.mask & !0xffff == 0));
        assert_eq!(w.insts.iter().filter(|i| i.op == Op::Barrier).count(), 3 + 31);
        let stores: Vec<u32> = w.insts.iter().filter(|i| i.op == Op::Store && i.space == Space::Shared).map(|i| i.mask).collect();
        assert_eq!(&stores[19..21], &[0x1, 0x3]);
        assert_eq!(stores[19 + 30], 0x1);
    }
}
