"""Seeds loaded in one Spark job: every type dbt infers or ``column_types`` names, cell for cell.

dbt-spark's loader sent SQL ``VALUES`` batches and worked out a numeric column's type again for
every cell; the adapter's (dbt/adapters/qbeast/seeds.py) types each column once and loads the rows
in one job. The values must be those the CSV holds, typed as dbt-spark would type them.
"""
from __future__ import annotations

import datetime as dt
import decimal
from pathlib import Path

import pytest

from dbt.tests.util import run_dbt

ROWS = 3000
BIG = 2**53 + 1  # not a float: dbt-spark's float bindings lost its last digit


def _row(i: int) -> list[str]:
    name = "" if i % 10 == 0 else ('it\'s "quoted", with a comma' if i % 7 == 0 else f"name {i}")
    return [str(i), f"{i % 100}.{i % 100:02d}", f"{i / 8}", (dt.date(2026, 1, 1) + dt.timedelta(days=i % 90)).isoformat(),
            f"2026-01-01 {i % 24:02d}:{i % 60:02d}:{i % 60:02d}", "true" if i % 2 else "false",
            name, f"{i % 1000:05d}", str(BIG + i)]


HEADER = ["id", "amount", "ratio", "day", "ts", "flag", "name", "zip", "big"]


def _csv() -> str:
    def quoted(cell: str) -> str:
        return '"' + cell.replace('"', '""') + '"' if ("," in cell or '"' in cell) else cell

    return "\n".join([",".join(HEADER)] + [",".join(quoted(c) for c in _row(i)) for i in range(ROWS)]) + "\n"


class TestSeedsInOneJob:
    @pytest.fixture(scope="class")
    def seeds(self):
        return {"typed.csv": _csv(), "inferred.csv": _csv(), "bad.csv": "id,amount,day\n1,2,2026-01-01\n2,not a number,2026-01-02\n3,x,someday\n"}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"test": {
            "typed": {"+column_types": {"amount": "decimal(10,2)", "zip": "string", "big": "bigint",
                                        "ratio": "float"}},
            "bad": {"+column_types": {"amount": "int", "day": "date"}}}}}

    def test_every_cell_arrives_typed_as_dbt_types_it(self, project, spark):
        results = run_dbt(["seed", "--select", "typed", "inferred"])
        assert {r.node.name: r.status for r in results} == {"typed": "success", "inferred": "success"}
        run_sql = Path(project.project_root, "target", "run", "test", "seeds", "typed.csv").read_text()
        assert f"{ROWS} rows of the seed file in one Spark job" in run_sql

        schema = project.test_schema
        types = {name: dict(spark.table(f"{schema}.{name}").dtypes) for name in ("typed", "inferred")}
        # dbt's inference as dbt-spark words it; column_types where given (zip keeps its zeros)
        assert types["inferred"] == {"id": "bigint", "amount": "double", "ratio": "double", "day": "date",
                                     "ts": "timestamp", "flag": "boolean", "name": "string",
                                     "zip": "bigint", "big": "bigint"}
        assert types["typed"] == {**types["inferred"], "amount": "decimal(10,2)", "ratio": "float",
                                  "zip": "string"}

        typed = sorted(tuple(r) for r in spark.table(f"{schema}.typed").collect())
        inferred = sorted(tuple(r) for r in spark.table(f"{schema}.inferred").collect())
        assert len(typed) == len(inferred) == ROWS
        for i in (0, 1, 7, 10, 59, 1234, ROWS - 1):
            cells = _row(i)
            day = dt.date.fromisoformat(cells[3])
            ts = dt.datetime.fromisoformat(cells[4])
            name = cells[6] or None  # an empty cell is a null
            flag = cells[5] == "true"
            assert typed[i] == (i, decimal.Decimal(cells[1]), pytest.approx(i / 8), day, ts, flag,
                                name, cells[7], BIG + i)
            assert inferred[i] == (i, float(cells[1]), i / 8, day, ts, flag, name, int(cells[7]),
                                   BIG + i)

    def test_a_cell_its_type_cannot_hold_fails_the_seed_naming_it(self, project):
        results = run_dbt(["seed", "--select", "bad"], expect_pass=False)
        (result,) = results.results
        assert result.status == "error"
        # dbt's header line, then the one line of the refusal
        header, refusal = result.message.splitlines()
        assert header == "Database Error in seed bad (seeds/bad.csv)"
        # each column's first misfit, wherever it is
        assert refusal.strip().startswith("seed bad: column amount: 'not a number' is not a int; "
                                          "column day: 'someday' is not a date")
        assert "column_types" in refusal


PEOPLE = "id,name,score\n" + "".join(f"{i},person {i},{'' if i % 5 == 0 else i * 1.5}\n" for i in range(500))


class TestQbeastSeeds:
    """A seed with ``file_format='qbeast'`` is a Qbeast table the engine rebuilds on every seed."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": PEOPLE, "unindexed.csv": "id\n1\n"}

    @pytest.fixture(scope="class")
    def models(self):
        return {"adults.sql": "select id, name from {{ ref('people') }} where score >= 100"}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"test": {
            "people": {"+file_format": "qbeast", "+columns_to_index": ["id"], "+cube_size": 100,
                       "+column_types": {"score": "decimal(8,1)"}},
            "unindexed": {"+file_format": "qbeast"}}}}

    def test_a_qbeast_seed_is_indexed_and_rebuilt_by_each_seed(self, project, spark):
        import qbeast

        from .conftest import catalog_facts, catalog_provider

        results = run_dbt(["seed", "--select", "people"])
        assert results[0].status == "success" and "QBEAST OVERWRITE 500 rows" in results[0].message
        assert catalog_provider(project, "people") == "qbeast"
        location = qbeast.local_path(catalog_facts(project, "people")["Location"])
        table = qbeast.QbeastTable.for_path(spark, location)
        assert table.snapshot().version == 0 and table.revision_ids() == [0, 1]
        assert dict(spark.table(f"{project.test_schema}.people").dtypes) == {
            "id": "bigint", "name": "string", "score": "decimal(8,1)"}
        rows = sorted(tuple(r) for r in table.to_df().collect())
        expected = [(i, f"person {i}", None if i % 5 == 0 else decimal.Decimal(str(i * 1.5)))
                    for i in range(500)]
        assert rows == expected
        assert 0 < table.sample(0.1).count() < 500  # the index gives its sample

        run_dbt(["run", "--select", "adults"])
        adults = spark.table(f"{project.test_schema}.adults").count()
        assert adults == sum(1 for i in range(500) if i % 5 and i * 1.5 >= 100)

        results = run_dbt(["seed", "--select", "people"])  # rebuilt: one more version, same rows
        assert table.snapshot().version == 1 and table.to_df().count() == 500

    def test_a_qbeast_seed_without_columns_to_index_is_refused_naming_the_key(self, project):
        results = run_dbt(["seed", "--select", "unindexed"], expect_pass=False)
        message = results.results[0].message
        assert "seed unindexed: a qbeast seed (file_format='qbeast') needs config columns_to_index" in message
