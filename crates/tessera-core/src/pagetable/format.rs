//! The page-table format family (`pagetable.format`): how a tree of nodes in
//! simulated physical memory is indexed and what its entries mean.
//!
//! ## Contract
//! A format describes a radix-shaped tree of `levels()` levels, the root at
//! level `levels()` and leaves of 4 KiB pages at level 1. Nodes are 4 KiB
//! table frames (a format may widen a level's nodes to several contiguous
//! frames, [`PageTableFormat::node_order`]). An entry at `level` is `level_entry_words(level)` 64-bit
//! words (8 bytes for x86, 16 for a GT-PDE, up to a 64-byte line for a table
//! of contents; `entry_words()` by default); entry `i` of a node starts at
//! word `i * level_entry_words(level)`, so the walker's reference for it is
//! `node_address + 8 * i * level_entry_words(level)`. The walker reads the
//! first word of an entry itself and hands [`PageTableFormat::decode`] a
//! reader for the others (never called by one-word formats).
//!
//! A format whose level-1 entries map several 4 KiB pages (a table of
//! contents: `level_shift(1) > 12`) is written page by page through
//! [`PageTableFormat::set_page`], and decodes the frame of a page from its
//! (asid, va), which `decode` receives.
//!
//! `decode` says what a walk does next ([`Step`]): stop (not present),
//! descend to a node (through the pointer in word
//! [`PageTableFormat::table_word`] of the entry), stop at a leaf with the frame of *this* address (a
//! format whose leaves map several frames, such as a table of contents,
//! picks the right one from `va`), or, for a large-page bit that keeps the
//! node below (GPU Mosaic), read one entry of the next level and take the
//! large page's frame from it.
//!
//! Writes go through [`crate::physmem::PhysMem::write_table_entry`], which
//! sets the entry's words and the host link to a child node in one call, so
//! a format cannot leave the walker's host-side links stale.
//!
//! Host-side accelerations the walker may use (walk hints, shortcuts, the
//! prefetch of a later leaf) rely only on this contract and on the table
//! epoch, so every format gets them; a format that needs them off says so
//! with [`PageTableFormat::allows_shortcuts`].

use crate::addr::{Asid, PageSize, Pfn};
use crate::pagetable::x86_radix::bits as x86_bits;
use crate::error::{Error, Result};

/// What one entry tells a walk.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Not present: the walk faults at this level.
    NotPresent,
    /// A pointer to the next level's node.
    Next { node: u64 },
    /// A leaf. The TLBs may cache the translation as a page of `size`
    /// whose first frame is `pfn_base` (for a leaf whose frames are not
    /// contiguous, `size` is 4 KiB and `pfn_base` the frame of this address).
    Leaf { pfn_base: u64, size: PageSize },
    /// A large page of `size` whose frames are found by reading the entry
    /// for this address in the next level's node `node` (a large-page bit
    /// that keeps the page table below it, as in GPU Mosaic).
    LargeViaNext { node: u64, size: PageSize },
}

/// Most 64-bit words an entry may have (one 64-byte line).
pub const MAX_ENTRY_WORDS: u32 = 8;

/// A page-table format.
pub trait PageTableFormat {
    /// Levels of the tree; the root is at this level.
    fn levels(&self) -> u32;
    /// Shift of the virtual-address range one entry at `level` covers
    /// (12 at level 1, unless a level-1 entry maps a group of pages).
    fn level_shift(&self, level: u32) -> u32;
    /// Index of `va`'s entry in a node at `level`.
    fn index(&self, va: u64, level: u32) -> u64;
    /// 64-bit words of the widest entry.
    fn entry_words(&self) -> u32;
    /// 64-bit words of an entry at `level`.
    #[inline(always)]
    fn level_entry_words(&self, _level: u32) -> u32 {
        self.entry_words()
    }
    /// Virtual-address bits the tree translates.
    fn va_bits(&self) -> u32;
    /// Page sizes this format can map, smallest first.
    fn sizes(&self) -> &[PageSize];
    /// The level whose leaves map pages of `size`, if the format maps it.
    fn leaf_level(&self, size: PageSize) -> Option<u32>;
    /// What the entry whose first word is `raw` at `level` means for `va`
    /// of address space `asid`; `word(k)` reads word `k` of the entry
    /// (k < `level_entry_words(level)`).
    fn decode(&self, raw: u64, level: u32, va: u64, asid: Asid, word: &dyn Fn(u32) -> u64) -> Step;
    // The accessed/dirty operations and the table entry default to x86's
    // bits, which every format so far keeps in its first word; a format
    // with another layout overrides them.

    /// The first word after a walk used the entry: accessed set, and dirty
    /// on a store to a leaf.
    #[inline]
    fn used(&self, raw: u64, leaf: bool, write: bool) -> u64 {
        x86_bits::used(raw, leaf, write)
    }
    /// Whether the first word of a leaf has its dirty bit set.
    #[inline]
    fn is_dirty(&self, raw: u64) -> bool {
        x86_bits::is_dirty(raw)
    }
    /// Whether the first word of an entry has its accessed bit set.
    #[inline]
    fn is_accessed(&self, raw: u64) -> bool {
        x86_bits::is_accessed(raw)
    }
    /// The first word with the accessed bit cleared.
    #[inline]
    fn clear_accessed(&self, raw: u64) -> u64 {
        raw & !crate::pagetable::x86_radix::ACCESSED
    }
    /// The words of an entry at `level` pointing at the node `node`.
    fn encode_table(&self, node: Pfn, _level: u32) -> u64 {
        crate::pagetable::x86_radix::Pte::table(node).encode()
    }
    /// The words of a leaf mapping a page of `size` at `pfn` (A/D clear).
    fn encode_leaf(&self, size: PageSize, pfn: Pfn) -> u64;
    /// Whether a large page keeps the node below it, whose entries map its
    /// 4 KiB pieces (and the large entry points at that node).
    fn large_keeps_node(&self) -> bool {
        false
    }
    /// The bit in-place coalescing sets in the 4 KiB entries of a large
    /// page that keeps its node (Mosaic's *disabled* bit); 0 for a format
    /// that cannot coalesce in place.
    fn disabled_bit(&self) -> u64 {
        0
    }
    /// The word of `va`'s entry at `level` that holds the pointer to the
    /// node below for `va` (and its accessed bit and host link), when
    /// [`Self::decode`] says [`Step::Next`], or the word a pointer for `va`
    /// is written to when it says [`Step::NotPresent`]: 0 for a one-pointer
    /// entry. An entry may hold several pointers, each for part of the range
    /// it covers: a 16-byte GT-PDE slot in the 4 MB mode holds two 8-byte
    /// PDEs when it maps no superpage, one for each 2 MiB half. Such a
    /// format's [`Self::node_shift`] says the range of one pointer.
    #[inline(always)]
    fn table_word(&self, _va: u64, _level: u32) -> u32 {
        0
    }
    /// log2 of the virtual range one node at `level` covers: by default
    /// the range of the entry above that points to it; less when that entry
    /// holds several pointers ([`Self::table_word`]). The walker's hints
    /// and neighbour fills key leaf nodes by it.
    #[inline(always)]
    fn node_shift(&self, level: u32) -> u32 {
        self.level_shift(level + 1)
    }
    /// Cycles the walker spends decoding the entry whose first word is
    /// `raw` at `level`, beyond the reference that read it (which costs
    /// `walker.step_cycles` plus the serving cache level's latency): 0 for
    /// an entry a radix walker uses as it is; a GT-PDE's block select costs
    /// more (3 cycles in the GTSM paper). Charged to every walk that reads
    /// the entry, faulting or not. A format that charges cycles for a
    /// pointer entry (`Step::Next`) must also turn the walker's shortcuts
    /// off ([`Self::allows_shortcuts`]): a shortcut walk starts at the leaf
    /// node and decodes none of the entries above it.
    #[inline(always)]
    fn decode_cycles(&self, _raw: u64, _level: u32) -> u32 {
        0
    }
    /// log2 of the 4 KiB frames a node at `level` spans: 0 (one frame) for
    /// every format but GTSM's, whose 8 and 16 KiB page directories are
    /// contiguous frames. Entry `i` of a node then lies in its frame
    /// `word(i) / 512` ([`FormatExt::locate`]).
    #[inline(always)]
    fn node_order(&self, _level: u32) -> u32 {
        0
    }
    /// The word of the entry a walk reads next when `va`'s own entry at
    /// `level` reads as not present because it is padding: a pointer entry
    /// that covers the range of several entries sits in the first of them
    /// (GTSM's 1 MiB mode pads a 4 KiB-page PDE to 32 bytes). The walker
    /// reads it as a second reference and follows it only if it points to
    /// a node ([`Step::Next`]). None for every other format.
    #[inline(always)]
    fn padding_word(&self, _va: u64, _level: u32) -> Option<u64> {
        None
    }
    /// Whether the paging-structure cache of level-`level` entries holds
    /// whole entries (up to two words, tagged by the entry's range,
    /// [`Self::level_shift`]) rather than next-node pointers: a walk that
    /// hits decodes the cached entry, so a cached leaf ends the walk with no
    /// reference. GTSM's PDE cache holds 16-byte GT-PDEs this way.
    #[inline(always)]
    fn psc_caches_entries(&self, _level: u32) -> bool {
        false
    }
    /// Whether the PSC of any level holds whole entries
    /// ([`Self::psc_caches_entries`]): constant for a format that never
    /// does, so its walks skip the decoding of cached entries.
    #[inline(always)]
    fn psc_caches_any_entries(&self) -> bool {
        (1..=self.levels()).any(|level| self.psc_caches_entries(level))
    }
    /// Whether the walker may use its host-side shortcuts (see module doc).
    fn allows_shortcuts(&self) -> bool {
        true
    }
    /// Map (`pfn` Some) or unmap (None) the 4 KiB page `va` of `asid` in the
    /// level-1 entry whose words are `words` (`level_entry_words(1)` of
    /// them), for a format whose level-1 entries map several pages. An
    /// entry left with no page must read as not present.
    fn set_page(&self, _words: &mut [u64], _va: u64, _asid: Asid, _pfn: Option<Pfn>) -> Result<()> {
        Err(Error::config("pagetable.format", "this format maps one page per leaf entry"))
    }
}

/// Level-independent helpers over a format.
pub trait FormatExt: PageTableFormat {
    /// 4 KiB frames one entry at `level` covers.
    #[inline]
    fn level_frames(&self, level: u32) -> u64 {
        1 << (self.level_shift(level) - crate::addr::BASE_SHIFT)
    }
    /// Whether a level-1 entry maps several 4 KiB pages (written with `set_page`).
    #[inline]
    fn groups_pages(&self) -> bool {
        self.level_shift(1) > crate::addr::BASE_SHIFT
    }
    /// Word index of `va`'s entry in a node at `level`.
    #[inline]
    fn word(&self, va: u64, level: u32) -> u64 {
        self.index(va, level) * self.level_entry_words(level) as u64
    }
    /// Where word `w` of the node at `level` whose first frame is in host
    /// slot `slot` is stored: (slot of its frame, word in that frame). A
    /// node of several frames has consecutive slots.
    #[inline(always)]
    fn locate(&self, level: u32, slot: u32, w: u64) -> (u32, u64) {
        if self.node_order(level) == 0 {
            (slot, w)
        } else {
            (slot + (w >> 9) as u32, w & 511)
        }
    }
}

impl<T: PageTableFormat + ?Sized> FormatExt for T {}
