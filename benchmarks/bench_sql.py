"""SQL over a Qbeast catalog table (the JVM read bridge) against native parquet over the same files.

Why: dbt models read Qbeast tables through SQL (``{{ ref() }}`` is a catalog table ``USING
qbeast``). With the bridge that is Spark's own parquet scan (column pruning, vectorized reads)
over the files the engine's planner picks for each scan's filters and samples. This module checks
that claim on the benchmark table: every query runs against

* ``qbeast catalog table``: ``CREATE TABLE ... USING qbeast`` over the Qbeast table (the bridge);
* ``native parquet``: ``spark.read.parquet`` of *every* file of the same Qbeast table (the same
  bytes on disk, no index), Spark's ``TABLESAMPLE`` for the sampled shapes (a Bernoulli sample:
  it reads every file);

and, for the one-column aggregate only, ``python data source``: the ``qbeast`` Python data source
(the bridge's fallback without a JDK-built jar or behind Spark Connect), to show what the bridge
replaces. Shapes: a one-column and an all-column aggregate over the whole table (goal: at most
1.2x native), a range filter and an ``OR`` filter on indexed columns, ``TABLESAMPLE`` 1% and 10%
(goal: fewer bytes than native). Files and bytes come from Spark's scan metrics
(``measure.collect_with_io``) for both contenders. Exact shapes must give identical answers; a
sample must have exactly the rows of the engine's ``sample(f)``.
"""
from __future__ import annotations

import logging
import math
from typing import Any

from measure import collect_with_io, interleaved, median

logger = logging.getLogger("qbeast.benchmarks.sql")

QBEAST = "bench_sql_qbeast"
NATIVE = "bench_sql_native"
PYTHON = "bench_sql_python"
#: The goal for whole-table scans (time ratio against native parquet).
FULL_SCAN_GOAL = 1.2


def _shapes(columns: list[str], value_column: str, range_filter: str, or_filter: str) -> list[dict[str, Any]]:
    every = ", ".join(f"max(`{c}`)" for c in columns)
    one = f"SELECT avg(`{value_column}`) AS a, count(1) AS n FROM {{t}}"
    return [
        {"shape": "one-column aggregate", "kind": "full", "sql": one, "python": True},
        {"shape": "all-column aggregate", "kind": "full", "sql": f"SELECT {every}, count(1) AS n FROM {{t}}"},
        {"shape": f"range filter ({range_filter})", "kind": "filter", "sql": f"{one} WHERE {range_filter}"},
        {"shape": f"OR filter ({or_filter})", "kind": "filter", "sql": f"{one} WHERE {or_filter}"},
        {"shape": "TABLESAMPLE (1 PERCENT)", "kind": "sample", "fraction": 0.01,
         "sql": f"SELECT avg(`{value_column}`) AS a, count(1) AS n FROM {{t}} TABLESAMPLE (1 PERCENT)"},
        {"shape": "TABLESAMPLE (10 PERCENT)", "kind": "sample", "fraction": 0.1,
         "sql": f"SELECT avg(`{value_column}`) AS a, count(1) AS n FROM {{t}} TABLESAMPLE (10 PERCENT)"},
    ]


def run(spark, qbeast_path: str, value_column: str, range_filter: str, or_filter: str,
        repeat: int) -> dict[str, Any]:
    import qbeast
    from qbeast import QbeastTable
    from qbeast.spark.catalog import create_table
    from qbeast.spark.read.datasource import PYTHON_SOURCE_NAME

    path = qbeast.register(spark)
    if path != "jvm":
        raise RuntimeError(f"the SQL benchmark needs the JVM read bridge; this session uses {path}")
    table = QbeastTable.for_path(spark, qbeast_path)
    create_table(spark, QBEAST, qbeast_path, replace=True)
    create_table(spark, PYTHON, qbeast_path, replace=True, source=PYTHON_SOURCE_NAME)
    files = table.read_plan().paths
    spark.read.parquet(*files).createOrReplaceTempView(NATIVE)
    columns = spark.table(QBEAST).columns
    results = []
    for shape in _shapes(columns, value_column, range_filter, or_filter):
        contenders = {"qbeast catalog table": QBEAST, "native parquet": NATIVE}
        if shape.get("python"):
            contenders["python data source"] = PYTHON
        answers: dict[str, Any] = {}
        io: dict[str, Any] = {}

        def case(name: str, relation: str, sql: str = shape["sql"], answers: dict = answers,
                 io: dict = io):
            def go():
                rows, scan = collect_with_io(spark.sql(sql.format(t=relation)))
                answers[name], io[name] = rows[0], scan
            return go

        # the Python source is slow at this size: timed once (no warm-up, one round), apart
        python = {n: case(n, r) for n, r in contenders.items() if r == PYTHON}
        times = interleaved({n: case(n, r) for n, r in contenders.items() if r != PYTHON}, repeat)
        times.update(interleaved(python, 1, warmup=False) if python else {})
        _check(shape, answers, table)
        base = median(times["native parquet"])
        native_io = io["native parquet"]
        entry = {"shape": shape["shape"], "kind": shape["kind"], "contenders": []}
        for name, measured in times.items():
            scan = io[name]
            entry["contenders"].append({
                "name": name, "time_s": median(measured), "ratio_vs_native": median(measured) / base,
                "rows": int(answers[name]["n"]),
                "files": scan.files if name != "python data source" else None,
                "bytes": scan.bytes if name != "python data source" else None,
                "bytes_vs_native": scan.bytes / native_io.bytes
                if name != "python data source" and native_io.bytes else None,
            })
        results.append(entry)
        logger.info("sql %s: %s", shape["shape"], {c["name"]: round(c["time_s"], 3) for c in entry["contenders"]})
    return {"repeat": repeat, "table_files": len(files), "full_scan_goal": FULL_SCAN_GOAL, "shapes": results}


def _check(shape: dict[str, Any], answers: dict[str, Any], table: Any) -> None:
    """Exact shapes: every contender gives the same answer; samples: the engine's rows."""
    qbeast_answer = answers["qbeast catalog table"]
    if shape["kind"] == "sample":
        want = table.sample(shape["fraction"]).count()
        if int(qbeast_answer["n"]) != want:
            raise AssertionError(f"{shape['shape']}: {qbeast_answer['n']} rows, the engine's "
                                 f"sample({shape['fraction']}) has {want}")
        return
    for name, answer in answers.items():
        if len(answer) != len(qbeast_answer) or not all(map(_same, answer, qbeast_answer)):
            raise AssertionError(f"{shape['shape']}: {name} answered {answer}, the catalog table "
                                 f"{qbeast_answer}")


def _same(a: Any, b: Any) -> bool:
    """Equal, floats up to summation order (tasks add up partial sums in any order)."""
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=1e-9)
    return a == b
