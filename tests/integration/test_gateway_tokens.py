"""Scoped tokens: the agent process holds only its trial's token; the real key stays in the host.

The agent here is a real child process started with the environment the gateway hands out. It
dumps that environment and calls the model through the gateway in proxy mode, so the test sees
both sides: no real key in the agent, the real key at the upstream.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pytest_skilleval.gateway import Gateway, GatewayConfig, KeyLeak, upstreams_from_env
from pytest_skilleval.gateway.fake_upstream import FakeUpstream

REAL = "sk-ant-api03-THE-REAL-HOST-KEY-0123456789abcdef"
AGENT = r"""
import json, os, sys, urllib.request, urllib.error
body = json.dumps({"model": "claude-sonnet-4-6", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}).encode()
req = urllib.request.Request(os.environ["ANTHROPIC_BASE_URL"] + "/v1/messages", data=body,
                             headers={"x-api-key": os.environ["ANTHROPIC_API_KEY"], "content-type": "application/json"})
try:
    answer = json.load(urllib.request.urlopen(req, timeout=10))["content"][0]["text"]
except urllib.error.HTTPError as exc:
    answer = f"HTTP {exc.code}"
json.dump({"env": dict(os.environ), "answer": answer}, sys.stdout)
"""


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


@pytest.fixture
def proxy(tmp_path: Path, upstream: FakeUpstream, monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    monkeypatch.setenv("ANTHROPIC_API_KEY", REAL)  # the host has the real key, as in a real run
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "host-cloud-secret-should-not-pass")
    upstreams = upstreams_from_env({"anthropic": upstream.url})
    with Gateway(GatewayConfig(mode="proxy", upstreams=upstreams, log_dir=tmp_path / "logs")) as gw:
        yield gw


def run_agent(env: dict[str, str]) -> dict[str, object]:
    done = subprocess.run([sys.executable, "-c", AGENT], env=env, capture_output=True, text=True, timeout=30, check=True)
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def test_agent_environment_holds_only_the_scoped_token(proxy: Gateway, upstream: FakeUpstream, tmp_path: Path) -> None:
    with proxy.trial("env-check") as trial:
        seen = run_agent(trial.agent_env({"HOME": str(tmp_path)}))
    env = seen["env"]
    assert isinstance(env, dict)
    assert not any(REAL in value for value in env.values()), "the real key reached the agent process"
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["ANTHROPIC_API_KEY"] == env["OPENAI_API_KEY"] == env["GEMINI_API_KEY"] == trial.token.secret
    assert env["ANTHROPIC_BASE_URL"] == proxy.url
    assert seen["answer"] == "upstream says hi"  # the token worked...
    assert upstream.requests[0].headers["x-api-key"] == REAL  # ...and the upstream got the real key
    log = (tmp_path / "logs" / "env-check.jsonl").read_text()
    assert REAL not in log and trial.token.secret not in log and trial.token.id in log


def test_revoked_token_is_refused(proxy: Gateway) -> None:
    with proxy.trial("short-lived") as trial:
        env = trial.agent_env()
        assert run_agent(env)["answer"] == "upstream says hi"
    assert run_agent(env)["answer"] == "HTTP 401"  # same token, trial over
    assert proxy.refused[-1]["detail"] == "token revoked: its trial has ended"
    response = httpx.post(proxy.url + "/v1/messages", headers={"x-api-key": trial.token.secret}, json={"messages": []})
    assert response.json()["error"] == {"type": "authentication_error", "message": "skilleval gateway: token revoked: its trial has ended"}


@pytest.mark.parametrize("headers", [{}, {"x-api-key": "sk-skilleval-guessed"}, {"authorization": "Bearer " + REAL}],
                         ids=["missing", "unknown", "real-key"])
def test_requests_without_a_live_token_are_refused(proxy: Gateway, upstream: FakeUpstream, headers: dict[str, str]) -> None:
    with proxy.trial("guarded"):
        response = httpx.post(proxy.url + "/v1/chat/completions", headers=headers, json={"model": "gpt-4o", "messages": []})
    assert response.status_code == 401 and response.json()["error"]["type"] == "authentication_error"
    assert upstream.requests == []  # nothing was forwarded


def test_tokens_are_per_trial(proxy: Gateway) -> None:
    with proxy.trial("a") as first, proxy.trial("b") as second:
        assert first.token.secret != second.token.secret
        run_agent(second.agent_env())
    assert (len(first.entries), len(second.entries)) == (0, 1)


def test_a_real_key_cannot_be_handed_to_an_agent(proxy: Gateway) -> None:
    with proxy.trial("leaky") as trial, pytest.raises(KeyLeak, match="MY_VAR") as raised:
        trial.agent_env({"MY_VAR": f"prefix-{REAL}"})
    assert REAL not in str(raised.value)


def test_key_never_in_reprs(proxy: Gateway) -> None:
    with proxy.trial("repr") as trial:
        assert REAL not in repr(proxy.config) and trial.token.secret not in repr(trial.token)
