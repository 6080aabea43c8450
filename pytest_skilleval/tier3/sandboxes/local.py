"""The ``local`` sandbox: bubblewrap when it works here, else a plain subprocess (only if allowed).

Under bubblewrap the agent sees the host's root read-only, a private ``/tmp``, ``/dev`` and
``/proc``, its own PID/IPC/UTS namespaces, and writable binds of exactly the trial's workspace,
HOME and TMPDIR. Its network namespace holds nothing but loopback; the gateway is reached through
a Unix-socket bridge (bridge.py + relay.py), so a forgotten telemetry switch fails instead of
leaking. The real user's skill folders are hidden behind empty tmpfs mounts.

Without bubblewrap (or where user namespaces are off) the trial runs as a plain subprocess with the
same private HOME and environment but no confinement; the trial runner refuses that unless
``--skilleval-allow-unsandboxed``, and reports say which one ran.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

from pytest_skilleval.tier3.sandboxes.base import RunResult, RunSpec, Sandbox
from pytest_skilleval.tier3.sandboxes.bridge import UnixBridge
from pytest_skilleval.tier3.sandboxes.process import run_process

RELAY = Path(__file__).with_name("relay.py")
PROBE_TIMEOUT_S = 30.0


@functools.cache
def probe_bwrap(path: str) -> tuple[str | None, str | None]:
    """(version, problem): whether this bubblewrap can build our sandbox here (user namespaces may be off)."""
    try:
        version = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S).stdout.split()[-1:]
        done = subprocess.run([path, "--die-with-parent", "--unshare-all", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
                               "--tmpfs", "/tmp", "--", "true"], capture_output=True, text=True, timeout=PROBE_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"bubblewrap at {path} does not run: {exc}"
    if done.returncode != 0:
        return None, f"bubblewrap at {path} cannot create a sandbox here: {done.stderr.strip()[:300]}"
    return (version[0] if version else "unknown"), None


class LocalSandbox(Sandbox):
    name = "local"

    def __init__(self, bwrap: str | None = None, *, use_bwrap: bool = True) -> None:
        self._bwrap = (bwrap or shutil.which("bwrap")) if use_bwrap else None
        self._bridges: dict[tuple[str, int], UnixBridge] = {}
        self._lock = threading.Lock()

    @property
    def bwrap_problem(self) -> str | None:
        if self._bwrap is None:
            return "bubblewrap (bwrap) is not installed (apt-get install bubblewrap)"
        return probe_bwrap(self._bwrap)[1]

    @property
    def isolated(self) -> bool:
        return self.bwrap_problem is None

    def describe(self) -> str:
        if self.isolated:
            assert self._bwrap is not None
            return (f"local: bubblewrap {probe_bwrap(self._bwrap)[0]} (read-only root, private /tmp and HOME, "
                    "network: the gateway only)")
        return f"local: UNSANDBOXED subprocess (private HOME and environment only; {self.bwrap_problem})"

    def run(self, spec: RunSpec) -> RunResult:
        if not self.isolated:
            return run_process(spec.argv, spec.env, spec.cwd, spec.timeout_s, spec.stdout, spec.stderr)
        return run_process(self.wrap(spec), spec.env, spec.cwd, spec.timeout_s, spec.stdout, spec.stderr)

    def wrap(self, spec: RunSpec) -> list[str]:
        """The bubblewrap command line around ``spec.argv``."""
        assert self._bwrap is not None
        argv = [self._bwrap, "--die-with-parent", "--new-session", "--unshare-all",
                "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        for folder in _runtime_under_tmp(spec.argv[:1]):  # the private /tmp must not hide our own interpreter
            argv += ["--ro-bind", str(folder), str(folder)]
        for folder in spec.writable:  # after --tmpfs /tmp: binds under /tmp land on top of it
            argv += ["--bind", str(folder), str(folder)]
        for folder in spec.hidden:
            if folder.is_dir() and not any(folder == w or w in folder.parents for w in spec.writable):
                argv += ["--tmpfs", str(folder)]
        command = list(spec.argv)
        if spec.network == "gateway":
            if spec.gateway is None:
                raise ValueError("network='gateway' needs the gateway's (host, port)")
            bridge = self._bridge(spec.gateway)
            argv += ["--bind", str(bridge.folder), str(bridge.folder)]
            # -I -S: the relay is stdlib only; no site-packages, no PYTHON* variables, fast start.
            command = [sys.executable, "-I", "-S", str(RELAY), str(spec.gateway[1]), str(bridge.path), "--", *command]
        return argv + ["--chdir", str(spec.cwd), "--", *command]

    def _bridge(self, target: tuple[str, int]) -> UnixBridge:
        with self._lock:
            if target not in self._bridges:
                self._bridges[target] = UnixBridge(target)
            return self._bridges[target]

    def close(self) -> None:
        with self._lock:
            for bridge in self._bridges.values():
                bridge.close()
            self._bridges.clear()


def _runtime_under_tmp(commands: Sequence[str]) -> list[Path]:
    """Folders under /tmp that the sandboxed process needs read-only: the venv (the gateway relay runs
    on this interpreter), this package, and the agent binary. A checkout under /tmp (as CI clones may
    be) would otherwise vanish behind the private /tmp."""
    tmp = Path("/tmp")
    wanted = [Path(sys.prefix), Path(__file__).resolve().parent.parent.parent]
    wanted += [Path(os.path.realpath(c)).parent for c in commands if os.path.isabs(c) or os.sep in c]
    out: list[Path] = []
    for path in wanted:
        path = Path(os.path.realpath(path))
        if tmp in path.parents and path.exists():
            top = tmp / path.relative_to(tmp).parts[0]  # the checkout or venv folder as a whole
            if top not in out:
                out.append(top)
    return out
