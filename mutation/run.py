"""Mutation testing of the safety core with cosmic-ray: ``make mutation [MODULES="gate safefs"]``.

Each module in ``modules.toml`` is mutated in a private copy of the working tree (never in place, so
an interrupted run leaves your checkout untouched), and every mutant runs that module's tests. A
mutant is *killed* when the tests fail, *survived* when they pass. Survivors that cannot change
behaviour are listed with a one-line reason in ``equivalents.toml``; the score is
killed / (mutants - equivalent). The goal is >= 90 % per module. Survivors are written with their
diffs to ``mutation-report/<module>.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOAL = 0.90


@dataclass
class Tally:
    module: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    incompetent: int = 0  # a mutant that cannot even be imported or timed out: counted as killed by cosmic-ray's rules
    survivors: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def survived(self) -> int:
        return len(self.survivors)

    @property
    def score(self) -> float:
        relevant = self.mutants - self.equivalent
        return self.killed / relevant if relevant else 1.0


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and the added source line of a one-line mutation, stripped: what identifies it
    across edits elsewhere in the file (line numbers shift, the mutated text does not)."""
    minus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("-") and not ln.startswith("---")]
    plus = [ln[1:].strip() for ln in diff.splitlines() if ln.startswith("+") and not ln.startswith("+++")]
    return " / ".join(minus), " / ".join(plus)


def copy_tree(dest: Path) -> None:
    """Tracked and untracked (not ignored) files: exactly what the tests see in the checkout."""
    listed = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                            capture_output=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = REPO / rel
        if src.is_file() and not src.is_symlink():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for shared in (".cache",):  # installed agent CLIs: linked, never copied
        if (REPO / shared).exists():
            os.symlink((REPO / shared).resolve(), dest / shared)


def run_module(name: str, spec: dict, equivalents: dict[str, str], python: str, timeout: float) -> Tally:
    tally = Tally(name)
    with tempfile.TemporaryDirectory(prefix=f"skilleval-mutation-{name}-") as tmp:
        work = Path(tmp) / "tree"
        work.mkdir()
        copy_tree(work)
        tests = " ".join(spec["tests"])
        config = Path(tmp) / "cr.toml"
        config.write_text(
            "[cosmic-ray]\n"
            f'module-path = "{spec["path"]}"\n'
            f"timeout = {timeout}\n"
            "excluded-modules = []\n"
            f'test-command = "{python} -m pytest -x -q -p no:cacheprovider {tests}"\n'
            "[cosmic-ray.distributor]\nname = \"local\"\n")
        env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
        session = Path(tmp) / "session.sqlite"
        cosmic = [python, "-m", "cosmic_ray.cli"]
        subprocess.run([*cosmic, "init", str(config), str(session)], cwd=work, env=env, check=True)
        subprocess.run([*cosmic, "exec", str(config), str(session)], cwd=work, env=env, check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        dump = subprocess.run([*cosmic, "dump", str(session)], cwd=work, env=env, check=True, capture_output=True, text=True).stdout
    used: set[str] = set()
    for line in dump.splitlines():
        job, result = json.loads(line)
        if not result:
            continue
        tally.mutants += 1
        outcome = result["test_outcome"]
        if outcome == "incompetent":
            tally.incompetent += 1
            tally.killed += 1
            continue
        if outcome == "killed":
            tally.killed += 1
            continue
        before, after = changed_lines(result["diff"] or "")
        key = f"{before} => {after}"
        if key in equivalents:
            tally.equivalent += 1
            used.add(key)
            continue
        mutation = job["mutations"][0]
        tally.survivors.append(f"{mutation['operator_name']} line {mutation['start_pos'][0]}\n  - {before}\n  + {after}")
    tally.stale = sorted(set(equivalents) - used)
    return tally


def main() -> int:
    modules = tomllib.loads((HERE / "modules.toml").read_text())
    equivalents_file = tomllib.loads((HERE / "equivalents.toml").read_text()) if (HERE / "equivalents.toml").exists() else {}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"default: all of {', '.join(modules)}")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per mutant's test run")
    parser.add_argument("--report-dir", type=Path, default=REPO / "mutation-report")
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in modules]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(modules)}")
    args.report_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.modules or list(modules):
        entries = {e["mutation"]: e["reason"] for e in equivalents_file.get(name, [])}
        tally = run_module(name, modules[name], entries, sys.executable, args.timeout)
        rows.append(tally)
        text = [f"{name}: {tally.mutants} mutants, {tally.killed} killed, {tally.survived} survived, {tally.equivalent} equivalent",
                "", *tally.survivors]
        if tally.stale:
            text += ["", "equivalents.toml entries that matched no mutant (the code changed: remove or update them):", *tally.stale]
        (args.report_dir / f"{name}.txt").write_text("\n".join(text) + "\n")
        print(f"{name:<13} {tally.mutants:>7} {tally.killed:>7} {tally.survived:>8} {tally.equivalent:>10} {tally.score:>7.1%}", flush=True)
    print(f"\n{'module':<13} {'mutants':>7} {'killed':>7} {'survived':>8} {'equivalent':>10} {'score':>7}")
    for t in rows:
        print(f"{t.module:<13} {t.mutants:>7} {t.killed:>7} {t.survived:>8} {t.equivalent:>10} {t.score:>7.1%}"
              + ("" if t.score >= GOAL else "  < 90 %"))
    print(f"\nsurvivors with their diffs: {args.report_dir}/<module>.txt")
    return 0 if all(t.score >= GOAL for t in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
