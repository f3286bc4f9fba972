//! The hash functions of the Iceberg allocator and the pool geometry they
//! index: which front-yard bucket and which backyard buckets a page
//! (asid, vpn) may use, and the frame a slot of one of them is.
//!
//! ## What it models
//! A page is the 8-byte key `vpn | asid << 36` (the Linux prototype's
//! buffer, little-endian). Hash function 0 picks its front-yard bucket
//! (`h0 mod buckets`); functions 1..=d pick its d backyard buckets:
//! - `partitioned` (default, the Linux prototype's asymmetric d-left rule):
//!   with `r = buckets / d + 1`, choice j is `j·r + (h_{j+1} mod r)`, clamped
//!   to `buckets − 1`, so each choice comes from its own sub-range;
//! - `uniform`: choice j is `h_{j+1} mod buckets` (the textbook power of d
//!   choices).
//!
//! Two families of hash functions:
//! - `xxhash` (default): xxHash64 of the key with the prototype's seeds,
//!   2846245 for the front yard and 8384032, 4392830, 6382738, 3994928,
//!   9820291, 920194 for the choices (a 7th and 8th choice, beyond the
//!   prototype's d = 6, use [`EXTRA_SEEDS`]). Placement does not depend on
//!   the run seed.
//! - `tabulation`: simple tabulation hashing with probing, as the paper's
//!   hardware design: one table of 256 random 32-bit words per byte of the
//!   key, hash i = XOR over bytes b of `T_b[(byte_b + i) mod 256]`. The
//!   tables are drawn from the run's seeded generator.
//!
//! Bucket i of the pool is frames `begin + 64·i ..`: slots 0..f are its front
//! yard, slots f..64 its backyard.
//! ## Paper
//! "Mosaic Pages: Big TLB Reach with Small Pages", ASPLOS 2023, DOI
//! 10.1145/3582016.3582021, §2.3 (Iceberg hashing), §3.1 (tabulation hashing
//! with probing, Fig. 4), §3.2 (xxHash in the Linux prototype).
//! ## Choices where the paper is silent
//! - Tabulation hashes the same 64-bit key as xxHash, one table per byte (the
//!   hardware design splits a 45-bit VPN into five bytes and a 5-bit chunk;
//!   the ASID is not in its input). Eight tables cover any ASID and VPN.
//! - A key mixes the ASID in at bit 36, as the prototype does: VPNs of 37
//!   bits or more (5-level tables) overlap the ASID bits. Placement stays
//!   consistent (the same key always hashes the same way).
//! ## Stats
//! None.

use rand::Rng;
use xxhash_rust::xxh64::xxh64;

use crate::addr::{Asid, Pfn};

/// Frames per bucket (front yard plus backyard).
pub const BUCKET_FRAMES: u64 = 64;
/// Most backyard choices a 7-bit CPFN can name (3 bits).
pub const MAX_CHOICES: usize = 8;
/// The Linux prototype's seed of the front-yard hash.
pub const FRONT_SEED: u64 = 2846245;
/// The Linux prototype's seeds of the d = 6 backyard hashes, then two more
/// for configurations with up to 8 choices.
pub const BACK_SEEDS: [u64; MAX_CHOICES] = [8384032, 4392830, 6382738, 3994928, 9820291, 920194, EXTRA_SEEDS[0], EXTRA_SEEDS[1]];
/// Seeds of a 7th and 8th choice (not in the prototype; any fixed values do).
pub const EXTRA_SEEDS: [u64; 2] = [5103427, 7265519];

/// How backyard candidates are drawn (`physmem.allocator.choice`).
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ChoiceRule {
    Partitioned,
    Uniform,
}

/// Which hash functions (`physmem.allocator.hash`).
#[derive(Clone, PartialEq, Eq)]
enum HashFns {
    Xxhash,
    /// One table per key byte.
    Tabulation(Box<[[u32; 256]; 8]>),
}

impl std::fmt::Debug for HashFns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HashFns::Xxhash => f.write_str("Xxhash"),
            HashFns::Tabulation(_) => f.write_str("Tabulation"),
        }
    }
}

/// Where one page may be: a slot of its front-yard bucket, or a slot of the
/// backyard of one of its backyard choices. This is what a CPFN encodes.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Slot {
    /// Slot `0 .. f` of the front-yard bucket.
    Front(u8),
    /// Slot `0 .. b` of the backyard of choice `0 .. d`.
    Back { choice: u8, slot: u8 },
}

/// The pool's geometry and hash functions: everything needed to turn a
/// page and a [`Slot`] into a frame. A page-table format holding CPFNs
/// keeps a clone to decode them ([`super::cpfn::decode`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IcebergHasher {
    begin: u64,
    buckets: u64,
    front: u32,
    back: u32,
    choices: u32,
    rule: ChoiceRule,
    /// `buckets / choices + 1`, the width of a partition.
    range: u64,
    fns: HashFns,
}

impl IcebergHasher {
    /// The prototype's xxHash64 functions over a pool of `buckets` buckets
    /// starting at frame `begin`. The caller has checked the geometry
    /// (`buckets > 0`, `front + back = 64`, `1 <= choices <= 8`).
    pub fn xxhash(begin: u64, buckets: u64, front: u32, back: u32, choices: u32, rule: ChoiceRule) -> Self {
        Self::with(begin, buckets, front, back, choices, rule, HashFns::Xxhash)
    }

    /// Tabulation hashing with probing, tables drawn from `rng`.
    pub fn tabulation(begin: u64, buckets: u64, front: u32, back: u32, choices: u32, rule: ChoiceRule, rng: &mut impl Rng) -> Self {
        let mut tables = Box::new([[0u32; 256]; 8]);
        for t in tables.iter_mut() {
            for w in t.iter_mut() {
                *w = rng.gen();
            }
        }
        Self::with(begin, buckets, front, back, choices, rule, HashFns::Tabulation(tables))
    }

    fn with(begin: u64, buckets: u64, front: u32, back: u32, choices: u32, rule: ChoiceRule, fns: HashFns) -> Self {
        debug_assert!(buckets > 0 && front + back == BUCKET_FRAMES as u32 && (1..=MAX_CHOICES as u32).contains(&choices));
        IcebergHasher { begin, buckets, front, back, choices, rule, range: buckets / choices as u64 + 1, fns }
    }

    /// First frame of the pool.
    pub fn begin(&self) -> u64 {
        self.begin
    }
    pub fn buckets(&self) -> u64 {
        self.buckets
    }
    /// Front-yard slots per bucket (f).
    pub fn front(&self) -> u32 {
        self.front
    }
    /// Backyard slots per bucket (b).
    pub fn back(&self) -> u32 {
        self.back
    }
    /// Backyard choices per page (d).
    pub fn choices(&self) -> u32 {
        self.choices
    }
    /// Frames a page may use: h = f + d·b.
    pub fn associativity(&self) -> u32 {
        self.front + self.choices * self.back
    }

    /// The 8-byte key of a page.
    #[inline]
    pub fn key(asid: Asid, vpn: u64) -> u64 {
        vpn | (asid as u64) << 36
    }

    /// Hash function `i` (0: front yard, 1..=d: backyard choice i − 1) of `key`.
    #[inline]
    fn hash(&self, key: u64, i: usize) -> u64 {
        match &self.fns {
            HashFns::Xxhash => {
                let seed = if i == 0 { FRONT_SEED } else { BACK_SEEDS[i - 1] };
                xxh64(&key.to_le_bytes(), seed)
            }
            HashFns::Tabulation(t) => {
                let mut h = 0u32;
                for (b, table) in t.iter().enumerate() {
                    let byte = (key >> (8 * b)) as u8;
                    h ^= table[byte.wrapping_add(i as u8) as usize];
                }
                h as u64
            }
        }
    }

    /// The front-yard bucket of a page.
    #[inline]
    pub fn front_bucket(&self, asid: Asid, vpn: u64) -> u64 {
        self.hash(Self::key(asid, vpn), 0) % self.buckets
    }

    /// Backyard bucket of choice `j` (`0 .. d`) of a page.
    #[inline]
    pub fn back_bucket(&self, asid: Asid, vpn: u64, j: u32) -> u64 {
        self.back_bucket_of_key(Self::key(asid, vpn), j)
    }

    #[inline]
    fn back_bucket_of_key(&self, key: u64, j: u32) -> u64 {
        let h = self.hash(key, j as usize + 1);
        match self.rule {
            ChoiceRule::Partitioned => (j as u64 * self.range + h % self.range).min(self.buckets - 1),
            ChoiceRule::Uniform => h % self.buckets,
        }
    }

    /// Every backyard bucket of a page, choice 0 first, into `out[..d]`.
    #[inline]
    pub fn back_buckets(&self, asid: Asid, vpn: u64, out: &mut [u64; MAX_CHOICES]) {
        let key = Self::key(asid, vpn);
        for j in 0..self.choices {
            out[j as usize] = self.back_bucket_of_key(key, j);
        }
    }

    /// First frame of bucket `bucket`.
    #[inline]
    pub fn bucket_base(&self, bucket: u64) -> u64 {
        self.begin + BUCKET_FRAMES * bucket
    }

    /// Whether frame `pfn` is in the pool.
    #[inline]
    pub fn in_pool(&self, pfn: u64) -> bool {
        pfn >= self.begin && pfn < self.begin + BUCKET_FRAMES * self.buckets
    }

    /// The frame of `slot` for the page (asid, vpn); `None` if the slot is
    /// outside this geometry (a front slot ≥ f, a choice ≥ d, a backyard slot ≥ b).
    pub fn frame(&self, asid: Asid, vpn: u64, slot: Slot) -> Option<Pfn> {
        match slot {
            Slot::Front(s) if (s as u32) < self.front => Some(Pfn(self.bucket_base(self.front_bucket(asid, vpn)) + s as u64)),
            Slot::Back { choice, slot } if (choice as u32) < self.choices && (slot as u32) < self.back => {
                let b = self.back_bucket(asid, vpn, choice as u32);
                Some(Pfn(self.bucket_base(b) + self.front as u64 + slot as u64))
            }
            _ => None,
        }
    }

    /// Which slot of the page (asid, vpn) frame `pfn` is, if the page may
    /// use it. A backyard frame that several choices share is named by the
    /// lowest such choice (every one of them decodes to the same frame).
    pub fn slot_of(&self, pfn: Pfn, asid: Asid, vpn: u64) -> Option<Slot> {
        if !self.in_pool(pfn.0) {
            return None;
        }
        let bucket = (pfn.0 - self.begin) / BUCKET_FRAMES;
        let s = ((pfn.0 - self.begin) % BUCKET_FRAMES) as u32;
        if s < self.front {
            (self.front_bucket(asid, vpn) == bucket).then_some(Slot::Front(s as u8))
        } else {
            let key = Self::key(asid, vpn);
            (0..self.choices)
                .find(|&j| self.back_bucket_of_key(key, j) == bucket)
                .map(|j| Slot::Back { choice: j as u8, slot: (s - self.front) as u8 })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    #[test]
    fn xxhash_is_the_reference_xxh64_of_the_little_endian_key() {
        // Known answer of xxHash64 (seed 0, empty input), to catch a wrong function.
        assert_eq!(xxh64(b"", 0), 0xEF46_DB37_51D8_E999);
        let h = IcebergHasher::xxhash(0, 16384, 56, 8, 6, ChoiceRule::Partitioned);
        let key = IcebergHasher::key(3, 0x12345);
        assert_eq!(key, 0x12345 | 3 << 36);
        assert_eq!(h.front_bucket(3, 0x12345), xxh64(&key.to_le_bytes(), 2846245) % 16384);
        let r = 16384 / 6 + 1;
        assert_eq!(r, 2731);
        for (j, seed) in BACK_SEEDS[..6].iter().enumerate() {
            let want = (j as u64 * r + xxh64(&key.to_le_bytes(), *seed) % r).min(16383);
            assert_eq!(h.back_bucket(3, 0x12345, j as u32), want);
        }
    }

    #[test]
    fn partitioned_choices_come_from_their_own_sub_ranges() {
        let h = IcebergHasher::xxhash(0, 1000, 56, 8, 6, ChoiceRule::Partitioned);
        let r = 1000 / 6 + 1;
        let mut out = [0; MAX_CHOICES];
        for vpn in 0..2000 {
            h.back_buckets(1, vpn, &mut out);
            for (j, &b) in out[..6].iter().enumerate() {
                assert!(b < 1000);
                assert!(b >= j as u64 * r && (b < (j as u64 + 1) * r || b == 999), "choice {j} bucket {b}");
                assert_eq!(b, h.back_bucket(1, vpn, j as u32));
            }
        }
    }

    #[test]
    fn tabulation_probes_the_same_tables() {
        let mut rng = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(7);
        let h = IcebergHasher::tabulation(0, 4096, 56, 8, 6, ChoiceRule::Uniform, &mut rng);
        let HashFns::Tabulation(t) = &h.fns else { unreachable!() };
        let key = IcebergHasher::key(2, 0xabcdef);
        for i in 0..7usize {
            let mut want = 0u32;
            for b in 0..8 {
                want ^= t[b][((key >> (8 * b)) as u8).wrapping_add(i as u8) as usize];
            }
            assert_eq!(h.hash(key, i), want as u64);
        }
        // Another seed draws other tables.
        let mut rng2 = rand_xoshiro::Xoshiro256PlusPlus::seed_from_u64(8);
        let h2 = IcebergHasher::tabulation(0, 4096, 56, 8, 6, ChoiceRule::Uniform, &mut rng2);
        assert_ne!(h, h2);
    }

    #[test]
    fn frames_and_slots_round_trip() {
        let h = IcebergHasher::xxhash(1000, 50, 56, 8, 6, ChoiceRule::Partitioned);
        for vpn in 0..500 {
            for s in 0..56u8 {
                let f = h.frame(4, vpn, Slot::Front(s)).unwrap();
                assert!(h.in_pool(f.0));
                assert_eq!(h.slot_of(f, 4, vpn), Some(Slot::Front(s)));
            }
            for c in 0..6u8 {
                for s in 0..8u8 {
                    let f = h.frame(4, vpn, Slot::Back { choice: c, slot: s }).unwrap();
                    let back = h.slot_of(f, 4, vpn).unwrap();
                    assert_eq!(h.frame(4, vpn, back), Some(f), "a shared bucket decodes to the same frame");
                }
            }
            assert_eq!(h.frame(4, vpn, Slot::Front(56)), None);
            assert_eq!(h.frame(4, vpn, Slot::Back { choice: 6, slot: 0 }), None);
            assert_eq!(h.frame(4, vpn, Slot::Back { choice: 0, slot: 8 }), None);
        }
        assert_eq!(h.slot_of(Pfn(999), 4, 0), None);
        assert_eq!(h.slot_of(Pfn(1000 + 50 * 64), 4, 0), None);
    }
}
