"""The shell-read rule: which commands load a SKILL.md (Codex has no skill tool) and which only touch it."""

from __future__ import annotations

import pytest

from pytest_skilleval.trajectory.shell import skill_read_path, unwrap

SKILL = "/work/proj/.agents/skills/pdf-processing/SKILL.md"


@pytest.mark.parametrize("command", [
    f"cat {SKILL}",
    f"/bin/bash -lc 'cat {SKILL}'",
    f"bash -c \"sed -n '1,220p' {SKILL}\"",
    f"head -n 40 {SKILL}",
    f"tail -20 {SKILL}",
    f"cat {SKILL} | head -20",
    f"cd /tmp && cat {SKILL}",
    f"sudo cat {SKILL}",
    f"env LC_ALL=C cat {SKILL}",
    f"FOO=1 cat {SKILL}",
    f"cat {SKILL} > /tmp/copy.md",
    f"cat {SKILL}>/tmp/copy.md",
    "cat 'skills/with space/SKILL.md'",
    f"nl -ba {SKILL}",
    f"Get-Content {SKILL}",
    ["bash", "-lc", f"cat {SKILL}"],
])
def test_reads_that_load_the_skill(command: str | list[str]) -> None:
    assert skill_read_path(command) is not None


@pytest.mark.parametrize("command", [
    f"sed -i 's/a/b/' {SKILL}",
    f"sed -i.bak 's/a/b/' {SKILL}",
    f"sed -ni p {SKILL}",
    f"sed --in-place 's/a/b/' {SKILL}",
    f"cat header.md > {SKILL}",
    f"cat header.md >> {SKILL}",
    f"echo '---' >> {SKILL}",
    f"echo x | tee {SKILL}",
    f"cat {SKILL} | tee -a {SKILL}",
    f"cat > {SKILL} <<'EOF'\n---\nname: x\n---\nEOF",
    f"grep -n description {SKILL}",
    f"ls -l {SKILL}",
    f"cat notes.md; ls {SKILL}",
    f"wc -l {SKILL}",
    f"rm {SKILL}",
    "cat README.md",
    "cat 'unbalanced quote SKILL.md",
])
def test_commands_that_do_not_load_it(command: str) -> None:
    assert skill_read_path(command) is None


def test_the_path_returned_is_the_verbs_operand() -> None:
    assert skill_read_path(f"/bin/bash -lc \"sed -n '1,80p' {SKILL} | head -20\"") == SKILL
    assert skill_read_path("cat a/SKILL.md b/notes.md") == "a/SKILL.md"


def test_unwrap_nested_shells() -> None:
    assert unwrap("bash -lc \"sh -c 'cat x'\"") == "cat x"
    assert unwrap("cat x") == "cat x"
