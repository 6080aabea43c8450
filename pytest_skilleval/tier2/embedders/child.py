"""The int8 MiniLM run in a child process, for the catalog's cold descriptions.

Why a process: :class:`~pytest_skilleval.tier2.inter.CatalogIndex` embeds the descriptions on
threads while its main thread chunks bodies in pure Python (markdown-it). onnxruntime releases the
interpreter lock during a call, but each text returns to Python between calls and waits for the lock
the chunker holds, up to the interpreter's 5 ms switch interval against ~7 ms of work per text:
measured on 1,500 descriptions next to a chunking thread, each MiniLM thread slept about as long as
it ran (run 6.2-7.2 s, asleep 6.2-8.5 s; 0.5 s alone), and a core sat idle meanwhile. In a child
process the MiniLM threads have an interpreter of their own.

The child loads the same model file (sha256 verified again) with the same session options and runs
one text per call, so a vector is bitwise the one the parent would compute
(``test_the_child_process_computes_the_parents_vectors``). It starts on the first call and ends with
:meth:`close` (or the ``with`` block); a child that fails or dies is a :class:`ProviderError`.

Protocol over the child's stdin/stdout: a request is an 8-byte little-endian length and that many
bytes of a JSON list of texts (a length of 0 ends the child); a reply is one byte (``v`` vectors,
``e`` an error) and an 8-byte length, then float32 rows of ``dim`` values or a UTF-8 message.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO

import numpy as np

from pytest_skilleval.providers.base import Embedder, ProviderError
from pytest_skilleval.tier2.embedders.onnx_minilm import OnnxMiniLMEmbedder

_LENGTH = struct.Struct("<Q")
_REPLY = struct.Struct("<cQ")
#: glibc 2.35+: malloc asks the kernel for transparent huge pages (madvise) for its heap and large
#: blocks, where onnxruntime keeps the packed int8 weights (~11 MB, streamed once per text): fewer TLB
#: misses, ~3-7 % fewer CPU seconds per text here, the same vectors. Other C libraries ignore it.
_HUGE_PAGES = "glibc.malloc.hugetlb=1"
#: The folder holding the ``pytest_skilleval`` package the parent runs: the child imports the same code.
_PACKAGE_PARENT = str(Path(__file__).resolve().parents[3])


class ChildEmbedder(Embedder):
    """``local``'s model in a child process: the same ``model_id``, ``dim`` and vectors."""

    def __init__(self, local: OnnxMiniLMEmbedder) -> None:
        self.model_id, self.dim = local.model_id, local.dim
        self.build, self.threads = local.build, local.threads
        self._proc: subprocess.Popen[bytes] | None = None
        self._stderr: IO[bytes] | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        proc = self._start()
        assert proc.stdin is not None and proc.stdout is not None
        request = json.dumps(list(texts)).encode()  # ASCII: a lone surrogate survives the trip
        try:
            proc.stdin.write(_LENGTH.pack(len(request)) + request)
            proc.stdin.flush()
            kind, size = _REPLY.unpack(_read(proc.stdout, _REPLY.size))
            payload = _read(proc.stdout, size)
        except (OSError, EOFError) as exc:
            raise ProviderError("minilm", "other", f"the MiniLM child process failed: {exc}; {self._errors()}") from exc
        if kind != b"v":
            raise ProviderError("minilm", "other", f"the MiniLM child process: {payload.decode(errors='replace')}")
        return np.frombuffer(payload, dtype=np.float32).reshape(len(texts), self.dim).copy()

    def _start(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            self._stderr = tempfile.TemporaryFile()  # read only on failure; a pipe could fill and block the child
            # -P: ``-m`` would put the working directory (the catalog's checkout, not trusted) first on the path
            command = [sys.executable, "-P", "-m", __name__, self.build, str(self.threads or 0)]
            try:
                self._proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, env=child_environment())
            except OSError as exc:
                raise ProviderError("minilm", "config", f"cannot start the MiniLM child process: {exc}") from exc
        return self._proc

    def _errors(self) -> str:
        if self._stderr is None:
            return "no output"
        self._stderr.seek(0)
        text = self._stderr.read()[-2000:].decode(errors="replace").strip()
        return f"its output: {text}" if text else "no output"

    def close(self) -> None:
        """End the child and wait for it (its CPU time then counts in the parent's RUSAGE_CHILDREN)."""
        proc, self._proc = self._proc, None
        if proc is not None:
            try:
                assert proc.stdin is not None
                proc.stdin.write(_LENGTH.pack(0))
                proc.stdin.close()
            except OSError:
                pass  # already gone
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    def __enter__(self) -> ChildEmbedder:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None) -> None:
        self.close()


def child_environment() -> dict[str, str]:
    """This process's environment, with this package first on the path and malloc asking for huge pages."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (_PACKAGE_PARENT, os.environ.get("PYTHONPATH")) if p))
    tunables = os.environ.get("GLIBC_TUNABLES", "")
    if "glibc.malloc.hugetlb" not in tunables:  # one the user set is theirs
        env["GLIBC_TUNABLES"] = ":".join(t for t in (tunables, _HUGE_PAGES) if t)
    return env


def _read(stream: IO[bytes], size: int) -> bytes:
    data = stream.read(size)
    if len(data) != size:
        raise EOFError(f"the child closed its output after {len(data)} of {size} bytes")
    return data


def serve(build: str, threads: int, requests: IO[bytes], replies: IO[bytes]) -> None:
    """The child's loop: embed each request with a model of its own until a zero length or end of input."""
    model = OnnxMiniLMEmbedder(threads or None, build=build)
    while True:
        head = requests.read(_LENGTH.size)
        if len(head) < _LENGTH.size:
            return
        (size,) = _LENGTH.unpack(head)
        if size == 0:
            return
        try:
            vectors = np.ascontiguousarray(model.embed(json.loads(_read(requests, size))), dtype=np.float32)
            reply = _REPLY.pack(b"v", vectors.nbytes) + vectors.tobytes()
        except Exception as exc:  # reported to the parent, which raises it as a ProviderError
            message = f"{type(exc).__name__}: {exc}".encode()
            reply = _REPLY.pack(b"e", len(message)) + message
        replies.write(reply)
        replies.flush()


if __name__ == "__main__":
    replies = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything else printed (a library's warning) goes to the error output, not into the replies
    serve(sys.argv[1], int(sys.argv[2]), sys.stdin.buffer, replies)
