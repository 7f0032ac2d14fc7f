# The two commands a newcomer runs: `make demo` and `make test`.
# Both create .venv and install pinned versions (constraints.txt) on first use.
VENV    := .venv
PY      := $(VENV)/bin/python
STAMP   := $(VENV)/.installed-stamp
# The real agent CLIs the tests drive, at the versions package-lock.json pins.
CLIS    := node_modules/.installed-stamp
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: install clis demo test lint typecheck pytest bench bench-dispatch bench-delivery bench-lanes constraints clean

$(STAMP): pyproject.toml constraints.txt
	python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

$(CLIS): package.json package-lock.json
	npm ci --no-audit --no-fund --loglevel=error
	touch $(CLIS)

clis: $(CLIS)

demo: install
	$(VENV)/bin/canopy demo

test: install lint typecheck pytest

lint: install
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/lint-imports

typecheck: install
	$(VENV)/bin/mypy

pytest: install clis
	$(VENV)/bin/pytest -q

bench: install
	$(PY) -m bench.cli_latency

bench-dispatch: install
	$(PY) -m bench.dispatch_overhead

bench-delivery: install
	$(PY) -m bench.delivery_overhead

bench-lanes: install
	$(PY) -m bench.lanes

# Re-pin after changing dependencies in pyproject.toml.
constraints: install
	$(PY) -m pip freeze --exclude-editable --exclude canopy > constraints.txt

clean:
	rm -rf $(VENV) node_modules .pytest_cache .mypy_cache .ruff_cache .import_linter_cache .demo
