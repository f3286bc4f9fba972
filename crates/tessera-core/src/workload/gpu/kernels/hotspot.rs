//! `hotspot`: Rodinia's HotSpot thermal simulation, a 5-point stencil on a
//! 2D grid, one launch per time step.
//!
//! ## What it models
//! Each cell's temperature moves by HotSpot's explicit update
//! `t += step / cap · (power + (N + S − 2t)/Ry + (E + W − 2t)/Rx +
//! (amb − t)/Rz)`, neighbours clamped at the edges, with Rodinia's chip
//! constants (0.016 m square chip, 0.5 mm thick). One thread per cell in
//! 16 × 16 blocks, reading `temp` and `power` and writing the other
//! temperature buffer; the two swap each step. Rodinia's kernel also keeps
//! a pyramid of steps in shared memory; this one is the plain one step per
//! launch form (its accesses are the same rows, reread per step).
//! Temperatures start uniform in [323, 343) K and power in [0, 0.5) W per
//! cell (`gpu.hotspot.data`).
//!
//! Layout (allocation order): `power`, `temp0`, `temp1`, `4 n²` bytes each
//! (row-major). Launches: `steps`, each `(n / 16)²` blocks (rounded up) of
//! 16 × 16 threads, 20 registers; step `s` reads `temp[s % 2]`.
//!
//! Instructions per thread: 6 (indices), 1 + compare and branch on the cell
//! being inside the grid; inside 4 (clamped neighbour indices), loads of the
//! cell, north, south, west and east temperatures and of the cell's power, 8
//! (the update), 1 + store; `EXIT`.
//!
//! ## Parameters
//! `n` cells per side (default 512, 16 to 16384), `steps` (default 4).

use rand::Rng;

use super::simt::Block;
use super::{covered, launch, GpuKernelInfo, Launches};
use crate::error::Result;
use crate::rng::component_rng;
use crate::workload::gpu::{Allocator, Kernel, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "hotspot",
    summary: "Rodinia HotSpot: 5-point thermal stencil on a 2D grid, one launch per time step",
    params: PARAMS,
    footprint: |p| {
        let n = p.count_in("n", 16, 16384)?;
        Ok(3 * covered(4 * n * n))
    },
    build: |p| Ok(Box::new(Hotspot::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "512", doc: "cells per side of the square grid, 16 to 16384" },
    ParamDoc { name: "steps", default: "4", doc: "time steps (launches), 1 to 1000" },
];

const EDGE: u32 = 16;

/// HotSpot's per-step coefficients for an `n × n` grid (Rodinia's constants).
#[derive(Copy, Clone, Debug)]
pub struct Coefficients {
    step_over_cap: f32,
    rx_1: f32,
    ry_1: f32,
    rz_1: f32,
}

const AMBIENT: f32 = 80.0;

impl Coefficients {
    pub fn new(n: u64) -> Coefficients {
        let (t_chip, chip, k_si, spec_heat, factor, max_pd, precision) =
            (0.0005f32, 0.016f32, 100.0f32, 1.75e6f32, 0.5f32, 3.0e6f32, 0.001f32);
        let (gh, gw) = (chip / n as f32, chip / n as f32);
        let cap = factor * spec_heat * t_chip * gw * gh;
        let rx = gw / (2.0 * k_si * t_chip * gh);
        let ry = gh / (2.0 * k_si * t_chip * gw);
        let rz = t_chip / (k_si * gh * gw);
        let max_slope = max_pd / (factor * t_chip * spec_heat);
        let step = precision / max_slope;
        Coefficients { step_over_cap: step / cap, rx_1: 1.0 / rx, ry_1: 1.0 / ry, rz_1: 1.0 / rz }
    }

    /// The cell's next temperature from itself, its power and its
    /// neighbours (north, south, west, east).
    #[inline]
    pub fn update(&self, t: f32, power: f32, [north, south, west, east]: [f32; 4]) -> f32 {
        let d = power + (south + north - 2.0 * t) * self.ry_1 + (east + west - 2.0 * t) * self.rx_1 + (AMBIENT - t) * self.rz_1;
        t + self.step_over_cap * d
    }
}

pub struct Hotspot {
    launches: Launches,
    n: u64,
    steps: u32,
    coef: Coefficients,
    power_at: u64,
    temp_at: [u64; 2],
    power: Vec<f32>,
    /// The temperature buffers; after step `s`, `temp[(s + 1) % 2]` is current.
    pub temp: [Vec<f32>; 2],
}

impl Hotspot {
    pub fn new(p: &Params) -> Result<Hotspot> {
        let n = p.count_in("n", 16, 16384)?;
        let steps = p.count_in("steps", 1, 1000)? as u32;
        let mut rng = component_rng(p.seed(), "gpu.hotspot.data");
        let temp: Vec<f32> = (0..n * n).map(|_| rng.gen_range(323.0..343.0)).collect();
        let power: Vec<f32> = (0..n * n).map(|_| rng.gen_range(0.0..0.5)).collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let power_at = heap.alloc("power", 4 * n * n);
        let temp_at = [heap.alloc("temp0", 4 * n * n), heap.alloc("temp1", 4 * n * n)];
        let other = temp.clone();
        Ok(Hotspot {
            launches: Launches::new(heap.allocations),
            n,
            steps,
            coef: Coefficients::new(n),
            power_at,
            temp_at,
            power,
            temp: [temp, other],
        })
    }

    /// The initial power map, for tests.
    pub fn power(&self) -> &[f32] {
        &self.power
    }

    fn kernel(&mut self, id: u32) -> Kernel {
        let (n, coef, power_at) = (self.n, self.coef, self.power_at);
        let src = (id as usize - 1) % 2;
        let (src_at, dst_at) = (self.temp_at[src], self.temp_at[1 - src]);
        let [t0, t1] = &mut self.temp;
        let (from, to) = if src == 0 { (&*t0, t1) } else { (&*t1, t0) };
        let power = &self.power;
        let grid = n.div_ceil(EDGE as u64) as u32;
        launch("hotspot", id, [grid, grid, 1], [EDGE, EDGE, 1], 0, 20, |[bx, by, _]| {
            let mut block = Block::new([bx, by, 0], EDGE * EDGE);
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let tid = |l: u32| wi as u32 * WARP_SIZE + l;
                let r = |l: u32| by as u64 * EDGE as u64 + (tid(l) / EDGE) as u64;
                let c = |l: u32| bx as u64 * EDGE as u64 + (tid(l) % EDGE) as u64;
                let at = |row: u64, col: u64| 4 * (row * n + col);
                w.alu(7);
                let s = w.if_begin(|l| r(l) < n && c(l) < n);
                w.alu(4);
                // Neighbour d (north, south, west, east), clamped at the edges.
                let nbr = |l: u32, d: usize| -> (u64, u64) {
                    let (y, x) = (r(l), c(l));
                    match d {
                        0 => (y.saturating_sub(1), x),
                        1 => ((y + 1).min(n - 1), x),
                        2 => (y, x.saturating_sub(1)),
                        _ => (y, (x + 1).min(n - 1)),
                    }
                };
                w.load(Space::Global, 4, |l| src_at + at(r(l), c(l)));
                for d in 0..4 {
                    w.load(Space::Global, 4, |l| {
                        let (y, x) = nbr(l, d);
                        src_at + at(y, x)
                    });
                }
                w.load(Space::Global, 4, |l| power_at + at(r(l), c(l)));
                w.alu(8);
                w.alu(1);
                w.store(Space::Global, 4, |l| dst_at + at(r(l), c(l)));
                for l in w.active() {
                    let get = |(y, x): (u64, u64)| from[(y * n + x) as usize];
                    let i = (r(l) * n + c(l)) as usize;
                    to[i] = coef.update(from[i], power[i], [0, 1, 2, 3].map(|d| get(nbr(l, d))));
                }
                w.if_end(s);
            }
            block.finish()
        })
    }
}

launches!(Hotspot, |k: &Hotspot| k.launches.issued == k.steps);

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;

    #[test]
    fn the_steps_are_a_host_stencils() {
        let (n, steps) = (40usize, 3);
        let mut h = Hotspot::new(&params("hotspot", &[("n", "40"), ("steps", "3")], 2)).unwrap();
        let mut t = h.temp[0].clone();
        let ks = drain(&mut h);
        assert_eq!(ks.len(), steps);
        let coef = Coefficients::new(n as u64);
        for _ in 0..steps {
            let mut next = t.clone();
            for y in 0..n {
                for x in 0..n {
                    let at = |yy: usize, xx: usize| t[yy * n + xx];
                    let nb = [at(y.saturating_sub(1), x), at((y + 1).min(n - 1), x), at(y, x.saturating_sub(1)), at(y, (x + 1).min(n - 1))];
                    next[y * n + x] = coef.update(t[y * n + x], h.power()[y * n + x], nb);
                }
            }
            t = next;
        }
        assert_eq!(h.temp[steps % 2], t);
        // 40 x 40 in 16 x 16 blocks: the edge blocks' threads past 40 only test.
        let k = &ks[0];
        assert_eq!(k.grid, [3, 3, 1]);
        let corner = &k.blocks[8].warps[0];
        assert_eq!(corner.insts[9].mask, 0x00ff_00ff);
    }
}
