//! `srad`: Rodinia's SRAD v2, speckle-reducing anisotropic diffusion of an
//! `n × n` image through 16 × 16 tiles in shared memory, two kernel
//! launches per iteration.
//!
//! ## What it models
//! Per iteration the host computes the speckle scale `q0² = var / mean²`
//! over the region of interest (the top-left `min(n, 128)` square, as
//! Rodinia's run script gives rows and columns 0 to 127) from the image it
//! copied back, then launches:
//! - `srad_cuda_1`: each thread loads its cell, the tile's halo row or
//!   column for each of the four sides (the cell itself at the image edge)
//!   and the tile into shared memory, takes its neighbours from the tile or
//!   the halo (a nine-way branch on its place in the tile: corners, sides,
//!   inside), computes the four differences `N, S, W, E`, the gradient and
//!   Laplacian terms and the diffusion coefficient `c = 1 / (1 + (q² −
//!   q0²) / (q0² (1 + q0²)))` saturated to [0, 1] (a three-way branch), and
//!   stores `c` and the differences;
//! - `srad_cuda_2`: each thread loads its cell, the coefficients of the
//!   tile and of its south and east halo, takes `c` of its south and east
//!   neighbours (a four-way branch), and updates the cell: `J += λ/4 · (c ·
//!   N + c_S · S + c · W + c_E · E)`.
//!
//! Rodinia loads the halo rows unconditionally and overwrites them at the
//! image edge, reading outside the image there; here the edge tiles load
//! the clamped row or column instead (an `if`/`else`, and no access outside
//! the image). Every tile loads the whole halo row into each of its rows of
//! the halo array, as Rodinia does. All arithmetic is `f32` in a fixed
//! order (Rodinia's double literals promote a few intermediates to double;
//! here they stay `f32`), so the image is exact against a host loop. The
//! image starts as `exp(u)`, `u` uniform in [0, 1) (`gpu.srad.data`), as
//! Rodinia's `random_matrix` makes it.
//!
//! Layout (allocation order): `J`, `C`, `E`, `W`, `S`, `N`, `4 n²` bytes
//! each (row-major). Launches: `iterations` × (`srad_cuda_1`,
//! `srad_cuda_2`), each `(n / 16)²` blocks of 16 × 16 threads (warp `w`
//! holds tile rows `2w` and `2w + 1`), 6 KiB and 5 KiB of shared memory
//! (`temp`, `temp_result`, `north`, `south`, `east`, `west`; `south_c`,
//! `east_c`, `c_temp`, `c_result`, `temp`), 24 and 20 registers.
//!
//! Instructions per thread, `srad_cuda_1`: 8 (indices); compare and branch
//! on the top tile, load the clamped or the halo row (a branch over the
//! other), shared store `north`; the same for `south` at the bottom tile;
//! barrier; the same for `west` and `east` on the tile column; barrier;
//! load `J[i]`, shared store `temp`; barrier; shared load `temp`; the
//! nine-way chain (compare and branch per case tried, a branch over the
//! later cases after the body), whose body is 4 × (shared load, subtract);
//! 17 arithmetic and 5 `SFU` (reciprocals of the five divisions); the
//! saturation chain (compare and branch on `c < 0` and on `c > 1`, each
//! body a shared store of `temp_result`); barrier; shared load
//! `temp_result`, 1 + stores of `C`, `E`, `W`, `S`, `N`; `EXIT`.
//! `srad_cuda_2`: 6 (indices); load `J[i]`, shared store `temp`; barrier;
//! compare and branch on the bottom tile, load the clamped or the halo row
//! of `C`, shared store `south_c`; barrier; the same for `east_c`; barrier;
//! load `C[i]`, shared store `c_temp`; barrier; shared load `c_temp`; the
//! four-way chain whose body is 2 shared loads; 1 + loads of `N`, `S`,
//! `W`, `E`, 4 (the divergence), shared load `temp`, 2 (the update), shared
//! store `c_result`; barrier; shared load `c_result`, store `J[i]`; `EXIT`.
//!
//! ## Parameters
//! `n` (a multiple of 16 from 16 to 8192, default 512), `iterations`
//! (default 2, Rodinia's), `lambda` (default 0.5, Rodinia's).

use rand::Rng;

use super::simt::{Block, If, Warp};
use super::{covered, launch, GpuKernelInfo, Launches};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use crate::workload::gpu::{Allocation, Allocator, Kernel, KernelSource, Space, WARP_SIZE};
use crate::workload::{ParamDoc, Params};

pub const INFO: GpuKernelInfo = GpuKernelInfo {
    name: "srad",
    summary: "Rodinia SRAD v2: speckle-reducing anisotropic diffusion, 16 x 16 tiles, two launches per iteration",
    params: PARAMS,
    footprint: |p| {
        let n = order(p)?;
        Ok(6 * covered(4 * n * n))
    },
    build: |p| Ok(Box::new(Srad::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "n", default: "512", doc: "pixels per side of the square image, a multiple of 16 from 16 to 8192" },
    ParamDoc { name: "iterations", default: "2", doc: "diffusion iterations (two launches each), 1 to 1000" },
    ParamDoc { name: "lambda", default: "0.5", doc: "update step, above 0 and up to 1" },
];

/// Tile edge: threads per block edge.
pub const TILE: u32 = 16;

/// Side of the region of interest (from the top-left corner).
pub const ROI: u64 = 128;

fn order(p: &Params) -> Result<u64> {
    let n = p.count_in("n", TILE as u64, 8192)?;
    if n % TILE as u64 != 0 {
        return Err(Error::config(p.key_path("n"), format!("{n} is not a multiple of the tile edge {TILE}")));
    }
    Ok(n)
}

/// `q0²` of the image `j` (`n` per side) over the region of interest, as
/// Rodinia's host loop computes it (`f32` sums, row by row).
pub fn q0sqr(j: &[f32], n: u64) -> f32 {
    let side = n.min(ROI);
    let (mut sum, mut sum2) = (0f32, 0f32);
    for r in 0..side {
        for c in 0..side {
            let t = j[(r * n + c) as usize];
            sum += t;
            sum2 += t * t;
        }
    }
    let size = (side * side) as f32;
    let mean = sum / size;
    let var = sum2 / size - mean * mean;
    var / (mean * mean)
}

/// The diffusion coefficient of a cell of value `jc` whose neighbours
/// differ from it by `[n, s, w, e]`, before saturation.
pub fn raw_coefficient(jc: f32, [n, s, w, e]: [f32; 4], q0sqr: f32) -> f32 {
    let g2 = (n * n + s * s + w * w + e * e) / (jc * jc);
    let l = (n + s + w + e) / jc;
    let num = 0.5 * g2 - (1.0 / 16.0) * (l * l);
    let den = 1.0 + 0.25 * l;
    let qsqr = num / (den * den);
    let den = (qsqr - q0sqr) / (q0sqr * (1.0 + q0sqr));
    1.0 / (1.0 + den)
}

/// [`raw_coefficient`] saturated to [0, 1], as the kernel stores it.
pub fn coefficient(jc: f32, d: [f32; 4], q0sqr: f32) -> f32 {
    saturate(raw_coefficient(jc, d, q0sqr))
}

/// `c` clamped to [0, 1], as Rodinia's branches (`c < 0`, then `c > 1`)
/// clamp it.
fn saturate(c: f32) -> f32 {
    c.clamp(0.0, 1.0)
}

/// A cell's next value from its coefficient `cc`, its south and east
/// neighbours' `cs`, `ce`, and its differences `[n, s, w, e]`.
pub fn update(j: f32, cc: f32, cs: f32, ce: f32, [n, s, w, e]: [f32; 4], lambda: f32) -> f32 {
    let d_sum = cc * n + cs * s + cc * w + ce * e;
    j + 0.25 * lambda * d_sum
}

/// Buffers in allocation order.
const J: usize = 0;
const C: usize = 1;
const E: usize = 2;
const W: usize = 3;
const S: usize = 4;
const N: usize = 5;

pub struct Srad {
    launches: Launches,
    n: u64,
    iterations: u32,
    lambda: f32,
    at: [u64; 6],
    /// `J` (the image), then `C`, `E`, `W`, `S`, `N` as the launches so
    /// far left them.
    pub data: [Vec<f32>; 6],
    q0sqr: f32,
}

/// Tile `(bx, by)`: the `(row, col)` of lane `l` of warp `wi` in it, and
/// the lane's place `(tx, ty)` in the tile.
#[derive(Copy, Clone)]
struct Tile {
    bx: u64,
    by: u64,
}

impl Tile {
    fn tx(l: u32) -> u64 {
        (l % TILE) as u64
    }

    fn ty(wi: usize, l: u32) -> u64 {
        ((wi as u32 * WARP_SIZE + l) / TILE) as u64
    }

    fn row(&self, wi: usize, l: u32) -> u64 {
        self.by * TILE as u64 + Tile::ty(wi, l)
    }

    fn col(&self, l: u32) -> u64 {
        self.bx * TILE as u64 + Tile::tx(l)
    }
}

/// Shared address of `[ty][tx]` in the 16 × 16 `f32` array `k`.
fn shared(k: u64, wi: usize, l: u32) -> u64 {
    1024 * k + 4 * (Tile::ty(wi, l) * TILE as u64 + Tile::tx(l))
}

/// Shared address of `[ty + dy][tx + dx]` in array `k`.
fn shared_at(k: u64, wi: usize, l: u32, dy: i64, dx: i64) -> u64 {
    let (ty, tx) = (Tile::ty(wi, l) as i64 + dy, Tile::tx(l) as i64 + dx);
    1024 * k + 4 * (ty * TILE as i64 + tx) as u64
}

/// An `if`/`else if`/…/`else` chain: `cases` conditions tried in order,
/// each taken case (and the final `else`) running `body`.
fn chain(w: &mut Warp, cases: &[&dyn Fn(u32) -> bool], mut body: impl FnMut(&mut Warp)) {
    let mut open: Vec<If> = Vec::with_capacity(cases.len());
    for case in cases {
        let s = w.if_begin(case);
        body(w);
        w.if_else(&s);
        open.push(s);
    }
    body(w);
    for s in open.into_iter().rev() {
        w.if_end(s);
    }
}

/// A global load from `then(lane)` where `cond` holds, else from
/// `other(lane)`.
fn load_either(w: &mut Warp, cond: bool, then: impl FnMut(u32) -> u64, other: impl FnMut(u32) -> u64) {
    let s = w.if_begin(|_| cond);
    w.load(Space::Global, 4, then);
    w.if_else(&s);
    w.load(Space::Global, 4, other);
    w.if_end(s);
}

impl Srad {
    pub fn new(p: &Params) -> Result<Srad> {
        let n = order(p)?;
        let iterations = p.count_in("iterations", 1, 1000)? as u32;
        let lambda = p.real_in("lambda", 0.0, 1.0)?;
        if lambda == 0.0 {
            return Err(Error::config(p.key_path("lambda"), "must be above 0".to_string()));
        }
        let mut rng = component_rng(p.seed(), "gpu.srad.data");
        let image: Vec<f32> = (0..n * n).map(|_| rng.gen::<f32>().exp()).collect();
        let mut heap = Allocator::new(super::HEAP_BASE);
        let at = ["J", "C", "E", "W", "S", "N"].map(|name| heap.alloc(name, 4 * n * n));
        let zero = vec![0f32; (n * n) as usize];
        Ok(Srad {
            launches: Launches::new(heap.allocations),
            n,
            iterations,
            lambda: lambda as f32,
            at,
            data: [image, zero.clone(), zero.clone(), zero.clone(), zero.clone(), zero],
            q0sqr: 0.0,
        })
    }

    fn coefficients(&mut self, id: u32) -> Kernel {
        let (n, at, q0) = (self.n, self.at, self.q0sqr);
        let grid = n / TILE as u64;
        let [j, c_out, e_out, w_out, s_out, n_out] = &mut self.data;
        let j = &*j;
        let g = |r: u64, c: u64| 4 * (r * n + c);
        let last = grid - 1;
        // Shared arrays: temp, temp_result, north, south, east, west.
        let (temp, result, north, south, east, west) = (0, 1, 2, 3, 4, 5);
        launch("srad_cuda_1", id, [grid as u32, grid as u32, 1], [TILE, TILE, 1], 6 * 1024, 24, |[bx, by, _]| {
            let t = Tile { bx: bx as u64, by: by as u64 };
            let mut block = Block::new([bx, by, 0], TILE * TILE);
            let top = t.by * TILE as u64;
            let left = t.bx * TILE as u64;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.alu(8);
                load_either(w, t.by == 0, |l| at[J] + g(0, t.col(l)), |l| at[J] + g(top.wrapping_sub(1), t.col(l)));
                w.store(Space::Shared, 4, |l| shared(north, wi, l));
                load_either(w, t.by == last, |l| at[J] + g(n - 1, t.col(l)), |l| at[J] + g(top + TILE as u64, t.col(l)));
                w.store(Space::Shared, 4, |l| shared(south, wi, l));
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                load_either(w, t.bx == 0, |l| at[J] + g(t.row(wi, l), 0), |l| at[J] + g(t.row(wi, l), left.wrapping_sub(1)));
                w.store(Space::Shared, 4, |l| shared(west, wi, l));
                load_either(w, t.bx == last, |l| at[J] + g(t.row(wi, l), n - 1), |l| at[J] + g(t.row(wi, l), left + TILE as u64));
                w.store(Space::Shared, 4, |l| shared(east, wi, l));
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.load(Space::Global, 4, |l| at[J] + g(t.row(wi, l), t.col(l)));
                w.store(Space::Shared, 4, |l| shared(temp, wi, l));
            }
            block.barrier();
            let edge = (TILE - 1) as u64;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let (tx, ty) = (|l: u32| Tile::tx(l), |l: u32| Tile::ty(wi, l));
                w.load(Space::Shared, 4, |l| shared(temp, wi, l));
                // Rodinia's order: nw, ne, se, sw, n, e, s, w, then inside.
                let cases: [&dyn Fn(u32) -> bool; 8] = [
                    &|l| ty(l) == 0 && tx(l) == 0,
                    &|l| ty(l) == 0 && tx(l) == edge,
                    &|l| ty(l) == edge && tx(l) == edge,
                    &|l| ty(l) == edge && tx(l) == 0,
                    &|l| ty(l) == 0,
                    &|l| tx(l) == edge,
                    &|l| ty(l) == edge,
                    &|l| tx(l) == 0,
                ];
                chain(w, &cases, |w| {
                    w.load(Space::Shared, 4, |l| if ty(l) == 0 { shared(north, wi, l) } else { shared_at(temp, wi, l, -1, 0) });
                    w.alu(1);
                    w.load(Space::Shared, 4, |l| if ty(l) == edge { shared(south, wi, l) } else { shared_at(temp, wi, l, 1, 0) });
                    w.alu(1);
                    w.load(Space::Shared, 4, |l| if tx(l) == 0 { shared(west, wi, l) } else { shared_at(temp, wi, l, 0, -1) });
                    w.alu(1);
                    w.load(Space::Shared, 4, |l| if tx(l) == edge { shared(east, wi, l) } else { shared_at(temp, wi, l, 0, 1) });
                    w.alu(1);
                });
                w.alu(12);
                w.sfu(5);
                w.alu(5);
                // The cell's differences and coefficient, clamped at the image edges.
                let cell = |l: u32| {
                    let (r, c) = (t.row(wi, l), t.col(l));
                    let jc = j[(r * n + c) as usize];
                    let at = |rr: u64, cc: u64| j[(rr * n + cc) as usize] - jc;
                    let d = [at(r.saturating_sub(1), c), at((r + 1).min(n - 1), c), at(r, c.saturating_sub(1)), at(r, (c + 1).min(n - 1))];
                    (r * n + c, d, raw_coefficient(jc, d, q0))
                };
                let mut raw = [0f32; 32];
                for l in w.active() {
                    raw[l as usize] = cell(l).2;
                }
                let low = w.if_begin(|l| raw[l as usize] < 0.0);
                w.store(Space::Shared, 4, |l| shared(result, wi, l));
                w.if_else(&low);
                let high = w.if_begin(|l| raw[l as usize] > 1.0);
                w.store(Space::Shared, 4, |l| shared(result, wi, l));
                w.if_else(&high);
                w.store(Space::Shared, 4, |l| shared(result, wi, l));
                w.if_end(high);
                w.if_end(low);
                for l in w.active() {
                    let (i, [dn, ds, dw, de], c) = cell(l);
                    let i = i as usize;
                    (c_out[i], n_out[i], s_out[i], w_out[i], e_out[i]) = (saturate(c), dn, ds, dw, de);
                }
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.load(Space::Shared, 4, |l| shared(result, wi, l));
                w.alu(1);
                for k in [C, E, W, S, N] {
                    w.store(Space::Global, 4, |l| at[k] + g(t.row(wi, l), t.col(l)));
                }
            }
            block.finish()
        })
    }

    fn diffuse(&mut self, id: u32) -> Kernel {
        let (n, at, lambda) = (self.n, self.at, self.lambda);
        let grid = n / TILE as u64;
        let [j, c, e, w_diff, s, n_diff] = &mut self.data;
        let (c, e, w_diff, s, n_diff) = (&*c, &*e, &*w_diff, &*s, &*n_diff);
        let g = |r: u64, col: u64| 4 * (r * n + col);
        let last = grid - 1;
        // Shared arrays: south_c, east_c, c_temp, c_result, temp.
        let (south_c, east_c, c_temp, c_result, temp) = (0, 1, 2, 3, 4);
        launch("srad_cuda_2", id, [grid as u32, grid as u32, 1], [TILE, TILE, 1], 5 * 1024, 20, |[bx, by, _]| {
            let t = Tile { bx: bx as u64, by: by as u64 };
            let mut block = Block::new([bx, by, 0], TILE * TILE);
            let top = t.by * TILE as u64;
            let left = t.bx * TILE as u64;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.alu(6);
                w.load(Space::Global, 4, |l| at[J] + g(t.row(wi, l), t.col(l)));
                w.store(Space::Shared, 4, |l| shared(temp, wi, l));
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                load_either(w, t.by == last, |l| at[C] + g(n - 1, t.col(l)), |l| at[C] + g(top + TILE as u64, t.col(l)));
                w.store(Space::Shared, 4, |l| shared(south_c, wi, l));
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                load_either(w, t.bx == last, |l| at[C] + g(t.row(wi, l), n - 1), |l| at[C] + g(t.row(wi, l), left + TILE as u64));
                w.store(Space::Shared, 4, |l| shared(east_c, wi, l));
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.load(Space::Global, 4, |l| at[C] + g(t.row(wi, l), t.col(l)));
                w.store(Space::Shared, 4, |l| shared(c_temp, wi, l));
            }
            block.barrier();
            let edge = (TILE - 1) as u64;
            for (wi, w) in block.warps.iter_mut().enumerate() {
                let (tx, ty) = (|l: u32| Tile::tx(l), |l: u32| Tile::ty(wi, l));
                w.load(Space::Shared, 4, |l| shared(c_temp, wi, l));
                // Rodinia's order: se, e, s, then inside.
                let cases: [&dyn Fn(u32) -> bool; 3] =
                    [&|l| ty(l) == edge && tx(l) == edge, &|l| tx(l) == edge, &|l| ty(l) == edge];
                chain(w, &cases, |w| {
                    w.load(Space::Shared, 4, |l| if ty(l) == edge { shared(south_c, wi, l) } else { shared_at(c_temp, wi, l, 1, 0) });
                    w.load(Space::Shared, 4, |l| if tx(l) == edge { shared(east_c, wi, l) } else { shared_at(c_temp, wi, l, 0, 1) });
                });
                w.alu(1);
                for k in [N, S, W, E] {
                    w.load(Space::Global, 4, |l| at[k] + g(t.row(wi, l), t.col(l)));
                }
                w.alu(4);
                w.load(Space::Shared, 4, |l| shared(temp, wi, l));
                w.alu(2);
                w.store(Space::Shared, 4, |l| shared(c_result, wi, l));
            }
            block.barrier();
            for (wi, w) in block.warps.iter_mut().enumerate() {
                w.load(Space::Shared, 4, |l| shared(c_result, wi, l));
                w.store(Space::Global, 4, |l| at[J] + g(t.row(wi, l), t.col(l)));
                for l in w.active() {
                    let (r, col) = (t.row(wi, l), t.col(l));
                    let i = (r * n + col) as usize;
                    let cs = c[(((r + 1).min(n - 1)) * n + col) as usize];
                    let ce = c[(r * n + (col + 1).min(n - 1)) as usize];
                    j[i] = update(j[i], c[i], cs, ce, [n_diff[i], s[i], w_diff[i], e[i]], lambda);
                }
            }
            block.finish()
        })
    }
}

impl KernelSource for Srad {
    fn allocations(&self) -> &[Allocation] {
        &self.launches.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        if self.launches.issued == 2 * self.iterations {
            return Ok(None);
        }
        let id = self.launches.next_id();
        if id % 2 == 1 {
            self.q0sqr = q0sqr(&self.data[J], self.n);
            return Ok(Some(self.coefficients(id)));
        }
        Ok(Some(self.diffuse(id)))
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::{drain, params};
    use super::*;
    use crate::workload::gpu::Op;

    #[test]
    fn the_image_is_a_host_diffusions() {
        let (n, iterations, lambda) = (48usize, 3, 0.5f32);
        let mut s = Srad::new(&params("srad", &[("n", "48"), ("iterations", "3")], 6)).unwrap();
        let mut img = s.data[J].clone();
        let ks = drain(&mut s);
        let names: Vec<&str> = ks.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["srad_cuda_1", "srad_cuda_2"].repeat(iterations));
        for _ in 0..iterations {
            let q0 = q0sqr(&img, n as u64);
            let at = |r: usize, c: usize| img[r * n + c];
            let mut diff = vec![[0f32; 4]; n * n];
            let mut coef = vec![0f32; n * n];
            for r in 0..n {
                for c in 0..n {
                    let jc = at(r, c);
                    let d = [at(r.saturating_sub(1), c) - jc, at((r + 1).min(n - 1), c) - jc, at(r, c.saturating_sub(1)) - jc, at(r, (c + 1).min(n - 1)) - jc];
                    diff[r * n + c] = d;
                    coef[r * n + c] = coefficient(jc, d, q0);
                }
            }
            for r in 0..n {
                for c in 0..n {
                    let i = r * n + c;
                    img[i] = update(img[i], coef[i], coef[(r + 1).min(n - 1) * n + c], coef[r * n + (c + 1).min(n - 1)], diff[i], lambda);
                }
            }
        }
        assert_eq!(s.data[J], img);
        assert!(s.data[C].iter().any(|&c| c > 0.0 && c < 1.0));
        // Tile (0, 0) takes the clamped north and west rows, an inner tile the halo.
        let k = &ks[0];
        assert_eq!(k.grid, [3, 3, 1]);
        let global = |b: usize| -> Vec<u64> {
            k.blocks[b].warps[0].iter().filter(|(i, _)| i.op == Op::Load && i.space == Space::Global).map(|(_, a)| a[0]).collect()
        };
        let j0 = s.at[J];
        assert_eq!(global(0)[0], j0);
        assert_eq!(global(4)[0], j0 + 4 * (15 * 48 + 16));
        // Corners and sides diverge: the inner case of warp 0 has lanes 1 to 14 and 17 to 30 but
        // not the first tile row (north side), so 17 to 30.
        assert!(k.blocks[4].warps[0].insts.iter().any(|i| i.mask == 0x7ffe_0000));
    }
}
