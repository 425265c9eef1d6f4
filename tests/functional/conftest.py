"""Fixtures for the dbt functional tests of the qbeast adapter.

dbt-tests-adapter's fixtures (``project``, ``adapter``, ``unique_schema``...) live in
``dbt.tests.fixtures.project``. pytest only honours ``pytest_plugins`` in the rootdir conftest, so
they are imported into this conftest's namespace instead, which makes them visible to every test in
this folder and nowhere else.

Every dbt invocation shares the session-scoped ``spark`` fixture: it is started (with its Hive
catalog in a temporary folder) before dbt opens a connection, and the adapter's connection then
reuses it, exactly as dbt-spark's session profile does.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import pytest

from dbt.tests.fixtures.project import *  # noqa: F401,F403 - dbt-tests-adapter's fixtures



def qbeast_target(**overrides: Any) -> Dict[str, Any]:
    """A minimal ``type: qbeast`` profile target (dbt-tests-adapter fills in ``schema``)."""
    target: Dict[str, Any] = {"type": "qbeast", "threads": 1}
    target.update(overrides)
    return target


def catalog_facts(project: Any, name: str, schema: Optional[str] = None) -> Dict[str, str]:
    """What ``SHOW TABLE EXTENDED`` records for ``name`` (in the test schema unless given)."""
    (row,) = project.run_sql(f"show table extended in {schema or project.test_schema} like '{name}'",
                             fetch="all")
    return dict(line.split(": ", 1) for line in row[3].splitlines() if ": " in line)


def catalog_provider(project: Any, name: str, schema: Optional[str] = None) -> str:
    """The ``Provider`` the catalog records for ``name`` (``qbeast``, ``parquet``, ...)."""
    return catalog_facts(project, name, schema).get("Provider", "")


def dbt_fixture_value(cls: type, name: str) -> Dict[str, Any]:
    """What class-scoped fixture ``name`` of dbt-tests-adapter's class ``cls`` returns: the
    fixture's function called on an instance (``{}`` when no class in its MRO defines it). Lets
    a test reuse dbt's files or config and change one thing, instead of copying them."""
    for klass in cls.__mro__:
        fixture = klass.__dict__.get(name)
        if fixture is not None:
            return dict(fixture._get_wrapped_function()(cls()))
    return {}


@pytest.fixture(scope="class")
def dbt_profile_target(spark) -> Dict[str, Any]:  # noqa: ARG001 - started before dbt connects
    return qbeast_target()


@pytest.fixture(autouse=True)
def _engine_logging_restored():
    """dbt in this process routes the ``qbeast`` logger to its own log (no propagation, see
    ``engine_log``), as a dbt process needs; later tests of the run capture engine records with
    ``caplog`` through the root logger, so the logger is put back after each test."""
    import logging

    engine = logging.getLogger("qbeast")
    saved = (engine.level, engine.propagate, list(engine.handlers))
    yield
    engine.setLevel(saved[0])
    engine.propagate = saved[1]
    engine.handlers[:] = saved[2]


def pytest_collection_modifyitems(items):
    """Mark every test collected below this folder as a dbt test (selectable with -m dbt)."""
    for item in items:
        if "tests/functional" in str(item.fspath):
            item.add_marker(pytest.mark.dbt)
