"""Trial outcome rules, in one place: the statuses a trial can end in and the rules that choose one.

docs/grading.md ("Trial status") states each rule for users; the grader (``grading/grade.py``), the
trial runner (``trial.py``), the items and the controller's statistics all read them from here.

Statuses:

- ``PASSED`` / ``FAILED``: the agent's result on the case. Only these two enter pass rates,
  pass@k / pass^k, dimension means and lift.
- ``NOT_SCORED``: the trial ran, but what would decide it was not checked: a free-text assertion
  with no judge configured (and no decided assertion failed), or no assertion at all and no judge to
  score Correctness or Effectiveness.
  Kept out of every statistic like ERROR, and shown as such.
- ``ERROR``: the trial is no evidence about the skill. Its :data:`ErrorCause` says whose fault:
  ``infra`` (the model API, the gateway's upstream, the sandbox: retried under
  ``--skilleval-infra-retries``), ``harness`` (ours: staging refused, a cassette missing, replay
  diverged, the grader broke, an assertion could not be decided) or ``judge`` (the judge failed).
- ``SKIPPED``: the trial did not run (no script for this agent, budget spent, tooling missing).

Rules, in the order they apply:

1. An **infrastructure failure** is ERROR (``infra``) whatever the agent printed: the gateway ended
   the trial after consecutive upstream failures; the agent's last model request failed upstream
   (4xx/5xx, timeout, stalled or dropped stream) and it never got an answer after that; the agent
   reported a model API error (``api_error_status``) or ended its run in error (``is_error``) for any
   reason other than its turn limit; the agent process was killed by a signal it was not sent by the
   time limit (a crashed or killed sandbox); a circuit breaker refused to start the trial.
2. Running out of **turns or time** is the agent's FAIL — unless the gateway was the stall (an
   upstream timeout or stalled stream in the trial), which is rule 1.
3. **No output** — no answer after stripping whitespace, no tool call and no change in the workspace
   — is FAILED "no output", before any assertion or score is looked at.
4. Any decided assertion that failed → FAILED; a typed assertion that could not be decided → ERROR
   (``harness``); the judge left a free-text assertion open → ERROR (``judge``).
5. A free-text assertion left open for want of a judge: a check that could not be decided is not a
   pass, so the trial is NOT_SCORED with the open assertions named — whatever the decided ones say,
   unless Security is below 0.5 (a critical finding), which FAILS it (:func:`decide_unchecked`).
6. Every assertion decided and all passed → PASSED.
7. No assertion at all (or none applicable) and nothing left open: the **task dimensions** (Correctness, Effectiveness) decide; Security and
   Efficiency alone never pass a trial (a clean, idle run scores 1.0 on both). Neither task
   dimension scored → NOT_SCORED (but a Security below 0.5 — a critical finding — FAILS it first);
   else PASSED when their mean is ≥ 0.5 and Security (when scored) is ≥ 0.5, FAILED otherwise.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_skilleval.gateway.outage import describe as describe_failure
from pytest_skilleval.gateway.outage import is_upstream_failure as upstream_failed

Status = Literal["PASSED", "FAILED", "ERROR", "NOT_SCORED", "SKIPPED"]
#: What grading can conclude (a trial that did not run is never graded).
GradeStatus = Literal["PASSED", "FAILED", "ERROR", "NOT_SCORED"]
ErrorCause = Literal["infra", "harness", "judge"]

PASSED: Status = "PASSED"
FAILED: Status = "FAILED"
ERROR: Status = "ERROR"
NOT_SCORED: Status = "NOT_SCORED"
SKIPPED: Status = "SKIPPED"

#: The statuses that enter pass rates, pass@k, dimension means and lift.
COUNTED: frozenset[str] = frozenset({PASSED, FAILED})
#: How each status reads on cards and in the terminal.
LABELS: Mapping[str, str] = {PASSED: "PASSED", FAILED: "FAILED", ERROR: "ERROR", NOT_SCORED: "NOT SCORED", SKIPPED: "SKIPPED"}

NO_OUTPUT = "no output"
PASS_THRESHOLD = 0.5  # the anchor's pass_threshold, used only when no assertion decides the trial
TASK_DIMENSIONS = ("correctness", "effectiveness")
#: Exit codes a shell-style wrapper (bwrap, docker) reports for a child killed by SIGKILL / SIGTERM.
KILLED_EXIT_CODES = frozenset({128 + 9, 128 + 15})
#: Gateway error codes of an upstream that stopped answering (rule 2: then a timeout is not the agent's).
STALL_ERRORS = frozenset({"upstream_timeout", "upstream_stream_broken"})


def counted(status: str) -> bool:
    """Whether a trial with this status enters pass rates, pass@k, means and lift."""
    return status in COUNTED


def passed(status: str) -> bool | None:
    """The trial as pass@k sees it: True / False, None when it is not counted."""
    return {PASSED: True, FAILED: False}.get(status)


def label(status: str) -> str:
    return LABELS.get(status, status)


# -- rule 3: no output ---------------------------------------------------------------------------------
WorkspaceSnapshot = dict[str, tuple[int, int]]


def snapshot(root: Path | None, limit: int = 20000) -> WorkspaceSnapshot:
    """(size, mtime_ns) of every regular file under ``root``, by relative path; symlinks not followed."""
    out: WorkspaceSnapshot = {}
    if root is None or not root.is_dir():
        return out
    for folder, dirs, files in os.walk(root, followlinks=False):
        for name in files:
            path = os.path.join(folder, name)
            try:
                st = os.lstat(path)
            except OSError:
                continue
            out[os.path.relpath(path, root)] = (st.st_size, st.st_mtime_ns)
            if len(out) >= limit:
                return out
        dirs.sort()
    return out


def workspace_changed(before: WorkspaceSnapshot | None, root: Path | None) -> bool | None:
    """Whether a file was added, removed or rewritten since ``before``; None when there was no snapshot."""
    if before is None or root is None:
        return None
    return snapshot(root) != before


def no_output(answer: str | None, tool_calls: int, changed: bool | None) -> bool:
    """Rule 3: nothing the agent did is visible — no answer after stripping, no tool call, no file change."""
    return not (answer or "").strip() and tool_calls == 0 and not changed


# -- rules 1 and 2: infrastructure failures ---------------------------------------------------------------
@dataclass(frozen=True)
class RunFacts:
    """What the runner knows about how the agent's run ended, for :func:`infrastructure_failure`."""

    exit_code: int | None
    timed_out: bool = False
    cancelled: bool = False  # the runner stopped the agent (the gateway ended the trial)
    outage: str | None = None  # the gateway's reason for ending the trial early
    run_error: str | None = None  # the harness said its run ended in error (``is_error``), and why
    api_error_status: int | None = None  # the harness said a model API call failed with this HTTP status
    max_turns_reached: bool = False  # the harness said it stopped at its turn limit
    requests: Sequence[Mapping[str, Any]] = ()  # the gateway's log entries of this trial, in order


def infrastructure_failure(facts: RunFacts) -> str | None:
    """Rules 1–2: why this run is an infrastructure ERROR, or None when the outcome is the agent's."""
    if facts.outage:
        return f"upstream outage: {facts.outage}"
    failures = [e for e in facts.requests if upstream_failed(e)]
    last = facts.requests[-1] if facts.requests else None
    if last is not None and upstream_failed(last):
        return f"the model API failed and the agent got no answer after it: {describe_failure(last)}" + (
            f" ({len(failures)} failed request(s) in the trial)" if len(failures) > 1 else "")
    if facts.timed_out:
        stalls = [e for e in failures if e.get("error") in STALL_ERRORS]
        if stalls:  # the agent ran out of time waiting on the model, not by its own doing
            return f"killed at the time limit while the upstream stalled: {describe_failure(stalls[-1])}"
        return None  # rule 2: the agent's FAIL
    if facts.api_error_status is not None:
        return f"the agent reported a model API error: HTTP {facts.api_error_status}" + (f" ({facts.run_error})" if facts.run_error else "")
    if facts.run_error and not facts.max_turns_reached:
        return f"the agent ended its run in error: {facts.run_error}"
    code = facts.exit_code
    if not facts.cancelled and (code is None or code < 0 or code in KILLED_EXIT_CODES):
        how = "killed (no exit status)" if code is None else f"killed by signal {-code}" if code < 0 else f"killed (exit {code})"
        return f"the agent process was {how}: a crashed or killed sandbox"
    return None


# -- rules 4–7: deciding from assertions and dimensions ------------------------------------------------------
@dataclass(frozen=True)
class Decision:
    status: GradeStatus
    reason: str
    cause: ErrorCause | None = None


def decide_unchecked(passed: int, unchecked: Sequence[str], why: str, dimensions: Mapping[str, float | None],
                     limit: int = 3) -> Decision:
    """Rule 5: no decided assertion failed, but ``unchecked`` free-text assertions were left open (``why``:
    no judge). The verdict would hang on them, so the trial is not scored — never passed on the checks
    that happened to be decidable. Security below 0.5 (a critical finding) still fails it."""
    head = f"all {passed} decided assertion(s) passed" if passed else "no assertion decided the trial"
    security = dimensions.get("security")
    if security is not None and security < PASS_THRESHOLD:
        return Decision(FAILED, f"{head}; Security {security:.2f} < {PASS_THRESHOLD}")
    names = "; ".join(unchecked[:limit]) + (f"; +{len(unchecked) - limit} more" if len(unchecked) > limit else "")
    return Decision(NOT_SCORED, f"{head}, but {len(unchecked)} free-text assertion(s) were not checked ({why}): {names}")


def decide_unasserted(dimensions: Mapping[str, float | None]) -> Decision:
    """Rule 7: no assertion decided the trial and none was left open. Security and Efficiency alone never pass it."""
    security = dimensions.get("security")
    if security is not None and security < PASS_THRESHOLD:  # Security can fail a trial, never pass one
        return Decision(FAILED, f"no assertion decided the trial; Security {security:.2f} < {PASS_THRESHOLD}")
    task = [v for d in TASK_DIMENSIONS if (v := dimensions.get(d)) is not None]
    if not task:
        return Decision(NOT_SCORED, "no assertion was decided and neither Correctness nor Effectiveness was scored "
                                    "(free-text assertions need a judge; Security and Efficiency alone never pass a trial)")
    score = sum(task) / len(task)
    if score >= PASS_THRESHOLD:
        return Decision(PASSED, f"no assertion decided the trial; task score (Correctness, Effectiveness) {score:.2f} ≥ {PASS_THRESHOLD}")
    return Decision(FAILED, f"no assertion decided the trial; task score (Correctness, Effectiveness) {score:.2f} < {PASS_THRESHOLD}")

