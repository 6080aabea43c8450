"""Chat through the official ``anthropic`` SDK: the Anthropic API, or Amazon Bedrock.

Structured output is a *forced tool call*: the schema becomes the input schema of one tool and
``tool_choice`` names it, so the model must answer with arguments shaped by the schema. This works
the same on the Anthropic API and on Bedrock (a system instruction would also work, but is only a
request). The tool's input is returned as the reply text (JSON) and validated by
:meth:`ChatProvider.structured`. A schema whose top level is not an object cannot be a tool input;
it falls back to a system instruction.
"""

from __future__ import annotations

import importlib.util
import json
from typing import Any

from pytest_skilleval.providers.base import ChatProvider, ChatReply, ChatRequest, ProviderError
from pytest_skilleval.providers.openai_chat import schema_instruction, schema_name
from pytest_skilleval.providers.retry import MalformedReply, RetryPolicy, call_with_retries, sdk_classifier


def import_anthropic() -> Any:
    try:
        import anthropic
    except ImportError:  # pragma: no cover - a declared dependency; only a broken install gets here
        raise ProviderError("anthropic", "config", "the 'anthropic' package is not installed: pip install anthropic") from None
    return anthropic


def bedrock_available() -> bool:
    """The SDK's Bedrock client signs requests with botocore, which only its ``bedrock`` extra installs."""
    return importlib.util.find_spec("botocore") is not None and importlib.util.find_spec("boto3") is not None


class AnthropicChat(ChatProvider):
    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None, name: str = "anthropic",
                 timeout: float = 120.0, retry: RetryPolicy | None = None, client: Any = None) -> None:
        if not model:
            raise ProviderError(name, "config", "no model configured (set SKILLEVAL_MODEL or --skilleval-model)")
        anthropic = import_anthropic()
        self.name, self.model, self.base_url = name, model, base_url or ""
        self.retry = retry or RetryPolicy()
        # max_retries=0: our loop owns the retries, so their number is bounded, counted and testable.
        self.client = client or anthropic.Anthropic(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        self._classify = sdk_classifier(anthropic)

    @classmethod
    def bedrock(cls, model: str, *, region: str, api_key: str | None = None, base_url: str | None = None,
                timeout: float = 120.0, retry: RetryPolicy | None = None) -> AnthropicChat:
        """Bedrock through ``anthropic.AnthropicBedrock``; credentials come from the usual AWS chain
        (or ``api_key``, a Bedrock API key sent as a bearer token)."""
        if not bedrock_available():
            raise ProviderError("bedrock", "config", "the bedrock provider needs the SDK's Bedrock extra: "
                                                     "pip install 'anthropic[bedrock]' (or pytest-skilleval[bedrock])")
        anthropic = import_anthropic()
        client = anthropic.AnthropicBedrock(aws_region=region, api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        return cls(model, name="bedrock", base_url=base_url or f"bedrock:{region}", retry=retry, client=client)

    def _params(self, request: ChatRequest) -> dict[str, Any]:
        # The Messages API takes system text as a parameter, not as a message.
        system = [m.content for m in request.messages if m.role == "system"]
        messages = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
        # No temperature: the current Messages API (and SDK) has no sampling parameters. Repeatability
        # of a judgement comes from the cache, keyed by the attempt index, not from temperature 0.
        params: dict[str, Any] = {"model": request.model or self.model, "max_tokens": request.max_tokens, "messages": messages}
        schema = request.json_schema
        if schema is not None and schema.get("type", "object") == "object":
            tool = schema_name(request.schema_name)
            params["tools"] = [{"name": tool, "description": "Record your answer as this tool's input.", "input_schema": schema}]
            params["tool_choice"] = {"type": "tool", "name": tool}
        elif schema is not None:
            system.append(schema_instruction(schema))
        if system:
            params["system"] = "\n\n".join(system)
        return params

    def chat(self, request: ChatRequest) -> ChatReply:
        params = self._params(request)
        forced = params.get("tool_choice", {}).get("name")

        def once() -> ChatReply:
            message = self.client.messages.create(**params)
            blocks = getattr(message, "content", None)
            if blocks is None:
                raise MalformedReply("reply has no content")
            text = ""
            tool_inputs = [b.input for b in blocks if getattr(b, "type", "") == "tool_use" and b.name == forced]
            if forced and tool_inputs:
                text = json.dumps(tool_inputs[0])
            else:  # no forced tool, or the model ignored it: hand the text to the validator
                text = "".join(getattr(b, "text", "") for b in blocks if getattr(b, "type", "") == "text")
            usage = getattr(message, "usage", None)
            return ChatReply(text=text, model=getattr(message, "model", None) or params["model"], provider=self.name,
                             input_tokens=getattr(usage, "input_tokens", 0) or 0, output_tokens=getattr(usage, "output_tokens", 0) or 0)

        return call_with_retries(once, self._classify, self.name, self.retry)
