//! Synthetic streams as seen by a consumer: determinism, bounds, batch filling.

mod trace_support;

mod synthetic {
    use tessera_core::access::{AccessBatch, AccessKind};
    use tessera_core::stream::synthetic::{Pattern, Synthetic, SyntheticSpec, BASE_VADDR};
    use tessera_core::stream::AccessSource;

    use crate::trace_support::*;

    fn all(spec: &SyntheticSpec, cap: usize) -> Vec<Rec> {
        drain(&mut Synthetic::new(spec.clone()).unwrap(), cap).unwrap()
    }

    #[test]
    fn synthetic_streams_are_deterministic_per_seed() {
        for p in [Pattern::Uniform, Pattern::Sequential, Pattern::HotCold] {
            let spec = SyntheticSpec::new(p, 50_000, 1 << 22, 42);
            assert_eq!(all(&spec, 8192), all(&spec, 1000), "{p}");
            let other = SyntheticSpec {
                seed: 43,
                ..spec.clone()
            };
            assert_ne!(all(&spec, 8192), all(&other, 8192), "{p}");
        }
    }

    #[test]
    fn synthetic_accesses_stay_inside_the_footprint() {
        for p in [Pattern::Uniform, Pattern::Sequential, Pattern::HotCold] {
            for fp in [8u64, 4096, 3 << 20, 1 << 40] {
                let spec = SyntheticSpec::new(p, 20_000, fp, 1);
                let recs = all(&spec, 8192);
                assert_eq!(recs.len(), 20_000);
                for &(gap, a, kind, size, asid) in &recs {
                    assert!(
                        a >= BASE_VADDR && a + size as u64 <= BASE_VADDR + fp,
                        "{p} {fp}: {a:#x}"
                    );
                    assert_eq!(a % 8, 0);
                    assert_eq!((gap, size, asid), (3, 8, 0));
                    assert_ne!(kind, AccessKind::IFetch);
                }
            }
        }
    }

    #[test]
    fn synthetic_uniform_covers_the_footprint() {
        let spec = SyntheticSpec::new(Pattern::Uniform, 200_000, 1 << 20, 5);
        let pages: std::collections::HashSet<u64> =
            all(&spec, 8192).iter().map(|r| r.1 >> 12).collect();
        assert_eq!(pages.len(), 256);
    }

    #[test]
    fn synthetic_batches_are_filled_to_capacity() {
        let mut s =
            Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 10_000, 1 << 20, 0)).unwrap();
        let mut b = AccessBatch::with_capacity(3000);
        let mut lens = Vec::new();
        while s.next_batch(&mut b).unwrap() {
            lens.push(b.len());
            assert_eq!(s.progress().1, 10_000);
        }
        assert_eq!(lens, vec![3000, 3000, 3000, 1000]);
        assert_eq!(s.progress(), (10_000, 10_000));
        assert!(!s.next_batch(&mut b).unwrap() && b.is_empty());
    }

    #[test]
    fn synthetic_describe_names_the_parameters() {
        let s = Synthetic::new(SyntheticSpec::new(Pattern::Uniform, 1000, 1 << 20, 9)).unwrap();
        assert_eq!(
            s.describe(),
            "synthetic:uniform accesses=1000 footprint=1048576 seed=9"
        );
        let spec = SyntheticSpec {
            stride: 128,
            store_fraction: 0.5,
            ..SyntheticSpec::new(Pattern::Sequential, 5, 4096, 1)
        };
        assert_eq!(
            Synthetic::new(spec).unwrap().describe(),
            "synthetic:sequential accesses=5 footprint=4096 seed=1 store_fraction=0.5 stride=128"
        );
    }

    #[test]
    fn synthetic_store_fraction_extremes() {
        for (f, want) in [(0.0, AccessKind::Load), (1.0, AccessKind::Store)] {
            let spec = SyntheticSpec {
                store_fraction: f,
                ..SyntheticSpec::new(Pattern::HotCold, 5000, 1 << 16, 2)
            };
            assert!(all(&spec, 512).iter().all(|r| r.2 == want));
        }
    }
}
