"""Sampling: what ``QbeastTable.sample(f)`` reads and how close its average is, against the peers.

For each fraction ``f`` the same aggregate (``avg`` and ``count`` of the value column) runs as

* a qbeast sample (``QbeastTable.sample(f)``: OTree file selection + ``hash < Weight(f)``),
* Spark's ``TABLESAMPLE (f*100 PERCENT)`` on the plain parquet copy of the same rows (a Bernoulli
  sample: it reads every file and drops rows afterwards),
* and, once per round, a full scan of the parquet copy (the exact answer).

Files and bytes come from Spark's scan metrics of the executed plans. The sampling error is
``|avg(sample) - avg(all)| / avg(all)``; the qbeast sample is deterministic (the same rows on
every run), Spark's TABLESAMPLE draws a new sample per run, so its error is the median over the
timed runs.
"""
from __future__ import annotations

import logging
from typing import Any

from measure import collect_with_io, interleaved, median

logger = logging.getLogger("qbeast.benchmarks.sampling")


def _rel_error(estimate: float | None, exact: float) -> float | None:
    """Relative error of a sampled average (None when the sample was empty)."""
    return None if estimate is None else abs(float(estimate) - exact) / abs(exact)


def run(spark, qbeast_path: str, parquet_path: str, value_column: str, fractions: list[float],
        repeat: int) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from qbeast import QbeastTable

    table = QbeastTable.for_path(spark, qbeast_path)
    view = "bench_sampling_parquet"
    spark.read.parquet(parquet_path).createOrReplaceTempView(view)
    aggregate = [F.avg(value_column).alias("avg"), F.count(F.lit(1)).alias("n")]

    def full():
        return collect_with_io(spark.table(view).agg(*aggregate))

    (exact,), full_io = full()
    exact_avg, total_rows = float(exact["avg"]), int(exact["n"])
    rows: list[dict[str, Any]] = []
    full_times: list[float] = []
    for f in fractions:
        observed: dict[str, Any] = {}

        def qbeast_sample(f=f):
            observed["qbeast"] = collect_with_io(table.sample(f).agg(*aggregate))

        def table_sample(f=f):
            result = collect_with_io(spark.sql(
                f"SELECT avg({value_column}) AS avg, count(1) AS n FROM {view} "
                f"TABLESAMPLE ({f * 100:.6f} PERCENT)"))
            observed.setdefault("tablesample_runs", []).append(result)

        times = interleaved({"qbeast": qbeast_sample, "tablesample": table_sample, "full": full},
                            repeat)
        full_times += times["full"]
        (q_row,), q_io = observed["qbeast"]
        t_runs = observed["tablesample_runs"]
        t_io = t_runs[-1][1]
        t_errors = [_rel_error(r[0][0]["avg"], exact_avg) for r in t_runs]
        row = {
            "fraction": f,
            "qbeast": {"files": q_io.files, "bytes": q_io.bytes, "rows": int(q_row["n"]),
                       "time_s": median(times["qbeast"]),
                       "rel_error": _rel_error(q_row["avg"], exact_avg)},
            "tablesample": {"files": t_io.files, "bytes": t_io.bytes,
                            "rows": int(t_runs[-1][0][0]["n"]), "time_s": median(times["tablesample"]),
                            "rel_error": median([e for e in t_errors if e is not None] or [float("nan")])},
            "full_time_s": median(times["full"]),
        }
        rows.append(row)
        logger.info("sampling f=%s: qbeast files=%d bytes=%d %.3fs err=%s | tablesample files=%d "
                    "%.3fs err=%s | full %.3fs", f, q_io.files, q_io.bytes, row["qbeast"]["time_s"],
                    row["qbeast"]["rel_error"], t_io.files, row["tablesample"]["time_s"],
                    row["tablesample"]["rel_error"], row["full_time_s"])
    return {"value_column": value_column, "exact_avg": exact_avg, "total_rows": total_rows,
            "full_files": full_io.files, "full_bytes": full_io.bytes,
            "full_time_s": median(full_times), "repeat": repeat, "fractions": rows,
            "qbeast_table_files": len(table.snapshot().delta.files),
            "qbeast_table_bytes": sum(int(a.size or 0) for a in table.snapshot().delta.files.values())}
