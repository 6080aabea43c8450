"""This tree against an earlier commit, side by side in one run: start-up, collection, Tier 1 CPU.

Each measure runs both trees alternately, ``--repeat`` times after one warm-up each, and keeps the
least CPU (user + system of the process and its children: less noisy than wall time on a shared
machine). The earlier commit is exported with ``git archive`` into a temporary folder and run with
the same interpreter and packages, so only our code differs. Printed per measure: both figures,
their ratio (earlier / this tree) and the load average.

- ``import``: ``import pytest_skilleval.plugin`` after ``import pytest`` (CPU ms);
- ``floor``: one skill, one check (``version``), reports written: what no run goes below;
- ``collect 1,000``: ``--collect-only`` over 1,000 generated skills;
- ``licence check, 1,000 sibling skills``: only the ``license`` check over them (each skill looks for
  licence files in the same parent folder);
- each ``--skills DIR``: the default Tier 1 over DIR at ``-n 0`` (CPU, and below it the least wall time). Its findings must be the same in
  both trees (``results.json``'s checks, statuses, scores and findings; durations aside), else the
  benchmark says which differ and exits 1; so must the whole results.json (durations, the timestamp
  and the tool's provenance aside) and every BENCHMARK.md card (its date and evaluator lines aside).

    python benchmarks/tier1_startup.py --baseline REV [--repeat 3] [--skills DIR]...
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from tier1_vs_skillevaluator import synthetic  # the same 1,000-skill catalog as the comparison's (this folder is on sys.path)

REPO = Path(__file__).resolve().parent.parent
#: pytest plugins of the dev extra that a user's install does not have (as in tier1_vs_skillevaluator.py).
DEV_ONLY = ("-p", "no:hypothesispytest", "-p", "no:rerunfailures")
IMPORT = ("import time\nt = time.process_time()\nimport pytest\nt = time.process_time()\nimport pytest_skilleval.plugin\n"
          "print((time.process_time() - t) * 1000)")


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def export(rev: str, into: Path, *paths: str) -> Path:
    """The package of ``rev`` (and ``paths`` of it, if named; nothing else) under ``into``."""
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(REPO), "archive", "-o", str(archive), rev, "pytest_skilleval", *paths], check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="data")
    return into


def environ(src: Path) -> dict[str, str]:
    # bytecode caches allowed, no stray plugin options, Python's own buffering (tier1_vs_skillevaluator.env)
    out = {k: v for k, v in os.environ.items() if k not in ("PYTHONDONTWRITEBYTECODE", "PYTEST_ADDOPTS", "PYTHONUNBUFFERED", "PYTHONPATH")}
    out["PYTHONPATH"] = str(src)
    return out


#: Wall seconds of each run of :func:`cpu`, by source tree (printed for the ``--skills`` measures).
WALL: dict[Path, list[float]] = {}


def cpu(cmd: list[str], src: Path, cwd: Path, ok: tuple[int, ...] = (0, 1)) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=cwd, env=environ(src), capture_output=True, text=True)
    WALL.setdefault(src, []).append(time.perf_counter() - started)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok or "Traceback" in proc.stdout or "INTERNALERROR" in proc.stdout:
        sys.exit(f"{' '.join(cmd[:6])}... in {src} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def pytest_cmd(skills: Path, work: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "pytest", f"--skills={skills}", "-q", "-p", "no:cacheprovider", *DEV_ONLY, "-o", "addopts=",
            f"--rootdir={work}", f"--skilleval-report-dir={work}/report", "--skilleval-cache-dir=", "-m", "tier1", "-n", "0", *extra]


def import_ms(src: Path, work: Path) -> float:
    out = subprocess.run([sys.executable, "-c", IMPORT], cwd=work, env=environ(src), capture_output=True, text=True, check=True)
    return float(out.stdout.split()[-1]) / 1000


def findings(report: Path) -> set[tuple]:
    """What a run decided, durations aside: per skill and check its status and score, and every finding."""
    data = json.loads((report / "results.json").read_text())
    out: set[tuple] = set()
    for skill in data["skills"]:
        for check in skill["checks"]:
            r = check["result"]
            out.add((skill["key"], r["check"], r["status"], r.get("score")))
            out.update((skill["key"], f["rule"], f["severity"], f["file"], f["line"], f["message"]) for f in r["findings"])
    return out


def _timeless(value: object) -> object:
    """JSON data without what differs run to run: durations, the timestamp, the tool's provenance."""
    if isinstance(value, dict):
        return {k: _timeless(v) for k, v in value.items() if k not in ("duration_s", "generated_at", "tool")}
    if isinstance(value, list):
        return [_timeless(v) for v in value]
    return value


def documents(report: Path) -> tuple[object, dict[str, str]]:
    """results.json (durations, timestamp and tool aside) and every BENCHMARK.md card (its date and
    evaluator lines aside): what must not change when only speed does."""
    cards = {str(p.relative_to(report)): "\n".join(line for line in p.read_text().splitlines()
                                                     if not line.startswith(("- Evaluation date", "- Evaluator version")))
             for p in sorted(report.rglob("BENCHMARK.md"))}
    return _timeless(json.loads((report / "results.json").read_text())), cards


def side_by_side(name: str, trees: dict[str, Path], measure: Callable[[str, Path], float], repeat: int, unit: str = "s") -> None:
    best = {}
    for label, src in trees.items():
        measure(label, src)  # warm-up: bytecode caches written, as on any machine that has run it once
    runs: dict[str, list[float]] = {label: [] for label in trees}
    for _ in range(repeat):  # alternate, so a change of load hits both alike
        for label, src in trees.items():
            runs[label].append(measure(label, src))
    best = {label: min(values) for label, values in runs.items()}
    scale, fmt = (1000, "{:.0f} ms") if unit == "ms" else (1, "{:.2f} s")
    base, ours = best["baseline"], best["this tree"]
    print(f"| {name} | {fmt.format(base * scale)} | {fmt.format(ours * scale)} | {base / ours:.2f}x | {load()} |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare with (any git revision)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skills", type=Path, action="append", default=[], help="a folder of skills to run Tier 1 over (repeatable)")
    parser.add_argument("--no-startup", action="store_true", help="only the --skills folders")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="skilleval-bench-") as tmp:
        base = Path(tmp)
        (base / "baseline").mkdir()
        trees = {"baseline": export(args.baseline, base / "baseline"), "this tree": REPO}
        rev = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", args.baseline], capture_output=True, text=True).stdout.strip()
        print(f"baseline {args.baseline} ({rev}) vs this tree ({REPO}); {os.cpu_count()} cores; python {sys.version.split()[0]}; "
              f"load average at start: {load()}; CPU seconds, least of {args.repeat} alternating runs\n")
        print("| measure | baseline | this tree | baseline / this tree | load |")
        print("|---|---:|---:|---:|---|")
        work = {label: base / f"work-{label.replace(' ', '-')}" for label in trees}
        for w in work.values():
            w.mkdir()
        if not args.no_startup:
            side_by_side("import the plugin", trees, lambda label, src: import_ms(src, work[label]), args.repeat, "ms")
            one = synthetic(1, base / "one")
            side_by_side("floor: one skill, one check", trees,
                         lambda label, src: cpu(pytest_cmd(one, work[label], "--skilleval-checks=version"), src, work[label]), args.repeat)
            thousand = synthetic(1000, base / "thousand")
            side_by_side("collect 1,000 skills", trees,
                         lambda label, src: cpu(pytest_cmd(thousand, work[label], "--collect-only"), src, work[label], ok=(0, 5)),
                         args.repeat)
            side_by_side("licence check, 1,000 sibling skills", trees,
                         lambda label, src: cpu(pytest_cmd(thousand, work[label], "--skilleval-checks=license"), src, work[label]),
                         args.repeat)
        differ = False
        for folder in args.skills:
            folder = folder.resolve()
            count = sum(1 for _ in folder.rglob("SKILL.md"))
            WALL.clear()
            side_by_side(f"Tier 1, {count} skills of {folder.name}", trees,
                         lambda label, src, folder=folder: cpu(pytest_cmd(folder, work[label]), src, work[label]), args.repeat)
            walls = {label: min(WALL[src][1:]) for label, src in trees.items()}  # the warm-up aside
            print(f"  wall seconds, least of {args.repeat}: baseline {walls['baseline']:.2f}, this tree {walls['this tree']:.2f}")
            before, after = findings(work["baseline"] / "report"), findings(work["this tree"] / "report")
            if before != after:
                differ = True
                print(f"  findings differ over {folder}: {len(before - after)} only in the baseline, {len(after - before)} only here")
                for row in sorted(before - after)[:10]:
                    print("   -", row)
                for row in sorted(after - before)[:10]:
                    print("   +", row)
            else:
                print(f"  same findings over {folder} ({len(after)} statuses and findings)")
            (doc_before, cards_before), (doc_after, cards_after) = documents(work["baseline"] / "report"), documents(work["this tree"] / "report")
            changed = sorted(k for k in cards_before.keys() | cards_after.keys() if cards_before.get(k) != cards_after.get(k))
            if doc_before != doc_after or changed:
                differ = True
                print(f"  results.json {'differs' if doc_before != doc_after else 'the same'} (durations, timestamp and tool aside); "
                      f"{len(changed)} card(s) differ: {changed[:5]}")
            else:
                print(f"  same results.json (durations, timestamp and tool aside) and the same {len(cards_after)} cards (date and version aside)")
        print(f"\nload average at the end: {load()}; {time.strftime('%H:%M:%S')}")
        sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
