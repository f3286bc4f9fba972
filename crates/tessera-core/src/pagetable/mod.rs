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

pub mod coalesce;
pub mod format;
pub mod gt_pde;
pub mod gt_table;
pub mod mosaic_toc;
pub mod radix;
pub mod x86_radix;

use crate::addr::{Asid, PageSize, Pfn};
use crate::error::{Error, Result};
use crate::physmem::PhysMem;
use crate::registry::{AnyFormat, FormatVisitor};
use crate::stats::StatVisitor;
use format::{FormatExt, PageTableFormat, Step};

/// Most levels any format has, plus one (levels are numbered from 1).
const LEVEL_SLOTS: usize = radix::MAX_LEVELS + 1;

const NODE_NAMES: [&str; LEVEL_SLOTS] = ["", "nodes_l1", "nodes_l2", "nodes_l3", "nodes_l4", "nodes_l5", "nodes_l6"];
const NODE_DESCS: [&str; LEVEL_SLOTS] = [
    "",
    "page-table (PT) nodes",
    "page-directory nodes",
    "PDPT nodes",
    "PML4 nodes",
    "PML5 nodes (one per address space in 5-level tables)",
    "level-6 nodes",
];
const MAPPING_NAMES: [&str; PageSize::COUNT] = ["mappings_4k", "mappings_64k", "mappings_2m", "mappings_1g"];
const MAPPING_DESCS: [&str; PageSize::COUNT] = [
    "4 KiB leaf entries in the tables",
    "64 KiB leaf entries in the tables",
    "2 MiB leaf entries in the tables",
    "1 GiB leaf entries in the tables",
];

/// Per-address-space page tables of one format, living in simulated physical memory.
#[derive(Clone, Debug)]
pub struct PageTable {
    format: AnyFormat,
    levels: u32,
    /// Root node per ASID, grown on demand.
    roots: Vec<Option<Pfn>>,
    /// Roots with their host storage slots (see [`PhysMem::entry_link`]).
    root_slots: Vec<Option<(Pfn, u32)>>,
    /// Nodes per level, index 1..=levels.
    nodes: [u64; LEVEL_SLOTS],
    /// Leaf entries per page size (`PageSize::index`).
    mappings: [u64; PageSize::COUNT],
    /// Leaves written by [`PageTable::map_words`] (GT-PDEs).
    wide_leaves: u64,
}

/// A present leaf found by a software walk: where its first word is and what it maps.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LeafRef {
    /// Host slot of the node's frame holding the entry, and the entry's
    /// first word index in that frame.
    pub slot: u32,
    pub word: u64,
    /// Host slot of the node's first frame (`slot` but in a node of several
    /// frames), as a walk reports it.
    pub node: u32,
    /// Physical address of the entry (what a walk reference reads).
    pub addr: u64,
    /// The entry's first word.
    pub raw: u64,
    /// Level of the node holding the entry (1 for the 4 KiB entries of a
    /// large page that keeps its node).
    pub level: u32,
    /// The mapped page: its size and first frame.
    pub size: PageSize,
    pub pfn_base: u64,
    /// The large entry above `slot`/`word` when the page keeps its node
    /// (slot, word), which is what mapping and unmapping write.
    pub large: Option<(u32, u64)>,
}

impl PageTable {
    /// Tables of `format` (its depth is the format's).
    pub fn new(format: AnyFormat) -> Self {
        let levels = format.levels();
        PageTable {
            format,
            levels,
            roots: Vec::new(),
            root_slots: Vec::new(),
            nodes: [0; LEVEL_SLOTS],
            mappings: [0; PageSize::COUNT],
            wide_leaves: 0,
        }
    }

    /// x86-64 radix tables of 4 or 5 levels.
    pub fn x86(levels: u32) -> Result<Self> {
        use crate::registry::Mechanism;
        let f = x86_radix::X86Radix::build(&Default::default(), &x86_radix::FormatCtx { levels: Some(levels), ..Default::default() })?;
        Ok(PageTable::new(AnyFormat::X86Radix(f)))
    }

    pub fn levels(&self) -> u32 {
        self.levels
    }

    pub fn format(&self) -> &AnyFormat {
        &self.format
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
    /// Runs on the concrete format (one dispatch per mapping, not per level).
    pub fn map(&mut self, mem: &mut PhysMem, asid: Asid, va: u64, size: PageSize, pfn: Pfn) -> Result<()> {
        let (_, root_slot) = self.root_linked(mem, asid)?;
        let PageTable { format, nodes, mappings, levels, .. } = self;
        let name = format.name();
        format.visit(Map { mem, nodes, mappings, levels: *levels, root_slot, asid, va, size, pfn, name })
    }

    /// [`Self::map`] with the entries of `format` instead of this table's
    /// own (for tests of format contracts with formats made for them).
    #[cfg(test)]
    pub(crate) fn map_as<F: PageTableFormat + crate::registry::Member<AnyFormat>>(&mut self, format: &F, mem: &mut PhysMem, asid: Asid, va: u64, size: PageSize, pfn: Pfn) -> Result<()> {
        let (_, root_slot) = self.root_linked(mem, asid)?;
        let PageTable { nodes, mappings, levels, .. } = self;
        Map { mem, nodes, mappings, levels: *levels, root_slot, asid, va, size, pfn, name: "test" }.visit(format)
    }

    /// Map or unmap one page in the level-1 entry at word `w` of the node in
    /// `slot`, for a format whose level-1 entries group pages.
    fn write_page(&self, mem: &mut PhysMem, slot: u32, w: u64, va: u64, asid: Asid, pfn: Option<Pfn>) -> Result<()> {
        write_page(&self.format, mem, slot, w, va, asid, pfn)
    }

    /// Remove the mapping of the page containing `va`: its leaf entry is
    /// cleared (and the node a large page kept is freed). Returns what was
    /// mapped, or None. Intermediate nodes stay, as Linux keeps page-table
    /// pages of a live address space.
    pub fn unmap(&mut self, mem: &mut PhysMem, asid: Asid, va: u64) -> Option<LeafRef> {
        let leaf = self.leaf(mem, asid, va)?;
        match leaf.large {
            Some((slot, word)) => {
                let node = mem.table_frame_of(leaf.slot);
                mem.write_table_entry(slot, word, 0, 0);
                mem.free(node, 0);
                self.nodes[leaf.level as usize] -= 1;
            }
            None if self.format.groups_pages() => {
                // Unmapping only clears a code: it cannot fail.
                let _ = self.write_page(mem, leaf.slot, leaf.word, va, asid, None);
            }
            None => mem.write_table_entry(leaf.slot, leaf.word, 0, 0),
        }
        self.mappings[leaf.size.index()] -= 1;
        Some(leaf)
    }

    /// Software walk with no side effects to `va`'s leaf, following host links.
    /// `stop`: the level at which a node (rather than a leaf) ends the walk.
    #[inline]
    fn walk(&self, mem: &PhysMem, asid: Asid, va: u64, stop: u32) -> Option<Walk> {
        let (_, mut node) = self.root_slots.get(asid as usize).copied().flatten()?;
        let mut level = self.levels;
        let mut next;
        loop {
            let (slot, w) = self.format.locate(level, node, self.format.word(va, level));
            let raw = mem.read_entry(slot, w);
            match self.format.decode(raw, level, va, asid, &|k| mem.read_entry(slot, w + k as u64)) {
                Step::NotPresent => match self.format.padding_word(va, level) {
                    Some(pw) => {
                        let (ps, pw) = self.format.locate(level, node, pw);
                        match self.pointer_at(mem, ps, pw, va, asid, level) {
                            Some(child) if level != stop => {
                                next = child;
                                level -= 1;
                            }
                            Some(_) => return None,
                            None => return Some(Walk::Hole { level }),
                        }
                    }
                    None => return Some(Walk::Hole { level }),
                },
                Step::Leaf { pfn_base, size } => {
                    let addr = (mem.table_frame_of(slot).0 << 12) + w * 8;
                    return Some(Walk::Leaf(LeafRef { slot, word: w, node, addr, raw, level, size, pfn_base, large: None }));
                }
                Step::LargeViaNext { size, .. } => {
                    let child = mem.entry_link(slot, w);
                    let cw = self.format.word(va, level - 1);
                    let craw = mem.read_entry(child, cw);
                    let Step::Leaf { pfn_base: piece, .. } = self.format.decode(craw, level - 1, va, asid, &|_| 0) else {
                        return Some(Walk::Hole { level: level - 1 });
                    };
                    let pieces = self.format.level_frames(level) / self.format.level_frames(level - 1);
                    let within = (va >> self.format.level_shift(level - 1)) & (pieces - 1);
                    let pfn_base = piece - within * self.format.level_frames(level - 1);
                    let addr = (mem.table_frame_of(child).0 << 12) + cw * 8;
                    return Some(Walk::Leaf(LeafRef {
                        slot: child,
                        word: cw,
                        node: child,
                        addr,
                        raw: craw,
                        level: level - 1,
                        size,
                        pfn_base,
                        large: Some((slot, w)),
                    }));
                }
                Step::Next { .. } => {
                    if level == stop {
                        return None;
                    }
                    next = mem.entry_link(slot, w + self.format.table_word(va, level) as u64);
                    level -= 1;
                }
            }
            node = next;
        }
    }

    /// The host slot of the node that the entry at word `w` of the node
    /// stored in `slot` points to, if it is a pointer (read as for `va`):
    /// what a walk takes from an entry it reads past padding.
    fn pointer_at(&self, mem: &PhysMem, slot: u32, w: u64, va: u64, asid: Asid, level: u32) -> Option<u32> {
        let raw = mem.read_entry(slot, w);
        match self.format.decode(raw, level, va, asid, &|k| mem.read_entry(slot, w + k as u64)) {
            Step::Next { .. } => Some(mem.entry_link(slot, w + self.format.table_word(va, level) as u64)),
            _ => None,
        }
    }

    /// Write `words` as the entry for `va` at `level` (a leaf of several
    /// words, such as a GT-PDE), building the nodes above as [`Self::map`]
    /// does. The entry must be empty ([`Self::entry_free`]). Counted in
    /// `pagetable.mappings_gt`.
    pub fn map_words(&mut self, mem: &mut PhysMem, asid: Asid, va: u64, level: u32, words: &[u64]) -> Result<()> {
        let (_, root_slot) = self.root_linked(mem, asid)?;
        let PageTable { format, nodes, levels, .. } = self;
        debug_assert_eq!(words.len(), format.level_entry_words(level) as usize);
        let Some(node) = format.visit(Descend { mem: &mut *mem, nodes, levels: *levels, root_slot, asid, va, target: level })? else {
            return Ok(());
        };
        let (slot, w) = format.locate(level, node, format.word(va, level));
        for (k, &word) in words.iter().enumerate() {
            debug_assert_eq!(mem.read_entry(slot, w + k as u64), 0, "mapping {va:#x} over an existing entry");
            mem.write_table_entry(slot, w + k as u64, word, 0);
        }
        self.wide_leaves += 1;
        Ok(())
    }

    /// True when `va`'s entry at `level` is empty (every word zero, or no
    /// node there yet) and no padded pointer entry covers it
    /// ([`PageTableFormat::padding_word`]): an entry [`Self::map_words`]
    /// may write.
    pub fn entry_free(&self, mem: &PhysMem, asid: Asid, va: u64, level: u32) -> bool {
        let Some((_, mut node)) = self.root_slots.get(asid as usize).copied().flatten() else { return true };
        let format = &self.format;
        for l in (level + 1..=self.levels).rev() {
            let (slot, w) = format.locate(l, node, format.word(va, l));
            let raw = mem.read_entry(slot, w);
            match format.decode(raw, l, va, asid, &|k| mem.read_entry(slot, w + k as u64)) {
                Step::Next { .. } => node = mem.entry_link(slot, w + format.table_word(va, l) as u64),
                Step::NotPresent => return true,
                Step::Leaf { .. } | Step::LargeViaNext { .. } => return false,
            }
        }
        let (slot, w) = format.locate(level, node, format.word(va, level));
        let empty = (0..format.level_entry_words(level) as u64).all(|k| mem.read_entry(slot, w + k) == 0);
        let padded = format.padding_word(va, level).is_some_and(|pw| {
            let (ps, pw) = format.locate(level, node, pw);
            self.pointer_at(mem, ps, pw, va, asid, level).is_some()
        });
        empty && !padded
    }

    /// True when nothing is mapped in the `size`-aligned virtual region containing `va`:
    /// no larger leaf covers it and its entry at `size`'s level is not present.
    pub fn region_unmapped(&self, mem: &PhysMem, asid: Asid, va: u64, size: PageSize) -> bool {
        let Some(target) = self.format.leaf_level(size) else { return false };
        match self.walk(mem, asid, va, target) {
            Some(Walk::Hole { level }) => level >= target,
            // A leaf at or above the target level covers the region.
            Some(Walk::Leaf(_)) => false,
            // No table for this ASID, or a node (holding smaller pages) sits at the target level.
            None => self.root_of(asid).is_none(),
        }
    }

    /// The present leaf mapping `va`, if any.
    pub fn leaf(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<LeafRef> {
        match self.walk(mem, asid, va, 0)? {
            Walk::Leaf(l) => Some(l),
            Walk::Hole { .. } => None,
        }
    }

    /// Software walk with no side effects: the frame backing `va`'s 4 KiB page and the page size.
    pub fn translate(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<(Pfn, PageSize)> {
        let l = self.leaf(mem, asid, va)?;
        let within = (va >> 12) & ((1 << l.size.order()) - 1);
        Some((Pfn(l.pfn_base + within), l.size))
    }

    /// Physical address of the leaf entry that maps `va`, if mapped.
    pub fn leaf_entry_addr(&self, mem: &PhysMem, asid: Asid, va: u64) -> Option<u64> {
        self.leaf(mem, asid, va).map(|l| l.addr)
    }

    /// Leaf entries of pages of `size` in the tables.
    pub fn mappings(&self, size: PageSize) -> u64 {
        self.mappings[size.index()]
    }

    /// Nodes at `level`.
    pub fn nodes(&self, level: u32) -> u64 {
        self.nodes[level as usize]
    }

    /// Stats under `pagetable.*` (caller adds the prefix): nodes of every
    /// level (at least five, as x86 reports PML5 nodes of 4-level tables
    /// as 0) and mappings of every size the format maps.
    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let mut names: Vec<(&str, u64, &'static str, &'static str)> = Vec::new();
        for size in self.format.sizes() {
            let i = size.index();
            names.push((MAPPING_NAMES[i], self.mappings[i], "pages", MAPPING_DESCS[i]));
        }
        if matches!(self.format, AnyFormat::GtPde(_)) {
            names.push(("mappings_gt", self.wide_leaves, "entries", "GT-PDEs (and P-GT-PDEs) in the tables"));
        }
        for level in 1..=self.levels.max(5) as usize {
            names.push((NODE_NAMES[level], self.nodes[level], "nodes", NODE_DESCS[level]));
        }
        names.sort_by_key(|n| n.0);
        for (name, value, unit, desc) in names {
            v.gauge(name, value, unit, desc);
        }
    }
}

/// Where a software walk stopped.
enum Walk {
    Leaf(LeafRef),
    /// The entry at `level` is not present.
    Hole { level: u32 },
}

/// One mapping ([`PageTable::map`]), run on the concrete format.
struct Map<'a> {
    mem: &'a mut PhysMem,
    nodes: &'a mut [u64; LEVEL_SLOTS],
    mappings: &'a mut [u64; PageSize::COUNT],
    levels: u32,
    root_slot: u32,
    asid: Asid,
    va: u64,
    size: PageSize,
    pfn: Pfn,
    /// The format's registry name, for the error of a size it cannot map.
    name: &'static str,
}

impl FormatVisitor for Map<'_> {
    type Out = Result<()>;

    fn visit<F: PageTableFormat>(self, format: &F) -> Result<()> {
        let Map { mem, nodes, mappings, levels, root_slot, asid, va, size, pfn, name } = self;
        let Some(target) = format.leaf_level(size) else {
            return Err(Error::config(
                "physmem.page_size",
                format!("the {name} page-table format cannot map {} pages", size.name()),
            ));
        };
        // Follow the host links from node to node, as the walker does: no
        // frame-to-storage lookups on the first-touch path.
        let Some(slot) = descend(format, mem, nodes, levels, root_slot, asid, va, target)? else {
            return Ok(());
        };
        let (slot, w) = format.locate(target, slot, format.word(va, target));
        if format.groups_pages() {
            // A table of contents: this page's part of the entry changes, its group's stays.
            write_page(format, mem, slot, w, va, asid, Some(pfn))?;
            mappings[size.index()] += 1;
            return Ok(());
        }
        debug_assert!(
            format.decode(mem.read_entry(slot, w), target, va, asid, &|_| 0) == Step::NotPresent,
            "mapping {va:#x} over an existing entry"
        );
        if target > 1 && size >= PageSize::Size2M && format.large_keeps_node() {
            // The large entry points at a node whose leaves (4 or 64 KiB) map the pieces.
            let (node, node_slot) = new_node(format, mem, nodes, target - 1)?;
            let step = format.level_frames(target - 1);
            let piece_size = PageSize::from_shift(format.level_shift(target - 1)).expect("a large page's pieces are pages");
            for i in 0..format.level_frames(target) / step {
                let piece = format.encode_leaf(piece_size, Pfn(pfn.0 + i * step));
                mem.write_table_entry(node_slot, i * format.entry_words() as u64, piece, 0);
            }
            mem.write_table_entry(slot, w, format.encode_leaf(size, node), node_slot);
        } else {
            mem.write_table_entry(slot, w, format.encode_leaf(size, pfn), 0);
        }
        mappings[size.index()] += 1;
        Ok(())
    }
}

/// Follow (or build) the path for `va` from the root in `root_slot` down
/// to the node at `target`, as the walker does: host links from node to
/// node, no frame-to-storage lookups on the first-touch path. The host slot
/// of that node's first frame; None if a larger page covers `va` already
/// (a caller bug, caught in debug builds).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
fn descend<F: PageTableFormat>(
    format: &F,
    mem: &mut PhysMem,
    nodes: &mut [u64; LEVEL_SLOTS],
    levels: u32,
    root_slot: u32,
    asid: Asid,
    va: u64,
    target: u32,
) -> Result<Option<u32>> {
    let mut node = root_slot;
    for level in (target + 1..=levels).rev() {
        let (slot, w) = format.locate(level, node, format.word(va, level));
        let raw = mem.read_entry(slot, w);
        let mut tw = w + format.table_word(va, level) as u64;
        node = match format.decode(raw, level, va, asid, &|k| mem.read_entry(slot, w + k as u64)) {
            Step::Next { .. } => mem.entry_link(slot, tw),
            Step::NotPresent => {
                // A pointer covering several entries lives in the first of
                // them, unless that one holds something else already.
                let mut slot = slot;
                if let Some(pw) = format.padding_word(va, level) {
                    let (ps, pw) = format.locate(level, node, pw);
                    let praw = mem.read_entry(ps, pw);
                    match format.decode(praw, level, va, asid, &|k| mem.read_entry(ps, pw + k as u64)) {
                        Step::Next { .. } => {
                            node = mem.entry_link(ps, pw + format.table_word(va, level) as u64);
                            continue;
                        }
                        Step::NotPresent => {
                            slot = ps;
                            tw = pw + format.table_word(va, level) as u64;
                        }
                        _ => {}
                    }
                }
                let (_, child_slot) = new_node(format, mem, nodes, level - 1)?;
                let child = mem.table_frame_of(child_slot);
                mem.write_table_entry(slot, tw, format.encode_table(child, level), child_slot);
                child_slot
            }
            Step::Leaf { .. } | Step::LargeViaNext { .. } => {
                debug_assert!(false, "mapping {va:#x} inside an existing larger page");
                return Ok(None);
            }
        };
    }
    Ok(Some(node))
}

/// [`descend`] on the concrete format.
struct Descend<'a> {
    mem: &'a mut PhysMem,
    nodes: &'a mut [u64; LEVEL_SLOTS],
    levels: u32,
    root_slot: u32,
    asid: Asid,
    va: u64,
    target: u32,
}

impl FormatVisitor for Descend<'_> {
    type Out = Result<Option<u32>>;

    fn visit<F: PageTableFormat>(self, format: &F) -> Self::Out {
        descend(format, self.mem, self.nodes, self.levels, self.root_slot, self.asid, self.va, self.target)
    }
}

/// A new empty node at `level` (of the frames the format gives a node
/// there), counted in `nodes`; its frame and host slot.
fn new_node<F: PageTableFormat>(format: &F, mem: &mut PhysMem, nodes: &mut [u64; LEVEL_SLOTS], level: u32) -> Result<(Pfn, u32)> {
    let child = mem.alloc_table_node(format.node_order(level))?;
    nodes[level as usize] += 1;
    Ok((child, mem.table_slot(child.0)))
}

/// Map or unmap one page in the level-1 entry at word `w` of the node in
/// `slot`, for a format whose level-1 entries group pages.
fn write_page<F: PageTableFormat>(format: &F, mem: &mut PhysMem, slot: u32, w: u64, va: u64, asid: Asid, pfn: Option<Pfn>) -> Result<()> {
    let n = format.level_entry_words(1) as usize;
    let mut words = [0u64; format::MAX_ENTRY_WORDS as usize];
    for (k, word) in words[..n].iter_mut().enumerate() {
        *word = mem.read_entry(slot, w + k as u64);
    }
    debug_assert!(
        pfn.is_none() || format.decode(words[0], 1, va, asid, &|k| words[k as usize]) == Step::NotPresent,
        "mapping {va:#x} over an existing page"
    );
    let old = words;
    format.set_page(&mut words[..n], va, asid, pfn)?;
    for k in 0..n {
        if words[k] != old[k] {
            mem.write_table_entry(slot, w + k as u64, words[k], 0);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::x86_radix::{self, ACCESSED, DIRTY, PAGE_SIZE, USER, WRITABLE};
    use super::*;
    use crate::config::spec::{ByteSize, PhysMemSpec};
    use crate::physmem::allocator::FrameAllocator;
    use crate::error::Error;
    use crate::registry::MechanismSpec;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    struct Counts {
        nodes_l5: u64,
        nodes_l4: u64,
        nodes_l3: u64,
        nodes_l2: u64,
        nodes_l1: u64,
        mappings_4k: u64,
        mappings_2m: u64,
        mappings_1g: u64,
    }

    fn stats(pt: &PageTable) -> Counts {
        Counts {
            nodes_l5: pt.nodes(5),
            nodes_l4: pt.nodes(4),
            nodes_l3: pt.nodes(3),
            nodes_l2: pt.nodes(2),
            nodes_l1: pt.nodes(1),
            mappings_4k: pt.mappings(K4),
            mappings_2m: pt.mappings(M2),
            mappings_1g: pt.mappings(G1),
        }
    }

    const K4: PageSize = PageSize::Size4K;
    const M2: PageSize = PageSize::Size2M;
    const G1: PageSize = PageSize::Size1G;

    fn mem(capacity: u64) -> PhysMem {
        let spec = PhysMemSpec {
            capacity: ByteSize(capacity),
            allocator: MechanismSpec { kind: "buddy".into(), params: toml::Table::new() },
            page_size: MechanismSpec { kind: "base_only".into(), params: toml::Table::new() },
            fragmentation: 0.0,
            fragmentation_occupancy: None,
            retired: MechanismSpec { kind: "none".into(), params: toml::Table::new() },
        };
        PhysMem::build(&spec, 1).unwrap()
    }

    #[test]
    fn four_k_mapping_translates_and_builds_one_node_per_level() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::x86(4).unwrap();
        let data = m.alloc(0, "data").unwrap();
        let va = 0x7fff_1234_5000;
        assert!(pt.region_unmapped(&m, 0, va, K4));
        pt.map(&mut m, 0, va, K4, data).unwrap();
        assert_eq!(pt.translate(&m, 0, va + 0xabc), Some((data, K4)));
        assert_eq!(pt.translate(&m, 0, va + 0x1000), None);
        assert_eq!(pt.translate(&m, 1, va), None, "other ASID has no table");
        let s = stats(&pt);
        assert_eq!((s.nodes_l4, s.nodes_l3, s.nodes_l2, s.nodes_l1, s.nodes_l5), (1, 1, 1, 1, 0));
        assert_eq!(s.mappings_4k, 1);
        assert_eq!(m.table_frames(), 4);
    }

    #[test]
    fn entries_are_real_bits_in_table_frames() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::x86(4).unwrap();
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
        let mut pt = PageTable::x86(4).unwrap();
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
        let s = stats(&pt);
        assert_eq!((s.mappings_4k, s.mappings_2m, s.mappings_1g), (2, 1, 1));
        assert_eq!(s.nodes_l4, 2, "one root per ASID");
    }

    #[test]
    fn region_unmapped_sees_smaller_and_larger_mappings() {
        let mut m = mem(64 << 20);
        let mut pt = PageTable::x86(4).unwrap();
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
        let mut pt = PageTable::x86(5).unwrap();
        let va = (300u64 << 48) | (7 << 39) | 0x1000;
        pt.map(&mut m, 0, va, K4, Pfn(42)).unwrap();
        pt.map(&mut m, 0, va & ((1 << 48) - 1), K4, Pfn(43)).unwrap();
        assert_eq!(pt.translate(&m, 0, va), Some((Pfn(42), K4)));
        assert_eq!(pt.translate(&m, 0, va & ((1 << 48) - 1)), Some((Pfn(43), K4)), "bits 48..56 select another PML5 entry");
        let s = stats(&pt);
        assert_eq!((s.nodes_l5, s.nodes_l4, s.nodes_l3, s.nodes_l2, s.nodes_l1), (1, 2, 2, 2, 2));
        assert_eq!(pt.levels(), 5);
    }

    #[test]
    fn tiny_memory_runs_out_with_an_error_not_a_panic() {
        let mut m = mem(2 << 20);
        let mut pt = PageTable::x86(4).unwrap();
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
        PageTable::x86(4).unwrap().visit(&mut c);
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
        #![proptest_config(ProptestConfig::with_cases(32))]
        /// Pages placed through the reverse map, then unmapped and freed in
        /// random order: every translation goes, no frame is ever held by two
        /// pages, and every frame comes back to the allocator.
        #[test]
        fn map_unmap_free_round_trips_through_the_reverse_map(
            ops in prop::collection::vec((0u16..3, 0u64..64, any::<bool>(), 0u8..2), 1..120),
        ) {
            use crate::physmem::allocator::PageRequest;
            // Room for every page the ops can map at once (3 ASIDs × 64
            // regions of 2 MiB), so no case can run out of memory.
            let mut m = mem(512 << 20);
            let mut pt = PageTable::x86(4).unwrap();
            let free0 = m.free_frames();
            let mut live: BTreeMap<(Asid, u64), (Pfn, PageSize)> = BTreeMap::new();
            for (asid, page, unmap, s) in ops {
                let size = if s == 1 { M2 } else { K4 };
                let va = (page << 21) + if size == K4 { (page % 7) << 12 } else { 0 };
                let start = va & !(size.bytes() - 1);
                if unmap {
                    let was = live.iter().find(|(&(a, s0), &(_, sz))| a == asid && s0 <= va && va < s0 + sz.bytes()).map(|(k, v)| (*k, *v));
                    let got = pt.unmap(&mut m, asid, va);
                    prop_assert_eq!(got.is_some(), was.is_some());
                    if let (Some(l), Some((key, (pfn, sz)))) = (got, was) {
                        prop_assert_eq!((l.pfn_base, l.size), (pfn.0, sz));
                        let req = m.free_page(pfn).unwrap();
                        prop_assert_eq!((req.asid, req.vpn << 12, req.size), (asid, key.1, sz));
                        live.remove(&key);
                    }
                    prop_assert_eq!(pt.translate(&m, asid, va), None);
                } else if pt.region_unmapped(&m, asid, va, size) {
                    let req = PageRequest { asid, vpn: start >> 12, size };
                    let pfn = m.alloc_page(req, true).unwrap().unwrap();
                    pt.map(&mut m, asid, va, size, pfn).unwrap();
                    prop_assert_eq!(m.owner(pfn), Some(req));
                    live.insert((asid, start), (pfn, size));
                }
                // No frame is held by two live pages.
                let mut frames: Vec<(u64, u64)> = live.values().map(|(p, s)| (p.0, p.0 + (1 << s.order()))).collect();
                frames.sort();
                prop_assert!(frames.windows(2).all(|w| w[0].1 <= w[1].0));
                prop_assert_eq!(m.mapped_pages(), live.len());
            }
            for (&(asid, start), &(pfn, size)) in &live {
                prop_assert_eq!(pt.translate(&m, asid, start), Some((pfn, size)));
                pt.unmap(&mut m, asid, start).unwrap();
                m.free_page(pfn).unwrap();
            }
            prop_assert_eq!(m.free_frames() + m.table_frames(), free0);
            m.allocator().check_invariants().unwrap();
        }
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
            let mut pt = PageTable::x86(levels).unwrap();
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
            let s = stats(&pt);
            prop_assert_eq!(s.mappings_4k + s.mappings_2m + s.mappings_1g, reference.len() as u64);
            let nodes = s.nodes_l5 + s.nodes_l4 + s.nodes_l3 + s.nodes_l2 + s.nodes_l1;
            prop_assert_eq!(nodes, m.table_frames());
        }
    }
}
