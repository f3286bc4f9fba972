//! `btree`: a B+ tree index built from random keys, then random point lookups.
//!
//! ## What it models
//! The index-lookup benchmark of the Mosaic Pages evaluation (BTree, Table 2):
//! a B+ tree of 64-bit keys and 32-bit values, every node an individual
//! `malloc` of a C struct, built by inserting `keys` random keys one at a time
//! (so nodes are split, and allocated, in the order a real program would), then
//! probed with `lookups` random point queries.
//!
//! Node layout (`F` = `fanout`, the maximum number of keys per node):
//! `struct node { u32 nkeys; u32 is_leaf; u64 keys[F]; u64 slot[F+1]; struct node *next; }`
//! — `slot` holds child pointers in inner nodes and values in leaves; `next`
//! links the leaves left to right. `24 + 16F` bytes, malloc'd one by one (a
//! 560-byte chunk for the default `F = 32`). The root pointer lives in a small
//! malloc'd `struct tree`.
//!
//! Instruction model, per operation:
//! - lookup: 12 instructions to draw the key; load `tree->root` (2);
//!   per node: load `nkeys` (2), a binary search with 5 instructions per probe
//!   (one key load each); inner nodes then load the child pointer (3); the leaf
//!   re-loads the key at the found position to test equality (2) and loads the
//!   value on a hit (2).
//! - insertion (when `emit_build=true`): the same descent; shifting a key and
//!   its slot right by one is a load and a store of each (2 instructions per
//!   load/store pair); a split calls `malloc` (60 instructions, its own
//!   metadata accesses not modelled) and moves the upper half of the node to
//!   the new one (a load from the old node and a store to the new per key and
//!   per slot), then inserts the separator into the parent the same way.
//!
//! Dependencies: the root's loads depend on the `tree->root` load, and every
//! other node's loads and stores (`nkeys`, the key probes, the child pointer,
//! the leaf's key and value, an insertion's shifts and split moves) on the
//! child-pointer load that named the node: one chain of dependent loads per
//! descent. The binary search's compares only steer branches (control
//! dependencies, predicted), so the probes depend on the node, not on each
//! other. A split's new node comes from `malloc` (a register): none.
//!
//! ## Choices
//! - Keys are `mix64(base + i)` for `i < keys` (a bijection, so keys are
//!   distinct and in random order) and the value of the `i`-th key is `i`.
//!   Misses look up `mix64(base + keys + j)`, which no inserted key can equal.
//! - Leaves split into `⌈(F+1)/2⌉ | ⌊(F+1)/2⌋` keys, inner nodes push the middle
//!   key up; random insertion leaves nodes about ln 2 ≈ 69 % full, which the
//!   footprint estimate assumes.
//! - The build is not emitted by default (the benchmark's timed phase is the
//!   lookups); `emit_build=true` emits it first.
//! - The host keeps each node as one record of the same size as the C struct,
//!   so host memory is about the simulated footprint.

use rand::Rng;

use super::emit::Dep;
use super::kit::{advise_huge, mix64, Emit, Quiet};
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::component_rng;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "btree",
    summary: "B+ tree of random 64-bit keys with malloc'd nodes, then random point lookups",
    params: PARAMS,
    footprint: |p| {
        let (n, f) = (p.count_in("keys", 1, MAX_KEYS)?, p.count_in("fanout", 4, 1024)?);
        Ok(estimate_bytes(n, f))
    },
    build: |p| Ok(Box::new(BTree::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "keys", default: "4M", doc: "keys inserted (1 to 2^32-1); ~24 bytes of tree per key" },
    ParamDoc { name: "fanout", default: "32", doc: "maximum keys per node, 4 to 1024" },
    ParamDoc { name: "lookups", default: "1M", doc: "random point lookups" },
    ParamDoc { name: "miss_fraction", default: "0", doc: "fraction of lookups for keys not in the tree" },
    ParamDoc { name: "emit_build", default: "false", doc: "emit the insertions that build the tree before the lookups" },
];

const MAX_KEYS: u64 = u32::MAX as u64 - 1;
const NIL: u32 = u32::MAX;
const MAX_HEIGHT: usize = 48;

const INS_LOOKUP: u32 = 12;
const INS_ROOT: u32 = 2;
const INS_NKEYS: u32 = 2;
const INS_PROBE: u32 = 5;
const INS_CHILD: u32 = 3;
const INS_MATCH: u32 = 2;
const INS_VALUE: u32 = 2;
const INS_MOVE: u32 = 2;
const INS_MALLOC: u32 = 60;

/// Bytes of one node struct.
fn node_bytes(f: u64) -> u64 {
    24 + 16 * f
}

/// Estimated bytes of a tree of `n` randomly inserted keys (nodes ~69 % full).
pub fn estimate_bytes(n: u64, f: u64) -> u64 {
    let chunk = (node_bytes(f) + 16).div_ceil(16) * 16;
    let per_node = (f as f64 * std::f64::consts::LN_2).max(2.0);
    let leaves = (n as f64 / per_node).ceil();
    let nodes = leaves * (1.0 + 1.0 / (per_node - 1.0));
    (nodes * chunk as f64) as u64 + 4096
}

/// The tree on the host: one record per node (`[addr, nkeys | leaf << 32,
/// next, keys[F], slots[F+1]]` as `u64`s), so a node's fields share cache
/// lines as the C struct's do.
pub struct Tree {
    f: usize,
    stride: usize,
    nbytes: u64,
    node: Vec<u64>,
    root: u32,
    height: u32,
    /// `&tree->root`.
    tree_addr: u64,
    tk: Vec<u64>,
    ts: Vec<u64>,
}

const LEAF: u64 = 1 << 32;

impl Tree {
    pub fn new(f: usize, space: &mut AddressSpace) -> Tree {
        Tree::with_capacity(f, 1, space)
    }

    /// A tree with host room for `nodes` nodes before it reallocates.
    pub fn with_capacity(f: usize, nodes: usize, space: &mut AddressSpace) -> Tree {
        let node = Vec::with_capacity(nodes * (4 + 2 * f));
        advise_huge(&node);
        let mut t = Tree {
            f,
            stride: 4 + 2 * f,
            nbytes: node_bytes(f as u64),
            node,
            root: 0,
            height: 1,
            tree_addr: space.malloc(16),
            tk: vec![0; f + 1],
            ts: vec![0; f + 2],
        };
        t.root = t.alloc_node(true, space);
        t
    }

    pub fn height(&self) -> u32 {
        self.height
    }

    pub fn nodes(&self) -> usize {
        self.node.len() / self.stride
    }

    fn alloc_node(&mut self, leaf: bool, space: &mut AddressSpace) -> u32 {
        let n = self.nodes() as u32;
        let at = self.node.len();
        self.node.resize(at + self.stride, 0);
        self.node[at] = space.malloc(self.nbytes);
        self.node[at + 1] = if leaf { LEAF } else { 0 };
        self.node[at + 2] = NIL as u64;
        n
    }

    #[inline(always)]
    fn base(&self, n: u32) -> usize {
        n as usize * self.stride
    }

    #[inline(always)]
    fn addr(&self, n: u32) -> u64 {
        self.node[self.base(n)]
    }

    #[inline(always)]
    fn nkeys(&self, n: u32) -> usize {
        self.node[self.base(n) + 1] as u32 as usize
    }

    #[inline(always)]
    fn set_nkeys(&mut self, n: u32, nk: usize) {
        let b = self.base(n) + 1;
        self.node[b] = (self.node[b] & LEAF) | nk as u64;
    }

    #[inline(always)]
    fn is_leaf(&self, n: u32) -> bool {
        self.node[self.base(n) + 1] & LEAF != 0
    }

    #[inline(always)]
    fn next(&self, n: u32) -> u32 {
        self.node[self.base(n) + 2] as u32
    }

    #[inline(always)]
    fn key(&self, n: u32, i: usize) -> u64 {
        self.node[self.base(n) + 3 + i]
    }

    #[inline(always)]
    fn slot(&self, n: u32, i: usize) -> u32 {
        self.node[self.base(n) + 3 + self.f + i] as u32
    }

    #[inline(always)]
    fn key_addr(&self, n: u32, i: usize) -> u64 {
        self.addr(n) + 8 + 8 * i as u64
    }

    #[inline(always)]
    fn slot_addr(&self, n: u32, i: usize) -> u64 {
        self.addr(n) + 8 + 8 * (self.f + i) as u64
    }

    #[inline(always)]
    fn next_addr(&self, n: u32) -> u64 {
        self.addr(n) + 16 + 16 * self.f as u64
    }

    /// First index whose key is `> k` (the child to descend into).
    #[inline]
    fn upper_bound(&self, n: u32, dn: Dep, k: u64, e: &mut impl Emit) -> usize {
        let b = self.base(n) + 3;
        let p = self.node[b..b + self.nkeys(n)].iter().filter(|&&x| x <= k).count();
        self.emit_search(n, dn, p, e);
        p
    }

    /// First index whose key is `>= k`.
    #[inline]
    fn lower_bound(&self, n: u32, dn: Dep, k: u64, e: &mut impl Emit) -> usize {
        let b = self.base(n) + 3;
        let p = self.node[b..b + self.nkeys(n)].iter().filter(|&&x| x < k).count();
        self.emit_search(n, dn, p, e);
        p
    }

    /// Emit the program's binary search of node `n` ending at position `p`:
    /// the `nkeys` load, then one key load per probe. Which half a probe
    /// keeps depends only on whether it lies before `p`, so the host finds
    /// `p` with a branch-free count (its independent loads overlap their
    /// cache misses) and replays the probes without reading the keys again.
    /// Every load depends on `dn`, the load that gave the node's address.
    #[inline(always)]
    fn emit_search(&self, n: u32, dn: Dep, p: usize, e: &mut impl Emit) {
        let a = self.addr(n);
        e.ins(INS_NKEYS);
        e.load_on(a, 4, dn);
        let (mut lo, mut hi) = (0, self.nkeys(n));
        while lo < hi {
            let mid = (lo + hi) / 2;
            e.ins(INS_PROBE);
            e.load_on(a + 8 + 8 * mid as u64, 8, dn);
            if mid < p {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
    }

    /// Descend from the root to the leaf that would hold `k`, recording the
    /// inner nodes, the loads that gave them and child indices taken.
    /// Returns the leaf and the load that gave its address.
    #[inline]
    fn descend(&self, k: u64, path: &mut [(u32, Dep, usize); MAX_HEIGHT], e: &mut impl Emit) -> (u32, Dep) {
        e.ins(INS_ROOT);
        let mut dn = e.load_on(self.tree_addr, 8, Dep::NONE);
        let mut n = self.root;
        for p in path.iter_mut().take(self.height as usize - 1) {
            let i = self.upper_bound(n, dn, k, e);
            e.ins(INS_CHILD);
            let dc = e.load_on(self.slot_addr(n, i), 8, dn);
            *p = (n, dn, i);
            n = self.slot(n, i);
            dn = dc;
        }
        (n, dn)
    }

    /// Look `k` up; returns its value.
    pub fn find(&self, k: u64, e: &mut impl Emit) -> Option<u32> {
        e.ins(INS_ROOT);
        let mut dn = e.load_on(self.tree_addr, 8, Dep::NONE);
        let mut n = self.root;
        for _ in 1..self.height {
            let i = self.upper_bound(n, dn, k, e);
            e.ins(INS_CHILD);
            dn = e.load_on(self.slot_addr(n, i), 8, dn);
            n = self.slot(n, i);
        }
        let i = self.lower_bound(n, dn, k, e);
        if i < self.nkeys(n) {
            e.ins(INS_MATCH);
            e.load_on(self.key_addr(n, i), 8, dn);
            if self.key(n, i) == k {
                e.ins(INS_VALUE);
                e.load_on(self.slot_addr(n, i), 8, dn);
                return Some(self.slot(n, i));
            }
        }
        None
    }

    /// Insert `k → v` (replacing the value if `k` is present). Returns true if
    /// `k` is new.
    pub fn insert(&mut self, k: u64, v: u32, space: &mut AddressSpace, e: &mut impl Emit) -> bool {
        let mut path = [(0u32, Dep::NONE, 0usize); MAX_HEIGHT];
        let (leaf, dl) = self.descend(k, &mut path, e);
        let pos = self.lower_bound(leaf, dl, k, e);
        let nk = self.nkeys(leaf);
        if pos < nk {
            e.ins(INS_MATCH);
            e.load_on(self.key_addr(leaf, pos), 8, dl);
            if self.key(leaf, pos) == k {
                e.ins(INS_VALUE);
                e.store_on(self.slot_addr(leaf, pos), 8, dl);
                let b = self.base(leaf) + 3 + self.f + pos;
                self.node[b] = v as u64;
                return false;
            }
        }
        if nk < self.f {
            self.insert_at((leaf, dl), pos, k, pos, v as u64, e);
            return true;
        }
        let (mut sep, mut right) = self.split((leaf, dl), pos, k, pos, v as u64, space, e);
        let mut d = self.height as usize - 1;
        while d > 0 {
            d -= 1;
            let (p, dp, i) = path[d];
            if self.nkeys(p) < self.f {
                self.insert_at((p, dp), i, sep, i + 1, right as u64, e);
                return true;
            }
            (sep, right) = self.split((p, dp), i, sep, i + 1, right as u64, space, e);
        }
        // The root split: a new root with two children.
        let old = self.root;
        e.ins(INS_MALLOC);
        let r = self.alloc_node(false, space);
        let (b, f) = (self.base(r), self.f);
        self.node[b + 3] = sep;
        self.node[b + 3 + f] = old as u64;
        self.node[b + 4 + f] = right as u64;
        self.set_nkeys(r, 1);
        e.ins(INS_MOVE);
        e.store(self.addr(r), 8);
        e.store(self.key_addr(r, 0), 8);
        e.store(self.slot_addr(r, 0), 8);
        e.store(self.slot_addr(r, 1), 8);
        e.store(self.tree_addr, 8);
        self.root = r;
        self.height += 1;
        true
    }

    /// Slots in use in node `n` with `nk` keys.
    #[inline(always)]
    fn nslots(&self, n: u32, nk: usize) -> usize {
        if self.is_leaf(n) {
            nk
        } else {
            nk + 1
        }
    }

    /// Insert key `k` at `kpos` and slot `s` at `spos` into non-full node `n`.
    /// `dn`: the load that gave `n`'s address.
    fn insert_at(&mut self, (n, dn): (u32, Dep), kpos: usize, k: u64, spos: usize, s: u64, e: &mut impl Emit) {
        let nk = self.nkeys(n);
        let ns = self.nslots(n, nk);
        for j in (kpos..nk).rev() {
            e.ins(INS_MOVE);
            e.load_on(self.key_addr(n, j), 8, dn);
            e.store_on(self.key_addr(n, j + 1), 8, dn);
        }
        for j in (spos..ns).rev() {
            e.ins(INS_MOVE);
            e.load_on(self.slot_addr(n, j), 8, dn);
            e.store_on(self.slot_addr(n, j + 1), 8, dn);
        }
        e.ins(INS_MOVE);
        e.store_on(self.key_addr(n, kpos), 8, dn);
        e.store_on(self.slot_addr(n, spos), 8, dn);
        e.store_on(self.addr(n), 4, dn);
        let (kb, sb) = (self.base(n) + 3, self.base(n) + 3 + self.f);
        self.node.copy_within(kb + kpos..kb + nk, kb + kpos + 1);
        self.node[kb + kpos] = k;
        self.node.copy_within(sb + spos..sb + ns, sb + spos + 1);
        self.node[sb + spos] = s;
        self.set_nkeys(n, nk + 1);
    }

    /// Split full node `n` while inserting key `k` at `kpos` and slot `s` at
    /// `spos`. Returns the separator for the parent and the new right node.
    /// `dn`: the load that gave `n`'s address (the new node's is `malloc`'s).
    #[allow(clippy::too_many_arguments)]
    fn split(
        &mut self,
        (n, dn): (u32, Dep),
        kpos: usize,
        k: u64,
        spos: usize,
        s: u64,
        space: &mut AddressSpace,
        e: &mut impl Emit,
    ) -> (u64, u32) {
        let f = self.f;
        let leaf = self.is_leaf(n);
        let ns = self.nslots(n, f);
        // Host: the f+1 keys and ns+1 slots in order, in scratch.
        let (kb, sb) = (self.base(n) + 3, self.base(n) + 3 + f);
        self.tk[..kpos].copy_from_slice(&self.node[kb..kb + kpos]);
        self.tk[kpos] = k;
        self.tk[kpos + 1..=f].copy_from_slice(&self.node[kb + kpos..kb + f]);
        self.ts[..spos].copy_from_slice(&self.node[sb..sb + spos]);
        self.ts[spos] = s;
        self.ts[spos + 1..=ns].copy_from_slice(&self.node[sb + spos..sb + ns]);

        e.ins(INS_MALLOC);
        let r = self.alloc_node(leaf, space);
        // Left keeps keys [0, lk) and slots [0, ls); right gets keys [rk, f]
        // and slots [ls, ns].
        let (lk, rk, ls, sep) = if leaf {
            let l = (f + 2) / 2;
            (l, l, l, self.tk[l])
        } else {
            let m = f.div_ceil(2);
            (m, m + 1, m + 1, self.tk[m])
        };
        // Emit: header of the new node, entries moved to it, and the entries of
        // the left half at or after the insertion point shifted in place.
        e.ins(INS_MOVE);
        e.store(self.addr(r), 8);
        let old_k = |t: usize| if t < kpos { Some(t) } else if t == kpos { None } else { Some(t - 1) };
        let old_s = |t: usize| if t < spos { Some(t) } else if t == spos { None } else { Some(t - 1) };
        for t in rk..=f {
            e.ins(INS_MOVE);
            if let Some(o) = old_k(t) {
                e.load_on(self.key_addr(n, o), 8, dn);
            }
            e.store(self.key_addr(r, t - rk), 8);
        }
        for t in ls..=ns {
            e.ins(INS_MOVE);
            if let Some(o) = old_s(t) {
                e.load_on(self.slot_addr(n, o), 8, dn);
            }
            e.store(self.slot_addr(r, t - ls), 8);
        }
        for t in kpos..lk {
            e.ins(INS_MOVE);
            if let Some(o) = old_k(t) {
                e.load_on(self.key_addr(n, o), 8, dn);
            }
            e.store_on(self.key_addr(n, t), 8, dn);
        }
        for t in spos..ls {
            e.ins(INS_MOVE);
            if let Some(o) = old_s(t) {
                e.load_on(self.slot_addr(n, o), 8, dn);
            }
            e.store_on(self.slot_addr(n, t), 8, dn);
        }
        e.ins(INS_MOVE);
        e.store_on(self.addr(n), 4, dn);
        e.store(self.addr(r), 4);

        // Host: write both halves.
        let (rkb, rsb) = (self.base(r) + 3, self.base(r) + 3 + f);
        self.node[kb..kb + lk].copy_from_slice(&self.tk[..lk]);
        self.node[rkb..rkb + (f + 1 - rk)].copy_from_slice(&self.tk[rk..=f]);
        self.node[sb..sb + ls].copy_from_slice(&self.ts[..ls]);
        self.node[rsb..rsb + (ns + 1 - ls)].copy_from_slice(&self.ts[ls..=ns]);
        self.set_nkeys(n, lk);
        self.set_nkeys(r, f + 1 - rk);
        if leaf {
            e.ins(INS_MOVE);
            e.load_on(self.next_addr(n), 8, dn);
            e.store(self.next_addr(r), 8);
            e.store_on(self.next_addr(n), 8, dn);
            let (nb, rb) = (self.base(n), self.base(r));
            self.node[rb + 2] = self.node[nb + 2];
            self.node[nb + 2] = r as u64;
        }
        (sep, r)
    }

    /// Check the B+ tree invariants; returns the number of keys.
    pub fn check(&self) -> std::result::Result<u64, String> {
        let mut count = 0u64;
        self.check_node(self.root, 1, None, None, &mut count)?;
        // The leaf chain holds every key once, in increasing order.
        let mut n = self.root;
        while !self.is_leaf(n) {
            n = self.slot(n, 0);
        }
        let (mut seen, mut last) = (0u64, None);
        while n != NIL {
            for i in 0..self.nkeys(n) {
                let k = self.key(n, i);
                if last.is_some_and(|l| l >= k) {
                    return Err(format!("leaf chain out of order at node {n}"));
                }
                last = Some(k);
                seen += 1;
            }
            n = self.next(n);
        }
        if seen != count {
            return Err(format!("leaf chain has {seen} keys, the tree {count}"));
        }
        Ok(count)
    }

    fn check_node(
        &self,
        n: u32,
        depth: u32,
        lo: Option<u64>,
        hi: Option<u64>,
        count: &mut u64,
    ) -> std::result::Result<(), String> {
        let nk = self.nkeys(n);
        let is_root = n == self.root;
        if self.is_leaf(n) != (depth == self.height) {
            return Err(format!("node {n} at depth {depth} of {}: leaf flag wrong (unbalanced)", self.height));
        }
        if !is_root && nk < self.f / 2 {
            return Err(format!("node {n} holds {nk} keys, under half of {}", self.f));
        }
        if nk > self.f || (!self.is_leaf(n) && nk == 0) {
            return Err(format!("node {n} holds {nk} keys"));
        }
        for i in 0..nk {
            let k = self.key(n, i);
            if i > 0 && self.key(n, i - 1) >= k {
                return Err(format!("node {n} keys not sorted"));
            }
            if lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h) {
                return Err(format!("node {n} key {k} outside its parent's range"));
            }
        }
        if self.is_leaf(n) {
            *count += nk as u64;
            return Ok(());
        }
        for i in 0..=nk {
            let clo = if i == 0 { lo } else { Some(self.key(n, i - 1)) };
            let chi = if i == nk { hi } else { Some(self.key(n, i)) };
            self.check_node(self.slot(n, i), depth + 1, clo, chi, count)?;
        }
        Ok(())
    }
}

pub struct BTree {
    keys: u64,
    fanout: usize,
    lookups: u64,
    miss_fraction: f64,
    emit_build: bool,
    seed: u64,
    /// Lookups that found their key (set by `run`).
    pub found: u64,
    /// Lookups whose value was not the key's (must stay 0).
    pub wrong: u64,
}

impl BTree {
    pub fn new(p: &Params) -> Result<BTree> {
        Ok(BTree {
            keys: p.count_in("keys", 1, MAX_KEYS)?,
            fanout: p.count_in("fanout", 4, 1024)? as usize,
            lookups: p.count("lookups")?,
            miss_fraction: p.real_in("miss_fraction", 0.0, 1.0)?,
            emit_build: p.flag("emit_build")?,
            seed: p.seed(),
            found: 0,
            wrong: 0,
        })
    }

    /// Build the tree (emitting into `e` only if `emit_build`); returns the
    /// tree and the key base, or None if stopped.
    fn build(&self, space: &mut AddressSpace, e: &mut Emitter, total: u64) -> Option<(Tree, u64)> {
        let mut rng = component_rng(self.seed, "workload.btree.keys");
        let base: u64 = rng.gen();
        let chunk = (node_bytes(self.fanout as u64) + 16).div_ceil(16) * 16;
        let nodes = estimate_bytes(self.keys, self.fanout as u64) / chunk;
        let mut tree = Tree::with_capacity(self.fanout, nodes as usize * 11 / 10, space);
        let mut quiet = Quiet;
        for i in 0..self.keys {
            let k = mix64(base.wrapping_add(i));
            if self.emit_build {
                e.ins(INS_LOOKUP);
                tree.insert(k, i as u32, space, e);
                if i % 4096 == 0 {
                    e.progress(i, total);
                    if e.stopped() {
                        return None;
                    }
                }
            } else {
                tree.insert(k, i as u32, space, &mut quiet);
            }
        }
        Some((tree, base))
    }
}

impl Workload for BTree {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let total = self.lookups + if self.emit_build { self.keys } else { 0 };
        let Some((tree, base)) = self.build(&mut space, e, total) else { return Ok(()) };
        let done0 = total - self.lookups;
        let mut rng = component_rng(self.seed, "workload.btree.lookups");
        let (mut found, mut wrong) = (0u64, 0u64);
        for q in 0..self.lookups {
            e.ins(INS_LOOKUP);
            let miss = self.miss_fraction > 0.0 && rng.gen::<f64>() < self.miss_fraction;
            let (k, want) = if miss {
                (mix64(base.wrapping_add(self.keys).wrapping_add(rng.gen::<u64>() >> 24)), None)
            } else {
                let i = rng.gen_range(0..self.keys);
                (mix64(base.wrapping_add(i)), Some(i as u32))
            };
            let got = tree.find(k, e);
            found += got.is_some() as u64;
            wrong += (got != want) as u64;
            if q % 4096 == 0 {
                e.progress(done0 + q, total);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(total, total);
        self.found = found;
        self.wrong = wrong;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::NullSink;
    use crate::workload::tests::{distinct_pages, emitted, params};

    fn quiet<T>(f: impl FnOnce(&mut Emitter) -> T) -> T {
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        f(&mut e)
    }

    #[test]
    fn inserted_keys_are_found_absent_keys_are_not_and_invariants_hold() {
        for (f, n) in [(4usize, 1u64), (4, 3000), (5, 3000), (16, 20_000), (64, 20_000)] {
            let mut space = AddressSpace::new();
            let mut t = Tree::new(f, &mut space);
            quiet(|e| {
                for i in 0..n {
                    assert!(t.insert(mix64(77 + i), i as u32, &mut space, e));
                }
                // Re-inserting replaces the value, adds nothing.
                assert!(!t.insert(mix64(77), 999, &mut space, e));
                assert!(!t.insert(mix64(77), 0, &mut space, e));
            });
            assert_eq!(t.check(), Ok(n), "f={f} n={n}");
            quiet(|e| {
                for i in 0..n {
                    assert_eq!(t.find(mix64(77 + i), e), Some(i as u32));
                }
                for j in 0..2000 {
                    assert_eq!(t.find(mix64(77 + n + j), e), None);
                }
            });
        }
    }

    #[test]
    fn replayed_probes_are_a_real_binary_search() {
        use crate::workload::emit::VecSink;
        let mut space = AddressSpace::new();
        let mut t = Tree::new(16, &mut space);
        quiet(|e| (0..3000u64).for_each(|i| {
            t.insert(mix64(i) >> 1, i as u32, &mut space, e);
        }));
        let mut rng = component_rng(1, "t");
        for _ in 0..2000 {
            let n = rng.gen_range(0..t.nodes()) as u32;
            let k = match rng.gen_range(0..3) {
                0 => t.key(n, rng.gen_range(0..t.nkeys(n))),
                1 => rng.gen::<u64>() >> 1,
                _ => 0,
            };
            for upper in [false, true] {
                // The search as the C program does it, reading keys.
                let mut want = VecSink::default();
                let mut e = Emitter::new(&mut want);
                e.ins(INS_NKEYS);
                e.load(t.addr(n), 4);
                let (mut lo, mut hi) = (0, t.nkeys(n));
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    e.ins(INS_PROBE);
                    e.load(t.key_addr(n, mid), 8);
                    let go_right = if upper { t.key(n, mid) <= k } else { t.key(n, mid) < k };
                    if go_right {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                e.finish();
                let mut got = VecSink::default();
                let mut e = Emitter::new(&mut got);
                let p = if upper { t.upper_bound(n, Dep::NONE, k, &mut e) } else { t.lower_bound(n, Dep::NONE, k, &mut e) };
                e.finish();
                assert_eq!(p, lo);
                assert_eq!(got.records, want.records);
            }
        }
    }

    #[test]
    fn sorted_and_reverse_insertion_keep_the_tree_valid() {
        for keys in [(0..5000u64).collect::<Vec<_>>(), (0..5000u64).rev().collect()] {
            let mut space = AddressSpace::new();
            let mut t = Tree::new(6, &mut space);
            quiet(|e| keys.iter().for_each(|&k| assert!(t.insert(k * 3 + 1, k as u32, &mut space, e))));
            assert_eq!(t.check(), Ok(5000));
            quiet(|e| {
                for k in 0..5000u64 {
                    assert_eq!(t.find(k * 3 + 1, e), Some(k as u32));
                    assert_eq!(t.find(k * 3 + 2, e), None);
                }
            });
        }
    }

    #[test]
    fn random_insertion_fills_nodes_near_ln2_and_matches_the_estimate() {
        let mut space = AddressSpace::new();
        let mut t = Tree::new(32, &mut space);
        quiet(|e| (0..200_000u64).for_each(|i| {
            t.insert(mix64(i), i as u32, &mut space, e);
        }));
        let fill = 200_000.0 / (t.nodes() as f64 * 32.0);
        assert!((0.6..0.75).contains(&fill), "fill {fill}");
        let est = estimate_bytes(200_000, 32) as f64;
        let real = space.footprint() as f64;
        assert!((est / real - 1.0).abs() < 0.1, "estimate {est} vs {real}");
    }

    #[test]
    fn workload_lookups_hit_and_miss_as_asked() {
        let p = Params::resolve(
            "btree",
            PARAMS,
            &params(&[("keys", "5000"), ("fanout", "8"), ("lookups", "4000"), ("miss_fraction", "0.25")]),
            3,
        )
        .unwrap();
        let mut w = BTree::new(&p).unwrap();
        quiet(|e| w.run(e)).unwrap();
        assert_eq!(w.wrong, 0);
        assert!((2850..3150).contains(&w.found), "found {}", w.found);
    }

    #[test]
    fn lookups_touch_the_whole_tree_and_only_load() {
        let kv = [("keys", "50000"), ("fanout", "16"), ("lookups", "200000")];
        let recs = emitted("btree", &kv, 1);
        assert!(recs.iter().all(|r| r.2 == crate::access::AccessKind::Load));
        let pages = distinct_pages(&recs) as f64;
        let est = estimate_bytes(50_000, 16) as f64 / 4096.0;
        assert!((pages / est - 1.0).abs() < 0.2, "pages {pages} vs estimate {est}");
        // Emitting the build adds its stores in front.
        let with_build = emitted("btree", &[("keys", "2000"), ("lookups", "10"), ("emit_build", "true")], 1);
        assert!(with_build.iter().any(|r| r.2 == crate::access::AccessKind::Store));
    }

    #[test]
    fn each_node_depends_on_the_child_pointer_that_named_it() {
        use crate::access::AccessKind;
        use crate::workload::tests::{check_deps, emitted_deps};
        let kv = [("keys", "20000"), ("fanout", "8"), ("lookups", "3000")];
        let (recs, deps) = emitted_deps("btree", &kv, 4);
        check_deps(&recs, &deps);
        // The tree as the workload builds it, to tell node addresses.
        let p = Params::resolve("btree", PARAMS, &params(&kv), 4).unwrap();
        let w = BTree::new(&p).unwrap();
        let mut space = AddressSpace::new();
        let (t, _) = quiet(|e| w.build(&mut space, e, 0)).unwrap();
        let chunk = node_bytes(8);
        let mut starts: Vec<(u64, u32)> = (0..t.nodes() as u32).map(|n| (t.addr(n), n)).collect();
        starts.sort_unstable();
        let node_of = |a: u64| {
            let j = starts.partition_point(|&(s, _)| s <= a).checked_sub(1)?;
            let (s, n) = starts[j];
            (a < s + chunk).then_some(n)
        };
        let mut lookups = 0;
        for (i, r) in recs.iter().enumerate() {
            assert_eq!(r.2, AccessKind::Load);
            let d = deps[i] as usize;
            if r.1 == t.tree_addr {
                // `tree->root` starts each descent: no dependency.
                assert_eq!(d, 0);
                lookups += 1;
                continue;
            }
            assert!(d > 0, "node load {i} without a dependency");
            let n = node_of(r.1).expect("a node load");
            let p = recs[i - d].1;
            if p == t.tree_addr {
                assert_eq!(n, t.root);
            } else {
                // The producer is the child-pointer slot of the parent, whose
                // value is this node.
                let parent = node_of(p).unwrap();
                let slot = ((p - t.slot_addr(parent, 0)) / 8) as usize;
                assert!(!t.is_leaf(parent));
                assert_eq!(t.slot(parent, slot), n, "record {i}");
            }
        }
        assert_eq!(lookups, 3000);
    }
}
