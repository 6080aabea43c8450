"""identity.py: the one escape of a skill folder's path where it names the skill (key, node ids, card folder)."""

from __future__ import annotations

import random

import pytest

from pytest_skilleval import identity
from pytest_skilleval.results import encodable


@pytest.mark.parametrize("name", ["pdf", "skills/pdf", "a b/ü-ñ", "semver-bump", "x::y", "", "udcff", "u/d"])
def test_a_name_without_backslash_or_surrogate_is_written_as_it_is(name: str) -> None:
    assert identity.escape(name) is name and not identity.needs_escape(name)
    assert identity.unescape(name) == name


@pytest.mark.parametrize(("name", "written"), [
    ("\udcff", "\\udcff"),  # the byte 0xff: as results.encodable writes it, as keys were written before
    ("victim-\udcff", "victim-\\udcff"),
    ("group-\udcfe/nested-skill", "group-\\udcfe/nested-skill"),
    ("\\udcff", "\\\\udcff"),  # six ASCII characters: no longer the byte's key
    ("a\\b", "a\\\\b"),
    ("\\\udcff", "\\\\\\udcff"),
    ("\ud800\udfff", "\\ud800\\udfff"),
])
def test_backslashes_are_doubled_and_surrogates_escaped(name: str, written: str) -> None:
    assert identity.needs_escape(name)
    assert identity.escape(name) == written
    assert identity.unescape(written) == name
    written.encode("utf-8")


def test_a_name_with_surrogates_and_no_backslash_is_what_encodable_wrote() -> None:
    """Keys and node ids of the folders 11af70f made work are unchanged."""
    for name in ("victim-\udcff", "group-\udcfe/nested-skill", "\udc80x\udcff"):
        assert identity.escape(name) == encodable(name)


def test_the_escape_is_injective_and_unescape_its_inverse() -> None:
    """Over 20,000 random names from the characters that matter (backslash, the letters of an escape, surrogates,
    a separator): two names never share an escape, and each escape reads back to its name."""
    alphabet = ["\\", "u", "d", "c", "f", "8", "/", "\udcff", "\udcfe", "\ud800", "x"]
    rng = random.Random(11)
    names = {"".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8))) for _ in range(20_000)}
    escaped = {identity.escape(n): n for n in names}
    assert len(escaped) == len(names)
    for written, name in escaped.items():
        assert identity.unescape(written) == name
        written.encode("utf-8")
