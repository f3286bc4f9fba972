"""``tessera bench --pycachesim``: Tessera's TLB hit path against a C cache simulator.

pycachesim (RRZE-HPC, a C core behind a Python API) models a cache hierarchy
with LRU sets; given 4 KiB lines and the geometry of the ``tlb_only``
preset's two data-TLB levels (64 entries, 4 ways; 512 entries, 4 ways) it
does the TLB work of ``tlb_only`` and nothing else: no page tables, no walks,
no faults, no dirty bits. Both simulate the data accesses of a real trace,
and their hit and miss counts per level must be equal (checked on every run:
a comparison of simulators that do different work is refused).

Timed, in interleaved rounds:

- pycachesim: ``CacheSimulator.load`` over a Python list of the accesses'
  page addresses, built before the clock starts (an access that crosses a
  page contributes both pages, as Tessera translates both);
- Tessera from memory: ``tessera.bench("tlb_only", accesses=frame)``, the
  trace's records already in memory (:func:`tessera.read_trace`);
- Tessera from the file: ``tessera.bench("tlb_only", trace)``, decoding the
  trace as a run does.

Rates are data accesses per second; a ratio above 1 means Tessera is faster.
Tessera also walks real page tables on every miss of both levels, so a
miss-dominated trace asks more of it than of pycachesim.
"""

from __future__ import annotations

import statistics
import time
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

from tessera import api

__all__ = ["PRESET", "geometry", "pycachesim_run", "compare_trace"]

PRESET = "tlb_only"


def geometry(preset: str = PRESET) -> tuple[tuple[int, int], tuple[int, int]]:
    """``((sets, ways), (sets, ways))`` of the preset's level-1 4 KiB data TLB and its level-2 TLB."""
    try:
        import tomllib
    except ImportError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    tlbs = tomllib.loads(api.resolve_config(preset))["mmu"]["tlb"]
    out = []
    for name in ("l1_dtlb_4k", "l2_tlb"):
        t = tlbs[name]
        ways = t["ways"] if isinstance(t["ways"], int) else t["entries"]
        out.append((t["entries"] // ways, ways))
    return out[0], out[1]


def _simulator(geo: tuple[tuple[int, int], tuple[int, int]]) -> tuple[Any, Any, Any]:
    from cachesim import Cache, CacheSimulator, MainMemory

    (s1, w1), (s2, w2) = geo
    mem = MainMemory()
    l2 = Cache("L2", s2, w2, 4096, "LRU")
    mem.load_to(l2)
    mem.store_from(l2)
    l1 = Cache("L1", s1, w1, 4096, "LRU", store_to=l2, load_from=l2)
    return CacheSimulator(l1, mem), l1, l2


def page_list(frame: Any) -> list[int]:
    """The page addresses pycachesim sees: per load or store, its first page,
    then its last page when the access crosses into it."""
    import numpy as np

    data = frame[frame["kind"] != 2]
    first = data["vaddr"].to_numpy(dtype=np.uint64)
    size = np.maximum(data["size"].to_numpy(dtype=np.uint64), 1)
    last = first + size - np.uint64(1)
    p0 = first & ~np.uint64(0xFFF)
    p1 = last & ~np.uint64(0xFFF)
    cross = p0 != p1
    if not cross.any():
        return p0.tolist()
    out = np.empty(len(p0) + int(cross.sum()), dtype=np.uint64)
    idx = np.arange(len(p0)) + np.concatenate(([0], np.cumsum(cross)[:-1]))
    out[idx] = p0
    out[idx[cross] + 1] = p1[cross]
    return out.tolist()


def pycachesim_run(pages: list[int], geo: Any) -> tuple[float, dict[str, int]]:
    """Seconds of ``CacheSimulator.load(pages)`` and its hit and miss counts."""
    cs, l1, l2 = _simulator(geo)
    t = time.perf_counter()
    cs.load(pages)
    dt = time.perf_counter() - t
    b1, b2 = l1.backend, l2.backend
    return dt, {"l1_hits": b1.HIT_count, "l1_misses": b1.MISS_count, "l2_hits": b2.HIT_count, "l2_misses": b2.MISS_count}


def tessera_counts(stats: dict[str, Any]) -> dict[str, int]:
    return {
        "l1_hits": int(stats["mmu.l1_dtlb_4k.hits"]),
        "l1_misses": int(stats["mmu.l1_dtlb_4k.misses"]),
        "l2_hits": int(stats["mmu.l2_tlb.hits"]),
        "l2_misses": int(stats["mmu.l2_tlb.misses"]),
    }


def compare_trace(trace: str, rounds: int = 3, status: Optional[Callable[[str], Any]] = None) -> dict[str, Any]:
    """One trace: counters of both simulators, then ``rounds`` interleaved timed rounds."""
    say = status or (lambda _m: None)
    geo = geometry()
    frame = api.read_trace(trace)
    pages = page_list(frame)
    accesses = int((frame["kind"] != 2).sum())
    ours = tessera_counts(api.simulate(PRESET, accesses=frame).stats)
    _, theirs = pycachesim_run(pages, geo)
    row: dict[str, Any] = {
        "trace": trace,
        "records": len(frame),
        "accesses": accesses,
        "pages_looked_up": len(pages),
        "tessera_counts": ours,
        "pycachesim_counts": theirs,
        "counters_equal": ours == theirs,
        "walks": ours["l2_misses"],
    }
    if not row["counters_equal"]:
        return row
    times: dict[str, list[float]] = {"pycachesim": [], "memory": [], "file": []}
    for r in range(rounds):
        order = ("pycachesim", "memory", "file") if r % 2 == 0 else ("file", "memory", "pycachesim")
        for who in order:
            if who == "pycachesim":
                dt, _ = pycachesim_run(pages, geo)
            elif who == "memory":
                dt = api.bench(PRESET, accesses=frame)["seconds"]
            else:
                dt = api.bench(PRESET, trace)["seconds"]
            times[who].append(dt)
            say(f"round {r + 1}/{rounds} {Path(trace).name:<16} {who:<10} {accesses / dt / 1e6:8.2f} M accesses/s")
    best = {k: accesses / min(v) for k, v in times.items()}
    row.update(
        {
            "seconds": times,
            "rate": best,
            "median_rate": {k: accesses / statistics.median(v) for k, v in times.items()},
            "ratio_memory": best["memory"] / best["pycachesim"],
            "ratio_file": best["file"] / best["pycachesim"],
            "walks_per_access": ours["l2_misses"] / max(accesses, 1),
        }
    )
    return row


def compare(traces: Sequence[str], rounds: int = 3, status: Optional[Callable[[str], Any]] = None) -> list[dict[str, Any]]:
    return [compare_trace(t, rounds, status) for t in traces]
