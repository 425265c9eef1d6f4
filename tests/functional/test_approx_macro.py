"""Approximate aggregates in dbt: ``{{ qbeast_approx(ref('events'), ...) }}`` in a model builds a
table of estimates and intervals; the ``qbeast_approx_print`` run-operation prints one."""
from __future__ import annotations

import json

import pytest

from dbt.tests.util import run_dbt, run_dbt_and_capture

EVENTS = """
{{ config(materialized='qbeast', columns_to_index=['id'], cube_size=1000) }}
select id, cast(pmod(id, 3) as int) as g, cast(id % 100 as double) as v from range(30000)
"""

APPROX = """
{{ config(materialized='table') }}
select * from {{ qbeast_approx(ref('events'), ['count(*)', 'sum(v)'], group_by=['g'],
                               tolerance=0.1, confidence=0.999, max_fraction=0.5) }}
"""

EXACT = """
{{ config(materialized='table') }}
select aggregate, estimate, low, high, fraction, tolerance_met
from {{ qbeast_approx(ref('events'), ['avg(v)'], tolerance=0) }}
"""


class TestQbeastApproxMacro:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, "approx.sql": APPROX, "exact.sql": EXACT}

    def test_models_materialize_answers_and_the_run_operation_prints_one(self, project, spark):
        run_dbt(["run"])
        schema = project.test_schema
        table = spark.table(f"{schema}.approx")
        assert table.columns == ["g", "aggregate", "estimate", "low", "high", "fraction",
                                 "rows_read", "bytes_read", "tolerance_met", "reason"]
        assert dict(table.dtypes)["g"] == "int" and dict(table.dtypes)["tolerance_met"] == "boolean"
        exact = {r["g"]: r for r in spark.sql(
            f"select g, count(*) n, sum(v) s from {schema}.events group by g").collect()}
        rows = table.collect()
        assert len(rows) == 6
        for r in rows:
            truth = exact[r["g"]]["n" if r["aggregate"] == "count(*)" else "s"]
            assert r["tolerance_met"] and r["low"] <= truth <= r["high"], r
            assert 0 < r["fraction"] < 1 and r["rows_read"] < 30000
        (row,) = spark.table(f"{schema}.exact").collect()
        mean = spark.sql(f"select avg(v) from {schema}.events").first()[0]
        assert row["aggregate"] == "avg(v)" and row["fraction"] == 1.0 and row["tolerance_met"]
        assert row["estimate"] == row["low"] == row["high"] == pytest.approx(mean, rel=1e-12)

        args = {"relation_or_path": "events", "aggregates": ["count(*)"], "tolerance": 0}
        _, out = run_dbt_and_capture(["run-operation", "qbeast_approx_print", "--args", json.dumps(args)])
        assert "qbeast_approx_print:" in out and "'estimate': 30000.0" in out

        args = {"relation_or_path": "events", "aggregates": ["max(v)"]}
        _, out = run_dbt_and_capture(["run-operation", "qbeast_approx_print", "--args",
                                      json.dumps(args)], expect_pass=False)
        assert "run-operation qbeast_approx_print: " in out and "cannot be approximated" in out
