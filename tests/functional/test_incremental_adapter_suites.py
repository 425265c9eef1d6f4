"""dbt-tests-adapter's incremental suites on qbeast tables.

The suites' models say ``materialized='incremental'`` (and ``'table'`` for their expected
relations); the project config makes every one of them a qbeast model in dbt-spark's spelling
(``+file_format: qbeast`` with ``+columns_to_index``), so the suites run the qbeast strategies:
merge for a ``unique_key``, append without, delete+insert when the suite asks for it.
"""
from __future__ import annotations

import pytest

from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental import test_incremental_unique_id as unique_id
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.util import run_dbt

from .conftest import catalog_provider


def as_qbeast(columns, **extra):
    """Project config: every model of the suite is a qbeast model indexed on ``columns``."""
    return {"models": {"+file_format": "qbeast", "+columns_to_index": columns, **extra}}



class TestIncrementalQbeast(BaseIncremental):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "incremental", **as_qbeast(["id"])}

    def test_incremental(self, project):
        super().test_incremental(project)
        assert catalog_provider(project, "incremental") == "qbeast"


def _typed_dates(sql: str) -> str:
    """The suite's seed inserts with date literals: Spark (ANSI store assignment) refuses to put a
    string into the seed's date column, whatever the table format."""
    return sql.replace("'2022-02-14')", "date'2022-02-14')").replace("'2022-02-01')", "date'2022-02-01')")


class TestIncrementalUniqueKeyQbeast(BaseIncrementalUniqueKey):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return as_qbeast(["state"])

    @pytest.fixture(scope="class")
    def seeds(self):
        return {
            "duplicate_insert.sql": _typed_dates(unique_id.seeds__duplicate_insert_sql),
            "seed.csv": unique_id.seeds__seed_csv,
            "add_new_rows.sql": _typed_dates(unique_id.seeds__add_new_rows_sql),
        }


class TestMergeExcludeColumnsQbeast(BaseMergeExcludeColumns):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return as_qbeast(["id"])


class TestIncrementalPredicatesDeleteInsertQbeast(BaseIncrementalPredicates):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return as_qbeast(["id"], **{"+incremental_predicates": ["id != 2"],
                                    "+incremental_strategy": "delete+insert"})


class TestPredicatesMergeQbeast(BaseIncrementalPredicates):
    """The same expectation through merge, with dbt's older ``predicates`` key on the target
    alias: the row of id 2 may not be matched, so the new one is inserted beside it."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return as_qbeast(["id"], **{"+predicates": ["DBT_INTERNAL_DEST.id != 2"],
                                    "+incremental_strategy": "merge"})


class TestIncrementalOnSchemaChangeQbeast(BaseIncrementalOnSchemaChange):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return as_qbeast(["id"])

    def test_run_incremental_sync_all_columns(self, project):
        """A Qbeast table never drops columns: sync_all_columns is refused with the allowed values."""
        results = run_dbt(["run", "--select", "model_a incremental_sync_all_columns"], expect_pass=False)
        failed = [r for r in results if r.status == "error"]
        assert [r.node.name for r in failed] == ["incremental_sync_all_columns"]
        assert ("invalid config on_schema_change='sync_all_columns'; allowed values: ignore, fail, "
                "append_new_columns") in failed[0].message
