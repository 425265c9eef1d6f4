"""Delta data skipping: may a file hold a row matching a predicate, judging by its stats?

The OTree prunes on indexed columns only; Delta's per-file ``minValues`` / ``maxValues`` /
``nullCount`` prune on any column (and on staging files and plain Delta tables, which have no
index). Stats come from many writers (qbeast-spark via Delta, delta-rs, this engine), so every
test here is conservative:

* timestamps are stored in milliseconds (a maximum may be truncated) and decimals are JSON
  numbers read as floats, so for them ``<`` and ``>`` are tested as ``<=`` and ``>=`` (which can
  only keep more files); integers, floats, strings and dates compare exactly;
* a string maximum of 32+ characters may be a truncated prefix, so it is not used;
* a missing or unparsable statistic means "may match".
"""
from __future__ import annotations

import datetime as _dt
import math
from collections.abc import Mapping
from typing import Any

from qbeast.core import expressions as ex

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_MILLI = _dt.timedelta(milliseconds=1)
_STRING_PREFIX_LENGTH = 32
_INTEGRAL = {"byte", "short", "integer", "long"}
_EXACT = {"float", "double", "string", "date"}


def _stat_value(type_name: str, raw: Any, upper: bool) -> Any:
    """A statistic as a canonical value comparable with expression literals, or None."""
    if raw is None or isinstance(raw, (dict, list, bool)):
        return None
    try:
        if type_name in _INTEGRAL:
            return int(raw)
        if type_name in ("float", "double") or type_name.startswith("decimal"):
            value = float(raw)
            if not math.isfinite(value):
                return None
            if type_name.startswith("decimal"):  # JSON -> float may round: widen by a few ulps
                widen = abs(value) * 1e-15 + 1e-300
                value = value + widen if upper else value - widen
            return value
        if type_name == "string":
            if not isinstance(raw, str) or (upper and len(raw) >= _STRING_PREFIX_LENGTH):
                return None
            return raw
        if type_name == "date":
            day = _dt.date.fromisoformat(str(raw)[:10])
            return (_dt.datetime(day.year, day.month, day.day, tzinfo=_dt.timezone.utc) - _EPOCH) // _MILLI
        if type_name in ("timestamp", "timestamp_ntz"):
            text = str(raw).replace("Z", "+00:00")
            moment = _dt.datetime.fromisoformat(text)
            if moment.tzinfo is None:
                moment = moment.replace(tzinfo=_dt.timezone.utc)
            return (moment - _EPOCH) // _MILLI
    except (TypeError, ValueError, OverflowError):
        return None
    return None


class _FileStats:
    def __init__(self, stats: Mapping[str, Any], types: Mapping[str, tuple[str, str]]) -> None:
        self.num_records = stats.get("numRecords")
        self.min_values = stats.get("minValues") or {}
        self.max_values = stats.get("maxValues") or {}
        self.null_count = stats.get("nullCount") or {}
        self.types = types

    def _type(self, column: ex.Subject) -> str | None:
        if not isinstance(column, str):  # a call of a column: no statistics of its values
            return None
        entry = self.types.get(column.lower())
        return None if entry is None else entry[1]

    def exact(self, column: ex.Subject) -> bool:
        """Whether the column's stats are exact values (strict comparisons may prune)."""
        type_name = self._type(column)
        return type_name is not None and (type_name in _INTEGRAL or type_name in _EXACT)

    def bounds(self, column: ex.Subject) -> tuple[Any, Any]:
        type_name = self._type(column)
        if type_name is None:
            return None, None
        low = _stat_value(type_name, self.min_values.get(column), upper=False)
        high = _stat_value(type_name, self.max_values.get(column), upper=True)
        return low, high

    def nulls(self, column: ex.Subject) -> int | None:
        value = self.null_count.get(column)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def all_null(self, column: ex.Subject) -> bool:
        nulls = self.nulls(column)
        return nulls is not None and isinstance(self.num_records, int) and nulls >= self.num_records


def _comparable(a: Any, b: Any) -> bool:
    numeric = (int, float)
    return (isinstance(a, numeric) and isinstance(b, numeric) and not isinstance(a, bool)) or (
        isinstance(a, str) and isinstance(b, str)
    )


class _MayMatch(ex.ExpressionVisitor[bool]):
    def __init__(self, stats: _FileStats) -> None:
        self.stats = stats

    def visit_true(self) -> bool:
        return True

    def visit_false(self) -> bool:
        return False

    def visit_and(self, results: list[bool]) -> bool:
        return all(results)

    def visit_or(self, results: list[bool]) -> bool:
        return any(results)

    def visit_not(self, result: bool) -> bool:  # pragma: no cover - NOTs are pushed down first
        return True

    def _value_in_range(self, column: ex.Subject, value: Any, low: Any, high: Any) -> bool:
        if low is not None and _comparable(low, value) and value < low:
            return False
        if high is not None and _comparable(high, value) and value > high:
            return False
        return True

    def visit_comparison(self, predicate: ex.Comparison) -> bool:
        column, value = predicate.column, predicate.value
        if self.stats.all_null(column):
            return False  # a comparison with null is never true
        low, high = self.stats.bounds(column)
        if isinstance(predicate, ex.EqualTo):
            return self._value_in_range(column, value, low, high)
        if isinstance(predicate, ex.NotEqualTo):
            return not (
                low is not None and high is not None and _comparable(low, value)
                and _comparable(high, value) and low == value == high
            )
        strict = self.stats.exact(column)
        if isinstance(predicate, (ex.LessThan, ex.LessThanOrEqual)):
            if low is None or not _comparable(low, value):
                return True
            return low < value if strict and isinstance(predicate, ex.LessThan) else low <= value
        if isinstance(predicate, (ex.GreaterThan, ex.GreaterThanOrEqual)):
            if high is None or not _comparable(high, value):
                return True
            return high > value if strict and isinstance(predicate, ex.GreaterThan) else high >= value
        return True

    def visit_in(self, predicate: ex.In) -> bool:
        if self.stats.all_null(predicate.column):
            return False
        low, high = self.stats.bounds(predicate.column)
        return any(self._value_in_range(predicate.column, v, low, high) for v in predicate.values)

    def visit_is_null(self, predicate: ex.IsNull) -> bool:
        nulls = self.stats.nulls(predicate.column)
        return nulls is None or nulls > 0

    def visit_is_not_null(self, predicate: ex.IsNotNull) -> bool:
        return not self.stats.all_null(predicate.column)


def stat_bounds(stats: Mapping[str, Any], types: Mapping[str, tuple[str, str]],
                column: str) -> tuple[Any, Any]:
    """A file's ``(min, max)`` of ``column`` as canonical values (each None when not usable), by
    the same rules pruning uses: timestamps and dates in epoch milliseconds, no truncated string
    maximum, no non-finite float."""
    return _FileStats(stats, types).bounds(column)


def file_may_match(
    predicate: ex.Expression, stats: dict[str, Any] | None, types: dict[str, tuple[str, str]]
) -> bool:
    """False only when the file's stats prove that no row satisfies ``predicate``.

    ``types`` maps lower-cased column names to ``(name, spark type name)``
    (:func:`qbeast.core.columns.column_types`); ``stats`` is the parsed ``AddFile.stats``.
    """
    if not stats or isinstance(predicate, ex.AlwaysTrue):
        return True
    return ex.visit(ex.push_down_not(predicate), _MayMatch(_FileStats(stats, types)))
