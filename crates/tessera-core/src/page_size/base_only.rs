//! 4 KiB pages only.
//!
//! ## What it models
//! A kernel with transparent huge pages disabled: every first touch maps one 4 KiB page.
//! ## Config
//! `kind = "base_only"` (no parameters)
//! ## Stats
//! Pages mapped are counted by the OS model, in `os.pages_4k`.

use serde::{Deserialize, Serialize};

use super::{PageSizePolicy, Plan, PolicyCtx};
use crate::addr::PageSize;
use crate::error::Result;
use crate::registry::Mechanism;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct BaseOnly;

impl Mechanism for BaseOnly {
    const NAME: &'static str = "base_only";
    const SUMMARY: &'static str = "every first touch maps a 4 KiB page";
    type Config = Config;
    type Ctx = PolicyCtx;
    fn build(_: &Config, _: &PolicyCtx) -> Result<Self> {
        Ok(BaseOnly)
    }
}

impl PageSizePolicy for BaseOnly {
    fn plans(&self) -> &[Plan] {
        &[Plan::Contiguous(PageSize::Size4K)]
    }
}
