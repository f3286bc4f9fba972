"""The readable summary of a GPU run: applications, warp stalls, TLBs, the
walker, far faults, caches and memory bloat."""

from __future__ import annotations

from typing import Any

from rich.table import Table

from tessera.result import Result
from tessera.summary_rows import fmt, kv_table, pct

REASONS = ("memory", "tlb", "walk", "far_fault")


def is_gpu(result: Result) -> bool:
    return str(result.config.get("machine", {}).get("kind", "cpu")) == "gpu"


def _apps(result: Result) -> int:
    n = 0
    while f"gpu.apps.{n}.cycles" in result.counters:
        n += 1
    return n


def gpu_tables(result: Result) -> list[Any]:
    c, d = result.counters, result.derived
    tables: list[Any] = []
    run = kv_table("Run")
    run.add_row("machine", str(result.config.get("name", "?")))
    run.add_row("applications", result.source)
    run.add_row("seed", str(result.seed))
    run.add_row("cycles", fmt(c.get("gpu.cycles")))
    tables.append(run)

    apps = Table(title="Applications", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False)
    for col in ("app", "SMs", "kernels", "warp insts", "thread insts", "cycles", "IPC (warp)", "IPC (thread)", "bloat"):
        apps.add_column(col, justify="left" if col == "app" else "right")
    for i in range(_apps(result)):
        p = f"gpu.apps.{i}"
        touched, mapped = c.get(f"{p}.touched_bytes", 0), c.get(f"{p}.mapped_bytes", 0)
        apps.add_row(
            str(i),
            fmt(c.get(f"{p}.sms")),
            fmt(c.get(f"{p}.kernels")),
            fmt(c.get(f"{p}.warp_instructions")),
            fmt(c.get(f"{p}.thread_instructions")),
            fmt(c.get(f"{p}.cycles")),
            fmt(d.get(f"{p}.ipc")),
            fmt(d.get(f"{p}.thread_ipc")),
            pct(mapped / touched - 1) if touched else "-",
        )
    tables.append(apps)

    stall = kv_table("Warp stalls (cycles from a global access to its data)")
    total = sum(c.get(f"gpu.stall.{r}", 0) for r in REASONS)
    for r in REASONS:
        v = c.get(f"gpu.stall.{r}", 0)
        stall.add_row(r.replace("_", " "), f"{fmt(v)}  ({pct(v / total) if total else '-'})")
    stall.add_row("SM cycles with no ready warp", fmt(c.get("gpu.sm.idle_cycles")))
    stall.add_row("SM cycles issuing", fmt(c.get("gpu.sm.issue_cycles")))
    tables.append(stall)

    tlb = Table(title="Translation", title_justify="left", title_style="bold", header_style="bold", box=None, pad_edge=False)
    for col in ("structure", "lookups", "hits", "hit rate", "MSHR merges"):
        tlb.add_column(col, justify="left" if col == "structure" else "right")
    for name in ("l1_tlb", "l2_tlb"):
        look, hits = c.get(f"gpu.{name}.lookups", 0), c.get(f"gpu.{name}.hits", 0)
        tlb.add_row(name, fmt(look), fmt(hits), pct(hits / look) if look else "-", fmt(c.get(f"gpu.{name}.mshr_merges")))
    tables.append(tlb)

    walks = kv_table("Walks and far faults")
    w = c.get("gpu.walker.walks", 0)
    walks.add_row("walks", fmt(w))
    walks.add_row("mean walk latency (cycles)", fmt(c.get("gpu.walker.walk_cycles", 0) / w) if w else "-")
    walks.add_row("mean wait for a walker slot (cycles)", fmt(c.get("gpu.walker.queue_cycles", 0) / w) if w else "-")
    walks.add_row("most walks in flight", fmt(c.get("gpu.walker.peak_walks")))
    walks.add_row("far faults", fmt(c.get("gpu.paging.faults", c.get("gpu.walker.faults"))))
    if "gpu.paging.bytes" in c:
        walks.add_row("bytes from the host", fmt(c.get("gpu.paging.bytes")))
    tables.append(walks)

    if "gpu.paging.batches" in c:
        tables.append(_unified_memory(c))

    mem = kv_table("Caches and DRAM")
    for lvl in ("l1d", "l2"):
        h, m = c.get(f"gpu.{lvl}.hits", 0), c.get(f"gpu.{lvl}.misses", 0)
        mem.add_row(f"{lvl} hit rate", pct(h / (h + m)) if h + m else "-")
    mem.add_row("l2 page-walk references", fmt(c.get("gpu.l2.walk_hits", 0) + c.get("gpu.l2.walk_misses", 0)))
    mem.add_row("DRAM lines read", fmt(c.get("gpu.dram.reads")))
    tables.append(mem)
    return tables


def _unified_memory(c):
    """The unified-memory fault path (`gpu.paging = "uvm"`): batches, transfers, evictions."""
    t = kv_table("Unified memory (fault buffer and batches)")
    b = c.get("gpu.paging.batches", 0)
    t.add_row("batches", fmt(b))
    t.add_row("faults per batch", fmt(c.get("gpu.paging.batch_faults", 0) / b) if b else "-")
    t.add_row("units prefetched", fmt(c.get("gpu.paging.prefetched_units")))
    t.add_row("mean batch time (cycles)", fmt(c.get("gpu.paging.batch_cycles", 0) / b) if b else "-")
    t.add_row("faults parked (buffer full)", fmt(c.get("gpu.paging.parked")))
    t.add_row("fault services (bottom halves)", fmt(c.get("gpu.paging.services")))
    if c.get("gpu.paging.flushed"):
        t.add_row("faults flushed and raised again", fmt(c["gpu.paging.flushed"]))
    t.add_row("bytes to the GPU", fmt(c.get("gpu.paging.bytes_to_gpu")))
    t.add_row("units evicted", fmt(c.get("gpu.paging.evictions")))
    t.add_row("premature evictions", fmt(c.get("gpu.paging.premature_evictions")))
    ev = c.get("gpu.paging.evictions", 0)
    t.add_row("mean unit lifetime (cycles)", fmt(c.get("gpu.paging.lifetime_cycles", 0) / ev) if ev else "-")
    if "gpu.to.switches" in c:
        # Thread oversubscription (`gpu.thread_oversubscription`).
        t.add_row("blocks switched out on faults", fmt(c["gpu.to.switches"]))
        t.add_row("context save + restore (cycles)", fmt(c.get("gpu.to.save_cycles", 0) + c.get("gpu.to.restore_cycles", 0)))
        t.add_row("extra blocks per SM (end, peak)", f"{fmt(c.get('gpu.to.degree'))}, {fmt(c.get('gpu.to.peak_degree'))}")
    # PCIe compression and ETC's parts report only when they are on.
    if "gpu.paging.pcie.link_bytes_to_gpu" in c:
        t.add_row("bytes on the link to the GPU (compressed)", fmt(c.get("gpu.paging.pcie.link_bytes_to_gpu")))
    if "gpu.paging.etc.proactive_evictions" in c:
        t.add_row("proactive evictions (ETC)", fmt(c.get("gpu.paging.etc.proactive_evictions")))
    if "gpu.paging.etc.mt_triggers" in c:
        t.add_row("throttling triggers (ETC)", fmt(c.get("gpu.paging.etc.mt_triggers")))
        t.add_row("throttled SM-cycles (ETC)", fmt(c.get("gpu.paging.etc.mt_throttled_sm_cycles")))
    if "gpu.paging.etc.cc_capacity_permille" in c:
        t.add_row("memory with compression (% of footprint)", pct(c["gpu.paging.etc.cc_capacity_permille"] / 1000))
    if "gpu.paging.shootdown.shootdowns" in c:
        # The cost of eviction's TLB shootdowns (`gpu.paging.shootdown`).
        t.add_row("TLB shootdowns (SMs reached)", f"{fmt(c['gpu.paging.shootdown.shootdowns'])} ({fmt(c.get('gpu.paging.shootdown.sms_reached'))})")
        t.add_row("evictions waiting for shootdowns (cycles)", fmt(c.get("gpu.paging.shootdown.timeline_cycles")))
        t.add_row("SM-cycles stalled by shootdowns", fmt(c.get("gpu.paging.shootdown.stall_sm_cycles")))
    return t
