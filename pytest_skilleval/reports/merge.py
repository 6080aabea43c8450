"""``skilleval merge DIR… -o OUT``: join the report dirs of a sharded run into one report set.

Each shard (``--skilleval-shard K/N``) wrote its own ``results.json`` for its share of the skills.
Merging re-builds the run from the union of their skills with the same code a single run uses
(:func:`model.build_run`, the card and HTML writers), so the merged cards, ``results.json`` and
``index.html`` are those of one unsharded run (apart from ``generated_at`` and ``duration_s``); it also
writes ``junit.xml`` for CI with the ``junit-xml`` package, since no pytest session runs here.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from junit_xml import TestCase, TestSuite, to_xml_report_string

from pytest_skilleval import atomic
from pytest_skilleval.reports.model import RunReport, SkillReport, build_run
from pytest_skilleval.reports.session import write_reports

JUNIT = "junit.xml"
#: pytest exit statuses, worst first; NO_TESTS_COLLECTED (5: an empty shard) only when every shard had none.
EXIT_PRIORITY = (3, 2, 4, 1, 0, 5)


class MergeError(ValueError):
    pass


def _load(path: Path) -> RunReport:
    target = path / "results.json" if path.is_dir() else path
    try:
        return RunReport.model_validate_json(target.read_text(encoding="utf-8"))
    except OSError as exc:
        raise MergeError(f"{target}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise MergeError(f"{target}: not a results.json of this version: {str(exc).splitlines()[0]}") from None


def merge(runs: Sequence[RunReport]) -> RunReport:
    if not runs:
        raise MergeError("nothing to merge")
    first = runs[0]
    skills: dict[str, SkillReport] = {}
    for run in runs:
        if run.settings != first.settings:
            raise MergeError(f"shards ran with different settings: {first.settings} vs {run.settings}")
        for sk in run.skills:
            if sk.key in skills:
                raise MergeError(f"skill {sk.key!r} is in more than one shard")
            skills[sk.key] = sk
    exits = {r.exit_status for r in runs}
    exit_status = next((e for e in EXIT_PRIORITY if e in exits), max(exits))
    merged = build_run(list(skills.values()), tool=first.tool, generated_at=max(r.generated_at for r in runs),
                       complete=all(r.complete for r in runs), exit_status=exit_status, settings=first.settings)
    merged.selection = next((r.selection for r in runs if r.selection is not None), None)
    durations = [r.duration_s for r in runs if r.duration_s is not None]
    merged.duration_s = max(durations) if durations else None  # the matrix's wall time: its slowest job
    return merged


def junit(run: RunReport) -> str:
    """One test case per check and per Tier 3 trial execution, named as the pytest items are."""
    cases = []
    for sk in run.skills:
        for rec in sk.checks:
            r = rec.result
            case = TestCase(f"tier{r.tier}::{r.check}", classname=sk.key, elapsed_sec=r.duration_s,
                            stdout=json.dumps(r.model_dump(mode="json", exclude={"duration_s"}), sort_keys=True))
            status = r.status.value
            detail = r.reason or "; ".join(f"{f.severity.value} {f.rule}: {f.message}" for f in r.findings[:5])
            if status in ("FAILED",) and rec.blocking:
                case.add_failure_info(message=f"{status}: {detail}"[:1000])
            elif status in ("ERROR", "INCOMPLETE"):
                case.add_error_info(message=f"{status}: {detail}"[:1000])
            elif status == "SKIPPED":
                case.add_skipped_info(message=detail[:1000] or "skipped")
            cases.append(case)
        for agent in sk.tier3.agents if sk.tier3 is not None else []:
            for t in agent.attempts:
                run_suffix = f"-run{t.execution}" if t.execution > 1 else ""
                case = TestCase(f"tier3::{t.case}[{agent.agent}-{t.arm}-a{t.attempt}{run_suffix}]", classname=sk.key, elapsed_sec=t.cli_seconds)
                if t.status == "FAILED":
                    case.add_failure_info(message=f"FAILED (advisory unless --block-on-agent-eval): {t.reason or ''}"[:1000])
                elif t.status == "ERROR":
                    case.add_error_info(message=f"ERROR: {t.reason or ''}"[:1000])
                elif t.status in ("SKIPPED", "NOT_SCORED"):
                    case.add_skipped_info(message=f"{t.status}: {t.reason or ''}"[:1000])
                cases.append(case)
    suite = TestSuite("skilleval", cases)
    return to_xml_report_string([suite], prettyprint=True)


def write(run: RunReport, out: Path) -> list[Path]:
    written = write_reports(run, out)
    written.append(atomic.write_atomic(out / JUNIT, junit(run)))
    return written


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dirs", nargs="+", type=Path, help="the shards' report dirs (or their results.json)")
    parser.add_argument("-o", "--output", type=Path, required=True, help="the merged report dir")


def run(args: argparse.Namespace) -> int:
    try:
        merged = merge([_load(p) for p in args.dirs])
        written = write(merged, args.output)
    except (MergeError, OSError) as exc:
        print(f"skilleval merge: {exc}", file=sys.stderr)
        return 2
    cards = sum(1 for p in written if p.name == "BENCHMARK.md")
    print(f"merged {len(args.dirs)} report dir(s): {merged.skill_count} skill(s), {cards} card(s), results.json, index.html, {JUNIT} "
          f"in {args.output}")
    return 0
