//! An analytic out-of-order CPU timing model (`timing.kind = "ooo"`).
//!
//! ## What it models
//! A core whose memory operations overlap: a reorder window, dispatch and
//! retire widths, a load/store queue, L1D miss-status holding registers
//! (MSHRs) and page walkers as limited slots. It is event-light: the
//! machine hands it one event per access record (and the instructions
//! between them), never a cycle-by-cycle pipeline.
//!
//! ## Definition
//! Time is integer ticks, `Q` = 256 ticks per cycle; `c = round(base_cpi × Q)`,
//! latencies are whole cycles × `Q`. Instructions are numbered k = 0, 1, ... in
//! program order. A record carries `gap` instructions ending with its own
//! event; a memory record with gap 0 is another memory op of the current
//! instruction (the second page of a page-crossing access), a fetch record
//! with gap 0 delays the next instruction. A gap-0 record before any
//! instruction opens instruction 0.
//!
//! - Dispatch: `d(k) = max(d(k−1) + c, d(k−D) + Q, r(k−W), F, lsq(k))`, with
//!   `D` = `dispatch_width`, `W` = `window`, `F` the front end's ready time.
//!   `lsq(k)`: for an instruction whose record is a memory op, `r` of the
//!   instruction of the memory op `L` (= `lsq`) memory ops earlier. A further
//!   op of the same instruction (gap 0) waits for its LSQ entry at its issue
//!   instead, and never for an op of its own instruction.
//! - The parts of one instruction are serial: a further op issues no earlier
//!   than `done − c` of the part before it (a split access makes its two
//!   accesses one after the other).
//! - A non-memory instruction is done at `d(k) + c`.
//! - A memory op issues at `i = max(d(k), done(dep), [lsq at issue])`, its
//!   dependency being an earlier memory op, at most `H` ops back (H is the op
//!   ring's size, ≥ 2W and > L; a farther dependency is dropped: its op
//!   retired before the window held this one, unless instructions carry many
//!   ops each).
//! - Translation: the TLB probe latency `t`; on a miss of every level a walk
//!   of `w` cycles takes one of `P` (= `walkers`) walkers: it starts at
//!   `max(i + t, the walker's free time [, r(k−1) with walk_at_retire])`, and
//!   the walker is busy until it ends. Translation ends at `e`.
//! - Data: a load that misses the L1D takes one of `M` (= `mshrs`) MSHRs:
//!   data starts at `ds = max(e, the MSHR's free time)`, the MSHR being busy
//!   for the exposed latency (see below). A hit starts at `ds = e`.
//! - `done = ds + c + exposed`, the exposed latency being the latency beyond
//!   the L1D hit when `l1_hit_in_cpi` (as in the interval model: the L1D
//!   lookup is part of the instruction's own cycle, and a miss holds its MSHR
//!   from the lookup until the fill).
//! - Stores retire without waiting for their data (the store buffer drains
//!   them later, not modelled): `done = e + c`, and they take no MSHR.
//! - Retire: `r(k) = max(r(k−1), done(k), r(k−R) + Q)`, `R` = `retire_width`;
//!   `done(k)` is the latest of its ops'.
//! - Instruction fetch translation delays the front end: it starts when the
//!   instruction it fetches could dispatch otherwise,
//!   `fs = max(d(k−1) + c, d(k−D) + Q, r(k−W), F)`, takes `t` (and a walk on
//!   a walker, never deferred to retirement: the fetch is not in the window),
//!   and sets `F` to its end.
//! - `cycles = ceil(max(r(last), F) / Q)`.
//!
//! Slots (walkers, MSHRs) are booked in program order, each op taking the
//! slot that frees earliest (ties: lowest index): a program-order
//! allocation, not oldest-ready arbitration, so a younger op never takes a
//! slot an older one is waiting for.
//!
//! Consequences (tested in `ooo_tests.rs`): with W = D = R = 1 and a whole
//! `c`, cycles equal the interval model's; a dependent chain of N DRAM misses
//! costs N latencies; N independent misses with M MSHRs cost ⌈N/M⌉
//! latencies; P walkers bound overlapping walks the same way.
//!
//! ## Stall accounting
//! An op's head time is the time it is the oldest unretired instruction and
//! not done: from `max(r(k−1), d(k) + c, done of earlier ops of k)` to its
//! `done`. Its completion is `d + c` delayed, end to end, by its dependency
//! wait, its translation (walker wait and walk within it), its MSHR wait and
//! its exposed latency; the head time inside the translation's stretch
//! (`[i + c, e + c)`) is `translation_stall_cycles`, inside the walk's
//! `walk_oldest_cycles`, the rest `data_stall_cycles`. A fetch stalls the
//! core from `max(fs, r(k−1))` (the window ran dry) until `F`, all of it
//! translation. Counters add ticks and are rounded to cycles at the end.
//! `walker_busy_cycles` sums walk durations over walkers (Intel's
//! WALK_DURATION), `rob_full_cycles` the dispatch delays due to `r(k−W)`
//! (beyond every other limit but the LSQ's),
//! `mshr_wait_cycles` and `walker_wait_cycles` the waits for a free slot.
//!
//! ## Config
//! `timing.kind = "ooo"`, `[timing.ooo]`: `window`, `dispatch_width`,
//! `retire_width`, `lsq`, `mshrs`, `walkers`, `walk_at_retire`,
//! `dependency_fraction`, `dependencies` (the machine's, see `machine/cpu.rs`).

use crate::config::spec::{OooSpec, TimingSpec};

/// Ticks per cycle.
pub const Q: u64 = 256;

/// The values of `timing.ooo.dependencies` (see `machine/cpu.rs`).
pub const DEPENDENCIES: [&str; 3] = ["auto", "stream", "fraction"];

/// The model's parameters, in ticks where they are times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OooParams {
    pub window: u32,
    pub dispatch: u32,
    pub retire: u32,
    pub lsq: u32,
    pub mshrs: u32,
    pub walkers: u32,
    pub walk_at_retire: bool,
    /// Ticks per instruction with a perfect memory system.
    pub c: u64,
    /// Cycles of every data latency hidden in `c` (the L1D hit, when in the CPI).
    pub hidden: u32,
}

impl OooParams {
    pub fn new(t: &TimingSpec, l1_latency: Option<u32>) -> OooParams {
        let o: &OooSpec = &t.ooo;
        OooParams {
            window: o.window,
            dispatch: o.dispatch_width,
            retire: o.retire_width,
            lsq: o.lsq,
            mshrs: o.mshrs,
            walkers: o.walkers,
            walk_at_retire: o.walk_at_retire,
            c: (t.base_cpi * Q as f64).round().max(1.0) as u64,
            hidden: if t.l1_hit_in_cpi { l1_latency.unwrap_or(0) } else { 0 },
        }
    }

    /// How many memory ops back a dependency may reach (the op ring's size).
    pub fn op_horizon(&self) -> usize {
        (2 * self.window as usize).max(self.lsq as usize + 1).next_power_of_two()
    }
}

/// One memory op, as the machine saw it (latencies in cycles).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MemOp {
    /// Latency of the TLB levels probed.
    pub tlb: u32,
    /// A walk's cycles, when every TLB level missed.
    pub walk: Option<u32>,
    /// Latency of the level (or DRAM) that served the data.
    pub data: u32,
    pub l1_miss: bool,
    pub store: bool,
    /// The op this one waits for, as a distance back in memory ops (0: none).
    pub dep: u32,
}

/// The model's accumulated times, in ticks (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct OooTicks {
    pub translation_stall: u64,
    pub data_stall: u64,
    pub walk_oldest: u64,
    pub walker_busy: u64,
    pub rob_full: u64,
    pub mshr_wait: u64,
    pub walker_wait: u64,
}

crate::stat_group! {
    /// The ooo model's own counters (under `core.`, only when `timing.kind = "ooo"`).
    pub struct OooStats {
        walk_oldest_cycles: "cycles", "cycles a page walk is the oldest unfinished work (ooo)",
        walker_busy_cycles: "cycles", "walk durations summed over walkers, as WALK_DURATION (ooo)",
        rob_full_cycles: "cycles", "dispatch delay because the window was full (ooo)",
        mshr_wait_cycles: "cycles", "cycles L1D misses waited for a free MSHR (ooo)",
        walker_wait_cycles: "cycles", "cycles walks waited for a free walker (ooo)",
    }
}

/// Ticks to cycles, rounded to nearest.
#[inline]
pub fn to_cycles(ticks: u64) -> u64 {
    (ticks + Q / 2) / Q
}

/// Overlap of `[a0, a1)` with `[b0, b1)`.
#[inline(always)]
pub(crate) fn overlap(a0: u64, a1: u64, b0: u64, b1: u64) -> u64 {
    a1.min(b1).saturating_sub(a0.max(b0))
}

/// The slot of `free` that frees earliest (ties: lowest index).
#[inline(always)]
pub(crate) fn earliest(free: &[u64]) -> usize {
    // Selects, not a branch: which slot frees first is unpredictable.
    let (mut best, mut at) = (0, free[0]);
    for (s, &f) in free.iter().enumerate().skip(1) {
        let earlier = f < at;
        at = if earlier { f } else { at };
        best = if earlier { s } else { best };
    }
    best
}

/// The fast model: ring buffers of the last instructions and memory ops.
#[derive(Clone, Debug)]
pub struct OooModel {
    p: OooParams,
    /// d and r of the last instructions, indexed by `k & mask` (size > W).
    ring_d: Box<[u64]>,
    ring_r: Box<[u64]>,
    mask: u64,
    /// Instruction and done time of the last memory ops, by `m & op_mask`.
    op_instr: Box<[u64]>,
    op_done: Box<[u64]>,
    op_mask: u64,
    walkers: Box<[u64]>,
    mshrs: Box<[u64]>,
    /// Instructions dispatched; the current one is `k − 1`.
    k: u64,
    /// Memory ops seen.
    m: u64,
    last_d: u64,
    /// r of the current instruction (so far) and of the one before it.
    last_r: u64,
    prev_r: u64,
    /// The latest done of the current instruction's parts (d + c at dispatch).
    cur_done: u64,
    front: u64,
    pub ticks: OooTicks,
}

impl OooModel {
    pub fn new(p: OooParams) -> OooModel {
        let ring = (p.window as usize + 1).next_power_of_two();
        let ops = p.op_horizon();
        OooModel {
            p,
            ring_d: vec![0; ring].into_boxed_slice(),
            ring_r: vec![0; ring].into_boxed_slice(),
            mask: ring as u64 - 1,
            op_instr: vec![0; ops].into_boxed_slice(),
            op_done: vec![0; ops].into_boxed_slice(),
            op_mask: ops as u64 - 1,
            walkers: vec![0; p.walkers.max(1) as usize].into_boxed_slice(),
            mshrs: vec![0; p.mshrs.max(1) as usize].into_boxed_slice(),
            k: 0,
            m: 0,
            last_d: 0,
            last_r: 0,
            prev_r: 0,
            cur_done: 0,
            front: 0,
            ticks: OooTicks::default(),
        }
    }

    pub fn params(&self) -> &OooParams {
        &self.p
    }

    /// The time the model has reached: the last retirement or the front end's.
    #[inline]
    pub fn end(&self) -> u64 {
        self.last_r.max(self.front)
    }

    /// The earliest dispatch of instruction `k` but for the LSQ and the window.
    #[inline(always)]
    fn ready(&self, k: u64) -> u64 {
        let mut t = self.front;
        if k > 0 {
            t = t.max(self.last_d + self.p.c);
        }
        let dw = self.p.dispatch as u64;
        if k >= dw {
            t = t.max(self.ring_d[((k - dw) & self.mask) as usize] + Q);
        }
        t
    }

    /// Dispatch instruction `self.k` no earlier than `floor`, and make it current.
    #[inline(always)]
    fn dispatch(&mut self, floor: u64) -> u64 {
        let k = self.k;
        let ready = self.ready(k);
        let mut d = ready.max(floor);
        let w = self.p.window as u64;
        if k >= w {
            let rob = self.ring_r[((k - w) & self.mask) as usize];
            // Measured against the limits but the LSQ, whose entry (when it
            // binds) may be older than the ring holds.
            self.ticks.rob_full += rob.saturating_sub(ready);
            d = d.max(rob);
        }
        self.ring_d[(k & self.mask) as usize] = d;
        self.last_d = d;
        self.prev_r = self.last_r;
        self.cur_done = d + self.p.c;
        self.k = k + 1;
        d
    }

    /// Retire the current instruction once it is done at `self.cur_done`.
    #[inline(always)]
    fn retire(&mut self) {
        let k = self.k - 1;
        let mut r = self.prev_r.max(self.cur_done);
        let rw = self.p.retire as u64;
        if k >= rw {
            r = r.max(self.ring_r[((k - rw) & self.mask) as usize] + Q);
        }
        self.ring_r[(k & self.mask) as usize] = r;
        self.last_r = r;
    }

    /// `n` instructions without a memory op.
    #[inline]
    pub fn advance(&mut self, n: u64) {
        for _ in 0..n {
            self.dispatch(0);
            self.retire();
        }
    }

    /// Book the earliest-free slot of `slots` for `busy` ticks from no
    /// earlier than `at`; returns the start.
    #[inline(always)]
    fn book(slots: &mut [u64], at: u64, busy: u64) -> u64 {
        let s = earliest(slots);
        let start = at.max(slots[s]);
        slots[s] = start + busy;
        start
    }

    /// A translated instruction fetch ending a record of `gap` instructions.
    pub fn fetch(&mut self, gap: u32, tlb: u32, walk: Option<u32>) {
        if gap > 0 {
            self.advance(gap as u64 - 1);
        }
        let fs = self.ready(self.k).max(if self.k >= self.p.window as u64 {
            self.ring_r[((self.k - self.p.window as u64) & self.mask) as usize]
        } else {
            0
        });
        let mut end = fs + tlb as u64 * Q;
        let (mut w0, mut w1) = (0, 0);
        if let Some(w) = walk {
            let busy = w as u64 * Q;
            w0 = Self::book(&mut self.walkers, end, busy);
            self.ticks.walker_wait += w0 - end;
            self.ticks.walker_busy += busy;
            w1 = w0 + busy;
            end = w1;
        }
        let h = fs.max(self.last_r);
        if end > h {
            self.ticks.translation_stall += end - h;
            self.ticks.walk_oldest += overlap(h, end, w0, w1);
        }
        self.front = self.front.max(end);
        if gap > 0 {
            self.dispatch(0);
            self.retire();
        }
    }

    /// A memory op ending a record of `gap` instructions (gap 0: another op
    /// of the current instruction).
    #[inline]
    pub fn op(&mut self, gap: u32, op: &MemOp) {
        let l = self.p.lsq as u64;
        let w = self.p.window as u64;
        let lsq_instr = if self.m >= l { Some(self.op_instr[((self.m - l) & self.op_mask) as usize]) } else { None };
        let mut issue_floor = 0;
        if gap > 0 || self.k == 0 {
            if gap > 1 {
                self.advance(gap as u64 - 1);
            }
            // An LSQ entry's instruction at least W back retired before r(k − W).
            let floor = match lsq_instr {
                Some(j) if j + w > self.k => self.ring_r[(j & self.mask) as usize],
                _ => 0,
            };
            self.dispatch(floor);
        } else {
            let cur = self.k - 1;
            // The parts of one instruction go one after the other.
            issue_floor = self.cur_done - self.p.c;
            if let Some(j) = lsq_instr {
                if j < cur && j + w > cur {
                    issue_floor = issue_floor.max(self.ring_r[(j & self.mask) as usize]);
                }
            }
        }
        let cur = self.k - 1;
        let done = self.execute(op, issue_floor);
        self.op_instr[(self.m & self.op_mask) as usize] = cur;
        self.op_done[(self.m & self.op_mask) as usize] = done;
        self.m += 1;
        self.cur_done = self.cur_done.max(done);
        self.retire();
    }

    /// Issue, translate and access one op of the current instruction; its done time.
    #[inline(always)]
    fn execute(&mut self, op: &MemOp, issue_floor: u64) -> u64 {
        let (c, d) = (self.p.c, self.last_d);
        let mut i = d.max(issue_floor);
        let dep = op.dep as u64;
        if dep > 0 && dep <= self.m && dep <= self.op_mask + 1 {
            i = i.max(self.op_done[((self.m - dep) & self.op_mask) as usize]);
        }
        let mut e = i + op.tlb as u64 * Q;
        let (mut w0, mut w1) = (0, 0);
        if let Some(wc) = op.walk {
            let busy = wc as u64 * Q;
            let at = if self.p.walk_at_retire { e.max(self.prev_r) } else { e };
            w0 = Self::book(&mut self.walkers, at, busy);
            self.ticks.walker_wait += w0 - at;
            self.ticks.walker_busy += busy;
            w1 = w0 + busy;
            e = w1;
        }
        let done = if op.store {
            e + c
        } else {
            let exposed = op.data.saturating_sub(self.p.hidden) as u64 * Q;
            let mut ds = e;
            if op.l1_miss {
                ds = Self::book(&mut self.mshrs, e, exposed);
                self.ticks.mshr_wait += ds - e;
            }
            ds + c + exposed
        };
        let h = self.prev_r.max(self.cur_done);
        if done > h {
            let tr = overlap(h, done, i + c, e + c);
            self.ticks.translation_stall += tr;
            self.ticks.data_stall += done - h - tr;
            self.ticks.walk_oldest += overlap(h, done, w0 + c, w1 + c);
        }
        done
    }
}
