"""``dependencies`` (opt-in): the skill's declared Python requirements have no known vulnerabilities.

What is audited: every ``requirements*.txt`` outside eval folders (``-r`` includes followed inside
the skill only), and ``[project].dependencies`` of each ``pyproject.toml``. One of these that could not be
read (over the size cap, hard-linked, not UTF-8) makes the result INCOMPLETE, naming it: a requirements file
through ``Check.reads``, an include of another name here, as its pins were never audited. Never ``pip-audit
--local``, which would audit *our* environment instead of the skill's.

How: we parse the requirements ourselves and hand pip-audit one file of exact pins
(``name==version``) for the whole batch, so one process audits every skill. The flags:

* ``--no-deps --disable-pip``: audit exactly the pins, without building a virtualenv (0.7 s, not
  7 s). Transitive dependencies are not audited; an unpinned requirement cannot be (pip-audit
  refuses it, and which version an agent installs is unknown), so it is a LOW finding instead.
* no ``--strict``: it aborts at the first skipped package and loses the report; we apply the same
  strictness per package ourselves, below.
* pip-audit rejects a file naming a package twice, so pins of one package at two versions go
  to separate runs (rare: only when two skills of a batch disagree).

Honesty: a package the service did not answer for carries a ``skip_reason``. Behind a mirror
without PyPI's JSON API *every* package comes back skipped while pip-audit prints "No known
vulnerabilities found" and exits 0. Any skipped pin makes the result INCOMPLETE with that reason,
and an unreachable service (pip-audit crashes) does too — never a pass. Results are cached for a
day at most: the advisory database changes while the skill does not.
"""

from __future__ import annotations

import datetime
import json
import posixpath
import re
import tempfile
import tomllib
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_skilleval import tools
from pytest_skilleval.batch import BatchedCheck
from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill

PIP_AUDIT = tools.ToolSpec("pip-audit", "pip-audit", "pip install pip-audit  (or: pip install 'pytest-skilleval[scanners]')",
                           )
TIMEOUT_S = 300.0
SOCKET_TIMEOUT_S = 15
_REQ_FILE = re.compile(r"^requirements[\w.-]*\.txt$", re.IGNORECASE)
_OPTION = re.compile(r"\s--?[a-z][\w-]*(=\S+|\s+\S+)?", re.IGNORECASE)  # --hash=..., trailing per-line options


@dataclass(frozen=True)
class Pin:
    name: str  # canonical
    version: str
    file: str
    line: int | None
    text: str  # the requirement as written, for messages


@dataclass
class Declared:
    pins: list[Pin] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    count: int = 0
    #: (file, why) of each ``-r`` include that could not be read and is not itself a requirements*.txt
    #: (those are Check.reads, and unread_evidence names them): its pins were never audited.
    unread_includes: list[tuple[str, str]] = field(default_factory=list)


def is_declaration(rel: str) -> bool:
    """A file :func:`declared` reads requirements from: ``requirements*.txt`` or ``pyproject.toml``."""
    name = posixpath.basename(rel)
    return bool(_REQ_FILE.match(name)) or name == "pyproject.toml"


def _req_lines(skill: Skill, rel: str, seen: set[str], unread: list[tuple[str, str]]) -> Iterator[tuple[str, int, str]]:
    """(file, line, requirement) of a requirements file, following ``-r`` includes inside the skill; an
    include that could not be read is added to ``unread`` with why."""
    if rel in seen:
        return
    seen.add(rel)
    text = skill.text(rel)
    if text is None:
        if not is_declaration(rel):
            name = frozenset({posixpath.basename(rel)})
            unread += [(r, why) for r, why in skill.unread_files(name, accepts=rel.__eq__) if r == rel] or [(rel, "not readable")]
        return
    logical, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not logical:
            start = number
        if raw.endswith("\\"):
            logical += raw[:-1] + " "
            continue
        line, logical = (logical + raw).split(" #", 1)[0].strip(), ""
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r", "--requirement")):
            target = re.sub(r"^(-r|--requirement)[= ]?\s*", "", line)
            include = skill.entry(posixpath.join(posixpath.dirname(rel), target))  # None when outside the skill
            if include is not None:
                yield from _req_lines(skill, include.rel, seen, unread)
            continue
        if line.startswith(("-e", "--editable")):
            yield rel, start, line  # a local or VCS checkout: reported below as not auditable
            continue
        if line.startswith("-"):
            continue  # --index-url, -c constraints, --hash on its own line: options, not requirements
        yield rel, start, _OPTION.sub("", " " + line).strip()


def _pyproject_lines(skill: Skill, rel: str, problems: list[Finding]) -> Iterator[tuple[str, int | None, str]]:
    text = skill.text(rel)
    if text is None:
        return
    try:
        project = tomllib.loads(text).get("project")
    except tomllib.TOMLDecodeError as exc:
        problems.append(Finding(rule="dependencies.invalid-pyproject", severity=Severity.LOW, file=rel,
                                message=f"pyproject.toml is not valid TOML ({exc}); its dependencies were not audited"))
        return
    deps = project.get("dependencies") if isinstance(project, dict) else None
    for dep in deps if isinstance(deps, list) else []:
        line = next((n for n, t in enumerate(text.splitlines(), 1) if str(dep) in t), None)
        yield rel, line, str(dep)


def declared(skill: Skill) -> Declared:
    # imported by the first skill checked, not when the plugin loads (every pytest run loads it)
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.utils import canonicalize_name

    out = Declared()
    seen: set[str] = set()
    lines: list[tuple[str, int | None, str]] = []
    for entry in skill.files():
        if _REQ_FILE.match(entry.name):
            lines.extend(_req_lines(skill, entry.rel, seen, out.unread_includes))
        elif entry.name == "pyproject.toml":
            lines.extend(_pyproject_lines(skill, entry.rel, out.findings))
    for rel, line, text in lines:
        out.count += 1
        try:
            req = Requirement(text)
        except InvalidRequirement:
            req = None
        if req is None or req.url is not None:
            out.findings.append(Finding(rule="dependencies.unauditable", severity=Severity.LOW, file=rel, line=line,
                                        message=f"cannot audit {text[:80]!r}: not a name==version requirement "
                                                "(a URL, a local path or an editable checkout)",
                                        suggestion="declare dependencies as name==version pins from PyPI"))
            continue
        specs = list(req.specifier)
        if len(specs) == 1 and specs[0].operator in ("==", "===") and "*" not in specs[0].version:
            out.pins.append(Pin(canonicalize_name(req.name), specs[0].version, rel, line, text))
        else:
            out.findings.append(Finding(rule="dependencies.unpinned", severity=Severity.LOW, file=rel, line=line,
                                        message=f"{text[:80]!r} is not pinned to one version, so the version an agent "
                                                "installs cannot be audited",
                                        suggestion=f"pin it: {req.name}==<version>"))
    return out


def _layers(pins: Sequence[Pin]) -> list[dict[str, str]]:
    """Unique (name, version) pairs split so that no run names a package twice."""
    layers: list[dict[str, str]] = []
    for name, version in sorted({(p.name, p.version) for p in pins}):
        layer = next((layer for layer in layers if name not in layer), None)
        if layer is None:
            layer = {}
            layers.append(layer)
        layer[name] = version
    return layers


def audit(layer: dict[str, str]) -> dict[str, dict[str, Any]]:
    """pip-audit's report entry per canonical name, for one file of pins."""
    from packaging.utils import canonicalize_name

    with tempfile.TemporaryDirectory(prefix="skilleval-") as tmp:
        req = Path(tmp) / "requirements.txt"
        req.write_text("".join(f"{n}=={v}\n" for n, v in sorted(layer.items())), encoding="utf-8")
        # exit 1 is "vulnerabilities found" *or* a failure: the report tells them apart
        run = tools.run(PIP_AUDIT, ["--requirement", str(req), "--no-deps", "--disable-pip", "--format", "json",
                                    "--progress-spinner", "off", "--timeout", str(SOCKET_TIMEOUT_S)],
                        timeout=TIMEOUT_S, cwd=Path(tmp), ok_codes=(0, 1))
    try:
        doc = json.loads(run.stdout)
        deps = doc["dependencies"]
    except (json.JSONDecodeError, KeyError, TypeError):
        tail = " | ".join((run.stderr or run.stdout).strip().splitlines()[-2:])[:400]
        kind = "crashed" if run.returncode else "bad-output"
        raise tools.ToolError(PIP_AUDIT, kind, f"exit code {run.returncode}, no JSON report: {tail}") from None
    return {canonicalize_name(str(d.get("name", ""))): d for d in deps if isinstance(d, dict)}


class DependenciesCheck(BatchedCheck):
    name = "dependencies"
    description = "pip-audit of the skill's declared requirements (opt-in; needs a reachable vulnerability service)"
    default_enabled = False
    tools: ClassVar[tuple[tools.ToolSpec, ...]] = (PIP_AUDIT,)
    cache_version = "2"  # 2: an unread -r include is INCOMPLETE (a cached pass of 1 may have skipped one)
    # an unread requirements file declared nothing, so nothing was audited; suffixes None: every text
    # suffix (.txt, .toml), and is_declaration the same matcher declared() uses
    reads = Reads(None, accepts=lambda skill, rel: is_declaration(rel))

    def tool_versions(self) -> dict[str, str]:
        # the advisory database changes daily while the skill does not: a cached pass expires with the day
        return {**super().tool_versions(), "day": datetime.date.today().isoformat()}

    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        decl = [declared(s) for s in skills]
        reports: dict[tuple[str, str], dict[str, Any]] = {}
        for layer in _layers([p for d in decl for p in d.pins]):
            for name, entry in audit(layer).items():
                if name in layer:
                    reports[(name, layer[name])] = entry
        version = (tools.version(PIP_AUDIT) or "unknown") if reports else None
        results = {}
        for skill, d in zip(skills, decl, strict=True):
            findings, skipped = list(d.findings), []
            for pin in d.pins:
                entry = reports.get((pin.name, pin.version))
                if entry is None or "skip_reason" in entry or not isinstance(entry.get("vulns"), list):
                    why = (entry or {}).get("skip_reason") or "missing from pip-audit's report"
                    skipped.append(f"{pin.name}=={pin.version} ({why})")
                    continue
                for v in entry["vulns"]:
                    fixes = ", ".join(str(x) for x in v.get("fix_versions") or []) or "none yet"
                    aliases = ", ".join(str(a) for a in v.get("aliases") or [])
                    desc = " ".join(str(v.get("description") or "").split())[:200]
                    findings.append(Finding(
                        rule="dependencies.known-vulnerability", severity=Severity.HIGH, file=pin.file, line=pin.line,
                        message=f"{pin.name} {pin.version}: {v.get('id')}" + (f" ({aliases})" if aliases else "")
                                + f", fixed in {fixes}" + (f" — {desc}" if desc else ""),
                        suggestion=f"upgrade {pin.name} to {fixes}" if v.get("fix_versions") else "replace the package",
                        evidence=pin.text))
            metrics = {"requirements": d.count, "pinned": len(d.pins), "audited": len(d.pins) - len(skipped),
                       "unaudited": len(skipped)}
            used = {PIP_AUDIT.name: version} if d.pins and version else {}
            findings.sort(key=Finding.sort_key)
            reasons = []
            if d.unread_includes:
                reasons.append(f"{len(d.unread_includes)} included requirements file(s) could not be read, so their pins "
                               "were not audited — " + "; ".join(f"{rel}: {why}" for rel, why in d.unread_includes[:5]))
            if skipped:
                every = " (every pinned requirement: the vulnerability service answered for none)" \
                    if len(skipped) == len(d.pins) else ""
                reasons.append(f"pip-audit could not audit {len(skipped)} of {len(d.pins)} pinned requirement(s){every}: "
                               + "; ".join(skipped[:5]) + ("; …" if len(skipped) > 5 else ""))
            if reasons:
                results[skill.root] = CheckResult.incomplete(self.name, "; and ".join(reasons), tier=self.tier,
                                                             findings=findings, metrics=metrics, tools=used)
            else:
                results[skill.root] = self.result(findings, metrics=metrics, tools=used)
        return results


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [DependenciesCheck()]
