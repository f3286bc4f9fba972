"""Run the Mosaic Pages reproduction and write its report.

:func:`reproduce` runs the sweeps of :mod:`tessera.report.mosaic_pages` in
order (Fig. 6; Table 3 at the prototype's pool; the probe, whose footprints size the memories of the pressure
sweep; the pressure sweep; beyond the paper) through :func:`tessera.sweep`
into one results store, then writes ``report.md``, ``report.html``,
``figures/``, ``data/*.csv`` and ``sweeps/*.toml`` into the output directory.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from tessera.report import mosaic_pages as mp

__all__ = ["reproduce", "Reproduction", "write_report", "begin"]


@dataclasses.dataclass
class Reproduction:
    """What :func:`reproduce` made: the report's files, the runs of each
    sweep, the tables, and how long it took (seconds)."""

    out: Path
    report_md: Path
    report_html: Path
    figures: list[Path]
    runs: dict[str, pd.DataFrame]
    tables: dict[str, pd.DataFrame]
    timing: dict[str, float]


def _workload_table(parts: Mapping[str, pd.DataFrame], scale: str) -> pd.DataFrame:
    """Per part and workload: the parameters, touched MiB and accesses of its seed-0 run."""
    rows = []
    for part, df in parts.items():
        params = mp.params_for("pressure" if part in ("pressure", "probe") else part, scale)
        d = df[df["seed"] == 0] if "seed" in df else df
        for w in dict.fromkeys(d["workload"]):
            r = d[d["workload"] == w].iloc[0]
            touched = (float(r["pagetable.mappings_4k"]) * 4096 + float(r["pagetable.mappings_2m"]) * (2 << 20)) / (1 << 20)
            rows.append({"part": part, "workload": w, "params": " ".join(f"{k}={v}" for k, v in params[w].items()),
                         "touched_mib": touched, "accesses": float(r["core.records"])})
    return pd.DataFrame(rows).set_index(["part", "workload"])


def tables(fig6: pd.DataFrame, pool: pd.DataFrame, pressure: pd.DataFrame, beyond: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Every table of the report from the sweeps' DataFrames (``pressure``
    already labelled by :func:`mosaic_pages.label_pressure`; ``beyond`` the
    beyond probe's and the beyond sweep's runs together)."""
    misses = mp.fig6_misses(fig6)
    equal, compared = mp.horizon_is_lru(pressure)
    return {
        "horizon_check": pd.DataFrame({"equal": [equal], "compared": [compared]}),
        "fig6_misses": misses,
        "fig6_reduction": mp.fig6_reduction(misses),
        "fig6_claims": mp.fig6_claims(misses),
        "table3_pool": mp.table3_pool(pool),
        "table3": mp.table3(pressure),
        "table4": mp.table4(pressure),
        "beyond": mp.beyond_table(beyond),
    }


def _located(spec: Mapping[str, Any], sweeps_dir: Path) -> dict[str, Any]:
    """``spec`` with a relative machine file resolved against ``sweeps_dir``,
    where the written sweep file names it relative to itself (so the report
    directory can be moved and its sweep files still run)."""
    out = dict(spec)
    m = out.get("machine")
    if isinstance(m, str) and m.endswith(".toml") and not Path(m).is_absolute():
        out["machine"] = str((sweeps_dir / m).resolve())
    return out


def _shown(path: str, out: Path) -> str:
    """``path`` relative to the report directory when it lies inside it."""
    try:
        return str(Path(path).resolve().relative_to(out.resolve()))
    except ValueError:
        return path


def _core_changed(a: Optional[str], b: Optional[str]) -> Optional[bool]:
    """Whether the simulator's sources (``crates/``) differ between commits
    ``a`` and ``b``; None when that cannot be told (no git, unknown commit)."""
    import subprocess

    if not a or not b:
        return None
    if a == b:
        return False
    here = Path(__file__).resolve().parent
    try:
        r = subprocess.run(["git", "-C", str(here), "diff", "--quiet", a, b, "--", ":/crates"],
                           capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return {0: False, 1: True}.get(r.returncode)


def _run(spec: Mapping[str, Any], store: str, executor: Any, jobs: Optional[int], force: bool, progress: bool) -> pd.DataFrame:
    from tessera.report.mmu_analysis import run_sweep

    return run_sweep(spec, store=store, executor=executor, jobs=jobs, force=force, progress=progress)



def write_report(
    out: Path,
    tabs: Mapping[str, pd.DataFrame],
    runs: Mapping[str, pd.DataFrame],
    reports: list,
    timing: dict[str, float],
    *,
    t_start: float,
    t_tables: float,
    command: str,
    commit: Optional[str],
    store: str,
    scale: str,
    figures: Mapping[str, Any],
    build: Any,
    title: str,
) -> tuple[Path, Path, list[Path]]:
    """Write a reproduction's files into ``out``: every table and every
    sweep's runs as CSV, the figures (``figures``: name → (draw, table key)),
    ``timing.json`` (kept from the invocation that simulated, so a rerun
    that only redraws states the time of the real run) and the report
    (``build(tabs, ctx)`` blocks) as ``report.md`` and ``report.html``.
    ``timing`` gets the run counts and totals. Returns the two report paths
    and the figures."""
    from tessera import __version__
    from tessera.report.render import to_html, to_markdown
    from tessera.result import write_atomic

    data = out / "data"
    data.mkdir(exist_ok=True)
    for key, t in tabs.items():
        write_atomic(data / f"{key}.csv", t.to_csv())
    for part, df in runs.items():
        write_atomic(data / f"runs-{part}.csv", df.to_csv(index=False))
    drawn: list[Path] = []
    for draw, key in figures.values():
        drawn += draw(tabs[key], out / "figures")

    all_runs = pd.concat(list(runs.values()), ignore_index=True)
    timing.update({
        "runs": float(sum(len(df) for df in runs.values())),
        "computed": float(sum(r.get("computed", 0) for r in reports)),
        "already_stored": float(sum(r.get("already_stored", 0) for r in reports)),
        "workers": float(max((r.get("workers", 0) or 0) for r in reports)),
        "sum_wall_s": float(all_runs["wall_s"].sum()),
        "report_s": time.perf_counter() - t_tables,
    })
    timing["total_s"] = time.perf_counter() - t_start
    # The run time the report states is that of the invocation that ran the
    # simulations: a rerun that only redraws from the store keeps it.
    measured = data / "timing.json"
    redrawn = not (timing["computed"] > 0 or not measured.exists())
    if not redrawn:
        first = {"command": command, "commit": commit, **timing}
        write_atomic(measured, json.dumps(first, indent=2, sort_keys=True) + "\n")
    else:
        first = json.loads(measured.read_text(encoding="utf-8"))
    from tessera.report.mmu_report import model_statement

    ctx = {"scale": scale, "command": command, "store": _shown(store, out), "version": __version__, "commit": commit,
           "timing": timing, "measured": first, "redrawn": redrawn, "model_statement": model_statement(all_runs),
           "core_changed": _core_changed(first.get("commit"), commit)}
    blocks = build(tabs, ctx)
    md, html = out / "report.md", out / "report.html"
    write_atomic(md, to_markdown(blocks))
    write_atomic(html, to_html(blocks, title))
    return md, html, drawn

def begin(out: Any, store: Optional[str], command: Optional[str], study: str,
          scale: str) -> tuple[Path, str, str, Optional[str]]:
    """A reproduction's start: its directory (with ``sweeps/``), its store
    (default ``<out>/store.sqlite``), the command it states, and the commit
    that simulates (taken now: the checkout may move on during a long run)."""
    from tessera.report.mmu_analysis import _commit

    commit = _commit()
    out = Path(out)
    (out / "sweeps").mkdir(parents=True, exist_ok=True)
    store = str(store) if store is not None else str(out / "store.sqlite")
    if command is None:
        command = f"python -c 'import tessera; tessera.reproduce(\"{study}\", out=\"{out}\", scale=\"{scale}\")'"
    return out, store, command, commit


def run_parts(specs: Mapping[str, Mapping[str, Any]], out: Path, store: str, command: str, label: str, scale: str,
              executor: Any, jobs: Optional[int], force: bool,
              progress: bool) -> tuple[dict[str, pd.DataFrame], list[Any], dict[str, float]]:
    """Run the sweeps ``specs`` (part name → sweep spec), ``alone`` first if
    there is one, writing each as ``<out>/sweeps/<part>.toml`` headed by
    ``label``, the part, ``scale`` and the command; the runs by part, the sweeps' reports and
    each part's wall time (``<part>_sweep_s``)."""
    from tessera.report.mmu_analysis import run_sweep, sweep_toml
    from tessera.result import write_atomic

    timing: dict[str, float] = {}
    runs: dict[str, pd.DataFrame] = {}
    reports = []
    order = (["alone"] if "alone" in specs else []) + [p for p in specs if p != "alone"]
    for part in order:
        spec = specs[part]
        write_atomic(out / "sweeps" / f"{part}.toml", sweep_toml(spec, f"{label}, {part} ({scale} scale), written by:\n  {command}"))
        t0 = time.perf_counter()
        df = run_sweep(spec, store=store, executor=executor, jobs=jobs, force=force, progress=progress)
        timing[f"{part}_sweep_s"] = time.perf_counter() - t0
        reports.append(df.attrs.get("sweep", {}))
        runs[part] = df
    return runs, reports, timing


def reproduce_sweeps(out: Any, scale: str, store: Optional[str], executor: Any, jobs: Optional[int], force: bool,
                     progress: bool, command: Optional[str], *, study: str, specs: Mapping[str, Mapping[str, Any]],
                     label: str, title: str, report: Any,
                     make_tables: Any) -> Reproduction:
    """A reproduction made of sweeps only: run ``specs`` (:func:`run_parts`),
    make the tables with ``make_tables(runs)`` and write the report with
    ``report.FIGURES`` and ``report.build`` under ``title``."""
    t_start = time.perf_counter()
    out, store, command, commit = begin(out, store, command, study, scale)
    runs, reports, timing = run_parts(specs, out, store, command, label, scale, executor, jobs, force, progress)
    t1 = time.perf_counter()
    tabs = make_tables(runs)
    md, html, figures = write_report(out, tabs, runs, reports, timing, t_start=t_start, t_tables=t1, command=command,
                                     commit=commit, store=store, scale=scale, figures=report.FIGURES,
                                     build=report.build, title=title)
    return Reproduction(out, md, html, figures, runs, tabs, timing)


def reproduce(
    out: Any,
    *,
    scale: str = "full",
    store: Optional[str] = None,
    executor: Any = None,
    jobs: Optional[int] = None,
    force: bool = False,
    progress: bool = False,
    command: Optional[str] = None,
) -> Reproduction:
    """Run every sweep at ``scale`` and write the report into ``out``. Results
    go to ``store`` (default ``<out>/store.sqlite``); runs already there are
    reused unless ``force``."""
    from tessera.report import mosaic_figures, mosaic_report
    from tessera.report.mmu_analysis import sweep_toml
    from tessera.result import write_atomic

    mp._check_scale(scale)
    t_start = time.perf_counter()
    out, store, command, commit = begin(out, store, command, mp.STUDY, scale)
    machine = out / "sweeps" / mp.BEYOND_MACHINE_FILE
    write_atomic(machine, mp.BEYOND_MACHINE)

    timing: dict[str, float] = {}
    runs: dict[str, pd.DataFrame] = {}
    reports = []

    def sweep(part: str, spec: Mapping[str, Any]) -> pd.DataFrame:
        write_atomic(out / "sweeps" / f"{part}.toml",
                     sweep_toml(spec, f"Mosaic Pages reproduction, {part} ({scale} scale), written by:\n  {command}"))
        t0 = time.perf_counter()
        df = _run(_located(spec, out / "sweeps"), store, executor, jobs, force, progress)
        timing[f"{part}_sweep_s"] = time.perf_counter() - t0
        reports.append(df.attrs.get("sweep", {}))
        runs[part] = df
        return df

    fig6 = sweep("fig6", mp.fig6_spec(scale))
    pool = sweep("pool", mp.pool_spec(scale))
    probe = sweep("probe", mp.probe_spec(scale))
    pressure = mp.label_pressure(sweep("pressure", mp.pressure_spec(scale, probe)), probe, scale)
    runs["pressure"] = pressure
    beyond_probe = sweep("beyond-probe", mp.beyond_probe_spec(scale, mp.BEYOND_MACHINE_FILE))
    beyond = sweep("beyond", mp.beyond_spec(scale, mp.BEYOND_MACHINE_FILE, beyond_probe))
    beyond = pd.concat([beyond_probe, beyond], ignore_index=True)

    t1 = time.perf_counter()
    tabs = tables(fig6, pool, pressure, beyond)
    tabs["workloads"] = _workload_table({"fig6": fig6, "pressure": probe, "beyond": beyond_probe}, scale)
    md, html, figures = write_report(out, tabs, runs, reports, timing, t_start=t_start, t_tables=t1, command=command,
                                     commit=commit, store=store, scale=scale, figures=mosaic_figures.FIGURES,
                                     build=mosaic_report.build, title="Reproduction: Mosaic Pages")
    return Reproduction(out, md, html, figures, runs, tabs, timing)
