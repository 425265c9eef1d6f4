"""Qbeast tables on an S3-compatible store (moto on loopback), through the engine's entry points.

The session is the shared ``local[2]`` one, with no Hadoop connector for ``s3://``: the engine
stages new files locally and uploads them, and reads open local copies
(:mod:`qbeast.spark.file_access`). Credentials and endpoint come from the AWS environment
variables only, as a user sets them. Every check compares with what an independent reader
(deltalake, DuckDB) finds in the bucket, or with exact expected rows.
"""
from __future__ import annotations

import os
import shutil
import sys
import uuid
from pathlib import Path

import pytest
from s3_server import BUCKET

import qbeast
from qbeast.delta.log import DeltaLog
from qbeast.snapshot import QbeastSnapshot
from qbeast.storage import storage_for

pytestmark = [pytest.mark.spark, pytest.mark.objectstore]


@pytest.fixture
def bucket_root(spark, s3_environment: str, tmp_path: Path) -> str:
    """A fresh prefix in the test bucket; the session's mirror folder in ``tmp_path``."""
    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
    yield f"s3://{BUCKET}/{uuid.uuid4().hex[:12]}"
    spark.conf.unset("spark.qbeast.storage.mirrorDir")


def _events(spark, start: int, count: int):
    return spark.range(start, start + count).selectExpr(
        "id", "cast(rand(7) * 10000 as int) as user_id", "round(rand(8) * 500, 2) as price")


def _objects(root: str) -> dict[str, int]:
    storage = storage_for(root)
    prefix = storage.resolve(root) + "/"
    return {s.path[len(prefix):]: s.size for s in storage.walk(root)}


def _deltalake_ids(root: str, endpoint: str) -> list[int]:
    from deltalake import DeltaTable

    options = {"AWS_ENDPOINT_URL": endpoint, "AWS_ACCESS_KEY_ID": "testing",
               "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1", "AWS_ALLOW_HTTP": "true"}
    return sorted(DeltaTable(root, storage_options=options).to_pyarrow_table(columns=["id"])
                  .column("id").to_pylist())


def test_write_sample_filter_and_append_on_s3(spark, bucket_root: str, s3_environment: str,
                                              tmp_path: Path) -> None:
    path = f"{bucket_root}/events"
    result = qbeast.write(_events(spark, 0, 20_000), path, columns_to_index="user_id,price",
                          cube_size=2_000, mode="overwrite")
    assert result.rows == 20_000 and result.file_count > 1
    objects = _objects(path)
    assert {f"_delta_log/{0:020d}.json"} <= set(objects)
    assert set(result.files) <= set(objects)  # the data files are in the bucket ...
    assert not [n for n in objects if n.startswith("_qbeast_staging")]  # ... and no staging left
    assert not os.path.exists(f"/{BUCKET}")  # nothing written to a local folder named like it

    table = qbeast.QbeastTable.for_path(spark, path)
    assert sorted(r.id for r in table.to_df().select("id").collect()) == list(range(20_000))
    assert _deltalake_ids(path, s3_environment) == list(range(20_000))
    sample = table.sample(0.1)
    assert 0.07 * 20_000 < sample.count() < 0.13 * 20_000
    assert len(sample.inputFiles()) < result.file_count
    pruned = table.to_df(filter="user_id < 1000 and price between 10 and 20")
    expected = _events(spark, 0, 20_000).where("user_id < 1000 and price between 10 and 20")
    assert sorted(pruned.collect()) == sorted(expected.collect())
    assert len(pruned.inputFiles()) < result.file_count

    props = qbeast.CommitProperties(user_metadata="nightly", app_id="loader", app_version=1)
    appended = qbeast.write(_events(spark, 20_000, 5_000), path, commit_properties=props)
    assert appended.version == 1 and appended.rows == 5_000
    assert qbeast.write(_events(spark, 20_000, 5_000), path, commit_properties=props).skipped
    assert _deltalake_ids(path, s3_environment) == list(range(25_000))
    assert DeltaLog.for_path(path).snapshot().txn_version("loader") == 1


def _duckdb_on(endpoint: str):
    """A DuckDB connection with the httpfs and delta extensions (from their PyPI wheels, no
    network) and an S3 secret for the test server."""
    import importlib.resources

    duckdb = pytest.importorskip("duckdb", reason="duckdb is a test dependency")
    con = duckdb.connect(config={"allow_unsigned_extensions": "true"})
    for package, name in (("duckdb_extension_httpfs", "httpfs"), ("duckdb_extension_delta", "delta")):
        root = Path(str(importlib.resources.files(package))) / "extensions"
        exact = root / f"v{duckdb.__version__}" / f"{name}.duckdb_extension"
        con.execute(f"LOAD '{exact if exact.is_file() else sorted(root.glob(f'*/{name}.duckdb_extension'))[-1]}'")
    host = endpoint.split("://", 1)[1]
    con.execute(f"CREATE SECRET test_s3 (TYPE S3, KEY_ID 'testing', SECRET 'testing', REGION "
                f"'us-east-1', ENDPOINT '{host}', URL_STYLE 'path', USE_SSL false)")
    return con


def test_duckdb_reads_the_engine_table_and_the_engine_reads_deltalakes_from_the_bucket(
        spark, bucket_root: str, s3_environment: str) -> None:
    import pyarrow as pa
    from deltalake import write_deltalake

    path = f"{bucket_root}/events"
    qbeast.write(_events(spark, 0, 5_000), path, columns_to_index="user_id,price", cube_size=1_000)
    engine = sorted(tuple(r) for r in qbeast.QbeastTable.for_path(spark, path).to_df().collect())
    duck = sorted(_duckdb_on(s3_environment).execute(
        f"SELECT id, user_id, price FROM delta_scan('{path}')").fetchall())
    assert duck == engine and len(engine) == 5_000

    other = f"{bucket_root}/from_deltalake"
    options = {"AWS_ENDPOINT_URL": s3_environment, "AWS_ALLOW_HTTP": "true"}
    data = pa.table({"id": list(range(300)), "name": [f"n{i}" for i in range(300)]})
    write_deltalake(other, data, storage_options=options)
    write_deltalake(other, data.slice(0, 10), mode="append", storage_options=options)
    read = qbeast.QbeastTable.for_path(spark, other).to_df()
    assert sorted(tuple(r) for r in read.collect()) == sorted(
        [(i, f"n{i}") for i in range(300)] + [(i, f"n{i}") for i in range(10)])


def test_row_level_changes_optimize_and_vacuum_on_s3(spark, bucket_root: str,
                                                     s3_environment: str) -> None:
    path = f"{bucket_root}/users"
    users = spark.range(0, 2_000).selectExpr("id", "cast(id % 97 as int) as country", "'new' as status")
    qbeast.write(users, path, columns_to_index="id,country", cube_size=200)
    table = qbeast.QbeastTable.for_path(spark, path)
    table.delete("country = 0")
    table.update("id < 10", set={"status": "'vip'"})
    upserts = spark.createDataFrame([(5, 1, "gone"), (5000, 2, "new")], "id long, country int, status string")
    merged = table.merge(upserts, on=["id"])
    assert (merged.rows_updated, merged.rows_inserted) == (1, 1)
    expected = {i: ("vip" if i < 10 else "new") for i in range(2_000) if i % 97 != 0}
    expected[5], expected[5000] = "gone", "new"
    rows = {r.id: r.status for r in table.to_df().collect()}
    assert rows == expected
    assert _deltalake_ids(path, s3_environment) == sorted(expected)

    optimized = table.optimize(merge_revisions=True)  # revision 1 into the merge's revision 2
    assert optimized.versions  # files were rewritten and committed
    assert {r.id: r.status for r in table.to_df().collect()} == expected
    before = set(_objects(path))
    live = {a.path for a in DeltaLog.for_path(path).snapshot().files.values()}
    report = table.vacuum(retention_hours=0, allow_short_retention=True)
    after = set(_objects(path))
    removed = before - after
    assert removed and removed == set(report.files)
    assert live <= after and not (removed & live)  # only files no version needs went away
    assert {r.id: r.status for r in table.to_df().collect()} == expected
    assert _deltalake_ids(path, s3_environment) == sorted(expected)
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.is_qbeast and snapshot.delta.num_records == len(expected)


_APPENDER = """
import os, sys, time
import qbeast

path, worker, ready, mirror = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
spark = qbeast.get_or_create_session({"spark.qbeast.storage.mirrorDir": mirror,
                                      "spark.sql.shuffle.partitions": "1",
                                      "spark.ui.enabled": "false"}, master="local[1]")
batches = [spark.range(1_000 + worker * 1_000 + i * 100, 1_000 + worker * 1_000 + (i + 1) * 100)
           .selectExpr("id", "cast(id % 13 as int) as k") for i in range(10)]
batches[0].count()  # the JVM warmed up
open(os.path.join(ready, str(worker)), "w").close()
deadline = time.time() + 300
while len(os.listdir(ready)) < 4 and time.time() < deadline:  # all four start together
    time.sleep(0.05)
versions = [qbeast.write(batch, path).version for batch in batches]
print("versions", *versions)
"""


@pytest.mark.slow
def test_four_processes_appending_ten_times_each_commit_forty_contiguous_versions(
        spark, bucket_root: str, tmp_path: Path) -> None:
    """4 processes x 10 appends to one S3 table at once: the store's conditional write decides
    each version; every append lands exactly once, versions 1..40 without a gap."""
    import subprocess
    import sys

    path = f"{bucket_root}/appends"
    first = spark.range(0, 1_000).selectExpr("id", "cast(id % 13 as int) as k")
    assert qbeast.write(first, path, columns_to_index="id,k", cube_size=500).version == 0
    ready = tmp_path / "ready"
    ready.mkdir()
    procs = [subprocess.Popen([sys.executable, "-c", _APPENDER, path, str(w), str(ready),
                               str(tmp_path / f"mirror-{w}")],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for w in range(4)]
    outputs = [p.communicate(timeout=600) for p in procs]
    for p, (_, err) in zip(procs, outputs):
        assert p.returncode == 0, err[-3000:]
    versions = sorted(int(v) for out, _ in outputs
                      for line in out.splitlines() if line.startswith("versions")
                      for v in line.split()[1:])
    assert versions == list(range(1, 41))
    log = DeltaLog.for_path(path)
    assert log.snapshot().version == 40
    ids = sorted(r.id for r in qbeast.QbeastTable.for_path(spark, path).to_df().select("id").collect())
    assert ids == list(range(5_000))  # every appended row exactly once


def test_convert_describe_history_metrics_upgrade_and_sql_on_s3(spark, bucket_root: str,
                                                                 tmp_path: Path) -> None:
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from qbeast.cli import main as cli

    # a plain parquet folder in the bucket (written by pyarrow, uploaded through the storage)
    folder = f"{bucket_root}/plain"
    storage = storage_for(folder)
    for part in range(3):
        local = tmp_path / f"part-{part}.parquet"
        ids = list(range(part * 1_000, (part + 1) * 1_000))
        pq.write_table(pa.table({"id": ids, "k": [i % 11 for i in ids]}), local)
        storage.upload(str(local), f"{folder}/part-{part}.parquet")
    converted = qbeast.convert_to_qbeast(spark, folder, ["id", "k"], cube_size=500)
    assert converted.version == 0 and converted.file_count == 3
    table = qbeast.QbeastTable.for_path(spark, folder)
    table.optimize(revision_id=0)  # indexes the converted files: read, rewritten, uploaded
    assert sorted(r.id for r in table.to_df().collect()) == list(range(3_000))
    assert table.snapshot().index_status() and table.index_metrics().revision_id == 1
    assert [h.operation for h in table.history()][:2] == ["OPTIMIZE", "CONVERT"]
    assert not qbeast.upgrade_format(folder, dry_run=True).changes  # current format already

    out = io.StringIO()
    assert cli(["describe", folder], out=out) == 0
    assert f"Table:      {folder}\nVersion:    1 " in out.getvalue()

    # SQL: a catalog table on the bucket and a path read, both through the read bridge
    qbeast.create_table(spark, "s3_plain", folder, replace=True)
    try:
        assert spark.sql("SELECT count(*) FROM s3_plain WHERE id < 100").first()[0] == 100
        sampled = spark.sql("SELECT count(*) FROM s3_plain TABLESAMPLE (10 PERCENT)").first()[0]
        assert sampled == table.sample(0.1).count()
        assert spark.read.format("qbeast").load(folder).where("k = 3").count() == \
            sum(1 for i in range(3_000) if i % 11 == 3)
    finally:
        spark.sql("DROP TABLE IF EXISTS s3_plain")


_PYTHON_SOURCE_READER = """
import sys
import qbeast

path, mirror = sys.argv[1], sys.argv[2]
spark = qbeast.get_or_create_session({"spark.qbeast.sqlBridge": "false",
                                      "spark.qbeast.storage.mirrorDir": mirror,
                                      "spark.ui.enabled": "false"}, master="local[1]")
print("source", qbeast.register(spark))
df = spark.read.format("qbeast").load(path)
print("rows", df.count(), df.where("k = 3").count())
print("sampled", spark.read.format("qbeast").option("sampleFraction", "0.1").load(path).count())
"""


@pytest.mark.slow
def test_the_python_data_source_reads_a_table_on_the_bucket(spark, bucket_root: str,
                                                            tmp_path: Path) -> None:
    """Without the read bridge, SQL reads go through the Python data source, whose tasks read
    the files from the store themselves (a process of its own: the source's workers take the
    AWS environment from the JVM's start)."""
    import subprocess
    import sys

    path = f"{bucket_root}/python_source"
    rows = spark.range(0, 3_000).selectExpr("id", "cast(id % 11 as int) as k")
    qbeast.write(rows, path, columns_to_index="id,k", cube_size=500)
    done = subprocess.run([sys.executable, "-c", _PYTHON_SOURCE_READER, path, str(tmp_path / "m")],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in done.stdout.splitlines() if " " in line)
    assert lines["source"] == "python"
    assert lines["rows"].split() == ["3000", str(sum(1 for i in range(3_000) if i % 11 == 3))]
    assert int(lines["sampled"]) == qbeast.QbeastTable.for_path(spark, path).sample(0.1).count()


def test_the_engine_on_azure_with_deltalake_reading_the_same_rows(spark, azure_environment,
                                                                 tmp_path: Path) -> None:
    """Azure's storage emulator (Azurite) instead of S3, through the same entry points: write,
    append, sample, filter, delete, merge, optimize and vacuum on an ``abfss://`` table, each
    result read back by deltalake from the container; and a table deltalake wrote there read by
    the engine."""
    import deltalake
    from azure_server import root_location

    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
    try:
        root = root_location(uuid.uuid4().hex[:12])
        path = f"{root}/events"
        options = azure_environment.deltalake_options()
        # deltalake names the same blobs az://<container>/<key>
        az_path = "az://" + path.removeprefix("abfss://").replace(
            "@devstoreaccount1.dfs.core.windows.net", "", 1)

        def deltalake_ids() -> list[int]:
            table = deltalake.DeltaTable(az_path, storage_options=options)
            return sorted(table.to_pyarrow_table(columns=["id"]).column("id").to_pylist())

        qbeast.write(_events(spark, 0, 6_000), path, columns_to_index="user_id,price",
                     cube_size=1_000)
        qbeast.write(_events(spark, 6_000, 1_000), path)
        table = qbeast.QbeastTable.for_path(spark, path)
        assert deltalake_ids() == list(range(7_000))
        assert table.sample(0.1).count() == table.to_df(
            filter=table.sample_predicate(0.1)).count()
        assert table.to_df(filter="user_id < 100").count() == \
            table.to_df().where("user_id < 100").count()
        # SQL by SAS URL (Azurite checks the signature, which moto does not): the rows of the
        # local copies, and a URL whose signature was tampered with is refused
        spark.conf.set("spark.qbeast.storage.bridgeFiles", "signed")
        try:
            query = f"select id from qbeast.`{path}` where user_id < 100"
            signed_ids = sorted(r.id for r in spark.sql(query).collect())
            opened = spark.sql(query).inputFiles()
        finally:
            spark.conf.unset("spark.qbeast.storage.bridgeFiles")
        assert signed_ids == sorted(r.id for r in spark.sql(query).collect())
        assert opened and all(f.startswith("qbeasthttp://signed/") for f in opened)
        _assert_tampered_signature_refused(spark, opened[0])

        table.delete("id % 10 = 0")
        upserts = spark.createDataFrame([(1, 5, 1.0), (9_999, 6, 2.0)],
                                        "id long, user_id int, price double")
        merged = table.merge(upserts, on=["id"])
        assert (merged.rows_updated, merged.rows_inserted) == (1, 1)
        expected = sorted([i for i in range(7_000) if i % 10] + [9_999])
        assert sorted(r.id for r in table.to_df().select("id").collect()) == expected
        assert deltalake_ids() == expected

        table.optimize(merge_revisions=True)
        live = {a.path for a in DeltaLog.for_path(path).snapshot().files.values()}
        before = set(_objects(path))
        report = table.vacuum(retention_hours=0, allow_short_retention=True)
        after = set(_objects(path))
        assert set(report.files) == before - after and live <= after
        assert deltalake_ids() == expected

        theirs = f"{root}/by_deltalake"
        deltalake.write_deltalake(
            "az://" + theirs.removeprefix("abfss://").replace(
                "@devstoreaccount1.dfs.core.windows.net", "", 1),
            _events(spark, 0, 500).toArrow(), storage_options=options)
        assert sorted(r.id for r in qbeast.QbeastTable.for_path(spark, theirs).to_df()
                      .select("id").collect()) == list(range(500))
    finally:
        spark.conf.unset("spark.qbeast.storage.mirrorDir")


def _assert_tampered_signature_refused(spark, opened: str) -> None:
    """The signed-URL file ``opened`` with one character of its signature changed: the store
    refuses the read, and the error says why."""
    import base64

    from qbeast.spark.bridge import prefix_scan
    from qbeast.spark.file_access import signed_path

    _, size, encoded, name = opened.removeprefix("qbeasthttp://").split("/")
    url = base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)).decode()
    assert "sig=" in url  # an Azure SAS
    head, signature = url.split("sig=", 1)
    forged = f"{head}sig={'A' if signature[0] != 'A' else 'B'}{signature[1:]}"
    with pytest.raises(Exception, match=r"refused \(HTTP 403\)"):  # noqa: PT011 - Spark's job error
        prefix_scan(spark, [(signed_path(forged, int(size), name), int(size), 0)],
                    _events_schema()).count()


def _events_schema():
    from pyspark.sql.types import DoubleType, IntegerType, LongType, StructField, StructType

    return StructType([StructField("id", LongType()), StructField("user_id", IntegerType()),
                       StructField("price", DoubleType())])


def test_the_engine_reads_and_vacuums_a_gcs_table_with_deltalake_reading_the_same_rows(
        spark, gcs_environment, tmp_path: Path) -> None:
    """A GCS emulator (fake-gcs-server) instead of S3. It takes no write object_store sends
    (tests/gcs_server.py), so the table is written, appended, deleted from, merged into and
    optimized on the local disk and copied into the bucket as it is; on ``gs://`` the engine
    then reads it whole, sampled, filtered and through SQL, deltalake reads the same rows from
    the bucket, and vacuum deletes exactly the objects no version needs."""
    import deltalake
    from gcs_server import root_location

    local = str(tmp_path / "events")
    qbeast.write(_events(spark, 0, 6_000), local, columns_to_index="user_id,price", cube_size=1_000)
    qbeast.write(_events(spark, 6_000, 1_000), local)
    written = qbeast.QbeastTable.for_path(spark, local)
    written.delete("id % 10 = 0")
    upserts = spark.createDataFrame([(1, 5, 1.0), (9_999, 6, 2.0)], "id long, user_id int, price double")
    merged = written.merge(upserts, on=["id"])
    assert (merged.rows_updated, merged.rows_inserted) == (1, 1)
    assert written.optimize(merge_revisions=True).versions  # files rewritten: removes in the log
    expected = sorted([i for i in range(7_000) if i % 10] + [9_999])
    path = f"{root_location(uuid.uuid4().hex[:12])}/events"
    gcs_environment.upload_tree(local, path)

    spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
    try:
        table = qbeast.QbeastTable.for_path(spark, path)
        assert sorted(r.id for r in table.to_df().select("id").collect()) == expected
        assert table.sample(0.1).count() == written.sample(0.1).count() > 0
        assert table.to_df(filter="user_id < 100").count() == \
            written.to_df().where("user_id < 100").count() > 0
        assert spark.read.format("qbeast").load(path).where("price < 50").count() == \
            written.to_df().where("price < 50").count()
        assert sorted(QbeastSnapshot.load(path).revisions) == sorted(QbeastSnapshot.load(local).revisions)

        def deltalake_ids() -> list[int]:  # the environment's GOOGLE_SERVICE_ACCOUNT only
            return sorted(deltalake.DeltaTable(path).to_pyarrow_table(columns=["id"])
                          .column("id").to_pylist())

        assert deltalake_ids() == expected
        live = {a.path for a in DeltaLog.for_path(path).snapshot().files.values()}
        before = set(_objects(path))
        report = table.vacuum(retention_hours=0, allow_short_retention=True)
        after = set(_objects(path))
        assert before - after and set(report.files) == before - after and live <= after
        assert deltalake_ids() == expected
    finally:
        spark.conf.unset("spark.qbeast.storage.mirrorDir")


def test_sql_and_dataframes_read_a_bucket_table_by_signed_urls(spark, bucket_root: str) -> None:
    """``spark.qbeast.storage.bridgeFiles=signed`` (what a cluster master gets by default):
    Spark's own parquet reader opens the planned files of a bucket table by ranged GETs on URLs
    signed here, and keeps no local copy. Every SQL bridge check holds (pruning per filter
    kind, samples, native scans, column pruning, rows equal to the engine's DataFrame reads and
    to plain parquet), and both SQL and the DataFrame API list signed-URL files."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from sql_bridge_checks import bridge_report, problems, write_table

    from qbeast.spark.file_access import mirror as session_mirror

    path = f"{bucket_root}/bridge"
    write_table(spark, path)
    mirror = session_mirror(spark)
    shutil.rmtree(mirror.files_dir, ignore_errors=True)  # the write's uploads become copies
    spark.conf.set("spark.qbeast.storage.bridgeFiles", "signed")
    try:
        # the Python source reads the bucket in its own test (its planner has the session's
        # first environment, without this test's AWS settings)
        report = bridge_report(spark, path, catalog="s3_signed", python_source=False)
        sql_files = spark.sql(f"select * from qbeast.`{path}` where zone < 10").inputFiles()
        api_files = qbeast.QbeastTable.for_path(spark, path).sample(0.05).inputFiles()
    finally:
        spark.conf.unset("spark.qbeast.storage.bridgeFiles")
    assert not problems(report), problems(report)
    for files in (sql_files, api_files):
        assert files and all(p.startswith("qbeasthttp://signed/") for p in files), files
    assert not os.path.exists(mirror.files_dir) or not os.listdir(mirror.files_dir)  # no copies


def test_row_level_changes_reading_by_signed_urls_equal_local_copies(spark, bucket_root: str) -> None:
    """A delete, updates in place and moving rows, a key merge, a delete+insert and an optimize
    read the old files by signed URL (what a cluster master does) and give the same change
    counts, rows and files (rows, stats and blocks per file) as with local copies. A change scans its files more
    than once and joins the scans by the path Spark reports: a file signed twice would match
    none of its rows, and they would be lost."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
    from cluster_scenarios import row_level_changes, write_and_append
    from write_checks import file_descriptions

    outcomes = {}
    for mode in ("copies", "signed"):
        path = f"{bucket_root}/{mode}"
        write_and_append(spark, path, 6_000, 600)
        spark.conf.set("spark.qbeast.storage.bridgeFiles", mode)
        try:
            outcomes[mode] = row_level_changes(spark, path, 6_000)
        finally:
            spark.conf.unset("spark.qbeast.storage.bridgeFiles")
        outcomes[mode]["files"] = file_descriptions(path)
    changes = outcomes["copies"]["changes"]
    # (an optimize of a table this small may find nothing to lay out: it is compared, not required)
    assert all(any(counts) for name, counts in changes.items() if name != "optimize_commits"), changes
    assert outcomes["signed"] == outcomes["copies"]


def test_hadoop_reads_without_a_connector_fall_back_or_are_refused_naming_the_setting(
        spark, bucket_root: str) -> None:
    """The shared session is a plain pip pyspark: its Hadoop has no file system for s3, s3a, gs
    or abfss, so ``bridgeFiles=auto`` reads local copies here. ``bridgeFiles=hadoop`` is refused
    for a read and for an append, before anything is written, with an error that names the
    setting, the schemes looked for and the other values (the reads through a real connector:
    tests/cluster/test_standalone_cluster.py)."""
    from qbeast.errors import InvalidOptionError
    from qbeast.spark.file_access import FileAccess, hadoop_file_system

    assert {scheme: hadoop_file_system(spark, scheme)
            for scheme in ("s3", "s3a", "gs", "abfss")} == dict.fromkeys(("s3", "s3a", "gs", "abfss"))
    assert FileAccess.decide(spark, f"{bucket_root}/hadoop").mode == "copies"
    path = f"{bucket_root}/hadoop"
    qbeast.write(_events(spark, 0, 2_000), path, columns_to_index="user_id,price", cube_size=500)
    table = qbeast.QbeastTable.for_path(spark, path)
    before = _objects(path)
    spark.conf.set("spark.qbeast.storage.bridgeFiles", "hadoop")
    try:
        with pytest.raises(InvalidOptionError) as read:
            table.to_df().count()
        with pytest.raises(InvalidOptionError) as append:
            qbeast.write(_events(spark, 2_000, 500), path, mode="append")
    finally:
        spark.conf.unset("spark.qbeast.storage.bridgeFiles")
    for refused in (read.value, append.value):
        message = str(refused)
        assert "spark.qbeast.storage.bridgeFiles=hadoop" in message, message
        assert "no file system for s3:// or s3a://" in message and "auto, copies, signed" in message
    assert _objects(path) == before and DeltaLog.for_path(path).snapshot().version == 0
    assert table.to_df().count() == 2_000


@pytest.mark.skipif(__import__("qbeast.spark.bridge", fromlist=["jar_path"]).jar_path() is None,
                    reason="the bridge jar is not built (no javac when `make` ran)")
def test_create_table_as_select_on_s3_and_s3a_locations(spark, bucket_root: str,
                                                        s3_environment: str) -> None:
    """Spark checks a CTAS location through Hadoop, which has no file system for s3 here: the
    bridge makes that check through the engine's storage instead. Both schemes create the table
    with the rows, deltalake reads them; a CTAS onto a location that holds a table is refused
    and leaves it as it was; IF NOT EXISTS on an existing name changes nothing."""
    names = []
    try:
        for scheme in ("s3", "s3a"):
            name, location = f"ctas_{scheme}", f"{scheme}://{bucket_root[5:]}/{scheme}"
            names.append(name)
            spark.sql(f"DROP TABLE IF EXISTS {name}")
            spark.sql(f"CREATE TABLE {name} USING qbeast OPTIONS ('columnsToIndex'='id,k', "
                      f"'cubeSize'='500') LOCATION '{location}' AS "
                      "SELECT id, id % 7 AS k FROM range(2000)")
            assert spark.sql(f"SELECT count(*), sum(k) FROM {name}").first() == (2000, 5995)
            engine = qbeast.QbeastTable.for_path(spark, location)
            assert engine.to_df().count() == 2000 and engine.indexed_columns() == ["id", "k"]
            assert _deltalake_ids(f"{bucket_root}/{scheme}", s3_environment) == list(range(2000))
        names.append("ctas_again")
        with pytest.raises(Exception) as refused:  # noqa: PT011 - the bridge's error, wrapped
            spark.sql(f"CREATE TABLE ctas_again USING qbeast OPTIONS ('columnsToIndex'='id') "
                      f"LOCATION '{bucket_root}/s3' AS SELECT 1 AS id, 1 AS k")
        assert (f"cannot create a table at {bucket_root}/s3: the location is not empty"
                in str(refused.value))
        spark.sql(f"CREATE TABLE IF NOT EXISTS ctas_s3 USING qbeast OPTIONS ('columnsToIndex'="
                  f"'id') LOCATION '{bucket_root}/s3' AS SELECT 1 AS id, 1 AS k")
        assert DeltaLog.for_path(f"{bucket_root}/s3").snapshot().version == 0
        assert spark.sql("SELECT count(*) FROM ctas_s3").first()[0] == 2000
    finally:
        for name in names:
            spark.sql(f"DROP TABLE IF EXISTS {name}")
