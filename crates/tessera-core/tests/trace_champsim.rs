//! ChampSim traces: synthetic xz and gzip files with known operands give
//! exactly the expected records (with and without instruction fetches, across
//! batch boundaries); detection, info and conversion; and every malformed
//! case (truncated record, corrupt or cut compressed stream, unknown magic,
//! bad branch byte) is an error naming the file and the record's offset.

mod trace_support;

mod trace_champsim {
    use std::io::Write;
    use std::path::PathBuf;

    use tessera_core::access::AccessKind::{IFetch, Load, Store};
    use tessera_core::error::Location;
    use tessera_core::trace::{self, ChampsimOptions, Format, TraceOptions};

    use crate::trace_support::*;

    /// One `input_instr`: (ip, is_branch, branch_taken, dst_mem[2], src_mem[4]).
    struct Instr {
        ip: u64,
        branch: u8,
        taken: u8,
        dst: [u64; 2],
        src: [u64; 4],
    }

    fn instr(ip: u64, dst: [u64; 2], src: [u64; 4]) -> Instr {
        Instr {
            ip,
            branch: 0,
            taken: 0,
            dst,
            src,
        }
    }

    fn encode(instrs: &[Instr]) -> Vec<u8> {
        let mut v = Vec::new();
        for i in instrs {
            let mut r = [0u8; 64];
            r[0..8].copy_from_slice(&i.ip.to_le_bytes());
            r[8] = i.branch;
            r[9] = i.taken;
            // Registers are ignored by the reader; fill them to be sure.
            r[10..16].copy_from_slice(&[7, 25, 6, 26, 1, 2]);
            for (k, a) in i.dst.iter().enumerate() {
                r[16 + 8 * k..24 + 8 * k].copy_from_slice(&a.to_le_bytes());
            }
            for (k, a) in i.src.iter().enumerate() {
                r[32 + 8 * k..40 + 8 * k].copy_from_slice(&a.to_le_bytes());
            }
            v.extend_from_slice(&r);
        }
        v
    }

    fn xz(raw: &[u8]) -> Vec<u8> {
        let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    }

    fn gz(raw: &[u8]) -> Vec<u8> {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(raw).unwrap();
        e.finish().unwrap()
    }

    fn write(dir: &TempDir, name: &str, bytes: &[u8]) -> PathBuf {
        let p = dir.path(name);
        std::fs::write(&p, bytes).unwrap();
        p
    }

    const A: u64 = 0x7f00_0000_1000;

    /// Five instructions exercising every mapping rule.
    fn sample() -> Vec<Instr> {
        vec![
            // No memory operand: its instruction goes on the next access.
            instr(0x401000, [0, 0], [0, 0, 0, 0]),
            // Two loads (slots 0 and 2) and a store: loads first, slot order.
            instr(0x401004, [A + 0x2000, 0], [A, 0, A + 0x1008, 0]),
            // Only an address below 4096 (tracer overflow): no access.
            instr(0x401008, [0, 0], [0x19, 0, 0, 0]),
            // A store in slot 1 and a load in slot 3; a branch.
            Instr {
                ip: 0x40100c,
                branch: 1,
                taken: 1,
                dst: [0, A + 0x3000],
                src: [0, 0, 0, A + 0x4ff8],
            },
            // Trailing instruction without access: no record can carry it.
            instr(0x401010, [0, 0], [0, 0, 0, 0]),
        ]
    }

    fn expected(ifetch: bool) -> Vec<Rec> {
        if ifetch {
            vec![
                (1, 0x401000, IFetch, 4, 0),
                (1, 0x401004, IFetch, 4, 0),
                (0, A, Load, 8, 0),
                (0, A + 0x1008, Load, 8, 0),
                (0, A + 0x2000, Store, 8, 0),
                (1, 0x401008, IFetch, 4, 0),
                (1, 0x40100c, IFetch, 4, 0),
                (0, A + 0x4ff8, Load, 8, 0),
                (0, A + 0x3000, Store, 8, 0),
                (1, 0x401010, IFetch, 4, 0),
            ]
        } else {
            vec![
                (2, A, Load, 8, 0),
                (0, A + 0x1008, Load, 8, 0),
                (0, A + 0x2000, Store, 8, 0),
                (2, A + 0x4ff8, Load, 8, 0),
                (0, A + 0x3000, Store, 8, 0),
            ]
        }
    }

    fn read_opts(p: &std::path::Path, cap: usize, opts: ChampsimOptions) -> tessera_core::Result<Vec<Rec>> {
        let o = TraceOptions { champsim: opts };
        drain(trace::open_with(p, &o)?.as_mut(), cap)
    }

    fn err_of(e: tessera_core::Error) -> (String, Location, String) {
        trace_err(e)
    }

    #[test]
    fn xz_and_gzip_traces_give_exact_records() {
        let dir = TempDir::new("champsim-exact");
        let raw = encode(&sample());
        let px = write(&dir, "t.champsimtrace.xz", &xz(&raw));
        let pg = write(&dir, "t.trace.gz", &gz(&raw));
        for p in [&px, &pg] {
            assert_eq!(trace::detect(p).unwrap(), Format::Champsim);
            for cap in [1, 2, 3, 8192] {
                assert_eq!(read_path(p, cap).unwrap(), expected(false), "{p:?} capacity {cap}");
                let on = ChampsimOptions {
                    ifetch: true,
                    ..ChampsimOptions::default()
                };
                assert_eq!(read_opts(p, cap, on).unwrap(), expected(true), "{p:?} capacity {cap}");
            }
        }
        let small = ChampsimOptions {
            ifetch: false,
            access_size: 4,
        };
        let sizes: Vec<u8> = read_opts(&px, 8, small).unwrap().iter().map(|r| r.3).collect();
        assert_eq!(sizes, vec![4; 5]);
    }

    #[test]
    fn detection_ignores_the_file_name() {
        let dir = TempDir::new("champsim-name");
        let raw = encode(&sample());
        let p = write(&dir, "plain-name", &xz(&raw));
        assert_eq!(trace::detect(&p).unwrap(), Format::Champsim);
        assert_eq!(read_path(&p, 64).unwrap(), expected(false));
    }

    #[test]
    fn concatenated_streams_and_members_are_read_through() {
        let dir = TempDir::new("champsim-concat");
        let all = sample();
        let (a, b) = all.split_at(2);
        let mut x = xz(&encode(a));
        x.extend(xz(&encode(b)));
        let mut g = gz(&encode(a));
        g.extend(gz(&encode(b)));
        assert_eq!(read_path(&write(&dir, "c.xz", &x), 4).unwrap(), expected(false));
        assert_eq!(read_path(&write(&dir, "c.gz", &g), 4).unwrap(), expected(false));
    }

    #[test]
    fn zstd_traces_are_detected_by_magic_and_read_through_frames() {
        let dir = TempDir::new("champsim-zstd");
        let all = sample();
        let (a, b) = all.split_at(3);
        let mut z = zstd::encode_all(&encode(a)[..], 3).unwrap();
        z.extend(zstd::encode_all(&encode(b)[..], 19).unwrap());
        let p = write(&dir, "plain-name", &z);
        assert_eq!(trace::detect(&p).unwrap(), Format::Champsim);
        assert_eq!(read_path(&p, 4).unwrap(), expected(false));
        // Cut inside the second frame: an error at a record boundary.
        let p = write(&dir, "cut.zst", &z[..z.len() - 3]);
        let (_, loc, msg) = err_of(read_path(&p, 4).unwrap_err());
        assert!(matches!(loc, Location::Offset(o) if o % 64 == 0), "{loc:?}");
        assert!(msg.contains("zstd"), "{msg}");
    }

    #[test]
    fn many_records_stream_across_chunks() {
        // 10 000 instructions (> one 4096-record chunk), each loading and storing.
        let dir = TempDir::new("champsim-many");
        let instrs: Vec<Instr> = (0..10_000u64)
            .map(|i| instr(0x400000 + 4 * i, [A + 64 * i, 0], [A + 8 * i, 0, 0, 0]))
            .collect();
        let p = write(&dir, "m.xz", &xz(&encode(&instrs)));
        let recs = read_path(&p, 1000).unwrap();
        assert_eq!(recs.len(), 20_000);
        for (i, pair) in recs.chunks(2).enumerate() {
            let i = i as u64;
            assert_eq!(pair[0], (1, A + 8 * i, Load, 8, 0));
            assert_eq!(pair[1], (0, A + 64 * i, Store, 8, 0));
        }
        let info = trace::info(&p).unwrap();
        assert_eq!(info.format, Format::Champsim);
        assert_eq!((info.records, info.instructions), (20_000, 10_000));
        assert_eq!((info.loads, info.stores, info.ifetches), (10_000, 10_000, 0));
        // Stores cover 64 × 10 000 bytes from A, i.e. 157 pages; loads fall inside.
        assert_eq!(info.pages_4k, (64 * 10_000u64).div_ceil(4096));
    }

    #[test]
    fn convert_to_native_round_trips_and_champsim_is_not_writable() {
        let dir = TempDir::new("champsim-convert");
        let p = write(&dir, "t.xz", &xz(&encode(&sample())));
        let out = dir.path("t.tess");
        let s = trace::convert(&p, &out, Format::Native).unwrap();
        assert_eq!((s.from, s.to, s.records, s.instructions), (Format::Champsim, Format::Native, 5, 4));
        assert_eq!(read_path(&out, 3).unwrap(), expected(false));
        let r = tessera_core::trace::NativeReader::open(&out).unwrap();
        assert_eq!(r.meta()["source_format"], "champsim");
        assert_eq!(r.meta()["champsim_options"]["ifetch"], false);
        let e = trace::convert(&p, &dir.path("x.xz"), Format::Champsim).unwrap_err();
        assert!(e.to_string().contains("can be read but not written"), "{e}");
        assert!(!dir.path("x.xz").exists());
    }

    #[test]
    fn truncated_record_names_offset_and_record() {
        let dir = TempDir::new("champsim-trunc");
        let mut raw = encode(&sample()[..3]);
        raw.extend_from_slice(&[1u8; 10]);
        for (name, bytes) in [("t.xz", xz(&raw)), ("t.gz", gz(&raw))] {
            let p = write(&dir, name, &bytes);
            let (file, loc, msg) = err_of(read_path(&p, 8).unwrap_err());
            assert!(file.ends_with(name), "{file}");
            assert_eq!(loc, Location::Offset(192));
            assert!(msg.contains("truncated record 3"), "{msg}");
            assert!(msg.contains("10 bytes into it"), "{msg}");
        }
    }

    #[test]
    fn corrupt_and_cut_compressed_streams_are_errors() {
        let dir = TempDir::new("champsim-corrupt");
        let instrs: Vec<Instr> = (0..5_000u64)
            .map(|i| instr(0x400000 + 4 * i, [0, 0], [A + (i * 7919 % 4096) * 4096, 0, 0, 0]))
            .collect();
        let raw = encode(&instrs);
        for (name, bytes) in [("c.xz", xz(&raw)), ("c.gz", gz(&raw))] {
            // Cut in half.
            let p = write(&dir, &format!("cut-{name}"), &bytes[..bytes.len() / 2]);
            let (_, loc, msg) = err_of(read_path(&p, 512).unwrap_err());
            let Location::Offset(off) = loc else { panic!("{loc:?}") };
            assert_eq!(off % 64, 0);
            assert!(off < raw.len() as u64);
            assert!(msg.contains("corrupt or truncated"), "{msg}");
            assert!(msg.contains(&format!("record {}", off / 64)), "{msg}");
            // Bytes flipped in the middle: the integrity checks catch it.
            let mut flipped = bytes.clone();
            let mid = flipped.len() / 2;
            for b in &mut flipped[mid..mid + 16] {
                *b ^= 0xA5;
            }
            let p = write(&dir, &format!("flip-{name}"), &flipped);
            let e = read_path(&p, 512).unwrap_err();
            let (file, loc, _) = err_of(e);
            assert!(file.ends_with(&format!("flip-{name}")));
            assert!(matches!(loc, Location::Offset(o) if o % 64 == 0));
        }
    }

    #[test]
    fn unknown_magic_and_bad_branch_bytes_are_errors() {
        let dir = TempDir::new("champsim-magic");
        // Uncompressed records in a file named like a ChampSim trace.
        let p = write(&dir, "raw.champsimtrace", &encode(&sample()));
        assert_eq!(trace::detect(&p).unwrap(), Format::Champsim);
        let (_, loc, msg) = err_of(read_path(&p, 8).unwrap_err());
        assert_eq!(loc, Location::Offset(0));
        assert!(msg.contains("unknown magic bytes"), "{msg}");
        assert!(msg.contains("xz-, gzip- or zstd-compressed"), "{msg}");
        assert!(msg.ends_with("the file looks like binary data: first bytes 00 10 40 00 00 00 00 00 00 00 07 19 06 1a 01 02 …"), "{msg}");
        // Text named like a ChampSim trace is quoted, not read as lackey.
        let p = write(&dir, "x.champsimtrace.xz", b"I  0401b7a7,4\n");
        let (_, loc, msg) = err_of(read_path(&p, 8).unwrap_err());
        assert_eq!(loc, Location::Offset(0));
        assert!(msg.ends_with("the file looks like text: first line \"I  0401b7a7,4\""), "{msg}");
        // A gzipped text file is not a ChampSim trace.
        let text = "I  0401b7a7,4\n L 1fff0006c0,8\n".repeat(64);
        let p = write(&dir, "lackey.gz", &gz(text.as_bytes()));
        let (_, loc, msg) = err_of(read_path(&p, 8).unwrap_err());
        assert_eq!(loc, Location::Offset(0));
        assert!(msg.contains("is_branch byte is"), "{msg}");
        // A bad branch_taken byte in record 2.
        let mut instrs = sample();
        instrs[2].taken = 7;
        let p = write(&dir, "b.xz", &xz(&encode(&instrs)));
        let (_, loc, msg) = err_of(read_path(&p, 8).unwrap_err());
        assert_eq!(loc, Location::Offset(128));
        assert!(msg.contains("record 2: branch_taken byte is 7"), "{msg}");
    }

    #[test]
    fn bad_access_size_is_a_config_error() {
        let dir = TempDir::new("champsim-size");
        let p = write(&dir, "t.xz", &xz(&encode(&sample())));
        let opts = ChampsimOptions {
            ifetch: false,
            access_size: 0,
        };
        let e = read_opts(&p, 8, opts).unwrap_err();
        assert!(e.to_string().contains("champsim.access_size"), "{e}");
    }

    /// One instruction with registers: (dst regs, src regs, load address, store address).
    fn with_regs(dst: [u8; 2], src: [u8; 4], load: u64, store: u64) -> [u8; 64] {
        let mut r = [0u8; 64];
        r[0..8].copy_from_slice(&0x401000u64.to_le_bytes());
        r[10..12].copy_from_slice(&dst);
        r[12..16].copy_from_slice(&src);
        r[16..24].copy_from_slice(&store.to_le_bytes());
        r[32..40].copy_from_slice(&load.to_le_bytes());
        r
    }

    /// Dependencies follow loaded values through registers, by the rules of
    /// the reader's module doc.
    #[test]
    fn register_dataflow_gives_load_dependencies() {
        let (rax, rbx, rcx, rdx, rsi, rdi, r8, r9) = (10, 11, 12, 13, 14, 15, 16, 17);
        let (sp, flags, ip) = (6, 25, 26);
        let instrs = [
            with_regs([rax, 0], [rbx, 0, 0, 0], A, 0),                   // 0 mov rax, [rbx]
            with_regs([rax, 0], [rax, 0, 0, 0], A + 0x100, 0),           // 1 mov rax, [rax]: on 0
            with_regs([rcx, flags], [rcx, rdx, 0, 0], A + 0x200, 0),     // 2 add rcx, [rdx]
            with_regs([rcx, flags], [rcx, rax, 0, 0], A + 0x300, 0),     // 3 add rcx, [rax]: on 1, not on 2
            with_regs([rsi, sp], [sp, 0, 0, 0], A + 0x400, 0),           // 4 pop rsi
            with_regs([rdi, 0], [sp, 0, 0, 0], A + 0x408, 0),            // 5 mov rdi, [rsp+8]: sp is not the pop's value
            with_regs([r8, 0], [rsi, 0, 0, 0], 0, 0),                    // 6 lea r8, [rsi+8]: no access
            with_regs([r9, 0], [r8, 0, 0, 0], A + 0x500, 0),             // 7 mov r9, [r8]: on 4, through r8
            with_regs([ip, 0], [rax, 0, 0, 0], A + 0x600, 0),            // 8 jmp [rax]: on 1
            with_regs([rdx, 0], [ip, 0, 0, 0], A + 0x700, 0),            // 9 mov rdx, [rip+x]: not on 8
            with_regs([0, 0], [r9, rdi, 0, 0], 0, A + 0x800),            // 10 mov [r9], rdi: on 7 (the latest source, data included)
        ];
        let raw: Vec<u8> = instrs.concat();
        let dir = TempDir::new("champsim-deps");
        let p = write(&dir, "deps.champsim.xz", &xz(&raw));
        for cap in [3, 4096] {
            let mut src = trace::open_with(&p, &TraceOptions::default()).unwrap();
            assert!(src.carries_dependencies());
            // Records: one per instruction but 6, so instruction k ≥ 7 is record k − 1.
            assert_eq!(drain_deps(src.as_mut(), cap).unwrap(), vec![0, 1, 0, 2, 0, 0, 2, 6, 0, 3], "capacity {cap}");
        }
        // With fetches each instruction adds a record before its accesses.
        let o = TraceOptions { champsim: ChampsimOptions { ifetch: true, ..Default::default() } };
        let mut src = trace::open_with(&p, &o).unwrap();
        let deps = drain_deps(src.as_mut(), 4096).unwrap();
        assert_eq!(deps, vec![0, 0, 0, 2, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 5, 0, 13, 0, 0, 0, 6]);
    }
}
