//! How much host memory a run holds: a counting allocator and a per-run scope.
//!
//! A run's memory should grow with the simulated footprint (page-table nodes,
//! the reverse map, eviction lists) and never with the trace's length. To
//! show it in every result, a program that embeds the core may install
//! [`CountingAlloc`] as its global allocator (the Python module and the
//! examples do); [`RunMemory`] then measures the peak of the bytes allocated
//! on the run's thread while the run lasts, and the run reports it as the
//! gauge `host.peak_heap_bytes`.
//!
//! ## Why a count and not the resident set
//! The resident high-water mark of the process depends on what ran before in
//! the same process, on the C allocator's caching and on the kernel, so two
//! runs of one config would give different results files. The count of
//! requested bytes on the run's own thread is the same for the same config,
//! input and seed, so results stay byte-identical. It excludes what C
//! libraries allocate with `malloc` (zstd's and liblzma's decoder state, a
//! few MiB at most) and the interpreter around the run; `tessera bench
//! --against` reports the process's resident high-water mark beside it.
//!
//! Work done for the caller while a run is under way (a progress callback
//! into Python) runs inside [`paused`], so it is not counted.
//!
//! This is the core's only global state: counters of the host, never read by
//! the simulation.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// The system allocator, counting the bytes each thread holds.
pub struct CountingAlloc;

static INSTALLED: AtomicBool = AtomicBool::new(false);

thread_local! {
    /// Bytes allocated and not yet freed by this thread (frees of memory
    /// allocated by another thread make it smaller; only differences count).
    static LIVE: Cell<i64> = const { Cell::new(0) };
    /// Highest `LIVE` since the last [`RunMemory::begin`].
    static PEAK: Cell<i64> = const { Cell::new(0) };
    /// Nesting depth of [`paused`] sections.
    static PAUSED: Cell<u32> = const { Cell::new(0) };
}

#[inline]
fn add(delta: i64) {
    // `try_with`: during thread teardown the counters may be gone; the bytes
    // of a dying thread belong to no run.
    let _ = PAUSED.try_with(|p| {
        if p.get() != 0 {
            return;
        }
        let _ = LIVE.try_with(|l| {
            let v = l.get() + delta;
            l.set(v);
            if delta > 0 {
                let _ = PEAK.try_with(|pk| {
                    if v > pk.get() {
                        pk.set(v)
                    }
                });
            }
        });
    });
}

#[inline]
fn note_installed() {
    if !INSTALLED.load(Ordering::Relaxed) {
        INSTALLED.store(true, Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded to `System` with the same arguments; the
// counters only observe sizes.
unsafe impl GlobalAlloc for CountingAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note_installed();
        let p = System.alloc(layout);
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note_installed();
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            add(layout.size() as i64);
        }
        p
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        add(-(layout.size() as i64));
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            add(new_size as i64 - layout.size() as i64);
        }
        p
    }
}

/// The peak of one run's heap, measured on the thread that runs it.
#[derive(Debug)]
pub struct RunMemory {
    base: i64,
}

impl RunMemory {
    /// Start measuring: the peak restarts at what the thread holds now.
    pub fn begin() -> RunMemory {
        let base = LIVE.try_with(Cell::get).unwrap_or(0);
        let _ = PEAK.try_with(|p| p.set(base));
        RunMemory { base }
    }

    /// Most bytes the run held at once beyond what the thread held when it
    /// began; `None` when [`CountingAlloc`] is not the global allocator.
    pub fn peak_bytes(&self) -> Option<u64> {
        if !INSTALLED.load(Ordering::Relaxed) {
            return None;
        }
        Some(PEAK.try_with(Cell::get).map_or(0, |p| (p - self.base).max(0) as u64))
    }
}

/// Run `f` without counting what it allocates (work done for the caller
/// during a run, such as a progress callback).
pub fn paused<R>(f: impl FnOnce() -> R) -> R {
    struct Resume;
    impl Drop for Resume {
        fn drop(&mut self) {
            let _ = PAUSED.try_with(|p| p.set(p.get() - 1));
        }
    }
    let _ = PAUSED.try_with(|p| p.set(p.get() + 1));
    let _resume = Resume;
    f()
}

#[cfg(test)]
mod tests {
    use super::*;

    // The unit-test binary does not install the allocator: the scope says so.
    #[test]
    fn without_the_allocator_there_is_no_peak() {
        if !INSTALLED.load(Ordering::Relaxed) {
            assert_eq!(RunMemory::begin().peak_bytes(), None);
        }
    }

    #[test]
    fn counting_tracks_the_peak_not_the_end() {
        let m = RunMemory::begin();
        add(1000);
        add(500);
        add(-1200);
        add(100);
        assert_eq!(PEAK.with(Cell::get) - m.base, 1500);
        paused(|| add(10_000));
        assert_eq!(PEAK.with(Cell::get) - m.base, 1500, "paused work is not counted");
        add(-400);
    }
}
