//! SKELETON — to be replaced by the structures helper.
use super::{Geometry, Replacement};
use crate::error::Result;
use crate::registry::Mechanism;
use serde::{Deserialize, Serialize};
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}
#[derive(Clone, Debug)]
pub struct Lru;
impl Mechanism for Lru {
    const NAME: &'static str = "lru";
    const SUMMARY: &'static str = "least recently used";
    type Config = Config;
    type Ctx = Geometry;
    fn build(_: &Config, _g: &Geometry) -> Result<Self> { Ok(Lru) }
}
impl Replacement for Lru {
    fn on_hit(&mut self, _s: u32, _w: u32) {}
    fn on_fill(&mut self, _s: u32, _w: u32) {}
    fn on_invalidate(&mut self, _s: u32, _w: u32) {}
    fn victim(&mut self, _s: u32) -> u32 { 0 }
}
