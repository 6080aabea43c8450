"""The gateway's small parts: protocol parsing, SSE, scripts, scrubbing, cassette matching, routing."""

from __future__ import annotations

import gzip
import http.client
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Trial, Upstream
from pytest_skilleval.gateway.cassette import Signature, normalize
from pytest_skilleval.gateway.protocols import PROTOCOLS, for_path
from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, ToolCall, Usage
from pytest_skilleval.gateway.protocols.sse import SSEParser
from pytest_skilleval.gateway.scrub import REDACTED, Scrubber

SKILL_SCRIPT = {"side_text": "a title", "steps": [{"text": "Loading.", "tool": "skill", "args": {"name": "greet"}}, {"text": "FINAL"}]}

BODIES: dict[str, Any] = {  # one request per protocol holding two tool results
    "/v1/messages": {"model": "m", "stream": True, "tools": [{"name": "skill"}], "messages": [
        {"role": "user", "content": "hi"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": [{"type": "text", "text": "one"}]},
                                     {"type": "tool_result", "tool_use_id": "b", "content": "two"}]}]},
    "/v1/chat/completions": {"model": "m", "tools": [{"type": "function", "function": {"name": "skill"}}], "messages": [
        {"role": "user", "content": "hi"}, {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "tool", "tool_call_id": "b", "content": [{"type": "text", "text": "two"}]}]},
    "/v1/responses": {"model": "m", "stream": True, "tools": [{"type": "function", "name": "skill"}, {"type": "web_search"}], "input": [
        {"role": "user", "content": "hi"}, {"type": "function_call_output", "call_id": "a", "output": "one"},
        {"type": "custom_tool_call_output", "call_id": "b", "output": "two"}]},
    "/v1beta/models/gemini-2.5-flash:streamGenerateContent": {"tools": [{"functionDeclarations": [{"name": "skill"}]}], "contents": [
        {"role": "user", "parts": [{"text": "hi"}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "skill", "response": {"output": "one"}}},
                                   {"functionResponse": {"name": "skill", "response": {"output": "two"}}}]}]},
}


@pytest.mark.parametrize("path", BODIES)
def test_parse_counts_tool_results_per_protocol(path: str) -> None:
    protocol = for_path(path)
    assert protocol is not None
    request = protocol.parse(path, {"alt": "sse"}, BODIES[path])
    assert request.tool_results == ("one", "two") and "skill" in request.tools
    assert request.model in ("m", "gemini-2.5-flash")


@pytest.mark.parametrize("protocol", PROTOCOLS, ids=lambda p: p.name)
def test_rendered_stream_folds_back_to_usage_and_ends(protocol: object) -> None:
    reply = Reply(text="hi", model="m", usage=Usage(100, 7, 40), tool_calls=(ToolCall("skill", {"name": "greet"}, "c1"),))
    request = NeutralRequest(protocol="x", model="m", stream=True, shape="usage")
    events = protocol.render_events(reply, request)  # type: ignore[attr-defined]
    parser, usage, finished = SSEParser(), Usage(), False
    for byte in b"".join(events):  # one byte at a time: parsing must not depend on chunk boundaries
        for name, data in parser.feed(bytes([byte])):
            usage = protocol.fold_usage(usage, name, data)  # type: ignore[attr-defined]
            finished = finished or protocol.stream_finished(name, data)  # type: ignore[attr-defined]
    assert finished and usage == Usage(100, 7, 40)
    assert protocol.usage_from_json(protocol.render_json(reply, request)) == Usage(100, 7, 40)  # type: ignore[attr-defined]


def test_sse_parser_handles_crlf_comments_and_multiline_data() -> None:
    parser = SSEParser()
    assert parser.feed(b": keep-alive\r\nevent: x\r\ndata: {\"a\":\r\n") == []
    assert parser.feed(b"data: 1}\r\n\r\ndata: [DONE]\n\n") == [("x", {"a": 1}), ("", "[DONE]")]


def test_script_rules() -> None:
    script = Script.from_data(SKILL_SCRIPT)
    with_tool = NeutralRequest("p", "m", False, tools=("skill",))
    reply, note = script.reply_for(with_tool, "", "call_")
    assert (reply.text, [c.name for c in reply.tool_calls], note) == ("Loading.", ["skill"], "steps[0]")
    reply, note = script.reply_for(NeutralRequest("p", "m", False), "", "call_")  # a title call without the tool
    assert (reply.text, reply.tool_calls, note) == ("a title", (), "side-call (wanted steps[0])")
    later = NeutralRequest("p", "m", False, tools=("skill",), tool_results=("a", "b", "c"))
    assert script.reply_for(later, "", "call_")[0].text == "FINAL"  # past the end: the last step again
    reply, note = script.reply_for(NeutralRequest("p", "m", False, json_mode=True), "", "x")
    assert note == "json-side-call" and json.loads(reply.text)["next_speaker"] == "user"


def test_script_variants_and_files(tmp_path: object) -> None:
    data = {"scripts": {"opencode": {**SKILL_SCRIPT, "variants": [{"if_request_contains": "<name>greet</name>", "steps": [{"text": "V"}]}]}}}
    script = Script.from_data(data, "opencode")
    req = NeutralRequest("p", "m", False, tools=("skill",))
    assert script.reply_for(req, "...<name>greet</name>...", "c")[0].text == "V"
    assert script.reply_for(req, "no skills here", "c")[0].text == "Loading."
    with pytest.raises(ValueError, match="no script for agent 'codex'"):
        Script.from_data(data, "codex")
    with pytest.raises(ValueError, match="needs text or a tool call"):
        Script.from_data({"steps": [{}]})
    path = tmp_path / "case.yaml"  # type: ignore[operator]
    path.write_text("steps:\n  - text: from yaml\n")
    assert Script.load(path).steps[0].text == "from yaml"


def test_scrubber() -> None:
    scrub = Scrubber(["my-very-secret-value"])
    text = "k=my-very-secret-value t=sk-skilleval-abcdefghijkl a=sk-ant-api03-abcdefghijklmnopqrst g=AIza" + "x" * 35
    assert scrub.text(text) == f"k={REDACTED} t={REDACTED} a={REDACTED} g={REDACTED}"
    assert scrub.value({"a": ["Bearer abcdefghijklmnopqrstuvwxyz"]}) == {"a": [f"Bearer {REDACTED}"]}
    assert scrub.text("a normal SKILL.md body, task-123") == "a normal SKILL.md body, task-123"


def test_cassette_normalisation() -> None:
    places = {"<WORKSPACE>": "/tmp/pytest-7/ws"}
    assert normalize("Wall time: 0.0123 s\nat /tmp/pytest-7/ws/a.txt  id deadbeef42", places) == "Wall time: 0.0 s at <WORKSPACE>/a.txt id #"
    request = NeutralRequest("p", "m", True, tools=("a",), tool_results=("x 1",))
    recorded = Signature.of("POST", "/v1/messages", request, {})
    again = Signature.of("POST", "/v1/messages", NeutralRequest("p", "m", True, tools=("a",), tool_results=("x 2",)), {})
    assert recorded.difference(again) is None
    other = Signature.of("POST", "/v1/messages", NeutralRequest("p", "m", True, tools=("a", "b"), tool_results=()), {})
    assert recorded.difference(other) == "declared tools differ: new ['b'], missing []"


@pytest.mark.parametrize(("base", "path", "url"), [
    ("https://api.openai.com", "/v1/chat/completions", "https://api.openai.com/v1/chat/completions"),
    ("https://integrate.api.nvidia.com/v1", "/v1/chat/completions", "https://integrate.api.nvidia.com/v1/chat/completions"),
    ("http://proxy.local/llm/", "/v1/messages", "http://proxy.local/llm/v1/messages"),
])
def test_upstream_url_join(base: str, path: str, url: str) -> None:
    assert Upstream("openai", base).url_for(path) == url


@pytest.fixture
def trial() -> Iterator[Trial]:
    with Gateway(GatewayConfig()) as gw, gw.trial("units", script=Script.from_data(SKILL_SCRIPT)) as live:
        yield live


def test_gemini_json_sse_array_and_count(trial: Trial) -> None:
    base, key = trial.url + "/v1beta/models/gemini-2.5-flash", {"x-goog-api-key": trial.token.secret}
    body = BODIES["/v1beta/models/gemini-2.5-flash:streamGenerateContent"]
    plain = httpx.post(base + ":generateContent", headers=key, json=body).json()
    assert plain["candidates"][0]["content"]["parts"] == [{"text": "FINAL"}]
    array = httpx.post(base + ":streamGenerateContent", params={"key": trial.token.secret}, json=body).json()
    assert isinstance(array, list) and array[0]["usageMetadata"]["promptTokenCount"] == 1234
    sse = httpx.post(base + ":streamGenerateContent?alt=sse", headers=key, json={"contents": [], "tools": body["tools"]})
    assert sse.headers["content-type"] == "text/event-stream" and '"functionCall"' in sse.text
    assert httpx.post(base + ":countTokens", headers=key, json={"contents": []}).json() == {"totalTokens": 1234}


def test_gzip_bodies_bad_bodies_and_unknown_paths(trial: Trial) -> None:
    headers = {"x-api-key": trial.token.secret, "content-encoding": "gzip", "content-type": "application/json"}
    body = gzip.compress(json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]}).encode())
    assert httpx.post(trial.url + "/v1/messages", headers=headers, content=body).json()["content"][0]["text"] == "a title"
    broken = httpx.post(trial.url + "/v1/messages", headers={**headers, "content-encoding": "gzip"}, content=b"not gzip at all")
    assert broken.status_code == 400 and "unreadable request body" in broken.text
    bad = httpx.post(trial.url + "/v1/messages", headers={"x-api-key": trial.token.secret}, content=b"{not json")
    assert bad.status_code == 400 and bad.json()["error"]["type"] == "invalid_request_error"
    assert httpx.post(trial.url + "/v1/embeddings", headers={"x-api-key": trial.token.secret}, json={}).status_code == 404


def test_side_endpoints_and_blocked_egress(trial: Trial) -> None:
    assert httpx.get(trial.url + "/npm/@opencode-ai%2fplugin").json() == {}
    assert httpx.get(trial.url + "/v1/models").json()["data"][0]["id"] == "skilleval-gateway"
    host, port = trial.url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("CONNECT", "api.anthropic.com:443")
    assert conn.getresponse().status == 403
    conn.close()
    response = httpx.get("http://example.invalid/x", proxy=trial.url)  # a proxied plain-HTTP request
    assert response.status_code == 403
    assert [e["detail"] for e in trial.gateway.egress] == ["api.anthropic.com:443", "http://example.invalid/x"]
