//! Valgrind lackey `--trace-mem=yes` text traces: a streaming reader and a writer.
//!
//! ## What it models
//! Lackey prints one line per instruction fetch and per data access
//! (FORMATS.md §3.1):
//!
//! ```text
//! I  0401b7a7,4        instruction fetch: address, length
//!  L 1fff0006c0,8      load
//!  S 1fff0006c0,8      store
//!  M 04033e06,1        modify = load then store of the same bytes by one instruction
//! ==12345== ...        Valgrind's own messages, skipped
//! ```
//!
//! Mapping onto records (see the instruction-gap convention in [`crate::access`]):
//! - `I  a,n` → `IFetch` at `a`, size `n`, `ins_gap` 1.
//! - ` L`/` S` → `Load`/`Store`, `ins_gap` 0.
//! - ` M` → `Load` then `Store`, both `ins_gap` 0.
//! - `I  a,0` (size 0) is the marker our own native→lackey converter writes for
//!   an instruction that has no fetch record: it adds 1 to the `ins_gap` of the
//!   next record and produces no record itself.
//! - ASID is always 0: lackey traces one process.
//!
//! ## Choices where the format is silent
//! - Blank (or whitespace-only) lines and lines starting with `==` are skipped.
//!   A trailing `\r` is tolerated.
//! - Hex digits may be upper or lower case, 1 to 16 digits; sizes are decimal,
//!   1..=255 (0 is allowed only on `I` lines, as the gap marker above).
//! - Size-0 `I` lines at the very end of a file (no record after them) carry
//!   instructions that no record can hold; they are dropped.
//! - Any other line is an error naming the file, the 1-based line number and
//!   quoting the line.
//!
//! ## Writer (native → lackey)
//! Lines are written exactly as lackey prints them (`I  %08x,%u`, ` L %08x,%u`).
//! An `IFetch` with gap `g` is preceded by `g − 1` lines `I  00000000,0`; a data
//! record with gap `g` by `g` such lines. A `Load` immediately followed by a
//! `Store` of the same address and size with gap 0 is written as one ` M` line,
//! as lackey itself merges them. So lackey → native → lackey is byte-identical
//! for lackey input without `==`/blank lines, except that a separate ` L a,n` /
//! ` S a,n` pair of the same address and size becomes ` M a,n`, and size-0 `I`
//! lines are normalised to address `00000000`. Records that lackey cannot
//! express (a non-zero ASID, size 0, an `IFetch` with gap 0) are an error.
//!
//! ## Speed
//! Byte-level parsing straight out of a 1 MiB buffer: no per-line allocation,
//! hex decoded through a 256-entry table. Memory does not depend on file length.

use std::fs::File;
use std::io::Read;
use std::path::Path;

use crate::access::{AccessBatch, AccessKind};
use crate::error::{Error, Location, Result};
use crate::stream::AccessSource;
use crate::trace::output::AtomicOutput;
use crate::trace::{
    batch_cap, display_name, hex_excerpt, is_text, looks_like, source_name, LOOKS_LIKE_LEN,
};

/// Read buffer; also the longest line accepted.
const BUF_LEN: usize = 1 << 20;
/// How much of an offending line an error message quotes.
const QUOTE_LEN: usize = 80;

const NOT_HEX: u8 = 0xff;
static HEX: [u8; 256] = {
    let mut t = [NOT_HEX; 256];
    let mut i = 0;
    while i < 10 {
        t[b'0' as usize + i] = i as u8;
        i += 1;
    }
    let mut i = 0;
    while i < 6 {
        t[b'a' as usize + i] = 10 + i as u8;
        t[b'A' as usize + i] = 10 + i as u8;
        i += 1;
    }
    t
};

/// Streaming reader of a lackey text trace.
pub struct LackeyReader<R: Read = File> {
    inner: R,
    file: String,
    name: String,
    buf: Vec<u8>,
    /// Next unparsed byte in `buf`.
    pos: usize,
    /// End of the complete lines in `buf` (one past the last `\n`).
    complete: usize,
    /// End of the bytes read into `buf`.
    filled: usize,
    eof: bool,
    /// Bytes dropped from the front of `buf` so far.
    base: u64,
    total: u64,
    /// Number of the last line parsed (1-based).
    line: u64,
    pending_gap: u32,
    /// The `Store` half of an ` M` line that did not fit in the last batch.
    spill: Option<(u64, u8)>,
}

impl LackeyReader<File> {
    pub fn open(path: &Path) -> Result<Self> {
        let file = display_name(path);
        let f = File::open(path).map_err(|e| Error::io(file.clone(), e))?;
        let total = f.metadata().map_err(|e| Error::io(file.clone(), e))?.len();
        Ok(Self::from_reader(f, file, source_name(path), total))
    }
}

impl<R: Read> LackeyReader<R> {
    /// Read from any byte source. `file` names it in errors, `name` in
    /// `describe()`, and `total` is its length in bytes for `progress()`.
    pub fn from_reader(inner: R, file: String, name: String, total: u64) -> Self {
        LackeyReader {
            inner,
            file,
            name,
            buf: vec![0; BUF_LEN + 1],
            pos: 0,
            complete: 0,
            filled: 0,
            eof: false,
            base: 0,
            total,
            line: 0,
            pending_gap: 0,
            spill: None,
        }
    }

    /// Make `buf[pos..complete]` non-empty; `false` at end of input.
    fn refill(&mut self) -> Result<bool> {
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        loop {
            if self.eof {
                if self.filled == 0 {
                    self.complete = 0;
                    return Ok(false);
                }
                // Last line without a newline: terminate it (buf has one spare byte).
                self.buf[self.filled] = b'\n';
                self.filled += 1;
                self.complete = self.filled;
                return Ok(true);
            }
            if self.filled == BUF_LEN {
                return Err(self.err(self.line + 1, 0, "line longer than 1 MiB"));
            }
            let n = match self.inner.read(&mut self.buf[self.filled..BUF_LEN]) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Error::io(self.file.clone(), e)),
            };
            if n == 0 {
                self.eof = true;
                continue;
            }
            let old = self.filled;
            self.filled += n;
            if let Some(i) = self.buf[old..self.filled].iter().rposition(|&c| c == b'\n') {
                self.complete = old + i + 1;
                return Ok(true);
            }
        }
    }

    fn err(&self, line: u64, start: usize, what: &str) -> Error {
        let end = self.buf[start..self.filled.max(start)]
            .iter()
            .position(|&c| c == b'\n' || c == b'\r')
            .map_or(self.filled.max(start), |i| start + i);
        let text = &self.buf[start..end.min(start + QUOTE_LEN)];
        let ellipsis = if end > start + QUOTE_LEN { "…" } else { "" };
        // Binary bytes are shown in hex: quoting them would garble the terminal.
        let msg = if !is_text(&self.buf[start..end]) {
            if line == 1 {
                let head = &self.buf[..self.filled.min(LOOKS_LIKE_LEN)];
                format!(
                    "{what}; the file is neither a Tessera native trace, a compressed ChampSim \
                     trace, nor lackey text: {}",
                    looks_like(head)
                )
            } else {
                format!(
                    "{what}: the line is binary data: first bytes {}",
                    hex_excerpt(&self.buf[start..end])
                )
            }
        } else {
            format!(
                "{what}: `{}{ellipsis}`",
                String::from_utf8_lossy(text).escape_debug()
            )
        };
        Error::trace(self.file.clone(), Location::Line(line), msg)
    }

    #[cold]
    fn bad_line(&self, start: usize, what: &str) -> Error {
        self.err(self.line, start, what)
    }

    /// Parse complete lines from `pos` into `out` until it holds `cap`
    /// records or the complete lines run out. Every line in
    /// `buf[pos..complete]` ends with `\n`, and no byte a field accepts is
    /// `\n`, so the indexing below never runs past the buffer.
    ///
    /// The state and the output columns are held in locals for the loop so
    /// they stay in registers (writes through `out` could alias them).
    fn parse_lines(&mut self, out: &mut AccessBatch, cap: usize) -> Result<()> {
        let buf = &self.buf[..self.complete];
        let mut pos = self.pos;
        let mut line = self.line;
        let mut pending = self.pending_gap;
        let mut spill = None;
        let mut gaps = std::mem::take(&mut out.ins_gap);
        let mut addrs = std::mem::take(&mut out.vaddr);
        let mut kinds = std::mem::take(&mut out.kind);
        let mut sizes = std::mem::take(&mut out.size);
        macro_rules! push {
            ($gap:expr, $addr:expr, $kind:expr, $size:expr) => {{
                gaps.push($gap);
                addrs.push($addr);
                kinds.push($kind);
                sizes.push($size);
            }};
        }
        let res: std::result::Result<(), (usize, &'static str)> = loop {
            if addrs.len() >= cap || pos >= buf.len() {
                break Ok(());
            }
            let start = pos;
            let b = &buf[start..];
            line += 1;
            if b[0] == b'\n' {
                pos += 1;
                continue;
            }
            let kind = match (b[0], b[1]) {
                (b'I', b' ') => b'I',
                (b' ', k @ (b'L' | b'S' | b'M')) => k,
                (b'=', b'=') => {
                    pos = start + line_len(b);
                    continue;
                }
                _ => {
                    if let Some(len) = blank_len(b) {
                        pos = start + len;
                        continue;
                    }
                    break Err((
                        start,
                        "not a lackey record (expected `I  `, ` L `, ` S `, ` M ` or `==`)",
                    ));
                }
            };
            if b[2] != b' ' {
                break Err((
                    start,
                    "not a lackey record (expected a space after the kind)",
                ));
            }
            let mut i = 3;
            let mut addr: u64 = 0;
            loop {
                let d = HEX[b[i] as usize];
                if d == NOT_HEX {
                    break;
                }
                addr = (addr << 4) | d as u64;
                i += 1;
            }
            let digits = i - 3;
            if digits == 0 {
                break Err((start, "bad hex address"));
            }
            if digits > 16 {
                break Err((start, "address has more than 16 hex digits"));
            }
            if b[i] != b',' {
                break Err((start, "expected `,` after the address"));
            }
            i += 1;
            let dstart = i;
            let mut size: u32 = 0;
            while b[i].is_ascii_digit() && i - dstart < 4 {
                size = size * 10 + (b[i] - b'0') as u32;
                i += 1;
            }
            if i == dstart {
                break Err((start, "bad size (expected a decimal number)"));
            }
            let end = match b[i] {
                b'\n' => i + 1,
                b'\r' if b[i + 1] == b'\n' => i + 2,
                c if c.is_ascii_digit() => break Err((start, "size larger than 255")),
                _ => break Err((start, "unexpected text after the size")),
            };
            if size > 255 {
                break Err((start, "size larger than 255"));
            }
            let size = size as u8;
            match kind {
                b'I' => {
                    let Some(g) = pending.checked_add(1) else {
                        break Err((start, "more than 2^32 instructions without an access"));
                    };
                    if size == 0 {
                        pending = g;
                    } else {
                        push!(g, addr, AccessKind::IFetch, size);
                        pending = 0;
                    }
                }
                _ if size == 0 => break Err((start, "data access of size 0")),
                b'L' => {
                    push!(pending, addr, AccessKind::Load, size);
                    pending = 0;
                }
                b'S' => {
                    push!(pending, addr, AccessKind::Store, size);
                    pending = 0;
                }
                _ => {
                    push!(pending, addr, AccessKind::Load, size);
                    pending = 0;
                    if addrs.len() < cap {
                        push!(0, addr, AccessKind::Store, size);
                    } else {
                        spill = Some((addr, size));
                    }
                }
            }
            pos = start + end;
        };
        let n = addrs.len();
        out.ins_gap = gaps;
        out.vaddr = addrs;
        out.kind = kinds;
        out.size = sizes;
        out.asid.resize(n, 0);
        self.pos = pos;
        self.line = line;
        self.pending_gap = pending;
        if spill.is_some() {
            self.spill = spill;
        }
        res.map_err(|(start, what)| self.bad_line(start, what))
    }
}

/// Length of the line at the start of `b`, including its `\n`.
#[cold]
fn line_len(b: &[u8]) -> usize {
    b.iter()
        .position(|&c| c == b'\n')
        .map_or(b.len(), |i| i + 1)
}

/// Length of the line at the start of `b` if it is whitespace only.
#[cold]
fn blank_len(b: &[u8]) -> Option<usize> {
    let n = line_len(b);
    b[..n].iter().all(|c| c.is_ascii_whitespace()).then_some(n)
}

impl<R: Read> AccessSource for LackeyReader<R> {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        let cap = batch_cap(out);
        if let Some((addr, size)) = self.spill.take() {
            out.push(0, addr, AccessKind::Store, size, 0);
        }
        while out.len() < cap {
            if self.pos >= self.complete && !self.refill()? {
                break;
            }
            self.parse_lines(out, cap)?;
        }
        Ok(!out.is_empty())
    }

    fn progress(&self) -> (u64, u64) {
        ((self.base + self.pos as u64).min(self.total), self.total)
    }

    fn describe(&self) -> String {
        format!("trace:{}", self.name)
    }
}

const ZERO_I: &[u8] = b"I  00000000,0\n";
const HEX_DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Append `v` as lowercase hex, zero-padded to at least 8 digits (`%08x`).
#[inline]
fn push_hex8(buf: &mut Vec<u8>, v: u64) {
    let digits = ((64 - v.leading_zeros() as usize).div_ceil(4)).max(8);
    for k in (0..digits).rev() {
        buf.push(HEX_DIGITS[((v >> (4 * k)) & 0xf) as usize]);
    }
}

#[inline]
fn push_dec(buf: &mut Vec<u8>, v: u8) {
    if v >= 100 {
        buf.push(b'0' + v / 100);
    }
    if v >= 10 {
        buf.push(b'0' + (v / 10) % 10);
    }
    buf.push(b'0' + v % 10);
}

/// What a finished [`LackeyWriter`] wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LackeySummary {
    pub records: u64,
    pub instructions: u64,
    pub lines: u64,
    pub bytes: u64,
}

/// Writes records as lackey text, atomically (temporary file + rename on
/// [`LackeyWriter::finish`]; dropped unfinished, it leaves nothing behind).
pub struct LackeyWriter {
    out: AtomicOutput,
    line: Vec<u8>,
    /// A `Load` not yet written: it may merge with the next record into ` M`.
    pending_load: Option<(u64, u8)>,
    records: u64,
    instructions: u64,
    lines: u64,
}

impl LackeyWriter {
    pub fn create(path: &Path) -> Result<Self> {
        Ok(LackeyWriter {
            out: AtomicOutput::create(path)?,
            line: Vec::with_capacity(1 << 16),
            pending_load: None,
            records: 0,
            instructions: 0,
            lines: 0,
        })
    }

    fn unrepresentable(&self, what: String) -> Error {
        Error::trace(
            self.out.dest_name(),
            Location::Line(self.lines + 1),
            format!(
                "record {} cannot be written as lackey text: {what}",
                self.records
            ),
        )
    }

    fn data_line(&mut self, tag: &[u8; 3], addr: u64, size: u8) {
        self.line.extend_from_slice(tag);
        push_hex8(&mut self.line, addr);
        self.line.push(b',');
        push_dec(&mut self.line, size);
        self.line.push(b'\n');
        self.lines += 1;
    }

    fn zero_lines(&mut self, n: u32) {
        for _ in 0..n {
            self.line.extend_from_slice(ZERO_I);
        }
        self.lines += n as u64;
    }

    fn flush_pending(&mut self) {
        if let Some((addr, size)) = self.pending_load.take() {
            self.data_line(b" L ", addr, size);
        }
    }

    pub fn write_batch(&mut self, b: &AccessBatch) -> Result<()> {
        let n = b.len();
        for i in 0..n {
            let (gap, addr, kind, size, asid) =
                (b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i], b.asid[i]);
            if asid != 0 {
                return Err(self.unrepresentable(format!(
                    "ASID {asid} (lackey text has no address spaces; keep it native)"
                )));
            }
            if size == 0 {
                return Err(self.unrepresentable(format!("{kind:?} of size 0")));
            }
            if kind == AccessKind::Store && gap == 0 && self.pending_load == Some((addr, size)) {
                self.pending_load = None;
                self.data_line(b" M ", addr, size);
            } else {
                self.flush_pending();
                match kind {
                    AccessKind::IFetch => {
                        if gap == 0 {
                            return Err(self.unrepresentable("IFetch with ins_gap 0".into()));
                        }
                        self.zero_lines(gap - 1);
                        self.data_line(b"I  ", addr, size);
                    }
                    AccessKind::Load => {
                        self.zero_lines(gap);
                        self.pending_load = Some((addr, size));
                    }
                    AccessKind::Store => {
                        self.zero_lines(gap);
                        self.data_line(b" S ", addr, size);
                    }
                }
            }
            self.records += 1;
            self.instructions += gap as u64;
            if self.line.len() >= 1 << 16 {
                self.out.write_all(&self.line)?;
                self.line.clear();
            }
        }
        Ok(())
    }

    pub fn finish(mut self) -> Result<LackeySummary> {
        self.flush_pending();
        let line = std::mem::take(&mut self.line);
        self.out.write_all(&line)?;
        let LackeyWriter {
            out,
            records,
            instructions,
            lines,
            ..
        } = self;
        let bytes = out.commit()?;
        Ok(LackeySummary {
            records,
            instructions,
            lines,
            bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read_all(text: &str, cap: usize) -> Result<Vec<(u32, u64, AccessKind, u8)>> {
        let mut r = LackeyReader::from_reader(
            text.as_bytes(),
            "t.lackey".into(),
            "t.lackey".into(),
            text.len() as u64,
        );
        let mut b = AccessBatch::with_capacity(cap);
        let mut v = Vec::new();
        while r.next_batch(&mut b)? {
            assert!(b.len() <= cap.max(1));
            for i in 0..b.len() {
                assert_eq!(b.asid[i], 0);
                v.push((b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i]));
            }
        }
        assert_eq!(r.progress(), (text.len() as u64, text.len() as u64));
        Ok(v)
    }

    #[test]
    fn modify_becomes_load_then_store_even_across_batches() {
        let text = "I  0401b7a7,4\n M 04033e06,1\n";
        for cap in [1, 2, 3, 100] {
            let v = read_all(text, cap).unwrap();
            assert_eq!(
                v,
                vec![
                    (1, 0x0401b7a7, AccessKind::IFetch, 4),
                    (0, 0x04033e06, AccessKind::Load, 1),
                    (0, 0x04033e06, AccessKind::Store, 1),
                ]
            );
        }
    }

    #[test]
    fn zero_size_fetch_adds_to_next_gap() {
        let v = read_all(
            "I  00000000,0\nI  00000000,0\n L 10,8\nI  00000000,0\nI  20,2\n",
            8,
        )
        .unwrap();
        assert_eq!(
            v,
            vec![
                (2, 0x10, AccessKind::Load, 8),
                (2, 0x20, AccessKind::IFetch, 2)
            ]
        );
    }

    #[test]
    fn last_line_without_newline_and_crlf_are_read() {
        let v = read_all("I  10,4\r\n S 1fff0006c0,16", 8).unwrap();
        assert_eq!(
            v,
            vec![
                (1, 0x10, AccessKind::IFetch, 4),
                (0, 0x1fff0006c0, AccessKind::Store, 16)
            ]
        );
    }

    #[test]
    fn error_quotes_line_and_number() {
        let e = read_all("I  10,4\n\n X 10,4\n", 8).unwrap_err();
        match e {
            Error::Trace {
                file,
                location,
                msg,
            } => {
                assert_eq!(file, "t.lackey");
                assert_eq!(location, Location::Line(3));
                assert!(msg.contains("` X 10,4`"), "{msg}");
            }
            e => panic!("{e}"),
        }
    }

    #[test]
    fn hex_formatting_matches_printf() {
        let mut v = Vec::new();
        push_hex8(&mut v, 0);
        v.push(b' ');
        push_hex8(&mut v, 0x1fff0006c0);
        v.push(b' ');
        push_hex8(&mut v, u64::MAX);
        v.push(b' ');
        push_dec(&mut v, 255);
        push_dec(&mut v, 7);
        push_dec(&mut v, 16);
        assert_eq!(
            std::str::from_utf8(&v).unwrap(),
            "00000000 1fff0006c0 ffffffffffffffff 255716"
        );
    }
}
