//! CPU timing models, one family selected by `timing.kind`:
//!
//! - `interval` ([`interval`]): additive, `cycles = instructions × CPI + every
//!   stall`; the default, and what every golden snapshot was made with.
//! - `ooo` ([`ooo`]): an analytic out-of-order core (window, widths, LSQ,
//!   MSHRs, page walkers) in which memory operations overlap.
//!
//! Components report latencies; only these models turn them into time, so a
//! GPU event model can drive the same components differently.

pub mod interval;
pub mod ooo;
#[cfg(test)]
mod ooo_reference;
#[cfg(test)]
mod ooo_tests;

pub use interval::IntervalModel;
pub use ooo::{OooModel, OooStats};

/// The timing models, as written at `timing.kind`.
pub const KINDS: [&str; 2] = ["interval", "ooo"];

crate::stat_group! {
    pub struct CoreStats {
        instructions: "instructions", "instructions retired (sum of the trace's instruction gaps)",
        records: "records", "access records consumed",
        loads: "accesses", "data loads",
        stores: "accesses", "data stores",
        ifetches: "accesses", "instruction fetches translated or counted",
        page_crossings: "accesses", "accesses that cross a 4 KiB page and translate two pages",
        base_cycles: "cycles", "instructions × base CPI (rounded)",
        data_stall_cycles: "cycles", "stall cycles of data accesses beyond the base CPI (ooo: cycles a load is the oldest unretired and waits for its data)",
        translation_stall_cycles: "cycles", "stall cycles of address translation (TLB levels + walks; ooo: cycles an access is the oldest unretired and translating)",
        cycles: "cycles", "total cycles of the timing model (timing.kind)",
    }
}

