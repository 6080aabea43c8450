"""The real ``openai`` and ``anthropic`` SDKs against the gateway, in scripted, proxy, record and replay mode.

Every client call is a two-turn tool conversation (a tool call, then a final answer after the tool
result), through each API the SDKs offer: Anthropic Messages (plain and streaming), OpenAI Chat
Completions (plain and streaming) and OpenAI Responses (plain and streaming). Proxy and record
forward to a local fake vendor server, never the internet.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

from pytest_skilleval.gateway import Gateway, GatewayConfig, ReplayDivergence, Script, Trial, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream

REAL_KEYS = {"anthropic": "sk-ant-api03-REALKEY-never-leaves-host-0123456789", "openai": "sk-proj-REALKEY0123456789abcdefghijklmnopqrstuv"}
SCRIPT = Script.from_data({"steps": [{"text": "Checking.", "tool": "get_weather", "args": {"city": "Paris"}},
                                     {"text": "FINAL: sunny in Paris"}]})
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


def _anthropic(trial: Trial) -> Any:
    return anthropic.Anthropic(base_url=trial.url, api_key=trial.token.secret, max_retries=0, timeout=15)


def _openai(trial: Trial) -> Any:
    return openai.OpenAI(base_url=trial.openai_url, api_key=trial.token.secret, max_retries=0, timeout=15)


# Each call kind: (trial, tool_result or None) -> (text, [tool names called], call id to answer)
def messages(trial: Trial, result: str | None, stream: bool = False) -> tuple[str, list[str], str]:
    conv: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    if result is not None:
        conv += [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": result}]}]
    args = {"model": "claude-sonnet-4-6", "max_tokens": 256, "messages": conv,
            "tools": [{"name": "get_weather", "description": "weather", "input_schema": SCHEMA}]}
    client = _anthropic(trial)
    if stream:
        with client.messages.stream(**args) as events:
            msg = events.get_final_message()
    else:
        msg = client.messages.create(**args)
    text = "".join(b.text for b in msg.content if b.type == "text")
    calls = [b for b in msg.content if b.type == "tool_use"]
    return text, [c.name for c in calls], calls[0].id if calls else ""


def chat(trial: Trial, result: str | None, stream: bool = False) -> tuple[str, list[str], str]:
    conv: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    if result is not None:
        conv += [{"role": "assistant", "content": None, "tool_calls": [
                     {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'}}]},
                 {"role": "tool", "tool_call_id": "call_1", "content": result}]
    args = {"model": "gpt-4o", "messages": conv, "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": SCHEMA}}]}
    client = _openai(trial)
    if not stream:
        message = client.chat.completions.create(**args).choices[0].message
        calls = message.tool_calls or []
        return message.content or "", [c.function.name for c in calls], calls[0].id if calls else ""
    text, names, ids = "", [], []
    for chunk in client.chat.completions.create(**args, stream=True, stream_options={"include_usage": True}):
        for choice in chunk.choices:
            text += choice.delta.content or ""
            for call in choice.delta.tool_calls or []:
                names += [call.function.name] if call.function and call.function.name else []
                ids += [call.id] if call.id else []
    return text, names, ids[0] if ids else ""


def responses(trial: Trial, result: str | None, stream: bool = False) -> tuple[str, list[str], str]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Weather in Paris?"}]
    if result is not None:
        items += [{"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": '{"city":"Paris"}'},
                  {"type": "function_call_output", "call_id": "call_1", "output": result}]
    args = {"model": "gpt-5", "input": items, "tools": [{"type": "function", "name": "get_weather", "parameters": SCHEMA}]}
    client = _openai(trial)
    if stream:
        with client.responses.stream(**args) as events:
            resp = events.get_final_response()
    else:
        resp = client.responses.create(**args)
    calls = [i for i in resp.output if i.type == "function_call"]
    return resp.output_text, [c.name for c in calls], calls[0].call_id if calls else ""


KINDS: dict[str, Callable[..., tuple[str, list[str], str]]] = {
    "messages": messages, "messages-stream": lambda t, r: messages(t, r, True),
    "chat": chat, "chat-stream": lambda t, r: chat(t, r, True),
    "responses": responses, "responses-stream": lambda t, r: responses(t, r, True),
}
FAMILY = {"messages": "anthropic", "chat": "openai", "responses": "openai"}


def two_turns(call: Callable[..., tuple[str, list[str], str]], trial: Trial, result: str = "sunny, 24C") -> tuple[str, list[str], str]:
    first_text, names, call_id = call(trial, None)
    assert first_text == "Checking." and names == ["get_weather"] and call_id
    final, more, _ = call(trial, result)
    return final, more, call_id


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(SCRIPT) as server:
        yield server


def make_gateway(tmp_path: Path, mode: str, upstream: FakeUpstream | None = None) -> Gateway:
    ups = {f: Upstream(f, upstream.url, REAL_KEYS[f]) for f in ("anthropic", "openai")} if upstream else {}
    return Gateway(GatewayConfig(mode=mode, upstreams=ups, log_dir=tmp_path / "logs", cassette_dir=tmp_path / "cassettes", timeout_s=5))


@pytest.mark.parametrize("kind", KINDS)
def test_scripted(kind: str, tmp_path: Path) -> None:
    with make_gateway(tmp_path, "scripted") as gw, gw.trial(f"scripted-{kind}", script=SCRIPT) as trial:
        final, more, _ = two_turns(KINDS[kind], trial)
    assert (final, more) == ("FINAL: sunny in Paris", [])
    assert [e["note"] for e in trial.entries] == ["steps[0]", "steps[1]"]
    entry = trial.entries[0]
    assert (entry["tokens_in"], entry["tokens_out"], entry["status"], entry["billed"]) == (1234, 56, 200, False)
    assert entry["cost_usd"] > 0 and entry["token_id"] == trial.token.id
    lines = (tmp_path / "logs" / f"scripted-{kind}.jsonl").read_text().splitlines()
    assert [json.loads(line)["note"] for line in lines] == ["steps[0]", "steps[1]"]
    assert trial.token.secret not in "".join(lines)


@pytest.mark.parametrize("kind", KINDS)
def test_proxy(kind: str, tmp_path: Path, upstream: FakeUpstream) -> None:
    with make_gateway(tmp_path, "proxy", upstream) as gw, gw.trial(f"proxy-{kind}") as trial:
        final, _, _ = two_turns(KINDS[kind], trial)
    assert final == "FINAL: sunny in Paris"
    family = FAMILY[kind.split("-")[0]]
    for seen in upstream.requests:  # upstream got the real key, and never the scoped token
        auth = seen.headers.get("x-api-key") or seen.headers.get("authorization", "")
        assert REAL_KEYS[family] in auth and trial.token.secret not in json.dumps({"path": seen.path, "headers": seen.headers})
    assert [(e["tokens_in"], e["tokens_out"], e["billed"], e["error"]) for e in trial.entries] == [(1234, 56, True, None)] * 2
    assert REAL_KEYS[family] not in (tmp_path / "logs" / f"proxy-{kind}.jsonl").read_text()


@pytest.mark.parametrize("kind", KINDS)
def test_record_then_replay(kind: str, tmp_path: Path, upstream: FakeUpstream) -> None:
    name = f"rr-{kind}[with_skill-a1]"
    with make_gateway(tmp_path, "record", upstream) as gw, gw.trial(name) as trial:
        recorded = two_turns(KINDS[kind], trial)
    cassette = gw.cassette_path(name)
    text = cassette.read_text()
    assert json.loads(text)["format"] == "skilleval-cassette" and len(json.loads(text)["interactions"]) == 2
    assert all(secret not in text for secret in (*REAL_KEYS.values(), trial.token.secret))
    served_before = len(upstream.requests)
    with make_gateway(tmp_path, "replay") as gw, gw.trial(name) as replayed:
        again = two_turns(KINDS[kind], replayed)
    replayed.check()
    assert again[:2] == recorded[:2] == ("FINAL: sunny in Paris", [])
    assert len(upstream.requests) == served_before  # replay never goes upstream
    assert [e["note"] for e in replayed.entries] == ["cassette turn 1", "cassette turn 2"]
    assert replayed.entries[1]["tokens_in"] == 1234


@pytest.mark.parametrize("kind", ["messages-stream", "chat", "responses-stream"])
def test_replay_divergence_is_an_error_and_a_message(kind: str, tmp_path: Path, upstream: FakeUpstream) -> None:
    name = f"diverge-{kind}"
    with make_gateway(tmp_path, "record", upstream) as gw, gw.trial(name) as trial:
        two_turns(KINDS[kind], trial, result="sunny, 24C")
    with make_gateway(tmp_path, "replay") as gw, gw.trial(name) as replayed:
        KINDS[kind](replayed, None)
        error_class = anthropic.BadRequestError if kind.startswith("messages") else openai.BadRequestError
        with pytest.raises(error_class) as raised:
            KINDS[kind](replayed, "raining, 9C")
    message = replayed.divergences[0]
    assert f"trial '{name}'" in message and "turn 2" in message
    assert "tool result #1 differs" in message and "sunny, 0C" in message and "raining, 0C" in message
    assert "replay divergence" in str(raised.value)
    assert replayed.entries[-1]["error"] == "replay_divergence"
    with pytest.raises(ReplayDivergence, match="turn 2"):
        replayed.check()


def test_replay_reports_turns_never_requested(tmp_path: Path, upstream: FakeUpstream) -> None:
    with make_gateway(tmp_path, "record", upstream) as gw, gw.trial("short") as trial:
        two_turns(messages, trial)
    with make_gateway(tmp_path, "replay") as gw, gw.trial("short") as replayed:
        messages(replayed, None)
    assert replayed.divergences == ["replay divergence in trial 'short': the agent stopped after 1 requests; "
                                    "recorded turns [2] were never requested"]


def test_replay_without_cassette_names_the_fix(tmp_path: Path) -> None:
    with make_gateway(tmp_path, "replay") as gw, pytest.raises(FileNotFoundError, match="record it with --skilleval-gateway=record"):
        gw.open_trial("never-recorded")
