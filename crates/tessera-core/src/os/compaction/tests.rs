use super::*;
use crate::addr::Asid;
use crate::config::{load, ConfigSource, Spec};
use crate::physmem::allocator::FrameAllocator;
use crate::registry::AnyFormat;

fn spec(overrides: &[&str]) -> Spec {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    load(&ConfigSource::Preset("tlb_only".into()), &o).unwrap()
}

/// Records what the OS shot down.
#[derive(Default)]
struct Shot(Vec<(u64, PageSize, Asid)>);
impl Shootdown for Shot {
    fn shoot_down(&mut self, va: u64, size: PageSize, asid: Asid) -> u64 {
        self.0.push((va, size, asid));
        1
    }
}

struct Parts {
    pt: PageTable,
    mem: PhysMem,
    caches: CacheHierarchy,
}

fn parts(s: &Spec) -> Parts {
    let caches = CacheHierarchy::build(&s.cache, 1).unwrap();
    let mem = PhysMem::build(&s.physmem, 1).unwrap();
    let ctx = crate::pagetable::x86_radix::FormatCtx { levels: s.pagetable.levels, hasher: None };
    let format = AnyFormat::build(&s.pagetable.format, &ctx, "pagetable.format").unwrap();
    Parts { pt: PageTable::new(format), mem, caches }
}

fn page(va: u64, size: PageSize) -> PageRequest {
    PageRequest { asid: 0, vpn: va >> BASE_SHIFT, size }
}

fn map(p: &mut Parts, va: u64, size: PageSize) -> Pfn {
    let pfn = p.mem.alloc_page(page(va, size), true).unwrap().unwrap();
    p.pt.map(&mut p.mem, 0, va, size, pfn).unwrap();
    pfn
}

/// The process's own 4 KiB pages are moved out of a block: each keeps its
/// virtual page, its accessed and dirty bits and its reverse-map entry, its
/// translation is shot down, and the 2 MiB page gets the block.
#[test]
fn moves_the_process_pages_out_of_a_block_and_keeps_their_bits() {
    let s = spec(&["physmem.capacity=\"16MiB\"", "physmem.page_size=\"thp\""]);
    let mut p = parts(&s);
    // The first page brings the table nodes into block 0; fill the rest of
    // block 0, so the next 4 KiB pages land in block 1.
    map(&mut p, 0x4000_0000, PageSize::Size4K);
    let held: Vec<u64> = (0..512).filter(|&f| p.mem.reserve_frame(Pfn(f))).collect();
    let base = 0x4000_1000;
    let moved: Vec<Pfn> = (0..20).map(|i| map(&mut p, base + (i << 12), PageSize::Size4K)).collect();
    assert!(moved.iter().all(|f| f.0 / 512 == 1), "{moved:?}");
    // Store to some, read others, leave the rest untouched.
    let format = p.pt.format().clone();
    for i in 0..20u64 {
        let l = p.pt.leaf(&p.mem, 0, base + (i << 12)).unwrap();
        let raw = match i % 3 {
            0 => format.used(l.raw, true, true),
            1 => format.used(l.raw, true, false),
            _ => continue,
        };
        p.mem.write_linked(l.slot, l.word, raw);
    }
    // Every other block backs a 2 MiB page; give block 0's spare frames back.
    let mut va2m = 0x8000_0000;
    while p.mem.alloc_page(page(va2m, PageSize::Size2M), false).unwrap().is_some() {
        va2m += 2 << 20;
    }
    for &f in &held[..100] {
        p.mem.free(Pfn(f), 0);
    }
    let mut c = Compaction::new(&CompactionSpec::default(), &p.mem, 4000);
    let (mut shot, mut cycles) = (Shot::default(), 0);
    let got = c.compact(page(va2m, PageSize::Size2M), &mut p.pt, &mut p.mem, &mut p.caches, &mut shot, &mut cycles).unwrap();
    assert_eq!(got, Some(Pfn(512)), "block 1 is the one with only movable frames");
    assert_eq!(c.stats.pages_migrated, 20);
    assert_eq!(c.stats.pins_migrated, 0);
    assert_eq!(cycles, 20 * (8000 + 4000));
    assert_eq!(shot.0.len(), 20);
    for i in 0..20u64 {
        let va = base + (i << 12);
        assert!(shot.0.contains(&(va, PageSize::Size4K, 0)));
        let l = p.pt.leaf(&p.mem, 0, va).unwrap();
        assert!(l.pfn_base < 512, "moved into block 0's free frames, not {:#x}", l.pfn_base);
        assert_eq!(p.mem.owner(Pfn(l.pfn_base)), Some(page(va, PageSize::Size4K)));
        assert_eq!(format.is_dirty(l.raw), i % 3 == 0, "page {i}");
        assert_eq!(format.is_accessed(l.raw), i % 3 != 2, "page {i}");
    }
    assert_eq!(p.mem.owner(Pfn(512)), Some(page(va2m, PageSize::Size2M)));
    assert!(moved[1..].iter().all(|f| p.mem.owner(*f).is_none() || f.0 == 512));
    p.mem.allocator().check_invariants().unwrap();
}

/// A block with a page-table node or a retired frame never moves; with no
/// other block the attempt fails, and the next ones are deferred as Linux
/// defers them (1, 3, 7, ... skipped after 1, 2, 3 failures in a row).
#[test]
fn fails_over_unmovable_frames_and_defers_like_linux() {
    let s = spec(&["physmem.capacity=\"8MiB\"", "physmem.page_size=\"thp\"", "physmem.retired={ kind = \"uniform\", fraction = 0.05 }"]);
    let mut p = parts(&s);
    map(&mut p, 0, PageSize::Size4K);
    let mut c = Compaction::new(&CompactionSpec { max_defer_shift: 2, ..CompactionSpec::default() }, &p.mem, 4000);
    assert!(c.stuck.iter().all(|&n| n > 0), "5 % retired leaves no clean block of 8 MiB");
    let mut ran = Vec::new();
    for _ in 0..12 {
        let before = c.stats.attempts;
        let got = c.compact(page(2 << 20, PageSize::Size2M), &mut p.pt, &mut p.mem, &mut p.caches, &mut Shot::default(), &mut 0).unwrap();
        assert_eq!(got, None);
        ran.push(c.stats.attempts > before);
    }
    let pattern: Vec<u8> = ran.iter().map(|&r| r as u8).collect();
    // Run, skip 1, run, skip 3, run, skip 3 (the shift is capped at 2), ...
    assert_eq!(pattern, [1, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0]);
    assert_eq!(c.stats.failures, 4);
    assert_eq!(c.stats.deferred, 8);
    assert_eq!(c.stats.blocks_scanned, 0, "no block without a retired frame was examined");
}

/// Pinned frames move when they stand for movable pages, and rule their
/// block out when they do not.
#[test]
fn pins_move_only_when_movable() {
    let s = spec(&["physmem.capacity=\"8MiB\"", "physmem.page_size=\"thp\"", "physmem.fragmentation=1.0"]);
    for movable in [true, false] {
        let mut p = parts(&s);
        assert_eq!(p.mem.pins().len(), 4);
        let mut c = Compaction::new(&CompactionSpec { movable_pins: movable, ..CompactionSpec::default() }, &p.mem, 4000);
        let got = c.compact(page(0, PageSize::Size2M), &mut p.pt, &mut p.mem, &mut p.caches, &mut Shot::default(), &mut 0).unwrap();
        if movable {
            assert_eq!(got, Some(Pfn(3 * 512)), "the migrate scanner starts at the top");
            assert_eq!((c.stats.pins_migrated, c.stats.pages_migrated), (1, 0));
            assert_eq!(c.pins.len(), 4, "the pin moved, none was lost");
            assert!(c.pins.iter().all(|&f| f < 3 * 512));
        } else {
            assert_eq!(got, None);
            assert_eq!(c.stats.failures, 1);
        }
        p.mem.allocator().check_invariants().unwrap();
    }
}
