"""Trigger mode, the parts that need no agent: trigger sets (and their located problems), detection,
the gateway's view of a skill load, rivals by description similarity, and the statistics."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import manifest, run_check

from pytest_skilleval.gate import Policy, decide
from pytest_skilleval.results import Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.evals import EvalsCheck
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, SkillInvocation, Trajectory
from pytest_skilleval.triggers.detect import detect
from pytest_skilleval.triggers.metrics import summarize, wilson
from pytest_skilleval.triggers.options import parse_thresholds
from pytest_skilleval.triggers.record import TriggerRecord
from pytest_skilleval.triggers.report import markdown
from pytest_skilleval.triggers.rivals import choose_rivals
from pytest_skilleval.triggers.scripted import skill_loads
from pytest_skilleval.triggers.sets import load_trigger_set

MakeSkill = Callable[..., Skill]
SKILL = "demo-skill"


def with_triggers(make_skill: MakeSkill, name: str, text: str, **extra: str) -> Skill:
    return make_skill({"SKILL.md": manifest(SKILL), f"evals/{name}": text, **extra}, name=SKILL)


# -- trigger sets -----------------------------------------------------------------------------------------
def test_list_shape_gets_ids_and_loads(make_skill: MakeSkill) -> None:
    data = [{"query": "Summarise data.csv", "should_trigger": True}, {"id": "near", "query": "Convert data.xlsx", "should_trigger": False,
                                                                     "note": "near miss", "files": "evals/files/x.csv"}]
    ts = load_trigger_set(with_triggers(make_skill, "triggers.json", json.dumps(data)))
    assert [(q.id, q.should_trigger, q.files) for q in ts] == [("q01", True, ()), ("near", False, ("evals/files/x.csv",))]
    assert ts.problems == () and ts.script is None and ts.counts() == {"queries": 2, "should_trigger": 1, "should_not_trigger": 1}
    assert ts.digest().startswith("sha256:")


def test_mapping_with_script_yaml_and_jsonl(make_skill: MakeSkill) -> None:
    yaml_text = "script:\n  match: ['\\bcsv\\b']\n  unless: [xlsx]\nqueries:\n  - {query: what is in a.csv, should_trigger: true}\n"
    ts = load_trigger_set(with_triggers(make_skill, "triggers.yaml", yaml_text))
    assert ts.script is not None and ts.script.wants("what is in a.csv") and not ts.script.wants("csv from b.xlsx")
    jsonl = '{"query": "a", "should_trigger": true}\n\n{"query": "b", "should_trigger": false}\n'
    assert [q.id for q in load_trigger_set(with_triggers(make_skill, "triggers.jsonl", jsonl))] == ["q01", "q02"]


def test_malformed_trigger_file_is_a_failing_evals_finding_with_file_and_line(make_skill: MakeSkill) -> None:
    text = ('[\n  {"query": "fine", "should_trigger": true},\n  {"query": "no label"},\n'
            '  {"query": "bad label", "should_trigger": "yes"},\n  {"id": "x y", "query": "q", "should_trigger": true}\n]\n')
    skill = with_triggers(make_skill, "triggers.json", text)
    ts = load_trigger_set(skill)
    assert [q.id for q in ts] == ["q01"]
    result = run_check(EvalsCheck(), skill)
    got = sorted((f.rule, f.file, f.line) for f in result.findings if f.rule.startswith("evals.trigger"))
    assert got == [("evals.trigger-field-missing", "evals/triggers.json", 3), ("evals.trigger-field-type", "evals/triggers.json", 4),
                   ("evals.trigger-field-type", "evals/triggers.json", 5)]
    assert all(f.severity is Severity.HIGH for f in result.findings if f.rule.startswith("evals.trigger"))
    assert decide(result, blocking=True, policy=Policy()).outcome == "failed"


def test_syntax_error_is_located_and_the_trigger_file_is_not_an_eval_case_file(make_skill: MakeSkill) -> None:
    skill = with_triggers(make_skill, "triggers.json", '[\n  {"query": "a",\n   "should_trigger": tru}\n]\n')
    [finding] = [f for f in run_check(EvalsCheck(), skill).findings if f.rule.startswith("evals.trigger")]
    assert (finding.rule, finding.line) == ("evals.trigger-syntax", 3)
    assert load_cases(skill).files == ()  # never read as eval cases


def test_cases_with_a_routing_label_are_queries_on_request(make_skill: MakeSkill) -> None:
    cases = {"skill_name": SKILL, "evals": [{"id": "pos", "prompt": "do it", "should_trigger": True, "assertions": []},
                                            {"id": "neg", "prompt": "not this", "expected_skill": None, "assertions": []},
                                            {"id": "plain", "prompt": "no label", "assertions": []}]}
    skill = make_skill({"SKILL.md": manifest(SKILL), "evals/evals.json": json.dumps(cases)}, name=SKILL)
    assert len(load_trigger_set(skill)) == 0
    got = [(q.id, q.should_trigger) for q in load_trigger_set(skill, from_cases=True)]
    assert got == [("case.pos", True), ("case.neg", False), ("case.plain", True)]  # a case in the skill's own file is for it


def test_thresholds() -> None:
    assert parse_thresholds("0.8,0.9") == (0.8, 0.9) and parse_thresholds("80, 90") == (0.8, 0.9)
    with pytest.raises(pytest.UsageError):
        parse_thresholds("0.8")


# -- detection --------------------------------------------------------------------------------------------
def inv(name: str, how: InvocationMethod, path: str | None = None, status: InvocationStatus = InvocationStatus.LOADED) -> SkillInvocation:
    return SkillInvocation(name=name, how=how, path=path, status=status)


def test_detection_counts_only_the_installed_copy_loaded_by_the_agent(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    installed = {"csv-summary": ws / ".codex/skills/csv-summary", "csv-summary-copy": ws / ".codex/skills/csv-summary-copy"}

    def run(*invocations: SkillInvocation) -> tuple[bool, list[str], list[str]]:
        d = detect(Trajectory(harness="x", invocations=list(invocations)), "csv-summary", installed, ws)
        return d.triggered, d.rivals, d.ignored

    shell = InvocationMethod.SHELL_READ
    assert run(inv("csv-summary", shell, ".codex/skills/csv-summary/SKILL.md"))[0] is True  # relative to the workspace
    assert run(inv("csv-summary", shell, str(ws / ".codex/skills/csv-summary/SKILL.md")))[0] is True
    # A decoy: the same SKILL.md (frontmatter name and all) elsewhere in the workspace.
    decoy = run(inv("csv-summary", shell, str(ws / "decoy/csv-summary/SKILL.md")))
    assert decoy[0] is False and "a copy or decoy" in decoy[2][0]
    # A renamed copy installed as another skill is a rival, by name — even if its frontmatter kept the name.
    assert run(inv("csv-summary", shell, str(ws / ".codex/skills/csv-summary-copy/SKILL.md")))[:2] == (False, ["csv-summary-copy"])
    assert run(inv("csv-summary-copy", InvocationMethod.TOOL))[:2] == (False, ["csv-summary-copy"])
    # The skill tool naming this skill counts; loaded from somewhere else it does not.
    tool = InvocationMethod.TOOL
    assert run(inv("csv-summary", tool, str(ws / ".codex/skills/csv-summary/SKILL.md")))[0] is True
    assert run(inv("csv-summary", tool, "/elsewhere/csv-summary/SKILL.md"))[0] is False
    # A user-typed /csv-summary, a refused load: not the agent's trigger.
    assert run(inv("csv-summary", InvocationMethod.MENTION, str(ws / ".codex/skills/csv-summary/SKILL.md")))[0] is False
    assert run(inv("csv-summary", tool, status=InvocationStatus.REFUSED))[0] is False
    assert detect(None, "csv-summary", installed, ws).triggered is False


def test_the_gateway_sees_a_load_in_every_vendor_shape() -> None:
    anthropic = {"messages": [{"role": "assistant", "content": [{"type": "tool_use", "name": "Skill", "input": {"skill": "x"}}]}]}
    responses = {"input": [{"type": "function_call", "name": "exec_command", "arguments": json.dumps({"cmd": "cat .codex/skills/x/SKILL.md"})}]}
    chat = {"messages": [{"role": "assistant", "tool_calls": [{"function": {"name": "skill", "arguments": '{"name": "x"}'}}]}]}
    gemini = {"contents": [{"parts": [{"functionCall": {"name": "activate_skill", "args": {"name": "x"}}}]}]}
    assert [next(skill_loads(p)) for p in (anthropic, responses, chat, gemini)] == ["x", ".codex/skills/x/SKILL.md", "x", "x"]
    other = {"messages": [{"content": [{"type": "tool_use", "name": "Bash", "input": {"command": "ls"}}]}]}
    assert list(skill_loads(other)) == []


# -- rivals -----------------------------------------------------------------------------------------------
def test_rivals_nearest_by_description_and_max_zero(make_skill: MakeSkill) -> None:
    me = make_skill({"SKILL.md": manifest("csv-summary", "Summarize a CSV file: rows, column types, statistics.")}, name="csv-summary")
    texts = {"csv-stats": "Column statistics of CSV and TSV tables.", "tsv-profile": "Profile tabular data files quickly.",
             "haiku": "Write a haiku about the sea.", "tax-forms": "Fill in tax forms.", "csv-summary": "A second skill with my name."}
    pool = [make_skill({"SKILL.md": manifest(n.split("/")[0], d)}, name=n if n != "csv-summary" else "dup/csv-summary")
            for n, d in texts.items()]
    from pytest_skilleval.tier2.embedders import select

    chosen = choose_rivals(me, [me, *pool], 2, select("default").short.embed, "minilm")
    assert chosen.names == ["csv-stats", "tsv-profile"] and chosen.pool == 4 and chosen.digest.startswith("sha256:")
    assert choose_rivals(me, pool, 0).skills == () and len(choose_rivals(me, pool, 20).skills) == 4


# -- statistics -------------------------------------------------------------------------------------------
def rec(qid: str, should: bool, run: int, triggered: bool | None, rival: str | None = None, agent: str = "codex") -> TriggerRecord:
    return TriggerRecord(skill="s", skill_name="s", skill_path="/s", query_id=qid, query=qid, should_trigger=should, agent=agent, run=run,
                         status="ERROR" if triggered is None else "TRIGGERED" if triggered else "NOT_TRIGGERED", triggered=triggered,
                         rival_loaded=rival, requests=2, tokens_in=100, tokens_out=10)


def test_wilson_interval() -> None:
    low, high = wilson(8, 10)
    assert round(low, 4) == 0.4902 and round(high, 4) == 0.9433  # the textbook value
    assert wilson(0, 0) == (None, None) and wilson(5, 5)[1] == 1.0


def test_majority_errors_stealing_and_flips() -> None:
    rows = [rec("a", True, 1, True), rec("a", True, 2, False, "rival-x"), rec("a", True, 3, True),  # 2/3: triggered, flipped
            rec("b", True, 1, False, "rival-x"), rec("b", True, 2, False, "rival-x"), rec("b", True, 3, None),  # missed, stolen
            rec("c", False, 1, True), rec("c", False, 2, True), rec("c", False, 3, False),  # false trigger
            rec("d", False, 1, False), rec("d", False, 2, False), rec("d", False, 3, False),
            rec("e", True, 1, None), rec("e", True, 2, None), rec("e", True, 3, None)]  # never decided: an error, not a miss
    [agent] = summarize(rows)["s"].agents
    c = agent.confusion
    assert (c.tp, c.fn, c.fp, c.tn) == (1, 1, 1, 1) and agent.errors == 1 and agent.error_runs == 4
    assert (agent.recall.value, agent.precision.value, agent.accuracy.value, agent.f1) == (0.5, 0.5, 0.5, 0.5)
    assert agent.stealing_rivals == {"rival-x": 3} and agent.missed_queries == ["b"] and agent.false_trigger_queries == ["c"]
    assert agent.flipped_queries == ["a", "c"]
    blocking = summarize(rows, thresholds=(0.4, 0.4))["s"]
    assert blocking.failing_agents == ["codex"]  # a query with no decision fails a blocking run: it was not measured


def test_an_acceptable_skill_taking_a_positive_is_neither_a_miss_nor_stealing() -> None:
    """A query's ``acceptable_skills`` load is not a mistake: the query leaves recall's denominator
    (it is no hit for this skill's description either), is named, and no rival is blamed for it."""
    def row(qid: str, run: int, triggered: bool, rival: str | None, acceptable: tuple[str, ...] = ()) -> TriggerRecord:
        r = rec(qid, True, run, triggered, rival)
        r.acceptable_skills = list(acceptable)
        return r

    ok = ("csv-stats",)
    rows = [row("a", 1, False, "csv-stats", ok), row("a", 2, False, "csv-stats", ok), row("a", 3, True, None, ok),  # handed over
            row("b", 1, False, "rival-x", ok), row("b", 2, False, "rival-x", ok), row("b", 3, False, "rival-x", ok),  # stolen
            row("c", 1, True, None), row("c", 2, True, None), row("c", 3, True, None)]
    [agent] = summarize(rows)["s"].agents
    c = agent.confusion
    assert (c.tp, c.fn) == (1, 1) and agent.recall.value == 0.5  # `a` counts neither way
    assert agent.missed_queries == ["b"] and agent.stealing_rivals == {"rival-x": 3}
    assert agent.acceptable_queries == ["a"] and agent.acceptable_loads == {"csv-stats": 2}
    outcome = next(o for o in agent.outcomes if o.query_id == "a")
    assert outcome.acceptable is True and outcome.triggered is False
    card = "\n".join(markdown(summarize(rows)["s"]))
    assert "taken by an acceptable skill: `a` (csv-stats)" in card


def test_listing_text_is_the_listing_block_of_the_first_request(tmp_path: Path) -> None:
    from pytest_skilleval.trajectory.requestlog import listing_text

    system = ("You are an agent.\n\nLots of rules.\n\nThese skills are available:\n<available_skills>\n<skill><name>csv-summary</name>"
              "<description>Summarize CSV files.</description></skill>\n</available_skills>\n\nMore rules.")
    log = tmp_path / "requests.jsonl"
    side = {"body": {"messages": [{"role": "user", "content": "title?"}]}, "tools": 0}
    main = {"body": {"system": system, "tools": [{"name": "skill"}], "messages": [{"role": "user", "content": "q"}]}, "tools": 1}
    log.write_text(json.dumps(side) + "\n" + json.dumps(main) + "\n")
    assert listing_text(log) == ("These skills are available:\n<available_skills>\n<skill><name>csv-summary</name>"
                                 "<description>Summarize CSV files.</description></skill>\n</available_skills>")
