//! Golden stats: every CPU preset, with 4 KiB pages and with THP, on a slice
//! of a real recorded program and on a synthetic stream; every GPU preset on
//! two built-in GPU kernels run together. The checked-in snapshots in
//! `tests/golden/` catch any change to what the model computes (an optimisation
//! must leave them byte-identical). After an intended model change, regenerate
//! with `UPDATE_GOLDEN=1 cargo test -p tessera-core --test golden` and review the diff.

use std::path::{Path, PathBuf};

use tessera_core::config::{load, presets, ConfigSource};
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
use tessera_core::stream::AccessSource;

fn golden_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden")
}

fn run(preset: &str, policy: &str, source: &mut dyn AccessSource) -> String {
    let spec = load(&ConfigSource::Preset(preset.into()), &[format!("physmem.page_size={policy}")]).unwrap();
    let stats = tessera_core::run::simulate(&spec, 42, source, &mut |_, _| true).unwrap();
    serde_json::to_string_pretty(&stats.to_json()).unwrap() + "\n"
}

/// The presets of CPU machines (GPU machines run GPU applications).
fn cpu_presets() -> impl Iterator<Item = &'static tessera_core::config::Preset> {
    presets().iter().filter(|p| load(&ConfigSource::Preset(p.name.into()), &[]).unwrap().machine.kind != "gpu")
}

fn check(name: &str, got: &str) {
    let path = golden_dir().join(format!("{name}.json"));
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(golden_dir()).unwrap();
        std::fs::write(&path, got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e} (run with UPDATE_GOLDEN=1)", path.display()));
    assert!(want == got, "stats of {name} differ from {}", path.display());
}

#[test]
fn presets_on_a_recorded_program_match_their_snapshots() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sort-head.lackey");
    for p in cpu_presets() {
        for policy in ["base_only", "thp"] {
            let mut src = tessera_core::trace::open(&trace).unwrap();
            check(&format!("sort-head.{}.{policy}", p.name), &run(p.name, policy, src.as_mut()));
        }
    }
}

#[test]
fn presets_on_a_synthetic_stream_match_their_snapshots() {
    for p in cpu_presets() {
        for policy in ["base_only", "thp"] {
            let mut src = Synthetic::new(SyntheticSpec::new(Pattern::HotCold, 300_000, 1 << 30, 7)).unwrap();
            check(&format!("hotcold.{}.{policy}", p.name), &run(p.name, policy, &mut src));
        }
    }
}

/// The out-of-order timing model (`timing.kind = "ooo"`) on every CPU preset
/// that has a timed core, with 4 KiB pages: on the recorded program (no
/// dependencies: the stated assumption of independent loads) and on a
/// built-in BFS whose loads carry their dependencies. Their counts are the
/// interval snapshots' (a machine test checks that); these pin the cycles.
#[test]
fn presets_under_the_ooo_model_match_their_snapshots() {
    let trace = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sort-head.lackey");
    let ooo = |preset: &str, src: &mut dyn AccessSource| {
        let o = ["physmem.page_size=base_only".to_string(), "timing.kind=\"ooo\"".to_string()];
        let spec = load(&ConfigSource::Preset(preset.into()), &o).unwrap();
        let stats = tessera_core::run::simulate(&spec, 42, src, &mut |_, _| true).unwrap();
        serde_json::to_string_pretty(&stats.to_json()).unwrap() + "\n"
    };
    let timed: Vec<_> = cpu_presets().filter(|p| load(&ConfigSource::Preset(p.name.into()), &[]).unwrap().timing.enabled).collect();
    assert!(timed.len() >= 3);
    for p in timed {
        let mut src = tessera_core::trace::open(&trace).unwrap();
        check(&format!("ooo.sort-head.{}", p.name), &ooo(p.name, src.as_mut()));
        let params = [("scale".to_string(), "11".to_string())].into_iter().collect();
        let mut bfs = tessera_core::workload::WorkloadSource::start("graph500-bfs", &params, 42).unwrap();
        check(&format!("ooo.graph500-bfs.{}", p.name), &ooo(p.name, &mut bfs));
    }
}

#[test]
fn gpu_presets_on_two_kernels_match_their_snapshots() {
    use tessera_core::machine::gpu::{run_apps, GpuApp};
    let gpus: Vec<_> = presets().iter().filter(|p| p.toml.contains("kind = \"gpu\"")).collect();
    assert!(gpus.len() >= 2);
    for p in gpus {
        // 4 KiB pages, and the preset's own page sizes with large pages where it allows them.
        for policy in ["base_only", "large"] {
            let mut o = vec!["gpu.sms=4".to_string()];
            if policy == "base_only" {
                o.push("physmem.page_size=base_only".into());
            } else if !p.toml.contains("thp") {
                o.push("physmem.page_size=thp".into());
            }
            let spec = load(&ConfigSource::Preset(p.name.into()), &o).unwrap();
            let params = |k: &str, v: &str| [(k.to_string(), v.to_string())].into_iter().collect();
            let apps = vec![
                GpuApp::builtin("bfs", &params("scale", "9"), 42).unwrap(),
                GpuApp::builtin("spmv_csr", &params("scale", "9"), 42).unwrap(),
            ];
            let stats = run_apps(&spec, apps, 42).unwrap().stats();
            check(&format!("gpu.{}.{policy}", p.name), &(serde_json::to_string_pretty(&stats.to_json()).unwrap() + "\n"));
        }
    }
}

#[test]
fn mosaic_on_two_kernels_matches_its_snapshots() {
    use tessera_core::machine::gpu::{run_apps, GpuApp};
    // Mosaic as its preset says, under the stress test with compaction, over
    // 64 KiB base pages, and with buffers freed (compaction at deallocation).
    let stress: &[&str] = &[
        "gpu.sms=4",
        "gpu.paging=\"resident\"",
        "physmem.capacity=\"256MiB\"",
        "physmem.fragmentation=1.0",
        "physmem.fragmentation_occupancy=0.5",
        "os.cac={ copy = \"bulk\" }",
    ];
    let resident: &[&str] = &["gpu.sms=4", "gpu.paging=\"resident\""];
    let dealloc: &[&str] = &["gpu.sms=4", "gpu.paging=\"resident\"", "os.cac={ trigger = \"deallocation\", copy = \"bulk\" }"];
    let cases: [(&str, &str, &[&str], [&str; 2]); 4] = [
        ("mosaic", "mosaic_gpu_mosaic", resident, ["", ""]),
        ("mosaic_cac", "mosaic_gpu_mosaic", stress, ["", ""]),
        ("mosaic_64k", "mosaic_gpu_mosaic_64k", resident, ["", ""]),
        ("mosaic_dealloc", "mosaic_gpu_mosaic", dealloc, ["*@end", "val@1"]),
    ];
    for (name, preset, over, frees) in cases {
        let o: Vec<String> = over.iter().map(|s| s.to_string()).collect();
        let spec = load(&ConfigSource::Preset(preset.into()), &o).unwrap();
        let params = |k: &str, v: &str, free: &str| {
            let mut p: std::collections::BTreeMap<String, String> = [(k.to_string(), v.to_string())].into_iter().collect();
            if !free.is_empty() {
                p.insert("free".into(), free.into());
            }
            p
        };
        let apps = vec![
            GpuApp::builtin("gups", &params("table", "4MiB", frees[0]), 42).unwrap(),
            GpuApp::builtin("spmv_csr", &params("scale", "9", frees[1]), 42).unwrap(),
        ];
        let stats = run_apps(&spec, apps, 42).unwrap().stats();
        assert!(stats.get("os.coalescer.coalesced") > 0, "{name}: the snapshot should cover coalesced pages");
        check(&format!("gpu.{name}"), &(serde_json::to_string_pretty(&stats.to_json()).unwrap() + "\n"));
    }
}

#[test]
fn a_run_is_deterministic() {
    let mk = || Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 100_000, 1 << 30, 3)).unwrap();
    let a = run("sandy_bridge", "thp", &mut mk());
    let b = run("sandy_bridge", "thp", &mut mk());
    assert_eq!(a, b);
}
