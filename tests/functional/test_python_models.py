"""Python models on the embedded session: materialized as qbeast (the engine writes the returned
DataFrame) or as table, with dbt.ref, dbt.config and is_incremental; Databricks keys refused."""
from __future__ import annotations

import pytest

from dbt.tests.util import run_dbt

import qbeast

UPSTREAM = "{{ config(materialized='table') }} select id, id % 5 as k from range(40)"

QBEAST_PY = '''
def model(dbt, session):
    dbt.config(materialized="qbeast", columns_to_index=["id", "k"], cube_size=20)
    rows = dbt.ref("upstream")
    return rows.where("k < 3").withColumn("doubled", rows.id * 2)
'''

APPEND_PY = '''
def model(dbt, session):
    dbt.config(materialized="qbeast", columns_to_index=["id"], incremental_strategy="append")
    start = session.table(str(dbt.this)).count() if dbt.is_incremental else 0
    return session.range(start, start + 10)
'''

PANDAS_TABLE_PY = '''
import pandas as pd

def model(dbt, session):
    dbt.config(materialized="table")
    keys = dbt.ref("upstream").select("k").distinct().toPandas()
    return pd.DataFrame({"k": sorted(keys["k"]), "label": [f"k{k}" for k in sorted(keys["k"])]})
'''

DATABRICKS_PY = '''
def model(dbt, session):
    dbt.config(materialized="qbeast", columns_to_index=["id"], cluster_id="1234-abcd")
    return session.range(3)
'''

FAILING_PY = '''
def model(dbt, session):
    dbt.config(materialized="qbeast", columns_to_index=["id"])
    rows = session.range(3)
    if rows.count() > 0:
        raise ValueError("no rows today")
    return rows
'''


class TestPythonModels:
    @pytest.fixture(scope="class")
    def models(self):
        return {"upstream.sql": UPSTREAM, "qbeast_py.py": QBEAST_PY, "append_py.py": APPEND_PY,
                "pandas_table.py": PANDAS_TABLE_PY, "databricks_py.py": DATABRICKS_PY,
                "failing_py.py": FAILING_PY}

    def test_python_models_run_in_process(self, project, spark):
        schema = project.test_schema
        results = {r.node.name: r for r in run_dbt(["run"], expect_pass=False)}
        assert results["qbeast_py"].message.startswith("QBEAST OVERWRITE 24 rows")
        rows = sorted(tuple(r) for r in spark.table(f"{schema}.qbeast_py").collect())
        assert rows == [(i, i % 5, 2 * i) for i in range(40) if i % 5 < 3]
        facts = spark.sql(f"show table extended in {schema} like 'qbeast_py'").first().information
        assert "Provider: qbeast" in facts
        location = next(line for line in facts.splitlines() if line.startswith("Location: "))
        table = qbeast.QbeastTable.for_path(spark, location.removeprefix("Location: file:"))
        assert table.indexed_columns() == ["id", "k"] and table.cube_size() == 20

        labels = spark.table(f"{schema}.pandas_table").orderBy("k").collect()
        assert [(r.k, r.label) for r in labels] == [(k, f"k{k}") for k in range(5)]
        assert "Provider: parquet" in spark.sql(
            f"show table extended in {schema} like 'pandas_table'").first().information

        assert "cluster_id='1234-abcd' is a Databricks setting" in results["databricks_py"].message
        assert "the Python model failed: ValueError: no rows today (line 5 of the compiled model)" in results["failing_py"].message
        for name in ("databricks_py", "failing_py"):
            assert not spark.catalog.tableExists(f"{schema}.{name}")

        # incremental_strategy='append' in a Python model: dbt.is_incremental on the second run
        assert spark.table(f"{schema}.append_py").count() == 10
        run_dbt(["run", "--select", "append_py"])
        assert sorted(r.id for r in spark.table(f"{schema}.append_py").collect()) == list(range(20))
