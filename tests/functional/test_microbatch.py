"""dbt's ``microbatch`` strategy on qbeast models: each batch replaces the rows of its window.

A model over 30 days of events (one batch per day, indexed on the event time) is built, three
days are reprocessed with ``--event-time-start/--event-time-end``, and a late event inside the
lookback is picked up; the table is checked row by row and file by file (the files of other
days keep their names). A batch that fails leaves the table as the other batches left it and
`dbt retry` runs it again. dbt-tests-adapter's
microbatch suite runs on a qbeast model too.
"""
from __future__ import annotations

import datetime as dt

import pytest

from dbt.tests.adapter.incremental import test_incremental_microbatch as suite
from dbt.tests.util import patch_microbatch_end_time, run_dbt, run_dbt_and_capture

import qbeast
from qbeast.snapshot import QbeastSnapshot

from .conftest import catalog_facts, catalog_provider

START = dt.datetime(2026, 1, 1)
PER_DAY = 24

# 30 days of events, one an hour; var('fix') changes the amounts of days 10-12 (reprocessing);
# var('late') adds a late event on day 29 (inside the lookback) and one on day 20 (outside)
EVENTS = f"""
{{{{ config(materialized='table', event_time='event_time') }}}}
select id, event_time, id % 7 as user_id,
       cast(case when {{{{ var('fix', 0) }}}} = 1 and day between 10 and 12 then 2 else 1 end as double) as amount
from (
  select id, cast(id div {PER_DAY} as int) as day,
         timestamp'2026-01-01 00:00:00' + make_interval(0, 0, 0, 0, cast(id as int), 0, 0) as event_time
  from range({30 * PER_DAY})
)
{{% if var('late', 0) == 1 %}}
union all select 100000, timestamp'2026-01-30 23:30:00', 1, 5.0
union all select 100001, timestamp'2026-01-21 23:30:00', 1, 5.0
{{% endif %}}
"""
DAILY = """
{{ config(materialized='incremental', file_format='qbeast', incremental_strategy='microbatch',
          event_time='event_time', batch_size='day', begin='2026-01-01', lookback=1,
          columns_to_index=['event_time', 'user_id'], cube_size=20, optimize_after_run=false) }}
select id, event_time, user_id, amount from {{ ref('events') }}
"""
# the same model asking dbt for concurrent batches: the adapter does not declare dbt's
# MicrobatchConcurrency, so they run one after another, one commit each
CONCURRENT = DAILY.replace("optimize_after_run=false", "optimize_after_run=false, concurrent_batches=true")
# materialized='qbeast' would run as one batch over everything: refused with the right spelling
WRONG_SPELLING = """
{{ config(materialized='qbeast', incremental_strategy='microbatch', event_time='event_time',
          batch_size='day', begin='2026-01-01', columns_to_index=['id'], enabled=var('wrong', false)) }}
select 1 as id, timestamp'2026-01-01 00:00:00' as event_time
"""


def _spark():
    from pyspark.sql import SparkSession

    session = SparkSession.getActiveSession()
    assert session is not None
    return session


def _location(project, name: str) -> str:
    return qbeast.local_path(catalog_facts(project, name)["Location"])


def _rows(project, name: str) -> list[tuple]:
    df = qbeast.QbeastTable.for_path(_spark(), _location(project, name)).to_df()
    return sorted(tuple(r) for r in df.select("id", "event_time", "user_id", "amount").collect())


def _day(moment: dt.datetime) -> int:
    return (moment - START).days


def _files_by_day(project, name: str) -> dict[str, set[int]]:
    """Active data file -> the days of its rows."""
    spark = _spark()
    snapshot = QbeastSnapshot.load(_location(project, name))
    return {a.path: {_day(r[0]) for r in spark.read.parquet(snapshot.delta.file_path(a))
                     .select("event_time").distinct().collect()}
            for a in snapshot.files()}


def _expected(fix: bool = False, late: bool = False, hours: int = 30 * PER_DAY) -> list[tuple]:
    """The model's rows when "now" is ``hours`` after the start (the last batch ends there)."""
    rows = []
    for i in range(min(hours, 30 * PER_DAY)):
        day = i // PER_DAY
        amount = 2.0 if fix and 10 <= day <= 12 else 1.0
        rows.append((i, START + dt.timedelta(hours=i), i % 7, amount))
    if late:
        rows.append((100000, dt.datetime(2026, 1, 30, 23, 30), 1, 5.0))
    return sorted(rows)


class TestMicrobatchQbeast:
    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS, "daily.sql": DAILY, "wrong_spelling.sql": WRONG_SPELLING,
                "daily_concurrent.sql": CONCURRENT}

    def test_batches_replace_their_windows(self, project):
        # first run: one batch per day from begin to "now", each its own commit
        with patch_microbatch_end_time("2026-01-30 20:00:00"):
            results = run_dbt(["run", "--exclude", "daily_concurrent"])
        assert catalog_provider(project, "daily") == "qbeast"
        daily = next(r for r in results if r.node.name == "daily")
        assert len(daily.batch_results.successful) == 30 and not daily.batch_results.failed
        assert _rows(project, "daily") == _expected(hours=29 * 24 + 20)
        assert QbeastSnapshot.load(_location(project, "daily")).version == 29

        # reprocess days 10-12 (2026-01-11..13) after their inputs changed
        run_dbt(["run", "--select", "events", "--vars", "fix: 1"])
        before = _files_by_day(project, "daily")
        # (no patched "now": it would take the place of --event-time-end)
        results = run_dbt(["run", "--select", "daily", "--vars", "fix: 1",
                           "--event-time-start", "2026-01-11", "--event-time-end", "2026-01-14"])
        assert len(results[0].batch_results.successful) == 3
        # every row once, the three days changed
        assert _rows(project, "daily") == _expected(fix=True, hours=29 * 24 + 20)
        after = _files_by_day(project, "daily")
        untouched = {f for f, days in before.items() if not days & {10, 11, 12}}
        assert untouched and untouched <= set(after)  # other days' files kept by name
        assert not (set(before) - untouched) & set(after)  # the three days' files replaced

        # a late event inside the lookback (yesterday) is picked up; one outside it is not
        run_dbt(["run", "--select", "events", "--vars", "{fix: 1, late: 1}"])
        with patch_microbatch_end_time("2026-01-31 08:00:00"):
            results = run_dbt(["run", "--select", "daily", "--vars", "{fix: 1, late: 1}"])
        assert len(results[0].batch_results.successful) == 2  # yesterday (lookback) and today
        assert _rows(project, "daily") == _expected(fix=True, late=True)

        # concurrent_batches=true: three days built one batch after another, one commit each
        from dbt.adapters.capability import Capability

        assert "concurrent_batches=true" in CONCURRENT
        assert not project.adapter.supports(Capability.MicrobatchConcurrency)
        results = run_dbt(["run", "--select", "daily_concurrent", "--vars", "{fix: 1, late: 1}",
                           "--event-time-start", "2026-01-11", "--event-time-end", "2026-01-14"])
        assert len(results[0].batch_results.successful) == 3 and not results[0].batch_results.failed
        assert QbeastSnapshot.load(_location(project, "daily_concurrent")).version == 2
        assert _rows(project, "daily_concurrent") == [
            row for row in _expected(fix=True) if 10 <= _day(row[1]) <= 12]

    def test_materialized_qbeast_is_refused_with_the_spelling_that_works(self, project):
        _, output = run_dbt_and_capture(["run", "--select", "wrong_spelling", "--vars",
                                         "wrong: true"], expect_pass=False)
        assert "materialized='incremental'" in output and "file_format='qbeast'" in output


MICROBATCH_QBEAST = suite._microbatch_model_sql.replace(
    "materialized='incremental',",
    "materialized='incremental', file_format='qbeast', columns_to_index=['event_time'],")


class TestMicrobatchSuiteQbeast(suite.BaseMicrobatch):
    """dbt-tests-adapter's microbatch suite, the microbatch model a qbeast model (its input a
    plain table that the suite inserts rows into)."""

    @pytest.fixture(scope="class")
    def microbatch_model_sql(self) -> str:
        assert MICROBATCH_QBEAST != suite._microbatch_model_sql
        return MICROBATCH_QBEAST

    def test_run_with_event_time(self, project, insert_two_rows_sql):
        super().test_run_with_event_time(project, insert_two_rows_sql)
        assert catalog_provider(project, "microbatch_model") == "qbeast"


# four days of six events each, and a microbatch model whose batch of the day named by the
# environment variable fails (dbt's retry then runs with it unset)
FOUR_DAYS = """
{{ config(materialized='table', event_time='event_time') }}
select id, timestamp'2026-01-01 02:00:00' + make_interval(0, 0, 0, 0, cast(id * 4 as int), 0, 0) as event_time
from range(24)
"""
FAILING_DAY = """
{{ config(materialized='incremental', file_format='qbeast', incremental_strategy='microbatch',
          event_time='event_time', batch_size='day', begin='2026-01-01', columns_to_index=['id'],
          optimize_after_run=false) }}
select id, event_time,
       case when date_format(event_time, 'yyyy-MM-dd') = '{{ env_var("QBEAST_TEST_FAIL_DAY", "none") }}'
            then cast(raise_error('this batch fails on purpose') as bigint) else id * 10 end as v
from {{ ref('four_days') }}
"""


class TestMicrobatchRetryQbeast:
    """A failed batch leaves the table as the other batches left it and `dbt retry` runs it
    again: exact rows after each step."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"four_days.sql": FOUR_DAYS, "failing_day.sql": FAILING_DAY}

    def _ids(self, project) -> list[int]:
        df = qbeast.QbeastTable.for_path(_spark(), _location(project, "failing_day")).to_df()
        rows = sorted((r.id, r.v) for r in df.collect())
        assert all(v == i * 10 for i, v in rows), rows
        return [i for i, _ in rows]

    def test_a_failed_batch_then_retry(self, project, monkeypatch):
        monkeypatch.setenv("QBEAST_TEST_FAIL_DAY", "2026-01-02")
        with patch_microbatch_end_time("2026-01-04 23:00:00"):
            results = run_dbt(["run"], expect_pass=False)
        model = next(r for r in results if r.node.name == "failing_day")
        assert len(model.batch_results.successful) == 3 and len(model.batch_results.failed) == 1
        assert model.status == "partial success"
        assert self._ids(project) == [i for i in range(24) if i // 6 != 1]  # day 2 missing
        # one commit per batch that succeeded (the first created the table); none for the failure
        assert QbeastSnapshot.load(_location(project, "failing_day")).version == 2

        monkeypatch.delenv("QBEAST_TEST_FAIL_DAY")
        with patch_microbatch_end_time("2026-01-04 23:00:00"):
            retried = run_dbt(["retry"])
        (model,) = [r for r in retried if r.node.name == "failing_day"]
        assert not model.batch_results.failed  # dbt chooses the batches: the failed one among them
        assert dt.date(2026, 1, 2) in {start.date() for start, _ in model.batch_results.successful}
        assert self._ids(project) == list(range(24))
