//! `dict`: the PBBS dictionary benchmark — an open-addressing hash table with
//! linear probing under a mix of insertions, deletions and searches.
//!
//! ## What it models
//! PBBS's `dictionary` (one of the GTSM evaluation's kernels): a table of
//! 16-byte entries `{u64 key; u64 value;}` in one array of a power-of-two
//! number of slots (at least twice the key universe, so the load stays at or
//! under one half, as PBBS sizes its tables), key 0 marking an empty slot.
//! - search: hash, then probe slots in order until the key or an empty slot;
//! - insert: probe the same way; an empty slot takes the key and value, an
//!   equal key has its value replaced;
//! - delete: find the key, then Knuth's backward-shift deletion (Algorithm R):
//!   later entries of the cluster that may move into the hole do, and the
//!   final hole is emptied — no tombstones, as in PBBS's deterministic table.
//!
//! Keys are drawn uniformly from `1..=keys`; each operation is an insert with
//! probability `insert_fraction`, a delete with `delete_fraction`, otherwise
//! a search. Before the operations, `prefill` of the universe is inserted
//! (not emitted), so the table starts near its steady state: with a uniform
//! mix the fraction of keys present settles at
//! `insert_fraction / (insert_fraction + delete_fraction)`.
//!
//! Instruction model: 10 per operation (drawing it, loop); 8 to hash a key;
//! per probed slot 4 (load the key, compare to empty and to the key, advance
//! and mask); 2 before a value load or an entry store; a backward shift
//! re-hashes each later entry of the cluster (8) and moves it with a value
//! load and two stores.
//!
//! Dependencies: none. The operation's key comes from the generator (a
//! register), every probed slot is its hash plus a counter, and the value
//! and entry accesses use the slot the probe stopped at; the key compares and
//! the backward shift's home-slot test only decide *where to stop* (control
//! dependencies, predicted; see [`super::emit`]), so no address is computed
//! from a loaded value.
//!
//! ## Choices
//! - The hash is splitmix64's finaliser masked to the table size (PBBS uses a
//!   similar multiplicative integer hash).
//! - The table is the only data structure: the operation stream is generated
//!   on the fly rather than read from a PBBS input file (reading a sequential
//!   input array adds little TLB pressure).
//! - The table is one `malloc` of `16 × slots` bytes, hence an mmap.

use rand::Rng;

use super::kit::{huge_vec, mix64, Emit, Quiet};
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::{Error, Result};
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "dict",
    summary: "PBBS dictionary: linear-probing hash table under an insert/delete/search mix",
    params: PARAMS,
    footprint: |p| Ok(slots_for(p.count_in("keys", 1, MAX_KEYS)?) * 16),
    build: |p| Ok(Box::new(Dict::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "keys", default: "4M", doc: "key universe 1..=keys; the table has the next power of two >= 2 x keys slots of 16 bytes" },
    ParamDoc { name: "ops", default: "10M", doc: "operations after the prefill" },
    ParamDoc { name: "insert_fraction", default: "0.3", doc: "fraction of operations that insert" },
    ParamDoc { name: "delete_fraction", default: "0.2", doc: "fraction of operations that delete (the rest search)" },
    ParamDoc { name: "prefill", default: "0.6", doc: "fraction of the key universe inserted before the operations (not emitted)" },
];

const MAX_KEYS: u64 = 1 << 36;
const EMPTY: u64 = 0;
const INS_OP: u32 = 10;
const INS_HASH: u32 = 8;
const INS_PROBE: u32 = 4;
const INS_ENTRY: u32 = 2;

fn slots_for(keys: u64) -> u64 {
    (2 * keys).next_power_of_two()
}

/// The linear-probing table: host keys and values, and its simulated base.
pub struct Table {
    base: u64,
    mask: u64,
    keys: Vec<u64>,
    vals: Vec<u64>,
    len: u64,
}

impl Table {
    pub fn new(slots: u64, space: &mut AddressSpace) -> Table {
        assert!(slots.is_power_of_two());
        Table {
            base: space.malloc(slots * 16),
            mask: slots - 1,
            keys: huge_vec(slots as usize, EMPTY),
            vals: huge_vec(slots as usize, 0),
            len: 0,
        }
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline(always)]
    fn home(&self, k: u64) -> u64 {
        mix64(k) & self.mask
    }

    #[inline(always)]
    fn probe(&self, i: u64, e: &mut impl Emit) -> u64 {
        e.ins(INS_PROBE);
        e.load(self.base + 16 * i, 8);
        self.keys[i as usize]
    }

    /// Slot holding `k`, or the empty slot ending its probe sequence.
    #[inline]
    fn locate(&self, k: u64, e: &mut impl Emit) -> (u64, bool) {
        e.ins(INS_HASH);
        let mut i = self.home(k);
        loop {
            let cur = self.probe(i, e);
            if cur == k {
                return (i, true);
            }
            if cur == EMPTY {
                return (i, false);
            }
            i = (i + 1) & self.mask;
        }
    }

    /// Insert or replace; true if `k` was new. `k` must not be 0.
    pub fn insert(&mut self, k: u64, v: u64, e: &mut impl Emit) -> bool {
        debug_assert_ne!(k, EMPTY);
        let (i, present) = self.locate(k, e);
        e.ins(INS_ENTRY);
        if !present {
            e.store(self.base + 16 * i, 8);
            self.keys[i as usize] = k;
            self.len += 1;
        }
        e.store(self.base + 16 * i + 8, 8);
        self.vals[i as usize] = v;
        !present
    }

    pub fn find(&self, k: u64, e: &mut impl Emit) -> Option<u64> {
        let (i, present) = self.locate(k, e);
        if present {
            e.ins(INS_ENTRY);
            e.load(self.base + 16 * i + 8, 8);
            Some(self.vals[i as usize])
        } else {
            None
        }
    }

    /// Remove `k`, returning its value.
    pub fn remove(&mut self, k: u64, e: &mut impl Emit) -> Option<u64> {
        let (i, present) = self.locate(k, e);
        if !present {
            return None;
        }
        e.ins(INS_ENTRY);
        e.load(self.base + 16 * i + 8, 8);
        let old = self.vals[i as usize];
        let mut hole = i;
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let kj = self.probe(j, e);
            if kj == EMPTY {
                break;
            }
            e.ins(INS_HASH);
            let h = self.home(kj);
            // kj may stay unless its home lies cyclically outside (hole, j].
            let stays = if hole <= j { h > hole && h <= j } else { h > hole || h <= j };
            if !stays {
                e.ins(INS_ENTRY);
                e.load(self.base + 16 * j + 8, 8);
                e.store(self.base + 16 * hole, 8);
                e.store(self.base + 16 * hole + 8, 8);
                self.keys[hole as usize] = kj;
                self.vals[hole as usize] = self.vals[j as usize];
                hole = j;
            }
        }
        e.ins(INS_ENTRY);
        e.store(self.base + 16 * hole, 8);
        self.keys[hole as usize] = EMPTY;
        self.len -= 1;
        Some(old)
    }

    /// Every present key is reachable from its home slot without crossing an
    /// empty slot (the linear-probing invariant).
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut n = 0;
        for (i, &k) in self.keys.iter().enumerate() {
            if k == EMPTY {
                continue;
            }
            n += 1;
            let mut s = self.home(k);
            while s != i as u64 {
                if self.keys[s as usize] == EMPTY {
                    return Err(format!("key {k} at slot {i} is cut off from its home"));
                }
                s = (s + 1) & self.mask;
            }
        }
        if n != self.len {
            return Err(format!("{n} keys present, len says {}", self.len));
        }
        Ok(())
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Op {
    Insert(u64, u64),
    Delete(u64),
    Search(u64),
}

/// The operation stream.
pub struct OpGen {
    rng: crate::rng::SimRng,
    keys: u64,
    ins: f64,
    del: f64,
    n: u64,
}

impl OpGen {
    pub fn new(seed: u64, keys: u64, ins: f64, del: f64) -> OpGen {
        OpGen { rng: component_rng(seed, "workload.dict.ops"), keys, ins, del, n: 0 }
    }

    #[inline]
    pub fn next_op(&mut self) -> Op {
        let r: f64 = self.rng.gen();
        let k = 1 + self.rng.gen_range(0..self.keys);
        self.n += 1;
        if r < self.ins {
            Op::Insert(k, self.n)
        } else if r < self.ins + self.del {
            Op::Delete(k)
        } else {
            Op::Search(k)
        }
    }
}

pub struct Dict {
    keys: u64,
    ops: u64,
    ins: f64,
    del: f64,
    prefill: f64,
    seed: u64,
    /// Searches and deletes that found their key (set by `run`).
    pub hits: u64,
}

impl Dict {
    pub fn new(p: &Params) -> Result<Dict> {
        let ins = p.real_in("insert_fraction", 0.0, 1.0)?;
        let del = p.real_in("delete_fraction", 0.0, 1.0)?;
        if ins + del > 1.0 {
            return Err(Error::config(p.key_path("delete_fraction"), "insert_fraction + delete_fraction exceeds 1"));
        }
        Ok(Dict {
            keys: p.count_in("keys", 1, MAX_KEYS)?,
            ops: p.count("ops")?,
            ins,
            del,
            prefill: p.real_in("prefill", 0.0, 1.0)?,
            seed: p.seed(),
            hits: 0,
        })
    }
}

impl Workload for Dict {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let mut t = Table::new(slots_for(self.keys), &mut space);
        let mut rng = component_rng(self.seed, "workload.dict.prefill");
        {
            let mut quiet = Quiet;
            for k in 1..=self.keys {
                if rng.gen::<f64>() < self.prefill {
                    t.insert(k, 0, &mut quiet);
                }
            }
        }
        let mut gen = OpGen::new(self.seed, self.keys, self.ins, self.del);
        let mut hits = 0u64;
        for i in 0..self.ops {
            e.ins(INS_OP);
            hits += match gen.next_op() {
                Op::Insert(k, v) => {
                    t.insert(k, v, e);
                    0
                }
                Op::Delete(k) => t.remove(k, e).is_some() as u64,
                Op::Search(k) => t.find(k, e).is_some() as u64,
            };
            if i % 8192 == 0 {
                e.progress(i, self.ops);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(self.ops, self.ops);
        self.hits = hits;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;
    use crate::workload::tests::{distinct_pages, emitted};
    use std::collections::HashMap;

    #[test]
    fn table_agrees_with_std_hashmap() {
        for (keys, ins, del) in [(1000u64, 0.4, 0.4), (3000, 0.3, 0.2), (50, 0.5, 0.5)] {
            let mut space = AddressSpace::new();
            let mut t = Table::new(slots_for(keys), &mut space);
            let mut m: HashMap<u64, u64> = HashMap::new();
            let mut gen = OpGen::new(11, keys, ins, del);
            let mut null = NullSink;
            let mut e = Emitter::new(&mut null);
            for _ in 0..100_000 {
                match gen.next_op() {
                    Op::Insert(k, v) => assert_eq!(t.insert(k, v, &mut e), m.insert(k, v).is_none()),
                    Op::Delete(k) => assert_eq!(t.remove(k, &mut e), m.remove(&k)),
                    Op::Search(k) => assert_eq!(t.find(k, &mut e), m.get(&k).copied()),
                }
            }
            assert_eq!(t.len(), m.len() as u64);
            t.check().unwrap();
            for k in 1..=keys {
                assert_eq!(t.find(k, &mut e), m.get(&k).copied());
            }
        }
    }

    #[test]
    fn a_crowded_table_keeps_its_probe_invariant() {
        // 90 % full: long clusters that wrap around the end of the array.
        let mut space = AddressSpace::new();
        let mut t = Table::new(256, &mut space);
        let mut m: HashMap<u64, u64> = HashMap::new();
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        let mut rng = component_rng(2, "t");
        for _ in 0..20_000 {
            let k = 1 + rng.gen_range(0..240);
            if m.len() < 230 && rng.gen::<bool>() {
                assert_eq!(t.insert(k, k, &mut e), m.insert(k, k).is_none());
            } else {
                assert_eq!(t.remove(k, &mut e), m.remove(&k));
            }
        }
        t.check().unwrap();
    }

    #[test]
    fn operations_spread_over_the_table() {
        let recs = emitted("dict", &[("keys", "65536"), ("ops", "100000")], 5);
        // 131072 slots of 16 bytes: 512 pages, all touched.
        assert_eq!(distinct_pages(&recs), 512);
        let stores = recs.iter().filter(|r| r.2 == crate::access::AccessKind::Store).count();
        assert!(stores > 30_000, "{stores}");
    }
}
