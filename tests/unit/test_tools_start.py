"""``tools.start``: a tool left running while the caller works, then read as ``tools.run`` reads it (real processes)."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest

from pytest_skilleval import tools

TOOL = tools.ToolSpec("startable", "startable-tool", "not installable: a test script")


def _script(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    script = tmp_path / "tool.sh"
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv(TOOL.override_var, str(script))


@pytest.mark.parametrize("body", ["printf 'one\\r\\ntwo\\rthree \\303\\251 \\377\\n'; printf 'warn\\r\\n' >&2; exit 3\n",
                                  "echo fine\n"])
def test_start_then_wait_gives_what_run_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, body: str) -> None:
    _script(tmp_path, monkeypatch, body)
    ran = tools.run(TOOL, [], timeout=30, ok_codes=(0, 3))
    waited = tools.start(TOOL, [], timeout=30, ok_codes=(0, 3)).wait()
    assert (waited.returncode, waited.stdout, waited.stderr) == (ran.returncode, ran.stdout, ran.stderr)


def test_an_exit_code_outside_ok_codes_fails_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _script(tmp_path, monkeypatch, "echo broken >&2; exit 5\n")
    with pytest.raises(tools.ToolError) as ran:
        tools.run(TOOL, [], timeout=30)
    with pytest.raises(tools.ToolError) as waited:
        tools.start(TOOL, [], timeout=30).wait()
    assert str(waited.value) == str(ran.value) and waited.value.kind == "crashed"


def test_the_timeout_counts_from_the_start_and_the_tool_is_killed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pid_file = tmp_path / "pid"
    _script(tmp_path, monkeypatch, f"echo $$ > {pid_file}\nexec sleep 30\n")
    running = tools.start(TOOL, [], timeout=1.0)
    time.sleep(1.2)  # the caller worked past the timeout: no second second of waiting
    began = time.perf_counter()
    with pytest.raises(tools.ToolError) as err:
        running.wait()
    assert err.value.kind == "timeout" and time.perf_counter() - began < 0.5
    pid = int(pid_file.read_text())
    assert not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().split()[2]


def test_a_missing_tool_fails_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOOL.override_var, "/nonexistent/tool")
    with pytest.raises(tools.ToolError) as err:
        tools.start(TOOL, [], timeout=1.0)
    assert err.value.kind == "missing"
