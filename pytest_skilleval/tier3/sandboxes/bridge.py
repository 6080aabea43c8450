"""The host end of the gateway bridge: a Unix socket whose connections are piped to the gateway.

A sandbox with its own network namespace reaches nothing over TCP, so each sandbox gets this
socket (bind-mounted) and its relay (relay.py) turns it back into 127.0.0.1:PORT inside. One
bridge serves every trial of a process that talks to the same gateway; it is plain byte piping,
so the gateway still sees and checks every request and its token.
"""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from pathlib import Path

from pytest_skilleval.tier3.sandboxes.relay import pump


class UnixBridge:
    def __init__(self, target: tuple[str, int]) -> None:
        self.target = target
        # A private folder (0700) of its own: only this user can connect, and only the folder is mounted.
        self.folder = Path(tempfile.mkdtemp(prefix="skilleval-gw-"))
        self.path = self.folder / "gateway.sock"
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(self.path))
        self._server.listen(128)
        self._closed = False
        threading.Thread(target=self._serve, name=f"skilleval-bridge-{target[1]}", daemon=True).start()

    def _serve(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            try:
                upstream = socket.create_connection(self.target, timeout=10)
                upstream.settimeout(None)
                upstream.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                client.close()
                continue
            done = threading.Semaphore(1)
            threading.Thread(target=pump, args=(client, upstream, done), daemon=True).start()
            threading.Thread(target=pump, args=(upstream, client, done), daemon=True).start()

    def close(self) -> None:
        self._closed = True
        try:
            self._server.close()
        finally:
            shutil.rmtree(self.folder, ignore_errors=True)
