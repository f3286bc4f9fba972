//! `reduction`: the sum of a vector by a shared-memory tree in each block,
//! launched again on the partial sums until one value is left (CUDA samples
//! `reduction`, kernel 3: sequential addressing, first add during load).
//!
//! ## What it models
//! Each thread adds `in[i]` and `in[i + block]` (`i = 2·block·blockIdx +
//! tid`), writes the sum to shared memory, and the block halves the active
//! threads each step (`if (tid < s) s[tid] += s[tid + s]`, a barrier after
//! each step): warps drop out whole until `s` falls below 32, then lanes
//! drop out within warp 0. Thread 0 stores the block's sum. The host
//! launches the kernel again on the `ceil(len / 2·block)` partial sums until
//! one is left. Values are `u32` uniform in [0, 256) (`gpu.reduction.data`),
//! summed with wrap-around, so the result is exact in any order.
//!
//! Layout (allocation order): `in` (`4n` bytes), two partial-sum buffers
//! (`4·ceil(n / 2·block)` bytes each) used in turn: launch 1 reads `in` and
//! writes the first, launch 2 reads the first and writes the second, …
//! Launch: `ceil(len / 2·block)` blocks of `block` threads, `4·block` bytes
//! of shared memory, 10 registers.
//!
//! Instructions per thread: 4 (index, `sum = 0`); compare and branch on
//! `i < len`, in range 1 + load `in[i]`; compare and branch on
//! `i + block < len`, in range 1 + load `in[i + block]` + add; store to
//! shared; barrier. Then per tree step (log2 `block` steps): the loop test
//! (compare, branch), compare and branch on `tid < s`, for those threads a
//! shared load, an add and a shared store; a barrier; 1 (`s >>= 1`); and the
//! loop's last test. Last, compare and branch on `tid == 0`, for thread 0
//! 1 + store `out[blockIdx]`; `EXIT`.
//!
//! ## Parameters
//! `n` elements (default 1M), `block` threads per block (a power of two,
//! default 256).

use rand::Rng;

use super::simt::{Block, Loop};
use super::{blocks_for, launch, GpuKernelInfo, Launches, BLOCK_PARAM};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "reduction",
    summary: "sum of a u32 vector: shared-memory tree per block, relaunched on the partial sums",
    params: PARAMS,
    footprint: |p| {
        let (n, block) = (elements(p)?, tree_block(p)? as u64);
        let round = |b: u64| b.div_ceil(256) * 256;
        Ok(round(4 * n) + 2 * round(4 * n.div_ceil(2 * block)))
    },
    build: |p| Ok(Box::new(Reduction::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "1M", doc: "elements to sum, 1 to 2^30" },
    BLOCK_PARAM,
];

fn elements(p: &Params) -> Result<u64> {
    p.count_in("n", 1, 1 << 30)
}

fn tree_block(p: &Params) -> Result<u32> {
    let b = super::block_size(p)?;
    if !b.is_power_of_two() {
        return Err(Error::config(p.key_path("block"), format!("{b} threads: the tree needs a power of two")));
    }
    Ok(b)
}

pub struct Reduction {
    launches: Launches,
    block: u32,
    input: u64,
    partial: [u64; 2],
    /// The values the next launch reduces.
    values: Vec<u32>,
    /// The input's sum, computed on the host.
    pub expected: u32,
}

impl Reduction {
    pub fn new(p: &Params) -> Result<Reduction> {
        let n = elements(p)?;
        let block = tree_block(p)?;
        blocks_for(p, n, 2 * block)?;
        let mut rng = component_rng(p.seed(), "gpu.reduction.data");
        let values: Vec<u32> = (0..n).map(|_| rng.gen_range(0..256)).collect();
        let expected = values.iter().fold(0u32, |s, &v| s.wrapping_add(v));
        let mut heap = Allocator::new(super::HEAP_BASE);
        let input = heap.alloc("in", 4 * n);
        let partials = 4 * n.div_ceil(2 * block as u64);
        let partial = [heap.alloc("partial0", partials), heap.alloc("partial1", partials)];
        Ok(Reduction { launches: Launches::new(heap.allocations), block, input, partial, values, expected })
    }

    /// The sum, once the last launch has run.
    pub fn result(&self) -> Option<u32> {
        (self.launches.issued > 0 && self.values.len() == 1).then(|| self.values[0])
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let bs = self.block;
        let len = self.values.len() as u64;
        let src = if id == 1 { self.input } else { self.partial[id as usize % 2] };
        let dst = self.partial[(id as usize - 1) % 2];
        let grid = len.div_ceil(2 * bs as u64) as u32;
        let values = &self.values;
        let mut out = vec![0u32; grid as usize];
        let k = launch("reduce", id, [grid, 1, 1], [bs, 1, 1], 4 * bs, 10, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            let mut sum = vec![0u32; bs as usize];
            let mut shm = vec![0u32; bs as usize];
            let base = 2 * bs as u64 * bx as u64;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let tid = |l: u32| wi as u32 * WARP_SIZE + l;
                let i = |l: u32| base + tid(l) as u64;
                w.alu(4);
                let s = w.if_begin(|l| i(l) < len);
                w.alu(1);
                w.load(Space::Global, 4, |l| src + 4 * i(l));
                for l in w.active() {
                    sum[tid(l) as usize] = values[i(l) as usize];
                }
                w.if_end(s);
                let s = w.if_begin(|l| i(l) + (bs as u64) < len);
                w.alu(1);
                w.load(Space::Global, 4, |l| src + 4 * (i(l) + bs as u64));
                w.alu(1);
                for l in w.active() {
                    let t = tid(l) as usize;
                    sum[t] = sum[t].wrapping_add(values[i(l) as usize + bs as usize]);
                }
                w.if_end(s);
                w.store(Space::Shared, 4, |l| 4 * tid(l) as u64);
                for l in w.active() {
                    shm[tid(l) as usize] = sum[tid(l) as usize];
                }
            }
            block.barrier();
            let mut loops: Vec<Loop> = block.warps.iter_mut().map(|w| w.loop_begin()).collect();
            let mut step = bs / 2;
            loop {
                let mut run = false;
                for (w, lp) in block.warps.iter_mut().zip(&mut loops) {
                    run |= w.loop_test(lp, |_| step > 0);
                }
                if !run {
                    break;
                }
                for (wi, w) in block.warps.iter_mut().enumerate() {
                    let tid = |l: u32| wi as u32 * WARP_SIZE + l;
                    let s = w.if_begin(|l| tid(l) < step);
                    w.load(Space::Shared, 4, |l| 4 * (tid(l) + step) as u64);
                    w.alu(1);
                    w.store(Space::Shared, 4, |l| 4 * tid(l) as u64);
                    for l in w.active() {
                        let t = tid(l) as usize;
                        sum[t] = sum[t].wrapping_add(shm[t + step as usize]);
                        shm[t] = sum[t];
                    }
                    w.if_end(s);
                }
                block.barrier();
                for w in &mut block.warps {
                    w.alu(1);
                }
                step >>= 1;
            }
            let w = &mut block.warps[0];
            let s = w.if_begin(|l| l == 0);
            w.alu(1);
            w.store(Space::Global, 4, |_| dst + 4 * bx as u64);
            w.if_end(s);
            out[bx as usize] = sum[0];
            for w in &mut block.warps[1..] {
                let s = w.if_begin(|_| false);
                w.alu(1);
                w.store(Space::Global, 4, |_| dst);
                w.if_end(s);
            }
            block.finish()
        });
        self.values = out;
        k
    }
}

launches!(Reduction, |k: &Reduction| k.result().is_some());

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_launches_sum_the_vector() {
        for (n, block, launches) in [("1", "32", 1), ("64", "32", 1), ("65", "32", 2), ("100000", "128", 3)] {
            let mut r = Reduction::new(&params("reduction", &[("n", n), ("block", block)], 5)).unwrap();
            let ks = drain(&mut r);
            assert_eq!(ks.len(), launches, "n={n}");
            assert_eq!(r.result(), Some(r.expected), "n={n}");
        }
    }

    #[test]
    fn each_tree_step_has_a_barrier_and_lanes_drop_out_within_warp_0() {
        let mut r = Reduction::new(&params("reduction", &[("n", "128"), ("block", "64")], 0)).unwrap();
        let k = drain(&mut r).remove(0);
        let w0 = &k.blocks[0].warps[0];
        let barriers = w0.insts.iter().filter(|i| i.op == Op::Barrier).count();
        assert_eq!(barriers, 1 + 6);
        // Shared stores in the tree: s = 32 (all lanes), 16, 8, 4, 2, 1.
        let tree: Vec<u32> =
            w0.insts.iter().filter(|i| i.op == Op::Store && i.space == Space::Shared).map(|i| i.mask).skip(1).collect();
        assert_eq!(tree, vec![u32::MAX, 0xffff, 0xff, 0xf, 0x3, 0x1]);
        // Warp 1 takes part in no tree step (s <= 32), and stores no result.
        let w1 = &k.blocks[0].warps[1];
        assert_eq!(w1.insts.iter().filter(|i| i.op == Op::Store).count(), 1);
        assert_eq!(w0.insts.len(), w1.insts.len() + 6 * 3 + 2);
    }
}
