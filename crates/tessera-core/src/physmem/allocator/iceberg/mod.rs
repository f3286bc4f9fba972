//! Iceberg frame allocation (Mosaic Pages): each 4 KiB page may live in only
//! h = f + d·b frames chosen by hashing its (asid, vpn), so its frame can be
//! named by a 7-bit CPFN.
//!
//! ## What it models
//! A pool of `buckets` buckets of 64 frames at the top of physical memory.
//! Bucket i is frames `begin + 64·i ..`: slots `0 .. f` are its front yard,
//! slots `f .. 64` its backyard, and each yard keeps a FIFO list of its free
//! slots (allocate from the head, free to the tail), as the Linux
//! prototype's per-bucket free lists. A page hashes to one front-yard bucket
//! and d backyard candidates ([`hash`]). Placing a 4 KiB data page:
//! 1. a free front-yard slot of its bucket, if any;
//! 2. with page ages (under memory pressure, from the eviction policy):
//!    the oldest *ghost* in that front yard, displaced (evicted) so the page
//!    takes its frame;
//! 3. the backyard candidate with the fewest pages (ghosts excluded or
//!    included, `ghost_occupancy`; ties go to the later or earlier choice,
//!    `tie`), if that count is below b: a free slot of it, or else (its
//!    frames are held by ghosts) its oldest ghost, displaced;
//! 4. otherwise, with page ages: (`include` only) the candidate with the
//!    fewest live pages that holds a ghost gives up its oldest ghost; then
//!    the oldest page among the f front-yard and d·b backyard slots is
//!    displaced, and evicting it raises the eviction horizon;
//! 5. otherwise the request is refused (`Full`).
//!
//! Pages never move once placed. Page-table nodes and pages larger than
//! 4 KiB come from a binary buddy allocator over the frames below the pool.
//! A placement that finds none of its h slots free is a *conflict*; the
//! load (pool frames in use / pool frames) at the first one is Table 3's
//! "first associativity conflict".
//! ## Paper
//! "Mosaic Pages: Big TLB Reach with Small Pages", ASPLOS 2023, DOI
//! 10.1145/3582016.3582021: §2.3 (Iceberg hashing, f = 56, b = 8, d = 6),
//! §2.4 (ghosts and the horizon), §3.2 (the Linux prototype: a 4 GiB pool
//! reserved at boot, the rest for the default allocator), §4.2, Table 3.
//! ## Choices where the paper is silent
//! - Pool size: `buckets` (or `pool` bytes); by default as many buckets as
//!   fit once 1/64 of memory (at least 256 KiB) is left below the pool for
//!   page-table nodes and pages larger than 4 KiB (enough for the page
//!   tables of a dense footprint of about 8× memory).
//! - Backyard choices are `partitioned` (each from its own sub-range of
//!   buckets, as the prototype) by default, or `uniform`.
//! - `ghost_occupancy = exclude` (default): ghosts do not count towards a
//!   backyard's occupancy, as §2.4 says; `include` counts them, as the
//!   prototype's first pass does.
//! - `tie = later` (default): among equally occupied candidates the later
//!   choice wins, as the prototype's `<=`; `earlier`: the first.
//! - The oldest page is the one with the smallest last use; equal ages go to
//!   the lower frame.
//! - Utilisation is sampled every `sample_every` placements; the steady
//!   state is the mean of the samples after the first conflict.
//! - A frame pinned by `physmem.fragmentation` inside the pool is a used
//!   slot that is never displaced.
//! ## Config
//! `kind = "iceberg"`, `front` (56), `back` (8; front + back = 64),
//! `choices` (6), `buckets` or `pool` (default: see above),
//! `choice = "partitioned" | "uniform"`, `tie = "later" | "earlier"`,
//! `ghost_occupancy = "exclude" | "include"`, `hash = "xxhash" | "tabulation"`,
//! `sample_every` (256).
//! ## Stats
//! Counters `physmem.allocator.iceberg.placements`, `.front_placements`,
//! `.back_placements`, `.conflicts`, `.ghost_displacements`,
//! `.live_displacements`, `.full`, `.outside_pool`, `.samples`,
//! `.sampled_used`, `.steady_samples`, `.steady_sampled_used`; gauges
//! `.first_conflict_used`, `.pool_frames`, `.buckets`, `.associativity`,
//! `.front_used`, `.back_used`; derived `.first_conflict_load`,
//! `.utilisation`, `.steady_utilisation`.

pub mod cpfn;
pub mod hash;
#[cfg(test)]
mod reference;
#[cfg(test)]
mod tests;

use serde::{Deserialize, Serialize};

use super::buddy::Buddy;
use super::{AllocCtx, FrameAllocator, PageAges, PageRequest, Placement};
use crate::addr::{Asid, PageSize, Pfn};
use crate::config::spec::ByteSize;
use crate::error::{Error, Result};
use crate::registry::Mechanism;
use crate::stat_group;
use hash::{ChoiceRule, IcebergHasher, BUCKET_FRAMES, MAX_CHOICES};

/// How backyard candidates are drawn.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// Choice j from sub-range j of the buckets (the Linux prototype).
    #[default]
    Partitioned,
    /// Every choice from all buckets.
    Uniform,
}

/// Which of equally occupied backyard candidates wins.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tie {
    /// The later choice (the prototype's `<=`).
    #[default]
    Later,
    Earlier,
}

/// Whether ghost pages count towards a backyard's occupancy.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GhostOccupancy {
    /// Ghosts count as free (the paper, §2.4).
    #[default]
    Exclude,
    /// Ghosts count as occupied until every candidate is full (the prototype).
    Include,
}

/// Which hash functions place pages.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HashKind {
    /// xxHash64 with the prototype's seeds.
    #[default]
    Xxhash,
    /// Simple tabulation with probing, tables from the run's seed.
    Tabulation,
}

/// `kind = "iceberg"` parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Front-yard slots per bucket (f).
    #[serde(default = "d_front")]
    pub front: u32,
    /// Backyard slots per bucket (b); front + back = 64.
    #[serde(default = "d_back")]
    pub back: u32,
    /// Backyard candidates per page (d).
    #[serde(default = "d_choices")]
    pub choices: u32,
    /// Buckets in the pool (64 frames each); default: as many as fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub buckets: Option<u64>,
    /// Size of the pool in bytes (a multiple of 256 KiB), instead of `buckets`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pool: Option<ByteSize>,
    #[serde(default)]
    pub choice: Choice,
    #[serde(default)]
    pub tie: Tie,
    #[serde(default)]
    pub ghost_occupancy: GhostOccupancy,
    #[serde(default)]
    pub hash: HashKind,
    /// Placements between two utilisation samples.
    #[serde(default = "d_sample_every")]
    pub sample_every: u64,
}
fn d_front() -> u32 {
    56
}
fn d_back() -> u32 {
    8
}
fn d_choices() -> u32 {
    6
}
fn d_sample_every() -> u64 {
    256
}
impl Default for Config {
    fn default() -> Self {
        Config {
            front: d_front(),
            back: d_back(),
            choices: d_choices(),
            buckets: None,
            pool: None,
            choice: Choice::default(),
            tie: Tie::default(),
            ghost_occupancy: GhostOccupancy::default(),
            hash: HashKind::default(),
            sample_every: d_sample_every(),
        }
    }
}

/// Bytes of one bucket.
const BUCKET_BYTES: u64 = BUCKET_FRAMES * crate::addr::BASE_PAGE;
/// Samples kept in the utilisation trace before it is thinned.
const TRACE_LEN: usize = 1024;

/// Frames left below the pool by default: 1/64 of memory, at least 256 KiB.
pub fn default_reserve(capacity_frames: u64) -> u64 {
    capacity_frames.div_ceil(64).max(BUCKET_FRAMES)
}

impl Config {
    /// Check the geometry against memory; the number of buckets.
    pub fn buckets_for(&self, capacity_frames: u64) -> Result<u64> {
        const P: &str = "physmem.allocator";
        if self.back == 0 || self.back > 8 {
            return Err(Error::config(format!("{P}.back"), format!("must be 1 to 8 (a CPFN names a backyard slot in 3 bits), not {}", self.back)));
        }
        if self.front + self.back != BUCKET_FRAMES as u32 {
            return Err(Error::config(
                format!("{P}.front"),
                format!("front + back must be 64 (a bucket is 64 frames), not {} + {}", self.front, self.back),
            ));
        }
        if self.choices == 0 || self.choices as usize > MAX_CHOICES {
            return Err(Error::config(format!("{P}.choices"), format!("must be 1 to 8 (a CPFN names a choice in 3 bits), not {}", self.choices)));
        }
        if self.choices * self.back >= 64 {
            return Err(Error::config(
                format!("{P}.choices"),
                format!(
                    "{} choices × {} backyard slots do not fit a 7-bit CPFN: the all-ones code 0x7F means unmapped, so choices × back must be below 64",
                    self.choices, self.back
                ),
            ));
        }
        if self.sample_every == 0 {
            return Err(Error::config(format!("{P}.sample_every"), "must be at least 1 placement"));
        }
        let (buckets, key) = match (self.buckets, self.pool) {
            (Some(_), Some(_)) => return Err(Error::config(format!("{P}.pool"), "give `buckets` or `pool`, not both")),
            (Some(n), None) => (n, "buckets"),
            (None, Some(bytes)) => {
                if bytes.0 == 0 || !bytes.0.is_multiple_of(BUCKET_BYTES) {
                    return Err(Error::config(
                        format!("{P}.pool"),
                        format!("{} bytes: must be a non-zero multiple of 256KiB (one bucket of 64 frames)", bytes.0),
                    ));
                }
                (bytes.0 / BUCKET_BYTES, "pool")
            }
            (None, None) => (capacity_frames.saturating_sub(default_reserve(capacity_frames)) / BUCKET_FRAMES, "buckets"),
        };
        if buckets == 0 {
            return Err(Error::config(format!("{P}.{key}"), "the pool needs at least one bucket (64 frames)"));
        }
        let frames = buckets.saturating_mul(BUCKET_FRAMES);
        if frames >= capacity_frames {
            return Err(Error::config(
                format!("{P}.{key}"),
                format!(
                    "a pool of {buckets} buckets ({frames} frames) {} memory ({capacity_frames} frames of physmem.capacity): page-table nodes need frames outside the pool",
                    if frames > capacity_frames { "is larger than" } else { "fills" }
                ),
            ));
        }
        Ok(buckets)
    }
}

stat_group! {
    /// Placement counters of the Iceberg allocator.
    pub struct IcebergStats {
        placements: "pages", "4 KiB data pages placed in the pool (on a free slot or by displacing a page)",
        front_placements: "pages", "pages placed in their front-yard bucket",
        back_placements: "pages", "pages placed in the backyard of one of their backyard choices",
        conflicts: "placements", "placements (or refusals) that found none of the page's h slots free",
        ghost_displacements: "pages", "placements that displaced a ghost page to take its frame",
        live_displacements: "pages", "placements that displaced the oldest live page among the page's h slots (raising the eviction horizon)",
        full: "requests", "pool requests refused: no free slot and no page ages to pick one to displace",
        outside_pool: "pages", "data pages larger than 4 KiB, placed below the pool by the buddy allocator",
        samples: "samples", "utilisation samples (one every sample_every placements)",
        sampled_used: "frames", "sum over the samples of the pool frames in use",
        steady_samples: "samples", "utilisation samples taken after the first conflict",
        steady_sampled_used: "frames", "sum over the samples after the first conflict of the pool frames in use",
        first_conflict_used: gauge "frames", "pool frames in use when the first conflict was met (0: none yet)",
        pool_frames: gauge "frames", "frames of the pool (buckets × 64)",
        buckets: gauge "buckets", "buckets of the pool",
        associativity: gauge "frames", "frames a page may use: h = front + choices × back",
        front_used: gauge "frames", "front-yard frames in use (a page, or pinned) at the end",
        back_used: gauge "frames", "backyard frames in use at the end",
    }
}

/// What page ages say of the used slots of one yard.
#[derive(Copy, Clone, Debug, Default)]
struct YardScan {
    ghosts: u32,
    /// (last use, frame) of the oldest ghost and of the oldest page.
    oldest_ghost: Option<(u64, u64)>,
    oldest: Option<(u64, u64)>,
}

/// Yards of a bucket.
const FRONT: usize = 0;
const BACK: usize = 1;

/// One bucket: which slots are free, and each yard's FIFO of free slots.
#[derive(Copy, Clone, Debug)]
struct Bucket {
    /// Bit s set: slot s is free.
    free: u64,
    /// The front yard's free slots in `ring[..f]`, the backyard's in `ring[f..]`, as circular FIFOs.
    ring: [u8; 64],
    head: [u8; 2],
    len: [u8; 2],
}

/// The Iceberg pool and the buddy allocator below it.
#[derive(Clone, Debug)]
pub struct Iceberg {
    hasher: IcebergHasher,
    f: u32,
    b: u32,
    d: u32,
    tie_later: bool,
    include_ghosts: bool,
    buckets: Vec<Bucket>,
    /// Frames `0 .. begin` (boxed: it is most of the allocator's size, and
    /// used only for page-table nodes and large pages).
    outer: Box<Buddy>,
    pool_free: u64,
    front_used: u64,
    back_used: u64,
    sample_every: u64,
    until_sample: u64,
    /// Pool frames in use at every `trace_stride`-th sample (at most `TRACE_LEN`).
    trace: Vec<u64>,
    trace_stride: u64,
    until_trace: u64,
    stats: IcebergStats,
}

impl Mechanism for Iceberg {
    const NAME: &'static str = "iceberg";
    const SUMMARY: &'static str = "Iceberg hashing (Mosaic Pages): a page may use h = f + d·b frames, named by a 7-bit CPFN";
    type Config = Config;
    type Ctx = AllocCtx;
    fn build(cfg: &Config, ctx: &AllocCtx) -> Result<Self> {
        let buckets = cfg.buckets_for(ctx.capacity_frames)?;
        let begin = ctx.capacity_frames - buckets * BUCKET_FRAMES;
        let rule = match cfg.choice {
            Choice::Partitioned => ChoiceRule::Partitioned,
            Choice::Uniform => ChoiceRule::Uniform,
        };
        let hasher = match cfg.hash {
            HashKind::Xxhash => IcebergHasher::xxhash(begin, buckets, cfg.front, cfg.back, cfg.choices, rule),
            HashKind::Tabulation => {
                let mut rng = crate::rng::component_rng(ctx.seed, "physmem.allocator.iceberg.tabulation");
                IcebergHasher::tabulation(begin, buckets, cfg.front, cfg.back, cfg.choices, rule, &mut rng)
            }
        };
        Ok(Iceberg::new(hasher, cfg))
    }
}

impl Iceberg {
    /// Every pool slot free, in slot order in each yard's FIFO.
    fn new(hasher: IcebergHasher, cfg: &Config) -> Self {
        let mut ring = [0u8; 64];
        for (i, r) in ring.iter_mut().enumerate() {
            *r = i as u8;
        }
        let (f, b) = (cfg.front, cfg.back);
        let bucket = Bucket { free: u64::MAX, ring, head: [0, 0], len: [f as u8, b as u8] };
        let n = hasher.buckets();
        Iceberg {
            f,
            b,
            d: cfg.choices,
            tie_later: cfg.tie == Tie::Later,
            include_ghosts: cfg.ghost_occupancy == GhostOccupancy::Include,
            buckets: vec![bucket; n as usize],
            outer: Box::new(Buddy::new(hasher.begin())),
            pool_free: n * BUCKET_FRAMES,
            front_used: 0,
            back_used: 0,
            sample_every: cfg.sample_every,
            until_sample: cfg.sample_every,
            trace: Vec::with_capacity(TRACE_LEN),
            trace_stride: 1,
            until_trace: 1,
            stats: IcebergStats { associativity: hasher.associativity() as u64, ..IcebergStats::default() },
            hasher,
        }
    }

    /// The pool's geometry and hash functions (to decode CPFNs).
    pub fn hasher(&self) -> &IcebergHasher {
        &self.hasher
    }

    /// The CPFN of the page (asid, vpn) placed at `pfn` ([`cpfn::UNMAPPED`]
    /// if `pfn` is not one of the page's slots).
    pub fn cpfn(&self, pfn: Pfn, asid: Asid, vpn: u64) -> u8 {
        self.hasher.slot_of(pfn, asid, vpn).map_or(cpfn::UNMAPPED, cpfn::encode)
    }

    pub fn pool_frames(&self) -> u64 {
        self.hasher.buckets() * BUCKET_FRAMES
    }

    /// Pool frames in use (by pages, ghosts included, or pinned).
    pub fn pool_used(&self) -> u64 {
        self.pool_frames() - self.pool_free
    }

    /// The counters, with the gauges filled in.
    pub fn stats(&self) -> IcebergStats {
        IcebergStats {
            pool_frames: self.pool_frames(),
            buckets: self.hasher.buckets(),
            front_used: self.front_used,
            back_used: self.back_used,
            ..self.stats.clone()
        }
    }

    /// Pool frames in use at evenly spaced samples over the run, and the
    /// placements between two of them (the trace is thinned to stay bounded).
    pub fn utilisation_trace(&self) -> (&[u64], u64) {
        (&self.trace, self.trace_stride * self.sample_every)
    }

    #[inline]
    fn cap(&self, yard: usize) -> u8 {
        if yard == FRONT {
            self.f as u8
        } else {
            self.b as u8
        }
    }

    #[inline]
    fn offset(&self, yard: usize) -> usize {
        if yard == FRONT {
            0
        } else {
            self.f as usize
        }
    }

    #[inline]
    fn yard_of(&self, slot: u32) -> usize {
        (slot >= self.f) as usize
    }

    #[inline]
    fn yard_mask(&self, yard: usize) -> u64 {
        let front = (1u64 << self.f) - 1;
        if yard == FRONT {
            front
        } else {
            !front
        }
    }

    #[inline]
    fn count_use(&mut self, yard: usize, delta: i64) {
        let c = if yard == FRONT { &mut self.front_used } else { &mut self.back_used };
        *c = c.wrapping_add_signed(delta);
        self.pool_free = self.pool_free.wrapping_add_signed(-delta);
    }

    /// Take the head of a yard's free FIFO; the frame.
    #[inline]
    fn pop(&mut self, bucket: u64, yard: usize) -> Pfn {
        let (cap, off) = (self.cap(yard), self.offset(yard));
        let bk = &mut self.buckets[bucket as usize];
        debug_assert!(bk.len[yard] > 0);
        let slot = bk.ring[off + bk.head[yard] as usize];
        bk.head[yard] = (bk.head[yard] + 1) % cap;
        bk.len[yard] -= 1;
        bk.free &= !(1u64 << slot);
        self.count_use(yard, 1);
        Pfn(self.hasher.bucket_base(bucket) + slot as u64)
    }

    /// Return a slot to the tail of its yard's FIFO.
    #[inline]
    fn push(&mut self, bucket: u64, slot: u32) {
        let yard = self.yard_of(slot);
        let (cap, off) = (self.cap(yard), self.offset(yard));
        let bk = &mut self.buckets[bucket as usize];
        debug_assert!(bk.free & (1 << slot) == 0, "slot {slot} of bucket {bucket} freed twice");
        let tail = (bk.head[yard] + bk.len[yard]) % cap;
        bk.ring[off + tail as usize] = slot as u8;
        bk.len[yard] += 1;
        bk.free |= 1 << slot;
        self.count_use(yard, -1);
    }

    /// Take one specific free slot out of its FIFO; false if it is not free.
    fn take(&mut self, pfn: u64) -> bool {
        let (bucket, slot) = self.locate(pfn);
        let yard = self.yard_of(slot);
        let (cap, off) = (self.cap(yard) as usize, self.offset(yard));
        let bk = &mut self.buckets[bucket as usize];
        if bk.free & (1 << slot) == 0 {
            return false;
        }
        let (head, len) = (bk.head[yard] as usize, bk.len[yard] as usize);
        let at = (0..len).find(|&k| bk.ring[off + (head + k) % cap] == slot as u8).expect("a free slot is in its FIFO");
        for k in at..len - 1 {
            bk.ring[off + (head + k) % cap] = bk.ring[off + (head + k + 1) % cap];
        }
        bk.len[yard] -= 1;
        bk.free &= !(1u64 << slot);
        self.count_use(yard, 1);
        true
    }

    /// Bucket and slot of a pool frame.
    #[inline]
    fn locate(&self, pfn: u64) -> (u64, u32) {
        let i = pfn - self.hasher.begin();
        (i / BUCKET_FRAMES, (i % BUCKET_FRAMES) as u32)
    }

    /// What `ages` says of the used slots of one yard of `bucket`, in one pass.
    fn scan_yard(&self, bucket: u64, yard: usize, ages: &dyn PageAges) -> YardScan {
        let base = self.hasher.bucket_base(bucket);
        let mut used = !self.buckets[bucket as usize].free & self.yard_mask(yard);
        let mut out = YardScan::default();
        while used != 0 {
            let page = base + used.trailing_zeros() as u64;
            used &= used - 1;
            if let Some((t, ghost)) = ages.age(page) {
                let key = Some((t, page));
                if out.oldest.is_none() || key < out.oldest {
                    out.oldest = key;
                }
                if ghost {
                    out.ghosts += 1;
                    if out.oldest_ghost.is_none() || key < out.oldest_ghost {
                        out.oldest_ghost = key;
                    }
                }
            }
        }
        out
    }

    /// Whether `a` beats the best so far `best` under the tie rule.
    #[inline]
    fn better(&self, a: u32, best: Option<u32>) -> bool {
        match best {
            None => true,
            Some(b) => a < b || (self.tie_later && a == b),
        }
    }

    /// Count a placement into `yard` and take a utilisation sample when due.
    #[inline]
    fn placed(&mut self, yard: usize) {
        self.stats.placements += 1;
        if yard == FRONT {
            self.stats.front_placements += 1;
        } else {
            self.stats.back_placements += 1;
        }
        self.until_sample -= 1;
        if self.until_sample == 0 {
            self.sample();
        }
    }

    #[cold]
    fn sample(&mut self) {
        self.until_sample = self.sample_every;
        let used = self.pool_used();
        self.stats.samples += 1;
        self.stats.sampled_used += used;
        if self.stats.conflicts > 0 {
            self.stats.steady_samples += 1;
            self.stats.steady_sampled_used += used;
        }
        self.until_trace -= 1;
        if self.until_trace == 0 {
            self.trace.push(used);
            if self.trace.len() == TRACE_LEN {
                // Keep every other sample and record half as often: bounded and deterministic.
                for i in 0..TRACE_LEN / 2 {
                    self.trace[i] = self.trace[2 * i + 1];
                }
                self.trace.truncate(TRACE_LEN / 2);
                self.trace_stride *= 2;
            }
            self.until_trace = self.trace_stride;
        }
    }

    #[inline]
    fn conflict(&mut self) {
        if self.stats.conflicts == 0 {
            self.stats.first_conflict_used = self.pool_used();
        }
        self.stats.conflicts += 1;
    }

    /// Where a 4 KiB page goes (steps 1–5 of the module docs).
    fn place_4k(&mut self, req: &PageRequest, ages: Option<&dyn PageAges>) -> Placement {
        let fb = self.hasher.front_bucket(req.asid, req.vpn);
        if self.buckets[fb as usize].len[FRONT] > 0 {
            let pfn = self.pop(fb, FRONT);
            self.placed(FRONT);
            return Placement::Frame(pfn);
        }
        let mut cands = [0u64; MAX_CHOICES];
        self.hasher.back_buckets(req.asid, req.vpn, &mut cands);
        let d = self.d as usize;
        if cands[..d].iter().all(|&c| self.buckets[c as usize].len[BACK] == 0) {
            self.conflict();
        }
        let front = ages.map(|a| self.scan_yard(fb, FRONT, a)).unwrap_or_default();
        if let Some((_, page)) = front.oldest_ghost {
            self.stats.ghost_displacements += 1;
            self.placed(FRONT);
            return Placement::Displace(Pfn(page));
        }
        // What the ages say of each backyard, read once when first needed.
        let mut backs = [YardScan::default(); MAX_CHOICES];
        let mut scanned = false;
        let exclude = !self.include_ghosts && ages.is_some();
        if let (Some(a), true) = (ages, exclude) {
            for j in 0..d {
                backs[j] = self.scan_yard(cands[j], BACK, a);
            }
            scanned = true;
        }
        // Power of d choices over the backyards.
        let (mut best, mut best_occ) = (0, None);
        for j in 0..d {
            let used = self.b - self.buckets[cands[j] as usize].len[BACK] as u32;
            let occ = used - if exclude { backs[j].ghosts } else { 0 };
            if self.better(occ, best_occ) {
                (best, best_occ) = (j, Some(occ));
            }
        }
        if best_occ.is_some_and(|o| o < self.b) {
            let c = cands[best];
            if self.buckets[c as usize].len[BACK] > 0 {
                let pfn = self.pop(c, BACK);
                self.placed(BACK);
                return Placement::Frame(pfn);
            }
            // Its occupancy left ghosts out, so it holds one.
            let (_, page) = backs[best].oldest_ghost.expect("a backyard below b without a free slot holds a ghost");
            self.stats.ghost_displacements += 1;
            self.placed(BACK);
            return Placement::Displace(Pfn(page));
        }
        let Some(a) = ages else {
            self.stats.full += 1;
            return Placement::Full;
        };
        if !scanned {
            for j in 0..d {
                backs[j] = self.scan_yard(cands[j], BACK, a);
            }
        }
        if self.include_ghosts {
            // The candidate with the fewest live pages that holds a ghost gives up its oldest ghost.
            let (mut pick, mut pick_live) = (None, None);
            for (j, bs) in backs[..d].iter().enumerate() {
                if bs.ghosts > 0 && self.better(self.b - bs.ghosts, pick_live) {
                    (pick, pick_live) = (Some(j), Some(self.b - bs.ghosts));
                }
            }
            if let Some(j) = pick {
                let (_, page) = backs[j].oldest_ghost.expect("counted a ghost");
                self.stats.ghost_displacements += 1;
                self.placed(BACK);
                return Placement::Displace(Pfn(page));
            }
        }
        // No ghost anywhere: the oldest of the h slots goes, and the horizon rises.
        let oldest = backs[..d].iter().filter_map(|bs| bs.oldest).chain(front.oldest).min();
        match oldest {
            Some((_, page)) => {
                self.stats.live_displacements += 1;
                let yard = self.yard_of(self.locate(page).1);
                self.placed(yard);
                Placement::Displace(Pfn(page))
            }
            None => {
                self.stats.full += 1;
                Placement::Full
            }
        }
    }
}

impl FrameAllocator for Iceberg {
    /// Blocks below the pool (page-table nodes, pages larger than 4 KiB).
    #[inline]
    fn alloc(&mut self, order: u32) -> Option<Pfn> {
        self.outer.alloc(order)
    }

    #[inline]
    fn free(&mut self, pfn: Pfn, order: u32) {
        if self.hasher.in_pool(pfn.0) {
            debug_assert_eq!(order, 0, "pool frames are single 4 KiB frames");
            let (bucket, slot) = self.locate(pfn.0);
            self.push(bucket, slot);
        } else {
            self.outer.free(pfn, order);
        }
    }

    #[inline]
    fn free_frames(&self) -> u64 {
        self.pool_free + self.outer.free_frames()
    }

    /// Of the buddy allocator below the pool (pool frames are only ever single pages).
    fn largest_free_order(&self) -> Option<u32> {
        self.outer.largest_free_order()
    }

    fn reserve(&mut self, pfn: Pfn) -> bool {
        if self.hasher.in_pool(pfn.0) {
            self.take(pfn.0)
        } else {
            self.outer.reserve(pfn)
        }
    }

    fn check_invariants(&self) -> std::result::Result<(), String> {
        self.outer.check_invariants()?;
        let (mut free, mut front_used, mut back_used) = (0u64, 0u64, 0u64);
        for (i, bk) in self.buckets.iter().enumerate() {
            let mut seen = 0u64;
            for yard in [FRONT, BACK] {
                let (cap, off) = (self.cap(yard) as usize, self.offset(yard));
                let len = bk.len[yard] as usize;
                if len > cap || bk.head[yard] as usize >= cap {
                    return Err(format!("bucket {i} yard {yard}: head {} length {len} of {cap}", bk.head[yard]));
                }
                for k in 0..len {
                    let s = bk.ring[off + (bk.head[yard] as usize + k) % cap] as u32;
                    if self.yard_of(s) != yard || seen & (1 << s) != 0 {
                        return Err(format!("bucket {i} yard {yard}: slot {s} listed wrongly or twice"));
                    }
                    seen |= 1 << s;
                }
                let used = cap - len;
                if yard == FRONT {
                    front_used += used as u64;
                } else {
                    back_used += used as u64;
                }
            }
            if seen != bk.free {
                return Err(format!("bucket {i}: free mask {:#x} but FIFOs hold {seen:#x}", bk.free));
            }
            free += seen.count_ones() as u64;
        }
        if (free, front_used, back_used) != (self.pool_free, self.front_used, self.back_used) {
            return Err(format!(
                "counted {free} free, {front_used} + {back_used} used; kept {} free, {} + {} used",
                self.pool_free, self.front_used, self.back_used
            ));
        }
        Ok(())
    }

    #[inline]
    fn alloc_page(&mut self, req: &PageRequest) -> Option<Pfn> {
        match self.place(req, None) {
            Placement::Frame(pfn) => Some(pfn),
            _ => None,
        }
    }

    #[inline]
    fn place(&mut self, req: &PageRequest, ages: Option<&dyn PageAges>) -> Placement {
        if req.size == PageSize::Size4K {
            return self.place_4k(req, ages);
        }
        match self.outer.alloc(req.size.order()) {
            Some(pfn) => {
                self.stats.outside_pool += 1;
                Placement::Frame(pfn)
            }
            None => Placement::Full,
        }
    }

    fn claim(&mut self, pfn: Pfn, req: &PageRequest) -> bool {
        req.size == PageSize::Size4K && self.reserve(pfn)
    }

    /// Pool pages leave the frames below the pool to page-table nodes.
    fn table_headroom(&self, req: &PageRequest) -> u64 {
        let free = self.outer.free_frames();
        if req.size == PageSize::Size4K {
            free
        } else {
            free.saturating_sub(1 << req.size.order())
        }
    }

    fn frees_table_room(&self, pfn: Pfn) -> bool {
        !self.hasher.in_pool(pfn.0)
    }

    fn needs_ages(&self) -> bool {
        true
    }

    fn table_frame_name(&self) -> &'static str {
        crate::error::BELOW_POOL_NODE
    }

    fn table_area(&self) -> Option<(u64, u64)> {
        Some((self.outer.free_frames(), self.hasher.begin()))
    }

    fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats(), v);
    }
}
