//! Small command-line front end to `tessera_core::trace`, used to build
//! `examples/traces/sort.tess` and to measure reader/generator speed by hand.
//!
//! ```text
//! cargo run --release -p tessera-core --example trace_tool -- convert IN OUT native|lackey
//! cargo run --release -p tessera-core --example trace_tool -- info TRACE
//! cargo run --release -p tessera-core --example trace_tool -- read TRACE          # time a full read
//! cargo run --release -p tessera-core --example trace_tool -- synthetic PATTERN N [FOOTPRINT]  # time generation
//! cargo run --release -p tessera-core --example trace_tool -- write-synthetic PATTERN N OUT    # synthetic → native
//! cargo run --release -p tessera-core --example trace_tool -- record lackey|qemu[-noifetch] OUT PROGRAM ARGS...
//! ```

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use tessera_core::access::{AccessBatch, BATCH_LEN};
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
use tessera_core::stream::AccessSource;
use tessera_core::trace::{self, record, Format, NativeWriter};
use tessera_core::Result;

fn drain(src: &mut dyn AccessSource) -> Result<(u64, u64)> {
    let mut b = AccessBatch::with_capacity(BATCH_LEN);
    let (mut n, mut x) = (0u64, 0u64);
    while src.next_batch(&mut b)? {
        n += b.len() as u64;
        // Touch the data so the work cannot be optimised away.
        x = x
            .wrapping_add(b.vaddr[b.len() - 1])
            .wrapping_add(b.ins_gap[0] as u64);
    }
    Ok((n, x))
}

fn run(args: &[String]) -> Result<()> {
    let arg = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
    match arg(0) {
        "convert" => {
            let s = trace::convert(Path::new(arg(1)), Path::new(arg(2)), Format::parse(arg(3))?)?;
            println!("{}", serde_json::to_string_pretty(&s).unwrap());
        }
        "info" => {
            let s = trace::info(Path::new(arg(1)))?;
            println!("{}", serde_json::to_string_pretty(&s).unwrap());
        }
        "read" => {
            let t = Instant::now();
            let mut src = trace::open(Path::new(arg(1)))?;
            let (n, x) = drain(src.as_mut())?;
            let s = t.elapsed().as_secs_f64();
            println!(
                "{n} records in {s:.3} s = {:.1} M records/s (check {x:x})",
                n as f64 / s / 1e6
            );
        }
        "synthetic" => {
            let n: u64 = arg(2).parse().unwrap_or(100_000_000);
            let fp: u64 = arg(3).parse().unwrap_or(1 << 30);
            // Best of 5: the figure of interest is the generator's own speed,
            // not that of a loaded machine.
            let mut best = f64::MAX;
            let mut x = 0;
            for _ in 0..5 {
                let mut src =
                    Synthetic::new(SyntheticSpec::new(Pattern::parse(arg(1))?, n, fp, 1))?;
                let t = Instant::now();
                x = drain(&mut src)?.1;
                best = best.min(t.elapsed().as_secs_f64());
            }
            println!(
                "{n} accesses in {best:.3} s (best of 5) = {:.1} M accesses/s (check {x:x})",
                n as f64 / best / 1e6
            );
        }
        "write-synthetic" => {
            let n: u64 = arg(2).parse().unwrap_or(10_000_000);
            let spec = SyntheticSpec::new(Pattern::parse(arg(1))?, n, 1 << 30, 1);
            let mut src = Synthetic::new(spec.clone())?;
            let mut w =
                NativeWriter::create(Path::new(arg(3)), serde_json::to_value(&spec).unwrap())?;
            let mut b = AccessBatch::with_capacity(BATCH_LEN);
            let t = Instant::now();
            while src.next_batch(&mut b)? {
                w.write_batch(&b)?;
            }
            let s = w.finish()?;
            println!(
                "{} ({:.3} s)",
                serde_json::to_string(&s).unwrap(),
                t.elapsed().as_secs_f64()
            );
        }
        "record" => {
            let (backend, ifetch) = match arg(1).strip_suffix("-noifetch") {
                Some(b) => (b, false),
                None => (arg(1), true),
            };
            let mut o = record::RecordOptions::new(
                record::Backend::parse(backend)?,
                args[3..].iter().map(Into::into).collect(),
            );
            o.ifetch = ifetch;
            let s = record::record(Path::new(arg(2)), &o, &mut |m| eprintln!("{m}"), &mut |_, _| true)?;
            println!("{}", serde_json::to_string_pretty(&s).unwrap());
        }
        _ => {
            eprintln!("usage: trace_tool convert IN OUT native|lackey | info T | read T | synthetic PATTERN N [FOOTPRINT] | write-synthetic PATTERN N OUT | record BACKEND OUT PROGRAM ARGS...");
            std::process::exit(2);
        }
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
