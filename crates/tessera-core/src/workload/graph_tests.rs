//! Graph workload tests across modules: generated graphs have the expected
//! size and degree skew, CSR construction is right, every graph workload is
//! deterministic from its seed, and the pages it touches match its parameters.
//! (Each kernel's correctness test sits in its own module.)

use super::graph::{self, build_csr, GraphInput, GraphKind};
use super::tests::{distinct_pages, emitted};
use super::*;
use crate::rng::component_rng;

const GRAPH_WORKLOADS: &[&str] =
    &["graph500-bfs", "bfs", "mst", "spmv", "setcover", "matching", "mis", "graph-analytics"];

/// (max degree / mean degree, share of entries held by the top 1% of vertices).
fn skew(csr: &graph::Csr) -> (f64, f64) {
    let mut deg: Vec<u64> = (0..csr.n()).map(|v| csr.degree(v)).collect();
    deg.sort_unstable_by(|a, b| b.cmp(a));
    let mean = csr.nnz() as f64 / csr.n() as f64;
    let top: u64 = deg[..csr.n() / 100].iter().sum();
    (deg[0] as f64 / mean, top as f64 / csr.nnz() as f64)
}

#[test]
fn generators_have_the_requested_size() {
    for (kind, scale, ef) in [(GraphKind::Rmat, 12, 16), (GraphKind::Random, 12, 16), (GraphKind::Rmat, 5, 3)] {
        let g = GraphInput { kind, scale, edgefactor: ef };
        let edges = g.generate(1);
        assert_eq!(edges.len() as u64, ef << scale);
        let n = 1u32 << scale;
        assert!(edges.iter().all(|&[u, v]| u < n && v < n));
        // Both endpoints range over the whole id space (labels are permuted).
        let max_u = edges.iter().map(|e| e[0]).max().unwrap();
        assert!(max_u >= n - n / 8, "{kind:?}");
        let loops = edges.iter().filter(|e| e[0] == e[1]).count();
        let csr = build_csr(n as usize, &edges, false);
        assert_eq!(csr.n(), n as usize);
        assert_eq!(csr.nnz(), 2 * (edges.len() - loops), "{kind:?}: both directions, no self-loops");
    }
}

#[test]
fn kronecker_levels_follow_the_initiator() {
    // Relabelling cannot hide self-loops: an edge is a loop iff every level
    // lands on the diagonal (A or D), probability (A + D)^scale.
    let (a, d) = (graph::RMAT_A, 1.0 - graph::RMAT_A - graph::RMAT_B - graph::RMAT_C);
    for scale in [1u32, 2, 5, 6] {
        let edges = graph::kronecker_edges(scale, 400_000 >> scale, false, &mut component_rng(scale as u64, "t"));
        let loops = edges.iter().filter(|e| e[0] == e[1]).count() as f64 / edges.len() as f64;
        let want = (a + d).powi(scale as i32);
        assert!((loops - want).abs() < 0.004, "scale {scale}: loops {loops:.4}, want {want:.4}");
    }
    // At scale 1 the heavier vertex (both-bits-0 side) gets share A + (B+C)/2.
    let edges = graph::kronecker_edges(1, 400_000, false, &mut component_rng(9, "t"));
    let zeros = edges.iter().map(|e| (e[0] == 0) as u32 + (e[1] == 0) as u32).sum::<u32>() as f64;
    let share = zeros / (2.0 * edges.len() as f64);
    let heavy = share.max(1.0 - share);
    assert!((heavy - (a + graph::RMAT_B)).abs() < 0.003, "heavy share {heavy}");
}

#[test]
fn rmat_degrees_are_skewed_and_random_ones_are_not() {
    let rmat = GraphInput { kind: GraphKind::Rmat, scale: 14, edgefactor: 16 }.csr(3, true);
    let random = GraphInput { kind: GraphKind::Random, scale: 14, edgefactor: 16 }.csr(3, true);
    let (r_max, r_top) = skew(&rmat);
    let (u_max, u_top) = skew(&random);
    assert!(r_max > 30.0, "R-MAT max/mean degree {r_max}");
    assert!(r_top > 0.15, "R-MAT top-1% share {r_top}");
    assert!(u_max < 3.0, "random max/mean degree {u_max}");
    assert!(u_top < 0.03, "random top-1% share {u_top}");
    // R-MAT leaves many vertices isolated; a random graph of mean degree 32 none.
    let isolated = |c: &graph::Csr| (0..c.n()).filter(|&v| c.degree(v) == 0).count();
    assert!(isolated(&rmat) > rmat.n() / 10);
    assert_eq!(isolated(&random), 0);
}

#[test]
fn csr_is_symmetric_and_dedupe_sorts_and_removes_repeats() {
    let edges = graph::kronecker_edges(9, 16, true, &mut component_rng(2, "t"));
    let multi = build_csr(512, &edges, false);
    let simple = build_csr(512, &edges, true);
    for v in 0..512 {
        let nb = simple.neighbors(v);
        assert!(nb.windows(2).all(|w| w[0] < w[1]), "vertex {v} not sorted and unique");
        let mut m: Vec<u32> = multi.neighbors(v).to_vec();
        m.sort_unstable();
        m.dedup();
        assert_eq!(nb, &m[..]);
        for &u in nb {
            assert!(u as usize != v && simple.neighbors(u as usize).binary_search(&(v as u32)).is_ok());
        }
    }
    assert!(simple.nnz() < multi.nnz(), "R-MAT repeats edges");
    // Without dedupe, lists keep edge-list order (the Graph500 seq-csr fill).
    let v = edges[0][0] as usize;
    assert_eq!(multi.neighbors(v)[0], edges[0][1]);
}

#[test]
fn generation_is_seeded() {
    for kind in [GraphKind::Rmat, GraphKind::Random] {
        let g = GraphInput { kind, scale: 8, edgefactor: 4 };
        assert_eq!(g.generate(5), g.generate(5));
        assert_ne!(g.generate(5), g.generate(6));
    }
}

fn small(name: &str) -> Vec<(&'static str, &'static str)> {
    match name {
        "graph500-bfs" => vec![("scale", "10"), ("roots", "2")],
        "graph-analytics" => vec![("scale", "10"), ("iterations", "2")],
        "spmv" => vec![("scale", "10"), ("iterations", "2")],
        _ => vec![("scale", "10")],
    }
}

#[test]
fn graph_workloads_are_deterministic_from_seed() {
    for &name in GRAPH_WORKLOADS {
        let kv = small(name);
        let a = emitted(name, &kv, 7);
        assert!(a.len() > 5_000, "{name}: {} records", a.len());
        assert_eq!(a, emitted(name, &kv, 7), "{name} is not deterministic");
        assert_ne!(a, emitted(name, &kv, 8), "{name} ignores its seed");
    }
    // The random input too.
    let kv = [("scale", "9"), ("graph", "random")];
    assert_eq!(emitted("mis", &kv, 1), emitted("mis", &kv, 1));
    assert_ne!(emitted("mis", &kv, 1), emitted("mis", &kv, 2));
}

#[test]
fn threaded_source_delivers_the_same_stream() {
    let kv = tests::params(&[("scale", "10"), ("roots", "2")]);
    let mut src = WorkloadSource::start("graph500-bfs", &kv, 3).unwrap();
    let mut b = AccessBatch::with_capacity(BATCH_LEN);
    let mut got = Vec::new();
    while src.next_batch(&mut b).unwrap() {
        got.extend((0..b.len()).map(|i| (b.ins_gap[i], b.vaddr[i], b.kind[i], b.size[i])));
    }
    assert_eq!(src.progress().0, src.progress().1);
    assert_eq!(got, emitted("graph500-bfs", &[("scale", "10"), ("roots", "2")], 3));
}

#[test]
fn touched_pages_match_the_declared_footprint_and_scale() {
    for &name in GRAPH_WORKLOADS {
        let mut pages = Vec::new();
        for scale in ["11", "13"] {
            let mut kv: Vec<(&str, &str)> = small(name).into_iter().filter(|kv| kv.0 != "scale").collect();
            kv.push(("scale", scale));
            if name == "graph500-bfs" {
                // Kernel 1 reads the edge list, so every array is touched.
                kv.push(("construct", "true"));
            }
            let (info, p) = resolve(name, &tests::params(&kv), 1).unwrap();
            let footprint = (info.footprint)(&p).unwrap();
            let touched = distinct_pages(&emitted(name, &kv, 1)) as u64 * 4096;
            // Declared footprints are upper bounds (before dedupe); a page of
            // slack per array for alignment.
            assert!(touched <= footprint + 8 * 4096, "{name} scale {scale}: touched {touched} > declared {footprint}");
            assert!(touched * 2 > footprint, "{name} scale {scale}: touched {touched}, declared {footprint}");
            pages.push(touched);
        }
        let growth = pages[1] as f64 / pages[0] as f64;
        assert!((3.0..5.0).contains(&growth), "{name}: 4x the vertices touched {growth:.2}x the pages");
    }
}

#[test]
fn rounds_repeat_the_kernel_at_the_same_addresses() {
    for name in ["mst", "setcover", "matching", "mis"] {
        let one = emitted(name, &[("scale", "9")], 4);
        let two = emitted(name, &[("scale", "9"), ("rounds", "2")], 4);
        assert_eq!(two.len(), 2 * one.len(), "{name}");
        let strip = |r: &[(u32, u64, crate::AccessKind, u8)]| r.iter().map(|x| (x.1, x.2, x.3)).collect::<Vec<_>>();
        assert_eq!(strip(&two[..one.len()]), strip(&one), "{name}");
        assert_eq!(strip(&two[one.len()..]), strip(&one), "{name}");
    }
}

#[test]
fn tiny_graphs_run_or_fail_cleanly() {
    for &name in GRAPH_WORKLOADS {
        for scale in ["1", "2", "3"] {
            for seed in 0..4 {
                let (info, p) = resolve(name, &tests::params(&[("scale", scale), ("edgefactor", "1")]), seed).unwrap();
                let mut w = (info.build)(&p).unwrap();
                let mut sink = NullSink;
                let mut e = Emitter::new(&mut sink);
                match w.run(&mut e) {
                    Ok(()) => {}
                    // Only a search needs an edge to start from.
                    Err(err) => assert!(name.contains("bfs") && err.to_string().contains("no edges"), "{name}: {err}"),
                }
            }
        }
    }
}

#[test]
fn bad_graph_parameters_are_config_errors() {
    let e = WorkloadSource::start("bfs", &tests::params(&[("graph", "grid")]), 0).err().unwrap().to_string();
    assert!(e.contains("workload.bfs.graph") && e.contains("allowed: rmat, random"), "{e}");
    let e = WorkloadSource::start("graph500-bfs", &tests::params(&[("scale", "40")]), 0).err().unwrap().to_string();
    assert!(e.contains("workload.graph500-bfs.scale"), "{e}");
    let e = WorkloadSource::start("graph500-bfs", &tests::params(&[("graph", "rmat")]), 0).err().unwrap().to_string();
    assert!(e.contains("unknown parameter"), "{e}");
}
