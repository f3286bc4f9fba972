//! Reference models for the eviction policies, and the harness that drives a
//! policy and its reference side by side.
//!
//! ## What it models
//! Each policy's rule written the obvious way over ordered `Vec`s (index 0 is
//! the head), with linear searches: slow and obviously correct. The harness
//! feeds both the same random sequence of map / touch / unmap / victim (then
//! evict the victim) events, plus the periodic scans of a policy that has
//! them, with accessed bits that a map (the faulting access) or a touch
//! sets, and compares every victim, `resident()`, the full list order and
//! the accessed bits after every event. Test-only.
//! ## Stats
//! None.

use std::collections::BTreeSet;

use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

use super::{AccessedBits, EvictionPolicy};

/// Accessed bits that are never set (for policies that ignore them).
pub struct NoBits;

impl AccessedBits for NoBits {
    fn test_and_clear(&mut self, _page: u64) -> bool {
        false
    }
}

/// One accessed bit per page, as the PTEs would hold them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TestBits {
    bits: Vec<bool>,
}

impl TestBits {
    pub fn new(frames: u64) -> Self {
        TestBits { bits: vec![false; frames as usize] }
    }
    pub fn set(&mut self, page: u64) {
        self.bits[page as usize] = true;
    }
    pub fn get(&self, page: u64) -> bool {
        self.bits[page as usize]
    }
    fn clear(&mut self, page: u64) {
        self.bits[page as usize] = false;
    }
}

impl AccessedBits for TestBits {
    fn test_and_clear(&mut self, page: u64) -> bool {
        std::mem::replace(&mut self.bits[page as usize], false)
    }
}

/// The whole ordered state of a policy, for comparison with its reference.
pub trait Snapshot {
    fn snapshot(&self) -> Vec<Vec<u64>>;
}

/// Exact LRU: most recent first.
#[derive(Default)]
pub struct RefLru {
    order: Vec<u64>,
}

impl EvictionPolicy for RefLru {
    fn on_map(&mut self, page: u64) {
        self.order.insert(0, page);
    }
    fn on_unmap(&mut self, page: u64) {
        self.order.retain(|&p| p != page);
    }
    fn wants_touches(&self) -> bool {
        true
    }
    fn on_touch(&mut self, page: u64) {
        if let Some(i) = self.order.iter().position(|&p| p == page) {
            self.order.remove(i);
            self.order.insert(0, page);
        }
    }
    fn victim(&mut self, _bits: &mut dyn AccessedBits) -> Option<u64> {
        self.order.last().copied()
    }
    fn resident(&self) -> u64 {
        self.order.len() as u64
    }
}

impl Snapshot for RefLru {
    fn snapshot(&self) -> Vec<Vec<u64>> {
        vec![self.order.clone()]
    }
}

/// CLOCK: the circle as a vector whose element 0 is under the hand.
#[derive(Default)]
pub struct RefClock {
    ring: Vec<u64>,
}

impl EvictionPolicy for RefClock {
    fn on_map(&mut self, page: u64) {
        // Just behind the hand: the last page it reaches.
        self.ring.push(page);
    }
    fn on_unmap(&mut self, page: u64) {
        // Removing element 0 leaves the hand on the next page.
        self.ring.retain(|&p| p != page);
    }
    fn wants_touches(&self) -> bool {
        false
    }
    fn on_touch(&mut self, _page: u64) {}
    fn victim(&mut self, bits: &mut dyn AccessedBits) -> Option<u64> {
        for _ in 0..=self.ring.len() {
            let p = *self.ring.first()?;
            if !bits.test_and_clear(p) {
                return Some(p);
            }
            self.ring.rotate_left(1);
        }
        unreachable!("a revolution clears every bit")
    }
    fn resident(&self) -> u64 {
        self.ring.len() as u64
    }
}

impl Snapshot for RefClock {
    fn snapshot(&self) -> Vec<Vec<u64>> {
        vec![self.ring.clone()]
    }
}

/// Two lists, head first, and the set of marked pages.
pub struct RefLinuxLike {
    inactive: Vec<u64>,
    active: Vec<u64>,
    marked: BTreeSet<u64>,
    ratio: u64,
    look_twice: bool,
}

impl RefLinuxLike {
    pub fn new(ratio: u32, look_twice: bool) -> Self {
        RefLinuxLike { inactive: Vec::new(), active: Vec::new(), marked: BTreeSet::new(), ratio: ratio as u64, look_twice }
    }
}

impl EvictionPolicy for RefLinuxLike {
    fn on_map(&mut self, page: u64) {
        self.inactive.insert(0, page);
        self.marked.remove(&page);
    }
    fn on_unmap(&mut self, page: u64) {
        self.inactive.retain(|&p| p != page);
        self.active.retain(|&p| p != page);
        self.marked.remove(&page);
    }
    fn wants_touches(&self) -> bool {
        false
    }
    fn on_touch(&mut self, _page: u64) {}
    fn victim(&mut self, bits: &mut dyn AccessedBits) -> Option<u64> {
        loop {
            while (self.inactive.len() as u64) * self.ratio < self.active.len() as u64 {
                let p = self.active.pop().unwrap();
                bits.test_and_clear(p);
                self.inactive.insert(0, p);
            }
            let p = *self.inactive.last()?;
            let accessed = bits.test_and_clear(p);
            let was_marked = self.marked.remove(&p);
            if !accessed {
                return Some(p);
            }
            self.marked.insert(p);
            self.inactive.pop();
            if was_marked || !self.look_twice {
                self.active.insert(0, p);
            } else {
                self.inactive.insert(0, p);
            }
        }
    }
    fn resident(&self) -> u64 {
        (self.inactive.len() + self.active.len()) as u64
    }
}

impl Snapshot for RefLinuxLike {
    fn snapshot(&self) -> Vec<Vec<u64>> {
        vec![self.inactive.clone(), self.active.clone(), self.marked.iter().copied().collect()]
    }
}

/// Horizon LRU: resident pages with their last use and the order in which
/// they were last made most recent; the victim is the smallest (time, order).
pub struct RefHorizon {
    /// (page, last use, sequence number of the last refresh).
    pages: Vec<(u64, u64, u64)>,
    now: u64,
    horizon: u64,
    seq: u64,
    sampled: Option<RefSampler>,
}

struct RefSampler {
    period: u64,
    next_scan: u64,
    hot: u32,
    flush: bool,
    rng: crate::rng::SimRng,
    history: std::collections::BTreeMap<u64, u8>,
    f0: std::collections::BTreeMap<u64, i32>,
}

impl RefHorizon {
    pub fn new(cfg: super::horizon::Config, _frames: u64, seed: u64) -> Self {
        let sampled = (cfg.scan == super::horizon::Scan::LinuxSampled).then(|| {
            let period = cfg.period().unwrap();
            RefSampler {
                period,
                next_scan: period,
                hot: cfg.hot_sample_percent,
                flush: cfg.flush,
                rng: crate::rng::component_rng(seed, "os.eviction.horizon"),
                history: Default::default(),
                f0: Default::default(),
            }
        });
        RefHorizon { pages: Vec::new(), now: 0, horizon: 0, seq: 0, sampled }
    }

    fn refresh(&mut self, page: u64) {
        let (now, seq) = (self.now, self.seq);
        if let Some(e) = self.pages.iter_mut().find(|e| e.0 == page) {
            e.1 = now;
            e.2 = seq;
            self.seq += 1;
        }
    }

    fn sorted(&self) -> Vec<(u64, u64, u64)> {
        let mut v = self.pages.clone();
        v.sort_by_key(|e| std::cmp::Reverse(e.2));
        v
    }
}

impl EvictionPolicy for RefHorizon {
    fn on_map(&mut self, page: u64) {
        self.pages.push((page, self.now, self.seq));
        self.seq += 1;
        if let Some(s) = &mut self.sampled {
            s.history.insert(page, 0);
            s.f0.insert(page, 0);
        }
    }
    fn on_unmap(&mut self, page: u64) {
        self.pages.retain(|e| e.0 != page);
    }
    fn on_evict(&mut self, page: u64) {
        if let Some(&(_, t, _)) = self.pages.iter().find(|e| e.0 == page) {
            self.horizon = self.horizon.max(t);
        }
        self.on_unmap(page);
    }
    fn wants_touches(&self) -> bool {
        true
    }
    fn on_touch(&mut self, page: u64) {
        if self.sampled.is_none() {
            self.refresh(page);
        }
        self.now += 1;
    }
    fn victim(&mut self, _bits: &mut dyn AccessedBits) -> Option<u64> {
        self.pages.iter().min_by_key(|e| (e.1, e.2)).map(|e| e.0)
    }
    fn resident(&self) -> u64 {
        self.pages.len() as u64
    }
    fn scans(&self) -> bool {
        self.sampled.is_some()
    }
    fn scan_due(&self) -> bool {
        self.sampled.as_ref().is_some_and(|s| self.now >= s.next_scan)
    }
    fn scan(&mut self, bits: &mut dyn AccessedBits) {
        use rand::Rng;
        let mut order: Vec<u64> = self.pages.iter().map(|e| e.0).collect();
        order.sort_unstable();
        let mut s = self.sampled.take().unwrap();
        for p in order {
            let hot = s.f0[&p] >= 0;
            let accessed = if hot && s.rng.gen_range(0..100) >= s.hot { true } else if s.flush { bits.test_and_clear_flush(p) } else { bits.test_and_clear(p) };
            let h = s.history.get_mut(&p).unwrap();
            *h = *h << 1 | accessed as u8;
            let f1 = 100 * h.count_ones() as i32 - 480;
            let f0 = s.f0.get_mut(&p).unwrap();
            *f0 = (70 * *f0 + 30 * f1 / 100) / 100;
            if accessed {
                self.refresh(p);
            }
        }
        s.next_scan = self.now + s.period;
        self.sampled = Some(s);
    }
}

impl Snapshot for RefHorizon {
    fn snapshot(&self) -> Vec<Vec<u64>> {
        let order = self.sorted();
        let mut v = vec![order.iter().map(|e| e.0).collect(), order.iter().map(|e| e.1).collect(), vec![self.horizon, self.now]];
        v.push(order.iter().filter(|e| e.1 < self.horizon).map(|e| e.0).collect());
        if let Some(s) = &self.sampled {
            v.push(order.iter().map(|e| s.f0[&e.0] as i64 as u64).collect());
            v.push(order.iter().map(|e| s.history[&e.0] as u64).collect());
        }
        v
    }
}

/// Whole-chunk eviction: chunks holding resident pages, most recent first,
/// each with its resident pages in the order they were mapped.
pub struct RefRootChunk {
    chunks: Vec<(u64, Vec<u64>)>,
    shift: u32,
    access: bool,
    emptied: u64,
}

impl RefRootChunk {
    pub fn new(shift: u32, access: bool) -> Self {
        RefRootChunk { chunks: Vec::new(), shift, access, emptied: 0 }
    }

    fn make_most_recent(&mut self, chunk: u64) {
        if let Some(i) = self.chunks.iter().position(|e| e.0 == chunk) {
            let e = self.chunks.remove(i);
            self.chunks.insert(0, e);
        }
    }

    /// Take the page off; true if it was resident and its chunk is left empty.
    fn take(&mut self, page: u64) -> bool {
        let c = page >> self.shift;
        let Some(i) = self.chunks.iter().position(|e| e.0 == c) else { return false };
        let before = self.chunks[i].1.len();
        self.chunks[i].1.retain(|&p| p != page);
        if self.chunks[i].1.is_empty() {
            self.chunks.remove(i);
            return before == 1;
        }
        false
    }
}

impl EvictionPolicy for RefRootChunk {
    fn on_map(&mut self, page: u64) {
        let c = page >> self.shift;
        match self.chunks.iter_mut().find(|e| e.0 == c) {
            Some(e) => e.1.push(page),
            None => self.chunks.push((c, vec![page])),
        }
        self.make_most_recent(c);
    }
    fn on_unmap(&mut self, page: u64) {
        self.take(page);
    }
    fn on_evict(&mut self, page: u64) {
        if self.take(page) {
            self.emptied += 1;
        }
    }
    fn wants_touches(&self) -> bool {
        self.access
    }
    fn on_touch(&mut self, page: u64) {
        let c = page >> self.shift;
        if self.access && self.chunks.iter().any(|e| e.0 == c && e.1.contains(&page)) {
            self.make_most_recent(c);
        }
    }
    fn victim(&mut self, _bits: &mut dyn AccessedBits) -> Option<u64> {
        self.chunks.last().map(|e| e.1[0])
    }
    fn resident(&self) -> u64 {
        self.chunks.iter().map(|e| e.1.len() as u64).sum()
    }
    fn eviction_unit_frames(&self) -> u64 {
        1 << self.shift
    }
}

impl Snapshot for RefRootChunk {
    fn snapshot(&self) -> Vec<Vec<u64>> {
        let mut v = vec![self.chunks.iter().map(|e| e.0).collect()];
        v.extend(self.chunks.iter().map(|e| e.1.clone()));
        v.push(vec![self.emptied]);
        v
    }
}

/// One event of the harness; page numbers are taken modulo the capacity.
#[derive(Clone, Debug)]
pub enum Op {
    /// Map the page if it is not resident (and set its accessed bit).
    Map(u64),
    /// Access the page: set its accessed bit if resident; `on_touch` either way.
    Touch(u64),
    /// Unmap the page (resident or not).
    Unmap(u64),
    /// Ask for a victim and evict it: with an eviction unit above one
    /// frame, every resident page of the victim's unit, in frame order (as
    /// the OS does).
    Evict,
    /// Ask for a victim and leave it resident.
    Victim,
}

/// Up to `len` random events over pages `0 .. pages`.
pub fn ops(pages: u64, len: usize) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        4 => (0..pages).prop_map(Op::Map),
        6 => (0..pages).prop_map(Op::Touch),
        1 => (0..pages).prop_map(Op::Unmap),
        3 => Just(Op::Evict),
        1 => Just(Op::Victim),
    ];
    prop::collection::vec(op, 0..len)
}

/// Drive `policy` and `reference` with `ops` over `cap` frames, comparing
/// victims, residency, full state and accessed bits after every event.
pub fn run<P, R>(mut policy: P, mut reference: R, cap: u64, ops: &[Op]) -> Result<(), TestCaseError>
where
    P: EvictionPolicy + Snapshot,
    R: EvictionPolicy + Snapshot,
{
    prop_assert_eq!(policy.wants_touches(), reference.wants_touches());
    let unit = policy.eviction_unit_frames();
    prop_assert_eq!(unit, reference.eviction_unit_frames());
    prop_assert!(unit.is_power_of_two());
    let (mut bp, mut br) = (TestBits::new(cap), TestBits::new(cap));
    let mut resident = vec![false; cap as usize];
    let mut count = 0u64;
    for (step, op) in ops.iter().enumerate() {
        match *op {
            Op::Map(p) => {
                let p = p % cap;
                if !resident[p as usize] {
                    resident[p as usize] = true;
                    count += 1;
                    policy.on_map(p);
                    reference.on_map(p);
                    bp.set(p);
                    br.set(p);
                }
            }
            Op::Touch(p) => {
                let p = p % cap;
                if resident[p as usize] {
                    bp.set(p);
                    br.set(p);
                }
                if policy.wants_touches() {
                    policy.on_touch(p);
                    reference.on_touch(p);
                }
                // A periodic scan falls due on the clock of touches.
                if policy.scans() && policy.scan_due() {
                    policy.scan(&mut bp);
                }
                if reference.scans() && reference.scan_due() {
                    reference.scan(&mut br);
                }
            }
            Op::Unmap(p) => {
                let p = p % cap;
                if std::mem::replace(&mut resident[p as usize], false) {
                    count -= 1;
                }
                policy.on_unmap(p);
                reference.on_unmap(p);
                bp.clear(p);
                br.clear(p);
            }
            Op::Evict | Op::Victim => {
                let v = policy.victim(&mut bp);
                prop_assert_eq!(v, reference.victim(&mut br), "step {}: {:?}", step, op);
                prop_assert_eq!(v.is_none(), count == 0, "step {}", step);
                if let (Some(v), Op::Evict) = (v, op) {
                    prop_assert!(resident[v as usize], "step {}: victim {} is not resident", step, v);
                    let base = v & !(unit - 1);
                    let pages: Vec<u64> = if unit == 1 { vec![v] } else { (base..(base + unit).min(cap)).filter(|&p| resident[p as usize]).collect() };
                    for p in pages {
                        resident[p as usize] = false;
                        count -= 1;
                        policy.on_evict(p);
                        reference.on_evict(p);
                        bp.clear(p);
                        br.clear(p);
                    }
                }
            }
        }
        prop_assert_eq!(policy.resident(), count, "step {}: {:?}", step, op);
        prop_assert_eq!(reference.resident(), count, "step {}: {:?}", step, op);
        prop_assert_eq!(policy.snapshot(), reference.snapshot(), "step {}: {:?}", step, op);
        prop_assert_eq!(&bp, &br, "step {}: {:?}", step, op);
    }
    Ok(())
}
