//! Micro-benchmarks of the hot data structures: `SetAssoc` lookup/insert
//! (4- and 16-way, LRU and random), `CacheHierarchy::access` (Sandy Bridge
//! levels, hit-heavy and miss-heavy, plus the no-cache DRAM path), and the
//! Iceberg allocator's placements (the paper's 16384 × 64-frame pool, at
//! several loads, and the conflict path that picks a page to displace).
//! Each iteration runs a fixed batch of operations over precomputed keys, so
//! the reported throughput is operations per second.

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use tessera_core::cache::{CacheHierarchy, Source};
use tessera_core::config::spec::CacheSpec;
use tessera_core::config::{load, ConfigSource};
use tessera_core::physmem::allocator::iceberg::{Config as IcebergConfig, Iceberg};
use tessera_core::physmem::allocator::{AllocCtx, FrameAllocator, PageAges, PageRequest, Placement};
use tessera_core::registry::Mechanism;
use tessera_core::registry::MechanismSpec;
use tessera_core::replacement::{AnyReplacement, Geometry};
use tessera_core::rng::SimRng;
use tessera_core::table::SetAssoc;

const OPS: usize = 4096;

fn table(sets: u32, ways: u32, kind: &str) -> SetAssoc {
    let spec = MechanismSpec { kind: kind.into(), params: toml::Table::new() };
    let repl = AnyReplacement::build(&spec, &Geometry { sets, ways, seed: 7 }, "bench.replacement").unwrap();
    SetAssoc::new(sets, ways, repl)
}

fn set_assoc(c: &mut Criterion) {
    let mut g = c.benchmark_group("set_assoc");
    g.throughput(Throughput::Elements(OPS as u64));
    let sets = 64u32;
    let mask = sets as u64 - 1;
    for ways in [4u32, 16] {
        for kind in ["lru", "random"] {
            let cap = (sets * ways) as u64;
            let mut rng = SimRng::seed_from_u64(1);
            // Tags 0..cap fill the table exactly; lookups of them all hit.
            let hits: Vec<u64> = (0..OPS).map(|_| rng.gen_range(0..cap)).collect();
            // Tags from a pool 16× the capacity: mostly misses, and inserts evict.
            let misses: Vec<u64> = (0..OPS).map(|_| rng.gen_range(0..16 * cap)).collect();
            let id = format!("{ways}way_{kind}");

            let mut full = table(sets, ways, kind);
            for t in 0..cap {
                full.insert((t & mask) as u32, t, t);
            }
            g.bench_function(BenchmarkId::new("lookup_hit", &id), |b| {
                let mut t = full.clone();
                b.iter(|| {
                    let mut n = 0usize;
                    for &k in &hits {
                        n += t.lookup((k & mask) as u32, k).unwrap_or(0);
                    }
                    black_box(n)
                })
            });
            g.bench_function(BenchmarkId::new("lookup_mixed", &id), |b| {
                let mut t = full.clone();
                b.iter(|| {
                    let mut n = 0usize;
                    for &k in &misses {
                        n += t.lookup((k & mask) as u32, k).is_some() as usize;
                    }
                    black_box(n)
                })
            });
            g.bench_function(BenchmarkId::new("insert_evict", &id), |b| {
                let mut t = full.clone();
                b.iter(|| {
                    let mut n = 0u64;
                    for &k in &misses {
                        if let Some((_, d)) = t.insert((k & mask) as u32, k, k) {
                            n += d;
                        }
                    }
                    black_box(n)
                })
            });
            g.bench_function(BenchmarkId::new("lookup_then_insert", &id), |b| {
                // The TLB/cache pattern: probe, and fill on a miss.
                let mut t = full.clone();
                b.iter(|| {
                    let mut n = 0u64;
                    for &k in &misses {
                        let set = (k & mask) as u32;
                        if t.lookup(set, k).is_none() {
                            n += t.insert_after_miss(set, k, k).map_or(0, |e| e.1);
                        }
                    }
                    black_box(n)
                })
            });
        }
    }
    g.finish();
}

fn hierarchy(c: &mut Criterion) {
    let mut g = c.benchmark_group("cache_hierarchy");
    g.throughput(Throughput::Elements(OPS as u64));
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &[]).unwrap();
    let mut rng = SimRng::seed_from_u64(2);
    // Hit-heavy: 16 KiB of lines (fits the 32 KiB L1D).
    let hot: Vec<u64> = (0..OPS).map(|_| rng.gen_range(0..16u64 << 10)).collect();
    // Miss-heavy: uniform over 1 GiB (misses all three levels almost always).
    let cold: Vec<u64> = (0..OPS).map(|_| rng.gen_range(0..1u64 << 30)).collect();
    let writes: Vec<bool> = (0..OPS).map(|_| rng.gen_bool(0.3)).collect();
    let sandy = CacheHierarchy::build(&spec.cache, 1).unwrap();
    let none = CacheHierarchy::build(&CacheSpec::default(), 1).unwrap();
    for (name, base, addrs) in [("sandy_bridge_hit", &sandy, &hot), ("sandy_bridge_miss", &sandy, &cold), ("no_levels", &none, &cold)] {
        g.bench_function(name, |b| {
            let mut h = base.clone();
            for &a in addrs.iter() {
                h.access(a, false, 0, Source::Data);
            }
            b.iter(|| {
                let mut lat = 0u32;
                for (i, &a) in addrs.iter().enumerate() {
                    let src = if i & 3 == 0 { Source::Walk } else { Source::Data };
                    lat = lat.wrapping_add(h.access(a, writes[i], 0, src).latency);
                }
                black_box(lat)
            })
        });
    }
    g.finish();
}

/// Page ages of a full pool: a last use per frame, every page live.
struct Ages(Vec<u64>);

impl PageAges for Ages {
    fn last_use(&self, page: u64) -> Option<u64> {
        self.0.get(page as usize).copied()
    }
    fn is_ghost(&self, _page: u64) -> bool {
        false
    }
}

fn iceberg(c: &mut Criterion) {
    let mut g = c.benchmark_group("iceberg");
    g.throughput(Throughput::Elements(OPS as u64));
    let buckets = 16384u64;
    let pool = buckets * 64;
    let cfg = IcebergConfig { buckets: Some(buckets), ..IcebergConfig::default() };
    let fresh = Iceberg::build(&cfg, &AllocCtx { capacity_frames: pool + 4096, seed: 1 }).unwrap();
    let mut rng = SimRng::seed_from_u64(3);
    let mut key = move || PageRequest { asid: rng.gen(), vpn: rng.gen_range(0..1u64 << 36), size: tessera_core::addr::PageSize::Size4K };
    // Allocate OPS pages, then free them again (so every iteration starts
    // from the same load): allocations + frees per second at that load.
    for load in [50u64, 90, 97] {
        let mut a = fresh.clone();
        while a.free_frames() - 4096 > pool * (100 - load) / 100 {
            a.alloc_page(&key());
        }
        let reqs: Vec<PageRequest> = (0..OPS).map(|_| key()).collect();
        g.bench_function(BenchmarkId::new("alloc_free", format!("load_{load}")), |b| {
            let mut a = a.clone();
            let mut got = Vec::with_capacity(OPS);
            b.iter(|| {
                got.clear();
                got.extend(reqs.iter().filter_map(|r| a.alloc_page(r)));
                for &p in &got {
                    a.free(p, 0);
                }
                black_box(got.len())
            })
        });
    }
    // A full pool under memory pressure: each placement finds its h slots
    // taken and picks the oldest of them to displace (the decision only).
    let mut full = fresh.clone();
    let mut placed = 0u64;
    while placed < pool * 99 / 100 {
        placed += full.alloc_page(&key()).is_some() as u64;
    }
    let ages = Ages((0..pool + 4096).map(|p| p.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 20).collect());
    let reqs: Vec<PageRequest> = (0..OPS).map(|_| key()).collect();
    g.bench_function("place_conflict", |b| {
        let mut a = full.clone();
        b.iter(|| {
            let mut n = 0u64;
            for r in &reqs {
                if let Placement::Displace(p) = a.place(r, Some(&ages)) {
                    n += p.0;
                }
            }
            black_box(n)
        })
    });
    g.finish();
}

criterion_group!(benches, set_assoc, hierarchy, iceberg);
criterion_main!(benches);
