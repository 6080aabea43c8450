"""AnthropicChat: the real ``anthropic`` SDK against a scripted server on 127.0.0.1."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from conftest import loopback_only
from pydantic import BaseModel

from pytest_skilleval.gateway.fake_upstream import Act, FakeUpstream
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.providers import anthropic_chat
from pytest_skilleval.providers.anthropic_chat import AnthropicChat
from pytest_skilleval.providers.base import ChatMessage, ChatRequest, ProviderError
from pytest_skilleval.providers.retry import RetryPolicy

#: what the fake vendor answers when a test pushes no text of its own
REPLIES = Script.from_data({"steps": [{"text": "hello from upstream"}], "usage": {"input": 13, "output": 5}})

MESSAGES = "/v1/messages"


class Scores(BaseModel):
    correctness: float
    notes: str


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    loopback_only(monkeypatch)


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(REPLIES) as server:
        yield server


@pytest.fixture
def sleeps() -> list[float]:
    return []


def make_chat(upstream: FakeUpstream, sleeps: list[float], *, retries: int = 2, timeout: float = 5.0) -> AnthropicChat:
    return AnthropicChat("claude-test", api_key="sk-ant-test", base_url=upstream.url, timeout=timeout,
                         retry=RetryPolicy(retries=retries, base_delay=0.01, max_delay=0.02, sleep=sleeps.append))


def ask(**kw: object) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage(role="system", content="you judge"), ChatMessage(role="user", content="rate this")), **kw)  # type: ignore[arg-type]


def test_system_text_is_a_parameter_not_a_message(upstream: FakeUpstream, sleeps: list[float]) -> None:
    reply = make_chat(upstream, sleeps).chat(ask(max_tokens=99))
    assert (reply.text, reply.provider, reply.input_tokens, reply.output_tokens) == ("hello from upstream", "anthropic", 13, 5)
    body = upstream.requests[0].body
    assert body["system"] == "you judge" and body["messages"] == [{"role": "user", "content": "rate this"}]
    assert body["max_tokens"] == 99 and "tools" not in body
    headers = upstream.requests[0].headers
    assert "sk-ant-test" in (headers.get("x-api-key", ""), headers.get("authorization", "").removeprefix("Bearer "))


def test_structured_output_is_a_forced_tool_call(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text='{"correctness": 0.75, "notes": "fine"}'))
    scores, reply = make_chat(upstream, sleeps).structured(ask(schema_name="judge scores"), Scores)
    assert scores == Scores(correctness=0.75, notes="fine")
    body = upstream.requests[0].body
    assert body["tool_choice"] == {"type": "tool", "name": "judge_scores"}
    assert body["tools"][0]["name"] == "judge_scores" and body["tools"][0]["input_schema"] == Scores.model_json_schema()


def test_a_tool_input_off_schema_is_retried_then_malformed(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text='{"correctness": "great"}'), Act(text='{"notes": "n"}'))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps).structured(ask(), Scores, max_attempts=2)
    assert info.value.kind == "malformed" and upstream.count(MESSAGES) == 2


def test_a_non_object_schema_falls_back_to_an_instruction(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text="[1, 2]"))
    reply = make_chat(upstream, sleeps).chat(ask(json_schema={"type": "array", "items": {"type": "integer"}}))
    body = upstream.requests[0].body
    assert reply.text == "[1, 2]" and "tools" not in body and "JSON schema" in body["system"]


@pytest.mark.parametrize(("act", "kind"), [
    (Act("status", status=500), "server"),
    (Act("status", status=529), "server"),
    (Act("status", status=429, headers=(("retry-after", "0"),)), "rate_limit"),
    (Act("malformed"), "malformed"),
    (Act("drop"), "connection"),
])
def test_transient_faults_are_retried_a_bounded_number_of_times(upstream: FakeUpstream, sleeps: list[float], act: Act, kind: str) -> None:
    upstream.push(*[act] * 10)
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps, retries=3).chat(ask())
    assert info.value.kind == kind and info.value.provider == "anthropic"
    assert upstream.count(MESSAGES) == 4 and len(sleeps) == 3


def test_timeout_then_success(upstream: FakeUpstream, sleeps: list[float]) -> None:
    # The stalled reply outlasts the client's timeout by far; the good reply after it has a generous 2 s,
    # which a loaded machine still meets (a 0.3 s bound did not always).
    upstream.push(Act("timeout", delay=8.0))
    assert make_chat(upstream, sleeps, timeout=2.0).chat(ask()).text == "hello from upstream"
    assert upstream.count(MESSAGES) == 2


def test_retry_after_is_honoured(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("status", status=429, headers=(("Retry-After", "4"),)))
    make_chat(upstream, sleeps).chat(ask())
    assert sleeps[0] >= 4.0 and upstream.count(MESSAGES) == 2


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (403, "auth"), (400, "config"), (404, "config")])
def test_auth_and_config_errors_are_not_retried(upstream: FakeUpstream, sleeps: list[float], status: int, kind: str) -> None:
    upstream.push(Act("status", status=status))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps).chat(ask())
    assert info.value.kind == kind and upstream.count(MESSAGES) == 1 and not sleeps


def test_bedrock_without_its_extra_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(anthropic_chat, "bedrock_available", lambda: False)
    with pytest.raises(ProviderError) as info:
        AnthropicChat.bedrock("us.anthropic.claude-opus-5", region="us-west-2")
    assert info.value.kind == "config" and "anthropic[bedrock]" in info.value.detail


def test_bedrock_uses_the_sdk_bedrock_client_when_available(monkeypatch: pytest.MonkeyPatch) -> None:
    import anthropic

    monkeypatch.setattr(anthropic_chat, "bedrock_available", lambda: True)
    chat = AnthropicChat.bedrock("us.anthropic.claude-opus-5", region="eu-west-1", api_key="bedrock-key")
    assert isinstance(chat.client, anthropic.AnthropicBedrock) and chat.client.max_retries == 0
    assert (chat.name, chat.model, chat.base_url) == ("bedrock", "us.anthropic.claude-opus-5", "bedrock:eu-west-1")
