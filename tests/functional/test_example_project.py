"""The example project of integration/ built end to end, as `make demo` does but with fewer rows.

The build runs in fresh Python processes (each with its own Spark driver) started from folders
other than the project, which is what shows that the catalog lives in the project folder: the
second process only passes its tests if it finds the tables the first one built.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from qbeast.spark.bridge import jar_path

from .example_project import RUN_DEMO, copy_example_project, invoke_dbt

ROWS = 5000
INCREMENT = 1000
SUBPROCESS_TIMEOUT_S = 600


def _run(args, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd, capture_output=True, text=True, timeout=SUBPROCESS_TIMEOUT_S, check=False
    )


def _small_driver(project: Path) -> None:
    """Keep the extra Spark driver of the subprocess small (the test session runs beside it)."""
    profiles = yaml.safe_load((project / "profiles.yml").read_text())
    params = profiles["qbeast_demo"]["outputs"]["local"]["server_side_parameters"]
    params["spark.driver.memory"] = "1g"
    (project / "profiles.yml").write_text(yaml.safe_dump(profiles))


@pytest.mark.slow
def test_demo_builds_and_a_run_from_another_folder_sees_the_same_catalog(tmp_path):
    project = copy_example_project(tmp_path / "demo")
    _small_driver(project)
    first_cwd, second_cwd = tmp_path / "cwd1", tmp_path / "cwd2"
    first_cwd.mkdir()
    second_cwd.mkdir()

    demo = _run(
        [sys.executable, str(RUN_DEMO), "--project-dir", str(project),
         "--rows", str(ROWS), "--increment", str(INCREMENT)],
        first_cwd,
    )
    assert demo.returncode == 0, demo.stdout[-4000:] + demo.stderr[-4000:]
    # The dbt process ran on the JVM options the suite gives the processes it starts (conftest.py):
    # their code cache holds everything this build compiles, so the JIT stayed on throughout.
    assert "CodeCache is full" not in demo.stdout + demo.stderr, demo.stderr[-2000:]
    # the console has dbt's lines and the demo's: no engine log lines, no JSON log records
    console = (demo.stdout + demo.stderr).splitlines()
    assert not [line for line in console if " qbeast." in line and "qbeast.demo" not in line
                or line.startswith(("INFO:", '{"ts"'))], "\n".join(console[:40])
    catalog = project / ".qbeast_demo"
    assert f"warehouse: file:{catalog / 'warehouse'}" in demo.stdout
    for table in ("events", "daily_category_revenue", "country_funnel", "purchases"):
        location = catalog / "warehouse" / "ecommerce.db" / table
        assert f"file:{location}" in demo.stdout
        assert any(location.glob("*.parquet")), f"no data files under {location}"
    # The click stream is a Qbeast table and the second run appended one increment to it.
    events_line = next(
        line for line in demo.stdout.splitlines() if line.strip().startswith("ecommerce.events ")
    )
    assert events_line.split()[1:3] == ["qbeast", f"{ROWS + INCREMENT:,}"]
    assert (catalog / "warehouse" / "ecommerce.db" / "events" / "_delta_log").is_dir()
    # The microbatch mart is a Qbeast table with a commit per batch and run (one batch of the
    # events' range, two runs; assert_purchases_reconcile checked its rows against the click stream)
    purchases_line = next(
        line for line in demo.stdout.splitlines() if line.strip().startswith("ecommerce.purchases ")
    )
    assert purchases_line.split()[1] == "qbeast"
    purchases_log = catalog / "warehouse" / "ecommerce.db" / "purchases" / "_delta_log"
    assert len(list(purchases_log.glob("*.json"))) >= 2
    # The downstream models read the click stream with Spark's native parquet scan, planned by
    # the engine through the JVM read bridge, reading only the columns they use.
    scans = demo.stdout.split("how downstream models read the qbeast tables", 1)[1].splitlines()[1:]
    marts = {line.split(":", 1)[0].strip(): line for line in scans if line.startswith("  ")}
    assert {"daily_category_revenue", "country_funnel", "top_products"} <= set(marts), demo.stdout[-3000:]
    for line in marts.values():
        if jar_path() is None:  # without a JDK-built jar SQL reads use the Python data source
            assert "BatchScan" in line, line
            continue
        assert "FileScan parquet" in line and "Batched: true" in line and "QbeastFileIndex" in line, line
        assert "ReadSchema: struct<event_id" not in line  # not every column
    assert (catalog / "metastore_db").is_dir()
    assert sorted(p.name for p in first_cwd.iterdir()) == [], "the run left files in its working directory"

    # One cheap test that reads the click stream: it can only pass if this process finds the table.
    dbt = str(Path(sys.executable).with_name("dbt"))
    test = _run(
        [dbt, "test", "--project-dir", str(project), "--profiles-dir", str(project),
         "--select", "assert_events_row_count",
         "--vars", json.dumps({"events_rows": ROWS, "events_increment": INCREMENT})],
        second_cwd,
    )
    assert test.returncode == 0, test.stdout[-4000:] + test.stderr[-4000:]
    assert "PASS=1 " in test.stdout


def test_demo_exits_non_zero_when_a_step_fails(spark, tmp_path, capsys):
    """In-process on the shared session: a seed that cannot load stops the demo with exit code 1."""
    sys.path.insert(0, str(RUN_DEMO.parent))
    try:
        import run_demo
    finally:
        sys.path.remove(str(RUN_DEMO.parent))
    project = copy_example_project(tmp_path / "demo")
    (project / "seeds" / "countries.csv").write_text("country_id,country_code\n1,ES,unexpected third value\n")
    assert run_demo.main(["--project-dir", str(project), "--rows", "100"]) == 1
    assert "demo FAILED: `dbt seed` failed" in capsys.readouterr().err


@pytest.mark.slow
def test_example_project_parses_with_the_full_row_count(tmp_path):
    """The default variables (what `make demo` builds) give a million generated events."""
    project = copy_example_project(tmp_path / "demo")
    result, messages = invoke_dbt(["compile", "--select", "events", "--no-populate-cache"], project)
    assert result.success, messages
    compiled = next((project / "target" / "compiled").rglob("events.sql")).read_text()
    assert "range(1000000)" in compiled
