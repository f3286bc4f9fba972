"""tessera.figures and `tessera plot`: bar and line values read back from the Axes,
normalisation, geometric means, column names, deterministic files, and the CLI."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tessera
from tessera import figures

REPO = Path(__file__).resolve().parent.parent

# walks per kilo-instruction of each workload with 4 KiB pages, and what
# 2 MiB pages and THP scale it by; seed s adds s to every value.
BASE = {"gups": 10.0, "kvcache": 4.0, "sort": 2.0}
SCALE = {"4k": 1.0, "2m": 0.5, "thp": 0.25}


def sweep_frame(seeds=(0, 1), **extra_axes) -> pd.DataFrame:
    """Rows shaped like tessera.results.load: workload x page size x seed."""
    rows = []
    for w, base in BASE.items():
        for ps, f in SCALE.items():
            for s in seeds:
                row = {
                    "run_id": f"{w}-{ps}-{s}",
                    "sweep": "page-sizes",
                    "machine": "sandy_bridge",
                    "source": f"workload:{w}",
                    "workload": w,
                    "seed": s,
                    "axis.workload": w,
                    "axis.physmem.page_size": ps,
                    "axis.seed": s,
                    "param.table": "256MiB",
                    "config.physmem.capacity": 1 << 34,
                    "mmu.tlb.l2_tlb.misses": int(1000 * base * f),
                    "walker.walks_pki": base * f + s,
                }
                rows.append(row)
    df = pd.DataFrame(rows)
    for name, value in extra_axes.items():
        df[name] = value
    return df


def stat_doc(name: str) -> tuple[str, str]:
    """``(unit, description)`` as ``tessera stats`` prints them."""
    return tessera.stat_docs("sandy_bridge")[name]


def one_line(label: str) -> str:
    """An axis label with its wrapping undone."""
    return label.replace("\n", " ")


WALKS_PKI_UNIT, WALKS_PKI = stat_doc("walker.walks_pki")


def value(ps: str, w: str, s: int) -> float:
    return BASE[w] * SCALE[ps] + s


def bar_heights(fig) -> dict[str, list[float]]:
    """{legend label: bar heights in x order} from the BarContainers of the first Axes."""
    from matplotlib.container import BarContainer

    ax = fig.axes[0]
    return {c.get_label(): [r.get_height() for r in c] for c in ax.containers if isinstance(c, BarContainer)}


def tick_labels(ax) -> list[str]:
    return [t.get_text() for t in ax.get_xticklabels()]


def gmean(vals) -> float:
    return math.prod(vals) ** (1 / len(vals))


# ------------------------------------------------------------------- bars


def test_bars_heights_and_geomean_without_hue():
    df = sweep_frame(seeds=(0,))
    fig = figures.bars(df, "walker.walks_pki", where={"physmem.page_size": "4k"})
    ax = fig.axes[0]
    (heights,) = bar_heights(fig).values()
    expected = [10.0, 4.0, 2.0]
    assert heights[:3] == pytest.approx(expected)
    assert heights[3] == pytest.approx(gmean(expected))  # (10*4*2)^(1/3) = 4.309
    assert tick_labels(ax) == ["gups", "kvcache", "sort", "geomean"]
    assert one_line(ax.get_ylabel()) == f"{WALKS_PKI} ({WALKS_PKI_UNIT})"
    assert ax.get_legend() is None
    assert fig.tessera_notes == []


def test_bars_grouped_by_hue_with_seed_replicates_and_minmax_whiskers():
    df = sweep_frame(seeds=(0, 1, 2))
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size")
    got = bar_heights(fig)
    assert list(got) == ["4k", "2m", "thp"]  # first-appearance order ("thp" is not a size)
    for ps in SCALE:
        means = [np.mean([value(ps, w, s) for s in (0, 1, 2)]) for w in BASE]
        assert got[ps] == pytest.approx(means + [gmean(means)])
    # Whiskers span the seeds: min is seed 0, max is seed 2, for every bar but the geomean.
    from matplotlib.container import ErrorbarContainer

    ax = fig.axes[0]
    errs = [c for c in ax.containers if isinstance(c, ErrorbarContainer)]
    assert len(errs) == 3
    segs = errs[0].lines[2][0].get_segments()  # the vertical whisker lines of the "4k" bars
    spans = sorted((round(s[0][1], 9), round(s[1][1], 9)) for s in segs)
    assert spans == sorted((value("4k", w, 0), value("4k", w, 2)) for w in BASE)
    assert "mean of up to 3 runs per point; whiskers: min to max" in ax.get_xlabel()


def test_bars_agg_and_std_errorbars():
    df = sweep_frame(seeds=(0, 1, 5))
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", agg="median", errorbars="std", geomean=False)
    got = bar_heights(fig)
    assert got["2m"] == pytest.approx([value("2m", w, 1) for w in BASE])
    assert "median of up to 3 runs per point; whiskers: ±1 std" in fig.axes[0].get_xlabel()
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", agg="max", errorbars=None)
    assert bar_heights(fig)["thp"][:3] == pytest.approx([value("thp", w, 5) for w in BASE])
    with pytest.raises(ValueError, match="unknown agg 'sum'"):
        figures.bars(df, "walks_pki", agg="sum")


def test_bars_normalised_to_a_hue_value_pairs_each_seed_with_its_baseline():
    df = sweep_frame(seeds=(0, 1))
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", baseline="4k")
    got = bar_heights(fig)
    for ps in SCALE:
        # Mean over seeds of (run / the 4k run of the same workload and seed).
        ratios = [np.mean([value(ps, w, s) / value("4k", w, s) for s in (0, 1)]) for w in BASE]
        assert got[ps] == pytest.approx(ratios + [gmean(ratios)])
    assert got["4k"] == pytest.approx([1.0] * 4)
    # The baseline need not be drawn.
    only = bar_heights(figures.bars(df, "walks_pki", hue="physmem.page_size", baseline="4k", hue_order=["thp"]))
    assert list(only) == ["thp"] and only["thp"] == pytest.approx(got["thp"])
    ax = fig.axes[0]
    # A ratio: the description without a unit, then what it is divided by.
    assert ax.get_ylabel().split("\n")[-1] == "normalised to 4k"
    assert one_line(ax.get_ylabel()) == f"{WALKS_PKI} normalised to 4k"
    # The dashed reference line at 1.
    assert any(list(line.get_ydata()) == [1.0, 1.0] for line in ax.get_lines())


def test_bars_normalised_to_a_mapping_over_x():
    df = sweep_frame(seeds=(0,))
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", baseline={"workload": "sort"}, geomean=False)
    got = bar_heights(fig)
    for ps in SCALE:
        assert got[ps] == pytest.approx([value(ps, w, 0) / value(ps, "sort", 0) for w in BASE])
    assert one_line(fig.axes[0].get_ylabel()) == f"{WALKS_PKI} normalised to workload=sort"
    # Both columns named: every bar is divided by the one (sort, 4k) run.
    both = {"workload": "sort", "physmem.page_size": "4k"}
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", baseline=both)
    assert bar_heights(fig)["thp"][:3] == pytest.approx([value("thp", w, 0) / value("4k", "sort", 0) for w in BASE])
    # Wrapped to fit beside the axis, never inside "column=value".
    assert fig.axes[0].get_ylabel().endswith("\nnormalised to workload=sort,\nphysmem.page_size=4k")


def test_fractions_are_drawn_in_percent_with_their_description():
    df = sweep_frame(seeds=(0,))
    df["walker.walk_cycle_share"] = df["walker.walks_pki"] / 100
    unit, desc = stat_doc("walker.walk_cycle_share")
    assert unit == "fraction"
    fig = figures.bars(df, "walk_cycle_share", hue="physmem.page_size")
    label = fig.axes[0].get_ylabel()
    assert "%" in label and desc in one_line(label)
    assert one_line(label) == f"{desc} (%)"
    for ps, heights in bar_heights(fig).items():
        drawn = [100 * value(ps, w, 0) / 100 for w in BASE]
        assert heights == pytest.approx(drawn + [gmean(drawn)])
    # Lines too; a ratio of two fractions is not scaled.
    fig = figures.lines(df, "walk_cycle_share", x="physmem.page_size", hue="workload")
    assert one_line(fig.axes[0].get_ylabel()) == f"{desc} (%)"
    xs, ys = line_data(fig)["gups"]
    assert ys == pytest.approx([value(ps, "gups", 0) for ps in SCALE])
    fig = figures.bars(df, "walk_cycle_share", hue="physmem.page_size", baseline="4k", geomean=False)
    assert bar_heights(fig)["thp"] == pytest.approx([SCALE["thp"]] * 3)
    assert "%" not in fig.axes[0].get_ylabel()


def test_counters_of_any_structure_name_get_their_unit_and_description():
    df = sweep_frame(seeds=(0,)).rename(columns={"mmu.tlb.l2_tlb.misses": "mmu.my_stlb.misses"})
    unit, desc = stat_doc("mmu.l2_tlb.misses")
    fig = figures.bars(df, "mmu.my_stlb.misses", where={"physmem.page_size": "4k"})
    assert one_line(fig.axes[0].get_ylabel()) == f"{desc} ({unit})"
    (heights,) = bar_heights(fig).values()
    assert heights[:3] == pytest.approx([1000 * BASE[w] for w in BASE])
    # A column that is not a stat keeps its name and its values.
    df["config.physmem.capacity"] = 2.0
    fig = figures.bars(df, "config.physmem.capacity", where={"physmem.page_size": "4k"}, geomean=False)
    assert fig.axes[0].get_ylabel() == "physmem.capacity"
    (heights,) = bar_heights(fig).values()
    assert heights == pytest.approx([2.0] * 3)


def test_normalising_a_plain_frame_without_seeds_or_axes():
    # No seed column: the two runs of (a, 2m) are replicates, each divided by
    # the one (a, 4k) run; then averaged.
    df = pd.DataFrame({"workload": ["a", "a", "b", "b", "a"], "ps": ["4k", "2m", "4k", "2m", "2m"],
                       "y": [2.0, 1.0, 4.0, 1.0, 3.0]})  # fmt: skip
    got = bar_heights(figures.bars(df, "y", hue="ps", baseline="4k"))
    assert got["2m"] == pytest.approx([(1.0 / 2 + 3.0 / 2) / 2, 1.0 / 4, math.sqrt(1.0 * 0.25)])
    # Nothing left to pair on: every bar is divided by the one baseline run.
    (heights,) = bar_heights(figures.bars(df[df.ps == "4k"], "y", baseline={"workload": "b"})).values()
    assert heights == pytest.approx([0.5, 1.0, math.sqrt(0.5)])


def test_geomean_leaves_out_zero_negative_and_missing_bars_with_a_note():
    df = sweep_frame(seeds=(0,))
    df.loc[(df.workload == "gups") & (df["axis.physmem.page_size"] == "2m"), "walker.walks_pki"] = 0.0
    df.loc[(df.workload == "sort") & (df["axis.physmem.page_size"] == "2m"), "walker.walks_pki"] = -1.0
    df = df[~((df.workload == "kvcache") & (df["axis.physmem.page_size"] == "thp"))]
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size")
    got = bar_heights(fig)
    assert got["2m"][:3] == pytest.approx([0.0, 2.0, -1.0])
    assert got["2m"][3] == pytest.approx(2.0)  # only kvcache's bar is positive
    assert math.isnan(got["thp"][1])  # no run: no bar
    assert got["thp"][3] == pytest.approx(gmean([2.5, 0.5]))
    assert got["4k"][3] == pytest.approx(gmean([10.0, 4.0, 2.0]))
    note = "geomean leaves out 2m: gups (0), sort (-1); thp: kvcache (missing)"
    assert fig.tessera_notes == [note]
    assert note in fig.axes[0].get_xlabel()


def test_geomean_needs_two_groups_and_can_be_turned_off():
    df = sweep_frame(seeds=(0,))
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", where={"workload": "gups"})
    assert tick_labels(fig.axes[0]) == ["gups"]
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", geomean=False)
    assert tick_labels(fig.axes[0]) == ["gups", "kvcache", "sort"]


def test_bars_explicit_order_selects_and_orders():
    df = sweep_frame(seeds=(0,))
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", order=["sort", "gups"], hue_order=["thp", "4k"])
    got = bar_heights(fig)
    assert list(got) == ["thp", "4k"]
    assert got["4k"][:2] == pytest.approx([2.0, 10.0])
    assert tick_labels(fig.axes[0]) == ["sort", "gups", "geomean"]
    with pytest.raises(ValueError, match="'1g' not found in column axis.physmem.page_size; its values are 4k, 2m, thp"):
        figures.bars(df, "walks_pki", hue="physmem.page_size", hue_order=["1g"])


def test_sizes_and_numbers_sort_by_value():
    df = sweep_frame(seeds=(0,))
    df["axis.physmem.page_size"] = df["axis.physmem.page_size"].map({"4k": "4k", "2m": "2MiB", "thp": "1g"})
    df = pd.concat([df, df.assign(**{"axis.mmu.entries": 1024})]).assign(
        **{"axis.mmu.entries": [512] * len(df) + [1024] * len(df)}
    )
    df = df.iloc[::-1]  # reversed rows: order must not depend on row order
    fig = figures.bars(df, "walks_pki", hue="physmem.page_size", where={"mmu.entries": 512})
    assert list(bar_heights(fig)) == ["4k", "2MiB", "1g"]
    fig = figures.bars(df, "walks_pki", x="mmu.entries", hue="physmem.page_size", where={"workload": "gups"})
    assert tick_labels(fig.axes[0]) == ["512", "1024", "geomean"]


def test_draws_into_a_given_axes():
    from matplotlib.figure import Figure

    fig = Figure()
    ax1, ax2 = fig.subplots(1, 2)
    out = figures.bars(sweep_frame(), "walks_pki", hue="physmem.page_size", ax=ax2, title="right")
    assert out is fig
    assert ax2.get_title() == "right" and not ax1.containers and ax2.containers


# ------------------------------------------------------------------- lines


def entries_frame() -> pd.DataFrame:
    rows = []
    for entries in (512, 1024, 2048, 4096):
        for ps, f in (("4k", 1.0), ("2m", 0.5)):
            for s in (0, 1):
                rows.append(
                    {
                        "workload": "gups",
                        "seed": s,
                        "axis.seed": s,
                        "axis.mmu.tlb.l2_tlb.entries": entries,
                        "axis.physmem.page_size": ps,
                        "walker.walks_pki": 4096 / entries * f + s,
                    }
                )
    return pd.DataFrame(rows)


def line_data(fig) -> dict[str, tuple[list[float], list[float]]]:
    return {
        line.get_label(): (list(line.get_xdata()), list(line.get_ydata()))
        for line in fig.axes[0].get_lines()
        if not line.get_label().startswith("_")
    }


def test_lines_values_positions_and_log2_axis():
    df = entries_frame().sample(frac=1.0, random_state=3)  # shuffled rows
    fig = figures.lines(df, "walks_pki", x="mmu.tlb.l2_tlb.entries", hue="physmem.page_size", logx=True)
    got = line_data(fig)
    assert list(got) == ["4k", "2m"]
    xs, ys = got["2m"]
    assert xs == [512, 1024, 2048, 4096]
    assert ys == pytest.approx([np.mean([4096 / e * 0.5 + s for s in (0, 1)]) for e in xs])
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    assert ax.xaxis.get_transform().base == 2
    assert tick_labels(ax) == ["512", "1024", "2048", "4096"]
    # Seeds give a shaded min-max band per line.
    from matplotlib.collections import PolyCollection

    assert sum(isinstance(c, PolyCollection) for c in ax.collections) == 2
    assert "bands: min to max" in ax.get_xlabel()


def test_lines_normalised_to_an_x_value():
    df = entries_frame()
    at_512 = {"mmu.tlb.l2_tlb.entries": 512}
    fig = figures.lines(df, "walks_pki", x="mmu.tlb.l2_tlb.entries", hue="physmem.page_size", baseline=at_512)
    xs, ys = line_data(fig)["4k"]
    expected = [np.mean([(4096 / e + s) / (8 + s) for s in (0, 1)]) for e in xs]
    assert ys == pytest.approx(expected)
    assert ys[0] == pytest.approx(1.0)
    assert one_line(fig.axes[0].get_ylabel()) == f"{WALKS_PKI} normalised to mmu.tlb.l2_tlb.entries=512"


def test_lines_place_size_strings_by_value_and_keep_their_names():
    df = entries_frame()
    tables = {512: "64MiB", 1024: "128MiB", 2048: "256MiB", 4096: "1GiB"}
    df["axis.param.table"] = df["axis.mmu.tlb.l2_tlb.entries"].map(tables)
    df = df.drop(columns="axis.mmu.tlb.l2_tlb.entries")
    fig = figures.lines(df, "walks_pki", x="param.table", hue="physmem.page_size")
    xs, _ = line_data(fig)["4k"]
    assert xs == [64 << 20, 128 << 20, 256 << 20, 1 << 30]
    assert tick_labels(fig.axes[0]) == ["64MiB", "128MiB", "256MiB", "1GiB"]


def test_lines_over_categories_and_logx_needs_numbers():
    df = sweep_frame(seeds=(0,))
    fig = figures.lines(df, "walks_pki", x="physmem.page_size", hue="workload")
    xs, ys = line_data(fig)["kvcache"]
    assert xs == [0, 1, 2] and ys == pytest.approx([4.0, 2.0, 1.0])
    assert tick_labels(fig.axes[0]) == ["4k", "2m", "thp"]
    with pytest.raises(ValueError, match="logx needs numeric x values; physmem.page_size has thp"):
        figures.lines(df, "walks_pki", x="physmem.page_size", hue="workload", logx=True)


# ------------------------------------------------------- names and errors


def test_resolution_order_exact_axis_param_config_derived():
    df = pd.DataFrame(
        {"a": [1.0], "axis.a": [2.0], "axis.b": [3.0], "param.b": [4.0], "param.c": [5.0], "config.c": [6.0],
         "config.d": [7.0], "derived.d": [8.0], "derived.e": [9.0]}
    )  # fmt: skip
    got = [figures.resolve_column(df, n) for n in "abcde"]
    assert got == ["a", "axis.b", "param.c", "config.d", "derived.e"]


def test_unknown_column_suggests_close_matches_and_lists_axes():
    df = sweep_frame()
    with pytest.raises(ValueError) as e:
        figures.bars(df, "walks_pki", hue="physmem.pagesize")
    msg = str(e.value)
    assert "unknown column 'physmem.pagesize'; did you mean axis.physmem.page_size" in msg
    assert "Axis columns: axis.workload, axis.physmem.page_size, axis.seed." in msg
    with pytest.raises(ValueError, match=r"unknown column 'walk_pki'; did you mean walker.walks_pki\?"):
        figures.lines(df, "walk_pki", x="seed")
    with pytest.raises(ValueError, match="no similar column"):
        figures.bars(df, "zzzzqqq")


def test_a_swept_axis_varying_inside_a_bar_is_an_error():
    df = sweep_frame()
    with pytest.raises(ValueError) as e:
        figures.bars(df, "walks_pki")
    assert str(e.value).startswith(
        "axis.physmem.page_size takes several values (4k, 2m, thp) within one point (x=gups); "
        "averaging over it would hide a result: keep one value with where={'physmem.page_size': VALUE} "
        "(--where physmem.page_size=VALUE), or plot it as x or hue"
    )
    two = pd.concat([df, df.assign(sweep="other")])
    with pytest.raises(ValueError, match="sweep takes several values .* pick one sweep with --sweep"):
        figures.bars(two, "walks_pki", hue="physmem.page_size")


def test_bad_baselines_and_filters():
    df = sweep_frame()
    with pytest.raises(ValueError, match="baseline physmem.page_size = 1g is not in these runs; .* takes 4k, 2m, thp"):
        figures.bars(df, "walks_pki", hue="physmem.page_size", baseline="1g")
    with pytest.raises(ValueError, match="names a hue value, but there is no hue"):
        figures.bars(df, "walks_pki", baseline="4k", where={"physmem.page_size": "4k"})
    zero = df.copy()
    sort_4k_seed1 = (zero.workload == "sort") & (zero["axis.physmem.page_size"] == "4k") & (zero.seed == 1)
    zero.loc[sort_4k_seed1, "walker.walks_pki"] = 0
    with pytest.raises(ValueError, match="the baseline walker.walks_pki is 0 for workload=sort, seed=1"):
        figures.bars(zero, "walks_pki", hue="physmem.page_size", baseline="4k")
    gap = df[~((df.workload == "kvcache") & (df["axis.physmem.page_size"] == "4k"))]
    with pytest.raises(ValueError, match="no baseline run .* for workload=kvcache, seed=0"):
        figures.bars(gap, "walks_pki", hue="physmem.page_size", baseline="4k")
    with pytest.raises(ValueError, match="where workload=mcf: no run has that value; workload takes gups, kvcache"):
        figures.bars(df, "walks_pki", hue="physmem.page_size", where={"workload": "mcf"})
    with pytest.raises(ValueError, match=r"where workload=mcf\|lbm: no run has that value"):
        figures.bars(df, "walks_pki", hue="physmem.page_size", where={"workload": ["mcf", "lbm"]})
    with pytest.raises(ValueError, match="no run matches every where condition"):
        no_gups_2m = df[~((df.workload == "gups") & (df["axis.physmem.page_size"] == "2m"))]
        figures.bars(no_gups_2m, "walks_pki", where={"workload": "gups", "physmem.page_size": "2m"})
    with pytest.raises(ValueError, match="not numeric"):
        figures.bars(df, "source", hue="physmem.page_size")


def test_where_matches_numbers_given_as_text_and_lists():
    df = entries_frame()
    fig = figures.bars(
        df, "walks_pki", x="mmu.tlb.l2_tlb.entries", hue="physmem.page_size",
        where={"mmu.tlb.l2_tlb.entries": ["512", 2048.0], "seed": "0"},
    )  # fmt: skip
    assert tick_labels(fig.axes[0]) == ["512", "2048", "geomean"]
    assert bar_heights(fig)["4k"][:2] == pytest.approx([8.0, 2.0])


# ------------------------------------------------------------------ files


def _small_figure():
    return figures.bars(sweep_frame(), "walks_pki", hue="physmem.page_size", baseline="4k", title="page sizes")


def test_png_written_atomically_and_non_empty(tmp_path):
    (path,) = figures.save(_small_figure(), tmp_path / "f.png")
    data = path.read_bytes()
    assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png"]  # no temporary file left


def test_svg_and_pdf_are_byte_identical_for_the_same_data(tmp_path):
    a = figures.save(_small_figure(), tmp_path / "a", formats=("svg", "pdf"))
    b = figures.save(_small_figure(), tmp_path / "b", formats=["svg", "pdf"])
    assert [p.name for p in a] == ["a.svg", "a.pdf"]
    for pa, pb in zip(a, b):
        assert pa.read_bytes() == pb.read_bytes(), pa.name
    svg = a[0].read_text()
    assert svg.startswith("<?xml") and "<dc:date>" not in svg
    # Nor does it matter what was saved before: a PNG first, or the same SVG twice.
    fig = _small_figure()
    (c,) = figures.save(fig, tmp_path / "c", formats=("png", "svg"))[1:]
    (d,) = figures.save(fig, tmp_path / "d.svg")
    assert c.read_bytes() == d.read_bytes() == a[0].read_bytes()


def test_svg_identical_across_processes_and_without_pyplot(tmp_path):
    """Another interpreter, another hash seed: the same bytes, and pyplot never imported."""
    here = figures.save(_small_figure(), tmp_path / "here.svg")[0]
    package_root = str(Path(tessera.__file__).resolve().parent.parent)  # this tessera, installed or not
    script = (
        "import sys; sys.path[:0] = [{root!r}, {tests!r}]; import test_figures as t; from tessera import figures; "
        "figures.save(t._small_figure(), {out!r}); assert 'matplotlib.pyplot' not in sys.modules"
    ).format(root=package_root, tests=str(REPO / "tests"), out=str(tmp_path / "there.svg"))
    env = dict(os.environ, PYTHONHASHSEED="12345")
    subprocess.run([sys.executable, "-c", script], check=True, env=env, cwd=tmp_path)
    assert (tmp_path / "there.svg").read_bytes() == here.read_bytes()


def test_save_needs_a_known_format(tmp_path):
    fig = _small_figure()
    with pytest.raises(ValueError, match="cannot tell the format of .*f.jpeg"):
        figures.save(fig, tmp_path / "f.jpeg")
    with pytest.raises(ValueError, match="unknown figure format"):
        figures.save(fig, tmp_path / "f", formats=("png", "gif"))
    assert list(tmp_path.iterdir()) == []


# -------------------------------------------------------------------- CLI

TINY_SWEEP = """name = "tiny"
machine = "tlb_only"
[source]
synthetic = { pattern = "uniform", accesses = 20000, footprint = "64MiB" }
[axes]
"mmu.tlb.l2_tlb.entries" = [256, 512]
"physmem.page_size.kind" = ["base_only", "thp"]
"""
ENTRIES = "mmu.tlb.l2_tlb.entries"
KIND = "physmem.page_size"  # the sweep below writes the `.kind` alias


@pytest.fixture(scope="module")
def tiny_store(tmp_path_factory) -> Path:
    """A real store holding a 4-run sweep: 2 L2 TLB sizes x 2 page-size policies."""
    d = tmp_path_factory.mktemp("store")
    (d / "tiny.toml").write_text(TINY_SWEEP)
    df = tessera.sweep(d / "tiny.toml", store=d / "s.sqlite", jobs=1)
    assert len(df) == 4
    return d / "s.sqlite"


def test_cli_sweep_then_plot_draws_what_the_api_draws(cli, tmp_path):
    (tmp_path / "tiny.toml").write_text(TINY_SWEEP)
    r = cli("sweep", "tiny.toml", "--store", "s.sqlite", "-j", "1", "-q")
    assert r.code == 0, r.err
    r = cli(
        "plot", "bars", "--store", "s.sqlite", "--sweep", "tiny", "--y", "walker.walks_pki", "--x", ENTRIES,
        "--hue", KIND, "--baseline", "base_only", "--title", "tiny", "-o", "bars.svg", "-o", "bars.png",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert "wrote bars.svg" in r.err and "wrote bars.png" in r.err
    assert (tmp_path / "bars.png").read_bytes().startswith(b"\x89PNG")

    df = tessera.results.load(tmp_path / "s.sqlite", sweep="tiny")
    fig = figures.bars(df, "walker.walks_pki", x=ENTRIES, hue=KIND, baseline="base_only", title="tiny")
    (mine,) = figures.save(fig, tmp_path / "api.svg")
    assert (tmp_path / "bars.svg").read_bytes() == mine.read_bytes()
    # ...and the bars are the stored values divided by hand.
    v = {(row[f"axis.{ENTRIES}"], row[f"axis.{KIND}"]): row["walker.walks_pki"] for _, row in df.iterrows()}
    ratios = [v[(e, "thp")] / v[(e, "base_only")] for e in (256, 512)]
    assert bar_heights(fig)["thp"] == pytest.approx(ratios + [gmean(ratios)])
    assert bar_heights(fig)["base_only"] == pytest.approx([1.0, 1.0, 1.0])


def test_cli_plot_lines_with_where_and_a_mapping_baseline(cli, tmp_path, tiny_store):
    r = cli(
        "plot", "lines", "--store", tiny_store, "--sweep", "tiny", "--y", "walks_pki", "--x", ENTRIES,
        "--hue", KIND, "--baseline", f"{ENTRIES}=256", "--where", f"{KIND}=base_only", "--where", f"{KIND}=thp",
        "--logx", "-o", "lines.pdf",
    )  # fmt: skip
    assert r.code == 0, r.err
    assert (tmp_path / "lines.pdf").read_bytes().startswith(b"%PDF")


def test_cli_plot_prints_the_figure_notes(cli, tiny_store):
    # THP leaves the 4 KiB L2 TLB entries unused: no evictions, so no geomean for thp.
    r = cli("plot", "bars", "--store", tiny_store, "--y", "mmu.l2_tlb.evictions", "--x", ENTRIES, "--hue", KIND,
            "-o", "n.svg")  # fmt: skip
    assert r.code == 0, r.err
    assert "tessera: note: geomean leaves out thp: 256 (0), 512 (0)" in r.err


def test_cli_plot_errors(cli, tmp_path, tiny_store):
    base = ["plot", "bars", "--store", tiny_store, "--sweep", "tiny", "--y", "walks_pki", "--x", ENTRIES]
    r = cli(*base, "--hue", "physmem.pagesize", "-o", "x.png")
    assert r.code == 2 and "did you mean axis.physmem.page_size" in r.err
    r = cli(*base[:-2], "--hue", KIND, "-o", "x.png")  # no --x: workload, which a synthetic sweep lacks
    assert r.code == 2
    assert "x column workload has no values in these runs; choose another x (axis columns: axis.mmu" in r.err
    r = cli(*base, "--hue", KIND, "--baseline", "eager", "-o", "x.png")
    assert r.code == 2 and "baseline physmem.page_size = eager is not in these runs" in r.err
    r = cli(*base, "-o", "x.jpeg")
    assert r.code == 2 and "use .png, .svg or .pdf" in r.err
    r = cli(*base, "-o", "missing/x.png")
    assert r.code == 2 and "does not exist" in r.err
    r = cli(*base, "--logx", "-o", "x.png")
    assert r.code == 2 and "--logx applies only to plot lines" in r.err
    r = cli(*base, "--where", "seed", "-o", "x.png")
    assert r.code == 2 and "expected COL=VALUE" in r.err
    r = cli("plot", "lines", "--store", tiny_store, "--y", "walks_pki", "-o", "x.png")
    assert r.code == 2 and "plot lines needs --x COL" in r.err
    r = cli("plot", "bars", "--store", tiny_store, "--sweep", "nope", "--y", "walks_pki", "-o", "x.png")
    assert r.code == 2 and "no sweep 'nope'" in r.err
    r = cli("plot", "bars", "--store", tmp_path / "none.sqlite", "--y", "walks_pki", "-o", "x.png")
    assert r.code != 0 and "no results store here" in r.err
    assert not (tmp_path / "none.sqlite").exists()
    assert not list(tmp_path.glob("x.*"))


def test_cli_output_suffixes_are_the_save_formats():
    from tessera import cli_plot

    assert cli_plot.OUTPUT_SUFFIXES == figures.FORMATS
