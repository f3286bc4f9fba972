//! Page eviction policies: which resident page the OS evicts when a fault
//! needs a frame and none is free.
//!
//! ## Lifecycle
//! A policy is built over frames `0 .. capacity_frames` ([`EvictionCtx`]) and
//! tracks *pages*, each named by the first frame of its mapping (a 2 MiB page
//! is one page, named by its first 4 KiB frame). The OS calls:
//! - [`on_map`](EvictionPolicy::on_map) when a page becomes resident (after
//!   the fault maps it); the page must not be resident already;
//! - [`on_touch`](EvictionPolicy::on_touch) on every translation of a resident
//!   page, but only if [`wants_touches`](EvictionPolicy::wants_touches) says so
//!   (exact LRU needs it; policies driven by accessed bits do not, and then
//!   the per-access path pays nothing). Touching a page that is not resident
//!   is ignored;
//! - [`victim`](EvictionPolicy::victim) when a frame is needed: it returns a
//!   resident page (or `None` when none is), reading and clearing accessed bits
//!   through [`AccessedBits`] as the OS would clear the A bit in a PTE. The
//!   victim stays resident and tracked: calling `victim` again before anything
//!   else changes returns the same page;
//! - [`on_evict`](EvictionPolicy::on_evict) when a page stops being resident
//!   because the OS evicted it to make room (the policy's own victim, or a
//!   page an allocator displaced); by default the same as `on_unmap`.
//!   Horizon LRU raises its horizon here;
//! - [`on_unmap`](EvictionPolicy::on_unmap) when a page stops being resident
//!   for another reason (munmap, a page split or promotion). Unmapping a page
//!   that is not resident is ignored.
//! - [`scan`](EvictionPolicy::scan), for a policy whose
//!   [`scans`](EvictionPolicy::scans) is true, whenever
//!   [`scan_due`](EvictionPolicy::scan_due) says so after a touch: a periodic
//!   daemon reading and clearing accessed bits.
//!
//! ## Whole-unit eviction
//! A policy may declare, through
//! [`eviction_unit_frames`](EvictionPolicy::eviction_unit_frames), that one
//! eviction empties a whole aligned unit of physical frames (a power of two;
//! 1 by default: one page). When such a policy names a victim, the OS evicts
//! every resident page whose first frame lies in the victim's unit (the
//! victim's frame rounded down to the unit), in frame order, each through the
//! same path as a single eviction (and each reported through `on_evict`),
//! not only as many pages as the request needs. Pages are placed on frames
//! aligned to their size, so a page no larger than the unit lies wholly in
//! it, and a larger victim page covers whole units (it alone is evicted).
//! A page an allocator names to displace is evicted alone, whatever the
//! unit: that is the allocator's choice, not the policy's.
//!
//! A policy that knows when each resident page was last used offers it as
//! [`PageAges`] through [`ages`](EvictionPolicy::ages), for allocators that
//! may place a page in only a few frames and must choose which resident page
//! to displace (see `physmem::allocator`).
//!
//! Policies keep dense per-frame arrays (`u32` links, no hashing): `on_map`,
//! `on_unmap` and `on_touch` are O(1) and never allocate after construction.
//! Host memory is about 9 bytes per frame of physical memory.
//!
//! ## Accessed bits
//! The accessed (A) bit of a page's PTE is set by the hardware walker on an
//! access; the OS reads and clears it during reclaim. [`AccessedBits`] is that
//! interface: `test_and_clear(page)` returns whether the bit was set and
//! clears it. Whether clearing a bit also drops the page's TLB entries (so
//! that the next access walks and sets the bit again) is the caller's choice,
//! not the policy's.

pub mod clock;
pub mod horizon;
pub mod linux_like;
mod list;
pub mod lru;
#[cfg(test)]
pub(crate) mod reference;
pub mod root_chunk;

pub use crate::registry::AnyEviction;
use crate::error::{Error, Result};
pub use crate::physmem::allocator::PageAges;

/// What a policy is built over.
#[derive(Clone, Debug)]
pub struct EvictionCtx {
    /// Frames of physical memory (4 KiB each); every page number is below this.
    pub capacity_frames: u64,
    /// Sub-seed for policies that draw random numbers.
    pub seed: u64,
}

impl EvictionCtx {
    /// The frame count as a list length, checked against the `u32` links.
    pub(crate) fn frames(&self) -> Result<usize> {
        if self.capacity_frames >= u32::MAX as u64 {
            return Err(Error::config(
                "physmem.capacity",
                format!("eviction policies track at most {} frames of 4KiB, not {}", u32::MAX - 1, self.capacity_frames),
            ));
        }
        Ok(self.capacity_frames as usize)
    }
}

/// The registered policies that offer [`PageAges`] (for error messages).
pub fn with_ages() -> Vec<&'static str> {
    let ctx = EvictionCtx { capacity_frames: 64, seed: 0 };
    AnyEviction::NAMES
        .iter()
        .copied()
        .filter(|&name| {
            AnyEviction::resolve(&toml::Value::String(name.into()), "os.eviction")
                .and_then(|spec| AnyEviction::build(&spec, &ctx, "os.eviction"))
                .is_ok_and(|p| p.ages().is_some())
        })
        .collect()
}

/// Reads and clears the accessed bit of a resident page (the OS clearing the A bit in its PTE).
pub trait AccessedBits {
    /// Whether the page's accessed bit was set; it is clear afterwards.
    fn test_and_clear(&mut self, page: u64) -> bool;
    /// The same, and if the bit was set, also drop the page's cached
    /// translations so that its next use sets the bit again. By default the
    /// same as `test_and_clear`.
    fn test_and_clear_flush(&mut self, page: u64) -> bool {
        self.test_and_clear(page)
    }
}

/// Chooses which resident page to evict (see the module docs for the call order).
pub trait EvictionPolicy {
    /// A page became resident (mapped) with first frame `page`.
    fn on_map(&mut self, page: u64);
    /// The page stopped being resident (unmapped, or evicted by a policy with no `on_evict` of its own).
    fn on_unmap(&mut self, page: u64);
    /// The page was evicted to make room; by default `on_unmap`.
    fn on_evict(&mut self, page: u64) {
        self.on_unmap(page);
    }
    /// Whether the machine must call `on_touch` on every translation (exact LRU); policies driven by accessed bits say false.
    fn wants_touches(&self) -> bool;
    /// The page was accessed (called only if `wants_touches`). Hot path: O(1), no allocation.
    fn on_touch(&mut self, page: u64);
    /// Choose the resident page to evict (it stays resident until the caller calls `on_unmap`). None if nothing is resident.
    fn victim(&mut self, bits: &mut dyn AccessedBits) -> Option<u64>;
    /// Resident pages tracked.
    fn resident(&self) -> u64;
    /// Frames (a power of two) of the aligned unit one eviction empties: when
    /// the policy names a victim, the OS evicts every resident page whose
    /// first frame lies in the victim's unit (see the module docs). 1 by
    /// default: the victim page alone.
    fn eviction_unit_frames(&self) -> u64 {
        1
    }
    /// What the policy knows of page ages, for allocators that place by identity; none by default.
    fn ages(&self) -> Option<&dyn PageAges> {
        None
    }
    /// Whether the policy has a periodic scan (checked once when the OS is built).
    fn scans(&self) -> bool {
        false
    }
    /// Whether the periodic scan is due (asked after a touch, only if `scans`).
    fn scan_due(&self) -> bool {
        false
    }
    /// Run the periodic scan.
    fn scan(&mut self, _bits: &mut dyn AccessedBits) {}
    /// The policy's own counters (reported as `os.eviction.<name>.*`); none by default.
    fn visit_stats(&self, _v: &mut dyn crate::stats::StatVisitor) {}
}

#[cfg(test)]
mod tests {
    use super::reference::TestBits;
    use super::*;

    fn build(section: &str) -> Result<AnyEviction> {
        let value: toml::Value = toml::from_str::<toml::Table>(&format!("eviction = {section}")).unwrap()["eviction"].clone();
        let spec = AnyEviction::resolve(&value, "os.eviction")?;
        AnyEviction::build(&spec, &EvictionCtx { capacity_frames: 64, seed: 1 }, "os.eviction")
    }

    #[test]
    fn every_registered_policy_builds_and_evicts_through_the_family() {
        for &name in AnyEviction::NAMES {
            let mut p = build(&format!("\"{name}\"")).unwrap();
            assert_eq!(p.name(), name);
            let mut bits = TestBits::new(64);
            for page in [0, 8, 16] {
                p.on_map(page);
            }
            if p.wants_touches() {
                p.on_touch(0);
            }
            assert_eq!(p.resident(), 3);
            let v = p.victim(&mut bits).unwrap();
            p.on_unmap(v);
            assert_eq!(p.resident(), 2, "{name}");
            let mut c = crate::stats::Collector::default();
            p.visit_stats(&mut c);
        }
        assert_eq!(AnyEviction::NAMES, &["lru", "clock", "linux_like", "horizon", "root_chunk"]);
        assert_eq!(with_ages(), vec!["horizon"]);
    }

    #[test]
    fn sections_are_checked_with_their_paths() {
        assert!(build("{ kind = \"linux_like\", inactive_ratio = 3, look_twice = false }").is_ok());
        match build("\"fifo\"") {
            Err(Error::Config { path, allowed, .. }) => {
                assert_eq!(path, "os.eviction.kind");
                assert_eq!(allowed, vec!["lru", "clock", "linux_like", "horizon", "root_chunk"]);
            }
            other => panic!("{other:?}"),
        }
        match build("{ kind = \"lru\", ratio = 2 }") {
            Err(Error::Config { path, .. }) => assert!(path.starts_with("os.eviction"), "{path}"),
            other => panic!("{other:?}"),
        }
        match build("{ kind = \"linux_like\", inactive_ratio = 0 }") {
            Err(Error::Config { path, .. }) => assert_eq!(path, "os.eviction.inactive_ratio"),
            other => panic!("{other:?}"),
        }
        assert!(build("{ kind = \"root_chunk\", order = \"access\", chunk = \"64KiB\" }").is_ok());
        match build("{ kind = \"root_chunk\", chunk = \"3MiB\" }") {
            Err(Error::Config { path, .. }) => assert_eq!(path, "os.eviction.chunk"),
            other => panic!("{other:?}"),
        }
        match build("{ kind = \"root_chunk\", chunk = \"2GiB\" }") {
            Err(Error::Config { path, .. }) => assert_eq!(path, "os.eviction.chunk"),
            other => panic!("{other:?}"),
        }
        match build("{ kind = \"root_chunk\", order = \"fifo\" }") {
            Err(Error::Config { path, .. }) => assert!(path.starts_with("os.eviction"), "{path}"),
            other => panic!("{other:?}"),
        }
        let ctx = EvictionCtx { capacity_frames: 1 << 40, seed: 0 };
        assert!(AnyEviction::build(&AnyEviction::resolve(&"clock".into(), "os.eviction").unwrap(), &ctx, "os.eviction").is_err());
    }
}
