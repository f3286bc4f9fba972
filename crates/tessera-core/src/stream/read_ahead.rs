//! Reading ahead on a second thread: a source decodes its next batches while
//! the machine simulates the current one.
//!
//! Every trace run reads ahead, whatever the host's core count, so the
//! simulating thread does the same work everywhere (its heap, the gauge
//! `host.peak_heap_bytes`, leaves out the reader's buffers on every host).
//!
//! Decoding a trace (zstd and a checksum for native traces, xz for ChampSim,
//! text parsing for lackey logs) costs as much as simulating a TLB-hit-bound
//! stream; on a host with a second core the two overlap. The batches are the
//! inner source's, in the same order, so results do not change; an error
//! arrives after the batches read before it, as it would without the thread.
//! Memory stays bounded: at most [`IN_FLIGHT`] batches are decoded ahead, and
//! their buffers are handed back and reused.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::thread::JoinHandle;

use crate::access::{AccessBatch, BATCH_LEN};
use crate::error::{Error, Result};
use crate::stream::AccessSource;

/// Batches decoded ahead of the one being simulated.
pub const IN_FLIGHT: usize = 2;

/// Room for returned buffers: more than can ever be in circulation
/// (`IN_FLIGHT` queued, one being read, one being simulated), so returning
/// one never fails and the simulating thread never frees or allocates a
/// buffer: what it holds does not depend on how the two threads interleave
/// (see [`crate::host_memory`]).
const SPARES: usize = 16;

/// What the reading thread sends: a batch with the source's progress after
/// it, the end of the stream, or the error that ended it.
enum Item {
    Batch(AccessBatch, (u64, u64)),
    End((u64, u64)),
    Failed(Error),
}

/// An [`AccessSource`] whose inner source runs on its own thread.
pub struct ReadAhead {
    items: Option<Receiver<Item>>,
    spare: SyncSender<AccessBatch>,
    thread: Option<JoinHandle<()>>,
    progress: (u64, u64),
    describe: String,
    carries_dependencies: bool,
    done: bool,
    /// A batch received but larger than the caller's, and how much of it
    /// has been handed out.
    partial: Option<(AccessBatch, usize)>,
}

impl ReadAhead {
    /// Start reading `inner` on a new thread.
    pub fn spawn(mut inner: Box<dyn AccessSource + Send>) -> Result<ReadAhead> {
        let describe = inner.describe();
        let progress = inner.progress();
        let carries_dependencies = inner.carries_dependencies();
        let (tx, items) = sync_channel::<Item>(IN_FLIGHT);
        let (spare, spares) = sync_channel::<AccessBatch>(SPARES);
        let thread = std::thread::Builder::new()
            .name("tessera-read".into())
            .spawn(move || loop {
                let mut b = spares.try_recv().unwrap_or_else(|_| AccessBatch::with_capacity(BATCH_LEN));
                let item = match inner.next_batch(&mut b) {
                    Ok(true) => Item::Batch(b, inner.progress()),
                    Ok(false) => Item::End(inner.progress()),
                    Err(e) => Item::Failed(e),
                };
                let last = !matches!(item, Item::Batch(..));
                // A closed channel: the run stopped early; stop reading.
                if tx.send(item).is_err() || last {
                    return;
                }
            })
            .map_err(|e| Error::Io { path: describe.clone(), source: e })?;
        Ok(ReadAhead { items: Some(items), spare, thread: Some(thread), progress, describe, carries_dependencies, done: false, partial: None })
    }
}

impl AccessSource for ReadAhead {
    fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
        out.clear();
        if let Some((b, at)) = self.partial.take() {
            return Ok(self.hand_out(b, at, out));
        }
        if self.done {
            return Ok(false);
        }
        // Channel operations may allocate on first use in a thread, or not,
        // as the threads interleave: not the run's memory.
        let item = crate::host_memory::paused(|| self.items.as_ref().and_then(|r| r.recv().ok()));
        match item {
            Some(Item::Batch(b, p)) => {
                self.progress = p;
                Ok(self.hand_out(b, 0, out))
            }
            Some(Item::End(p)) => {
                self.progress = p;
                self.done = true;
                Ok(false)
            }
            Some(Item::Failed(e)) => {
                self.done = true;
                Err(e)
            }
            None => {
                self.done = true;
                Err(Error::Io {
                    path: self.describe.clone(),
                    source: std::io::Error::other("the reading thread stopped unexpectedly"),
                })
            }
        }
    }

    fn progress(&self) -> (u64, u64) {
        self.progress
    }

    fn describe(&self) -> String {
        self.describe.clone()
    }

    fn carries_dependencies(&self) -> bool {
        self.carries_dependencies
    }
}

impl ReadAhead {
    /// Give `out` the records of `b` from `at`: by swapping buffers when they
    /// all fit (the old buffer goes back to the reader), else by copying as
    /// many as `out` holds and keeping the rest.
    fn hand_out(&mut self, mut b: AccessBatch, at: usize, out: &mut AccessBatch) -> bool {
        let cap = crate::trace::batch_cap(out);
        if at == 0 && b.len() <= cap {
            std::mem::swap(out, &mut b);
            // Gone if the thread has ended.
            self.give_back(b);
            return true;
        }
        let end = b.len().min(at + cap);
        out.copy_range(&b, at..end);
        if end < b.len() {
            self.partial = Some((b, end));
        } else {
            self.give_back(b);
        }
        true
    }

    /// Return a buffer to the reader (dropped if the reader has ended). Not
    /// counted in the run's heap: whether it is dropped here depends on how
    /// the threads interleave.
    fn give_back(&self, b: AccessBatch) {
        crate::host_memory::paused(|| {
            let _ = self.spare.try_send(b);
        });
    }
}

impl Drop for ReadAhead {
    fn drop(&mut self) {
        // Closing the channel ends a thread blocked on sending.
        self.items = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::AccessKind;

    /// A source of `n` records that fails after `fail_after` batches, if set.
    struct Counting {
        next: u64,
        n: u64,
        fail_after: Option<u32>,
        batches: u32,
    }

    impl AccessSource for Counting {
        fn next_batch(&mut self, out: &mut AccessBatch) -> Result<bool> {
            out.clear();
            if self.fail_after == Some(self.batches) {
                return Err(Error::Trace { file: "t".into(), location: crate::error::Location::Offset(self.next), msg: "broken".into() });
            }
            self.batches += 1;
            while self.next < self.n && out.len() < 1000 {
                out.push(1, self.next * 64, AccessKind::Load, 8, 0);
                self.next += 1;
            }
            Ok(!out.is_empty())
        }
        fn progress(&self) -> (u64, u64) {
            (self.next, self.n)
        }
        fn describe(&self) -> String {
            "counting".into()
        }
    }

    fn drain(s: &mut dyn AccessSource) -> (Vec<u64>, Option<String>) {
        drain_in(s, BATCH_LEN)
    }

    fn drain_in(s: &mut dyn AccessSource, cap: usize) -> (Vec<u64>, Option<String>) {
        let mut b = AccessBatch::with_capacity(cap);
        let mut seen = Vec::new();
        loop {
            match s.next_batch(&mut b) {
                Ok(true) => {
                    assert!(!b.is_empty() && b.len() <= cap, "a batch of {} for capacity {cap}", b.len());
                    seen.extend_from_slice(&b.vaddr)
                }
                Ok(false) => return (seen, None),
                Err(e) => return (seen, Some(e.to_string())),
            }
        }
    }

    #[test]
    fn same_batches_and_same_error_as_the_inner_source() {
        for fail_after in [None, Some(0), Some(3)] {
            let mk = || Counting { next: 0, n: 7_500, fail_after, batches: 0 };
            let want = drain(&mut mk());
            let mut ahead = ReadAhead::spawn(Box::new(mk())).unwrap();
            assert_eq!(ahead.describe(), "counting");
            assert_eq!(drain(&mut ahead), want, "fail_after {fail_after:?}");
            if fail_after.is_none() {
                assert_eq!(ahead.progress(), (7_500, 7_500));
            }
        }
    }

    #[test]
    fn a_smaller_caller_batch_gets_the_records_in_pieces() {
        let mk = || Counting { next: 0, n: 7_500, fail_after: Some(5), batches: 0 };
        let want = drain(&mut mk());
        let mut ahead = ReadAhead::spawn(Box::new(mk())).unwrap();
        assert_eq!(drain_in(&mut ahead, 300), want);
    }

    #[test]
    fn dropping_early_stops_the_thread() {
        let mut ahead = ReadAhead::spawn(Box::new(Counting { next: 0, n: 10_000_000, fail_after: None, batches: 0 })).unwrap();
        let mut b = AccessBatch::with_capacity(BATCH_LEN);
        assert!(ahead.next_batch(&mut b).unwrap());
        drop(ahead); // joins the thread: the test would hang if it did not stop
    }
}
