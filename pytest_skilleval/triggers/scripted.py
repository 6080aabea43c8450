"""The scripted "model" of a trigger trial, and the gateway cut-off that ends a trial at its decision.

**Scripted model** (keyless, a harness check): for one query it holds, per installed skill whose
trigger-set ``script`` rule wants the query, a variant that fires only when the request *lists*
that skill the way this agent lists it (``- name:`` / ``<name>name</name>``) and then loads it with
the agent's own mechanism (Claude ``Skill``, Codex ``cat SKILL.md``, OpenCode ``skill``, Gemini
``activate_skill``). The gateway decides from the real request, so "listed" is what the CLI sent.

**Cut-off** (every mode): a trigger trial must not run the whole task. :class:`DecisionCutoff`
wraps the trial's mode and answers with a final text — ending the conversation — once the request
shows a skill load (the decision is known) or ``max_turns`` model turns have been served. The
agent's first tool call is *not* the end (killing there was the false-negative bug): an agent may
look around before it loads a skill.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.protocols.base import Reply, Usage
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.trajectory.shell import skill_read_path
from pytest_skilleval.trajectory.tools import COMMAND_KEYS, PATH_KEYS, tool_kind

ANSWER_WITHOUT_SKILL = "FINAL: answered without loading a skill."
ANSWER_AFTER_LOAD = "FINAL: loaded {name}."
CUTOFF_TEXT = "FINAL: skilleval ended this trigger trial at its decision ({why})."


def load_call(agent: str, name: str, skill_dir: Path) -> dict[str, Any] | None:
    """How the scripted model asks ``agent`` to load a skill; None for an agent we have no script for."""
    calls: dict[str, dict[str, Any]] = {
        "claude-code": {"tool": "Skill", "args": {"skill": name}},
        "codex": {"tool": "exec_command", "args": {"cmd": f"cat {skill_dir}/SKILL.md"}},
        "opencode": {"tool": "skill", "args": {"name": name}},
        "gemini": {"tool": "activate_skill", "args": {"name": name}},
    }
    return calls.get(agent)


@dataclass(frozen=True)
class Candidate:
    """An installed skill the scripted model would load for this query, if it is listed."""

    name: str
    skill_dir: Path
    listing: str  # how the agent's catalog entry for it starts


def build_script(agent: str, candidates: Sequence[Candidate], *, extra_steps: Sequence[dict[str, Any]] = ()) -> Script | None:
    """The script for one trial; ``candidates`` in priority order (the skill under test first).
    ``extra_steps`` (tests only) continue after the load, to show the cut-off ends the trial."""
    if load_call(agent, "probe", Path("probe")) is None:
        return None
    variants = []
    for c in candidates:
        call = load_call(agent, c.name, c.skill_dir) or {}
        steps = [{"text": f"Loading the {c.name} skill.", **call}, *extra_steps, {"text": ANSWER_AFTER_LOAD.format(name=c.name)}]
        variants.append({"if_request_contains": c.listing, "steps": steps})
    return Script.from_data({"side_text": "Trigger trial", "steps": [{"text": ANSWER_WITHOUT_SKILL}], "variants": variants})


class DecisionCutoff(Mode):
    """Wraps a trial's mode: answers "done" once the decision is known or ``max_turns`` turns passed."""

    def __init__(self, inner: Mode, max_turns: int) -> None:
        self.inner, self.max_turns = inner, max_turns
        self.name = inner.name  # type: ignore[misc]  # the log shows the real mode
        self.billed = inner.billed  # type: ignore[misc]
        self.cut: str | None = None  # why the trial was ended, once it was

    def handle(self, ex: Exchange) -> None:
        req = ex.request
        if req.kind != "generate" or req.json_mode or not req.tools:  # side calls (titles, token counts) pass through
            self.inner.handle(ex)
            return
        turns = sum(1 for e in list(ex.trial.entries) if e.get("tools"))
        loaded = next(iter(skill_loads(ex.payload)), None)
        why = f"{loaded} was loaded" if loaded else (f"{turns} model turns" if turns >= self.max_turns else None)
        if why is None:
            self.inner.handle(ex)
            return
        self.cut = self.cut or why
        reply = Reply(text=CUTOFF_TEXT.format(why=why), model=req.model or "skilleval-cutoff", usage=Usage())
        ex.note = f"trigger-cutoff: {why}"
        if req.stream:
            ex.send_events(ex.protocol.render_events(reply, req))
        else:
            ex.send_json(200, ex.protocol.render_json(reply, req))

    def close(self) -> list[str]:
        return self.inner.close()


def skill_loads(payload: Any) -> Iterator[str]:
    """Skills the conversation in a request body has already loaded (a skill tool call, or a read of a
    ``SKILL.md``), in any vendor's shape: Anthropic ``tool_use``, OpenAI ``function_call`` / chat
    ``tool_calls``, Gemini ``functionCall``. A result always travels with its call, so a load seen here
    has been answered."""
    for name, args in _tool_calls(payload, 0):
        kind = tool_kind(name)
        if kind == "skill":
            skill = next((args[k] for k in ("skill", "name", "skill_name", "command") if isinstance(args.get(k), str)), None)
            if skill:
                yield skill
        elif kind == "read":
            path = next((args[k] for k in PATH_KEYS if isinstance(args.get(k), str)), "")
            if path.lower().endswith("skill.md"):
                yield path
        elif kind == "shell":
            command = next((args[k] for k in COMMAND_KEYS if isinstance(args.get(k), (str, list))), None)
            path = skill_read_path(command) if command is not None else None
            if path:
                yield path


def _tool_calls(node: Any, depth: int) -> Iterator[tuple[str, dict[str, Any]]]:
    if depth > 12:
        return
    if isinstance(node, list):
        for child in node:
            yield from _tool_calls(child, depth + 1)
        return
    if not isinstance(node, dict):
        return
    found: tuple[Any, Any] | None = None
    if node.get("type") == "tool_use":
        found = (node.get("name"), node.get("input"))
    elif node.get("type") == "function_call":
        found = (node.get("name"), node.get("arguments"))
    elif isinstance(node.get("functionCall"), dict):
        found = (node["functionCall"].get("name"), node["functionCall"].get("args"))
    elif isinstance(node.get("function"), dict) and "arguments" in node["function"]:
        found = (node["function"].get("name"), node["function"].get("arguments"))
    if found is not None and isinstance(found[0], str):
        args = found[1]
        if isinstance(args, str):
            try:
                args = json.loads(args)
            except ValueError:
                args = {"input": args}
        yield found[0], args if isinstance(args, dict) else {}
        return
    for value in node.values():
        if isinstance(value, (dict, list)):
            yield from _tool_calls(value, depth + 1)
