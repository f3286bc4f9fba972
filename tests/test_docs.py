"""What users read: no pointer to files only the project's developers have,
the README's opening, and the stat names that module docs promise."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import tessera

REPO = Path(__file__).resolve().parent.parent
#: What users get: the README, the docs, the Python package and the Rust sources.
USER_FILES = ("README.md", "docs", "python", "crates/tessera-core/src", "crates/tessera-py/src")
#: The papers live in the project's shared folder, which users do not have.
PRIVATE_PATHS = ("shared/papers", "../shared")
#: The README's two opening commands: install and run, then the whole test suite.
INSTALL_AND_RUN = "pip install . && tessera run --preset sandy_bridge --trace examples/traces/sort.tess"
TEST_SUITE = (
    "bash scripts/install-system-deps.sh && pip install '.[test]' && "
    "cargo test -p tessera-core --release && python -m pytest"
)


def _user_files() -> list[Path]:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--", *USER_FILES], cwd=REPO, capture_output=True, check=True
        ).stdout.decode()
        files = [REPO / f for f in out.split("\0") if f]
    except (OSError, subprocess.CalledProcessError):  # not a git checkout: every file there
        files = [p for d in USER_FILES for p in ([REPO / d] if (REPO / d).is_file() else (REPO / d).rglob("*"))]
    return [f for f in files if f.is_file()]


def test_user_files_cite_papers_not_private_paths():
    files = _user_files()
    assert any(f.name == "README.md" for f in files) and len(files) > 50
    found = []
    for f in files:
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        for i, line in enumerate(text.splitlines(), 1):
            if any(p in line for p in PRIVATE_PATHS):
                found.append(f"{f.relative_to(REPO)}:{i}: {line.strip()}")
    assert not found, "cite the paper by title, venue and DOI instead:\n" + "\n".join(found)


def test_readme_lists_the_five_papers():
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    refs = readme[readme.index("\n## References\n") :].split("\n## ")[1]
    titles = [
        "Performance Analysis of the Memory Management Unit under Scale-out Workloads",
        "Supporting Superpages in Non-Contiguous Physical Memory",
        "Mosaic Pages: Big TLB Reach with Small Pages",
        "Mosaic: Enabling Application-Transparent Support for Multiple Page Sizes in Throughput Processors",
        "Batch-Aware Unified Memory Management in GPUs for Irregular Workloads",
    ]
    flat = " ".join(refs.split())
    for title in titles:
        assert title in flat
    # The five papers, and the prior work a mechanism follows (CoLT).
    assert sum(line.startswith("- ") for line in refs.splitlines()) >= len(titles)
    for doi in re.findall(r"doi:(\S+?)\]\(https://doi\.org/(\S+?)\)", refs):
        assert doi[0] == doi[1]


def test_readme_opens_with_title_description_then_the_two_commands():
    lines = (REPO / "README.md").read_text(encoding="utf-8").splitlines()
    assert lines[0] == "# Tessera"
    assert lines[1] == "" and lines[2] and not lines[2].startswith(("#", "`")) and lines[3] == ""
    assert lines[4:8] == ["```", INSTALL_AND_RUN, TEST_SUITE, "```"]
    # CI runs the second command.
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    for step in ("bash scripts/install-system-deps.sh", "pip install --quiet --disable-pip-version-check '.[test]'",
                 "cargo test -p tessera-core --release", "python3 -m pytest"):
        assert step in ci


def _stats_sections() -> list[tuple[Path, str]]:
    out = []
    for f in sorted((REPO / "crates").glob("*/src/**/*.rs")):
        lines = f.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if line.strip() == "//! ## Stats":
                body = []
                for nxt in lines[i + 1 :]:
                    if not nxt.startswith("//!") or nxt.startswith("//! ##"):
                        break
                    body.append(nxt[3:])
                out.append((f, " ".join(body)))
    return out


def test_module_docs_name_stats_the_core_emits():
    emitted = set()
    for preset in tessera.presets():
        emitted |= set(tessera.stat_docs(preset))
    # Components that report only when configured: memory pressure (each
    # eviction policy), the iceberg allocator and a 64 KiB page level.
    for policy in ["lru", "clock", "linux_like", "horizon", "root_chunk"]:
        emitted |= set(tessera.stat_docs("tlb_only", ['os.swap={ capacity = "1GiB" }', f"os.eviction={policy}"]))
    # The iceberg allocator (with the one policy it runs with under pressure).
    emitted |= set(tessera.stat_docs("tlb_only", ["physmem.allocator=iceberg", 'os.swap={ capacity = "1GiB" }', "os.eviction=horizon"]))
    # A fault map (physmem.retired): its stats appear only with one.
    emitted |= set(tessera.stat_docs("tlb_only", ['physmem.retired={ kind = "uniform", fraction = 0.01 }']))
    # GTSM: the GT table with the gtsm policy (its slices, superpages and GT-PDE walks).
    emitted |= set(tessera.stat_docs("gtsm_ptlsim", ['pagetable.format.kind="gt_pde"', 'physmem.page_size="gtsm"']))
    # Direct compaction for THP (os.compaction).
    emitted |= set(tessera.stat_docs("tlb_only", ['physmem.page_size="thp"', "os.compaction={}"]))
    sections = _stats_sections()
    assert len(sections) > 10
    named = 0
    for f, text in sections:
        for name in re.findall(r"`([a-z][a-z0-9_]*(?:\.[a-z0-9_]+)+)`", text):
            if "." in name and name.split(".")[0] in {p.split(".")[0] for p in emitted}:
                named += 1
                assert name in emitted, f"{f.relative_to(REPO)} names {name}, which no preset emits"
    assert named > 10


@pytest.mark.parametrize("policy", ["base_only", "thp", "gtsm"])
def test_page_size_policy_docs_name_the_os_counters(policy):
    text = dict((f.stem, t) for f, t in _stats_sections() if f.parent.name == "page_size")[policy]
    assert "`os.pages_" in text and "physmem.pages" not in text
