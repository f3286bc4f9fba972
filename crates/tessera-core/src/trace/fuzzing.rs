//! Fuzz harnesses of the trace readers, shared by the cargo-fuzz targets in
//! `fuzz/` and by the corpus replay test (`tests/fuzz_corpus.rs`), so CI
//! replays every corpus input without nightly Rust or cargo-fuzz.
//!
//! Each function feeds arbitrary bytes through the real reader to the end and
//! panics if the reader breaks its contract: the bytes must give records or an
//! [`Error::Trace`] naming the file and a line (lackey) or byte offset
//! (native, ChampSim). Panics, endless loops and huge allocations inside the
//! readers are what the fuzzer looks for; the checks here turn a wrong error
//! into a panic too. The lackey and native inputs are read twice, with tiny
//! and full batches, and must give the same records both times (batch
//! boundaries cut lines, `M` pairs and blocks).

use crate::access::{AccessBatch, AccessKind, BATCH_LEN};
use crate::error::{Error, Location};
use crate::stream::AccessSource;
use crate::trace::champsim::{self, ChampsimOptions, ChampsimReader, Compression};
use crate::trace::{LackeyReader, NativeReader};

const FILE: &str = "fuzz-input";

type Rec = (u32, u64, AccessKind, u8, u16);

/// Read `src` to its end in batches of `cap`; check the error if any.
fn drain(
    src: &mut dyn AccessSource,
    cap: usize,
    total: u64,
    line_errors: bool,
) -> Result<Vec<Rec>, String> {
    let mut b = AccessBatch::with_capacity(cap);
    let mut recs = Vec::new();
    loop {
        match src.next_batch(&mut b) {
            Ok(true) => {
                assert!(
                    !b.is_empty() && b.len() <= cap,
                    "batch of {} for cap {cap}",
                    b.len()
                );
                for i in 0..b.len() {
                    recs.push((b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i], b.asid[i]));
                }
            }
            Ok(false) => {
                assert!(b.is_empty(), "a batch at the end of the trace");
                // The end is sticky: asking again must not restart or panic.
                assert!(
                    !src.next_batch(&mut b).unwrap_or(true),
                    "records after the end"
                );
                break;
            }
            Err(e) => return Err(check_error(e, line_errors)),
        }
        let (done, all) = src.progress();
        assert!(
            done <= all && all == total,
            "progress ({done}, {all}) of {total}"
        );
    }
    Ok(recs)
}

/// Panic unless `e` is a trace error naming the input with the kind of
/// location its format reports; returns the message.
fn check_error(e: Error, line_errors: bool) -> String {
    match e {
        Error::Trace {
            file,
            location,
            msg,
        } => {
            assert_eq!(file, FILE, "the error names another file: {msg}");
            match location {
                Location::Line(l) => assert!(line_errors && l >= 1, "line {l}: {msg}"),
                Location::Offset(_) => assert!(!line_errors, "offset error: {msg}"),
            }
            assert!(!msg.is_empty());
            // Messages quote the input escaped or in hex, never raw control bytes.
            assert!(
                !msg.chars().any(|c| c.is_control() && c != '\n'),
                "raw control character in {msg:?}"
            );
            msg
        }
        e => panic!("not a trace error: {e}"),
    }
}

/// Read `data` as lackey text.
pub fn lackey(data: &[u8]) {
    let read = |cap| {
        let mut r = LackeyReader::from_reader(data, FILE.into(), FILE.into(), data.len() as u64);
        drain(&mut r, cap, data.len() as u64, true)
    };
    let small = read(3);
    let full = read(BATCH_LEN);
    assert_eq!(small, full, "records depend on the batch size");
    if let Ok(recs) = &full {
        // An `M` line gives two records; every other record needs a line.
        let lines = data.iter().filter(|&&c| c == b'\n').count() + 1;
        assert!(recs.len() <= 2 * lines);
        for r in recs {
            assert!(r.3 > 0 && r.4 == 0, "bad record {r:?}");
        }
    }
}

/// Read `data` as a native trace.
pub fn native(data: &[u8]) {
    let read = |cap| {
        let mut r = NativeReader::from_reader(data, FILE.into(), FILE.into(), data.len() as u64)
            .map_err(|e| check_error(e, false))?;
        drain(&mut r, cap, data.len() as u64, false)
    };
    let small = read(5);
    let full = read(BATCH_LEN);
    assert_eq!(small, full, "records depend on the batch size");
}

/// Read `data` as a compressed ChampSim trace (sniffing the compression as
/// opening a file does), with instruction fetches on so every record kind
/// and the largest per-instruction spill (7 accesses) are exercised.
pub fn champsim(data: &[u8]) {
    let Some(c) = Compression::sniff(data) else {
        let head = &data[..data.len().min(super::LOOKS_LIKE_LEN)];
        let msg = check_error(champsim::unknown_magic(FILE, head), false);
        assert!(msg.starts_with("unknown magic bytes"), "{msg}");
        return;
    };
    let opts = ChampsimOptions {
        ifetch: true,
        access_size: 8,
    };
    let mut r =
        ChampsimReader::from_reader(data, c, opts, FILE.into(), FILE.into(), data.len() as u64)
            .unwrap_or_else(|e| panic!("valid options refused: {e}"));
    if let Ok(recs) = drain(&mut r, 5, data.len() as u64, false) {
        for rec in recs {
            assert!(
                rec.2 == AccessKind::IFetch || rec.1 >= champsim::MIN_ADDR,
                "{rec:?}"
            );
        }
    }
}
