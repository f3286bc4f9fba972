//! SKELETON — to be replaced by the structures helper.
use super::{PrefetchBuf, Prefetcher};
use crate::error::Result;
use crate::registry::Mechanism;
use serde::{Deserialize, Serialize};
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}
#[derive(Clone, Debug)]
pub struct NextLine;
impl Mechanism for NextLine {
    const NAME: &'static str = "next_line";
    const SUMMARY: &'static str = "next_line";
    type Config = Config;
    type Ctx = ();
    fn build(_: &Config, _: &()) -> Result<Self> { Ok(NextLine) }
}
impl Prefetcher for NextLine {
    fn on_access(&mut self, _l: u64, _h: bool, _o: &mut PrefetchBuf) {}
}
