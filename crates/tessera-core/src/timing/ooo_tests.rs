//! The out-of-order model against its definition (the reference, on random
//! streams and configurations) and against hand-computed analytic cases.

use proptest::prelude::*;

use super::ooo::{MemOp, OooModel, OooParams, OooTicks, Q};
use super::ooo_reference::{simulate, Event, Outcome};

fn params(window: u32, width: u32, lsq: u32, mshrs: u32, walkers: u32, hidden: u32) -> OooParams {
    OooParams { window, dispatch: width, retire: width, lsq, mshrs, walkers, walk_at_retire: false, c: Q, hidden }
}

fn fast(p: OooParams, events: &[Event]) -> Outcome {
    let mut m = OooModel::new(p);
    for ev in events {
        match *ev {
            Event::Fetch { gap, tlb, walk } => m.fetch(gap, tlb, walk),
            Event::Op { gap, op } => m.op(gap, &op),
            Event::Plain(n) => m.advance(n),
        }
    }
    Outcome { end: m.end(), ticks: m.ticks }
}

fn cycles(o: &Outcome) -> u64 {
    o.end.div_ceil(Q)
}

fn load(gap: u32, data: u32, l1_miss: bool) -> Event {
    Event::Op { gap, op: MemOp { data, l1_miss, ..MemOp::default() } }
}

fn arb_params() -> impl Strategy<Value = OooParams> {
    (1u32..48, 1u32..6, 1u32..6, 1u32..40, 1u32..6, 1u32..4, any::<bool>(), prop::sample::select(vec![Q / 2, Q, 2 * Q, 300]), 0u32..6)
        .prop_map(|(window, d, r, lsq, mshrs, walkers, walk_at_retire, c, hidden)| OooParams {
            window: window.max(d).max(r),
            dispatch: d,
            retire: r,
            lsq,
            mshrs,
            walkers,
            walk_at_retire,
            c,
            hidden,
        })
}

fn arb_op() -> impl Strategy<Value = MemOp> {
    (0u32..12, prop::option::weighted(0.2, 0u32..150), 0u32..250, any::<bool>(), prop::bool::weighted(0.25), prop::option::weighted(0.3, 1u32..60)).prop_map(
        |(tlb, walk, data, l1_miss, store, dep)| MemOp { tlb, walk, data, l1_miss, store, dep: dep.unwrap_or(0) },
    )
}

fn arb_event() -> impl Strategy<Value = Event> {
    prop_oneof![
        6 => (0u32..5, arb_op()).prop_map(|(gap, op)| Event::Op { gap, op }),
        2 => (0u32..3, 0u32..10, prop::option::weighted(0.2, 0u32..120)).prop_map(|(gap, tlb, walk)| Event::Fetch { gap, tlb, walk }),
        1 => (0u64..30).prop_map(Event::Plain),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 600, ..ProptestConfig::default() })]

    #[test]
    fn fast_model_equals_the_reference(p in arb_params(), events in prop::collection::vec(arb_event(), 0..400)) {
        let want = simulate(p, &events);
        let got = fast(p, &events);
        prop_assert_eq!(got, want);
    }

    /// With one instruction in flight nothing overlaps: the interval model's
    /// cycles and stalls (loads and fetches of whole instructions; stores
    /// do not wait for data under ooo).
    #[test]
    fn a_window_of_one_is_the_interval_model(
        hidden in 0u32..6,
        c in 1u64..4,
        recs in prop::collection::vec((1u32..5, 0u32..12, prop::option::of(0u32..150), 0u32..250, any::<bool>(), any::<bool>(), any::<bool>()), 0..300),
    ) {
        let p = OooParams { c: c * Q, ..params(1, 1, 1, 1, 1, hidden) };
        let (mut instructions, mut trans, mut data) = (0u64, 0u64, 0u64);
        let mut events = Vec::new();
        for (gap, tlb, walk, lat, miss, fetch, crossing) in recs {
            instructions += gap as u64;
            trans += tlb as u64 + walk.unwrap_or(0) as u64;
            if fetch {
                events.push(Event::Fetch { gap, tlb, walk });
                continue;
            }
            data += lat.saturating_sub(hidden) as u64;
            events.push(Event::Op { gap, op: MemOp { tlb, walk, data: lat, l1_miss: miss, ..MemOp::default() } });
            if crossing {
                // The second page of a split access: serial with the first.
                trans += tlb as u64;
                data += lat.saturating_sub(hidden) as u64;
                events.push(Event::Op { gap: 0, op: MemOp { tlb, walk: None, data: lat, l1_miss: miss, ..MemOp::default() } });
            }
        }
        let o = fast(p, &events);
        prop_assert_eq!(o, simulate(p, &events));
        prop_assert_eq!(cycles(&o), instructions * c + trans + data);
        prop_assert_eq!(o.ticks.translation_stall, trans * Q);
        prop_assert_eq!(o.ticks.data_stall, data * Q);
    }
}

#[test]
fn a_dependent_chain_of_dram_misses_costs_every_latency() {
    // 50 loads, each the next instruction and depending on the one before,
    // each missing to DRAM (200 cycles, nothing hidden): no overlap at all.
    let p = params(168, 4, 64, 10, 1, 0);
    let events: Vec<Event> =
        (0..50).map(|k| Event::Op { gap: 1, op: MemOp { data: 200, l1_miss: true, dep: (k > 0) as u32, ..MemOp::default() } }).collect();
    let o = fast(p, &events);
    assert_eq!(o, simulate(p, &events));
    assert_eq!(cycles(&o), 50 * (200 + 1));
    // Each load after the first is the oldest from the end of the one it
    // waits for, its own cycle included: nothing overlaps it.
    assert_eq!(o.ticks.data_stall, (200 + 49 * 201) * Q);
    assert_eq!(o.ticks.mshr_wait, 0);
}

#[test]
fn independent_misses_overlap_up_to_the_mshrs() {
    // 40 independent DRAM misses, one dispatched per cycle, 10 MSHRs: four
    // waves of 200 cycles; the last load dispatched 9 cycles into its wave
    // and needs its own cycle: 4 × 200 + 9 + 1.
    let p = params(168, 4, 64, 10, 1, 0);
    let events: Vec<Event> = (0..40).map(|_| load(1, 200, true)).collect();
    let o = fast(p, &events);
    assert_eq!(o, simulate(p, &events));
    assert_eq!(cycles(&o), 4 * 200 + 9 + 1);
    // Load k of wave g ≥ 1 was ready at cycle k and starts at 200·g + k mod 10.
    assert_eq!(o.ticks.mshr_wait, 10 * (190 + 380 + 570) * Q);
    // One MSHR: every miss in turn.
    let one = params(168, 4, 64, 1, 1, 0);
    assert_eq!(cycles(&fast(one, &events)), 40 * 200 + 1);
}

#[test]
fn walkers_bound_overlapping_walks() {
    // 12 independent loads hitting the L1D (its 4 cycles hidden in the CPI),
    // each walking for 100 cycles.
    let events: Vec<Event> =
        (0..12).map(|_| Event::Op { gap: 1, op: MemOp { walk: Some(100), data: 4, ..MemOp::default() } }).collect();
    let one = fast(params(168, 4, 64, 10, 1, 4), &events);
    assert_eq!(cycles(&one), 12 * 100 + 1);
    assert_eq!(one.ticks.walker_busy, 1200 * Q);
    // The oldest op is always walking, or waiting for its walk to end.
    assert_eq!(one.ticks.walk_oldest, 1200 * Q);
    assert_eq!(one.ticks.translation_stall, 1200 * Q);
    assert_eq!(one.ticks.data_stall, 0);
    // Four walkers: three waves, the last walk starting 3 cycles into its wave.
    let four = fast(params(168, 4, 64, 10, 4, 4), &events);
    assert_eq!(cycles(&four), 3 * 100 + 3 + 1);
    // A non-speculative walker waits until its op is the oldest: serial again.
    let at_retire = OooParams { walk_at_retire: true, ..params(168, 4, 64, 10, 4, 4) };
    let o = fast(at_retire, &events);
    assert_eq!(o, simulate(at_retire, &events));
    assert_eq!(cycles(&o), 12 * (100 + 1));
}

#[test]
fn a_full_window_holds_dispatch_back() {
    // A window of 4 behind one DRAM miss: instructions 1..3 dispatch, the
    // 4th waits for the miss to retire.
    let p = params(4, 4, 64, 10, 1, 0);
    let events = [load(1, 200, true), Event::Plain(10)];
    let o = fast(p, &events);
    assert_eq!(o, simulate(p, &events));
    // The miss retires at 201; instructions 4..10 dispatch from then on, one per cycle.
    assert_eq!(cycles(&o), 201 + 7);
    assert_eq!(o.ticks.rob_full, (201 - 4) * Q);
}

#[test]
fn stores_do_not_wait_for_their_data() {
    let p = params(168, 4, 64, 10, 1, 0);
    let store = Event::Op { gap: 1, op: MemOp { data: 200, l1_miss: true, store: true, ..MemOp::default() } };
    let o = fast(p, &[store, store]);
    assert_eq!(cycles(&o), 2);
    assert_eq!(o.ticks, OooTicks::default());
}

#[test]
fn a_fetch_walk_stalls_the_front_end() {
    // A fetch walking for 50 cycles delays its instruction and all after it.
    let p = params(168, 4, 64, 10, 1, 0);
    let events = [Event::Plain(3), Event::Fetch { gap: 1, tlb: 0, walk: Some(50) }, Event::Plain(2)];
    let o = fast(p, &events);
    assert_eq!(o, simulate(p, &events));
    // Instructions 0..2 retire by cycle 3; the fetch starts at 3 and ends at 53.
    assert_eq!(cycles(&o), 53 + 3);
    assert_eq!(o.ticks.translation_stall, 50 * Q);
    assert_eq!(o.ticks.walk_oldest, 50 * Q);
}
