//! Set-associative tables shared by TLBs, MMU caches and data caches.
pub mod set_assoc;
#[cfg(test)]
pub mod reference;
pub use set_assoc::SetAssoc;
