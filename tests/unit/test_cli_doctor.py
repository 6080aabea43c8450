"""``skilleval doctor`` lists every scanner of the built-in checks with its path, version and health."""

from __future__ import annotations

import json
import stat
import subprocess
import sys
import types
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_skilleval import __version__, cli, tools
from pytest_skilleval.batch import BatchedCheck
from pytest_skilleval.tier1.dependencies import PIP_AUDIT
from pytest_skilleval.tier1.lint import RUFF, SHELLCHECK
from pytest_skilleval.tier1.secrets import GITLEAKS

SKILLEVAL = Path(sys.executable).parent / "skilleval"


def _doctor(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code = cli.main(["doctor", *args])
    out = capsys.readouterr().out
    return code, json.loads(out) if "--json" in args else out


def _tool(doc: dict[str, Any], name: str) -> dict[str, Any]:
    return next(t for t in doc["tools"] if t["name"] == name)


def test_lists_every_scanner_of_the_builtin_checks(capsys: pytest.CaptureFixture[str]) -> None:
    code, doc = _doctor(capsys, "--json")
    assert doc["errors"] == [] and doc["skilleval"] == __version__
    modules, _ = cli.tier1_modules()
    declared = {spec.name for cls in cli.check_classes(modules) if issubclass(cls, BatchedCheck) for spec in cls.tools}
    assert {"gitleaks", "ruff", "shellcheck", "pip-audit"} <= declared
    assert declared | {"detect-secrets"} <= {t["name"] for t in doc["tools"]}  # discovered, not a fixed list
    for name in ("ruff", "shellcheck", "gitleaks", "pip-audit", "detect-secrets"):
        t = _tool(doc, name)
        assert t["status"] == "ok" and t["version"][0].isdigit() and Path(t["path"]).exists(), (t["name"], t["status"], t["detail"])
    assert _tool(doc, "ruff")["required"] and _tool(doc, "detect-secrets")["required"]
    assert not _tool(doc, "gitleaks")["required"]  # detect-secrets replaces it
    assert not _tool(doc, "pip-audit")["required"] and _tool(doc, "pip-audit")["checks"] == ["dependencies (opt-in)"]
    assert code == (0 if doc["ok"] else 1)
    assert code == 0, [t for t in doc["tools"] if t["required"] and t["status"] != "ok"]


def test_a_missing_required_tool_fails_with_the_install_hint(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(RUFF.override_var, "/nonexistent/ruff")
    code, text = _doctor(capsys)
    assert code == 1
    assert "ruff: missing (its checks will be INCOMPLETE)" in text and f"install: {RUFF.install_hint}" in text
    assert "not ready: ruff required but not working" in text


def test_missing_optional_or_opt_in_tools_do_not_fail(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GITLEAKS.override_var, "/nonexistent/gitleaks")
    monkeypatch.setenv(PIP_AUDIT.override_var, "/nonexistent/pip-audit")
    code, doc = _doctor(capsys, "--json")
    assert _tool(doc, "gitleaks")["status"] == "missing" and _tool(doc, "pip-audit")["status"] == "missing"
    assert code == 0 and doc["ok"] is True


def test_a_tool_that_answers_its_version_but_cannot_scan_is_broken(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "shellcheck"
    fake.write_text('#!/bin/sh\nif [ "$1" = "--version" ]; then echo "version: 0.11.0"; exit 0; fi\necho "boom" >&2\nexit 3\n')
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(SHELLCHECK.override_var, str(fake))
    code, doc = _doctor(capsys, "--json")
    t = _tool(doc, "shellcheck")
    assert (t["status"], t["version"], t["path"]) == ("broken", "0.11.0", str(fake)) and "boom" in t["detail"]
    assert code == 1


def test_discovery_reads_the_tools_of_any_check_class() -> None:
    module = types.ModuleType("fake_checks")

    class FakeCheck(BatchedCheck):
        name = "fake"
        tools: ClassVar[tuple[tools.ToolSpec, ...]] = (
            tools.ToolSpec("python-probe", Path(sys.executable).name, "it is the interpreter"),
            tools.ToolSpec("absent-scanner", "no-such-scanner-xyz", "pip install absent-scanner"))

        def scan(self, skills, ctx):  # type: ignore[no-untyped-def]
            return {}

    FakeCheck.__module__ = module.__name__
    module.FakeCheck = FakeCheck  # type: ignore[attr-defined]
    statuses, errors = cli.doctor([module])
    by_name = {s.name: s for s in statuses}
    assert errors == [] and set(by_name) == {"python-probe", "absent-scanner"}
    assert by_name["python-probe"].ok and by_name["python-probe"].version == f"{sys.version_info[0]}.{sys.version_info[1]}.{sys.version_info[2]}"
    assert by_name["absent-scanner"].status == "missing" and by_name["absent-scanner"].required


def test_console_script_version_and_doctor() -> None:
    assert SKILLEVAL.exists(), "the skilleval console script is not installed: pip install -e ."
    out = subprocess.run([str(SKILLEVAL), "--version"], capture_output=True, text=True, check=True).stdout
    assert out.strip() == f"skilleval {__version__}"
    proc = subprocess.run([str(SKILLEVAL), "doctor"], capture_output=True, text=True)
    assert "ruff" in proc.stdout and "shellcheck" in proc.stdout and proc.returncode in (0, 1)
    assert subprocess.run([str(SKILLEVAL)], capture_output=True, text=True).returncode == 2  # no command: usage
