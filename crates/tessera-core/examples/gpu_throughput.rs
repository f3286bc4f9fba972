//! Warp instructions per second of the GPU machine on one built-in kernel:
//! `gpu_throughput [PRESET] [KERNEL] [key=value ...] [-- override ...]`.
use std::collections::BTreeMap;
use std::time::Instant;

use tessera_core::config::{load, ConfigSource};
use tessera_core::machine::gpu::{run_apps, GpuApp};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (ours, overrides) = match args.iter().position(|a| a == "--") {
        Some(i) => (args[..i].to_vec(), args[i + 1..].to_vec()),
        None => (args.clone(), Vec::new()),
    };
    let preset = ours.first().cloned().unwrap_or_else(|| "mosaic_gpu".into());
    let kernel = ours.get(1).cloned().unwrap_or_else(|| "bfs".into());
    let params: BTreeMap<String, String> =
        ours.iter().skip(2).filter_map(|kv| kv.split_once('=')).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let spec = load(&ConfigSource::Preset(preset), &overrides).expect("config");
    let t0 = Instant::now();
    let app = GpuApp::builtin(&kernel, &params, 1).expect("kernel");
    let gen = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let m = run_apps(&spec, vec![app], 1).expect("run");
    let secs = t1.elapsed().as_secs_f64();
    let st = m.stats();
    let wi = st.get("gpu.apps.0.warp_instructions") as f64;
    let ti = st.get("gpu.apps.0.thread_instructions") as f64;
    println!(
        "{kernel}: {wi:.0} warp insts, {} cycles, {:.2} s (+{gen:.2} s generation): {:.2} M warp insts/s, {:.1} M thread insts/s, {:.2} M cycles/s; walks {}, faults {}",
        m.cycles(),
        secs,
        wi / secs / 1e6,
        ti / secs / 1e6,
        m.cycles() as f64 / secs / 1e6,
        st.get("gpu.walker.walks"),
        st.get("gpu.paging.faults"),
    );
}
