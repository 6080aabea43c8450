"""A fork server for the mutation run: each mutant's tests start in a fresh child forked from a parent
that has imported pytest and the third-party libraries (numpy, hypothesis, pydantic, ...) but none of
the project's own code, so every child imports ``pytest_skilleval`` and the tests from the mutated
tree exactly as a new interpreter would, without paying for the third-party imports per mutant.
(Preloading the project modules that do not import the mutated one was tried: no faster.)

``forkserver.py serve SOCKET`` runs the server; ``forkserver.py run SOCKET TIMEOUT -- PYTEST ARGS``
(the test command cosmic-ray runs per mutant) asks it for one pytest run and exits with its status.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import socket
import subprocess
import sys

OWN = ("pytest_skilleval", "tests", "conftest", "__main__")


def third_party_modules() -> list[str]:
    """What importing the plugin and pytest pulls in, minus the project's own modules: found in a
    throwaway interpreter so that this process never imports project code."""
    probe = ("import sys, pytest, _pytest.pytester, pytest_skilleval.plugin\n"
             "print('\\n'.join(sorted(sys.modules)))")
    names = subprocess.run([sys.executable, "-c", probe], check=True, capture_output=True, text=True).stdout.split()
    return [n for n in names if not n.startswith(OWN)]


def serve(path: str) -> None:
    for name in third_party_modules():
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that only imports in some context is simply not preloaded
            pass
    leaked = [n for n in sys.modules if n.startswith("pytest_skilleval")]
    if leaked:  # a child must import the project itself, mutated module included
        raise SystemExit(f"preloading imported {', '.join(leaked)}: a third-party module imports the project")
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(4)
    print("ready", flush=True)
    while True:
        conn, _ = server.accept()
        with conn:
            request = json.loads(conn.makefile().readline())
            pid = os.fork()
            if pid == 0:
                server.close()
                os.chdir(request["cwd"])
                null = os.open(os.devnull, os.O_WRONLY)
                os.dup2(null, 1)
                os.dup2(null, 2)
                signal.alarm(int(request["timeout"]) + 1)  # dies by SIGALRM: counted as killed, like a timeout
                import pytest

                code = pytest.main(request["args"])
                sys.stdout.flush()
                os._exit(int(code))
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
            try:
                conn.sendall(f"{code}\n".encode())
            except OSError:
                pass  # the client was killed (cosmic-ray's timeout): nobody to tell, serve the next one


def run(path: str, timeout: str, args: list[str]) -> int:
    """One pytest run through the server; without an answer from it, a plain pytest process instead:
    a failure of the server must never count as a killed mutant."""
    try:
        client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        client.connect(path)
        client.sendall((json.dumps({"cwd": os.getcwd(), "timeout": float(timeout), "args": args}) + "\n").encode())
        reply = client.makefile().readline().strip()
        return int(reply)
    except (OSError, ValueError):
        os.execv(sys.executable, [sys.executable, "-m", "pytest", *args])
        raise


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2])
    else:
        sys.exit(run(sys.argv[2], sys.argv[3], sys.argv[sys.argv.index("--") + 1:]))
