"""What a sandbox is: run one command with a private filesystem view, a time limit and (at most)
the gateway as its network, and say how isolated that was.

The trial runner does not know which backend runs the agent: ``local`` (bubblewrap, or nothing),
and later docker or a cloud backend registered through ``pytest_skilleval_sandboxes``. A backend
gets a :class:`RunSpec` and returns a :class:`RunResult`; it must kill the whole process tree
when the time limit passes.
"""

from __future__ import annotations

import abc
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Literal


@dataclass(frozen=True)
class RunSpec:
    argv: tuple[str, ...]
    env: Mapping[str, str] = field(repr=False)  # holds the trial's scoped token: kept out of reprs
    cwd: Path
    #: The only host folders the command may write (workspace, HOME, TMPDIR); the rest is read-only.
    writable: tuple[Path, ...] = ()
    #: Host paths to hide behind an empty folder (the real user's skill folders, say).
    hidden: tuple[Path, ...] = ()
    timeout_s: float = 300.0
    #: "gateway": loopback to the gateway's port only; "none": no network at all (post-run checks).
    network: Literal["gateway", "none"] = "none"
    gateway: tuple[str, int] | None = None  # (host, port) for network="gateway"
    stdout: Path | None = None  # file for stdout (the event stream); None: captured in memory
    stderr: Path | None = None
    #: The skill under trial: a backend that builds images uses its ``evals/environment/Dockerfile``.
    skill_root: Path | None = None
    #: Set by the gateway when it ends the trial (an upstream outage): stop the command as at the time
    #: limit, but report ``cancelled`` rather than ``timed_out``. A backend that ignores it still sees
    #: the agent stop on its own, since the gateway refuses the trial's further requests.
    cancel: threading.Event | None = field(default=None, compare=False, repr=False)


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None  # None: killed on timeout
    stdout: str
    stderr: str
    timed_out: bool
    wall_s: float  # the command's own wall time, sandbox start-up included
    cancelled: bool = False  # stopped because ``RunSpec.cancel`` was set (exit_code is then None)


class SandboxUnavailable(Exception):
    """The backend cannot run here (a program or a kernel feature is missing)."""


class Sandbox(abc.ABC):
    name: ClassVar[str]

    @property
    @abc.abstractmethod
    def isolated(self) -> bool:
        """Whether the filesystem and network are really confined (False: a plain subprocess)."""

    @abc.abstractmethod
    def describe(self) -> str:
        """One line for reports: the backend, its version, and what it confines."""

    def unavailable(self) -> str | None:
        """Why this backend cannot run trials here, or None."""
        return None

    @abc.abstractmethod
    def run(self, spec: RunSpec) -> RunResult: ...

    def close(self) -> None:  # noqa: B027 - optional: most backends hold nothing across trials
        """Release what the backend holds across trials (bridges, daemons)."""

