"""Bad calls of the public API and the CLI: a clear error, and nothing written.

Every case names the argument (or the thing) that is wrong and what is allowed; after each call
the table folder (and any folder the call was pointed at) is byte-for-byte as before. The cases
are listed, with their messages, in docs/bad-input.md (checked below); the dbt run-operation
cases are in tests/functional/test_run_operations.py.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import qbeast
from qbeast.errors import InvalidOptionError, QbeastError
from qbeast.table import QbeastTable

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Bad:
    call: str                         # as written in docs/bad-input.md
    run: Callable[[Any, str, Any], Any]  # (spark, table path, scratch folder)
    message: str                      # regex the error must match
    error: type[BaseException] = InvalidOptionError


def _df(spark):
    return spark.range(0, 50).selectExpr("id", "cast(id as double) AS x", "concat('s', id) AS s")


def _with_setting(spark, key: str, value: str, call: Callable[[], Any]) -> Any:
    spark.conf.set(key, value)
    try:
        return call()
    finally:
        spark.conf.unset(key)


CASES = [
    Bad("qbeast.write(df, None, 'x')", lambda s, p, d: qbeast.write(_df(s), None, "x"),
        r"path must be a non-empty string, got None"),
    Bad("qbeast.write(df, '', 'x')", lambda s, p, d: qbeast.write(_df(s), "", "x"),
        r"path must be a non-empty string, got ''"),
    Bad("qbeast.write(df, path, 'nope')", lambda s, p, d: qbeast.write(_df(s), p, "nope"),
        r"indexed column 'nope' is not in the data; available columns: \['id', 'x', 's'\]"),
    Bad("qbeast.write(df, path, \"x'; drop table t\")",
        lambda s, p, d: qbeast.write(_df(s), p, "x'; drop table t"),
        r"indexed column \"x'; drop table t\" is not in the data; available columns"),
    Bad("qbeast.write(df, path, 'x:hash')", lambda s, p, d: qbeast.write(_df(s), p, "x:hash"),
        r"unknown transformer type 'hash' for column 'x'; valid types: linear, hashing, quantiles"),
    Bad("qbeast.write(df, path, 42)", lambda s, p, d: qbeast.write(_df(s), p, 42),
        r"must be a comma-separated string or a list of strings, got 42"),
    Bad("qbeast.write(df, path, cube_size='10')", lambda s, p, d: qbeast.write(_df(s), p, cube_size="10"),
        r"cube_size must be a positive integer, got '10'"),
    Bad("qbeast.write(df, path, cube_size=0)", lambda s, p, d: qbeast.write(_df(s), p, cube_size=0),
        r"cube_size must be a positive integer, got 0"),
    Bad("spark.qbeast.write.parquetVersion=v3; qbeast.write(df, path)",
        lambda s, p, d: _with_setting(s, "spark.qbeast.write.parquetVersion", "v3",
                                      lambda: qbeast.write(_df(s), p)),
        r"spark.qbeast.write.parquetVersion is 'v3'; allowed values: v2, v1"),
    Bad("qbeast.write(df, path, mode='upsert')", lambda s, p, d: qbeast.write(_df(s), p, mode="upsert"),
        r"mode must be one of \['append', 'overwrite'\], got 'upsert'"),
    Bad("qbeast.write(df, path, mergeSchema=True)",
        lambda s, p, d: qbeast.write(_df(s), p, mergeSchema=True),
        r"unknown write option\(s\) \['mergeSchema'\]; allowed options: \['buffer_capacity'"),
    Bad("qbeast.write(df, path, 'id', skipping_indexes={'nope': 'bloom'})",
        lambda s, p, d: qbeast.write(_df(s), p, "id", skipping_indexes={"nope": "bloom"}),
        r"skipping_indexes: column 'nope' is not in the table; its columns are \['id', 's', 'x'\]"),
    Bad("qbeast.write(df, path, 'id', skipping_indexes={'x': 'bloom'})",
        lambda s, p, d: qbeast.write(_df(s), p, "id", skipping_indexes={"x": "bloom"}),
        r"skipping_indexes: column 'x' has type double, which cannot carry a skipping index; "
        r"indexable types: tinyint, smallint, int, bigint, string, date, decimal\(p, s\)"),
    Bad("qbeast.write(df, path, merge_schema='yes')",
        lambda s, p, d: qbeast.write(_df(s), p, merge_schema="yes"),
        r"merge_schema must be true or false, got 'yes'"),
    Bad("qbeast.write(df, path, txn_app_id='etl')", lambda s, p, d: qbeast.write(_df(s), p, txn_app_id="etl"),
        r"txn_app_id and txn_version must be given together"),
    Bad("qbeast.write(df, path, column_stats='not json')",
        lambda s, p, d: qbeast.write(_df(s), p, column_stats="not json"),
        r"columnStats is not valid JSON"),
    Bad("qbeast.write(df with a new column, path)",
        lambda s, p, d: qbeast.write(_df(s).selectExpr("*", "1 AS extra"), p),
        r"the data has columns \['extra'\] that the table .* lacks; pass merge_schema=True"),
    Bad("qbeast.write(df with column _qbeast_weight, path)",
        lambda s, p, d: qbeast.write(_df(s).withColumnRenamed("s", "_qbeast_weight"), p),
        r"column '_qbeast_weight' clashes with a column the writer adds internally"),
    Bad("QbeastTable.for_path(spark, '')", lambda s, p, d: QbeastTable.for_path(s, ""),
        r"table path must be a non-empty string, got ''"),
    Bad("table.sample(1.5)", lambda s, p, d: QbeastTable(s, p).sample(1.5),
        r"sample fraction must be in \[0, 1\], got 1.5"),
    Bad("table.sample('0.1')", lambda s, p, d: QbeastTable(s, p).sample("0.1"),
        r"sample fraction must be a number in \[0, 1\], got '0.1'"),
    Bad("table.to_df(version=-1)", lambda s, p, d: QbeastTable(s, p).to_df(version=-1),
        r"version must be a non-negative integer, got -1"),
    Bad("table.to_df(version=99)", lambda s, p, d: QbeastTable(s, p).to_df(version=99),
        r"version 99 of .* does not exist; latest version is 0"),
    Bad("table.to_df(filter='nope > 1')", lambda s, p, d: QbeastTable(s, p).to_df(filter="nope > 1"),
        r"filter 'nope > 1' names nope, which the table has no column of; allowed columns: id, x, s$"),
    Bad("table.to_df(filter='x > 1; drop table t')",
        lambda s, p, d: QbeastTable(s, p).to_df(filter="x > 1; drop table t"),
        r"filter 'x > 1; drop table t' is not a valid SQL predicate .*PARSE_SYNTAX_ERROR"),
    Bad("table.to_df(filter=42)", lambda s, p, d: QbeastTable(s, p).to_df(filter=42),
        r"filter must be a SQL predicate string or a qbeast.core.expressions predicate, got int"),
    Bad("table.optimize(revision_id=99)", lambda s, p, d: QbeastTable(s, p).optimize(revision_id=99),
        r"revision 99 does not exist in .*; existing revisions: \[0, 1\]"),
    Bad("table.optimize(fraction=0)", lambda s, p, d: QbeastTable(s, p).optimize(fraction=0),
        r"fraction must be a number in \(0, 1\], got 0"),
    Bad("table.optimize(files='a.parquet')", lambda s, p, d: QbeastTable(s, p).optimize(files="a.parquet"),
        r"files must be a list of file paths as written in the Delta log, got 'a.parquet'"),
    Bad("table.optimize(files=['../../etc/passwd'])",
        lambda s, p, d: QbeastTable(s, p).optimize(files=["../../etc/passwd"]),
        r"files \['../../etc/passwd'\] are not active files of .*; give paths as written in the Delta log"),
    Bad("table.vacuum(retention_hours=-1)", lambda s, p, d: QbeastTable(s, p).vacuum(retention_hours=-1),
        r"retention_hours must be a non-negative number of hours"),
    Bad("table.vacuum(retention_hours=1)", lambda s, p, d: QbeastTable(s, p).vacuum(retention_hours=1),
        r"shorter than the table's 168 hours .* Pass allow_short_retention=True"),
    Bad("table.vacuum(dry_run='false')", lambda s, p, d: QbeastTable(s, p).vacuum(dry_run="false"),
        r"dry_run must be true or false, got 'false'"),
    Bad("table.history(limit=0)", lambda s, p, d: QbeastTable(s, p).history(limit=0),
        r"limit must be an integer >= 1 \(or None\), got 0"),
    Bad("table.index_metrics(revision_id=99)",
        lambda s, p, d: QbeastTable(s, p).index_metrics(revision_id=99),
        r"revision_id 99 does not exist in .*; allowed values: \[0, 1\]"),
    Bad("table.explain_read(fraction=2)", lambda s, p, d: QbeastTable(s, p).explain_read(fraction=2),
        r"sample fraction must be in \[0, 1\], got 2"),
    Bad("table.show_index(folder + '/index.png')",
        lambda s, p, d: QbeastTable(s, p).show_index(d + "/index.png"),
        r"output must be an .html file, got '.*/index.png'; allowed: a path ending in .html"),
    Bad("qbeast.convert_to_qbeast(spark, folder, [])", lambda s, p, d: qbeast.convert_to_qbeast(s, d, []),
        r"columns_to_index must be a non-empty list of column names or a comma-separated string"),
    Bad("qbeast.convert_to_qbeast(spark, folder, 'id:linear')",
        lambda s, p, d: qbeast.convert_to_qbeast(s, d, "id:linear"),
        r"convert_to_qbeast takes plain column names, got typed specs \['id:linear'\]"),
    Bad("qbeast.convert_to_qbeast(spark, folder, 'id', source_format='csv')",
        lambda s, p, d: qbeast.convert_to_qbeast(s, d, "id", source_format="csv"),
        r"source_format must be one of \['parquet', 'delta'\] or None \(detect\), got 'csv'"),
    Bad("qbeast.convert_to_qbeast(spark, folder, 'nope')", lambda s, p, d: qbeast.convert_to_qbeast(s, d, "nope"),
        r"columns_to_index \['nope'\] are not columns of the parquet files in .*; available columns: \['id'\]"),
    Bad("qbeast.convert_to_qbeast(spark, missing folder, 'id')",
        lambda s, p, d: qbeast.convert_to_qbeast(s, d + "/missing", "id"),
        r"is not a folder: nothing to convert"),
    Bad("qbeast.upgrade_format(path, dry_run='no')", lambda s, p, d: qbeast.upgrade_format(p, dry_run="no"),
        r"dry_run must be true or false, got 'no'"),
    Bad("create_table(spark, 't; drop table x', path)",
        lambda s, p, d: _create_table(s, "t; drop table x", p),
        r"table name must be \[catalog.\]\[schema.\]table, .* got 't; drop table x'"),
    Bad("create_table(spark, \"t'x\", path)", lambda s, p, d: _create_table(s, "t'x", p),
        r"table name must be .* got \"t'x\""),
]

CLI_CASES = [
    ("qbeast describe", r"the following arguments are required: TABLE"),
    ("qbeast describe ''", r"'' is neither a table folder nor a catalog name"),
    ("qbeast describe {missing}", r"is not a Delta table: the path does not exist"),
    ("qbeast describe {folder}", r"is not a Delta table: it has no _delta_log folder"),
    ("qbeast describe {path}/../..", r"is not a Delta table: it has no _delta_log folder"),
    ("qbeast describe {path} --version -1", r"version must be a non-negative integer, got -1"),
    ("qbeast describe {path} --version abc", r"argument --version: invalid int value: 'abc'"),
    ("qbeast describe {path} --version 99", r"version 99 of .* does not exist; latest version is 0"),
    ("qbeast show {path}", r"the following arguments are required: --output/-o"),
    ("qbeast show {path} --output {folder}/x.html --sample 2", r"sample fraction must be in \[0, 1\], got 2.0"),
    # an object-store location is a real location now; a scheme no storage serves is refused
    # (the case must not reach a store: tests send no traffic off the machine)
    ("qbeast describe hdfs://nn/t", r"uses scheme 'hdfs'; supported: plain paths, file:, s3://, s3a://, gs://, abfss://"),
]


def _create_table(spark, name: str, path: str) -> None:
    from qbeast.spark.catalog import create_table

    create_table(spark, name, path)


def _state(*folders: str) -> dict[str, tuple[int, int]]:
    """Every file below the folders with its size and modification time."""
    out = {}
    for folder in folders:
        for root, _, files in os.walk(folder):
            for name in files:
                st = os.stat(os.path.join(root, name))
                out[os.path.join(root, name)] = (st.st_size, st.st_mtime_ns)
    return out


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory) -> tuple[str, str]:
    root = tmp_path_factory.mktemp("bad-input")
    path = str(root / "t")
    qbeast.write(_df(spark), path, "id,x", cube_size=20)
    folder = root / "parquet folder"
    folder.mkdir()
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"id": list(range(5))}), folder / "a.parquet")
    return path, str(folder)


@pytest.mark.parametrize("case", CASES, ids=[c.call for c in CASES])
def test_bad_api_call_is_refused_and_writes_nothing(spark, table, case: Bad) -> None:
    path, folder = table
    before = _state(path, folder)
    with pytest.raises(case.error, match=case.message) as caught:
        result = case.run(spark, path, folder)
        if hasattr(result, "count"):
            result.count()
    assert isinstance(caught.value, QbeastError)
    assert _state(path, folder) == before


@pytest.mark.parametrize("command,message", CLI_CASES, ids=[c for c, _ in CLI_CASES])
def test_bad_cli_call_is_refused(table, command: str, message: str) -> None:
    path, folder = table
    before = _state(path, folder)
    quoted = {k: shlex.quote(v) for k, v in
              {"path": path, "folder": folder, "missing": folder + "/missing"}.items()}
    args = shlex.split(command.format(**quoted))[1:]
    done = subprocess.run([sys.executable, "-m", "qbeast.cli", *args], capture_output=True, text=True)
    assert done.returncode == 2, done
    assert re.search(message, done.stderr), done.stderr
    assert _state(path, folder) == before


def test_every_case_is_documented() -> None:
    text = (REPO / "docs" / "bad-input.md").read_text()
    missing = [c.call for c in CASES if f"`{c.call}`" not in text]
    missing += [c for c, _ in CLI_CASES if f"`{c}`" not in text]
    assert not missing, f"cases missing from docs/bad-input.md: {missing}"
    assert len(CASES) + len(CLI_CASES) >= 30
