"""External scanners: find them, learn their version, run them safely, and fail closed.

A scanner run can end four ways that are not a result: the tool is missing, it timed out, it
crashed, or it printed something we cannot parse. Each raises :class:`ToolError` with the tool,
the reason and how to install it, and the check reports INCOMPLETE — never a pass.

Scanners never see the user's credentials: they run with an allow-listed environment.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

#: Variables a scanner may see. Everything else (API keys, tokens, cloud credentials) is dropped.
ENV_ALLOW = ("PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TEMP", "TMP", "SSL_CERT_FILE",
             "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "SYSTEMROOT", "VIRTUAL_ENV")


@dataclass(frozen=True)
class ToolSpec:
    name: str
    executable: str
    install_hint: str
    version_args: tuple[str, ...] = ("--version",)
    version_pattern: str = r"(\d+\.\d+(?:\.\d+)?)"
    # Not part of the hash: specs are cache keys (``version``), and a dict is unhashable.
    env: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def override_var(self) -> str:
        return "SKILLEVAL_" + re.sub(r"[^A-Z0-9]", "_", self.name.upper()) + "_PATH"


class ToolError(Exception):
    """A scanner could not produce evidence. ``kind`` is missing | timeout | crashed | bad-output."""

    def __init__(self, tool: ToolSpec, kind: str, detail: str) -> None:
        self.tool, self.kind, self.detail = tool, kind, detail
        hint = f"; install it with: {tool.install_hint}" if kind == "missing" else ""
        super().__init__(f"{tool.name}: {kind}: {detail}{hint}")


@dataclass(frozen=True)
class ToolRun:
    returncode: int
    stdout: str
    stderr: str
    duration_s: float


def locate(tool: ToolSpec) -> str | None:
    """Explicit override, then the interpreter's own bin folder (a venv install), then PATH."""
    override = os.environ.get(tool.override_var)
    if override:
        return override if os.path.isabs(override) and os.access(override, os.X_OK) else None
    beside = Path(sys.executable).parent / tool.executable
    if beside.is_file() and os.access(beside, os.X_OK):
        return str(beside)
    return shutil.which(tool.executable)


def scanner_env(tool: ToolSpec) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in ENV_ALLOW}
    env.setdefault("LANG", "C.UTF-8")
    env.update(tool.env)
    return env


def version(tool: ToolSpec) -> str | None:
    """The tool's version, or None when it is missing or does not answer."""
    exe = locate(tool)
    return None if exe is None else _version_of(tool, exe)


@functools.cache
def _version_of(tool: ToolSpec, exe: str) -> str | None:
    """Cached per resolved executable: a changed ``SKILLEVAL_<TOOL>_PATH`` is asked again."""
    try:
        proc = subprocess.run([exe, *tool.version_args], capture_output=True, text=True, timeout=60,
                              env=scanner_env(tool), stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None
    match = re.search(tool.version_pattern, proc.stdout + proc.stderr)
    return match.group(1) if match else None


def run(tool: ToolSpec, args: Sequence[str], *, timeout: float, cwd: Path | None = None,
        ok_codes: Sequence[int] = (0,)) -> ToolRun:
    exe = locate(tool)
    if exe is None:
        override = os.environ.get(tool.override_var)
        where = (f"{tool.override_var}={override} is not an absolute path to an executable" if override
                 else f"'{tool.executable}' not found on PATH or beside {sys.executable}")
        raise ToolError(tool, "missing", where)
    started = time.perf_counter()
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, errors="replace", timeout=timeout,
                              cwd=cwd, env=scanner_env(tool), stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise ToolError(tool, "timeout", f"no answer within {timeout:g} s") from None
    except OSError as exc:
        raise ToolError(tool, "crashed", f"could not start: {exc}") from None
    result = ToolRun(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started)
    if proc.returncode not in ok_codes:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ToolError(tool, "crashed", f"exit code {proc.returncode}: {' | '.join(tail)[:400]}")
    return result
