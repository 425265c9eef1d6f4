"""dbt-tests-adapter's suites for dbt's unit tests and for relations changing type or schema,
subclassed as dbt-spark subclasses them, on the session method; a qbeast variant where a suite
builds the tables it checks."""
from __future__ import annotations

import pytest

from dbt.tests.adapter.relations.test_changing_relation_type import (
    BaseChangeRelationTypeValidator,
)
from dbt.tests.adapter.relations.test_dropping_schema_named import BaseDropSchemaNamed
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.adapter.unit_testing.test_types import BaseUnitTestingTypes
from dbt.tests.util import run_dbt, write_file

from .conftest import catalog_provider


class TestUnitTestingTypesQbeast(BaseUnitTestingTypes):
    """Each Spark type a unit test's given and expected rows can spell (dbt's list is
    Postgres')."""

    @pytest.fixture
    def data_types(self):
        # the upstream model's SQL value, and the same value as the unit test's YAML spells it
        return [
            ["1", "1"],
            ["2.0", "2.0"],
            ["'12345'", "12345"],
            ["'string'", "string"],
            ["true", "true"],
            ["date '2011-11-11'", "2011-11-11"],
            ["timestamp '2013-11-03 00:00:00-0'", "2013-11-03 00:00:00-0"],
            ["cast(1.25 as decimal(10, 2))", "1.25"],
            ["array(1, 2, 3)", "'array(1, 2, 3)'"],
            ["map('10', 't', '15', 'f', '20', NULL)", """'map("10", "t", "15", "f", "20", NULL)'"""],
            ['named_struct("a", 1, "b", 2, "c", 3)', """'named_struct("a", 1, "b", 2, "c", 3)'"""],
        ]


class TestUnitTestingTypesQbeastUpstream(TestUnitTestingTypesQbeast):
    """The same unit tests where the model's input is a qbeast table: the scalar types an index
    can hold (the upstream model is built, and its columns typed, from the table)."""

    @pytest.fixture
    def data_types(self):
        return [["1", "1"], ["2.0", "2.0"], ["'string'", "string"],
                ["date '2011-11-11'", "2011-11-11"],
                ["timestamp '2013-11-03 00:00:00-0'", "2013-11-03 00:00:00-0"]]

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+materialized": "qbeast", "+columns_to_index": ["tested_column"]}}

    def test_the_upstream_model_is_a_qbeast_table(self, project):
        run_dbt(["run", "--select", "my_upstream_model"])
        assert catalog_provider(project, "my_upstream_model") == "qbeast"


class TestUnitTestCaseInsensitivityQbeast(BaseUnitTestCaseInsensivity):
    pass


class TestUnitTestInvalidInputQbeast(BaseUnitTestInvalidInput):
    pass


class TestChangeRelationTypesQbeast(BaseChangeRelationTypeValidator):
    """view -> table -> view -> incremental -> table, as dbt's; then to and from qbeast."""

    def test_to_and_from_qbeast(self, project):
        self._run_and_check_materialization("table")
        write_file("{{ config(materialized=var('materialized'), columns_to_index=['materialization']) }}\n"
                   "select '{{ var(\"materialized\") }}' as materialization",
                   project.project_root, "models", "model_mc_modelface.sql")
        for materialization in ("qbeast", "view", "qbeast", "table"):
            self._run_and_check_materialization(materialization)
            provider = catalog_provider(project, "model_mc_modelface")
            assert (provider == "qbeast") is (materialization == "qbeast"), (materialization, provider)


class TestDropSchemaNamedQbeast(BaseDropSchemaNamed):
    pass


class TestDropSchemaNamedQbeastModels(BaseDropSchemaNamed):
    """``drop_schema_named`` with a qbeast table in the schema: the schema and its table go."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"model_a.sql": "{{ config(materialized='qbeast', columns_to_index=['id']) }} "
                               "select 1 as id"}
