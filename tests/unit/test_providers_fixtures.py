"""The provider fixtures and options as a user meets them, through pytest itself (pytester)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic  # noqa: F401 - see below
import openai  # noqa: F401
import pytest

from pytest_skilleval.gateway.fake_upstream import FakeUpstream
from pytest_skilleval.gateway.script import Script

# Imported before any in-process pytester run, on purpose: anthropic pulls in the importlib_metadata
# backport, which removes the stdlib's distribution finder and installs its own on sys.meta_path.
# A pytester run restores sys.meta_path afterwards, dropping that finder, and from then on the whole
# process finds no package metadata (pytest's own header then crashes). Importing first keeps the
# backport's finder in the snapshot pytester restores.

pytest_plugins = ["pytester"]
KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "SKILLEVAL_API_KEY", "SKILLEVAL_PROVIDER", "SKILLEVAL_MODEL",
        "SKILLEVAL_BASE_URL", "SKILLEVAL_CACHE", "SKILLEVAL_EMBEDDING_PROVIDER", "OPENAI_BASE_URL", "ANTHROPIC_BASE_URL")
#: what the fake vendor answers: the label the judging suite expects, as text and as a JSON-mode reply
REPLIES = Script.from_data({"steps": [{"text": '{"label": "GOOD"}'}], "usage": {"input": 11, "output": 7}, "json_reply": {"label": "GOOD"}})

JUDGE_TESTS = '''
import json
from pydantic import BaseModel
from pytest_skilleval.providers.base import ChatMessage, ChatRequest

class Verdict(BaseModel):
    label: str

def test_judge(skilleval_chat):
    out = []
    for attempt in range(3):
        req = ChatRequest(messages=(ChatMessage(role="user", content="judge this"),), attempt=attempt)
        verdict, reply = skilleval_chat.structured(req, Verdict)
        out.append([verdict.label, reply.cached])
    print("RESULT " + json.dumps(out))

def test_embed(skilleval_embedder):
    vecs = skilleval_embedder.embed(["alpha", "beta"])
    print("EMBED", vecs.shape, skilleval_embedder.model_id)
'''


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for var in KEYS:
        monkeypatch.delenv(var, raising=False)
    return monkeypatch


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream(REPLIES) as server:
        yield server


def _results(outlines: list[str]) -> list[list[object]]:
    line = next(ln for ln in outlines if "RESULT " in ln)
    return json.loads(line.split("RESULT ", 1)[1])  # type: ignore[no-any-return]


def test_rerun_of_a_judging_suite_makes_zero_upstream_calls(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch,
                                                             upstream: FakeUpstream) -> None:
    """Two separate pytest processes, the real fixtures and the real SDK: the second run is all cache."""
    clean_env.setenv("SKILLEVAL_PROVIDER", "openai-compatible")
    clean_env.setenv("SKILLEVAL_MODEL", "judge-model")
    clean_env.setenv("SKILLEVAL_BASE_URL", f"{upstream.url}/v1")
    clean_env.setenv("SKILLEVAL_EMBEDDING_MODEL", "embed-model")
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_judge=JUDGE_TESTS)

    first = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    first.assert_outcomes(passed=2)
    assert upstream.count("/v1/chat/completions") == 3 and upstream.count("/v1/embeddings") == 1
    assert _results(first.outlines) == [["GOOD", False]] * 3  # three attempts: three distinct calls

    upstream.reset()
    second = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider")
    second.assert_outcomes(passed=2)
    assert upstream.count() == 0  # counted at the server: the rerun made zero upstream calls
    assert _results(second.outlines) == [["GOOD", True]] * 3
    assert list((pytester.path / ".skilleval-cache" / "providers").glob("chat/*/*.json"))

    third = pytester.runpytest_subprocess("-s", "-p", "no:cacheprovider", "--skilleval-cache=off")
    third.assert_outcomes(passed=2)
    assert upstream.count("/v1/chat/completions") == 3 and _results(third.outlines) == [["GOOD", False]] * 3


def test_nothing_configured_gives_none(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_it(skilleval_chat, skilleval_provider_cache):\n"
                        "    assert skilleval_chat is None\n"
                        "    assert skilleval_provider_cache.mode == 'readwrite'\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert "skilleval providers: chat=none" in result.stdout.str()


def test_two_keys_are_a_clear_error_at_fixture_setup(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "sk-secret-o")
    clean_env.setenv("ANTHROPIC_API_KEY", "sk-secret-a")
    pytester.makepyfile("def test_uses_a_model(skilleval_chat):\n    pass\n\ndef test_tier1_only():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, errors=1)  # only what needs a model is affected
    out = result.stdout.str()
    assert "OPENAI_API_KEY and ANTHROPIC_API_KEY are set" in out and "--skilleval-provider=openai|anthropic" in out
    assert "sk-secret" not in out


@pytest.mark.parametrize(("args", "ini", "env", "expected"), [
    (["--skilleval-provider=anthropic"], "", {"SKILLEVAL_PROVIDER": "openai"}, "anthropic"),
    ([], "skilleval_provider = nvidia\n", {"SKILLEVAL_PROVIDER": "openai"}, "nvidia"),
    ([], "", {"SKILLEVAL_PROVIDER": "openai"}, "openai"),
    ([], "", {}, "AMBIGUOUS"),
    (["--skilleval-provider=none"], "", {}, "None"),
])
def test_option_precedence(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch, args: list[str], ini: str,
                           env: dict[str, str], expected: str) -> None:
    for var, value in {"OPENAI_API_KEY": "o", "ANTHROPIC_API_KEY": "a", "NVIDIA_API_KEY": "n", **env}.items():
        clean_env.setenv(var, value)
    pytester.makeini(f"[pytest]\n{ini}")
    pytester.makepyfile("from pytest_skilleval.providers.base import ProviderError\n"
                        "def test_it(request):\n"
                        "    try:\n"
                        "        chat = request.getfixturevalue('skilleval_chat')\n"
                        "    except ProviderError:\n"
                        "        print('CHOSEN AMBIGUOUS'); return\n"
                        "    print('CHOSEN', chat.name if chat else None)\n")
    result = pytester.runpytest("-s", *args)
    result.assert_outcomes(passed=1)
    assert f"CHOSEN {expected}" in result.stdout.str()


def test_a_users_conftest_overrides_the_fixtures(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("OPENAI_API_KEY", "o")
    pytester.makeconftest('''
import pytest
from pytest_skilleval.providers.base import ChatProvider, ChatReply
from pytest_skilleval.providers.cache import CachedChat

class Canned(ChatProvider):
    name, model = "canned", "v0"
    calls = 0
    def chat(self, request):
        Canned.calls += 1
        return ChatReply(text='{"label": "CANNED"}', model="v0", provider="canned")

@pytest.fixture(scope="session")
def skilleval_chat(skilleval_provider_cache):
    return CachedChat(Canned(), skilleval_provider_cache)
''')
    pytester.makepyfile('''
from pytest_skilleval.providers.base import ChatMessage, ChatRequest
def test_it(skilleval_chat):
    req = ChatRequest(messages=(ChatMessage(role="user", content="q"),))
    first, second = skilleval_chat.chat(req), skilleval_chat.chat(req)
    assert first.text == second.text == '{"label": "CANNED"}' and second.cached and skilleval_chat.inner.calls == 1
''')
    pytester.runpytest().assert_outcomes(passed=1)


def test_bad_option_values_are_usage_errors(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    pytester.makepyfile("def test_it():\n    pass\n")
    result = pytester.runpytest("--skilleval-cache=sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--skilleval-cache: unknown value 'sometimes'" in result.stderr.str()
    result = pytester.runpytest("--skilleval-provider=azure")
    assert result.ret == pytest.ExitCode.USAGE_ERROR and "openai-compatible" in result.stderr.str()


def test_a_check_item_reaches_the_runs_provider_through_its_settings(pytester: pytest.Pytester, clean_env: pytest.MonkeyPatch) -> None:
    """Check items are plain Items: they get ``ctx.settings`` only, and chat_from_settings finds the options."""
    pytester.makeconftest('''
import pytest
from pytest_skilleval.checks import Check
from pytest_skilleval.providers.select import chat_from_settings


class Probe(Check):
    name = "probe"
    def run(self, skill, ctx):
        chat = chat_from_settings(ctx.settings)
        print("PROBE", chat.name, chat.model, chat.cache.mode)
        return self.result()

@pytest.hookimpl
def pytest_skilleval_checks(config):
    return [Probe()]
''')
    skill = pytester.path / "skills" / "demo-skill"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: demo-skill\ndescription: Use when demoing.\n---\n# Demo\n")
    result = pytester.runpytest("--skills", "skills", "--skilleval-checks=probe", "-s", "--skilleval-provider=openai-compatible",
                                "--skilleval-model=m1", "--skilleval-base-url=http://127.0.0.1:9/v1", "--skilleval-cache=read")
    result.assert_outcomes(passed=1)
    assert "PROBE openai-compatible m1 read" in result.stdout.str()
