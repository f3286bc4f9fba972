//! The GPU machine's event queue: events ordered by (cycle, sequence
//! number), so two events of one cycle run in the order they were
//! scheduled and a run is deterministic. Events are a small `Copy` enum
//! handled by one `match` in the machine: no dynamic dispatch per event.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// What happens at an event's cycle.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Event {
    /// SM `0` issues from its ready warps.
    SmTick(u32),
    /// SM `0`'s L1 TLB miss (its MSHR `1`) reaches the shared L2 TLB.
    L2Tlb(u32, u32),
    /// Walker slot `0`'s reference has been served.
    WalkRef(u32),
    /// The far fault of L2 miss `0` was serviced: it walks again.
    FaultServiced(u32),
    /// The translation of L2 miss `0` reached a page still in flight from the host: deliver it now.
    Deliver(u32),
    /// The fault path asked to be polled (a batch ending).
    FaultPoll,
    /// A degree-control epoch of thread oversubscription ends.
    ToEpoch,
}

/// A calendar of events by (cycle, sequence).
#[derive(Default)]
pub struct EventQueue {
    heap: BinaryHeap<Reverse<(u64, u64, Event)>>,
    seq: u64,
}

impl EventQueue {
    /// Schedule `e` at `cycle`.
    #[inline]
    pub fn at(&mut self, cycle: u64, e: Event) {
        self.seq += 1;
        self.heap.push(Reverse((cycle, self.seq, e)));
    }

    /// The earliest event, removed.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.heap.pop().map(|Reverse((c, _, e))| (c, e))
    }

    /// The earliest event if it is before `cycle`, removed.
    #[inline]
    pub fn pop_before(&mut self, cycle: u64) -> Option<(u64, Event)> {
        match self.heap.peek() {
            Some(Reverse((c, _, _))) if *c < cycle => self.pop(),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }

    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_come_out_by_cycle_then_in_scheduling_order() {
        let mut q = EventQueue::default();
        q.at(5, Event::SmTick(1));
        q.at(3, Event::WalkRef(0));
        q.at(5, Event::SmTick(0));
        q.at(3, Event::FaultPoll);
        let got: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(got, vec![(3, Event::WalkRef(0)), (3, Event::FaultPoll), (5, Event::SmTick(1)), (5, Event::SmTick(0))]);
    }
}
