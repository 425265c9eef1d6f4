"""``qbeast serve`` started as its own process, reached by real clients on loopback.

A Qbeast table is written by the engine here; the server registers and reads it for a Spark
Connect client, beeline (the Hive JDBC driver) and PyHive (what dbt-spark's ``thrift`` method
uses), each result equal to the engine's own, each plan a native parquet scan over the
engine's file index. A second server on the same catalog, or on a taken port, is refused
before it starts Spark; SIGTERM stops the server cleanly and leaves the table as committed.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import qbeast
from qbeast.delta.log import DeltaLog
from cluster_processes import free_loopback_port
from listening_sockets import listening, spark_rpc_answers
from cluster_scenarios import (
    api_counts,
    deltalake_event_ids,
    local_copy,
)
from s3_server import BUCKET
from dbt_steps import parse_steps
from write_checks import check_index  # tests/spark, on the path via cluster_scenarios

QBEAST = str(Path(sys.executable).with_name("qbeast"))
BEELINE = Path(__import__("pyspark").__file__).parent / "bin" / "beeline"


class Server:
    """One ``qbeast serve`` process and its log."""

    def __init__(self, catalog: Path, log: Path, connect_port: int, thrift_port: int,
                 *extra: str, env: dict[str, str] | None = None) -> None:
        self.catalog, self.log = catalog, log
        self.connect_port, self.thrift_port = connect_port, thrift_port
        self.token: str | None = None  # QBEAST_SERVE_TOKEN, where the test gave one
        self.process = subprocess.Popen(
            [QBEAST, "serve", "--catalog-dir", str(catalog), "--connect-port", str(connect_port),
             "--thrift-port", str(thrift_port), "--conf", "spark.driver.memory=1g", *extra],
            stdout=log.open("w"), stderr=subprocess.STDOUT, cwd=log.parent,
            env={**os.environ, **(env or {})},
            start_new_session=True)  # a signal for the test run must not reach it

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, timeout: float = 180.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if "qbeast serve: ready" in self.text():
                return
            if self.process.poll() is not None:
                pytest.fail(f"qbeast serve exited with {self.process.returncode}:\n{self.text()[-4000:]}")
            time.sleep(0.5)
        pytest.fail(f"qbeast serve not ready in {timeout}s:\n{self.text()[-4000:]}")

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


@pytest.fixture(scope="module")
def served(spark, tmp_path_factory):
    """A table written by the engine, and a server over a fresh catalog (stopped at the end)."""
    base = tmp_path_factory.mktemp("serve")
    table = base / "events"
    qbeast.write(spark.range(20_000).selectExpr("id", "id % 97 as k", "id * 0.5 as v"),
                 str(table), columns_to_index=["id", "k"], cube_size=2_000)
    server = Server(base / "catalog", base / "serve.log", free_loopback_port(), free_loopback_port())
    try:
        server.wait_ready()
        yield server, table
    finally:
        server.stop()


def _connect_client(port: int, sql: list[str], url_suffix: str = "") -> list:
    """Each statement's rows (as lists) from a Spark Connect client in its own process."""
    script = textwrap.dedent(f"""
        import json, sys
        from pyspark.sql import SparkSession
        s = SparkSession.builder.remote("sc://127.0.0.1:{port}{url_suffix}").getOrCreate()
        out = [[list(r) for r in s.sql(q).collect()] for q in json.loads(sys.argv[1])]
        print("RESULT " + json.dumps(out, default=str))
    """)
    run = subprocess.run([sys.executable, "-c", script, json.dumps(sql)], capture_output=True,
                         text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-4000:]
    line = next(x for x in run.stdout.splitlines() if x.startswith("RESULT "))
    return json.loads(line.removeprefix("RESULT "))


def _connect_error(port: int, sql: str, url_suffix: str = "") -> str:
    """The error a Spark Connect client gets for ``sql`` (the test fails if it succeeds)."""
    script = textwrap.dedent(f"""
        import sys
        from pyspark.sql import SparkSession
        s = SparkSession.builder.remote("sc://127.0.0.1:{port}{url_suffix}").getOrCreate()
        try:
            s.sql(sys.argv[1]).collect()
        except Exception as exc:
            print("ERROR " + " ".join(str(exc).split()))
    """)
    run = subprocess.run([sys.executable, "-c", script, sql], capture_output=True, text=True,
                         timeout=300, check=False)
    line = next((x for x in run.stdout.splitlines() if x.startswith("ERROR ")), None)
    assert line is not None, f"{sql!r} did not fail: {run.stdout[-2000:]}{run.stderr[-2000:]}"
    return line


def _plan_text(rows: list) -> str:
    return "\n".join(str(cell) for row in rows for cell in row)


def test_clients_read_a_qbeast_table_through_one_server(spark, served):
    server, table = served
    engine = qbeast.QbeastTable.for_path(spark, str(table))
    total = engine.to_df().selectExpr("count(*)", "sum(k)").first()
    sampled = engine.sample(0.1).count()
    assert 0 < sampled < 20_000

    # Spark Connect: register the folder in the server's catalog, then read, sample, explain
    results = _connect_client(server.connect_port, [
        f"create table events using qbeast location '{table}'",
        "select count(*), sum(k) from events",
        "select count(*) from events tablesample (10 percent)",
        "explain select id from events where id < 100",
        f"select count(*), sum(k) from qbeast.`{table}`",  # a path query: no catalog entry
        f"explain select id from qbeast.`{table}` where id < 100",
    ])
    assert results[1] == [[total[0], total[1]]]
    assert results[2] == [[sampled]]  # the Qbeast sample: rows with hash < Weight(0.1)
    plan = _plan_text(results[3])
    assert "FileScan parquet" in plan and "QbeastFileIndex" in plan and "Batched: true" in plan
    assert results[4] == [[total[0], total[1]]]
    assert "FileScan parquet" in _plan_text(results[5]) and "QbeastFileIndex" in _plan_text(results[5])

    # beeline, the Hive JDBC driver's shell: the same table through the Thrift protocol
    url = f"jdbc:hive2://127.0.0.1:{server.thrift_port}/default"
    run = subprocess.run(
        [str(BEELINE), "-u", url, "--silent=true", "--outputformat=csv2", "-e",
         "select count(*), sum(k) from events; explain select id from events where id < 100;"],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "SPARK_HOME": str(BEELINE.parent.parent)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"{total[0]},{total[1]}" in run.stdout
    assert "FileScan parquet" in run.stdout and "QbeastFileIndex" in run.stdout

    # PyHive (dbt-spark's thrift method): a sampled aggregate equals the engine's
    from pyhive import hive

    with hive.connect(host="127.0.0.1", port=server.thrift_port, username="qbeast") as connection:
        cursor = connection.cursor()
        cursor.execute("select count(*), sum(k) from events tablesample (10 percent)")
        (count, sum_k), = cursor.fetchall()
        cursor.execute(f"select count(*), sum(k) from qbeast.`{table}` tablesample (10 percent)")
        assert cursor.fetchall() == [(count, sum_k)]
    expected = engine.sample(0.1).selectExpr("count(*)", "sum(k)").first()
    assert (count, sum_k) == (expected[0], expected[1])



def test_sql_clients_create_and_insert_through_the_server(spark, served, tmp_path):
    """A SQL-only client creates a Qbeast table (CTAS with the index in OPTIONS), inserts into
    it and calls the table operations (CALL qbeast_system...) over Thrift; a Spark Connect client
    saves a DataFrame with format("qbeast"). Each is the engine's work in the server's driver:
    the engine here reads the same rows, index and versions. A bad option reaches the client as
    an SQL error naming it."""
    from pyhive import hive

    server, _ = served
    made = tmp_path / "sql_made"
    with hive.connect(host="127.0.0.1", port=server.thrift_port, username="qbeast") as connection:
        cursor = connection.cursor()
        cursor.execute(f"create table sql_made using qbeast options ('columnsToIndex'='id,k', "
                       f"'cubeSize'='500') location '{made}' as "
                       "select id, id % 13 as k from range(3000)")
        cursor.execute("insert into sql_made select id + 3000, 1 from range(100)")
        cursor.execute("select count(*), sum(id) from sql_made")
        assert cursor.fetchall() == [(3100, sum(range(3100)))]
        # the table operations as procedures of the server's engine
        cursor.execute("call qbeast_system.history(table => 'sql_made')")
        assert [(r[0], r[2]) for r in cursor.fetchall()] == [(1, "WRITE"), (0, "WRITE")]
        cursor.execute("call qbeast_system.optimize('sql_made')")
        assert cursor.fetchall()[0][0].startswith(f"optimize of {made}")
    table = qbeast.QbeastTable.for_path(spark, str(made))
    assert table.indexed_columns() == ["id", "k"]
    assert [e.operation for e in table.history().entries][-2:] == ["WRITE", "WRITE"]
    assert table.to_df().selectExpr("count(*)", "sum(id)").first() == (3100, sum(range(3100)))

    saved = tmp_path / "connect_saved"
    script = textwrap.dedent(f"""
        from pyspark.sql import SparkSession
        s = SparkSession.builder.remote("sc://127.0.0.1:{server.connect_port}").getOrCreate()
        (s.range(500).selectExpr("id", "id % 4 as k").write.format("qbeast")
         .option("columnsToIndex", "k").mode("overwrite").save("{saved}"))
        print("SAVED", s.read.format("qbeast").load("{saved}").count())
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, check=False)
    assert "SAVED 500" in run.stdout, run.stdout[-2000:] + run.stderr[-3000:]
    assert qbeast.QbeastTable.for_path(spark, str(saved)).indexed_columns() == ["k"]

    refused = _connect_error(server.connect_port, "create table bad_size using qbeast options "
                             "('cubeSize'='many') as select 1 as id")
    assert "option cubeSize must be a positive integer (rows), got 'many'" in refused


def _lifecycle_sql(name: str, folder: Path) -> list[str]:
    """Create, append, merge into (by procedure and by statement), update, delete from and sample
    one table: the statements every client runs."""
    return [
        f"create table {name} using qbeast options ('columnsToIndex'='id,k', 'cubeSize'='500') "
        f"location '{folder}' as select id, id % 13 as k, 0 as v from range(3000)",
        f"insert into {name} select id + 3000, 1, 0 from range(200)",
        # 300 rows of the source match (ids 2900-3199), 100 are new (3200-3299)
        f"call qbeast_system.merge(table => '{name}', "
        "source => 'select id, id % 13 as k, 1 as v from range(2900, 3300)', on => 'id')",
        # SQL's row-level statements, run as the engine's changes
        f"update {name} set v = v + 1 where id >= 3250",
        f"merge into {name} t using (select 3250 as id, 0 as k, 5 as v) s on t.id = s.id "
        "when matched then update set *",
        f"delete from {name} where id < 100",
        f"select count(*), sum(v), sum(id) from {name}",
        f"select count(*), sum(id) from {name} tablesample (10 percent)",
    ]


def test_each_sql_client_creates_appends_merges_changes_and_samples(spark, served, tmp_path):
    """Spark Connect, beeline (Hive JDBC) and PyHive each run the same life cycle of a table in
    SQL (UPDATE, MERGE INTO and DELETE included); the engine here reads what each built: the same rows, the
    index asked for, one commit per statement, and the client's sample equal to the engine's."""
    from pyhive import hive

    server, _ = served
    want_total = [3200, 453, sum(range(100, 3300))]
    sampled: dict[str, list] = {}

    connect_rows = _connect_client(server.connect_port,
                                   _lifecycle_sql("by_connect", tmp_path / "by_connect"))
    assert connect_rows[6] == [want_total]
    sampled["by_connect"] = connect_rows[7][0]

    with hive.connect(host="127.0.0.1", port=server.thrift_port, username="qbeast") as connection:
        cursor = connection.cursor()
        for statement in _lifecycle_sql("by_pyhive", tmp_path / "by_pyhive"):
            cursor.execute(statement)
            rows = cursor.fetchall() if cursor.description else []
    sampled["by_pyhive"] = list(rows[0])

    script = ";\n".join(_lifecycle_sql("by_beeline", tmp_path / "by_beeline")) + ";"
    run = subprocess.run(
        [str(BEELINE), "-u", f"jdbc:hive2://127.0.0.1:{server.thrift_port}/default",
         "--silent=true", "--outputformat=csv2", "-e", script],
        capture_output=True, text=True, timeout=300, check=False,
        env={**os.environ, "SPARK_HOME": str(BEELINE.parent.parent)})
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert ",".join(map(str, want_total)) in run.stdout
    sampled["by_beeline"] = [int(v) for v in run.stdout.strip().splitlines()[-1].split(",")]

    for name, sample in sampled.items():
        table = qbeast.QbeastTable.for_path(spark, str(tmp_path / name))
        assert table.indexed_columns() == ["id", "k"]
        assert [e.operation for e in table.history().entries] == [
            "DELETE", "MERGE", "UPDATE", "MERGE", "WRITE", "WRITE"]
        rows = table.to_df().selectExpr("count(*)", "sum(v)", "sum(id)").first()
        assert list(rows) == want_total, name
        expected = table.sample(0.1).selectExpr("count(*)", "sum(id)").first()
        assert sample == list(expected), name


@pytest.mark.objectstore
def test_a_connect_client_changes_an_s3_table_through_the_server_like_embedded(
        spark, served, run_scenario, s3_environment, embedded_bucket_baseline, tmp_path):
    """A Spark Connect client of the server writes a table on the bucket, deletes, updates,
    merges, optimizes, and converts a parquet folder there: the client plans and signs (the
    server has no AWS setting), the server's parquet reader opens the old files by signed URL
    (the bridge's file system the server installed), its tasks upload the new files. The same
    rows, counts, samples and change counts as the embedded run, a valid index in the files,
    and the same rows read by deltalake. With spark.qbeast.storage.bridgeFiles=copies the
    client reads in Arrow tasks and is refused a change, naming what works."""
    server, _ = served
    embedded_path, embedded = embedded_bucket_baseline
    connect_path = f"s3://{BUCKET}/{os.urandom(6).hex()}/connect"
    result = run_scenario("--remote", f"sc://127.0.0.1:{server.connect_port}", "--object-store-write",
                          "--table", connect_path)

    assert result["session_type"] == "pyspark.sql.connect.session"
    # no credential or endpoint on the server (a machine-wide CA bundle is neither): it reads
    # only what the client signed, its tasks upload with the settings the client shipped
    assert set(result["worker_aws_variables"]) <= {"AWS_CA_BUNDLE"}
    assert result["signed_reads"] is True
    assert result["counts"] == api_counts(embedded["counts"])
    for step in ("written", "row_level", "converted"):
        assert result[step] == embedded[step], step
    changes = embedded["row_level"]["changes"]
    assert all(any(counts) for counts in changes.values()), changes
    assert embedded["converted"]["rows"] == 6_000 and embedded["converted"]["revision_ids"] == [0, 1]
    assert result["copies_rows"] == embedded["row_level"]["counts"]["rows"]
    assert result["delete"].startswith(f"InvalidOptionError: {connect_path}: ")  # the table
    assert "through Spark Connect need a server that reads their files by signed URL" in result["delete"]
    # the server's tasks estimate over other partitions than embedded, so cube thresholds may
    # differ: the files must hold a valid index (checked on a copy of the bucket's objects)
    check_index(spark, local_copy(connect_path, tmp_path / "copy"))
    check_index(spark, local_copy(f"{connect_path}-plain", tmp_path / "copy-plain"))
    assert (deltalake_event_ids(connect_path, s3_environment)
            == deltalake_event_ids(embedded_path, s3_environment))


@pytest.fixture(scope="module")
def bucket_server(tmp_path_factory, moto_endpoint):
    """A server whose driver has the test bucket's AWS settings (what it plans itself, SQL over
    bucket tables and the catalog's entries for them, reads the bucket with them), bound to
    every interface with a token: its clients send the token, and the token test checks what
    such a server admits. One server for both saves a driver start."""
    from s3_server import aws_environment

    base = tmp_path_factory.mktemp("serve-bucket")
    token = "s3cret-" + os.urandom(12).hex()
    server = Server(base / "catalog", base / "serve.log", free_loopback_port(),
                    free_loopback_port(), "--host", "0.0.0.0",
                    env={**aws_environment(moto_endpoint), "QBEAST_SERVE_TOKEN": token})
    server.token = token
    try:
        server.wait_ready()
        yield server
    finally:
        server.stop()


@pytest.mark.objectstore
def test_example_project_on_a_bucket_builds_and_merges_through_the_server(
        bucket_server, build_example_project, s3_environment, embedded_bucket_dbt_build):
    """dbt with `method: connect` to the server and the Qbeast models on the bucket, built and
    run a second time: the same models, rows, revisions and samples as embedded. The models
    write from dbt's process (Arrow tasks on the server), the click stream's incremental merge
    reads its files by URLs dbt's process signed, the marts read it in SQL planned by the
    server."""
    root, embedded = embedded_bucket_dbt_build
    built = build_example_project("serve-bucket", method="connect",
                                  host=f"sc://127.0.0.1:{bucket_server.connect_port}",
                                  token=bucket_server.token, schema="served_bucket",
                                  location_root=f"{root}/served", runs=2)
    assert built == embedded
    assert DeltaLog.for_path(f"{root}/served/events").snapshot().version >= 1  # merged into


@pytest.mark.objectstore
def test_create_table_as_select_on_a_bucket_through_the_server(bucket_server, s3_environment):
    """CTAS on s3:// and s3a:// locations from a Spark Connect client: the server's driver
    creates the tables with its bucket settings and answers with their rows."""
    root = f"{BUCKET}/{os.urandom(6).hex()}"
    statements = []
    for scheme in ("s3", "s3a"):
        statements += [
            f"CREATE TABLE served_ctas_{scheme} USING qbeast OPTIONS ('columnsToIndex'='id') "
            f"LOCATION '{scheme}://{root}/{scheme}' AS SELECT id, id % 5 AS k FROM range(1500)",
            f"SELECT count(*), sum(k) FROM served_ctas_{scheme}",
            f"DROP TABLE served_ctas_{scheme}"]
    answers = _connect_client(bucket_server.connect_port, statements,
                              f"/;x-qbeast-token={bucket_server.token}")
    assert answers[1] == answers[4] == [[1500, 3000]]
    assert DeltaLog.for_path(f"s3://{root}/s3a").snapshot().num_records == 1500


def _check_sockets(server: Server, interface: str) -> None:
    """Every socket the server's processes listen on is on ``interface`` or loopback, and each
    one besides the two announced ports that speaks Spark's RPC refuses a client without the
    secret in its authentication handshake (the driver's RPC and block manager ports)."""
    sockets = listening(server.process.pid)
    ports = {port for _, port in sockets}
    assert {server.connect_port, server.thrift_port} <= ports, sockets
    loopback = {"127.0.0.1", "::1", "::ffff:127.0.0.1"}
    assert all(address in loopback | {interface} for address, _ in sockets), sockets
    if interface == "0.0.0.0":  # the announced ports are where --host says
        assert {(interface, server.connect_port), (interface, server.thrift_port)} <= sockets
    answers = spark_rpc_answers("127.0.0.1", ports - {server.connect_port, server.thrift_port})
    assert sum(a.startswith("refused: ") for a in answers.values()) >= 2, answers
    assert not any(a.startswith("answered: ") for a in answers.values()), answers


def test_a_server_listens_on_loopback_only_and_its_rpc_needs_the_secret(served):
    """The default server: Spark Connect, Thrift, the driver's RPC, its block manager, py4j and
    the Python workers' daemon all listen on loopback; nothing is on the machine's address."""
    server, _ = served
    _connect_client(server.connect_port, ["select 1"])  # a query ran: workers and blocks exist
    _check_sockets(server, "127.0.0.1")


def test_a_second_server_is_refused_before_spark_starts(served, tmp_path):
    server, _ = served
    same_catalog = subprocess.run(
        [QBEAST, "serve", "--catalog-dir", str(server.catalog), "--connect-port",
         str(free_loopback_port()), "--thrift-port", str(free_loopback_port())],
        capture_output=True, text=True, timeout=120, check=False)
    assert same_catalog.returncode == 2
    assert f"the embedded catalog {server.catalog} is in use by another process" in same_catalog.stderr
    assert f"process {server.process.pid}" in same_catalog.stderr

    taken_port = subprocess.run(
        [QBEAST, "serve", "--catalog-dir", str(tmp_path / "other"), "--connect-port",
         str(server.connect_port), "--thrift-port", "0"],
        capture_output=True, text=True, timeout=120, check=False)
    assert taken_port.returncode == 2
    assert f"port {server.connect_port} on 127.0.0.1 (--connect-port) is taken" in taken_port.stderr
    assert "starting the driver" not in taken_port.stderr  # refused before Spark

    not_loopback = subprocess.run(
        [QBEAST, "serve", "--catalog-dir", str(tmp_path / "other"), "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120, check=False)
    assert not_loopback.returncode == 2, not_loopback.stderr
    assert "--host '0.0.0.0' lets other machines connect, and they must authenticate" in \
        not_loopback.stderr and "--token-file FILE" in not_loopback.stderr
    assert "starting the driver" not in not_loopback.stderr


def test_a_server_off_loopback_admits_only_clients_with_its_token(bucket_server, tmp_path):
    """Bound to every interface (0.0.0.0) with a token: Spark Connect and Thrift clients without
    it, or with a wrong one, are refused before any statement runs; with it, they query. The
    secret stays out of the server's log (here after the bucket builds through it too)."""
    from pyhive import hive

    server, token = bucket_server, bucket_server.token
    short = subprocess.run(
        [QBEAST, "serve", "--catalog-dir", str(tmp_path / "short"), "--host", "0.0.0.0"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "QBEAST_SERVE_TOKEN": "tiny"})
    assert short.returncode == 2 and "the server token has 4 characters" in short.stderr

    assert f"sc://0.0.0.0:{server.connect_port}/;x-qbeast-token=TOKEN" in server.text()
    _check_sockets(server, "0.0.0.0")

    missing = _connect_error(server.connect_port, "select 1")
    assert "UNAUTHENTICATED" in missing or "requires its token" in missing, missing
    wrong = _connect_error(server.connect_port, "select 1", "/;x-qbeast-token=not-the-token")
    assert "UNAUTHENTICATED" in wrong or "not its token" in wrong, wrong
    assert _connect_client(server.connect_port, ["select 41 + 1"],
                           f"/;x-qbeast-token={token}") == [[[42]]]

    refusals = server.text().count("qbeast serve requires its token as the password")
    for password in (None, "not-the-token"):
        with pytest.raises(Exception) as refused:  # noqa: PT011 - thrift's transport error
            hive.connect(host="127.0.0.1", port=server.thrift_port, username="me",
                         password=password or "x", auth="CUSTOM" if password else "NONE")
        assert refused.value is not None
    # refused by the token check (a client sees only a closed connection)
    assert server.text().count("qbeast serve requires its token as the password") == refusals + 2
    cursor = hive.connect(host="127.0.0.1", port=server.thrift_port, username="me",
                          password=token, auth="CUSTOM").cursor()
    cursor.execute("select 40 + 2")
    assert cursor.fetchall() == [(42,)]
    cursor.close()

    # dbt's `method: connect` with the profile's `token` (sent as the header the server checks)
    from cluster_dbt import copy_project, qbeast_target
    url = f"sc://127.0.0.1:{server.connect_port}"
    project = copy_project(tmp_path / "project", {
        "served": qbeast_target(method="connect", host=url, token=token),
        "wrong": qbeast_target(method="connect", host=url, token="not-the-token"),
        "thrift": qbeast_target(method="thrift", host="127.0.0.1", port=server.thrift_port,
                                user="me", token=token)})
    # one process per target (not _dbt_steps): a Spark Connect session made with the right
    # token must not be reused by the wrong token's check in the same process
    for target, ok in (("served", True), ("wrong", False), ("thrift", True)):
        debug = subprocess.run(
            [str(Path(sys.executable).with_name("dbt")), "--no-use-colors", "debug",
             "--project-dir", str(project), "--profiles-dir", str(project), "--target",
             target], capture_output=True, text=True, timeout=300, check=False, cwd=project)
        assert (debug.returncode == 0) is ok, debug.stdout[-3000:]
        assert ("Connection test: [OK connection ok]" in debug.stdout) is ok
        assert token not in debug.stdout
    assert token not in server.text()


def test_two_dbt_builds_at_once_through_one_server_like_embedded(served, build_example_project,
                                                               embedded_dbt_build):
    """Two projects built at the same time against one server, each in its own schema: one with
    `method: connect` and the server's URL (the engine writes from dbt's process, the server's
    driver plans the reads and holds the catalog), one with `method: thrift` (host, port, user,
    as dbt-spark's: no Spark session in dbt's process, every engine call a SQL statement the
    server's driver runs). Both green, and each holds what the project built embedded holds,
    every row once: the same models, rows and samples (the thrift build read back through the
    server's Spark Connect port)."""
    from concurrent.futures import ThreadPoolExecutor

    server, _ = served
    url = f"sc://127.0.0.1:{server.connect_port}"
    with ThreadPoolExecutor(max_workers=2) as pool:
        connect = pool.submit(build_example_project, "serve_connect", method="connect",
                              host=url, schema="served_connect")
        thrift = pool.submit(build_example_project, "serve_thrift", method="thrift",
                             host="127.0.0.1", port=server.thrift_port, user="dbt",
                             schema="served_thrift", measure_remote=url)
        built = {"connect": connect.result(), "thrift": thrift.result()}
    assert built["connect"] == embedded_dbt_build
    assert built["thrift"] == embedded_dbt_build


#: A project that uses what the example project does not: the append and delete+insert
#: strategies, a merge with merge_exclude_columns, a qbeast snapshot, data tests, qbeast_sample,
#: qbeast_approx, run-operations, and a Python model (refused over thrift).
_THRIFT_PROJECT = {
    "dbt_project.yml": "name: thrift_check\nversion: '1.0'\nconfig-version: 2\nprofile: thrift_check\n"
                       "vars: {round: 1}\n",
    "seeds/people.csv": "id,name,score\n1,ann,10\n2,bob,\n3,cy,30\n",
    "models/people_q.sql": "{{ config(materialized='qbeast', columns_to_index=['id']) }}\n"
                           "-- a leading comment, as the models' SQL often has\n"
                           "select * from {{ ref('people') }}",
    "models/appended.sql": "{{ config(materialized='incremental', file_format='qbeast', "
                           "incremental_strategy='append', columns_to_index=['id']) }}\n"
                           "select id + {{ var('round') }} * 100 as id, name from {{ ref('people') }}",
    "models/keyed.sql": "{{ config(materialized='incremental', file_format='qbeast', "
                        "incremental_strategy='delete+insert', unique_key='id', columns_to_index=['id']) }}\n"
                        "select id, name, {{ var('round') }} as round from {{ ref('people') }}\n"
                        "{% if is_incremental() %} where id >= 2 {% endif %}",
    "models/merged.sql": "{{ config(materialized='incremental', file_format='qbeast', "
                         "incremental_strategy='merge', unique_key='id', columns_to_index=['id'], "
                         "merge_exclude_columns=['first_round']) }}\n"
                         "select id, {{ var('round') }} as round, {{ var('round') }} as first_round "
                         "from {{ ref('people') }}",
    "models/sampled.sql": "{{ config(materialized='table') }}\n"
                          "select count(*) as n from {{ qbeast_sample(ref('people_q'), 1.0) }}",
    "models/approxed.sql": "{{ config(materialized='table') }}\n"
                           "select aggregate, estimate from "
                           "{{ qbeast_approx(ref('people_q'), ['count(*)', 'avg(score)'], tolerance=0) }}",
    "models/py_model.py": "def model(dbt, session):\n    dbt.config(materialized='table')\n"
                          "    return session.range(1)\n",
    "models/schema.yml": "version: 2\nmodels:\n  - name: people_q\n    columns:\n      - name: id\n"
                         "        data_tests: [unique, not_null]\n",
    "snapshots/people_snap.sql": "{% snapshot people_snap %}\n"
                                 "{{ config(target_schema=target.schema, unique_key='id', strategy='check', "
                                 "check_cols=['name'], file_format='qbeast') }}\n"
                                 "select id, case when {{ var('round') }} > 1 and id = 1 then 'anne' "
                                 "else name end as name from {{ ref('people') }}\n{% endsnapshot %}\n",
}


def _dbt_steps(steps: list[list[str]], project: Path) -> list[tuple[bool, dict[str, tuple[str, str]], str]]:
    """dbt commands one after the other in one process of their own (a Spark Connect session
    must not share this test process with the shared classic session; one process for all of
    them pays dbt's start once): per command, success, each node's (status, message) and the
    console (the process's stderr added to every command's)."""
    run = subprocess.run([sys.executable, str(Path(__file__).with_name("dbt_steps.py")),
                          str(project), json.dumps(steps)],
                         capture_output=True, text=True, timeout=1800, check=False, cwd=project)
    results = parse_steps(run.stdout)
    assert run.returncode == 0 and len(results) == len(steps), run.stdout[-3000:] + run.stderr[-3000:]
    return [(ok, nodes, f"{console}\n{run.stderr}") for ok, nodes, console in results]


@pytest.mark.parametrize("method", ["thrift", "connect"])
def test_dbt_commands_through_the_server(served, tmp_path, method):
    """Each kind of dbt node over `method: thrift` (SQL only, the engine in the server) and
    `method: connect` (the engine in dbt's process on a Spark Connect session): seeds (an empty
    cell a null), qbeast models, the append / delete+insert / merge strategies on a second run,
    a qbeast snapshot closing a changed row, data tests, qbeast_sample and qbeast_approx,
    run-operations, a `dbt show` with the `qbeast_sample` var; over thrift a Python model fails naming the method and what to use."""
    import yaml
    from pyhive import hive

    server, _ = served
    project = tmp_path / f"{method}_check"
    for name, text in _THRIFT_PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    schema = f"{method}_ops"
    target = {"type": "qbeast", "method": method, "schema": schema, "threads": 2}
    target.update({"host": "127.0.0.1", "port": server.thrift_port, "user": "dbt"}
                  if method == "thrift" else {"host": f"sc://127.0.0.1:{server.connect_port}"})
    (project / "profiles.yml").write_text(yaml.safe_dump(
        {"thrift_check": {"target": "served", "outputs": {"served": target}}}))

    steps = [["build", "--exclude", "py_model"],
             # the second run of the incremental models and the snapshot
             ["build", "--select", "appended", "keyed", "merged", "people_snap", "--vars", "round: 2"],
             ["run-operation", "qbeast_index_metrics", "--args", "{relation_or_path: people_q}"],
             # a sampled read (`qbeast_sample` var): the filter from the server or the session
             ["show", "--inline", "select count(*) as n from {{ ref('people_q') }}",
              "--vars", "{qbeast_sample: {fraction: 0.5, key: id}}"]]
    if method == "thrift":
        steps.append(["run", "--select", "py_model"])
    (ok, nodes, output), (ok2, nodes2, output2), (ok3, _, output3), (ok5, _, output5), *py_model = \
        _dbt_steps(steps, project)
    assert ok, output[-4000:]
    assert {n: status for n, (status, _) in nodes.items()} == {
        "people": "success", "people_q": "success", "appended": "success", "keyed": "success",
        "merged": "success", "sampled": "success", "approxed": "success",
        "people_snap": "success", "unique_people_q_id": "pass", "not_null_people_q_id": "pass"}
    assert ok2, output2[-4000:]
    assert {n: message.split(" ")[1] for n, (_, message) in nodes2.items()} == {
        "appended": "APPEND", "keyed": "DELETE+INSERT", "merged": "MERGE",
        "people_snap": "SNAPSHOT"}, nodes2
    assert ok3 and "qbeast_index_metrics:" in output3, output3[-3000:]
    assert ok5 and f"qbeast_sample: {schema}.people_q read as a 0.5 sample on the hash of id" in output5, \
        output5[-3000:]
    if method == "thrift":
        [(ok4, _, output4)] = py_model
        assert not ok4
        assert "a Python model is not possible with `method: thrift`" in output4 and \
            "method: connect" in output4, output4[-3000:]

    def rows(sql: str) -> list:
        cursor.execute(sql)
        return [tuple(r) for r in cursor.fetchall()]

    with hive.connect(host="127.0.0.1", port=server.thrift_port, username="check") as connection:
        cursor = connection.cursor()
        assert rows(f"select id, name, score from {schema}.people_q order by id") == [
            (1, "ann", 10), (2, "bob", None), (3, "cy", 30)]
        assert [r[0] for r in rows(f"select id from {schema}.appended order by id")] == [
            101, 102, 103, 201, 202, 203]
        assert rows(f"select id, round from {schema}.keyed order by id") == [
            (1, 1), (2, 2), (3, 2)]
        assert rows(f"select id, round, first_round from {schema}.merged order by id") == [
            (1, 2, 1), (2, 2, 1), (3, 2, 1)]
        assert rows(f"select n from {schema}.sampled") == [(3,)]
        assert sorted(rows(f"select aggregate, estimate from {schema}.approxed")) == [
            ("avg(score)", 20.0), ("count(*)", 3.0)]  # exact at tolerance 0; avg skips the null
        assert rows(f"select id, name, dbt_valid_to is null from {schema}.people_snap "
                    "order by id, dbt_valid_from") == [
            (1, "ann", False), (1, "anne", True), (2, "bob", True), (3, "cy", True)]
        provider = dict(r[:2] for r in rows(f"describe table extended {schema}.keyed"))["Provider"]
        assert provider == "qbeast"


# -- dbt-tests-adapter's suites over `method: thrift` -----------------------------------------
#
# dbt's own classes, run in this process with a profile pointing at the module's server: every
# statement (the test's own setup and checks too) goes over the Thrift protocol, as dbt-spark runs
# them against its `apache_spark` profile. Spark Connect cannot share this process with the
# suite's classic session, so `method: connect` runs in dbt processes of its own
# (test_dbt_commands_through_the_server above). They run before the SIGTERM test below, which
# stops the module's server.

from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations  # noqa: E402
from dbt.tests.adapter.basic.test_incremental import BaseIncremental  # noqa: E402
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection  # noqa: E402
from dbt.tests.fixtures.project import *  # noqa: E402,F401,F403 - dbt-tests-adapter's fixtures


class _ThroughTheServer:
    @pytest.fixture(scope="class")
    def dbt_profile_target(self, served):
        server, _ = served
        return {"type": "qbeast", "method": "thrift", "host": "127.0.0.1",
                "port": server.thrift_port, "user": "dbt", "threads": 1}


class TestSimpleMaterializationsThrift(_ThroughTheServer, BaseSimpleMaterializations):
    pass


class TestIncrementalThrift(_ThroughTheServer, BaseIncremental):
    pass


class TestValidateConnectionThrift(_ThroughTheServer, BaseValidateConnection):
    pass


def test_sigterm_stops_the_server_and_keeps_what_was_committed(spark, served):
    server, table = served
    before = qbeast.QbeastTable.for_path(spark, str(table)).to_df().count()
    assert server.stop() == 0
    log = server.text()
    assert "qbeast serve: stopped" in log and "Traceback" not in log, log[-3000:]
    assert qbeast.QbeastTable.for_path(spark, str(table)).to_df().count() == before
    with socket.socket() as probe:  # the ports are free again
        probe.bind(("127.0.0.1", server.connect_port))

