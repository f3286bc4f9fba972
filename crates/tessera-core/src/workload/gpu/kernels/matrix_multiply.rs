//! `matrix_multiply`: `C = A·B` for square `f32` matrices, tiled through
//! shared memory (CUDA samples `matrixMul`, 16 × 16 tiles).
//!
//! ## What it models
//! A 16 × 16 thread block computes a 16 × 16 tile of `C`. For each of the
//! `n / 16` tile steps, each thread loads one element of `A`'s and one of
//! `B`'s tile into shared memory, the block waits at a barrier, each thread
//! multiplies its row of the `A` tile by its column of the `B` tile (16
//! `FFMA`s, the inner loop unrolled as the sample's `#pragma unroll` makes
//! it), and the block waits again before the tiles are overwritten. No
//! divergence: `n` is a multiple of 16. Row-major matrices, values uniform
//! in [0, 1) (`gpu.matrix_multiply.data`: `A`, then `B`); sums in `k` order
//! with fused multiply-adds, so `C` is exact against a host triple loop.
//!
//! Layout (allocation order): `A`, `B`, `C`, `4n²` bytes each.
//! Launch: `(n / 16) × (n / 16)` blocks of 16 × 16 threads (8 warps: warp
//! `w` holds tile rows `2w` and `2w + 1`), 2 KiB of shared memory (`As`
//! then `Bs`), 32 registers.
//!
//! Instructions per thread: 6 (indices); per tile step the loop test
//! (compare, branch), 2 (addresses), load `A` + shared store, load `B` +
//! shared store, barrier, 16 × (shared load `As[ty][k]`, shared load
//! `Bs[k][tx]`, `FFMA`), barrier, 1 (step); the loop's last test; 2 + store
//! `C[row][col]`; `EXIT`.
//!
//! Shared accesses are kept with their lane addresses (32 per warp
//! instruction), so the generated kernel is large: about 9 KiB per warp and
//! tile step, 37 MiB at the default `n` = 128.
//!
//! ## Parameters
//! `n` (a multiple of 16 from 16 to 4096, default 128).

use rand::Rng;

use super::simt::{Block, Loop};
use super::{covered, launch, GpuKernelInfo, Launches};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "matrix_multiply",
    summary: "C = A B for square f32 matrices, 16 x 16 tiles through shared memory",
    params: PARAMS,
    footprint: |p| {
        let n = order(p)?;
        Ok(3 * covered(4 * n * n))
    },
    build: |p| Ok(Box::new(MatrixMultiply::new(p)?)),
};

const PARAMS: &[ParamDoc] =
    &[ParamDoc { name: "n", default: "128", doc: "rows and columns of each matrix, a multiple of 16 from 16 to 4096" }];

/// Tile edge: threads per block edge and elements per tile edge.
pub const TILE: u32 = 16;

fn order(p: &Params) -> Result<u64> {
    let n = p.count_in("n", TILE as u64, 4096)?;
    if n % TILE as u64 != 0 {
        return Err(Error::config(p.key_path("n"), format!("{n} is not a multiple of the tile edge {TILE}")));
    }
    Ok(n)
}

pub struct MatrixMultiply {
    launches: Launches,
    n: u64,
    at: [u64; 3],
    a: Vec<f32>,
    b: Vec<f32>,
    /// The product, as the kernel computed it.
    pub c: Vec<f32>,
}

impl MatrixMultiply {
    pub fn new(p: &Params) -> Result<MatrixMultiply> {
        let n = order(p)?;
        let mut rng = component_rng(p.seed(), "gpu.matrix_multiply.data");
        let a: Vec<f32> = (0..n * n).map(|_| rng.gen()).collect();
        let b: Vec<f32> = (0..n * n).map(|_| rng.gen()).collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let at = [heap.alloc("A", 4 * n * n), heap.alloc("B", 4 * n * n), heap.alloc("C", 4 * n * n)];
        Ok(MatrixMultiply { launches: Launches::new(heap.allocations), n, at, a, b, c: vec![0.0; (n * n) as usize] })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (n, [a_at, b_at, c_at]) = (self.n, self.at);
        let tiles = (n / TILE as u64) as u32;
        let t = TILE as u64;
        let bs_at = 4 * t * t;
        let (a, b, c) = (&self.a, &self.b, &mut self.c);
        launch("matrix_multiply", id, [tiles, tiles, 1], [TILE, TILE, 1], 2 * bs_at as u32, 32, |[bx, by, _]| {
            let mut block = Block::new([bx, by, 0], TILE * TILE);
            // Lane l of warp w is thread (tx, ty) = (l % 16, 2w + l / 16).
            let tx = |l: u32| (l % TILE) as u64;
            let ty = |w: usize, l: u32| ((w as u32 * WARP_SIZE + l) / TILE) as u64;
            let row = |w: usize, l: u32| by as u64 * t + ty(w, l);
            let col = |l: u32| bx as u64 * t + tx(l);
            let mut sum = vec![0f32; (TILE * TILE) as usize];
            let (mut a_tile, mut b_tile) = (vec![0f32; (t * t) as usize], vec![0f32; (t * t) as usize]);
            for w in &mut block.warps {
                w.alu(6);
            }
            let mut loops: Vec<Loop> = block.warps.iter_mut().map(|w| w.loop_begin()).collect();
            let mut step = 0u64;
            loop {
                let mut run = false;
                for (w, lp) in block.warps.iter_mut().zip(&mut loops) {
                    run |= w.loop_test(lp, |_| step < tiles as u64);
                }
                if !run {
                    break;
                }
                for (wi, w) in block.warps.iter_mut().enumerate() {
                    let cell = |l: u32| ty(wi, l) * t + tx(l);
                    w.alu(2);
                    w.load(Space::Global, 4, |l| a_at + 4 * (row(wi, l) * n + step * t + tx(l)));
                    w.store(Space::Shared, 4, |l| 4 * cell(l));
                    w.load(Space::Global, 4, |l| b_at + 4 * ((step * t + ty(wi, l)) * n + col(l)));
                    w.store(Space::Shared, 4, |l| bs_at + 4 * cell(l));
                    for l in w.active() {
                        a_tile[cell(l) as usize] = a[(row(wi, l) * n + step * t + tx(l)) as usize];
                        b_tile[cell(l) as usize] = b[((step * t + ty(wi, l)) * n + col(l)) as usize];
                    }
                }
                block.barrier();
                for (wi, w) in block.warps.iter_mut().enumerate() {
                    for k in 0..t {
                        w.load(Space::Shared, 4, |l| 4 * (ty(wi, l) * t + k));
                        w.load(Space::Shared, 4, |l| bs_at + 4 * (k * t + tx(l)));
                        w.alu(1);
                        for l in w.active() {
                            let s = &mut sum[(wi as u32 * WARP_SIZE + l) as usize];
                            *s = a_tile[(ty(wi, l) * t + k) as usize].mul_add(b_tile[(k * t + tx(l)) as usize], *s);
                        }
                    }
                }
                block.barrier();
                for w in &mut block.warps {
                    w.alu(1);
                }
                step += 1;
            }
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.alu(2);
                w.store(Space::Global, 4, |l| c_at + 4 * (row(wi, l) * n + col(l)));
                for l in w.active() {
                    c[(row(wi, l) * n + col(l)) as usize] = sum[(wi as u32 * WARP_SIZE + l) as usize];
                }
            }
            block.finish()
        })
    }
}

launches!(MatrixMultiply);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_product_is_the_host_triple_loop() {
        let mut m = MatrixMultiply::new(&params("matrix_multiply", &[("n", "48")], 1)).unwrap();
        let k = drain(&mut m).remove(0);
        let n = 48;
        for i in 0..n {
            for j in 0..n {
                let want = (0..n).fold(0f32, |s, k| m.a[i * n + k].mul_add(m.b[k * n + j], s));
                assert_eq!(m.c[i * n + j], want, "C[{i}][{j}]");
            }
        }
        let w = &k.blocks[0].warps[0];
        // 6 + guard + 3 steps of (2 + 4 + barrier + 48 + barrier + 1 + test) + 2 + store + exit.
        assert_eq!(w.insts.len(), 6 + 2 + 3 * (2 + 4 + 1 + 48 + 1 + 1 + 2) + 3 + 1);
        assert!(w.insts.iter().all(|i| i.mask == u32::MAX));
        assert_eq!(w.insts.iter().filter(|i| i.op == Op::Barrier).count(), 6);
    }
}
