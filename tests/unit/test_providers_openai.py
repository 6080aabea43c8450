"""OpenAIChat and OpenAIEmbedder: the real ``openai`` SDK against a scripted server on 127.0.0.1."""

from __future__ import annotations

import json
from collections.abc import Iterator

import numpy as np
import pytest
from conftest import loopback_only
from pydantic import BaseModel

from pytest_skilleval.gateway.fake_upstream import Act, FakeUpstream, fake_vector
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.providers.base import ChatMessage, ChatRequest, ProviderError
from pytest_skilleval.providers.openai_chat import OpenAIChat
from pytest_skilleval.providers.openai_embeddings import OpenAIEmbedder
from pytest_skilleval.providers.retry import RetryPolicy

#: what the fake vendor answers when a test pushes no text of its own
REPLIES = Script.from_data({"steps": [{"text": "hello from upstream"}], "usage": {"input": 11, "output": 7}})

CHAT = "/v1/chat/completions"


class Verdict(BaseModel):
    label: str
    confidence: float


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


def make_chat(upstream: FakeUpstream, sleeps: list[float], *, retries: int = 2, timeout: float = 5.0, name: str = "openai",
              model: str = "gpt-test") -> OpenAIChat:
    return OpenAIChat(model, api_key="sk-test", base_url=f"{upstream.url}/v1", name=name, timeout=timeout,
                      retry=RetryPolicy(retries=retries, base_delay=0.01, max_delay=0.02, sleep=sleeps.append))


def ask(text: str = "hi", **kw: object) -> ChatRequest:
    return ChatRequest(messages=(ChatMessage(role="system", content="be brief"), ChatMessage(role="user", content=text)), **kw)  # type: ignore[arg-type]


def test_plain_reply_and_usage(upstream: FakeUpstream, sleeps: list[float]) -> None:
    reply = make_chat(upstream, sleeps).chat(ask())
    assert (reply.text, reply.provider, reply.input_tokens, reply.output_tokens, reply.cached) == ("hello from upstream", "openai", 11, 7, False)
    sent = upstream.requests[0]
    assert sent.path == CHAT and sent.headers["authorization"] == "Bearer sk-test"
    assert sent.body["messages"][0] == {"role": "system", "content": "be brief"}
    assert sent.body["max_completion_tokens"] == 1024 and sent.body["temperature"] == 0.0
    assert "response_format" not in sent.body


def test_reasoning_models_get_no_temperature(upstream: FakeUpstream, sleeps: list[float]) -> None:
    make_chat(upstream, sleeps, model="gpt-5.6-sol").chat(ask())
    assert "temperature" not in upstream.requests[0].body and upstream.requests[0].body["max_completion_tokens"] == 1024


def test_structured_sends_json_schema_the_openai_way(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text='{"label": "DUPLICATE", "confidence": 0.9}'))
    verdict, reply = make_chat(upstream, sleeps).structured(ask(schema_name="verdict v1"), Verdict)
    assert verdict == Verdict(label="DUPLICATE", confidence=0.9)
    fmt = upstream.requests[0].body["response_format"]
    assert fmt["type"] == "json_schema" and fmt["json_schema"]["name"] == "verdict_v1"
    assert fmt["json_schema"]["schema"] == Verdict.model_json_schema()
    assert upstream.requests[0].body["messages"][0]["content"] == "be brief"  # no extra instruction for OpenAI itself


def test_compatible_endpoints_also_get_the_schema_in_a_system_message(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text='```json\n{"label": "X", "confidence": 1}\n```'))
    verdict, _ = make_chat(upstream, sleeps, name="nvidia").structured(ask(), Verdict)
    assert verdict.label == "X"
    body = upstream.requests[0].body
    assert body["max_tokens"] == 1024 and "max_completion_tokens" not in body
    assert "JSON schema" in body["messages"][0]["content"] and "response_format" in body


def test_schema_mismatch_is_retried_then_malformed_never_a_zero(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text='{"label": "X"}'), Act(text="no json here"), Act(text='{"confidence": "high"}'))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps).structured(ask(), Verdict, max_attempts=3)
    assert info.value.kind == "malformed" and upstream.count(CHAT) == 3
    reminder = upstream.requests[1].body["messages"][-1]["content"]
    assert "previous reply was not valid" in reminder


def test_schema_mismatch_then_valid_reply_succeeds(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act(text="sorry"), Act(text='{"label": "OK", "confidence": 0.5}'))
    verdict, _ = make_chat(upstream, sleeps).structured(ask(), Verdict)
    assert verdict.label == "OK" and upstream.count(CHAT) == 2


@pytest.mark.parametrize(("act", "kind"), [
    (Act("status", status=500), "server"),
    (Act("status", status=503), "server"),
    (Act("status", status=429), "rate_limit"),
    (Act("malformed"), "malformed"),
    (Act("drop"), "connection"),
])
def test_transient_faults_are_retried_a_bounded_number_of_times(upstream: FakeUpstream, sleeps: list[float], act: Act, kind: str) -> None:
    upstream.push(*[act] * 10)
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps, retries=2).chat(ask())
    assert info.value.kind == kind and "after 3 requests" in info.value.detail
    assert upstream.count(CHAT) == 3 and len(sleeps) == 2  # retries=2: exactly three requests, two waits


@pytest.mark.parametrize("act", [Act("status", status=500), Act("malformed"), Act("drop"), Act("status", status=429)])
def test_a_transient_fault_then_success(upstream: FakeUpstream, sleeps: list[float], act: Act) -> None:
    upstream.push(act)
    assert make_chat(upstream, sleeps).chat(ask()).text == "hello from upstream"
    assert upstream.count(CHAT) == 2


def test_timeout_is_retried_then_reported(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("timeout", delay=3.0), Act("timeout", delay=3.0))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps, retries=1, timeout=1.0).chat(ask())
    assert info.value.kind == "timeout" and upstream.count(CHAT) == 2


def test_retry_after_is_honoured(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("status", status=429, headers=(("Retry-After", "7"),)),
                  Act("status", status=429, headers=(("retry-after-ms", "2500"),)))
    assert make_chat(upstream, sleeps).chat(ask()).text == "hello from upstream"
    assert sleeps[0] >= 7.0 and 2.5 <= sleeps[1] < 7.0 and upstream.count(CHAT) == 3


def test_a_retry_after_beyond_the_limit_fails_at_once(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("status", status=429, headers=(("Retry-After", "3600"),)))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps).chat(ask())
    assert info.value.kind == "rate_limit" and "3600" in info.value.detail and upstream.count(CHAT) == 1 and not sleeps


@pytest.mark.parametrize(("status", "kind"), [(401, "auth"), (403, "auth"), (400, "config"), (404, "config")])
def test_auth_and_config_errors_are_not_retried(upstream: FakeUpstream, sleeps: list[float], status: int, kind: str) -> None:
    upstream.push(Act("status", status=status))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps).chat(ask())
    assert info.value.kind == kind and upstream.count(CHAT) == 1 and not sleeps
    assert "sk-test" not in str(info.value)


def test_insufficient_quota_is_budget_not_a_rate_limit(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("status", status=429, code="insufficient_quota"))
    with pytest.raises(ProviderError) as info:
        make_chat(upstream, sleeps).chat(ask())
    assert info.value.kind == "budget" and upstream.count(CHAT) == 1 and not sleeps


def test_overloaded_529_is_retried(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("status", status=529))
    assert make_chat(upstream, sleeps).chat(ask()).text == "hello from upstream" and upstream.count(CHAT) == 2


def test_missing_model_is_a_config_error() -> None:
    with pytest.raises(ProviderError) as info:
        OpenAIChat("", api_key="k")
    assert info.value.kind == "config"


# -- embeddings -------------------------------------------------------------------------------------


def make_embedder(upstream: FakeUpstream, sleeps: list[float], **kw: object) -> OpenAIEmbedder:
    return OpenAIEmbedder("emb-test", api_key="sk-test", base_url=f"{upstream.url}/v1",
                          retry=RetryPolicy(retries=2, base_delay=0.01, sleep=sleeps.append), **kw)  # type: ignore[arg-type]


def test_embeddings_are_ordered_normalised_float32(upstream: FakeUpstream, sleeps: list[float]) -> None:
    emb = make_embedder(upstream, sleeps)
    out = emb.embed(["alpha", "beta", "gamma"])
    assert out.dtype == np.float32 and out.shape == (3, 8) and emb.dim == 8 and emb.model_id == "openai:emb-test"
    assert np.allclose(np.linalg.norm(out, axis=1), 1.0, atol=1e-6)
    expected = np.asarray(fake_vector("beta"), dtype=np.float32)
    assert np.allclose(out[1], expected / np.linalg.norm(expected), atol=1e-6)
    assert upstream.requests[0].body["encoding_format"] == "float"


def test_embeddings_are_batched(upstream: FakeUpstream, sleeps: list[float]) -> None:
    out = make_embedder(upstream, sleeps, batch_size=2).embed([f"t{i}" for i in range(5)])
    assert out.shape == (5, 8) and upstream.count("/v1/embeddings") == 3
    assert [len(s.body["input"]) for s in upstream.requests] == [2, 2, 1]


def test_embeddings_extra_body_and_empty_input(upstream: FakeUpstream, sleeps: list[float]) -> None:
    emb = make_embedder(upstream, sleeps, extra_body={"input_type": "passage"})
    assert emb.embed([]).shape == (0, 0) and upstream.count() == 0
    emb.embed(["x"])
    assert upstream.requests[0].body["input_type"] == "passage"


def test_embedding_faults_are_retried_then_reported(upstream: FakeUpstream, sleeps: list[float]) -> None:
    upstream.push(Act("status", status=500), Act("drop"), Act("malformed"))
    with pytest.raises(ProviderError) as info:
        make_embedder(upstream, sleeps).embed(["x"])
    assert info.value.kind == "malformed" and upstream.count() == 3


def test_request_bodies_are_json(upstream: FakeUpstream, sleeps: list[float]) -> None:
    make_chat(upstream, sleeps).chat(ask(temperature=0.3, max_tokens=50))
    body = upstream.requests[0].body
    assert json.loads(json.dumps(body))["temperature"] == 0.3 and body["max_completion_tokens"] == 50
