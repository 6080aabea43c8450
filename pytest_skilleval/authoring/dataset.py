"""``skilleval create-eval-dataset SKILL``: a first set of eval cases in four buckets.

- **explicit**: the request names the skill;
- **implicit**: the task in the user's words, without the name;
- **contextual**: the task inside a realistic project scenario;
- **negative** (``expected_skill: null``): a request a competent agent reading the skill list would
  still not need this skill for — a near miss the skill's own "Not for" / "Do not use" lines exclude,
  or an ordinary task of the same project — never "what does this skill do?".

With a chat provider configured (the provider layer: ``SKILLEVAL_PROVIDER``…) the model drafts the
cases as structured output, validated against :class:`Draft`, retried when malformed. Without one,
templates built from the frontmatter draft them. Either way every case is marked
``metadata.needs_review`` and the file is loaded back through the case loader before it is written:
a draft that the evals check would reject is never written. Nothing is overwritten without
``--force``; ``--dry-run`` prints the file instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from pytest_skilleval import atomic
from pytest_skilleval.providers.base import ChatMessage, ChatProvider, ChatRequest, ProviderError
from pytest_skilleval.skill import Skill

BUCKETS = ("explicit", "implicit", "contextual", "negative")
Bucket = Literal["explicit", "implicit", "contextual", "negative"]
#: Ordinary tasks of a software project that no task-specific skill is needed for (template negatives).
ORDINARY = ("Explain the difference between a list and a tuple in Python.",
            "Write a Python function that reverses a string.",
            "What does `git rebase --onto` do, in two sentences?")


class DraftCase(BaseModel):
    bucket: Bucket
    prompt: str = Field(min_length=8, max_length=2000)
    expected_output: str = Field(min_length=1, max_length=2000, description="what a good answer contains")


class Draft(BaseModel):
    """What the model must return: at least one case per bucket."""

    cases: list[DraftCase] = Field(min_length=4, max_length=40)


# -- templates ----------------------------------------------------------------------------------------
def _sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text.strip()) if s.strip()]


def _split_items(text: str) -> list[str]:
    parts = re.split(r",\s*(?:or\s+|and\s+)?|\s+or\s+", text.strip().rstrip("."))
    return [p.strip() for p in parts if p.strip()]


def describe(skill: Skill) -> tuple[str, list[str], list[str]]:
    """(what it does, the "use when" situations, the excluded neighbours) from the description and body."""
    sentences = _sentences(skill.description or "")
    what = sentences[0].rstrip(".") if sentences else f"do what {skill.name} does"
    use_when: list[str] = []
    excluded: list[str] = []
    for s in sentences[1:]:
        m = re.match(r"(?i)use (?:it |this skill )?when\s+(.*)", s)
        if m:
            use_when += _split_items(m.group(1))
        m = re.match(r"(?i)(?:not for|do not use (?:it )?for|don't use (?:it )?for)\s+(.*)", s)
        if m:
            excluded += _split_items(m.group(1))
    for line in (skill.body or "").splitlines():
        m = re.match(r"^\s*[-*]\s*(?:do not|don't) use (?:it |this skill )?for\s+(.*?)(?:;|\.|$)", line, re.I)
        if m:
            excluded.append(m.group(1).replace("`", "").strip())
    return what, use_when, list(dict.fromkeys(e for e in excluded if e))


_WHO = re.compile(r"^(?:the user|a user|users?|someone)\s+", re.I)


def _request(situation: str) -> str:
    """'the user asks what is in a CSV file' → 'Can you tell me what is in a CSV file?'."""
    s = _WHO.sub("", situation.strip())
    rules = ((r"asks for (.*)", "Could you give me {}?"), (r"asks (what|which|how|whether|why|if) (.*)", "Can you tell me {} {}?"),
             (r"asks to (.*)", "Please {}."), (r"wants (.*)", "I want {}."), (r"needs (.*)", "I need {}."),
             (r"prepares (.*)", "I'm preparing {}; can you help?"))
    for pattern, template in rules:
        m = re.fullmatch(pattern, s, re.I)
        if m:
            return template.format(*m.groups())
    return f"Help me with this: {s}."


def _imperative(gerund: str) -> str:
    """'generating' → 'generate', 'writing' → 'write', 'plotting' → 'plot', 'bumping' → 'bump'."""
    stem = gerund[:-3]
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "ls":
        return stem[:-1]
    if re.search(r"(?:[aeiou][tkvzcs]|at|[^aeiou][uv])$", stem) and not stem.endswith(("ss", "st")):
        return stem + "e"
    return stem


def near_miss(verb: str, item: str) -> str:
    """A request for a neighbour the skill rules out, as a user would type it."""
    first, _, rest = item.partition(" ")
    if first.lower().endswith("ing") and len(first) > 5:  # 'generating commit messages' → 'Generate commit messages.'
        return f"{_imperative(first.lower()).capitalize()} {rest}.".replace(" .", ".")
    plain = not re.search(r"\bthat\b|\(|\bwhich\b", item)
    if plain and item.split()[-1].endswith("s") and not item.endswith("ss"):  # 'Excel workbooks' → 'Summarize Excel workbooks for me.'
        return f"{verb} {item} for me."
    return f"Can you help me with {item}?"


def template_cases(skill: Skill) -> list[DraftCase]:
    what, use_when, excluded = describe(skill)
    verb, _, rest = what.partition(" ")
    done = f"Does what the skill is for: {what[0].lower()}{what[1:]}."
    plain = "A direct answer to the request, without loading this skill."
    cases = [DraftCase(bucket="explicit", prompt=f"Use the {skill.name} skill to {verb.lower()} {rest}.".replace("..", "."), expected_output=done)]
    for situation in (use_when or [what])[:3]:
        cases.append(DraftCase(bucket="implicit", prompt=_request(situation), expected_output=done))
    if use_when:
        cases.append(DraftCase(bucket="contextual", prompt=f"We're getting our project ready for the next milestone and I'm working in the "
                                                            f"repository now. {_request(use_when[0])} Keep it short.", expected_output=done))
    else:
        cases.append(DraftCase(bucket="contextual", prompt=f"In our project repository, {verb.lower()} {rest} for the files I changed today.",
                               expected_output=done))
    for item in excluded[:3]:  # near misses the skill itself rules out
        cases.append(DraftCase(bucket="negative", prompt=near_miss(verb, item), expected_output=plain))
    for text in ORDINARY[: max(1, 3 - len(excluded))]:
        cases.append(DraftCase(bucket="negative", prompt=text, expected_output=plain))
    return cases


# -- the model ----------------------------------------------------------------------------------------
SYSTEM = """You write evaluation cases for an Agent Skill. Return JSON: {"cases": [{"bucket", "prompt", "expected_output"}]}.
Write at least two cases for each bucket:
- explicit: the user names the skill and asks for its task;
- implicit: the same kind of task in the user's own words, without the skill's name;
- contextual: the task inside a realistic project scenario with concrete file names and details;
- negative: a request that a competent agent, reading the list of available skills with their descriptions,
  would still NOT need this skill for: a near miss that the description rules out, or an ordinary task of the
  same project. Never ask what the skill does, never mention the skill.
Prompts are what a real user types. expected_output says briefly what a good answer contains."""


def model_cases(skill: Skill, chat: ChatProvider) -> list[DraftCase]:
    user = f"Skill name: {skill.name}\nDescription: {skill.description}\n\nSKILL.md body:\n{(skill.body or '')[:6000]}"
    draft, _reply = chat.structured(ChatRequest(messages=(ChatMessage(role="system", content=SYSTEM), ChatMessage(role="user", content=user)),
                                                max_tokens=4096, schema_name="Draft"), Draft)
    missing = [b for b in BUCKETS if not any(c.bucket == b for c in draft.cases)]
    if missing:
        raise ProviderError(chat.name, "malformed", f"the draft has no {', '.join(missing)} case")
    return draft.cases


# -- the file -----------------------------------------------------------------------------------------
def document(skill: Skill, cases: list[DraftCase], generator: str) -> dict[str, object]:
    counters: dict[str, int] = {}
    out = []
    for case in cases:
        counters[case.bucket] = counters.get(case.bucket, 0) + 1
        negative = case.bucket == "negative"
        item: dict[str, object] = {"id": f"{skill.name}-{case.bucket}-{counters[case.bucket]:03d}", "prompt": case.prompt,
                                   "expected_skill": None if negative else skill.name}
        item["expected_output"] = case.expected_output
        item["assertions"] = [{"type": "skill_not_invoked", "text": "did not load the skill"} if negative
                              else {"type": "skill_invoked", "text": "loaded the skill"}]
        item["metadata"] = {"bucket": case.bucket, "generator": generator, "needs_review": True}
        out.append(item)
    return {"skill_name": skill.name, "evals": out}


def validate(skill: Skill, text: str, rel: str) -> list[str]:
    """Load the drafted file through the case loader, as the evals check would; the problems it finds."""
    from pytest_skilleval.tier3.cases import load_file

    original = skill.text
    skill.text = lambda r: text if r == rel else original(r)  # type: ignore[method-assign]
    try:
        _file, cases, problems = load_file(skill, rel)
    finally:
        skill.text = original  # type: ignore[method-assign]
    bad = [f"{p.severity.value} {p.rule}: {p.message}" for p in problems if p.severity.value in ("CRITICAL", "HIGH", "MEDIUM")]
    return bad if bad or cases else ["no case loaded"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("skill", type=Path, help="the skill folder")
    parser.add_argument("-o", "--output", default="evals/evals.json", help="where to write, relative to the skill (default: evals/evals.json)")
    parser.add_argument("--dry-run", action="store_true", help="print the file instead of writing it")
    parser.add_argument("--force", action="store_true", help="overwrite an existing file")
    parser.add_argument("--templates", action="store_true", help="use the frontmatter templates even when a chat provider is configured")


def run(args: argparse.Namespace) -> int:
    from pytest_skilleval.providers.select import chat_from_settings

    skill = Skill(root=args.skill.resolve(), key=args.skill.name)
    if skill.manifest_text is None:
        print(f"skilleval create-eval-dataset: {args.skill}: no SKILL.md", file=sys.stderr)
        return 2
    target = skill.root / args.output
    if target.exists() and not (args.force or args.dry_run):
        print(f"skilleval create-eval-dataset: {target} exists; --force overwrites it, --dry-run prints instead", file=sys.stderr)
        return 2
    try:
        chat = None if args.templates else chat_from_settings(None)
        cases, generator = (model_cases(skill, chat), f"model:{chat.model or chat.name}") if chat else (template_cases(skill), "template")
    except ProviderError as exc:
        print(f"skilleval create-eval-dataset: the chat provider failed: {exc}", file=sys.stderr)
        return 1
    text = json.dumps(document(skill, cases, generator), indent=2, ensure_ascii=False) + "\n"
    problems = validate(skill, text, args.output)
    if problems:
        print("skilleval create-eval-dataset: the draft does not load as eval cases:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    if args.dry_run:
        sys.stdout.write(text)
        return 0
    atomic.write_atomic(target, text)
    print(f"{target}: {len(cases)} case(s) drafted by {generator}; every case is marked needs_review — read them before you rely on them")
    return 0
