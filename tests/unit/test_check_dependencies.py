"""``dependencies`` (opt-in): pip-audit over the skill's declared requirements, never a false green.

No vulnerability service can be reached from this machine: pip-audit's real answer here is that
every package was skipped, which must be INCOMPLETE. What pip-audit reports when the service does
answer is tested with its JSON shape injected at the ``tools.run`` boundary.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from conftest import make_settings, manifest, rules, run_batched, run_check

from pytest_skilleval import tools
from pytest_skilleval.checks import CheckContext, CheckRegistry
from pytest_skilleval.results import Severity, Status
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import dependencies
from pytest_skilleval.tier1.dependencies import PIP_AUDIT, DependenciesCheck

VULNERABLE = "requests==2.19.0\njinja2==2.10  # templating\n"


def _report(*deps: dict[str, object]) -> str:
    return json.dumps({"dependencies": list(deps), "fixes": []})


def _vulnerable(name: str, version: str, vid: str, fix: str, alias: str) -> dict[str, object]:
    return {"name": name, "version": version,
            "vulns": [{"id": vid, "fix_versions": [fix], "aliases": [alias], "description": "Sends credentials\non redirect."}]}




@pytest.fixture
def fake_pip_audit(monkeypatch: pytest.MonkeyPatch) -> Callable[[Callable[[dict[str, str]], tools.ToolRun]], list[dict[str, str]]]:
    """Replace the pip-audit process with ``answer(pins) -> ToolRun``; returns the pins of each call."""

    def install(answer: Callable[[dict[str, str]], tools.ToolRun]) -> list[dict[str, str]]:
        calls: list[dict[str, str]] = []
        real_run = tools.run

        def run(tool: tools.ToolSpec, args: Sequence[str], **kw: object) -> tools.ToolRun:
            if tool is not PIP_AUDIT:
                return real_run(tool, args, **kw)  # type: ignore[arg-type]
            assert "--local" not in args and "-l" not in args  # never our own environment
            assert {"--no-deps", "--disable-pip"} <= set(args) and args[args.index("--format") + 1] == "json"
            req = Path(args[args.index("--requirement") + 1])
            pins = dict(line.split("==") for line in req.read_text().splitlines())
            calls.append(pins)
            return answer(pins)

        monkeypatch.setattr(tools, "run", run)
        return calls

    return install


def test_opt_in_only() -> None:
    registry = CheckRegistry()
    registry.add(DependenciesCheck())
    assert registry.select(None) == [] and [c.name for c in registry.select("+dependencies")] == ["dependencies"]


def test_no_declared_requirements_passes_without_pip_audit(make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIP_AUDIT.override_var, "/nonexistent/pip-audit")
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "scripts/run.py": "print(1)\n"}))
    assert result.status is Status.PASSED and result.findings == []
    assert result.metrics["requirements"] == 0


def test_real_pip_audit_here_is_incomplete_never_a_pass(make_skill: Callable[..., Skill]) -> None:
    assert tools.locate(PIP_AUDIT), f"pip-audit is not installed: {PIP_AUDIT.install_hint}"
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "requirements.txt": VULNERABLE}))
    assert result.status is not Status.PASSED or result.findings, "a false green"
    if result.status is Status.INCOMPLETE:  # this machine: the JSON API answers 404, every package is skipped
        assert result.reason and "could not audit 2 of 2" in result.reason and "answered for none" in result.reason
        assert "requests==2.19.0 (Dependency not found on PyPI" in result.reason
        assert result.metrics["audited"] == 0 and result.metrics["unaudited"] == 2
    else:  # a machine that reaches the service: these pins have well-known advisories
        assert "dependencies.known-vulnerability" in rules(result)


def test_unreachable_service_is_incomplete(tmp_path: Path, make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch) -> None:
    real = tools.locate(PIP_AUDIT)
    assert real, f"pip-audit is not installed: {PIP_AUDIT.install_hint}"
    wrapper = tmp_path / "pip-audit-osv"  # the real tool against OSV, which does not resolve here
    wrapper.write_text(f'#!/bin/sh\nexec {real} "$@" --vulnerability-service osv --osv-url https://osv.invalid/v1/query\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(PIP_AUDIT.override_var, str(wrapper))
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "requirements.txt": VULNERABLE}))
    assert result.status is Status.INCOMPLETE
    assert result.reason and result.reason.startswith("pip-audit: crashed") and "ConnectionError" in result.reason


def test_missing_pip_audit_is_incomplete_with_install_hint(make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PIP_AUDIT.override_var, "/nonexistent/pip-audit")
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "requirements.txt": VULNERABLE}))
    assert result.status is Status.INCOMPLETE and result.reason and PIP_AUDIT.install_hint in result.reason


def test_known_vulnerabilities_are_high_with_advisory_and_fix(make_skill: Callable[..., Skill], fake_pip_audit) -> None:  # type: ignore[no-untyped-def]
    calls = fake_pip_audit(lambda pins: tools.ToolRun(1, _report(
        _vulnerable("requests", "2.19.0", "PYSEC-2018-28", "2.20.0", "CVE-2018-18074"),
        {"name": "jinja2", "version": "2.10", "vulns": []}), "", 0.1))
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "requirements.txt": VULNERABLE}))
    assert calls == [{"jinja2": "2.10", "requests": "2.19.0"}]
    assert result.status is Status.PASSED and len(result.findings) == 1  # completed; the gate fails it on HIGH
    f = result.findings[0]
    assert (f.rule, f.severity, f.file, f.line) == ("dependencies.known-vulnerability", Severity.HIGH, "requirements.txt", 1)
    assert "PYSEC-2018-28" in f.message and "CVE-2018-18074" in f.message and "fixed in 2.20.0" in f.message
    assert f.suggestion == "upgrade requests to 2.20.0"
    assert result.metrics == {"requirements": 2, "pinned": 2, "audited": 2, "unaudited": 0}


def test_a_partly_skipped_audit_is_incomplete_but_keeps_its_findings(make_skill: Callable[..., Skill], fake_pip_audit) -> None:  # type: ignore[no-untyped-def]
    fake_pip_audit(lambda pins: tools.ToolRun(1, _report(
        _vulnerable("requests", "2.19.0", "GHSA-x84v-xcm2-53pg", "2.20.0", "CVE-2018-18074"),
        {"name": "jinja2", "skip_reason": "Dependency not found on PyPI and could not be audited: jinja2 (2.10)"}), "", 0.1))
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "requirements.txt": VULNERABLE}))
    assert result.status is Status.INCOMPLETE and result.reason
    assert "could not audit 1 of 2" in result.reason and "jinja2==2.10" in result.reason and "none" not in result.reason
    assert rules(result) == {"dependencies.known-vulnerability"}


def test_output_that_is_not_a_report_is_incomplete(make_skill: Callable[..., Skill], fake_pip_audit) -> None:  # type: ignore[no-untyped-def]
    fake_pip_audit(lambda pins: tools.ToolRun(0, "No known vulnerabilities found\n", "", 0.1))
    result = run_check(DependenciesCheck(), make_skill({"SKILL.md": manifest(), "requirements.txt": VULNERABLE}))
    assert result.status is Status.INCOMPLETE and result.reason and result.reason.startswith("pip-audit: bad-output")


def test_what_is_declared(make_skill: Callable[..., Skill], fake_pip_audit) -> None:  # type: ignore[no-untyped-def]
    calls = fake_pip_audit(lambda pins: tools.ToolRun(0, _report(
        *({"name": n, "version": v, "vulns": []} for n, v in pins.items())), "", 0.1))
    skill = make_skill({
        "SKILL.md": manifest(),
        "requirements.txt": "# tools\nRequests[socks]==2.31.0 --hash=sha256:abc ; python_version >= '3.8'\n"
                            "pyyaml>=6\n-r scripts/requirements-extra.txt\n-r ../../outside.txt\n--index-url https://example.org\n"
                            "-e git+https://example.org/x.git#egg=x\nlocal @ file:///tmp/local.whl\n",
        "scripts/requirements-extra.txt": "numpy==1.26.4 \\\n    --hash=sha256:def\n",
        "tools/pyproject.toml": '[project]\nname = "t"\ndependencies = ["rich==13.7.1", "click"]\n',
        "broken/pyproject.toml": "[project\n",
        "evals/files/requirements.txt": "django==1.0\n"})
    result = run_check(DependenciesCheck(), skill)
    assert calls == [{"numpy": "1.26.4", "requests": "2.31.0", "rich": "13.7.1"}]  # canonical names, each pin once
    assert result.status is Status.PASSED
    unpinned = sorted((f.file, f.line) for f in result.findings if f.rule == "dependencies.unpinned")
    assert unpinned == [("requirements.txt", 3), ("tools/pyproject.toml", 3)]
    assert sorted(f.line for f in result.findings if f.rule == "dependencies.unauditable") == [7, 8]
    assert "dependencies.invalid-pyproject" in rules(result)
    assert all(f.severity is Severity.LOW for f in result.findings)
    assert result.metrics == {"requirements": 7, "pinned": 3, "audited": 3, "unaudited": 0}


def test_one_pip_audit_run_per_batch_unless_pins_conflict(make_skill: Callable[..., Skill], fake_pip_audit) -> None:  # type: ignore[no-untyped-def]
    calls = fake_pip_audit(lambda pins: tools.ToolRun(0, _report(
        *({"name": n, "version": v, "vulns": []} for n, v in pins.items())), "", 0.1))
    pins = ["requests==2.31.0\nrich==13.7.1\n", "requests==2.31.0\n", "", "requests==2.32.3\n"]
    skills = [make_skill({"SKILL.md": manifest(f"skill-{n}"), **({"requirements.txt": p} if p else {})}, name=f"skill-{n}")
              for n, p in enumerate(pins)]
    results, batcher = run_batched(DependenciesCheck(), skills)
    assert calls == [{"requests": "2.31.0", "rich": "13.7.1"}, {"requests": "2.32.3"}]  # a package never twice in one run
    assert [r.status for r in results] == [Status.PASSED] * 4
    assert [r.metrics["pinned"] for r in results] == [2, 1, 0, 1]


def test_real_batch_starts_pip_audit_once(tmp_path: Path, make_skill: Callable[..., Skill], monkeypatch: pytest.MonkeyPatch) -> None:
    real = tools.locate(PIP_AUDIT)
    assert real, f"pip-audit is not installed: {PIP_AUDIT.install_hint}"
    log = tmp_path / "calls.log"
    wrapper = tmp_path / "pip-audit-wrapper"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec {real} "$@"\n')
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(PIP_AUDIT.override_var, str(wrapper))
    extra = ["click==8.1.7", "rich==13.7.1", "pyyaml==6.0.1"]
    skills = [make_skill({"SKILL.md": manifest(f"skill-{n}"), "requirements.txt": f"requests==2.31.0\n{extra[n]}\n"},
                         name=f"skill-{n}") for n in range(3)]
    results = DependenciesCheck()._scan_now(skills, CheckContext(settings=make_settings()))
    assert len([line for line in log.read_text().splitlines() if "--requirement" in line]) == 1
    assert all(r.status is not Status.PASSED or r.findings for r in results.values())


def test_cached_results_expire_daily() -> None:
    versions = DependenciesCheck().tool_versions()
    assert set(versions) == {"pip-audit", "day"}
    assert dependencies.DependenciesCheck.default_enabled is False
