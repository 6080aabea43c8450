"""Outages, detected fast: consecutive upstream failures end a trial, and trials ended that way open a
circuit breaker that stops new trials from starting against the same upstream.

Without this an agent CLI meets a provider outage with its own back-off (Claude Code retries a 500
for minutes), so every trial of a long run lasts until its time limit and then scores a zero. Here:

- :class:`FailureCounter` (one per trial) counts upstream failures in a row — an HTTP error passed
  through, a timeout, an unreachable host, a broken or stalled stream; a good answer resets it. At
  ``limit`` it reports the outage once; the gateway then ends the trial (its ``ended`` event stops the
  agent's sandbox, and further requests of the trial are refused without reaching the upstream).
- :class:`CircuitBreaker` (one per gateway, i.e. per xdist worker) counts, per upstream family,
  trials in a row that were ended by an outage. At ``threshold`` it opens: trials against that
  family are not started (the runner records them as infrastructure ERRORs that say why) until
  ``cooldown_s`` has passed; then one trial is let through as a probe, and a trial that got an
  answer closes the breaker again.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

UPSTREAM_ERROR_PREFIX = "upstream_"
CIRCUIT_OPEN = "circuit breaker open"  # how a refusal starts (reports count trials not started by it)


def is_upstream_failure(entry: Mapping[str, Any]) -> bool:
    """A logged exchange whose upstream failed: an HTTP error relayed, a timeout, an unreachable host,
    a malformed or broken answer (error codes ``upstream_*``), or no key to reach it at all."""
    error = str(entry.get("error") or "")
    return error.startswith(UPSTREAM_ERROR_PREFIX) or error == "no_upstream_key"


def describe(entry: Mapping[str, Any]) -> str:
    detail = " ".join(str(entry.get("detail") or "").split())
    return f"HTTP {entry.get('status')} {entry.get('error')}" + (f" ({detail[:160]})" if detail else "")


class FailureCounter:
    """Upstream failures in a row within one trial; ``limit`` 0 never reports an outage."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.in_a_row = 0
        self.total = 0
        self.outage: str | None = None  # set once, when the limit is reached

    def observe(self, entry: Mapping[str, Any]) -> bool:
        """Count one logged exchange; True exactly when this one makes it an outage."""
        if is_upstream_failure(entry):
            self.in_a_row += 1
            self.total += 1
            if self.limit and self.in_a_row >= self.limit and self.outage is None:
                self.outage = f"{self.in_a_row} upstream failures in a row, the last: {describe(entry)}"
                return True
        elif not entry.get("error") and entry.get("status") == 200:
            self.in_a_row = 0
        return False


@dataclass
class _Family:
    outages_in_a_row: int = 0
    opened_at: float | None = None
    last_outage: str = ""
    probing: bool = False


@dataclass
class CircuitBreaker:
    """Per upstream family: open after ``threshold`` trials in a row ended by an outage (0: never)."""

    threshold: int = 2
    cooldown_s: float = 60.0
    clock: Any = field(default=time.monotonic, repr=False)
    _families: dict[str, _Family] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)
    #: What happened, for reports: (family, "opened" | "closed" | "probe", message).
    events: list[tuple[str, str, str]] = field(default_factory=list)

    def trial_ended(self, families: Iterable[str], outage: str | None, answered: bool) -> None:
        """Account one finished trial: ended by ``outage`` (a reason) or not; ``answered``: it got at least one good answer."""
        with self._lock:
            for family in set(families):
                state = self._families.setdefault(family, _Family())
                state.probing = False
                if outage:
                    state.outages_in_a_row += 1
                    state.last_outage = outage
                    if self.threshold and state.outages_in_a_row >= self.threshold:
                        if state.opened_at is None:
                            self.events.append((family, "opened", f"{state.outages_in_a_row} trials in a row ended by an outage; "
                                                                  f"the last: {outage}"))
                        state.opened_at = self.clock()  # (re)open: a failed probe restarts the cool-down
                elif answered:
                    if state.opened_at is not None:
                        self.events.append((family, "closed", "a trial got answers from the upstream again"))
                    state.outages_in_a_row, state.opened_at = 0, None

    def refusal(self, families: Iterable[str]) -> str | None:
        """Why a trial against ``families`` must not start now, or None (a due probe is let through once)."""
        with self._lock:
            for family in sorted(set(families)):
                state = self._families.get(family)
                if state is None or state.opened_at is None:
                    continue
                waited = self.clock() - state.opened_at
                if waited >= self.cooldown_s and not state.probing:
                    state.probing = True
                    self.events.append((family, "probe", f"one trial let through after {waited:.0f} s"))
                    continue
                return (f"{CIRCUIT_OPEN}: the {family} upstream is down ({state.outages_in_a_row} trials in a row ended by an "
                        f"outage; the last: {state.last_outage}); not started, next probe in {max(0.0, self.cooldown_s - waited):.0f} s")
        return None

    def is_open(self, family: str) -> bool:
        with self._lock:
            state = self._families.get(family)
            return state is not None and state.opened_at is not None
