"""The GTSM reproduction's report: our tables next to the paper's.

:func:`build` turns the analysis tables of :mod:`tessera.report.gtsm_study`
into report blocks (:mod:`tessera.report.render`). Every number printed comes
from those tables, and every sentence that states one of our results is
computed from them (:mod:`tessera.report.gtsm_prose`); the fixed prose
describes the models, the paper and the differences between them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import pandas as pd

from tessera.report import gtsm_prose as prose
from tessera.report import gtsm_study as gs
from tessera.report import paper_gtsm as paper
from tessera.report.mmu_report import fmt
from tessera.report.mosaic_report import _minutes, reproducing
from tessera.report.render import Block, Bullets, Code, Figure, Heading, Para, Table

__all__ = ["build"]


def _label(d: str) -> str:
    return gs.DESIGN_LABEL.get(d, {"coalesce8": "4 KiB, 8× coalescing L2 TLB",
                                   "coalesce32": "4 KiB, 32× coalescing L2 TLB",
                                   f"gt_pde_4m_gt{gs.GT_ENTRY_GROUP}":
                                       f"GT-PDE-4MB, GT-aware {gs.GT_ENTRY_GROUP}× L2 TLB"}.get(d, d))


def _ci(mean: float, half: float, digits: int = 1) -> str:
    if half is None or (isinstance(half, float) and math.isnan(half)):
        return fmt(mean, digits)
    return f"{fmt(mean, digits)} ± {fmt(half, digits)}"


def _seeds(t: Mapping[str, pd.DataFrame]) -> str:
    ipc = t.get("fig13_ipc")
    if ipc is None or "seeds" not in ipc or not len(ipc):
        return "the seeds"
    n = sorted(set(int(x) for x in ipc["seeds"]))
    return " or ".join(str(x) for x in n) + (" seed" if n == [1] else " seeds")


# ------------------------------------------------------------------ sections


def _intro(t: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    timing = ctx.get("measured", ctx["timing"])
    return [
        Heading(1, "Reproduction: GTSM, superpages in non-contiguous physical memory"),
        Para(f"Paper: {paper.CITATION}. This report re-runs its Figs. 11–13 (page-table references by serving level, "
             "TLB miss penalty and IPC of 4 KB pages, GT-PDE-1/2/4MB, P-GT-PDE-2/4MB and ideal 2 MB superpages on nine "
             "workloads), Fig. 15 (GUPS's table size), Fig. 16 (GT-PDE translation latency), Fig. 17 (PDE-cache size) "
             "and Fig. 18 (L2 TLB coalescing) on Tessera's models of the GT-PDE page-table format, the `gtsm` "
             "page-size policy and its slice allocator, and shows THP's superpages collapsing as pages are retired "
             "while GTSM keeps its own. Beyond the paper it runs clustered retired pages, a GT-aware L2 TLB entry, "
             "and GTSM against THP with direct compaction and against Mosaic Pages on the same retired-page maps. "
             "Sentences that compare are computed from the tables; a mean over seeds "
             "carries its 95 % t-interval, and a difference whose interval contains 0 is called within noise. "
             f"Scale: **{ctx['scale']}** (see *Scale*: our footprints are tens to hundreds of MiB, the paper's "
             "0.7–4 GB; every conclusion here is about that scale). "
             f"Run time: **{_minutes(timing['total_s'])}** in all on {int(timing.get('workers', 0) or 0)} "
             f"worker(s) ({int(timing['runs'])} simulations, {int(timing['computed'])} simulated, "
             f"{int(timing['already_stored'])} reused from the store)."),
    ]


def _machine(t: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    ipc = t["fig13_ipc"]["ipc"] if "fig13_ipc" in t and len(t["fig13_ipc"]) else pd.Series(dtype=float)
    ipc_range = f" ({fmt(ipc.min(), 3)}–{fmt(ipc.max(), 3)} in the runs of Fig. 13)" if len(ipc) else ""
    rows = [[_label(d), "`" + "`, `".join(f"{k} = {_toml(v)}" for k, v in o.items()) + "`"]
            for d, o in gs.DESIGNS.items()]
    return [
        Heading(2, "Machine, timing model and designs"),
        Para(f"The `{gs.MACHINE}` preset is the paper's PTLsim machine (Table 4): 64-entry L1 DTLB (4 KiB) and "
             "32-entry L1 DTLB (2 MiB), a 512-entry 4-way unified L2 TLB at +7 cycles, 32-entry PDE and PDPTE caches "
             "and a 2-entry PML4E cache probed in parallel with the L2 TLB, 5 cycles per walker step plus the "
             "hierarchy's latency, page-table references entering the caches at L2 (not L1), L2 256 KiB at 8 "
             "cycles, LLC 2 MiB at 20 cycles, DRAM 150 cycles (50 ns at 3 GHz). One change: "
             f"`physmem.capacity = \"{gs.CAPACITY}\"` instead of 128 GiB, so memory builds and retires pages faster; "
             "it holds every footprint here, and with more free slices than regions to map the capacity does not "
             "limit how many superpages GTSM finds."),
        Para("**Timing.** IPC is Tessera's CPU interval model (`core.ipc` = `core.instructions` ÷ `core.cycles`): "
             "a base CPI of 1 plus every stall (TLB levels, walks, data misses), added one after another with **no "
             "overlap**. The paper used PTLsim's out-of-order core, which overlaps a walk with independent work and "
             "with other misses. Adding every stall makes translation a larger share of the cycles and so "
             "inflates the gain of removing walks (the scale-out MMU reproduction shows it against measured "
             "hardware: docs/reproduce-mmu-analysis.md, 'Timing model'); it also keeps every IPC low" + ipc_range
             + ". The "
             "ratios below are therefore upper-leaning estimates of the paper's."),
        Para("**Designs** (overrides on the preset; each differs from 4 KiB in the page-table format and the "
             "page-size policy only). The `gtsm` policy maps a GT superpage at a region's first touch when the "
             "slice allocator has a valid slice (at least 33 usable B-blocks of 64, the paper's 'more than half'), "
             "else 4 KiB pages; the GT-PDE costs 3 cycles of decode beyond its reference (§3.5). Ideal 2 MiB is THP "
             "with no retired pages: every region gets a 2 MiB page."),
        Table(["design", "overrides"], rows, numeric=False),
    ]


def _toml(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {_toml(x)}" for k, x in v.items()) + " }"
    if isinstance(v, str):
        return f'"{v}"'
    return str(v)


def _scale(t: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    wl = t["workloads"]
    rows = []
    for w, r in wl.iterrows():
        p = paper.TABLE5.get(paper.WORKLOAD_NAMES.get(w, w))
        rows.append([w, r["params"], fmt(r.get("touched_mib"), 0), fmt(r.get("instructions_m"), 1),
                     fmt(r.get("tlb_mpki_4k"), 1), fmt(r.get("tlb_mpki_thp"), 1),
                     f"{p[3]:g}" if p else "—", f"{p[1]:g} / {p[2]:g}" if p else "—"])
    warm = gs.warmup_for(ctx["scale"])
    ins_m = wl["instructions_m"] if "instructions_m" in wl else pd.Series(dtype=float)
    ins = f"{fmt(ins_m.min(), 1)}–{fmt(ins_m.max(), 1)}" if len(ins_m) else "—"
    return [
        Heading(2, "Scale"),
        Table(["workload", "parameters", "touched MiB (4 KiB)", "M instructions", "L2 TLB MPKI 4 KiB",
               "L2 TLB MPKI 2 MiB", "paper touched GB", "paper MPKI 4 KB / 2 MB"], rows,
              caption="Workloads as run (seed 0, measured phase) beside the paper's Table 5"),
        Para("The paper skipped each program's initialisation and simulated 2 billion instructions over 0.7–4 GB "
             "touched (Table 5), with page tables pre-allocated. Tessera's built-in workloads emit only their "
             f"kernels (no initialisation); the measured phases here are {ins} million instructions over the "
             "footprints above; each run first warms up on about "
             f"{int(100 * gs.WARMUP_SHARE)} % of its 4 KiB run's instructions ("
             + ", ".join(f"{w} {v}" for w, v in warm.items())
             + "), which fills TLBs, caches and page tables and takes the first touches it makes before anything "
             "is counted (a workload that keeps touching new pages, GUPS above all, still faults in the measured "
             "phase). Smaller footprints put more of the page tables in the caches, so fewer page-table "
             "references reach memory than in the paper, and the gains of every superpage design shrink with them."),
    ]


def _fig11(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    t11 = t["fig11_pte_refs"]
    rows = [[w, _label(d)] + [fmt(r[f"{lv}_pct"], 1) for lv in gs.LEVELS] + [fmt(r["refs_per_walk"], 2), r["paper_group"]]
            for (w, d), r in t11.iterrows() if d in ("4k", "gt_pde_4m")]
    return [
        Heading(2, "Fig. 11: page-table references by the level that served them"),
        Para("`walker.refs_l1d`, `_l2`, `_llc`, `_dram` as % of all page-table references of the measured phase "
             "(mean over seeds), for 4 KiB pages (the paper's Fig. 11) and GT-PDE-4MB. Walks enter the hierarchy at "
             "L2, as the paper's, so L1D serves none."),
        Figure("figures/fig11", "Fig. 11 analog: page-table references by serving level; the dotted line marks 90 % (10 % from memory)"),
        Table(["workload", "design", "L1D %", "L2 %", "LLC %", "memory %", "references per walk", "paper's group"],
              rows, caption="Page-table references by serving level"),
        Bullets(prose.fig11_findings(t11)),
    ]


def _fig12(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    t12 = t["fig12_penalty"]
    rows = []
    for (w, d), r in t12.iterrows():
        drop = "—" if d == "4k" else f"{fmt(r['drop'], 1)} [{fmt(r['drop_lo'], 1)}, {fmt(r['drop_hi'], 1)}]"
        rows.append([w, _label(d), _ci(r["penalty"], r["penalty_ci"]), fmt(r["walks_pki"], 2), drop])
    return [
        Heading(2, "Fig. 12: TLB miss penalty"),
        Para("Cycles per walk (`walker.cycles` ÷ `walker.walks`: every reference's latency plus 5 cycles per step "
             "and, for a GT-PDE, 3 cycles of decode), mean ± 95 % t-interval over seeds, and the drop against 4 KiB "
             "pages with the paired interval of the per-seed differences."),
        Figure("figures/fig12", "Fig. 12 analog: cycles per walk, 95 % intervals"),
        Table(["workload", "design", "cycles per walk", "walks / k instr.", "drop vs 4 KiB (cycles)"], rows,
              caption="TLB miss penalty per workload and design"),
        Bullets(prose.fig12_findings(t12)),
    ]


def _fig13(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    ipc, summ, claims = t["fig13_ipc"], t["fig13_summary"], t["fig13_claims"]
    gap = t.get("ideal_gap", pd.DataFrame(columns=["gap_pct", "walk_pct", "tlb_pct", "data_pct", "l2_tlb_mpki",
                                                   "l2_tlb_mpki_ideal"]))
    wls = list(dict.fromkeys(ipc.index.get_level_values(0)))
    designs = [d for d in gs.DESIGNS if d != "4k" and d in set(ipc.index.get_level_values(1))]
    rows = []
    for w in wls:
        row = [w, fmt(ipc.loc[(w, "4k"), "ipc"], 3) if (w, "4k") in ipc.index else "—"]
        for d in designs:
            r = ipc.loc[(w, d)] if (w, d) in ipc.index else None
            row.append(prose.gain_text(r["gain"], r["gain_lo"], r["gain_hi"]) if r is not None else "—")
        rows.append(row)
    srows = [[_label(d), fmt(r["gain_geomean"], 1), fmt(r["of_ideal_mean"], 1), fmt(r["of_ideal_geomean"], 1),
              f"{fmt(r['slow_lo'], 1)} to {fmt(r['slow_hi'], 1)}", f"{fmt(r['fast_lo'], 1)} to {fmt(r['fast_hi'], 1)}"]
             for d, r in summ.iterrows()]
    crow = [[c.paper, c.ours, c.holds if isinstance(c.holds, str) else "—"] for c in claims.itertuples()]
    return [
        Heading(2, "Fig. 13: IPC against 4 KiB pages"),
        Para(f"IPC gain over 4 KiB pages, % (per-seed ratios with the same workload data, mean and 95 % interval "
             f"over {_seeds(t)}; '(noise)' where it contains 0). The paper's bars carry no printed values; §5.2 "
             "states the averages and ranges checked below."),
        Figure("figures/fig13", "Fig. 13 analog: IPC ÷ IPC with 4 KiB pages, 95 % intervals"),
        Table(["workload", "4 KiB IPC"] + [_label(d) for d in designs], rows,
              caption="IPC of 4 KiB pages and the gain of each design over it"),
        Table(["design", "gain, geomean %", "% of ideal, mean", "% of ideal, geomean", "gain on the slow-PT group %",
               "gain on the fast-PT group %"], srows, caption="Summary over workloads"),
        Table(["paper (§5.2)", "ours", "agrees"], crow, caption="The paper's statements about Fig. 13 against our runs"),
        Para("Where GT-PDE-4MB's cycles beyond ideal 2 MiB go (means over seeds): walk cycles, the rest of "
             "translation (L2 TLB probes) and data stalls, as shares of the difference in cycles; the base CPI's "
             "cycles are the same for both."),
        Table(["workload", "cycles beyond ideal %", "walks %", "L2 TLB probes %", "data stalls %",
               "L2 TLB MPKI GT-PDE-4MB", "L2 TLB MPKI ideal"],
              [[w, fmt(r["gap_pct"], 1), prose.num(r["walk_pct"], 0), prose.num(r["tlb_pct"], 0), prose.num(r["data_pct"], 0),
                fmt(r["l2_tlb_mpki"], 2), fmt(r["l2_tlb_mpki_ideal"], 2)] for w, r in gap.iterrows()],
              caption="GT-PDE-4MB against ideal 2 MiB"),
        Bullets(prose.ideal_gap_findings(gap)),
        Para(f"How 'agrees' is decided: a range agrees (**yes**) only if ours lies inside it, **partly** if the two "
             f"overlap, **no** if disjoint; '96.8 %' agrees if our mean is within {gs.ABOUT:g} points; 'alike' if the "
             f"designs' gains differ by at most {gs.SIMILAR:g} points on every workload."),
        Bullets(prose.fig13_findings(ipc, summ)),
    ]


def _fig15(t: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    t15 = t["fig15_size"]
    rows = [[fmt(s, 0), _label(d), fmt(r["ipc"], 4), fmt(r["norm"], 3),
             "—" if d == "4k" else prose.gain_text(r["gain"], r["gain_lo"], r["gain_hi"]), fmt(r["walks_pki"], 2)]
            for (s, d), r in t15.iterrows()]
    sizes = gs.sizes_for(ctx["scale"])
    return [
        Heading(2, "Fig. 15: GUPS's table size"),
        Para(f"GUPS with tables of {', '.join(sizes)} (the paper: 64 MB to 64 GB; larger tables do not fit this "
             f"scale's time), the same updates at every size ({gs._SIZE_UPDATES[ctx['scale']]}), 4 KiB, GT-PDE-4MB, "
             "GT-PDE-1MB and ideal 2 MiB. IPC is normalised to 4 KiB at the smallest table, as the paper's."),
        Figure("figures/fig15", "Fig. 15 analog: GUPS IPC against table size, normalised to 4 KiB at the smallest table"),
        Table(["table MiB", "design", "IPC", "÷ 4 KiB at smallest", "gain over 4 KiB", "walks / k instr."], rows,
              caption="GUPS by table size"),
        Bullets(prose.fig15_findings(t15)),
    ]


def _sens_rows(tab: pd.DataFrame, label: Any) -> list[list[str]]:
    return [[w, label(k), fmt(r["ipc"], 4), prose.gain_text(r["change"], r["change_lo"], r["change_hi"], 2)]
            for (w, k), r in tab.iterrows()]


def _figs16_18(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    t16, t17, t18 = t["fig16_decode"], t["fig17_pde"], t["fig18_coalescing"]
    return [
        Heading(2, "Fig. 16: GT-PDE translation latency"),
        Para("GT-PDE-4MB with `decode_cycles` above the default 3 (the paper: 3 to 6), IPC change against 3 cycles "
             "on the same workload and seed."),
        Figure("figures/fig16", "Fig. 16 analog: % IPC change against 3 decode cycles"),
        Table(["workload", "decode cycles", "IPC", "change vs 3"], _sens_rows(t16, lambda k: str(int(k))),
              caption="GT-PDE-4MB by decode cycles"),
        Bullets(prose.fig16_findings(t16)),
        Heading(2, "Fig. 17: PDE-cache size"),
        Para("GT-PDE-4MB with `mmu.psc.pde.entries` above the paper's 32 (4 ways), IPC change against 32 entries. "
             "A GT-PDE held in the PDE cache ends the walk there, so a larger cache saves the GT-PDE's reference."),
        Figure("figures/fig17", "Fig. 17 analog: % IPC change against a 32-entry PDE cache"),
        Table(["workload", "PDE entries", "IPC", "change vs 32"], _sens_rows(t17, lambda k: str(int(k))),
              caption="GT-PDE-4MB by PDE-cache size"),
        Bullets(prose.fig17_findings(t17)),
        Heading(2, "Fig. 18: TLB coalescing against GT-PDE"),
        Para("4 KiB pages with the 512-entry L2 TLB coalescing 8 or 32 pages per entry "
             "(`mmu.tlb.l2_tlb.organisation = { kind = \"coalescing\", group = 8 | 32, fill_from = \"group\" }`): a "
             "walk fills every present page of its aligned group that is physically contiguous with it, at no "
             "extra cost, the paper's 'no extra CPU cycles' assumption (an upper bound on coalescing); against "
             "GT-PDE-4MB on the same runs. IPC change over plain 4 KiB pages."),
        Figure("figures/fig18", "Fig. 18 analog: % IPC change over 4 KiB pages"),
        Table(["workload", "design", "IPC", "change vs 4 KiB"], _sens_rows(t18, _label), caption="Coalescing and GT-PDE-4MB"),
        Bullets(prose.fig18_findings(t18)),
    ] + _gt_entry(t)


def _gt_entry(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    ge = t.get("gt_entry")
    if ge is None:
        return []
    g = gs.GT_ENTRY
    rows = [[w, fmt(r["ipc"], 4), prose.gain_text(r["change"], r["change_lo"], r["change_hi"], 2),
             fmt(r["walks_pki_plain"], 2), fmt(r["walks_pki"], 2), fmt(r["l2_mpki_plain"], 2), fmt(r["l2_mpki"], 2),
             fmt(r["coalesced_hits_pki"], 2)] for (w, _), r in ge.iterrows()]
    return [
        Heading(3, "Beyond the paper: a GT-aware L2 TLB entry"),
        Para("The paper's TLBs get 4 KiB translations from a GT-PDE. Here the 512-entry L2 TLB of GT-PDE-4MB "
             f"coalesces instead (`mmu.tlb.l2_tlb.organisation = {{ kind = \"coalescing\", group = {g['group']}, "
             "gt_blocks = true }`, `fill_from` left at `\"line\"`): a walk that ends at a GT-PDE fills the entry "
             "with every page of its 128 KiB B-block, decoded from the 16 bytes the walker holds, at no extra "
             "reference (docs/gtsm.md, 'A GT-aware TLB entry'). Against plain GT-PDE-4MB on the same workload and "
             "seed; the two differ in the L2 TLB's organisation only."),
        Table(["workload", "IPC", "change vs GT-PDE-4MB", "walks / k instr. plain", "walks / k instr. GT-aware",
               "L2 TLB MPKI plain", "L2 TLB MPKI GT-aware", "coalesced hits / k instr."], rows,
              caption="GT-PDE-4MB with a GT-aware L2 TLB against plain GT-PDE-4MB"),
        Bullets(prose.gt_entry_findings(ge)),
    ]


def _retired(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    rt = t["retired"]
    fr = sorted(set(float(f) for f in rt.index.get_level_values(2))) if len(rt) else []
    fracs = ", ".join(f"{100 * f:g}" for f in fr) + " %" if fr else "several fractions"
    rows = [[w, gs.RETIRED_LABEL.get(d, d), f"{100 * f:g}", fmt(r["touched_mib"], 0), fmt(r["clean_2m_mib"], 0),
             fmt(r["superpage_pct"], 1), fmt(r["paper_capacity_pct"], 1),
             "—" if d == "4k" else prose.gain_text(r["gain"], r["gain_lo"], r["gain_hi"]), fmt(r["walks_pki"], 2)]
            for (w, d, f), r in rt.iterrows()]
    return [
        Heading(2, "Retired pages: THP collapses, GTSM keeps its superpages"),
        Para("Uniformly retired 4 KiB frames (`physmem.retired = { kind = \"uniform\", fraction = f }`, the paper's "
             "model; the map is drawn from the run's seed) at " + fracs + ". Superpage share = bytes mapped by "
             "superpages at the end of the run (GT-PDE entries × the bytes each maps, or 2 MiB leaves) ÷ bytes mapped. THP needs a whole clean 2 MiB "
             "block (at 0.5 % retired 7.7 % of blocks are, Fig. 3); a GT superpage needs a slice with more than half "
             "of its B-blocks clean. The paper's Fig. 14 column is the share of memory *capacity* usable as "
             "superpages (a clean slice 100 %, another valid one 50 %); ours is the share of the *footprint*, which "
             "reaches 100 % whenever memory has more valid slices than the footprint needs, as here. IPC gain over "
             "4 KiB pages at the same fraction and seed."),
        Figure("figures/retired", "Superpage share of the touched bytes against the retired fraction; the paper's Fig. 14 capacity share dashed"),
        Table(["workload", "design", "retired %", "touched MiB", "MiB in clean 2 MiB blocks", "superpage % of touched",
               "paper capacity % (Figs. 3, 14)",
               "IPC gain over 4 KiB", "walks / k instr."], rows, caption="Designs by retired fraction"),
        Bullets(prose.retired_findings(rt)),
    ]


def _beyond(t: Mapping[str, pd.DataFrame]) -> list[Block]:
    bt = t["beyond"]
    rows = [[w, gs.RETIRED_LABEL.get(d, d), m, fmt(r["clean_2m_mib"], 0), fmt(r["superpage_pct"], 1),
             "—" if d == "4k" else prose.gain_text(r["gain"], r["gain_lo"], r["gain_hi"]), fmt(r["walks_pki"], 2)]
            for (w, d, m), r in bt.iterrows()]
    c = gs.BEYOND_CLUSTER
    return [
        Heading(2, "Beyond the paper: clustered retired pages"),
        Para("The paper retires pages uniformly. DRAM faults come in groups (rows, columns, banks), so the frames "
             f"an OS retires cluster. Here {100 * gs.BEYOND_FRACTION:g} % of frames are retired either uniformly or in "
             f"faults of {c['frames_per_fault']} adjacent frames (`kind = \"clustered\"`, the same share of frames): "
             "clustering leaves more whole clean 2 MiB blocks for THP and more clean B-blocks for GTSM."),
        Table(["workload", "design", "retired model", "MiB in clean 2 MiB blocks", "superpage % of touched",
               "IPC gain over 4 KiB",
               "walks / k instr."], rows, caption=f"Uniform against clustered retired pages at {100 * gs.BEYOND_FRACTION:g} %"),
        Bullets(prose.beyond_findings(bt)),
    ]


def _versus(t: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    vt, summ, pairs = t.get("versus"), t.get("versus_summary"), t.get("versus_pairs")
    if vt is None:
        return []
    fracs = gs.versus_fractions(ctx["scale"])
    rows = []
    for (w, f, d), r in vt.iterrows():
        comp = "—"
        if d == "mosaic" and not math.isnan(float(r.get("pool_load_pct", math.nan))):
            comp = f"pool load {fmt(r['pool_load_pct'], 1)} %"
        if d == "thp_compact":
            comp = (f"{fmt(r['compactions'], 0)} / {fmt(r['pins_migrated'], 0)} / "
                    f"{fmt(r['compaction_cycles_pct'], 2)} %")
        gain = "—" if d == "4k" else (f"{'+' if r['gain'] >= 0 else ''}{fmt(r['gain'], 1)} % "
                                      f"[{fmt(r['gain_min'], 1)}, {fmt(r['gain_max'], 1)}]")
        rows.append([w, f"{100 * f:g}", gs.RIVAL_LABEL.get(d, d), gain, fmt(r["superpage_pct"], 1),
                     fmt(r["walks_pki"], 2), "—" if d == "4k" else fmt(r["translation_delta_pct"], 1),
                     "—" if d == "4k" else fmt(r["data_delta_pct"], 1), fmt(r["llc_mpki"], 2), comp])
    srows = [[f"{100 * f:g}", gs.RIVAL_LABEL.get(d, d), fmt(r["gain_geomean"], 1),
              f"{fmt(r['gain_lo'], 1)} to {fmt(r['gain_hi'], 1)}", fmt(r["superpage_pct"], 1)]
             for (f, d), r in summ.iterrows() if d != "4k"]
    prows = [[f"{100 * f:g}", gs.RIVAL_LABEL.get(a, a), gs.RIVAL_LABEL.get(b, b), str(int(r["above"])),
              str(int(r["below"])), f"{int(r['noise'])} ({int(r['identical'])} identical)", fmt(r["mean_diff"], 1)]
             for (f, a, b), r in pairs.iterrows()]
    m = gs.RIVALS["mosaic"]
    c = gs.COMPACTION
    return [
        Heading(2, "Beyond the paper: GTSM against THP with compaction and Mosaic Pages"),
        Para("The paper argues (§2) that compaction cannot rebuild superpages over retired frames and does not "
             "measure a rival that places pages without contiguity. This part, not in the paper, runs five designs "
             "on the same machine and the same memory: 4 KiB pages, THP, THP with direct compaction, GT-PDE-4MB and "
             "Mosaic Pages (Gosakan et al., \"Mosaic Pages: Big TLB Reach with Small Pages\", ASPLOS 2023, "
             "DOI 10.1145/3582016.3582021), at "
             + ", ".join(f"{100 * f:g}" for f in fracs) + " % of frames retired uniformly. A seed fixes the "
             "retired map and the pinned frames, so every design at one (seed, fraction) sees the same memory. "
             f"**Pre-fragmentation (our choice):** `physmem.fragmentation = {gs.VERSUS_FRAGMENTATION:g}`, half "
             "the 2 MiB blocks broken by one pinned 4 KiB frame each, standing for an OS that has run for a while "
             "and whose other programs hold movable pages; without it THP finds whole blocks wherever no frame is "
             "retired and compaction has nothing to do. The other parts of this report run unfragmented memory, "
             "so their numbers are not these."),
        Bullets([
            "**THP + compaction** differs from THP in `os.compaction = { "
            + ", ".join(f"{k} = {_toml(v)}" for k, v in c.items()) + " }` only (the model's defaults): at a "
            "2 MiB fault with no free 2 MiB block, the OS moves the movable pages of one block (this process's "
            "4 KiB pages and the pinned frames, which stand for other programs' movable pages) and maps the "
            "2 MiB page there, charging 8000 cycles per page moved plus a shootdown per page of this process; a "
            "block holding a retired frame cannot be compacted. Compaction counters are the measured phase's "
            "(the warm-up's are not counted, nor are its cycles).",
            "**Mosaic Pages** is the Mosaic reproduction's `mosaic` design (docs/reproduce-mosaic-pages.md) on "
            "this machine, differing from 4 KiB pages in three things: the allocator (`physmem.allocator = "
            + _toml(m["physmem.allocator"]) + "`, the prototype's geometry: front yard 56, backyard 8, 6 "
            "backyard choices, so a page may use one of 104 hashed frames; the pool is every bucket above 1/64 "
            "of the 16 GiB, and page-table nodes come from the 256 MiB below it), the page-table format "
            "(`pagetable.format = " + _toml(m["pagetable.format"]) + "`, leaves holding 7-bit CPFNs) and the "
            "organisation of the two data-side TLBs that hold 4 KiB pages (`mmu.tlb.l1_dtlb_4k` and "
            "`mmu.tlb.l2_tlb`: `organisation = " + _toml(m["mmu.tlb.l2_tlb.organisation"]) + "`, entries and ways "
            "kept). The 32-entry 2 MiB L1 DTLB keeps `set_assoc`: a mosaic organisation there is a config error "
            "(\"mosaic groups 4 KiB pages, but this structure holds none\"), and with 4 KiB pages it holds nothing "
            "in either design. Retired and pinned frames inside the pool are used slots no page can take.",
            "**Mosaic Pages and the data caches.** The Iceberg allocator takes a bucket's free slots in order "
            "(each yard's free list starts in slot order, as the Linux prototype's; docs/mosaic-pages.md), and "
            "with the pool at a few per cent load most pages sit in the first slots of their buckets, so their "
            "frame numbers share their low bits. Those bits index the physically indexed L2 (256 KiB, 8 ways: "
            "8 page colours) and LLC (2 MiB, 32 ways: 16 page colours), while the buddy allocator's 4 KiB pages "
            "are consecutive frames that use every colour. The table's data-stall and LLC-miss columns show what "
            "this costs here; the Mosaic Pages paper measured TLB misses (gem5) and memory use (its prototype), "
            "not cache conflicts.",
            "Gains are per-seed ratios of IPC to 4 KiB's at the same (seed, fraction), shown as the mean and "
            "[lowest, highest] over the seeds; a difference between two designs is called noise unless one's "
            "lowest seed lies above the other's highest.",
        ]),
        Figure("figures/versus", "IPC gain over 4 KiB pages per design at each retired fraction; bars span the seeds"),
        Table(["retired %", "design", "gain, geomean %", "gain, lowest to highest workload %",
               "superpage % of touched, mean"], srows, caption="Summary over workloads"),
        Table(["retired %", "design", "against", "above", "below", "noise (of which identical runs)",
               "mean difference (points)"], prows,
              caption="Workloads on which the first design's gain lies above or below the second's beyond the "
                      "seeds' spread"),
        Table(["workload", "retired %", "design", "IPC gain over 4 KiB [seeds]", "superpage % of touched",
               "walks / k instr.", "Δ translation stalls, % of 4 KiB cycles", "Δ data stalls, % of 4 KiB cycles",
               "LLC MPKI", "compacted blocks / pins moved / compaction % of cycles (Mosaic: Iceberg pool load)"], rows,
              caption="Every design on the same retired-page maps over pre-fragmented memory"),
        Bullets(prose.versus_findings(vt, summ, pairs)),
    ]


def _differences() -> list[Block]:
    return [
        Heading(2, "Why our numbers differ from the paper's"),
        Bullets([
            "**Timing model.** The interval model adds every stall with no overlap, where PTLsim's out-of-order "
            "core hides part of each walk; the gain of removing walks is inflated here, and the share of a "
            "design's cycles spent on translation is larger than the paper's.",
            "**Footprints.** Ours are tens to hundreds of MiB against 0.7–4 GB, so more page-table lines stay in "
            "the L2 and the LLC, fewer page-table references reach memory (Fig. 11), and which workloads fall in "
            "the paper's 'slower PT access' group can change.",
            "**Run length and first touches.** The paper simulated 2 B instructions after initialisation with "
            "pre-allocated page tables; ours warm up on about a fifth of each run, and the first touches after the "
            "warm-up still walk to non-present entries.",
            "**Workload programs.** Tessera's workloads are re-implementations of the kernels (GUPS, PARSEC "
            "canneal, PBBS dict, BFS, setCover, MST, SPMV, matching, MIS) with their own instruction models "
            "(docs/workloads.md), not the paper's binaries.",
            "**No kernel.** Only the workload's own accesses are simulated.",
        ]),
    ]


def _reproducing(ctx: Mapping[str, Any]) -> list[Block]:
    blocks = reproducing(ctx, ["main", "retired", "size", "decode", "pde", "coalescing", "beyond", "versus"])
    # The check is this invocation's (a redraw from the store can make it too).
    timing = ctx["timing"] if ctx["timing"].get("recheck_runs") else ctx.get("measured", ctx["timing"])
    n = int(timing.get("recheck_runs", 0) or 0)
    if n:
        same = int(timing.get("recheck_identical", 0))
        blocks.append(Para(
            f"**Reused runs re-checked.** A run's id hashes its resolved machine, source, seed and the Tessera "
            f"version, not the commit, so runs simulated by an earlier commit were reused. Before reusing them, {n} "
            f"of them, drawn at random, were simulated again with this build into a scratch store (`--force`) and "
            f"every counter, derived stat and phase compared with the stored result "
            f"({int(timing.get('recheck_values', 0))} values in all, {_minutes(timing.get('recheck_s', 0.0))}): "
            + ("all identical." if same == n else f"{n - same} of the {n} differ, so the reused runs are suspect.")))
    return blocks


def build(tables: Mapping[str, pd.DataFrame], ctx: Mapping[str, Any]) -> list[Block]:
    """The whole report, in order."""
    return (
        _intro(tables, ctx)
        + _machine(tables, ctx)
        + _scale(tables, ctx)
        + _fig11(tables)
        + _fig12(tables)
        + _fig13(tables)
        + _fig15(tables, ctx)
        + _figs16_18(tables)
        + _retired(tables)
        + _beyond(tables)
        + _versus(tables, ctx)
        + _differences()
        + _reproducing(ctx)
    )
