"""The collectors and items of ``--skilleval-trajectories``: one collector per transcript, one item per
invoked skill, and the ``expectations`` item of a ``<run>.case.yaml`` (see ``plugin.py``).

Imported when a run names transcripts (``plugin.pytest_collect_file``): the models, the judge and YAML
are no business of a pytest run that has none.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import Field, ValidationError

from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.selection import judge as sel
from pytest_skilleval.selection.metrics import SelectionExpectation, case_outcome, check_expectations
from pytest_skilleval.selection.registry import parser_registry
from pytest_skilleval.selection.report import SELECTION_PROPERTY, SelectionRecord
from pytest_skilleval.trajectory.model import CatalogSkill, Trajectory, TrajectoryParseError

SUFFIXES = (".events.jsonl", ".jsonl", ".ndjson", ".json")
SIDECARS = (".requests.jsonl", ".case.yaml", ".case.yml", ".case.json")


class TrajectoryCase(SelectionExpectation):
    """A ``<run>.case.yaml`` beside a transcript: what the test setup knows and the transcript may not."""

    task: str | None = None
    catalog: list[CatalogSkill] | None = None
    format: str | None = None
    request_log: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


def transcript_base(path: Path) -> str | None:
    name = path.name
    if name.endswith(SIDECARS) or name.startswith("."):
        return None
    return next((name[: -len(s)] for s in SUFFIXES if name.endswith(s)), None)


class TrajectoryFile(pytest.File):
    trajectory: Trajectory | None = None
    case: TrajectoryCase | None = None

    def _sidecar(self, *suffixes: str) -> Path | None:
        base = transcript_base(self.path) or self.path.stem
        return next((p for p in (self.path.with_name(base + s) for s in suffixes) if p.is_file()), None)

    def _load(self) -> None:
        case_path = self._sidecar(".case.yaml", ".case.yml", ".case.json")
        if case_path is not None:
            try:
                self.case = TrajectoryCase.model_validate(yaml.safe_load(case_path.read_text(encoding="utf-8")) or {})
            except (OSError, yaml.YAMLError, ValidationError) as exc:
                raise TrajectoryParseError(case_path, None, f"bad case file: {str(exc).splitlines()[0]}") from None
        req = (self.path.parent / self.case.request_log) if self.case and self.case.request_log else self._sidecar(".requests.jsonl")
        fmt = (self.case.format if self.case else None) or self.config.getoption("skilleval_trajectory_format", None)
        from pytest_skilleval.trajectory.registry import UnknownFormatError

        try:
            self.trajectory = parser_registry(self.config).parse_file(self.path, format=fmt, request_log=req)
        except UnknownFormatError as exc:
            raise TrajectoryParseError(self.path, None, str(exc)) from None

    def collect(self) -> list[pytest.Item | pytest.Collector]:
        try:
            self._load()
        except TrajectoryParseError as exc:  # bad input is a failing item with file:line, not a collection crash
            return [ParseErrorItem.from_parent(self, name="parse", error=exc)]
        items: list[pytest.Item | pytest.Collector] = [SelectionCollector.from_parent(self, name="selection")]
        if self.case is not None and not self.case.is_empty():
            items.append(SelectionItem.from_parent(self, name="expectations", callobj=_expectations_test))
        return items

    def rel(self) -> str:
        return self.nodeid.split("::", 1)[0]


class SelectionCollector(pytest.Collector):
    def collect(self) -> list[pytest.Item]:
        file = self.parent
        assert isinstance(file, TrajectoryFile) and file.trajectory is not None
        skills = file.trajectory.selections()
        if not skills:  # no judge needed: a broken provider setup must not turn N/A into an error
            return [SelectionItem.from_parent(self, name="none", callobj=_not_applicable_test)]
        return [SelectionItem.from_parent(self, name=f"{s.name}[{n}]", callobj=_selection_test, skill_index=n - 1)
                for n, s in enumerate(skills, 1)]


class SelectionFailed(Exception):
    pass


class SelectionItem(pytest.Function):
    def __init__(self, *, skill_index: int | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.skill_index = skill_index
        for mark in ("skilleval", "tier3", "selection"):
            self.add_marker(mark)

    @property
    def file(self) -> TrajectoryFile:
        node = self.getparent(TrajectoryFile)
        assert node is not None
        return node

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, 0, self.nodeid.split("::", 1)[-1]

    def publish(self, record: SelectionRecord, status: str, score: float | None) -> None:
        self.user_properties.append((SELECTION_PROPERTY, record.model_dump_json()))
        self.user_properties.append(("skilleval.status", status))
        if score is not None:
            self.user_properties.append(("skilleval.score", f"{score:g}"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, SelectionFailed):
            return str(excinfo.value)  # the verdict and its reason, not a traceback into this module
        return str(super().repr_failure(excinfo))


class ParseErrorItem(pytest.Item):
    def __init__(self, *, error: TrajectoryParseError, **kw: Any) -> None:
        super().__init__(**kw)
        self.error = error
        for mark in ("skilleval", "tier3", "selection"):
            self.add_marker(mark)

    def runtest(self) -> None:
        rel = self.nodeid.split("::", 1)[0]
        record = SelectionRecord(nodeid=self.nodeid, trajectory=rel, kind="parse-error", error=str(self.error))
        self.user_properties.append((SELECTION_PROPERTY, record.model_dump_json()))
        self.user_properties.append(("skilleval.status", "ERROR"))
        raise SelectionFailed(f"cannot parse the trajectory: {self.error}")

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, self.error.line - 1 if self.error.line else 0, "parse"

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str:
        return str(excinfo.value) if isinstance(excinfo.value, SelectionFailed) else str(super().repr_failure(excinfo, style=style))


def _not_applicable_test(request: pytest.FixtureRequest) -> None:
    _selection_test(request, None)


def _selection_test(request: pytest.FixtureRequest, skilleval_selection_judge: ChatProvider | None) -> None:
    item = request.node
    assert isinstance(item, SelectionItem)
    file = item.file
    traj, case = file.trajectory, file.case
    assert traj is not None
    if item.skill_index is None:
        row = sel.not_applicable_row(traj, sel.offered_catalog(traj, case.catalog if case else None))
    else:
        only = traj.selections()[item.skill_index]
        # Judge this skill alone: the trajectory is shared, the decision under evaluation is not.
        judged = traj.model_copy(update={"invocations": [i for i in traj.invocations if i.key == only.key]})
        row = sel.rows_for(judged, skilleval_selection_judge, task=case.task if case else None,
                           catalog=case.catalog if case else None)[0]
        if row.label == "error" and skilleval_selection_judge is None:
            from pytest_skilleval.providers.select import NO_CHAT

            row = row.model_copy(update={"reason": f"{only.name}: no judge: {NO_CHAT}"})
    item.publish(SelectionRecord(nodeid=item.nodeid, trajectory=file.rel(), harness=traj.harness, row=row), row.status.value, row.score)
    if row.not_applicable:
        skip = pytest.skip.Exception(f"N/A: {row.reason}")
        skip._use_item_location = True  # report the skip at the transcript, not at this module
        raise skip
    if not row.passed:
        raise SelectionFailed(f"skill selection {row.label}: {row.reason}")


def _expectations_test(request: pytest.FixtureRequest) -> None:
    item = request.node
    assert isinstance(item, SelectionItem)
    file = item.file
    assert file.trajectory is not None and file.case is not None
    outcomes = check_expectations(file.trajectory, file.case)
    record = SelectionRecord(nodeid=item.nodeid, trajectory=file.rel(), harness=file.trajectory.harness, kind="expectations",
                             expectations=outcomes, case=case_outcome(file.trajectory, file.case))
    failed = [o for o in outcomes if not o.passed]
    item.publish(record, "FAILED" if failed else "PASSED", None)
    if failed:
        raise SelectionFailed("\n".join(f"{o.check}: {o.message}" for o in failed))
