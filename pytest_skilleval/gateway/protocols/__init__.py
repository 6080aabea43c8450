"""The four wire protocols the gateway speaks, and routing a URL path to one of them."""

from __future__ import annotations

from pytest_skilleval.gateway.protocols.anthropic import AnthropicMessages
from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, ToolCall, Usage, WireProtocol
from pytest_skilleval.gateway.protocols.gemini import Gemini
from pytest_skilleval.gateway.protocols.openai_chat import OpenAIChat
from pytest_skilleval.gateway.protocols.openai_responses import OpenAIResponses

PROTOCOLS: tuple[WireProtocol, ...] = (AnthropicMessages(), OpenAIChat(), OpenAIResponses(), Gemini())
FAMILIES = ("anthropic", "openai", "gemini")


def for_path(path: str) -> WireProtocol | None:
    """The protocol serving a URL path; None for paths that are not model calls."""
    return next((p for p in PROTOCOLS if p.matches(path)), None)


__all__ = ["FAMILIES", "PROTOCOLS", "NeutralRequest", "Reply", "ToolCall", "Usage", "WireProtocol", "for_path"]
