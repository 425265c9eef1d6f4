# Two commands for a fresh machine (Python >= 3.10 and Java 17):
#   make demo   build the example dbt project in integration/ on the embedded Spark
#   make test   run the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test install bench bench-full clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): $(PY) pyproject.toml constraints.txt
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test]"
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(PY) integration/run_demo.py

test: $(STAMP)
	$(PY) -m pytest $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	$(PY) benchmarks/run_all.py --quick

bench-full: $(STAMP)
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	$(PY) benchmarks/run_all.py --full

clean:
	rm -rf integration/target integration/logs integration/.qbeast_demo
