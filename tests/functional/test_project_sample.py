"""Develop on a sample: ``--vars '{qbeast_sample: ...}'`` reads every ``ref()`` of a Qbeast table
as its deterministic sample, and with a key keeps joins on that key whole.

The inputs are built in a full run; the models over them are then rebuilt with the var. A model
selected in the sampled run is read whole by the models after it (it is built from samples).
"""
from __future__ import annotations

import os

import pytest

from dbt.tests.util import run_dbt, run_dbt_and_capture

import qbeast
from qbeast.delta.log import DeltaLog
from qbeast.spark.bridge import jar_path
from qbeast.spark.sql import sql_planner

CUSTOMERS = 4000
ORDERS_PER_CUSTOMER = 10

CUSTOMERS_SQL = """
{{ config(materialized='qbeast', columns_to_index=['customer_id'], cube_size=100) }}
select id as customer_id, concat('c', id) as name from range(4000)
"""

ORDERS_SQL = """
{{ config(materialized='qbeast', columns_to_index=['customer_id'], cube_size=400) }}
select id as order_id, id div 10 as customer_id, pmod(hash(id), 97) as amount from range(40000)
"""

# the same orders indexed on another column: a key sample filters them row by row
ORDERS_BY_ID_SQL = ORDERS_SQL.replace("columns_to_index=['customer_id']", "columns_to_index=['order_id']")

TOTALS_SQL = """
{{ config(materialized='table') }}
select c.customer_id, count(*) as orders, sum(o.amount) as amount
from {{ ref('customers') }} c join {{ ref('orders') }} o on c.customer_id = o.customer_id
group by c.customer_id
"""

TOTALS_BY_ID_SQL = """
{{ config(materialized='table') }}
select customer_id, count(*) as orders, sum(amount) as amount from {{ ref('orders_by_id') }}
group by customer_id
"""

# built in the sampled run from a sampled input, then read whole by the model after it
SAMPLED_COUNT_SQL = """
{{ config(materialized='qbeast', columns_to_index=['n']) }}
select count(*) as n from {{ ref('customer_totals') }}
"""

# an incremental table keeps its properties between runs: the mark is set, then taken off
ORDER_LOG_SQL = """
{{ config(materialized='incremental', incremental_strategy='append', file_format='parquet') }}
select customer_id, amount from {{ ref('orders') }} where customer_id < 100
"""

# dbt's column lookup of a sampled ref() (dbt_utils.star does the same): the table's columns
ORDER_COLUMNS_SQL = """
{{ config(materialized='table') }}
{%- set columns = adapter.get_columns_in_relation(ref('orders')) | map(attribute='name') | list %}
select '{{ columns | join(",") }}' as names, count(*) as n from {{ ref('orders') }}
"""

MODELS = "customer_totals totals_by_id sampled_count order_columns order_log"


def _rows(spark, schema: str, name: str) -> dict:
    return {r[0]: (r[1], r[2]) for r in spark.table(f"{schema}.{name}").collect()}


def _marks(spark, schema: str, names: str) -> dict:
    """The sampled-build property of each model (None: a full build)."""
    marks = {}
    for name in names.split():
        properties = {r[0]: r[1] for r in spark.sql(f"show tblproperties {schema}.{name}").collect()}
        marks[name] = properties.get("qbeast.sampled")
    return marks


def _location(spark, schema: str, name: str) -> str:
    return spark.catalog.getDatabase(schema).locationUri.removeprefix("file:") + "/" + name


class TestProjectSample:
    @pytest.fixture(scope="class")
    def models(self):
        return {"customers.sql": CUSTOMERS_SQL, "orders.sql": ORDERS_SQL,
                "orders_by_id.sql": ORDERS_BY_ID_SQL, "customer_totals.sql": TOTALS_SQL,
                "totals_by_id.sql": TOTALS_BY_ID_SQL, "sampled_count.sql": SAMPLED_COUNT_SQL,
                "order_columns.sql": ORDER_COLUMNS_SQL, "order_log.sql": ORDER_LOG_SQL}

    def test_a_key_sample_keeps_whole_customers_and_reads_a_fraction(self, project, spark):
        schema = project.test_schema
        run_dbt(["run"])
        full = _rows(spark, schema, "customer_totals")
        assert len(full) == CUSTOMERS

        scans_before = sql_planner.scan_count()
        key_sample = '{qbeast_sample: {fraction: 0.01, key: customer_id}}'
        _, log = run_dbt_and_capture(["run", "--select", MODELS, "--vars", key_sample])
        sampled = _rows(spark, schema, "customer_totals")
        # about 1% of the customers (40 expected; a binomial count), every one with all ten
        # orders and exactly its total of the full build
        assert 10 <= len(sampled) <= 90
        assert all(sampled[c] == full[c] and sampled[c][0] == ORDERS_PER_CUSTOMER for c in sampled)
        # the same customers through the table indexed on another column, filtered row by row
        assert _rows(spark, schema, "totals_by_id") == sampled
        # the model built in this run is read whole after it, not sampled again
        assert spark.table(f"{schema}.sampled_count").first()[0] == len(sampled)
        assert tuple(spark.table(f"{schema}.order_columns").first()) == (
            "order_id,customer_id,amount", len(sampled) * ORDERS_PER_CUSTOMER)

        assert f"qbeast_sample: {schema}.orders read as a 0.01 sample on the hash of customer_id" in log
        assert f"{schema}.orders_by_id read as a 0.01 sample on the hash of customer_id (filtered " \
               "row by row: its index is not on customer_id alone" in log
        assert f"{schema}.customer_totals read whole: it is built in this run" in log

        if jar_path() is not None:
            # the orders' scan opened only the files of the sample: a few percent of the rows
            orders = _location(spark, schema, "orders")
            scans = [s for s in sql_planner.recent_scans(since=scans_before)
                     if s.table.location == orders]
            rows_of = {os.path.basename(a.path): a.num_records
                       for a in DeltaLog.for_path(orders).snapshot().files.values()}
            assert scans and all(s.weight_range is not None for s in scans)
            read = max(sum(rows_of[os.path.basename(p)] for p in s.paths) for s in scans)
            assert read <= 0.05 * CUSTOMERS * ORDERS_PER_CUSTOMER

        # every model the sampled run built is marked as a sample (tables, views, incremental
        # and qbeast models alike); a later run reads a marked model whole instead of sampling
        # it again, and dbt's catalog shows the mark
        assert set(_marks(spark, schema, MODELS).values()) == {"0.01 on customer_id"}
        _, log = run_dbt_and_capture(["run", "--select", "sampled_count", "--vars", key_sample])
        assert f"{schema}.customer_totals read whole: it was built from a sample " \
               "(qbeast.sampled=0.01 on customer_id)" in log
        assert spark.table(f"{schema}.sampled_count").first()[0] == len(sampled)
        catalog = run_dbt(["docs", "generate"])
        stats = catalog.nodes["model.test.customer_totals"].stats
        assert stats["sampled"].value == "0.01 on customer_id"
        assert "sampled" not in catalog.nodes["model.test.orders"].stats

        # a fraction without a key (`{qbeast_sample: f}`): each input on its own index, the same
        # rows every time
        run_dbt(["run", "--select", "customer_totals", "--vars", "{qbeast_sample: 0.05}"])
        first = _rows(spark, schema, "customer_totals")
        run_dbt(["run", "--select", "customer_totals", "--vars", "{qbeast_sample: 0.05}"])
        assert _rows(spark, schema, "customer_totals") == first and 0 < len(first) < CUSTOMERS
        # customers and orders are both indexed on customer_id alone: their own weights are the
        # key's hash, so even without a key every sampled customer keeps all of its orders
        assert all(first[c] == full[c] for c in first)
        engine = qbeast.QbeastTable.for_path(spark, _location(spark, schema, "customers"))
        assert set(first) <= {r[0] for r in engine.sample(0.05).select("customer_id").collect()}

        # a full run reads every row again and takes the marks off
        run_dbt(["run", "--select", MODELS])
        assert _rows(spark, schema, "customer_totals") == full
        assert set(_marks(spark, schema, MODELS).values()) == {None}

    def test_bad_values_and_missing_columns(self, project, spark):
        schema = project.test_schema
        for value, shown in [("{qbeast_sample: 0}", "invalid fraction 0"),
                             ("{qbeast_sample: 'half'}", "invalid fraction 'half'"),
                             ("{qbeast_sample: {fraction: 0.1, column: id}}", "invalid value"),
                             ("{qbeast_sample: {fraction: 0.1, key: 3}}", "invalid key 3")]:
            result = run_dbt(["run", "--select", "totals_by_id", "--vars", value], expect_pass=False)
            message = result.results[0].message
            assert shown in message and "allowed values" in message
        # a table without the key column is read whole, and the log says so
        _, log = run_dbt_and_capture(["run", "--select", "totals_by_id", "--vars",
                                      "{qbeast_sample: {fraction: 0.1, key: name}}"])
        assert f"{schema}.orders_by_id read whole: it has no column name" in log
        assert len(_rows(spark, schema, "totals_by_id")) == CUSTOMERS

