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
import threading
import time
from pathlib import Path

import pytest
import yaml

import qbeast

pytestmark = pytest.mark.slow  # every test here runs dbt in other processes

DBT = str(Path(sys.executable).with_name("dbt"))
TIMEOUT_S = 600

# One row per 300 ms in one task: computing the rows takes ~20 s (once, in the collect of a first
# write this small, indexed on the driver), so an interrupt sent a few seconds after the model
# starts lands in the middle of its write.
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


def _interrupted_run(project: Path, signum: int, after_s: float, command: str = "run",
                     started: str = "START sql qbeast model proc.slow") -> tuple:
    """`dbt COMMAND`, interrupted ``after_s`` seconds after its console line ``started``;
    (exit code, output, seconds from the signal to the exit)."""
    process = subprocess.Popen(
        [DBT, command, "--project-dir", str(project), "--profiles-dir", str(project)],
        cwd=project, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert process.stdout is not None
    for line in process.stdout:
        lines.append(line)
        if started in line:
            break
    time.sleep(after_s)
    process.send_signal(signum)
    signalled = time.monotonic()
    lines.extend(process.stdout)
    code = process.wait(timeout=TIMEOUT_S)
    return code, "".join(lines), time.monotonic() - signalled


def _results(project: Path) -> dict:
    run_results = json.loads((project / "target" / "run_results.json").read_text())
    return {r["unique_id"].split(".")[-1]: (r["status"], r["message"]) for r in run_results["results"]}


def _files(folder: Path) -> set:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()} if folder.exists() else set()


def test_interrupts_commit_nothing_record_every_node_and_retry_resumes(tmp_path):
    project = _project(tmp_path / "proj")
    table = project / ".qbeast" / "warehouse" / "proc.db" / "slow"

    # Ctrl-C during the first build: nothing is committed, both nodes are recorded
    code, output, _ = _interrupted_run(project, signal.SIGINT, 6)
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
    code, output, _ = _interrupted_run(project, signal.SIGTERM, 6)
    assert code == 1, output[-3000:]
    assert _results(project)["slow"][0] == "error"
    assert qbeast.QbeastTable.for_path(None, str(table)).snapshot().version == version
    assert _files(table) == committed


def test_ctrl_c_stops_a_100000_row_seed_within_seconds(tmp_path):
    """Ctrl-C a second into `dbt seed` of a 100,000-row CSV (no column_types): dbt stops within
    seconds (dbt-spark's loader ran on for minutes) and records the seed as cancelled. The time
    bound leaves room for dbt's own parse of the file into its agate table (about 5 s here), which
    no adapter can interrupt; the load after it is checked for the interrupt before each step."""
    project = _project(tmp_path / "proj")
    (project / "models" / "slow.sql").unlink()
    (project / "models" / "after.sql").unlink()
    (project / "seeds").mkdir()
    with open(project / "seeds" / "big.csv", "w") as handle:
        handle.write("id,amount,day,name,flag\n")
        handle.writelines(f"{i},{i / 100:.2f},2024-01-{i % 28 + 1:02d},name{i},{i % 2 == 0}\n"
                          for i in range(100_000))
    code, output, stopped_s = _interrupted_run(project, signal.SIGINT, 1.0, "seed",
                                               "START seed file proc.big")
    assert code == 1, output[-3000:]
    assert "Interrupted: cancelling the running models" in output
    assert stopped_s < 20, f"dbt seed exited {stopped_s:.1f}s after Ctrl-C:\n{output[-3000:]}"
    status, message = _results(project)["big"]
    assert status == "error" and "cancelled: dbt was interrupted" in message
    table = project / ".qbeast" / "warehouse" / "proc.db" / "big"
    assert not list(table.glob("*.parquet")), "the interrupted load wrote rows"


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
    # one error header, not the connection's error nested in a statement's (two "Database Error"
    # headers before the fix)
    headers = [line for line in output.splitlines() if line.strip() in ("Runtime Error", "Database Error")]
    assert len(headers) <= 1, output


FAST = "{{ config(materialized='qbeast', columns_to_index=['id']) }} select id, id * 2 as v from range(1000)"


def _run_in_background(project: Path, outcomes: list, *args: str) -> threading.Thread:
    """`dbt ARGS` in a thread of its own, which appends (exit code, seconds, output) when the
    process ends: each process's time is its own, whatever the other one does."""
    def run() -> None:
        started = time.monotonic()
        result = _dbt(project, *args)
        outcomes.append((result.returncode, time.monotonic() - started, result.stdout + result.stderr))

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_two_runs_started_together_one_wins_the_other_fails_at_once(tmp_path):
    """Two `dbt run`s on one project, started together and 0.5 s apart: before either driver
    opens the Derby catalog. One builds the models; the other fails with the one-line message
    within 5 s of reaching its connection (no Spark driver, no Hive traces), and the tables are
    those of the winner. The second pair's project has a failing model too: its message on the
    console, PySpark's JSON record in the Spark log, and the engine's progress of the models
    before it in dbt's own log at debug level (one driver start fewer than a run of its own)."""
    project = _project(tmp_path / "proj")
    (project / "models" / "slow.sql").write_text(FAST)
    table = project / ".qbeast" / "warehouse" / "proc.db" / "slow"
    parsed = _dbt(project, "parse")  # both runs then start from the same parsed project
    assert parsed.returncode == 0, parsed.stdout[-2000:]
    for gap_s in (0.0, 0.5):
        broken = gap_s > 0
        if broken:
            (project / "models" / "broken.sql").write_text(
                "{{ config(materialized='qbeast', columns_to_index=['id']) }} "
                "select id, no_such_column from {{ ref('slow') }}")
            parsed = _dbt(project, "parse")
            assert parsed.returncode == 0, parsed.stdout[-2000:]
        outcomes: list = []
        first = _run_in_background(project, outcomes, "run")
        time.sleep(gap_s)
        second = _run_in_background(project, outcomes, "run")
        first.join(TIMEOUT_S)
        second.join(TIMEOUT_S)
        refused = "is in use by another process"
        winners = [o for o in outcomes if refused not in o[2]]
        losers = [o for o in outcomes if refused in o[2]]
        assert len(winners) == 1 and len(losers) == 1, [o[2][-2000:] for o in outcomes]
        code, elapsed, output = losers[0]
        assert code != 0
        assert f"{project / '.qbeast'}" in output
        assert "Traceback" not in output and "\tat " not in output and "HiveException" not in output
        assert len(output.splitlines()) < 25, output
        # from dbt reaching its connection (the "Concurrency" line) to its last line: the
        # process's own start-up (Python, dbt, the parse) is not the refusal's cost
        waited = _seconds_between(output, "Concurrency:", None)
        assert waited < 5, f"refused {waited:.0f}s after reaching its connection (whole run {elapsed:.1f}s):\n{output}"
        code, _, output = winners[0]
        assert code == (1 if broken else 0), output[-3000:]
        assert "PASS=2" in output and ("ERROR=1" in output) is broken, output[-3000:]
        rows = qbeast.QbeastTable.for_path(None, str(table)).snapshot().delta.num_records
        assert rows == 1000
        assert _console_clean(output), output

    assert "model broken: [UNRESOLVED_COLUMN" in output, output[-3000:]
    assert "SQLQueryContextLogger" in (project / ".qbeast" / "spark.log").read_text()
    dbt_log = (project / "logs" / "dbt.log").read_text()
    assert "[debug]" in dbt_log and "qbeast.spark.write.writer: write " in dbt_log


def _seconds_between(output: str, first: str, last: str | None) -> float:
    """Seconds between dbt's console line holding ``first`` and the one holding ``last`` (the
    last timestamped line when None), from the ``HH:MM:SS`` stamps dbt puts on each line."""
    import re

    stamped = [(m.group(1), line) for line in output.splitlines()
               if (m := re.search(r"(\d\d:\d\d:\d\d)\s", line))]

    def seconds(stamp: str) -> int:
        h, m, s = (int(x) for x in stamp.split(":"))
        return h * 3600 + m * 60 + s

    start = next(seconds(t) for t, line in stamped if first in line)
    end = seconds(next(t for t, line in reversed(stamped) if last is None or last in line))
    return float((end - start) % 86400)


def _console_clean(output: str) -> bool:
    """dbt's lines only: no JSON log records, no Java traces, no engine log lines."""
    return not [line for line in output.splitlines()
                if line.startswith(('{"ts"', "INFO:", "WARNING:qbeast")) or "\tat " in line
                or "Py4JJavaError" in line]

