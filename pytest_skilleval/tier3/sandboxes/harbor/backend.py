"""The ``harbor`` sandbox: Tier 3 trials handed to Harbor (PyPI ``harbor``), run by its own orchestration.

``--skilleval-sandbox=harbor --skilleval-harbor-env=docker|podman|daytona|modal|…``. Harbor needs
Python >= 3.12, so it runs from its own virtualenv (``make harbor``) as a subprocess: ``harbor run -c
job.json``; its result files are read back with our own models (results.py).

Trial items stay one per case × arm × attempt. The first item of a skill × agent × arm (× rerun)
to run takes a lock, writes every case of that skill as a Harbor task and runs one Harbor job for
the arm (tasks.py), grades each Harbor trial on the host exactly as a local trial is graded
(TrialRunner.record: the agent's stream-json output through our parser, the workspace the verifier
saved, the gateway's request log, tokens and cost), and stores the records; every item, in any
xdist worker, then reads its own. Cards, pass@k and lift cannot tell the difference.

The model: with ``docker``/``podman`` the containers have no network and reach this run's gateway
through the socket relay, each trial with its own scoped token (claims.py) — metered, scripted or
proxied like any trial. A cloud environment cannot reach a gateway on this machine: there the agent
talks to the provider with the user's key (docs/sandboxes.md: what that trades away).
A Harbor ``exception_info`` on a trial is an infrastructure ERROR, never a reward of 0.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_skilleval.tier3.sandboxes import images
from pytest_skilleval.tier3.sandboxes.base import RunResult, RunSpec, Sandbox
from pytest_skilleval.tier3.sandboxes.bridge import UnixBridge
from pytest_skilleval.tier3.sandboxes.container import DockerSandbox
from pytest_skilleval.tier3.sandboxes.harbor import tasks
from pytest_skilleval.tier3.sandboxes.harbor.claims import ClaimServer

# Every run builds the sandbox registry, this backend included: what only a Harbor trial uses (the
# gateway, staging, grading, Harbor's result files) is imported by the methods that run one.
if TYPE_CHECKING:
    from pytest_skilleval.gateway import Trial
    from pytest_skilleval.tier3.record import TrialRecord
    from pytest_skilleval.tier3.sandboxes.harbor.results import TrialResult
    from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner

CLOUD_BASE_IMAGE = "debian:bookworm-slim"
JOB_ERROR = "__job_error__"
#: What a cloud sandbox's agent needs from the host: the provider key (no gateway can be reached) and the cloud's credentials.
CLOUD_ENV_PREFIXES = ("ANTHROPIC_", "OPENAI_", "GEMINI_", "GOOGLE_", "DAYTONA_", "MODAL_", "E2B_", "RUNLOOP_")
JOB_OVERHEAD_S = 900.0
#: Agents whose trial image has the token-claiming wrapper (tasks.CLAUDE_WRAPPER).
CLAIMING_AGENTS = ("claude-code",)  # on top of the agents' own time limits: image builds, compose, Harbor's start-up
HARBOR_ENV_PASS = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "DOCKER_HOST", "DOCKER_CONFIG", "XDG_RUNTIME_DIR", "TMPDIR",
                   "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE")


class HarborSandbox(Sandbox):  # and trial.RunsWholeTrials
    name = "harbor"

    def __init__(self, *, harbor: str, environment: str = "docker", concurrency: int = 2, retries: int = 1,
                 docker: DockerSandbox | None = None, shared_root: Path | None = None) -> None:
        self.harbor = harbor
        self.environment = environment
        self.concurrency = max(1, concurrency)
        self.retries = max(0, retries)
        self.docker = docker or DockerSandbox()
        self.shared_root = shared_root or Path(tempfile.gettempdir()) / f"skilleval-harbor-{self.docker.identity.run}"
        self._version: str | None = None
        self._problem: str | None = None
        self._checked = False
        self._image: str | None = None
        self._lock = threading.Lock()

    @property
    def local(self) -> bool:
        return self.environment in tasks.LOCAL_ENVIRONMENTS

    @property
    def isolated(self) -> bool:
        return True

    def describe(self) -> str:
        self.unavailable()  # learns Harbor's version
        where = ("no network but the gateway relay" if self.local else "the provider's network; the model called with the user's key")
        return f"harbor {self._version or '?'}: {self.environment} environment, one job per arm ({where})"

    def unavailable(self) -> str | None:
        with self._lock:
            if not self._checked:
                self._problem = self._check()
                self._checked = True
        return self._problem

    def _check(self) -> str | None:
        if shutil.which(self.harbor) is None:
            return f"harbor is not installed at {self.harbor} (make harbor: its own venv on Python >= 3.12; or --skilleval-harbor)"
        try:
            done = subprocess.run([self.harbor, "--version"], capture_output=True, text=True, timeout=120, env=_harbor_env())
        except (OSError, subprocess.SubprocessError) as exc:
            return f"harbor does not run: {exc}"
        if done.returncode != 0:
            return f"harbor --version failed: {(done.stderr or done.stdout)[-500:]}"
        self._version = (done.stdout.strip().split() or ["?"])[-1]
        if self.local:
            if self.environment == "docker":
                compose = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=60)
                if compose.returncode != 0:
                    return "Harbor's docker environment needs the Compose v2 plugin (`docker compose`): make harbor installs it"
            problem = self.docker.unavailable()
            if problem:
                return problem
        return None

    def run(self, spec: RunSpec) -> RunResult:
        """``command`` assertions over the workspace Harbor brought back: in a fresh container, no network."""
        return self.docker.run(spec)

    def close(self) -> None:
        self.docker.close()

    # -- whole trials ----------------------------------------------------------------------------------
    def run_trial(self, req: TrialRequest, runner: TrialRunner, started: float) -> TrialRecord:
        from pytest_skilleval.tier3.record import TrialRecord
        from pytest_skilleval.tier3.trial import TrialSkipped

        if not self.local and runner.gateway.config.mode == "scripted":
            raise TrialSkipped(f"scripted mode plays the model from this machine's gateway, which a {self.environment} sandbox cannot "
                               "reach: run cloud environments with --skilleval-gateway=proxy and a provider key (docs/sandboxes.md)")
        if self.local and req.agent.name not in CLAIMING_AGENTS:
            raise TrialSkipped(f"the harbor backend hands per-trial gateway tokens only to {', '.join(CLAIMING_AGENTS)} so far; "
                               f"run {req.agent.name} with --skilleval-sandbox=docker or local")
        batch = f"{req.skill_key}|{req.agent.name}|{req.arm}|{req.dataset_digest}|{runner.gateway.config.mode}"
        if req.execution > 1:  # a rerun (--reruns): its own small job, of this case only
            batch += f"|{req.case.id}|run{req.execution}"
        folder = self.shared_root / hashlib.sha256(batch.encode()).hexdigest()[:16]
        folder.mkdir(parents=True, exist_ok=True)
        records = folder / "records.json"
        with _locked(folder / ".lock"):
            if not records.exists():
                only = req.case.id if req.execution > 1 else None
                try:
                    data = self._run_batch(req, runner, folder, only)
                except Exception as exc:  # noqa: BLE001 - the job itself broke: every item of it is an infra ERROR, once
                    data = {JOB_ERROR: f"the Harbor job failed: {type(exc).__name__}: {exc}"[:2000]}
                tmp = records.with_suffix(".tmp")
                tmp.write_text(json.dumps(data), encoding="utf-8")
                os.replace(tmp, records)
        data = json.loads(records.read_text(encoding="utf-8"))
        key = _key(req.case.id, req.attempt)
        if JOB_ERROR in data:
            return _error_record(req, runner, self, str(data[JOB_ERROR]), "infra", started)
        if key not in data:
            return _error_record(req, runner, self, f"the Harbor job of this arm has no trial for {key}", "harness", started)
        record = TrialRecord.model_validate(data[key])
        return record.model_copy(update={"nodeid": req.nodeid, "execution": req.execution})

    def _run_batch(self, req: TrialRequest, runner: TrialRunner, folder: Path, only: str | None) -> dict[str, Any]:
        from pytest_skilleval.gateway import Script
        from pytest_skilleval.tier3.cases import load_cases
        from pytest_skilleval.tier3.sandboxes.harbor.results import read_trials
        from pytest_skilleval.tier3.staging import WITH_SKILL, WITHOUT_SKILL, stage_trial

        started = time.perf_counter()
        scripted = runner.gateway.config.mode == "scripted"
        cases = [c for c in load_cases(req.skill) if (only is None or c.id == only) and (not scripted or c.script_for(req.agent.name))]
        if not cases:
            return {}
        # Locally: the trial image with the token-claiming wrapper. A cloud pulls --skilleval-image (Harbor installs the CLI).
        image = self._harbor_image() if self.local else (self.docker.user_image or CLOUD_BASE_IMAGE)
        task_root, jobs = folder / "tasks", folder / "jobs"
        skill_dir = None
        if req.arm == WITH_SKILL:  # the skill as staging copies it (safefs, no eval folders), for Harbor to install
            skill_dir = stage_trial(folder / "skill-stage", req.skill, cases[0], req.agent, WITH_SKILL).skill_dir
        specs: dict[str, tasks.TaskSpec] = {}
        for case in cases:
            stage = stage_trial(folder / "stage" / tasks.slug(case.id), req.skill, case, req.agent, WITHOUT_SKILL)
            files = {p.relative_to(stage.workspace).as_posix(): p.read_bytes() for p in stage.workspace.rglob("*") if p.is_file()}
            spec = tasks.TaskSpec(case, task_root / tasks.slug(case.id), files)
            tasks.write_task(spec, image, agent_timeout_s=runner.settings.timeout_s, cpus=self.docker.limits.cpus,
                             memory_mb=_megabytes(self.docker.limits.memory))
            specs[spec.folder.name] = spec
        gateway = runner.gateway
        port = int(gateway.url.rsplit(":", 1)[1])
        placeholders = {"skill_dir": f"{tasks.CLAUDE_CONFIG_DIR}/skills/{req.skill.name}", "skill_name": req.skill.name,
                        "workspace": tasks.WORKSPACE, "home": "/root"}
        opened: dict[tuple[str, int], Trial] = {}  # (task, claim number) -> the gateway trial its container got

        def issue(task: str, number: int) -> str | None:
            spec = specs.get(task)
            if spec is None:
                return None
            case_script = spec.case.script_for(req.agent.name)
            script = Script.from_data(case_script.render(placeholders)) if case_script else None
            label = f"{req.skill_key}::tier3::{spec.case.id}[{req.agent.name}-{req.arm}-a{req.attempt if only else number}]"
            trial = gateway.open_trial(label if req.execution == 1 else f"{label}#run{req.execution}", script=script,
                                       placeholders={"<WORKSPACE>": tasks.WORKSPACE, "<HOME>": "/root"})
            opened[(task, number)] = trial
            return trial.token.secret

        attempts = runner.settings.attempts if only is None else 1
        bridge = UnixBridge(("127.0.0.1", port))
        os.chmod(bridge.folder, 0o755)
        claims = ClaimServer(bridge.folder / tasks.CLAIMS_SOCKET, issue)
        try:
            overlay_file = None
            if self.local:
                overlay_file = folder / "gateway-overlay.json"  # compose reads JSON as YAML
                overlay_file.write_text(json.dumps(tasks.overlay(bridge.folder, port, bridge.path.name)))
            model = runner.settings.models.get(req.agent.name) or req.agent.default_model
            config = tasks.job_config(name=f"{tasks.slug(req.skill.name)}-{req.arm}", jobs_dir=jobs, tasks=[s.folder for s in specs.values()],
                                      agent=req.agent.name, model=model if "/" in model else f"anthropic/{model}",
                                      environment=self.environment, attempts=attempts, concurrency=self.concurrency, retries=self.retries,
                                      skill_dir=skill_dir, base_url=gateway.url if self.local else None, overlay_file=overlay_file,
                                      agent_env={"ANTHROPIC_API_KEY": "sk-skilleval-claimed-in-the-container"} if self.local else None)
            config["skip_credential_checks"] = True
            (folder / "job.json").write_text(json.dumps(config, indent=2))
            budget = runner.settings.timeout_s * (len(specs) * attempts / self.concurrency + 1) + JOB_OVERHEAD_S
            done = subprocess.run([self.harbor, "run", "-c", str(folder / "job.json"), "-y", "-q"], capture_output=True, text=True,
                                  timeout=budget, env=_harbor_env(cloud=not self.local), cwd=folder)
            (folder / "harbor.log").write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
        finally:
            claims.close()
            for trial in opened.values():
                gateway.close_trial(trial)
            bridge.close()
        job_dirs = [d for d in jobs.iterdir() if d.is_dir()] if jobs.is_dir() else []
        harbor_trials = read_trials(job_dirs[0]) if job_dirs else []
        job_note = f"harbor exited {done.returncode}: {done.stderr.strip()[-400:]}" if done.returncode else None
        out: dict[str, Any] = {}
        for name, spec in specs.items():
            # Harbor's final trials of this task; completed ones first (a retried trial may leave its failed folder).
            mine = sorted(((d, r) for d, r in harbor_trials if d.name.startswith(name + "__")),
                          key=lambda t: (t[1].exception_info is not None, str(t[1].started_at or ""), t[0].name))
            for index, attempt in enumerate([req.attempt] if only else range(1, attempts + 1)):
                harbor = mine[index] if index < len(mine) else None
                claim = _read_claim(harbor[0]) if harbor else None
                trial = opened.get(claim) if claim else None
                if trial is None and not self.local and harbor is not None:  # no gateway in the loop: an empty trial to record against
                    trial = opened[(name, -index - 1)] = gateway.open_trial(f"{req.skill_key}::tier3::{spec.case.id}[{req.agent.name}-"
                                                                             f"{req.arm}-a{attempt}]", mode="proxy")
                sub = replace(req, case=spec.case, attempt=attempt, name=trial.name if trial else req.name, nodeid=req.nodeid)
                record = self._record(sub, runner, trial, harbor, folder / "trials" / f"{name}-a{attempt}", skill_dir, started, job_note,
                                      spec.folder / "environment" / "workspace")
                out[_key(spec.case.id, attempt)] = record.model_dump(mode="json")
        for (_, number), trial in opened.items():
            if number < 0:
                gateway.close_trial(trial)
        return out

    def _record(self, req: TrialRequest, runner: TrialRunner, trial: Trial | None, harbor: tuple[Path, TrialResult] | None, root: Path,
                skill_dir: Path | None, started: float, job_note: str | None, staged: Path) -> TrialRecord:
        from pytest_skilleval.tier3.agents.base import AgentContext
        from pytest_skilleval.tier3.outcome import snapshot, workspace_changed
        from pytest_skilleval.tier3.staging import WITH_SKILL, Stage

        if harbor is None:
            return _error_record(req, runner, self, "Harbor ran no trial for this attempt" + (f" ({job_note})" if job_note else ""),
                                 "infra", started)
        trial_dir, result = harbor
        if result.exception_info is not None:  # Harbor's own failure: no evidence about the skill, never a reward of 0
            info = result.exception_info
            record = _error_record(req, runner, self, f"Harbor: {info.exception_type}: {info.exception_message[:500]}", "infra", started)
            record.artifacts["harbor_trial"] = str(trial_dir)
            return record
        if trial is None:
            record = _error_record(req, runner, self, "the agent never claimed its gateway token (the claude wrapper did not run)",
                                   "harness", started)
            record.artifacts["harbor_trial"] = str(trial_dir)
            return record
        stage = Stage(root=root, workspace=root / "workspace", home=root / "home", tmp=root / "tmp", out=root / "out",
                      skill_dir=skill_dir or root / "no-skill", installed=req.arm == WITH_SKILL)
        for folder in (stage.home, stage.tmp, stage.out):
            folder.mkdir(parents=True, exist_ok=True)
        saved = next((p for p in (trial_dir / "artifacts" / "workspace", trial_dir / "artifacts" / "logs" / "artifacts" / "workspace")
                      if p.is_dir()), None)
        if saved is not None:
            shutil.copytree(saved, stage.workspace, symlinks=True)
        else:
            stage.workspace.mkdir(parents=True, exist_ok=True)
        stream = trial_dir / "agent" / f"{tasks.HARBOR_AGENTS.get(req.agent.name, req.agent.name)}.txt"
        events = stream.read_bytes() if stream.is_file() else b""
        (stage.out / "events.jsonl").write_bytes(events)
        (stage.out / "stderr.txt").write_bytes(b"")
        agent_s = result.agent_execution.seconds if result.agent_execution else None
        run = RunResult(0 if events else None, events.decode("utf-8", "replace"), "", False, agent_s or 0.0)
        ctx = AgentContext(home=stage.home, workspace=stage.workspace, tmp=stage.tmp, gateway_url=runner.gateway.url,
                           model=runner.settings.models.get(req.agent.name), max_turns=runner.settings.max_turns)
        record = runner.record(req, stage, trial, ctx, run, started, workspace_changed(snapshot(staged), stage.workspace))
        if not trial.entries and result.agent_result is not None:  # a cloud trial: the provider's usage as Harbor reports it
            record.tokens_in = result.agent_result.n_input_tokens or 0
            record.tokens_out = result.agent_result.n_output_tokens or 0
            record.cost_usd = result.agent_result.cost_usd or 0.0
            record.notes.append("tokens and cost as Harbor reports them (the model was called directly, not through the gateway)")
        phases = ", ".join(f"{k} {v:.1f} s" for k, v in result.phase_seconds().items())
        record.notes.append(f"Harbor trial {result.trial_name}: {phases}" + (f"; whole trial {result.seconds:.1f} s" if result.seconds else ""))
        if saved is None:
            record.notes.append("the verifier saved no workspace")
        record.artifacts["harbor_trial"] = str(trial_dir)
        record.total_seconds = result.seconds or record.total_seconds
        return record

    def _harbor_image(self) -> str:
        """The trial image plus the claude wrapper that claims this trial's token (tasks.CLAUDE_WRAPPER)."""
        with self._lock:
            if self._image is None:
                problem = self.docker.unavailable()
                if problem:
                    raise RuntimeError(problem)
                base = self.docker.image_for(None)
                self._image = images.layer(self.docker.client(), base, tasks.HARBOR_IMAGE_DOCKERFILE.format(base=base),
                                           {"claim.py": (tasks.CLAIM_CLIENT.encode(), 0o644), "claude": (tasks.CLAUDE_WRAPPER.encode(), 0o755)},
                                           "skilleval/harbor-agent", self.docker.build_log)
            return self._image


def _read_claim(trial_dir: Path) -> tuple[str, int] | None:
    """(task, claim number) of the trial's gateway token (tasks.CLAIM_CLIENT wrote it), or None if its agent never started."""
    try:
        data = json.loads((trial_dir / "agent" / tasks.CLAIM_FILE).read_text())
        return str(data["task"]), int(data["number"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def _key(case_id: str, attempt: int) -> str:
    return f"{case_id}#a{attempt}"


def _megabytes(memory: str) -> int:
    units = {"k": 1 / 1024, "m": 1, "g": 1024}
    text = memory.strip().lower().rstrip("b")
    return int(float(text[:-1]) * units[text[-1]]) if text and text[-1] in units else int(int(text) / 2**20)


def _harbor_env(cloud: bool = False) -> dict[str, str]:
    """Harbor's environment: what it needs to run. Locally none of the host's keys (the agents get scoped
    tokens); for a cloud environment the provider's and the cloud's credentials (docs/sandboxes.md)."""
    env = {k: v for k, v in os.environ.items() if k in HARBOR_ENV_PASS or (cloud and k.startswith(CLOUD_ENV_PREFIXES))}
    env["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"  # else LiteLLM fetches its price list from GitHub at start-up
    return env


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _error_record(req: TrialRequest, runner: TrialRunner, sandbox: HarborSandbox, reason: str, cause: str, started: float) -> TrialRecord:
    from pytest_skilleval.tier3.grading import infrastructure_error
    from pytest_skilleval.tier3.record import TrialRecord

    return TrialRecord(nodeid=req.nodeid, skill=req.skill_key, skill_name=req.skill.name, skill_path=str(req.skill.root), case_id=req.case.id,
                       label=req.case.label.value, agent=req.agent.name, arm=req.arm,  # type: ignore[arg-type]
                       attempt=req.attempt, execution=req.execution, dataset_digest=req.dataset_digest, mode=runner.gateway.config.mode,
                       sandbox=sandbox.describe(), isolated=sandbox.isolated, status="ERROR", reason=reason, error_cause=cause,  # type: ignore[arg-type]
                       grade=infrastructure_error(reason, cause), total_seconds=round(time.perf_counter() - started, 4))  # type: ignore[arg-type]

