"""The ``pii`` check: each rule flags real-looking personal data and spares its lookalikes."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from conftest import CORPUS, manifest, require, rules, run_check

from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import pii

MakeSkill = Callable[..., Skill]
CHECK = pii.PiiCheck()


def scan(make_skill: MakeSkill, text: str, rel: str = "references/notes.md", **meta: str) -> CheckResult:
    extra = "".join(f"{k}: {v}\n" for k, v in meta.items())
    return run_check(CHECK, make_skill({"SKILL.md": manifest(extra=extra), rel: text}))


def only(result: CheckResult, rule: str) -> Finding:
    found = [f for f in result.findings if f.rule == rule]
    assert len(found) == 1, result.findings
    return found[0]


def assert_flagged(result: CheckResult, rule: str, severity: Severity, line: int, raw: str) -> Finding:
    f = only(result, rule)
    assert (f.severity, f.line, f.file) == (severity, line, "references/notes.md")
    # The report must not republish what it warns about.
    assert raw not in f.message and raw not in (f.evidence or "") and "*" in (f.evidence or "")
    return f


# -- email ---------------------------------------------------------------------------------------
def test_personal_email_is_high_and_redacted(make_skill: MakeSkill) -> None:
    f = assert_flagged(scan(make_skill, "# Contacts\nPing maria.kowalska@gmail.com for keys.\n"),
                       "pii.email", Severity.HIGH, 2, "maria.kowalska@gmail.com")
    assert f.evidence is not None and f.evidence.startswith("ma") and f.evidence.endswith("om")


@pytest.mark.parametrize("text", [
    "Send to user@example.com, ops@example.org, jane@example.net or qa@test.com",
    "Commits by 1234567+octocat@users.noreply.github.com; replies to noreply@acme-corp.io",
    "Copyright (c) 2024 Maria Kowalska <maria.kowalska@gmail.com>",
    "__author__ = 'maria.kowalska@gmail.com'",
    "Contributed by Maria Kowalska <maria.kowalska@gmail.com>.",
    "![logo](img/logo@2x.png) and git clone git@github.com:acme/tool.git",
    "Use https://bot:token@registry.acme-corp.io/simple as the index",
    "Reach support@acme-corp.io or the platform-team@acme-corp.io list",
    "Ask user@contoso.com, your.name@yourcompany.com or a@b.com",
    "Cipher aes256-gcm@openssh.com is preferred",
    "maria.kowalska@gmail.com  # skilleval: allow-pii",
])
def test_placeholder_role_and_attribution_emails_are_allowed(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


def test_author_email_is_exempt_in_frontmatter_and_elsewhere(make_skill: MakeSkill) -> None:
    skill = make_skill({
        "SKILL.md": manifest(extra="metadata:\n  author: Maria Kowalska <maria.kowalska@gmail.com>\n"),
        "plugin.json": '{"email": "maria.kowalska@gmail.com", "reviewer": "jan.nowak@gmail.com"}\n',
    })
    result = run_check(CHECK, skill)
    assert [(f.rule, f.file, f.line) for f in result.findings] == [("pii.email", "plugin.json", 1)]


def test_mailto_link_is_flagged_but_an_ssh_target_is_not(make_skill: MakeSkill) -> None:
    text = "rsync dist/ deploy@build01.acme-corp.io:/srv/www\nAsk [Maria](mailto:maria.kowalska@gmail.com)\n"
    assert_flagged(scan(make_skill, text), "pii.email", Severity.HIGH, 2, "maria.kowalska@gmail.com")


def test_repeated_value_is_one_finding_listing_other_lines(make_skill: MakeSkill) -> None:
    f = only(scan(make_skill, "jan.nowak@gmail.com\nok\nJan.Nowak@gmail.com\n"), "pii.email")
    assert f.line == 1 and "line 3" in f.message


# -- phone numbers -------------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["Call (415) 867-5309 after six", "Call 415-867-5309", "Call 1-415.867.5309"])
def test_us_phone_is_medium(make_skill: MakeSkill, text: str) -> None:
    assert_flagged(scan(make_skill, f"intro\n{text}\n"), "pii.phone-us", Severity.MEDIUM, 2, "867-5309")


@pytest.mark.parametrize("text", [
    "Call (212) 555-0123 or 800-555-1212",  # fictional / directory 555 exchanges
    "Use 234-567-8901 or 999-999-9999 as a dummy",  # sequential and repeated filler
    "Build 2024-01-31, version 10.2.300.4000, ip 192.168.100.2",
    "ID 4158675309 without separators is not a phone",
])
def test_us_phone_lookalikes_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


@pytest.mark.parametrize(("text", "raw"), [
    ("Office: +48 22 629 84 31", "629 84 31"),
    ("Mobile +44 7700 183 492 for escalations", "7700 183 492"),
    ("E.164: '+14158675309'", "4158675309"),
])
def test_international_phone_is_medium(make_skill: MakeSkill, text: str, raw: str) -> None:
    assert_flagged(scan(make_skill, f"x\n{text}\n"), "pii.phone-intl", Severity.MEDIUM, 2, raw)


@pytest.mark.parametrize("text", [
    "delta +2.58776093 and +13.0 and +1700 tokens",  # signed numbers
    "lesson +20, quiz +50, @@ -3527,6 +3527,7 @@",  # scores and diff hunks
    "UK drama number +44 20 7946 0958, US fiction +1 415 555 0142",
    "placeholder +1 234 567 8900 or +1234567890",
    "date +2024-01-31 and timezone +05:30",
    "version 1.2.3+20240101 build metadata",
])
def test_international_phone_lookalikes_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


# -- SSN -----------------------------------------------------------------------------------------
def test_ssn_is_critical(make_skill: MakeSkill) -> None:
    assert_flagged(scan(make_skill, "a\nb\nSSN on file: 536-22-1934\n"), "pii.ssn", Severity.CRITICAL, 3, "536-22-1934")


@pytest.mark.parametrize("text", [
    "Example SSN 078-05-1120 or 123-45-6789 in docs",
    "Invalid areas 000-12-3456, 666-12-3456, 912-34-5678; group 536-00-1934; serial 536-22-0000",
    "Part no. 536-22-1934-B and 2536-22-1934",
])
def test_ssn_lookalikes_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


# -- payment cards -------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "raw"), [
    ("Card: 4539 1488 0343 6467", "4539 1488 0343 6467"),
    ("card=5425233430109903;", "5425233430109903"),
    ("Amex 3709-960308-24628", "3709-960308-24628"),
])
def test_luhn_valid_card_is_critical(make_skill: MakeSkill, text: str, raw: str) -> None:
    assert_flagged(scan(make_skill, text + "\n", rel="references/notes.md"), "pii.credit-card", Severity.CRITICAL, 1, raw)


@pytest.mark.parametrize("text", [
    "Stripe test cards 4242 4242 4242 4242, 4111-1111-1111-1111 and 5555555555554444",
    "Luhn-invalid 4539 1488 0343 6468",
    "Snowflake id 1772585501101368014 and epoch 1700000000000",
    "ISBN 9781449327453 and hexdump 00 00 00 00 00 00 00 00",
    "Stripe 3DS card 4000 0000 0000 3220",
])
def test_card_lookalikes_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


# -- home paths ----------------------------------------------------------------------------------
@pytest.mark.parametrize(("text", "raw"), [
    ("Open /Users/mkowalski/Projects/app/config.yaml", "mkowalski"),
    ('path = "C:\\\\Users\\\\mkowalski\\\\AppData\\\\Local"', "mkowalski"),
    ("see file:///Users/mkowalski/notes.txt", "mkowalski"),
    ("log at C:/Users/mkowalski/logs/job.log", "mkowalski"),
])
def test_personal_home_path_is_high(make_skill: MakeSkill, text: str, raw: str) -> None:
    assert_flagged(scan(make_skill, f"x\n{text}\n"), "pii.home-path", Severity.HIGH, 2, raw)


@pytest.mark.parametrize("text", [
    "/Users/user/x, /Users/username/x, /Users/you/x, /Users/me/x, /Users/runner/work",
    "C:\\Users\\Public\\Desktop and C:\\Users\\Administrator\\ and C:/Users/userName/job.txt",
    "/Users/<user>/x, /Users/$USER/x, /Users/{name}/x, /Users/USERNAME/x, %USERPROFILE%\\x",
    "GET /api/v1/Users/12345/ and https://graph.example.com/Users/alice-smith/",
    "/home/mkowalski/project is a Linux home and not checked",
])
def test_placeholder_home_paths_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


# -- IPv4 ----------------------------------------------------------------------------------------
def test_public_ipv4_is_medium(make_skill: MakeSkill) -> None:
    assert_flagged(scan(make_skill, "x\nssh deploy@52.14.200.7 -p 22\n"), "pii.ipv4", Severity.MEDIUM, 2, "52.14.200.7")


@pytest.mark.parametrize("text", [
    "10.0.0.1, 172.16.4.2, 192.168.1.50, 127.0.0.1, 169.254.169.254, 0.0.0.0, 100.64.0.1",
    "docs: 192.0.2.10, 198.51.100.7, 203.0.113.99; resolvers 8.8.8.8 and 1.1.1.1",
    "version 10.14.1.48, TensorRT==10.2.11.4, Version=4.0.0.0, 1.2.3.4, OID 2.5.29.17",
    "out of range 300.1.2.3, padded 01.02.03.04, too long 52.14.200.7.1, mask 255.255.255.0",
])
def test_non_public_and_version_like_ipv4_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


# -- UK NINO -------------------------------------------------------------------------------------
def test_uk_nino_with_context_is_high(make_skill: MakeSkill) -> None:
    assert_flagged(scan(make_skill, "National Insurance number: JG 10 37 42 A\n"), "pii.uk-nino", Severity.HIGH, 1, "JG 10 37 42")


@pytest.mark.parametrize("text", [
    "Part JG103742A ships Monday",  # no context: a part number
    "NI number example: QQ 12 34 56 C or AB123456C",  # HMRC's example prefix is never issued
    "NINO GB123456A is invalid",  # GB is a reserved prefix
])
def test_nino_lookalikes_are_clean(make_skill: MakeSkill, text: str) -> None:
    assert scan(make_skill, text + "\n").findings == []


# -- scope and plumbing --------------------------------------------------------------------------
def test_eval_folders_are_scanned_and_binary_suffixes_are_not(make_skill: MakeSkill) -> None:
    skill = make_skill({
        "SKILL.md": manifest(),
        "results/run-1/transcript.jsonl": '{"cwd": "/Users/mkowalski/skills/demo"}\n',
        "assets/photo.png": b"\x89PNG maria.kowalska@gmail.com",
    })
    result = run_check(CHECK, skill)
    assert [(f.rule, f.file) for f in result.findings] == [("pii.home-path", "results/run-1/transcript.jsonl")]
    assert pii.rules_config().include_eval_dirs is True


def test_clean_skill_passes() -> None:
    assert pii.scan_text("x.md", "Nothing personal here: see https://example.com/docs.\n") == []


def test_redact_keeps_only_the_ends() -> None:
    assert pii.redact("4539148803436467") == "45**********67"  # at most 10 stars: a long value does not show its length
    assert pii.redact("jdoe") == "j**e" and pii.redact("abc") == "***"


def test_rule_data_is_loaded_once_and_registered_by_hook() -> None:
    assert pii.rules_config() is pii.rules_config()
    assert {r.id for r in pii.rules_config().rules} >= {"pii.email", "pii.ssn", "pii.credit-card", "pii.ipv4"}
    assert [c.name for c in pii.pytest_skilleval_checks(config=None)] == ["pii"]  # type: ignore[arg-type]
    assert rules(pii.PiiCheck().result([])) == set()


def _line_by_line(text: str) -> set[int]:
    """Lines where any rule's pattern matches when each line is searched on its own (the old scan)."""
    return {n for n, line in enumerate(text.split("\n"), 1) for r in pii.rules_config().rules if r.pattern.search(line)}


@pytest.mark.parametrize("text", [
    "call 1\n415-867-5309 now", "mail\nalice.smith@corp-mail.de\n", "+44\n20 7946 0958", "4111 1111\n1111 1111",
    "/Users/\nbob/x", "10.0.0.1\n8.8.8.8.", "AB 12 34 56 C\nNI number AB123456C", "a@b\n.com x@y.org",
    "C:\\Users\\carol\n", "(415)\n867-5309", "078-05-1120\n\n\n+1 415 867 5309\n",
])
def test_candidate_lines_cover_every_line_a_line_scan_matches(text: str) -> None:
    assert _line_by_line(text) <= set(pii._candidate_lines(text, list(pii.rules_config().rules)))


def test_candidate_lines_cover_the_corpus() -> None:
    """The whole-text pre-pass skips no line a line-by-line scan would match, over real Markdown."""
    files = sorted((CORPUS / "anthropic-skills").rglob("*.md"))[:60] + sorted((CORPUS / "nvidia-skills").rglob("*.md"))[:120]
    require(bool(files), f"corpus not found at {CORPUS}")
    for path in files:
        text = path.read_text(encoding="utf-8", errors="replace")
        assert _line_by_line(text) <= set(pii._candidate_lines(text, list(pii.rules_config().rules))), path
        assert _rule_by_rule(text) <= _candidates_by_rule(text), path


def _rule_by_rule(text: str) -> set[tuple[int, int]]:
    """(line, rule index) where the rule's pattern matches the line on its own, and its context if it needs one."""
    rules = pii.rules_config().rules
    return {(n, i) for n, line in enumerate(text.split("\n"), 1) for i, r in enumerate(rules)
            if r.pattern.search(line) and (r.context is None or r.context.search(line))}


def _candidates_by_rule(text: str) -> set[tuple[int, int]]:
    return {(n, i) for n, indices in pii._candidate_lines(text, list(pii.rules_config().rules)).items() for i in indices}


@pytest.mark.parametrize("text", [
    "call 1\n415-867-5309 now", "mail\nalice.smith@corp-mail.de\n", "+44\n20 7946 0958", "4111 1111\n1111 1111",
    "/Users/\nbob/x", "10.0.0.1\n8.8.8.8.", "AB 12 34 56 C\nNI number AB123456C", "a@b\n.com x@y.org",
    "C:\\Users\\carol\n", "(415)\n867-5309", "078-05-1120\n\n\n+1 415 867 5309\n", "+1 4111 1111 1111 1111 at 8.8.8.8\n",
    "national\ninsurance AB 12 34 56 C\nNINO: AB 12 34 56 C",
])
def test_each_line_is_a_candidate_for_each_rule_that_matches_it(text: str) -> None:
    # scan_text tries on a line only the rules whose own pre-pass made it a candidate: exact only if each
    # rule's candidates hold every line its pattern matches (with its context)
    assert _rule_by_rule(text) <= _candidates_by_rule(text)


def test_each_prefilter_is_in_every_match_and_never_spans_a_line() -> None:
    """What makes the fast candidate pass safe (pii.yaml, ``prefilter``): over the corpus and the
    examples above, every match of a rule's pattern contains a match of its prefilter, and no
    prefilter match holds a newline."""
    texts = [path.read_text(encoding="utf-8", errors="replace")
             for path in sorted(CORPUS.rglob("*")) if path.suffix in (".md", ".py", ".sh", ".json", ".yaml", ".txt") and path.is_file()]
    require(len(texts) > 1000, f"corpus not found at {CORPUS}")
    texts += ["call 415-867-5309", "alice.smith@corp-mail.de", "+44 20 7946 0958", "4111 1111 1111 1111", "/Users/bob/x",
              "C:\\Users\\carol\\x", "8.8.8.8", "NI number AB 12 34 56 C", "078-05-1120", "(415) 867-5309", "1-415-867-5309"]
    rules = [r for r in pii.rules_config().rules if r.prefilter is not None]
    assert {r.id for r in rules} == {r.id for r in pii.rules_config().rules}
    matched = 0
    for text in texts:
        for rule in rules:
            assert rule.prefilter is not None
            for line in text.split("\n"):
                for m in rule.pattern.finditer(line):
                    matched += 1
                    assert rule.prefilter.search(m.group(0)), (rule.id, m.group(0))
            assert all("\n" not in m.group(0) for m in rule.prefilter.finditer(text)), rule.id
    assert matched > 100
