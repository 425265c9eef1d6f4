"""Reading tables written by qbeast-spark itself (FORMAT §12), in place.

v07-ecommerce-300k has data: its sample sizes and file counts are pinned by FORMAT §7.5 (a port of
qbeast-spark's own listing, re-checked on Spark 4.1). The pre-0.6 fixtures hold logs only: they
must plan as plain Delta tables (every file, no index pruning) until upgraded.
"""
from __future__ import annotations

import pytest
from pyspark.sql import functions as F

from qbeast import QbeastTable
from qbeast.core.weight import weight_from_fraction
from qbeast.spark.sql.sources import register

pytestmark = [pytest.mark.spark, pytest.mark.interop]

ECOMMERCE = "v07-ecommerce-300k"


@pytest.fixture(scope="module")
def ecommerce(qbeast_fixtures):
    return str(qbeast_fixtures / ECOMMERCE)


@pytest.fixture(scope="module")
def full_scan(spark, ecommerce):
    """Every parquet file of the table read natively, with the row weight (the reference)."""
    return spark.read.parquet(f"{ecommerce}/*.parquet").withColumn(
        "_w", F.hash("user_id", "brand")
    ).cache()


def test_metadata(spark, ecommerce):
    table = QbeastTable.for_path(spark, ecommerce)
    assert table.revision_ids() == [0, 1]
    assert table.latest_revision_id() == 1
    assert table.indexed_columns() == ["user_id", "brand"]
    assert table.cube_size() == 10000


@pytest.mark.parametrize(
    "fraction, rows, max_files", [(0.01, 3096, 1), (0.1, 30303, 5), (0.5, 150924, 15)]
)
def test_sample_matches_qbeast_spark(spark, ecommerce, full_scan, fraction, rows, max_files):
    df = QbeastTable.for_path(spark, ecommerce).sample(fraction)
    assert df.count() == rows
    assert len(df.inputFiles()) <= max_files
    # exactly the rows of the whole table whose weight is under the threshold
    expected = full_scan.filter(F.col("_w") < weight_from_fraction(fraction)).drop("_w")
    assert df.exceptAll(expected).count() == 0 and expected.exceptAll(df).count() == 0


def test_full_read_and_filtered_read(spark, ecommerce, full_scan):
    table = QbeastTable.for_path(spark, ecommerce)
    df = table.to_df()
    assert df.count() == 300_000 and len(df.inputFiles()) == 16
    condition = "user_id BETWEEN 400000000 AND 420000000 AND brand IN ('samsung', 'apple')"
    pruned = table.to_df(filter=condition)
    assert pruned.count() == full_scan.filter(condition).count()
    assert len(pruned.inputFiles()) < 16


def test_data_source_reads_the_same_rows(spark, ecommerce, full_scan):
    register(spark)
    source = spark.read.format("qbeast").load(ecommerce)
    reference = full_scan.drop("_w")
    assert source.schema == reference.schema
    assert source.exceptAll(reference).count() == 0 and reference.exceptAll(source).count() == 0
    sampled = spark.read.format("qbeast").option("sampleFraction", "0.1").load(ecommerce)
    assert sampled.count() == 30303


@pytest.mark.parametrize(
    "folder", ["pre06-logs-test-table", "pre06-logs-with-remove", "pre06-logs-with-checkpoint"]
)
def test_pre06_tables_plan_as_plain_delta(spark, qbeast_fixtures, folder):
    table = QbeastTable.for_path(spark, str(qbeast_fixtures / folder))
    snapshot = table.snapshot()
    assert snapshot.needs_upgrade
    plan = table.read_plan(fraction=0.1)
    # no index pruning until upgraded: every active file, the sample decided row by row
    assert len(plan.files) == plan.total_files == len(snapshot.delta.files) > 0
    assert plan.weight_range == (-(2**31), weight_from_fraction(0.1))
    assert list(plan.hash_columns) == table.indexed_columns()
