"""dbt commands as separate processes, as users run them: interrupted (Ctrl-C, SIGTERM) during a
qbeast write, started while another process holds the embedded catalog, and how much they print.

Each `dbt run` here starts its own Spark driver, so the file keeps to a few of them: an
interrupted first build, `dbt retry`, and an interrupted rebuild.
"""
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

import qbeast

DBT = str(Path(sys.executable).with_name("dbt"))
TIMEOUT_S = 600

# One row per 300 ms in one task: the stats pass and the write each take ~20 s, so an interrupt
# sent a few seconds after the model starts lands in the middle of its write.
SLOW = """
{{ config(materialized='qbeast', columns_to_index=['id']) }}
select /*+ REPARTITION(1) */ id, reflect('java.lang.Thread', 'sleep', cast({{ var('sleep_ms', 300) }} as bigint)) as z
from range(70)
"""
AFTER = "{{ config(materialized='view') }} select count(*) as n from {{ ref('slow') }}"


def _project(root: Path, catalog_dir: str = ".qbeast") -> Path:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(yaml.safe_dump(
        {"name": "proc", "version": "1.0", "config-version": 2, "profile": "proc"}))
    (root / "profiles.yml").write_text(yaml.safe_dump({"proc": {"target": "dev", "outputs": {"dev": {
        "type": "qbeast", "schema": "proc", "threads": 1, "catalog_dir": catalog_dir,
        "server_side_parameters": {"spark.driver.memory": "1g", "spark.sql.shuffle.partitions": "2"},
    }}}}))
    (root / "models" / "slow.sql").write_text(SLOW)
    (root / "models" / "after.sql").write_text(AFTER)
    return root


def _dbt(project: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([DBT, *args, "--project-dir", str(project), "--profiles-dir", str(project)],
                          cwd=project, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)


def _interrupted_run(project: Path, signum: int, after_s: float) -> tuple:
    """`dbt run`, interrupted ``after_s`` seconds after the slow model started; (code, output)."""
    process = subprocess.Popen(
        [DBT, "run", "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if "START sql qbeast model proc.slow" in line:
            break
    time.sleep(after_s)
    process.send_signal(signum)
    lines.extend(process.stdout)
    return process.wait(timeout=TIMEOUT_S), "".join(lines)


def _results(project: Path) -> dict:
    run_results = json.loads((project / "target" / "run_results.json").read_text())
    return {r["unique_id"].split(".")[-1]: (r["status"], r["message"]) for r in run_results["results"]}


def _files(folder: Path) -> set:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


def test_interrupts_commit_nothing_record_every_node_and_retry_resumes(tmp_path):
    project = _project(tmp_path / "proj")
    table = project / ".qbeast" / "warehouse" / "proc.db" / "slow"

    # Ctrl-C during the first build: nothing is committed, both nodes are recorded
    code, output = _interrupted_run(project, signal.SIGINT, 6)
    assert code == 1, output[-3000:]
    assert "Interrupted: cancelling the running models" in output
    results = _results(project)
    assert results["slow"][0] == "error" and "cancelled: dbt was interrupted" in results["slow"][1]
    assert results["after"][0] == "skipped"
    assert not list(table.glob("*.parquet")) and not list(table.glob("_qbeast_staging_*"))
    assert not list(table.glob("_delta_log/*.json"))
    # the console has dbt's lines, not the driver's log (that goes to catalog_dir/spark.log)
    assert not [line for line in output.splitlines() if " WARN " in line or "\tat " in line]
    assert (project / ".qbeast" / "spark.log").is_file()

    retry = _dbt(project, "retry", "--vars", "{sleep_ms: 0}")
    assert retry.returncode == 0, retry.stdout[-3000:] + retry.stderr[-3000:]
    assert "PASS=2" in retry.stdout
    version = qbeast.QbeastTable.for_path(None, str(table)).snapshot().version
    committed = _files(table)

    # SIGTERM during a rebuild: the previous version stays the table's, no file is left behind
    code, output = _interrupted_run(project, signal.SIGTERM, 6)
    assert code == 1, output[-3000:]
    assert _results(project)["slow"][0] == "error"
    assert qbeast.QbeastTable.for_path(None, str(table)).snapshot().version == version
    assert _files(table) == committed


def test_catalog_held_by_another_process_fails_fast_with_one_line(spark, tmp_path):
    """This test process's own driver holds its embedded catalog; a dbt process pointed at it
    must say so at once instead of waiting for Derby and printing Hive's traces."""
    spark.sql("show databases").collect()  # the driver opens its Derby catalog
    catalog = Path(spark.conf.get("spark.sql.warehouse.dir").removeprefix("file:")).parent
    assert (catalog / "metastore_db" / "dbex.lck").is_file()
    project = _project(tmp_path / "proj", catalog_dir=str(catalog))
    started = time.monotonic()
    result = _dbt(project, "run")
    elapsed = time.monotonic() - started
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert f"the embedded catalog {catalog} is in use by another process" in output
    assert "Wait for that process to finish" in output
    assert "Traceback" not in output and "\tat " not in output and "HiveException" not in output
    assert elapsed < 60, f"took {elapsed:.0f}s"  # dbt's own start-up; no Spark driver is started
    assert len(output.splitlines()) < 25, output
