"""What SQL over a Qbeast catalog table must do through the JVM read bridge, as one report.

``bridge_report`` runs the same checks on any classic session: ``test_sql_bridge.py`` on the
shared local session, and ``tests/cluster`` in a driver process on a standalone cluster (where
executors read the files). For every filter kind (range, ``IN``, ``OR``, ``IS NULL``, dates,
timestamps, hashed columns) and for ``TABLESAMPLE``, it records:

* the scan in the executed plan: a native ``FileScan parquet`` with ``Batched: true`` and the
  ``ReadSchema`` of the referenced columns only;
* the files the bridge gave Spark (the planner's record of the scan), compared with
  ``QbeastTable.read_plan`` for the same filter / fraction, and the scan's ``numFiles`` metric;
* the rows, compared with the Python data source (``qbeast_python``) and with a plain parquet
  read of every file of the table.

Functions that build data run only Spark SQL expressions, so every session builds the same table.
"""
from __future__ import annotations

import re
from typing import Any

ROWS = 20_000
CUBE_SIZE = 250
COLUMNS_TO_INDEX = "zone,day,brand:hashing"
#: Filter kinds -> SQL predicates (each prunes files on this table).
FILTERS = {
    "range": "zone BETWEEN 10 AND 30 AND price < 500",
    "in": "zone IN (3, 7, 42)",
    "or": "zone < 5 OR day >= DATE '2024-03-01'",
    "is_null": "zone IS NULL",
    "dates": "day BETWEEN DATE '2024-01-10' AND DATE '2024-01-20'",
    "timestamps": "ts >= TIMESTAMP '2024-02-25 00:00:00' AND zone < 50",
    "hashed": "brand = 'brand-7'",
    "hashed_in": "brand IN ('brand-1', 'brand-2') AND zone > 60",
}
#: Projections and the ReadSchema the native scan must show for them.
PROJECTIONS = {
    "select sum(price) from {t}": "struct<price:double>",
    "select id, zone from {t} where zone < 20": "struct<id:bigint,zone:int>",
    "select count(*) from {t} TABLESAMPLE (10 PERCENT)": "struct<zone:int,day:date,brand:string>",
}


def events(spark: Any, rows: int = ROWS) -> Any:
    """``rows`` rows, every column a pure function of the id (Spark's hash), nulls in ``zone``."""
    return spark.range(0, rows).selectExpr(
        "id",
        "case when pmod(hash(id, 'n'), 50) = 0 then null else pmod(hash(id, 'z'), 100) end as zone",
        "cast(pmod(hash(id, 'p'), 100000) / 100.0 as double) as price",
        "date_add(date'2024-01-01', pmod(hash(id, 'd'), 75)) as day",
        "timestamp_seconds(1704067200 + pmod(hash(id, 't'), 75 * 86400)) as ts",
        "concat('brand-', pmod(hash(id, 'b'), 40)) as brand",
    )


def write_table(spark: Any, path: str) -> None:
    import qbeast

    qbeast.write(events(spark), path, COLUMNS_TO_INDEX, cube_size=CUBE_SIZE, mode="overwrite")


def executed_plan_text(df: Any) -> str:
    """The executed physical plan (the final adaptive plan once the query ran)."""
    return str(df._jdf.queryExecution().executedPlan().toString())


def scan_lines(plan: str) -> list[str]:
    """The scan nodes of a plan's text (an adaptive plan prints its final and initial plans)."""
    if "== Final Plan ==" in plan:
        plan = plan.split("== Final Plan ==", 1)[1].split("== Initial Plan ==", 1)[0]
    return [line for line in plan.splitlines() if re.search(r"Scan|BatchScan", line)]


def files_read(df: Any) -> list[int]:
    """The ``numFiles`` metric of every file scan of ``df``'s last execution."""
    found: list[int] = []

    def walk(node: Any) -> None:
        name = node.getClass().getSimpleName()
        if name == "AdaptiveSparkPlanExec":
            walk(node.executedPlan())
            return
        if name.endswith("QueryStageExec"):
            walk(node.plan())
            return
        if name == "FileSourceScanExec":
            found.append(int(node.metrics().apply("numFiles").value()))
        children = node.children().iterator()
        while children.hasNext():
            walk(children.next())

    walk(df._jdf.queryExecution().executedPlan())
    return found


def _scans_since(start: int) -> list[Any]:
    from qbeast.spark.sql import sql_planner

    return sql_planner.recent_scans(since=start)


def _ids(df: Any) -> list[int]:
    return sorted(r[0] for r in df.select("id").collect())


def bridge_report(spark: Any, path: str, catalog: str = "bridge_checks",
                  python_source: bool = True) -> dict[str, Any]:
    """Run every check on the table at ``path`` (written by :func:`write_table`); plain data.

    ``python_source=False`` leaves out the comparison with the Python data source (None in the
    report): its planner process keeps the environment the session started with, so it cannot
    reach a bucket whose settings a test put in the environment later.
    """
    import qbeast
    from qbeast.spark.sql import sql_planner
    from qbeast.spark.catalog import create_table
    from qbeast.spark.file_access import FileAccess
    from qbeast.spark.read.datasource import PYTHON_SOURCE_NAME

    table = qbeast.QbeastTable.for_path(spark, path)
    assert qbeast.register(spark) == "jvm", "this report needs the JVM read bridge"
    create_table(spark, catalog, path, replace=True)
    create_table(spark, f"{catalog}_py", path, replace=True, source=PYTHON_SOURCE_NAME)
    every = table.read_plan().files
    # Spark's plain parquet reader opens the files as the bridge hands them over (a table on an
    # object store: local copies or signed URLs, see qbeast.spark.file_access)
    opened = FileAccess.decide(spark, path).bridge_readable([f.path for f in every],
                                                            [f.size for f in every])
    spark.read.parquet(*opened).createOrReplaceTempView(f"{catalog}_parquet")
    report: dict[str, Any] = {"total_files": len(every), "filters": {}, "plans": {}}

    def one(where: str, percent: int | None, must_prune: bool = True) -> dict[str, Any]:
        fraction = percent / 100 if percent else None
        sample = f" TABLESAMPLE ({percent} PERCENT)" if percent else ""
        condition = f" where {where}" if where else ""
        start = sql_planner.scan_count()
        df = spark.sql(f"select id from {catalog}{sample}{condition}")
        bridge = sorted(r[0] for r in df.collect())
        scans = [s for s in _scans_since(start) if s.table.location == table.path]
        expected = table.read_plan(fraction=fraction, filter=where or None).paths
        # the same rows by other readers: the sample is its row filter there
        conditions = ([table.sample_predicate(fraction)] if fraction else []) + ([f"({where})"] if where else [])
        suffix = f" where {' and '.join(conditions)}" if conditions else ""
        truth_sql, python_sql = f"select * from {catalog}_parquet{suffix}", f"select * from {catalog}_py{suffix}"
        engine = _ids(table.sample(fraction, filter=where or None) if fraction else table.to_df(filter=where or None))
        plan = executed_plan_text(df)
        return {
            "must_prune": must_prune,
            "rows": len(bridge),
            "files": len(scans[-1].paths) if scans else None,
            "scans": len(scans),
            "files_equal_read_plan": bool(scans) and list(scans[-1].paths) == list(expected),
            "num_files_metric": files_read(df),
            "native_scan": all(line.lstrip(" +-*(0123456789)").startswith("FileScan parquet")
                               and "Batched: true" in line for line in scan_lines(plan)) and bool(scan_lines(plan)),
            "equals_engine": bridge == engine,
            "equals_parquet": bridge == _ids(spark.sql(truth_sql)),
            "equals_python_source": bridge == _ids(spark.sql(python_sql)) if python_source else None,
        }

    try:
        for name, where in FILTERS.items():
            report["filters"][name] = one(where, None)
        # On this small table a 10% sample reaches cubes whose files hold every level (rollup), so it
        # checks the rows; 5% checks that the sample also prunes.
        report["filters"]["tablesample_10"] = one("", 10, must_prune=False)
        report["filters"]["tablesample_5"] = one("", 5)
        report["filters"]["tablesample_10_range"] = one(FILTERS["range"], 10)
        for sql, schema in PROJECTIONS.items():
            df = spark.sql(sql.format(t=catalog))
            df.collect()
            lines = scan_lines(executed_plan_text(df))
            schemas = [m.group(1) for line in lines for m in [re.search(r"ReadSchema: (struct<[^ ]*>)", line)] if m]
            report["plans"][sql] = {"read_schemas": schemas, "expected": schema}
    finally:
        # the session is shared with later tests: a temp view would show up in their catalogs
        # (dbt's docs generate lists it with no schema and fails)
        spark.catalog.dropTempView(f"{catalog}_parquet")
        spark.sql(f"DROP TABLE IF EXISTS {catalog}")
        spark.sql(f"DROP TABLE IF EXISTS {catalog}_py")
    return report


def problems(report: dict[str, Any]) -> list[str]:
    """What the report shows is wrong (empty when every check holds)."""
    found = []
    total = report["total_files"]
    for name, facts in report["filters"].items():
        for key in ("files_equal_read_plan", "native_scan", "equals_engine", "equals_parquet",
                    "equals_python_source"):
            if not facts[key] and not (key == "equals_python_source" and facts[key] is None):
                found.append(f"{name}: {key} is false ({facts})")
        if facts["scans"] != 1 or facts["num_files_metric"] != [facts["files"]]:
            found.append(f"{name}: one scan of the planned files expected ({facts})")
        if facts["must_prune"] and not 0 < facts["files"] < total:
            found.append(f"{name}: the check is void unless the scan prunes ({facts['files']} of {total})")
    for sql, facts in report["plans"].items():
        if facts["read_schemas"] != [facts["expected"]]:
            found.append(f"{sql}: ReadSchema {facts['read_schemas']} instead of {facts['expected']}")
    return found
