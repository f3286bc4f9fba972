//! Mosaic Pages' table-of-contents page table: a radix tree whose leaves map
//! a mosaic virtual page to the compressed frame numbers of its pages.
//!
//! ## What it models
//! A mosaic page is an aligned group of `arity` virtually consecutive 4 KiB
//! pages. A leaf entry is indexed by the mosaic virtual page number (MVPN =
//! VPN >> log2 arity) and holds a table of contents (ToC): one 7-bit CPFN per
//! page (`0x7F` = not mapped), which the walker decodes into a frame with the
//! Iceberg allocator's hash functions ([`cpfn::decode`]), as the paper's
//! hardware decodes a TLB entry. The levels above the leaves are x86 radix
//! nodes: 512 entries of 8 bytes, x86 bits.
//!
//! **Leaf entry layout** (`entry_words` 64-bit words, the smallest power of
//! two that holds the flags and `arity` CPFNs without splitting a CPFN
//! across words, so an entry never straddles a 64-byte line):
//! - word 0, bits 0..=11: x86 flags of the mosaic page: present (some page
//!   of the group is mapped), writable, user, accessed (bit 5), dirty (bit 6);
//! - word 0, bits 12..=60: CPFNs 0..=6 at bit `12 + 7i`;
//! - word k ≥ 1: CPFNs `7 + 9(k-1) + j` at bit `7j`, j = 0..=8.
//!
//! | arity | entry bytes | entries per 4 KiB leaf node | MVPN bits the leaf indexes | VA a leaf node covers |
//! |---|---|---|---|---|
//! | 4  | 8  | 512 | 9 | 8 MiB  |
//! | 8  | 16 | 256 | 8 | 8 MiB  |
//! | 16 | 16 | 256 | 8 | 16 MiB |
//! | 32 | 32 | 128 | 7 | 16 MiB |
//! | 64 | 64 | 64  | 6 | 16 MiB |
//!
//! Leaf nodes are full 4 KiB frames, so the levels above index the next 9
//! bits each from `12 + log2 arity + leaf bits` up: a 4-level tree
//! translates 50 or 51 bits, covering the 48-bit space (5 levels: 57).
//!
//! **Walk references.** A walk reads one entry per level; at the leaf it
//! reads the entry's first word, whose 64-byte line holds the whole ToC (an
//! entry is at most 64 bytes and aligned to its size), so a walk makes as
//! many references as an x86 walk of the same depth. Other words of the
//! entry are in that line and cost nothing more.
//!
//! **Accessed and dirty bits** are kept per mosaic page, in word 0, as the
//! paper's TLB keeps every bit but the valid bits per mosaic page (§2.1,
//! §3.1). Hence: a walk or a store to any page of the group sets them for
//! the group; the OS's accessed-bit scans (`clock`, `linux_like`, Horizon's
//! `linux_sampled`) test and clear the group's bit; and a page evicted while
//! a sibling was written counts as dirty (a swap write that x86 might not
//! make). Translations never depend on them. Clearing the last page of a
//! ToC clears the whole entry, flags included.
//! ## Paper
//! "Mosaic Pages: Big TLB Reach with Small Pages", ASPLOS 2023, DOI
//! 10.1145/3582016.3582021: §2.1 (mosaic pages, MVPN, ToC), §2.2 and §3.1
//! (7-bit CPFNs, `0x7F` unmapped; "we modify the leaves of the page table to
//! map MVPNs to ToCs, but we keep the overall radix-tree structure"; Fig. 5).
//! ## Choices where the paper is silent
//! - The paper's prototype keeps present/A/D/permission bits per CPFN in the
//!   page table; here present is the CPFN itself (`0x7F` = not present) and
//!   A/D/permissions are per mosaic page, which lets a 64-page ToC fit one
//!   line. (The authors' gem5 model instead keeps x86 leaf PTEs and builds
//!   the ToC from the aligned group of them.)
//! - Only 4 KiB pages are mapped, all from the Iceberg pool: the format
//!   needs `physmem.allocator = "iceberg"` and `physmem.page_size =
//!   "base_only"` (the gem5 model's 2 MiB pages, whose ToC is "all ones",
//!   are not modelled).
//! - A frame that is not one of the page's Iceberg slots cannot be encoded:
//!   mapping it is an error naming `pagetable.format`, never a panic.
//! ## Config
//! `pagetable.format = { kind = "mosaic_toc", arity = 4 | 8 | 16 | 32 | 64 }`
//! (default 4); the depth is `pagetable.levels = 4 | 5`.
//! ## Stats
//! None of its own (see [`super::PageTable`]).

use serde::{Deserialize, Serialize};

use super::format::{PageTableFormat, Step, MAX_ENTRY_WORDS};
use super::x86_radix::{FormatCtx, ACCESSED, ADDR_MASK, DIRTY, PRESENT, USER, WRITABLE};
use crate::addr::{Asid, PageSize, Pfn, BASE_SHIFT};
use crate::error::{Error, Result};
use crate::physmem::allocator::iceberg::cpfn;
use crate::physmem::allocator::iceberg::hash::IcebergHasher;
use crate::registry::Mechanism;

/// Arities the format takes (the paper's range, powers of two).
pub const ARITIES: [u32; 5] = [4, 8, 16, 32, 64];
const ARITY_NAMES: [&str; 5] = ["4", "8", "16", "32", "64"];

/// CPFNs in word 0, above the 12 flag bits.
const WORD0_CPFNS: u32 = 7;
/// CPFNs in every further word.
const WORD_CPFNS: u32 = 9;
const CPFN_BITS: u32 = 7;
const CPFN_MASK: u64 = 0x7F;
/// Flag bits of a leaf entry (word 0) that this model defines.
const FLAG_BITS: u64 = 0xFFF;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// 4 KiB pages per mosaic page.
    #[serde(default = "d_arity")]
    pub arity: u32,
}
fn d_arity() -> u32 {
    4
}
impl Default for Config {
    fn default() -> Self {
        Config { arity: d_arity() }
    }
}

#[derive(Clone, Debug)]
pub struct MosaicToc {
    levels: u32,
    arity: u32,
    log_arity: u32,
    entry_words: u32,
    /// Index bits of a leaf node.
    leaf_bits: u32,
    /// The pool's hash functions; `None` only for a format built to check a
    /// config (no physical memory yet), which then decodes no page.
    hasher: Option<IcebergHasher>,
}

const SIZES: [PageSize; 1] = [PageSize::Size4K];

/// 64-bit words of a leaf entry holding `arity` CPFNs (a power of two).
pub const fn entry_words_for(arity: u32) -> u32 {
    let extra = arity.saturating_sub(WORD0_CPFNS);
    let words = 1 + extra.div_ceil(WORD_CPFNS);
    words.next_power_of_two()
}

/// Word and bit of CPFN `i` in a leaf entry.
#[inline(always)]
const fn cpfn_pos(i: u32) -> (u32, u32) {
    if i < WORD0_CPFNS {
        (0, 12 + CPFN_BITS * i)
    } else {
        let j = i - WORD0_CPFNS;
        (1 + j / WORD_CPFNS, CPFN_BITS * (j % WORD_CPFNS))
    }
}

impl Mechanism for MosaicToc {
    const NAME: &'static str = "mosaic_toc";
    const SUMMARY: &'static str =
        "Mosaic Pages: x86 radix levels above leaves that map a mosaic page (arity 4..64) to a table of contents of 7-bit CPFNs (needs the iceberg allocator)";
    type Config = Config;
    type Ctx = FormatCtx;
    fn build(cfg: &Config, ctx: &FormatCtx) -> Result<Self> {
        if !ARITIES.contains(&cfg.arity) {
            return Err(Error::config_allowed(
                "pagetable.format.arity",
                format!("{} pages per mosaic page; the arity is a power of two from 4 to 64", cfg.arity),
                &ARITY_NAMES,
            ));
        }
        let levels = ctx.levels.unwrap_or(4);
        if !(levels == 4 || levels == 5) {
            return Err(Error::config_allowed(
                "pagetable.levels",
                format!("{levels} levels; the table-of-contents format keeps a 4- or 5-level x86 radix tree"),
                &["4", "5"],
            ));
        }
        let entry_words = entry_words_for(cfg.arity);
        debug_assert!(entry_words <= MAX_ENTRY_WORDS);
        Ok(MosaicToc {
            levels,
            arity: cfg.arity,
            log_arity: cfg.arity.trailing_zeros(),
            entry_words,
            leaf_bits: 9 - entry_words.trailing_zeros(),
            hasher: ctx.hasher.clone(),
        })
    }
}

impl MosaicToc {
    pub fn arity(&self) -> u32 {
        self.arity
    }

    /// CPFN `i` of the entry whose word 0 is `raw`.
    #[inline(always)]
    fn cpfn_at(&self, raw: u64, i: u32, word: &dyn Fn(u32) -> u64) -> u8 {
        let (k, bit) = cpfn_pos(i);
        let w = if k == 0 { raw } else { word(k) };
        ((w >> bit) & CPFN_MASK) as u8
    }

    /// The CPFNs of a leaf entry's words (`arity` of them).
    pub fn toc(&self, words: &[u64]) -> Vec<u8> {
        (0..self.arity).map(|i| self.cpfn_at(words[0], i, &|k| words[k as usize])).collect()
    }
}

impl PageTableFormat for MosaicToc {
    #[inline]
    fn levels(&self) -> u32 {
        self.levels
    }
    #[inline]
    fn level_shift(&self, level: u32) -> u32 {
        if level <= 1 {
            BASE_SHIFT + self.log_arity
        } else {
            BASE_SHIFT + self.log_arity + self.leaf_bits + 9 * (level - 2)
        }
    }
    #[inline]
    fn index(&self, va: u64, level: u32) -> u64 {
        let bits = if level <= 1 { self.leaf_bits } else { 9 };
        (va >> self.level_shift(level)) & ((1 << bits) - 1)
    }
    /// The widest entry: a leaf's.
    #[inline]
    fn entry_words(&self) -> u32 {
        self.entry_words
    }
    #[inline]
    fn level_entry_words(&self, level: u32) -> u32 {
        if level <= 1 {
            self.entry_words
        } else {
            1
        }
    }
    fn va_bits(&self) -> u32 {
        if self.levels == 4 {
            48
        } else {
            57
        }
    }
    fn sizes(&self) -> &[PageSize] {
        &SIZES
    }
    #[inline]
    fn leaf_level(&self, size: PageSize) -> Option<u32> {
        (size == PageSize::Size4K).then_some(1)
    }
    #[inline]
    fn decode(&self, raw: u64, level: u32, va: u64, asid: Asid, word: &dyn Fn(u32) -> u64) -> Step {
        if raw & PRESENT == 0 {
            return Step::NotPresent;
        }
        if level > 1 {
            return Step::Next { node: (raw & ADDR_MASK) >> BASE_SHIFT };
        }
        let vpn = va >> BASE_SHIFT;
        let c = self.cpfn_at(raw, (vpn & (self.arity as u64 - 1)) as u32, word);
        match self.hasher.as_ref().and_then(|h| cpfn::decode(c, asid, vpn, h)) {
            Some(pfn) => Step::Leaf { pfn_base: pfn.0, size: PageSize::Size4K },
            None => Step::NotPresent,
        }
    }
    /// A leaf is a ToC written page by page ([`Self::set_page`]), never one frame.
    fn encode_leaf(&self, _size: PageSize, _pfn: Pfn) -> u64 {
        debug_assert!(false, "a ToC leaf is written with set_page");
        0
    }
    fn set_page(&self, words: &mut [u64], va: u64, asid: Asid, pfn: Option<Pfn>) -> Result<()> {
        let vpn = va >> BASE_SHIFT;
        let code = match pfn {
            None => cpfn::UNMAPPED,
            Some(p) => {
                let slot = self.hasher.as_ref().and_then(|h| h.slot_of(p, asid, vpn));
                match slot {
                    Some(s) => cpfn::encode(s),
                    None => {
                        return Err(Error::config(
                            "pagetable.format",
                            format!(
                                "frame {:#x} is not one of the Iceberg slots of page {vpn:#x} (asid {asid}): the mosaic_toc format needs physmem.allocator = \"iceberg\" to place every 4 KiB page",
                                p.0
                            ),
                        ))
                    }
                }
            }
        };
        if words[0] & PRESENT == 0 {
            if pfn.is_none() {
                return Ok(());
            }
            // A fresh ToC: every page unmapped, the mosaic page present, writable, user.
            words.iter_mut().for_each(|w| *w = 0);
            words[0] = PRESENT | WRITABLE | USER;
            for i in 0..self.arity {
                let (k, bit) = cpfn_pos(i);
                words[k as usize] |= CPFN_MASK << bit;
            }
        }
        let (k, bit) = cpfn_pos((vpn & (self.arity as u64 - 1)) as u32);
        let w = &mut words[k as usize];
        *w = (*w & !(CPFN_MASK << bit)) | (code as u64) << bit;
        if pfn.is_none() && (0..self.arity).all(|i| self.cpfn_at(words[0], i, &|k| words[k as usize]) == cpfn::UNMAPPED) {
            // The last page of the group went: the entry is not present, flags and all.
            words.iter_mut().for_each(|w| *w = 0);
        }
        debug_assert!(words[0] & FLAG_BITS & !(PRESENT | WRITABLE | USER | ACCESSED | DIRTY) == 0);
        Ok(())
    }
}

#[cfg(test)]
mod tests;
