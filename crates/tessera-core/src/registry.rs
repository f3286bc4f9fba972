//! The one list of mechanisms. Every family is a trait with named
//! implementations; one line here registers a mechanism under the name used as
//! its config `kind`, its file stem and its stats segment.
//!
//! `family!` expands each family into: the `AnyX` enum (static dispatch, no
//! vtable on the hot path), the delegating trait impl, the name table used in
//! error messages and `tessera list`, and `build`, which validates the
//! mechanism's config section and constructs it.

use crate::error::{Error, Result};
use serde::{de::DeserializeOwned, Serialize};

/// Construction side of a mechanism, kept apart from its hot-path trait.
pub trait Mechanism: Sized {
    /// Registry key == config `kind` == file stem == stats segment.
    const NAME: &'static str;
    /// One line for `tessera list`.
    const SUMMARY: &'static str;
    /// The mechanism's own config section (without `kind`), strict.
    type Config: DeserializeOwned + Serialize + Default + Clone;
    /// What the owner hands over at build time (geometry, seed, ...).
    type Ctx;
    fn build(cfg: &Self::Config, ctx: &Self::Ctx) -> Result<Self>;
}

/// A validated mechanism section: the registry name and its full parameter
/// table (defaults filled in), as stored in the resolved config.
///
/// Written in TOML either as a bare name (`replacement = "lru"`) or as a table
/// (`replacement = { kind = "random" }`); both deserialise to this.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct MechanismSpec {
    pub kind: String,
    #[serde(flatten)]
    pub params: toml::Table,
}

/// Validate `params` as `M::Config` at `path` and return it with defaults filled.
pub fn check_params<M: Mechanism>(params: &toml::Table, path: &str) -> Result<toml::Table> {
    let cfg: M::Config = parse_table(params, path)?;
    match toml::Value::try_from(&cfg) {
        Ok(toml::Value::Table(t)) => Ok(t),
        Ok(_) => Ok(toml::Table::new()),
        Err(e) => Err(Error::config(path, format!("cannot serialise config: {e}"))),
    }
}

/// Deserialise a TOML table into `T`, reporting the full dotted path of any error.
pub fn parse_table<T: DeserializeOwned>(table: &toml::Table, path: &str) -> Result<T> {
    let value = toml::Value::Table(table.clone());
    crate::config::deserialize_at(value, path)
}

/// Split a mechanism section (`"lru"` or `{ kind = "lru", ... }`) into kind and params.
pub fn split_section(value: &toml::Value, path: &str, names: &[&str]) -> Result<(String, toml::Table)> {
    match value {
        toml::Value::String(s) => Ok((s.clone(), toml::Table::new())),
        toml::Value::Table(t) => {
            let mut t = t.clone();
            match t.remove("kind") {
                Some(toml::Value::String(s)) => Ok((s, t)),
                Some(_) => Err(Error::config_allowed(format!("{path}.kind"), "must be a string", names)),
                None => Err(Error::config_allowed(format!("{path}.kind"), "missing mechanism name", names)),
            }
        }
        _ => Err(Error::config_allowed(path, "must be a name or a table with `kind`", names)),
    }
}

/// A member of a family with a visitor, found again in the family's enum by
/// code generic over members (a path chosen for one member at build time
/// reaches it without matching the others).
pub trait Member<Any> {
    fn of(any: &Any) -> Option<&Self>;
}

macro_rules! family {
    (@method $any:ident, [$($v:ident),*], mut, $m:ident, ($($arg:ident : $argty:ty),*), $args:tt, ($($ret:ty)?)) => {
        // A dispatch is one match: inlining it lets each call site inline the
        // member it meets most (the hot set-associative TLB fill sat behind
        // an out-of-line match otherwise, ~10 % of a walk-bound stream).
        #[inline(always)]
        fn $m(&mut self, $($arg: $argty),*) $(-> $ret)? {
            match self { $( $any::$v(x) => x.$m $args ),* }
        }
    };
    (@method $any:ident, [$($v:ident),*], ref, $m:ident, ($($arg:ident : $argty:ty),*), $args:tt, ($($ret:ty)?)) => {
        #[inline(always)]
        fn $m(&self, $($arg: $argty),*) $(-> $ret)? {
            match self { $( $any::$v(x) => x.$m $args ),* }
        }
    };
    (
        $(#[$doc:meta])*
        family $trait_:path => $any:ident, ctx $ctx:ty, key $key:literal $(, visitor $vis:ident)? {
            $( $name:literal => $variant:ident ( $ty:path ) ),* $(,)?
        }
        methods { $( $recv:ident fn $m:ident ( $($arg:ident : $argty:ty),* ) $(-> $ret:ty)? ; )* }
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub enum $any { $( $variant($ty) ),* }

        impl $any {
            /// Registered names, in registration order.
            pub const NAMES: &'static [&'static str] = &[$($name),*];
            /// One-line summaries, for `tessera list`.
            pub const SUMMARIES: &'static [(&'static str, &'static str)] =
                &[$( ($name, <$ty as $crate::registry::Mechanism>::SUMMARY) ),*];
            /// Config key of this family (for docs).
            pub const KEY: &'static str = $key;

            /// Validate a section and return it resolved (defaults filled).
            pub fn resolve(value: &toml::Value, path: &str) -> $crate::error::Result<$crate::registry::MechanismSpec> {
                let (kind, params) = $crate::registry::split_section(value, path, Self::NAMES)?;
                match kind.as_str() {
                    $( $name => {
                        let params = $crate::registry::check_params::<$ty>(&params, path)?;
                        Ok($crate::registry::MechanismSpec { kind, params })
                    } )*
                    other => Err($crate::error::Error::config_allowed(
                        format!("{path}.kind"),
                        format!("unknown {} \"{}\"", $key, other),
                        Self::NAMES,
                    )),
                }
            }

            /// Build the mechanism named by a resolved spec.
            pub fn build(spec: &$crate::registry::MechanismSpec, ctx: &$ctx, path: &str) -> $crate::error::Result<Self> {
                match spec.kind.as_str() {
                    $( $name => {
                        debug_assert_eq!(<$ty as $crate::registry::Mechanism>::NAME, $name);
                        let cfg = $crate::registry::parse_table::<<$ty as $crate::registry::Mechanism>::Config>(&spec.params, path)?;
                        Ok($any::$variant(<$ty as $crate::registry::Mechanism>::build(&cfg, ctx)?))
                    } )*
                    other => Err($crate::error::Error::config_allowed(
                        format!("{path}.kind"),
                        format!("unknown {} \"{}\"", $key, other),
                        Self::NAMES,
                    )),
                }
            }

            /// The registry name of the built mechanism.
            pub fn name(&self) -> &'static str {
                match self { $( $any::$variant(_) => $name ),* }
            }
        }

        family!(@impl $trait_, $any, [$($variant),*], $( ($recv, $m, ($($arg : $argty),*), ($($arg),*), ($($ret)?)) )*);
        family!(@visitor $trait_, $any, [$($vis)?], [$( ($variant, $ty) ),*]);
    };
    (@visitor $trait_:path, $any:ident, [], $vars:tt) => {};
    (@visitor $trait_:path, $any:ident, [$vis:ident], [$( ($v:ident, $t:path) ),*]) => {
        /// Code generic over the family's members, run by [`visit`]: a loop
        /// that calls a mechanism many times dispatches once, and each member
        /// gets its own monomorphised copy.
        pub trait $vis {
            type Out;
            fn visit<M: $trait_ + $crate::registry::Member<$any>>(self, member: &M) -> Self::Out;
        }

        impl $any {
            /// Run `v` on the concrete member.
            #[inline(always)]
            pub fn visit<V: $vis>(&self, v: V) -> V::Out {
                match self { $( $any::$v(x) => v.visit(x) ),* }
            }
        }

        $( family!(@member $any, $v, $t); )*
    };
    (@member $any:ident, $v:ident, $t:path) => {
        impl $crate::registry::Member<$any> for $t {
            #[inline(always)]
            fn of(any: &$any) -> Option<&Self> {
                match any { $any::$v(x) => Some(x), #[allow(unreachable_patterns)] _ => None }
            }
        }
    };
    (@impl $trait_:path, $any:ident, $vars:tt, $( ($recv:ident, $m:ident, $params:tt, $args:tt, $ret:tt) )*) => {
        impl $trait_ for $any {
            $( family!(@method $any, $vars, $recv, $m, $params, $args, $ret); )*
        }
    };
}

// ---------------------------------------------------------------------------
// The registry. One line per mechanism.
// ---------------------------------------------------------------------------

family! {
    /// Replacement policy of a set-associative structure (`replacement`).
    family crate::replacement::Replacement => AnyReplacement, ctx crate::replacement::Geometry, key "replacement" {
        "lru" => Lru(crate::replacement::lru::Lru),
        "random" => Random(crate::replacement::random::Random),
    }
    methods {
        ref fn repeat_hits_free() -> bool;
        mut fn on_hit(set: u32, way: u32);
        mut fn on_fill(set: u32, way: u32);
        mut fn on_invalidate(set: u32, way: u32);
        mut fn victim(set: u32) -> u32;
    }
}

family! {
    /// Physical frame allocator (`physmem.allocator`).
    #[repr(u8)] // A tag byte: every fault matches the allocator (no niche decoding).
    family crate::physmem::allocator::FrameAllocator => AnyAllocator, ctx crate::physmem::allocator::AllocCtx, key "allocator" {
        "buddy" => Buddy(crate::physmem::allocator::buddy::Buddy),
        "iceberg" => Iceberg(crate::physmem::allocator::iceberg::Iceberg),
        "cocoa" => Cocoa(crate::physmem::allocator::cocoa::Cocoa),
    }
    methods {
        mut fn alloc(order: u32) -> Option<crate::addr::Pfn>;
        mut fn free(pfn: crate::addr::Pfn, order: u32);
        ref fn free_frames() -> u64;
        ref fn largest_free_order() -> Option<u32>;
        mut fn reserve(pfn: crate::addr::Pfn) -> bool;
        mut fn reserve_block(pfn: crate::addr::Pfn, order: u32) -> bool;
        ref fn check_invariants() -> std::result::Result<(), String>;
        mut fn alloc_page(req: &crate::physmem::allocator::PageRequest) -> Option<crate::addr::Pfn>;
        mut fn hear_allocation(asid: crate::addr::Asid, va: u64, bytes: u64);
        ref fn needs_allocations() -> bool;
        mut fn fallback_page(req: &crate::physmem::allocator::PageRequest) -> Option<crate::addr::Pfn>;
        mut fn evacuate(moves: &mut Vec<crate::physmem::allocator::Move>) -> bool;
        mut fn evacuate_frame(pfn: crate::addr::Pfn, moves: &mut Vec<crate::physmem::allocator::Move>) -> bool;
        ref fn can_evacuate() -> bool;
        mut fn page_mapped(pfn: crate::addr::Pfn, req: &crate::physmem::allocator::PageRequest);
        mut fn page_freed(pfn: crate::addr::Pfn, req: &crate::physmem::allocator::PageRequest);
        mut fn place(req: &crate::physmem::allocator::PageRequest, ages: Option<&dyn crate::physmem::allocator::PageAges>) -> crate::physmem::allocator::Placement;
        mut fn claim(pfn: crate::addr::Pfn, req: &crate::physmem::allocator::PageRequest) -> bool;
        ref fn table_headroom(req: &crate::physmem::allocator::PageRequest) -> u64;
        ref fn frees_table_room(pfn: crate::addr::Pfn) -> bool;
        ref fn needs_ages() -> bool;
        ref fn table_frame_name() -> &'static str;
        ref fn table_area() -> Option<(u64, u64)>;
        ref fn visit_stats(v: &mut dyn crate::stats::StatVisitor);
    }
}

family! {
    /// Source of retired (faulty, never allocated) 4 KiB frames (`physmem.retired`).
    family crate::physmem::retired::Retirement => AnyRetirement, ctx crate::physmem::retired::RetireCtx, key "retired" {
        "none" => NoRetirement(crate::physmem::retired::none::NoRetirement),
        "uniform" => Uniform(crate::physmem::retired::uniform::Uniform),
        "clustered" => Clustered(crate::physmem::retired::clustered::Clustered),
        "file" => File(crate::physmem::retired::file::File),
    }
    methods {
        ref fn mark(map: &mut crate::physmem::retired::RetiredMap) -> crate::error::Result<()>;
    }
}

family! {
    /// Page-size policy: which page size backs a first touch (`physmem.page_size`).
    family crate::page_size::PageSizePolicy => AnyPageSizePolicy, ctx crate::page_size::PolicyCtx, key "page_size" {
        "base_only" => BaseOnly(crate::page_size::base_only::BaseOnly),
        "thp" => Thp(crate::page_size::thp::Thp),
        "gtsm" => Gtsm(crate::page_size::gtsm::Gtsm),
        "in_place" => InPlace(crate::page_size::in_place::InPlaceCoalescer),
    }
    methods {
        ref fn plans() -> &[crate::page_size::Plan];
        ref fn in_place() -> Option<crate::page_size::InPlace>;
    }
}

family! {
    /// Data prefetcher attached to one cache level (`cache.<level>.prefetcher`).
    family crate::cache::prefetch::Prefetcher => AnyPrefetcher, ctx (), key "prefetcher" {
        "none" => NoPrefetch(crate::cache::prefetch::none::NoPrefetch),
        "next_line" => NextLine(crate::cache::prefetch::next_line::NextLine),
        "stride" => Stride(crate::cache::prefetch::stride::Stride),
    }
    methods {
        mut fn on_access(line_addr: u64, hit: bool, out: &mut crate::cache::prefetch::PrefetchBuf);
        mut fn set_line_bytes(bytes: u64);
    }
}

family! {
    /// Page-table format (`pagetable.format`).
    #[repr(u8)] // A tag byte: every walk matches the format once (no niche decoding).
    family crate::pagetable::format::PageTableFormat => AnyFormat, ctx crate::pagetable::x86_radix::FormatCtx, key "format", visitor FormatVisitor {
        "x86_radix" => X86Radix(crate::pagetable::x86_radix::X86Radix),
        "radix" => Radix(crate::pagetable::radix::Radix),
        "mosaic_toc" => MosaicToc(crate::pagetable::mosaic_toc::MosaicToc),
        "gt_pde" => GtPde(crate::pagetable::gt_table::GtTable),
    }
    methods {
        ref fn levels() -> u32;
        ref fn level_shift(level: u32) -> u32;
        ref fn index(va: u64, level: u32) -> u64;
        ref fn entry_words() -> u32;
        ref fn level_entry_words(level: u32) -> u32;
        ref fn va_bits() -> u32;
        ref fn sizes() -> &[crate::addr::PageSize];
        ref fn leaf_level(size: crate::addr::PageSize) -> Option<u32>;
        ref fn decode(raw: u64, level: u32, va: u64, asid: crate::addr::Asid, word: &dyn Fn(u32) -> u64) -> crate::pagetable::format::Step;
        ref fn used(raw: u64, leaf: bool, write: bool) -> u64;
        ref fn is_dirty(raw: u64) -> bool;
        ref fn is_accessed(raw: u64) -> bool;
        ref fn clear_accessed(raw: u64) -> u64;
        ref fn encode_table(node: crate::addr::Pfn, level: u32) -> u64;
        ref fn encode_leaf(size: crate::addr::PageSize, pfn: crate::addr::Pfn) -> u64;
        ref fn large_keeps_node() -> bool;
        ref fn disabled_bit() -> u64;
        ref fn allows_shortcuts() -> bool;
        ref fn table_word(va: u64, level: u32) -> u32;
        ref fn node_shift(level: u32) -> u32;
        ref fn decode_cycles(raw: u64, level: u32) -> u32;
        ref fn node_order(level: u32) -> u32;
        ref fn padding_word(va: u64, level: u32) -> Option<u64>;
        ref fn psc_caches_entries(level: u32) -> bool;
        ref fn set_page(words: &mut [u64], va: u64, asid: crate::addr::Asid, pfn: Option<crate::addr::Pfn>) -> crate::error::Result<()>;
    }
}

family! {
    /// Page eviction policy of the OS model (`os.eviction`).
    family crate::os::eviction::EvictionPolicy => AnyEviction, ctx crate::os::eviction::EvictionCtx, key "eviction" {
        "lru" => Lru(crate::os::eviction::lru::Lru),
        "clock" => Clock(crate::os::eviction::clock::Clock),
        "linux_like" => LinuxLike(crate::os::eviction::linux_like::LinuxLike),
        "horizon" => Horizon(crate::os::eviction::horizon::Horizon),
        "root_chunk" => RootChunk(crate::os::eviction::root_chunk::RootChunk),
    }
    methods {
        mut fn on_map(page: u64);
        mut fn on_unmap(page: u64);
        mut fn on_evict(page: u64);
        ref fn wants_touches() -> bool;
        mut fn on_touch(page: u64);
        mut fn victim(bits: &mut dyn crate::os::eviction::AccessedBits) -> Option<u64>;
        ref fn resident() -> u64;
        ref fn eviction_unit_frames() -> u64;
        ref fn ages() -> Option<&dyn crate::physmem::allocator::PageAges>;
        ref fn scans() -> bool;
        ref fn scan_due() -> bool;
        mut fn scan(bits: &mut dyn crate::os::eviction::AccessedBits);
        ref fn visit_stats(v: &mut dyn crate::stats::StatVisitor);
    }
}

family! {
    /// Organisation of one TLB structure: what an entry covers and how it is filled (`mmu.tlb.<name>.organisation`).
    #[repr(u8)] // A tag byte: matching a variant is one compare, however many members (no niche decoding).
    family crate::tlb::TlbOrganisation => AnyTlbOrganisation, ctx crate::tlb::TlbCtx, key "organisation" {
        "set_assoc" => SetAssoc(crate::tlb::set_assoc::SetAssoc),
        "coalescing" => Coalescing(crate::tlb::coalescing::Coalescing),
        "mosaic" => Mosaic(crate::tlb::mosaic::Mosaic),
    }
    methods {
        mut fn lookup(va: u64, asid: crate::addr::Asid) -> crate::tlb::Probe;
        mut fn fill(f: &crate::tlb::Fill, nb: &crate::tlb::Neighbours, absent: bool) -> bool;
        mut fn insert_entry(e: crate::tlb::Entry, absent: bool) -> Option<crate::tlb::Entry>;
        mut fn remove_entry(tag: u64) -> bool;
        ref fn moves_entries() -> bool;
        ref fn memo_safe() -> bool;
        ref fn subpage_fill(va: u64, asid: crate::addr::Asid) -> bool;
        ref fn neighbours_wanted() -> u32;
        ref fn gt_neighbours_wanted() -> u32;
        ref fn entry_neighbours(va: u64, asid: crate::addr::Asid, out: &mut crate::tlb::Neighbours);
        mut fn mark_dirty(va: u64, asid: crate::addr::Asid);
        mut fn invalidate_page(va: u64, asid: crate::addr::Asid) -> u64;
        mut fn flush_asid(asid: crate::addr::Asid) -> u64;
        ref fn occupancy() -> usize;
        ref fn visit_stats(v: &mut dyn crate::stats::StatVisitor);
    }
}

family! {
    /// The GPU's fault path (`gpu.paging`): from a page found not present to the page usable.
    family crate::machine::gpu::paging::FaultPath => AnyFaultPath, ctx crate::machine::gpu::paging::PagingCtx, key "paging" {
        "demand" => Demand(crate::machine::gpu::paging::demand::Demand),
        "resident" => Resident(crate::machine::gpu::paging::resident::Resident),
        "uvm" => Uvm(crate::machine::gpu::paging::uvm::Uvm),
    }
    methods {
        ref fn premaps() -> bool;
        ref fn unit() -> Option<crate::addr::PageSize>;
        ref fn memory() -> f64;
        mut fn raise(fault: crate::machine::gpu::paging::FarFault, now: u64) -> Option<u64>;
        ref fn next_poll() -> Option<u64>;
        ref fn lifetimes() -> (u64, u64);
        mut fn poll(now: u64, host: &mut dyn crate::machine::gpu::paging::PagingHost, done: &mut Vec<crate::machine::gpu::paging::FarFault>) -> crate::error::Result<()>;
        ref fn throttle() -> Option<bool>;
        ref fn decompress_cycles() -> u64;
        ref fn stalls_sms() -> bool;
        ref fn visit_stats(v: &mut dyn crate::stats::StatVisitor);
    }
}

family! {
    /// Prefetcher of the unified-memory fault path (`gpu.paging.prefetch`).
    family crate::machine::gpu::paging::prefetch::Prefetcher => AnyPagePrefetcher, ctx crate::machine::gpu::paging::prefetch::PrefetchCtx, key "prefetch" {
        "none" => None_(crate::machine::gpu::paging::prefetch::none::NoPrefetch),
        "sequential_local" => SequentialLocal(crate::machine::gpu::paging::prefetch::sequential_local::SequentialLocal),
        "tree_neighbourhood" => TreeNeighbourhood(crate::machine::gpu::paging::prefetch::tree_neighbourhood::TreeNeighbourhood),
        "nvidia_tree" => NvidiaTree(crate::machine::gpu::paging::prefetch::nvidia_tree::NvidiaTree),
        "random" => Random(crate::machine::gpu::paging::prefetch::random::RandomPrefetch),
    }
    methods {
        mut fn prefetch(block: &crate::machine::gpu::paging::prefetch::Block, out: &mut crate::machine::gpu::paging::prefetch::Bits);
    }
}


/// Every family with its config key and its mechanisms' summaries.
pub fn families() -> Vec<(&'static str, &'static [(&'static str, &'static str)])> {
    vec![
        (AnyReplacement::KEY, AnyReplacement::SUMMARIES),
        (AnyAllocator::KEY, AnyAllocator::SUMMARIES),
        (AnyRetirement::KEY, AnyRetirement::SUMMARIES),
        (AnyPageSizePolicy::KEY, AnyPageSizePolicy::SUMMARIES),
        (AnyPrefetcher::KEY, AnyPrefetcher::SUMMARIES),
        (AnyFormat::KEY, AnyFormat::SUMMARIES),
        (AnyEviction::KEY, AnyEviction::SUMMARIES),
        (AnyTlbOrganisation::KEY, AnyTlbOrganisation::SUMMARIES),
        (AnyFaultPath::KEY, AnyFaultPath::SUMMARIES),
        (AnyPagePrefetcher::KEY, AnyPagePrefetcher::SUMMARIES),
    ]
}

impl<'de> serde::Deserialize<'de> for MechanismSpec {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = toml::Value::deserialize(d)?;
        match split_section(&value, "", &[]) {
            Ok((kind, params)) => Ok(MechanismSpec { kind, params }),
            Err(_) => Err(serde::de::Error::custom(
                "expected a mechanism name (e.g. \"lru\") or a table with a `kind` key",
            )),
        }
    }
}
