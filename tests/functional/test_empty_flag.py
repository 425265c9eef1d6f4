"""``dbt run --empty`` over existing incremental tables: the SQL and the columns are checked, and
no table loses, gains or changes a row, whatever its strategy and file format.

dbt's flag makes every ref and source read no row, to check SQL and schemas cheaply. A strategy
that replaces what the new rows cover would turn that into a deletion: a microbatch batch
replaces its window (the lookback days), dbt-spark's ``insert_overwrite`` without partitions the
whole table. Each model here is built by a normal run first, then run with ``--empty``.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from dbt.tests.util import patch_microbatch_end_time, run_dbt

import qbeast

from .conftest import catalog_facts

EVENTS = """
{{ config(materialized='table', event_time='event_time') }}
select id, id % 7 as k, timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, cast(id as int), 0, 0)
       as event_time
from range(72)
"""
_FROM_EVENTS = "select id, k, event_time from {{ ref('events') }}"
MODELS = {
    "q_merge": "{{ config(materialized='qbeast', columns_to_index=['id'], incremental_strategy='merge', "
               "unique_key='id') }}" + _FROM_EVENTS,
    "q_delete_insert": "{{ config(materialized='qbeast', columns_to_index=['k'], "
                       "incremental_strategy='delete+insert', unique_key='k') }}" + _FROM_EVENTS,
    "q_append": "{{ config(materialized='qbeast', columns_to_index=['id'], "
                "incremental_strategy='append') }}" + _FROM_EVENTS,
    "q_microbatch": "{{ config(materialized='incremental', file_format='qbeast', "
                    "incremental_strategy='microbatch', event_time='event_time', batch_size='day', "
                    "begin='2026-01-01', lookback=1, columns_to_index=['event_time'], "
                    "optimize_after_run=false) }}" + _FROM_EVENTS,
    "p_insert_overwrite": "{{ config(materialized='incremental', file_format='parquet', "
                          "incremental_strategy='insert_overwrite') }}" + _FROM_EVENTS,
    "p_append": "{{ config(materialized='incremental', file_format='parquet', "
                "incremental_strategy='append') }}" + _FROM_EVENTS,
}
QBEAST_MODELS = [name for name in MODELS if name.startswith("q_")]


class TestEmptyChangesNoRow:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, **{f"{name}.sql": sql for name, sql in MODELS.items()}}

    def _state(self, project) -> dict:
        """Every model's rows, and each Qbeast table's version."""
        state = {name: sorted(tuple(r) for r in project.run_sql(
            f"select id, k, event_time from {project.test_schema}.{name}", fetch="all"))
            for name in MODELS}
        for name in QBEAST_MODELS:
            location = qbeast.local_path(catalog_facts(project, name)["Location"])
            state[f"{name} version"] = qbeast.QbeastTable.for_path(None, location).snapshot().version
        return state

    def test_an_empty_run_checks_the_models_and_changes_no_row(self, project):
        with patch_microbatch_end_time("2026-01-03 23:30:00"):  # three daily batches
            run_dbt(["run"])
        built = self._state(project)
        assert {name: len(built[name]) for name in MODELS} == {name: 72 for name in MODELS}

        with patch_microbatch_end_time("2026-01-03 23:30:00"):  # the lookback day and today
            results = run_dbt(["run", "--empty", "--select", *MODELS])
        assert {r.node.name: r.status for r in results} == {name: "success" for name in MODELS}
        assert self._state(project) == built  # no row, no version: nothing committed
        messages = {r.node.name: r.message for r in results}
        assert all("checked under --empty, nothing committed" in messages[name]
                   for name in QBEAST_MODELS if name != "q_microbatch"), messages

        # and the SQL is still run: a broken column fails the empty run, changing nothing
        (Path(str(project.project_root)) / "models" / "q_merge.sql").write_text(
            MODELS["q_merge"].replace("select id, k,", "select id, k, no_such_column,"))
        run_dbt(["run", "--empty", "--select", "q_merge"], expect_pass=False)
        assert self._state(project) == built
