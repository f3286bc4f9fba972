//! GPU workloads: what a GPU application hands the GPU machine, whether a
//! built-in kernel generated it ([`kernels`]) or an Accel-Sim trace was
//! read ([`crate::trace::accelsim`]).
//!
//! ## What it models
//! A GPU application ([`GpuApp`]) allocates its buffers *en masse* before its
//! kernels run (cudaMalloc-style, sizes rounded up to 256 bytes), copies data
//! in, and launches kernels one after another. A kernel ([`Kernel`]) is its
//! launch geometry and resources, and for each thread block, for each warp,
//! the warp's dynamic instruction stream ([`WarpTrace`]): one
//! [`WarpInst`] per instruction a warp issued, with its active-lane mask and,
//! for a memory instruction, the address of every active lane.
//!
//! This is the information an Accel-Sim `.traceg` file holds (see
//! [`crate::trace::accelsim`]), in a compact form: registers and the SASS
//! opcode's full text are not kept. An instruction keeps what the GPU
//! machine needs: its class ([`Op`]), its memory space ([`Space`]) and its
//! access size per lane.
//!
//! ## Choices
//! - Addresses of a warp's memory instructions are stored flat, active lanes
//!   in lane order, in one vector per warp ([`WarpTrace::addrs`]): an
//!   instruction's addresses start where the previous memory instruction's
//!   end, so an instruction needs no index of its own.
//! - Shared and local accesses are kept (they take issue slots and, for
//!   local, data-cache capacity) but never reach a TLB: [`Space::translated`].
//! - A kernel is generated or read whole, one at a time ([`KernelSource`]);
//!   an application's footprint is its allocations, known before any kernel.

pub mod coalesce;
pub mod freeing;
pub mod kernels;
pub mod summary;

use crate::error::{Error, Result};

/// Lanes in a warp.
pub const WARP_SIZE: u32 = 32;

/// Allocation granularity of `cudaMalloc` as the GPU machine models it.
pub const ALLOC_ALIGN: u64 = 256;

/// What an instruction does, as far as the GPU machine cares.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Op {
    /// Arithmetic, logic, moves, conversions: issue and pipeline latency.
    Alu = 0,
    /// Special-function unit (transcendentals): a longer pipeline latency.
    Sfu = 1,
    /// A load from `space`.
    Load = 2,
    /// A store to `space`.
    Store = 3,
    /// A read-modify-write at memory (`ATOM`, `RED`).
    Atomic = 4,
    /// A thread-block barrier (`BAR`): the warp waits for its block's warps.
    Barrier = 5,
    /// A branch or other control instruction.
    Branch = 6,
    /// The warp's last instruction (`EXIT`).
    Exit = 7,
}

impl Op {
    /// Whether the instruction accesses memory (and so has lane addresses).
    #[inline]
    pub fn is_memory(self) -> bool {
        matches!(self, Op::Load | Op::Store | Op::Atomic)
    }
}

/// Memory space of a memory instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Space {
    /// Not a memory instruction.
    None = 0,
    /// Device memory through the address-translation path.
    Global = 1,
    /// Per-block on-chip scratchpad: never translated, never cached.
    Shared = 2,
    /// Per-thread spill memory: device memory, but in a window the machine
    /// maps apart from the application's allocations (not translated here).
    Local = 3,
}

impl Space {
    /// Whether accesses in this space go through the TLBs.
    #[inline]
    pub fn translated(self) -> bool {
        self == Space::Global
    }
}

/// One dynamic warp instruction.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct WarpInst {
    /// Offset of the instruction in the kernel's code.
    pub pc: u32,
    /// Active lanes (bit i: lane i), predicate applied. Never 0.
    pub mask: u32,
    pub op: Op,
    pub space: Space,
    /// Bytes each active lane accesses (0 for a non-memory instruction).
    pub size: u8,
}

impl WarpInst {
    /// A non-memory instruction.
    pub fn compute(pc: u32, mask: u32, op: Op) -> WarpInst {
        WarpInst { pc, mask, op, space: Space::None, size: 0 }
    }

    /// Active lanes.
    #[inline]
    pub fn lanes(&self) -> u32 {
        self.mask.count_ones()
    }

    /// Addresses this instruction stores in its warp's `addrs`.
    #[inline]
    pub fn addr_count(&self) -> usize {
        if self.op.is_memory() {
            self.lanes() as usize
        } else {
            0
        }
    }
}

/// One warp's dynamic instruction stream.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WarpTrace {
    pub insts: Vec<WarpInst>,
    /// Lane addresses of the memory instructions, in order, active lanes in
    /// lane order ([`WarpInst::addr_count`] each).
    pub addrs: Vec<u64>,
}

impl WarpTrace {
    /// Append an instruction; `addrs` holds one address per active lane for
    /// a memory instruction and nothing otherwise.
    pub fn push(&mut self, inst: WarpInst, addrs: &[u64]) {
        debug_assert_eq!(addrs.len(), inst.addr_count(), "one address per active lane of a memory instruction");
        self.insts.push(inst);
        self.addrs.extend_from_slice(addrs);
    }

    /// Instructions with their lane addresses, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&WarpInst, &[u64])> + '_ {
        let mut at = 0;
        self.insts.iter().map(move |i| {
            let n = i.addr_count();
            let a = &self.addrs[at..at + n];
            at += n;
            (i, a)
        })
    }
}

/// One thread block: its index in the grid and its warps' streams.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadBlock {
    pub index: [u32; 3],
    pub warps: Vec<WarpTrace>,
}

/// One kernel launch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    /// Launch number within its application, from 1.
    pub id: u32,
    pub grid: [u32; 3],
    pub block: [u32; 3],
    /// Shared memory per thread block, bytes.
    pub shmem_bytes: u32,
    /// Registers per thread.
    pub regs_per_thread: u32,
    /// Thread blocks in launch order (x fastest, then y, then z).
    pub blocks: Vec<ThreadBlock>,
}

impl Kernel {
    /// Threads per thread block.
    pub fn threads_per_block(&self) -> u32 {
        self.block.iter().product()
    }

    /// Warps per thread block.
    pub fn warps_per_block(&self) -> u32 {
        self.threads_per_block().div_ceil(WARP_SIZE)
    }

    /// Warp instructions over the whole kernel.
    pub fn warp_insts(&self) -> u64 {
        self.blocks.iter().flat_map(|b| &b.warps).map(|w| w.insts.len() as u64).sum()
    }

    /// Thread instructions (active lanes summed) over the whole kernel.
    pub fn thread_insts(&self) -> u64 {
        self.blocks.iter().flat_map(|b| &b.warps).flat_map(|w| &w.insts).map(|i| i.lanes() as u64).sum()
    }

    /// Check the kernel is well formed: geometry, one stream per warp of each
    /// block, no empty mask, sizes and address counts that agree. `what`
    /// names the kernel's origin in the error (a file, or a generator).
    pub fn check(&self, what: &str) -> Result<()> {
        let bad = |msg: String| Err(Error::config(what.to_string(), format!("kernel {} ({}): {msg}", self.id, self.name)));
        if self.grid.contains(&0) || self.block.contains(&0) {
            return bad(format!("zero in grid {:?} or block {:?}", self.grid, self.block));
        }
        let blocks: u64 = self.grid.iter().map(|&d| d as u64).product();
        if self.blocks.len() as u64 > blocks {
            return bad(format!("{} thread blocks in a grid of {blocks}", self.blocks.len()));
        }
        let warps = self.warps_per_block() as usize;
        for b in &self.blocks {
            if b.index.iter().zip(&self.grid).any(|(i, g)| i >= g) {
                return bad(format!("thread block {:?} outside grid {:?}", b.index, self.grid));
            }
            if b.warps.len() > warps {
                return bad(format!("thread block {:?} has {} warps, its size allows {warps}", b.index, b.warps.len()));
            }
            for (w, trace) in b.warps.iter().enumerate() {
                let mut need = 0;
                for i in &trace.insts {
                    if i.mask == 0 {
                        return bad(format!("block {:?} warp {w}: an instruction with no active lane (pc {:#x})", b.index, i.pc));
                    }
                    if i.op.is_memory() != (i.space != Space::None) || i.op.is_memory() != (i.size > 0) {
                        return bad(format!("block {:?} warp {w}: {:?} with space {:?} and size {} (pc {:#x})", b.index, i.op, i.space, i.size, i.pc));
                    }
                    need += i.addr_count();
                }
                if need != trace.addrs.len() {
                    return bad(format!("block {:?} warp {w}: {} lane addresses for {need} active memory lanes", b.index, trace.addrs.len()));
                }
            }
        }
        Ok(())
    }
}

/// One buffer an application allocates before its kernels run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Allocation {
    /// What the buffer holds (for layouts and bloat reports).
    pub name: String,
    /// First virtual address (a multiple of [`ALLOC_ALIGN`]).
    pub base: u64,
    /// Bytes requested; the allocation covers them rounded up to
    /// [`ALLOC_ALIGN`].
    pub bytes: u64,
}

impl Allocation {
    /// Bytes the allocation covers.
    pub fn covered(&self) -> u64 {
        self.bytes.div_ceil(ALLOC_ALIGN) * ALLOC_ALIGN
    }

    /// Whether `va` lies in the allocation.
    pub fn contains(&self, va: u64) -> bool {
        va >= self.base && va - self.base < self.covered()
    }
}

/// Lays allocations out cudaMalloc-style: each at the next multiple of
/// [`ALLOC_ALIGN`] after the previous one, from a base address.
#[derive(Clone, Debug)]
pub struct Allocator {
    next: u64,
    pub allocations: Vec<Allocation>,
}

impl Allocator {
    /// Allocations from `base` (rounded up to [`ALLOC_ALIGN`]).
    pub fn new(base: u64) -> Allocator {
        Allocator { next: base.div_ceil(ALLOC_ALIGN) * ALLOC_ALIGN, allocations: Vec::new() }
    }

    /// Allocate `bytes` for `name`; returns the base address.
    pub fn alloc(&mut self, name: &str, bytes: u64) -> u64 {
        let a = Allocation { name: name.to_string(), base: self.next, bytes };
        self.next = a.base + a.covered();
        self.allocations.push(a);
        self.allocations.last().expect("just pushed").base
    }

    /// Bytes allocated so far (rounded as the allocations cover them).
    pub fn footprint(&self) -> u64 {
        self.allocations.iter().map(Allocation::covered).sum()
    }
}

/// Kernels of one application, one at a time, after its allocations.
pub trait KernelSource: Send {
    /// The application's buffers, all allocated before the first kernel.
    fn allocations(&self) -> &[Allocation];
    /// The next kernel, or `None` after the last.
    fn next_kernel(&mut self) -> Result<Option<Kernel>>;
    /// Buffers the application frees between kernels ([`freeing`]); none
    /// by default.
    fn frees(&self) -> &[freeing::Free] {
        &[]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(pc: u32, mask: u32) -> WarpInst {
        WarpInst { pc, mask, op: Op::Load, space: Space::Global, size: 4 }
    }

    #[test]
    fn a_warp_trace_hands_each_instruction_its_own_addresses() {
        let mut w = WarpTrace::default();
        w.push(load(0, 0b101), &[0x1000, 0x1008]);
        w.push(WarpInst::compute(0x10, u32::MAX, Op::Alu), &[]);
        w.push(load(0x20, 0b1), &[0x2000]);
        let got: Vec<(u32, Vec<u64>)> = w.iter().map(|(i, a)| (i.pc, a.to_vec())).collect();
        assert_eq!(got, vec![(0, vec![0x1000, 0x1008]), (0x10, vec![]), (0x20, vec![0x2000])]);
    }

    #[test]
    fn allocations_are_aligned_and_rounded_like_cuda_malloc() {
        let mut a = Allocator::new(0x7f00_0000_0001);
        let x = a.alloc("x", 1);
        let y = a.alloc("y", 300);
        assert_eq!(x % ALLOC_ALIGN, 0);
        assert_eq!(y, x + 256);
        assert_eq!(a.footprint(), 256 + 512);
        assert!(a.allocations[1].contains(y + 511) && !a.allocations[1].contains(y + 512));
    }

    #[test]
    fn check_refuses_malformed_kernels() {
        let mut w = WarpTrace::default();
        w.push(load(0, 0b11), &[1, 2]);
        let k = Kernel {
            name: "k".into(),
            id: 1,
            grid: [1, 1, 1],
            block: [32, 1, 1],
            shmem_bytes: 0,
            regs_per_thread: 8,
            blocks: vec![ThreadBlock { index: [0, 0, 0], warps: vec![w.clone()] }],
        };
        k.check("test").unwrap();
        let mut missing = k.clone();
        missing.blocks[0].warps[0].addrs.pop();
        assert!(missing.check("test").unwrap_err().to_string().contains("lane addresses"));
        let mut outside = k.clone();
        outside.blocks[0].index = [1, 0, 0];
        assert!(outside.check("test").is_err());
        let mut many = k.clone();
        many.blocks[0].warps.push(w);
        assert!(many.check("test").unwrap_err().to_string().contains("warps"));
        let mut empty = k;
        empty.blocks[0].warps[0].insts[0].mask = 0;
        assert!(empty.check("test").is_err());
    }
}
