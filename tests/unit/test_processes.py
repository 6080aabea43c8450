"""processes.alive: the stale-owner test behind scanner batch claims and container sweeps."""

from __future__ import annotations

import os
import subprocess
import sys

from pytest_skilleval import processes


def test_a_running_process_is_alive() -> None:
    assert processes.alive(os.getpid())


def test_a_finished_process_is_gone() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()  # reaped: the pid no longer names a process
    assert not processes.alive(child.pid)


def test_a_process_of_another_user_counts_as_alive() -> None:
    # pid 1 exists on every host; an unprivileged caller is refused signal 0 but it is not gone
    assert processes.alive(1)


def test_a_pid_not_yet_written_is_never_taken_for_gone() -> None:
    assert processes.alive(0)
