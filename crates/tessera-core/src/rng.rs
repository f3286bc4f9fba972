//! Seeded randomness. Every component that needs random numbers gets its own
//! generator derived from the run seed and a stable component name, so adding a
//! component never perturbs another's sequence.

use rand::SeedableRng;
use rand_xoshiro::Xoshiro256PlusPlus;

pub type SimRng = Xoshiro256PlusPlus;

/// A generator for component `name` under run seed `seed`.
pub fn component_rng(seed: u64, name: &str) -> SimRng {
    SimRng::seed_from_u64(seed ^ xxhash_rust::xxh3::xxh3_64(name.as_bytes()))
}

/// A stable 64-bit sub-seed for component `name` (for mechanisms that keep their own RNG).
pub fn sub_seed(seed: u64, name: &str) -> u64 {
    seed.rotate_left(17) ^ xxhash_rust::xxh3::xxh3_64(name.as_bytes())
}
