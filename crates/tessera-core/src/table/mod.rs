//! Set-associative tables shared by TLBs, MMU caches and data caches.
pub mod lru4;
pub mod set_assoc;
#[cfg(test)]
pub mod reference;
pub use set_assoc::{Access, SetAssoc};

/// Ask the host CPU to bring the cache line holding `r` into its caches. A
/// performance hint only: it never changes any state.
#[inline(always)]
pub(crate) fn host_prefetch<T>(r: &T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch never faults, and `r` is a valid reference anyway.
    unsafe {
        core::arch::x86_64::_mm_prefetch(r as *const T as *const i8, core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = r;
}
