"""Session-end report writing of this tree against an earlier commit, side by side, and the same bytes.

For each ``results.json`` given, both trees write the reports from it as a session does at its end
(``reports/session.py``'s ``write_reports``: a BENCHMARK.md card per skill, results.json and index.html,
the skills read back from a spool one at a time). A document that is not a whole run report (an older
schema, a hand-made page fixture) is rendered as ``skilleval html`` does: index.html only. Every file
written must be byte for byte the same in both trees (the input fixes the timestamps), else the
benchmark names the files that differ and exits 1. Printed: the CPU seconds of the writing alone
(least of ``--repeat`` alternating runs, after a warm-up each), their ratio and the load average.

    python benchmarks/report_writing.py --baseline REV RESULTS.json [RESULTS.json ...] [--repeat 3]

A results.json to start from: any run's ``--skilleval-report-dir``, e.g. the default Tier 1 over the corpus.
"""

from __future__ import annotations

import argparse
import filecmp
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tier1_startup import REPO, environ, export, load  # this folder is on sys.path

#: Run in each tree (PYTHONPATH): write the reports of argv[1] into argv[2], print the CPU seconds.
WRITER = """
import json, sys, time
from pathlib import Path
from pydantic import ValidationError
from pytest_skilleval.reports import html
from pytest_skilleval.reports.model import RunReport
from pytest_skilleval.reports.session import write_reports
from pytest_skilleval.reports.spool import Spool

source, out = Path(sys.argv[1]), Path(sys.argv[2])
text = source.read_text(encoding="utf-8")
try:
    run = RunReport.model_validate_json(text)
except ValidationError:
    run = None
if run is None:
    doc = json.loads(text)
    started = time.process_time()
    html.write(doc, out, out)
else:
    spool = Spool()  # as the session keeps them: each skill's JSON on disk, the run light
    for sk in run.skills:
        spool.add(sk.key, "", sk.model_dump_json(indent=2))
    light = run.model_copy(update={"skills": [sk.model_copy(update={"checks": []}) for sk in run.skills]})

    def skills():
        for key in sorted(spool.groups()):
            yield from spool.read(key)

    started = time.process_time()
    write_reports(light, out, out, skills)
print(time.process_time() - started)
"""


def write(src: Path, results: Path, out: Path) -> float:
    proc = subprocess.run([sys.executable, "-c", WRITER, str(results), str(out)], env=environ(src), capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"writing {results} in {src} exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return float(proc.stdout.split()[-1])


def differing(a: Path, b: Path) -> list[str]:
    """Files (relative paths) present in only one of the folders or with different bytes."""
    files_a = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    files_b = {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    out = sorted(str(p) for p in files_a ^ files_b)
    out += sorted(str(p) for p in files_a & files_b if not filecmp.cmp(a / p, b / p, shallow=False))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--baseline", required=True, help="the commit to compare with (any git revision)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("results", type=Path, nargs="+", help="results.json files (or report dirs holding one)")
    args = parser.parse_args()
    differ = False
    with tempfile.TemporaryDirectory(prefix="skilleval-bench-") as tmp:
        base = Path(tmp)
        (base / "baseline").mkdir()
        trees = {"baseline": export(args.baseline, base / "baseline"), "this tree": REPO}
        print(f"baseline {args.baseline} vs this tree ({REPO}); python {sys.version.split()[0]}; load average at start: {load()}; "
              f"CPU seconds of the writing, least of {args.repeat} alternating runs\n")
        print("| results.json | files | baseline | this tree | baseline / this tree | same bytes | load |")
        print("|---|---:|---:|---:|---:|---|---|")
        for n, results in enumerate(args.results):
            results = (results / "results.json" if results.is_dir() else results).resolve()
            outs = {label: base / f"out{n}-{label.replace(' ', '-')}" for label in trees}
            runs: dict[str, list[float]] = {label: [] for label in trees}
            for attempt in range(args.repeat + 1):  # the first is the warm-up: bytecode and template caches written
                for label, src in trees.items():
                    out = outs[label] / str(attempt)
                    out.mkdir(parents=True)
                    took = write(src, results, out)
                    if attempt:
                        runs[label].append(took)
            a, b = outs["baseline"] / "0", outs["this tree"] / "0"
            changed = differing(a, b)
            differ = differ or bool(changed)
            files = sum(1 for p in b.rglob("*") if p.is_file())
            old, new = min(runs["baseline"]), min(runs["this tree"])
            print(f"| {results} | {files} | {old:.3f} s | {new:.3f} s | {old / new:.2f}x | {'yes' if not changed else 'NO'} | {load()} |",
                  flush=True)
            for name in changed[:20]:
                print(f"  differs: {name}")
        print(f"\nload average at the end: {load()}; {time.strftime('%H:%M:%S')}")
    sys.exit(1 if differ else 0)


if __name__ == "__main__":
    main()
