//! `vector_add`: `c[i] = a[i] + b[i]` (CUDA samples `vectorAdd`).
//!
//! ## What it models
//! One launch, one thread per element: each thread adds one pair of `f32`s
//! and stores the sum; threads past `n` (the last block's tail) only test
//! their index. `a` and `b` are uniform in [0, 1) (`gpu.vector_add.data`).
//!
//! Layout (allocation order): `a`, `b`, `c`, `4n` bytes each.
//! Launch: `ceil(n / block)` blocks of `block` threads; 8 registers, no
//! shared memory.
//!
//! Instructions per thread (13 for a thread in range, 6 past the end):
//! 3 index (`S2R` ×2, `IMAD`), compare and branch on `i < n`; in range 3
//! address computations, load `a[i]`, load `b[i]`, `FADD`, store `c[i]`;
//! `EXIT`.
//!
//! ## Parameters
//! `n` elements (default 1M), `block` threads per block (default 256).

use rand::Rng;

use super::simt::Block;
use super::{block_size, blocks_for, launch, GpuKernelInfo, Launches, BLOCK_PARAM};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "vector_add",
    summary: "c[i] = a[i] + b[i] over f32 vectors, one thread per element",
    params: PARAMS,
    footprint: |p| Ok(3 * (4 * elements(p)?).div_ceil(256) * 256),
    build: |p| Ok(Box::new(VectorAdd::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "1M", doc: "elements per vector, 1 to 2^30" },
    BLOCK_PARAM,
];

fn elements(p: &Params) -> Result<u64> {
    p.count_in("n", 1, 1 << 30)
}

pub struct VectorAdd {
    launches: Launches,
    n: u64,
    block: u32,
    grid: u32,
    /// Device addresses of `a`, `b`, `c`.
    at: [u64; 3],
    a: Vec<f32>,
    b: Vec<f32>,
    /// The result, as the kernel computed it.
    pub c: Vec<f32>,
}

impl VectorAdd {
    pub fn new(p: &Params) -> Result<VectorAdd> {
        let n = elements(p)?;
        let block = block_size(p)?;
        let grid = blocks_for(p, n, block)?;
        let mut rng = component_rng(p.seed(), "gpu.vector_add.data");
        let a: Vec<f32> = (0..n).map(|_| rng.gen()).collect();
        let b: Vec<f32> = (0..n).map(|_| rng.gen()).collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let at = [heap.alloc("a", 4 * n), heap.alloc("b", 4 * n), heap.alloc("c", 4 * n)];
        Ok(VectorAdd {
            launches: Launches::new(heap.allocations),
            n,
            block,
            grid,
            at,
            a,
            b,
            c: vec![0.0; n as usize],
        })
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (n, bs, [a, b, c]) = (self.n, self.block, self.at);
        launch("vector_add", id, [self.grid, 1, 1], [bs, 1, 1], 0, 8, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let gid = |l: u32| bx as u64 * bs as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                w.alu(3);
                let s = w.if_begin(|l| gid(l) < n);
                w.alu(3);
                w.load(Space::Global, 4, |l| a + 4 * gid(l));
                w.load(Space::Global, 4, |l| b + 4 * gid(l));
                w.alu(1);
                for l in w.active() {
                    let i = gid(l) as usize;
                    self.c[i] = self.a[i] + self.b[i];
                }
                w.store(Space::Global, 4, |l| c + 4 * gid(l));
                w.if_end(s);
            }
            block.finish()
        })
    }
}

launches!(VectorAdd);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_sums_are_the_host_sums() {
        let mut v = VectorAdd::new(&params("vector_add", &[("n", "10000"), ("block", "96")], 3)).unwrap();
        drain(&mut v);
        for i in 0..10000 {
            assert_eq!(v.c[i], v.a[i] + v.b[i]);
        }
    }

    #[test]
    fn forty_eight_elements_give_the_documented_warp_instructions() {
        let mut v = VectorAdd::new(&params("vector_add", &[("n", "48"), ("block", "32")], 0)).unwrap();
        let ks = drain(&mut v);
        assert_eq!(ks.len(), 1);
        let k = &ks[0];
        assert_eq!((k.grid, k.block, k.blocks.len()), ([2, 1, 1], [32, 1, 1], 2));
        use Op::*;
        let full = [Alu, Alu, Alu, Alu, Branch, Alu, Alu, Alu, Load, Load, Alu, Store, Exit];
        for (b, lanes) in [(0, u32::MAX), (1, 0xffff)] {
            let w = &k.blocks[b].warps[0];
            let ops: Vec<Op> = w.insts.iter().map(|i| i.op).collect();
            assert_eq!(ops, full);
            let masks: Vec<u32> = w.insts.iter().map(|i| i.mask).collect();
            let mut want = vec![u32::MAX; 13];
            want[5..12].iter_mut().for_each(|m| *m = lanes);
            assert_eq!(masks, want, "block {b}");
            let pcs: Vec<u32> = w.insts.iter().map(|i| i.pc).collect();
            assert_eq!(pcs, (0..13).map(|i| 16 * i).collect::<Vec<u32>>());
            let n = lanes.count_ones() as u64;
            let first = 32 * b as u64;
            let want: Vec<u64> = [v.at[0], v.at[1], v.at[2]]
                .iter()
                .flat_map(|&base| (first..first + n).map(move |i| base + 4 * i))
                .collect();
            assert_eq!(w.addrs, want, "block {b}");
        }
        assert_eq!(k.thread_insts(), 32 * 13 + 16 * 13 + 16 * 6);
        assert_eq!(v.at[1] - v.at[0], 256);
    }

    #[test]
    fn a_full_warps_accesses_coalesce_into_one_line_each() {
        use crate::addr::PageSize;
        use crate::workload::gpu::coalesce::Coalesced;
        let mut v = VectorAdd::new(&params("vector_add", &[("n", "4096")], 0)).unwrap();
        let k = drain(&mut v).remove(0);
        let mut c = Coalesced::new(PageSize::Size4K);
        let mut accesses = 0;
        for (inst, addrs) in k.blocks.iter().flat_map(|b| &b.warps).flat_map(|w| w.iter()) {
            if inst.op.is_memory() {
                c.coalesce(inst.size, addrs);
                assert_eq!((c.lines().len(), c.line_sectors(), c.pages().len()), (1, &[0b1111u8][..], 1));
                accesses += 1;
            }
        }
        assert_eq!(accesses, 3 * 4096 / 32);
    }
}
