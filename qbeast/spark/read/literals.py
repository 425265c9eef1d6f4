"""Literals typed the way Spark compares them with a column, and the column types that decide it.

A pruning predicate is only exact when its literals have the column's own type: a string
``'2024-01-31'`` compared with a ``date`` column is that date, an integral float compared with an
``int`` column is an ``int``, a zone-less timestamp is a wall-clock time in the session's zone.
Both the SQL predicate parser (:mod:`qbeast.spark.read.sql_parser`) and the retyping of
user-built expressions (:mod:`qbeast.spark.read.predicates`) type their literals here, so they
agree on every rule.

Whatever cannot be typed without a cast we do not model raises :class:`Untranslatable`: the
predicate part then prunes nothing. Plain Python on JSON schemas: no pyspark here, so the planner
process and the tests of these rules need no Spark.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import re
from typing import Any

from qbeast.core.columns import ColumnTypes
from qbeast.core.derived import RESULT_TYPE, SOURCE_TYPE, Call
from qbeast.core.expressions import Subject
from qbeast.core.columns import column_types as json_column_types

_INTEGRAL = {"byte", "short", "integer", "long", "tinyint", "smallint", "int", "bigint"}
_FRACTIONAL = {"float", "double"}


class Untranslatable(Exception):
    """A predicate (part) that cannot be translated exactly; it must not prune anything."""


def column_types(schema: Any) -> ColumnTypes:
    """Lower-cased top-level column names -> ``(name, type)`` of a JSON schema (or a ``StructType``).

    The rule lives in :func:`qbeast.core.columns.column_types` (on the JSON form the Delta log
    stores); an object with ``jsonValue()`` (a pyspark ``StructType``) is converted to that form
    first, by duck typing: this module never imports pyspark.
    """
    if hasattr(schema, "jsonValue"):
        schema = schema.jsonValue()
    return json_column_types(schema)


def resolve_column(types: dict[str, tuple[str, str]], name: Subject) -> tuple[Subject, str]:
    """A predicate subject in the table's spelling and the Spark type of its values; a call
    (``lower(email)``) only of a column of the type it reads."""
    if isinstance(name, Call):
        column, type_name = resolve_column(types, name.column)
        if type_name != SOURCE_TYPE:
            raise Untranslatable(f"{name} of a {type_name} column")
        return name.with_column(str(column)), RESULT_TYPE
    try:
        return types[name.lower()]
    except KeyError:
        raise Untranslatable(f"column {name!r} is not in the table") from None


def parse_date(text: str) -> _dt.date:
    try:
        return _dt.date.fromisoformat(text.strip()[:10])
    except ValueError:
        raise Untranslatable(f"not a date literal: {text!r}") from None


def session_zone(name: str) -> _dt.tzinfo:
    """The ``tzinfo`` of a Spark session time zone name (``UTC``, ``Europe/Paris``, ``+02:00``)."""
    if name.upper() in ("UTC", "Z", "GMT", "ETC/UTC"):
        return _dt.timezone.utc
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo(name)
    except (ValueError, KeyError, ImportError, OSError):
        pass
    match = re.fullmatch(r"(?:UTC|GMT)?([+-])(\d{1,2}):?(\d{2})?", name.strip(), re.IGNORECASE)
    if match is None:
        raise Untranslatable(f"unknown session time zone {name!r}")
    sign = -1 if match.group(1) == "-" else 1
    delta = _dt.timedelta(hours=int(match.group(2)), minutes=int(match.group(3) or 0))
    return _dt.timezone(sign * delta)


def parse_timestamp(text: str, zone: str = "UTC") -> _dt.datetime:
    """A timestamp literal; without an offset it is a wall-clock time in ``zone``.

    The engine pins its sessions to UTC, so zone-less strings users write are UTC; Spark prints
    ``TIMESTAMP '...'`` literals in the session time zone, which the SQL bridge passes along.
    """
    value = text.strip().replace(" ", "T", 1)
    if value.endswith("Z"):
        value = value[:-1] + "+00:00"
    try:
        parsed = _dt.datetime.fromisoformat(value)
    except ValueError:
        raise Untranslatable(f"not a timestamp literal: {text!r}") from None
    if parsed.tzinfo is not None:
        return parsed
    return parsed.replace(tzinfo=session_zone(zone)).astimezone(_dt.timezone.utc)


def typed_literal(type_name: str, value: Any) -> Any:
    """``value`` as the Python value Spark would compare with a column of ``type_name``.

    Raises ``Untranslatable`` when the comparison would involve a cast we do not model (so the predicate
    must not prune).
    """
    if value is None or isinstance(value, (list, tuple, dict, bytes, bytearray)):
        raise Untranslatable("unsupported literal")
    if type_name in _INTEGRAL:
        if isinstance(value, bool):
            raise Untranslatable("boolean against integral column")
        if isinstance(value, int):
            return value
        if isinstance(value, (float, decimal.Decimal)) and value == int(value):
            return int(value)
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                raise Untranslatable("non-integral string against integral column") from None
        raise Untranslatable("non-integral literal against integral column")
    if type_name in _FRACTIONAL or type_name.startswith("decimal"):
        if isinstance(value, bool):
            raise Untranslatable("boolean against numeric column")
        if isinstance(value, (int, float, decimal.Decimal)):
            return float(value) if type_name in _FRACTIONAL else decimal.Decimal(value)
        if isinstance(value, str):
            try:
                return float(value) if type_name in _FRACTIONAL else decimal.Decimal(value.strip())
            except (ValueError, decimal.InvalidOperation):
                raise Untranslatable("non-numeric string against numeric column") from None
        raise Untranslatable("unsupported literal for numeric column")
    if type_name == "string":
        if isinstance(value, str):
            return value
        raise Untranslatable("non-string literal against string column")
    if type_name == "date":
        if isinstance(value, _dt.datetime):
            raise Untranslatable("timestamp literal against date column")
        if isinstance(value, _dt.date):
            return value
        if isinstance(value, str):
            return parse_date(value)
        raise Untranslatable("unsupported literal for date column")
    if type_name in ("timestamp", "timestamp_ntz"):
        if isinstance(value, _dt.datetime):
            if type_name == "timestamp_ntz" and value.tzinfo is not None:
                value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
            return value
        if isinstance(value, _dt.date):
            return _dt.datetime(value.year, value.month, value.day, tzinfo=_dt.timezone.utc)
        if isinstance(value, str):
            return parse_timestamp(value)
        raise Untranslatable("unsupported literal for timestamp column")
    if type_name == "boolean":
        if isinstance(value, bool):
            return value
        raise Untranslatable("non-boolean literal against boolean column")
    raise Untranslatable(f"columns of type {type_name} are not used for pruning")


#: Day 0 of Spark's epoch numbers (dates and timestamps as canonical milliseconds).
EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def from_canonical(type_name: str, value: Any) -> Any:
    """The Spark-side literal for a canonical value of a column of ``type_name``."""
    if type_name == "date" and isinstance(value, int) and not isinstance(value, bool):
        return (EPOCH + _dt.timedelta(milliseconds=value)).date()
    if type_name in ("timestamp", "timestamp_ntz") and isinstance(value, int) and not isinstance(value, bool):
        moment = EPOCH + _dt.timedelta(milliseconds=value)
        return moment.replace(tzinfo=None) if type_name == "timestamp_ntz" else moment
    return value
