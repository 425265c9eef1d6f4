"""dbt-tests-adapter's ``utils`` suite: the cross-database macros (``dateadd``, ``listagg``,
``split_part``, the ``type_*`` macros...) that dbt packages such as dbt_utils build on.

Most of the suite's classes share one test, ``BaseUtils.test_build_assert_equal``: ``dbt build``
of the class's seeds, models and ``assert_equal`` data tests. Each such class costs a project of
its own (a schema, a parse, a build: about 3 s here, 25 classes), so those classes run as **one
project**: the union of their seeds, models and macros, built once by ``dbt build`` with every node
required to pass. That is the same test on the same files, as long as no two classes name a file
the same (checked) and each class's test is dbt's own shared one (checked, so a class that later
gains a test of its own moves out of the union by itself). Every class with a test of its own
(the array macros, except/intersect, the null comparisons, ``current_timestamp``, the data-type
macros, ``validate_sql``) runs as dbt-spark runs it: a subclass, on a project of its own.

Where Spark needs a different fixture, the change is stated where it is made: ``listagg`` without
its ordered variants (as dbt-spark), ``get_intervals_between`` with ISO dates, ``datediff`` as a
table model, and the ``type_int`` seed typed ``int``. The union runs twice: with plain seeds, and
with every seed a qbeast table (``+file_format: qbeast``), so the macros are checked over the
engine's tables as well.

Not subclassed, each because dbt offers it as the alternative to one that is:
``BaseEscapeSingleQuotesQuote`` (Spark escapes a quote with a backslash: the ``Backslash`` class
runs) and ``BaseCurrentTimestampAware`` (Spark's timestamps carry no zone: the ``Naive`` class
runs).
"""
from __future__ import annotations

import csv
import io
from typing import Dict, List, Tuple, Type

import pytest

from dbt.tests.adapter.utils import base_utils, fixture_listagg
from dbt.tests.adapter.utils.data_types.test_type_bigint import BaseTypeBigInt
from dbt.tests.adapter.utils.data_types.test_type_boolean import BaseTypeBoolean
from dbt.tests.adapter.utils.data_types.test_type_float import BaseTypeFloat
from dbt.tests.adapter.utils.data_types.test_type_int import BaseTypeInt
from dbt.tests.adapter.utils.data_types.test_type_numeric import BaseTypeNumeric
from dbt.tests.adapter.utils.data_types.test_type_string import BaseTypeString
from dbt.tests.adapter.utils.data_types.test_type_timestamp import BaseTypeTimestamp
from dbt.tests.adapter.utils.test_any_value import BaseAnyValue
from dbt.tests.adapter.utils.test_array_append import BaseArrayAppend
from dbt.tests.adapter.utils.test_array_concat import BaseArrayConcat
from dbt.tests.adapter.utils.test_array_construct import BaseArrayConstruct
from dbt.tests.adapter.utils.test_bool_or import BaseBoolOr
from dbt.tests.adapter.utils.test_cast import BaseCast
from dbt.tests.adapter.utils.test_cast_bool_to_text import BaseCastBoolToText
from dbt.tests.adapter.utils.test_concat import BaseConcat
from dbt.tests.adapter.utils.test_current_timestamp import BaseCurrentTimestampNaive
from dbt.tests.adapter.utils.test_date import BaseDate
from dbt.tests.adapter.utils.test_date_spine import BaseDateSpine
from dbt.tests.adapter.utils.test_date_trunc import BaseDateTrunc
from dbt.tests.adapter.utils.test_dateadd import BaseDateAdd
from dbt.tests.adapter.utils.test_datediff import BaseDateDiff
from dbt.tests.adapter.utils.test_equals import BaseEquals
from dbt.tests.adapter.utils.test_escape_single_quotes import BaseEscapeSingleQuotesBackslash
from dbt.tests.adapter.utils.test_except import BaseExcept
from dbt.tests.adapter.utils.test_generate_series import BaseGenerateSeries
from dbt.tests.adapter.utils.test_get_intervals_between import BaseGetIntervalsBetween
from dbt.tests.adapter.utils.test_get_powers_of_two import BaseGetPowersOfTwo
from dbt.tests.adapter.utils.test_hash import BaseHash
from dbt.tests.adapter.utils.test_intersect import BaseIntersect
from dbt.tests.adapter.utils.test_last_day import BaseLastDay
from dbt.tests.adapter.utils.test_length import BaseLength
from dbt.tests.adapter.utils.test_listagg import BaseListagg
from dbt.tests.adapter.utils.test_null_compare import BaseMixedNullCompare, BaseNullCompare
from dbt.tests.adapter.utils.test_position import BasePosition
from dbt.tests.adapter.utils.test_replace import BaseReplace
from dbt.tests.adapter.utils.test_right import BaseRight
from dbt.tests.adapter.utils.test_safe_cast import BaseSafeCast
from dbt.tests.adapter.utils.test_source_freshness_custom_info import BaseCalculateFreshnessMethod
from dbt.tests.adapter.utils.test_split_part import BaseSplitPart
from dbt.tests.adapter.utils.test_string_literal import BaseStringLiteral
from dbt.tests.adapter.utils.test_timestamps import BaseCurrentTimestamps
from dbt.tests.adapter.utils.test_validate_sql import BaseValidateSqlMethod
from dbt.tests.util import run_dbt

from .conftest import catalog_provider, dbt_fixture_value

# -- Spark's versions of three fixtures (as dbt-spark changes them) ---------------------------

#: dbt's fixture gives ``get_intervals_between`` US-style dates ('09/01/2023'), which Spark's
#: ``date()`` does not parse (the datediff is null, the model fails); the same days in ISO form.
_INTERVALS_BETWEEN_SQL = """
select
  {{ get_intervals_between("'2023-09-01'", "'2023-09-12'", "day") }} as intervals,
  11 as expected
"""

#: ``listagg`` without its ordered variants' order: dbt-spark's ``listagg`` is ``collect_list``,
#: which keeps no order, so only the unordered results are compared.
_LISTAGG_UNORDERED_SQL = """
with data as (
    select * from {{ ref('data_listagg') }}
),
expected as (
    select * from {{ ref('data_listagg_output') }}
    where version in ('comma_whitespace_unordered', 'distinct_comma', 'no_params')
),
calculated as (
    select group_col, {{ listagg('string_text', "', '") }} as actual,
           'comma_whitespace_unordered' as version
    from data where group_col = 3 group by group_col
    union all
    select group_col, {{ listagg('DISTINCT string_text', "','") }} as actual,
           'distinct_comma' as version
    from data where group_col = 3 group by group_col
    union all
    select group_col, {{ listagg('string_text') }} as actual, 'no_params' as version
    from data where group_col = 3 group by group_col
)
select calculated.actual, expected.expected
from calculated
left join expected
  on calculated.group_col = expected.group_col and calculated.version = expected.version
"""


class _SparkGetIntervalsBetween(BaseGetIntervalsBetween):
    @pytest.fixture(scope="class")
    def models(self):
        from dbt.tests.adapter.utils import fixture_get_intervals_between as dbt_fixture

        return {"test_get_intervals_between.yml":
                dbt_fixture.models__test_get_intervals_between_yml,
                "test_get_intervals_between.sql": self.interpolate_macro_namespace(
                    _INTERVALS_BETWEEN_SQL, "get_intervals_between")}


class _SparkListagg(BaseListagg):
    @pytest.fixture(scope="class")
    def models(self):
        return {"test_listagg.yml": fixture_listagg.models__test_listagg_yml,
                "test_listagg.sql": self.interpolate_macro_namespace(_LISTAGG_UNORDERED_SQL,
                                                                     "listagg")}


#: The classes whose one test is dbt's shared ``dbt build`` (run together, see the docstring).
SHARED_BUILD_CLASSES: Tuple[Type[base_utils.BaseUtils], ...] = (
    BaseAnyValue, BaseBoolOr, BaseCast, BaseCastBoolToText, BaseConcat, BaseDate, BaseDateSpine,
    BaseDateTrunc, BaseDateAdd, BaseDateDiff, BaseEscapeSingleQuotesBackslash, BaseGenerateSeries,
    _SparkGetIntervalsBetween, BaseGetPowersOfTwo, BaseHash, BaseLastDay, BaseLength, _SparkListagg,
    BaseNullCompare, BasePosition, BaseReplace, BaseRight, BaseSafeCast, BaseSplitPart,
    BaseStringLiteral,
)


def shared_build_files(classes: Tuple[type, ...], name: str) -> Dict[str, str]:
    """The union of fixture ``name`` (``seeds``, ``models``, ``macros``) over ``classes``. A file
    two classes name differently is an error (one class's file would replace the other's); the
    same file with the same text (the shared macros) is one file."""
    union: Dict[str, str] = {}
    owner: Dict[str, str] = {}
    for cls in classes:
        assert cls.test_build_assert_equal is base_utils.BaseUtils.test_build_assert_equal, (
            f"{cls.__name__} has a test of its own: it cannot share the one build")
        for path, text in dbt_fixture_value(cls, name).items():
            assert union.get(path, text) == text, (
                f"{cls.__name__} and {owner[path]} both name {name}/{path} with different text")
            union[path], owner[path] = text, cls.__name__
    return union


def _seed_headers(seeds: Dict[str, str]) -> Dict[str, List[str]]:
    return {path[:-len(".csv")]: next(csv.reader(io.StringIO(text)))
            for path, text in seeds.items() if path.endswith(".csv")}


class TestUtilsSharedBuild:
    """dbt's ``BaseUtils`` classes listed above, in one project, built as each class builds."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        """``datediff``'s model is a table: as a view, its SQL (every datepart's CASE) is longer than
        the 32,700 characters the embedded Derby catalog stores for a view's text."""
        return {"models": {"test": {"test_datediff": {"+materialized": "table"}}}}

    @pytest.fixture(scope="class")
    def seeds(self):
        return shared_build_files(SHARED_BUILD_CLASSES, "seeds")

    @pytest.fixture(scope="class")
    def models(self):
        return shared_build_files(SHARED_BUILD_CLASSES, "models")

    @pytest.fixture(scope="class")
    def macros(self):
        return shared_build_files(SHARED_BUILD_CLASSES, "macros")

    def test_build_assert_equal(self, project, seeds, models):
        results = run_dbt(["build"])
        statuses = {result.node.name: str(result.status) for result in results}
        assert all(status in ("success", "pass") for status in statuses.values()), statuses
        # every seed, every model and at least one assert_equal test per class ran
        assert {name for name in statuses} >= set(_seed_headers(seeds))
        assert {name for name in statuses} >= {path[:-4] for path in models if path.endswith(".sql")}
        assert sum(name.startswith("assert_equal_") for name in statuses) >= len(SHARED_BUILD_CLASSES)


class TestUtilsSharedBuildQbeastSeeds(TestUtilsSharedBuild):
    """The same build with every seed written as a qbeast table, indexed on its first column."""

    @pytest.fixture(scope="class")
    def properties(self, seeds) -> Dict[str, str]:
        """A property file (dbt reads seed properties from the model paths too)."""
        lines = ["version: 2", "seeds:"]
        for name, header in _seed_headers(seeds).items():
            lines += [f"  - name: {name}", "    config:", "      file_format: qbeast",
                      f"      columns_to_index: ['{header[0]}']"]
        return {"qbeast_seeds.yml": "\n".join(lines) + "\n"}

    def test_build_assert_equal(self, project, seeds, models):
        super().test_build_assert_equal(project, seeds, models)
        for name in _seed_headers(seeds):
            assert catalog_provider(project, name) == "qbeast", name


# -- the classes with a test of their own, as dbt-spark runs them ------------------------------


class TestArrayAppend(BaseArrayAppend):
    pass


class TestArrayConcat(BaseArrayConcat):
    pass


class TestArrayConstruct(BaseArrayConstruct):
    pass


class TestExcept(BaseExcept):
    pass


class TestIntersect(BaseIntersect):
    pass


class TestEquals(BaseEquals):
    pass


class TestMixedNullCompare(BaseMixedNullCompare):
    pass


class TestCurrentTimestamp(BaseCurrentTimestampNaive):
    pass


class TestValidateSqlMethod(BaseValidateSqlMethod):
    pass


class TestTypeBigInt(BaseTypeBigInt):
    pass


class TestTypeBoolean(BaseTypeBoolean):
    pass


class TestTypeFloat(BaseTypeFloat):
    pass


class TestTypeInt(BaseTypeInt):
    """dbt's seed holds an integer, which dbt-spark's seed typing makes ``bigint`` (a seed of
    larger values must load); the seed is typed ``int`` so it compares with ``type_int()``."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"seeds": {"+column_types": {"int_col": "int"}}}


class TestTypeNumeric(BaseTypeNumeric):
    pass


class TestTypeString(BaseTypeString):
    pass


class TestTypeTimestamp(BaseTypeTimestamp):
    pass


class TestCurrentTimestamps(BaseCurrentTimestamps):
    """dbt's three timestamp macros; dbt's expected text and types are Postgres', Spark's here."""

    @pytest.fixture(scope="class")
    def expected_schema(self):
        return {"current_timestamp": "timestamp", "current_timestamp_in_utc_backcompat": "timestamp",
                "current_timestamp_backcompat": "timestamp"}

    @pytest.fixture(scope="class")
    def expected_sql(self):
        """What the macros render to through the qbeast adapter (dbt-spark's and dbt's defaults:
        Spark 4 reads the ``::`` cast)."""
        return """select current_timestamp() as current_timestamp,
               current_timestamp::timestamp as current_timestamp_in_utc_backcompat,
               current_timestamp::timestamp as current_timestamp_backcompat"""


class TestCalculateFreshnessMethod(BaseCalculateFreshnessMethod):
    pass
