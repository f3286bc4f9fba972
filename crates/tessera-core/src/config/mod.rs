//! Configuration: TOML machine descriptions, presets, overrides, and strict
//! resolution into a validated [`Spec`].
//!
//! ```text
//! preset / file / text ──► toml::Table ──(inherit, --set overrides)──► Spec (serde, deny_unknown_fields)
//!                                                                      │ resolve(): geometry, contradictions,
//!                                                                      ▼ mechanism sections via the registry
//!                                                                    Spec (valid; written back with every result)
//! ```
//! Every error names the dotted key path and, where there is a closed set, the
//! allowed values. A file may start from a preset with `inherit = "<preset>"`
//! and override any subset of keys.

pub mod spec;

use std::path::PathBuf;

pub use spec::Spec;

use crate::addr::PageSize;
use crate::error::{Error, Result};
use crate::registry::{AnyAllocator, AnyFormat, AnyPageSizePolicy, AnyPrefetcher, AnyReplacement, AnyTlbOrganisation, MechanismSpec};
use spec::{Side, Ways};

/// A machine description shipped with Tessera.
#[derive(Debug)]
pub struct Preset {
    pub name: &'static str,
    pub summary: &'static str,
    pub toml: &'static str,
}

static PRESETS: &[Preset] = &[
    Preset {
        name: "sandy_bridge",
        summary: "Xeon E3-1230 (Sandy Bridge) of the scale-out MMU study, Table I",
        toml: include_str!("presets/sandy_bridge.toml"),
    },
    Preset {
        name: "gtsm_ptlsim",
        summary: "PTLsim machine of the GTSM superpage paper, Table 4 (MMU caches, walks enter at L2)",
        toml: include_str!("presets/gtsm_ptlsim.toml"),
    },
    Preset {
        name: "mosaic_gem5",
        summary: "gem5 machine of the Mosaic Pages paper, Table 1a (1024-entry unified TLBs)",
        toml: include_str!("presets/mosaic_gem5.toml"),
    },
    Preset {
        name: "mosaic_gpu",
        summary: "GPU of the Mosaic paper, Table 1 (30 SMs, GPU-MMU with 4 KiB pages, demand paging)",
        toml: include_str!("presets/mosaic_gpu.toml"),
    },
    Preset {
        name: "mosaic_gpu_mosaic",
        summary: "the Mosaic paper's GPU with Mosaic's memory manager (CoCoA, in-place coalescing) instead of GPU-MMU",
        toml: include_str!("presets/mosaic_gpu_mosaic.toml"),
    },
    Preset {
        name: "mosaic_gpu_64k",
        summary: "the Mosaic paper's GPU under GPU-MMU with 64 KiB base pages (beyond the paper)",
        toml: include_str!("presets/mosaic_gpu_64k.toml"),
    },
    Preset {
        name: "mosaic_gpu_mosaic_64k",
        summary: "the Mosaic paper's GPU with Mosaic over 64 KiB base pages (32 coalesce into 2 MiB; beyond the paper)",
        toml: include_str!("presets/mosaic_gpu_mosaic_64k.toml"),
    },
    Preset {
        name: "uvm_gpu",
        summary: "GPU of the batch-aware unified memory paper, Table 1 (16 SMs, 64 KiB pages, far faults over PCIe)",
        toml: include_str!("presets/uvm_gpu.toml"),
    },
    Preset {
        name: "tlb_only",
        summary: "two data-TLB levels, walks counted but not timed, no caches (the fast TLB-only model)",
        toml: include_str!("presets/tlb_only.toml"),
    },
];

pub fn presets() -> &'static [Preset] {
    PRESETS
}

pub fn preset_names() -> Vec<&'static str> {
    PRESETS.iter().map(|p| p.name).collect()
}

/// Where a configuration comes from.
#[derive(Clone, Debug)]
pub enum ConfigSource {
    Preset(String),
    File(PathBuf),
    Text(String),
}

/// Load, apply overrides, and resolve a machine description.
pub fn load(source: &ConfigSource, overrides: &[String]) -> Result<Spec> {
    let mut table = load_table(source, 0)?;
    for o in overrides {
        apply_override(&mut table, o)?;
    }
    resolve(table)
}

fn parse_toml(text: &str, origin: &str) -> Result<toml::Table> {
    text.parse::<toml::Table>().map_err(|e| {
        let at = e.span().map(|span| {
            let (line, column) = line_column(text, span.start);
            format!(" at line {line}, column {column}")
        });
        // toml's message may run over lines ("invalid table header\nexpected `.`, `]`"): one line reads better.
        let msg = e.message().trim_end().replace('\n', "; ");
        Error::config(origin, format!("invalid TOML{}: {msg}", at.unwrap_or_default()))
    })
}

/// 1-based line and column (in characters) of byte `offset` of `text`.
fn line_column(text: &str, offset: usize) -> (usize, usize) {
    let mut end = offset.min(text.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let before = &text[..end];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

fn load_table(source: &ConfigSource, depth: u32) -> Result<toml::Table> {
    if depth > 8 {
        return Err(Error::config("inherit", "inheritance chain deeper than 8 (a cycle?)"));
    }
    let table = match source {
        ConfigSource::Preset(name) => {
            let p = PRESETS.iter().find(|p| p.name == name).ok_or_else(|| Error::Config {
                path: "preset".into(),
                msg: format!("unknown preset \"{name}\""),
                allowed: preset_names().iter().map(|s| s.to_string()).collect(),
            })?;
            parse_toml(p.toml, &format!("preset {name}"))?
        }
        ConfigSource::File(path) => {
            // A machine file that cannot be read is a config mistake (exit 2), named by its path.
            let text = std::fs::read_to_string(path).map_err(|e| {
                let why = match e.kind() {
                    std::io::ErrorKind::NotFound => "no such machine file".to_string(),
                    std::io::ErrorKind::IsADirectory => "is a directory, not a machine file".to_string(),
                    std::io::ErrorKind::InvalidData => "not a text file (invalid UTF-8)".to_string(),
                    _ => format!("cannot read the machine file: {e}"),
                };
                Error::config(path.display().to_string(), why)
            })?;
            parse_toml(&text, &path.display().to_string())?
        }
        ConfigSource::Text(text) => parse_toml(text, "config")?,
    };
    let mut table = table;
    match table.remove("inherit") {
        None => Ok(table),
        Some(toml::Value::String(base)) => {
            // A derived machine is not its parent: results must not carry the
            // preset's words for it. Without its own, a file is named after
            // itself and described as based on the preset.
            if !table.contains_key("description") {
                table.insert("description".into(), toml::Value::String(format!("based on preset {base}")));
            }
            if let (ConfigSource::File(path), false) = (source, table.contains_key("name")) {
                if let Some(stem) = path.file_stem() {
                    table.insert("name".into(), toml::Value::String(stem.to_string_lossy().into_owned()));
                }
            }
            let mut merged = load_table(&ConfigSource::Preset(base), depth + 1)?;
            merge(&mut merged, table);
            Ok(merged)
        }
        Some(_) => Err(Error::config_allowed("inherit", "must be a preset name", &preset_names())),
    }
}

/// Deep-merge `over` into `base` (tables merge key by key; anything else replaces).
fn merge(base: &mut toml::Table, over: toml::Table) {
    for (k, v) in over {
        match (base.get_mut(&k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
}

/// Apply one `dotted.key=value` override. The value is parsed as TOML; if that
/// fails it is taken as a string (so `--set physmem.page_size=thp` works).
pub fn apply_override(table: &mut toml::Table, assignment: &str) -> Result<()> {
    let (key, raw) = assignment
        .split_once('=')
        .ok_or_else(|| Error::config(assignment, "override must look like dotted.key=value"))?;
    let key = key.trim();
    let raw = raw.trim();
    if key.is_empty() || key.split('.').any(|p| p.is_empty()) {
        return Err(Error::config(key, "override key must be a dotted path like mmu.tlb.l2_tlb.entries"));
    }
    let value = match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").unwrap_or(toml::Value::String(raw.to_string())),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let parts: Vec<&str> = key.split('.').collect();
    let mut cur = table;
    for (i, part) in parts[..parts.len() - 1].iter().enumerate() {
        if let Some(kind) = structure_collection(&parts[..i]) {
            if !cur.contains_key(*part) {
                let known: Vec<&str> = cur.iter().filter(|(_, v)| v.is_table()).map(|(k, _)| k.as_str()).collect();
                return Err(no_such_structure(&parts[..=i], kind, &known));
            }
        }
        let entry = cur.entry(part.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new()));
        // Setting a sub-key of a mechanism given by name (`replacement = "lru"`) turns it into a table.
        if let toml::Value::String(name) = entry {
            let mut t = toml::Table::new();
            t.insert("kind".into(), toml::Value::String(name.clone()));
            *entry = toml::Value::Table(t);
        }
        cur = match entry {
            toml::Value::Table(t) => t,
            _ => {
                return Err(Error::config(
                    parts[..=i].join("."),
                    "is a value, not a section; cannot set a key inside it",
                ))
            }
        };
    }
    let last = parts[parts.len() - 1];
    // Overriding a mechanism's `kind` drops the old mechanism's parameters.
    // `timing.kind` picks a timing model, not a mechanism: the clock, CPI
    // and a preset's `[timing.ooo]` core stay.
    if last == "kind" && parts[..parts.len() - 1] != ["timing"] {
        cur.retain(|k, _| k == "kind");
    }
    if let (Some(toml::Value::Table(_)), toml::Value::String(name)) = (cur.get(last), &value) {
        // `--set physmem.page_size=thp` replaces a mechanism section by name.
        let mut t = toml::Table::new();
        t.insert("kind".into(), toml::Value::String(name.clone()));
        cur.insert(last.to_string(), toml::Value::Table(t));
        return Ok(());
    }
    cur.insert(last.to_string(), value);
    Ok(())
}

/// The tables whose keys name structures of the machine (TLBs, PSCs, cache
/// levels), and what such a structure is called. An override may set a key
/// inside an existing structure, or give a whole new structure as an inline
/// table (`mmu.tlb.l3={level = 3, ...}`); it may not create one by setting a
/// key inside a name that does not exist, which is how a typo (`l2tlb` for
/// `l2_tlb`) would otherwise make a new, incomplete structure.
fn structure_collection(path: &[&str]) -> Option<&'static str> {
    match path {
        ["mmu", "tlb"] => Some("TLB structure"),
        ["mmu", "psc"] => Some("paging-structure cache"),
        ["mmu", "shadow"] => Some("shadow TLB structure"),
        ["cache"] => Some("cache level"),
        _ => None,
    }
}

fn no_such_structure(path: &[&str], kind: &str, known: &[&str]) -> Error {
    let name = path[path.len() - 1];
    let parent = path[..path.len() - 1].join(".");
    let close: Vec<&str> = known.iter().copied().filter(|k| strsim::normalized_damerau_levenshtein(k, name) >= 0.6).collect();
    let mut msg = format!("no {kind} `{name}` in this machine; known: {}", if known.is_empty() { "none".to_string() } else { known.join(", ") });
    if let Some(best) = close.iter().max_by(|a, b| {
        strsim::normalized_damerau_levenshtein(a, name).total_cmp(&strsim::normalized_damerau_levenshtein(b, name))
    }) {
        msg.push_str(&format!(" (did you mean `{best}`?)"));
    }
    msg.push_str(&format!(". To add a new {kind}, give it whole: --set '{parent}.{name}={{ ... }}'"));
    Error::config(path.join("."), msg)
}

/// Deserialise `value` as `T`, reporting the dotted key path (under `path`) on error.
pub fn deserialize_at<T: serde::de::DeserializeOwned>(value: toml::Value, path: &str) -> Result<T> {
    let r: std::result::Result<T, serde_path_to_error::Error<toml::de::Error>> = serde_path_to_error::deserialize(value);
    r.map_err(|e| {
        let inner = e.path().to_string();
        let inner = if inner == "." { String::new() } else { inner };
        let full = match (path.is_empty(), inner.is_empty()) {
            (_, true) => path.to_string(),
            (true, false) => inner,
            (false, false) => format!("{path}.{inner}"),
        };
        let msg = spec::plain_type_message(e.into_inner().message());
        Error::config(if full.is_empty() { "<root>".to_string() } else { full }, msg)
    })
}

fn is_pow2(x: u64) -> bool {
    x != 0 && x & (x - 1) == 0
}

/// Check a `entries × ways` geometry of at most `max` entries; returns (sets, ways).
fn geometry(path: &str, entries: u32, ways: Ways, max: u32) -> Result<(u32, u32)> {
    if !(1..=max).contains(&entries) {
        return Err(Error::config(format!("{path}.entries"), spec::whole_range_message(1, max as u64, &entries.to_string())));
    }
    let w = ways.resolve(entries);
    if w == 0 {
        return Err(Error::config(format!("{path}.ways"), "must be at least 1"));
    }
    if !entries.is_multiple_of(w) {
        return Err(Error::config(
            format!("{path}.ways"),
            format!("{entries} entries are not divisible by {w} ways"),
        ));
    }
    let sets = entries / w;
    if !is_pow2(sets as u64) {
        return Err(Error::config(
            format!("{path}.entries"),
            format!("{entries} entries / {w} ways = {sets} sets, which is not a power of two"),
        ));
    }
    Ok((sets, w))
}

fn resolve_mech(
    m: &mut MechanismSpec,
    path: &str,
    f: fn(&toml::Value, &str) -> Result<MechanismSpec>,
) -> Result<()> {
    let mut t = m.params.clone();
    t.insert("kind".into(), toml::Value::String(m.kind.clone()));
    *m = f(&toml::Value::Table(t), path)?;
    Ok(())
}

/// Largest physical memory under memory pressure: eviction policies keep
/// list links per frame (1 TiB is 2.3 GiB of host memory).
pub const MAX_EVICTION_CAPACITY: u64 = 1 << 40;

pub const PSC_NAMES: [&str; 4] = ["pml5e", "pml4e", "pdpte", "pde"];
pub const ENTRY_LEVELS: [&str; 4] = ["l1d", "l2", "llc", "dram"];

/// Strict resolution: deserialise, then check geometry and contradictions.
pub fn resolve(table: toml::Table) -> Result<Spec> {
    let mut spec: Spec = deserialize_at(toml::Value::Table(table), "")?;

    // Machine kind.
    let kinds = crate::machine::KINDS.map(|k| k.0);
    if !kinds.contains(&spec.machine.kind.as_str()) {
        return Err(Error::config_allowed("machine.kind", format!("unknown machine \"{}\"", spec.machine.kind), &kinds));
    }

    // OS under memory pressure.
    match (&mut spec.os.eviction, &spec.os.swap) {
        (Some(_), None) => {
            return Err(Error::config(
                "os.eviction",
                "eviction needs a swap device to write pages to: add os.swap = { capacity = \"4GiB\" }",
            ))
        }
        (None, Some(_)) => spec.os.eviction = Some(MechanismSpec { kind: "lru".into(), params: toml::Table::new() }),
        _ => {}
    }
    if let Some(e) = &mut spec.os.eviction {
        resolve_mech(e, "os.eviction", crate::registry::AnyEviction::resolve)?;
    }
    if let Some(s) = &spec.os.swap {
        s.validate()?;
    }

    // Page table.
    resolve_mech(&mut spec.pagetable.format, "pagetable.format", AnyFormat::resolve)?;
    let format_sizes = {
        use crate::pagetable::format::PageTableFormat;
        let ctx = crate::pagetable::x86_radix::FormatCtx { levels: spec.pagetable.levels, ..Default::default() };
        let format = AnyFormat::build(&spec.pagetable.format, &ctx, "pagetable.format")?;
        spec.pagetable.levels = Some(format.levels());
        format.sizes().to_vec()
    };

    // Physical memory and its mechanisms.
    let cap = spec.physmem.capacity.0;
    // Checked here, before the cache levels whose tags depend on it.
    if !cap.is_multiple_of(4096) || !((2 << 20)..=crate::physmem::MAX_CAPACITY).contains(&cap) {
        return Err(Error::config(
            "physmem.capacity",
            format!("must be a multiple of 4 KiB from 2 MiB to 4 TiB, not {}", spec::ByteSize(cap).human_exact()),
        ));
    }
    if spec.os.eviction.is_some() && cap > MAX_EVICTION_CAPACITY {
        return Err(Error::config(
            "physmem.capacity",
            format!(
                "with os.eviction (a swap device), at most 1 TiB, not {}: eviction keeps 9 bytes of host memory per 4 KiB frame",
                spec::ByteSize(cap).human_exact()
            ),
        ));
    }
    if !(0.0..=1.0).contains(&spec.physmem.fragmentation) {
        return Err(Error::config("physmem.fragmentation", "must be a fraction between 0 and 1"));
    }
    resolve_mech(&mut spec.physmem.allocator, "physmem.allocator", AnyAllocator::resolve)?;
    resolve_mech(&mut spec.physmem.page_size, "physmem.page_size", AnyPageSizePolicy::resolve)?;
    resolve_mech(&mut spec.physmem.retired, "physmem.retired", crate::registry::AnyRetirement::resolve)?;
    // Building a source checks what does not depend on the seed (a fault
    // map file's lines against capacity), so the error shows before a run.
    crate::registry::AnyRetirement::build(
        &spec.physmem.retired,
        &crate::physmem::retired::RetireCtx { capacity_frames: cap / 4096, seed: 0 },
        "physmem.retired",
    )?;
    if spec.pagetable.format.kind == "gt_pde" && spec.physmem.page_size.kind == "thp" {
        return Err(Error::config_allowed(
            "physmem.page_size",
            "pagetable.format = \"gt_pde\" maps superpages with GT-PDEs; a process uses 2 MB PDEs (thp) or GT-PDEs, never both",
            &["gtsm", "base_only"],
        ));
    }
    if spec.pagetable.format.kind == "mosaic_toc" {
        // A ToC holds CPFNs: every page must be a 4 KiB page placed by the Iceberg hash.
        if spec.physmem.allocator.kind != "iceberg" {
            return Err(Error::config_allowed(
                "physmem.allocator",
                format!(
                    "pagetable.format = \"mosaic_toc\" stores 7-bit CPFNs, which only the Iceberg allocator's placements have; {:?} cannot back it",
                    spec.physmem.allocator.kind
                ),
                &["iceberg"],
            ));
        }
        if spec.physmem.page_size.kind != "base_only" {
            return Err(Error::config_allowed(
                "physmem.page_size",
                format!(
                    "pagetable.format = \"mosaic_toc\" maps 4 KiB pages only (a ToC has one CPFN per 4 KiB page); {:?} maps larger pages",
                    spec.physmem.page_size.kind
                ),
                &["base_only"],
            ));
        }
    }
    let policy = AnyPageSizePolicy::build(
        &spec.physmem.page_size,
        &crate::page_size::PolicyCtx { sizes: format_sizes },
        "physmem.page_size",
    )?;
    let plans = crate::page_size::PageSizePolicy::plans(&policy);
    let produced: Vec<PageSize> =
        plans.iter().filter_map(|p| if let crate::page_size::Plan::Contiguous(s) = p { Some(*s) } else { None }).collect();
    if plans.iter().any(|p| matches!(p, crate::page_size::Plan::Slice { .. })) {
        check_slices(&spec)?;
    }
    if spec.os.compaction.is_some() {
        check_compaction(&spec, &produced)?;
    }

    // The GPU machine has its own TLBs, caches and timing under [gpu].
    match spec.machine.kind.as_str() {
        "gpu" => {
            check_gpu(&mut spec, &produced)?;
            return Ok(spec);
        }
        _ if spec.gpu.is_some() => {
            return Err(Error::config_allowed("gpu", "the [gpu] section configures a GPU machine; this one is a CPU", &["machine.kind = \"gpu\""]));
        }
        _ => {}
    }

    // TLB structures.
    if spec.mmu.tlb.is_empty() {
        return Err(Error::config("mmu.tlb", "a machine needs at least one TLB structure"));
    }
    let fill = spec.mmu.fill;
    let format_kind = spec.pagetable.format.kind.clone();
    for (name, t) in spec.mmu.tlb.iter_mut() {
        let path = format!("mmu.tlb.{name}");
        if t.page_sizes.is_empty() {
            return Err(Error::config_allowed(format!("{path}.page_sizes"), "must list at least one page size", &PageSize::NAMES));
        }
        let mut seen = t.page_sizes.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != t.page_sizes.len() {
            return Err(Error::config(format!("{path}.page_sizes"), "lists a page size twice"));
        }
        geometry(&path, t.entries, t.ways, spec::MAX_ENTRIES)?;
        resolve_mech(&mut t.replacement, &format!("{path}.replacement"), AnyReplacement::resolve)?;
        resolve_mech(&mut t.organisation, &format!("{path}.organisation"), AnyTlbOrganisation::resolve)?;
        check_gt_blocks(&format_kind, &path, &t.organisation)?;
        // What only a built organisation can check (page sizes it needs, fill policies it can serve).
        crate::tlb::build_organisation(name, t, fill, 0)?;
    }
    for side in [Side::Data, Side::Instr] {
        let mut levels: Vec<u32> = spec
            .mmu
            .tlb
            .values()
            .filter(|t| t.side == side || t.side == Side::Unified)
            .map(|t| t.level)
            .collect();
        levels.sort();
        levels.dedup();
        let side_name = if side == Side::Data { "data" } else { "instr" };
        if side == Side::Data && levels.is_empty() {
            return Err(Error::config_allowed("mmu.tlb", "no structure translates data accesses", &["side = \"data\"", "side = \"unified\""]));
        }
        for (i, l) in levels.iter().enumerate() {
            if *l != i as u32 + 1 {
                return Err(Error::config(
                    "mmu.tlb",
                    format!("{side_name}-side TLB levels must be 1, 2, ... without gaps; found {levels:?}"),
                ));
            }
        }
        if !levels.is_empty() {
            for ps in &produced {
                let held = spec
                    .mmu
                    .tlb
                    .values()
                    .any(|t| (t.side == side || t.side == Side::Unified) && t.page_sizes.contains(ps));
                if !held {
                    return Err(Error::config(
                        "physmem.page_size",
                        format!(
                            "the page-size policy can map {} pages but no {side_name}-side TLB structure holds them; add `{}` to some structure's page_sizes or lower the policy's max",
                            ps.name(),
                            ps.name()
                        ),
                    ));
                }
            }
        }
    }

    // Shadow structures: a TLB structure's geometry and mechanisms, seeing one side.
    if !spec.mmu.shadow.is_empty() && spec.mmu.tlb.contains_key("shadow") {
        return Err(Error::config(
            "mmu.tlb.shadow",
            "a TLB structure named `shadow` would report its stats among the shadow structures' (mmu.shadow.*); rename it",
        ));
    }
    let translates_instr = spec.mmu.tlb.values().any(|t| t.side != Side::Data);
    for (name, s) in spec.mmu.shadow.iter_mut() {
        let path = format!("mmu.shadow.{name}");
        if s.side != Side::Data && !translates_instr {
            return Err(Error::config_allowed(
                format!("{path}.side"),
                "this machine does not translate instruction fetches (it has no instruction-side TLB structure)",
                &["data"],
            ));
        }
        if s.page_sizes.is_empty() {
            s.page_sizes = PageSize::ALL.into_iter().filter(|p| *p == PageSize::Size4K || produced.contains(p)).collect();
        }
        let mut seen = s.page_sizes.clone();
        seen.sort();
        seen.dedup();
        if seen.len() != s.page_sizes.len() {
            return Err(Error::config(format!("{path}.page_sizes"), "lists a page size twice"));
        }
        if let Some(ps) = produced.iter().find(|p| !s.page_sizes.contains(p)) {
            return Err(Error::config(
                format!("{path}.page_sizes"),
                format!(
                    "the page-size policy can map {} pages, which this shadow structure would never hold; add `{}` (or leave page_sizes out: every size mapped)",
                    ps.name(),
                    ps.name()
                ),
            ));
        }
        geometry(&path, s.entries, s.ways, spec::MAX_ENTRIES)?;
        resolve_mech(&mut s.replacement, &format!("{path}.replacement"), AnyReplacement::resolve)?;
        resolve_mech(&mut s.organisation, &format!("{path}.organisation"), AnyTlbOrganisation::resolve)?;
        check_gt_blocks(&format_kind, &path, &s.organisation)?;
        crate::tlb::build_organisation_at(path, &s.as_tlb(), spec::FillPolicy::AllLevels, 0)?;
    }

    // Paging-structure caches.
    for (name, p) in spec.mmu.psc.iter_mut() {
        let path = format!("mmu.psc.{name}");
        if !PSC_NAMES.contains(&name.as_str()) {
            return Err(Error::config_allowed(path, "unknown paging-structure cache", &PSC_NAMES));
        }
        let level = 5 - PSC_NAMES.iter().position(|n| n == name).unwrap_or(0) as u32;
        if level > spec.pagetable.depth() {
            return Err(Error::config(
                path,
                format!("it caches level-{level} entries, and the page table has {} levels (pagetable.levels)", spec.pagetable.depth()),
            ));
        }
        geometry(&path, p.entries, p.ways, spec::MAX_ENTRIES)?;
        resolve_mech(&mut p.replacement, &format!("{path}.replacement"), AnyReplacement::resolve)?;
    }

    // Data caches.
    let mut line = None;
    let names: Vec<&'static str> = spec.cache.levels().iter().map(|l| l.0).collect();
    for name in names {
        let lvl = match name {
            "l1d" => spec.cache.l1d.as_mut(),
            "l2" => spec.cache.l2.as_mut(),
            _ => spec.cache.llc.as_mut(),
        }
        .expect("present level");
        let path = format!("cache.{name}");
        let l = lvl.line.0;
        if l < 8 || !is_pow2(l) {
            return Err(Error::config(format!("{path}.line"), format!("{l} bytes: must be a power of two of at least 8")));
        }
        if let Some(prev) = line {
            if prev != l {
                return Err(Error::config(format!("{path}.line"), format!("{l} bytes differs from the {prev}-byte line of the level above; all levels must share one line size")));
            }
        }
        line = Some(l);
        // Cache tags are 32-bit line numbers (half the host memory of 64-bit ones).
        if cap / l >= u32::MAX as u64 {
            return Err(Error::config(
                format!("{path}.line"),
                format!(
                    "{l}-byte lines over a {cap}-byte physmem.capacity give {} line numbers; cache tags hold fewer than 2^32: use longer lines or less physical memory",
                    cap / l
                ),
            ));
        }
        let size = lvl.size.0;
        let lines = size / l;
        if size == 0 || size % l != 0 || lines > u32::MAX as u64 {
            return Err(Error::config(format!("{path}.size"), format!("{size} bytes is not a whole number of {l}-byte lines")));
        }
        if lines > spec::MAX_CACHE_LINES as u64 {
            return Err(Error::config(
                format!("{path}.size"),
                format!(
                    "{} is {lines} lines of {l} bytes; a cache level holds at most {} lines ({} of {l}-byte lines)",
                    spec::ByteSize(size).human_exact(),
                    spec::MAX_CACHE_LINES,
                    spec::ByteSize(spec::MAX_CACHE_LINES as u64 * l).human()
                ),
            ));
        }
        geometry(&path, lines as u32, lvl.ways, spec::MAX_CACHE_LINES).map_err(|e| match e {
            Error::Config { path: p, msg, allowed } => Error::Config {
                path: p.replace(".entries", ".size"),
                msg: format!("{msg} ({size} bytes / {l}-byte lines)"),
                allowed,
            },
            other => other,
        })?;
        resolve_mech(&mut lvl.replacement, &format!("{path}.replacement"), AnyReplacement::resolve)?;
        resolve_mech(&mut lvl.prefetcher, &format!("{path}.prefetcher"), AnyPrefetcher::resolve)?;
    }
    let entry = spec.walker.entry_level.as_str();
    if !ENTRY_LEVELS.contains(&entry) {
        return Err(Error::config_allowed("walker.entry_level", format!("unknown level \"{entry}\""), &ENTRY_LEVELS));
    }
    if entry != "dram" && !spec.cache.levels().iter().any(|l| l.0 == entry) {
        let mut present: Vec<&str> = spec.cache.levels().iter().map(|l| l.0).collect();
        present.push("dram");
        return Err(Error::config_allowed("walker.entry_level", format!("cache level \"{entry}\" is not configured"), &present));
    }

    // Timing.
    if !(spec.timing.base_cpi > 0.0 && spec.timing.base_cpi.is_finite()) {
        return Err(Error::config("timing.base_cpi", "must be a positive number"));
    }
    if !(spec.timing.frequency_ghz > 0.0 && spec.timing.frequency_ghz.is_finite()) {
        return Err(Error::config("timing.frequency_ghz", "must be a positive number"));
    }
    check_timing_kind(&mut spec.timing)?;
    Ok(spec)
}

impl Spec {
    /// The resolved config as TOML (every default written out).
    pub fn to_toml(&self) -> String {
        toml::to_string(self).expect("a resolved spec always serialises")
    }
    pub fn to_json(&self) -> serde_json::Value {
        serde_json::to_value(self).expect("a resolved spec always serialises")
    }
    /// Stable 64-bit identity of the resolved config (for result stores).
    pub fn hash(&self) -> u64 {
        xxhash_rust::xxh3::xxh3_64(self.to_toml().as_bytes())
    }
}

#[cfg(test)]
mod tests;

/// Largest `timing.ooo.window` and `lsq`: the model keeps rings of them.
pub const MAX_OOO_WINDOW: u32 = 1 << 16;
/// Largest `timing.ooo.mshrs` and `walkers`: each booking scans the slots.
pub const MAX_OOO_SLOTS: u32 = 1024;

/// `timing.kind` and, for the ooo model, `[timing.ooo]`.
fn check_timing_kind(t: &mut spec::TimingSpec) -> Result<()> {
    let kinds = crate::timing::KINDS;
    if !kinds.contains(&t.kind.as_str()) {
        return Err(Error::config_allowed("timing.kind", format!("unknown timing model \"{}\"", t.kind), &kinds));
    }
    let o = &t.ooo;
    let counts = [
        ("timing.ooo.window", o.window, MAX_OOO_WINDOW),
        ("timing.ooo.dispatch_width", o.dispatch_width, MAX_OOO_WINDOW),
        ("timing.ooo.retire_width", o.retire_width, MAX_OOO_WINDOW),
        ("timing.ooo.lsq", o.lsq, MAX_OOO_WINDOW),
        ("timing.ooo.mshrs", o.mshrs, MAX_OOO_SLOTS),
        ("timing.ooo.walkers", o.walkers, MAX_OOO_SLOTS),
    ];
    for (key, v, max) in counts {
        if v == 0 || v > max {
            return Err(Error::config(key, format!("must be a whole number from 1 to {max}, not {v}")));
        }
    }
    for (key, width) in [("timing.ooo.dispatch_width", o.dispatch_width), ("timing.ooo.retire_width", o.retire_width)] {
        if o.window < width {
            return Err(Error::config(
                "timing.ooo.window",
                format!("a window of {} instructions is smaller than {key} = {width}: the window holds at least one cycle's instructions", o.window),
            ));
        }
    }
    if !(0.0..=1.0).contains(&o.dependency_fraction) {
        return Err(Error::config("timing.ooo.dependency_fraction", format!("must be a probability from 0 to 1, not {}", o.dependency_fraction)));
    }
    if !crate::timing::ooo::DEPENDENCIES.contains(&o.dependencies.as_str()) {
        return Err(Error::config_allowed(
            "timing.ooo.dependencies",
            format!("unknown source of dependencies \"{}\"", o.dependencies),
            &crate::timing::ooo::DEPENDENCIES,
        ));
    }
    // An interval run does not use the table (a preset may still set it for
    // `--set timing.kind=ooo`): the resolved spec holds the default, as its
    // written form leaves the table out.
    if t.kind == "interval" {
        t.ooo = spec::OooSpec::default();
    }
    Ok(())
}

/// What a page-size policy that maps superpages over slices (GTSM) needs:
/// the GT table, the buddy allocator (which keeps the slices), and no swap
/// device (a slice has no page-out path).
/// `os.compaction` needs 2 MiB pages to compact for, frames the buddy
/// allocator places, and no eviction moving pages at the same time.
/// A GPU machine's config: no CPU-only key, and `[gpu]` resolved and checked.
fn check_gpu(spec: &mut Spec, produced: &[PageSize]) -> Result<()> {
    let cpu_only: [(&str, bool, &str); 6] = [
        ("mmu.tlb", !spec.mmu.tlb.is_empty(), "the GPU's TLBs are gpu.l1_tlb and gpu.l2_tlb"),
        ("mmu.psc", !spec.mmu.psc.is_empty(), "the GPU's page-walk cache is gpu.walker.pwc"),
        ("mmu.shadow", !spec.mmu.shadow.is_empty(), "shadow TLBs watch a CPU's translations"),
        ("cache", !spec.cache.levels().is_empty() || spec.cache.dram_latency != spec::CacheSpec::default().dram_latency, "the GPU's caches and DRAM are gpu.l1d, gpu.l2 and gpu.dram"),
        ("timing", spec.timing != spec::TimingSpec::default(), "the GPU's timing is its event loop (gpu.clock_ghz sets its clock)"),
        ("walker", spec.walker != spec::WalkerSpec::default() && spec.walker.entry_level != "dram", "the GPU's walker is gpu.walker"),
    ];
    for (key, set, why) in cpu_only {
        if set {
            return Err(Error::config(key, format!("a CPU-only key on a GPU machine: {why}")));
        }
    }
    // Walk references are served by the GPU's own caches.
    spec.walker = spec::WalkerSpec { step_cycles: 0, entry_level: "dram".into() };
    let g = spec.gpu.get_or_insert_with(Default::default);
    resolve_mech(&mut g.paging, "gpu.paging", crate::registry::AnyFaultPath::resolve)?;
    let cap = spec.physmem.capacity.0;
    let mut levels: Vec<(&str, &mut spec::CacheLevelSpec)> = vec![("gpu.l1d", &mut g.l1d), ("gpu.l2", &mut g.l2)];
    if let Some(p) = g.walker.pwc.as_mut() {
        levels.push(("gpu.walker.pwc", p));
    }
    for (path, lvl) in levels {
        resolve_mech(&mut lvl.replacement, &format!("{path}.replacement"), AnyReplacement::resolve)?;
        resolve_mech(&mut lvl.prefetcher, &format!("{path}.prefetcher"), AnyPrefetcher::resolve)?;
        if lvl.line.0 >= 8 && cap / lvl.line.0 >= u32::MAX as u64 {
            return Err(Error::config(format!("{path}.line"), "too many line numbers for this physmem.capacity: use longer lines"));
        }
        crate::cache::CacheLevel::build(path, "check", lvl, 0)?;
    }
    g.validate()?;
    for (path, tlb) in [("gpu.l1_tlb", &g.l1_tlb), ("gpu.l2_tlb", &g.l2_tlb)] {
        // `gpu.l2_tlb.arrays = {}` removes the shared L2 TLB (misses go to the walker).
        if path == "gpu.l2_tlb" && tlb.arrays.is_empty() {
            continue;
        }
        if let Some(ps) = produced.iter().find(|p| !tlb.geometry(path).map(|a| a.iter().any(|x| x.0 == **p)).unwrap_or(true)) {
            return Err(Error::config(
                format!("{path}.arrays"),
                format!("the page-size policy maps {} pages, and this TLB has no array for them; add `{}`", ps.name(), ps.name()),
            ));
        }
    }
    Ok(())
}

fn check_compaction(spec: &Spec, produced: &[PageSize]) -> Result<()> {
    if !produced.contains(&PageSize::Size2M) {
        return Err(Error::config_allowed(
            "physmem.page_size",
            format!("os.compaction frees 2 MiB blocks for 2 MiB pages, which physmem.page_size = {:?} does not map here", spec.physmem.page_size.kind),
            &["thp"],
        ));
    }
    if spec.physmem.allocator.kind != "buddy" {
        return Err(Error::config_allowed(
            "physmem.allocator",
            format!("os.compaction moves pages within the buddy allocator's free blocks, not {:?}'s", spec.physmem.allocator.kind),
            &["buddy"],
        ));
    }
    if spec.os.swap.is_some() {
        return Err(Error::config(
            "os.compaction",
            "compaction together with a swap device is not modelled (moved pages would escape the eviction policy's bookkeeping): remove one of os.compaction and os.swap",
        ));
    }
    Ok(())
}

fn check_slices(spec: &Spec) -> Result<()> {
    let policy = &spec.physmem.page_size.kind;
    if spec.pagetable.format.kind != "gt_pde" {
        return Err(Error::config_allowed(
            "pagetable.format",
            format!("physmem.page_size = {policy:?} writes GT-PDEs, which only the gt_pde table holds, not {:?}", spec.pagetable.format.kind),
            &["gt_pde"],
        ));
    }
    if spec.physmem.allocator.kind != "buddy" {
        return Err(Error::config_allowed(
            "physmem.allocator",
            format!("physmem.page_size = {policy:?} takes slices from the buddy allocator's free blocks, not {:?}'s", spec.physmem.allocator.kind),
            &["buddy"],
        ));
    }
    if spec.os.swap.is_some() {
        return Err(Error::config(
            "os.swap",
            format!("physmem.page_size = {policy:?} maps superpages over slices, which have no page-out path: remove the swap device or use another page-size policy"),
        ));
    }
    Ok(())
}

/// A coalescing structure with `gt_blocks` (at config path `path`) fills
/// from GT-PDEs, which only the gt_pde table (`format`) holds: anywhere else
/// the key would silently do nothing.
fn check_gt_blocks(format: &str, path: &str, org: &MechanismSpec) -> Result<()> {
    let on = org.kind == "coalescing" && org.params.get("gt_blocks").and_then(toml::Value::as_bool) == Some(true);
    if on && format != "gt_pde" {
        return Err(Error::config_allowed(
            format!("{path}.organisation.gt_blocks"),
            format!(
                "gt_blocks = true fills an entry from the B-blocks a GT-PDE maps, and only pagetable.format = \"gt_pde\" holds GT-PDEs, not {format:?}; use the gt_pde table or leave gt_blocks out"
            ),
            &["false"],
        ));
    }
    Ok(())
}
