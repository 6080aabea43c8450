"""Tier 1 over the shared corpus: collection time, skills/second at -n 0 and -n 2, scanners on vs off.

Every figure comes from real ``pytest`` runs measured side by side in this one invocation, with
the scanner result cache disabled (a cold run), so the ratios compare like with like.

    python benchmarks/tier1_corpus.py [--corpus ../shared/corpus] [--workers 0,2] [--repeat 1]
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = Path(os.environ.get("SKILLEVAL_CORPUS", REPO.parent / "shared" / "corpus"))


def scanner_checks() -> list[str]:
    """Default-enabled checks backed by external scanners (BatchedCheck), found by scanning tier1."""
    from pytest_skilleval import tier1
    from pytest_skilleval.batch import BatchedCheck

    names = []
    for mod in pkgutil.iter_modules(tier1.__path__):
        module = importlib.import_module(f"{tier1.__name__}.{mod.name}")
        for check in getattr(module, "pytest_skilleval_checks", lambda config: [])(None) or []:
            if isinstance(check, BatchedCheck) and check.default_enabled:
                names.append(check.name)
    return sorted(names)


def run_pytest(corpus: Path, *args: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pytest", f"--skills={corpus}", "-q", "-p", "no:cacheprovider", "-o", "addopts=",
               f"--skilleval-report-dir={tmp}/report", "--skilleval-cache-dir=", f"--rootdir={tmp}", "-m", "tier1", *args]
        started = time.perf_counter()
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp)
        elapsed = time.perf_counter() - started
        if proc.returncode not in (0, 1):  # 1 = some skills fail their checks, which is expected
            sys.exit(f"pytest exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
        if "Traceback" in proc.stdout or "INTERNALERROR" in proc.stdout:
            sys.exit(f"traceback in pytest output:\n{proc.stdout[-5000:]}")
        results = Path(tmp, "report", "results.json")
        data = json.loads(results.read_text()) if results.exists() else {}
        return elapsed, data


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--workers", default="0,2")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    corpus = args.corpus.resolve()
    skills = sum(1 for _ in corpus.rglob("SKILL.md"))
    scanners = scanner_checks()
    without = "--skilleval-checks=" + ",".join(f"-{n}" for n in scanners) if scanners else "--skilleval-checks=-nothing"
    print(f"corpus: {corpus} ({skills} SKILL.md files); machine: {os.cpu_count()} cores; python {sys.version.split()[0]}")
    print(f"scanner-backed checks: {', '.join(scanners) or 'none'}")

    def best(*extra: str) -> tuple[float, dict]:
        runs = [run_pytest(corpus, *extra) for _ in range(args.repeat)]
        return min(r[0] for r in runs), runs[0][1]

    collect_s, _ = best("--collect-only")
    print(f"\ncollection only: {collect_s:.2f} s ({skills / collect_s:.0f} skills/s)")
    rows = []
    for n in [w.strip() for w in args.workers.split(",") if w.strip()]:
        off_args = ("-n", n) + ((without,) if scanners else ())
        off_s, off_data = best(*off_args)
        on_s, on_data = best("-n", n)
        rows.append((n, off_s, on_s, off_data, on_data))
    print("\n| workers | Tier 1 without scanners | skills/s | Tier 1 with scanners | skills/s | with / without |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n, off_s, on_s, _off_data, on_data in rows:
        counted = on_data.get("skill_count", skills)
        print(f"| -n {n} | {off_s:.1f} s | {counted / off_s:.1f} | {on_s:.1f} s | {counted / on_s:.1f} | {on_s / off_s:.2f}x |")
    if len(rows) > 1:
        base = rows[0]
        for n, off_s, on_s, *_ in rows[1:]:
            print(f"speed-up -n {n} vs -n {base[0]}: without scanners {base[1] / off_s:.2f}x, with scanners {base[2] / on_s:.2f}x")
    data = rows[-1][4]
    if data:
        print(f"\nlast run: {data['skill_count']} skills, verdicts {data['verdict_counts']}, findings {data['severity_counts']}")
        print(f"median findings per skill: {statistics.median(sum(s['severity_counts'].values()) for s in data['skills']):g}")


if __name__ == "__main__":
    main()
