"""One trigger trial: stage the skill among its rivals → the real CLI in the sandbox → the gateway
ends the conversation at the decision → parse the event stream → detect → :class:`TriggerRecord`.

Built from Tier 3's parts (staging, gateway, adapters, sandbox, parsers); only what differs is
here: several skills installed, the scripted trigger model, the decision cut-off, detection, and
the outcome — TRIGGERED / NOT_TRIGGERED, or ERROR when the infrastructure broke before a decision
(retried per the infrastructure rule, then reported as an error, never as a miss).
"""

from __future__ import annotations

import json
import re
import time
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilleval.gateway import BudgetExceeded, Gateway, Script, Trial
from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.outage import CIRCUIT_OPEN
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents.base import Agent, AgentContext
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.outcome import RunFacts, infrastructure_failure
from pytest_skilleval.tier3.sandboxes.base import RunResult, Sandbox
from pytest_skilleval.tier3.staging import Stage, install_skill, stage_inputs
from pytest_skilleval.tier3.trial import TrialSkipped, TrialUnavailable, ensure_runnable, run_agent, skill_listed
from pytest_skilleval.trajectory import ParserRegistry, Trajectory, TrajectoryParseError, default_registry, skill_key
from pytest_skilleval.triggers.detect import detect
from pytest_skilleval.triggers.options import TriggerSettings
from pytest_skilleval.triggers.record import TriggerRecord
from pytest_skilleval.triggers.rivals import RivalSet
from pytest_skilleval.triggers.scripted import Candidate, DecisionCutoff, build_script
from pytest_skilleval.triggers.sets import ScriptRule, TriggerQuery

__all__ = ["TriggerRequest", "TriggerRunner", "TrialSkipped", "TrialUnavailable"]


@dataclass(frozen=True)
class TriggerRequest:
    skill: Skill
    skill_key: str
    query: TriggerQuery
    agent: Agent
    rivals: RivalSet = field(default_factory=RivalSet)
    #: skill name → its scripted-model rule (the skill's and each rival's trigger-set ``script``)
    rules: dict[str, ScriptRule] = field(default_factory=dict)
    run: int = 1
    name: str = ""  # the gateway trial name (the item's node id)
    nodeid: str = ""
    set_digest: str | None = None
    script: Script | None = None  # an explicit scripted model (tests); default: built from ``rules``
    extra_steps: tuple[dict[str, Any], ...] = ()  # tests: keep going after a load, to show the cut-off


@dataclass
class TriggerRunner:
    gateway: Gateway
    sandbox: Sandbox
    settings: Tier3Settings
    triggers: TriggerSettings = field(default_factory=TriggerSettings)
    parsers: ParserRegistry = field(default_factory=default_registry)
    hidden: tuple[Path, ...] = ()

    def check(self, agent: Agent) -> None:
        ensure_runnable(agent, self.sandbox, self.settings)

    def run(self, req: TriggerRequest, root: Path, *, mode: str | None = None) -> TriggerRecord:
        """The trial, retried on ERROR per the infrastructure rule; the last record says how many retries it took.
        ``mode``: a gateway mode for this trial only (the probe's listing capture is always scripted)."""
        self.check(req.agent)
        earlier: list[str] = []
        record = self._attempt(req, root / "try1", mode)
        # Tier 3's infrastructure rule and --skilleval-infra-retries: an ERROR is run again, then reported as an error.
        while record.status == "ERROR" and len(earlier) < self.settings.infra_retries and not (record.reason or "").startswith(CIRCUIT_OPEN):
            earlier.append(record.reason or "ERROR")
            record = self._attempt(req, root / f"try{len(earlier) + 1}", mode)
        record.retries = len(earlier)
        record.notes += [f"infrastructure retry {n}: the run before it ERRORed ({why})" for n, why in enumerate(earlier, 1)]
        return record

    def _attempt(self, req: TriggerRequest, root: Path, mode: str | None) -> TriggerRecord:
        started = time.perf_counter()
        try:
            return self._run(req, root, started, mode or self.gateway.config.mode)
        except (TrialSkipped, TrialUnavailable):
            raise
        except BudgetExceeded as exc:
            raise TrialSkipped(str(exc)) from None
        except Exception as exc:  # noqa: BLE001 - staging refused, a cassette is missing: an ERROR trial, never a miss
            return self._base(req, status="ERROR", reason=f"the trial could not run: {type(exc).__name__}: {exc}",
                              notes=[traceback.format_exc(limit=8)], seconds=round(time.perf_counter() - started, 4))

    def _base(self, req: TriggerRequest, **kw: Any) -> TriggerRecord:
        return TriggerRecord(nodeid=req.nodeid, skill=req.skill_key, skill_name=req.skill.name, skill_path=str(req.skill.root),
                             query_id=req.query.id, query=req.query.query, should_trigger=req.query.should_trigger,
                             agent=req.agent.name, run=req.run, gateway_mode=self.gateway.config.mode, set_digest=req.set_digest,
                             rivals=req.rivals.names, rivals_digest=req.rivals.digest,
                             acceptable_skills=list(req.query.acceptable_skills), **kw)

    def _run(self, req: TriggerRequest, root: Path, started: float, mode: str) -> TriggerRecord:
        folders = {n: root / n for n in ("workspace", "home", "tmp", "out")}
        for folder in folders.values():
            folder.mkdir(parents=True, exist_ok=False)
        workspace, out = folders["workspace"], folders["out"]
        skipped: list[str] = []
        installed = {req.skill.name: install_skill(workspace, req.agent, req.skill, skipped)}
        for rival in req.rivals.skills:
            installed[rival.name] = install_skill(workspace, req.agent, rival, skipped)
        stage_inputs(workspace, req.skill, req.query.files, skipped)
        script = req.script
        if mode == "scripted" and script is None:
            wanted = [Candidate(name, folder, req.agent.listing(name)) for name, folder in installed.items()
                      if (rule := req.rules.get(name)) is not None and rule.wants(req.query.query)]
            script = build_script(req.agent.name, wanted, extra_steps=req.extra_steps)
            if script is None:
                raise TrialSkipped(f"no scripted trigger model for agent {req.agent.name!r} (scripted mode knows how "
                                   "claude-code, codex, opencode and gemini load skills)")
        cutoffs: list[DecisionCutoff] = []

        def wrap(inner: Mode) -> Mode:
            cutoffs.append(DecisionCutoff(inner, self.triggers.max_turns))
            return cutoffs[-1]

        name = req.name or f"triggers:{req.skill.name}:{req.query.id}:{req.agent.name}:r{req.run}"
        trial = self.gateway.open_trial(f"{name}#{root.name}", script=script, wrap=wrap, mode=mode,
                                        placeholders={"<WORKSPACE>": str(workspace), "<HOME>": str(folders["home"])})
        ctx = AgentContext(home=folders["home"], workspace=workspace, tmp=folders["tmp"], gateway_url=trial.url,
                           model=self.settings.models.get(req.agent.name), max_turns=self.settings.max_turns)
        try:
            result = self._run_agent(req, trial, ctx, folders)
        finally:
            self.gateway.close_trial(trial)
        return self._record(req, trial, result, installed, workspace, out, cutoffs[0] if cutoffs else None, skipped, started)

    def _run_agent(self, req: TriggerRequest, trial: Trial, ctx: AgentContext, folders: dict[str, Path]) -> RunResult:
        stage = Stage(root=folders["workspace"].parent, workspace=folders["workspace"], home=folders["home"], tmp=folders["tmp"],
                      out=folders["out"], skill_dir=folders["workspace"] / req.agent.skill_root / req.skill.name, installed=True)
        return run_agent(req.agent, req.query.query, stage, trial, ctx, self.sandbox, self.settings,
                         hidden=self.hidden, skill_root=req.skill.root)

    def _record(self, req: TriggerRequest, trial: Trial, result: RunResult, installed: dict[str, Path], workspace: Path,
                out: Path, cutoff: DecisionCutoff | None, skipped: Sequence[str], started: float) -> TriggerRecord:
        requests = out / "requests.jsonl"
        requests.write_text("".join(json.dumps(e, ensure_ascii=False) + "\n" for e in trial.entries), encoding="utf-8")
        notes = [f"not staged: {s}" for s in skipped]
        trajectory = self._parse(req, out, requests, notes)
        found = detect(trajectory, req.skill.name, installed, workspace)
        typed = re.match(r"\s*[/$]([A-Za-z0-9._:-]+)", req.query.query)
        if typed and skill_key(typed.group(1)) in {skill_key(n) for n in installed}:
            # Claude Code expands a typed /skill before the model is asked, and its stream does not echo it.
            found.ignored.append(f"{typed.group(1)} (typed by the user as {typed.group(0).strip()}): the user's load, not the agent's choice")
        main = [e for e in trial.entries if e.get("tools")]
        failed = [e for e in trial.entries if e["status"] != 200 or e["error"]]
        usage = trial.usage
        facts = RunFacts(exit_code=result.exit_code, timed_out=result.timed_out, cancelled=result.cancelled, outage=trial.outage,
                         run_error=trajectory.run_error if trajectory else None,
                         api_error_status=trajectory.api_error_status if trajectory else None,
                         max_turns_reached=trajectory.max_turns_reached if trajectory else False, requests=list(trial.entries))
        status, reason = self._outcome(req, result, trajectory, found.triggered, bool(found.loaded), facts, main, failed)
        if failed:
            notes.append(f"{len(failed)} model request(s) failed at the gateway: {failed[0]['error'] or failed[0]['status']}")
        if result.timed_out:
            notes.append("the agent was killed at the time limit")
        models = sorted({str(e["model"]) for e in trial.entries if e.get("model")})
        ended = f"gateway cut-off: {cutoff.cut}" if cutoff and cutoff.cut else ("answer" if trajectory and trajectory.final_answer else "exit")
        decided = status in ("TRIGGERED", "NOT_TRIGGERED")
        return self._base(
            req, agent_version=req.agent.version(self.settings.agents_dirs), model=", ".join(models) or None, status=status, reason=reason,
            triggered=found.triggered if decided else None, how=found.how, loaded=found.loaded,
            rival_loaded=(found.rivals[0] if found.rivals and not found.triggered and decided else None),
            skill_listed=skill_listed(requests, req.skill.name), ended_by=ended, ignored=found.ignored, requests=len(trial.entries),
            model_turns=len(main), prompt_chars=sum(len(json.dumps(e["body"], ensure_ascii=False)) for e in trial.entries if e.get("body")),
            tokens_in=usage.input_tokens, tokens_out=usage.output_tokens, cost_usd=trial.cost_usd,
            seconds=round(time.perf_counter() - started, 4), notes=notes,
            artifacts={"events": str(out / "events.jsonl"), "stderr": str(out / "stderr.txt"), "requests": str(requests),
                       "workspace": str(workspace)})

    @staticmethod
    def _outcome(req: TriggerRequest, result: RunResult, trajectory: Trajectory | None, triggered: bool, loaded_any: bool,
                 facts: RunFacts, main: list[dict[str, Any]], failed: list[dict[str, Any]]) -> tuple[str, str | None]:
        """A decision needs evidence that the model was really asked: a load seen, or an answer after
        successful model turns. Anything else is the infrastructure's fault — ERROR, never a miss."""
        if triggered:
            return "TRIGGERED", None
        if loaded_any:
            return "NOT_TRIGGERED", "a rival was loaded instead"
        infra = infrastructure_failure(facts)
        if infra:  # Tier 3's infrastructure rule (tier3/outcome.py): the model API, the upstream, the sandbox
            return "ERROR", f"{infra}; no decision was made"
        if failed and any(e.get("tools") for e in failed):
            first = failed[0]
            return "ERROR", f"the model request failed at the gateway ({first['status']} {first['error'] or ''}); no decision was made"
        if not main:
            return "ERROR", f"{req.agent.name} never asked the model (exit {result.exit_code}): {result.stderr.strip()[-300:]}"
        if result.timed_out:
            return "ERROR", "the agent was killed at the time limit before a decision"
        if trajectory is None:
            return "ERROR", f"{req.agent.name} left no readable event stream (exit {result.exit_code})"
        return "NOT_TRIGGERED", None

    def _parse(self, req: TriggerRequest, out: Path, requests: Path, notes: list[str]) -> Trajectory | None:
        try:
            return self.parsers.parse_file(out / "events.jsonl", format=req.agent.parser, request_log=requests)
        except TrajectoryParseError as exc:
            notes.append(f"no trajectory: {exc}")
            return None
