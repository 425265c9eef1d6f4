# Two commands for a fresh machine (Python >= 3.10 and Java 17):
#   make demo   build the example dbt project in integration/ on the embedded Spark
#   make test   run the static checks (ruff, mypy) and the whole test suite
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
# The JVM read bridge (jvm/): compiled with javac against the installed pyspark; the wheel ships it.
JAR := qbeast/jars/qbeast-bridge.jar
JAVA_SOURCES := $(shell find jvm/src -type f) jvm/build_jar.py
# `dbt --version` lists only adapters whose folder is inside site-packages/dbt/adapters (it globs
# that folder and ignores editable installs), so the install links the adapter's folder there.
ADAPTER_LINK = $(PY) -c "import os, dbt.adapters as a; d = os.path.join(a.__path__[0], 'qbeast'); \
	os.path.lexists(d) or os.symlink(os.path.abspath('dbt/adapters/qbeast'), d)"

# Azure's storage emulator for the Azure tests (npm package, pinned); without npm they are skipped
# with that reason.
AZURITE_VERSION := 3.35.0
AZURITE := $(VENV)/azurite/node_modules/.bin/azurite-blob

# Hadoop's S3A connector (hadoop-aws + AWS SDK bundle) for the tests that read tables through a
# real Hadoop connector: taken from a PyPI archive that carries the Apache jars (no Maven here).
HADOOP_AWS := $(VENV)/hadoop-aws

# The class archive the tests' JVMs start from (tests/jvm_archive.py): built once per install,
# it saves each of the suite's JVM starts about a third of its time; without it they start as usual.
JVM_ARCHIVE := $(VENV)/jvm/spark-classes.jsa

.PHONY: demo test lint install jar wheel bench bench-full clean azurite hadoop-aws

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# The packages are installed with uv (from PyPI, as pip would: the same versions, checked with
# pip freeze) when it can be installed: it downloads and unpacks in parallel (29 s against 48 s for
# pip on a 2-core machine). Without it, pip installs them.
$(STAMP): $(PY) pyproject.toml constraints.txt
	@if $(PY) -m pip install --quiet uv; then \
	  echo "$(VENV)/bin/uv pip install --python $(PY) -c constraints.txt -e \".[test]\""; \
	  $(VENV)/bin/uv pip install --quiet --python $(PY) -c constraints.txt -e ".[test]"; \
	else \
	  echo "uv could not be installed: pip installs the packages"; \
	  $(PY) -m pip install --quiet -c constraints.txt -e ".[test]"; \
	fi
	$(ADAPTER_LINK)
	touch $(STAMP)

$(JAR): $(STAMP) $(JAVA_SOURCES)
	$(PY) jvm/build_jar.py --output $(JAR)

jar: $(JAR)

$(AZURITE):
	@if command -v npm >/dev/null 2>&1; then \
	  npm install --silent --no-save --no-audit --no-fund --prefix $(VENV)/azurite \
	    azurite@$(AZURITE_VERSION); \
	else echo "NOTE: npm is missing: the Azure emulator tests will be skipped"; fi

azurite: $(STAMP)
	@[ -x $(AZURITE) ] || $(MAKE) --no-print-directory $(AZURITE)

hadoop-aws: $(STAMP)
	$(PY) jvm/fetch_hadoop_aws.py --dest $(HADOOP_AWS)

install: $(STAMP) $(JAR)

$(JVM_ARCHIVE): $(STAMP) $(JAR)
	$(PY) tests/jvm_archive.py --output $(JVM_ARCHIVE)

demo: install
	$(PY) integration/run_demo.py

# Static checks first (seconds): ruff (pyflakes, bugbear, the pyspark layering rule) and mypy,
# configured in pyproject.toml; then the test suite.
lint: $(STAMP)
	$(PY) -m ruff check qbeast dbt tests benchmarks integration
	$(PY) -m mypy

# The whole suite in two pytest-xdist workers, each with its own Spark session and catalog. A test
# module stays on one worker (its fixtures are built once); the cluster tests stay together on one
# worker (they share their baselines) and go first, so the other worker runs engine and dbt tests
# while their servers, clusters and dbt processes start and wait (pytest_xdist_make_scheduler in
# tests/conftest.py). The cluster tests come first, so their group starts at once. Once the
# package is installed, the static checks, the class archive (a JVM's work, ~45 s), Azurite (npm)
# and the Hadoop connector (downloads) run side by side: one after the other they took ~95 s, side
# by side ~50 s here. Each one's output is printed whole when it is done; a failure of any fails
# the target. PYTEST_ARGS naming test paths runs just those, in this process.
test: install
	@$(MAKE) --no-print-directory -j 4 --output-sync=target lint $(JVM_ARCHIVE) azurite hadoop-aws
	@case "$(PYTEST_ARGS)" in \
	  *tests/*) $(PY) -m pytest $(PYTEST_ARGS) ;; \
	  *) $(PY) -m pytest -n 2 $(PYTEST_ARGS) \
	       tests/cluster tests/functional tests/spark tests/interop tests/unit ;; \
	esac

# A wheel with the bridge jar inside (users then need a JRE only).
wheel: install
	$(PY) -m pip wheel --quiet --no-deps -w dist .

bench: install
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	$(PY) benchmarks/run_all.py --quick

bench-full: install
	$(PY) -m pip install --quiet -c constraints.txt -e ".[test,bench]"
	$(PY) benchmarks/run_all.py --full

clean:
	rm -rf integration/target integration/logs integration/.qbeast_demo
