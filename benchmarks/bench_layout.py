"""Index effectiveness (issue 20): does a sample of fraction f read about f of the bytes, and does a
box read few files, as tables grow by appends, on skewed data and on TPC-DS?

One run measures two versions of the engine on the same data, in separate processes (each with its
own Spark session, run one after the other):

* **today**: the engine at ``--baseline-ref`` (default ``main``), extracted with ``git archive``
  into ``.data/baseline-src/<commit>/`` and put first on ``PYTHONPATH``;
* **branch**: the engine of this checkout.

and, once, the layouts a user would use instead: Spark's plain parquet write (snappy, as qbeast's
files) and the ``deltalake`` copy Z-ordered on the indexed columns (target file size: the plain
parquet bytes of ``cube_size`` rows, i.e. one target file).

Data sets (``datasets.py``): ``uniform`` and ``ecommerce`` (the skewed set) indexed on their three
range columns, TPC-DS ``store_sales`` SF1 (DuckDB's ``tpcds`` extension) on ``ss_cdemo_sk,
ss_hdemo_sk`` with cube size 300,000, and the incremental scenario: 30 appends of 100k rows
indexed on ``event_time, user_id`` with cube size 50,000, each day's times after the previous
day's, each append followed by the dbt model's default maintenance (what the materialization runs
by default after a write: ``QbeastTable.optimize(max_rewrite_ratio=...)``, the tiered layout,
when ``optimize_after_run`` defaults to on, nothing otherwise).

Figures, per version and data set:

* ``bytes read / (f x table bytes)`` of ``QbeastTable.sample(f)`` for f in {0.01, 0.05, 0.1, 0.2,
  0.5}, from Spark's scan metrics; the goal (<= 1.2) applies where ``f x table bytes`` is at
  least one target file (the plain parquet bytes of ``cube_size`` rows);
* sample accuracy: the sample's count equals the exact count of ``hash(cols) < Weight(f)`` over
  the source rows (checked; a mismatch aborts), and its distance to ``f x N``;
* files read by 2-D / 3-D boxes at 0.1% / 1% / 10% selectivity (3 seeded boxes each; counts
  checked against numpy) and, in the incremental scenario, by one-day ranges on ``event_time``,
  against the Z-ordered Delta copy (files whose min/max overlap the box, Delta's skipping rule);
* table bytes / plain parquet bytes; write time (the best of the ``--repeat`` writes of the full
  run and of ``--write-rounds`` extra rounds that time only the writes, the two versions'
  processes alternating, so that the machine's drift between the two full runs does not decide
  a 10% goal; the incremental scenario: the sum of its appends and maintenance, the best of
  the full run's and one more run per round);
* incremental: revisions with live files, bytes written by maintenance per byte appended.

Run ``.venv/bin/python benchmarks/bench_layout.py`` (about 15 minutes on 2 cores, 21 with
``--write-rounds 4``; ``--quick`` for small data). Raw results go to
``.data/layout-results.json``, the report to ``results/layout.md``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import logging
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from datasets import DATA_ROOT, Dataset, daily_events, generate, tpcds_store_sales  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.layout")

FRACTIONS = (0.01, 0.05, 0.1, 0.2, 0.5)
SELECTIVITIES = (0.001, 0.01, 0.1)
BOXES_PER_SELECTIVITY = 3
GOAL_RATIO = 1.2
RESULTS = DATA_ROOT / "layout-results.json"
REPORT = HERE / "results" / "layout.md"


# -- the data sets ---------------------------------------------------------------------------------


def single_write_sets(quick: bool) -> list[dict[str, Any]]:
    """(name, data set, indexed columns, cube size) of the single-write sets."""
    rows = 200_000 if quick else 2_000_000
    cube = 20_000 if quick else 100_000
    sets = [
        {"name": "uniform", "data": generate("uniform", rows), "columns": ("x", "y", "z"), "cube": cube},
        {"name": "skewed (ecommerce)", "data": generate("ecommerce", rows),
         "columns": ("event_time", "user_id", "price"), "cube": cube},
    ]
    if not quick:
        sets.append({"name": "TPC-DS store_sales SF1", "data": tpcds_store_sales(1),
                     "columns": ("ss_cdemo_sk", "ss_hdemo_sk"), "cube": 300_000})
    return sets


def incremental_days(quick: bool) -> tuple[list[Dataset], int]:
    """The daily appends and the cube size of the incremental scenario."""
    if quick:
        return daily_events(8, 20_000), 10_000
    return daily_events(30, 100_000), 50_000


def _values(files: list[str], columns: tuple[str, ...]) -> dict[str, np.ndarray]:
    import pyarrow.dataset as pads

    table = pads.dataset(files, format="parquet").to_table(columns=list(columns))
    out = {}
    for c in columns:
        col = table.column(c)
        if str(col.type).startswith("timestamp"):
            col = col.cast("int64")  # microseconds, as the SQL literals below
        out[c] = np.asarray(col.to_numpy())
    return out


def boxes(values: dict[str, np.ndarray], selectivity: float, count: int, seed: int) -> list[dict]:
    """``count`` boxes ``{column: (lo, hi)}`` (inclusive) of about ``selectivity`` of the rows.

    As ``bench_ranges._boxes`` (a share ``selectivity**(1/d)`` of each column's values from a
    seeded random quantile), over the non-null values (nulls are NaN here and match no box).
    """
    rng = np.random.default_rng(seed)
    share = selectivity ** (1.0 / len(values))
    ordered = {}
    for c, v in values.items():
        v = np.sort(v)
        ordered[c] = v[~np.isnan(v)] if v.dtype.kind == "f" else v
    out = []
    for _ in range(count):
        box = {}
        for column, sorted_values in ordered.items():
            n = len(sorted_values)
            start = rng.uniform(0.0, 1.0 - share)
            lo, hi = sorted_values[int(start * (n - 1))], sorted_values[int((start + share) * (n - 1))]
            box[column] = (lo.item(), hi.item())
        out.append(box)
    return out


def timestamp_literal(micros: int) -> str:
    """A SQL ``TIMESTAMP`` literal of an instant in microseconds (the sessions run in UTC).

    Literals, not ``timestamp_micros(n)``: every engine version prunes files on a literal, while
    only versions from b66d51c on understand the epoch functions, so literals keep the comparison
    with *today* about the layout and not about the filter parser.
    """
    instant = datetime.datetime.fromtimestamp(0, datetime.timezone.utc) + datetime.timedelta(
        microseconds=int(micros))
    return f"TIMESTAMP'{instant.strftime('%Y-%m-%d %H:%M:%S.%f')}'"


def box_sql(box: dict[str, tuple[Any, Any]], timestamps: set[str]) -> str:
    parts = []
    for column, (lo, hi) in box.items():
        if column in timestamps:
            parts.append(f"{column} BETWEEN {timestamp_literal(lo)} AND {timestamp_literal(hi)}")
        else:
            parts.append(f"{column} BETWEEN {lo!r} AND {hi!r}")
    return " AND ".join(parts)


def qualifying(values: dict[str, np.ndarray], box: dict) -> int:
    mask = np.ones(len(next(iter(values.values()))), dtype=bool)
    for column, (lo, hi) in box.items():
        mask &= (values[column] >= lo) & (values[column] <= hi)
    return int(mask.sum())


def box_queries(values: dict[str, np.ndarray], columns: tuple[str, ...]) -> list[dict[str, Any]]:
    """The seeded 2-D / 3-D boxes of one set, with their exact row counts (same in every process)."""
    out = []
    for dims in (2, 3):
        if len(columns) < dims:
            continue
        sub = {c: values[c] for c in columns[:dims]}
        for s_index, selectivity in enumerate(SELECTIVITIES):
            for box in boxes(sub, selectivity, BOXES_PER_SELECTIVITY, seed=1000 * dims + s_index):
                out.append({"dims": dims, "selectivity": selectivity, "box": box,
                            "rows": qualifying(sub, box)})
    return out


def day_queries(values: dict[str, np.ndarray], days: int) -> list[dict[str, Any]]:
    """One-day ranges on ``event_time`` (first, middle and last day of the scenario)."""
    day_us = 86_400_000_000
    start = int(values["event_time"].min()) // day_us * day_us
    out = []
    for day in sorted({0, days // 2, days - 1}):
        lo, hi = start + day * day_us, start + (day + 1) * day_us - 1
        box = {"event_time": (lo, hi)}
        out.append({"dims": 1, "selectivity": 1 / days, "box": box, "rows": qualifying(values, box),
                    "day": day})
    return out


# -- worker: one engine version ---------------------------------------------------------------------


def _spark():
    from measure import spark_session

    return spark_session()


def _active(path: str) -> list[Any]:
    from qbeast.delta.log import DeltaLog

    return list(DeltaLog.for_path(path).snapshot().files.values())


def _table_facts(path: str) -> dict[str, Any]:
    from qbeast.core.blocks import decode_tags

    files = _active(path)
    revisions = {decode_tags(f.tags).revision_id for f in files}
    blocks = sum(len(decode_tags(f.tags).blocks) for f in files)
    return {"files": len(files), "bytes": int(sum(f.size for f in files)),
            "revisions_live": len(revisions), "blocks": blocks}


def tie_spread(sum_squares: int, rows: int, fraction: float) -> float:
    """Standard deviation of a sample's count, relative to ``f x N``, that ties alone cause.

    Rows sharing one weight (equal indexed keys, or nulls in every indexed column, which hash to
    the seed) enter a sample together. Were the distinct weights uniformly random, each group of
    ``g`` rows would enter with probability ``f``, so the count's variance is
    ``f (1 - f) sum g^2``: with unique keys that is the binomial ``f (1 - f) N``, with ties more.
    A count goal tighter than about two of these cannot hold for every seed of the data.
    """
    return math.sqrt(fraction * (1 - fraction) * sum_squares) / (fraction * rows)


def _source_weights(spark, files: list[str], columns: tuple[str, ...]) -> tuple[dict[float, int],
                                                                               dict[str, Any]]:
    """The source's weights, in one Spark job over its rows grouped by ``hash(cols)``: the exact
    count of ``hash < Weight(f)`` for every fraction, and how rows share weights (distinct
    weights, the largest group, the sum of g^2 that :func:`tie_spread` takes)."""
    from pyspark.sql import functions as F

    from qbeast.core.weight import weight_from_fraction

    groups = (spark.read.parquet(*files).groupBy(F.hash(*[F.col(c) for c in columns]).alias("h"))
              .count())
    below = [F.sum(F.when(F.col("h") < weight_from_fraction(f), F.col("count")).otherwise(0))
             .alias(f"f{i}") for i, f in enumerate(FRACTIONS)]
    row = groups.agg(F.count(F.lit(1)).alias("weights"), F.max("count").alias("largest"),
                     F.sum(F.col("count") * F.col("count")).alias("sum_squares"), *below).collect()[0]
    exact = {f: int(row[f"f{i}"] or 0) for i, f in enumerate(FRACTIONS)}
    ties = {"distinct_weights": int(row["weights"]), "largest_group": int(row["largest"] or 0),
            "sum_squares": int(row["sum_squares"] or 0)}
    return exact, ties


def _measure_reads(spark, path: str, columns: tuple[str, ...], rows: int, exact: dict[float, int],
                   queries: list[dict[str, Any]], timestamps: set[str]) -> dict[str, Any]:
    from pyspark.sql import functions as F

    from measure import collect_with_io
    from qbeast import QbeastTable

    table = QbeastTable.for_path(spark, path)
    facts = _table_facts(path)
    samples = []
    for f in FRACTIONS:
        (row,), io = collect_with_io(table.sample(f).agg(F.count(F.lit(1))))
        count = int(row[0])
        if count != exact[f]:
            raise AssertionError(f"sample({f}) of {path} returned {count} rows; exactly "
                                 f"{exact[f]} rows have hash < Weight({f})")
        plan = table.read_plan(fraction=f) if hasattr(table, "read_plan") else None
        samples.append({"fraction": f, "files": io.files, "bytes": io.bytes, "rows": count,
                        "blocks": getattr(plan, "blocks_read", None),
                        "ratio": io.bytes / (f * facts["bytes"]),
                        "count_error": (count - f * rows) / (f * rows)})
    boxes_out = []
    for q in queries:
        predicate = box_sql(q["box"], timestamps)
        (row,), io = collect_with_io(table.to_df(filter=predicate).agg(F.count(F.lit(1))))
        if int(row[0]) != q["rows"]:
            raise AssertionError(f"{path} WHERE {predicate}: {row[0]} rows, numpy counts {q['rows']}")
        boxes_out.append({"dims": q["dims"], "selectivity": q["selectivity"], "files": io.files,
                          "bytes": io.bytes})
    return {"table": facts, "samples": samples, "boxes": boxes_out}


def _timed_write(spark, df, path: str, columns: tuple[str, ...], cube: int, mode: str):
    import qbeast

    started = time.perf_counter()
    result = qbeast.write(df, path, ",".join(columns), cube_size=cube, mode=mode)
    return time.perf_counter() - started, result


def _warm_up(spark, work: Path) -> None:
    """One small untimed write before the timed ones: the JVM, Python workers and code paths."""
    warm = generate("uniform", 20_000)
    _timed_write(spark, warm.spark_df(spark), str(work / "warm"), ("x", "y"), 5_000, "overwrite")


def default_maintenance(source: Path) -> bool:
    """Whether the dbt materialization of ``source`` optimizes after a write by default.

    Read from the text of its model config (``optimize_after_run: bool = <default>``) rather than
    imported: the adapter package of another version cannot be put on the path next to dbt-core.
    """
    import re

    text = (source / "dbt" / "adapters" / "qbeast" / "model_config.py").read_text()
    found = re.search(r"^\s*optimize_after_run:\s*bool\s*=\s*(True|False)", text, re.M)
    if found is None:
        raise RuntimeError(f"no optimize_after_run default in {source}'s dbt model config")
    return found.group(1) == "True"


def maintenance_options() -> dict[str, Any]:
    """The optimize options of the dbt materialization's default maintenance in this process's
    engine: the tiering budget where the engine has one (``MAINTENANCE_REWRITE_RATIO``)."""
    from qbeast.core import defaults

    ratio = getattr(defaults, "MAINTENANCE_REWRITE_RATIO", None)
    return {} if ratio is None else {"max_rewrite_ratio": ratio}


def _maintenance_bytes(result: Any) -> int:
    """Bytes the optimize commits of ``result`` added (what maintenance rewrote)."""
    from qbeast.delta.log import DeltaLog

    total = 0
    for commit in getattr(result, "commits", ()):
        log = DeltaLog.for_path(result.path)
        snapshot = log.snapshot(commit.version)
        total += sum(snapshot.files[p].size for p in commit.files_added if p in snapshot.files)
    return total


#: The indexed columns of the incremental scenario.
INCREMENTAL_COLUMNS = ("event_time", "user_id")


def _run_incremental(spark, path: str, days: list[Dataset], cube: int,
                     maintain: bool) -> tuple[float, float, int, int]:
    """The daily appends into ``path``, each followed by the default maintenance when
    ``maintain``: (appends s, maintenance s, bytes appended, bytes maintenance rewrote)."""
    import qbeast

    appended = rewritten = 0
    write_s = maintain_s = 0.0
    for i, day in enumerate(days):
        seconds, result = _timed_write(spark, day.spark_df(spark), path, INCREMENTAL_COLUMNS, cube,
                                       "overwrite" if i == 0 else "append")
        write_s += seconds
        active = {f.path: f.size for f in _active(path)}
        appended += sum(active.get(p, 0) for p in result.files)
        if maintain:
            started = time.perf_counter()
            optimized = qbeast.QbeastTable.for_path(spark, path).optimize(**maintenance_options())
            maintain_s += time.perf_counter() - started
            rewritten += _maintenance_bytes(optimized)
    return write_s, maintain_s, appended, rewritten


def run_worker(args) -> dict[str, Any]:
    """Every measurement of one engine version (this process's ``qbeast``)."""
    import qbeast

    from measure import fresh_dir

    spark = _spark()
    # fresh: an overwrite keeps the files it replaces, so reusing a previous run's folders would
    # grow them by a table per run (they reached 9 GB)
    work = fresh_dir(f"layout-{args.label}")
    out: dict[str, Any] = {"label": args.label, "qbeast": str(Path(qbeast.__file__).parent),
                           "sets": [], "incremental": None}
    _warm_up(spark, work)
    for spec in ([] if args.incremental_only else single_write_sets(args.quick)):
        data: Dataset = spec["data"]
        columns, cube = spec["columns"], spec["cube"]
        times = []
        path = ""
        for attempt in range(args.repeat):
            path = str(work / f"{data.kind}-{attempt}")
            seconds, _ = _timed_write(spark, data.spark_df(spark), path, columns, cube, "overwrite")
            times.append(seconds)
        values = _values(data.files, columns)
        timestamps = {c for c in columns if c == "event_time"}
        exact, ties = _source_weights(spark, data.files, columns)
        reads = _measure_reads(spark, path, columns, data.rows, exact,
                               box_queries(values, columns), timestamps)
        out["sets"].append({"name": spec["name"], "rows": data.rows, "columns": list(columns),
                            "cube_size": cube, "write_s": min(times), "write_times": times,
                            "ties": ties, **reads})
        logger.info("%s %s: write %.1fs, %s", args.label, spec["name"], min(times), reads["table"])
    days, cube = incremental_days(args.quick)
    columns = INCREMENTAL_COLUMNS
    path = str(work / "incremental")
    maintain = args.maintenance
    write_s, maintain_s, appended, rewritten = _run_incremental(spark, path, days, cube, maintain)
    files = [f for d in days for f in d.files]
    values = _values(files, columns)
    rows = sum(d.rows for d in days)
    exact, ties = _source_weights(spark, files, columns)
    reads = _measure_reads(spark, path, columns, rows, exact,
                           day_queries(values, len(days)) + box_queries(values, columns), {"event_time"})
    out["incremental"] = {"days": len(days), "rows": rows, "columns": list(columns), "cube_size": cube,
                          "maintenance": maintain, "write_s": write_s, "maintenance_s": maintain_s,
                          "bytes_appended": appended, "bytes_rewritten": rewritten,
                          "ties": ties, **reads}
    logger.info("%s incremental: %s", args.label, reads["table"])
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return out


#: The key of the incremental scenario's time in a write-only round.
INCREMENTAL_ROUND_KEY = "incremental"


def run_writes(args) -> dict[str, Any]:
    """The best of ``--repeat`` timed writes of each single-write set (``--role writes``) and one
    more run of the incremental scenario's appends and maintenance, nothing else: a round of
    the alternating write timing (see the module docstring). Repeated because the first write
    of a set in a process is the slowest (1.0-1.6x the second, measured)."""
    from measure import fresh_dir

    spark = _spark()
    work = fresh_dir(f"layout-{args.label}-timing")
    _warm_up(spark, work)
    seconds = {}
    for spec in single_write_sets(args.quick):
        data: Dataset = spec["data"]
        seconds[spec["name"]] = min(
            _timed_write(spark, data.spark_df(spark), str(work / data.kind), spec["columns"],
                         spec["cube"], "overwrite")[0] for _ in range(args.repeat))
    # the incremental scenario once more (its appends and maintenance), from a fresh folder
    days, cube = incremental_days(args.quick)
    write_s, maintain_s, _, _ = _run_incremental(spark, str(work / "incremental"), days, cube,
                                                 args.maintenance)
    seconds[INCREMENTAL_ROUND_KEY] = write_s + maintain_s
    spark.stop()
    shutil.rmtree(work, ignore_errors=True)
    return {"label": args.label, "write_s": seconds}


# -- peers: plain parquet and the Z-ordered Delta copy ----------------------------------------------


def run_peers(args) -> dict[str, Any]:
    from bench_ranges import ZorderFiles
    from bench_write_peers import zorder_delta
    from measure import folder_bytes, fresh_dir

    spark = _spark()
    out: dict[str, Any] = {"sets": {}}
    days, day_cube = incremental_days(args.quick)
    specs = [(s["name"], s["data"].files, s["columns"], s["cube"], s["data"].rows)
             for s in single_write_sets(args.quick)]
    specs.append(("incremental", [f for d in days for f in d.files], ("event_time", "user_id"),
                  day_cube, sum(d.rows for d in days)))
    for name, files, columns, cube, rows in specs:
        p_dir = fresh_dir(f"layout-parquet-{len(out['sets'])}")
        spark.read.parquet(*files).write.option("compression", "snappy").parquet(str(p_dir))
        _, p_bytes = folder_bytes(p_dir)
        # the same rows with version 2 pages: what the encodings alone save, layout aside
        v2_dir = fresh_dir(f"layout-parquet-v2-{len(out['sets'])}")
        (spark.read.parquet(*files).write.option("compression", "snappy")
         .option("parquet.writer.version", "PARQUET_2_0").parquet(str(v2_dir)))
        _, v2_bytes = folder_bytes(v2_dir)
        target = max(64 * 1024, int(p_bytes / rows * cube))
        z_dir = fresh_dir(f"layout-zorder-{len(out['sets'])}")
        import pyarrow.dataset as pads
        from deltalake import write_deltalake

        write_deltalake(str(z_dir), pads.dataset(files, format="parquet").scanner().to_reader(),
                        mode="overwrite")
        zorder_delta(z_dir, columns, target)
        zorder = ZorderFiles(str(z_dir))
        values = _values(files, columns)
        queries = box_queries(values, columns)
        if name == "incremental":
            queries = day_queries(values, len(days)) + queries
        boxes_out = []
        for q in queries:
            box = q["box"]
            if "event_time" in box:  # the Delta stats hold timestamps; compare as microseconds
                zbox = dict(box)
                lo, hi = box["event_time"]
                zbox["event_time"] = (np.datetime64(int(lo), "us"), np.datetime64(int(hi), "us"))
                paths, size = _zorder_select(zorder, zbox)
            else:
                paths, size = zorder.select(box)
            boxes_out.append({"dims": q["dims"], "selectivity": q["selectivity"], "files": len(paths),
                              "bytes": size})
        out["sets"][name] = {"parquet_bytes": p_bytes, "parquet_v2_bytes": v2_bytes,
                             "target_file_bytes": target,
                             "zorder_files": zorder.total_files, "zorder_bytes": zorder.total_bytes,
                             "zorder_boxes": boxes_out}
        logger.info("peers %s: parquet %d bytes, z-order %d files", name, p_bytes, zorder.total_files)
    spark.stop()
    return out


def _zorder_select(zorder, box) -> tuple[list[str], int]:
    """Z-order files whose min/max overlap the box, timestamps compared as datetime64[us]."""
    keep = np.ones(zorder.total_files, dtype=bool)
    for column, (lo, hi) in box.items():
        mins = zorder.actions[f"min.{column}"].to_numpy(zero_copy_only=False)
        maxs = zorder.actions[f"max.{column}"].to_numpy(zero_copy_only=False)
        if np.issubdtype(np.asarray(mins).dtype, np.datetime64):
            mins, maxs = mins.astype("datetime64[us]"), maxs.astype("datetime64[us]")
        keep &= (mins <= hi) & (maxs >= lo)
    paths = [p for p, k in zip(zorder.actions["path"].to_pylist(), keep) if k]
    size = int(np.asarray(zorder.actions["size_bytes"].to_numpy())[keep].sum())
    return paths, size


# -- driver -------------------------------------------------------------------------------------------


def baseline_source(ref: str) -> Path:
    """The ``qbeast`` and ``dbt`` packages at ``ref``, extracted once under ``.data/baseline-src``."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=REPO, text=True, capture_output=True,
                            check=True).stdout.strip()
    target = DATA_ROOT / "baseline-src" / commit
    if not (target / "qbeast" / "__init__.py").exists():
        target.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit, "qbeast", "dbt/adapters/qbeast/model_config.py"],
                                 cwd=REPO,
                                 capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(target)], input=archive, check=True)
    return target


def _head() -> str:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, text=True,
                          capture_output=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=REPO,
                           text=True, capture_output=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def _run_child(role: str, label: str, source: Path, args) -> dict[str, Any]:
    out = DATA_ROOT / (f"layout-{label}.json" if role != "writes" else f"layout-{label}-writes.json")
    env = dict(os.environ)
    # the version's qbeast package only (its dbt folder holds just the model config, read as text)
    env["PYTHONPATH"] = os.pathsep.join([str(source), str(HERE)])
    cmd = [sys.executable, str(Path(__file__).resolve()), "--role", role, "--label", label,
           "--out", str(out), "--repeat", str(args.repeat)] + (["--quick"] if args.quick else [])
    if default_maintenance(source):
        cmd.append("--maintenance")
    logger.info("running %s (%s) with %s", label, role, source)
    subprocess.run(cmd, env=env, check=True)
    return json.loads(out.read_text())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small data sets (a check that it runs)")
    parser.add_argument("--baseline-ref", default="main", help="git ref of 'today's' engine")
    parser.add_argument("--repeat", type=int, default=2, help="writes per single-write set (best kept)")
    parser.add_argument("--write-rounds", type=int, default=2,
                        help="extra rounds timing only the writes (single writes and the incremental "
                             "appends), the versions alternating")
    parser.add_argument("--only-report", action="store_true", help="redraw the report from the raw results")
    parser.add_argument("--role", choices=("qbeast", "peers", "writes"), help=argparse.SUPPRESS)
    parser.add_argument("--label", default="branch", help=argparse.SUPPRESS)
    parser.add_argument("--out", help=argparse.SUPPRESS)
    parser.add_argument("--maintenance", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--incremental-only", action="store_true",
                        help="with --role qbeast: only the incremental scenario (a re-measure of one version)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    for noisy in ("py4j", "qbeast.spark", "qbeast.operations", "qbeast.delta", "qbeast.storage"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
    if args.role:
        workers = {"qbeast": run_worker, "peers": run_peers, "writes": run_writes}
        result = workers[args.role](args)
        Path(args.out).write_text(json.dumps(result, indent=1, default=str))
        return 0
    if not args.only_report:
        started = time.perf_counter()
        load_at_start = os.getloadavg()[0]
        base = baseline_source(args.baseline_ref)
        results = {
            "quick": args.quick, "baseline_ref": args.baseline_ref,
            "baseline_commit": base.name,
            "peers": _run_child("peers", "peers", REPO, args),
            "today": _run_child("qbeast", "today", base, args),
        }
        # the commit the branch's process runs (taken when it starts; "+dirty" if uncommitted)
        results["branch_commit"] = _head()
        results["branch"] = _run_child("qbeast", "branch", REPO, args)
        rounds = []
        for r in range(args.write_rounds):
            # the full runs went today then branch: start the alternation with branch
            order = ("branch", "today") if r % 2 == 0 else ("today", "branch")
            rounds.append({label: _run_child("writes", label, REPO if label == "branch" else base,
                                             args)["write_s"] for label in order})
        results["write_rounds"] = rounds
        results["elapsed_s"] = time.perf_counter() - started
        results["load_average"] = [load_at_start, os.getloadavg()[0]]
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1, default=str))
    results = json.loads(RESULTS.read_text())
    out = REPORT if not results["quick"] else DATA_ROOT / "layout-quick.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(render(results))
    print(f"report: {out}")
    return 0


# -- report -------------------------------------------------------------------------------------------


def _ok(good: bool | None) -> str:
    return "" if good is None else (" ✓" if good else " ✗")


def _best_write(results: dict, label: str, name: str, figures: dict) -> float:
    """A version's write time of a set: the best of the full run's writes and of the write-only
    rounds; for the incremental scenario, the best of its runs' appends plus maintenance."""
    if "maintenance_s" in figures:
        name, own = INCREMENTAL_ROUND_KEY, figures["write_s"] + figures["maintenance_s"]
    else:
        own = figures["write_s"]
    extra = [r[label][name] for r in results.get("write_rounds", ()) if name in r.get(label, {})]
    return min([own, *extra])


def _write_samples(results: dict) -> int:
    """How many timed writes per version and single-write set the report's best is taken of (each
    write-only round keeps the best of as many writes as the full run)."""
    today = results["today"]["sets"]
    full = len(today[0].get("write_times", [1])) if today else 0
    return full * (1 + len(results.get("write_rounds", ())))


def _set_rows(results: dict) -> list[tuple[str, dict, dict, dict]]:
    """(name, today's figures, branch's figures, peers' figures) per data set."""
    rows = []
    for i, today in enumerate(results["today"]["sets"]):
        branch = results["branch"]["sets"][i]
        rows.append((today["name"], today, branch, results["peers"]["sets"][today["name"]]))
    inc_t, inc_b = results["today"]["incremental"], results["branch"]["incremental"]
    name = f"incremental ({inc_t['days']} appends)"
    rows.append((name, inc_t, inc_b, results["peers"]["sets"]["incremental"]))
    return rows


def _short(commit: str) -> str:
    """A commit as the report names it: 8 hex digits, and ``+dirty`` for an uncommitted tree."""
    return commit[:8] + ("+dirty" if commit.endswith("+dirty") else "")


def _load(results: dict) -> str:
    """The machine's 1-minute load average at the start and the end of the run, when recorded."""
    load = results.get("load_average")
    if not load:
        return ""
    return (f"; 1-minute load average {load[0]:.1f} at the start and {load[1]:.1f} at the end "
            "(about 2 is the benchmark's own Spark work)")


def render(results: dict) -> str:
    lines = [
        "# Index effectiveness (issue 20): samples, boxes, size and appends",
        "",
        f"`benchmarks/bench_layout.py`{' --quick' if results['quick'] else ''}: *today* = "
        f"`{results['baseline_ref']}` ({results['baseline_commit'][:8]}), *branch* = "
        f"{_short(results['branch_commit'])}; both measured in this run on the same data, "
        f"{results.get('elapsed_s', 0) / 60:.0f} minutes on 2 cores{_load(results)}.",
        "",
        "## Sampling: bytes read / (f × table bytes)",
        "",
        f"Goal ≤ {GOAL_RATIO} where f × table bytes is at least one target file (the plain parquet "
        "bytes of cube-size rows); cells below that size are in parentheses. Every sample returned "
        "exactly the rows with `hash < Weight(f)` (checked).",
        "",
        "| data set | version | " + " | ".join(f"f={f}" for f in FRACTIONS) + " | max count error |",
        "|---|---|" + "---|" * len(FRACTIONS) + "---|",
    ]
    for name, today, branch, peers in _set_rows(results):
        for label, fig in (("today", today), ("branch", branch)):
            cells = []
            for s in fig["samples"]:
                big = s["fraction"] * fig["table"]["bytes"] >= peers["target_file_bytes"]
                text = f"{s['ratio']:.2f}"
                cells.append(f"{text}{_ok(s['ratio'] <= GOAL_RATIO)}" if big else f"({text})")
            err = max(abs(s["count_error"]) for s in fig["samples"])
            lines.append(f"| {name} | {label} | " + " | ".join(cells) + f" | {err:.2%} |")
    lines += ["", "Count error, signed, against what ties among the weights alone make a count vary "
              "by. Rows with equal indexed keys (or nulls in every indexed column, which hash to the "
              "seed) share one weight and enter a sample together; *tie sd* is the standard "
              "deviation of the count, relative to f × N, that this sharing gives were the distinct "
              "weights random (`tie_spread`). With unique keys it is the binomial one.", "",
              "| data set | rows | distinct weights | largest tie (rows) | "
              + " | ".join(f"f={f}" for f in FRACTIONS) + " | tie sd at f=0.01 / 0.1 |",
              "|---|---|---|---|" + "---|" * len(FRACTIONS) + "---|"]
    for name, _, branch, _ in _set_rows(results):
        ties = branch.get("ties")
        if not ties:
            continue
        rows = branch["rows"]
        errors = " | ".join(f"{s['count_error']:+.2%}" for s in branch["samples"])
        spread = " / ".join(f"{tie_spread(ties['sum_squares'], rows, f):.2%}" for f in (0.01, 0.1))
        lines.append(f"| {name} | {rows:,} | {ties['distinct_weights']:,} | "
                     f"{ties['largest_group']:,} ({ties['largest_group'] / rows:.2%}) | {errors} | "
                     f"{spread} |")
    lines += ["", "Files (and blocks, where the planner reports them) the samples open (with band "
              "row groups, many only up to a prefix: the bytes above count what is read):", "",
              "| data set | version | files | " + " | ".join(f"f={f}" for f in FRACTIONS) + " |",
              "|---|---|---|" + "---|" * len(FRACTIONS)]
    for name, today, branch, _ in _set_rows(results):
        for label, fig in (("today", today), ("branch", branch)):
            cells = [f"{s['files']}" + (f" ({s['blocks']} blocks)" if s.get("blocks") is not None else "")
                     for s in fig["samples"]]
            lines.append(f"| {name} | {label} | {fig['table']['files']} | " + " | ".join(cells) + " |")
    lines += ["", "## Boxes: files read (mean of 3 boxes) vs the Z-ordered Delta copy", "",
              "Goal: branch ≤ today and branch < Z-order.", "",
              "Bytes read by the same boxes: branch MB / today MB (boxes read whole files; a "
              "sample may read a prefix of a file, see the sampling table's bytes).", "",
              "| data set | box | today | branch | Z-order (files in table) | today MB | branch MB (ratio) |",
              "|---|---|---|---|---|---|---|"]
    for name, today, branch, peers in _set_rows(results):
        keys = []
        for b in today["boxes"]:
            key = (b["dims"], b["selectivity"])
            if key not in keys:
                keys.append(key)
        for key in keys:
            def mean(rows, key=key, what="files"):
                vals = [b[what] for b in rows if (b["dims"], b["selectivity"]) == key]
                return sum(vals) / len(vals)
            t, b, z = mean(today["boxes"]), mean(branch["boxes"]), mean(peers["zorder_boxes"])
            tb, bb = mean(today["boxes"], what="bytes") / 1e6, mean(branch["boxes"], what="bytes") / 1e6
            what = "one day" if key[0] == 1 else f"{key[0]}-D {key[1]:.1%}"
            lines.append(f"| {name} | {what} | {t:.1f} | {b:.1f}{_ok(b <= t and b < z)} | "
                         f"{z:.1f} ({peers['zorder_files']}) | {tb:.1f} | {bb:.1f} ({bb / tb if tb else 0:.2f}) |")
    lines += ["", "## Size and write time", "",
              "Goal: table bytes / plain parquet bytes ≤ 1.0; branch write time ≤ 1.1 × today's. "
              f"Single writes: the best of {_write_samples(results)} timed writes per version "
              "(the full run's and the alternating write-only rounds'); the incremental scenario: "
              "its appends plus its maintenance, the best of its runs (the full run's and one per "
              "round). *Parquet* is Spark's default write (snappy, version 1 "
              "pages), the baseline of the goal; *parquet v2* writes the same rows with version 2 pages "
              "(delta encodings), so *branch / v2* shows what the layout itself costs or saves when "
              "both use the same encodings.", "",
              "| data set | rows | parquet MB | parquet v2 MB | today MB (ratio) | branch MB (ratio) | "
              "branch / v2 | Z-order MB | today files | branch files | today write s | "
              "branch write s (ratio) |",
              "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, today, branch, peers in _set_rows(results):
        p = peers["parquet_bytes"]
        tb, bb = today["table"]["bytes"], branch["table"]["bytes"]
        tw = _best_write(results, "today", name, today)
        bw = _best_write(results, "branch", name, branch)
        v2 = peers.get("parquet_v2_bytes")
        v2_cells = f"{v2 / 1e6:.1f}" if v2 else "-"
        v2_ratio = f"{bb / v2:.2f}" if v2 else "-"
        lines.append(
            f"| {name} | {today['rows']:,} | {p / 1e6:.1f} | {v2_cells} | {tb / 1e6:.1f} ({tb / p:.2f}) | "
            f"{bb / 1e6:.1f} ({bb / p:.2f}){_ok(bb / p <= 1.0)} | {v2_ratio} | "
            f"{peers['zorder_bytes'] / 1e6:.1f} | "
            f"{today['table']['files']} | {branch['table']['files']} | {tw:.1f} | "
            f"{bw:.1f} ({bw / tw:.2f}){_ok(bw <= 1.1 * tw)} |")
    inc_t, inc_b = results["today"]["incremental"], results["branch"]["incremental"]
    goal_revisions = math.log2(inc_t["days"])
    lines += ["", "## Incremental scenario", "",
              f"{inc_t['days']} appends of {inc_t['rows'] // inc_t['days']:,} rows on "
              f"`{', '.join(inc_t['columns'])}`, cube size {inc_t['cube_size']:,}, each followed by the "
              "model's default maintenance. Goals: revisions live ≤ log2(days) = "
              f"{goal_revisions:.1f}; bytes rewritten by maintenance per byte appended ≤ 2.", "",
              "| version | default maintenance | revisions live | blocks | bytes appended MB | "
              "rewritten MB | rewritten / appended | appends s | maintenance s |",
              "|---|---|---|---|---|---|---|---|---|"]
    for label, fig in (("today", inc_t), ("branch", inc_b)):
        ratio = fig["bytes_rewritten"] / fig["bytes_appended"] if fig["bytes_appended"] else 0.0
        revs = fig["table"]["revisions_live"]
        lines.append(
            f"| {label} | {'optimize' if fig['maintenance'] else 'none'} | {revs}"
            f"{_ok(revs <= goal_revisions)} | {fig['table']['blocks']} | {fig['bytes_appended'] / 1e6:.1f} | "
            f"{fig['bytes_rewritten'] / 1e6:.1f} | {ratio:.2f}{_ok(ratio <= 2)} | {fig['write_s']:.1f} | "
            f"{fig['maintenance_s']:.1f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.exit(main())
