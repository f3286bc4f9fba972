//! The bound model of `examples/bound` (the `tlb_only` machine hand
//! specialised, whose speed docs/performance.md quotes as the ceiling for
//! any exact simulator of that machine on the development host) must
//! simulate the same machine: every counter it keeps equals `Machine`'s on
//! the standard streams.

#[path = "../examples/bound/model.rs"]
#[allow(dead_code)]
mod model;

use tessera_core::access::{AccessBatch, BATCH_LEN};
use tessera_core::config::{load, ConfigSource};
use tessera_core::machine::Machine;
use tessera_core::run::{simulate_warm, Warmup};
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
use tessera_core::stream::AccessSource;

#[test]
fn bound_model_counts_what_the_tlb_only_machine_counts() {
    let spec = load(&ConfigSource::Preset("tlb_only".into()), &[]).unwrap();
    for pattern in [Pattern::Uniform, Pattern::Sequential, Pattern::HotCold] {
        // 64 MiB: 16,384 pages, many more than the TLBs hold, each touched
        // several times, so faults, walks, L2 hits, evictions and dirty-bit
        // updates on TLB hits all occur.
        let mut src = Synthetic::new(SyntheticSpec::new(pattern, 300_000, 64 << 20, 5)).unwrap();
        let mut m = Machine::build(&spec, 0).unwrap();
        let mut b = model::Bound::new(64 << 20);
        let mut batch = AccessBatch::with_capacity(BATCH_LEN);
        while src.next_batch(&mut batch).unwrap() {
            m.feed(&batch).unwrap();
            b.feed(&batch);
        }
        let stats = m.stats();
        for (name, v) in b.counters() {
            assert_eq!(stats.get(name), v, "{pattern}: counter {name}");
        }
        // A sequential pass never comes back to a page the L2 TLB still holds.
        let l2_hits = if pattern == Pattern::Sequential { None } else { Some("mmu.l2_tlb.hits") };
        for name in ["mmu.l1_dtlb_4k.evictions", "walker.dirty_updates", "os.faults"].into_iter().chain(l2_hits) {
            assert!(stats.get(name) > 0, "{pattern}: {name} never happened, so it was not compared");
        }
    }
}

/// A warm-up ends in the middle of a batch, and the measured counters equal
/// those of the bound model whose counters were zeroed at that record.
#[test]
fn counters_after_a_warm_up_equal_the_reference_reset_at_the_same_record() {
    let spec = load(&ConfigSource::Preset("tlb_only".into()), &[]).unwrap();
    for (pattern, warm) in [(Pattern::Uniform, 100_003u64), (Pattern::HotCold, 57_341), (Pattern::Sequential, 150_000)] {
        let mk = || Synthetic::new(SyntheticSpec::new(pattern, 300_000, 64 << 20, 5)).unwrap();
        let out = simulate_warm(&spec, 0, &mut mk(), Warmup::Accesses(warm), &mut |_, _| true).unwrap();
        assert_eq!(out.warmup.records, warm);
        assert_eq!(out.measured.records, 300_000 - warm);

        let mut b = model::Bound::new(64 << 20);
        let (mut src, mut batch, mut part) = (mk(), AccessBatch::with_capacity(BATCH_LEN), AccessBatch::with_capacity(BATCH_LEN));
        let mut seen = 0u64;
        while src.next_batch(&mut batch).unwrap() {
            let n = batch.len() as u64;
            if seen < warm && seen + n >= warm {
                let cut = (warm - seen) as usize;
                part.copy_range(&batch, 0..cut);
                b.feed(&part);
                b.reset_counters();
                part.copy_range(&batch, cut..batch.len());
                b.feed(&part);
            } else {
                b.feed(&batch);
            }
            seen += n;
        }
        for (name, v) in b.counters() {
            assert_eq!(out.stats.get(name), v, "{pattern}: counter {name} after a warm-up of {warm}");
        }
        assert_eq!(out.measured.instructions, out.stats.get("core.instructions"));
        assert!(out.stats.get("walker.walks") > 0 || pattern == Pattern::Sequential);
    }
}
