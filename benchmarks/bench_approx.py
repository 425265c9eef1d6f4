"""Approximate aggregates: ``QbeastTable.approx`` at 10% / 1% / 0.1% tolerance against exact answers.

For a generated table (``uniform``: ``count(*)``, ``sum(value)``, ``avg(value)`` over the whole
table) and TPC-DS ``store_sales`` (``sum(ss_net_paid)`` by ``ss_store_sk``), in one run:

* the exact aggregate over the same Qbeast table (``to_df()``) and over the plain parquet files
  the table was written from (Spark's parquet reader), the median of three timed runs after a
  warm-up run;
* ``approx`` at each tolerance, timed the same way: the largest relative error of its
  estimates against the exact answer, whether every interval covers it, the fraction read, and
  the rows and bytes Spark's scans returned (summed over the steps).

Bytes and rows come from Spark's scan metrics for both sides. Run:
``.venv/bin/python benchmarks/bench_approx.py --rows 4000000`` (writes
``benchmarks/results/approx.md`` and ``.data/results-approx.json``).
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from datasets import RANGE_COLUMNS, generate, tpcds_store_sales  # noqa: E402
from measure import WORK, collect_with_io, fresh_dir, machine_facts, spark_session  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.approx")

TOLERANCES = (0.1, 0.01, 0.001)
#: The tolerance of the issue's goals (>= 10x less data, >= 5x faster than the exact aggregate).
GOAL_TOLERANCE = 0.01
#: Timed runs per measurement (the median is reported: the machine is shared).
TIMED_RUNS = 5


def _timed(action, runs: int = TIMED_RUNS):
    """Warm-up, then (median seconds of ``runs`` timed runs, the last result)."""
    action()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        result = action()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2], result


def _exact(df, group: str | None, aggregates: dict[str, str]):
    from pyspark.sql import functions as F

    columns = [F.expr(text).alias(label) for label, text in aggregates.items()]
    grouped = df.groupBy(group).agg(*columns) if group else df.agg(*columns)
    rows, io = collect_with_io(grouped)
    values = {(row[group] if group else None, label): row[label] for row in rows for label in aggregates}
    return values, io


def _job_floor(spark, runs: int = 5) -> float:
    """Median seconds of the smallest Spark job (one row collected): the fixed cost every step
    of an approximate answer pays on this machine, whatever it reads."""
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        spark.range(1).collect()
        times.append(time.perf_counter() - started)
    return sorted(times)[len(times) // 2]


def _split(spark, table, aggregates: list[str], group: str | None, tolerance: float,
           runs: int = TIMED_RUNS) -> dict[str, float]:
    """Where the time of one answer goes (median seconds over ``runs`` answers after a warm-up):
    each phase timed by wrapping the engine function that runs it, for this measurement only."""
    import qbeast.operations.approx as operations
    import qbeast.spark.read.approx as reads

    spent: dict[str, float] = {}

    def wrap(module, name: str, phase: str):
        original = getattr(module, name)

        def timed(*args, **kwargs):
            started = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - started
        return original, timed

    targets = [(operations, "read_band", "steps"), (operations, "read_small_bands", "steps"),
               (reads, "band_scope", "scope"), (reads, "band_dataframe", "build"),
               (reads, "band_table", "local"), (reads, "fold_band", "fold"),
               (operations, "answer_dataframe", "answer")]
    originals = []
    for module, name, phase in targets:
        original, timed = wrap(module, name, phase)
        originals.append((module, name, original))
        setattr(module, name, timed)
    samples: list[dict[str, float]] = []
    try:
        for i in range(runs + 1):
            spent.clear()
            started = time.perf_counter()
            df = table.approx(aggregates, group_by=group, tolerance=tolerance)
            built = time.perf_counter()
            df.collect()
            done = time.perf_counter()
            if not i:  # the first answer is a warm-up
                continue
            part = {phase: spent.get(phase, 0.0) for *_, phase in targets}
            part |= {"collect": done - built, "total": done - started}
            samples.append({
                "total": part["total"],
                "plan the read (snapshot, files, row count)": part["total"] - part["steps"]
                - part["answer"] - part["collect"],
                "plan each band (files, prefixes)": part["scope"],
                "read bands in this process (pyarrow, no Spark job)": part["local"],
                "build the band DataFrames": part["build"],
                "Spark jobs of the steps (scans with Arrow out, or Spark's fold)": part["steps"]
                - part["scope"] - part["local"] - part["build"] - part["fold"],
                "fold on the driver": part["fold"],
                "answer DataFrame and its collect": part["answer"] + part["collect"],
            })
    finally:
        for module, name, original in originals:
            setattr(module, name, original)
    return {phase: sorted(sample[phase] for sample in samples)[len(samples) // 2]
            for phase in samples[0]}


def _same_answer(mine: list[Any], theirs: list[Any]) -> bool:
    """Whether two answers hold the same rows (estimates and bounds to the last bits a
    different summation order changes)."""
    numbers = ("estimate", "low", "high")
    if len(mine) != len(theirs):
        return False
    for a, b in zip(mine, theirs):
        if {k: v for k, v in a.asDict().items() if k not in numbers} != \
                {k: v for k, v in b.asDict().items() if k not in numbers}:
            return False
        for k in numbers:
            if (a[k] is None) != (b[k] is None) or (
                    a[k] is not None and abs(a[k] - b[k]) > 1e-12 * max(abs(a[k]), abs(b[k]))):
                return False
    return True


def _paired_ratio(exact, approx, pairs: int = TIMED_RUNS) -> dict[str, Any]:
    """Exact and approximate answers timed alternately (after a warm-up of each): the median of
    the per-pair ratios, which a load change between two phases of the run cannot bias."""
    exact()
    approx()
    ratios = []
    for _ in range(pairs):
        started = time.perf_counter()
        exact()
        middle = time.perf_counter()
        approx()
        ratios.append((middle - started) / (time.perf_counter() - middle))
    return {"median": sorted(ratios)[len(ratios) // 2], "min": min(ratios), "max": max(ratios),
            "pairs": pairs}


def _without_local_reads(spark, action):
    """``action()`` with every band read by Spark (the reads before bands were read in this
    process), to compare both in one run."""
    from qbeast.spark import settings

    spark.conf.set(settings.APPROX_LOCAL_READ_BYTES.key, "0")
    try:
        return action()
    finally:
        spark.conf.unset(settings.APPROX_LOCAL_READ_BYTES.key)


def measure(spark, name: str, qbeast_path: str, parquet_path: str, group: str | None,
            aggregates: list[str]) -> dict[str, Any]:
    from qbeast import QbeastTable

    load_at_start = os.getloadavg()[0]
    table = QbeastTable.for_path(spark, qbeast_path)
    texts = {a: a for a in aggregates}
    parquet_s, (exact, parquet_io) = _timed(lambda: _exact(spark.read.parquet(parquet_path), group, texts))
    qbeast_s, (exact_q, qbeast_io) = _timed(lambda: _exact(table.to_df(), group, texts))
    rows: list[dict[str, Any]] = []
    tracker = spark.sparkContext.statusTracker()

    def jobs_of(action) -> int:
        before = set(tracker.getJobIdsForGroup(None))
        action()
        return len(set(tracker.getJobIdsForGroup(None)) - before)

    by_spark: dict[str, Any] = {}
    for tolerance in TOLERANCES:
        def run(tolerance=tolerance):
            return table.approx(aggregates, group_by=group, tolerance=tolerance).collect()

        jobs = jobs_of(run)  # the warm-up also counts the Spark jobs of one answer
        seconds, answer = _timed(run)
        if tolerance == GOAL_TOLERANCE:
            spark_jobs = _without_local_reads(spark, lambda: jobs_of(run))
            spark_seconds, spark_answer = _without_local_reads(spark, lambda: _timed(run))
            by_spark = {"seconds": spark_seconds, "jobs": spark_jobs,
                        "same_answer": _same_answer(answer, spark_answer)}
        errors, covered, met = [], True, True
        for r in answer:
            truth = exact[(r[group] if group else None, r["aggregate"])]
            if truth is None or r["estimate"] is None:
                continue
            errors.append(abs(r["estimate"] - float(truth)) / abs(float(truth)))
            covered &= r["low"] - 1e-9 * abs(float(truth)) <= float(truth) <= r["high"] + 1e-9 * abs(float(truth))
            met &= bool(r["tolerance_met"])
        first = answer[0]
        row = {"tolerance": tolerance, "seconds": seconds, "jobs": jobs, "fraction": first["fraction"],
               "rows_read": first["rows_read"], "bytes_read": first["bytes_read"],
               "max_rel_error": max(errors) if errors else None, "all_covered": covered,
               "all_met": met, "answers": len(answer),
               "reasons": sorted({r["reason"] for r in answer if r["reason"]})[:3]}
        rows.append(row)
        logger.info("%s tol=%s: %.2fs jobs=%d fraction=%s rows=%d bytes=%d err=%s met=%s", name,
                    tolerance, seconds, jobs, row["fraction"], row["rows_read"], row["bytes_read"],
                    row["max_rel_error"], met)
    assert exact_q.keys() == exact.keys()
    paired = _paired_ratio(lambda: _exact(table.to_df(), group, texts),
                           lambda: table.approx(aggregates, group_by=group,
                                                tolerance=GOAL_TOLERANCE).collect())
    return {"name": name, "group": group, "aggregates": aggregates, "job_floor": _job_floor(spark),
            "split": _split(spark, table, aggregates, group, GOAL_TOLERANCE),
            "goal_by_spark": by_spark, "paired": paired,
            "load": [load_at_start, os.getloadavg()[0]],
            "parquet": {"seconds": parquet_s, "bytes": parquet_io.bytes, "rows": parquet_io.rows_scanned},
            "qbeast_exact": {"seconds": qbeast_s, "bytes": qbeast_io.bytes, "rows": qbeast_io.rows_scanned},
            "approx": rows}


def _write(spark, source: str, name: str, columns: tuple[str, ...], cube_size: int,
           reuse: bool = False) -> str:
    import qbeast

    if reuse and (WORK / f"approx-{name}" / "_delta_log").is_dir():
        return str(WORK / f"approx-{name}")  # written by an earlier run from the same data
    path = fresh_dir(f"approx-{name}")
    started = time.perf_counter()
    qbeast.write(spark.read.parquet(source), str(path), ",".join(columns), cube_size=cube_size)
    logger.info("wrote %s in %.1fs", name, time.perf_counter() - started)
    return str(path)


def report(results: list[dict[str, Any]], facts: dict[str, Any]) -> str:
    lines = ["# Approximate aggregates (`QbeastTable.approx`)", "",
             f"Generated by `benchmarks/bench_approx.py` (median of {TIMED_RUNS} timed runs after one "
             "warm-up each; "
             "bytes and rows from Spark's scan metrics, summed over an answer's steps). "
             "Confidence 0.95. \"covered\": every interval holds the exact value; \"met\": "
             "every answer says `tolerance_met`.", "",
             "A step of the growing sample whose band is small is folded on the driver. Its rows "
             "are read in this process by pyarrow, without a Spark job, when the band's planned "
             "file prefixes are local and at most 32 MB and no filter needs Spark "
             "(`qbeast/spark/read/local_band.py`; rows and bytes then counted by Spark's rules: "
             "the rows of the row groups read, the bytes of the prefixes), else by one scan-only "
             "Spark job (the all-null stratum and the first band share it). A large band is "
             "folded by Spark. \"jobs\" counts the Spark jobs of one answer; each pays the fixed "
             "cost of a Spark job on this machine (\"job floor\": the median time to collect one "
             "row), whatever it reads, while an exact aggregate is one job over every row. "
             "\"read by Spark\" repeats the 1% answer with every band read by Spark (the reads "
             "before small bands were read in this process), in the same run.", "",
             "The machine (2 cores) is shared with other work: the 1-minute load average at the "
             "start and end of each table's measurements is given, and the goal's speed-up is also "
             "measured as the median ratio of exact and approximate answers timed alternately, "
             "which a change of load between phases of the run cannot bias.", "",
             f"Machine: {facts.get('cpu', '?')}, Spark {facts.get('pyspark', '?')}.", ""]
    for res in results:
        parquet, exact = res["parquet"], res["qbeast_exact"]
        load = res.get("load")
        lines += [f"## {res['name']}", "",
                  f"Aggregates {', '.join(res['aggregates'])}"
                  + (f" by `{res['group']}`" if res["group"] else "") + ".", "",
                  f"Exact over plain parquet: {parquet['seconds']:.2f} s, {parquet['bytes']:,} bytes, "
                  f"{parquet['rows']:,} rows. Exact over the Qbeast table: {exact['seconds']:.2f} s, "
                  f"{exact['bytes']:,} bytes, {exact['rows']:,} rows. Job floor: "
                  f"{res['job_floor']:.2f} s."
                  + (f" Load average {load[0]:.1f} at the start, {load[1]:.1f} at the end." if load
                     else ""), "",
                  "| tolerance | fraction | max rel. error | covered | met | rows read | bytes read "
                  "| less data vs exact | jobs | time (s) | speed-up vs exact qbeast | vs parquet |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in res["approx"]:
            err = "-" if row["max_rel_error"] is None else f"{row['max_rel_error']:.4%}"
            less = exact["bytes"] / row["bytes_read"] if row["bytes_read"] else float("inf")
            lines.append(
                f"| {row['tolerance']:g} | {row['fraction']:g} | {err} | {row['all_covered']} | "
                f"{row['all_met']} | {row['rows_read']:,} | {row['bytes_read']:,} | {less:.1f}x | "
                f"{row['jobs']} | "
                f"{row['seconds']:.2f} | {exact['seconds'] / row['seconds']:.2f}x | "
                f"{parquet['seconds'] / row['seconds']:.2f}x |")
        by_spark = res.get("goal_by_spark")
        if by_spark:
            lines += ["", f"At 1% read by Spark: {by_spark['seconds']:.2f} s, {by_spark['jobs']} "
                      f"Spark job(s), {exact['seconds'] / by_spark['seconds']:.2f}x the speed of "
                      "the exact aggregate; "
                      + ("the same answer." if by_spark["same_answer"] else
                         "a DIFFERENT answer from the one read in this process.")]
        goal = next((row for row in res["approx"] if row["tolerance"] == GOAL_TOLERANCE), None)
        if goal is not None and goal["bytes_read"] and goal["seconds"]:
            less = exact["bytes"] / goal["bytes_read"]
            faster = exact["seconds"] / goal["seconds"]
            paired = res.get("paired")
            both = faster if paired is None else min(faster, paired["median"])
            lines += ["", f"Goal at 1% tolerance (>= 10x less data, >= 5x faster than the exact "
                      f"aggregate of the same table): {less:.1f}x less data "
                      f"({'met' if less >= 10 else 'NOT met'}), {faster:.2f}x the speed from the "
                      "medians above"
                      + (f", {paired['median']:.2f}x as the median of {paired['pairs']} "
                         f"alternating pairs (from {paired['min']:.2f}x to {paired['max']:.2f}x)"
                         if paired else "")
                      + f" ({'met' if both >= 5 else 'NOT met'}); the answer ran {goal['jobs']} "
                      f"Spark job(s)."]
        split = res.get("split")
        if split:
            lines += ["", f"Where the time of an answer at 1% goes (median of {TIMED_RUNS} answers "
                      "after a warm-up, each phase timed around the engine function that runs it, "
                      "medians per phase; \"plan the read\" is the rest: loading the snapshot, "
                      "planning the files, the row count):", "", "| phase | seconds |", "|---|---|"]
            lines += [f"| {phase} | {seconds:.3f} |" for phase, seconds in split.items()]
        reasons = sorted({r for row in res["approx"] for r in row["reasons"]})
        if reasons:
            lines += ["", "Reasons given where the tolerance was not met:", ""]
            lines += [f"- {r}" for r in reasons]
        lines.append("")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=4_000_000, help="rows of the generated table")
    parser.add_argument("--tpcds-sf", type=int, default=1, help="TPC-DS scale factor (0: skip)")
    parser.add_argument("--driver-memory", default="6g")
    parser.add_argument("--reuse", action="store_true",
                        help="keep the Qbeast tables an earlier run wrote (same sizes)")
    parser.add_argument("--report-only", action="store_true",
                        help="rewrite the report from the last run's .data/results-approx.json")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    raw = HERE / ".data" / "results-approx.json"
    if args.report_only:
        (HERE / "results" / "approx.md").write_text(report(json.loads(raw.read_text()), machine_facts()))
        return
    spark = spark_session(args.driver_memory)
    results = []
    data = generate("uniform", args.rows)
    path = _write(spark, str(data.path), f"uniform-{args.rows}", RANGE_COLUMNS["uniform"],
                  max(1_000, args.rows // 100), args.reuse)
    results.append(measure(spark, f"uniform, {args.rows:,} rows (indexed on x, y, z)", path,
                           str(data.path), None, ["count(*)", "sum(value)", "avg(value)"]))
    if args.tpcds_sf:
        sales = tpcds_store_sales(args.tpcds_sf)
        path = _write(spark, str(sales.path), f"tpcds-sf{args.tpcds_sf}", RANGE_COLUMNS["tpcds"],
                      max(1_000, sales.rows // 100), args.reuse)
        results.append(measure(spark, f"TPC-DS store_sales SF{args.tpcds_sf}, {sales.rows:,} rows "
                               "(indexed on ss_cdemo_sk, ss_hdemo_sk)", path, str(sales.path),
                               "ss_store_sk", ["sum(ss_net_paid)"]))
    facts = machine_facts()
    (HERE / ".data").mkdir(exist_ok=True)
    raw.write_text(json.dumps(results, indent=2, default=str))
    out = HERE / "results" / "approx.md"
    out.write_text(report(results, facts))
    logger.info("wrote %s", out)


if __name__ == "__main__":
    main()
