"""The qbeast materialization's options beyond the index itself, two dbt runs per project.

One project holds every model, so dbt and the catalog are set up once: the first run creates the
tables, the second appends (``is_incremental()``) or fails, and the assertions compare the
tables before and after.
"""
from __future__ import annotations

import os

import pytest

from dbt.tests.util import run_dbt, write_file

import qbeast
from qbeast.delta.transaction import Transaction
from qbeast.index.thresholds import is_laid_out

DOCUMENTED = """
{{ config(materialized='qbeast', columnsToIndex=['a', 'b'], cubeSize=200,
          column_stats={'a_min': -1000, 'a_max': 5000},
          tblproperties={'team': 'growth', "it's": "quoted 'value'"},
          persist_docs={'relation': true, 'columns': true}) }}
select id, pmod(hash(id), 1000) as a, cast(id as double) / 3 as b from range(600)
"""

DOCS_YML = """
version: 2
models:
  - name: documented
    description: "Rows for the docs test; it's quoted"
    columns:
      - name: a
        description: "hashed id in [0, 1000)"
"""

# Models appended to on the second run; the appended rows carry a column the table lacks.
SCHEMA_CHANGE = """
{{{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='append',
          on_schema_change='{policy}') }}}}
{{% if is_incremental() %}}
select id + 100 as id, id * 2 as a, 'new' as b from range(50)
{{% else %}}
select id, id * 2 as a from range(100)
{{% endif %}}
"""

OPTIMIZED = """
{{ config(materialized='qbeast', columns_to_index=['id'], cube_size=100, incremental_strategy='append',
          optimize_after_run=true) }}
{# the same rows again and more: same revision, so the append adds a second block to every cube,
   and it appends enough for the tiered maintenance to lay the revision out (rewritten bytes at
   most twice the appended ones) #}
{% if is_incremental() %} select id from range(400) union all select id from range(400)
{% else %} select id from range(400) {% endif %}
"""

# Each of these is replaced by a failing version for the second run.
STABLE = "{{ config(materialized='qbeast', columns_to_index=['id']) }} select id from range(80)"
TYPED = """
{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='append') }}
{% if is_incremental() %} select cast(id as string) as id from range(5)
{% else %} select id from range(80) {% endif %}
"""


def _location(spark, name: str) -> str:
    schema, table = name.split(".")
    (row,) = spark.sql(f"show table extended in {schema} like '{table}'").collect()
    facts = dict(line.split(": ", 1) for line in row.information.splitlines() if ": " in line)
    return facts["Location"].removeprefix("file:")


def _table(spark, project, name: str) -> qbeast.QbeastTable:
    return qbeast.QbeastTable.for_path(spark, _location(spark, f"{project.test_schema}.{name}"))


def _parquet_files(location: str) -> set:
    return {
        os.path.relpath(os.path.join(root, f), location)
        for root, _, files in os.walk(location)
        if "_delta_log" not in root
        for f in files
        if f.endswith(".parquet")
    }


class TestQbeastModelOptions:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "documented.sql": DOCUMENTED,
            "docs.yml": DOCS_YML,
            "osc_ignore.sql": SCHEMA_CHANGE.format(policy="ignore"),
            "osc_fail.sql": SCHEMA_CHANGE.format(policy="fail"),
            "osc_append.sql": SCHEMA_CHANGE.format(policy="append_new_columns"),
            "optimized.sql": OPTIMIZED,
            "broken_sql.sql": STABLE,
            "broken_commit.sql": STABLE,
            "broken_type.sql": TYPED,
        }

    def test_options_schema_changes_and_failed_runs(self, project, spark, monkeypatch):
        schema = project.test_schema
        first = {r.node.name: r for r in run_dbt(["run"])}

        # run result line: rows, files, revision (and the Delta version)
        documented = _table(spark, project, "documented")
        files = len(documented.snapshot().delta.files)
        assert first["documented"].message == f"QBEAST OVERWRITE 600 rows, {files} files, revision 1, version 0"
        assert first["documented"].adapter_response["rows_affected"] == 600

        # qbeast-spark spellings and column_stats reach the engine
        assert documented.indexed_columns() == ["a", "b"] and documented.cube_size() == 200
        a_range = documented.snapshot().latest_revision.transformations[0]
        assert (float(a_range.min_number), float(a_range.max_number)) == (-1000.0, 5000.0)

        # tblproperties and persist_docs on the catalog table
        # (Spark's SHOW TBLPROPERTIES lists nothing for Python-source tables; the catalog has them)
        (row,) = spark.sql(f"show table extended in {schema} like 'documented'").collect()
        (properties,) = [line for line in row.information.splitlines() if line.startswith("Table Properties: ")]
        assert "team=growth" in properties and "it's=quoted 'value'" in properties
        assert "Comment: Rows for the docs test; it's quoted" in row.information
        comments = {r.col_name: r.comment for r in spark.sql(f"describe table {schema}.documented").collect()}
        assert comments["a"] == "hashed id in [0, 1000)" and not comments["b"]
        assert spark.table(f"{schema}.documented").count() == 600  # still readable
        # ... and the comments reach dbt docs' catalog.json (dbt-spark leaves them out)
        catalog = run_dbt(["docs", "generate"])
        node = catalog.nodes["model.test.documented"]
        assert node.metadata.comment == "Rows for the docs test; it's quoted"
        assert node.columns["a"].comment == "hashed id in [0, 1000)" and node.columns["b"].comment is None

        # the previous versions of the tables the second run breaks
        write_file("{{ config(materialized='qbeast', columns_to_index=['id']) }} select nope from range(3)",
                   project.project_root, "models", "broken_sql.sql")
        before = {
            name: (_table(spark, project, name).snapshot().version,
                   _parquet_files(_location(spark, f"{schema}.{name}")))
            for name in ("broken_sql", "broken_commit", "broken_type", "osc_fail")
        }

        def refuse_commit(self, *args, **kwargs):
            if self.log.table_path.rstrip("/").endswith("/broken_commit"):
                raise RuntimeError("injected commit failure")
            return original_commit(self, *args, **kwargs)

        original_commit = Transaction.commit
        monkeypatch.setattr(Transaction, "commit", refuse_commit)
        second = {r.node.name: r for r in run_dbt(["run"], expect_pass=False)}
        monkeypatch.undo()

        assert {name for name, r in second.items() if r.status == "error"} == {
            "osc_fail", "broken_sql", "broken_commit", "broken_type"
        }
        assert "on_schema_change='fail'" in second["osc_fail"].message
        assert "new: b" in second["osc_fail"].message
        assert "injected commit failure" in second["broken_commit"].message
        assert "model broken_type" in second["broken_type"].message and "id" in second["broken_type"].message
        for name, (version, files_before) in before.items():
            location = _location(spark, f"{schema}.{name}")
            assert _table(spark, project, name).snapshot().version == version, name
            assert _parquet_files(location) == files_before, name  # no orphaned files either
            assert spark.table(f"{schema}.{name}").count() == (100 if name == "osc_fail" else 80), name

        # on_schema_change on append
        ignore = spark.table(f"{schema}.osc_ignore")
        assert ignore.columns == ["id", "a"] and ignore.count() == 150
        appended = spark.table(f"{schema}.osc_append")
        assert appended.columns == ["id", "a", "b"]
        assert appended.where("b = 'new'").count() == 50 and appended.where("b is null").count() == 100

        # optimize_after_run: the appended blocks are merged, the revision laid out afterwards
        # (one block per cube, or per weight band of a cube)
        optimized = _table(spark, project, "optimized")
        assert "optimized" in second["optimized"].message
        assert [e.operation for e in optimized.history()][:2] == ["OPTIMIZE", "WRITE"]
        snapshot = optimized.snapshot()
        assert optimized.latest_revision_id() == 1
        assert is_laid_out(snapshot.index_status(1)) and len(snapshot.index_status(1)) > 1
        ids = sorted(r.id for r in spark.table(f"{schema}.optimized").collect())
        assert ids == sorted(list(range(400)) * 3)
