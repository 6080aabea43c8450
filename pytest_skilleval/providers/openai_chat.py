"""Chat through the official ``openai`` SDK: OpenAI, NVIDIA Build, and any OpenAI-compatible server.

Structured output goes the provider way, ``response_format={"type": "json_schema", ...}``; the reply
is still validated by :meth:`ChatProvider.structured`, because compatible servers vary in how well
they honour the schema. For endpoints other than OpenAI's own the schema is also stated in a system
message, which servers that ignore ``response_format`` still follow.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_skilleval.providers.base import ChatProvider, ChatReply, ChatRequest, ProviderError
from pytest_skilleval.providers.retry import MalformedReply, RetryPolicy, call_with_retries, sdk_classifier

NVIDIA_BASE_URL = "https://integrate.api.nvidia.com/v1"
# Reasoning models reject ``temperature`` other than the default and want ``max_completion_tokens``.
_REASONING = re.compile(r"^(o\d|gpt-5)", re.I)
_NAME = re.compile(r"[^a-zA-Z0-9_-]")


def schema_name(name: str) -> str:
    """A name both APIs accept for a schema or a tool: ``^[a-zA-Z0-9_-]{1,64}$``."""
    return _NAME.sub("_", name)[:64] or "result"


def schema_instruction(schema: dict[str, Any]) -> str:
    return ("Reply with exactly one JSON object that matches this JSON schema, and nothing else:\n"
            + json.dumps(schema, sort_keys=True))


def import_openai() -> Any:
    try:
        import openai
    except ImportError:  # pragma: no cover - a declared dependency; only a broken install gets here
        raise ProviderError("openai", "config", "the 'openai' package is not installed: pip install openai") from None
    return openai


class OpenAIChat(ChatProvider):
    """``name`` is the provider as the user chose it (openai, nvidia, openai-compatible): it is part of
    the cache key and of every error message."""

    def __init__(self, model: str, *, api_key: str, base_url: str | None = None, name: str = "openai",
                 timeout: float = 120.0, retry: RetryPolicy | None = None, client: Any = None) -> None:
        if not model:
            raise ProviderError(name, "config", "no model configured (set SKILLEVAL_MODEL or --skilleval-model)")
        openai = import_openai()
        self.name, self.model, self.base_url = name, model, base_url or ""
        self.retry = retry or RetryPolicy()
        # max_retries=0: our loop owns the retries, so their number is bounded, counted and testable.
        self.client = client or openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        self._classify = sdk_classifier(openai)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        model = request.model or self.model
        messages = [{"role": m.role, "content": m.content} for m in request.messages]
        params: dict[str, Any] = {"model": model}
        official = self.name == "openai"
        if official and _REASONING.match(model):
            params["max_completion_tokens"] = request.max_tokens
        elif official:
            params.update(max_completion_tokens=request.max_tokens, temperature=request.temperature)
        else:  # compatible servers (vLLM, NIM, llama.cpp ...) know the older names best
            params.update(max_tokens=request.max_tokens, temperature=request.temperature)
        if request.json_schema is not None:
            params["response_format"] = {"type": "json_schema", "json_schema": {
                "name": schema_name(request.schema_name), "schema": request.json_schema,
                # strict mode demands additionalProperties=false everywhere, which pydantic schemas lack
                "strict": False}}
            if not official:
                messages.insert(0, {"role": "system", "content": schema_instruction(request.json_schema)})
        params["messages"] = messages
        return params

    def chat(self, request: ChatRequest) -> ChatReply:
        params = self._params(request)

        def once() -> ChatReply:
            completion = self.client.chat.completions.create(**params)
            choices = getattr(completion, "choices", None)
            if not choices:
                raise MalformedReply("reply has no choices")
            message = choices[0].message
            if message is None:
                raise MalformedReply("reply has no message")
            usage = getattr(completion, "usage", None)
            return ChatReply(text=message.content or "", model=getattr(completion, "model", None) or params["model"],
                             provider=self.name, input_tokens=getattr(usage, "prompt_tokens", 0) or 0,
                             output_tokens=getattr(usage, "completion_tokens", 0) or 0)

        return call_with_retries(once, self._classify, self.name, self.retry)
