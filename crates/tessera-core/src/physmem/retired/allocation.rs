//! No allocator hands out a retired frame: random fault maps × random
//! allocation sequences, over buddy, iceberg (through `PhysMem`, as a run
//! uses them) and the reference allocator.

use proptest::prelude::*;

use super::RetiredMap;
use crate::addr::{PageSize, Pfn};
use crate::config::spec::{ByteSize, PhysMemSpec};
use crate::physmem::allocator::reference::RefFrames;
use crate::physmem::allocator::{FrameAllocator, PageRequest};
use crate::physmem::PhysMem;
use crate::registry::MechanismSpec;

#[derive(Clone, Debug)]
enum Op {
    Alloc(u32),
    Page(u64, usize),
    Table,
    Free(usize),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            4 => (0u32..=18).prop_map(Op::Alloc),
            4 => (0u64..1 << 20, 0usize..4).prop_map(|(v, s)| Op::Page(v, s)),
            1 => Just(Op::Table),
            3 => any::<usize>().prop_map(Op::Free),
        ],
        1..150,
    )
}

/// A fault-map source: uniform or clustered, with its parameters.
fn source() -> impl Strategy<Value = toml::Table> {
    let uniform = (0.0f64..0.3).prop_map(|f| {
        let mut t = toml::Table::new();
        t.insert("kind".into(), "uniform".into());
        t.insert("fraction".into(), f.into());
        t
    });
    let clustered = (0.0f64..0.3, 1i64..40, 1i64..40).prop_map(|(f, n, s)| {
        let mut t = toml::Table::new();
        t.insert("kind".into(), "clustered".into());
        t.insert("fraction".into(), f.into());
        t.insert("frames_per_fault".into(), n.into());
        t.insert("stride".into(), s.into());
        t
    });
    prop_oneof![uniform, clustered]
}

fn spec(allocator: &str, frames: u64, mut retired: toml::Table, fragmentation: f64) -> PhysMemSpec {
    let kind = retired.remove("kind").and_then(|v| v.as_str().map(str::to_string)).unwrap();
    PhysMemSpec {
        capacity: ByteSize(frames * 4096),
        allocator: MechanismSpec { kind: allocator.into(), params: toml::Table::new() },
        page_size: MechanismSpec { kind: "base_only".into(), params: toml::Table::new() },
        fragmentation,
        fragmentation_occupancy: None,
        retired: MechanismSpec { kind, params: retired },
    }
}

fn check_block(map: &RetiredMap, pfn: Pfn, order: u32) -> Result<(), TestCaseError> {
    prop_assert!(!map.any_in(pfn.0, pfn.0 + (1 << order)), "block {:#x}/{} holds a retired frame", pfn.0, order);
    Ok(())
}

/// Drive `PhysMem` with `ops`; every block it hands out avoids the fault
/// map and every frame is handed out once (checked against the reference).
fn drive(mem: &mut PhysMem, ops: &[Op]) -> Result<(), TestCaseError> {
    let map = mem.retired_map().cloned().unwrap_or_else(|| RetiredMap::new(mem.capacity_frames()));
    let mut seen = RefFrames::new(mem.capacity_frames());
    for f in map.iter() {
        prop_assert!(seen.alloc_at(Pfn(f), 0));
    }
    // Blocks held: (first frame, order, is a data page).
    let mut live: Vec<(Pfn, u32, bool)> = Vec::new();
    let mut pages = std::collections::HashSet::new();
    for op in ops {
        match *op {
            Op::Alloc(order) => {
                if let Some(p) = mem.try_alloc(order) {
                    check_block(&map, p, order)?;
                    prop_assert!(seen.alloc_at(p, order), "block {:?}/{} handed out twice", p, order);
                    live.push((p, order, false));
                }
            }
            Op::Page(vpn, s) => {
                let size = PageSize::ALL[s];
                let req = PageRequest { asid: 1, vpn: (vpn >> size.order()) << size.order(), size };
                if !pages.insert((req.vpn, s)) {
                    continue; // one placement per page
                }
                if let Ok(Some(p)) = mem.alloc_page(req, false) {
                    check_block(&map, p, size.order())?;
                    prop_assert!(seen.alloc_at(p, size.order()), "page {:?} handed out twice", p);
                    live.push((p, size.order(), true));
                }
            }
            Op::Table => {
                if let Ok(p) = mem.alloc_table_frame() {
                    check_block(&map, p, 0)?;
                    prop_assert!(seen.alloc_at(p, 0));
                    live.push((p, 0, false));
                }
            }
            Op::Free(i) if !live.is_empty() => {
                let (p, order, data) = live.swap_remove(i % live.len());
                if data {
                    let req = mem.free_page(p);
                    prop_assert!(req.is_some());
                    let req = req.unwrap();
                    pages.remove(&(req.vpn, PageSize::ALL.iter().position(|&z| z == req.size).unwrap()));
                } else {
                    mem.free(p, order);
                }
                seen.free(p, order);
            }
            Op::Free(_) => {}
        }
        if let Err(e) = mem.allocator().check_invariants() {
            return Err(TestCaseError::fail(e));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn buddy_never_hands_out_a_retired_frame(
        frames in 512u64..6000, src in source(), frag in prop_oneof![Just(0.0), 0.0f64..=1.0], seed in any::<u64>(), ops in ops(),
    ) {
        match PhysMem::build(&spec("buddy", frames, src, frag), seed) {
            Ok(mut mem) => drive(&mut mem, &ops)?,
            // Only the "too little memory left for page tables" error is allowed.
            Err(e) => prop_assert!(e.to_string().contains("physmem.retired"), "{}", e),
        }
    }

    #[test]
    fn iceberg_never_hands_out_a_retired_frame(
        buckets in 8u64..40, src in source(), seed in any::<u64>(), ops in ops(),
    ) {
        // Room below the pool for nodes and large pages: 1/64 of memory, at least 256 KiB.
        let frames = buckets * 64 + 1024;
        let mut s = spec("iceberg", frames, src, 0.0);
        s.allocator.params.insert("buckets".into(), (buckets as i64).into());
        match PhysMem::build(&s, seed) {
            Ok(mut mem) => drive(&mut mem, &ops)?,
            Err(e) => prop_assert!(e.to_string().contains("physmem.retired"), "{}", e),
        }
    }

    #[test]
    fn reference_allocator_never_hands_out_a_retired_frame(
        frames in 1u64..3000, retired in prop::collection::vec(0u64..3000, 0..200),
        orders in prop::collection::vec((0u32..=12, any::<bool>()), 1..100),
    ) {
        let mut map = RetiredMap::new(frames);
        let mut r = RefFrames::new(frames);
        for &f in retired.iter().filter(|&&f| f < frames) {
            if !map.is_retired(f) {
                map.retire(f);
                prop_assert!(r.alloc_at(Pfn(f), 0));
            }
        }
        let mut live = Vec::new();
        for (order, free) in orders {
            if free && !live.is_empty() {
                let (p, o) = live.remove(0);
                r.free(p, o);
            } else if let Some(p) = r.alloc(order) {
                check_block(&map, p, order)?;
                live.push((p, order));
            }
        }
        prop_assert_eq!(r.free_frames() + map.count() + live.iter().map(|&(_, o)| 1u64 << o).sum::<u64>(), frames);
    }
}

#[test]
fn a_map_leaving_no_room_for_page_tables_is_a_config_error() {
    let mut t = toml::Table::new();
    t.insert("kind".into(), "uniform".into());
    t.insert("fraction".into(), 0.9999.into());
    let e = PhysMem::build(&spec("buddy", 512, t, 0.0), 1).unwrap_err();
    let s = e.to_string();
    assert!(matches!(e, crate::Error::Config { ref path, .. } if path == "physmem.retired"), "{s}");
    assert!(s.contains("page tables need at least 6"), "{s}");
}

#[test]
fn retirement_and_fragmentation_compose() {
    let mut t = toml::Table::new();
    t.insert("kind".into(), "uniform".into());
    t.insert("fraction".into(), 0.002.into());
    let frames = 1u64 << 16; // 128 blocks of 2 MiB
    let with = PhysMem::build(&spec("buddy", frames, t, 0.5), 3).unwrap();
    let without = PhysMem::build(&spec("buddy", frames, toml::Table::from_iter([("kind".to_string(), "none".into())]), 0.5), 3).unwrap();
    let retired = with.retired_frames();
    assert!(retired > 0);
    // Fragmentation draws the same 64 frames; those already retired are not pinned twice.
    assert!(with.pinned_frames() <= 64 && with.pinned_frames() + 5 >= 64);
    assert_eq!(without.pinned_frames(), 64);
    assert_eq!(with.free_frames(), frames - retired - with.pinned_frames());
    let stats = {
        let mut c = crate::stats::Collector::default();
        with.visit(&mut c);
        c.stats.counters
    };
    assert_eq!(stats["retired_frames"], retired);
    assert_eq!(stats["allocated_frames"], 0);
    assert_eq!(stats["retired.clean_blocks_2m"], with.retired_map().unwrap().clean_blocks(9));
    let plain = {
        let mut c = crate::stats::Collector::default();
        without.visit(&mut c);
        c.stats.counters
    };
    assert!(!plain.keys().any(|k| k.starts_with("retired")), "no fault map, no retired stats");
}
