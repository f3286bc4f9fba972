//! `histogram`: counts of values in bins by global atomic adds, one thread
//! per element.
//!
//! ## What it models
//! The plain global-atomics histogram (the baseline of CUDA samples
//! `histogram` and of the GPU atomics literature): each thread loads one
//! `u32`, takes it modulo `bins` and does `atomicAdd(&hist[bin], 1)`. Lanes
//! of a warp that hit the same bin conflict at the memory side; the warp
//! still issues one atomic. Values are uniform `u32`s (`gpu.histogram.data`)
//! or, with `skew` above 0, a Zipf-like draw: bin `⌊bins · u^(1+skew)⌋`
//! for uniform `u`, so low bins are hot.
//!
//! Layout (allocation order): `data` (`4n` bytes), `hist` (`4·bins` bytes,
//! zeroed by a `cudaMemset` that is not emitted).
//! Launch: `ceil(n / block)` blocks of `block` threads, 8 registers.
//!
//! Instructions per thread (11 in range, 6 past the end): 3 index, compare
//! and branch on `i < n`; in range 1 + load `data[i]`, 2 (modulo and bin
//! address), atomic add to `hist[bin]`; `EXIT`.
//!
//! ## Parameters
//! `n` elements (default 1M), `bins` (default 256), `skew` (default 0),
//! `block` threads per block (default 256).

use rand::Rng;

use super::simt::Block;
use super::{block_size, blocks_for, launch, GpuKernelInfo, Launches, BLOCK_PARAM};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "histogram",
    summary: "histogram of u32 values by global atomic adds, one thread per element",
    params: PARAMS,
    footprint: |p| {
        let round = |b: u64| b.div_ceil(256) * 256;
        Ok(round(4 * elements(p)?) + round(4 * p.count_in("bins", 1, 1 << 24)?))
    },
    build: |p| Ok(Box::new(Histogram::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "1M", doc: "elements, 1 to 2^30" },
    ParamDoc { name: "bins", default: "256", doc: "bins, 1 to 2^24" },
    ParamDoc { name: "skew", default: "0", doc: "0 for uniform values; above 0 low bins are hot (bin = bins * u^(1+skew)), up to 10" },
    BLOCK_PARAM,
];

fn elements(p: &Params) -> Result<u64> {
    p.count_in("n", 1, 1 << 30)
}

pub struct Histogram {
    launches: Launches,
    block: u32,
    bins: u32,
    at: [u64; 2],
    data: Vec<u32>,
    /// The counts, as the kernel computed them.
    pub hist: Vec<u32>,
}

impl Histogram {
    pub fn new(p: &Params) -> Result<Histogram> {
        let n = elements(p)?;
        let bins = p.count_in("bins", 1, 1 << 24)? as u32;
        let skew = p.real_in("skew", 0.0, 10.0)?;
        let block = block_size(p)?;
        blocks_for(p, n, block)?;
        let mut rng = component_rng(p.seed(), "gpu.histogram.data");
        let data: Vec<u32> = (0..n)
            .map(|_| {
                if skew == 0.0 {
                    rng.gen()
                } else {
                    // A value whose bin is bins * u^(1+skew), plus a random multiple of bins.
                    let u: f64 = rng.gen();
                    let bin = ((bins as f64 * u.powf(1.0 + skew)) as u32).min(bins - 1);
                    let lap = rng.gen_range(0..u32::MAX / bins);
                    lap * bins + bin
                }
            })
            .collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let at = [heap.alloc("data", 4 * n), heap.alloc("hist", 4 * bins as u64)];
        Ok(Histogram { launches: Launches::new(heap.allocations), block, bins, at, data, hist: vec![0; bins as usize] })
    }

    /// The input values, for tests.
    pub fn data(&self) -> &[u32] {
        &self.data
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, bins, [data_at, hist_at]) = (self.block, self.bins, self.at);
        let n = self.data.len() as u64;
        let grid = n.div_ceil(bs as u64) as u32;
        let (data, hist) = (&self.data, &mut self.hist);
        launch("histogram", id, [grid, 1, 1], [bs, 1, 1], 0, 8, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let i = |l: u32| bs as u64 * bx as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                w.alu(3);
                let s = w.if_begin(|l| i(l) < n);
                w.alu(1);
                w.load(Space::Global, 4, |l| data_at + 4 * i(l));
                w.alu(2);
                let bin = |l: u32| data[i(l) as usize] % bins;
                w.atomic(Space::Global, 4, |l| hist_at + 4 * bin(l) as u64);
                for l in w.active() {
                    hist[bin(l) as usize] += 1;
                }
                w.if_end(s);
            }
            block.finish()
        })
    }
}

launches!(Histogram);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_counts_are_the_host_counts() {
        for skew in ["0", "1.5"] {
            let mut h = Histogram::new(&params("histogram", &[("n", "50000"), ("bins", "100"), ("skew", skew)], 4)).unwrap();
            let k = drain(&mut h).remove(0);
            let mut want = vec![0u32; 100];
            for &v in h.data() {
                want[(v % 100) as usize] += 1;
            }
            assert_eq!(h.hist, want, "skew {skew}");
            let atomics: u64 = k.blocks.iter().flat_map(|b| &b.warps).flat_map(|w| &w.insts).filter(|i| i.op == Op::Atomic).map(|i| i.lanes() as u64).sum();
            assert_eq!(atomics, 50000);
            if skew != "0" {
                assert!(want[0] > 4 * want[99], "{want:?}");
            }
        }
    }
}
