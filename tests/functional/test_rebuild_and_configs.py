"""A qbeast model behaves as dbt taught its user: it rebuilds like a `table` unless it sets an
incremental strategy, and every config either works or fails with a clear error."""
from __future__ import annotations

import os

import pytest

from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

import qbeast

# The same rows from a qbeast model without a strategy and from a table model; `shift` changes
# the rows between runs, so a model that appended instead of rebuilding would differ.
ROWS = "select id, id % 7 as k from range({{ var('shift', 0) }}, {{ var('shift', 0) }} + 100)"
REBUILT = "{{ config(materialized='qbeast', columns_to_index=['id', 'k'], cube_size=40) }} " + ROWS
AS_TABLE = "{{ config(materialized='table') }} " + ROWS

APPENDED = """
{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='append') }}
{% if is_incremental() %}
select id + (select max(id) + 1 from {{ this }}) as id from range(50)
{% else %}
select id from range(100)
{% endif %}
"""

LEGACY = """
{{ config(materialized='qbeast', columns_to_index=['id'], write_mode='append') }}
select {{ 'true' if is_incremental() else 'false' }} as incremental, id from range(10)
"""


def _location(spark, schema: str, name: str) -> str:
    (row,) = spark.sql(f"show table extended in {schema} like '{name}'").collect()
    facts = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
    return facts["Location"].removeprefix("file:")


def _rows(df) -> list:
    return sorted(tuple(r) for r in df.collect())


class TestRebuildByDefault:
    @pytest.fixture(scope="class")
    def models(self):
        return {"rebuilt.sql": REBUILT, "as_table.sql": AS_TABLE, "appended.sql": APPENDED,
                "legacy.sql": LEGACY}

    def test_plain_qbeast_model_rebuilds_like_a_table_and_strategies_append(self, project, spark):
        schema = project.test_schema
        previous = None
        for run, shift in enumerate([0, 30, 75]):
            results, output = run_dbt_and_capture(["run", "--vars", f"{{shift: {shift}}}"])
            messages = {r.node.name: r.message for r in results}
            assert messages["rebuilt"].startswith("QBEAST OVERWRITE 100 rows")
            # after every run the qbeast model holds exactly the table model's rows
            assert _rows(spark.table(f"{schema}.rebuilt")) == _rows(spark.table(f"{schema}.as_table"))
            table = qbeast.QbeastTable.for_path(spark, _location(spark, schema, "rebuilt"))
            assert table.snapshot().version == run  # one overwrite commit per run
            if previous is not None:  # the previous version stays readable (time travel)
                old = spark.read.format("qbeast").option("versionAsOf", run - 1).load(table.path)
                assert _rows(old) == previous
            previous = _rows(spark.table(f"{schema}.rebuilt"))

            # incremental_strategy='append': is_incremental() selects the next ids
            ids = [r.id for r in spark.table(f"{schema}.appended").orderBy("id").collect()]
            assert ids == list(range(100 + 50 * run))
            # the deprecated write_mode still appends, with a warning naming the replacement
            assert spark.table(f"{schema}.legacy").count() == 10 * (run + 1)
            assert "write_mode='append' is deprecated; use incremental_strategy='append'" in output

        refreshed = run_dbt(["run", "--select", "appended", "--full-refresh"])
        assert refreshed[0].message.startswith("QBEAST OVERWRITE 100 rows")
        assert spark.table(f"{schema}.appended").count() == 100


BAD = "select 1 as a, cast(1.5 as double) as b"
REFUSED = {
    # look-alike keys: another engine's word, or a shortened qbeast key
    "lookalike_cube": ("{{ config(materialized='qbeast', columns_to_index=['a'], cube=10) }} " + BAD,
                       "unknown config key 'cube' (did you mean 'cube_size'?)"),
    "lookalike_optimize": ("{{ config(materialized='qbeast', columns_to_index=['a'], optimize=true) }} " + BAD,
                           "unknown config key 'optimize' (did you mean 'optimize_after_run'?)"),
    "lookalike_indexed": ("{{ config(materialized='qbeast', indexed_columns=['a']) }} " + BAD,
                          "unknown config key 'indexed_columns' (did you mean 'columns_to_index'?)"),
    "lookalike_zorder": ("{{ config(materialized='qbeast', columns_to_index=['a'], zorder_by=['a']) }} " + BAD,
                         "unknown config key 'zorder_by' (did you mean 'columns_to_index'?)"),
    "mode_overwrite": ("{{ config(materialized='qbeast', columns_to_index=['a'], mode='overwrite') }} " + BAD,
                       "unknown config key 'mode'; a qbeast model without incremental_strategy "
                       "rebuilds its table on every run"),
    "merge_strategy": ("{{ config(materialized='qbeast', columns_to_index=['a'], incremental_strategy='merge') }} " + BAD,
                       "model merge_strategy: incremental_strategy='merge' needs config unique_key; "
                       "allowed values: a column name or a list of column names"),
    "delete_insert_no_key": ("{{ config(materialized='incremental', file_format='qbeast', columns_to_index=['a'], "
                             "incremental_strategy='delete+insert', unique_key=[]) }} " + BAD,
                             "incremental_strategy='delete+insert' needs config unique_key"),
    "bad_strategy": ("{{ config(materialized='qbeast', columns_to_index=['a'], incremental_strategy='upsert') }} " + BAD,
                     "model bad_strategy: invalid config incremental_strategy='upsert'; allowed values: "
                     "append, merge, delete+insert"),
    "bad_spark_strategy": ("{{ config(materialized='incremental', file_format='qbeast', columns_to_index=['a'], "
                           "incremental_strategy='insert_overwrite') }} " + BAD,
                           "invalid config incremental_strategy='insert_overwrite'; allowed values: "
                           "append, merge, delete+insert"),
    "exclude_with_delete_insert": ("{{ config(materialized='qbeast', columns_to_index=['a'], unique_key='a', "
                                   "incremental_strategy='delete+insert', merge_exclude_columns=['b']) }} " + BAD,
                                   "config merge_exclude_columns needs incremental_strategy='merge' (this "
                                   "model's strategy is 'delete+insert')"),
    "both_merge_lists": ("{{ config(materialized='qbeast', columns_to_index=['a'], unique_key='a', "
                         "incremental_strategy='merge', merge_update_columns=['b'], merge_exclude_columns=['b']) }} " + BAD,
                         "sets both merge_update_columns and merge_exclude_columns"),
    "source_predicate": ("{{ config(materialized='qbeast', columns_to_index=['a'], unique_key='a', "
                         "incremental_strategy='merge', incremental_predicates=['DBT_INTERNAL_SOURCE.a > 0']) }} " + BAD,
                         "they cannot name DBT_INTERNAL_SOURCE"),
    "predicate_without_key": ("{{ config(materialized='qbeast', columns_to_index=['a'], incremental_strategy='append', "
                              "incremental_predicates=['a > 0']) }} " + BAD,
                              "config incremental_predicates needs incremental_strategy='merge' or 'delete+insert'"),
    "bad_write_mode": ("{{ config(materialized='qbeast', columns_to_index=['a'], write_mode='merge') }} " + BAD,
                       "invalid config write_mode='merge'; allowed values: append, overwrite (deprecated"),
    "mixed_strategy": ("{{ config(materialized='qbeast', columns_to_index=['a'], write_mode='overwrite', "
                       "incremental_strategy='append') }} " + BAD,
                       "incremental_strategy='append' and the deprecated write_mode='overwrite', which disagree"),
    "unique_key": ("{{ config(materialized='qbeast', columns_to_index=['a'], incremental_strategy='append', "
                   "unique_key='a') }} " + BAD,
                   "model unique_key: config unique_key='a' needs incremental_strategy='merge' or "
                   "'delete+insert' (this model's strategy is 'append')"),
    "key_without_strategy": ("{{ config(materialized='qbeast', columns_to_index=['a'], unique_key='a') }} " + BAD,
                             "needs incremental_strategy='merge' or 'delete+insert' (this model's strategy "
                             "is none (rebuild on every run))"),
    "partitioned": ("{{ config(materialized='qbeast', columns_to_index=['a'], partition_by=['a']) }} " + BAD,
                    "config partition_by=['a'] is not supported by the qbeast materialization: a Qbeast "
                    "table is laid out by its index"),
    "parquet_format": ("{{ config(materialized='qbeast', columns_to_index=['a'], file_format='parquet') }} " + BAD,
                       "config file_format='parquet' is not supported by the qbeast materialization"),
    "granted": ("{{ config(materialized='qbeast', columns_to_index=['a'], grants={'select': ['analyst']}) }} " + BAD,
                "config grants={'select': ['analyst']} is not supported by the qbeast materialization: "
                "the embedded Spark catalog has no access control"),
    "bad_non_finite": ("{{ config(materialized='qbeast', columns_to_index=['b'], non_finite='zero') }} " + BAD,
                       "invalid config non_finite='zero'; allowed values: fail, null"),
    "bad_take_over": ("{{ config(materialized='qbeast', columns_to_index=['a'], take_over_location='yes') }} " + BAD,
                      "invalid config take_over_location='yes'; allowed values: true, false"),
    "nan_refused": ("{{ config(materialized='qbeast', columns_to_index=['b']) }} "
                    "select id, case when id = 2 then double('NaN') else cast(id as double) end as b from range(5)",
                    "column 'b' holds NaN or infinite values"),
    "contract_wrong_type": ("{{ config(materialized='qbeast', columns_to_index=['a']) }} " + BAD,
                            "This model has an enforced contract that failed"),
    "changed_columns": ("{{ config(materialized='qbeast', columns_to_index=['a'], incremental_strategy='append') }} " + BAD,
                        "changing the indexed columns needs a rebuild: dbt run --full-refresh"),
    # engine errors worded by dbt from their fields: the config key (column_stats, not
    # columnStats), the value, the allowed values; double (not DoubleDataType)
    "half_stats": ("{{ config(materialized='qbeast', columns_to_index=['b'], column_stats={'b_min': 0}) }} " + BAD,
                   "model half_stats: invalid config column_stats={'b_min': 0.0}; allowed values: both "
                   "'b_min' and 'b_max' with b_min < b_max"),
    "histogram_double": ("{{ config(materialized='qbeast', columns_to_index=['b:histogram']) }} " + BAD,
                         "model histogram_double: invalid config columns_to_index='b:histogram'; allowed "
                         "values: for double column 'b': linear, hashing, quantiles"),
    "table_grants": ("{{ config(materialized='table', grants={'select': ['analyst']}) }} " + BAD,
                     "config grants={\"select\": [\"analyst\"]} cannot be applied: the qbeast adapter's "
                     "Spark catalog has no access control"),
}

WORKING = {
    # the contract's names and types: enforced, and the columns come in the contract's order
    "contract_ok": "{{ config(materialized='qbeast', columns_to_index=['a']) }} select 1.5 as b, 1 as a",
    # NaN and infinities of an indexed double column stored as null on request
    "nan_as_null": "{{ config(materialized='qbeast', columns_to_index=['b'], non_finite='null') }} "
                   "select id, case when id = 2 then double('NaN') when id = 3 then double('-Infinity') "
                   "else cast(id as double) end as b from range(5)",
    # indexed column names match case-insensitively, as Spark resolves them
    "upper_case": "{{ config(materialized='qbeast', columns_to_index=['ID', 'Price:linear']) }} "
                  "select id, cast(id as double) * 2 as price from range(20)",
    "changed_columns": "{{ config(materialized='qbeast', columns_to_index=['b'], incremental_strategy='append') }} " + BAD,
}

CONTRACTS = """
version: 2
models:
  - name: contract_wrong_type
    config: {contract: {enforced: true}}
    columns:
      - {name: a, data_type: string}
      - {name: b, data_type: double}
  - name: contract_ok
    config: {contract: {enforced: true}}
    columns:
      - {name: a, data_type: int}
      - {name: b, data_type: "decimal(2,1)"}
"""


class TestEveryConfigWorksOrFails:
    @pytest.fixture(scope="class")
    def models(self):
        models = {f"{name}.sql": sql for name, (sql, _) in REFUSED.items() if name != "changed_columns"}
        models.update({f"{name}.sql": sql for name, sql in WORKING.items()})
        models["contracts.yml"] = CONTRACTS
        return models

    def test_refused_configs_name_the_key_and_write_nothing(self, project, spark):
        schema = project.test_schema
        results = run_dbt(["run"], expect_pass=False)
        status = {r.node.name: r for r in results}
        for name in WORKING:
            assert status[name].status == "success", (name, status[name].message)
        # second run of changed_columns: the appended run names other indexed columns
        write_file(REFUSED["changed_columns"][0], project.project_root, "models", "changed_columns.sql")
        results = run_dbt(["run"], expect_pass=False)
        status = {r.node.name: r for r in results}
        for name, (_, expected) in REFUSED.items():
            result = status[name]
            assert result.status == "error", name
            assert expected in result.message, (name, result.message)
            for engine_word in ("columnStats for", "DataType", " mode='", "[Errno"):
                assert engine_word not in result.message, (name, result.message)
            if name not in ("changed_columns", "table_grants"):
                assert not spark.catalog.tableExists(f"{schema}.{name}"), name
        schema_dir = spark.catalog.getDatabase(schema).locationUri.removeprefix("file:")
        for name in REFUSED:
            if name not in ("changed_columns", "table_grants"):
                assert not os.path.exists(os.path.join(schema_dir, name)), name

        assert spark.table(f"{schema}.contract_ok").columns == ["a", "b"]
        nan = {r.id: r.b for r in spark.table(f"{schema}.nan_as_null").collect()}
        assert nan[2] is None and nan[3] is None and nan[4] == 4.0
        upper = qbeast.QbeastTable.for_path(spark, _location(spark, schema, "upper_case"))
        assert upper.indexed_columns() == ["id", "price"]
