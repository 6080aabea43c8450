"""The failure classifier: every transport failure is retried and then an ERROR, never a raw traceback.

Under the whole suite with xdist, the openai SDK was seen letting ``httpcore2`` errors through
unwrapped (a dropped connection, a read timeout): they must still be classified as network failures."""

from __future__ import annotations

import httpcore2
import httpx2
import openai
import pytest

from pytest_skilleval.providers.retry import sdk_classifier

CLASSIFY = sdk_classifier(openai)


@pytest.mark.parametrize(("exc", "kind"), [
    (httpcore2.RemoteProtocolError("peer closed connection without sending complete message body"), "connection"),
    (httpcore2.ReadTimeout("timed out"), "timeout"),
    (httpx2.ReadTimeout("timed out"), "timeout"),
    (httpx2.ConnectError("refused"), "connection"),
    (ConnectionResetError(104, "Connection reset by peer"), "connection"),
])
def test_unwrapped_transport_errors_are_retryable_network_failures(exc: Exception, kind: str) -> None:
    failure = CLASSIFY(exc)
    assert failure is not None and failure.kind == kind and failure.retryable


def test_a_programming_error_is_not_classified() -> None:
    assert CLASSIFY(KeyError("x")) is None
