"""Trigger trials with the four real CLIs, scripted and keyless, inside bubblewrap.

The example skills each carry ``evals/triggers.json`` (≥ 10 queries with near-miss negatives) and a
``script`` rule; each is installed with the other two as rivals. The scripted model loads a skill
only when the real request lists it (as that CLI lists skills) and the query matches the skill's
rule, so the expected outcome of every trial is known in advance — and every decision below is
read from the CLI's own event stream through the trajectory parsers.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents.base import Agent
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.sandboxes import LocalSandbox
from pytest_skilleval.tier3.staging import hidden_dirs
from pytest_skilleval.triggers.items import format_trigger
from pytest_skilleval.triggers.metrics import summarize
from pytest_skilleval.triggers.options import TriggerSettings
from pytest_skilleval.triggers.record import TriggerRecord
from pytest_skilleval.triggers.rivals import choose_rivals
from pytest_skilleval.triggers.sets import ScriptRule, TriggerQuery, load_trigger_set
from pytest_skilleval.triggers.trial import TriggerRequest, TriggerRunner

EXAMPLES = ("changelog-writer", "csv-summary", "semver-bump")
HIDDEN = tuple(hidden_dirs(c.agent for c in CLIS.values()))
#: A folder to collect the per-CLI figures in (recall, precision, requests and tokens per query) for docs/triggers.md.
FIGURES = os.environ.get("SKILLEVAL_TRIGGER_FIGURES")


def agent_for(name: str) -> Agent:
    agent = CLIS[name].agent
    require(agent.locate([AGENTS_DIR]) is not None, f"{name}: `{agent.executable}` is not installed (make agents)")
    for program in agent.needs:
        require(have(program), f"{name} needs `{program}` on PATH")
    return agent


@pytest.fixture(scope="module")
def sandbox() -> Iterator[LocalSandbox]:
    box = LocalSandbox()
    require(box.isolated, f"trigger trials need bubblewrap: {box.bwrap_problem}")
    yield box
    box.close()


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory, sandbox: LocalSandbox) -> Iterator[TriggerRunner]:
    settings = Tier3Settings(enabled=True, agents_dirs=(AGENTS_DIR,), timeout_s=240)
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path_factory.mktemp("gateway"))) as gateway:
        yield TriggerRunner(gateway, sandbox, settings, TriggerSettings(max_turns=4), hidden=HIDDEN)


def examples() -> dict[str, Skill]:
    return {n: Skill(root=REPO / "example_skills" / n, key=n) for n in EXAMPLES}


def main_requests(record: TriggerRecord) -> list[dict]:
    return [e for e in map(json.loads, Path(record.artifacts["requests"]).read_text().splitlines()) if e["tools"]]


# -- the example skills' trigger sets, through each real CLI -----------------------------------------------
#: CLIs that run part of their set: OpenCode starts in ~5 s of CPU a query (~12 s wall on a busy 2-core
#: machine), so it runs this many of the set's queries, both kinds and every near miss a rival takes.
PART_OF_SET = {"opencode": 4}


def set_matrix() -> list[tuple[str, str]]:
    """(CLI, example set) pairs. Every CLI runs one set and every set runs whole through at least one
    CLI, the sets rotating over the CLIs (those that run part of a set last, on a set another CLI runs
    whole): the scripted router decides the same way whichever CLI asks, so the other eight pairs
    repeat those decisions at ~12 real CLI runs each. SKILLEVAL_TRIGGER_FULL_MATRIX=1 runs all twelve
    pairs, each whole — how docs/triggers.md's per-CLI figures are measured."""
    if os.environ.get("SKILLEVAL_TRIGGER_FULL_MATRIX") == "1":
        return [(cli, skill) for cli in CLIS for skill in EXAMPLES]
    return [(cli, EXAMPLES[i % len(EXAMPLES)]) for i, cli in enumerate(sorted(CLIS, key=lambda c: c in PART_OF_SET))]


def queries_to_run(name: str, skill_name: str, queries: list[TriggerQuery], wanted: Callable[[TriggerQuery], str | None]) -> list[TriggerQuery]:
    """The whole set, or for a CLI in PART_OF_SET: every query a rival takes, then positives and
    negatives in equal parts up to its count."""
    keep = PART_OF_SET.get(name)
    if keep is None or os.environ.get("SKILLEVAL_TRIGGER_FULL_MATRIX") == "1":
        return queries
    taken = [q for q in queries if wanted(q) not in (None, skill_name)]
    rest = [q for q in queries if q not in taken]
    positives, negatives = [q for q in rest if q.should_trigger], [q for q in rest if not q.should_trigger]
    half = max(1, (keep - len(taken)) // 2)
    chosen = {q.id for q in (*taken, *positives[:half], *negatives[:max(1, keep - len(taken) - half)])}
    return [q for q in queries if q.id in chosen]  # in the set's order


@pytest.mark.parametrize(("name", "skill_name"), set_matrix())
def test_example_trigger_sets(name: str, skill_name: str, runner: TriggerRunner, tmp_path: Path) -> None:
    agent = agent_for(name)
    skills = examples()
    sets = {n: load_trigger_set(s) for n, s in skills.items()}
    rules = {n: t.script for n, t in sets.items() if t.script is not None}
    skill = skills[skill_name]
    assert len(sets[skill_name]) >= 10 and sum(not q.should_trigger for q in sets[skill_name]) >= 5
    rivals = choose_rivals(skill, skills.values(), 20)
    assert sorted(rivals.names) == sorted(set(EXAMPLES) - {skill_name})

    def wanted_by(query: TriggerQuery) -> str | None:
        """What the scripted model should do, decided from the rules alone: the first installed skill
        whose rule wants the query (the skill under test first), if the CLI listed it."""
        return next((n for n in (skill_name, *rivals.names) if rules[n].wants(query.query)), None)

    queries = queries_to_run(name, skill_name, list(sets[skill_name]), wanted_by)
    assert any(q.should_trigger for q in queries) and any(not q.should_trigger for q in queries)
    records: list[TriggerRecord] = []
    for query in queries:
        req = TriggerRequest(skill=skill, skill_key=skill_name, query=query, agent=agent, rivals=rivals, rules=rules,
                             set_digest=sets[skill_name].digest())
        record = runner.run(req, tmp_path / query.id)
        records.append(record)
        wanted = wanted_by(query)
        shown = format_trigger(record)
        assert record.status in ("TRIGGERED", "NOT_TRIGGERED"), shown
        assert record.skill_listed is True, shown  # the CLI's own catalog (request log) listed it
        assert record.triggered == (wanted == skill_name), shown
        assert record.rival_loaded == (wanted if wanted not in (None, skill_name) else None), shown
        assert record.loaded == ([wanted] if wanted else []), shown
        if wanted:  # the gateway ended the conversation once the load was in the request
            assert record.ended_by and record.ended_by.startswith("gateway cut-off"), shown
            assert len(main_requests(record)) == 2, shown
        else:
            assert len(main_requests(record)) == 1, shown
    [a] = summarize(records)[skill_name].agents
    expected_tp = sum(1 for q in queries if q.should_trigger and rules[skill_name].wants(q.query))
    assert a.confusion.tp == expected_tp and a.errors == 0
    # The near misses a rival is meant for are taken by that rival, by name, in every CLI.
    stolen = {r.query_id: r.rival_loaded for r in records if r.rival_loaded}
    assert stolen == {"semver-bump": {"near-changelog": "changelog-writer"}, "changelog-writer": {"near-version": "semver-bump"},
                      "csv-summary": {}}[skill_name]
    _save_figures(name, skill_name, {
        "recall": a.recall.value, "precision": a.precision.value, "f1": a.f1, "accuracy": a.accuracy.value,
        "confusion": a.confusion.model_dump(), "rivals_loaded": stolen, "requests_per_query": a.per_query("requests"),
        "model_turns_per_query": a.per_query("model_turns"), "metered_tokens_per_query": a.per_query("tokens"),
        "prompt_tokens_per_query": a.per_query("prompt_tokens"), "seconds_per_query": a.per_query("seconds"), "version": a.versions})


def _save_figures(name: str, skill: str, figures: dict) -> None:
    if FIGURES:  # one file per test: xdist workers write side by side
        Path(FIGURES).mkdir(parents=True, exist_ok=True)
        (Path(FIGURES) / f"{name}--{skill}.json").write_text(json.dumps(figures, indent=1, sort_keys=True) + "\n")


# -- the trial ends at the decision, by the gateway's request count ------------------------------------------
def _shell_step(name: str) -> dict:
    return {"claude-code": {"tool": "Bash", "args": {"command": "ls"}}, "codex": {"tool": "exec_command", "args": {"cmd": "ls"}},
            "opencode": {"tool": "bash", "args": {"command": "ls", "description": "list"}},
            "gemini": {"tool": "run_shell_command", "args": {"command": "ls"}}}[name]


@pytest.mark.parametrize("name", CLIS)
def test_the_gateway_ends_the_trial_at_the_decision(name: str, runner: TriggerRunner, tmp_path: Path) -> None:
    agent = agent_for(name)
    skill = examples()["csv-summary"]
    rule = {"csv-summary": ScriptRule(match=(r"\bcsv\b",))}
    query = TriggerQuery("q", "What is in sales.csv?", True)
    # 1. After loading, the script would run three more shell commands: the gateway answers "done" instead.
    req = TriggerRequest(skill=skill, skill_key="csv-summary", query=query, agent=agent, rules=rule,
                         extra_steps=tuple(_shell_step(name) for _ in range(3)))
    record = runner.run(req, tmp_path / "load")
    main = main_requests(record)
    assert record.triggered is True and len(main) == 2, format_trigger(record)  # the load, then the cut-off — not 5
    assert main[-1]["note"].startswith("trigger-cutoff: csv-summary") or "SKILL.md" in main[-1]["note"], main[-1]
    # 2. A first tool call that is not a load does not end the trial (killing there was the false-negative bug).
    load = {"claude-code": {"tool": "Skill", "args": {"skill": "csv-summary"}},
            "codex": {"tool": "exec_command", "args": {"cmd": "cat .codex/skills/csv-summary/SKILL.md"}},
            "opencode": {"tool": "skill", "args": {"name": "csv-summary"}},
            "gemini": {"tool": "activate_skill", "args": {"name": "csv-summary"}}}[name]
    script = Script.from_data({"side_text": "t", "steps": [_shell_step(name), load, {"text": "FINAL: done"}]})
    record = runner.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=query, agent=agent, script=script), tmp_path / "look")
    assert record.triggered is True and len(main_requests(record)) == 3, format_trigger(record)
    # 3. No decision: after N model turns (--skilleval-trigger-max-turns) the gateway ends it; an answer is a decision.
    looping = Script.from_data({"side_text": "t", "steps": [_shell_step(name)]})
    record = runner.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=query, agent=agent, script=looping), tmp_path / "loop")
    main = main_requests(record)
    assert record.status == "NOT_TRIGGERED" and len(main) == 4 + 1, format_trigger(record)
    assert main[-1]["note"] == "trigger-cutoff: 4 model turns"


# -- detection: never a decoy, never a renamed copy, never a user-typed /skill ---------------------------------
def _copy(src: Path, dest: Path, name: str | None = None) -> Path:
    shutil.copytree(src, dest, ignore=shutil.ignore_patterns("evals"))
    if name:
        md = dest / "SKILL.md"
        md.write_text(md.read_text().replace("name: csv-summary", f"name: {name}", 1))
    return dest


@pytest.mark.parametrize("name", CLIS)
def test_a_decoy_or_renamed_copy_is_never_detected(name: str, runner: TriggerRunner, tmp_path: Path) -> None:
    agent = agent_for(name)
    src = REPO / "example_skills" / "csv-summary"
    root = _copy(src, tmp_path / "skills" / "csv-summary")
    (root / "evals" / "files" / "decoy" / "csv-summary").mkdir(parents=True)
    shutil.copy(src / "SKILL.md", root / "evals" / "files" / "decoy" / "csv-summary" / "SKILL.md")  # same name, same body
    skill = Skill(root=root, key="csv-summary")
    query = TriggerQuery("q", "What is in sales.csv?", True, files=("evals/files/decoy/csv-summary/SKILL.md",))
    read = {"claude-code": {"tool": "Read", "args": {"file_path": "{ws}/evals/files/decoy/csv-summary/SKILL.md"}},
            "codex": {"tool": "exec_command", "args": {"cmd": "cat evals/files/decoy/csv-summary/SKILL.md"}},
            "opencode": {"tool": "read", "args": {"filePath": "{ws}/evals/files/decoy/csv-summary/SKILL.md"}},
            "gemini": {"tool": "read_file", "args": {"file_path": "{ws}/evals/files/decoy/csv-summary/SKILL.md"}}}[name]
    # The decoy: the model reads a copy of SKILL.md that is not the installed skill.
    workspace = str(tmp_path / "decoy" / "try1" / "workspace")
    script = Script.from_data(json.loads(json.dumps({"side_text": "t", "steps": [read, {"text": "FINAL: read it"}]}).replace("{ws}", workspace)))
    record = runner.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=query, agent=agent, script=script), tmp_path / "decoy")
    assert record.status == "NOT_TRIGGERED" and record.triggered is False, format_trigger(record)
    assert any("copy or decoy" in i for i in record.ignored), format_trigger(record)
    # The renamed copy: the same skill installed as a rival under another name is that rival, by name.
    copy = Skill(root=_copy(src, tmp_path / "skills" / "csv-summary-copy", "csv-summary-copy"), key="csv-summary-copy")
    rivals = choose_rivals(skill, [copy], 20)
    rules = {"csv-summary-copy": ScriptRule(match=(r"\bcsv\b",))}  # only the copy "wants" the query
    record = runner.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=TriggerQuery("q", "What is in sales.csv?", True),
                                       agent=agent, rivals=rivals, rules=rules), tmp_path / "renamed")
    assert (record.triggered, record.rival_loaded, record.loaded) == (False, "csv-summary-copy", ["csv-summary-copy"]), format_trigger(record)


def test_a_user_typed_slash_command_is_not_a_trigger(runner: TriggerRunner, tmp_path: Path) -> None:
    agent = agent_for("claude-code")
    skill = examples()["csv-summary"]
    query = TriggerQuery("slash", "/csv-summary what is in sales.csv?", True)
    script = Script.from_data({"side_text": "t", "steps": [{"text": "FINAL: answered"}]})
    record = runner.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=query, agent=agent, script=script), tmp_path)
    assert record.status == "NOT_TRIGGERED" and record.triggered is False, format_trigger(record)
    assert any("typed by the user" in i for i in record.ignored), format_trigger(record)


# -- a gateway 500 is an ERROR, retried, never a miss ---------------------------------------------------------
@pytest.mark.parametrize("name", CLIS)
def test_a_gateway_500_is_an_error_not_a_miss(name: str, sandbox: LocalSandbox, tmp_path: Path) -> None:
    agent = agent_for(name)
    skill = examples()["csv-summary"]
    with FakeUpstream(Script.from_data({"steps": [{"text": "unused"}]}), fault="500") as upstream:
        ups = {f: Upstream(f, upstream.url, f"real-{f}-key-abcdefgh") for f in ("anthropic", "openai", "gemini")}
        # upstream_failures=1 (--skilleval-upstream-failures): the first 500 ends the trial. With the default 3 Gemini
        # CLI's own back-off (5 s, then 10 s) made each of the two trials last 15 s; what is proved here (an
        # ERROR, retried once, never a miss) does not depend on how many 500s end a trial, and the default count
        # against a real CLI (Claude Code) is test_tier3_outages.py's.
        config = GatewayConfig(mode="proxy", upstreams=ups, log_dir=tmp_path / "gateway", upstream_failures=1)
        with Gateway(config) as gateway:
            runner = TriggerRunner(gateway, sandbox, Tier3Settings(enabled=True, agents_dirs=(AGENTS_DIR,), timeout_s=240, infra_retries=1),
                                   TriggerSettings(), hidden=HIDDEN)
            record = runner.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=TriggerQuery("q", "What is in sales.csv?", True),
                                               agent=agent), tmp_path / "trial")
    assert record.status == "ERROR" and record.triggered is None and record.retries == 1, format_trigger(record)
    assert "500" in (record.reason or ""), format_trigger(record)
    [a] = summarize([record])["csv-summary"].agents
    assert (a.confusion.tp, a.confusion.fn, a.errors) == (0, 0, 1) and a.recall.value is None  # an error, never a miss


# -- the model-only probe: through the gateway, with the listing the real CLI sent ----------------------------
@pytest.mark.parametrize("name", CLIS)
def test_model_probe_prompt_carries_the_real_cli_listing(name: str, runner: TriggerRunner, tmp_path: Path) -> None:
    from pytest_skilleval.providers.openai_chat import OpenAIChat
    from pytest_skilleval.trajectory.requestlog import listing_text
    from pytest_skilleval.triggers.probe import Prober

    agent = agent_for(name)
    skills = examples()
    skill = skills["csv-summary"]
    rivals = choose_rivals(skill, skills.values(), 20)
    gateway = runner.gateway
    answers = {"whats-in-csv": "csv-summary", "near-changelog": "changelog-writer", "unrelated": None}
    for qid, chosen in answers.items():
        script = Script.from_data({"steps": [{"text": "unused"}], "json_reply": {"skill": chosen, "reason": "scripted chat provider"}})
        with gateway.trial(f"probe-{name}-{qid}", script=script) as trial:
            chat = OpenAIChat("probe-model", api_key=trial.token.secret, base_url=trial.openai_url, name="openai-compatible")
            prober = Prober(runner, chat)
            query = TriggerQuery(qid, f"query {qid}", qid == "whats-in-csv")
            record = prober.run(TriggerRequest(skill=skill, skill_key="csv-summary", query=query, agent=agent, rivals=rivals,
                                               name=f"probe-{qid}"), tmp_path / qid)
        assert record.mode == "model" and record.status in ("TRIGGERED", "NOT_TRIGGERED"), format_trigger(record)
        assert record.triggered == (chosen == "csv-summary") and record.rival_loaded == (chosen if chosen == "changelog-writer" else None)
        assert record.requests == 1 and len(trial.entries) == 1  # one chat call per query
        # The listing the real CLI sent in its capture run (its request log) is in the probe's prompt, verbatim.
        [capture_log] = list((tmp_path / qid / "listing-capture").glob("try*/out/requests.jsonl"))
        listing = listing_text(capture_log)
        assert listing is not None and agent.listing("csv-summary") in listing and agent.listing("semver-bump") in listing
        prompt = json.dumps(trial.entries[0]["body"], ensure_ascii=False)
        assert json.dumps(listing, ensure_ascii=False)[1:-1] in prompt
        assert f"query {qid}" in prompt
