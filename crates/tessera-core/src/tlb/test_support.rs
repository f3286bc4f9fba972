//! Helpers shared by the organisations' unit tests: structure specs, and the
//! neighbour runs a walk would hand a fill.

use super::{Fill, Neighbours, Probe, Tlb, NOT_PRESENT};
use crate::addr::{Asid, PageSize};
use crate::config::spec::{Side, TlbSpec, Ways};
use crate::registry::MechanismSpec;

const K4: PageSize = PageSize::Size4K;

/// A level-1 data structure of organisation `kind` (parameters `params`, TOML) with replacement `repl`.
pub fn spec(entries: u32, ways: Ways, sizes: &[PageSize], kind: &str, params: &str, repl: &str) -> TlbSpec {
    TlbSpec {
        level: 1,
        side: Side::Data,
        page_sizes: sizes.to_vec(),
        entries,
        ways,
        latency: 0,
        replacement: MechanismSpec { kind: repl.into(), params: toml::Table::new() },
        organisation: MechanismSpec { kind: kind.into(), params: params.parse().unwrap() },
    }
}

/// Neighbours of 4 KiB page `vpn`: the aligned run of `len` pages, page k at
/// frame `frame(k)` (None: not present), dirty where `dirty` has a bit.
pub fn run(vpn: u64, len: u32, dirty: u64, frame: impl Fn(u64) -> Option<u64>) -> Neighbours {
    let mut nb = Neighbours::EMPTY;
    if len > 0 {
        nb.first_vpn = vpn & !(len as u64 - 1);
        nb.len = len;
        nb.dirty = dirty;
        for k in 0..len as u64 {
            nb.pfn[k as usize] = frame(k).unwrap_or(NOT_PRESENT);
        }
    }
    nb
}

pub fn fill4k(t: &mut Tlb, vpn: u64, asid: Asid, pfn: u64, nb: &Neighbours) {
    t.fill(&Fill { va: vpn << 12, asid, size: K4, pfn, dirty: false }, nb, false);
}

pub fn hit(pfn: u64) -> Probe {
    Probe::Hit { pfn, size: K4, dirty: false }
}
