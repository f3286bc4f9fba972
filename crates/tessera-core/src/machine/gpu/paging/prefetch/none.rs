//! `none`: a batch migrates its faulted units and nothing else.

use serde::{Deserialize, Serialize};

use super::{Bits, Block, PrefetchCtx, Prefetcher};
use crate::error::Result;
use crate::registry::Mechanism;

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}

#[derive(Clone, Debug)]
pub struct NoPrefetch;

impl Mechanism for NoPrefetch {
    const NAME: &'static str = "none";
    const SUMMARY: &'static str = "migrate the faulted units only";
    type Config = Config;
    type Ctx = PrefetchCtx;
    fn build(_: &Config, _: &PrefetchCtx) -> Result<Self> {
        Ok(NoPrefetch)
    }
}

impl Prefetcher for NoPrefetch {
    fn prefetch(&mut self, _: &Block, _: &mut Bits) {}
}
