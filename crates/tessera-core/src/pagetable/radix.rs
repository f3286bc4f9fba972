//! A radix page table whose depth and index bits per level are set by config.
//!
//! ## What it models
//! GPU page tables, and any radix tree that is not x86's 4 × 9 bits: the
//! levels and the index bits of each (root first) are parameters, the entry
//! width is 8 or 16 bytes, and a leaf may sit at any level below the root
//! whose entries cover a page size Tessera knows (4 KiB at level 1; 64 KiB,
//! 2 MiB or 1 GiB above). With `bits = [9, 9, 9, 9]` and 8-byte entries it
//! walks exactly like x86-64 4-level paging.
//!
//! The first word of an entry uses the x86 bit layout (present, writable,
//! user, accessed, dirty, page size `PS` at bit 7, frame in bits 12..=51);
//! the second word of a 16-byte entry is reserved (written as zero).
//!
//! With `large_reads_next = true` a large page keeps the node below it, as
//! in GPU Mosaic's in-place coalescing: the large entry's `PS` bit is set but
//! its frame field still points at the next level's node, whose entries map
//! the page's 4 KiB pieces; a walk that meets the bit reads the one entry of
//! that node for its address and caches the whole large page. In-place
//! coalescing ([`super::coalesce`]) sets that bit over the node's mapped
//! pieces (512 of 4 KiB, or 32 of 64 KiB), and bit 9 (Mosaic's *disabled*
//! bit) in each of them. Only 2 MiB and larger entries keep their node: a
//! 64 KiB entry is always a page of its own.
//! ## Paper
//! Mosaic (Ausavarungnirun et al., MICRO 2017, DOI 10.1145/3123939.3123975),
//! §4.3 (large-page bit, first L4 PTE); GPU-MMU baselines (Power et al., HPCA 2014).
//! ## Choices where the papers are silent
//! - A node is one 4 KiB frame: `2^bits × entry_bytes` must fit in it.
//! - Virtual-address bits above `va_bits` are ignored (as x86 ignores the
//!   canonical upper half); the index bits must cover `va_bits`.
//! ## Config
//! `pagetable.format = { kind = "radix", bits = [9, 9, 9, 9], va_bits = 48,
//! entry_bytes = 8, large_reads_next = false }`.
//! ## Stats
//! None of its own (see [`super::PageTable`]).

use serde::{Deserialize, Serialize};

use super::format::{PageTableFormat, Step};
use super::x86_radix::{FormatCtx, Pte, ADDR_MASK, PAGE_SIZE, PRESENT};
use crate::addr::{PageSize, Pfn, BASE_SHIFT};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

/// Mosaic's disabled bit in a 4 KiB entry of a coalesced large page.
pub const DISABLED: u64 = 1 << 9;

/// Most levels a radix tree may have.
pub const MAX_LEVELS: usize = 6;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Index bits of each level, root first.
    #[serde(default = "d_bits")]
    pub bits: Vec<u32>,
    /// Virtual-address bits translated.
    #[serde(default = "d_va_bits")]
    pub va_bits: u32,
    /// Bytes per entry: 8 or 16.
    #[serde(default = "d_entry_bytes")]
    pub entry_bytes: u32,
    /// A large page keeps its node below, read by the walk (GPU Mosaic).
    #[serde(default)]
    pub large_reads_next: bool,
}
fn d_bits() -> Vec<u32> {
    vec![9, 9, 9, 9]
}
fn d_va_bits() -> u32 {
    48
}
fn d_entry_bytes() -> u32 {
    8
}
impl Default for Config {
    fn default() -> Self {
        Config { bits: d_bits(), va_bits: d_va_bits(), entry_bytes: d_entry_bytes(), large_reads_next: false }
    }
}

#[derive(Clone, Debug)]
pub struct Radix {
    levels: u32,
    /// Per level (index = level), the shift of the range one entry covers.
    shift: [u32; MAX_LEVELS + 2],
    /// Per level, the index mask.
    mask: [u64; MAX_LEVELS + 2],
    va_bits: u32,
    entry_words: u32,
    large_reads_next: bool,
    sizes: Vec<PageSize>,
    /// Per page-size index, the level whose leaves map it (0: none).
    leaf_level: [u32; PageSize::COUNT],
}

impl Mechanism for Radix {
    const NAME: &'static str = "radix";
    const SUMMARY: &'static str =
        "radix table with index bits per level, 8- or 16-byte entries, leaves at any level covering a known page size (GPU tables)";
    type Config = Config;
    type Ctx = FormatCtx;
    fn build(cfg: &Config, ctx: &FormatCtx) -> Result<Self> {
        let p = "pagetable.format";
        let n = cfg.bits.len();
        if !(2..=MAX_LEVELS).contains(&n) {
            return Err(Error::config(format!("{p}.bits"), format!("{n} levels; a radix table has 2 to {MAX_LEVELS}")));
        }
        // `pagetable.levels` is x86_radix's depth (presets write it); this
        // format's depth is `bits`, and the resolved config records that.
        let _ = ctx.levels;
        if !(cfg.entry_bytes == 8 || cfg.entry_bytes == 16) {
            return Err(Error::config_allowed(format!("{p}.entry_bytes"), format!("{} bytes", cfg.entry_bytes), &["8", "16"]));
        }
        let max_bits = (4096 / cfg.entry_bytes).trailing_zeros();
        if let Some(&b) = cfg.bits.iter().find(|&&b| b == 0 || b > max_bits) {
            return Err(Error::config(
                format!("{p}.bits"),
                format!("{b} index bits: each level needs 1 to {max_bits} bits so a node of {}-byte entries fits in a 4 KiB frame", cfg.entry_bytes),
            ));
        }
        let total: u32 = BASE_SHIFT + cfg.bits.iter().sum::<u32>();
        if cfg.va_bits < 13 || cfg.va_bits > 64 {
            return Err(Error::config(format!("{p}.va_bits"), format!("{} bits; must be 13 to 64", cfg.va_bits)));
        }
        if total < cfg.va_bits || total > 64 {
            return Err(Error::config(
                format!("{p}.bits"),
                format!(
                    "12 offset bits plus {:?} index bits make {total}; they must cover va_bits = {} and not exceed 64",
                    cfg.bits, cfg.va_bits
                ),
            ));
        }
        let mut r = Radix {
            levels: n as u32,
            shift: [0; MAX_LEVELS + 2],
            mask: [0; MAX_LEVELS + 2],
            va_bits: cfg.va_bits,
            entry_words: cfg.entry_bytes / 8,
            large_reads_next: cfg.large_reads_next,
            sizes: Vec::new(),
            leaf_level: [0; PageSize::COUNT],
        };
        // bits[0] is the root (level n), bits[n-1] level 1.
        let mut shift = BASE_SHIFT;
        for level in 1..=n {
            let b = cfg.bits[n - level];
            r.shift[level] = shift;
            r.mask[level] = (1 << b) - 1;
            if let Some(size) = PageSize::from_shift(shift) {
                // Leaves below the root only; the root maps no page.
                if level < n && (level == 1 || size != PageSize::Size4K) {
                    r.sizes.push(size);
                    r.leaf_level[size.index()] = level as u32;
                }
            }
            shift += b;
        }
        if cfg.large_reads_next {
            // The node a large page keeps holds its pieces, which must be
            // pages of their own (4 or 64 KiB): a 2 MiB page over a level
            // of 4 KiB or 64 KiB leaves, never a 1 GiB page over 2 MiB ones.
            let plain = |level: u32| PageSize::ALL.iter().any(|&p| p < PageSize::Size2M && r.leaf_level[p.index()] == level);
            let keep: Vec<bool> = PageSize::ALL.iter().map(|&s| s < PageSize::Size2M || plain(r.leaf_level[s.index()] - 1)).collect();
            r.sizes.retain(|&s| keep[s.index()]);
            for s in PageSize::ALL {
                if !keep[s.index()] {
                    r.leaf_level[s.index()] = 0;
                }
            }
        }
        Ok(r)
    }
}

impl PageTableFormat for Radix {
    #[inline]
    fn levels(&self) -> u32 {
        self.levels
    }
    #[inline]
    fn level_shift(&self, level: u32) -> u32 {
        self.shift[level as usize]
    }
    #[inline]
    fn index(&self, va: u64, level: u32) -> u64 {
        (va >> self.shift[level as usize]) & self.mask[level as usize]
    }
    #[inline]
    fn entry_words(&self) -> u32 {
        self.entry_words
    }
    fn va_bits(&self) -> u32 {
        self.va_bits
    }
    fn sizes(&self) -> &[PageSize] {
        &self.sizes
    }
    #[inline]
    fn leaf_level(&self, size: PageSize) -> Option<u32> {
        Some(self.leaf_level[size.index()]).filter(|&l| l != 0)
    }
    #[inline]
    fn decode(&self, raw: u64, level: u32, _va: u64, _asid: crate::addr::Asid, _word: &dyn Fn(u32) -> u64) -> Step {
        if raw & PRESENT == 0 {
            return Step::NotPresent;
        }
        let frame = (raw & ADDR_MASK) >> BASE_SHIFT;
        if level == 1 {
            return Step::Leaf { pfn_base: frame, size: PageSize::Size4K };
        }
        if raw & PAGE_SIZE != 0 {
            if let Some(size) = PageSize::from_shift(self.shift[level as usize]) {
                // 64 KiB entries are pages of their own (a GPU's base pages), never coalesced.
                return if self.large_reads_next && size >= PageSize::Size2M {
                    Step::LargeViaNext { node: frame, size }
                } else {
                    Step::Leaf { pfn_base: frame, size }
                };
            }
        }
        Step::Next { node: frame }
    }
    fn encode_leaf(&self, size: PageSize, pfn: Pfn) -> u64 {
        Pte { large: size != PageSize::Size4K, ..Pte::leaf(size, pfn) }.encode()
    }
    fn large_keeps_node(&self) -> bool {
        self.large_reads_next
    }
    /// Bit 9, one of x86's bits left to software (ignored by the walk).
    fn disabled_bit(&self) -> u64 {
        if self.large_reads_next {
            DISABLED
        } else {
            0
        }
    }
    /// A walk shortcut starts at a leaf node, which would skip a large
    /// entry that keeps its node.
    fn allows_shortcuts(&self) -> bool {
        !self.large_reads_next
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn build(cfg: Config) -> Result<Radix> {
        Radix::build(&cfg, &FormatCtx::default())
    }

    #[test]
    fn nine_bit_levels_index_like_x86() {
        let r = build(Config::default()).unwrap();
        let x = super::super::x86_radix::X86Radix::build(&Default::default(), &FormatCtx { levels: Some(4), ..Default::default() }).unwrap();
        for va in [0u64, 0x7fff_1234_5678, 0x1234_5000, u64::MAX >> 16] {
            for level in 1..=4 {
                assert_eq!(r.index(va, level), x.index(va, level));
                assert_eq!(r.level_shift(level), x.level_shift(level));
            }
        }
        assert_eq!(r.sizes(), x.sizes());
        assert_eq!(r.va_bits(), 48);
    }

    #[test]
    fn a_gpu_style_table_maps_64k_pages() {
        // 4 KiB pages, 16 per 64 KiB leaf node entry span, 32 of those per 2 MiB.
        let r = build(Config { bits: vec![9, 9, 9, 5, 4], va_bits: 48, ..Config::default() }).unwrap();
        assert_eq!(r.sizes(), &[PageSize::Size4K, PageSize::Size64K, PageSize::Size2M, PageSize::Size1G]);
        assert_eq!(r.leaf_level(PageSize::Size64K), Some(2));
        assert_eq!(r.leaf_level(PageSize::Size2M), Some(3));
        assert_eq!(r.index(0xf << 12, 1), 0xf);
        assert_eq!(r.index(0x1f << 16, 2), 0x1f);
        let raw = r.encode_leaf(PageSize::Size64K, Pfn(16 * 5));
        assert_eq!(r.decode(raw, 2, 0, 0, &|_| 0), Step::Leaf { pfn_base: 80, size: PageSize::Size64K });
    }

    #[test]
    fn sixteen_byte_entries_halve_the_bits_a_node_holds() {
        let r = build(Config { bits: vec![9, 9, 8, 8, 8], entry_bytes: 16, va_bits: 48, ..Config::default() });
        assert!(r.is_err(), "9 bits of 16-byte entries do not fit a 4 KiB node");
        let r = build(Config { bits: vec![8, 8, 8, 8, 8], entry_bytes: 16, va_bits: 52, ..Config::default() }).unwrap();
        assert_eq!(r.entry_words(), 2);
    }

    #[test]
    fn bad_geometries_name_their_keys() {
        let cases = [
            (Config { bits: vec![9, 9, 9], ..Config::default() }, "pagetable.format.bits"),
            (Config { bits: vec![9], ..Config::default() }, "pagetable.format.bits"),
            (Config { bits: vec![9, 0, 9, 9], ..Config::default() }, "pagetable.format.bits"),
            (Config { entry_bytes: 12, ..Config::default() }, "pagetable.format.entry_bytes"),
            (Config { va_bits: 70, ..Config::default() }, "pagetable.format.va_bits"),
        ];
        for (cfg, key) in cases {
            match build(cfg) {
                Err(Error::Config { path, .. }) => assert_eq!(path, key),
                other => panic!("expected an error at {key}, got {other:?}"),
            }
        }
        let r = Radix::build(&Config::default(), &FormatCtx { levels: Some(5), ..Default::default() }).unwrap();
        assert_eq!(r.levels(), 4, "the depth is the bits', whatever x86's pagetable.levels says");
    }

    #[test]
    fn large_reads_next_keeps_the_node() {
        let r = build(Config { large_reads_next: true, ..Config::default() }).unwrap();
        let raw = Pte::table(Pfn(77)).encode() | PAGE_SIZE;
        assert_eq!(r.decode(raw, 2, 0, 0, &|_| 0), Step::LargeViaNext { node: 77, size: PageSize::Size2M });
        assert!(r.large_keeps_node());
    }
}
