"""Staging of the two arms: the only difference is the skill; evals never reach the agent; no host secret does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import manifest, write_skill

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents import ClaudeCode, Codex, GeminiCli, OpenCode
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.staging import StagingError, agent_environment, hidden_dirs, stage_trial

EVALS = '''{"skill_name": "demo-skill", "evals": [
  {"id": "c1", "prompt": "Profile evals/files/data.csv", "expected_output": "3 rows", "files": ["files/data.csv"]},
  {"id": "c2", "prompt": "Anything", "expected_output": "x"},
  {"id": "c3", "prompt": "Nothing staged", "expected_output": "x", "files": []}]}'''
SCRIPT = "#!/bin/sh\necho hi\n"


def tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def skill(tmp_path: Path) -> Skill:
    root = write_skill(tmp_path / "skills", "demo-skill", {
        "SKILL.md": manifest(), "scripts/run.sh": SCRIPT, "references/guide.md": "# Guide\n",
        "evals/evals.json": EVALS, "evals/files/data.csv": "a,b\n1,2\n", "evals/files/other.txt": "other\n",
        "evals/results/old.json": "{}", "results/run.json": "{}"})
    return Skill(root=root, key="demo-skill")


@pytest.mark.parametrize("agent", [ClaudeCode(), Codex(), OpenCode(), GeminiCli()], ids=lambda a: a.name)
def test_arms_differ_only_by_the_installed_skill(skill: Skill, tmp_path: Path, agent) -> None:  # type: ignore[no-untyped-def]
    case = load_cases(skill).get("c1")
    assert case is not None
    with_arm = stage_trial(tmp_path / "with", skill, case, agent, "with_skill")
    without = stage_trial(tmp_path / "without", skill, case, agent, "without_skill")
    installed = {f"{agent.skill_root}/demo-skill/{rel}" for rel in ("SKILL.md", "scripts/run.sh", "references/guide.md")}
    assert tree(with_arm.workspace) == {"evals/files/data.csv"} | installed
    assert tree(without.workspace) == {"evals/files/data.csv"}  # the same minus the skill
    assert not without.skill_dir.exists() and without.installed is False
    assert with_arm.skill_dir == with_arm.workspace / agent.skill_root / "demo-skill" and with_arm.installed
    assert (with_arm.skill_dir / "SKILL.md").read_text() == manifest()
    assert os.access(with_arm.skill_dir / "scripts" / "run.sh", os.X_OK)  # a script with a shebang stays runnable
    assert tree(with_arm.home) == set() and tree(without.home) == set()  # fresh HOME: no user skill anywhere
    # TMPDIR is a sibling of HOME, never an ancestor (Codex refuses its helpers under TMPDIR)
    assert with_arm.tmp not in with_arm.home.parents


def test_evals_are_never_staged_as_part_of_the_skill(skill: Skill, tmp_path: Path) -> None:
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    staged = tree(stage.workspace)
    assert not any("evals" in p.split("/") or p.startswith("results/") or "/results/" in p for p in staged), staged
    assert stage.files == ()  # files: [] stages nothing


def test_case_without_files_gets_all_of_evals_files(skill: Skill, tmp_path: Path) -> None:
    case = load_cases(skill).get("c2")
    assert case is not None and case.files is None
    stage = stage_trial(tmp_path / "t", skill, case, Codex(), "without_skill")
    assert set(stage.files) == {"evals/files/data.csv", "evals/files/other.txt"}
    assert tree(stage.workspace) == set(stage.files)


def test_links_in_the_skill_are_not_followed(tmp_path: Path) -> None:
    outside = tmp_path / "secret.txt"
    outside.write_text("TOP SECRET")
    root = write_skill(tmp_path / "skills", "demo-skill", {"SKILL.md": manifest(), "evals/evals.json": EVALS.replace("data.csv", "x.csv")})
    (root / "leak.txt").symlink_to(outside)
    skill = Skill(root=root, key="demo-skill")
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    assert "TOP SECRET" not in "".join(p.read_text() for p in stage.workspace.rglob("*") if p.is_file())
    assert not (stage.skill_dir / "leak.txt").exists()


def test_placeholders_point_into_the_trial(skill: Skill, tmp_path: Path) -> None:
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, OpenCode(), "with_skill")
    values = stage.placeholders("demo-skill")
    assert values == {"skill_dir": str(stage.workspace / ".opencode/skills/demo-skill"), "skill_name": "demo-skill",
                      "workspace": str(stage.workspace), "home": str(stage.home)}
    assert stage.cassette_placeholders()["<WORKSPACE>"] == str(stage.workspace)  # record/replay across temp folders


def test_agent_environment_holds_no_host_secret(skill: Skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = {"OPENAI_API_KEY": "sk-proj-REALKEY0123456789", "ANTHROPIC_API_KEY": "sk-ant-api03-REALKEY012345",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYREALKEY", "GITHUB_TOKEN": "ghp_REALTOKEN0123456789"}
    for name, value in real.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("SOME_UNRELATED_VAR", "keep-out")
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    with Gateway(GatewayConfig(mode="scripted")) as gw, gw.trial("env", script=Script.from_data({"steps": [{"text": "x"}]})) as trial:
        env = agent_environment(trial, stage, {"CLAUDE_CONFIG_DIR": str(stage.home / ".claude")})
        assert env["ANTHROPIC_API_KEY"] == trial.token.secret and env["OPENAI_API_KEY"] == trial.token.secret
        assert env["HOME"] == str(stage.home) and env["TMPDIR"] == str(stage.tmp)
        assert env["HTTPS_PROXY"] == trial.url  # egress lands on the gateway and is refused there
        blob = "\n".join(f"{k}={v}" for k, v in env.items())
        assert not any(value in blob for value in real.values())
        assert "SOME_UNRELATED_VAR" not in env and "AWS_SECRET_ACCESS_KEY" not in env
        with pytest.raises(StagingError, match="OPENAI_API_KEY"):  # an adapter that tried to pass one on is refused
            agent_environment(trial, stage, {"X": real["OPENAI_API_KEY"]})


def test_hidden_dirs_cover_every_agents_user_skill_folders(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    found = hidden_dirs([ClaudeCode(), Codex(), OpenCode(), GeminiCli()])
    for rel in (".claude/skills", ".codex/skills", ".agents/skills", ".config/opencode/skills", ".gemini/skills"):
        assert tmp_path / rel in found
    assert Path("/etc/codex/skills") in found
    assert len(found) == len(set(found))


@pytest.mark.parametrize("rel", ["../escaped.txt", "a/../../escaped.txt", "..", "/abs.txt", "sub\\..\\..\\escaped.txt"])
def test_staging_never_writes_outside_the_trial_folder(tmp_path: Path, rel: str) -> None:
    from pytest_skilleval.tier3 import staging

    base = tmp_path / "trial" / "workspace"
    base.mkdir(parents=True)
    with pytest.raises(StagingError, match="leaves the trial folder"):
        staging._write(base, rel, b"payload")
    assert not (tmp_path / "trial" / "escaped.txt").exists() and not (tmp_path / "escaped.txt").exists()


def test_each_trial_gets_fresh_folders_and_a_reused_root_is_refused(skill: Skill, tmp_path: Path) -> None:
    case = load_cases(skill).get("c3")
    assert case is not None
    first = stage_trial(tmp_path / "t1", skill, case, ClaudeCode(), "with_skill")
    second = stage_trial(tmp_path / "t2", skill, case, ClaudeCode(), "with_skill")
    assert first.workspace != second.workspace and first.home != second.home and first.tmp != second.tmp
    with pytest.raises(FileExistsError):  # never stage over what an earlier trial left
        stage_trial(tmp_path / "t1", skill, case, ClaudeCode(), "without_skill")


def test_leak_guard_sees_a_secret_embedded_in_a_longer_value_and_token_variables(skill: Skill, tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CI_JOB_TOKEN", "glcbt-64-REALTOKENabcdef")
    monkeypatch.setenv("DB_PASSWORD", "hunter2hunter2")
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    with Gateway(GatewayConfig(mode="scripted")) as gw, gw.trial("env", script=Script.from_data({"steps": [{"text": "x"}]})) as trial:
        with pytest.raises(StagingError, match="CI_JOB_TOKEN"):
            agent_environment(trial, stage, {"GIT_ASKPASS_URL": "https://user:glcbt-64-REALTOKENabcdef@host/x"})
        with pytest.raises(StagingError, match="DB_PASSWORD"):
            agent_environment(trial, stage, {"OPTS": "--password=hunter2hunter2 --verbose"})


def test_leak_guard_covers_short_values_of_secret_named_variables(skill: Skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DB_PASSWORD", "hunt3r")  # 6 characters: under the substring length
    monkeypatch.setenv("MAX_TOKENS", "4096")  # named like a secret, but a number: not one
    monkeypatch.setenv("TOKENIZERS_PARALLELISM", "false")
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    with Gateway(GatewayConfig(mode="scripted")) as gw, gw.trial("env", script=Script.from_data({"steps": [{"text": "x"}]})) as trial:
        with pytest.raises(StagingError, match="DB_PASSWORD"):
            agent_environment(trial, stage, {"OPTS": "--password=hunt3r --verbose"})
        with pytest.raises(StagingError, match="DB_PASSWORD"):
            agent_environment(trial, stage, {"PGPASSWORD": "hunt3r"})
        env = agent_environment(trial, stage, {"OPTS": "--max 4096 --flag false --name hunt3rs-club"})  # no whole-word match
        assert env["OPTS"].endswith("hunt3rs-club")


def scripted_stage(tmp_path: Path, skill: Skill):  # type: ignore[no-untyped-def]
    """A staged trial and a scripted gateway to hand agent_environment a trial."""
    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    gateway = Gateway(GatewayConfig(mode="scripted"))
    return gateway, stage


def test_leak_guard_looks_inside_words_from_eight_characters_on(skill: Skill, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EIGHT_SECRET", "abcd1234")  # exactly the substring length: found glued into a word
    monkeypatch.setenv("SEVEN_SECRET", "qrs5678")  # one shorter: only as a whole word
    gateway, stage = scripted_stage(tmp_path, skill)
    with gateway as gw, gw.trial("env", script=Script.from_data({"steps": [{"text": "x"}]})) as trial:
        with pytest.raises(StagingError, match="EIGHT_SECRET"):
            agent_environment(trial, stage, {"URL": "https://host/?sig=xxabcd1234yy"})
        with pytest.raises(StagingError, match="SEVEN_SECRET"):
            agent_environment(trial, stage, {"OPTS": "--pw qrs5678"})
        assert agent_environment(trial, stage, {"ID": "zzqrs5678zz"})["ID"] == "zzqrs5678zz"


def test_a_stage_is_fixed_once_made_and_names_its_writable_folders(skill: Skill, tmp_path: Path) -> None:
    import dataclasses

    case = load_cases(skill).get("c3")
    assert case is not None
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "without_skill")
    assert stage.writable == (stage.workspace, stage.home, stage.tmp)  # what the sandbox lets the agent write
    assert not stage.installed and not stage.skill_dir.exists()
    with pytest.raises(dataclasses.FrozenInstanceError):
        stage.workspace = tmp_path  # type: ignore[misc]


def test_leak_guard_finds_a_long_secret_glued_into_a_word_and_ignores_too_short_values(skill: Skill, tmp_path: Path,
                                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SERVICE_API_KEY", "s3cr3tvalue9")  # 12 characters: looked for anywhere, not only as a word
    monkeypatch.setenv("PIN_PASSWORD", "w7x9")  # 4 characters: the shortest value that is still treated as a secret
    monkeypatch.setenv("SHORT_TOKEN", "ab1")  # 3 characters: too short to tell from ordinary text
    gateway, stage = scripted_stage(tmp_path, skill)
    with gateway as gw, gw.trial("env", script=Script.from_data({"steps": [{"text": "x"}]})) as trial:
        with pytest.raises(StagingError, match="SERVICE_API_KEY"):
            agent_environment(trial, stage, {"URL": "https://host/x?sigs3cr3tvalue9tail"})
        with pytest.raises(StagingError, match="PIN_PASSWORD"):
            agent_environment(trial, stage, {"OPTS": "--pin w7x9"})
        env = agent_environment(trial, stage, {"OPTS": "--level ab1 --id xab1"})
        assert env["OPTS"] == "--level ab1 --id xab1"


def test_an_arm_name_built_at_run_time_installs_the_skill(skill: Skill, tmp_path: Path) -> None:
    case = load_cases(skill).get("c3")
    assert case is not None
    arm = "".join(["with", "_", "skill"])  # equal to WITH_SKILL, not the same object (e.g. read from a CLI option)
    stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), arm)
    assert stage.installed and (stage.skill_dir / "SKILL.md").is_file()


def test_staged_files_keep_a_script_executable_and_the_rest_plain(skill: Skill, tmp_path: Path) -> None:
    import stat

    case = load_cases(skill).get("c1")
    assert case is not None
    old = os.umask(0o022)
    try:
        stage = stage_trial(tmp_path / "t", skill, case, ClaudeCode(), "with_skill")
    finally:
        os.umask(old)
    assert stat.S_IMODE((stage.skill_dir / "scripts" / "run.sh").stat().st_mode) == 0o755
    assert stat.S_IMODE((stage.skill_dir / "references" / "guide.md").stat().st_mode) == 0o644
    assert stat.S_IMODE((stage.workspace / "evals" / "files" / "data.csv").stat().st_mode) == 0o644


@pytest.mark.parametrize("planted", ["symlink", "hardlink"])
def test_staging_never_writes_through_what_is_already_at_the_destination(skill: Skill, tmp_path: Path, planted: str) -> None:
    from pytest_skilleval.tier3.staging import stage_inputs

    victim = tmp_path / "victim.txt"
    victim.write_text("untouched")
    workspace = tmp_path / "workspace"
    (workspace / "evals" / "files").mkdir(parents=True)
    dest = workspace / "evals" / "files" / "data.csv"
    if planted == "symlink":
        dest.symlink_to(victim)
    else:
        os.link(victim, dest)
    with pytest.raises(OSError):
        stage_inputs(workspace, skill, ["evals/files/data.csv"], [])
    assert victim.read_text() == "untouched"


def test_an_input_that_cannot_be_read_safely_is_skipped_with_the_reason_and_the_rest_is_staged(tmp_path: Path) -> None:
    from pytest_skilleval.tier3.staging import stage_inputs

    root = write_skill(tmp_path / "skills", "demo-skill", {"SKILL.md": manifest(), "evals/files/a-hard.csv": "x\n",
                                                           "evals/files/c-data.csv": "1,2\n"})
    os.link(root / "evals/files/a-hard.csv", tmp_path / "second-name.csv")  # a hardlinked input: never read
    (root / "evals/files/b-link.csv").symlink_to(tmp_path / "second-name.csv")
    skill = Skill(root=root, key="demo-skill")
    workspace = tmp_path / "workspace"
    workspace.mkdir()
    skipped: list[str] = []
    staged = stage_inputs(workspace, skill, ["evals/files/b-link.csv", "evals/files", "evals/files/missing.csv",
                                             "evals/files/a-hard.csv", "evals/files/c-data.csv"], skipped)
    assert staged == ["evals/files/c-data.csv"]
    assert skipped[:3] == ["evals/files/b-link.csv: not a regular file in the skill", "evals/files: not a regular file in the skill",
                           "evals/files/missing.csv: not a regular file in the skill"]
    assert skipped[3].startswith("evals/files/a-hard.csv: ") and "hard link" in skipped[3]
    assert (workspace / "evals/files/c-data.csv").read_text() == "1,2\n"


def test_hidden_dirs_work_for_a_user_without_a_passwd_entry(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pwd

    def no_entry(uid: int) -> None:
        raise KeyError(f"getpwuid(): uid not found: {uid}")  # as in a container run with an arbitrary uid

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setattr(pwd, "getpwuid", no_entry)
    assert tmp_path / ".claude/skills" in hidden_dirs([ClaudeCode()])
