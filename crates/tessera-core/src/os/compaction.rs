//! Direct compaction: the faulting thread moves movable 4 KiB pages out of a
//! 2 MiB block so that a THP fault finds the free block it asked for.
//!
//! ## What it models
//! Linux's direct compaction at page-fault time: when the page-size policy
//! wants a 2 MiB page and the allocator has no free naturally aligned 2 MiB
//! block, the OS picks a block whose used frames can all move, migrates them
//! to free frames elsewhere, and maps the 2 MiB page over the block it freed.
//! A frame that cannot move rules its block out: a retired frame, a
//! page-table node, a frame of a page larger than 4 KiB, and (unless
//! `movable_pins`) a frame pinned by pre-fragmentation.
//!
//! So compaction repairs fragmentation by movable memory and can do nothing
//! for a block with a retired frame in it: with retired pages, THP collapses
//! with or without it, which is the baseline GTSM is measured against.
//!
//! Moving one of the simulated process's pages: its leaf is cleared (its
//! accessed and dirty bits kept), its translations are shot down, its cache
//! lines dropped (dirty ones written back), and it is mapped at the new frame
//! with the bits it had. A frame pinned by pre-fragmentation stands, with
//! `movable_pins`, for another program's movable page: it moves to a new
//! frame with no shootdown in this process.
//!
//! ## Source
//! Linux `mm/compaction.c` (the migrate scanner and its cached position,
//! isolation of free pages, `defer_compaction` / `compaction_deferred`). The
//! GTSM paper (Du, Zhou, Childers, Mossé, Melhem, "Supporting Superpages in
//! Non-Contiguous Physical Memory", HPCA 2015, DOI 10.1109/HPCA.2015.7056035)
//! argues in §2 that compaction cannot rebuild superpages over retired frames;
//! this is the baseline that shows it.
//!
//! ## Choices where Linux and the paper leave room
//! - Scanners: Linux moves pages from blocks its migrate scanner finds at
//!   the bottom of a zone into free pages its free scanner takes from the
//!   top, so that what moved is never in a block compacted next. Here the
//!   two run the other way round, for the same reason: a moved page goes
//!   where the allocator puts any 4 KiB page (the lowest free frame with
//!   `buddy`), and the block is the first one at or below the migrate
//!   scanner's position, going down from the top of memory (wrapping once),
//!   with no frame that cannot move and enough free frames outside it for
//!   every page it holds plus the page-table nodes a mapping may need (one
//!   per level). After a success the scanner continues below the block, as
//!   Linux's cached migrate position does.
//! - The block's own free frames are taken out of the allocator first
//!   (Linux isolates free pages the same way), so every page moves out of it.
//! - 2 MiB requests only: a 1 GiB page is never compacted for.
//! - Cost, charged to the faulting access (direct compaction runs in the
//!   faulting thread): `migrate_cycles` per page moved (isolate, copy 4 KiB,
//!   unmap, remap; the default 8000 is about 2.7 µs at 3 GHz, the order of
//!   Linux's per-page migration cost for base pages), plus `os.shootdown_cycles`
//!   for each page of this process (one shootdown each, not batched).
//! - Deferral as Linux's: after a failure the next `2^shift - 1` attempts
//!   are skipped, `shift` growing by one per failure in a row up to
//!   `max_defer_shift` (Linux's `COMPACT_MAX_DEFER_SHIFT` is 6); a success
//!   sets it back to 0. `max_defer_shift = 0` never defers.
//!
//! ## Config
//! `os.compaction = { movable_pins = true, migrate_cycles = 8000,
//! max_defer_shift = 6 }`; without the table there is no compaction. It needs a
//! page-size policy that maps 2 MiB pages (`thp`), the `buddy` allocator and
//! no swap device: each is a config error naming its key.
//!
//! ## Stats
//! `os.compaction.attempts`, `os.compaction.successes`,
//! `os.compaction.failures`, `os.compaction.deferred`,
//! `os.compaction.blocks_scanned`, `os.compaction.pages_migrated`,
//! `os.compaction.pins_migrated`, `os.compaction.tlb_entries_shot_down`,
//! `os.compaction.lines_invalidated`, `os.compaction.dirty_lines_written_back`,
//! `os.compaction.cycles`.

use rustc_hash::FxHashSet;
use serde::{Deserialize, Serialize};

use crate::addr::{PageSize, Pfn, BASE_SHIFT};
use crate::cache::CacheHierarchy;
use crate::error::Result;
use crate::memsys::Shootdown;
use crate::pagetable::format::PageTableFormat;
use crate::pagetable::PageTable;
use crate::physmem::allocator::PageRequest;
use crate::physmem::PhysMem;

/// Frames per 2 MiB block.
const FRAMES_2M: u64 = 512;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompactionSpec {
    /// Frames pinned by pre-fragmentation are other programs' movable pages.
    #[serde(default = "d_true")]
    pub movable_pins: bool,
    /// Cycles to move one 4 KiB page.
    #[serde(default = "d_migrate")]
    pub migrate_cycles: u64,
    /// Largest deferral shift after failures in a row (0: never defer).
    #[serde(default = "d_defer")]
    pub max_defer_shift: u32,
}
fn d_true() -> bool {
    true
}
fn d_migrate() -> u64 {
    8000
}
fn d_defer() -> u32 {
    6
}
impl Default for CompactionSpec {
    fn default() -> Self {
        CompactionSpec { movable_pins: true, migrate_cycles: d_migrate(), max_defer_shift: d_defer() }
    }
}

crate::stat_group! {
    pub struct CompactionStats {
        attempts: "compactions", "compactions run for a 2 MiB page no free block could back",
        successes: "compactions", "compactions that freed a 2 MiB block",
        failures: "compactions", "compactions that found no block whose frames could all move",
        deferred: "faults", "2 MiB faults that skipped compaction after recent failures",
        blocks_scanned: "blocks", "2 MiB blocks with no retired or unmovable pinned frame whose frames were examined",
        pages_migrated: "pages", "pages of the simulated process moved out of a block",
        pins_migrated: "pages", "pinned frames (other programs' movable pages) moved out of a block",
        tlb_entries_shot_down: "entries", "TLB entries removed by the shootdowns of moved pages",
        lines_invalidated: "lines", "cache lines of moved pages dropped from the data caches",
        dirty_lines_written_back: "lines", "dirty cache lines of moved pages written back",
        cycles: "cycles", "cycles charged to faulting accesses for compaction",
    }
}

/// The OS's compaction state.
#[derive(Clone, Debug)]
pub struct Compaction {
    spec: CompactionSpec,
    shootdown_cycles: u64,
    /// Per 2 MiB block, frames that never move: retired ones, and pinned
    /// ones when pins are unmovable. Page-table nodes and large pages come
    /// and go, so a block's scan looks for them.
    stuck: Vec<u16>,
    /// Frames holding another program's movable page (with `movable_pins`).
    pins: FxHashSet<u64>,
    /// The migrate scanner's position (a block number; it moves down).
    next_block: u64,
    considered: u64,
    defer_shift: u32,
    /// A scan's frames to move: (frame, whether it is a pin).
    movers: Vec<(u64, bool)>,
    /// A scan's isolated free frames.
    isolated: Vec<u64>,
    stats: CompactionStats,
}

impl Compaction {
    /// Compaction over `mem` as built (fault map and pins in place).
    pub fn new(spec: &CompactionSpec, mem: &PhysMem, shootdown_cycles: u64) -> Compaction {
        let blocks = mem.capacity_frames() / FRAMES_2M;
        let mut stuck = vec![0u16; blocks as usize];
        let mut count = |pfn: u64| {
            if let Some(s) = stuck.get_mut((pfn / FRAMES_2M) as usize) {
                *s += 1;
            }
        };
        if let Some(map) = mem.retired_map() {
            map.iter().for_each(&mut count);
        }
        let mut pins = FxHashSet::default();
        if spec.movable_pins {
            pins.extend(mem.pins().iter().copied());
        } else {
            mem.pins().iter().copied().for_each(&mut count);
        }
        Compaction {
            spec: spec.clone(),
            shootdown_cycles,
            stuck,
            pins,
            next_block: blocks.saturating_sub(1),
            considered: 0,
            defer_shift: 0,
            movers: Vec::new(),
            isolated: Vec::new(),
            stats: CompactionStats::default(),
        }
    }

    /// Linux's `compaction_deferred`: whether this attempt is skipped.
    fn deferred(&mut self) -> bool {
        let limit = 1u64 << self.defer_shift;
        self.considered += 1;
        if self.considered >= limit {
            self.considered = limit;
            return false;
        }
        true
    }

    /// Free a 2 MiB block for `req` (a 2 MiB page) by moving what it holds,
    /// and place `req` there. None when compaction was deferred or found no
    /// block; `cycles` grows by what it charged.
    #[allow(clippy::too_many_arguments)]
    pub fn compact(
        &mut self,
        req: PageRequest,
        pt: &mut PageTable,
        mem: &mut PhysMem,
        caches: &mut CacheHierarchy,
        tlbs: &mut impl Shootdown,
        cycles: &mut u64,
    ) -> Result<Option<Pfn>> {
        if req.size != PageSize::Size2M {
            return Ok(None);
        }
        if self.deferred() {
            self.stats.deferred += 1;
            return Ok(None);
        }
        self.stats.attempts += 1;
        let blocks = self.stuck.len() as u64;
        let nodes = pt.levels() as u64;
        for i in 0..blocks {
            let b = (self.next_block + blocks - i) % blocks;
            if self.stuck[b as usize] != 0 {
                continue;
            }
            self.stats.blocks_scanned += 1;
            if !self.survey(b, mem) {
                continue;
            }
            let moving = self.movers.len() as u64;
            let free_here = FRAMES_2M - moving;
            if mem.free_frames() < free_here + moving + nodes || !self.isolate(b, mem) {
                continue;
            }
            *cycles += self.migrate(pt, mem, caches, tlbs)?;
            for &f in &self.isolated {
                mem.free(Pfn(f), 0);
            }
            self.next_block = (b + blocks - 1) % blocks;
            self.considered = 0;
            self.defer_shift = 0;
            self.stats.successes += 1;
            let pfn = mem.alloc_page(req, false)?;
            debug_assert_eq!(pfn, Some(Pfn(b * FRAMES_2M)), "the compacted block is the only free 2 MiB block");
            return Ok(pfn);
        }
        self.stats.failures += 1;
        self.considered = 0;
        self.defer_shift = (self.defer_shift + 1).min(self.spec.max_defer_shift);
        Ok(None)
    }

    /// Collect block `b`'s frames to move; false if one of its frames cannot.
    fn survey(&mut self, b: u64, mem: &PhysMem) -> bool {
        self.movers.clear();
        for f in b * FRAMES_2M..(b + 1) * FRAMES_2M {
            if mem.is_table_frame(Pfn(f)) {
                return false;
            }
            match mem.owner(Pfn(f)) {
                Some(page) if page.size != PageSize::Size4K => return false,
                Some(_) => self.movers.push((f, false)),
                None if self.pins.contains(&f) => self.movers.push((f, true)),
                None => {}
            }
        }
        true
    }

    /// Take block `b`'s free frames out of the allocator, so that nothing
    /// moved lands in it. False (and nothing taken) if a frame that is
    /// neither free nor a mover is found: a frame some other path holds.
    fn isolate(&mut self, b: u64, mem: &mut PhysMem) -> bool {
        self.isolated.clear();
        let mut movers = self.movers.iter().map(|m| m.0).peekable();
        for f in b * FRAMES_2M..(b + 1) * FRAMES_2M {
            if movers.peek() == Some(&f) {
                movers.next();
                continue;
            }
            if !mem.reserve_frame(Pfn(f)) {
                for &g in &self.isolated {
                    mem.free(Pfn(g), 0);
                }
                self.isolated.clear();
                return false;
            }
            self.isolated.push(f);
        }
        true
    }

    /// Move every surveyed frame to a new one; returns the cycles charged.
    fn migrate(&mut self, pt: &mut PageTable, mem: &mut PhysMem, caches: &mut CacheHierarchy, tlbs: &mut impl Shootdown) -> Result<u64> {
        let mut cycles = 0;
        for &(f, pin) in &self.movers {
            cycles += self.spec.migrate_cycles;
            if pin {
                let new = mem.alloc(0, "a moved page of another program")?;
                self.pins.remove(&f);
                self.pins.insert(new.0);
                self.stats.pins_migrated += 1;
                continue;
            }
            let page = mem.owner(Pfn(f)).expect("surveyed as a mapped page");
            let va = page.vpn << BASE_SHIFT;
            let leaf = pt.unmap(mem, page.asid, va).expect("a page in the reverse map is mapped");
            let format = pt.format();
            let (accessed, dirty) = (format.is_accessed(leaf.raw), format.is_dirty(leaf.raw));
            self.stats.tlb_entries_shot_down += tlbs.shoot_down(va, page.size, page.asid);
            let (lines, dirty_lines) = caches.invalidate_range(f << BASE_SHIFT, page.size.bytes());
            self.stats.lines_invalidated += lines;
            self.stats.dirty_lines_written_back += dirty_lines;
            // The old frame keeps its reverse-map entry until every page has
            // its new frame: freed now, it could be handed straight back.
            let new = mem.alloc_page(page, true)?.expect("required allocation");
            pt.map(mem, page.asid, va, page.size, new)?;
            if accessed || dirty {
                let l = pt.leaf(mem, page.asid, va).expect("just mapped");
                let format = pt.format();
                let raw = format.used(l.raw, true, dirty);
                mem.write_linked(l.slot, l.word, if accessed { raw } else { format.clear_accessed(raw) });
            }
            cycles += self.shootdown_cycles;
            self.stats.pages_migrated += 1;
        }
        for &(f, pin) in &self.movers {
            if pin {
                mem.free(Pfn(f), 0);
            } else {
                mem.free_page(Pfn(f));
            }
        }
        self.stats.cycles += cycles;
        Ok(cycles)
    }

    pub fn visit(&self, v: &mut dyn crate::stats::StatVisitor) {
        use crate::stats::StatGroup;
        self.stats.visit(v);
    }
}

#[cfg(test)]
mod tests;
