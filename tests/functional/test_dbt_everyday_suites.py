"""dbt-tests-adapter's suites for what every dbt project does besides building models: sample mode,
`dbt show`, ephemeral models, aliases, the relation cache, stored test failures and `--empty`.

Each class subclasses dbt's own, as dbt-spark does, on the session method. Where a suite builds
the tables it reads, a second class builds them as qbeast tables (``+materialized: qbeast`` or
``+file_format: qbeast``), so dbt's expectations are checked on the engine's tables too.
"""
from __future__ import annotations

import re

import pytest

from dbt.tests.adapter.aliases.test_aliases import (
    BaseAliasErrors,
    BaseAliases,
    BaseSameAliasDifferentDatabases,
    BaseSameAliasDifferentSchemas,
)
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.adapter.dbt_show.test_dbt_show import (
    BaseShowDoesNotHandleDoubleLimit,
    BaseShowLimit,
    BaseShowSqlHeader,
)
from dbt.tests.adapter.empty.test_empty import BaseTestEmpty, BaseTestEmptyInlineSourceRef
from dbt.tests.adapter.ephemeral.test_ephemeral import (
    BaseEphemeralErrorHandling,
    BaseEphemeralMulti,
    BaseEphemeralNested,
)
from dbt.tests.adapter.sample_mode import fixtures as sample_fixtures
from dbt.tests.adapter.sample_mode.test_sample_mode import BaseSampleModeTest
from dbt.tests.adapter.store_test_failures_tests.test_store_test_failures import (
    BaseStoreTestFailures,
)
from dbt.tests.util import check_relations_equal, run_dbt

from .conftest import catalog_provider

#: dbt's alias fixtures cast with Postgres' ``::text``; Spark spells it ``cast(... as string)``.
_SPARK_STRING_LITERAL = """
{% macro string_literal(s) -%}
  {{ adapter.dispatch('string_literal', macro_namespace='test')(s) }}
{%- endmacro %}

{% macro default__string_literal(s) %}
    cast('{{ s }}' as string)
{% endmacro %}
"""


class _SparkAliasMacros:
    """dbt's alias suites with the ``string_literal`` macro in Spark's SQL."""

    @pytest.fixture(scope="class")
    def macros(self):
        from dbt.tests.adapter.aliases import fixtures

        return {"cast.sql": _SPARK_STRING_LITERAL, "expect_value.sql": fixtures.MACROS__EXPECT_VALUE_SQL}


class TestSampleModeQbeast(BaseSampleModeTest):
    """``dbt run --sample='1 day'`` filters a ref() by the input's event_time window."""


class TestSampleModeQbeastInput(BaseSampleModeTest):
    """The same with the sampled input a qbeast table (the window filter reads it through SQL)."""

    @pytest.fixture(scope="class")
    def input_model_sql(self) -> str:
        return sample_fixtures.input_model_sql.replace(
            "materialized='table'", "materialized='qbeast', columns_to_index=['id']")

    def test_the_input_is_a_qbeast_table(self, project):
        run_dbt(["run", "--select", "input_model"])
        assert catalog_provider(project, "input_model") == "qbeast"


class TestShowLimitQbeast(BaseShowLimit):
    pass


class TestShowLimitQbeastModels(BaseShowLimit):
    """`dbt show` over a seed and a model written in the qbeast format."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"models": {"+materialized": "qbeast", "+columns_to_index": ["sample_num"]},
                "seeds": {"+file_format": "qbeast", "+columns_to_index": ["sample_num"]}}

    def test_the_seed_and_the_model_are_qbeast_tables(self, project):
        run_dbt(["build"])
        assert catalog_provider(project, "sample_seed") == "qbeast"
        assert catalog_provider(project, "sample_model") == "qbeast"


class TestShowSqlHeaderQbeast(BaseShowSqlHeader):
    pass


class TestShowDoesNotHandleDoubleLimitQbeast(BaseShowDoesNotHandleDoubleLimit):
    DATABASE_ERROR_MESSAGE = "PARSE_SYNTAX_ERROR"


def _run_sql(name: str) -> str:
    """The DDL dbt ran for model ``name``, digits and whitespace removed (as dbt's suite does)."""
    with open(f"./target/run/test/models/{name}.sql") as handle:
        return "".join(re.sub(r"\d+", "", handle.read()).split())


class TestEphemeralMultiQbeast(BaseEphemeralMulti):
    """dbt's test compares the DDL with Postgres' text; here the same statement in Spark's DDL:
    the two ephemeral models inlined once each as CTEs, the copy reading the base's CTE."""

    def test_ephemeral_multi(self, project):
        run_dbt(["seed"])
        assert len(run_dbt(["run"])) == 3
        for model in ("dependent", "double_dependent", "super_dependent"):
            check_relations_equal(project.adapter, ["seed", model])
        schema = re.sub(r"\d+", "", project.test_schema)
        assert _run_sql("double_dependent") == "".join((
            f"createorreplaceview{schema}.double_dependentas"
            f"with__dbt__cte__baseas(select*from{schema}.seed),"
            "__dbt__cte__base_copyas(select*from__dbt__cte__base)"
            "--base_copyjustpullsfrombase.Makesurethelisted"
            "--graphofCTEsallsharethesamedbt_cte__basecte"
            "select*from__dbt__cte__basewheregender='Male'unionall"
            "select*from__dbt__cte__base_copywheregender='Female'").split())


class TestEphemeralNestedQbeast(BaseEphemeralNested):
    """As dbt's, in Spark's DDL: two levels of ephemeral models inlined in order."""

    def test_ephemeral_nested(self, project):
        assert len(run_dbt(["run"])) == 2
        schema = re.sub(r"\d+", "", project.test_schema)
        assert _run_sql("root_view") == (
            f"createorreplaceview{schema}.root_viewas"
            f"with__dbt__cte__ephemeral_level_twoas(select*from{schema}.source_table),"
            "__dbt__cte__ephemeralas(select*from__dbt__cte__ephemeral_level_two)"
            "select*from__dbt__cte__ephemeral")


class TestEphemeralErrorHandlingQbeast(BaseEphemeralErrorHandling):
    pass


class TestAliasesQbeast(_SparkAliasMacros, BaseAliases):
    pass


class TestAliasesQbeastModels(TestAliasesQbeast):
    """Aliases of qbeast tables: the folder and the catalog entry take the alias."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        config = BaseAliases.project_config_update.__wrapped__(self)
        config["models"].update({"+materialized": "qbeast", "+columns_to_index": ["tablename"]})
        return config

    @pytest.fixture(scope="class")
    def models(self):
        qbeast = "materialized='qbeast', columns_to_index=['tablename']"
        return {name: text.replace("materialized='table'", qbeast)
                for name, text in BaseAliases.models.__wrapped__(self).items()}

    def test_the_aliased_relations_are_qbeast_tables(self, project):
        run_dbt(["run"])
        for alias in ("foo", "project_alias", "override_alias"):
            assert catalog_provider(project, alias) == "qbeast", alias


class TestAliasErrorsQbeast(_SparkAliasMacros, BaseAliasErrors):
    pass


class TestSameAliasDifferentSchemasQbeast(_SparkAliasMacros, BaseSameAliasDifferentSchemas):
    pass


@pytest.mark.skip(reason="Spark has no databases apart from schemas: a relation's database is "
                  "None (as dbt-spark's), so two models cannot differ by database alone")
class TestSameAliasDifferentDatabasesQbeast(_SparkAliasMacros, BaseSameAliasDifferentDatabases):
    pass


class _SparkCacheChecks:
    """dbt's cache checks, but for the database part of a name: Spark's relations have none (it
    is None, as dbt-spark's), where dbt's check lower-cases it. Schema and identifier are
    compared as dbt compares them."""

    def run_and_inspect_cache(self, project, run_args=None):
        run_dbt(run_args)
        (relation,) = project.adapter.cache.relations  # the model's, added by its materialization
        assert relation.schema == project.test_schema == project.test_schema.lower()
        run_dbt(run_args)  # now found in the catalog when the cache is populated
        (second,) = project.adapter.cache.relations
        assert relation.database is None and second.database is None
        for key in ("schema", "identifier"):
            assert getattr(relation, key).lower() == getattr(second, key).lower()


class TestCachingLowercaseModelQbeast(_SparkCacheChecks, BaseCachingLowercaseModel):
    pass


class TestCachingUppercaseModelQbeast(_SparkCacheChecks, BaseCachingUppercaseModel):
    pass


class TestCachingSelectedSchemaOnlyQbeast(_SparkCacheChecks, BaseCachingSelectedSchemaOnly):
    pass


class TestNoPopulateCacheQbeast(_SparkCacheChecks, BaseNoPopulateCache):
    pass


class TestStoreTestFailuresQbeast(BaseStoreTestFailures):
    pass


class TestEmptyQbeast(BaseTestEmpty):
    pass


class TestEmptyInlineSourceRefQbeast(BaseTestEmptyInlineSourceRef):
    pass
