# wanka — `make run` and `make test` are all a fresh machine needs; both build .venv first.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_WORKERS ?= 2
PYTEST_ARGS ?=
# Apache Superset, for `make bi-check` only: its own environment, its own pins
BI_VENV := .venv-bi
BI_STAMP := $(BI_VENV)/.installed
BI_REQUIREMENTS := tests/bi/requirements-superset.txt
# llama.cpp's OpenAI-compatible server and a small GGUF, for `make ai-check` only
AI_VENV := .venv-ai
AI_STAMP := $(AI_VENV)/.installed
AI_REQUIREMENTS := tests/ai/requirements-llama.txt

.DEFAULT_GOAL := help
.PHONY: help install run test test-fast bench lint fmt check clean bi-check ai-check

help: ## list the targets
	@awk 'BEGIN {FS = ":.*## "} /^[a-z-]+:.*## / {printf "  make %-9s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "wanka needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	@touch $(STAMP)

install: $(STAMP) ## create .venv and install wanka (editable) with its test tools

run: $(STAMP) ## build the demo warehouse (a simulated 10,000-GPU cluster) and serve it
	$(BIN)/wanka demo

test: $(STAMP) ## run the test suite (what CI runs)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -q $(PYTEST_ARGS)

test-fast: $(STAMP) ## the tests not marked slow, for the edit loop (make test runs them all)
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) -q -m "not slow" $(PYTEST_ARGS)

bench: $(STAMP) ## run every bench/bench_*.py and write their figures to bench/RESULTS.md
	$(BIN)/python bench/run_all.py

lint: $(STAMP) ## ruff lint
	$(BIN)/ruff check warehouse udfs service tests bench

fmt: $(STAMP) ## ruff format + fix imports
	$(BIN)/ruff format warehouse udfs service tests bench
	$(BIN)/ruff check --fix --select I warehouse udfs service tests bench

check: lint ## lint, format check and mypy
	$(BIN)/ruff format --check warehouse udfs service tests bench
	$(BIN)/mypy

$(BI_STAMP): $(BI_REQUIREMENTS)
	$(PYTHON) -m venv $(BI_VENV)
	$(BI_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(BI_VENV)/bin/python -m pip install --quiet -r $(BI_REQUIREMENTS)
	@touch $(BI_STAMP)

bi-check: $(STAMP) $(BI_STAMP) ## Apache Superset (in .venv-bi) against `wanka serve` on the demo; not in make test
	$(BI_VENV)/bin/python -m tests.bi.superset_check --wanka $(BIN)/wanka $(if $(WANKA_BI_DEMO),--demo $(WANKA_BI_DEMO))

$(AI_STAMP): $(AI_REQUIREMENTS)
	$(PYTHON) -m venv $(AI_VENV)
	$(AI_VENV)/bin/python -m pip install --quiet --upgrade pip
	$(AI_VENV)/bin/python -m pip install --quiet -r $(AI_REQUIREMENTS)
	@touch $(AI_STAMP)

ai-check: $(STAMP) $(AI_STAMP) ## AI functions against llama.cpp's server and a small GGUF (builds .venv-ai: 5-15 min); not in make test
	$(BIN)/python -m tests.ai.llama_check --server-python $(AI_VENV)/bin/python

clean: ## remove the virtual environments and caches
	rm -rf $(VENV) $(BI_VENV) $(AI_VENV) .pytest_cache .mypy_cache .ruff_cache
