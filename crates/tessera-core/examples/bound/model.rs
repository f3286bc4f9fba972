//! A lower bound on the work of the `tlb_only` machine: the same model, hand
//! specialised to that one configuration, so its speed says how fast *any*
//! exact simulator of that machine can go on this host.
//!
//! It models exactly what `Machine` does on the preset `tlb_only` for
//! synthetic streams (one address space, 8-byte accesses that never cross a
//! page, loads and stores): a 64-entry 4-way L1 DTLB for 4 KiB pages, a
//! 32-entry 4-way L1 DTLB for 2 MiB pages that stays empty (its lookups and
//! misses are counted), a 512-entry 4-way L2 TLB, exact LRU, a walk of a real
//! 4-level x86-64 radix table whose 64-bit entries get their accessed and
//! dirty bits set, first-touch faults that map a 4 KiB page and retry the
//! walk, and a store to a clean cached translation setting the leaf's dirty
//! bit and every cached copy's. What it leaves out is everything a general
//! simulator needs and this machine does not: configurable structures, page
//! sizes, replacement policies, fill policies, MMU caches, data caches,
//! timing, several address spaces, a buddy allocator (frames come from a
//! bump counter, which changes frame numbers but no counter), error handling.
//!
//! `Bound::counters` names its counters as `Machine::stats` does, and
//! `tests/bound_model.rs` requires them to be equal on every standard stream.

use tessera_core::access::{AccessBatch, AccessKind};

const PRESENT: u64 = 1;
const WRITABLE: u64 = 1 << 1;
const USER: u64 = 1 << 2;
const ACCESSED: u64 = 1 << 5;
const DIRTY: u64 = 1 << 6;
const ADDR_MASK: u64 = 0x000F_FFFF_FFFF_F000;
const INVALID: u64 = u64::MAX;
/// Accesses ahead whose leaf entry is host-prefetched (as in `Machine::feed`).
const AHEAD: usize = 16;

/// A 4-way set-associative TLB of `SETS` sets with exact LRU: one stamp per
/// way, 0 for an invalid way (the clock starts at 1), so the least stamp is
/// the lowest invalid way if there is one, else the least recent.
struct Tlb4<const SETS: usize> {
    tags: Box<[[u64; 4]; SETS]>,
    pfns: Box<[[u64; 4]; SETS]>,
    stamps: Box<[[u64; 4]; SETS]>,
    clock: u64,
    lookups: u64,
    hits: u64,
    fills: u64,
    evictions: u64,
}

impl<const SETS: usize> Tlb4<SETS> {
    fn new() -> Self {
        Tlb4 {
            tags: Box::new([[INVALID; 4]; SETS]),
            pfns: Box::new([[0; 4]; SETS]),
            stamps: Box::new([[0; 4]; SETS]),
            clock: 0,
            lookups: 0,
            hits: 0,
            fills: 0,
            evictions: 0,
        }
    }

    /// The payload (pfn << 1 | dirty) of `vpn`, touching its way.
    #[inline(always)]
    fn lookup(&mut self, vpn: u64) -> Option<u64> {
        self.lookups += 1;
        let s = vpn as usize & (SETS - 1);
        let t = &self.tags[s];
        let m = (t[0] == vpn) as u32 | ((t[1] == vpn) as u32) << 1 | ((t[2] == vpn) as u32) << 2 | ((t[3] == vpn) as u32) << 3;
        if m == 0 {
            return None;
        }
        let w = m.trailing_zeros() as usize & 3;
        self.hits += 1;
        self.clock += 1;
        self.stamps[s][w] = self.clock;
        Some(self.pfns[s][w])
    }

    /// Install `vpn`, which just missed here: the lowest invalid way, else the least recent.
    #[inline(always)]
    fn fill(&mut self, vpn: u64, payload: u64) {
        self.fills += 1;
        let s = vpn as usize & (SETS - 1);
        let st = &mut self.stamps[s];
        let (a, b) = (if st[1] < st[0] { 1 } else { 0 }, if st[3] < st[2] { 3 } else { 2 });
        let w = if st[b] < st[a] { b } else { a };
        self.evictions += (st[w] != 0) as u64;
        self.clock += 1;
        st[w] = self.clock;
        self.tags[s][w] = vpn;
        self.pfns[s][w] = payload;
    }

    /// Set the dirty bit of `vpn`'s entry, if present (no replacement change).
    fn mark_dirty(&mut self, vpn: u64) {
        let s = vpn as usize & (SETS - 1);
        if let Some(w) = self.tags[s].iter().position(|&t| t == vpn) {
            self.pfns[s][w] |= 1;
        }
    }
}

/// The machine: TLBs, page-table nodes (4 KiB of entries plus, for non-leaf
/// nodes, the index of each entry's child node), counters.
pub struct Bound {
    l1: Tlb4<16>,
    l1_2m_lookups: u64,
    l2: Tlb4<128>,
    nodes: Vec<[u64; 512]>,
    /// Per node, the node index each entry points to (non-leaf nodes only).
    links: Vec<[u32; 512]>,
    /// Frame number of each node.
    node_pfn: Vec<u64>,
    next_pfn: u64,
    walks: u64,
    faulting_walks: u64,
    refs: u64,
    accessed_updates: u64,
    dirty_updates: u64,
    faults: u64,
    instructions: u64,
    loads: u64,
    stores: u64,
}

/// Reserve room for `n` elements and advise the host to back it with huge
/// pages (as `Machine`'s node arenas are), so walks do not wait on host TLB misses.
fn reserved<T>(n: usize) -> Vec<T> {
    let v = Vec::with_capacity(n);
    #[cfg(target_os = "linux")]
    // SAFETY: the range is the vector's own allocation; the advice is a hint.
    unsafe {
        libc::madvise(v.as_ptr() as *mut libc::c_void, n * std::mem::size_of::<T>(), libc::MADV_HUGEPAGE);
    }
    v
}

impl Bound {
    /// A machine whose page-table storage is reserved up front for `footprint` bytes.
    pub fn new(footprint: u64) -> Self {
        // One leaf node per 2 MiB, one level-2 node per 1 GiB, the root and spares.
        let n = (footprint >> 21) as usize + (footprint >> 30) as usize + 16;
        let mut b = Bound {
            l1: Tlb4::new(),
            l1_2m_lookups: 0,
            l2: Tlb4::new(),
            nodes: reserved(n),
            links: reserved(n),
            node_pfn: Vec::new(),
            next_pfn: 1,
            walks: 0,
            faulting_walks: 0,
            refs: 0,
            accessed_updates: 0,
            dirty_updates: 0,
            faults: 0,
            instructions: 0,
            loads: 0,
            stores: 0,
        };
        b.new_node();
        b
    }
}

impl Bound {
    /// Node `i`, which a link or the root names, so it exists.
    #[inline(always)]
    fn node(&mut self, i: usize) -> &mut [u64; 512] {
        debug_assert!(i < self.nodes.len());
        // SAFETY: links and the root only name nodes that were pushed.
        unsafe { self.nodes.get_unchecked_mut(i) }
    }

    #[inline(always)]
    fn link(&self, i: usize, idx: usize) -> usize {
        debug_assert!(i < self.links.len());
        // SAFETY: as for `node`.
        unsafe { self.links.get_unchecked(i)[idx] as usize }
    }

    fn new_node(&mut self) -> u32 {
        self.nodes.push([0; 512]);
        self.links.push([0; 512]);
        self.node_pfn.push(self.next_pfn);
        self.next_pfn += 1;
        (self.nodes.len() - 1) as u32
    }

    /// Simulate one batch (loads and stores of ASID 0 that do not cross a page).
    pub fn feed(&mut self, batch: &AccessBatch) {
        let n = batch.len();
        let (vaddrs, kinds, gaps) = (&batch.vaddr[..n], &batch.kind[..n], &batch.ins_gap[..n]);
        for i in 0..n {
            if i + AHEAD < n {
                self.prefetch_leaf(vaddrs[i + AHEAD]);
            }
            self.instructions += gaps[i] as u64;
            let write = kinds[i] == AccessKind::Store;
            self.stores += write as u64;
            self.loads += !write as u64;
            self.access(vaddrs[i], write);
        }
    }

    /// Host-prefetch the leaf entry a walk for `va` would read (its upper
    /// nodes are few and stay in the host's caches), as `Machine` does.
    #[inline(always)]
    fn prefetch_leaf(&self, va: u64) {
        let mut node = 0usize;
        for level in (2..=4).rev() {
            let idx = ((va >> (3 + 9 * level)) & 511) as usize;
            // SAFETY: as for `node`.
            if unsafe { self.nodes.get_unchecked(node) }[idx] & PRESENT == 0 {
                return;
            }
            node = self.link(node, idx);
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: prefetch never faults; the address is inside the node.
        unsafe {
            let p = self.nodes.get_unchecked(node).as_ptr().add(((va >> 12) & 511) as usize);
            core::arch::x86_64::_mm_prefetch(p as *const i8, core::arch::x86_64::_MM_HINT_T0);
        }
    }

    #[inline(always)]
    fn access(&mut self, va: u64, write: bool) {
        let vpn = va >> 12;
        self.l1_2m_lookups += 1;
        let payload = match self.l1.lookup(vpn) {
            Some(p) => p,
            None => match self.l2.lookup(vpn) {
                Some(p) => {
                    self.l1.fill(vpn, p);
                    p
                }
                None => {
                    let p = self.walk(va, write);
                    self.l2.fill(vpn, p);
                    self.l1.fill(vpn, p);
                    p
                }
            },
        };
        if write && payload & 1 == 0 {
            self.set_dirty(va);
        }
    }

    /// Walk (mapping the page on a first touch and walking again); returns the TLB payload.
    #[inline(always)]
    fn walk(&mut self, va: u64, write: bool) -> u64 {
        loop {
            let mut node = 0usize;
            let mut level = 4u32;
            loop {
                let idx = ((va >> (3 + 9 * level)) & 511) as usize;
                self.refs += 1;
                let raw = self.node(node)[idx];
                if raw & PRESENT == 0 {
                    self.faulting_walks += 1;
                    self.fault(va, node, level);
                    break;
                }
                let mut new = raw | ACCESSED;
                if level == 1 && write {
                    new |= DIRTY;
                }
                if new != raw {
                    self.accessed_updates += (raw & ACCESSED == 0) as u64;
                    self.dirty_updates += (new & DIRTY != raw & DIRTY) as u64;
                    self.node(node)[idx] = new;
                }
                if level == 1 {
                    self.walks += 1;
                    return (raw & ADDR_MASK) >> 11 | (new & DIRTY != 0) as u64;
                }
                node = self.link(node, idx);
                level -= 1;
            }
        }
    }

    /// First touch: build the missing nodes below `level` and map a 4 KiB frame.
    #[cold]
    fn fault(&mut self, va: u64, mut node: usize, mut level: u32) {
        self.faults += 1;
        while level > 1 {
            let idx = ((va >> (3 + 9 * level)) & 511) as usize;
            let child = self.new_node();
            self.nodes[node][idx] = self.node_pfn[child as usize] << 12 | PRESENT | WRITABLE | USER;
            self.links[node][idx] = child;
            node = child as usize;
            level -= 1;
        }
        let idx = ((va >> 12) & 511) as usize;
        self.nodes[node][idx] = self.next_pfn << 12 | PRESENT | WRITABLE | USER;
        self.next_pfn += 1;
    }

    /// A store to a clean cached translation: set the leaf's D bit, and every cached copy's.
    #[cold]
    fn set_dirty(&mut self, va: u64) {
        let mut node = 0usize;
        for level in (2..=4).rev() {
            node = self.links[node][((va >> (3 + 9 * level)) & 511) as usize] as usize;
        }
        let e = &mut self.nodes[node][((va >> 12) & 511) as usize];
        if *e & DIRTY == 0 {
            *e |= DIRTY;
            self.dirty_updates += 1;
        }
        self.l1.mark_dirty(va >> 12);
        self.l2.mark_dirty(va >> 12);
    }

    /// Zero every counter and keep the machine's state: the reference for a
    /// warm-up (`run::simulate_warm`), which `Machine` implements by
    /// subtracting a snapshot instead.
    #[allow(dead_code)] // used by tests/bound_model.rs, not by the benchmark binary
    pub fn reset_counters(&mut self) {
        for t in [&mut self.l1.lookups, &mut self.l1.hits, &mut self.l1.fills, &mut self.l1.evictions] {
            *t = 0;
        }
        for t in [&mut self.l2.lookups, &mut self.l2.hits, &mut self.l2.fills, &mut self.l2.evictions] {
            *t = 0;
        }
        self.l1_2m_lookups = 0;
        self.walks = 0;
        self.faulting_walks = 0;
        self.refs = 0;
        self.accessed_updates = 0;
        self.dirty_updates = 0;
        self.faults = 0;
        self.instructions = 0;
        self.loads = 0;
        self.stores = 0;
    }

    /// Counters under the names `Machine::stats` gives them.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let accesses = self.loads + self.stores;
        vec![
            ("core.instructions", self.instructions),
            ("core.loads", self.loads),
            ("core.stores", self.stores),
            ("mmu.l1_dtlb_4k.lookups", self.l1.lookups),
            ("mmu.l1_dtlb_4k.hits", self.l1.hits),
            ("mmu.l1_dtlb_4k.misses", self.l1.lookups - self.l1.hits),
            ("mmu.l1_dtlb_4k.fills", self.l1.fills),
            ("mmu.l1_dtlb_4k.evictions", self.l1.evictions),
            ("mmu.l1_dtlb_2m.lookups", self.l1_2m_lookups),
            ("mmu.l1_dtlb_2m.misses", self.l1_2m_lookups),
            ("mmu.l2_tlb.lookups", self.l2.lookups),
            ("mmu.l2_tlb.hits", self.l2.hits),
            ("mmu.l2_tlb.misses", self.l2.lookups - self.l2.hits),
            ("mmu.l2_tlb.fills", self.l2.fills),
            ("mmu.l2_tlb.evictions", self.l2.evictions),
            ("walker.walks", self.walks),
            ("walker.faulting_walks", self.faulting_walks),
            ("walker.refs_total", self.refs),
            ("walker.refs_dram", self.refs),
            ("walker.accessed_updates", self.accessed_updates),
            ("walker.dirty_updates", self.dirty_updates),
            ("os.faults", self.faults),
            ("os.pages_4k", self.faults),
            ("cache.dram.data_accesses", accesses),
        ]
    }
}
