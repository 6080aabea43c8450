"""`skilleval compare` on two real runs of an example skill: as shipped, and with its instructions damaged.

The csv-summary case is scripted so that the model answers correctly only once the skill's
instructions reached it (its variant keys on a sentence of the Instructions section), so damaging
the instructions changes what the real Claude Code CLI answers — and compare must name it.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

from pytest_skilleval import cli

DAMAGED = "## Instructions\n\nLook at the file and say something about it.\n\n"


def run_once(work: Path) -> Path:
    # only the Tier 3 items: compare reads their results, and Tier 1 and 2 would double the test's time
    done = subprocess.run([sys.executable, "-m", "pytest", "--skills", "skills", "--skilleval-tier3", "-m", "tier3", "-p", "no:cacheprovider",
                           "-n", "0", f"--skilleval-agents-dir={AGENTS_DIR}", "-o", "addopts=", "-q"],
                          cwd=work, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]  # failed trials are advisory
    return work / "skilleval-report"


def test_damaged_instructions_are_named_and_exit_1(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    require(have("bwrap"), "Tier 3 trials need bubblewrap (apt-get install bubblewrap)")
    require(CLIS["claude-code"].agent.locate([AGENTS_DIR]) is not None, "Claude Code is not installed (make agents)")
    runs = {}
    for name in ("shipped", "damaged"):
        skill = shutil.copytree(REPO / "example_skills" / "csv-summary", tmp_path / name / "skills" / "csv-summary")
        if name == "damaged":
            text = (skill / "SKILL.md").read_text(encoding="utf-8")
            start, end = text.index("## Instructions"), text.index("## Available Scripts")
            (skill / "SKILL.md").write_text(text[:start] + DAMAGED + text[end:], encoding="utf-8")
        runs[name] = run_once(tmp_path / name)
    assert cli.main(["compare", str(runs["shipped"]), str(runs["shipped"])]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(runs["shipped"]), str(runs["damaged"])]) == 1
    out = capsys.readouterr().out
    assert "regression(s)" in out and "- csv-summary · Claude Code · correctness: 100% → " in out
    assert "csv-summary · Claude Code · csv-summary-001 a1: PASSED → FAILED" in out
