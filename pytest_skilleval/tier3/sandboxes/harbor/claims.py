"""Hands each Harbor trial its own scoped gateway token.

Harbor gives every trial of a job the same agent environment, but our gateway tells trials apart by
their token (scripted turns, metering, cassettes). So the trial image's ``claude`` is a wrapper that,
just before the real CLI starts, asks this server over a Unix socket in the bind-mounted gateway
folder: "task folder T, container C". The server opens a gateway trial for T on the spot (through
``issue``) and answers with its token; the same container asking again gets the same one. The client
writes the task and the claim number to ``/logs/agent/skilleval-claim.json``, which Harbor keeps in
the trial's folder — that is how each Harbor trial is matched back to its gateway trial, also when
Harbor retried a trial in a fresh container.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Claim:
    task: str  # the task folder's name
    number: int  # 1, 2, ... per task, in the order containers asked
    token: str


class ClaimServer:
    def __init__(self, path: Path, issue: Callable[[str, int], str | None]) -> None:
        """``issue(task, number)`` opens a gateway trial and returns its token (None: unknown task)."""
        self.path = path
        self._issue = issue
        self._by_container: dict[tuple[str, str], Claim] = {}
        self._counts: dict[str, int] = {}
        self._lock = threading.Lock()
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        path.chmod(0o666)  # the container's root has no CAP_DAC_OVERRIDE
        self._server.listen(64)
        self._closed = False
        threading.Thread(target=self._serve, name="skilleval-harbor-claims", daemon=True).start()

    def claim(self, task: str, container: str) -> Claim | None:
        with self._lock:
            known = self._by_container.get((task, container))
            if known is not None:
                return known
            number = self._counts.get(task, 0) + 1
            token = self._issue(task, number)
            if token is None:
                return None
            self._counts[task] = number
            claim = self._by_container[(task, container)] = Claim(task, number, token)
            return claim

    def _serve(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            with conn:
                try:
                    conn.settimeout(10)
                    ask = json.loads(conn.makefile("r").readline() or "{}")
                    folder = Path(str(ask.get("task", "")))  # compose's CONTEXT_DIR: <task>/environment
                    task = folder.parent.name if folder.name == "environment" else folder.name
                    got = self.claim(task, str(ask.get("trial", "")))
                    answer = {"token": got.token, "task": got.task, "number": got.number} if got else {}
                    conn.sendall((json.dumps(answer) + "\n").encode())
                except Exception:  # noqa: BLE001 - one bad request must not stop the server; the client then exits non-zero
                    continue

    def close(self) -> None:
        self._closed = True
        self._server.close()
