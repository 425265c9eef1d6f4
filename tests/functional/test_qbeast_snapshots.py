"""``dbt snapshot`` with ``file_format='qbeast'``: dbt-tests-adapter's timestamp and check
strategy suites on Qbeast snapshot tables, and a qbeast snapshot's own checks.

The basic suites change their seeds with SQL ``update``, which Spark's plain parquet tables (the
seeds here) do not support; the qbeast variants rebuild the seed with the same change instead
(``_update_rows``) and assert the same row counts after every snapshot. The simple_snapshot
suites change a source table ``fact`` with SQL ``insert`` / ``update`` / ``delete`` / ``alter
table ... add column``: created here as a qbeast table, so those statements run as the engine's
changes.
"""
from __future__ import annotations

import pytest

from dbt.tests.adapter.basic import files
from dbt.tests.adapter.basic.test_snapshot_check_cols import BaseSnapshotCheckCols
from dbt.tests.adapter.basic.test_snapshot_timestamp import BaseSnapshotTimestamp
from dbt.tests.adapter.simple_snapshot.test_snapshot import BaseSimpleSnapshot, BaseSnapshotCheck
from dbt.tests.util import relation_from_name
from dbt.tests.util import run_dbt

import qbeast

from .conftest import catalog_facts, catalog_provider

QBEAST_SNAPSHOTS = {"snapshots": {"+file_format": "qbeast"}}


def _count(project, name: str) -> int:
    return project.run_sql(f"select count(*) from {project.test_schema}.{name}", fetch="one")[0]


def _update_rows(project, seed: str, column: str, expression: str, where: str) -> None:
    """``update seed set column = expression where ...`` for a parquet seed: rebuilt by CTAS."""
    schema = project.test_schema
    names = [r[0] for r in project.run_sql(f"describe {schema}.{seed}", fetch="all")]
    select = ", ".join(f"case when {where} then {expression} else {c} end as {c}" if c == column else c
                       for c in names)
    project.run_sql(f"create table {schema}.{seed}__new as select {select} from {schema}.{seed}")
    project.run_sql(f"drop table {schema}.{seed}")
    project.run_sql(f"alter table {schema}.{seed}__new rename to {schema}.{seed}")


class _QbeastFact:
    """The suites' source table ``fact`` as a qbeast table (their SQL DML then runs on it) and
    their snapshot in the qbeast format."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return QBEAST_SNAPSHOTS

    def create_fact_from_seed(self, where: str | None = None) -> None:
        fact = relation_from_name(self.project.adapter, "fact")
        seed = relation_from_name(self.project.adapter, "seed")
        self.project.run_sql(f"drop table if exists {fact}")
        self.project.run_sql(f"create table {fact} using qbeast options (columnsToIndex 'id') "
                             f"as select * from {seed} where {where or '1 = 1'}")


class TestSimpleSnapshotQbeast(_QbeastFact, BaseSimpleSnapshot):
    pass


class TestSnapshotCheckQbeast(_QbeastFact, BaseSnapshotCheck):
    pass


class TestSnapshotTimestampQbeast(BaseSnapshotTimestamp):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "snapshot_strategy_timestamp", **QBEAST_SNAPSHOTS}

    def test_snapshot_timestamp(self, project):
        assert len(run_dbt(["seed"])) == 3
        run_dbt(["snapshot"])
        assert catalog_provider(project, "ts_snapshot") == "qbeast"
        assert _count(project, "ts_snapshot") == 10
        run_dbt(["snapshot", "--vars", "seed_name: added"])  # 10 new records
        assert _count(project, "ts_snapshot") == 20
        # 10 records get a newer timestamp: their current rows close and 10 versions open
        _update_rows(project, "added", "some_date", "some_date + interval 1 day", "id > 10 and id < 21")
        (result,) = run_dbt(["snapshot", "--vars", "seed_name: added"])
        assert result.message.startswith("QBEAST SNAPSHOT 10 updated, 10 inserted, 0 deleted")
        assert _count(project, "ts_snapshot") == 30
        closed = project.run_sql(f"select count(*) from {project.test_schema}.ts_snapshot "
                                 "where dbt_valid_to is not null", fetch="one")[0]
        assert closed == 10
        # a change without a newer timestamp is not a new version for the timestamp strategy
        _update_rows(project, "added", "name", "name || '_updated'", "id < 11")
        run_dbt(["snapshot", "--vars", "seed_name: added"])
        assert _count(project, "ts_snapshot") == 30


class TestSnapshotCheckColsQbeast(BaseSnapshotCheckCols):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"name": "snapshot_strategy_check_cols", **QBEAST_SNAPSHOTS}

    def test_snapshot_check_cols(self, project):
        assert len(run_dbt(["seed"])) == 2
        assert len(run_dbt(["snapshot"])) == 3
        for name in ("cc_all_snapshot", "cc_date_snapshot", "cc_name_snapshot"):
            assert catalog_provider(project, name) == "qbeast"
            assert _count(project, name) == 10
        run_dbt(["snapshot", "--vars", "seed_name: added"])  # 10 new records everywhere
        for name in ("cc_all_snapshot", "cc_date_snapshot", "cc_name_snapshot"):
            assert _count(project, name) == 20
        _update_rows(project, "added", "some_date", "some_date + interval 1 day", "id > 10 and id < 21")
        run_dbt(["snapshot", "--vars", "seed_name: added"])
        # only the snapshots checking some_date see new versions
        assert [_count(project, n) for n in ("cc_all_snapshot", "cc_date_snapshot", "cc_name_snapshot")] \
            == [30, 30, 20]
        _update_rows(project, "added", "name", "name || '_updated'", "id < 11")
        run_dbt(["snapshot", "--vars", "seed_name: added"])
        assert [_count(project, n) for n in ("cc_all_snapshot", "cc_date_snapshot", "cc_name_snapshot")] \
            == [40, 30, 30]
        # every record has exactly one current row
        for name in ("cc_all_snapshot", "cc_date_snapshot", "cc_name_snapshot"):
            current = project.run_sql(
                f"select count(*), count(distinct id) from {project.test_schema}.{name} "
                "where dbt_valid_to is null", fetch="one")
            assert tuple(current) == (20, 20), name


BAD_SNAPSHOT = """
{% snapshot expr_key %}
    {{ config(strategy='timestamp', unique_key="id || '-' || name", updated_at='some_date',
              target_schema=schema, file_format='qbeast') }}
    select * from {{ ref('base') }}
{% endsnapshot %}
"""


class TestQbeastSnapshotConfig:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"base.csv": files.seeds_base_csv}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"expr_key.sql": BAD_SNAPSHOT}

    def test_an_expression_key_needs_columns_to_index(self, project):
        run_dbt(["seed"])
        (result,) = run_dbt(["snapshot"], expect_pass=False)
        assert ("snapshot expr_key: a qbeast snapshot needs config columns_to_index when its "
                "unique_key") in result.message
        assert not project.adapter.get_relation(project.database, project.test_schema, "expr_key")


def _maintained_snapshot(name: str, optimize: str) -> str:
    return f"""
{{% snapshot {name} %}}
    {{{{ config(strategy='timestamp', unique_key='id', updated_at='some_date',
              target_schema=schema, file_format='qbeast'{optimize}) }}}}
    select * from {{{{ ref(var('seed_name', 'base')) }}}}
{{% endsnapshot %}}
"""


class TestQbeastSnapshotMaintenance:
    """A snapshot grows with every run, as an incremental model does: the default maintenance
    (``optimize_after_run``) runs after its merges too, and ``optimize_after_run=false`` skips it.

    With the default cube size each run's rows are a small file (far below half a cube), which
    the maintenance compacts wherever the file lies."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"base.csv": files.seeds_base_csv, "added.csv": files.seeds_added_csv}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"maintained.sql": _maintained_snapshot("maintained", ""),
                "unmaintained.sql": _maintained_snapshot("unmaintained", ", optimize_after_run=false")}

    def test_snapshot_merges_are_maintained_unless_switched_off(self, project):
        run_dbt(["seed"])
        run_dbt(["snapshot"])
        results = {r.node.name: r for r in run_dbt(["snapshot", "--vars", "seed_name: added"])}
        assert results["maintained"].message.endswith(", optimized")
        assert not results["unmaintained"].message.endswith(", optimized")
        operations = {}
        for name in ("maintained", "unmaintained"):
            location = catalog_facts(project, name)["Location"].removeprefix("file:")
            table = qbeast.QbeastTable.for_path(None, location)
            operations[name] = [e.operation for e in table.history()]
            assert _count(project, name) == 20
        assert operations["maintained"][:2] == ["OPTIMIZE", "MERGE"]
        assert "OPTIMIZE" not in operations["unmaintained"]
