# caseboard: `make run` plays the demo incident on the embedded ledger; `make test` runs the whole suite.
# Every target sets up the virtual environment it needs on first use.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.DEFAULT_GOAL := help
.PHONY: help install run demo serve live test test-unit lint typecheck check bench schemas clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-10s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

install: $(STAMP) ## create .venv with caseboard and its development tools

run: $(STAMP) ## tell the incident-042 story on a fresh embedded ledger; on a terminal, then serve it over HTTP
	rm -rf .caseboard/demo
	CASEBOARD_DATABASE_URL=sqlite:///.caseboard/demo/ledger.db CASEBOARD_LOG_LEVEL=warning $(BIN)/caseboard demo
	@if [ -t 0 ] && [ -t 1 ] && [ "$${CASEBOARD_DEMO_SERVE:-1}" != 0 ]; then \
	  echo; echo "Serving the same incident over HTTP (Ctrl-C stops; CASEBOARD_DEMO_SERVE=0 skips this step):"; \
	  rm -rf .caseboard/serve-demo; CASEBOARD_LOG_LEVEL=warning $(BIN)/caseboard serve --demo; fi

demo: run ## same as run

serve: $(STAMP) ## serve the HTTP API on 127.0.0.1:8000 (PORT=...) with incident-042 loaded and demo keys printed
	rm -rf .caseboard/serve-demo
	CASEBOARD_LOG_LEVEL=warning $(BIN)/caseboard serve --demo $(if $(PORT),--port $(PORT))

live: $(STAMP) ## the live loop on the embedded ledger: dispatcher, controller and scripted workers
	rm -rf .caseboard/live
	CASEBOARD_DATABASE_URL=sqlite:///.caseboard/live/ledger.db CASEBOARD_LOG_LEVEL=warning $(BIN)/caseboard demo --live

pilot: $(STAMP) ## the pilot loop on this machine: an alert fires, checks run, a person gets the handoff (needs prometheus)
	rm -rf .caseboard/pilot
	CASEBOARD_LOG_LEVEL=warning $(BIN)/caseboard pilot

.PHONY: pilot

test: $(STAMP) ## the whole suite (unit, golden, integration, e2e and the docs' blocks, against PostgreSQL and Redis)
	$(BIN)/pytest -q -n auto --maxprocesses 4

test-unit: $(STAMP) ## the fast, pure tests only
	$(BIN)/pytest -q tests/unit tests/golden

lint: $(STAMP) ## ruff (lint and format check)
	$(BIN)/ruff check caseboard tests scripts benchmarks
	$(BIN)/ruff format --check caseboard tests scripts benchmarks

typecheck: $(STAMP) ## mypy --strict with the pydantic plugin
	$(BIN)/mypy

check: lint typecheck test ## lint, typecheck and test

bench: $(STAMP) ## benchmarks on PostgreSQL; the last line is one JSON object of ratios
	$(BIN)/python scripts/bench.py

soak: $(STAMP) ## 30 min of mixed load through database crashes, broker restarts and server kills (not in test; MINUTES=3)
	$(BIN)/python scripts/soak.py --minutes $${MINUTES:-30}
	CASEBOARD_MACHINE_EXAMPLES=$${MACHINE_EXAMPLES:-1000} $(BIN)/pytest -q -p no:logging tests/integration/test_coordinator_machine.py

.PHONY: soak

mutants: $(STAMP) ## mutation testing (mutmut) of the coordinator, the domain and the reducers; the score per module
	$(BIN)/mutmut run --max-children 2
	$(BIN)/python scripts/mutation_score.py

mutants-sample: $(STAMP) ## a sampled mutation run: SAMPLE mutants of each module at random (15; SEED=1), the score per module with its 95 % interval
	$(BIN)/mutmut run --max-children 2 'caseboard.domain.workspace_key.*'  # generates every module's mutants
	$(BIN)/python scripts/mutation_score.py --sample $${SAMPLE:-15} --seed $${SEED:-1} > mutants/sample.txt
	$(BIN)/mutmut run --max-children 2 $$(cat mutants/sample.txt)
	$(BIN)/python scripts/mutation_score.py --names mutants/sample.txt

.PHONY: mutants mutants-sample

schemas: $(STAMP) ## regenerate the JSON Schemas in schemas/
	$(BIN)/python -m caseboard.schemas schemas

clean: ## remove the virtual environment and local ledgers
	rm -rf $(VENV) .caseboard build *.egg-info .mypy_cache .ruff_cache .hypothesis mutants
