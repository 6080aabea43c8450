"""Mutation testing of the safety core with cosmic-ray: ``make mutation [MODULES="gate safefs"]``.

Each module in ``modules.toml`` is mutated in a private copy of the working tree (never in place, so
an interrupted run leaves your checkout untouched), and every mutant runs that module's tests. A
mutant is *killed* when the tests fail, *survived* when they pass. Survivors that cannot change
behaviour are listed with a one-line reason in ``equivalents.toml``; the score is
killed / (mutants - equivalent). The goal is >= 90 % per module. Survivors are written with their
diffs to ``mutation-report/<module>.txt``.

Two kinds of mutant are not run, because they cannot change behaviour in this code base by
construction (each is counted and printed, never silently dropped):
- mutants inside type annotations: every module has ``from __future__ import annotations``, so an
  annotation is an unevaluated string and ``str | None`` -> ``str - None`` changes nothing;
- ``is`` -> ``==`` and ``is not`` -> ``!=``: the modules use ``is`` only against ``None``, enum
  members, ``True``/``False`` on ``bool | None`` values, threads and signal handlers, none of which
  defines an ``__eq__`` that differs from identity. (``==`` -> ``is`` is still run.)

Each mutant's tests run in a child forked from a server that has pre-imported pytest and the
third-party libraries but none of the project (``forkserver.py``), and unless a module sets
``plugin = true`` in ``modules.toml`` the skilleval plugin is not loaded (unit tests do not need it):
both only cut start-up time, the tests and the mutated code are imported fresh for every mutant.

``--survivors`` re-runs only the mutants that survived the module's last run (its session is kept in
``mutation-report/<module>.sqlite``) against the current tests: what to use while writing tests.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
GOAL = 0.90
# is -> == and is not -> != only: see the module docstring for why they cannot change behaviour here.
EXCLUDED_OPERATORS = ("core/ReplaceComparisonOperator_Is_Eq", "core/ReplaceComparisonOperator_IsNot_NotEq")


@dataclass
class Tally:
    module: str
    mutants: int = 0
    killed: int = 0
    equivalent: int = 0
    incompetent: int = 0  # a mutant that cannot even be imported or timed out: counted as killed by cosmic-ray's rules
    not_run: int = 0  # inside an annotation or an excluded operator: equivalent by construction, not in `mutants`
    seconds: float = 0.0
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


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """(start, end) of every annotation in the module, as (line, column) like cosmic-ray's positions."""
    spans = []
    for node in ast.walk(ast.parse(source)):
        found = []
        if isinstance(node, ast.arg) and node.annotation is not None:
            found.append(node.annotation)
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            found.append(node.returns)
        if isinstance(node, ast.AnnAssign):
            found.append(node.annotation)
        spans += [((a.lineno, a.col_offset), (a.end_lineno or a.lineno, a.end_col_offset or 0)) for a in found]
    return spans


def skip_not_run(session: Path, source: str) -> int:
    """Mark the mutants that cannot change behaviour by construction as skipped; returns how many."""
    if "from __future__ import annotations" not in source:
        spans = []  # annotations are evaluated: mutants in them are run like any other
    else:
        spans = annotation_spans(source)
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    skipped = 0
    with use_db(str(session), WorkDB.Mode.open) as db:
        for item in list(db.pending_work_items):
            for m in item.mutations:
                inside = any(a <= tuple(m.start_pos) and tuple(m.end_pos) <= b for a, b in spans)
                if inside or m.operator_name in EXCLUDED_OPERATORS:
                    db.set_result(item.job_id, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output="not run: equivalent by construction"))
                    skipped += 1
                    break
    return skipped


def reset_survivors(session: Path) -> None:
    """Forget the results of the survivors so that `exec` runs them again (and only them)."""
    db = sqlite3.connect(session)
    db.execute("delete from work_results where test_outcome = 'SURVIVED'")  # SQLAlchemy stores the enum's name
    db.commit()
    db.close()


def run_module(name: str, spec: dict, equivalents: dict[str, str], python: str, timeout: float, report_dir: Path,
               survivors_only: bool) -> Tally:
    tally = Tally(name)
    kept = report_dir / f"{name}.sqlite"
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"skilleval-mutation-{name}-") as tmp:
        work = Path(tmp) / "tree"
        work.mkdir()
        copy_tree(work)
        # Bytecode checked by source hash: every mutant's import re-validates each module against its
        # source, so the mutated one is compiled afresh and the rest are not compiled per mutant.
        subprocess.run([python, "-m", "compileall", "-q", "--invalidation-mode", "checked-hash", "pytest_skilleval"], cwd=work,
                       check=True, stdout=subprocess.DEVNULL)
        tests = " ".join(spec["tests"])
        plugins = "" if spec.get("plugin", False) else "-p no:skilleval -p no:hypothesispytest -p no:anyio "
        sock = Path(tmp) / "fork.sock"
        config = Path(tmp) / "cr.toml"
        config.write_text(
            "[cosmic-ray]\n"
            f'module-path = "{spec["path"]}"\n'
            f"timeout = {timeout}\n"
            "excluded-modules = []\n"
            f'test-command = "{python} {work / "mutation" / "forkserver.py"} run {sock} {timeout} -- '
            f'-x -q -p no:cacheprovider {plugins}{tests}"\n'
            "[cosmic-ray.distributor]\nname = \"local\"\n")
        env = {**os.environ, "PYTHONPATH": str(work), "PYTHONDONTWRITEBYTECODE": "1"}
        session = Path(tmp) / "session.sqlite"
        cosmic = [python, "-m", "cosmic_ray.cli"]
        if survivors_only:
            if not kept.exists():
                raise SystemExit(f"{name}: no earlier session in {kept}; run it once without --survivors")
            shutil.copy2(kept, session)
            reset_survivors(session)
        else:
            subprocess.run([*cosmic, "init", str(config), str(session)], cwd=work, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            skip_not_run(session, (work / spec["path"]).read_text())
        server = subprocess.Popen([python, str(work / "mutation" / "forkserver.py"), "serve", str(sock)], cwd=work, env=env,
                                  stdout=subprocess.PIPE, text=True)
        try:
            if server.stdout is None or server.stdout.readline().strip() != "ready":
                raise SystemExit(f"{name}: the fork server did not start")
            baseline = subprocess.run(config.read_text().split('test-command = "')[1].split('"')[0].split(),
                                      cwd=work, env=env, capture_output=True)
            if baseline.returncode != 0:
                raise SystemExit(f"{name}: the module's tests fail without any mutant (exit {baseline.returncode}); fix modules.toml")
            subprocess.run([*cosmic, "exec", str(config), str(session)], cwd=work, env=env, check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        finally:
            server.terminate()
            server.wait()
        shutil.copy2(session, kept)
        dump = subprocess.run([*cosmic, "dump", str(session)], cwd=work, env=env, check=True, capture_output=True, text=True).stdout
    tally.seconds = time.monotonic() - started
    used: set[str] = set()
    for line in dump.splitlines():
        job, result = json.loads(line)
        if not result:
            continue
        if result["worker_outcome"] == "skipped":  # the dump gives the enum's value
            tally.not_run += 1
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
        mutation = job["mutations"][0]
        key = f"{before} => {after}"
        at_line = f"{key} @ {mutation['start_pos'][0]}"  # for a line text that occurs more than once
        if key in equivalents or at_line in equivalents:
            tally.equivalent += 1
            used.add(key if key in equivalents else at_line)
            continue
        tally.survivors.append(f"{mutation['operator_name']} line {mutation['start_pos'][0]}\n  - {before}\n  + {after}")
    tally.stale = sorted(set(equivalents) - used)
    return tally


def row(t: Tally) -> str:
    return (f"{t.module:<13} {t.mutants:>7} {t.killed:>7} {t.survived:>8} {t.equivalent:>10} {t.score:>7.1%} {t.not_run:>7} "
            f"{t.seconds:>5.0f}s")


def main() -> int:
    modules = tomllib.loads((HERE / "modules.toml").read_text())
    equivalents_file = tomllib.loads((HERE / "equivalents.toml").read_text()) if (HERE / "equivalents.toml").exists() else {}
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("modules", nargs="*", help=f"default: all of {', '.join(modules)}")
    parser.add_argument("--timeout", type=float, default=60.0,
                        help="seconds per mutant's test run (a module may set its own `timeout`); a mutant that times out is killed")
    parser.add_argument("--report-dir", type=Path, default=REPO / "mutation-report")
    parser.add_argument("--survivors", action="store_true", help="re-run only the survivors of each module's last run")
    args = parser.parse_args()
    unknown = [m for m in args.modules if m not in modules]
    if unknown:
        parser.error(f"unknown module(s) {', '.join(unknown)}; known: {', '.join(modules)}")
    args.report_dir.mkdir(parents=True, exist_ok=True)
    rows = []
    for name in args.modules or list(modules):
        entries = {e["mutation"] + (f" @ {e['line']}" if "line" in e else ""): e["reason"] for e in equivalents_file.get(name, [])}
        timeout = modules[name].get("timeout", args.timeout)
        tally = run_module(name, modules[name], entries, sys.executable, timeout, args.report_dir, args.survivors)
        rows.append(tally)
        text = [f"{name}: {tally.mutants} mutants, {tally.killed} killed, {tally.survived} survived, {tally.equivalent} equivalent, "
                f"{tally.not_run} not run (annotations, is -> ==), {tally.seconds:.0f} s",
                "", *tally.survivors]
        if tally.stale:
            text += ["", "equivalents.toml entries that matched no mutant (the code changed: remove or update them):", *tally.stale]
        (args.report_dir / f"{name}.txt").write_text("\n".join(text) + "\n")
        print(row(tally), flush=True)
    print(f"\n{'module':<13} {'mutants':>7} {'killed':>7} {'survived':>8} {'equivalent':>10} {'score':>7} {'not run':>7} {'time':>6}")
    for t in rows:
        print(row(t) + ("" if t.score >= GOAL else "  < 90 %"))
    print("\nscore = killed / (mutants - equivalent); `not run`: mutants in annotations and is -> ==, equivalent by construction")
    print(f"\nsurvivors with their diffs: {args.report_dir}/<module>.txt")
    return 0 if all(t.score >= GOAL for t in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
