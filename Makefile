# Two commands for a fresh machine (Python >= 3.10 and Java 17):
#   make demo   build the example dbt project in integration/ on the embedded Spark
#   make test   run the static checks (ruff, mypy) and the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# `dbt --version` lists only adapters whose folder is inside site-packages/dbt/adapters (it globs
# that folder and ignores editable installs), so the install links the adapter's folder there.
ADAPTER_LINK = $(PY) -c "import os, dbt.adapters as a; d = os.path.join(a.__path__[0], 'qbeast'); \
	os.path.lexists(d) or os.symlink(os.path.abspath('dbt/adapters/qbeast'), d)"

.PHONY: demo test lint install bench bench-full clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml constraints.txt
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]"
	$(ADAPTER_LINK)
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) integration/run_demo.py

# Static checks first (seconds): ruff (pyflakes, bugbear, the pyspark layering rule) and mypy,
# configured in pyproject.toml; then the test suite.
lint: $(STAMP)
	$(PY) -m ruff check qbeast dbt tests benchmarks integration
	$(PY) -m mypy

test: lint
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	$(PY) benchmarks/run_all.py --quick

bench-full: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	$(PY) benchmarks/run_all.py --full

clean:
	rm -rf integration/target integration/logs integration/.qbeast_demo
