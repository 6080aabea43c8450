"""The local sandbox: bubblewrap confinement, the gateway as the only network, the time limit and the
process tree, and the refusal to run unconfined unless allowed."""

from __future__ import annotations

import os
import shutil
import sys
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from conftest import require

from pytest_skilleval.gateway import Gateway, GatewayConfig
from pytest_skilleval.tier3.agents import ClaudeCode
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.sandboxes import LocalSandbox, RunSpec
from pytest_skilleval.tier3.trial import TrialRunner, TrialUnavailable

PY = sys.executable
REPO = Path(__file__).resolve().parents[2]
ENV = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}


@pytest.fixture(scope="module")
def bwrap() -> LocalSandbox:
    sandbox = LocalSandbox()
    if not sandbox.isolated:
        require(False, f"bubblewrap cannot confine here: {sandbox.bwrap_problem}")
    return sandbox


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tuple(tmp_path / n for n in ("workspace", "home", "tmp"))
    for d in out:
        d.mkdir()
    return out  # type: ignore[return-value]


def sh(sandbox: LocalSandbox, script: str, dirs: tuple[Path, ...], **kw: object) -> tuple[int | None, str]:
    spec = RunSpec(argv=("/bin/sh", "-c", script), env=ENV, cwd=dirs[0], writable=dirs, **kw)  # type: ignore[arg-type]
    done = sandbox.run(spec)
    return done.exit_code, done.stdout + done.stderr


def test_filesystem_is_read_only_but_for_the_trial(bwrap: LocalSandbox, dirs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    host_tmp = Path("/tmp") / f"skilleval-probe-{uuid.uuid4().hex}"
    host_tmp.write_text("host")
    hidden = tmp_path / "user-skills"
    (hidden / "secret-skill").mkdir(parents=True)
    try:
        code, out = sh(bwrap, f"touch /usr/skilleval-x 2>/dev/null && echo ROOT-WRITABLE; echo hi > {dirs[0]}/made.txt; "
                              f"test -e {host_tmp} && echo HOST-TMP-VISIBLE; ls -A {hidden} 2>/dev/null; echo done", dirs, hidden=(hidden,))
    finally:
        host_tmp.unlink()
    assert code == 0 and out.strip().endswith("done"), out
    assert "ROOT-WRITABLE" not in out and "HOST-TMP-VISIBLE" not in out and "secret-skill" not in out
    assert (dirs[0] / "made.txt").read_text() == "hi\n"  # the workspace is the host's folder


def test_the_gateway_is_the_only_network(bwrap: LocalSandbox, dirs: tuple[Path, Path, Path]) -> None:
    probe = ("import sys, urllib.request\n"
             "try:\n    print(urllib.request.urlopen(sys.argv[1] + '/v1/models', timeout=5).status)\n"
             "except Exception as exc:\n    print('NO-NETWORK', type(exc).__name__)\n")
    with Gateway(GatewayConfig(mode="scripted")) as gw:
        port = urlsplit(gw.url).port
        assert port is not None
        base = RunSpec(argv=(PY, "-I", "-c", probe, gw.url), env=ENV, cwd=dirs[0], writable=dirs, timeout_s=30)
        through = bwrap.run(RunSpec(**{**base.__dict__, "network": "gateway", "gateway": ("127.0.0.1", port)}))
        cut_off = bwrap.run(base)  # network="none"
    assert through.stdout.strip() == "200", through.stderr
    assert cut_off.stdout.startswith("NO-NETWORK"), cut_off.stdout
    code, out = sh(bwrap, "cat /proc/net/dev | tail -n +3 | cut -d: -f1", dirs)
    assert out.split() == ["lo"]  # no interface that could reach anything else


def survivors(tag: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and tag in (entry / "cmdline").read_bytes().decode(errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("confined", [True, False], ids=["bubblewrap", "unsandboxed"])
def test_timeout_kills_the_whole_process_tree(bwrap: LocalSandbox, dirs: tuple[Path, Path, Path], confined: bool) -> None:
    sandbox = bwrap if confined else LocalSandbox(use_bwrap=False)
    tag = f"6{uuid.uuid4().int % 10**6}.5"  # a sleep length no other process has
    started = time.perf_counter()
    # a grandchild in its own session: a process-group kill alone would miss it
    spec = RunSpec(argv=("/bin/sh", "-c", f"setsid sleep {tag} & sleep {tag} & wait"), env=ENV, cwd=dirs[0], writable=dirs, timeout_s=1.5)
    done = sandbox.run(spec)
    assert done.timed_out and done.exit_code is None and time.perf_counter() - started < 15
    for _ in range(50):
        if not survivors(tag):
            break
        time.sleep(0.1)
    assert survivors(tag) == [], "a process of the trial survived its time limit"


def test_unconfined_trials_are_refused_unless_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = tmp_path / "claude"
    fake.write_text("#!/bin/sh\necho 1.0.0\n")
    fake.chmod(0o755)
    monkeypatch.setenv("SKILLEVAL_CLAUDE_CODE_PATH", str(fake))
    plain = LocalSandbox(use_bwrap=False)
    assert not plain.isolated and "UNSANDBOXED" in plain.describe()
    refusing = TrialRunner(Gateway(GatewayConfig()), plain, Tier3Settings())
    with pytest.raises(TrialUnavailable, match="--skilleval-allow-unsandboxed"):
        refusing.check(ClaudeCode())
    TrialRunner(Gateway(GatewayConfig()), plain, Tier3Settings(allow_unsandboxed=True)).check(ClaudeCode())  # allowed: no raise
    if shutil.which("bwrap") is None:
        assert not LocalSandbox().isolated


def test_host_home_checkout_and_shadow_stay_outside(bwrap: LocalSandbox, dirs: tuple[Path, Path, Path], tmp_path: Path) -> None:
    """Only system folders, the command's install folder and the trial's folders are there: canaries in the
    host's HOME, the checkout and a neighbouring workspace, and /etc/shadow, cannot be read."""
    token, name = uuid.uuid4().hex, uuid.uuid4().hex
    canaries = [Path(os.path.expanduser("~")) / f".skilleval-canary-{name}", REPO / f".skilleval-canary-{name}",
                tmp_path / "other-workspace" / "canary"]
    canaries[2].parent.mkdir()
    for n, path in enumerate(canaries):
        path.write_text(f"CANARY-{n}-{token}\n")
    try:
        reads = " ".join(f"cat {p};" for p in [*canaries, Path("/etc/shadow"), Path("/etc/ssl/private")])
        code, out = sh(bwrap, f"{reads} ls -A /root /home /work 2>&1; echo done", dirs)
    finally:
        for path in canaries:
            path.unlink()
    assert code == 0 and "done" in out, out
    assert token not in out, out
    assert out.count("No such file or directory") >= 5, out
    if os.access("/etc/shadow", os.R_OK):
        assert Path("/etc/shadow").read_text().splitlines()[0] not in out
