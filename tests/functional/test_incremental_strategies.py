"""Incremental strategies of qbeast models (append, merge, delete+insert) and dbt-spark's spelling
(``materialized='table'`` / ``'incremental'`` with ``file_format='qbeast'``), asserted row by row:
no key doubled, no row lost, a failed run keeps the previous version."""
from __future__ import annotations

import re

import pytest

from dbt.tests.util import run_dbt

import qbeast

# run 1: ids 0..999; run 2: ids 500..1499 with new values. 2,000 rows for 1,500 keys: an upsert
# must hold 1,500 rows, the second run's values for ids >= 500.
KEYED_ROWS = """
{% set run = var('run', 1) %}
select id, id % 13 as k, {{ run }} * 10 as v, 'r{{ run }}' as note
from range({{ 0 if run == 1 else 500 }}, {{ 1000 if run == 1 else 1500 }})
"""
UPSERT = ("{{ config(materialized='qbeast', columns_to_index=['id', 'k'], cube_size=200, "
          "incremental_strategy='merge', unique_key='id') }}" + KEYED_ROWS)
# dbt-spark's spelling, a two-column key and merge_update_columns: note is not updated
UPSERT_SPARK = ("{{ config(materialized='incremental', file_format='qbeast', columns_to_index=['id'], "
                "unique_key=['id', 'k'], merge_update_columns=['v']) }}" + KEYED_ROWS)
# only keys with id >= 700 may be matched: 500..699 are inserted again (doubles by request)
UPSERT_PREDICATE = ("{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='merge', "
                    "unique_key='id', incremental_predicates=['DBT_INTERNAL_DEST.id >= 700']) }}" + KEYED_ROWS)
# delete+insert on k: run 2 replaces every row of the keys its rows carry (two rows per key)
REPLACED = """
{{ config(materialized='qbeast', columns_to_index=['k'], incremental_strategy='delete+insert',
          unique_key='k', incremental_predicates=['k != 3']) }}
{% if var('run', 1) == 1 %}
select id, id % 10 as k, 'old' as note from range(100)
{% else %}
select id, id % 5 as k, 'new' as note from range(1000, 1010)
{% endif %}
"""
# new column on the second run, added to the table by on_schema_change='append_new_columns'
WIDENED = """
{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='merge', unique_key='id',
          on_schema_change='append_new_columns') }}
select id, 'r{{ var('run', 1) }}' as note
{% if var('run', 1) == 2 %}, id * 2 as extra{% endif %}
from range({{ 0 if var('run', 1) == 1 else 5 }}, {{ 10 if var('run', 1) == 1 else 15 }})
"""
# a source with two rows for one key fails the merge before anything is written
DOUBLED = """
{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='merge', unique_key='id') }}
select id % {{ 10 if var('run', 1) == 1 else 5 }} as id, id as v from range(10)
"""
APPENDED_SPARK = """
{{ config(materialized='incremental', file_format='qbeast', columns_to_index=['id']) }}
select id + {{ 0 if var('run', 1) == 1 else 10 }} as id from range(10)
"""
TABLE_SPARK = """
{{ config(materialized='table', file_format='qbeast', columns_to_index=['id'], cube_size=50,
          unique_key='id') }}
select id, {{ var('run', 1) }} as run from range(20)
"""


def _rows(df) -> list:
    return sorted(tuple(r) for r in df.collect())


def _table(spark, schema: str, name: str) -> qbeast.QbeastTable:
    (row,) = spark.sql(f"show table extended in {schema} like '{name}'").collect()
    facts = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
    assert facts["Provider"] == "qbeast", name
    return qbeast.QbeastTable.for_path(spark, facts["Location"].removeprefix("file:"))


class TestStrategies:
    @pytest.fixture(scope="class")
    def models(self):
        return {"upsert.sql": UPSERT, "upsert_spark.sql": UPSERT_SPARK,
                "upsert_predicate.sql": UPSERT_PREDICATE, "replaced.sql": REPLACED,
                "widened.sql": WIDENED, "doubled.sql": DOUBLED,
                "appended_spark.sql": APPENDED_SPARK, "table_spark.sql": TABLE_SPARK}

    def test_every_strategy_changes_exactly_the_rows_of_its_keys(self, project, spark):
        schema = project.test_schema
        first = {r.node.name: r for r in run_dbt(["run", "--vars", "{run: 1}"])}
        assert first["upsert"].message.startswith("QBEAST OVERWRITE 1000 rows")
        before_doubled = _table(spark, schema, "doubled")
        doubled_version = before_doubled.snapshot().version
        doubled_rows = _rows(spark.table(f"{schema}.doubled"))

        second = {r.node.name: r for r in run_dbt(["run", "--vars", "{run: 2}"], expect_pass=False)}

        # merge: 2,000 rows for 1,500 keys give 1,500 rows, the newer values win
        assert second["upsert"].message.startswith(
            "QBEAST MERGE 500 updated, 500 inserted, 0 deleted"), second["upsert"].message
        assert second["upsert"].adapter_response["rows_affected"] == 1000
        upsert = {r.id: (r.v, r.note) for r in spark.table(f"{schema}.upsert").collect()}
        assert spark.table(f"{schema}.upsert").count() == len(upsert) == 1500
        assert upsert == {i: (10, "r1") if i < 500 else (20, "r2") for i in range(1500)}
        # the run's change is the newest commit but for the maintenance that follows it (the
        # inserted keys grew the indexed range: a new revision, into which the old one merges)
        entries = list(_table(spark, schema, "upsert").history(limit=5))
        history = next(e for e in entries if e.operation != "OPTIMIZE")
        assert entries.index(history) <= 2
        assert history.operation == "MERGE" and "dbt_relation" in history.user_metadata

        # dbt-spark's spelling: incremental + file_format='qbeast' + unique_key is a merge on
        # (id, k); merge_update_columns=['v'] leaves note as it was on matched rows
        spark_upsert = {r.id: (r.v, r.note) for r in spark.table(f"{schema}.upsert_spark").collect()}
        assert spark.table(f"{schema}.upsert_spark").count() == 1500
        assert spark_upsert == {i: (10, "r1") if i < 500 else (20, "r1") if i < 1000 else (20, "r2")
                                for i in range(1500)}

        # incremental_predicates restrict the target rows a merge may match
        counted = {}
        for r in spark.table(f"{schema}.upsert_predicate").collect():
            counted.setdefault(r.id, []).append(r.v)
        assert {i: sorted(v) for i, v in counted.items()} == {
            i: [10] if i < 500 else [10, 20] if i < 700 else [20] if i < 1000 else [20]
            for i in range(1500)}

        # delete+insert: every old row of keys 0..4 goes except k=3 (predicate), all new come
        replaced = _rows(spark.table(f"{schema}.replaced").select("id", "k", "note"))
        expected = sorted([(i, i % 10, "old") for i in range(100) if i % 10 not in (0, 1, 2, 4)] +
                          [(i, i % 5, "new") for i in range(1000, 1010)])
        assert replaced == expected
        assert second["replaced"].message.startswith("QBEAST DELETE+INSERT 0 updated, 10 inserted, 40 deleted")

        # append_new_columns with merge: the column is added, older rows read it as null
        widened = {r.id: (r.note, r.extra) for r in spark.table(f"{schema}.widened").collect()}
        assert widened == {i: ("r1", None) if i < 5 else ("r2", i * 2) for i in range(15)}

        # a merge whose source repeats a key fails clearly and writes nothing
        assert second["doubled"].status == "error"
        assert re.search(r"the source has 2 rows for key \{'id': \d\}; each key \['id'\] may "
                         "appear once", second["doubled"].message), second["doubled"].message
        assert "model doubled" in second["doubled"].message
        assert _table(spark, schema, "doubled").snapshot().version == doubled_version
        assert _rows(spark.table(f"{schema}.doubled")) == doubled_rows

        # incremental + file_format='qbeast' without a key appends (dbt-spark's default)
        assert sorted(r.id for r in spark.table(f"{schema}.appended_spark").collect()) == list(range(20))
        # table + file_format='qbeast' rebuilds (its unique_key ignored, as for any table model)
        assert _rows(spark.table(f"{schema}.table_spark")) == [(i, 2) for i in range(20)]
        assert _table(spark, schema, "table_spark").snapshot().version == 1

        # --full-refresh rebuilds a merged model from the model's rows alone
        refreshed = run_dbt(["run", "--select", "upsert", "--full-refresh", "--vars", "{run: 2}"])
        assert refreshed[0].message.startswith("QBEAST OVERWRITE 1000 rows")
        assert sorted(r.id for r in spark.table(f"{schema}.upsert").collect()) == list(range(500, 1500))
