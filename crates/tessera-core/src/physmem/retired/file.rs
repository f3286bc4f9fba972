//! Retired frames listed in a file.
//!
//! ## What it models
//! A fault map recorded elsewhere (an OS's list of offlined pages, a
//! memory test's report, a map written by a script): the frames in the file
//! are retired, nothing else.
//! ## Format
//! Text, one frame number (4 KiB frame, i.e. physical address / 4096) per
//! line, decimal or `0x` hexadecimal. `#` starts a comment that runs to the
//! end of the line; blank lines are skipped; a frame listed twice is retired
//! once. Any other line is a config error naming the file and the line, as
//! is a frame at or beyond `physmem.capacity`.
//! ## Choices
//! - A relative `path` is taken from the current directory of the process
//!   that runs the simulation.
//! - The file is read when the config is resolved and again when memory is
//!   built, so an error shows before the run starts.
//! ## Config
//! `kind = "file"`, `path` (required).
//! ## Stats
//! Those of the family (`physmem.retired_frames`, `physmem.retired.*`).

use serde::{Deserialize, Serialize};

use super::{RetireCtx, RetiredMap, Retirement};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

const KEY: &str = "physmem.retired.path";

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The file listing retired frames.
    #[serde(default)]
    pub path: String,
}

#[derive(Clone, Debug)]
pub struct File {
    frames: Vec<u64>,
}

impl Mechanism for File {
    const NAME: &'static str = "file";
    const SUMMARY: &'static str = "the frames listed in a file, one frame number per line";
    type Config = Config;
    type Ctx = RetireCtx;
    fn build(cfg: &Config, ctx: &RetireCtx) -> Result<Self> {
        if cfg.path.is_empty() {
            return Err(Error::config(KEY, "a file source needs `path`, the file listing retired frames"));
        }
        let text = std::fs::read_to_string(&cfg.path).map_err(|e| Error::config(KEY, format!("cannot read {}: {e}", cfg.path)))?;
        Ok(File { frames: parse(&text, &cfg.path, ctx.capacity_frames)? })
    }
}

/// The frames of a fault-map file's `text`; errors name `file` and the line.
pub fn parse(text: &str, file: &str, capacity_frames: u64) -> Result<Vec<u64>> {
    let mut frames = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let body = line.split('#').next().unwrap_or("").trim();
        if body.is_empty() {
            continue;
        }
        let bad = |msg: String| Error::config(KEY, format!("{file}: line {}: {msg}", i + 1));
        let parsed = match body.strip_prefix("0x").or_else(|| body.strip_prefix("0X")) {
            Some(hex) => u64::from_str_radix(hex, 16),
            None => body.parse::<u64>(),
        };
        let f = parsed.map_err(|_| bad(format!("{body:?} is not a frame number (one whole number per line, decimal or 0x hexadecimal; # starts a comment)")))?;
        if f >= capacity_frames {
            return Err(bad(format!(
                "frame {f} is beyond physmem.capacity ({capacity_frames} frames of 4 KiB: frames 0 to {})",
                capacity_frames - 1
            )));
        }
        frames.push(f);
    }
    Ok(frames)
}

impl Retirement for File {
    fn mark(&self, map: &mut RetiredMap) -> Result<()> {
        for &f in &self.frames {
            map.retire(f);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_comments_and_blank_lines() {
        let text = "# fault map\n3\n0x10   # hex\n\n  7\n3\n";
        assert_eq!(parse(text, "m.txt", 100).unwrap(), vec![3, 16, 7, 3]);
    }

    #[test]
    fn a_bad_line_names_the_file_and_line() {
        let e = parse("1\n2\nabc\n", "m.txt", 100).unwrap_err().to_string();
        assert!(e.contains("physmem.retired.path") && e.contains("m.txt: line 3") && e.contains("\"abc\""), "{e}");
        let e = parse("1\n-4\n", "m.txt", 100).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
        let e = parse("1\n2 3\n", "m.txt", 100).unwrap_err().to_string();
        assert!(e.contains("line 2"), "{e}");
    }

    #[test]
    fn a_frame_beyond_capacity_is_an_error() {
        let e = parse("99\n100\n", "m.txt", 100).unwrap_err().to_string();
        assert!(e.contains("m.txt: line 2") && e.contains("beyond physmem.capacity") && e.contains("0 to 99"), "{e}");
    }

    #[test]
    fn a_missing_file_or_path_is_a_config_error() {
        let ctx = RetireCtx { capacity_frames: 100, seed: 0 };
        let e = File::build(&Config { path: "/nonexistent/fault.map".into() }, &ctx).unwrap_err().to_string();
        assert!(e.contains("physmem.retired.path") && e.contains("/nonexistent/fault.map"), "{e}");
        let e = File::build(&Config::default(), &ctx).unwrap_err().to_string();
        assert!(e.contains("needs `path`"), "{e}");
    }
}
