use super::*;
use crate::config::{load, ConfigSource};
use crate::pagetable::x86_radix::{frame, ACCESSED, DIRTY};
use crate::pagetable::PageTable;

struct Rig {
    walker: Walker,
    mem: PhysMem,
    pt: PageTable,
    caches: CacheHierarchy,
}

fn rig(preset: &str, overrides: &[&str]) -> Rig {
    let o: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let spec = load(&ConfigSource::Preset(preset.into()), &o).unwrap();
    let caches = CacheHierarchy::build(&spec.cache, 3).unwrap();
    let names: Vec<&'static str> = caches.level_names().to_vec();
    Rig {
        walker: Walker::build(&spec, &format(&spec), &names, 3).unwrap(),
        mem: PhysMem::build(&spec.physmem, 3).unwrap(),
        pt: PageTable::new(format(&spec)),
        caches,
    }
}

fn format(spec: &Spec) -> AnyFormat {
    let ctx = crate::pagetable::x86_radix::FormatCtx { levels: spec.pagetable.levels, ..Default::default() };
    AnyFormat::build(&spec.pagetable.format, &ctx, "pagetable.format").unwrap()
}

impl Rig {
    fn map(&mut self, va: u64, size: PageSize) -> u64 {
        let pfn = self.mem.alloc(size.order(), "test page").unwrap();
        self.pt.map(&mut self.mem, 0, va, size, pfn).unwrap();
        pfn.0
    }
    fn walk(&mut self, va: u64, write: bool) -> (WalkResult, u64) {
        let (root, slot) = self.pt.root_linked(&mut self.mem, 0).unwrap();
        self.walker.walk(self.pt.format(), va, 0, (root.0, slot), write, false, &mut self.mem, &mut self.caches)
    }
}

const VA: u64 = 0x7f12_3456_7000;

#[test]
fn cold_four_level_walk_issues_four_references() {
    let mut r = rig("tlb_only", &[]);
    let pfn = r.map(VA, PageSize::Size4K);
    let (res, _) = r.walk(VA, false);
    assert!(matches!(res, WalkResult::Translated { pfn_base, size, dirty: false, level: 1, .. } if pfn_base == pfn && size == PageSize::Size4K));
    assert_eq!(r.walker.stats.refs_total, 4);
    assert_eq!(r.walker.stats.walks, 1);
    assert_eq!(r.walker.leaves(PageSize::Size4K), 1);
}

#[test]
fn five_level_walk_issues_five_references() {
    let mut r = rig("tlb_only", &["pagetable.levels=5"]);
    r.map(VA, PageSize::Size4K);
    r.walk(VA, false);
    assert_eq!(r.walker.stats.refs_total, 5);
}

#[test]
fn warm_pde_cache_leaves_one_reference() {
    let mut r = rig("sandy_bridge", &[]);
    r.map(VA, PageSize::Size4K);
    r.map(VA + 0x1000, PageSize::Size4K);
    r.walk(VA, false);
    assert_eq!(r.walker.stats.refs_total, 4);
    r.walk(VA + 0x1000, false);
    assert_eq!(r.walker.stats.refs_total, 5, "the second walk reads only the PTE");
    let pde = r.walker.pscs.iter().find(|p| p.name == "pde").unwrap();
    assert_eq!((pde.stats.lookups, pde.stats.hits), (2, 1));
}

#[test]
fn warm_pdpte_cache_leaves_two_references() {
    let mut r = rig("sandy_bridge", &[]);
    r.map(VA, PageSize::Size4K);
    let other = VA + (4 << 21); // same 1 GiB region, another 2 MiB region
    r.map(other, PageSize::Size4K);
    r.walk(VA, false);
    r.walk(other, false);
    assert_eq!(r.walker.stats.refs_total, 4 + 2);
}

#[test]
fn two_meg_leaf_is_found_by_the_third_reference() {
    let mut r = rig("tlb_only", &[]);
    let va = 0x7f00_0020_0000;
    let pfn = r.map(va, PageSize::Size2M);
    let (res, _) = r.walk(va + 0x12345, false);
    assert!(matches!(res, WalkResult::Translated { pfn_base, size, dirty: false, level: 2, .. } if pfn_base == pfn && size == PageSize::Size2M));
    assert_eq!(r.walker.stats.refs_total, 3);
    assert_eq!(r.walker.leaves(PageSize::Size2M), 1);
}

#[test]
fn one_gig_leaf_is_found_by_the_second_reference() {
    let mut r = rig("tlb_only", &[]);
    let va = 0x7f00_4000_0000;
    r.map(va, PageSize::Size1G);
    r.walk(va + 0x1234_5678, false);
    assert_eq!(r.walker.stats.refs_total, 2);
    assert_eq!(r.walker.leaves(PageSize::Size1G), 1);
}

#[test]
fn unmapped_page_faults_at_the_first_missing_level() {
    let mut r = rig("tlb_only", &[]);
    let (res, _) = r.walk(VA, false);
    assert_eq!(res, WalkResult::Fault { level: 4 });
    assert_eq!(r.walker.stats.faulting_walks, 1);
    assert_eq!(r.walker.stats.walks, 0);
    r.map(VA, PageSize::Size4K);
    let (res, _) = r.walk(VA + 0x1000, false);
    assert_eq!(res, WalkResult::Fault { level: 1 });
}

#[test]
fn walker_sets_accessed_and_dirty_bits_in_memory() {
    let mut r = rig("tlb_only", &[]);
    r.map(VA, PageSize::Size4K);
    let leaf = r.pt.leaf_entry_addr(&r.mem, 0, VA).unwrap();
    assert_eq!(r.mem.read_u64(leaf) & (ACCESSED | DIRTY), 0);
    r.walk(VA, false);
    assert_eq!(r.mem.read_u64(leaf) & (ACCESSED | DIRTY), ACCESSED);
    assert_eq!(r.walker.stats.accessed_updates, 4);
    let (res, _) = r.walk(VA, true);
    assert!(matches!(res, WalkResult::Translated { dirty: true, .. }));
    assert_eq!(r.mem.read_u64(leaf) & DIRTY, DIRTY);
    assert_eq!(r.walker.stats.dirty_updates, 1);
    assert_eq!(r.walker.stats.accessed_updates, 4, "bits already set are not rewritten");
}

#[test]
fn walk_references_are_served_by_the_cache_hierarchy() {
    // Sandy Bridge: walks enter at L1D. Cold: DRAM; repeated: L1D hits.
    let mut r = rig("sandy_bridge", &["mmu.psc={}"]);
    r.map(VA, PageSize::Size4K);
    let (_, cold) = r.walk(VA, false);
    assert_eq!(r.walker.stats.refs_dram, 4);
    assert_eq!(cold, 4 * (8 + 200));
    let (_, warm) = r.walk(VA, false);
    assert_eq!(r.walker.stats.refs_l1d, 4);
    assert_eq!(warm, 4 * (8 + 4));
    assert_eq!(r.walker.stats.cycles, cold + warm);
}

#[test]
fn walks_enter_at_the_configured_level() {
    // GTSM's machine caches page-table references from L2 down, never in L1.
    let mut r = rig("gtsm_ptlsim", &["mmu.psc={}"]);
    r.map(VA, PageSize::Size4K);
    r.walk(VA, false);
    r.walk(VA, false);
    assert_eq!(r.walker.stats.refs_l1d, 0);
    assert_eq!(r.walker.stats.refs_l2, 4);
    assert_eq!(r.walker.stats.refs_dram, 4);
}

#[test]
fn psc_entries_are_per_address_space() {
    let mut r = rig("sandy_bridge", &[]);
    let p0 = r.mem.alloc(0, "t").unwrap();
    let p1 = r.mem.alloc(0, "t").unwrap();
    r.pt.map(&mut r.mem, 0, VA, PageSize::Size4K, p0).unwrap();
    r.pt.map(&mut r.mem, 1, VA, PageSize::Size4K, p1).unwrap();
    let (root0, s0) = r.pt.root_linked(&mut r.mem, 0).unwrap();
    let (root1, s1) = r.pt.root_linked(&mut r.mem, 1).unwrap();
    let (a, _) = r.walker.walk(r.pt.format(), VA, 0, (root0.0, s0), false, false, &mut r.mem, &mut r.caches);
    let (b, _) = r.walker.walk(r.pt.format(), VA, 1, (root1.0, s1), false, false, &mut r.mem, &mut r.caches);
    assert!(matches!(a, WalkResult::Translated { pfn_base, .. } if pfn_base == p0.0));
    assert!(matches!(b, WalkResult::Translated { pfn_base, .. } if pfn_base == p1.0));
    assert_eq!(r.walker.stats.refs_total, 8);
}

/// A walk that starts at a recorded leaf node (a machine without MMU caches
/// whose walks enter at DRAM) counts what a full walk counts, and a table
/// change that moves the path (here the PDE repointed to a new leaf node)
/// ends the shortcut.
#[test]
fn walk_shortcut_counts_like_a_full_walk_and_ends_when_the_path_changes() {
    let mut r = rig("tlb_only", &[]);
    let pfn = r.map(VA, PageSize::Size4K);
    r.walk(VA, false);
    assert_eq!((r.walker.shortcut_walks, r.walker.stats.refs_total, r.walker.stats.accessed_updates), (0, 4, 4));
    // A second page of the same 2 MiB region: its walk starts at the leaf node.
    let next = VA + 0x1000;
    let pfn2 = r.map(next, PageSize::Size4K);
    let (res, _) = r.walk(next, true);
    assert!(matches!(res, WalkResult::Translated { pfn_base, size, dirty: true, .. } if pfn_base == pfn2 && size == PageSize::Size4K));
    assert_eq!(r.walker.shortcut_walks, 1);
    assert_eq!((r.walker.stats.refs_total, r.walker.stats.accessed_updates, r.walker.stats.dirty_updates), (8, 5, 1));
    // An unmapped page of the region faults at level 1 after four references.
    let (res, _) = r.walk(VA + 0x5000, false);
    assert_eq!(res, WalkResult::Fault { level: 1 });
    assert_eq!((r.walker.shortcut_walks, r.walker.stats.refs_total), (2, 12));

    // Repoint the region's PDE at a fresh leaf node mapping VA elsewhere.
    let root = r.pt.root_linked(&mut r.mem, 0).unwrap().0;
    let l4 = r.mem.read_u64(x86_radix_entry(root.0, VA, 4));
    let l3 = r.mem.read_u64(x86_radix_entry(frame(l4).0, VA, 3));
    let pde = x86_radix_entry(frame(l3).0, VA, 2);
    let node = r.mem.alloc_table_frame().unwrap();
    let moved = r.mem.alloc(0, "test page").unwrap();
    r.mem.write_u64(x86_radix_entry(node.0, VA, 1), crate::pagetable::x86_radix::Pte::leaf(PageSize::Size4K, moved).encode());
    r.mem.write_u64(pde, crate::pagetable::x86_radix::Pte::table(node).encode());
    r.mem.link(pde, node);
    let (res, _) = r.walk(VA, false);
    assert_ne!(moved.0, pfn);
    assert!(matches!(res, WalkResult::Translated { pfn_base, size, dirty: false, .. } if pfn_base == moved.0 && size == PageSize::Size4K));
    assert_eq!(r.walker.shortcut_walks, 2, "the repointed PDE ended the shortcut");
    assert_eq!(r.walker.stats.refs_total, 16);
}

fn x86_radix_entry(node: u64, va: u64, level: u32) -> u64 {
    crate::pagetable::x86_radix::entry_addr(crate::addr::Pfn(node), va, level)
}

/// The prefetch's precomputed leaf index is each format's own, on every
/// format and geometry (x86 with 4 and 5 levels, radix trees with 8- and
/// 16-byte entries and a 64 KiB level, tables of contents of every arity).
#[test]
fn the_leaf_index_is_the_formats_own() {
    use crate::physmem::allocator::iceberg::{Config as IcebergConfig, Iceberg};
    use crate::physmem::allocator::AllocCtx;
    use crate::registry::Mechanism;
    let hasher = Iceberg::build(&IcebergConfig { buckets: Some(64), ..IcebergConfig::default() }, &AllocCtx { capacity_frames: 64 * 64 + 512, seed: 1 })
        .unwrap()
        .hasher()
        .clone();
    let formats = [
        "{ kind = \"x86_radix\" }",
        "{ kind = \"radix\", bits = [9, 9, 9, 9] }",
        "{ kind = \"radix\", bits = [8, 8, 8, 4, 8], va_bits = 48, entry_bytes = 16 }",
        "{ kind = \"mosaic_toc\", arity = 4 }",
        "{ kind = \"mosaic_toc\", arity = 8 }",
        "{ kind = \"mosaic_toc\", arity = 16 }",
        "{ kind = \"mosaic_toc\", arity = 32 }",
        "{ kind = \"mosaic_toc\", arity = 64 }",
    ];
    let mut rng = <crate::rng::SimRng as rand::SeedableRng>::seed_from_u64(7);
    let mut checked = 0;
    for f in formats {
        for levels in [4, 5] {
            let v: toml::Value = toml::from_str::<toml::Table>(&format!("f = {f}")).unwrap()["f"].clone();
            let spec: crate::registry::MechanismSpec = serde::Deserialize::deserialize(v).unwrap();
            let ctx = crate::pagetable::x86_radix::FormatCtx { levels: Some(levels), hasher: Some(hasher.clone()) };
            // Radix trees take their depth from `bits`: only the 4-level build of those.
            let Ok(format) = AnyFormat::build(&spec, &ctx, "pagetable.format") else { continue };
            checked += 1;
            let base = load(&ConfigSource::Preset("tlb_only".into()), &[]).unwrap();
            let w = Walker::build(&base, &format, &[], 3).unwrap();
            for _ in 0..2000 {
                let va: u64 = rand::Rng::gen(&mut rng);
                assert_eq!(w.leaf_word(va), format.word(va, 1), "{f}, {levels} levels, va {va:#x}");
            }
        }
    }
    assert!(checked >= 12, "only {checked} formats built");
}

/// x86-64 radix entries, with a decode cost on level-2 entries (as a
/// GT-PDE has): the walker must add it to the walk's cycles.
struct CostlyPd(crate::pagetable::x86_radix::X86Radix);

// Formats made for tests are never a table's own.
impl crate::registry::Member<AnyFormat> for CostlyPd {
    fn of(_: &AnyFormat) -> Option<&Self> {
        None
    }
}
impl crate::registry::Member<AnyFormat> for SplitPd {
    fn of(_: &AnyFormat) -> Option<&Self> {
        None
    }
}

impl PageTableFormat for CostlyPd {
    fn levels(&self) -> u32 {
        self.0.levels()
    }
    fn level_shift(&self, level: u32) -> u32 {
        self.0.level_shift(level)
    }
    fn index(&self, va: u64, level: u32) -> u64 {
        self.0.index(va, level)
    }
    fn entry_words(&self) -> u32 {
        1
    }
    fn va_bits(&self) -> u32 {
        self.0.va_bits()
    }
    fn sizes(&self) -> &[PageSize] {
        self.0.sizes()
    }
    fn leaf_level(&self, size: PageSize) -> Option<u32> {
        self.0.leaf_level(size)
    }
    fn decode(&self, raw: u64, level: u32, va: u64, asid: Asid, word: &dyn Fn(u32) -> u64) -> Step {
        self.0.decode(raw, level, va, asid, word)
    }
    fn encode_leaf(&self, size: PageSize, pfn: crate::addr::Pfn) -> u64 {
        self.0.encode_leaf(size, pfn)
    }
    fn decode_cycles(&self, _raw: u64, level: u32) -> u32 {
        if level == 2 { 3 } else { 0 }
    }
    fn allows_shortcuts(&self) -> bool {
        false
    }
}

#[test]
fn decode_cycles_of_an_entry_are_added_to_its_walk() {
    use crate::registry::Mechanism;
    let ctx = crate::pagetable::x86_radix::FormatCtx { levels: Some(4), ..Default::default() };
    let costly = CostlyPd(crate::pagetable::x86_radix::X86Radix::build(&Default::default(), &ctx).unwrap());
    let mut cycles = Vec::new();
    for pd_cost in [false, true] {
        // A timed machine: its walker counts cycles.
        let mut r = rig("sandy_bridge", &[]);
        r.map(VA, PageSize::Size4K);
        let (root, slot) = r.pt.root_linked(&mut r.mem, 0).unwrap();
        let (res, c) = if pd_cost {
            r.walker.walk(&costly, VA, 0, (root.0, slot), false, false, &mut r.mem, &mut r.caches)
        } else {
            r.walk(VA, false)
        };
        assert!(matches!(res, WalkResult::Translated { level: 1, .. }));
        assert_eq!(r.walker.stats.cycles, c, "the walker's cycle counter includes the decode");
        cycles.push(c);
    }
    assert_eq!(cycles[1], cycles[0] + 3, "one level-2 entry read, 3 cycles to decode it");
}

/// x86-64 radix entries except at level 2, where a 16-byte entry covers
/// 4 MiB and holds two PDEs, one per 2 MiB half (the GT-PDE 4 MB mode's
/// slot when it maps no superpage): the walk must use, set the accessed bit
/// of and follow the pointer of `va`'s half.
struct SplitPd(crate::pagetable::x86_radix::X86Radix);

impl PageTableFormat for SplitPd {
    fn levels(&self) -> u32 {
        4
    }
    fn level_shift(&self, level: u32) -> u32 {
        if level == 2 { 22 } else { self.0.level_shift(level) }
    }
    fn index(&self, va: u64, level: u32) -> u64 {
        if level == 2 { (va >> 22) & 255 } else { self.0.index(va, level) }
    }
    fn entry_words(&self) -> u32 {
        2
    }
    fn level_entry_words(&self, level: u32) -> u32 {
        if level == 2 { 2 } else { 1 }
    }
    fn va_bits(&self) -> u32 {
        48
    }
    fn sizes(&self) -> &[PageSize] {
        &[PageSize::Size4K]
    }
    fn leaf_level(&self, size: PageSize) -> Option<u32> {
        (size == PageSize::Size4K).then_some(1)
    }
    fn decode(&self, raw: u64, level: u32, va: u64, asid: Asid, word: &dyn Fn(u32) -> u64) -> Step {
        if level != 2 {
            return self.0.decode(raw, level, va, asid, word);
        }
        let pde = if self.table_word(va, 2) == 0 { raw } else { word(1) };
        self.0.decode(pde, 2, va, asid, word)
    }
    fn encode_leaf(&self, size: PageSize, pfn: crate::addr::Pfn) -> u64 {
        self.0.encode_leaf(size, pfn)
    }
    fn table_word(&self, va: u64, level: u32) -> u32 {
        if level == 2 { ((va >> 21) & 1) as u32 } else { 0 }
    }
    fn node_shift(&self, level: u32) -> u32 {
        if level == 1 { 21 } else { self.level_shift(level + 1) }
    }
}

#[test]
fn a_walk_takes_the_pointer_of_its_half_of_a_two_pointer_entry() {
    use crate::registry::Mechanism;
    let ctx = crate::pagetable::x86_radix::FormatCtx { levels: Some(4), ..Default::default() };
    let split = SplitPd(crate::pagetable::x86_radix::X86Radix::build(&Default::default(), &ctx).unwrap());
    // One 4 MiB region: a page in each 2 MiB half, and a second page in the upper half.
    let lo = 0x7f00_0040_0000u64 + 0x3000;
    let hi = 0x7f00_0060_0000u64 + 0x5000;
    let hi2 = hi + 0x1000;
    // Without PSCs (walk shortcuts), and with them (keyed by a pointer's range).
    for preset in ["tlb_only", "sandy_bridge"] {
        split_pd_walks(&split, preset, lo, hi, hi2);
    }
}

fn split_pd_walks(split: &SplitPd, preset: &str, lo: u64, hi: u64, hi2: u64) {
    let mut r = rig(preset, &[]);
    r.walker = r.walker.keyed_for(split);
    let mut frames = Vec::new();
    for va in [lo, hi, hi2] {
        let pfn = r.mem.alloc(0, "test page").unwrap();
        r.pt.map_as(split, &mut r.mem, 0, va, PageSize::Size4K, pfn).unwrap();
        frames.push(pfn.0);
    }
    assert_eq!(r.pt.nodes(1), 2, "one page table per 2 MiB half");
    assert_eq!(r.pt.nodes(2), 1, "one PD");
    let (root, slot) = r.pt.root_linked(&mut r.mem, 0).unwrap();
    // Walks of the upper half after the lower one: a hint keyed by the
    // entry's 4 MiB range instead of the node's 2 MiB would start them in
    // the lower half's page table.
    let walk = |r: &mut Rig, va: u64| r.walker.walk(split, va, 0, (root.0, slot), false, false, &mut r.mem, &mut r.caches).0;
    for (va, pfn) in [(lo, frames[0]), (hi, frames[1]), (hi2, frames[2])] {
        assert!(matches!(walk(&mut r, va), WalkResult::Translated { pfn_base, level: 1, .. } if pfn_base == pfn), "{va:#x}");
    }
    if preset == "tlb_only" {
        assert_eq!(r.walker.stats.refs_total, 12, "four references a walk");
    } else {
        assert_eq!(r.walker.stats.refs_total, 4 + 2 + 1, "a cold walk, then PDPTE and PDE cache hits");
    }
    // The PD slot's two words carry their own accessed bits.
    let pd = (root.0 << 12) + split.index(lo, 4) * 8;
    let pdpt = crate::pagetable::x86_radix::frame(r.mem.read_u64(pd)).0 << 12;
    let pd_node = crate::pagetable::x86_radix::frame(r.mem.read_u64(pdpt + split.index(lo, 3) * 8)).0 << 12;
    let slot_addr = pd_node + split.index(lo, 2) * 16;
    let (w0, w1) = (r.mem.read_u64(slot_addr), r.mem.read_u64(slot_addr + 8));
    assert!(w0 & ACCESSED != 0 && w1 & ACCESSED != 0, "each half's PDE was used: {w0:#x} {w1:#x}");
    assert_ne!(frame(w0), frame(w1), "two page tables");
    assert_eq!(r.walker.stats.accessed_updates, 1 + 1 + 2 + 3, "the PML4E, the PDPTE, both PDEs, three PTEs");
}
