"""``secrets``: the rules of the check that need no scanner, each at its exact boundary.

The line a finding points at, the cut of a secret out of gitleaks' redacted report, the whole token
behind detect-secrets' prefix, the masked evidence and its 120-character window, the private-key body
rules (64 characters, 20 distinct ones, the 20,000-character and 200-line reading window), and the
1,000-character bound on allow-list line patterns. The gitleaks items below have the shape gitleaks
8.30 writes with ``--redact`` (1-based columns on line 1, one further right on later lines).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_skilleval.tier1 import secrets
from pytest_skilleval.tier1.secrets import REDACTED, _evidence, _expand, _gitleaks_value, _line, private_keys

PAT = "ghp_R7kT2mQ9vX4bN8cL1pW6zD3fH5jS0yA2eU7i"
BODY_LINE = "MIIEowIBAAKCAQEAv3Lq8Yk2Qm7Xz9Pb4Nc1Wd6Fe0Ga5Hb8Ic3Jd7Ke2Lf9Mg4Nh1Oi6Pj0Qk5Rl"  # 80 characters


def test_line_numbers_outside_the_text_give_no_line() -> None:
    text = "first\r\nsecond\nthird"
    assert [_line(text, n) for n in (1, 2, 3)] == ["first", "second", "third"]  # a CRLF's \r is dropped
    assert _line(text, 0) == "" and _line(text, 4) == "" and _line(text, -1) == ""  # never a wrapped-around line


def _item(line: int, start: int, end: int, match: str, end_line: int | None = None) -> dict[str, Any]:
    return {"StartLine": line, "EndLine": line if end_line is None else end_line, "StartColumn": start,
            "EndColumn": end, "Match": match, "RuleID": "test"}


@pytest.mark.parametrize("prefix", ["", "G", "GH", "GH=", "A_GH="])  # every start column mod 4
@pytest.mark.parametrize("line", [1, 2])
def test_the_secret_is_cut_at_gitleaks_columns(prefix: str, line: int) -> None:
    text = "\n" * (line - 1) + f"{prefix}{PAT} # deploy\n"
    shift = 1 if line == 1 else 2  # how gitleaks 8.30 numbers columns
    start = len(prefix) + shift
    assert _gitleaks_value(text, _item(line, start, start + len(PAT) - 1, "REDACTED")) == PAT


@pytest.mark.parametrize("secret", ["x", "xy", "xyz"])  # odd and even lengths of the cut
@pytest.mark.parametrize("line", [1, 3])
def test_the_redacted_match_around_the_secret_is_checked_and_cut_off(secret: str, line: int) -> None:
    text = "\n" * (line - 1) + f'  k="{secret}" tail\n'
    shift = 1 if line == 1 else 2
    start = 2 + shift  # k= starts after two spaces
    item = _item(line, start, start + len(secret) + 3, 'k="REDACTED"')
    assert _gitleaks_value(text, item) == secret


@pytest.mark.parametrize("line", [1, 2])
def test_columns_one_off_in_either_direction_are_corrected_by_the_match(line: int) -> None:
    text = "\n" * (line - 1) + 'ab k="Zq8Xw2" tail\n'
    for start in (4, 5):  # line 1's numbering and the later lines': one of the two shifts reproduces the match
        assert _gitleaks_value(text, _item(line, start, start + 9, 'k="REDACTED"')) == "Zq8Xw2", start


def test_a_cut_that_does_not_reproduce_the_match_is_refused() -> None:
    text = 'k="" and q="Zq8Xw2"\n'
    assert _gitleaks_value(text, _item(1, 1, 4, 'k="REDACTED"')) is None  # an empty secret between the quotes
    assert _gitleaks_value(text, _item(1, 1, 2, "k=REDACTED")) is None
    assert _gitleaks_value(text, _item(1, 13, 19, 'k="REDACTED"')) is None  # the columns hold another text
    assert _gitleaks_value('k="\n', _item(1, 1, 3, 'k="REDACTED"')) is None  # shorter than the match around it


@pytest.mark.parametrize("item", [
    _item(1, 4, 43, "REDACTED", end_line=2),  # a finding over two lines
    _item(2, 3, 42, "REDACTED", end_line=1),
    {**_item(1, 4, 43, "REDACTED"), "StartLine": "1", "EndLine": "1"},
    _item(1, 4, 43, "GH="),  # no REDACTED in the match
    _item(1, 4, 43, "REDACTED REDACTED"),
])
def test_findings_that_cannot_be_cut_out_have_no_value(item: dict[str, Any]) -> None:
    assert _gitleaks_value(f"GH={PAT}\n{PAT}\n", item) is None


def test_a_token_prefix_is_expanded_to_every_whole_token() -> None:
    assert _expand(f"{PAT} rest", "ghp") == [PAT]  # at the start of the line
    assert _expand(f"export GH={PAT}", "ghp") == [PAT]
    assert _expand(f"GH={PAT}", PAT) == [PAT]
    assert _expand(f"A={PAT} B=ghp_2 C={PAT}", "ghp") == [PAT, "ghp_2"]  # each token once, in line order
    assert _expand(f"A={PAT} B={PAT[:-1]}", PAT) == [PAT]  # a shorter text is no occurrence
    assert _expand("ghpghp", "ghp") == ["ghpghp"]
    assert _expand("GH=abc", "ghp") == ["ghp"]  # not on the line: kept as reported
    assert _expand("x", "ghp") == ["ghp"] and _expand("", "g") == ["g"]


def test_evidence_masks_every_secret_and_keeps_the_rest() -> None:
    assert _evidence(f"  GH={PAT} # deploy  ", [PAT]) == f"GH={REDACTED} # deploy"
    assert _evidence(f"{PAT} rest", [PAT]) == f"{REDACTED} rest"  # a secret at the start of the line
    assert _evidence("a=abc b=abcdef", ["abc", "abcdef"]) == f"a={REDACTED} b={REDACTED}"  # longest first
    assert _evidence("a=abcdef b=abc", ["abcdef", "abc"]) == f"a={REDACTED} b={REDACTED}"
    assert _evidence("nothing to mask here", ["zzz"]) == REDACTED  # never the unmasked line


@pytest.mark.parametrize(("before", "after", "expected"), [
    (60, 0, "x" * 60 + REDACTED),  # the mask 60 characters in: the line is shown from its start
    (61, 0, "…" + "x" * 60 + REDACTED),
    (0, 110, REDACTED + "y" * 110),  # exactly 120 characters: all of it, no ellipsis
    (0, 111, REDACTED + "y" * 110 + "…"),
    (61, 50, "…" + "x" * 60 + REDACTED + "y" * 50),  # 120 characters from the cut: no ellipsis at the end
    (61, 51, "…" + "x" * 60 + REDACTED + "y" * 50 + "…"),
    (62, 52, "…" + "x" * 60 + REDACTED + "y" * 50 + "…"),
    (68, 50, "…" + "x" * 60 + REDACTED + "y" * 50),  # a cut at 8: bit patterns of the offsets matter too
    (68, 51, "…" + "x" * 60 + REDACTED + "y" * 50 + "…"),
])
def test_evidence_is_cut_to_120_characters_around_the_first_mask(before: int, after: int, expected: str) -> None:
    assert _evidence("x" * before + PAT + "y" * after, [PAT]) == expected


def _key(body: str, before: str = "", gap: str = "\n") -> str:
    return f"{before}-----BEGIN PRIVATE KEY-----{gap}{body}\n-----END PRIVATE KEY-----\n"


TWENTY = "ABCDEFGHIJKLMNOPQRST"  # 20 distinct characters, no run of 8, no "example"


def test_a_key_body_needs_64_characters() -> None:
    assert list(private_keys(_key((TWENTY * 4)[:64]))) == [(1, "PRIVATE KEY")]
    assert list(private_keys(_key((TWENTY * 4)[:63]))) == []


def test_a_key_body_needs_20_distinct_characters() -> None:
    assert list(private_keys(_key((TWENTY * 4)[:80]))) == [(1, "PRIVATE KEY")]
    assert list(private_keys(_key((TWENTY[:19] * 5)[:80]))) == []


def test_a_key_body_with_a_placeholder_run_is_not_a_key() -> None:
    assert list(private_keys(_key(BODY_LINE + "aaaaaaaa"))) == []
    assert list(private_keys(_key(BODY_LINE + "aaaaaaa"))) == [(1, "PRIVATE KEY")]


def test_the_key_line_counts_a_blank_first_line() -> None:
    assert list(private_keys(_key(BODY_LINE, before="\n"))) == [(2, "PRIVATE KEY")]
    assert list(private_keys(_key(BODY_LINE, before="a\n\nb\n"))) == [(4, "PRIVATE KEY")]


def test_the_body_ends_at_the_first_line_that_is_not_base64() -> None:
    # a placeholder block followed by base64 data: the data is not the block's body
    doc = _key("MIIE...") + BODY_LINE + "\n"
    assert list(private_keys(doc)) == []
    assert list(private_keys(_key("MIIEowIBAAKCAQEA\n" + BODY_LINE))) == [(1, "PRIVATE KEY")]  # a body over lines


@pytest.mark.parametrize(("blank_lines", "found"), [(199, True), (200, False)])
def test_the_body_is_looked_for_in_the_200_lines_after_the_header(blank_lines: int, found: bool) -> None:
    assert bool(list(private_keys(_key(BODY_LINE, gap="\n" * blank_lines)))) is found


@pytest.mark.parametrize(("in_window", "found"), [(64, True), (63, False)])
def test_the_body_is_looked_for_in_the_20000_characters_after_the_header(in_window: int, found: bool) -> None:
    # a header line (skipped) fills the window but for `in_window` characters of the 80-character body
    header = "Comment: " + "a" * (20000 - 2 - in_window - len("Comment: "))
    # the header ends at 33, which shares a bit with 20,000: the window is an offset from it, not a bit pattern
    assert bool(list(private_keys(_key(BODY_LINE, before="intro\n", gap=f"\n{header}\n")))) is found


@pytest.mark.parametrize(("length", "allowed"), [(40, True), (1000, True), (1001, False)])
def test_allow_list_line_patterns_read_lines_of_at_most_1000_characters(length: int, allowed: bool) -> None:
    line = "md5: e8c77cea2712a6e3883c49b063ebc816".ljust(length, " ")
    found = secrets.rules().placeholder("e8c77cea2712a6e3883c49b063ebc816", "hex-high-entropy-string", line)
    assert (found == "digest") is allowed
    assert secrets.rules().placeholder("e8c77cea2712a6e3883c49b063ebc816", "hex-high-entropy-string", "a: b") is None


def test_detect_secrets_settings_come_from_the_rules_file() -> None:
    r = secrets.rules()
    assert r.ds_plugins == ("IPPublicDetector",)
    assert "detect_secrets.filters.allowlist.is_line_allowlisted" in r.ds_filters
    assert r.detector("AWS Access Key") == "aws-access-token" and r.detector("GitHub Token") == "github-token"
