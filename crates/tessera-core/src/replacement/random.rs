//! SKELETON — to be replaced by the structures helper.
use super::{Geometry, Replacement};
use crate::error::Result;
use crate::registry::Mechanism;
use serde::{Deserialize, Serialize};
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {}
#[derive(Clone, Debug)]
pub struct Random;
impl Mechanism for Random {
    const NAME: &'static str = "random";
    const SUMMARY: &'static str = "uniform random (seeded)";
    type Config = Config;
    type Ctx = Geometry;
    fn build(_: &Config, _g: &Geometry) -> Result<Self> { Ok(Random) }
}
impl Replacement for Random {
    fn on_hit(&mut self, _s: u32, _w: u32) {}
    fn on_fill(&mut self, _s: u32, _w: u32) {}
    fn on_invalidate(&mut self, _s: u32, _w: u32) {}
    fn victim(&mut self, _s: u32) -> u32 { 0 }
}
