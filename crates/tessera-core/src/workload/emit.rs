//! The emitter: how a running workload hands its memory accesses to whoever
//! consumes them (the simulator, a trace writer, a benchmark).
//!
//! ## What it models
//! A workload calls [`Emitter::ins`] for instructions that touch no memory and
//! [`Emitter::load`] / [`Emitter::store`] for each access. Pending instructions
//! become the `ins_gap` of the next access (the convention of
//! [`crate::access`]): an access's own instruction is counted by the `ins(…)`
//! before it, so a workload that wants "one load per 3 instructions" calls
//! `ins(3)` then `load(…)`.
//!
//! ## Choices
//! - Full batches go to a [`BatchSink`]. When the sink refuses a batch (the
//!   consumer stopped: Ctrl-C, an error downstream, an access limit), the
//!   emitter drops further accesses and [`Emitter::stopped`] turns true;
//!   workloads check it in their outer loops and return early.
//! - Instructions left pending after the last access are not in the stream (a
//!   phantom access to carry them would perturb the TLBs); workloads end on an
//!   access, and [`Emitter::trailing_instructions`] reports any remainder.
//! - A gap larger than `u32::MAX` saturates (never happens in the built-in
//!   workloads, whose gaps are tens of instructions).
//! - All accesses are in ASID 0.
//! - Dependencies: [`Emitter::load_on`] / [`Emitter::store_on`] make an access
//!   whose address needs the value of an earlier load (a pointer chase, a
//!   neighbour list's entries, a hash probe's bucket), named by the [`Dep`]
//!   that load returned. The stream carries it as a distance back in records
//!   (the `dep` column of [`AccessBatch`]); a batch in which no access has
//!   one carries no column. A distance beyond `u32::MAX` records is dropped:
//!   its load retired long before any window could hold both.
//! - Only *data* dependencies are emitted: an access depends on a load when
//!   its address is computed from that load's value (a pointer, an index, an
//!   offset, a hash of a loaded key). A comparison that only steers a branch
//!   (a binary search's compare, a key compare ending a probe or a chain walk,
//!   a loop bound) is a control dependency: an out-of-order core predicts the
//!   branch and issues the next accesses speculatively, so the built-in
//!   workloads do not model it. Their accesses' addresses then depend on the
//!   structure's base (a node, a list) rather than on each other: a binary
//!   search's probes all depend on the load that gave the node, not on the
//!   probe before. Mispredictions are not modelled.
//! - An access depends on one load: where an address needs several loaded
//!   values the workload names the one loaded last (or the one that closes
//!   the chain; each module doc says which).

use crate::access::{AccessBatch, AccessKind, BATCH_LEN};

/// A load's place in the stream, for a later access whose address needs its
/// value ([`Emitter::load_on`]). [`Dep::NONE`]: no dependency.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dep(u64);

impl Dep {
    pub const NONE: Dep = Dep(0);
}

/// Where full batches go. `take` must leave `batch` empty (it may swap in a
/// recycled buffer); returning false means "stop producing".
pub trait BatchSink {
    fn take(&mut self, batch: &mut AccessBatch, progress: (u64, u64)) -> bool;
}

/// A sink that discards everything (for generator benchmarks).
pub struct NullSink;

impl BatchSink for NullSink {
    fn take(&mut self, batch: &mut AccessBatch, _progress: (u64, u64)) -> bool {
        std::hint::black_box(&batch.vaddr);
        batch.clear();
        true
    }
}

/// Accesses are staged in fixed arrays (no capacity checks on the hot path)
/// and copied into an [`AccessBatch`] when full.
pub struct Emitter<'a> {
    gaps: Box<[u32; BATCH_LEN]>,
    addrs: Box<[u64; BATCH_LEN]>,
    kinds: Box<[AccessKind; BATCH_LEN]>,
    sizes: Box<[u8; BATCH_LEN]>,
    deps: Box<[u32; BATCH_LEN]>,
    /// Whether an access of the staged batch has a dependency.
    any_dep: bool,
    len: usize,
    batch: AccessBatch,
    gap: u64,
    sink: &'a mut dyn BatchSink,
    stopped: bool,
    progress: (u64, u64),
    accesses: u64,
    instructions: u64,
}

impl<'a> Emitter<'a> {
    pub fn new(sink: &'a mut dyn BatchSink) -> Self {
        Emitter {
            gaps: Box::new([0; BATCH_LEN]),
            addrs: Box::new([0; BATCH_LEN]),
            kinds: Box::new([AccessKind::Load; BATCH_LEN]),
            sizes: Box::new([0; BATCH_LEN]),
            deps: Box::new([0; BATCH_LEN]),
            any_dep: false,
            len: 0,
            batch: AccessBatch::with_capacity(BATCH_LEN),
            gap: 0,
            sink,
            stopped: false,
            progress: (0, 0),
            accesses: 0,
            instructions: 0,
        }
    }

    /// `n` instructions retired (they land on the next access).
    #[inline(always)]
    pub fn ins(&mut self, n: u32) {
        self.gap += n as u64;
    }

    #[inline(always)]
    pub fn load(&mut self, vaddr: u64, size: u8) {
        self.push(vaddr, AccessKind::Load, size, 0);
    }

    #[inline(always)]
    pub fn store(&mut self, vaddr: u64, size: u8) {
        self.push(vaddr, AccessKind::Store, size, 0);
    }

    /// A load whose address needs the value loaded by `on`; returns its own place.
    #[inline(always)]
    pub fn load_on(&mut self, vaddr: u64, size: u8, on: Dep) -> Dep {
        let dep = self.distance(on);
        self.push(vaddr, AccessKind::Load, size, dep)
    }

    /// A store whose address needs the value loaded by `on`.
    #[inline(always)]
    pub fn store_on(&mut self, vaddr: u64, size: u8, on: Dep) {
        let dep = self.distance(on);
        self.push(vaddr, AccessKind::Store, size, dep);
    }

    /// How many records back `on` is from the next record (0: none or too far).
    #[inline(always)]
    fn distance(&self, on: Dep) -> u32 {
        if on.0 == 0 {
            return 0;
        }
        let next = self.accesses + self.len as u64;
        let d = next + 1 - on.0;
        if d <= u32::MAX as u64 {
            d as u32
        } else {
            0
        }
    }

    #[inline(always)]
    fn push(&mut self, vaddr: u64, kind: AccessKind, size: u8, dep: u32) -> Dep {
        let gap = self.gap.min(u32::MAX as u64) as u32;
        self.instructions += gap as u64;
        self.gap = 0;
        let i = self.len;
        // `len < BATCH_LEN` always holds here (flushed when it reaches it).
        self.gaps[i] = gap;
        self.addrs[i] = vaddr;
        self.kinds[i] = kind;
        self.sizes[i] = size;
        self.deps[i] = dep;
        self.any_dep |= dep != 0;
        self.len = i + 1;
        let me = Dep(self.accesses + self.len as u64);
        if self.len == BATCH_LEN {
            self.flush();
        }
        me
    }

    /// Report progress as (done, total) in the workload's own unit
    /// (operations, vertices, lookups); carried with the next batch.
    #[inline]
    pub fn progress(&mut self, done: u64, total: u64) {
        self.progress = (done, total);
    }

    /// True once the consumer has asked to stop.
    #[inline]
    pub fn stopped(&self) -> bool {
        self.stopped
    }

    #[cold]
    #[inline(never)]
    fn flush(&mut self) {
        let n = std::mem::take(&mut self.len);
        self.accesses += n as u64;
        if self.stopped {
            return;
        }
        self.batch.clear();
        self.batch.ins_gap.extend_from_slice(&self.gaps[..n]);
        self.batch.vaddr.extend_from_slice(&self.addrs[..n]);
        self.batch.kind.extend_from_slice(&self.kinds[..n]);
        self.batch.size.extend_from_slice(&self.sizes[..n]);
        self.batch.asid.resize(n, 0);
        if std::mem::take(&mut self.any_dep) {
            self.batch.dep.extend_from_slice(&self.deps[..n]);
        }
        if !self.sink.take(&mut self.batch, self.progress) {
            self.stopped = true;
            self.batch.clear();
        }
    }

    /// Send what is left. Returns (accesses, instructions) emitted.
    pub fn finish(mut self) -> (u64, u64) {
        if self.len > 0 {
            self.flush();
        }
        (self.accesses, self.instructions)
    }

    /// Instructions counted after the last access (not in the stream).
    pub fn trailing_instructions(&self) -> u64 {
        self.gap
    }
}

/// A sink that keeps everything (tests).
#[derive(Default)]
pub struct VecSink {
    pub records: Vec<(u32, u64, AccessKind, u8)>,
    /// Each record's dependency distance (0: none), parallel to `records`.
    pub deps: Vec<u32>,
    /// Stop after this many batches (0 = never).
    pub stop_after_batches: usize,
    batches: usize,
}

impl BatchSink for VecSink {
    fn take(&mut self, b: &mut AccessBatch, _progress: (u64, u64)) -> bool {
        for i in 0..b.len() {
            self.records.push((b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i]));
            self.deps.push(b.dep_of(i));
        }
        b.clear();
        self.batches += 1;
        self.stop_after_batches == 0 || self.batches < self.stop_after_batches
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gaps_attach_to_next_access_and_batches_flush() {
        let mut sink = VecSink::default();
        let mut e = Emitter::new(&mut sink);
        for i in 0..(BATCH_LEN as u64 + 5) {
            e.ins(2);
            e.load(i * 8, 8);
            e.ins(1);
            e.store(i * 8, 8);
        }
        let (acc, ins) = e.finish();
        assert_eq!(acc, 2 * (BATCH_LEN as u64 + 5));
        assert_eq!(ins, 3 * (BATCH_LEN as u64 + 5));
        assert_eq!(sink.records.len() as u64, acc);
        assert_eq!(sink.records[0], (2, 0, AccessKind::Load, 8));
        assert_eq!(sink.records[1], (1, 0, AccessKind::Store, 8));
    }

    #[test]
    fn dependency_distances_cross_batch_boundaries() {
        let mut sink = VecSink::default();
        let mut e = Emitter::new(&mut sink);
        // Fill the first batch but its last record with independent accesses.
        for i in 0..(BATCH_LEN as u64 - 2) {
            e.load(i * 8, 8);
        }
        // The producer is the batch's last record; the dependent load is the
        // next batch's first, and another 3 records later depends on it too.
        let p = e.load_on(0x1000, 8, Dep::NONE);
        e.store(0x2000, 8);
        let q = e.load_on(0x3000, 8, p);
        e.load(0x4000, 8);
        e.store_on(0x5000, 8, q);
        e.load_on(0x6000, 8, p);
        e.finish();
        let n = BATCH_LEN;
        assert_eq!(sink.records.len(), n + 4);
        assert_eq!(sink.deps.len(), n + 4);
        // No record of the first batch has a dependency (the producer has none).
        assert!(sink.deps[..n].iter().all(|&d| d == 0));
        assert_eq!(sink.records[n - 2].1, 0x1000);
        assert_eq!(sink.records[n - 1].1, 0x2000);
        assert_eq!(sink.records[n].1, 0x3000);
        assert_eq!(sink.deps[n], 2, "producer two records back, in the previous batch");
        assert_eq!(sink.deps[n + 1], 0);
        assert_eq!(sink.deps[n + 2], 2, "store on the load at n");
        assert_eq!(sink.deps[n + 3], 5, "back across the boundary to n - 2");
        assert_eq!(sink.records[n + 3 - 5].1, 0x1000);
    }

    #[test]
    fn a_batch_without_dependencies_carries_no_column() {
        struct Cols(Vec<bool>);
        impl BatchSink for Cols {
            fn take(&mut self, b: &mut AccessBatch, _: (u64, u64)) -> bool {
                self.0.push(b.has_deps());
                b.clear();
                true
            }
        }
        let mut sink = Cols(Vec::new());
        let mut e = Emitter::new(&mut sink);
        let mut p = Dep::NONE;
        for i in 0..(2 * BATCH_LEN as u64) {
            if i < BATCH_LEN as u64 {
                p = e.load_on(i * 8, 8, p);
            } else {
                e.load(i * 8, 8);
            }
        }
        e.finish();
        assert_eq!(sink.0, vec![true, false]);
    }

    #[test]
    fn refusal_stops_the_emitter() {
        let mut sink = VecSink { stop_after_batches: 1, ..Default::default() };
        let mut e = Emitter::new(&mut sink);
        let mut n = 0;
        while !e.stopped() {
            e.load(n, 8);
            n += 1;
        }
        assert_eq!(n as usize, BATCH_LEN);
        e.finish();
        assert_eq!(sink.records.len(), BATCH_LEN);
    }
}
