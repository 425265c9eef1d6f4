"""The bridge's signed-URL file system (``qbeasthttp://``), read by Spark's own parquet reader.

A real HTTP server on loopback serves a parquet file by ranges and records every request, so the
tests see what the file system asks for: only ranges, only the row groups a prefix read needs,
retries of transient failures, and a refusal (an expired signature) reported with the setting
that decides a URL's lifetime. The object-store tests read whole tables this way
(``test_object_store_tables.py``); here the file system is checked on its own.
"""
from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast.spark.bridge import jar_path, prefix_scan
from qbeast.spark.file_access import signed_path

pytestmark = [pytest.mark.spark,
              pytest.mark.skipif(jar_path() is None,
                                 reason="the bridge jar is not built (no javac when `make` ran)")]

ROWS = 200_000
GROUP_ROWS = 50_000


@dataclass
class _Served:
    """What the server holds and what it was asked."""

    files: dict[str, bytes]
    requests: list[tuple[str, str | None, int]] = field(default_factory=list)  # path, Range, status
    failures_left: int = 0  # answer this many GETs with 503 first
    lock: threading.Lock = field(default_factory=threading.Lock)


def _handler(served: _Served):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            path = self.path.split("?", 1)[0]
            wanted = self.headers.get("Range")
            with served.lock:
                failing = served.failures_left > 0
                served.failures_left -= int(failing)
            if path.startswith("/expired/"):
                self._answer(path, wanted, 403, b"<Error><Code>AccessDenied</Code>Request has expired</Error>")
            elif failing:
                self._answer(path, wanted, 503, b"SlowDown")
            elif path not in served.files:
                self._answer(path, wanted, 404, b"NoSuchKey")
            else:
                data = served.files[path]
                match = re.fullmatch(r"bytes=(\d+)-(\d+)", wanted or "")
                if match is None:
                    self._answer(path, wanted, 200, data)
                else:
                    start, end = int(match.group(1)), min(int(match.group(2)), len(data) - 1)
                    self._answer(path, wanted, 206, data[start:end + 1],
                                 {"Content-Range": f"bytes {start}-{end}/{len(data)}"})

        def _answer(self, path: str, wanted: str | None, status: int, body: bytes,
                    headers: dict[str, str] | None = None) -> None:
            with served.lock:
                served.requests.append((path, wanted, status))
            self.send_response(status)
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:  # quiet
            pass

    return Handler


@pytest.fixture(scope="module")
def table() -> pa.Table:
    return pa.table({"id": pa.array(range(ROWS), pa.int64()),
                     "label": [f"row-{i % 977}-{i}" for i in range(ROWS)]})


@pytest.fixture
def server(table: pa.Table, tmp_path: Path) -> Iterator[tuple[str, _Served]]:
    local = tmp_path / "data.parquet"
    pq.write_table(table, local, row_group_size=GROUP_ROWS, compression="snappy")
    served = _Served({"/bucket/data.parquet": local.read_bytes()})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(served))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}", served
    finally:
        httpd.shutdown()
        httpd.server_close()


def _scan(spark, url: str, size: int, read_length: int, schema):
    return prefix_scan(spark, [(signed_path(url, size, "data.parquet"), read_length, 0)], schema)


def _schema(spark, table: pa.Table):
    from pyspark.sql.types import LongType, StringType, StructField, StructType

    return StructType([StructField("id", LongType()), StructField("label", StringType())])


def test_spark_reads_a_signed_url_by_ranges_and_a_prefix_reads_only_its_row_groups(
        spark, server, table):
    base, served = server
    data = served.files["/bucket/data.parquet"]
    schema = _schema(spark, table)
    url = f"{base}/bucket/data.parquet?X-Amz-Signature=abc%2Fdef&X-Amz-Expires=60"

    whole = _scan(spark, url, len(data), len(data), schema)
    assert whole.count() == ROWS
    rows = sorted((r.id, r.label) for r in whole.collect())
    assert rows == sorted(zip(table.column("id").to_pylist(), table.column("label").to_pylist()))
    assert served.requests and all(wanted and wanted.startswith("bytes=") and status == 206
                                   for _, wanted, status in served.requests)

    # a prefix ending with the first row group: Spark reads that row group (and the footer) only
    metadata = pq.ParquetFile(pa.BufferReader(data)).metadata
    first = metadata.row_group(0)
    first_end = max(first.column(c).file_offset + first.column(c).total_compressed_size
                    for c in range(first.num_columns))
    served.requests.clear()
    prefix = _scan(spark, url, len(data), first_end, schema)
    assert sorted(r.id for r in prefix.select("id").collect()) == list(range(GROUP_ROWS))
    fetched = 0
    for _, wanted, _ in served.requests:
        start, end = map(int, wanted.removeprefix("bytes=").split("-"))
        fetched += end - start + 1
    footer = metadata.serialized_size + 8
    assert fetched < first_end + footer + (1 << 20)  # at most one read-ahead past what it needs
    assert fetched < len(data) / 2, (fetched, len(data))


def test_transient_failures_are_retried_and_an_expired_url_names_the_setting(spark, server, table):
    base, served = server
    data = served.files["/bucket/data.parquet"]
    schema = _schema(spark, table)
    served.failures_left = 2  # two 503s, then the store answers
    assert _scan(spark, f"{base}/bucket/data.parquet", len(data), len(data), schema).count() == ROWS
    assert [status for _, _, status in served.requests[:2]] == [503, 503]

    with pytest.raises(Exception) as refused:  # noqa: PT011 - Spark's job failure, checked by text
        _scan(spark, f"{base}/expired/data.parquet", len(data), len(data), schema).count()
    message = str(refused.value)
    assert "qbeast: reading data.parquet was refused (HTTP 403)" in message
    assert "spark.qbeast.storage.signedUrlSeconds" in message and "Request has expired" in message
    assert sum(1 for path, _, _ in served.requests if path.startswith("/expired/")) == 1  # no retry
