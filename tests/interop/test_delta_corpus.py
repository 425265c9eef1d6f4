"""Tables written by other engines (delta-rs, qbeast-spark) read by our log layer.

At every version, the active files (log paths, sizes, row counts, partition values), the file
locations, the schema, the configuration and the protocol must equal what ``deltalake`` reports.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from delta_interop_helpers import deltalake_view, our_view
from qbeast.delta.log import DeltaLog

deltalake = pytest.importorskip("deltalake", reason="deltalake is the reference Delta reader here")
pytestmark = [pytest.mark.spark, pytest.mark.interop]


def _batch(start: int, n: int, part: str | None = None) -> pa.Table:
    data = {"id": pa.array(range(start, start + n), pa.int64()),
            "name": pa.array([f"n{i}" for i in range(start, start + n)])}
    if part is not None:
        data["p"] = pa.array([part] * n)
    return pa.table(data)


def _assert_every_version_matches(path: str) -> int:
    latest = DeltaLog.for_path(path).snapshot().version
    assert latest == deltalake.DeltaTable(path).version()
    for version in range(DeltaLog.for_path(path).earliest_version(),
                         latest + 1):
        assert our_view(path, version) == deltalake_view(path, version), f"version {version}"
    return latest


def test_many_commits_overwrites_deletes_and_checkpoints(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    write = deltalake.write_deltalake
    write(path, _batch(0, 5), configuration={"delta.checkpointInterval": "1000", "delta.appendOnly": "false"})
    for i in range(1, 24):
        write(path, _batch(i * 10, 3), mode="append", schema_mode="merge")
        if i % 7 == 0:
            deltalake.DeltaTable(path).create_checkpoint()
        if i == 12:
            write(path, _batch(1000, 4), mode="overwrite")
        if i == 15:
            deltalake.DeltaTable(path).delete("id >= 1140")
        if i == 18:
            extended = _batch(2000, 2).append_column("extra", pa.array([1.5, 2.5]))
            write(path, extended, mode="append", schema_mode="merge")
    deltalake.DeltaTable(path).optimize.compact()
    latest = _assert_every_version_matches(path)
    assert latest >= 25
    snap = DeltaLog.for_path(path).snapshot()
    checkpoints = [int(p.name[:20]) for p in (tmp_path / "t" / "_delta_log").glob("*.checkpoint.parquet")]
    assert len(checkpoints) == 3 and snap.checkpoint_version == max(checkpoints)
    assert "extra" in snap.metadata.column_names


def test_partitioned_table_with_encoded_paths(tmp_path: Path) -> None:
    path = str(tmp_path / "p")
    write = deltalake.write_deltalake
    for i, part in enumerate(["x y", "z%/", "plain", "ü=1", "x y"]):
        write(path, _batch(i * 10, 2, part), mode="append", partition_by=["p"])
    deltalake.DeltaTable(path).create_checkpoint()
    deltalake.DeltaTable(path).delete("p = 'plain'")
    write(path, _batch(100, 2, "new"), mode="append", partition_by=["p"])
    _assert_every_version_matches(path)
    snap = DeltaLog.for_path(path).snapshot()
    for add in snap.files.values():
        assert Path(snap.file_path(add)).is_file()  # decoded paths point at real files


def test_table_with_log_cleanup_starts_at_checkpoint(tmp_path: Path) -> None:
    path = str(tmp_path / "c")
    for i in range(6):
        deltalake.write_deltalake(path, _batch(i, 1), mode="append")
    deltalake.DeltaTable(path).create_checkpoint()
    for v in range(0, 5):
        (tmp_path / "c" / "_delta_log" / f"{v:020d}.json").unlink()
    deltalake.write_deltalake(path, _batch(50, 1), mode="append")
    assert _assert_every_version_matches(path) == 6
    assert DeltaLog.for_path(path).earliest_version() == 5


FIXTURES = ["v07-ecommerce-300k", "pre06-logs-test-table", "pre06-logs-with-remove",
            "pre06-logs-with-checkpoint"]


@pytest.mark.parametrize("name", FIXTURES)
def test_qbeast_spark_fixtures_match_deltalake(qbeast_fixtures: Path, name: str) -> None:
    _assert_every_version_matches(str(qbeast_fixtures / name))


def _raw_tags(table: Path, version: int) -> dict[str, dict[str, str]]:
    """Tags of the active files, read straight from the JSON / checkpoint files (no replay code)."""
    log = table / "_delta_log"
    tags: dict[str, dict[str, str]] = {}
    checkpoints = sorted(log.glob("*.checkpoint.parquet"))
    start = 0
    if checkpoints:
        cp_version = int(checkpoints[-1].name.split(".")[0])
        if cp_version <= version:
            for row in pq.read_table(checkpoints[-1], columns=["add"]).column("add").to_pylist():
                if row is not None:
                    tags[row["path"]] = dict(row["tags"])
            start = cp_version + 1
    for v in range(start, version + 1):
        for line in (log / f"{v:020d}.json").read_text().splitlines():
            action = json.loads(line)
            if "add" in action:
                tags[action["add"]["path"]] = action["add"]["tags"]
            elif "remove" in action:
                tags.pop(action["remove"]["path"], None)
    return tags


@pytest.mark.parametrize("name", FIXTURES)
def test_qbeast_spark_fixture_tags_verbatim(qbeast_fixtures: Path, name: str) -> None:
    table = qbeast_fixtures / name
    snap = DeltaLog.for_path(str(table)).snapshot()
    assert {p: a.tags for p, a in snap.files.items()} == _raw_tags(table, snap.version)
    assert snap.configuration["qbeast.lastRevisionID"]


def test_absolute_file_uris_in_the_log(tmp_path: Path) -> None:
    """A log may name files outside the table by absolute URI (e.g. after a shallow clone)."""
    source = tmp_path / "source dir"
    deltalake.write_deltalake(str(source), _batch(0, 3))
    data_file = next(source.glob("*.parquet"))
    table = tmp_path / "clone"
    (table / "_delta_log").mkdir(parents=True)
    first = (source / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
    lines = []
    for line in first:
        action = json.loads(line)
        if "add" in action:
            action["add"]["path"] = data_file.as_uri()  # file:///.../source%20dir/part-....parquet
        lines.append(json.dumps(action))
    (table / "_delta_log" / f"{0:020d}.json").write_text("\n".join(lines) + "\n")
    ours, theirs = our_view(str(table), 0), deltalake_view(str(table), 0)
    # delta-rs (and DuckDB) join even absolute URIs to the table root, so only the log facts are
    # compared with them; our resolution must land on the real file.
    ours.pop("uris"), theirs.pop("uris")
    assert ours == theirs
    snap = DeltaLog.for_path(str(table)).snapshot()
    assert [snap.file_path(a) for a in snap.files.values()] == [str(data_file)]
    assert Path(snap.file_path(next(iter(snap.files)))).is_file()


# -- the conformance corpus: every table is read like the reference readers, or refused -----------

from delta_corpus import CorpusTable, build_corpus  # noqa: E402

#: Where a reference reader returns *other rows* than the data written (not just an error), and why.
#: Those tables carry their true rows (``CorpusTable.expected``), which our read must equal.
REFERENCE_DIFFERENCES = {
    ("delta-rs/column-mapping-property-without-feature", "deltalake"):
        "delta-rs honours delta.columnMapping.mode although the protocol lacks the columnMapping "
        "feature, so it looks for physical names the files do not use and returns nulls",
    ("delta-rs/column-mapping-property-without-feature", "duckdb"):
        "the delta extension returns null partition values for this table",
    ("hand/column-mapping-name", "deltalake"):
        "delta-rs returns nulls for the data columns of a name-mapped table with swapped names",
    ("hand/column-mapping-name", "duckdb"):
        "the delta extension does not resolve partition values by physical name (returns null)",
}


def _normalize(rows: list[dict]) -> list[tuple]:
    return sorted((tuple(sorted(r.items())) for r in rows), key=repr)


def _reference_rows(reader: str, path: str, duckdb_delta) -> list[tuple] | Exception:
    try:
        if reader == "deltalake":
            return _normalize(deltalake.DeltaTable(path).to_pyarrow_table().to_pylist())
        result = duckdb_delta.execute(f"SELECT * FROM delta_scan('{path}')").arrow()
        table = result.read_all() if hasattr(result, "read_all") else result
        return _normalize(table.to_pylist())
    except Exception as exc:  # a reference that cannot read a table simply gives no verdict
        return exc


@pytest.fixture(scope="module")
def corpus(spark, tmp_path_factory) -> dict[str, CorpusTable]:
    return {t.name: t for t in build_corpus(tmp_path_factory.mktemp("corpus"), spark)}


def test_corpus_covers_the_cases(corpus: dict[str, CorpusTable]) -> None:
    assert len(corpus) >= 20
    assert {t.writer for t in corpus.values()} == {"delta-rs", "dbt-qbeast", "hand-made"}
    assert sum(t.refused is not None for t in corpus.values()) >= 5


def test_corpus_tables_read_like_the_references_or_are_refused(
    spark, corpus: dict[str, CorpusTable], duckdb_delta
) -> None:
    from qbeast.delta.scan import scan_files
    from qbeast.errors import QbeastError
    from qbeast.table import QbeastTable

    verdicts = {}
    for name, table in corpus.items():
        if table.refused is not None:
            with pytest.raises(QbeastError, match=table.refused):
                QbeastTable(spark, table.path).to_df().count()
            verdicts[name] = "refused"
            continue
        ours = _normalize(QbeastTable(spark, table.path).to_df().toArrow().to_pylist())
        agreeing = []
        if table.expected is not None:
            assert ours == _normalize(list(table.expected)), name
            agreeing.append("written data")
        for reader in ("deltalake", "duckdb"):
            theirs = _reference_rows(reader, table.path, duckdb_delta)
            if isinstance(theirs, Exception):
                continue
            if (name, reader) in REFERENCE_DIFFERENCES:
                assert theirs != ours, f"{reader} now agrees on {name}: drop the recorded difference"
                continue
            assert ours == theirs, f"{name}: rows differ from {reader}"
            agreeing.append(reader)
        assert agreeing, f"{name}: no reference confirmed the rows"
        try:  # active files: the decoded locations delta-rs lists
            uris = set(deltalake.DeltaTable(table.path).file_uris())
        except Exception:
            uris = None
        if uris is not None and table.expected is None:
            snapshot = DeltaLog.for_path(table.path).snapshot()
            assert {f.location for f in scan_files(snapshot)} == uris, name
        verdicts[name] = f"read, confirmed by {agreeing}"
    print("\n".join(f"{name}: {verdict}" for name, verdict in sorted(verdicts.items())))


PYTHON_SOURCE_TABLES = {
    "hand/typed-partition-values": None,
    "hand/percent-encoded-paths": None,
    "delta-rs/partitioned-awkward-values-checkpoint": None,
    "delta-rs/timestamp-ntz": None,
    "hand/column-mapping-name": r"nested column\(s\) \['s'\] of a column-mapped table",
    "hand/variant-column": r"cannot read variant columns",
    "hand/deletion-vector": r"deletionVectors",
}


@pytest.mark.parametrize("name", sorted(PYTHON_SOURCE_TABLES))
def test_python_data_source_reads_the_same_rows(spark, corpus, name: str) -> None:
    """The Python data source (pyarrow, ``qbeast_python``) plans through the same scan layout."""
    from qbeast.spark.read.datasource import PYTHON_SOURCE_NAME, register_python_source
    from qbeast.table import QbeastTable

    register_python_source(spark, PYTHON_SOURCE_NAME)
    table, refused = corpus[name], PYTHON_SOURCE_TABLES[name]
    if refused is not None:
        with pytest.raises(Exception, match=refused):
            spark.read.format(PYTHON_SOURCE_NAME).load(table.path).collect()
        return
    ours = QbeastTable(spark, table.path).to_df()
    source = spark.read.format(PYTHON_SOURCE_NAME).load(table.path)
    assert source.schema == ours.schema
    assert _normalize(source.toArrow().to_pylist()) == _normalize(ours.toArrow().to_pylist())


@pytest.mark.parametrize("name", sorted(PYTHON_SOURCE_TABLES))
def test_sql_reads_the_same_rows_or_refuse_by_name(spark, corpus, name: str) -> None:
    """``format("qbeast")`` (the JVM bridge when built) reads what the engine reads; a plain Delta
    table whose files do not hold its rows as they are (partition values, column mapping) is
    refused with the readers that can, never read as nulls."""
    from qbeast.delta.errors import UnsupportedFeatureError
    from qbeast.delta.scan import scan_schema
    from qbeast.spark.sql.sources import register
    from qbeast.table import QbeastTable

    table, refused = corpus[name], PYTHON_SOURCE_TABLES[name]
    if register(spark) != "jvm":
        pytest.skip("the bridge jar is not built (no javac when `make` ran): format('qbeast') is "
                    "the Python source, checked by test_python_data_source_reads_the_same_rows")
    delta = QbeastTable(spark, table.path).snapshot().delta
    if name == "hand/variant-column":  # pyarrow cannot convert variants; Spark's parquet reader can
        rows = spark.read.format("qbeast").load(table.path).collect()
        assert len(rows) == sum(add.num_records or 0 for add in delta.files.values()) > 0
        return
    try:
        expected = refused if scan_schema(delta).is_plain else (
            r"SQL read bridge reads data files as they are.*qbeast_python")
    except UnsupportedFeatureError:  # no reader of ours reads it: the bridge says the same
        expected = refused
    if expected is not None:
        with pytest.raises(Exception, match=expected):
            spark.read.format("qbeast").load(table.path).collect()
        return
    source = spark.read.format("qbeast").load(table.path)
    ours = QbeastTable(spark, table.path).to_df()
    assert source.schema == ours.schema
    assert _normalize(source.toArrow().to_pylist()) == _normalize(ours.toArrow().to_pylist())


def test_filters_on_a_name_mapped_table_use_the_renamed_statistics(spark, corpus) -> None:
    """Physical names of ``a`` and ``b`` are swapped: stats looked up by display name would prune
    the wrong files (and a type mismatch would keep or drop them at random)."""
    from qbeast.table import QbeastTable

    table = QbeastTable(spark, corpus["hand/column-mapping-name"].path)
    assert len(table.read_plan().files) == 2
    plan = table.read_plan(filter="a >= 10")
    assert len(plan.files) == 1 and plan.files[0].partition_values == (("p", "p 2"),)
    assert sorted(r.a for r in table.to_df(filter="a >= 10").collect()) == [10, 20]
    assert [r.a for r in table.to_df(filter="b = 'v2'").collect()] == [2]
    assert sorted(r.a for r in table.to_df(filter="p = 'p 2'").collect()) == [10, 20]
    assert [r.s.x for r in table.to_df(filter="s.x = 21").collect()] == [21]
