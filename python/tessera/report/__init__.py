"""Reproduction reports: re-run a paper's study on Tessera and put our numbers
next to the paper's.

>>> import tessera
>>> tessera.reproduce("mmu-analysis", out="mmu-report", quick=True)   # doctest: +SKIP

Studies (:data:`STUDIES`):

- ``mmu-analysis``: Karakostas et al., "Performance Analysis of the Memory
  Management Unit under Scale-out Workloads" (IISWC 2014);
  see :mod:`tessera.report.mmu_analysis` and docs/reproduce-mmu-analysis.md.
- ``mosaic-pages``: Gosakan et al., "Mosaic Pages: Big TLB Reach with Small
  Pages" (ASPLOS 2023); see :mod:`tessera.report.mosaic_pages` and
  docs/reproduce-mosaic-pages.md.
- ``gtsm``: Du et al., "Supporting Superpages in Non-Contiguous Physical
  Memory" (HPCA 2015); see :mod:`tessera.report.gtsm_study` and
  docs/reproduce-gtsm.md.
- ``mosaic-motivation``: Ausavarungnirun et al., "Mosaic: A GPU Memory
  Manager with Application-Transparent Support for Multiple Page Sizes"
  (MICRO 2017), its §3 on the GPU machine; see
  :mod:`tessera.report.mosaic_motivation` and docs/reproduce-mosaic-motivation.md.
- ``mosaic-gpu``: the same paper's evaluation (§6): Mosaic against GPU-MMU
  and an ideal TLB; see :mod:`tessera.report.mosaic_gpu` and
  docs/reproduce-mosaic-gpu.md.
- ``uvm-batching``: Kim et al., "Batch-Aware Unified Memory Management in
  GPUs for Irregular Workloads" (ASPLOS 2020), its Figs. 11–18: thread
  oversubscription and unobtrusive eviction against the baseline, PCIe
  compression and ETC; see :mod:`tessera.report.uvm_batching` and
  docs/reproduce-uvm-batching.md.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any, Optional, Union

__all__ = ["STUDIES", "reproduce"]

#: Study name → one-line description.
STUDIES = {
    "mmu-analysis": "scale-out MMU study (Karakostas et al.): walks with 4 KiB/THP, Eq. 1, perfect-MMU bounds, prefetchers",
    "mosaic-pages": "Mosaic Pages (Gosakan et al.): Fig. 6 TLB misses, Table 3 utilisation, Table 4 swap I/O, and beyond",
    "gtsm": "GTSM superpages (Du et al.): Figs. 11-13 walks and IPC, Figs. 15-18 sensitivities, retired pages",
    "mosaic-motivation": "Mosaic GPU (Ausavarungnirun et al.) §3: Fig. 3 TLB cost, Fig. 4 demand paging, bloat, L2 TLB vs PWC",
    "mosaic-gpu": "Mosaic GPU (Ausavarungnirun et al.) §6: Mosaic vs GPU-MMU vs ideal TLB, Figs. 8-16, coalescing, bloat",
    "uvm-batching": "batch-aware unified memory (Kim et al.): Figs. 11-18, TO, UE, PCIe compression, ETC, ratio, handling",
}


def reproduce(
    study: str = "mmu-analysis",
    out: Union[str, "os.PathLike[str]", None] = None,
    *,
    quick: bool = False,
    scale: Optional[str] = None,
    store: Optional[str] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: bool = False,
    command: Optional[str] = None,
    warmup: Optional[str] = None,
    models: Optional[Sequence[str]] = None,
) -> Any:
    """Run ``study``'s sweep and write its report (``report.md``,
    ``report.html``, figures, data, the sweep TOML) into ``out``.

    ``quick=True`` runs the smaller sweep (a few minutes on 2 cores);
    ``scale`` names a scale directly (``"full"``, ``"quick"``, or ``"tiny"``,
    which only exercises the pipeline). Results are kept in ``store``
    (default ``<out>/store.sqlite``) and reused on a rerun unless ``force``.
    ``executor``/``jobs`` are passed to ``tessera.sweep``. ``warmup``
    replaces the study's default warm-up (about 20 % of each workload's
    instructions) with one for every workload, ``"0"`` for none. Returns a
    :class:`tessera.report.mmu_analysis.Reproduction` (``mosaic-pages``: a
    :class:`tessera.report.mosaic_run.Reproduction`; it has no warm-up, so
    ``warmup`` must be left out; ``gtsm``: a
    :class:`tessera.report.gtsm_run.Reproduction`, whose warm-ups are its
    own, so ``warmup`` must be left out too; ``mosaic-motivation``: a
    :class:`tessera.report.mosaic_motivation_run.Reproduction`, no warm-up;
    ``mosaic-gpu`` and ``uvm-batching``: the same class, no warm-up).
    ``models`` (mmu-analysis only): the CPU timing models to run, the
    report's main one first (default ``("ooo", "interval")``).
    """
    if study not in STUDIES:
        raise ValueError(f"unknown study {study!r} (allowed: {', '.join(STUDIES)})")
    if scale is not None and quick and scale != "quick":
        raise ValueError(f"quick=True contradicts scale={scale!r}")
    scale = scale or ("quick" if quick else "full")
    if models is not None and study != "mmu-analysis":
        raise ValueError(f"models applies only to mmu-analysis, not to {study}")
    if study == "gtsm":
        from tessera.report import gtsm_run, gtsm_study

        if warmup is not None:
            raise ValueError("gtsm warms each workload up on its own share of instructions; --warmup does not apply")
        if out is None:
            out = os.path.join("tessera-results", gtsm_study.sweep_name(scale))
        return gtsm_run.reproduce(out, scale=scale, store=store, executor=executor, jobs=jobs, force=force,
                                  progress=progress, command=command)
    if study == "mosaic-motivation":
        from tessera.report import mosaic_motivation, mosaic_motivation_run

        if warmup is not None:
            raise ValueError("mosaic-motivation runs each GPU kernel from its start to its end: --warmup does not apply")
        if out is None:
            out = os.path.join("tessera-results", mosaic_motivation.sweep_name(scale))
        return mosaic_motivation_run.reproduce(out, scale=scale, store=store, executor=executor, jobs=jobs,
                                               force=force, progress=progress, command=command)
    if study == "mosaic-gpu":
        from tessera.report import mosaic_gpu, mosaic_gpu_run

        if warmup is not None:
            raise ValueError("mosaic-gpu runs each GPU kernel from its start to its end: --warmup does not apply")
        if out is None:
            out = os.path.join("tessera-results", mosaic_gpu.sweep_name(scale))
        return mosaic_gpu_run.reproduce(out, scale=scale, store=store, executor=executor, jobs=jobs,
                                        force=force, progress=progress, command=command)
    if study == "uvm-batching":
        from tessera.report import uvm_batching, uvm_batching_run

        if warmup is not None:
            raise ValueError("uvm-batching runs each GPU kernel from its start to its end: --warmup does not apply")
        if out is None:
            out = os.path.join("tessera-results", uvm_batching.sweep_name(scale))
        return uvm_batching_run.reproduce(out, scale=scale, store=store, executor=executor, jobs=jobs,
                                          force=force, progress=progress, command=command)
    if study == "mosaic-pages":
        from tessera.report import mosaic_pages, mosaic_run

        if warmup is not None:
            raise ValueError("mosaic-pages counts every miss from the first access, as the paper's gem5 runs: no warm-up")
        if out is None:
            out = os.path.join("tessera-results", mosaic_pages.sweep_name(scale))
        return mosaic_run.reproduce(out, scale=scale, store=store, executor=executor, jobs=jobs, force=force,
                                    progress=progress, command=command)
    from tessera.report import mmu_analysis

    if out is None:
        out = os.path.join("tessera-results", mmu_analysis.sweep_name(scale))
    return mmu_analysis.reproduce(
        out,
        scale=scale,
        store=store,
        executor=executor,
        jobs=jobs,
        force=force,
        progress=progress,
        command=command,
        warmup=warmup,
        **({} if models is None else {"models": tuple(models)}),
    )
