"""`examples/mosaic_pages.toml` shows Mosaic Pages' mechanisms at work when
run with the command it documents, and a sampled scan that never runs is
reported as a warning in the result and the summary."""

from __future__ import annotations

import json
import math
import shlex

import pytest

import tessera
from conftest import REPO
from tessera.config import loads_toml
from tessera.result import load_result
from tessera.summary import fmt, pct

EXAMPLE = REPO / "examples" / "mosaic_pages.toml"
ICE = "physmem.allocator.iceberg"
HZ = "os.eviction.horizon"
WARNING = "os.eviction: the linux_sampled scan's period"


def _documented_command() -> list[str]:
    """The command under the example's ``# Run`` comment, without ``tessera``."""
    lines = EXAMPLE.read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("# Run"))
    cmd = next(line[1:].strip() for line in lines[start + 1 :] if line[1:].strip().startswith("tessera "))
    args = shlex.split(cmd)
    assert args[:2] == ["tessera", "run"] and "examples/mosaic_pages.toml" in args
    return args[1:]


def test_the_documented_command_exercises_iceberg_horizon_and_the_mosaic_tlb(cli):
    args = [str(EXAMPLE) if a == "examples/mosaic_pages.toml" else a for a in _documented_command()]
    r = cli(*args, "--out", "r.json")
    assert r.code == 0, r.err
    res = load_result("r.json")
    c = res.counters
    # Before: the documented command gave no conflict, no eviction and no scan.
    assert c[f"{ICE}.conflicts"] > 1000
    assert c["os.evictions"] > 1000 and c["swap.pages_in"] > 1000 and c["os.shootdowns"] == c["os.evictions"]
    assert c[f"{HZ}.live_evictions"] > 0 and c[f"{HZ}.ghost_evictions"] > 0
    assert c[f"{HZ}.scans"] >= 2 and c[f"{HZ}.flushes"] > 0
    assert 0.97 < res.derived[f"{ICE}.first_conflict_load"] < 1.0
    assert c["mmu.shadow.mosaic4.toc_hits"] > 0 and c["mmu.shadow.mosaic4.subpage_misses"] > 0
    assert res.warnings == [] and "warnings" not in json.loads(res.to_json())
    # The prototype's pool geometry and hashing, only fewer buckets.
    alloc = res.config["physmem"]["allocator"]
    assert (alloc["front"], alloc["back"], alloc["choices"], alloc["hash"], alloc["choice"]) == (
        56, 8, 6, "xxhash", "partitioned")
    for section in ("Memory pressure", "Eviction: horizon (linux_sampled)", "Iceberg allocator", "Mosaic TLBs"):
        assert f"\n{section}" in r.out, section
    assert "warning:" not in r.out
    # docs/mosaic-pages.md quotes this run.
    doc = " ".join((REPO / "docs" / "mosaic-pages.md").read_text(encoding="utf-8").split())
    quoted = (
        f"first conflict at {pct(res.derived[f'{ICE}.first_conflict_load'])} of the pool, evicts "
        f"{fmt(c['os.evictions'])} pages ({fmt(c[f'{HZ}.live_evictions'])} live, {fmt(c[f'{HZ}.ghost_evictions'])} "
        f"ghosts), reads {fmt(c['swap.pages_in'])} back from swap and scans accessed bits {c[f'{HZ}.scans']} times"
    )
    # The docs write a space before the percent sign.
    assert quoted.replace("%", " %") in doc
    assert (f"misses on {pct(res.derived['mmu.shadow.mosaic4.miss_rate'])} of lookups where the machine's vanilla TLB "
            f"of the same size misses on {pct(res.derived['mmu.dtlb.miss_rate'])}").replace("%", " %") in doc


def _scan_run(period: int) -> tessera.Result:
    """The example with a scan every ``period`` translations, 3000 accesses."""
    sets = ["os.eviction.accesses_per_second=1000", f"os.eviction.period_ms={period}"]
    return tessera.simulate(EXAMPLE, synthetic={"pattern": "hotcold", "accesses": 3000, "footprint": "4MiB"},
                            overrides=sets)


def test_a_scan_that_never_ran_is_a_warning_exactly_when_the_period_exceeds_the_run():
    clock = _scan_run(1_000_000).counters[f"{HZ}.clock"]
    assert clock >= 3000
    late = _scan_run(clock + 1)
    assert late.counters[f"{HZ}.scans"] == 0
    assert len(late.warnings) == 1 and late.warnings[0].startswith(WARNING)
    assert f"{clock + 1:,} translations) is longer than the run ({clock:,} translations)" in late.warnings[0]
    on_time = _scan_run(clock // 2)
    assert on_time.counters[f"{HZ}.scans"] >= 1 and on_time.warnings == []
    # Exact times, or no Horizon LRU at all: nothing to warn about.
    assert tessera.simulate(EXAMPLE, synthetic={"pattern": "hotcold", "accesses": 3000, "footprint": "4MiB"},
                            overrides=['os.eviction={kind="horizon"}']).warnings == []


def test_the_warning_is_recorded_in_the_result_and_shown_in_the_summary(cli, tmp_path):
    # The prototype's 1 s period on a run of 20,000 accesses: the example as it was.
    r = cli("run", "--config", EXAMPLE, "--synthetic", "hotcold", "--accesses", "20000", "--footprint", "8MiB",
            "--set", "os.eviction.period_ms=1000", "--out", "r.json")
    assert r.code == 0, r.err
    data = json.loads((tmp_path / "r.json").read_text())
    assert len(data["warnings"]) == 1 and data["warnings"][0].startswith(WARNING)
    assert " ".join(r.out.split()).count("warning: " + WARNING) == 1
    # Read back, and from a file written before results carried warnings.
    assert load_result(tmp_path / "r.json").warnings == data["warnings"]
    del data["warnings"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    old = load_result(tmp_path / "old.json")
    assert old.warnings == load_result(tmp_path / "r.json").warnings
    assert json.loads(old.to_json())["warnings"] == old.warnings


def test_a_quiet_run_still_says_its_warnings(cli):
    r = cli("run", "--config", EXAMPLE, "--synthetic", "hotcold", "--accesses", "20000", "--footprint", "8MiB",
            "--set", "os.eviction.period_ms=1000", "--quiet")
    assert r.code == 0 and r.out == "", r.err
    assert " ".join(r.err.split()).count("tessera: warning: " + WARNING) == 1


def test_the_example_resolves_and_its_shadow_changes_nothing():
    cfg = loads_toml(tessera.resolve_config(EXAMPLE))
    assert cfg["os"]["eviction"]["scan"] == "linux_sampled"
    syn = {"pattern": "hotcold", "accesses": 20_000, "footprint": "80MiB"}
    with_shadow = tessera.simulate(EXAMPLE, synthetic=syn)
    assert with_shadow.counters[f"{ICE}.pool_frames"] == 256 * 64
    # The shadow only watches: the machine's own counters are those of the machine without it.
    text = EXAMPLE.read_text(encoding="utf-8")
    plain = tessera.simulate(text[: text.index("[mmu.shadow.mosaic4]")], synthetic=syn)
    own = {k: v for k, v in with_shadow.counters.items() if not k.startswith("mmu.shadow.")}
    assert own == plain.counters
    assert not math.isnan(with_shadow.derived["mmu.shadow.mosaic4.miss_rate"])


@pytest.mark.parametrize("name", ["README.md", "docs/mosaic-pages.md"])
def test_the_docs_do_not_promise_the_old_example(name):
    text = (REPO / name).read_text(encoding="utf-8")
    assert "--footprint 4400MiB" not in text
