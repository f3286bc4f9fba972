//! The operating system's memory-management side that sits behind a page
//! fault when physical memory is oversubscribed: which resident page to evict
//! ([`eviction`]) and where an evicted page's contents go ([`swap`]).
//!
//! Both are self-contained components: an eviction policy sees pages only as
//! numbers (the first frame of each mapped page) and reads accessed bits
//! through [`eviction::AccessedBits`]; the swap device sees only keys and
//! sizes. The machine's fault path (unmap, TLB shootdown, cache write-back)
//! drives them.

pub mod eviction;
pub mod swap;
