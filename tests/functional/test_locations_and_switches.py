"""A qbeast model never writes into data it does not own, and changing a model's materialization
(in either direction) keeps its relation usable whenever something fails."""
from __future__ import annotations

import hashlib
import os

import pytest

from dbt.tests.util import run_dbt, write_file

import qbeast
import qbeast.names
from dbt.adapters.qbeast.impl import QbeastAdapter
from dbt.adapters.qbeast.swaps import CatalogSwap


def _tree(folder: str) -> dict:
    """Every file below ``folder`` with the SHA-256 of its bytes."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as handle:
                found[os.path.relpath(path, folder)] = hashlib.sha256(handle.read()).hexdigest()
    return found


def _facts(spark, schema: str, name: str) -> dict:
    rows = spark.sql(f"show table extended in {schema} like '{name}'").collect()
    if not rows:
        return {}
    return dict(line.split(": ", 1) for line in rows[0].information.splitlines() if ": " in line)


def _model(name: str, root: str, extra: str = "") -> str:
    return (f"{{{{ config(materialized='qbeast', columns_to_index=['id'], location_root='{root}'{extra}) }}}}"
            " select id from range(10)")


class TestLocationOwnership:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "team_parquet.sql": _model("team_parquet", "lake"),
            "team_delta.sql": _model("team_delta", "lake"),
            "team_qbeast.sql": _model("team_qbeast", "lake"),
            "a_file.sql": _model("a_file", "lake"),
            "under_file.sql": _model("under_file", "lake/a_file"),
            "taken_over.sql": _model("taken_over", "lake", ", take_over_location=true"),
            "first.sql": _model("first", "shared", ", alias='same'"),
            # another model (other schema) whose table would land in the first one's folder
            "second.sql": "-- depends_on: {{ ref('first') }}\n"
                          + _model("second", "shared", ", alias='same', schema='other'"),
        }

    def test_foreign_data_is_refused_and_left_byte_for_byte_unchanged(self, project, spark):
        from deltalake import write_deltalake
        import pyarrow as pa

        lake = os.path.join(str(project.project_root), "lake")
        spark.range(25).write.parquet(os.path.join(lake, "team_parquet"))
        spark.range(5).write.parquet(os.path.join(lake, "taken_over"))
        write_deltalake(os.path.join(lake, "team_delta"), pa.table({"x": list(range(7))}))
        qbeast.write(spark.range(30), os.path.join(lake, "team_qbeast"), "id")
        with open(os.path.join(lake, "a_file"), "w") as handle:
            handle.write("not a table\n")
        before = {name: _tree(os.path.join(lake, name)) if name != "a_file" else
                  open(os.path.join(lake, name)).read() for name in os.listdir(lake)}

        results = {r.node.name: r for r in run_dbt(["run"], expect_pass=False)}
        expected = {
            "team_parquet": "holds a plain parquet folder (",
            "team_delta": "holds a Delta table without Qbeast metadata (version 0",
            "team_qbeast": "holds a Qbeast table not written by a dbt model (version 0",
            "a_file": "is a file, not a folder",
            "second": f"holds a Qbeast table written by dbt for {project.test_schema}.same",
        }
        for name, what in expected.items():
            result = results[name]
            assert result.status == "error", name
            path = os.path.join(str(project.project_root), "shared" if name == "second" else "lake",
                                "same" if name == "second" else name)
            assert f"the table location {path} " in result.message, (name, result.message)
            assert what in result.message, (name, result.message)
            if name != "a_file":
                assert "take_over_location=true" in result.message
        assert results["first"].status == "success" and results["taken_over"].status == "success"

        # the other teams' data: the same files with the same bytes, nothing added
        after = {name: _tree(os.path.join(lake, name)) if name != "a_file" else
                 open(os.path.join(lake, name)).read() for name in before}
        for name in ("team_parquet", "team_delta", "team_qbeast", "a_file"):
            assert after[name] == before[name], name
        under = results["under_file"].message
        assert f"is inside {os.path.join(lake, 'a_file')}, which is a file, not a folder" in under
        assert "[Errno" not in under
        # the explicit opt-in let the model replace the parquet folder's table
        taken = qbeast.QbeastTable.for_path(spark, os.path.join(lake, "taken_over"))
        assert taken.indexed_columns() == ["id"]
        assert spark.table(f"{project.test_schema}.taken_over").count() == 10

        # the model's own table is its own on the next run, also once the catalog lost it
        spark.sql(f"drop table {project.test_schema}.same")
        rerun = run_dbt(["run", "--select", "first"])
        assert rerun[0].status == "success"


SWITCHING = "select id, id * 2 as x from range({{ var('n', 20) }})"
AS = {
    "table": "{{ config(materialized='table') }} " + SWITCHING,
    "view": "{{ config(materialized='view') }} " + SWITCHING,
    "incremental": "{{ config(materialized='incremental') }} " + SWITCHING,
    "qbeast": "{{ config(materialized='qbeast', columns_to_index=['id']) }} " + SWITCHING,
}
DOWNSTREAM = "{{ config(materialized='view') }} select count(*) as n, sum(x) as x from {{ ref('m') }}"


class TestSwitchingMaterialization:
    @pytest.fixture(scope="class")
    def models(self):
        return {"m.sql": AS["table"], "downstream.sql": DOWNSTREAM}

    def _switch(self, project, kind: str, n: int = 20, expect_pass: bool = True):
        write_file(AS[kind], project.project_root, "models", "m.sql")
        return run_dbt(["run", "--vars", f"{{n: {n}}}"], expect_pass=expect_pass)

    def _check(self, spark, project, kind: str, n: int) -> None:
        schema = project.test_schema
        facts = _facts(spark, schema, "m")
        assert (facts.get("Provider") == "qbeast") == (kind == "qbeast"), facts
        assert (facts.get("Type") == "VIEW") == (kind == "view"), facts
        assert tuple(spark.table(f"{schema}.downstream").first()) == (n, n * (n - 1))
        assert not _facts(spark, schema, "m__dbt_backup") and not _facts(spark, schema, "m__dbt_tmp")
        # `qbeast describe <schema>.m` knows the name exactly while it is a Qbeast table
        known = qbeast.names.known(os.path.join(str(project.project_root), ".qbeast"))
        assert (f"{schema}.m" in known) == (kind == "qbeast"), known

    def test_every_switch_works_and_failures_keep_the_old_relation(self, project, spark, monkeypatch):
        schema = project.test_schema
        run_dbt(["run"])
        self._check(spark, project, "table", 20)
        managed = os.path.join(spark.catalog.getDatabase(schema).locationUri.removeprefix("file:"), "m")

        # table -> qbeast: the Qbeast table takes the managed table's folder
        self._switch(project, "qbeast", 21)
        self._check(spark, project, "qbeast", 21)
        assert _facts(spark, schema, "m")["Location"].removeprefix("file:") == managed
        assert not os.path.exists(managed + "__dbt_tmp") and not os.path.exists(managed + "__dbt_backup")

        # qbeast -> table over the same folder, then back, then view, incremental and back
        for kind, n in [("table", 22), ("qbeast", 23), ("view", 24), ("qbeast", 25),
                        ("incremental", 26), ("qbeast", 27)]:
            self._switch(project, kind, n)
            self._check(spark, project, kind, n)
        assert not [f for f in os.listdir(os.path.dirname(managed)) if f.startswith("m__")]

        # a failing query never leaves the name without a relation
        broken = {kind: sql.replace("from range", "from no_such_table, range") for kind, sql in AS.items()}
        for kind in ("table", "view", "incremental"):
            write_file(broken[kind], project.project_root, "models", "m.sql")
            run_dbt(["run", "--select", "m"], expect_pass=False)
            self._check(spark, project, "qbeast", 27)

        # a failure in the middle of the swap puts everything back: qbeast -> table ...
        def fail_second_rename(swap, source, target):
            if source.identifier.endswith("__dbt_tmp"):
                raise RuntimeError("injected rename failure")
            return original_rename(swap, source, target)

        original_rename = CatalogSwap.rename
        monkeypatch.setattr(CatalogSwap, "rename", fail_second_rename)
        results = self._switch(project, "table", 28, expect_pass=False)
        monkeypatch.undo()
        assert "injected rename failure" in results[0].message
        run_dbt(["run", "--select", "downstream"])
        self._check(spark, project, "qbeast", 27)
        assert os.path.isdir(os.path.join(managed, "_delta_log"))

        # ... and table -> qbeast (the registration of the Qbeast table fails)
        self._switch(project, "table", 29)
        def fail_register(*args, **kwargs):
            raise RuntimeError("injected registration failure")

        monkeypatch.setattr(QbeastAdapter, "_register_qbeast_table", staticmethod(fail_register))
        results = self._switch(project, "qbeast", 30, expect_pass=False)
        monkeypatch.undo()
        assert "injected registration failure" in results[0].message
        self._check(spark, project, "table", 29)
        assert not os.path.exists(managed + "__dbt_tmp")
