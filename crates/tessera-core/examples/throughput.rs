//! Profiling harness: `cargo run --release --example throughput -- PRESET PATTERN ACCESSES [KEY=VALUE ...]`
//! (e.g. `tlb_only uniform 50000000`, or with config overrides such as
//! `'mmu.shadow.m={ entries = 1024, ways = 4, organisation = "mosaic" }'`);
//! run it under `perf record` or callgrind to profile the hot path. The
//! README figures come from `tessera bench`, which calls the same `run::bench`.
//! PATTERN may be a trace file instead (then ACCESSES is ignored).
//! `FOOTPRINT=<bytes>` sets the stream's footprint; `SET` holds more config
//! overrides separated by `;` (e.g. `SET='physmem.capacity="168MiB";os.swap={capacity="1GiB"}'`).

use tessera_core::config::{load, ConfigSource};
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
use tessera_core::stream::AccessSource;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let preset = args.get(1).map(String::as_str).unwrap_or("tlb_only");
    let pattern = args.get(2).map(String::as_str).unwrap_or("uniform");
    let accesses: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(50_000_000);
    let mut overrides: Vec<String> =
        std::env::var("SET").map(|s| s.split(';').filter(|o| !o.is_empty()).map(String::from).collect()).unwrap_or_default();
    overrides.extend(args.iter().skip(4).cloned());
    let spec = load(&ConfigSource::Preset(preset.into()), &overrides).expect("preset and overrides");
    // A path instead of a pattern runs that trace (all of it; ACCESSES is ignored).
    let mut src: Box<dyn AccessSource> = if std::path::Path::new(pattern).is_file() {
        tessera_core::trace::open(std::path::Path::new(pattern)).expect("trace")
    } else {
        let pattern = Pattern::parse(pattern).expect("pattern: uniform, sequential or hotcold, or a trace file");
        let footprint = std::env::var("FOOTPRINT").ok().and_then(|s| s.parse().ok()).unwrap_or(8u64 << 30);
        Box::new(Synthetic::new(SyntheticSpec::new(pattern, accesses, footprint, 1)).expect("stream"))
    };
    let r = tessera_core::run::bench(&spec, src.as_mut()).expect("run");
    println!("{} {} {:.1} M accesses/s ({} accesses in {:.2} s)", r.machine, r.source, r.accesses_per_sec / 1e6, r.accesses, r.seconds);
}
