//! `xsbench`: XSBench's event-based macroscopic cross-section lookups on the
//! unionized energy grid.
//!
//! ## What it models
//! XSBench (Tramm et al., ANL-CESAR/XSBench), the kernel of Monte Carlo neutron
//! transport used in the Mosaic Pages evaluation, with its default unionized
//! grid and event-based method:
//! - **nuclide grids**: `n_isotopes × n_gridpoints` points of
//!   `{energy, total, elastic, absorption, fission, nu-fission}` (48 bytes),
//!   random, each nuclide's points sorted by energy;
//! - **unionized energy grid**: all `n_isotopes × n_gridpoints` energies,
//!   sorted (8 bytes each), and the **index grid**: for every unionized energy
//!   and every nuclide, the index of that nuclide's grid point just below it
//!   (`int`, `n_isotopes` per unionized point: by far the largest array);
//! - **materials**: XSBench's 12 H-M materials with its nuclide counts (fuel 34
//!   nuclides in `small`, 321 in `large`; cladding 5; borated water 4 and 4;
//!   RPV 27; reflectors, plates and nozzles 21; fuel-assembly ends 9 and 9),
//!   its nuclide lists, and random concentrations.
//!
//! Each lookup samples an energy and a material with XSBench's LCG and its
//! material probability distribution (fuel 14 %, cladding 5.2 %, cold water
//! 27.5 %, hot water 13.4 %, RPV 15.4 %, ...), binary-searches the unionized
//! grid, then for each nuclide of the material reads the nuclide id and
//! concentration, the index-grid entry, and the bounding pair of grid points,
//! and interpolates the five cross sections into the macroscopic vector.
//! XSBench's verification hash (sum of 1 + the index of each lookup's largest
//! channel) is kept in [`XsBench::vhash`].
//!
//! Instruction model, per lookup: 8 for the energy sample and `3 + 2·(m+1)`
//! for picking material `m`; 5 per probe of the unionized search (one load
//! each); 3 to load `num_nucs[m]`; per nuclide: 3 + load `mats`, 1 + load
//! `concs`, 4 + load the index-grid entry, 3 + 1 for the two bounding energies,
//! 3 for the interpolation factor, then per channel 1 + load each of the two
//! points' values and 3 to interpolate and accumulate (a 12-load, ~38-
//! instruction step); 12 for the verification scan.
//!
//! Dependencies: the index-grid load depends on the `mats` load (the nuclide
//! id is its column), and all twelve grid-point loads on the index-grid load
//! (the grid index). The unionized search's probes are steered by compares
//! only (control, not modelled), so they and the row of the index grid have
//! none; nor do `num_nucs` and `concs`.
//!
//! ## Choices
//! - `size` selects XSBench's H-M `small` (68 nuclides) or `large` (355);
//!   `gridpoints` defaults to XSBench's 11303 and, like its `-g`, scales the
//!   problem (the index grid is `68² × g × 4` or `355² × g × 4` bytes: 209 MiB
//!   small, 5.3 GiB large at the default, tens of GiB with more points).
//! - Seed 0 reproduces XSBench's own data and sample sequence (grid LCG seed
//!   42, concentrations `1070²`, lookups `1070`); other seeds derive all three.
//! - Arrays are malloc'd in XSBench's order (nuclide grid, unionized grid,
//!   index grid, then the small material arrays), so the big ones are mmaps.
//! - The macroscopic-vector accumulators stay in registers (no stack traffic),
//!   as an optimising compiler keeps them.
//! - The host does not store the index grid: an entry is the count of the
//!   nuclide's energies at or below the unionized energy, minus one, clamped to
//!   `[0, g−2]` — exactly what XSBench's construction produces for distinct
//!   energies (tested) — computed from per-nuclide counts checkpointed every 64
//!   unionized points plus the few points since. The emitted load is the same;
//!   the host saves the index grid's size (5.3 GiB for `large`).

use super::emit::Dep;
use super::kit::{advise_huge, huge_vec, mix64};
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "xsbench",
    summary: "XSBench event-based cross-section lookups: unionized energy grid, index grid, nuclide grids",
    params: PARAMS,
    footprint: |p| {
        let (n_iso, n_gp) = dims(p)?;
        Ok(footprint_bytes(n_iso, n_gp))
    },
    build: |p| Ok(Box::new(XsBench::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "size", default: "small", doc: "H-M benchmark size: small (68 nuclides) or large (355)" },
    ParamDoc { name: "gridpoints", default: "11303", doc: "energy gridpoints per nuclide (XSBench -g), 16 to 1M" },
    ParamDoc { name: "lookups", default: "200k", doc: "macroscopic cross-section lookups (XSBench's own default is 17M)" },
];

const INS_SAMPLE: u32 = 8;
const INS_PROBE: u32 = 5;
const CKPT: usize = 64;

const STARTING_SEED: u64 = 1070;
const LCG_A: u64 = 2_806_196_910_506_780_709;
const LCG_MASK: u64 = (1 << 63) - 1;

/// XSBench's material CDF (fractions of the core by volume).
const MAT_CDF: [f64; 12] = [0.140, 0.192, 0.467, 0.601, 0.755, 0.819, 0.885, 0.940, 0.948, 0.963, 0.988, 1.0];

/// Nuclides of the 34-nuclide fuel; `large` appends nuclides 68..355.
const FUEL_SMALL: [u32; 34] = [
    58, 59, 60, 61, 40, 42, 43, 44, 45, 46, 1, 2, 3, 7, 8, 9, 10, 29, 57, 47, 48, 0, 62, 15, 33, 34, 52, 53, 54, 55,
    56, 18, 23, 41,
];
const CLADDING: [u32; 5] = [63, 64, 65, 66, 67];
const WATER: [u32; 4] = [24, 41, 4, 5];
const RPV: [u32; 27] = [19, 20, 21, 22, 35, 36, 37, 38, 39, 25, 27, 28, 29, 30, 31, 32, 26, 49, 50, 51, 11, 12, 13, 14, 6, 16, 17];
const REFLECTOR: [u32; 21] = [24, 41, 4, 5, 19, 20, 21, 22, 35, 36, 37, 38, 39, 25, 49, 50, 51, 11, 12, 13, 14];
const FA_END: [u32; 9] = [24, 41, 4, 5, 63, 64, 65, 66, 67];

fn dims(p: &Params) -> Result<(usize, usize)> {
    let n_iso = match p.choice("size", &["small", "large"])? {
        "small" => 68,
        _ => 355,
    };
    Ok((n_iso, p.count_in("gridpoints", 16, 1 << 20)? as usize))
}

fn fuel_nucs(n_iso: usize) -> usize {
    if n_iso == 68 {
        34
    } else {
        321
    }
}

pub fn footprint_bytes(n_iso: usize, n_gp: usize) -> u64 {
    let l = (n_iso * n_gp) as u64;
    let max = fuel_nucs(n_iso) as u64;
    l * 48 + l * 8 + l * n_iso as u64 * 4 + 48 + 12 * max * 12
}

/// XSBench's `LCG_random_double`.
#[inline(always)]
fn lcg(s: &mut u64) -> f64 {
    *s = LCG_A.wrapping_mul(*s).wrapping_add(1) & LCG_MASK;
    *s as f64 / 9_223_372_036_854_775_808.0
}

/// XSBench's `pick_mat`.
#[inline]
fn pick_mat(s: &mut u64) -> usize {
    let roll = lcg(s);
    MAT_CDF.iter().position(|&c| roll < c).unwrap_or(11)
}

fn derive(seed: u64, xsbench: u64, salt: u64) -> u64 {
    if seed == 0 {
        xsbench
    } else {
        mix64(seed ^ salt) & LCG_MASK
    }
}

/// XSBench's simulation data, on the host and at simulated addresses.
pub struct XsData {
    pub n_iso: usize,
    pub n_gp: usize,
    /// Nuclide grids, `n_iso × n_gp` points.
    pub grid: Vec<[f64; 6]>,
    /// Unionized energies, sorted.
    pub egrid: Vec<f64>,
    /// Nuclide each unionized energy came from.
    owner: Vec<u16>,
    /// Per-nuclide count of energies in `egrid[..=r·CKPT]`, row `r`.
    ckpt: Vec<u32>,
    delta: Vec<u8>,
    num_nucs: [usize; 12],
    max_nucs: usize,
    mats: Vec<u32>,
    concs: Vec<f64>,
    a_grid: u64,
    a_egrid: u64,
    a_index: u64,
    a_num_nucs: u64,
    a_mats: u64,
    a_concs: u64,
}

impl XsData {
    /// Generate XSBench's data for `n_iso` nuclides (68 or 355) of `n_gp`
    /// points, placed in `space` in XSBench's allocation order.
    pub fn generate(n_iso: usize, n_gp: usize, seed: u64, space: &mut AddressSpace) -> XsData {
        let len = n_iso * n_gp;
        let mut s = derive(seed, 42, 0x6772_6964);
        let mut grid: Vec<[f64; 6]> = Vec::with_capacity(len);
        advise_huge(&grid);
        for _ in 0..len {
            let mut p = [0.0; 6];
            for v in p.iter_mut() {
                *v = lcg(&mut s);
            }
            grid.push(p);
        }
        for nuc in grid.chunks_mut(n_gp) {
            nuc.sort_unstable_by(|a, b| a[0].total_cmp(&b[0]));
        }
        let mut pairs: Vec<(f64, u16)> = (0..len).map(|i| (grid[i][0], (i / n_gp) as u16)).collect();
        pairs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        let mut egrid: Vec<f64> = Vec::with_capacity(len);
        advise_huge(&egrid);
        egrid.extend(pairs.iter().map(|p| p.0));
        let mut owner: Vec<u16> = Vec::with_capacity(len);
        advise_huge(&owner);
        owner.extend(pairs.iter().map(|p| p.1));
        drop(pairs);
        let rows = (len - 1) / CKPT + 1;
        let mut ckpt = huge_vec(rows * n_iso, 0u32);
        let mut counts = vec![0u32; n_iso];
        for (e, &o) in owner.iter().enumerate() {
            counts[o as usize] += 1;
            if e % CKPT == 0 {
                ckpt[(e / CKPT) * n_iso..][..n_iso].copy_from_slice(&counts);
            }
        }

        let fuel = fuel_nucs(n_iso);
        let num_nucs = [fuel, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9];
        let max_nucs = fuel;
        let mut mats = vec![0u32; 12 * max_nucs];
        mats[..34].copy_from_slice(&FUEL_SMALL);
        for (i, m) in mats[34..fuel].iter_mut().enumerate() {
            *m = 68 + i as u32;
        }
        let lists: [&[u32]; 11] =
            [&CLADDING, &WATER, &WATER, &RPV, &REFLECTOR, &REFLECTOR, &REFLECTOR, &REFLECTOR, &REFLECTOR, &FA_END, &FA_END];
        for (m, l) in lists.iter().enumerate() {
            mats[(m + 1) * max_nucs..][..l.len()].copy_from_slice(l);
        }
        let mut cs = derive(seed, STARTING_SEED * STARTING_SEED, 0x636f_6e63);
        let mut concs = vec![0.0; 12 * max_nucs];
        for (m, &n) in num_nucs.iter().enumerate() {
            for c in concs[m * max_nucs..][..n].iter_mut() {
                *c = lcg(&mut cs);
            }
        }

        let a_grid = space.malloc(len as u64 * 48);
        let a_egrid = space.malloc(len as u64 * 8);
        let a_index = space.malloc(len as u64 * n_iso as u64 * 4);
        let a_num_nucs = space.malloc(12 * 4);
        let a_mats = space.malloc(mats.len() as u64 * 4);
        let a_concs = space.malloc(concs.len() as u64 * 8);
        XsData {
            n_iso,
            n_gp,
            grid,
            egrid,
            owner,
            ckpt,
            delta: vec![0; n_iso],
            num_nucs,
            max_nucs,
            mats,
            concs,
            a_grid,
            a_egrid,
            a_index,
            a_num_nucs,
            a_mats,
            a_concs,
        }
    }

    /// `index_grid[e][nuc]`, computed from the checkpoints (slow path, tests).
    pub fn index_at(&self, e: usize, nuc: usize) -> usize {
        let row = e / CKPT;
        let extra = self.owner[row * CKPT + 1..=e].iter().filter(|&&o| o as usize == nuc).count();
        let cnt = self.ckpt[row * self.n_iso + nuc] as usize + extra;
        cnt.saturating_sub(1).min(self.n_gp - 2)
    }

    /// XSBench's `calculate_macro_xs` for energy `p` in material `mat`.
    pub fn lookup(&mut self, p: f64, mat: usize, e: &mut Emitter) -> [f64; 5] {
        let (n_iso, n_gp) = (self.n_iso, self.n_gp);
        let (mut lo, mut hi) = (0usize, self.egrid.len() - 1);
        while hi - lo > 1 {
            let mid = lo + (hi - lo) / 2;
            e.ins(INS_PROBE);
            e.load(self.a_egrid + 8 * mid as u64, 8);
            if self.egrid[mid] > p {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        let idx = lo;
        let row = idx / CKPT;
        for &o in &self.owner[row * CKPT + 1..=idx] {
            self.delta[o as usize] += 1;
        }
        e.ins(3);
        e.load(self.a_num_nucs + 4 * mat as u64, 4);
        let mut macro_xs = [0.0f64; 5];
        let ckpt_row = &self.ckpt[row * n_iso..][..n_iso];
        let index_row = self.a_index + 4 * (idx * n_iso) as u64;
        for j in 0..self.num_nucs[mat] {
            let slot = mat * self.max_nucs + j;
            e.ins(3);
            let dnuc = e.load_on(self.a_mats + 4 * slot as u64, 4, Dep::NONE);
            let nuc = self.mats[slot] as usize;
            e.ins(1);
            e.load(self.a_concs + 8 * slot as u64, 8);
            let conc = self.concs[slot];
            e.ins(4);
            let dgi = e.load_on(index_row + 4 * nuc as u64, 4, dnuc);
            let cnt = ckpt_row[nuc] as usize + self.delta[nuc] as usize;
            let gi = cnt.saturating_sub(1).min(n_gp - 2);
            let low_i = nuc * n_gp + gi;
            let la = self.a_grid + 48 * low_i as u64;
            let ha = la + 48;
            e.ins(3);
            e.load_on(ha, 8, dgi);
            e.ins(1);
            e.load_on(la, 8, dgi);
            let (low, high) = (&self.grid[low_i], &self.grid[low_i + 1]);
            let f = (high[0] - p) / (high[0] - low[0]);
            e.ins(3);
            for k in 1..6 {
                e.ins(1);
                e.load_on(ha + 8 * k as u64, 8, dgi);
                e.ins(1);
                e.load_on(la + 8 * k as u64, 8, dgi);
                let xs = high[k] - f * (high[k] - low[k]);
                macro_xs[k - 1] += xs * conc;
                e.ins(3);
            }
        }
        for &o in &self.owner[row * CKPT + 1..=idx] {
            self.delta[o as usize] = 0;
        }
        macro_xs
    }
}

pub struct XsBench {
    n_iso: usize,
    n_gp: usize,
    lookups: u64,
    seed: u64,
    /// XSBench's verification hash of the lookups run (set by `run`).
    pub vhash: u64,
}

impl XsBench {
    pub fn new(p: &Params) -> Result<XsBench> {
        let (n_iso, n_gp) = dims(p)?;
        Ok(XsBench { n_iso, n_gp, lookups: p.count("lookups")?, seed: p.seed(), vhash: 0 })
    }
}

impl Workload for XsBench {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let mut data = XsData::generate(self.n_iso, self.n_gp, self.seed, &mut space);
        let mut s = derive(self.seed, STARTING_SEED, 0x6c6f_6f6b);
        let mut vhash = 0u64;
        for i in 0..self.lookups {
            let p = lcg(&mut s);
            let mat = pick_mat(&mut s);
            e.ins(INS_SAMPLE + 3 + 2 * (mat as u32 + 1));
            let xs = data.lookup(p, mat, e);
            let (mut max, mut max_idx) = (-1.0, 0);
            for (j, &v) in xs.iter().enumerate() {
                if v > max {
                    max = v;
                    max_idx = j;
                }
            }
            vhash += max_idx as u64 + 1;
            e.ins(12);
            if i % 1024 == 0 {
                e.progress(i, self.lookups);
                if e.stopped() {
                    break;
                }
            }
        }
        e.progress(self.lookups, self.lookups);
        self.vhash = vhash;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::{distinct_pages, emitted};
    use crate::workload::NullSink;

    /// XSBench's `grid_search_nuclide` + `calculate_micro_xs`, straight from
    /// the nuclide grid, accumulated as `calculate_macro_xs` does.
    fn reference(d: &XsData, p: f64, mat: usize) -> [f64; 5] {
        let mut out = [0.0; 5];
        for j in 0..d.num_nucs[mat] {
            let nuc = d.mats[mat * d.max_nucs + j] as usize;
            let conc = d.concs[mat * d.max_nucs + j];
            let g = &d.grid[nuc * d.n_gp..(nuc + 1) * d.n_gp];
            let (mut lo, mut hi) = (0usize, d.n_gp - 1);
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if g[mid][0] > p {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let (low, high) = (&g[lo], &g[lo + 1]);
            let f = (high[0] - p) / (high[0] - low[0]);
            for k in 1..6 {
                out[k - 1] += (high[k] - f * (high[k] - low[k])) * conc;
            }
        }
        out
    }

    #[test]
    fn index_grid_matches_xsbench_construction() {
        for (n_iso, n_gp) in [(68usize, 300usize), (355, 40)] {
            let mut space = AddressSpace::new();
            let d = XsData::generate(n_iso, n_gp, 0, &mut space);
            assert!(d.egrid.windows(2).all(|w| w[0] < w[1]), "test data needs distinct energies");
            // GridInit.c: walk the unionized grid, bumping each nuclide's low index.
            let mut idx_low = vec![0usize; n_iso];
            let mut energy_high: Vec<f64> = (0..n_iso).map(|i| d.grid[i * n_gp + 1][0]).collect();
            for (e, &u) in d.egrid.iter().enumerate() {
                for i in 0..n_iso {
                    if u >= energy_high[i] && idx_low[i] != n_gp - 2 {
                        idx_low[i] += 1;
                        energy_high[i] = d.grid[i * n_gp + idx_low[i] + 1][0];
                    }
                    assert_eq!(d.index_at(e, i), idx_low[i], "e={e} nuclide={i}");
                }
            }
        }
    }

    #[test]
    fn lookups_equal_a_reference_calculation() {
        for n_iso in [68usize, 355] {
            let mut space = AddressSpace::new();
            let mut d = XsData::generate(n_iso, 200, 9, &mut space);
            let mut null = NullSink;
            let mut e = Emitter::new(&mut null);
            let mut s = 12345u64;
            for i in 0..5000 {
                // Include the grid's ends.
                let p = match i {
                    0 => 0.0,
                    1 => 0.999_999_9,
                    _ => lcg(&mut s),
                };
                let mat = pick_mat(&mut s);
                let got = d.lookup(p, mat, &mut e);
                assert_eq!(got, reference(&d, p, mat), "lookup {i}: energy {p} material {mat}");
            }
            assert!(d.delta.iter().all(|&x| x == 0));
        }
    }

    #[test]
    fn materials_follow_xsbench() {
        let mut space = AddressSpace::new();
        let d = XsData::generate(355, 20, 0, &mut space);
        assert_eq!(d.num_nucs, [321, 5, 4, 4, 27, 21, 21, 21, 21, 21, 9, 9]);
        assert_eq!(d.mats[33], 41);
        assert_eq!(d.mats[34], 68);
        assert_eq!(d.mats[320], 354);
        // The sampling CDF gives fuel about 14 % of lookups.
        let mut s = STARTING_SEED;
        let fuel = (0..100_000).filter(|_| pick_mat(&mut s) == 0).count();
        assert!((13_000..15_000).contains(&fuel), "{fuel}");
    }

    #[test]
    fn footprint_is_dominated_by_the_index_grid() {
        // small at XSBench's defaults: 240 MiB, 209 MB of it the index grid.
        assert_eq!(footprint_bytes(68, 11303), 252_107_056);
        let recs = emitted("xsbench", &[("gridpoints", "400"), ("lookups", "20000")], 4);
        let pages = distinct_pages(&recs) as f64;
        let all = footprint_bytes(68, 400) as f64 / 4096.0;
        // Lookups touch most pages of every array (each index-grid row is 272 bytes).
        assert!(pages > 0.8 * all && pages < 1.05 * all, "pages {pages} of {all}");
    }
}
