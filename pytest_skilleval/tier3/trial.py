"""Run one trial end to end: stage → gateway trial → sandboxed agent → trajectory → grade → record.

Independent of pytest: the trial items, the ``skill_trial`` fixture and the benchmark all call
:meth:`TrialRunner.run`. What a trial cannot do here is an exception the caller maps to an
outcome — :class:`TrialUnavailable` (a CLI or the sandbox is missing: skipped locally, failed in
CI) and :class:`TrialSkipped` (the case has no script for this agent in scripted mode) — while
everything that happens *during* a trial (a crash, a timeout, a broken grader) ends up in the
returned :class:`TrialRecord`.
"""

from __future__ import annotations

import json
import os
import time
import traceback
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, runtime_checkable
from urllib.parse import urlsplit

from pytest_skilleval.gateway import BudgetExceeded, Gateway, Script, Trial
from pytest_skilleval.gateway.outage import CIRCUIT_OPEN
from pytest_skilleval.providers.base import ChatProvider
from pytest_skilleval.results import encodable_model
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3 import outcome
from pytest_skilleval.tier3.agents.base import Agent, AgentContext
from pytest_skilleval.tier3.case_formats.model import EvalCase
from pytest_skilleval.tier3.case_formats.model import Script as CaseScript
from pytest_skilleval.tier3.grading import CommandOutcome, Grade, RunInSandbox, TrialEvidence, grade, infrastructure_error
from pytest_skilleval.tier3.options import Tier3Settings, staged_arm
from pytest_skilleval.tier3.outcome import ErrorCause
from pytest_skilleval.tier3.record import TrialRecord
from pytest_skilleval.tier3.sandboxes.base import RunResult, RunSpec, Sandbox
from pytest_skilleval.tier3.staging import Stage, agent_environment, stage_trial
from pytest_skilleval.tier3.steps import trial_steps
from pytest_skilleval.tier3.store import BaselineKey, TrialStore
from pytest_skilleval.trajectory import ParserRegistry, Trajectory, TrajectoryParseError, default_registry, skill_key
from pytest_skilleval.trajectory.requestlog import read_request_context

CHECK_TIMEOUT_S = 120.0  # a `command` assertion run after the agent
CHECK_OUTPUT_CHARS = 8000
STDERR_TAIL = 2000
MAX_ANSWER = 8000  # of the final answer kept in the record: it rides in user_properties and JUnit


class TrialUnavailable(Exception):
    """This machine cannot run the trial: the agent CLI, a program it needs, or the sandbox is missing."""


class TrialSkipped(Exception):
    """The trial does not apply (no scripted turns for this agent in scripted mode)."""


@dataclass(frozen=True)
class TrialRequest:
    skill: Skill
    skill_key: str
    case: EvalCase
    agent: Agent
    arm: str
    name: str  # the gateway trial name: the item's node id (cassettes are found by it)
    attempt: int = 1
    execution: int = 1
    dataset_digest: str | None = None
    nodeid: str = ""
    case_digest: str | None = None  # CaseSet.case_digest: the case and its input files (the baseline cache's key)


@runtime_checkable
class RunsWholeTrials(Protocol):
    """A sandbox backend that runs whole trials itself (Harbor: its own task, container, agent install and
    results): the runner hands it each request and gets the record back (built with :meth:`TrialRunner.record`).
    Its ``run`` remains for ``command`` assertions over the workspace it brought back."""

    def run_trial(self, req: TrialRequest, runner: TrialRunner, started: float) -> TrialRecord: ...


@dataclass
class TrialRunner:
    gateway: Gateway
    sandbox: Sandbox
    settings: Tier3Settings
    judge: ChatProvider | None = None
    parsers: ParserRegistry = field(default_factory=default_registry)
    hidden: tuple[Path, ...] = ()  # host folders hidden in the sandbox (the real user's skill dirs)
    #: Agent name -> the upstream families its last trial used (the circuit breaker is kept per family).
    _families: dict[str, frozenset[str]] = field(default_factory=dict, init=False, repr=False)

    def check(self, agent: Agent) -> None:
        """Raise :class:`TrialUnavailable` when ``agent`` cannot run trials here."""
        ensure_runnable(agent, self.sandbox, self.settings)

    def run(self, req: TrialRequest, root: Path) -> TrialRecord:
        """Run one trial; one that ERRORed for an infrastructure cause (an outage, a crashed sandbox, the
        agent's API error) is run again up to ``infra_retries`` times before it is recorded — never an
        attempt or a rerun: the record says how many times (``infra_retries``) and why, in its notes."""
        started = time.perf_counter()
        self.check(req.agent)
        case_script = req.case.script_for(req.agent.name)
        if self.gateway.config.mode == "scripted" and case_script is None:
            raise TrialSkipped(f"case {req.case.id!r} has no `script` for {req.agent.name} (or '*'); scripted mode plays the model "
                               "from it (docs/eval-cases.md)")
        key = self._baseline_key(req)
        if key is not None and self.settings.reuse_baseline and self.store is not None:
            stored = self.store.baseline(key)
            if stored is not None:
                return reused(req, *stored)
        earlier: list[str] = []
        record = self._start(req, root, case_script, started)
        whole = isinstance(self.sandbox, RunsWholeTrials)  # Harbor retried its trials itself (--skilleval-harbor-retries)
        while (record.infra_error and not whole and len(earlier) < self.settings.infra_retries
               and not (record.reason or "").startswith(CIRCUIT_OPEN)):
            refusal = self.gateway.breaker.refusal(self._families.get(req.agent.name, ()))
            if refusal is not None:  # the upstream is down: no point in running it again now
                record.notes.append(f"not retried: {refusal}")
                break
            earlier.append(record.reason or "ERROR")
            record = self._run_once(req, root / f"infra-retry-{len(earlier)}", case_script, started, len(earlier))
        record.infra_retries = len(earlier)
        record.notes += [f"infrastructure retry {n}: the run before it ERRORed ({why})" for n, why in enumerate(earlier, 1)]
        record.total_seconds = round(time.perf_counter() - started, 4)
        record = encodable_model(record)  # a skill folder named in bytes that are not UTF-8: its paths written escaped, or no JSON
        if self.store is not None:
            self.store.keep_usage(record)
            if key is not None:
                self.store.keep_baseline(key, record)
        return record

    @property
    def store(self) -> TrialStore | None:
        return TrialStore(self.settings.store_dir) if self.settings.store_dir is not None else None

    def _baseline_key(self, req: TrialRequest) -> BaselineKey | None:
        """What decides a without_skill trial's outcome: everything but the skill (docs/tier3.md)."""
        if req.arm != "without_skill" or req.case_digest is None:
            return None
        return BaselineKey(case_digest=req.case_digest, agent=req.agent.name, agent_version=req.agent.version(self.settings.agents_dirs),
                           model=self.settings.models.get(req.agent.name) or req.agent.default_model, mode=self.gateway.config.mode,
                           sandbox=self.sandbox.name, attempt=req.attempt, execution=req.execution)

    def _start(self, req: TrialRequest, root: Path, case_script: CaseScript | None, started: float) -> TrialRecord:
        refusal = self.gateway.breaker.refusal(self._families.get(req.agent.name, ()))
        if refusal is not None:  # the upstream is down: the agent is not started at all
            return self._error_record(req, refusal, "infra", started)
        return self._run_once(req, root, case_script, started, 0)

    def _run_once(self, req: TrialRequest, root: Path, case_script: CaseScript | None, started: float, retry: int) -> TrialRecord:
        try:
            if isinstance(self.sandbox, RunsWholeTrials):  # Harbor runs the whole trial (and its batch) itself, with its own retries
                return self.sandbox.run_trial(req, self, started)
            return self._run(req, root, case_script, started, retry)
        except BudgetExceeded as exc:  # the user's spending limit: not run, rather than broken
            raise TrialSkipped(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - staging refused, a cassette is missing: an ERROR trial
            return self._error_record(req, f"the trial could not run: {type(exc).__name__}: {exc}", "harness", started,
                                      [traceback.format_exc(limit=8)])

    def _error_record(self, req: TrialRequest, reason: str, cause: ErrorCause, started: float, notes: Sequence[str] = ()) -> TrialRecord:
        """An ERROR record for a trial whose agent never ran (or whose run could not be used)."""
        return TrialRecord(nodeid=req.nodeid, skill=req.skill_key, skill_name=req.skill.name, skill_path=str(req.skill.root),
                           case_id=req.case.id, label=req.case.label.value, agent=req.agent.name, arm=req.arm,  # type: ignore[arg-type]
                           attempt=req.attempt, execution=req.execution, dataset_digest=req.dataset_digest,
                           mode=self.gateway.config.mode, sandbox=self.sandbox.describe(), isolated=self.sandbox.isolated,
                           status="ERROR", reason=reason, error_cause=cause, grade=infrastructure_error(reason, cause), notes=list(notes),
                           total_seconds=round(time.perf_counter() - started, 4))

    def _run(self, req: TrialRequest, root: Path, case_script: CaseScript | None, started: float, retry: int = 0) -> TrialRecord:
        stage = stage_trial(root, req.skill, req.case, req.agent, staged_arm(req.arm))
        script = Script.from_data(case_script.render(stage.placeholders(req.skill.name))) if case_script else None
        mode = self.gateway.config.mode
        cassette = self.gateway.cassette_path(req.name) if mode in ("record", "replay") else None
        trial_name = req.name if req.execution == 1 else f"{req.name}#run{req.execution}"
        trial_name += f"#infra{retry}" if retry else ""
        trial = self.gateway.open_trial(trial_name, script=script, cassette=cassette, placeholders=stage.cassette_placeholders())
        ctx = AgentContext(home=stage.home, workspace=stage.workspace, tmp=stage.tmp, gateway_url=trial.url,
                           model=self.settings.models.get(req.agent.name), max_turns=self.settings.max_turns)
        egress = len(self.gateway.egress)  # trials of one worker run one at a time: new entries are this trial's
        before = outcome.snapshot(stage.workspace)
        try:
            result = self._run_agent(req, stage, trial, ctx)
        finally:
            self.gateway.close_trial(trial)
        if trial.families:  # which upstream this agent talks to: the circuit breaker is kept per upstream
            self._families[req.agent.name] = frozenset(trial.families)
        record = self._record(req, stage, trial, ctx, result, started, outcome.workspace_changed(before, stage.workspace))
        for attempt in self.gateway.egress[egress:]:
            record.notes.append(f"tried to reach the network (refused by the gateway): {attempt['method']} {attempt['path']}")
        return record

    # -- steps ------------------------------------------------------------------------------------
    def _run_agent(self, req: TrialRequest, stage: Stage, trial: Trial, ctx: AgentContext) -> RunResult:
        return run_agent(req.agent, req.case.prompt, stage, trial, ctx, self.sandbox, self.settings,
                         hidden=self.hidden, skill_root=req.skill.root)

    def _record(self, req: TrialRequest, stage: Stage, trial: Trial, ctx: AgentContext, result: RunResult, started: float,
                changed: bool | None) -> TrialRecord:
        requests = stage.out / "requests.jsonl"
        requests.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in trial.entries), encoding="utf-8")
        notes = [f"not staged: {s}" for s in stage.skipped]
        trajectory = self._parse(req, stage, requests, notes)
        texts = trial.request_texts()
        usage = trial.usage
        listed = skill_listed(requests, req.skill.name)
        evidence = TrialEvidence(skill_name=req.skill.name, case_id=req.case.id, agent=req.agent.name, arm=staged_arm(req.arm),  # type: ignore[arg-type]
                                 attempt=req.attempt, trajectory=trajectory, answer=trajectory.final_answer if trajectory else None,
                                 workspace=stage.workspace, run_in_sandbox=self._checker(stage, req.skill.root), gateway_requests=texts,
                                 skill_listed=listed, skill_body_reached_model=body_reached(texts[1:], req.skill.body),
                                 timed_out=result.timed_out, exit_code=result.exit_code, workspace_changed=changed,
                                 # Metered at the gateway over every request (item 8): what max_tokens / max_cost check,
                                 # for every agent alike. Dollars only where some were spent.
                                 metered_tokens=usage.input_tokens + usage.output_tokens,
                                 metered_cost_usd=trial.cost_usd if trial.mode.billed else 0.0)
        notes += _run_notes(req, result, trial, self.gateway)
        grade = self._grade(evidence, req.case, trajectory, result, trial, notes)
        models = sorted({str(e["model"]) for e in trial.entries if e.get("model")})
        return TrialRecord(
            nodeid=req.nodeid, skill=req.skill_key, skill_name=req.skill.name, skill_path=str(req.skill.root), case_id=req.case.id,
            label=req.case.label.value, agent=req.agent.name, agent_version=req.agent.version(self.settings.agents_dirs),
            arm=req.arm, attempt=req.attempt, execution=req.execution, dataset_digest=req.dataset_digest,  # type: ignore[arg-type]
            mode=self.gateway.config.mode, model=", ".join(models) or req.agent.model_for(ctx), sandbox=self.sandbox.describe(),
            isolated=self.sandbox.isolated, status=grade.status, reason=grade.reason, error_cause=grade.cause, grade=grade,
            skill_installed=stage.installed,
            skill_listed=listed, skill_body_reached_model=evidence.skill_body_reached_model,
            invoked_skills=[s.name for s in trajectory.selections()] if trajectory else [],
            final_answer=evidence.answer[:MAX_ANSWER] if evidence.answer else None, exit_code=result.exit_code,
            timed_out=result.timed_out, requests=len(trial.entries),
            tokens_in=usage.input_tokens, tokens_out=usage.output_tokens,
            cost_usd=trial.cost_usd if trial.mode.billed else None, cli_seconds=round(result.wall_s, 4),
            total_seconds=round(time.perf_counter() - started, 4), notes=notes, steps=trial_steps(trajectory, stage_paths(stage)),
            artifacts={"events": str(stage.out / "events.jsonl"), "stderr": str(stage.out / "stderr.txt"),
                       "requests": str(requests), "workspace": str(stage.workspace)})

    def record(self, req: TrialRequest, stage: Stage, trial: Trial, ctx: AgentContext, result: RunResult, started: float,
               changed: bool | None) -> TrialRecord:
        """The record of a trial whose agent ran elsewhere (a :class:`WholeTrialSandbox`): the event stream in
        ``stage.out/events.jsonl``, the workspace it left in ``stage.workspace``; parsed and graded as any other."""
        return self._record(req, stage, trial, ctx, result, started, changed)

    def _parse(self, req: TrialRequest, stage: Stage, requests: Path, notes: list[str]) -> Trajectory | None:
        events = stage.out / "events.jsonl"
        try:
            return self.parsers.parse_file(events, format=req.agent.parser, request_log=requests)
        except TrajectoryParseError as exc:
            notes.append(f"no trajectory: {exc}")
            return None

    def _grade(self, evidence: TrialEvidence, case: EvalCase, trajectory: Trajectory | None, result: RunResult, trial: Trial,
               notes: list[str]) -> Grade:
        if trial.divergences:
            return infrastructure_error("replay diverged from the cassette: " + "; ".join(trial.divergences[:3]))
        facts = outcome.RunFacts(exit_code=result.exit_code, timed_out=result.timed_out, cancelled=result.cancelled, outage=trial.outage,
                                 run_error=trajectory.run_error if trajectory else None,
                                 api_error_status=trajectory.api_error_status if trajectory else None,
                                 max_turns_reached=trajectory.max_turns_reached if trajectory else False, requests=list(trial.entries))
        infra = outcome.infrastructure_failure(facts)
        if infra is not None:  # not the skill's doing: ERROR, kept out of every mean (outcome.py, rules 1-2)
            return infrastructure_error(infra, "infra")
        if trajectory is None and not result.timed_out and result.exit_code not in (0, None):
            tail = result.stderr.strip()[-STDERR_TAIL:]
            return infrastructure_error(f"{evidence.agent} exited {result.exit_code} without a readable event stream: {tail}", "infra")
        try:
            # a timeout is a failed assertion there: a killed agent did not finish
            return grade(evidence, case, self.judge, judge_votes=self.settings.judge_votes)
        except Exception as exc:  # noqa: BLE001 - a broken grader is an ERROR with its traceback, never a pass
            notes.append(traceback.format_exc(limit=8))
            return infrastructure_error(f"grading crashed: {type(exc).__name__}: {exc}")

    def _checker(self, stage: Stage, skill_root: Path) -> RunInSandbox:
        """``run_in_sandbox`` for `command` assertions: same sandbox, workspace as cwd, no network, no token."""
        env = {"PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"), "HOME": str(stage.home), "TMPDIR": str(stage.tmp), "LANG": "C.UTF-8"}

        def run(command: str) -> CommandOutcome:
            done = self.sandbox.run(RunSpec(argv=("/bin/sh", "-c", command), env=env, cwd=stage.workspace, writable=stage.writable,
                                            hidden=self.hidden, timeout_s=CHECK_TIMEOUT_S, network="none",
                                            skill_root=skill_root))
            code = 124 if done.timed_out or done.exit_code is None else done.exit_code
            return CommandOutcome(exit_code=code, output=(done.stdout + done.stderr)[-CHECK_OUTPUT_CHARS:])

        return run


def ensure_runnable(agent: Agent, sandbox: Sandbox, settings: Tier3Settings) -> None:
    """Raise :class:`TrialUnavailable` when ``agent`` cannot run here: its CLI is missing, the sandbox
    is unavailable, or the sandbox does not confine it and the user has not accepted that."""
    problem = agent.missing(settings.agents_dirs) or sandbox.unavailable()
    if problem is None and not sandbox.isolated and not settings.allow_unsandboxed:
        problem = f"refusing to run an agent unconfined: {sandbox.describe()}; pass --skilleval-allow-unsandboxed to accept that"
    if problem:
        raise TrialUnavailable(problem)


def run_agent(agent: Agent, prompt: str, stage: Stage, trial: Trial, ctx: AgentContext, sandbox: Sandbox,
              settings: Tier3Settings, *, hidden: tuple[Path, ...], skill_root: Path) -> RunResult:
    """The real CLI on ``prompt`` in the sandbox, talking only to the gateway's ``trial`` (Tier 3 and
    trigger trials launch agents the same way; they differ in what they stage and what they read back)."""
    executable = agent.locate(settings.agents_dirs)
    assert executable is not None  # ensure_runnable() passed
    env = agent_environment(trial, stage, agent.configure(ctx))
    port = urlsplit(trial.url).port
    assert port is not None
    spec = RunSpec(argv=tuple(agent.command(executable, prompt, ctx)), env=env, cwd=stage.workspace,
                   writable=stage.writable, hidden=hidden, timeout_s=settings.timeout_s, network="gateway",
                   gateway=("127.0.0.1", port), stdout=stage.out / "events.jsonl", stderr=stage.out / "stderr.txt",
                   skill_root=skill_root, cancel=trial.ended)
    return sandbox.run(spec)


def stage_paths(stage: Stage) -> dict[str, str]:
    """The trial's folders as the report names them (paths under pytest's tmp differ run to run)."""
    return {str(stage.skill_dir): "<skill>", str(stage.workspace): "<workspace>", str(stage.home): "<home>", str(stage.tmp): "<tmp>",
            str(stage.root): "<trial>"}


def reused(req: TrialRequest, stored: TrialRecord, stored_at: str) -> TrialRecord:
    """A stored baseline record standing in for this trial (--skilleval-reuse-baseline). Nothing was
    spent now: its requests, tokens, cost and time are zero here, the originals are in its notes."""
    note = (f"reused baseline (--skilleval-reuse-baseline): stored {stored_at} from run {stored.run_id}, which made "
            f"{stored.requests} request(s), {stored.tokens_in}/{stored.tokens_out} tokens")
    return stored.model_copy(update={
        "run_id": uuid.uuid4().hex, "nodeid": req.nodeid or stored.nodeid, "skill": req.skill_key, "skill_path": str(req.skill.root),
        "execution": req.execution, "dataset_digest": req.dataset_digest, "reused_from": f"{stored_at} (run {stored.run_id})",
        "requests": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": None, "cli_seconds": None, "total_seconds": 0.0,
        "notes": [*stored.notes, note]})


def skill_listed(request_log: Path, skill_name: str) -> bool | None:
    """Whether the catalog the agent sent the model names this skill; None when no catalog was found."""
    try:
        catalog = read_request_context(request_log).catalog
    except TrajectoryParseError:
        return None
    if catalog is None:
        return None
    return any(skill_key(s.name) == skill_key(skill_name) for s in catalog)


def body_reached(request_texts: Sequence[str], body: str) -> bool | None:
    """Whether a distinctive line of SKILL.md's body reached the model after the first request."""
    lines = sorted((ln.strip() for ln in body.splitlines() if len(ln.strip()) >= 20), key=len, reverse=True)
    if not lines:
        return None
    marker = json.dumps(lines[0][:200], ensure_ascii=False)[1:-1]  # as it appears inside a JSON-encoded body
    return any(marker in text for text in request_texts)


def _run_notes(req: TrialRequest, result: RunResult, trial: Trial, gateway: Gateway) -> list[str]:
    notes = []
    if result.cancelled:
        notes.append(f"the gateway ended the trial: {trial.outage}")
    elif result.timed_out:
        notes.append("the agent was killed at the time limit")
    elif result.exit_code:
        notes.append(f"{req.agent.name} exited {result.exit_code}: {result.stderr.strip()[-300:]}")
    failed = [e for e in trial.entries if e["status"] != 200 or e["error"]]
    if failed:
        notes.append(f"{len(failed)} model request(s) failed at the gateway: {failed[0]['error'] or failed[0]['status']}")
    return notes
