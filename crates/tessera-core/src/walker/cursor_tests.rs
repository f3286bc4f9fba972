//! The walk cursor driven by hand (`start`, then `next_paddr` / `advance`
//! with each reference charged by a simple caller, then `finish`) against
//! `Walker::walk`, on random tables of every registered format; and the
//! references a walk yields with its shortcuts off.

use super::*;
use crate::config::{load, ConfigSource};
use crate::memsys::{MemorySystem, Shootdown};
use crate::stats::Collector;
use proptest::prelude::*;

/// No TLBs to shoot down: the walks here are the only clients.
struct NoTlbs;

impl Shootdown for NoTlbs {
    fn shoot_down(&mut self, _va: u64, _size: PageSize, _asid: Asid) -> u64 {
        0
    }
}

fn system(preset: &str, overrides: &[&str]) -> MemorySystem {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let spec = load(&ConfigSource::Preset(preset.into()), &o).unwrap();
    MemorySystem::build(&spec, 5).unwrap()
}

/// One machine per registered format and the walk paths each takes:
/// shortcuts (`tlb_only`), PSCs and walk references through the caches
/// (`sandy_bridge`, `gtsm_ptlsim` from L2), 2 MiB and 64 KiB leaves, large
/// pages that keep their node, five levels, tables changed under memory
/// pressure, tables of contents, GT-PDEs in every mode (padding in the
/// 1 MiB mode, whole entries in the PDE cache).
const CONFIGS: &[(&str, &[&str])] = &[
    ("tlb_only", &[]),
    ("tlb_only", &["physmem.page_size=\"thp\"", "physmem.fragmentation=0.99"]),
    ("sandy_bridge", &["physmem.page_size=\"thp\"", "physmem.fragmentation=0.99", "pagetable.levels=5"]),
    ("tlb_only", &["timing.enabled=true", "pagetable.levels=5"]),
    (
        "tlb_only",
        &["physmem.capacity=8MiB", "os.swap={ capacity = \"64MiB\" }", "os.eviction=clock", "physmem.page_size=\"thp\""],
    ),
    ("tlb_only", &["physmem.page_size={ kind = \"thp\", max = \"2m\" }", "pagetable.format={ kind = \"radix\", large_reads_next = true }"]),
    (
        "tlb_only",
        &[
            "pagetable.format={ kind = \"radix\", bits = [9, 9, 9, 5, 4] }",
            "physmem.page_size={ kind = \"thp\", max = \"64k\" }",
            "mmu.tlb.l1_dtlb_4k.page_sizes=[\"4k\", \"64k\"]",
            "mmu.tlb.l2_tlb.page_sizes=[\"4k\", \"64k\"]",
        ],
    ),
    ("tlb_only", &["pagetable.format={ kind = \"radix\", bits = [8, 8, 8, 4, 8], va_bits = 48, entry_bytes = 16 }"]),
    ("tlb_only", &["physmem.allocator=iceberg", "pagetable.format={ kind = \"mosaic_toc\", arity = 4 }"]),
    ("sandy_bridge", &["physmem.allocator=iceberg", "pagetable.format={ kind = \"mosaic_toc\", arity = 16 }"]),
    ("gtsm_ptlsim", &["pagetable.format={ kind = \"gt_pde\", mode = \"gt_pde_4m\" }", "physmem.page_size=\"gtsm\"", "physmem.capacity=\"1GiB\""]),
    ("gtsm_ptlsim", &["pagetable.format={ kind = \"gt_pde\", mode = \"gt_pde_1m\" }", "physmem.page_size=\"gtsm\"", "physmem.capacity=\"1GiB\""]),
    ("gtsm_ptlsim", &["pagetable.format={ kind = \"gt_pde\", mode = \"gt_pde_2m\" }", "physmem.page_size=\"gtsm\"", "physmem.capacity=\"1GiB\""]),
    ("gtsm_ptlsim", &["pagetable.format={ kind = \"gt_pde\", mode = \"p_gt_pde_2m\" }", "physmem.page_size=\"gtsm\"", "physmem.capacity=\"1GiB\""]),
    ("gtsm_ptlsim", &["pagetable.format={ kind = \"gt_pde\", mode = \"p_gt_pde_4m\" }", "physmem.page_size=\"gtsm\"", "physmem.capacity=\"1GiB\""]),
    ("tlb_only", &["pagetable.format={ kind = \"gt_pde\", mode = \"gt_pde_1m\" }", "physmem.capacity=\"1GiB\""]),
];

/// How a system walks.
#[derive(Copy, Clone, PartialEq, Debug)]
enum How {
    /// `Walker::walk`, the CPU's loop.
    Walk,
    /// The cursor driven by hand.
    Stepped,
}

/// The simple caller's charge for a reference the walk yielded: the data
/// caches from the walker's entry level, the level that served it counted
/// as the walker counts its own, and the walker's step cycles on top.
fn serve(walker: &mut Walker, caches: &mut CacheHierarchy, paddr: u64) -> u64 {
    let served = caches.access(paddr, false, walker.entry, Source::Walk);
    match walker.level_slot[served.level as usize] {
        0 => walker.stats.refs_l1d += 1,
        1 => walker.stats.refs_l2 += 1,
        2 => walker.stats.refs_llc += 1,
        _ => walker.stats.refs_dram += 1,
    }
    (walker.step_cycles + served.latency) as u64
}

/// What one walk gave: its result and cycles, the references it yielded
/// and the references its cursor counted.
type Walked = ((WalkResult, u64), u64, u64);

/// A walk driven by hand: `start`, then each yielded reference served by
/// [`serve`] and handed to `advance`, then `finish`.
#[allow(clippy::too_many_arguments)]
fn stepped<F: PageTableFormat>(
    walker: &mut Walker,
    format: &F,
    caches: &mut CacheHierarchy,
    mem: &mut PhysMem,
    va: u64,
    asid: Asid,
    root: (u64, u32),
    write: bool,
    instr: bool,
) -> Walked {
    let mut c = match walker.start(format, va, asid, root, write, instr, mem) {
        WalkStart::Walk(c) => c,
        WalkStart::Done(r, cycles) => return ((r, cycles), 0, 0),
    };
    // References a shortcut counted without making them (walks that enter
    // at DRAM): the caller charges each as a DRAM reference, with the first
    // one it serves.
    let skipped = c.refs();
    let mut extra = skipped * walker.dram_ref_cycles;
    walker.stats.refs_dram += skipped;
    caches.count_dram(Source::Walk, skipped);
    let mut yielded = 0;
    let result = loop {
        let paddr = c.next_paddr(format);
        yielded += 1;
        let ref_cycles = serve(walker, caches, paddr) + std::mem::take(&mut extra);
        if let Some(r) = walker.advance(format, &mut c, mem, ref_cycles) {
            break r;
        }
    };
    let refs = c.refs();
    (walker.finish(&c, result), yielded, refs)
}

/// Translate `va` as the CPU's miss path does: walk, and on a fault let
/// the OS map the page and walk again. Returns every walk.
fn translate(sys: &mut MemorySystem, how: How, va: u64, asid: Asid, write: bool, instr: bool) -> Vec<Walked> {
    let mut out = Vec::new();
    for _ in 0..2 {
        let (root, slot) = sys.pt.root_linked(&mut sys.mem, asid).unwrap();
        let format = sys.pt.format();
        let walked = match how {
            How::Walk => {
                let before = sys.walker.stats.refs_total;
                let r = sys.walker.walk(format, va, asid, (root.0, slot), write, instr, &mut sys.mem, &mut sys.caches);
                (r, 0, sys.walker.stats.refs_total - before)
            }
            How::Stepped => stepped(&mut sys.walker, format, &mut sys.caches, &mut sys.mem, va, asid, (root.0, slot), write, instr),
        };
        let fault = matches!(walked.0 .0, WalkResult::Fault { .. });
        out.push(walked);
        if !fault {
            break;
        }
        sys.os.fault(va, asid, &mut sys.pt, &mut sys.mem, &mut sys.caches, &mut sys.walker, &mut NoTlbs).unwrap();
    }
    out
}

/// Every counter of the walker, its PSCs and the caches.
fn counters(sys: &MemorySystem) -> std::collections::BTreeMap<String, u64> {
    let mut c = Collector::default();
    sys.walker.visit(&mut c);
    sys.walker.visit_pscs(&mut c);
    sys.caches.visit(&mut c);
    c.stats.counters.into_iter().collect()
}

/// Every word of every page-table frame (accessed and dirty bits included),
/// by host slot: the systems allocate alike, so their slots correspond.
fn table_words(sys: &MemorySystem) -> Vec<u64> {
    (1..=sys.mem.table_frames() as u32).flat_map(|s| (0..512).map(move |i| (s, i))).map(|(s, i)| sys.mem.read_entry(s, i)).collect()
}

#[derive(Clone, Debug)]
struct Access {
    va: u64,
    asid: Asid,
    write: bool,
    instr: bool,
}

/// Addresses clustered in a few 2 MiB regions of a few 1 GiB and 512 GiB
/// ranges, so that walks share upper levels and PSC entries, and some
/// regions are filled with large pages.
fn access() -> impl Strategy<Value = Access> {
    (0u64..3, 0u64..3, 0u64..12, 0u64..64, 0u64..0x1000, 0u32..10, 0u32..2).prop_map(|(top, gig, region, page, off, kind, asid)| Access {
        va: 0x7f00_0000_0000 + (top << 39) + (gig << 30) + (region << 21) + (page << 12) + (off & !7),
        asid: asid as Asid,
        write: kind < 3,
        instr: kind == 9,
    })
}

/// The paths a comparison took: walks that started from a shortcut, that a
/// PSC ended with no reference, that faulted, that found a large page, and
/// that read a level-1 entry (whose leaf node a walk may start from next
/// time) and that read one for a large page (a large page keeping its node).
#[derive(Default, Debug)]
struct Paths {
    shortcuts: u64,
    done: u64,
    faults: u64,
    large: u64,
    level1: u64,
    large_via_next: u64,
}

/// Run `stream` on three systems of `CONFIGS[config]`: one walking with
/// `Walker::walk`, one with the cursor driven by hand, one with the cursor
/// of an interleaved walker (shortcuts off, checked PSC fills) walking one
/// walk at a time. All three give the same results and cycles, every
/// counter of the walker, its PSCs and the caches, and every page-table
/// word (accessed and dirty bits); the interleaved walker yields every
/// reference it counts.
fn compare(config: usize, stream: &[Access]) -> Paths {
    let (preset, overrides) = CONFIGS[config];
    let mut walk = system(preset, overrides);
    let mut step = system(preset, overrides);
    let mut inter = system(preset, overrides);
    inter.walker = inter.walker.interleaved();
    assert!(!inter.walker.shortcuts());
    let mut paths = Paths::default();
    for (n, a) in stream.iter().enumerate() {
        let w = translate(&mut walk, How::Walk, a.va, a.asid, a.write, a.instr);
        let s = translate(&mut step, How::Stepped, a.va, a.asid, a.write, a.instr);
        let i = translate(&mut inter, How::Stepped, a.va, a.asid, a.write, a.instr);
        let results = |v: &[Walked]| v.iter().map(|x| x.0).collect::<Vec<_>>();
        assert_eq!(results(&w), results(&s), "{preset} {overrides:?}: access {n} {a:?}");
        assert_eq!(results(&w), results(&i), "{preset} {overrides:?}: access {n} {a:?} (interleaved)");
        for (k, x) in s.iter().enumerate() {
            assert_eq!(x.2, w[k].2, "{preset} {overrides:?}: access {n}: the cursor counts the walk's references");
            assert!(x.1 <= x.2);
            paths.shortcuts += (x.1 < x.2) as u64;
            paths.done += (x.2 == 0) as u64;
            match x.0 .0 {
                WalkResult::Fault { .. } => paths.faults += 1,
                WalkResult::Translated { size, level, .. } => {
                    paths.large += (size != PageSize::Size4K) as u64;
                    paths.level1 += (level == 1) as u64;
                    paths.large_via_next += (size != PageSize::Size4K && level == 1) as u64;
                }
            }
        }
        for x in &i {
            assert_eq!(x.1, x.2, "{preset} {overrides:?}: access {n}: without shortcuts every reference is yielded");
        }
    }
    assert_eq!(counters(&walk), counters(&step), "{preset} {overrides:?}");
    assert_eq!(counters(&walk), counters(&inter), "{preset} {overrides:?} (interleaved)");
    assert!(table_words(&walk) == table_words(&step), "{preset} {overrides:?}: page-table words differ");
    assert!(table_words(&walk) == table_words(&inter), "{preset} {overrides:?}: page-table words differ (interleaved)");
    paths
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]
    /// The stepped walk is the walk (see [`compare`]) on random tables
    /// (made by the OS's first-touch faults along the stream) and streams.
    #[test]
    fn the_stepped_walk_is_the_walk(config in 0..CONFIGS.len(), stream in prop::collection::vec(access(), 1..160)) {
        compare(config, &stream);
    }
}

/// Each machine of [`CONFIGS`] takes the paths it is there for, on one
/// long stream each (so the property test above exercises them).
#[test]
fn each_config_takes_its_paths() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::deterministic();
    let mut wrong = Vec::new();
    for (config, (preset, overrides)) in CONFIGS.iter().enumerate() {
        let stream = prop::collection::vec(access(), 1500).new_tree(&mut runner).unwrap().current();
        let p = compare(config, &stream);
        let walker = system(preset, overrides).walker;
        let gt = overrides.iter().any(|o| o.contains("gt_pde"));
        let expect = [
            ("faults", p.faults > 0, true),
            // Only walkers that may take shortcuts take them, and they do
            // where walks reach level 1 (a table of 64 KiB pages has none).
            ("shortcuts", p.shortcuts > 0, walker.shortcuts() && p.level1 > 0),
            // A GT-PDE held whole in the PDE cache ends walks with no reference.
            ("done", p.done > 0, gt && !walker.pscs.is_empty()),
            // GT-PDEs map large regions but give the TLBs 4 KiB pages.
            ("large", p.large > 0, overrides.iter().any(|o| o.contains("thp"))),
            ("large_via_next", p.large_via_next > 0, overrides.iter().any(|o| o.contains("large_reads_next"))),
        ];
        for (what, got, want) in expect {
            if got != want {
                wrong.push(format!("{preset} {overrides:?}: {what} {got}, expected {want}: {p:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    // Shortcuts are taken on x86 and radix tables without PSCs.
    assert!(CONFIGS.iter().any(|(preset, overrides)| system(preset, overrides).walker.shortcuts()));
}

/// With shortcuts off, a full walk with no PSC yields one reference per
/// level, every time; with them on, a walk of a region already walked
/// yields only its leaf entry and counts the levels above.
#[test]
fn without_shortcuts_every_reference_is_yielded() {
    for levels in [4u32, 5] {
        let l = format!("pagetable.levels={levels}");
        for shortcuts in [true, false] {
            let mut sys = system("tlb_only", &[&l]);
            if !shortcuts {
                sys.walker = sys.walker.without_shortcuts();
            }
            assert_eq!(sys.walker.shortcuts(), shortcuts);
            let va = 0x7f12_3456_7000;
            for (k, page) in [0u64, 1, 2, 0].into_iter().enumerate() {
                let walks = translate(&mut sys, How::Stepped, va + (page << 12), 0, false, false);
                let (_, yielded, refs) = *walks.last().unwrap();
                assert!(matches!(walks.last().unwrap().0 .0, WalkResult::Translated { level: 1, .. }));
                assert_eq!(refs, levels as u64, "{levels} levels, walk {k}: every walk counts each level");
                let want = if shortcuts && k > 0 { 1 } else { levels as u64 };
                assert_eq!(yielded, want, "{levels} levels, shortcuts {shortcuts}, walk {k}");
            }
        }
    }
}

/// Two walks of one 2 MiB region in flight together on an interleaved
/// walker with PSCs: both missed every PSC at their start and both fill
/// them, and each PSC ends with one entry, not two.
#[test]
fn interleaved_walks_fill_each_psc_entry_once() {
    let mut sys = system("sandy_bridge", &[]);
    sys.walker = sys.walker.interleaved();
    let (a, b) = (0x7f12_3456_7000u64, 0x7f12_3456_8000u64);
    for va in [a, b] {
        translate(&mut sys, How::Walk, va, 0, false, false);
    }
    sys.walker.flush_pscs();
    let fills: Vec<u64> = sys.walker.pscs.iter().map(|p| p.stats.fills).collect();
    let (root, slot) = sys.pt.root_linked(&mut sys.mem, 0).unwrap();
    let format = sys.pt.format();
    let start = |w: &mut Walker, mem: &PhysMem, va| match w.start(format, va, 0, (root.0, slot), false, false, mem) {
        WalkStart::Walk(c) => c,
        WalkStart::Done(..) => unreachable!("x86 PSCs hold pointers"),
    };
    let mut ca = start(&mut sys.walker, &sys.mem, a);
    let mut cb = start(&mut sys.walker, &sys.mem, b);
    let (mut ra, mut rb) = (None, None);
    while ra.is_none() || rb.is_none() {
        for (c, r) in [(&mut ca, &mut ra), (&mut cb, &mut rb)] {
            if r.is_none() {
                let rc = serve(&mut sys.walker, &mut sys.caches, c.next_paddr(format));
                *r = sys.walker.advance(format, c, &mut sys.mem, rc);
            }
        }
    }
    sys.walker.finish(&ca, ra.unwrap());
    sys.walker.finish(&cb, rb.unwrap());
    assert_eq!((ca.refs(), cb.refs()), (4, 4));
    for (p, before) in sys.walker.pscs.iter().zip(fills) {
        assert_eq!(p.stats.fills, before + 2, "{}: each walk filled it", p.name);
        assert_eq!(p.table.occupancy(), 1, "{}: one entry for one prefix", p.name);
    }
}
