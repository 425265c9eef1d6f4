"""More of dbt-tests-adapter's suites: incremental models, adapter methods, concurrency, hooks."""
import pytest

from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_incremental import BaseIncremental, BaseIncrementalNotSchemaChange
from dbt.tests.adapter.concurrency.test_concurrency import BaseConcurrency
from dbt.tests.adapter.hooks.test_run_hooks import BaseAfterRunHooks

from .conftest import qbeast_target


class TestIncrementalQbeast(BaseIncremental):
    pass


class TestIncrementalNotSchemaChangeQbeast(BaseIncrementalNotSchemaChange):
    pass


class TestAdapterMethodQbeast(BaseAdapterMethod):
    pass


class TestConcurrencyQbeast(BaseConcurrency):
    """Several dbt threads share the one in-process Spark session."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, spark):  # noqa: ARG002 - started before dbt connects
        return qbeast_target(threads=3)


class TestAfterRunHooksQbeast(BaseAfterRunHooks):
    """A failing statement in an on-run-start hook is a DbtDatabaseError, as dbt expects of a
    statement the database refused (dbt-spark raises a plain DbtRuntimeError)."""
