//! Replacement policies for set-associative structures (TLBs, MMU caches, data caches).
//!
//! ## Contract
//! A policy keeps its own flat per-way state for a structure of `sets × ways`.
//! The owning array ([`crate::table::SetAssoc`]) calls:
//! - `on_hit(set, way)` on every lookup that hits;
//! - `on_fill(set, way)` right after installing a new entry in `way`;
//! - `on_invalidate(set, way)` when an entry is removed (shootdown, flush);
//! - `victim(set)` only when every way of `set` is valid; it returns the way to
//!   evict and must not assume the caller fills it (the caller calls `on_fill`).
//!
//! Policies never allocate after construction.

pub mod lru;
pub mod random;

pub use crate::registry::AnyReplacement;

/// Geometry and seed handed to a policy at build time.
#[derive(Clone, Debug)]
pub struct Geometry {
    pub sets: u32,
    pub ways: u32,
    /// Sub-seed for policies that draw random numbers.
    pub seed: u64,
}

pub trait Replacement {
    /// Whether a hit on the way that was hit or filled last in its set
    /// leaves the policy's state as it is. Owners then count such hits
    /// without telling the policy (the TLB hierarchy's memo and its
    /// most-recent-entry filter); a policy that learns from repeated hits
    /// (frequencies, re-reference predictions) must say false.
    fn repeat_hits_free(&self) -> bool;
    fn on_hit(&mut self, set: u32, way: u32);
    fn on_fill(&mut self, set: u32, way: u32);
    fn on_invalidate(&mut self, set: u32, way: u32);
    fn victim(&mut self, set: u32) -> u32;
}
