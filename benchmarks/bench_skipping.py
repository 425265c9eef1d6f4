"""Skipping indexes: what a lookup on a column outside the OTree reads, what planning and the
index cost, against today's engine and the peers, in one run.

Data (``--rows``, default 2,000,000): ``event_time`` and ``user_id`` (the OTree's two columns),
``order_id`` (high cardinality: unique, scattered over the table), ``status`` (low cardinality:
90% ``paid``, 9% ``refunded``, 40 rare statuses of about 0.025% each), ``amount`` and a ``note``.
The same rows are written as

* **qbeast + indexes**: ``skipping_indexes={'order_id': 'bloom', 'status': 'values'}``;
* **qbeast (today)**: the same write without indexes (OTree + min/max stats);
* **parquet + bloom**: Spark's parquet writer with ``parquet.bloom.filter.enabled#order_id`` and
  ``#status`` over the same number of files (its Bloom filters skip row groups inside files);
* **delta z-order**: ``deltalake`` write + ``optimize.z_order(event_time, user_id)``, planned by
  its min/max stats (the engine plans a plain Delta table exactly so).

Queries: a point lookup and a 10-value ``IN`` on ``order_id`` and on ``status`` (rare values).
Files, bytes and rows come from Spark's scan metrics (``measure.collect_with_io``), except the
Z-order copy (its planned files). Also: write time with and without indexes (interleaved
rounds), index bytes / table bytes, and planning time of a point lookup at 100 and 10,000 files
on synthetic logs, with the entries in index files (the layout chosen) and, for the record, the
log size and snapshot load time had they been inlined in the AddFile tags (docs/skipping.md).

    .venv/bin/python benchmarks/bench_skipping.py --rows 2000000 --out benchmarks/results/skipping.json
"""
from __future__ import annotations

import argparse
import base64
import json
import logging
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import collect_with_io, fresh_dir, interleaved, median, spark_session  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.skipping")
INDEXES = {"order_id": "bloom", "status": "values"}
RARE = [f"rare-{i:02d}" for i in range(40)]


def _data(spark, rows: int):
    status = ("CASE WHEN h < 9000 THEN 'paid' WHEN h < 9900 THEN 'refunded' "
              "ELSE concat('rare-', lpad(cast(pmod(h, 40) AS string), 2, '0')) END")
    return spark.range(0, rows, numPartitions=4).selectExpr(
        "id", "pmod(hash(id, 1), 10000) AS h").selectExpr(
        "cast(id AS bigint) AS event_time",
        "cast(pmod(hash(id, 2), 100000) AS int) AS user_id",
        f"cast(pmod(id * 2654435761, {rows * 4 + 1}) AS bigint) AS order_id",
        f"{status} AS status",
        "round(pmod(hash(id, 3), 100000) / 100.0, 2) AS amount",
        "concat('note ', cast(pmod(hash(id, 4), 1000) AS string)) AS note")


def _index_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path / "_qbeast_skipping").glob("*.qsi"))


def _data_bytes(path: Path) -> tuple[int, int]:
    files = list(path.glob("*.parquet"))
    return len(files), sum(p.stat().st_size for p in files)


def _write(spark, df, path: Path, cube_size: int, indexes: dict | None) -> float:
    import qbeast

    fresh_dir(path.name)  # a new table every round: an overwrite would lay out differently
    started = time.perf_counter()
    qbeast.write(df, str(path), "event_time,user_id", cube_size=cube_size, mode="overwrite",
                 **({"skipping_indexes": indexes} if indexes else {}))
    return time.perf_counter() - started


def run_lookups(spark, rows: int, cube_size: int, write_rounds: int) -> dict[str, Any]:
    from qbeast import QbeastTable

    source = _data(spark, rows).cache()
    source.count()
    with_dir, without_dir = fresh_dir("skipping-indexed"), fresh_dir("skipping-plain")
    times = interleaved({
        "with indexes": lambda: _write(spark, source, with_dir, cube_size, INDEXES),
        "without": lambda: _write(spark, source, without_dir, cube_size, None),
    }, repeat=write_rounds)
    n_files, table_bytes = _data_bytes(with_dir)
    plain_files, _ = _data_bytes(without_dir)
    parquet_dir = fresh_dir("skipping-parquet-bloom")
    (source.repartition(n_files).write.mode("overwrite")
     .option("parquet.bloom.filter.enabled#order_id", "true")
     .option("parquet.bloom.filter.enabled#status", "true")
     .parquet(str(parquet_dir)))
    zorder_dir = fresh_dir("skipping-zorder")
    import pyarrow.dataset as pads
    from deltalake import DeltaTable, write_deltalake

    write_deltalake(str(zorder_dir), pads.dataset(str(without_dir), format="parquet").to_table())
    DeltaTable(str(zorder_dir)).optimize.z_order(["event_time", "user_id"],
                                                 target_size=max(64 * 1024, table_bytes // n_files),
                                                 max_concurrent_tasks=2)
    zorder = QbeastTable.for_path(spark, str(zorder_dir))

    picked = source.where("status = 'paid'").select("order_id").limit(10).collect()
    orders = [int(r.order_id) for r in picked]
    queries = {
        "order_id point": f"order_id = {orders[0]}",
        "order_id IN 10": f"order_id IN ({', '.join(map(str, orders))})",
        "status point (rare)": f"status = '{RARE[0]}'",
        "status IN 10 (rare)": "status IN ({})".format(", ".join(f"'{s}'" for s in RARE[:10])),
    }
    parquet_view = "bench_skipping_parquet"
    spark.read.parquet(str(parquet_dir)).createOrReplaceTempView(parquet_view)
    indexed, plain = QbeastTable.for_path(spark, str(with_dir)), QbeastTable.for_path(spark, str(without_dir))
    results = []
    for name, condition in queries.items():
        row: dict[str, Any] = {"query": name, "filter": condition}
        counts = set()
        for label, read in [
            ("qbeast + indexes", lambda c=condition: indexed.to_df(filter=c).where(c)),
            ("qbeast (today)", lambda c=condition: plain.to_df(filter=c).where(c)),
            ("parquet + bloom", lambda c=condition: spark.table(parquet_view).where(c)),
        ]:
            out, io = collect_with_io(read().groupBy().count())
            counts.add(out[0][0])
            row[label] = {"files": io.files, "bytes": io.bytes, "rows_scanned": io.rows_scanned}
        z_plan = zorder.read_plan(filter=condition)
        row["delta z-order"] = {"files": len(z_plan.files), "bytes": z_plan.selected_bytes,
                                "rows_scanned": None}
        row["index_pruned"] = dict(indexed.read_plan(filter=condition).index_pruned)
        row["matching_rows"] = counts.pop() if len(counts) == 1 else sorted(counts)
        results.append(row)
    source.unpersist()
    return {
        "rows": rows, "cube_size": cube_size, "files": n_files, "files_without_indexes": plain_files,
        "table_bytes": table_bytes, "index_bytes": _index_bytes(with_dir),
        "zorder_files": zorder.read_plan().total_files,
        "write_seconds": {k: median(v) for k, v in times.items()},
        "write_rounds": write_rounds, "queries": results,
    }


# -- planning at 100 and 10,000 files (synthetic logs) -----------------------------------------


def _synthetic(root: Path, files: int, per_commit: int, values_per_file: int, inline: bool,
               indexed: bool) -> tuple[Path, int]:
    """A table of ``files`` AddFiles (no data files: planning never opens them) in commits of
    ``per_commit``, each file holding ``values_per_file`` order ids; entries in index files
    (``indexed``), inlined in the tags (``inline``, the layout not chosen) or none."""
    import pyarrow as pa

    from qbeast.core.skipping import IndexSpec, build_entry, encode_declaration
    from qbeast.core.value_hash import hash_values
    from qbeast.delta.actions import AddFile, Metadata
    from qbeast.delta.log import DeltaLog
    from qbeast.delta.transaction import Transaction
    from qbeast.skipping_files import tagged, write_index_file

    path = fresh_dir(root.name)
    log = DeltaLog.for_path(str(path))
    schema = {"type": "struct", "fields": [
        {"name": "event_time", "type": "long", "nullable": True, "metadata": {}},
        {"name": "order_id", "type": "long", "nullable": True, "metadata": {}}]}
    spec = IndexSpec("order_id", "bloom")
    config = {"qbeast.skippingIndexes": encode_declaration((spec,))} if indexed else {}
    rng = np.random.default_rng(5)
    for start in range(0, files, per_commit):
        adds = []
        entries = {}
        for n in range(start, min(files, start + per_commit)):
            name = f"{uuid.UUID(int=n)}.parquet"
            ids = rng.integers(0, 10**12, values_per_file)
            stats = json.dumps({"numRecords": values_per_file,
                                "minValues": {"event_time": n * 1000, "order_id": 0},
                                "maxValues": {"event_time": n * 1000 + 999, "order_id": 10**12},
                                "nullCount": {"event_time": 0, "order_id": 0}})
            add = AddFile(name, {}, 5_000_000, 0, True, stats, None)
            if indexed or inline:
                hashes, _ = hash_values(pa.array(ids), "long")
                entries[name] = {"order_id": build_entry(spec, "long", hashes, False)}
            if inline:
                payload = entries[name]["order_id"].payload or b""
                add = AddFile(name, {}, 5_000_000, 0, True, stats,
                              {"qbeast.skippingInline": base64.b64encode(payload).decode()})
            adds.append(add)
        if indexed:
            index = write_index_file(log, entries)
            adds = [tagged(a, index) for a in adds]
        transaction = Transaction(log, log.snapshot() if start else None)
        if not start:
            transaction.update_metadata(Metadata.create(json.dumps(schema), [], config))
        transaction.add_actions(adds)
        transaction.commit("WRITE", {"mode": "Append"})
    log_bytes = sum(p.stat().st_size for p in (path / "_delta_log").glob("*"))
    return path, log_bytes


def _fresh_snapshot_seconds(path: Path) -> float:
    """Seconds to load the latest snapshot of ``path`` in a new process (no cache of this one)."""
    import subprocess

    code = ("import time; from qbeast.delta.log import DeltaLog; t = time.perf_counter(); "
            f"DeltaLog.for_path({str(path)!r}).snapshot(); print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    return float(out.stdout.strip().splitlines()[-1])


def run_planning(files_list: list[int], values_per_file: int, repeat: int) -> list[dict[str, Any]]:
    from qbeast.core import expressions as ex
    from qbeast.skipping_files import INDEX_FILES, prune
    from qbeast.snapshot import QbeastSnapshot
    from qbeast.spark.read.planner import plan_read

    out = []
    for files in files_list:
        per_commit = max(1, files // 100)
        chosen, chosen_log = _synthetic(Path(f"skipping-plan-{files}"), files, per_commit,
                                        values_per_file, inline=False, indexed=True)
        inline, inline_log = _synthetic(Path(f"skipping-inline-{files}"), files, per_commit,
                                        values_per_file, inline=True, indexed=False)
        bare, bare_log = _synthetic(Path(f"skipping-bare-{files}"), files, per_commit,
                                    values_per_file, inline=False, indexed=False)
        predicate = ex.EqualTo("order_id", 123456789)
        snapshots = {k: QbeastSnapshot.load(str(p)) for k, p in
                     {"index files": chosen, "no index": bare}.items()}
        cold = time.perf_counter()
        plan = plan_read(snapshots["index files"], predicate=predicate)
        cold = time.perf_counter() - cold
        times = interleaved({k: (lambda s=s: plan_read(s, predicate=predicate))
                             for k, s in snapshots.items()}, repeat=repeat)
        delta = snapshots["index files"].delta
        adds = list(delta.files.values())
        prune_only = interleaved({"prune": lambda: prune(delta.table_path, delta.metadata,
                                                         predicate, adds)}, repeat=repeat)
        loads = {k: 1000 * median([_fresh_snapshot_seconds(p) for _ in range(repeat)])
                 for k, p in {"index files": chosen, "inline tags": inline, "no index": bare}.items()}
        out.append({
            "files": files, "values_per_file": values_per_file, "commits": -(-files // per_commit),
            "planned_files": len(plan.files), "index_pruned": dict(plan.index_pruned),
            "plan_ms": {k: 1000 * median(v) for k, v in times.items()},
            "plan_cold_ms": 1000 * cold,
            "skipping_step_ms": 1000 * median(prune_only["prune"]),
            "snapshot_load_ms": loads,
            "log_bytes": {"index files": chosen_log, "inline tags": inline_log, "no index": bare_log},
            "index_file_bytes": _index_bytes(chosen),
        })
        INDEX_FILES._files.clear()
        INDEX_FILES._batches.clear()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cube-size", type=int, default=None, help="default: rows / 60")
    parser.add_argument("--write-rounds", type=int, default=2)
    parser.add_argument("--plan-files", default="100,10000")
    parser.add_argument("--values-per-file", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-lookups", action="store_true")
    parser.add_argument("--skip-planning", action="store_true")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "skipping.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    report: dict[str, Any] = {}
    if not args.skip_planning:
        report["planning"] = run_planning([int(x) for x in args.plan_files.split(",")],
                                          args.values_per_file, args.repeat)
        logger.info("planning: %s", json.dumps(report["planning"]))
    if not args.skip_lookups:
        spark = spark_session("4g")
        report["lookups"] = run_lookups(spark, args.rows, args.cube_size or args.rows // 60,
                                        args.write_rounds)
    Path(args.out).write_text(json.dumps(report, indent=2))
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
