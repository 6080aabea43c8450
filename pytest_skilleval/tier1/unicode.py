"""``unicode``: invisible and look-alike characters that make an agent read something other than
what a reviewer sees — tag-character smuggling, bidi reordering, zero-width padding, stacked
variation selectors, and words or hosts that mix Latin with Cyrillic or Greek letters.

Every text file of the skill is scanned, evaluation folders included: a hidden instruction in an
eval prompt reaches a model just as well. Rule data lives in ``rules/unicode.yaml``.
"""

from __future__ import annotations

import bisect
import functools
import re
import unicodedata
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import MANIFEST, Skill
from pytest_skilleval.tier1 import rulefiles

_RULES_FILE = Path(__file__).parent / "rules" / "unicode.yaml"
_ZWJ, _ZWNJ, _BOM, _BLACK_FLAG = 0x200D, 0x200C, 0xFEFF, 0x1F3F4
_EMOJI_VS = frozenset({0xFE0E, 0xFE0F})
# A subdivision flag (England, Scotland, ...) is U+1F3F4, 4-7 tag letters/digits, CANCEL TAG.
_FLAG_TAGS = re.compile("[\U000e0030-\U000e0039\U000e0061-\U000e007a]{4,7}\U000e007f")
_URL_HOST = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://(?:[^\s/?#@]*@)?([^\s/?#:<>\"'`)\]]+)")
# A bare dotted name: labels of letters/digits/hyphens ending in an alphabetic TLD.
_BARE_HOST = re.compile(r"(?<![\w.-])((?:[^\W_](?:[\w-]*[^\W_])?\.)+[^\W\d_]{2,})(?![\w-])")
_WORD = re.compile(r"[^\W\d_]+")
_NEWLINE = re.compile("\n")


@dataclass(frozen=True)
class _Category:
    key: str
    rule: str
    severity: Severity
    label: str
    suggestion: str


@dataclass(frozen=True)
class _Rules:
    by_cp: dict[int, _Category]
    categories: dict[str, _Category]
    invisible: re.Pattern[str]  # one or more characters of any category: a run
    emoji: tuple[tuple[int, int], ...]
    joiner_scripts: frozenset[str]
    confusable: dict[str, str]  # char -> script name
    has_confusable: re.Pattern[str]
    thresholds: dict[str, int]
    homoglyph: dict[str, Any]
    #: No invisible or confusable character is ASCII, so an ASCII text holds none: one C-level test of
    #: the text (most of a catalog) instead of two regex passes over it.
    ascii_free: bool = False

    def clean(self, text: str) -> bool:
        """True when neither :attr:`invisible` nor :attr:`has_confusable` can match anywhere in ``text``."""
        return (self.ascii_free and text.isascii()) or not (self.invisible.search(text) or self.has_confusable.search(text))


def _span(pair: list[str]) -> tuple[int, int]:
    return int(pair[0], 16), int(pair[1], 16)


@functools.cache
def rules() -> _Rules:
    """Parse ``rules/unicode.yaml`` once per process."""
    data = rulefiles.load(_RULES_FILE)
    by_cp: dict[int, _Category] = {}
    categories: dict[str, _Category] = {}
    klass = []
    for key, spec in data["categories"].items():
        cat = _Category(key, spec["rule"], Severity.parse(spec["severity"]), spec["label"], spec["suggestion"])
        categories[key] = cat
        for first, last in map(_span, spec["ranges"]):
            by_cp.update(dict.fromkeys(range(first, last + 1), cat))
            klass.append(f"{re.escape(chr(first))}-{re.escape(chr(last))}")
    confusable = {ch: script for script, chars in data["confusables"].items() for ch in chars}
    return _Rules(
        by_cp=by_cp,
        categories=categories,
        invisible=re.compile(f"[{''.join(klass)}]+"),
        emoji=tuple(map(_span, data["emoji_ranges"])),
        joiner_scripts=frozenset(data["joiner_scripts"]),
        confusable=confusable,
        has_confusable=re.compile(f"[{re.escape(''.join(confusable))}]"),
        thresholds=data["thresholds"],
        homoglyph=data["homoglyph"],
        ascii_free=min(by_cp, default=128) >= 128 and all(ord(c) >= 128 for c in confusable),
    )


def _u(cp: int) -> str:
    return f"U+{cp:04X} {unicodedata.name(chr(cp), 'unnamed')}"


def _codepoints(chars: list[str], limit: int = 4) -> str:
    """'U+200B ZERO WIDTH SPACE x3, ...': distinct codepoints with counts, the first few by name."""
    counts = sorted(Counter(chars).items())
    text = ", ".join(_u(ord(c)) + (f" x{n}" if n > 1 else "") for c, n in counts[:limit])
    return text + (f" and {len(counts) - limit} more distinct" if len(counts) > limit else "")


def _visible(text: str) -> str:
    """Text with every invisible or non-ASCII letter spelled out, safe to print in a report."""
    r = rules()
    return "".join(f"<U+{ord(c):04X}>" if ord(c) in r.by_cp or c in r.confusable else c for c in text)


def _script(ch: str) -> str:
    return unicodedata.name(ch, "").split(" ", 1)[0]


def _is_emoji(ch: str) -> bool:
    cp = ord(ch)
    return any(lo <= cp <= hi for lo, hi in rules().emoji)


def _legit_joiner(line: str, start: int, end: int) -> bool:
    """A lone ZWJ/ZWNJ (optionally after one emoji variation selector) inside an emoji sequence or
    between two letters of a script that needs joiners."""
    run = [ord(c) for c in line[start:end]]
    if run[-1] not in (_ZWJ, _ZWNJ) or len(run) > 2 or (len(run) == 2 and run[0] not in _EMOJI_VS):
        return False
    if start == 0 or end >= len(line):
        return False
    before, after = line[start - 1], line[end]
    if _is_emoji(before) and _is_emoji(after):
        return True
    scripts = rules().joiner_scripts
    return len(run) == 1 and _script(before) in scripts and _script(after) in scripts


def _decode_selectors(chars: str) -> str:
    """Bytes hidden in a stack of variation selectors (VS1-16 -> 0-15, VS17-256 -> 16-255)."""
    data = bytes(ord(c) - 0xFE00 if ord(c) < 0xE0000 else ord(c) - 0xE0100 + 16 for c in chars
                 if rules().by_cp[ord(c)].key == "variation_selector")
    return data.decode("utf-8", "replace")


def _preview(text: str) -> str:
    limit = rules().thresholds["payload_preview"]
    text = text if len(text) <= limit else text[:limit] + "..."
    return text.encode("unicode_escape").decode("ascii").replace('"', '\\"')


#: Files that are code or data throughout: an invisible character anywhere in them is in code.
CODE_SUFFIXES = frozenset({".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".ps1", ".rb", ".pl",
                           ".go", ".rs", ".java", ".json", ".yaml", ".yml", ".toml"})
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdc"})
_INLINE_CODE = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1")
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s<>\"'`)\]]+|\]\([^)\s]*\)|<[A-Za-z][A-Za-z0-9+.-]*:[^>\s]*>")


class Zones:
    """Where an invisible character changes what an agent runs or opens: code blocks, inline code,
    URLs and the frontmatter of Markdown; anywhere in a script or data file. A single one there is
    HIGH: a zero-width space inside ``rm -rf ./build`` or a URL host needs no run of them to smuggle."""

    def __init__(self, whole: str | None = None, lines: frozenset[int] = frozenset(), frontmatter_end: int = 0) -> None:
        self.whole, self.lines, self.frontmatter_end = whole, lines, frontmatter_end

    @classmethod
    def of(cls, skill: Skill, rel: str) -> Zones | None:
        suffix = rel.rsplit(".", 1)[-1].lower() if "." in rel.rsplit("/", 1)[-1] else ""
        if f".{suffix}" in CODE_SUFFIXES:
            return cls(whole="a script or data file")
        if f".{suffix}" not in MARKDOWN_SUFFIXES:
            return None
        tokens = skill.markdown(rel) or []
        code = frozenset(n for t in tokens if t.type in ("fence", "code_block") and t.map for n in range(t.map[0] + 1, t.map[1] + 1))
        end = skill.body_start_line - 1 if rel == skill.manifest else 0
        return cls(lines=code, frontmatter_end=end)

    def where(self, lineno: int, line: str, column: int) -> str | None:
        if self.whole:
            return self.whole
        if lineno <= self.frontmatter_end:
            return "the frontmatter"
        if lineno in self.lines:
            return "a code block"
        for pattern, label in ((_INLINE_CODE, "inline code"), (_URL, "a URL")):
            if any(m.start() <= column < m.end() for m in pattern.finditer(line)):
                return label
        return None


class _FileScan:
    """Findings of one file; collects per line so one line yields one finding per rule."""

    def __init__(self, rel: str, zones: Zones | None = None) -> None:
        self.rel = rel
        self.zones = zones
        self.findings: list[Finding] = []
        self.legit = Counter[str]()

    def add(self, rule: str, severity: Severity, line: int, message: str, suggestion: str, evidence: str) -> None:
        self.findings.append(Finding(rule=rule, severity=severity, file=self.rel, line=line, message=message,
                                     suggestion=suggestion, evidence=evidence[:200]))

    def invisibles(self, lineno: int, line: str, file_start: bool) -> None:
        r = rules()
        per_cat: dict[str, list[tuple[int, str]]] = {}
        for m in r.invisible.finditer(line):
            start, end, run = m.start(), m.end(), m.group()
            context = _visible(line[max(0, start - 20):end + 20])
            tags = "".join(c for c in run if r.by_cp[ord(c)].key == "tag")
            if tags:
                self._tags(lineno, line, start, tags, context)
                # Whatever else is in the run is judged on its own; it cannot be a legitimate joiner.
                for offset, ch in enumerate(run):
                    if r.by_cp[ord(ch)].key != "tag":
                        per_cat.setdefault(r.by_cp[ord(ch)].key, []).append((start + offset, ch))
                continue
            if len(run) >= r.thresholds["run_high"]:
                sev = Severity.CRITICAL if len(run) >= r.thresholds["run_critical"] else Severity.HIGH
                hidden = _decode_selectors(run)
                extra = f'; as variation-selector bytes it reads "{_preview(hidden)}"' if len(hidden) >= 4 else ""
                self.add("unicode.invisible-run", sev, lineno,
                         f"run of {len(run)} invisible characters at column {start + 1} ({_codepoints(list(run))}){extra}",
                         "delete the invisible run; nothing legitimate needs this many in a row", context)
                continue
            if file_start and start == 0 and ord(run[0]) == _BOM:
                rel_note = " (the frontmatter check reports its effect on SKILL.md)" if self.rel == MANIFEST else ""
                self.add("unicode.bom", Severity.INFO, lineno, f"byte-order mark U+FEFF at the start of the file{rel_note}",
                         "save the file as UTF-8 without BOM", "<U+FEFF>")
                run, start = run[1:], start + 1
                if not run:
                    continue
            if _legit_joiner(line, start, start + len(run)):
                self.legit["joiner"] += 1
                continue
            for offset, ch in enumerate(run):
                cat = r.by_cp[ord(ch)]
                if cat.key == "variation_selector" and len(run) == 1 and start > 0 and not line[start - 1].isspace():
                    self.legit["variation_selector"] += 1  # an emoji or ideograph variant: ordinary text
                    continue
                per_cat.setdefault(cat.key, []).append((start + offset, ch))
        for key, hits in per_cat.items():
            cat = r.categories[key]
            sev = cat.severity
            if key == "zero_width" and len(hits) >= r.thresholds["per_line_medium"]:
                sev = Severity.MEDIUM
            first = hits[0][0]
            zone = next((z for col, _ in hits if (z := self.zones.where(lineno, line, col))), None) if self.zones else None
            where = ""
            if zone and sev.rank < Severity.HIGH.rank:
                sev, where = Severity.HIGH, f", inside {zone}: one is enough to change what runs or where it points"
            self.add(cat.rule, sev, lineno,
                     f"{len(hits)} {cat.label}{'s' if len(hits) > 1 else ''} from column {first + 1}: "
                     f"{_codepoints([ch for _, ch in hits])}{where}",
                     cat.suggestion, _visible(line[max(0, first - 20):first + 40]))

    def _tags(self, lineno: int, line: str, start: int, tags: str, context: str) -> None:
        cat = rules().categories["tag"]
        if start > 0 and ord(line[start - 1]) == _BLACK_FLAG and _FLAG_TAGS.fullmatch(tags):
            self.add("unicode.emoji-tag-flag", Severity.INFO, lineno, f"subdivision flag emoji at column {start}",
                     "none needed; this is a regional flag such as England's", context)
            return
        payload = "".join(chr(ord(c) - 0xE0000) for c in tags if 0xE0020 <= ord(c) <= 0xE007E)
        shown = f': hidden text "{_preview(payload)}"' if payload else ""
        self.add(cat.rule, cat.severity, lineno, f"{len(tags)} {cat.label}s at column {start + 1}{shown}",
                 cat.suggestion, f"payload: {_preview(payload)}" if payload else context)

    def homoglyphs(self, lineno: int, line: str, seen: set[tuple[str, str]]) -> None:
        r = rules()
        conf = r.homoglyph
        covered: list[tuple[int, int]] = []
        hosts = [(m.start(1), m.group(1), True) for m in _URL_HOST.finditer(line)]
        hosts += [(m.start(1), m.group(1), False) for m in _BARE_HOST.finditer(line)]
        for start, host, is_url in hosts:
            if any(s <= start < e for s, e in covered):
                continue
            # A URL host is spoofed if it mixes scripts anywhere (аррӏе.com); a bare dotted name only
            # if one label does, so a Cyrillic file name with a .txt extension is left alone.
            parts = [host] if is_url else host.split(".")
            bad = [p for p in parts if self._mixed(p)]
            if bad:
                covered.append((start, start + len(host)))
                self._homoglyph(conf["host_rule"], conf["host_severity"], lineno, "host", host, seen,
                                "retype the host with ASCII letters or write it as punycode (xn--...)")
        for m in _WORD.finditer(line):
            word = m.group()
            if len(word) >= conf["min_word_length"] and not any(s <= m.start() < e for s, e in covered) and self._mixed(word):
                self._homoglyph(conf["word_rule"], conf["word_severity"], lineno, "word", word, seen,
                                "retype the word with Latin letters only")

    @staticmethod
    def _mixed(text: str) -> bool:
        """Latin letters plus Cyrillic/Greek letters that all look Latin. One foreign letter that
        does not ('nαβγ', a Bulgarian word with a stray Latin B) shows itself, so it is no spoof."""
        confusable = rules().confusable
        foreign = [c for c in text if _script(c) in ("CYRILLIC", "GREEK")]
        return bool(foreign) and all(c in confusable for c in foreign) and any(_script(c) == "LATIN" for c in text)

    def _homoglyph(self, rule: str, severity: str, lineno: int, kind: str, text: str, seen: set[tuple[str, str]], fix: str) -> None:
        if (rule, text) in seen:  # one finding per spoofed spelling per file is enough
            return
        seen.add((rule, text))
        foreign = [c for c in text if c in rules().confusable]
        scripts = "/".join(sorted({rules().confusable[c].title() for c in foreign}))
        self.add(rule, Severity.parse(severity), lineno,
                 f'{kind} "{_visible(text)}" mixes Latin with {scripts} look-alike letters: {_codepoints(foreign)}',
                 fix, _visible(text))


def _lines_touched(text: str, patterns: tuple[re.Pattern[str], ...]) -> list[int]:
    """Line numbers (1-based, ascending) that some match of ``patterns`` in the whole text touches."""
    ends = [m.start() for m in _NEWLINE.finditer(text)]
    found: set[int] = set()
    for pattern in patterns:
        for m in pattern.finditer(text):
            found.update(range(bisect.bisect_left(ends, m.start()) + 1, bisect.bisect_left(ends, max(m.end() - 1, m.start())) + 2))
    return sorted(found)


def scan_text(rel: str, text: str, zones: Zones | None = None) -> tuple[list[Finding], Counter[str]]:
    """Findings of one file's text, and counts of legitimate invisible characters seen. ``zones``
    says where a single invisible character is HIGH (see :class:`Zones`)."""
    r = rules()
    scan = _FileScan(rel, zones)
    seen: set[tuple[str, str]] = set()
    if r.clean(text):
        return scan.findings, scan.legit  # nothing a line below could match: one test, not two per line
    # Split on LF only, as editors number lines; str.splitlines would also break on U+2028 etc.
    lines = text.split("\n")
    # Only the lines holding a character of either class can match below: found with one pass of each
    # class over the text (a file with one emoji is otherwise two searches for every line).
    for number in _lines_touched(text, (r.invisible, r.has_confusable)):
        line = lines[number - 1].removesuffix("\r")
        if r.invisible.search(line):
            scan.invisibles(number, line, file_start=number == 1)
        if r.has_confusable.search(line):
            scan.homoglyphs(number, line, seen)
    return scan.findings, scan.legit


class UnicodeCheck(Check):
    name = "unicode"
    reads = Reads(include_eval_dirs=True)
    description = "hidden Unicode: tag smuggling, bidi controls, zero-width runs, mixed-script homoglyphs"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        findings: list[Finding] = []
        legit: Counter[str] = Counter()
        files = 0
        for rel, text in skill.text_files(include_eval_dirs=True):
            files += 1
            r = rules()
            plain = r.ascii_free and text.isascii()
            invisible = not plain and r.invisible.search(text) is not None
            if not invisible and (plain or not r.has_confusable.search(text)):
                continue  # scan_text would find nothing in it (r.clean): each pass over the text made once
            # Zones need the Markdown parsed: only for a file that holds an invisible character at all.
            found, ok = scan_text(rel, text, Zones.of(skill, rel) if invisible else None)
            findings.extend(found)
            legit.update(ok)
        return self.result(findings, metrics={"files_scanned": files, "legit_joiners": legit["joiner"],
                                              "legit_variation_selectors": legit["variation_selector"]})


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [UnicodeCheck()]
