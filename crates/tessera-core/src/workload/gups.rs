//! `gups`: the HPCC RandomAccess update loop.
//!
//! ## What it models
//! HPCC's reference serial kernel: a table of `2^k` 64-bit words and 128
//! independent random streams `ran[0..128]` kept in a stack array. Each update
//! advances one stream with HPCC's shift register
//! (`ran = (ran << 1) ^ (ran < 0 ? POLY : 0)`, `POLY = 7`) and does
//! `table[ran & (size-1)] ^= ran`. Streams start at `HPCC_starts(n)` for
//! evenly spaced `n`, as in HPCC.
//!
//! Emitted per update (10 instructions, 4 accesses): load `ran[j]` (stack),
//! store `ran[j]`, load `table[i]`, store `table[i]`; instructions 2/4/2/2 in
//! front of them (index arithmetic, shift/compare/xor, mask, xor + loop).
//! Table initialisation (`table[i] = i`) is not emitted by default (HPCC does
//! not time it); `init=true` emits it first.
//!
//! ## Choices
//! - The table's values never influence which addresses are touched, so the
//!   table is not allocated on the host: a 64 GiB table costs no host memory.
//! - `updates=0` means HPCC's own count, 4 × table words.
//! - The seed offsets every stream's start by `seed × 2^40` steps of the
//!   generator's period, so seed 0 is HPCC's exact sequence.
//! - Layout: the table is one mmap (2 MiB-aligned), `ran[]` is on the stack.

use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::{Error, Result};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "gups",
    summary: "HPCC RandomAccess: random read-modify-write updates of a large table",
    params: PARAMS,
    footprint: |p| Ok(table_bytes(p)? + LANES as u64 * 8),
    build: |p| Ok(Box::new(Gups::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "table", default: "1GiB", doc: "table size, a power of two from 64KiB to 1TiB" },
    ParamDoc { name: "updates", default: "10M", doc: "number of updates (0 = HPCC's 4 x table words)" },
    ParamDoc { name: "init", default: "false", doc: "emit the table initialisation pass first" },
];

const POLY: u64 = 7;
const PERIOD: u64 = 1_317_624_576_693_539_401;
const LANES: usize = 128;

fn table_bytes(p: &Params) -> Result<u64> {
    let t = p.size_in("table", 64 << 10, 1 << 40)?;
    if !t.is_power_of_two() {
        return Err(Error::config("workload.gups.table", format!("{t} bytes is not a power of two")));
    }
    Ok(t)
}

#[inline(always)]
fn step(r: u64) -> u64 {
    (r << 1) ^ (if (r as i64) < 0 { POLY } else { 0 })
}

/// HPCC_starts: the generator's state after `n` steps from 1.
pub fn hpcc_starts(n: u64) -> u64 {
    let n = n % PERIOD;
    if n == 0 {
        return 1;
    }
    // m2[i] = x^(2i) in the generator's field: squaring by table lookup.
    let mut m2 = [0u64; 64];
    let mut t = 1u64;
    for m in m2.iter_mut() {
        *m = t;
        t = step(step(t));
    }
    let mut i = 62i32;
    while i >= 0 && (n >> i) & 1 == 0 {
        i -= 1;
    }
    let mut ran = 2u64;
    while i > 0 {
        let mut temp = 0u64;
        for (j, m) in m2.iter().enumerate() {
            if (ran >> j) & 1 == 1 {
                temp ^= m;
            }
        }
        ran = temp;
        i -= 1;
        if (n >> i) & 1 == 1 {
            ran = step(ran);
        }
    }
    ran
}

pub struct Gups {
    words: u64,
    updates: u64,
    init: bool,
    seed: u64,
}

impl Gups {
    pub fn new(p: &Params) -> Result<Gups> {
        let words = table_bytes(p)? / 8;
        let updates = match p.count("updates")? {
            0 => 4 * words,
            u => u,
        };
        Ok(Gups { words, updates, init: p.flag("init")?, seed: p.seed() })
    }
}

impl Workload for Gups {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let table = space.mmap(self.words * 8);
        let ran_base = space.stack(LANES as u64 * 8);
        let mask = self.words - 1;
        if self.init {
            for i in 0..self.words {
                e.ins(2);
                e.store(table + 8 * i, 8);
                if i % 65536 == 0 && e.stopped() {
                    return Ok(());
                }
            }
        }
        let mut ran = [0u64; LANES];
        let per_lane = self.updates / LANES as u64;
        let offset = self.seed.wrapping_mul(1 << 40);
        for (j, r) in ran.iter_mut().enumerate() {
            *r = hpcc_starts(offset.wrapping_add(per_lane.max(1) * 4 * j as u64) % PERIOD);
        }
        let mut done = 0u64;
        while done < self.updates {
            let n = (self.updates - done).min(LANES as u64) as usize;
            for (j, r) in ran.iter_mut().enumerate().take(n) {
                let slot = ran_base + 8 * j as u64;
                e.ins(2);
                e.load(slot, 8);
                *r = step(*r);
                e.ins(4);
                e.store(slot, 8);
                let addr = table + 8 * (*r & mask);
                e.ins(2);
                e.load(addr, 8);
                e.ins(2);
                e.store(addr, 8);
            }
            done += n as u64;
            if done.is_multiple_of(LANES as u64 * 512) {
                e.progress(done, self.updates);
                if e.stopped() {
                    return Ok(());
                }
            }
        }
        e.progress(done, self.updates);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_matches_stepping() {
        let mut r = 1u64;
        for n in 0..300u64 {
            assert_eq!(hpcc_starts(n), r, "n={n}");
            r = step(r);
        }
    }
}
