"""The text a seed cell is handed to Spark as (dbt/adapters/qbeast/seeds.py)."""
from __future__ import annotations

import datetime as dt
import decimal

import agate
import pytest

from dbt.adapters.qbeast.seeds import cell_text, seed_columns


@pytest.mark.parametrize("value, text", [
    (None, None),
    (True, "true"),
    (False, "false"),
    (decimal.Decimal("12"), "12"),
    (decimal.Decimal("12.0"), "12"),  # integral: casts to int/bigint as dbt-spark's binding does
    (decimal.Decimal("1E+3"), "1000"),  # written out, no exponent
    (decimal.Decimal("-0.000015"), "-0.000015"),
    (decimal.Decimal("1.50"), "1.50"),
    (decimal.Decimal("123456789012345678901"), "123456789012345678901"),  # every digit kept
    (7, "7"),
    (2.5, "2.5"),
    (dt.date(2026, 1, 2), "2026-01-02"),
    (dt.datetime(2026, 1, 2, 3, 4, 5), "2026-01-02 03:04:05"),
    (dt.datetime(2026, 1, 2, 3, 4, 5, 600), "2026-01-02 03:04:05.000600"),
    ("it's", "it's"),
    ("", ""),
])
def test_a_cell_is_handed_over_as_the_text_spark_casts(value, text):
    assert cell_text(value) == text


def test_the_columns_of_an_agate_table():
    table = agate.Table([(1, "a", None), (2, None, True)], ["n", "s", "b"],
                        [agate.Number(), agate.Text(), agate.Boolean()])
    assert seed_columns(table) == [["1", "2"], ["a", None], [None, "true"]]
