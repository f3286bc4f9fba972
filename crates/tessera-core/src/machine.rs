//! (being written)
pub struct Machine;
