"""Provider selection: every key combination, explicit choices, endpoints, embeddings, settings validation."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest
from conftest import loopback_only, make_settings

from pytest_skilleval.providers import select
from pytest_skilleval.providers.anthropic_chat import AnthropicChat
from pytest_skilleval.providers.base import Embedder, ProviderError
from pytest_skilleval.providers.cache import CachedChat, CachedEmbedder
from pytest_skilleval.providers.openai_chat import OpenAIChat
from pytest_skilleval.providers.options import ProviderSettings
from pytest_skilleval.providers.select import OFFLINE, chat_target, embedding_target

OPENAI, ANTHROPIC, NVIDIA = {"OPENAI_API_KEY": "sk-o"}, {"ANTHROPIC_API_KEY": "sk-a"}, {"NVIDIA_API_KEY": "nv-k"}
AUTO = ProviderSettings()


@pytest.fixture(autouse=True)
def _loopback_only(monkeypatch: pytest.MonkeyPatch) -> None:
    loopback_only(monkeypatch)


def test_no_key_means_no_chat_provider() -> None:
    assert chat_target(AUTO, {}) is None
    assert chat_target(AUTO, {"UNRELATED": "x", "OPENAI_API_KEY": ""}) is None  # an empty variable is not a key


@pytest.mark.parametrize(("env", "provider", "model", "base_url", "key"), [
    (OPENAI, "openai", "gpt-5.6-sol", "https://api.openai.com/v1", "sk-o"),
    (ANTHROPIC, "anthropic", "claude-opus-5", None, "sk-a"),
    (NVIDIA, "nvidia", "nvidia/nemotron-3-nano-30b-a3b", "https://integrate.api.nvidia.com/v1", "nv-k"),
])
def test_exactly_one_key_selects_its_provider(env: dict[str, str], provider: str, model: str, base_url: str | None, key: str) -> None:
    target = chat_target(AUTO, env)
    assert target is not None and (target.provider, target.model, target.base_url, target.api_key) == (provider, model, base_url, key)
    assert key not in repr(target)  # a key never reaches a log through repr


@pytest.mark.parametrize("env", [{**OPENAI, **ANTHROPIC}, {**OPENAI, **NVIDIA}, {**OPENAI, **ANTHROPIC, **NVIDIA}])
def test_two_or_more_keys_are_ambiguous_and_say_how_to_choose(env: dict[str, str]) -> None:
    with pytest.raises(ProviderError) as info:
        chat_target(AUTO, env)
    message = str(info.value)
    assert info.value.kind == "config" and "--skilleval-provider=" in message and "SKILLEVAL_PROVIDER" in message
    assert all(var in message for var in env) and all(v not in message for v in env.values())


@pytest.mark.parametrize("choice", ["openai", "anthropic", "nvidia"])
def test_an_explicit_choice_settles_the_ambiguity(choice: str) -> None:
    target = chat_target(ProviderSettings(provider=choice), {**OPENAI, **ANTHROPIC, **NVIDIA})
    assert target is not None and target.provider == choice


def test_none_turns_chat_off_even_with_keys() -> None:
    assert chat_target(ProviderSettings(provider="none"), {**OPENAI, **ANTHROPIC}) is None


def test_an_explicit_provider_without_its_key_is_a_config_error() -> None:
    with pytest.raises(ProviderError, match="ANTHROPIC_API_KEY"):
        chat_target(ProviderSettings(provider="anthropic"), OPENAI)


def test_skilleval_overrides_win() -> None:
    ps = ProviderSettings(provider="openai", model="gpt-4.1-mini", base_url="http://127.0.0.1:9/v1")
    target = chat_target(ps, {**OPENAI, "SKILLEVAL_API_KEY": "sk-override", "OPENAI_BASE_URL": "http://ignored"})
    assert target is not None and (target.model, target.base_url, target.api_key) == ("gpt-4.1-mini", "http://127.0.0.1:9/v1", "sk-override")
    target = chat_target(AUTO, {**OPENAI, "OPENAI_BASE_URL": "http://proxy.local/v1"})
    assert target is not None and target.base_url == "http://proxy.local/v1"


def test_a_lone_skilleval_api_key_asks_for_a_provider() -> None:
    with pytest.raises(ProviderError, match="SKILLEVAL_PROVIDER"):
        chat_target(AUTO, {"SKILLEVAL_API_KEY": "k"})


def test_openai_compatible_needs_url_and_model_and_never_gets_the_openai_key() -> None:
    with pytest.raises(ProviderError, match="base-url"):
        chat_target(ProviderSettings(provider="openai-compatible", model="m"), OPENAI)
    with pytest.raises(ProviderError, match="model"):
        chat_target(ProviderSettings(provider="openai-compatible", base_url="http://localhost:8000/v1"), OPENAI)
    ps = ProviderSettings(provider="openai-compatible", model="llama", base_url="http://localhost:8000/v1")
    target = chat_target(ps, OPENAI)
    assert target is not None and target.api_key == "unused"  # not sk-o: a third-party server gets no OpenAI key
    target = chat_target(ps, {**OPENAI, "SKILLEVAL_API_KEY": "local-key"})
    assert target is not None and target.api_key == "local-key"


@pytest.mark.parametrize("url", ["https://gw.example/", "https://gw.example/v1", "https://gw.example/v1/messages"])
def test_anthropic_base_urls_are_normalised_to_the_root(url: str) -> None:
    target = chat_target(ProviderSettings(provider="anthropic", base_url=url), ANTHROPIC)
    assert target is not None and target.base_url == "https://gw.example"


def test_bedrock_is_explicit_only_with_a_region() -> None:
    assert chat_target(AUTO, {"AWS_ACCESS_KEY_ID": "a"}) is None
    target = chat_target(ProviderSettings(provider="bedrock"), {})
    assert target is not None and (target.model, target.region, target.api_key) == ("us.anthropic.claude-opus-5", "us-west-2", None)
    target = chat_target(ProviderSettings(provider="bedrock"), {"AWS_REGION": "eu-central-1", "AWS_BEARER_TOKEN_BEDROCK": "b"})
    assert target is not None and (target.region, target.api_key) == ("eu-central-1", "b")


def test_build_chat_makes_the_right_client() -> None:
    ps = ProviderSettings(retries=2, timeout=9.0)
    nvidia = select.build_chat(chat_target(ps, NVIDIA), ps)  # type: ignore[arg-type]
    assert isinstance(nvidia, OpenAIChat) and nvidia.name == "nvidia" and nvidia.retry.retries == 2
    assert str(nvidia.client.base_url).startswith("https://integrate.api.nvidia.com/v1") and nvidia.client.max_retries == 0
    claude = select.build_chat(chat_target(ps, ANTHROPIC), ps)  # type: ignore[arg-type]
    assert isinstance(claude, AnthropicChat) and claude.client.max_retries == 0 and claude.client.timeout == 9.0


# -- embeddings -------------------------------------------------------------------------------------


def test_embeddings_follow_an_openai_style_chat_provider() -> None:
    target = embedding_target(AUTO, OPENAI)
    assert not isinstance(target, str) and target is not None
    assert (target.provider, target.model, target.api_key) == ("openai", "text-embedding-3-small", "sk-o")
    target = embedding_target(AUTO, NVIDIA)
    assert not isinstance(target, str) and target is not None and target.model == "nvidia/nv-embedqa-e5-v5"


def test_embeddings_stay_offline_without_an_embeddings_api() -> None:
    assert embedding_target(AUTO, {}) == OFFLINE
    assert embedding_target(AUTO, ANTHROPIC) == OFFLINE
    assert embedding_target(ProviderSettings(provider="bedrock"), {}) == OFFLINE
    compatible = ProviderSettings(provider="openai-compatible", model="m", base_url="http://localhost:1/v1")
    assert embedding_target(compatible, {}) == OFFLINE
    assert embedding_target(ProviderSettings(embedding_provider="offline"), OPENAI) == OFFLINE
    assert embedding_target(ProviderSettings(embedding_provider="none"), OPENAI) is None


def test_embedding_overrides() -> None:
    ps = ProviderSettings(provider="anthropic", embedding_provider="openai", embedding_model="text-embedding-3-large",
                          embedding_base_url="http://127.0.0.1:9/v1")
    target = embedding_target(ps, {**ANTHROPIC, **OPENAI, "SKILLEVAL_API_KEY": "anthropic-only", "SKILLEVAL_EMBEDDING_API_KEY": "ek"})
    assert not isinstance(target, str) and target is not None
    assert (target.provider, target.model, target.base_url, target.api_key) == ("openai", "text-embedding-3-large", "http://127.0.0.1:9/v1", "ek")
    target = embedding_target(ProviderSettings(provider="anthropic", embedding_provider="openai"), {**ANTHROPIC, **OPENAI, "SKILLEVAL_API_KEY": "a"})
    assert not isinstance(target, str) and target is not None and target.api_key == "sk-o"  # SKILLEVAL_API_KEY was the chat's


def test_embedder_from_settings_wraps_remote_in_the_cache_and_defaults_offline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "SKILLEVAL_PROVIDER", "SKILLEVAL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-o")
    remote = select.embedder_from_settings(ProviderSettings(cache_dir=tmp_path))
    assert isinstance(remote, CachedEmbedder) and remote.model_id == "openai:text-embedding-3-small"

    class Offline(Embedder):
        model_id, dim = "offline:test", 3

        def embed(self, texts: object) -> object:
            return None

    fake = types.ModuleType("pytest_skilleval.tier2.embedders")
    fake.default_embedder = Offline  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "pytest_skilleval.tier2.embedders", fake)
    offline = select.embedder_from_settings(ProviderSettings(provider="anthropic", cache_dir=tmp_path))
    assert isinstance(offline, Offline)
    monkeypatch.setitem(sys.modules, "pytest_skilleval.tier2.embedders", types.ModuleType("pytest_skilleval.tier2.embedders"))
    assert select.default_embedder() is None


# -- settings and the plain-Python accessor ------------------------------------------------------------


@pytest.mark.parametrize(("kw", "text"), [({"provider": "azure"}, "--skilleval-provider"), ({"cache": "sometimes"}, "--skilleval-cache"),
                                          ({"embedding_provider": "anthropic"}, "--skilleval-embedding-provider"),
                                          ({"retries": -1}, "retries"), ({"timeout": 0}, "timeout")])
def test_bad_settings_are_config_errors(kw: dict[str, object], text: str) -> None:
    with pytest.raises(ProviderError, match=text):
        ProviderSettings(**kw)  # type: ignore[arg-type]


def test_settings_from_env(tmp_path: Path) -> None:
    ps = ProviderSettings.from_env({"SKILLEVAL_PROVIDER": " Anthropic ", "SKILLEVAL_CACHE": "READ", "SKILLEVAL_PROVIDER_RETRIES": "7",
                                    "SKILLEVAL_PROVIDER_TIMEOUT": "2.5", "SKILLEVAL_MODEL": ""}, tmp_path)
    assert (ps.provider, ps.cache, ps.retries, ps.timeout, ps.model, ps.cache_dir) == ("anthropic", "read", 7, 2.5, None, tmp_path / "providers")
    with pytest.raises(ProviderError, match="expected a number"):
        ProviderSettings.from_env({"SKILLEVAL_PROVIDER_RETRIES": "many"})


def test_chat_from_settings_finds_the_runs_registered_options(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "NVIDIA_API_KEY", "SKILLEVAL_PROVIDER", "SKILLEVAL_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    settings = make_settings(cache_dir=tmp_path)
    assert select.chat_from_settings(settings) is None  # nothing registered, nothing in the environment
    ps = ProviderSettings(provider="openai-compatible", model="m", base_url="http://127.0.0.1:9/v1", cache_dir=tmp_path / "providers")
    select.register(settings, ps)
    try:
        chat = select.chat_from_settings(settings)
        assert isinstance(chat, CachedChat) and chat.name == "openai-compatible" and chat.cache.root == tmp_path / "providers"
        assert select.chat_from_settings(settings) is chat  # one client and cache per process
        assert select.chat_from_settings(make_settings(cache_dir=tmp_path)) is None  # an equal but other run's settings
    finally:
        select.unregister(settings)
    assert select.chat_from_settings(settings) is None
    monkeypatch.setenv("NVIDIA_API_KEY", "nv")
    from_env = select.chat_from_settings(settings)
    assert isinstance(from_env, CachedChat) and from_env.name == "nvidia" and from_env.cache.root == tmp_path / "providers"


def test_describe_never_shows_a_key() -> None:
    assert select.describe(AUTO, OPENAI) == "skilleval providers: chat=openai:gpt-5.6-sol embeddings=openai:text-embedding-3-small cache=readwrite"
    line = select.describe(AUTO, {**OPENAI, **ANTHROPIC})
    assert "not usable" in line and "sk-" not in line
    assert select.describe(AUTO, {}) == "skilleval providers: chat=none embeddings=offline cache=readwrite"


def test_keys_are_masked_wherever_a_traceback_could_show_them() -> None:
    from pytest_skilleval.providers.options import Env, Secret

    env = Env({"OPENAI_API_KEY": "sk-real", "AWS_BEARER_TOKEN_BEDROCK": "tok", "OPENAI_BASE_URL": "http://x"})
    assert "sk-real" not in repr(env) and repr(env["OPENAI_API_KEY"]) == "'***'" and env["OPENAI_API_KEY"] == "sk-real"
    assert isinstance(env["AWS_BEARER_TOKEN_BEDROCK"], Secret) and not isinstance(env["OPENAI_BASE_URL"], Secret)
    target = chat_target(AUTO, {"OPENAI_API_KEY": "sk-real"})
    assert target is not None and isinstance(target.api_key, Secret) and f"Bearer {target.api_key}" == "Bearer sk-real"
