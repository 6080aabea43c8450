"""Typed assertions, decided without a model: answer, workspace, command, trajectory and usage checks.

Each check gives an :class:`AssertionOutcome` whose ``passed`` is True, False, or None when it could
not be decided (no sandbox to run a command in, usage the harness did not record, …): an undecided
check is never reported as a pass. A check that does not apply to the trial (``skill_invoked`` of
the evaluated skill in the without_skill arm, where the skill is not installed) has
``applicable=False``. docs/grading.md lists every rule; the reasons for the less obvious ones are
in the comments below.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from pytest_skilleval.tier3.case_formats.model import (
    Assertion,
    Command,
    Contains,
    EvalCase,
    FileContains,
    FileExists,
    JsonPath,
    MaxCost,
    MaxTokens,
    MaxTurns,
    NotContains,
    NotRegex,
    Regex,
    SkillInvoked,
    SkillNotInvoked,
    TrajectoryContains,
    TrajectoryNotContains,
)
from pytest_skilleval.tier3.grading import workspace
from pytest_skilleval.tier3.grading.answer import ANSWER_LIMIT, Verdict, contains, first_json, json_path, quote, regex
from pytest_skilleval.tier3.grading.model import AssertionOutcome, TrialEvidence
from pytest_skilleval.trajectory.model import InvocationStatus, Trajectory, skill_key

NOT_APPLICABLE = "not applicable"


# -- workspace and command ------------------------------------------------------------------------

def _file_exists(a: FileExists, evidence: TrialEvidence) -> Verdict:
    if evidence.workspace is None:
        return None, "no workspace was recorded for this trial"
    try:
        found = workspace.entry(evidence.workspace, a.path)
    except workspace.Refused as exc:
        return False, str(exc)
    if found.kind in ("file", "directory"):
        return True, f"{found.rel} is a {found.kind}" + (f" of {found.size} bytes" if found.kind == "file" else "")
    return False, f"{found.rel} is a {found.kind}, not a file"


def _file_contains(a: FileContains, evidence: TrialEvidence) -> Verdict:
    if evidence.workspace is None:
        return None, "no workspace was recorded for this trial"
    try:
        text, cut = workspace.read_text(evidence.workspace, a.path)
    except workspace.Refused as exc:
        return False, str(exc)
    note = f" (first {workspace.MAX_READ_BYTES} bytes read)" if cut else ""
    if a.pattern is not None:
        match = re.search(a.pattern, text[:ANSWER_LIMIT])
        return match is not None, (f"matched {quote(match.group(0))}" if match else f"no match for /{a.pattern}/ in {a.path}") + note
    value = a.value or ""
    found = value in text
    return found, (f"found {quote(value)}" if found else f"{quote(value)} not in {a.path}") + note


def _command(a: Command, evidence: TrialEvidence) -> Verdict:
    if evidence.run_in_sandbox is None:
        return None, "not run: the trial has no sandbox to run commands in (run_in_sandbox is None)"
    try:
        outcome = evidence.run_in_sandbox(a.run)
    except Exception as exc:  # noqa: BLE001 - any sandbox failure leaves the check undecided, never passed
        return None, f"the sandbox could not run it: {type(exc).__name__}: {exc}"
    tail = outcome.output.strip()[-300:]
    detail = f"exit code {outcome.exit_code} (expected {a.exit_code})" + (f"; output ends {quote(tail, 300)}" if tail else "")
    if outcome.exit_code != a.exit_code:
        return False, detail
    if a.json_output and not first_json(outcome.output)[0]:
        return False, detail + "; the output is not JSON"
    return True, detail


# -- trajectory -----------------------------------------------------------------------------------

def _no_trajectory() -> Verdict:
    return None, "no trajectory: the agent's output could not be parsed"


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list | tuple):
        return [s for v in value for s in _strings(v)]
    return []


def _trajectory_contains(a: TrajectoryContains | TrajectoryNotContains, evidence: TrialEvidence) -> Verdict:
    """Some tool call's input contains ``a.value`` (``trajectory_contains``), or none does
    (``trajectory_not_contains``). Not found while calls were left out of the parsed window is
    undecided either way: the call may sit in the part that was not kept."""
    traj = evidence.trajectory
    if traj is None:
        return _no_trajectory()
    wanted = isinstance(a, TrajectoryContains)
    for call in traj.tool_calls:
        # Both the raw strings (a command with quotes or newlines) and the JSON form (a key=value).
        texts = _strings(call.arguments) + [json.dumps(call.arguments, ensure_ascii=False)]
        if any(a.value in text for text in texts):
            where = f"in {call.name} call at step {call.position}"
            return wanted, where if wanted else f"{quote(a.value)} {where}"
    if traj.omitted_tool_calls:
        return None, (f"not in the {len(traj.tool_calls)} tool calls kept; {traj.omitted_tool_calls} from the middle of "
                      "the run were not kept when it was parsed")
    return not wanted, f"no tool call's input contains {quote(a.value)} ({len(traj.tool_calls)} calls)"


def _loaded_names(traj: Trajectory) -> str:
    names = [s.name for s in traj.selections(include_user=True) if s.status is InvocationStatus.LOADED]
    return ", ".join(names) or "none"


def _skill_invoked(a: SkillInvoked | SkillNotInvoked, evidence: TrialEvidence, case: EvalCase) -> Verdict:
    # Without the skill installed the baseline cannot load it: counting that as a failure (or a
    # pass) would hand the with_skill arm a lift it did not earn.
    if evidence.arm == "without_skill" and skill_key(a.skill) == skill_key(case.skill):
        return None, f"{NOT_APPLICABLE}: {a.skill} is not installed in the without_skill arm", False
    traj = evidence.trajectory
    if traj is None:
        return _no_trajectory()
    # User-triggered loads (/x, $x) count: the check is whether the skill's instructions were loaded.
    sel = traj.invoked(a.skill, include_user=True)
    if isinstance(a, SkillInvoked):
        if sel is not None and sel.status is InvocationStatus.LOADED:
            return True, f"loaded via {sel.how.value}"
        if sel is not None:
            return False, f"the load was {sel.status.value}" + (f": {sel.message}" if sel.message else "")
        return False, f"{a.skill} was not loaded (loaded: {_loaded_names(traj)})"
    # Not invoked fails on any attempt, refused ones too: the decision to load it was the mistake.
    if sel is None:
        return True, f"{a.skill} was not loaded (loaded: {_loaded_names(traj)})"
    return False, f"the agent {'loaded' if sel.status is InvocationStatus.LOADED else 'tried to load'} {sel.name} via {sel.how.value}"


def _usage(a: MaxTurns | MaxTokens | MaxCost, evidence: TrialEvidence) -> Verdict:
    # The gateway's metering covers every CLI alike (some harnesses report no cost at all), so it
    # wins over the trajectory's own figures when the runner passes it.
    traj = evidence.trajectory
    if isinstance(a, MaxTokens) and evidence.metered_tokens is not None:
        return evidence.metered_tokens <= a.value, f"{evidence.metered_tokens} tokens metered at the gateway (limit {a.value})"
    if isinstance(a, MaxCost) and evidence.metered_cost_usd is not None:
        return evidence.metered_cost_usd <= a.value, f"${evidence.metered_cost_usd:.4f} metered at the gateway (limit ${a.value:.4f})"
    if traj is None:
        return _no_trajectory()
    if isinstance(a, MaxTurns):
        if traj.turns is None:
            return None, "the harness did not record the number of turns"
        return traj.turns <= a.value, f"{traj.turns} turns (limit {a.value})"
    if isinstance(a, MaxTokens):
        total = traj.usage.total_tokens
        if total == 0:  # no model answers with zero tokens: the harness did not meter this run
            return None, "the harness did not record token usage"
        return total <= a.value, f"{total} tokens, input + output (limit {a.value})"
    if traj.cost_usd is None:
        return None, "the run's cost was not recorded"
    return traj.cost_usd <= a.value, f"${traj.cost_usd:.4f} (limit ${a.value:.4f})"


# -- dispatch -------------------------------------------------------------------------------------

_ANSWER_CHECKS: dict[type, Callable[[Any, TrialEvidence], Verdict]] = {
    Contains: contains, NotContains: contains, Regex: regex, NotRegex: regex, JsonPath: json_path,
    FileExists: _file_exists, FileContains: _file_contains, Command: _command, TrajectoryContains: _trajectory_contains,
    TrajectoryNotContains: _trajectory_contains,
    MaxTurns: _usage, MaxTokens: _usage, MaxCost: _usage,
}


def describe(a: Assertion) -> str:
    """A short description for an assertion whose author wrote no ``text``."""
    fields = a.model_dump(exclude={"text", "name", "type", "line"}, exclude_defaults=True)
    args = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    return f"{a.type}({args})"


def source(case: EvalCase, a: Assertion) -> str:
    line = a.line or case.source.line
    return f"{case.source.file}:{line}" if line else case.source.file


def check(a: Assertion, evidence: TrialEvidence, case: EvalCase) -> AssertionOutcome:
    """One typed assertion. A bug or an I/O error inside a check leaves it undecided, never passed."""
    try:
        if isinstance(a, SkillInvoked | SkillNotInvoked):
            verdict = _skill_invoked(a, evidence, case)
        else:
            verdict = _ANSWER_CHECKS[type(a)](a, evidence)
    except Exception as exc:  # noqa: BLE001 - one broken check must not stop the others being graded
        verdict = None, f"could not be checked: {type(exc).__name__}: {exc}"
    applicable = verdict[2] if len(verdict) == 3 else True  # type: ignore[misc]
    return AssertionOutcome(kind=a.type, description=a.text or a.name or describe(a), passed=verdict[0], detail=verdict[1],
                            source=source(case, a), applicable=applicable)


def negative_control(evidence: TrialEvidence, case: EvalCase) -> AssertionOutcome | None:
    """The check every negative case implies: the evaluated skill stays unloaded (None if the case
    already says so explicitly, or is not a negative control)."""
    if not case.negative:
        return None
    if any(isinstance(a, SkillNotInvoked) and skill_key(a.skill) == skill_key(case.skill) for a in case.assertions):
        return None
    implied = SkillNotInvoked(skill=case.skill, text=f"negative control: the agent must not load {case.skill}")
    return check(implied, evidence, case).model_copy(update={"source": f"{case.source.file} (implied: expected_skill is null)"})


def check_typed(evidence: TrialEvidence, case: EvalCase) -> list[AssertionOutcome]:
    """Every typed assertion of ``case`` in file order, then the negative-control check if implied."""
    outcomes = [check(a, evidence, case) for a in case.typed_assertions()]
    implied = negative_control(evidence, case)
    return outcomes + ([implied] if implied is not None else [])
