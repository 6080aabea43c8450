"""A scanner's version is asked once per executable, however many threads ask; gitleaks' beside its scan.

The real gitleaks runs behind a wrapper that only logs when each of its runs starts and ends.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from conftest import manifest, run_batched, write_skill

from pytest_skilleval import tools
from pytest_skilleval.results import Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.secrets import GITLEAKS, SecretsCheck


def _logging_gitleaks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    real = tools.locate(GITLEAKS)
    assert real, f"gitleaks is not installed: {GITLEAKS.install_hint}"
    log = tmp_path / "runs.log"
    wrapper = tmp_path / "bin" / "gitleaks"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\necho "start $1 $(date +%s.%N)" >> {log}\n"{real}" "$@"\nrc=$?\n'
                       f'echo "end $1 $(date +%s.%N)" >> {log}\nexit $rc\n')
    wrapper.chmod(0o755)
    monkeypatch.setenv(GITLEAKS.override_var, str(wrapper))
    return log


def _runs(log: Path) -> dict[str, list[tuple[float, float]]]:
    """(start, end) of each logged run, by its first argument."""
    runs: dict[str, list[tuple[float, float]]] = {}
    started: dict[str, list[float]] = {}
    for line in log.read_text().splitlines():
        edge, command, at = line.split()
        if edge == "start":
            started.setdefault(command, []).append(float(at))
        else:
            runs.setdefault(command, []).append((started[command].pop(0), float(at)))
    return runs


def test_threads_asking_at_once_share_one_probe(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = _logging_gitleaks(tmp_path, monkeypatch)
    answers: list[str | None] = []
    askers = [threading.Thread(target=lambda: answers.append(tools.version(GITLEAKS))) for _ in range(3)]
    for t in askers:
        t.start()
    for t in askers:
        t.join(60)
    assert len(answers) == 3 and len(set(answers)) == 1 and answers[0]
    assert len(_runs(log)["--version"]) == 1


def test_gitleaks_is_asked_its_version_beside_its_scan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """gitleaks compiles its rules even to print its version (~0.4 s): asked after the scan, that was
    the first secrets item's wait a second time."""
    log = _logging_gitleaks(tmp_path, monkeypatch)
    roots = [write_skill(tmp_path, f"skill-{n}", {"SKILL.md": manifest(f"skill-{n}")}) for n in range(3)]
    results, _ = run_batched(SecretsCheck(), [Skill(root=r, key=r.name) for r in roots])
    assert {r.status for r in results} == {Status.PASSED}
    assert {tuple(r.tools.items()) for r in results} == {(("gitleaks", tools.version(GITLEAKS)),)}
    runs = _runs(log)
    assert len(runs["--version"]) == 1 and len(runs["dir"]) == 1, runs
    (v_start, v_end), (d_start, d_end) = runs["--version"][0], runs["dir"][0]
    # the probe starts before the scan and the two overlap (each takes ~0.4 s: gitleaks' rule compile)
    assert v_start < d_end and d_start < v_end, f"the version probe ran alone: {runs}"
