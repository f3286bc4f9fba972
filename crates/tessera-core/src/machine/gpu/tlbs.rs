//! The GPU's TLBs: a level is one set-associative array per page size it
//! holds (the Mosaic paper's base and large arrays), probed largest first,
//! with a lookup latency and ports; and the miss-status registers that
//! merge misses to one page while it is being translated.
//!
//! ## Choices
//! - Entries are tagged with the ASID (the shared L2 TLB is ASID-tagged;
//!   each SM runs one application, so its L1 TLB holds one ASID's entries
//!   in practice, and the tag costs nothing).
//! - Probe order: the large arrays first; a hit there skips the base array
//!   (the paper, §2.2; the authors' code probes the one array an oracle
//!   picks, which counts fewer base lookups and finds the same entry).
//! - Ports: a level starts `ports` lookups per cycle, in arrival order.
//! - A fill goes to the array of the translation's size; a level with no
//!   array of that size is not filled.
//! - MSHRs are keyed by (ASID, 4 KiB page): the size is unknown until the
//!   walk ends, so two misses to different 4 KiB pages of one 2 MiB page
//!   are two entries. A walk's translation answers every *queued* miss it
//!   covers (no second walk); one already walking finishes its own walk.

use rustc_hash::FxHashMap;

use super::spec::GpuTlbSpec;
use crate::addr::{Asid, PageSize};
use crate::error::Result;
use crate::registry::MechanismSpec;
use crate::replacement::{AnyReplacement, Geometry};
use crate::rng::sub_seed;
use crate::stats::StatVisitor;
use crate::table::SetAssoc;

/// One array of a level: entries of one page size.
#[derive(Clone, Debug)]
struct Array {
    size: PageSize,
    set_mask: u64,
    table: SetAssoc<u64, u64>,
}

/// Counters of one TLB level, with per-size hits.
#[derive(Clone, Debug, Default)]
pub struct TlbLevelStats {
    pub lookups: u64,
    pub hits: u64,
    pub misses: u64,
    /// Misses that found their page's translation already on its way (hit reserved).
    pub mshr_merges: u64,
    pub fills: u64,
    pub invalidations: u64,
    pub hits_by_size: [u64; PageSize::COUNT],
    pub lookups_by_size: [u64; PageSize::COUNT],
}

/// A TLB level of the GPU.
#[derive(Clone, Debug)]
pub struct TlbLevel {
    arrays: Vec<Array>,
    pub latency: u64,
    ports: u32,
    /// The cycle whose ports are being handed out, and how many are taken.
    port_cycle: u64,
    ports_used: u32,
    pub stats: TlbLevelStats,
}

/// The tag of `va`'s page of `size` in `asid`: the page number with the ASID above it.
#[inline]
fn tag(asid: Asid, va: u64, size: PageSize) -> u64 {
    (va >> size.shift()) | (asid as u64) << 52
}

impl TlbLevel {
    pub fn build(spec: &GpuTlbSpec, path: &str, seed: u64) -> Result<TlbLevel> {
        let lru = MechanismSpec { kind: "lru".into(), params: toml::Table::new() };
        let mut arrays = Vec::new();
        for (size, sets, ways) in spec.geometry(path)? {
            let apath = format!("{path}.arrays.{}", PageSize::NAMES[size.index()]);
            let geom = Geometry { sets, ways, seed: sub_seed(seed, &apath) };
            let repl = AnyReplacement::build(&lru, &geom, &apath)?;
            arrays.push(Array { size, set_mask: sets as u64 - 1, table: SetAssoc::new(sets, ways, repl) });
        }
        Ok(TlbLevel { arrays, latency: spec.latency, ports: spec.ports, port_cycle: 0, ports_used: 0, stats: TlbLevelStats::default() })
    }

    /// A level with no arrays is absent (Power et al.'s design: L1 TLBs,
    /// then the walker): it takes no time and counts no lookups.
    #[inline]
    pub fn absent(&self) -> bool {
        self.arrays.is_empty()
    }

    /// The cycle a lookup arriving at `t` starts: the first cycle from `t`
    /// with a free port.
    #[inline]
    pub fn port(&mut self, t: u64) -> u64 {
        if t > self.port_cycle {
            self.port_cycle = t;
            self.ports_used = 0;
        }
        if self.ports_used == self.ports {
            self.port_cycle += 1;
            self.ports_used = 0;
        }
        self.ports_used += 1;
        self.port_cycle
    }

    /// Look `va` up: the page's first frame and size on a hit. Counts it.
    #[inline]
    pub fn lookup(&mut self, asid: Asid, va: u64) -> Option<(u64, PageSize)> {
        self.stats.lookups += 1;
        for a in &mut self.arrays {
            let t = tag(asid, va, a.size);
            self.stats.lookups_by_size[a.size.index()] += 1;
            if let Some(slot) = a.table.lookup((t & a.set_mask) as u32, t) {
                self.stats.hits += 1;
                self.stats.hits_by_size[a.size.index()] += 1;
                return Some((a.table.data(slot), a.size));
            }
        }
        self.stats.misses += 1;
        None
    }

    /// Install the translation of `va`'s page of `size` (first frame `pfn_base`).
    #[inline]
    pub fn fill(&mut self, asid: Asid, va: u64, size: PageSize, pfn_base: u64) {
        if let Some(a) = self.arrays.iter_mut().find(|a| a.size == size) {
            let t = tag(asid, va, size);
            a.table.insert((t & a.set_mask) as u32, t, pfn_base);
            self.stats.fills += 1;
        }
    }

    /// Drop the entry of `va`'s page of `size`; returns the entries removed.
    pub fn invalidate(&mut self, asid: Asid, va: u64, size: PageSize) -> u64 {
        let mut n = 0;
        for a in self.arrays.iter_mut().filter(|a| a.size == size) {
            let t = tag(asid, va, size);
            n += a.table.invalidate((t & a.set_mask) as u32, t) as u64;
        }
        self.stats.invalidations += n;
        n
    }

    /// Whether the level has an array for `size`.
    pub fn holds(&self, size: PageSize) -> bool {
        self.arrays.iter().any(|a| a.size == size)
    }

    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let s = &self.stats;
        v.counter("lookups", s.lookups, "lookups", "translations looked up");
        v.counter("hits", s.hits, "lookups", "lookups that hit an entry of any size");
        v.counter("misses", s.misses, "lookups", "lookups that hit no entry");
        v.counter("mshr_merges", s.mshr_merges, "lookups", "misses merged into a miss to the same page already on its way (hit reserved)");
        v.counter("fills", s.fills, "entries", "entries installed");
        v.counter("invalidations", s.invalidations, "entries", "entries dropped by shootdowns");
        for a in &self.arrays {
            let i = a.size.index();
            let name = PageSize::NAMES[i];
            v.counter(&format!("{name}.lookups"), s.lookups_by_size[i], "lookups", "lookups that probed this page size's array");
            v.counter(&format!("{name}.hits"), s.hits_by_size[i], "lookups", "hits in this page size's array");
        }
    }
}

/// Miss-status registers of one TLB level: misses on their way, keyed by
/// (ASID, 4 KiB page), each with the requests waiting for it. Entries are
/// slots reused after they retire, so steady state allocates nothing.
#[derive(Clone, Debug)]
pub struct Mshrs<W> {
    by_page: FxHashMap<(Asid, u64), u32>,
    entries: Vec<MshrEntry<W>>,
    free: Vec<u32>,
    /// Most entries in use at once.
    pub peak: u64,
}

#[derive(Clone, Debug)]
pub struct MshrEntry<W> {
    pub asid: Asid,
    pub va: u64,
    pub live: bool,
    pub waiters: Vec<W>,
    /// Its miss waits on a far fault (thread oversubscription watches it).
    pub faulted: bool,
}

impl<W> Default for Mshrs<W> {
    fn default() -> Self {
        Mshrs { by_page: FxHashMap::default(), entries: Vec::new(), free: Vec::new(), peak: 0 }
    }
}

impl<W> Mshrs<W> {
    /// The entry for `va`'s 4 KiB page: (id, true) if one was already on
    /// its way (the caller merges), else a new entry (id, false).
    #[inline]
    pub fn find_or_add(&mut self, asid: Asid, va: u64) -> (u32, bool) {
        let key = (asid, va >> 12);
        if let Some(&id) = self.by_page.get(&key) {
            return (id, true);
        }
        let id = match self.free.pop() {
            Some(id) => {
                let e = &mut self.entries[id as usize];
                (e.asid, e.va, e.live, e.faulted) = (asid, va, true, false);
                id
            }
            None => {
                self.entries.push(MshrEntry { asid, va, live: true, waiters: Vec::new(), faulted: false });
                self.entries.len() as u32 - 1
            }
        };
        self.by_page.insert(key, id);
        self.peak = self.peak.max(self.by_page.len() as u64);
        (id, false)
    }

    #[inline]
    pub fn get(&self, id: u32) -> &MshrEntry<W> {
        &self.entries[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut MshrEntry<W> {
        &mut self.entries[id as usize]
    }

    /// Retire entry `id`: its waiters are moved into `out` (cleared first).
    pub fn retire(&mut self, id: u32, out: &mut Vec<W>) {
        let e = &mut self.entries[id as usize];
        debug_assert!(e.live, "MSHR {id} retired twice");
        e.live = false;
        self.by_page.remove(&(e.asid, e.va >> 12));
        out.clear();
        out.append(&mut e.waiters);
        self.free.push(id);
    }

    /// Live entries of `asid` whose page lies in `[va, va + bytes)`.
    pub fn covered(&self, asid: Asid, va: u64, bytes: u64, out: &mut Vec<u32>) {
        out.clear();
        if bytes == 4096 {
            out.extend(self.by_page.get(&(asid, va >> 12)));
            return;
        }
        out.extend(
            self.entries
                .iter()
                .enumerate()
                .filter(|(_, e)| e.live && e.asid == asid && e.va >= va && e.va - va < bytes)
                .map(|(i, _)| i as u32),
        );
        // Entry order, not hash order: deterministic.
    }

    pub fn live(&self) -> usize {
        self.by_page.len()
    }
}

/// Shootdowns the machine has made, so a translation a walk read before
/// one of them is not filled after it: hardware drops a fill whose page a
/// shootdown invalidated while the walk was in flight, and the access
/// translates again.
#[derive(Clone, Debug, Default)]
pub struct Shootdowns {
    /// (cycle, asid, first byte, bytes), oldest first.
    log: std::collections::VecDeque<(u64, Asid, u64, u64)>,
}

impl Shootdowns {
    /// The page of `size` at `va` in `asid` was shot down at `t`.
    pub fn record(&mut self, t: u64, asid: Asid, va: u64, size: PageSize) {
        self.log.push_back((t, asid, va & !(size.bytes() - 1), size.bytes()));
    }

    /// Whether a shootdown at or after `since` covers `va` in `asid`.
    pub fn stale(&self, asid: Asid, va: u64, since: u64) -> bool {
        self.log.iter().rev().take_while(|e| e.0 >= since).any(|&(_, a, base, bytes)| a == asid && va >= base && va - base < bytes)
    }

    /// Forget shootdowns before `t` (no walk in flight started earlier).
    pub fn forget_before(&mut self, t: u64) {
        while self.log.front().is_some_and(|e| e.0 < t) {
            self.log.pop_front();
        }
    }

    pub fn is_empty(&self) -> bool {
        self.log.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::spec::Ways;

    fn level(latency: u64, ports: u32) -> TlbLevel {
        let mut spec = super::super::spec::GpuSpec::default().l2_tlb;
        spec.arrays.get_mut("4k").unwrap().ways = Ways::N(4);
        spec.latency = latency;
        spec.ports = ports;
        TlbLevel::build(&spec, "gpu.l2_tlb", 1).unwrap()
    }

    #[test]
    fn large_entries_are_found_before_base_ones_and_asids_stay_apart() {
        let mut t = level(10, 2);
        assert_eq!(t.lookup(1, 0x20_0000), None);
        t.fill(1, 0x20_0000, PageSize::Size2M, 0x400);
        t.fill(1, 0x20_1000, PageSize::Size4K, 0x77);
        assert_eq!(t.lookup(1, 0x20_1abc), Some((0x400, PageSize::Size2M)));
        assert_eq!(t.lookup(2, 0x20_1abc), None);
        assert_eq!(t.stats.hits_by_size[PageSize::Size2M.index()], 1);
        assert_eq!(t.invalidate(1, 0x20_0000, PageSize::Size2M), 1);
        assert_eq!(t.lookup(1, 0x20_1abc), Some((0x77, PageSize::Size4K)));
    }

    #[test]
    fn ports_start_that_many_lookups_per_cycle_in_arrival_order() {
        let mut t = level(10, 2);
        assert_eq!([t.port(5), t.port(5), t.port(5), t.port(5), t.port(5)], [5, 5, 6, 6, 7]);
        assert_eq!(t.port(20), 20);
    }

    #[test]
    fn a_shootdown_after_a_walk_began_makes_its_fill_stale() {
        let mut s = Shootdowns::default();
        s.record(100, 1, 0x20_1000, PageSize::Size2M);
        assert!(s.stale(1, 0x20_5000, 50), "the walk began before the shootdown");
        assert!(!s.stale(1, 0x20_5000, 101), "the walk began after it");
        assert!(!s.stale(2, 0x20_5000, 50), "another address space");
        assert!(!s.stale(1, 0x40_0000, 50), "another page");
        s.forget_before(101);
        assert!(s.is_empty());
    }

    #[test]
    fn mshrs_merge_misses_to_one_page_and_reuse_their_slots() {
        let mut m: Mshrs<u32> = Mshrs::default();
        let (a, merged) = m.find_or_add(1, 0x5000);
        assert!(!merged);
        m.get_mut(a).waiters.push(7);
        let (b, merged) = m.find_or_add(1, 0x5fff);
        assert!(merged && a == b);
        m.get_mut(b).waiters.push(8);
        assert!(!m.find_or_add(2, 0x5000).1, "another address space's page is another miss");
        let mut got = Vec::new();
        m.covered(1, 0, 2 << 20, &mut got);
        assert_eq!(got, vec![a]);
        m.retire(a, &mut got);
        assert_eq!(got, vec![7, 8]);
        let (c, merged) = m.find_or_add(1, 0x9000);
        assert!(!merged);
        assert_eq!(c, a, "a retired slot is reused");
        assert_eq!(m.peak, 2);
    }
}
