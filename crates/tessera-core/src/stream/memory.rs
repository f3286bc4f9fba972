//! An access stream held in memory: columns handed over by the caller (a
//! NumPy array or a pandas frame through the Python API, a test's vectors).
//!
//! The columns are the batch's own (`vaddr`, `ins_gap`, `asid`, `kind`,
//! `size`, and optionally `dep`), checked once when the stream is made, so a run from memory
//! simulates exactly what a native trace of the same records would, without
//! decoding a file.

use crate::access::{AccessBatch, AccessKind};
use crate::addr::Asid;
use crate::error::{Error, Result};
use crate::stream::AccessSource;
use crate::trace::batch_cap;

/// The five columns of an in-memory stream, all of one length.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Columns {
    pub vaddr: Vec<u64>,
    pub ins_gap: Vec<u32>,
    pub asid: Vec<Asid>,
    /// Access kinds as their byte values (0 load, 1 store, 2 instruction fetch).
    pub kind: Vec<u8>,
    pub size: Vec<u8>,
    /// Dependency distances in records (0: none), or empty when the stream has none.
    pub dep: Vec<u32>,
}

/// A stream over [`Columns`].
#[derive(Debug)]
pub struct MemoryStream {
    vaddr: Vec<u64>,
    ins_gap: Vec<u32>,
    asid: Vec<Asid>,
    kind: Vec<AccessKind>,
    size: Vec<u8>,
    dep: Vec<u32>,
    next: usize,
    name: String,
}

impl MemoryStream {
    /// Check the columns (equal lengths, kinds 0–2) and make the stream;
    /// `name` identifies it in results (`describe()` is `memory:<name>`).
    pub fn new(c: Columns, name: &str) -> Result<MemoryStream> {
        let n = c.vaddr.len();
        for (col, len) in [("ins_gap", c.ins_gap.len()), ("asid", c.asid.len()), ("kind", c.kind.len()), ("size", c.size.len())] {
            if len != n {
                return Err(Error::config_allowed(
                    format!("accesses.{col}"),
                    format!("has {len} values but vaddr has {n}"),
                    &["one value per access, as many as vaddr"],
                ));
            }
        }
        if !c.dep.is_empty() && c.dep.len() != n {
            return Err(Error::config_allowed(
                "accesses.dep",
                format!("has {} values but vaddr has {n}", c.dep.len()),
                &["one value per access, as many as vaddr", "none (no dependencies)"],
            ));
        }
        if let Some(i) = c.dep.iter().enumerate().position(|(i, &d)| d as usize > i) {
            return Err(Error::config_allowed(
                "accesses.dep",
                format!("access {i} depends on the access {} before it, before the stream's start", c.dep[i]),
                &["0 (no dependency)", "a distance back of at most the access's index"],
            ));
        }
        let mut kind = Vec::with_capacity(n);
        for (i, &k) in c.kind.iter().enumerate() {
            match AccessKind::from_u8(k) {
                Some(k) => kind.push(k),
                None => {
                    return Err(Error::config_allowed(
                        "accesses.kind",
                        format!("access {i} has kind {k}"),
                        &["0 (load)", "1 (store)", "2 (instruction fetch)"],
                    ))
                }
            }
        }
        Ok(MemoryStream { vaddr: c.vaddr, ins_gap: c.ins_gap, asid: c.asid, kind, size: c.size, dep: c.dep, next: 0, name: name.to_string() })
    }

    pub fn len(&self) -> usize {
        self.vaddr.len()
    }

    pub fn is_empty(&self) -> bool {
        self.vaddr.is_empty()
    }
}

impl AccessSource for MemoryStream {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        let cap = batch_cap(out);
        let r = self.next..self.vaddr.len().min(self.next + cap);
        out.vaddr.extend_from_slice(&self.vaddr[r.clone()]);
        out.ins_gap.extend_from_slice(&self.ins_gap[r.clone()]);
        out.asid.extend_from_slice(&self.asid[r.clone()]);
        out.kind.extend_from_slice(&self.kind[r.clone()]);
        out.size.extend_from_slice(&self.size[r.clone()]);
        if !self.dep.is_empty() {
            out.dep.extend_from_slice(&self.dep[r.clone()]);
        }
        self.next = r.end;
        Ok(!out.is_empty())
    }

    fn progress(&self) -> (u64, u64) {
        (self.next as u64, self.vaddr.len() as u64)
    }

    fn describe(&self) -> String {
        format!("memory:{}", self.name)
    }

    fn carries_dependencies(&self) -> bool {
        !self.dep.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cols(n: usize) -> Columns {
        Columns {
            vaddr: (0..n as u64).map(|i| i * 4096 + 8).collect(),
            ins_gap: vec![1; n],
            asid: vec![0; n],
            kind: (0..n).map(|i| (i % 3) as u8).collect(),
            size: vec![8; n],
            dep: Vec::new(),
        }
    }

    #[test]
    fn dependencies_are_handed_over_and_checked() {
        let mut c = cols(10_000);
        c.dep = (0..10_000u32).map(|i| i % 3).collect();
        c.dep[0] = 0;
        c.dep[1] = 1;
        let mut s = MemoryStream::new(c.clone(), "d").unwrap();
        assert!(s.carries_dependencies());
        let mut b = AccessBatch::with_capacity(4096);
        let mut got = Vec::new();
        while s.next_batch(&mut b).unwrap() {
            assert_eq!(b.dep.len(), b.len());
            got.extend_from_slice(&b.dep);
        }
        assert_eq!(got, c.dep);
        let mut bad = c.clone();
        bad.dep[7] = 8;
        let e = MemoryStream::new(bad, "d").unwrap_err().to_string();
        assert!(e.contains("accesses.dep") && e.contains("access 7") && e.contains("before the stream's start"), "{e}");
        let mut short = c;
        short.dep.pop();
        let e = MemoryStream::new(short, "d").unwrap_err().to_string();
        assert!(e.contains("accesses.dep") && e.contains("9999 values"), "{e}");
        assert!(!MemoryStream::new(cols(5), "n").unwrap().carries_dependencies());
    }

    #[test]
    fn batches_hand_over_every_record_in_order() {
        let c = cols(20_000);
        let mut s = MemoryStream::new(c.clone(), "t").unwrap();
        let mut b = AccessBatch::with_capacity(8192);
        let mut seen = Vec::new();
        while s.next_batch(&mut b).unwrap() {
            assert!(b.len() <= 8192);
            seen.extend(b.vaddr.iter().zip(&b.kind).map(|(&v, &k)| (v, k as u8)));
        }
        assert_eq!(seen, c.vaddr.iter().copied().zip(c.kind.iter().copied()).collect::<Vec<_>>());
        assert_eq!(s.progress(), (20_000, 20_000));
        assert_eq!(s.describe(), "memory:t");
    }

    #[test]
    fn bad_columns_name_the_column() {
        let mut c = cols(10);
        c.size.pop();
        let e = MemoryStream::new(c, "t").unwrap_err().to_string();
        assert!(e.contains("accesses.size") && e.contains("9 values"), "{e}");
        let mut c = cols(10);
        c.kind[7] = 9;
        let e = MemoryStream::new(c, "t").unwrap_err().to_string();
        assert!(e.contains("accesses.kind") && e.contains("access 7 has kind 9"), "{e}");
    }
}
