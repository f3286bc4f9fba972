"""Warnings about a finished run: configurations that the core accepts but
that this run could not exercise, so that its numbers do not measure what the
machine file asks for.

Each check reads only the resolved machine and the stats, so the warnings of
a result are the same whenever they are computed: when the run ends, when a
result file is read (files written before warnings existed get them too) and
in every copy of it. :class:`tessera.Result` keeps them in ``warnings``, its
JSON form under ``"warnings"`` (left out when there are none), and the run
summary prints them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["run_warnings"]


def run_warnings(config: Mapping[str, Any], counters: Mapping[str, int]) -> list[str]:
    """The warnings for a run of machine ``config`` that produced ``counters``."""
    out: list[str] = []
    msg = _sampled_scan_never_ran(config, counters)
    if msg:
        out.append(msg)
    return out


def _sampled_scan_never_ran(config: Mapping[str, Any], counters: Mapping[str, int]) -> str:
    ev = config.get("os", {}).get("eviction", {})
    if not isinstance(ev, Mapping) or ev.get("kind") != "horizon" or ev.get("scan") != "linux_sampled":
        return ""
    clock = counters.get("os.eviction.horizon.clock")
    try:
        per_second = int(ev["accesses_per_second"])
        period_ms = int(ev["period_ms"])
    except (KeyError, TypeError, ValueError):
        return ""
    # The same arithmetic as the core's: the first scan is due at this many translations.
    period = per_second * period_ms // 1000
    # The clock is a gauge (warm-up included): below one period, no scan ran at all.
    if clock is None or clock >= period:
        return ""
    return (
        f"os.eviction: the linux_sampled scan's period ({period_ms:,} ms at {per_second:,} accesses per second = "
        f"{period:,} translations) is longer than the run ({clock:,} translations): no scan ran, so every page's "
        f"last use is the time it was mapped and Horizon LRU evicts in mapping order, not by use. Lower "
        f"os.eviction.period_ms (or os.eviction.accesses_per_second), or run longer."
    )
