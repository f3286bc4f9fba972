"""Mosaic Pages' table-of-contents page-table format through the API
(docs/mosaic-pages.md#the-table-of-contents-page-table-format)."""

from __future__ import annotations

import pytest

import tessera

#: Iceberg + Horizon LRU under memory pressure (8 MiB, a footprint of 1.3× the pool).
MOSAIC = {
    "physmem.capacity": '"8MiB"',
    "physmem.allocator": '"iceberg"',
    "os.swap": '{ capacity = "64MiB" }',
    "os.eviction": '"horizon"',
}
SYN = {"pattern": "hotcold", "accesses": 40_000, "footprint": "10MiB"}
TOC = '{ kind = "mosaic_toc", arity = 16 }'


def _sets(overrides: dict) -> list[str]:
    return [f"{k}={v}" for k, v in overrides.items()]


def test_the_format_is_listed():
    assert "mosaic_toc" in dict(tessera.registry()["format"])


def test_toc_leaves_make_the_same_translations_as_x86_leaves():
    x86 = tessera.simulate("tlb_only", synthetic=SYN, overrides=_sets(MOSAIC), seed=3)
    toc = tessera.simulate("tlb_only", synthetic=SYN, overrides=_sets({**MOSAIC, "pagetable.format": TOC}), seed=3)
    c, x = toc.counters, x86.counters
    assert c["core.records"] == 40_000
    assert c["os.evictions"] > 0
    # The allocator places the pages, whichever format records them.
    for k in ("os.faults", "os.evictions", "swap.pages_in", "walker.walks", "mmu.l1_dtlb_4k.misses", "mmu.l2_tlb.misses"):
        assert c[k] == x[k], k
    # A leaf node of 16-page ToCs covers 16 MiB, an x86 one 2 MiB.
    assert c["pagetable.nodes_l1"] <= 2 < x["pagetable.nodes_l1"]
    fmt = toc.config["pagetable"]["format"]
    assert fmt["kind"] == "mosaic_toc" and fmt["arity"] == 16


@pytest.mark.parametrize(
    ("overrides", "path", "allowed"),
    [
        ({"pagetable.format": TOC}, "physmem.allocator", ["iceberg"]),
        ({**MOSAIC, "pagetable.format": TOC, "physmem.page_size": '"thp"'}, "physmem.page_size", ["base_only"]),
        ({**MOSAIC, "pagetable.format": '{ kind = "mosaic_toc", arity = 12 }'}, "pagetable.format.arity", ["4", "8", "16", "32", "64"]),
    ],
)
def test_config_errors_name_the_key(overrides, path, allowed):
    with pytest.raises(tessera.ConfigError) as e:
        tessera.simulate("tlb_only", synthetic=SYN, overrides=_sets(overrides))
    assert e.value.path == path, str(e.value)
    assert e.value.allowed == allowed
    assert "mosaic_toc" in str(e.value) or "arity" in str(e.value)
