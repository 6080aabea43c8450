"""The ``local`` sandbox: bubblewrap when it works here, else a plain subprocess (only if allowed).

Under bubblewrap the agent sees only what it needs, never the host's root: the system's program
and library folders (``/usr`` and its ``/bin``, ``/lib`` links) read-only, the few ``/etc`` files
name resolution, users, time zones and TLS need (:data:`ETC_FILES`; never ``/etc/shadow`` or
``/etc/ssl/private``), the install folders of the programs it runs (the agent CLI's npm prefix,
Node, the interpreter of the gateway relay) read-only, a private ``/tmp``, ``/dev`` and ``/proc``,
its own PID/IPC/UTS namespaces, and writable binds of exactly the trial's workspace, HOME and
TMPDIR. Nothing of ``/root``, ``/home``, the project checkout or any other workspace is there. Its
network namespace holds nothing but loopback; the gateway is reached through a Unix-socket bridge
(bridge.py + relay.py), so a forgotten telemetry switch fails instead of leaking.

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
#: Where the gateway relay's interpreter is bound inside the sandbox (the relay script sits beside it).
RELAY_PYTHON = Path("/run/skilleval/python")
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


#: Read-only system folders: programs and libraries (merged-/usr links are recreated as links).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: The /etc entries programs need to start, resolve names, know users and time, and verify TLS.
ETC_FILES = ("passwd", "group", "nsswitch.conf", "hosts", "host.conf", "resolv.conf", "gai.conf", "localtime", "timezone",
             "ld.so.cache", "ld.so.conf", "ld.so.conf.d", "alternatives", "ssl/certs", "ssl/openssl.cnf", "ca-certificates",
             "ca-certificates.conf", "pki/tls/certs", "pki/ca-trust", "mime.types", "protocols", "services", "os-release")
#: Runtimes an agent CLI starts through ``#!/usr/bin/env``: their install folder is bound when it is not a system folder.
RUNTIMES = ("node",)


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
            return (f"local: bubblewrap {probe_bwrap(self._bwrap)[0]} (system folders and the agent read-only; no host home or "
                    "checkout; private /tmp and HOME; network: the gateway only)")
        return f"local: UNSANDBOXED subprocess (private HOME and environment only; {self.bwrap_problem})"

    def run(self, spec: RunSpec) -> RunResult:
        if not self.isolated:
            return run_process(spec.argv, spec.env, spec.cwd, spec.timeout_s, spec.stdout, spec.stderr, spec.cancel)
        return run_process(self.wrap(spec), spec.env, spec.cwd, spec.timeout_s, spec.stdout, spec.stderr, spec.cancel)

    def wrap(self, spec: RunSpec) -> list[str]:
        """The bubblewrap command line around ``spec.argv``."""
        assert self._bwrap is not None
        argv = [self._bwrap, "--die-with-parent", "--new-session", "--unshare-all", "--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        argv += _system_binds()
        command = list(spec.argv)
        programs = [command[0]] if command else []
        if spec.network == "gateway":
            if spec.gateway is None:
                raise ValueError("network='gateway' needs the gateway's (host, port)")
            bridge = self._bridge(spec.gateway)
            argv += ["--bind", str(bridge.folder), str(bridge.folder)]
            # -I -S: the relay is stdlib only; no site-packages, no PYTHON* variables, fast start. The real
            # interpreter's install folder and the relay are bound under /run/skilleval, so where they live
            # on the host (a home's pyenv, the checkout) shows nowhere in the sandbox.
            python, prefix = Path(os.path.realpath(sys.executable)), Path(os.path.realpath(sys.base_prefix))
            if prefix in python.parents and not _is_system(python):
                argv += ["--ro-bind", str(prefix), str(RELAY_PYTHON)]
                python = RELAY_PYTHON / python.relative_to(prefix)
            else:
                programs.append(str(python))
            relay = RELAY_PYTHON.parent / RELAY.name
            argv += ["--ro-bind", str(RELAY), str(relay)]
            command = [str(python), "-I", "-S", str(relay), str(spec.gateway[1]), str(bridge.path), "--", *command]
        programs += [found for name in RUNTIMES if (found := shutil.which(name, path=spec.env.get("PATH", os.defpath)))]
        bound = list(spec.writable)
        for source, dest in _install_binds(programs):  # after --tmpfs /tmp: binds under /tmp land on top of it
            if not any(dest == b or b in dest.parents for b in bound):
                argv += ["--ro-bind", str(source), str(dest)]
                bound.append(dest)
        for folder in spec.writable:
            argv += ["--bind", str(folder), str(folder)]
        for folder in spec.hidden:  # the real user's skill folders, where a bound folder would show them
            if folder.is_dir() and any(b in folder.parents for b in bound) and not any(folder == w or w in folder.parents for w in spec.writable):
                argv += ["--tmpfs", str(folder)]
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


def _system_binds() -> list[str]:
    """Read-only binds of the system folders and the needed /etc entries that exist here."""
    out: list[str] = []
    for folder in SYSTEM_DIRS:
        if os.path.islink(folder):  # merged /usr: /bin -> usr/bin
            out += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            out += ["--ro-bind", folder, folder]
    for name in ETC_FILES:
        path = os.path.join("/etc", name)
        if os.path.exists(path):
            out += ["--ro-bind", path, path]
    return out


def _is_system(path: Path) -> bool:
    return any(path == Path(d) or Path(d) in path.parents for d in SYSTEM_DIRS)


def _install_folder(program: Path) -> Path:
    """The folder a program was installed into: an npm prefix (above ``node_modules``), a ``bin``'s
    prefix (a venv, ``/opt/node``), else its own folder."""
    parts = program.parts
    if "node_modules" in parts:
        return Path(*parts[:parts.index("node_modules")])
    return program.parent.parent if program.parent.name == "bin" else program.parent


def _never_whole(folder: Path) -> bool:
    """Folders too wide to bind as an install folder: the root, homes and their parents."""
    homes = {Path(os.path.expanduser("~")), Path("/root"), Path("/home")}
    return folder == Path("/") or folder in homes or any(folder in h.parents for h in homes) or Path("/home") == folder.parent

def _install_binds(programs: Sequence[str]) -> list[tuple[Path, Path]]:
    """(host source, sandbox path) for each program's install folder outside the system folders, at the
    path the command names it by and at its real path (so both its links and ``realpath`` resolve)."""
    out: list[tuple[Path, Path]] = []
    for program in programs:
        given = Path(os.path.abspath(program))
        real = Path(os.path.realpath(given))
        for path in (given, real):
            if _is_system(path) and _is_system(real):
                continue
            folder = _install_folder(path)
            if _never_whole(folder):
                folder = path.parent if not _never_whole(path.parent) else path
            source = Path(os.path.realpath(folder))
            if source.exists() and (source, folder) not in out:
                out.append((source, folder))
    return out
