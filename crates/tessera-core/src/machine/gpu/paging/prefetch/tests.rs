//! The prefetchers against naive references (written over `Vec<bool>` and an
//! explicit tree, the most obvious way), hand-computed blocks, and config
//! errors.

use proptest::prelude::*;
use rand::{Rng, SeedableRng};

use super::*;
use crate::error::Error;
use crate::rng::SimRng;

const K4: u64 = 4 << 10;
const K64: u64 = 64 << 10;

fn bits(v: &[bool]) -> Bits {
    let mut b = Bits::default();
    for (i, &x) in v.iter().enumerate() {
        if x {
            b.set(i as u32);
        }
    }
    b
}

fn bools(b: &Bits, units: u32) -> Vec<bool> {
    (0..units).map(|i| b.get(i)).collect()
}

fn of_units(units: u32, list: &[u32]) -> Vec<bool> {
    (0..units).map(|i| list.contains(&i)).collect()
}

fn block(unit_bytes: u64, resident: &[bool], faulted: &[bool], allocated: &[bool]) -> Block {
    Block {
        base: 0x4000_0000,
        unit_bytes,
        units: (BLOCK_BYTES / unit_bytes) as u32,
        resident: bits(resident),
        faulted: bits(faulted),
        allocated: bits(allocated),
    }
}

/// A block of every unit allocated.
fn simple(unit_bytes: u64, resident: &[u32], faulted: &[u32]) -> Block {
    let units = (BLOCK_BYTES / unit_bytes) as u32;
    block(unit_bytes, &of_units(units, resident), &of_units(units, faulted), &vec![true; units as usize])
}

fn spec(toml_src: &str) -> Result<crate::registry::MechanismSpec> {
    let v: toml::Value = toml::from_str(&format!("p = {toml_src}")).unwrap();
    AnyPagePrefetcher::resolve(&v["p"], "gpu.paging.prefetch")
}

fn member(toml_src: &str, unit_bytes: u64, seed: u64) -> AnyPagePrefetcher {
    build(&spec(toml_src).unwrap(), &PrefetchCtx { unit_bytes, seed }).unwrap()
}

fn run(p: &mut AnyPagePrefetcher, b: &Block) -> Bits {
    let mut out = Bits::default();
    p.prefetch(b, &mut out);
    out
}

fn err_path(toml_src: &str, unit_bytes: u64) -> (String, String) {
    let r = spec(toml_src).and_then(|s| build(&s, &PrefetchCtx { unit_bytes, seed: 1 }));
    match r {
        Err(Error::Config { path, msg, allowed }) => (path, format!("{msg} {allowed:?}")),
        Err(e) => panic!("not a config error: {e}"),
        Ok(_) => panic!("{toml_src} accepted"),
    }
}

fn units_in(range: std::ops::Range<u32>) -> Vec<u32> {
    range.collect()
}

// ---------------------------------------------------------------------------
// Naive references.
// ---------------------------------------------------------------------------

fn naive_sequential(faulted: &[bool], region: usize) -> Vec<bool> {
    let mut out = vec![false; faulted.len()];
    for (u, _) in faulted.iter().enumerate().filter(|(_, &f)| f) {
        for (v, o) in out.iter_mut().enumerate() {
            if v / region == u / region {
                *o = true;
            }
        }
    }
    out
}

/// A node of UVM-Smart's tree: `len` units from `lo`, two halves above the
/// basic blocks.
struct Node {
    lo: usize,
    len: usize,
    kids: Option<Box<[Node; 2]>>,
}

fn tree(lo: usize, len: usize, leaf: usize) -> Node {
    let kids = (len > leaf).then(|| Box::new([tree(lo, len / 2, leaf), tree(lo + len / 2, len / 2, leaf)]));
    Node { lo, len, kids }
}

fn valid_in(n: &Node, valid: &[bool]) -> usize {
    valid[n.lo..n.lo + n.len].iter().filter(|&&x| x).count()
}

fn fill(n: &Node, valid: &mut [bool], scheduled: &mut [bool]) {
    for u in n.lo..n.lo + n.len {
        valid[u] = true;
        scheduled[u] = true;
    }
}

/// One post-order pass; whether it filled anything.
fn traverse(n: &Node, valid: &mut [bool], scheduled: &mut [bool]) -> bool {
    let Some(kids) = &n.kids else { return false };
    let mut changed = traverse(&kids[0], valid, scheduled);
    changed |= traverse(&kids[1], valid, scheduled);
    let c = valid_in(n, valid);
    if 2 * c > n.len && c < n.len {
        fill(n, valid, scheduled);
        changed = true;
    }
    changed
}

/// TBN iterated until no node changes; also how many passes changed one.
fn naive_tbn(resident: &[bool], faulted: &[bool], leaf: usize) -> (Vec<bool>, usize) {
    let units = faulted.len();
    let mut scheduled = vec![false; units];
    if !faulted.contains(&true) {
        return (scheduled, 0);
    }
    for u in (0..units).filter(|&u| faulted[u]) {
        let lo = u / leaf * leaf;
        scheduled[lo..lo + leaf].iter_mut().for_each(|s| *s = true);
    }
    let mut valid: Vec<bool> = (0..units).map(|u| resident[u] || scheduled[u]).collect();
    let root = tree(0, units, leaf.min(units));
    let mut changing = 0;
    while traverse(&root, &mut valid, &mut scheduled) {
        changing += 1;
    }
    (scheduled, changing)
}

/// The driver's walk: leaf to root, the last (highest) qualifying node wins.
fn naive_nvidia(unit_bytes: u64, resident: &[bool], faulted: &[bool], threshold: usize) -> Vec<bool> {
    let units = faulted.len();
    let mut pages: Vec<bool> = (0..units).map(|u| resident[u] || faulted[u]).collect();
    let big = ((64 << 10) / unit_bytes as usize).max(1);
    for u in (0..units).filter(|&u| faulted[u]) {
        for (v, p) in pages.iter_mut().enumerate() {
            if v / big == u / big {
                *p = true;
            }
        }
    }
    let mut out = vec![false; units];
    for u in (0..units).filter(|&u| faulted[u]) {
        let mut region = None;
        let mut size = 1;
        while size <= units {
            let lo = u / size * size;
            let count = pages[lo..lo + size].iter().filter(|&&p| p).count();
            if count * 100 > size * threshold {
                region = Some(lo..lo + size);
            }
            size *= 2;
        }
        if let Some(r) = region {
            out[r].iter_mut().for_each(|o| *o = true);
        }
    }
    out
}

fn naive_random(rng: &mut SimRng, faulted: &[bool], allocated: &[bool]) -> Vec<bool> {
    let list: Vec<usize> = (0..allocated.len()).filter(|&u| allocated[u]).collect();
    let mut out = vec![false; faulted.len()];
    if list.is_empty() {
        return out;
    }
    for _ in faulted.iter().filter(|&&f| f) {
        out[list[rng.gen_range(0..list.len() as u32) as usize]] = true;
    }
    out
}

// ---------------------------------------------------------------------------
// Random blocks.
// ---------------------------------------------------------------------------

/// A random block: 32 or 512 units, densities drawn per block (so that some
/// nodes sit near every threshold), faulted never resident.
#[derive(Clone, Debug)]
struct Case {
    unit_bytes: u64,
    resident: Vec<bool>,
    faulted: Vec<bool>,
    allocated: Vec<bool>,
}

impl Case {
    fn block(&self) -> Block {
        block(self.unit_bytes, &self.resident, &self.faulted, &self.allocated)
    }
    fn units(&self) -> u32 {
        self.faulted.len() as u32
    }
}

fn case() -> impl Strategy<Value = Case> {
    (prop_oneof![Just(K4), Just(K64)], 0u32..=100, 0u32..=40, 30u32..=100, 0u32..4, any::<u64>()).prop_map(
        |(unit_bytes, p_res, p_fault, p_alloc, clump, seed)| {
            let units = (BLOCK_BYTES / unit_bytes) as usize;
            let mut rng = SimRng::seed_from_u64(seed);
            // Runs of equal draws (1 to 8 units) make partly valid regions
            // of every size, not only even noise.
            let run = 1usize << clump;
            let mut draw = |p: u32| -> Vec<bool> {
                let mut v = Vec::with_capacity(units);
                while v.len() < units {
                    let x = rng.gen_range(0..100) < p;
                    for _ in 0..run.min(units - v.len()) {
                        v.push(x);
                    }
                }
                v
            };
            let resident = draw(p_res);
            let faulted: Vec<bool> = draw(p_fault).into_iter().zip(&resident).map(|(f, &r)| f && !r).collect();
            let allocated = draw(p_alloc);
            Case { unit_bytes, resident, faulted, allocated }
        },
    )
}

fn nothing_past_units(out: &Bits, units: u32) -> bool {
    (units..512).all(|i| !out.get(i))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn sequential_local_matches_reference(c in case(), shift in 0u32..10) {
        let size = (c.unit_bytes << shift).min(BLOCK_BYTES);
        let mut p = member(&format!("{{ kind = \"sequential_local\", size = {size} }}"), c.unit_bytes, 1);
        let out = run(&mut p, &c.block());
        prop_assert!(nothing_past_units(&out, c.units()));
        prop_assert_eq!(bools(&out, c.units()), naive_sequential(&c.faulted, (size / c.unit_bytes) as usize));
    }

    /// Equal to TBN iterated to a fixed point, and the reference's single
    /// post-order pass already is one: no second pass ever fills a node.
    #[test]
    fn tree_neighbourhood_matches_reference(c in case(), shift in 0u32..10) {
        let leaf = (c.unit_bytes << shift).min(BLOCK_BYTES);
        let mut p = member(&format!("{{ kind = \"tree_neighbourhood\", basic_block = {leaf} }}"), c.unit_bytes, 1);
        let out = run(&mut p, &c.block());
        let (want, changing_passes) = naive_tbn(&c.resident, &c.faulted, (leaf / c.unit_bytes) as usize);
        prop_assert!(nothing_past_units(&out, c.units()));
        prop_assert!(changing_passes <= 1, "{changing_passes} passes filled nodes");
        prop_assert_eq!(bools(&out, c.units()), want);
    }

    #[test]
    fn nvidia_tree_matches_reference(c in case(), threshold in 1usize..=100) {
        let mut p = member(&format!("{{ kind = \"nvidia_tree\", threshold = {threshold} }}"), c.unit_bytes, 1);
        let out = run(&mut p, &c.block());
        prop_assert!(nothing_past_units(&out, c.units()));
        prop_assert_eq!(bools(&out, c.units()), naive_nvidia(c.unit_bytes, &c.resident, &c.faulted, threshold));
    }

    /// Two blocks in a row: the draws carry over from one to the next.
    #[test]
    fn random_matches_reference(a in case(), b in case(), seed in any::<u64>()) {
        let mut p = member("\"random\"", a.unit_bytes, seed);
        let mut rng = SimRng::seed_from_u64(seed);
        for c in [&a, &b] {
            let out = run(&mut p, &c.block());
            prop_assert!(nothing_past_units(&out, c.units()));
            prop_assert!(out.and_not(&c.block().allocated).is_empty());
            prop_assert!(out.count() <= c.block().faulted.count());
            prop_assert_eq!(bools(&out, c.units()), naive_random(&mut rng, &c.faulted, &c.allocated));
        }
    }
}

// ---------------------------------------------------------------------------
// Hand-computed blocks.
// ---------------------------------------------------------------------------

#[test]
fn registry_lists_every_member() {
    assert_eq!(AnyPagePrefetcher::NAMES, &["none", "sequential_local", "tree_neighbourhood", "nvidia_tree", "random"]);
    assert_eq!(AnyPagePrefetcher::KEY, "prefetch");
    for name in AnyPagePrefetcher::NAMES {
        for unit in [K4, K64] {
            assert_eq!(member(&format!("\"{name}\""), unit, 1).name(), *name);
        }
    }
}

#[test]
fn defaults_are_filled_in() {
    let s = spec("\"sequential_local\"").unwrap();
    assert_eq!(s.params["size"].as_str(), Some("64KiB"));
    let s = spec("\"tree_neighbourhood\"").unwrap();
    assert_eq!(s.params["basic_block"].as_str(), Some("64KiB"));
    let s = spec("\"nvidia_tree\"").unwrap();
    assert_eq!(s.params["threshold"].as_integer(), Some(51));
    let s = spec("{ kind = \"sequential_local\", size = \"1MiB\" }").unwrap();
    assert_eq!(s.params["size"].as_str(), Some("1MiB"));
}

#[test]
fn sequential_local_brings_the_aligned_region() {
    let mut p = member("\"sequential_local\"", K4, 1);
    assert_eq!(run(&mut p, &simple(K4, &[], &[17])), bits(&of_units(512, &units_in(16..32))));
    // Two faults in one region, one in another.
    let out = run(&mut p, &simple(K4, &[], &[0, 15, 40]));
    assert_eq!(out, bits(&of_units(512, &[units_in(0..16), units_in(32..48)].concat())));

    let mut p = member("{ kind = \"sequential_local\", size = \"128KiB\" }", K4, 1);
    assert_eq!(run(&mut p, &simple(K4, &[], &[17])), bits(&of_units(512, &units_in(0..32))));
    let mut p = member("{ kind = \"sequential_local\", size = \"2MiB\" }", K64, 1);
    assert_eq!(run(&mut p, &simple(K64, &[], &[31])), bits(&of_units(32, &units_in(0..32))));
}

#[test]
fn sequential_local_at_64k_units_adds_nothing() {
    let mut p = member("\"sequential_local\"", K64, 1);
    let b = simple(K64, &[3], &[5, 6, 20]);
    assert!(run(&mut p, &b).and_not(&b.faulted).is_empty());
}

#[test]
fn tree_neighbourhood_fills_a_half_more_than_half_valid() {
    let mut p = member("\"tree_neighbourhood\"", K64, 1);
    // 8 resident and 1 fault: 9 of the 16 basic blocks of the left 1 MiB.
    // Below it no node is over half (the fault's pair, quad and octet hold
    // 1 of 2, 4, 8); the root holds 16 of 32, not more than half.
    let b = simple(K64, &units_in(0..8), &[10]);
    assert_eq!(run(&mut p, &b), bits(&of_units(32, &units_in(0..16))));
    // 8 of 16, spread so that no node below is over half either (pairs
    // hold 1 of 2, quads 2 of 4, octets 4 of 8): exactly half fills nothing.
    let spread = [0, 1, 2, 3, 8, 12, 14];
    let b = simple(K64, &spread, &[10]);
    assert_eq!(run(&mut p, &b), bits(&of_units(32, &[10])));
    // One more unit makes the quad 12..16 3 of 4: it fills, then the octet
    // 8..16 (6 of 8), then the half (12 of 16), bottom-up in one pass.
    let b = simple(K64, &[&spread[..], &[15]].concat(), &[10]);
    assert_eq!(run(&mut p, &b), bits(&of_units(32, &units_in(0..16))));
    // One more resident block on the right: the filled left half makes the
    // root 17 of 32, so the same pass fills the whole block.
    let b = simple(K64, &[units_in(0..8), vec![20]].concat(), &[10]);
    assert_eq!(run(&mut p, &b), bits(&of_units(32, &units_in(0..32))));
}

#[test]
fn tree_neighbourhood_over_4k_units() {
    let mut p = member("\"tree_neighbourhood\"", K4, 1);
    // A fault schedules its 64 KiB basic block (16 units), nothing above.
    assert_eq!(run(&mut p, &simple(K4, &[], &[20])), bits(&of_units(512, &units_in(16..32))));
    // Basic block 0 resident, a fault in block 1, 9 units resident in
    // block 2: block 2 is never filled by the rule (a leaf), and the quad
    // 0..64 holds 16 + 16 + 9 = 41 of 64, over half: filled.
    let b = simple(K4, &[units_in(0..16), units_in(32..41)].concat(), &[20]);
    assert_eq!(run(&mut p, &b), bits(&of_units(512, &units_in(0..64))));
    // With block 0 empty: the pair 0..32 holds 16 of 32 (half, not more),
    // the quad 25 of 64; only the fault's basic block.
    let b = simple(K4, &units_in(32..41), &[20]);
    assert_eq!(run(&mut p, &b), bits(&of_units(512, &units_in(16..32))));
}

#[test]
fn tree_neighbourhood_ignores_blocks_without_faults() {
    let mut p = member("\"tree_neighbourhood\"", K64, 1);
    assert!(run(&mut p, &simple(K64, &units_in(0..9), &[])).is_empty());
}

#[test]
fn nvidia_tree_at_4k_units() {
    let mut p = member("\"nvidia_tree\"", K4, 1);
    // The fault's big page (0..16) counts whole: 16 of 16 qualifies, 16 of
    // 32 is 50 %, not above 51 %.
    assert_eq!(run(&mut p, &simple(K4, &[], &[5])), bits(&of_units(512, &units_in(0..16))));
    // One resident unit in 16..32: 17 of 32 is 53 %, the region is 0..32;
    // 17 of 64 is not.
    assert_eq!(run(&mut p, &simple(K4, &[20], &[5])), bits(&of_units(512, &units_in(0..32))));
    // At 49 % the 16 of 32 qualifies, 16 of 64 does not.
    let mut p = member("{ kind = \"nvidia_tree\", threshold = 49 }", K4, 1);
    assert_eq!(run(&mut p, &simple(K4, &[], &[5])), bits(&of_units(512, &units_in(0..32))));
    // At 100 % nothing can qualify.
    let mut p = member("{ kind = \"nvidia_tree\", threshold = 100 }", K4, 1);
    assert!(run(&mut p, &simple(K4, &units_in(0..511), &[511])).is_empty());
}

#[test]
fn nvidia_tree_at_64k_units() {
    let mut p = member("\"nvidia_tree\"", K64, 1);
    // 4 of 4 qualifies, 4 of 8 (50 %) does not.
    assert_eq!(run(&mut p, &simple(K64, &[0, 1, 2], &[3])), bits(&of_units(32, &units_in(0..4))));
    let mut p = member("{ kind = \"nvidia_tree\", threshold = 49 }", K64, 1);
    assert_eq!(run(&mut p, &simple(K64, &[0, 1, 2], &[3])), bits(&of_units(32, &units_in(0..8))));
    // The highest qualifying node wins even when a node between fails:
    // 17 of 32 present, the fault's half (16..32) holding only 2.
    let mut p = member("\"nvidia_tree\"", K64, 1);
    let b = simple(K64, &[units_in(0..15), vec![16]].concat(), &[31]);
    assert_eq!(run(&mut p, &b), bits(&of_units(32, &units_in(0..32))));
}

#[test]
fn random_draws_allocated_units_only_and_is_seeded() {
    let allocated = of_units(512, &[7]);
    let b = block(K4, &vec![false; 512], &of_units(512, &[1, 2]), &allocated);
    assert_eq!(run(&mut member("\"random\"", K4, 3), &b), bits(&of_units(512, &[7])));
    // Nothing allocated: nothing drawn.
    let b = block(K4, &vec![false; 512], &of_units(512, &[1, 2]), &vec![false; 512]);
    assert!(run(&mut member("\"random\"", K4, 3), &b).is_empty());

    let b = simple(K4, &[], &units_in(0..64));
    let a1 = run(&mut member("\"random\"", K4, 3), &b);
    let a2 = run(&mut member("\"random\"", K4, 3), &b);
    let other = run(&mut member("\"random\"", K4, 4), &b);
    assert_eq!(a1, a2);
    assert_ne!(a1, other);
    assert!(a1.count() > 1 && a1.count() <= 64);
}

// ---------------------------------------------------------------------------
// Config errors.
// ---------------------------------------------------------------------------

#[test]
fn sizes_must_be_power_of_two_units_up_to_a_block() {
    for (src, unit) in [
        ("{ kind = \"sequential_local\", size = \"96KiB\" }", K4),
        ("{ kind = \"sequential_local\", size = \"4MiB\" }", K4),
        ("{ kind = \"sequential_local\", size = \"4KiB\" }", K64),
        ("{ kind = \"sequential_local\", size = 0 }", K4),
    ] {
        let (path, msg) = err_path(src, unit);
        assert_eq!(path, "gpu.paging.prefetch.size", "{src}");
        assert!(msg.contains("power-of-two multiple") && msg.contains("2MiB"), "{msg}");
    }
    let (path, msg) = err_path("{ kind = \"tree_neighbourhood\", basic_block = \"3KiB\" }", K4);
    assert_eq!(path, "gpu.paging.prefetch.basic_block");
    assert!(msg.contains("4KiB") && msg.contains("3 KiB"), "{msg}");
    let (path, _) = err_path("{ kind = \"tree_neighbourhood\", basic_block = \"32KiB\" }", K64);
    assert_eq!(path, "gpu.paging.prefetch.basic_block");
    let (path, _) = err_path("{ kind = \"sequential_local\", size = \"lots\" }", K4);
    assert_eq!(path, "gpu.paging.prefetch.size");
}

#[test]
fn threshold_is_a_percentage() {
    for t in [0, 101, 1000] {
        let (path, msg) = err_path(&format!("{{ kind = \"nvidia_tree\", threshold = {t} }}"), K4);
        assert_eq!(path, "gpu.paging.prefetch.threshold");
        assert!(msg.contains("1 to 100"), "{msg}");
    }
    let (path, _) = err_path("{ kind = \"nvidia_tree\", threshold = -1 }", K4);
    assert_eq!(path, "gpu.paging.prefetch.threshold");
}

#[test]
fn unknown_keys_and_members_are_named() {
    let (path, _) = err_path("{ kind = \"random\", seed = 3 }", K4);
    assert!(path.starts_with("gpu.paging.prefetch"), "{path}");
    let (path, _) = err_path("{ kind = \"nvidia_tree\", treshold = 40 }", K4);
    assert!(path.starts_with("gpu.paging.prefetch"), "{path}");
    let (path, msg) = err_path("\"stride\"", K4);
    assert_eq!(path, "gpu.paging.prefetch.kind");
    assert!(msg.contains("tree_neighbourhood"), "{msg}");
}
