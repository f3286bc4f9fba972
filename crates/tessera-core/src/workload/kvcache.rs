//! `kvcache`: a memcached-like key-value cache (CloudSuite data caching analog).
//!
//! ## What it models
//! The data path of memcached 1.4 serving a get/set request stream:
//! - **items** `{next, prev, h_next, time, exptime, nbytes, refcount, nsuffix,
//!   it_flags, slabs_clsid, nkey, cas, key, suffix, value}`: a 48-byte header,
//!   an 8-byte CAS, the key, the `" 0 <bytes>\r\n"` suffix and the value.
//! - **slab classes**: chunk sizes from 96 bytes growing by 1.25 (8-aligned)
//!   up to 1 MiB; memory comes in 1 MiB slab pages (`malloc`, hence mmaps), at
//!   most `memory` bytes of them (a class always gets its first page, as in
//!   memcached); a new page is split into a free list by writing every chunk's
//!   header; allocation pops the free list.
//! - **hash table**: `primary_hashtable`, an array of item pointers chained
//!   through `h_next`; a lookup walks the chain comparing `nkey` and the key.
//! - **LRU**: one doubly linked list per class (`heads[]`, `tails[]`); a hit
//!   moves the item to the head only if it was last bumped more than 60 s ago
//!   (`ITEM_UPDATE_INTERVAL`); when a class has no free chunk and no memory is
//!   left, the class's LRU tail is evicted (unlinked from the hash and the
//!   list) and its chunk reused.
//! - **requests** arrive on 64 connections (each a malloc'd `conn` with 2 KiB
//!   read and write buffers): the kernel writes the request line into the read
//!   buffer, memcached tokenises it; a `set` reads the value straight into the
//!   new item, a `get` hit sends the item's key, suffix and value (the kernel
//!   reads them through the process's addresses) and writes `END\r\n`.
//!
//! Keys follow YCSB's scrambled Zipfian over `keys` (`theta`, default 0.99);
//! each key's value size is fixed, uniform in `value_min..=value_max` by a hash
//! of the key. A request is a get with probability `get_fraction`, else a set;
//! a get miss is followed by a set of the key (cache-aside, as clients do),
//! not counted in `requests`. With `warmup=true` every key is set once, in key
//! order, before the requests (not emitted), so the cache starts full.
//!
//! Instruction model (user-mode instructions only): 400 per request (event
//! loop, dispatch, response building); 100 per 64 bytes tokenised; `20 +
//! key_size` to hash the key (murmur3); 3 + 3 per chained item compared and 2
//! per `h_next`; 2 per 64 bytes copied (key, value, sends); 4–12 around each
//! LRU, free-list and header update; `slabs_clsid` loads each class size it
//! passes (2 per step).
//!
//! Dependencies: a hash lookup's first item's loads (`nkey`, the key,
//! `h_next`) depend on the bucket load, each further item's on the `h_next`
//! load before it; everything a request then does to the item it found
//! (refcount and time updates, its LRU unlink/link, the value read, an
//! unchaining store into its predecessor) depends on the load that gave the
//! item's pointer. An LRU unlink's stores into the neighbours depend on the
//! `next`/`prev` loads; a link's store into the old head on the `heads[c]`
//! load; an allocation's accesses to the chunk on the free list's
//! `slots` load (or, when evicting, on the `tails[c]` load), and the free
//! list's new top on the chunk's `next` load. Bucket, `heads`/`tails`, slab
//! class and connection-buffer addresses come from registers (hash, class,
//! connection): none.
//!
//! ## Choices
//! - The hash table is sized once (power of two, `≥ items / 1.5` for the
//!   number of items that fit), like starting memcached with a suitable
//!   `-o hashpower`; its incremental expansion thread is not modelled.
//! - Simulated time advances one second per 100 000 requests (a busy server);
//!   items never expire.
//! - Keys are `key_size`-byte strings that differ within their first 8 bytes,
//!   so a failed key comparison costs one 8-byte load.
//! - Kernel network processing (its instructions and socket-buffer accesses)
//!   is not modelled; the kernel's copies to and from the process's buffers
//!   are, because they go through the process's page tables.
//! - memcached's LRU crawler, slab rebalancer, statistics and locks are not
//!   modelled.

use super::emit::Dep;
use super::kit::{
    advise_huge, copy_range_on, fnv64, huge_vec, load_range, load_range_on, store_range, store_range_on, Emit, Quiet,
};
use super::zipf::ScrambledZipf;
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use rand::Rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "kvcache",
    summary: "memcached-like cache: chained hash table, slab classes, per-class LRU, Zipfian get/set",
    params: PARAMS,
    footprint: |p| Config::from(p).map(|c| c.estimate_bytes()),
    build: |p| Ok(Box::new(KvCache::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "memory", default: "256MiB", doc: "slab memory limit (memcached -m), 1MiB to 1TiB" },
    ParamDoc { name: "keys", default: "2M", doc: "distinct keys in the request stream" },
    ParamDoc { name: "requests", default: "1M", doc: "client requests (gets and sets)" },
    ParamDoc { name: "get_fraction", default: "0.9", doc: "fraction of requests that are gets" },
    ParamDoc { name: "theta", default: "0.99", doc: "Zipfian skew of key popularity, 0 (uniform) to 0.9999" },
    ParamDoc { name: "key_size", default: "32", doc: "key length in bytes, 8 to 250" },
    ParamDoc { name: "value_min", default: "64", doc: "smallest value, bytes" },
    ParamDoc { name: "value_max", default: "1024", doc: "largest value, bytes (up to 512KiB)" },
    ParamDoc { name: "warmup", default: "true", doc: "set every key once before the requests (not emitted)" },
];

const PAGE: u64 = 1 << 20;
const NIL: u32 = u32::MAX;
const CONNECTIONS: usize = 64;
const CONN_BYTES: u64 = 640;
const BUF_BYTES: u64 = 2048;
const REQ_PER_SEC: u64 = 100_000;
const UPDATE_INTERVAL: u32 = 60;

// Item field offsets.
const NEXT: u64 = 0;
const PREV: u64 = 8;
const HNEXT: u64 = 16;
const TIME: u64 = 24;
const EXPTIME: u64 = 28;
const NBYTES: u64 = 32;
const REFCOUNT: u64 = 36;
const FLAGS: u64 = 39;
const CLSID: u64 = 40;
const NKEY: u64 = 41;
const CAS: u64 = 48;
const KEY: u64 = 56;
// slabclass_t field offsets and size.
const SC_SIZE: u64 = 0;
const SC_SLOTS: u64 = 8;
const SC_CURR: u64 = 16;
const SC_BYTES: u64 = 64;

const INS_REQUEST: u32 = 400;
const INS_PARSE: u32 = 100;
const INS_COPY: u32 = 2;

/// memcached's slab class sizes: 96 bytes growing by 1.25, 8-aligned, then 1 MiB.
pub fn slab_sizes() -> Vec<u32> {
    let mut v = Vec::new();
    let mut size = 96u32;
    while size as f64 <= PAGE as f64 / 1.25 {
        size = size.div_ceil(8) * 8;
        v.push(size);
        size = (size as f64 * 1.25) as u32;
    }
    v.push(PAGE as u32);
    v
}

#[derive(Clone, Debug)]
struct Config {
    memory: u64,
    keys: u64,
    key_size: u32,
    vmin: u32,
    vmax: u32,
}

impl Config {
    fn from(p: &Params) -> Result<Config> {
        let vmin = p.size_in("value_min", 1, 512 << 10)? as u32;
        let vmax = p.size_in("value_max", 1, 512 << 10)? as u32;
        if vmin > vmax {
            return Err(Error::config(p.key_path("value_max"), "value_max is below value_min"));
        }
        Ok(Config {
            memory: p.size_in("memory", 1 << 20, 1 << 40)?,
            keys: p.count_in("keys", 1, u32::MAX as u64 - 1)?,
            key_size: p.count_in("key_size", 8, 250)? as u32,
            vmin,
            vmax,
        })
    }

    fn mean_total(&self) -> u64 {
        item_total(self.key_size, (self.vmin + self.vmax) / 2)
    }

    /// Items that fit (slab waste ~12 %), bounded by the key count.
    fn max_items(&self) -> u64 {
        (self.memory / (self.mean_total() * 9 / 8)).min(self.keys).max(1)
    }

    fn hash_slots(&self) -> u64 {
        (self.max_items() * 2 / 3).next_power_of_two().max(1 << 16)
    }

    fn estimate_bytes(&self) -> u64 {
        let data = (self.keys * self.mean_total() * 9 / 8).min(self.memory);
        data + 8 * self.hash_slots() + CONNECTIONS as u64 * (CONN_BYTES + 2 * BUF_BYTES) + 3 * 4096
    }
}

fn digits(v: u32) -> u32 {
    v.checked_ilog10().unwrap_or(0) + 1
}

/// memcached's `ITEM_ntotal` for a value of `vlen` bytes.
fn item_total(key_size: u32, vlen: u32) -> u64 {
    (48 + 8 + key_size + 1 + nsuffix(vlen) + vlen + 2) as u64
}

fn nsuffix(vlen: u32) -> u32 {
    5 + digits(vlen)
}

#[derive(Copy, Clone, Debug)]
struct Item {
    addr: u64,
    key: u32,
    h_next: u32,
    next: u32,
    prev: u32,
    time: u32,
    vlen: u32,
    class: u8,
    linked: bool,
}

#[derive(Clone, Debug)]
struct Class {
    size: u32,
    perslab: u32,
    free: Vec<u32>,
    head: u32,
    tail: u32,
    pages: u32,
}

/// The cache engine: items (host metadata of every carved chunk), classes,
/// hash table and the simulated addresses of memcached's globals.
pub struct Cache {
    cfg: Config,
    items: Vec<Item>,
    classes: Vec<Class>,
    buckets: Vec<u32>,
    mask: u64,
    a_table: u64,
    a_heads: u64,
    a_tails: u64,
    a_slabclass: u64,
    malloced: u64,
    pub evictions: u64,
    pub oom: u64,
}

impl Cache {
    fn new(cfg: Config, space: &mut AddressSpace) -> Cache {
        let slots = cfg.hash_slots();
        let classes = slab_sizes()
            .into_iter()
            .map(|size| Class { size, perslab: (PAGE / size as u64) as u32, free: Vec::new(), head: NIL, tail: NIL, pages: 0 })
            .collect::<Vec<_>>();
        let a_slabclass = space.malloc(SC_BYTES * classes.len() as u64);
        let a_heads = space.malloc(8 * 256);
        let a_tails = space.malloc(8 * 256);
        let a_table = space.malloc(8 * slots);
        let items = Vec::with_capacity(cfg.max_items() as usize * 5 / 4);
        advise_huge(&items);
        Cache {
            cfg,
            items,
            classes,
            buckets: huge_vec(slots as usize, NIL),
            mask: slots - 1,
            a_table,
            a_heads,
            a_tails,
            a_slabclass,
            malloced: 0,
            evictions: 0,
            oom: 0,
        }
    }

    fn value_len(&self, key: u32) -> u32 {
        self.cfg.vmin + (fnv64(key as u64) % (self.cfg.vmax - self.cfg.vmin + 1) as u64) as u32
    }

    #[inline]
    fn bucket(&self, key: u32) -> usize {
        (super::kit::mix64(key as u64 ^ 0x6d65_6d63) & self.mask) as usize
    }

    fn sc(&self, c: usize) -> u64 {
        self.a_slabclass + SC_BYTES * c as u64
    }

    /// `slabs_clsid`: the smallest class whose chunks hold `ntotal` bytes.
    fn class_for(&self, ntotal: u64, e: &mut impl Emit) -> usize {
        let mut c = 0;
        loop {
            e.ins(2);
            e.load(self.sc(c) + SC_SIZE, 4);
            if self.classes[c].size as u64 >= ntotal {
                return c;
            }
            c += 1;
        }
    }

    /// Walk `key`'s hash chain: (item or NIL, its predecessor or NIL), each
    /// with the load that gave its pointer.
    fn chain_find(&self, key: u32, e: &mut impl Emit) -> ((u32, Dep), (u32, Dep)) {
        let b = self.bucket(key);
        e.ins(20 + self.cfg.key_size);
        let db = e.load_on(self.a_table + 8 * b as u64, 8, Dep::NONE);
        let (mut pred, mut it) = ((NIL, Dep::NONE), (self.buckets[b], db));
        while it.0 != NIL {
            let (a, dit) = (self.items[it.0 as usize].addr, it.1);
            e.ins(3);
            e.load_on(a + NKEY, 1, dit);
            e.ins(3);
            if self.items[it.0 as usize].key == key {
                load_range_on(e, a + KEY, self.cfg.key_size as u64, INS_COPY, dit);
                return (it, pred);
            }
            e.load_on(a + KEY, 8, dit);
            e.ins(2);
            let dn = e.load_on(a + HNEXT, 8, dit);
            pred = it;
            it = (self.items[it.0 as usize].h_next, dn);
        }
        ((NIL, Dep::NONE), pred)
    }

    /// `assoc_delete`: find and unchain `it`.
    fn assoc_delete(&mut self, it: u32, e: &mut impl Emit) {
        let key = self.items[it as usize].key;
        let ((found, _), (pred, dpred)) = self.chain_find(key, e);
        debug_assert_eq!(found, it);
        let next = self.items[it as usize].h_next;
        e.ins(2);
        if pred == NIL {
            let b = self.bucket(key);
            e.store(self.a_table + 8 * b as u64, 8);
            self.buckets[b] = next;
        } else {
            e.store_on(self.items[pred as usize].addr + HNEXT, 8, dpred);
            self.items[pred as usize].h_next = next;
        }
        self.items[it as usize].h_next = NIL;
    }

    /// `assoc_insert`: push `it` on its bucket's chain (`dit`: the load that
    /// gave `it`'s pointer, as in the functions below).
    fn assoc_insert(&mut self, (it, dit): (u32, Dep), e: &mut impl Emit) {
        let b = self.bucket(self.items[it as usize].key);
        let a = self.items[it as usize].addr;
        e.ins(20 + self.cfg.key_size);
        e.load(self.a_table + 8 * b as u64, 8);
        e.store_on(a + HNEXT, 8, dit);
        e.store(self.a_table + 8 * b as u64, 8);
        self.items[it as usize].h_next = self.buckets[b];
        self.buckets[b] = it;
    }

    /// `item_unlink_q`.
    fn lru_unlink(&mut self, (it, dit): (u32, Dep), e: &mut impl Emit) {
        let Item { addr, next, prev, class, .. } = self.items[it as usize];
        let c = class as usize;
        e.ins(8);
        e.load(self.a_heads + 8 * c as u64, 8);
        e.load(self.a_tails + 8 * c as u64, 8);
        let dnext = e.load_on(addr + NEXT, 8, dit);
        let dprev = e.load_on(addr + PREV, 8, dit);
        if self.classes[c].head == it {
            e.store(self.a_heads + 8 * c as u64, 8);
            self.classes[c].head = next;
        }
        if self.classes[c].tail == it {
            e.store(self.a_tails + 8 * c as u64, 8);
            self.classes[c].tail = prev;
        }
        if next != NIL {
            e.store_on(self.items[next as usize].addr + PREV, 8, dnext);
            self.items[next as usize].prev = prev;
        }
        if prev != NIL {
            e.store_on(self.items[prev as usize].addr + NEXT, 8, dprev);
            self.items[prev as usize].next = next;
        }
        self.items[it as usize].next = NIL;
        self.items[it as usize].prev = NIL;
    }

    /// `item_link_q`: push `it` at its class's LRU head.
    fn lru_link(&mut self, (it, dit): (u32, Dep), e: &mut impl Emit) {
        let addr = self.items[it as usize].addr;
        let c = self.items[it as usize].class as usize;
        let head = self.classes[c].head;
        e.ins(8);
        e.store_on(addr + PREV, 8, dit);
        let dh = e.load_on(self.a_heads + 8 * c as u64, 8, Dep::NONE);
        e.store_on(addr + NEXT, 8, dit);
        if head != NIL {
            e.store_on(self.items[head as usize].addr + PREV, 8, dh);
            self.items[head as usize].prev = it;
        }
        e.store(self.a_heads + 8 * c as u64, 8);
        e.load(self.a_tails + 8 * c as u64, 8);
        if self.classes[c].tail == NIL {
            e.store(self.a_tails + 8 * c as u64, 8);
            self.classes[c].tail = it;
        }
        self.items[it as usize].next = head;
        self.items[it as usize].prev = NIL;
        self.classes[c].head = it;
    }

    /// `do_slabs_free`: push a chunk on its class's free list.
    fn slab_free(&mut self, (it, dit): (u32, Dep), e: &mut impl Emit) {
        let c = self.items[it as usize].class as usize;
        let a = self.items[it as usize].addr;
        let sc = self.sc(c);
        e.ins(12);
        let ds = e.load_on(sc + SC_SLOTS, 8, Dep::NONE);
        e.store_on(a + FLAGS, 1, dit);
        e.store_on(a + PREV, 8, dit);
        e.store_on(a + NEXT, 8, dit);
        if let Some(&top) = self.classes[c].free.last() {
            e.store_on(self.items[top as usize].addr + PREV, 8, ds);
        }
        e.store(sc + SC_SLOTS, 8);
        e.store(sc + SC_CURR, 4);
        self.items[it as usize].linked = false;
        self.classes[c].free.push(it);
    }

    /// `do_slabs_alloc`: pop a free chunk, taking a new 1 MiB page if the
    /// class has none and memory allows. None when neither is possible.
    /// Returns the chunk and the load that gave its pointer.
    fn slab_alloc(&mut self, c: usize, space: &mut AddressSpace, e: &mut impl Emit) -> Option<(u32, Dep)> {
        let sc = self.sc(c);
        e.ins(6);
        e.load(sc + SC_CURR, 4);
        if self.classes[c].free.is_empty() {
            let may_grow = self.malloced + PAGE <= self.cfg.memory || self.classes[c].pages == 0;
            if !may_grow {
                return None;
            }
            e.ins(60);
            let page = space.malloc(PAGE);
            self.malloced += PAGE;
            self.classes[c].pages += 1;
            let (size, per) = (self.classes[c].size as u64, self.classes[c].perslab);
            for j in 0..per as u64 {
                let id = self.items.len() as u32;
                self.items.push(Item {
                    addr: page + j * size,
                    key: 0,
                    h_next: NIL,
                    next: NIL,
                    prev: NIL,
                    time: 0,
                    vlen: 0,
                    class: c as u8,
                    linked: false,
                });
                self.slab_free((id, Dep::NONE), e);
            }
        }
        let it = self.classes[c].free.pop()?;
        let a = self.items[it as usize].addr;
        e.ins(6);
        let ds = e.load_on(sc + SC_SLOTS, 8, Dep::NONE);
        let dn = e.load_on(a + NEXT, 8, ds);
        e.store(sc + SC_SLOTS, 8);
        if let Some(&top) = self.classes[c].free.last() {
            e.store_on(self.items[top as usize].addr + PREV, 8, dn);
        }
        e.store_on(a + FLAGS, 1, ds);
        e.store(sc + SC_CURR, 4);
        Some((it, ds))
    }

    /// `do_item_alloc`: a chunk of class `c`, evicting the LRU tail if needed.
    /// Returns the chunk and the load that gave its pointer.
    fn item_alloc(&mut self, c: usize, space: &mut AddressSpace, e: &mut impl Emit) -> Option<(u32, Dep)> {
        e.ins(4);
        let dt = e.load_on(self.a_tails + 8 * c as u64, 8, Dep::NONE);
        let tail = self.classes[c].tail;
        if tail == NIL {
            return self.slab_alloc(c, space, e);
        }
        let ta = self.items[tail as usize].addr;
        e.ins(4);
        e.store_on(ta + REFCOUNT, 2, dt);
        e.load_on(ta + EXPTIME, 4, dt);
        let it = match self.slab_alloc(c, space, e) {
            Some(it) => it,
            None => {
                // Evict the tail: its key is re-hashed to unchain it.
                load_range_on(e, ta + KEY, self.cfg.key_size as u64, INS_COPY, dt);
                self.assoc_delete(tail, e);
                self.lru_unlink((tail, dt), e);
                self.items[tail as usize].linked = false;
                self.evictions += 1;
                (tail, dt)
            }
        };
        e.ins(2);
        e.store_on(ta + REFCOUNT, 2, dt);
        Some(it)
    }

    /// Unlink `it` from the hash and its LRU and free its chunk
    /// (`do_item_unlink` then the last `do_item_remove`).
    fn unlink(&mut self, (it, dit): (u32, Dep), e: &mut impl Emit) {
        let a = self.items[it as usize].addr;
        e.ins(4);
        e.store_on(a + FLAGS, 1, dit);
        self.assoc_delete(it, e);
        self.lru_unlink((it, dit), e);
        e.ins(2);
        e.store_on(a + REFCOUNT, 2, dit);
        self.slab_free((it, dit), e);
    }

    /// A `set` whose request line is in `rbuf`. False if memory ran out.
    pub fn set(&mut self, key: u32, now: u32, rbuf: u64, space: &mut AddressSpace, e: &mut impl Emit) -> bool {
        let vlen = self.value_len(key);
        let ntotal = item_total(self.cfg.key_size, vlen);
        let c = self.class_for(ntotal, e);
        let Some((it, dit)) = self.item_alloc(c, space, e) else {
            self.oom += 1;
            return false;
        };
        let a = self.items[it as usize].addr;
        // Header, key and suffix.
        e.ins(12);
        for (off, sz) in [(NEXT, 8), (PREV, 8), (HNEXT, 8), (EXPTIME, 4), (NBYTES, 4), (REFCOUNT, 2), (FLAGS, 1), (CLSID, 1), (NKEY, 1)]
        {
            e.store_on(a + off, sz, dit);
        }
        let ks = self.cfg.key_size as u64;
        copy_range_on(e, rbuf + 4, a + KEY, ks, 4, Dep::NONE, dit);
        store_range_on(e, a + KEY + ks + 1, nsuffix(vlen) as u64, INS_COPY, dit);
        // The value, read from the socket straight into the item.
        store_range_on(e, a + KEY + ks + 1 + nsuffix(vlen) as u64, vlen as u64 + 2, INS_COPY, dit);
        {
            let i = &mut self.items[it as usize];
            i.key = key;
            i.vlen = vlen;
            i.class = c as u8;
            i.next = NIL;
            i.prev = NIL;
            i.h_next = NIL;
        }
        // do_store_item: replace an existing item of the key.
        let ((old, dold), _) = self.chain_find(key, e);
        if old != NIL {
            e.ins(2);
            e.store_on(self.items[old as usize].addr + REFCOUNT, 2, dold);
            self.unlink((old, dold), e);
        }
        // do_item_link.
        e.ins(6);
        e.store_on(a + FLAGS, 1, dit);
        e.store_on(a + TIME, 4, dit);
        e.store_on(a + CAS, 8, dit);
        self.items[it as usize].time = now;
        self.items[it as usize].linked = true;
        self.assoc_insert((it, dit), e);
        self.lru_link((it, dit), e);
        e.ins(2);
        e.store_on(a + REFCOUNT, 2, dit);
        true
    }

    /// A `get`; true on a hit (the value is sent).
    pub fn get(&mut self, key: u32, now: u32, e: &mut impl Emit) -> bool {
        let ((it, dit), _) = self.chain_find(key, e);
        if it == NIL {
            return false;
        }
        let Item { addr, time, vlen, .. } = self.items[it as usize];
        e.ins(2);
        e.store_on(addr + REFCOUNT, 2, dit);
        // do_item_update.
        e.ins(3);
        e.load_on(addr + TIME, 4, dit);
        if now > time + UPDATE_INTERVAL {
            self.lru_unlink((it, dit), e);
            e.ins(2);
            e.store_on(addr + TIME, 4, dit);
            self.items[it as usize].time = now;
            self.lru_link((it, dit), e);
        }
        let ks = self.cfg.key_size as u64;
        load_range_on(e, addr + KEY, ks + 1 + nsuffix(vlen) as u64 + vlen as u64 + 2, INS_COPY, dit);
        e.ins(2);
        e.store_on(addr + REFCOUNT, 2, dit);
        true
    }

    /// Linked items.
    pub fn len(&self) -> usize {
        self.items.iter().filter(|i| i.linked).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Hash chains, LRU lists and free lists agree; memory within the limit.
    pub fn check(&self) -> std::result::Result<(), String> {
        let mut in_hash = vec![false; self.items.len()];
        for &b in &self.buckets {
            let mut it = b;
            while it != NIL {
                if in_hash[it as usize] || !self.items[it as usize].linked {
                    return Err(format!("item {it} chained twice or not linked"));
                }
                in_hash[it as usize] = true;
                it = self.items[it as usize].h_next;
            }
        }
        let mut in_lru = vec![false; self.items.len()];
        for (c, cl) in self.classes.iter().enumerate() {
            let (mut it, mut prev) = (cl.head, NIL);
            while it != NIL {
                let i = &self.items[it as usize];
                if i.prev != prev || i.class as usize != c || in_lru[it as usize] {
                    return Err(format!("class {c} LRU broken at item {it}"));
                }
                if item_total(self.cfg.key_size, i.vlen) > cl.size as u64 {
                    return Err(format!("item {it} does not fit class {c}"));
                }
                in_lru[it as usize] = true;
                prev = it;
                it = i.next;
            }
            if cl.tail != prev {
                return Err(format!("class {c} tail is not the last item"));
            }
            for &f in &cl.free {
                if self.items[f as usize].linked {
                    return Err(format!("free chunk {f} is linked"));
                }
            }
        }
        for (i, it) in self.items.iter().enumerate() {
            if it.linked != in_hash[i] || it.linked != in_lru[i] {
                return Err(format!("item {i}: linked {}, hashed {}, in LRU {}", it.linked, in_hash[i], in_lru[i]));
            }
        }
        let free: usize = self.classes.iter().map(|c| c.free.len()).sum();
        if free + self.len() != self.items.len() {
            return Err("chunks lost".into());
        }
        // Over the limit, a class may still take its first page.
        let first_pages = self.classes.iter().filter(|c| c.pages > 0).count() as u64;
        if self.malloced > self.cfg.memory + first_pages * PAGE {
            return Err(format!("{} bytes of slabs over the {} limit", self.malloced, self.cfg.memory));
        }
        Ok(())
    }
}

pub struct KvCache {
    cfg: Config,
    requests: u64,
    get_fraction: f64,
    theta: f64,
    warmup: bool,
    seed: u64,
    /// Gets, and gets that hit (set by `run`).
    pub gets: u64,
    pub hits: u64,
    pub evictions: u64,
}

impl KvCache {
    pub fn new(p: &Params) -> Result<KvCache> {
        Ok(KvCache {
            cfg: Config::from(p)?,
            requests: p.count("requests")?,
            get_fraction: p.real_in("get_fraction", 0.0, 1.0)?,
            theta: p.real_in("theta", 0.0, 0.9999)?,
            warmup: p.flag("warmup")?,
            seed: p.seed(),
            gets: 0,
            hits: 0,
            evictions: 0,
        })
    }
}

struct Conn {
    addr: u64,
    rbuf: u64,
    wbuf: u64,
}

/// The request line arriving and being tokenised.
fn receive(c: &Conn, len: u64, e: &mut impl Emit) {
    e.ins(INS_REQUEST);
    e.load(c.addr, 8);
    store_range(e, c.rbuf, len, INS_COPY);
    load_range(e, c.rbuf, len, INS_PARSE);
}

fn respond(c: &Conn, e: &mut impl Emit) {
    e.ins(4);
    e.store(c.wbuf, 5);
    e.load(c.wbuf, 5);
    e.store(c.addr + 8, 8);
}

impl Workload for KvCache {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let conns: Vec<Conn> = (0..CONNECTIONS)
            .map(|_| Conn { addr: space.malloc(CONN_BYTES), rbuf: space.malloc(BUF_BYTES), wbuf: space.malloc(BUF_BYTES) })
            .collect();
        let mut cache = Cache::new(self.cfg.clone(), &mut space);
        let ks = self.cfg.key_size as u64;
        if self.warmup {
            let mut quiet = Quiet;
            for k in 0..self.cfg.keys as u32 {
                cache.set(k, 0, conns[0].rbuf, &mut space, &mut quiet);
            }
        }
        let zipf = ScrambledZipf::new(self.cfg.keys, self.theta)?;
        let mut rng = component_rng(self.seed, "workload.kvcache.requests");
        let (mut gets, mut hits) = (0u64, 0u64);
        for i in 0..self.requests {
            let now = 1 + (i / REQ_PER_SEC) as u32;
            let c = &conns[i as usize % CONNECTIONS];
            let key = zipf.next(&mut rng) as u32;
            if rng.gen::<f64>() < self.get_fraction {
                gets += 1;
                receive(c, ks + 6, e);
                let hit = cache.get(key, now, e);
                respond(c, e);
                hits += hit as u64;
                if !hit {
                    receive(c, ks + 20, e);
                    cache.set(key, now, c.rbuf, &mut space, e);
                    respond(c, e);
                }
            } else {
                receive(c, ks + 20, e);
                cache.set(key, now, c.rbuf, &mut space, e);
                respond(c, e);
            }
            if i % 4096 == 0 {
                e.progress(i, self.requests);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(self.requests, self.requests);
        self.gets = gets;
        self.hits = hits;
        self.evictions = cache.evictions;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;
    use crate::workload::tests::{distinct_pages, emitted, params};
    use std::collections::{BTreeMap, HashMap};

    /// memcached's replacement, written plainly: one LRU with a 60 s bump
    /// interval and `cap` chunks.
    struct RefLru {
        cap: usize,
        stamp: u64,
        order: BTreeMap<u64, u32>,
        at: HashMap<u32, (u64, u32)>,
    }

    impl RefLru {
        fn touch(&mut self, k: u32, now: u32) {
            self.stamp += 1;
            self.order.insert(self.stamp, k);
            self.at.insert(k, (self.stamp, now));
        }
        fn get(&mut self, k: u32, now: u32) -> bool {
            match self.at.get(&k).copied() {
                Some((s, t)) => {
                    if now > t + UPDATE_INTERVAL {
                        self.order.remove(&s);
                        self.touch(k, now);
                    }
                    true
                }
                None => false,
            }
        }
        fn set(&mut self, k: u32, now: u32) {
            if self.at.len() == self.cap {
                let (_, victim) = self.order.pop_first().unwrap();
                self.at.remove(&victim);
            }
            if let Some((s, _)) = self.at.remove(&k) {
                self.order.remove(&s);
            }
            self.touch(k, now);
        }
    }

    fn cfg(memory: u64, keys: u64, vmin: u32, vmax: u32) -> Config {
        Config { memory, keys, key_size: 16, vmin, vmax }
    }

    #[test]
    fn slab_classes_follow_memcached() {
        let s = slab_sizes();
        assert_eq!(&s[..5], &[96, 120, 152, 192, 240]);
        assert_eq!(*s.last().unwrap(), 1 << 20);
        assert!(s.windows(2).all(|w| w[0] < w[1] && w[0] % 8 == 0));
    }

    #[test]
    fn hits_misses_and_evictions_match_a_reference_lru() {
        let mut space = AddressSpace::new();
        let mut cache = Cache::new(cfg(1 << 20, 20_000, 100, 100), &mut space);
        let rbuf = space.malloc(2048);
        let c = cache.class_for(item_total(16, 100), &mut Emitter::new(&mut NullSink));
        let cap = cache.classes[c].perslab as usize;
        let mut r = RefLru { cap, stamp: 0, order: BTreeMap::new(), at: HashMap::new() };
        let zipf = ScrambledZipf::new(20_000, 0.9).unwrap();
        let mut rng = component_rng(8, "t");
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        let (mut hits, mut misses) = (0, 0);
        for i in 0..60_000u32 {
            let now = i / 200;
            let k = zipf.next(&mut rng) as u32;
            if rng.gen::<f64>() < 0.8 {
                let hit = cache.get(k, now, &mut e);
                assert_eq!(hit, r.get(k, now), "request {i} key {k}");
                if hit {
                    hits += 1;
                } else {
                    misses += 1;
                    assert!(cache.set(k, now, rbuf, &mut space, &mut e));
                    r.set(k, now);
                }
            } else {
                assert!(cache.set(k, now, rbuf, &mut space, &mut e));
                r.set(k, now);
            }
        }
        cache.check().unwrap();
        assert!(hits > 10_000 && misses > 5_000, "hits {hits} misses {misses}");
        assert!(cache.evictions > 0);
        assert_eq!(cache.len(), cap);
        assert_eq!(cache.classes[c].pages, 1);
    }

    #[test]
    fn mixed_sizes_fill_several_classes_within_the_limit() {
        let mut space = AddressSpace::new();
        let mut cache = Cache::new(cfg(8 << 20, 50_000, 50, 3000), &mut space);
        let rbuf = space.malloc(2048);
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        for k in 0..50_000 {
            cache.set(k, 0, rbuf, &mut space, &mut e);
        }
        cache.check().unwrap();
        assert!(cache.classes.iter().filter(|c| c.pages > 0).count() >= 8);
        assert!(cache.evictions > 0);
        // The most recently set key is still there.
        assert!(cache.get(49_999, 1, &mut e));
    }

    #[test]
    fn workload_runs_and_touches_the_slabs() {
        let kv = [("memory", "16MiB"), ("keys", "200000"), ("requests", "100000")];
        let p = Params::resolve("kvcache", PARAMS, &params(&kv), 1).unwrap();
        let mut w = KvCache::new(&p).unwrap();
        let mut null = NullSink;
        w.run(&mut Emitter::new(&mut null)).unwrap();
        let hit_rate = w.hits as f64 / w.gets as f64;
        assert!((0.3..0.95).contains(&hit_rate), "hit rate {hit_rate}");
        assert!(w.evictions > 0);
        let recs = emitted("kvcache", &kv, 1);
        let pages = distinct_pages(&recs) as f64;
        let est = Config::from(&p).unwrap().estimate_bytes() as f64 / 4096.0;
        assert!(pages > 0.5 * est && pages < 1.1 * est, "pages {pages} vs estimate {est}");
    }

    #[test]
    fn chain_walks_depend_on_the_bucket_then_on_h_next() {
        use crate::access::AccessKind::{Load, Store};
        use crate::workload::tests::{check_deps, emitted_deps};
        let kv = [("memory", "4MiB"), ("keys", "50000"), ("requests", "20000")];
        let (recs, deps) = emitted_deps("kvcache", &kv, 2);
        check_deps(&recs, &deps);
        // The table's address, allocated as run() does.
        let p = Params::resolve("kvcache", PARAMS, &params(&kv), 2).unwrap();
        let cfg = Config::from(&p).unwrap();
        let mut space = AddressSpace::new();
        for _ in 0..CONNECTIONS {
            (space.malloc(CONN_BYTES), space.malloc(BUF_BYTES), space.malloc(BUF_BYTES));
        }
        let table = Cache::new(cfg.clone(), &mut space).a_table;
        let in_table = |a: u64| (table..table + 8 * cfg.hash_slots()).contains(&a);
        let (mut from_bucket, mut from_h_next) = (0, 0);
        for (i, r) in recs.iter().enumerate() {
            let d = deps[i] as usize;
            if in_table(r.1) {
                assert_eq!(d, 0, "bucket access {i} has a dependency");
                continue;
            }
            // An item's `nkey` (a 1-byte load; the key compare's load follows
            // at the key): its pointer came from the bucket or from the
            // previous item's `h_next`, loaded after its `nkey` and key. (A
            // value read's 1-byte tail chunk is followed by a store instead.)
            let item = r.1.wrapping_sub(NKEY);
            if !(r.2 == Load && r.3 == 1 && recs.get(i + 1).is_some_and(|n| n.1 == item.wrapping_add(KEY) && n.2 == Load)) {
                continue;
            }
            assert!(d > 0, "nkey load {i} without a dependency");
            let j = i - d;
            if in_table(recs[j].1) {
                from_bucket += 1;
            } else {
                from_h_next += 1;
                let item = recs[j].1 - HNEXT;
                assert_eq!(recs[j].3, 8);
                assert_eq!((recs[j - 1].1, recs[j - 2].1), (item + KEY, item + NKEY), "record {i}");
                assert!(deps[j - 2] > 0, "the previous item had a pointer too");
            }
            // The key compare reads the same item through the same pointer.
            assert_eq!(i + 1 - deps[i + 1] as usize, j);
        }
        assert!(from_bucket > 10_000 && from_h_next > 100, "{from_bucket} {from_h_next}");
        // Item stores depend on a load too (refcounts, links, new items).
        let item_stores = recs.iter().zip(&deps).filter(|(r, &d)| r.2 == Store && r.3 == 2 && d > 0).count();
        assert!(item_stores > 20_000, "{item_stores}");
    }
}
