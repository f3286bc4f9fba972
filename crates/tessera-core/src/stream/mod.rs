//! Access sources: anything that produces [`AccessBatch`]es — trace readers
//! ([`crate::trace`]) and built-in generators ([`synthetic`]).

pub mod memory;
pub mod read_ahead;
pub mod synthetic;

use crate::access::AccessBatch;
use crate::error::Result;

/// A stream of accesses, read in batches.
///
/// ## Contract
/// `next_batch` clears `out`, appends up to `out.capacity()` (at least one)
/// records and returns `Ok(true)`, or returns `Ok(false)` at the end of the
/// stream with `out` empty. Errors name the file and line/offset. Memory use
/// does not grow with stream length. `progress()` is (done, total) in a unit of
/// the source's choosing (bytes of input, records), for progress bars.
pub trait AccessSource {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool>;
    fn progress(&self) -> (u64, u64);
    /// Short identity for results ("trace:foo.tess", "synthetic:uniform ...").
    fn describe(&self) -> String;
    /// Whether the stream states its loads' dependencies (the batches' `dep`
    /// column, see [`crate::access`]), even where a batch has none.
    fn carries_dependencies(&self) -> bool {
        false
    }
}
