"""``qbeast.write`` options a dbt user reaches through model configs: case-insensitive indexed
column names, NaN/infinities in indexed columns (``non_finite``), and cancellation before the
commit (``cancelled``, what dbt's Ctrl-C uses)."""
from __future__ import annotations

import os

import pytest

import qbeast
from qbeast.errors import InvalidOptionError, WriteCancelled
from qbeast.snapshot import QbeastSnapshot

pytestmark = pytest.mark.spark


def _files(path):
    return sorted(
        os.path.relpath(os.path.join(root, name), path)
        for root, _, names in os.walk(path)
        for name in names
    )


def test_indexed_column_names_match_case_insensitively(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(500).selectExpr("id", "cast(id as double) / 3 as Price")
    result = qbeast.write(df, path, "ID, price:linear", cube_size=100)
    revision = QbeastSnapshot.load(path).revisions[result.revision_id]
    assert revision.columns == ["id", "Price"]  # the data's spelling is recorded
    # an append naming the columns in yet another case stays in the same revision
    appended = qbeast.write(df, path, ["Id", "PRICE"])
    assert appended.revision_id == result.revision_id
    with pytest.raises(InvalidOptionError, match="names column 'id' more than once"):
        qbeast.write(df, str(tmp_path / "u"), ["id", "ID"])
    with pytest.raises(InvalidOptionError, match="indexed column 'nope' is not in the data"):
        qbeast.write(df, str(tmp_path / "u"), ["nope"])


def test_non_finite_values_fail_by_default_or_become_null(spark, tmp_path):
    rows = spark.sql(
        "select id, case when id = 3 then double('NaN') when id = 5 then double('Infinity') "
        "when id = 7 then double('-Infinity') else cast(id as double) end as x, "
        "double('NaN') as untouched from range(50)"
    )
    failing = str(tmp_path / "fail")
    with pytest.raises(InvalidOptionError) as raised:
        qbeast.write(rows, failing, "x")
    message = str(raised.value)
    assert "column 'x' holds NaN or infinite values" in message and "non_finite='null'" in message
    assert not os.path.exists(failing) or _files(failing) == []

    path = str(tmp_path / "null")
    result = qbeast.write(rows, path, "x", non_finite="null")
    assert result.rows == 50
    back = {r.id: (r.x, r.untouched) for r in qbeast.QbeastTable.for_path(spark, path).to_df().collect()}
    assert back[3][0] is None and back[5][0] is None and back[7][0] is None
    assert back[4][0] == 4.0
    assert all(v[1] != v[1] for v in back.values())  # a non-indexed column keeps its NaN
    with pytest.raises(InvalidOptionError, match=r"non_finite must be one of \['fail', 'null'\]"):
        qbeast.write(rows, path, "x", non_finite="clamp")


def test_cancelled_write_commits_nothing_and_deletes_its_files(spark, tmp_path):
    path = str(tmp_path / "t")
    df = spark.range(2000).selectExpr("id", "id % 13 as k")
    qbeast.write(df, path, "id,k", cube_size=200)
    before = _files(path)
    calls = []

    def cancel_before_commit() -> bool:
        calls.append(1)
        return len(calls) >= 2  # let the stats pass through, stop right before the commit

    with pytest.raises(WriteCancelled, match="cancelled before the commit; nothing was committed"):
        qbeast.write(df, path, "id,k", mode="overwrite", cancelled=cancel_before_commit)
    assert len(calls) == 2
    assert _files(path) == before  # the new data files are gone, no staging folder is left
    assert QbeastSnapshot.load(path).delta.version == 0

    with pytest.raises(WriteCancelled, match="cancelled before writing files"):
        qbeast.write(df, path, "id,k", cancelled=lambda: True)
    assert _files(path) == before
    with pytest.raises(InvalidOptionError, match="cancelled must be a callable"):
        qbeast.write(df, path, "id,k", cancelled=True)
