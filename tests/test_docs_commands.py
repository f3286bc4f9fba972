"""Every command line quoted in the README, in docs/ and in the examples runs
and exits as the docs say (0, or the error status an error example shows).

"Quoted" means a line of a fenced code block that starts with ``tessera``
(after an optional ``$ ``), or that runs ``tessera`` after ``&&``, ``pip``,
``bash``, ``cargo`` or ``python``, with its ``\\`` continuation lines; and a
``tessera`` line in a comment of an example file (``examples/**/*.toml``).
Prose mentions in inline code are not commands to copy and are left out, as
are the reports that ``tessera reproduce`` writes under ``docs/`` (their
text is the report generator's, tested with it).

:data:`COMMANDS` says, for each distinct command, how it is checked:

- :class:`Run`: as quoted, or at a small scale (``small``: token
  substitutions that shrink a workload or an access count, or a sweep file
  replaced by a copy with small workload parameters, see :func:`_small_sweep`)
  so that the whole file takes well under a minute on 2 cores; placeholders
  (``RUN_ID``, ``NAME``) are filled in; ``expect`` is the exit status.
- :class:`Skip`: with the reason (a full-scale reproduction, a recording that
  needs a program and Valgrind or QEMU, a Dask cluster, another revision's
  build) and the test that covers it instead.

A quoted command missing from the table, or a table entry no document quotes
any more, fails :func:`test_every_quoted_command_is_in_the_table`, so that a
new command in the docs cannot go unchecked.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import lzma
import os
import re
import shlex
from pathlib import Path
from typing import Optional, Union

import pytest
from test_champsim import _trace

import tessera
from conftest import REPO, write_lackey
from tessera.cli import main
from tessera.config import dumps_toml, loads_toml

#: Reports written by ``tessera reproduce``: the generator's text, not hand-written docs.
GENERATED = ("docs/reproduce-mosaic-pages/", "docs/reproduce-mmu-analysis/", "docs/reproduce-gtsm/",
             "docs/reproduce-mosaic-motivation/", "docs/reproduce-mosaic-gpu-quick/", "docs/reproduce-mosaic-gpu/",
             "docs/reproduce-uvm-batching-quick/", "docs/reproduce-uvm-batching/")
#: Fenced blocks in these languages hold code or data, not command lines.
NOT_SHELL = {"python", "toml", "json", "text"}
_START = re.compile(r"^(tessera [a-z{]|pip install |bash |cargo |python )")


@dataclasses.dataclass(frozen=True)
class Run:
    #: Substitutions (old → new) applied to the quoted text, for a small scale or a placeholder.
    small: tuple[tuple[str, str], ...] = ()
    expect: int = 0
    #: Run these instead (for a synopsis that stands for several commands).
    instead: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Skip:
    reason: str


Check = Union[Run, Skip]

_RECORD = Skip("records a program under Valgrind or QEMU; tests/test_record.py records small C programs with both")
_REPRODUCE = Skip(
    "a study of minutes (--quick) to hours; tests/test_reproduce.py, tests/test_reproduce_mosaic.py, "
    "tests/test_reproduce_gtsm.py, tests/test_reproduce_mosaic_motivation.py, tests/test_reproduce_mosaic_gpu.py "
    "and tests/test_reproduce_uvm_batching.py run the same code at a test scale"
)
_SMALL_GUPS = ("table=4GiB", "table=64MiB --param updates=20k")
_PLACEHOLDERS = (("RUN_ID", "{run_id}"), ("3f2a9c", "{run_id_prefix}"))

#: Every distinct quoted command (whitespace collapsed, trailing ``# comment`` dropped) → how it is checked.
COMMANDS: dict[str, Check] = {
    # README: install and run (the install is what this environment did), and the test suite.
    "pip install . && tessera run --preset sandy_bridge --trace examples/traces/sort.tess": Run(
        instead=("tessera run --preset sandy_bridge --trace examples/traces/sort.tess",)),
    "bash scripts/install-system-deps.sh && pip install '.[test]' && cargo test -p tessera-core --release && "
    "python -m pytest": Skip("the test suite itself; CI runs it (.ci/run) and test_docs.py checks the README quotes "
                             "CI's steps"),
    "tessera config list": Run(),
    "tessera config show sandy_bridge --set physmem.page_size=thp": Run(),
    "tessera run --preset sandy_bridge --trace examples/traces/sort.tess --out r4k.json": Run(),
    "tessera run --preset sandy_bridge --trace examples/traces/sort.tess --set physmem.page_size=thp --out rthp.json":
        Run(),
    "tessera compare r4k.json rthp.json": Run(),
    "tessera run --preset tlb_only --synthetic uniform --accesses 5e6 --footprint 8GiB": Run(
        small=(("5e6", "2e4"),)),
    'tessera run --preset sandy_bridge --workload gups --warmup "2M instructions"': Run(
        small=(('"2M instructions"', '"20k instructions" --param table=64MiB --param updates=20k'),)),
    "tessera run --config my_machine.toml --trace prog.tess --format csv --out r.csv": Run(),
    "tessera trace convert prog.lackey prog.tess": Run(),
    "tessera trace info prog.tess": Run(),
    "tessera run --preset tlb_only --trace x.champsimtrace.xz": Run(),
    "tessera run --preset sandy_bridge --trace prog.tess": Run(),
    "tessera list": Run(),
    "tessera stats --preset sandy_bridge": Run(),
    "tessera bench": Run(small=(("bench", "bench --quick --accesses 20000"),)),
    "tessera bench --against cf7c763": Skip(
        "builds another revision in its own environment (minutes); tests/test_speed_tools.py runs the A/B machinery"),
    "tessera bench --pycachesim": Run(small=(("--pycachesim", "--pycachesim --trace prog.tess"),)),
    "tessera bench --generators": Skip(
        "times every workload generator at its default size (34 s on 2 cores), with no option for a smaller one; "
        "tests/test_workloads.py runs every workload from the command line at small parameters"),
    "tessera bench --workload gups": Run(small=(("gups", "gups --param table=64MiB --param updates=20k"),)),
    "tessera workloads": Run(),
    "tessera workloads gups": Run(),
    "tessera run --preset sandy_bridge --workload gups --param table=4GiB --param updates=20M": Run(
        small=(("table=4GiB", "table=64MiB"), ("updates=20M", "updates=20k"))),
    "tessera trace record-workload gups --param table=4GiB -o gups.tess": Run(small=(_SMALL_GUPS,)),
    "tessera trace record-workload graph500-bfs --param scale=20 -o bfs20.tess": Run(
        small=(("scale=20", "scale=8 --param roots=1"),)),
    # Sweeps, the store and figures (sweep files at a small scale: _small_sweep).
    "tessera sweep examples/sweeps/tlb-reach.toml": Run(),
    "tessera sweep examples/sweeps/tlb-reach.toml --dry-run": Run(),
    "tessera sweep examples/sweeps/coalescing.toml": Run(),
    "tessera sweep examples/sweeps/coalescing.toml -j 2": Run(),
    "tessera sweep examples/sweeps/memory-pressure.toml": Run(),
    "tessera sweep examples/sweeps/memory-pressure.toml -j 2": Run(),
    "tessera sweep study.toml --scheduler tcp://head:8786": Skip(
        "needs a Dask scheduler at tcp://head:8786; tests/test_dask.py runs sweeps on a local Dask cluster"),
    "tessera results ls | show RUN_ID | export out.parquet": Run(instead=(
        "tessera results ls", "tessera results show RUN_ID", "tessera results export out.parquet")),
    "tessera results ls [--sweep tlb-reach] [--failures] [--format table|json|csv]": Run(instead=(
        "tessera results ls", "tessera results ls --sweep tlb-reach", "tessera results ls --failures",
        "tessera results ls --format json", "tessera results ls --sweep tlb-reach --format csv")),
    "tessera results ls --sweep tlb-reach --format csv": Run(),
    "tessera results ls": Run(),
    "tessera results ls --sweep tlb-reach": Run(),
    "tessera results show RUN_ID": Run(),
    "tessera results show 3f2a9c": Run(),
    "tessera results export reach.parquet --sweep tlb-reach": Run(),
    "tessera plot bars --sweep NAME --y STAT --hue AXIS -o fig.svg": Run(
        # A point of tlb-reach holds three L2 sizes: plot one.
        small=(("NAME", "tlb-reach"), ("STAT", "walker.walks_pki"), ("AXIS", "physmem.page_size"),
               ("-o", "--where mmu.tlb.l2_tlb.entries=512 -o"))),
    "tessera plot bars --sweep tlb-reach --y walker.walk_cycle_share --hue physmem.page_size --where "
    "mmu.tlb.l2_tlb.entries=512 -o thp.svg": Run(),
    "tessera plot bars --sweep tlb-reach --y walker.walk_cycle_share --hue physmem.page_size --baseline base_only "
    "--where mmu.tlb.l2_tlb.entries=512 -o thp.svg -o thp.png": Run(),
    "tessera plot lines --sweep tlb-reach --y walker.walks_pki --x mmu.tlb.l2_tlb.entries --hue workload --where "
    "physmem.page_size=base_only --logx -o reach.png": Run(),
    "tessera plot lines --sweep tlb-reach --y walker.walk_cycle_share --x mmu.tlb.l2_tlb.entries --hue workload "
    "--where physmem.page_size=base_only --logx -o reach.pdf": Run(),
    "tessera plot lines --sweep tlb-reach --x mmu.tlb.l2_tlb.entries --hue workload --y walker.walk_cycle_share "
    "--where physmem.page_size=base_only -o reach.svg": Run(),
    "tessera plot lines --sweep tlb-reach --x mmu.tlb.l2_tlb.entries --y walker.walk_cycle_share --hue workload "
    "--where physmem.page_size=base_only -o reach.svg": Run(),
    "tessera plot lines --sweep coalescing --x mmu.tlb.l2_tlb.organisation.group --y walker.walks_pki --hue workload "
    "--where physmem.page_size=base_only -o coalescing.svg": Run(),
    "tessera plot lines --sweep memory-pressure --x physmem.capacity --y swap.pages_out --hue os.eviction --where "
    "workload=kvcache -o pressure.svg": Run(),
    # Error examples: the docs show the message, so the status is the error's.
    "tessera plot bars --sweep tlb-reach --y walks_pki --hue physmem.pagesize -o x.svg": Run(expect=2),
    "tessera run --preset sandy_bridge --set mmu.tlb.l2tlb.entries=1024 ...": Run(
        small=(("...", "--synthetic uniform --accesses 1000"),), expect=2),
    # Synopses: each option is run by the commands above.
    "tessera plot {bars,lines} --y STAT [--store PATH] [--sweep NAME] [--x COL] [--hue COL]": Skip(
        "a synopsis; the plot commands above run its options"),
    "tessera trace record -o prog.tess [--backend lackey|qemu] [--skip N] [--max-accesses N] [--no-ifetch] -- "
    "PROGRAM ARGS...": Skip("a synopsis of the recording commands; " + _RECORD.reason),
    # Mosaic Pages' example machine.
    "tessera run --config examples/mosaic_pages.toml --synthetic hotcold --footprint 80MiB --accesses 4M": Run(),
    # Recording programs.
    "tessera trace record -o prog.tess -- ./prog args": _RECORD,
    "tessera trace record -o prog.tess -- ./prog arg1 arg2": _RECORD,
    "tessera trace record -o prog.tess --backend qemu -- ./prog arg1": _RECORD,
    "tessera trace record -o prog.tess --skip 1M --max-accesses 50M --no-ifetch -- ./prog": _RECORD,
    "tessera trace record -o gz.tess --backend lackey -- gzip -6 -c in.bin > /dev/null": _RECORD,
    "tessera trace record -o gz.tess --backend qemu -- gzip -6 -c in.bin > /dev/null": _RECORD,
    "tessera trace record -o gz.tess --backend qemu --no-ifetch -- gzip -6 -c in.bin > /dev/null": _RECORD,
    "cargo run --release -p tessera-core --example trace_tool -- convert sort.lackey examples/traces/sort.tess "
    "native": Skip("builds the Rust example (minutes) from a lackey text the repository does not ship; "
                   "tests/test_traces.py converts lackey traces with the same reader"),
    # GTSM: retired pages in a run, and the Monte Carlo at a small sample.
    "tessera run --preset sandy_bridge --synthetic uniform --accesses 1e6 --footprint 4GiB --set physmem.page_size=thp "
    "--set physmem.retired.kind=uniform --set physmem.retired.fraction=0.005": Run(small=(("1e6", "2e4"),)),
    # docs/gpu.md
    "tessera gpu kernels": Run(),
    "tessera gpu info bfs --param scale=12": Run(),
    "tessera gpu trace bfs --param scale=12 --xz -o bfs-trace": Run(),
    "tessera gpu info --trace bfs-trace --page-size 2MiB": Run(),
    "tessera run --preset mosaic_gpu --apps bfs,pagerank": Run(small=(("--apps bfs,pagerank", "--set gpu.sms=2 --apps bfs,vector_add"),)),
    "tessera run --preset mosaic_gpu --set physmem.page_size=thp --workload bfs --param scale=12": Run(
        small=(("scale=12", "scale=8"),)),
    "tessera run --preset mosaic_gpu --trace bfs-trace": Run(),
    # README, docs/uvm.md
    "tessera run --preset uvm_gpu --workload bfs --set gpu.paging.memory=0.5": Run(
        small=(("--workload bfs", "--workload bfs --param scale=12"),)),
    "tessera run --preset uvm_gpu --workload bfs --param scale=16 --set gpu.paging.memory=0.5": Run(
        small=(("scale=16", "scale=12"),)),
    "tessera run --preset uvm_gpu --workload bfs --param scale=16 --set gpu.paging.memory=0.75 --set "
    "\"gpu.thread_oversubscription={}\"": Run(small=(("scale=16", "scale=12"),)),
    # docs/uvm.md: the cost of eviction's TLB shootdowns
    "tessera run --preset uvm_gpu --apps bfs,pagerank --set gpu.paging.memory=0.5 --set 'gpu.paging.shootdown={ cycles = 1000, "
    "per_sm_cycles = 100, scope = \"all\" }'": Run(small=(("--apps bfs,pagerank", "--set gpu.sms=2 --apps bfs,vector_add"),)),
    "tessera run --preset uvm_gpu --apps bfs,pagerank --set gpu.paging.memory=0.5 --set gpu.paging.unobtrusive=U --set "
    "'gpu.paging.shootdown={ cycles = 1000, per_sm_cycles = 100, scope = \"S\" }'": Run(
        small=(("--apps bfs,pagerank", "--set gpu.sms=2 --apps bfs,vector_add"), ("unobtrusive=U", "unobtrusive=true"),
               ('scope = "S"', 'scope = "app"'))),
    "tessera run --preset uvm_gpu --workload bfs --param scale=16 --set gpu.paging.unit=2m --set gpu.paging.prefetch=none "
    "--set gpu.paging.memory=0.75": Run(small=(("scale=16", "scale=12"),)),
    "tessera run --preset mosaic_gpu_mosaic --workload bfs --param scale=16 --set gpu.paging.kind=uvm --set "
    "gpu.paging.memory=0.75 --set 'os.swap={ latency_cycles = 0 }'": Run(small=(("scale=16", "scale=12 --set gpu.sms=4"),)),
    # docs/mosaic-gpu.md
    "tessera run --preset mosaic_gpu_mosaic --apps bfs,pagerank --set gpu.paging=resident": Run(
        small=(("--apps bfs,pagerank", "--set gpu.sms=2 --apps bfs,vector_add"),)),
    "tessera run --preset mosaic_gpu_mosaic --apps gups,gups --set gpu.paging=resident --set physmem.fragmentation=1.0 "
    "--set physmem.fragmentation_occupancy=0.5 --set 'os.cac={ copy = \"bulk\" }'": Run(
        small=(("--apps gups,gups", "--set gpu.sms=2 --set physmem.capacity=64MiB --apps vector_add,vector_add"),)),
    "tessera run --preset mosaic_gpu_mosaic --workload scan --param n=1000000 --param free=in@1 --set 'os.cac={ trigger = "
    "\"deallocation\", copy = \"bulk\" }'": Run(small=(("n=1000000", "n=200000 --set gpu.sms=4"),)),
    "tessera bench --gpu": Skip("times four kernels at their default sizes three times (about half a minute); "
                                "tests/test_gpu_machine.py runs the machine on the same kernels"),
    "tessera gtsm montecarlo -o gtsm-mc": Run(small=(("-o", "--slices 1000 -o"),)),
    "tessera run --config examples/retired_pages.toml --workload gups --param table=1GiB --param updates=200k": Run(),
    "tessera run --config examples/retired_pages.toml --workload gups --param table=1GiB --param updates=200k --set "
    "physmem.retired=none": Run(),
    "tessera gtsm montecarlo --figure fig14 --json": Run(small=(("--json", "--json --slices 1000"),)),
    "tessera run --preset gtsm_ptlsim --set physmem.capacity=4GiB --set pagetable.format.kind=gt_pde --set "
    "pagetable.format.mode=gt_pde_4m --set physmem.page_size=gtsm --set physmem.retired.kind=uniform --set "
    "physmem.retired.fraction=0.01 --workload gups --param table=64MiB --param updates=100k": Run(small=(("100k", "5k"),)),
    "tessera run --preset gtsm_ptlsim --set physmem.capacity=4GiB --set pagetable.format.kind=gt_pde --set "
    "pagetable.format.mode=gt_pde_4m --set physmem.page_size=gtsm --set mmu.tlb.l2_tlb.organisation.kind=coalescing "
    "--set mmu.tlb.l2_tlb.organisation.group=32 --set mmu.tlb.l2_tlb.organisation.gt_blocks=true --workload gups "
    "--param table=64MiB --param updates=100k": Run(small=(("100k", "5k"),)),
    "tessera run --preset gtsm_ptlsim --set physmem.capacity=3GiB --set physmem.page_size=thp --set "
    "physmem.fragmentation=0.5 --set \"os.compaction={}\" --workload gups --param table=2GiB --param updates=200k":
        Run(small=(("200k", "5k"),)),
    # GTSM reproduction: Mosaic Pages' pool load against its LLC misses (docs/reproduce-gtsm.md).
    **{f"tessera run --preset gtsm_ptlsim --set physmem.capacity=16GiB{m} --workload setcover --param scale=19 "
       '--warmup "47M instructions"': Run(small=(("scale=19", "scale=11"), ("47M instructions", "110k instructions")))
       for m in [""] + [" --set pagetable.format.kind=mosaic_toc --set physmem.allocator.kind=iceberg --set "
                        f"physmem.allocator.pool={pool} --set mmu.tlb.l1_dtlb_4k.organisation.kind=mosaic --set "
                        "mmu.tlb.l2_tlb.organisation.kind=mosaic" for pool in ("16128MiB", "64MiB")]},
    "tessera bench --page-tables --accesses 5000000 --rounds 3": Run(small=(("5000000 --rounds 3", "2000 --rounds 1"),)),
    # The reproductions.
    "tessera reproduce mmu-analysis --quick -o mmu-report": _REPRODUCE,
    "tessera reproduce mmu-analysis --quick -o mmu-quick": _REPRODUCE,
    "tessera reproduce mmu-analysis -o mmu-full": _REPRODUCE,
    "tessera reproduce mosaic-pages --quick -o mosaic-report": _REPRODUCE,
    "tessera reproduce mosaic-pages --quick -o mosaic-quick": _REPRODUCE,
    "tessera reproduce mosaic-pages -o mosaic-full": _REPRODUCE,
    "tessera reproduce gtsm --quick -o gtsm-report": _REPRODUCE,
    "tessera reproduce gtsm --quick -o gtsm-quick": _REPRODUCE,
    "tessera reproduce gtsm -o gtsm-full": _REPRODUCE,
    "tessera reproduce mosaic-motivation --quick -o mm-report": _REPRODUCE,
    "tessera reproduce mosaic-motivation --quick -o mm-quick": _REPRODUCE,
    "tessera reproduce mosaic-motivation -o mm-full": _REPRODUCE,
    "tessera reproduce mosaic-gpu --quick -o mg-report": _REPRODUCE,
    "tessera reproduce mosaic-gpu --quick -o mg-quick": _REPRODUCE,
    "tessera reproduce mosaic-gpu -o mg-full": _REPRODUCE,
    "tessera reproduce uvm-batching --quick -o uvm-report": _REPRODUCE,
    "tessera reproduce uvm-batching --quick -o uvm-quick": _REPRODUCE,
    "tessera reproduce uvm-batching -o uvm-full": _REPRODUCE,
}

#: Workload parameters of the small copies of the example sweeps (every workload they use).
SMALL_PARAMS = {
    "gups": {"table": "32MiB", "updates": "5k"},
    "kvcache": {"memory": "8MiB", "keys": "20k", "requests": "5k"},
    "graph-analytics": {"scale": 8, "iterations": 1},
}


@dataclasses.dataclass(frozen=True)
class Quoted:
    file: str
    line: int
    text: str

    @property
    def key(self) -> str:
        return " ".join(re.split(r"\s+#\s", self.text, maxsplit=1)[0].split())


def _doc_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md")), *sorted((REPO / "examples").rglob("*.md"))]
    return [f for f in files if not str(f.relative_to(REPO)).startswith(GENERATED)]


def _join(lines: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """Join ``\\`` continuation lines: (first line number, whole command)."""
    out: list[tuple[int, str]] = []
    pending: Optional[list] = None
    for n, text in lines:
        if pending is not None:
            pending[1] += " " + text.rstrip("\\").strip()
        elif _START.match(text) or " && tessera " in text:
            pending = [n, text.rstrip("\\").strip()]
        if pending is not None and not text.endswith("\\"):
            out.append((pending[0], pending[1]))
            pending = None
    return out


def quoted_commands() -> list[Quoted]:
    found: list[Quoted] = []
    for f in _doc_files():
        fence: Optional[str] = None
        block: list[tuple[int, str]] = []
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith("```"):
                if fence is None:
                    fence, block = line.strip()[3:].strip(), []
                else:
                    if fence not in NOT_SHELL:
                        found += [Quoted(str(f.relative_to(REPO)), i, t) for i, t in _join(block)]
                    fence = None
            elif fence is not None:
                block.append((n, re.sub(r"^\$ ", "", line.strip())))
    for f in sorted((REPO / "examples").rglob("*.toml")):
        comments = [(n, line[1:].strip()) for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1)
                    if line.startswith("#")]
        found += [Quoted(str(f.relative_to(REPO)), i, t) for i, t in _join(comments) if t.startswith("tessera ")]
    return found


def test_every_quoted_command_is_in_the_table():
    quoted = quoted_commands()
    assert len(quoted) > 50
    keys = {q.key for q in quoted}
    missing = [f"{q.file}:{q.line}: {q.key}" for q in quoted if q.key not in COMMANDS]
    assert not missing, "add these quoted commands to COMMANDS (Run or Skip with a reason):\n" + "\n".join(missing)
    stale = sorted(set(COMMANDS) - keys)
    assert not stale, "no document quotes these any more; remove them from COMMANDS:\n" + "\n".join(stale)


def test_the_extractor_finds_continuations_prompts_and_example_comments():
    by_key = {q.key: q for q in quoted_commands()}
    # A `\` continuation (README), a `$ ` prompt (docs/config.md), an example's comment.
    assert any(k.endswith("--set physmem.page_size=thp --out rthp.json") for k in by_key)
    assert by_key["tessera run --preset sandy_bridge --set mmu.tlb.l2tlb.entries=1024 ..."].file == "docs/config.md"
    assert by_key["tessera sweep examples/sweeps/memory-pressure.toml"].file.startswith("examples/sweeps/")


# ------------------------------------------------------------------ running


def _small_sweep(src: Path, dst: Path) -> None:
    """A copy of an example sweep with small workload parameters and no warm-up:
    the same name, axes and machine settings, so the commands that read its
    results (plot, results) work as on the full sweep."""
    spec = loads_toml(src.read_text(encoding="utf-8"))
    used = spec["axes"].get("workload", [spec["source"].get("workload")])
    spec["params"] = {w: SMALL_PARAMS[w] for w in used}
    if "warmup" in spec["axes"]:
        spec["axes"]["warmup"] = ["0"] * len(spec["axes"]["warmup"])
    dst.write_text(dumps_toml(spec), encoding="utf-8")


class Workspace:
    """A directory to run the commands in, with the files they name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "examples").mkdir()
        for sub in ("traces", "mosaic_pages.toml", "retired_pages.toml"):
            (root / "examples" / sub).symlink_to(REPO / "examples" / sub)
        (root / "examples" / "sweeps").mkdir()
        for f in sorted((REPO / "examples" / "sweeps").glob("*.toml")):
            _small_sweep(f, root / "examples" / "sweeps" / f.name)
        write_lackey(root / "prog.lackey", records=3000)
        (root / "my_machine.toml").write_text('inherit = "sandy_bridge"\nname = "my_machine"\n')
        (root / "x.champsimtrace.xz").write_bytes(lzma.compress(_trace(), format=lzma.FORMAT_XZ))
        self.done: dict[str, int] = {}

    def argv(self, text: str) -> list[str]:
        args = shlex.split(text)
        assert args[0] == "tessera", text
        return args[1:]

    def run(self, text: str) -> tuple[int, str]:
        """Exit status and standard error of ``tessera ...`` run in-process."""
        err = io.StringIO()
        cwd = os.getcwd()
        os.chdir(self.root)
        try:
            with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
                try:
                    code = main(self.argv(text))
                except SystemExit as e:  # argparse's usage errors
                    code = int(e.code or 0)
        finally:
            os.chdir(cwd)
        return code, err.getvalue()

    def ensure(self, text: str) -> None:
        """Run a command another one reads the output of, once."""
        if text not in self.done:
            code, err = self.run(text)
            assert code == 0, f"{text}: exit {code}\n{err}"
            self.done[text] = code

    def fill(self, text: str) -> str:
        if "RUN_ID" in text or "3f2a9c" in text:
            self.ensure("tessera sweep examples/sweeps/tlb-reach.toml")
            df = tessera.results.load(self.root / "tessera-results" / "store.sqlite", sweep="tlb-reach")
            run_id = str(df["run_id"].iloc[0])
            text = text.replace("RUN_ID", run_id).replace("3f2a9c", run_id[:6])
        return text


#: Commands whose output a command reads, by a word in the reading command.
_NEEDS = (
    ("--sweep tlb-reach", "tessera sweep examples/sweeps/tlb-reach.toml"),
    ("--sweep NAME", "tessera sweep examples/sweeps/tlb-reach.toml"),
    ("tessera results", "tessera sweep examples/sweeps/tlb-reach.toml"),
    ("--sweep coalescing", "tessera sweep examples/sweeps/coalescing.toml"),
    ("--sweep memory-pressure", "tessera sweep examples/sweeps/memory-pressure.toml"),
    ("compare r4k.json", "tessera run --preset sandy_bridge --trace examples/traces/sort.tess --out r4k.json"),
    ("compare r4k.json", "tessera run --preset sandy_bridge --trace examples/traces/sort.tess --set "
                         "physmem.page_size=thp --out rthp.json"),
    ("prog.tess", "tessera trace convert prog.lackey prog.tess"),
    ("--pycachesim", "tessera trace convert prog.lackey prog.tess"),
    ("--trace bfs-trace", "tessera gpu trace bfs --param scale=12 --xz -o bfs-trace"),
)


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Workspace:
    return Workspace(tmp_path_factory.mktemp("docs-commands"))


def _to_run() -> list[tuple[str, Run]]:
    return [(k, c) for k, c in COMMANDS.items() if isinstance(c, Run)]


@pytest.mark.parametrize("key,check", _to_run(), ids=[k[:70] for k, _ in _to_run()])
def test_quoted_command_runs(workspace: Workspace, key: str, check: Run):
    for word, needed in _NEEDS:
        if word in key and needed != key and "trace convert" not in key:
            workspace.ensure(needed)
    for text in check.instead or (key,):
        for old, new in check.small:
            assert old in text, f"{old!r} is not in {text!r}"
            text = text.replace(old, new)
        text = workspace.fill(text)
        code, err = workspace.run(text)
        assert code == check.expect, f"{text}: exit {code}, the docs say {check.expect}\n{err}"
        if check.expect == 0:
            workspace.done[text] = code
        else:
            assert "Traceback" not in err and err.startswith(("tessera: error", "usage:")), err
