"""Every relation of a chain of models reads as itself: no table is read as the one it was built
from.

Older versions kept a Qbeast table's location in its columns' metadata, which every projection
copies: a qbeast model selecting columns unchanged from another Qbeast table was read back, by
every SQL path, as that other table, and a merge model whose ``{{ this }}`` subquery read the
upstream table silently skipped rows. Here each kind of edge is built — a qbeast model selecting
``*``, one column and renamed columns from a qbeast model; a ``table`` and a ``view`` over qbeast
models with qbeast models over those; a Python model; a snapshot; a merge model whose
``{{ this }}`` subquery decides what is new — and after each of two runs every relation is read
through ``ref()`` (a dbt model), ``spark.table()`` and its path and compared with what its SQL
must give, computed here from the generating expressions (count, distinct keys, a checksum over
all columns). No schema, in the catalog or in a Delta log, may carry ``qbeast.*`` metadata.
"""
from __future__ import annotations

import json
from typing import Dict, Tuple

import pytest

from dbt.tests.util import run_dbt

import qbeast
from qbeast.spark.catalog import describe_location, stored_catalog_schema_json

from .conftest import catalog_provider

RAW = """
{{ config(materialized='qbeast', columns_to_index=['order_id', 'cust'], cube_size=500) }}
select id as order_id, cast(id % 97 as int) as cust,
       round((id % 100) * 1.5 + {{ var('run') }}, 2) as amount,
       case when id % 3 = 0 then 'a' when id % 3 = 1 then 'b' else 'c' end as status
from range({{ var('raw_rows') }})
"""
MODELS = {
    "raw_orders.sql": RAW,
    # qbeast over qbeast: select *, one column, renamed columns
    "fct_star.sql": "{{ config(materialized='qbeast', columns_to_index=['order_id']) }}\n"
                    "select o.* from {{ ref('raw_orders') }} o where o.order_id < 2000",
    "one_col.sql": "{{ config(materialized='qbeast', columns_to_index=['order_id']) }}\n"
                   "select order_id from {{ ref('raw_orders') }} where order_id % 2 = 0",
    "renamed.sql": "{{ config(materialized='qbeast', columns_to_index=['id']) }}\n"
                   "select order_id as id, amount as total from {{ ref('raw_orders') }} "
                   "where status = 'b'",
    # a plain table and a view over qbeast models, and qbeast models over those
    "plain_tbl.sql": "{{ config(materialized='table') }}\n"
                     "select * from {{ ref('raw_orders') }} where order_id < 1000",
    "a_view.sql": "{{ config(materialized='view') }}\n"
                  "select * from {{ ref('fct_star') }} where amount > 50",
    "qb_from_table.sql": "{{ config(materialized='qbeast', columns_to_index=['order_id']) }}\n"
                         "select * from {{ ref('plain_tbl') }} where cust < 60",
    "qb_from_view.sql": "{{ config(materialized='qbeast', columns_to_index=['order_id']) }}\n"
                        "select order_id, amount from {{ ref('a_view') }}",
    "py_model.py": '''
def model(dbt, session):
    dbt.config(materialized="qbeast", columns_to_index=["order_id"])
    return dbt.ref("fct_star").select("order_id", "amount").where("order_id < 1500")
''',
    # the new rows are decided by a subquery on the model's own table
    "orders_merge.sql": """
{{ config(materialized='qbeast', columns_to_index=['order_id'], incremental_strategy='merge',
          unique_key='order_id') }}
select order_id, amount, status from {{ ref('raw_orders') }}
{% if is_incremental() %}
where order_id > (select max(order_id) from {{ this }}) - 1000
{% endif %}
""",
}
SNAPSHOT = """
{% snapshot snap_orders %}
{{ config(target_schema=schema, unique_key='order_id', strategy='check', check_cols=['amount'],
          file_format='qbeast') }}
select * from {{ ref('fct_star') }}
{% endsnapshot %}
"""
#: relation -> its key column (what "distinct keys" counts)
KEYS = {"raw_orders": "order_id", "fct_star": "order_id", "one_col": "order_id", "renamed": "id",
        "plain_tbl": "order_id", "a_view": "order_id", "qb_from_table": "order_id",
        "qb_from_view": "order_id", "py_model": "order_id", "orders_merge": "order_id",
        "snap_orders": "dbt_scd_id"}
#: columns a snapshot adds to its source's
SNAPSHOT_COLUMNS = ("dbt_scd_id", "dbt_updated_at", "dbt_valid_from", "dbt_valid_to")

Stats = Tuple[int, int, int]


def _raw_sql(rows: int, run: int) -> str:
    return (f"select id as order_id, cast(id % 97 as int) as cust, "
            f"round((id % 100) * 1.5 + {run}, 2) as amount, "
            "case when id % 3 = 0 then 'a' when id % 3 = 1 then 'b' else 'c' end as status "
            f"from range({rows})")


def _expected_sql(rows: int, run: int, merged: Dict[int, int]) -> Dict[str, str]:
    """What each relation must hold after a run, from the generating expressions alone."""
    raw = f"({_raw_sql(rows, run)})"
    fct = f"(select * from {raw} where order_id < 2000)"
    # the merge table: each key holds the amount of the run that last loaded it
    merge_parts = " union all ".join(
        f"select order_id, amount, status from ({_raw_sql(rows, r)}) where order_id {cond}"
        for r, cond in merged.items())
    return {
        "raw_orders": f"select * from {raw}",
        "fct_star": f"select * from {fct}",
        "one_col": f"select order_id from {raw} where order_id % 2 = 0",
        "renamed": f"select order_id as id, amount as total from {raw} where status = 'b'",
        "plain_tbl": f"select * from {raw} where order_id < 1000",
        "a_view": f"select * from {fct} where amount > 50",
        "qb_from_table": f"select * from {raw} where order_id < 1000 and cust < 60",
        "qb_from_view": f"select order_id, amount from {fct} where amount > 50",
        "py_model": f"select order_id, amount from {fct} where order_id < 1500",
        "orders_merge": merge_parts,
    }


def _stats_sql(relation: str, key: str, columns: str = "*") -> str:
    return (f"select count(*) as n, count(distinct {key}) as keys, "
            f"coalesce(sum(xxhash64({columns})), 0) as checksum from {relation}")


def _stats(spark, relation_sql: str, key: str, columns: str = "*") -> Stats:
    row = spark.sql(_stats_sql(relation_sql, key, columns)).first()
    return int(row.n), int(row.keys), int(row.checksum)


def _read_by_path(spark, project, name: str) -> Tuple[str, str]:
    """(path read registered as a temporary view, provider) of catalog table ``name``."""
    provider = catalog_provider(project, name)
    location = describe_location(spark, f"{project.test_schema}.{name}")
    assert location, name
    view = f"by_path_{name}"
    if provider == "qbeast":
        spark.read.format("qbeast").load(location).createOrReplaceTempView(view)
    else:
        spark.read.parquet(location).createOrReplaceTempView(view)
    return view, provider


class TestChainsReadAsThemselves:
    @pytest.fixture(scope="class")
    def models(self):
        checks = " union all ".join(
            f"select '{name}' as relation, n, keys, checksum from ("
            + _stats_sql(f"{{{{ ref('{name}') }}}}", key) + ")"
            for name, key in KEYS.items() if name != "snap_orders")
        snapshot_checks = (
            "select 'snap_orders' as relation, n, keys, checksum from ("
            + _stats_sql("{{ ref('snap_orders') }}", "dbt_scd_id") + ")")
        return {**MODELS, "chain_checks.sql": "{{ config(materialized='table') }}\n" + checks,
                "snapshot_checks.sql": "{{ config(materialized='table') }}\n" + snapshot_checks}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snap_orders.sql": SNAPSHOT}

    def _run(self, rows: int, run: int) -> Dict[str, str]:
        variables = json.dumps({"raw_rows": rows, "run": run})
        results = run_dbt(["run", "--exclude", "chain_checks", "snapshot_checks", "--vars", variables])
        messages = {r.node.name: r.message for r in results}
        run_dbt(["snapshot", "--vars", variables])
        run_dbt(["run", "--select", "chain_checks", "snapshot_checks", "--vars", variables])
        return messages

    def _check(self, project, spark, rows: int, run: int, merged: Dict[int, int]) -> None:
        schema = project.test_schema
        expected_sql = _expected_sql(rows, run, merged)
        through_ref = {r.relation: (int(r.n), int(r.keys), int(r.checksum)) for r in
                       spark.table(f"{schema}.chain_checks").union(
                           spark.table(f"{schema}.snapshot_checks")).collect()}
        for name, key in KEYS.items():
            relation = f"{schema}.{name}"
            by_table = _stats(spark, relation, key)
            assert through_ref[name] == by_table, f"{name}: ref() and spark.table() disagree"
            if name != "a_view":  # a view has no path
                view, provider = _read_by_path(spark, project, name)
                assert _stats(spark, view, key) == by_table, f"{name}: its path reads other rows"
                assert "qbeast." not in stored_catalog_schema_json(spark, relation), \
                    f"{name}: catalog schema"
                if provider == "qbeast":
                    log = qbeast.QbeastTable.for_path(spark, describe_location(spark, relation))
                    assert "qbeast." not in json.dumps(log.snapshot().delta.schema), f"{name}: log"
            if name == "snap_orders":
                continue
            assert by_table == _stats(spark, f"({expected_sql[name]})", key), \
                f"{name} does not hold its own rows"
        # the snapshot: its current rows are fct_star's rows; older versions closed
        business = "order_id, cust, amount, status"
        current = _stats(spark, f"(select * from {schema}.snap_orders where dbt_valid_to is null)",
                         "order_id", business)
        assert current == _stats(spark, f"({expected_sql['fct_star']})", "order_id", business)
        assert through_ref["snap_orders"][0] == 2000 * run  # every run changed every amount

    def test_every_relation_reads_its_own_rows_after_two_runs(self, project, spark):
        self._run(3000, 1)
        self._check(project, spark, 3000, 1, {1: "< 3000"})
        messages = self._run(4500, 2)
        # {{ this }} is the merge model's own table: max 2999, so ids 2000.. are (re)loaded
        assert messages["orders_merge"].startswith("QBEAST MERGE 1000 updated, 1500 inserted"), \
            messages["orders_merge"]
        self._check(project, spark, 4500, 2, {1: "<= 1999", 2: "> 1999"})
