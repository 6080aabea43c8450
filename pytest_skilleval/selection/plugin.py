"""Skill selection in pytest: ``--skilleval-trajectories DIR`` and the ``skilleval_selection`` fixture.

Each transcript under DIR is a collector; each skill the agent invoked is an item, marked
``selection`` (and ``skilleval``, ``tier3``), with node id ``<file>::selection::<skill>[<n>]``. A
transcript where the agent invoked nothing gives one ``<file>::selection::none`` item, skipped with
the N/A reason (and left out of the mean). Next to ``run.jsonl`` (or ``run.events.jsonl``) the
collector reads ``run.requests.jsonl`` (a gateway request log: the offered catalog and the task)
and ``run.case.yaml`` (expectations, task, catalog, format), which adds a ``<file>::expectations`` item.

Items are ``pytest.Function`` objects, so the judge is a fixture: ``skilleval_selection_judge``,
which defaults to the provider layer's ``skilleval_chat``. Override either in ``conftest.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_skilleval.selection.registry import parser_registry as parser_registry  # re-exported: Tier 3 and triggers use it

if TYPE_CHECKING:
    from pytest_skilleval.providers.base import ChatProvider
    from pytest_skilleval.selection import judge as sel
    from pytest_skilleval.trajectory.model import Trajectory
    from pytest_skilleval.trajectory.registry import ParserRegistry

# Every pytest run registers this plugin (its options, marker and fixtures): the collectors and items
# (items.py), the judge, the models and YAML are imported by a run that names transcripts, or by the fixtures.

MARKER = "selection: skill-selection accuracy of a recorded agent trajectory (one item per invoked skill)"
ROOTS = pytest.StashKey[tuple[Path, ...]]()


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("skilleval")
    group.addoption("--skilleval-trajectories", action="append", default=[], metavar="PATH", dest="skilleval_trajectories",
                    help="A recorded agent transcript, or a folder of them: one selection item per invoked skill (repeatable).")
    group.addoption("--skilleval-trajectory-format", default=None, metavar="NAME", dest="skilleval_trajectory_format",
                    help="Parser for every transcript (e.g. claude-code, codex, opencode, gemini-cli); default: sniff each file.")
    parser.addini("skilleval_trajectories", "Transcripts or folders of transcripts to judge for skill selection.", type="paths", default=[])


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    base = config.invocation_params.dir
    roots = [(base / p).resolve() for p in config.getoption("skilleval_trajectories", None) or []]
    roots += [Path(p).resolve() for p in config.getini("skilleval_trajectories") or []]
    fmt = config.getoption("skilleval_trajectory_format", None)
    if roots or fmt:  # a run that parses transcripts builds the registry now, so a bad parser or format is a usage error
        from pytest_skilleval.trajectory.registry import UnknownFormatError

        try:
            registry = parser_registry(config)
            if fmt:
                registry.get(fmt)
        except UnknownFormatError as exc:
            raise pytest.UsageError(str(exc)) from None
    for root in roots:
        if not root.exists():
            raise pytest.UsageError(f"--skilleval-trajectories: {root} does not exist")
    config.stash[ROOTS] = tuple(roots)
    if roots:
        explicit = config.args_source == pytest.Config.ArgsSource.ARGS or config.getoption("skilleval_skills", None)
        present = {str((base / a.split("::", 1)[0]).resolve()) for a in config.args} if explicit else set()
        wanted = [str(r) for r in roots if str(r) not in present]
        config.args[:] = [*config.args, *wanted] if explicit else wanted


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    roots = parent.config.stash.get(ROOTS, ())
    if not roots:  # asked of every file of every run: a run without transcripts imports nothing here
        return None
    from pytest_skilleval.selection.items import TrajectoryFile, transcript_base

    if transcript_base(file_path) and any(file_path == r or r in file_path.parents for r in roots):
        return TrajectoryFile.from_parent(parent, path=file_path)
    return None


@pytest.fixture(scope="session")
def skilleval_selection_judge(request: pytest.FixtureRequest) -> ChatProvider | None:
    """The selection judge: the run's ``skilleval_chat`` (None when no provider is configured)."""
    try:
        return request.getfixturevalue("skilleval_chat")  # type: ignore[no-any-return]
    except pytest.FixtureLookupError:
        return None


class SelectionEvaluator:
    """What the ``skilleval_selection`` fixture returns: parse and judge in a hand-written test."""

    def __init__(self, judge: ChatProvider | None, registry: ParserRegistry | None = None) -> None:
        if registry is None:
            from pytest_skilleval.trajectory import default_registry

            registry = default_registry()
        self.judge, self.registry = judge, registry

    def load(self, path: str | Path, *, format: str | None = None, request_log: str | Path | None = None) -> Trajectory:
        return self.registry.parse_file(path, format=format, request_log=request_log)

    def evaluate(self, trajectory: Trajectory | str | Path | None, **kw: Any) -> sel.SelectionEvaluation:
        from pytest_skilleval.selection import judge as sel

        traj = self.load(trajectory) if isinstance(trajectory, (str, Path)) else trajectory
        return sel.evaluate_selection(traj, self.judge, **kw)


@pytest.fixture
def skilleval_selection(skilleval_selection_judge: ChatProvider | None, pytestconfig: pytest.Config) -> SelectionEvaluator:
    return SelectionEvaluator(skilleval_selection_judge, parser_registry(pytestconfig))

