"""``skilleval suggest-description SKILL``: propose description rewrites from the trigger set's misses.

Needs a chat provider (docs/providers.md) and a budget: it refuses to start without
``--budget-usd``, prints the estimated cost first, refuses when the estimate exceeds the budget, and
stops spending when the metered cost reaches it. The trigger set is split (stratified, seeded) into
train and held-out test queries; each candidate is scored with the model probe — one chat call per
query with the skill listing — on train, the best by train F1 is reported with its train and test
scores beside the current description's. The skill is written only with ``--write``.

The listing is the agent's own text when ``--listing-from`` names a recorded gateway request log
(the candidate replaces the current description inside it, verbatim otherwise); without one, a
Claude Code-style ``- name: description`` list of the skill and its rivals.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilleval.gateway.metering import PriceTable
from pytest_skilleval.gateway.protocols.base import Usage
from pytest_skilleval.providers.base import ChatMessage, ChatProvider, ChatRequest, ProviderError
from pytest_skilleval.skill import Skill
from pytest_skilleval.trajectory import skill_key
from pytest_skilleval.trajectory.requestlog import listing_text
from pytest_skilleval.triggers.probe import PROBE_SCHEMA, PROBE_SYSTEM, ProbeAnswer
from pytest_skilleval.triggers.rivals import catalog_skills
from pytest_skilleval.triggers.sets import TriggerQuery, load_trigger_set

REWRITE_SYSTEM = ("You improve the `description` of an Agent Skill: the one text an agent reads to decide whether to load the skill. "
                  "Keep it truthful to the skill, under 1024 characters, third person, saying what it does and when to use it "
                  "(and when not). Reply with exactly {n} alternatives, one per line, each starting with 'DESCRIPTION: '.")
CHARS_PER_TOKEN = 4  # the estimate's rough tokenizer
PROBE_OUTPUT_TOKENS = 40
REWRITE_OUTPUT_TOKENS = 400


class BudgetSpent(RuntimeError):
    pass


@dataclass
class Meter:
    """Metered spend: every reply's tokens priced with the gateway's price table."""

    budget_usd: float
    model: str
    prices: PriceTable = field(default_factory=PriceTable.load)
    spent_usd: float = 0.0
    calls: int = 0

    def charge(self, input_tokens: int, output_tokens: int) -> None:
        self.calls += 1
        self.spent_usd += self.prices.cost(self.model, Usage(input_tokens, output_tokens))[0]

    def check(self) -> None:
        if self.spent_usd >= self.budget_usd:
            raise BudgetSpent(f"budget of ${self.budget_usd:.4f} spent after {self.calls} call(s)")

    def estimate(self, input_tokens: int, output_tokens: int) -> float:
        return self.prices.cost(self.model, Usage(input_tokens, output_tokens))[0]


@dataclass
class Score:
    tp: int = 0
    fn: int = 0
    fp: int = 0
    tn: int = 0

    @property
    def f1(self) -> float:
        return 2 * self.tp / (2 * self.tp + self.fp + self.fn) if (self.tp + self.fp + self.fn) else 1.0

    @property
    def recall(self) -> float | None:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else None

    @property
    def precision(self) -> float | None:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else None

    def text(self) -> str:
        r, p = self.recall, self.precision
        return (f"F1 {self.f1:.2f}, recall {'—' if r is None else f'{r:.0%}'}, precision {'—' if p is None else f'{p:.0%}'} "
                f"(TP {self.tp} FN {self.fn} FP {self.fp} TN {self.tn})")


def split(queries: Sequence[TriggerQuery], test_fraction: float, seed: str) -> tuple[list[TriggerQuery], list[TriggerQuery]]:
    """Stratified by label, deterministic: each label's queries ordered by a seeded hash, the last share held out."""
    train: list[TriggerQuery] = []
    test: list[TriggerQuery] = []
    for label in (True, False):
        group = sorted((q for q in queries if q.should_trigger is label), key=lambda q: hashlib.sha256(f"{seed}:{q.id}".encode()).hexdigest())
        held = round(len(group) * test_fraction) if len(group) > 1 else 0
        train += group[:len(group) - held]
        test += group[len(group) - held:]
    return train, test


@dataclass
class Suggester:
    skill: Skill
    chat: ChatProvider
    meter: Meter
    rivals: list[Skill] = field(default_factory=list)
    listing_template: str | None = None  # a recorded listing holding the current description verbatim
    misses: list[tuple[TriggerQuery, bool]] = field(default_factory=list)

    def listing(self, description: str) -> str:
        if self.listing_template and self.skill.description in self.listing_template:
            return self.listing_template.replace(self.skill.description, description)
        entries = [(self.skill.name, description), *((r.name, r.description) for r in self.rivals)]
        return "The following skills are available for use with the Skill tool:\n\n" + "\n".join(f"- {n}: {d}" for n, d in sorted(entries))

    def probe_request(self, description: str, query: TriggerQuery) -> ChatRequest:
        return ChatRequest(messages=(ChatMessage(role="system", content=f"{PROBE_SYSTEM}\n\n{self.listing(description)}"),
                                     ChatMessage(role="user", content=query.query)),
                           json_schema=PROBE_SCHEMA, schema_name="skill_choice", max_tokens=200)

    def score(self, description: str, queries: Sequence[TriggerQuery], *, collect_misses: bool = False) -> Score:
        out = Score()
        for q in queries:
            self.meter.check()
            answer, reply = self.chat.structured(self.probe_request(description, q), ProbeAnswer)
            self.meter.charge(reply.input_tokens, reply.output_tokens)
            hit = skill_key(answer.skill or "") == skill_key(self.skill.name)
            if q.should_trigger:
                out.tp, out.fn = out.tp + hit, out.fn + (not hit)
            else:
                out.fp, out.tn = out.fp + hit, out.tn + (not hit)
            if collect_misses and hit != q.should_trigger:
                self.misses.append((q, hit))
        return out

    def propose(self, n: int) -> list[str]:
        self.meter.check()
        misses = "\n".join(f"- {'MISSED (should load)' if q.should_trigger else 'FALSE LOAD (should not)'}: {q.query}" for q, _ in self.misses)
        prompt = (f"Skill name: {self.skill.name}\nCurrent description: {self.skill.description}\n\nSkill body (start):\n"
                  f"{self.skill.body[:3000]}\n\nQueries the current description got wrong:\n{misses or '- none'}\n\n"
                  f"Write {n} improved descriptions.")
        reply = self.chat.chat(ChatRequest(messages=(ChatMessage(role="system", content=REWRITE_SYSTEM.format(n=n)),
                                                     ChatMessage(role="user", content=prompt)), max_tokens=REWRITE_OUTPUT_TOKENS * n))
        self.meter.charge(reply.input_tokens, reply.output_tokens)
        found = [m.group(1).strip() for m in re.finditer(r"DESCRIPTION:\s*(.+)", reply.text)]
        return [d for d in dict.fromkeys(found) if 0 < len(d) <= 1024 and d != self.skill.description][:n]

    def estimate(self, train: int, test: int, candidates: int) -> tuple[int, float]:
        """(calls, USD): the current description on train + test, the rewrite call, each candidate on train, the best on test."""
        probe_in = (len(PROBE_SYSTEM) + len(self.listing(self.skill.description)) + 200) // CHARS_PER_TOKEN
        calls = (train + test) + 1 + candidates * train + test
        usd = (train + test + candidates * train + test) * self.meter.estimate(probe_in, PROBE_OUTPUT_TOKENS)
        usd += self.meter.estimate((len(self.skill.body[:3000]) + 2000) // CHARS_PER_TOKEN, REWRITE_OUTPUT_TOKENS * candidates)
        return calls, usd


def write_description(skill_md: Path, old: str, new: str) -> None:
    """Replace a one-line ``description:`` in the frontmatter; refuse anything less certain."""
    text = skill_md.read_text(encoding="utf-8")
    head, sep, rest = text.partition("\n---")
    lines = head.splitlines()
    hits = [i for i, ln in enumerate(lines) if ln.startswith("description:")]
    if len(hits) != 1 or lines[hits[0]].split(":", 1)[1].strip().strip("'\"") != old:
        raise ValueError("the description is not a single plain line in the frontmatter; edit SKILL.md by hand")
    lines[hits[0]] = "description: " + json.dumps(new, ensure_ascii=False) if ": " in new or new.startswith(("'", '"')) else f"description: {new}"
    skill_md.write_text("\n".join(lines) + ("\n" if head.endswith("\n") else "") + sep + rest, encoding="utf-8")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("skill", type=Path)
    parser.add_argument("--budget-usd", type=float, default=None, help="required: the most this may spend")
    parser.add_argument("--candidates", type=int, default=4)
    parser.add_argument("--test-fraction", type=float, default=0.3)
    parser.add_argument("--seed", default="skilleval")
    parser.add_argument("--rivals", type=Path, default=None, help="a folder of skills listed beside this one")
    parser.add_argument("--listing-from", type=Path, default=None, help="a recorded gateway request log of a real CLI run")
    parser.add_argument("--from-cases", action="store_true", help="routing-labelled eval cases are queries too")
    parser.add_argument("--write", action="store_true", help="write the best description to SKILL.md (only if it beats the current on test)")
    parser.add_argument("--yes", action="store_true", help="do not ask before spending")


def main(argv: Sequence[str], *, chat_factory: Callable[[], ChatProvider | None] | None = None, out: Callable[[str], None] = print) -> int:
    """``skilleval suggest-description ARGS`` as a function (tests pass a chat provider and collect the output)."""
    parser = argparse.ArgumentParser(prog="skilleval suggest-description")
    add_arguments(parser)
    return run(parser.parse_args(argv), chat_factory=chat_factory, out=out)


def run(args: argparse.Namespace, *, chat_factory: Callable[[], ChatProvider | None] | None = None,
        out: Callable[[str], None] = print) -> int:
    if args.budget_usd is None or args.budget_usd <= 0:
        out("refusing to start: --budget-usd is required (the most this may spend, e.g. --budget-usd 0.50)")
        return 2
    skill = Skill(root=args.skill.resolve(), key=args.skill.name)
    queries = load_trigger_set(skill, from_cases=args.from_cases)
    if queries.problems:
        out("the trigger set has problems; fix them first:\n" + "\n".join(f.format_line() for f in queries.findings()))
        return 2
    train, test = split(list(queries), args.test_fraction, args.seed)
    if len(train) < 2 or not test:
        out(f"need a trigger set of at least 4 queries with both labels (evals/triggers.json); {skill.name} has {len(queries)}")
        return 2
    try:
        chat = chat_factory() if chat_factory else _chat_from_env()
    except ProviderError as exc:
        out(f"no usable chat provider: {exc}")
        return 2
    if chat is None:
        out("suggest-description needs a chat provider: set SKILLEVAL_PROVIDER / SKILLEVAL_MODEL and a key (docs/providers.md)")
        return 2
    rivals = [Skill(root=p, key=p.name) for p in catalog_skills(args.rivals)] if args.rivals else []
    template = listing_text(args.listing_from) if args.listing_from else None
    s = Suggester(skill, chat, Meter(args.budget_usd, chat.model), [r for r in rivals if r.name != skill.name], template)
    calls, usd = s.estimate(len(train), len(test), args.candidates)
    out(f"estimate: {calls} chat calls to {chat.model}, about ${usd:.4f} (budget ${args.budget_usd:.4f}); "
        f"{len(train)} train and {len(test)} held-out queries, {args.candidates} candidates")
    if usd > args.budget_usd:
        out("refusing to start: the estimate exceeds the budget (raise --budget-usd, or use fewer --candidates)")
        return 3
    if not args.yes and sys.stdin.isatty() and input("proceed? [y/N] ").strip().lower() not in ("y", "yes"):
        return 1
    try:
        base_train = s.score(skill.description, train, collect_misses=True)
        base_test = s.score(skill.description, test)
        candidates = s.propose(args.candidates)
        scored = [(d, s.score(d, train)) for d in candidates]
        if not scored:
            out("the model proposed no usable description")
            return 1
        best, best_train = max(scored, key=lambda item: item[1].f1)
        best_test = s.score(best, test)
    except BudgetSpent as exc:
        out(f"stopped: {exc}; spent ${s.meter.spent_usd:.4f}")
        return 3
    except ProviderError as exc:
        out(f"the chat provider failed: {exc}; spent ${s.meter.spent_usd:.4f}")
        return 1
    out(f"current:  train {base_train.text()}; test {base_test.text()}")
    for d, sc in scored:
        out(f"candidate: train {sc.text()} — {d}")
    out(f"best:     train {best_train.text()}; test {best_test.text()}\n  {best}")
    out(f"spent ${s.meter.spent_usd:.4f} in {s.meter.calls} call(s) (probe scores: a model-only probe, not the agents)")
    if args.write:
        if best_test.f1 <= base_test.f1:
            out("not written: the best candidate does not beat the current description on the held-out queries")
            return 0
        write_description(skill.root / "SKILL.md", skill.description, best)
        out(f"wrote the new description to {skill.root / 'SKILL.md'}")
    else:
        out("not written (pass --write to update SKILL.md)")
    return 0


def _chat_from_env() -> ChatProvider | None:
    from pytest_skilleval.providers.select import chat_from_settings

    return chat_from_settings(None)
