"""``scan_text`` of the unicode check, message by message: columns, counts, evidence, decoded payloads
and boundaries a reader of a finding relies on. (The check's verdicts on skills: test_check_unicode.py.)"""

from __future__ import annotations

import pytest

from pytest_skilleval.results import Finding, Severity
from pytest_skilleval.tier1 import unicode as unicode_check
from pytest_skilleval.tier1.unicode import Zones, scan_text

ZWSP, ZWJ = "\u200b", "\u200d"


def one(findings: list[Finding], rule: str) -> Finding:
    found = [f for f in findings if f.rule == rule]
    assert len(found) == 1, findings
    return found[0]


def hide(text: str) -> str:
    return "".join(chr(0xE0000 + ord(c)) for c in text)


def selectors(data: bytes) -> str:
    """Bytes hidden as variation selectors: VS1-16 carry 0-15, VS17-256 carry 16-255."""
    return "".join(chr(0xFE00 + b) if b < 16 else chr(0xE0100 + b - 16) for b in data)


def test_counts_columns_and_evidence_of_invisible_characters() -> None:
    line = "abc" + ZWSP + "de" + ZWSP + "f" + ZWSP + "g"
    findings, _ = scan_text("notes.md", line + "\n")
    found = one(findings, "unicode.zero-width")
    assert found.message == "3 zero-width characters from column 4: U+200B ZERO WIDTH SPACE x3"
    assert found.severity is Severity.MEDIUM and found.line == 1
    assert found.evidence == "abc<U+200B>de<U+200B>f<U+200B>g"  # from the start of the line, nothing dropped
    findings, _ = scan_text("notes.md", "x" * 30 + ZWSP + "t" * 50 + "\n")
    found = one(findings, "unicode.zero-width")
    assert found.message == "1 zero-width character from column 31: U+200B ZERO WIDTH SPACE"
    assert found.evidence == "x" * 20 + "<U+200B>" + "t" * 39  # 20 characters before, 40 from the character on


def test_many_distinct_invisible_characters_name_the_first_four() -> None:
    six = "\u034f\u180e\u200b\u200c\u2060\ufeff"  # six distinct zero-width characters, apart
    findings, _ = scan_text("notes.md", "a" + "b".join(six) + "c\n")
    assert one(findings, "unicode.zero-width").message.endswith("U+200C ZERO WIDTH NON-JOINER and 2 more distinct")
    findings, _ = scan_text("notes.md", "a\u2061b\u2062c\u2063d\u2064e\n")
    assert one(findings, "unicode.invisible-operator").message.endswith("U+2064 INVISIBLE PLUS")  # exactly four: all named
    findings, _ = scan_text("notes.md", "a\u2061b\n")
    assert one(findings, "unicode.invisible-operator").message.endswith("U+2061 FUNCTION APPLICATION")


def test_a_run_names_its_column_and_its_context() -> None:
    findings, _ = scan_text("notes.md", "y" * 25 + ZWSP * 12 + "end" + "z" * 30 + "\n")
    found = one(findings, "unicode.invisible-run")
    assert found.message.startswith("run of 12 invisible characters at column 26 (U+200B ZERO WIDTH SPACE x12)")
    assert found.evidence == "y" * 20 + "<U+200B>" * 12 + "end" + "z" * 17  # 20 characters of context after


def test_bytes_hidden_in_variation_selectors_are_decoded_from_four_on() -> None:
    findings, _ = scan_text("notes.md", "x" + selectors(b"\x00\x01rm -rf\x00\x00") + "\n")  # ten selectors: a run
    assert 'as variation-selector bytes it reads "\\x00\\x01rm -rf\\x00\\x00"' in one(findings, "unicode.invisible-run").message
    findings, _ = scan_text("notes.md", "x" + selectors(b"abcd") + ZWSP * 6 + "\n")  # four bytes: shown
    assert one(findings, "unicode.invisible-run").message.endswith('as variation-selector bytes it reads "abcd"')
    findings, _ = scan_text("notes.md", "x" + selectors(b"abc") + ZWSP * 7 + "\n")  # three: too few to mean anything
    assert "variation-selector bytes" not in one(findings, "unicode.invisible-run").message


def test_tag_payload_keeps_a_tilde_and_drops_the_cancel_tag() -> None:
    findings, _ = scan_text("notes.md", "Read me" + hide("a~b") + "\U000e007f\n")
    found = one(findings, "unicode.tag-chars")
    assert found.message.endswith('hidden text "a~b"') and found.evidence == "payload: a~b"
    findings, _ = scan_text("notes.md", "lang\U000e0001 tag\n")  # a tag with no text in it: the context is shown
    found = one(findings, "unicode.tag-chars")
    assert found.message == "1 Unicode tag characters at column 5" and found.evidence == "lang<U+E0001> tag"


def test_other_invisibles_inside_a_tag_run_are_reported_at_their_own_column() -> None:
    findings, _ = scan_text("notes.md", "abc" + hide("xy") + ZWSP + "\n")
    assert one(findings, "unicode.zero-width").message.startswith("1 zero-width character from column 6:")


def test_a_joiner_at_the_end_of_a_long_line_is_judged_not_a_crash() -> None:
    findings, _ = scan_text("notes.md", "w" * 300 + ZWJ + "\n")
    assert one(findings, "unicode.zero-width").severity is Severity.LOW


def test_a_spoofed_bare_host_before_a_spoofed_url_is_reported_too() -> None:
    findings, _ = scan_text("notes.md", "see \u0430pple.com and https://g\u043e\u043egle.com/x\n")
    hosts = sorted(f.evidence for f in findings if f.rule == "unicode.mixed-script-host")
    assert hosts == ["<U+0430>pple.com", "g<U+043E><U+043E>gle.com"]


def rules_of(text: str, rel: str = "notes.md") -> list[str]:
    return [f.rule for f in scan_text(rel, text)[0]]


def test_a_left_to_right_mark_is_a_bidi_control_not_a_zero_width_character() -> None:
    assert rules_of("abc\u200edef\n") == ["unicode.bidi-control"]  # U+200E follows the zero-width range U+200B-200D
    assert rules_of("a\u202e\u202db\n") == ["unicode.bidi-control"]  # a bidi run is no tag text


@pytest.mark.parametrize("text", ["\u4e2d\u200d\u6587", "\U0001f600\u200dx", "x\u200d\U0001f600",
                                  "\u200d\U0001f600 x \U0001f600", "\ufe0fabc"])
def test_a_joiner_or_selector_outside_an_emoji_sequence_is_flagged(text: str) -> None:
    assert rules_of(text + "\n"), text


def test_an_emoji_presentation_selector_right_after_an_emoji_is_ordinary() -> None:
    findings, legit = scan_text("notes.md", "\U0001f600\ufe0f ok\n")
    assert findings == [] and legit["variation_selector"] == 1


def test_a_run_mixing_selectors_and_other_invisibles_decodes_only_the_selectors() -> None:
    findings, _ = scan_text("notes.md", "x" + selectors(b"abcde") + "\u200e" * 5 + "\n")
    assert 'reads "abcde"' in one(findings, "unicode.invisible-run").message


def test_evidence_is_capped_at_200_characters() -> None:
    findings, _ = scan_text("notes.md", "x" + ZWSP * 45 + "\n")
    found = one(findings, "unicode.invisible-run")
    assert len(found.evidence or "") == 200 and found.severity is Severity.CRITICAL


def test_a_run_is_critical_from_forty_characters_on() -> None:
    for length, severity in ((39, Severity.HIGH), (40, Severity.CRITICAL), (41, Severity.CRITICAL)):
        findings, _ = scan_text("notes.md", "x" + ZWSP * length + "\n")
        assert one(findings, "unicode.invisible-run").severity is severity, length


def test_every_run_on_a_line_is_judged_after_a_tag_run_a_long_run_a_bom_or_a_joiner() -> None:
    assert sorted(rules_of("a" + hide("xy") + " b" + ZWSP + "c\n")) == ["unicode.tag-chars", "unicode.zero-width"]
    assert sorted(rules_of("a" + ZWSP * 12 + " b\u202ec\n")) == ["unicode.bidi-control", "unicode.invisible-run"]
    assert sorted(rules_of("\ufeffabc" + ZWSP + "def\n")) == ["unicode.bom", "unicode.zero-width"]
    assert rules_of("\U0001f600\u200d\U0001f600 then x" + ZWSP + "y\n") == ["unicode.zero-width"]


def test_a_bom_is_the_file_start_only_and_names_the_manifest() -> None:
    assert rules_of("abc\ufeff\n") == ["unicode.zero-width"]  # line 1, but not the first character
    findings, _ = scan_text("SKILL.md", "\ufeff---\n")
    assert one(findings, "unicode.bom").message.endswith("(the frontmatter check reports its effect on SKILL.md)")
    findings, _ = scan_text("notes.md", "\ufeff# notes\n")
    assert one(findings, "unicode.bom").message == "byte-order mark U+FEFF at the start of the file"
    findings, _ = scan_text("notes.md", "\ufeff" + ZWSP + "x\n")
    assert one(findings, "unicode.zero-width").message.startswith("1 zero-width character from column 2:")


def test_a_tag_run_names_its_column() -> None:
    findings, _ = scan_text("notes.md", "abcde" + hide("go") + "\n")
    assert one(findings, "unicode.tag-chars").message.startswith("2 Unicode tag characters at column 6:")


@pytest.mark.parametrize("text", [hide("gbeng") + "\U000e007f and a flag at the end \U0001f3f4",
                                  "\U0001f600" + hide("gbeng") + "\U000e007f", "a" + hide("gbeng") + "\U000e007f"])
def test_flag_shaped_tags_not_right_after_a_black_flag_are_hidden_text(text: str) -> None:
    findings, _ = scan_text("notes.md", text + "\n")
    assert one(findings, "unicode.tag-chars").severity is Severity.CRITICAL


def test_a_bidi_control_in_code_is_high_without_an_upgrade_note() -> None:
    findings, _ = scan_text("notes.md", "a\u202eb\n", Zones(whole="a script or data file"))
    found = one(findings, "unicode.bidi-control")
    assert found.severity is Severity.HIGH and "inside" not in found.message


def test_hosts_and_words_after_a_covered_host_are_still_judged() -> None:
    findings, _ = scan_text("notes.md", "https://g\u043e\u043egle.com/x and \u0430pple.com\n")
    assert sorted(f.evidence for f in findings if f.rule == "unicode.mixed-script-host") == ["<U+0430>pple.com", "g<U+043E><U+043E>gle.com"]
    findings, _ = scan_text("notes.md", "https://g\u043e\u043egle.com/ then p\u0430yp\u0430l\n")
    assert sorted(f.rule for f in findings) == ["unicode.mixed-script-host", "unicode.mixed-script-word"]


def test_code_block_and_frontmatter_zones_end_where_they_end(make_skill) -> None:  # type: ignore[no-untyped-def]
    from conftest import manifest

    notes = "# T\nbefore" + ZWSP + "\n\n```sh\nrm -rf ./b" + ZWSP + "uild\n```\nprose" + ZWSP + " after\n"
    skill = make_skill({"SKILL.md": manifest(extra="license: M" + ZWSP + "IT\n", body="Body" + ZWSP + " text\n"),
                        "references/notes.md": notes, "A.md": "first\nsecond" + ZWSP + "\n"})
    expected = {"references/notes.md": {2: Severity.LOW, 5: Severity.HIGH, 7: Severity.LOW},
                "SKILL.md": {4: Severity.HIGH, 6: Severity.LOW},
                "A.md": {2: Severity.LOW}}  # sorts before SKILL.md, has no frontmatter
    for rel, by_line in expected.items():
        findings, _ = scan_text(rel, (skill.root / rel).read_text(), Zones.of(skill, rel))
        assert {f.line: f.severity for f in findings} == by_line, (rel, findings)


def test_a_joiner_needs_a_joining_script_on_both_sides() -> None:
    assert rules_of("a\u200d\u0628\n") == ["unicode.zero-width"]  # Latin, then Arabic
    assert rules_of("\u0628\u200da\n") == ["unicode.zero-width"]
    assert rules_of("\u0628\u200d\u0628\n") == []


def test_an_invisible_after_a_url_on_the_same_line_is_prose() -> None:
    findings, _ = scan_text("notes.md", "see https://x.org/a then b" + ZWSP + "c\n", Zones())
    assert one(findings, "unicode.zero-width").severity is Severity.LOW
    findings, _ = scan_text("notes.md", "see https://x.org/a" + ZWSP + "b then\n", Zones())
    assert one(findings, "unicode.zero-width").severity is Severity.HIGH


def test_one_legitimate_joiner_counts_once() -> None:
    findings, legit = scan_text("notes.md", "family \U0001f468\u200d\U0001f469 here\n")
    assert findings == [] and legit["joiner"] == 1


@pytest.mark.parametrize("text", ["`ab`" + ZWSP * 2 + " x", "abcde" + ZWSP * 2 + "xyz`code`"])
def test_a_run_next_to_inline_code_is_judged_by_its_own_columns(text: str) -> None:
    findings, _ = scan_text("notes.md", text + "\n", Zones())
    assert one(findings, "unicode.zero-width").severity is Severity.LOW


def test_a_word_of_look_alikes_and_a_non_latin_script_is_not_a_spoof() -> None:
    assert rules_of("\u043e\u0440\u0e01\n") == []  # Cyrillic o, r and a Thai letter: no Latin to imitate


def test_a_text_presentation_selector_before_a_joiner_is_part_of_an_emoji_sequence() -> None:
    findings, legit = scan_text("notes.md", "\U0001f600\ufe0e\u200d\U0001f600\n")
    assert findings == [] and legit["joiner"] == 1


def test_a_url_host_is_judged_whole_a_bare_name_label_by_label() -> None:
    cyrillic = "\u0441\u043e\u0440\u0445"  # four Cyrillic look-alikes of Latin letters
    assert rules_of(f"open https://{cyrillic}.com now\n") == ["unicode.mixed-script-host"]
    assert rules_of(f"the file {cyrillic}.txt\n") == []  # a Cyrillic name with a Latin extension


def test_an_emoji_at_the_very_start_of_a_range_joins() -> None:
    findings, legit = scan_text("notes.md", "\u2600\u200d\U0001f600\n")  # U+2600 opens the first emoji range
    assert findings == [] and legit["joiner"] == 1


def test_a_bom_at_the_start_of_a_later_line_is_no_file_start() -> None:
    assert rules_of("x\n\ufeffy\n") == ["unicode.zero-width"]


def test_counts_and_more_distinct_are_exact() -> None:
    findings, _ = scan_text("notes.md", "a" + ZWSP * 2 + "b\n")
    assert one(findings, "unicode.zero-width").message == "2 zero-width characters from column 2: U+200B ZERO WIDTH SPACE x2"
    nine = " ".join(chr(0xFE00 + i) for i in range(9))  # each after a space: none is an emoji variant
    findings, _ = scan_text("notes.md", " " + nine + "\n")
    assert one(findings, "unicode.variation-selector").message.endswith("and 5 more distinct")


def test_a_selector_and_a_joiner_between_letters_of_a_joining_script_are_flagged() -> None:
    assert rules_of("\u0628\ufe0f\u200d\u0628\n")  # only a lone joiner is legitimate between letters


@pytest.mark.parametrize("url", ["https://g\u043e\u043egle.com./x", "https://abcde.g\u043e\u043egle/x"])
def test_a_spoofed_url_host_is_one_finding_whatever_else_matches_inside_it(url: str) -> None:
    assert rules_of(f"open {url} now\n") == ["unicode.mixed-script-host"]


def test_a_payload_of_exactly_the_preview_length_is_shown_whole() -> None:
    text = "p" * 60  # thresholds.payload_preview
    findings, _ = scan_text("notes.md", "x" + hide(text) + "\n")
    assert one(findings, "unicode.tag-chars").message.endswith(f'hidden text "{text}"')
    findings, _ = scan_text("notes.md", "x" + hide(text + "q") + "\n")
    assert one(findings, "unicode.tag-chars").message.endswith(f'hidden text "{text}..."')


def test_a_bidi_control_inside_a_tag_run_is_reported_as_well() -> None:
    assert sorted(rules_of("a" + hide("xy") + "\u202e\n")) == ["unicode.bidi-control", "unicode.tag-chars"]


def test_only_the_manifest_gets_the_frontmatter_note() -> None:
    findings, _ = scan_text("A.md", "\ufeff# A\n")
    assert "frontmatter" not in one(findings, "unicode.bom").message


def test_three_zero_width_after_inline_code_are_medium_prose() -> None:
    findings, _ = scan_text("notes.md", "`a`" + ZWSP * 3 + " x\n", Zones())
    assert one(findings, "unicode.zero-width").severity is Severity.MEDIUM


def test_a_three_letter_mixed_word_is_flagged() -> None:
    assert rules_of("the d\u043eg\n") == ["unicode.mixed-script-word"]


def test_a_selector_at_the_file_start_is_no_bom() -> None:
    assert rules_of("\U000e0100abc\n") == ["unicode.variation-selector"]


@pytest.mark.parametrize("before", ["# T\n", "# T\n\n"])  # the fence opens on an even or an odd line
def test_a_code_block_starts_at_its_fence_not_before(make_skill, before: str) -> None:  # type: ignore[no-untyped-def]
    from conftest import manifest

    notes = before + "prose" + ZWSP + "\n```sh\nrm -rf ./b" + ZWSP + "uild\n```\n"
    skill = make_skill({"SKILL.md": manifest(), "references/notes.md": notes})
    findings, _ = scan_text("references/notes.md", notes, Zones.of(skill, "references/notes.md"))
    prose = notes.count("\n", 0, notes.index("prose")) + 1
    assert {f.line: f.severity for f in findings} == {prose: Severity.LOW, prose + 2: Severity.HIGH}


def test_a_spoofed_host_after_a_plus_inside_a_url_host_is_not_reported_twice() -> None:
    assert rules_of("open https://a+g\u043e\u043egle.com now\n") == ["unicode.mixed-script-host"]


def test_an_emoji_at_the_very_end_of_a_range_joins() -> None:
    findings, legit = scan_text("notes.md", "\u27bf\u200d\U0001f600\n")  # U+27BF closes the first emoji range
    assert findings == [] and legit["joiner"] == 1


def test_a_flag_at_the_start_of_a_line_is_still_a_flag() -> None:
    findings, _ = scan_text("notes.md", "\U0001f3f4" + hide("gbeng") + "\U000e007f England\n")
    assert [(f.rule, f.severity) for f in findings] == [("unicode.emoji-tag-flag", Severity.INFO)]


def test_a_tag_below_the_printable_range_is_not_payload() -> None:
    findings, _ = scan_text("notes.md", "x" + hide("ab") + "\U000e001f\n")
    assert one(findings, "unicode.tag-chars").message.endswith('hidden text "ab"')


def test_two_selectors_after_an_emoji_are_stacked_not_a_variant() -> None:
    assert rules_of("\U0001f600\ufe0f\ufe0f ok\n") == ["unicode.variation-selector"]


@pytest.mark.parametrize("text", ["", "plain ascii\nonly\n", "a\u200bb\nclean\n\u200b", "x\r\n\u202e\r\ny", "\ufeffstart\n\u0430pple\n",
                                  "emoji \u2764\ufe0f\n" * 3 + "tail", "\n\n\u2060\n\n", "caf\u00e9 \u2014 d\u00e9j\u00e0 vu\n"])
def test_only_lines_a_per_line_scan_would_match_are_scanned(text: str) -> None:
    # scan_text reads only the lines _lines_touched names: exactly those where either class matches
    r = unicode_check.rules()
    per_line = [n for n, line in enumerate(text.split("\n"), 1)
                if r.invisible.search(line.removesuffix("\r")) or r.has_confusable.search(line.removesuffix("\r"))]
    assert unicode_check._lines_touched(text, (r.invisible, r.has_confusable)) == per_line
    assert r.clean(text) == (per_line == [])
