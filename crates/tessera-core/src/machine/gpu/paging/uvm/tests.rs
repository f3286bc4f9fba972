//! The batch timeline against hand-computed cases and a reference event model.

use std::collections::{BTreeMap, VecDeque};

use proptest::prelude::*;

use super::*;

const U: u64 = 64 << 10;
/// 64 KiB at 15.75 GB/s and 1 GHz.
const T64: u64 = 4161;

/// A GPU memory of `capacity` units, evicting the oldest mapped unit.
#[derive(Default)]
struct FakeHost {
    capacity: usize,
    /// Bytes of a unit (64 KiB unless set).
    unit: u64,
    resident: VecDeque<(Asid, u64)>,
    /// Units mapped, in order (a unit may come back after an eviction).
    mapped: Vec<(Asid, u64)>,
    /// Allocation per asid: [lo, hi).
    alloc: BTreeMap<Asid, (u64, u64)>,
}

impl FakeHost {
    fn new(capacity: usize) -> FakeHost {
        FakeHost { capacity, unit: U, alloc: [(1, (0, 1 << 30))].into(), ..Default::default() }
    }
    fn evict(&mut self, evicted: &mut Vec<Evicted>) {
        if let Some((asid, va)) = self.resident.pop_front() {
            // A unit of 64 KiB pages goes as all of them.
            for i in 0..self.unit / U {
                evicted.push(Evicted { asid, va: va + i * U, size: PageSize::Size64K });
            }
        }
    }
}

impl PagingHost for FakeHost {
    fn migrate(&mut self, asid: Asid, va: u64, bytes: u64, evicted: &mut Vec<Evicted>) -> Result<u64> {
        assert_eq!(bytes, self.unit);
        assert!(!self.resident.contains(&(asid, va)), "unit {va:#x} migrated while resident");
        while self.resident.len() >= self.capacity {
            self.evict(evicted);
        }
        self.resident.push_back((asid, va));
        self.mapped.push((asid, va));
        Ok(bytes)
    }
    fn arrived(&mut self, _: Asid, _: u64, _: u64) {}
    fn evict_one(&mut self, evicted: &mut Vec<Evicted>) -> Result<()> {
        self.evict(evicted);
        Ok(())
    }
    fn resident_bytes(&self) -> u64 {
        self.resident.len() as u64 * self.unit
    }
    fn full(&self, bytes: u64) -> bool {
        self.resident.len() + bytes.div_ceil(self.unit) as usize > self.capacity
    }
    fn resident(&self, asid: Asid, va: u64) -> bool {
        self.resident.contains(&(asid, va))
    }
    fn allocated(&self, asid: Asid, va: u64, bytes: u64) -> bool {
        self.alloc.get(&asid).is_some_and(|&(lo, hi)| lo < va + bytes && va < hi)
    }
}

/// A path of `overrides` (the keys of an inline table: `a = 1, b = { c = 2 }`).
fn uvm(overrides: &str) -> Uvm {
    let doc: toml::Table = toml::from_str(&format!("x = {{ {overrides} }}")).unwrap();
    let cfg: Config = doc["x"].clone().try_into().unwrap();
    Uvm::build(&cfg, &PagingCtx::at(1.0)).unwrap()
}

fn fault(va: u64) -> FarFault {
    FarFault { asid: 1, va, size: PageSize::Size64K, miss: 0 }
}

/// Poll `p` at every cycle it asks for until it has nothing left; the
/// cycle each unit was reported done, in order.
fn drain(p: &mut Uvm, host: &mut FakeHost) -> Vec<(u64, u64)> {
    let mut out = Vec::new();
    let mut done = Vec::new();
    while let Some(t) = p.next_poll() {
        done.clear();
        p.poll(t, host, &mut done).unwrap();
        out.extend(done.iter().map(|f| (t, f.va)));
    }
    out
}

#[test]
fn a_batch_pays_the_handling_time_once_then_migrates_in_address_order() {
    let mut p = uvm("");
    let mut host = FakeHost::new(100);
    for va in [3 * U, U, 2 * U] {
        assert_eq!(p.raise(fault(va), 0), None);
    }
    let done = drain(&mut p, &mut host);
    assert_eq!(done, vec![(20_000 + T64, U), (20_000 + 2 * T64, 2 * U), (20_000 + 3 * T64, 3 * U)]);
    assert_eq!(p.stats.batches, 1);
    assert_eq!(p.stats.batch_cycles, 20_000 + 3 * T64);
    assert_eq!(p.stats.bytes_to_gpu, 3 * U);
}

#[test]
fn handling_can_grow_with_the_batch() {
    let mut p = uvm("handling_per_fault_us = 0.5");
    let mut host = FakeHost::new(100);
    for va in [0, U, 2 * U] {
        p.raise(fault(va), 0);
    }
    let done = drain(&mut p, &mut host);
    // 20 µs + 3 × 0.5 µs at 1 GHz before the first transfer.
    assert_eq!(done[0], (21_500 + T64, 0));
    assert_eq!(p.stats.handling_cycles, 21_500);
}

#[test]
fn faults_raised_during_a_batch_wait_for_the_next() {
    let mut p = uvm("");
    let mut host = FakeHost::new(100);
    p.raise(fault(0), 0);
    let mut done = Vec::new();
    p.poll(0, &mut host, &mut done).unwrap();
    // One cycle later, the batch has begun: these wait.
    p.raise(fault(U), 1);
    p.raise(fault(2 * U), 1);
    let done = drain(&mut p, &mut host);
    let first = 20_000 + T64;
    assert_eq!(done, vec![(first, 0), (first + 20_000 + T64, U), (first + 20_000 + 2 * T64, 2 * U)]);
    assert_eq!((p.stats.batches, p.stats.batch_faults), (2, 3));
    assert_eq!(p.histogram[0] + p.histogram[1], 2);
}

#[test]
fn eviction_comes_before_the_migration_unless_unobtrusive() {
    // Memory full: two faults, each needs an eviction.
    let run = |ue: bool| {
        let mut p = uvm(&format!("unobtrusive = {ue}"));
        let mut host = FakeHost::new(2);
        for va in [10 * U, 11 * U] {
            host.migrate(1, va, U, &mut Vec::new()).unwrap();
        }
        p.raise(fault(0), 0);
        p.raise(fault(U), 0);
        (drain(&mut p, &mut host), p.stats.clone())
    };
    let (base, s) = run(false);
    // Handling, then (evict 4161, migrate 4161) twice on one timeline.
    assert_eq!(base, vec![(20_000 + 2 * T64, 0), (20_000 + 4 * T64, U)]);
    assert_eq!((s.evictions, s.preemptive_evictions), (0, 0), "the fake's own units have no arrival");
    let (ue, s) = run(true);
    // The first eviction hides under the handling time; the second overlaps the first migration.
    assert_eq!(ue, vec![(20_000 + T64, 0), (20_000 + 2 * T64, U)]);
    assert_eq!(s.preemptive_evictions, 1);
    assert_eq!(s.bytes_to_host, 2 * U);
}

#[test]
fn a_full_buffer_parks_faults_until_the_next_batch_drains_it() {
    let mut p = uvm("fault_buffer = 2");
    let mut host = FakeHost::new(100);
    for i in 0..3 {
        p.raise(fault(i * U), 0);
    }
    assert_eq!(p.stats.parked, 1);
    let mut done = Vec::new();
    p.poll(0, &mut host, &mut done).unwrap();
    // The drain hands the parked fault back at once, to walk again.
    assert_eq!(done, vec![fault(2 * U)]);
    assert_eq!(p.items.len(), 2);
}

#[test]
fn evicted_units_that_fault_again_are_premature() {
    let mut p = uvm("");
    let mut host = FakeHost::new(1);
    p.raise(fault(0), 0);
    drain(&mut p, &mut host);
    p.raise(fault(U), 30_000);
    drain(&mut p, &mut host);
    assert_eq!(p.stats.evictions, 1);
    // Unit 0 arrived at 24161 and was evicted when unit 1's migration began (30000 + 20000).
    assert_eq!(p.stats.lifetime_cycles, 50_000 - (20_000 + T64));
    p.raise(fault(0), 100_000);
    assert_eq!(p.stats.premature_evictions, 1);
}

#[test]
fn the_curve_makes_small_transfers_slower_per_byte() {
    let p = uvm("pcie = \"curve\"");
    // UVM-Smart's fit at 1 GHz: 64 KiB at 12·(2/π)·atan(0.07292·64) GB/s.
    let speed = 12.0 * 2.0 / std::f64::consts::PI * (0.07292f64 * 64.0).atan();
    let want = (65536.0 / (speed * (1u64 << 30) as f64) * 1e9).round() as u64;
    assert_eq!(p.h2d.cycles(U), want);
    assert!(p.h2d.cycles(4096) * 16 > p.h2d.cycles(U));
}

#[test]
fn bad_settings_name_their_keys() {
    for (text, key) in [
        ("fault_buffer = 0", "gpu.paging.fault_buffer"),
        ("memory = 0.0", "gpu.paging.memory"),
        ("memory = 1.5", "gpu.paging.memory"),
        ("unit = \"1g\"", "gpu.paging.unit"),
        ("unit = \"2m\"\nprefetch = \"tree_neighbourhood\"", "gpu.paging.prefetch"),
        ("pcie = \"fast\"", "gpu.paging.pcie"),
        ("pcie_gbps = 0.0", "gpu.paging.pcie_gbps"),
        ("handling_us = -1.0", "gpu.paging.handling_us"),
        ("handling_per_fault_us = -1.0", "gpu.paging.handling_per_fault_us"),
        ("prefetch = \"psychic\"", "gpu.paging.prefetch"),
        ("pcie_compression = 0.5", "gpu.paging.pcie_compression"),
        ("etc = { cc_ratio = 0.9 }", "gpu.paging.etc.cc_ratio"),
        ("etc = { mt_signal = \"faults\" }", "gpu.paging.etc.mt_signal"),
        ("etc = { detect_cycles = 0 }", "gpu.paging.etc.detect_cycles"),
        ("etc = { mt_threshold = 0 }", "gpu.paging.etc.mt_threshold"),
    ] {
        let cfg: Config = toml::from_str(text).unwrap();
        let e = Uvm::build(&cfg, &PagingCtx::at(1.0)).unwrap_err().to_string();
        assert!(e.contains(key), "{text}: {e}");
    }
}

const M: u64 = 2 << 20;
/// 2 MiB at 15.75 GB/s and 1 GHz: 2,097,152 / 15.75 = 133,152.5 cycles, rounded.
const T2M: u64 = 133_153;

fn fault_2m(va: u64) -> FarFault {
    FarFault { asid: 1, va, size: PageSize::Size2M, miss: 0 }
}

#[test]
fn two_mib_units_are_one_transfer_each_and_evicted_whole() {
    let mut p = uvm("unit = \"2m\", prefetch = \"none\"");
    let mut host = FakeHost { unit: M, ..FakeHost::new(100) };
    // Accesses anywhere in a unit fault the unit.
    for va in [3 * M + 5 * U, M, 2 * M + 4096] {
        assert_eq!(p.raise(fault_2m(va), 0), None);
    }
    let done = drain(&mut p, &mut host);
    assert_eq!(done, vec![(20_000 + T2M, M), (20_000 + 2 * T2M, 2 * M), (20_000 + 3 * T2M, 3 * M)]);
    assert_eq!((p.stats.batch_units, p.stats.bytes_to_gpu, p.stats.h2d_busy_cycles), (3, 3 * M, 3 * T2M));
    assert_eq!(host.mapped, vec![(1, M), (1, 2 * M), (1, 3 * M)], "each unit crosses the link once");

    // Room for one unit: the second evicts the first, all 32 of its pages in one transfer back, then migrates.
    let mut p = uvm("unit = \"2m\", prefetch = \"none\"");
    let mut host = FakeHost { unit: M, ..FakeHost::new(1) };
    p.raise(fault_2m(0), 0);
    p.raise(fault_2m(M), 0);
    let done = drain(&mut p, &mut host);
    assert_eq!(done, vec![(20_000 + T2M, 0), (20_000 + 3 * T2M, M)]);
    assert_eq!((p.stats.evictions, p.stats.bytes_to_host, p.stats.d2h_busy_cycles), (1, M, T2M));
    // The second migration begins (and evicts) as the first transfer ends: a lifetime of 0 cycles.
    assert_eq!(p.stats.lifetime_cycles, 0);
    p.raise(fault_2m(4096), 10_000_000);
    assert_eq!(p.stats.premature_evictions, 1);
}

/// 64 KiB at 16.384 GB/s and 1 GHz: 4000 cycles exactly.
const GBPS_4000: &str = "pcie_gbps = 16.384, pcie_d2h_gbps = 16.384";

#[test]
fn pcie_compression_divides_each_units_transfer_by_the_ratio_in_both_directions() {
    let run = |extra: &str, capacity: usize, resident: u64| {
        let mut p = uvm(&format!("{GBPS_4000}{extra}"));
        let mut host = FakeHost::new(capacity);
        for i in 0..resident {
            host.migrate(1, (10 + i) * U, U, &mut Vec::new()).unwrap();
        }
        for va in [0, U, 2 * U] {
            p.raise(fault(va), 0);
        }
        (drain(&mut p, &mut host), p)
    };
    let (plain, _) = run("", 100, 0);
    assert_eq!(plain, vec![(24_000, 0), (28_000, U), (32_000, 2 * U)]);
    // Ratio 2 and no codec time: exactly half of each unit's 4000 cycles.
    let (half, p) = run(", pcie_compression = 2.0, compression_cycles = 0", 100, 0);
    assert_eq!(half, vec![(22_000, 0), (24_000, U), (26_000, 2 * U)]);
    assert_eq!(p.pcie_stats, PcieStats { link_bytes_to_gpu: 3 * U / 2, link_bytes_to_host: 0, codec_cycles: 0 });
    assert_eq!(p.stats.bytes_to_gpu, 3 * U, "the data moved is the same");
    // The (de)compression time is paid per unit, on the link's timeline.
    let (codec, p) = run(", pcie_compression = 2.0, compression_cycles = 100", 100, 0);
    assert_eq!(codec, vec![(22_100, 0), (24_200, U), (26_300, 2 * U)]);
    assert_eq!(p.pcie_stats.codec_cycles, 300);
    // Evictions to the host are compressed too: memory full, (evict 2100, migrate 2100) per unit.
    let (ev, p) = run(", pcie_compression = 2.0, compression_cycles = 100", 3, 3);
    assert_eq!(ev, vec![(24_200, 0), (28_400, U), (32_600, 2 * U)]);
    assert_eq!(p.pcie_stats.link_bytes_to_host, 3 * U / 2);
    assert_eq!(p.stats.d2h_busy_cycles, 3 * 2100);
}

/// Memory holding `capacity` units, all taken by units of the fake; faults
/// on `faults` units at cycle 0.
fn full_run(cfg: &str, capacity: u64, faults: u64) -> (Vec<(u64, u64)>, Uvm) {
    let mut p = uvm(cfg);
    let mut host = FakeHost::new(capacity as usize);
    for i in 0..capacity {
        host.migrate(1, (100 + i) * U, U, &mut Vec::new()).unwrap();
    }
    for i in 0..faults {
        p.raise(fault(i * U), 0);
    }
    (drain(&mut p, &mut host), p)
}

#[test]
fn proactive_eviction_frees_the_batchs_room_during_the_handling_time() {
    let (base, _) = full_run("", 3, 2);
    assert_eq!(base, vec![(20_000 + 2 * T64, 0), (20_000 + 4 * T64, U)], "evict then migrate, per unit");
    let (pe, p) = full_run("etc = { proactive = true }", 3, 2);
    // Both evictions ran during the 20 µs of handling: the migrations wait for nothing.
    assert_eq!(pe, vec![(20_000 + T64, 0), (20_000 + 2 * T64, U)]);
    assert_eq!(p.pe_stats, PeStats { proactive_evictions: 2, proactive_wait_cycles: 0 });
    assert_eq!(p.stats.bytes_to_host, 2 * U);
    assert_eq!(p.stats.d2h_busy_cycles, 2 * T64);
    assert!(p.pe_frames.is_empty(), "each freed frame was taken");
}

#[test]
fn a_migration_waits_only_for_the_eviction_that_freed_its_frame() {
    // 1 µs of handling: the evictions (0–4161, 4161–8322) outlast it.
    let (pe, p) = full_run("handling_us = 1.0, etc = { proactive = true }", 3, 2);
    assert_eq!(pe, vec![(T64 + T64, 0), (2 * T64 + T64, U)]);
    assert_eq!(p.pe_stats.proactive_wait_cycles, T64 - 1_000);
    // The baseline evicts from the handling's end: 1000 + 2 × (evict, migrate).
    let (base, _) = full_run("handling_us = 1.0", 3, 2);
    assert_eq!(base, vec![(1_000 + 2 * T64, 0), (1_000 + 4 * T64, U)]);
}

#[test]
fn proactive_eviction_evicts_extra_units_and_never_the_last_one() {
    // One fault, two more units of room: three evictions, all ahead.
    let (_, p) = full_run("etc = { proactive = true, pe_extra_units = 2 }", 4, 1);
    assert_eq!(p.pe_stats.proactive_evictions, 3);
    // A shortfall larger than memory: the last resident unit stays.
    let (done, p) = full_run("etc = { proactive = true }", 2, 5);
    assert_eq!(p.pe_stats.proactive_evictions, 1);
    assert_eq!(done.len(), 5, "the rest evict on demand");
    // With room, it does nothing.
    let mut q = uvm("etc = { proactive = true }");
    let mut host = FakeHost::new(10);
    q.raise(fault(0), 0);
    assert_eq!(drain(&mut q, &mut host), vec![(20_000 + T64, 0)]);
    assert_eq!(q.pe_stats, PeStats::default());
}

#[test]
fn throttling_begins_after_a_window_with_enough_evictions_and_ends_after_a_quiet_detection_epoch() {
    let mut p = uvm("etc = { throttling = true, detect_cycles = 100000, execute_cycles = 500000, mt_threshold = 2 }");
    assert_eq!(p.throttle(), Some(false));
    let mut host = FakeHost::new(1);
    for va in [0, U, 2 * U] {
        p.raise(fault(va), 0);
    }
    // Unit 0 is evicted at 24161 (when unit 1 migrates), unit 1 at 32483: two in the window [0, 100000).
    let mut changes = Vec::new();
    let mut done = Vec::new();
    let mut last = p.throttle();
    while let Some(t) = p.next_poll() {
        p.poll(t, &mut host, &mut done).unwrap();
        if p.throttle() != last {
            last = p.throttle();
            changes.push((t, last.unwrap()));
        }
    }
    // Throttled from 100000 for an execution epoch; the detection epoch [600000, 700000) saw nothing.
    assert_eq!(changes, vec![(100_000, true), (700_000, false)]);
    let s = &p.mt.as_ref().unwrap().stats;
    assert_eq!((s.triggers, s.throttled_epochs, s.detection_epochs, s.free_epochs), (1, 1, 1, 1));
    assert_eq!(p.stats.evictions, 2);
}

#[test]
fn throttling_can_count_premature_evictions_instead() {
    let mut p = uvm("etc = { throttling = true, mt_signal = \"premature\", mt_threshold = 1 }");
    let mut host = FakeHost::new(1);
    p.raise(fault(0), 0);
    p.raise(fault(U), 0);
    drain(&mut p, &mut host);
    assert_eq!(p.throttle(), Some(false), "evictions alone do not count");
    // Unit 0 faults again at 50000: a premature eviction, in the window [0, 100000).
    p.raise(fault(0), 50_000);
    assert_eq!(p.mt.as_ref().unwrap().next_change(), Some(100_000));
}

#[test]
fn capacity_compression_scales_the_memory_only_when_the_data_does_not_fit() {
    let p = uvm("memory = 0.5, etc = { compression = true, cc_ratio = 1.6 }");
    assert!((p.memory() - 0.8).abs() < 1e-12);
    assert_eq!(p.decompress_cycles(), 10);
    let p = uvm("memory = 0.75, etc = { compression = true, cc_ratio = 2.0, cc_decompress_cycles = 7 }");
    assert_eq!((p.memory(), p.decompress_cycles()), (1.0, 7), "all of it fits, compressed");
    let p = uvm("etc = { compression = true }");
    assert_eq!((p.memory(), p.decompress_cycles()), (1.0, 0), "the data fits: nothing compressed");
    let p = uvm("memory = 0.5");
    assert_eq!((p.memory(), p.decompress_cycles(), p.throttle()), (0.5, 0, None));
}

#[test]
fn every_part_off_is_the_baseline() {
    let cfg = "unobtrusive = true, pcie_compression = 1.0, etc = { proactive = false, throttling = false, compression = false }";
    let (a, p) = full_run(cfg, 3, 4);
    let (b, q) = full_run("unobtrusive = true", 3, 4);
    assert_eq!(a, b);
    assert_eq!(p.stats, q.stats);
    assert_eq!(p.throttle(), None);
}

/// The reference: the same batches computed in one pass from the arrival
/// times, in the most direct way (no state machine, no polling).
fn reference(arrivals: &[(u64, u64)], capacity: usize, ue: bool, handling: u64) -> Vec<(u64, u64)> {
    let mut pending: Vec<(u64, u64)> = arrivals.to_vec();
    pending.sort();
    let mut resident: VecDeque<u64> = VecDeque::new();
    let mut out = Vec::new();
    let mut t = 0;
    let mut d2h_free = 0u64;
    let mut h2d_free = 0u64;
    let mut in_flight: Vec<u64> = Vec::new();
    while !pending.is_empty() {
        // A batch begins at the later of the first waiting fault and the previous batch's end.
        let start = t.max(pending[0].0);
        let (mut now_in, rest): (Vec<_>, Vec<_>) = pending.iter().partition(|&&(at, _)| at <= start);
        pending = rest;
        now_in.sort_by_key(|&(_, va)| va);
        let mut units: Vec<u64> = now_in.iter().map(|&(_, va)| va).collect();
        units.dedup();
        let mut preempted = false;
        if ue && resident.len() >= capacity {
            resident.pop_front();
            d2h_free = start.max(d2h_free) + T64;
            preempted = true;
        }
        let mut at = start + handling;
        let mut prev_start = start;
        let mut end = start;
        for (i, &va) in units.iter().enumerate() {
            let mut evicted = 0;
            while resident.len() >= capacity {
                resident.pop_front();
                evicted += 1;
            }
            resident.push_back(va);
            let mut s = at.max(h2d_free);
            if evicted > 0 {
                let ev_start = if ue { prev_start.max(d2h_free) } else { s.max(d2h_free) };
                d2h_free = ev_start + evicted * T64;
                s = s.max(d2h_free);
            } else if preempted && i == 0 {
                s = s.max(d2h_free);
            }
            end = s + T64;
            h2d_free = end;
            out.push((end, va));
            at = if ue { s } else { end };
            prev_start = s;
        }
        in_flight.clear();
        t = end;
    }
    out.sort();
    out
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    #[test]
    fn the_batch_timeline_matches_the_reference(
        raw in prop::collection::vec((0u64..200_000, 0u64..24), 1..40),
        capacity in 1usize..12,
        ue in any::<bool>(),
    ) {
        // One fault per unit until it is done (the machine coalesces): keep each unit's first arrival.
        let mut seen = std::collections::BTreeSet::new();
        let mut arrivals: Vec<(u64, u64)> = Vec::new();
        let mut sorted = raw.clone();
        sorted.sort();
        for (at, u) in sorted {
            if seen.insert(u) {
                arrivals.push((at, u * U));
            }
        }
        let mut p = uvm(&format!("unobtrusive = {ue}"));
        let mut host = FakeHost::new(capacity);
        let mut got = Vec::new();
        let mut done = Vec::new();
        let mut next = 0;
        loop {
            let poll = p.next_poll();
            let arrive = arrivals.get(next).map(|a| a.0);
            let t = match (poll, arrive) {
                (None, None) => break,
                (Some(p), Some(a)) => p.min(a),
                (Some(p), None) => p,
                (None, Some(a)) => a,
            };
            // Arrivals at a cycle come before the poll of that cycle (the machine's event order).
            while next < arrivals.len() && arrivals[next].0 == t {
                p.raise(fault(arrivals[next].1), t);
                next += 1;
            }
            if p.next_poll().is_some_and(|q| q <= t) {
                done.clear();
                p.poll(t, &mut host, &mut done).unwrap();
                got.extend(done.iter().map(|f| (t, f.va)));
            }
        }
        got.sort();
        // Every fault served exactly once.
        let mut units: Vec<u64> = got.iter().map(|g| g.1).collect();
        units.sort();
        let mut want_units: Vec<u64> = arrivals.iter().map(|a| a.1).collect();
        want_units.sort();
        prop_assert_eq!(units, want_units);
        prop_assert_eq!(got, reference(&arrivals, capacity, ue, 20_000));
    }
}

#[test]
fn a_service_takes_its_batch_limit_then_a_new_one_pays_its_start() {
    // One fault per batch, two batches per service, 5 µs to begin a service.
    let mut p = uvm("batch_limit = 1, batches_per_service = 2, service_us = 5.0");
    let mut host = FakeHost::new(100);
    for va in [0, U, 2 * U] {
        p.raise(fault(va), 0);
    }
    let done = drain(&mut p, &mut host);
    let d1 = 25_000 + T64;
    let d2 = d1 + 20_000 + T64;
    let d3 = d2 + 25_000 + T64;
    assert_eq!(done, vec![(d1, 0), (d2, U), (d3, 2 * U)]);
    assert_eq!((p.stats.batches, p.stats.services), (3, 2));
    // Without a limit, one service: only the first batch pays its start.
    let mut p = uvm("batch_limit = 1, service_us = 5.0");
    for va in [0, U, 2 * U] {
        p.raise(fault(va), 0);
    }
    let done = drain(&mut p, &mut FakeHost::new(100));
    assert_eq!(done.last(), Some(&(d1 + 2 * (20_000 + T64), 2 * U)));
    assert_eq!(p.stats.services, 1);
}

/// Poll `p` until unit `va` is reported done; the cycle it was.
fn until_done(p: &mut Uvm, host: &mut FakeHost, va: u64) -> u64 {
    let mut done = Vec::new();
    while let Some(t) = p.next_poll() {
        done.clear();
        p.poll(t, host, &mut done).unwrap();
        if done.iter().any(|f| f.va == va) {
            return t;
        }
    }
    panic!("unit {va:#x} never done");
}

#[test]
fn thrashing_shortens_a_service() {
    // A memory of one unit. Batch 1 brings A, batch 2 brings B (evicting
    // A); A faults again during batch 2, once evicted, and C during batch 3. When the
    // third fault is A (thrashing), the service's limit falls to 2 and
    // batch 4 begins a new service; with a fresh unit D it does not.
    let run = |third: u64| {
        let mut p = uvm("batch_limit = 1, batches_per_service = 10, thrashing_batches_per_service = 2");
        let mut host = FakeHost::new(1);
        p.raise(fault(0), 0);
        p.raise(fault(U), 0);
        let t = until_done(&mut p, &mut host, 0);
        // B's migration begins after batch 2's handling, evicting A.
        let mut done = Vec::new();
        while let Some(at) = p.next_poll().filter(|&at| at <= t + 20_000) {
            p.poll(at, &mut host, &mut done).unwrap();
        }
        p.raise(fault(third), t + 20_001);
        let t = until_done(&mut p, &mut host, U);
        p.raise(fault(2 * U), t);
        drain(&mut p, &mut host);
        (p.stats.batches, p.stats.services, p.stats.premature_evictions)
    };
    assert_eq!(run(0), (4, 2, 1));
    assert_eq!(run(3 * U), (4, 1, 0));
}

#[test]
fn batch_flush_drops_what_is_still_buffered_and_it_faults_again() {
    let mut p = uvm("batch_limit = 1, replay = \"batch_flush\"");
    let mut host = FakeHost::new(100);
    p.raise(fault(0), 0);
    p.raise(fault(U), 0);
    let mut done = Vec::new();
    let mut t = 0;
    while done.is_empty() {
        t = p.next_poll().unwrap();
        p.poll(t, &mut host, &mut done).unwrap();
    }
    // Batch 1 ends with A's transfer: B, still buffered, is handed back to walk again.
    assert_eq!(t, 20_000 + T64);
    assert_eq!(done.iter().map(|f| f.va).collect::<Vec<_>>(), vec![0, U]);
    assert_eq!((p.stats.flushed, p.next_poll()), (1, None));
    // Its access walks again and faults: a new batch, in a new service.
    p.raise(fault(U), t + 300);
    assert_eq!(until_done(&mut p, &mut host, U), t + 300 + 20_000 + T64);
    assert_eq!((p.stats.batches, p.stats.services, p.stats.faults), (2, 2, 3));
    let bad = Uvm::build(&toml::from_str("replay = \"eventually\"").unwrap(), &PagingCtx::at(1.0)).err().unwrap().to_string();
    assert!(bad.contains("gpu.paging.replay") && bad.contains("batch_flush"), "{bad}");
}
