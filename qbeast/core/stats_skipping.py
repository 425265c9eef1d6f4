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
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

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


def _fits_int64(value: Any) -> bool:
    return isinstance(value, int) and -(2 ** 63) <= value < 2 ** 63


def _array(values: Sequence[Any]) -> np.ndarray:
    """Values of one kind as an array that compares them exactly: int64 for integers that fit,
    float64 for floats, objects (Python's own comparisons) for strings and anything else."""
    if all(_fits_int64(v) and not isinstance(v, bool) for v in values):
        return np.array(values, dtype=np.int64)
    if all(isinstance(v, float) for v in values):
        return np.array(values, dtype=np.float64)
    out = np.empty(len(values), dtype=object)
    out[:] = list(values)
    return out


def _exact_with(array: np.ndarray, value: Any) -> np.ndarray:
    """``array`` in a dtype numpy compares with ``value`` exactly (objects where an int64 or
    float64 comparison would round: large integers against floats)."""
    if array.dtype == np.int64 and (_fits_int64(value) and not isinstance(value, bool)):
        return array
    if array.dtype == np.float64 and (isinstance(value, float)
                                      or (isinstance(value, int) and abs(value) <= 2 ** 53)):
        return array
    return array.astype(object)


def _comparable(kind: str | None, value: Any) -> bool:
    """Whether a literal compares with a column's statistics (numbers with numbers, strings with
    strings); an incomparable literal proves nothing."""
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return kind == "string" and isinstance(value, str)


class _Column:
    """One column's statistics over every file: bounds (``has_low`` / ``has_high`` say which
    files have a usable one), whether a file's rows are all null, and its null count (-1:
    unknown)."""

    def __init__(self, name: Any, stats: Sequence[Mapping[str, Any] | None],
                 types: Mapping[str, tuple[str, str]], records: np.ndarray) -> None:
        entry = types.get(name.lower()) if isinstance(name, str) else None
        type_name = None if entry is None else entry[1]
        #: strict comparisons may prune (the statistics are exact values)
        self.strict = type_name is not None and (type_name in _INTEGRAL or type_name in _EXACT)
        self.kind = (None if type_name is None else "string" if type_name == "string"
                     else "number")
        lows: list[Any] = []
        highs: list[Any] = []
        nulls = np.full(len(stats), -1, dtype=np.int64)
        for i, file_stats in enumerate(stats):
            if not file_stats or not isinstance(name, str):  # a call of a column: no statistics
                lows.append(None)
                highs.append(None)
                continue
            lows.append(None if type_name is None else
                        _stat_value(type_name, _entry(file_stats, "minValues", name), upper=False))
            highs.append(None if type_name is None else
                         _stat_value(type_name, _entry(file_stats, "maxValues", name), upper=True))
            count = _entry(file_stats, "nullCount", name)
            if isinstance(count, int) and not isinstance(count, bool):
                nulls[i] = count
        self.has_low = np.array([v is not None for v in lows], dtype=bool)
        self.has_high = np.array([v is not None for v in highs], dtype=bool)
        self.low = self._values(lows, self.has_low)
        self.high = self._values(highs, self.has_high)
        self.nulls = nulls
        self.all_null = (nulls >= 0) & (records >= 0) & (nulls >= records)

    def _values(self, values: list[Any], present: np.ndarray) -> np.ndarray:
        """The present values, a placeholder of their kind where a file has none (masked out)."""
        filler: Any = "" if self.kind == "string" else 0
        return _array([v if ok else filler for v, ok in zip(values, present)])


def _entry(stats: Mapping[str, Any], section: str, name: str) -> Any:
    values = stats.get(section)
    return values.get(name) if isinstance(values, dict) else None


class StatsColumns:
    """Delta statistics of a list of files, held per column, to test a predicate against all the
    files at once: the rule of :func:`file_may_match` as array operations, so that planning a
    table of 10,000 files costs a few array operations per predicate term instead of a Python
    walk per file. Columns are read from the statistics on first use and kept."""

    def __init__(self, stats: Sequence[Mapping[str, Any] | None],
                 types: Mapping[str, tuple[str, str]]) -> None:
        self._stats = list(stats)
        self._types = types
        self._has_stats = np.array([bool(s) for s in self._stats], dtype=bool)
        self._records = np.array(
            [s.get("numRecords") if s and isinstance(s.get("numRecords"), int) else -1
             for s in self._stats], dtype=np.int64)
        self._columns: dict[Any, _Column] = {}

    def __len__(self) -> int:
        return len(self._stats)

    def column(self, name: Any) -> _Column:
        found = self._columns.get(name)
        if found is None:  # a race builds it twice, with the same result
            found = self._columns[name] = _Column(name, self._stats, self._types, self._records)
        return found

    def may_match(self, predicate: ex.Expression) -> np.ndarray:
        """Per file: False only when its statistics prove that no row satisfies ``predicate``
        (a file without statistics may match)."""
        if isinstance(predicate, ex.AlwaysTrue):
            return np.ones(len(self._stats), dtype=bool)
        with np.errstate(invalid="ignore"):  # a NaN literal compares False, as in Python
            result = ex.visit(ex.push_down_not(predicate), _MayMatch(self))
        return result | ~self._has_stats


class _MayMatch(ex.ExpressionVisitor[np.ndarray]):
    def __init__(self, files: StatsColumns) -> None:
        self.files = files
        self.size = len(files)

    def _all(self, value: bool) -> np.ndarray:
        return np.full(self.size, value, dtype=bool)

    def visit_true(self) -> np.ndarray:
        return self._all(True)

    def visit_false(self) -> np.ndarray:
        return self._all(False)

    def visit_and(self, results: list[np.ndarray]) -> np.ndarray:
        return np.logical_and.reduce(results) if results else self._all(True)

    def visit_or(self, results: list[np.ndarray]) -> np.ndarray:
        return np.logical_or.reduce(results) if results else self._all(False)

    def visit_not(self, result: np.ndarray) -> np.ndarray:  # pragma: no cover - NOTs are pushed down first
        return self._all(True)

    @staticmethod
    def _in_range(column: _Column, value: Any) -> np.ndarray:
        """Files whose bounds admit ``value`` (a missing bound admits anything)."""
        below = column.has_low & (_exact_with(column.low, value) > value)
        above = column.has_high & (_exact_with(column.high, value) < value)
        return ~(below | above)

    def visit_comparison(self, predicate: ex.Comparison) -> np.ndarray:
        column, value = self.files.column(predicate.column), predicate.value
        possible = ~column.all_null  # a comparison with null is never true
        if not _comparable(column.kind, value):
            return possible
        if isinstance(predicate, ex.EqualTo):
            return possible & self._in_range(column, value)
        if isinstance(predicate, ex.NotEqualTo):
            single = (column.has_low & column.has_high & (_exact_with(column.low, value) == value)
                      & (_exact_with(column.high, value) == value))
            return possible & ~single
        if isinstance(predicate, (ex.LessThan, ex.LessThanOrEqual)):
            low = _exact_with(column.low, value)
            test = (low < value if column.strict and isinstance(predicate, ex.LessThan)
                    else low <= value)
            return possible & (~column.has_low | test)
        if isinstance(predicate, (ex.GreaterThan, ex.GreaterThanOrEqual)):
            high = _exact_with(column.high, value)
            test = (high > value if column.strict and isinstance(predicate, ex.GreaterThan)
                    else high >= value)
            return possible & (~column.has_high | test)
        return possible

    def visit_in(self, predicate: ex.In) -> np.ndarray:
        column = self.files.column(predicate.column)
        possible = ~column.all_null
        values = list(predicate.values)
        if not values:
            return self._all(False)
        if not all(_comparable(column.kind, v) for v in values) or any(
                isinstance(v, float) and math.isnan(v) for v in values):
            return possible  # an incomparable value (or NaN, which no order places) admits all
        # some value in [low, high]: the first value at or above each file's low, below its high
        ordered = _array(sorted(set(values)))
        low, high = column.low, column.high
        if ordered.dtype != low.dtype:
            ordered, low, high = ordered.astype(object), low.astype(object), high.astype(object)
        first = np.searchsorted(ordered, low, side="left")
        first[~column.has_low] = 0
        found = first < len(ordered)
        candidate = ordered[np.minimum(first, len(ordered) - 1)]
        return possible & found & (~column.has_high | (candidate <= high))

    def visit_is_null(self, predicate: ex.IsNull) -> np.ndarray:
        nulls = self.files.column(predicate.column).nulls
        return (nulls < 0) | (nulls > 0)

    def visit_is_not_null(self, predicate: ex.IsNotNull) -> np.ndarray:
        return ~self.files.column(predicate.column).all_null


def stat_bounds(stats: Mapping[str, Any], types: Mapping[str, tuple[str, str]],
                column: str) -> tuple[Any, Any]:
    """A file's ``(min, max)`` of ``column`` as canonical values (each None when not usable), by
    the same rules pruning uses: timestamps and dates in epoch milliseconds, no truncated string
    maximum, no non-finite float."""
    entry = types.get(column.lower())
    if entry is None:
        return None, None
    return (_stat_value(entry[1], _entry(stats, "minValues", column), upper=False),
            _stat_value(entry[1], _entry(stats, "maxValues", column), upper=True))


def file_may_match(
    predicate: ex.Expression, stats: dict[str, Any] | None, types: dict[str, tuple[str, str]]
) -> bool:
    """False only when the file's stats prove that no row satisfies ``predicate``.

    ``types`` maps lower-cased column names to ``(name, spark type name)``
    (:func:`qbeast.core.columns.column_types`); ``stats`` is the parsed ``AddFile.stats``.
    One file of :class:`StatsColumns`, whose rule this is.
    """
    if not stats or isinstance(predicate, ex.AlwaysTrue):
        return True
    return bool(StatsColumns([stats], types).may_match(predicate)[0])
