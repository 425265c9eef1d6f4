"""The encodings of the engine's pyarrow writes (:mod:`qbeast.spark.write.arrow_parquet`)."""
from __future__ import annotations

import datetime as dt
import decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from qbeast.spark.write.arrow_parquet import arrow_write_options

N = 4000


def _rows() -> pa.Table:
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return pa.table({
        "id": pa.array(range(N), pa.int64()),  # unique: no dictionary
        "bucket": pa.array([i % 7 for i in range(N)], pa.int32()),  # repeats: dictionary
        "at": pa.array([start + dt.timedelta(seconds=37 * i) for i in range(N)],
                       pa.timestamp("us", tz="UTC")),
        "day": pa.array([dt.date(2000, 1, 1) + dt.timedelta(days=i) for i in range(N)], pa.date32()),
        "name": pa.array([f"user-{i:06d}" for i in range(N)], pa.string()),
        "x": pa.array([i * 0.37 for i in range(N)], pa.float64()),
        "flag": pa.array([i % 3 == 0 for i in range(N)], pa.bool_()),
        "amount": pa.array([decimal.Decimal(i) / 100 for i in range(N)], pa.decimal128(12, 2)),
    })


def _encodings(path) -> dict[str, set[str]]:
    meta = pq.ParquetFile(path).metadata
    return {meta.schema.column(c).name: set(meta.row_group(0).column(c).encodings)
            for c in range(meta.num_columns)}


def test_version_2_delta_encodes_the_integer_and_string_columns_a_dictionary_does_not_fit(tmp_path):
    rows = _rows()
    options = arrow_write_options(rows, "v2")
    assert options["use_dictionary"] == ["bucket", "flag"]
    assert options["column_encoding"] == {"id": "DELTA_BINARY_PACKED", "at": "DELTA_BINARY_PACKED",
                                          "day": "DELTA_BINARY_PACKED", "name": "DELTA_BYTE_ARRAY"}
    path = tmp_path / "v2.parquet"
    pq.write_table(rows, path, **options)
    encodings = _encodings(path)
    for column in ("id", "at", "day"):
        assert "DELTA_BINARY_PACKED" in encodings[column]
    assert "DELTA_BYTE_ARRAY" in encodings["name"]
    assert "RLE_DICTIONARY" in encodings["bucket"]
    assert not any(e.startswith("DELTA_") for c in ("x", "flag", "amount") for e in encodings[c])
    assert pq.read_table(path).equals(rows)
    plain = tmp_path / "v1.parquet"
    pq.write_table(rows, plain, **arrow_write_options(rows, "v1"))
    # what the encodings are for: growing ids, times and keys take a few bits per value
    assert path.stat().st_size < 0.8 * plain.stat().st_size


def test_version_1_writes_plain_values_where_no_dictionary_fits(tmp_path):
    rows = _rows()
    options = arrow_write_options(rows, "v1")
    assert "column_encoding" not in options and "data_page_version" not in options
    assert options["compression"] == "snappy" and options["store_schema"] is False
    path = tmp_path / "v1.parquet"
    pq.write_table(rows, path, **options)
    assert not any(e.startswith("DELTA_") for es in _encodings(path).values() for e in es)
    assert "RLE_DICTIONARY" in _encodings(path)["bucket"]
    assert "RLE_DICTIONARY" not in _encodings(path)["id"]
    assert pq.read_table(path).equals(rows)


def test_an_unknown_page_version_is_named_with_the_allowed_ones():
    with pytest.raises(ValueError, match=r"v1, v2, got 'v3'"):
        arrow_write_options(_rows(), "v3")


def test_a_rewrite_keeps_the_dictionary_choices_of_the_file_it_replaces(tmp_path):
    rows = _rows()
    # the old file: written with a dictionary on `id` and none on `bucket`, the reverse of what
    # counting the rows would choose, so the test sees which rule decided
    old = tmp_path / "old.parquet"
    pq.write_table(rows, old, use_dictionary=["id"], row_group_size=N // 4)
    footer = pq.read_metadata(old)
    options = arrow_write_options(rows, "v2", like=footer)
    assert options["use_dictionary"] == ["id"]
    assert options["column_encoding"]["bucket"] == "DELTA_BINARY_PACKED"
    # a column the old file lacks (added to the table since) is decided from the rows
    wider = rows.append_column("tier", pa.array([i % 3 for i in range(N)], pa.int32()))
    assert arrow_write_options(wider, "v2", like=footer)["use_dictionary"] == ["id", "tier"]
    # a file without rows says nothing: the rows decide
    empty = tmp_path / "empty.parquet"
    pq.write_table(rows.schema.empty_table(), empty)
    assert arrow_write_options(rows, "v2", like=pq.read_metadata(empty))["use_dictionary"] == [
        "bucket", "flag"]


def test_nulls_do_not_count_as_a_distinct_value():
    # 2 distinct values and 3 nulls in 5 rows: fewer than half, as count_distinct counts them
    rows = pa.table({"a": pa.array([1, None, 2, None, None], pa.int64()),
                     "b": pa.array([1, 2, 3, None, None], pa.int64())})
    assert arrow_write_options(rows, "v1")["use_dictionary"] == ["a"]
