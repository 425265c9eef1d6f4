"""The text a seed cell is handed to Spark as, and where a load stops when dbt is interrupted
(dbt/adapters/qbeast/seeds.py)."""
from __future__ import annotations

import datetime as dt
import decimal

import agate
import pytest

from dbt.adapters.qbeast.seeds import cell_text, load_seed, seed_columns


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


class _Interrupted(Exception):
    pass


class _RecordingSpark:
    """Records whether the load reached Spark (a DataFrame from the Arrow table)."""

    def __init__(self) -> None:
        self.frames = 0

    def createDataFrame(self, data):  # noqa: N802 - Spark's name
        self.frames += 1
        raise AssertionError("the load went on to Spark after the interrupt")


@pytest.mark.parametrize("interrupted_at", [1, 2, 3])
def test_an_interrupt_stops_the_load_before_spark(interrupted_at):
    """The interrupt check runs before the cells' text, the Arrow table and Spark's copy: an
    interrupt seen at any of them stops the load there, with nothing handed to Spark."""
    table = agate.Table([(i, f"n{i}") for i in range(1000)], ["id", "name"],
                        [agate.Number(), agate.Text()])
    calls = []

    def check() -> None:
        calls.append(1)
        if len(calls) == interrupted_at:
            raise _Interrupted()

    spark = _RecordingSpark()
    with pytest.raises(_Interrupted):
        load_seed(spark, "s.t", table, ["bigint", "string"], check=check)
    assert spark.frames == 0 and len(calls) == interrupted_at
