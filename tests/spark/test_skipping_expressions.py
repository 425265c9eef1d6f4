"""Skipping indexes on expressions (``lower(email)``, ``substring(code, 1, 3)``) prune exactly.

"Exactly" as for column indexes: a file holding a row whose expression value is looked up is
always planned, and with a value list no other file is; a file this engine cannot evaluate the
expression on exactly (non-ASCII values under ``lower``/``upper``, where Spark's case mapping is
Java's) is always planned. Which files hold a value is computed from the files themselves.
"""
from __future__ import annotations

import os
import random
import shutil
import sys

import pyarrow.compute as pc
import pytest

import qbeast
from qbeast import QbeastTable
from qbeast.core import expressions as ex
from qbeast.core.derived import Call
from qbeast.core.skipping import TAG
from qbeast.delta.log import DeltaLog

sys.path.insert(0, os.path.dirname(__file__))
from skipping_checks import active_files, indexed_table, plan_files  # noqa: E402

pytestmark = pytest.mark.spark

SCHEMA = "k BIGINT, email STRING, code STRING, n BIGINT"
UNBOUNDED = {"kind": "values", "max_values": 100_000}
INDEXES = {"lower(email)": UNBOUNDED, "UPPER(`email`)": "bloom", "left(code, 3)": UNBOUNDED,
           "trim(code)": UNBOUNDED}
#: ASCII, mixed case; and, only in rows 900-999, values whose case mapping is not ASCII's
#: (the Kelvin sign lowers to 'k' in Spark, the dotted capital I to 'i' + U+0307)
NON_ASCII = ["\u212Aate@x.org", "\u0130nci@x.org", "Stra\u00dfe@x.org"]


def _rows(seed: int, count: int, start: int = 0) -> list[tuple]:
    rng = random.Random(seed)
    out = []
    for n in range(start, start + count):
        name = rng.choice(["kate", "Kate", "KATE", "ann", "Bob", "zoe"]) + str(n % 40)
        email = None if n % 97 == 0 else f"{name}@X.org"
        if 900 <= n < 1000 and n % 3 == 0:
            email = NON_ASCII[n % len(NON_ASCII)]
        code = None if n % 89 == 0 else rng.choice(["ab", " ab", "ab  ", "\tab", "AB"]) + \
            rng.choice(["c1", "c2", "\u00e9c"]) + str(n // 500)
        out.append((n, email, code, n % 13))
    return out


@pytest.fixture(scope="module")
def table(spark, tmp_path_factory):
    return indexed_table(spark, tmp_path_factory, "skipping_expr", _rows(1, 2000), SCHEMA, 250, INDEXES)


def _lower_holding(files: dict, value: str | None) -> set[str]:
    """Files that may hold a row with ``lower(email) = value`` in Spark: those where the ASCII
    lowering matches, and every file with a non-ASCII e-mail (Java decides those)."""
    found = set()
    for name, data in files.items():
        emails = data.column("email")
        if value is None:
            hit = pc.any(pc.is_null(emails)).as_py()
        else:
            hit = pc.any(pc.equal(pc.ascii_lower(emails), value)).as_py() or any(
                e is not None and not e.isascii() for e in emails.to_pylist())
        if hit:
            found.add(name)
    return found


def _full_scan(spark, path: str, condition: str) -> int:
    files = [os.path.join(path, f) for f in DeltaLog.for_path(path).snapshot().files]
    return spark.read.parquet(*files).where(condition).count()


def _check_lower(spark, path: str, values: list, rows_checked: int = 2) -> None:
    files = active_files(path)
    for number, value in enumerate(values):
        condition = "lower(email) IS NULL" if value is None else f"lower(email) = '{value}'"
        planned, removed = plan_files(path, condition)
        assert planned == _lower_holding(files, value), condition
        assert removed["lower(email):values"] == len(files) - len(planned)
        if number < rows_checked:  # the rows too (each costs two Spark jobs)
            assert QbeastTable.for_path(spark, path).to_df(filter=condition).count() == \
                _full_scan(spark, path, condition), condition


def test_lower_prunes_exactly_on_mixed_case_and_nulls(spark, table):
    files = active_files(table)
    assert all(TAG in add.tags for add in DeltaLog.for_path(table).snapshot().files.values())
    non_ascii = {n for n, d in files.items() if any(not e.isascii() for e in d.column("email").to_pylist() if e)}
    assert 0 < len(non_ascii) < len(files)
    # 'kate7@x.org' is in a few files; 'KATE7@X.ORG' (upper case) can be in none; the Kelvin
    # sign's e-mail lowers to 'kate@x.org' in Spark: only the non-ASCII files may hold it
    _check_lower(spark, table, ["kate7@x.org", "KATE7@X.ORG", "kate@x.org", "nobody@x.org", None])
    assert plan_files(table, "lower(email) = 'kate@x.org'")[0] == non_ascii
    assert QbeastTable.for_path(spark, table).to_df(filter="lower(email) = 'kate@x.org'").count() == \
        _full_scan(spark, table, "lower(email) = 'kate@x.org'") > 0


def test_in_null_safe_equality_and_the_other_functions(spark, table):
    files = active_files(table)
    planned, _ = plan_files(table, "lower(email) IN ('ann3@x.org', 'bob5@x.org') OR lower(email) <=> NULL")
    assert planned == (_lower_holding(files, "ann3@x.org") | _lower_holding(files, "bob5@x.org")
                       | _lower_holding(files, None))
    # upper(email) is a Bloom filter: no file holding the value is ever dropped
    planned, removed = plan_files(table, "upper(email) = 'ZOE11@X.ORG'")
    assert planned >= {n for n, d in files.items()
                       if pc.any(pc.equal(pc.ascii_upper(d.column("email")), "ZOE11@X.ORG")).as_py()}
    assert removed["upper(email):bloom"] > 0
    # left(code, 3) is substring(code, 1, 3): code points, so 'ébc'-style values count right
    for condition, column, compute in [
        ("substring(code, 1, 3) = 'abc'", "code", lambda a: pc.utf8_slice_codeunits(a, 0, 3)),
        ("left(code, 3) = 'ab\u00e9'", "code", lambda a: pc.utf8_slice_codeunits(a, 0, 3)),
        ("trim(code) = 'abc11'", "code", lambda a: pc.ascii_trim(a, " ")),
        ("trim(code) = '\tabc21'", "code", lambda a: pc.ascii_trim(a, " ")),
    ]:
        literal = condition.split(" = ")[1].strip("'")
        holding = {n for n, d in files.items() if pc.any(pc.equal(compute(d.column(column)), literal)).as_py()}
        assert plan_files(table, condition)[0] == holding, condition
        assert QbeastTable.for_path(spark, table).to_df(filter=condition).count() == \
            _full_scan(spark, table, condition), condition
    # a predicate built as an expression, not as SQL text
    predicate = ex.EqualTo(Call("lower", "email"), "kate7@x.org")
    assert plan_files(table, predicate)[0] == _lower_holding(files, "kate7@x.org")
    assert QbeastTable.for_path(spark, table).to_df(filter=predicate).count() == \
        _full_scan(spark, table, "lower(email) = 'kate7@x.org'")
    # functions, arguments and columns without an index never prune
    for condition in ["lower(code) = 'abc11'", "substring(code, 2, 3) = 'bc1'", "ltrim(code) = 'abc1'"]:
        assert plan_files(table, condition) == (set(files), {}), condition


def test_sql_and_dataframe_reads_prune_through_the_bridge(spark, table):
    from pyspark.sql import functions as F

    from sql_bridge_checks import files_read

    assert qbeast.register(spark) == "jvm"
    files = active_files(table)
    df = spark.read.format("qbeast").load(table)
    df.createOrReplaceTempView("skipping_expr")
    for condition, value in [("lower(email) = 'kate7@x.org'", "kate7@x.org"),
                             ("lower(email) <=> NULL", None)]:
        query = spark.sql(f"SELECT count(*) AS n FROM skipping_expr WHERE {condition}")
        assert query.collect()[0]["n"] == _full_scan(spark, table, condition)
        assert files_read(query) == [len(_lower_holding(files, value))], condition
    query = df.where(F.lower("email").isin("ann3@x.org", "zoe2@x.org")).groupBy().count()
    assert query.collect()[0][0] == _full_scan(spark, table, "lower(email) IN ('ann3@x.org', 'zoe2@x.org')")
    assert files_read(query) == [len(_lower_holding(files, "ann3@x.org") | _lower_holding(files, "zoe2@x.org"))]


def test_appends_optimize_delete_and_merge_keep_expression_indexes_exact(spark, table, tmp_path):
    path = str(tmp_path / "t")
    shutil.copytree(table, path)
    qbeast.write(spark.createDataFrame(_rows(2, 300, start=5000), SCHEMA), path)
    QbeastTable.for_path(spark, path).optimize()
    QbeastTable.for_path(spark, path).delete("k % 7 = 0")
    QbeastTable.for_path(spark, path).merge(spark.createDataFrame(_rows(3, 150, start=1990), SCHEMA), on="k")
    assert all(TAG in add.tags for add in DeltaLog.for_path(path).snapshot().files.values())
    _check_lower(spark, path, ["kate7@x.org", "kate@x.org", "ann2001@x.org", None])


def test_bad_expression_declarations_name_what_is_allowed(spark, tmp_path):
    df = spark.createDataFrame(_rows(5, 10), SCHEMA)
    path = str(tmp_path / "t")
    for declaration, message in [
        ({"md5(email)": "bloom"}, r"'md5\(email\)' is not an expression .* allowed: lower\(c\)"),
        ({"substring(email, 0, 2)": "values"}, r"pos >= 1"),
        ({"lower(n)": "values"}, r"needs a string column, but 'n' has type long"),
        ({"lower(mail)": "values"}, r"column 'mail' is not in the table"),
    ]:
        with pytest.raises(qbeast.InvalidOptionError, match=message):
            qbeast.write(df, path, "k", skipping_indexes=declaration)
    from pyspark.sql.types import StructType

    from qbeast.spark.read.predicates import normalize_predicate

    with pytest.raises(qbeast.InvalidOptionError, match=r"lower\(n\).*string column"):
        normalize_predicate(ex.EqualTo(Call("lower", "n"), "x"), StructType.fromDDL(SCHEMA))
    assert not os.path.exists(path)
