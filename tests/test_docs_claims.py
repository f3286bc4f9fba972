"""Docs that state what the program does or what a study found, held to the
program and to the study's data: the memory-pressure study's tables and
sentences (docs/example-studies.md), the DataFrame's columns
(docs/sweeps.md) and what `tessera run` writes (README)."""

from __future__ import annotations

import csv
import re
from pathlib import Path

import pytest

import tessera
from conftest import REPO
from tessera.config import loads_toml

STUDIES = REPO / "docs" / "example-studies.md"
DATA = REPO / "docs" / "data" / "memory-pressure.csv"
POLICIES = ("lru", "clock", "linux_like")
#: Each table of the memory-pressure section: the line it follows → its cells from a row of the data.
TABLES = {
    "Pages evicted to make room (`os.evictions`):": lambda r: f"{r['os.evictions']:,}",
    "Pages written to swap (`swap.pages_out`;": lambda r: f"{r['swap.pages_out']:,}",
    "Total swap I/O in pages (out + in):": lambda r: f"{r['swap.pages_out'] + r['swap.pages_in']:,}",
    "Cycles (`core.cycles`, in billions):": lambda r: f"{r['core.cycles'] / 1e9:.2f}",
}


def _data() -> dict[tuple[str, str, str], dict[str, int]]:
    with open(DATA, encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    keys = ("workload", "physmem.capacity", "os.eviction")
    return {tuple(r[k] for k in keys): {k: int(v) for k, v in r.items() if k not in keys} for r in rows}


def _section() -> str:
    text = STUDIES.read_text(encoding="utf-8")
    start = text.index("## Memory pressure")
    return text[start : text.index("\n## ", start + 1)]


def _tables() -> dict[str, dict[tuple[str, str], list[str]]]:
    """``{the line a table follows: {(workload, capacity): [LRU, CLOCK, Linux-like]}}``."""
    lines = _section().splitlines()
    out = {}
    for intro in TABLES:
        start = next(i for i, line in enumerate(lines) if line.startswith(intro))
        head = next(i for i in range(start, len(lines)) if lines[i].startswith("| workload |"))
        assert lines[head] == "| workload | memory | LRU | CLOCK | Linux-like |"
        rows = {}
        for line in lines[head + 2 :]:
            if not line.startswith("|"):
                break
            cells = [c.strip() for c in line.strip("|").split("|")]
            rows[(cells[0], cells[1].replace(" ", ""))] = cells[2:]
        out[intro] = rows
    return out


def _num(cell: str) -> float:
    return float(cell.replace(",", ""))


def test_the_data_holds_one_run_per_point_of_the_sweep():
    spec = loads_toml((REPO / "examples" / "sweeps" / "memory-pressure.toml").read_text(encoding="utf-8"))
    axes = spec["axes"]
    want = {(w, c, e) for w in axes["workload"] for c in axes["physmem.capacity"] for e in axes["os.eviction"]}
    assert set(_data()) == want


def test_every_table_cell_is_the_datas():
    data = _data()
    tables = _tables()
    for intro, cell in TABLES.items():
        assert tables[intro], intro
        for (workload, capacity), cells in tables[intro].items():
            want = [cell(data[(workload, capacity, p)]) for p in POLICIES]
            # The kvcache column of swap.pages_out showed os.evictions (69,916 where pages_out is 61,482).
            assert cells == want, (intro, workload, capacity)


def _flat() -> str:
    return " ".join(_section().split())


def _ratio_range(values: list[float], digits: int = 1) -> str:
    return f"{min(values):.{digits}f}–{max(values):.{digits}f} %"


def test_the_comparing_sentences_follow_from_the_tables():
    t = _tables()
    ev, out, io, cyc = (t[k] for k in TABLES)
    text = _flat()
    pressured = ("224MiB", "192MiB", "168MiB")

    def col(table, workload, capacity):
        return [_num(c) for c in table[(workload, capacity)]]

    slow = [col(cyc, w, "168MiB")[0] / col(cyc, w, "272MiB")[0] for w in ("gups", "kvcache")]
    assert (f"GUPS runs {slow[0]:.0f}× longer than with enough memory, and the key-value cache {slow[1]:.1f}× "
            "longer") in text
    gups = [max(v) / min(v) * 100 - 100 for v in (col(out, "gups", c) for c in pressured)]
    assert f"write {_ratio_range(gups)} apart at each size" in text
    # kvcache: LRU against CLOCK, evictions and writes (the old text gave the eviction range for writes).
    fewer_ev = [100 - col(ev, "kvcache", c)[0] / col(ev, "kvcache", c)[1] * 100 for c in pressured]
    fewer_out = [100 - col(out, "kvcache", c)[0] / col(out, "kvcache", c)[1] * 100 for c in pressured]
    assert f"evicts {_ratio_range(fewer_ev)} fewer pages than CLOCK and writes {_ratio_range(fewer_out)} fewer" in text
    clean = {c: [e - o for e, o in zip(col(ev, "kvcache", c), col(out, "kvcache", c))] for c in pressured}
    assert all(clean[c][0] > clean[c][1] for c in pressured)  # "more of its victims still have a valid swap copy"
    # Linux-like: evicts more than LRU everywhere; writes between the two, except at 168 MiB.
    more_ev = [col(ev, "kvcache", c)[2] / col(ev, "kvcache", c)[0] * 100 - 100 for c in pressured]
    assert all(m > 0 for m in more_ev) and f"({_ratio_range(more_ev)} more)" in text
    for c in ("224MiB", "192MiB"):
        lru, clock, linux = col(out, "kvcache", c)
        assert lru < linux < clock, c
    lru, clock, linux = col(out, "kvcache", "168MiB")
    assert linux < lru < clock and clean["168MiB"][2] > clean["168MiB"][0]
    assert f"writes the fewest of the three, {100 - linux / lru * 100:.1f} % fewer than LRU" in text
    assert "192 MiB; at 168 MiB it writes the fewest" in text
    lru, clock, linux = col(io, "kvcache", "168MiB")
    assert (f"its total I/O is {linux / lru * 100 - 100:.1f} % above LRU's, and CLOCK's is "
            f"{clock / lru * 100 - 100:.1f} % above LRU's") in text


def test_the_figures_plot_what_their_caption_says():
    # The kvcache figure beside the old table plotted swap.pages_out while the table showed os.evictions.
    assert "![kvcache: pages swapped out](figures/memory-pressure-kvcache.png)" in _section()
    assert "--y swap.pages_out --hue os.eviction --where workload=kvcache" in _flat()
    for name in ("kvcache", "gups"):
        assert (REPO / "docs" / "figures" / f"memory-pressure-{name}.png").stat().st_size > 10_000


# --------------------------------------------------------------- docs/sweeps.md


def _documented_columns() -> list[list[str]]:
    text = (REPO / "docs" / "sweeps.md").read_text(encoding="utf-8")
    start = text.index("## The DataFrame")
    section = text[start : text.index("\n## ", start + 1)]
    rows = [line for line in section.splitlines() if line.startswith("| `")]
    assert rows
    return [re.findall(r"`([^`]+)`", row.split("|")[1]) for row in rows]


def test_sweeps_md_lists_the_columns_the_dataframe_has(tmp_path: Path):
    spec = {"name": "cols", "machine": "tlb_only", "source": {"workload": "uniform"},
            "params": {"uniform": {"footprint": "8MiB", "accesses": "2000"}},
            "axes": {"mmu.tlb.l2_tlb.entries": [256]}, "warmup": "500"}
    df = tessera.sweep(spec, store=tmp_path / "s.sqlite", jobs=1)
    stats = set(tessera.results.get(tmp_path / "s.sqlite", df["run_id"][0]).stats)
    columns = set(df.columns)
    literal, prefixes, any_stat = set(), [], False
    for tokens in _documented_columns():
        for tok in tokens:
            assert not tok.startswith("derived."), f"schema 2 has no {tok} columns"
            if tok == "<stat>":
                any_stat = True
            elif "<" in tok:
                prefixes.append(tok[: tok.index("<")])
            else:
                literal.add(tok)
    assert any_stat and stats <= columns
    assert literal <= columns, literal - columns
    for p in prefixes:
        assert any(c.startswith(p) for c in columns), p
    undocumented = {c for c in columns - literal - stats if not c.startswith(tuple(prefixes))}
    assert not undocumented


# --------------------------------------------------------------------- README


def test_readme_says_tessera_run_writes_a_result_only_with_out(cli, tmp_path: Path):
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    para = " ".join(readme[readme.index("\n`tessera run` prints") :].split("\n\n")[0].split())
    assert "with `--out FILE` it also writes the result to FILE" in para
    assert "Without `--out` nothing is written" in para
    assert para.index("--out") < para.index("writes")
    # What it says: no file without --out, the JSON result with it.
    r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", "2000", "--footprint", "8MiB")
    assert r.code == 0 and "Run" in r.out
    assert list(tmp_path.iterdir()) == []
    r = cli("run", "--preset", "tlb_only", "--synthetic", "uniform", "--accesses", "2000", "--footprint", "8MiB",
            "--out", "r.json")
    assert r.code == 0 and tessera.load_result(tmp_path / "r.json").counters["core.records"] == 2000


@pytest.mark.parametrize("name", ["README.md", "docs/sweeps.md", "docs/figures.md"])
def test_docs_do_not_offer_schema_1_columns_as_current(name):
    text = (REPO / name).read_text(encoding="utf-8")
    assert "counters and `derived.<metric>`" not in text
