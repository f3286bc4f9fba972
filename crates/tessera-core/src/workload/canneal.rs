//! `canneal`: PARSEC canneal's simulated-annealing placement of a netlist.
//!
//! ## What it models
//! PARSEC canneal (one of the GTSM evaluation's workloads): a netlist of
//! elements placed on a grid; the annealer repeatedly picks two elements, works
//! out how swapping their locations changes the routing cost, and swaps them
//! if that cost falls, or with Boltzmann probability `exp(−Δ/T)` if it rises.
//! Each temperature step runs `swaps` moves and then divides `T` by 1.5, as in
//! canneal's `annealer_thread::Run`.
//!
//! Data, laid out as canneal's C++ holds it:
//! - `netlist_elem _elements[N]`: one contiguous array (canneal's
//!   `std::vector<netlist_elem>`) of 88-byte elements:
//!   `{ std::string name (32 B); std::vector<elem*> fanin (24 B);
//!   std::vector<elem*> fanout (24 B); location_t *present_loc; }`;
//! - the fan-in and fan-out lists: each a `std::vector` buffer of element
//!   pointers from `malloc`, grown by `push_back` while the netlist is parsed
//!   (capacity doubling: a new buffer, a copy, the old one freed), so list
//!   buffers of all sizes interleave on the heap in parse order;
//! - `location_t _locations[N]` (`{int x; int y;}`), one array; an element's
//!   `present_loc` points at its location, and a swap exchanges two pointers.
//!
//! A move (canneal's `calculate_delta_routing_cost` and `swap_cost`): `a` is the
//! previous move's `b`, `b` a fresh random element; load both `present_loc`s and
//! their coordinates; for each element, for each of its fan-in and fan-out
//! lists, load the vector's begin and end, and per neighbour load the
//! pointer, the neighbour's `present_loc` and its `x` and `y`, adding the
//! Manhattan distances from the old and the new location. An accepted move
//! exchanges the two `present_loc` pointers (two loads, two stores).
//!
//! Instruction model, per move: 6 to pick `b` (one RNG draw, usually no
//! retry); 2 + 2 per location read; per list 2 before its begin/end loads; per
//! neighbour 2 + pointer load, 1 + `present_loc` load, 1 + `x` load, `y` load,
//! then 8 for the two distances; the decision 2 when the cost falls, else 40
//! (an RNG draw and `exp`); 4 before the swap's accesses.
//!
//! Dependencies: a location's `x` and `y` loads depend on the `present_loc`
//! load that points at it; a list's neighbour-pointer loads on the vector's
//! `begin` load; a neighbour's `present_loc` load on the pointer load that
//! named it. The two moved elements are indexed from the RNG (registers), so
//! their own `present_loc`, list `begin`/`end` and the swap's accesses have none.
//!
//! ## Choices
//! - The netlist is generated: element `i`'s fan-in count is uniform in
//!   `1..=2·fanin−1` (mean `fanin`), its sources uniform over the other
//!   elements; fan-outs are the reverse edges, in parse order. Element `i` is
//!   the `i`-th line of the netlist (canneal numbers elements by first
//!   appearance, which interleaves forward references; not modelled).
//! - canneal's name → element `std::map` (used only while parsing) and the
//!   element names' characters (short names stay inside `std::string`'s
//!   inline buffer) are not modelled.
//! - The grid is `⌈√N⌉` wide; initial placement is a random permutation (canneal
//!   shuffles too); neither building nor placing is emitted.
//! - Defaults follow PARSEC's `simlarge` input (400 000 elements, 15 000 swaps
//!   per step, start temperature 2000) with 40 temperature steps.

use rand::Rng;

use super::emit::Dep;
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::Result;
use crate::rng::{component_rng, SimRng};

pub const INFO: WorkloadInfo = WorkloadInfo {
    name: "canneal",
    summary: "PARSEC canneal: simulated-annealing element swaps over a netlist on a grid",
    params: PARAMS,
    footprint: |p| Ok(estimate_bytes(p.count_in("elements", 2, MAX_ELEMENTS)?, p.count_in("fanin", 1, 64)?)),
    build: |p| Ok(Box::new(Canneal::new(p)?)),
};

const PARAMS: &[ParamDoc] = &[
    ParamDoc { name: "elements", default: "400k", doc: "netlist elements (PARSEC simlarge: 400k, native: 2.5M)" },
    ParamDoc { name: "fanin", default: "3", doc: "mean fan-in per element, 1 to 64" },
    ParamDoc { name: "swaps", default: "15000", doc: "moves per temperature step" },
    ParamDoc { name: "temp", default: "2000", doc: "starting temperature" },
    ParamDoc { name: "steps", default: "40", doc: "temperature steps" },
];

const MAX_ELEMENTS: u64 = 1 << 31;
const ELEM_BYTES: u64 = 88;
const OFF_FANIN: u64 = 32;
const OFF_FANOUT: u64 = 56;
const OFF_LOC: u64 = 80;

const INS_PICK: u32 = 6;
const INS_LOC: u32 = 2;
const INS_LIST: u32 = 2;
const INS_DIST: u32 = 8;
const INS_GOOD: u32 = 2;
const INS_BOLTZMANN: u32 = 40;
const INS_SWAP: u32 = 4;

/// Estimated bytes: elements, locations, and list buffers (each list of `d`
/// pointers has capacity rounded up to a power of two, in a malloc chunk).
pub fn estimate_bytes(n: u64, fanin: u64) -> u64 {
    let cap = fanin.next_power_of_two().max(1);
    let list = (cap * 8 + 16).div_ceil(16).max(2) * 16;
    // Every element has a fan-in list; most have a fan-out list.
    n * (ELEM_BYTES + 8) + n * 2 * list
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Good,
    Bad,
    Reject,
}

/// The netlist: element lists (host CSR), placement, and simulated addresses.
pub struct Netlist {
    n: usize,
    fanin_off: Vec<u32>,
    fanin: Vec<u32>,
    fanout_off: Vec<u32>,
    fanout: Vec<u32>,
    fanin_buf: Vec<u64>,
    fanout_buf: Vec<u64>,
    /// Element → its location index (`present_loc`).
    pub loc_of: Vec<u32>,
    width: u32,
    a_elems: u64,
    a_locs: u64,
}

/// A `std::vector<elem*>` while parsing: its buffer and capacity.
#[derive(Copy, Clone, Default)]
struct Growing {
    buf: u64,
    len: u32,
    cap: u32,
}

impl Growing {
    /// `push_back`: grow by doubling through malloc/copy/free.
    fn push(&mut self, space: &mut AddressSpace) {
        if self.len == self.cap {
            let cap = (self.cap * 2).max(1);
            let buf = space.malloc(cap as u64 * 8);
            if self.cap > 0 {
                space.free(self.buf);
            }
            self.buf = buf;
            self.cap = cap;
        }
        self.len += 1;
    }
}

impl Netlist {
    pub fn generate(n: usize, fanin: u32, rng: &mut SimRng, space: &mut AddressSpace) -> Netlist {
        let a_elems = space.malloc(n as u64 * ELEM_BYTES);
        let a_locs = space.malloc(n as u64 * 8);
        let mut fanin_off = Vec::with_capacity(n + 1);
        let mut fanin_list = Vec::with_capacity(n * fanin as usize);
        let mut ins = vec![Growing::default(); n];
        let mut outs = vec![Growing::default(); n];
        let mut out_deg = vec![0u32; n];
        fanin_off.push(0);
        for (i, fanin_vec) in ins.iter_mut().enumerate() {
            let d = rng.gen_range(1..=2 * fanin - 1);
            for _ in 0..d {
                let mut src = rng.gen_range(0..n - 1);
                if src >= i {
                    src += 1;
                }
                fanin_list.push(src as u32);
                fanin_vec.push(space);
                outs[src].push(space);
                out_deg[src] += 1;
            }
            fanin_off.push(fanin_list.len() as u32);
        }
        // Fan-outs in parse order.
        let mut fanout_off = vec![0u32; n + 1];
        for i in 0..n {
            fanout_off[i + 1] = fanout_off[i] + out_deg[i];
        }
        let mut fill = fanout_off.clone();
        let mut fanout = vec![0u32; fanin_list.len()];
        for i in 0..n {
            for &src in &fanin_list[fanin_off[i] as usize..fanin_off[i + 1] as usize] {
                fanout[fill[src as usize] as usize] = i as u32;
                fill[src as usize] += 1;
            }
        }
        // Random initial placement.
        let mut loc_of: Vec<u32> = (0..n as u32).collect();
        for i in (1..n).rev() {
            let j = rng.gen_range(0..=i);
            loc_of.swap(i, j);
        }
        let width = (n as f64).sqrt().ceil() as u32;
        Netlist {
            n,
            fanin_off,
            fanin: fanin_list,
            fanout_off,
            fanout,
            fanin_buf: ins.iter().map(|g| g.buf).collect(),
            fanout_buf: outs.iter().map(|g| g.buf).collect(),
            loc_of,
            width,
            a_elems,
            a_locs,
        }
    }

    pub fn len(&self) -> usize {
        self.n
    }

    pub fn is_empty(&self) -> bool {
        self.n == 0
    }

    #[inline(always)]
    fn xy(&self, loc: u32) -> (i64, i64) {
        ((loc % self.width) as i64, (loc / self.width) as i64)
    }

    #[inline(always)]
    fn elem(&self, i: u32) -> u64 {
        self.a_elems + ELEM_BYTES * i as u64
    }

    /// Load element `i`'s `present_loc` and its coordinates.
    #[inline(always)]
    fn read_loc(&self, i: u32, e: &mut Emitter) -> (i64, i64) {
        let loc = self.loc_of[i as usize];
        e.ins(INS_LOC);
        let dl = e.load_on(self.elem(i) + OFF_LOC, 8, Dep::NONE);
        e.ins(INS_LOC);
        e.load_on(self.a_locs + 8 * loc as u64, 4, dl);
        e.load_on(self.a_locs + 8 * loc as u64 + 4, 4, dl);
        self.xy(loc)
    }

    #[inline(always)]
    fn list_cost(&self, i: u32, fan_out: bool, old: (i64, i64), new: (i64, i64), e: &mut Emitter) -> i64 {
        let (offs, list, buf, off) = if fan_out {
            (&self.fanout_off, &self.fanout, self.fanout_buf[i as usize], OFF_FANOUT)
        } else {
            (&self.fanin_off, &self.fanin, self.fanin_buf[i as usize], OFF_FANIN)
        };
        e.ins(INS_LIST);
        let dbegin = e.load_on(self.elem(i) + off, 8, Dep::NONE);
        e.load(self.elem(i) + off + 8, 8);
        let (mut no, mut yes) = (0i64, 0i64);
        let nbrs = &list[offs[i as usize] as usize..offs[i as usize + 1] as usize];
        for (j, &nb) in nbrs.iter().enumerate() {
            e.ins(2);
            let dp = e.load_on(buf + 8 * j as u64, 8, dbegin);
            let p = self.read_nbr(nb, dp, e);
            no += (old.0 - p.0).abs() + (old.1 - p.1).abs();
            yes += (new.0 - p.0).abs() + (new.1 - p.1).abs();
            e.ins(INS_DIST);
        }
        yes - no
    }

    #[inline(always)]
    /// `dp`: the pointer load that gave `nb`'s address.
    fn read_nbr(&self, nb: u32, dp: Dep, e: &mut Emitter) -> (i64, i64) {
        let loc = self.loc_of[nb as usize];
        e.ins(1);
        let dl = e.load_on(self.elem(nb) + OFF_LOC, 8, dp);
        e.ins(1);
        e.load_on(self.a_locs + 8 * loc as u64, 4, dl);
        e.load_on(self.a_locs + 8 * loc as u64 + 4, 4, dl);
        self.xy(loc)
    }

    /// canneal's `swap_cost(old, new)` for element `i`.
    fn swap_cost(&self, i: u32, old: (i64, i64), new: (i64, i64), e: &mut Emitter) -> i64 {
        self.list_cost(i, false, old, new, e) + self.list_cost(i, true, old, new, e)
    }

    /// canneal's `calculate_delta_routing_cost(a, b)`.
    pub fn delta(&self, a: u32, b: u32, e: &mut Emitter) -> i64 {
        let la = self.read_loc(a, e);
        let lb = self.read_loc(b, e);
        self.swap_cost(a, la, lb, e) + self.swap_cost(b, lb, la, e)
    }

    /// canneal's `swap_locations`: exchange the two `present_loc` pointers.
    pub fn swap(&mut self, a: u32, b: u32, e: &mut Emitter) {
        e.ins(INS_SWAP);
        e.load(self.elem(a) + OFF_LOC, 8);
        e.load(self.elem(b) + OFF_LOC, 8);
        e.store(self.elem(a) + OFF_LOC, 8);
        e.store(self.elem(b) + OFF_LOC, 8);
        self.loc_of.swap(a as usize, b as usize);
    }

    /// Total routing cost from scratch: every element's distance to each
    /// fan-in and fan-out neighbour (each wire counted from both ends).
    pub fn total_cost(&self) -> i64 {
        let mut c = 0;
        for i in 0..self.n {
            let me = self.xy(self.loc_of[i]);
            let lists = [
                &self.fanin[self.fanin_off[i] as usize..self.fanin_off[i + 1] as usize],
                &self.fanout[self.fanout_off[i] as usize..self.fanout_off[i + 1] as usize],
            ];
            for l in lists {
                for &nb in l {
                    let p = self.xy(self.loc_of[nb as usize]);
                    c += (me.0 - p.0).abs() + (me.1 - p.1).abs();
                }
            }
        }
        c
    }
}

/// canneal's `accept_move`: the decision and the random number drawn (if any).
#[inline]
pub fn accept(delta: i64, t: f64, rng: &mut SimRng, e: &mut Emitter) -> (Decision, f64) {
    if delta < 0 {
        e.ins(INS_GOOD);
        return (Decision::Good, f64::NAN);
    }
    e.ins(INS_BOLTZMANN);
    let r: f64 = rng.gen();
    let boltzmann = (-(delta as f64) / t).exp();
    if boltzmann > r {
        (Decision::Bad, r)
    } else {
        (Decision::Reject, r)
    }
}

/// canneal's `get_random_element`: a random element other than `not`.
#[inline]
fn random_element(n: usize, not: Option<u32>, rng: &mut SimRng, e: &mut Emitter) -> u32 {
    loop {
        e.ins(INS_PICK);
        let i = rng.gen_range(0..n) as u32;
        if Some(i) != not {
            return i;
        }
    }
}

pub struct Canneal {
    elements: usize,
    fanin: u32,
    swaps: u64,
    temp: f64,
    steps: u64,
    seed: u64,
    /// Accepted moves that lowered / raised the cost (set by `run`).
    pub good: u64,
    pub bad: u64,
}

impl Canneal {
    pub fn new(p: &Params) -> Result<Canneal> {
        Ok(Canneal {
            elements: p.count_in("elements", 2, MAX_ELEMENTS)? as usize,
            fanin: p.count_in("fanin", 1, 64)? as u32,
            swaps: p.count("swaps")?,
            temp: p.real_in("temp", 1e-9, 1e12)?,
            steps: p.count("steps")?,
            seed: p.seed(),
            good: 0,
            bad: 0,
        })
    }
}

impl Workload for Canneal {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let mut rng = component_rng(self.seed, "workload.canneal.netlist");
        let mut net = Netlist::generate(self.elements, self.fanin, &mut rng, &mut space);
        let mut rng = component_rng(self.seed, "workload.canneal.anneal");
        let total = self.steps * self.swaps;
        let mut t = self.temp;
        let mut b = random_element(net.n, None, &mut rng, e);
        let (mut good, mut bad) = (0, 0);
        'steps: for step in 0..self.steps {
            t /= 1.5;
            for i in 0..self.swaps {
                let a = b;
                b = random_element(net.n, Some(a), &mut rng, e);
                let delta = net.delta(a, b, e);
                match accept(delta, t, &mut rng, e).0 {
                    Decision::Good => {
                        good += 1;
                        net.swap(a, b, e);
                    }
                    Decision::Bad => {
                        bad += 1;
                        net.swap(a, b, e);
                    }
                    Decision::Reject => {}
                }
                if i % 4096 == 0 {
                    e.progress(step * self.swaps + i, total);
                    if e.stopped() {
                        break 'steps;
                    }
                }
            }
        }
        e.progress(total, total);
        self.good = good;
        self.bad = bad;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::tests::{distinct_pages, emitted};
    use crate::workload::NullSink;

    /// Occurrences of `b` in `a`'s fan-in and fan-out lists.
    fn links(net: &Netlist, a: u32, b: u32) -> i64 {
        let a = a as usize;
        let fi = &net.fanin[net.fanin_off[a] as usize..net.fanin_off[a + 1] as usize];
        let fo = &net.fanout[net.fanout_off[a] as usize..net.fanout_off[a + 1] as usize];
        fi.iter().chain(fo).filter(|&&x| x == b).count() as i64
    }

    #[test]
    fn decisions_and_deltas_agree_with_the_cost_recomputed_from_scratch() {
        let mut space = AddressSpace::new();
        let mut rng = component_rng(4, "t");
        let mut net = Netlist::generate(300, 3, &mut rng, &mut space);
        let mut null = NullSink;
        let mut e = Emitter::new(&mut null);
        let mut t = 50.0;
        let (mut seen_good, mut seen_bad, mut seen_reject, mut seen_linked) = (0, 0, 0, 0);
        let mut cost = net.total_cost();
        let first = cost;
        let mut b = 0u32;
        for step in 0..8000 {
            if step % 1000 == 0 {
                t /= 1.5;
            }
            let a = b;
            b = random_element(net.len(), Some(a), &mut rng, &mut e);
            let delta = net.delta(a, b, &mut e);
            let (d, r) = accept(delta, t, &mut rng, &mut e);
            // canneal's delta is half the change of the total (each wire counts
            // from both ends) except that a wire between a and b, whose length
            // a swap keeps, is counted as shrinking by its length twice.
            let m = links(&net, a, b);
            seen_linked += (m > 0) as u32;
            let (pa, pb) = (net.xy(net.loc_of[a as usize]), net.xy(net.loc_of[b as usize]));
            let dist = (pa.0 - pb.0).abs() + (pa.1 - pb.1).abs();
            net.swap(a, b, &mut e);
            let swapped = net.total_cost();
            assert_eq!(swapped - cost, 2 * delta + 4 * m * dist, "move {step}: {a} <-> {b}");
            match d {
                Decision::Good => {
                    assert!(delta < 0);
                    seen_good += 1;
                }
                Decision::Bad => {
                    assert!(delta >= 0 && (-(delta as f64) / t).exp() > r);
                    seen_bad += 1;
                }
                Decision::Reject => {
                    assert!(delta >= 0 && (-(delta as f64) / t).exp() <= r);
                    seen_reject += 1;
                }
            }
            if d == Decision::Reject {
                net.swap(a, b, &mut e);
                assert_eq!(net.total_cost(), cost);
            } else {
                cost = swapped;
            }
        }
        assert!(seen_good > 0 && seen_bad > 0 && seen_reject > 0 && seen_linked > 0);
        assert!(cost < first, "annealing should lower the cost: {first} -> {cost}");
        // The placement is still a permutation of the locations.
        let mut locs = net.loc_of.clone();
        locs.sort_unstable();
        assert!(locs.iter().enumerate().all(|(i, &l)| l == i as u32));
    }

    #[test]
    fn workload_touches_elements_lists_and_locations() {
        let kv = [("elements", "20000"), ("swaps", "20000"), ("steps", "3")];
        let recs = emitted("canneal", &kv, 2);
        let est = estimate_bytes(20_000, 3) as f64 / 4096.0;
        let pages = distinct_pages(&recs) as f64;
        assert!(pages > 0.6 * est && pages < 1.3 * est, "pages {pages} vs estimate {est}");
        let stores = recs.iter().filter(|r| r.2 == crate::access::AccessKind::Store).count();
        assert!(stores > 0 && stores % 2 == 0);
    }
}
