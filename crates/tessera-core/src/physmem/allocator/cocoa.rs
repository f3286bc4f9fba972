//! CoCoA, Mosaic's contiguity-conserving allocator: every 2 MiB frame holds
//! the pages of one application, and a 2 MiB virtual region an application
//! allocates en masse lands in one frame at the same offsets, ready to be
//! coalesced in place.
//!
//! ## What it models
//! Memory is a list of 2 MiB frames. A frame is *free*, *reserved* for one
//! application's 2 MiB virtual region (its pages go to the frame at their
//! offset in the region, so virtual and physical contiguity coincide),
//! *shared* (an application's base-page list: its free slots take any page
//! of that application), a *table* frame (page-table nodes, the runtime's
//! own pages), or *foreign* (holds data of no simulated application: frames
//! pre-fragmented by `physmem.fragmentation`, or pinned and retired frames).
//!
//! Placing a 4 KiB page (asid, vpn) of region `vpn / 512`:
//! 1. the region's reservation, if it has one: the page's offset in it;
//! 2. a new reservation from the free frame list, if the region is one the
//!    application allocated en masse (`reserve`);
//! 3. otherwise the application's base-page list: the first shared frame
//!    with a free slot; when there is none, a reservation of the
//!    application converted into a shared frame (`convert`) once no free
//!    frame is left, or a free frame made shared;
//! 4. otherwise nothing: the OS may compact (CAC, [`crate::os::cac`]:
//!    `evacuate` empties the frame with the fewest pages into other frames
//!    of the same owner) and ask again, and as a last resort takes
//!    `fallback_page`: a foreign frame's free slot, which then belongs to
//!    the application (the soft guarantee is broken for that frame's
//!    foreign data; counted). Failing that, memory is exhausted.
//!
//! A frame whose last page is freed returns to the free frame list.
//! ## Paper
//! Ausavarungnirun et al., "Mosaic: A GPU Memory Manager with
//! Application-Transparent Support for Multiple Page Sizes", MICRO 2017,
//! doi:10.1145/3123939.3123975, §4.2; the authors' released simulator
//! (`PMM` in `cuda-sim.cc`) for what the paper leaves open.
//! ## Choices where the paper is silent
//! - `reserve = "en_masse"` (default, the paper): a region is reserved when
//!   the application's allocations (heard before the run) cover all of it;
//!   its partial first and last regions use the base-page list.
//!   `"every_region"` (the released code): every region gets a reservation
//!   while free frames last, which keeps more contiguity and bloats more.
//! - `convert = "most_unused"` (the released code's choice) or
//!   `"least_unused"` (its comment's): which reservation becomes shared.
//! - `slots = "lifo"` (the code's free-slot stack) or `"lowest"`.
//! - Free frames are handed out lowest first (the code pops frame 0 first).
//! - Page-table nodes come from table frames (the runtime's base-page list),
//!   never from an application's frame; with no free frame left, a foreign
//!   frame becomes a table frame (table frames are never evacuated).
//! - A 2 MiB page takes a whole free frame. A 64 KiB page (a GPU base page,
//!   beyond the paper) takes 16 slots: at its offset in its region's
//!   reservation, else an aligned free run of a shared frame.
//! ## Config
//! `physmem.allocator = { kind = "cocoa", reserve = "en_masse", convert =
//! "most_unused", slots = "lifo" }`. GPU machine only; `physmem.capacity`
//! must be a multiple of 2 MiB.
//! ## Stats
//! Under `physmem.allocator.cocoa.`: gauges `frames_free`,
//! `frames_reserved`, `frames_shared`, `frames_table`, `frames_foreign`,
//! `app_pages`, `bloat_pages` (free slots of frames an application holds);
//! counters `reservations`, `conversions`, `guarantee_breaks`.

use rustc_hash::{FxHashMap, FxHashSet};
use serde::{Deserialize, Serialize};

use super::{AllocCtx, FrameAllocator, Move, PageRequest};
use crate::addr::{Asid, PageSize, Pfn};
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stats::StatVisitor;

/// Base pages in a frame.
pub const SLOTS: u64 = 512;

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reserve {
    /// Regions the application's allocations cover entirely (the paper).
    #[default]
    EnMasse,
    /// Every region while free frames last (the released code).
    EveryRegion,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Convert {
    #[default]
    MostUnused,
    LeastUnused,
}

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SlotOrder {
    #[default]
    Lifo,
    Lowest,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    #[serde(default)]
    pub reserve: Reserve,
    #[serde(default)]
    pub convert: Convert,
    #[serde(default)]
    pub slots: SlotOrder,
}

/// Who a frame's pages belong to.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Free,
    /// Reserved for `asid`'s 2 MiB virtual region `region`.
    Reserved { asid: Asid, region: u64 },
    /// `asid`'s base-page list.
    Shared { asid: Asid },
    /// Page-table nodes.
    Table,
    /// Data of no simulated application (pre-fragmentation, pins).
    Foreign,
}

#[derive(Clone, Debug)]
struct Frame {
    kind: Kind,
    used: [u64; 8],
    count: u16,
    /// Slots holding foreign data (pre-fragmentation, pins).
    foreign: [u64; 8],
    /// Free slots to hand out, for shared, table and foreign frames (top = next).
    slots: Vec<u16>,
}

impl Frame {
    fn empty() -> Frame {
        Frame { kind: Kind::Free, used: [0; 8], count: 0, foreign: [0; 8], slots: Vec::new() }
    }
    #[inline]
    fn is_used(&self, s: u64) -> bool {
        self.used[(s / 64) as usize] >> (s % 64) & 1 == 1
    }
    #[inline]
    fn set(&mut self, s: u64, on: bool) {
        let w = &mut self.used[(s / 64) as usize];
        if on {
            *w |= 1 << (s % 64);
            self.count += 1;
        } else {
            *w &= !(1 << (s % 64));
            self.count -= 1;
        }
    }
    fn foreign_pages(&self) -> u16 {
        self.foreign.iter().map(|w| w.count_ones() as u16).sum()
    }
    /// Fill `slots` with the free slots, lowest on top.
    fn open_slots(&mut self) {
        self.slots = (0..SLOTS as u16).rev().filter(|&s| !self.is_used(s as u64)).collect();
    }
}

#[derive(Clone, Debug, Default)]
struct App {
    /// Region -> reserved frame.
    reservations: FxHashMap<u64, u32>,
    /// Regions allocated en masse.
    en_masse: FxHashSet<u64>,
    /// Allocation ranges heard, [start, end) in bytes.
    ranges: Vec<(u64, u64)>,
    /// Regions whose reservation became shared: their pages use the list.
    converted: FxHashSet<u64>,
    /// Shared frames, in the order they joined the list.
    shared: Vec<u32>,
}

#[derive(Clone, Debug, Default)]
struct Counters {
    evacuations: u64,
    reservations: u64,
    conversions: u64,
    guarantee_breaks: u64,
}

#[derive(Clone, Debug)]
pub struct Cocoa {
    cfg: Config,
    frames: Vec<Frame>,
    /// Free frames, lowest on top.
    free: Vec<u32>,
    apps: FxHashMap<Asid, App>,
    /// Table frames with free slots.
    tables: Vec<u32>,
    /// Foreign frames with free slots no application holds yet.
    foreign: Vec<u32>,
    free_slots: u64,
    stats: Counters,
}

impl Mechanism for Cocoa {
    const NAME: &'static str = "cocoa";
    const SUMMARY: &'static str =
        "Mosaic's CoCoA: one application per 2 MiB frame, en-masse regions at the same offsets, per-application base-page lists";
    type Config = Config;
    type Ctx = AllocCtx;
    fn build(cfg: &Config, ctx: &AllocCtx) -> Result<Self> {
        if !ctx.capacity_frames.is_multiple_of(SLOTS) {
            return Err(Error::config(
                "physmem.capacity",
                format!("the cocoa allocator manages whole 2 MiB frames; {} KiB is not a multiple of 2 MiB", ctx.capacity_frames * 4),
            ));
        }
        let n = (ctx.capacity_frames / SLOTS) as u32;
        Ok(Cocoa {
            cfg: cfg.clone(),
            frames: vec![Frame::empty(); n as usize],
            free: (0..n).rev().collect(),
            apps: FxHashMap::default(),
            tables: Vec::new(),
            foreign: Vec::new(),
            free_slots: ctx.capacity_frames,
            stats: Counters::default(),
        })
    }
}

impl Cocoa {
    /// The frame of `pfn` and the slot in it.
    #[inline]
    fn split(pfn: u64) -> (u32, u64) {
        ((pfn / SLOTS) as u32, pfn % SLOTS)
    }

    /// What frame `f` holds (tests and the coalescer's checks).
    pub fn kind(&self, f: u32) -> Kind {
        self.frames[f as usize].kind
    }

    /// Take slot `s` of frame `f` (known free).
    fn take(&mut self, f: u32, s: u64) -> Pfn {
        self.frames[f as usize].set(s, true);
        self.free_slots -= 1;
        Pfn(f as u64 * SLOTS + s)
    }

    /// Take the next free slot of a frame that keeps a slot list.
    fn take_listed(&mut self, f: u32) -> Option<Pfn> {
        let s = self.frames[f as usize].slots.pop()?;
        Some(self.take(f, s as u64))
    }

    fn pop_free(&mut self) -> Option<u32> {
        self.free.pop()
    }

    /// A page of `asid` from its base-page list (steps 3-5 of the module docs).
    fn from_list(&mut self, asid: Asid) -> Option<Pfn> {
        loop {
            let app = self.apps.entry(asid).or_default();
            let Some(&f) = app.shared.first() else { break };
            if let Some(p) = self.take_listed(f) {
                return Some(p);
            }
            // Full: off the list (it comes back when a slot is freed).
            self.apps.get_mut(&asid).expect("just seen").shared.remove(0);
        }
        let f = match self.pop_free() {
            Some(f) => f,
            None => self.convert(asid)?,
        };
        self.share(f, asid)
    }

    /// Make frame `f` a shared frame of `asid` and take a slot of it.
    fn share(&mut self, f: u32, asid: Asid) -> Option<Pfn> {
        let frame = &mut self.frames[f as usize];
        frame.kind = Kind::Shared { asid };
        frame.open_slots();
        self.apps.entry(asid).or_default().shared.push(f);
        self.take_listed(f)
    }

    /// Free slots in frames other than `except` that take pages of `kind`'s owner.
    fn room_for(&self, kind: Kind, except: u32) -> u64 {
        let list: &[u32] = match kind {
            Kind::Foreign => &self.foreign,
            Kind::Shared { asid } => self.apps.get(&asid).map_or(&[], |a| &a.shared),
            _ => &[],
        };
        list.iter().filter(|&&f| f != except).map(|&f| self.frames[f as usize].slots.len() as u64).sum()
    }

    /// Turn one of `asid`'s reservations with a free slot into a shared
    /// frame (`convert` picks which); its frame.
    fn convert(&mut self, asid: Asid) -> Option<u32> {
        let app = self.apps.get(&asid)?;
        let unused = |f: u32| SLOTS - self.frames[f as usize].count as u64;
        let candidates = app.reservations.iter().filter(|&(_, &f)| unused(f) > 0);
        // Ties go to the lower frame, so the choice does not depend on hash order.
        let (&region, &f) = match self.cfg.convert {
            Convert::MostUnused => candidates.max_by_key(|&(_, &f)| (unused(f), std::cmp::Reverse(f)))?,
            Convert::LeastUnused => candidates.min_by_key(|&(_, &f)| (unused(f), f))?,
        };
        let app = self.apps.get_mut(&asid).expect("seen above");
        app.reservations.remove(&region);
        app.converted.insert(region);
        self.stats.conversions += 1;
        Some(f)
    }

    /// Return frame `f` to the free list if it holds nothing.
    fn release_if_empty(&mut self, f: u32) {
        let frame = &self.frames[f as usize];
        if frame.count != 0 {
            return;
        }
        match frame.kind {
            Kind::Reserved { asid, region } => {
                let app = self.apps.get_mut(&asid).expect("a reservation's application");
                app.reservations.remove(&region);
            }
            Kind::Shared { asid } => self.apps.get_mut(&asid).expect("a shared frame's application").shared.retain(|&g| g != f),
            Kind::Table => self.tables.retain(|&g| g != f),
            Kind::Foreign => self.foreign.retain(|&g| g != f),
            Kind::Free => return,
        }
        let frame = &mut self.frames[f as usize];
        frame.kind = Kind::Free;
        frame.slots = Vec::new();
        self.free.push(f);
        // Keep the lowest free frame on top.
        if self.free.len() > 1 && self.free[self.free.len() - 2] < f {
            self.free.sort_unstable_by(|a, b| b.cmp(a));
        }
    }

    /// An application's shared frame left holding only foreign data is foreign again.
    fn back_to_foreign(&mut self, f: u32) {
        let frame = &self.frames[f as usize];
        let Kind::Shared { asid } = frame.kind else { return };
        if frame.count == 0 || frame.count != frame.foreign_pages() {
            return;
        }
        self.apps.get_mut(&asid).expect("a shared frame's application").shared.retain(|&g| g != f);
        self.frames[f as usize].kind = Kind::Foreign;
        self.foreign.push(f);
    }

    /// Put slot `s` of frame `f` back on its list, in `slots` order.
    fn relist(&mut self, f: u32, s: u64) {
        let order = self.cfg.slots;
        let frame = &mut self.frames[f as usize];
        if matches!(frame.kind, Kind::Reserved { .. } | Kind::Free) {
            return;
        }
        frame.slots.push(s as u16);
        if order == SlotOrder::Lowest {
            frame.slots.sort_unstable_by(|a, b| b.cmp(a));
        }
        let listed = frame.slots.len() == 1;
        if listed {
            match frame.kind {
                Kind::Shared { asid } => self.apps.get_mut(&asid).expect("a shared frame's application").shared.push(f),
                Kind::Table => self.tables.push(f),
                Kind::Foreign => self.foreign.push(f),
                _ => {}
            }
        }
    }

    /// Free slots of frames an application holds (reserved or shared).
    pub fn bloat_pages(&self) -> u64 {
        self.frames
            .iter()
            .filter(|f| matches!(f.kind, Kind::Reserved { .. } | Kind::Shared { .. }))
            .map(|f| SLOTS - f.count as u64)
            .sum()
    }

    /// Pages of applications (used slots of their frames, foreign data excluded).
    pub fn app_pages(&self) -> u64 {
        self.frames
            .iter()
            .filter(|f| matches!(f.kind, Kind::Reserved { .. } | Kind::Shared { .. }))
            .map(|f| (f.count - f.foreign_pages()) as u64)
            .sum()
    }

    /// Move every page of frame `v` (foreign, or an application's shared
    /// frame) into the free slots of its owner's other frames, which the
    /// caller counted; `v` joins the free frame list.
    fn empty_frame(&mut self, v: u32, moves: &mut Vec<Move>) {
        let kind = self.frames[v as usize].kind;
        // Off its list while it empties, so no page moves into it.
        match kind {
            Kind::Foreign => self.foreign.retain(|&g| g != v),
            Kind::Shared { asid } => self.apps.get_mut(&asid).expect("a shared frame's application").shared.retain(|&g| g != v),
            _ => unreachable!("only foreign and shared frames are evacuated"),
        }
        for s in 0..SLOTS {
            if !self.frames[v as usize].is_used(s) {
                continue;
            }
            let foreign = self.frames[v as usize].foreign[(s / 64) as usize] >> (s % 64) & 1 == 1;
            let to = loop {
                let list: &mut Vec<u32> = match kind {
                    Kind::Foreign => &mut self.foreign,
                    Kind::Shared { asid } => &mut self.apps.get_mut(&asid).expect("checked above").shared,
                    _ => unreachable!(),
                };
                let f = *list.first().expect("room was counted");
                if let Some(p) = self.take_listed(f) {
                    break p;
                }
                match kind {
                    Kind::Foreign => self.foreign.remove(0),
                    Kind::Shared { asid } => self.apps.get_mut(&asid).expect("checked above").shared.remove(0),
                    _ => unreachable!(),
                };
            };
            if foreign {
                let (tf, ts) = Self::split(to.0);
                self.frames[tf as usize].foreign[(ts / 64) as usize] |= 1 << (ts % 64);
            }
            let from = v as u64 * SLOTS + s;
            let fr = &mut self.frames[v as usize];
            fr.set(s, false);
            fr.foreign[(s / 64) as usize] &= !(1 << (s % 64));
            self.free_slots += 1;
            moves.push(Move { from: Pfn(from), to, foreign });
        }
        let fr = &mut self.frames[v as usize];
        fr.slots = Vec::new();
        // An emptied frame: relisting it would be wrong, so release it directly.
        match kind {
            Kind::Foreign => self.foreign.push(v),
            Kind::Shared { asid } => self.apps.get_mut(&asid).expect("checked above").shared.push(v),
            _ => {}
        }
        self.release_if_empty(v);
        self.stats.evacuations += 1;
    }

    /// A 64 KiB page: 16 slots at its offset in its region's reservation (a
    /// new one when the region is allocated en masse), else the first
    /// aligned run of 16 free slots in the application's shared frames, or
    /// in a free frame made shared. None otherwise (the OS falls back to
    /// 4 KiB pages, which may convert and compact).
    fn alloc_chunk(&mut self, req: &PageRequest) -> Option<Pfn> {
        const CHUNK: u64 = 16;
        let (region, off) = (req.vpn / SLOTS, req.vpn % SLOTS);
        let take_run = |c: &mut Cocoa, f: u32, at: u64| {
            let frame = &mut c.frames[f as usize];
            frame.slots.retain(|&s| (s as u64) < at || (s as u64) >= at + CHUNK);
            for s in at..at + CHUNK {
                c.take(f, s);
            }
            Pfn(f as u64 * SLOTS + at)
        };
        let app = self.apps.entry(req.asid).or_default();
        let reserved = app.reservations.get(&region).copied();
        let wants_frame = !app.converted.contains(&region)
            && match self.cfg.reserve {
                Reserve::EnMasse => app.en_masse.contains(&region),
                Reserve::EveryRegion => true,
            };
        if let Some(f) = reserved {
            return Some(take_run(self, f, off));
        }
        if wants_frame {
            if let Some(f) = self.pop_free() {
                self.frames[f as usize].kind = Kind::Reserved { asid: req.asid, region };
                self.apps.get_mut(&req.asid).expect("entry made above").reservations.insert(region, f);
                self.stats.reservations += 1;
                return Some(take_run(self, f, off));
            }
        }
        let free_run = |fr: &Frame| (0..SLOTS / CHUNK).map(|c| c * CHUNK).find(|&at| (fr.used[(at / 64) as usize] >> (at % 64)) & 0xffff == 0);
        let shared = self.apps.get(&req.asid).map_or(&[][..], |a| &a.shared[..]);
        if let Some((f, at)) = shared.iter().find_map(|&f| free_run(&self.frames[f as usize]).map(|at| (f, at))) {
            return Some(take_run(self, f, at));
        }
        let f = self.pop_free()?;
        let frame = &mut self.frames[f as usize];
        frame.kind = Kind::Shared { asid: req.asid };
        frame.open_slots();
        self.apps.entry(req.asid).or_default().shared.push(f);
        Some(take_run(self, f, 0))
    }

    fn frames_of(&self, pick: impl Fn(&Kind) -> bool) -> u64 {
        self.frames.iter().filter(|f| pick(&f.kind)).count() as u64
    }
}

impl FrameAllocator for Cocoa {
    fn alloc(&mut self, order: u32) -> Option<Pfn> {
        match order {
            0 => {
                while let Some(&f) = self.tables.last() {
                    if let Some(p) = self.take_listed(f) {
                        return Some(p);
                    }
                    self.tables.pop();
                }
                // A free frame, or else a foreign frame's free slots: page
                // tables are the runtime's, never coalesced, and never moved.
                let f = match self.pop_free() {
                    Some(f) => f,
                    None => self.foreign.pop()?,
                };
                let frame = &mut self.frames[f as usize];
                frame.kind = Kind::Table;
                frame.open_slots();
                self.tables.push(f);
                self.take_listed(f)
            }
            9 => {
                let f = self.pop_free()?;
                self.frames[f as usize].kind = Kind::Table;
                for s in 0..SLOTS {
                    self.take(f, s);
                }
                Some(Pfn(f as u64 * SLOTS))
            }
            _ => None,
        }
    }

    fn free(&mut self, pfn: Pfn, order: u32) {
        let (f, s0) = Self::split(pfn.0);
        let n = 1u64 << order;
        for s in s0..s0 + n {
            debug_assert!(self.frames[f as usize].is_used(s), "freeing free frame {:#x}", f as u64 * SLOTS + s);
            let frame = &mut self.frames[f as usize];
            frame.set(s, false);
            frame.foreign[(s / 64) as usize] &= !(1 << (s % 64));
            self.free_slots += 1;
            if self.frames[f as usize].count != 0 {
                self.relist(f, s);
            }
        }
        self.release_if_empty(f);
        self.back_to_foreign(f);
    }

    fn free_frames(&self) -> u64 {
        self.free_slots
    }

    fn largest_free_order(&self) -> Option<u32> {
        if !self.free.is_empty() {
            Some(9)
        } else if self.free_slots > 0 {
            Some(0)
        } else {
            None
        }
    }

    /// A pinned or pre-fragmented frame: foreign data in its frame.
    fn reserve(&mut self, pfn: Pfn) -> bool {
        if pfn.0 >= self.frames.len() as u64 * SLOTS {
            return false;
        }
        let (f, s) = Self::split(pfn.0);
        let frame = &mut self.frames[f as usize];
        match frame.kind {
            Kind::Free => {
                self.free.retain(|&g| g != f);
                let frame = &mut self.frames[f as usize];
                frame.kind = Kind::Foreign;
                frame.open_slots();
                self.foreign.push(f);
            }
            Kind::Foreign if !frame.is_used(s) => {}
            _ => return false,
        }
        let frame = &mut self.frames[f as usize];
        frame.slots.retain(|&x| x as u64 != s);
        frame.foreign[(s / 64) as usize] |= 1 << (s % 64);
        self.take(f, s);
        if self.frames[f as usize].slots.is_empty() {
            self.foreign.retain(|&g| g != f);
        }
        true
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        let mut free_slots = 0;
        let mut on_free = vec![0u8; self.frames.len()];
        for &f in &self.free {
            on_free[f as usize] += 1;
        }
        if self.free.windows(2).any(|w| w[0] < w[1]) {
            return Err("the free frame list is not lowest-on-top".into());
        }
        for (i, fr) in self.frames.iter().enumerate() {
            let count: u32 = fr.used.iter().map(|w| w.count_ones()).sum();
            if count != fr.count as u32 {
                return Err(format!("frame {i}: count {} but {count} slots used", fr.count));
            }
            free_slots += SLOTS - count as u64;
            let free = fr.kind == Kind::Free;
            if free != (on_free[i] == 1) || on_free[i] > 1 {
                return Err(format!("frame {i} ({:?}) is on the free list {} times", fr.kind, on_free[i]));
            }
            if free && fr.count != 0 {
                return Err(format!("free frame {i} holds {} pages", fr.count));
            }
            if !free && fr.count == 0 {
                return Err(format!("frame {i} ({:?}) holds nothing but is not free", fr.kind));
            }
            match fr.kind {
                Kind::Reserved { asid, region } => {
                    if self.apps.get(&asid).and_then(|a| a.reservations.get(&region)) != Some(&(i as u32)) {
                        return Err(format!("frame {i} is reserved for region {region} of {asid}, which does not name it"));
                    }
                }
                Kind::Shared { .. } | Kind::Table | Kind::Foreign => {
                    let mut listed: Vec<u16> = fr.slots.clone();
                    listed.sort_unstable();
                    let open: Vec<u16> = (0..SLOTS as u16).filter(|&s| !fr.is_used(s as u64)).collect();
                    if listed != open {
                        return Err(format!("frame {i} ({:?}): its slot list is not its free slots", fr.kind));
                    }
                }
                Kind::Free => {}
            }
            if fr.foreign.iter().zip(&fr.used).any(|(f, u)| f & !u != 0) {
                return Err(format!("frame {i}: foreign data in a free slot"));
            }
        }
        if free_slots != self.free_slots {
            return Err(format!("free slots {} counted, {free_slots} found", self.free_slots));
        }
        for (asid, app) in &self.apps {
            for (&region, &f) in &app.reservations {
                if self.frames[f as usize].kind != (Kind::Reserved { asid: *asid, region }) {
                    return Err(format!("reservation of region {region} of {asid} names frame {f}, which is {:?}", self.frames[f as usize].kind));
                }
            }
            for &f in &app.shared {
                if self.frames[f as usize].kind != (Kind::Shared { asid: *asid }) {
                    return Err(format!("shared list of {asid} names frame {f}, which is {:?}", self.frames[f as usize].kind));
                }
            }
        }
        Ok(())
    }

    fn alloc_page(&mut self, req: &PageRequest) -> Option<Pfn> {
        if req.size == PageSize::Size64K {
            return self.alloc_chunk(req);
        }
        if req.size != PageSize::Size4K {
            // A large page takes a whole free frame, as a reservation of its region.
            if req.size != PageSize::Size2M {
                return None;
            }
            let f = self.pop_free()?;
            let region = req.vpn / SLOTS;
            self.frames[f as usize].kind = Kind::Reserved { asid: req.asid, region };
            self.apps.entry(req.asid).or_default().reservations.insert(region, f);
            self.stats.reservations += 1;
            for s in 0..SLOTS {
                self.take(f, s);
            }
            return Some(Pfn(f as u64 * SLOTS));
        }
        let (region, off) = (req.vpn / SLOTS, req.vpn % SLOTS);
        let reserve = self.cfg.reserve;
        let app = self.apps.entry(req.asid).or_default();
        if let Some(&f) = app.reservations.get(&region) {
            debug_assert!(!self.frames[f as usize].is_used(off), "page {:#x} of {} placed twice", req.vpn, req.asid);
            return Some(self.take(f, off));
        }
        let wants_frame = !app.converted.contains(&region)
            && match reserve {
                Reserve::EnMasse => app.en_masse.contains(&region),
                Reserve::EveryRegion => true,
            };
        if wants_frame {
            if let Some(f) = self.pop_free() {
                self.frames[f as usize].kind = Kind::Reserved { asid: req.asid, region };
                self.apps.get_mut(&req.asid).expect("entry made above").reservations.insert(region, f);
                self.stats.reservations += 1;
                return Some(self.take(f, off));
            }
        }
        self.from_list(req.asid)
    }

    /// The soft guarantee broken: a free slot of a foreign frame, which
    /// becomes the application's (step 4 of the module docs).
    fn fallback_page(&mut self, req: &PageRequest) -> Option<Pfn> {
        if req.size != PageSize::Size4K {
            return None;
        }
        let f = *self.foreign.last()?;
        self.foreign.pop();
        self.stats.guarantee_breaks += 1;
        self.share(f, req.asid)
    }

    /// Empty the frame with the fewest pages whose pages fit in the free
    /// slots of other frames of the same owner (foreign data into foreign
    /// frames, an application's shared frame into its other shared frames;
    /// reserved and table frames stay), lowest frame on ties; it joins the
    /// free frame list. The moves, in slot order.
    fn evacuate(&mut self, moves: &mut Vec<Move>) -> bool {
        moves.clear();
        let mut best: Option<(u16, u32)> = None;
        for (i, fr) in self.frames.iter().enumerate() {
            if !matches!(fr.kind, Kind::Foreign | Kind::Shared { .. }) || best.is_some_and(|(c, _)| fr.count >= c) {
                continue;
            }
            if self.room_for(fr.kind, i as u32) >= fr.count as u64 {
                best = Some((fr.count, i as u32));
            }
        }
        let Some((_, v)) = best else { return false };
        self.empty_frame(v, moves);
        true
    }

    /// CAC at deallocation: empty frame `pfn / 512`, an application's
    /// reservation (splintered by the caller) or shared frame, into the
    /// application's other shared frames. A reservation first becomes
    /// shared: its region's later pages use the base-page list. False when
    /// they have no room: the frame then stays, its free slots on the
    /// application's list. The moves, in slot order.
    fn evacuate_frame(&mut self, pfn: Pfn, moves: &mut Vec<Move>) -> bool {
        moves.clear();
        let (v, _) = Self::split(pfn.0);
        let asid = match self.frames[v as usize].kind {
            Kind::Reserved { asid, region } => {
                let app = self.apps.get_mut(&asid).expect("a reservation's application");
                app.reservations.remove(&region);
                app.converted.insert(region);
                let frame = &mut self.frames[v as usize];
                frame.kind = Kind::Shared { asid };
                frame.open_slots();
                asid
            }
            Kind::Shared { asid } => asid,
            _ => return false,
        };
        if self.room_for(Kind::Shared { asid }, v) < self.frames[v as usize].count as u64 {
            let listed = self.apps.get(&asid).is_some_and(|a| a.shared.contains(&v));
            if !listed && !self.frames[v as usize].slots.is_empty() {
                self.apps.get_mut(&asid).expect("seen above").shared.push(v);
            }
            return false;
        }
        self.empty_frame(v, moves);
        true
    }

    fn hear_allocation(&mut self, asid: Asid, va: u64, bytes: u64) {
        let app = self.apps.entry(asid).or_default();
        app.ranges.push((va, va + bytes));
        app.ranges.sort_unstable();
        // Merge touching ranges, then take the 2 MiB regions each covers entirely.
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for &(s, e) in &app.ranges {
            match merged.last_mut() {
                Some(last) if s <= last.1 => last.1 = last.1.max(e),
                _ => merged.push((s, e)),
            }
        }
        let region = SLOTS << 12;
        app.en_masse.clear();
        for (s, e) in merged {
            for r in s.div_ceil(region)..e / region {
                app.en_masse.insert(r);
            }
        }
    }

    fn needs_allocations(&self) -> bool {
        true
    }

    fn can_evacuate(&self) -> bool {
        true
    }

    fn table_headroom(&self, _req: &PageRequest) -> u64 {
        let table_slots: u64 = self.tables.iter().map(|&f| self.frames[f as usize].slots.len() as u64).sum();
        // A page may take a whole free frame (a reservation, or a 2 MiB page).
        (table_slots + self.free.len() as u64 * SLOTS).saturating_sub(if self.free.is_empty() { 0 } else { SLOTS })
    }

    fn table_frame_name(&self) -> &'static str {
        "page-table node (a table frame of the cocoa allocator)"
    }

    fn visit_stats(&self, v: &mut dyn StatVisitor) {
        v.gauge("frames_free", self.free.len() as u64, "frames", "2 MiB frames on the free frame list");
        v.gauge("frames_reserved", self.frames_of(|k| matches!(k, Kind::Reserved { .. })), "frames", "2 MiB frames reserved for one application's virtual region");
        v.gauge("frames_shared", self.frames_of(|k| matches!(k, Kind::Shared { .. })), "frames", "2 MiB frames on an application's base-page list");
        v.gauge("frames_table", self.frames_of(|k| *k == Kind::Table), "frames", "2 MiB frames holding page-table nodes");
        v.gauge("frames_foreign", self.frames_of(|k| *k == Kind::Foreign), "frames", "2 MiB frames of pre-fragmented or pinned data no application holds");
        v.gauge("app_pages", self.app_pages(), "pages", "4 KiB pages of applications in their frames");
        v.gauge("bloat_pages", self.bloat_pages(), "pages", "free 4 KiB slots of frames an application holds (memory bloat)");
        v.counter("reservations", self.stats.reservations, "frames", "frames reserved for a 2 MiB virtual region");
        v.counter("conversions", self.stats.conversions, "frames", "reservations turned into shared frames for lack of free frames");
        v.counter("evacuations", self.stats.evacuations, "frames", "frames emptied by compaction (their pages moved to frames of the same owner)");
        v.counter("guarantee_breaks", self.stats.guarantee_breaks, "frames", "foreign frames an application took for lack of any other (soft guarantee broken)");
    }
}

#[cfg(test)]
mod tests;
