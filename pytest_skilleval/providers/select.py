"""Which provider, which model, which endpoint: resolution from settings plus the environment.

Rules (docs/providers.md has the user-facing version):

- ``--skilleval-provider`` / ``skilleval_provider`` / ``SKILLEVAL_PROVIDER`` picks one explicitly
  (``none`` turns chat off even when keys are present).
- Otherwise exactly one of ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY`` / ``NVIDIA_API_KEY`` picks its
  provider; none means "no chat provider configured" (callers degrade and say so); two or more is
  ambiguous, a config error (:class:`AmbiguousProvider`) naming the keys and the option that settles
  it. The error is raised when a chat model is first needed, not at start-up, so a Tier 1 run is never
  broken by keys it does not use; where a chat model is optional (Tier 2's cluster labels) the caller
  goes on without one and says why, and embeddings stay on the offline model, which needs no key.
- ``SKILLEVAL_API_KEY`` overrides the provider's own key variable. An ``openai-compatible`` endpoint
  never receives ``OPENAI_API_KEY``: a third-party server must not be handed the real OpenAI key.

Built providers are memoised per process, so the fixtures and checks that call
:func:`chat_from_settings` share one SDK client and one cache.
"""

from __future__ import annotations

import importlib
import os
import threading
import weakref
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_skilleval.providers.errors import ProviderError
from pytest_skilleval.providers.options import Env, ProviderSettings

if TYPE_CHECKING:
    from pytest_skilleval.config import Settings
    from pytest_skilleval.providers.base import ChatProvider, Embedder
    from pytest_skilleval.providers.cache import ProviderCache

KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY", "nvidia": "NVIDIA_API_KEY"}
BASE_ENV = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}
DEFAULT_BASE = {"openai": "https://api.openai.com/v1", "nvidia": "https://integrate.api.nvidia.com/v1"}
# The defaults of the tool this plugin replaces (reference/skillevaluator.md §6), so results compare.
DEFAULT_MODELS = {"openai": "gpt-5.6-sol", "anthropic": "claude-opus-5", "bedrock": "us.anthropic.claude-opus-5",
                  "nvidia": "nvidia/nemotron-3-nano-30b-a3b"}
DEFAULT_EMBEDDING_MODELS = {"openai": "text-embedding-3-small", "nvidia": "nvidia/nv-embedqa-e5-v5"}
NO_CHAT = ("no chat provider configured: set one of OPENAI_API_KEY, ANTHROPIC_API_KEY, NVIDIA_API_KEY, "
           "or choose one with --skilleval-provider (docs/providers.md)")
OFFLINE = "offline"


@dataclass(frozen=True)
class Target:
    """A resolved endpoint. The key is kept out of ``repr`` so it never reaches a log or a report."""

    provider: str
    model: str
    base_url: str | None
    api_key: str | None = field(default=None, repr=False)
    region: str | None = None


class AmbiguousProvider(ProviderError):
    """Two or more provider keys and no choice: an error where a chat model is needed, not elsewhere."""


def chosen_provider(ps: ProviderSettings, env: Mapping[str, str]) -> str | None:
    if ps.provider:
        return None if ps.provider == "none" else ps.provider
    present = [name for name, var in KEY_ENV.items() if env.get(var)]
    if len(present) > 1:
        keys = " and ".join(KEY_ENV[p] for p in present)
        raise AmbiguousProvider("select", "config", f"{keys} are set, so the chat provider is ambiguous: choose one with "
                                                f"--skilleval-provider={'|'.join(present)} (or SKILLEVAL_PROVIDER, or "
                                                "skilleval_provider in the ini file), or 'none' for no chat model")
    if not present and env.get("SKILLEVAL_API_KEY"):
        raise ProviderError("select", "config", "SKILLEVAL_API_KEY is set but no provider is chosen: set SKILLEVAL_PROVIDER")
    return present[0] if present else None


def _anthropic_root(url: str) -> str:
    """The SDK appends ``/v1/messages``; accept a root, ``.../v1`` or ``.../v1/messages`` alike."""
    url = url.rstrip("/")
    for tail in ("/messages", "/v1"):
        if url.endswith(tail):
            url = url[: -len(tail)].rstrip("/")
    return url


def _endpoint(provider: str, model: str | None, base_url: str | None, key: str | None, env: Mapping[str, str],
              what: str) -> Target:
    """Fill in a provider's defaults and check that what it needs is there."""
    flag = "--skilleval-embedding-" if what == "embeddings" else "--skilleval-"
    if provider == "openai-compatible":
        if not base_url or not model:
            raise ProviderError(provider, "config", f"openai-compatible {what} need both {flag}base-url and {flag}model")
        # Local servers often need no key, but the SDK insists on a non-empty one.
        return Target(provider, model, base_url, key or "unused")
    model = model or (DEFAULT_EMBEDDING_MODELS if what == "embeddings" else DEFAULT_MODELS)[provider]
    if provider == "bedrock":
        region = env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or "us-west-2"
        return Target(provider, model, base_url, key or env.get("AWS_BEARER_TOKEN_BEDROCK") or None, region)
    key = key or env.get(KEY_ENV[provider])
    if not key:
        raise ProviderError(provider, "config", f"{provider} is selected but {KEY_ENV[provider]} (or SKILLEVAL_API_KEY) is not set")
    base_url = base_url or env.get(BASE_ENV.get(provider, "")) or DEFAULT_BASE.get(provider)
    if provider == "anthropic" and base_url:
        base_url = _anthropic_root(base_url)
    return Target(provider, model, base_url, key)


def chat_target(ps: ProviderSettings, env: Mapping[str, str] | None = None) -> Target | None:
    env = Env(os.environ if env is None else env)
    provider = chosen_provider(ps, env)
    if provider is None:
        return None
    return _endpoint(provider, ps.model, ps.base_url, env.get("SKILLEVAL_API_KEY"), env, "chat")


def embedding_target(ps: ProviderSettings, env: Mapping[str, str] | None = None) -> Target | str | None:
    """A remote endpoint, :data:`OFFLINE` (the built-in embedder), or None (embeddings turned off)."""
    env = Env(os.environ if env is None else env)
    explicit = ps.embedding_provider
    if explicit in ("none", OFFLINE):
        return None if explicit == "none" else OFFLINE
    try:
        chat = chosen_provider(ps, env)
    except AmbiguousProvider:
        if not explicit:
            return OFFLINE  # the built-in embedder needs no key: two chat keys do not make embeddings ambiguous
        chat = None
    provider = explicit or chat
    if provider in (None, "anthropic", "bedrock"):  # no embeddings API there: stay offline
        return OFFLINE
    if provider == "openai-compatible" and not explicit and not ps.embedding_model:
        return OFFLINE  # a compatible chat server need not serve embeddings; do not guess a model
    same = provider == chat
    key = env.get("SKILLEVAL_EMBEDDING_API_KEY") or (env.get("SKILLEVAL_API_KEY") if same else None)
    base_url = ps.embedding_base_url or (ps.base_url if same else None)
    return _endpoint(provider, ps.embedding_model, base_url, key, env, "embeddings")


def build_chat(target: Target, ps: ProviderSettings) -> ChatProvider:
    """An uncached provider for ``target`` (SDKs are imported here, only when a model is needed)."""
    from pytest_skilleval.providers.retry import RetryPolicy

    retry = RetryPolicy(retries=ps.retries)
    if target.provider in ("anthropic", "bedrock"):
        from pytest_skilleval.providers.anthropic_chat import AnthropicChat

        if target.provider == "bedrock":
            return AnthropicChat.bedrock(target.model, region=target.region or "us-west-2", api_key=target.api_key,
                                         base_url=target.base_url, timeout=ps.timeout, retry=retry)
        return AnthropicChat(target.model, api_key=target.api_key, base_url=target.base_url, timeout=ps.timeout, retry=retry)
    from pytest_skilleval.providers.openai_chat import OpenAIChat

    return OpenAIChat(target.model, api_key=target.api_key or "", base_url=target.base_url, name=target.provider,
                      timeout=ps.timeout, retry=retry)


def build_embedder(target: Target, ps: ProviderSettings) -> Embedder:
    from pytest_skilleval.providers.openai_embeddings import OpenAIEmbedder
    from pytest_skilleval.providers.retry import RetryPolicy

    # NVIDIA's retrieval embedders refuse a request without input_type; skill text is the "passage" side.
    extra = {"input_type": "passage", "truncate": "END"} if target.provider == "nvidia" else None
    return OpenAIEmbedder(target.model, api_key=target.api_key or "", base_url=target.base_url, name=target.provider,
                          timeout=ps.timeout, retry=RetryPolicy(retries=ps.retries), extra_body=extra)


def default_embedder() -> Embedder | None:
    """The offline embedder shipped with Tier 2, or None while ``pytest_skilleval.tier2.embedders``
    does not provide one. Tier 2 fills this in by defining ``default_embedder()`` in that package."""
    try:
        module = importlib.import_module("pytest_skilleval.tier2.embedders")
    except ImportError:
        return None
    factory = getattr(module, "default_embedder", None)
    return factory() if callable(factory) else None


# -- per-process wiring: settings registered by the pytest plugin, built providers memoised --------

_LOCK = threading.RLock()  # re-entrant: building a provider memoises its cache under the same lock
_BUILT: dict[tuple[Any, ...], Any] = {}
_REGISTERED: dict[int, tuple[weakref.ref[Any], ProviderSettings]] = {}


def register(settings: Settings, ps: ProviderSettings) -> None:
    """Tie the run's ``Settings`` object to its provider settings, for :func:`chat_from_settings`."""
    with _LOCK:
        _REGISTERED[id(settings)] = (weakref.ref(settings), ps)


def unregister(settings: Settings) -> None:
    with _LOCK:
        _REGISTERED.pop(id(settings), None)


def provider_settings(settings: Settings | ProviderSettings | None) -> ProviderSettings:
    """The registered provider settings of a pytest run; outside one, the environment's."""
    if isinstance(settings, ProviderSettings):
        return settings
    if settings is not None:
        with _LOCK:
            ref, ps = _REGISTERED.get(id(settings), (None, None))
        if ref is not None and ref() is settings and ps is not None:
            return ps
    return ProviderSettings.from_env(cache_root=getattr(settings, "cache_dir", None))


def _memo(key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    with _LOCK:
        if key not in _BUILT:
            _BUILT[key] = make()
        return _BUILT[key]


def provider_cache(ps: ProviderSettings) -> ProviderCache:
    from pytest_skilleval.providers.cache import ProviderCache

    return _memo(("cache", ps.cache_dir, ps.cache), lambda: ProviderCache(ps.cache_dir, ps.cache))  # type: ignore[no-any-return]


def chat_from_settings(settings: Settings | ProviderSettings | None = None) -> ChatProvider | None:
    """The run's chat provider with the cache in front, or None when none is configured.

    For code without fixtures (check items). Raises ``ProviderError('config')`` when the setup is
    ambiguous or incomplete; callers turn that, like any ProviderError, into an ERROR result.
    """
    ps = provider_settings(settings)
    target = chat_target(ps)
    if target is None:
        return None
    from pytest_skilleval.providers.cache import CachedChat

    return _memo(("chat", ps, target), lambda: CachedChat(build_chat(target, ps), provider_cache(ps)))  # type: ignore[no-any-return]


def embedder_from_settings(settings: Settings | ProviderSettings | None = None) -> Embedder | None:
    """The run's embedder: a remote one behind the cache, else :func:`default_embedder` (maybe None)."""
    ps = provider_settings(settings)
    target = embedding_target(ps)
    if target is None:
        return None
    if isinstance(target, str):
        return default_embedder()
    from pytest_skilleval.providers.cache import CachedEmbedder

    return _memo(("embed", ps, target), lambda: CachedEmbedder(build_embedder(target, ps), provider_cache(ps)))  # type: ignore[no-any-return]


def describe(ps: ProviderSettings, env: Mapping[str, str] | None = None) -> str:
    """One header line: what chat and embeddings will use. Never shows a key."""
    env = Env(os.environ if env is None else env)
    try:
        chat = chat_target(ps, env)
        chat_text = f"{chat.provider}:{chat.model}" if chat else "none"
    except ProviderError as exc:
        chat_text = f"not usable ({exc.detail.split(':')[0]})"
    try:
        emb = embedding_target(ps, env)
        emb_text = "none" if emb is None else emb if isinstance(emb, str) else f"{emb.provider}:{emb.model}"
    except ProviderError:
        emb_text = "not usable"
    return f"skilleval providers: chat={chat_text} embeddings={emb_text} cache={ps.cache}"
