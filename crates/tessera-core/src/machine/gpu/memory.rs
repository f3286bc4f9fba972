//! The GPU's data memory and its timing: a private L1 data cache per SM,
//! a shared L2 split into banks, and DRAM channels with a latency and a
//! bandwidth; page-walk references take the same L2 and DRAM (after an
//! optional page-walk cache), so walks and data compete.
//!
//! ## Timing (the arrays know nothing of time: [`crate::cache::CacheLevel`])
//! - A bank serves one reference per cycle: a reference arriving at `t`
//!   starts at the later of `t` and the bank's next free cycle (banks are
//!   interleaved by line).
//! - A channel sends one line in `line / bytes_per_cycle` cycles: a miss
//!   leaves the L2 after its latency, waits for its channel, and its data is
//!   back `latency` cycles after the channel starts it, plus the burst.
//! - Misses to a line already on its way merge: an array installs a line
//!   at once, so a later reference hits it, and is served no earlier than
//!   the line arrives (per level, a map of lines in flight).
//! - References are reserved when the machine makes them, which is in
//!   cycle order up to the latency between a request and its arrival (an
//!   L1 miss reaches the L2 one L1 latency later): the error is bounded by
//!   that latency and documented, in exchange for no event per reference.
//! - Stores are write-through to the L2 and do not allocate in the L1
//!   (Fermi's global stores); the warp does not wait for them. Atomics are
//!   performed at the L2.

use rustc_hash::FxHashMap;

use super::spec::GpuSpec;
use crate::cache::{CacheLevel, Source};
use crate::error::Result;
use crate::stats::{visit_prefixed, StatVisitor};

/// Lines in flight at one level: line -> cycle its data arrives.
#[derive(Clone, Debug, Default)]
struct InFlight {
    lines: FxHashMap<u64, u64>,
    /// Forget arrived lines when the map has grown past this.
    purge_at: usize,
}

impl InFlight {
    /// When `line`'s data arrives if it is still on its way at `t`.
    #[inline]
    fn pending(&self, line: u64, t: u64) -> Option<u64> {
        self.lines.get(&line).copied().filter(|&r| r > t)
    }

    #[inline]
    fn add(&mut self, line: u64, ready: u64, now: u64) {
        self.lines.insert(line, ready);
        if self.lines.len() > self.purge_at {
            self.lines.retain(|_, r| *r > now);
            self.purge_at = (self.lines.len() * 2).max(1024);
        }
    }
}

/// Counters of the GPU memory's timing layer.
#[derive(Clone, Debug, Default)]
pub struct MemoryTiming {
    pub l1d_merges: u64,
    pub l2_merges: u64,
    pub bank_wait_cycles: u64,
    pub channel_wait_cycles: u64,
    pub dram_reads: u64,
    pub dram_busy_cycles: u64,
    pub pwc_hits: u64,
    pub pwc_misses: u64,
}

pub struct GpuMemory {
    l1d: Vec<CacheLevel>,
    l1d_flight: Vec<InFlight>,
    l2: CacheLevel,
    l2_flight: InFlight,
    pwc: Option<CacheLevel>,
    bank_free: Vec<u64>,
    channel_free: Vec<u64>,
    line_shift: u32,
    l1_latency: u64,
    l2_latency: u64,
    dram_latency: u64,
    /// Cycles a DRAM read of data pays on top of `dram_latency` (capacity compression's decompression).
    data_read_extra: u64,
    burst: u64,
    pwc_latency: u64,
    pub timing: MemoryTiming,
}

impl GpuMemory {
    pub fn build(spec: &GpuSpec, seed: u64) -> Result<GpuMemory> {
        let l1d = (0..spec.sms).map(|_| CacheLevel::build("gpu.l1d", "l1d", &spec.l1d, seed)).collect::<Result<Vec<_>>>()?;
        let l2 = CacheLevel::build("gpu.l2", "l2", &spec.l2, seed)?;
        let pwc = spec.walker.pwc.as_ref().map(|p| CacheLevel::build("gpu.walker.pwc", "pwc", p, seed)).transpose()?;
        let line = spec.l2.line.0;
        Ok(GpuMemory {
            l1d_flight: vec![InFlight::default(); spec.sms as usize],
            l1d,
            l2,
            l2_flight: InFlight::default(),
            pwc_latency: spec.walker.pwc.as_ref().map_or(0, |p| p.latency as u64),
            pwc,
            bank_free: vec![0; spec.l2_banks as usize],
            channel_free: vec![0; spec.dram.channels as usize],
            line_shift: line.trailing_zeros(),
            l1_latency: spec.l1d.latency as u64,
            l2_latency: spec.l2.latency as u64,
            dram_latency: spec.dram.latency,
            data_read_extra: 0,
            burst: line.div_ceil(spec.dram.bytes_per_cycle as u64).max(1),
            timing: MemoryTiming::default(),
        })
    }

    /// A reference to `paddr` reaching the L2 at `t`: when its data is back.
    #[inline]
    pub fn l2_access(&mut self, paddr: u64, write: bool, t: u64, source: Source) -> u64 {
        let line = paddr >> self.line_shift;
        let banks = self.bank_free.len() as u64;
        let bank = (line % banks) as usize;
        let start = t.max(self.bank_free[bank]);
        self.timing.bank_wait_cycles += start - t;
        self.bank_free[bank] = start + 1;
        let served = start + self.l2_latency;
        if self.l2.demand(paddr, write, source) {
            return match self.l2_flight.pending(line, served) {
                Some(ready) => {
                    self.timing.l2_merges += 1;
                    ready
                }
                None => served,
            };
        }
        let ch = ((line / banks) % self.channel_free.len() as u64) as usize;
        let go = served.max(self.channel_free[ch]);
        self.timing.channel_wait_cycles += go - served;
        self.channel_free[ch] = go + self.burst;
        self.timing.dram_reads += 1;
        self.timing.dram_busy_cycles += self.burst;
        let extra = if matches!(source, Source::Walk) { 0 } else { self.data_read_extra };
        let ready = go + self.dram_latency + self.burst + extra;
        self.l2_flight.add(line, ready, t);
        ready
    }

    /// Every later DRAM read of data (not of page tables) takes `cycles` more.
    pub fn add_data_read_cycles(&mut self, cycles: u64) {
        self.data_read_extra += cycles;
    }

    /// A global load by SM `sm` of `paddr` at `t`: when its data is back.
    #[inline]
    pub fn load(&mut self, sm: usize, paddr: u64, t: u64) -> u64 {
        let line = paddr >> self.line_shift;
        let served = t + self.l1_latency;
        if self.l1d[sm].demand(paddr, false, Source::Data) {
            return match self.l1d_flight[sm].pending(line, served) {
                Some(ready) => {
                    self.timing.l1d_merges += 1;
                    ready
                }
                None => served,
            };
        }
        let ready = self.l2_access(paddr, false, served, Source::Data);
        self.l1d_flight[sm].add(line, ready, t);
        ready
    }

    /// A page-walk reference to `paddr` at `t`: when the entry is back.
    #[inline]
    pub fn walk_ref(&mut self, paddr: u64, t: u64) -> u64 {
        match &mut self.pwc {
            None => self.l2_access(paddr, false, t, Source::Walk),
            Some(pwc) => {
                if pwc.demand(paddr, false, Source::Walk) {
                    self.timing.pwc_hits += 1;
                    t + self.pwc_latency
                } else {
                    self.timing.pwc_misses += 1;
                    let at = t + self.pwc_latency;
                    self.l2_access(paddr, false, at, Source::Walk)
                }
            }
        }
    }

    pub fn visit(&self, v: &mut dyn StatVisitor) {
        let mut l1 = self.l1d[0].stats();
        for c in &self.l1d[1..] {
            let s = c.stats();
            l1.data_hits += s.data_hits;
            l1.data_misses += s.data_misses;
            l1.hits += s.hits;
            l1.misses += s.misses;
            l1.evictions += s.evictions;
            l1.writebacks += s.writebacks;
        }
        visit_prefixed("l1d", &l1, v);
        visit_prefixed("l2", &self.l2.stats(), v);
        if let Some(p) = &self.pwc {
            visit_prefixed("pwc", &p.stats(), v);
        }
        let t = &self.timing;
        v.counter("l1d.mshr_merges", t.l1d_merges, "accesses", "L1D misses merged into a miss to the same line on its way");
        v.counter("l2.mshr_merges", t.l2_merges, "accesses", "L2 references merged into a DRAM read of the same line on its way");
        v.counter("l2.bank_wait_cycles", t.bank_wait_cycles, "cycles", "cycles references waited for their L2 bank");
        v.counter("dram.reads", t.dram_reads, "lines", "lines read from DRAM");
        v.counter("dram.busy_cycles", t.dram_busy_cycles, "cycles", "channel cycles spent transferring lines (all channels)");
        v.counter("dram.channel_wait_cycles", t.channel_wait_cycles, "cycles", "cycles misses waited for their DRAM channel");
    }
}
