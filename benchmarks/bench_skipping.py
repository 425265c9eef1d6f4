"""Skipping indexes: what a lookup on a column outside the OTree reads, what planning and the
index cost, against today's engine and the peers, in one run.

Data (``--rows``, default 2,000,000; the committed report ran 20,000,000 in about 22 minutes): an order/event table
of about 70 bytes per row (``_data``): ``event_time`` and ``user_id`` (the OTree's two columns),
``order_id`` (high cardinality: unique, scattered over the table), ``email`` (a customer's
address in three capitalisations, about 20 orders per customer; indexed as ``lower(email)``),
``status`` (low cardinality: 90% ``paid``, 9% ``refunded``, 40 rare statuses of about 0.025%
each, each in one 1/40 window of ``event_time``), ``channel`` (low cardinality, 40 rare values of
about 0.025% each spread over the whole table), ``country``, ``url``, ``user_agent``,
``session_id``, ``amount`` and ``quantity``.
The same rows are written as

* **qbeast + indexes**: ``skipping_indexes=INDEXES`` (a fuse filter on ``order_id``, a Bloom
  filter on ``lower(email)``, value lists on ``status`` and ``channel``);
* **qbeast (today)**: the same write without indexes (OTree + min/max stats);
* **parquet + bloom**: Spark's parquet writer with ``parquet.bloom.filter.enabled#order_id``,
  ``#status`` and ``#channel`` over the same number of files (its Bloom filters skip row groups inside files);
* **delta z-order**: ``deltalake`` write + ``optimize.z_order(event_time, user_id)``, planned by
  its min/max stats (the engine plans a plain Delta table exactly so).

Queries: a point lookup and a 10-value ``IN`` on ``order_id``, ``lower(email)``, ``status`` and
``channel``. The two filter kinds are also compared on the same files: a Bloom and a fuse filter
of ``order_id`` built from the indexed table's files, probed for 100 ids.
Files, bytes and rows come from Spark's scan metrics (``measure.collect_with_io``), except the
Z-order copy (its planned files). Also: write time with and without indexes (interleaved
rounds), index bytes / table bytes, and planning time of a point lookup at 100 and 10,000 files
on synthetic logs, with the entries in index files (the layout chosen) and, for the record, the
log size and snapshot load time had they been inlined in the AddFile tags (docs/skipping.md).

    .venv/bin/python benchmarks/bench_skipping.py --rows 20000000 --cube-size 20000 \
        --out benchmarks/results/skipping.json
"""
from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import re
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from measure import (  # noqa: E402
    collect_with_io,
    fresh_dir,
    interleaved,
    machine_facts,
    median,
    spark_session,
)
from qbeast.core.skipping import DEFAULT_FPP, DEFAULT_FUSE_FPP  # noqa: E402

logger = logging.getLogger("qbeast.benchmarks.skipping")
INDEXES = {"order_id": "fuse", "status": "values", "channel": "values", "lower(email)": "bloom"}
RARE = [f"rare-{i:02d}" for i in range(40)]
#: Distinct customers (e-mail addresses): about 20 orders each at 20M rows.
CUSTOMERS_PER_ROW = 0.05
#: point lookups planned (not read) to show the spread of the Bloom filters' false positives
SPREAD_LOOKUPS = 100
#: the pair issue 39 names: one high-cardinality column, one low-cardinality column
GOAL_INDEXES = ("order_id", "status")
_AGENTS = [
    "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/{v}.0.0.0 Safari/537.36",
    "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.{v} Safari/605.1.15",
    "Mozilla/5.0 (iPhone; CPU iPhone OS 17_{v} like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Mobile/15E148",
    "Mozilla/5.0 (Linux; Android 14; Pixel {v}) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0 Mobile Safari/537.36",
    "Mozilla/5.0 (X11; Linux x86_64; rv:{v}.0) Gecko/20100101 Firefox/{v}.0",
]
_COUNTRIES = ["US", "DE", "FR", "GB", "ES", "IT", "NL", "SE", "PL", "BR", "MX", "JP", "IN", "CA", "AU"]
_CATEGORIES = ["shoes", "books", "garden", "kitchen", "toys", "phones", "laptops", "sports", "beauty", "music"]


def _email(customer: int) -> str:
    """The lower-case e-mail of customer ``customer`` (rows hold it in three spellings)."""
    return f"customer{customer}@mail{customer % 7}.example.com"


def _sql_list(values: list[str]) -> str:
    return "array(" + ", ".join(f"'{v}'" for v in values) + ")"


def _data(spark, rows: int):
    """An order/event table: a few string columns (URL, user agent, country, e-mail, session id),
    amounts and times, as the rows a shop's event log holds.

    ``status``: rare values tied to a time window (a dispute wave, a failed batch); ``channel``:
    rare values spread over the whole table (in every file: no index can skip them); ``email``:
    one of ``rows * CUSTOMERS_PER_ROW`` customers, spelled lower case, Capitalized or UPPER case
    at random (``lower(email)`` finds all of a customer's orders)."""
    customers = max(1, int(rows * CUSTOMERS_PER_ROW))
    status = ("CASE WHEN h < 9000 THEN 'paid' WHEN h < 9900 THEN 'refunded' "
              f"ELSE concat('rare-', lpad(cast(floor(id * 40 / {rows}) AS string), 2, '0')) END")
    channel = ("CASE WHEN h2 < 6000 THEN 'web' WHEN h2 < 9900 THEN 'app' "
               "ELSE concat('rare-', lpad(cast(pmod(h2, 40) AS string), 2, '0')) END")
    base_email = "concat('customer', cast(c AS string), '@mail', cast(pmod(c, 7) AS string), '.example.com')"
    agents = "array(" + ", ".join(f"'{a}'" for a in _AGENTS) + ")"
    return spark.range(0, rows, numPartitions=8).selectExpr(
        "id", "pmod(hash(id, 1), 10000) AS h", "pmod(hash(id, 5), 10000) AS h2",
        f"pmod(hash(id, 7), {customers}) AS c", "pmod(hash(id, 8), 1000) AS r").selectExpr(
        "timestamp_millis(1700000000000 + id * 150) AS event_time",
        "cast(pmod(hash(id, 2), 100000) AS int) AS user_id",
        f"cast(pmod(id * {_MULTIPLIER}, {_modulus(rows)}) AS bigint) AS order_id",
        f"{status} AS status",
        f"{channel} AS channel",
        f"CASE WHEN r < 600 THEN {base_email} WHEN r < 900 THEN initcap({base_email}) "
        f"ELSE upper({base_email}) END AS email",
        f"element_at({_sql_list(_COUNTRIES)}, cast(1 + pmod(r * 7, {len(_COUNTRIES)}) AS int)) AS country",
        f"concat('https://shop.example.com/', element_at({_sql_list(_CATEGORIES)}, "
        f"cast(1 + pmod(r, {len(_CATEGORIES)}) AS int)), '/item-', cast(pmod(hash(id, 9), 50000) AS string), "
        "'?utm_source=', element_at(array('google', 'newsletter', 'facebook', 'direct'), "
        "cast(1 + pmod(r, 4) AS int)), '&page=', cast(pmod(r, 9) + 1 AS string)) AS url",
        f"replace(element_at({agents}, cast(1 + pmod(r, {len(_AGENTS)}) AS int)), '{{v}}', "
        "cast(100 + pmod(r, 25) AS string)) AS user_agent",
        "substr(sha2(cast(pmod(hash(id, 10), 4000000) AS string), 256), 1, 32) AS session_id",
        "cast(pmod(hash(id, 3), 100000) / 100.0 AS decimal(10, 2)) AS amount",
        "cast(1 + pmod(hash(id, 4), 5) AS int) AS quantity")


_MULTIPLIER = 2654435761


def _modulus(rows: int) -> int:
    return rows * 4 + 1


def _order_id(row: int, rows: int) -> int:
    """The ``order_id`` of row ``row`` (unique, scattered: no file's min/max excludes it)."""
    return row * _MULTIPLIER % _modulus(rows)


def _index_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in (path / "_qbeast_skipping").glob("*.qsi"))


def _index_bytes_by_index(snapshot: Any, path: str) -> dict[str, int]:
    """Payload bytes of each declared index over the table's files (what each one costs)."""
    from qbeast.skipping_files import INDEX_FILES, index_location
    from qbeast.core.skipping import TAG

    out: dict[str, int] = {}
    for name in {add.tags[TAG] for add in snapshot.files.values() if TAG in (add.tags or {})}:
        decoded = INDEX_FILES.arrays(snapshot_storage(path), index_location(path, name))
        for column, arrays in (decoded.columns if decoded is not None else {}).items():
            out[column] = out.get(column, 0) + int(arrays.lengths.sum())
    return out


def snapshot_storage(path: str) -> Any:
    from qbeast.storage import storage_for

    return storage_for(path)


def _data_bytes(path: Path) -> tuple[int, int]:
    files = list(path.glob("*.parquet"))
    return len(files), sum(p.stat().st_size for p in files)


class _WritePhases(logging.Handler):
    """Seconds of each phase of a write (``stats``, ``estimation``, ``write``, ``commit``), from
    the writer's progress log: the phases say where a difference between two writes lies, which
    end-to-end times on a shared machine cannot (the skipping indexes are built in ``commit``)."""

    _DONE = re.compile(r": (\w+) done\b.*elapsed=([\d.]+)s$")

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.seconds: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        found = self._DONE.search(record.getMessage())
        if found:
            self.seconds[found.group(1)] = self.seconds.get(found.group(1), 0.0) + float(found.group(2))


def _write(spark, df, path: Path, cube_size: int, indexes: dict | None,
           phases: list[dict[str, float]] | None = None) -> float:
    import qbeast

    fresh_dir(path.name)  # a new table every round: an overwrite would lay out differently
    handler = _WritePhases()
    writer_log = logging.getLogger("qbeast.spark.write.writer")
    writer_log.addHandler(handler)
    try:
        started = time.perf_counter()
        qbeast.write(df, str(path), "event_time,user_id", cube_size=cube_size, mode="overwrite",
                     **({"skipping_indexes": indexes} if indexes else {}))
        seconds = time.perf_counter() - started
    finally:
        writer_log.removeHandler(handler)
    if phases is not None:
        phases.append(handler.seconds)
    return seconds


def _median_phases(runs: list[dict[str, float]]) -> dict[str, float]:
    names = dict.fromkeys(name for run in runs for name in run)
    return {name: median([run.get(name, 0.0) for run in runs]) for name in names}


def run_lookups(spark, rows: int, cube_size: int, write_rounds: int,
                warmup: str = "full") -> dict[str, Any]:
    from qbeast import QbeastTable

    source = _data(spark, rows).cache()
    source.count()
    with_dir, without_dir = fresh_dir("skipping-indexed"), fresh_dir("skipping-plain")
    # untimed writes of each table first (JIT, caches, the JVM's heap at full size): with only a
    # small one, the first timed write of the run, always the indexed table's, pays the rest
    warm = source if warmup == "full" else source.limit(max(1000, rows // 100))
    _write(spark, warm, with_dir, cube_size, INDEXES)
    _write(spark, warm, without_dir, cube_size, None)
    started = time.perf_counter()
    phases: dict[str, list[dict[str, float]]] = {"with indexes": [], "without": []}
    times = interleaved({
        "with indexes": lambda: _write(spark, source, with_dir, cube_size, INDEXES,
                                       phases["with indexes"]),
        "without": lambda: _write(spark, source, without_dir, cube_size, None, phases["without"]),
    }, repeat=write_rounds, warmup=False)
    logger.info("writes: %s (%.0fs)", times, time.perf_counter() - started)
    n_files, table_bytes = _data_bytes(with_dir)
    plain_files, _ = _data_bytes(without_dir)
    parquet_dir = fresh_dir("skipping-parquet-bloom")
    (source.repartition(n_files).write.mode("overwrite")
     .option("parquet.bloom.filter.enabled#order_id", "true")
     .option("parquet.bloom.filter.enabled#status", "true")
     .option("parquet.bloom.filter.enabled#channel", "true")
     .parquet(str(parquet_dir)))
    zorder_dir = fresh_dir("skipping-zorder")
    import pyarrow.dataset as pads
    from deltalake import DeltaTable, write_deltalake

    started = time.perf_counter()
    write_deltalake(str(zorder_dir), pads.dataset(str(without_dir), format="parquet").scanner().to_reader())
    DeltaTable(str(zorder_dir)).optimize.z_order(["event_time", "user_id"],
                                                 target_size=max(64 * 1024, table_bytes // n_files),
                                                 max_concurrent_tasks=2)
    zorder = QbeastTable.for_path(spark, str(zorder_dir))
    logger.info("parquet and z-order copies: %.0fs", time.perf_counter() - started)

    rng = np.random.default_rng(11)
    orders = [_order_id(int(r), rows) for r in rng.integers(rows // 10, rows, 10)]
    emails = [_email(int(c)) for c in rng.integers(0, max(1, int(rows * CUSTOMERS_PER_ROW)), 10)]
    spread = ", ".join(f"'{c}'" for c in RARE[:10])
    queries = {
        "order_id point": f"order_id = {orders[0]}",
        "order_id IN 10": f"order_id IN ({', '.join(map(str, orders))})",
        "lower(email) point (all of a customer's orders)": f"lower(email) = '{emails[0]}'",
        "lower(email) IN 10": "lower(email) IN ({})".format(", ".join(f"'{e}'" for e in emails)),
        "status point (rare, clustered in time)": f"status = '{RARE[5]}'",
        "status IN 10 (rare, clustered in time)": "status IN ({})".format(
            ", ".join(f"'{c}'" for c in RARE[5:15])),
        "channel point (rare, spread)": f"channel = '{RARE[5]}'",
        "channel IN 10 (rare, spread)": f"channel IN ({spread})",
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
        logger.info("query %s: %s", name, row)
        z_plan = zorder.read_plan(filter=condition)
        row["delta z-order"] = {"files": len(z_plan.files), "bytes": z_plan.selected_bytes,
                                "rows_scanned": None}
        row["index_pruned"] = dict(indexed.read_plan(filter=condition).index_pruned)
        row["matching_rows"] = counts.pop() if len(counts) == 1 else sorted(counts)
        results.append(row)
    # one lookup is one draw of the Bloom filters' false positives: the files planned for each
    # of 100 ids and e-mails (plans only, no reads) show the spread and a steady mean
    spread_rng = np.random.default_rng(12)
    spread_orders = [_order_id(int(r), rows) for r in spread_rng.integers(0, rows, SPREAD_LOOKUPS)]
    spread_emails = [_email(int(c)) for c in spread_rng.integers(
        0, max(1, int(rows * CUSTOMERS_PER_ROW)), SPREAD_LOOKUPS)]
    point_files = {
        "order_id": [len(indexed.read_plan(filter=f"order_id = {o}").files) for o in spread_orders],
        "lower(email)": [len(indexed.read_plan(filter=f"lower(email) = '{e}'").files)
                         for e in spread_emails],
    }
    source.unpersist()
    filters = compare_filters(str(with_dir), spread_orders)
    from qbeast.delta.log import DeltaLog
    from qbeast.skipping_files import build_entries, table_indexes

    log = DeltaLog.for_path(str(with_dir))
    snapshot = log.snapshot()
    build = interleaved({"build": lambda: build_entries(log, list(snapshot.files.values()),
                                                        table_indexes(snapshot.metadata))},
                        repeat=3)
    return {
        "index_build_seconds": median(build["build"]),
        "rows": rows, "cube_size": cube_size, "files": n_files, "files_without_indexes": plain_files,
        "index_bytes_by_index": _index_bytes_by_index(snapshot, str(with_dir)),
        "table_bytes": table_bytes, "index_bytes": _index_bytes(with_dir),
        "zorder_files": zorder.read_plan().total_files,
        "write_seconds": {k: median(v) for k, v in times.items()},
        "write_times": times,
        "write_phases": {k: _median_phases(v) for k, v in phases.items()},
        "write_rounds": write_rounds, "queries": results, "point_files": point_files,
        "filters": filters,
        "warmup": "a full-size write of each table" if warmup == "full"
        else "a write of 1% of the rows",
    }


def compare_filters(path: str, lookups: list[int]) -> dict[str, Any]:
    """A Bloom filter (at its default ``fpp``) and a fuse filter (at its default) of ``order_id``
    built from the same files of the table at ``path`` (CPU time of the build, as a commit runs
    it), and the files each would plan for each of ``lookups``: the two kinds side by side on
    identical data, which two tables written in one run cannot give."""
    import pyarrow.parquet as pq

    from qbeast.core.skipping import IndexSpec, build_entry, decode_index_arrays, encode_index_file
    from qbeast.core.skipping_pruning import IndexView
    from qbeast.core.value_hash import hash_values, literal_hashes
    from qbeast.delta.actions import resolve_file_path
    from qbeast.delta.log import DeltaLog

    snapshot = DeltaLog.for_path(path).snapshot()
    hashed = {name: hash_values(pq.read_table(resolve_file_path(path, name), columns=["order_id"])
                                .column(0), "long") for name in snapshot.files}
    probes = [literal_hashes("long", [order]) for order in lookups]
    out: dict[str, Any] = {}
    for kind, fpp in (("bloom", DEFAULT_FPP), ("fuse", DEFAULT_FUSE_FPP)):
        spec = IndexSpec("order_id", kind, fpp=fpp)
        started = time.process_time()
        entries = {name: {"order_id": build_entry(spec, "long", hashes, nulls)}
                   for name, (hashes, nulls) in hashed.items()}
        seconds = time.process_time() - started
        batch = IndexView({"i": decode_index_arrays(encode_index_file(entries))}).batch("order_id", "long")
        out[kind] = {
            "fpp": fpp, "build_cpu_seconds": seconds,
            "bytes": sum(len(e["order_id"].payload or b"") for e in entries.values()),
            "files_per_lookup": [int(batch.may_contain(h).sum()) for h in probes if h is not None],
        }
        logger.info("filter %s: %s", kind, {k: v for k, v in out[kind].items() if k != "files_per_lookup"})
    return out


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
    spec = IndexSpec("order_id", "fuse", fpp=DEFAULT_FUSE_FPP)
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
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"snapshot load of {path} failed: {out.stderr[-2000:]}")
    return float(out.stdout.strip().splitlines()[-1])


def _cpu(action: Any) -> float:
    """CPU seconds of this process spent in ``action`` (planning runs in one thread)."""
    started = time.process_time()
    action()
    return time.process_time() - started


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
        # CPU seconds of the same plans: what planning costs, without the other sessions' load
        cpu = {k: median([_cpu(lambda s=s: plan_read(s, predicate=predicate)) for _ in range(repeat)])
               for k, s in snapshots.items()}
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
            "plan_cpu_ms": {k: 1000 * v for k, v in cpu.items()},
            "plan_cold_ms": 1000 * cold,
            "skipping_step_ms": 1000 * median(prune_only["prune"]),
            "snapshot_load_ms": loads,
            "log_bytes": {"index files": chosen_log, "inline tags": inline_log, "no index": bare_log},
            "index_file_bytes": _index_bytes(chosen),
        })
        INDEX_FILES.clear()
    return out


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def render(report: dict[str, Any]) -> str:
    """The markdown report of one run (goals of issue 39 checked against the figures)."""
    runs = report.get("runs") or {}
    out = ["# Skipping indexes: lookups on columns outside the OTree", "",
           "Produced by `benchmarks/bench_skipping.py`; sizes below. Machine: 2 cores shared with "
           "other sessions. Each part names the run (commit, load average at its start) that "
           "produced it; parts may come from different runs (`--merge`).", ""]
    look = report.get("lookups")
    if look:
        out += [f"## Lookups: {look['rows']:,} rows, OTree on `event_time, user_id`, cube size "
                f"{look['cube_size']:,}: {look['files']} data files ({_mb(look['table_bytes'])}, "
                f"{look['table_bytes'] / look['rows']:.1f} bytes per row); "
                f"Z-ordered Delta copy: {look['zorder_files']} files", "",
                _run_line(runs.get("lookups") or {"load": report.get("load")}), "",
                f"Indexes: `{json.dumps(INDEXES)}`. Rows: an order/event table (`event_time`, "
                "`user_id`, `order_id`, `status`, `channel`, `email`, `country`, `url`, "
                "`user_agent`, `session_id`, `amount`, `quantity`; see `_data`).", "",
                "Files / bytes / rows scanned from Spark's scan metrics (the Z-order copy: files "
                "and bytes its min/max stats select). `removed by index` is "
                "`ReadPlan.index_pruned`.", "",
                "| query | rows | qbeast + indexes | qbeast (today) | parquet + Spark bloom | "
                "delta z-order | removed by index |", "|---|---:|---|---|---|---|---|"]
        for q in look["queries"]:
            cells = []
            for k in ("qbeast + indexes", "qbeast (today)", "parquet + bloom", "delta z-order"):
                io = q[k]
                scanned = "" if io["rows_scanned"] is None else f", {io['rows_scanned']:,} rows"
                cells.append(f"{io['files']} files, {_mb(io['bytes'])}{scanned}")
            out.append(f"| {q['query']} | {q['matching_rows']} | " + " | ".join(cells)
                       + f" | {q['index_pruned']} |")
        w = look["write_seconds"]
        ratio = w["with indexes"] / w["without"]
        out += ["", "| measure | value |", "|---|---:|",
                f"| index bytes / table bytes | {_mb(look['index_bytes'])} / "
                f"{_mb(look['table_bytes'])} = {look['index_bytes'] / look['table_bytes']:.1%} |",
                f"| write, with indexes / without ({look['write_rounds']} interleaved "
                f"round(s) after {look.get('warmup', 'a write of 1% of the rows')}, untimed) | {w['with indexes']:.1f} s / {w['without']:.1f} s = {ratio:.2f}x |",
                f"| of which building the indexes (all files, median of 3) | "
                f"{look['index_build_seconds']:.2f} s |"]
        if look.get("write_times"):
            each = {k: ", ".join(f"{t:.1f}" for t in v) for k, v in look["write_times"].items()}
            out.append(f"| write times, each round (s): with indexes / without | "
                       f"{each['with indexes']} / {each['without']} |")
        for name, with_s in (look.get("write_phases") or {}).get("with indexes", {}).items():
            without_s = look["write_phases"]["without"].get(name, 0.0)
            out.append(f"| write phase `{name}`, median: with indexes / without | "
                       f"{with_s:.2f} s / {without_s:.2f} s |")
        for column, size in sorted((look.get("index_bytes_by_index") or {}).items()):
            out.append(f"| index `{column}` | {_mb(size)} = {size / look['table_bytes']:.2%} of "
                       f"the table, {size / look['rows']:.2f} bytes per row |")
        out.append("")
        out += _filter_table(look)
    plans = report.get("planning") or []
    if plans:
        out += ["## Planning a point lookup (synthetic logs, no data files)", "",
                f"Each file holds 2,000 distinct `order_id`s in a fuse filter "
                f"({DEFAULT_FUSE_FPP:.1%}, the default); one index "
                "file per commit of 1% of the files. Plan: `plan_read` of `order_id = x`, median "
                "of interleaved runs (warm: index files cached); cold: the first plan, which "
                "reads the index files. CPU: the process's CPU time of the same plans (median), "
                "which the other sessions' load does not inflate. Snapshot load: a fresh process "
                "each time.", "",
                _run_line(runs.get("planning") or {"load": report.get("load")}), "",
                "| files | planned | plan, indexes | plan, no index (today) | CPU: indexes / no index "
                "| skipping step | cold plan | log, index files | log, entries inlined in tags | "
                "log, no index | index files | snapshot load: index files / inlined / none |",
                "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
        for p in plans:
            load = p["snapshot_load_ms"]
            cpu = p.get("plan_cpu_ms")
            cpu_text = (f"{cpu['index files']:.1f} / {cpu['no index']:.1f} ms" if cpu
                        else "not recorded")
            out.append(
                f"| {p['files']:,} | {p['planned_files']} | {p['plan_ms']['index files']:.1f} ms | "
                f"{p['plan_ms']['no index']:.1f} ms | {cpu_text} | {p['skipping_step_ms']:.1f} ms | "
                f"{p['plan_cold_ms']:.0f} ms | {_mb(p['log_bytes']['index files'])} | "
                f"{_mb(p['log_bytes']['inline tags'])} | {_mb(p['log_bytes']['no index'])} | "
                f"{_mb(p['index_file_bytes'])} | {load['index files']:.0f} / "
                f"{load['inline tags']:.0f} / {load['no index']:.0f} ms |")
        out.append("")
    out += _goals(report)
    return "\n".join(out)


def _filter_table(look: dict[str, Any]) -> list[str]:
    """The Bloom and fuse filters of ``order_id`` compared on the same files."""
    filters = look.get("filters")
    if not filters:
        return []
    limit = 1 + 0.01 * look["files"]
    out = ["### Bloom and fuse filters of `order_id` on the same files", "",
           f"Both built from the {look['files']} files of the indexed table (CPU time of the "
           "build, hashing excluded) and probed for the same "
           f"{len(next(iter(filters.values()))['files_per_lookup'])} ids: files planned per "
           f"lookup (the file holding the id plus the false positives; limit {limit:.2f}).", "",
           "| filter | fpp | bytes per row | of the table | build (CPU) | files per lookup: mean "
           "| above the limit | most |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for kind, f in filters.items():
        planned = f["files_per_lookup"]
        out.append(f"| {kind} | {f['fpp']:.1%} | {f['bytes'] / look['rows']:.2f} | "
                   f"{f['bytes'] / look['table_bytes']:.2%} | {f['build_cpu_seconds']:.1f} s | "
                   f"{sum(planned) / len(planned):.2f} | {sum(1 for n in planned if n > limit)} "
                   f"| {max(planned)} |")
    return out + [""]


def _run_line(run: dict[str, Any]) -> str:
    parts = [f"commit {run['commit']}" if run.get("commit") else "commit not recorded",
             f"load average {run.get('load', 'not recorded')} at the start"]
    if run.get("date"):
        parts.append(run["date"])
    return "Run: " + ", ".join(parts) + "."


def _goals(report: dict[str, Any]) -> list[str]:
    """Issue 39's goals against this run's figures, met or missed."""
    rows = []
    look = report.get("lookups")
    if look:
        point = next(q for q in look["queries"] if q["query"] == "order_id point")
        files = point["qbeast + indexes"]["files"]
        limit = 1 + 0.01 * look["files"]
        rows.append(("point lookup reads at most 1 + 1% of the files",
                     f"{files} of {look['files']} (limit {limit:.2f})", files <= limit))
        spread = (look.get("point_files") or {}).get("order_id")
        if spread:
            mean = sum(spread) / len(spread)
            over = sum(1 for n in spread if n > limit)
            # a filter with false positives bounds lookups only in probability: 99 in 100 must hold
            rows.append((f"... the same for at least 99% of {len(spread)} `order_id` lookups "
                         "(planned files)",
                         f"mean {mean:.2f}; {over} of {len(spread)} lookups above the limit "
                         f"(most: {max(spread)})", over <= len(spread) // 100))
        by_index = look.get("index_bytes_by_index") or {}
        if all(name in by_index for name in GOAL_INDEXES):
            pair = sum(by_index[name] for name in GOAL_INDEXES) / look["table_bytes"]
            rows.append(("index at most 2% of the table's bytes: the issue's pair (a "
                         f"{INDEXES['order_id']} filter on the high-cardinality `order_id`, a value list on the "
                         "low-cardinality `status`)", f"{pair:.2%}", pair <= 0.02))
        share = look["index_bytes"] / look["table_bytes"]
        rows.append(("... all four indexes of this run (with `channel` and the Bloom filter on "
                     "`lower(email)`), index files' bytes", f"{share:.1%}", share <= 0.02))
        w = look["write_seconds"]
        ratio = w["with indexes"] / w["without"]
        build = look["index_build_seconds"] / w["without"]
        rows.append(("writes at most 10% slower",
                     f"{ratio - 1:+.0%} measured end to end (median of {look['write_rounds']} "
                     f"interleaved round(s)); index build alone {build:.1%} of the write",
                     ratio <= 1.10))
        phases = look.get("write_phases")
        if phases:
            extra = {name: phases["with indexes"].get(name, 0.0) - phases["without"].get(name, 0.0)
                     for name in phases["with indexes"]}
            share = extra.get("commit", 0.0) / w["without"]
            others = ", ".join(f"`{n}` {d:+.1f} s" for n, d in extra.items() if n != "commit")
            rows.append(("... the same, by phase (medians): the `commit` phase, which builds "
                         "the indexes, against the whole write without them",
                         f"{extra.get('commit', 0.0):+.2f} s = {share:+.1%} (the other phases, "
                         f"same code either way: {others})", share <= 0.10))
    for p in report.get("planning") or []:
        if p["files"] == 10_000:
            ms = p["plan_ms"]["index files"]
            cpu = (p.get("plan_cpu_ms") or {}).get("index files")
            cpu_text = "" if cpu is None else f", {cpu:.1f} ms of CPU"
            rows.append(("planning at most 50 ms at 10,000 files",
                         f"{ms:.1f} ms warm{cpu_text} ({p['plan_cold_ms']:.0f} ms cold, first "
                         "read of the index files)", ms <= 50))
    if not rows:
        return []
    return ["## Goals (issue 39)", "", "| goal | figures above | met |", "|---|---|---|",
            *[f"| {g} | {v} | {'yes' if ok else '**no**'} |" for g, v, ok in rows], "",
            _notes(report)]


def _notes(report: dict[str, Any]) -> str:
    """What the figures mean, with this run's numbers."""
    look = report.get("lookups") or {}
    per_row = look["table_bytes"] / look["rows"] if look else float("nan")
    sizes = look.get("index_bytes_by_index") or {}
    filters = {c: n / look["rows"] for c, n in sizes.items()
               if INDEXES.get(c) in ("bloom", "fuse")} if look else {}
    filter_text = ", ".join(f"`{c}` ({INDEXES[c]}) {b:.2f}" for c, b in sorted(filters.items()))
    warm_note = ""
    if look and "warmup" not in look:  # runs before --warmup: a 1% warm-up
        warm_note = ("\n  The first full-size write of this run is the indexed table's (the rounds "
                     "rotate from it)\n  and was the slowest of its run (the warm-up wrote only 1% "
                     "of the rows): the median\n  over the rounds is the figure to read.")
    return f"""## Reading the figures

* **Index size.** A Bloom filter at its default `fpp` of 0.7% costs 10.3 bits (1.3 bytes) per
  distinct value and file; a fuse filter at its default of 0.2% (9-bit fingerprints) costs
  about the same at 60,000 values a file (1.14 × 9 bits) with a third of the false positives. No
  exact-membership filter can go below log2(1/fpp) bits per value (9 at 0.2%). `order_id` is
  unique and `lower(email)` nearly so within a file, so each of their filters holds about one
  entry per row (bytes per row here: {filter_text}), against {per_row:.1f} bytes per row of
  table: one such index is about {100 * 1.3 / per_row:.1f}% of the table, two are twice that.
  The bound, plainly: one index on a column with a distinct value per row stays within 2% on
  rows of 65 bytes or more; two such indexes need rows of 130 bytes, or a higher `fpp`.
  `values` indexes on clustered low-cardinality columns cost a few bytes per file.
* **Point lookups and the 1 + 1% goal.** A file without the value is read when its filter gives
  a false positive, with probability `fpp` per file: a lookup reads the file that holds the
  value plus about `fpp` of the others, a Poisson draw. A Bloom filter at 1% puts that mean at
  the goal's limit itself (47 of 100 lookups above it in a 20M run, `skipping-fpp1.md`); at 0.7%
  the mean is under the limit but about one lookup in six is above it (17 of 100, commit
  b012b6e). A fuse filter at 0.2% expects 0.7 false files per lookup here: one lookup in 200
  exceeds 3 false files, and at the same bytes as the Bloom filter. The table above compares
  the two kinds on the same files.
* **`lower(email)`** finds all orders of one customer (about 20, in as many files) however the
  address was capitalised; no other contender can prune on it (Spark's parquet Bloom filters
  are on the column's own values and are not used for `lower(email)`).
* **Write time.** The data files are written by Spark's JVM writer, so the entries are built
  from the written files at commit (only the indexed columns are read back, files in parallel).
  That step is the "index build alone" figure and the only work a write with indexes adds: the
  phases of the writer's progress log (`stats`, `estimation`, `write`, `commit`) differ only in
  `commit`, by about the build step; the other phases run the same code and move with the
  machine's load, by more than the step costs, so end-to-end ratios of a few rounds on a shared
  machine land on either side of it.{warm_note}
* **Rare values spread over the table** (`channel`) are in almost every file: no per-file index
  can skip those files (Spark's parquet Bloom filters skip row groups inside them, but open every
  file). Skipping indexes pay off for values that sit in few files: unique keys, a customer's
  orders, and rare values that arrive together (`status`).
* **The parquet copy** is Spark's plain parquet write of the same rows in shuffled order, with a
  parquet Bloom filter per indexed column and row group at parquet's default size (sized for a
  million distinct values), hence much larger than the engine's files; its Bloom filters cut
  rows scanned, not files opened.
* **Planning** with indexes costs a few numpy operations per literal over all the files' filters
  at once (the index files a plan names are decoded to arrays and concatenated once, then
  cached), and a dictionary look-up per file to hand the answers out; the cold figure includes
  reading and decoding the index files once. Today's planning without indexes checks every
  file's min/max statistics in Python (about 5 microseconds of CPU per file, 10,000 files here):
  with an index, the statistics see only the files it kept.
"""


def _provenance() -> dict[str, Any]:
    """Which code and how loaded a machine produced a part of the report."""
    commit = machine_facts()["commit"]
    import subprocess

    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           cwd=Path(__file__).parent, text=True, capture_output=True).stdout.strip()
    return {"commit": commit + (" (with uncommitted changes)" if dirty else ""),
            "load": round(os.getloadavg()[0], 1),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=2_000_000)
    parser.add_argument("--cube-size", type=int, default=None, help="default: rows / 300")
    parser.add_argument("--write-rounds", type=int, default=1)
    parser.add_argument("--warmup", choices=("full", "small"), default="full",
                        help="untimed write of each table before the rounds: all the rows "
                             "(default) or 1%% of them (the method of reports before this option)")
    parser.add_argument("--plan-files", default="100,10000")
    parser.add_argument("--values-per-file", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--skip-lookups", action="store_true")
    parser.add_argument("--skip-planning", action="store_true")
    parser.add_argument("--render", help="only write the markdown report of this JSON file")
    parser.add_argument("--merge", help="an earlier JSON report: the parts this run skips "
                        "(--skip-lookups, --skip-planning) are taken from it, each with the commit "
                        "and load average of its own run")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "skipping.json"))
    args = parser.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    if args.render:
        report = json.loads(Path(args.render).read_text())
        Path(args.render).with_suffix(".md").write_text(render(report) + "\n")
        return
    report: dict[str, Any] = {"runs": {}}
    if not args.skip_planning:
        report["runs"]["planning"] = _provenance()
        report["planning"] = run_planning([int(x) for x in args.plan_files.split(",")],
                                          args.values_per_file, args.repeat)
        logger.info("planning: %s", json.dumps(report["planning"]))
    if not args.skip_lookups:
        report["runs"]["lookups"] = _provenance()
        spark = spark_session("4g")
        report["lookups"] = run_lookups(spark, args.rows, args.cube_size or args.rows // 300,
                                        args.write_rounds, args.warmup)
    if args.merge:
        earlier = json.loads(Path(args.merge).read_text())
        for part in ("planning", "lookups"):
            if part not in report and part in earlier:
                report[part] = earlier[part]
                report["runs"][part] = (earlier.get("runs") or {}).get(part) or {
                    "load": earlier.get("load")}
    Path(args.out).write_text(json.dumps(report, indent=2))
    Path(args.out).with_suffix(".md").write_text(render(report) + "\n")
    print(render(report))


if __name__ == "__main__":
    main()
