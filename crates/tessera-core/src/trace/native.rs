//! Tessera's native binary trace format (`.tess`): a streaming reader and an
//! atomic writer.
//!
//! ## What it models
//! Fixed 16-byte little-endian records in independently zstd-compressed,
//! checksummed blocks of up to 65 536 records, framed by a header and an end
//! block with totals. The byte-level layout is specified in
//! `docs/trace-format.md`; the constants below are the single source of truth
//! for the numbers in it.
//!
//! ```text
//! header   magic[8] = 89 54 45 53 53 0d 0a 1a ("\x89TESS\r\n\x1a")
//!          u16 version (1 or 2), u16 flags, u32 meta_len, meta_len bytes of JSON
//! block*   u32 compressed_len, u32 records (1..=65536), u64 xxh3_64(uncompressed),
//!          compressed_len bytes: one zstd frame of records × 16 (or 20) bytes
//! end      u32 0, u32 0, u64 0, u64 total_records, u64 total_instructions,
//!          magic[8] = "TESS-END"
//! record   u64 vaddr, u32 ins_gap, u16 asid, u8 kind (0 load, 1 store, 2 ifetch), u8 size
//!          [u32 dep, with flag DEPS]
//! ```
//!
//! Versions: version 1 defines no flags. Version 2 defines flag bit 0, DEPS:
//! each record carries a fifth field, the distance back in records to the
//! load its address depends on (0: none; see [`crate::access`]). The writer
//! writes version 1 for a stream without dependencies, so those files are
//! byte-for-byte what earlier builds wrote and read, and version 2 with DEPS
//! only for one with them ([`WriterOptions::dependencies`]).
//!
//! ## Choices
//! - Every malformed input is an [`Error::Trace`] with the byte offset of the
//!   header field or block at fault, never a panic: a truncated or bit-flipped
//!   file is found by the length checks, the zstd frame, the per-block xxh3,
//!   the kind byte check, the end-block totals and the trailing magic. A
//!   dependency reaching before the trace's first record is an error naming
//!   its block and record.
//! - Lengths read from the file are bounded before anything is allocated
//!   (metadata ≤ 16 MiB, a block ≤ zstd's bound for 1 MiB), so a flipped length
//!   byte cannot make the reader allocate gigabytes.
//! - The writer compresses at zstd level [`ZSTD_LEVEL`] (another level can be
//!   chosen with [`WriterOptions`]; readers do not care) and fsyncs before the
//!   rename that publishes the file.
//! - Optionally ([`WriterOptions::background`]) a second thread compresses,
//!   checksums and writes the blocks, fed through a bounded queue of
//!   `QUEUE_BLOCKS` (2) blocks; the file is byte-for-byte the same. An error on
//!   that thread is reported by the next block handed over or by `finish`;
//!   an unfinished writer's drop waits for the thread, so the temporary file
//!   is gone when the drop returns.

use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::access::{AccessBatch, AccessKind};
use crate::error::{Error, Location, Result};
use crate::stream::AccessSource;
use crate::trace::output::AtomicOutput;
use crate::trace::{batch_cap, display_name, looks_like, source_name, LOOKS_LIKE_LEN};

/// First 8 bytes of every native trace.
pub const MAGIC: [u8; 8] = *b"\x89TESS\r\n\x1a";
/// Last 8 bytes of every complete native trace.
pub const END_MAGIC: [u8; 8] = *b"TESS-END";
/// Newest version this build writes (with dependencies; without, it writes 1).
pub const VERSION: u16 = 2;
/// Versions this build reads.
pub const SUPPORTED_VERSIONS: &[u16] = &[1, 2];
/// Header flag (version 2): records carry a dependency field.
pub const FLAG_DEPS: u16 = 1;
/// Fixed part of the file header (magic, version, flags, metadata length).
pub const HEADER_LEN: u64 = 16;
pub const BLOCK_HEADER_LEN: usize = 16;
pub const RECORD_LEN: usize = 16;
/// A record's length with [`FLAG_DEPS`].
pub const DEP_RECORD_LEN: usize = 20;
/// Most records one block holds.
pub const BLOCK_RECORDS: usize = 65536;
/// Largest metadata JSON accepted.
pub const MAX_META_LEN: u32 = 16 << 20;
/// zstd level the writer uses.
pub const ZSTD_LEVEL: i32 = 3;

fn max_compressed_len() -> usize {
    zstd::zstd_safe::compress_bound(BLOCK_RECORDS * DEP_RECORD_LEN)
}

/// Streaming reader of a native trace.
pub struct NativeReader<R: Read = File> {
    inner: R,
    file: String,
    name: String,
    /// Bytes consumed from the file.
    offset: u64,
    total: u64,
    version: u16,
    /// Bytes per record (16, or 20 with dependencies).
    rec_len: usize,
    meta: serde_json::Value,
    dec: zstd::bulk::Decompressor<'static>,
    comp: Vec<u8>,
    /// Uncompressed records of the current block.
    data: Vec<u8>,
    /// Next record (byte index) in `data`.
    cur: usize,
    /// File offset of the current block's header.
    block_offset: u64,
    records: u64,
    instructions: u64,
    done: bool,
}

impl NativeReader<File> {
    pub fn open(path: &Path) -> Result<Self> {
        let file = display_name(path);
        let f = File::open(path).map_err(|e| Error::io(file.clone(), e))?;
        let total = f.metadata().map_err(|e| Error::io(file.clone(), e))?.len();
        Self::from_reader(f, file, source_name(path), total)
    }
}

impl<R: Read> NativeReader<R> {
    /// Read from any byte source (the header is read and checked here). `file`
    /// names it in errors, `name` in `describe()`, `total` is its length.
    pub fn from_reader(inner: R, file: String, name: String, total: u64) -> Result<Self> {
        let dec = zstd::bulk::Decompressor::new().map_err(|e| Error::io(file.clone(), e))?;
        let mut r = NativeReader {
            inner,
            file,
            name,
            offset: 0,
            total,
            version: 0,
            rec_len: RECORD_LEN,
            meta: serde_json::Value::Null,
            dec,
            comp: Vec::new(),
            data: Vec::new(),
            cur: 0,
            block_offset: 0,
            records: 0,
            instructions: 0,
            done: false,
        };
        r.read_header()?;
        Ok(r)
    }

    /// Format version of the file.
    pub fn version(&self) -> u16 {
        self.version
    }

    /// Whether the records carry dependencies (version 2, flag DEPS).
    pub fn has_dependencies(&self) -> bool {
        self.rec_len == DEP_RECORD_LEN
    }

    /// The metadata JSON stored in the header.
    pub fn meta(&self) -> &serde_json::Value {
        &self.meta
    }

    fn fail(&self, offset: u64, msg: impl Into<String>) -> Error {
        Error::trace(self.file.clone(), Location::Offset(offset), msg)
    }

    /// Read as many bytes as fit in `buf`; returns the count (short only at EOF).
    fn read_upto(&mut self, buf: &mut [u8]) -> Result<usize> {
        let mut got = 0;
        while got < buf.len() {
            match self.inner.read(&mut buf[got..]) {
                Ok(0) => break,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(self.file.clone(), e)),
            }
        }
        self.offset += got as u64;
        Ok(got)
    }

    fn read_exact(&mut self, buf: &mut [u8], what: &str) -> Result<()> {
        let start = self.offset;
        let got = self.read_upto(buf)?;
        if got < buf.len() {
            return Err(self.fail(
                start,
                format!(
                    "truncated: {what} needs {} bytes, the file ends after {got}",
                    buf.len()
                ),
            ));
        }
        Ok(())
    }

    fn read_header(&mut self) -> Result<()> {
        let mut h = [0u8; HEADER_LEN as usize];
        let got = self.read_upto(&mut h[..8])?;
        if h[..got] != MAGIC[..got] || got == 0 {
            // Read a little more so the message can say what the file is.
            let mut head = [0u8; LOOKS_LIKE_LEN];
            head[..got].copy_from_slice(&h[..got]);
            let more = if got == 8 {
                self.read_upto(&mut head[8..])?
            } else {
                0
            };
            return Err(self.fail(
                0,
                format!(
                    "not a Tessera native trace (no TESS magic at offset 0); {}",
                    looks_like(&head[..got + more])
                ),
            ));
        }
        if got < 8 {
            return Err(self.fail(
                0,
                format!("truncated header: the file ends after {got} bytes"),
            ));
        }
        let mut rest = [0u8; 8];
        self.read_exact(&mut rest, "header")?;
        h[8..].copy_from_slice(&rest);
        let version = u16::from_le_bytes([h[8], h[9]]);
        if !SUPPORTED_VERSIONS.contains(&version) {
            let list: Vec<String> = SUPPORTED_VERSIONS.iter().map(|v| v.to_string()).collect();
            return Err(self.fail(
                8,
                format!(
                    "unsupported trace version {version} (this build reads version {})",
                    list.join(", ")
                ),
            ));
        }
        let flags = u16::from_le_bytes([h[10], h[11]]);
        let known = if version == 1 { 0 } else { FLAG_DEPS };
        if flags & !known != 0 {
            let defined = if version == 1 { "version 1 defines none" } else { "version 2 defines 0x0001, dependencies" };
            return Err(self.fail(10, format!("unsupported flags {flags:#06x} ({defined})")));
        }
        self.rec_len = if flags & FLAG_DEPS != 0 { DEP_RECORD_LEN } else { RECORD_LEN };
        let meta_len = u32::from_le_bytes([h[12], h[13], h[14], h[15]]);
        if meta_len > MAX_META_LEN {
            return Err(self.fail(
                12,
                format!("corrupt header: metadata length {meta_len} exceeds 16 MiB"),
            ));
        }
        let mut meta = vec![0u8; meta_len as usize];
        self.read_exact(&mut meta, "metadata")?;
        self.meta = if meta.is_empty() {
            serde_json::Value::Null
        } else {
            serde_json::from_slice(&meta).map_err(|e| {
                self.fail(
                    HEADER_LEN,
                    format!("corrupt header: metadata is not valid JSON ({e})"),
                )
            })?
        };
        self.version = version;
        Ok(())
    }

    /// Load the next block into `data`. Returns `false` after the end block.
    fn next_block(&mut self) -> Result<bool> {
        if self.done {
            return Ok(false);
        }
        let at = self.offset;
        self.block_offset = at;
        let mut h = [0u8; BLOCK_HEADER_LEN];
        let got = self.read_upto(&mut h)?;
        if got == 0 {
            return Err(self.fail(at, "truncated: missing end block"));
        }
        if got < BLOCK_HEADER_LEN {
            return Err(self.fail(
                at,
                format!("truncated block header: the file ends after {got} of 16 bytes"),
            ));
        }
        let clen = u32::from_le_bytes(h[0..4].try_into().unwrap()) as usize;
        let count = u32::from_le_bytes(h[4..8].try_into().unwrap()) as usize;
        let hash = u64::from_le_bytes(h[8..16].try_into().unwrap());
        if count == 0 {
            if clen != 0 || hash != 0 {
                return Err(self.fail(
                    at,
                    "corrupt block: a block of 0 records must have length and checksum 0",
                ));
            }
            self.read_end(at)?;
            self.done = true;
            return Ok(false);
        }
        if count > BLOCK_RECORDS || clen == 0 || clen > max_compressed_len() {
            return Err(self.fail(
                at,
                format!("corrupt block: header says {count} records in {clen} compressed bytes"),
            ));
        }
        let mut comp = std::mem::take(&mut self.comp);
        comp.resize(clen, 0);
        let read = self.read_exact(&mut comp, "block");
        if let Err(e) = read {
            self.comp = comp;
            return Err(match e {
                Error::Trace { msg, .. } => self.fail(at, msg),
                e => e,
            });
        }
        let want = count * self.rec_len;
        self.data.clear();
        self.data.reserve(want);
        let res = self.dec.decompress_to_buffer(&comp[..], &mut self.data);
        self.comp = comp;
        match res {
            Ok(n) if n == want => {}
            Ok(n) => {
                return Err(self.fail(
                    at,
                    format!("corrupt block: {n} bytes decompressed, header says {want}"),
                ))
            }
            Err(e) => return Err(self.fail(at, format!("corrupt block: zstd: {e}"))),
        }
        if xxhash_rust::xxh3::xxh3_64(&self.data) != hash {
            return Err(self.fail(at, "corrupt block: checksum mismatch"));
        }
        self.cur = 0;
        Ok(true)
    }

    fn read_end(&mut self, at: u64) -> Result<()> {
        let mut t = [0u8; 24];
        self.read_exact(&mut t, "end block totals")?;
        let records = u64::from_le_bytes(t[0..8].try_into().unwrap());
        let instructions = u64::from_le_bytes(t[8..16].try_into().unwrap());
        if t[16..24] != END_MAGIC {
            return Err(self.fail(at + 16 + 16, "corrupt end block: wrong trailing magic"));
        }
        if records != self.records || instructions != self.instructions {
            return Err(self.fail(
                at + 16,
                format!(
                    "totals mismatch: end block says {records} records and {instructions} instructions, \
                     the blocks hold {} and {}",
                    self.records, self.instructions
                ),
            ));
        }
        let mut extra = [0u8; 1];
        if self.read_upto(&mut extra)? != 0 {
            return Err(self.fail(self.offset - 1, "trailing data after the end block"));
        }
        Ok(())
    }

    #[cold]
    fn bad_dep(&self, rec: usize, index: u64, dep: u32) -> Error {
        self.fail(
            self.block_offset,
            format!(
                "corrupt block: record {rec} (record {index} of the trace) depends on the record {dep} before it, \
                 before the trace's first record"
            ),
        )
    }

    #[cold]
    fn bad_kind(&self, rec: usize, k: u8) -> Error {
        self.fail(
            self.block_offset,
            format!("corrupt block: record {rec} has bad kind byte {k} (allowed 0, 1, 2)"),
        )
    }
}

impl<R: Read> AccessSource for NativeReader<R> {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        let cap = batch_cap(out);
        while out.len() < cap {
            if self.cur >= self.data.len() && !self.next_block()? {
                break;
            }
            let rl = self.rec_len;
            let n = (cap - out.len()).min((self.data.len() - self.cur) / rl);
            let end = self.cur + n * rl;
            let recs = &self.data[self.cur..end];
            // One pass per column: each `extend` from an exact-size iterator
            // is a tight loop without per-element capacity checks.
            let base = out.ins_gap.len();
            let rs = || recs.chunks_exact(rl);
            let mut bad = false;
            out.kind.extend(rs().map(|r| match r[14] {
                0 => AccessKind::Load,
                1 => AccessKind::Store,
                2 => AccessKind::IFetch,
                _ => {
                    bad = true;
                    AccessKind::Load
                }
            }));
            if bad {
                let k = rs().position(|r| r[14] > 2).unwrap_or(0);
                return Err(self.bad_kind(self.cur / rl + k, recs[k * rl + 14]));
            }
            if rl == DEP_RECORD_LEN {
                out.dep.extend(rs().map(|r| u32::from_le_bytes(r[16..20].try_into().unwrap())));
                // Record `records + j` may reach back at most to record 0.
                let first = self.records;
                if let Some(j) = out.dep[base..].iter().enumerate().position(|(j, &d)| d as u64 > first + j as u64) {
                    return Err(self.bad_dep(self.cur / rl + j, first + j as u64, out.dep[base + j]));
                }
            }
            out.vaddr
                .extend(rs().map(|r| u64::from_le_bytes(r[0..8].try_into().unwrap())));
            out.ins_gap
                .extend(rs().map(|r| u32::from_le_bytes(r[8..12].try_into().unwrap())));
            out.asid
                .extend(rs().map(|r| u16::from_le_bytes([r[12], r[13]])));
            out.size.extend(rs().map(|r| r[15]));
            self.instructions += out.ins_gap[base..].iter().map(|&g| g as u64).sum::<u64>();
            self.cur = end;
            self.records += n as u64;
        }
        // `next_block` returns false only after the end block's totals and
        // trailing magic have been checked.
        Ok(!out.is_empty())
    }

    fn progress(&self) -> (u64, u64) {
        (self.offset.min(self.total), self.total)
    }

    fn describe(&self) -> String {
        format!("trace:{}", self.name)
    }

    fn carries_dependencies(&self) -> bool {
        self.has_dependencies()
    }
}

/// What a finished [`NativeWriter`] wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct NativeSummary {
    pub records: u64,
    pub instructions: u64,
    pub blocks: u64,
    pub bytes: u64,
}

/// How a [`NativeWriter`] compresses its blocks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WriterOptions {
    /// zstd level of every block (any level gives a file every reader reads).
    pub level: i32,
    /// Compress, checksum and write blocks on a second thread, so the caller
    /// fills the next block meanwhile.
    pub background: bool,
    /// Write each record's dependency (version 2, flag DEPS); without, a
    /// version 1 file, and a batch with a dependency is an error.
    pub dependencies: bool,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            level: ZSTD_LEVEL,
            background: false,
            dependencies: false,
        }
    }
}

/// Blocks filled but not yet taken by the background thread: with the one
/// being filled and the one being compressed, at most 4 MiB of records.
const QUEUE_BLOCKS: usize = 2;

/// Compresses, checksums and writes whole blocks to the output.
struct BlockSink {
    out: AtomicOutput,
    comp: zstd::bulk::Compressor<'static>,
    cbuf: Vec<u8>,
    blocks: u64,
    /// Bytes per record.
    rec_len: usize,
}

impl BlockSink {
    fn write_block(&mut self, raw: &[u8]) -> Result<()> {
        if raw.is_empty() {
            return Ok(());
        }
        self.cbuf.clear();
        self.comp
            .compress_to_buffer(raw, &mut self.cbuf)
            .map_err(|e| Error::io(self.out.dest_name(), e))?;
        let mut h = [0u8; BLOCK_HEADER_LEN];
        h[0..4].copy_from_slice(&(self.cbuf.len() as u32).to_le_bytes());
        h[4..8].copy_from_slice(&((raw.len() / self.rec_len) as u32).to_le_bytes());
        h[8..16].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(raw).to_le_bytes());
        self.out.write_all(&h)?;
        let cbuf = std::mem::take(&mut self.cbuf);
        let res = self.out.write_all(&cbuf);
        self.cbuf = cbuf;
        res?;
        self.blocks += 1;
        Ok(())
    }
}

/// The background thread and its queues. Dropping it (an unfinished writer)
/// closes the queue and waits for the thread, which drops the output and so
/// removes the temporary file before the drop returns.
struct Pipeline {
    /// Full blocks to the thread (bounded: the caller waits when it is behind).
    tx: Option<std::sync::mpsc::SyncSender<Vec<u8>>>,
    /// Emptied block buffers back from the thread, for reuse.
    free: std::sync::mpsc::Receiver<Vec<u8>>,
    thread: Option<std::thread::JoinHandle<Result<BlockSink>>>,
    /// Bytes the thread has written so far.
    written: std::sync::Arc<AtomicU64>,
    dest: String,
}

impl Pipeline {
    fn start(mut sink: BlockSink) -> Result<Pipeline> {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<u8>>(QUEUE_BLOCKS);
        let (free_tx, free) = std::sync::mpsc::channel::<Vec<u8>>();
        let written = std::sync::Arc::new(AtomicU64::new(sink.out.written()));
        let w = written.clone();
        let dest = sink.out.dest_name();
        let thread = std::thread::Builder::new()
            .name("tessera-trace-writer".into())
            .spawn(move || {
                for raw in rx {
                    sink.write_block(&raw)?;
                    w.store(sink.out.written(), Ordering::Relaxed);
                    // The writer may be gone already (finishing): keep going.
                    let _ = free_tx.send(raw);
                }
                Ok(sink)
            })
            .map_err(|e| Error::io(dest.clone(), e))?;
        Ok(Pipeline {
            tx: Some(tx),
            free,
            thread: Some(thread),
            written,
            dest,
        })
    }

    /// Hand a full block to the thread; returns an empty buffer to fill next.
    fn send(&mut self, raw: Vec<u8>) -> Result<Vec<u8>> {
        let tx = self.tx.as_ref().expect("pipeline used after finish");
        if tx.send(raw).is_err() {
            // The thread stopped on an error: report it.
            return Err(self.join().err().unwrap_or_else(|| self.lost()));
        }
        Ok(self
            .free
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(BLOCK_RECORDS * DEP_RECORD_LEN)))
    }

    fn lost(&self) -> Error {
        Error::io(
            self.dest.clone(),
            std::io::Error::other("the trace writer thread stopped unexpectedly"),
        )
    }

    /// Close the queue and wait for every block to be written.
    fn join(&mut self) -> Result<BlockSink> {
        self.tx = None;
        match self.thread.take() {
            Some(t) => match t.join() {
                Ok(r) => r,
                Err(p) => std::panic::resume_unwind(p),
            },
            None => Err(self.lost()),
        }
    }
}

impl Drop for Pipeline {
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.take() {
            // A panic of the thread is not re-raised from a drop.
            let _ = t.join();
        }
    }
}

enum Sink {
    Inline(BlockSink),
    Background(Pipeline),
}

/// Writes a native trace atomically: into a temporary file in the same
/// directory, renamed into place by [`NativeWriter::finish`]. Dropped
/// unfinished (error, panic, forgotten `finish`), it removes the temporary file.
///
/// With [`WriterOptions::background`], blocks are compressed and written by a
/// second thread; the file is byte-for-byte the one the inline writer makes
/// with the same level.
pub struct NativeWriter {
    sink: Sink,
    /// The block being filled: `raw[..raw_len]` holds whole records; `raw`
    /// itself is one block long so callers can fill its tail in place.
    raw: Vec<u8>,
    raw_len: usize,
    records: u64,
    instructions: u64,
    /// Bytes per record (16, or 20 with dependencies) and per full block.
    rec_len: usize,
    block_bytes: usize,
    /// The file's name, for errors.
    dest: String,
}

impl NativeWriter {
    pub fn create(path: &Path, meta: serde_json::Value) -> Result<Self> {
        Self::create_with(path, meta, WriterOptions::default())
    }

    pub fn create_with(path: &Path, meta: serde_json::Value, opts: WriterOptions) -> Result<Self> {
        let name = display_name(path);
        let meta = serde_json::to_vec(&meta).map_err(|e| {
            Error::io(
                name.clone(),
                std::io::Error::new(std::io::ErrorKind::InvalidData, e),
            )
        })?;
        if meta.len() > MAX_META_LEN as usize {
            return Err(Error::io(
                name,
                std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "trace metadata larger than 16 MiB",
                ),
            ));
        }
        let comp =
            zstd::bulk::Compressor::new(opts.level).map_err(|e| Error::io(name.clone(), e))?;
        let mut out = AtomicOutput::create(path)?;
        let mut h = Vec::with_capacity(HEADER_LEN as usize + meta.len());
        h.extend_from_slice(&MAGIC);
        let (version, flags, rec_len) = if opts.dependencies { (2u16, FLAG_DEPS, DEP_RECORD_LEN) } else { (1u16, 0, RECORD_LEN) };
        h.extend_from_slice(&version.to_le_bytes());
        h.extend_from_slice(&flags.to_le_bytes());
        h.extend_from_slice(&(meta.len() as u32).to_le_bytes());
        h.extend_from_slice(&meta);
        out.write_all(&h)?;
        let sink = BlockSink {
            out,
            comp,
            cbuf: Vec::with_capacity(max_compressed_len()),
            blocks: 0,
            rec_len,
        };
        let sink = if opts.background {
            Sink::Background(Pipeline::start(sink)?)
        } else {
            Sink::Inline(sink)
        };
        Ok(NativeWriter {
            sink,
            raw: vec![0; BLOCK_RECORDS * rec_len],
            raw_len: 0,
            records: 0,
            instructions: 0,
            rec_len,
            block_bytes: BLOCK_RECORDS * rec_len,
            dest: name,
        })
    }

    pub fn write_batch(&mut self, b: &AccessBatch) -> Result<()> {
        debug_assert!(
            b.ins_gap.len() == b.len()
                && b.kind.len() == b.len()
                && b.size.len() == b.len()
                && b.asid.len() == b.len()
        );
        let n = b.len();
        if b.has_deps() {
            let reach = |(j, &d): (usize, &u32)| d as u64 > self.records + j as u64;
            let bad = if self.rec_len == DEP_RECORD_LEN {
                b.dep.iter().enumerate().position(reach).map(|j| format!("record {} depends on the record {} before it, before the trace's first record", self.records + j as u64, b.dep[j]))
            } else {
                b.dep.iter().position(|&d| d != 0).map(|j| format!("record {} has a dependency, and this trace is written without them (version 1)", self.records + j as u64))
            };
            if let Some(msg) = bad {
                return Err(Error::io(self.dest.clone(), std::io::Error::new(std::io::ErrorKind::InvalidInput, msg)));
            }
        }
        let rl = self.rec_len;
        let mut i = 0;
        while i < n {
            let room = (self.block_bytes - self.raw_len) / rl;
            let take = room.min(n - i);
            let dst = &mut self.raw[self.raw_len..self.raw_len + take * rl];
            let mut instructions = 0u64;
            for (j, rec) in (i..i + take).zip(dst.chunks_exact_mut(rl)) {
                rec[0..8].copy_from_slice(&b.vaddr[j].to_le_bytes());
                rec[8..12].copy_from_slice(&b.ins_gap[j].to_le_bytes());
                rec[12..14].copy_from_slice(&b.asid[j].to_le_bytes());
                rec[14] = b.kind[j] as u8;
                rec[15] = b.size[j];
                if rl == DEP_RECORD_LEN {
                    rec[16..20].copy_from_slice(&b.dep_of(j).to_le_bytes());
                }
                instructions += b.ins_gap[j] as u64;
            }
            self.commit_tail(take, instructions)?;
            i += take;
        }
        Ok(())
    }

    /// The unfilled rest of the current block (a whole number of records,
    /// never empty), for a caller that produces records in the native layout
    /// (of [`Self::record_len`] bytes) in place; [`commit_tail`](Self::commit_tail) then takes them.
    /// Bytes per record: [`RECORD_LEN`], or [`DEP_RECORD_LEN`] with dependencies.
    pub fn record_len(&self) -> usize {
        self.rec_len
    }

    pub fn block_tail(&mut self) -> &mut [u8] {
        &mut self.raw[self.raw_len..]
    }

    /// Take the first `n` records of [`block_tail`](Self::block_tail), whose
    /// `ins_gap`s sum to `instructions`; a full block is passed on to be
    /// compressed. The caller guarantees each record's kind byte is 0, 1 or 2
    /// (checked in debug builds): the reader rejects anything else.
    pub fn commit_tail(&mut self, n: usize, instructions: u64) -> Result<()> {
        let rl = self.rec_len;
        let end = self.raw_len + n * rl;
        assert!(end <= self.block_bytes, "commit_tail past the end of the block");
        debug_assert!(self.raw[self.raw_len..end]
            .chunks_exact(rl)
            .all(|r| r[14] <= 2));
        debug_assert_eq!(
            self.raw[self.raw_len..end]
                .chunks_exact(rl)
                .map(|r| u32::from_le_bytes(r[8..12].try_into().unwrap()) as u64)
                .sum::<u64>(),
            instructions
        );
        self.raw_len = end;
        self.records += n as u64;
        self.instructions += instructions;
        if self.raw_len == self.block_bytes {
            self.flush_block()?;
        }
        Ok(())
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.raw_len == 0 {
            return Ok(());
        }
        match &mut self.sink {
            Sink::Inline(s) => s.write_block(&self.raw[..self.raw_len])?,
            Sink::Background(p) => {
                let mut full = std::mem::take(&mut self.raw);
                full.truncate(self.raw_len);
                let mut next = p.send(full)?;
                // A returned full block keeps its length: no refill with zeros.
                next.resize(self.block_bytes, 0);
                self.raw = next;
            }
        }
        self.raw_len = 0;
        Ok(())
    }

    /// Bytes written so far (compressed blocks flushed to the file; with a
    /// background thread, those it has written).
    pub fn bytes_written(&self) -> u64 {
        match &self.sink {
            Sink::Inline(s) => s.out.written(),
            Sink::Background(p) => p.written.load(Ordering::Relaxed),
        }
    }

    pub fn finish(mut self) -> Result<NativeSummary> {
        self.flush_block()?;
        let mut sink = match self.sink {
            Sink::Inline(s) => s,
            Sink::Background(mut p) => p.join()?,
        };
        let mut end = [0u8; BLOCK_HEADER_LEN + 24];
        end[16..24].copy_from_slice(&self.records.to_le_bytes());
        end[24..32].copy_from_slice(&self.instructions.to_le_bytes());
        end[32..40].copy_from_slice(&END_MAGIC);
        sink.out.write_all(&end)?;
        let blocks = sink.blocks;
        let bytes = sink.out.commit()?;
        Ok(NativeSummary {
            records: self.records,
            instructions: self.instructions,
            blocks,
            bytes,
        })
    }
}
