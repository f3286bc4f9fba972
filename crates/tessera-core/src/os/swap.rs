//! The swap device: where evicted pages go, with a swap cache of clean copies.
//!
//! ## What it models
//! A block device of `capacity` bytes cut into 4 KiB slots. Paging a page out
//! writes it to slots (a page of `2^k` frames takes `2^k` slots), paging it in
//! reads them back. Each transfer costs a fixed per-request latency plus its
//! size over the device bandwidth:
//!
//! `cycles = latency_cycles + ceil(bytes × f / bandwidth)`,
//!
//! with `f` the core frequency in Hz (`timing.frequency_ghz`, handed over at
//! build) and `bandwidth` in bytes per second. Transfers do not queue: the
//! device is never busy (the fault path is serialised; overlap of several
//! outstanding I/Os is not modelled).
//!
//! The device keeps the copy of a page that was read back (Linux's swap cache:
//! the slots stay allocated while the page is resident). Evicting that page
//! again while it is clean needs no write ([`SwapDevice::page_out`] with
//! `dirty = false` returns 0 cycles). A write to the page makes the copy
//! stale: the caller either drops it at once ([`SwapDevice::discard`], as
//! Linux frees the slot on swap-in when swap space runs short) or lets the
//! next eviction replace it (`page_out` with `dirty = true` writes the page
//! again, as Linux writes a dirty swap-cache page back to swap). Unmapping a
//! page for good should discard its copy.
//! ## Paper or source
//! Linux `mm/swapfile.c` (slots, clusters for huge pages), `mm/swap_state.c`
//! (the swap cache); Mosaic Pages swaps to a 4 GB ramdisk (MECHANISMS.md §3.4),
//! hence the default capacity.
//! ## Choices where the sources are silent
//! - Whether a page is dirty is the caller's knowledge (the PTE's D bit); the
//!   device only keeps or drops copies.
//! - Keys are `(asid, vpn)`, the virtual page's start in 4 KiB units, so a
//!   copy survives the frame it came from. A key holds one copy; writing a key
//!   again replaces it (its old slots are reused first).
//! - Slots come from a binary buddy allocator over the slots (the one of
//!   [`crate::physmem::allocator::buddy`]): a page gets one naturally aligned
//!   run of slots when one is free, like Linux's swap clusters for huge pages.
//!   When free space is fragmented the page is split into smaller aligned runs
//!   (halving recursively) instead of failing, so a write fails only when
//!   fewer slots are free than the page needs. Slot numbers affect nothing yet
//!   (no readahead), but are kept so that they can.
//! - The latency is paid once per transfer, whatever its size (one request per
//!   page; a 2 MiB page is one request). The default 30 000 cycles is 10 µs
//!   at 3 GHz, a fast NVMe SSD's random-access latency; the default bandwidth
//!   of 2 GiB/s is such a device's sequential rate.
//! - The frequency is rounded to a whole number of Hz.
//! - A full device is [`Error::OutOfMemory`] with `what = "swap device"`.
//! ## Config
//! `[os.swap]`: `capacity` (bytes, a multiple of 4 KiB, 4 KiB .. 4 TiB,
//! default "4GiB"), `latency_cycles` (default 30000), `bandwidth` (bytes per
//! second, written like a size: "2GiB" or 2147483648; default "2GiB").
//! ## Stats
//! Reported under `swap.`: `pages_out`, `pages_in`, `bytes_out`, `bytes_in`,
//! `cycles`, `clean_evictions`, `discards`, gauges `used_slots` and
//! `capacity_slots`.

use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};

use crate::config::spec::ByteSize;
use crate::error::{Error, Result};
use crate::physmem::allocator::buddy::Buddy;
use crate::physmem::allocator::{FrameAllocator, MAX_ORDER};
use crate::stat_group;

/// Bytes per slot (one 4 KiB frame).
pub const SLOT_BYTES: u64 = 4096;

/// Largest device: 4 TiB (the buddy bitmaps over its slots stay small on the host).
pub const MAX_CAPACITY: u64 = 4 << 40;

/// The swap device's config section (`[os.swap]`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SwapSpec {
    /// Size of the device: a multiple of 4 KiB, from 4 KiB to 4 TiB.
    #[serde(default = "d_capacity")]
    pub capacity: ByteSize,
    /// Cycles of one transfer before its first byte (once per page, any size).
    #[serde(default = "d_latency")]
    pub latency_cycles: u64,
    /// Transfer rate in bytes per second, written like a size ("2GiB" = 2 GiB/s).
    #[serde(default = "d_bandwidth")]
    pub bandwidth: ByteSize,
}
fn d_capacity() -> ByteSize {
    ByteSize(4 << 30)
}
fn d_latency() -> u64 {
    30_000
}
fn d_bandwidth() -> ByteSize {
    ByteSize(2 << 30)
}
impl Default for SwapSpec {
    fn default() -> Self {
        SwapSpec { capacity: d_capacity(), latency_cycles: d_latency(), bandwidth: d_bandwidth() }
    }
}

impl SwapSpec {
    /// Check the values; errors name the key (`os.swap.<field>`).
    pub fn validate(&self) -> Result<()> {
        let cap = self.capacity.0;
        if cap == 0 || !cap.is_multiple_of(SLOT_BYTES) || cap > MAX_CAPACITY {
            return Err(Error::config(
                "os.swap.capacity",
                format!("{} bytes: must be a whole number of 4KiB slots, from 4KiB to 4TiB", cap),
            ));
        }
        if self.bandwidth.0 == 0 {
            return Err(Error::config("os.swap.bandwidth", "must be at least 1 byte per second (written like a size: \"2GiB\" is 2 GiB/s)"));
        }
        Ok(())
    }

    /// Slots of the device.
    pub fn capacity_slots(&self) -> u64 {
        self.capacity.0 / SLOT_BYTES
    }
}

/// The virtual page a copy belongs to: address space and first 4 KiB page number.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SwapKey {
    pub asid: u16,
    /// Virtual page number in 4 KiB units of the page's first byte.
    pub vpn: u64,
}

impl SwapKey {
    pub fn new(asid: u16, vpn: u64) -> Self {
        SwapKey { asid, vpn }
    }
}

/// A naturally aligned run of `2^order` slots starting at slot `first`.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct SlotRange {
    pub first: u64,
    pub order: u32,
}

impl SlotRange {
    pub fn slots(&self) -> u64 {
        1 << self.order
    }
}

/// The copy of one page on the device.
#[derive(Clone, Debug)]
struct PageCopy {
    frames: u64,
    ranges: Vec<SlotRange>,
}

stat_group! {
    /// Traffic and occupancy of the swap device.
    pub struct SwapStats {
        pages_out: "pages", "pages written to the swap device (a page of any size counts once)",
        pages_in: "pages", "pages read back from the swap device",
        bytes_out: "bytes", "bytes written to the swap device",
        bytes_in: "bytes", "bytes read from the swap device",
        cycles: "cycles", "device time of all transfers: latency + bytes / bandwidth each",
        clean_evictions: "pages", "evictions of clean pages whose swap copy was still valid: nothing written",
        discards: "pages", "swap copies dropped (the page was dirtied or freed)",
        used_slots: gauge "slots", "4 KiB slots holding a page copy at the end of the run",
        capacity_slots: gauge "slots", "4 KiB slots of the swap device",
    }
}

/// The device: slot allocation, the copies it holds, and its counters.
#[derive(Clone, Debug)]
pub struct SwapDevice {
    spec: SwapSpec,
    /// Core frequency in Hz.
    hz: f64,
    slots: Buddy,
    copies: FxHashMap<SwapKey, PageCopy>,
    stats: SwapStats,
}

impl SwapDevice {
    /// An empty device. `frequency_ghz` is the core clock (`timing.frequency_ghz`)
    /// that converts transfer times to cycles.
    pub fn new(spec: &SwapSpec, frequency_ghz: f64) -> Result<Self> {
        spec.validate()?;
        if !(frequency_ghz.is_finite() && frequency_ghz > 0.0) {
            return Err(Error::config("timing.frequency_ghz", format!("must be a positive number of GHz, not {frequency_ghz}")));
        }
        let capacity_slots = spec.capacity_slots();
        Ok(SwapDevice {
            spec: spec.clone(),
            hz: (frequency_ghz * 1e9).round(),
            slots: Buddy::new(capacity_slots),
            copies: FxHashMap::default(),
            stats: SwapStats { capacity_slots, ..SwapStats::default() },
        })
    }

    pub fn spec(&self) -> &SwapSpec {
        &self.spec
    }

    /// Cycles of one transfer of `bytes`: `latency + ceil(bytes × Hz / bandwidth)`.
    pub fn transfer_cycles(&self, bytes: u64) -> u64 {
        self.spec.latency_cycles + (bytes as f64 * self.hz / self.spec.bandwidth.0 as f64).ceil() as u64
    }

    /// Whether the device holds a copy of `key`'s page.
    pub fn has_copy(&self, key: SwapKey) -> bool {
        self.copies.contains_key(&key)
    }

    /// Frames of the page whose copy `key` holds.
    pub fn copy_frames(&self, key: SwapKey) -> Option<u64> {
        self.copies.get(&key).map(|c| c.frames)
    }

    /// The slots holding `key`'s copy.
    pub fn slots_of(&self, key: SwapKey) -> Option<&[SlotRange]> {
        self.copies.get(&key).map(|c| c.ranges.as_slice())
    }

    /// Copies held.
    pub fn copies(&self) -> u64 {
        self.copies.len() as u64
    }

    pub fn capacity_slots(&self) -> u64 {
        self.stats.capacity_slots
    }

    pub fn used_slots(&self) -> u64 {
        self.stats.used_slots
    }

    pub fn free_slots(&self) -> u64 {
        self.stats.capacity_slots - self.stats.used_slots
    }

    /// Evict a page of `frames` 4 KiB frames: write it unless it is clean and
    /// the device still holds its copy (of the same size). Returns the cycles
    /// (0 when nothing is written).
    pub fn page_out(&mut self, key: SwapKey, frames: u64, dirty: bool) -> Result<u64> {
        if !dirty && self.copy_frames(key) == Some(frames) {
            self.stats.clean_evictions += 1;
            return Ok(0);
        }
        self.write(key, frames)
    }

    /// Write a page of `frames` 4 KiB frames under `key`, replacing any copy it
    /// had. Fails, changing nothing, when the free slots (counting the old
    /// copy's) are fewer than `frames`.
    pub fn write(&mut self, key: SwapKey, frames: u64) -> Result<u64> {
        debug_assert!(frames > 0, "a page has at least one frame");
        let old = self.copy_frames(key).unwrap_or(0);
        let free = self.free_slots() + old;
        if free < frames {
            return Err(Error::OutOfMemory {
                what: "swap device".into(),
                requested_bytes: frames * SLOT_BYTES,
                free_bytes: free * SLOT_BYTES,
                capacity_bytes: self.spec.capacity.0,
            });
        }
        let mut ranges = match self.copies.remove(&key) {
            Some(c) => {
                self.release(&c.ranges);
                let mut r = c.ranges;
                r.clear();
                r
            }
            None => Vec::new(),
        };
        let mut rest = frames;
        while rest != 0 {
            let order = (63 - rest.leading_zeros()).min(MAX_ORDER);
            self.alloc_run(order, &mut ranges);
            rest -= 1 << order;
        }
        self.stats.used_slots += frames;
        self.copies.insert(key, PageCopy { frames, ranges });
        let bytes = frames * SLOT_BYTES;
        let cycles = self.transfer_cycles(bytes);
        self.stats.pages_out += 1;
        self.stats.bytes_out += bytes;
        self.stats.cycles += cycles;
        Ok(cycles)
    }

    /// Read `key`'s page back. The copy stays on the device (the swap cache)
    /// until [`discard`](Self::discard)ed or rewritten. `None` (nothing read,
    /// nothing counted) when there is no copy.
    pub fn read(&mut self, key: SwapKey) -> Option<u64> {
        let frames = self.copy_frames(key)?;
        let bytes = frames * SLOT_BYTES;
        let cycles = self.transfer_cycles(bytes);
        self.stats.pages_in += 1;
        self.stats.bytes_in += bytes;
        self.stats.cycles += cycles;
        Some(cycles)
    }

    /// Drop `key`'s copy (the page was dirtied or freed); returns whether there was one.
    pub fn discard(&mut self, key: SwapKey) -> bool {
        match self.copies.remove(&key) {
            Some(c) => {
                self.release(&c.ranges);
                self.stats.discards += 1;
                true
            }
            None => false,
        }
    }

    pub fn stats(&self) -> &SwapStats {
        &self.stats
    }

    /// The device's counters (the owner prefixes `swap.`).
    pub fn visit_stats(&self, v: &mut dyn crate::stats::StatVisitor) {
        crate::stats::StatGroup::visit(&self.stats, v);
    }

    /// One aligned run of `2^order` slots, or two of half the size each when
    /// none is free (recursively). The caller has checked the free count.
    fn alloc_run(&mut self, order: u32, out: &mut Vec<SlotRange>) {
        match self.slots.alloc(order) {
            Some(first) => out.push(SlotRange { first: first.0, order }),
            None => {
                assert!(order > 0, "swap slots counted free but none is");
                self.alloc_run(order - 1, out);
                self.alloc_run(order - 1, out);
            }
        }
    }

    fn release(&mut self, ranges: &[SlotRange]) {
        for r in ranges {
            self.slots.free(crate::addr::Pfn(r.first), r.order);
            self.stats.used_slots -= r.slots();
        }
    }

    /// Slot accounting agrees with the copies, and no two copies share a slot (tests).
    pub fn check_invariants(&self) -> std::result::Result<(), String> {
        self.slots.check_invariants()?;
        let mut runs: Vec<(u64, u64)> = Vec::new();
        let mut used = 0;
        for (k, c) in &self.copies {
            let n: u64 = c.ranges.iter().map(SlotRange::slots).sum();
            if n != c.frames {
                return Err(format!("{k:?}: {} frames in {n} slots", c.frames));
            }
            used += n;
            runs.extend(c.ranges.iter().map(|r| (r.first, r.first + r.slots())));
        }
        if used != self.stats.used_slots || self.slots.free_frames() != self.stats.capacity_slots - used {
            return Err(format!(
                "{used} slots in copies, {} counted used, {} free in the allocator of {}",
                self.stats.used_slots,
                self.slots.free_frames(),
                self.stats.capacity_slots
            ));
        }
        runs.sort_unstable();
        if let Some(w) = runs.windows(2).find(|w| w[0].1 > w[1].0) {
            return Err(format!("slot runs {:?} and {:?} overlap", w[0], w[1]));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dev(capacity: u64, latency: u64, bandwidth: u64, ghz: f64) -> SwapDevice {
        let spec = SwapSpec { capacity: ByteSize(capacity), latency_cycles: latency, bandwidth: ByteSize(bandwidth) };
        SwapDevice::new(&spec, ghz).unwrap()
    }

    fn key(vpn: u64) -> SwapKey {
        SwapKey::new(1, vpn)
    }

    #[test]
    fn cycles_are_latency_plus_size_over_bandwidth() {
        // 1 GHz, 1 GiB/s: 4096 B take 4096 / 2^30 s = 3814.697... ns → 3815 cycles.
        let d = dev(1 << 20, 100, 1 << 30, 1.0);
        assert_eq!(d.transfer_cycles(4096), 100 + 3815);
        // 2 GHz, 10^9 B/s: 8 KiB take 8.192 µs = 16384 cycles exactly.
        let d = dev(1 << 20, 0, 1_000_000_000, 2.0);
        assert_eq!(d.transfer_cycles(8192), 16384);
        // Defaults: 30000 + 4096 B at 2 GiB/s and 3 GHz = 5722.05 → 5723.
        let d = SwapDevice::new(&SwapSpec::default(), 3.0).unwrap();
        assert_eq!(d.transfer_cycles(4096), 30000 + 5723);
        assert_eq!(d.capacity_slots(), 1 << 20);
    }

    #[test]
    fn write_then_read_round_trips_and_counts() {
        let mut d = dev(64 * 4096, 10, 4096, 1.0);
        // 4096 B/s at 1 GHz: one slot's transfer is 10^9 cycles.
        let c = d.write(key(0x200), 16).unwrap();
        assert_eq!(c, 10 + 16 * 1_000_000_000);
        assert!(d.has_copy(key(0x200)) && !d.has_copy(SwapKey::new(2, 0x200)));
        assert_eq!(d.copy_frames(key(0x200)), Some(16));
        assert_eq!(d.slots_of(key(0x200)).unwrap(), &[SlotRange { first: 0, order: 4 }]);
        assert_eq!(d.read(key(0x200)), Some(c));
        assert!(d.has_copy(key(0x200)), "a read keeps the copy (swap cache)");
        assert_eq!(d.read(key(0x999)), None);
        let s = d.stats().clone();
        assert_eq!((s.pages_out, s.pages_in, s.bytes_out, s.bytes_in, s.cycles), (1, 1, 16 * 4096, 16 * 4096, 2 * c));
        assert_eq!((s.used_slots, s.capacity_slots), (16, 64));
        assert!(d.discard(key(0x200)));
        assert!(!d.discard(key(0x200)));
        assert_eq!((d.used_slots(), d.stats().discards, d.copies()), (0, 1, 0));
        d.check_invariants().unwrap();
    }

    #[test]
    fn clean_page_with_a_copy_is_evicted_without_a_write() {
        let mut d = dev(16 * 4096, 7, 1 << 30, 1.0);
        let k = key(5);
        let c = d.page_out(k, 1, true).unwrap();
        assert!(c > 7);
        d.read(k).unwrap();
        assert_eq!(d.page_out(k, 1, false).unwrap(), 0, "clean, copy still valid");
        assert_eq!((d.stats().pages_out, d.stats().clean_evictions), (1, 1));
        // Dirty: written again, into the slot it had.
        assert_eq!(d.page_out(k, 1, true).unwrap(), c);
        assert_eq!((d.stats().pages_out, d.used_slots()), (2, 1));
        // Clean but never written (no copy): must be written.
        assert_eq!(d.page_out(key(6), 1, false).unwrap(), c);
        // A copy of another size does not serve a clean eviction.
        assert_eq!(d.page_out(key(6), 2, false).unwrap(), d.transfer_cycles(8192));
        assert_eq!((d.stats().pages_out, d.used_slots()), (4, 3));
        d.check_invariants().unwrap();
    }

    #[test]
    fn full_device_is_out_of_memory_and_changes_nothing() {
        let mut d = dev(8 * 4096, 0, 1 << 30, 1.0);
        d.write(key(0), 4).unwrap();
        d.write(key(4), 2).unwrap();
        let before = d.stats().clone();
        match d.write(key(8), 4) {
            Err(Error::OutOfMemory { what, requested_bytes, free_bytes, capacity_bytes }) => {
                assert_eq!(what, "swap device");
                assert_eq!((requested_bytes, free_bytes, capacity_bytes), (4 * 4096, 2 * 4096, 8 * 4096));
            }
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        assert_eq!(d.stats(), &before);
        assert!(!d.has_copy(key(8)));
        // Rewriting a key may reuse its own slots: 4 (old) + 2 free ≥ 6.
        d.write(key(0), 6).unwrap();
        assert_eq!(d.free_slots(), 0);
        assert!(d.write(key(9), 1).is_err());
        d.check_invariants().unwrap();
    }

    #[test]
    fn fragmented_free_slots_still_take_a_large_page() {
        let mut d = dev(8 * 4096, 0, 1 << 30, 1.0);
        for v in 0..8 {
            d.write(key(v), 1).unwrap();
        }
        for v in [1, 2, 5, 6] {
            d.discard(key(v));
        }
        // Free slots 1, 2, 5, 6: no aligned run of 4, nor of 2 at 2 or 4.
        d.write(key(100), 4).unwrap();
        let mut slots: Vec<u64> = d.slots_of(key(100)).unwrap().iter().flat_map(|r| r.first..r.first + r.slots()).collect();
        slots.sort_unstable();
        assert_eq!(slots, vec![1, 2, 5, 6]);
        assert_eq!(d.free_slots(), 0);
        d.check_invariants().unwrap();
    }

    #[test]
    fn random_traffic_keeps_the_accounting() {
        use rand::{Rng, SeedableRng};
        let mut d = dev(256 * 4096, 1, 1 << 30, 3.0);
        let mut rng = crate::rng::SimRng::seed_from_u64(11);
        let mut model: std::collections::BTreeMap<u64, u64> = Default::default();
        for _ in 0..5000 {
            let v = rng.gen_range(0..64u64);
            let frames = 1u64 << rng.gen_range(0..6);
            match rng.gen_range(0..4) {
                0 => assert_eq!(d.discard(key(v)), model.remove(&v).is_some()),
                1 => assert_eq!(d.read(key(v)).is_some(), model.contains_key(&v)),
                _ => {
                    let used: u64 = model.values().sum();
                    let fits = used - model.get(&v).copied().unwrap_or(0) + frames <= 256;
                    assert_eq!(d.write(key(v), frames).is_ok(), fits);
                    if fits {
                        model.insert(v, frames);
                    }
                }
            }
            assert_eq!(d.used_slots(), model.values().sum::<u64>());
            d.check_invariants().unwrap();
        }
    }

    #[test]
    fn spec_validation_names_the_key() {
        let bad = |f: fn(&mut SwapSpec)| {
            let mut s = SwapSpec::default();
            f(&mut s);
            match s.validate() {
                Err(Error::Config { path, .. }) => path,
                other => panic!("{other:?}"),
            }
        };
        assert_eq!(bad(|s| s.capacity = ByteSize(0)), "os.swap.capacity");
        assert_eq!(bad(|s| s.capacity = ByteSize(4096 * 3 + 1)), "os.swap.capacity");
        assert_eq!(bad(|s| s.capacity = ByteSize(MAX_CAPACITY + 4096)), "os.swap.capacity");
        assert_eq!(bad(|s| s.bandwidth = ByteSize(0)), "os.swap.bandwidth");
        assert!(SwapDevice::new(&SwapSpec::default(), 0.0).is_err());
        assert!(SwapDevice::new(&SwapSpec::default(), f64::NAN).is_err());
    }

    #[test]
    fn spec_parses_with_defaults_and_rejects_unknown_keys() {
        let parse = |s: &str| crate::config::deserialize_at::<SwapSpec>(toml::Value::Table(toml::from_str(s).unwrap()), "os.swap");
        assert_eq!(parse("").unwrap(), SwapSpec::default());
        let s = parse("capacity = \"8GiB\"\nbandwidth = 1000000000\nlatency_cycles = 5").unwrap();
        assert_eq!(s, SwapSpec { capacity: ByteSize(8 << 30), latency_cycles: 5, bandwidth: ByteSize(1_000_000_000) });
        match parse("capacty = \"8GiB\"") {
            Err(Error::Config { path, .. }) => assert!(path.starts_with("os.swap"), "{path}"),
            other => panic!("{other:?}"),
        }
        // Written back out, the defaults read as sizes.
        let t = toml::to_string(&SwapSpec::default()).unwrap();
        assert!(t.contains("capacity = \"4GiB\"") && t.contains("bandwidth = \"2GiB\""), "{t}");
    }

    #[test]
    fn stats_are_walked_with_gauges() {
        let mut d = dev(4 * 4096, 0, 1 << 30, 1.0);
        d.write(key(1), 2).unwrap();
        let mut c = crate::stats::Collector::default();
        crate::stats::visit_prefixed("swap", &Walk(&d), &mut c);
        assert_eq!(c.stats.get("swap.used_slots"), 2);
        assert_eq!(c.stats.get("swap.capacity_slots"), 4);
        assert_eq!(c.stats.get("swap.bytes_out"), 8192);
        assert_eq!(c.stats.info["swap.used_slots"].kind, "gauge");
        assert_eq!(c.stats.info["swap.pages_out"].kind, "count");
    }

    struct Walk<'a>(&'a SwapDevice);
    impl crate::stats::StatGroup for Walk<'_> {
        fn visit(&self, v: &mut dyn crate::stats::StatVisitor) {
            self.0.visit_stats(v);
        }
    }
}
