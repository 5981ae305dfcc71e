# The README's set-up commands: `make demo` and `make test` (each installs everything first).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast lint typecheck bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --upgrade pip >/dev/null
	$(PY) -m pip install -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

demo: install
	$(VENV)/bin/lsmlake --warehouse ./warehouse demo

test: install
	$(PY) -m pytest -n 2 -q

test-fast: install
	$(PY) -m pytest -n 2 -q -m "not slow and not interop"

lint: install
	$(VENV)/bin/ruff check src tests bench
	$(VENV)/bin/mypy

bench: install
	$(PY) -m pip install -q -e '.[dev,bench]'
	$(PY) -m bench

clean:
	rm -rf $(VENV) .cache warehouse
