"""Delta stats skipping never drops a file that holds a matching row.

Each case builds a file's rows, derives its stats the way Delta writers do (timestamps truncated to
milliseconds, long strings truncated), and checks ``file_may_match`` against evaluating the
predicate on the rows themselves: whenever some row matches, the file must be kept.
"""
from __future__ import annotations

import datetime as dt
import random

import pytest

from qbeast.core import expressions as ex
from qbeast.core.stats_skipping import file_may_match

TYPES = {
    "n": ("n", "integer"),
    "p": ("p", "double"),
    "s": ("s", "string"),
    "ts": ("ts", "timestamp"),
    "d": ("d", "date"),
}
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def _stats(rows: list[dict]) -> dict:
    """Stats as delta-spark writes them (ms-truncated timestamps, 32-char string prefixes)."""
    stats = {"numRecords": len(rows), "minValues": {}, "maxValues": {}, "nullCount": {}}
    for column in ("n", "p", "s", "ts", "d"):
        values = [r[column] for r in rows if r[column] is not None]
        stats["nullCount"][column] = len(rows) - len(values)
        if not values:
            continue
        low, high = min(values), max(values)
        if column == "ts":
            low = (EPOCH + dt.timedelta(milliseconds=low)).isoformat(timespec="milliseconds")
            high = (EPOCH + dt.timedelta(milliseconds=high)).isoformat(timespec="milliseconds")
        elif column == "d":
            low = (EPOCH + dt.timedelta(milliseconds=low)).date().isoformat()
            high = (EPOCH + dt.timedelta(milliseconds=high)).date().isoformat()
        elif column == "s":
            low, high = low[:32], high[:32]
        stats["minValues"][column] = low
        stats["maxValues"][column] = high
    return stats


def _row(rng: random.Random) -> dict:
    def maybe(value):
        return None if rng.random() < 0.15 else value

    day = rng.randint(18000, 18010) * 86_400_000
    return {
        "n": maybe(rng.randint(-5, 5)),
        "p": maybe(rng.choice([-1.5, 0.0, 2.25, 3.0])),
        "s": maybe(rng.choice(["a", "b", "bb", "x" * 40, "x" * 40 + "z"])),
        "ts": maybe(day + rng.randint(0, 5)),  # several rows within the same millisecond range
        "d": maybe(day),
    }


def _leaf(rng: random.Random, rows: list[dict]) -> ex.Expression:
    column = rng.choice(list(TYPES))
    sample = next((r[column] for r in rng.sample(rows, len(rows)) if r[column] is not None), None)
    if sample is None or rng.random() < 0.1:
        return rng.choice([ex.IsNull, ex.IsNotNull])(column)
    kind = rng.choice([ex.EqualTo, ex.NotEqualTo, ex.LessThan, ex.LessThanOrEqual,
                       ex.GreaterThan, ex.GreaterThanOrEqual, ex.In])
    if kind is ex.In:
        return ex.In(column, (sample,))
    return kind(column, sample)


@pytest.mark.parametrize("seed", range(4))
def test_never_drops_a_file_with_a_matching_row(seed):
    rng = random.Random(seed)
    kept_some = dropped_some = False
    for _ in range(400):
        rows = [_row(rng) for _ in range(rng.randint(1, 6))]
        leaves = [_leaf(rng, rows + [_row(rng)]) for _ in range(rng.randint(1, 3))]
        predicate = leaves[0] if len(leaves) == 1 else rng.choice([ex.And, ex.Or])(*leaves)
        if rng.random() < 0.2:
            predicate = ex.Not(predicate)
        matches = any(ex.evaluate(predicate, r) for r in rows)
        verdict = file_may_match(predicate, _stats(rows), TYPES)
        if matches:
            assert verdict, (predicate, rows)
        kept_some |= verdict
        dropped_some |= not verdict
    assert kept_some and dropped_some  # the stats do prune


def test_missing_stats_and_unknown_columns_keep_the_file():
    assert file_may_match(ex.EqualTo("n", 1), None, TYPES)
    assert file_may_match(ex.EqualTo("other", 1), {"numRecords": 1, "minValues": {}}, TYPES)
    assert file_may_match(ex.GreaterThan("s", "y"), _stats([{"n": 1, "p": 1.0, "s": "x" * 40, "ts": 0, "d": 0}]), TYPES)


def test_obvious_misses_are_dropped():
    stats = _stats([{"n": 1, "p": 1.0, "s": "b", "ts": 1000, "d": 0}, {"n": 3, "p": 2.0, "s": "c", "ts": 2000, "d": 0}])
    assert not file_may_match(ex.GreaterThan("n", 3), stats, TYPES)
    assert not file_may_match(ex.In("s", ("a", "d")), stats, TYPES)
    assert not file_may_match(ex.IsNull("n"), stats, TYPES)
    assert not file_may_match(ex.LessThan("ts", 999), stats, TYPES)
    assert file_may_match(ex.Or(ex.IsNull("n"), ex.EqualTo("p", 2.0)), stats, TYPES)
