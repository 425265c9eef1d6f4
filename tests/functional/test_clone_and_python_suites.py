"""dbt-tests-adapter's ``dbt_clone`` and ``python_model`` suites on the qbeast adapter.

Clone: with seeds, models and snapshots in the qbeast format (as dbt-spark runs the suite with
delta), ``dbt clone`` copies tables as tables; the suite's own test of a clone onto itself names
its tables ``{database}.{schema}.{table}``, which Spark (no database level) cannot parse, so the
same steps run here with ``{schema}.{table}``.

Python models run in the dbt process on its Spark session: pandas, PySpark and pandas-on-Spark
DataFrames. A Python incremental model is refused by name (docs/dbt.md, Python models): the
suite's incremental test checks that refusal instead.
"""
from __future__ import annotations

import pytest

from dbt.tests.adapter.dbt_clone.test_dbt_clone import (
    BaseClonePossible,
    BaseCloneSameSourceAndTarget,
    BaseCloneSameTargetAndState,
)
from dbt.tests.adapter.python_model.test_python_model import (
    BasePythonEmptyTests,
    BasePythonIncrementalTests,
    BasePythonMetaGetTests,
    BasePythonModelTests,
    BasePythonSampleTests,
)
from dbt.tests.adapter.python_model.test_spark import (
    PANDAS_MODEL,
    PANDAS_ON_SPARK_MODEL,
    PYSPARK_MODEL,
    BasePySparkTests,
)
from dbt.tests.util import run_dbt, run_dbt_and_capture

QBEAST_EVERYWHERE = {
    "seeds": {"test": {"quote_columns": False, "+file_format": "qbeast", "+columns_to_index": ["id"]}},
    "models": {"+file_format": "qbeast", "+columns_to_index": ["id"]},
    "snapshots": {"+file_format": "qbeast"},
}


class TestClonePossibleQbeast(BaseClonePossible):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return QBEAST_EVERYWHERE


class TestCloneSameTargetAndStateQbeast(BaseCloneSameTargetAndState):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return QBEAST_EVERYWHERE


class TestCloneSameSourceAndTargetQbeast(BaseCloneSameSourceAndTarget):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return QBEAST_EVERYWHERE

    def test_clone_same_source_and_target(self, project, unique_schema):
        """The suite's steps with Spark's two-part table name."""
        project.run_sql(f"DROP TABLE IF EXISTS {unique_schema}.source_table")
        project.run_sql(f"CREATE TABLE {unique_schema}.source_table AS "
                        "SELECT 1 as id, 'test_data' as name UNION ALL SELECT 2 as id, 'more_data' as name")
        run_dbt(["seed"])
        run_dbt(["run"])
        self.copy_state(project.project_root)
        _, output = run_dbt_and_capture(["clone", "--state", "state", "--full-refresh", "--log-level", "debug"])
        assert "skipping clone for relation" in output


class TestPythonModelQbeast(BasePythonModelTests):
    pass


class TestPythonMetaGetQbeast(BasePythonMetaGetTests):
    pass


class TestPythonEmptyQbeast(BasePythonEmptyTests):
    pass


class TestPythonSampleQbeast(BasePythonSampleTests):
    pass


class TestPythonIncrementalQbeast(BasePythonIncrementalTests):
    """The suite's Python incremental model is refused, naming what to use instead; the SQL model
    beside it builds."""

    def test_incremental(self, project):
        results, output = run_dbt_and_capture(["run"], expect_pass=False)
        assert {r.node.name: str(r.status) for r in results} == {"m_1": "success", "incremental": "error"}
        assert ("model incremental: Python incremental models are not supported by the qbeast "
                "adapter; use materialized='qbeast' with incremental_strategy='append'") in output


class TestPySparkDataFramesQbeast(BasePySparkTests):
    """pandas, PySpark and pandas-on-Spark DataFrames; the suite's fourth model imports
    ``databricks.koalas``, pandas-on-Spark's predecessor, which does not install with Spark 4."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"pandas_df.py": PANDAS_MODEL, "pyspark_df.py": PYSPARK_MODEL,
                "pandas_on_spark_df.py": PANDAS_ON_SPARK_MODEL}

    def test_different_dataframes(self, project):
        results = run_dbt(["run"])
        assert len(results) == 3 and all(r.status == "success" for r in results)
