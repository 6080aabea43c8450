"""What a Tier 1 run spends around its checks, this tree against an earlier commit, side by side.

The default Tier 1 over ``--skills DIR`` at ``-n 0`` runs in both trees alternately (``--repeat``
times after a warm-up each) with a small timing plugin that reads the main thread's CPU: each item's
whole protocol less the time inside its check's ``run`` (pytest's runner and this plugin's hooks:
publishing the result, the report session's hooks, releasing what the item published), the checks
themselves, and the session's end (the reports, then pytest's own summary). The whole run's CPU on a
shared machine moves by more than these do; the per-phase figures, and their ratio to the run's own
check CPU (which load inflates alike), show what changed. Scanners in background threads or other
processes are not counted.

    python benchmarks/item_overhead.py --baseline REV --skills DIR [--repeat 3]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from tier1_startup import REPO, environ, export, load, pytest_cmd  # this folder is on sys.path

PLUGIN = '''
import time
import pytest

T = {"check": 0.0, "protocol": 0.0, "finish": 0.0, "items": 0}


def _timed(check):
    run = check.run

    def timed(skill, ctx):
        t = time.thread_time()
        try:
            return run(skill, ctx)
        finally:
            T["check"] += time.thread_time() - t
    object.__setattr__(check, "run", timed)


@pytest.hookimpl(trylast=True)
def pytest_collection_finish(session):
    seen = {}
    for item in session.items:
        check = getattr(item, "check", None)
        if check is not None and id(check) not in seen:
            seen[id(check)] = check
            _timed(check)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item, nextitem):
    t = time.thread_time()
    try:
        return (yield)
    finally:
        T["protocol"] += time.thread_time() - t
        T["items"] += 1


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_sessionfinish(session):
    t = time.thread_time()
    try:
        return (yield)
    finally:
        T["finish"] += time.thread_time() - t
        (session.config.rootpath / "phases.txt").write_text(
            f"{T['items']} {T['protocol'] - T['check']:.3f} {T['check']:.3f} {T['finish']:.3f}")
'''


def phases(src: Path, skills: Path, work: Path, plugin_dir: Path) -> tuple[int, float, float, float]:
    env = environ(src)
    env["PYTHONPATH"] = f"{src}{':'}{plugin_dir}"
    proc = subprocess.run([*pytest_cmd(skills, work), "-p", "skilleval_phases"], cwd=work, env=env, capture_output=True, text=True)
    if proc.returncode not in (0, 1) or not (work / "phases.txt").exists():
        sys.exit(f"the run in {src} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    items, around, checks, finish = (work / "phases.txt").read_text().split()
    return int(items), float(around), float(checks), float(finish)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare with (any git revision)")
    parser.add_argument("--skills", type=Path, required=True)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilleval-bench-") as tmp:
        base = Path(tmp)
        (base / "baseline").mkdir()
        (base / "plugin").mkdir()
        (base / "plugin" / "skilleval_phases.py").write_text(PLUGIN)
        trees = {"baseline": export(args.baseline, base / "baseline"), "this tree": REPO}
        print(f"baseline {args.baseline} vs this tree ({REPO}); default Tier 1 over {args.skills} at -n 0; main-thread CPU s; "
              f"load average at start: {load()}\n")
        print("| run | tree | items | around the checks | checks | around / checks | session end | load |")
        print("|---|---|---:|---:|---:|---:|---:|---|")
        rows: dict[str, list[tuple[int, float, float, float]]] = {label: [] for label in trees}
        for attempt in range(args.repeat + 1):  # the first is the warm-up
            for label, src in trees.items():
                work = base / f"work-{label.replace(' ', '-')}-{attempt}"
                work.mkdir()
                items, around, checks, finish = phases(src, args.skills.resolve(), work, base / "plugin")
                if attempt:
                    rows[label].append((items, around, checks, finish))
                    print(f"| {attempt} | {label} | {items} | {around:.2f} | {checks:.2f} | {around / checks:.3f} | {finish:.2f} | {load()} |",
                          flush=True)
        print()
        for label, got in rows.items():
            ratio = sum(a / c for _, a, c, _ in got) / len(got)
            print(f"{label}: around the checks least {min(a for _, a, _, _ in got):.2f} s, {ratio:.3f} s per check second on average; "
                  f"session end least {min(f for *_, f in got):.2f} s")
        print(f"\nload average at the end: {load()}")


if __name__ == "__main__":
    main()
