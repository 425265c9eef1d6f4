"""dbt run-operations over the table API, and the relation cache knowing qbeast tables.

One project: a qbeast model built twice (the second run appends a second block to every cube, so
optimize and vacuum have work), a view, and a parquet folder for convert.
"""
from __future__ import annotations

import json
import os

import pytest

from dbt.tests.util import get_connection, run_dbt, run_dbt_and_capture, write_file

import qbeast
from qbeast import names
from qbeast.index.thresholds import is_laid_out

EVENTS = """
{{ config(materialized='qbeast', columns_to_index=['id'], cube_size=100, incremental_strategy='append',
          optimize_after_run=false) }}
select id, cast(id as double) / 4 as x from range(300)
"""


SOURCES = """
version: 2
sources:
  - name: raw
    schema: "{schema}_raw"
    tables:
      - name: converted
        meta: {{qbeast_location: "{folder}"}}
      - name: other
        meta: {{qbeast_location: "{other}"}}
"""


def _op(name: str, args: dict, expect_pass: bool = True) -> str:
    _, out = run_dbt_and_capture(["run-operation", name, "--args", json.dumps(args)], expect_pass=expect_pass)
    return out


def _read_two_sources(project, spark, folder: str, other: str) -> None:
    """Declare the Qbeast tables at ``folder`` (50 rows) and ``other`` (7 rows) as sources in
    sources.yml, register them, and read both in a model (their cross join: 350 rows)."""
    schema = project.test_schema
    write_file(SOURCES.format(schema=schema, folder=folder, other=other),
               project.project_root, "models", "sources.yml")
    write_file("select count(*) as n from {{ source('raw', 'converted') }} "
               "cross join {{ source('raw', 'other') }}",
               project.project_root, "models", "from_sources.sql")
    _op("qbeast_register_sources", {})
    run_dbt(["run", "--select", "from_sources"])
    assert spark.table(f"{schema}.from_sources").first().n == 50 * 7
    known = names.known(os.path.join(project.project_root, ".qbeast"))
    assert known[f"{schema}_raw.other"] == other


def _parquet_files(folder: str) -> set:
    return {
        os.path.join(root, f) for root, _, files in os.walk(folder) if "_delta_log" not in root
        for f in files if f.endswith(".parquet")
    }


class TestRunOperations:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, "plain_view.sql": "{{ config(materialized='view') }} select 1 as x"}

    def test_run_operations_and_relation_cache(self, project, spark, tmp_path):
        schema = project.test_schema
        run_dbt(["run"])
        # appends the same rows: two blocks per cube (the model turns the default maintenance off)
        run_dbt(["run", "--select", "events"])

        # the relation cache knows which relations are qbeast tables
        with get_connection(project.adapter):
            events = project.adapter.get_relation(database=None, schema=schema, identifier="events")
            view = project.adapter.get_relation(database=None, schema=schema, identifier="plain_view")
        assert events.is_qbeast and events.type == "table"
        assert not view.is_qbeast and view.type == "view"

        location = spark.catalog.getDatabase(schema).locationUri.removeprefix("file:") + "/events"
        table = qbeast.QbeastTable.for_path(spark, location)
        blocks_before = table.index_metrics().to_dict()

        # index metrics by model name: the readable table of the result is printed
        out = _op("qbeast_index_metrics", {"relation_or_path": "events"})
        for line in str(table.index_metrics()).splitlines()[1:]:
            assert line.strip() in out

        # explain a read by model name: the planner's reasons and totals are printed
        out = _op("qbeast_explain_read", {"relation_or_path": "events", "filter": "id < 40",
                                          "fraction": 0.5})
        explained = table.explain_read(filter="id < 40", fraction=0.5)
        assert explained.files_read < explained.total_files
        for line in str(explained).splitlines()[1:]:
            assert line.strip() in out

        # optimize by schema.identifier: laid out afterwards (one block per cube, or per weight
        # band of a cube), same rows
        files_before = _parquet_files(location)
        out = _op("qbeast_optimize", {"relation_or_path": f"{schema}.events", "fraction": 1.0})
        assert "optimize of" in out
        assert table.history()[0].operation == "OPTIMIZE"
        snapshot = table.snapshot()
        assert is_laid_out(snapshot.index_status(1)) and spark.table(f"{schema}.events").count() == 600
        assert table.index_metrics().to_dict() != blocks_before

        # vacuum by path: a dry run deletes nothing; a zero retention removes the replaced files
        _op("qbeast_vacuum", {"relation_or_path": location, "retention_hours": 0, "dry_run": True,
                              "allow_short_retention": True})
        assert files_before <= _parquet_files(location)
        _op("qbeast_vacuum", {"relation_or_path": location, "retention_hours": 0,
                              "allow_short_retention": True})
        live = {os.path.join(location, path) for path in table.snapshot().delta.files}
        assert _parquet_files(location) == live
        assert spark.table(f"{schema}.events").count() == 600

        # upgrade_format on a current table: nothing to rewrite, the version stays
        version = table.snapshot().version
        _op("qbeast_upgrade_format", {"relation_or_path": "events"})
        assert table.snapshot().version == version

        # convert a parquet folder in place
        folder = str(tmp_path / "plain_parquet")
        spark.range(50).selectExpr("id", "id * 3 as y").write.parquet(folder)
        _op("qbeast_convert", {"path": folder, "columns_to_index": ["id"], "cube_size": 20})
        converted = qbeast.QbeastTable.for_path(spark, folder)
        assert converted.indexed_columns() == ["id"] and converted.cube_size() == 20
        assert converted.to_df().count() == 50

        # bad arguments: a clear message that names the operation, the argument, the allowed values
        version = table.snapshot().version
        bad = [
            ("qbeast_optimize", {"relation_or_path": "events", "fraction": 0},
             "qbeast_optimize: invalid argument fraction=0; allowed values: a number in (0.0, 1.0]"),
            ("qbeast_explain_read", {"relation_or_path": "events", "fraction": 2},
             "qbeast_explain_read: invalid argument fraction=2; allowed values: a number in (0.0, 1.0]"),
            ("qbeast_optimize", {"relation_or_path": "events", "revision_id": -1},
             "invalid argument revision_id=-1; allowed values: an integer >= 0 or none"),
            ("qbeast_optimize", {"relation_or_path": "events", "files": "part-0.parquet"},
             "invalid argument files='part-0.parquet'; allowed values: none or a non-empty list"),
            ("qbeast_vacuum", {"relation_or_path": "events", "dry_run": "yes"},
             "qbeast_vacuum: invalid argument dry_run='yes'; allowed values: true, false"),
            ("qbeast_vacuum", {"relation_or_path": "events", "retention_hours": -3},
             "invalid argument retention_hours=-3; allowed values: a number >= 0.0"),
            ("qbeast_vacuum", {"relation_or_path": "events", "retention_hours": "7 days"},
             "invalid argument retention_hours='7 days'; allowed values: a number >= 0.0"),
            # the engine's refusal, in the words of the run-operation's --args
            ("qbeast_vacuum", {"relation_or_path": "events", "retention_hours": 1},
             "Pass allow_short_retention: true (in --args) to do it anyway"),
            ("qbeast_optimize", {"relation_or_path": "events; drop table x"},
             'invalid argument relation_or_path="events; drop table x"; allowed values: a model name'),
            ("qbeast_index_metrics", {"relation_or_path": "no_such_model"},
             "invalid argument relation_or_path=\"no_such_model\"; allowed values: a model name"),
            ("qbeast_index_metrics", {"relation_or_path": "plain_view"},
             "allowed values: a qbeast table (this one's provider is"),
            ("qbeast_index_metrics", {"relation_or_path": "bad schema'.x"},
             "allowed values: a schema name of letters, digits and underscores"),
            ("qbeast_convert", {"path": folder, "columns_to_index": []},
             "qbeast_convert: invalid argument columns_to_index=[]; allowed values: a non-empty list"),
            ("qbeast_convert", {"path": folder, "columns_to_index": ["id"], "source_format": "orc"},
             "invalid argument source_format='orc'; allowed values: delta, parquet, none"),
        ]
        bad += [
            ("qbeast_register_table", {"path": folder, "relation": "raw"},
             "qbeast_register_table: invalid argument relation=\"raw\"; allowed values: schema.table"),
            ("qbeast_register_table", {"path": str(tmp_path / "missing"), "relation": f"{schema}.x"},
             "run-operation qbeast_register_table: " + str(tmp_path / "missing")),
            ("qbeast_register_table", {"path": folder, "relation": f"{schema}.plain_view"},
             "a name that is free or already this table (it is a view table"),
        ]
        for name, args, expected in bad:
            out = _op(name, args, expect_pass=False)
            assert expected in out, (name, args, out[-2000:])
        assert table.snapshot().version == version
        assert not spark.catalog.tableExists(f"{schema}.x")

        # an existing Qbeast folder registered as a source: by hand, and from sources.yml meta
        _op("qbeast_register_table", {"path": folder, "relation": f"{schema}_raw.converted"})
        assert spark.table(f"{schema}_raw.converted").count() == 50
        other = str(tmp_path / "other_qbeast")
        qbeast.write(spark.range(7), other, "id")
        _read_two_sources(project, spark, folder, other)
        # registering again is harmless; another folder under a taken name is refused
        _op("qbeast_register_table", {"path": folder, "relation": f"{schema}_raw.converted"})
        out = _op("qbeast_register_table", {"path": other, "relation": f"{schema}_raw.converted"},
                  expect_pass=False)
        assert f"a name that is free or already this table (it is a qbeast table at file:{folder})" in out
        spark.sql(f"drop schema {schema}_raw cascade")


@pytest.mark.objectstore
class TestSourcesOnABucket:
    """Qbeast tables in an S3 bucket (moto on loopback) registered by hand and from sources.yml,
    then read by a model; credentials come from the AWS environment variables only."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"placeholder.sql": "select 1 as x"}

    def test_register_a_bucket_table_and_read_bucket_sources(self, project, spark, s3_environment, tmp_path):
        import uuid

        from s3_server import BUCKET

        spark.conf.set("spark.qbeast.storage.mirrorDir", str(tmp_path / "mirror"))
        schema = project.test_schema
        root = f"s3://{BUCKET}/dbt-sources-{uuid.uuid4().hex[:8]}"
        folder, other = f"{root}/converted", f"{root}/other"
        qbeast.write(spark.range(50).selectExpr("id", "id % 5 as k"), folder, "id,k", cube_size=20)
        qbeast.write(spark.range(7), other, "id")
        try:
            _op("qbeast_register_table", {"path": folder, "relation": f"{schema}_raw.converted"})
            assert spark.table(f"{schema}_raw.converted").where("k = 1").count() == 10
            _read_two_sources(project, spark, folder, other)
        finally:
            spark.sql(f"drop schema if exists {schema}_raw cascade")
            spark.conf.unset("spark.qbeast.storage.mirrorDir")
