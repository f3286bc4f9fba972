//! The out-of-order model's definition (see [`super::ooo`]), transcribed
//! instruction by instruction with full arrays: the slow, obviously-correct
//! model the fast one is checked against.

use super::ooo::{MemOp, OooParams, OooTicks, Q};

/// One record of a stream.
#[derive(Clone, Copy, Debug)]
pub enum Event {
    Fetch { gap: u32, tlb: u32, walk: Option<u32> },
    Op { gap: u32, op: MemOp },
    /// `n` instructions without memory ops.
    Plain(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// max(r(last), F), in ticks.
    pub end: u64,
    pub ticks: OooTicks,
}

fn ovl(a0: u64, a1: u64, b0: u64, b1: u64) -> u64 {
    let (lo, hi) = (a0.max(b0), a1.min(b1));
    if hi > lo {
        hi - lo
    } else {
        0
    }
}

/// Book the slot that frees first (lowest index on ties) no earlier than `at`.
fn book(slots: &mut [u64], at: u64, busy: u64) -> u64 {
    let mut best = 0;
    for s in 0..slots.len() {
        if slots[s] < slots[best] {
            best = s;
        }
    }
    let start = at.max(slots[best]);
    slots[best] = start + busy;
    start
}

struct Ref {
    p: OooParams,
    d: Vec<u64>,
    r: Vec<u64>,
    /// latest done of each instruction's parts
    done: Vec<u64>,
    op_instr: Vec<usize>,
    op_done: Vec<u64>,
    walkers: Vec<u64>,
    mshrs: Vec<u64>,
    front: u64,
    t: OooTicks,
}

impl Ref {
    /// Dispatch time of the next instruction ignoring LSQ and window (None: any time).
    fn ready(&self) -> u64 {
        let k = self.d.len();
        let mut t = self.front;
        if k >= 1 {
            t = t.max(self.d[k - 1] + self.p.c);
        }
        let dw = self.p.dispatch as usize;
        if k >= dw {
            t = t.max(self.d[k - dw] + Q);
        }
        t
    }

    fn rob(&self) -> u64 {
        let k = self.d.len();
        let w = self.p.window as usize;
        if k >= w {
            self.r[k - w]
        } else {
            0
        }
    }

    fn dispatch(&mut self, lsq: u64) {
        let ready = self.ready();
        let rob = self.rob();
        if rob > ready {
            self.t.rob_full += rob - ready;
        }
        let d = ready.max(lsq).max(rob);
        self.d.push(d);
        self.done.push(d + self.p.c);
        self.r.push(0);
        self.retire();
    }

    fn retire(&mut self) {
        let k = self.d.len() - 1;
        let mut r = self.done[k];
        if k >= 1 {
            r = r.max(self.r[k - 1]);
        }
        let rw = self.p.retire as usize;
        if k >= rw {
            r = r.max(self.r[k - rw] + Q);
        }
        self.r[k] = r;
    }

    fn prev_r(&self, k: usize) -> u64 {
        if k >= 1 {
            self.r[k - 1]
        } else {
            0
        }
    }

    fn fetch(&mut self, gap: u32, tlb: u32, walk: Option<u32>) {
        for _ in 1..gap {
            self.dispatch(0);
        }
        let fs = self.ready().max(self.rob());
        let mut end = fs + tlb as u64 * Q;
        let (mut w0, mut w1) = (0, 0);
        if let Some(w) = walk {
            (w0, w1) = self.walk(end, w);
            end = w1;
        }
        let h = fs.max(self.prev_r(self.d.len()));
        if end > h {
            self.t.translation_stall += end - h;
            self.t.walk_oldest += ovl(h, end, w0, w1);
        }
        self.front = self.front.max(end);
        if gap > 0 {
            self.dispatch(0);
        }
    }

    /// Book a walk of `w` cycles ready at `at` on the walker that frees
    /// first; its start and end.
    fn walk(&mut self, at: u64, w: u32) -> (u64, u64) {
        let start = book(&mut self.walkers, at, w as u64 * Q);
        self.t.walker_wait += start - at;
        self.t.walker_busy += w as u64 * Q;
        (start, start + w as u64 * Q)
    }

    fn op(&mut self, gap: u32, op: MemOp) {
        let m = self.op_done.len();
        let l = self.p.lsq as usize;
        let new_instr = gap > 0 || self.d.is_empty();
        if new_instr {
            for _ in 1..gap {
                self.dispatch(0);
            }
            let lsq = if m >= l { self.r[self.op_instr[m - l]] } else { 0 };
            self.dispatch(lsq);
        }
        let k = self.d.len() - 1;
        let c = self.p.c;
        let mut i = self.d[k];
        if !new_instr {
            i = i.max(self.done[k] - c);
            if m >= l && self.op_instr[m - l] != k {
                i = i.max(self.r[self.op_instr[m - l]]);
            }
        }
        let dep = op.dep as usize;
        if dep > 0 && dep <= m && dep <= self.p.op_horizon() {
            i = i.max(self.op_done[m - dep]);
        }
        let mut e = i + op.tlb as u64 * Q;
        let (mut w0, mut w1) = (0, 0);
        if let Some(w) = op.walk {
            let at = if self.p.walk_at_retire { e.max(self.prev_r(k)) } else { e };
            (w0, w1) = self.walk(at, w);
            e = w1;
        }
        let done = if op.store {
            e + c
        } else {
            let exposed = op.data.saturating_sub(self.p.hidden) as u64 * Q;
            let ds = if op.l1_miss {
                let s = book(&mut self.mshrs, e, exposed);
                self.t.mshr_wait += s - e;
                s
            } else {
                e
            };
            ds + c + exposed
        };
        let h = self.prev_r(k).max(self.done[k]);
        if done > h {
            let tr = ovl(h, done, i + c, e + c);
            self.t.translation_stall += tr;
            self.t.data_stall += done - h - tr;
            self.t.walk_oldest += ovl(h, done, w0 + c, w1 + c);
        }
        self.op_instr.push(k);
        self.op_done.push(done);
        self.done[k] = self.done[k].max(done);
        self.retire();
    }
}

/// Run `events` through the model's definition.
pub fn simulate(p: OooParams, events: &[Event]) -> Outcome {
    let mut m = Ref {
        p,
        d: Vec::new(),
        r: Vec::new(),
        done: Vec::new(),
        op_instr: Vec::new(),
        op_done: Vec::new(),
        walkers: vec![0; p.walkers as usize],
        mshrs: vec![0; p.mshrs as usize],
        front: 0,
        t: OooTicks::default(),
    };
    for ev in events {
        match *ev {
            Event::Fetch { gap, tlb, walk } => m.fetch(gap, tlb, walk),
            Event::Op { gap, op } => m.op(gap, op),
            Event::Plain(n) => {
                for _ in 0..n {
                    m.dispatch(0);
                }
            }
        }
    }
    let last_r = m.r.last().copied().unwrap_or(0);
    Outcome { end: last_r.max(m.front), ticks: m.t }
}
