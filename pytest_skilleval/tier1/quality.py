"""``quality``: a 0-100 score of how well a skill is written for an agent, with every lost point named.

Four dimensions start at 100 and lose the points of each broken rule in :data:`RULES` (floored at 0);
overall = 0.35·correctness + 0.25·discoverability + 0.25·reliability + 0.15·efficiency, rounded half-up
to 0.1, passing at ``--skilleval-min-quality`` (70). Deductions are not findings, the score decides,
except three: a SKILL.md over 5000 tokens (chars/4) is also a MEDIUM finding, as an agent pays for it
on every trigger; one far beyond the spec's guidance (over 1000 body lines or 10,000 tokens) is HIGH
and fails, naming the largest sections to move into references/; and a description that never says
when to use the skill is a MEDIUM finding, since agents choose skills by it.

The rules are SkillEvaluator's (reference §2.9) with its inconsistencies fixed: no top-level ``version``
needed (the spec keeps it in ``metadata.version``); a code block is an example; headings, code and links
come from markdown-it (a ``# comment`` in a fence is no heading); sections match synonyms; no literal
``run_script``, scripts only have to be named. Calibration changed more: "general" is not vague (catalogs
write "not for general RDMA theory", the boundary we want); ``argument-hint`` may hold ``<placeholders>``;
only folders of documents must be mentioned, not packaging (``.claude-plugin/``), tests or benchmarks;
length is counted in words, as one long paragraph is one line; a usage section that is a command block
needs no verbs. ``metadata.author``/``tags`` and the reserved words anthropic/claude are catalog rules,
for ``--skilleval-profile=strict`` only. Unusable frontmatter, no description or a near-empty body costs
enough that the skill stays under 70 however good the rest is, and never raises.

Calibration over the 754 corpus skills (spec profile; the corpus ships no code, so skills whose scripts
were omitted look guide-only or resource-based): min 80.0, median 95.0, max 100.0, 100 % pass 70
(NVIDIA 83.8/96.3/100, Anthropic 86.5/92.2/97.5, awesome-copilot 80.0/93.8/98.8); 691 A, 63 B; 2.8 %
score under 85, 8.4 % under 90. Strict profile: min 76.5, median 91.5. The curated catalogs all pass
(NVIDIA's already gates on this score), so the pass mark is a floor against broken, empty or
undiscoverable skills, and the grade ranks the rest; the bottom is thin community guides (under 150
words, no example, no word on errors). Most common deductions: no Limitations 80 %, no Troubleshooting
63 %, no Purpose/Overview 58 %, no Requirements 52 %, broad description without a boundary 21 %, no
example 17 %, no trigger in the description 15 %, no word on errors 14 %, description in first/second
person 14 %, prose usage section 6 %. So common, the section rules cost 5; the rest cost 10-15. 24
skills (3 %) exceed 5000 tokens, two of them Anthropic's (claude-api, skill-creator).
"""

from __future__ import annotations

import functools
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from itertools import islice

import pytest

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Deduction, Finding, Severity
from pytest_skilleval.skill import MANIFEST, Skill, markdown_links

#: Percent weights; integers so the overall score is exact before it is rounded.
WEIGHTS = {"correctness": 35, "discoverability": 25, "reliability": 25, "efficiency": 15}
GRADES = ((90, "A"), (80, "B"), (70, "C"), (60, "D"))
MAX_TOKENS = 5000
#: The spec's guidance for the body (about 500 lines / 5,000 tokens) times two: past either, the
#: skill costs every trigger what a whole reference library should, and fails.
FAR_LINES, FAR_TOKENS = 1000, 2 * MAX_TOKENS
SCRIPT_SUFFIXES = frozenset({".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1", ".go"})
REFERENCE_DIRS = frozenset({"references", "reference"})
#: Folders that serve the author, not the agent; dot-folders (.claude-plugin) are packaging.
DEV_DIRS = frozenset({"scripts", "tests", "test", "fixtures", "benchmark", "benchmarks", "__pycache__"})
#: A folder the agent itself reads: it holds documents, or is named for them.
READ_DIRS = frozenset({"references", "reference", "assets", "templates", "resources", "examples"})
DOC_SUFFIXES = frozenset({".md", ".markdown", ".txt", ".rst", ".html", ".pdf"})


def _words(*alternatives: str) -> re.Pattern[str]:
    """Whole words, any case: 'use' must not match 'user' or 'because'."""
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")\b", re.IGNORECASE)


#: Heading synonyms: authors name the same section many ways, and none of them is wrong.
SECTIONS = {
    "usage": _words("usage", "instructions?", "workflow", "steps?", "quick ?start", "how to use", "process", "procedure",
                    "getting started"),
    "examples": _words("examples?"),
    "troubleshooting": _words("troubleshooting", "common (?:issues|problems|errors|mistakes)", "faq", "pitfalls?", "gotchas?",
                              "error handling"),
    "requirements": _words("requirements?", "prerequisites?", "setup", "set up", "dependencies", "installation", "compatibility"),
    "limitations": _words("limitations?", "when not to use", "out of scope", "non-goals", "caveats"),
    "purpose": _words("purpose", "overview", "when to use", "about", "introduction", "role"),
}
SPEC_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
XML_TAG = re.compile(r"</?[A-Za-z][\w.:-]*(?:\s[^<>]*)?/?>")
EXAMPLE_LABEL = re.compile(r"^\W*examples?\W*:", re.IGNORECASE | re.MULTILINE)
FENCE = re.compile(r"^\s*(?:```|~~~)", re.MULTILINE)
WORD_CHAR = re.compile(r"\w")
TRIGGER = _words("use", "uses", "used", "when", "for", "helps?", "allows?")
VAGUE = _words("something", "things", "stuff", "various")
PERSONAL = _words("i", "me", "my", "we", "our", "you", "your")
GENERIC = _words("data", "files", "documents", "project", "manage", "handle", "process")
BOUNDARY = re.compile(r"\bnot (?:for|intended)\b|\bdo not use\b|\bdon't use\b|\binstead\b|\bavoid\b|\bunless\b", re.IGNORECASE)
ERROR_WORDS = _words(r"errors?", r"exceptions?", "invalid", r"fail\w*", r"validat\w*", r"troubleshoot\w*", "retry")
SCRIPT_GUARD = re.compile(r"\b(?:try|except|catch|raise|throw|assert|die|panic|trap)\b|set -e|set -o errexit|\|\||exit [1-9]")
ACTION_VERBS = _words("use", "call", "run", "execute", "pass", "set", "add", "mark", "update", "keep", "create", "read", "write",
                      "open", "check", "install", "configure", "ask", "generate", "follow", "apply", "verify", "build", "load",
                      "save", "copy", "edit", "start", "invoke", "choose", "select", "review", "test", "see", "include",
                      "construct", "provide", "return", "ensure", "define", "identify", "determine", "confirm", "make", "find",
                      "get", "list", "report", "compare", "convert", "deploy", "fetch", "import", "export", "submit", "launch",
                      "wait", "pick", "prefer", "avoid", "do", "inspect", "query", "search", "record", "replace", "remove",
                      "delete", "append", "insert", "prepare", "analy[sz]e")
#: A line of the body holding a word character that does not open or close a fence (each line as
#: ``WORD_CHAR.search(line) and not FENCE.match(line)`` finds it, all lines in one pass).
WORDY_LINE = re.compile(r"^(?![^\S\n]*(?:```|~~~))(?=[^\n]*?\w)[^\n]*", re.MULTILINE)
STRUCTURE = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s|^\s*(?:```|~~~)|^#{2,6}\s", re.MULTILINE)
BUZZWORDS = _words("utili[sz]e", "facilitate", "leverage", "paradigm", "synergy", "seamless(?:ly)?", "cutting-edge")
#: A lower-case piece of every BUZZWORDS alternative: a cheap test before the pattern runs over a whole body.
#: (``utilise``/``utilize``, not ``utili``: "utility" and "utilities" are in one body in ten.)
BUZZWORD_STEMS = ("utilise", "utilize", "facilitate", "leverage", "paradigm", "synergy", "seamless", "cutting-edge")
#: The characters that re's IGNORECASE matches to an ASCII letter (İ ı → i, ſ → s, K → k; every other
#: code point checked) although str.lower() does not give that letter alone.
_FOLDS_TO_ASCII = ("\u0130", "\u0131", "\u017f", "\u212a")
WINDOWS_PATH = re.compile(r"\b(?:scripts|references|assets|templates)\\[\w.-]")
#: What every WINDOWS_PATH match holds: a body holding none is not searched.
WINDOWS_PATH_NEEDS = ("scripts\\", "references\\", "assets\\", "templates\\")
RESERVED = re.compile(r"anthropic|claude", re.IGNORECASE)
VAGUE_STEM = re.compile(r"(?:docs?|file|data|info|misc|temp|tmp|notes?)?[-_ ]?\d*", re.IGNORECASE)


def is_script(rel: str) -> bool:
    """A file the reliability rules read for error handling: code in scripts/."""
    return rel.startswith("scripts/") and posixpath.splitext(rel)[1].lower() in SCRIPT_SUFFIXES


def _strings(value: object, depth: int = 0) -> list[str]:
    if depth > 20:  # frontmatter is shallow; a deeper one is hostile and must not exhaust the stack
        return []
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, depth + 1)]
    return [value] if isinstance(value, str) else []


WORD = re.compile(r"\w+")
#: The most words a rule asks for (``body-too-short`` of a guide-only skill): :attr:`Facts.words` stops there.
WORDS_COUNTED = 150


class Facts:
    """What the rules look at, computed once per skill so that each rule is one expression."""

    def __init__(self, skill: Skill) -> None:
        self.skill = skill
        self.loaded = skill.frontmatter.data is not None
        self.raw_name: object = skill.meta.get("name")
        self.description = skill.description.strip()
        self.body_lines = skill.body.split("\n")
        # words, not lines: one long paragraph is one line and may still be a whole instruction; counted
        # only as far as a rule looks (a 300 KB body is not split into a list of its words for that)
        self.words = sum(1 for _ in islice(WORD.finditer(skill.body), WORDS_COUNTED))
        self.headings = skill.headings()
        self.files = [e.rel for e in skill.files()]
        self.scripts = [r for r in self.files if is_script(r)]
        tops = {r.split("/", 1)[0] for r in self.files if "/" in r}
        self.resource_dirs = sorted(d for d in tops if d not in DEV_DIRS and not d.startswith("."))
        self.references = [r for r in self.files if r.split("/", 1)[0] in REFERENCE_DIRS]
        # chars/4: the usual rough estimate, and the one SkillEvaluator's 5000-token budget was set with
        self.tokens = len(skill.manifest_text or "") // 4

    @functools.cached_property
    def frontmatter_problem(self) -> str | None:
        if self.loaded:
            return None
        problems = [p for p in self.skill.load_findings + self.skill.frontmatter.findings if p.severity.at_least(Severity.HIGH)]
        return problems[0].message if problems else "no usable YAML mapping"

    @functools.cached_property
    def xml_field(self) -> str | None:
        # argument-hint is exempt: '<file>' placeholders are that field's documented convention
        return next((k for k, v in self.skill.meta.items() if k not in ("name", "description", "argument-hint")
                     and any(XML_TAG.search(s) for s in _strings(v))), None)

    def largest_sections(self, count: int = 3) -> list[tuple[str, int, int]]:
        """The ``count`` heaviest second-level sections of the body, (title, lines, tokens), by tokens
        (chars/4, as the budget is counted): what to move into references/ when SKILL.md is far too long."""
        start, total = self.skill.body_start_line, len(self.body_lines)
        tops = [(text, line) for level, text, line in self.headings if level == 2] or \
               [(text, line) for level, text, line in self.headings if level == 3]
        sizes = []
        for n, (text, line) in enumerate(tops):
            end = tops[n + 1][1] if n + 1 < len(tops) else start + total
            chars = sum(len(ln) + 1 for ln in self.body_lines[line - start:end - start])
            sizes.append((text, end - line, chars // 4))
        return sorted(sizes, key=lambda s: -s[2])[:count]

    def has_section(self, group: str) -> bool:
        return any(SECTIONS[group].search(text) for _, text, _ in self.headings)

    def section(self, group: str) -> str | None:
        """Text under the shallowest heading of ``group`` ("## Workflow" over its "### Step 1"), up to the
        next heading at its level or above."""
        hits = [(level, i) for i, (level, text, _) in enumerate(self.headings) if SECTIONS[group].search(text)]
        if not hits:
            return None
        level, i = min(hits)
        start = self.skill.body_start_line
        end = next((ln for lv, _, ln in self.headings[i + 1:] if lv <= level), start + len(self.body_lines))
        return "\n".join(self.body_lines[self.headings[i][2] - start + 1:end - start])

    @functools.cached_property
    def has_example(self) -> bool:
        return bool(self.skill.code_blocks()) or self.has_section("examples") or bool(EXAMPLE_LABEL.search(self.skill.body))

    @functools.cached_property
    def distinct_lines(self) -> tuple[int, int]:
        # fences and table separators repeat by nature; only lines with words count
        lines = [ln.strip() for ln in WORDY_LINE.findall(self.skill.body)]
        return len(set(lines)), len(lines)

    @functools.cached_property
    def lowered_body(self) -> str | None:
        return _lowered(self.skill.body)

    @functools.cached_property
    def mentions_errors(self) -> bool:
        """Whether the body holds one of ERROR_WORDS."""
        return _error_words(self.skill.body, self.lowered_body)

    @functools.cached_property
    def buzzwords(self) -> set[str]:
        """BUZZWORDS in the body and the description."""
        description = self.description
        low = None if self.lowered_body is None or any(c in description for c in _FOLDS_TO_ASCII) else \
            self.lowered_body + "\n" + description.lower()
        return _buzzwords(self.skill.body + "\n" + description, low)

    @functools.cached_property
    def skill_type(self) -> str:
        if self.scripts:
            return "hybrid" if self.resource_dirs else "script-based"
        return "resource-based" if self.resource_dirs else "guide-only"

    def mentions(self, rel: str) -> bool:
        """SKILL.md names the file by path or by file name: in a link, a code span or prose."""
        return rel in self.skill.body or posixpath.basename(rel) in self.skill.body

    @functools.cached_property
    def silent_dirs(self) -> list[str]:
        """Folders of documents that SKILL.md never points at, so the agent never opens them."""
        def inside(d: str) -> list[str]:
            return [r for r in self.files if r.startswith(f"{d}/")]

        read = [d for d in self.resource_dirs
                if d in READ_DIRS or any(posixpath.splitext(r)[1].lower() in DOC_SUFFIXES for r in inside(d))]
        return [d + "/" for d in read if f"{d}/" not in self.skill.body and not any(self.mentions(r) for r in inside(d))]

    @functools.cached_property
    def nested_link(self) -> str | None:
        """The first link from a reference to another reference: agents read such second-hand files only in part."""
        for rel in (r for r in self.references if r.endswith(".md")):
            for link in markdown_links(self.skill.markdown(rel) or []):
                target = link.target.split("#")[0].split("?")[0]
                inside = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
                # a link leaving the skill is the code-integrity check's business, not nesting
                if target.endswith(".md") and ":" not in target and not inside.startswith("../") and inside != MANIFEST:
                    return f"{rel} links to {target}"
        return None


Test = Callable[[Facts], str | None]


@dataclass(frozen=True)
class Rule:
    dimension: str
    name: str
    points: int
    #: the reason for the deduction when the rule is broken, None when the skill keeps it
    test: Test
    strict_only: bool = False


def _usage_lacks_verbs(f: Facts) -> bool:
    # a command block is an instruction in itself; the vocabulary is English, so other languages lose here
    text = f.section("usage") or ""
    return bool(text.strip()) and not FENCE.search(text) and not ACTION_VERBS.search(text)


def _vague_stems(f: Facts) -> list[str]:
    stems = [posixpath.splitext(posixpath.basename(r))[0] for r in f.references if r.endswith(".md")]
    return [s for s in stems if len(s) < 3 or VAGUE_STEM.fullmatch(s)]


def _unguarded(f: Facts) -> list[str]:
    return [s for s in f.scripts if (text := f.skill.text(s)) is not None and not SCRIPT_GUARD.search(text)]


def _buzzwords(text: str, low: str | None = None) -> set[str]:
    """BUZZWORDS found in ``text``, lower-cased. A text holding none of their stems in lower case cannot
    match, unless it holds a character that IGNORECASE matches to an ASCII letter while str.lower()
    does not lower it to that letter: then the pattern decides alone."""
    low = _lowered(text) if low is None else low
    if low is None:
        return {m.group(0).lower() for m in BUZZWORDS.finditer(text)}
    if not any(stem in low for stem in BUZZWORD_STEMS):
        return set()
    return {m.group(0) for m in _BUZZWORDS_LOWER.finditer(low)}


def _lowered(text: str) -> str | None:
    """``text.lower()``, in which a whole-word pattern of lower-case ASCII letters matches case-sensitively
    where it matches ``text`` ignoring case (at the same places: no other character's lower case is
    longer, and a letter stays a word character); None when ``text`` holds a character IGNORECASE
    matches to an ASCII letter that lower() does not give alone (then only the pattern can tell)."""
    return None if any(c in text for c in _FOLDS_TO_ASCII) else text.lower()


#: BUZZWORDS and ERROR_WORDS as they match in :func:`_lowered` text: twice as fast as IGNORECASE.
_BUZZWORDS_LOWER = re.compile(BUZZWORDS.pattern)
_ERROR_WORDS_LOWER = re.compile(ERROR_WORDS.pattern)
#: How every ERROR_WORDS match begins.
_ERROR_STEMS = ("error", "exception", "invalid", "fail", "validat", "troubleshoot", "retry")


def _error_words(text: str, low: str | None = None) -> bool:
    """Whether ``text`` holds one of ERROR_WORDS, searched from the first place one may begin.
    ``low``: ``_lowered(text)`` if the caller has it."""
    low = _lowered(text) if low is None else low
    if low is None:
        return ERROR_WORDS.search(text) is not None
    starts = [at for stem in _ERROR_STEMS if (at := low.find(stem)) >= 0]
    return bool(starts) and _ERROR_WORDS_LOWER.search(low, min(starts)) is not None


def _first(pattern: re.Pattern[str], text: str) -> str | None:
    m = pattern.search(text)
    return m.group(0) if m else None


C, D, R, E = "correctness", "discoverability", "reliability", "efficiency"
RULES: tuple[Rule, ...] = (
    # correctness: does the skill load, and does its body match what it ships
    Rule(C, "frontmatter-invalid", 50, lambda f: f"frontmatter is unusable ({f.frontmatter_problem}), so agents cannot load "
         "the skill" if f.frontmatter_problem else None),
    Rule(C, "name-missing", 20, lambda f: "frontmatter has no name:" if f.loaded and f.raw_name in (None, "") else None),
    Rule(C, "description-missing", 50, lambda f: "frontmatter has no description:, which the spec requires"
         if f.loaded and not f.description else None),
    Rule(C, "name-format", 15, lambda f: f"name {f.raw_name!r} is not 1-64 lowercase letters, digits and single hyphens"
         if f.raw_name not in (None, "") and not (isinstance(f.raw_name, str) and SPEC_NAME.fullmatch(f.raw_name)
                                                  and len(f.raw_name) <= 64) else None),
    Rule(C, "description-too-long", 10, lambda f: f"description is {len(f.description)} characters; the spec allows 1024"
         if len(f.description) > 1024 else None),
    Rule(C, "xml-in-name", 15, lambda f: "name contains an XML tag"
         if isinstance(f.raw_name, str) and XML_TAG.search(f.raw_name) else None),
    Rule(C, "xml-in-description", 15, lambda f: f"description contains the XML tag {tag!r}; it goes into the agent's prompt"
         if (tag := _first(XML_TAG, f.description)) else None),
    Rule(C, "xml-in-frontmatter", 15, lambda f: f"XML tag in frontmatter field {f.xml_field!r}" if f.xml_field else None),
    Rule(C, "reserved-word", 15, lambda f: f"name contains the reserved word {w!r}"
         if (w := _first(RESERVED, f.skill.name)) else None, strict_only=True),
    Rule(C, "metadata-author", 5, lambda f: None if isinstance(m := f.skill.meta.get("metadata"), dict) and m.get("author")
         else "no metadata.author", strict_only=True),
    Rule(C, "metadata-tags", 5, lambda f: None if isinstance(m := f.skill.meta.get("metadata"), dict) and m.get("tags")
         else "no metadata.tags", strict_only=True),
    # a guide has nothing but its text; a skill with scripts or resources may say less in SKILL.md
    Rule(C, "body-too-short", 15, lambda f: f"body has {f.words} words; a {f.skill_type} skill needs at least {least}"
         if f.words < (least := WORDS_COUNTED if f.skill_type == "guide-only" else 50) else None),
    # heavy on purpose: a good description over an empty body must still land under 70
    Rule(C, "body-nearly-empty", 45, lambda f: f"body has only {f.words} words: no instructions to follow"
         if f.words < 30 else None),
    Rule(C, "no-examples", 10, lambda f: None if f.has_example
         else "no code block, Examples section or 'Example:' line shows the skill in use"),
    # every match holds a backslash: a body without one is not searched
    Rule(C, "windows-paths", 10, lambda f: f"Windows-style path {p!r}…; forward slashes work everywhere"
         if any(n in f.skill.body for n in WINDOWS_PATH_NEEDS) and (p := _first(WINDOWS_PATH, f.skill.body)) else None),
    # the skill's files first: few ship a README.md, every body has links to read
    Rule(C, "links-readme", 5, lambda f: "SKILL.md sends the agent to README.md; the instructions belong in SKILL.md"
         if any(r.lower() == "readme.md" for r in f.files)
         and any(posixpath.basename(k.target.split("#")[0]).lower() == "readme.md" for k in f.skill.links()) else None),
    Rule(C, "scripts-unreferenced", 10, lambda f: f"none of the {len(f.scripts)} file(s) in scripts/ is named in SKILL.md, "
         "so an agent will not run them" if f.scripts and not any(f.mentions(s) for s in f.scripts) else None),
    Rule(C, "resources-unreferenced", 10, lambda f: f"SKILL.md never mentions {', '.join(f.silent_dirs)}, so an agent will "
         "not open it" if f.silent_dirs else None),
    # discoverability: can an agent tell from the description when to pick this skill
    Rule(D, "undiscoverable", 60, lambda f: None if f.description
         else "no description: agents pick skills by their description, so nothing will trigger this one"),
    Rule(D, "description-short", 20, lambda f: f"description is {len(f.description)} characters; under 20 cannot say what "
         "the skill does and when" if 0 < len(f.description) < 20 else None),
    Rule(D, "no-trigger", 10, lambda f: "description never says when to use the skill (use/when/for…)"
         if f.description and not TRIGGER.search(f.description) else None),
    Rule(D, "vague-description", 15, lambda f: f"description uses the vague word {w!r}"
         if (w := _first(VAGUE, f.description)) else None),
    # the description goes into the agent's system prompt, where "I" and "you" name the wrong party
    Rule(D, "personal-description", 10, lambda f: f"description speaks in first/second person ({w!r}); write in the third"
         if (w := _first(PERSONAL, f.description)) else None),
    Rule(D, "no-boundary", 5, lambda f: f"broad description ({w!r}) with no 'not for …'/'instead' to rule out near misses"
         if len(f.description) > 100 and (w := _first(GENERIC, f.description)) and not BOUNDARY.search(f.description) else None),
    Rule(D, "name-short", 5, lambda f: f"name {f.skill.name!r} is under 5 characters, too short to say what it is for"
         if len(f.skill.name) < 5 else None),
    Rule(D, "no-purpose-section", 5, lambda f: None if f.has_section("purpose") else "no Purpose/Overview/When to use section"),
    # reliability: does the skill prepare the agent for things going wrong
    Rule(R, "no-error-guidance", 10, lambda f: None if f.mentions_errors
         else "body never mentions errors, failures or validation"),
    Rule(R, "scripts-unguarded", 5, lambda f: f"no error handling in {', '.join(_unguarded(f)[:3])}" if _unguarded(f) else None),
    Rule(R, "no-requirements-section", 5, lambda f: None if f.has_section("requirements")
         else "no Requirements/Prerequisites/Setup section"),
    Rule(R, "no-limitations-section", 5, lambda f: None if f.has_section("limitations")
         else "no Limitations/When not to use section"),
    Rule(R, "no-troubleshooting-section", 5, lambda f: None if f.has_section("troubleshooting")
         else "no Troubleshooting/Common issues/FAQ/Pitfalls section"),
    # efficiency: does the skill spend the agent's context well
    Rule(E, "too-long", 15, lambda f: f"SKILL.md is about {f.tokens} tokens, over {MAX_TOKENS}" if f.tokens > MAX_TOKENS else None),
    Rule(E, "repetitive", 10, lambda f: "only {} of {} lines are distinct".format(*f.distinct_lines)
         if f.distinct_lines[1] >= 20 and f.distinct_lines[0] < 0.7 * f.distinct_lines[1] else None),
    Rule(E, "usage-no-action-verbs", 15, lambda f: "the usage section has no action verbs (run, use, call, create…)"
         if _usage_lacks_verbs(f) else None),
    Rule(E, "usage-unstructured", 5, lambda f: "the usage section is prose, not steps, code or sub-sections"
         if (t := f.section("usage")) and not STRUCTURE.search(t) else None),
    Rule(E, "buzzwords", 5, lambda f: f"buzzwords cost tokens and say nothing: {', '.join(found)}" if (found := sorted(
        f.buzzwords)) else None),
    Rule(E, "vague-reference-names", 5, lambda f: f"reference file names do not say what is inside: "
         f"{', '.join(_vague_stems(f)[:3])}" if _vague_stems(f) else None),
    Rule(E, "nested-references", 10, lambda f: f"{f.nested_link}; link every reference from SKILL.md instead"
         if f.nested_link else None),
    Rule(E, "code-in-references", 5, lambda f: f"code belongs in scripts/, not {code[0]}" if (code := [
        r for r in f.references if posixpath.splitext(r)[1].lower() in SCRIPT_SUFFIXES]) else None),
)


def grade(score: float) -> str:
    return next((letter for mark, letter in GRADES if score >= mark), "F")


def score(deductions: list[Deduction]) -> tuple[dict[str, int], float]:
    """Per-dimension scores and the weighted overall, rounded half-up to 0.1."""
    dims = {d: max(0, 100 - sum(x.points for x in deductions if x.dimension == d)) for d in WEIGHTS}
    hundredths = sum(WEIGHTS[d] * dims[d] for d in WEIGHTS)  # an exact integer: float round() takes 98.25 to 98.2
    return dims, float((Decimal(hundredths) / 100).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP))


class QualityCheck(Check):
    name = "quality"
    description = "quality score 0-100: correctness, discoverability, reliability, efficiency"
    # an unread script was counted as guarded (scripts-unguarded reads each one)
    reads = Reads(SCRIPT_SUFFIXES, accepts=lambda skill, rel: is_script(rel))

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        facts, strict = Facts(skill), ctx.settings.profile == "strict"
        deductions = [Deduction(dimension=r.dimension, rule=r.name, points=r.points, reason=reason)
                      for r in RULES if (strict or not r.strict_only) and (reason := r.test(facts)) is not None]
        dims, overall = score(deductions)
        findings = []
        if facts.tokens > MAX_TOKENS:
            findings.append(Finding(rule="quality.too-long", severity=Severity.MEDIUM, file=skill.manifest or MANIFEST,
                                    message=f"SKILL.md is about {facts.tokens} tokens (over {MAX_TOKENS}); an agent reads "
                                            "all of it whenever the skill triggers",
                                    suggestion="move detail into references/ files that SKILL.md links to"))
        body_lines = len(facts.body_lines)
        if body_lines > FAR_LINES or facts.tokens > FAR_TOKENS:
            biggest = facts.largest_sections()
            move = ("; the largest sections: " + ", ".join(f"'{t}' ({n} lines, ~{k} tokens)" for t, n, k in biggest)) if biggest else ""
            findings.append(Finding(rule="quality.far-too-long", severity=Severity.HIGH, file=skill.manifest or MANIFEST,
                                    line=skill.body_start_line,
                                    message=f"SKILL.md's body is {body_lines} lines, about {facts.tokens} tokens: far beyond the "
                                            f"spec's guidance of ~500 lines / {MAX_TOKENS} tokens{move}",
                                    suggestion="keep the steps in SKILL.md and move reference material — "
                                               + (", ".join(f"'{t}'" for t, _, _ in biggest) if biggest else "API details, long examples, tables")
                                               + " — into references/<topic>.md files that SKILL.md links to, one link per topic"))
        if facts.description and not TRIGGER.search(facts.description):
            findings.append(Finding(rule="quality.no-when", severity=Severity.MEDIUM, file=skill.manifest or MANIFEST,
                                    line=skill.key_line("description"),
                                    message="the description never says when to use the skill; agents choose skills by it",
                                    suggestion="add a clause such as 'Use when the user asks to …'"))
        metrics = {**dims, "grade": grade(overall), "skill_type": facts.skill_type, "tokens": facts.tokens}
        return self.result(findings, score=overall, min_score=ctx.settings.min_quality, deductions=deductions, metrics=metrics)


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [QualityCheck()]
