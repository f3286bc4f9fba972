//! Replays the committed fuzz corpora (`fuzz/corpus/<target>/`) and the
//! inputs that once crashed a reader (`fuzz/regressions/<target>/`) through
//! the same harnesses the cargo-fuzz targets call, so a normal
//! `cargo test` on stable Rust keeps every one of them passing. A missing or
//! empty corpus fails: it would make this test pass without testing anything.
//!
//! `cargo test -p tessera-core --release --test fuzz_corpus -- --ignored`
//! rewrites the seed inputs (`fuzz/seeds/<target>/`) from which the corpora
//! were grown; see CONTRIBUTING.md.

use std::io::Write;
use std::path::{Path, PathBuf};

use tessera_core::access::{AccessBatch, AccessKind};
use tessera_core::stream::AccessSource;
use tessera_core::trace::fuzzing;
use tessera_core::trace::native::NativeWriter;
use tessera_core::trace::LackeyReader;

type Harness = fn(&[u8]);

const TARGETS: [(&str, Harness); 3] = [
    ("lackey", fuzzing::lackey),
    ("champsim", fuzzing::champsim),
    ("native", fuzzing::native),
];

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .collect();
    v.sort();
    v
}

/// Run every file of `dir` through `h`, naming the file if it panics.
fn replay(dir: &Path, h: Harness) -> usize {
    let files = files_in(dir);
    for f in &files {
        let data = std::fs::read(f).unwrap();
        if std::panic::catch_unwind(|| h(&data)).is_err() {
            panic!(
                "{} breaks the reader contract (see the panic above)",
                f.display()
            );
        }
    }
    files.len()
}

#[test]
fn corpora_and_past_crashes_replay_cleanly() {
    for (target, h) in TARGETS {
        let dir = fuzz_dir().join("corpus").join(target);
        let n = replay(&dir, h);
        assert!(n > 0, "{}: empty corpus", dir.display());
        // Inputs that once broke a reader (none so far; see CONTRIBUTING.md).
        let dir = fuzz_dir().join("regressions").join(target);
        if dir.is_dir() {
            replay(&dir, h);
        }
    }
}

#[test]
fn seeds_replay_cleanly() {
    for (target, h) in TARGETS {
        let dir = fuzz_dir().join("seeds").join(target);
        assert!(replay(&dir, h) > 0, "{}: no seeds", dir.display());
    }
}

/// Writes `fuzz/seeds/`: small valid traces of each format and a few
/// near-misses, cut from the project's real traces where possible.
#[test]
#[ignore = "rewrites fuzz/seeds; run by hand"]
fn write_seeds() {
    let seeds = fuzz_dir().join("seeds");
    let put = |target: &str, name: &str, bytes: &[u8]| {
        let d = seeds.join(target);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join(name), bytes).unwrap();
    };

    // Lackey: the head of a real log (Valgrind banner and first records),
    // records from its middle, and every line shape the reader accepts.
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sort-head.lackey"),
    )
    .unwrap();
    let lines: Vec<&str> = text.lines().collect();
    put("lackey", "sort-head", lines[..24].join("\n").as_bytes());
    put(
        "lackey",
        "sort-middle",
        (lines[400..440].join("\n") + "\n").as_bytes(),
    );
    put(
        "lackey",
        "shapes",
        b"==1== x\n\nI  0401B7A7,4\r\n L 1fff0006c0,8\n S 10,255\n M 04033e06,1\n   \t\nI  00000000,0\nI  ffffffffffffffff,16\n M 7,3",
    );

    // Native: the same records written by the real writer, with and
    // without metadata, an empty trace, and the head of the shipped example.
    let recs = read_lackey(&text);
    let tmp = std::env::temp_dir().join(format!("tessera-seeds-{}", std::process::id()));
    std::fs::create_dir_all(&tmp).unwrap();
    let native = |recs: &[(u32, u64, AccessKind, u8, u16)], meta| {
        let p = tmp.join("s.tess");
        let mut w = NativeWriter::create(&p, meta).unwrap();
        let mut b = AccessBatch::with_capacity(recs.len());
        for &(g, a, k, s, asid) in recs {
            b.push(g, a, k, s, asid);
        }
        w.write_batch(&b).unwrap();
        w.finish().unwrap();
        std::fs::read(&p).unwrap()
    };
    put(
        "native",
        "sort-60",
        &native(&recs[..60], serde_json::json!({"source_format": "lackey"})),
    );
    put(
        "native",
        "three",
        &native(
            &[
                (1, 0x1000, AccessKind::IFetch, 4, 0),
                (0, 0x2ff8, AccessKind::Store, 16, 3),
                (7, u64::MAX, AccessKind::Load, 0, 65535),
            ],
            serde_json::Value::Null,
        ),
    );
    put("native", "empty", &native(&[], serde_json::Value::Null));
    let example = std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces/sort.tess"),
    )
    .unwrap();
    put("native", "sort-tess-head", &example[..512]);
    std::fs::remove_dir_all(&tmp).unwrap();

    // ChampSim: records made from the lackey accesses (an instruction with
    // up to 4 loads and 2 stores), in each compression, one of them in two
    // streams.
    let mut raw = Vec::new();
    for (i, chunk) in recs.chunks(3).take(24).enumerate() {
        let mut r = [0u8; 64];
        r[0..8].copy_from_slice(&(0x401000 + 4 * i as u64).to_le_bytes());
        r[8] = (i % 2) as u8;
        r[9] = (i % 4 == 1) as u8;
        r[10..16].copy_from_slice(&[7, 25, 6, 26, 1, 2]);
        for (k, rec) in chunk.iter().enumerate() {
            let slot = if rec.2 == AccessKind::Store {
                16 + 8 * (k % 2)
            } else {
                32 + 8 * k
            };
            r[slot..slot + 8].copy_from_slice(&rec.1.to_le_bytes());
        }
        raw.extend_from_slice(&r);
    }
    let mut xz = liblzma::write::XzEncoder::new(Vec::new(), 6);
    xz.write_all(&raw).unwrap();
    put("champsim", "sort.xz", &xz.finish().unwrap());
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&raw).unwrap();
    put("champsim", "sort.gz", &gz.finish().unwrap());
    let mut zst = zstd::encode_all(&raw[..640], 3).unwrap();
    zst.extend(zstd::encode_all(&raw[640..], 3).unwrap());
    put("champsim", "sort.zst", &zst);
    put("champsim", "uncompressed", &raw[..128]);
}

fn read_lackey(text: &str) -> Vec<(u32, u64, AccessKind, u8, u16)> {
    let mut r = LackeyReader::from_reader(text.as_bytes(), "s".into(), "s".into(), 0);
    let mut b = AccessBatch::with_capacity(4096);
    let mut v = Vec::new();
    while r.next_batch(&mut b).unwrap() {
        for i in 0..b.len() {
            v.push((b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i], b.asid[i]));
        }
    }
    v
}
