//! SKELETON — to be replaced by the traces helper.
use super::AccessSource;
use crate::access::AccessBatch;
use crate::error::Result;

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Pattern { Uniform, Sequential, HotCold }

#[derive(Clone, Debug)]
pub struct SyntheticSpec { pub pattern: Pattern, pub accesses: u64, pub footprint: u64, pub seed: u64 }

pub struct Synthetic { spec: SyntheticSpec, done: u64 }
impl Synthetic { pub fn new(spec: SyntheticSpec) -> Result<Self> { Ok(Synthetic { spec, done: 0 }) } }
impl AccessSource for Synthetic {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> { out.clear(); let _ = self.done; Ok(false) }
    fn progress(&self) -> (u64, u64) { (self.done, self.spec.accesses) }
    fn describe(&self) -> String { String::new() }
}
