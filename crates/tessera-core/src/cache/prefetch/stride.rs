//! SKELETON — to be replaced by the structures helper.
use super::{PrefetchBuf, Prefetcher};
use crate::error::Result;
use crate::registry::Mechanism;
use serde::{Deserialize, Serialize};
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}
#[derive(Clone, Debug)]
pub struct Stride;
impl Mechanism for Stride {
    const NAME: &'static str = "stride";
    const SUMMARY: &'static str = "stride";
    type Config = Config;
    type Ctx = ();
    fn build(_: &Config, _: &()) -> Result<Self> { Ok(Stride) }
}
impl Prefetcher for Stride {
    fn on_access(&mut self, _l: u64, _h: bool, _o: &mut PrefetchBuf) {}
}
