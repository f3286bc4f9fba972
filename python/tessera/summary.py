"""Readable tables of results, traces and comparisons (rich).

The run summary shows only stats the run produced: each row is looked up by
name and left out when absent, and a section with no rows is not printed, so
machines without caches or without timing simply get shorter tables. All
numbers come from the core (counters and its derived metrics); this module
only chooses and formats them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any, Optional, Union

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from tessera.result import Result
from tessera.summary_memory import MAPPED_NOTE, had_pressure, iceberg_table, mosaic_tlb_table, pressure_tables
from tessera.summary_rows import Rows, fmt, fmt_stat, kv_table, pct, points

__all__ = ["print_result", "summary_tables", "all_stats_table", "key_value_table", "comparison_table", "fmt", "count",
           "points"]

Number = Union[int, float]

#: Page-walk references by the level that served them, in hierarchy order.
_WALK_REF_LEVELS = (("l1d", "L1D"), ("l2", "L2"), ("llc", "LLC"), ("dram", "DRAM"))

#: Under the TLB table of a machine with shadow structures.
SHADOW_NOTE = "shadow.*: shadow structures see every translation of the machine and change nothing."

#: Page sizes as a TLB's ``page_sizes`` names them: the counter of pages the
#: run mapped at that size, and how the summary writes the size.
# Leaf entries in the page tables at the end (gauges), so that pages mapped
# during a warm-up count too.
_PAGE_SIZES = {
    "4k": ("pagetable.mappings_4k", "4 KiB"),
    "2m": ("pagetable.mappings_2m", "2 MiB"),
    "1g": ("pagetable.mappings_1g", "1 GiB"),
}


def count(v: Any) -> str:
    """A count (events, cycles, instructions), whole, with thousands
    separators however large: ``21,308,394``."""
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    return f"{int(round(v)):,}"


def readable_source(source: str) -> str:
    """A result's ``source`` for people: a synthetic stream's footprint as a
    size (``footprint=256 MiB``), not a byte count. The stored text is unchanged."""
    from tessera.api import format_size

    return re.sub(r"\bfootprint=(\d+)\b", lambda m: f"footprint={format_size(int(m.group(1)))}", source)


def _timed(result: Result) -> bool:
    timing = result.config.get("timing", {})
    return bool(timing.get("enabled", True)) and bool(result.counters.get("core.cycles"))


def _tlb_names(result: Result) -> list[str]:
    tlbs = result.config.get("mmu", {}).get("tlb", {})
    present = {
        k.split(".")[1]
        for k in result.counters
        if k.startswith("mmu.") and k.endswith(".lookups") and k.count(".") == 2
    }
    names = [n for n in tlbs if n in present] + sorted(present - set(tlbs))
    order = {n: (tlbs.get(n, {}).get("level", 99), n) for n in names}
    return sorted(names, key=lambda n: order[n])


def _shadow_names(result: Result) -> list[str]:
    """The shadow TLB structures (``mmu.shadow.<name>``), in config order."""
    configured = list(result.config.get("mmu", {}).get("shadow", {}))
    present = {k.split(".")[2] for k in result.counters if k.startswith("mmu.shadow.") and k.endswith(".lookups")}
    return [n for n in configured if n in present] + sorted(present - set(configured))


def _unused_tlbs(result: Result, names: list[str]) -> dict[str, list[str]]:
    """The TLB structures that hold only page sizes the run never mapped,
    with the sizes each holds.

    Structures of one level are probed in parallel, so such a structure counts
    a miss on every lookup: its miss rate and MPKI describe the access count,
    not the structure."""
    if not any(counter in result.counters for counter, _ in _PAGE_SIZES.values()):
        return {}
    mapped = {size for size, (counter, _) in _PAGE_SIZES.items() if result.counters.get(counter)}
    if not mapped:
        return {}
    tlbs = result.config.get("mmu", {}).get("tlb", {})
    out = {}
    for n in names:
        sizes = [str(x) for x in tlbs.get(n, {}).get("page_sizes", [])]
        if sizes and not set(sizes) & mapped:
            out[n] = sizes
    return out


def _sizes_text(sizes: list[str]) -> str:
    return " or ".join(_PAGE_SIZES[x][1] if x in _PAGE_SIZES else x for x in sizes)


def _unused_note(unused: dict[str, list[str]]) -> str:
    kinds = {tuple(sizes) for sizes in unused.values()}
    if len(kinds) == 1:
        what = f"holds only {_sizes_text(list(kinds.pop()))} pages, which this run never mapped"
    else:
        what = "holds only page sizes this run never mapped (" + "; ".join(
            f"{n}: {_sizes_text(sizes)}" for n, sizes in unused.items()
        ) + ")"
    return f"n/a: {what}, so every lookup in it misses."


def summary_tables(result: Result) -> list[Any]:
    """The readable summary: run totals, TLBs (with shadow structures and
    mosaic counters), walks, bounds, caches, memory, memory pressure, the
    Iceberg allocator, and the run's warnings."""
    from tessera.summary_gpu import gpu_tables, is_gpu

    if is_gpu(result):
        return gpu_tables(result)
    s = result.stats
    timed = _timed(result)
    tables: list[Any] = []

    run = Rows(result, "Run")
    run.add_value("machine", str(result.config.get("name", "?")))
    run.add_value("source", readable_source(result.source))
    run.add_value("seed", str(result.seed))
    warm = (result.phases or {}).get("warmup", {})
    if warm.get("records"):
        run.add_value(
            "warm-up (not counted)",
            f"{fmt(warm['records'])} accesses, {fmt(warm['instructions'])} instructions",
        )
    run.add("instructions", "core.instructions")
    run.add("accesses", "core.records")
    run.add("  loads", "core.loads")
    run.add("  stores", "core.stores")
    run.add("  instruction fetches", "core.ifetches", skip_zero=True)
    run.add("  page-crossing accesses", "core.page_crossings", skip_zero=True)
    if timed:
        run.add_value("timing model", str(result.config.get("timing", {}).get("kind", "interval")))
        if result.timing_dependencies is not None:
            run.add_value("  load dependencies", result.timing_dependencies)
        run.add("cycles", "core.cycles")
        run.add("IPC", "core.ipc")
    tables.append(run.done())

    tlbs = _tlb_names(result)
    shadows = _shadow_names(result)
    if tlbs or shadows:
        t = Table(title="TLBs", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False)
        for col in ("structure", "lookups", "hits", "misses", "miss rate", "MPKI"):
            t.add_column(col, justify="left" if col == "structure" else "right")
        unused = _unused_tlbs(result, tlbs)
        for n in tlbs:
            if n in unused:
                t.add_row(n, fmt(s.get(f"mmu.{n}.lookups")), "n/a", "n/a", "n/a", "n/a")
                continue
            t.add_row(
                n,
                fmt(s.get(f"mmu.{n}.lookups")),
                fmt(s.get(f"mmu.{n}.hits")),
                fmt(s.get(f"mmu.{n}.misses")),
                pct(s.get(f"mmu.{n}.miss_rate")),
                fmt(s.get(f"mmu.{n}.mpki")),
            )
        for n in shadows:
            m = f"mmu.shadow.{n}"
            t.add_row(
                f"shadow.{n}",
                fmt(s.get(f"{m}.lookups")),
                fmt(s.get(f"{m}.hits")),
                fmt(s.get(f"{m}.misses")),
                pct(s.get(f"{m}.miss_rate")),
                fmt(s.get(f"{m}.mpki")),
            )
        # Under the table, not in a caption: a caption wraps at the table's width.
        notes = [_unused_note(unused)] if unused else []
        if shadows:
            notes.append(SHADOW_NOTE)
        tables.append(Group(t, *(Text(n, style="dim") for n in notes)) if notes else t)
        tables.append(mosaic_tlb_table(result, tlbs))

    walks = Rows(result, "Page walks")
    walks.add("walks", "walker.walks")
    walks.add("  data", "walker.data_walks", skip_zero=True)
    walks.add("  instruction", "walker.instr_walks", skip_zero=True)
    walks.add("walks that faulted", "walker.faulting_walks")
    walks.add("walks PKI", "walker.walks_pki")
    walks.add("walk references", "walker.refs_total")
    configured = set(result.config.get("cache", {})) | {"dram"}
    for level, label in _WALK_REF_LEVELS:
        if level in configured or s.get(f"walker.refs_{level}"):
            walks.add(f"  served by {label}", f"walker.refs_{level}")
    walks.add("references per walk", "walker.refs_per_walk")
    if timed:
        walks.add("walk cycles", "walker.cycles")
        walks.add("cycles per walk", "walker.cycles_per_walk")
        walks.add("share of cycles in walks", "walker.walk_cycle_share", share=True)
    tables.append(walks.done())

    pscs = sorted({k.split(".")[2] for k in result.counters if k.startswith("mmu.psc.") and k.endswith(".lookups")})
    if pscs:
        t = Table(
            title="MMU caches", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False
        )
        for col in ("cache", "lookups", "hits"):
            t.add_column(col, justify="left" if col == "cache" else "right")
        for n in pscs:
            t.add_row(n, fmt(s.get(f"mmu.psc.{n}.lookups")), fmt(s.get(f"mmu.psc.{n}.hits")))
        tables.append(t)

    if timed:
        bounds = Rows(result, "Share of cycles (Eq. 2-5 bounds)")
        bounds.add("stalled on translation", "core.translation_stall_share", share=True)
        bounds.add("stalled on data", "core.data_stall_share", share=True)
        bounds.add("walks if perfect MMU cache, L1 hit", "bounds.perfect_mmu_l1_share", share=True)
        bounds.add("walks if perfect MMU cache, L2 hit", "bounds.perfect_mmu_l2_share", share=True)
        bounds.add("walks if perfect MMU cache, LLC hit", "bounds.perfect_mmu_llc_share", share=True)
        bounds.add("TLB misses if perfect TLB", "bounds.perfect_tlb_share", share=True)
        tables.append(bounds.done())

    levels = [lvl for lvl in ("l1d", "l2", "llc") if f"cache.{lvl}.hits" in s]
    if levels:
        t = Table(
            title="Data caches", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False
        )
        for col in ("level", "hits", "misses", "MPKI", "walk hits", "walk misses", "walk share"):
            t.add_column(col, justify="left" if col == "level" else "right")
        for lvl in levels:
            t.add_row(
                lvl,
                fmt(s.get(f"cache.{lvl}.hits")),
                fmt(s.get(f"cache.{lvl}.misses")),
                fmt(s.get(f"cache.{lvl}.mpki")),
                fmt(s.get(f"cache.{lvl}.walk_hits")),
                fmt(s.get(f"cache.{lvl}.walk_misses")),
                pct(s.get(f"cache.{lvl}.walk_ref_share")),
            )
        tables.append(t)

    mem = Rows(result, "Memory")
    mem.add("page faults", "os.faults")
    mem.add("  4 KiB pages mapped", "os.pages_4k")
    mem.add("  2 MiB pages mapped", "os.pages_2m", skip_zero=True)
    mem.add("  1 GiB pages mapped", "os.pages_1g", skip_zero=True)
    mem.add("  GT superpages mapped", "os.gt_superpages", skip_zero=True)
    mem.add("walks ended at a GT-PDE", "walker.leaves_gt", skip_zero=True)
    mem.add("  large-page fallbacks", "os.large_fallbacks", skip_zero=True)
    mem.add("compactions for a 2 MiB page", "os.compaction.attempts", skip_zero=True)
    mem.add("  that freed a block", "os.compaction.successes", skip_zero=True)
    mem.add("  deferred after failures", "os.compaction.deferred", skip_zero=True)
    mem.add("  pages moved (this process)", "os.compaction.pages_migrated", skip_zero=True)
    mem.add("  pinned frames moved", "os.compaction.pins_migrated", skip_zero=True)
    if timed:
        mem.add("  compaction cycles", "os.compaction.cycles", skip_zero=True)
    mem.add("page-table frames", "physmem.table_frames")
    mem.add("frames allocated", "physmem.allocated_frames")
    mem.add("frames free", "physmem.free_frames")
    mem_table = mem.done()
    # Under pressure the mapped pages outnumber the frames: say why, below the table.
    tables.append(Group(mem_table, Text(MAPPED_NOTE, style="dim")) if mem_table and had_pressure(result) else mem_table)
    tables.extend(pressure_tables(result, timed))
    tables.append(iceberg_table(result))

    warnings = result.warnings
    if warnings:
        tables.append(Group(*(Text(f"warning: {w}", style="bold yellow") for w in warnings)))

    return [t for t in tables if t is not None]


def all_stats_table(result: Result) -> Table:
    """Every counter and derived metric, one row each."""
    t = Table(
        title="All stats", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False
    )
    t.add_column("stat")
    t.add_column("value", justify="right")
    for k, v in result.stats.items():
        t.add_row(k, fmt_stat(k, v))
    return t


def print_result(result: Result, console: Console, all_stats: bool = False) -> None:
    tables: list[Any] = summary_tables(result)
    if all_stats:
        tables.append(all_stats_table(result))
    parts: list[Any] = []
    for i, t in enumerate(tables):
        if i:
            parts.append("")
        parts.append(t)
    console.print(Group(*parts))


def key_value_table(data: Mapping[str, Any], title: Optional[str] = None) -> Table:
    t = kv_table(title or "")
    for k, v in data.items():
        if isinstance(v, Mapping):
            for k2, v2 in v.items():
                t.add_row(f"{k}.{k2}", fmt(v2))
        else:
            t.add_row(str(k), fmt(v))
    return t


def comparison_table(c: Mapping[str, Any], base: str, other: str) -> Table:
    """Equation 1: expected cycles if walks did not interact with the rest of
    the machine, against the simulated cycles."""
    t = Table(
        title="Equation 1 (scale-out MMU study)",
        title_justify="left",
        title_style="bold",
        header_style="bold",
        box=None,
        pad_edge=False,
    )
    t.add_column("")
    t.add_column("base", justify="right")
    t.add_column("other", justify="right")
    t.add_row("result", base, other)
    if "base_instructions" in c or "other_instructions" in c:
        t.add_row("instructions", count(c.get("base_instructions")), count(c.get("other_instructions")))
    t.add_row("cycles", count(c.get("base_cycles")), count(c.get("other_cycles")))
    t.add_row("walk cycles", count(c.get("base_walk_cycles")), count(c.get("other_walk_cycles")))
    t.add_row("walks PKI", fmt(c.get("base_walks_pki")), fmt(c.get("other_walks_pki")))
    t.add_row("expected cycles (Eq. 1)", "", count(c.get("expected_other_cycles")))
    t.add_section()
    t.add_row("change in walk cycles", "", pct(c.get("walk_cycle_change")))
    t.add_row("expected speedup", "", pct(c.get("expected_speedup")))
    t.add_row("simulated speedup", "", pct(c.get("simulated_speedup")))
    t.add_row("simulated - expected", "", points(c.get("speedup_gap")))
    known = {
        "warnings",
        "base_instructions",
        "other_instructions",
        "base_cycles",
        "other_cycles",
        "base_walk_cycles",
        "other_walk_cycles",
        "base_walks_pki",
        "other_walks_pki",
        "expected_other_cycles",
        "walk_cycle_change",
        "expected_speedup",
        "simulated_speedup",
        "speedup_gap",
    }
    for k, v in c.items():
        if k not in known:
            t.add_row(k, "", fmt(v))
    return t
