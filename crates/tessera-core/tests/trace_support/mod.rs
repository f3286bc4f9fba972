//! Helpers shared by the `trace_*` integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use tessera_core::access::{AccessBatch, AccessKind};
use tessera_core::stream::AccessSource;
use tessera_core::{Error, Result};

/// One record as a plain tuple: (ins_gap, vaddr, kind, size, asid).
pub type Rec = (u32, u64, AccessKind, u8, u16);

/// A fresh, empty directory under the system temp dir, removed on drop.
pub struct TempDir(pub PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "tessera-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).unwrap();
        TempDir(p)
    }
    pub fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
    /// Names of the files in the directory, sorted.
    pub fn files(&self) -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(&self.0)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

pub fn records_of(b: &AccessBatch) -> Vec<Rec> {
    (0..b.len())
        .map(|i| (b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i], b.asid[i]))
        .collect()
}

pub fn batch_of(recs: &[Rec]) -> AccessBatch {
    let mut b = AccessBatch::with_capacity(recs.len());
    for &(g, a, k, s, asid) in recs {
        b.push(g, a, k, s, asid);
    }
    b
}

/// Drain a source's dependency column (0 where a batch has none).
pub fn drain_deps(src: &mut dyn AccessSource, cap: usize) -> Result<Vec<u32>> {
    let mut b = AccessBatch::with_capacity(cap);
    let mut v = Vec::new();
    while src.next_batch(&mut b)? {
        assert!(b.dep.is_empty() || b.dep.len() == b.len());
        v.extend((0..b.len()).map(|i| b.dep_of(i)));
    }
    Ok(v)
}

/// Drain a source with batches of capacity `cap`, checking the batch contract.
pub fn drain(src: &mut dyn AccessSource, cap: usize) -> Result<Vec<Rec>> {
    let mut b = AccessBatch::with_capacity(cap);
    let mut v = Vec::new();
    while src.next_batch(&mut b)? {
        assert!(
            !b.is_empty() && b.len() <= cap,
            "batch of {} with capacity {cap}",
            b.len()
        );
        v.extend(records_of(&b));
    }
    assert!(b.is_empty());
    Ok(v)
}

pub fn read_path(path: &Path, cap: usize) -> Result<Vec<Rec>> {
    drain(tessera_core::trace::open(path)?.as_mut(), cap)
}

/// Unpack a trace error, panicking on anything else.
pub fn trace_err(e: Error) -> (String, tessera_core::error::Location, String) {
    match e {
        Error::Trace {
            file,
            location,
            msg,
        } => (file, location, msg),
        e => panic!("expected a trace error, got {e:?}"),
    }
}

/// Small deterministic generator for test data (no external crates).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let x = self.0;
        (x ^ (x >> 29)).wrapping_mul(0xbf58476d1ce4e5b9) ^ (x >> 32)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// `n` random records over several ASIDs, kinds, sizes and gaps.
pub fn random_records(n: usize, seed: u64) -> Vec<Rec> {
    let mut r = Lcg(seed);
    (0..n)
        .map(|_| {
            let kind = match r.below(3) {
                0 => AccessKind::Load,
                1 => AccessKind::Store,
                _ => AccessKind::IFetch,
            };
            let gap = match r.below(4) {
                0 => 0,
                1 => 1,
                2 => r.below(20) as u32,
                _ => r.next() as u32,
            };
            let addr = if r.below(8) == 0 {
                r.next()
            } else {
                0x7f00_0000_0000 + r.below(1 << 30)
            };
            (gap, addr, kind, r.below(256) as u8, r.below(5) as u16 * 7)
        })
        .collect()
}
