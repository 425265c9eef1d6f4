"""The data types a Qbeast index understands (FORMAT §3.0) and their canonical Python values.

qbeast-spark can index only eight Spark types; each maps to a ``QDataType`` whose *name* is what the
revision JSON stores. The rest of the format core never sees Spark objects: the Spark layer turns
every value into a *canonical* Python value (see ``to_canonical``) so that the transformations can
reproduce the Scala arithmetic bit for bit without knowing where the value came from.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import enum
import math
import re
from typing import Any

import numpy as np

from qbeast.errors import InvalidOptionError, UnsupportedTypeError

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


class QDataType(enum.Enum):
    """One indexable type; ``.value`` is the exact string written in revision JSON."""

    DOUBLE = "DoubleDataType"
    INTEGER = "IntegerDataType"
    FLOAT = "FloatDataType"
    LONG = "LongDataType"
    STRING = "StringDataType"
    DECIMAL = "DecimalDataType"
    TIMESTAMP = "TimestampDataType"
    DATE = "DateDataType"

    @property
    def json_name(self) -> str:
        """The name qbeast-spark serializes (``"IntegerDataType"``, ...)."""
        return self.value

    @property
    def sql_name(self) -> str:
        """The Spark SQL name users know (``double``, ``bigint``...), for error messages."""
        return _SQL_NAMES[self]

    @property
    def is_ordered(self) -> bool:
        """Ordered (numeric-like) types can be linearly scaled; strings can only be hashed/binned."""
        return self is not QDataType.STRING

    @property
    def is_integral(self) -> bool:
        """Types whose canonical value (and JSON number) is an integer."""
        return self in _INTEGRAL

    @property
    def is_floating(self) -> bool:
        """Types whose JSON min/max must be floating-point literals (FORMAT §0 item 10)."""
        return self in (QDataType.DOUBLE, QDataType.FLOAT, QDataType.DECIMAL)

    @classmethod
    def from_json_name(cls, name: Any) -> "QDataType":
        """Parse the JSON name; anything unknown is a format error naming the valid names."""
        from qbeast.errors import FormatError

        for member in cls:
            if member.value == name:
                return member
        raise FormatError(
            f"unknown Qbeast data type {name!r}; expected one of {', '.join(m.value for m in cls)}"
        )


_SQL_NAMES = {
    QDataType.DOUBLE: "double", QDataType.INTEGER: "int", QDataType.FLOAT: "float",
    QDataType.LONG: "bigint", QDataType.STRING: "string", QDataType.DECIMAL: "decimal",
    QDataType.TIMESTAMP: "timestamp", QDataType.DATE: "date",
}

_INTEGRAL = frozenset({QDataType.INTEGER, QDataType.LONG, QDataType.TIMESTAMP, QDataType.DATE})

#: Spark SQL type names (``DataType.simpleString`` and ``typeName`` spellings) -> QDataType.
_SPARK_NAMES: dict[str, QDataType] = {
    "int": QDataType.INTEGER,
    "integer": QDataType.INTEGER,
    "bigint": QDataType.LONG,
    "long": QDataType.LONG,
    "double": QDataType.DOUBLE,
    "float": QDataType.FLOAT,
    "string": QDataType.STRING,
    "date": QDataType.DATE,
    "timestamp": QDataType.TIMESTAMP,
    "decimal": QDataType.DECIMAL,
}
_DECIMAL_RE = re.compile(r"decimal\(\s*\d+\s*,\s*-?\d+\s*\)")
SUPPORTED_SPARK_TYPES = "int, bigint, double, float, decimal(p,s), string, date, timestamp"


def qdatatype_from_spark_name(simple_string: str, column: str | None = None) -> QDataType:
    """Map a Spark SQL type name to the QDataType qbeast-spark would use.

    Types qbeast-spark refuses (smallint, tinyint, boolean, binary, timestamp_ntz, structs, ...)
    raise ``UnsupportedTypeError`` so that a table is never written that the Scala side cannot read.
    """
    name = simple_string.strip().lower() if isinstance(simple_string, str) else simple_string
    if isinstance(name, str):
        if name in _SPARK_NAMES:
            return _SPARK_NAMES[name]
        if _DECIMAL_RE.fullmatch(name):
            return QDataType.DECIMAL
    what = f"column {column!r}" if column is not None else "a column"
    raise UnsupportedTypeError(
        f"{what} has type {simple_string!r}, which a Qbeast index cannot use; "
        f"supported types: {SUPPORTED_SPARK_TYPES}"
    )


_EPOCH_DATE = _dt.date(1970, 1, 1)
_EPOCH = _dt.datetime(1970, 1, 1)
_MS_PER_DAY = 86_400_000


def date_to_millis(value: _dt.date) -> int:
    """Epoch millis of the date's UTC midnight (``java.sql.Date.getTime`` with a UTC JVM)."""
    return (value - _EPOCH_DATE).days * _MS_PER_DAY


def datetime_to_millis(value: _dt.datetime) -> int:
    """Epoch millis, floored (``java.sql.Timestamp.getTime``); naive datetimes are taken as UTC."""
    if value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
    delta = value - _EPOCH
    micros = (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return micros // 1000


def to_canonical(value: Any, data_type: QDataType, column: str = "?") -> Any:
    """Convert a Python/numpy/Spark-collected value to the canonical value of ``data_type``.

    Canonical values: Integer/Long -> int, Double/Float/Decimal -> float (Float rounded to
    float32), String -> str, Date -> epoch millis of the UTC midnight, Timestamp -> epoch millis.
    ``None`` stays ``None``. A value that does not fit raises ``InvalidOptionError`` naming the
    column rather than silently becoming a different number.
    """
    if value is None:
        return None
    if isinstance(value, np.generic):
        if isinstance(value, np.datetime64):
            value = _numpy_datetime_to_millis(value, data_type, column)
            if value is None:
                return None
        else:
            value = value.item()
    if isinstance(value, bool):
        raise InvalidOptionError(f"column {column!r}: boolean value {value!r} is not a {data_type.sql_name}")
    if data_type is QDataType.STRING:
        if isinstance(value, str):
            return value
        raise InvalidOptionError(f"column {column!r}: expected a string, got {value!r}")
    if data_type in (QDataType.INTEGER, QDataType.LONG):
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, decimal.Decimal) and value == value.to_integral_value():
            value = int(value)
        if not isinstance(value, int):
            raise InvalidOptionError(f"column {column!r}: expected an integer, got {value!r}")
        lo, hi = (INT_MIN, INT_MAX) if data_type is QDataType.INTEGER else (LONG_MIN, LONG_MAX)
        if not lo <= value <= hi:
            raise InvalidOptionError(
                f"column {column!r}: {value} is outside the {data_type.sql_name} range [{lo}, {hi}]"
            )
        return value
    if data_type in (QDataType.DOUBLE, QDataType.FLOAT, QDataType.DECIMAL):
        if not isinstance(value, (int, float, decimal.Decimal)):
            raise InvalidOptionError(f"column {column!r}: expected a number, got {value!r}")
        number = float(value)
        if data_type is QDataType.FLOAT:
            number = float(np.float32(number))
        return number
    # Timestamp or Date: epoch millis (a datetime given for a Date column keeps only its date).
    if isinstance(value, _dt.datetime):
        return datetime_to_millis(value) if data_type is QDataType.TIMESTAMP else date_to_millis(value.date())
    if isinstance(value, _dt.date):
        return date_to_millis(value)
    if isinstance(value, int):
        return value
    raise InvalidOptionError(
        f"column {column!r}: expected a {data_type.sql_name} (datetime/date or epoch millis), got {value!r}"
    )


def _numpy_datetime_to_millis(value: np.datetime64, data_type: QDataType, column: str) -> int | None:
    """numpy datetimes (from Arrow/pandas) -> epoch millis, floored; NaT -> None."""
    if np.isnat(value):
        return None
    if data_type not in (QDataType.TIMESTAMP, QDataType.DATE):
        raise InvalidOptionError(f"column {column!r}: datetime value {value!r} is not a {data_type.sql_name}")
    return int(value.astype("datetime64[ms]").astype(np.int64))


def is_finite_number(value: Any) -> bool:
    """True for ints and finite floats (NaN/inf cannot be linear bounds)."""
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def canonical_array(values: np.ndarray, data_type: QDataType) -> np.ndarray:
    """Column form of ``to_canonical`` for the numpy arrays the Spark layer gets from Arrow.

    ``datetime64`` arrays (timestamps, or dates as ``datetime64[D]``) become int64 epoch millis,
    floored like ``Timestamp.getTime``; NaT positions get 0 and must be flagged by the caller's
    null mask. Float columns stay float32 so that hashing prints them with ``Float.toString``.
    Other arrays are returned unchanged.
    """
    values = np.asarray(values)
    if values.dtype.kind == "M":
        if data_type not in (QDataType.TIMESTAMP, QDataType.DATE):
            raise InvalidOptionError(f"datetime values cannot feed a {data_type.sql_name} column")
        millis = values.astype("datetime64[ms]").astype(np.int64)
        return np.where(np.isnat(values), 0, millis)
    if data_type is QDataType.FLOAT and values.dtype.kind == "f":
        return values.astype(np.float32)
    return values
