"""``tessera bench --organisations`` and ``--page-tables``: what a TLB
organisation, or a page-table design, costs on the wall clock.

``--organisations``: the same machine (``tlb_only``) and the same synthetic
streams as ``tessera bench``, with the data TLB structures that hold 4 KiB
pages (the level-1 4 KiB TLB and the level-2 TLB) organised as
``set_assoc``, ``coalescing`` (CoLT, groups of 8 pages) or ``mosaic``
(Mosaic Pages, arity 4 and 64).

``--page-tables``: the GTSM paper's machine (``gtsm_ptlsim``, with timing)
with 4 KiB pages in x86 tables, and with GT-PDEs in the GT table
(GT-PDE-4MB, GT-PDE-1MB, P-GT-PDE-2MB) mapping superpages over slices.

Runs are interleaved (every variant once per round, several rounds) so a
change in the host's load falls on all of them alike; the table gives the
median time and its ratio to the first variant on the same stream.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from tessera import api

__all__ = ["ORGANISATIONS", "STRUCTURES", "PAGE_TABLES", "bench_organisations", "bench_variants"]

#: (label, organisation value) of each organisation measured.
ORGANISATIONS = (
    ("set_assoc", '"set_assoc"'),
    ("coalescing-8", '{ kind = "coalescing", group = 8 }'),
    ("mosaic-4", '{ kind = "mosaic", arity = 4 }'),
    ("mosaic-64", '{ kind = "mosaic", arity = 64 }'),
)

#: The structures of ``tlb_only`` that hold 4 KiB pages (the 2 MiB one stays ``set_assoc``).
STRUCTURES = ("l1_dtlb_4k", "l2_tlb")

PRESET = "tlb_only"

#: ``--page-tables``: the machine, its memory (room for the streams' slices
#: with the table frames beside them), and (label, overrides) per design.
PAGE_TABLE_PRESET = "gtsm_ptlsim"
PAGE_TABLE_CAPACITY = "16GiB"


def _gt(mode: str) -> list[str]:
    return ['pagetable.format.kind="gt_pde"', f'pagetable.format.mode="{mode}"', 'physmem.page_size="gtsm"']


PAGE_TABLES: tuple[tuple[str, list[str]], ...] = (
    ("4k", []),
    ("gt_pde_4m", _gt("gt_pde_4m")),
    ("gt_pde_1m", _gt("gt_pde_1m")),
    ("p_gt_pde_2m", _gt("p_gt_pde_2m")),
)


def overrides_for(organisation: str) -> list[str]:
    return [f"mmu.tlb.{s}.organisation={organisation}" for s in STRUCTURES]


def bench_variants(
    preset: str,
    variants: Sequence[tuple[str, list[str]]],
    patterns: tuple[str, ...],
    accesses: int,
    footprint: str,
    rounds: int = 3,
    status: Optional[Callable[[str], Any]] = None,
) -> list[dict[str, Any]]:
    """One row per (pattern, variant): median seconds over ``rounds``
    interleaved runs of ``preset`` with the variant's overrides, accesses
    per second, and the time relative to the first variant on that pattern."""
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for pattern in patterns:
            for label, overrides in variants:
                res = api.bench(
                    preset,
                    synthetic={"pattern": pattern, "accesses": accesses, "footprint": footprint},
                    overrides=overrides,
                )
                times.setdefault((pattern, label), []).append(res["seconds"])
                if status is not None:
                    status(f"round {r + 1}/{rounds} {pattern:<10} {label:<13} {accesses / res['seconds'] / 1e6:8.2f} M accesses/s")
    rows = []
    for pattern in patterns:
        base = statistics.median(times[(pattern, variants[0][0])])
        for label, overrides in variants:
            t = statistics.median(times[(pattern, label)])
            rows.append(
                {
                    "preset": preset,
                    "pattern": pattern,
                    "variant": label,
                    "overrides": overrides,
                    "accesses": accesses,
                    "rounds": rounds,
                    "seconds": t,
                    "seconds_all": times[(pattern, label)],
                    "accesses_per_sec": accesses / t if t > 0 else 0.0,
                    "relative_time": t / base if base > 0 else float("nan"),
                }
            )
    return rows


def bench_organisations(
    patterns: tuple[str, ...],
    accesses: int,
    footprint: str,
    rounds: int = 3,
    status: Optional[Callable[[str], Any]] = None,
) -> list[dict[str, Any]]:
    """:func:`bench_variants` over :data:`ORGANISATIONS` on ``tlb_only``;
    each row also names its ``organisation``."""
    rows = bench_variants(PRESET, [(label, overrides_for(org)) for label, org in ORGANISATIONS], patterns, accesses, footprint,
                          rounds, status)
    for row in rows:
        row["organisation"] = row["variant"]
    return rows


def cmd_bench_variants(args: Any, out: Any, err: Any, patterns: tuple[str, ...], accesses: int, footprint: str, *,
                       page_tables: bool) -> int:
    """``--organisations`` (``page_tables`` false) or ``--page-tables``."""
    import json

    from rich.table import Table

    from tessera.cli import EXIT_OK
    from tessera.progress import should_show
    from tessera.result import write_atomic

    show = should_show(sys.stderr)
    status = (lambda m: err.print(m, markup=False, highlight=False)) if show else None
    if page_tables:
        preset, flag, column, key = PAGE_TABLE_PRESET, "--page-tables", "page table", "page_tables"
        variants = [(label, [f'physmem.capacity="{PAGE_TABLE_CAPACITY}"', *o]) for label, o in PAGE_TABLES]
        rows = bench_variants(preset, variants, patterns, accesses, footprint, rounds=args.rounds, status=status)
    else:
        preset, flag, column, key = PRESET, "--organisations", "organisation", "organisations"
        rows = bench_organisations(patterns, accesses, footprint, rounds=args.rounds, status=status)
    first = rows[0]["variant"]
    over = api.format_size(api.parse_size(footprint))
    t = Table(
        title=f"tessera bench {flag}: {preset}, {accesses:,} accesses per stream over {over}, median of {args.rounds}",
        header_style="bold",
    )
    for c, j in (("stream", "left"), (column, "left"), ("seconds", "right"), ("M accesses/s", "right"), (f"time / {first}", "right")):
        t.add_column(c, justify=j)  # type: ignore[arg-type]
    for row in rows:
        t.add_row(
            row["pattern"],
            row["variant"],
            f"{row['seconds']:.3f}",
            f"{row['accesses_per_sec'] / 1e6:.2f}",
            f"{row['relative_time']:.2f}x",
        )
    out.print(t)
    if args.json:
        doc = {"tessera_version": api._core.__version__, "accesses_per_stream": accesses, key: rows}
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return EXIT_OK


def _list_arg(text: Optional[str], default: tuple[str, ...]) -> tuple[str, ...]:
    if text is None:
        return default
    items = tuple(x.strip() for x in text.split(",") if x.strip())
    return () if items == ("none",) else items


def _traces(args: Any, err: Any) -> list[str]:
    """``--trace`` files, or every trace in the bench-traces cache."""
    from tessera import ab
    from tessera.cli import _Usage

    if args.trace is not None:
        traces = list(args.trace)
    else:
        found = ab.bench_traces_dir()
        traces = sorted(str(p) for p in found.glob("*.tess")) if found.is_dir() else []
        err.print(
            f"traces: {len(traces)} from {found}" + ("" if traces else " (none; scripts/record-bench-traces.sh records them)"),
            markup=False,
            highlight=False,
        )
    for t in traces:
        if not Path(t).is_file():
            raise _Usage(f"--trace: no such file {t}")
    return traces


def cmd_bench_pycachesim(args: Any, out: Any, err: Any) -> int:
    """``tessera bench --pycachesim``: see :mod:`tessera.pycachesim_bench`."""
    import json

    from rich.table import Table

    from tessera import pycachesim_bench as pcs
    from tessera.cli import EXIT_ERROR, EXIT_OK, EXIT_TOOL, _Usage
    from tessera.result import write_atomic

    if args.machines or args.patterns or args.this or args.repo:
        raise _Usage("--machines, --patterns, --this and --repo apply only to --against")
    try:
        import cachesim  # noqa: F401
    except ImportError:
        err.print("tessera: error: pycachesim is not installed (pip install pycachesim, or pip install '.[test]')", markup=False)
        return EXIT_TOOL
    traces = _traces(args, err)
    if not traces:
        raise _Usage("no traces to time: give --trace FILE (or record the bench traces)")
    say = lambda m: err.print(m, markup=False, highlight=False)  # noqa: E731
    rows = pcs.compare(traces, rounds=args.rounds, status=say)
    geo = pcs.geometry()
    t = Table(
        title=f"{pcs.PRESET} against pycachesim (L1 {geo[0][0]}x{geo[0][1]}, L2 {geo[1][0]}x{geo[1][1]}, LRU), "
        f"best of {args.rounds} interleaved rounds, M data accesses/s",
        header_style="bold",
    )
    for c in ("trace", "accesses", "walks/access", "pycachesim", "Tessera, memory", "ratio", "Tessera, file", "ratio", "counters"):
        t.add_column(c, justify="left" if c in ("trace", "counters") else "right")
    for r in rows:
        name = Path(r["trace"]).name
        if not r["counters_equal"]:
            t.add_row(name, f"{r['accesses']:,}", "", "", "", "", "", "", f"DIFFER: {r['tessera_counts']} vs {r['pycachesim_counts']}")
            continue
        rate = r["rate"]
        t.add_row(
            name,
            f"{r['accesses']:,}",
            f"{r['walks_per_access']:.3f}",
            f"{rate['pycachesim'] / 1e6:.1f}",
            f"{rate['memory'] / 1e6:.1f}",
            f"{r['ratio_memory']:.2f}x",
            f"{rate['file'] / 1e6:.1f}",
            f"{r['ratio_file']:.2f}x",
            "equal",
        )
    out.print(t)
    if args.json:
        doc = {"tessera_version": api._core.__version__, "rows": rows}
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return EXIT_OK if all(r["counters_equal"] for r in rows) else EXIT_ERROR


def cmd_bench_against(args: Any, out: Any, err: Any) -> int:
    """``tessera bench --against REV``: see :mod:`tessera.ab`."""
    import json

    from rich.table import Table

    from tessera import ab
    from tessera.cli import EXIT_ERROR, EXIT_OK, EXIT_TOOL, _Usage
    from tessera.result import write_atomic

    presets = _list_arg(args.machines, ab.PRESETS)
    patterns = _list_arg(args.patterns, ab.PATTERNS)
    known = set(api.presets())
    for p in presets:
        if p not in known:
            raise _Usage(f"--machines: unknown preset {p!r} (known: {', '.join(sorted(known))})")
    for p in patterns:
        if p not in ("uniform", "hotcold", "sequential"):
            raise _Usage(f"--patterns: unknown pattern {p!r} (allowed: uniform, hotcold, sequential, or none)")
    traces = _traces(args, err)
    if not presets or not (patterns or traces):
        raise _Usage("nothing to time: give at least one machine and one pattern or trace")
    accesses = args.accesses or ab.ACCESSES
    streams = ab.standard_streams(presets, patterns, accesses, ab.FOOTPRINT, traces)
    say = lambda m: err.print(m, markup=False, highlight=False)  # noqa: E731  (long builds and runs show progress)
    try:
        repo = ab.repo_root(Path(args.repo) if args.repo else None)
        this = ab.revision_build(args.this, repo, status=say) if args.this else ab.installed_build()
        other = ab.revision_build(args.against, repo, status=say)
        doc = ab.compare(this, other, streams, rounds=args.rounds, status=say)
    except ab.AbError as e:
        err.print(f"tessera: error: {e}", markup=False, highlight=False)
        return EXIT_TOOL
    out.print(f"this:  {doc['this']['label']}", markup=False, highlight=False)
    out.print(f"other: {doc['other']['label']}", markup=False, highlight=False)
    t = Table(
        title=f"best of {args.rounds} interleaved rounds; synthetic streams {accesses:,} accesses over {ab.FOOTPRINT}",
        header_style="bold",
    )
    for c in ("stream", "this M/s", "other M/s", "ratio", "median", "per round", "walks", "counters", "RSS this", "RSS other"):
        t.add_column(c, justify="left" if c in ("stream", "counters") else "right")
    for r in doc["streams"]:
        if "error" in r:
            t.add_row(r["stream"], "", "", "", "", "", "", f"error: {r['error']}", "", "")
            continue
        diffs = r["counter_differences"]
        check = f"{r['counters_compared']} equal" if not diffs else f"{len(diffs)} DIFFER: {diffs[0]}"
        lo, hi = r["ratio_range"]
        t.add_row(
            r["stream"],
            f"{r['best_rate'][0] / 1e6:.2f}",
            f"{r['best_rate'][1] / 1e6:.2f}",
            f"{r['ratio']:.3f}",
            f"{r['median_rate'][0] / r['median_rate'][1]:.3f}",
            f"{lo:.2f}-{hi:.2f}",
            f"{r['walks']:,}" if r.get("walks") is not None else "",
            check,
            *(api.format_size(x) if x else "n/a" for x in r["peak_rss_max"]),
        )
    out.print(t)
    out.print(
        "ratio: this build's best rate / the other's (above 1: this build is faster); median: of the median rates; "
        "per round: the range of the rounds' ratios; RSS: each process's resident high-water mark during the run",
        markup=False,
    )
    if args.json:
        doc["accesses_per_stream"] = accesses
        doc["footprint"] = ab.FOOTPRINT
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    if not ab.counters_agree(doc):
        err.print("tessera: the builds' counters differ (or a run failed): their times are not comparable", markup=False)
        return EXIT_ERROR
    return EXIT_OK



#: The GPU benchmark: memory-heavy kernels at their default sizes on the
#: Mosaic paper's GPU-MMU baseline (4 KiB pages, demand paging).
GPU_BENCH_PRESET = "mosaic_gpu"
GPU_BENCH_KERNELS = ("bfs", "pagerank", "spmv_csr", "gups")


def bench_gpu(kernels: tuple[str, ...] = GPU_BENCH_KERNELS, rounds: int = 3, status: Any = None,
              presets: tuple[str, ...] = (GPU_BENCH_PRESET,)) -> list[dict[str, Any]]:
    """Per kernel and preset: the best of ``rounds`` simulations (generation
    not counted), as warp instructions, thread instructions and simulated
    cycles per second of wall clock. The presets take turns within each
    round, so a slower stretch of the host hits them alike."""
    from tessera import _core

    rows = []
    for k in kernels:
        best: dict[str, Any] = {}
        for r in range(rounds):
            for p in presets:
                if status:
                    status(f"tessera: bench --gpu: {k} on {p}, round {r + 1} of {rounds}")
                raw = _core.gpu_simulate("preset", p, [], [("kernel", k, {})], 0)
                secs = raw["wall"]["simulate_s"]
                if p not in best or secs < best[p][0]:
                    best[p] = (secs, raw)
        for p in presets:
            secs, raw = best[p]
            c = raw["counters"]
            rows.append({
                "kernel": k,
                "preset": p,
                "seconds": secs,
                "warp_insts": c["gpu.apps.0.warp_instructions"],
                "thread_insts": c["gpu.apps.0.thread_instructions"],
                "cycles": c["gpu.cycles"],
                "walks": c["gpu.walker.walks"],
                "faults": c.get("gpu.paging.faults", 0),
                "warp_insts_per_s": c["gpu.apps.0.warp_instructions"] / secs,
                "thread_insts_per_s": c["gpu.apps.0.thread_instructions"] / secs,
                "cycles_per_s": c["gpu.cycles"] / secs,
                "speed_vs_first": best[presets[0]][0] / secs,
            })
    return rows


def cmd_bench_gpu(args: Any, out: Any, err: Any) -> int:
    """``tessera bench --gpu``."""
    import json

    from rich.table import Table

    from tessera.cli import EXIT_OK
    from tessera.progress import should_show
    from tessera.result import write_atomic

    show = should_show(sys.stderr)
    status = (lambda m: err.print(m, markup=False, highlight=False)) if show else None
    presets = tuple(p.strip() for p in (args.machines or GPU_BENCH_PRESET).split(",") if p.strip())
    rows = bench_gpu(rounds=args.rounds, status=status, presets=presets)
    what = "GPU-MMU, 4 KiB pages, demand paging" if presets == (GPU_BENCH_PRESET,) else ", ".join(presets)
    t = Table(title=f"tessera bench --gpu: {what}, best of {args.rounds}", header_style="bold")
    cols = ["kernel"] + (["preset"] if len(presets) > 1 else []) + ["warp insts", "walks", "far faults", "seconds",
                                                                    "M warp insts/s", "M thread insts/s", "M cycles/s"]
    cols += [f"speed / {presets[0]}"] if len(presets) > 1 else []
    for c in cols:
        t.add_column(c, justify="left" if c in ("kernel", "preset") else "right")
    for r in rows:
        t.add_row(
            r["kernel"], *([r["preset"]] if len(presets) > 1 else []), f"{r['warp_insts']:,}", f"{r['walks']:,}",
            f"{r['faults']:,}", f"{r['seconds']:.2f}", f"{r['warp_insts_per_s'] / 1e6:.2f}",
            f"{r['thread_insts_per_s'] / 1e6:.1f}", f"{r['cycles_per_s'] / 1e6:.1f}",
            *([f"{r['speed_vs_first']:.2f}"] if len(presets) > 1 else []),
        )
    out.print(t)
    if args.json:
        write_atomic(args.json, json.dumps({"gpu": rows}, indent=2) + "\n")
    return EXIT_OK
