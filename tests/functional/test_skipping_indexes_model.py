"""A qbeast model declares skipping indexes in its config; a downstream model's filter on them
reads only the files that hold the value (through the SQL read bridge the models run on)."""
from __future__ import annotations

import os

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from dbt.tests.util import run_dbt

import qbeast
from qbeast.core.skipping import CONFIG_KEY, TAG
from qbeast.spark.sql import sql_planner

ORDERS = """
{{ config(materialized='qbeast', columns_to_index=['event_time'], cube_size=300,
          skipping_indexes={'order_id': 'fuse', 'status': 'values', 'upper(status)': 'values'}) }}
select id as event_time, id * 7919 % 100003 as order_id,
       case when id % 97 = 0 then 'refunded' else 'paid' end as status
from range(3000)
"""
ONE_ORDER = "{{ config(materialized='table') }} select * from {{ ref('orders') }} where order_id = 7919"
REFUNDS = ("{{ config(materialized='table') }} select count(*) as n from {{ ref('orders') }} "
           "where status in ('refunded', 'lost')")
UPPER_REFUNDS = ("{{ config(materialized='table') }} select count(*) as n from {{ ref('orders') }} "
                 "where upper(status) = 'REFUNDED'")
BAD = """
{{ config(materialized='qbeast', columns_to_index=['id'], skipping_indexes={'id': 'minmax'}) }}
select id from range(3)
"""


class TestSkippingIndexesModel:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "one_order.sql": ONE_ORDER, "refunds.sql": REFUNDS,
                "upper_refunds.sql": UPPER_REFUNDS,
                "bad_index.sql": BAD}

    def test_downstream_filters_prune_with_the_models_indexes(self, project, spark, monkeypatch):
        plans = []
        original = sql_planner.plan_read

        def recording(*args, **kwargs):
            plan = original(*args, **kwargs)
            plans.append(plan)
            return plan

        monkeypatch.setattr(sql_planner, "plan_read", recording)
        results = {r.node.name: r for r in run_dbt(["run"], expect_pass=False)}
        monkeypatch.undo()
        assert {n for n, r in results.items() if r.status == "error"} == {"bad_index"}
        assert "skipping_indexes" in results["bad_index"].message
        assert "minmax" in results["bad_index"].message

        (row,) = spark.sql(f"show table extended in {project.test_schema} like 'orders'").collect()
        facts = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
        location = facts["Location"].removeprefix("file:")
        snapshot = qbeast.QbeastTable.for_path(spark, location).snapshot().delta
        assert CONFIG_KEY in snapshot.configuration
        assert all(TAG in (add.tags or {}) for add in snapshot.files.values())
        data = {p: pq.read_table(os.path.join(location, p)) for p in snapshot.files}
        holding = {p for p, t in data.items() if pc.any(pc.equal(t.column("order_id"), 7919)).as_py()}
        refunds = {p for p, t in data.items() if pc.any(pc.equal(t.column("status"), "refunded")).as_py()}

        by_index = [p for p in plans if p.table_path.rstrip("/") == location.rstrip("/") and p.index_pruned]
        lookups = [p for p in by_index if dict(p.index_pruned).get("order_id:fuse")]
        assert lookups and all(len(p.files) <= len(holding) + 1 for p in lookups)
        assert {os.path.basename(f) for f in lookups[-1].paths} >= holding
        assert spark.table(f"{project.test_schema}.one_order").count() == 1
        assert spark.table(f"{project.test_schema}.refunds").first()["n"] == 31
        in_lists = [p for p in by_index if "status:values" in dict(p.index_pruned)]
        assert in_lists and {os.path.basename(f) for f in in_lists[-1].paths} == refunds
        # an index on an expression prunes a model's filter on the same expression
        assert spark.table(f"{project.test_schema}.upper_refunds").first()["n"] == 31
        by_call = [p for p in by_index if "upper(status):values" in dict(p.index_pruned)]
        assert by_call and {os.path.basename(f) for f in by_call[-1].paths} == refunds
