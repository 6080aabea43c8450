"""Controller-side aggregation and report writing (registered only where reports are written).

Items publish their results on ``report.user_properties``; xdist ships those to the controller
and replays ``pytest_runtest_logreport`` there, so this object sees every result exactly as a
plain run would. Each check result goes to a spool on disk as it arrives (``spool.py``), not into
memory, and leaves the report pytest keeps to the end once every hook has seen it: the controller's
memory does not grow with the catalog. It writes once, at session end, reading the spool back one
skill at a time — also after Ctrl-C or SIGTERM, then marked incomplete, as it is when an xdist worker
crashed (the item it was running is reported INCOMPLETE on its card). A report that cannot be
written fails the run: CI must not go green without one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilleval import atomic, identity, roots, shard, state, terminalstats
from pytest_skilleval.config import Settings
from pytest_skilleval.published import RESULT_PROPERTY, SELECTION_PROPERTY, TRIAL_PROPERTY, TRIGGER_PROPERTY
from pytest_skilleval.reports.spool import Spool

if TYPE_CHECKING:
    from pytest_skilleval.reports.model import CheckRecord, RunReport
    from pytest_skilleval.tier3 import report as tier3_report
    from pytest_skilleval.tier3.record import TrialRecord
    from pytest_skilleval.triggers import metrics as trigger_metrics
    from pytest_skilleval.triggers.record import TriggerRecord

# The report models, the writers and their templates, and the Tier 3, trigger and selection records are
# imported where a record arrives or the reports are built: this session is registered in every pytest
# run that writes reports, most of which (a project's own tests) publish no record at all.

#: ``when`` of the report xdist makes up for the item a crashed worker was running.
CRASH_PHASE = "???"
#: ``<skill path>::tier<N>::<name>`` (checks) and ``<skill path>::<kind>::<name>`` (trials, triggers).
_SKILL_NODEID = re.compile(r"^(?P<path>[^:]+)::(?P<kind>[a-z]+(?P<tier>\d)?)::(?P<name>.+)$")


def _skill_folder_of(config: pytest.Config, node_path: str) -> Path:
    """The skill folder a node id's path names (escaped, collect.py): a path below the rootdir, or a skill named
    by its folder alone because it is the rootdir or a ``--skills`` tree outside it (collect.SkillDirectory), or a
    path below such a tree."""
    rel = identity.unescape(node_path)
    below_root = config.rootpath / rel
    if roots.is_skill_dir(below_root):
        return below_root
    settings = config.stash.get(state.SETTINGS, None)
    for tree in (config.rootpath, *(settings.skill_paths if settings is not None else ())):
        if identity.escape(tree.name) == node_path and roots.is_skill_dir(tree):
            return tree
        if roots.is_skill_dir(tree / rel):
            return tree / rel
    return below_root


def _trial_record(value: str) -> TrialRecord:
    from pytest_skilleval.tier3.record import TrialRecord

    return TrialRecord.model_validate_json(value)


def _from_json() -> Callable[[str], Any]:
    """pydantic-core's JSON parser, imported with the first check result a session sees."""
    from pydantic_core import from_json

    return from_json


def envelope_record(value: str) -> CheckRecord:
    """A published result's envelope (collect.py) as its record, parsed and validated in one step (its skill's
    keys ignored): what ``CheckRecord(blocking=..., result=...)`` of its ``json.loads`` is, in about two thirds
    of the CPU (one Rust pass, no Python dict in between)."""
    from pytest_skilleval.reports.model import CheckRecord

    return CheckRecord.model_validate_json(value)


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


#: What separates folders in a key here: '/', and on Windows a backslash too. Elsewhere a backslash is a character
#: of a folder's name and is kept: a key is escaped injectively (identity.py: a name's own backslashes doubled, a
#: byte that is not UTF-8 written as its escape), so the card folder is the key itself and two skills never share one.
_KEY_SEPARATORS = re.compile("[/\\\\]" if os.sep == "\\" else "/")


def card_dir(report_dir: Path, key: str) -> Path:
    """A skill's folder in the report dir: its key's path; '..' and absolute parts can never climb out of it."""
    parts = [p for p in _KEY_SEPARATORS.split(key) if p not in ("", ".", "..")]
    return report_dir.joinpath(*(parts or ["skill"]))


class ReportSession:
    def __init__(self, config: pytest.Config, settings: Settings) -> None:
        self.config = config
        self.settings = settings
        self.results = Spool()  # skill key -> check -> the item's result envelope (JSON), on disk
        self.skills = Spool()  # skill key -> the SkillReport's JSON, written at session end
        self._calls: dict[str, pytest.TestReport] = {}  # nodeid -> call report, until its teardown has been seen
        self.meta: dict[str, tuple[str, str]] = {}
        self.run: RunReport | None = None
        self.written: list[Path] = []
        self.write_error: str | None = None
        self.step_summary_error: str | None = None  # $GITHUB_STEP_SUMMARY could not be appended to: a warning, not a failure
        self.selection: dict[str, str] = {}  # nodeid -> record; every phase's report repeats the properties
        self.trials: dict[str, TrialRecord] = {}  # run_id -> record: every execution, reruns included
        self.failures: dict[str, bool] = {}  # nodeid -> only a Tier 3 trial that FAILED its case (advisory)
        self.triggers: dict[str, TriggerRecord] = {}  # run_id -> trigger trial record
        self.crashed: list[str] = []  # nodeids whose worker died while running them
        #: nodeids of the items collected (a plain run's, or the first xdist worker's: every worker collects
        #: the same), kept by reference: an interrupted run's skills are INCOMPLETE for the checks that did not finish
        self.collected: list[str] | tuple[str, ...] = ()
        self.not_started: set[str] = set()  # nodeids whose setup skipped or failed: finished, without a result
        self.started = time.monotonic()
        self._previous_sigterm: object = None

    @pytest.hookimpl
    def pytest_sessionstart(self) -> None:
        """SIGTERM (CI cancel, ``timeout``) ends the run as Ctrl-C does: pytest unwinds, reports are written."""
        if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
            self._previous_sigterm = signal.signal(signal.SIGTERM, _raise_interrupt)  # only the main thread may, and only over the default

    @pytest.hookimpl
    def pytest_unconfigure(self) -> None:
        self.results.close()
        self.skills.close()
        if self._previous_sigterm is not None:
            signal.signal(signal.SIGTERM, self._previous_sigterm)  # type: ignore[arg-type]
            self._previous_sigterm = None

    @pytest.hookimpl
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.collected = [item.nodeid for item in session.items]

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        if not self.collected:
            self.collected = ids

    def _item(self, nodeid: str) -> tuple[str, Path, int, str] | None:
        """(skill key, skill path, tier, check name) of a skill's item, from its node id."""
        match = _SKILL_NODEID.match(nodeid)
        if match is None:
            return None
        path = _skill_folder_of(self.config, match["path"])
        run = self.config.stash.get(state.RUN_STATE, None)
        key = run.skill_key(path) if run is not None else match["path"]
        tier = int(match["tier"]) if match["tier"] else 3
        return key, path, tier, match["name"] if match["tier"] else f"{match['kind']}::{match['name']}"

    def _add_incomplete(self, key: str, path: Path, tier: int, check: str, reason: str) -> None:
        from pytest_skilleval.reports.model import CheckRecord
        from pytest_skilleval.results import CheckResult, encodable

        record = CheckRecord(blocking=True, result=CheckResult.incomplete(check, reason, tier=tier))
        self.results.add(key, check, record.model_dump_json())
        self.meta.setdefault(key, (encodable(path.name), encodable(str(path))))  # a folder's undecodable bytes, escaped

    def _crashed(self, report: pytest.TestReport) -> None:
        """The item a dead worker was running: INCOMPLETE on its skill's card, and the run incomplete."""
        self.crashed.append(report.nodeid)
        item = self._item(report.nodeid)
        if item is not None:
            self._add_incomplete(*item, f"no result: {report.longrepr} (killed, or out of memory)")

    def _unfinished(self) -> None:
        """After an interrupted (or crashed) run, each check item of a skill that has any result, but that did not
        finish itself, is INCOMPLETE: the skill was only half checked, and what did not run is not a pass. A skill
        never reached has no result and no card. (Tier 3 trials and trigger runs have their own reports.)"""
        started = set(self.results.groups())
        unfinished: dict[str, list[tuple[Path, int, str]]] = {}
        for nodeid in self.collected:
            item = self._item(nodeid)
            if item is not None and item[2] < 3 and item[0] in started and nodeid not in self.not_started:
                unfinished.setdefault(item[0], []).append(item[1:])
        for key, items in unfinished.items():
            finished = {record.result.check for record in self.records(key)}
            for path, tier, check in items:
                if check not in finished:
                    self._add_incomplete(key, path, tier, check, "not run: the run was interrupted (or a worker died) "
                                                                 "before this check finished")

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when == CRASH_PHASE and report.failed:
            self._crashed(report)
        elif report.when == "setup" and not report.passed:
            self.not_started.add(report.nodeid)
        if report.failed:  # a rerun's intermediate report has outcome "rerun": only final failures count
            trial = [_trial_record(v) for k, v in report.user_properties if k == TRIAL_PROPERTY]
            advisory = report.when == "call" and bool(trial) and all(t.status == "FAILED" for t in trial)
            self.failures[report.nodeid] = self.failures.get(report.nodeid, True) and advisory
        for name, value in report.user_properties:
            if name == TRIAL_PROPERTY:
                record = _trial_record(value)
                self.trials[record.run_id] = record
                self.meta.setdefault(record.skill, (record.skill_name, record.skill_path))
                continue
            if name == TRIGGER_PROPERTY:
                from pytest_skilleval.triggers.record import TriggerRecord

                trigger = TriggerRecord.model_validate_json(value)
                self.triggers[trigger.run_id] = trigger
                self.meta.setdefault(trigger.skill, (trigger.skill_name, trigger.skill_path))
                continue
            if name == SELECTION_PROPERTY:
                self.selection[json.loads(value)["nodeid"]] = value
                continue
            if name != RESULT_PROPERTY or report.when != "call":  # teardown's report repeats call's properties
                continue
            envelope = _from_json()(value)  # our own JSON (collect.py), its strings surrogate-free: what json.loads reads, in half the CPU
            self.results.add(envelope["skill"], envelope["result"]["check"], value)
            self.meta[envelope["skill"]] = (envelope["skill_name"], envelope["skill_path"])

    @pytest.hookimpl(wrapper=True, specname="pytest_runtest_logreport")
    def pytest_runtest_logreport_release(self, report: pytest.TestReport) -> Generator[None, None, None]:
        """Once every hook has seen an item's reports (JUnit takes its copy at teardown), the result leaves them:
        pytest keeps every report to the end, and 5,000 skills' results would stay in memory with them. (A second
        implementation of the hook, under a name pytest registers: it takes only ``pytest_*`` names.)"""
        yield
        if report.when in ("setup", "teardown"):
            terminalstats.drop_if_silent(self.config, report)
        if report.when == "call":
            self._calls[report.nodeid] = report
        elif report.when == "teardown":
            for seen in (self._calls.pop(report.nodeid, None), report):
                if seen is not None:  # in place: the terminal keeps these very report objects (the item: release.py)
                    seen.user_properties[:] = [(k, v) for k, v in seen.user_properties if k != RESULT_PROPERTY]

    def records(self, key: str) -> list[CheckRecord]:
        """A skill's check records, read back from the spool."""
        return [envelope_record(text) for text in self.results.read(key)]

    def tier3_reports(self) -> dict[str, tier3_report.Tier3Report]:
        from pytest_skilleval.tier3 import report as tier3_report
        from pytest_skilleval.tier3.plugin import TIER3

        settings = self.config.stash[TIER3].settings
        by_skill: dict[str, list[TrialRecord]] = {}
        for record in self.trials.values():
            by_skill.setdefault(record.skill, []).append(record)
        return {key: tier3_report.build(rows, blocking=settings.block, reruns=settings.reruns, timeout_s=settings.timeout_s,
                                        max_turns=settings.max_turns, judge_votes=settings.judge_votes) for key, rows in by_skill.items()}

    def trigger_reports(self) -> dict[str, trigger_metrics.SkillTriggers]:
        from pytest_skilleval.triggers import metrics as trigger_metrics
        from pytest_skilleval.triggers.plugin import TRIGGERS

        s = self.config.stash[TRIGGERS].settings
        thresholds = (s.block_recall, s.block_precision) if s.block_recall is not None and s.block_precision is not None else None
        return trigger_metrics.summarize(self.triggers.values(), thresholds=thresholds)

    def build(self, exitstatus: int) -> RunReport:
        """The run, with its skills light (no check records: counts, verdicts, the summary and the exit status
        need none). Each whole SkillReport is built once, one at a time, and kept as JSON in ``self.skills``
        for the writers (:meth:`skill_reports`)."""
        from pytest_skilleval.reports import provenance
        from pytest_skilleval.reports.model import build_run, build_skill
        from pytest_skilleval.selection.report import summarize as summarize_selection

        complete = exitstatus not in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR) and not self.crashed
        if not complete:
            self._unfinished()
        tier3 = self.tier3_reports()
        triggers = self.trigger_reports()
        keys = sorted(set(self.results.groups()) | set(tier3) | set(triggers))
        self.skills.close()
        light = []
        for key in keys:
            sk = build_skill(key, *self.meta[key], self.records(key), tier3.get(key))
            sk.triggers = triggers.get(key)
            self.skills.add(key, "", sk.model_dump_json(indent=2))
            light.append(sk.model_copy(update={"checks": []}))
        s = self.settings
        settings = {"profile": s.profile, "fail_on": s.fail_on.value, "checks": s.checks or "default",
                    "allow_incomplete": s.allow_incomplete, "min_quality": s.min_quality}
        run = build_run(light, tool=provenance.tool_info(), generated_at=datetime.now(UTC).isoformat(timespec="seconds"),
                        complete=complete, exit_status=int(exitstatus), settings=settings)
        run.duration_s = round(time.monotonic() - self.started, 3)
        part = shard.current(self.config)
        run.shard = f"{part[0]}/{part[1]}" if part else None
        if self.selection:
            run.selection = summarize_selection(json.loads(v) for v in self.selection.values())
        return run

    def skill_reports(self) -> Iterator[str]:
        """Each whole skill report's JSON (``indent=2``), in key order, read back one at a time."""
        for key in sorted(self.skills.groups()):
            yield from self.skills.read(key)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self._previous_sigterm is not None:  # the run is ending anyway: a late SIGTERM must not cut the report in half
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
        if not self.results and not self.selection and not self.trials and not self.triggers:
            return
        self.run = self.build(exitstatus)
        below = [f"{sk.key} [{agent}]" for sk in self.run.skills if sk.triggers for agent in sk.triggers.failing_agents]
        if below and session.exitstatus == pytest.ExitCode.OK:  # --block-on-triggers: the thresholds decide
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
            self.run.exit_status = int(session.exitstatus)
        if self.trials:  # Tier 3 is advisory unless --block-on-agent-eval: the controller settles the exit status
            from pytest_skilleval.tier3 import report as tier3_report
            from pytest_skilleval.tier3.plugin import TIER3

            reports = [sk.tier3 for sk in self.run.skills if sk.tier3 is not None]
            session.exitstatus = tier3_report.exit_status(int(session.exitstatus), self.failures.values(), reports,
                                                          block=self.config.stash[TIER3].settings.block)
            self.run.exit_status = int(session.exitstatus)
        if self.settings.report_dir is not None:
            try:
                self.written = write_reports(self.run, self.settings.report_dir, self.config.invocation_params.dir, self.skill_reports)
            except OSError as exc:  # the outcomes stand, but a run whose report is lost is not green
                self.write_error = f"{type(exc).__name__}: {exc}"
                if session.exitstatus == pytest.ExitCode.OK:
                    session.exitstatus = pytest.ExitCode.TESTS_FAILED
        self.append_step_summary(os.environ.get("GITHUB_STEP_SUMMARY"))

    def append_step_summary(self, path: str | None) -> None:
        """The run's summary appended to GitHub's step summary file, whether or not the report files were written
        (it then says why not). A summary that cannot be appended is a warning on the terminal: the run's outcomes,
        exit status and reports are what they were."""
        if not path or self.run is None:
            return
        from pytest_skilleval.reports import summary

        text = summary.github_markdown(self.run, results_json=self.settings.report_dir is not None, write_error=self.write_error)
        try:
            with open(path, "a", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            self.step_summary_error = f"{path}: {type(exc).__name__}: {exc.strerror or exc}"

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        if self.run is None:
            return
        from pytest_skilleval.reports import summary

        terminalreporter.write_sep("-", "skilleval summary")
        for line in summary.terminal_lines(self.run, results_json=bool(self.written)):
            terminalreporter.write_line(line)
        if self.step_summary_error:
            terminalreporter.write_line(f"skilleval: WARNING: $GITHUB_STEP_SUMMARY not written: {self.step_summary_error}", yellow=True)
        if self.write_error:
            terminalreporter.write_line(f"skilleval: reports NOT written: {self.write_error}", red=True)
        elif self.written:
            cards = sum(1 for p in self.written if p.name == "BENCHMARK.md")
            terminalreporter.write_line(f"skilleval: {cards} BENCHMARK.md card(s), results.json and index.html in {self.settings.report_dir}")


#: Where the skills go in ``RunReport.model_dump_json(indent=2)`` of a run whose skill list is empty.
_NO_SKILLS = '\n  "skills": []'


def _results_json(run: RunReport, skills: Iterable[str]) -> Iterator[str]:
    """``run.model_dump_json(indent=2) + "\n"`` piece by piece, the skills taken from ``skills`` (each a
    SkillReport's ``model_dump_json(indent=2)``) instead of ``run.skills``: the same text, never whole in memory."""
    head, tail = run.model_copy(update={"skills": []}).model_dump_json(indent=2).split(_NO_SKILLS)
    yield head + '\n  "skills": ['
    first = True
    for text in skills:
        yield ("\n    " if first else ",\n    ") + text.replace("\n", "\n    ")  # each line indented by four
        first = False
    yield ("]" if first else "\n  ]") + tail + "\n"


def write_reports(run: RunReport, report_dir: Path, project: Path | None = None,
                  skills: Callable[[], Iterable[str]] | None = None) -> list[Path]:
    """Cards, results.json and index.html; no symbolic link is followed in the folders the run creates
    or inside ``project`` (see :func:`atomic.trusted_prefix`). ``skills`` gives the whole skill reports'
    JSON (``indent=2``) in key order, one at a time, on every call (the session's spool); without it they
    are ``run.skills``. Each document is written as it is produced: none is ever whole in memory."""
    from pydantic_core import from_json

    from pytest_skilleval.reports import benchmark_md, html
    from pytest_skilleval.reports.model import SkillReport

    def in_run() -> Iterator[str]:
        return (sk.model_dump_json(indent=2) for sk in run.skills)

    skills = skills or in_run
    written = []
    trusted = atomic.trusted_prefix(report_dir, project) if project is not None else None
    atomic.ensure_dir(report_dir, trusted)
    seen: set[Path] = set()
    cards: list[Path] = []

    def each_skill() -> Iterator[str]:
        for text in skills():
            sk = SkillReport.model_validate_json(text)
            target = card_dir(report_dir, sk.key)
            while target in seen:  # two keys that sanitise to one folder must not overwrite each other
                target = target.with_name(target.name + "_")
            seen.add(target)
            cards.append(atomic.write_atomic(target / "BENCHMARK.md", benchmark_md.render(sk, run), trusted, durable=False))
            yield text

    results = atomic.write_atomic_chunks(report_dir / "results.json", _results_json(run, each_skill()), trusted, durable=False)
    written += [*cards, results]
    # the page reads the same document as `skilleval html` reads results.json, its skills one at a time (the
    # page parses each several times: pydantic's parser reads our own JSON in half json.loads's CPU, same data)
    doc = run.model_copy(update={"skills": []}).model_dump(mode="json")
    doc["skills"] = html.Replay(skills, len(run.skills), parse=from_json)
    written.append(html.write(doc, report_dir, trusted))
    return written
