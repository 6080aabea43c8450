"""Bounded retries with exponential backoff and jitter, shared by every SDK-backed provider.

The SDKs' own retries are switched off (``max_retries=0``) so that this loop is the only one: the
number of upstream requests is then exactly ``retries + 1`` at most, which the tests count, and the
error that escapes is always a :class:`ProviderError` carrying a kind callers can act on.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, TypeVar

from pytest_skilleval.providers.base import ErrorKind, ProviderError

R = TypeVar("R")


@dataclass(frozen=True)
class RetryPolicy:
    retries: int = 4  # retries after the first request, so at most ``retries + 1`` requests
    base_delay: float = 1.0
    max_delay: float = 30.0
    # A server asking us to wait longer than this is treated as "not now": fail instead of stalling a run.
    max_retry_after: float = 120.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False, repr=False)

    def delay(self, n: int, retry_after: float | None) -> float:
        """Wait before retry ``n`` (0-based): equal jitter, so workers hitting one limit spread out."""
        backoff = min(self.max_delay, self.base_delay * (2 ** n))
        wait = backoff / 2 + random.uniform(0, backoff / 2)
        return max(wait, retry_after) if retry_after is not None else wait


@dataclass(frozen=True)
class Failure:
    kind: ErrorKind
    retryable: bool
    detail: str
    retry_after: float | None = None


class MalformedReply(ValueError):
    """The HTTP exchange worked but the body is not a usable reply (retried like a transient fault)."""


def parse_retry_after(headers: Mapping[str, str] | Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` (OpenAI) or ``retry-after`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def classify_status(status: int, message: str, headers: Any, body: Any) -> Failure:
    detail = f"HTTP {status}: {message[:300]}"
    if status == 429:
        # openai hands over the inner "error" object as the body, anthropic the whole body: accept both.
        inner = body.get("error", body) if isinstance(body, dict) else None
        code = inner.get("code") if isinstance(inner, dict) else None
        if code == "insufficient_quota":  # an empty account, not a rate: waiting will not help
            return Failure("budget", False, detail)
        return Failure("rate_limit", True, detail, parse_retry_after(headers))
    if status == 408:
        return Failure("timeout", True, detail)
    if status == 409 or status >= 500:  # 409: lock contention upstream; 5xx incl. Anthropic's 529 overloaded
        return Failure("server", True, detail, parse_retry_after(headers))
    if status in (401, 403):
        return Failure("auth", False, detail)
    return Failure("config", False, detail)  # 400/404/413/422: the request or model name is wrong


# The HTTP stacks under the SDKs. Their errors normally arrive wrapped as the SDK's APIConnectionError,
# but under the whole suite with xdist the openai SDK was seen letting them through unwrapped.
_TRANSPORT_PACKAGES = frozenset({"httpx", "httpcore", "httpx2", "httpcore2", "h11", "h2", "anyio"})


def transport_failure(exc: Exception) -> Failure | None:
    """A network failure however it arrives: retried, then an ERROR naming it, never a raw traceback."""
    package = type(exc).__module__.split(".")[0]
    if package not in _TRANSPORT_PACKAGES and not isinstance(exc, ConnectionError | TimeoutError):
        return None
    name = type(exc).__name__
    if "Timeout" in name or isinstance(exc, TimeoutError):
        return Failure("timeout", True, f"request timed out ({name})")
    return Failure("connection", True, f"connection failed: {name}")


def sdk_classifier(sdk: ModuleType) -> Callable[[Exception], Failure | None]:
    """A classifier for an SDK generated the way both ``openai`` and ``anthropic`` are (same error names)."""

    def classify(exc: Exception) -> Failure | None:
        if isinstance(exc, sdk.APITimeoutError):
            return Failure("timeout", True, "request timed out")
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            return Failure("connection", True, f"connection failed: {type(cause).__name__ if cause else exc}")
        if isinstance(exc, sdk.APIStatusError):
            return classify_status(exc.status_code, str(exc.message), exc.response.headers, exc.body)
        if isinstance(exc, sdk.APIResponseValidationError | ValueError):  # invalid JSON body, wrong shape
            return Failure("malformed", True, f"unusable reply body: {str(exc)[:200]}")
        return transport_failure(exc)  # None: a programming error, which surfaces with its traceback

    return classify


def call_with_retries(fn: Callable[[], R], classify: Callable[[Exception], Failure | None], provider: str,
                      policy: RetryPolicy) -> R:
    for n in range(policy.retries + 1):
        try:
            return fn()
        except Exception as exc:
            failure = classify(exc)
            if failure is None:
                raise
            tries = f"after {n + 1} request{'s' if n else ''}"
            if not failure.retryable or n == policy.retries:
                raise ProviderError(provider, failure.kind, f"{failure.detail} ({tries})") from exc
            if failure.retry_after is not None and failure.retry_after > policy.max_retry_after:
                raise ProviderError(provider, failure.kind, f"{failure.detail}; server asks to wait "
                                                            f"{failure.retry_after:.0f}s ({tries})") from exc
            policy.sleep(policy.delay(n, failure.retry_after))
    raise AssertionError("unreachable")  # the loop always returns or raises
