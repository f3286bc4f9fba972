//! `spmv_csr`: sparse matrix × dense vector in CSR form, one thread per row
//! (the scalar CSR kernel of Bell and Garland, SC 2009).
//!
//! ## What it models
//! `y = A·x` for a square matrix whose pattern is a graph's adjacency (an
//! R-MAT or uniform graph from [`crate::workload::graph`], deduplicated,
//! columns sorted within each row) with `f32` values uniform in [0, 1), and
//! `x` uniform in [0, 1) (`gpu.spmv_csr.values`: `val`, then `x`). Each
//! thread walks its row, `sum = fma(val[j], x[col[j]], sum)` in column order:
//! lanes of a warp loop as long as their longest row (skewed degrees make
//! long tails of one or two active lanes), and the `x` loads are gathers.
//!
//! Layout (allocation order): `row` (`u32`, `n + 1`), `col` (`u32` per
//! nonzero), `val` (`f32` per nonzero), `x` (`f32 × n`), `y` (`f32 × n`).
//! Launch: `ceil(n / block)` blocks of `block` threads, 16 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `row < n`; in
//! range 1 + load `row[r]` + load `row[r + 1]`, 1 (`sum = 0`); per nonzero
//! the loop test (compare, branch), 1 + load `col[j]` + load `val[j]`, 1 +
//! load `x[col[j]]`, `FFMA`, 1 (`j++`); the loop's last test; 1 + store
//! `y[r]`; `EXIT`.
//!
//! ## Parameters
//! `graph` (rmat or random), `scale` (default 14), `edgefactor` (default
//! 10), `block` threads per block (default 256).

use rand::Rng;

use super::simt::Block;
use super::{
    block_size, blocks_for, csr_footprint, covered, graph_input, launch, DeviceCsr, GpuKernelInfo, Launches,
    BLOCK_PARAM, SCALE_PARAM,
};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::graph::{EDGEFACTOR_PBBS, GRAPH_PARAM};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "spmv_csr",
    summary: "CSR sparse matrix x dense vector (graph pattern, random values), one thread per row",
    params: PARAMS,
    footprint: |p| {
        let g = graph_input(p)?;
        Ok(csr_footprint(&g) + covered(4 * g.max_nnz()) + 2 * covered(4 * g.vertices()))
    },
    build: |p| Ok(Box::new(SpmvCsr::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[GRAPH_PARAM, SCALE_PARAM, EDGEFACTOR_PBBS, BLOCK_PARAM];

pub struct SpmvCsr {
    launches: Launches,
    block: u32,
    a: DeviceCsr,
    /// Device addresses of `val`, `x`, `y`.
    at: [u64; 3],
    val: Vec<f32>,
    x: Vec<f32>,
    /// The product, as the kernel computed it.
    pub y: Vec<f32>,
}

impl SpmvCsr {
    pub fn new(p: &Params) -> Result<SpmvCsr> {
        let g = graph_input(p)?;
        let block = block_size(p)?;
        blocks_for(p, g.vertices(), block)?;
        let csr = g.csr(p.seed(), true);
        let mut rng = component_rng(p.seed(), "gpu.spmv_csr.values");
        let val: Vec<f32> = (0..csr.nnz()).map(|_| rng.gen()).collect();
        let x: Vec<f32> = (0..csr.n()).map(|_| rng.gen()).collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let a = DeviceCsr::place(&mut heap, csr);
        let n = a.n();
        let at = [heap.alloc("val", 4 * val.len() as u64), heap.alloc("x", 4 * n), heap.alloc("y", 4 * n)];
        Ok(SpmvCsr { launches: Launches::new(heap.allocations), block, a, at, val, x, y: vec![0.0; n as usize] })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, [val_at, x_at, y_at]) = (self.block, self.at);
        let a = &self.a;
        let n = a.n();
        let (val, x, y) = (&self.val, &self.x, &mut self.y);
        let grid = n.div_ceil(bs as u64) as u32;
        launch("spmv_csr", id, [grid, 1, 1], [bs, 1, 1], 0, 16, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let r = |l: u32| bs as u64 * bx as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                let (mut j, mut end, mut sum) = ([0u64; 32], [0u64; 32], [0f32; 32]);
                w.alu(3);
                let s = w.if_begin(|l| r(l) < n);
                w.alu(1);
                w.load(Space::Global, 4, |l| a.row + 4 * r(l));
                w.load(Space::Global, 4, |l| a.row + 4 * (r(l) + 1));
                w.alu(1);
                for l in w.active() {
                    (j[l as usize], end[l as usize]) = a.span(r(l));
                }
                let mut lp = w.loop_begin();
                while w.loop_test(&mut lp, |l| j[l as usize] < end[l as usize]) {
                    let k = |l: u32| j[l as usize];
                    w.alu(1);
                    w.load(Space::Global, 4, |l| a.col + 4 * k(l));
                    w.load(Space::Global, 4, |l| val_at + 4 * k(l));
                    w.alu(1);
                    w.load(Space::Global, 4, |l| x_at + 4 * a.csr.targets[k(l) as usize] as u64);
                    w.alu(2);
                    for l in w.active() {
                        let k = j[l as usize] as usize;
                        let s = &mut sum[l as usize];
                        *s = val[k].mul_add(x[a.csr.targets[k] as usize], *s);
                        j[l as usize] += 1;
                    }
                }
                w.alu(1);
                w.store(Space::Global, 4, |l| y_at + 4 * r(l));
                for l in w.active() {
                    y[r(l) as usize] = sum[l as usize];
                }
                w.if_end(s);
            }
            block.finish()
        })
    }
}

launches!(SpmvCsr);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_product_is_the_dense_product() {
        for graph in ["rmat", "random"] {
            let mut s = SpmvCsr::new(&params("spmv_csr", &[("graph", graph), ("scale", "8")], 6)).unwrap();
            let k = drain(&mut s).remove(0);
            let n = s.a.n() as usize;
            let mut dense = vec![0f32; n * n];
            for (i, (lo, hi)) in (0..n).map(|i| (i, s.a.span(i as u64))) {
                for e in lo..hi {
                    dense[i * n + s.a.csr.targets[e as usize] as usize] = s.val[e as usize];
                }
            }
            for i in 0..n {
                let want = (0..n).fold(0f32, |acc, c| dense[i * n + c].mul_add(s.x[c], acc));
                assert_eq!(s.y[i], want, "{graph} row {i}");
            }
            // One x gather per nonzero.
            let gathers: u64 = k
                .blocks
                .iter()
                .flat_map(|b| &b.warps)
                .flat_map(|w| &w.insts)
                .filter(|i| i.op == Op::Load)
                .map(|i| i.lanes() as u64)
                .sum();
            assert_eq!(gathers, 2 * n as u64 + 3 * s.a.csr.nnz() as u64);
        }
    }
}
