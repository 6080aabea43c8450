"""Run one command with a time limit, and kill its whole process tree when the limit passes.

An agent CLI starts helpers (node workers, shells, its own sandbox) and some start new sessions,
so killing the process group is not enough: the tree is collected from /proc by parent pid and
every member is killed. Output goes to files when asked, so a chatty agent cannot fill memory.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_skilleval.tier3.sandboxes.base import RunResult

MAX_CAPTURE = 32 * 1024 * 1024  # bytes of stdout/stderr read back into the result


def _children() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            continue  # exited meanwhile
        # The command name (field 2) may hold spaces and parentheses: the ppid follows the last ')'.
        ppid = int(stat[stat.rfind(b")") + 2:].split()[1])
        tree.setdefault(ppid, []).append(int(entry))
    return tree


def kill_tree(pid: int) -> None:
    """SIGKILL ``pid`` and every descendant (and its process group)."""
    doomed = [pid]
    if os.path.isdir("/proc"):
        tree, index = _children(), 0
        while index < len(doomed):
            doomed.extend(tree.get(doomed[index], ()))
            index += 1
    try:
        os.killpg(pid, signal.SIGKILL)
    except OSError:
        pass
    for member in doomed:
        try:
            os.kill(member, signal.SIGKILL)
        except OSError:
            pass


CANCEL_POLL_S = 0.2  # how often a cancellable run looks at its cancel event


def run_process(argv: Sequence[str], env: Mapping[str, str], cwd: Path, timeout_s: float,
                stdout: Path | None = None, stderr: Path | None = None, cancel: threading.Event | None = None) -> RunResult:
    out_fh = open(stdout, "wb") if stdout else None  # noqa: SIM115 - closed in finally
    err_fh = open(stderr, "wb") if stderr else None  # noqa: SIM115
    started = time.perf_counter()
    timed_out = cancelled = False
    try:
        proc = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.DEVNULL,
                                stdout=out_fh or subprocess.PIPE, stderr=err_fh or subprocess.PIPE,
                                start_new_session=True)  # its own group: signals at pytest do not hit it, and it dies as one
        deadline = started + timeout_s
        while True:
            try:  # communicate() may be called again after a TimeoutExpired: the output read so far is kept
                step = deadline - time.perf_counter() if cancel is None else min(CANCEL_POLL_S, deadline - time.perf_counter())
                raw_out, raw_err = proc.communicate(timeout=max(step, 0.001))
                break
            except subprocess.TimeoutExpired:
                cancelled = cancel is not None and cancel.is_set()
                timed_out = not cancelled and time.perf_counter() >= deadline
                if cancelled or timed_out:
                    kill_tree(proc.pid)
                    raw_out, raw_err = proc.communicate()
                    break
    finally:
        for fh in (out_fh, err_fh):
            if fh:
                fh.close()
    wall = time.perf_counter() - started
    text_out = _read(stdout) if stdout else (raw_out or b"")[:MAX_CAPTURE].decode("utf-8", "replace")
    text_err = _read(stderr) if stderr else (raw_err or b"")[:MAX_CAPTURE].decode("utf-8", "replace")
    return RunResult(None if timed_out or cancelled else proc.returncode, text_out, text_err, timed_out, wall, cancelled)


def _read(path: Path) -> str:
    with open(path, "rb") as fh:
        return fh.read(MAX_CAPTURE).decode("utf-8", "replace")
