"""GTSM Monte Carlo: what superpages keep of memory with retired pages.

>>> import tessera
>>> r = tessera.gtsm_montecarlo(["fig14"], slices=10_000)          # doctest: +SKIP
>>> tessera.gtsm.tables(r)["fig14"]                                # doctest: +SKIP

The sampling runs in the Rust core (``tessera_core::gtsm::montecarlo``);
this module turns its report into tables (pandas), figures (matplotlib) and
files. See docs/gtsm.md for what each figure shows and our values beside
the paper's ("Supporting superpages in non-contiguous physical memory",
Du et al., HPCA 2015).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Optional, Union

from tessera import _core

__all__ = ["PARTS", "montecarlo", "tables", "figures", "write", "markdown"]

#: The figures and table the Monte Carlo estimates, in report order.
PARTS = ("fig3", "fig7", "table2", "fig14")

#: Check values derived from the paper's closed forms in the notes the
#: project keeps beside the paper (retired fraction -> superpage share),
#: for the docs and the report's comparison.
DERIVED_FIG14 = {
    "GT-PDE-4MB": (0.565, 0.500, 0.500, 0.491, 0.301, 0.008),
    "GT-PDE-2MB": (0.680, 0.504, 0.500, 0.500, 0.500, 0.479),
    "GT-PDE-1MB": (0.797, 0.537, 0.503, 0.500, 0.500, 0.500),
    "P-GT-PDE-2MB": (0.795, 0.535, 0.501, 0.500, 0.500, 0.500),
}
DERIVED_FIG14_X = (0.001, 0.005, 0.01, 0.014, 0.02, 0.03)


def montecarlo(
    figures: Union[str, Iterable[str]] = PARTS,
    *,
    seed: int = 1,
    slices: Optional[int] = None,
    threads: Optional[int] = None,
    fig3: Optional[Sequence[float]] = None,
    fig7: Optional[Sequence[float]] = None,
    fig14: Optional[Sequence[float]] = None,
) -> dict[str, Any]:
    """Estimate the figures named in ``figures`` (any of :data:`PARTS`).

    ``slices`` is the sample per point, counted in the largest unit of each
    figure (default 2^20); ``threads`` defaults to every core (the numbers do
    not depend on it); ``fig3``/``fig7``/``fig14`` replace the x values
    (retired fractions in [0, 1), usable fractions in [0, 1]).

    Returns ``{"seed", "fig3", "fig7", "table2", "fig14"}`` (the parts
    asked for): each figure is ``{"id", "title", "x_label", "y_label",
    "unit", "units_per_point", "series": [{"name", "points": [{"x", "value",
    "lo", "hi", "n", "exact"}]}]}`` with ``lo``/``hi`` its 95 % confidence
    interval and ``exact`` the closed form (``None`` where there is none).
    Bad names or fractions raise :class:`tessera.ConfigError`.
    """
    from tessera.api import check_seed

    parts = [figures] if isinstance(figures, str) else list(figures)
    if slices is not None and (isinstance(slices, bool) or not isinstance(slices, int) or slices < 1):
        raise ValueError(f"slices must be a whole number of at least 1, not {slices!r}")
    if threads is not None and (isinstance(threads, bool) or not isinstance(threads, int) or threads < 1):
        raise ValueError(f"threads must be a whole number of at least 1, not {threads!r}")
    xs = [None if v is None else [float(x) for x in v] for v in (fig3, fig7, fig14)]
    return _core.gtsm_montecarlo(parts, check_seed(seed), slices, threads, *xs)


def _pct(x: float) -> str:
    return f"{100 * x:.2f} %"


def tables(report: dict[str, Any]) -> dict[str, Any]:
    """One ``pandas.DataFrame`` per part of ``report``: a row per x value
    and series, with the estimate, its 95 % interval, the closed form and
    the sample size."""
    import pandas as pd

    out: dict[str, Any] = {}
    for part in ("fig3", "fig7", "fig14"):
        fig = report.get(part)
        if fig is None:
            continue
        rows = []
        for s in fig["series"]:
            for p in s["points"]:
                rows.append({
                    "x": p["x"], "series": s["name"], "estimate": p["value"], "ci95_lo": p["lo"],
                    "ci95_hi": p["hi"], "closed_form": p["exact"], "n": p["n"],
                })  # fmt: skip
        out[part] = pd.DataFrame(rows)
    t2 = report.get("table2")
    if t2 is not None:
        rows = []
        for r in t2["rows"]:
            c, s = r["clean_at_exact"], r["superpage_at_paper_fig14"]
            rows.append({
                "mode": r["mode"], "b_block_kib": r["block_kib"], "threshold_closed_form": r["exact"],
                "threshold_paper": r["paper"], "clean_share_at_threshold": c["value"],
                "clean_ci95_lo": c["lo"], "clean_ci95_hi": c["hi"], "n_blocks": c["n"],
                "paper_fig14_threshold": r["paper_fig14"], "superpage_share_there": s["value"],
                "superpage_ci95_lo": s["lo"], "superpage_ci95_hi": s["hi"], "superpage_closed_form": s["exact"],
            })  # fmt: skip
        out["table2"] = pd.DataFrame(rows)
    return out


def figures(report: dict[str, Any]) -> dict[str, Any]:
    """One ``matplotlib.figure.Figure`` per part of ``report``."""
    from tessera.figures import montecarlo_lines, thresholds

    out = {part: montecarlo_lines(report[part]) for part in ("fig3", "fig7", "fig14") if report.get(part)}
    if report.get("table2"):
        out["table2"] = thresholds(report["table2"])
    return out


def markdown(report: dict[str, Any]) -> str:
    """The report's tables as Markdown (estimates with their 95 % intervals
    beside the closed forms)."""
    lines: list[str] = [f"GTSM Monte Carlo, seed {report['seed']}.", ""]
    for part in ("fig3", "fig7", "fig14"):
        fig = report.get(part)
        if fig is None:
            continue
        lines += [f"## {fig['title']}", "", f"{fig['units_per_point']:,} {fig['unit']} per point; "
                  "estimate [95 % interval] (closed form).", ""]  # fmt: skip
        names = [s["name"] for s in fig["series"]]
        lines.append("| " + fig["x_label"] + " (%) | " + " | ".join(names) + " |")
        lines.append("|---:|" + "---:|" * len(names))
        for i, p0 in enumerate(fig["series"][0]["points"]):
            cells = []
            for s in fig["series"]:
                p = s["points"][i]
                exact = "" if p["exact"] is None else f" ({p['exact']:.4f})"
                cells.append(f"{p['value']:.4f} [{p['lo']:.4f}, {p['hi']:.4f}]{exact}")
            lines.append(f"| {_pct(p0['x'])} | " + " | ".join(cells) + " |")
        lines.append("")
    t2 = report.get("table2")
    if t2 is not None:
        lines += ["## Table 2: retired-page thresholds", "",
                  f"{t2['units_per_point']:,} 128 KB blocks (more of the smaller ones) per point.", "",
                  "| mode | B-block | threshold (closed form) | paper | clean B-blocks there [95 %] | "
                  "paper's Fig. 14 threshold | superpage share there [95 %] (closed form) |",
                  "|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
        for r in t2["rows"]:
            c, s = r["clean_at_exact"], r["superpage_at_paper_fig14"]
            lines.append(
                f"| {r['mode']} | {r['block_kib']} KiB | {_pct(r['exact'])} | {_pct(r['paper'])} | "
                f"{c['value']:.4f} [{c['lo']:.4f}, {c['hi']:.4f}] | {_pct(r['paper_fig14'])} | "
                f"{s['value']:.4f} [{s['lo']:.4f}, {s['hi']:.4f}] ({s['exact']:.4f}) |"
            )
        lines.append("")
    return "\n".join(lines)


def write(report: dict[str, Any], out_dir: Union[str, "os.PathLike[str]"]) -> list[Path]:
    """Write ``report.json``, ``montecarlo.md``, a CSV per table and a PNG
    and an SVG per figure into ``out_dir`` (made if missing); returns the
    files written. Every file is written atomically, and the same report
    gives byte-identical files."""
    from tessera.figures import save
    from tessera.result import write_atomic

    d = Path(out_dir)
    d.mkdir(parents=True, exist_ok=True)
    written = []
    path = d / "report.json"
    write_atomic(path, json.dumps(report, sort_keys=True, indent=2) + "\n")
    written.append(path)
    path = d / "montecarlo.md"
    write_atomic(path, markdown(report) + "\n")
    written.append(path)
    for name, df in tables(report).items():
        path = d / f"{name}.csv"
        write_atomic(path, df.to_csv(index=False, float_format="%.6g", lineterminator="\n"))
        written.append(path)
    for name, fig in figures(report).items():
        written += save(fig, d / name, formats=("png", "svg"))
    return written
