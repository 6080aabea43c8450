"""The ``docker`` sandbox: one container per agent run, on the docker SDK against a real engine.

``--skilleval-sandbox=docker``. Each :meth:`DockerSandbox.run` creates a container from the trial
image (images.py: built here, no registry), copies the trial's writable folders in (workspace,
HOME, TMPDIR — at the same absolute paths, so the staged environment, the CLI's config and a
case script's ``{workspace}`` need no rewriting; never a bind mount of a host folder), starts it,
waits with the time limit, reads stdout/stderr, copies the writable folders back (through
tarfile's ``data`` filter: no links out, no devices, a size cap) and removes the container.

Confinement: ``--network none`` — the container has only loopback. The gateway is reached the way
the local sandbox reaches it: the host's Unix-socket bridge (bridge.py) folder is the one bind
mount, and relay.py inside listens on 127.0.0.1:PORT and pipes to it. All capabilities dropped,
no-new-privileges, tini as PID 1, memory/CPU/pids limits, and the environment is exactly the
trial's (the host's variables never reach the container). The agent CLI is the image's copy of the
npm prefix, so the host executable path is mapped to ``/opt/skilleval/agents``.

Nothing is left behind: every container carries ``skilleval.run`` (this session) and
``skilleval.controller`` (host:pid) labels; a run removes its container in ``finally`` (Ctrl-C
included), and the controller sweeps its run's label at session end (an xdist worker killed
mid-trial leaves its container to that sweep) and containers of controllers that no longer exist.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval import processes
from pytest_skilleval.tier3.sandboxes import images
from pytest_skilleval.tier3.sandboxes.base import RunResult, RunSpec, Sandbox
from pytest_skilleval.tier3.sandboxes.bridge import UnixBridge
from pytest_skilleval.tier3.sandboxes.options import DOCKER_OPTIONS

IN_CONTAINER_GATEWAY = "/run/skilleval-gw"
MAX_CAPTURE = 32 * 1024 * 1024  # bytes of stdout/stderr kept
MAX_COPY_BACK = 512 * 1024 * 1024  # bytes of a writable folder copied back out of a container
LABEL_RUN, LABEL_CONTROLLER, LABEL_ROLE = "skilleval.run", "skilleval.controller", "skilleval"
RUN_INPUT = "skilleval_docker_run"  # workerinput key: the controller's run id and host:pid


@dataclass(frozen=True)
class Limits:
    memory: str = "2g"
    cpus: float = 1.0
    pids: int = 512


@dataclass(frozen=True)
class RunIdentity:
    run: str
    controller: str  # host:pid of the pytest controller

    @classmethod
    def fresh(cls) -> RunIdentity:
        return cls(uuid.uuid4().hex[:16], f"{socket.gethostname()}:{os.getpid()}")

    def labels(self) -> dict[str, str]:
        return {LABEL_ROLE: "trial", LABEL_RUN: self.run, LABEL_CONTROLLER: self.controller}


class DockerSandbox(Sandbox):
    name = "docker"

    def __init__(self, *, agents_dir: Path | None = None, user_image: str | None = None, limits: Limits = Limits(),
                 identity: RunIdentity | None = None, sweep_on_close: bool = False) -> None:
        self.agents_dir = Path(os.path.realpath(agents_dir)) if agents_dir else None
        self.user_image = user_image
        self.limits = limits
        self.identity = identity or RunIdentity.fresh()
        self.sweep_on_close = sweep_on_close
        self.build_log: list[str] = []
        self._client: Any = None
        self._problem: str | None = None
        self._image: str | None = None
        self._skill_images: dict[Path, str] = {}
        self._bridges: dict[tuple[str, int], UnixBridge] = {}
        self._live: set[str] = set()  # containers of this process not yet removed
        self._lock = threading.Lock()

    # -- Sandbox -------------------------------------------------------------------------------------
    @property
    def isolated(self) -> bool:
        return True  # a run either happens in a container or not at all (unavailable() says why)

    def describe(self) -> str:
        image = self._image or self.user_image or "skilleval/agent (built on first use)"
        return (f"docker: {image} (--network none + the gateway relay, private root filesystem, no capabilities, "
                f"memory {self.limits.memory}, {self.limits.cpus:g} CPU, {self.limits.pids} pids)")

    def unavailable(self) -> str | None:
        """Connects to the engine and builds the trial image the first time (tens of seconds once)."""
        with self._lock:
            if self._image is None and self._problem is None:
                self._problem = self._prepare()
        return self._problem

    def _prepare(self) -> str | None:
        try:
            import docker
        except ImportError:
            return "the docker sandbox needs the docker SDK (pip install 'pytest-skilleval[docker]')"
        try:
            self._client = docker.from_env(timeout=120)
            self._client.ping()
        except Exception as exc:  # noqa: BLE001 - any failure to reach the engine means: not here
            return f"no docker engine reachable ({type(exc).__name__}: {exc}); start dockerd or set DOCKER_HOST"
        try:
            base = self.user_image or images.base_image(self._client, self.build_log)
            self._image = images.agent_image(self._client, base, self.agents_dir, self.build_log)
        except images.ImageError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - e.g. the user image does not exist
            return f"the trial image cannot be prepared: {type(exc).__name__}: {exc}"
        return None

    def client(self) -> Any:
        """The docker SDK client (after :meth:`unavailable` returned None)."""
        if self._client is None:
            raise RuntimeError("the docker sandbox is not prepared (call unavailable() first)")
        return self._client

    def image_for(self, skill_root: Path | None) -> str:
        """The trial image; a skill with ``evals/environment/Dockerfile`` gets that image plus the agent layer."""
        assert self._image is not None
        if skill_root is None or not (skill_root / "evals" / "environment" / "Dockerfile").is_file():
            return self._image
        with self._lock:
            if skill_root not in self._skill_images:
                base = images.skill_image(self._client, skill_root, "evals/environment", self.build_log)
                self._skill_images[skill_root] = (base if images.is_agent_image(self._client, base)
                                                  else images.agent_image(self._client, base, self.agents_dir, self.build_log))
            return self._skill_images[skill_root]

    def run(self, spec: RunSpec) -> RunResult:
        problem = self.unavailable()
        if problem:
            raise RuntimeError(f"docker sandbox unavailable: {problem}")
        started = time.perf_counter()
        image = self.image_for(spec.skill_root)
        argv, volumes = self._command(spec)
        env = {**spec.env, "PATH": images.IMAGE_PATH}
        container = self._client.containers.create(
            image, argv, environment=env, working_dir=str(spec.cwd), network_mode="none", volumes=volumes,
            labels=self.identity.labels(), mem_limit=self.limits.memory, memswap_limit=self.limits.memory,
            nano_cpus=int(self.limits.cpus * 1e9), pids_limit=self.limits.pids, cap_drop=["ALL"],
            security_opt=["no-new-privileges"], init=True, stdin_open=False, tty=False, detach=True)
        with self._lock:
            self._live.add(container.id)
        timed_out = False
        cancelled = threading.Event()
        try:
            container.put_archive("/", _archive(_folders(spec)))
            container.start()
            if spec.cancel is not None:  # the gateway ended the trial (an outage): stop the container now
                threading.Thread(target=_kill_on, args=(spec.cancel, cancelled, container, spec.timeout_s), daemon=True).start()
            try:
                exit_code: int | None = int(container.wait(timeout=spec.timeout_s)["StatusCode"])
            except Exception as exc:  # noqa: BLE001 - requests' ReadTimeout/ConnectionError: the time limit
                if not _is_timeout(exc):
                    raise
                timed_out, exit_code = True, None
                container.kill()
                container.wait(timeout=30)
            stdout = _logs(container, spec.stdout, stdout=True)
            stderr = _logs(container, spec.stderr, stdout=False)
            for folder in spec.writable:
                _copy_back(container, folder)
        finally:
            self._remove(container.id)
        if cancelled.is_set():
            exit_code = None
        return RunResult(exit_code, stdout, stderr, timed_out, time.perf_counter() - started, cancelled.is_set())

    def _command(self, spec: RunSpec) -> tuple[list[str], dict[str, dict[str, str]]]:
        argv = [self._in_image(spec.argv[0]), *spec.argv[1:]]
        if spec.network != "gateway":
            return argv, {}
        if spec.gateway is None:
            raise ValueError("network='gateway' needs the gateway's (host, port)")
        bridge = self._bridge(spec.gateway)
        relay = ["python3", "-I", "-S", images.IN_IMAGE_RELAY, str(spec.gateway[1]), f"{IN_CONTAINER_GATEWAY}/{bridge.path.name}", "--"]
        return relay + argv, {str(bridge.folder): {"bind": IN_CONTAINER_GATEWAY, "mode": "ro"}}

    def _in_image(self, executable: str) -> str:
        """The host's agent CLI path → its copy in the image (the npm prefix lives at /opt/skilleval/agents)."""
        if self.agents_dir is None or not os.path.isabs(executable):
            return executable
        here = Path(os.path.abspath(executable))  # not realpath: keep node_modules/.bin/<cli>, the image has the same link
        for base in (self.agents_dir, Path(os.path.abspath(self.agents_dir))):
            if base in here.parents:
                return f"{images.IN_IMAGE_AGENTS}/{here.relative_to(base).as_posix()}"
        real = Path(os.path.realpath(executable))
        if self.agents_dir in real.parents:
            return f"{images.IN_IMAGE_AGENTS}/{real.relative_to(self.agents_dir).as_posix()}"
        return executable

    def _bridge(self, target: tuple[str, int]) -> UnixBridge:
        with self._lock:
            if target not in self._bridges:
                self._bridges[target] = UnixBridge(target)
                os.chmod(self._bridges[target].folder, 0o755)  # the container's root has no CAP_DAC_OVERRIDE
            return self._bridges[target]

    def _remove(self, container_id: str) -> None:
        try:
            self._client.api.remove_container(container_id, force=True, v=True)
        except Exception:  # noqa: BLE001,S110 - already gone; the session-end sweep is the backstop
            pass
        with self._lock:
            self._live.discard(container_id)

    # -- cleanup -------------------------------------------------------------------------------------
    def sweep(self) -> int:
        """Remove every container of this run, and of controllers on this host that no longer exist."""
        client = self._client
        if client is None:
            try:
                import docker

                client = docker.from_env(timeout=60)
                client.ping()
            except Exception:  # noqa: BLE001 - no engine: nothing of ours can be running
                return 0
        removed = 0
        for container in client.containers.list(all=True, filters={"label": LABEL_ROLE}):
            labels = container.labels or {}
            host, _, pid = str(labels.get(LABEL_CONTROLLER, "")).rpartition(":")
            stale = host == socket.gethostname() and pid.isdigit() and not processes.alive(int(pid))
            if labels.get(LABEL_RUN) == self.identity.run or stale:
                try:
                    container.remove(force=True, v=True)
                    removed += 1
                except Exception:  # noqa: BLE001,S110 - removed meanwhile
                    pass
        return removed

    def close(self) -> None:
        with self._lock:
            live = list(self._live)
            bridges = list(self._bridges.values())
            self._bridges.clear()
        for container_id in live:
            self._remove(container_id)
        if self.sweep_on_close:
            self.sweep()
        for bridge in bridges:
            bridge.close()


def _kill_on(cancel: threading.Event, cancelled: threading.Event, container: Any, limit_s: float) -> None:
    """Kill ``container`` when ``cancel`` is set before the time limit (RunSpec.cancel)."""
    if cancel.wait(limit_s):
        cancelled.set()
        try:
            container.kill()
        except Exception:  # noqa: BLE001 - it may have exited meanwhile
            pass


def _is_timeout(exc: Exception) -> bool:
    names = {cls.__name__ for cls in type(exc).__mro__}
    return bool(names & {"ReadTimeout", "ReadTimeoutError", "ConnectionError", "Timeout"})


def _folders(spec: RunSpec) -> list[Path]:
    folders = list(spec.writable)
    if spec.cwd not in folders and not any(f in spec.cwd.parents for f in folders):
        folders.append(spec.cwd)
    return folders


def _archive(folders: Iterable[Path]) -> bytes:
    """A tar of ``folders`` at their absolute paths (parents included), owned by root so the container's
    capability-less root can write them; links inside stay links, nothing outside is followed."""
    buffer = io.BytesIO()
    seen: set[str] = set()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for folder in folders:
            for parent in reversed(folder.parents[:-1]):  # /tmp, /tmp/pytest-of-root, ... as plain dirs
                name = parent.as_posix().lstrip("/")
                if name not in seen:
                    seen.add(name)
                    info = tarfile.TarInfo(name)
                    info.type, info.mode = tarfile.DIRTYPE, 0o755
                    tar.addfile(info)
            tar.add(folder, arcname=folder.as_posix().lstrip("/"), filter=_as_root)
    return buffer.getvalue()


def _as_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if not (info.isfile() or info.isdir() or info.issym()):
        return None  # no FIFOs or devices into the container
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _data_or_drop(member: tarfile.TarInfo, dest: str) -> tarfile.TarInfo | None:
    """tarfile's ``data`` filter (no absolute paths, no links leaving ``dest``, no devices, no setuid),
    dropping what it refuses instead of failing the copy: a link the agent planted is simply not copied."""
    try:
        return tarfile.data_filter(member, dest)  # type: ignore[attr-defined,no-any-return]
    except tarfile.FilterError:  # type: ignore[attr-defined]
        return None


def _logs(container: Any, path: Path | None, *, stdout: bool) -> str:
    data = container.logs(stdout=stdout, stderr=not stdout)[:MAX_CAPTURE]
    if path is not None:
        path.write_bytes(data)
    return data.decode("utf-8", "replace")  # type: ignore[no-any-return]


def _copy_back(container: Any, folder: Path) -> None:
    """Replace the host ``folder`` with the container's version of it (the agent may add, change, delete)."""
    stream, _ = container.get_archive(str(folder))
    with tempfile.TemporaryFile() as raw:
        size = 0
        for chunk in stream:
            size += len(chunk)
            if size > MAX_COPY_BACK:
                raise RuntimeError(f"{folder} grew past {MAX_COPY_BACK // 2**20} MB in the container; not copied back")
            raw.write(chunk)
        raw.seek(0)
        fresh = Path(tempfile.mkdtemp(prefix=".copy-back-", dir=folder.parent))
        try:
            with tarfile.open(fileobj=raw, mode="r") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(fresh, filter=_data_or_drop)
                else:  # Python < 3.11.4: only plain files and folders
                    tar.extractall(fresh, members=[m for m in tar.getmembers() if (m.isfile() or m.isdir())
                                                   and not m.name.startswith("/") and ".." not in m.name.split("/")])
            shutil.rmtree(folder)
            os.rename(fresh / folder.name, folder)
        finally:
            shutil.rmtree(fresh, ignore_errors=True)


# -- registration --------------------------------------------------------------------------------------
RUN_IDENTITY = pytest.StashKey[RunIdentity]()


def docker_sandbox(config: pytest.Config) -> DockerSandbox:
    """The backend as this process's configuration asks for it (called from ``pytest_skilleval_sandboxes``)."""
    values = {opt.name: config_mod.value(config, opt) for opt in DOCKER_OPTIONS}
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and RUN_INPUT in workerinput:
        run, controller = workerinput[RUN_INPUT]
        identity = RunIdentity(run, controller)
    else:
        identity = config.stash.setdefault(RUN_IDENTITY, RunIdentity.fresh())
    agents = str(config_mod.value(config, _agents_dir_option()) or "")
    agents_dir = Path(agents) if os.path.isabs(agents) else config.rootpath / agents
    chosen = str(config.getoption("skilleval_sandbox", None) or "").strip() == DockerSandbox.name
    limits = Limits(memory=str(values["skilleval_docker_memory"]), cpus=float(values["skilleval_docker_cpus"]),
                    pids=int(values["skilleval_docker_pids"]))
    if not config.pluginmanager.has_plugin(DockerRunPlugin.NAME):
        config.pluginmanager.register(DockerRunPlugin(identity), DockerRunPlugin.NAME)
    return DockerSandbox(agents_dir=agents_dir, user_image=values["skilleval_image"] or None, limits=limits, identity=identity,
                         sweep_on_close=chosen and workerinput is None)


def _agents_dir_option() -> config_mod.Option:
    from pytest_skilleval.tier3.options import OPTIONS

    return next(o for o in OPTIONS if o.name == "skilleval_agents_dir")


class DockerRunPlugin:
    """Hands the controller's run identity to each xdist worker, so every container of the session
    carries one label the controller can sweep."""

    NAME = "skilleval-docker-run"

    def __init__(self, identity: RunIdentity) -> None:
        self.identity = identity

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        node.workerinput[RUN_INPUT] = (self.identity.run, self.identity.controller)
