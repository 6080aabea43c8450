"""Did the agent load *this* skill? Decided from the parsed trajectory of the real event stream.

Triggered means the agent itself (never the user) loaded the skill under test's own installed copy:

- its skill tool (Claude ``Skill``, OpenCode ``skill``, Gemini ``activate_skill``) named this skill
  and the harness loaded it — and, when the harness says from where, from the installed folder; or
- it read the installed ``SKILL.md`` at its real installed path (Codex ``cat``, any read tool).

Not a trigger: a user-typed ``/skill`` or ``$skill`` (the user's choice), a refused load, a read
of any other ``SKILL.md`` (a decoy copy elsewhere in the workspace, a renamed copy installed as
another skill — that one is a rival). A rival loaded is recorded by name.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, Trajectory, skill_key


@dataclass
class Detection:
    triggered: bool = False
    how: str | None = None  # "tool" | "file_read" | "shell_read"
    loaded: list[str] = field(default_factory=list)  # every installed skill the agent loaded, in order (by name)
    rivals: list[str] = field(default_factory=list)  # the rivals among them
    ignored: list[str] = field(default_factory=list)  # loads that did not count, and why


def _norm(path: str, workspace: Path) -> str:
    p = Path(os.path.expanduser(path))
    return os.path.normpath(p if p.is_absolute() else workspace / p)


def detect(trajectory: Trajectory | None, skill_name: str, installed: Mapping[str, Path], workspace: Path) -> Detection:
    """``installed``: name → installed folder of every skill staged for the trial (the skill under test
    and its rivals). Only the parsed trajectory is read, so every CLI is judged by one rule."""
    out = Detection()
    if trajectory is None:
        return out
    by_key = {skill_key(name): (name, os.path.normpath(folder)) for name, folder in installed.items()}
    by_path = {os.path.normpath(folder / "SKILL.md"): name for name, folder in installed.items()}
    me = skill_key(skill_name)
    for inv in trajectory.invocations:
        label = f"{inv.name} ({inv.how.value}{', ' + inv.path if inv.path else ''})"
        if inv.how is InvocationMethod.MENTION:
            out.ignored.append(f"{label}: typed by the user, not the agent's choice")
            continue
        if inv.status is not InvocationStatus.LOADED:
            out.ignored.append(f"{label}: {inv.status.value}")
            continue
        if inv.how is InvocationMethod.TOOL:
            found = by_key.get(inv.key)
            if found is None:
                out.ignored.append(f"{label}: not an installed skill")
                continue
            name, folder = found
            if inv.path and os.path.dirname(_norm(inv.path, workspace)) != folder and _norm(inv.path, workspace) != folder:
                out.ignored.append(f"{label}: loaded from {inv.path}, not the installed copy")
                continue
        else:
            at = by_path.get(_norm(inv.path or "", workspace))
            if at is None:
                out.ignored.append(f"{label}: not the SKILL.md of an installed skill (a copy or decoy)")
                continue
            name = at
        if name not in out.loaded:
            out.loaded.append(name)
        if skill_key(name) == me:
            if not out.triggered:
                out.triggered, out.how = True, inv.how.value
        elif name not in out.rivals:
            out.rivals.append(name)
    return out
