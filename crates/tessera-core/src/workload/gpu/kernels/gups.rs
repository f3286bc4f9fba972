//! `gups`: HPCC RandomAccess on a GPU, random read-modify-write updates of
//! a large table, each thread running its own stretch of HPCC's stream.
//!
//! ## What it models
//! A table of `2^k` 64-bit words initialised to `table[i] = i` (not
//! emitted). Thread `t` starts at HPCC's generator state after `t ·
//! per_thread` steps (loaded from `starts`, computed on the host as HPCC's
//! `HPCC_starts` would) and does `per_thread` updates: advance the shift
//! register (`ran = (ran << 1) ^ (ran < 0 ? 7 : 0)`) and
//! `table[ran & (size - 1)] ^= ran`. Without `atomic` an update is a load, an xor and a store,
//! as in HPCC's GPU reference: lanes of one warp that hit the same word all
//! read the old value and the highest lane's store wins, so updates can be
//! lost (HPCC accepts up to 1 %). With `atomic=true` it is one `atomicXor`
//! and nothing is lost. The seed offsets the whole stream by `seed · 2^40`
//! steps, as the CPU `gups` does.
//!
//! Layout (allocation order): `table`, `starts` (8 bytes per thread).
//! Launch: `ceil(threads / block)` blocks of `block` threads, 12 registers.
//!
//! Instructions per thread: 3 index, compare and branch on `t < threads`;
//! 1 + load `starts[t]`; per update the loop test (compare, branch), 3
//! (generator step), 2 (index and address), then load, xor, store (or one
//! atomic), 1 (counter); the loop's last test; `EXIT`.
//!
//! ## Parameters
//! `table` bytes (a power of two, default 64MiB), `threads` (default 64k),
//! `per_thread` updates (default 16), `atomic` (default false), `block`.

use super::simt::Block;
use super::{block_size, blocks_for, launch, GpuKernelInfo, Launches, BLOCK_PARAM};
use crate::error::{Error, Result};
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::gups::hpcc_starts;
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "gups",
    summary: "HPCC RandomAccess: random read-modify-write (or atomic xor) updates of a large table",
    params: PARAMS,
    footprint: |p| {
        let round = |b: u64| b.div_ceil(256) * 256;
        Ok(round(table_bytes(p)?) + round(8 * p.count_in("threads", 1, 1 << 26)?))
    },
    build: |p| Ok(Box::new(Gups::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "table", default: "64MiB", doc: "table size, a power of two from 64KiB to 16GiB" },
    ParamDoc { name: "threads", default: "64k", doc: "threads, 1 to 2^26" },
    ParamDoc { name: "per_thread", default: "16", doc: "updates per thread, 1 to 2^20" },
    ParamDoc { name: "atomic", default: "false", doc: "update with atomicXor instead of load, xor, store" },
    BLOCK_PARAM,
];

fn table_bytes(p: &Params) -> Result<u64> {
    let t = p.size_in("table", 64 << 10, 16 << 30)?;
    if !t.is_power_of_two() {
        return Err(Error::config(p.key_path("table"), format!("{t} bytes is not a power of two")));
    }
    Ok(t)
}

/// HPCC's generator step.
#[inline]
fn step(r: u64) -> u64 {
    (r << 1) ^ if (r as i64) < 0 { 7 } else { 0 }
}

pub struct Gups {
    launches: Launches,
    block: u32,
    per_thread: u64,
    atomic: bool,
    at: [u64; 2],
    starts: Vec<u64>,
    /// The table, as the kernel left it.
    pub table: Vec<u64>,
}

impl Gups {
    pub fn new(p: &Params) -> Result<Gups> {
        let words = table_bytes(p)? / 8;
        let threads = p.count_in("threads", 1, 1 << 26)?;
        let per_thread = p.count_in("per_thread", 1, 1 << 20)?;
        let block = block_size(p)?;
        blocks_for(p, threads, block)?;
        let mut r = hpcc_starts(p.seed().wrapping_mul(1 << 40));
        let mut starts = Vec::with_capacity(threads as usize);
        for _ in 0..threads {
            starts.push(r);
            for _ in 0..per_thread {
                r = step(r);
            }
        }
        let mut heap = Allocator::new(super::HEAP_BASE);
        let at = [heap.alloc("table", 8 * words), heap.alloc("starts", 8 * threads)];
        Ok(Gups {
            launches: Launches::new(heap.allocations),
            block,
            per_thread,
            atomic: p.flag("atomic")?,
            at,
            starts,
            table: (0..words).collect(),
        })
    }

    /// Each thread's first generator state, for tests.
    pub fn starts(&self) -> &[u64] {
        &self.starts
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (bs, per_thread, atomic, [table_at, starts_at]) = (self.block, self.per_thread, self.atomic, self.at);
        let threads = self.starts.len() as u64;
        let grid = threads.div_ceil(bs as u64) as u32;
        let mask = self.table.len() as u64 - 1;
        let (starts, table) = (&self.starts, &mut self.table);
        launch("gups", id, [grid, 1, 1], [bs, 1, 1], 0, 12, |[bx, _, _]| {
            let mut block = Block::new([bx, 0, 0], bs);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let t = |l: u32| bs as u64 * bx as u64 + (wi as u32 * WARP_SIZE + l) as u64;
                let mut ran = [0u64; WARP_SIZE as usize];
                w.alu(3);
                let s = w.if_begin(|l| t(l) < threads);
                w.alu(1);
                w.load(Space::Global, 8, |l| starts_at + 8 * t(l));
                for l in w.active() {
                    ran[l as usize] = starts[t(l) as usize];
                }
                let mut lp = w.loop_begin();
                let mut u = 0;
                while w.loop_test(&mut lp, |_| u < per_thread) {
                    w.alu(3);
                    for l in w.active() {
                        ran[l as usize] = step(ran[l as usize]);
                    }
                    w.alu(2);
                    let slot = |l: u32| ran[l as usize] & mask;
                    if atomic {
                        w.atomic(Space::Global, 8, |l| table_at + 8 * slot(l));
                        for l in w.active() {
                            table[slot(l) as usize] ^= ran[l as usize];
                        }
                    } else {
                        w.load(Space::Global, 8, |l| table_at + 8 * slot(l));
                        let old: Vec<u64> = w.active().map(|l| table[slot(l) as usize]).collect();
                        w.alu(1);
                        w.store(Space::Global, 8, |l| table_at + 8 * slot(l));
                        for (l, old) in w.active().zip(old) {
                            table[slot(l) as usize] = old ^ ran[l as usize];
                        }
                    }
                    w.alu(1);
                    u += 1;
                }
                w.if_end(s);
            }
            block.finish()
        })
    }
}

launches!(Gups);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;

    /// The table after every update, in HPCC's serial order.
    fn serial(words: u64, start: u64, updates: u64) -> Vec<u64> {
        let mut table: Vec<u64> = (0..words).collect();
        let mut r = start;
        for _ in 0..updates {
            r = if r & (1 << 63) != 0 { (r << 1) ^ 7 } else { r << 1 };
            table[(r & (words - 1)) as usize] ^= r;
        }
        table
    }

    #[test]
    fn atomic_updates_give_hpccs_table() {
        let given = [("table", "64KiB"), ("threads", "1000"), ("per_thread", "8"), ("atomic", "true")];
        let mut g = Gups::new(&params("gups", &given, 2)).unwrap();
        drain(&mut g);
        assert_eq!(g.table, serial(8192, g.starts()[0], 8000));
    }

    #[test]
    fn plain_updates_lose_at_most_hpccs_one_percent() {
        // Seed 1: HPCC's stream from seed 0 starts at powers of two, whose
        // low bits collide within a warp far more than a mixed stream's.
        let given = [("table", "1MiB"), ("threads", "4096"), ("per_thread", "4")];
        let mut g = Gups::new(&params("gups", &given, 1)).unwrap();
        let k = drain(&mut g).remove(0);
        let want = serial(1 << 17, g.starts()[0], 4096 * 4);
        let wrong = g.table.iter().zip(&want).filter(|(a, b)| a != b).count();
        assert!(wrong * 100 <= 4096 * 4, "{wrong} wrong words");
        // Per update: 3 + 2 + load + xor + store + 1, and the loop test.
        let full = &k.blocks[0].warps[0];
        assert_eq!(full.insts.len(), 5 + 2 + 4 * (2 + 9) + 2 + 1);
    }
}
