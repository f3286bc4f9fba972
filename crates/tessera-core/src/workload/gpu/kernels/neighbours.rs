//! A lane's walk over its vertex's neighbour list in the device CSR: the
//! loop the vertex-centric graph kernels are built around,
//! `for (j = row[v]; j < row[v + 1]; j += step) { u = col[j]; … }`.
//!
//! ## What it models
//! The code a CUDA compiler makes of that loop: the two `row` loads, then
//! per trip the loop test (compare, branch), 1 + load `col[j]`, the
//! kernel's body, 1 for the increment; the loop's last test. The kernels'
//! documented instruction counts rest on this shape, so it is written once
//! and each kernel supplies only what it does with a neighbour.

use super::simt::Warp;
use super::DeviceCsr;
use crate::workload::gpu::{Space, WARP_SIZE};

/// Each lane's place in its neighbour list, with the `row` loads done.
pub(super) struct Neighbours {
    /// The entry each lane takes next.
    j: [u64; 32],
    end: [u64; 32],
    step: u64,
}

impl Neighbours {
    /// Load `row[v]` and `row[v + 1]` in the active lanes: each lane takes
    /// its vertex's entries one by one.
    pub fn load(w: &mut Warp, g: &DeviceCsr, v: impl Fn(u32) -> u64) -> Neighbours {
        w.load(Space::Global, 4, |l| g.row + 4 * v(l));
        w.load(Space::Global, 4, |l| g.row + 4 * (v(l) + 1));
        let mut walk = Neighbours { j: [0; 32], end: [0; 32], step: 1 };
        for l in w.active() {
            (walk.j[l as usize], walk.end[l as usize]) = g.span(v(l));
        }
        walk
    }

    /// The lanes share one list and stride it: lane `i` takes entries `i`,
    /// `i + 32`, …, so consecutive lanes load consecutive `col` entries.
    /// The kernel emits the `+ lane` itself.
    pub fn strided(mut self, w: &Warp) -> Neighbours {
        for l in w.active() {
            self.j[l as usize] += l as u64;
        }
        self.step = WARP_SIZE as u64;
        self
    }

    /// The loop: `body(warp, j, u)` each trip, with `u = col[j]` loaded for
    /// the lanes still in their lists.
    pub fn walk(mut self, w: &mut Warp, g: &DeviceCsr, mut body: impl FnMut(&mut Warp, &[u64; 32], &[u64; 32])) {
        let mut u = [0u64; 32];
        let mut lp = w.loop_begin();
        while w.loop_test(&mut lp, |l| self.j[l as usize] < self.end[l as usize]) {
            w.alu(1);
            w.load(Space::Global, 4, |l| g.col + 4 * self.j[l as usize]);
            for l in w.active() {
                u[l as usize] = g.csr.targets[self.j[l as usize] as usize] as u64;
            }
            body(w, &self.j, &u);
            w.alu(1);
            for l in w.active() {
                self.j[l as usize] += self.step;
            }
        }
    }
}
