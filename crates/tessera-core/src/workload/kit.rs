//! Small pieces shared by the application workloads: key mixing and hashing,
//! and the emission of byte-range reads, writes and copies.
//!
//! ## What it models
//! - [`load_range`] / [`store_range`] / [`copy_range`]: a `memcpy`-like pass
//!   over a byte range, one access of up to 64 bytes per 64 bytes of the range
//!   (an AVX2 copy loop moves 64 bytes in about four instructions). Accesses
//!   start at the range's first byte, so an unaligned range can straddle cache
//!   lines as a real copy does.
//!
//! - [`load_range_on`] / [`store_range_on`] / [`copy_range_on`]: the same
//!   passes over a range whose address needs an earlier load's value (an
//!   object reached through a pointer); every access carries the dependency.
//!
//! - [`Emit`] is what data-structure code emits through: the run's
//!   [`Emitter`], or [`Quiet`] for set-up phases a workload does not emit
//!   (building an index, warming a cache), which then cost nothing.
//!
//! ## Choices
//! - [`mix64`] is splitmix64's finaliser: a bijection on `u64`, so
//!   `mix64(base + i)` gives distinct pseudo-random keys for distinct `i`.
//! - [`fnv64`] is YCSB's `fnvhash64` (FNV-1a over the 8 little-endian bytes,
//!   sign bit cleared), used to scramble Zipfian ranks and to name records.

use super::emit::Dep;
use super::Emitter;

/// A destination for a data structure's accesses.
pub trait Emit {
    fn ins(&mut self, n: u32);
    fn load(&mut self, vaddr: u64, size: u8);
    fn store(&mut self, vaddr: u64, size: u8);
    /// A load whose address needs the value loaded by `on` ([`Dep::NONE`]:
    /// none); returns this load's place, for the accesses that need its value.
    fn load_on(&mut self, vaddr: u64, size: u8, on: Dep) -> Dep;
    /// A store whose address needs the value loaded by `on`.
    fn store_on(&mut self, vaddr: u64, size: u8, on: Dep);
}

impl Emit for Emitter<'_> {
    #[inline(always)]
    fn ins(&mut self, n: u32) {
        Emitter::ins(self, n)
    }
    #[inline(always)]
    fn load(&mut self, vaddr: u64, size: u8) {
        Emitter::load(self, vaddr, size)
    }
    #[inline(always)]
    fn store(&mut self, vaddr: u64, size: u8) {
        Emitter::store(self, vaddr, size)
    }
    #[inline(always)]
    fn load_on(&mut self, vaddr: u64, size: u8, on: Dep) -> Dep {
        Emitter::load_on(self, vaddr, size, on)
    }
    #[inline(always)]
    fn store_on(&mut self, vaddr: u64, size: u8, on: Dep) {
        Emitter::store_on(self, vaddr, size, on)
    }
}

/// Discards everything, at no cost (set-up phases that are not emitted).
pub struct Quiet;

impl Emit for Quiet {
    #[inline(always)]
    fn ins(&mut self, _: u32) {}
    #[inline(always)]
    fn load(&mut self, _: u64, _: u8) {}
    #[inline(always)]
    fn store(&mut self, _: u64, _: u8) {}
    #[inline(always)]
    fn load_on(&mut self, _: u64, _: u8, _: Dep) -> Dep {
        Dep::NONE
    }
    #[inline(always)]
    fn store_on(&mut self, _: u64, _: u8, _: Dep) {}
}

/// Bytes covered by one emitted access of a bulk copy.
pub const CHUNK: u64 = 64;

/// splitmix64's finaliser: a bijective 64-bit mixer.
#[inline(always)]
pub fn mix64(mut x: u64) -> u64 {
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// YCSB's `Utils.fnvhash64`: FNV-1a over the value's 8 bytes, made non-negative.
#[inline]
pub fn fnv64(v: u64) -> u64 {
    let mut h: u64 = 0xCBF2_9CE4_8422_2325;
    let mut v = v;
    for _ in 0..8 {
        h ^= v & 0xff;
        h = h.wrapping_mul(1_099_511_628_211);
        v >>= 8;
    }
    h & (i64::MAX as u64)
}

/// Read `len` bytes from `addr`: one load per 64 bytes, `ins` instructions each.
#[inline]
pub fn load_range(e: &mut impl Emit, addr: u64, len: u64, ins: u32) {
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        e.ins(ins);
        e.load(addr + off, n as u8);
        off += n;
    }
}

/// Write `len` bytes at `addr`: one store per 64 bytes, `ins` instructions each.
#[inline]
pub fn store_range(e: &mut impl Emit, addr: u64, len: u64, ins: u32) {
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        e.ins(ins);
        e.store(addr + off, n as u8);
        off += n;
    }
}

/// [`load_range`] of a range whose address needs the value loaded by `on`
/// (a field run of an object reached through a pointer).
#[inline]
pub fn load_range_on(e: &mut impl Emit, addr: u64, len: u64, ins: u32, on: Dep) {
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        e.ins(ins);
        e.load_on(addr + off, n as u8, on);
        off += n;
    }
}

/// [`store_range`] of a range whose address needs the value loaded by `on`.
#[inline]
pub fn store_range_on(e: &mut impl Emit, addr: u64, len: u64, ins: u32, on: Dep) {
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        e.ins(ins);
        e.store_on(addr + off, n as u8, on);
        off += n;
    }
}

/// [`copy_range`] whose source address needs the value loaded by `src_on`
/// and destination address the value loaded by `dst_on`.
#[inline]
pub fn copy_range_on(e: &mut impl Emit, src: u64, dst: u64, len: u64, ins: u32, src_on: Dep, dst_on: Dep) {
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        e.ins(ins);
        e.load_on(src + off, n as u8, src_on);
        e.store_on(dst + off, n as u8, dst_on);
        off += n;
    }
}

/// Copy `len` bytes from `src` to `dst`: a load then a store per 64 bytes,
/// `ins` instructions per pair.
#[inline]
pub fn copy_range(e: &mut impl Emit, src: u64, dst: u64, len: u64, ins: u32) {
    let mut off = 0;
    while off < len {
        let n = CHUNK.min(len - off);
        e.ins(ins);
        e.load(src + off, n as u8);
        e.store(dst + off, n as u8);
        off += n;
    }
}

/// Ask the kernel to back `v`'s buffer with transparent huge pages where it
/// is 2 MiB-aligned. Host speed only (large host arrays probed at random stop
/// missing the host TLB); results are unaffected. Call before first touch.
pub fn advise_huge<T>(v: &Vec<T>) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_ptr() as usize;
        let end = start + v.capacity() * std::mem::size_of::<T>();
        let (a, b) = (start.next_multiple_of(HUGE), end & !(HUGE - 1));
        if b > a {
            // SAFETY: [a, b) lies inside `v`'s own allocation; the advice is a
            // hint that never changes contents, and failure is harmless.
            unsafe {
                libc::madvise(a as *mut libc::c_void, b - a, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// `vec![fill; len]`, advised as huge pages (see [`advise_huge`]).
pub fn huge_vec<T: Copy>(len: usize, fill: T) -> Vec<T> {
    let mut v = Vec::with_capacity(len);
    advise_huge(&v);
    v.resize(len, fill);
    v
}

/// Smallest prime `>= n` (trial division; called only when tables grow).
pub fn next_prime(n: u64) -> u64 {
    let mut c = n.max(2);
    loop {
        if is_prime(c) {
            return c;
        }
        c += 1;
    }
}

fn is_prime(n: u64) -> bool {
    if n < 4 {
        return n >= 2;
    }
    if n.is_multiple_of(2) || n.is_multiple_of(3) {
        return false;
    }
    let mut d = 5;
    while d * d <= n {
        if n.is_multiple_of(d) || n.is_multiple_of(d + 2) {
            return false;
        }
        d += 6;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::emit::VecSink;

    #[test]
    fn mix_is_injective_on_a_sample_and_fnv_matches_ycsb() {
        let mut seen = std::collections::HashSet::new();
        for i in 0..100_000u64 {
            assert!(seen.insert(mix64(i)));
        }
        // FNV-1a over the little-endian bytes, sign bit cleared.
        for v in [0u64, 1, 0x0123_4567_89ab_cdef, u64::MAX] {
            let mut h: u64 = 0xcbf2_9ce4_8422_2325;
            for b in v.to_le_bytes() {
                h = (h ^ b as u64).wrapping_mul(0x100_0000_01b3);
            }
            assert_eq!(fnv64(v), h & (i64::MAX as u64));
        }
    }

    #[test]
    fn ranges_cover_every_byte_once() {
        let mut sink = VecSink::default();
        let mut e = Emitter::new(&mut sink);
        load_range(&mut e, 1000, 130, 2);
        copy_range(&mut e, 0, 4096, 64, 4);
        e.finish();
        let r = &sink.records;
        assert_eq!(r.len(), 3 + 2);
        assert_eq!((r[0].1, r[0].3), (1000, 64));
        assert_eq!((r[2].1, r[2].3), (1128, 2));
        assert_eq!((r[3].1, r[4].1), (0, 4096));
    }

    #[test]
    fn primes() {
        assert_eq!(next_prime(0), 2);
        assert_eq!(next_prime(14), 17);
        assert_eq!(next_prime(277), 277);
        assert_eq!(next_prime(1_000_000), 1_000_003);
    }
}
