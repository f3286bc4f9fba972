//! Memory-aware throttling's hook in the machine (ETC's MT, decided by the
//! fault path: [`super::paging::FaultPath::throttle`]).
//!
//! When the path throttles, the upper half (rounded down) of each
//! application's SMs stops: a stopped SM issues nothing (its warps keep
//! their state, and their memory requests and faults in flight complete)
//! and takes no new thread blocks, which go to the SMs still running. When
//! the path unthrottles, each stopped SM takes the blocks it can and looks
//! for ready warps at once. The hot path pays one bool per SM tick.

use super::paging::FaultPath;
use super::GpuMachine;
use crate::stats::StatVisitor;

#[derive(Clone, Debug, Default)]
pub struct Throttle {
    /// The path may throttle (MT is on).
    enabled: bool,
    on: bool,
    /// Per SM: stopped now.
    pub stopped: Vec<bool>,
    /// The SMs MT stops, and since when they are stopped.
    victims: Vec<u32>,
    since: u64,
    sm_cycles: u64,
}

impl Throttle {
    /// `sms` SMs split among applications by `split` (SMs per application, in order).
    pub fn new(enabled: bool, sms: usize, split: &[u32]) -> Throttle {
        let mut victims = Vec::new();
        let mut first = 0;
        for &count in split {
            victims.extend(first + count - count / 2..first + count);
            first += count;
        }
        Throttle { enabled, on: false, stopped: vec![false; sms], victims, since: 0, sm_cycles: 0 }
    }

    /// Stat under `gpu.paging.`, when MT is on: SM-cycles stopped, up to the run's `end`.
    pub fn visit(&self, v: &mut dyn StatVisitor, end: u64) {
        if self.enabled {
            let open = if self.on { self.victims.len() as u64 * end.saturating_sub(self.since) } else { 0 };
            v.counter("etc.mt_throttled_sm_cycles", self.sm_cycles + open, "cycles", "SM-cycles memory-aware throttling kept SMs stopped (summed over SMs)");
        }
    }
}

impl GpuMachine {
    /// Apply the fault path's throttling decision at `t` (after a poll).
    pub(super) fn sync_throttle(&mut self, t: u64) {
        let Some(want) = self.paging.throttle() else { return };
        if want == self.throttle.on {
            return;
        }
        self.throttle.on = want;
        if want {
            self.throttle.since = t;
            for &s in &self.throttle.victims {
                self.throttle.stopped[s as usize] = true;
            }
            return;
        }
        // Stopped time after the last application ended does not count.
        let end = if self.apps.iter().all(|a| a.done) { self.cycles().max(self.throttle.since) } else { t };
        self.throttle.sm_cycles += self.throttle.victims.len() as u64 * (end - self.throttle.since);
        for i in 0..self.throttle.victims.len() {
            let s = self.throttle.victims[i];
            self.throttle.stopped[s as usize] = false;
            self.dispatch(s, t);
            self.wake(s, t);
        }
    }
}
