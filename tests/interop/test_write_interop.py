"""Tables written by ``qbeast.write`` read by independent Delta readers (delta-rs, DuckDB).

The data covers every indexable type of FORMAT §3.0 with nulls in the indexed columns, plus
non-indexed columns of other types. Rows must come back identical from Spark's parquet reader,
``deltalake`` and DuckDB's ``delta_scan``; Delta file stats must bound the data (readers skip
files with them); the tags and revision JSON must decode with the format core.
"""
from __future__ import annotations

import datetime as dt
import decimal
import json
import os
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import qbeast
from qbeast.core.blocks import TagFormat, decode_tags, encode_tags
from qbeast.core.revision import Revision
from qbeast.snapshot import QbeastSnapshot

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark"))
from write_checks import check_index  # noqa: E402

pytestmark = [pytest.mark.spark, pytest.mark.interop]

COLUMNS = ["i", "l", "d", "f", "dec", "s", "dt", "ts"]


def _typed_df(spark, n=4000):
    return spark.range(0, n).selectExpr(
        "id",
        "case when id % 13 = 0 then null else cast(id * 7 % 1000 - 500 as int) end as i",
        "case when id % 17 = 0 then null else id * 1000003 end as l",
        "case when id % 19 = 0 then null else rand(3) * 1e3 - 10 end as d",
        "case when id % 23 = 0 then null else cast(rand(4) as float) end as f",
        "case when id % 29 = 0 then null else cast(id / 7 as decimal(12, 3)) end as `dec`",
        "case when id % 31 = 0 then null else concat('name-', cast(id * 31 % 977 as string)) end as s",
        "case when id % 37 = 0 then null else date_add(date'1969-12-01', cast(id % 3000 as int)) end as dt",
        "case when id % 41 = 0 then null else "
        "timestamp_micros(1600000000000000 - 500000000000 + id * 123456789) end as ts",
        "id % 2 = 0 as flag",
        "cast(id % 100 as short) as small",
        "array(id, id + 1) as arr",
        "named_struct('a', id, 'b', concat('x', id)) as st",
        "repeat('long text ', cast(id % 5 as int)) as txt",
    )


def _sorted_rows(table: pa.Table) -> list[tuple]:
    rows = [tuple(r.values()) for r in table.to_pylist()]
    return sorted(rows, key=repr)


def _normalize(table: pa.Table) -> pa.Table:
    """Same column order and timestamp zone everywhere (readers differ only in these details)."""
    columns = {}
    for name in table.column_names:
        col = table.column(name)
        if pa.types.is_timestamp(col.type):
            col = pc.cast(col, pa.timestamp("us", tz="UTC"))
        if pa.types.is_large_string(col.type):
            col = pc.cast(col, pa.string())
        columns[name] = col
    return pa.table(columns)


@pytest.fixture(scope="module")
def typed_table(spark, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("typed") / "t")
    df = _typed_df(spark)
    qbeast.write(df, path, COLUMNS[:4], cube_size=300)
    qbeast.write(_typed_df(spark, 1000).where("id % 3 = 0"), path)  # another commit
    expected = df.unionByName(_typed_df(spark, 1000).where("id % 3 = 0")).toArrow()
    return path, expected


def test_every_indexable_type_with_nulls_is_indexed(spark, tmp_path):
    for columns in (COLUMNS[:4], COLUMNS[4:], ["s:hashing", "d:hashing", "i"]):
        path = str(tmp_path / "_".join(c.replace(":", "-") for c in columns))
        result = qbeast.write(_typed_df(spark, 1500), path, columns, cube_size=100)
        assert result.rows == 1500
        assert check_index(spark, path, fractions=(0.1, 0.5)) == {1: 1500}


def test_deltalake_and_duckdb_read_identical_rows(typed_table, duckdb_delta):
    from deltalake import DeltaTable

    path, expected = typed_table
    want = _sorted_rows(_normalize(expected))
    via_deltalake = _normalize(DeltaTable(path).to_pyarrow_table().select(expected.column_names))
    assert _sorted_rows(via_deltalake) == want
    via_duckdb = _normalize(
        duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}')").fetch_arrow_table()
        .select(expected.column_names)
    )
    assert _sorted_rows(via_duckdb) == want


def test_spark_reads_the_files_with_the_written_types(spark, typed_table):
    path, expected = typed_table
    files = [os.path.join(path, a.path) for a in QbeastSnapshot.load(path).files()]
    back = spark.read.parquet(*files)
    assert [(f.name, f.dataType.simpleString()) for f in back.schema] == [
        (f.name, f.dataType.simpleString()) for f in _typed_df(spark).schema
    ]
    assert _sorted_rows(_normalize(back.toArrow())) == _sorted_rows(_normalize(expected))


def test_filtered_reads_by_independent_readers_are_not_fooled_by_stats(typed_table, duckdb_delta):
    from deltalake import DeltaTable

    path, expected = typed_table
    ts_cut = dt.datetime(2020, 9, 1, tzinfo=dt.timezone.utc)
    checks = [
        ("i > 400", pc.greater(expected["i"], 400)),
        ("dec <= 100.5", pc.less_equal(expected["dec"], decimal.Decimal("100.5"))),
        ("s >= 'name-900'", pc.greater_equal(expected["s"], "name-900")),
        ("dt < DATE '1970-01-15'", pc.less(expected["dt"], pa.scalar(dt.date(1970, 1, 15)))),
        (f"ts > TIMESTAMPTZ '{ts_cut.isoformat()}'", pc.greater(expected["ts"], pa.scalar(ts_cut))),
    ]
    for sql, mask in checks:
        want = pc.sum(pc.cast(pc.fill_null(mask, False), pa.int64())).as_py()
        got = duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}') WHERE {sql}").fetchone()[0]
        assert got == want, sql
    dl = DeltaTable(path).to_pyarrow_dataset()
    assert dl.count_rows(filter=pc.field("i") > 400) == pc.sum(
        pc.cast(pc.fill_null(checks[0][1], False), pa.int64())).as_py()


def test_stats_bound_every_file(typed_table):
    path, _ = typed_table
    import pyarrow.parquet as pq

    snapshot = QbeastSnapshot.load(path)
    for add in snapshot.files():
        stats = json.loads(add.stats)
        data = pq.read_table(os.path.join(path, add.path))
        assert stats["numRecords"] == data.num_rows
        for name, low in stats["minValues"].items():
            column = data.column(name)
            assert stats["nullCount"][name] == column.null_count
            high = stats["maxValues"].get(name)
            values = [v for v in column.to_pylist() if v is not None]
            text = [_as_stat_text(v) for v in values]
            assert all(_ge(t, low) for t in text), name
            if high is not None:
                assert all(_ge(high, t) for t in text), name


def _as_stat_text(value):
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z" \
            if value.microsecond % 1000 == 0 else value
    if isinstance(value, dt.date):
        return value.isoformat()
    return value


def _ge(a, b) -> bool:
    """a >= b for stat values (timestamps compared as instants)."""
    a, b = _instant(a), _instant(b)
    if isinstance(a, decimal.Decimal) or isinstance(b, decimal.Decimal):
        return decimal.Decimal(str(a)) >= decimal.Decimal(str(b))
    return a >= b


def _instant(v):
    if isinstance(v, str) and v.endswith("Z") and "T" in v:
        return dt.datetime.strptime(v, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.timezone.utc)
    return v


def test_tags_and_revisions_validate_with_the_format_core(typed_table):
    path, _ = typed_table
    snapshot = QbeastSnapshot.load(path)
    for rid, revision in snapshot.revisions.items():
        assert Revision.from_json(revision.to_json()) == revision
        raw = snapshot.configuration[f"qbeast.revision.{rid}"]
        assert Revision.from_json(raw).to_json() == raw  # byte-stable round trip
    for add in snapshot.files():
        decoded = decode_tags(add.tags)
        assert decoded.format is TagFormat.CURRENT
        assert encode_tags(decoded.revision_id, decoded.blocks) == add.tags
        assert all('"cubeId"' in add.tags["blocks"] for _ in [0])


def _file_encodings(file: str) -> set[str]:
    """Every encoding the column chunks of one data file use."""
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(file).metadata
    return {e for g in range(meta.num_row_groups) for c in range(meta.num_columns)
            for e in meta.row_group(g).column(c).encodings}


def _encodings(path: str) -> set[str]:
    """Every encoding the column chunks of the table's files use."""
    return set().union(*(_file_encodings(os.path.join(path, add.path))
                         for add in QbeastSnapshot.load(path).files()))


def test_the_files_those_readers_read_have_version_2_pages(typed_table):
    """The default ``spark.qbeast.write.parquetVersion=v2``: integer and string columns that a
    dictionary does not fit are delta-encoded, so the reader checks above cover those encodings."""
    path, _ = typed_table
    assert {"DELTA_BINARY_PACKED", "DELTA_BYTE_ARRAY"} <= _encodings(path)


def test_version_1_pages_when_set(spark, tmp_path, duckdb_delta):
    from deltalake import DeltaTable

    path = str(tmp_path / "v1")
    df = _typed_df(spark, 1500)
    spark.conf.set("spark.qbeast.write.parquetVersion", "V1")  # case does not matter
    try:
        qbeast.write(df, path, COLUMNS[:4], cube_size=300)
        qbeast.write(_typed_df(spark, 300), path)
    finally:
        spark.conf.unset("spark.qbeast.write.parquetVersion")
    qbeast.write(_typed_df(spark, 200), path)  # the default again: both kinds in one table
    kinds = {_file_kind(os.path.join(path, a.path)) for a in QbeastSnapshot.load(path).files()}
    assert kinds == {"v1", "v2"}
    expected = _normalize(df.unionByName(_typed_df(spark, 300)).unionByName(_typed_df(spark, 200))
                          .toArrow())
    assert _sorted_rows(_normalize(DeltaTable(path).to_pyarrow_table()
                                   .select(expected.column_names))) == _sorted_rows(expected)
    assert duckdb_delta.execute(f"SELECT count(*) FROM delta_scan('{path}')").fetchone()[0] == 2000


@pytest.mark.parametrize("version", ["v2", "v1"])
def test_row_level_rewrites_keep_the_page_version(spark, tmp_path, duckdb_delta, version):
    """Files an update rewrites (with pyarrow) are encoded as the session's Spark writes are, so
    a table updated row by row keeps its encodings; every reader reads the rewritten rows."""
    from deltalake import DeltaTable

    path = str(tmp_path / version)
    df = _typed_df(spark, 1500)
    spark.conf.set("spark.qbeast.write.parquetVersion", version)
    try:
        qbeast.write(df, path, COLUMNS[:4], cube_size=300)
        before = {a.path for a in QbeastSnapshot.load(path).files()}
        result = qbeast.QbeastTable.for_path(spark, path).update(
            "id % 5 = 0", set={"s": "concat('updated-', cast(id as string))"})
    finally:
        spark.conf.unset("spark.qbeast.write.parquetVersion")
    assert result.version is not None
    rewritten = [a.path for a in QbeastSnapshot.load(path).files() if a.path not in before]
    assert rewritten
    kinds = {_file_kind(os.path.join(path, p)) for p in rewritten}
    assert kinds == {version}
    expected = _normalize(df.selectExpr(
        "*", "case when id % 5 = 0 then concat('updated-', cast(id as string)) else s end as s2")
        .drop("s").withColumnRenamed("s2", "s").toArrow())
    assert _sorted_rows(_normalize(DeltaTable(path).to_pyarrow_table()
                                   .select(expected.column_names))) == _sorted_rows(expected)
    ours = _normalize(qbeast.QbeastTable.for_path(spark, path).to_df().toArrow()
                      .select(expected.column_names))
    assert _sorted_rows(ours) == _sorted_rows(expected)
    assert duckdb_delta.execute(
        f"SELECT count(*) FROM delta_scan('{path}') WHERE s LIKE 'updated-%'").fetchone()[0] == 300


def _file_kind(file: str) -> str:
    return "v2" if any(e.startswith("DELTA_") for e in _file_encodings(file)) else "v1"
