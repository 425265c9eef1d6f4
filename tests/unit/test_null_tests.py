"""The target predicates the one-job path of a merge evaluates in its tasks (null tests joined
by AND) and their per-row result against Spark's rules: anything else is refused (None), so the
change is joined in Spark."""
from __future__ import annotations

import math

import pyarrow as pa
import pytest

from qbeast.core import expressions as ex
from qbeast.spark.changes.null_tests import NullTest, as_expressions, null_tests, rows_meeting

COLUMNS = ["id", "dbt_valid_to", "Amount"]


@pytest.mark.parametrize("text, expected", [
    ("dbt_valid_to is null", (NullTest("dbt_valid_to", True),)),
    ("(dbt_valid_to IS NULL)", (NullTest("dbt_valid_to", True),)),  # dbt wraps each predicate
    ("((DBT_VALID_TO is null)) and (amount is not null)",
     (NullTest("dbt_valid_to", True), NullTest("Amount", False))),
    ("`Amount` IS  NOT\tNULL", (NullTest("Amount", False),)),
])
def test_null_tests_joined_by_and_are_read_with_the_tables_spelling(text, expected):
    assert null_tests(text, COLUMNS) == expected


@pytest.mark.parametrize("text", [
    "id < 10",                                     # a comparison: SQL the tasks do not evaluate
    "dbt_valid_to is null or amount is null",      # OR
    "(dbt_valid_to is null) and (id > 3)",         # one part is not a null test
    "not (dbt_valid_to is null)",
    "missing is null",                             # not a column
    "dbt_valid_to = '9999-12-31' or dbt_valid_to is null",
    "dbt_valid_to is null) and (amount is null",   # unbalanced
    "",
])
def test_anything_else_is_left_to_spark(text):
    assert null_tests(text, COLUMNS) is None


def test_a_name_two_columns_share_but_for_case_is_left_to_spark():
    assert null_tests("a is null", ["a", "A"]) is None


def test_rows_meeting_follows_sqls_is_null_nan_included():
    table = pa.table({"v": pa.array([None, 1.0, math.nan, None]),
                      "s": pa.array(["a", None, "c", "d"])})
    assert rows_meeting(table, [NullTest("v", True)]).tolist() == [True, False, False, True]
    assert rows_meeting(table, [NullTest("v", True), NullTest("s", False)]).tolist() == [
        True, False, False, True]
    assert rows_meeting(table, [NullTest("s", True)]).tolist() == [False, True, False, False]
    assert as_expressions([NullTest("v", True), NullTest("s", False)]) == [
        ex.IsNull("v"), ex.IsNotNull("s")]
    assert as_expressions([NullTest("v", False)]) == [ex.IsNotNull("v")]
