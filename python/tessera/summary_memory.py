"""The run summary's sections on memory pressure, the Iceberg allocator and
mosaic TLBs (see :mod:`tessera.summary`).

Each section appears only when the run exercised what it describes: memory
pressure when pages were evicted or read back from swap, Iceberg when the
allocator is ``iceberg``, the mosaic table when a TLB structure (or a shadow
one) is organised as ``mosaic``. As in the rest of the summary, every number
is a counter or a derived metric of the core.
"""

from __future__ import annotations

from typing import Any, Optional

from rich.table import Table

from tessera.result import Result
from tessera.summary_rows import Rows, fmt, pct

__all__ = ["had_pressure", "pressure_tables", "iceberg_table", "mosaic_tlb_table", "MAPPED_NOTE"]

#: Counters any of which is non-zero after a run that evicted, or that
#: started its measured phase with pages in swap (a warm-up that evicted).
_PRESSURE = ("os.evictions", "os.major_faults", "swap.pages_out", "swap.pages_in", "swap.used_slots")

#: Under the Memory table of a run with pressure: why pages mapped exceed frames.
MAPPED_NOTE = (
    "Pages mapped count every mapping, pages mapped again after an eviction included; "
    "frames are the levels at the end of the run."
)

#: The eviction policies' own counters (``os.eviction.<policy>.<name>``), in
#: the order shown, with their labels. Counters of a policy not listed here
#: are shown under their own names.
_POLICY_ROWS: dict[str, tuple[tuple[str, str], ...]] = {
    "horizon": (
        ("live_evictions", "live pages evicted (horizon raised)"),
        ("ghost_evictions", "ghost pages evicted"),
        ("revivals", "ghosts used again (no I/O)"),
        ("ghosts", "ghosts at the end"),
        ("scans", "accessed-bit scans"),
        ("scanned", "  pages visited"),
        ("hot_reads", "  hot pages whose bit was read"),
        ("hot_assumed", "  hot pages assumed accessed"),
        ("flushes", "  pages shot down on clearing a bit"),
    ),
    "clock": (
        ("scanned", "pages the hand examined"),
        ("second_chances", "  passed over (accessed)"),
    ),
    "linux_like": (
        ("scanned", "inactive pages checked"),
        ("kept", "  given another trip (first reference)"),
        ("activations", "  moved to the active list"),
        ("deactivations", "pages aged to the inactive list"),
        ("active", "active list at the end"),
        ("inactive", "inactive list at the end"),
    ),
    "root_chunk": (
        ("chunks_emptied", "chunks emptied by eviction"),
        ("chunks", "chunks holding pages at the end"),
    ),
}
#: Gauges of the policies that describe the clock, not the pages.
_POLICY_SKIP = {"horizon": ("horizon", "clock")}


def had_pressure(result: Result) -> bool:
    c = result.counters
    return any(c.get(name) for name in _PRESSURE)


def pressure_tables(result: Result, timed: bool) -> list[Table]:
    """Evictions, faults, swap I/O and shootdowns; then the eviction policy's
    own counters. Nothing when the run had no memory pressure."""
    if not had_pressure(result):
        return []
    s = result.stats
    rows = Rows(result, "Memory pressure")
    rows.add("pages evicted", "os.evictions")
    rows.add("major faults (read back from swap)", "os.major_faults")
    rows.add("minor faults (first touches)", "os.minor_faults")
    rows.add("pages written to swap", "swap.pages_out")
    rows.add("  clean, swap copy still valid (not written)", "swap.clean_evictions")
    rows.add("pages read from swap", "swap.pages_in")
    rows.add("swap copies dropped", "swap.discards", skip_zero=True)
    if timed:
        rows.add("swap device cycles", "swap.cycles")
    rows.add("TLB shootdowns", "os.shootdowns")
    rows.add("  TLB entries shot down", "os.tlb_entries_shot_down")
    if timed:
        rows.add("  shootdown cycles", "os.shootdown_cycles")
    rows.add("cache lines of evicted pages dropped", "os.lines_invalidated")
    rows.add("  dirty, written back", "os.dirty_lines_written_back")
    used, cap = s.get("swap.used_slots"), s.get("swap.capacity_slots")
    if used is not None and cap is not None:
        rows.add_value("swap slots in use at the end", f"{fmt(used)} of {fmt(cap)}")
    tables = [rows.done()]
    policy = _policy_table(result)
    if policy is not None:
        tables.append(policy)
    return [t for t in tables if t is not None]


def _policy_table(result: Result) -> Optional[Table]:
    ev = result.config.get("os", {}).get("eviction", {})
    kind = ev.get("kind") if isinstance(ev, dict) else ev
    if not isinstance(kind, str):
        return None
    prefix = f"os.eviction.{kind}."
    names = [k[len(prefix):] for k in result.counters if k.startswith(prefix)]
    if not names:
        return None
    scan = ev.get("scan") if isinstance(ev, dict) else None
    title = f"Eviction: {kind}" + (f" ({scan})" if scan else "")
    rows = Rows(result, title)
    known = _POLICY_ROWS.get(kind, ())
    for name, label in known:
        rows.add(label, prefix + name)
    listed = {n for n, _ in known} | set(_POLICY_SKIP.get(kind, ()))
    for name in sorted(set(names) - listed):
        rows.add(name, prefix + name)
    return rows.done()


def iceberg_table(result: Result) -> Optional[Table]:
    """Placements, conflicts and the pool's load (Mosaic Pages, Table 3)."""
    p = "physmem.allocator.iceberg."
    s = result.stats
    if p + "pool_frames" not in s:
        return None
    rows = Rows(result, "Iceberg allocator")
    pool, buckets, h = s.get(p + "pool_frames"), s.get(p + "buckets"), s.get(p + "associativity")
    rows.add_value("pool", f"{fmt(pool)} frames ({fmt(buckets)} buckets, h = {fmt(h)})")
    rows.add("pages placed", p + "placements")
    rows.add("  in the front yard", p + "front_placements")
    rows.add("  in a backyard", p + "back_placements")
    rows.add("conflicts (all h frames taken)", p + "conflicts")
    rows.add("  ghost displaced", p + "ghost_displacements")
    rows.add("  live page displaced", p + "live_displacements")
    rows.add("requests refused (no page ages)", p + "full", skip_zero=True)
    rows.add("larger pages placed below the pool", p + "outside_pool", skip_zero=True)
    first = s.get(p + "first_conflict_load")
    rows.add_value("pool load at the first conflict", pct(first) if s.get(p + "conflicts") else "no conflict")
    rows.add("mean utilisation", p + "utilisation", share=True)
    rows.add("steady-state utilisation (after the first conflict)", p + "steady_utilisation", share=True)
    rows.add("front-yard frames in use at the end", p + "front_used")
    rows.add("backyard frames in use at the end", p + "back_used")
    return rows.done()


def _mosaic_structures(result: Result) -> list[str]:
    """The structures (``dtlb``, ``shadow.mosaic4``) with mosaic counters, in
    the order the machine's structures then its shadows are named."""
    found = []
    for k in result.counters:
        if k.startswith("mmu.") and k.endswith(".toc_hits"):
            found.append(k[len("mmu.") : -len(".toc_hits")])
    return sorted(found, key=lambda n: (n.startswith("shadow."), n))


def mosaic_tlb_table(result: Result, order: list[str]) -> Optional[Table]:
    """Per mosaic structure: misses, split into entry and sub-page misses,
    and ToC hits (hits on a sub-page made valid by another page's fill).

    ``order`` is the TLB table's order of the machine's structures."""
    names = _mosaic_structures(result)
    if not names:
        return None
    rank = {n: i for i, n in enumerate(order)}
    names.sort(key=lambda n: (n.startswith("shadow."), rank.get(n, len(rank)), n))
    s = result.stats
    t = Table(title="Mosaic TLBs", title_justify="left", title_style="bold", header_style="bold", box=None,
              pad_edge=False)
    for col in ("structure", "arity", "misses", "entry misses", "sub-page misses", "ToC hits"):
        t.add_column(col, justify="left" if col == "structure" else "right")
    for n in names:
        m = f"mmu.{n}"
        t.add_row(
            n,
            fmt(_arity(result, n)),
            fmt(s.get(f"{m}.misses")),
            fmt(s.get(f"{m}.entry_misses")),
            fmt(s.get(f"{m}.subpage_misses")),
            fmt(s.get(f"{m}.toc_hits")),
        )
    return t


def _arity(result: Result, name: str) -> Any:
    mmu = result.config.get("mmu", {})
    section = mmu.get("shadow", {}) if name.startswith("shadow.") else mmu.get("tlb", {})
    org = section.get(name.split(".", 1)[-1], {}).get("organisation", {})
    return org.get("arity") if isinstance(org, dict) else None
