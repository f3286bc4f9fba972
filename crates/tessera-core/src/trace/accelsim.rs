//! Accel-Sim / NVBit GPU traces (`kernelslist.g` plus `kernel-N.traceg[.xz]`):
//! a reader that hands out one [`Kernel`] at a time ([`KernelSource`]) and a
//! writer of the same form.
//!
//! ## What it models
//! The post-processed traces Accel-Sim's simulator consumes (as its NVBit
//! tracer, `util/tracer_nvbit` in accel-sim-framework, writes them):
//! - `kernelslist.g`, in order: `MemcpyHtoD,0x<dst>,<bytes>` lines, which
//!   become the application's [`Allocation`]s (named `memcpy0`, `memcpy1`, …
//!   in list order), and `kernel-N.traceg` / `kernel-N.traceg.xz` lines,
//!   kernel files relative to the list's directory. Other lines are ignored,
//!   except raw tracer names (`kernel-N.trace[.xz]`), which are an error
//!   saying to run `post-traces-processing` first.
//! - A kernel file: a header of `-key = value` lines up to the first line
//!   that starts with `#`, then `#BEGIN_TB` / `thread block = x,y,z` /
//!   `warp = w` / `insts = n` / n instruction lines / `#END_TB` blocks. Blank
//!   lines may appear anywhere; other `#` lines are comments.
//! - An instruction line: `[line_num] PC MASK dst_num {reg} OPCODE src_num
//!   {reg} mem_width [addr_info] [IMM]`, with four extra leading decimal
//!   columns (thread block x y z, warp) when the header's tracer version is
//!   below 3, and `line_num` only when the header says `-enable lineinfo = 1`.
//!
//! Kernel files are opened lazily, one per [`KernelSource::next_kernel`];
//! a kernel is read whole (the model holds a kernel whole). Every kernel
//! returned passes [`Kernel::check`].
//!
//! ## Choices where the format is silent or the model is narrower
//! - **Header.** `-kernel name`, `-kernel id`, `-grid dim` and `-block dim`
//!   are required; `-shmem` and `-nregs` default to 0; a missing
//!   `-accelsim tracer version` is 0 (as in Accel-Sim's parser: tracers
//!   before version 3 did not print it), so such files carry the four extra
//!   columns. A version like `4.1` counts by its integer part. Unknown keys
//!   (`-cuda stream id`, `-nvbit version`, `-binary version`, future ones)
//!   are read and ignored. The name is trimmed of surrounding white space.
//! - **Address modes.** 0 list_all, 1 base_stride, 2 base_delta are decoded
//!   into one address per active lane. base_stride with an active-lane mask
//!   that is not one contiguous run is an error (the tracer never writes it
//!   and Accel-Sim's parser would give the lanes after the gap address 0).
//!   base_delta reads popcount − 1 deltas (what the tracer writes) and takes
//!   a token left over as the immediate; with one active lane `2 0x<addr>`
//!   has no delta. Addresses wrap modulo 2^64 as the tracer's do.
//! - **TMA (modes 3 and 4) and other non-lane accesses are skipped:** their
//!   addresses are parsed (so a malformed list is still an error) and
//!   dropped, and the instruction becomes an [`Op::Alu`] (a bulk copy's
//!   address list is not one address per lane, which the model requires).
//!   The same holds for an address list on an opcode that is not a load,
//!   store or atomic below (surface, texture), and a load, store or atomic
//!   opcode with `mem_width` 0 is an `Alu` instruction too.
//! - **An instruction with mask 0** (predicated off in every lane) is
//!   counted against `insts = n` and then dropped: the model has no
//!   instruction without an active lane.
//! - **Op class by opcode base** (the text before the first `.`): `LD LDG
//!   LDS LDL LDSM LDGSTS` load, `ST STG STS STL STSM` store, `ATOM ATOMG
//!   ATOMS RED REDG` atomic, `BAR` barrier, `EXIT` exit, `MUFU` SFU, the
//!   control opcodes (`BRA BRX JMP JMX CALL RET BSSY BSYNC BREAK WARPSYNC
//!   SSY SYNC PBK BRK CONT PCNT PRET KILL` and the like) branch, anything
//!   else ALU (so `LDC`, a constant-bank read the tracer gives no address,
//!   is ALU).
//! - **Space by opcode:** `LDS STS ATOMS LDSM STSM` shared, `LDL STL` local,
//!   `LDG STG ATOMG RED REDG LDGSTS` global; generic `LD ST ATOM` by the
//!   first active lane's address: shared if it lies in the 32 MiB window from
//!   `-shmem base_addr`, local if in the 32 MiB window from `-local mem
//!   base_addr` (a window ends early where the other one starts; a base of 0
//!   means the window is absent), global otherwise. Real traces put the two
//!   bases 32 MiB apart, either way round. Accel-Sim's own rule
//!   (`trace_driven.cc`) is shared for `S ≤ a < L`, local for
//!   `L ≤ a < L + LOCAL_MEM_SIZE_MAX`, and shared for everything when the
//!   bases are unset; it agrees with this one on shared accesses when `S`
//!   lies below `L`, and differs on purpose for unset bases (global here, so
//!   a hand-made trace without bases still reaches the TLBs).
//! - **Access size per lane from the opcode**, not `mem_width`: the first
//!   `.`-separated token that is a bare number `N` or `UN` gives `N/8`
//!   bytes (`.64` → 8, `.128` → 16, `.U8` → 1); otherwise 4. (`.S8`, `.F32`
//!   are not bare numbers: 4, as in Accel-Sim.) A size of 0 or above 255
//!   bytes is an error.
//! - `MemcpyHtoD` destinations need not be aligned: an allocation starts at
//!   the destination rounded down to 256 bytes and covers the copied bytes.
//!   Overlapping copies give overlapping allocations, as listed.
//! - Errors name the file and the 1-based line: bad hex or decimal, a line
//!   ending early or with tokens after the immediate, an unknown address
//!   mode, fewer or more instruction lines than `insts = n`, a warp index
//!   outside the block, a thread block outside the grid, a structure line
//!   out of place, a file ending inside a thread block, a missing kernel
//!   file (named by its line in `kernelslist.g`), a corrupt or truncated
//!   `.xz` stream (at the line being read when the decoder failed).
//!
//! ## Writer
//! [`AccelsimWriter`] writes `kernelslist.g` (one `MemcpyHtoD` line per
//! allocation, then one line per kernel) and `kernel-N.traceg[.xz]` in
//! tracer-version-5 form: the header (shared and local base addresses 0,
//! since the writer never emits a generic opcode), the `#traces format`
//! line, then thread blocks and warps in the kernel's order, every warp of
//! a block written (an empty one as `insts = 0`). N counts kernels from 1
//! in writing order; the header keeps the kernel's own id. An instruction
//! line is `PC MASK 0 OPCODE 0 mem_width [addr_info] 0` (no registers: the
//! model keeps none; `mem_width` is the access size). Addresses are
//! compressed as the tracer does: base_stride when the active lanes form
//! one contiguous run of at least two lanes with a constant stride (that
//! also fits in an `i32`, which the tracer assumes), base_delta otherwise.
//! Opcodes are canonical SASS the reader maps back to the same (op, space,
//! size): `IMAD`, `MUFU.EX2`, `BAR.SYNC`, `BRA`, `EXIT`, `LDG.E`, `LDS`,
//! `LDL`, `STG.E`, `STS`, `STL`, `ATOMG.E.ADD`, `ATOMS.ADD`, with `.U8`,
//! `.U16`, nothing (loads and stores) or `.32` (atomics) for 1, 2 and 4
//! bytes and `.<8·size>` otherwise (`LDG.E.64`, `STS.128`). A local atomic
//! has no SASS opcode and is an error. Each file is written under a
//! temporary name and renamed when complete; kernel files already written
//! are removed again if the writer is dropped without [`AccelsimWriter::finish`],
//! and `kernelslist.g` is written last, so a failed write leaves no
//! application behind.

use std::fs::File;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};

use liblzma::read::XzDecoder;
use liblzma::write::XzEncoder;

use crate::error::{Error, Location, Result};
use crate::trace::display_name;
use crate::trace::output::AtomicOutput;
use crate::workload::gpu::{Allocation, Kernel, KernelSource, Op, Space, ThreadBlock, WarpInst, WarpTrace, ALLOC_ALIGN, WARP_SIZE};

#[cfg(test)]
mod tests;

/// Name of the kernel list inside a trace directory.
pub const KERNELS_LIST: &str = "kernelslist.g";

/// Size of the generic-address windows of shared and local memory.
pub const GENERIC_WINDOW: u64 = 32 << 20;

/// Tracer version the writer claims.
pub const WRITER_VERSION: u32 = 5;

/// How much of an offending line an error message quotes.
const QUOTE_LEN: usize = 100;

/// Read buffer of a kernel file.
const READ_BUF: usize = 1 << 20;

/// xz preset of written kernel files (the tracer pipes through `xz -1`).
const XZ_LEVEL: u32 = 1;

// ---------------------------------------------------------------------------
// Reader

/// An Accel-Sim trace directory: its allocations, and its kernels read one at
/// a time.
pub struct AccelsimReader {
    allocations: Vec<Allocation>,
    kernels: Vec<PathBuf>,
    next: usize,
}

impl AccelsimReader {
    /// Open a trace directory (holding `kernelslist.g`) or a kernel-list
    /// file. Reads the list and checks every kernel file exists; kernel files
    /// are read later, one per [`KernelSource::next_kernel`].
    pub fn open(path: &Path) -> Result<AccelsimReader> {
        let list = if path.is_dir() { path.join(KERNELS_LIST) } else { path.to_path_buf() };
        let file = display_name(&list);
        let text = std::fs::read(&list).map_err(|e| Error::io(file.clone(), e))?;
        let dir = match list.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut allocations = Vec::new();
        let mut kernels = Vec::new();
        for (n, raw) in text.split(|&c| c == b'\n').enumerate() {
            let at = Location::Line(n as u64 + 1);
            let line = std::str::from_utf8(raw)
                .map_err(|_| Error::trace(file.clone(), at.clone(), "the line is not UTF-8 text"))?
                .trim();
            let bad = |msg: String| Error::trace(file.clone(), at.clone(), format!("{msg}: `{}`", quote(line)));
            if let Some(rest) = line.strip_prefix("MemcpyHtoD,") {
                let mut f = rest.split(',').map(str::trim);
                let (Some(dst), Some(bytes), None) = (f.next(), f.next(), f.next()) else {
                    return Err(bad("expected `MemcpyHtoD,0x<address>,<bytes>`".into()));
                };
                let dst = hex(dst, "destination address").map_err(&bad)?;
                let bytes = dec(bytes, "byte count").map_err(&bad)?;
                let base = dst / ALLOC_ALIGN * ALLOC_ALIGN;
                let bytes = bytes.checked_add(dst - base).filter(|&b| b.div_ceil(ALLOC_ALIGN).checked_mul(ALLOC_ALIGN).is_some());
                let bytes = bytes.ok_or_else(|| bad("the copy runs past the end of the address space".into()))?;
                allocations.push(Allocation { name: format!("memcpy{}", allocations.len()), base, bytes });
            } else if line.starts_with("kernel-") && (line.ends_with(".traceg") || line.ends_with(".traceg.xz")) {
                let k = dir.join(line);
                if !k.is_file() {
                    return Err(bad(format!("kernel file {} does not exist", display_name(&k))));
                }
                kernels.push(k);
            } else if line.starts_with("kernel-") && (line.ends_with(".trace") || line.ends_with(".trace.xz")) {
                return Err(bad("a raw tracer kernel file: run Accel-Sim's post-traces-processing on the list first, and read the kernelslist.g it writes".into()));
            }
        }
        Ok(AccelsimReader { allocations, kernels, next: 0 })
    }

    /// The kernel files, in list order.
    pub fn kernel_files(&self) -> &[PathBuf] {
        &self.kernels
    }
}

impl KernelSource for AccelsimReader {
    fn allocations(&self) -> &[Allocation] {
        &self.allocations
    }

    fn next_kernel(&mut self) -> Result<Option<Kernel>> {
        let Some(path) = self.kernels.get(self.next) else { return Ok(None) };
        self.next += 1;
        read_kernel(path).map(Some)
    }
}

/// Read one kernel file (`.traceg`, or `.traceg.xz` by its name).
pub fn read_kernel(path: &Path) -> Result<Kernel> {
    let file = display_name(path);
    let f = File::open(path).map_err(|e| Error::io(file.clone(), e))?;
    let xz = path.extension().is_some_and(|e| e == "xz");
    let inner: Box<dyn Read> = if xz { Box::new(XzDecoder::new_multi_decoder(f)) } else { Box::new(f) };
    parse_kernel(BufReader::with_capacity(READ_BUF, inner), &file, xz)
}

/// Lines of a kernel file, numbered from 1, without their line ending.
struct Lines<R> {
    r: R,
    line: u64,
    buf: Vec<u8>,
    xz: bool,
}

impl<R: BufRead> Lines<R> {
    fn next(&mut self, file: &str) -> Result<Option<(u64, &str)>> {
        self.buf.clear();
        let n = self.r.read_until(b'\n', &mut self.buf).map_err(|e| {
            let what = if self.xz { "corrupt or truncated xz stream" } else { "cannot read the file" };
            Error::trace(file.to_string(), Location::Line(self.line + 1), format!("{what}: {e}"))
        })?;
        if n == 0 {
            return Ok(None);
        }
        self.line += 1;
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let text = std::str::from_utf8(&self.buf)
            .map_err(|_| Error::trace(file.to_string(), Location::Line(self.line), "the line is not UTF-8 text (is the file compressed without a .xz name?)"))?;
        Ok(Some((self.line, text)))
    }
}

/// What the kernel header says.
#[derive(Clone, Debug, Default)]
struct Header {
    name: Option<String>,
    id: Option<u32>,
    grid: Option<[u32; 3]>,
    block: Option<[u32; 3]>,
    shmem: u32,
    nregs: u32,
    shmem_base: u64,
    local_base: u64,
    version: u32,
    lineinfo: bool,
}

impl Header {
    /// Record one `-key = value` line.
    fn set(&mut self, line: &str) -> std::result::Result<(), String> {
        let body = &line[1..];
        let Some((key, value)) = body.split_once('=') else {
            return Err("a header line without `=`".into());
        };
        let (key, value) = (key.trim(), value.trim());
        let u32_of = |what: &str| -> std::result::Result<u32, String> {
            u32::try_from(dec(value, what)?).map_err(|_| format!("{what} {value} does not fit in 32 bits"))
        };
        match key {
            "kernel name" => self.name = Some(value.to_string()),
            "kernel id" => self.id = Some(u32_of("kernel id")?),
            "grid dim" => self.grid = Some(dim3(value, "grid dim")?),
            "block dim" => self.block = Some(dim3(value, "block dim")?),
            "shmem" => self.shmem = u32_of("shmem")?,
            "nregs" => self.nregs = u32_of("nregs")?,
            "shmem base_addr" => self.shmem_base = hex(value, "shmem base_addr")?,
            "local mem base_addr" => self.local_base = hex(value, "local mem base_addr")?,
            "accelsim tracer version" => {
                let digits: &str = &value[..value.bytes().take_while(u8::is_ascii_digit).count()];
                self.version = u32::try_from(dec(digits, "accelsim tracer version")?).map_err(|_| format!("tracer version {value} too large"))?;
            }
            "enable lineinfo" => {
                self.lineinfo = match value {
                    "0" => false,
                    "1" => true,
                    _ => return Err(format!("enable lineinfo must be 0 or 1, not `{value}`")),
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Space of a generic access whose first active lane is at `a`.
    fn generic_space(&self, a: u64) -> Space {
        let inside = |base: u64, other: u64| {
            let len = if other > base { (other - base).min(GENERIC_WINDOW) } else { GENERIC_WINDOW };
            base != 0 && a >= base && a - base < len
        };
        if inside(self.shmem_base, self.local_base) {
            Space::Shared
        } else if inside(self.local_base, self.shmem_base) {
            Space::Local
        } else {
            Space::Global
        }
    }
}

/// An opcode's class and, for a memory opcode, its space (`None`: generic).
fn classify(opcode: &str) -> (Op, Option<Space>) {
    let base = opcode.split('.').next().unwrap_or("");
    match base {
        "LDG" | "LDGSTS" => (Op::Load, Some(Space::Global)),
        "LDS" | "LDSM" => (Op::Load, Some(Space::Shared)),
        "LDL" => (Op::Load, Some(Space::Local)),
        "LD" => (Op::Load, None),
        "STG" => (Op::Store, Some(Space::Global)),
        "STS" | "STSM" => (Op::Store, Some(Space::Shared)),
        "STL" => (Op::Store, Some(Space::Local)),
        "ST" => (Op::Store, None),
        "ATOMG" | "RED" | "REDG" => (Op::Atomic, Some(Space::Global)),
        "ATOMS" => (Op::Atomic, Some(Space::Shared)),
        "ATOM" => (Op::Atomic, None),
        "BAR" => (Op::Barrier, None),
        "EXIT" => (Op::Exit, None),
        "MUFU" => (Op::Sfu, None),
        "BRA" | "BRX" | "BRXU" | "JMP" | "JMX" | "JMXU" | "CALL" | "CAL" | "JCAL" | "RET" | "BREAK" | "BRK" | "CONT" | "BSSY" | "BSYNC" | "SSY"
        | "SYNC" | "PBK" | "PCNT" | "PRET" | "PEXIT" | "WARPSYNC" | "KILL" => (Op::Branch, None),
        _ => (Op::Alu, None),
    }
}

/// Access size per lane from an opcode's modifiers (as Accel-Sim's trace parser).
fn opcode_size(opcode: &str) -> std::result::Result<u8, String> {
    for m in opcode.split('.').skip(1) {
        let digits = m.strip_prefix('U').unwrap_or(m);
        if !digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()) {
            let bits: u64 = digits.parse().map_err(|_| format!("opcode size `{m}` too large"))?;
            return match bits / 8 {
                b @ 1..=255 => Ok(b as u8),
                b => Err(format!("opcode `{opcode}` gives an access size of {b} bytes (expected 1 to 255)")),
            };
        }
    }
    Ok(4)
}

/// Whether the set bits of `mask` (non-zero) are one contiguous run.
fn contiguous(mask: u32) -> bool {
    let m = mask >> mask.trailing_zeros();
    mask != 0 && m & m.wrapping_add(1) == 0
}

fn next_tok<'a>(t: &mut std::str::SplitAsciiWhitespace<'a>, what: &str) -> std::result::Result<&'a str, String> {
    t.next().ok_or_else(|| format!("the line ends before the {what} (too few tokens)"))
}

/// Hex number, `0x` optional, 1 to 16 digits.
fn hex(tok: &str, what: &str) -> std::result::Result<u64, String> {
    let digits = tok.strip_prefix("0x").or_else(|| tok.strip_prefix("0X")).unwrap_or(tok);
    if digits.is_empty() || digits.len() > 16 || !digits.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err(format!("bad hex {what} `{}`", quote(tok)));
    }
    Ok(u64::from_str_radix(digits, 16).expect("checked hex digits"))
}

/// Hex number with its `0x`, as the tracer prints lane and base addresses.
fn hex0x(tok: &str, what: &str) -> std::result::Result<u64, String> {
    if !(tok.starts_with("0x") || tok.starts_with("0X")) {
        return Err(format!("bad hex {what} `{}` (expected 0x and hex digits)", quote(tok)));
    }
    hex(tok, what)
}

/// Unsigned decimal number.
fn dec(tok: &str, what: &str) -> std::result::Result<u64, String> {
    if tok.is_empty() || !tok.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("bad decimal {what} `{}`", quote(tok)));
    }
    tok.parse().map_err(|_| format!("{what} `{}` too large", quote(tok)))
}

/// Signed decimal number.
fn signed(tok: &str, what: &str) -> std::result::Result<i64, String> {
    let digits = tok.strip_prefix('-').unwrap_or(tok);
    if digits.is_empty() || !digits.bytes().all(|c| c.is_ascii_digit()) {
        return Err(format!("bad decimal {what} `{}`", quote(tok)));
    }
    tok.parse().map_err(|_| format!("{what} `{}` out of range", quote(tok)))
}

/// `(x,y,z)` or `x,y,z`.
fn dim3(s: &str, what: &str) -> std::result::Result<[u32; 3], String> {
    let inner = s.trim().trim_start_matches('(').trim_end_matches(')');
    let mut out = [0u32; 3];
    let mut parts = inner.split(',');
    for v in &mut out {
        let p = parts.next().ok_or_else(|| format!("{what} `{}` has fewer than 3 numbers", quote(s)))?.trim();
        *v = u32::try_from(dec(p, what)?).map_err(|_| format!("{what} `{}` does not fit in 32 bits", quote(s)))?;
    }
    if parts.next().is_some() {
        return Err(format!("{what} `{}` has more than 3 numbers", quote(s)));
    }
    Ok(out)
}

/// The start of a line, for an error message.
fn quote(s: &str) -> String {
    let cut: String = s.chars().take(QUOTE_LEN).collect();
    let more = if cut.len() < s.len() { "…" } else { "" };
    format!("{}{more}", cut.escape_debug())
}

/// Parse one instruction line. `lanes` receives the active lanes' addresses
/// of a memory instruction. `None`: an instruction with no active lane.
fn parse_inst(h: &Header, text: &str, lanes: &mut Vec<u64>) -> std::result::Result<Option<WarpInst>, String> {
    let mut t = text.split_ascii_whitespace();
    if h.lineinfo {
        dec(next_tok(&mut t, "line number")?, "line number")?;
    }
    if h.version < 3 {
        for what in ["thread block x", "thread block y", "thread block z", "warp index"] {
            dec(next_tok(&mut t, what)?, what)?;
        }
    }
    let pc = hex(next_tok(&mut t, "PC")?, "PC")?;
    let pc = u32::try_from(pc).map_err(|_| format!("PC {pc:#x} does not fit in 32 bits"))?;
    let m = next_tok(&mut t, "mask")?;
    if m.len() > 8 || m.starts_with("0x") {
        return Err(format!("bad mask `{}` (expected 8 hex digits)", quote(m)));
    }
    let mask = hex(m, "mask")? as u32;
    let ndst = dec(next_tok(&mut t, "destination count")?, "destination count")?;
    for _ in 0..ndst {
        next_tok(&mut t, "destination registers")?;
    }
    let opcode = next_tok(&mut t, "opcode")?;
    let nsrc = dec(next_tok(&mut t, "source count")?, "source count")?;
    for _ in 0..nsrc {
        next_tok(&mut t, "source registers")?;
    }
    let width = dec(next_tok(&mut t, "mem_width")?, "mem_width")?;
    let (class, space) = classify(opcode);
    let pop = mask.count_ones();
    lanes.clear();
    let mut lane_addrs = false;
    if width > 0 {
        let mode = dec(next_tok(&mut t, "address mode")?, "address mode")?;
        match mode {
            0 => {
                for _ in 0..pop {
                    lanes.push(hex0x(next_tok(&mut t, "lane addresses")?, "lane address")?);
                }
            }
            1 => {
                let mut a = hex0x(next_tok(&mut t, "base address")?, "base address")?;
                let s = signed(next_tok(&mut t, "stride")?, "stride")?;
                let stride = i32::try_from(s).map_err(|_| format!("stride {s} does not fit in 32 bits"))?;
                if pop > 0 && !contiguous(mask) {
                    return Err(format!("base_stride address mode with mask {mask:08x}, whose active lanes are not one contiguous run"));
                }
                for _ in 0..pop {
                    lanes.push(a);
                    a = a.wrapping_add(stride as i64 as u64);
                }
            }
            2 => {
                let mut a = hex0x(next_tok(&mut t, "base address")?, "base address")?;
                if pop > 0 {
                    lanes.push(a);
                }
                for _ in 1..pop {
                    a = a.wrapping_add(signed(next_tok(&mut t, "address deltas")?, "address delta")? as u64);
                    lanes.push(a);
                }
            }
            3 => {
                let n = dec(next_tok(&mut t, "TMA address count")?, "TMA address count")?;
                for _ in 0..n {
                    hex(next_tok(&mut t, "TMA addresses")?, "TMA address")?;
                }
            }
            4 => {
                hex(next_tok(&mut t, "TMA base address")?, "TMA base address")?;
                let n = dec(next_tok(&mut t, "TMA address count")?, "TMA address count")?;
                for _ in 1..n {
                    signed(next_tok(&mut t, "TMA address deltas")?, "TMA address delta")?;
                }
            }
            m => return Err(format!("unknown address mode {m} (expected 0 to 4)")),
        }
        lane_addrs = mode <= 2;
    }
    if let Some(imm) = t.next() {
        signed(imm, "immediate")?;
    }
    if let Some(extra) = t.next() {
        return Err(format!("unexpected `{}` after the immediate (too many tokens)", quote(extra)));
    }
    if mask == 0 {
        return Ok(None);
    }
    if !(class.is_memory() && lane_addrs) {
        let op = if class.is_memory() { Op::Alu } else { class };
        lanes.clear();
        return Ok(Some(WarpInst::compute(pc, mask, op)));
    }
    let size = opcode_size(opcode)?;
    let space = space.unwrap_or_else(|| h.generic_space(lanes[0]));
    Ok(Some(WarpInst { pc, mask, op: class, space, size }))
}

/// Parse a whole kernel file; `file` names it in errors.
fn parse_kernel<R: BufRead>(r: R, file: &str, xz: bool) -> Result<Kernel> {
    let mut lines = Lines { r, line: 0, buf: Vec::new(), xz };
    let err = |line: u64, msg: String| Error::trace(file.to_string(), Location::Line(line), msg);
    let quoted = |line: u64, text: &str, msg: String| err(line, format!("{msg}: `{}`", quote(text)));

    // Header, up to the first `#` line (which is then read as a body line).
    let mut h = Header::default();
    let mut first_body: Option<(u64, String)> = None;
    while let Some((n, text)) = lines.next(file)? {
        let t = text.trim();
        if t.starts_with('#') {
            first_body = Some((n, t.to_string()));
            break;
        } else if t.starts_with('-') {
            h.set(t).map_err(|m| quoted(n, t, m))?;
        } else if !t.is_empty() {
            return Err(quoted(n, t, "expected a `-key = value` header line".into()));
        }
    }
    let end = lines.line;
    let missing = |what: &str| err(end.max(1), format!("the kernel header has no `-{what} = …` line"));
    let name = h.name.clone().ok_or_else(|| missing("kernel name"))?;
    let id = h.id.ok_or_else(|| missing("kernel id"))?;
    let grid = h.grid.ok_or_else(|| missing("grid dim"))?;
    let block = h.block.ok_or_else(|| missing("block dim"))?;
    let mut k = Kernel { name, id, grid, block, shmem_bytes: h.shmem, regs_per_thread: h.nregs, blocks: Vec::new() };
    if grid.contains(&0) || block.contains(&0) {
        return Err(err(end.max(1), format!("zero in grid dim {grid:?} or block dim {block:?}")));
    }
    let warps_per_block = k.warps_per_block();

    // Body.
    let mut tb: Option<(u64, Option<ThreadBlock>)> = None; // open `#BEGIN_TB` line, its block once named
    let mut seen: Vec<bool> = Vec::new(); // warps of the open block already listed
    let mut warp: Option<usize> = None; // warp being filled
    let mut pending: u64 = 0; // instruction lines still expected
    let mut expected: (u64, u64) = (0, 0); // (`insts =` line, its count)
    let mut lanes = Vec::with_capacity(WARP_SIZE as usize);
    let mut body = |n: u64, t: &str, k: &mut Kernel| -> Result<()> {
        if t.is_empty() {
            return Ok(());
        }
        let structural = t.starts_with('#') || t.starts_with("warp") || t.starts_with("thread block") || t.starts_with("insts");
        if pending > 0 {
            if structural {
                return Err(quoted(n, t, format!("insts = {} at line {} but only {} instruction lines follow", expected.1, expected.0, expected.1 - pending)));
            }
            let (Some((_, Some(b))), Some(w)) = (tb.as_mut(), warp) else { unreachable!("pending instructions belong to a warp") };
            pending -= 1;
            if let Some(inst) = parse_inst(&h, t, &mut lanes).map_err(|m| quoted(n, t, m))? {
                b.warps[w].push(inst, &lanes);
            }
            return Ok(());
        }
        if t == "#BEGIN_TB" {
            if let Some((open, _)) = tb {
                return Err(quoted(n, t, format!("the thread block begun at line {open} has no #END_TB")));
            }
            tb = Some((n, None));
            seen.clear();
            warp = None;
        } else if t == "#END_TB" {
            match tb.take() {
                Some((_, Some(b))) => k.blocks.push(b),
                Some((_, None)) => return Err(quoted(n, t, "a thread block without a `thread block = x,y,z` line".into())),
                None => return Err(quoted(n, t, "#END_TB without #BEGIN_TB".into())),
            }
            warp = None;
        } else if t.starts_with('#') {
            // A comment, such as `#traces format = …`.
        } else if let Some(v) = t.strip_prefix("thread block").map(str::trim_start).and_then(|v| v.strip_prefix('=')) {
            let index = dim3(v, "thread block").map_err(|m| quoted(n, t, m))?;
            match tb.as_mut() {
                Some((_, b @ None)) => {
                    if index.iter().zip(&grid).any(|(i, g)| i >= g) {
                        return Err(quoted(n, t, format!("thread block {index:?} outside the grid {grid:?}")));
                    }
                    *b = Some(ThreadBlock { index, warps: Vec::new() });
                }
                Some((_, Some(_))) => return Err(quoted(n, t, "a second `thread block =` line in one thread block".into())),
                None => return Err(quoted(n, t, "`thread block =` outside #BEGIN_TB … #END_TB".into())),
            }
        } else if let Some(v) = t.strip_prefix("warp").map(str::trim_start).and_then(|v| v.strip_prefix('=')) {
            let Some((_, Some(b))) = tb.as_mut() else {
                return Err(quoted(n, t, "`warp =` outside a thread block (no `thread block =` line before it)".into()));
            };
            let w = dec(v.trim(), "warp index").map_err(|m| quoted(n, t, m))?;
            if w >= warps_per_block as u64 {
                return Err(quoted(n, t, format!("warp {w} outside the block: a block of {block:?} threads has {warps_per_block} warps")));
            }
            let w = w as usize;
            if seen.get(w) == Some(&true) {
                return Err(quoted(n, t, format!("warp {w} appears twice in thread block {:?}", b.index)));
            }
            if b.warps.len() <= w {
                b.warps.resize_with(w + 1, WarpTrace::default);
                seen.resize(w + 1, false);
            }
            seen[w] = true;
            warp = Some(w);
        } else if let Some(v) = t.strip_prefix("insts").map(str::trim_start).and_then(|v| v.strip_prefix('=')) {
            if warp.is_none() {
                return Err(quoted(n, t, "`insts =` without a `warp =` line before it".into()));
            }
            pending = dec(v.trim(), "instruction count").map_err(|m| quoted(n, t, m))?;
            expected = (n, pending);
        } else {
            let msg = if warp.is_some() {
                format!("more instruction lines than insts = {} at line {}", expected.1, expected.0)
            } else {
                "an instruction line outside a warp, or an unknown line".to_string()
            };
            return Err(quoted(n, t, msg));
        }
        Ok(())
    };
    if let Some((n, t)) = first_body {
        body(n, &t, &mut k)?;
    }
    while let Some((n, text)) = lines.next(file)? {
        body(n, text.trim(), &mut k)?;
    }
    let last = lines.line;
    if pending > 0 {
        return Err(err(last, format!("truncated file: insts = {} at line {} but only {} instruction lines follow", expected.1, expected.0, expected.1 - pending)));
    }
    if let Some((open, _)) = tb {
        return Err(err(last, format!("truncated file: the thread block begun at line {open} has no #END_TB")));
    }
    k.check(file)?;
    Ok(k)
}

// ---------------------------------------------------------------------------
// Writer

/// What [`AccelsimWriter::finish`] wrote.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct AccelsimSummary {
    pub allocations: u64,
    pub kernels: u64,
    pub warp_insts: u64,
    /// Bytes of all files written (compressed sizes for `.xz`).
    pub bytes: u64,
}

/// Writes an application as an Accel-Sim trace directory.
pub struct AccelsimWriter {
    dir: PathBuf,
    xz: bool,
    list: String,
    written: Vec<PathBuf>,
    summary: AccelsimSummary,
    finished: bool,
}

impl AccelsimWriter {
    /// Start writing into `dir` (created if missing), with the application's
    /// allocations; `xz` compresses the kernel files.
    pub fn create(dir: &Path, allocations: &[Allocation], xz: bool) -> Result<AccelsimWriter> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(display_name(dir), e))?;
        let mut list = String::new();
        for a in allocations {
            list.push_str(&format!("MemcpyHtoD,0x{:016x},{}\n", a.base, a.bytes));
        }
        Ok(AccelsimWriter {
            dir: dir.to_path_buf(),
            xz,
            list,
            written: Vec::new(),
            summary: AccelsimSummary { allocations: allocations.len() as u64, kernels: 0, warp_insts: 0, bytes: 0 },
            finished: false,
        })
    }

    /// Write the next kernel as `kernel-N.traceg[.xz]`.
    pub fn write_kernel(&mut self, k: &Kernel) -> Result<()> {
        let n = self.summary.kernels + 1;
        let name = format!("kernel-{n}.traceg{}", if self.xz { ".xz" } else { "" });
        let path = self.dir.join(&name);
        let file = display_name(&path);
        k.check(&file)?;
        if k.name.contains(['\n', '\r']) || k.name.trim() != k.name {
            return Err(Error::config(file, format!("kernel {} name {:?}: a trace cannot hold a name with line breaks or surrounding white space", k.id, k.name)));
        }
        let mut out = AtomicOutput::create(&path)?;
        let res = if self.xz {
            let mut enc = XzEncoder::new(Sink(&mut out), XZ_LEVEL);
            write_kernel_text(&mut enc, k, &file).and_then(|()| enc.finish().map(drop).map_err(|e| Error::io(file.clone(), e)))
        } else {
            write_kernel_text(&mut Sink(&mut out), k, &file)
        };
        res?;
        self.summary.bytes += out.commit()?;
        self.written.push(path);
        self.list.push_str(&name);
        self.list.push('\n');
        self.summary.kernels = n;
        self.summary.warp_insts += k.warp_insts();
        Ok(())
    }

    /// Write `kernelslist.g`: the application is complete.
    pub fn finish(mut self) -> Result<AccelsimSummary> {
        let mut out = AtomicOutput::create(&self.dir.join(KERNELS_LIST))?;
        out.write_all(self.list.as_bytes())?;
        self.summary.bytes += out.commit()?;
        self.finished = true;
        Ok(self.summary.clone())
    }
}

impl Drop for AccelsimWriter {
    fn drop(&mut self) {
        if !self.finished {
            for p in &self.written {
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// Write a whole application: `allocations`, then every kernel of `src`.
pub fn write_app(dir: &Path, src: &mut dyn KernelSource, xz: bool) -> Result<AccelsimSummary> {
    let mut w = AccelsimWriter::create(dir, src.allocations(), xz)?;
    while let Some(k) = src.next_kernel()? {
        w.write_kernel(&k)?;
    }
    w.finish()
}

/// `io::Write` over an [`AtomicOutput`].
struct Sink<'a>(&'a mut AtomicOutput);

impl Write for Sink<'_> {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.write_all(b).map_err(|e| std::io::Error::other(e.to_string()))?;
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Text written per chunk.
const CHUNK: usize = 1 << 16;

fn write_kernel_text(w: &mut impl Write, k: &Kernel, file: &str) -> Result<()> {
    use std::fmt::Write as _;
    let io = |e: std::io::Error| Error::io(file.to_string(), e);
    let mut s = String::with_capacity(CHUNK * 2);
    let [gx, gy, gz] = k.grid;
    let [bx, by, bz] = k.block;
    let _ = write!(
        s,
        "-kernel name = {}\n-kernel id = {}\n-grid dim = ({gx},{gy},{gz})\n-block dim = ({bx},{by},{bz})\n-shmem = {}\n-nregs = {}\n\
         -binary version = 70\n-cuda stream id = 0\n-shmem base_addr = 0x{:016x}\n-local mem base_addr = 0x{:016x}\n\
         -nvbit version = tessera\n-accelsim tracer version = {WRITER_VERSION}\n-enable lineinfo = 0\n\n\
         #traces format = [line_num] PC mask dest_num [reg_dests] opcode src_num [reg_srcs] mem_width [adrrescompress?] [mem_addresses] immediate\n\n",
        k.name, k.id, k.shmem_bytes, k.regs_per_thread, 0, 0
    );
    for b in &k.blocks {
        let [x, y, z] = b.index;
        let _ = write!(s, "#BEGIN_TB\n\nthread block = {x},{y},{z}\n\n");
        for (wi, warp) in b.warps.iter().enumerate() {
            let _ = writeln!(s, "warp = {wi}\ninsts = {}", warp.insts.len());
            for (i, lanes) in warp.iter() {
                let _ = write!(s, "{:04x} {:08x} 0 ", i.pc, i.mask);
                write_opcode(&mut s, i).map_err(|m| Error::config(file.to_string(), format!("kernel {} ({}): {m}", k.id, k.name)))?;
                if i.op.is_memory() {
                    let _ = write!(s, " 0 {} ", i.size);
                    write_addrs(&mut s, i.mask, lanes);
                    s.push_str("0\n");
                } else {
                    s.push_str(" 0 0 0\n");
                }
                if s.len() >= CHUNK {
                    w.write_all(s.as_bytes()).map_err(io)?;
                    s.clear();
                }
            }
            s.push('\n');
        }
        s.push_str("#END_TB\n\n");
    }
    w.write_all(s.as_bytes()).map_err(io)
}

/// The canonical SASS opcode of an instruction (see the module doc).
fn write_opcode(s: &mut String, i: &WarpInst) -> std::result::Result<(), String> {
    let base = match (i.op, i.space) {
        (Op::Alu, _) => "IMAD",
        (Op::Sfu, _) => "MUFU.EX2",
        (Op::Barrier, _) => "BAR.SYNC",
        (Op::Branch, _) => "BRA",
        (Op::Exit, _) => "EXIT",
        (Op::Load, Space::Global) => "LDG.E",
        (Op::Load, Space::Shared) => "LDS",
        (Op::Load, Space::Local) => "LDL",
        (Op::Store, Space::Global) => "STG.E",
        (Op::Store, Space::Shared) => "STS",
        (Op::Store, Space::Local) => "STL",
        (Op::Atomic, Space::Global) => "ATOMG.E.ADD",
        (Op::Atomic, Space::Shared) => "ATOMS.ADD",
        (Op::Atomic, Space::Local) => return Err(format!("a local atomic (pc {:#x}) has no SASS opcode", i.pc)),
        (_, Space::None) => return Err(format!("{:?} without a memory space (pc {:#x})", i.op, i.pc)),
    };
    s.push_str(base);
    if i.op.is_memory() {
        match (i.size, i.op) {
            (1, _) => s.push_str(".U8"),
            (2, _) => s.push_str(".U16"),
            (4, Op::Load | Op::Store) => {}
            (n, _) => s.push_str(&format!(".{}", n as u32 * 8)),
        }
    }
    Ok(())
}

/// Address info of a memory instruction, compressed as the tracer does.
fn write_addrs(s: &mut String, mask: u32, lanes: &[u64]) {
    use std::fmt::Write as _;
    if lanes.len() >= 2 && contiguous(mask) {
        let d = lanes[1].wrapping_sub(lanes[0]) as i64;
        if let Ok(stride) = i32::try_from(d) {
            if lanes.windows(2).all(|p| p[1].wrapping_sub(p[0]) as i64 == d) {
                let _ = write!(s, "1 0x{:x} {stride} ", lanes[0]);
                return;
            }
        }
    }
    let _ = write!(s, "2 0x{:x} ", lanes[0]);
    for p in lanes.windows(2) {
        let _ = write!(s, "{} ", p[1].wrapping_sub(p[0]) as i64);
    }
}
