"""A finding's :class:`Severity` and a check's :class:`Status`: plain enums, no pydantic.

``config.py`` and every subsystem's options read a severity at start-up, which every pytest run in an
environment with the plugin installed pays for; the pydantic models that carry these values
(``results.py``, which re-exports both) are imported only by the runs that produce results.
"""

from __future__ import annotations

import enum


class Severity(str, enum.Enum):
    CRITICAL = "CRITICAL"
    HIGH = "HIGH"
    MEDIUM = "MEDIUM"
    LOW = "LOW"
    INFO = "INFO"

    @property
    def rank(self) -> int:
        """Higher is worse: CRITICAL=4 … INFO=0."""
        return _SEVERITY_RANK[self]

    def at_least(self, other: Severity) -> bool:
        return self.rank >= other.rank

    @classmethod
    def parse(cls, value: str) -> Severity:
        try:
            return cls(value.strip().upper())
        except ValueError:
            names = ", ".join(s.value.lower() for s in cls)
            raise ValueError(f"unknown severity {value!r} (expected one of: {names})") from None


_SEVERITY_RANK = {
    Severity.CRITICAL: 4,
    Severity.HIGH: 3,
    Severity.MEDIUM: 2,
    Severity.LOW: 1,
    Severity.INFO: 0,
}


#: Each severity's key in counts, worst first (an enum's ``value`` is a property: looked up per call it cost more than the count).
_SEVERITY_KEY = {s: s.value.lower() for s in Severity}


class Status(str, enum.Enum):
    """Final status of a check after the gate has looked at it."""

    PASSED = "PASSED"
    FAILED = "FAILED"
    INCOMPLETE = "INCOMPLETE"  # required evidence is missing (scanner absent, crashed, bad output)
    SKIPPED = "SKIPPED"  # the check does not apply to this skill
    ERROR = "ERROR"  # the check itself broke, or a provider call failed after retries
