"""dbt-tests-adapter's ``simple_seed`` suite: what ``dbt seed`` does with a project's CSV files
(reloads, ``--full-refresh``, custom schemas, delimiters, a byte-order mark, unicode and dotted
names, enabled/disabled seeds, ``column_types``, empty files).

dbt's classes build their expected table with Postgres SQL (``TEXT``, ``TIMESTAMP WITHOUT TIME
ZONE``, a double-quoted column list, two statements in one text). ``_SparkExpectedTable`` runs the
same rows as Spark SQL: the types renamed, the column list dropped (Spark reads a double-quoted
name as a string), one statement at a time. Everything else is dbt's.

The classes that reload and drop the seed table run twice: with plain seeds and with qbeast seeds
(``file_format: qbeast``, indexed on ``seed_id``), so a reload and a ``--full-refresh`` are checked
on the engine's tables too. The classes about reading the CSV file (delimiters, the
byte-order mark, formats, parsing) are the same for every format and run once.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any, Dict, List

import pytest

from dbt.tests.adapter.simple_seed import fixtures as dbt_fixtures
from dbt.tests.adapter.simple_seed import seeds as dbt_seeds
from dbt.tests.adapter.simple_seed.test_seed import (
    BaseBasicSeedTests,
    BaseSeedConfigFullRefreshOff,
    BaseSeedConfigFullRefreshOn,
    BaseSeedCustomSchema,
    BaseSeedParsing,
    BaseSeedSpecificFormats,
    BaseSeedWithEmptyDelimiter,
    BaseSeedWithUniqueDelimiter,
    BaseSeedWithWrongDelimiter,
    BaseSimpleSeedEnabledViaConfig,
    BaseSimpleSeedWithBOM,
    BaseTestEmptySeed,
)
from dbt.tests.adapter.simple_seed.test_seed_type_override import BaseSimpleSeedColumnOverride
from dbt.tests.util import check_relations_equal

from .conftest import catalog_provider

_SPARK_TYPES = (("TIMESTAMP WITHOUT TIME ZONE", "TIMESTAMP"), (" TEXT", " STRING"),
                (" INTEGER", " INT"))


def spark_statements(postgres_sql: str) -> List[str]:
    """dbt's expected-table SQL as Spark statements, one each: Spark's type names, and the insert
    as a select from dbt's ``VALUES`` rows named by dbt's column list (Spark reads a double-quoted
    name as a string), each value cast to its column's type (Spark's inserts do not turn a string
    literal into a timestamp)."""
    sql = postgres_sql
    for postgres, spark in _SPARK_TYPES:
        sql = sql.replace(postgres, spark)
    create, insert = (statement.strip() for statement in sql.split(";") if statement.strip())
    types = dict(re.findall(r"^(\w+) (\w+),?$", create, flags=re.M))
    head, rows = re.split(r"\bVALUES\b", insert, maxsplit=1)
    target, column_list = head.split("(", 1)
    columns = re.findall(r'"(\w+)"', column_list)
    select = ", ".join(f"cast({name} as {types[name]}) as {name}" for name in columns)
    return [create, f"{target.strip()} select {select} from values {rows.strip()} "
                    f"as dbt_rows({', '.join(columns)})"]


class _SparkExpectedTable:
    """dbt's ``setUp``: the expected table of the suite, created with Spark SQL."""

    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):
        for statement in spark_statements(dbt_seeds.seeds__expected_sql):
            project.run_sql(statement.format(schema=project.test_schema))


class _QbeastSeeds:
    """Every seed of the project a qbeast table indexed on ``seed_id``; checked after the run."""

    @pytest.fixture(scope="class")
    def project_config_update(self) -> Dict[str, Any]:
        return {"seeds": {"quote_columns": False, "+file_format": "qbeast",
                          "+columns_to_index": ["seed_id"]}}

    @pytest.fixture(autouse=True)
    def _seeds_are_qbeast(self, project):
        yield
        for name in ("seed_actual",):
            relation = project.adapter.get_relation(project.database, project.test_schema, name)
            if relation is not None:
                assert catalog_provider(project, name) == "qbeast"


class _NoCascade:
    """``dbt seed --full-refresh`` drops and reloads the seed. dbt's check expects the model built
    on it (a view) to be gone, as Postgres' ``DROP ... CASCADE`` drops it; Spark's catalog has no
    dependent objects, so the view outlives the drop. Checked instead: the view is there and reads
    the reloaded rows (everything else as dbt checks it)."""

    def _check_relation_end_state(self, run_result, project, exists: bool):
        super()._check_relation_end_state(run_result, project, exists=True)
        check_relations_equal(project.adapter,
                              ["models__downstream_from_seed_actual", "seed_expected"])


class TestSeedTablesQbeast(_NoCascade, _SparkExpectedTable, BaseBasicSeedTests):
    pass


class TestSeedTablesQbeastFormat(_NoCascade, _QbeastSeeds, _SparkExpectedTable, BaseBasicSeedTests):
    pass


class TestSeedFullRefreshOnQbeast(_NoCascade, _SparkExpectedTable, BaseSeedConfigFullRefreshOn):
    pass


class TestSeedFullRefreshOnQbeastFormat(_NoCascade, _QbeastSeeds, _SparkExpectedTable,
                                        BaseSeedConfigFullRefreshOn):
    @pytest.fixture(scope="class")
    def project_config_update(self) -> Dict[str, Any]:
        return {"seeds": {"quote_columns": False, "full_refresh": True, "+file_format": "qbeast",
                          "+columns_to_index": ["seed_id"]}}


class TestSeedFullRefreshOffQbeast(_SparkExpectedTable, BaseSeedConfigFullRefreshOff):
    pass


class TestSeedCustomSchemaQbeast(_SparkExpectedTable, BaseSeedCustomSchema):
    pass


class TestSeedWithUniqueDelimiterQbeast(_SparkExpectedTable, BaseSeedWithUniqueDelimiter):
    pass


class TestSeedWithWrongDelimiterQbeast(_SparkExpectedTable, BaseSeedWithWrongDelimiter):
    pass


class TestSeedWithEmptyDelimiterQbeast(_SparkExpectedTable, BaseSeedWithEmptyDelimiter):
    pass


class TestSimpleSeedEnabledViaConfigQbeast(BaseSimpleSeedEnabledViaConfig):
    pass


class TestSeedParsingQbeast(_SparkExpectedTable, BaseSeedParsing):
    pass


class TestSimpleSeedWithBOMQbeast(BaseSimpleSeedWithBOM):
    @pytest.fixture(scope="class", autouse=True)
    def setUp(self, project):
        """dbt's setUp with Spark's expected table, and the file copied from dbt's own folder
        (dbt copies it from the test's folder, where only dbt's own test module has it)."""
        for statement in spark_statements(dbt_seeds.seeds__expected_sql):
            project.run_sql(statement.format(schema=project.test_schema))
        shutil.copyfile(Path(dbt_seeds.__file__).parent / "seed_bom.csv",
                        Path(project.project_root) / "seeds" / "seed_bom.csv")


class TestSeedSpecificFormatsQbeast(BaseSeedSpecificFormats):
    """dbt's seed ``seed.with.dots`` gets the alias ``seed_with_dots``: Spark's catalog takes only
    letters, digits and ``_`` in a table name (INVALID_SCHEMA_OR_RELATION_NAME)."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"quote_columns": False,
                          "test": {"seed.with.dots": {"+alias": "seed_with_dots"}}}}


class TestEmptySeedQbeast(BaseTestEmptySeed):
    pass


class TestSimpleSeedColumnOverrideQbeast(BaseSimpleSeedColumnOverride):
    """dbt's ``column_types`` and expected types are Postgres' names; Spark's here: ``text`` is
    ``string``, and dbt-spark infers ``bigint`` and ``timestamp`` where Postgres has ``integer``
    and ``timestamp without time zone``."""

    @pytest.fixture(scope="class")
    def models(self):
        spark_names = (dbt_fixtures.properties__schema_yml.replace("type: text", "type: string")
                       .replace("type: integer", "type: bigint")
                       .replace("type: timestamp without time zone", "type: timestamp"))
        return {"schema.yml": spark_names}

    @staticmethod
    def seed_enabled_types():
        return {"seed_id": "string", "birthday": "date"}

    @staticmethod
    def seed_tricky_types():
        return {"seed_id_str": "string", "looks_like_a_bool": "string",
                "looks_like_a_date": "string"}


def test_the_expected_table_sql_keeps_every_row_of_dbts():
    """The translation keeps dbt's rows and names every column it casts."""
    create, insert = spark_statements(dbt_seeds.seeds__expected_sql)
    assert "TIMESTAMP WITHOUT" not in create and " TEXT" not in create
    rows = insert.split("from values", 1)[1]
    assert rows.count("),") + 1 == 500
    assert "cast(birthday as TIMESTAMP) as birthday" in insert
    assert insert.endswith("as dbt_rows(seed_id, first_name, email, ip_address, birthday)")
