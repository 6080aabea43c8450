"""The in-sandbox end of the gateway bridge: run as a script inside bubblewrap, stdlib only.

    python -I -S relay.py PORT SOCKET -- agent argv...

The sandbox has its own network namespace with nothing but loopback, so the host's gateway port
is unreachable from inside. This script listens on 127.0.0.1:PORT *inside* the namespace (the
same port the agent was configured with), pipes every connection to SOCKET — a Unix socket
bind-mounted from the host, whose other end (bridge.py) connects to the gateway — then runs the
agent as its child and exits with the agent's exit code. Nothing else can leave the sandbox.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading


def pump(src: socket.socket, dst: socket.socket, done: threading.Semaphore) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        try:
            dst.shutdown(socket.SHUT_WR)  # pass the half-close on: the peer sees the end of the request/response
        except OSError:
            pass
        if not done.acquire(blocking=False):  # the second pump to finish closes both ends
            src.close()
            dst.close()


def _serve(server: socket.socket, path: str) -> None:
    while True:
        client, _ = server.accept()
        try:
            upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            upstream.connect(path)
        except OSError as exc:
            sys.stderr.write(f"skilleval relay: cannot reach the gateway bridge: {exc}\n")
            client.close()
            continue
        done = threading.Semaphore(1)
        threading.Thread(target=pump, args=(client, upstream, done), daemon=True).start()
        threading.Thread(target=pump, args=(upstream, client, done), daemon=True).start()


def main(argv: list[str]) -> int:
    if len(argv) < 4 or argv[2] != "--":
        sys.stderr.write("usage: relay.py PORT SOCKET -- COMMAND...\n")
        return 125
    port, path, command = int(argv[0]), argv[1], argv[3:]
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        server.bind(("127.0.0.1", port))
    except OSError as exc:
        sys.stderr.write(f"skilleval relay: cannot listen on 127.0.0.1:{port} in the sandbox: {exc}\n")
        return 125
    server.listen(64)
    threading.Thread(target=_serve, args=(server, path), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        sys.stderr.write(f"skilleval relay: cannot start {command[0]}: {exc}\n")
        return 127
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: child.send_signal(signum))
    code = child.wait()
    sys.stdout.flush()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    os._exit(main(sys.argv[1:]))  # _exit: do not wait for pump threads of connections left open
