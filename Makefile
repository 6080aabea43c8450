# Two commands on a fresh machine: `make eval` and `make test`. Both create .venv first.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: eval test venv clean bench lint

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,scanners]'
	touch $(STAMP)

venv: $(STAMP)

## eval: run the main job (Tier 1) on example_skills/ and write skilleval-report/
eval: $(STAMP)
	$(BIN)/pytest --skills example_skills -p no:cacheprovider -n 2 --junitxml=skilleval-report/junit.xml -o addopts=""
	@echo "reports: skilleval-report/ (BENCHMARK.md per skill, results.json, junit.xml)"

## test: the whole test suite
test: $(STAMP)
	$(BIN)/pytest -n 2

bench: $(STAMP)
	$(BIN)/python benchmarks/tier1_corpus.py

lint: $(STAMP)
	$(BIN)/ruff check pytest_skilleval tests benchmarks

clean:
	rm -rf $(VENV) skilleval-report .pytest_cache build *.egg-info
