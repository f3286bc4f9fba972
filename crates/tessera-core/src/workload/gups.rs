//! `gups`: the HPCC RandomAccess update loop.
//!
//! ## What it models
//! HPCC's reference serial kernel: a table of `2^k` 64-bit words and 128
//! independent random streams `ran[0..128]` kept in a stack array. Each update
//! advances one stream with HPCC's shift register
//! (`ran = (ran << 1) ^ (ran < 0 ? POLY : 0)`, `POLY = 7`) and does
//! `table[ran & (size-1)] ^= ran`. Stream `j` starts at
//! `HPCC_starts(updates / 128 * j)`, as in HPCC: each stream begins where the
//! previous one's share of the updates ends.
//!
//! Emitted per update (10 instructions, 4 accesses): load `ran[j]` (stack),
//! store `ran[j]`, load `table[i]`, store `table[i]`; instructions 2/4/2/2 in
//! front of them (index arithmetic, shift/compare/xor, mask, xor + loop).
//! Table initialisation (`table[i] = i`) is not emitted by default (HPCC does
//! not time it); `init=true` emits it first.
//! Dependencies: none are emitted. The table index is HPCC's register RNG
//! step; strictly it is computed from the `ran[j]` stack load, but that load
//! hits the L1 (the 1 KiB stack array is rewritten every 128 updates), so a
//! dependency would add an L1 latency per update without serialising the
//! table misses; left out (a choice to revisit, not a measurement).
//!
//! ## Choices
//! - The table's values never influence which addresses are touched, so the
//!   table is not allocated on the host: a 64 GiB table costs no host memory.
//! - `updates=0` means HPCC's own count, 4 × table words.
//! - The seed offsets every stream's start by `seed × 2^40` steps of the
//!   generator's period. With seed 0 and `updates=0` (HPCC's count) the
//!   updates are HPCC's exact sequence; with another count the streams are
//!   spaced as HPCC would space them for that count.
//! - Fewer than 128 updates would start every stream at the same value (HPCC
//!   never runs so few); the spacing is then one step.
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
            *r = hpcc_starts(offset.wrapping_add(per_lane.max(1) * j as u64) % PERIOD);
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

    /// HPCC's generator written out again, apart from `step`, so the test
    /// does not check the workload against itself.
    fn hpcc_next(r: u64) -> u64 {
        let carry = if r & (1 << 63) != 0 { 7 } else { 0 };
        r.wrapping_shl(1) ^ carry
    }

    #[test]
    fn seed_0_with_hpccs_count_is_hpccs_sequence() {
        // 64 KiB table: 8192 words, HPCC's 4 x 8192 updates, 256 per stream.
        let (words, per_lane) = (8192u64, 256u64);
        let recs = crate::workload::tests::emitted("gups", &[("table", "64KiB"), ("updates", "0")], 0);
        assert_eq!(recs.len() as u64, 4 * 4 * words);
        // Each update is: load ran[j], store ran[j], load table[i], store table[i].
        let table_load = |round: u64, lane: u64| recs[(4 * (128 * round + lane) + 2) as usize].1;
        let mut starts = Vec::new();
        let mut r = 1u64;
        for n in 0..=per_lane * 127 {
            if n % per_lane == 0 {
                starts.push(r);
            }
            r = hpcc_next(r);
        }
        // Lane 0 starts at HPCC_starts(0) = 1, so its first value is 2.
        assert_eq!(hpcc_next(starts[0]), 2);
        let base = table_load(0, 0) - 8 * 2;
        for (lane, &start) in starts.iter().enumerate() {
            let first = hpcc_next(start);
            let second = hpcc_next(first);
            assert_eq!(table_load(0, lane as u64), base + 8 * (first & (words - 1)), "lane {lane}, first");
            assert_eq!(table_load(1, lane as u64), base + 8 * (second & (words - 1)), "lane {lane}, second");
        }
    }
}
