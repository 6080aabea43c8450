"""``files``: the skill's file tree is safe to read — no links out, no hardlinks, no FIFOs or
devices, no oversized files, and text files really are text."""

from __future__ import annotations

import pytest

from pytest_skilleval.checks import Check, CheckContext
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.safefs import EntryKind
from pytest_skilleval.skill import Skill


class FilesCheck(Check):
    name = "files"
    description = "file tree safety: links, hardlinks, special files, size cap, text encoding"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        findings = list(skill.inventory.findings)
        manifest = skill.entry(skill.manifest) if skill.manifest else None
        if manifest is not None and manifest.kind is EntryKind.DIR:  # FIFOs, devices and links have their own findings
            findings.append(Finding(rule="files.manifest-not-file", severity=Severity.HIGH, file=manifest.rel,
                                    message=f"{manifest.rel} is a folder, not a file: the skill has no manifest",
                                    suggestion=f"make {manifest.rel} a regular file"))
        for entry in skill.files(include_eval_dirs=True):
            if entry.expects_text() and entry.nlink == 1 and entry.size <= skill.limits.max_file_bytes:
                problem = skill.read_problem(entry.rel)
                if problem is not None:
                    findings.append(problem)
        files = skill.inventory.files()
        return self.result(findings, metrics={"files": len(files), "bytes": sum(e.size for e in files),
                                                     "digest": skill.content_digest})


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [FilesCheck()]
