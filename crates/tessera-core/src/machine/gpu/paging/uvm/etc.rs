//! ETC's three parts as options of the unified-memory path (`gpu.paging.etc`):
//! Li et al., "A Framework for Memory Oversubscription Management in
//! Graphics Processing Units" (ASPLOS 2019, doi:10.1145/3297858.3304044),
//! as the batch-aware paper compares against it (its Fig. 11, with proactive
//! eviction off for irregular workloads, as ETC's authors do).
//!
//! - **PE**, proactive eviction (`proactive`): at a batch's start, when the
//!   GPU's free memory is below the units the batch will migrate (plus
//!   `pe_extra_units`), the shortfall is evicted at once, on the idle
//!   GPU-to-host direction during the handling time; a migration that takes
//!   a frame so freed waits only for that eviction's transfer to end. The
//!   timing is [`super::Uvm`]'s (`begin`, `issue`).
//! - **MT**, memory-aware throttling (`throttling`): [`Mt`] below. Watches
//!   the signal (`mt_signal`: units evicted, or premature evictions) in
//!   back-to-back windows of `detect_cycles`; a window with `mt_threshold`
//!   or more triggers it: half the SMs of each application stop (they issue
//!   nothing and take no new thread blocks) for an execution epoch of
//!   `execute_cycles`; then a detection epoch of `detect_cycles` (throttled
//!   or not, as the execution epoch before it) decides the next execution
//!   epoch: throttled if the signal reached the threshold, else not. The
//!   two epochs then alternate to the end of the run. The machine applies
//!   the decision ([`crate::machine::gpu::paging::FaultPath::throttle`]).
//! - **CC**, capacity compression (`compression`): with the data larger
//!   than the GPU's memory, pages are held compressed by `cc_ratio`, so the
//!   memory holds `memory × cc_ratio` of the footprint (at most all of it),
//!   and every DRAM read of data pays `cc_decompress_cycles` more.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EtcConfig {
    /// PE: evict ahead of a batch's migrations.
    #[serde(default)]
    pub proactive: bool,
    /// MT: throttle half the SMs while evictions run high.
    #[serde(default)]
    pub throttling: bool,
    /// CC: hold GPU pages compressed.
    #[serde(default)]
    pub compression: bool,
    /// PE: units evicted beyond the batch's shortfall (room kept for the batches after it).
    #[serde(default)]
    pub pe_extra_units: u32,
    /// MT: cycles of a detection epoch (and of a window before the first trigger).
    #[serde(default = "d_detect")]
    pub detect_cycles: u64,
    /// MT: cycles of an execution epoch.
    #[serde(default = "d_execute")]
    pub execute_cycles: u64,
    /// MT: signal events in a detection epoch that (keep) throttle.
    #[serde(default = "d_threshold")]
    pub mt_threshold: u64,
    /// MT: what is counted: `"evictions"` (units evicted) or `"premature"` (evicted units that fault again).
    #[serde(default = "d_signal")]
    pub mt_signal: String,
    /// CC: compression ratio of the pages held on the GPU (≥ 1).
    #[serde(default = "d_cc_ratio")]
    pub cc_ratio: f64,
    /// CC: cycles added to every DRAM read of data (decompression).
    #[serde(default = "d_cc_cycles")]
    pub cc_decompress_cycles: u64,
}

fn d_detect() -> u64 {
    100_000
}
fn d_execute() -> u64 {
    500_000
}
fn d_threshold() -> u64 {
    8
}
fn d_signal() -> String {
    "evictions".into()
}
fn d_cc_ratio() -> f64 {
    1.6
}
fn d_cc_cycles() -> u64 {
    10
}

impl Default for EtcConfig {
    fn default() -> Self {
        EtcConfig {
            proactive: false,
            throttling: false,
            compression: false,
            pe_extra_units: 0,
            detect_cycles: d_detect(),
            execute_cycles: d_execute(),
            mt_threshold: d_threshold(),
            mt_signal: d_signal(),
            cc_ratio: d_cc_ratio(),
            cc_decompress_cycles: d_cc_cycles(),
        }
    }
}

/// What MT counts.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Signal {
    Evictions,
    Premature,
}

impl EtcConfig {
    /// Check every setting (whether or not its part is on), naming the key.
    pub fn validate(&self) -> Result<Signal> {
        for (key, v) in [("detect_cycles", self.detect_cycles), ("execute_cycles", self.execute_cycles)] {
            if v == 0 {
                return Err(Error::config(format!("gpu.paging.etc.{key}"), "an epoch lasts at least 1 cycle"));
            }
        }
        if self.mt_threshold == 0 {
            return Err(Error::config("gpu.paging.etc.mt_threshold", "must be at least 1 (0 would throttle for ever)"));
        }
        if !(self.cc_ratio.is_finite() && self.cc_ratio >= 1.0) {
            return Err(Error::config("gpu.paging.etc.cc_ratio", format!("a compression ratio is a number ≥ 1 (1: no gain), not {}", self.cc_ratio)));
        }
        match self.mt_signal.as_str() {
            "evictions" => Ok(Signal::Evictions),
            "premature" => Ok(Signal::Premature),
            other => Err(Error::config_allowed("gpu.paging.etc.mt_signal", format!("unknown signal \"{other}\""), &["evictions", "premature"])),
        }
    }
}

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
enum Phase {
    /// Before the first trigger: back-to-back windows of `detect` cycles.
    Watch,
    Execute,
    Detect,
}

/// Memory-aware throttling: the epochs and the decision. Time moves only
/// forward, through [`Mt::roll`]; every epoch boundary at which the
/// decision can change is reported by [`Mt::next_change`], so the path is
/// polled there and the machine learns the decision at its cycle.
#[derive(Clone, Debug)]
pub struct Mt {
    detect: u64,
    execute: u64,
    threshold: u64,
    pub signal: Signal,
    phase: Phase,
    /// End of the current window or epoch.
    end: u64,
    /// Signal events in the current window or detection epoch.
    count: u64,
    throttled: bool,
    pub stats: MtStats,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MtStats {
    /// Times MT began throttling after a window or detection epoch without.
    pub triggers: u64,
    pub detection_epochs: u64,
    /// Execution epochs run throttled (the first one after each trigger included).
    pub throttled_epochs: u64,
    /// Execution epochs run with every SM.
    pub free_epochs: u64,
}

impl Mt {
    pub fn new(cfg: &EtcConfig, signal: Signal) -> Mt {
        Mt {
            detect: cfg.detect_cycles,
            execute: cfg.execute_cycles,
            threshold: cfg.mt_threshold,
            signal,
            phase: Phase::Watch,
            end: cfg.detect_cycles,
            count: 0,
            throttled: false,
            stats: MtStats::default(),
        }
    }

    /// Whether half the SMs are stopped now.
    pub fn throttled(&self) -> bool {
        self.throttled
    }

    /// Pass every epoch boundary up to `now` (boundaries at `now` included:
    /// an event at a boundary's cycle belongs to the epoch it opens).
    pub fn roll(&mut self, now: u64) {
        while self.end <= now {
            match self.phase {
                Phase::Watch => {
                    if self.count >= self.threshold {
                        self.throttle(true);
                    } else {
                        // Windows with nothing counted change nothing: skip them all.
                        self.count = 0;
                        self.end += ((now - self.end) / self.detect + 1) * self.detect;
                    }
                }
                Phase::Execute => {
                    self.phase = Phase::Detect;
                    self.count = 0;
                    self.stats.detection_epochs += 1;
                    self.end += self.detect;
                    if !self.throttled && now >= self.end + self.execute {
                        // Whole free periods with nothing counted: skip them.
                        let period = self.execute + self.detect;
                        let k = (now - self.end) / period;
                        self.stats.detection_epochs += k;
                        self.stats.free_epochs += k;
                        self.end += k * period;
                    }
                }
                Phase::Detect => {
                    let want = self.count >= self.threshold;
                    self.throttle(want);
                }
            }
        }
    }

    /// Open an execution epoch at `end`, throttled or not.
    fn throttle(&mut self, on: bool) {
        if on && !self.throttled {
            self.stats.triggers += 1;
        }
        self.throttled = on;
        if on {
            self.stats.throttled_epochs += 1;
        } else {
            self.stats.free_epochs += 1;
        }
        self.phase = Phase::Execute;
        self.count = 0;
        self.end += self.execute;
    }

    /// One event of the signal at `now`.
    pub fn count(&mut self, now: u64, n: u64) {
        self.roll(now);
        if self.phase != Phase::Execute {
            self.count += n;
        }
    }

    /// The next cycle at which the decision may change, if any: while
    /// throttled, the end of the coming detection epoch; otherwise the end
    /// of the current window or detection epoch once it has reached the
    /// threshold.
    pub fn next_change(&self) -> Option<u64> {
        match (self.throttled, self.phase) {
            (true, Phase::Execute) => Some(self.end + self.detect),
            (true, _) => Some(self.end),
            (false, Phase::Execute) => None,
            (false, _) => (self.count >= self.threshold).then_some(self.end),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mt(detect: u64, execute: u64, threshold: u64) -> Mt {
        let cfg = EtcConfig { detect_cycles: detect, execute_cycles: execute, mt_threshold: threshold, ..EtcConfig::default() };
        Mt::new(&cfg, Signal::Evictions)
    }

    #[test]
    fn a_window_over_the_threshold_throttles_for_an_execution_epoch_then_a_detection_epoch_decides() {
        let mut m = mt(100, 1000, 3);
        m.count(10, 2);
        assert_eq!(m.next_change(), None, "below the threshold");
        m.count(50, 1);
        assert_eq!(m.next_change(), Some(100), "the window ends at 100");
        m.roll(99);
        assert!(!m.throttled());
        m.roll(100);
        assert!(m.throttled(), "throttled from the window's end");
        // Execution epoch [100, 1100) counts nothing; the detection epoch [1100, 1200) decides.
        m.count(500, 10);
        assert_eq!(m.next_change(), Some(1200));
        m.count(1100, 2);
        m.roll(1199);
        assert!(m.throttled());
        m.roll(1200);
        assert!(!m.throttled(), "2 < 3 in the detection epoch: every SM runs again");
        assert_eq!(m.next_change(), None);
        // The next detection epoch is [2200, 2300): 3 events there throttle again at 2300.
        m.count(2250, 3);
        assert_eq!(m.next_change(), Some(2300));
        m.roll(2300);
        assert!(m.throttled());
        assert_eq!(m.stats, MtStats { triggers: 2, detection_epochs: 2, throttled_epochs: 2, free_epochs: 1 });
    }

    #[test]
    fn a_detection_epoch_over_the_threshold_keeps_throttling() {
        let mut m = mt(100, 1000, 1);
        m.count(0, 1);
        m.roll(100);
        m.count(1150, 1);
        m.roll(1200);
        assert!(m.throttled());
        assert_eq!(m.stats.triggers, 1);
        assert_eq!(m.stats.throttled_epochs, 2);
        // Nothing in [2200, 2300): unthrottled there.
        assert_eq!(m.next_change(), Some(2300));
        m.roll(2300);
        assert!(!m.throttled());
    }

    #[test]
    fn long_quiet_stretches_are_skipped_in_one_step() {
        let mut m = mt(10, 20, 1);
        m.roll(1_000_000_000);
        assert_eq!(m.end, 1_000_000_010);
        m.count(1_000_000_005, 1);
        m.roll(1_000_000_010);
        assert!(m.throttled());
        // Throttled [1e9+10, 1e9+30), detection [1e9+30, 1e9+40) quiet: free from 1e9+40.
        m.roll(1_000_000_040);
        assert!(!m.throttled());
        m.roll(2_000_000_000);
        // Free periods of 30 cycles from 1e9+40 (execute 20, then detect 10):
        // 2e9 opens an execution epoch, [2e9+20, 2e9+30) is a detection epoch.
        let mut r = m.clone();
        r.count(2_000_000_005, 1);
        assert_eq!(r.next_change(), None, "an execution epoch counts nothing");
        r.count(2_000_000_025, 1);
        assert_eq!(r.next_change(), Some(2_000_000_030));
        r.roll(2_000_000_030);
        assert!(r.throttled());
        assert_eq!(r.stats.detection_epochs, 1 + 33_333_333);
    }

    #[test]
    fn bad_settings_name_their_keys() {
        for (cfg, key) in [
            (EtcConfig { detect_cycles: 0, ..EtcConfig::default() }, "gpu.paging.etc.detect_cycles"),
            (EtcConfig { execute_cycles: 0, ..EtcConfig::default() }, "gpu.paging.etc.execute_cycles"),
            (EtcConfig { mt_threshold: 0, ..EtcConfig::default() }, "gpu.paging.etc.mt_threshold"),
            (EtcConfig { cc_ratio: 0.5, ..EtcConfig::default() }, "gpu.paging.etc.cc_ratio"),
            (EtcConfig { mt_signal: "faults".into(), ..EtcConfig::default() }, "gpu.paging.etc.mt_signal"),
        ] {
            let e = cfg.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{e}");
        }
        let e = EtcConfig { mt_signal: "x".into(), ..EtcConfig::default() }.validate().unwrap_err().to_string();
        assert!(e.contains("premature"), "the allowed values are named: {e}");
    }
}
