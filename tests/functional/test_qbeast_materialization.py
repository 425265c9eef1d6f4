"""materialized='qbeast' end to end: dbt writes the model through the engine and reads it back."""
from __future__ import annotations

import os

import pytest

from dbt.tests.util import run_dbt, write_file

import qbeast

QBEAST_MODEL = """
{{ config(materialized='qbeast', columns_to_index=['a', 'b'], cube_size=400) }}
select id, pmod(hash(id), 1000) as a, cast(id as double) / 7 as b from range(3000)
"""

APPEND_MODEL = """
{# incremental_strategy='append': later runs append, with is_incremental() true #}
{{ config(materialized='qbeast', columns_to_index='id', cube_size=300, incremental_strategy='append') }}
{% if is_incremental() %}
select id + (select max(id) + 1 from {{ this }}) as id from range({{ var('new_rows', 500) }})
{% else %}
select id from range(1000)
{% endif %}
"""

DOWNSTREAM = """
select count(*) as n, sum(a) as sum_a from {{ ref('qb') }}
"""


def _describe(spark, name: str) -> dict:
    """Catalog facts of ``schema.table`` as dbt-spark reads them (SHOW TABLE EXTENDED)."""
    schema, table = name.split(".")
    (row,) = spark.sql(f"show table extended in {schema} like '{table}'").collect()
    return dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)


def _location(spark, name: str) -> str:
    return _describe(spark, name)["Location"].removeprefix("file:")


class TestQbeastMaterialization:
    @pytest.fixture(scope="class")
    def models(self):
        return {"qb.sql": QBEAST_MODEL, "grown.sql": APPEND_MODEL, "downstream.sql": DOWNSTREAM}

    def test_write_read_append_and_full_refresh(self, project, spark):
        results = run_dbt(["run"])
        assert {r.node.name: r.status for r in results} == {"qb": "success", "grown": "success", "downstream": "success"}
        qb = f"{project.test_schema}.qb"
        assert _describe(spark, qb)["Provider"] == "qbeast"
        location = _location(spark, qb)
        assert location == os.path.join(
            spark.catalog.getDatabase(project.test_schema).locationUri.removeprefix("file:"), "qb"
        )
        table = qbeast.QbeastTable.for_path(spark, location)
        assert table.indexed_columns() == ["a", "b"] and table.cube_size() == 400
        expected = spark.sql("select id, pmod(hash(id), 1000) as a, cast(id as double) / 7 as b from range(3000)")
        assert spark.table(qb).exceptAll(expected).count() == 0
        assert expected.exceptAll(spark.table(qb)).count() == 0
        n, sum_a = spark.table(f"{project.test_schema}.downstream").first()
        assert n == 3000 and sum_a == expected.groupBy().sum("a").first()[0]
        adapter_response = next(r for r in results if r.node.name == "qb").adapter_response
        assert adapter_response["rows_affected"] == 3000

        grown = f"{project.test_schema}.grown"
        assert spark.table(grown).count() == 1000
        second = run_dbt(["run", "--select", "grown"])  # append: is_incremental() selects the next ids
        assert second[0].message.startswith("QBEAST APPEND 500 rows")
        ids = [r.id for r in spark.table(grown).orderBy("id").collect()]
        assert ids == list(range(1500))
        grown_table = qbeast.QbeastTable.for_path(spark, _location(spark, grown))
        assert len(grown_table.snapshot().delta.files) >= 2  # appended files beside the first write
        version = grown_table.snapshot().version
        idle = run_dbt(["run", "--select", "grown", "--vars", "{new_rows: 0}"])  # no new rows
        assert idle[0].message == "QBEAST APPEND no rows, nothing committed"
        assert grown_table.snapshot().version == version and spark.table(grown).count() == 1500

        rerun = run_dbt(["run", "--select", "qb"])  # no strategy: rebuilt, same rows, a new version
        assert rerun[0].message.startswith("QBEAST OVERWRITE 3000 rows")
        assert spark.table(qb).count() == 3000
        assert table.snapshot().version == 1

        refreshed = run_dbt(["run", "--select", "grown", "--full-refresh"])
        assert refreshed[0].message.startswith("QBEAST OVERWRITE 1000 rows")
        assert spark.table(grown).count() == 1000


class TestQbeastReplacesAView:
    @pytest.fixture(scope="class")
    def models(self):
        return {"was_view.sql": "{{ config(materialized='view') }} select 1 as x"}

    def test_view_is_replaced_by_a_qbeast_table_under_location_root(self, project, spark):
        run_dbt(["run"])
        name = f"{project.test_schema}.was_view"
        assert _describe(spark, name)["Type"] == "VIEW"
        write_file(
            "{{ config(materialized='qbeast', columns_to_index=['x'], location_root='qbeast_data') }}"
            " select id as x from range(10)",
            project.project_root, "models", "was_view.sql",
        )
        run_dbt(["run"])
        facts = _describe(spark, name)
        assert facts["Provider"] == "qbeast"
        # A relative location_root hangs off the dbt project folder.
        expected = os.path.join(str(project.project_root), "qbeast_data", "was_view")
        assert facts["Location"].removeprefix("file:") == expected
        assert os.path.isdir(os.path.join(expected, "_delta_log"))
        assert sorted(r.x for r in spark.table(name).collect()) == list(range(10))


BAD_CONFIGS = {
    "no_columns.sql": "{{ config(materialized='qbeast') }} select 1 as a",
    "zero_cube.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], cube_size=0) }} select 1 as a",
    "bad_mode.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], incremental_strategy='merge') }} select 1 as a",
    "missing_column.sql": "{{ config(materialized='qbeast', columns_to_index=['nope']) }} select 1 as a",
    "bad_transformer.sql": "{{ config(materialized='qbeast', columns_to_index=['a:zorder']) }} select 1 as a",
    "typo_columns.sql": "{{ config(materialized='qbeast', colums_to_index=['a']) }} select 1 as a",
    "typo_cube.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], cube_sise=10) }} select 1 as a",
    "both_spellings.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], columnsToIndex=['a']) }} select 1 as a",
    "bad_schema_change.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], on_schema_change='sync_all_columns') }} select 1 as a",
    "bad_stats.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], column_stats=[1]) }} select 1 as a",
    "bad_optimize.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], optimize_after_run='yes') }} select 1 as a",
    "bad_properties.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], tblproperties=['x']) }} select 1 as a",
    "bad_docs.sql": "{{ config(materialized='qbeast', columns_to_index=['a'], persist_docs={'table': true}) }} select 1 as a",
}

VALID_KEYS = ("valid qbeast keys: columns_to_index, cube_size, incremental_strategy, unique_key, "
              "incremental_predicates, merge_update_columns, merge_exclude_columns, location_root")

EXPECTED_ERRORS = {
    "no_columns": "needs config columns_to_index",
    "zero_cube": "invalid config cube_size=0; allowed values: a positive integer",
    "bad_mode": "incremental_strategy='merge' needs config unique_key; allowed values: a column name",
    "missing_column": "columns_to_index names nope, which the model's query does not return; allowed values: a",
    "bad_transformer": "linear, hashing, quantiles, histogram",
    "typo_columns": f"unknown config key 'colums_to_index' (did you mean 'columns_to_index'?); {VALID_KEYS}",
    "typo_cube": f"unknown config key 'cube_sise' (did you mean 'cube_size'?); {VALID_KEYS}",
    "both_spellings": "sets both columns_to_index and its alias columnsToIndex",
    "bad_schema_change": "invalid config on_schema_change='sync_all_columns'; allowed values: ignore, fail, append_new_columns",
    "bad_stats": "invalid config column_stats=[1]; allowed values: a dict",
    "bad_optimize": "invalid config optimize_after_run='yes'; allowed values: true, false",
    "bad_properties": "invalid config tblproperties=['x']; allowed values: a dict",
    "bad_docs": "invalid config persist_docs={'table': True}; allowed values: a dict with optional boolean keys",
}


class TestQbeastConfigErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return BAD_CONFIGS

    def test_each_bad_config_fails_its_model_before_writing(self, project, spark):
        results = run_dbt(["run"], expect_pass=False)
        assert {r.node.name: r.status for r in results} == {name: "error" for name in EXPECTED_ERRORS}
        for result in results:
            name = result.node.name
            assert f"model {name}" in result.message and EXPECTED_ERRORS[name] in result.message
            assert not spark.catalog.tableExists(f"{project.test_schema}.{name}")
        schema_dir = spark.catalog.getDatabase(project.test_schema).locationUri.removeprefix("file:")
        assert not os.path.exists(schema_dir) or os.listdir(schema_dir) == []
