"""The baseline the bucket builds of the cluster tests are compared with, checked on its own.

``embedded_bucket_dbt_build`` is the example project with its Qbeast models at a prefix of the
test bucket (credentials from the AWS environment variables only), built and run a second time
on the shared session. Every remote build (standalone cluster, ``qbeast serve``) must equal it,
so it must itself be right: the Qbeast models are on the bucket, the second run merged into the
click stream, and a reader this project did not write (deltalake) reads the rows the build
reports.
"""
from __future__ import annotations

import pytest

from qbeast.delta.log import DeltaLog

pytestmark = pytest.mark.objectstore


def test_the_bucket_build_is_on_the_bucket_and_deltalake_reads_its_rows(
        s3_environment, embedded_bucket_dbt_build):
    from deltalake import DeltaTable

    root, built = embedded_bucket_dbt_build
    options = {"AWS_ENDPOINT_URL": s3_environment, "AWS_ALLOW_HTTP": "true"}
    for model in ("events", "daily_category_revenue"):
        assert built[model]["materialized"] == "qbeast"
        location = f"{root}/embedded/{model}"
        table = DeltaTable(location, storage_options=options)
        assert table.to_pyarrow_table().num_rows == built[model]["rows"] > 0, model
    # built, then merged into by the second run (the click stream's incremental merge)
    assert DeltaLog.for_path(f"{root}/embedded/events").snapshot().version >= 1
