"""``pii``: personal data a skill would publish — personal email addresses, phone numbers, US SSNs,
payment card numbers, home folders naming a user, public IPv4 addresses, UK NI numbers.

Regexes find candidates; a validator per rule then drops placeholders, documentation values and
lookalikes (versions, IDs, test cards), because a PII check that cries wolf gets switched off. Rule
data and allow-lists live in ``rules/pii.yaml``. Evidence is always redacted: a report must not
republish the value it warns about.
"""

from __future__ import annotations

import bisect
import functools
import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import rulefiles

_RULES_FILE = Path(__file__).parent / "rules" / "pii.yaml"
_NEWLINE = re.compile("\n")
_EMAIL = re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}")


@dataclass(frozen=True)
class _Rule:
    id: str
    severity: Severity
    label: str
    pattern: re.Pattern[str]
    suggestion: str
    data: dict[str, Any]  # the rule's YAML entry: knobs read by its validator
    allow: dict[str, frozenset[str]]  # its allow_* lists, lower-cased once here
    skip_lines: re.Pattern[str] | None = None
    skip_files: re.Pattern[str] | None = None  # matched against the file's base name
    context: re.Pattern[str] | None = None
    #: Contained in every match, never across a line: finds candidate lines fast (see pii.yaml).
    prefilter: re.Pattern[str] | None = None


@dataclass(frozen=True)
class _Config:
    rules: tuple[_Rule, ...]
    suffixes: frozenset[str]
    include_eval_dirs: bool
    ignore_marker: str


def _opt(pattern: str | None) -> re.Pattern[str] | None:
    return re.compile(pattern) if pattern else None


def _allow_lists(entry: dict[str, Any]) -> dict[str, frozenset[str]]:
    return {k: frozenset(str(v).lower() for v in vals) for k, vals in entry.items() if k.startswith("allow_")}


@functools.cache
def rules_config() -> _Config:
    """Parse ``rules/pii.yaml`` once per process."""
    data = rulefiles.load(_RULES_FILE)
    parsed = tuple(
        _Rule(id=r["id"], severity=Severity.parse(r["severity"]), label=r["label"], pattern=re.compile(r["pattern"], re.MULTILINE),
              suggestion=r["suggestion"], data=r, allow=_allow_lists(r), skip_lines=_opt(r.get("skip_lines")), skip_files=_opt(r.get("skip_files")),
              context=_opt(r.get("context")), prefilter=_opt(r.get("prefilter")))
        for r in data["rules"]
    )
    return _Config(parsed, frozenset(data["suffixes"]), bool(data["include_eval_dirs"]), data["ignore_marker"])


def redact(value: str) -> str:
    """Keep two characters at each end of long values, one of short ones; mask the rest."""
    keep = 2 if len(value) >= 8 else 1 if len(value) >= 4 else 0
    if keep == 0:
        return "*" * len(value)
    return value[:keep] + "*" * min(len(value) - 2 * keep, 10) + value[-keep:]


def _digits(text: str) -> str:
    return re.sub(r"\D", "", text)


def _fake_digits(digits: str) -> bool:
    """Digit strings people type as filler: 1234567890, 9876543210, 0000000, 5555555."""
    return (any(seq in digits for seq in ("123456", "234567", "345678", "987654", "876543"))
            or re.search(r"(\d)\1{5}", digits) is not None or "00000" in digits)


# -- validators: (rule, value, line, match) -> True when the value is reportable ---------------------
def _email(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    low = value.lower()
    local, _, domain = low.partition("@")
    labels = domain.split(".")
    before = line[: m.start("v")].split()
    if before and "://" in before[-1]:  # URL userinfo (https://bot:token@host): the secrets check's job
        return False
    if re.match(r":[\w/~]", line[m.end("v"):]):  # deploy@host.example:/srv is an ssh target, not a mailbox
        return False
    if labels[-1] in rule.allow["allow_tlds"] or len(labels[-2]) <= 1 or len(local) <= 1:
        return False  # a@b.com, x@y.io: one-letter names are placeholders
    if any(domain == d or domain.endswith("." + d) for d in rule.allow["allow_domains"]):
        return False
    if local in rule.allow["allow_locals"] or local.split("+")[0] in rule.allow["allow_locals"]:
        return False
    return not any(s in low for s in rule.allow["allow_substrings"])


def _phone_us(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    digits = _digits(value)[-10:]
    # 555 exchanges are fictional or directory services; N11 codes are not subscriber numbers.
    return digits[3:6] != "555" and digits[4:6] != "11" and not _fake_digits(digits)


def _phone_intl(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    digits = _digits(value)
    if not rule.data["min_digits"] <= len(digits) <= rule.data["max_digits"]:
        return False
    if re.fullmatch(r"\+\d+\.\d+", value):  # a signed decimal such as +2.58776093
        return False
    if re.search(r"\d{4}[.-]\d{2}[.-]\d{2}", value) or (value.count(".") >= 2 and " " not in value):
        return False  # a date (+2024-01-31) or a dotted version/IP-like run
    if digits.startswith("1") and digits[4:7] == "555":  # North American fiction range
        return False
    if digits.startswith("4420794") or digits.startswith("61491570"):  # Ofcom / ACMA drama numbers
        return False
    return not _fake_digits(digits)


def _ssn(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    area, group, serial = value.split("-")
    if value in rule.allow["allow_values"]:
        return False
    # Never issued: area 000, 666 and 900-999, group 00, serial 0000.
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


def _luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch) * (2 if i % 2 else 1)
        total += d - 9 if d > 9 else d
    return total % 10 == 0


#: Issuer prefixes of the major networks; a Luhn-valid number outside them is an ID, not a card.
_CARD_IIN = re.compile(r"4|5[1-5]|2(?:2[2-9]|[3-6]\d|7[01]|720)|3[47]|3(?:0[0-5]|[68])|6(?:011|5|4[4-9]|2)|35(?:2[89]|[3-8])")


def _card(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    digits = _digits(value)
    groups = re.split(r"[ -]", value)
    if len(groups) > 1 and not (all(len(g) == 4 for g in groups[:-1]) or [len(g) for g in groups] in ([4, 6, 5], [4, 6, 4])):
        return False  # card numbers are written 4-4-4-4 (Amex 4-6-5); other groupings are not cards
    if digits in rule.allow["allow_values"] or not _CARD_IIN.match(digits) or _fake_digits(digits):
        return False
    return _luhn(digits)


def _home(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    name = value.lower()
    if name in rule.allow["allow_names"] or any(s in name for s in rule.allow["allow_name_substrings"]):
        return False
    return not (value.isupper() and len(value) > 1)  # USERNAME, YOUR_NAME: placeholder convention


def _ipv4(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    octets = value.split(".")
    if any(len(o) > 1 and o.startswith("0") for o in octets) or any(int(o) > 255 for o in octets):
        return False  # zero-padded or out of range: a version or a date, not an address
    if value in rule.allow["allow_values"] or (len(octets[0]) == 1 and len(octets[1]) == 1):
        return False  # 1.2.3.4, 2.5.29.14, 4.0.30.1: placeholders, OIDs, section and version numbers
    if re.search(rule.data["version_prefix"], line[: m.start("v")]):
        return False
    ip = ipaddress.IPv4Address(value)
    # is_global excludes RFC 1918, loopback, link-local, CGNAT, 0/8 and the documentation ranges.
    return ip.is_global and not ip.is_multicast and not ip.is_reserved


def _nino(rule: _Rule, value: str, line: str, m: re.Match[str]) -> bool:
    return value.replace(" ", "").lower() not in rule.allow["allow_values"]


_VALIDATORS: dict[str, Callable[[_Rule, str, str, re.Match[str]], bool]] = {
    "pii.email": _email, "pii.phone-us": _phone_us, "pii.phone-intl": _phone_intl, "pii.ssn": _ssn,
    "pii.credit-card": _card, "pii.home-path": _home, "pii.ipv4": _ipv4, "pii.uk-nino": _nino,
}


@dataclass
class _Hit:
    rule: _Rule
    line: int
    evidence: str
    lines: list[int] = field(default_factory=list)


def _evidence(m: re.Match[str]) -> str:
    """The match with its personal part masked."""
    whole, start, end = m.group(0), m.start("v") - m.start(0), m.end("v") - m.start(0)
    return whole[:start] + redact(m.group("v")) + whole[end:]


def _normalise(rule_id: str, value: str) -> str:
    """One spelling per value, so '(415) 867-5309' and '1-415-867-5309' are one finding."""
    if rule_id in ("pii.email", "pii.home-path"):
        return value.lower()
    if rule_id == "pii.phone-us":
        return _digits(value)[-10:]
    return _digits(value) if rule_id in ("pii.phone-intl", "pii.ssn", "pii.credit-card") else value.replace(" ", "")


#: A substring every match of the rule contains (read off its pattern): a cheap test before the regex.
_REQUIRED_TEXT = {"pii.email": "@", "pii.home-path": "Users"}


def _candidate_lines(text: str, rules: list[_Rule]) -> dict[int, list[int]]:
    """Line numbers (1-based, ascending) where some rule's pattern can match, each with the indices
    in ``rules`` (ascending) of the rules that can match there, found with one pass of each rule's
    prefilter (or pattern) over the whole text instead of one per line. Every line a whole-text match
    touches is a candidate for that rule, so a match that a line-by-line scan would find is never
    skipped: a prefilter is contained in every match and never spans a line, and the patterns'
    look-arounds treat a newline as they treat the end of a line (asserted in the tests)."""
    starts: list[int] | None = None
    found: dict[int, list[int]] = {}
    for index, rule in enumerate(rules):
        needed = _REQUIRED_TEXT.get(rule.id)
        if needed and needed not in text:
            continue  # a substring every match holds is nowhere in the file
        finder = rule.prefilter or rule.pattern
        first_hit = finder.search(text)
        if first_hit is None or (rule.context and not rule.context.search(text)):
            continue  # no candidate, or the context a line needs is nowhere in the file
        for m in finder.finditer(text, first_hit.start()):
            if starts is None:
                starts = [n.start() for n in _NEWLINE.finditer(text)]
            first = bisect.bisect_left(starts, m.start()) + 1
            last = bisect.bisect_left(starts, max(m.end() - 1, m.start())) + 1
            for number in range(first, last + 1):
                here = found.get(number)
                if here is None:
                    found[number] = [index]
                elif here[-1] != index:
                    here.append(index)
    return dict(sorted(found.items()))


def scan_text(rel: str, text: str, exempt_emails: frozenset[str] = frozenset()) -> list[Finding]:
    """PII findings of one file, one per distinct value and rule (with the other lines it is on)."""
    cfg = rules_config()
    base = rel.rsplit("/", 1)[-1]
    active = [r for r in cfg.rules if not (r.skip_files and r.skip_files.search(base))]
    hits: dict[tuple[str, str], _Hit] = {}
    lines = text.split("\n")
    # each line is tried with the rules that can match on it (a line holding '+1' is no card or address)
    for number, indices in _candidate_lines(text, active).items():
        line = lines[number - 1]
        if cfg.ignore_marker in line:
            continue
        for index in indices:
            rule = active[index]
            if (rule.skip_lines and rule.skip_lines.search(line)) or (rule.context and not rule.context.search(line)):
                continue
            for m in rule.pattern.finditer(line):
                value = m.group("v")
                if rule.id == "pii.email" and value.lower() in exempt_emails:
                    continue
                if not _VALIDATORS[rule.id](rule, value, line, m):
                    continue
                key = (rule.id, _normalise(rule.id, value))
                if key in hits:
                    if number != hits[key].line and number not in hits[key].lines:
                        hits[key].lines.append(number)
                else:
                    hits[key] = _Hit(rule, number, _evidence(m))
    findings = []
    for hit in hits.values():
        also = f" (also on line{'s' if len(hit.lines) > 1 else ''} {', '.join(map(str, hit.lines[:5]))}" \
               f"{', ...' if len(hit.lines) > 5 else ''})" if hit.lines else ""
        findings.append(Finding(rule=hit.rule.id, severity=hit.rule.severity, file=rel, line=hit.line,
                                message=f"{hit.rule.label} {hit.evidence}{also}", suggestion=hit.rule.suggestion,
                                evidence=hit.evidence))
    return findings


def _author_emails(skill: Skill) -> frozenset[str]:
    """Addresses the skill names as its author; they are published on purpose wherever they recur."""
    meta = skill.meta.get("metadata")
    values = [skill.meta.get("author"), meta.get("author") if isinstance(meta, dict) else None]
    found: set[str] = set()
    for value in values:
        for item in value if isinstance(value, list) else [value]:
            if item is not None:
                found.update(e.lower() for e in _EMAIL.findall(str(item)))
    return frozenset(found)


class PiiCheck(Check):
    name = "pii"
    description = "personal data: emails, phone numbers, SSNs, card numbers, home paths, public IPs"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        cfg = rules_config()
        exempt = _author_emails(skill)
        findings: list[Finding] = []
        files = 0
        for rel, text in skill.text_files(cfg.suffixes, include_eval_dirs=cfg.include_eval_dirs):
            files += 1
            findings.extend(scan_text(rel, text, exempt))
        return self.result(findings, metrics={"files_scanned": files})

    def files_read(self, ctx: CheckContext) -> Reads:
        cfg = rules_config()
        return Reads(cfg.suffixes, include_eval_dirs=cfg.include_eval_dirs)


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [PiiCheck()]
