"""``{{ qbeast_sample(ref('events'), f) }}`` reading a sample of a qbeast model; docs generate on it.

With the JVM read bridge, ``ref()`` of a qbeast model is a native parquet scan, and the sample's
row filter reaches the engine's planner, which opens only the files of the sample.
"""
from __future__ import annotations

import os

import pytest

from dbt.tests.util import rm_file, run_dbt, write_file
from dbt_common.exceptions import CompilationError

import qbeast
from qbeast.spark.sql import sql_planner
from qbeast.spark.bridge import jar_path

EVENTS = """
{{ config(materialized='qbeast', columns_to_index=['id'], cube_size=100) }}
select id, pmod(hash(id), 7) as k from range(2000)
"""

SAMPLED = """
{{ config(materialized='table') }}
select count(*) as n from {{ qbeast_sample(ref('events'), 0.1) }}
"""

# a sampled and a full read of the same model in one query: each reference keeps its own rows
SAMPLED_AND_FULL = """
{{ config(materialized='table') }}
select (select count(*) from {{ qbeast_sample(ref('events'), 0.1) }}) as sampled,
       (select count(*) from {{ ref('events') }}) as total
"""

PLAIN = """
{{ config(materialized='table') }}
select 1 as id
"""


class TestQbeastSampleMacro:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, "sampled.sql": SAMPLED,
                "sampled_and_full.sql": SAMPLED_AND_FULL, "plain.sql": PLAIN}

    def test_sample_reads_the_engine_sample_and_bad_fractions_fail(self, project, spark):
        run_dbt(["run", "--select", "events"])
        schema = project.test_schema
        location = spark.catalog.getDatabase(schema).locationUri.removeprefix("file:") + "/events"
        scans_before = sql_planner.scan_count()
        run_dbt(["run", "--exclude", "events"])
        # with the bridge (a JDK-built jar; otherwise SQL reads use the Python source, no planner):
        if jar_path() is not None:
            # the sampled model's scan opened the files of the engine's sample(0.1), no more
            sampled_scans = [s for s in sql_planner.recent_scans(since=scans_before)
                             if s.table.location == location and s.weight_range is not None]
            planned = qbeast.QbeastTable.for_path(spark, location).read_plan(fraction=0.1)
            assert sampled_scans and all(list(s.paths) == planned.paths for s in sampled_scans)
            assert len(planned.paths) < len(qbeast.QbeastTable.for_path(spark, location).read_plan().paths)
            # ref() of a qbeast model is Spark's native parquet scan over the engine's file index
            plan = spark.sql(f"select sum(k) from {schema}.events")._jdf.queryExecution().executedPlan().toString()
            assert "FileScan parquet" in plan and "QbeastFileIndex" in plan and "ReadSchema: struct<k:int>" in plan

        compiled = open(os.path.join(project.project_root, "target", "run", "test", "models",
                                     "sampled.sql")).read()
        assert f"(select * from {schema}.events where hash(`id`) < -1717986918)" in compiled

        engine_sample = spark.read.format("qbeast").option("sampleFraction", "0.1").load(location)
        (n,) = spark.table(f"{schema}.sampled").first()
        assert n == engine_sample.count()
        assert 0 < n < 2000 * 0.3  # a sample, not the table
        assert tuple(spark.table(f"{schema}.sampled_and_full").first()) == (n, 2000)
        # a plain query after the sampled ones reads every row
        assert spark.sql(f"select count(*) from {schema}.events").first()[0] == 2000

        # a relation without Qbeast metadata has no weights to sample by: refused, named
        write_file("select * from {{ qbeast_sample(ref('plain'), 0.1) }}",
                   project.project_root, "models", "bad_sample.sql")
        results = run_dbt(["run", "--select", "bad_sample"], expect_pass=False)
        message = results.results[0].message
        assert "qbeast_sample" in message and f"{schema}.plain" in message
        assert "run-operation" not in message  # a macro of the model, not an operation
        assert "a qbeast table (this one's provider is" in message

        for fraction, shown in [("0", "0"), ("1.5", "1.5"), ("'half'", '"half"'), ("true", "true")]:
            write_file(f"select * from {{{{ qbeast_sample(ref('events'), {fraction}) }}}}",
                       project.project_root, "models", "bad_sample.sql")
            with pytest.raises(CompilationError) as raised:
                run_dbt(["parse"])
            assert f"qbeast_sample: invalid fraction {shown} for" in str(raised.value)
            assert "allowed values: a number in (0, 1]" in str(raised.value)
        rm_file(project.project_root, "models", "bad_sample.sql")

        # dbt docs generate: the catalog lists the qbeast model with its columns and types
        # (dbt-spark reads them from SHOW TABLE EXTENDED's schema tree: Spark's type names, 0-based)
        catalog = run_dbt(["docs", "generate"])
        node = catalog.nodes["model.test.events"]
        assert node.metadata.type == "table"
        assert {name: (c.type, c.index) for name, c in node.columns.items()} == {
            "id": ("long", 0), "k": ("integer", 1)
        }
