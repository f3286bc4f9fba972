//! Simulator throughput on the standard synthetic streams (accesses/s).
//! `tessera bench` runs the same streams at 50 M accesses for the README figures;
//! these criterion benches use shorter streams so a run takes a few minutes.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use tessera_core::config::{load, ConfigSource};
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};

const ACCESSES: u64 = 4_000_000;
const FOOTPRINT: u64 = 8 << 30;

fn throughput(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulate");
    g.sample_size(10);
    g.throughput(Throughput::Elements(ACCESSES));
    for preset in ["tlb_only", "sandy_bridge"] {
        let spec = load(&ConfigSource::Preset(preset.into()), &[]).unwrap();
        for (name, pattern) in [("uniform", Pattern::Uniform), ("sequential", Pattern::Sequential), ("hotcold", Pattern::HotCold)] {
            g.bench_with_input(BenchmarkId::new(preset, name), &pattern, |b, &p| {
                b.iter(|| {
                    let mut src = Synthetic::new(SyntheticSpec::new(p, ACCESSES, FOOTPRINT, 1)).unwrap();
                    tessera_core::run::bench(&spec, &mut src).unwrap()
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, throughput);
criterion_main!(benches);
