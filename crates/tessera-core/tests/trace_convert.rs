//! Conversion between formats: round trips, instruction gaps, atomic output on
//! failure, and `info` on native traces.

mod trace_support;

mod trace_convert {
    use std::path::{Path, PathBuf};

    use tessera_core::access::AccessKind::{IFetch, Load, Store};
    use tessera_core::error::Location;
    use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec};
    use tessera_core::trace::{self, Format, NativeReader, NativeWriter};

    use crate::trace_support::*;

    fn data(name: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(name)
    }

    fn without_chatter(text: &str) -> String {
        text.lines()
            .filter(|l| !l.starts_with("=="))
            .map(|l| format!("{l}\n"))
            .collect()
    }

    #[test]
    fn recorded_lackey_trace_round_trips_through_native_byte_for_byte() {
        let dir = TempDir::new("convert-rt");
        let orig = std::fs::read_to_string(data("sort-head.lackey")).unwrap();
        let tess = dir.path("sort.tess");
        let back = dir.path("back.lackey");
        let s1 = trace::convert(&data("sort-head.lackey"), &tess, Format::Native).unwrap();
        assert_eq!((s1.from, s1.to), (Format::Lackey, Format::Native));
        let s2 = trace::convert(&tess, &back, Format::Lackey).unwrap();
        assert_eq!((s2.from, s2.to), (Format::Native, Format::Lackey));
        assert_eq!((s1.records, s1.instructions), (s2.records, s2.instructions));
        assert_eq!(s1.instructions, 3206);
        assert_eq!(
            std::fs::read_to_string(&back).unwrap(),
            without_chatter(&orig)
        );
        assert_eq!(s2.bytes_out, std::fs::metadata(&back).unwrap().len());
        let meta = NativeReader::open(&tess).unwrap().meta().clone();
        assert_eq!(meta["source_format"], "lackey");
        assert_eq!(meta["source_file"], "sort-head.lackey");
    }

    #[test]
    fn separate_load_store_pair_is_written_back_as_modify() {
        // Documented normalisation: records cannot tell an ` M` from an
        // ` L`/` S` pair of the same address and size, so both come back as ` M`.
        let dir = TempDir::new("convert-modify");
        let src = dir.path("a.lackey");
        std::fs::write(
            &src,
            "I  10,4\n L 20,8\n S 20,8\nI  14,4\n L 20,8\n S 28,8\n",
        )
        .unwrap();
        trace::convert(&src, &dir.path("a.tess"), Format::Native).unwrap();
        trace::convert(&dir.path("a.tess"), &dir.path("b.lackey"), Format::Lackey).unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path("b.lackey")).unwrap(),
            "I  00000010,4\n M 00000020,8\nI  00000014,4\n L 00000020,8\n S 00000028,8\n"
        );
    }

    #[test]
    fn instruction_gaps_survive_native_to_lackey_and_back() {
        let dir = TempDir::new("convert-gaps");
        let recs = vec![
            (3, 0x7f00_0000_0000, Load, 8, 0),
            (0, 0x7f00_0000_0008, Store, 8, 0),
            (4, 0x401000, IFetch, 5, 0),
            (0, 0x7f00_0000_0010, Load, 4, 0),
            (0, 0x7f00_0000_0010, Store, 4, 0),
            (1, 0x7f00_0000_0020, Store, 2, 0),
        ];
        let n = dir.path("g.tess");
        let mut w = NativeWriter::create(&n, serde_json::json!({})).unwrap();
        w.write_batch(&batch_of(&recs[..4])).unwrap();
        // The Load that ends one batch merges with the Store that starts the next.
        w.write_batch(&batch_of(&recs[4..])).unwrap();
        w.finish().unwrap();
        let l = dir.path("g.lackey");
        trace::convert(&n, &l, Format::Lackey).unwrap();
        let text = std::fs::read_to_string(&l).unwrap();
        let z = "I  00000000,0\n";
        let want = format!(
            "{z}{z}{z} L 7f0000000000,8\n S 7f0000000008,8\n{z}{z}{z}I  00401000,5\n M 7f0000000010,4\n{z} S 7f0000000020,2\n"
        );
        assert_eq!(text, want);
        assert_eq!(read_path(&l, 3).unwrap(), recs);
        // And back to native again: the same records.
        let n2 = dir.path("g2.tess");
        trace::convert(&l, &n2, Format::Native).unwrap();
        assert_eq!(read_path(&n2, 100).unwrap(), recs);
    }

    #[test]
    fn native_to_native_keeps_records_and_metadata() {
        let dir = TempDir::new("convert-nn");
        let a = dir.path("a.tess");
        let recs = random_records(80_000, 5);
        let mut w = NativeWriter::create(&a, serde_json::json!({"origin": "test"})).unwrap();
        w.write_batch(&batch_of(&recs)).unwrap();
        w.finish().unwrap();
        let b = dir.path("b.tess");
        let s = trace::convert(&a, &b, Format::Native).unwrap();
        assert_eq!(s.records, 80_000);
        assert_eq!(read_path(&b, 4096).unwrap(), recs);
        assert_eq!(NativeReader::open(&b).unwrap().meta()["origin"], "test");
    }

    #[test]
    fn failed_conversion_of_bad_lackey_leaves_no_output() {
        let dir = TempDir::new("convert-fail");
        let src = dir.path("bad.lackey");
        let mut text = String::new();
        for i in 0..200_000 {
            text += &format!("I  {:08x},4\n L 1000,8\n", 0x400000 + 4 * i);
        }
        text += " L 1000,8,9\n";
        std::fs::write(&src, &text).unwrap();
        for to in [Format::Native, Format::Lackey] {
            let out = dir.path("out.trace");
            let (file, loc, msg) = trace_err(trace::convert(&src, &out, to).unwrap_err());
            assert_eq!(file, src.display().to_string());
            assert_eq!(loc, Location::Line(400_001));
            assert!(msg.contains("` L 1000,8,9`"), "{msg}");
            assert_eq!(
                dir.files(),
                vec!["bad.lackey"],
                "output or temporary file left behind"
            );
        }
    }

    #[test]
    fn failed_conversion_of_damaged_native_leaves_no_output() {
        let dir = TempDir::new("convert-fail-native");
        let a = dir.path("a.tess");
        let mut w = NativeWriter::create(&a, serde_json::json!({})).unwrap();
        w.write_batch(&batch_of(&random_records(100_000, 6)))
            .unwrap();
        w.finish().unwrap();
        let bytes = std::fs::read(&a).unwrap();
        std::fs::write(&a, &bytes[..bytes.len() - 30]).unwrap();
        let (_, loc, msg) =
            trace_err(trace::convert(&a, &dir.path("b.tess"), Format::Native).unwrap_err());
        assert!(matches!(loc, Location::Offset(_)));
        assert!(msg.contains("truncated"), "{msg}");
        assert_eq!(dir.files(), vec!["a.tess"]);
    }

    #[test]
    fn records_lackey_cannot_express_are_refused_without_output() {
        let dir = TempDir::new("convert-refuse");
        for (i, rec) in [
            (1, 0x1000, Load, 8, 3),
            (1, 0x1000, Store, 0, 0),
            (0, 0x1000, IFetch, 4, 0),
        ]
        .into_iter()
        .enumerate()
        {
            let a = dir.path(&format!("r{i}.tess"));
            let mut w = NativeWriter::create(&a, serde_json::json!({})).unwrap();
            w.write_batch(&batch_of(&[(1, 0x40, IFetch, 4, 0), rec]))
                .unwrap();
            w.finish().unwrap();
            let out = dir.path("out.lackey");
            let (file, loc, msg) = trace_err(trace::convert(&a, &out, Format::Lackey).unwrap_err());
            assert_eq!(file, out.display().to_string());
            assert_eq!(loc, Location::Line(2));
            assert!(
                msg.contains("record 1 cannot be written as lackey"),
                "{msg}"
            );
            assert!(!out.exists());
        }
        assert_eq!(dir.files(), vec!["r0.tess", "r1.tess", "r2.tess"]);
    }

    #[test]
    fn info_on_a_hand_made_native_trace_with_several_asids() {
        let dir = TempDir::new("convert-info");
        let p = dir.path("i.tess");
        let recs = vec![
            (1, 0x1ffffc, IFetch, 8, 1), // crosses 4 KiB and 2 MiB: pages 0x1ff, 0x200
            (0, 0x200000, Load, 8, 1),   // page 0x200 again
            (0, 0x200000, Load, 8, 2),   // same page, other ASID
            (5, 0x5000, Store, 0, 2),    // size 0 touches one byte
            (2, 0x5fff, Store, 1, 2),    // same page
        ];
        let mut w = NativeWriter::create(&p, serde_json::json!({})).unwrap();
        w.write_batch(&batch_of(&recs)).unwrap();
        w.finish().unwrap();
        let i = trace::info(&p).unwrap();
        assert_eq!(i.format, Format::Native);
        assert_eq!((i.records, i.instructions), (5, 8));
        assert_eq!((i.loads, i.stores, i.ifetches), (2, 2, 1));
        assert_eq!(i.asids, 2);
        assert_eq!(i.pages_4k, 4); // (1,0x1ff) (1,0x200) (2,0x200) (2,0x5)
        assert_eq!(i.regions_2m, 4); // (1,0) (1,1) (2,1) (2,0)
        assert_eq!(i.footprint_bytes, 4 * 4096);
    }

    #[test]
    fn synthetic_stream_stored_as_native_trace_reads_back_identically() {
        let dir = TempDir::new("convert-synthetic");
        let spec = SyntheticSpec::new(Pattern::HotCold, 100_000, 1 << 26, 11);
        let p = dir.path("s.tess");
        let mut w = NativeWriter::create(&p, serde_json::to_value(&spec).unwrap()).unwrap();
        let mut src = Synthetic::new(spec.clone()).unwrap();
        let want = drain(&mut src, 4096).unwrap();
        w.write_batch(&batch_of(&want)).unwrap();
        w.finish().unwrap();
        assert_eq!(read_path(&p, 1000).unwrap(), want);
        let i = trace::info(&p).unwrap();
        assert_eq!(i.instructions, 300_000);
        assert!(i.footprint_bytes <= 1 << 26);
    }

    fn example_trace() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/traces/sort.tess")
    }

    #[test]
    fn example_sort_trace_totals_match_its_readme() {
        // The end block's totals (last 24 bytes: records, instructions, magic);
        // a full read is the ignored test below (slow in debug builds).
        let bytes = std::fs::read(example_trace()).unwrap();
        let t = &bytes[bytes.len() - 24..];
        assert_eq!(&t[16..], b"TESS-END");
        assert_eq!(u64::from_le_bytes(t[0..8].try_into().unwrap()), 5_879_470);
        assert_eq!(u64::from_le_bytes(t[8..16].try_into().unwrap()), 4_172_231);
        let mut r = NativeReader::open(&example_trace()).unwrap();
        assert_eq!(r.meta()["source_format"], "lackey");
        let mut b = tessera_core::AccessBatch::with_capacity(4096);
        assert!(tessera_core::stream::AccessSource::next_batch(&mut r, &mut b).unwrap());
        assert_eq!(records_of(&b)[0], (1, 0x0401ab70, IFetch, 3, 0));
    }

    #[test]
    #[ignore = "reads 5.9 M records; run with --release -- --ignored"]
    fn example_sort_trace_info_matches_its_readme() {
        let i = trace::info(&example_trace()).unwrap();
        assert_eq!(i.format, Format::Native);
        assert_eq!(
            (i.records, i.instructions, i.pages_4k),
            (5_879_470, 4_172_231, 184)
        );
        assert_eq!((i.ifetches, i.asids), (4_172_231, 1));
    }
}
