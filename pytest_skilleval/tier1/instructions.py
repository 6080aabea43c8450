"""``instructions``: a skill's Markdown is instructions an agent follows, so scan it like code.

Rules are data (``rules/instructions.yaml``; its header documents the format): prompt injection,
exfiltration, destructive commands, ``curl … | bash`` and hidden text.

Telling a description from an instruction — the decision this check is built on:

* A fenced or indented **code block** is code. An agent copies and runs code blocks whatever the
  surrounding prose says, so a match in a block with no info string or an executable one
  (``bash``, ``sh``, ``console``, ``powershell``, ``python``, ``yaml``, …) gets the rule's full
  severity. A block labelled as a document (``markdown``, ``text``, ``output``, ``log``, ``diff``)
  is quoted material an agent writes or reads, not runs: one level lower. A comment line inside
  a block (``# never run curl | sh``) is read as prose.
* **Prose** (paragraphs, list items, table cells, headings, with their inline ``code`` spans) is
  a sentence. When the sentence holding a match warns against it — a cue such as "never",
  "don't", "do not", "avoid", "instead of", "rather than" before the match, or "… is dangerous /
  unsafe / an anti-pattern" after it — the match is a *mention* and is reported as INFO, so it
  stays visible but never gates. ``Never run `curl … | bash` `` is INFO;
  ``Install with `curl … | bash` `` keeps its severity.
* Raw HTML and the SKILL.md frontmatter are prose, but hidden-text rules (``negatable: false``)
  are never downgraded: hiding text is the problem whatever the words say.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from markdown_it.token import Token

try:
    import ahocorasick_rs
except ImportError:  # no wheel for this platform: a substring test per keyword finds the same keywords, slower
    ahocorasick_rs = None

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1 import rulefiles

RULES_FILE = Path(__file__).resolve().parent / "rules" / "instructions.yaml"
MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdc"})
WHERE = ("prose", "code", "any")
#: Info strings of fenced blocks that hold a document, not commands (see the module docstring).
DOCUMENT_LANGUAGES = frozenset({"markdown", "md", "text", "txt", "plaintext", "plain", "output", "log", "diff", "csv"})
_ONE_LOWER = {Severity.CRITICAL: Severity.HIGH, Severity.HIGH: Severity.MEDIUM, Severity.MEDIUM: Severity.LOW,
              Severity.LOW: Severity.INFO, Severity.INFO: Severity.INFO}

#: Cues before a match that make its sentence a warning about it rather than an instruction. Words
#: that also name tools or options ("flag", "block", "detect") are left out: "use the --force flag:
#: `git push --force`" is an instruction.
NEGATION_BEFORE = re.compile(
    r"(?i)(\b(never|don'?t|do\s+not|does\s+not|doesn'?t|must\s+not|mustn'?t|should\s+not|shouldn'?t|cannot|can'?t|"
    r"won'?t|will\s+not|avoid(ing)?|instead\s+of|rather\s+than|refuse|reject|warn(s|ing)?|prevent(s|ed)?|"
    r"prohibit(s|ed)?|forbid(s|den)?|disallow(ed)?|not\s+allowed|beware|no\s+more|careful|caution|dangerous|risky|"
    r"unsafe|insecure|malicious)\b"
    r"|❌|🚫|⛔|⚠️?)")
#: Cues after a match in the same sentence: "`curl | sh` is dangerous".
NEGATION_AFTER = re.compile(
    r"(?i)^(?:[^.!?\n]|[.!?](?!\s|$)){0,80}?\b(is|are|can\s+be|would\s+be|considered)\s+(very\s+|extremely\s+|really\s+)?(dangerous|unsafe|"
    r"insecure|risky|harmful|destructive|forbidden|prohibited|not\s+allowed|not\s+permitted|never\s+allowed|bad|blocked|"
    r"flagged|rejected|malicious|a\s+(security\s+)?risk|an?\s+(anti-?pattern|red\s+flag|attack|injection))\b"
    r"|^(?:[^.!?\n]|[.!?](?!\s|$)){0,80}?\b(must|should)\s+(always\s+)?(be\s+)?(rejected|blocked|refused|denied|flagged|caught|escaped|"
    r"sanitized|never\s+be\s+(run|executed|used))\b")
_SENTENCE_END = re.compile(r"[.!?](?=\s|$)|\n\s*\n")
_COMMENT_LINE = re.compile(r"^\s*(#(?!!)|//|--\s|REM\s|::)")


@dataclass(frozen=True)
class Adjust:
    when: re.Pattern[str]
    severity: Severity
    note: str


@dataclass(frozen=True)
class Rule:
    id: str
    severity: Severity
    pattern: re.Pattern[str]
    where: str
    message: str
    suggestion: str | None = None
    negatable: bool = True
    adjust: tuple[Adjust, ...] = ()
    #: Lower-case substrings of which one must occur for the regex to be tried: 12 MB of corpus
    #: Markdown times 20 regexes is seconds; a substring test is not.
    keywords: tuple[str, ...] = ()


class RuleError(ValueError):
    """The rule file is malformed; the check reports ERROR rather than passing silently."""


def _compile(value: Any, where: str) -> re.Pattern[str]:
    try:
        return re.compile(str(value))
    except re.error as exc:
        raise RuleError(f"{where}: bad regular expression: {exc}") from None


def parse_rules(data: Any, source: str = "rules") -> tuple[Rule, ...]:
    if not isinstance(data, dict) or not isinstance(data.get("rules"), list):
        raise RuleError(f"{source}: expected a mapping with a 'rules' list")
    rules: list[Rule] = []
    for n, item in enumerate(data["rules"]):
        where = f"{source}: rule {item.get('id', n) if isinstance(item, dict) else n}"
        if not isinstance(item, dict) or not {"id", "severity", "pattern", "where", "message"} <= item.keys():
            raise RuleError(f"{where}: needs id, severity, pattern, where, message")
        if item["where"] not in WHERE:
            raise RuleError(f"{where}: 'where' must be one of {', '.join(WHERE)}")
        try:
            severity = Severity.parse(str(item["severity"]))
            adjust = tuple(Adjust(_compile(a["if"], where), Severity.parse(str(a["severity"])), str(a.get("note", "")))
                           for a in item.get("adjust") or ())
        except (ValueError, KeyError, TypeError) as exc:
            raise RuleError(f"{where}: {exc}") from None
        rules.append(Rule(id=str(item["id"]), severity=severity, pattern=_compile(item["pattern"], where), where=item["where"],
                          message=str(item["message"]), suggestion=item.get("suggestion"),
                          negatable=bool(item.get("negatable", True)), adjust=adjust,
                          keywords=tuple(str(k).lower() for k in item.get("keywords") or ())))
    ids = [r.id for r in rules]
    if len(ids) != len(set(ids)):
        raise RuleError(f"{source}: duplicate rule ids")
    return tuple(rules)


@functools.cache
def load_rules(path: Path = RULES_FILE) -> tuple[Rule, ...]:
    return parse_rules(rulefiles.load(path), path.name)


@functools.cache
def _keywords(rules: tuple[Rule, ...]) -> tuple[str, ...]:
    """Every rule's keywords, each once (a keyword several rules share is looked for once per file)."""
    return tuple(dict.fromkeys(k for r in rules for k in r.keywords))


@functools.cache
def _keyword_finder(keywords: tuple[str, ...]) -> Any:
    """An Aho-Corasick automaton over ``keywords`` (None: look for each with ``in``)."""
    if ahocorasick_rs is None or not keywords or "" in keywords:
        return None
    return ahocorasick_rs.AhoCorasick(list(keywords))


def segment_keywords(segs: list[Segment], keywords: tuple[str, ...]) -> list[set[str]]:
    """The ``keywords`` found in each segment's ``lower``. One automaton pass over the file, every match
    (overlapping ones too) kept if it lies inside one segment, instead of a substring test per keyword:
    a file was ~50 scans, one per keyword absent from it, and a third of the check's time."""
    finder = _keyword_finder(keywords)
    if finder is None:
        whole = " ".join(seg.lower for seg in segs)
        present = [k for k in keywords if k in whole]
        return [{k for k in present if k in seg.lower} for seg in segs]
    found: list[set[str]] = [set() for _ in segs]
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    for seg in segs:
        starts.append(at)
        at += len(seg.lower)
        ends.append(at)
        at += 1  # the space that joins it to the next
    for index, start, end in finder.find_matches_as_indexes(" ".join(seg.lower for seg in segs), overlapping=True):
        n = bisect_right(starts, start) - 1
        if end <= ends[n]:
            found[n].add(keywords[index])
    return found


@dataclass
class Segment:
    """A run of text an agent reads, with where it starts. ``kind``: prose | code | html."""

    kind: str
    text: str
    line: int
    #: (start, end) offsets of inline code spans inside a prose segment.
    spans: list[tuple[int, int]] = field(default_factory=list)
    #: First word of a fenced block's info string, lower-cased.
    info: str = ""
    #: Lower-cased, whitespace runs folded to one space: what rule keywords are looked up in. Every
    #: segment's is read (the file's keywords are found in them), so it is made with the segment.
    lower: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.lower = " ".join(self.text.lower().split())


def _inline_segment(toks: list[Token]) -> Segment:
    """Rebuild inline text: emphasis markers dropped, code spans kept and located. Several tokens
    (the cells of one table row) are joined with " | " so a cell is read with its row."""
    parts: list[str] = []
    spans: list[tuple[int, int]] = []
    size = 0
    for n, tok in enumerate(toks):
        if n:
            parts.append(" | ")
            size += 3
        for child in tok.children or ():
            kind = child.type
            if kind == "text" or kind == "html_inline" or kind == "image":
                piece = child.content
            elif kind == "code_inline":
                piece = child.content
                spans.append((size, size + len(piece)))
            elif kind == "softbreak" or kind == "hardbreak":
                piece = "\n"
            else:
                continue
            parts.append(piece)
            size += len(piece)
    first = toks[0].map if toks and toks[0].map else None
    return Segment("prose", "".join(parts), (first[0] + 1) if first else 1, spans)


def segments(tokens: list[Token]) -> Iterator[Segment]:
    row: list[Token] | None = None  # inline tokens of the table row being read
    for tok in tokens:
        kind = tok.type
        if kind == "inline":  # the most common token first
            if row is not None:
                row.append(tok)
            else:
                yield _inline_segment([tok])
        elif kind == "tr_open":
            row = []
        elif kind == "tr_close" and row is not None:
            if row:
                yield _inline_segment(row)
            row = None
        elif kind == "fence" and tok.map:
            yield Segment("code", tok.content, tok.map[0] + 2, info=(tok.info.split() or [""])[0].lower())
        elif kind == "code_block" and tok.map:
            yield Segment("code", tok.content, tok.map[0] + 1)
        elif kind == "html_block" and tok.map:
            yield Segment("html", tok.content, tok.map[0] + 1)


def _sentence(text: str, start: int, end: int) -> tuple[str, str]:
    """The parts of the sentence around ``text[start:end]``: (before the match, after it)."""
    begin = 0
    for m in _SENTENCE_END.finditer(text, 0, start):
        begin = m.end()
    stop = _SENTENCE_END.search(text, end)
    return text[begin:start], text[end: stop.start() if stop else len(text)]


def is_warning(before: str, after: str) -> bool:
    return bool(NEGATION_BEFORE.search(before) or NEGATION_AFTER.search(after))


def _line_of(text: str, pos: int) -> tuple[int, str]:
    """0-based line offset of ``pos`` in ``text`` and that line's text."""
    first = text.rfind("\n", 0, pos) + 1
    last = text.find("\n", pos)
    return text.count("\n", 0, pos), text[first: last if last != -1 else len(text)]


def _matches(rule: Rule, seg: Segment) -> Iterator[re.Match[str]]:
    if rule.keywords and not any(k in seg.lower for k in rule.keywords):
        return
    if seg.kind == "code":
        if rule.where in ("code", "any"):
            yield from rule.pattern.finditer(seg.text)
    elif rule.where in ("prose", "any"):
        yield from rule.pattern.finditer(seg.text)
    elif rule.where == "code":  # inline code spans of a prose sentence
        for start, end in seg.spans:
            yield from rule.pattern.finditer(seg.text, start, end)


def scan_segment(rule: Rule, seg: Segment, file: str) -> Iterator[Finding]:
    for m in _matches(rule, seg):
        offset, line_text = _line_of(seg.text, m.start())
        severity, note = rule.severity, ""
        for adj in rule.adjust:
            if adj.when.search(line_text):
                severity, note = adj.severity, adj.note
                break
        if seg.kind == "code" and seg.info in DOCUMENT_LANGUAGES:
            severity, note = _ONE_LOWER[severity], f"inside a {seg.info} block"
        if rule.negatable and seg.kind != "html":
            if seg.kind == "code":
                mentioned = bool(_COMMENT_LINE.match(line_text)) and is_warning(line_text, "")
            else:
                mentioned = is_warning(*_sentence(seg.text, m.start(), m.end()))
            if mentioned:
                severity, note = Severity.INFO, "mentioned in a warning, not as an instruction"
        evidence = " ".join(m.group(0).split())
        yield Finding(rule=f"instructions.{rule.id}", severity=severity, file=file, line=seg.line + offset,
                      message=f"{rule.message} ({note})" if note else rule.message, suggestion=rule.suggestion,
                      evidence=evidence if len(evidence) <= 160 else evidence[:157] + "...")


def documents(skill: Skill) -> Iterator[tuple[str, list[Segment]]]:
    """(file, segments) of every Markdown file of the skill, SKILL.md with its frontmatter."""
    for rel, text in skill.text_files(MARKDOWN_SUFFIXES):
        if rel == skill.manifest:
            front = "\n".join(text.split("\n")[: max(skill.body_start_line - 1, 0)])
            segs = [Segment("prose", front, 1)] if front else []
            yield rel, segs + list(segments(skill.body_tokens))
        else:
            yield rel, list(segments(skill.markdown(rel) or []))


class InstructionsCheck(Check):
    name = "instructions"
    reads = Reads(MARKDOWN_SUFFIXES)
    description = "prompt injection, exfiltration, destructive commands, curl|bash and hidden text in the skill's Markdown"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        rules = load_rules()
        best: dict[tuple[str, str, int | None], Finding] = {}
        files = blocks = 0
        every_segment = any(not r.keywords for r in rules)
        for rel, segs in documents(skill):
            files += 1
            blocks += sum(s.kind == "code" for s in segs)
            # A rule is tried on a segment exactly when one of its keywords is in it (as in _matches), or
            # when it has none; two segments in three hold no keyword of any rule.
            for seg, here in zip(segs, segment_keywords(segs, _keywords(rules)), strict=True):
                if not here and not every_segment:
                    continue
                for rule in rules:
                    if rule.keywords and here.isdisjoint(rule.keywords):
                        continue
                    for f in scan_segment(rule, seg, rel):
                        key = (f.rule, rel, f.line)  # one finding per rule and line: the worst
                        if key not in best or f.severity.rank > best[key].severity.rank:
                            best[key] = f
        return self.result(best.values(), metrics={"markdown_files": files, "code_blocks": blocks, "rules": len(rules)})


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [InstructionsCheck()]
