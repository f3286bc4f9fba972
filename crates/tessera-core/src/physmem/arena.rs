//! Host storage for page-table nodes: 4 KiB nodes in 2 MiB arenas.
//!
//! Walks read leaf nodes at random; with thousands of nodes that is megabytes of
//! host memory touched at random, so each arena is 2 MiB-aligned and advised as
//! a transparent huge page (Linux `madvise(MADV_HUGEPAGE)`), which keeps host TLB
//! misses off the walk path. Purely a host-performance measure: contents and
//! results are the same with or without it.

use std::alloc::{alloc_zeroed, dealloc, Layout};

pub const NODE_WORDS: usize = 512;
const NODES_PER_ARENA: usize = 512;
const ARENA_BYTES: usize = NODE_WORDS * 8 * NODES_PER_ARENA;

type Node = [u64; NODE_WORDS];

struct Arena {
    ptr: *mut Node,
}

// The arena owns its allocation exclusively.
unsafe impl Send for Arena {}
unsafe impl Sync for Arena {}

impl Arena {
    fn layout() -> Layout {
        Layout::from_size_align(ARENA_BYTES, ARENA_BYTES).expect("valid arena layout")
    }

    fn new() -> Arena {
        let layout = Self::layout();
        // SAFETY: the layout has non-zero size; a null result is handled.
        let ptr = unsafe { alloc_zeroed(layout) } as *mut Node;
        if ptr.is_null() {
            std::alloc::handle_alloc_error(layout);
        }
        #[cfg(target_os = "linux")]
        // SAFETY: the range is our own freshly allocated, 2 MiB-aligned mapping; the
        // advice is a hint and failure is harmless.
        unsafe {
            libc::madvise(ptr as *mut libc::c_void, ARENA_BYTES, libc::MADV_HUGEPAGE);
        }
        Arena { ptr }
    }
}

impl Drop for Arena {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with the same layout.
        unsafe { dealloc(self.ptr as *mut u8, Self::layout()) }
    }
}

/// A growable vector of zero-initialised 4 KiB nodes addressed by slot number.
pub struct NodeStore {
    arenas: Vec<Arena>,
    len: usize,
}

impl NodeStore {
    pub fn new() -> Self {
        NodeStore { arenas: Vec::new(), len: 0 }
    }

    /// Append a zeroed node; returns its slot.
    pub fn push_zeroed(&mut self) -> usize {
        if self.len == self.arenas.len() * NODES_PER_ARENA {
            self.arenas.push(Arena::new());
        }
        self.len += 1;
        self.len - 1
    }

    #[inline]
    fn node_ptr(&self, slot: usize) -> *mut Node {
        debug_assert!(slot < self.len);
        // SAFETY: slot < len, so the arena exists and the offset is inside it.
        unsafe { self.arenas[slot / NODES_PER_ARENA].ptr.add(slot % NODES_PER_ARENA) }
    }

    #[inline]
    pub fn node(&self, slot: usize) -> &Node {
        assert!(slot < self.len, "node slot out of range");
        // SAFETY: in range (checked); shared borrow of self.
        unsafe { &*self.node_ptr(slot) }
    }

    #[inline]
    pub fn node_mut(&mut self, slot: usize) -> &mut Node {
        assert!(slot < self.len, "node slot out of range");
        // SAFETY: in range (checked); exclusive borrow of self.
        unsafe { &mut *self.node_ptr(slot) }
    }

    /// Hint the host CPU to fetch word `index` of node `slot` into its caches.
    #[inline]
    pub fn prefetch(&self, slot: usize, index: usize) {
        if slot < self.len {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: prefetch never faults; the address is inside our arena anyway.
            unsafe {
                let p = (self.node_ptr(slot) as *const u64).add(index & (NODE_WORDS - 1));
                core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = index;
        }
    }
}

impl Clone for NodeStore {
    fn clone(&self) -> Self {
        let mut n = NodeStore::new();
        for s in 0..self.len {
            let d = n.push_zeroed();
            *n.node_mut(d) = *self.node(s);
        }
        n
    }
}

impl std::fmt::Debug for NodeStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NodeStore({} nodes)", self.len)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_start_zeroed_and_keep_their_contents_across_arenas() {
        let mut s = NodeStore::new();
        for i in 0..(NODES_PER_ARENA + 3) {
            let slot = s.push_zeroed();
            assert_eq!(slot, i);
            assert!(s.node(slot).iter().all(|&w| w == 0));
            s.node_mut(slot)[i % NODE_WORDS] = i as u64 + 1;
        }
        for i in 0..(NODES_PER_ARENA + 3) {
            assert_eq!(s.node(i)[i % NODE_WORDS], i as u64 + 1);
        }
        let c = s.clone();
        assert_eq!(c.node(NODES_PER_ARENA + 1)[(NODES_PER_ARENA + 1) % NODE_WORDS], NODES_PER_ARENA as u64 + 2);
    }
}
