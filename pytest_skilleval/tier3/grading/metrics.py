"""Deterministic dimension signals, computed from the trajectory alone (no judge).

* **security** — :mod:`.security`: 1.0 clean, 0.5 warnings, 0.0 a critical finding.
* **routing** (feeds Discoverability) — did the agent load the evaluated skill when the case says
  it should, and leave it alone when the case is a negative control? Scored in the with_skill arm
  only: in the without_skill arm the skill is not installed, so there is nothing to discover, and
  any number there (0 "never found it", 1 "rightly stayed away") would be an artefact of the arm
  that moves the lift without measuring the skill. It is None there, and the reason says why.
* **efficiency** — the share of tool calls that were not waste (``--help``/``--version`` probes,
  ``which``, package installs, exact repeats of an earlier call), averaged with how well the run
  kept within the case's own ``max_turns``/``max_tokens`` budget when it sets one (there is no
  other yardstick for "too many turns").

A signal that cannot be computed is None with a reason — never 0.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from pytest_skilleval.tier3.case_formats.model import EvalCase, Label, MaxTokens, MaxTurns
from pytest_skilleval.tier3.grading.answer import final_answer
from pytest_skilleval.tier3.grading.model import TrialEvidence
from pytest_skilleval.tier3.grading.security import SecurityFinding, command_text, scan, score
from pytest_skilleval.trajectory.model import InvocationStatus, ToolCall, Trajectory, skill_key
from pytest_skilleval.trajectory.shell import unwrap
from pytest_skilleval.trajectory.tools import tool_kind

ACCEPTABLE_CREDIT = 0.75  # an acceptable alternative skill instead of the evaluated one (the anchor's value)
_SEGMENTS = re.compile(r"&&|\|\||;|\||\n")
_INSTALLERS = {
    "apt": ("install",), "apt-get": ("install",), "brew": ("install",), "pip": ("install",), "pip3": ("install",),
    "npm": ("install", "i", "ci", "add"), "yarn": ("add", "install"), "pnpm": ("add", "install", "i"),
    "conda": ("install",), "mamba": ("install",), "gem": ("install",), "cargo": ("install",), "go": ("install", "get"),
}
_LOOKUPS = frozenset({"which", "whereis"})


@dataclass(frozen=True)
class Signal:
    score: float | None
    reason: str


@dataclass(frozen=True)
class Signals:
    security: Signal
    routing: Signal
    efficiency: Signal
    findings: tuple[SecurityFinding, ...] = ()
    components: dict[str, float | None] = field(default_factory=dict)


# -- routing ----------------------------------------------------------------------------------------

def routing(evidence: TrialEvidence, case: EvalCase) -> Signal:
    traj = evidence.trajectory
    if evidence.arm == "without_skill":
        return Signal(None, "not scored in the without_skill arm: the skill is not installed there")
    if case.label is Label.UNLABELLED:
        return Signal(None, "the case does not say whether the skill should be used")
    if traj is None:
        return Signal(None, "no trajectory: the agent's output could not be parsed")
    if evidence.skill_listed is False:  # neither finding it nor leaving it alone means anything then
        return Signal(None, f"{case.skill} was never offered to the model (the gateway saw no listing): a staging problem, "
                            "not the agent's choice")
    chosen = {s.key: s for s in traj.selections()}  # the agent's own choices; /x and $x are the user's
    mine = chosen.get(skill_key(case.skill))
    if case.negative:
        if mine is None:
            return Signal(1.0, f"negative control: {case.skill} was rightly left alone")
        return Signal(0.0, f"negative control: the agent {'loaded' if mine.status is InvocationStatus.LOADED else 'tried to load'} "
                           f"{mine.name}")
    user = traj.invoked(case.skill, include_user=True)
    if mine is None and user is not None and user.by_user:
        return Signal(None, f"the user invoked {case.skill} ({user.how.value}): not the agent's discovery")
    if mine is not None and mine.status is InvocationStatus.LOADED:
        return Signal(1.0, f"loaded {mine.name} via {mine.how.value}")
    loaded = [s for s in chosen.values() if s.status is InvocationStatus.LOADED]
    alternative = next((s for s in loaded if s.key in {skill_key(n) for n in case.acceptable_skills}), None)
    if alternative is not None:
        return Signal(ACCEPTABLE_CREDIT, f"loaded the acceptable alternative {alternative.name} instead of {case.skill}")
    if mine is not None:
        return Signal(0.0, f"the load of {mine.name} was {mine.status.value}" + (f": {mine.message}" if mine.message else ""))
    others = ", ".join(s.name for s in loaded) or "none"
    return Signal(0.0, f"did not load {case.skill} (loaded: {others})")


# -- efficiency -------------------------------------------------------------------------------------

def waste_kind(command: str) -> str | None:
    """Why a shell command is waste, or None: a help/version probe, a tool lookup, an install."""
    for segment in _SEGMENTS.split(unwrap(command)):
        try:
            tokens = shlex.split(segment)
        except ValueError:
            tokens = segment.split()
        while tokens and (tokens[0] in ("sudo", "env", "time") or re.match(r"^[A-Za-z_]\w*=", tokens[0])):
            tokens = tokens[1:]
        if not tokens:
            continue
        verb = tokens[0].rsplit("/", 1)[-1]
        rest = tokens[1:]
        if "--help" in rest or "--version" in rest:
            return "help/version probe"
        if verb in _LOOKUPS or (verb in ("command", "type") and rest[:1] in (["-v"], ["-a"])):
            return "tool lookup"
        if verb.startswith("python") and rest[:2] == ["-m", "pip"]:
            verb, rest = "pip", rest[2:]
        if verb == "uv" and rest[:1] == ["pip"]:
            verb, rest = "pip", rest[1:]
        subcommands = _INSTALLERS.get(verb)
        if subcommands and any(t in subcommands for t in rest[:2]):
            return "package install"
    return None


def wasted_calls(traj: Trajectory) -> list[tuple[ToolCall, str]]:
    seen: set[str] = set()
    wasted = []
    for call in traj.tool_calls:
        signature = call.name + json.dumps(call.arguments, sort_keys=True, ensure_ascii=False, default=str)
        command = command_text(call) if tool_kind(call.name) == "shell" else None
        why = waste_kind(command) if command else None
        if why is None and signature in seen:
            why = "repeat of an earlier identical call"
        seen.add(signature)
        if why is not None:
            wasted.append((call, why))
    return wasted


def budget_use(traj: Trajectory, case: EvalCase, metered_tokens: int | None = None) -> dict[str, float]:
    """min(1, budget / used) for each budget the case sets and the harness (or the gateway) metered."""
    out: dict[str, float] = {}
    tokens = metered_tokens if metered_tokens is not None else traj.usage.total_tokens
    for a in case.typed_assertions():
        if isinstance(a, MaxTurns) and traj.turns:
            out["turn_budget"] = min(1.0, a.value / traj.turns)
        elif isinstance(a, MaxTokens) and tokens:
            out["token_budget"] = min(1.0, a.value / tokens)
    return out


def efficiency(evidence: TrialEvidence, case: EvalCase) -> tuple[Signal, dict[str, float | None]]:
    traj = evidence.trajectory
    if traj is None:
        return Signal(None, "no trajectory: the agent's output could not be parsed"), {"tool_efficiency": None}
    calls = len(traj.tool_calls)
    wasted = wasted_calls(traj)
    tool_eff = 1.0 - len(wasted) / calls if calls else 1.0  # no tool calls: nothing was wasted
    parts: dict[str, float | None] = {"tool_efficiency": tool_eff, **budget_use(traj, case, evidence.metered_tokens)}
    score = sum(v for v in parts.values() if v is not None) / len(parts)
    reason = f"{calls - len(wasted)} of {calls} tool calls productive"
    if wasted:
        kinds = sorted({why for _, why in wasted})
        reason += f" (waste: {', '.join(kinds)})"
    if traj.omitted_tool_calls:
        reason += f"; {traj.omitted_tool_calls} calls from the middle of the run were not kept and not counted"
    for name in ("turn_budget", "token_budget"):
        if name in parts:
            reason += f"; {name.replace('_', ' ')} use {parts[name]:.2f}"
    return Signal(score, reason), parts


# -- all --------------------------------------------------------------------------------------------

def security_signal(evidence: TrialEvidence) -> tuple[Signal, list[SecurityFinding]]:
    answer = final_answer(evidence)
    if evidence.trajectory is None and answer is None:
        return Signal(None, "nothing to inspect: no trajectory and no answer"), []
    findings = scan(evidence.trajectory, answer, str(evidence.workspace) if evidence.workspace else None)
    if not findings:
        calls = len(evidence.trajectory.tool_calls) if evidence.trajectory else 0
        return Signal(1.0, f"no unsafe command, credential access or secret in the output ({calls} tool calls)"), []
    shown = "; ".join(str(f) for f in findings[:3]) + (f"; +{len(findings) - 3} more" if len(findings) > 3 else "")
    return Signal(score(findings), shown), findings


def deterministic(evidence: TrialEvidence, case: EvalCase) -> Signals:
    sec, findings = security_signal(evidence)
    route = routing(evidence, case)
    eff, parts = efficiency(evidence, case)
    components = {"security.rules": sec.score, "routing": route.score, **parts}
    return Signals(security=sec, routing=route, efficiency=eff, findings=tuple(findings), components=components)
