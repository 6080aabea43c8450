"""The docker sandbox against a real engine (make test starts dockerd): the gateway is the only network,
the host's environment and files are out of sight, the workspace is copied in and out, the time limit
holds, both arms of an example case run with the real Claude Code CLI in scripted mode, and no
container outlives its run — also after Ctrl-C and after an xdist worker is killed."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import docker
import pytest
from conftest import require, sigint_at_default
from e2e_clis import AGENTS_DIR, REPO

from pytest_skilleval.gateway import Gateway, GatewayConfig
from pytest_skilleval.tier3.agents import ClaudeCode
from pytest_skilleval.tier3.sandboxes import DockerSandbox, RunSpec, images
from pytest_skilleval.tier3.sandboxes.container import LABEL_CONTROLLER

ENV = {"LANG": "C.UTF-8"}
PROBE = r"""
import json, os, socket, sys, urllib.request
out = {"env": sorted(os.environ), "interfaces": [l.split(":")[0].strip() for l in open("/proc/net/dev").read().splitlines()[2:]]}
try:
    out["gateway"] = urllib.request.urlopen(sys.argv[1] + "/v1/models", timeout=5).status
except Exception as exc:
    out["gateway"] = type(exc).__name__
reached = []
for host, port in json.loads(sys.argv[2]):
    s = socket.socket()
    s.settimeout(2)
    try:
        s.connect((host, port))
        reached.append(f"{host}:{port}")
    except OSError:
        pass
    finally:
        s.close()
out["reached"] = reached
try:
    socket.getaddrinfo("deb.debian.org", 80)
    out["dns"] = True
except OSError:
    out["dns"] = False
out["visible"] = [p for p in sys.argv[3:] if os.path.exists(p)]
print(json.dumps(out))
"""


def docker_ps(controller: str | None = None) -> list[str]:
    filters = ["--filter", f"label={LABEL_CONTROLLER}={controller}"] if controller else ["--filter", "label=skilleval"]
    done = subprocess.run(["docker", "ps", "-aq", *filters], capture_output=True, text=True, check=True)
    return done.stdout.split()


@pytest.fixture(scope="module")
def docker_box() -> Iterator[DockerSandbox]:
    require(shutil.which("docker") is not None, "the docker sandbox tests need a docker engine (make test installs docker.io and starts dockerd)")
    box = DockerSandbox(agents_dir=AGENTS_DIR)
    problem = box.unavailable()
    require(problem is None, f"docker sandbox unavailable: {problem}")
    yield box
    box.close()


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path, Path]:
    out = tuple(tmp_path / n for n in ("workspace", "home", "tmp"))
    for d in out:
        d.mkdir()
    return out  # type: ignore[return-value]


def host_addresses() -> list[str]:
    """Every IPv4 address of this host (eth0, docker0, ...), from the kernel's table."""
    done = subprocess.run(["ip", "-4", "-o", "addr"], capture_output=True, text=True)
    found = [line.split()[3].split("/")[0] for line in done.stdout.splitlines() if len(line.split()) > 3]
    return sorted(set(found) | {"127.0.0.1"})


def test_gateway_is_the_only_network_and_the_host_is_out_of_sight(docker_box: DockerSandbox, dirs: tuple[Path, Path, Path],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    canary = f"canary-{uuid.uuid4().hex}"
    monkeypatch.setenv("SKILLEVAL_HOST_CANARY", canary)
    host_file = Path("/tmp") / f"skilleval-host-{uuid.uuid4().hex}"
    host_file.write_text(canary)
    home_file = Path.home() / f".skilleval-host-{uuid.uuid4().hex}"
    home_file.write_text(canary)
    open_server = socket.create_server(("0.0.0.0", 0))  # a host service on every address: what an --internal network would still reach
    threading.Thread(target=lambda: [open_server.accept()[0].close() for _ in range(100)], daemon=True).start()
    try:
        with Gateway(GatewayConfig(mode="scripted")) as gw:
            port = urlsplit(gw.url).port
            assert port is not None
            targets = [[a, p] for a in host_addresses() for p in (open_server.getsockname()[1], port)] + [["1.1.1.1", 443]]
            seen = [str(host_file), str(home_file), str(REPO), str(AGENTS_DIR), str(Path(sys.executable).parent)]
            done = docker_box.run(RunSpec(argv=("python3", "-c", PROBE, gw.url, json.dumps(targets), *seen), env={**ENV, "TRIAL": "x"},
                                          cwd=dirs[0], writable=dirs, timeout_s=60, network="gateway", gateway=("127.0.0.1", port)))
    finally:
        host_file.unlink()
        home_file.unlink()
        open_server.close()
    assert done.exit_code == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["gateway"] == 200  # through the socket relay
    # Only the relay's own loopback listener answers: the gateway's port inside is the relay, nothing on the host is reachable.
    assert [r for r in out["reached"] if not r.startswith("127.0.0.1:")] == [], out["reached"]
    assert out["reached"] == [f"127.0.0.1:{port}"], out["reached"]
    assert out["interfaces"] == ["lo"] and out["dns"] is False
    assert "SKILLEVAL_HOST_CANARY" not in out["env"] and canary not in done.stdout
    assert set(out["env"]) <= {"LANG", "TRIAL", "PATH", "HOME", "HOSTNAME", "PWD", "LC_CTYPE", "SHLVL", "_"}, out["env"]
    assert out["visible"] == [], out["visible"]  # the host's files: none of them exist in the container


def test_workspace_is_copied_in_and_back_and_planted_links_are_dropped(docker_box: DockerSandbox, dirs: tuple[Path, Path, Path]) -> None:
    workspace = dirs[0]
    (workspace / "keep.txt").write_text("in")
    (workspace / "gone.txt").write_text("delete me")
    script = ("cat keep.txt > seen.txt; rm gone.txt; mkdir -p sub && echo out > sub/new.txt; "
              "ln -s /etc/passwd evil-abs; ln -s ../../../../etc/shadow evil-rel; ln -s keep.txt ok-link; "
              f"echo h > {dirs[1]}/.profile-made")
    done = docker_box.run(RunSpec(argv=("/bin/sh", "-c", script), env=ENV, cwd=workspace, writable=dirs, timeout_s=60))
    assert done.exit_code == 0, done.stderr
    assert (workspace / "seen.txt").read_text() == "in" and (workspace / "sub" / "new.txt").read_text() == "out\n"
    assert not (workspace / "gone.txt").exists()
    assert not (workspace / "evil-abs").is_symlink() and not (workspace / "evil-rel").is_symlink()  # links out are not copied back
    assert os.readlink(workspace / "ok-link") == "keep.txt"
    assert (dirs[1] / ".profile-made").read_text() == "h\n"


def test_time_limit_kills_and_removes(docker_box: DockerSandbox, dirs: tuple[Path, Path, Path]) -> None:
    before = set(docker_ps(docker_box.identity.controller))
    started = time.monotonic()
    done = docker_box.run(RunSpec(argv=("sleep", "60"), env=ENV, cwd=dirs[0], writable=dirs, timeout_s=2))
    assert done.timed_out and done.exit_code is None and time.monotonic() - started < 20
    assert set(docker_ps(docker_box.identity.controller)) == before == set()


def test_limits_apply(docker_box: DockerSandbox, dirs: tuple[Path, Path, Path]) -> None:
    done = docker_box.run(RunSpec(argv=("/bin/sh", "-c", "cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/pids/pids.max; "
                                        "id -u; grep CapEff /proc/self/status"), env=ENV, cwd=dirs[0], writable=dirs, timeout_s=60))
    memory, pids, uid, caps = done.stdout.split("\n")[:4]
    assert int(memory) == 2 * 1024**3 and pids == "512" and uid == "0"
    assert caps.split()[-1] == "0000000000000000"  # root in name only: every capability dropped


def test_a_skills_environment_dockerfile_becomes_its_trial_image(docker_box: DockerSandbox, dirs: tuple[Path, Path, Path],
                                                                 tmp_path: Path) -> None:
    skill = tmp_path / "needs-tool"
    (skill / "evals" / "environment").mkdir(parents=True)
    (skill / "evals" / "environment" / "Dockerfile").write_text("# a tool the skill's scripts call\nFROM skilleval/agent:latest\n"
                                                               "COPY tool.sh /usr/local/bin/skill-tool\n")
    (skill / "evals" / "environment" / "tool.sh").write_text("#!/bin/sh\necho tool-ran\n")
    (skill / "evals" / "environment" / "tool.sh").chmod(0o755)
    done = docker_box.run(RunSpec(argv=("skill-tool",), env=ENV, cwd=dirs[0], writable=dirs, timeout_s=60, skill_root=skill))
    assert done.stdout.strip() == "tool-ran", done.stderr
    plain = docker_box.run(RunSpec(argv=("/bin/sh", "-c", "command -v skill-tool || echo absent"), env=ENV, cwd=dirs[0], writable=dirs))
    assert plain.stdout.strip() == "absent"  # other skills' trials do not get it
    (skill / "evals" / "environment" / "Dockerfile").write_text("RUN echo no base\n")
    with pytest.raises(images.ImageError, match="first instruction must be FROM"):
        images.skill_image(docker.from_env(), skill, "evals/environment", [])


def test_a_user_image_is_the_base_of_the_trial_image(docker_box: DockerSandbox, dirs: tuple[Path, Path, Path]) -> None:
    """--skilleval-image: the agent layer goes on top of the user's image (here a tag of our base, so nothing is rebuilt)."""
    subprocess.run(["docker", "tag", images.BASE_ALIAS, "skilleval-test/user-base:1"], check=True)
    user = DockerSandbox(agents_dir=AGENTS_DIR, user_image="skilleval-test/user-base:1")
    try:
        assert user.unavailable() is None
        done = user.run(RunSpec(argv=("claude", "--version"), env=ENV, cwd=dirs[0], writable=dirs, timeout_s=60))
        assert "Claude Code" in done.stdout, done.stderr
        missing = DockerSandbox(agents_dir=AGENTS_DIR, user_image="skilleval-test/no-such-image:1")
        assert "cannot be prepared" in (missing.unavailable() or "")
    finally:
        user.close()
        subprocess.run(["docker", "rmi", "skilleval-test/user-base:1"], capture_output=True)


# -- as a user runs it ----------------------------------------------------------------------------------
COMMON = ("-p", "no:cacheprovider", f"--skilleval-agents-dir={AGENTS_DIR}", "--skilleval-sandbox=docker")


def need_claude() -> None:
    require(ClaudeCode().locate([AGENTS_DIR]) is not None, "claude-code is not installed (make agents)")


def test_both_arms_of_an_example_case_in_docker(pytester: pytest.Pytester) -> None:
    need_claude()
    shutil.copytree(REPO / "example_skills" / "semver-bump", pytester.path / "skills" / "semver-bump")
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "-k", "semver-001", "-n", "2",
                                           *COMMON, timeout=600)
    out = result.stdout.str()
    assert "skilleval tier3 sandbox: docker: " in out, out[-3000:]
    outcomes = result.parseoutcomes()  # the baseline fails its case: shown ADVISORY, the run still passes
    assert (outcomes.get("passed"), outcomes.get("advisory"), outcomes.get("failed")) == (1, 1, None), out[-3000:]
    assert result.ret == 0, out[-3000:]
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    attempts = data["skills"][0]["tier3"]["agents"][0]["attempts"]
    by_arm = {a["arm"]: a for a in attempts}
    assert by_arm["with_skill"]["status"] == "PASSED" and by_arm["without_skill"]["status"] == "FAILED", attempts
    card = (pytester.path / "skilleval-report" / "semver-bump" / "BENCHMARK.md").read_text()
    assert "docker: skilleval/agent:" in card


LONG_TRIAL = '''
import os, pathlib
from pytest_skilleval.tier3.sandboxes import RunSpec

def test_long_trial(skilleval_sandbox, tmp_path):
    pathlib.Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
    ws = tmp_path / "ws"
    ws.mkdir()
    skilleval_sandbox.run(RunSpec(argv=("sleep", "300"), env={}, cwd=ws, writable=(ws,), timeout_s=300))
'''


def start_session(path: Path, *args: str) -> tuple[subprocess.Popen[bytes], Path]:
    (path / "test_long.py").write_text(LONG_TRIAL)
    pid_file = path / "worker.pid"
    env = {**os.environ, "PID_FILE": str(pid_file), "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "test_long.py", "-p", "no:cacheprovider", "-o", "addopts=", *COMMON, *args],
                            cwd=path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                            preexec_fn=sigint_at_default)
    return proc, pid_file


def wait_for_container(controller: str, proc: subprocess.Popen[bytes], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if docker_ps(controller):
            time.sleep(1)  # past create: running
            return
        if proc.poll() is not None:
            raise AssertionError(proc.stdout.read().decode()[-3000:] if proc.stdout else "exited")
        time.sleep(0.2)
    raise AssertionError("no container appeared")


@pytest.mark.parametrize("xdist", [False, True], ids=["plain", "xdist"])
def test_ctrl_c_leaves_no_container(tmp_path: Path, xdist: bool) -> None:
    need_claude()
    proc, _ = start_session(tmp_path, *(("-n", "1") if xdist else ()))
    controller = f"{socket.gethostname()}:{proc.pid}"
    try:
        wait_for_container(controller, proc)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the whole foreground group
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert docker_ps(controller) == []


def test_killed_xdist_worker_leaves_no_container(tmp_path: Path) -> None:
    need_claude()
    proc, pid_file = start_session(tmp_path, "-n", "1")
    controller = f"{socket.gethostname()}:{proc.pid}"
    try:
        wait_for_container(controller, proc)
        os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the worker dies mid-trial; its container keeps running
        assert docker_ps(controller), "the container should still exist until the controller sweeps"
        proc.wait(timeout=300)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    out = proc.stdout.read().decode() if proc.stdout else ""
    assert "crashed" in out.lower() or "worker" in out.lower(), out[-2000:]
    assert docker_ps(controller) == []
