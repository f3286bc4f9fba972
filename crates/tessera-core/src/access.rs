//! The access stream: struct-of-arrays batches fed to a machine.
//!
//! Instruction accounting: each record carries `ins_gap`, the number of
//! instructions retired since the previous record, up to and including the
//! instruction that makes this access. A lackey `I` line becomes an `IFetch`
//! record with gap 1 and the data accesses of that instruction follow with gap 0.
//! Synthetic streams without fetches put their instruction count on the data
//! records. Total instructions = sum of gaps.

use crate::addr::Asid;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum AccessKind {
    Load = 0,
    Store = 1,
    IFetch = 2,
}

impl AccessKind {
    pub fn from_u8(v: u8) -> Option<AccessKind> {
        match v {
            0 => Some(AccessKind::Load),
            1 => Some(AccessKind::Store),
            2 => Some(AccessKind::IFetch),
            _ => None,
        }
    }
}

/// Default number of records per batch.
pub const BATCH_LEN: usize = 8192;

#[derive(Clone, Debug, Default)]
pub struct AccessBatch {
    pub ins_gap: Vec<u32>,
    pub vaddr: Vec<u64>,
    pub kind: Vec<AccessKind>,
    pub size: Vec<u8>,
    pub asid: Vec<Asid>,
}

impl AccessBatch {
    pub fn with_capacity(n: usize) -> Self {
        AccessBatch {
            ins_gap: Vec::with_capacity(n),
            vaddr: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            asid: Vec::with_capacity(n),
        }
    }
    #[inline]
    pub fn push(&mut self, ins_gap: u32, vaddr: u64, kind: AccessKind, size: u8, asid: Asid) {
        self.ins_gap.push(ins_gap);
        self.vaddr.push(vaddr);
        self.kind.push(kind);
        self.size.push(size);
        self.asid.push(asid);
    }
    pub fn clear(&mut self) {
        self.ins_gap.clear();
        self.vaddr.clear();
        self.kind.clear();
        self.size.clear();
        self.asid.clear();
    }
    #[inline]
    pub fn len(&self) -> usize {
        self.vaddr.len()
    }

    /// Replace this batch's records with records `range` of `from`.
    pub fn copy_range(&mut self, from: &AccessBatch, range: std::ops::Range<usize>) {
        self.clear();
        self.ins_gap.extend_from_slice(&from.ins_gap[range.clone()]);
        self.vaddr.extend_from_slice(&from.vaddr[range.clone()]);
        self.kind.extend_from_slice(&from.kind[range.clone()]);
        self.size.extend_from_slice(&from.size[range.clone()]);
        self.asid.extend_from_slice(&from.asid[range]);
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.vaddr.is_empty()
    }
}
