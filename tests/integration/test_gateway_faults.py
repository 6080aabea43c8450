"""Upstream faults in proxy mode: the client gets a proper typed error, the gateway logs it, nothing hangs.

Faults come from a real local server that misbehaves (see ``fake_upstream``): it times out,
answers 429 and 500, sends broken JSON, and drops or stalls a stream half-way.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Trial, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream

GATEWAY_TIMEOUT = 0.5  # seconds; the fake upstream's slow faults take longer
SCRIPT = Script.from_data({"steps": [{"text": "a reply long enough to be cut in the middle, with several events"}]})


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(SCRIPT, delay_s=3 * GATEWAY_TIMEOUT) as server:
        yield server


@pytest.fixture
def trial(tmp_path: Path, upstream: FakeUpstream) -> Iterator[Trial]:
    ups = {f: Upstream(f, upstream.url, f"real-{f}-key-abcdefgh") for f in ("anthropic", "openai", "gemini")}
    config = GatewayConfig(mode="proxy", upstreams=ups, log_dir=tmp_path / "logs", timeout_s=GATEWAY_TIMEOUT)
    with Gateway(config) as gw, gw.trial("faults") as live:
        yield live


def call(trial: Trial, api: str, stream: bool) -> Any:
    """One call through the real SDK; retries off so each fault is seen exactly once."""
    if api == "anthropic":
        client = anthropic.Anthropic(base_url=trial.url, api_key=trial.token.secret, max_retries=0, timeout=10)
        args = {"model": "claude-sonnet-4-6", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
        if stream:
            with client.messages.stream(**args) as events:
                return events.get_final_message()
        return client.messages.create(**args)
    client = openai.OpenAI(base_url=trial.openai_url, api_key=trial.token.secret, max_retries=0, timeout=10)
    if api == "chat":
        args = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
        return list(client.chat.completions.create(**args, stream=True)) if stream else client.chat.completions.create(**args)
    if stream:
        with client.responses.stream(model="gpt-5", input="hi") as events:
            return events.get_final_response()
    return client.responses.create(model="gpt-5", input="hi")


def expect_error(trial: Trial, api: str, stream: bool, error: type[BaseException], logged: str, match: str) -> None:
    started = time.monotonic()
    with pytest.raises(error) as raised:
        call(trial, api, stream)
    assert time.monotonic() - started < 5 * GATEWAY_TIMEOUT + 2, "the fault must not hang the client"
    assert match in str(raised.value)
    trial.wait_idle()
    entry = trial.entries[-1]
    assert entry["error"] == logged, entry
    assert entry["detail"]


APIS = ["anthropic", "chat", "responses"]


def status_error(api: str, status: int) -> type[BaseException]:
    sdk = anthropic if api == "anthropic" else openai
    return {429: sdk.RateLimitError, 500: sdk.InternalServerError, 502: sdk.InternalServerError, 504: sdk.InternalServerError}[status]


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("api", APIS)
def test_upstream_timeout_is_a_504(trial: Trial, upstream: FakeUpstream, api: str, stream: bool) -> None:
    upstream.set_fault("timeout")
    expect_error(trial, api, stream, status_error(api, 504), "upstream_timeout", "did not answer within 0.5s")
    assert trial.entries[-1]["status"] == 504


@pytest.mark.parametrize("status", [429, 500])
@pytest.mark.parametrize("api", APIS)
def test_upstream_error_status_passes_through(trial: Trial, upstream: FakeUpstream, api: str, status: int) -> None:
    upstream.set_fault(str(status))
    expect_error(trial, api, False, status_error(api, status), f"upstream_{status}", f"fake upstream {status}")
    assert trial.entries[-1]["status"] == status


def test_retry_after_reaches_the_client(trial: Trial, upstream: FakeUpstream) -> None:
    upstream.set_fault("429")
    response = httpx.post(trial.url + "/v1/messages", headers={"x-api-key": trial.token.secret},
                          json={"model": "claude-sonnet-4-6", "max_tokens": 8, "messages": []})
    assert response.status_code == 429 and response.headers["retry-after"] == "0"


@pytest.mark.parametrize("api", APIS)
def test_malformed_json_is_a_502(trial: Trial, upstream: FakeUpstream, api: str) -> None:
    upstream.set_fault("malformed")
    expect_error(trial, api, False, status_error(api, 502), "upstream_malformed_json", "not JSON")


@pytest.mark.parametrize("api", APIS)
def test_body_dropped_midway_is_a_502(trial: Trial, upstream: FakeUpstream, api: str) -> None:
    upstream.set_fault("drop")
    expect_error(trial, api, False, status_error(api, 502), "upstream_dropped", "closed the connection mid-response")


@pytest.mark.parametrize("fault", ["drop", "stall"])
@pytest.mark.parametrize("api", APIS)
def test_stream_cut_midway_raises_in_the_client(trial: Trial, upstream: FakeUpstream, api: str, fault: str) -> None:
    upstream.set_fault(fault)
    error = anthropic.APIStatusError if api == "anthropic" else openai.APIError
    why = "dropped the stream" if fault == "drop" else "stalled"
    expect_error(trial, api, True, error, "upstream_stream_broken", why)
    assert trial.entries[-1]["status"] == 200  # headers had gone out: the error travels in the stream


def test_gemini_stream_cut_midway_ends_with_an_error_event(trial: Trial, upstream: FakeUpstream) -> None:
    upstream.set_fault("stall")
    body = {"contents": [{"role": "user", "parts": [{"text": "hi"}]}]}
    with httpx.stream("POST", trial.url + "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse",
                      headers={"x-goog-api-key": trial.token.secret}, json=body, timeout=10) as response:
        text = response.read().decode()
    assert '"error"' in text.splitlines()[-2] and "stalled" in text


def test_recovers_after_faults(trial: Trial, upstream: FakeUpstream) -> None:
    upstream.set_fault("500")
    with pytest.raises(openai.InternalServerError):
        call(trial, "chat", False)
    upstream.set_fault(None)
    assert call(trial, "chat", False).choices[0].message.content.startswith("a reply")
    trial.wait_idle()
    assert [e["error"] for e in trial.entries] == ["upstream_500", None]


def test_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    config = GatewayConfig(mode="proxy", upstreams={"openai": Upstream("openai", "http://127.0.0.1:9", "k" * 20)}, timeout_s=2)
    with Gateway(config) as gw, gw.trial("down") as live:
        expect_error(live, "chat", False, openai.InternalServerError, "upstream_unreachable", "failed before answering")


def test_missing_upstream_key_names_the_variable(tmp_path: Path) -> None:
    with Gateway(GatewayConfig(mode="proxy", upstreams={})) as gw, gw.trial("no-key") as live:
        expect_error(live, "anthropic", False, anthropic.InternalServerError, "no_upstream_key", "ANTHROPIC_API_KEY")


def test_upstream_connections_are_reused(trial: Trial, upstream: FakeUpstream) -> None:
    for stream in (False, True, False):
        call(trial, "chat", stream)
    assert len({r.client_port for r in upstream.requests}) == 1  # one keep-alive connection for all three


def test_a_connection_closed_while_idle_is_replaced_transparently(trial: Trial, upstream: FakeUpstream) -> None:
    upstream.close_after_each = True  # the pooled connection is dead by the time it is reused
    answers = [call(trial, "anthropic", False).content[0].text for _ in range(3)]
    assert answers == ["a reply long enough to be cut in the middle, with several events"] * 3
    assert len(upstream.requests) == 3  # each call reached upstream exactly once: no duplicate model call
    trial.wait_idle()
    assert [e["error"] for e in trial.entries] == [None] * 3
