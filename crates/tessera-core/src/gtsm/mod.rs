//! GTSM: superpages over non-contiguous physical memory (the parts that are
//! pure functions of a fault map).
//!
//! ## What it models
//! GTSM maps a superpage of S bytes over a *slice* of 2S bytes cut into 64
//! *B-blocks* of B = S/32 bytes: a 64-bit block-selection bitmap picks 32
//! B-blocks with no retired page, in order. Which slices can host such a
//! mapping depends only on where retired pages are, so it is computed here
//! without a machine:
//! - [`slice`]: a slice's *BAV* (block availability vector: bit k set when
//!   B-block k holds no retired frame) from a fault map, and slice validity;
//! - [`pairing`]: Algorithm 1, which pairs slices of one 128 MB chunk into
//!   P-GT-PDEs (two GT-PDEs sharing one bitmap);
//! - [`montecarlo`]: the paper's capacity estimates (Figs. 3, 7 and 14,
//!   Table 2) by Monte Carlo over uniform retired pages, with confidence
//!   intervals, beside their closed forms.
//!
//! The page-table formats (GT-PDE, P-GT-PDE), the OS policy that maps with
//! them and the walker's decode are not built yet.
//! ## Paper
//! Du, Zhou, Childers, Mossé and Melhem, "Supporting superpages in
//! non-contiguous physical memory", HPCA 2015: §3.2–3.6, §3.8, §4.1,
//! Algorithm 1, Figs. 3, 7, 14, Table 2.

pub mod montecarlo;
pub mod pairing;
pub mod slice;
