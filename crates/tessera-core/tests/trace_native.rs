//! Native format: round trips, atomic writing, and clean errors on every kind of
//! damaged file (truncated, bit-flipped, wrong magic or version, missing end).

mod trace_support;

mod trace_native {
    use std::path::Path;

    use serde_json::json;
    use tessera_core::access::{AccessBatch, AccessKind};
    use tessera_core::error::Location;
    use tessera_core::stream::AccessSource;
    use tessera_core::trace::native::{self, NativeReader, NativeWriter};
    use tessera_core::trace::{self, Format};

    use crate::trace_support::*;

    fn write(
        path: &Path,
        recs: &[Rec],
        chunk: usize,
        meta: serde_json::Value,
    ) -> trace::NativeSummary {
        let mut w = NativeWriter::create(path, meta).unwrap();
        for c in recs.chunks(chunk.max(1)) {
            w.write_batch(&batch_of(c)).unwrap();
        }
        w.finish().unwrap()
    }

    /// Read a file expected to be damaged; return its trace error.
    fn read_err(path: &Path) -> (String, Location, String) {
        let r = NativeReader::open(path).and_then(|mut r| drain(&mut r, 4096).map(|_| ()));
        trace_err(r.expect_err("damaged file was accepted"))
    }

    #[test]
    fn round_trip_preserves_every_record_across_blocks_and_batch_sizes() {
        let dir = TempDir::new("native-rt");
        let p = dir.path("t.tess");
        let recs = random_records(150_000, 1);
        let s = write(&p, &recs, 7001, json!({"workload": "random", "n": 150000}));
        assert_eq!(s.records, 150_000);
        assert_eq!(s.instructions, recs.iter().map(|r| r.0 as u64).sum::<u64>());
        assert_eq!(s.blocks, 3);
        assert_eq!(s.bytes, std::fs::metadata(&p).unwrap().len());
        assert_eq!(trace::detect(&p).unwrap(), Format::Native);
        for cap in [1, 333, 8192, 70_000] {
            let mut r = NativeReader::open(&p).unwrap();
            assert_eq!(r.meta(), &json!({"workload": "random", "n": 150000}));
            assert_eq!(r.version(), 1);
            let got = drain(&mut r, cap).unwrap();
            assert_eq!(got, recs, "batch capacity {cap}");
            let (done, total) = r.progress();
            assert_eq!((done, total), (s.bytes, s.bytes));
            assert_eq!(r.describe(), "trace:t.tess");
        }
        assert_eq!(read_path(&p, 8192).unwrap(), recs);
        assert_eq!(dir.files(), vec!["t.tess"]);
    }

    #[test]
    fn empty_trace_round_trips() {
        let dir = TempDir::new("native-empty");
        let p = dir.path("e.tess");
        let s = write(&p, &[], 1, serde_json::Value::Null);
        assert_eq!((s.records, s.instructions, s.blocks), (0, 0, 0));
        assert!(read_path(&p, 16).unwrap().is_empty());
    }

    #[test]
    fn unfinished_writer_leaves_no_file() {
        let dir = TempDir::new("native-drop");
        let p = dir.path("never.tess");
        {
            let mut w = NativeWriter::create(&p, json!({})).unwrap();
            w.write_batch(&batch_of(&random_records(100_000, 2)))
                .unwrap();
            // Dropped without finish.
        }
        assert!(dir.files().is_empty(), "{:?}", dir.files());
    }

    /// A small file of 3 blocks, for the damage tests.
    fn small_file(dir: &TempDir) -> (Vec<u8>, Vec<u64>) {
        let p = dir.path("orig.tess");
        let recs = random_records(70, 3);
        let mut w = NativeWriter::create(&p, json!({"k": 1})).unwrap();
        let mut b = AccessBatch::with_capacity(100);
        for c in recs.chunks(10) {
            b.clear();
            for &(g, a, k, s, asid) in c {
                b.push(g, a, k, s, asid);
            }
            w.write_batch(&b).unwrap();
        }
        w.finish().unwrap();
        let bytes = std::fs::read(&p).unwrap();
        // Offsets of the block headers, found by walking the documented layout.
        let meta_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as u64;
        let mut blocks = Vec::new();
        let mut at = 16 + meta_len;
        loop {
            let i = at as usize;
            let clen = u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap()) as u64;
            let count = u32::from_le_bytes(bytes[i + 4..i + 8].try_into().unwrap());
            blocks.push(at);
            if count == 0 {
                break;
            }
            at += 16 + clen;
        }
        assert_eq!(at + 16 + 24, bytes.len() as u64);
        (bytes, blocks)
    }

    #[test]
    fn truncation_at_any_offset_is_a_clean_error() {
        let dir = TempDir::new("native-trunc");
        let (bytes, blocks) = small_file(&dir);
        let end_block = *blocks.last().unwrap();
        let p = dir.path("cut.tess");
        for cut in 1..bytes.len() {
            std::fs::write(&p, &bytes[..cut]).unwrap();
            let (file, loc, msg) = read_err(&p);
            assert_eq!(file, p.display().to_string());
            let Location::Offset(off) = loc else {
                panic!("{loc:?}")
            };
            assert!(off <= cut as u64, "cut {cut}: offset {off} past the end");
            assert!(msg.contains("truncated"), "cut {cut}: {msg}");
            if cut as u64 == end_block {
                assert!(msg.contains("missing end block"), "{msg}");
                assert_eq!(off, end_block);
            }
        }
    }

    #[test]
    fn flipped_byte_anywhere_is_an_error_never_a_panic() {
        let dir = TempDir::new("native-flip");
        let (bytes, blocks) = small_file(&dir);
        let recs = read_path(&dir.path("orig.tess"), 64).unwrap();
        let meta_len = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
        let p = dir.path("flip.tess");
        let mut silent = 0;
        for i in 0..bytes.len() {
            for bit in [0x01u8, 0x80] {
                let mut b = bytes.clone();
                b[i] ^= bit;
                std::fs::write(&p, &b).unwrap();
                let r = trace::open(&p).and_then(|mut s| drain(s.as_mut(), 64));
                // A flip inside the JSON metadata may still be valid JSON.
                if (16..16 + meta_len).contains(&i) {
                    continue;
                }
                // zstd has don't-care bits (e.g. padding in entropy tables): a
                // flip there decodes to the very same records, which is fine.
                // What must never happen is different records without an error.
                let e = match r {
                    Ok(got) => {
                        assert_eq!(
                            got, recs,
                            "flip {bit:#x} at {i} changed the records silently"
                        );
                        silent += 1;
                        continue;
                    }
                    Err(e) => e,
                };
                let (_, loc, msg) = trace_err(e);
                if i >= 8 {
                    assert!(matches!(loc, Location::Offset(_)), "{loc:?}");
                }
                // Inside a data block's payload: caught by zstd or the checksum.
                let in_payload = blocks
                    .windows(2)
                    .any(|w| (w[0] + 16..w[1]).contains(&(i as u64)));
                if in_payload {
                    assert!(msg.contains("corrupt block"), "flip at {i}: {msg}");
                    let Location::Offset(off) = loc else {
                        unreachable!()
                    };
                    assert!(
                        blocks.contains(&off),
                        "flip at {i}: offset {off} is not a block start"
                    );
                }
            }
        }
        // Only a handful of such don't-care bits exist.
        assert!(
            silent * 50 < bytes.len(),
            "{silent} of {} flips went unnoticed",
            2 * bytes.len()
        );
    }

    #[test]
    fn wrong_magic_is_not_a_tessera_trace() {
        let dir = TempDir::new("native-magic");
        let (mut bytes, _) = small_file(&dir);
        bytes[1] = b'X';
        let p = dir.path("m.tess");
        std::fs::write(&p, &bytes).unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(0));
        assert!(
            msg.starts_with("not a Tessera native trace (no TESS magic at offset 0); the file looks like binary data: first bytes 89 58 45 53"),
            "{msg}"
        );
        // Through `open`, a `.tess` file without the magic still goes to the
        // native reader (not to the lackey reader, as it once did).
        let e = read_path(&p, 16).unwrap_err();
        let (file, loc, msg2) = trace_err(e);
        assert_eq!(file, p.display().to_string());
        assert_eq!((loc, msg2), (Location::Offset(0), msg));
    }

    #[test]
    fn text_in_a_tess_file_is_not_reported_as_lackey() {
        let dir = TempDir::new("native-text");
        let p = dir.path("sort.tess");
        std::fs::write(&p, "\nhello world\x1b[31m\nmore text\n").unwrap();
        assert_eq!(trace::detect(&p).unwrap(), Format::Native);
        let (file, loc, msg) = trace_err(read_path(&p, 16).unwrap_err());
        assert_eq!(file, p.display().to_string());
        assert_eq!(loc, Location::Offset(0));
        // Not text by our definition (an escape character): shown in hex.
        assert!(msg.contains("binary data: first bytes 0a 68 65 6c"), "{msg}");
        std::fs::write(&p, "\nhello world\r\nI  0401b7a7,4\n").unwrap();
        let (_, loc, msg) = trace_err(read_path(&p, 16).unwrap_err());
        assert_eq!(loc, Location::Offset(0));
        assert_eq!(
            msg,
            "not a Tessera native trace (no TESS magic at offset 0); the file looks like text: first line \"hello world\""
        );
        // A lackey log renamed to .tess is refused too: lackey has no magic,
        // so only a name that claims nothing lets text be read as lackey.
        std::fs::write(&p, "I  0401b7a7,4\n").unwrap();
        let (_, _, msg) = trace_err(read_path(&p, 16).unwrap_err());
        assert!(msg.ends_with("first line \"I  0401b7a7,4\""), "{msg}");
        std::fs::write(&p, "").unwrap();
        let (_, loc, msg) = trace_err(read_path(&p, 16).unwrap_err());
        assert_eq!(loc, Location::Offset(0));
        assert!(msg.ends_with("; the file is empty"), "{msg}");
        // A long line is cut, and quotes and control characters are escaped.
        let long = format!("\"{}\"\t{}", "x".repeat(20), "y".repeat(100));
        std::fs::write(&p, &long).unwrap();
        let (_, _, msg) = trace_err(read_path(&p, 16).unwrap_err());
        let excerpt: String = long.chars().take(60).collect::<String>().escape_debug().to_string();
        assert!(msg.ends_with(&format!("first line \"{excerpt}…\"")), "{msg}");
    }

    #[test]
    fn a_native_trace_with_any_name_is_read_by_its_magic() {
        let dir = TempDir::new("native-names");
        let recs = random_records(100, 9);
        for name in ["t.lackey", "t.xz", "t.champsim.gz", "t.txt", "t"] {
            let p = dir.path(name);
            write(&p, &recs, 64, json!(null));
            assert_eq!(trace::detect(&p).unwrap(), Format::Native, "{name}");
            assert_eq!(read_path(&p, 64).unwrap(), recs, "{name}");
        }
    }

    #[test]
    fn unsupported_version_names_the_supported_ones() {
        let dir = TempDir::new("native-version");
        let (mut bytes, _) = small_file(&dir);
        bytes[8] = 3;
        let p = dir.path("v.tess");
        std::fs::write(&p, &bytes).unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(8));
        assert!(
            msg.contains("version 3") && msg.contains("reads version 1, 2"),
            "{msg}"
        );
    }

    #[test]
    fn missing_end_block_is_reported_at_its_offset() {
        let dir = TempDir::new("native-noend");
        let (bytes, blocks) = small_file(&dir);
        let end = *blocks.last().unwrap() as usize;
        let p = dir.path("n.tess");
        std::fs::write(&p, &bytes[..end]).unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(end as u64));
        assert!(msg.contains("truncated: missing end block"), "{msg}");
    }

    #[test]
    fn trailing_bytes_after_the_end_are_an_error() {
        let dir = TempDir::new("native-trailing");
        let (mut bytes, _) = small_file(&dir);
        let len = bytes.len() as u64;
        bytes.push(0);
        let p = dir.path("t.tess");
        std::fs::write(&p, &bytes).unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(len));
        assert!(msg.contains("trailing data"), "{msg}");
    }

    /// Build a file byte by byte from docs/trace-format.md, independently of
    /// the writer.
    fn hand_built(records: &[[u8; 16]], totals: (u64, u64)) -> Vec<u8> {
        hand_built_as(1, 0, &records.iter().map(|r| r.to_vec()).collect::<Vec<_>>(), totals)
    }

    fn hand_built_as(version: u16, flags: u16, records: &[Vec<u8>], totals: (u64, u64)) -> Vec<u8> {
        let meta = br#"{"by":"hand"}"#;
        let mut f = Vec::new();
        f.extend_from_slice(&[0x89, b'T', b'E', b'S', b'S', b'\r', b'\n', 0x1a]);
        f.extend_from_slice(&version.to_le_bytes());
        f.extend_from_slice(&flags.to_le_bytes());
        f.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        f.extend_from_slice(meta);
        let raw: Vec<u8> = records.concat();
        let comp = zstd::bulk::compress(&raw, 1).unwrap();
        f.extend_from_slice(&(comp.len() as u32).to_le_bytes());
        f.extend_from_slice(&(records.len() as u32).to_le_bytes());
        f.extend_from_slice(&xxhash_rust::xxh3::xxh3_64(&raw).to_le_bytes());
        f.extend_from_slice(&comp);
        f.extend_from_slice(&[0u8; 16]);
        f.extend_from_slice(&totals.0.to_le_bytes());
        f.extend_from_slice(&totals.1.to_le_bytes());
        f.extend_from_slice(b"TESS-END");
        f
    }

    fn rec(vaddr: u64, gap: u32, asid: u16, kind: u8, size: u8) -> [u8; 16] {
        let mut r = [0u8; 16];
        r[0..8].copy_from_slice(&vaddr.to_le_bytes());
        r[8..12].copy_from_slice(&gap.to_le_bytes());
        r[12..14].copy_from_slice(&asid.to_le_bytes());
        r[14] = kind;
        r[15] = size;
        r
    }

    #[test]
    fn hand_built_file_from_the_spec_reads_back() {
        let dir = TempDir::new("native-hand");
        let p = dir.path("h.tess");
        std::fs::write(
            &p,
            hand_built(&[rec(0x1000, 1, 3, 2, 4), rec(0x2ff8, 0, 3, 1, 16)], (2, 1)),
        )
        .unwrap();
        assert_eq!(trace::detect(&p).unwrap(), Format::Native);
        let got = read_path(&p, 8).unwrap();
        assert_eq!(
            got,
            vec![
                (1, 0x1000, AccessKind::IFetch, 4, 3),
                (0, 0x2ff8, AccessKind::Store, 16, 3)
            ]
        );
    }

    #[test]
    fn bad_kind_byte_names_the_block() {
        let dir = TempDir::new("native-kind");
        let p = dir.path("k.tess");
        std::fs::write(
            &p,
            hand_built(&[rec(0x1000, 1, 0, 2, 4), rec(0x2000, 0, 0, 7, 8)], (2, 1)),
        )
        .unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(16 + 13));
        assert!(msg.contains("record 1 has bad kind byte 7"), "{msg}");
    }

    #[test]
    fn totals_mismatch_is_an_error() {
        let dir = TempDir::new("native-totals");
        let p = dir.path("t.tess");
        std::fs::write(&p, hand_built(&[rec(0x1000, 1, 0, 2, 4)], (1, 5))).unwrap();
        let (_, _, msg) = read_err(&p);
        assert!(msg.contains("totals mismatch"), "{msg}");
    }

    #[test]
    fn header_constants_match_the_spec() {
        assert_eq!(
            native::MAGIC,
            [0x89, 0x54, 0x45, 0x53, 0x53, 0x0d, 0x0a, 0x1a]
        );
        assert_eq!(&native::END_MAGIC, b"TESS-END");
        assert_eq!(native::VERSION, 2);
        assert_eq!(native::SUPPORTED_VERSIONS, &[1, 2]);
        assert_eq!(native::FLAG_DEPS, 1);
        assert_eq!(native::DEP_RECORD_LEN, 20);
        assert_eq!(native::BLOCK_RECORDS, 65536);
    }

    /// A record of version 2 with dependencies: the 16 bytes and a u32 distance.
    fn dep_rec(vaddr: u64, gap: u32, kind: u8, dep: u32) -> Vec<u8> {
        let mut r = rec(vaddr, gap, 0, kind, 8).to_vec();
        r.extend_from_slice(&dep.to_le_bytes());
        r
    }

    #[test]
    fn dependencies_round_trip_in_version_2_and_a_trace_without_stays_version_1() {
        let dir = TempDir::new("native-deps");
        let recs = random_records(100_000, 5);
        let mut b = batch_of(&recs);
        b.dep = (0..recs.len() as u32).map(|i| if i % 5 == 0 { 0 } else { i.min(1 + i % 4) }).collect();
        let p = dir.path("d.tess");
        let opts = native::WriterOptions { dependencies: true, ..Default::default() };
        let mut w = NativeWriter::create_with(&p, json!({}), opts).unwrap();
        for r in [0..1, 1..40_000, 40_000..100_000] {
            let mut part = AccessBatch::default();
            part.copy_range(&b, r);
            w.write_batch(&part).unwrap();
        }
        w.finish().unwrap();
        for cap in [7, 8192] {
            let mut r = NativeReader::open(&p).unwrap();
            assert_eq!((r.version(), r.has_dependencies(), r.carries_dependencies()), (2, true, true));
            assert_eq!(drain_deps(&mut r, cap).unwrap(), b.dep, "capacity {cap}");
            assert_eq!(read_path(&p, cap).unwrap(), recs);
        }
        // Hand-built from the spec: version 2, flag DEPS, 20-byte records.
        let h = dir.path("h.tess");
        std::fs::write(&h, hand_built_as(2, 1, &[dep_rec(0x1000, 1, 0, 0), dep_rec(0x2000, 1, 0, 1)], (2, 2))).unwrap();
        assert_eq!(drain_deps(&mut NativeReader::open(&h).unwrap(), 8).unwrap(), vec![0, 1]);
        // Without dependencies the writer writes what version 1 always was.
        let v1 = dir.path("v1.tess");
        write(&v1, &recs, 8192, json!({}));
        let r = NativeReader::open(&v1).unwrap();
        assert_eq!((r.version(), r.has_dependencies(), r.carries_dependencies()), (1, false, false));
        // A trace with dependencies converts to native with them.
        let c = dir.path("c.tess");
        trace::convert(&p, &c, Format::Native).unwrap();
        assert_eq!(drain_deps(&mut NativeReader::open(&c).unwrap(), 8192).unwrap(), b.dep);
    }

    #[test]
    fn a_dependency_before_the_first_record_is_an_error_naming_the_block() {
        let dir = TempDir::new("native-dep-err");
        let p = dir.path("e.tess");
        std::fs::write(&p, hand_built_as(2, 1, &[dep_rec(0x1000, 1, 0, 0), dep_rec(0x2000, 1, 0, 2)], (2, 2))).unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(16 + 13));
        assert!(msg.contains("record 1") && msg.contains("before the trace's first record"), "{msg}");
        // Flag DEPS is version 2's: version 1 defines no flags.
        std::fs::write(&p, hand_built_as(1, 1, &[dep_rec(0x1000, 1, 0, 0)], (1, 1))).unwrap();
        let (_, loc, msg) = read_err(&p);
        assert_eq!(loc, Location::Offset(10));
        assert!(msg.contains("version 1 defines none"), "{msg}");
        std::fs::write(&p, hand_built_as(2, 2, &[dep_rec(0x1000, 1, 0, 0)], (1, 1))).unwrap();
        let (_, _, msg) = read_err(&p);
        assert!(msg.contains("unsupported flags 0x0002"), "{msg}");
        // The writer refuses the same, and a dependency a version 1 file cannot hold.
        let mut b = batch_of(&random_records(10, 1));
        b.dep = vec![0; 10];
        b.dep[3] = 4;
        let opts = native::WriterOptions { dependencies: true, ..Default::default() };
        let mut w = NativeWriter::create_with(&dir.path("w.tess"), json!({}), opts).unwrap();
        let e = w.write_batch(&b).unwrap_err().to_string();
        assert!(e.contains("record 3") && e.contains("before the trace's first record"), "{e}");
        let mut w = NativeWriter::create(&dir.path("w1.tess"), json!({})).unwrap();
        b.dep[3] = 1;
        let e = w.write_batch(&b).unwrap_err().to_string();
        assert!(e.contains("record 3") && e.contains("version 1"), "{e}");
    }
}
