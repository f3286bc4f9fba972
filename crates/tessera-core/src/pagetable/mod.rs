//! Per-address-space x86-64 radix page tables built in simulated physical memory.
//!
//! ## What it models
//! The OS side of the page table: one radix tree of 4 or 5 levels per address
//! space (ASID), whose nodes are 4 KiB frames from [`PhysMem::alloc_table_frame`]
//! and whose entries are real [`x86_radix`] bits written into those frames. The
//! hardware walker (`walker/`) reads the same words through the cache hierarchy
//! and sets accessed/dirty bits; this module only builds the tree and offers a
//! side-effect-free software walk for the OS model and for tests.
//!
//! Lifecycle: the root of an ASID (its CR3) is allocated on first use by
//! [`PageTable::root`] or [`PageTable::map`]. `map` installs a leaf at level 1
//! (4 KiB), 2 (2 MiB, `PS` = 1) or 3 (1 GiB, `PS` = 1), allocating missing
//! intermediate nodes; intermediate entries are present, writable and user.
//! Nothing is ever unmapped in this version, so nodes are never freed.
//! ## Paper
//! Intel SDM Vol. 3A §4.5; the radix baseline of every reproduced paper.
//! ## Choices where the papers are silent
//! - Virtual-address bits above the tree's reach (47/56) are ignored, so
//!   canonical upper-half addresses alias lower-half ones.
//! - Mapping over an existing mapping (or over a node that holds smaller pages)
//!   is a caller bug, caught by `debug_assert`; callers ask
//!   [`PageTable::region_unmapped`] first.
//! - Running out of frames for a node returns `Error::OutOfMemory` with `what =
//!   "page-table node"`; nodes created before the failure stay (empty) in the tree.
//! ## Config
//! `pagetable.format = "x86_radix"`, `pagetable.levels = 4 | 5`.
//! ## Stats
//! `pagetable.nodes_l5` .. `pagetable.nodes_l1` (nodes per level, summed over
//! ASIDs; `nodes_l5` is 0 for 4-level tables), `pagetable.mappings_4k`,
//! `pagetable.mappings_2m`, `pagetable.mappings_1g`.

pub mod x86_radix;

use crate::addr::{Asid, PageSize, Pfn};
use crate::error::Result;
use crate::physmem::PhysMem;
use crate::stat_group;
use crate::stats::{StatGroup, StatVisitor};
use x86_radix::{entry_addr, frame, index, is_leaf, leaf_frame, leaf_level, page_size_at, present, Pte};

stat_group! {
    /// Size of the page tables at the end of the run.
    pub struct PageTableStats {
        nodes_l5: gauge "nodes", "PML5 nodes (one per address space in 5-level tables)",
        nodes_l4: gauge "nodes", "PML4 nodes",
        nodes_l3: gauge "nodes", "PDPT nodes",
        nodes_l2: gauge "nodes", "page-directory nodes",
        nodes_l1: gauge "nodes", "page-table (PT) nodes",
        mappings_4k: gauge "pages", "4 KiB leaf entries in the tables",
        mappings_2m: gauge "pages", "2 MiB leaf entries in the tables",
        mappings_1g: gauge "pages", "1 GiB leaf entries in the tables",
    }
}

/// Per-address-space x86-64 radix page tables living in simulated physical memory.
#[derive(Clone, Debug)]
pub struct PageTable {
    levels: u32,
    /// Root node per ASID, grown on demand.
    roots: Vec<Option<Pfn>>,
    /// Roots with their host storage slots (see [`PhysMem::entry_link`]).
    root_slots: Vec<Option<(Pfn, u32)>>,
    /// Nodes per level, index 1..=5.
    nodes: [u64; 6],
    /// Leaf entries per page size (`PageSize::index`).
    mappings: [u64; PageSize::COUNT],
}

/// Where a software walk stopped.
enum Walk {
    /// A present leaf at `level`, held in the entry at `addr` with raw value `raw`.
    Leaf { level: u32, addr: u64, raw: u64 },
    /// The entry at `level` is not present.
    Hole { level: u32 },
}

impl PageTable {
    /// `levels` is 4 or 5 (checked by config resolution).
    pub fn new(levels: u32) -> Self {
        debug_assert!(levels == 4 || levels == 5, "unsupported page-table depth {levels}");
        PageTable { levels, roots: Vec::new(), root_slots: Vec::new(), nodes: [0; 6], mappings: [0; PageSize::COUNT] }
    }

    pub fn levels(&self) -> u32 {
        self.levels
    }

    /// Root node of `asid` if it has one, without allocating.
    #[inline]
    pub fn root_of(&self, asid: Asid) -> Option<Pfn> {
        self.roots.get(asid as usize).copied().flatten()
    }

    /// Root node of `asid` and its host storage slot, allocating it on first use.
    #[inline(always)]
    pub fn root_linked(&mut self, mem: &mut PhysMem, asid: Asid) -> Result<(Pfn, u32)> {
        if let Some(Some(r)) = self.root_slots.get(asid as usize) {
            return Ok(*r);
        }
        self.link_root(mem, asid)
    }

    /// [`Self::root_linked`] of an address space seen for the first time.
    #[cold]
    fn link_root(&mut self, mem: &mut PhysMem, asid: Asid) -> Result<(Pfn, u32)> {
        let r = self.root(mem, asid)?;
        let i = asid as usize;
        if self.root_slots.len() <= i {
            self.root_slots.resize(i + 1, None);
        }
        let link = (r, mem.table_slot(r.0));
        self.root_slots[i] = Some(link);
        Ok(link)
    }

    /// Root node of `asid`, allocating it on first use (CR3).
    pub fn root(&mut self, mem: &mut PhysMem, asid: Asid) -> Result<Pfn> {
        if let Some(r) = self.root_of(asid) {
            return Ok(r);
        }
        let r = mem.alloc_table_frame()?;
        let i = asid as usize;
        if self.roots.len() <= i {
            self.roots.resize(i + 1, None);
        }
        self.roots[i] = Some(r);
        self.nodes[self.levels as usize] += 1;
        Ok(r)
    }

    /// Map the `size`-aligned page containing `va` to the block starting at `pfn`, creating
    /// intermediate nodes as needed. Sets present, writable, user; leaves A/D clear.
    pub fn map(&mut self, mem: &mut PhysMem, asid: Asid, va: u64, size: PageSize, pfn: Pfn) -> Result<()> {
        let Some(target) = leaf_level(size) else {
            return Err(crate::error::Error::config(
                "physmem.page_size",
                format!("the x86_radix page-table format cannot map {} pages", size.name()),
            ));
        };
        let leaf = Pte::leaf(size, pfn);
        debug_assert!(leaf.check_at(target).is_ok(), "{:?}", leaf.check_at(target));
        // Follow the host links from node to node, as the walker does: no
        // frame-to-storage lookups on the first-touch path.
        let (_, mut slot) = self.root_linked(mem, asid)?;
        for level in (target + 1..=self.levels).rev() {
            let idx = index(va, level);
            let raw = mem.read_entry(slot, idx);
            slot = if present(raw) {
                debug_assert!(!is_leaf(raw, level), "mapping {va:#x} inside an existing larger page");
                mem.entry_link(slot, idx)
            } else {
                let child = mem.alloc_table_frame()?;
                let child_slot = mem.table_slot(child.0);
                mem.write_entry(slot, idx, Pte::table(child).encode());
                mem.set_link(slot, idx, child_slot);
                self.nodes[level as usize - 1] += 1;
                child_slot
            };
        }
        let idx = index(va, target);
        debug_assert!(!present(mem.read_entry(slot, idx)), "mapping {va:#x} over an existing entry");
        mem.write_entry(slot, idx, leaf.encode());
        self.mappings[size.index()] += 1;
        Ok(())
    }

    /// Walk from the root towards level `stop`, ending early at a hole or a leaf.
    /// Returns `None` when `asid` has no table or the walk reaches `stop`'s node
    /// without a leaf; for `stop` = 1 it always ends at a leaf or a hole.
    #[inline]
    fn walk(&self, mem: &PhysMem, asid: Asid, va: u64, stop: u32) -> Option<Walk> {
        let mut node = self.root_of(asid)?;
        let mut level = self.levels;
        loop {
            let addr = entry_addr(node, va, level);
            let raw = mem.read_u64(addr);
            if !present(raw) {
                return Some(Walk::Hole { level });
            }
            if is_leaf(raw, level) {
                return Some(Walk::Leaf { level, addr, raw });
            }
            if level == stop {
                return None;
            }
            node = frame(raw);
            level -= 1;
        }
    }

    /// True when nothing is mapped in the `size`-aligned virtual region containing `va`:
    /// no larger leaf covers it and its entry at `size`'s level is not present.
    pub fn region_unmapped(&self, mem: &PhysMem, asid: Asid, va: u64, size: PageSize) -> bool {
        let Some(target) = leaf_level(size) else { return false };
        match self.walk(mem, asid, va, target) {
            Some(Walk::Hole { level }) => level >= target,
            // A leaf at or above the target level covers the region.
            Some(Walk::Leaf { .. }) => false,
            // No table for this ASID, or a node (holding smaller pages) sits at the target level.
            None => self.root_of(asid).is_none(),
        }
    }

    /// Software walk with no side effects: the frame backing `va`'s 4 KiB page and the page size.
    pub fn translate(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<(Pfn, PageSize)> {
        match self.walk(mem, asid, va, 1)? {
            Walk::Leaf { level, raw, .. } => Some((leaf_frame(raw, level, va), page_size_at(level)?)),
            Walk::Hole { .. } => None,
        }
    }

    /// Physical address of the leaf entry that maps `va`, if mapped.
    pub fn leaf_entry_addr(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<u64> {
        match self.walk(mem, asid, va, 1)? {
            Walk::Leaf { addr, .. } => Some(addr),
            Walk::Hole { .. } => None,
        }
    }

    /// Counters as a stat group.
    pub fn stats(&self) -> PageTableStats {
        PageTableStats {
            nodes_l5: self.nodes[5],
            nodes_l4: self.nodes[4],
            nodes_l3: self.nodes[3],
            nodes_l2: self.nodes[2],
            nodes_l1: self.nodes[1],
            mappings_4k: self.mappings[PageSize::Size4K.index()],
            mappings_2m: self.mappings[PageSize::Size2M.index()],
            mappings_1g: self.mappings[PageSize::Size1G.index()],
        }
    }

    /// Stats under `pagetable.*` (caller adds the prefix).
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        self.stats().visit(v);
    }
}

#[cfg(test)]
mod tests {
    use super::x86_radix::{self, ACCESSED, DIRTY, PAGE_SIZE, USER, WRITABLE};
    use super::*;
    use crate::config::spec::{ByteSize, PhysMemSpec};
    use crate::error::Error;
    use crate::registry::MechanismSpec;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const K4: PageSize = PageSize::Size4K;
    const M2: PageSize = PageSize::Size2M;
    const G1: PageSize = PageSize::Size1G;

    fn mem(capacity: u64) -> PhysMem {
        let spec = PhysMemSpec {
            capacity: ByteSize(capacity),
            allocator: MechanismSpec { kind: "buddy".into(), params: toml::Table::new() },
            page_size: MechanismSpec { kind: "base_only".into(), params: toml::Table::new() },
            fragmentation: 0.0,
        };
        PhysMem::build(&spec, 1).unwrap()
    }

    #[test]
    fn four_k_mapping_translates_and_builds_one_node_per_level() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::new(4);
        let data = m.alloc(0, "data").unwrap();
        let va = 0x7fff_1234_5000;
        assert!(pt.region_unmapped(&m, 0, va, K4));
        pt.map(&mut m, 0, va, K4, data).unwrap();
        assert_eq!(pt.translate(&m, 0, va + 0xabc), Some((data, K4)));
        assert_eq!(pt.translate(&m, 0, va + 0x1000), None);
        assert_eq!(pt.translate(&m, 1, va), None, "other ASID has no table");
        let s = pt.stats();
        assert_eq!((s.nodes_l4, s.nodes_l3, s.nodes_l2, s.nodes_l1, s.nodes_l5), (1, 1, 1, 1, 0));
        assert_eq!(s.mappings_4k, 1);
        assert_eq!(m.table_frames(), 4);
    }

    #[test]
    fn entries_are_real_bits_in_table_frames() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::new(4);
        let va = 3 << 30 | 5 << 21;
        pt.map(&mut m, 0, va, M2, Pfn(512 * 7)).unwrap();
        let root = pt.root(&mut m, 0).unwrap();
        let l4 = m.read_u64(x86_radix::entry_addr(root, va, 4));
        assert_eq!(l4 & 0xfff, 0b111, "intermediate entry: present, writable, user");
        let l3 = m.read_u64(x86_radix::entry_addr(x86_radix::frame(l4), va, 3));
        let leaf_addr = x86_radix::entry_addr(x86_radix::frame(l3), va, 2);
        assert_eq!(pt.leaf_entry_addr(&m, 0, va + 12345), Some(leaf_addr));
        let leaf = m.read_u64(leaf_addr);
        assert_eq!(leaf & 0xfff, 0b111 | PAGE_SIZE, "leaf: P, W, U, PS; A and D clear");
        assert_eq!(x86_radix::frame(leaf), Pfn(512 * 7));
        // The walker sets A/D in place; translation still works and sees the same frame.
        m.write_u64(leaf_addr, leaf | ACCESSED | DIRTY);
        assert_eq!(pt.translate(&m, 0, va + 0x3000), Some((Pfn(512 * 7 + 3), M2)));
        assert!(leaf & WRITABLE != 0 && leaf & USER != 0);
    }

    #[test]
    fn mixed_sizes_and_asids_translate_independently() {
        let mut m = mem(8 << 30);
        let mut pt = PageTable::new(4);
        let g = m.alloc(18, "1g").unwrap();
        let two = m.alloc(9, "2m").unwrap();
        let four = m.alloc(0, "4k").unwrap();
        pt.map(&mut m, 1, 1 << 30, G1, g).unwrap();
        pt.map(&mut m, 1, 2 << 30, M2, two).unwrap();
        pt.map(&mut m, 1, (2 << 30) + (2 << 20), K4, four).unwrap();
        pt.map(&mut m, 9, 1 << 30, K4, four).unwrap();

        assert_eq!(pt.translate(&m, 1, (1 << 30) + (77 << 12) + 5), Some((Pfn(g.0 + 77), G1)));
        assert_eq!(pt.translate(&m, 1, (2 << 30) + (511 << 12)), Some((Pfn(two.0 + 511), M2)));
        assert_eq!(pt.translate(&m, 1, (2 << 30) + (2 << 20) + 8), Some((four, K4)));
        assert_eq!(pt.translate(&m, 1, (2 << 30) + (2 << 20) + 4096), None);
        assert_eq!(pt.translate(&m, 9, 1 << 30), Some((four, K4)));
        assert_eq!(pt.translate(&m, 9, (1 << 30) + 4096), None);
        assert_eq!(pt.translate(&m, 5, 1 << 30), None);
        let s = pt.stats();
        assert_eq!((s.mappings_4k, s.mappings_2m, s.mappings_1g), (2, 1, 1));
        assert_eq!(s.nodes_l4, 2, "one root per ASID");
    }

    #[test]
    fn region_unmapped_sees_smaller_and_larger_mappings() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::new(4);
        let base = 4u64 << 30;
        assert!(pt.region_unmapped(&m, 0, base, G1), "no table yet");
        pt.map(&mut m, 0, base + (3 << 21) + (5 << 12), K4, Pfn(100)).unwrap();
        // The 4 KiB page makes its 2 MiB and 1 GiB regions non-empty...
        assert!(!pt.region_unmapped(&m, 0, base + (3 << 21), M2));
        assert!(!pt.region_unmapped(&m, 0, base, G1));
        assert!(!pt.region_unmapped(&m, 0, base + (3 << 21) + (5 << 12), K4));
        // ...but not its neighbours.
        assert!(pt.region_unmapped(&m, 0, base + (3 << 21) + (6 << 12), K4));
        assert!(pt.region_unmapped(&m, 0, base + (4 << 21), M2));
        assert!(pt.region_unmapped(&m, 0, base + (1 << 30), G1));

        pt.map(&mut m, 0, base + (8 << 21), M2, Pfn(512)).unwrap();
        // A large page covers every smaller region inside it.
        assert!(!pt.region_unmapped(&m, 0, base + (8 << 21) + (9 << 12), K4));
        assert!(!pt.region_unmapped(&m, 0, base + (8 << 21), M2));
        assert!(pt.region_unmapped(&m, 1, base + (8 << 21), M2), "other ASID");
    }

    #[test]
    fn five_level_table_uses_a_pml5_root() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::new(5);
        let va = (300u64 << 48) | (7 << 39) | 0x1000;
        pt.map(&mut m, 0, va, K4, Pfn(42)).unwrap();
        pt.map(&mut m, 0, va & ((1 << 48) - 1), K4, Pfn(43)).unwrap();
        assert_eq!(pt.translate(&m, 0, va), Some((Pfn(42), K4)));
        assert_eq!(pt.translate(&m, 0, va & ((1 << 48) - 1)), Some((Pfn(43), K4)), "bits 48..56 select another PML5 entry");
        let s = pt.stats();
        assert_eq!((s.nodes_l5, s.nodes_l4, s.nodes_l3, s.nodes_l2, s.nodes_l1), (1, 2, 2, 2, 2));
        assert_eq!(pt.levels(), 5);
    }

    #[test]
    fn tiny_memory_runs_out_with_an_error_not_a_panic() {
        let mut m = mem(2 << 20);
        let mut pt = PageTable::new(4);
        let mut result = Ok(());
        for i in 0..1000u64 {
            // Each mapping lands in its own 1 GiB region: three new nodes every time.
            result = pt.map(&mut m, 0, i << 30, K4, Pfn(0));
            if result.is_err() {
                break;
            }
        }
        match result {
            Err(Error::OutOfMemory { what, .. }) => assert_eq!(what, "page-table node"),
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        assert_eq!(m.free_frames(), 0);
    }

    #[test]
    fn stats_use_the_documented_names() {
        let mut c = crate::stats::Collector::default();
        PageTable::new(4).visit(&mut c);
        let names: Vec<&str> = c.stats.counters.keys().map(|s| s.as_str()).collect();
        assert_eq!(
            names,
            ["mappings_1g", "mappings_2m", "mappings_4k", "nodes_l1", "nodes_l2", "nodes_l3", "nodes_l4", "nodes_l5"]
        );
    }

    fn size_of(i: u8) -> PageSize {
        [K4, M2, G1][i as usize % 3]
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// Random non-overlapping mappings of every size in several ASIDs all
        /// translate back, against a map-based reference.
        #[test]
        fn random_mappings_round_trip(
            levels in 4u32..=5,
            reqs in prop::collection::vec((0u16..4, any::<u64>(), 0u8..3, 0u64..(1 << 20)), 1..60),
        ) {
            let mut m = mem(256 << 20);
            let mut pt = PageTable::new(levels);
            // Reference: (asid, page start, size) -> first frame.
            let mut reference: BTreeMap<(Asid, u64), (PageSize, u64)> = BTreeMap::new();
            let va_mask = (1u64 << x86_radix::va_bits(levels)) - 1;
            for (asid, va, s, frame) in reqs {
                let size = size_of(s);
                // Keep addresses in a few GiB so regions collide often.
                let va = ((va & va_mask) % (8 << 30)) | (va & va_mask & !((64 << 30) - 1));
                let start = va & !(size.bytes() - 1);
                let pfn = Pfn(frame << size.order());
                let overlaps = reference.iter().any(|(&(a, s0), &(sz, _))| {
                    a == asid && s0 < start + size.bytes() && start < s0 + sz.bytes()
                });
                prop_assert_eq!(pt.region_unmapped(&m, asid, va, size), !overlaps);
                if overlaps {
                    continue;
                }
                pt.map(&mut m, asid, va, size, pfn).unwrap();
                reference.insert((asid, start), (size, pfn.0));
            }
            for (&(asid, start), &(size, pfn)) in &reference {
                for off in [0, size.bytes() / 2 + 8, size.bytes() - 1] {
                    let va = start + off;
                    prop_assert_eq!(pt.translate(&m, asid, va), Some((Pfn(pfn + (off >> 12)), size)));
                    let e = pt.leaf_entry_addr(&m, asid, va).unwrap();
                    prop_assert_eq!(x86_radix::frame(m.read_u64(e)), Pfn(pfn));
                }
            }
            let s = pt.stats();
            prop_assert_eq!(s.mappings_4k + s.mappings_2m + s.mappings_1g, reference.len() as u64);
            let nodes = s.nodes_l5 + s.nodes_l4 + s.nodes_l3 + s.nodes_l2 + s.nodes_l1;
            prop_assert_eq!(nodes, m.table_frames());
        }
    }
}
