"""The SQL path: the ``qbeast`` Python data source against Spark's native parquet scan.

Why: dbt models query Qbeast tables through SQL (``spark.read.format("qbeast")`` or a catalog
table ``USING qbeast``). That path runs in Spark's Python data source API: files are planned in a
Python process and read by Python workers with pyarrow, which costs more per row than the JVM
parquet reader. This module measures how much, on the same table, for three query shapes, with
the DataFrame API (``QbeastTable.to_df`` / ``sample``, native parquet over the planned files) as
a third contender:

* a full aggregate (every row crosses the Python boundary on the SQL path);
* a selective range filter on the indexed columns (file pruning pays off on both qbeast paths);
* a 1% sample (``sampleFraction`` option / ``sample(0.01)``; parquet: ``TABLESAMPLE``).
"""
from __future__ import annotations

import logging
from typing import Any

from measure import interleaved, median

logger = logging.getLogger("qbeast.benchmarks.sql")


def run(spark, qbeast_path: str, parquet_path: str, value_column: str, range_filter: str,
        repeat: int) -> dict[str, Any]:
    import qbeast
    from qbeast import QbeastTable

    qbeast.register(spark)
    table = QbeastTable.for_path(spark, qbeast_path)
    spark.read.format("qbeast").load(qbeast_path).createOrReplaceTempView("bench_sql_qbeast")
    spark.read.format("qbeast").option("sampleFraction", "0.01").load(qbeast_path) \
        .createOrReplaceTempView("bench_sql_qbeast_sample")
    spark.read.parquet(parquet_path).createOrReplaceTempView("bench_sql_parquet")
    table.to_df().createOrReplaceTempView("bench_sql_qbeast_df")
    agg = f"SELECT avg({value_column}) AS a, count(1) AS n FROM"
    shapes = {
        "full aggregate": {
            "qbeast data source": f"{agg} bench_sql_qbeast",
            "qbeast DataFrame API": lambda: table.to_df(),
            "parquet": f"{agg} bench_sql_parquet",
        },
        f"range filter ({range_filter})": {
            "qbeast data source": f"{agg} bench_sql_qbeast WHERE {range_filter}",
            "qbeast DataFrame API": lambda: table.to_df(filter=range_filter),
            "parquet": f"{agg} bench_sql_parquet WHERE {range_filter}",
        },
        "1% sample": {
            "qbeast data source": f"{agg} bench_sql_qbeast_sample",
            "qbeast DataFrame API": lambda: table.sample(0.01),
            "parquet": f"{agg} bench_sql_parquet TABLESAMPLE (1 PERCENT)",
        },
    }
    results = []
    for shape, contenders in shapes.items():
        answers: dict[str, Any] = {}

        def case(name: str, query: Any):
            def go():
                if isinstance(query, str):
                    answers[name] = spark.sql(query).collect()[0]
                else:
                    from pyspark.sql import functions as F

                    answers[name] = query().agg(F.avg(value_column).alias("a"),
                                                F.count(F.lit(1)).alias("n")).collect()[0]
            return go

        times = interleaved({name: case(name, q) for name, q in contenders.items()}, repeat)
        if shape != "1% sample":  # sample sizes differ by design; exact answers must agree
            counts = {name: int(row["n"]) for name, row in answers.items()}
            if len(set(counts.values())) != 1:
                raise AssertionError(f"{shape}: row counts differ between contenders: {counts}")
        base = median(times["parquet"])
        results.append({
            "shape": shape,
            "contenders": [{"name": n, "time_s": median(t), "ratio_vs_parquet": median(t) / base,
                            "rows": int(answers[n]["n"])} for n, t in times.items()],
        })
        logger.info("sql %s: %s", shape, {n: round(median(t), 3) for n, t in times.items()})
    return {"repeat": repeat, "shapes": results}
