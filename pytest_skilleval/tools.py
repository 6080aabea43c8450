"""External scanners: find them, learn their version, run them safely, and fail closed.

A scanner run can end four ways that are not a result: the tool is missing, it timed out, it
crashed, or it printed something we cannot parse. Each raises :class:`ToolError` with the tool,
the reason and how to install it, and the check reports INCOMPLETE — never a pass.

Scanners never see the user's credentials: they run with an allow-listed environment. They run
under resource limits too (data memory and CPU time, :func:`limits`): a skill crafted to blow a
scanner up (5,000 nested parentheses sent shellcheck past 4 GB) ends that scanner quickly with a
cause, instead of taking the machine's memory or the batch's whole timeout.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

try:
    import resource
except ImportError:  # Windows: no rlimits; the wall-clock timeout still bounds every run
    resource = None  # type: ignore[assignment]

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
    #: Cap on the scanner's data memory (RLIMIT_DATA: heap and private writable mappings, not the
    #: address space a Go or GHC runtime merely reserves). semgrep-core's OCaml runtime needs more.
    memory_mb: int = 512

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


#: CPU seconds a scanner may spend: a base for its own start-up plus tens of seconds per file,
#: never more than the run's wall-clock timeout.
CPU_BASE_S = 30.0
CPU_PER_FILE_S = 20.0


def cpu_budget(files: int, timeout: float) -> float:
    return min(timeout, CPU_BASE_S + CPU_PER_FILE_S * max(files, 1))


@dataclass(frozen=True)
class Limits:
    memory_mb: int
    cpu_s: float

    def describe(self) -> str:
        return f"limits: {self.memory_mb} MB data, {self.cpu_s:g} s CPU"


def _apply_limits(memory: int, cpu: int) -> None:
    """Runs in the child between fork and exec: only C calls on values computed beforehand."""
    resource.setrlimit(resource.RLIMIT_DATA, (memory, memory))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 5))  # soft: SIGXCPU; the hard limit kills
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _preexec(lim: Limits):  # type: ignore[no-untyped-def]
    if resource is None:
        return None
    memory, cpu = lim.memory_mb * 1024 * 1024, max(1, int(lim.cpu_s))
    hard_data = resource.getrlimit(resource.RLIMIT_DATA)[1]
    hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)[1]
    if hard_data != resource.RLIM_INFINITY:
        memory = min(memory, hard_data)
    if hard_cpu != resource.RLIM_INFINITY:
        cpu = min(cpu, hard_cpu - 5)
    return functools.partial(_apply_limits, memory, cpu)


def _death(returncode: int, stderr: str, lim: Limits) -> str | None:
    """Why a run ended, when it was a resource limit or a signal rather than the tool's own verdict."""
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        if -returncode in (getattr(signal, "SIGXCPU", -1), signal.SIGKILL):
            return f"killed by {name}: over the CPU-time limit ({lim.describe()})"
        return f"killed by {name} ({lim.describe()})"
    lowered = stderr.lower()
    if "out of memory" in lowered or "memory allocation" in lowered or "cannot allocate memory" in lowered:
        return f"out of memory ({lim.describe()})"
    return None


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


#: One lock per (tool, executable): threads that ask at once wait for one probe, not start one each.
_probe_locks: dict[tuple[ToolSpec, str], threading.Lock] = {}


def version(tool: ToolSpec) -> str | None:
    """The tool's version, or None when it is missing or does not answer."""
    exe = locate(tool)
    if exe is None:
        return None
    with _probe_locks.setdefault((tool, exe), threading.Lock()):
        return _version_of(tool, exe)


def ask_version_soon(tool: ToolSpec) -> None:
    """Start asking the tool's version in a background thread; a later :func:`version` waits for that
    answer. For a tool whose version costs a whole start-up, asked beside the work that needs it."""
    threading.Thread(target=version, args=(tool,), name=f"skilleval-version-{tool.name}", daemon=True).start()


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
        ok_codes: Sequence[int] = (0,), files: int = 1) -> ToolRun:
    """Run ``tool`` under its limits (``files``: how many files it is given, for the CPU budget).

    A run killed by a limit or a signal is a ToolError whatever ``ok_codes`` say; so is an exit
    code outside ``ok_codes``."""
    exe = locate(tool)
    if exe is None:
        override = os.environ.get(tool.override_var)
        where = (f"{tool.override_var}={override} is not an absolute path to an executable" if override
                 else f"'{tool.executable}' not found on PATH or beside {sys.executable}")
        raise ToolError(tool, "missing", where)
    lim = Limits(tool.memory_mb, cpu_budget(files, timeout))
    started = time.perf_counter()
    try:
        proc = subprocess.run([exe, *args], capture_output=True, text=True, errors="replace", timeout=timeout,
                              cwd=cwd, env=scanner_env(tool), stdin=subprocess.DEVNULL, preexec_fn=_preexec(lim))
    except subprocess.TimeoutExpired:
        raise ToolError(tool, "timeout", f"no answer within {timeout:g} s") from None
    except OSError as exc:
        raise ToolError(tool, "crashed", f"could not start: {exc}") from None
    result = ToolRun(proc.returncode, proc.stdout, proc.stderr, time.perf_counter() - started)
    death = _death(proc.returncode, proc.stderr, lim)
    if death is not None:
        tail = proc.stderr.strip().splitlines()[-2:]
        raise ToolError(tool, "crashed", f"{death}; exit code {proc.returncode}: {' | '.join(tail)[:300]}")
    if proc.returncode not in ok_codes:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        raise ToolError(tool, "crashed", f"exit code {proc.returncode}: {' | '.join(tail)[:400]}")
    return result
