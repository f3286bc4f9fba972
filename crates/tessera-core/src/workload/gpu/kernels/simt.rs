//! A warp emitter: the built-in kernels run each warp's 32 lanes in
//! lockstep on the host and record what the warp issues.
//!
//! ## What it models
//! A warp executes one instruction for all its active lanes; a branch on a
//! per-lane condition narrows the active mask to the lanes that take the
//! path, and the lanes reconverge after it (the SIMT stack, with
//! reconvergence at the immediate post-dominator). [`Warp`] keeps the active
//! mask and a program counter; a kernel calls [`Warp::alu`],
//! [`Warp::load`], [`Warp::store`], … for each instruction of its code and
//! [`Warp::if_begin`] / [`Warp::loop_test`] for its control flow, and does
//! the lanes' real work itself for the lanes of [`Warp::mask`]
//! ([`lanes`]).
//!
//! ## Choices
//! - Predication, not skipping: code under an empty mask is still walked
//!   (it records nothing, and the kernel's per-lane work loops over no lane),
//!   so the program counter always advances by the code's static length and
//!   an instruction has the same pc on every path and every iteration. A
//!   loop no lane enters is walked once with no lane, for the same reason.
//! - Instructions are 16 bytes (Volta-onwards SASS), pcs from 0.
//! - A condition costs a compare and a branch (two instructions, issued by
//!   the lanes that evaluate it); a loop is laid out rotated, as compilers
//!   lay it out: the guard before the body, the test again after it.
//! - Barriers are per warp: a kernel that shares data through shared memory
//!   runs each phase for all of a block's warps ([`Block`]) before the next.

use super::super::{Op, Space, ThreadBlock, WarpInst, WarpTrace, WARP_SIZE};

/// Bytes of one instruction.
pub const INST_BYTES: u32 = 16;

/// The lanes of `mask`, in lane order.
#[inline]
pub fn lanes(mask: u32) -> impl Iterator<Item = u32> {
    let mut m = mask;
    std::iter::from_fn(move || {
        if m == 0 {
            return None;
        }
        let l = m.trailing_zeros();
        m &= m - 1;
        Some(l)
    })
}

/// The mask of `n` lanes from lane 0 (`n` ≤ 32).
#[inline]
pub fn first_lanes(n: u32) -> u32 {
    if n >= WARP_SIZE {
        u32::MAX
    } else {
        (1u32 << n) - 1
    }
}

/// One warp being emulated: its active mask, pc and recorded stream.
#[derive(Clone, Debug)]
pub struct Warp {
    trace: WarpTrace,
    pc: u32,
    mask: u32,
    /// Lanes that exist (threads of the block in this warp).
    live: u32,
    buf: [u64; WARP_SIZE as usize],
}

/// A condition's saved state, for [`Warp::if_else`] and [`Warp::if_end`].
#[must_use]
pub struct If {
    outer: u32,
    taken: u32,
}

/// A loop's state across its tests ([`Warp::loop_test`]).
pub struct Loop {
    outer: u32,
    /// Pc of the body's first instruction (after the guard).
    body: u32,
    /// Whether the next test is the guard.
    guard: bool,
    done: bool,
}

impl Warp {
    /// A warp whose existing lanes are `live` (never 0).
    pub fn new(live: u32) -> Warp {
        debug_assert_ne!(live, 0);
        Warp { trace: WarpTrace::default(), pc: 0, mask: live, live, buf: [0; WARP_SIZE as usize] }
    }

    /// Active lanes.
    #[inline]
    pub fn mask(&self) -> u32 {
        self.mask
    }

    /// The active lanes, in lane order.
    #[inline]
    pub fn active(&self) -> impl Iterator<Item = u32> {
        lanes(self.mask)
    }

    /// Instructions recorded so far.
    pub fn trace(&self) -> &WarpTrace {
        &self.trace
    }

    #[inline]
    fn issue(&mut self, op: Op) {
        if self.mask != 0 {
            self.trace.push(WarpInst::compute(self.pc, self.mask, op), &[]);
        }
        self.pc += INST_BYTES;
    }

    #[inline]
    fn memory(&mut self, op: Op, space: Space, size: u8, mut addr: impl FnMut(u32) -> u64) {
        if self.mask != 0 {
            let mut n = 0;
            for l in lanes(self.mask) {
                self.buf[n] = addr(l);
                n += 1;
            }
            let inst = WarpInst { pc: self.pc, mask: self.mask, op, space, size };
            self.trace.push(inst, &self.buf[..n]);
        }
        self.pc += INST_BYTES;
    }

    /// `n` arithmetic instructions.
    pub fn alu(&mut self, n: u32) {
        for _ in 0..n {
            self.issue(Op::Alu);
        }
    }

    /// `n` special-function instructions.
    pub fn sfu(&mut self, n: u32) {
        for _ in 0..n {
            self.issue(Op::Sfu);
        }
    }

    /// A load of `size` bytes per active lane from `addr(lane)`.
    pub fn load(&mut self, space: Space, size: u8, addr: impl FnMut(u32) -> u64) {
        self.memory(Op::Load, space, size, addr);
    }

    /// A store of `size` bytes per active lane to `addr(lane)`.
    pub fn store(&mut self, space: Space, size: u8, addr: impl FnMut(u32) -> u64) {
        self.memory(Op::Store, space, size, addr);
    }

    /// An atomic read-modify-write of `size` bytes per active lane.
    pub fn atomic(&mut self, space: Space, size: u8, addr: impl FnMut(u32) -> u64) {
        self.memory(Op::Atomic, space, size, addr);
    }

    /// A branch issued by the active lanes (uniform: the mask is unchanged).
    pub fn branch(&mut self) {
        self.issue(Op::Branch);
    }

    /// A block barrier (`__syncthreads`). CUDA requires every thread of the
    /// block to reach it, so the active lanes are the live ones except in
    /// code walked with no lane, where it records nothing like the rest.
    pub fn barrier(&mut self) {
        debug_assert!(self.mask == 0 || self.mask == self.live, "a barrier under divergence");
        self.issue(Op::Barrier);
    }

    /// `if (cond(lane))`: a compare and a branch by the active lanes, then
    /// only the lanes where `cond` holds stay active until [`Warp::if_end`].
    pub fn if_begin(&mut self, mut cond: impl FnMut(u32) -> bool) -> If {
        self.alu(1);
        self.branch();
        let outer = self.mask;
        self.mask = lanes(outer).filter(|&l| cond(l)).fold(0, |m, l| m | 1 << l);
        If { outer, taken: self.mask }
    }

    /// `} else {`: the taken lanes branch over the else code, then the other
    /// lanes of the condition are active.
    pub fn if_else(&mut self, s: &If) {
        self.branch();
        self.mask = s.outer & !s.taken;
    }

    /// Reconverge after [`Warp::if_begin`].
    pub fn if_end(&mut self, s: If) {
        self.mask = s.outer;
    }

    /// Start a loop at the current pc (no instruction).
    pub fn loop_begin(&mut self) -> Loop {
        Loop { outer: self.mask, body: 0, guard: true, done: false }
    }

    /// `while (cond(lane))`: the loop's test, a compare and a branch by the
    /// lanes still looping; returns whether to run the body (again), with
    /// the lanes where `cond` holds active. After the last test the lanes
    /// that entered the loop are active again and the pc is past the loop.
    /// A loop no lane enters runs its body once with no lane active (it
    /// records nothing), so the pc moves past it: the caller must run the
    /// body whenever this returns `true`.
    pub fn loop_test(&mut self, lp: &mut Loop, mut cond: impl FnMut(u32) -> bool) -> bool {
        if lp.done {
            return false;
        }
        self.alu(1);
        self.branch();
        let taken = lanes(self.mask).filter(|&l| cond(l)).fold(0, |m, l| m | 1 << l);
        if lp.guard {
            lp.guard = false;
            lp.body = self.pc;
            if taken == 0 {
                // Walk the body once with no lane so the pc learns its length.
                self.mask = 0;
                return true;
            }
        } else if taken != 0 {
            self.pc = lp.body;
        }
        self.mask = taken;
        if taken == 0 {
            self.mask = lp.outer;
            lp.done = true;
            return false;
        }
        true
    }

    /// The warp's `EXIT` (all live lanes) and its stream.
    pub fn exit(mut self) -> WarpTrace {
        self.mask = self.live;
        self.issue(Op::Exit);
        self.trace
    }
}

/// The warps of one thread block of `threads` threads.
pub struct Block {
    pub index: [u32; 3],
    pub warps: Vec<Warp>,
}

impl Block {
    pub fn new(index: [u32; 3], threads: u32) -> Block {
        let warps = (0..threads.div_ceil(WARP_SIZE))
            .map(|w| Warp::new(first_lanes(threads - w * WARP_SIZE)))
            .collect();
        Block { index, warps }
    }

    /// `__syncthreads()` in every warp.
    pub fn barrier(&mut self) {
        for w in &mut self.warps {
            w.barrier();
        }
    }

    /// Every warp's `EXIT`: the finished block.
    pub fn finish(self) -> ThreadBlock {
        ThreadBlock { index: self.index, warps: self.warps.into_iter().map(Warp::exit).collect() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(w: &WarpTrace) -> Vec<(u32, u32, Op)> {
        w.insts.iter().map(|i| (i.pc, i.mask, i.op)).collect()
    }

    #[test]
    fn a_divergent_if_narrows_the_mask_and_keeps_the_pcs() {
        let mut w = Warp::new(0xf);
        let s = w.if_begin(|l| l % 2 == 0);
        w.load(Space::Global, 4, |l| 0x1000 + 4 * l as u64);
        w.if_end(s);
        let s = w.if_begin(|_| false);
        w.alu(3);
        w.if_end(s);
        w.alu(1);
        let t = w.exit();
        assert_eq!(
            ops(&t),
            vec![
                (0, 0xf, Op::Alu),
                (16, 0xf, Op::Branch),
                (32, 0b101, Op::Load),
                (48, 0xf, Op::Alu),
                (64, 0xf, Op::Branch),
                (128, 0xf, Op::Alu),
                (144, 0xf, Op::Exit),
            ]
        );
        assert_eq!(t.addrs, vec![0x1000, 0x1008]);
    }

    #[test]
    fn a_loop_repeats_its_body_pcs_for_the_lanes_still_looping() {
        let mut w = Warp::new(0b111);
        let trips = [0u32, 1, 2];
        let mut i = [0u32; 3];
        let mut lp = w.loop_begin();
        while w.loop_test(&mut lp, |l| i[l as usize] < trips[l as usize]) {
            w.alu(1);
            for l in w.active().collect::<Vec<_>>() {
                i[l as usize] += 1;
            }
        }
        w.alu(1);
        let t = w.exit();
        assert_eq!(i, trips);
        assert_eq!(
            ops(&t),
            vec![
                (0, 0b111, Op::Alu),
                (16, 0b111, Op::Branch),
                (32, 0b110, Op::Alu),
                (48, 0b110, Op::Alu),
                (64, 0b110, Op::Branch),
                (32, 0b100, Op::Alu),
                (48, 0b100, Op::Alu),
                (64, 0b100, Op::Branch),
                (80, 0b111, Op::Alu),
                (96, 0b111, Op::Exit),
            ]
        );
    }

    #[test]
    fn a_loop_no_lane_enters_still_moves_the_pc_past_its_body() {
        let mut w = Warp::new(1);
        let mut lp = w.loop_begin();
        let mut bodies = 0;
        while w.loop_test(&mut lp, |_| false) {
            bodies += 1;
            w.alu(2);
        }
        w.alu(1);
        assert_eq!(bodies, 1);
        let t = w.exit();
        let pcs: Vec<u32> = t.insts.iter().map(|i| i.pc).collect();
        // guard (0, 16), body (32, 48) unrecorded, test (64, 80) unrecorded, then 96.
        assert_eq!(pcs, vec![0, 16, 96, 112]);
    }

    #[test]
    fn a_partial_warp_has_only_its_threads_live() {
        let b = Block::new([0, 0, 0], 40);
        assert_eq!(b.warps.len(), 2);
        assert_eq!(b.warps[1].mask(), 0xff);
        let tb = b.finish();
        assert_eq!(tb.warps[1].insts[0].mask, 0xff);
    }
}
