"""OTree invariants and sampling accuracy of tables written by ``qbeast.write``.

Data is generated in Spark (uniform and skewed, 2-4 indexed columns); every table is checked from
its files by ``write_checks.check_index`` (weights from Spark's hash, cubes from the format core).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

import qbeast
from qbeast.snapshot import QbeastSnapshot
from qbeast.spark import settings
from qbeast.spark.runtime import scoped_confs

sys.path.insert(0, str(Path(__file__).resolve().parent))
from write_checks import check_index, sample_count  # noqa: E402

pytestmark = pytest.mark.spark


def _uniform(spark, n, seed=0, offset=0):
    return spark.range(offset, offset + n).selectExpr(
        "id",
        f"rand({seed}) * 100 as a",
        f"cast(rand({seed + 1}) * 1000 as int) as b",
        f"cast(rand({seed + 2}) * 1e6 as bigint) as c",
        f"rand({seed + 3}) as d",
    )


def _skewed(spark, n, seed=0):
    # exponential-ish clustering near 0 plus a heavy spike of identical points
    return spark.range(0, n).selectExpr(
        "id",
        f"case when id % 10 = 0 then 5.0 else pow(rand({seed}), 6) * 100 end as a",
        f"case when id % 10 = 0 then 7 else cast(pow(rand({seed + 1}), 4) * 1000 as int) end as b",
        f"cast(pow(rand({seed + 2}), 3) * 1e6 as bigint) as c",
        f"rand({seed + 3}) as d",
    )


@pytest.mark.parametrize(
    "columns, skewed, cube_size",
    [
        ("a,b", False, 200),
        ("a,b,c", True, 100),
        ("a,b,c,d", False, 500),
        ("a,b", True, 50),
    ],
)
@pytest.mark.parametrize("first_write_bytes", ["0", str(settings.LOCAL_FIRST_WRITE_BYTES.default)],
                         ids=["spark", "driver"])
def test_first_write_invariants(spark, tmp_path, columns, skewed, cube_size, first_write_bytes):
    """In Spark's jobs and, as a first write this small goes by default, on the driver."""
    path = str(tmp_path / "t")
    df = (_skewed if skewed else _uniform)(spark, 10_000, seed=len(columns))
    with scoped_confs(spark, {settings.LOCAL_FIRST_WRITE_BYTES.key: first_write_bytes}):
        result = qbeast.write(df, path, columns, cube_size=cube_size)
    assert result.revision_id == 1 and result.rows == 10_000
    assert check_index(spark, path) == {1: 10_000}
    status = QbeastSnapshot.load(path).index_status(1)
    assert len(status) > 1  # the tiny cube size forces a real tree


def test_repeated_appends_into_the_same_revision(spark, tmp_path):
    path = str(tmp_path / "t")
    space = {"a_min": 0.0, "a_max": 100.0, "b_min": 0, "b_max": 1000}
    qbeast.write(_uniform(spark, 10_000, seed=1), path, "a,b", cube_size=300, column_stats=space)
    for i in range(3):
        result = qbeast.write(_uniform(spark, 5_000, seed=10 + i, offset=10_000 + i * 5_000), path, "a,b")
        assert result.revision_id == 1
    snapshot = QbeastSnapshot.load(path)
    assert snapshot.latest_revision_id == 1
    assert check_index(spark, path) == {1: 25_000}


def test_appends_that_grow_the_space_open_new_revisions(spark, tmp_path):
    path = str(tmp_path / "t")
    qbeast.write(_skewed(spark, 8_000, seed=3), path, "a,b,c", cube_size=150)
    bigger = _uniform(spark, 8_000, seed=5).selectExpr("id", "a * 3 as a", "b + 5000 as b", "c", "d")
    result = qbeast.write(bigger, path, "a,b,c")
    assert result.revision_id == 2
    inside = _uniform(spark, 4_000, seed=7).selectExpr(
        "id", "a + 1 as a", "b + 1 as b", "cast(c * 0.9 as bigint) + 1 as c", "d"
    )
    again = qbeast.write(inside, path)
    assert again.revision_id == 2  # inside revision 2's space
    assert check_index(spark, path) == {1: 8_000, 2: 12_000}


def test_daily_appends_of_a_growing_timestamp_open_few_revisions(spark, tmp_path):
    """The incremental model of issue 20: each append's times after the previous one's.

    The space quadruples at each growth (revision headroom), so 8 daily appends open revisions on
    days 1, 2 and 8 only (day 2's range reaches just short of day 8's last second); with the
    headroom turned off every append opens one, as qbeast-spark.
    """
    def day(d):
        return spark.range(d * 1_000, (d + 1) * 1_000).selectExpr(
            "id", f"timestamp_seconds({d} * 86400 + cast(rand({d}) * 86399 as int)) as t",
            f"cast(rand({d + 100}) * 1000 as int) as u")

    path, exact = str(tmp_path / "roomy"), str(tmp_path / "exact")
    opened = [qbeast.write(day(d), path, "t,u", cube_size=300).revision_id for d in range(8)]
    assert opened == [1, 2, 2, 2, 2, 2, 2, 3]
    assert check_index(spark, path) == {1: 1_000, 2: 6_000, 3: 1_000}
    spark.conf.set("spark.qbeast.index.revisionHeadroomPercent", "0")
    try:
        assert [qbeast.write(day(d), exact, "t,u", cube_size=300).revision_id
                for d in range(3)] == [1, 2, 3]
    finally:
        spark.conf.unset("spark.qbeast.index.revisionHeadroomPercent")


def test_sampled_estimation_keeps_the_invariants_and_the_cube_sizes(spark, tmp_path):
    """A large input is estimated from a sample; the layout stays valid and close to the exact one."""
    n, cube_size = 200_000, 5_000
    df = _uniform(spark, n, seed=21)
    exact, sampled = str(tmp_path / "exact"), str(tmp_path / "sampled")
    qbeast.write(df, exact, "a,b", cube_size=cube_size, estimation_sample_rows=0)
    # 20k sample rows of 200k would be 10%; 1,000 rows per cube of 5,000 raise it to 20%
    qbeast.write(df, sampled, "a,b", cube_size=cube_size, estimation_sample_rows=20_000)
    assert check_index(spark, sampled) == {1: n}

    def cube_rows(path):
        status = QbeastSnapshot.load(path).index_status(1)
        return {s.cube: s.element_count for s in status}

    exact_cubes, sampled_cubes = cube_rows(exact), cube_rows(sampled)
    # the sample's domains are scaled by rows / sampled rows, so the root's is the row count and
    # its threshold (cube size / rows) is exactly the full estimation's
    thresholds = [{s.cube: s.max_weight for s in QbeastSnapshot.load(p).index_status(1)}
                  for p in (exact, sampled)]
    root = next(c for c in thresholds[0] if c.depth == 0)
    assert thresholds[1][root] == thresholds[0][root]
    # same tree size and cube fill within the noise of a 20% sample
    assert 0.8 <= len(sampled_cubes) / len(exact_cubes) <= 1.25
    inner = [c for c, rows in sampled_cubes.items() if any(o.parent == c for o in sampled_cubes)]
    assert inner and all(0.8 * cube_size <= sampled_cubes[c] <= 1.2 * cube_size for c in inner)


def test_estimation_sample_rows_session_conf(spark, tmp_path, caplog):
    from qbeast.errors import InvalidOptionError
    from qbeast.spark.runtime import restored_confs

    df = _uniform(spark, 30_000, seed=2)
    key = "spark.qbeast.index.estimationSampleRows"
    with restored_confs(spark, [key, settings.LOCAL_FIRST_WRITE_BYTES.key]):
        # the estimation job's sample (a first write this small is otherwise indexed locally)
        spark.conf.set(settings.LOCAL_FIRST_WRITE_BYTES.key, "0")
        spark.conf.set(key, "10000")
        with caplog.at_level("INFO", logger="qbeast.spark.write.writer"):
            qbeast.write(df, str(tmp_path / "t"), "a,b", cube_size=1_000)
        assert "sampled_fraction=1.0 " in caplog.text  # 1,000 rows per cube of 1,000: all rows
        caplog.clear()
        with caplog.at_level("INFO", logger="qbeast.spark.write.writer"):
            qbeast.write(df, str(tmp_path / "u"), "a,b", cube_size=10_000)
        assert "sampled_fraction=0.333333 " in caplog.text
        assert check_index(spark, str(tmp_path / "u")) == {1: 30_000}
        spark.conf.set(key, "-5")
        with pytest.raises(InvalidOptionError, match=f"{key} must be an integer >= 0, got -5"):
            qbeast.write(df, str(tmp_path / "v"), "a,b", cube_size=1_000)
    capacity = "spark.qbeast.index.cubeDomainsBufferCapacity"
    with restored_confs(spark, [capacity]):
        spark.conf.set(capacity, "many")
        with pytest.raises(InvalidOptionError, match=f"{capacity} must be a positive integer, got 'many'"):
            qbeast.write(df, str(tmp_path / "w"), "a,b", cube_size=1_000)


@pytest.mark.parametrize("fractions", [(0.1, 0.2, 0.5, 0.7, 0.99)])
def test_sampling_accuracy_after_appends(spark, tmp_path, fractions):
    n = 100_000
    path = str(tmp_path / "t")
    space = {"a_min": 0.0, "a_max": 100.0, "b_min": 0, "b_max": 1000}
    qbeast.write(_uniform(spark, n), path, "a,b", cube_size=1000, column_stats=space)
    for f in fractions:
        assert abs(sample_count(spark, path, f) - f * n) <= 0.01 * f * n
    qbeast.write(_uniform(spark, n // 2, seed=9, offset=n), path)  # same revision
    qbeast.write(
        _uniform(spark, n // 2, seed=11, offset=2 * n).selectExpr("id", "a + 100 as a", "b", "c", "d"),
        path,
    )  # a new revision
    total = 2 * n
    assert QbeastSnapshot.load(path).latest_revision_id == 2
    for f in fractions:
        assert abs(sample_count(spark, path, f) - f * total) <= 0.01 * f * total
    check_index(spark, path, fractions)
