//! The GTSM page table (`pagetable.format = "gt_pde"`): x86-64 paging whose
//! page directories hold 16-byte slots, each a GT-PDE (a superpage over a
//! slice of non-contiguous B-blocks) or 4 KiB-page PDEs.
//!
//! ## What it models
//! The tree of x86-64 4- or 5-level paging with the PD level widened as the
//! GTPTCR mode says ([`GtMode`], Table 3):
//! - a PD table is read at aligned 16-byte granularity, one slot per
//!   [`GtMode::entry_shift`] of virtual address: 256 slots in a 4 KiB table
//!   for the 4 MiB modes, 512 in 8 KiB for GT-PDE-2MB and P-GT-PDE-2MB,
//!   1024 in 16 KiB for GT-PDE-1MB (a PD node of 2 or 4 contiguous frames);
//! - a slot whose first word has bit 7 set is a GT-PDE (or a P-GT-PDE): the
//!   walk ends there, selecting the B-block of the address in the bitmap,
//!   and the TLBs get a 4 KiB translation ([`Step::Leaf`] of 4 KiB). The
//!   select costs `decode_cycles` more than a PDE (3 in the paper);
//! - otherwise the slot holds 4 KiB-page PDEs, each pointing to a 4 KiB
//!   page table of 512 PTEs that covers 2 MiB: two of them in a 4 MiB slot
//!   (word 0 for the lower 2 MiB, word 1 for the upper), one padded with 8
//!   zero bytes in a 2 MiB slot, and one padded with 24 in the 1 MiB mode,
//!   where the PDE of a 2 MiB region sits in its even slot: a walk for the
//!   odd 1 MiB half reads its own slot, finds the padding and reads the
//!   even slot as a second reference ([`PageTableFormat::padding_word`]).
//!
//! The page sizes are 4 KiB only: the TLBs see nothing else, and a process
//! uses either 2 MiB PDEs or GT-PDEs, never both (so THP is refused with
//! this format: it has no 2 MiB leaf). Superpages are mapped by the OS's
//! `gtsm` page-size policy ([`crate::page_size::gtsm`]), which writes the
//! two words of a GT-PDE ([`crate::pagetable::PageTable::map_words`]).
//! ## Paper
//! Du, Zhou, Childers, Mossé and Melhem, "Supporting superpages in
//! non-contiguous physical memory", HPCA 2015, DOI 10.1109/HPCA.2015.7056035:
//! §3.3–3.6, Figs. 5, 6 and 8, Table 3, §4.1 (GT-PDE access 8 cycles
//! against 5 for a PDE).
//! ## Choices where the paper is silent
//! - 1 MiB mode: when the even slot of a 2 MiB region holds a GT-PDE and a
//!   4 KiB page is needed in the odd half, its PDE goes in the odd slot
//!   itself (the paper places PDEs in even slots only, which would leave
//!   that half unmappable). A walk reads a PDE in its own slot first, so
//!   both layouts decode.
//! - Decode cycles are charged to every walk that reads a GT-PDE from
//!   memory or from the PDE cache, faulting or not; a 4 KiB-page PDE costs
//!   none.
//! ## Config
//! `pagetable.format = { kind = "gt_pde", mode = "gt_pde_4m" | "gt_pde_2m"
//! | "gt_pde_1m" | "p_gt_pde_2m" | "p_gt_pde_4m", decode_cycles = 3 }`,
//! `pagetable.levels = 4 | 5`.
//! ## Stats
//! None of its own; `walker.leaves_gt` counts walks that ended at a GT-PDE.

use serde::{Deserialize, Serialize};

use super::format::{PageTableFormat, Step};
use super::gt_pde::{GtMode, GtPde};
use super::x86_radix::{self, FormatCtx, PAGE_SIZE, PRESENT};
use crate::addr::{Asid, PageSize, Pfn};
use crate::error::{Error, Result};
use crate::registry::Mechanism;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// The GTPTCR mode (Table 3).
    #[serde(default = "d_mode")]
    pub mode: String,
    /// Cycles a GT-PDE's block select adds to a walk (3 in the paper).
    #[serde(default = "d_decode_cycles")]
    pub decode_cycles: u32,
}
fn d_mode() -> String {
    GtMode::Gt4M.name().to_string()
}
fn d_decode_cycles() -> u32 {
    3
}
impl Default for Config {
    fn default() -> Self {
        Config { mode: d_mode(), decode_cycles: d_decode_cycles() }
    }
}

/// Most cycles a GT-PDE decode may be configured to cost.
const MAX_DECODE_CYCLES: u32 = 1000;

const SIZES: [PageSize; 1] = [PageSize::Size4K];

#[derive(Clone, Debug)]
pub struct GtTable {
    levels: u32,
    mode: GtMode,
    decode_cycles: u32,
    /// `mode.entry_shift()`, read on every walk.
    entry_shift: u32,
}

impl Mechanism for GtTable {
    const NAME: &'static str = "gt_pde";
    const SUMMARY: &'static str =
        "x86-64 paging with 16-byte PD slots holding GT-PDEs: superpages over non-contiguous B-blocks (GTSM, HPCA 2015)";
    type Config = Config;
    type Ctx = FormatCtx;
    fn build(cfg: &Config, ctx: &FormatCtx) -> Result<Self> {
        let levels = ctx.levels.unwrap_or(4);
        if !(levels == 4 || levels == 5) {
            return Err(Error::config_allowed("pagetable.levels", format!("{levels} levels is not an x86-64 radix depth"), &["4", "5"]));
        }
        let mode = GtMode::parse(&cfg.mode, "pagetable.format.mode")?;
        if cfg.decode_cycles > MAX_DECODE_CYCLES {
            return Err(Error::config(
                "pagetable.format.decode_cycles",
                format!("{} cycles; a GT-PDE decode costs 0 to {MAX_DECODE_CYCLES}", cfg.decode_cycles),
            ));
        }
        Ok(GtTable { levels, mode, decode_cycles: cfg.decode_cycles, entry_shift: mode.entry_shift() })
    }
}

impl GtTable {
    /// The GTPTCR mode.
    pub fn mode(&self) -> GtMode {
        self.mode
    }

    /// Whether a slot holds two 4 KiB-page PDEs (the 4 MiB modes).
    #[inline(always)]
    fn two_pointers(&self) -> bool {
        self.entry_shift == 22
    }

    /// The two words of a GT-PDE, or a P-GT-PDE, as the OS writes them for
    /// a slice grant (`b` is the second slice of a pair).
    pub fn encode_gt(&self, a: Pfn, b: Option<Pfn>, bitmap: u64) -> Result<[u64; 2]> {
        let r = match b {
            None => GtPde::encode(self.mode, a.addr(), bitmap),
            Some(b) => GtPde::encode_pair(self.mode, a.addr(), b.addr(), bitmap),
        };
        r.map_err(|e| Error::config("pagetable.format.mode", format!("the OS asked for a GT-PDE the entry cannot hold: {e}")))
    }
}

impl PageTableFormat for GtTable {
    #[inline]
    fn levels(&self) -> u32 {
        self.levels
    }
    #[inline]
    fn level_shift(&self, level: u32) -> u32 {
        if level == 2 {
            self.entry_shift
        } else {
            x86_radix::level_shift(level)
        }
    }
    #[inline]
    fn index(&self, va: u64, level: u32) -> u64 {
        if level == 2 {
            self.mode.pd_index(va)
        } else {
            x86_radix::index(va, level)
        }
    }
    #[inline]
    fn entry_words(&self) -> u32 {
        2
    }
    #[inline(always)]
    fn level_entry_words(&self, level: u32) -> u32 {
        if level == 2 {
            2
        } else {
            1
        }
    }
    fn va_bits(&self) -> u32 {
        x86_radix::va_bits(self.levels)
    }
    fn sizes(&self) -> &[PageSize] {
        &SIZES
    }
    #[inline]
    fn leaf_level(&self, size: PageSize) -> Option<u32> {
        (size == PageSize::Size4K).then_some(1)
    }
    #[inline]
    fn decode(&self, raw: u64, level: u32, va: u64, _asid: Asid, word: &dyn Fn(u32) -> u64) -> Step {
        if level != 2 {
            // x86 entries; no 1 GiB leaf is ever written (4 KiB is the only size).
            return if raw & PRESENT == 0 {
                Step::NotPresent
            } else if level == 1 {
                Step::Leaf { pfn_base: x86_radix::frame(raw).0, size: PageSize::Size4K }
            } else {
                Step::Next { node: x86_radix::frame(raw).0 }
            };
        }
        if raw & PAGE_SIZE != 0 {
            return match GtPde::decode(self.mode, [raw, word(1)], self.mode.half(va)) {
                GtPde::Leaf(leaf) => Step::Leaf { pfn_base: leaf.translate(self.mode, va) >> 12, size: PageSize::Size4K },
                _ => Step::NotPresent,
            };
        }
        let t = self.table_word(va, 2);
        let pde = if t == 0 { raw } else { word(t) };
        if pde & PRESENT == 0 {
            Step::NotPresent
        } else {
            Step::Next { node: x86_radix::frame(pde).0 }
        }
    }
    fn encode_leaf(&self, size: PageSize, pfn: Pfn) -> u64 {
        debug_assert_eq!(size, PageSize::Size4K, "GT tables map 4 KiB pages through PTEs");
        x86_radix::Pte::leaf(PageSize::Size4K, pfn).encode()
    }
    #[inline(always)]
    fn table_word(&self, va: u64, level: u32) -> u32 {
        if level == 2 && self.two_pointers() {
            ((va >> 21) & 1) as u32
        } else {
            0
        }
    }
    #[inline(always)]
    fn node_shift(&self, level: u32) -> u32 {
        if level == 1 {
            // A PT covers 2 MiB; in the 1 MiB mode a pointer is cached and
            // hinted per slot, since the other half may be a GT-PDE.
            self.entry_shift.min(21)
        } else {
            self.level_shift(level + 1)
        }
    }
    #[inline(always)]
    fn decode_cycles(&self, raw: u64, level: u32) -> u32 {
        if level == 2 && raw & (PAGE_SIZE | PRESENT) == PAGE_SIZE | PRESENT {
            self.decode_cycles
        } else {
            0
        }
    }
    #[inline(always)]
    fn node_order(&self, level: u32) -> u32 {
        if level == 2 {
            (self.mode.pd_table_bytes() >> 12).trailing_zeros()
        } else {
            0
        }
    }
    #[inline(always)]
    fn psc_caches_entries(&self, level: u32) -> bool {
        // The PDE cache holds 16-byte slots: GT-PDEs with their bitmaps.
        level == 2
    }
    #[inline]
    fn padding_word(&self, va: u64, level: u32) -> Option<u64> {
        (level == 2 && self.entry_shift == 20 && self.mode.pd_index(va) & 1 == 1).then(|| (self.mode.pd_index(va) - 1) * 2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pagetable::format::FormatExt;

    fn table(mode: GtMode) -> GtTable {
        GtTable::build(&Config { mode: mode.name().into(), decode_cycles: 3 }, &FormatCtx::default()).unwrap()
    }

    #[test]
    fn pd_slots_cover_the_mode_s_entry_and_tables_widen() {
        for (mode, shift, order, slots) in
            [(GtMode::Gt4M, 22, 0, 256), (GtMode::Gt2M, 21, 1, 512), (GtMode::Gt1M, 20, 2, 1024), (GtMode::Pgt2M, 21, 1, 512), (GtMode::Pgt4M, 22, 0, 256)]
        {
            let t = table(mode);
            assert_eq!(t.level_shift(2), shift, "{mode:?}");
            assert_eq!(t.node_order(2), order, "{mode:?}");
            assert_eq!(t.index(u64::MAX, 2) + 1, slots, "{mode:?}");
            // A PD table is 16 bytes per slot.
            assert_eq!(slots * 16, 4096 << order, "{mode:?}");
            assert_eq!(t.word(u64::MAX, 2), 2 * (slots - 1));
            assert_eq!(t.node_shift(1), shift.min(21));
        }
    }

    #[test]
    fn a_4m_slot_holds_two_pdes_and_decodes_each_half() {
        let t = table(GtMode::Gt4M);
        let lo = x86_radix::Pte::table(Pfn(0x111)).encode();
        let hi = x86_radix::Pte::table(Pfn(0x222)).encode();
        let words = [lo, hi];
        let va = 5 << 22;
        assert_eq!(t.decode(words[0], 2, va, 0, &|k| words[k as usize]), Step::Next { node: 0x111 });
        assert_eq!(t.decode(words[0], 2, va | 1 << 21, 0, &|k| words[k as usize]), Step::Next { node: 0x222 });
        let words = [0, hi];
        assert_eq!(t.decode(0, 2, va, 0, &|k| words[k as usize]), Step::NotPresent);
        assert_eq!(t.decode(0, 2, va | 1 << 21, 0, &|k| words[k as usize]), Step::Next { node: 0x222 });
        assert_eq!(t.decode_cycles(lo, 2), 0);
    }

    #[test]
    fn a_gt_pde_selects_the_block_and_costs_its_decode() {
        let t = table(GtMode::Gt4M);
        // Blocks 0, 2, 4, ... 62 of an 8 MiB slice at 16 MiB.
        let bitmap = 0x5555_5555_5555_5555u64;
        let w = t.encode_gt(Pfn(16 << 8), None, bitmap).unwrap();
        let va = (7 << 22) | (3 << 17) | 0x1234;
        let Step::Leaf { pfn_base, size } = t.decode(w[0], 2, va, 0, &|k| w[k as usize]) else { panic!() };
        assert_eq!(size, PageSize::Size4K);
        // Virtual block 3 is the 4th set bit: B-block 6, 128 KiB each.
        assert_eq!(pfn_base, ((16 << 20) + 6 * (128 << 10) + 0x1000) >> 12);
        assert_eq!(t.decode_cycles(w[0], 2), 3);
    }

    #[test]
    fn only_the_1m_mode_s_odd_slots_read_their_even_neighbour() {
        let t = table(GtMode::Gt1M);
        assert_eq!(t.padding_word(3 << 20, 2), Some(4));
        assert_eq!(t.padding_word(2 << 20, 2), None);
        assert_eq!(t.padding_word(3 << 20, 1), None);
        for mode in [GtMode::Gt4M, GtMode::Gt2M, GtMode::Pgt2M, GtMode::Pgt4M] {
            assert_eq!(table(mode).padding_word(3 << 20, 2), None, "{mode:?}");
        }
    }

    #[test]
    fn bad_config_names_the_key() {
        let e = GtTable::build(&Config { mode: "gt_pde_8m".into(), decode_cycles: 3 }, &FormatCtx::default()).unwrap_err();
        assert!(e.to_string().contains("pagetable.format.mode"), "{e}");
        let e = GtTable::build(&Config { mode: "gt_pde_4m".into(), decode_cycles: 5000 }, &FormatCtx::default()).unwrap_err();
        assert!(e.to_string().contains("pagetable.format.decode_cycles"), "{e}");
        let e = GtTable::build(&Config::default(), &FormatCtx { levels: Some(3), ..Default::default() }).unwrap_err();
        assert!(e.to_string().contains("pagetable.levels"), "{e}");
    }
}
