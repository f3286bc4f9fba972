//! No retired frames (the default).
//!
//! ## What it models
//! Fault-free memory: every frame is usable, and runs report exactly what
//! they reported before fault maps existed (no `physmem.retired*` stats).
//! ## Config
//! `physmem.retired = "none"` (no parameters).
//! ## Stats
//! None.

use serde::{Deserialize, Serialize};

use super::{RetireCtx, RetiredMap, Retirement};
use crate::error::Result;
use crate::registry::Mechanism;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct NoRetirement;

impl Mechanism for NoRetirement {
    const NAME: &'static str = "none";
    const SUMMARY: &'static str = "no retired frames";
    type Config = Config;
    type Ctx = RetireCtx;
    fn build(_: &Config, _: &RetireCtx) -> Result<Self> {
        Ok(NoRetirement)
    }
}

impl Retirement for NoRetirement {
    fn mark(&self, _: &mut RetiredMap) -> Result<()> {
        Ok(())
    }
}
