"""The columnar stats check (``StatsColumns``, what the planner runs over all of a snapshot's
files at once) answers for every file exactly what the check of that file alone answers.

The risk of holding a column's statistics in one array is the array's type: files of one table
hold ints that fit int64 and ints that do not, floats and missing values side by side, and a
literal may be an int against a float column. The random cases mix all of these, and the fixed
ones pin the comparisons an int64 or float64 array would round.
"""
from __future__ import annotations

import random
from typing import Any

import pytest

from qbeast.core import expressions as ex
from qbeast.core.stats_skipping import StatsColumns, file_may_match

TYPES = {"i": ("i", "long"), "f": ("f", "double"), "s": ("s", "string"),
         "d": ("d", "decimal(10,2)"), "t": ("t", "timestamp"), "dt": ("dt", "date"),
         "b": ("b", "boolean"), "big": ("big", "long")}
_COMPARISONS = [ex.EqualTo, ex.NotEqualTo, ex.LessThan, ex.LessThanOrEqual, ex.GreaterThan,
                ex.GreaterThanOrEqual]


def _stat(rng: random.Random, column: str) -> Any:
    return {
        "i": lambda: rng.randint(-20, 20),
        "big": lambda: rng.choice([2 ** 63 - 1, 2 ** 62, -(2 ** 63), 2 ** 70, 5, 2 ** 53 + 1]),
        "f": lambda: rng.choice([rng.uniform(-20, 20), float(rng.randint(-20, 20)), "NaN"]),
        "d": lambda: rng.choice([rng.uniform(-20, 20), rng.randint(-20, 20)]),
        "s": lambda: rng.choice(["a", "b", "m", "z", "x" * 40, "b" * 31, ""]),
        "t": lambda: rng.choice(["2024-01-01T00:00:00.000Z", "2024-01-02T00:00:00.123Z"]),
        "dt": lambda: rng.choice(["2024-01-01", "2024-01-05", "2023-12-31"]),
        "b": lambda: rng.choice([True, False]),
    }[column]()


def _literal(rng: random.Random, column: str) -> Any:
    return {
        "i": lambda: rng.randint(-25, 25),
        "big": lambda: rng.choice([2 ** 63 - 1, 2 ** 64, -(2 ** 63), 5, 2 ** 53 + 1, 1.5,
                                   float(2 ** 62)]),
        "f": lambda: rng.choice([rng.uniform(-25, 25), rng.randint(-25, 25), float("nan")]),
        "d": lambda: rng.uniform(-25, 25),
        "s": lambda: rng.choice(["a", "b", "m", "zz", "x" * 40, "", 3]),
        "t": lambda: rng.choice([1704067200000, 1704153600123, 1704110400000]),
        "dt": lambda: rng.choice([1704067200000, 1704412800000]),
        "b": lambda: rng.choice([True, 1]),
    }[column]()


def _file(rng: random.Random) -> dict | None:
    if rng.random() < 0.1:
        return rng.choice([None, {}])
    stats: dict = {"numRecords": rng.choice([0, 1, 5, 10]), "minValues": {}, "maxValues": {},
                   "nullCount": {}}
    for column in TYPES:
        for section in ("minValues", "maxValues"):
            if rng.random() < 0.8:
                stats[section][column] = _stat(rng, column)
        if rng.random() < 0.8:
            stats["nullCount"][column] = rng.choice([0, 1, 5, 10, None])
    return stats


def _predicate(rng: random.Random, depth: int = 0) -> ex.Expression:
    draw = rng.random()
    if depth < 2 and draw < 0.2:
        return ex.And(_predicate(rng, depth + 1), _predicate(rng, depth + 1))
    if depth < 2 and draw < 0.35:
        return ex.Or(_predicate(rng, depth + 1), _predicate(rng, depth + 1))
    if depth < 2 and draw < 0.45:
        return ex.Not(_predicate(rng, depth + 1))
    column = rng.choice([*TYPES, "missing"])
    kind = "i" if column == "missing" else column
    draw = rng.random()
    if draw < 0.6:
        return rng.choice(_COMPARISONS)(column, _literal(rng, kind))
    if draw < 0.8:
        return ex.In(column, tuple(_literal(rng, kind) for _ in range(rng.randint(0, 6))))
    return ex.IsNull(column) if draw < 0.9 else ex.IsNotNull(column)


@pytest.mark.parametrize("seed", range(3))
def test_all_files_at_once_answer_as_each_file_alone(seed: int) -> None:
    rng = random.Random(seed)
    for _ in range(25):
        files = [_file(rng) for _ in range(30)]
        columns = StatsColumns(files, TYPES)
        for _ in range(20):
            predicate = _predicate(rng)
            alone = [file_may_match(predicate, stats, TYPES) for stats in files]
            assert columns.may_match(predicate).tolist() == alone, predicate


def _range(low: Any, high: Any, records: int = 5, nulls: int = 0) -> dict:
    return {"numRecords": records, "minValues": {"big": low, "f": low},
            "maxValues": {"big": high, "f": high}, "nullCount": {"big": nulls, "f": nulls}}


def test_large_integers_compare_exactly() -> None:
    files = [_range(2 ** 63 - 2, 2 ** 63 - 1), _range(2 ** 53, 2 ** 53), _range(2 ** 70, 2 ** 71)]
    columns = StatsColumns(files, TYPES)
    # beyond int64 and beyond a float's integers: an int64 or float64 array would round these
    assert columns.may_match(ex.EqualTo("big", 2 ** 63 - 1)).tolist() == [True, False, False]
    assert columns.may_match(ex.EqualTo("big", 2 ** 53 + 1)).tolist() == [False, False, False]
    assert columns.may_match(ex.GreaterThan("big", 2 ** 64)).tolist() == [False, False, True]
    assert columns.may_match(ex.EqualTo("big", float(2 ** 53))).tolist() == [False, True, False]
    assert columns.may_match(ex.In("big", (2 ** 53 + 1, 2 ** 70))).tolist() == [False, False, True]


def test_in_finds_a_value_between_each_files_bounds() -> None:
    files = [_range(10, 20), _range(21, 29), _range(30, 40), {"numRecords": 5}, None,
             _range(1, 2, nulls=5)]
    columns = StatsColumns(files, TYPES)
    values = tuple(range(-1000, 1000, 7))  # ..., 13, 20, 27, 34, ...
    assert columns.may_match(ex.In("big", values)).tolist() == [
        any(10 <= v <= 20 for v in values), any(21 <= v <= 29 for v in values),
        any(30 <= v <= 40 for v in values), True, True, False]
    assert columns.may_match(ex.In("big", (22.5,))).tolist() == [False, True, False, True, True,
                                                                  False]
    # NaN has no place in an order: it proves nothing, as in the comparison of one file
    assert columns.may_match(ex.In("f", (float("nan"),))).tolist() == [True] * 5 + [False]
