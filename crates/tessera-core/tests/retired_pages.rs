//! Retired pages in whole runs: same config and seed give byte-identical
//! stats, a fault map breaks THP's 2 MiB pages as the closed form says, and
//! bad fault maps are config errors naming the key (and the file and line).

use tessera_core::config::{load, ConfigSource};
use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};

fn run(overrides: &[&str], seed: u64) -> tessera_core::Result<String> {
    let overrides: Vec<String> = overrides.iter().map(|s| s.to_string()).collect();
    let spec = load(&ConfigSource::Preset("sandy_bridge".into()), &overrides)?;
    let mut src = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 60_000, 1 << 30, 3)).unwrap();
    let stats = tessera_core::run::simulate(&spec, seed, &mut src, &mut |_, _| true)?;
    Ok(serde_json::to_string_pretty(&stats.to_json()).unwrap())
}

fn counter(json: &str, name: &str) -> u64 {
    let v: serde_json::Value = serde_json::from_str(json).unwrap();
    v["counters"][name].as_u64().unwrap_or_else(|| panic!("no counter {name}"))
}

const THP: &str = "physmem.page_size=thp";

#[test]
fn runs_with_retired_pages_are_deterministic() {
    for source in [
        "physmem.retired={ kind = \"uniform\", fraction = 0.005 }",
        "physmem.retired={ kind = \"clustered\", fraction = 0.005, frames_per_fault = 4, stride = 16 }",
    ] {
        let a = run(&[THP, source], 11).unwrap();
        let b = run(&[THP, source], 11).unwrap();
        assert_eq!(a, b, "{source}");
        let c = run(&[THP, source], 12).unwrap();
        assert_ne!(counter(&a, "physmem.retired_frames"), counter(&c, "physmem.retired_frames"), "another seed, another map");
    }
}

#[test]
fn retired_pages_break_2m_pages_as_the_closed_form_says() {
    // 4 GiB: 2048 blocks of 2 MiB, each clean with probability 0.995^512 = 0.0768,
    // so about 157 clean blocks for a 1 GiB footprint (512 blocks).
    let cap = "physmem.capacity=\"4GiB\"";
    let clean = run(&[THP, cap], 5).unwrap();
    let retired = run(&[THP, cap, "physmem.retired={ kind = \"uniform\", fraction = 0.005 }"], 5).unwrap();
    let blocks = counter(&retired, "physmem.retired.clean_blocks_2m") as f64;
    let exact = 2048.0 * 0.995f64.powi(512);
    assert!((blocks - exact).abs() < 4.0 * (exact * (1.0 - 0.0768)).sqrt(), "{blocks} clean blocks, expected {exact}");
    let frames = counter(&retired, "physmem.retired_frames") as f64;
    let capacity = counter(&retired, "physmem.capacity_frames") as f64;
    assert!((frames / capacity - 0.005).abs() < 0.0005);
    // The same stream: THP maps far fewer 2 MiB pages and falls back to 4 KiB.
    let (p2_clean, p2_retired) = (counter(&clean, "os.pages_2m"), counter(&retired, "os.pages_2m"));
    assert!(p2_retired as f64 <= blocks && p2_retired < p2_clean, "{p2_retired} 2 MiB pages with retired frames, {p2_clean} without");
    assert!(counter(&retired, "os.pages_4k") > 0);
    assert!(!clean.contains("physmem.retired"), "no fault map: no retired stats");
}

#[test]
fn bad_fault_maps_are_config_errors_naming_the_key() {
    let err = |o: &str| load(&ConfigSource::Preset("sandy_bridge".into()), &[o.to_string()]).unwrap_err().to_string();
    let e = err("physmem.retired={ kind = \"uniform\", fraction = 1.0 }");
    assert!(e.contains("physmem.retired.fraction"), "{e}");
    let e = err("physmem.retired={ kind = \"poisson\" }");
    assert!(e.contains("physmem.retired.kind") && e.contains("allowed: none, uniform, clustered, file"), "{e}");
    let e = err("physmem.retired={ kind = \"uniform\", fraction = 0.1, seed = 3 }");
    assert!(e.contains("physmem.retired") && e.contains("seed"), "{e}");
    let dir = std::env::temp_dir().join(format!("tessera-retired-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let map = dir.join("faults.txt");
    std::fs::write(&map, "# faulty frames\n12\n0x20\nseven\n").unwrap();
    let e = err(&format!("physmem.retired={{ kind = \"file\", path = \"{}\" }}", map.display()));
    assert!(e.contains("physmem.retired.path") && e.contains("faults.txt: line 4"), "{e}");
    std::fs::write(&map, "12\n99999999999\n").unwrap();
    let e = err(&format!("physmem.retired={{ kind = \"file\", path = \"{}\" }}", map.display()));
    assert!(e.contains("line 2") && e.contains("beyond physmem.capacity"), "{e}");
    std::fs::write(&map, "12\n0x20 # two frames\n").unwrap();
    let ok = run(&[&format!("physmem.retired={{ kind = \"file\", path = \"{}\" }}", map.display())], 1).unwrap();
    assert_eq!(counter(&ok, "physmem.retired_frames"), 2);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_map_that_leaves_no_room_for_page_tables_is_a_config_error_not_a_panic() {
    let e = run(&["physmem.capacity=\"2MiB\"", "physmem.retired={ kind = \"uniform\", fraction = 0.9999 }"], 1).unwrap_err();
    let s = e.to_string();
    assert!(s.contains("physmem.retired") && s.contains("page tables need"), "{s}");
}
