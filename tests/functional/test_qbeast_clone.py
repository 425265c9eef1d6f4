"""``dbt clone`` of qbeast models: a catalog table over the original's files, nothing copied;
the clone's own later runs write elsewhere and leave the original untouched."""
from __future__ import annotations

import os
import shutil
from copy import deepcopy

import pytest

from dbt.tests.util import run_dbt

import qbeast

from .conftest import catalog_facts, catalog_provider

EVENTS = """
{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='merge', unique_key='id') }}
select id, {{ var('run', 1) }} as run from range({{ 0 if var('run', 1) == 1 else 50 }}, 100)
"""
PLAIN = "{{ config(materialized='table') }} select 1 as id"


def _location(project, schema: str, name: str) -> str:
    return catalog_facts(project, name, schema)["Location"].removeprefix("file:")


class TestQbeastClone:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, "plain.sql": PLAIN}

    @pytest.fixture(scope="class")
    def other_schema(self, unique_schema):
        return unique_schema + "_other"

    @pytest.fixture(scope="class")
    def profiles_config_update(self, dbt_profile_target, unique_schema, other_schema):
        outputs = {"default": dbt_profile_target, "otherschema": deepcopy(dbt_profile_target)}
        outputs["default"]["schema"] = unique_schema
        outputs["otherschema"]["schema"] = other_schema
        return {"test": {"outputs": outputs, "target": "default"}}

    def test_clone_reads_the_same_files_and_later_runs_write_elsewhere(self, project, other_schema, spark):
        schema = project.test_schema
        project.create_test_schema(other_schema)
        run_dbt(["run"])
        os.makedirs(os.path.join(project.project_root, "state"), exist_ok=True)
        shutil.copyfile(os.path.join(project.project_root, "target", "manifest.json"),
                        os.path.join(project.project_root, "state", "manifest.json"))
        original = _location(project, schema, "events")
        files_before = sorted(os.listdir(original))
        version = qbeast.QbeastTable.for_path(spark, original).snapshot().version

        clone = ["clone", "--state", "state", "--target", "otherschema"]
        results = {r.node.name: r for r in run_dbt(clone)}
        assert results["events"].message.startswith(f"QBEAST CLONE of {schema}.events at {original}")
        assert catalog_provider(project, "events", other_schema) == "qbeast"
        assert _location(project, other_schema, "events") == original  # same files, none copied
        rows = sorted(tuple(r) for r in spark.table(f"{schema}.events").collect())
        assert sorted(tuple(r) for r in spark.table(f"{other_schema}.events").collect()) == rows
        # a plain table cannot be cloned by Spark: dbt's fallback, a view of the original
        assert project.adapter.get_relation(project.database, other_schema, "plain").type == "view"
        # existing clones are left alone; --full-refresh re-creates them
        assert all("no-op" in r.message.lower() for r in run_dbt(clone))
        refreshed = {r.node.name: r for r in run_dbt([*clone, "--full-refresh"])}
        assert refreshed["events"].message.startswith("QBEAST CLONE")

        # the model run in the clone's target builds its own table at its own location
        run_dbt(["run", "--target", "otherschema", "--select", "events", "--vars", "{run: 2}"])
        own = _location(project, other_schema, "events")
        assert own != original
        assert spark.table(f"{other_schema}.events").count() == 50
        # the original: same version, same files, same rows
        assert qbeast.QbeastTable.for_path(spark, original).snapshot().version == version
        assert sorted(os.listdir(original)) == files_before
        assert sorted(tuple(r) for r in spark.table(f"{schema}.events").collect()) == rows
        assert catalog_provider(project, "events") == "qbeast"

