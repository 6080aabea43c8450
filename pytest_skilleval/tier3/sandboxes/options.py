"""Options of the container backends (``docker``, ``harbor``); read with ``config.value`` like every other."""

from __future__ import annotations

from pytest_skilleval.config import Option

DOCKER_OPTIONS = (
    Option("skilleval_image", "--skilleval-image", "SKILLEVAL_IMAGE", None,
           "docker sandbox: base image for trials (needs python3 and glibc; the agent CLIs are layered on top). "
           "Default: a Debian minbase built here with debootstrap, no registry."),
    Option("skilleval_docker_memory", "--skilleval-docker-memory", "SKILLEVAL_DOCKER_MEMORY", "2g",
           "docker sandbox: memory limit per trial container (docker's syntax: 512m, 2g)."),
    Option("skilleval_docker_cpus", "--skilleval-docker-cpus", "SKILLEVAL_DOCKER_CPUS", 1.0,
           "docker sandbox: CPUs per trial container.", "float"),
    Option("skilleval_docker_pids", "--skilleval-docker-pids", "SKILLEVAL_DOCKER_PIDS", 512,
           "docker sandbox: process limit per trial container.", "int"),
)

HARBOR_OPTIONS = (
    Option("skilleval_harbor_env", "--skilleval-harbor-env", "SKILLEVAL_HARBOR_ENV", "docker",
           "harbor sandbox: Harbor's environment type (docker, podman, daytona, modal, e2b, runloop, ...)."),
    Option("skilleval_harbor_concurrency", "--skilleval-harbor-concurrency", "SKILLEVAL_HARBOR_CONCURRENCY", 2,
           "harbor sandbox: trials Harbor runs at once per job (its n_concurrent_trials).", "int"),
    Option("skilleval_harbor_retries", "--skilleval-harbor-retries", "SKILLEVAL_HARBOR_RETRIES", 1,
           "harbor sandbox: infrastructure retries per trial (Harbor's RetryConfig), kept apart from attempts.", "int"),
    Option("skilleval_harbor", "--skilleval-harbor", "SKILLEVAL_HARBOR", ".cache/harbor-venv/bin/harbor",
           "harbor sandbox: the harbor executable (its own Python >= 3.12 venv: make harbor), relative to rootdir; PATH after it."),
)

OPTIONS = DOCKER_OPTIONS + HARBOR_OPTIONS
