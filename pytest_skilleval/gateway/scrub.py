"""Remove credentials from anything the gateway writes down (request logs, cassettes, samples).

Known secrets (the real keys, issued tokens) are replaced literally; well-known key shapes are
caught by pattern too, in case an agent echoes a key it found somewhere we did not know about.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

REDACTED = "<REDACTED>"
# One pattern per literal prefix: `re` jumps straight to a literal prefix, while an alternation or
# a look-behind is tried at every position (measured on a 120 KB agent prompt: 2.0 ms → 0.4 ms).
KEY_PATTERNS = tuple((re.compile(p), r) for p, r in (
    (r"sk-(?:skilleval-[A-Za-z0-9_-]{8,}"  # our own scoped tokens
     r"|ant-[A-Za-z0-9_-]{16,}"  # Anthropic
     r"|(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{32,})", REDACTED),  # OpenAI
    (r"AIza[0-9A-Za-z_-]{35}", REDACTED),  # Google
    (r"nvapi-[A-Za-z0-9_-]{32,}", REDACTED),  # NVIDIA Build
    (r"Bearer [A-Za-z0-9._~+/-]{20,}=*", f"Bearer {REDACTED}"),
    (r"bearer [A-Za-z0-9._~+/-]{20,}=*", f"bearer {REDACTED}"),
))


class Scrubber:
    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # Longest first, so a key that contains another known secret is removed whole.
        self._secrets = sorted({s for s in secrets if s and len(s) >= 8}, key=len, reverse=True)

    def text(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        for pattern, replacement in KEY_PATTERNS:
            text = pattern.sub(replacement, text)
        return text

    def value(self, value: Any) -> Any:
        """A copy of a JSON value with every string scrubbed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.value(v) for v in value]
        if isinstance(value, dict):
            return {k: self.value(v) for k, v in value.items()}
        return value
