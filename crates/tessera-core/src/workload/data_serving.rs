//! `data-serving`: an LSM-tree key-value store under YCSB workload A
//! (CloudSuite data serving analog).
//!
//! ## What it models
//! The storage engine of Cassandra, the CloudSuite data-serving server, on
//! YCSB's update-heavy workload A (50 % reads, 50 % updates, scrambled
//! Zipfian keys, θ = 0.99):
//! - **commit log**: every update is appended (key, version, value) to a
//!   32 MiB mmapped segment, written sequentially and recycled;
//! - **memtable**: a skip list (Cassandra's `ConcurrentSkipListMap`; p = 1/4,
//!   at most 12 levels) of malloc'd nodes `{key, version, height,
//!   next[height], value}`; an update of a key already in the memtable
//!   overwrites it in place, otherwise a node is inserted;
//! - **flush**: when the memtable's nodes reach `memtable` bytes they are
//!   written, in key order, to a new SSTable and freed (their chunks are reused
//!   by the next memtable);
//! - **SSTables**: a data file of fixed-size entries `{key, version, value}`
//!   (mmapped, as Cassandra's mmap disk access reads it), a sparse index of
//!   every 16th key (`{key, offset}`), and a Bloom filter (10 bits per key,
//!   7 probes), both malloc'd;
//! - **size-tiered compaction** (Cassandra's default): after a flush, tables
//!   whose sizes are within 0.5–1.5× of a bucket's mean share the bucket; a
//!   bucket of 4 or more (the smallest such) is merged, up to 32 tables, into
//!   one, keeping the newest version of each key; repeated until no bucket
//!   qualifies. Merging reads every input entry and writes the survivors.
//! - **reads**: the memtable first; then SSTables in decreasing order of their
//!   newest version (Cassandra's time-ordered read), each checked with its
//!   Bloom filter, then the sparse index (binary search) and the data block
//!   (scan of at most 16 entries); the read stops once the version found is
//!   newer than every remaining table could hold.
//!
//! The load phase inserts `records` records (keys `fnv64(i)`, YCSB's hashed
//! insert order) through the same update path, not emitted unless
//! `emit_load=true`; the operations then run. Flushes and compactions during
//! the operations are emitted (they are part of what the server does).
//!
//! Instruction model: 300 per operation (request handling, YCSB-side work not
//! modelled beyond this); 2 per 64 bytes copied; skip list: 2 per next
//! pointer loaded and 3 per key compared, 2 per link written; reads: 20 to
//! hash the key for the Bloom filter and 4 per probe, 5 per index probe, 4 per
//! data entry scanned; flush and compaction: 3 per memtable node or 12 per
//! merged entry, plus the writes of the output.
//!
//! Dependencies: in the skip list each `next` pointer load depends on the
//! load that gave its node (the previous `next`; the head's address is a
//! register), and a node's key load on the `next` load that named it; an
//! update in place, a read's value and a flush's walk of level 0 depend on the
//! load that gave their node, and an insertion's link stores into each
//! predecessor on the load that gave that predecessor. In an SSTable read the
//! data-block entries (keys, version, value) depend on the sparse index's
//! offset load. Bloom probes (hashed), the index's binary search (compares
//! only: control), the commit log, SSTable writes and merge reads (counters)
//! have none.
//!
//! ## Choices
//! - Values are a single `value_size`-byte field (YCSB's default record has
//!   ten 100-byte fields; `value_size=1000` gives its size). Versions stand in
//!   for timestamps and identify a value's contents on the host.
//! - Cassandra's `min_sstable_size` (which lumps small tables into one bucket),
//!   key cache, row cache, partition summary sampling and tombstones are not
//!   modelled; there are no deletes.
//! - Writing a data file is modelled as stores to its mmapped region (the
//!   write path's buffering and the kernel's copies are not modelled).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rand::{Rng, RngCore};

use super::emit::Dep;
use super::kit::{copy_range_on, fnv64, load_range_on, mix64, store_range, store_range_on, Emit, Quiet};
use super::zipf::ScrambledZipf;
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::{component_rng, SimRng};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "data-serving",
    summary: "LSM key-value store (skip-list memtable, SSTables, Bloom filters, size-tiered compaction), YCSB A",
    params: PARAMS,
    footprint: |p| Config::from(p).map(|c| c.estimate_bytes()),
    build: |p| Ok(Box::new(DataServing::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "records", default: "1M", doc: "records loaded before the operations (YCSB recordcount)" },
    ParamDoc { name: "ops", default: "500k", doc: "operations (YCSB operationcount)" },
    ParamDoc { name: "read_fraction", default: "0.5", doc: "fraction of reads (the rest update); YCSB A is 0.5" },
    ParamDoc { name: "theta", default: "0.99", doc: "Zipfian skew of the requested keys, 0 to 0.9999" },
    ParamDoc { name: "value_size", default: "100", doc: "bytes per value, 8 to 64KiB" },
    ParamDoc { name: "memtable", default: "4MiB", doc: "memtable size that triggers a flush, 64KiB to 64GiB" },
    ParamDoc { name: "emit_load", default: "false", doc: "emit the load phase before the operations" },
];

const MAX_H: usize = 12;
const NIL: u32 = u32::MAX;
const LOG_BYTES: u64 = 32 << 20;
const INDEX_INTERVAL: usize = 16;
const BLOOM_BITS: u64 = 10;
const BLOOM_K: u64 = 7;
const MIN_THRESHOLD: usize = 4;
const MAX_THRESHOLD: usize = 32;

const INS_OP: u32 = 300;
const INS_COPY: u32 = 2;

#[derive(Clone, Debug)]
struct Config {
    records: u64,
    ops: u64,
    read_fraction: f64,
    theta: f64,
    vs: u64,
    memtable: u64,
    emit_load: bool,
}

impl Config {
    fn from(p: &Params) -> Result<Config> {
        Ok(Config {
            records: p.count_in("records", 1, 1 << 40)?,
            ops: p.count("ops")?,
            read_fraction: p.real_in("read_fraction", 0.0, 1.0)?,
            theta: p.real_in("theta", 0.0, 0.9999)?,
            vs: p.size_in("value_size", 8, 64 << 10)?,
            memtable: p.size_in("memtable", 64 << 10, 64 << 30)?,
            emit_load: p.flag("emit_load")?,
        })
    }

    fn entry(&self) -> u64 {
        entry_bytes(self.vs)
    }

    /// The live store — an SSTable entry per record, doubled for the tables
    /// compaction writes and unmaps over the run — plus index and filters,
    /// the memtable and the commit log written by the updates.
    fn estimate_bytes(&self) -> u64 {
        let data = 2 * self.records * self.entry();
        let side = self.records * (16 / INDEX_INTERVAL as u64 + BLOOM_BITS / 8 + 1);
        let updates = (self.ops as f64 * (1.0 - self.read_fraction)) as u64;
        let log = LOG_BYTES.min(updates * (16 + self.vs));
        data + side + self.memtable + log
    }
}

fn entry_bytes(vs: u64) -> u64 {
    16 + vs.div_ceil(8) * 8
}

fn node_bytes(h: usize, vs: u64) -> u64 {
    24 + 8 * h as u64 + vs
}

/// The skip-list memtable. Node 0 is the head.
struct Memtable {
    keys: Vec<u64>,
    vers: Vec<u64>,
    height: Vec<u8>,
    next: Vec<u32>,
    addr: Vec<u64>,
    cur_h: usize,
    bytes: u64,
    /// `&list->max_height`.
    a_list: u64,
}

impl Memtable {
    fn new(space: &mut AddressSpace) -> Memtable {
        let head = space.malloc(node_bytes(MAX_H, 0));
        Memtable {
            keys: vec![0],
            vers: vec![0],
            height: vec![MAX_H as u8],
            next: vec![NIL; MAX_H],
            addr: vec![head],
            cur_h: 1,
            bytes: 0,
            a_list: space.malloc(16),
        }
    }

    fn len(&self) -> usize {
        self.addr.len() - 1
    }

    #[inline(always)]
    fn next_addr(&self, n: u32, l: usize) -> u64 {
        self.addr[n as usize] + 24 + 8 * l as u64
    }

    #[inline(always)]
    fn value_addr(&self, n: u32) -> u64 {
        self.addr[n as usize] + 24 + 8 * self.height[n as usize] as u64
    }

    /// The first node with key `>= key`, filling `prev` with each level's
    /// last node before it; each node comes with the load that gave its
    /// address (the head's is [`Dep::NONE`]).
    fn seek(&self, key: u64, prev: &mut [(u32, Dep); MAX_H], e: &mut impl Emit) -> (u32, Dep) {
        e.ins(2);
        e.load(self.a_list, 4);
        let (mut x, mut dx) = (0u32, Dep::NONE);
        let mut cand = (NIL, Dep::NONE);
        for l in (0..self.cur_h).rev() {
            loop {
                e.ins(2);
                let dnx = e.load_on(self.next_addr(x, l), 8, dx);
                let nx = self.next[x as usize * MAX_H + l];
                if nx == NIL {
                    cand = (NIL, Dep::NONE);
                    break;
                }
                e.ins(3);
                e.load_on(self.addr[nx as usize], 8, dnx);
                if self.keys[nx as usize] < key {
                    (x, dx) = (nx, dnx);
                } else {
                    cand = (nx, dnx);
                    break;
                }
            }
            prev[l] = (x, dx);
        }
        cand
    }

    fn find(&self, key: u64, e: &mut impl Emit) -> Option<(u32, Dep)> {
        let mut prev = [(0u32, Dep::NONE); MAX_H];
        let (n, dn) = self.seek(key, &mut prev, e);
        (n != NIL && self.keys[n as usize] == key).then_some((n, dn))
    }

    fn upsert(&mut self, key: u64, ver: u64, vs: u64, rng: &mut SimRng, space: &mut AddressSpace, e: &mut impl Emit) {
        let mut prev = [(0u32, Dep::NONE); MAX_H];
        let (n, dn) = self.seek(key, &mut prev, e);
        if n != NIL && self.keys[n as usize] == key {
            e.ins(2);
            e.store_on(self.addr[n as usize] + 8, 8, dn);
            store_range_on(e, self.value_addr(n), vs, INS_COPY, dn);
            self.vers[n as usize] = ver;
            return;
        }
        let mut h = 1;
        while h < MAX_H && rng.next_u32() < u32::MAX / 4 {
            h += 1;
        }
        if h > self.cur_h {
            for p in prev.iter_mut().take(h).skip(self.cur_h) {
                *p = (0, Dep::NONE);
            }
            e.ins(2);
            e.store(self.a_list, 4);
            self.cur_h = h;
        }
        let bytes = node_bytes(h, vs);
        e.ins(60);
        let a = space.malloc(bytes);
        let id = self.addr.len() as u32;
        self.keys.push(key);
        self.vers.push(ver);
        self.height.push(h as u8);
        self.next.extend_from_slice(&[NIL; MAX_H]);
        self.addr.push(a);
        self.bytes += (bytes + 16).div_ceil(16) * 16;
        e.ins(4);
        e.store(a, 8);
        e.store(a + 8, 8);
        e.store(a + 16, 4);
        store_range(e, self.value_addr(id), vs, INS_COPY);
        for (l, &(p, dp)) in prev.iter().enumerate().take(h) {
            e.ins(2);
            e.load_on(self.next_addr(p, l), 8, dp);
            e.store(self.next_addr(id, l), 8);
            e.store_on(self.next_addr(p, l), 8, dp);
            self.next[id as usize * MAX_H + l] = self.next[p as usize * MAX_H + l];
            self.next[p as usize * MAX_H + l] = id;
        }
    }

    /// Drop every node (freeing its memory) and reset the head.
    fn clear(&mut self, space: &mut AddressSpace) {
        for &a in &self.addr[1..] {
            space.free(a);
        }
        self.keys.truncate(1);
        self.vers.truncate(1);
        self.height.truncate(1);
        self.next.truncate(MAX_H);
        self.next.fill(NIL);
        self.addr.truncate(1);
        self.cur_h = 1;
        self.bytes = 0;
    }
}

/// One SSTable: host keys and versions, Bloom filter bits, addresses.
struct SsTable {
    keys: Vec<u64>,
    vers: Vec<u64>,
    max_ver: u64,
    bloom: Vec<u64>,
    bits: u64,
    a_data: u64,
    a_index: u64,
    a_bloom: u64,
}

#[inline(always)]
fn bloom_bits(key: u64, bits: u64) -> impl Iterator<Item = u64> {
    let h = mix64(key ^ 0x626c_6f6f_6d00);
    let (h1, h2) = (h & 0xffff_ffff, (h >> 32) | 1);
    (0..BLOOM_K).map(move |i| (h1 + i * h2) % bits)
}

/// Writes one SSTable, entry by entry, in key order.
struct Writer {
    t: SsTable,
    es: u64,
}

impl Writer {
    /// A table for at most `max_n` entries.
    fn new(max_n: u64, es: u64, space: &mut AddressSpace) -> Writer {
        let bits = (max_n * BLOOM_BITS).max(64);
        let words = bits.div_ceil(64);
        let a_data = space.mmap(max_n.max(1) * es);
        let a_index = space.malloc(16 * (max_n as usize).div_ceil(INDEX_INTERVAL).max(1) as u64);
        let a_bloom = space.malloc(8 * words);
        Writer {
            t: SsTable {
                keys: Vec::with_capacity(max_n as usize),
                vers: Vec::with_capacity(max_n as usize),
                max_ver: 0,
                bloom: vec![0; words as usize],
                bits,
                a_data,
                a_index,
                a_bloom,
            },
            es,
        }
    }

    /// `src_on`: the load that gave `value_src`'s address.
    fn add(&mut self, key: u64, ver: u64, value_src: u64, src_on: Dep, vs: u64, e: &mut impl Emit) {
        let i = self.t.keys.len() as u64;
        let a = self.t.a_data + i * self.es;
        e.ins(4);
        e.store(a, 8);
        e.store(a + 8, 8);
        copy_range_on(e, value_src, a + 16, vs, INS_COPY, src_on, Dep::NONE);
        if (i as usize).is_multiple_of(INDEX_INTERVAL) {
            e.ins(4);
            e.store(self.t.a_index + 16 * (i / INDEX_INTERVAL as u64), 16);
        }
        e.ins(20);
        for b in bloom_bits(key, self.t.bits) {
            e.ins(4);
            e.load(self.t.a_bloom + 8 * (b / 64), 8);
            e.store(self.t.a_bloom + 8 * (b / 64), 8);
            self.t.bloom[(b / 64) as usize] |= 1 << (b % 64);
        }
        self.t.keys.push(key);
        self.t.vers.push(ver);
        self.t.max_ver = self.t.max_ver.max(ver);
    }
}

impl SsTable {
    fn len(&self) -> usize {
        self.keys.len()
    }

    fn entry_addr(&self, i: usize, es: u64) -> u64 {
        self.a_data + i as u64 * es
    }

    /// The version of `key` in this table, if present.
    fn get(&self, key: u64, es: u64, vs: u64, e: &mut impl Emit) -> Option<u64> {
        e.ins(20);
        for b in bloom_bits(key, self.bits) {
            e.ins(4);
            e.load(self.a_bloom + 8 * (b / 64), 8);
            if self.bloom[(b / 64) as usize] & (1 << (b % 64)) == 0 {
                return None;
            }
        }
        let n_idx = self.len().div_ceil(INDEX_INTERVAL);
        let (mut lo, mut hi) = (0, n_idx);
        while lo < hi {
            let mid = (lo + hi) / 2;
            e.ins(5);
            e.load(self.a_index + 16 * mid as u64, 8);
            if self.keys[mid * INDEX_INTERVAL] <= key {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        if lo == 0 {
            return None;
        }
        let start = (lo - 1) * INDEX_INTERVAL;
        e.ins(2);
        let doff = e.load_on(self.a_index + 16 * (lo as u64 - 1) + 8, 8, Dep::NONE);
        for i in start..(start + INDEX_INTERVAL).min(self.len()) {
            let a = self.entry_addr(i, es);
            e.ins(4);
            e.load_on(a, 8, doff);
            if self.keys[i] == key {
                e.ins(2);
                e.load_on(a + 8, 8, doff);
                load_range_on(e, a + 16, vs, INS_COPY, doff);
                return Some(self.vers[i]);
            }
            if self.keys[i] > key {
                return None;
            }
        }
        None
    }
}

/// The storage engine.
pub struct Lsm {
    vs: u64,
    es: u64,
    memtable_limit: u64,
    mem: Memtable,
    /// Newest (by max version) first.
    tables: Vec<SsTable>,
    a_log: u64,
    log_pos: u64,
    rng: SimRng,
    pub flushes: u64,
    pub compactions: u64,
}

impl Lsm {
    pub fn new(vs: u64, memtable_limit: u64, seed: u64, space: &mut AddressSpace) -> Lsm {
        Lsm {
            vs,
            es: entry_bytes(vs),
            memtable_limit,
            mem: Memtable::new(space),
            tables: Vec::new(),
            a_log: space.mmap(LOG_BYTES),
            log_pos: 0,
            rng: component_rng(seed, "workload.data-serving.skiplist"),
            flushes: 0,
            compactions: 0,
        }
    }

    /// Write version `ver` of `key`.
    pub fn update(&mut self, key: u64, ver: u64, space: &mut AddressSpace, e: &mut impl Emit) {
        let rec = 16 + self.vs;
        if self.log_pos + rec > LOG_BYTES {
            self.log_pos = 0;
        }
        store_range(e, self.a_log + self.log_pos, rec, INS_COPY);
        self.log_pos += rec;
        self.mem.upsert(key, ver, self.vs, &mut self.rng, space, e);
        if self.mem.bytes >= self.memtable_limit {
            self.flush(space, e);
            self.compact(space, e);
        }
    }

    /// The newest version of `key`.
    pub fn read(&self, key: u64, e: &mut impl Emit) -> Option<u64> {
        if let Some((n, dn)) = self.mem.find(key, e) {
            e.ins(2);
            e.load_on(self.mem.addr[n as usize] + 8, 8, dn);
            load_range_on(e, self.mem.value_addr(n), self.vs, INS_COPY, dn);
            return Some(self.mem.vers[n as usize]);
        }
        let mut best: Option<u64> = None;
        for t in &self.tables {
            if best.is_some_and(|b| t.max_ver <= b) {
                break;
            }
            if let Some(v) = t.get(key, self.es, self.vs, e) {
                best = Some(best.map_or(v, |b| b.max(v)));
            }
        }
        best
    }

    fn add_table(&mut self, t: SsTable) {
        self.tables.push(t);
        self.tables.sort_by_key(|t| Reverse(t.max_ver));
    }

    fn flush(&mut self, space: &mut AddressSpace, e: &mut impl Emit) {
        let mut w = Writer::new(self.mem.len() as u64, self.es, space);
        // head->next[0] is not loaded: the walk starts from the value held.
        let (mut n, mut dn) = (self.mem.next[0], Dep::NONE);
        while n != NIL {
            e.ins(3);
            e.load_on(self.mem.addr[n as usize], 8, dn);
            e.load_on(self.mem.addr[n as usize] + 8, 8, dn);
            w.add(self.mem.keys[n as usize], self.mem.vers[n as usize], self.mem.value_addr(n), dn, self.vs, e);
            dn = e.load_on(self.mem.next_addr(n, 0), 8, dn);
            n = self.mem.next[n as usize * MAX_H];
        }
        self.add_table(w.t);
        self.mem.clear(space);
        self.flushes += 1;
    }

    fn data_bytes(&self, i: usize) -> u64 {
        self.tables[i].len() as u64 * self.es
    }

    /// Size-tiered compaction until no bucket has `MIN_THRESHOLD` tables.
    fn compact(&mut self, space: &mut AddressSpace, e: &mut impl Emit) {
        loop {
            let mut order: Vec<usize> = (0..self.tables.len()).collect();
            order.sort_by_key(|&i| self.data_bytes(i));
            let mut buckets: Vec<(f64, Vec<usize>)> = Vec::new();
            for i in order {
                let size = self.data_bytes(i) as f64;
                match buckets.iter_mut().find(|(avg, _)| size >= 0.5 * avg && size <= 1.5 * avg) {
                    Some((avg, members)) => {
                        *avg = (*avg * members.len() as f64 + size) / (members.len() + 1) as f64;
                        members.push(i);
                    }
                    None => buckets.push((size, vec![i])),
                }
            }
            let Some((_, members)) = buckets.into_iter().find(|(_, m)| m.len() >= MIN_THRESHOLD) else {
                return;
            };
            let mut pick: Vec<usize> = members.into_iter().take(MAX_THRESHOLD).collect();
            pick.sort_unstable();
            let inputs: Vec<SsTable> = pick.iter().rev().map(|&i| self.tables.remove(i)).collect();
            let merged = self.merge(&inputs, space, e);
            self.add_table(merged);
            self.compactions += 1;
        }
    }

    /// k-way merge of `inputs`, keeping each key's newest version.
    fn merge(&self, inputs: &[SsTable], space: &mut AddressSpace, e: &mut impl Emit) -> SsTable {
        let max_n: u64 = inputs.iter().map(|t| t.len() as u64).sum();
        let mut w = Writer::new(max_n, self.es, space);
        let mut heap: BinaryHeap<Reverse<(u64, usize)>> = BinaryHeap::with_capacity(inputs.len());
        let mut pos = vec![0usize; inputs.len()];
        for (t, input) in inputs.iter().enumerate() {
            if !input.keys.is_empty() {
                heap.push(Reverse((input.keys[0], t)));
            }
        }
        while let Some(Reverse((key, _))) = heap.peek().copied() {
            // Pop every input positioned at `key`; keep the newest.
            let mut best: Option<(u64, u64)> = None;
            while let Some(&Reverse((k, t))) = heap.peek() {
                if k != key {
                    break;
                }
                heap.pop();
                let input = &inputs[t];
                let i = pos[t];
                let a = input.entry_addr(i, self.es);
                e.ins(12);
                e.load(a, 8);
                e.load(a + 8, 8);
                if best.is_none_or(|(v, _)| input.vers[i] > v) {
                    best = Some((input.vers[i], a + 16));
                }
                pos[t] += 1;
                if pos[t] < input.len() {
                    heap.push(Reverse((input.keys[pos[t]], t)));
                }
            }
            let (ver, src) = best.expect("at least one input holds the key");
            w.add(key, ver, src, Dep::NONE, self.vs, e);
        }
        for t in inputs {
            space.free(t.a_index);
            space.free(t.a_bloom);
        }
        w.t
    }

    /// Tables sorted with unique keys; Bloom filters without false negatives.
    pub fn check(&self) -> std::result::Result<(), String> {
        for (n, t) in self.tables.iter().enumerate() {
            if !t.keys.windows(2).all(|w| w[0] < w[1]) {
                return Err(format!("table {n} keys not strictly increasing"));
            }
            for &k in &t.keys {
                if bloom_bits(k, t.bits).any(|b| t.bloom[(b / 64) as usize] & (1 << (b % 64)) == 0) {
                    return Err(format!("table {n}: Bloom filter misses key {k}"));
                }
            }
            if t.vers.iter().copied().max() != Some(t.max_ver) {
                return Err(format!("table {n}: wrong max version"));
            }
        }
        Ok(())
    }
}

pub struct DataServing {
    cfg: Config,
    seed: u64,
    /// Reads that found their record (set by `run`; all should).
    pub found: u64,
    pub reads: u64,
    pub flushes: u64,
    pub compactions: u64,
}

impl DataServing {
    pub fn new(p: &Params) -> Result<DataServing> {
        Ok(DataServing { cfg: Config::from(p)?, seed: p.seed(), found: 0, reads: 0, flushes: 0, compactions: 0 })
    }
}

impl Workload for DataServing {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let mut lsm = Lsm::new(self.cfg.vs, self.cfg.memtable, self.seed, &mut space);
        let mut ver = 0u64;
        let total = self.cfg.ops + if self.cfg.emit_load { self.cfg.records } else { 0 };
        {
            let mut quiet = Quiet;
            for i in 0..self.cfg.records {
                ver += 1;
                if self.cfg.emit_load {
                    e.ins(INS_OP);
                    lsm.update(fnv64(i), ver, &mut space, e);
                    if i % 4096 == 0 {
                        e.progress(i, total);
                        if e.stopped() {
                            return Ok(());
                        }
                    }
                } else {
                    lsm.update(fnv64(i), ver, &mut space, &mut quiet);
                }
            }
        }
        let done0 = total - self.cfg.ops;
        let zipf = ScrambledZipf::new(self.cfg.records, self.cfg.theta)?;
        let mut rng = component_rng(self.seed, "workload.data-serving.ops");
        let (mut reads, mut found) = (0u64, 0u64);
        for i in 0..self.cfg.ops {
            let key = fnv64(zipf.next(&mut rng));
            e.ins(INS_OP);
            if rng.gen::<f64>() < self.cfg.read_fraction {
                reads += 1;
                found += lsm.read(key, e).is_some() as u64;
            } else {
                ver += 1;
                lsm.update(key, ver, &mut space, e);
            }
            if i % 4096 == 0 {
                e.progress(done0 + i, total);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(total, total);
        self.reads = reads;
        self.found = found;
        self.flushes = lsm.flushes;
        self.compactions = lsm.compactions;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;
    use crate::workload::tests::{distinct_pages, emitted, params};
    use std::collections::HashMap;

    #[test]
    fn reads_return_the_latest_version_through_flushes_and_compactions() {
        let mut space = AddressSpace::new();
        let mut lsm = Lsm::new(24, 64 << 10, 1, &mut space);
        let mut want: HashMap<u64, u64> = HashMap::new();
        let mut rng = component_rng(2, "t");
        let zipf = ScrambledZipf::new(30_000, 0.8).unwrap();
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        for ver in 1..=200_000u64 {
            let key = fnv64(zipf.next(&mut rng));
            if rng.gen::<bool>() {
                assert_eq!(lsm.read(key, &mut e), want.get(&key).copied(), "op {ver}");
            } else {
                lsm.update(key, ver, &mut space, &mut e);
                want.insert(key, ver);
            }
        }
        assert!(lsm.flushes > 50 && lsm.compactions > 10, "{} flushes {} compactions", lsm.flushes, lsm.compactions);
        lsm.check().unwrap();
        for (&k, &v) in &want {
            assert_eq!(lsm.read(k, &mut e), Some(v));
        }
        assert_eq!(lsm.read(fnv64(1 << 40), &mut e), None);
        // Size tiers keep the table count logarithmic.
        assert!(lsm.tables.len() < 16, "{} tables", lsm.tables.len());
    }

    #[test]
    fn workload_finds_every_record() {
        let kv = [("records", "20000"), ("ops", "30000"), ("memtable", "256KiB")];
        let p = Params::resolve("data-serving", PARAMS, &params(&kv), 3).unwrap();
        let mut w = DataServing::new(&p).unwrap();
        let mut null = NullSink;
        w.run(&mut Emitter::new(&mut null)).unwrap();
        assert!(w.reads > 14_000);
        assert_eq!(w.found, w.reads);
        assert!(w.flushes > 5);
        let recs = emitted("data-serving", &kv, 3);
        let pages = distinct_pages(&recs) as f64;
        let est = Config::from(&p).unwrap().estimate_bytes() as f64 / 4096.0;
        assert!(pages > 0.5 * est && pages < 1.5 * est, "pages {pages} vs estimate {est}");
    }
}
