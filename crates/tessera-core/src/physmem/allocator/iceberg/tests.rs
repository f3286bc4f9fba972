use std::collections::HashMap;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};

use super::cpfn;
use super::reference::RefIceberg;
use super::*;

fn build(cfg: &Config, capacity_frames: u64, seed: u64) -> Result<Iceberg> {
    Iceberg::build(cfg, &AllocCtx { capacity_frames, seed })
}

fn cfg(buckets: u64) -> Config {
    Config { buckets: Some(buckets), ..Config::default() }
}

fn req(asid: Asid, vpn: u64) -> PageRequest {
    PageRequest { asid, vpn, size: PageSize::Size4K }
}

/// Page ages as a test sets them: a last use per frame and a horizon.
#[derive(Default)]
struct Ages {
    time: HashMap<u64, u64>,
    horizon: u64,
}

impl PageAges for Ages {
    fn last_use(&self, page: u64) -> Option<u64> {
        self.time.get(&page).copied()
    }
    fn is_ghost(&self, page: u64) -> bool {
        self.time.get(&page).is_some_and(|&t| t < self.horizon)
    }
}

/// Pages (asid 0) whose front-yard bucket is `bucket`, in vpn order.
fn pages_of_bucket(h: &IcebergHasher, bucket: u64, n: usize) -> Vec<u64> {
    (0u64..).filter(|&v| h.front_bucket(0, v) == bucket).take(n).collect()
}

#[test]
fn the_pool_sits_above_a_buddy_for_tables_and_large_pages() {
    let mut a = build(&cfg(10), 1024, 1).unwrap();
    assert_eq!(a.hasher().begin(), 1024 - 640);
    assert_eq!(a.free_frames(), 1024);
    assert_eq!(a.largest_free_order(), Some(8), "384 frames below the pool: 256 + 128");
    let t = a.alloc(0).unwrap();
    assert!(t.0 < 384, "table frames come from below the pool");
    let p = a.alloc_page(&req(1, 7)).unwrap();
    assert!(a.hasher().in_pool(p.0));
    let big = a.alloc_page(&PageRequest { asid: 1, vpn: 512, size: PageSize::Size2M });
    assert_eq!(big, None, "no aligned 2 MiB block below a pool of 384 frames");
    let mid = a.place(&PageRequest { asid: 1, vpn: 16, size: PageSize::Size64K }, None);
    assert!(matches!(mid, Placement::Frame(p) if p.0 < 384 && p.0 % 16 == 0));
    assert_eq!(a.stats().outside_pool, 1);
    assert_eq!(a.table_headroom(&req(1, 8)), a.free_frames() - a.pool_free);
    a.check_invariants().unwrap();
}

#[test]
fn front_yard_slots_are_handed_out_first_in_first_out() {
    let mut a = build(&cfg(4), 1024, 1).unwrap();
    let h = a.hasher().clone();
    let pages = pages_of_bucket(&h, 2, 60);
    let base = h.bucket_base(2);
    let got: Vec<u64> = pages[..56].iter().map(|&v| a.alloc_page(&req(0, v)).unwrap().0 - base).collect();
    assert_eq!(got, (0..56).collect::<Vec<_>>(), "slots in order from a fresh list");
    // Free slots 9 then 3: the next pages of the bucket get them in that order.
    a.free(Pfn(base + 9), 0);
    a.free(Pfn(base + 3), 0);
    assert_eq!(a.alloc_page(&req(0, pages[56])).unwrap().0 - base, 9);
    assert_eq!(a.alloc_page(&req(0, pages[57])).unwrap().0 - base, 3);
    // The front yard is full: the next page goes to a backyard slot (56..64) of a candidate.
    let p = a.alloc_page(&req(0, pages[58])).unwrap();
    assert!((p.0 - h.begin()) % 64 >= 56);
    let s = a.stats();
    assert_eq!((s.front_placements, s.back_placements, s.placements), (58, 1, 59));
    assert_eq!((s.front_used, s.back_used), (56, 1));
    a.check_invariants().unwrap();
}

#[test]
fn cpfns_of_real_placements_decode_to_their_frames() {
    let mut a = build(&cfg(8), 2048, 3).unwrap();
    let mut placed = Vec::new();
    for vpn in 0..(8 * 64 * 97 / 100) {
        if let Some(p) = a.alloc_page(&req((vpn % 3) as u16, vpn)) {
            placed.push(((vpn % 3) as u16, vpn, p));
        }
    }
    assert!(a.stats().back_placements > 0, "some pages went to a backyard");
    for &(asid, vpn, p) in &placed {
        let c = a.cpfn(p, asid, vpn);
        assert_ne!(c, cpfn::UNMAPPED);
        assert_eq!(cpfn::decode(c, asid, vpn, a.hasher()), Some(p), "({asid}, {vpn:#x}) at {p:?}");
    }
    assert_eq!(a.cpfn(Pfn(0), 0, 0), cpfn::UNMAPPED, "a frame below the pool has no CPFN");
}

#[test]
fn config_errors_name_their_keys() {
    let err = |c: Config, cap: u64| match build(&c, cap, 0) {
        Err(Error::Config { path, .. }) => path,
        other => panic!("{other:?}"),
    };
    let d = Config::default;
    assert_eq!(err(Config { front: 56, back: 4, ..d() }, 4096), "physmem.allocator.front");
    assert_eq!(err(Config { front: 48, back: 16, ..d() }, 4096), "physmem.allocator.back");
    assert_eq!(err(Config { back: 0, front: 64, ..d() }, 4096), "physmem.allocator.back");
    assert_eq!(err(Config { choices: 0, ..d() }, 4096), "physmem.allocator.choices");
    assert_eq!(err(Config { choices: 9, ..d() }, 4096), "physmem.allocator.choices");
    assert_eq!(err(Config { choices: 8, ..d() }, 4096), "physmem.allocator.choices", "8 × 8 needs the unmapped code");
    assert!(build(&Config { choices: 8, front: 57, back: 7, ..d() }, 4096, 0).is_ok());
    assert_eq!(err(Config { buckets: Some(0), ..d() }, 4096), "physmem.allocator.buckets");
    assert_eq!(err(Config { buckets: Some(65), ..d() }, 4096), "physmem.allocator.buckets");
    assert_eq!(err(Config { buckets: Some(64), ..d() }, 4096), "physmem.allocator.buckets", "no frame left for tables");
    assert_eq!(err(Config { pool: Some(ByteSize(1 << 20)), buckets: Some(2), ..d() }, 4096), "physmem.allocator.pool");
    assert_eq!(err(Config { pool: Some(ByteSize(100 << 10)), ..d() }, 4096), "physmem.allocator.pool");
    assert_eq!(err(Config { pool: Some(ByteSize(32 << 20)), ..d() }, 4096), "physmem.allocator.pool");
    assert_eq!(err(Config { sample_every: 0, ..d() }, 4096), "physmem.allocator.sample_every");
    let a = build(&Config { pool: Some(ByteSize(4 << 20)), ..d() }, 4096, 0).unwrap();
    assert_eq!(a.pool_frames(), 1024);
    // Default: 1/64 of memory (at least 64 frames) stays below the pool.
    assert_eq!(build(&d(), 4096, 0).unwrap().pool_frames(), (4096 - 64) / 64 * 64);
    assert_eq!(build(&d(), 1 << 20, 0).unwrap().pool_frames(), (1 << 20) - (1 << 14));
    assert_eq!(build(&d(), 512, 0).unwrap().pool_frames(), 448);
}

#[test]
fn config_sections_resolve_with_paths_and_defaults() {
    let resolve = |s: &str| {
        let v: toml::Value = toml::from_str::<toml::Table>(&format!("a = {s}")).unwrap()["a"].clone();
        crate::registry::AnyAllocator::resolve(&v, "physmem.allocator")
    };
    let spec = resolve("\"iceberg\"").unwrap();
    assert_eq!(spec.params["front"].as_integer(), Some(56));
    assert_eq!(spec.params["choice"].as_str(), Some("partitioned"));
    assert_eq!(spec.params["ghost_occupancy"].as_str(), Some("exclude"));
    assert!(!spec.params.contains_key("buckets"));
    let spec = resolve("{ kind = \"iceberg\", pool = \"4GiB\", hash = \"tabulation\", tie = \"earlier\" }").unwrap();
    assert_eq!(spec.params["pool"].as_str(), Some("4GiB"));
    for (bad, key) in [("{ kind = \"iceberg\", choice = \"random\" }", "physmem.allocator.choice"), ("{ kind = \"iceberg\", hash = \"md5\" }", "physmem.allocator.hash"), ("{ kind = \"iceberg\", fronts = 3 }", "physmem.allocator")] {
        match resolve(bad) {
            Err(Error::Config { path, .. }) => assert!(path.starts_with(key), "{bad}: {path}"),
            other => panic!("{bad}: {other:?}"),
        }
    }
}

/// Fill a fresh pool of `buckets` with random keys, no deletions, until the
/// first placement finds all h slots full; the load then.
fn first_conflict_load(buckets: u64, choice: Choice, seed: u64) -> f64 {
    let c = Config { buckets: Some(buckets), choice, ..Config::default() };
    let mut a = build(&c, buckets * 64 + 64, 0).unwrap();
    let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(seed);
    while a.stats().conflicts == 0 {
        let r = req(rng.gen(), rng.gen_range(0..1u64 << 36));
        a.alloc_page(&r);
    }
    a.stats().first_conflict_used as f64 / a.pool_frames() as f64
}

/// Check value: 16384 buckets, f = 56, b = 8, d = 6, fresh random keys, no
/// deletions. The paper's Table 3 reports the first conflict at 98.00–98.07 %
/// (± up to 0.13 over runs); a Monte Carlo of the prototype's partitioned rule
/// gives 97.76–98.14 % over 12 seeds (mean 98.02 %), and uniform choices
/// 97.37–97.66 % (mean 97.50 %). Measured here: the mean over 8 seeds falls
/// in 98.00–98.15 %, every seed in 97.7–98.3 %; uniform choices lose about
/// half a point.
#[test]
fn first_conflict_load_matches_the_check_values() {
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len() as f64;
    let part: Vec<f64> = (0..8).map(|s| first_conflict_load(16384, Choice::Partitioned, s)).collect();
    assert!((0.9800..=0.9815).contains(&mean(&part)), "partitioned: {part:?}");
    assert!(part.iter().all(|l| (0.977..=0.983).contains(l)), "partitioned: {part:?}");
    let uni: Vec<f64> = (0..4).map(|s| first_conflict_load(16384, Choice::Uniform, s)).collect();
    assert!((0.9730..=0.9770).contains(&mean(&uni)), "uniform: {uni:?}");
    assert!(mean(&part) - mean(&uni) > 0.003, "{part:?} {uni:?}");
}

#[test]
fn a_front_ghost_is_displaced_before_the_backyard_is_tried() {
    let mut a = build(&cfg(4), 1024, 1).unwrap();
    let h = a.hasher().clone();
    let pages = pages_of_bucket(&h, 1, 57);
    let mut ages = Ages { horizon: 1000, ..Ages::default() };
    for (i, &v) in pages[..56].iter().enumerate() {
        let p = a.alloc_page(&req(0, v)).unwrap();
        ages.time.insert(p.0, 1000 + i as u64);
    }
    let base = h.bucket_base(1);
    // No ghost: the page goes to a free backyard slot.
    let mut probe = a.clone();
    assert!(matches!(probe.place(&req(0, pages[56]), Some(&ages)), Placement::Frame(p) if (p.0 - h.begin()) % 64 >= 56));
    // Slots 7 and 30 hold ghosts; 30 is the older one.
    ages.time.insert(base + 7, 500);
    ages.time.insert(base + 30, 400);
    assert_eq!(a.place(&req(0, pages[56]), Some(&ages)), Placement::Displace(Pfn(base + 30)));
    // The OS evicts it, then claims its frame for the page.
    a.free(Pfn(base + 30), 0);
    assert!(a.claim(Pfn(base + 30), &req(0, pages[56])));
    assert!(!a.claim(Pfn(base + 30), &req(0, pages[56])), "taken");
    assert_eq!(a.stats().ghost_displacements, 1);
    a.check_invariants().unwrap();
}

/// Fill every front yard and every backyard slot, with ages.
fn full_pool(buckets: u64, ghosts: GhostOccupancy) -> (Iceberg, Ages) {
    let c = Config { buckets: Some(buckets), ghost_occupancy: ghosts, ..Config::default() };
    let mut a = build(&c, buckets * 64 + 64, 1).unwrap();
    let mut ages = Ages::default();
    let mut vpn = 0;
    while a.free_frames() > a.outer.free_frames() {
        if let Some(p) = a.alloc_page(&req(0, vpn)) {
            ages.time.insert(p.0, 1000 + vpn);
        }
        vpn += 1;
    }
    (a, ages)
}

#[test]
fn ghosts_in_a_backyard_count_as_free_unless_included() {
    for mode in [GhostOccupancy::Exclude, GhostOccupancy::Include] {
        let (mut a, mut ages) = full_pool(6, mode);
        let h = a.hasher().clone();
        let (asid, vpn) = (1, 99_999);
        let mut cands = [0; MAX_CHOICES];
        h.back_buckets(asid, vpn, &mut cands);
        // Make two backyard slots of candidate 0 ghosts and free one slot of candidate 1.
        let g0 = h.bucket_base(cands[0]) + 56;
        ages.time.insert(g0, 1);
        ages.time.insert(g0 + 1, 2);
        ages.horizon = 10;
        let free1 = h.bucket_base(cands[1]) + 60;
        a.free(Pfn(free1), 0);
        let got = a.place(&req(asid, vpn), Some(&ages));
        assert!(cands[0] != cands[1] && !cands[2..6].contains(&cands[1]), "partitioned choices of 6 buckets");
        match mode {
            // Candidate 0 has 6 live pages, candidate 1 has 7: the ghost goes.
            GhostOccupancy::Exclude => assert_eq!(got, Placement::Displace(Pfn(g0)), "{mode:?}"),
            // Counting ghosts, candidate 1 (7 used) beats the full ones.
            GhostOccupancy::Include => assert_eq!(got, Placement::Frame(Pfn(free1)), "{mode:?}"),
        }
    }
}

#[test]
fn with_no_ghost_the_oldest_of_the_h_slots_is_displaced() {
    let (mut a, mut ages) = full_pool(6, GhostOccupancy::Exclude);
    let h = a.hasher().clone();
    let (asid, vpn) = (1, 77_777);
    assert_eq!(a.clone().place(&req(asid, vpn), None), Placement::Full);
    let mut cands = [0; MAX_CHOICES];
    h.back_buckets(asid, vpn, &mut cands);
    let target = h.bucket_base(cands[3]) + 62;
    ages.time.insert(target, 5);
    let conflicts = a.stats().conflicts;
    assert_eq!(a.place(&req(asid, vpn), Some(&ages)), Placement::Displace(Pfn(target)));
    let s = a.stats();
    assert_eq!((s.live_displacements, s.conflicts), (1, conflicts + 1));
    assert!(s.first_conflict_used > 0);
    // A frame the policy does not track (pinned) is never displaced.
    let untracked = Ages::default();
    assert_eq!(a.place(&req(asid, vpn), Some(&untracked)), Placement::Full);
}

#[test]
fn utilisation_samples_stay_bounded() {
    let c = Config { buckets: Some(64), sample_every: 1, ..Config::default() };
    let mut a = build(&c, 64 * 64 + 64, 0).unwrap();
    let mut vpn = 0;
    while a.stats().conflicts == 0 {
        a.alloc_page(&req(0, vpn));
        vpn += 1;
    }
    for k in 0..5000u64 {
        // Steady state: free a page of the pool and place a new one.
        let p = a.alloc_page(&req(2, k));
        if let Some(p) = p {
            a.free(p, 0);
        }
    }
    let s = a.stats();
    assert_eq!(s.samples, s.placements);
    assert!(s.steady_samples > 0 && s.steady_samples < s.samples);
    let (trace, every) = a.utilisation_trace();
    assert!(trace.len() <= TRACE_LEN && trace.len() >= TRACE_LEN / 2, "{}", trace.len());
    assert_eq!(every as usize * trace.len(), s.samples as usize - s.samples as usize % every as usize);
    assert!(trace.windows(2).take(50).all(|w| w[0] <= w[1]), "the pool fills up first");
}

#[test]
fn tabulation_placement_depends_on_the_seed_xxhash_does_not() {
    let place = |hash: HashKind, seed: u64| {
        let mut a = build(&Config { buckets: Some(16), hash, ..Config::default() }, 2048, seed).unwrap();
        (0..500).map(|v| a.alloc_page(&req(1, v)).map(|p| p.0)).collect::<Vec<_>>()
    };
    assert_eq!(place(HashKind::Xxhash, 1), place(HashKind::Xxhash, 2));
    assert_eq!(place(HashKind::Tabulation, 1), place(HashKind::Tabulation, 1));
    assert_ne!(place(HashKind::Tabulation, 1), place(HashKind::Tabulation, 2));
}

#[derive(Clone, Debug)]
enum Op {
    /// Place the page (asid, vpn) if it is not resident.
    Place(u16, u64),
    /// Unmap a resident page (index modulo the resident pages).
    Free(usize),
    /// Use a resident page: it becomes the most recent.
    Touch(usize),
    /// Pin a pool frame (index into the pool).
    Reserve(u64),
}

fn ops(vpns: u64, pool: u64) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            8 => (0u16..3, 0..vpns).prop_map(|(a, v)| Op::Place(a, v)),
            2 => any::<usize>().prop_map(Op::Free),
            3 => any::<usize>().prop_map(Op::Touch),
            1 => (0..pool).prop_map(Op::Reserve),
        ],
        1..500,
    )
}

/// Drive the allocator and the reference with the same operations: the
/// OS's protocol (a displaced page is evicted, raising the horizon if it was
/// live, then its frame is claimed), with page ages or without.
fn run_against_reference(c: Config, with_ages: bool, ops: Vec<Op>) -> std::result::Result<(), TestCaseError> {
    let buckets = c.buckets.unwrap();
    let mut a = build(&c, buckets * 64 + 128, 9).unwrap();
    let mut r = RefIceberg::new(a.hasher().clone(), c.tie == Tie::Later, c.ghost_occupancy == GhostOccupancy::Include);
    let mut ages = Ages::default();
    let mut clock = 0u64;
    let mut resident: Vec<(u16, u64, u64)> = Vec::new();
    for (step, op) in ops.into_iter().enumerate() {
        match op {
            Op::Place(asid, vpn) => {
                if resident.iter().any(|&(s, v, _)| (s, v) == (asid, vpn)) {
                    continue;
                }
                let ag: Option<&dyn PageAges> = if with_ages { Some(&ages) } else { None };
                let got = a.place(&req(asid, vpn), ag);
                let want = r.place(asid, vpn, ag);
                prop_assert_eq!(got, want, "step {}", step);
                let pfn = match got {
                    Placement::Frame(p) => p,
                    Placement::Displace(v) => {
                        prop_assert!(with_ages, "displaced without ages");
                        let i = resident.iter().position(|&(_, _, p)| p == v.0).expect("displaced a resident page");
                        resident.swap_remove(i);
                        let t = ages.time.remove(&v.0).unwrap();
                        ages.horizon = ages.horizon.max(t);
                        a.free(v, 0);
                        r.free(v.0);
                        prop_assert!(a.claim(v, &req(asid, vpn)));
                        prop_assert!(r.take(v.0));
                        v
                    }
                    Placement::Full => continue,
                };
                ages.time.insert(pfn.0, clock);
                clock += 1;
                resident.push((asid, vpn, pfn.0));
                prop_assert_eq!(cpfn::decode(a.cpfn(pfn, asid, vpn), asid, vpn, a.hasher()), Some(pfn));
            }
            Op::Free(i) if !resident.is_empty() => {
                let (_, _, p) = resident.swap_remove(i % resident.len());
                ages.time.remove(&p);
                a.free(Pfn(p), 0);
                r.free(p);
            }
            Op::Touch(i) if !resident.is_empty() => {
                let (_, _, p) = resident[i % resident.len()];
                ages.time.insert(p, clock);
                clock += 1;
            }
            Op::Reserve(i) => {
                let p = a.hasher().begin() + i;
                prop_assert_eq!(a.reserve(Pfn(p)), r.take(p));
            }
            _ => {}
        }
        prop_assert_eq!(a.pool_free, r.free_frames(), "step {}", step);
        if let Err(e) = a.check_invariants() {
            return Err(TestCaseError::fail(e));
        }
    }
    Ok(())
}

fn configs() -> impl Strategy<Value = Config> {
    (1u64..5, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>(), prop_oneof![Just((56, 8, 6)), Just((60, 4, 3)), Just((57, 7, 8)), Just((63, 1, 1))]).prop_map(
        |(buckets, uniform, earlier, include, tab, (front, back, choices))| Config {
            front,
            back,
            choices,
            buckets: Some(buckets),
            choice: if uniform { Choice::Uniform } else { Choice::Partitioned },
            tie: if earlier { Tie::Earlier } else { Tie::Later },
            ghost_occupancy: if include { GhostOccupancy::Include } else { GhostOccupancy::Exclude },
            hash: if tab { HashKind::Tabulation } else { HashKind::Xxhash },
            ..Config::default()
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]
    #[test]
    fn placement_matches_the_reference(c in configs(), with_ages in any::<bool>(), ops in ops(600, 64)) {
        run_against_reference(c, with_ages, ops)?;
    }
}

