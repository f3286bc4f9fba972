//! `scan`: inclusive prefix sum of a vector, a Hillis–Steele scan in
//! shared memory per block, with the block totals scanned the same way and
//! added back (GPU Gems 3, ch. 39, the naive double-buffered scan, in the
//! recursive form for arrays of many blocks).
//!
//! ## What it models
//! `scan_block` scans `block` elements per thread block: each thread loads
//! one element into shared memory, then for `off = 1, 2, 4, … < block` the
//! threads with `tid ≥ off` add the element `off` before theirs while the
//! others copy theirs (an if/else: both sides issue, with complementary
//! masks), the two shared buffers swapping roles each step with a barrier
//! between. Each thread stores its prefix; the last thread also stores the
//! block's total. When there is more than one block, the totals are scanned
//! the same way (in place, recursively), and `scan_add` adds the scanned
//! total of the blocks before each element's block. Values are `u32` uniform
//! in [0, 16) (`gpu.scan.data`), summed with wrap-around, so the result is
//! exact.
//!
//! Layout (allocation order): `in` (`4n`), `out` (`4n`), then the block
//! totals of each level (`4·ceil(n / block)`, `4·ceil(n / block²)`, … down to
//! one). Launches: `scan_block` on each level from the bottom up, then
//! `scan_add` on each level but the top from the top down, `ceil(len /
//! block)` blocks of `block` threads each. `scan_block` uses `8·block` bytes
//! of shared memory and 12 registers; `scan_add` none and 8.
//!
//! Instructions per thread, `scan_block`: 3 (index); compare and branch on
//! `i < len`, in range 1 + load; shared store; barrier; per step the loop
//! test (compare, branch), 1 (swap buffers), compare and branch on
//! `tid ≥ off`, then for those threads 2 shared loads, an add, a shared
//! store, a branch over the else, and for the others a shared load and a
//! shared store; a barrier; 1 (`off <<= 1`); after the loop's last test,
//! compare and branch on `i < len`, in range a shared load, 1 and a store;
//! compare and branch on `tid == block - 1`, for that thread 1 + store of
//! the total; `EXIT`. `scan_add`: 4 (index, the first compare), compare and
//! branch on `blockIdx > 0 && i < len`, for those threads 1, load of the total, load,
//! add, store; `EXIT`.
//!
//! ## Parameters
//! `n` elements (default 256k: every step of the block scan keeps 32 shared
//! addresses per warp instruction, about 60 MiB of lane addresses at this
//! size), `block` threads per block (a power of two, default 256).

use rand::Rng;

use super::simt::{Block, Loop};
use super::{blocks_for, launch, GpuKernelInfo, Launches, BLOCK_PARAM};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use crate::workload::gpu::{Allocation, Allocator, Kernel, KernelSource, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "scan",
    summary: "inclusive prefix sum of a u32 vector: shared-memory block scans, totals scanned and added back",
    params: PARAMS,
    footprint: |p| {
        let (n, block) = (elements(p)?, scan_block(p)? as u64);
        let round = |b: u64| b.div_ceil(256) * 256;
        Ok(2 * round(4 * n) + levels(n, block).iter().skip(1).map(|&l| round(4 * l)).sum::<u64>())
    },
    build: |p| Ok(Box::new(Scan::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "256k", doc: "elements to scan, 1 to 2^30" },
    BLOCK_PARAM,
];

fn elements(p: &Params) -> Result<u64> {
    p.count_in("n", 1, 1 << 30)
}

fn scan_block(p: &Params) -> Result<u32> {
    let b = super::block_size(p)?;
    if !b.is_power_of_two() {
        return Err(Error::config(p.key_path("block"), format!("{b} threads: the scan needs a power of two")));
    }
    Ok(b)
}

/// Lengths of the arrays scanned at each level: `n`, then the block totals
/// of the level below, down to one block's worth (the last entry is 1).
fn levels(n: u64, block: u64) -> Vec<u64> {
    let mut v = vec![n];
    while *v.last().expect("one level") > 1 {
        let next = v.last().expect("one level").div_ceil(block);
        v.push(next);
    }
    if v.len() == 1 {
        v.push(1);
    }
    v
}

enum Step {
    Scan(usize),
    Add(usize),
}

pub struct Scan {
    launches: Launches,
    block: u32,
    plan: Vec<Step>,
    input: u64,
    /// Device address of each level's scanned array (`out`, then totals).
    at: Vec<u64>,
    x: Vec<u32>,
    /// Each level's array as the kernels leave it (level 0 is `out`).
    pub arrays: Vec<Vec<u32>>,
}

impl Scan {
    pub fn new(p: &Params) -> Result<Scan> {
        let n = elements(p)?;
        let block = scan_block(p)?;
        blocks_for(p, n, block)?;
        let lens = levels(n, block as u64);
        let mut rng = component_rng(p.seed(), "gpu.scan.data");
        let x: Vec<u32> = (0..n).map(|_| rng.gen_range(0..16)).collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let input = heap.alloc("in", 4 * n);
        let mut at = vec![heap.alloc("out", 4 * n)];
        for (j, &len) in lens.iter().enumerate().skip(1) {
            at.push(heap.alloc(&format!("totals{j}"), 4 * len));
        }
        // Scan every level that has more than one block below it, then add back.
        let scanned = lens.iter().position(|&l| l <= block as u64).expect("the top level fits a block");
        let mut plan: Vec<Step> = (0..=scanned).map(Step::Scan).collect();
        plan.extend((0..scanned).rev().map(Step::Add));
        let arrays = lens.iter().map(|&l| vec![0; l as usize]).collect();
        Ok(Scan { launches: Launches::new(heap.allocations), block, plan, input, at, x, arrays })
    }

    /// The input, for tests.
    pub fn input(&self) -> &[u32] {
        &self.x
    }

    fn scan(&mut self, id: u32, level: usize) -> Kernel {
        let bs = self.block;
        let input: Vec<u32> = if level == 0 { self.x.clone() } else { self.arrays[level].clone() };
        let len = input.len() as u64;
        let src = if level == 0 { self.input } else { self.at[level] };
        let (dst, totals_at) = (self.at[level], self.at[level + 1]);
        let grid = len.div_ceil(bs as u64) as u32;
        let mut out = vec![0u32; len as usize];
        let mut totals = vec![0u32; grid as usize];
        let k = launch("scan_block", id, [grid, 1, 1], [bs, 1, 1], 8 * bs, 12, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            let mut shm = [vec![0u32; bs as usize], vec![0u32; bs as usize]];
            let base = bs as u64 * bx as u64;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let tid = |l: u32| wi as u32 * WARP_SIZE + l;
                let i = |l: u32| base + tid(l) as u64;
                w.alu(3);
                let s = w.if_begin(|l| i(l) < len);
                w.alu(1);
                w.load(Space::Global, 4, |l| src + 4 * i(l));
                for l in w.active() {
                    shm[0][tid(l) as usize] = input[i(l) as usize];
                }
                w.if_end(s);
                w.store(Space::Shared, 4, |l| 4 * tid(l) as u64);
            }
            block.barrier();
            let mut loops: Vec<Loop> = block.warps.iter_mut().map(|w| w.loop_begin()).collect();
            let (mut off, mut pin) = (1u32, 0usize);
            loop {
                let mut run = false;
                for (w, lp) in block.warps.iter_mut().zip(&mut loops) {
                    run |= w.loop_test(lp, |_| off < bs);
                }
                if !run {
                    break;
                }
                let pout = 1 - pin;
                let (rd, wr) = (4 * bs as u64 * pin as u64, 4 * bs as u64 * pout as u64);
                let [a, b] = &mut shm;
                let (from, to) = if pin == 0 { (&*a, b) } else { (&*b, a) };
                for (wi, w) in block.warps.iter_mut().enumerate() {
                    let tid = |l: u32| wi as u32 * WARP_SIZE + l;
                    w.alu(1);
                    let s = w.if_begin(|l| tid(l) >= off);
                    w.load(Space::Shared, 4, |l| rd + 4 * tid(l) as u64);
                    w.load(Space::Shared, 4, |l| rd + 4 * (tid(l) - off) as u64);
                    w.alu(1);
                    w.store(Space::Shared, 4, |l| wr + 4 * tid(l) as u64);
                    for l in w.active() {
                        let t = tid(l) as usize;
                        to[t] = from[t].wrapping_add(from[t - off as usize]);
                    }
                    w.if_else(&s);
                    w.load(Space::Shared, 4, |l| rd + 4 * tid(l) as u64);
                    w.store(Space::Shared, 4, |l| wr + 4 * tid(l) as u64);
                    for l in w.active() {
                        to[tid(l) as usize] = from[tid(l) as usize];
                    }
                    w.if_end(s);
                }
                block.barrier();
                for w in &mut block.warps {
                    w.alu(1);
                }
                off <<= 1;
                pin = pout;
            }
            let result = &shm[pin];
            let last = bs - 1;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let tid = |l: u32| wi as u32 * WARP_SIZE + l;
                let i = |l: u32| base + tid(l) as u64;
                let rd = 4 * bs as u64 * pin as u64;
                let s = w.if_begin(|l| i(l) < len);
                w.load(Space::Shared, 4, |l| rd + 4 * tid(l) as u64);
                w.alu(1);
                w.store(Space::Global, 4, |l| dst + 4 * i(l));
                for l in w.active() {
                    out[i(l) as usize] = result[tid(l) as usize];
                }
                w.if_end(s);
                let s = w.if_begin(|l| tid(l) == last);
                w.alu(1);
                w.store(Space::Global, 4, |_| totals_at + 4 * bx as u64);
                w.if_end(s);
            }
            totals[bx as usize] = result[last as usize];
            block.finish()
        });
        self.arrays[level] = out;
        self.arrays[level + 1] = totals;
        k
    }

    fn add(&mut self, id: u32, level: usize) -> Kernel {
        let bs = self.block;
        let (dst, totals_at) = (self.at[level], self.at[level + 1]);
        let len = self.arrays[level].len() as u64;
        let grid = len.div_ceil(bs as u64) as u32;
        let (below, above) = self.arrays.split_at_mut(level + 1);
        let (target, totals) = (&mut below[level], &above[0]);
        launch("scan_add", id, [grid, 1, 1], [bs, 1, 1], 0, 8, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let i = |l: u32| bs as u64 * bx as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                w.alu(4);
                let s = w.if_begin(|l| bx > 0 && i(l) < len);
                w.alu(1);
                w.load(Space::Global, 4, |_| totals_at + 4 * (bx as u64).saturating_sub(1));
                w.load(Space::Global, 4, |l| dst + 4 * i(l));
                w.alu(1);
                w.store(Space::Global, 4, |l| dst + 4 * i(l));
                for l in w.active() {
                    let t = &mut target[i(l) as usize];
                    *t = t.wrapping_add(totals[bx as usize - 1]);
                }
                w.if_end(s);
            }
            block.finish()
        })
    }
}

impl KernelSource for Scan {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        let Some(step) = self.plan.get(self.launches.issued as usize) else { return Ok(None) };
        let (scan, level) = match *step {
            Step::Scan(l) => (true, l),
            Step::Add(l) => (false, l),
        };
        let id = self.launches.next_id();
        Ok(Some(if scan { self.scan(id, level) } else { self.add(id, level) }))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_launches_give_the_inclusive_prefix_sums() {
        for (n, block, launches) in [("1", "32", 1), ("32", "32", 1), ("33", "32", 3), ("40000", "32", 7)] {
            let mut s = Scan::new(&params("scan", &[("n", n), ("block", block)], 9)).unwrap();
            let names: Vec<String> = drain(&mut s).into_iter().map(|k| k.name).collect();
            assert_eq!(names.len(), launches, "n={n}: {names:?}");
            let mut acc = 0u32;
            for (i, &x) in s.input().iter().enumerate() {
                acc = acc.wrapping_add(x);
                assert_eq!(s.arrays[0][i], acc, "n={n} i={i}");
            }
        }
    }

    #[test]
    fn both_sides_of_a_step_issue_with_complementary_masks() {
        let mut s = Scan::new(&params("scan", &[("n", "32"), ("block", "32")], 0)).unwrap();
        let k = drain(&mut s).remove(0);
        let w = &k.blocks[0].warps[0];
        let stores: Vec<u32> =
            w.insts.iter().filter(|i| i.op == Op::Store && i.space == Space::Shared).map(|i| i.mask).collect();
        // The load into shared memory, then per step off = 1, 2, 4, 8, 16: then-side, else-side.
        let mut want = vec![u32::MAX];
        for off in [1u32, 2, 4, 8, 16] {
            let low = (1u32 << off) - 1;
            want.extend([!low, low]);
        }
        assert_eq!(stores, want);
        assert_eq!(w.insts.iter().filter(|i| i.op == Op::Barrier).count(), 6);
    }
}
