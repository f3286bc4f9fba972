//! A streaming multiprocessor: its resident warps and thread blocks, the
//! resources they hold, and its warp scheduler.
//!
//! ## Schedulers (`gpu.scheduler`)
//! - `gto`, greedy then oldest: keep issuing from the warp that issued
//!   last while it is ready; otherwise the ready warp resident longest
//!   (GPGPU-Sim's GTO).
//! - `lrr`, loose round-robin: the first ready warp after the one that
//!   issued last, in slot order.

use super::spec::GpuSpec;
use crate::addr::PageSize;
use crate::workload::gpu::coalesce::Coalesced;
use crate::workload::gpu::Op;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Scheduler {
    Gto,
    Lrr,
}

/// One warp slot.
#[derive(Clone, Debug)]
pub struct Warp {
    pub active: bool,
    pub app: u16,
    pub sm: u32,
    /// Its block's slot, the block's index in the kernel, and the warp's in the block.
    pub block: u32,
    pub block_index: u32,
    pub index: u32,
    pub pc: u32,
    pub addr_at: u32,
    /// Cycle it may issue again (`u64::MAX`: waiting on memory or a barrier).
    pub ready_at: u64,
    pub age: u64,
    pub at_barrier: bool,
    /// The global memory instruction in progress: pages still being translated, latest data, issue cycle, worst wait.
    pub pending: u32,
    pub done_at: u64,
    pub issued_at: u64,
    pub reason: u8,
    pub op: Op,
    /// Blocking load/store unit: the next page of the instruction to translate.
    pub next_page: u8,
    pub coalesced: Box<Coalesced>,
    /// Thread oversubscription: its block is switched out (not scheduled;
    /// `saved_ready` holds when it could issue), its instruction waits on a
    /// far fault, and it issues no earlier than `not_before` (a context restore).
    pub parked: bool,
    pub saved_ready: u64,
    pub faulted: bool,
    pub not_before: u64,
}

impl Default for Warp {
    fn default() -> Self {
        Warp {
            active: false,
            app: 0,
            sm: 0,
            block: 0,
            block_index: 0,
            index: 0,
            pc: 0,
            addr_at: 0,
            ready_at: u64::MAX,
            age: 0,
            at_barrier: false,
            pending: 0,
            done_at: 0,
            issued_at: 0,
            reason: 0,
            op: Op::Alu,
            next_page: 0,
            coalesced: Box::new(Coalesced::new(PageSize::Size4K)),
            parked: false,
            saved_ready: u64::MAX,
            faulted: false,
            not_before: 0,
        }
    }
}

impl Warp {
    /// Warp `index` of block `block_index` (in slot `block`) of application
    /// `app` becomes resident on SM `sm` at `t`.
    #[allow(clippy::too_many_arguments)]
    pub fn start(&mut self, app: u16, sm: u32, block: u32, block_index: u32, index: u32, t: u64, age: u64) {
        (self.active, self.app, self.sm, self.block, self.block_index, self.index) = (true, app, sm, block, block_index, index);
        (self.pc, self.addr_at, self.ready_at, self.age, self.at_barrier, self.pending) = (0, 0, t, age, false, 0);
        (self.parked, self.saved_ready, self.faulted, self.not_before) = (false, u64::MAX, false, 0);
    }

    /// Switched out at `t` (thread oversubscription): not scheduled until switched in.
    pub fn park(&mut self) {
        debug_assert!(!self.parked, "parked twice");
        self.parked = true;
        self.saved_ready = self.ready_at;
        self.ready_at = u64::MAX;
    }

    /// Switched in: ready when it was, but not before `not_before`.
    pub fn unpark(&mut self, not_before: u64) {
        debug_assert!(self.parked, "switched in twice");
        self.parked = false;
        self.not_before = not_before;
        self.ready_at = if self.saved_ready == u64::MAX { u64::MAX } else { self.saved_ready.max(not_before) };
        self.saved_ready = u64::MAX;
    }

    #[inline]
    fn ready(&self, t: u64) -> bool {
        self.active && self.ready_at <= t
    }
}

pub struct Sm {
    pub app: u16,
    pub next_tick: u64,
    pub issue_cycles: u64,
    /// Blocking load/store unit: the warp whose instruction holds it, and since when.
    pub ldst_hold: Option<(u32, u64)>,
    pub ldst_held_cycles: u64,
    scheduler: Scheduler,
    last: Option<u32>,
    warp_base: u32,
    /// Slots ever used (from the lowest): the schedulers scan no further
    /// (slots are taken lowest first, so oversubscription's spare slots
    /// cost nothing until used).
    span: u32,
    free_warps: Vec<u32>,
    free_blocks: Vec<u32>,
    threads: u32,
    regs: u32,
    shmem: u32,
    limits: (u32, u32, u32),
    /// Blocks and warps running (active), and their limits; with thread
    /// oversubscription the slots also hold inactive blocks.
    active_blocks: u32,
    active_warps: u32,
    block_limit: u32,
    warp_limit: u32,
    pub inactive_blocks: u32,
    resident: u32,
    resident_since: u64,
    resident_total: u64,
}

impl Sm {
    pub fn new(index: u32, app: u16, g: &GpuSpec) -> Sm {
        let (warp_slots, block_slots) = (g.warp_slots(), g.block_slots());
        let warp_base = index * warp_slots;
        let block_base = index * block_slots;
        Sm {
            app,
            next_tick: u64::MAX,
            issue_cycles: 0,
            ldst_hold: None,
            ldst_held_cycles: 0,
            scheduler: if g.scheduler == "lrr" { Scheduler::Lrr } else { Scheduler::Gto },
            last: None,
            warp_base,

            span: 0,
            free_warps: (warp_base..warp_base + warp_slots).rev().collect(),
            free_blocks: (block_base..block_base + block_slots).rev().collect(),
            threads: 0,
            regs: 0,
            shmem: 0,
            limits: (g.max_threads_per_sm, g.registers_per_sm, g.shared_memory_per_sm.0.min(u32::MAX as u64) as u32),
            active_blocks: 0,
            active_warps: 0,
            block_limit: g.max_blocks_per_sm,
            warp_limit: g.max_warps_per_sm,
            inactive_blocks: 0,
            resident: 0,
            resident_since: 0,
            resident_total: 0,
        }
    }

    /// Whether a block of `warps` warps, `threads` threads, `regs` registers and `shmem` bytes can run now.
    pub fn has_room(&self, warps: u32, threads: u32, regs: u32, shmem: u32) -> bool {
        self.has_slots(warps) && self.can_run(warps, threads, regs, shmem)
    }

    /// Whether a block of `warps` warps finds free slots (to run or to wait inactive).
    pub fn has_slots(&self, warps: u32) -> bool {
        !self.free_blocks.is_empty() && self.free_warps.len() as u32 >= warps
    }

    /// Whether the running blocks leave room for one more of this shape.
    pub fn can_run(&self, warps: u32, threads: u32, regs: u32, shmem: u32) -> bool {
        self.active_blocks < self.block_limit
            && self.active_warps + warps <= self.warp_limit
            && self.threads + threads <= self.limits.0
            && self.regs + regs <= self.limits.1
            && self.shmem + shmem <= self.limits.2
    }

    /// A block slot for a block of `warps` warps that runs (`active`) or waits inactive.
    pub fn take_block(&mut self, active: bool, warps: u32, threads: u32, regs: u32, shmem: u32) -> u32 {
        if active {
            self.activate(warps, threads, regs, shmem);
        } else {
            self.inactive_blocks += 1;
        }
        self.free_blocks.pop().expect("checked by has_slots")
    }

    /// A block with `warps` live warps starts running: it holds the SM's resources.
    pub fn activate(&mut self, warps: u32, threads: u32, regs: u32, shmem: u32) {
        self.active_blocks += 1;
        self.active_warps += warps;
        self.threads += threads;
        self.regs += regs;
        self.shmem += shmem;
    }

    /// A running block with `warps` live warps is switched out: its resources are free.
    pub fn deactivate(&mut self, warps: u32, threads: u32, regs: u32, shmem: u32) {
        self.active_blocks -= 1;
        self.active_warps -= warps;
        self.threads -= threads;
        self.regs -= regs;
        self.shmem -= shmem;
    }

    pub fn take_warp(&mut self) -> u32 {
        let w = self.free_warps.pop().expect("checked by has_slots");
        self.span = self.span.max(w - self.warp_base + 1);
        w
    }

    pub fn warps_resident(&mut self, n: u32, t: u64) {
        if self.resident == 0 && n > 0 {
            self.resident_since = t;
        }
        self.resident += n;
    }

    /// Warp `w` (of a running block) exits at `t`.
    pub fn free_warp(&mut self, w: u32, t: u64) {
        self.free_warps.push(w);
        self.active_warps -= 1;
        self.resident -= 1;
        if self.resident == 0 {
            self.resident_total += t - self.resident_since;
        }
    }

    /// Block slot `b`, which ran, ends (its warps have exited).
    pub fn free_block(&mut self, b: u32, threads: u32, regs: u32, shmem: u32, _t: u64) {
        self.deactivate(0, threads, regs, shmem);
        self.free_blocks.push(b);
    }

    /// Cycles with at least one resident warp, up to `end`.
    pub fn resident_cycles(&self, end: u64) -> u64 {
        self.resident_total + if self.resident > 0 { end.saturating_sub(self.resident_since) } else { 0 }
    }

    /// The warp to issue at `t`, by the scheduler, among the ready warps
    /// `can` lets issue (a structural hazard skips a warp, as GPGPU-Sim's
    /// schedulers do); remembers it.
    #[inline]
    pub fn pick(&mut self, warps: &[Warp], t: u64, can: impl Fn(u32) -> bool) -> Option<u32> {
        let ok = |w: u32| warps[w as usize].ready(t) && can(w);
        let chosen = match self.scheduler {
            Scheduler::Gto => match self.last.filter(|&w| ok(w)) {
                Some(w) => Some(w),
                None => {
                    // The oldest ready warp: one pass over the slots in use, no bounds checks.
                    let base = self.warp_base as usize;
                    let mut best: Option<(u64, u32)> = None;
                    for (i, x) in warps[base..base + self.span as usize].iter().enumerate() {
                        if x.active && x.ready_at <= t && best.is_none_or(|(age, _)| x.age < age) && can((base + i) as u32) {
                            best = Some((x.age, (base + i) as u32));
                        }
                    }
                    best.map(|(_, w)| w)
                }
            },
            Scheduler::Lrr => {
                // Slots past the span are empty: cycling over the span finds the same warp.
                let start = self.last.map_or(0, |w| w - self.warp_base + 1);
                (0..self.span).map(|k| self.warp_base + (start + k) % self.span).find(|&w| ok(w))
            }
        };
        if chosen.is_some() {
            self.last = chosen;
        }
        chosen
    }

    /// The earliest cycle a resident warp that `can` issue may issue, if any is not waiting.
    #[inline]
    pub fn next_ready(&self, warps: &[Warp], can: impl Fn(u32) -> bool) -> Option<u64> {
        let base = self.warp_base as usize;
        let mut best = u64::MAX;
        for (i, x) in warps[base..base + self.span as usize].iter().enumerate() {
            // u64::MAX (waiting on memory or a barrier) never beats `best`.
            if x.active && x.ready_at < best && can((base + i) as u32) {
                best = x.ready_at;
            }
        }
        (best != u64::MAX).then_some(best)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sm(sched: &str, n: u32) -> (Sm, Vec<Warp>) {
        let g = GpuSpec { scheduler: sched.into(), max_warps_per_sm: n, ..GpuSpec::default() };
        let mut sm = Sm::new(0, 0, &g);
        let mut warps = vec![Warp::default(); n as usize];
        for age in 0..n as u64 {
            let w = sm.take_warp();
            warps[w as usize].start(0, 0, 0, 0, w, 0, 10 - age);
        }
        (sm, warps)
    }

    /// The reference: a plain statement of each policy over small cases.
    fn reference(sched: &str, ready: &[bool], ages: &[u64], last: Option<u32>) -> Option<u32> {
        // `ready` already folds in whether the warp may issue.
        let n = ready.len() as u32;
        match sched {
            "gto" => {
                if let Some(l) = last.filter(|&l| ready[l as usize]) {
                    return Some(l);
                }
                let mut best: Option<u32> = None;
                for w in 0..n {
                    if ready[w as usize] && best.is_none_or(|b| ages[w as usize] < ages[b as usize]) {
                        best = Some(w);
                    }
                }
                best
            }
            _ => {
                let start = last.map_or(0, |l| l + 1);
                (0..n).map(|k| (start + k) % n).find(|&w| ready[w as usize])
            }
        }
    }

    #[test]
    fn schedulers_match_a_step_by_step_reference() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for sched in ["gto", "lrr"] {
            for _ in 0..200 {
                let n = rng.gen_range(1..9u32);
                let (mut s, mut warps) = sm(sched, n);
                let mut last = None;
                for t in 0..20u64 {
                    for w in warps.iter_mut() {
                        w.ready_at = if rng.gen_bool(0.5) { t } else { t + 1 };
                    }
                    // A structural hazard on some warps (a held load/store unit).
                    let can: Vec<bool> = (0..n).map(|_| rng.gen_bool(0.7)).collect();
                    let ready: Vec<bool> = warps.iter().zip(&can).map(|(w, &c)| w.ready_at <= t && c).collect();
                    let ages: Vec<u64> = warps.iter().map(|w| w.age).collect();
                    let want = reference(sched, &ready, &ages, last);
                    let got = s.pick(&warps, t, |w| can[w as usize]);
                    assert_eq!(got, want, "{sched} at {t}: ready {ready:?}, last {last:?}");
                    if got.is_some() {
                        last = got;
                    }
                }
            }
        }
    }

    #[test]
    fn blocks_take_and_give_back_resources() {
        let g = GpuSpec { max_warps_per_sm: 4, max_threads_per_sm: 128, ..GpuSpec::default() };
        let mut s = Sm::new(0, 0, &g);
        assert!(s.has_room(2, 64, 1000, 0));
        let b = s.take_block(true, 2, 64, 1000, 0);
        let first: Vec<u32> = (0..2).map(|_| s.take_warp()).collect();
        s.take_block(true, 2, 64, 1000, 0);
        (s.take_warp(), s.take_warp());
        s.warps_resident(4, 0);
        assert!(!s.has_room(1, 32, 0, 0), "threads are used up");
        for w in first {
            s.free_warp(w, 5);
        }
        assert!(!s.has_room(2, 64, 0, 0), "the block still holds its threads");
        s.free_block(b, 64, 1000, 0, 5);
        assert!(s.has_room(2, 64, 1000, 0));
        assert!(!s.has_room(3, 64, 1000, 0), "two warps are still running");
    }

    #[test]
    fn inactive_blocks_take_slots_but_no_resources() {
        let g = GpuSpec {
            max_warps_per_sm: 4,
            max_blocks_per_sm: 1,
            thread_oversubscription: Some(super::super::thread_oversubscription::ToSpec { max_extra_blocks: 2, ..Default::default() }),
            ..GpuSpec::default()
        };
        let mut s = Sm::new(1, 0, &g);
        assert_eq!(s.free_warps.len(), 12);
        assert_eq!(s.free_warps.last(), Some(&12), "SM 1's warp ids start after SM 0's 12");
        s.take_block(true, 4, 128, 0, 0);
        assert!(!s.can_run(1, 32, 0, 0) && s.has_slots(4));
        s.take_block(false, 4, 128, 0, 0);
        s.take_block(false, 4, 128, 0, 0);
        assert!(!s.has_slots(1), "three blocks: one running, two inactive");
        assert_eq!(s.inactive_blocks, 2);
        s.deactivate(4, 128, 0, 0);
        assert!(s.can_run(4, 128, 0, 0), "switched out: its room is free");
    }
}
