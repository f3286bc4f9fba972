//! The access stream: struct-of-arrays batches fed to a machine.
//!
//! Instruction accounting: each record carries `ins_gap`, the number of
//! instructions retired since the previous record, up to and including the
//! instruction that makes this access. A lackey `I` line becomes an `IFetch`
//! record with gap 1 and the data accesses of that instruction follow with gap 0.
//! Synthetic streams without fetches put their instruction count on the data
//! records. Total instructions = sum of gaps.
//!
//! Dependencies: a batch may carry a `dep` column, the distance back in
//! records (of the whole stream, across batches) to the load whose value
//! this access's address needs: 1 is the record just before, 0 none. An
//! empty column means no record of the batch has one, so sources without
//! dependencies (Lackey, QEMU, synthetic patterns) pay nothing for it. Only
//! the out-of-order timing model reads it (`timing.kind = "ooo"`).

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
    /// Empty, or one entry per record (see the module doc).
    pub dep: Vec<u32>,
}

impl AccessBatch {
    pub fn with_capacity(n: usize) -> Self {
        AccessBatch {
            ins_gap: Vec::with_capacity(n),
            vaddr: Vec::with_capacity(n),
            kind: Vec::with_capacity(n),
            size: Vec::with_capacity(n),
            asid: Vec::with_capacity(n),
            dep: Vec::new(),
        }
    }
    #[inline]
    pub fn push(&mut self, ins_gap: u32, vaddr: u64, kind: AccessKind, size: u8, asid: Asid) {
        self.ins_gap.push(ins_gap);
        self.vaddr.push(vaddr);
        self.kind.push(kind);
        self.size.push(size);
        self.asid.push(asid);
        if !self.dep.is_empty() {
            self.dep.push(0);
        }
    }
    /// [`Self::push`] with a dependency distance (0: none).
    pub fn push_dep(&mut self, ins_gap: u32, vaddr: u64, kind: AccessKind, size: u8, asid: Asid, dep: u32) {
        if dep != 0 && self.dep.is_empty() {
            self.dep.resize(self.len(), 0);
        }
        self.push(ins_gap, vaddr, kind, size, asid);
        if let Some(last) = self.dep.last_mut() {
            *last = dep;
        }
    }
    /// Whether any record of the batch carries a dependency column.
    #[inline]
    pub fn has_deps(&self) -> bool {
        !self.dep.is_empty()
    }
    /// Record `i`'s dependency distance (0: none).
    #[inline]
    pub fn dep_of(&self, i: usize) -> u32 {
        self.dep.get(i).copied().unwrap_or(0)
    }
    pub fn clear(&mut self) {
        self.ins_gap.clear();
        self.vaddr.clear();
        self.kind.clear();
        self.size.clear();
        self.asid.clear();
        self.dep.clear();
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
        self.asid.extend_from_slice(&from.asid[range.clone()]);
        if from.has_deps() {
            self.dep.extend_from_slice(&from.dep[range]);
        }
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.vaddr.is_empty()
    }
}
