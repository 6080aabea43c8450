"""Whether a process on this host still exists: the test that tells a stale claim or a stale
container of a crashed controller from one whose owner is still at work."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """True while ``pid`` exists. A process of another user counts as alive (signal 0 is refused,
    but the process is there); only "no such process" means it is gone."""
    if pid <= 0:
        return True  # not a real pid (a claim being written): never treat it as gone
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
