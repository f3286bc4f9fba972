//! ChampSim instruction traces (xz-, gzip- or zstd-compressed 64-byte
//! `input_instr` records): a streaming reader.
//!
//! ## What it models
//! A ChampSim trace is a compressed stream of fixed 64-byte little-endian
//! records, one per executed instruction, with no header, footer or count
//! (ChampSim `inc/trace_instruction.h`; FORMATS.md §1.1):
//!
//! ```text
//! offset size field
//!      0    8 ip                          u64, virtual PC
//!      8    1 is_branch                   u8, 0 or 1
//!      9    1 branch_taken                u8, 0 or 1
//!     10    2 destination_registers[2]    u8 each, 0 = empty
//!     12    4 source_registers[4]         u8 each, 0 = empty
//!     16   16 destination_memory[2]       u64 each: store addresses, 0 = empty
//!     32   32 source_memory[4]            u64 each: load addresses, 0 = empty
//! ```
//!
//! Mapping onto records (see the instruction-gap convention in [`crate::access`]):
//! - Every record is one instruction. Its accesses are, in this order: the
//!   instruction fetch at `ip` (only with [`ChampsimOptions::ifetch`]), then a
//!   `Load` for each non-empty `source_memory` slot in slot order, then a
//!   `Store` for each non-empty `destination_memory` slot in slot order.
//!   Loads come before stores because an instruction reads its operands before
//!   it writes its result (a read-modify-write `add [m], r` lists `m` in both).
//! - The first access of an instruction carries `ins_gap` = 1 + the number of
//!   preceding instructions that made no access; the others carry 0. So the
//!   sum of gaps is the number of instructions, except for instructions after
//!   the last access of the trace, which no record can carry (as in lackey).
//! - ASID 0: a ChampSim trace is one process.
//! - **Dependencies** (the stream's `dep` column, read by the out-of-order
//!   timing model) come from the register fields, as a dataflow through
//!   registers: each register remembers the latest load its value (through
//!   any chain of instructions) came from. An instruction's loads and stores
//!   depend on the latest such load among its source registers; its
//!   destination registers then come from its last load when it has one,
//!   else from its sources' latest load.
//!
//! ## Choices where the format is silent
//! - **Instruction fetches are off by default**, so an instruction TLB sees
//!   nothing unless asked: ChampSim users mostly study the data side, and an
//!   `IFetch` per instruction would more than double the records. With
//!   `ifetch` on, each instruction becomes an `IFetch` of [`IFETCH_SIZE`]
//!   bytes (the record has no instruction length).
//! - **Data access size: [`DEFAULT_ACCESS_SIZE`] = 8 bytes** by default
//!   (configurable 1..=64): the Pin tracer records effective addresses without
//!   sizes; 8 bytes is the common x86-64 operand size. A size matters only for
//!   accesses that straddle a page boundary.
//! - **Addresses below 4096 are dropped** (not counted as accesses): page 0 is
//!   never mapped on Linux, and the Pin tracer's `WriteToSet` overflow can leave
//!   a register number in the low byte of a memory slot (FORMATS.md §1.2).
//! - **Compression is detected by magic bytes**, not by file name: xz
//!   (`FD 37 7A 58 5A 00`, concatenated streams allowed), gzip (`1F 8B`,
//!   concatenated members allowed) or zstd (`28 B5 2F FD`, concatenated
//!   frames allowed; windows up to zstd's default limit of 128 MiB). Anything
//!   else is an error saying what the file looks like; an uncompressed trace
//!   cannot be told from arbitrary bytes (compress it, or convert it).
//! - **Which registers form an address** is not in the record, so:
//!   the flags ([`REG_FLAGS`]) and the instruction pointer
//!   ([`REG_INSTRUCTION_POINTER`], RIP-relative operands; a return address
//!   is predicted, not waited for) never do; the stack pointer
//!   ([`REG_STACK_POINTER`]) written by a load instruction (push, pop, call,
//!   ret) takes its implicit update, not the loaded value; and in an
//!   instruction that writes the flags (an ALU op with a memory operand, as
//!   `add rax, [rdx]`), a register that is both source and destination is
//!   its data operand, not its address (`mov` writes no flags, so a pointer
//!   chase `mov rax, [rax]` keeps its dependency). What remains an
//!   overestimate: a compare or test of a loaded value against memory
//!   (`cmp rax, [rdx]` waits for `rax`'s load).
//! - **Sanity check:** `is_branch` and `branch_taken` must be 0 or 1. This
//!   catches a compressed file that is not a ChampSim trace (e.g. a gzipped
//!   lackey log) at its first record instead of producing garbage accesses.
//!
//! ## Errors
//! Every problem is an [`Error::Trace`] naming the file and, as the location,
//! the byte offset in the *decompressed* stream of the record at fault (record
//! number × 64; compressed offsets do not point at records). The message also
//! gives the record number and, for decoder errors, how far into the
//! compressed file the decoder had read. Cases: unknown magic (offset 0), a
//! corrupt or truncated compressed stream, a final partial record (the
//! decompressed length is not a multiple of 64), and a bad branch byte.
//!
//! ## Speed
//! Records are decoded 4096 at a time out of one reusable buffer; nothing is
//! allocated per record. xz decoding dominates (FORMATS.md §1.3: ≈7.5 M
//! instructions/s for xz, ≈23 M/s for gzip on this machine).

use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use flate2::read::MultiGzDecoder;
use liblzma::read::XzDecoder;

use crate::access::{AccessBatch, AccessKind};
use crate::error::{Error, Location, Result};
use crate::stream::AccessSource;
use crate::trace::{batch_cap, display_name, looks_like, source_name, LOOKS_LIKE_LEN};

/// Bytes per `input_instr` record.
pub const RECORD_LEN: usize = 64;
/// First bytes of an xz stream.
pub const XZ_MAGIC: [u8; 6] = [0xFD, b'7', b'z', b'X', b'Z', 0x00];
/// First bytes of a gzip member.
pub const GZIP_MAGIC: [u8; 2] = [0x1F, 0x8B];
/// First bytes of a zstd frame.
pub const ZSTD_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];
/// Default size of a data access (the record has none).
pub const DEFAULT_ACCESS_SIZE: u8 = 8;
/// Size of an instruction fetch when fetches are enabled.
pub const IFETCH_SIZE: u8 = 4;
/// ChampSim's register numbers for the stack pointer, flags and instruction
/// pointer (`inc/trace_instruction.h`).
pub const REG_STACK_POINTER: u8 = 6;
pub const REG_FLAGS: u8 = 25;
pub const REG_INSTRUCTION_POINTER: u8 = 26;
/// Addresses below this are empty or tracer overflow, not accesses.
pub const MIN_ADDR: u64 = 4096;
/// Records decoded per read.
const CHUNK_RECORDS: usize = 4096;

/// How ChampSim records become accesses.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ChampsimOptions {
    /// Emit an `IFetch` at `ip` for every instruction.
    pub ifetch: bool,
    /// Size in bytes of every load and store (1..=64).
    pub access_size: u8,
}

impl Default for ChampsimOptions {
    fn default() -> Self {
        ChampsimOptions {
            ifetch: false,
            access_size: DEFAULT_ACCESS_SIZE,
        }
    }
}

impl ChampsimOptions {
    /// Check the options; the error names the option key.
    pub fn validate(&self) -> Result<()> {
        if self.access_size == 0 || self.access_size > 64 {
            return Err(Error::config(
                "champsim.access_size",
                format!("must be between 1 and 64 bytes, not {}", self.access_size),
            ));
        }
        Ok(())
    }
}

/// Which decompressor a trace needs.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Compression {
    Xz,
    Gzip,
    Zstd,
}

impl Compression {
    /// Recognise the compression from a file's first bytes.
    pub fn sniff(head: &[u8]) -> Option<Compression> {
        if head.starts_with(&XZ_MAGIC) {
            Some(Compression::Xz)
        } else if head.starts_with(&GZIP_MAGIC) {
            Some(Compression::Gzip)
        } else if head.starts_with(&ZSTD_MAGIC) {
            Some(Compression::Zstd)
        } else {
            None
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Compression::Xz => "xz",
            Compression::Gzip => "gzip",
            Compression::Zstd => "zstd",
        }
    }
}

/// Counts the compressed bytes the decoder has pulled, for progress and for
/// locating decoder errors.
struct Counting<R> {
    inner: R,
    n: u64,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n += k as u64;
        Ok(k)
    }
}

/// The two decoders; an enum so the reader stays one concrete type.
enum Decoder<R: Read> {
    Xz(XzDecoder<Counting<R>>),
    Gzip(MultiGzDecoder<Counting<R>>),
    Zstd(zstd::stream::read::Decoder<'static, BufReader<Counting<R>>>),
}

impl<R: Read> Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Decoder::Xz(d) => d.read(buf),
            Decoder::Gzip(d) => d.read(buf),
            Decoder::Zstd(d) => d.read(buf),
        }
    }

    fn compressed_in(&self) -> u64 {
        match self {
            Decoder::Xz(d) => d.get_ref().n,
            Decoder::Gzip(d) => d.get_ref().n,
            Decoder::Zstd(d) => d.get_ref().get_ref().n,
        }
    }
}

/// Streaming reader of a ChampSim trace.
pub struct ChampsimReader<R: Read = File> {
    dec: Decoder<R>,
    compression: Compression,
    opts: ChampsimOptions,
    file: String,
    name: String,
    total: u64,
    /// Decompressed bytes; `buf[pos..filled]` is not yet decoded.
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    eof: bool,
    /// Decompressed bytes dropped from the front of `buf` so far.
    base: u64,
    /// Instructions since the last emitted access, including any of the
    /// current record that have not been attributed yet.
    pending: u32,
    /// Accesses of a record that did not fit in the last batch.
    spill: [Access; 7],
    spill_len: usize,
    spill_pos: usize,
    spill_gap: u32,
    /// Records made so far (the index of the next one).
    records: u64,
    /// Per register, the latest load (record index + 1; 0: none) its value came from.
    producer: [u64; 256],
}

impl ChampsimReader<File> {
    pub fn open(path: &Path, opts: ChampsimOptions) -> Result<Self> {
        let file = display_name(path);
        let mut f = File::open(path).map_err(|e| Error::io(file.clone(), e))?;
        let total = f.metadata().map_err(|e| Error::io(file.clone(), e))?.len();
        let mut head = [0u8; LOOKS_LIKE_LEN];
        let got = read_upto(&mut f, &mut head).map_err(|e| Error::io(file.clone(), e))?;
        let compression = Compression::sniff(&head[..got])
            .ok_or_else(|| unknown_magic(&file, &head[..got]))?;
        // Reopen rather than seek: `Counting` must see the file from byte 0.
        let f = File::open(path).map_err(|e| Error::io(file.clone(), e))?;
        Self::from_reader(f, compression, opts, file, source_name(path), total)
    }
}

/// The error for a file without a compression magic; `head` is its first
/// bytes (up to [`LOOKS_LIKE_LEN`]).
pub fn unknown_magic(file: &str, head: &[u8]) -> Error {
    Error::trace(
        file,
        Location::Offset(0),
        format!(
            "unknown magic bytes {:02x?}: a ChampSim trace must be xz-, gzip- or zstd-compressed; {}",
            &head[..head.len().min(ZSTD_MAGIC.len().max(XZ_MAGIC.len()))],
            looks_like(head)
        ),
    )
}

fn read_upto(r: &mut impl Read, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> ChampsimReader<R> {
    /// Read a compressed stream from any byte source. `file` names it in
    /// errors, `name` in `describe()`, `total` is its compressed length.
    pub fn from_reader(
        inner: R,
        compression: Compression,
        opts: ChampsimOptions,
        file: String,
        name: String,
        total: u64,
    ) -> Result<Self> {
        opts.validate()?;
        let counting = Counting { inner, n: 0 };
        let dec = match compression {
            Compression::Xz => Decoder::Xz(XzDecoder::new_multi_decoder(counting)),
            Compression::Gzip => Decoder::Gzip(MultiGzDecoder::new(counting)),
            Compression::Zstd => Decoder::Zstd(
                zstd::stream::read::Decoder::new(counting).map_err(|e| Error::io(file.clone(), e))?,
            ),
        };
        Ok(ChampsimReader {
            dec,
            compression,
            opts,
            file,
            name,
            total,
            buf: vec![0; CHUNK_RECORDS * RECORD_LEN],
            pos: 0,
            filled: 0,
            eof: false,
            base: 0,
            pending: 0,
            spill: [(0, AccessKind::Load, 0, 0); 7],
            spill_len: 0,
            records: 0,
            producer: [0; 256],
            spill_pos: 0,
            spill_gap: 0,
        })
    }

    /// The compression the trace uses.
    pub fn compression(&self) -> Compression {
        self.compression
    }

    /// Instructions read so far (whole records decoded).
    pub fn instructions_read(&self) -> u64 {
        (self.base + self.pos as u64) / RECORD_LEN as u64
    }

    fn fail(&self, offset: u64, msg: String) -> Error {
        Error::trace(self.file.clone(), Location::Offset(offset), msg)
    }

    /// Make at least one whole record available in `buf[pos..filled]`;
    /// `false` at the clean end of the stream.
    fn refill(&mut self) -> Result<bool> {
        if self.filled - self.pos >= RECORD_LEN {
            return Ok(true);
        }
        if self.pos > 0 {
            self.buf.copy_within(self.pos..self.filled, 0);
            self.filled -= self.pos;
            self.base += self.pos as u64;
            self.pos = 0;
        }
        while !self.eof && self.filled < self.buf.len() {
            match self.dec.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    let at = self.base + (self.filled / RECORD_LEN * RECORD_LEN) as u64;
                    return Err(self.fail(
                        at,
                        format!(
                            "corrupt or truncated {} stream at record {} (the decoder had read {} of {} compressed bytes): {e}",
                            self.compression.name(),
                            at / RECORD_LEN as u64,
                            self.dec.compressed_in(),
                            self.total,
                        ),
                    ));
                }
            }
        }
        if self.filled >= RECORD_LEN {
            return Ok(true);
        }
        if self.filled == 0 {
            return Ok(false);
        }
        Err(self.fail(
            self.base,
            format!(
                "truncated record {}: the decompressed trace ends {} bytes into it \
                 (its length is not a multiple of {RECORD_LEN})",
                self.base / RECORD_LEN as u64,
                self.filled
            ),
        ))
    }

    #[cold]
    fn bad_branch(&self, at: usize, field: &str, v: u8) -> Error {
        let off = self.base + at as u64;
        self.fail(
            off,
            format!(
                "record {}: {field} byte is {v} (must be 0 or 1); not a ChampSim input_instr trace?",
                off / RECORD_LEN as u64
            ),
        )
    }
}

/// An access of an instruction: address, kind, size, dependency distance.
type Access = (u64, AccessKind, u8, u32);

#[inline]
fn u64_at(r: &[u8], i: usize) -> u64 {
    u64::from_le_bytes(r[i..i + 8].try_into().unwrap())
}

impl<R: Read> AccessSource for ChampsimReader<R> {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        let cap = batch_cap(out);
        // Finish a record that did not fit in the previous batch.
        while self.spill_pos < self.spill_len && out.len() < cap {
            let (a, k, s, d) = self.spill[self.spill_pos];
            out.push_dep(self.spill_gap, a, k, s, 0, d);
            self.spill_gap = 0;
            self.spill_pos += 1;
        }
        let size = self.opts.access_size;
        let ifetch = self.opts.ifetch;
        while out.len() < cap {
            if !self.refill()? {
                break;
            }
            while self.filled - self.pos >= RECORD_LEN && out.len() < cap {
                let at = self.pos;
                let r = &self.buf[at..at + RECORD_LEN];
                if r[8] > 1 {
                    return Err(self.bad_branch(at, "is_branch", r[8]));
                }
                if r[9] > 1 {
                    return Err(self.bad_branch(at, "branch_taken", r[9]));
                }
                // Collect this instruction's accesses: fetch, loads, stores.
                let mut acc: [Access; 7] = [(0, AccessKind::Load, 0, 0); 7];
                let mut n = 0;
                if ifetch {
                    acc[0] = (u64_at(r, 0), AccessKind::IFetch, IFETCH_SIZE, 0);
                    n = 1;
                }
                let (dst, src) = ([r[10], r[11]], [r[12], r[13], r[14], r[15]]);
                let writes_flags = dst.contains(&REG_FLAGS);
                // The latest load among the registers that may form the address.
                let mut feeds = 0u64;
                for reg in src {
                    let special = reg == 0 || reg == REG_FLAGS || reg == REG_INSTRUCTION_POINTER;
                    if !special && !(writes_flags && dst.contains(&reg)) {
                        feeds = feeds.max(self.producer[reg as usize]);
                    }
                }
                let first = self.records;
                let dep_of = |k: usize| if feeds == 0 { 0 } else { (first + k as u64 + 1 - feeds).min(u32::MAX as u64) as u32 };
                let mut last_load = 0u64;
                for s in 0..4 {
                    let a = u64_at(r, 32 + 8 * s);
                    if a >= MIN_ADDR {
                        acc[n] = (a, AccessKind::Load, size, dep_of(n));
                        n += 1;
                        last_load = first + n as u64;
                    }
                }
                for s in 0..2 {
                    let a = u64_at(r, 16 + 8 * s);
                    if a >= MIN_ADDR {
                        acc[n] = (a, AccessKind::Store, size, dep_of(n));
                        n += 1;
                    }
                }
                // The destinations take the loaded value, else their sources'
                // (the instruction pointer's value is predicted, not awaited).
                let all_src = src
                    .iter()
                    .filter(|&&g| g != 0 && g != REG_INSTRUCTION_POINTER)
                    .map(|&g| self.producer[g as usize])
                    .max()
                    .unwrap_or(0);
                for reg in dst {
                    if reg != 0 {
                        let from_load = last_load != 0 && reg != REG_STACK_POINTER;
                        self.producer[reg as usize] = if from_load { last_load } else { all_src };
                    }
                }
                self.records += n as u64;
                self.pos += RECORD_LEN;
                let Some(gap) = self.pending.checked_add(1) else {
                    return Err(self.fail(
                        self.base + at as u64,
                        "more than 2^32 instructions without an access".into(),
                    ));
                };
                if n == 0 {
                    self.pending = gap;
                    continue;
                }
                self.pending = 0;
                let room = (cap - out.len()).min(n);
                let mut g = gap;
                for &(a, k, s, d) in &acc[..room] {
                    out.push_dep(g, a, k, s, 0, d);
                    g = 0;
                }
                if room < n {
                    self.spill = acc;
                    self.spill_pos = room;
                    self.spill_len = n;
                    self.spill_gap = g;
                }
            }
        }
        Ok(!out.is_empty())
    }

    fn progress(&self) -> (u64, u64) {
        (self.dec.compressed_in().min(self.total), self.total)
    }

    fn describe(&self) -> String {
        format!("trace:{}", self.name)
    }

    fn carries_dependencies(&self) -> bool {
        true
    }
}
