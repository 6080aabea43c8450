"""The two provider interfaces every model call in pytest-skilleval goes through.

Callers (Tier 1 rubric, Tier 2 classification, judges) depend on these only, never on an SDK, so a
user can override the ``skilleval_chat`` / ``skilleval_embedder`` fixtures with anything that
implements them. A failed call raises :class:`ProviderError` after bounded retries; callers turn it
into an ERROR result — never a silent zero.
"""

from __future__ import annotations

import abc
import json
import re
from collections.abc import Sequence
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

# Re-exported: they live apart from pydantic, since the provider options raise ProviderError at start-up.
from pytest_skilleval.providers.errors import ErrorKind as ErrorKind
from pytest_skilleval.providers.errors import ProviderError

T = TypeVar("T", bound=BaseModel)


class ChatMessage(BaseModel):
    model_config = ConfigDict(frozen=True)
    role: Literal["system", "user", "assistant"]
    content: str


class ChatRequest(BaseModel):
    """One chat call. ``attempt`` is part of the cache key, so repeated attempts are never collapsed."""

    model_config = ConfigDict(frozen=True)
    messages: tuple[ChatMessage, ...]
    model: str | None = None  # None: the provider's configured model
    temperature: float = 0.0
    max_tokens: int = 1024
    json_schema: dict[str, Any] | None = None  # ask for JSON matching this schema
    schema_name: str = "result"
    attempt: int = 0
    #: An independent sample of the same request (the judge's votes 2..N): part of the cache key when
    #: non-zero, so votes are distinct calls; 0 leaves the key exactly as it was before votes existed.
    sample: int = 0


class ChatReply(BaseModel):
    text: str
    model: str
    provider: str
    input_tokens: int = 0
    output_tokens: int = 0
    cached: bool = False


class ChatProvider(abc.ABC):
    name: str = "chat"
    model: str = ""

    @abc.abstractmethod
    def chat(self, request: ChatRequest) -> ChatReply:
        """One completion; transport failures retried inside, then ProviderError."""

    def structured(self, request: ChatRequest, output: type[T], *, max_attempts: int = 3) -> tuple[T, ChatReply]:
        """A reply validated against ``output``; a malformed reply is retried, then ProviderError('malformed')."""
        schema = request.json_schema or output.model_json_schema()
        req = request.model_copy(update={"json_schema": schema, "schema_name": request.schema_name or output.__name__})
        problem = ""
        for n in range(max_attempts):
            if n:
                reminder = ChatMessage(role="user", content=f"Your previous reply was not valid: {problem}. "
                                                              "Reply with one JSON object matching the schema, nothing else.")
                req = req.model_copy(update={"messages": (*request.messages, reminder)})
            reply = self.chat(req)
            try:
                return output.model_validate(extract_json(reply.text)), reply
            except (ValueError, ValidationError) as exc:
                problem = str(exc).splitlines()[0][:300]
        raise ProviderError(self.name, "malformed", f"no valid {output.__name__} after {max_attempts} replies: {problem}")


class Embedder(abc.ABC):
    """Text → L2-normalised float32 vectors. ``model_id`` names backend and model: thresholds and
    caches are keyed by it, since similarity scales differ between models."""

    model_id: str = ""
    dim: int = 0

    @abc.abstractmethod
    def embed(self, texts: Sequence[str]) -> Any:
        """A numpy array of shape (len(texts), dim), dtype float32, rows of unit length."""


_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)


def extract_json(text: str) -> Any:
    """The JSON object in a reply: the whole text, a fenced block, or the outermost {...}."""
    text = text.strip()
    candidates = [text]
    candidates += [m.group(1).strip() for m in _FENCE.finditer(text)]
    if "{" in text and "}" in text:
        candidates.append(text[text.index("{"): text.rindex("}") + 1])
    for candidate in candidates:
        try:
            return json.loads(candidate)
        except ValueError:
            continue
    raise ValueError("reply holds no JSON object")
