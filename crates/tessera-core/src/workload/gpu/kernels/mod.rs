//! Built-in GPU kernels: real algorithms run on real generated data on the
//! host, each warp's 32 lanes in lockstep, recording every warp instruction
//! with its active mask and lane addresses.
//!
//! ## What it models
//! Each kernel is the CUDA kernel a GPU benchmark suite runs (CUDA samples,
//! Rodinia, Lonestar-GPU, GraphBIG, HPCC), written once against the warp
//! emitter ([`simt`]): the kernel's code is walked per warp, the lanes' real
//! work is done on the host for the active lanes, and branches and loops
//! narrow the mask as the lanes' data decides. Buffers are allocated
//! cudaMalloc-style ([`super::Allocator`]) from [`HEAP_BASE`] before the
//! first kernel, in the order each module documents; its launches follow one
//! another as the application's host loop issues them. Each module documents
//! its launch geometry and its instructions per thread, so IPC means
//! something.
//!
//! ## Choices
//! - Parameters are strict and documented ([`Params`]), as for the CPU
//!   workloads; data comes from the run seed through a component name.
//! - A kernel is generated whole when it is asked for
//!   ([`KernelSource::next_kernel`]), so later launches see the data
//!   earlier ones computed (a BFS level, a PageRank iteration).
//! - Adding a kernel: one file with a `pub const INFO: GpuKernelInfo` and
//!   one line in [`GPU_KERNELS`].

/// `KernelSource` for a kernel type with `launches: Launches` and
/// `fn kernel(&mut self, id: u32) -> Kernel`, whose launches end when
/// `$done` (a closure of the kernel) says so: `launches!(T)` for one launch.
macro_rules! launches {
    ($t:ty) => {
        launches!($t, |k: &$t| k.launches.issued == 1);
    };
    ($t:ty, $done:expr) => {
        impl $crate::workload::gpu::KernelSource for $t {
            fn allocations(&self) -> &[$crate::workload::gpu::Allocation] {
                &self.launches.allocations
            }

            fn next_kernel(&mut self) -> $crate::error::Result<Option<$crate::workload::gpu::Kernel>> {
                let done: fn(&$t) -> bool = $done;
                if done(self) {
                    return Ok(None);
                }
                let id = self.launches.next_id();
                Ok(Some(self.kernel(id)))
            }
        }
    };
}

pub mod simt;
mod neighbours;

pub mod bc;
pub mod bfs;
pub mod bfs_atomic;
pub mod bfs_data;
pub mod bfs_data_warp;
pub mod bfs_frontier;
pub mod bfs_warp;
pub mod gc_data;
pub mod graph_coloring;
pub mod gups;
pub mod histogram;
pub mod hotspot;
pub mod kcore;
pub mod matrix_multiply;
pub mod needleman_wunsch;
pub mod pagerank;
pub mod reduction;
pub mod scan;
pub mod spmv_csr;
pub mod srad;
pub mod sssp;
pub mod sssp_warp;
pub mod vector_add;

use std::collections::BTreeMap;

use simt::{Block, Warp};
use super::{Allocation, Allocator, Kernel, KernelSource, ThreadBlock, WARP_SIZE};
use crate::error::{Error, Result};
use crate::rng::component_rng;
use crate::workload::graph::{sample_roots, Csr, GraphInput};
use crate::workload::{ParamDoc, Params};

/// Where the first buffer of a built-in kernel's application is allocated
/// (CUDA's unified addressing puts device pointers in this region on Linux
/// x86-64).
pub const HEAP_BASE: u64 = 0x7f00_0000_0000;

/// A registered GPU kernel: name, documentation and builder.
#[derive(Copy, Clone)]
pub struct GpuKernelInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [ParamDoc],
    /// Bytes the application allocates, from the parameters alone (cheap:
    /// no generation); an upper bound where the input decides (a graph's
    /// entries after deduplication).
    pub footprint: fn(&Params) -> Result<u64>,
    /// Check parameters, generate the input and allocate the buffers.
    pub build: fn(&Params) -> Result<Box<dyn KernelSource>>,
}

/// Every built-in GPU kernel.
pub const GPU_KERNELS: &[GpuKernelInfo] = &[
    vector_add::INFO,
    reduction::INFO,
    scan::INFO,
    histogram::INFO,
    spmv_csr::INFO,
    gups::INFO,
    bfs::INFO,
    pagerank::INFO,
    matrix_multiply::INFO,
    hotspot::INFO,
    srad::INFO,
    needleman_wunsch::INFO,
    bfs_warp::INFO,
    bfs_data::INFO,
    sssp::INFO,
    graph_coloring::INFO,
    kcore::INFO,
    bc::INFO,
    bfs_atomic::INFO,
    bfs_frontier::INFO,
    bfs_data_warp::INFO,
    gc_data::INFO,
    sssp_warp::INFO,
];

/// The GraphBIG variants by the labels of the batch-aware unified-memory
/// paper (Kim et al., ASPLOS 2020), lower case: `(label, kernel)`. [`find`]
/// takes a label for its kernel; listings show only the kernels, so a
/// variant is documented and snapshotted once.
pub const GRAPHBIG_LABELS: &[(&str, &str)] = &[
    ("bfs_ttc", "bfs"),
    ("bfs_twc", "bfs_warp"),
    ("bfs_dtc", "bfs_data"),
    ("bfs_dwc", "bfs_data_warp"),
    ("bfs_ta", "bfs_atomic"),
    ("bfs_tf", "bfs_frontier"),
    ("gc_ttc", "graph_coloring"),
    ("gc_dtc", "gc_data"),
    ("sssp_ttc", "sssp"),
    ("sssp_twc", "sssp_warp"),
    ("pr", "pagerank"),
];

/// The registered GPU kernel called `name`, or labelled `name` in
/// [`GRAPHBIG_LABELS`].
pub fn find(name: &str) -> Result<&'static GpuKernelInfo> {
    let name = GRAPHBIG_LABELS.iter().find(|(label, _)| *label == name).map_or(name, |(_, kernel)| kernel);
    GPU_KERNELS.iter().find(|k| k.name == name).ok_or_else(|| {
        let names: Vec<&str> = GPU_KERNELS.iter().map(|k| k.name).collect();
        Error::config_allowed("gpu_kernel", format!("unknown GPU kernel \"{name}\""), &names)
    })
}

/// Resolve `given` parameters for the GPU kernel `name`, refusing
/// parameters whose data would not fit in this host's memory (the
/// generator holds it too, as a CPU workload does).
pub fn resolve(name: &str, given: &BTreeMap<String, String>, seed: u64) -> Result<(&'static GpuKernelInfo, Params)> {
    let info = find(name)?;
    let params = Params::resolve(info.name, info.params, given, seed)?;
    let need = (info.footprint)(&params)?;
    crate::workload::fits(&format!("gpu kernel {}", info.name), &params, need, crate::workload::host_available_bytes(), "tessera gpu kernels")?;
    Ok((info, params))
}

/// The built-in kernel `name` with `given` parameters, ready to generate.
/// Parameter `free`, which every kernel takes, is its free schedule
/// ([`super::freeing`]).
pub fn build(name: &str, given: &BTreeMap<String, String>, seed: u64) -> Result<Box<dyn KernelSource>> {
    let mut given = given.clone();
    let free = given.remove(FREE_PARAM);
    let (info, params) = resolve(name, &given, seed)?;
    let source = (info.build)(&params)?;
    match free {
        Some(text) => super::freeing::Freeing::wrap(source, &text, &params.key_path(FREE_PARAM)),
        None => Ok(source),
    }
}

/// The parameter every built-in kernel takes beside its own: buffers it
/// frees between kernels ([`super::freeing`]).
pub const FREE_PARAM: &str = "free";

/// One row of `tessera gpu kernels`.
#[derive(Clone, Debug, serde::Serialize)]
pub struct KernelListing {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: Vec<ParamDoc>,
    /// Bytes allocated at the default parameters.
    pub default_footprint: u64,
}

/// Every built-in GPU kernel with its parameters and default footprint.
pub fn listing() -> Result<Vec<KernelListing>> {
    GPU_KERNELS
        .iter()
        .map(|k| {
            let p = Params::resolve(k.name, k.params, &BTreeMap::new(), 0)?;
            Ok(KernelListing { name: k.name, summary: k.summary, params: k.params.to_vec(), default_footprint: (k.footprint)(&p)? })
        })
        .collect()
}

/// Parameter `block`: threads per block of a one-dimensional launch.
pub const BLOCK_PARAM: ParamDoc =
    ParamDoc { name: "block", default: "256", doc: "threads per thread block, 32 to 1024" };

/// Threads per block from parameter `block`.
fn block_size(p: &Params) -> Result<u32> {
    Ok(p.count_in("block", 32, 1024)? as u32)
}

/// Thread blocks for `threads` threads in blocks of `block`.
fn blocks_for(p: &Params, threads: u64, block: u32) -> Result<u32> {
    let blocks = threads.div_ceil(block as u64).max(1);
    u32::try_from(blocks).map_err(|_| {
        Error::config(p.key_path("block"), format!("{threads} threads make more than 2^32 thread blocks"))
    })
}

/// Threads per block (parameter `block`) for a launch of a thread per
/// vertex of `g`.
fn vertex_block(p: &Params, g: &GraphInput) -> Result<u32> {
    let block = block_size(p)?;
    blocks_for(p, g.vertices(), block)?;
    Ok(block)
}

/// Parameter `scale` of the graph kernels (default 14: 16384 vertices).
pub const SCALE_PARAM: ParamDoc =
    ParamDoc { name: "scale", default: "14", doc: "log2 of the vertex count (2^scale vertices), 1 to 26" };

/// The graph of a graph kernel's parameters (`graph`, `scale`,
/// `edgefactor`): device offsets are `u32`, so at most 2^32 - 1 entries.
fn graph_input(p: &Params) -> Result<GraphInput> {
    let g = GraphInput::from_params(p, true)?;
    if g.scale > 26 {
        return Err(Error::config(p.key_path("scale"), format!("must be between 1 and 26, not {}", g.scale)));
    }
    if g.max_nnz() > u32::MAX as u64 {
        return Err(Error::config(
            p.key_path("edgefactor"),
            format!("{} x 2^{} edges need more than 2^32 CSR entries", g.edgefactor, g.scale),
        ));
    }
    Ok(g)
}

/// Bytes rounded up as an allocation covers them.
fn covered(bytes: u64) -> u64 {
    bytes.div_ceil(super::ALLOC_ALIGN) * super::ALLOC_ALIGN
}

/// Upper bound on the bytes of a graph's device CSR (`u32` offsets and
/// targets), before generation.
fn csr_footprint(g: &GraphInput) -> u64 {
    covered(4 * (g.vertices() + 1)) + covered(4 * g.max_nnz())
}

/// A graph on the host and on the device: `row` (`u32` offsets, `n + 1`)
/// then `col` (`u32` targets), as the Lonestar and Rodinia kernels hold it.
struct DeviceCsr {
    csr: Csr,
    row: u64,
    col: u64,
}

impl DeviceCsr {
    fn place(heap: &mut Allocator, csr: Csr) -> DeviceCsr {
        let row = heap.alloc("row", 4 * csr.offsets.len() as u64);
        let col = heap.alloc("col", 4 * csr.nnz() as u64);
        DeviceCsr { csr, row, col }
    }

    /// The graph of `input`, generated from the run seed, as the
    /// application's first buffers on a fresh heap.
    fn generate(p: &Params, input: &GraphInput) -> (Allocator, DeviceCsr) {
        let mut heap = Allocator::new(HEAP_BASE);
        let g = DeviceCsr::place(&mut heap, input.csr(p.seed(), true));
        (heap, g)
    }

    /// A search root drawn from `component`: a vertex of degree at least 1,
    /// or vertex 0 in a graph with no edge at all.
    fn root(&self, seed: u64, component: &str) -> u32 {
        sample_roots(&self.csr.offsets, 1, &mut component_rng(seed, component)).first().copied().unwrap_or(0)
    }

    fn n(&self) -> u64 {
        self.csr.n() as u64
    }

    /// The offsets of `v`'s neighbour list.
    fn span(&self, v: u64) -> (u64, u64) {
        (self.csr.offsets[v as usize], self.csr.offsets[v as usize + 1])
    }
}

/// A kernel launch of `grid` blocks of `block` threads, each block made by
/// `body(index)` in launch order (x fastest).
fn launch(
    name: &str,
    id: u32,
    grid: [u32; 3],
    block: [u32; 3],
    shmem_bytes: u32,
    regs_per_thread: u32,
    mut body: impl FnMut([u32; 3]) -> ThreadBlock,
) -> Kernel {
    let mut blocks = Vec::with_capacity(grid.iter().map(|&d| d as usize).product());
    for z in 0..grid[2] {
        for y in 0..grid[1] {
            for x in 0..grid[0] {
                blocks.push(body([x, y, z]));
            }
        }
    }
    Kernel { name: name.to_string(), id, grid, block, shmem_bytes, regs_per_thread, blocks }
}

/// A launch of a thread per item (a vertex, a queue entry), `items` of
/// them, in `ceil(items / bs)` blocks of `bs` threads, as the thread-centric
/// graph kernels launch. Each warp issues the 3 index instructions and the
/// `i < items` guard, then `body(warp, i0)` with the lanes in range active,
/// lane `l`'s item being `i0 + l`.
fn thread_per_item(
    name: &str,
    id: u32,
    items: u64,
    bs: u32,
    regs_per_thread: u32,
    mut body: impl FnMut(&mut Warp, u64),
) -> Kernel {
    let grid = items.div_ceil(bs as u64) as u32;
    launch(name, id, [grid, 1, 1], [bs, 1, 1], 0, regs_per_thread, |[bx, _, _]| {
        let mut block = Block::new([bx, 0, 0], bs);
        for (wi, w) in block.warps.iter_mut().enumerate() {
            let i0 = bs as u64 * bx as u64 + wi as u64 * WARP_SIZE as u64;
            w.alu(3);
            let in_range = w.if_begin(|l| i0 + (l as u64) < items);
            body(w, i0);
            w.if_end(in_range);
        }
        block.finish()
    })
}

/// Launches of an application, one after another: the shared part of each
/// kernel's [`KernelSource`].
struct Launches {
    allocations: Vec<Allocation>,
    /// Launches so far.
    issued: u32,
}

impl Launches {
    fn new(allocations: Vec<Allocation>) -> Launches {
        Launches { allocations, issued: 0 }
    }

    /// The next launch's id (from 1).
    fn next_id(&mut self) -> u32 {
        self.issued += 1;
        self.issued
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// Parameters of kernel `name` from `given`, seed `seed`.
    pub fn params(name: &str, given: &[(&str, &str)], seed: u64) -> Params {
        let given: BTreeMap<String, String> = given.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        resolve(name, &given, seed).unwrap().1
    }

    /// Every kernel of `src`, each checked.
    pub fn drain(src: &mut dyn KernelSource) -> Vec<Kernel> {
        let mut out = Vec::new();
        while let Some(k) = src.next_kernel().unwrap() {
            k.check("test").unwrap();
            assert_eq!(k.id as usize, out.len() + 1);
            for a in k.blocks.iter().flat_map(|b| &b.warps).flat_map(|w| w.iter()) {
                if a.0.space.translated() {
                    for &va in a.1 {
                        assert!(
                            src.allocations().iter().any(|al| al.contains(va)),
                            "kernel {} accesses {va:#x} outside every allocation",
                            k.name
                        );
                    }
                }
            }
            out.push(k);
        }
        out
    }

    #[test]
    fn every_kernel_builds_checks_and_is_deterministic_at_small_sizes() {
        for info in GPU_KERNELS {
            let small: &[(&str, &str)] = match info.name {
                "bfs" | "pagerank" | "spmv_csr" | "sssp" | "bc" => &[("scale", "8")],
                "bfs_warp" | "bfs_data" | "graph_coloring" => &[("scale", "8")],
                "bfs_atomic" | "bfs_frontier" | "bfs_data_warp" | "gc_data" | "sssp_warp" => &[("scale", "8")],
                "kcore" => &[("scale", "8"), ("k", "4")],
                "matrix_multiply" | "hotspot" | "srad" | "needleman_wunsch" => &[("n", "64")],
                "gups" => &[("table", "64KiB"), ("threads", "1024")],
                _ => &[("n", "5000")],
            };
            let p = params(info.name, small, 7);
            let a = drain((info.build)(&p).unwrap().as_mut());
            let b = drain((info.build)(&p).unwrap().as_mut());
            assert!(!a.is_empty(), "{}", info.name);
            assert_eq!(a, b, "{} is not deterministic", info.name);
            let footprint: u64 = (info.build)(&p).unwrap().allocations().iter().map(Allocation::covered).sum();
            // Graph kernels bound their edge count before generation.
            assert!((info.footprint)(&p).unwrap() >= footprint, "{} footprint", info.name);
        }
    }

    #[test]
    fn graphbig_labels_find_their_kernels_and_are_not_kernels_themselves() {
        for &(label, kernel) in GRAPHBIG_LABELS {
            assert_eq!(find(label).unwrap().name, kernel);
            assert!(GPU_KERNELS.iter().all(|k| k.name != label), "{label}");
        }
        assert_eq!(find("bfs_ta").unwrap().name, "bfs_atomic");
        assert_eq!(listing().unwrap().len(), GPU_KERNELS.len());
        // A label builds the same application as its kernel.
        let given: BTreeMap<String, String> = [("scale".to_string(), "7".to_string())].into();
        let a = drain(build("sssp_twc", &given, 2).unwrap().as_mut());
        let b = drain(build("sssp_warp", &given, 2).unwrap().as_mut());
        assert_eq!(a, b);
    }

    #[test]
    fn unknown_kernels_list_the_known_ones() {
        let e = find("vectoradd").err().unwrap().to_string();
        assert!(e.contains("gpu_kernel") && e.contains("vector_add") && e.contains("bfs"), "{e}");
    }
}
