//! Thread oversubscription in the machine: which warps wait on far faults,
//! and switching thread blocks in and out of an SM
//! ([`super::thread_oversubscription`] has the mechanism and its choices).
//!
//! A warp waits on a far fault from the moment a walk for one of its pages
//! finds the page not present (or migrating), until its memory instruction
//! completes. Warps that join the wait later (merging into a TLB miss that
//! already waits on a fault) are marked as they join.

use super::events::Event;
use super::paging::FaultPath;
use super::{BlockSlot, GpuMachine};

/// Every live warp of the block waits on a far fault, or at a barrier behind one that does.
fn stalled(b: &BlockSlot) -> bool {
    b.faulted > 0 && b.faulted + b.at_barrier >= b.live_warps
}

impl GpuMachine {
    /// L2 TLB miss `m` waits on a far fault: so does every warp waiting for it.
    pub(super) fn faulted_miss(&mut self, m: u32, t: u64) {
        let mut l1s = std::mem::take(&mut self.fault_l1s);
        l1s.clear();
        l1s.extend_from_slice(&self.l2_mshrs.get(m).waiters);
        for &(s, id) in &l1s {
            self.faulted_l1(s, id, t);
        }
        self.fault_l1s = l1s;
    }

    /// SM `s`'s L1 TLB miss `id` waits on a far fault.
    pub(super) fn faulted_l1(&mut self, s: u32, id: u32, t: u64) {
        let e = self.l1_mshrs[s as usize].get_mut(id);
        e.faulted = true;
        let mut warps = std::mem::take(&mut self.fault_warps);
        warps.clear();
        warps.extend(e.waiters.iter().map(|p| p.warp));
        for &w in &warps {
            self.faulted_warp(w, t);
        }
        self.fault_warps = warps;
    }

    /// Warp `w`'s instruction waits on a far fault from `t`: if that stalls
    /// its whole block, switch the block out.
    pub(super) fn faulted_warp(&mut self, w: u32, t: u64) {
        let warp = &mut self.warps[w as usize];
        if warp.faulted || !warp.active {
            return;
        }
        warp.faulted = true;
        let (s, b) = (warp.sm, warp.block);
        let blk = &mut self.blocks[b as usize];
        blk.faulted += 1;
        if !blk.inactive && stalled(blk) {
            self.switch_out(s, b, t);
        }
    }

    /// Warp `w`'s instruction, which waited on a far fault, completed at `t`.
    pub(super) fn fault_served(&mut self, w: u32, t: u64) {
        let warp = &mut self.warps[w as usize];
        warp.faulted = false;
        let (s, b) = (warp.sm, warp.block);
        let blk = &mut self.blocks[b as usize];
        blk.faulted -= 1;
        if blk.inactive && blk.faulted == 0 {
            // A switched-out block is ready again: it replaces an active block that is stalled.
            if let Some(victim) = self.oldest(s, |x| !x.inactive && stalled(x)) {
                self.switch_out(s, victim, t);
            }
        }
    }

    /// The live block of SM `s` dispatched first among those `keep` accepts.
    fn oldest(&self, s: u32, keep: impl Fn(&BlockSlot) -> bool) -> Option<u32> {
        let n = self.gpu.block_slots();
        (s * n..(s + 1) * n).filter(|&b| self.blocks[b as usize].live_warps > 0 && keep(&self.blocks[b as usize])).min_by_key(|&b| self.blocks[b as usize].order)
    }

    /// Active block `b` of SM `s` is stalled on faults at `t`: swap it for
    /// the oldest ready inactive block, if there is one.
    fn switch_out(&mut self, s: u32, b: u32, t: u64) {
        let Some(incoming) = self.oldest(s, |x| x.inactive && x.faulted == 0) else { return };
        let to = self.to.as_mut().expect("thread oversubscription is on");
        let out = &mut self.blocks[b as usize];
        let save = to.spec.context_cycles(out.regs, out.shmem);
        to.stats.switches += 1;
        to.stats.save_cycles += save;
        out.inactive = true;
        for &w in &out.warps {
            let warp = &mut self.warps[w as usize];
            // A warp that exited may have lent its slot to another block.
            if warp.active && warp.block == b {
                warp.park();
            }
        }
        let sm = &mut self.sms[s as usize];
        sm.deactivate(out.live_warps, out.threads, out.regs, out.shmem);
        sm.inactive_blocks += 1;
        self.switch_in(s, incoming, t + save);
    }

    /// Inactive block `b` of SM `s` runs from `t` (once its context, if it
    /// has one, is restored).
    fn switch_in(&mut self, s: u32, b: u32, t: u64) {
        let to = self.to.as_mut().expect("thread oversubscription is on");
        let blk = &mut self.blocks[b as usize];
        let restore = if blk.started { to.spec.context_cycles(blk.regs, blk.shmem) } else { 0 };
        to.stats.restore_cycles += restore;
        blk.inactive = false;
        blk.started = true;
        let sm = &mut self.sms[s as usize];
        sm.inactive_blocks -= 1;
        sm.activate(blk.live_warps, blk.threads, blk.regs, blk.shmem);
        let mut first = u64::MAX;
        for &w in &blk.warps {
            let warp = &mut self.warps[w as usize];
            if warp.active && warp.block == b {
                warp.unpark(t + restore);
                first = first.min(warp.ready_at);
            }
        }
        if first != u64::MAX {
            self.wake(s, first);
        }
    }

    /// Room to run a block freed on SM `s` at `t`: it goes to the oldest
    /// ready inactive block; else, when the kernel has no new block left,
    /// to the oldest inactive block (they all wait on faults).
    pub(super) fn run_inactive(&mut self, s: u32, t: u64) {
        let a = self.sms[s as usize].app as usize;
        loop {
            let fresh = self.apps[a].kernel.as_ref().is_some_and(|k| self.apps[a].next_block < k.blocks.len());
            let pick = self.oldest(s, |x| x.inactive && x.faulted == 0).or_else(|| if fresh { None } else { self.oldest(s, |x| x.inactive) });
            let Some(b) = pick else { return };
            let blk = &self.blocks[b as usize];
            if !self.sms[s as usize].can_run(blk.live_warps, blk.threads, blk.regs, blk.shmem) {
                return;
            }
            self.switch_in(s, b, t);
        }
    }

    /// A degree-control epoch ends at `t`: when the controller allows more
    /// inactive blocks, every SM takes them.
    pub(super) fn to_epoch(&mut self, t: u64) {
        let lifetimes = self.paging.lifetimes();
        let to = self.to.as_mut().expect("thread oversubscription is on");
        let epoch = to.spec.epoch_cycles;
        if to.epoch(lifetimes) {
            for s in 0..self.sms.len() as u32 {
                // An SM memory-aware throttling stopped takes blocks when it runs again.
                if self.sms[s as usize].app != u16::MAX && !self.throttle.stopped[s as usize] {
                    self.dispatch(s, t);
                }
            }
        }
        // Only while the run goes on: the last epoch ends with the run.
        if !self.events.is_empty() {
            self.events.at(t + epoch, Event::ToEpoch);
        }
    }
}
