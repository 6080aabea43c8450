"""What an agent adapter is: everything the trial runner needs to know about one agent CLI.

An adapter says where its CLI is installed and which version it is, which private config it needs
under the trial's HOME (the settings that keep it offline and pointed at the gateway), where it
discovers skills (so the with-skill arm installs the skill there and every other place stays
empty), its non-interactive command line, and which trajectory parser reads its output.

The per-CLI settings come from reference/agent-clis.md: each is the minimum that gave zero
outbound lookups with that CLI version. Adapters are stateless; a trial hands them an
:class:`AgentContext`.
"""

from __future__ import annotations

import abc
import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

VERSION_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class AgentContext:
    """One trial, as an adapter sees it. Paths are the same inside and outside the sandbox."""

    home: Path
    workspace: Path
    tmp: Path
    gateway_url: str  # http://127.0.0.1:PORT, reachable from inside the sandbox
    model: str | None = None  # None: the adapter's default
    max_turns: int = 25

    @property
    def openai_url(self) -> str:
        return self.gateway_url + "/v1"  # OpenAI-style clients expect the /v1 in the base URL


class Agent(abc.ABC):
    """One agent CLI. Subclasses set the class attributes and implement ``configure``/``command``."""

    name: ClassVar[str]  # the id used in --skilleval-agents, node ids and markers
    label: ClassVar[str]  # shown in reports
    executable: ClassVar[str]
    package: ClassVar[str] = ""  # where it comes from, for the "not installed" message
    #: Trajectory parser (trajectory) that reads its stdout.
    parser: ClassVar[str]
    #: Workspace-relative folder the with-skill arm installs the skill into (``<dir>/<skill>/SKILL.md``).
    skill_root: ClassVar[str]
    #: Every folder the CLI reads skills from: workspace-relative, or ``~/`` for the user's home.
    #: The trial's own are fresh (empty) by construction; the real user's are hidden in the sandbox.
    discovery_dirs: ClassVar[tuple[str, ...]] = ()
    #: System programs the CLI needs to run offline (OpenCode: rg; Codex: bwrap for its own sandbox).
    needs: ClassVar[tuple[str, ...]] = ()
    default_model: ClassVar[str]

    # -- install -------------------------------------------------------------------------------
    def locate(self, search: Sequence[Path] = ()) -> Path | None:
        """The CLI's executable: ``SKILLEVAL_<NAME>_PATH``, then each ``search`` dir's
        ``node_modules/.bin`` (an npm prefix) or the dir itself, then PATH."""
        override = os.environ.get(self.override_var)
        if override:
            return Path(override) if os.access(override, os.X_OK) else None
        for base in search:
            for folder in (base / "node_modules" / ".bin", base):
                candidate = folder / self.executable
                if candidate.is_file() and os.access(candidate, os.X_OK):
                    return candidate
        found = shutil.which(self.executable)
        return Path(found) if found else None

    @property
    def override_var(self) -> str:
        return "SKILLEVAL_" + re.sub(r"[^A-Z0-9]", "_", self.name.upper()) + "_PATH"

    def missing(self, search: Sequence[Path] = ()) -> str | None:
        """Why this agent cannot run here (CLI or a needed program absent), or None."""
        if self.locate(search) is None:
            where = ", ".join(str(p) for p in search) or "PATH"
            hint = f"`make agents`, or npm install {self.package}" if self.package else "install it"
            return f"{self.label}: `{self.executable}` not found in {where} or PATH ({hint}; or set {self.override_var})"
        absent = [p for p in self.needs if shutil.which(p) is None]
        if absent:
            return f"{self.label} needs {', '.join(absent)} on PATH (apt-get install {' '.join(_APT.get(p, p) for p in absent)})"
        return None

    def version(self, search: Sequence[Path] = ()) -> str | None:
        """The CLI's version: from its npm package.json when it has one (instant), else ``--version``."""
        path = self.locate(search)
        if path is None:
            return None
        return _package_version(str(path.resolve()), self.package) or _version(str(path))

    # -- a trial -------------------------------------------------------------------------------
    def model_for(self, ctx: AgentContext) -> str:
        return ctx.model or self.default_model

    @abc.abstractmethod
    def configure(self, ctx: AgentContext) -> dict[str, str]:
        """Write the CLI's private config under ``ctx.home``; return the extra environment it needs."""

    @abc.abstractmethod
    def command(self, executable: Path, prompt: str, ctx: AgentContext) -> list[str]:
        """The non-interactive command line (run in ``ctx.workspace`` with stdin at /dev/null)."""

    def listing(self, skill_name: str) -> str:
        """How this skill's entry starts in the catalog the CLI sends the model (for request-log checks)."""
        return f"<name>{skill_name}</name>"

    def user_dirs(self, home: Path) -> list[Path]:
        """The discovery folders under ``home`` (the real user's, to hide them in the sandbox)."""
        return [home / d[2:] for d in self.discovery_dirs if d.startswith("~/")]

    def project_dirs(self) -> list[str]:
        return [d for d in self.discovery_dirs if not d.startswith("~/") and not d.startswith("/")]

    def system_dirs(self) -> list[Path]:
        return [Path(d) for d in self.discovery_dirs if d.startswith("/")]


_APT = {"rg": "ripgrep", "bwrap": "bubblewrap"}


@functools.cache
def _package_version(resolved: str, package: str) -> str | None:
    """The ``version`` of the npm package ``package`` that holds ``resolved`` (a CLI's real file).
    A node CLI takes 0.3–2.5 s to print its version; reading its package.json takes none."""
    if not package:
        return None
    for folder in list(Path(resolved).parents)[:4]:
        manifest = folder / "package.json"
        try:
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        version = data.get("version") if isinstance(data, dict) and data.get("name") == package else None
        if isinstance(version, str):
            return version
    return None


@functools.cache
def _version(path: str) -> str | None:
    """``<cli> --version``, first version-looking token; cached per executable (it costs ~0.3 s)."""
    try:
        done = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S,
                              stdin=subprocess.DEVNULL, env=_version_env())
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"\d+\.\d+\.\d+[\w.+-]*", done.stdout + done.stderr)
    return match.group(0) if match else None


def _version_env() -> Mapping[str, str]:
    # No keys, no telemetry and a throwaway HOME for a version probe too: it must not touch the user's config.
    keep = {k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ}
    return keep | {"HOME": tempfile.mkdtemp(prefix="skilleval-version-"), "DISABLE_AUTOUPDATER": "1", "NO_COLOR": "1"}
