"""dbt models whose ``location_root`` is a bucket (moto's S3 server on loopback).

The embedded session's Hadoop has no file system for ``s3://``: a ``table`` or ``incremental``
model in a Spark file format (parquet, the default) would fail after its query ran with
Hadoop's "No FileSystem for scheme", so it is refused before anything runs, naming the
materialization that works; dbt-spark's spelling of a Qbeast model (``file_format='qbeast'``)
builds there through the engine, and so does a downstream ``table`` model in that format.
"""
from __future__ import annotations

import uuid

import pytest

from dbt.tests.util import run_dbt

import qbeast
from s3_server import BUCKET

pytestmark = pytest.mark.objectstore

ROOT = f"s3://{BUCKET}/dbt-tables-{uuid.uuid4().hex[:8]}"


class TestTableModelsOnABucket:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "plain_table.sql": f"{{{{ config(materialized='table', location_root='{ROOT}') }}}}"
                               " select id from range(10)",
            "plain_incremental.sql": "{{ config(materialized='incremental', file_format='parquet', "
                                     f"location_root='{ROOT}') }}}} select id from range(10)",
            "qbeast_table.sql": "{{ config(materialized='table', file_format='qbeast', "
                                f"columns_to_index=['id'], location_root='{ROOT}') }}}}"
                                " select id, id % 3 as k from range(300)",
            "downstream.sql": "{{ config(materialized='table', file_format='qbeast', "
                              f"columns_to_index=['k'], location_root='{ROOT}') }}}}"
                              " select k, count(*) as n from {{ ref('qbeast_table') }} group by k",
        }

    def test_plain_formats_are_refused_up_front_and_qbeast_builds(self, project, spark,
                                                                  s3_environment):
        results = {r.node.name: r for r in run_dbt(["run"], expect_pass=False)}
        for name, kind in (("plain_table", "table"), ("plain_incremental", "incremental")):
            message = results[name].message
            assert results[name].status == "error", message
            assert (f"model {name}: materialized='{kind}' with file_format='parquet' at "
                    f"{ROOT}/{name} is written by Spark through Hadoop, which has no file "
                    "system for s3:// in this session; use materialized='qbeast'") in message
            assert "No FileSystem" not in message
        assert results["qbeast_table"].status == "success"
        assert results["downstream"].status == "success"
        table = qbeast.QbeastTable.for_path(spark, f"{ROOT}/qbeast_table")
        assert table.to_df().count() == 300
        downstream = spark.sql(f"select k, n from {project.test_schema}.downstream order by k")
        assert [tuple(r) for r in downstream.collect()] == [(0, 100), (1, 100), (2, 100)]
