//! Building Tessera's QEMU plugin on demand, against the plugin header of the
//! installed `qemu-user`, and caching the shared object.
//!
//! ## What it models
//! Debian's `qemu-user` is built with TCG plugin support but ships neither a
//! plugin nor `qemu-plugin.h` (FORMATS.md §5.1). Tessera carries the source
//! of its own plugin (`plugins/qemu-tessera/tessera.c`, GPL-2.0-or-later
//! because it compiles against QEMU's GPL header) and, on first use:
//!
//! 1. asks the QEMU binary for its version (`qemu-x86_64 --version`);
//! 2. finds `qemu-plugin.h` for exactly that upstream version: a header given
//!    by the caller, else one cached earlier, else it downloads Debian's
//!    source package of the installed `qemu-user` with `apt-get source
//!    --download-only` and extracts `include/qemu/qemu-plugin.h` from the
//!    `.orig.tar.xz`;
//! 3. compiles the plugin with `gcc -O2 -shared -fPIC`;
//! 4. caches `libtessera.so` under `<cache>/qemu-plugin/<key>/`, where the
//!    key joins the QEMU version and a hash of the plugin source and of the
//!    QEMU version line, so an upgraded QEMU or an edited plugin is rebuilt.
//!
//! The Rust core never links the plugin: it runs `gcc` and later passes the
//! path to QEMU, and reads only the bytes the plugin writes to a pipe.
//!
//! ## Choices
//! - **Fetching the header without touching the system's apt setup:**
//!   `apt-get source` needs `deb-src` entries, which a fresh Debian 12 lacks.
//!   Tessera writes a private sources list (the system's own Debian entries,
//!   for suites of this release, turned into `deb-src` with the same
//!   `signed-by` key) and runs `apt-get update` and `apt-get source` with
//!   `Dir::Etc::SourceList`, `Dir::State::Lists` and `Dir::Cache` pointing
//!   into a temporary directory in the cache. The downloaded index (~10 MB)
//!   and source (~24 MB) are verified by apt against Debian's signed release
//!   files and deleted afterwards; only the 30 KB header is kept.
//! - **Exact version:** the source version is the installed package's
//!   `${source:Version}` (dpkg-query), falling back to the version in
//!   `qemu-x86_64 --version` less a binNMU suffix (`+b3`). If apt no longer
//!   offers that exact version, any `qemu` source with the same upstream
//!   version is accepted (the plugin API is an upstream property).
//! - Everything is written atomically (temporary name, then rename), so two
//!   concurrent first uses cannot leave a half-written `.so` or header.
//! - Nothing is installed: a missing `qemu-x86_64`, `gcc`, `apt-get` or `tar`
//!   is an [`Error::Tool`] saying which Debian package provides it.
//!
//! ## Environment
//! `TESSERA_CACHE_DIR` (default `$XDG_CACHE_HOME/tessera`, else
//! `~/.cache/tessera`), `TESSERA_QEMU_PLUGIN_SRC` (directory holding
//! `tessera.c`), `TESSERA_QEMU_PLUGIN_HEADER` (a `qemu-plugin.h` to use).

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// Name of the plugin source file in the plugin directory.
pub const PLUGIN_SOURCE: &str = "tessera.c";
/// Name of the built plugin in the cache.
pub const PLUGIN_SO: &str = "libtessera.so";

/// Where the plugin source lives in a checkout of the repository (used when
/// no other location is given).
pub fn default_source_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../plugins/qemu-tessera")
}

/// Tessera's cache directory.
pub fn cache_dir() -> PathBuf {
    if let Some(d) = std::env::var_os("TESSERA_CACHE_DIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    if let Some(d) = std::env::var_os("XDG_CACHE_HOME").filter(|d| !d.is_empty()) {
        return PathBuf::from(d).join("tessera");
    }
    match std::env::var_os("HOME").filter(|d| !d.is_empty()) {
        Some(h) => PathBuf::from(h).join(".cache").join("tessera"),
        None => std::env::temp_dir().join("tessera-cache"),
    }
}

/// How to build the plugin. `Default` finds everything on `PATH` and in the
/// environment variables above.
#[derive(Clone, Debug, Default)]
pub struct PluginBuild {
    /// The QEMU user-mode binary (default `qemu-x86_64`).
    pub qemu: Option<PathBuf>,
    /// The C compiler (default `gcc`).
    pub gcc: Option<PathBuf>,
    /// Directory holding `tessera.c`.
    pub source_dir: Option<PathBuf>,
    /// Cache directory (default [`cache_dir`]).
    pub cache_dir: Option<PathBuf>,
    /// A `qemu-plugin.h` to compile against instead of Debian's.
    pub header: Option<PathBuf>,
}

/// Find an executable: a path with a `/` is taken as is, a bare name is
/// looked up on `PATH`.
pub fn which(name: &OsStr) -> Option<PathBuf> {
    let p = Path::new(name);
    if p.components().count() > 1 {
        return is_executable(p).then(|| p.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(name))
        .find(|c| is_executable(c))
}

fn is_executable(p: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .map(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
            .unwrap_or(false)
    }
    #[cfg(not(unix))]
    {
        p.is_file()
    }
}

/// Find a tool or say which Debian package installs it.
pub(crate) fn require(name: &OsStr, package: &str, what: &str) -> Result<PathBuf> {
    which(name).ok_or_else(|| {
        Error::tool(
            name.to_string_lossy(),
            format!(
                "not found on PATH; {what} needs it. Install it with \
                 `apt-get install {package}` (Debian/Ubuntu; Tessera never installs it for you)"
            ),
        )
    })
}

/// Run a command, returning its stdout; a failure quotes its stderr.
fn run(cmd: &mut Command, tool: &str) -> Result<String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::tool(tool, format!("could not run: {e}")))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail: Vec<&str> = err.lines().rev().take(12).collect();
        let tail: Vec<&str> = tail.into_iter().rev().collect();
        return Err(Error::tool(
            tool,
            format!("failed ({}):\n{}", out.status, tail.join("\n")),
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The first line of `qemu-x86_64 --version`, e.g.
/// `qemu-x86_64 version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)`.
pub fn qemu_version_line(qemu: &Path) -> Result<String> {
    let out = run(Command::new(qemu).arg("--version"), &qemu.display().to_string())?;
    Ok(out.lines().next().unwrap_or("").trim().to_string())
}

/// Upstream version (`7.2.22`) and Debian version (`1:7.2+dfsg-7+deb12u18+b3`)
/// from a `--version` line.
fn parse_version_line(line: &str) -> Option<(String, Option<String>)> {
    let mut words = line.split_whitespace();
    words.find(|w| *w == "version")?;
    let upstream = words.next()?.to_string();
    let debian = line
        .split("(Debian ")
        .nth(1)
        .and_then(|r| r.split(')').next())
        .map(|s| s.trim().to_string());
    Some((upstream, debian))
}

/// `7.2.22` → `7.2`: the plugin API changes only with minor releases, and
/// Debian's source tarball is named by the upstream release it packages.
fn major_minor(v: &str) -> String {
    v.split('.').take(2).collect::<Vec<_>>().join(".")
}

fn sanitize(s: &str) -> String {
    s.chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '.' { c } else { '_' })
        .collect()
}

/// Write `bytes` to `dest` atomically (temporary file in the same directory,
/// then rename).
fn write_atomic(dest: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = dest.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io(tmp.display().to_string(), e))?;
    std::fs::rename(&tmp, dest).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(dest.display().to_string(), e)
    })
}

fn mkdirs(p: &Path) -> Result<()> {
    std::fs::create_dir_all(p).map_err(|e| Error::io(p.display().to_string(), e))
}

/// Return the path of a built plugin for the installed QEMU, building it (and
/// fetching the header) first if the cache has none. `status` receives one
/// line per slow step, for the front end to show.
pub fn ensure_plugin(b: &PluginBuild, status: &mut dyn FnMut(&str)) -> Result<PathBuf> {
    let qemu_name = b.qemu.clone().unwrap_or_else(|| "qemu-x86_64".into());
    let qemu = require(qemu_name.as_os_str(), "qemu-user", "recording with --backend qemu")?;
    let line = qemu_version_line(&qemu)?;
    let (upstream, debian) = parse_version_line(&line).ok_or_else(|| {
        Error::tool(
            qemu.display().to_string(),
            format!("cannot read its version from `{line}`"),
        )
    })?;

    let src_dir = b
        .source_dir
        .clone()
        .or_else(|| std::env::var_os("TESSERA_QEMU_PLUGIN_SRC").map(PathBuf::from))
        .unwrap_or_else(default_source_dir);
    let src_path = src_dir.join(PLUGIN_SOURCE);
    let src = std::fs::read(&src_path).map_err(|e| {
        Error::io(
            src_path.display().to_string(),
            std::io::Error::new(
                e.kind(),
                format!("{e} (the plugin source; set TESSERA_QEMU_PLUGIN_SRC to its directory)"),
            ),
        )
    })?;
    let header_override = b
        .header
        .clone()
        .or_else(|| std::env::var_os("TESSERA_QEMU_PLUGIN_HEADER").map(PathBuf::from));

    let cache = b.cache_dir.clone().unwrap_or_else(cache_dir);
    let mut key_input = src.clone();
    key_input.extend_from_slice(line.as_bytes());
    if let Some(h) = &header_override {
        key_input.extend_from_slice(h.as_os_str().as_encoded_bytes());
    }
    let key = format!(
        "{}-{:016x}",
        sanitize(&upstream),
        xxhash_rust::xxh3::xxh3_64(&key_input)
    );
    let plugin_dir = cache.join("qemu-plugin").join(&key);
    let plugin = plugin_dir.join(PLUGIN_SO);
    if plugin.is_file() {
        return Ok(plugin);
    }

    let gcc_name = b.gcc.clone().unwrap_or_else(|| "gcc".into());
    let gcc = require(gcc_name.as_os_str(), "gcc", "building Tessera's QEMU plugin")?;
    let header = match header_override {
        Some(h) => h,
        None => {
            let dir = cache.join("qemu-src").join(sanitize(&major_minor(&upstream)));
            let h = dir.join("qemu-plugin.h");
            if !h.is_file() {
                fetch_header(&dir, &h, &upstream, debian.as_deref(), status)?;
            }
            h
        }
    };
    let inc = header.parent().unwrap_or(Path::new(".")).to_path_buf();
    status(&format!("building Tessera's QEMU plugin for QEMU {upstream}"));
    mkdirs(&plugin_dir)?;
    let tmp = plugin_dir.join(format!("{PLUGIN_SO}.tmp-{}", std::process::id()));
    let built = run(
        Command::new(&gcc)
            .args(["-O2", "-g", "-shared", "-fPIC", "-Wall", "-std=gnu11"])
            .arg(format!("-I{}", inc.display()))
            .arg("-o")
            .arg(&tmp)
            .arg(&src_path)
            .arg("-lpthread"),
        &gcc.display().to_string(),
    );
    if let Err(e) = built {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    std::fs::rename(&tmp, &plugin).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        Error::io(plugin.display().to_string(), e)
    })?;
    Ok(plugin)
}

/// Debian release codename (`bookworm`) from /etc/os-release.
fn codename() -> Option<String> {
    let text = std::fs::read_to_string("/etc/os-release").ok()?;
    text.lines()
        .find_map(|l| l.strip_prefix("VERSION_CODENAME="))
        .map(|v| v.trim_matches('"').to_string())
        .filter(|v| !v.is_empty())
}

/// The system's `deb` entries for this release, as `deb-src` lines.
fn deb_src_lines(codename: &str) -> Vec<String> {
    let mut entries: Vec<(String, String, String, Option<String>)> = Vec::new();
    let ours = |suite: &str| suite == codename || suite.starts_with(&format!("{codename}-"));
    let mut files = vec![PathBuf::from("/etc/apt/sources.list")];
    if let Ok(rd) = std::fs::read_dir("/etc/apt/sources.list.d") {
        let mut v: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
        v.sort();
        files.extend(v);
    }
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else { continue };
        let ext = f.extension().and_then(|e| e.to_str()).unwrap_or("");
        if ext == "sources" {
            // deb822 stanzas separated by blank lines.
            for stanza in text.split("\n\n") {
                let mut types = "";
                let (mut uris, mut suites, mut comps, mut key) = ("", "", "", None);
                let mut enabled = true;
                for l in stanza.lines() {
                    let Some((k, v)) = l.split_once(':') else { continue };
                    let v = v.trim();
                    match k.trim().to_ascii_lowercase().as_str() {
                        "types" => types = v,
                        "uris" => uris = v,
                        "suites" => suites = v,
                        "components" => comps = v,
                        "signed-by" => key = Some(v.to_string()),
                        "enabled" => enabled = v != "no",
                        _ => {}
                    }
                }
                if !enabled || !types.split_whitespace().any(|t| t == "deb") {
                    continue;
                }
                for u in uris.split_whitespace() {
                    for s in suites.split_whitespace().filter(|s| ours(s)) {
                        entries.push((u.into(), s.into(), comps.into(), key.clone()));
                    }
                }
            }
        } else if f.file_name().is_some_and(|n| n == "sources.list") || ext == "list" {
            for l in text.lines() {
                let l = l.split('#').next().unwrap_or("").trim();
                let Some(rest) = l.strip_prefix("deb ") else { continue };
                let mut rest = rest.trim();
                let mut key = None;
                if rest.starts_with('[') {
                    let Some(end) = rest.find(']') else { continue };
                    for opt in rest[1..end].split_whitespace() {
                        if let Some(k) = opt.strip_prefix("signed-by=") {
                            key = Some(k.to_string());
                        }
                    }
                    rest = rest[end + 1..].trim();
                }
                let mut w = rest.split_whitespace();
                let (Some(u), Some(s)) = (w.next(), w.next()) else { continue };
                if ours(s) {
                    let comps: Vec<&str> = w.collect();
                    entries.push((u.into(), s.into(), comps.join(" "), key));
                }
            }
        }
    }
    entries
        .into_iter()
        .map(|(u, s, c, k)| match k {
            // deb822 allows an inline key block; only a file path fits a one-line entry.
            Some(k) if k.starts_with('/') => format!("deb-src [signed-by={k}] {u} {s} {c}"),
            _ => format!("deb-src {u} {s} {c}"),
        })
        .collect()
}

/// Download Debian's qemu source package with a private apt configuration
/// and extract `qemu-plugin.h` into `dest`.
fn fetch_header(
    dir: &Path,
    dest: &Path,
    upstream: &str,
    debian_from_qemu: Option<&str>,
    status: &mut dyn FnMut(&str),
) -> Result<()> {
    let apt = require(OsStr::new("apt-get"), "apt", "fetching qemu-plugin.h from Debian")?;
    let tar = require(OsStr::new("tar"), "tar xz-utils", "extracting qemu-plugin.h")?;
    let code = codename().ok_or_else(|| {
        Error::tool(
            "apt-get",
            "cannot tell the Debian release (no VERSION_CODENAME in /etc/os-release); \
             pass a qemu-plugin.h with TESSERA_QEMU_PLUGIN_HEADER",
        )
    })?;
    let lines = deb_src_lines(&code);
    if lines.is_empty() {
        return Err(Error::tool(
            "apt-get",
            format!(
                "no Debian package sources for `{code}` in /etc/apt; \
                 pass a qemu-plugin.h with TESSERA_QEMU_PLUGIN_HEADER"
            ),
        ));
    }
    // Exact source version of the installed package, else from --version.
    let version = Command::new("dpkg-query")
        .args(["-W", "-f=${source:Version}", "qemu-user"])
        .stderr(Stdio::null())
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .filter(|v| !v.is_empty())
        .or_else(|| {
            debian_from_qemu.map(|d| match d.rfind("+b") {
                Some(i) if d[i + 2..].chars().all(|c| c.is_ascii_digit()) => d[..i].to_string(),
                _ => d.to_string(),
            })
        });

    mkdirs(dir)?;
    let work = dir.join(format!("tmp-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&work);
    let result = (|| -> Result<()> {
        for sub in ["lists/partial", "cache/archives/partial", "parts", "src"] {
            mkdirs(&work.join(sub))?;
        }
        let list = work.join("sources.list");
        write_atomic(&list, (lines.join("\n") + "\n").as_bytes())?;
        let mut opts = vec![
            format!("-oDir::Etc::SourceList={}", list.display()),
            format!("-oDir::Etc::SourceParts={}", work.join("parts").display()),
            format!("-oDir::State::Lists={}", work.join("lists").display()),
            format!("-oDir::Cache={}", work.join("cache").display()),
        ];
        #[cfg(unix)]
        if unsafe { libc::geteuid() } == 0 {
            // apt drops to `_apt` for downloads, which cannot write into a
            // user's cache directory.
            opts.push("-oAPT::Sandbox::User=root".into());
        }
        status(&format!(
            "fetching qemu-plugin.h: apt-get update of Debian's source index for {code} (~10 MB, once)"
        ));
        run(Command::new(&apt).arg("-q").args(&opts).arg("update"), "apt-get update")?;
        let want = format!("qemu{}", version.as_ref().map(|v| format!("={v}")).unwrap_or_default());
        status(&format!(
            "fetching qemu-plugin.h: apt-get source --download-only {want} (~24 MB, once)"
        ));
        let src = work.join("src");
        let exact = run(
            Command::new(&apt)
                .current_dir(&src)
                .arg("-q")
                .args(&opts)
                .args(["source", "--download-only", &want]),
            "apt-get source",
        );
        if exact.is_err() && version.is_some() {
            // That exact version is gone from the archive: any qemu source of
            // the same upstream release has the same plugin API.
            run(
                Command::new(&apt)
                    .current_dir(&src)
                    .arg("-q")
                    .args(&opts)
                    .args(["source", "--download-only", "qemu"]),
                "apt-get source",
            )?;
        } else {
            exact?;
        }
        let orig = std::fs::read_dir(&src)
            .map_err(|e| Error::io(src.display().to_string(), e))?
            .filter_map(|e| e.ok().map(|e| e.path()))
            .find(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with("qemu_") && n.contains(".orig.tar."))
            })
            .ok_or_else(|| Error::tool("apt-get source", "downloaded no qemu_*.orig.tar.* file"))?;
        let orig_name = orig.file_name().unwrap_or_default().to_string_lossy().into_owned();
        let mm = major_minor(upstream);
        if !orig_name.starts_with(&format!("qemu_{mm}")) {
            return Err(Error::tool(
                "apt-get source",
                format!(
                    "Debian offers {orig_name}, but the installed QEMU is {upstream}; \
                     pass a matching qemu-plugin.h with TESSERA_QEMU_PLUGIN_HEADER"
                ),
            ));
        }
        let header = run(
            Command::new(&tar)
                .arg("-xf")
                .arg(&orig)
                .args(["-O", "--wildcards", "*/include/qemu/qemu-plugin.h"]),
            "tar",
        )?;
        if !header.contains("QEMU_PLUGIN_VERSION") {
            return Err(Error::tool(
                "tar",
                format!("no include/qemu/qemu-plugin.h in {orig_name}"),
            ));
        }
        write_atomic(dest, header.as_bytes())
    })();
    let _ = std::fs::remove_dir_all(&work);
    result
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_line_gives_upstream_and_debian_versions() {
        let (u, d) =
            parse_version_line("qemu-x86_64 version 7.2.22 (Debian 1:7.2+dfsg-7+deb12u18+b3)")
                .unwrap();
        assert_eq!(u, "7.2.22");
        assert_eq!(d.as_deref(), Some("1:7.2+dfsg-7+deb12u18+b3"));
        assert_eq!(major_minor(&u), "7.2");
        let (u, d) = parse_version_line("qemu-x86_64 version 8.1.0").unwrap();
        assert_eq!((u.as_str(), d), ("8.1.0", None));
        assert!(parse_version_line("nonsense").is_none());
    }

    #[test]
    fn missing_tool_says_how_to_install_it() {
        let e = require(OsStr::new("tessera-no-such-tool"), "valgrind", "recording").unwrap_err();
        let s = e.to_string();
        assert!(s.contains("apt-get install valgrind"), "{s}");
        assert!(s.contains("tessera-no-such-tool"), "{s}");
    }
}
