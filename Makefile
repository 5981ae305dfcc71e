# The README's set-up commands. `make demo` installs lsmlake with its runtime dependencies only;
# `make test` (and lint, bench) add the development tools (pytest, hypothesis, moto, Ray, matplotlib).
# Both use one venv; a stamp per install level notes what it holds (redone when pyproject.toml changes).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
BASE_STAMP := $(VENV)/.installed-base
DEV_STAMP := $(VENV)/.installed-dev
DEV_EXTRAS := dev,png

.PHONY: install install-base demo test test-fast lint typecheck docs bench clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip >/dev/null

$(BASE_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e .
	touch $@

# The development set includes the base install: it renews that stamp too.
$(DEV_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install -e '.[$(DEV_EXTRAS)]'
	touch $@ $(BASE_STAMP)

install-base: $(BASE_STAMP)

install: $(DEV_STAMP)

demo: $(BASE_STAMP)
	$(VENV)/bin/lsmlake --warehouse ./warehouse demo

test: $(DEV_STAMP)
	$(PY) -m pytest -n 2 -q

test-fast: $(DEV_STAMP)
	$(PY) -m pytest -n 2 -q -m "not slow and not interop and not java"

# ruff, mypy strict, the layer contracts of pyproject.toml (import-linter) and no import cycles
lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check src tests bench tools
	$(VENV)/bin/mypy
	$(VENV)/bin/mypy tools
	$(VENV)/bin/lint-imports
	$(PY) tools/import_graph.py src/lsmlake
	$(VENV)/bin/mkdocs build --strict --quiet

# The documentation (docs/, mkdocs.yml) into .cache/site; a warning fails it (make lint builds it too)
docs: $(DEV_STAMP)
	$(VENV)/bin/mkdocs build --strict

typecheck: $(DEV_STAMP)
	$(VENV)/bin/mypy

bench: $(DEV_STAMP)
	$(PY) -m pip install -q -e '.[$(DEV_EXTRAS),bench]'
	$(PY) -m bench

clean:
	rm -rf $(VENV) .cache warehouse
