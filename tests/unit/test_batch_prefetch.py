"""Batched scanners start with the run, beside the other checks, and an item waits only for its own
skill's scan (batch.py: ``Batcher.prefetch``).

``Gated`` is a fake scanner only to hold a scan open on demand, which no real scanner does; the
gitleaks test runs the real scanner through the same path and compares it with a plain run.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import make_settings, manifest, run_batched, write_skill

from pytest_skilleval import tools
from pytest_skilleval.batch import BatchedCheck, Batcher
from pytest_skilleval.checks import CheckContext
from pytest_skilleval.results import CheckResult, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.secrets import GITLEAKS, SecretsCheck

GITHUB_PAT = "ghp_R7kT2mQ9vX4bN8cL1pW6zD3fH5jS0yA2eU7i"


class Gated(BatchedCheck):
    """Records each scan (its skills, its thread); a scan of more than four skills waits for ``release``."""

    name = "gated"
    tier = 1
    lead_batch_from = 3

    def __init__(self) -> None:
        self.scans: list[tuple[list[str], str]] = []
        self.release = threading.Event()

    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        self.scans.append(([s.root.name for s in skills], threading.current_thread().name))
        if len(skills) > 4 and not self.release.wait(30):
            raise RuntimeError("never released")
        return {s.root: self.result(metrics={"batch": len(skills)}) for s in skills}


def _batcher(skills: list[Skill], check: BatchedCheck) -> tuple[Batcher, CheckContext]:
    by_root = {s.root: s for s in skills}
    batcher = Batcher(load_skill=by_root.__getitem__, cache=None, coord_dir=None)
    batcher.set_targets(check.name, list(by_root))
    return batcher, CheckContext(settings=make_settings(), batcher=batcher)


def _until(condition, timeout: float = 10.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.005)


def test_scans_start_before_any_item_asks_and_the_first_skill_waits_only_for_the_lead_batch(tmp_path: Path) -> None:
    skills = [Skill(root=tmp_path / f"s{n}", key=f"s{n}") for n in range(6)]
    check = Gated()
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    _until(lambda: len(check.scans) == 2)  # nobody has asked for a result yet
    assert sorted(names for names, _ in check.scans) == [["s0"], ["s1", "s2", "s3", "s4", "s5"]]
    assert all(thread != threading.main_thread().name for _, thread in check.scans)
    first = check.run(skills[0], ctx)  # the rest of the catalog is still being scanned
    assert first.metrics["batch"] == 1 and not check.release.is_set()
    check.release.set()
    assert [check.run(s, ctx).metrics["batch"] for s in skills[1:]] == [5] * 5
    batcher.close()
    assert len(check.scans) == 2, "no skill was scanned twice"
    assert not [t for t in threading.enumerate() if t.name.startswith("skilleval-scan")]


def test_the_lead_batch_is_a_sixteenth_of_the_catalog(tmp_path: Path) -> None:
    skills = [Skill(root=tmp_path / f"s{n:02d}", key=f"s{n:02d}") for n in range(64)]
    check = Gated()
    check.release.set()
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    assert {check.run(s, ctx).metrics["batch"] for s in skills} == {4, 60}
    batcher.close()
    assert sorted(len(names) for names, _ in check.scans) == [4, 60]
    assert ["s00", "s01", "s02", "s03"] in [names for names, _ in check.scans]


def test_a_small_catalog_is_one_scan(tmp_path: Path) -> None:
    skills = [Skill(root=tmp_path / f"s{n}", key=f"s{n}") for n in range(2)]
    check = Gated()
    check.release.set()
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    assert [check.run(s, ctx).metrics["batch"] for s in skills] == [2, 2]
    batcher.close()
    assert [names for names, _ in check.scans] == [["s0", "s1"]]


def test_closing_waits_for_the_scan_in_flight_and_drops_the_rest(tmp_path: Path) -> None:
    """A run that ends early (maxfail, Ctrl-C) leaves no scanner thread, and its process, behind."""
    skills = [Skill(root=tmp_path / f"s{n}", key=f"s{n}") for n in range(10)]
    check = Gated()
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    _until(lambda: len(check.scans) == 2)
    threading.Timer(0.2, check.release.set).start()
    batcher.close()
    assert check.release.is_set()
    assert not [t for t in threading.enumerate() if t.name.startswith("skilleval-scan")]


def test_a_crash_of_the_scan_itself_is_the_item_s_error(tmp_path: Path) -> None:
    class Broken(Gated):
        def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
            raise KeyError("bug in the check")

    skills = [Skill(root=tmp_path / f"s{n}", key=f"s{n}") for n in range(4)]
    check = Broken()
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    results = [check.run(s, ctx) for s in skills]
    batcher.close()
    assert {r.status for r in results} == {Status.ERROR}
    assert all("KeyError" in (r.reason or "") for r in results)


def test_gitleaks_scanning_a_lead_batch_apart_finds_what_one_scan_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert tools.locate(GITLEAKS), f"gitleaks is not installed: {GITLEAKS.install_hint}"
    roots = [write_skill(tmp_path, f"skill-{n}", {
        "SKILL.md": manifest(f"skill-{n}"),
        **({"references/setup.md": f"token: {GITHUB_PAT}\n"} if n in (0, 3) else {})}) for n in range(5)]
    skills = [Skill(root=r, key=r.name) for r in roots]
    check = SecretsCheck()
    plain, _ = run_batched(check, [Skill(root=r, key=r.name) for r in roots])
    monkeypatch.setattr(SecretsCheck, "lead_batch_from", 2)
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    ahead = [check.run(s, ctx) for s in skills]
    batcher.close()
    assert batcher.scanned == 5
    strip = lambda r: r.model_copy(update={"duration_s": None})  # noqa: E731
    assert [strip(r) for r in ahead] == [strip(r) for r in plain]
    assert [sorted({f.rule for f in r.findings}) for r in ahead] == [["secrets.github-pat"], [], [], ["secrets.github-pat"], []]
    assert all(r.tools == {"gitleaks": tools.version(GITLEAKS)} for r in ahead)


RECORDING_PLUGIN = '''
import threading, time, pytest
from pytest_skilleval.batch import BatchedCheck

EVENTS = []

class Recorded(BatchedCheck):
    name = "recorded"
    def scan(self, skills, ctx):
        EVENTS.append(("scan", threading.current_thread().name, [s.root.name for s in skills]))
        time.sleep(0.3)  # a scanner's start-up
        return {s.root: self.result() for s in skills}
    def run(self, skill, ctx):
        EVENTS.append(("item", threading.current_thread().name, [skill.root.name]))
        return super().run(skill, ctx)

@pytest.hookimpl
def pytest_skilleval_checks(config):
    return [Recorded()]

def pytest_sessionfinish(session):
    with open("events.txt", "w") as out:
        out.writelines(f"{kind} {thread} {' '.join(names)}\\n" for kind, thread, names in EVENTS)
'''


@pytest.mark.parametrize("collect_only", [False, True])
def test_a_run_starts_its_scans_with_the_run_loop(pytester: pytest.Pytester, collect_only: bool) -> None:
    for n in range(3):
        write_skill(pytester.path / "skills", f"skill-{n}", {"SKILL.md": manifest(f"skill-{n}")})
    pytester.makeconftest(RECORDING_PLUGIN)
    args = ["--skills=skills", "--skilleval-checks=schema,recorded", "-p", "no:cacheprovider", "-q"]
    result = pytester.runpytest_subprocess(*args, *(["--collect-only"] if collect_only else []))
    events = [line.split(" ", 2) for line in (pytester.path / "events.txt").read_text().splitlines()]
    if collect_only:
        assert result.ret == 0 and events == [], "collecting alone starts no scanner"
        return
    result.assert_outcomes(passed=6)
    # the scan's thread is started with the loop; when it first runs beside the items is the OS's choice
    assert [e for e in events if e[0] == "scan"] == [["scan", "skilleval-scan_0", "skill-0 skill-1 skill-2"]], events
    assert [e for e in events if e[0] == "item"] == [["item", "MainThread", f"skill-{n}"] for n in range(3)]


def _logging_gitleaks(tmp_path: Path) -> Path:
    """The real gitleaks behind a wrapper that logs when each of its runs starts and ends."""
    real = tools.locate(GITLEAKS)
    assert real, f"gitleaks is not installed: {GITLEAKS.install_hint}"
    log = tmp_path / "runs.log"
    wrapper = tmp_path / "bin" / "gitleaks"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "start $1 $(date +%s.%N)" >> {log}\n"{real}" "$@"\nrc=$?\n'
                       f'echo "end $1 $(date +%s.%N)" >> {log}\nexit $rc\n')
    wrapper.chmod(0o755)
    return wrapper


def test_gitleaks_is_asked_its_version_beside_its_scan_and_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gitleaks compiles its rules even to print its version (~0.4 s): asked after the scan, that is
    the first item's wait again; asked by two scans at once, it would be two probes."""
    wrapper = _logging_gitleaks(tmp_path)
    monkeypatch.setenv(GITLEAKS.override_var, str(wrapper))
    monkeypatch.setattr(SecretsCheck, "lead_batch_from", 2)
    roots = [write_skill(tmp_path, f"skill-{n}", {"SKILL.md": manifest(f"skill-{n}")}) for n in range(3)]
    skills = [Skill(root=r, key=r.name) for r in roots]
    check = SecretsCheck()
    batcher, ctx = _batcher(skills, check)
    batcher.prefetch([check], ctx)
    results = [check.run(s, ctx) for s in skills]
    batcher.close()
    assert {r.status for r in results} == {Status.PASSED}
    runs: dict[str, list[tuple[float, float]]] = {}
    started: dict[str, list[float]] = {}
    for line in (tmp_path / "runs.log").read_text().splitlines():
        edge, command, at = line.split()
        if edge == "start":
            started.setdefault(command, []).append(float(at))
        else:
            runs.setdefault(command, []).append((started[command].pop(0), float(at)))
    assert len(runs["--version"]) == 1 and len(runs["dir"]) == 2, runs
    (v_start, v_end), = runs["--version"]
    assert any(start < v_end and v_start < end for start, end in runs["dir"]), f"the version probe ran alone: {runs}"
