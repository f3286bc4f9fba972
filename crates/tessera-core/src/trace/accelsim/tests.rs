use super::*;
use proptest::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};

fn tmpdir() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!("tessera-accelsim-test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed)));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

const SHMEM_BASE: u64 = 0x0000_7efe_b000_0000;
const LOCAL_BASE: u64 = 0x0000_7efe_b200_0000;

/// A header of a 2-block grid of 64-thread blocks, with `extra` lines
/// (`-key = value`) after the standard ones (a later key wins).
fn header(extra: &str) -> String {
    format!(
        "-kernel name = _Z6vecAddPfS_S_i\n-kernel id = 1\n-grid dim = (2,1,1)\n-block dim = (64,1,1)\n-shmem = 0\n-nregs = 16\n\
         -binary version = 70\n-cuda stream id = 0\n-shmem base_addr = 0x{SHMEM_BASE:016x}\n-local mem base_addr = 0x{LOCAL_BASE:016x}\n\
         -nvbit version = 1.5.5\n-accelsim tracer version = 5\n-enable lineinfo = 0\n{extra}\n\
         #traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate\n\n"
    )
}

/// One thread block, warp 0, holding `insts`.
fn one_warp(extra: &str, insts: &[&str]) -> String {
    let mut s = header(extra);
    s.push_str(&format!("#BEGIN_TB\n\nthread block = 0,0,0\n\nwarp = 0\ninsts = {}\n", insts.len()));
    for i in insts {
        s.push_str(i);
        s.push('\n');
    }
    s.push_str("\n#END_TB\n\n");
    s
}

/// A trace directory holding one allocation and `kernel` as kernel 1.
fn app(kernel: &str) -> PathBuf {
    let d = tmpdir();
    std::fs::write(d.join(KERNELS_LIST), "MemcpyHtoD,0x00007f3c2a000000,4096\nkernel-1.traceg\n").unwrap();
    std::fs::write(d.join("kernel-1.traceg"), kernel).unwrap();
    d
}

fn read_one(kernel: &str) -> Result<Kernel> {
    let mut r = AccelsimReader::open(&app(kernel))?;
    Ok(r.next_kernel()?.expect("one kernel"))
}

/// The instructions and lane addresses of warp 0 of block 0.
fn warp0(k: &Kernel) -> Vec<(WarpInst, Vec<u64>)> {
    k.blocks[0].warps[0].iter().map(|(i, a)| (*i, a.to_vec())).collect()
}

fn mem(pc: u32, mask: u32, op: Op, space: Space, size: u8) -> WarpInst {
    WarpInst { pc, mask, op, space, size }
}

#[test]
fn reads_the_list_the_header_and_a_list_all_access() {
    let d = app(&one_warp("", &["0000 0000000b 1 R4 LDG.E 1 R2 4 0 0x0000000000001000 0x0000000000001004 0x0000000000002000 0 "]));
    let mut r = AccelsimReader::open(&d.join(KERNELS_LIST)).unwrap();
    assert_eq!(r.allocations(), &[Allocation { name: "memcpy0".into(), base: 0x7f3c2a000000, bytes: 4096 }]);
    let k = r.next_kernel().unwrap().unwrap();
    assert_eq!((k.name.as_str(), k.id, k.grid, k.block, k.regs_per_thread), ("_Z6vecAddPfS_S_i", 1, [2, 1, 1], [64, 1, 1], 16));
    assert_eq!(warp0(&k), vec![(mem(0, 0b1011, Op::Load, Space::Global, 4), vec![0x1000, 0x1004, 0x2000])]);
    assert!(r.next_kernel().unwrap().is_none());
    // The directory opens the same list.
    assert_eq!(AccelsimReader::open(&d).unwrap().next_kernel().unwrap().unwrap(), k);
}

#[test]
fn base_stride_fills_the_contiguous_run_with_any_stride() {
    let k = read_one(&one_warp(
        "",
        &["0010 0000fff0 1 R4 LDG.E.64.SYS 1 R2 8 1 0x7f0000001000 8 0 ", "0020 00000003 0 STS.128 2 R2 R4 16 1 0x100 -16 0 "],
    ))
    .unwrap();
    let w = warp0(&k);
    assert_eq!(w[0].0, mem(0x10, 0xfff0, Op::Load, Space::Global, 8));
    assert_eq!(w[0].1, (0..12).map(|i| 0x7f0000001000 + 8 * i).collect::<Vec<u64>>());
    assert_eq!(w[1], (mem(0x20, 3, Op::Store, Space::Shared, 16), vec![0x100, 0xf0]));
}

#[test]
fn base_delta_reads_popcount_minus_one_deltas_then_the_immediate() {
    let k = read_one(&one_warp(
        "",
        &[
            // The tracer's form: 2 deltas for 3 lanes, then the immediate.
            "0000 00000007 1 R4 LDG.E 1 R2 4 2 0x1000 4 -2 77 ",
            // One active lane: no delta at all.
            "0010 00000010 1 R4 LDG.E.U8 1 R2 1 2 0x5000 0 ",
            // No immediate (tracer version 3 wrote none).
            "0020 00000010 1 R4 LDG.E.U8 1 R2 1 2 0x5000",
        ],
    ))
    .unwrap();
    let w = warp0(&k);
    assert_eq!(w[0], (mem(0, 7, Op::Load, Space::Global, 4), vec![0x1000, 0x1004, 0x1002]));
    assert_eq!(w[1], (mem(0x10, 0x10, Op::Load, Space::Global, 1), vec![0x5000]));
    assert_eq!(w[2].1, vec![0x5000]);
}

#[test]
fn lineinfo_adds_a_leading_column() {
    let k = read_one(&one_warp("-enable lineinfo = 1\n", &["17 0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0 0 ", "18 0010 00000001 0 STG.E 2 R2 R3 4 2 0x2000 0 "])).unwrap();
    assert_eq!(warp0(&k), vec![(WarpInst::compute(0, u32::MAX, Op::Alu), vec![]), (mem(0x10, 1, Op::Store, Space::Global, 4), vec![0x2000])]);
}

#[test]
fn tracer_versions_below_3_carry_four_extra_columns() {
    let line = "31 0 0 3 0000 ffffffff 1 R1 IMAD.MOV.U32 2 R255 R255 0";
    let k = read_one(&one_warp("-accelsim tracer version = 2\n", &[line])).unwrap();
    assert_eq!(warp0(&k), vec![(WarpInst::compute(0, u32::MAX, Op::Alu), vec![])]);
    // Without a version line at all (the oldest tracers), the same.
    let old = one_warp("", &[line]).replace("-accelsim tracer version = 5\n", "");
    assert_eq!(read_one(&old).unwrap(), k);
    // Version 5 reads the same line as a PC of 0x31 with a 1-digit mask: wrong.
    assert!(read_one(&one_warp("", &[line])).is_err());
}

#[test]
fn generic_accesses_are_classified_by_the_base_addresses() {
    let k = read_one(&one_warp(
        "",
        &[
            &format!("0000 00000001 1 R4 LD.E 1 R2 4 2 0x{:x} 0 ", SHMEM_BASE + 0x100),
            &format!("0010 00000001 0 ST.E.64 2 R2 R4 8 2 0x{:x} 0 ", LOCAL_BASE + 0x40),
            "0020 00000001 1 R4 ATOM.E.ADD 2 R2 R4 4 2 0x7f3c2a000000 0 ",
            // Just past the local window: global.
            &format!("0030 00000001 1 R4 LD.E 1 R2 4 2 0x{:x} 0 ", LOCAL_BASE + GENERIC_WINDOW),
        ],
    ))
    .unwrap();
    let spaces: Vec<(Op, Space, u8)> = warp0(&k).iter().map(|(i, _)| (i.op, i.space, i.size)).collect();
    assert_eq!(spaces, vec![(Op::Load, Space::Shared, 4), (Op::Store, Space::Local, 8), (Op::Atomic, Space::Global, 4), (Op::Load, Space::Global, 4)]);
}

#[test]
fn access_sizes_come_from_the_opcode() {
    for (op, size) in [
        ("LDG.E.64", 8),
        ("LDG.E.U8", 1),
        ("STS.128", 16),
        ("LDG.E", 4),
        ("LDG.E.S8", 4),
        ("STG.E.U16", 2),
        ("ATOMG.E.ADD.F32.FTZ.RN", 4),
        ("LDG.E.EL.LTC128B.128", 16),
        ("ATOMG.E.ADD.32", 4),
    ] {
        assert_eq!(opcode_size(op), Ok(size), "{op}");
    }
    assert!(opcode_size("LDG.E.4").is_err());
    // mem_width does not matter.
    let k = read_one(&one_warp("", &["0000 00000001 1 R4 LDG.E.64 1 R2 4 2 0x1000 0 "])).unwrap();
    assert_eq!(warp0(&k)[0].0.size, 8);
}

#[test]
fn opcodes_map_to_classes_and_unmodelled_accesses_are_dropped() {
    let k = read_one(&one_warp(
        "",
        &[
            "0000 ffffffff 0 BAR.SYNC.DEFER_BLOCKING 0 0 ",
            "0010 ffffffff 0 BRA 0 0 ",
            "0020 ffffffff 1 R3 MUFU.RSQ 1 R2 0 ",
            "0030 ffffffff 1 R3 LDC 1 R2 0 ",
            "0040 00000001 0 RED.E.ADD.STRONG.GPU 2 R2 R4 4 2 0x3000 0 ",
            // TMA: mode 3 and mode 4 addresses are dropped.
            "0050 00000001 0 UTMALDG.2D 2 R2 R4 16 3 2 7f0000000000 7f0000000100 0 ",
            "0060 00000001 0 UTMALDG.2D 2 R2 R4 16 4 7f0000000000 3 256 256 0 ",
            // Predicated off in every lane: counted, then dropped.
            "0070 00000000 1 R4 LDG.E 1 R2 4 2 0x1000 0 ",
            "0080 ffffffff 0 EXIT 0 0 ",
        ],
    ))
    .unwrap();
    let ops: Vec<(u32, Op, Space)> = warp0(&k).iter().map(|(i, _)| (i.pc, i.op, i.space)).collect();
    assert_eq!(
        ops,
        vec![
            (0, Op::Barrier, Space::None),
            (0x10, Op::Branch, Space::None),
            (0x20, Op::Sfu, Space::None),
            (0x30, Op::Alu, Space::None),
            (0x40, Op::Atomic, Space::Global),
            (0x50, Op::Alu, Space::None),
            (0x60, Op::Alu, Space::None),
            (0x80, Op::Exit, Space::None),
        ]
    );
    assert_eq!(k.blocks[0].warps[0].addrs, vec![0x3000]);
}

#[test]
fn unaligned_memcpys_are_aligned_down_and_blank_and_other_lines_ignored() {
    let d = app(&one_warp("", &[]));
    std::fs::write(d.join(KERNELS_LIST), "\nMemcpyHtoD,0x0000000000001010,100\nsomething else\n\nkernel-1.traceg\n").unwrap();
    let r = AccelsimReader::open(&d).unwrap();
    assert_eq!(r.allocations(), &[Allocation { name: "memcpy0".into(), base: 0x1000, bytes: 116 }]);
    assert_eq!(r.kernel_files().len(), 1);
}

/// `f` fails naming `file` and `line`.
#[track_caller]
fn assert_fails_at(e: Error, file: &str, line: u64, what: &str) {
    let s = e.to_string();
    match &e {
        Error::Trace { file: f, location, .. } => {
            assert!(f.ends_with(file), "{s}");
            assert_eq!(*location, Location::Line(line), "{s}");
        }
        _ => panic!("not a trace error: {s}"),
    }
    assert!(s.contains(what), "{s} does not say {what:?}");
}

/// Line of the first instruction in a [`one_warp`] kernel.
fn first_inst_line(extra: &str) -> u64 {
    header(extra).lines().count() as u64 + 7
}

#[test]
fn malformed_instruction_lines_name_the_file_and_line() {
    let l = first_inst_line("");
    for (inst, what) in [
        ("zz00 ffffffff 0 IMAD 0 0 ", "bad hex PC"),
        ("0000 fffffffff 0 IMAD 0 0 ", "bad mask"),
        ("0000 ffffffff 1 R1 IMAD", "too few tokens"),
        ("0000 ffffffff 0 IMAD 0 0 0 5", "too many tokens"),
        ("0000 ffffffff 0 LDG.E 0 4 7 0x1000 0", "unknown address mode 7"),
        ("0000 00000003 0 LDG.E 0 4 0 0x1000 0x1004 0x1008 0", "bad decimal immediate"),
        ("0000 00000003 0 LDG.E 0 4 0 0x1000 1004 0", "bad hex lane address"),
        ("0000 00000005 0 LDG.E 0 4 1 0x1000 4 0", "not one contiguous run"),
        ("0000 00000003 0 LDG.E 0 4 2 0xq000 4 0", "bad hex base address"),
        ("0000 00000003 0 LDG.E 0 4 2 0x1000 x4 0", "bad decimal address delta"),
        ("0000 00000001 0 LDG.E 0 4 1 0x1000 4294967296 0", "does not fit"),
    ] {
        let e = read_one(&one_warp("", &[inst])).unwrap_err();
        assert_fails_at(e, "kernel-1.traceg", l, what);
    }
}

#[test]
fn malformed_structure_names_the_file_and_line() {
    let h = header("");
    let hl = h.lines().count() as u64;
    let inst = "0000 ffffffff 0 IMAD 0 0 ";
    // Fewer instruction lines than insts = 2.
    let short = format!("{h}#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 2\n{inst}\n#END_TB\n");
    assert_fails_at(read_one(&short).unwrap_err(), "kernel-1.traceg", hl + 6, "insts = 2");
    // More.
    let long = format!("{h}#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n{inst}\n{inst}\n#END_TB\n");
    assert_fails_at(read_one(&long).unwrap_err(), "kernel-1.traceg", hl + 6, "more instruction lines than insts = 1");
    // Warp 2 of a 64-thread block.
    let warp = format!("{h}#BEGIN_TB\nthread block = 0,0,0\nwarp = 2\ninsts = 0\n#END_TB\n");
    assert_fails_at(read_one(&warp).unwrap_err(), "kernel-1.traceg", hl + 3, "warp 2 outside the block");
    let twice = format!("{h}#BEGIN_TB\nthread block = 0,0,0\nwarp = 1\ninsts = 0\nwarp = 1\ninsts = 0\n#END_TB\n");
    assert_fails_at(read_one(&twice).unwrap_err(), "kernel-1.traceg", hl + 5, "appears twice");
    let outside = format!("{h}#BEGIN_TB\nthread block = 2,0,0\n#END_TB\n");
    assert_fails_at(read_one(&outside).unwrap_err(), "kernel-1.traceg", hl + 2, "outside the grid");
    // Truncated inside the instructions, and inside a thread block.
    let cut = format!("{h}#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 3\n{inst}\n");
    assert_fails_at(read_one(&cut).unwrap_err(), "kernel-1.traceg", hl + 5, "truncated");
    let cut = format!("{h}#BEGIN_TB\nthread block = 0,0,0\nwarp = 0\ninsts = 1\n{inst}\n");
    assert_fails_at(read_one(&cut).unwrap_err(), "kernel-1.traceg", hl + 5, "no #END_TB");
    // A header line that is no `-key = value`, and a missing key.
    let bad = h.replace("-nregs = 16", "nregs 16");
    assert_fails_at(read_one(&bad).unwrap_err(), "kernel-1.traceg", 6, "header");
    let bad = h.replace("-grid dim = (2,1,1)", "-grid dim = (2,1)");
    assert_fails_at(read_one(&bad).unwrap_err(), "kernel-1.traceg", 3, "fewer than 3");
    let bad = h.replace("-block dim = (64,1,1)\n", "");
    // Reported at the line that ends the header.
    assert_fails_at(read_one(&bad).unwrap_err(), "kernel-1.traceg", hl - 2, "block dim");
}

#[test]
fn a_missing_kernel_file_names_its_list_line() {
    let d = app(&one_warp("", &[]));
    std::fs::write(d.join(KERNELS_LIST), "MemcpyHtoD,0x00007f3c2a000000,4096\nkernel-1.traceg\nkernel-2.traceg\n").unwrap();
    let e = AccelsimReader::open(&d).err().unwrap();
    assert_fails_at(e, "kernelslist.g", 3, "kernel-2.traceg does not exist");
    std::fs::write(d.join(KERNELS_LIST), "MemcpyHtoD,0x7f3c2a000000\n").unwrap();
    assert_fails_at(AccelsimReader::open(&d).err().unwrap(), "kernelslist.g", 1, "MemcpyHtoD,0x<address>,<bytes>");
    std::fs::write(d.join(KERNELS_LIST), "\nMemcpyHtoD,0x10,18446744073709551615\n").unwrap();
    assert_fails_at(AccelsimReader::open(&d).err().unwrap(), "kernelslist.g", 2, "end of the address space");
    std::fs::write(d.join(KERNELS_LIST), "MemcpyHtoD,0x1000,12x\n").unwrap();
    assert_fails_at(AccelsimReader::open(&d).err().unwrap(), "kernelslist.g", 1, "bad decimal byte count");
    std::fs::write(d.join(KERNELS_LIST), "kernel-1.trace\n").unwrap();
    assert_fails_at(AccelsimReader::open(&d).err().unwrap(), "kernelslist.g", 1, "post-traces-processing");
}

#[test]
fn a_corrupt_or_truncated_xz_kernel_is_an_error_not_a_panic() {
    let text = one_warp("", &["0000 ffffffff 0 IMAD 0 0 "; 200]);
    let mut enc = XzEncoder::new(Vec::new(), 1);
    enc.write_all(text.as_bytes()).unwrap();
    let xz = enc.finish().unwrap();
    let d = tmpdir();
    std::fs::write(d.join(KERNELS_LIST), "kernel-1.traceg.xz\n").unwrap();
    // Whole: reads.
    std::fs::write(d.join("kernel-1.traceg.xz"), &xz).unwrap();
    assert_eq!(AccelsimReader::open(&d).unwrap().next_kernel().unwrap().unwrap().warp_insts(), 200);
    // Truncated.
    std::fs::write(d.join("kernel-1.traceg.xz"), &xz[..xz.len() / 2]).unwrap();
    let e = AccelsimReader::open(&d).unwrap().next_kernel().unwrap_err();
    assert!(e.to_string().contains("kernel-1.traceg.xz: line") && e.to_string().contains("xz"), "{e}");
    // Not xz at all.
    std::fs::write(d.join("kernel-1.traceg.xz"), &text).unwrap();
    let e = AccelsimReader::open(&d).unwrap().next_kernel().unwrap_err();
    assert_fails_at(e, "kernel-1.traceg.xz", 1, "corrupt or truncated xz stream");
    // A corrupted byte in the middle.
    let mut bad = xz.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0xff;
    std::fs::write(d.join("kernel-1.traceg.xz"), &bad).unwrap();
    let e = AccelsimReader::open(&d).unwrap().next_kernel().unwrap_err();
    assert!(e.to_string().contains("xz"), "{e}");
}

#[test]
fn the_writer_uses_the_tracers_address_modes_and_refuses_local_atomics() {
    let mut w = WarpTrace::default();
    w.push(mem(0, 0x0000fff0, Op::Load, Space::Global, 8), &(0..12).map(|i| 0x1000 + 8 * i).collect::<Vec<u64>>());
    w.push(mem(0x10, 0b101, Op::Store, Space::Shared, 16), &[0x200, 0x100]);
    w.push(mem(0x20, 0b1000, Op::Atomic, Space::Global, 4), &[0x300]);
    w.push(WarpInst::compute(0x30, u32::MAX, Op::Exit), &[]);
    let k = Kernel { name: "k".into(), id: 7, grid: [1, 1, 1], block: [32, 1, 1], shmem_bytes: 0, regs_per_thread: 8, blocks: vec![ThreadBlock { index: [0, 0, 0], warps: vec![w] }] };
    let d = tmpdir();
    let mut wr = AccelsimWriter::create(&d, &[], false).unwrap();
    wr.write_kernel(&k).unwrap();
    wr.finish().unwrap();
    let text = std::fs::read_to_string(d.join("kernel-1.traceg")).unwrap();
    assert!(text.contains("0000 0000fff0 0 LDG.E.64 0 8 1 0x1000 8 0\n"), "{text}");
    assert!(text.contains("0010 00000005 0 STS.128 0 16 2 0x200 -256 0\n"), "{text}");
    assert!(text.contains("0020 00000008 0 ATOMG.E.ADD.32 0 4 2 0x300 0\n"), "{text}");
    assert!(text.contains("0030 ffffffff 0 EXIT 0 0 0\n"), "{text}");
    assert!(text.contains("-kernel id = 7\n") && text.contains("-accelsim tracer version = 5\n"));
    assert_eq!(std::fs::read_to_string(d.join(KERNELS_LIST)).unwrap(), "kernel-1.traceg\n");

    // A local atomic fails, and the writer leaves nothing behind.
    let mut bad = k.clone();
    bad.blocks[0].warps[0].insts[2].space = Space::Local;
    let d = tmpdir();
    let mut wr = AccelsimWriter::create(&d, &[], true).unwrap();
    wr.write_kernel(&k).unwrap();
    assert!(wr.write_kernel(&bad).unwrap_err().to_string().contains("local atomic"));
    drop(wr);
    assert_eq!(std::fs::read_dir(&d).unwrap().count(), 0);
}

// ---------------------------------------------------------------------------
// Round trip

fn arb_mask() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(u32::MAX),
        (0u32..32, 1u32..=32).prop_map(|(lo, n)| {
            let n = n.min(32 - lo);
            let run = if n == 32 { u32::MAX } else { (1u32 << n) - 1 };
            run << lo
        }),
        (0u32..32).prop_map(|l| 1u32 << l),
        any::<u32>().prop_filter("an active lane", |m| *m != 0),
    ]
}

fn arb_inst() -> impl Strategy<Value = (WarpInst, Vec<u64>)> {
    (
        0u32..0x10000,
        arb_mask(),
        0usize..8,
        0usize..3,
        prop_oneof![Just(1u8), Just(2), Just(4), Just(8), Just(16), 1u8..=255],
        0usize..3,
        any::<u64>(),
        any::<i32>(),
        proptest::collection::vec(any::<u64>(), 32),
    )
        .prop_map(|(pc, mask, op, space, size, pattern, base, stride, rnd)| {
            let ops = [Op::Alu, Op::Sfu, Op::Load, Op::Store, Op::Atomic, Op::Barrier, Op::Branch, Op::Exit];
            let op = ops[op];
            if !op.is_memory() {
                return (WarpInst::compute(pc & !0xf, mask, op), vec![]);
            }
            let spaces = if op == Op::Atomic { &[Space::Global, Space::Shared, Space::Global][..] } else { &[Space::Global, Space::Shared, Space::Local][..] };
            let n = mask.count_ones() as usize;
            let lanes: Vec<u64> = match pattern {
                0 => rnd[..n].to_vec(),
                1 => (0..n).map(|i| base.wrapping_add((stride as i64 * i as i64) as u64)).collect(),
                _ => {
                    let mut a = base;
                    rnd[..n].iter().map(|r| {
                        a = a.wrapping_add((*r % 4096).wrapping_sub(2048));
                        a
                    }).collect()
                }
            };
            (WarpInst { pc, mask, op, space: spaces[space], size }, lanes)
        })
}

fn arb_kernel() -> impl Strategy<Value = Kernel> {
    (
        "[A-Za-z_][A-Za-z0-9_<>:(), ]{0,16}[A-Za-z0-9_)]",
        1u32..1000,
        [1u32..=3, 1u32..=3, 1u32..=2],
        (1u32..=80, 1u32..=2, 1u32..=2),
        0u32..100_000,
        0u32..256,
        proptest::collection::vec((0usize..=6, proptest::collection::vec(proptest::collection::vec(arb_inst(), 0..6), 6)), 0..5),
    )
        .prop_map(|(name, id, grid, (bx, by, bz), shmem_bytes, regs_per_thread, blocks)| {
            let mut k = Kernel { name, id, grid, block: [bx, by, bz], shmem_bytes, regs_per_thread, blocks: Vec::new() };
            let wpb = k.warps_per_block() as usize;
            let total = grid.iter().product::<u32>() as usize;
            for (b, (nwarps, warps)) in blocks.into_iter().take(total).enumerate() {
                let b = b as u32;
                let index = [b % grid[0], b / grid[0] % grid[1], b / (grid[0] * grid[1])];
                let warps = warps
                    .into_iter()
                    .take(nwarps.min(wpb))
                    .map(|insts| {
                        let mut w = WarpTrace::default();
                        for (i, a) in insts {
                            w.push(i, &a);
                        }
                        w
                    })
                    .collect();
                k.blocks.push(ThreadBlock { index, warps });
            }
            k
        })
}

fn arb_allocations() -> impl Strategy<Value = Vec<Allocation>> {
    proptest::collection::vec((0u64..1 << 40, 1u64..1 << 24), 0..4).prop_map(|v| {
        v.into_iter().enumerate().map(|(i, (page, bytes))| Allocation { name: format!("memcpy{i}"), base: page * ALLOC_ALIGN, bytes }).collect()
    })
}

/// A [`KernelSource`] over kernels in memory.
struct Mem(Vec<Allocation>, std::vec::IntoIter<Kernel>);

impl KernelSource for Mem {
    fn allocations(&self) -> &[Allocation] {
        &self.0
    }
    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        Ok(self.1.next())
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn written_applications_read_back_equal(allocs in arb_allocations(), kernels in proptest::collection::vec(arb_kernel(), 0..3), xz in any::<bool>()) {
        let d = tmpdir();
        let s = write_app(&d, &mut Mem(allocs.clone(), kernels.clone().into_iter()), xz).unwrap();
        prop_assert_eq!(s.kernels, kernels.len() as u64);
        let mut r = AccelsimReader::open(&d).unwrap();
        prop_assert_eq!(r.allocations(), &allocs[..]);
        let mut back = Vec::new();
        while let Some(k) = r.next_kernel().unwrap() {
            back.push(k);
        }
        prop_assert_eq!(back, kernels);
        std::fs::remove_dir_all(&d).unwrap();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Damaged kernel text (bytes overwritten, lines cut or dropped) is read
    /// or refused with a trace or config error, never a panic.
    #[test]
    fn damaged_kernel_text_never_panics(
        k in arb_kernel(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..4),
        cut in any::<prop::sample::Index>(),
        drop_line in any::<prop::sample::Index>(),
    ) {
        let mut text = Vec::new();
        write_kernel_text(&mut text, &k, "t").unwrap();
        let mut lines: Vec<&[u8]> = text.split(|&c| c == b'\n').collect();
        lines.remove(drop_line.index(lines.len()));
        let mut text = lines.join(&b'\n');
        for (at, b) in edits {
            if !text.is_empty() {
                let i = at.index(text.len());
                text[i] = b" \n0x-fF1#=,"[b as usize % 11];
            }
        }
        text.truncate(cut.index(text.len() + 1));
        match parse_kernel(&text[..], "t", false) {
            Ok(back) => prop_assert!(back.check("t").is_ok()),
            Err(Error::Trace { .. } | Error::Config { .. }) => {}
            Err(e) => prop_assert!(false, "unexpected error {e}"),
        }
    }
}
