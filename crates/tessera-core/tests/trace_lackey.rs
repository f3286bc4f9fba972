//! Lackey text traces: grammar, gaps, skipped lines, every malformed-line case
//! with its file and line, streaming across buffer refills, and `info` counts.

mod trace_support;

mod trace_lackey {
    use std::fmt::Write as _;

    use tessera_core::access::AccessKind::{IFetch, Load, Store};
    use tessera_core::error::Location;
    use tessera_core::stream::AccessSource;
    use tessera_core::trace::{self, Format, LackeyReader};

    use crate::trace_support::*;

    fn write(dir: &TempDir, name: &str, text: &str) -> std::path::PathBuf {
        let p = dir.path(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    const SAMPLE: &str = "\
==4242== Lackey, an example Valgrind tool
==4242== Command: ./sort

I  0401b7a7,4
 S 1fff0006c0,16
I  0401b7ab,2
 M 04033e06,1
I  0401b7b0,7
 L 04033ff8,8
 S 04034000,4
==4242== 
I  00000000,0
I  00000000,0
 L 04035000,8
";

    #[test]
    fn lackey_trace_parses_every_record_kind() {
        let dir = TempDir::new("lackey-parse");
        let p = write(&dir, "s.lackey", SAMPLE);
        assert_eq!(trace::detect(&p).unwrap(), Format::Lackey);
        let want = vec![
            (1, 0x0401b7a7, IFetch, 4, 0),
            (0, 0x1fff0006c0, Store, 16, 0),
            (1, 0x0401b7ab, IFetch, 2, 0),
            (0, 0x04033e06, Load, 1, 0),
            (0, 0x04033e06, Store, 1, 0),
            (1, 0x0401b7b0, IFetch, 7, 0),
            (0, 0x04033ff8, Load, 8, 0),
            (0, 0x04034000, Store, 4, 0),
            (2, 0x04035000, Load, 8, 0),
        ];
        for cap in [1, 2, 5, 8192] {
            assert_eq!(read_path(&p, cap).unwrap(), want, "capacity {cap}");
        }
        let mut r = LackeyReader::open(&p).unwrap();
        assert_eq!(r.describe(), "trace:s.lackey");
        drain(&mut r, 4).unwrap();
        let len = SAMPLE.len() as u64;
        assert_eq!(r.progress(), (len, len));
    }

    #[test]
    fn empty_lackey_trace_has_no_records() {
        let dir = TempDir::new("lackey-empty");
        assert!(read_path(&write(&dir, "e", ""), 8).unwrap().is_empty());
        assert!(read_path(&write(&dir, "f", "==1== only chatter\n\n"), 8)
            .unwrap()
            .is_empty());
    }

    #[test]
    fn malformed_lackey_lines_name_file_and_line() {
        let dir = TempDir::new("lackey-bad");
        let cases: &[(&str, &str)] = &[
            (" X 0401b7a7,4", "not a lackey record"),
            ("I 0401b7a7,4", "not a lackey record"),
            ("L 0401b7a7,4", "not a lackey record"),
            ("I  0401g7a7,4", "expected `,`"),
            (" L ,4", "bad hex address"),
            (" L 0x401b7a7,4", "expected `,`"),
            (" L 11112222333344445,4", "more than 16 hex digits"),
            (" L 0401b7a7;4", "expected `,`"),
            (" L 0401b7a7 4", "expected `,`"),
            (" L 0401b7a7,", "bad size"),
            (" L 0401b7a7,x", "bad size"),
            (" S 0401b7a7,0", "size 0"),
            (" M 0401b7a7,256", "larger than 255"),
            (" L 0401b7a7,99999", "larger than 255"),
            ("I  0401b7a7,300", "larger than 255"),
            (" L 0401b7a7,4 extra", "unexpected text"),
            (" L 0401b7a7,-4", "bad size"),
            ("garbage", "not a lackey record"),
        ];
        for (i, &(bad, why)) in cases.iter().enumerate() {
            // Line 5 after a chatter line and a blank line; good lines after it.
            let text = format!("==1== x\nI  10,4\n\n L 20,8\n{bad}\n S 30,4\n");
            let p = write(&dir, &format!("bad{i}.lackey"), &text);
            let (file, loc, msg) = trace_err(read_path(&p, 3).unwrap_err());
            assert_eq!(file, p.display().to_string(), "{bad}");
            assert_eq!(loc, Location::Line(5), "{bad}: {msg}");
            assert!(msg.contains(why), "{bad}: {msg}");
            assert!(
                msg.contains(&format!("`{bad}`")),
                "{bad}: message does not quote the line: {msg}"
            );
        }
    }

    #[test]
    fn binary_junk_is_reported_on_line_one() {
        let dir = TempDir::new("lackey-junk");
        for name in ["junk.bin", "junk.lackey"] {
            let p = dir.path(name);
            std::fs::write(&p, [0u8, 159, 146, 150, 1, 2, 3, b'\n', b'I']).unwrap();
            assert_eq!(trace::detect(&p).unwrap(), Format::Lackey);
            let (file, loc, msg) = trace_err(read_path(&p, 8).unwrap_err());
            assert_eq!(file, p.display().to_string());
            assert_eq!(loc, Location::Line(1));
            assert!(
                msg.ends_with(
                    "; the file is neither a Tessera native trace, a compressed ChampSim trace, \
                     nor lackey text: the file looks like binary data: first bytes 00 9f 92 96 01 02 03 0a 49"
                ),
                "{msg}"
            );
        }
        // Binary on a later line is shown in hex, not quoted raw.
        let p = write(&dir, "late.lackey", "I  10,4\n\u{1}\u{2}\u{3}\n");
        let (_, loc, msg) = trace_err(read_path(&p, 8).unwrap_err());
        assert_eq!(loc, Location::Line(2));
        assert!(msg.ends_with("the line is binary data: first bytes 01 02 03"), "{msg}");
    }

    #[test]
    fn long_lackey_trace_streams_across_buffer_refills() {
        // ~6 MB, so the 1 MiB read buffer is refilled with lines split across reads.
        let dir = TempDir::new("lackey-long");
        let mut text = String::new();
        let mut want = Vec::new();
        let mut r = Lcg(9);
        let mut line = 0u64;
        while text.len() < 6_000_000 {
            line += 1;
            let a = r.next() >> (r.below(40) + 8);
            let s = 1 + r.below(16) as u8;
            match r.below(5) {
                0 => {
                    writeln!(text, "I  {a:08x},{s}").unwrap();
                    want.push((1, a, IFetch, s, 0));
                }
                1 => {
                    writeln!(text, " L {a:08x},{s}").unwrap();
                    want.push((0, a, Load, s, 0));
                }
                2 => {
                    writeln!(text, " S {a:08x},{s}").unwrap();
                    want.push((0, a, Store, s, 0));
                }
                3 => {
                    writeln!(text, " M {a:08x},{s}").unwrap();
                    want.push((0, a, Load, s, 0));
                    want.push((0, a, Store, s, 0));
                }
                _ => writeln!(text, "==77== {}", "x".repeat(r.below(200) as usize)).unwrap(),
            }
        }
        let p = write(&dir, "long.lackey", &text);
        assert_eq!(read_path(&p, 4093).unwrap(), want);
        // An error far into the file still has the right line number.
        let p2 = write(&dir, "long-bad.lackey", &format!("{text} Q 1,1\n"));
        let (_, loc, _) = trace_err(read_path(&p2, 8192).unwrap_err());
        assert_eq!(loc, Location::Line(line + 1));
    }

    #[test]
    fn over_long_lackey_line_is_an_error() {
        let dir = TempDir::new("lackey-huge-line");
        let p = write(&dir, "h", &format!("I  10,4\n{}\n", "y".repeat(2 << 20)));
        let (_, loc, msg) = trace_err(read_path(&p, 8).unwrap_err());
        assert_eq!(loc, Location::Line(2));
        assert!(msg.contains("longer than 1 MiB"), "{msg}");
    }

    #[test]
    fn info_counts_pages_regions_and_crossings_in_a_lackey_trace() {
        let dir = TempDir::new("lackey-info");
        let text = "\
I  00400ffe,4
 L 00401000,8
 S 00401ffc,8
 M 001ffff8,16
I  00000000,0
 L 7fff0000,1
";
        // Pages: 0x400 and 0x401 (fetch crosses), 0x401 and 0x402 (store crosses),
        // 0x1ff and 0x200 (modify crosses a 2 MiB boundary too), 0x7fff0.
        // Regions (2 MiB): 0x400000>>21 = 2 (pages 0x400..0x402), 0 (0x1ff), 1 (0x200), 0x3ff (0x7fff0000).
        let p = write(&dir, "i.lackey", text);
        let i = trace::info(&p).unwrap();
        assert_eq!(i.format, Format::Lackey);
        assert_eq!(i.records, 6);
        assert_eq!(i.instructions, 2);
        assert_eq!((i.loads, i.stores, i.ifetches), (3, 2, 1));
        assert_eq!(i.asids, 1);
        assert_eq!(i.pages_4k, 6);
        assert_eq!(i.regions_2m, 4);
        assert_eq!(i.footprint_bytes, 6 * 4096);
        let json = serde_json::to_value(&i).unwrap();
        assert_eq!(json["format"], "lackey");
        assert_eq!(json["pages_4k"], 6);
    }
}
