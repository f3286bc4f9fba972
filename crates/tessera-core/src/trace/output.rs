//! All-or-nothing output files for the trace writers.
//!
//! ## What it models
//! A writer streams into a hidden temporary file in the destination's
//! directory and renames it over the destination only when it is finished, so
//! a reader never sees a half-written trace and a failed conversion leaves no
//! output behind. If the writer is dropped before `commit` (an error, a panic,
//! a caller that forgot `finish`), `Drop` removes the temporary file.
//!
//! ## Choices
//! - The temporary file lives in the same directory so the final `rename` is
//!   atomic (same filesystem).
//! - `commit` calls `sync_all` before the rename: without it a crash could
//!   leave a complete-looking name pointing at unwritten blocks.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};

static TMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Buffer size of the writer in front of the temporary file.
const WRITE_BUF: usize = 1 << 20;

pub(crate) struct AtomicOutput {
    w: Option<BufWriter<File>>,
    tmp: PathBuf,
    dest: PathBuf,
    written: u64,
}

impl AtomicOutput {
    pub(crate) fn create(dest: &Path) -> Result<Self> {
        let name = dest
            .file_name()
            .ok_or_else(|| {
                Error::io(
                    dest.display().to_string(),
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        "output path has no file name",
                    ),
                )
            })?
            .to_string_lossy()
            .into_owned();
        let dir = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let n = TMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
        let f = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
            .map_err(|e| Error::io(dest.display().to_string(), e))?;
        Ok(AtomicOutput {
            w: Some(BufWriter::with_capacity(WRITE_BUF, f)),
            tmp,
            dest: dest.to_path_buf(),
            written: 0,
        })
    }

    /// The destination path, for error messages.
    pub(crate) fn dest_name(&self) -> String {
        self.dest.display().to_string()
    }

    /// Bytes written so far.
    pub(crate) fn written(&self) -> u64 {
        self.written
    }

    pub(crate) fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let w = self.w.as_mut().expect("AtomicOutput used after commit");
        match w.write_all(bytes) {
            Ok(()) => {
                self.written += bytes.len() as u64;
                Ok(())
            }
            Err(e) => Err(Error::io(self.dest.display().to_string(), e)),
        }
    }

    /// Flush, sync and rename into place. Returns the file's length.
    pub(crate) fn commit(mut self) -> Result<u64> {
        let dest = self.dest.display().to_string();
        let w = self.w.take().expect("AtomicOutput committed twice");
        let f = w
            .into_inner()
            .map_err(|e| Error::io(dest.clone(), e.into_error()))?;
        f.sync_all().map_err(|e| Error::io(dest.clone(), e))?;
        drop(f);
        fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(dest, e))?;
        // Renamed: nothing left for Drop to clean up.
        self.tmp = PathBuf::new();
        Ok(self.written)
    }
}

impl Drop for AtomicOutput {
    fn drop(&mut self) {
        drop(self.w.take());
        if !self.tmp.as_os_str().is_empty() {
            let _ = fs::remove_file(&self.tmp);
        }
    }
}
