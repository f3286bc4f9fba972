//! `spmv`: PBBS-style sparse matrix × dense vector product in CSR form.
//!
//! ## What it models
//! `y = A·x` for a square sparse matrix `A` whose pattern is a graph's
//! adjacency (an R-MAT or random graph from [`super::graph`], deduplicated,
//! columns sorted within each row) and whose values are uniform doubles in
//! [0, 1); `x` is a dense vector of uniform doubles. Row by row:
//! `y[i] = Σ_k val[k] · x[col[k]]` for `k` in `offsets[i]..offsets[i+1]`, the
//! sum kept in a register in column order. `iterations` repeats the product
//! with the same `x`, as a benchmark's timing rounds do.
//!
//! Layout (allocation order, each by `malloc`): `offsets` (`u64 × (n+1)`),
//! `col` (`u32` per nonzero), `val` (`f64` per nonzero), `x` (`f64 × n`), `y`
//! (`f64 × n`). The matrix and `x` are set up on the host (not emitted), as a
//! program reading them from a file would.
//!
//! Instruction model, per iteration: 2 + load `offsets[0]`; per row 2 + load
//! `offsets[i+1]` (the row start is carried from the previous row), per nonzero
//! 3 + load `col[k]`, 1 + load `val[k]`, 2 + load `x[col[k]]` (index scaling,
//! multiply, add and loop control are the instructions between), and per row
//! 2 + store `y[i]`.
//! Dependencies: `col[k]` and `val[k]` on the `offsets` load that gave the
//! row start, `x[col[k]]` on the `col[k]` load; `y[i]` has none.
//!
//! ## Choices
//! - The sum order is fixed, so `y` is reproducible bit for bit and tests
//!   compare it exactly with a host computation.
//! - Values come from `workload.spmv.values` (`val` then `x`).

use rand::RngCore;

use super::emit::Dep;
use super::graph::{self, GraphInput, SimCsr};
use super::layout::{AddressSpace, SimVec};
use super::{Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "spmv",
    summary: "CSR sparse matrix x dense vector (graph pattern, random values), repeated",
    params: PARAMS,
    footprint: |p| {
        let g = GraphInput::from_params(p, true)?;
        Ok(SimCsr::bytes(g.vertices(), g.max_nnz()) + 8 * g.max_nnz() + 16 * g.vertices())
    },
    build: |p| Ok(Box::new(Spmv::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    graph::GRAPH_PARAM,
    graph::SCALE_PARAM,
    graph::EDGEFACTOR_PBBS,
    ParamDoc { name: "iterations", default: "5", doc: "products y = A x computed (same x each time)" },
];

pub struct Spmv {
    graph: GraphInput,
    iterations: u64,
    seed: u64,
}

impl Spmv {
    pub fn new(p: &Params) -> Result<Spmv> {
        Ok(Spmv {
            graph: GraphInput::from_params(p, true)?,
            iterations: p.count_in("iterations", 1, 1 << 20)?,
            seed: p.seed(),
        })
    }
}

fn uniform(rng: &mut impl RngCore) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The matrix values and `x` for a pattern with `nnz` nonzeros and `n` rows.
pub fn values(seed: u64, nnz: usize, n: usize) -> (Vec<f64>, Vec<f64>) {
    let mut rng = component_rng(seed, "workload.spmv.values");
    let val = (0..nnz).map(|_| uniform(&mut rng)).collect();
    let x = (0..n).map(|_| uniform(&mut rng)).collect();
    (val, x)
}

/// One product `y = A·x`, emitted. Returns false if the emitter stopped.
pub fn multiply(a: &SimCsr, val: &SimVec<f64>, x: &SimVec<f64>, y: &mut SimVec<f64>, e: &mut Emitter) -> bool {
    let n = a.n();
    e.ins(2);
    let (lo0, mut dlo) = a.offsets.ld_on(0, Dep::NONE, e);
    let mut lo = lo0 as usize;
    for i in 0..n {
        e.ins(2);
        let (hi, dhi) = a.offsets.ld_on(i + 1, Dep::NONE, e);
        let hi = hi as usize;
        let mut sum = 0.0f64;
        for k in lo..hi {
            e.ins(3);
            let (c, dc) = a.targets.ld_on(k, dlo, e);
            e.ins(1);
            let v = val.ld_on(k, dlo, e).0;
            e.ins(2);
            sum += v * x.ld_on(c as usize, dc, e).0;
        }
        e.ins(2);
        y.st(i, sum, e);
        lo = hi;
        dlo = dhi;
        if i & 0xfff == 0xfff && e.stopped() {
            return false;
        }
    }
    true
}

impl Workload for Spmv {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let n = self.graph.vertices() as usize;
        let csr = self.graph.csr(self.seed, true);
        let (val, x) = values(self.seed, csr.nnz(), n);
        let a = SimCsr::place(&mut space, csr);
        let val = SimVec::from_vec(&mut space, val);
        let x = SimVec::from_vec(&mut space, x);
        let mut y = SimVec::alloc(&mut space, n, 0.0f64);
        for it in 0..self.iterations {
            e.progress(it, self.iterations);
            if !multiply(&a, &val, &x, &mut y, e) {
                return Ok(());
            }
        }
        e.progress(self.iterations, self.iterations);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessKind;
    use crate::workload::emit::VecSink;

    #[test]
    fn product_equals_host_reference_and_counts_match() {
        for kind in [graph::GraphKind::Rmat, graph::GraphKind::Random] {
            let g = GraphInput { kind, scale: 9, edgefactor: 6 };
            let csr = g.csr(4, true);
            let (val, x) = values(4, csr.nnz(), 512);
            let want: Vec<f64> = (0..512)
                .map(|i| {
                    let (lo, hi) = (csr.offsets[i] as usize, csr.offsets[i + 1] as usize);
                    (lo..hi).map(|k| val[k] * x[csr.targets[k] as usize]).fold(0.0, |s, t| s + t)
                })
                .collect();
            let nnz = csr.nnz() as u64;
            let mut space = AddressSpace::new();
            let a = SimCsr::place(&mut space, csr);
            let val = SimVec::from_vec(&mut space, val);
            let xs = SimVec::from_vec(&mut space, x);
            let mut y = SimVec::alloc(&mut space, 512, 0.0f64);
            let mut sink = VecSink::default();
            let mut e = Emitter::new(&mut sink);
            assert!(multiply(&a, &val, &xs, &mut y, &mut e));
            e.finish();
            assert_eq!(y.data, want, "{kind:?}");
            let stores = sink.records.iter().filter(|r| r.2 == AccessKind::Store).count() as u64;
            assert_eq!(stores, 512);
            assert_eq!(sink.records.len() as u64, 1 + 512 + 3 * nnz + 512);
            let ins: u64 = sink.records.iter().map(|r| r.0 as u64).sum();
            assert_eq!(ins, 2 + 4 * 512 + 6 * nnz);
        }
    }
}
