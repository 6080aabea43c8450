"""Cassettes: one trial's recorded exchanges, and matching a replayed request against them.

A request is matched on what decides the model's next move — the endpoint, streaming or not, the
declared tools, and the tool results so far — not on the whole body: prompts carry dates, session
ids and temp paths that change every run. Tool results are compared after normalising what is
volatile (numbers, hex ids, whitespace, and the trial's own paths via placeholders).

Requests are served in turn order, but a request may take any unused interaction with the same
signature: OpenCode fires its title request concurrently with the first turn, so strict order
would diverge at random.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_skilleval.atomic import write_atomic
from pytest_skilleval.gateway.protocols.base import NeutralRequest

FORMAT, VERSION = "skilleval-cassette", 1
PREVIEW = 300
_HEX = re.compile(r"\b(?=[0-9a-f]*\d)[0-9a-f]{6,}\b")
_DIGITS = re.compile(r"\d+")


def normalize(text: str, placeholders: Mapping[str, str]) -> str:
    for token, value in sorted(placeholders.items(), key=lambda kv: -len(kv[1])):
        if value:
            text = text.replace(value, token)
    text = _DIGITS.sub("0", _HEX.sub("#", text))
    return " ".join(text.split())


@dataclass(frozen=True)
class ToolResult:
    sha256: str
    preview: str

    @classmethod
    def of(cls, text: str, placeholders: Mapping[str, str]) -> ToolResult:
        norm = normalize(text, placeholders)
        return cls(hashlib.sha256(norm.encode("utf-8")).hexdigest(), norm[:PREVIEW])


@dataclass(frozen=True)
class Signature:
    method: str
    path: str
    stream: bool
    tools: tuple[str, ...]
    tool_results: tuple[ToolResult, ...]

    def difference(self, got: Signature) -> str | None:
        """What ``got`` (the live request) does differently from this recorded one; None if equal."""
        if (self.method, self.path) != (got.method, got.path):
            return f"endpoint: recorded {self.method} {self.path}, got {got.method} {got.path}"
        if self.stream != got.stream:
            return f"streaming: recorded stream={self.stream}, got stream={got.stream}"
        if self.tools != got.tools:
            added, gone = sorted(set(got.tools) - set(self.tools)), sorted(set(self.tools) - set(got.tools))
            return f"declared tools differ: new {added or '[]'}, missing {gone or '[]'}"
        if len(self.tool_results) != len(got.tool_results):
            return f"recorded {len(self.tool_results)} tool results, got {len(got.tool_results)}"
        for n, (mine, theirs) in enumerate(zip(self.tool_results, got.tool_results, strict=True), 1):
            if mine.sha256 != theirs.sha256:
                return f"tool result #{n} differs: recorded {mine.preview!r}, got {theirs.preview!r}"
        return None

    @classmethod
    def of(cls, method: str, path: str, request: NeutralRequest, placeholders: Mapping[str, str]) -> Signature:
        return cls(method, path, request.stream, request.tools, tuple(ToolResult.of(t, placeholders) for t in request.tool_results))

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "path": self.path, "stream": self.stream, "tools": list(self.tools),
                "tool_results": [asdict(r) for r in self.tool_results]}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Signature:
        return cls(data["method"], data["path"], bool(data["stream"]), tuple(data["tools"]),
                   tuple(ToolResult(**r) for r in data["tool_results"]))


@dataclass
class Interaction:
    turn: int
    request: Signature
    status: int
    content_type: str
    body: bytes
    model: str = ""
    usage: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        try:
            body, encoding = self.body.decode("utf-8"), "utf-8"
        except UnicodeDecodeError:
            body, encoding = base64.b64encode(self.body).decode("ascii"), "base64"
        return {"turn": self.turn, "request": self.request.to_json(), "model": self.model, "usage": self.usage,
                "response": {"status": self.status, "content_type": self.content_type, "encoding": encoding, "body": body}}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Interaction:
        resp = data["response"]
        raw = base64.b64decode(resp["body"]) if resp.get("encoding") == "base64" else resp["body"].encode("utf-8")
        return cls(int(data["turn"]), Signature.from_json(data["request"]), int(resp["status"]), resp["content_type"], raw,
                   data.get("model", ""), dict(data.get("usage") or {}))


@dataclass
class Cassette:
    trial: str
    interactions: list[Interaction] = field(default_factory=list)
    placeholders: tuple[str, ...] = ()
    _used: set[int] = field(default_factory=set, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def save(self, path: Path) -> Path:
        doc = {"format": FORMAT, "version": VERSION, "trial": self.trial, "placeholders": list(self.placeholders),
               "interactions": [i.to_json() for i in self.interactions]}
        return write_atomic(path, json.dumps(doc, indent=1, ensure_ascii=False) + "\n")

    @classmethod
    def load(cls, path: Path) -> Cassette:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        if doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise ValueError(f"{path}: not a {FORMAT} v{VERSION} file")
        return cls(doc["trial"], [Interaction.from_json(i) for i in doc["interactions"]], tuple(doc.get("placeholders") or ()))

    def take(self, got: Signature) -> tuple[Interaction | None, str]:
        """The earliest unused interaction matching ``got``; else None and what differed."""
        with self._lock:
            unused = [i for i in self.interactions if i.turn not in self._used]
            for interaction in unused:
                if interaction.request.difference(got) is None:
                    self._used.add(interaction.turn)
                    return interaction, ""
        if not unused:
            return None, f"the cassette has {len(self.interactions)} turns and all were served; this request is extra"
        # Explain against the most similar candidate: same endpoint and tools first, else the next in order.
        near = next((i for i in unused if (i.request.path, i.request.tools) == (got.path, got.tools)), unused[0])
        return None, f"closest recorded turn {near.turn}: {near.request.difference(got)}"

    def unused_turns(self) -> list[int]:
        with self._lock:
            return [i.turn for i in self.interactions if i.turn not in self._used]
