//! Trace files: reading, writing, converting and summarising recorded access
//! streams.
//!
//! ## What it models
//! Three formats, all read as streams of [`AccessBatch`]es through
//! [`AccessSource`] with memory independent of trace length:
//! - [`Format::Lackey`]: Valgrind lackey `--trace-mem=yes` text ([`lackey`]).
//! - [`Format::Native`]: Tessera's compressed binary format ([`native`],
//!   specified byte by byte in `docs/trace-format.md`).
//! - [`Format::Champsim`]: ChampSim's xz/gzip-compressed 64-byte instruction
//!   records ([`champsim`]); read only, never written.
//!
//! [`detect`] goes by content first: the native magic means native, the xz,
//! gzip or zstd magic means ChampSim, whatever the file is called (a magic
//! cannot occur by accident, so a misnamed trace is still read correctly).
//! Only a file without a magic is routed by its name: `*.tess` to the native
//! reader and a ChampSim-looking name (`*.xz`, `*.gz`, `*.zst`, `*champsim*`)
//! to the ChampSim reader, whose errors then say what the file looks like (a
//! short escaped excerpt of its first line, or its first bytes in hex, see
//! [`looks_like`]); anything else is read as lackey text, whose reader
//! rejects binary data and non-lackey lines by line number.
//!
//! [`record`] makes native traces from running programs (Valgrind lackey, or
//! QEMU user mode with Tessera's plugin built by [`qemu_plugin`]).
//!
//! ## Choices
//! - Writers are atomic: output goes to a hidden temporary file in the same
//!   directory and is renamed into place when finished; on any failure no
//!   output file is left behind (module `output`).
//! - `describe()` of a trace source is `trace:<file name>` (no directory), so
//!   results do not depend on where a trace is stored.
//! - [`info`] counts distinct `(asid, 4 KiB page)` and `(asid, 2 MiB region)`
//!   pairs; an access that crosses a boundary touches every page it overlaps.
//!   A record of size 0 counts as touching one byte.

pub mod accelsim;
pub mod champsim;
#[doc(hidden)]
pub mod fuzzing;
pub mod lackey;
pub mod native;
mod output;
pub mod qemu_plugin;
pub mod record;

use std::fs::File;
use std::io::Read;
use std::path::Path;

use rustc_hash::FxHashSet;
use serde::Serialize;

use crate::access::{AccessBatch, AccessKind, BATCH_LEN};
use crate::error::{Error, Result};
use crate::stream::AccessSource;

pub use champsim::{ChampsimOptions, ChampsimReader};
pub use lackey::{LackeyReader, LackeySummary, LackeyWriter};
pub use native::{NativeReader, NativeSummary, NativeWriter};

/// A trace file format.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Lackey,
    Native,
    /// Input only: [`convert`] cannot write it.
    Champsim,
}

impl Format {
    pub const NAMES: [&'static str; 3] = ["lackey", "native", "champsim"];
    /// Formats [`convert`] can write.
    pub const WRITABLE: [&'static str; 2] = ["lackey", "native"];

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Lackey => "lackey",
            Format::Native => "native",
            Format::Champsim => "champsim",
        }
    }

    /// Parse a format name ("lackey", "native", "champsim").
    pub fn parse(s: &str) -> Result<Format> {
        match s {
            "lackey" => Ok(Format::Lackey),
            "native" => Ok(Format::Native),
            "champsim" => Ok(Format::Champsim),
            _ => Err(Error::config_allowed(
                "format",
                format!("unknown trace format \"{s}\""),
                &Format::NAMES,
            )),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Path as shown in error messages.
pub(crate) fn display_name(path: &Path) -> String {
    path.display().to_string()
}

/// File name as shown by `describe()`.
pub(crate) fn source_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

/// Records the caller asked for: the batch's capacity, or [`BATCH_LEN`] for an
/// unallocated batch.
#[inline]
pub(crate) fn batch_cap(out: &mut AccessBatch) -> usize {
    let cap = out
        .vaddr
        .capacity()
        .min(out.ins_gap.capacity())
        .min(out.kind.capacity())
        .min(out.size.capacity())
        .min(out.asid.capacity());
    if cap == 0 {
        *out = AccessBatch::with_capacity(BATCH_LEN);
        BATCH_LEN
    } else {
        cap
    }
}

/// Detect a trace's format from its first bytes, falling back on its name
/// when they carry no magic (see the module doc). Never fails on content: a
/// file that is not the trace it is routed as fails in that reader, with an
/// error saying what the file looks like.
pub fn detect(path: &Path) -> Result<Format> {
    let name = display_name(path);
    let mut f = File::open(path).map_err(|e| Error::io(name.clone(), e))?;
    let mut head = [0u8; 8];
    let mut got = 0;
    while got < head.len() {
        match f.read(&mut head[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(name, e)),
        }
    }
    Ok(detect_head(&head[..got], &source_name(path)))
}

/// [`detect`] on a file's first bytes (at least 8 when the file has them)
/// and its file name.
pub fn detect_head(head: &[u8], file_name: &str) -> Format {
    if head.starts_with(&native::MAGIC) {
        Format::Native
    } else if champsim::Compression::sniff(head).is_some() {
        Format::Champsim
    } else {
        name_format(file_name).unwrap_or(Format::Lackey)
    }
}

/// The format a file name claims: `*.tess` native; `*.xz`, `*.gz`, `*.zst`
/// or a name containing `champsim` ChampSim; `*.lackey` lackey.
fn name_format(file_name: &str) -> Option<Format> {
    let name = file_name.to_ascii_lowercase();
    if name.ends_with(".tess") {
        Some(Format::Native)
    } else if name.ends_with(".xz")
        || name.ends_with(".gz")
        || name.ends_with(".zst")
        || name.contains("champsim")
    {
        Some(Format::Champsim)
    } else if name.ends_with(".lackey") {
        Some(Format::Lackey)
    } else {
        None
    }
}

/// Bytes of a file's start that [`looks_like`] wants to see.
pub(crate) const LOOKS_LIKE_LEN: usize = 256;
/// Characters of a text line [`looks_like`] quotes.
const EXCERPT_CHARS: usize = 60;
/// Bytes of binary data [`looks_like`] shows in hex.
const EXCERPT_BYTES: usize = 16;

/// Whether `head` (a file's first bytes, possibly cut inside a character) is
/// text: valid UTF-8 without control characters other than white space.
pub(crate) fn is_text(head: &[u8]) -> bool {
    let utf8 = match std::str::from_utf8(head) {
        Ok(_) => true,
        // Only a character cut by the end of `head` is forgiven.
        Err(e) => e.error_len().is_none(),
    };
    utf8 && !head
        .iter()
        .any(|&c| (c < 0x20 && !matches!(c, b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)) || c == 0x7f)
}

/// What a file that is not the trace it was taken for looks like, from its
/// first bytes (up to [`LOOKS_LIKE_LEN`]), for an error message: "the file
/// is empty", "the file looks like text: first line \"…\"" (escaped, cut to
/// 60 characters) or "the file looks like binary data: first bytes 00 9f …"
/// (hex). Raw binary never reaches a message.
pub fn looks_like(head: &[u8]) -> String {
    if head.is_empty() {
        return "the file is empty".into();
    }
    if head.starts_with(&native::MAGIC) {
        return "the file looks like a Tessera native trace".into();
    }
    if let Some(c) = champsim::Compression::sniff(head) {
        return format!("the file looks like {}-compressed data", c.name());
    }
    if is_text(head) {
        let text = String::from_utf8_lossy(head);
        let line = text
            .lines()
            .map(str::trim_end)
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        if line.is_empty() {
            return "the file looks like text: blank lines only".into();
        }
        let excerpt: String = line.chars().take(EXCERPT_CHARS).collect();
        let more = if excerpt.len() < line.len() { "…" } else { "" };
        format!(
            "the file looks like text: first line \"{}{more}\"",
            excerpt.escape_debug()
        )
    } else {
        format!(
            "the file looks like binary data: first bytes {}",
            hex_excerpt(head)
        )
    }
}

/// The first bytes of `b` in hex, for quoting binary data in a message.
pub(crate) fn hex_excerpt(b: &[u8]) -> String {
    let hex: Vec<String> = b
        .iter()
        .take(EXCERPT_BYTES)
        .map(|c| format!("{c:02x}"))
        .collect();
    let more = if b.len() > EXCERPT_BYTES { " …" } else { "" };
    format!("{}{more}", hex.join(" "))
}

/// How readers interpret formats that leave choices open. Only ChampSim has
/// any; the other readers ignore these.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TraceOptions {
    pub champsim: ChampsimOptions,
}

/// Open a trace, detecting its format from its first bytes.
pub fn open(path: &Path) -> Result<Box<dyn AccessSource + Send>> {
    open_with(path, &TraceOptions::default())
}

/// [`open`] with reader options. The reader decodes ahead on its own thread
/// ([`crate::stream::read_ahead`]): the same records, read while the
/// machine simulates.
pub fn open_with(path: &Path, opts: &TraceOptions) -> Result<Box<dyn AccessSource + Send>> {
    Ok(Box::new(crate::stream::read_ahead::ReadAhead::spawn(open_reader(path, opts)?)?))
}

/// The trace's reader, on the calling thread.
pub fn open_reader(path: &Path, opts: &TraceOptions) -> Result<Box<dyn AccessSource + Send>> {
    Ok(match detect(path)? {
        Format::Lackey => Box::new(LackeyReader::open(path)?),
        Format::Native => Box::new(NativeReader::open(path)?),
        Format::Champsim => Box::new(ChampsimReader::open(path, opts.champsim)?),
    })
}

/// What [`convert`] did.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct ConvertSummary {
    pub from: Format,
    pub to: Format,
    pub records: u64,
    pub instructions: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

fn pump(
    src: &mut dyn AccessSource,
    mut sink: impl FnMut(&AccessBatch) -> Result<()>,
) -> Result<()> {
    let mut batch = AccessBatch::with_capacity(BATCH_LEN);
    while src.next_batch(&mut batch)? {
        sink(&batch)?;
    }
    Ok(())
}

/// Convert `input` (any format, detected) to `output` in format `to`.
///
/// The output appears only if the whole input was read without error; a bad
/// input line or block gives the input's error and leaves no output file.
/// Native output carries metadata: the input's own metadata when converting
/// native → native, otherwise `{"source_format", "source_file", "tessera_version"}`
/// (plus `"champsim_options"` for ChampSim input).
pub fn convert(input: &Path, output: &Path, to: Format) -> Result<ConvertSummary> {
    convert_with(input, output, to, &TraceOptions::default())
}

/// [`convert`] with reader options.
pub fn convert_with(
    input: &Path,
    output: &Path,
    to: Format,
    opts: &TraceOptions,
) -> Result<ConvertSummary> {
    if to == Format::Champsim {
        return Err(not_writable());
    }
    let from = detect(input)?;
    let bytes_in = std::fs::metadata(input)
        .map_err(|e| Error::io(display_name(input), e))?
        .len();
    let (mut src, meta): (Box<dyn AccessSource + Send>, serde_json::Value) = match from {
        Format::Native => {
            let r = NativeReader::open(input)?;
            let meta = r.meta().clone();
            (Box::new(r), meta)
        }
        Format::Lackey => (
            Box::new(LackeyReader::open(input)?),
            serde_json::json!({
                "source_format": "lackey",
                "source_file": source_name(input),
                "tessera_version": crate::VERSION,
            }),
        ),
        Format::Champsim => (
            Box::new(ChampsimReader::open(input, opts.champsim)?),
            serde_json::json!({
                "source_format": "champsim",
                "source_file": source_name(input),
                "champsim_options": opts.champsim,
                "tessera_version": crate::VERSION,
            }),
        ),
    };
    let (records, instructions, bytes_out) = match to {
        Format::Native => {
            let opts = native::WriterOptions { dependencies: src.carries_dependencies(), ..Default::default() };
            let mut w = NativeWriter::create_with(output, meta, opts)?;
            pump(src.as_mut(), |b| w.write_batch(b))?;
            let s = w.finish()?;
            (s.records, s.instructions, s.bytes)
        }
        Format::Lackey => {
            let mut w = LackeyWriter::create(output)?;
            pump(src.as_mut(), |b| w.write_batch(b))?;
            let s = w.finish()?;
            (s.records, s.instructions, s.bytes)
        }
        Format::Champsim => return Err(not_writable()),
    };
    Ok(ConvertSummary {
        from,
        to,
        records,
        instructions,
        bytes_in,
        bytes_out,
    })
}

fn not_writable() -> Error {
    Error::config_allowed(
        "format",
        "champsim traces can be read but not written",
        &Format::WRITABLE,
    )
}

/// Summary statistics of a trace.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct TraceInfo {
    pub format: Format,
    pub records: u64,
    /// Sum of `ins_gap` over all records.
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub ifetches: u64,
    /// Distinct ASIDs.
    pub asids: u64,
    /// Distinct (asid, 4 KiB page) pairs touched.
    pub pages_4k: u64,
    /// Distinct (asid, 2 MiB region) pairs touched.
    pub regions_2m: u64,
    /// `pages_4k × 4096`.
    pub footprint_bytes: u64,
    /// Records with a dependency (a non-zero `dep`), when the trace carries
    /// dependencies (native version 2, ChampSim); `None` when it cannot.
    pub dependent_records: Option<u64>,
}

/// Read a whole trace and summarise it. Memory grows with the footprint, not
/// the length.
pub fn info(path: &Path) -> Result<TraceInfo> {
    info_with(path, &TraceOptions::default())
}

/// [`info`] with reader options.
pub fn info_with(path: &Path, opts: &TraceOptions) -> Result<TraceInfo> {
    let format = detect(path)?;
    let mut src = open_with(path, opts)?;
    let mut t = TraceInfo {
        format,
        records: 0,
        instructions: 0,
        loads: 0,
        stores: 0,
        ifetches: 0,
        asids: 0,
        pages_4k: 0,
        regions_2m: 0,
        footprint_bytes: 0,
        dependent_records: src.carries_dependencies().then_some(0),
    };
    let mut pages: FxHashSet<(u16, u64)> = FxHashSet::default();
    let mut regions: FxHashSet<(u16, u64)> = FxHashSet::default();
    let mut asids: FxHashSet<u16> = FxHashSet::default();
    let mut last_page: Option<(u16, u64)> = None;
    pump(src.as_mut(), |b| {
        t.records += b.len() as u64;
        if let Some(d) = t.dependent_records.as_mut() {
            *d += b.dep.iter().filter(|&&x| x != 0).count() as u64;
        }
        for i in 0..b.len() {
            t.instructions += b.ins_gap[i] as u64;
            match b.kind[i] {
                AccessKind::Load => t.loads += 1,
                AccessKind::Store => t.stores += 1,
                AccessKind::IFetch => t.ifetches += 1,
            }
            let asid = b.asid[i];
            let first = b.vaddr[i];
            let last = first.saturating_add((b.size[i].max(1) - 1) as u64);
            let (p0, p1) = (first >> 12, last >> 12);
            // Consecutive accesses mostly stay on one page: skip the hash then.
            if p0 == p1 && last_page == Some((asid, p0)) {
                continue;
            }
            last_page = Some((asid, p1));
            asids.insert(asid);
            for p in p0..=p1 {
                if pages.insert((asid, p)) {
                    regions.insert((asid, p >> 9));
                }
            }
        }
        Ok(())
    })?;
    t.asids = asids.len() as u64;
    t.pages_4k = pages.len() as u64;
    t.regions_2m = regions.len() as u64;
    t.footprint_bytes = t.pages_4k * 4096;
    Ok(t)
}

/// Read the first `limit` records (all when `None`) of a trace into memory,
/// as the columns of a [`crate::stream::memory::MemoryStream`]: for
/// analysing a trace outside the simulator, or simulating it without decoding
/// the file again. Memory grows with the records read (18 bytes each).
pub fn read_columns(path: &Path, opts: &TraceOptions, limit: Option<u64>) -> Result<crate::stream::memory::Columns> {
    let mut src = open_with(path, opts)?;
    let mut c = crate::stream::memory::Columns::default();
    let limit = limit.unwrap_or(u64::MAX);
    let mut batch = AccessBatch::with_capacity(crate::access::BATCH_LEN);
    while (c.vaddr.len() as u64) < limit && src.next_batch(&mut batch)? {
        let n = batch.len().min((limit - c.vaddr.len() as u64) as usize);
        c.vaddr.extend_from_slice(&batch.vaddr[..n]);
        c.ins_gap.extend_from_slice(&batch.ins_gap[..n]);
        c.asid.extend_from_slice(&batch.asid[..n]);
        c.kind.extend(batch.kind[..n].iter().map(|&k| k as u8));
        c.size.extend_from_slice(&batch.size[..n]);
        if batch.has_deps() {
            // Records read before the first batch with dependencies had none.
            c.dep.resize(c.vaddr.len() - n, 0);
            c.dep.extend_from_slice(&batch.dep[..n]);
        } else if !c.dep.is_empty() {
            c.dep.resize(c.vaddr.len(), 0);
        }
    }
    Ok(c)
}
