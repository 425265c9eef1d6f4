"""dbt-tests-adapter's model contract suites (``constraints``) on table, view and incremental
models in Spark's default file format, as dbt-spark subclasses them.

The adapter declares every constraint ``NOT_ENFORCED`` (as dbt-spark does): dbt checks the
contract's columns and types before the build and warns about the constraints; nothing is
altered on the table afterwards (dbt-spark issued ``ALTER ... SET NOT NULL`` on any model without
a ``file_format``, taking it for Delta, which failed on parquet tables).
"""
from __future__ import annotations

import pytest

from dbt.tests.adapter.constraints import fixtures
from dbt.tests.adapter.constraints.test_constraints import (
    BaseIncrementalConstraintsColumnsEqual,
    BaseTableConstraintsColumnsEqual,
    BaseViewConstraintsColumnsEqual,
)

#: dbt's contract with Spark's type names (``text`` is Postgres'), as dbt-spark's suite words it
SCHEMA_YML = fixtures.model_schema_yml.replace("text", "string")


def _models(wrong_order_sql: str, wrong_name_sql: str) -> dict[str, str]:
    return {"my_model_wrong_order.sql": wrong_order_sql, "my_model_wrong_name.sql": wrong_name_sql,
            "constraints_schema.yml": SCHEMA_YML}


class SparkTypes:
    """Spark's names of the types, as the session's cursor describes a query's columns."""

    @pytest.fixture
    def string_type(self):
        return "string"

    @pytest.fixture
    def int_type(self):
        return "int"

    @pytest.fixture
    def data_types(self):
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", "int", "int"],
            ["'1'", "string", "string"],
            ["true", "boolean", "boolean"],
            ["array('a','b','c')", "array<string>", "array<string>"],
            ["array(1,2,3)", "array<int>", "array<int>"],
            ["cast(6.45 as decimal(10,2))", "decimal(10,2)", "decimal(10,2)"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2019-01-01 00:00:00' as timestamp)", "timestamp", "timestamp"],
        ]


class TestTableConstraintsColumnsEqualQbeast(SparkTypes, BaseTableConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return _models(fixtures.my_model_wrong_order_sql, fixtures.my_model_wrong_name_sql)


class TestViewConstraintsColumnsEqualQbeast(SparkTypes, BaseViewConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return _models(fixtures.my_model_view_wrong_order_sql, fixtures.my_model_view_wrong_name_sql)


class TestIncrementalConstraintsColumnsEqualQbeast(SparkTypes, BaseIncrementalConstraintsColumnsEqual):
    @pytest.fixture(scope="class")
    def models(self):
        return _models(fixtures.my_model_incremental_wrong_order_sql, fixtures.my_model_incremental_wrong_name_sql)


class TestQbeastConstraintsColumnsEqual(SparkTypes, BaseTableConstraintsColumnsEqual):
    """The same on qbeast models (dbt-spark's spelling: table with file_format='qbeast'),
    indexed on the contract's id. The data type checks build a one-column model without an id
    as a plain table, which TestTableConstraintsColumnsEqualQbeast runs already: not repeated."""

    test__constraints_wrong_column_data_types = None
    test__constraints_correct_column_data_types = None

    @pytest.fixture(scope="class")
    def models(self):
        return _models(fixtures.my_model_wrong_order_sql, fixtures.my_model_wrong_name_sql)

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"test": {
            "my_model_wrong_order": {"+file_format": "qbeast", "+columns_to_index": ["id"]},
            "my_model_wrong_name": {"+file_format": "qbeast", "+columns_to_index": ["id"]}}}}
