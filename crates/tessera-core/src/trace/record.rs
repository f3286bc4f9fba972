//! Recording a running program's memory accesses straight into a native
//! trace: `tessera trace record -o FILE -- PROGRAM ARGS...`.
//!
//! ## What it models
//! Two backends run the program and stream its accesses through a pipe into
//! a [`NativeWriter`]; no intermediate file touches the disk:
//!
//! - [`Backend::Lackey`]: `valgrind --tool=lackey --trace-mem=yes
//!   --log-fd=3 PROGRAM ARGS`, with fd 3 the write end of a pipe; the text is
//!   parsed by [`LackeyReader`] as it arrives (about 0.2 M accesses/s:
//!   Valgrind's own speed).
//! - [`Backend::Qemu`]: `qemu-x86_64 -plugin libtessera.so,fd=3[,ifetch=on]
//!   PROGRAM ARGS`, with Tessera's own TCG plugin (`plugins/qemu-tessera`,
//!   built on first use by [`qemu_plugin`](super::qemu_plugin)) writing
//!   16-byte binary records (the native record layout) to the pipe.
//!
//! ## Speed
//! - The plugin's records are read from the pipe (reads of up to 1 MiB; the
//!   pipe is enlarged to 1 MiB with `F_SETPIPE_SZ`) straight into the
//!   writer's block buffer and only inspected in place (`pump_qemu`): no
//!   decoding into an [`AccessBatch`] and re-encoding. Its output is
//!   byte-for-byte that of the decoding path (`pump_batches`, used for
//!   lackey), which the tests check.
//! - The writer compresses, checksums and writes blocks on a second thread
//!   ([`WriterOptions::background`]), at the usual zstd level 3.
//!
//! The program's stdin, stdout and stderr are the caller's: its output never
//! mixes with the trace, which has its own descriptor.
//!
//! ## Choices
//! - **Instruction fetches** ([`RecordOptions::ifetch`], default on): lackey
//!   reports every instruction fetch (`I` lines) and the plugin can too
//!   (`ifetch=on`, a callback per instruction). Off, fetches are not recorded
//!   and each data access carries the instructions since the previous one
//!   (for lackey the `I` records are dropped and their gaps moved on; the
//!   plugin counts instructions per translation block instead).
//! - **`skip` and `max_accesses` count recorded accesses** (after the fetch
//!   filter). Skipped accesses' instructions are not carried into the first
//!   kept record. When `max_accesses` is reached the writer is finished, the
//!   pipe closed and the program stopped: SIGTERM, then SIGKILL after
//!   [`KILL_GRACE`]; it is always reaped.
//! - **Atomic output:** an error, a failed tool or an interruption (the
//!   progress callback returning false, e.g. Ctrl-C) drops the writer, which
//!   removes its temporary file, and kills and reaps the program.
//! - **The program's exit status is reported, not judged:** a program that
//!   exits non-zero still leaves its trace (the summary has the status). A
//!   tool that fails before any access is recorded is an [`Error::Tool`].
//! - **Address layout** is the tool's, not a native run's: under Valgrind the
//!   loader sits near `0x0401xxxx` and the stack near `0x1fff00xxxx`; under
//!   QEMU near `0x40_0280_0000`. Statically linked non-PIE programs keep their
//!   global data at the same addresses under both.
//! - Lackey reports a read-modify-write as one ` M` line, which the reader
//!   turns into a load and a store, as QEMU reports it: counts agree.
//! - Multi-threaded programs: both tools serialise threads; the plugin writes
//!   each thread's records in chunks of up to 4096. Forked children are not
//!   recorded by the plugin; with lackey they share the log and may garble it.

use std::ffi::OsString;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::access::{AccessBatch, AccessKind, BATCH_LEN};
use crate::error::{Error, Location, Result};
use crate::stream::AccessSource;
use crate::trace::native::{NativeWriter, WriterOptions, RECORD_LEN};
use crate::trace::qemu_plugin::{self, PluginBuild};
use crate::trace::{batch_cap, LackeyReader};

/// Descriptor the tool writes the trace to, in the child.
pub const TRACE_FD: i32 = 3;
/// How long a stopped program gets between SIGTERM and SIGKILL.
pub const KILL_GRACE: Duration = Duration::from_secs(2);
/// First bytes of the plugin's stream.
pub const QEMU_STREAM_MAGIC: [u8; 8] = *b"TESSQEMU";
/// Stream version the plugin writes and this reader accepts.
pub const QEMU_STREAM_VERSION: u32 = 1;
/// Kind byte of the plugin's end record.
pub const QEMU_END_KIND: u8 = 255;
/// Batches between progress callbacks.
const PROGRESS_EVERY: u64 = 16;
/// zstd level of recorded traces.
pub const RECORD_ZSTD_LEVEL: i32 = crate::trace::native::ZSTD_LEVEL;
/// Size asked for the trace pipe (F_SETPIPE_SZ; Linux's default ceiling for
/// unprivileged processes, `/proc/sys/fs/pipe-max-size`, is 1 MiB): the tool
/// then rarely waits for Tessera, nor Tessera for the tool.
#[cfg(target_os = "linux")]
const PIPE_SIZE: i32 = 1 << 20;

/// How the program is run.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    Lackey,
    Qemu,
}

impl Backend {
    pub const NAMES: [&'static str; 2] = ["lackey", "qemu"];

    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Lackey => "lackey",
            Backend::Qemu => "qemu",
        }
    }

    pub fn parse(s: &str) -> Result<Backend> {
        match s {
            "lackey" => Ok(Backend::Lackey),
            "qemu" => Ok(Backend::Qemu),
            _ => Err(Error::config_allowed(
                "backend",
                format!("unknown recording backend \"{s}\""),
                &Backend::NAMES,
            )),
        }
    }
}

/// What to record and how.
#[derive(Clone, Debug)]
pub struct RecordOptions {
    pub backend: Backend,
    /// The program and its arguments.
    pub command: Vec<OsString>,
    /// Accesses to drop at the start.
    pub skip: u64,
    /// Stop after writing this many accesses.
    pub max_accesses: Option<u64>,
    /// Record instruction fetches.
    pub ifetch: bool,
    /// Valgrind binary (default `valgrind` on PATH).
    pub valgrind: Option<PathBuf>,
    /// How to find or build the QEMU plugin (its `qemu` is also the binary run).
    pub plugin: PluginBuild,
    /// A built plugin to use instead of [`qemu_plugin::ensure_plugin`].
    pub plugin_so: Option<PathBuf>,
}

impl RecordOptions {
    pub fn new(backend: Backend, command: Vec<OsString>) -> Self {
        RecordOptions {
            backend,
            command,
            skip: 0,
            max_accesses: None,
            ifetch: true,
            valgrind: None,
            plugin: PluginBuild::default(),
            plugin_so: None,
        }
    }
}

/// What a recording did.
#[derive(Clone, Debug, Serialize)]
pub struct RecordSummary {
    pub backend: Backend,
    /// Accesses written.
    pub records: u64,
    /// Sum of the written records' gaps.
    pub instructions: u64,
    pub loads: u64,
    pub stores: u64,
    pub ifetches: u64,
    /// Accesses dropped by `skip`.
    pub skipped: u64,
    /// `max_accesses` was reached and the program stopped.
    pub stopped_early: bool,
    /// Instructions the program executed, as counted by the tool, when it
    /// ran to its end (the plugin's end record; lackey: `None`).
    pub program_instructions: Option<u64>,
    /// Exit code of the tool (which is the program's), if it exited.
    pub exit_code: Option<i32>,
    /// Signal that ended the tool, if any.
    pub signal: Option<i32>,
    /// Bytes of the trace file.
    pub bytes: u64,
    pub seconds: f64,
    /// Accesses written per second of wall time.
    pub accesses_per_sec: f64,
    /// The tool's version line.
    pub tool_version: String,
    /// Things the user should know (non-fatal), one sentence each.
    pub warnings: Vec<String>,
}

impl RecordSummary {
    /// Nothing recorded yet.
    fn empty(backend: Backend, tool_version: String) -> RecordSummary {
        RecordSummary {
            backend,
            records: 0,
            instructions: 0,
            loads: 0,
            stores: 0,
            ifetches: 0,
            skipped: 0,
            stopped_early: false,
            program_instructions: None,
            exit_code: None,
            signal: None,
            bytes: 0,
            seconds: 0.0,
            accesses_per_sec: 0.0,
            tool_version,
            warnings: Vec::new(),
        }
    }
}

/// Kills and reaps the child on every exit path unless it was already reaped.
struct ChildGuard {
    child: Option<Child>,
}

impl ChildGuard {
    /// SIGTERM, a grace period, then SIGKILL; returns the final status.
    fn stop(&mut self) -> Option<std::process::ExitStatus> {
        let child = self.child.as_mut()?;
        if let Ok(Some(st)) = child.try_wait() {
            self.child = None;
            return Some(st);
        }
        #[cfg(unix)]
        unsafe {
            libc::kill(child.id() as libc::pid_t, libc::SIGTERM);
        }
        let start = Instant::now();
        while start.elapsed() < KILL_GRACE {
            if let Ok(Some(st)) = child.try_wait() {
                self.child = None;
                return Some(st);
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = child.kill();
        let st = child.wait().ok();
        self.child = None;
        st
    }

    fn wait(&mut self) -> Result<std::process::ExitStatus> {
        let mut child = self.child.take().expect("waited twice");
        child
            .wait()
            .map_err(|e| Error::tool("wait", format!("could not wait for the program: {e}")))
    }
}

impl Drop for ChildGuard {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A pipe whose write end becomes [`TRACE_FD`] in the child.
#[cfg(unix)]
fn spawn_with_trace_pipe(mut cmd: Command, tool: &str) -> Result<(ChildGuard, File)> {
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::os::unix::process::CommandExt;

    let mut fds = [0i32; 2];
    // CLOEXEC on both ends: only the dup2'd copy in the child survives exec.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(Error::tool(tool, format!("pipe: {}", std::io::Error::last_os_error())));
    }
    let read_end = unsafe { File::from_raw_fd(fds[0]) };
    // Best effort: a smaller pipe only costs speed.
    #[cfg(target_os = "linux")]
    unsafe {
        libc::fcntl(fds[0], libc::F_SETPIPE_SZ, PIPE_SIZE);
    }
    let write_end = unsafe { OwnedFd::from_raw_fd(fds[1]) };
    let w = fds[1];
    unsafe {
        cmd.pre_exec(move || {
            // Only async-signal-safe calls here (we are between fork and exec).
            if w == TRACE_FD {
                if libc::fcntl(w, libc::F_SETFD, 0) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            } else if libc::dup2(w, TRACE_FD) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let child = cmd
        .stdin(Stdio::inherit())
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| Error::tool(tool, format!("could not start: {e}")))?;
    // The parent's copy of the write end must close, or EOF never comes.
    drop(write_end);
    Ok((ChildGuard { child: Some(child) }, read_end))
}

#[cfg(not(unix))]
fn spawn_with_trace_pipe(_cmd: Command, tool: &str) -> Result<(ChildGuard, File)> {
    Err(Error::tool(tool, "recording needs a Unix host"))
}

/// Reads the plugin's stream: a 16-byte header, then native-layout records,
/// then an end record carrying the instruction total.
pub struct QemuStreamReader<R: Read> {
    inner: R,
    name: String,
    buf: Vec<u8>,
    pos: usize,
    filled: usize,
    /// Stream bytes consumed before `buf[0]`.
    base: u64,
    eof: bool,
    end_total: Option<u64>,
}

/// Read and check the plugin stream's 16-byte header.
fn read_qemu_header<R: Read>(inner: &mut R, name: &str) -> Result<()> {
    let mut h = [0u8; 16];
    let mut got = 0;
    while got < 16 {
        match inner.read(&mut h[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(Error::io(name, e)),
        }
    }
    if got == 0 {
        return Err(Error::trace(
            name,
            Location::Offset(0),
            "the QEMU plugin wrote nothing (did QEMU load it? see its messages above)",
        ));
    }
    if got < 16 || h[..8] != QEMU_STREAM_MAGIC {
        return Err(Error::trace(name, Location::Offset(0), "not a Tessera QEMU plugin stream"));
    }
    let version = u32::from_le_bytes(h[8..12].try_into().unwrap());
    let rlen = u32::from_le_bytes(h[12..16].try_into().unwrap());
    if version != QEMU_STREAM_VERSION || rlen as usize != RECORD_LEN {
        return Err(Error::trace(
            name,
            Location::Offset(8),
            format!(
                "plugin stream version {version} with {rlen}-byte records; this build reads \
                 version {QEMU_STREAM_VERSION} with {RECORD_LEN}-byte records (stale plugin?)"
            ),
        ));
    }
    Ok(())
}

impl<R: Read> QemuStreamReader<R> {
    /// Check the header. `name` names the stream in errors.
    pub fn new(mut inner: R, name: String) -> Result<Self> {
        read_qemu_header(&mut inner, &name)?;
        Ok(QemuStreamReader {
            inner,
            name,
            buf: vec![0; 4096 * RECORD_LEN],
            pos: 0,
            filled: 0,
            base: 16,
            eof: false,
            end_total: None,
        })
    }

    /// The instruction total from the end record, once it has been read.
    pub fn end_total(&self) -> Option<u64> {
        self.end_total
    }

    fn fail(&self, at: u64, msg: String) -> Error {
        Error::trace(self.name.clone(), Location::Offset(at), msg)
    }

    fn refill(&mut self) -> Result<bool> {
        if self.filled - self.pos >= RECORD_LEN {
            return Ok(true);
        }
        self.buf.copy_within(self.pos..self.filled, 0);
        self.filled -= self.pos;
        self.base += self.pos as u64;
        self.pos = 0;
        while !self.eof && self.filled < RECORD_LEN {
            match self.inner.read(&mut self.buf[self.filled..]) {
                Ok(0) => self.eof = true,
                Ok(n) => self.filled += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(Error::io(self.name.clone(), e)),
            }
        }
        if self.filled >= RECORD_LEN {
            return Ok(true);
        }
        if self.filled > 0 {
            return Err(self.fail(
                self.base,
                format!("the stream ends {} bytes into a record", self.filled),
            ));
        }
        Ok(false)
    }
}

impl<R: Read> AccessSource for QemuStreamReader<R> {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        let cap = batch_cap(out);
        while out.len() < cap && self.end_total.is_none() {
            if !self.refill()? {
                break;
            }
            while self.filled - self.pos >= RECORD_LEN && out.len() < cap {
                let r = &self.buf[self.pos..self.pos + RECORD_LEN];
                let vaddr = u64::from_le_bytes(r[0..8].try_into().unwrap());
                let gap = u32::from_le_bytes(r[8..12].try_into().unwrap());
                let kind = match r[14] {
                    0 => AccessKind::Load,
                    1 => AccessKind::Store,
                    2 => AccessKind::IFetch,
                    QEMU_END_KIND => {
                        self.end_total = Some(vaddr);
                        self.pos += RECORD_LEN;
                        break;
                    }
                    k => {
                        let at = self.base + self.pos as u64;
                        return Err(self.fail(at, format!("bad kind byte {k} in a plugin record")));
                    }
                };
                out.push(gap, vaddr, kind, r[15], u16::from_le_bytes([r[12], r[13]]));
                self.pos += RECORD_LEN;
            }
        }
        Ok(!out.is_empty())
    }

    fn progress(&self) -> (u64, u64) {
        (self.base + self.pos as u64, 0)
    }

    fn describe(&self) -> String {
        self.name.clone()
    }
}

fn version_line(tool: &Path, arg: &str) -> String {
    Command::new(tool)
        .arg(arg)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()
        .and_then(|o| String::from_utf8_lossy(&o.stdout).lines().next().map(str::to_string))
        .unwrap_or_default()
}

/// Record `opts.command` into a native trace at `output`.
///
/// `progress(accesses_written, 0)` is called every few batches (the total is
/// unknown); returning false stops the recording with [`Error::Interrupted`]
/// and leaves no output. For the QEMU backend without `plugin_so`, the plugin
/// is built first if needed, with `status` told about each slow step.
pub fn record(
    output: &Path,
    opts: &RecordOptions,
    status: &mut dyn FnMut(&str),
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> Result<RecordSummary> {
    let Some(program) = opts.command.first() else {
        return Err(Error::config("command", "no program to record"));
    };
    let program_path = qemu_plugin::which(program).ok_or_else(|| {
        Error::tool(
            program.to_string_lossy(),
            "program not found (or not executable)",
        )
    })?;
    let args = &opts.command[1..];

    let (cmd, tool_version, pipe_name) = match opts.backend {
        Backend::Lackey => {
            let name = opts.valgrind.clone().unwrap_or_else(|| "valgrind".into());
            let vg = qemu_plugin::require(name.as_os_str(), "valgrind", "recording with --backend lackey")?;
            let mut cmd = Command::new(&vg);
            cmd.args(["--tool=lackey", "--trace-mem=yes"])
                .arg(format!("--log-fd={TRACE_FD}"))
                .arg(&program_path)
                .args(args);
            (cmd, version_line(&vg, "--version"), "valgrind lackey output (pipe)")
        }
        Backend::Qemu => {
            let name = opts.plugin.qemu.clone().unwrap_or_else(|| "qemu-x86_64".into());
            let qemu = qemu_plugin::require(name.as_os_str(), "qemu-user", "recording with --backend qemu")?;
            let so = match &opts.plugin_so {
                Some(p) => p.clone(),
                None => qemu_plugin::ensure_plugin(&opts.plugin, status)?,
            };
            let mut cmd = Command::new(&qemu);
            let onoff = if opts.ifetch { "on" } else { "off" };
            cmd.arg("-plugin")
                .arg(format!("{},fd={TRACE_FD},ifetch={onoff}", so.display()))
                .arg(&program_path)
                .args(args);
            (cmd, qemu_plugin::qemu_version_line(&qemu)?, "tessera QEMU plugin output (pipe)")
        }
    };

    let meta = serde_json::json!({
        "source_format": "record",
        "backend": opts.backend,
        "tool_version": tool_version,
        "command": opts.command.iter().map(|a| a.to_string_lossy()).collect::<Vec<_>>(),
        "skip": opts.skip,
        "max_accesses": opts.max_accesses,
        "ifetch": opts.ifetch,
        "tessera_version": crate::VERSION,
    });
    // Create the output first: a bad path fails before the program runs.
    let mut writer = NativeWriter::create_with(
        output,
        meta,
        WriterOptions {
            level: RECORD_ZSTD_LEVEL,
            background: true,
            // QEMU and Valgrind see no register dependencies.
            dependencies: false,
        },
    )?;
    let start = Instant::now();
    let tool_name = opts.backend.as_str();
    let (mut child, pipe) = spawn_with_trace_pipe(cmd, tool_name)?;

    let mut s = RecordSummary::empty(opts.backend, tool_version);
    // The pipe is closed at the end of each arm, before the program is
    // waited for (a plugin still writing then gets EPIPE and stops).
    let pumped = match opts.backend {
        Backend::Lackey => {
            let mut src = LackeyReader::from_reader(pipe, pipe_name.into(), pipe_name.into(), 0);
            pump_batches(&mut src, &mut writer, opts, &mut s, progress).map(|()| None)
        }
        Backend::Qemu => {
            let mut pipe = pipe;
            if let Err(e) = read_qemu_header(&mut pipe, pipe_name) {
                let st = child.stop();
                return Err(match st {
                    Some(st) if !st.success() => Error::tool(
                        "qemu-x86_64",
                        format!("exited ({st}) before the plugin wrote its stream; see its messages above"),
                    ),
                    _ => e,
                });
            }
            pump_qemu(&mut pipe, pipe_name, &mut writer, opts, &mut s, progress)
        }
    };
    let end_total = match pumped {
        Ok(t) => t,
        Err(Pump::Read(e)) => {
            let st = child.stop();
            return Err(tool_failure(tool_name, st, s.records + s.skipped).unwrap_or(e));
        }
        Err(Pump::Other(Error::Interrupted)) => {
            child.stop();
            return Err(Error::Interrupted);
        }
        Err(Pump::Other(e)) => return Err(e),
    };
    let status = if s.stopped_early {
        child.stop()
    } else {
        Some(child.wait()?)
    };
    if !progress(s.records, 0) {
        return Err(Error::Interrupted);
    }
    if let Some(st) = status {
        #[cfg(unix)]
        {
            use std::os::unix::process::ExitStatusExt;
            s.signal = st.signal();
        }
        s.exit_code = st.code();
    }
    if !s.stopped_early {
        if s.records + s.skipped == 0 {
            if let Some(e) = tool_failure(tool_name, status, 0) {
                return Err(e);
            }
        }
        if opts.backend == Backend::Qemu {
            s.program_instructions = end_total;
            if end_total.is_none() {
                s.warnings.push(
                    "the QEMU plugin's stream ended without its end record (the program was killed?); \
                     up to 4096 final accesses per thread may be missing"
                        .into(),
                );
            }
        }
        if let Some(sig) = s.signal {
            s.warnings.push(format!("the program was killed by signal {sig}"));
        } else if let Some(c) = s.exit_code.filter(|&c| c != 0) {
            s.warnings.push(format!("the program exited with status {c}"));
        }
    }
    if s.records == 0 {
        s.warnings.push("no access was recorded (is --skip larger than the run?)".into());
    }
    let w = writer.finish()?;
    s.bytes = w.bytes;
    s.seconds = start.elapsed().as_secs_f64();
    s.accesses_per_sec = (s.records + s.skipped) as f64 / s.seconds.max(1e-9);
    Ok(s)
}

/// Why a read loop stopped early.
enum Pump {
    /// Reading or parsing the tool's output failed (perhaps because the tool
    /// died: the caller checks its status).
    Read(Error),
    /// Writing failed, or the progress callback asked to stop.
    Other(Error),
}

/// Stream bytes between progress callbacks (as often as the batch loop's
/// `PROGRESS_EVERY` batches).
const PROGRESS_BYTES: u64 = PROGRESS_EVERY * BATCH_LEN as u64 * RECORD_LEN as u64;

/// The general read loop: decode batches from `src`, apply the fetch filter,
/// `skip` and `max_accesses`, and re-encode into the writer. Used for lackey;
/// [`pump_qemu`] does the same for the plugin's stream without decoding.
fn pump_batches<S: AccessSource>(
    src: &mut S,
    writer: &mut NativeWriter,
    opts: &RecordOptions,
    s: &mut RecordSummary,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> std::result::Result<(), Pump> {
    let mut inb = AccessBatch::with_capacity(BATCH_LEN);
    let mut outb = AccessBatch::with_capacity(BATCH_LEN);
    let mut pending: u32 = 0;
    let mut batches = 0u64;
    let max = opts.max_accesses.unwrap_or(u64::MAX);
    'read: while s.records < max {
        if !src.next_batch(&mut inb).map_err(Pump::Read)? {
            break;
        }
        outb.clear();
        for i in 0..inb.len() {
            let kind = inb.kind[i];
            let gap = inb.ins_gap[i];
            if kind == AccessKind::IFetch && !opts.ifetch {
                pending = pending.saturating_add(gap);
                continue;
            }
            let gap = gap.saturating_add(pending);
            pending = 0;
            if s.skipped < opts.skip {
                s.skipped += 1;
                continue;
            }
            outb.push(gap, inb.vaddr[i], kind, inb.size[i], inb.asid[i]);
            s.instructions += gap as u64;
            match kind {
                AccessKind::Load => s.loads += 1,
                AccessKind::Store => s.stores += 1,
                AccessKind::IFetch => s.ifetches += 1,
            }
            s.records += 1;
            if s.records == max {
                writer.write_batch(&outb).map_err(Pump::Other)?;
                s.stopped_early = true;
                break 'read;
            }
        }
        writer.write_batch(&outb).map_err(Pump::Other)?;
        batches += 1;
        if batches.is_multiple_of(PROGRESS_EVERY) && !progress(s.records, 0) {
            return Err(Pump::Other(Error::Interrupted));
        }
    }
    Ok(())
}

/// The plugin's read loop. Its records already have the native layout, so
/// the pipe is read (in reads of up to a block, 1 MiB) straight into the
/// writer's block buffer and the records are only inspected in place: kinds
/// counted, gaps summed, the end record taken off. Records are moved only
/// when some are dropped (`skip`, or fetch records while fetches are off,
/// whose gaps move on to the next record, exactly as [`pump_batches`] does).
/// Returns the instruction total of the end record, if it came.
fn pump_qemu<R: Read>(
    pipe: &mut R,
    name: &str,
    writer: &mut NativeWriter,
    opts: &RecordOptions,
    s: &mut RecordSummary,
    progress: &mut dyn FnMut(u64, u64) -> bool,
) -> std::result::Result<Option<u64>, Pump> {
    let max = opts.max_accesses.unwrap_or(u64::MAX);
    // Bytes of an incomplete record at the start of the block's tail.
    let mut partial = 0usize;
    // Stream offset of the block tail's first byte (after the header).
    let mut offset = 16u64;
    let mut next_progress = offset + PROGRESS_BYTES;
    let mut pending: u32 = 0;
    let mut counts = [0u64; 3];
    let mut end_total = None;
    let result = (|| {
        while s.records < max {
            let tail = writer.block_tail();
            let n = match pipe.read(&mut tail[partial..]) {
                Ok(0) if partial > 0 => {
                    return Err(Pump::Read(Error::trace(
                        name,
                        Location::Offset(offset),
                        format!("the stream ends {partial} bytes into a record"),
                    )))
                }
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Pump::Read(Error::io(name, e))),
            };
            let avail = partial + n;
            let whole = avail / RECORD_LEN;
            let mut kept = 0usize;
            let mut instructions = 0u64;
            let mut stop = false;
            let mut r = 0;
            while r < whole {
                if kept == r && pending == 0 && s.skipped >= opts.skip {
                    // The common case: records stay where they are; only
                    // count them, up to the first one needing a decision.
                    let lim = (whole - r).min((max - s.records).min(usize::MAX as u64) as usize);
                    let recs = &tail[r * RECORD_LEN..(r + lim) * RECORD_LEN];
                    let (m, c, ins) = scan_plain(recs, opts.ifetch);
                    for k in 0..3 {
                        counts[k] += c[k];
                    }
                    instructions += ins;
                    kept += m;
                    r += m;
                    s.records += m as u64;
                    if s.records == max {
                        s.stopped_early = true;
                        stop = true;
                        break;
                    }
                    if r == whole {
                        break;
                    }
                }
                let at = r * RECORD_LEN;
                r += 1;
                let kind = tail[at + 14];
                let mut gap = u32::from_le_bytes(tail[at + 8..at + 12].try_into().unwrap());
                if kind > 2 {
                    if kind == QEMU_END_KIND {
                        end_total = Some(u64::from_le_bytes(tail[at..at + 8].try_into().unwrap()));
                        stop = true;
                        break;
                    }
                    return Err(Pump::Read(Error::trace(
                        name,
                        Location::Offset(offset + at as u64),
                        format!("bad kind byte {kind} in a plugin record"),
                    )));
                }
                if kind == AccessKind::IFetch as u8 && !opts.ifetch {
                    pending = pending.saturating_add(gap);
                    continue;
                }
                if pending != 0 {
                    gap = gap.saturating_add(pending);
                    pending = 0;
                    tail[at + 8..at + 12].copy_from_slice(&gap.to_le_bytes());
                }
                if s.skipped < opts.skip {
                    s.skipped += 1;
                    continue;
                }
                if kept * RECORD_LEN != at {
                    tail.copy_within(at..at + RECORD_LEN, kept * RECORD_LEN);
                }
                kept += 1;
                instructions += gap as u64;
                counts[kind as usize] += 1;
                s.records += 1;
                if s.records == max {
                    s.stopped_early = true;
                    stop = true;
                    break;
                }
            }
            partial = avail - whole * RECORD_LEN;
            if partial > 0 && kept != whole {
                tail.copy_within(whole * RECORD_LEN..avail, kept * RECORD_LEN);
            }
            offset += (whole * RECORD_LEN) as u64;
            s.instructions += instructions;
            // A block fills only when every byte read was a kept record, so
            // no partial record is left behind when it is passed on.
            writer.commit_tail(kept, instructions).map_err(Pump::Other)?;
            if stop {
                break;
            }
            if offset >= next_progress {
                next_progress = offset + PROGRESS_BYTES;
                if !progress(s.records, 0) {
                    return Err(Pump::Other(Error::Interrupted));
                }
            }
        }
        Ok(())
    })();
    s.loads += counts[AccessKind::Load as usize];
    s.stores += counts[AccessKind::Store as usize];
    s.ifetches += counts[AccessKind::IFetch as usize];
    result.map(|()| end_total)
}

/// Count the leading records of `recs` that are kept as they are (load,
/// store, or fetch when fetches are recorded): how many, their counts by
/// kind, and the sum of their gaps. Stops at the first other record.
#[inline]
fn scan_plain(recs: &[u8], ifetch: bool) -> (usize, [u64; 3], u64) {
    let top = if ifetch { AccessKind::IFetch as u8 } else { AccessKind::Store as u8 };
    let (mut loads, mut stores, mut n, mut ins) = (0u64, 0u64, 0usize, 0u64);
    for r in recs.chunks_exact(RECORD_LEN) {
        let k = r[14];
        if k > top {
            break;
        }
        loads += (k == 0) as u64;
        stores += (k == 1) as u64;
        ins += u32::from_le_bytes(r[8..12].try_into().unwrap()) as u64;
        n += 1;
    }
    (n, [loads, stores, n as u64 - loads - stores], ins)
}

/// When the tool died without recording anything, say so instead of
/// reporting a parse error of its partial output.
fn tool_failure(tool: &str, st: Option<std::process::ExitStatus>, recorded: u64) -> Option<Error> {
    let st = st?;
    if st.success() || recorded > 0 {
        return None;
    }
    Some(Error::tool(
        tool,
        format!("exited ({st}) without recording any access; see its messages above"),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::native::NativeReader;
    use std::sync::atomic::{AtomicU64, Ordering};

    fn tmp(name: &str) -> PathBuf {
        static N: AtomicU64 = AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "tessera-record-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&d).unwrap();
        d.join(name)
    }

    /// A plugin stream: header, records, and an end record if `end` is given.
    fn stream(recs: &[(u64, u32, u8, u8)], end: Option<u64>) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&QEMU_STREAM_MAGIC);
        v.extend_from_slice(&QEMU_STREAM_VERSION.to_le_bytes());
        v.extend_from_slice(&(RECORD_LEN as u32).to_le_bytes());
        let mut push = |vaddr: u64, gap: u32, kind: u8, size: u8| {
            v.extend_from_slice(&vaddr.to_le_bytes());
            v.extend_from_slice(&gap.to_le_bytes());
            v.extend_from_slice(&0u16.to_le_bytes());
            v.push(kind);
            v.push(size);
        };
        for &(a, g, k, s) in recs {
            push(a, g, k, s);
        }
        if let Some(t) = end {
            push(t, 0, QEMU_END_KIND, 0);
        }
        v
    }

    /// Reads in awkward sizes (never a whole number of records for long).
    struct Chunky<'a> {
        data: &'a [u8],
        i: usize,
    }

    impl Read for Chunky<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            const SIZES: [usize; 7] = [1, 7, 16, 33, 4099, 65536 * 16 + 5, 300_001];
            let n = SIZES[self.i % SIZES.len()].min(buf.len()).min(self.data.len());
            self.i += 1;
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn summary() -> RecordSummary {
        RecordSummary::empty(Backend::Qemu, String::new())
    }

    type Outcome = std::result::Result<(Vec<u8>, String, Option<u64>), String>;

    /// Record `bytes` through the decoding path or the in-place path; the
    /// trace file's bytes, the summary's counters and the end total.
    fn via(bytes: &[u8], opts: &RecordOptions, fast: bool, background: bool) -> Outcome {
        let out = tmp("t.tess");
        let wopts = WriterOptions {
            level: RECORD_ZSTD_LEVEL,
            background,
            dependencies: false,
        };
        let mut w = NativeWriter::create_with(&out, serde_json::json!({"t": 1}), wopts).unwrap();
        let mut s = summary();
        let mut calls = 0u64;
        let mut progress = |_: u64, _: u64| {
            calls += 1;
            true
        };
        let mut r = Chunky { data: bytes, i: 0 };
        let res = if fast {
            read_qemu_header(&mut r, "pipe").and_then(|()| {
                pump_qemu(&mut r, "pipe", &mut w, opts, &mut s, &mut progress).map_err(|e| match e {
                    Pump::Read(e) | Pump::Other(e) => e,
                })
            })
        } else {
            QemuStreamReader::new(r, "pipe".into()).and_then(|mut src| {
                pump_batches(&mut src, &mut w, opts, &mut s, &mut progress)
                    .map_err(|e| match e {
                        Pump::Read(e) | Pump::Other(e) => e,
                    })
                    .map(|()| src.end_total())
            })
        };
        let end = res.map_err(|e| e.to_string())?;
        let sum = w.finish().unwrap();
        assert_eq!((sum.records, sum.instructions), (s.records, s.instructions));
        let file = std::fs::read(&out).unwrap();
        std::fs::remove_dir_all(out.parent().unwrap()).unwrap();
        let counters = format!(
            "records {} instructions {} loads {} stores {} ifetches {} skipped {} early {}",
            s.records, s.instructions, s.loads, s.stores, s.ifetches, s.skipped, s.stopped_early
        );
        Ok((file, counters, end))
    }

    fn opts(ifetch: bool, skip: u64, max: Option<u64>) -> RecordOptions {
        let mut o = RecordOptions::new(Backend::Qemu, vec!["x".into()]);
        o.ifetch = ifetch;
        o.skip = skip;
        o.max_accesses = max;
        o
    }

    /// The in-place path gives byte-identical trace files and the same
    /// counters as decoding every record, for every option, and so does the
    /// background writer.
    fn check_same(bytes: &[u8], n: u64) {
        for ifetch in [true, false] {
            for skip in [0, 3, 70_000, n + 1] {
                for max in [None, Some(0), Some(1), Some(65_536), Some(100_001), Some(n)] {
                    let o = opts(ifetch, skip, max);
                    let slow = via(bytes, &o, false, false);
                    let fast = via(bytes, &o, true, true);
                    let what = format!("ifetch {ifetch} skip {skip} max {max:?}");
                    match (&slow, &fast) {
                        (Ok(a), Ok(b)) => {
                            assert_eq!(a.1, b.1, "{what}");
                            // The end total counts only for a run to its end
                            // (the decoder may have read it ahead of `max`).
                            if a.1.ends_with("early false") {
                                assert_eq!(a.2, b.2, "{what}");
                            }
                            assert!(a.0 == b.0, "{what}: trace files differ");
                        }
                        _ => assert_eq!(slow, fast, "{what}"),
                    }
                    let inline = via(bytes, &o, true, false);
                    assert!(fast == inline, "{what}: background and inline writers differ");
                }
            }
        }
    }

    fn synthetic(n: usize) -> Vec<(u64, u32, u8, u8)> {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let kind = match x % 7 {
                    0..=2 => 2,
                    3..=5 => 0,
                    _ => 1,
                };
                let gap = if kind == 2 { 1 } else { (x >> 8) as u32 % 3 };
                let gap = if i % 50_000 == 7 { u32::MAX - 1 } else { gap };
                (x >> 16, gap, kind, 1 << ((x >> 40) % 4))
            })
            .collect()
    }

    #[test]
    fn in_place_path_writes_the_same_trace_as_decoding() {
        let recs = synthetic(200_000);
        check_same(&stream(&recs, Some(123_456)), recs.len() as u64);
        // Without its end record (a killed program).
        check_same(&stream(&recs[..70_001], None), 70_001);
    }

    #[test]
    fn in_place_path_reports_bad_input_like_decoding() {
        let recs = synthetic(100_000);
        let mut bad = stream(&recs, Some(1));
        bad[16 + 77_777 * 16 + 14] = 9;
        let o = opts(true, 0, None);
        let (slow, fast) = (via(&bad, &o, false, false), via(&bad, &o, true, true));
        assert!(slow.as_ref().unwrap_err().contains("bad kind byte 9"), "{slow:?}");
        assert_eq!(slow, fast);
        let cut = &stream(&recs, None)[..16 + 99_999 * 16 + 5];
        let (slow, fast) = (via(cut, &o, false, false), via(cut, &o, true, true));
        assert!(slow.as_ref().unwrap_err().contains("5 bytes into a record"), "{slow:?}");
        assert_eq!(slow, fast);
        let header = &stream(&[], None)[..9];
        assert_eq!(via(header, &o, false, false), via(header, &o, true, false));
    }

    /// On a real recorded program (when qemu-x86_64 and the plugin are
    /// available): the plugin's stream, captured once, gives identical traces
    /// through both paths.
    #[test]
    fn in_place_path_matches_decoding_on_a_recorded_program() {
        let Some(qemu) = qemu_plugin::which(std::ffi::OsStr::new("qemu-x86_64")) else {
            eprintln!("skipped: qemu-x86_64 is not installed");
            return;
        };
        let so = match qemu_plugin::ensure_plugin(&PluginBuild::default(), &mut |_| {}) {
            Ok(so) => so,
            Err(e) => {
                eprintln!("skipped: no QEMU plugin ({e})");
                return;
            }
        };
        let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/trace/record.rs");
        for ifetch in ["on", "off"] {
            let mut cmd = Command::new(&qemu);
            cmd.arg("-plugin")
                .arg(format!("{},fd={TRACE_FD},ifetch={ifetch}", so.display()))
                .arg(qemu_plugin::which(std::ffi::OsStr::new("cksum")).expect("cksum"))
                .arg(&input);
            let (mut child, mut pipe) = spawn_with_trace_pipe(cmd, "qemu").unwrap();
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).unwrap();
            assert!(child.wait().unwrap().success());
            let n = (bytes.len() as u64 - 32) / 16;
            assert!(n > 100_000, "{n} records");
            for o in [opts(true, 0, None), opts(false, 0, None), opts(ifetch == "on", 1000, Some(150_000))] {
                let slow = via(&bytes, &o, false, false).unwrap();
                let fast = via(&bytes, &o, true, true).unwrap();
                assert_eq!(slow.1, fast.1);
                if o.max_accesses.is_none() {
                    assert_eq!(slow.2, fast.2);
                    assert!(slow.2.is_some());
                }
                assert!(slow.0 == fast.0, "trace files differ (ifetch={ifetch})");
                // And the file reads back.
                let out = tmp("r.tess");
                std::fs::write(&out, &fast.0).unwrap();
                let mut r = NativeReader::open(&out).unwrap();
                let mut b = AccessBatch::with_capacity(BATCH_LEN);
                while r.next_batch(&mut b).unwrap() {}
                std::fs::remove_dir_all(out.parent().unwrap()).unwrap();
            }
        }
    }
}
