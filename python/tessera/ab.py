"""``tessera bench --against REV``: two builds on the same streams, on the wall clock.

Speed is a ratio measured in one run on one host: this module builds another
revision of Tessera in its own directory and Python environment, starts one
measuring process per build (``ab_worker``), and runs both builds on every
stream in interleaved rounds (the order alternates each round, so a change in
the host's load falls on both alike). Before timing it runs each stream once
per build for its counters and checks that every counter both builds report is
equal: a speed comparison of builds that simulate different things is refused.

A build of revision ``REV`` lives in ``<cache>/ab/<commit>/``: ``src/`` (the
revision's files, from ``git archive``), ``venv/`` (a virtual environment that
sees this interpreter's packages, with that revision's ``tessera`` installed
on top) and ``target/`` (its cargo build). It is made once and reused; a
half-made build is rebuilt.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional, Sequence

__all__ = ["Build", "Stream", "installed_build", "revision_build", "standard_streams", "compare", "AbError"]

#: The machines and synthetic patterns of the standard comparison.
PRESETS = ("tlb_only", "sandy_bridge")
PATTERNS = ("uniform", "hotcold", "sequential")
ACCESSES = 16_000_000
FOOTPRINT = "8GiB"


class AbError(Exception):
    """A build could not be made or a measuring process failed."""


def cache_dir() -> Path:
    """Tessera's cache directory (``TESSERA_CACHE_DIR``, else the XDG cache)."""
    env = os.environ.get("TESSERA_CACHE_DIR")
    if env:
        return Path(env)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tessera"


def bench_traces_dir() -> Path:
    """Where ``scripts/record-bench-traces.sh`` leaves the real-program traces."""
    return cache_dir() / "bench-traces"


@dataclass
class Build:
    """One side of the comparison: a label and the Python that runs it."""

    label: str
    python: str
    commit: Optional[str] = None


@dataclass
class Stream:
    """One run of the comparison: a machine and an access stream."""

    preset: str
    synthetic: Optional[dict[str, Any]] = None
    trace: Optional[str] = None
    overrides: list[str] = field(default_factory=list)

    @property
    def name(self) -> str:
        if self.trace:
            return f"{self.preset} {Path(self.trace).name}"
        s = self.synthetic or {}
        return f"{self.preset} {s.get('pattern')}"

    def request(self) -> dict[str, Any]:
        run: dict[str, Any] = {"preset": self.preset, "overrides": list(self.overrides)}
        if self.trace:
            run["trace"] = self.trace
        else:
            run["synthetic"] = self.synthetic
        return run


def standard_streams(
    presets: Sequence[str] = PRESETS,
    patterns: Sequence[str] = PATTERNS,
    accesses: int = ACCESSES,
    footprint: str = FOOTPRINT,
    traces: Sequence[str] = (),
) -> list[Stream]:
    """Every preset on every synthetic pattern, then on every trace."""
    out = [
        Stream(p, synthetic={"pattern": pat, "accesses": accesses, "footprint": footprint})
        for p in presets
        for pat in patterns
    ]
    out += [Stream(p, trace=str(Path(t).resolve())) for p in presets for t in traces]
    return out


def _git(repo: Path, *args: str) -> str:
    r = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True)
    if r.returncode != 0:
        raise AbError(f"git {' '.join(args)}: {r.stderr.strip() or 'failed'}")
    return r.stdout.strip()


def repo_root(start: Optional[Path] = None) -> Path:
    """The git checkout of Tessera that revisions are taken from."""
    here = start or Path.cwd()
    try:
        return Path(_git(here, "rev-parse", "--show-toplevel"))
    except AbError:
        raise AbError(f"{here} is not inside a git checkout of Tessera; run from one (or pass --repo)") from None


def installed_build() -> Build:
    """The build this interpreter imports (the installed ``tessera``)."""
    import tessera

    return Build(label=f"installed ({Path(tessera.__file__).parent})", python=sys.executable)


def revision_build(
    rev: str,
    repo: Path,
    status: Optional[Callable[[str], Any]] = None,
    root: Optional[Path] = None,
) -> Build:
    """Build revision ``rev`` of ``repo`` in its own directory and environment (reused once made)."""
    try:
        commit = _git(repo, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}") if rev else ""
    except AbError:
        commit = ""
    if not commit:
        raise AbError(f"unknown revision {rev!r} in {repo}")
    home = (root or cache_dir() / "ab") / commit
    py = home / "venv" / "bin" / "python"
    ready = home / "ready"
    label = f"{rev} ({commit[:9]})" if rev != commit else commit[:9]
    if ready.exists() and py.exists():
        return Build(label=label, python=str(py), commit=commit)
    say = status or (lambda _m: None)
    if home.exists():
        shutil.rmtree(home)
    home.mkdir(parents=True)
    log = home / "build.log"
    try:
        say(f"exporting {label} into {home / 'src'}")
        src = home / "src"
        src.mkdir()
        archive = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar", commit], capture_output=True)
        if archive.returncode != 0:
            raise AbError(f"git archive {commit}: {archive.stderr.decode(errors='replace').strip()}")
        subprocess.run(["tar", "-x", "-C", str(src)], input=archive.stdout, check=True)
        say(f"creating the environment {home / 'venv'}")
        subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(home / "venv")], check=True)
        env = dict(os.environ, CARGO_TARGET_DIR=str(home / "target"))
        cmd = [str(py), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--no-deps"]
        try:
            import maturin  # noqa: F401  (the build backend, if this interpreter has it)

            cmd.append("--no-build-isolation")
        except ImportError:
            pass
        say(f"building {label} (cargo, release; a few minutes the first time; log: {log})")
        with open(log, "w") as f:
            r = subprocess.run([*cmd, str(src)], stdout=f, stderr=subprocess.STDOUT, env=env)
        if r.returncode != 0:
            tail = log.read_text(errors="replace").strip().splitlines()[-15:]
            raise AbError(f"building {label} failed (log: {log}):\n" + "\n".join(tail))
    except BaseException:
        # Never leave a half-made build that a later run would take as ready.
        ready.unlink(missing_ok=True)
        raise
    ready.write_text(commit + "\n")
    return Build(label=label, python=str(py), commit=commit)


class Worker:
    """A measuring process running one build."""

    def __init__(self, build: Build):
        self.build = build
        source = (Path(__file__).parent / "ab_worker.py").read_text()
        self.proc = subprocess.Popen(
            [build.python, "-I", "-c", source],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=sys.stderr,
            text=True,
            cwd=tempfile.gettempdir(),
            bufsize=1,
        )
        hello = self.ask({"op": "hello"})
        self.version = hello.get("version")
        self.module = hello.get("module")

    def ask(self, req: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
            line = self.proc.stdout.readline()
        except BrokenPipeError:
            line = ""
        if not line:
            raise AbError(f"the measuring process of {self.build.label} ended (exit {self.proc.poll()})")
        ans = json.loads(line)
        if "error" in ans and req.get("op") == "hello":
            raise AbError(f"{self.build.label}: {ans['error']}")
        return ans

    def close(self) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        if self.proc.stdout:
            self.proc.stdout.close()


def _counter_diff(a: dict[str, int], b: dict[str, int]) -> list[str]:
    """Counters both builds report that differ (names only one build has are new or renamed stats)."""
    return [f"{k}: {a[k]} vs {b[k]}" for k in sorted(a.keys() & b.keys()) if a[k] != b[k]]


def compare(
    this: Build,
    other: Build,
    streams: Sequence[Stream],
    rounds: int = 3,
    status: Optional[Callable[[str], Any]] = None,
) -> dict[str, Any]:
    """Counters once per stream and build, then ``rounds`` interleaved timed rounds.

    Returns ``{"this", "other", "rounds", "streams": [row, ...]}``; each row has
    both builds' seconds per round, their best rates, the ratio of the best
    rates (this / other: above 1 means this build is faster), the range of the
    per-round ratios, both builds' peak RSS, the walk count and the counter check.
    """
    say = status or (lambda _m: None)
    workers = (Worker(this), Worker(other))
    try:
        rows: list[dict[str, Any]] = []
        for s in streams:
            got = []
            for w in workers:
                say(f"counters  {s.name:<32} {w.build.label}")
                got.append(w.ask({"op": "counters", "run": s.request()}))
            row: dict[str, Any] = {"stream": s.name, "preset": s.preset, "trace": s.trace, "synthetic": s.synthetic}
            errors = [f"{w.build.label}: {g['error']}" for w, g in zip(workers, got) if "error" in g]
            if errors:
                row["error"] = "; ".join(errors)
            else:
                a, b = got[0]["counters"], got[1]["counters"]
                row["counters_compared"] = len(a.keys() & b.keys())
                row["counter_differences"] = _counter_diff(a, b)
                row["walks"] = a.get("walker.walks")
                row["accesses"] = a.get("core.records")
            row["seconds"] = [[], []]
            row["peak_rss"] = [[], []]
            rows.append(row)
        for r in range(rounds):
            for i, s in enumerate(streams):
                row = rows[i]
                if "error" in row:
                    continue
                order = (0, 1) if (r + i) % 2 == 0 else (1, 0)
                for side in order:
                    w = workers[side]
                    ans = w.ask({"op": "bench", "run": s.request()})
                    if "error" in ans:
                        row["error"] = f"{w.build.label}: {ans['error']}"
                        break
                    row["seconds"][side].append(ans["seconds"])
                    row["peak_rss"][side].append(ans["peak_rss"])
                    row["accesses"] = ans["accesses"]
                    say(f"round {r + 1}/{rounds} {s.name:<32} {ans['accesses'] / ans['seconds'] / 1e6:8.2f} M/s  {w.build.label}")
        for row in rows:
            if "error" in row:
                continue
            t, o = row["seconds"]
            n = row["accesses"]
            row["rate"] = [[n / x for x in t], [n / x for x in o]]
            row["best_rate"] = [n / min(t), n / min(o)]
            row["median_rate"] = [n / statistics.median(t), n / statistics.median(o)]
            row["ratio"] = min(o) / min(t)
            per_round = [b / a for a, b in zip(t, o)]
            row["ratio_range"] = [min(per_round), max(per_round)]
            row["peak_rss_max"] = [max(row["peak_rss"][0]), max(row["peak_rss"][1])]
        return {
            "this": {"label": this.label, "commit": this.commit, "version": workers[0].version, "module": workers[0].module},
            "other": {"label": other.label, "commit": other.commit, "version": workers[1].version, "module": workers[1].module},
            "rounds": rounds,
            "streams": rows,
        }
    finally:
        for w in workers:
            w.close()


def counters_agree(doc: dict[str, Any]) -> bool:
    """Whether every stream ran on both builds with equal counters."""
    return all("error" not in r and not r.get("counter_differences") for r in doc["streams"])
