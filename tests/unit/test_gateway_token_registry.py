"""The token registry and the credential extraction on their own: which secret is accepted, for
whom, and after revocation; where each SDK puts its key. (End to end through the gateway, with a
real agent process: tests/integration/test_gateway_tokens.py.)"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_skilleval.gateway.tokens import TOKEN_PREFIX, TokenRegistry, presented_secret


def test_an_issued_token_resolves_to_its_owner_and_only_it() -> None:
    registry: TokenRegistry[str] = TokenRegistry()
    first, second = registry.issue("trial-1"), registry.issue("trial-2")
    assert first.secret.startswith(TOKEN_PREFIX) and first.id.startswith("tok_")
    assert first.secret != second.secret and first.id != second.id
    assert registry.resolve(first.secret) == (first.id, "trial-1")
    assert registry.resolve(second.secret) == (second.id, "trial-2")
    assert registry.resolve(first.secret + "x") is None  # a near guess is not a token
    assert registry.resolve(first.secret[:-1]) is None
    assert registry.resolve("") is None and registry.resolve(None) is None


def test_a_secret_is_long_and_random_enough_to_be_unguessable() -> None:
    registry: TokenRegistry[int] = TokenRegistry()
    secrets = {registry.issue(n).secret for n in range(50)}
    assert len(secrets) == 50
    assert all(len(s) >= len(TOKEN_PREFIX) + 43 for s in secrets)  # at least 32 random bytes (256 bits), URL-safe base64


def test_a_revoked_token_no_longer_resolves_and_is_known_as_revoked() -> None:
    registry: TokenRegistry[str] = TokenRegistry()
    token, other = registry.issue("trial-1"), registry.issue("trial-2")
    assert not registry.is_revoked(token.secret)
    registry.revoke(token)
    assert registry.resolve(token.secret) is None
    assert registry.is_revoked(token.secret)
    assert registry.resolve(other.secret) == (other.id, "trial-2")  # revoking one leaves the others live
    assert not registry.is_revoked(other.secret)
    assert registry.is_revoked(None) is False and registry.is_revoked("") is False
    assert not registry.is_revoked("sk-skilleval-never-issued")


def test_an_issued_token_cannot_be_altered() -> None:
    token = TokenRegistry[str]().issue("trial-1")
    with pytest.raises(dataclasses.FrozenInstanceError):
        token.secret = "sk-skilleval-chosen-by-someone-else"  # type: ignore[misc]


def test_the_registry_keeps_no_secret_in_clear() -> None:
    registry: TokenRegistry[str] = TokenRegistry()
    token = registry.issue("trial-1")
    registry.revoke(registry.issue("trial-2"))
    assert token.secret not in repr(token)
    assert not any(token.secret in repr(v) for v in vars(registry).values())


@pytest.mark.parametrize(("headers", "query", "expected"), [
    ({"authorization": "Bearer sk-abc "}, {}, "sk-abc"),
    ({"authorization": "bearer sk-abc"}, {}, "sk-abc"),  # the scheme is case-insensitive
    ({"authorization": "Basic dXNlcjpwdw=="}, {}, None),  # not a bearer token: not a credential we issue
    ({"x-api-key": " sk-anthropic "}, {}, "sk-anthropic"),
    ({"x-goog-api-key": "sk-gemini"}, {}, "sk-gemini"),
    ({"api-key": "sk-azure"}, {}, "sk-azure"),
    ({"x-api-key": ""}, {"key": "sk-query"}, "sk-query"),  # an empty header does not hide the query key
    ({}, {"key": "sk-query"}, "sk-query"),
    ({}, {"key": ""}, None),
    ({}, {}, None),
    ({"authorization": "Bearer sk-bearer", "x-api-key": "sk-header"}, {"key": "sk-query"}, "sk-bearer"),
    ({"x-api-key": "sk-first", "x-goog-api-key": "sk-second"}, {}, "sk-first"),
])
def test_the_presented_secret_is_found_wherever_the_sdk_puts_it(headers: dict[str, str], query: dict[str, str],
                                                                 expected: str | None) -> None:
    assert presented_secret(headers, query) == expected
