"""Provider options, ini keys and environment variables, read into one frozen :class:`ProviderSettings`.

Same conventions and precedence as :mod:`pytest_skilleval.config` (command line > ini > environment >
default), kept here rather than in ``Settings`` so the provider layer owns its knobs. API keys are
deliberately *not* options: a key on a command line shows in process lists and CI logs, and one in
an ini file ends up in a repository. Keys are read from the environment only, when a provider is
built (see :mod:`pytest_skilleval.providers.select`), and are never stored in these settings.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval.config import Option
from pytest_skilleval.providers.errors import ProviderError

CHAT_PROVIDERS = ("openai", "anthropic", "nvidia", "bedrock", "openai-compatible")
EMBEDDING_PROVIDERS = ("openai", "nvidia", "openai-compatible", "offline")
CACHE_MODES = ("off", "read", "readwrite")

OPTIONS = (
    Option("skilleval_provider", "--skilleval-provider", "SKILLEVAL_PROVIDER", None,
           f"Chat provider for judges and classifiers: {', '.join(CHAT_PROVIDERS)}, or 'none'. Default: auto-selected "
           "when exactly one of OPENAI_API_KEY, ANTHROPIC_API_KEY, NVIDIA_API_KEY is set."),
    Option("skilleval_model", "--skilleval-model", "SKILLEVAL_MODEL", None, "Chat model (default: the provider's default)."),
    Option("skilleval_base_url", "--skilleval-base-url", "SKILLEVAL_BASE_URL", None,
           "Chat endpoint base URL (required for openai-compatible; overrides a provider's default)."),
    Option("skilleval_embedding_provider", "--skilleval-embedding-provider", "SKILLEVAL_EMBEDDING_PROVIDER", None,
           f"Embeddings: {', '.join(EMBEDDING_PROVIDERS)}, or 'none'. Default: the chat provider when it has an "
           "embeddings API, else the offline embedder."),
    Option("skilleval_embedding_model", "--skilleval-embedding-model", "SKILLEVAL_EMBEDDING_MODEL", None,
           "Embedding model (default: the embedding provider's default)."),
    Option("skilleval_embedding_base_url", "--skilleval-embedding-base-url", "SKILLEVAL_EMBEDDING_BASE_URL", None,
           "Embeddings endpoint base URL (default: the chat base URL when the provider is the same)."),
    Option("skilleval_cache", "--skilleval-cache", "SKILLEVAL_CACHE", "readwrite",
           "Model-call cache: off, read (use entries, never write), readwrite (default)."),
    Option("skilleval_provider_timeout", "--skilleval-provider-timeout", "SKILLEVAL_PROVIDER_TIMEOUT", 120.0,
           "Seconds one model request may take before it is retried.", "float"),
    Option("skilleval_provider_retries", "--skilleval-provider-retries", "SKILLEVAL_PROVIDER_RETRIES", 4,
           "Retries of a timed-out, rate-limited (429), failed (5xx) or dropped model request.", "int"),
)


class Secret(str):
    """An API key: a plain ``str`` to the SDKs, masked in ``repr``. pytest prints the arguments of every
    frame in a failure's traceback, so a key passed as an argument would otherwise land in CI logs."""

    def __repr__(self) -> str:
        return "'***'"


class Env(Mapping[str, str]):
    """The environment as provider resolution sees it: key-like values come back as :class:`Secret`,
    and the mapping's own ``repr`` lists nothing (it may be shown in a traceback, like any argument)."""

    def __init__(self, data: Mapping[str, str]) -> None:
        self._data: Mapping[str, str] = data._data if isinstance(data, Env) else data

    def __getitem__(self, name: str) -> str:
        value = self._data[name]
        return Secret(value) if any(w in name.upper() for w in ("KEY", "TOKEN", "SECRET")) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)

    def __repr__(self) -> str:
        return f"<environment: {len(self._data)} variables>"


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("skilleval", "skill evaluation (pytest-skilleval)")
    for opt in OPTIONS:
        group.addoption(opt.flag, action="store", default=None, dest=opt.name, metavar="VALUE", help=opt.help)
        parser.addini(opt.name, opt.help, type="string", default=None)


@dataclass(frozen=True)
class ProviderSettings:
    provider: str | None = None  # None: auto-select from the keys present; "none": no chat provider
    model: str | None = None
    base_url: str | None = None
    embedding_provider: str | None = None
    embedding_model: str | None = None
    embedding_base_url: str | None = None
    cache: str = "readwrite"
    cache_dir: Path | None = None  # the providers' own folder, ``Settings.cache_dir / "providers"``
    timeout: float = 120.0
    retries: int = 4

    def __post_init__(self) -> None:
        for label, value, allowed in (("--skilleval-provider", self.provider, (*CHAT_PROVIDERS, "none")),
                                      ("--skilleval-embedding-provider", self.embedding_provider, (*EMBEDDING_PROVIDERS, "none")),
                                      ("--skilleval-cache", self.cache, CACHE_MODES)):
            if value is not None and value not in allowed:
                raise ProviderError("settings", "config", f"{label}: unknown value {value!r} (expected one of: {', '.join(allowed)})")
        if not self.timeout > 0:
            raise ProviderError("settings", "config", "--skilleval-provider-timeout must be positive")
        if self.retries < 0:
            raise ProviderError("settings", "config", "--skilleval-provider-retries must be 0 or more")

    @classmethod
    def from_values(cls, values: Mapping[str, object], cache_root: Path | None) -> ProviderSettings:
        def text(name: str) -> str | None:
            value = values.get(name)
            return str(value).strip() or None if value is not None else None

        def lower(name: str) -> str | None:
            value = text(name)
            return value.lower() if value else None

        def number(name: str, kind: type[float] | type[int], default: float) -> float:
            value = values.get(name)
            if value is None or value == "":
                return default
            try:
                return kind(str(value))
            except (TypeError, ValueError):
                raise ProviderError("settings", "config", f"--{name.replace('_', '-')}: expected a number, got {value!r}") from None

        return cls(provider=lower("skilleval_provider"), model=text("skilleval_model"), base_url=text("skilleval_base_url"),
                   embedding_provider=lower("skilleval_embedding_provider"), embedding_model=text("skilleval_embedding_model"),
                   embedding_base_url=text("skilleval_embedding_base_url"), cache=lower("skilleval_cache") or "readwrite",
                   cache_dir=cache_root / "providers" if cache_root is not None else None,
                   timeout=number("skilleval_provider_timeout", float, 120.0),
                   retries=int(number("skilleval_provider_retries", int, 4)))

    @classmethod
    def from_config(cls, config: pytest.Config, cache_root: Path | None) -> ProviderSettings:
        """From options, ini and environment; a bad value is a usage error, shown without a traceback."""
        try:
            values = {opt.name: config_mod.value(config, opt) for opt in OPTIONS}
            return cls.from_values(values, cache_root)
        except ProviderError as exc:
            raise pytest.UsageError(exc.detail) from None

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, cache_root: Path | None = None) -> ProviderSettings:
        """Outside pytest (scripts, benchmarks): the environment variables alone."""
        env = os.environ if env is None else env
        return cls.from_values({opt.name: env.get(opt.env or "") or None for opt in OPTIONS}, cache_root)
