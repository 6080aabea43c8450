"""Read a case's ``script``: the turns the gateway serves in scripted (keyless) mode.

Forms accepted (see docs/eval-cases.md):

- ``"script": [steps]`` or ``"script": {"steps": [...], ...}`` — the same turns for every agent;
- ``"script": {"claude-code": [steps], "codex": {"steps": [...], "variants": [...]}, "*": [...]}`` —
  per agent, because each CLI names its tools differently; ``*`` is the fallback;
- a step is ``{"text": ...}``, ``{"tool": ..., "args": {...}}`` or both — the gateway's own
  script schema (``agent-clis.md`` §7, ``gateway/script.py``), so nothing is translated.

Checked beyond the schema: every step says something or calls something, and the last step of
each step list is a plain answer — the gateway repeats the last step once the steps run out, so a
trailing tool call would loop until the agent's turn limit.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.base import Report
from pytest_skilleval.tier3.case_formats.model import Script, ScriptStep

KNOWN_AGENTS = ("claude-code", "codex", "opencode", "gemini")
AGENT_ALIASES = {"claude": "claude-code", "gemini-cli": "gemini"}
_AGENT_NAME = re.compile(r"\*|[a-z0-9][a-z0-9._-]*")


def parse(value: Any, report: Report) -> dict[str, Script]:
    if isinstance(value, list) or (isinstance(value, Mapping) and "steps" in value):
        script = _script(value, ("script",), "script", report)
        return {"*": script} if script else {}
    if not isinstance(value, Mapping) or not value:
        report(("script",), "script", Severity.HIGH, "must be a list of steps or an object of agent -> steps", field="script")
        return {}
    out: dict[str, Script] = {}
    for raw_agent, body in value.items():
        agent = AGENT_ALIASES.get(str(raw_agent), str(raw_agent))
        path, field = ("script", str(raw_agent)), f"script.{raw_agent}"
        if not _AGENT_NAME.fullmatch(agent):
            report(path, "script", Severity.HIGH, f"{raw_agent!r} is not an agent name", field=field)
            continue
        if agent != "*" and agent not in KNOWN_AGENTS:
            report(path, "script-agent", Severity.LOW, f"no built-in agent is named {agent!r}; this script runs only with a plugin that adds it",
                   field=field, suggestion=f"built-in agents: {', '.join(KNOWN_AGENTS)}, or '*' for all")
        if agent in out:
            report(path, "script", Severity.HIGH, f"a second script for {agent!r} (an alias of {raw_agent!r}?)", field=field)
            continue
        script = _script(body, path, field, report)
        if script is not None:
            out[agent] = script
    return out


def _script(body: Any, path: tuple[str, ...], field: str, report: Report) -> Script | None:
    steps_path = path if isinstance(body, list) else (*path, "steps")
    data = {"steps": body} if isinstance(body, list) else body
    if not isinstance(data, Mapping):
        report(path, "script", Severity.HIGH, f"a script is a list of steps or an object with 'steps', got {type(body).__name__}", field=field)
        return None
    try:
        script = Script.model_validate(dict(data))
    except ValidationError as exc:
        for error in exc.errors()[:5]:
            loc = tuple(error["loc"])
            where = (*steps_path, *loc[1:]) if loc[:1] == ("steps",) else (*path, *loc)
            report(where, "script", Severity.HIGH, f"{'.'.join(map(str, loc)) or 'script'}: {error['msg']}", field=field)
        return None
    ok = _steps_problem(script.steps, steps_path, field, report)
    for n, variant in enumerate(script.variants):
        ok = _steps_problem(variant.steps, (*path, "variants", n, "steps"), f"{field}.variants[{n}]", report) and ok
    return script if ok else None


def _steps_problem(steps: tuple[ScriptStep, ...], path: tuple[str | int, ...], field: str, report: Report) -> bool:
    """Report what the schema allows but the gateway cannot play; True when the steps are usable."""
    if not steps:
        report(path, "script", Severity.HIGH, "steps must not be empty", field=field)
        return False
    ok = True
    for index, step in enumerate(steps):
        calls = step.calls()
        if any(not call.name.strip() for call in calls) or step.tool == "":
            report((*path, index), "script", Severity.HIGH, f"step {index + 1}: a tool name is empty", field=field)
            ok = False
        elif "text" not in step.model_fields_set and not calls:  # an explicit `text: ""` is an empty reply
            report((*path, index), "script", Severity.HIGH, f"step {index + 1} needs 'text', 'tool', or both", field=field)
            ok = False
        elif step.args and not step.tool:
            report((*path, index), "script", Severity.HIGH, f"step {index + 1} has 'args' without 'tool'", field=field)
            ok = False
    if steps[-1].calls():
        report((*path, len(steps) - 1), "script", Severity.HIGH,
               "the last step calls a tool; it must be the final answer (text only), or the agent loops until its turn limit",
               field=field, suggestion='end with {"text": "FINAL: ..."}')
        ok = False
    return ok
