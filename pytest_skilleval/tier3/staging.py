"""Stage one trial: a private workspace, HOME and TMPDIR, the case's input files, and — in the
with-skill arm only — the skill, installed where this agent discovers skills.

The two arms are built by the same code and differ in exactly one thing: whether
``<workspace>/<agent.skill_root>/<skill>/`` exists. Everything is copied through :mod:`safefs`
(no links followed, no hardlinks, bounded sizes); the skill's ``evals/`` (and the other eval
folders) are never staged, so an agent cannot read the expected answers. Every other discovery
folder is empty: the trial's HOME is fresh, and the real user's folders are hidden by the sandbox
(:func:`hidden_dirs`).

Layout under the trial's root::

    workspace/   the agent's cwd: case inputs at their skill-relative paths (evals/files/x.csv)
    home/        HOME, and every CLI config dir under it
    tmp/         TMPDIR — a sibling of HOME, never an ancestor (Codex refuses helpers under TMPDIR)
    out/         the agent's stdout/stderr and the request log (outside the sandbox's writable set)
"""

from __future__ import annotations

import os
import posixpath
import pwd
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from pytest_skilleval import safefs
from pytest_skilleval.gateway import Trial
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents.base import Agent
from pytest_skilleval.tier3.case_formats.model import EvalCase
from pytest_skilleval.tier3.cases import case_inputs

WITH_SKILL, WITHOUT_SKILL = "with_skill", "without_skill"
#: Host variables whose *values* must never reach an agent, whatever name they travel under.
_SECRET_NAME = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.I)
#: From this length a secret is looked for anywhere in a value; shorter ones only as a whole word
#: (``--password=hunt3r``), so a 5-character password is caught without every "4096" or "false" being one.
_SUBSTRING_LEN = 8
_MIN_SECRET_LEN = 4
_NOT_SECRETS = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "enabled", "disabled", "unset"})


def _carries(value: str, secret: str) -> bool:
    if len(secret) >= _SUBSTRING_LEN:
        return secret in value
    return re.search(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", value) is not None


def _host_secrets() -> dict[str, str]:
    """Host variables named like secrets, with values that could be one (not a number, not a boolean word)."""
    return {name: value for name, value in os.environ.items()
            if _SECRET_NAME.search(name) and len(value) >= _MIN_SECRET_LEN and not value.isdigit() and value.lower() not in _NOT_SECRETS}


class StagingError(Exception):
    """The trial cannot be staged safely (a path escapes, a host secret would leak)."""


@dataclass(frozen=True)
class Stage:
    root: Path
    workspace: Path
    home: Path
    tmp: Path
    out: Path
    skill_dir: Path  # where the skill is installed (with_skill) or would be (without_skill)
    installed: bool
    files: tuple[str, ...] = ()  # case inputs staged, workspace-relative
    skipped: tuple[str, ...] = ()  # "rel: why" for files that could not be copied safely

    @property
    def writable(self) -> tuple[Path, ...]:
        return (self.workspace, self.home, self.tmp)

    def placeholders(self, skill_name: str) -> dict[str, str]:
        """Values for a case script's ``{skill_dir}``, ``{skill_name}``, ``{workspace}``, ``{home}``."""
        return {"skill_dir": str(self.skill_dir), "skill_name": skill_name, "workspace": str(self.workspace), "home": str(self.home)}

    def cassette_placeholders(self) -> dict[str, str]:
        """The gateway's path placeholders, so a recorded trial replays in another temp folder."""
        return {"<WORKSPACE>": str(self.workspace), "<HOME>": str(self.home), "<TMPDIR>": str(self.tmp), "<ROOT>": str(self.root)}


def stage_trial(root: Path, skill: Skill, case: EvalCase, agent: Agent, arm: str) -> Stage:
    if arm not in (WITH_SKILL, WITHOUT_SKILL):
        raise ValueError(f"unknown arm {arm!r}")
    folders = {name: root / name for name in ("workspace", "home", "tmp", "out")}
    for folder in folders.values():
        folder.mkdir(parents=True, exist_ok=False)  # a fresh root per trial: nothing left over from another
    workspace = folders["workspace"]
    skill_dir = workspace / agent.skill_root / skill.name
    skipped: list[str] = []
    if arm == WITH_SKILL:
        install_skill(workspace, agent, skill, skipped)
    staged = stage_inputs(workspace, skill, case_inputs(skill, case), skipped)
    return Stage(root=root, workspace=workspace, home=folders["home"], tmp=folders["tmp"], out=folders["out"], skill_dir=skill_dir,
                 installed=arm == WITH_SKILL, files=tuple(staged), skipped=tuple(skipped))


def install_skill(workspace: Path, agent: Agent, skill: Skill, skipped: list[str]) -> Path:
    """Copy ``skill`` (without its eval folders) to where ``agent`` discovers project skills; its folder."""
    skill_dir = workspace / agent.skill_root / skill.name
    for rel, data in _readable(skill, (e.rel for e in skill.files(include_eval_dirs=False)), skipped):
        _write(skill_dir, rel, data)
    return skill_dir


def stage_inputs(workspace: Path, skill: Skill, rels: Iterable[str], skipped: list[str]) -> list[str]:
    """Copy skill-relative input files to the same relative paths in the workspace; the ones staged."""
    staged = []
    for rel, data in _readable(skill, rels, skipped):
        _write(workspace, rel, data)
        staged.append(rel)
    return staged


def _readable(skill: Skill, rels: Iterable[str], skipped: list[str]) -> Iterable[tuple[str, bytes]]:
    for rel in rels:
        entry = skill.entry(rel)
        if entry is None or entry.kind is not safefs.EntryKind.FILE:
            skipped.append(f"{rel}: not a regular file in the skill")
            continue
        try:
            yield rel, safefs.read_bytes(skill.root, rel, skill.limits)
        except safefs.ReadError as exc:
            skipped.append(f"{rel}: {exc.finding.message}")


def _write(base: Path, rel: str, data: bytes) -> None:
    norm = posixpath.normpath(rel)
    if norm.startswith(("/", "../")) or norm in ("..", ".") or "\\" in norm:
        raise StagingError(f"refusing to stage {rel!r}: it leaves the trial folder")
    dest = base / norm
    dest.parent.mkdir(parents=True, exist_ok=True)
    # O_EXCL: never write through something already there (a link planted by an earlier file).
    fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o755 if data.startswith(b"#!") else 0o644)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def agent_environment(trial: Trial, stage: Stage, agent_env: Mapping[str, str]) -> dict[str, str]:
    """The agent's whole environment: the gateway's allow-list (PATH, locale, the scoped token and
    base URLs), the private HOME/TMPDIR, proxies that land on the gateway, then the adapter's own.

    The gateway doubles as the HTTP(S) proxy: a CLI that tries to reach anything else is refused
    there and recorded in ``gateway.egress``. Refuses if a host secret would reach the agent.
    """
    base = {"HOME": str(stage.home), "TMPDIR": str(stage.tmp), "TMP": str(stage.tmp), "TEMP": str(stage.tmp), "NO_COLOR": "1",
            "HTTPS_PROXY": trial.url, "HTTP_PROXY": trial.url, "https_proxy": trial.url, "http_proxy": trial.url,
            "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    env = trial.agent_env({**base, **agent_env})
    secrets = _host_secrets()
    for name, value in env.items():
        leaked = next((host for host, secret in secrets.items() if _carries(value, secret)), None)
        if leaked is not None:
            raise StagingError(f"refusing to start the agent: its {name} would carry the value of the host's {leaked}")
    return env


def hidden_dirs(agents: Iterable[Agent]) -> list[Path]:
    """Every agent's user-level and system skill folders on this host: hidden (emptied) in the sandbox,
    so no skill of the real user's reaches either arm."""
    homes = {Path(os.path.expanduser("~"))}
    try:
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir))
    except KeyError:
        pass
    found: list[Path] = []
    for agent in agents:
        for folder in [*(d for home in homes for d in agent.user_dirs(home)), *agent.system_dirs()]:
            if folder not in found:
                found.append(folder)
    return found
