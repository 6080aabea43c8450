"""Trial images for the ``docker`` sandbox, built on this machine without any registry.

Many CI runners (and this project's own machine) cannot pull from Docker Hub, so nothing here
pulls. Two layers, each tagged by the hash of what went into it and reused while that is unchanged:

``skilleval/base:<hash>``
    a Debian root filesystem from ``debootstrap --variant=minbase`` (plus python3 for the
    gateway relay and ripgrep for the CLIs that search), brought in with ``docker import``. Or the
    user's own image (``--skilleval-image``), or a skill's ``evals/environment/Dockerfile``.
``skilleval/agent:<hash>``
    ``FROM`` that base: the host's ``node``, the npm prefix holding the agent CLIs
    (``.cache/agents``) at ``/opt/skilleval/agents``, and ``relay.py``. The hash covers the base's
    image id, the Dockerfile, node's bytes, the relay's bytes and npm's lockfile of the installed
    packages (its ``integrity`` fields are content hashes of every package).

Builds are serialised across processes (xdist workers) with a lock file, so a session builds each
image once; the second worker finds the tag.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_skilleval import safefs

RELAY = Path(__file__).with_name("relay.py")
IN_IMAGE_AGENTS = "/opt/skilleval/agents"  # the npm prefix inside the image
IN_IMAGE_RELAY = "/opt/skilleval/relay.py"
IMAGE_PATH = f"{IN_IMAGE_AGENTS}/node_modules/.bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
BASE_SUITE = "bookworm"
BASE_PACKAGES = ("python3", "ripgrep")  # the relay and check commands run on python3; OpenCode needs rg
RECIPE_VERSION = "1"
DEBOOTSTRAP_TIMEOUT_S = 900
MAX_SKILL_DOCKERFILE = 20 * 1024
LABEL = "skilleval.image"
BASE_ALIAS = "skilleval/base:latest"
AGENT_ALIAS = "skilleval/agent:latest"


class ImageError(Exception):
    """The trial image cannot be built here (no debootstrap, not root, a build failed)."""


def _sha(*parts: bytes | str) -> str:
    digest = hashlib.sha256()
    for part in parts:
        data = part.encode() if isinstance(part, str) else part
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


@contextlib.contextmanager
def build_lock() -> Iterator[None]:
    """One builder at a time on this machine: the engine's tags are one namespace for every process."""
    path = Path(tempfile.gettempdir()) / f"skilleval-docker-build-{os.getuid()}.lock"
    with open(path, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _tag_exists(client: Any, tag: str) -> bool:
    import docker.errors

    try:
        client.images.get(tag)
        return True
    except docker.errors.ImageNotFound:
        return False


def debian_mirror() -> str:
    """The Debian mirror apt already uses here (deb822 or one-line sources), else deb.debian.org."""
    deb822 = Path("/etc/apt/sources.list.d/debian.sources")
    if deb822.is_file():
        for line in deb822.read_text(errors="replace").splitlines():
            if line.startswith("URIs:") and "security" not in line:
                return line.split()[1]
    legacy = Path("/etc/apt/sources.list")
    if legacy.is_file():
        for line in legacy.read_text(errors="replace").splitlines():
            words = line.split()
            if len(words) >= 3 and words[0] == "deb" and "security" not in words[1]:
                return words[2] if words[1].startswith("[") else words[1]
    return "http://deb.debian.org/debian"


def base_image(client: Any, log: list[str]) -> str:
    """``skilleval/base:<hash>`` — debootstrap minbase imported into the engine, built once per recipe."""
    mirror = debian_mirror()
    key = _sha(RECIPE_VERSION, BASE_SUITE, "minbase", ",".join(BASE_PACKAGES), mirror, os.uname().machine)[:16]
    tag = f"skilleval/base:{BASE_SUITE}-{key}"
    if not _tag_exists(client, tag):
        with build_lock():
            if not _tag_exists(client, tag):
                _debootstrap_import(client, tag, mirror, log)
    client.images.get(tag).tag(*BASE_ALIAS.split(":"))  # what a skill's evals/environment/Dockerfile names in FROM
    return tag


def _debootstrap_import(client: Any, tag: str, mirror: str, log: list[str]) -> None:
    debootstrap = shutil.which("debootstrap")
    if debootstrap is None or os.geteuid() != 0:
        raise ImageError("no trial base image and none can be built here: building it needs root and debootstrap "
                         "(apt-get install debootstrap), or pass --skilleval-image IMAGE (an image with python3 and glibc)")
    with tempfile.TemporaryDirectory(prefix="skilleval-rootfs-") as tmp:
        rootfs = Path(tmp) / "rootfs"
        done = subprocess.run([debootstrap, "--variant=minbase", f"--include={','.join(BASE_PACKAGES)}", BASE_SUITE, str(rootfs), mirror],
                              capture_output=True, text=True, timeout=DEBOOTSTRAP_TIMEOUT_S)
        if done.returncode != 0:
            raise ImageError(f"debootstrap failed ({done.returncode}): {(done.stderr or done.stdout)[-1500:]}")
        for junk in ("var/cache/apt/archives", "var/lib/apt/lists"):
            for entry in (rootfs / junk).glob("*"):
                if entry.is_file():
                    entry.unlink()
        archive = Path(tmp) / "rootfs.tar"
        with tarfile.open(archive, "w") as tar:
            for entry in sorted(rootfs.iterdir()):
                tar.add(entry, arcname=entry.name)
        repo, _, version = tag.partition(":")
        client.api.import_image_from_file(str(archive), repository=repo, tag=version,
                                          changes=["CMD [\"/bin/bash\"]", "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                                   f"LABEL {LABEL}=base"])
    log.append(f"built {tag} with debootstrap from {mirror}")


def _file_sha(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _agents_fingerprint(agents_dir: Path | None) -> str:
    if agents_dir is None or not (agents_dir / "node_modules").is_dir():
        return "none"
    lock = agents_dir / "node_modules" / ".package-lock.json"  # npm's record of what is installed, with integrity hashes
    if lock.is_file():
        return _sha(lock.read_bytes())
    listing = sorted(f"{p.relative_to(agents_dir)}:{p.stat().st_size}" for p in (agents_dir / "node_modules").rglob("*") if p.is_file())
    return _sha("\n".join(listing))


def agent_image(client: Any, base: str, agents_dir: Path | None, log: list[str]) -> str:
    """``skilleval/agent:<hash>`` — node, the agent CLIs and the relay on top of ``base``."""
    node = shutil.which("node")
    node_path = Path(os.path.realpath(node)) if node else None
    dockerfile = f"FROM {base}\n"
    if node_path:
        dockerfile += "COPY node /usr/local/bin/node\n"
    has_agents = agents_dir is not None and (agents_dir / "node_modules").is_dir()
    if has_agents:
        dockerfile += f"COPY agents {IN_IMAGE_AGENTS}\n"
    dockerfile += f"COPY relay.py {IN_IMAGE_RELAY}\nENV PATH={IMAGE_PATH}\nLABEL {LABEL}=agent\n"
    base_id = client.images.get(base).id
    body = dockerfile.split("\n", 1)[1]  # the base counts by its image id, not by the name it was given
    key = _sha(RECIPE_VERSION, base_id, body, _file_sha(node_path) if node_path else "no-node", RELAY.read_bytes(),
               _agents_fingerprint(agents_dir))[:16]
    tag = f"skilleval/agent:{key}"
    if not _tag_exists(client, tag):
        with build_lock():
            if not _tag_exists(client, tag):
                _build_agent_layer(client, tag, dockerfile, node_path, agents_dir if has_agents else None, log)
    if base.startswith("skilleval/base:"):
        client.images.get(tag).tag(*AGENT_ALIAS.split(":"))  # a skill's Dockerfile may build FROM it (no second copy of the CLIs)
    return tag


def _build_agent_layer(client: Any, tag: str, dockerfile: str, node_path: Path | None, agents_dir: Path | None, log: list[str]) -> None:
    with tempfile.TemporaryFile(prefix="skilleval-context-") as context:
        with tarfile.open(fileobj=context, mode="w") as tar:
            _add_bytes(tar, "Dockerfile", dockerfile.encode())
            _add_bytes(tar, "relay.py", RELAY.read_bytes())
            if node_path:
                tar.add(node_path, arcname="node")
            if agents_dir is not None:
                tar.add(agents_dir / "node_modules", arcname="agents/node_modules")  # symlinks (.bin/*) stay links
        context.seek(0)
        _build(client, context, tag)
    log.append(f"built {tag}: {dockerfile.splitlines()[0]}")


def is_agent_image(client: Any, tag: str) -> bool:
    """Whether ``tag`` already holds the agent layer (built FROM skilleval/agent:latest: the label is inherited)."""
    return bool((client.images.get(tag).labels or {}).get(LABEL) == "agent")


def skill_image(client: Any, skill_root: Path, env_rel: str, log: list[str]) -> str:
    """Build a skill's ``evals/environment/Dockerfile`` with only that folder as the context (read
    through safefs: no links, bounded sizes). At most 20 KB, and its first instruction is FROM:
    ``skilleval/agent:latest`` (the trial image: reused as is) or ``skilleval/base:latest`` or any
    local image with python3 and glibc (the agent layer is then added on top)."""
    limits = safefs.Limits(max_file_bytes=MAX_SKILL_DOCKERFILE)
    try:
        text = safefs.read_bytes(skill_root, f"{env_rel}/Dockerfile", limits).decode("utf-8")
    except (safefs.ReadError, UnicodeDecodeError) as exc:
        raise ImageError(f"{env_rel}/Dockerfile cannot be read safely: {exc}") from None
    first = next((ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")), "")
    if not first.upper().startswith("FROM "):
        raise ImageError(f"{env_rel}/Dockerfile: the first instruction must be FROM (found {first[:60]!r})")
    files: list[tuple[str, bytes]] = []
    for entry in sorted((skill_root / env_rel).rglob("*")):
        rel = entry.relative_to(skill_root).as_posix()
        if entry.is_file() and not entry.is_symlink():
            try:
                files.append((entry.relative_to(skill_root / env_rel).as_posix(), safefs.read_bytes(skill_root, rel, safefs.Limits())))
            except safefs.ReadError as exc:
                raise ImageError(f"{rel} cannot be read safely: {exc}") from None
    tag = "skilleval/skill-env:" + _sha(RECIPE_VERSION, *(p + "\0" for p, _ in files), *(d for _, d in files))[:16]
    if _tag_exists(client, tag):
        return tag
    with build_lock():
        if not _tag_exists(client, tag):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as tar:
                for rel, data in files:  # scripts keep an exec bit, as staging does
                    _add_bytes(tar, rel, data, 0o755 if data.startswith(b"#!") else 0o644)
            buffer.seek(0)
            _build(client, buffer, tag)
            log.append(f"built {tag} from {skill_root.name}/{env_rel}/Dockerfile")
    return tag


def layer(client: Any, base: str, dockerfile: str, files: dict[str, tuple[bytes, int]], repo: str, log: list[str]) -> str:
    """A small image ``repo:<hash>`` on top of ``base``: ``dockerfile`` with ``files`` (name -> (bytes, mode)) as its context."""
    key = _sha(RECIPE_VERSION, client.images.get(base).id, dockerfile, *(f"{n}:{m:o}" for n, (_, m) in sorted(files.items())),
               *(d for _, (d, _) in sorted(files.items())))[:16]
    tag = f"{repo}:{key}"
    if _tag_exists(client, tag):
        return tag
    with build_lock():
        if not _tag_exists(client, tag):
            buffer = io.BytesIO()
            with tarfile.open(fileobj=buffer, mode="w") as tar:
                _add_bytes(tar, "Dockerfile", dockerfile.encode())
                for name, (data, mode) in sorted(files.items()):
                    _add_bytes(tar, name, data, mode)
            buffer.seek(0)
            _build(client, buffer, tag)
            log.append(f"built {tag} FROM {base}")
    return tag


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int = 0o644) -> None:
    info = tarfile.TarInfo(name)
    info.size, info.mode = len(data), mode
    tar.addfile(info, io.BytesIO(data))


def _build(client: Any, context: Any, tag: str) -> None:
    import docker.errors

    try:
        client.images.build(fileobj=context, custom_context=True, tag=tag, rm=True, forcerm=True, pull=False)
    except docker.errors.BuildError as exc:
        tail = "".join(str(chunk.get("stream") or chunk.get("error") or "") for chunk in list(exc.build_log)[-20:])
        raise ImageError(f"building {tag} failed: {exc.msg}\n{tail[-1500:]}") from None
    except docker.errors.APIError as exc:
        raise ImageError(f"building {tag} failed: {exc}") from None
