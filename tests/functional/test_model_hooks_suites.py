"""dbt-tests-adapter's hook suites: model hooks (``hooks/test_model_hooks.py``: pre- and post-hooks
in the project, in a model's config, as keywords, on seeds and snapshots, and their errors) and
``on-run-start`` / ``on-run-end`` hooks (``BasePrePostRunHooks``; ``BaseAfterRunHooks`` runs in
test_more_adapter_suites.py).

dbt's classes are written for Postgres, and what differs is Spark's, changed here and nowhere else:

* the hook tables are created with Spark's types (dbt's ``seed_model.sql`` and ``seed_run.sql``
  use ``TEXT``, as do the run hooks' own tables) and read with Spark's quoting (dbt's query
  double-quotes its column names, which Spark reads as strings);
* the target the hooks record is this adapter's session profile (``type: qbeast``, one thread, no
  host, database or user) where dbt's check expects its Postgres profile;
* the hooks "outside a transaction" run ``refresh table`` where dbt runs Postgres' ``vacuum``;
* the seed and snapshot hooks run ``alter table ... add column`` and ``update``: Spark's parquet
  tables refuse an ``update``, so those seeds and snapshots are qbeast tables, where the engine
  runs both (its SQL row-level statements).
"""
from __future__ import annotations

from typing import Any, Dict

import pytest

from dbt.tests.adapter.hooks.test_model_hooks import (
    BaseDuplicateHooksInConfigs,
    BaseHookRefs,
    BaseHooksRefsOnSeeds,
    BasePrePostModelHooks,
    BasePrePostModelHooksInConfig,
    BasePrePostModelHooksInConfigKwargs,
    BasePrePostModelHooksInConfigWithCount,
    BasePrePostModelHooksOnSeeds,
    BasePrePostModelHooksOnSeedsPlusPrefixed,
    BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace,
    BasePrePostModelHooksOnSnapshots,
    BasePrePostSnapshotHooksInConfigKwargs,
    TestPrePostModelHooksUnderscores as _DbtUnderscores,
)
from dbt.tests.adapter.hooks.test_run_hooks import BasePrePostRunHooks

from .conftest import catalog_provider, dbt_fixture_value

_HOOK_COLUMNS = ("test_state", "target_dbname", "target_host", "target_name", "target_schema",
                 "target_type", "target_user", "target_pass", "target_threads", "run_started_at",
                 "invocation_id", "thread_id")


def _spark_statements(value: Any) -> Any:
    """dbt's hook configuration with Postgres' ``vacuum`` as Spark's ``refresh table``."""
    if isinstance(value, dict):
        return {key: _spark_statements(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_spark_statements(item) for item in value]
    if isinstance(value, str):
        return value.replace("vacuum {{ this.schema }}", "refresh table {{ this.schema }}")
    return value


def _dbt_config(cls: type) -> Dict[str, Any]:
    """What dbt's class ``cls`` returns from its ``project_config_update`` fixture."""
    return dbt_fixture_value(cls, "project_config_update")


def _create_hook_table(project: Any, name: str) -> None:
    """dbt's hook table ``name`` (what its ``seed_model.sql`` / ``seed_run.sql`` create), in Spark."""
    columns = ", ".join(f"{column} {'int' if column == 'target_threads' else 'string'}"
                        for column in _HOOK_COLUMNS)
    project.run_sql(f"drop table if exists {project.test_schema}.{name}")
    project.run_sql(f"create table {project.test_schema}.{name} ({columns}) using parquet")


def _hook_rows(project: Any, name: str, state: str) -> list:
    rows = project.run_sql(f"select {', '.join(_HOOK_COLUMNS)} from {project.test_schema}.{name} "
                           f"where test_state = '{state}'", fetch="all")
    return [dict(zip(_HOOK_COLUMNS, row)) for row in rows]


def _check_target(ctx: Dict[str, Any], state: str, project: Any, host: Any) -> None:
    """What a hook records of this adapter's session target (dbt checks its Postgres profile)."""
    assert ctx["test_state"] == state
    assert ctx["target_name"] == "default"
    assert ctx["target_schema"] == project.test_schema
    assert ctx["target_type"] == "qbeast"
    assert ctx["target_host"] in ("", "None") and host is None
    assert ctx["target_pass"] == ""
    assert ctx["run_started_at"], "run_started_at was not set"
    assert ctx["invocation_id"], "invocation_id was not set"


class _SparkHookTable:
    """dbt's model-hook table and checks for Spark and this adapter's profile."""

    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):
        _create_hook_table(project, "on_model_hook")

    def get_ctx_vars(self, state, count, project):
        rows = _hook_rows(project, "on_model_hook", state)
        assert len(rows) == count, f"{len(rows)} rows of state {state}, expected {count}"
        return rows

    def check_hooks(self, state, project, host, count=1):
        for ctx in self.get_ctx_vars(state, count=count, project=project):
            _check_target(ctx, state, project, host)
            assert ctx["target_threads"] == 1
            assert ctx["thread_id"].startswith("Thread-")


class _QbeastSeedsAndSnapshots:
    """The seed (and snapshot) the hooks alter and update, as qbeast tables; after each test, the
    hooked table (``hooked``) is a qbeast table whose every row has the hooks' ``new_col``."""

    hooked = "example_seed"

    @pytest.fixture(scope="class")
    def project_config_update(self) -> Dict[str, Any]:
        dbt_class = next(klass for klass in type(self).__mro__
                         if klass.__module__.startswith("dbt.tests."))
        config = _dbt_config(dbt_class)
        config["seeds"] = {**config.get("seeds", {}), "+file_format": "qbeast",
                           "+columns_to_index": ["a"]}
        if "snapshots" in config:
            config["snapshots"] = {**config["snapshots"], "+file_format": "qbeast"}
        return config

    @pytest.fixture(autouse=True)
    def _tables_are_qbeast(self, project):
        yield
        assert catalog_provider(project, self.hooked) == "qbeast"
        rows = project.run_sql(f"select new_col from {project.test_schema}.{self.hooked}",
                               fetch="all")
        assert [row[0] for row in rows] == [1, 1, 1]


class TestPrePostModelHooksQbeast(_SparkHookTable, BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return _spark_statements(_dbt_config(BasePrePostModelHooks))


class TestPrePostModelHooksUnderscoresQbeast(_SparkHookTable, BasePrePostModelHooks):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return _spark_statements(_dbt_config(_DbtUnderscores))


class TestHookRefsQbeast(_SparkHookTable, BaseHookRefs):
    pass


class TestPrePostModelHooksOnSeedsQbeast(_QbeastSeedsAndSnapshots, BasePrePostModelHooksOnSeeds):
    pass


class TestHooksRefsOnSeedsQbeast(BaseHooksRefsOnSeeds):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixedQbeast(_QbeastSeedsAndSnapshots,
                                                     BasePrePostModelHooksOnSeedsPlusPrefixed):
    pass


class TestPrePostModelHooksOnSeedsPlusPrefixedWhitespaceQbeast(
        _QbeastSeedsAndSnapshots, BasePrePostModelHooksOnSeedsPlusPrefixedWhitespace):
    pass


class TestPrePostModelHooksOnSnapshotsQbeast(_QbeastSeedsAndSnapshots,
                                             BasePrePostModelHooksOnSnapshots):
    hooked = "example_snapshot"


class TestPrePostModelHooksInConfigQbeast(_SparkHookTable, BasePrePostModelHooksInConfig):
    pass


class TestPrePostModelHooksInConfigWithCountQbeast(_SparkHookTable,
                                                   BasePrePostModelHooksInConfigWithCount):
    @pytest.fixture(scope="class")
    def project_config_update(self):
        return _spark_statements(_dbt_config(BasePrePostModelHooksInConfigWithCount))


class TestPrePostModelHooksInConfigKwargsQbeast(_SparkHookTable,
                                                BasePrePostModelHooksInConfigKwargs):
    pass


class TestPrePostSnapshotHooksInConfigKwargsQbeast(_QbeastSeedsAndSnapshots,
                                                   BasePrePostSnapshotHooksInConfigKwargs):
    hooked = "example_snapshot"


class TestDuplicateHooksInConfigsQbeast(BaseDuplicateHooksInConfigs):
    pass


class TestPrePostRunHooksQbeast(BasePrePostRunHooks):
    """``on-run-start`` / ``on-run-end`` in order (a table created then dropped by the next hook),
    the target they see and the schemas of the run; the hooks' own tables with ``string`` where
    dbt's say Postgres' ``text``."""

    @pytest.fixture(scope="function")
    def setUp(self, project):
        import os

        _create_hook_table(project, "on_run_hook")
        project.run_sql(f"drop table if exists {project.test_schema}.schemas")
        project.run_sql(f"drop table if exists {project.test_schema}.db_schemas")
        os.environ["TERM_TEST"] = "TESTING"

    @pytest.fixture(scope="class")
    def project_config_update(self):
        config = _dbt_config(BasePrePostRunHooks)
        config["on-run-end"] = [hook.replace(" text", " string") for hook in config["on-run-end"]]
        return config

    def get_ctx_vars(self, state, project):
        rows = _hook_rows(project, "on_run_hook", state)
        assert len(rows) == 1, f"{len(rows)} rows of state {state}, expected 1"
        return rows[0]

    def assert_used_schemas(self, project):
        """dbt's check, except the database: Spark's relations have none, so the hook's
        ``'{{ db }}'`` renders Python's ``None`` as text where dbt compares with ``None``."""
        schemas = project.run_sql(f"select * from {project.test_schema}.schemas", fetch="all")
        assert [tuple(row) for row in schemas] == [(project.test_schema,)]
        db_schemas = project.run_sql(f"select * from {project.test_schema}.db_schemas", fetch="all")
        assert project.database is None
        assert [tuple(row) for row in db_schemas] == [("None", project.test_schema)]

    def check_hooks(self, state, project, host):
        ctx = self.get_ctx_vars(state, project)
        _check_target(ctx, state, project, host)
        assert ctx["thread_id"].startswith("Thread-") or ctx["thread_id"] == "MainThread"


def test_vacuum_becomes_refresh_and_nothing_else_changes():
    config = _dbt_config(BasePrePostModelHooks)
    spark = _spark_statements(config)
    hooks = spark["models"]["test"]["pre-hook"]
    assert hooks[0] == config["models"]["test"]["pre-hook"][0]
    assert hooks[1] == {"sql": "refresh table {{ this.schema }}.on_model_hook", "transaction": False}
