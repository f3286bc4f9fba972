//! Virtual memory layout of a built-in workload: where a C program on x86-64
//! Linux would find its arrays, heap objects and stack.
//!
//! ## What it models
//! - **mmap region** ([`AddressSpace::mmap`]): large allocations, placed
//!   top-down below [`MMAP_TOP`] like Linux's legacy-free mmap layout, each
//!   rounded up to whole 4 KiB pages with nothing between them.
//! - **heap** ([`AddressSpace::malloc`]): glibc-like. Requests below
//!   [`MMAP_THRESHOLD`] (128 KiB, glibc's default) are carved from a `brk`
//!   heap growing up from [`HEAP_BASE`]: each chunk has a 16-byte header and is
//!   rounded to 16 bytes (minimum 32), so consecutive small objects sit 16 bytes
//!   apart plus their size, as with ptmalloc. Larger requests go to mmap.
//!   [`AddressSpace::free`] puts a chunk on an exact-size LIFO free list that the
//!   next `malloc` of that size reuses (tcache-like); chunks are never merged.
//! - **stack** ([`AddressSpace::stack`]): grows down from [`STACK_TOP`].
//!
//! ## Choices
//! - Anonymous mmaps of 2 MiB or more are 2 MiB-aligned, as Linux ≥ 6.7 does
//!   for THP-eligible anonymous mappings (`thp_get_unmapped_area`); smaller
//!   ones are 4 KiB-aligned. `AddressSpace::with_mmap_align` changes it.
//! - No ASLR: addresses depend only on the sequence of allocations, so a
//!   workload's stream is a pure function of its parameters and seed.

use rustc_hash::FxHashMap;

use super::emit::{Dep, Emitter};

/// Start of the `brk` heap (just above a PIE executable's data, no ASLR).
pub const HEAP_BASE: u64 = 0x5555_5556_0000;
/// The mmap region grows down from here.
pub const MMAP_TOP: u64 = 0x7fff_f000_0000;
/// The stack grows down from here.
pub const STACK_TOP: u64 = 0x7fff_ffff_f000;
/// Requests at least this large bypass the heap (glibc `M_MMAP_THRESHOLD`).
pub const MMAP_THRESHOLD: u64 = 128 << 10;

const PAGE: u64 = 4096;
const HUGE: u64 = 2 << 20;

/// One process's virtual address space allocator.
#[derive(Clone, Debug)]
pub struct AddressSpace {
    mmap_next: u64,
    brk: u64,
    stack_sp: u64,
    free_lists: FxHashMap<u64, Vec<u64>>,
    chunk_size: FxHashMap<u64, u64>,
    huge_align: bool,
    mapped: u64,
}

impl Default for AddressSpace {
    fn default() -> Self {
        Self::new()
    }
}

impl AddressSpace {
    pub fn new() -> Self {
        AddressSpace {
            mmap_next: MMAP_TOP,
            brk: HEAP_BASE,
            stack_sp: STACK_TOP,
            free_lists: FxHashMap::default(),
            chunk_size: FxHashMap::default(),
            huge_align: true,
            mapped: 0,
        }
    }

    /// Whether mmaps of ≥ 2 MiB are 2 MiB-aligned (default true).
    pub fn with_mmap_align(mut self, huge_align: bool) -> Self {
        self.huge_align = huge_align;
        self
    }

    /// Map `bytes` of anonymous memory; returns its start.
    pub fn mmap(&mut self, bytes: u64) -> u64 {
        let len = bytes.max(1).div_ceil(PAGE) * PAGE;
        let align = if self.huge_align && len >= HUGE { HUGE } else { PAGE };
        let start = (self.mmap_next - len) & !(align - 1);
        self.mmap_next = start;
        self.mapped += len;
        start
    }

    /// glibc-like `malloc(bytes)`; returns the user pointer.
    pub fn malloc(&mut self, bytes: u64) -> u64 {
        if bytes >= MMAP_THRESHOLD {
            // glibc puts a 16-byte header at the start of the mapping.
            return self.mmap(bytes + 16) + 16;
        }
        let chunk = (bytes + 16).div_ceil(16).max(2) * 16;
        if let Some(p) = self.free_lists.get_mut(&chunk).and_then(Vec::pop) {
            return p;
        }
        let p = self.brk + 16;
        self.brk += chunk;
        self.chunk_size.insert(p, chunk);
        p
    }

    /// Free a heap pointer from [`AddressSpace::malloc`] (mmapped blocks are
    /// simply forgotten: their addresses are never reused).
    pub fn free(&mut self, p: u64) {
        if let Some(&chunk) = self.chunk_size.get(&p) {
            self.free_lists.entry(chunk).or_default().push(p);
        }
    }

    /// Reserve `bytes` of stack (16-byte aligned); returns its lowest address.
    pub fn stack(&mut self, bytes: u64) -> u64 {
        self.stack_sp = (self.stack_sp - bytes) & !15;
        self.stack_sp
    }

    /// Bytes of heap in use (high-water mark) plus bytes mmapped.
    pub fn footprint(&self) -> u64 {
        (self.brk - HEAP_BASE) + self.mapped + (STACK_TOP - self.stack_sp)
    }
}

/// An array that lives both on the host (its values drive the algorithm) and
/// at a simulated virtual address (its accesses are emitted).
///
/// `ld`/`st` emit one access of `size_of::<T>()` bytes; `get`/`set` touch the
/// host copy only (for set-up work the workload chooses not to simulate).
#[derive(Clone, Debug)]
pub struct SimVec<T> {
    pub base: u64,
    pub data: Vec<T>,
}

impl<T: Copy> SimVec<T> {
    /// An array of `len` copies of `fill`, placed by `malloc` (which mmaps it
    /// when large, like glibc).
    pub fn alloc(space: &mut AddressSpace, len: usize, fill: T) -> Self {
        let bytes = (len * std::mem::size_of::<T>()) as u64;
        SimVec { base: space.malloc(bytes), data: vec![fill; len] }
    }

    /// Wrap existing host data, placed by `malloc`.
    pub fn from_vec(space: &mut AddressSpace, data: Vec<T>) -> Self {
        let bytes = (data.len() * std::mem::size_of::<T>()) as u64;
        SimVec { base: space.malloc(bytes), data }
    }

    const SIZE: u8 = {
        assert!(std::mem::size_of::<T>() <= 255);
        std::mem::size_of::<T>() as u8
    };

    #[inline(always)]
    pub fn addr(&self, i: usize) -> u64 {
        self.base + (i * std::mem::size_of::<T>()) as u64
    }

    /// Load element `i` (emits a load).
    #[inline(always)]
    pub fn ld(&self, i: usize, e: &mut Emitter) -> T {
        e.load(self.addr(i), Self::SIZE);
        self.data[i]
    }

    /// Store element `i` (emits a store).
    #[inline(always)]
    pub fn st(&mut self, i: usize, v: T, e: &mut Emitter) {
        e.store(self.addr(i), Self::SIZE);
        self.data[i] = v;
    }

    /// Load element `i`, whose index needs the value loaded by `on`
    /// ([`Dep::NONE`]: none); returns the value and this load's place.
    #[inline(always)]
    pub fn ld_on(&self, i: usize, on: Dep, e: &mut Emitter) -> (T, Dep) {
        let d = e.load_on(self.addr(i), Self::SIZE, on);
        (self.data[i], d)
    }

    /// Store element `i`, whose index needs the value loaded by `on`.
    #[inline(always)]
    pub fn st_on(&mut self, i: usize, v: T, on: Dep, e: &mut Emitter) {
        e.store_on(self.addr(i), Self::SIZE, on);
        self.data[i] = v;
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        self.data.len()
    }

    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Bytes of the simulated array.
    pub fn bytes(&self) -> u64 {
        (self.data.len() * std::mem::size_of::<T>()) as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_mallocs_are_ptmalloc_spaced_and_reused() {
        let mut a = AddressSpace::new();
        let p = a.malloc(24);
        let q = a.malloc(24);
        // 24 bytes + 16-byte header round to a 48-byte chunk.
        assert_eq!(q - p, 48);
        a.free(p);
        assert_eq!(a.malloc(24), p);
        assert_ne!(a.malloc(24), p);
    }

    #[test]
    fn large_requests_are_mmapped_and_huge_aligned() {
        let mut a = AddressSpace::new();
        let big = a.malloc(64 << 20);
        assert_eq!((big - 16) % (2 << 20), 0);
        assert!(big > HEAP_BASE + (1 << 40));
        let small_map = a.mmap(8192);
        assert_eq!(small_map % 4096, 0);
        assert!(small_map < big);
        assert!(a.footprint() >= (64 << 20) + 8192);
    }

    #[test]
    fn regions_do_not_overlap() {
        let mut a = AddressSpace::new();
        let mut spans = Vec::new();
        for i in 1..200u64 {
            let n = (i * 7919) % 300_000 + 1;
            spans.push((a.malloc(n), n));
        }
        spans.sort();
        for w in spans.windows(2) {
            assert!(w[0].0 + w[0].1 <= w[1].0, "{w:?}");
        }
    }
}
