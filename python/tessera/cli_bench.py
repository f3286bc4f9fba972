"""``tessera bench --organisations``: what a TLB organisation costs.

The same machine (``tlb_only``) and the same synthetic streams as ``tessera
bench``, with the data TLB structures that hold 4 KiB pages (the level-1
4 KiB TLB and the level-2 TLB) organised as ``set_assoc``, ``coalescing``
(CoLT, groups of 8 pages) or ``mosaic`` (Mosaic Pages, arity 4 and 64). Runs
are interleaved (every organisation once per round, several rounds) so a
change in the host's load falls on all of them alike; the table gives the
median time and its ratio to ``set_assoc`` on the same stream.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any, Callable, Optional

from tessera import api

__all__ = ["ORGANISATIONS", "STRUCTURES", "bench_organisations"]

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


def overrides_for(organisation: str) -> list[str]:
    return [f"mmu.tlb.{s}.organisation={organisation}" for s in STRUCTURES]


def bench_organisations(
    patterns: tuple[str, ...],
    accesses: int,
    footprint: str,
    rounds: int = 3,
    status: Optional[Callable[[str], Any]] = None,
) -> list[dict[str, Any]]:
    """One row per (pattern, organisation): median seconds over ``rounds``
    interleaved runs, accesses per second, and the time relative to
    ``set_assoc`` on that pattern."""
    times: dict[tuple[str, str], list[float]] = {}
    for r in range(rounds):
        for pattern in patterns:
            for label, org in ORGANISATIONS:
                res = api.bench(
                    PRESET,
                    synthetic={"pattern": pattern, "accesses": accesses, "footprint": footprint},
                    overrides=overrides_for(org),
                )
                times.setdefault((pattern, label), []).append(res["seconds"])
                if status is not None:
                    status(f"round {r + 1}/{rounds} {pattern:<10} {label:<13} {accesses / res['seconds'] / 1e6:8.2f} M accesses/s")
    rows = []
    for pattern in patterns:
        base = statistics.median(times[(pattern, "set_assoc")])
        for label, org in ORGANISATIONS:
            t = statistics.median(times[(pattern, label)])
            rows.append(
                {
                    "preset": PRESET,
                    "pattern": pattern,
                    "organisation": label,
                    "overrides": overrides_for(org),
                    "accesses": accesses,
                    "rounds": rounds,
                    "seconds": t,
                    "seconds_all": times[(pattern, label)],
                    "accesses_per_sec": accesses / t if t > 0 else 0.0,
                    "relative_time": t / base if base > 0 else float("nan"),
                }
            )
    return rows


def cmd_bench_organisations(args: Any, out: Any, err: Any, patterns: tuple[str, ...], accesses: int, footprint: str) -> int:
    import json

    from rich.table import Table

    from tessera.cli import EXIT_OK
    from tessera.progress import should_show
    from tessera.result import write_atomic

    show = should_show(sys.stderr)
    rows = bench_organisations(
        patterns,
        accesses,
        footprint,
        rounds=args.rounds,
        status=(lambda m: err.print(m, markup=False, highlight=False)) if show else None,
    )
    over = api.format_size(api.parse_size(footprint))
    t = Table(
        title=f"tessera bench --organisations: {PRESET}, {accesses:,} accesses per stream over {over}, median of {args.rounds}",
        header_style="bold",
    )
    for c, j in (("stream", "left"), ("organisation", "left"), ("seconds", "right"), ("M accesses/s", "right"), ("time / set_assoc", "right")):
        t.add_column(c, justify=j)  # type: ignore[arg-type]
    for row in rows:
        t.add_row(
            row["pattern"],
            row["organisation"],
            f"{row['seconds']:.3f}",
            f"{row['accesses_per_sec'] / 1e6:.2f}",
            f"{row['relative_time']:.2f}x",
        )
    out.print(t)
    if args.json:
        doc = {"tessera_version": api._core.__version__, "accesses_per_stream": accesses, "organisations": rows}
        write_atomic(args.json, json.dumps(doc, sort_keys=True, indent=2) + "\n")
    return EXIT_OK
