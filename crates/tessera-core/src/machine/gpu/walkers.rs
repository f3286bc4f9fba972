//! The shared, highly threaded page-table walker: `concurrent` walk slots
//! and a FIFO queue of L2 TLB misses waiting for one. Each slot holds a
//! walk cursor of the memory system; the machine serves its references.
//! Also the state of every L2 TLB miss (queued, walking, waiting for its
//! page, answered), indexed by the miss's MSHR id.

use std::collections::VecDeque;

use crate::addr::PageSize;
use crate::stats::StatVisitor;
use crate::walker::WalkCursor;

/// Where an L2 TLB miss stands.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum MissState {
    /// Answered (its MSHR slot is free or reused).
    Done,
    /// Waiting for a walker slot since a cycle.
    Queued { since: u64 },
    Walking,
    /// Translated (a mapping exists) but the page is still coming from the
    /// host; `faulted` if this miss raised the fault.
    Waiting { page_va: u64, pfn_base: u64, size: PageSize, faulted: bool },
}

#[derive(Clone, Debug)]
pub struct WalkSlot {
    pub cursor: Option<WalkCursor>,
    /// Cycle the reference in flight was made.
    pub ref_at: u64,
    miss: u32,
    started: u64,
}

#[derive(Clone, Debug, Default)]
pub struct WalkerStats {
    pub walks: u64,
    pub refs: u64,
    pub walk_cycles: u64,
    pub queue_cycles: u64,
    pub queued: u64,
    pub peak_queue: u64,
    pub peak_walks: u64,
    pub faults: u64,
}

pub struct Walkers {
    slots: Vec<WalkSlot>,
    free: Vec<u32>,
    queue: VecDeque<u32>,
    states: Vec<MissState>,
    /// Per miss: it raised a far fault (its requesters waited for the host).
    faulted: Vec<bool>,
    pub stats: WalkerStats,
}

impl Walkers {
    pub fn new(concurrent: u32) -> Walkers {
        Walkers {
            slots: (0..concurrent).map(|_| WalkSlot { cursor: None, ref_at: 0, miss: 0, started: 0 }).collect(),
            // Lowest slot first.
            free: (0..concurrent).rev().collect(),
            queue: VecDeque::new(),
            states: Vec::new(),
            faulted: Vec::new(),
            stats: WalkerStats::default(),
        }
    }

    #[inline]
    pub fn state(&self, m: u32) -> MissState {
        self.states.get(m as usize).copied().unwrap_or(MissState::Done)
    }

    #[inline]
    pub fn set_state(&mut self, m: u32, s: MissState) {
        if self.states.len() <= m as usize {
            self.states.resize(m as usize + 1, MissState::Done);
        }
        self.states[m as usize] = s;
    }

    /// Miss `m` raised a far fault.
    pub fn set_faulted(&mut self, m: u32) {
        if self.faulted.len() <= m as usize {
            self.faulted.resize(m as usize + 1, false);
        }
        self.faulted[m as usize] = true;
    }

    /// Whether miss `m` raised a far fault; forgets it (the miss is answered).
    pub fn take_faulted(&mut self, m: u32) -> bool {
        self.faulted.get_mut(m as usize).is_some_and(std::mem::take)
    }

    /// The page a miss waits for: (first byte, first frame, size).
    pub fn waiting(&self, m: u32) -> (u64, u64, PageSize) {
        match self.state(m) {
            MissState::Waiting { page_va, pfn_base, size, .. } => (page_va, pfn_base, size),
            other => unreachable!("miss {m} is not waiting for a page: {other:?}"),
        }
    }

    pub fn take_slot(&mut self) -> Option<u32> {
        let s = self.free.pop();
        let busy = (self.slots.len() - self.free.len()) as u64;
        self.stats.peak_walks = self.stats.peak_walks.max(busy);
        s
    }

    pub fn release(&mut self, slot: u32) {
        self.free.push(slot);
    }

    pub fn queue(&mut self, m: u32) {
        self.queue.push_back(m);
        self.stats.queued += 1;
        self.stats.peak_queue = self.stats.peak_queue.max(self.queue.len() as u64);
    }

    /// Take miss `m` out of the queue (a walk answered it).
    pub fn unqueue(&mut self, m: u32) {
        if let Some(i) = self.queue.iter().position(|&q| q == m) {
            self.queue.remove(i);
        }
    }

    pub fn next_queued(&mut self) -> Option<u32> {
        self.queue.pop_front()
    }

    /// Slot `slot` starts walking for miss `m` at `t`.
    pub fn begin(&mut self, slot: u32, m: u32, t: u64) {
        if let MissState::Queued { since } = self.state(m) {
            self.stats.queue_cycles += t - since;
        }
        self.set_state(m, MissState::Walking);
        self.stats.walks += 1;
        let s = &mut self.slots[slot as usize];
        (s.miss, s.started) = (m, t);
    }

    /// Slot `slot`'s walk ended at `t`: the miss it walked for.
    pub fn end(&mut self, slot: u32, t: u64) -> u32 {
        let s = &mut self.slots[slot as usize];
        self.stats.walk_cycles += t - s.started;
        s.cursor = None;
        s.miss
    }

    /// The cycle slot `slot`'s walk began.
    pub fn started(&self, slot: u32) -> u64 {
        self.slots[slot as usize].started
    }

    /// The earliest start of a walk in flight, if any.
    pub fn oldest_start(&self) -> Option<u64> {
        self.slots.iter().filter(|s| s.cursor.is_some()).map(|s| s.started).min()
    }

    #[inline]
    pub fn slot_mut(&mut self, slot: u32) -> &mut WalkSlot {
        &mut self.slots[slot as usize]
    }

    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let s = &self.stats;
        v.counter("walks", s.walks, "walks", "page walks made (replays after a far fault included)");
        v.counter("refs", s.refs, "references", "page-table references the walks made through the L2 cache");
        v.counter("walk_cycles", s.walk_cycles, "cycles", "cycles from a walk's start to its end, summed (mean latency = walk_cycles / walks)");
        v.counter("queue_cycles", s.queue_cycles, "cycles", "cycles misses waited for a walker slot, summed");
        v.counter("queued", s.queued, "walks", "misses that found every walker slot busy");
        v.gauge("peak_queue", s.peak_queue, "walks", "most misses waiting for a slot at once");
        v.gauge("peak_walks", s.peak_walks, "walks", "most walks in flight at once");
        v.counter("faults", s.faults, "faults", "walks that found the page not present (far faults raised)");
    }
}
