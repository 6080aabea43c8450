"""pytester's in-process runs, several in one process, give every run the same results.

Each in-process run puts ``sys.modules`` back as it found it, so what a run imports lazily is imported
again by the next: yaml's C loader cannot be, and pydantic classes would exist twice (a check crashed
with a ConstructorError, a selection item with a ValidationError). A plugin author tests their checks
exactly this way.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TWICE = '''
import pytest

pytest_plugins = ["pytester"]


def skills(root):
    for name in ("alpha", "beta"):
        skill = root / "skills" / name
        skill.mkdir(parents=True)
        (skill / "SKILL.md").write_text(
            f"---\\nname: {name}\\ndescription: Does {name}. Use when {name} is asked for.\\n---\\n\\n# {name}\\n\\n"
            "Run the script with care and read the output before you go on.\\n", encoding="utf-8")


def test_each_run_alike(pytester):
    skills(pytester.path)
    seen = []
    for _ in range(3):
        result = pytester.runpytest_inprocess("--skills=skills", "-p", "no:cacheprovider", "--skilleval-report-dir=",
                                              "--skilleval-cache-dir=", "-n", "0",
                                              "--skilleval-checks=schema,instructions,pii,unicode,quality")
        assert "crashed" not in result.stdout.str(), result.stdout.str()[-3000:]
        seen.append(result.parseoutcomes())
    assert seen[0] == seen[1] == seen[2] and sum(seen[0].get(k, 0) for k in ("passed", "failed")) == 10, seen
'''


def test_three_in_process_runs_in_one_process_give_the_same_results(tmp_path: Path) -> None:
    (tmp_path / "test_twice.py").write_text(TWICE, encoding="utf-8")
    proc = subprocess.run([sys.executable, "-m", "pytest", "test_twice.py", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
                           f"--rootdir={tmp_path}", "-n", "0", "-p", "no:randomly"],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout[-5000:] + proc.stderr[-2000:]


EXPORTS_AFTER = """
import importlib, sys
from pytest_skilleval import inprocess
inprocess.import_every_module()
import types
bad = []
ours = {name: module for name, module in sys.modules.items() if name.startswith("pytest_skilleval")}
for name, module in sorted(ours.items()):
    for attr, sub in (getattr(module, "_EXPORTS", None) or {}).items():
        wanted = getattr(importlib.import_module(f"{name}.{sub}"), attr)
        if getattr(module, attr) is not wanted:
            bad.append(f"{name}.{attr}")
        # and no module imported along the way took the submodule for the export (tier3.trial's grade)
        shadow = sys.modules.get(f"{name}.{attr}")
        if isinstance(shadow, types.ModuleType) and shadow is not wanted:
            bad += [f"{other}.{attr}" for other, m in ours.items() if vars(m).get(attr) is shadow and other != name]
print("BAD", bad)
"""


def test_importing_every_module_keeps_each_package_export() -> None:
    """``tier3.grading`` exports the function ``grade`` from its module ``grade``: importing the module
    itself sets the package's attribute to the module, which every later ``from ... import grade`` got."""
    out = subprocess.run([sys.executable, "-c", EXPORTS_AFTER], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "BAD []" in out.stdout, out.stdout
