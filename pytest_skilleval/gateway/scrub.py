"""Remove credentials from anything the gateway writes down (request logs, cassettes, samples).

Known secrets (the real keys, issued tokens) are replaced literally; well-known key shapes are
caught by pattern too, in case an agent echoes a key it found somewhere we did not know about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "<REDACTED>"
KEY_PATTERNS = re.compile(
    r"sk-skilleval-[A-Za-z0-9_-]{8,}"  # our own scoped tokens
    r"|sk-ant-[A-Za-z0-9_-]{16,}"  # Anthropic
    r"|sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,}"  # OpenAI
    r"|AIza[0-9A-Za-z_-]{35}"  # Google
    r"|nvapi-[A-Za-z0-9_-]{32,}"  # NVIDIA Build
    r"|(?<=[Bb]earer )[A-Za-z0-9._~+/-]{20,}=*"
)


class Scrubber:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a key that contains another known secret is removed whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return KEY_PATTERNS.sub(REDACTED, text)

    def value(self, value: Any) -> Any:
        """A copy of a JSON value with every string scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value
