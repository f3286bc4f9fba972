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

__all__ = ["print_result", "summary_tables", "all_stats_table", "key_value_table", "comparison_table", "fmt", "count",
           "points"]

Number = Union[int, float]

#: Derived metrics that are fractions, shown as percentages.
_SHARE_SUFFIXES = ("_share", "_rate")

#: Page-walk references by the level that served them, in hierarchy order.
_WALK_REF_LEVELS = (("l1d", "L1D"), ("l2", "L2"), ("llc", "LLC"), ("dram", "DRAM"))

#: Page sizes as a TLB's ``page_sizes`` names them: the counter of pages the
#: run mapped at that size, and how the summary writes the size.
# Leaf entries in the page tables at the end (gauges), so that pages mapped
# during a warm-up count too.
_PAGE_SIZES = {
    "4k": ("pagetable.mappings_4k", "4 KiB"),
    "2m": ("pagetable.mappings_2m", "2 MiB"),
    "1g": ("pagetable.mappings_1g", "1 GiB"),
}


def fmt(v: Any) -> str:
    """Integers with thousands separators, floats with about 4 significant digits."""
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return f"{v:,}"
    if isinstance(v, float):
        if math.isnan(v):
            return "-"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        if v == 0:
            return "0"
        if abs(v) >= 1e9 or abs(v) < 1e-3:
            return f"{v:.4g}"
        if abs(v) >= 1000:
            return f"{v:,.0f}"
        return f"{v:.4g}"
    return str(v)


def pct(v: Optional[float]) -> str:
    return "-" if v is None or math.isnan(v) else f"{100 * v:.2f}%"


def points(v: Optional[float]) -> str:
    """A difference of two fractions shown as percentages, in percentage
    points: ``0.0105`` → ``+1.05 pp`` (not ``1.05%``, which would read as a
    relative change)."""
    return "-" if v is None or math.isnan(v) else f"{100 * v:+.2f} pp"


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


def _fmt_stat(name: str, v: Any) -> str:
    if isinstance(v, float) and name.endswith(_SHARE_SUFFIXES):
        return pct(v)
    return fmt(v)


def _kv_table(title: str) -> Table:
    t = Table(
        title=title,
        title_justify="left",
        title_style="bold",
        header_style="bold",
        show_header=False,
        box=None,
        pad_edge=False,
        min_width=44,
    )
    t.add_column("stat", style="")
    t.add_column("value", justify="right")
    return t


class _Rows:
    """Adds `label: value` rows for the stats that exist."""

    def __init__(self, result: Result, title: str) -> None:
        self.stats = result.stats
        self.table = _kv_table(title)

    def add(self, label: str, name: str, *, share: bool = False, skip_zero: bool = False) -> None:
        v = self.stats.get(name)
        if v is None or (skip_zero and v == 0):
            return
        self.table.add_row(label, pct(v) if share else _fmt_stat(name, v))

    def add_value(self, label: str, value: str) -> None:
        self.table.add_row(label, value)

    def done(self) -> Optional[Table]:
        return self.table if self.table.row_count else None


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
    """The readable summary: run totals, TLBs, walks, bounds, caches, memory."""
    s = result.stats
    timed = _timed(result)
    tables: list[Any] = []

    run = _Rows(result, "Run")
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
        run.add("cycles", "core.cycles")
        run.add("IPC", "core.ipc")
    tables.append(run.done())

    tlbs = _tlb_names(result)
    if tlbs:
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
        if unused:
            # Under the table, not in a caption: a caption wraps at the table's width.
            tables.append(Group(t, Text(_unused_note(unused), style="dim")))
        else:
            tables.append(t)

    walks = _Rows(result, "Page walks")
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
        bounds = _Rows(result, "Share of cycles (Eq. 2-5 bounds)")
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

    mem = _Rows(result, "Memory")
    mem.add("page faults", "os.faults")
    mem.add("  4 KiB pages mapped", "os.pages_4k")
    mem.add("  2 MiB pages mapped", "os.pages_2m", skip_zero=True)
    mem.add("  1 GiB pages mapped", "os.pages_1g", skip_zero=True)
    mem.add("  large-page fallbacks", "os.large_fallbacks", skip_zero=True)
    mem.add("page-table frames", "physmem.table_frames")
    mem.add("frames allocated", "physmem.allocated_frames")
    mem.add("frames free", "physmem.free_frames")
    tables.append(mem.done())

    return [t for t in tables if t is not None]


def all_stats_table(result: Result) -> Table:
    """Every counter and derived metric, one row each."""
    t = Table(
        title="All stats", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False
    )
    t.add_column("stat")
    t.add_column("value", justify="right")
    for k, v in result.stats.items():
        t.add_row(k, _fmt_stat(k, v))
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
    t = _kv_table(title or "")
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
