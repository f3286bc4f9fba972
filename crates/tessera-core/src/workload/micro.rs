//! Micro-benchmarks: `sequential`, `strided`, `uniform` and `pointer-chase`
//! over one mmapped array.
//!
//! ## What it models
//! - `sequential` / `strided`: a loop `for (i = 0; ; i += stride) sum += a[i %
//!   footprint]` reading 8 bytes per step; `strided` defaults to one access per
//!   4 KiB page. 4 instructions per access (load, add, index add, compare/branch).
//! - `uniform`: `a[rand() % n]` with a xoshiro generator: 8 instructions per
//!   access (generator, multiply-shift range reduction, load, add, loop).
//! - `pointer-chase`: nodes of `node` bytes linked into one uniformly random
//!   cycle (every node is visited before any repeats); each step loads the
//!   8-byte `next` pointer at the start of a node. 2 instructions per access
//!   (load, loop branch); each load depends on the one before, as in an
//!   lmbench-style latency test. Building the cycle is not emitted.
//!   Dependencies: every pointer-chase access depends on the last load
//!   before it (the `next` pointer that named its node), so with no stores
//!   each load after the first has `dep == 1`; `sequential`, `strided` and
//!   `uniform` have none (their addresses come from registers).
//! - `store_fraction` makes that share of accesses stores (seeded).
//!
//! ## Choices
//! - The array is one 2 MiB-aligned mmap whose values never need to exist on
//!   the host. Pointer-chase keeps its cycle as the *visit order*: node 0
//!   followed by a uniform shuffle of the others (a random cyclic permutation
//!   is exactly such an order, so this is the same distribution as Sattolo's
//!   algorithm). Reading the order sequentially makes the generator stream
//!   instead of chasing dependent host cache misses; the emitted loads are
//!   those of chasing `next` pointers. 32-bit node indices: up to 2^32 nodes.

use rand::{Rng, RngCore};

use super::emit::Dep;
use super::{AddressSpace, Emitter, ParamDoc, Params, Workload, WorkloadInfo};
use crate::error::{Error, Result};
use crate::rng::{component_rng, SimRng};

const FOOTPRINT_DOC: &str = "bytes of the array, 4KiB to 1TiB";
const ACCESSES_DOC: &str = "number of accesses";
const STORE_DOC: &str = "fraction of accesses that are stores";

pub const SEQUENTIAL: WorkloadInfo = WorkloadInfo {
    name: "sequential",
    summary: "sequential 8-byte reads with a fixed stride, wrapping over the array",
    params: &[
        ParamDoc { name: "footprint", default: "256MiB", doc: FOOTPRINT_DOC },
        ParamDoc { name: "accesses", default: "10M", doc: ACCESSES_DOC },
        ParamDoc { name: "stride", default: "64", doc: "bytes between accesses, a positive multiple of 8" },
        ParamDoc { name: "store_fraction", default: "0", doc: STORE_DOC },
    ],
    footprint: |p| p.size_in("footprint", 4096, 1 << 40),
    build: |p| Ok(Box::new(Micro::new(p, Kind::Strided)?)),
};

pub const STRIDED: WorkloadInfo = WorkloadInfo {
    name: "strided",
    summary: "one 8-byte read per stride (default a 4 KiB page), wrapping over the array",
    params: &[
        ParamDoc { name: "footprint", default: "1GiB", doc: FOOTPRINT_DOC },
        ParamDoc { name: "accesses", default: "10M", doc: ACCESSES_DOC },
        ParamDoc { name: "stride", default: "4096", doc: "bytes between accesses, a positive multiple of 8" },
        ParamDoc { name: "store_fraction", default: "0", doc: STORE_DOC },
    ],
    footprint: |p| p.size_in("footprint", 4096, 1 << 40),
    build: |p| Ok(Box::new(Micro::new(p, Kind::Strided)?)),
};

pub const UNIFORM: WorkloadInfo = WorkloadInfo {
    name: "uniform",
    summary: "uniformly random 8-byte accesses over the array",
    params: &[
        ParamDoc { name: "footprint", default: "1GiB", doc: FOOTPRINT_DOC },
        ParamDoc { name: "accesses", default: "10M", doc: ACCESSES_DOC },
        ParamDoc { name: "store_fraction", default: "0", doc: STORE_DOC },
    ],
    footprint: |p| p.size_in("footprint", 4096, 1 << 40),
    build: |p| Ok(Box::new(Micro::new(p, Kind::Uniform)?)),
};

pub const POINTER_CHASE: WorkloadInfo = WorkloadInfo {
    name: "pointer-chase",
    summary: "dependent loads around one random cycle of nodes (latency test)",
    params: &[
        ParamDoc { name: "footprint", default: "256MiB", doc: FOOTPRINT_DOC },
        ParamDoc { name: "accesses", default: "10M", doc: ACCESSES_DOC },
        ParamDoc { name: "node", default: "64", doc: "bytes per node, a multiple of 8 from 8 to 1MiB" },
        ParamDoc { name: "store_fraction", default: "0", doc: STORE_DOC },
    ],
    footprint: |p| p.size_in("footprint", 4096, 1 << 40),
    build: |p| Ok(Box::new(Micro::new(p, Kind::Chase)?)),
};

#[derive(Copy, Clone, PartialEq, Eq)]
enum Kind {
    Strided,
    Uniform,
    Chase,
}

pub struct Micro {
    kind: Kind,
    footprint: u64,
    accesses: u64,
    /// Stride (strided) or node size (pointer-chase), bytes.
    step: u64,
    store_t: u64,
    seed: u64,
}

impl Micro {
    fn new(p: &Params, kind: Kind) -> Result<Micro> {
        let footprint = p.size_in("footprint", 4096, 1 << 40)?;
        let step = match kind {
            Kind::Strided => {
                let s = p.size_in("stride", 8, 1 << 40)?;
                if s % 8 != 0 {
                    return Err(Error::config(p.key_path("stride"), "stride must be a multiple of 8"));
                }
                s
            }
            Kind::Chase => {
                let n = p.size_in("node", 8, 1 << 20)?;
                if n % 8 != 0 {
                    return Err(Error::config(p.key_path("node"), "node size must be a multiple of 8"));
                }
                if footprint / n < 2 || footprint / n > u32::MAX as u64 {
                    return Err(Error::config(
                        p.key_path("node"),
                        format!("footprint / node = {} nodes; must be between 2 and {}", footprint / n, u32::MAX),
                    ));
                }
                n
            }
            Kind::Uniform => 8,
        };
        let sf = p.real_in("store_fraction", 0.0, 1.0)?;
        Ok(Micro {
            kind,
            footprint: footprint / 8 * 8,
            accesses: p.count("accesses")?,
            step,
            store_t: (sf * 4294967296.0).round() as u64,
            seed: p.seed(),
        })
    }
}

impl Workload for Micro {
    fn run(&mut self, e: &mut Emitter) -> Result<()> {
        let mut space = AddressSpace::new();
        let base = space.mmap(self.footprint);
        let mut addr_rng = component_rng(self.seed, "workload.micro.addr");
        let mut decide = component_rng(self.seed, "workload.micro.decide");
        let store_t = self.store_t;
        let never_store = store_t == 0;
        let mut access = |e: &mut Emitter, addr: u64| {
            if never_store || (decide.next_u32() as u64) >= store_t {
                e.load(addr, 8);
            } else {
                e.store(addr, 8);
            }
        };
        const CHUNK: u64 = 1 << 16;
        let mut done = 0u64;
        match self.kind {
            Kind::Strided => {
                let step = self.step % self.footprint;
                let mut off = 0u64;
                while done < self.accesses {
                    let n = CHUNK.min(self.accesses - done);
                    for _ in 0..n {
                        e.ins(4);
                        access(e, base + off);
                        off += step;
                        if off >= self.footprint {
                            off -= self.footprint;
                        }
                    }
                    done += n;
                    e.progress(done, self.accesses);
                    if e.stopped() {
                        break;
                    }
                }
            }
            Kind::Uniform => {
                let slots = self.footprint / 8;
                while done < self.accesses {
                    let n = CHUNK.min(self.accesses - done);
                    for _ in 0..n {
                        let slot = ((addr_rng.next_u64() as u128 * slots as u128) >> 64) as u64;
                        e.ins(8);
                        access(e, base + 8 * slot);
                    }
                    done += n;
                    e.progress(done, self.accesses);
                    if e.stopped() {
                        break;
                    }
                }
            }
            Kind::Chase => {
                let order = cycle_order(self.footprint / self.step, &mut addr_rng);
                let mut k = 0usize;
                // The last `next` pointer loaded: the address of the next node.
                let mut prev = Dep::NONE;
                while done < self.accesses {
                    let n = CHUNK.min(self.accesses - done);
                    for _ in 0..n {
                        e.ins(2);
                        let addr = base + self.step * order[k] as u64;
                        if never_store || (decide.next_u32() as u64) >= store_t {
                            prev = e.load_on(addr, 8, prev);
                        } else {
                            e.store_on(addr, 8, prev);
                        }
                        k += 1;
                        if k == order.len() {
                            k = 0;
                        }
                    }
                    done += n;
                    e.progress(done, self.accesses);
                    if e.stopped() {
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

/// The visit order of a uniformly random single cycle through `0..n`,
/// starting at node 0: 0 then a Fisher–Yates shuffle of `1..n`.
fn cycle_order(n: u64, rng: &mut SimRng) -> Vec<u32> {
    let mut order: Vec<u32> = (0..n as u32).collect();
    for i in (2..order.len()).rev() {
        let j = rng.gen_range(1..=i);
        order.swap(i, j);
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::component_rng;

    #[test]
    fn cycle_order_visits_every_node_once_from_zero() {
        let mut rng = component_rng(1, "t");
        for n in [2u64, 3, 10, 1000] {
            let order = cycle_order(n, &mut rng);
            assert_eq!(order[0], 0);
            let mut sorted = order.clone();
            sorted.sort();
            assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
        }
        // Every cyclic order of 3 nodes (0,1,2 and 0,2,1) shows up.
        let mut seen = std::collections::BTreeSet::new();
        for _ in 0..50 {
            seen.insert(cycle_order(3, &mut rng));
        }
        assert_eq!(seen.len(), 2);
    }

    #[test]
    fn pointer_chase_loads_depend_on_the_one_before() {
        use crate::access::AccessKind;
        use crate::workload::tests::{check_deps, emitted_deps};
        let kv = [("footprint", "64KiB"), ("accesses", "3000")];
        let (recs, deps) = emitted_deps("pointer-chase", &kv, 3);
        assert_eq!(recs.len(), 3000);
        assert_eq!(deps[0], 0);
        assert!(deps[1..].iter().all(|&d| d == 1), "every load after the first has dep 1");
        assert_eq!(check_deps(&recs, &deps), 2999.0 / 3000.0);
        // With stores, each access depends on the last load before it.
        let kv = [("footprint", "64KiB"), ("accesses", "3000"), ("store_fraction", "0.3")];
        let (recs, deps) = emitted_deps("pointer-chase", &kv, 3);
        check_deps(&recs, &deps);
        let first_load = recs.iter().position(|r| r.2 == AccessKind::Load).unwrap();
        for i in first_load + 1..recs.len() {
            let last = (0..i).rev().find(|&j| recs[j].2 == AccessKind::Load).unwrap();
            assert_eq!(deps[i] as usize, i - last, "record {i}");
        }
        // Independent kinds carry none.
        let (_, deps) = emitted_deps("uniform", &[("footprint", "64KiB"), ("accesses", "3000")], 3);
        assert!(deps.iter().all(|&d| d == 0));
    }
}
