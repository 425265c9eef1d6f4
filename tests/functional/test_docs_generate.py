"""dbt-tests-adapter's BaseDocsGenerate on the qbeast profile (dbt-spark's catalog conventions)."""
from __future__ import annotations

import getpass

import pytest

from dbt.tests.adapter.basic import expected_catalog
from dbt.tests.adapter.basic.test_docs_generate import BaseDocsGenerate


class TestDocsGenerateQbeast(BaseDocsGenerate):
    @pytest.fixture(scope="class", autouse=True)
    def leftover_temporary_view(self, spark):
        """A temporary view in the session, as an earlier incremental run in the same process
        leaves (``<model>__dbt_tmp``): Spark lists it in every schema's ``SHOW TABLE EXTENDED``
        with no schema of its own. The catalog must leave it out (it once failed on its missing
        schema with ``'NoneType' object has no attribute 'lower'``); the expected catalog below
        has no such entry."""
        spark.sql("create or replace temporary view incremental__dbt_tmp as select 1 as id")
        yield
        spark.catalog.dropTempView("incremental__dbt_tmp")

    @pytest.fixture(scope="class")
    def profile_user(self):
        """The owner Spark's embedded catalog records: the OS user running the session."""
        return getpass.getuser()

    @pytest.fixture(scope="class")
    def expected_catalog(self, project, profile_user):
        # dbt-spark reports the catalog from SHOW TABLE EXTENDED: Spark's type names, lower-case
        # relation types, the owner from the metastore.
        return expected_catalog.base_expected_catalog(
            project,
            role=profile_user,
            id_type="long",
            text_type="string",
            time_type="timestamp",
            view_type="view",
            table_type="table",
            model_stats=expected_catalog.no_stats(),
        )


EVENTS = """
{{ config(materialized='qbeast', columns_to_index=['id', 'x'], cube_size=150, incremental_strategy='append',
          optimize_after_run=false) }}
select id, cast(id % 37 as double) as x from range(900)
"""


class TestDocsGenerateQbeastStatistics:
    """``catalog.json`` carries a qbeast table's statistics, equal to what its Delta log says."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, "plain_view.sql": "{{ config(materialized='view') }} select 1 as x",
                "plain_table.sql": "{{ config(materialized='table') }} select id from range(2034)"}

    def test_catalog_statistics_match_the_delta_log(self, project, spark):
        import json
        import os
        from datetime import datetime, timezone

        from dbt.tests.util import run_dbt

        from qbeast.delta.log import DeltaLog
        from qbeast.snapshot import QbeastSnapshot

        run_dbt(["run"])
        run_dbt(["run", "--select", "events"])  # appends: two blocks per cube, optimize has work
        run_dbt(["run-operation", "qbeast_optimize", "--args", '{"relation_or_path": "events"}'])
        run_dbt(["docs", "generate"])
        with open(os.path.join(project.project_root, "target", "catalog.json")) as f:
            catalog = json.load(f)
        stats = catalog["nodes"]["model.test.events"]["stats"]
        view_stats = catalog["nodes"]["model.test.plain_view"]["stats"]
        assert view_stats["has_stats"]["value"] is False and list(view_stats) == ["has_stats"]
        # a plain table: the metastore's row count was never computed (it says 0): not shown
        table_stats = {key: item["value"] for key, item in
                       catalog["nodes"]["model.test.plain_table"]["stats"].items()}
        assert table_stats.get("rows", 2034) == 2034 and table_stats["bytes"] > 0, table_stats

        location = spark.catalog.getDatabase(project.test_schema).locationUri.removeprefix("file:") + "/events"
        log = DeltaLog.for_path(location)
        snapshot = log.snapshot()
        qbeast_view = QbeastSnapshot(snapshot)
        (optimize,) = [c for c in log.history() if c.operation == "OPTIMIZE"][:1]
        optimized = datetime.fromtimestamp(optimize.timestamp / 1000, tz=timezone.utc)
        values = {key: item["value"] for key, item in stats.items()}
        assert snapshot.num_records == 1800
        assert values == {
            "has_stats": True,
            "rows": snapshot.num_records,
            "bytes": snapshot.size_bytes,
            "files": snapshot.num_files,
            "revisions": len(qbeast_view.files_by_revision()),
            "indexed_columns": "id, x",
            "cube_size": 150,
            "last_optimize": optimized.strftime("%Y-%m-%d %H:%M:%S.") + f"{optimized.microsecond // 1000:03d} UTC",
        }
        assert stats["rows"]["label"] == "Rows" and stats["rows"]["include"] is True
